"""Standard address spaces end to end: real qdrouterd 1.19 routers (a full mesh
of three), a pool of two real Artemis brokers, the address_space/address
modules, and real AMQP 1.0 clients (python-qpid-proton) connected to
different routers. The router keeper (standard/keeper.py) runs as a process,
as its systemd service would."""
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from helpers import run_module
from standard_env import StandardEnv, build_router, drain

pytestmark = pytest.mark.integration
proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")
from proton import Endpoint, Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

ANON = {"name": "none", "type": "none"}


@pytest.fixture(scope="module")
def env():
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)  # CI builds qdrouterd from ../shared/vendor: a missing router is a failure, not a skip
    e = StandardEnv(tempfile.mkdtemp(prefix="enmasse-std-"), prefix).start()
    keeper_log = open(os.path.join(e.base_dir, "keeper.log"), "w")
    keeper = subprocess.Popen(
        [sys.executable, "-m", "ansible_collections.enmasse.messaging.plugins.module_utils.standard.keeper",
         "--infrastructure-file", e.infra_file, "--interval", "1"], stdout=keeper_log, stderr=subprocess.STDOUT)
    e.keeper = keeper
    yield e
    keeper.terminate()
    keeper.wait(10)
    e.cleanup()


def common(env, space):
    return env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(space))


def make_space(env, name, plan="standard-unlimited", **kw):
    res = run_module("address_space", dict(common(env, name), name=name, type="standard", plan=plan,
                                           authentication_service=ANON, **kw))
    assert res.rc == 0, res.result
    return res.result


def converge(env, space, addresses, check_mode=False, **kw):
    return run_module("address", dict(common(env, space), address_space=space, addresses=addresses, prune=True, **kw),
                      check_mode=check_mode, diff=True)


def port_of(env, space, router=0):
    with open(env.connection_file(space)) as f:
        eps = json.load(f)["endpoints"]
    return eps[router]["port"]


def connect(env, space, router=0):
    return BlockingConnection(env.client_url(port_of(env, space, router)), timeout=15, **env.client_kwargs())


def attach(conn, address, sender):
    """A link attached without proton's check that the peer echoes the
    address: through a link route, qdrouterd echoes the space's internal
    address (``<space>/<address>``)."""
    link = (conn.container.create_sender if sender else conn.container.create_receiver)(conn.conn, address)
    conn.wait(lambda: not (link.state & Endpoint.REMOTE_UNINIT), msg="attach %s" % address)
    return link


def send_raw(conn, link, bodies, durable=True):
    """Send and wait until the broker has accepted every message."""
    sent = []
    for b in bodies:
        conn.wait(lambda: link.credit > 0, msg="credit on %s" % link.target.address)
        sent.append(link.send(Message(body=b, durable=durable)))
    conn.wait(lambda: all(d.remote_state for d in sent), msg="accepted")
    assert all(d.remote_state == d.ACCEPTED for d in sent), [d.remote_state for d in sent]
    for d in sent:
        d.settle()


def receive_raw(conn, link, count, timeout=15):
    got = []
    link.flow(count)
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        conn.wait(lambda: link.current is not None and not link.current.partial or time.time() > deadline,
                  timeout=timeout, msg="message")
        d = link.current
        if d is None:
            break
        m = Message()
        m.decode(link.recv(d.pending))
        link.advance()  # before settling: a settled delivery is gone from the link
        d.update(d.ACCEPTED)
        d.settle()
        got.append(m.body)
    return got


def direct_roundtrip(receivers, sender_conn, address, body, timeout=15):
    """Send one message to a direct (router-only) address while every
    receiver waits for it in its own thread: an unsettled anycast delivery
    settles only when its receiver accepts it. Returns the bodies received."""
    import threading
    got = [None] * len(receivers)
    done = threading.Event()

    def take(i, rcv):
        try:
            m = rcv.receive(timeout=timeout)
            rcv.accept()
            got[i] = m.body
        except Exception as e:  # reported by the assertion of the caller
            got[i] = repr(e)
        # keep the connection turning until the sender is done: the accept
        # travels back to the sender only when this connection writes it
        container = rcv.connection.container
        container.timeout = 0.1
        while not done.is_set():
            container.process()
    threads = [threading.Thread(target=take, args=(i, r), daemon=True) for i, r in enumerate(receivers)]
    for t in threads:
        t.start()
    try:
        snd = sender_conn.create_sender(address)
        deadline = time.time() + timeout
        while True:
            try:
                snd.send(Message(body=body), timeout=timeout)
                break
            except Exception:
                # released: the receivers' address has not reached this router yet
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        done.set()
    for t in threads:
        t.join(timeout + 5)
    return got


