"""The walls between standard address spaces that clients could walk around
(issue 19, items 3 and 5), against a real qdrouterd 1.19 router and a real
Artemis pool broker:

* a client can neither create a broker queue outside its space nor delete
  another space's queue through a topic's link route (durable subscriptions
  the client names itself: Artemis names their queues after the router's
  container id and the client's link name, or the link name alone with the
  ``global`` capability);
* a client reaches only the addresses its space declares (and that are
  placed): an undeclared name is refused at attach, with an error the client
  sees, and so is a message an anonymous sender addresses to it.
"""
import json
import tempfile
import time

import pytest

from helpers import run_module
from standard_env import StandardEnv, build_router

pytestmark = pytest.mark.integration
proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")
from proton import Data, Endpoint, Message, Terminus  # noqa: E402
from proton.reactor import Container, LinkOption, ReceiverOption  # noqa: E402
from proton.utils import BlockingConnection, LinkDetached  # noqa: E402

ANON = {"name": "none", "type": "none"}
TOPIC = {"address": "news", "type": "topic", "plan": "standard-small-topic"}
KEEP = {"address": "keep", "type": "subscription", "plan": "standard-small-subscription", "topic": "news"}


@pytest.fixture(scope="module")
def env():
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)  # CI builds qdrouterd: a missing router is a failure, not a skip
    e = StandardEnv(tempfile.mkdtemp(prefix="enmasse-walls-"), prefix, routers=1, brokers=1).start()
    yield e
    e.cleanup()


def common(env, space):
    return env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(space))


def make_space(env, name, addresses):
    res = run_module("address_space", dict(common(env, name), name=name, type="standard",
                                           plan="standard-unlimited", authentication_service=ANON))
    assert res.rc == 0, res.result
    res = converge(env, name, addresses)
    assert res.rc == 0, res.result


def converge(env, space, addresses):
    return run_module("address", dict(common(env, space), address_space=space, addresses=addresses, prune=True))


def port_of(env, space):
    with open(env.connection_file(space)) as f:
        return json.load(f)["endpoints"][0]["port"]


def connect(env, space, container_id=None):
    container = Container()
    if container_id:
        container.container_id = container_id
    return BlockingConnection(env.client_url(port_of(env, space)), timeout=15, container=container,
                              **env.client_kwargs())


class DurableTopicSubscription(ReceiverOption):
    """What a JMS durable subscriber asks for over AMQP: a durable source
    that never expires, capability ``topic`` (and ``global``: the queue is
    named after the link alone, whatever the container id)."""

    def __init__(self, global_=False):
        self.capabilities = ["topic"] + (["global"] if global_ else [])

    def apply(self, receiver):
        receiver.source.durability = Terminus.DELIVERIES
        receiver.source.expiry_policy = Terminus.EXPIRE_NEVER
        caps = receiver.source.capabilities
        caps.put_array(False, Data.SYMBOL)
        caps.enter()
        for c in self.capabilities:
            caps.put_symbol(c)
        caps.exit()


def attach(conn, address, sender, name=None, options=None):
    """A link attached without proton's check of the echoed address (a link
    route echoes the internal ``<space>/<address>``); returns it once the peer
    answered (attached, or detached with its error)."""
    make = conn.container.create_sender if sender else conn.container.create_receiver
    link = make(conn.conn, address, name=name, options=options)
    try:
        conn.wait(lambda: not (link.state & Endpoint.REMOTE_UNINIT), msg="attach %s" % address)
        # a refused attach is answered by an attach and a detach right after it
        conn.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, timeout=1, msg="detach %s" % address)
    except LinkDetached:  # refused: the link carries the error
        pass
    except proton.Timeout:  # still attached: accepted
        pass
    return link


def pause(conn, seconds):
    """Let the connection do its work for a while."""
    until = time.time() + seconds
    conn.wait(lambda: time.time() > until, timeout=seconds + 5, msg="pause")


def refused(link):
    """The error condition of a link the peer detached, or None."""
    if link.state & Endpoint.REMOTE_CLOSED:
        return link.remote_condition or "detached without an error"
    return None


def queue_names(env):
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient, broker_mbean
    b = env.brokers[0]
    c = JolokiaClient(b.management_url, b.management_user, b.management_password)
    return set(c.read(broker_mbean(b.name), "QueueNames") or [])


