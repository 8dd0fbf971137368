"""The will keeper's rules (plugins/module_utils/mqtt/will_keeper.py), without
a router: which link is a will and of which address, which end of it sends
the will, and the configuration's refusals. Its behaviour with real routers:
tests/integration/test_mqtt_amqp_wills.py."""
import json

import pytest

from ansible_collections.enmasse.messaging.plugins.lookup import job_bundle
from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping
from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import will_keeper as wk

GOOD = {"space": "s", "routers": ["r1:5711", "r2:5811"], "user": "mqtt-gateway", "password_file": "/etc/pw",
        "router_ca_file": "/etc/ca.pem"}


@pytest.mark.parametrize("target, address", [
    ("s/$will/m/a", "s/m/a"),  # as the router routes it
    ("$will/q1", "s/q1"),  # the client's own name
    ("s/$will/", None), ("$will", None), ("s/$willow/x", None),
    ("t/$will/q1", None),  # another space's
    ("s/q1", None), (None, None),
])
def test_a_will_link_names_an_address_of_its_space_only(target, address):
    assert wk.will_address("s", target) == address


def test_only_an_end_with_an_error_sends_the_will():
    assert wk.publishes(wk.LOST) and wk.publishes("amqp:internal-error")
    assert not wk.publishes(None)  # a clean detach: the client left on purpose


@pytest.mark.parametrize("annotations, delay", [
    (None, 0), ({}, 0), ({"x-opt-mqtt-will-delay": 0}, 0), ({"x-opt-mqtt-will-delay": 30}, 30),
    ({"x-opt-mqtt-will-delay": 3600}, 3600),
    ({"x-opt-mqtt-will-delay": 3601}, None), ({"x-opt-mqtt-will-delay": -1}, None),
    ({"x-opt-mqtt-will-delay": "30"}, None), ({"x-opt-mqtt-will-delay": 1.5}, None),
    ({"x-opt-mqtt-will-delay": True}, None),
])
def test_a_will_delay_is_whole_seconds_up_to_the_maximum(annotations, delay):
    got, why = wk.will_delay(annotations, 3600)
    assert got == delay
    assert (why is None) == (delay is not None)
    if why:
        assert "x-opt-mqtt-will-delay" in why and "max_will_delay" in why and "3600" in why


def test_the_keeper_reads_the_delay_the_mqtt_mapping_names():
    assert wk.WILL_DELAY == mapping.ANNOTATION_WILL_DELAY


def test_the_configuration_gets_its_defaults_and_a_container_id_of_the_space():
    cfg = wk.check_config(dict(GOOD))
    assert cfg["router_tls"] is True and cfg["max_wills"] == 100000
    assert cfg["container_id"].startswith("enmasse-mqtt-will-keeper/s/")


@pytest.mark.parametrize("change, words", [
    ({"space": ""}, ["space", "non-empty"]),
    ({"routers": []}, ["routers", "host:port"]),
    ({"routers": ["r1"]}, ["routers", "'r1'"]),
    ({"routers": ["r1:99999"]}, ["routers"]),
    ({"router_ca_file": ""}, ["router_ca_file", "router_tls"]),
    ({"router_tls": "yes"}, ["router_tls", "true or false"]),
    ({"max_wills": 0}, ["max_wills", "at least 1"]),
    ({"max_wills": True}, ["max_wills"]),
    ({"max_will_delay": -1}, ["max_will_delay", "-1", "at least 0"]),
    ({"log_level": "LOUD"}, ["log_level", "'LOUD'"]),
    ({"colour": "red"}, ["unknown field colour"]),
])
def test_a_bad_configuration_names_the_field_the_value_and_the_rule(change, words):
    with pytest.raises(wk.ConfigError) as info:
        wk.check_config(dict(GOOD, **change))
    assert all(w in str(info.value) for w in words), str(info.value)


def test_the_program_exits_2_naming_the_field(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(GOOD, routers="r1")))
    assert wk.main(["--config", str(path)]) == 2
    assert "routers: 'r1'" in capsys.readouterr().err
    path.write_text(json.dumps(dict(GOOD, password_file=str(tmp_path / "missing"))))
    assert wk.main(["--config", str(path)]) == 2
    assert "password_file" in capsys.readouterr().err


