"""The pass/fail rules of molecule/router's verify (molecule/router/checks.py):
each one passes on the healthy case and fails when its property is broken
(a mesh missing a link, a receiver missing a multicast message, a space
receiving another space's message, an entity the keeper did not restore).
The Molecule scenario runs the same functions against the real routers."""
import importlib.util
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("molecule_router_checks",
                                               os.path.join(REPO, "molecule", "router", "checks.py"))
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

R1, R2, R3 = "enmasse-router-1", "enmasse-router-2", "enmasse-router-3"


def _self(rid, peers):
    return {"id": rid, "nextHop": "(self)", "linkState": peers}


def _direct(rid, link):
    return {"id": rid, "routerLink": link, "nextHop": None, "cost": 1}


def _via(rid, hop):
    return {"id": rid, "nextHop": hop, "cost": 2}


def _conn(peer, role="inter-router", opened=True):
    return {"role": role, "container": peer, "opened": opened, "host": "10.0.0.1:55672"}


# ------------------------------------------------------------------ mesh
def test_mesh_full():
    nodes = [_self(R3, [R1, R2]), _direct(R1, 0), _direct(R2, 1)]
    conns = [_conn(R1), _conn(R2), _conn("client", role="normal")]
    assert checks.mesh_problems(R3, [R1, R2], nodes, conns) == []


def test_mesh_missing_link_fails_even_though_all_three_nodes_are_known():
    # router 1 is still known (via router 2): counting nodes would pass
    nodes = [_self(R3, [R2]), _via(R1, R2), _direct(R2, 1)]
    conns = [_conn(R2)]
    problems = checks.mesh_problems(R3, [R1, R2], nodes, conns)
    assert len(nodes) == 3
    assert problems == [
        "enmasse-router-3: enmasse-router-1 is not a direct neighbour (known: True, nextHop: enmasse-router-2)",
        "enmasse-router-3: 0 open inter-router connections to enmasse-router-1, want 1",
    ]


def test_mesh_connection_not_open_or_doubled_or_foreign_fails():
    nodes = [_self(R3, [R1, R2]), _direct(R1, 0), _direct(R2, 1)]
    assert checks.mesh_problems(R3, [R1, R2], nodes, [_conn(R1), _conn(R2, opened=False)]) == [
        "enmasse-router-3: 0 open inter-router connections to enmasse-router-2, want 1"]
    assert checks.mesh_problems(R3, [R1, R2], nodes, [_conn(R1), _conn(R2), _conn(R2)]) == [
        "enmasse-router-3: 2 open inter-router connections to enmasse-router-2, want 1"]
    assert checks.mesh_problems(R3, [R1, R2], nodes + [_direct("stranger", 2)],
                                [_conn(R1), _conn(R2), _conn("stranger")]) == [
        "enmasse-router-3: unexpected inter-router neighbour stranger"]


# ----------------------------------------------------------------- route
def test_route_via_the_third_router():
    assert checks.route_problems(R3, R1, R2, [_self(R3, [R2]), _via(R1, R2), _direct(R2, 1)]) == []


def test_route_fails_when_the_link_was_not_cut_or_the_target_is_gone():
    assert checks.route_problems(R3, R1, R2, [_self(R3, [R1, R2]), _direct(R1, 0), _direct(R2, 1)]) == [
        "enmasse-router-3: enmasse-router-1 is still a direct neighbour (the link was not cut)",
        "enmasse-router-3: enmasse-router-1 is reached via None, want enmasse-router-2"]
    assert checks.route_problems(R3, R1, R2, [_self(R3, [R2]), _direct(R2, 1)]) == [
        "enmasse-router-3: enmasse-router-1 is unreachable"]


# ------------------------------------------------------------- multicast
SENT = ["mc-%d" % i for i in range(20)]


def test_multicast_every_receiver_every_message():
    received = {"receiver 0": list(SENT), "receiver 1": list(reversed(SENT)), "receiver 2": list(SENT)}
    assert checks.delivery_problems(SENT, received) == []
    assert checks.duplicates(received) == {"receiver 0": 0, "receiver 1": 0, "receiver 2": 0}