def wait_receivers(env, space, address, count, timeout=20):
    """Until router r1 knows ``count`` receivers of ``address`` in ``space``
    (its own plus those behind the other routers of the mesh)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with env.session() as s:
            rows = s.query("org.apache.qpid.dispatch.router.address", ["name", "subscriberCount", "remoteCount"])
        for r in rows:
            if (r.get("name") or "").endswith("%s/%s" % (space, address)) and \
                    int(r.get("subscriberCount") or 0) + int(r.get("remoteCount") or 0) >= count:
                return
        time.sleep(0.3)
    raise AssertionError("router r1 never saw %d receivers of %s/%s" % (count, space, address))


def broker_count(env, broker_index, name):
    b = env.brokers[broker_index]
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient
    c = JolokiaClient(b.management_url, b.management_user, b.management_password)
    unused, live = reader.read_live(c, b.name)
    entry = live.get(name)
    return None if entry is None else entry["message_count"]


ADDRESSES = [
    {"address": "a1", "type": "anycast", "plan": "standard-small-anycast"},
    {"address": "a-lonely", "type": "anycast", "plan": "standard-small-anycast"},
    {"address": "m1", "type": "multicast", "plan": "standard-small-multicast"},
    {"address": "q1", "type": "queue", "plan": "standard-small-queue"},
    {"address": "t1", "type": "topic", "plan": "standard-small-topic"},
    {"address": "t1-durable", "type": "subscription", "plan": "standard-small-subscription", "topic": "t1"},
]


@pytest.fixture(scope="module")
def space(env):
    make_space(env, "tenant-a")
    res = converge(env, "tenant-a", ADDRESSES)
    assert res.rc == 0, res.result
    return "tenant-a"


def test_converge_is_idempotent_and_ready(env, space):
    res = converge(env, space, ADDRESSES)
    assert res.rc == 0 and res.result["changed"] is False, res.result["changes"]
    info = run_module("address_info", dict(common(env, space), address_space=space))
    phases = dict((a["address"], a["status"]["phase"]) for a in info.result["addresses"])
    assert phases == dict((a["address"], "Active") for a in ADDRESSES), info.result
    sinfo = run_module("address_space_info", dict(common(env, space), name=space))
    st = sinfo.result["address_space"]["status"]
    assert st["phase"] == "Active" and [r["id"] for r in st["routers"]] == ["r1", "r2", "r3"], st
    assert len(st["endpoints"]) == 3 and st["brokers"] == ["b1", "b2"]


def test_anycast_crosses_the_mesh(env, space):
    rc = connect(env, space, 2)   # receiver on router r3
    rcv = rc.create_receiver("a1")
    sc = connect(env, space, 0)   # sender on router r1
    assert direct_roundtrip([rcv], sc, "a1", "hello-anycast") == ["hello-anycast"]
    rc.close()
    sc.close()


def test_anycast_without_receiver_gives_no_credit(env, space):
    sc = connect(env, space, 1)
    link = attach(sc, "a-lonely", sender=True)  # nobody ever receives from it
    time.sleep(2)
    sc.container.process() if hasattr(sc.container, "process") else None
    assert link.credit == 0, "a sender to an anycast address with no receiver anywhere got credit"
    sc.close()


def test_multicast_every_receiver_gets_a_copy(env, space):
    conns = [connect(env, space, i) for i in range(3)]
    rcvs = [c.create_receiver("m1") for c in conns]
    wait_receivers(env, space, "m1", 3)  # pre-settled: a copy sent before a route exists is lost
    sender = connect(env, space, 0)
    # multicast is pre-settled (at most once): the sender does not wait for anyone
    from proton.reactor import AtMostOnce
    sender.create_sender("m1", options=AtMostOnce()).send(Message(body="hello-all"))
    sender.close()  # flushes the pre-settled message out of the sender's connection
    got = []
    for r in rcvs:
        got.append(r.receive(timeout=10).body)  # pre-settled: nothing to accept
    assert got == ["hello-all"] * 3
    for c in conns:
        c.close()


def test_queue_stores_on_its_broker_and_drains_from_another_router(env, space):
    sc = connect(env, space, 0)
    snd = sc.create_sender("q1")
    for i in range(5):
        snd.send(Message(body="q-%d" % i, durable=True))
    sc.close()
    assert broker_count(env, 0, "tenant-a/q1") == 5   # placed on b1, stored there
    rc = connect(env, space, 2)
    got = drain(rc, "q1", 5)
    rc.close()
    assert sorted(got) == ["q-%d" % i for i in range(5)]


def test_durable_subscription_keeps_messages_while_away(env, space):
    pc = connect(env, space, 1)
    pub = attach(pc, "t1", sender=True)
    send_raw(pc, pub, ["t-%d" % i for i in range(3)])
    pc.close()
    assert broker_count(env, 0, "tenant-a/t1-durable") == 3
    sc = connect(env, space, 2)
    sub = attach(sc, "t1::t1-durable", sender=False)
    got = receive_raw(sc, sub, 3)
    sc.close()
    assert got == ["t-0", "t-1", "t-2"]


def test_partitioned_queue_spreads_and_drains(env):
    plan = {"name": "standard-two-partitions", "address_type": "queue", "address_space_type": "standard",
            "resources": {"router": 0.01, "broker": 0.2}, "partitions": 2}
    res = run_module("address_plan", dict(catalogue_path=env.catalogue_path, **plan))
    assert res.rc == 0, res.result
    splan = {"name": "standard-lab", "address_space_type": "standard",
             "resource_limits": {"router": 10.0, "broker": 10.0, "aggregate": 20.0},
             "address_plans": ["standard-two-partitions", "standard-small-queue"]}
    res = run_module("address_space_plan", dict(catalogue_path=env.catalogue_path, **splan))
    assert res.rc == 0, res.result
    make_space(env, "tenant-p", plan="standard-lab")
    res = converge(env, "tenant-p", [{"address": "pq", "type": "queue", "plan": "standard-two-partitions"}])
    assert res.rc == 0, res.result
    st = res.result["addresses"][0]["status"]
    assert sorted(st["brokers"]) == ["b1", "b2"], st
    c = connect(env, "tenant-p", 0)
    snd = c.create_sender("pq")
    for i in range(20):
        snd.send(Message(body="p-%d" % i, durable=True))
    on1, on2 = broker_count(env, 0, "tenant-p/pq"), broker_count(env, 1, "tenant-p/pq")
    assert on1 > 0 and on2 > 0 and on1 + on2 == 20, (on1, on2)
    got = drain(connect(env, "tenant-p", 1), "pq", 20)
    assert sorted(got) == sorted("p-%d" % i for i in range(20))


def test_spaces_are_isolated(env, space):
    make_space(env, "tenant-b")
    res = converge(env, "tenant-b", [{"address": "q1", "type": "queue", "plan": "standard-small-queue"},
                                     {"address": "a1", "type": "anycast", "plan": "standard-small-anycast"}])
    assert res.rc == 0, res.result
    a = connect(env, "tenant-a", 0)
    b = connect(env, "tenant-b", 0)
    a.create_sender("q1").send(Message(body="for-a", durable=True))
    b.create_sender("q1").send(Message(body="for-b", durable=True))
    assert drain(b, "q1", 1, timeout=5) == ["for-b"]
    assert drain(b, "q1", 1, timeout=2) == []            # B never sees A's message
    assert drain(a, "q1", 1, timeout=5) == ["for-a"]
    # anycast: a receiver in B does not get what is sent to the same name in A
    rb = b.create_receiver("a1")
    time.sleep(1)
    link = attach(a, "a1", sender=True)
    time.sleep(1.5)
    assert link.credit == 0, "a sender in tenant-a got credit from a receiver in tenant-b"
    rb.close()
    a.close()
    b.close()


def test_over_quota_is_pending_with_reason(env):
    splan = {"name": "standard-tiny", "address_space_type": "standard",
             "resource_limits": {"router": 1.0, "broker": 0.01, "aggregate": 1.01},
             "address_plans": ["standard-small-queue", "standard-small-anycast"]}
    res = run_module("address_space_plan", dict(catalogue_path=env.catalogue_path, **splan))
    assert res.rc == 0, res.result
    make_space(env, "tenant-q", plan="standard-tiny")
    res = converge(env, "tenant-q", [{"address": "first", "type": "queue", "plan": "standard-small-queue"},
                                     {"address": "second", "type": "queue", "plan": "standard-small-queue"}])
    assert res.rc == 0, res.result
    st = dict((a["address"], a["status"]) for a in res.result["addresses"])
    assert st["first"]["phase"] == "Active"
    assert st["second"]["phase"] == "Pending" and "quota exceeded" in st["second"]["messages"][0], st
    assert broker_count(env, 0, "tenant-q/second") is None and broker_count(env, 1, "tenant-q/second") is None


def test_check_mode_changes_nothing(env, space):
    new = ADDRESSES + [{"address": "q-check", "type": "queue", "plan": "standard-small-queue"}]
    res = converge(env, space, new, check_mode=True)
    assert res.rc == 0 and res.result["changed"] is True
    assert broker_count(env, 0, "tenant-a/q-check") is None and broker_count(env, 1, "tenant-a/q-check") is None
    res = converge(env, space, ADDRESSES)
    assert res.result["changed"] is False


def test_killed_router_comes_back_with_its_addresses(env, space):
    # queue messages accepted before the crash are kept (they are on the broker)
    c = connect(env, space, 0)
    c.create_sender("q1").send(Message(body="before-crash", durable=True))
    c.close()
    env.routers[1].kill()
    # anycast between the survivors keeps flowing
    rc = connect(env, space, 2)
    rcv = rc.create_receiver("a1")
    sc = connect(env, space, 0)
    assert direct_roundtrip([rcv], sc, "a1", "during-crash") == ["during-crash"]
    rc.close()
    sc.close()
    env.routers[1].start()   # as systemd's Restart=always would
    env.wait_mesh()
    # the keeper restores r2's entities without anyone running Ansible
    deadline = time.time() + 60
    ok = False
    while time.time() < deadline and not ok:
        info = run_module("address_info", dict(common(env, space), address_space=space))
        # while r2 rejoins, a read through the mesh may fail: the module says so, then the next one works
        ok = bool(info.result.get("addresses")) and all(a["status"]["ready"] for a in info.result["addresses"])
        if not ok:
            time.sleep(1)
    assert ok, info.result
    # a client of router r2 is served again; the message from before the crash is there
    got = drain(connect(env, space, 1), "q1", 1)
    assert got == ["before-crash"]
    res = converge(env, space, ADDRESSES)
    assert res.result["changed"] is False, res.result["changes"]


def test_clients_authenticate_with_sasl_plain_through_the_auth_service(env):
    res = run_module("address_space", dict(common(env, "tenant-s"), name="tenant-s", type="standard",
                                           plan="standard-unlimited"))
    assert res.rc == 0, res.result
    assert converge(env, "tenant-s", [{"address": "q", "type": "queue", "plan": "standard-small-queue"}]).rc == 0
    env.auth_service.write_users("tenant-s", {"alice": "alice-secret"})
    url = env.client_url(port_of(env, "tenant-s", 1))

    def login(user, password, mechs="PLAIN"):
        return BlockingConnection(url, user=user, password=password, allowed_mechs=mechs, timeout=15,
                                  **env.client_kwargs())
    c = login("alice", "alice-secret")
    c.create_sender("q").send(Message(body="authenticated", durable=True))
    assert drain(c, "q", 1) == ["authenticated"]
    c.close()
    for user, password, mechs in (("alice", "wrong", "PLAIN"), ("mallory", "alice-secret", "PLAIN"),
                                  (None, None, "ANONYMOUS")):
        with pytest.raises(proton.ConnectionException):
            login(user, password, mechs).close()
    # a user of another space cannot log in here
    env.auth_service.write_users("tenant-other", {"bob": "bob-secret"})
    with pytest.raises(proton.ConnectionException):
        login("bob", "bob-secret").close()


def test_plan_change_drains_the_old_broker_then_releases_it(env):
    # tenant-p's pq is partitioned over b1 and b2 (test_partitioned_queue_spreads_and_drains ran first)
    c = connect(env, "tenant-p", 0)
    snd = c.create_sender("pq")
    for i in range(10):
        snd.send(Message(body="old-%d" % i, durable=True))
    c.close()
    on_b2 = broker_count(env, 1, "tenant-p/pq")
    assert on_b2 and on_b2 > 0
    res = converge(env, "tenant-p", [{"address": "pq", "type": "queue", "plan": "standard-small-queue"}])
    assert res.rc == 0 and res.result["changed"], res.result
    st = res.result["addresses"][0]["status"]
    assert st["brokers"] == ["b1"] and st["draining"] == ["b2"], st
    # b2 keeps only its outgoing link: new messages go to b1 only
    c = connect(env, "tenant-p", 1)
    snd = c.create_sender("pq")
    for i in range(5):
        snd.send(Message(body="new-%d" % i, durable=True))
    assert broker_count(env, 1, "tenant-p/pq") == on_b2
    got = drain(c, "pq", 15)
    c.close()
    assert len(got) == 15 and set("new-%d" % i for i in range(5)) <= set(got)
    # empty now: the next run releases b2 (queue and autoLink gone), the one after changes nothing
    res = converge(env, "tenant-p", [{"address": "pq", "type": "queue", "plan": "standard-small-queue"}])
    assert res.rc == 0 and res.result["changed"], res.result
    assert "draining" not in res.result["addresses"][0]["status"]
    assert broker_count(env, 1, "tenant-p/pq") is None
    res = converge(env, "tenant-p", [{"address": "pq", "type": "queue", "plan": "standard-small-queue"}])
    assert res.result["changed"] is False, res.result["changes"]


def live_snapshot(env):
    """Every owned router entity on every router and every address on every broker."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.router import reader
    with env.session() as s:
        live, unused = reader.read_owned(s, [r.id for r in env.routers])
    brokers = []
    for b in env.brokers:
        brokers.append(sorted(b.address_names()))
    return live, brokers