def test_the_role_installs_the_keeper_and_what_it_imports():
    paths = [e["path"].rsplit("/", 2)[-2:] for e in job_bundle.bundle(parts=("will_keeper",))]
    assert ["mqtt", "will_keeper.py"] in paths and ["standard", "entities.py"] in paths
    assert all(p[1] in ("__init__.py", "will_keeper.py", "entities.py") for p in paths), paths


# ------------------------------------------------------------ the handler, against an in-memory peer
#
# Two proton connections pumped against each other: ``client`` stands for the
# router's side of the routed will links, ``keeper``'s connection is the
# keeper's connection to the router. No container: the events of the keeper's
# connection are dispatched to the Keeper as the container would.

class Pair(object):
    def __init__(self, **cfg):
        proton = pytest.importorskip("proton")
        self.proton = proton
        self.now = [100.0]
        self.keeper = wk.Keeper(wk.check_config(dict(GOOD, router_tls=False, **cfg)), clock=lambda: self.now[0])
        self.cc, self.kc = proton.Connection(), proton.Connection()
        self.ct, self.kt = proton.Transport(), proton.Transport(proton.Transport.SERVER)
        self.ct.bind(self.cc)
        self.kt.bind(self.kc)
        self.events = proton.Collector()
        self.kc.collect(self.events)
        self.cc.open()
        self.kc.open()
        self.keeper.conn = self.kc
        self.ssn = self.cc.session()
        self.ssn.open()
        self.run()

    def run(self):
        for unused in range(20):
            moved = False
            for a, b in ((self.ct, self.kt), (self.kt, self.ct)):
                n = a.pending()
                if n > 0:
                    data = a.peek(n)
                    a.pop(len(data))
                    b.push(data)
                    moved = True
            while self.events.peek() is not None:
                self.events.peek().dispatch(self.keeper)
                self.events.pop()
            self.accept_incoming()
            if not moved:
                return

    def accept_incoming(self):
        """The router's side: open the keeper's senders, give them credit, keep what they send."""
        ssn = self.cc.session_head(self.proton.Endpoint.LOCAL_UNINIT)
        while ssn:
            ssn.open()
            ssn = ssn.next(self.proton.Endpoint.LOCAL_UNINIT)
        link = self.cc.link_head(self.proton.Endpoint.LOCAL_UNINIT)
        while link:
            nxt = link.next(self.proton.Endpoint.LOCAL_UNINIT)
            if link.is_receiver:
                link.target.address = link.remote_target.address
                link.open()
                link.flow(10)
            link = nxt

    def will_link(self, target, name=None):
        link = self.ssn.sender(name or target)
        link.target.address = target
        link.open()
        self.run()
        return link

    def send(self, link, body, **props):
        msg = self.proton.Message(body=body, **props)
        dlv = link.send(msg) if hasattr(link, "send") and link.credit else None
        self.run()
        return dlv

    def received(self):
        """(target, message) of every will the keeper sent."""
        out = []
        link = self.cc.link_head(0)
        while link:
            while link.is_receiver and link.current is not None and link.current.readable \
                    and not link.current.partial:
                dlv = link.current
                msg = self.proton.Message()
                msg.decode(link.recv(dlv.pending))
                dlv.update(dlv.ACCEPTED)
                dlv.settle()
                link.advance()
                out.append((link.remote_target.address, msg))
            link = link.next(0)
        self.run()
        return out

    def end(self, link, condition=None, closed=True):
        if condition:
            link.condition = self.proton.Condition(condition, "gone")
        if closed:
            link.close()
        else:
            link.detach()
        self.run()


def remote(link):
    from proton import Endpoint
    return "closed" if link.state & Endpoint.REMOTE_CLOSED else "active" if link.state & Endpoint.REMOTE_ACTIVE \
        else "none"