def message_count(env, queue):
    """The message count of a queue of the pool broker, None when it is not there."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient
    b = env.brokers[0]
    c = JolokiaClient(b.management_url, b.management_user, b.management_password)
    found = c.search('org.apache.activemq.artemis:broker="%s",component=addresses,address=*,'
                     'subcomponent=queues,routing-type=*,queue="%s"' % (b.name, queue))
    return c.read(found[0], "MessageCount") if found else None


def publish(env, space, address, count):
    c = connect(env, space)
    link = attach(c, address, sender=True)
    assert refused(link) is None, (space, address, refused(link))
    sent = []
    for i in range(count):
        c.wait(lambda: link.credit > 0, msg="credit on %s" % address)
        sent.append(link.send(Message(body="%s-%d" % (space, i), durable=True)))
    c.wait(lambda: all(d.remote_state for d in sent), msg="accepted")
    assert all(d.remote_state == d.ACCEPTED for d in sent), [d.remote_state for d in sent]
    c.close()


# ------------------------------------------------------------------ item 3

def test_clients_cannot_create_or_delete_broker_queues_of_any_space(env):
    make_space(env, "wall-a", [TOPIC, KEEP])
    make_space(env, "wall-b", [TOPIC])
    publish(env, "wall-a", "news", 3)
    assert message_count(env, "wall-a/keep") == 3
    before = queue_names(env)
    errors = []
    # the case: the same container id and link name in two spaces
    a = connect(env, "wall-a", container_id="same-client")
    sub_a = attach(a, "news", sender=False, name="sub1", options=DurableTopicSubscription())
    errors.append(refused(sub_a))
    if errors[-1] is None:
        sub_a.detach()      # away, the durable subscription (and its messages) stay
        pause(a, 1)
    a.close()
    b = connect(env, "wall-b", container_id="same-client")
    sub_b = attach(b, "news", sender=False, name="sub1", options=DurableTopicSubscription())
    errors.append(refused(sub_b))
    if errors[-1] is None:
        sub_b.close()       # unsubscribe: Artemis deletes the subscription's queue
        b.wait(lambda: sub_b.state & Endpoint.REMOTE_CLOSED, msg="close")
    # a global durable subscription is named after the link (and the client's container id) alone
    sub_g = attach(b, "news", sender=False, name="wall-a/keep", options=DurableTopicSubscription(global_=True))
    errors.append(refused(sub_g))
    if errors[-1] is None:
        sub_g.close()
        b.wait(lambda: sub_g.state & Endpoint.REMOTE_CLOSED, msg="close")
    b.close()
    after = queue_names(env)
    # A's declared subscription and its messages are untouched
    assert message_count(env, "wall-a/keep") == 3, (before, after)
    # no broker object a client made lives outside its space
    made = sorted(after - before)
    assert not [q for q in made if not (q.startswith("wall-a/") or q.startswith("wall-b/"))], made
    # each refusal reaches the client as a link error it can read
    assert all(errors), errors
    assert all("permission" in str(e).lower() or "unauthorized" in str(e).lower() for e in errors), errors


def accept_bodies(c, rcv, count, what, timeout=15):
    """The bodies of up to ``count`` messages on the raw receiver ``rcv`` of
    connection ``c``, each accepted and settled, within ``timeout``."""
    got = []
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        c.wait(lambda: rcv.current is not None and not rcv.current.partial or time.time() > deadline,
               timeout=timeout + 1, msg=what)
        d = rcv.current
        if d is None:
            break
        m = Message()
        m.decode(rcv.recv(d.pending))
        rcv.advance()
        d.update(d.ACCEPTED)
        d.settle()
        got.append(m.body)
    return got


def test_declared_subscription_still_works_through_the_link_route(env):
    publish(env, "wall-a", "news", 2)
    c = connect(env, "wall-a")
    rcv = attach(c, "news::keep", sender=False)
    assert refused(rcv) is None
    rcv.flow(10)
    got = accept_bodies(c, rcv, 5, "message")
    c.close()
    assert sorted(got) == sorted(["wall-a-0", "wall-a-1", "wall-a-2", "wall-a-0", "wall-a-1"]), got


# ------------------------------------------------------------------ item 5

ROUTED = [{"address": "decl-any", "type": "anycast", "plan": "standard-small-anycast"},
          {"address": "decl-q", "type": "queue", "plan": "standard-small-queue"}]


def attached(conn, address, sender):
    link = attach(conn, address, sender)
    err = refused(link)
    if err is None:
        link.close()
    return err


def test_undeclared_addresses_are_refused_declared_ones_work(env):
    make_space(env, "wall-c", ROUTED)
    c = connect(env, "wall-c")
    for sender in (True, False):
        for name in ("decl-any", "decl-q"):
            assert attached(c, name, sender) is None, (name, sender)
        # undeclared: refused at attach, with an error the client reads
        err = attached(c, "undeclared", sender)
        assert err is not None and "unauthorized" in str(err), (sender, err)
    c.close()
    # declared: it works; removed: refused again (for a new connection)
    more = ROUTED + [{"address": "undeclared", "type": "anycast", "plan": "standard-small-anycast"}]
    assert converge(env, "wall-c", more).rc == 0
    c = connect(env, "wall-c")
    assert attached(c, "undeclared", True) is None and attached(c, "undeclared", False) is None
    c.close()
    assert converge(env, "wall-c", ROUTED).rc == 0
    c = connect(env, "wall-c")
    assert attached(c, "undeclared", True) is not None and attached(c, "undeclared", False) is not None
    c.close()


def anonymous_send(conn, link, to):
    """The outcome of one message an anonymous sender addresses to ``to``."""
    conn.wait(lambda: link.credit > 0, msg="credit")
    d = link.send(Message(address=to, body="to %s" % to, durable=True))
    conn.wait(lambda: d.remote_state, msg="outcome of a message to %s" % to)
    out = (d.remote_state, d.remote.condition)
    d.settle()
    return out


def test_anonymous_relay_and_replies_reach_only_what_the_space_may(env):
    # wall-c: decl-any, decl-q (test_undeclared_addresses_are_refused_declared_ones_work)
    c = connect(env, "wall-c")
    anon = attach(c, None, sender=True)
    assert refused(anon) is None
    state, cond = anonymous_send(c, anon, "decl-q")
    assert state == proton.Delivery.ACCEPTED, cond
    for to in ("undeclared", "wall-c/decl-q", "wall-a/keep"):
        state, cond = anonymous_send(c, anon, to)
        assert state == proton.Delivery.REJECTED and "policy" in str(cond), (to, state, cond)
    # <space>/<declared> is allowed to send to (anonymous messages are checked with the tenant
    # prefix), but nobody can receive from it: no credit, nothing flows
    assert attached(c, "wall-c/decl-any", False) is not None
    odd = attach(c, "wall-c/decl-any", sender=True)
    pause(c, 1.5)
    assert odd.credit == 0
    # request/response: a dynamic receiver's reply-to takes replies from a named sender
    rcv = c.container.create_receiver(c.conn, None, dynamic=True)
    c.wait(lambda: rcv.remote_source.address is not None, msg="dynamic source")
    reply_to = rcv.remote_source.address
    assert "/temp." in reply_to, reply_to
    r = connect(env, "wall-c")
    named = attach(r, reply_to, sender=True)
    assert refused(named) is None
    r_anon = attach(r, None, sender=True)
    rcv.flow(2)
    pause(c, 0.5)  # the credit reaches the router
    r.wait(lambda: named.credit > 0, msg="credit on the reply address")
    named.send(Message(body="named reply"))
    r.wait(lambda: r_anon.credit > 0, msg="credit")
    sent = r_anon.send(Message(address=reply_to, body="to %s" % reply_to))
    pause(r, 0.5)
    got = accept_bodies(c, rcv, 1, "reply")
    pause(c, 0.5)  # the accepts travel back
    # an anonymous reply is checked on the routed form (_topo/...), which the space does not list (docs)
    r.wait(lambda: sent.remote_state, msg="outcome of the anonymous reply")
    assert sent.remote_state == proton.Delivery.REJECTED, sent.remote_state
    router = reply_to.split("/")[3]
    # the router routes what follows a name's first ':/' (or a leading '/'): the policy checks that routed
    # form too (the policy-routed-form patch), so a name inside a listed prefix leads nowhere else
    for internal in ("_topo/0/%s/temp.x:/_local/$management" % router, "_local/$management",
                     "amqp:/_topo/0/%s/$management" % router, "decl-q:/_local/$management", "/_local/$management"):
        err = attached(r, internal, True)
        assert err is not None and "unauthorized" in str(err), (internal, err)
    for to in ("_topo/0/%s/temp.x:/_local/$management" % router, "decl-q:/_local/$management"):
        state, cond = anonymous_send(r, r_anon, to)
        assert state == proton.Delivery.REJECTED and "policy" in str(cond), (to, state, cond)
    r.close()
    c.close()
    assert sorted(got) == ["named reply"], got


def test_authenticated_users_reach_only_declared_addresses(env):
    # the auth service grants alice every address of her space ('*'): the space's declared ones
    res = run_module("address_space", dict(common(env, "wall-s"), name="wall-s", type="standard",
                                           plan="standard-unlimited"))
    assert res.rc == 0, res.result
    assert converge(env, "wall-s", ROUTED).rc == 0
    # mallory may send anywhere ('*') but receive from decl-q only: the auth service's address-authz
    env.auth_service.write_users("wall-s", {"alice": "alice-secret",
                                            "mallory": ("mallory-secret", ["send_%2A", "recv_decl-q"])})
    c = BlockingConnection(env.client_url(port_of(env, "wall-s")), user="alice", password="alice-secret",
                           allowed_mechs="PLAIN", timeout=15, **env.client_kwargs())
    for sender in (True, False):
        assert attached(c, "decl-q", sender) is None, sender
        err = attached(c, "undeclared", sender)
        assert err is not None and "unauthorized" in str(err), (sender, err)
    c.close()
    # a partial '*' does not reach the router's own addresses (no tenant prefix): its management agent
    m = BlockingConnection(env.client_url(port_of(env, "wall-s")), user="mallory", password="mallory-secret",
                           allowed_mechs="PLAIN", timeout=15, **env.client_kwargs())
    assert attached(m, "decl-q", True) is None and attached(m, "decl-q", False) is None
    router = env.routers[0].id
    # nor through a name that one of its prefix patterns admits: the router routes what follows the first
    # ':/' (or a leading '/'), and its policy checks that routed form too (the policy-routed-form patch)
    for internal in ("_local/$management", "_topo/0/%s/$management" % router, "a:/_local/$management",
                     "decl-q:/_local/$management", "d://h/_local/$management", "a:/_topo/0/%s/$management" % router,
                     "/_local/$management", "x:/_edge/%s/$management" % router):
        err = attached(m, internal, True)
        assert err is not None and "unauthorized" in str(err), (internal, err)
    # one rule must admit both forms: x:/decl-q (routed: decl-q) passes x* whole, but not routed
    assert attached(m, "x:/decl-q", True) is not None
    m.close()


class DynamicNodeAddress(LinkOption):
    """A dynamic terminus (source of a receiver, target of a sender) with
    ``x-opt-qd.address`` in its dynamic node properties: qdrouterd routes it
    by that address to a link route (a topic's broker)."""

    def __init__(self, address):
        self.address = address

    def apply(self, link):
        term = link.source if link.is_receiver else link.target
        term.address = None
        term.dynamic = True
        term.properties.put_map()
        term.properties.enter()
        term.properties.put_symbol("x-opt-qd.address")
        term.properties.put_string(self.address)
        term.properties.exit()


def test_a_dynamic_node_address_reaches_only_what_the_user_may(env):
    # wall-s gains a topic (link-routed to the broker); trudy may send to decl-q and receive from it, and
    # send to what is below feed/
    feed = {"address": "feed", "type": "topic", "plan": "standard-small-topic"}
    assert converge(env, "wall-s", ROUTED + [feed]).rc == 0
    env.auth_service.write_users("wall-s", {"alice": "alice-secret",
                                            "trudy": ("trudy-secret", ["send_decl-q", "recv_decl-q",
                                                                       "send_feed%2F%2A"])})

    def login(user):
        return BlockingConnection(env.client_url(port_of(env, "wall-s")), user=user, password=user + "-secret",
                                  allowed_mechs="PLAIN", timeout=15, **env.client_kwargs())

    t = login("trudy")
    assert attached(t, "feed", True) is not None and attached(t, "feed", False) is not None  # named: refused
    # feed/* is not feed: the router drops a trailing '/' before it looks "feed/" up, the policy too
    err = attached(t, "feed/", True)
    assert err is not None and "unauthorized" in str(err), err
    # the same address in a dynamic terminus's node properties is checked as the name is: refused
    for sender in (True, False):
        link = attach(t, None, sender, name="dnp-%s" % sender, options=DynamicNodeAddress("feed"))
        err = refused(link)
        assert err is not None and "unauthorized" in str(err), (sender, err)
    t.close()
    # alice (every address of the space) is not refused by the router's policy for it
    a = login("alice")
    for sender in (True, False):
        link = attach(a, None, sender, name="dnp-a-%s" % sender, options=DynamicNodeAddress("feed"))
        err = refused(link)
        assert err is None or "unauthorized" not in str(err), (sender, err)
    a.close()