BAD_ADDRESSES = [
    ({"address": "x", "type": "bogus", "plan": "standard-small-queue"}, ["type", "bogus"]),
    ({"address": "x", "type": "queue", "plan": "no-such-plan"}, ["plan", "no-such-plan"]),
    ({"address": "x", "type": "queue", "plan": "brokered-queue"}, ["plan", "brokered-queue"]),
    ({"address": "has space", "type": "queue", "plan": "standard-small-queue"}, ["has space"]),
    ({"address": "_!internal", "type": "queue", "plan": "standard-small-queue"}, ["_!internal"]),
    ({"address": "sub-x", "type": "subscription", "plan": "standard-small-subscription"}, ["topic"]),
    ({"address": "sub-y", "type": "subscription", "plan": "standard-small-subscription", "topic": "q1"},
     ["topic", "q1"]),
    ({"address": "sub-z", "type": "subscription", "plan": "standard-small-subscription", "topic": "nowhere"},
     ["topic", "nowhere"]),
    ({"address": "x", "type": "queue", "plan": "standard-small-queue", "deadletter": "q1"}, ["deadletter", "q1"]),
    ({"address": "x", "type": "queue", "plan": "standard-small-queue", "message_ttl": {"minimum": 5000, "maximum": 10}},
     ["message_ttl", "5000"]),
    ({"address": "x", "type": "queue", "plan": "standard-small-queue", "message_ttl": {"maximum": -1}},
     ["message_ttl", "-1"]),
    ({"address": "x", "type": "queue", "plan": "standard-small-queue",
      "message_redelivery": {"maximum_delivery_atempts": 3}}, ["maximum_delivery_atempts"]),
    ({"address": "a/#", "type": "queue", "plan": "standard-small-queue"}, ["a/#"]),
    ({"address": "q1", "type": "topic", "plan": "standard-small-topic"}, ["q1", "type"]),
    ({"address": "x", "type": "anycast", "plan": "standard-small-queue"}, ["plan", "standard-small-queue"]),
    ({"address": "t1-durable", "type": "subscription", "plan": "standard-small-subscription", "topic": "t1",
      "subscription": {"max_consumers": 5}}, ["max_consumers"]),
    # a subscription's queue lives on its topic's address: its settings are the topic's
    ({"address": "t1-durable", "type": "subscription", "plan": "standard-small-subscription", "topic": "t1",
      "message_ttl": {"maximum": 1000}}, ["t1-durable", "message_ttl", "is only allowed on queue, topic addresses",
                                          "set it on topic 't1'"]),
]