def test_what_is_no_will_link_of_the_space_is_refused_and_stays_refused():
    p = Pair(max_wills=1)
    other, theirs = p.will_link("s/orders"), p.will_link("t/$will/q1")
    assert remote(other) == remote(theirs) == "closed"
    assert other.remote_condition.name == "amqp:not-allowed"
    first, second = p.will_link("s/$will/a"), p.will_link("s/$will/b")
    assert remote(first) == "active" and remote(second) == "closed"
    assert second.remote_condition.name == "amqp:resource-limit-exceeded"
    # a receiver the router would route here (no linkRoute does): refused too, never opened
    rcv = p.ssn.receiver("pull")
    rcv.source.address = "s/$will/c"
    rcv.open()
    p.run()
    assert remote(rcv) == "closed"
    assert list(p.keeper.wills.values()) == [["s/a", None, 0]]


def test_a_client_lost_sends_its_last_will_once_without_its_user_id():
    p = Pair()
    link = p.will_link("s/$will/m/a")
    p.send(link, "first")
    p.send(link, "last", user_id=b"alice")
    assert p.received() == []
    p.end(link, wk.LOST)
    got = p.received()
    assert [(t, m.body, m.user_id) for t, m in got] == [("s/m/a", "last", b"")]
    assert p.received() == [] and p.keeper.held() == 0


def test_a_clean_end_forgets_the_will_and_an_end_with_an_error_sends_it():
    p = Pair()
    clean, detached, failed = p.will_link("s/$will/a"), p.will_link("s/$will/c"), p.will_link("s/$will/b")
    for link in (clean, detached, failed):
        p.send(link, "will of %s" % link.target.address)
    p.end(clean)
    p.end(detached, closed=False)  # a detach that does not close the link ends it here too
    p.end(failed, "amqp:internal-error")
    assert [(t, m.body) for t, m in p.received()] == [("s/b", "will of s/$will/b")]
    assert p.keeper.held() == 0


def test_a_will_over_the_size_limit_ends_its_link_and_is_not_kept():
    p = Pair(max_will_size=100)
    link = p.will_link("s/$will/a")
    p.send(link, "x" * 200)
    assert remote(link) == "closed" and link.remote_condition.name == "amqp:link:message-size-exceeded"
    assert p.keeper.held() == 0
    p.end(link, wk.LOST)
    assert p.received() == []


def test_a_lost_connection_clears_the_links_and_keeps_the_wills_on_their_way():
    p = Pair()
    held, gone = p.will_link("s/$will/a"), p.will_link("s/$will/b")
    p.send(held, "held")
    p.send(gone, "on its way")
    p.keeper.on_sendable = lambda event: None  # the router gives the keeper's sender no credit yet
    p.end(gone, wk.LOST)
    assert len(p.keeper.sending) == 1
    p.kt.close_tail()  # the router went away
    p.kt.close_head()
    p.run()
    assert p.keeper.conn is None and p.keeper.wills == {} and p.keeper.sending == {}
    assert [(a, m.body) for a, m, unused in p.keeper.pending] == [("s/b", "on its way")]


def test_ended_links_are_freed():
    p = Pair()
    for i in range(20):
        link = p.will_link("s/$will/a%d" % i)
        p.end(link)
    count, link = 0, p.kc.link_head(0)
    while link:
        count, link = count + 1, link.next(0)
    assert count == 0, count


def test_wills_of_a_lost_connection_are_sent_on_the_next_and_dropped_after_their_deadline():
    p = Pair()
    link = p.will_link("s/$will/a")
    p.send(link, "later")
    p.keeper.conn = None  # the keeper's connection is down when the client goes away
    p.end(link, wk.LOST)
    assert len(p.keeper.pending) == 1
    p.keeper.conn = p.kc  # a new connection opened
    p.keeper.on_connection_opened(None)
    p.run()
    assert [(t, m.body) for t, m in p.received()] == [("s/a", "later")]
    # a will nobody takes (no credit) is dropped after SEND_TIMEOUT
    p.keeper.conn = None
    p.keeper.pending.append(("s/b", p.proton.Message(body="stuck"), p.now[0] + wk.Keeper.SEND_TIMEOUT))
    p.now[0] += wk.Keeper.SEND_TIMEOUT + 1
    p.keeper.sweep()
    assert p.keeper.pending == [] and p.keeper.held() == 0