def test_multicast_one_receiver_missing_one_message_fails():
    # the old check passed here: one message (mc-0) reached all three receivers
    received = {"receiver 0": list(SENT), "receiver 1": SENT[:7] + SENT[8:], "receiver 2": list(SENT)}
    assert checks.delivery_problems(SENT, received) == ["receiver 1 missed 1 of 20: ['mc-7']"]


def test_multicast_stray_or_nothing_sent_fails():
    assert checks.delivery_problems(SENT, {"receiver 0": SENT + ["other"]}) == [
        "receiver 0 got messages nobody sent: ['other']"]
    assert checks.delivery_problems([], {"receiver 0": []}) == ["nothing was sent"]


def test_multicast_duplicates_are_counted():
    received = {"receiver 0": SENT + SENT[:3], "receiver 1": SENT}
    assert checks.duplicates(received) == {"receiver 0": 3, "receiver 1": 0}
    assert checks.delivery_problems(SENT, {"receiver 0": SENT + SENT}) == []


# ------------------------------------------------------------- isolation
def test_isolation_each_space_its_own():
    bodies = {"tenant-a": ["tenant-a-news-%d" % i for i in range(5)],
              "tenant-b": ["tenant-b-news-%d" % i for i in range(6)]}
    assert checks.isolation_problems(bodies, 5) == []


def test_isolation_a_message_of_the_other_space_fails():
    bodies = {"tenant-a": ["tenant-a-orders-%d" % i for i in range(5)] + ["tenant-b-orders-2"],
              "tenant-b": ["tenant-b-orders-%d" % i for i in range(5)]}
    assert checks.isolation_problems(bodies, 5) == [
        "tenant-a received another space's messages: ['tenant-b-orders-2']"]


def test_isolation_too_few_own_messages_fails():
    # a receiver that got nothing proves nothing: the space's own traffic must flow
    bodies = {"tenant-a": [], "tenant-b": ["tenant-b-dlq-%d" % i for i in range(5)]}
    assert checks.isolation_problems(bodies, 5) == ["tenant-a received 0 of its own messages, want at least 5"]


# ---------------------------------------------------------------- keeper
def test_missing_entities():
    before = [["address", "enmasse/tenant-a/orders"], ["listener", "enmasse/tenant-a/amqp"], ["vhost", "tenant-a"]]
    assert checks.missing_entities(before, before + [["listener", "management"]]) == []
    assert checks.missing_entities(before, before[1:]) == [("address", "enmasse/tenant-a/orders")]


# ------------------------------------------------------------- rolling upgrade
def _rolling(accepted, received, pgap=1.5, cgap=2.0):
    return {"queues": {"crash": {"accepted": accepted, "received": received, "producer_reconnects": 1,
                                 "consumer_reconnects": 2, "producer_longest_gap": pgap,
                                 "consumer_longest_gap": cgap}}}


def test_rolling_nothing_lost_reports_the_gaps():
    ids = ["crash-%d" % i for i in range(20)]
    problems, report = checks.rolling_problems(_rolling(ids, ids + ids[:2]), 60)
    assert problems == []
    assert report == ["GAP queue=crash producer longest=1.50 s (reconnects 1) consumer longest=2.00 s "
                      "(reconnects 2); accepted 20, received 20, lost 0, duplicates 2"]


def test_rolling_a_lost_message_fails():
    ids = ["crash-%d" % i for i in range(20)]
    problems = checks.rolling_problems(_rolling(ids, ids[:7] + ids[8:]), 60)[0]
    assert problems == ["crash lost 1 accepted messages: ['crash-7']"]


def test_rolling_too_few_accepted_or_a_gap_above_the_bound_fails():
    ids = ["crash-%d" % i for i in range(3)]
    problems = checks.rolling_problems(_rolling(ids, ids, pgap=75.0), 60)[0]
    assert problems == ["crash: only 3 messages accepted (want at least 10)",
                        "crash: the producer's longest gap 75.00 s is above the bound 60 s"]
    assert checks.rolling_problems({"queues": {}}, 60)[0] == ["no queue was exercised"]