@pytest.mark.parametrize("bad,words", BAD_ADDRESSES, ids=[str(i) for i in range(len(BAD_ADDRESSES))])
def test_bad_address_is_refused_and_nothing_changes(env, space, bad, words):
    before = live_snapshot(env)
    res = converge(env, space, ADDRESSES + [bad])
    assert res.rc != 0, res.result
    text = " ".join(res.result.get("errors") or [res.result.get("msg", "")])
    for w in words:
        assert w in text, (w, text)
    assert live_snapshot(env) == before


BAD_SPACES = [
    (dict(name="Tenant-Upper", type="standard", plan="standard-unlimited"), ["Tenant-Upper"]),
    (dict(name="tenant-bp", type="standard", plan="brokered-single-broker"), ["plan", "brokered-single-broker"]),
    (dict(name="tenant-a", type="brokered", plan="brokered-single-broker"), ["type", "brokered"]),
    (dict(name="tenant-np", type="standard", plan="no-such-space-plan"), ["plan", "no-such-space-plan"]),
]


@pytest.mark.parametrize("bad,words", BAD_SPACES, ids=[str(i) for i in range(len(BAD_SPACES))])
def test_bad_address_space_is_refused_and_nothing_changes(env, space, bad, words):
    before = live_snapshot(env)
    res = run_module("address_space", dict(common(env, bad["name"]), **bad))
    assert res.rc != 0, res.result
    text = " ".join(res.result.get("errors") or [res.result.get("msg", "")])
    for w in words:
        assert w in text, (w, text)
    assert live_snapshot(env) == before
    assert not os.path.exists(env.connection_file(bad["name"])) or bad["name"] == "tenant-a"