def delayed_will(p, link, body, delay):
    return p.send(link, body, annotations={"x-opt-mqtt-will-delay": delay})


def test_a_delayed_will_waits_its_delay_and_goes_out_without_the_annotation():
    p = Pair()
    link = p.will_link("s/$will/a", name="dev-1/a")
    delayed_will(p, link, "late", 30)
    p.end(link, wk.LOST)
    assert p.received() == [] and p.keeper.held() == 1
    p.now[0] += 29
    p.keeper.due()
    assert p.received() == []
    p.now[0] += 1
    p.keeper.due()
    p.run()
    got = p.received()
    assert [(t, m.body) for t, m in got] == [("s/a", "late")]
    assert wk.WILL_DELAY not in (got[0][1].annotations or {})
    assert p.keeper.held() == 0


def test_a_link_of_the_same_name_back_within_the_delay_cancels_the_will():
    p = Pair()
    link, other = p.will_link("s/$will/a", name="dev-1/a"), p.will_link("s/$will/b", name="dev-2/b")
    delayed_will(p, link, "not needed", 30)
    delayed_will(p, other, "needed", 30)
    p.end(link, wk.LOST)
    p.end(other, wk.LOST)
    # dev-1 is back (a new connection, the same link name and address); a link named dev-2/b to another
    # address, and a link of another name to b, cancel nothing
    back = p.will_link("s/$will/a", name="dev-1/a")
    p.will_link("s/$will/c", name="dev-2/b")
    p.will_link("s/$will/b", name="dev-3/b")
    assert remote(back) == "active"
    p.now[0] += 31
    p.keeper.due()
    p.run()
    assert [(t, m.body) for t, m in p.received()] == [("s/b", "needed")]
    # the returned client's link holds its new will as any other: a clean end forgets it
    p.send(back, "new")
    p.end(back)
    assert p.received() == []


def test_a_will_with_a_bad_delay_is_rejected_with_the_reason_and_the_last_will_stays():
    p = Pair(max_will_delay=60)
    link = p.will_link("s/$will/a")
    p.send(link, "good")
    dlv = delayed_will(p, link, "too late", 61)
    assert dlv.remote_state == dlv.REJECTED
    assert dlv.remote.condition.name == "amqp:invalid-field" and "max_will_delay" in dlv.remote.condition.description
    p.end(link, wk.LOST)
    assert [(t, m.body) for t, m in p.received()] == [("s/a", "good")]


def test_delayed_wills_count_against_max_wills():
    p = Pair(max_wills=1)
    link = p.will_link("s/$will/a", name="dev-1/a")
    delayed_will(p, link, "waiting", 30)
    p.end(link, wk.LOST)
    refused = p.will_link("s/$will/b")
    assert remote(refused) == "closed" and refused.remote_condition.name == "amqp:resource-limit-exceeded"
    # the client whose will waits comes back: its delayed will makes room for its link
    back = p.will_link("s/$will/a", name="dev-1/a")
    assert remote(back) == "active" and p.keeper.delayed == {}


def test_a_client_that_comes_and_goes_cannot_grow_the_keeper():
    """Attach, leave a will with a long delay, go away, come back (which
    cancels it), over and over: what the keeper holds stays bounded."""
    p = Pair(max_wills=10)
    for i in range(300):
        link = p.will_link("s/$will/a", name="dev-1/a")
        assert remote(link) == "active", i
        delayed_will(p, link, "will %d" % i, 86400)
        p.end(link, wk.LOST)
    assert len(p.keeper.delayed) == 1 and p.keeper.held() == 1
    assert len(p.keeper.due_heap) <= 2 * len(p.keeper.delayed) + 64, len(p.keeper.due_heap)
    p.now[0] += 86401
    p.keeper.due()
    p.run()
    assert [(t, m.body) for t, m in p.received()] == [("s/a", "will 299")]  # the last one, once
    assert p.keeper.held() == 0