# ---------------------------------------------------------------- dead letter, expiry, redelivery
# The brokered rules (artemis/settings.py) applied to the S/ names on the pool
# brokers, exercised through the routers: clients only ever talk to a router.

DL_ADDRESSES = [
    {"address": "dlq", "type": "deadletter", "plan": "standard-deadletter"},
    {"address": "retry", "type": "queue", "plan": "standard-small-queue", "deadletter": "dlq",
     "message_redelivery": {"maximum_delivery_attempts": 3}},
    {"address": "short", "type": "queue", "plan": "standard-small-queue", "expiry": "dlq",
     "message_ttl": {"maximum": 1000}},
    {"address": "redo", "type": "queue", "plan": "standard-small-queue"},
]


@pytest.fixture(scope="module")
def dl_space(env):
    make_space(env, "tenant-dl")
    res = converge(env, "tenant-dl", DL_ADDRESSES)
    assert res.rc == 0, res.result
    st = dict((a["address"], a["status"]) for a in res.result["addresses"])
    assert all(s["phase"] == "Active" for s in st.values()), st
    assert st["dlq"]["brokers"] == ["b1", "b2"], st   # a deadletter lives on every broker of the pool
    assert all(st[n]["brokers"] == ["b1"] for n in ("retry", "short", "redo")), st
    return "tenant-dl"


def settle_last(rcv, outcome, failed=None, undeliverable=None):
    """Settle the last message a BlockingReceiver got with ``outcome``
    (released, rejected, modified with its delivery-failed/undeliverable-here)."""
    from proton import Delivery
    d = rcv.fetcher.unsettled.popleft()
    if failed is not None:
        d.local.failed = failed
    if undeliverable is not None:
        d.local.undeliverable = undeliverable
    d.update(getattr(Delivery, outcome))
    d.settle()


def receive_ids(conn, address, ids, timeout=60):
    """Accept messages from ``address`` until every id in ``ids`` arrived
    (readiness: the broker moves them in its own time); returns {id: message}."""
    rcv = conn.create_receiver(address, credit=10)
    got = {}
    deadline = time.time() + timeout
    while not set(ids) <= set(got) and time.time() < deadline:
        try:
            m = rcv.receive(timeout=max(0.1, deadline - time.time()))
        except proton.Timeout:
            break
        rcv.accept()
        got[m.id] = m
    rcv.close()
    return got


def broker_counts(env, name):
    return [broker_count(env, i, name) for i in range(len(env.brokers))]


def queue_attribute(env, broker_index, name, attribute):
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient, queue_mbean
    b = env.brokers[broker_index]
    c = JolokiaClient(b.management_url, b.management_user, b.management_password)
    return c.read(queue_mbean(b.name, name, name, "anycast"), attribute)


def test_standard_settings_are_the_brokered_rules_on_the_space_names(env, dl_space):
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient
    b = env.brokers[0]
    c = JolokiaClient(b.management_url, b.management_user, b.management_password)
    s = reader.read_settings(c, b.name, ["tenant-dl/retry", "tenant-dl/short"])
    assert s["tenant-dl/retry"]["deadLetterAddress"] == "tenant-dl/dlq"
    assert s["tenant-dl/retry"]["maxDeliveryAttempts"] == 3
    assert s["tenant-dl/short"]["expiryAddress"] == "tenant-dl/dlq"
    assert s["tenant-dl/short"]["maxExpiryDelay"] == 1000
    info = run_module("address_info", dict(common(env, dl_space), address_space=dl_space, addresses=["retry"]))
    [retry] = info.result["addresses"]
    assert retry["deadletter"] == "dlq" and retry["message_redelivery"]["maximum_delivery_attempts"] == 3, retry


def test_standard_failed_deliveries_end_on_the_deadletter_through_a_router(env, dl_space):
    c = connect(env, dl_space, 0)
    c.create_sender("retry").send(Message(id="dl-1", body="doomed", durable=True))
    rcv = c.create_receiver("retry", credit=1)
    counts = []
    for unused in range(3):
        m = rcv.receive(timeout=15)
        assert m.id == "dl-1", m
        counts.append(m.delivery_count)
        settle_last(rcv, "MODIFIED", failed=True)   # the client could not process it
    rcv.close()
    assert counts == [0, 1, 2]   # the broker counted each failed delivery
    # after the 3rd (maximum_delivery_attempts) it is on the space's deadletter, read through another router
    got = receive_ids(connect(env, dl_space, 2), "dlq", ["dl-1"])
    assert list(got) == ["dl-1"] and got["dl-1"].body == "doomed"
    assert (got["dl-1"].annotations or {}).get("x-opt-ORIG-ADDRESS") == "tenant-dl/retry"
    assert broker_counts(env, "tenant-dl/retry") == [0, None]   # gone from the queue
    c.close()


def test_standard_rejected_message_is_dead_lettered_at_once(env, dl_space):
    c = connect(env, dl_space, 1)
    c.create_sender("retry").send(Message(id="rej-1", body="malformed", durable=True))
    rcv = c.create_receiver("retry", credit=1)
    assert rcv.receive(timeout=15).id == "rej-1"
    settle_last(rcv, "REJECTED")   # the router passes the rejection on to the broker
    rcv.close()
    got = receive_ids(connect(env, dl_space, 0), "dlq", ["rej-1"])
    assert list(got) == ["rej-1"]
    assert broker_counts(env, "tenant-dl/retry") == [0, None]
    c.close()


def test_standard_redelivery_counts_failed_deliveries(env, dl_space):
    c = connect(env, dl_space, 0)
    c.create_sender("redo").send(Message(id="re-1", body="again", durable=True))
    rcv = c.create_receiver("redo", credit=1)
    seen = []
    # released: not a delivery attempt (as on the broker directly); modified with
    # delivery-failed: one; modified WITHOUT delivery-failed: qdrouterd 1.19 sets
    # delivery-failed on every modified it forwards, so through a router it is one too
    for outcome, failed in (("RELEASED", None), ("MODIFIED", True), ("MODIFIED", False), (None, None)):
        m = rcv.receive(timeout=15)
        assert m.id == "re-1", m
        seen.append(m.delivery_count)
        if outcome:
            settle_last(rcv, outcome, failed=failed)
    rcv.accept()
    rcv.close()
    assert seen == [0, 0, 1, 2]
    c.close()


def test_standard_expired_messages_move_to_the_expiry_address(env, dl_space):
    c = connect(env, dl_space, 1)
    snd = c.create_sender("short")
    snd.send(Message(id="exp-no-ttl", body="no ttl of its own", durable=True))     # gets the 1000 ms maximum
    long_ttl = Message(id="exp-long-ttl", body="asked for 60 s", durable=True)
    long_ttl.ttl = 60.0                                                            # narrowed to 1000 ms
    snd.send(long_ttl)
    c.close()
    # nobody receives from short: the broker expires both onto the expiry address dlq
    got = receive_ids(connect(env, dl_space, 2), "dlq", ["exp-no-ttl", "exp-long-ttl"])
    assert sorted(got) == ["exp-long-ttl", "exp-no-ttl"]
    assert all((m.annotations or {}).get("x-opt-ORIG-ADDRESS") == "tenant-dl/short" for m in got.values())
    assert broker_counts(env, "tenant-dl/short") == [0, None]   # not delivered from short any more


def test_standard_message_a_router_holds_is_not_expired(env, dl_space):
    """What differs from a brokered space: a router takes messages from the
    broker as soon as the queue has a receiver anywhere (its link credit, not
    the receiver's); Artemis expires only what it still holds, and qdrouterd
    never looks at TTLs. A receiver that then grants credit gets the message
    even after its expiry time (on the broker directly it would be expired)."""
    c = connect(env, dl_space, 0)
    link = attach(c, "short", sender=False)   # no credit given
    c.create_sender("short").send(Message(id="held-1", body="held by the router", durable=True))
    deadline = time.time() + 20
    while queue_attribute(env, 0, "tenant-dl/short", "DeliveringCount") != 1 and time.time() < deadline:
        time.sleep(0.2)
    assert queue_attribute(env, 0, "tenant-dl/short", "DeliveringCount") == 1   # a router has it
    time.sleep(1.5)   # let the 1000 ms maximum TTL pass
    link.flow(1)
    c.wait(lambda: link.current is not None and not link.current.partial, timeout=15, msg="held message")
    d = link.current
    m = Message()
    m.decode(link.recv(d.pending))
    link.advance()
    d.update(d.ACCEPTED)
    d.settle()
    assert m.id == "held-1"
    assert 0 < m.expiry_time < time.time(), m.expiry_time   # delivered after the expiry time the broker gave it
    c.close()


def test_standard_dead_letters_stay_in_their_space(env, dl_space):
    make_space(env, "tenant-dl2")
    res = converge(env, "tenant-dl2", [DL_ADDRESSES[0], DL_ADDRESSES[1]])   # the same names: dlq, retry
    assert res.rc == 0, res.result
    before = broker_counts(env, "tenant-dl/dlq")
    a = connect(env, dl_space, 0)
    a.create_sender("retry").send(Message(id="iso-1", body="tenant-dl's", durable=True))
    rcv = a.create_receiver("retry", credit=1)
    assert rcv.receive(timeout=15).id == "iso-1"
    settle_last(rcv, "REJECTED")
    rcv.close()
    # it is on tenant-dl's dlq, on the broker where it died ...
    deadline = time.time() + 20
    while broker_count(env, 0, "tenant-dl/dlq") == before[0] and time.time() < deadline:
        time.sleep(0.2)
    assert broker_counts(env, "tenant-dl/dlq") == [before[0] + 1, before[1]]
    # ... and nowhere in tenant-dl2: its dlq of the same name holds only what tenant-dl2 puts there
    assert broker_counts(env, "tenant-dl2/dlq") == [0, 0]
    b = connect(env, "tenant-dl2", 1)
    b.create_sender("dlq").send(Message(id="iso-marker", body="tenant-dl2's", durable=True))
    assert list(receive_ids(b, "dlq", ["iso-marker"])) == ["iso-marker"]
    deadline = time.time() + 15  # the broker counts the acknowledgement a moment after the receiver has it
    while broker_counts(env, "tenant-dl2/dlq") != [0, 0] and time.time() < deadline:
        time.sleep(0.2)
    assert broker_counts(env, "tenant-dl2/dlq") == [0, 0]
    b.close()
    assert "iso-1" in receive_ids(a, "dlq", ["iso-1"])
    a.close()


def test_draining_broker_moves_its_queues_off_and_takes_nothing_new(env):
    """Scale in (docs/scale-in.md): a pool broker marked draining in the
    infrastructure file keeps only its outgoing links; its queue's new home
    takes new messages, consumers get the old ones too, and once it is empty
    the next converge releases it. No message accepted before or during the
    drain is lost."""
    make_space(env, "tenant-d")
    first = [{"address": "dq", "type": "queue", "plan": "standard-small-queue"}]
    res = converge(env, "tenant-d", first)
    assert res.rc == 0, res.result
    (leaving,) = res.result["addresses"][0]["status"]["brokers"]
    idx = [b.name for b in env.brokers].index(leaving)
    other = env.brokers[1 - idx].name
    c = connect(env, "tenant-d", 0)
    snd = c.create_sender("dq")
    for i in range(10):
        snd.send(Message(body="before-%d" % i, durable=True))
    c.close()
    assert broker_count(env, idx, "tenant-d/dq") == 10
    both = first + [{"address": "dq2", "type": "queue", "plan": "standard-small-queue"}]
    env.draining = frozenset([leaving])
    env.write_infra()
    try:
        res = converge(env, "tenant-d", both)
        assert res.rc == 0 and res.result["changed"], res.result
        st = dict((a["address"], a["status"]) for a in res.result["addresses"])
        # the queue moved to the other broker, the leaving one drains; the new queue never lands there
        assert st["dq"]["brokers"] == [other] and st["dq"]["draining"] == [leaving], st
        assert st["dq2"]["brokers"] == [other], st
        c = connect(env, "tenant-d", 1)
        snd = c.create_sender("dq")
        for i in range(5):
            snd.send(Message(body="during-%d" % i, durable=True))
        assert broker_count(env, idx, "tenant-d/dq") == 10  # nothing new reached the leaving broker
        assert broker_count(env, 1 - idx, "tenant-d/dq") == 5
        got = drain(c, "dq", 15)
        c.close()
        assert sorted(got) == sorted(["before-%d" % i for i in range(10)] + ["during-%d" % i for i in range(5)])
        # empty: the next converge releases it (queue and links gone); the one after changes nothing
        res = converge(env, "tenant-d", both)
        assert res.rc == 0 and res.result["changed"], res.result
        assert "draining" not in res.result["addresses"][0]["status"], res.result["addresses"]
        assert broker_count(env, idx, "tenant-d/dq") is None
        res = converge(env, "tenant-d", both)
        assert res.result["changed"] is False, res.result["changes"]
    finally:
        env.draining = frozenset()
        env.write_infra()
    # back to active: nothing moves back (placement is stable)
    res = converge(env, "tenant-d", both)
    assert res.result["changed"] is False, res.result["changes"]
    info = run_module("address_info", dict(common(env, "tenant-d"), address_space="tenant-d"))
    assert [a["status"]["brokers"] for a in info.result["addresses"]] == [[other], [other]], info.result


def test_pool_drain_moves_what_nobody_consumes_and_loses_nothing(env):
    """What the routers cannot pull (a queue without consumers, a durable
    subscription nobody reads) is moved by enmasse.messaging.pool_drain to
    the new home: check mode moves nothing, the real run moves every
    message, a second run has nothing left; consumers then get every message
    once through the routers, and the next converge releases the broker."""
    make_space(env, "tenant-m")
    addrs = [{"address": "mq", "type": "queue", "plan": "standard-small-queue"},
             {"address": "mt", "type": "topic", "plan": "standard-small-topic"},
             {"address": "mts", "type": "subscription", "plan": "standard-small-subscription", "topic": "mt"}]
    res = converge(env, "tenant-m", addrs)
    assert res.rc == 0, res.result
    st = dict((a["address"], a["status"]) for a in res.result["addresses"])
    leaving = st["mq"]["brokers"][0]
    idx = [b.name for b in env.brokers].index(leaving)
    assert st["mt"]["brokers"] == [leaving], st  # first fit: both on the first broker with room
    c = connect(env, "tenant-m", 0)
    snd = c.create_sender("mq")
    for i in range(10):
        snd.send(Message(id="mq-%d" % i, body="q-%d" % i, durable=True))
    pub = attach(c, "mt", sender=True)
    send_raw(c, pub, ["t-%d" % i for i in range(5)])
    c.close()
    assert broker_count(env, idx, "tenant-m/mq") == 10 and broker_count(env, idx, "tenant-m/mts") == 5
    args = dict(broker=leaving, infrastructure_file=env.infra_file, idle=1.0)
    # an active broker is refused, naming the field and what to do first
    res = run_module("pool_drain", args)
    assert res.rc != 0 and "broker: %r is active: set standard_pool_state: draining" % leaving in res.result["msg"]
    env.draining = frozenset([leaving])
    env.write_infra()
    try:
        assert converge(env, "tenant-m", addrs).rc == 0
        res = run_module("pool_drain", args, check_mode=True, diff=True)
        assert res.rc == 0 and res.result["changed"] and res.result["messages"] == 15, res.result
        assert res.result["diff"]["before"] == {leaving: {"tenant-m/mq": 10, "tenant-m/mts": 5}}
        assert broker_count(env, idx, "tenant-m/mq") == 10  # check mode moved nothing
        res = run_module("pool_drain", args, diff=True)
        assert res.rc == 0 and res.result["changed"] and res.result["messages"] == 15, res.result
        assert res.result["diff"]["after"] == {leaving: {}}
        assert broker_count(env, idx, "tenant-m/mq") == 0 and broker_count(env, idx, "tenant-m/mts") == 0
        other = 1 - idx
        assert broker_count(env, other, "tenant-m/mq") == 10 and broker_count(env, other, "tenant-m/mts") == 5
        res = run_module("pool_drain", args)
        assert res.rc == 0 and not res.result["changed"] and res.result["messages"] == 0, res.result
        # every message once, through the routers, from the new home
        c = connect(env, "tenant-m", 1)
        got = drain(c, "mq", 10)
        sub = attach(c, "mt::mts", sender=False)
        subs = receive_raw(c, sub, 5)
        c.close()
        assert sorted(got) == sorted("q-%d" % i for i in range(10)) and subs == ["t-%d" % i for i in range(5)]
        res = converge(env, "tenant-m", addrs)
        assert res.rc == 0 and res.result["changed"], res.result
        assert broker_count(env, idx, "tenant-m/mq") is None and broker_count(env, idx, "tenant-m/mts") is None
    finally:
        env.draining = frozenset()
        env.write_infra()


def test_mqtt_gateways_of_a_space_are_in_its_status_and_connection_file(env, space):
    """A space served by MQTT gateway instances (role mqtt_gateway; site.yml
    writes them to the infrastructure file) lists their endpoints."""
    env.mqtt_gateways = [{"host": "gw-1.example", "spaces": [{"name": space, "tls_port": 8883, "plain_port": 0}]},
                         {"host": "gw-2.example", "spaces": [{"name": "tenant-other", "tls_port": 8883}]}]
    env.write_infra()
    try:
        info = run_module("address_space_info", dict(common(env, space), name=space))
        eps = info.result["address_space"]["status"]["endpoints"]
        assert [e for e in eps if e["name"].startswith("mqtt")] == [
            {"name": "mqtts-gw-1.example", "host": "gw-1.example", "port": 8883, "protocols": ["mqtts"]}], eps
        assert [e["name"] for e in eps if e["name"].startswith("amqp")] == ["amqps-%s" % r.id for r in env.routers]
    finally:
        env.mqtt_gateways = None
        env.write_infra()
