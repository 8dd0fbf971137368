"""The MQTT service of a standard space (module_utils/standard/mqtt_service.py):
its names, the router entities the converge declares, the broker operations
(idempotent: nothing when the queue is where it should be) and the status.
The live path (real routers, broker, gateways) is
tests/integration/test_mqtt_retained.py."""
import json

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mqtt_service as mq
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as svc

from test_standard_model import infra

pytestmark = pytest.mark.unit

GATEWAYS = [{"host": "gw-1", "spaces": [{"name": "s", "tls_port": 8883}]}]


def test_names_of_a_space():
    assert mq.realm("tenant-a") == "tenant-a.mqtt"
    assert mq.SERVICE_USER == "mqtt-gateway"
    assert mq.retained_queue("tenant-a") == "$mqtt/tenant-a/retained"
    assert mq.prefix("tenant-a") == "$mqtt/tenant-a"
    assert mq.realm("a").endswith(backends.SERVICE_REALM_SUFFIX)  # the auth service reads it from users files


def test_groups_grant_every_address_so_that_the_vhost_lists_apply():
    # no address-authz from the auth service (auth/server.py EVERY_ADDRESS): qdrouterd 1.19 would
    # use it instead of the vhost's lists, and a users file cannot follow the space's addresses
    groups = mq.groups("tenant-a")
    assert groups == list(backends.ALL_ADDRESSES_GROUPS)
    assert backends.groups_to_address_authz(groups) == {"*": ["recv", "send"]}
    from ansible_collections.enmasse.messaging.plugins.module_utils.auth import server
    assert backends.groups_to_address_authz(groups) == server.EVERY_ADDRESS


def test_service_user_sends_to_the_spaces_declared_addresses_only():
    # the wills a gateway journaled before it died go out on the service connection after its restart
    # (gateway/mqtt/journal.go): send to S/X for the space's placed addresses; receive from $mqtt/S/* and
    # the multicast and topic addresses (the retained messages of AMQP clients), never a queue or anycast
    addresses = [{"address": "q1", "type": "queue"}, {"address": "t/a", "type": "topic"},
                 {"address": "sub1", "type": "subscription", "topic": "t/a"}, {"address": "a", "type": "anycast"},
                 {"address": "m", "type": "multicast"}]
    assert mq.service_targets("s", addresses) == ["$mqtt/s/*", "s/a", "s/m", "s/q1", "s/t/a"]
    assert mq.service_targets("s") == ["$mqtt/s/*"]
    ents = mq.router_entities("s", {"port": 5710, "broker": "b2"}, {"host": "auth", "port": 5680},
                              addresses=addresses)
    group = ents["enmasse/s/mqtt-vhost"]["groups"]["mqtt-gateway"]
    targets = group["targets"].split(",")
    assert targets == ["$mqtt/s/*", "s/a", "s/m", "s/q1", "s/t/a"]
    assert group["sources"] == "$mqtt/s/*,s/m,s/t/a"  # never q1 (a queue) or a (anycast): taken from consumers
    assert mq.service_sources("s") == ["$mqtt/s/*"]
    assert group["allowAnonymousSender"] is False and group["allowDynamicSource"] is False
    # nothing outside the space: every name is the space's (its prefix, or its retained names)
    assert all(t.startswith("s/") or t.startswith("$mqtt/s/") for t in targets)
    assert not any(t == "*" or t == "s/*" or t.startswith("other/") for t in targets)
    other = mq.router_entities("other", {"port": 5711, "broker": "b1"}, {"host": "auth", "port": 5680},
                               addresses=addresses)["enmasse/other/mqtt-vhost"]["groups"]["mqtt-gateway"]
    assert not set(other["targets"].split(",")) & set(targets)
    assert not set(other["sources"].split(",")) & set(group["sources"].split(","))


def test_the_converge_renders_the_service_targets_from_the_placed_addresses(tmp_path):
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=GATEWAYS))
    record = {"mqtt_service": {"port": 5710, "broker": "b1"}}
    desired = svc.space_level(s, "s", 5700, record, [{"address": "q1", "type": "queue"}])
    assert desired["enmasse/s/mqtt-vhost"]["groups"]["mqtt-gateway"]["targets"] == "$mqtt/s/*,s/q1"
    desired = svc.space_level(s, "s", 5700, record, [])  # q1 removed (or not placed): gone from the list
    assert desired["enmasse/s/mqtt-vhost"]["groups"]["mqtt-gateway"]["targets"] == "$mqtt/s/*"


def test_the_router_entities_of_the_service():
    record = {"port": 5710, "will_port": 5711, "broker": "b2"}
    ents = mq.router_entities("s", record, {"host": "auth", "port": 5680, "ssl_profile": "auth-service"},
                              bind_host="0.0.0.0", tls={"ssl_profile": "clients"})
    assert sorted(ents) == sorted(mq.entity_names("s"))
    lst = ents["enmasse/s/mqtt-service"]
    assert "multiTenant" not in lst  # the gateway names $mqtt/s/... itself
    assert (lst["policyVhost"], lst["saslPlugin"], lst["sslProfile"], lst["requireSsl"], lst["port"]) == (
        "s.mqtt", "enmasse/s/mqtt-auth", "clients", True, "5710")
    assert ents["enmasse/s/mqtt-auth"]["realm"] == "s.mqtt"
    assert ents["enmasse/s/mqtt-auth"]["sslProfile"] == "auth-service"
    vhost = ents["enmasse/s/mqtt-vhost"]
    assert vhost["hostname"] == "s.mqtt" and vhost["allowUnknownUser"] is False
    group = vhost["groups"]["mqtt-gateway"]
    assert group["sources"] == group["targets"] == "$mqtt/s/*"  # no address placed
    assert sorted((e["direction"], e["prefix"], e["connection"]) for n, e in ents.items() if "linkroute" in n) == [
        ("in", "$mqtt/s", "enmasse/broker/b2"), ("in", "s/$will", "enmasse/s/mqtt-will"),
        ("out", "$mqtt/s", "enmasse/broker/b2")]
    # the AMQP clients' wills: the keepers' listener, route-container, the same realm, vhost and TLS; the
    # linkRoute names it (a connection's label), so no other connection can pose as a keeper
    will = ents["enmasse/s/mqtt-will"]
    assert (will["role"], will["policyVhost"], will["saslPlugin"], will["saslMechanisms"], will["sslProfile"],
            will["requireSsl"], will["port"], will["authenticatePeer"]) == (
        "route-container", "s.mqtt-will", "enmasse/s/mqtt-auth", "PLAIN", "clients", True, "5711", True)
    assert "multiTenant" not in will
    # its own vhost: the keepers receive nothing and send only to the space's addresses; no vhost group of
    # the space lets a connection make its own link routes (they get no tenant prefix)
    kv = ents["enmasse/s/mqtt-will-vhost"]
    assert kv["hostname"] == "s.mqtt-will" and kv["allowUnknownUser"] is False
    kg = kv["groups"]["mqtt-gateway"]
    assert kg["sources"] == "" and kg["targets"] == "" and kg["allowDynamicLinkRoutes"] is False
    assert group["allowDynamicLinkRoutes"] is False and group["allowAdminStatusUpdate"] is False
    placed = mq.router_entities("s", record, {"host": "auth", "port": 5680}, addresses=[
        {"address": "q", "type": "queue"}, {"address": "n", "type": "subscription", "topic": "t"}])
    assert placed["enmasse/s/mqtt-will-vhost"]["groups"]["mqtt-gateway"]["targets"] == "s/q"
    # a record of before the wills (no will_port): no will entities until the converge records one
    older = mq.router_entities("s", {"port": 5710, "broker": "b2"}, {"host": "auth", "port": 5680})
    assert sorted(set(ents) - set(older)) == ["enmasse/s/mqtt-will", "enmasse/s/mqtt-will-linkroute",
                                              "enmasse/s/mqtt-will-vhost"]
    assert mq.router_entities("s", None, {"host": "a", "port": 1}) == {}
    # every name is the space's: removing the space removes them
    assert all(n.startswith("enmasse/s/") for n in ents)


def test_a_space_served_by_a_gateway_gets_the_service_and_keeps_its_port_and_broker(tmp_path):
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=GATEWAYS))
    calls = []

    def allocate(*taken):
        calls.append(taken)
        return 5710 + len(calls) - 1
    rec = mq.desired_record(s, "s", None, {"b1": 3, "b2": 1}, allocate)
    # the broker with fewer of the space's addresses; the will port is not the service port
    assert rec == {"port": 5710, "will_port": 5711, "broker": "b2"}
    assert calls == [(), (5710,)]
    # converged again: the same ports and broker whatever the load now
    assert mq.desired_record(s, "s", rec, {"b1": 0, "b2": 9}, lambda *a: 1 / 0) == rec
    # a record of before the wills gets its will port, the service keeps its own
    assert mq.desired_record(s, "s", {"port": 5720, "broker": "b2"}, {}, lambda *a: 5721) == dict(
        rec, port=5720, will_port=5721)
    assert mq.desired_record(s, "other", None, {}, lambda *a: 1 / 0) is None  # not served: no service
    assert mq.place(s, "s", None, {}) == "b1"  # a tie: the first by name


def test_the_queue_leaves_a_draining_broker(tmp_path):
    brokers = json.loads(json.dumps(infra(tmp_path)["brokers"]))
    brokers[1]["state"] = "draining"
    s = svc.StandardService(infra(tmp_path, brokers=brokers, mqtt_gateways=GATEWAYS))
    assert mq.place(s, "s", "b2", {}) == "b1"


def test_broker_operations_are_idempotent_and_move_or_remove_the_queue():
    assert mq.broker_queue_requests(None, "s", "b1", "b1", {"b1": True}) == []
    create = mq.broker_queue_requests(None, "s", None, "b1", {"b1": False})
    assert [(b, op.split("(", 1)[0]) for b, op, unused in create] == [("b1", "createAddress"), ("b1", "createQueue")]
    spec = json.loads(create[1][2][0])
    assert spec == {"name": "$mqtt/s/retained", "address": "$mqtt/s/retained", "routing-type": "ANYCAST",
                    "durable": True, "last-value-key": "mqtt_topic", "non-destructive": True}
    gone = mq.broker_queue_requests(None, "s", "b1", None, {"b1": True})
    assert [op.split("(", 1)[0] for unused, op, unused2 in gone] == ["destroyQueue", "deleteAddress"]


Q = "$mqtt/s/retained"
SPARE = "$mqtt/s/retained-rebuild"
RIGHT = {"routing-type": "ANYCAST", "durable": True, "last-value-key": "mqtt_topic", "non-destructive": True}


def ops(requests):
    return [(b, op.split("(", 1)[0], args[0] if op == mq.MOVE or not args[0].startswith("{") else json.loads(args[0])["name"])
            + (tuple(args[1:]) if op == mq.MOVE else ()) for b, op, args in requests]


def test_a_drain_copies_the_values_to_the_new_broker_before_the_old_queue_goes():
    move = mq.broker_queue_requests(None, "s", "b1", "b2", {"b1": dict(RIGHT), "b2": None})
    assert ops(move) == [("b2", "createAddress", Q), ("b2", "createQueue", Q), ("b1", "move", Q, "b2", Q),
                         ("b1", "destroyQueue", Q), ("b1", "deleteAddress", Q)]
    assert mq.describe(move) == {"b1": ["move %s to b2:%s" % (Q, Q), "destroyQueue " + Q, "deleteAddress " + Q],
                                 "b2": ["createAddress " + Q, "createQueue " + Q]}
    # interrupted after the copy, before the destroy: the new queue is there, the copy is made again (last value
    # per topic: it replaces, never duplicates), then the old queue goes
    again = mq.broker_queue_requests(None, "s", "b1", "b2", {"b1": dict(RIGHT), "b2": dict(RIGHT)})
    assert ops(again) == [("b1", "move", Q, "b2", Q), ("b1", "destroyQueue", Q), ("b1", "deleteAddress", Q)]
    # finished: nothing
    assert mq.broker_queue_requests(None, "s", "b1", "b2", {"b1": None, "b2": dict(RIGHT)}) == []


def test_the_settings_are_read_from_the_queues_configuration():
    # what Artemis 2.40's updateQueue returned for the queue made from queue_spec (its "last-value" is the
    # legacy flag: false with a key)
    config = {"id": 9, "name": "$mqtt/s/retained", "routing-type": "ANYCAST", "durable": True, "last-value": False,
              "last-value-key": "mqtt_topic", "non-destructive": True, "max-consumers": -1}
    live = mq.live_settings(config)
    assert live == RIGHT and mq.settings_diff("s", live) == {}
    plain = mq.live_settings({"routing-type": "MULTICAST", "durable": False, "non-destructive": False})
    assert mq.settings_diff("s", plain) == {"durable": (False, True), "last-value-key": (None, "mqtt_topic"),
                                            "non-destructive": (False, True),
                                            "routing-type": ("MULTICAST", "ANYCAST")}


def test_a_setting_updatequeue_changes_is_updated_in_place():
    wrong = dict(RIGHT, **{"non-destructive": False})
    req = mq.broker_queue_requests(None, "s", "b1", "b1", {"b1": wrong})
    assert ops(req) == [("b1", "updateQueue", Q)]
    assert json.loads(req[0][2][0]) == dict(RIGHT, name=Q, address=Q)


@pytest.mark.parametrize("setting,value", [("last-value-key", None), ("last-value-key", "other"),
                                           ("durable", False), ("routing-type", "MULTICAST")])
def test_other_settings_make_the_queue_anew_through_the_rebuild_queue(setting, value):
    wrong = dict(RIGHT, **{setting: value})
    req = mq.broker_queue_requests(None, "s", "b1", "b1", {"b1": wrong}, {"b1": False})
    assert ops(req) == [("b1", "createAddress", SPARE), ("b1", "createQueue", SPARE), ("b1", "move", Q, "b1", SPARE),
                        ("b1", "destroyQueue", Q), ("b1", "deleteAddress", Q), ("b1", "createAddress", Q),
                        ("b1", "createQueue", Q), ("b1", "move", SPARE, "b1", Q), ("b1", "destroyQueue", SPARE),
                        ("b1", "deleteAddress", SPARE)]
    assert json.loads(req[1][2][0]) == dict(RIGHT, name=SPARE, address=SPARE)  # a last-value queue too
    assert json.loads(req[6][2][0]) == dict(RIGHT, name=Q, address=Q)


def test_an_interrupted_rebuild_is_finished_by_the_next_run():
    wrong = dict(RIGHT, durable=False)
    # after the copy to the rebuild queue, before the destroy: copied again (replaces), then as before
    assert ops(mq.broker_queue_requests(None, "s", "b1", "b1", {"b1": wrong}, {"b1": True}))[:3] == [
        ("b1", "move", Q, "b1", SPARE), ("b1", "destroyQueue", Q), ("b1", "deleteAddress", Q)]
    # after the destroy: the queue is made, the values come back, the rebuild queue goes
    assert ops(mq.broker_queue_requests(None, "s", "b1", "b1", {"b1": None}, {"b1": True})) == [
        ("b1", "createAddress", Q), ("b1", "createQueue", Q), ("b1", "move", SPARE, "b1", Q),
        ("b1", "destroyQueue", SPARE), ("b1", "deleteAddress", SPARE)]
    # after the queue was made: the values come back
    assert ops(mq.broker_queue_requests(None, "s", "b1", "b1", {"b1": dict(RIGHT)}, {"b1": True})) == [
        ("b1", "move", SPARE, "b1", Q), ("b1", "destroyQueue", SPARE), ("b1", "deleteAddress", SPARE)]
    # a rebuild left on a broker being drained: its values go to the new broker too
    assert ops(mq.broker_queue_requests(None, "s", "b1", "b2", {"b1": None, "b2": dict(RIGHT)},
                                        {"b1": True, "b2": False})) == [
        ("b1", "move", SPARE, "b2", Q), ("b1", "destroyQueue", SPARE), ("b1", "deleteAddress", SPARE)]
    # removal: nothing is copied
    assert ops(mq.broker_queue_requests(None, "s", "b1", None, {"b1": dict(RIGHT)}, {"b1": True})) == [
        ("b1", "destroyQueue", Q), ("b1", "deleteAddress", Q), ("b1", "destroyQueue", SPARE),
        ("b1", "deleteAddress", SPARE)]


def test_applying_stops_at_the_first_error_so_no_queue_goes_before_its_values_moved(monkeypatch):
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mover
    done = []

    def copy(service, broker, queue, to, to_queue, timeout, idle):
        done.append(("move", broker, queue, to, to_queue))
        raise RuntimeError("the new broker did not accept")

    class J(object):
        def read(self, pattern, attrs):
            return {pattern: {"MessageCount": 7}}

        def execute(self, mbean, op, *args):
            done.append((op.split("(", 1)[0], mq.retained_queue_name(args)))

    class S(object):
        infra = {"timeout": 5}
        brokers = {"b1": {"broker_name": "b1"}, "b2": {"broker_name": "b2"}}

        def jolokia(self, b):
            return J()
    monkeypatch.setattr(mover, "copy_queue", copy)
    errors = mq.apply_broker_requests(S(), mq.broker_queue_requests(None, "s", "b1", "b2", {"b1": RIGHT, "b2": None}))
    assert errors == ["broker 'b1': move: the new broker did not accept"]
    assert done == [("createAddress", Q), ("createQueue", Q), ("move", "b1", Q, "b2", Q)]  # b1's queue stays


def test_the_status_names_what_is_missing(tmp_path):
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=GATEWAYS))
    rec = {"port": 5710, "will_port": 5711, "broker": "b1"}
    names = mq.entity_names("s")
    live = {"r1": dict((n, {}) for n in names), "r2": dict((n, {}) for n in names[:3])}
    # the will linkRoute is inactive while no keeper is connected: that is no fault of the service
    status = {"r1": {names[3]: {"operStatus": "active"}, names[4]: {"operStatus": "inactive"},
                     "enmasse/s/mqtt-will-linkroute": {"operStatus": "inactive"}}}
    st = mq.status(s, "s", rec, live, status, queue_present=False)
    assert st["ready"] is False
    assert st["messages"] == [
        "router 'r1': linkRoute enmasse/s/mqtt-linkroute/out is inactive",
        "router 'r2' lacks enmasse/s/mqtt-linkroute/in, enmasse/s/mqtt-linkroute/out, enmasse/s/mqtt-will-vhost, "
        "enmasse/s/mqtt-will, enmasse/s/mqtt-will-linkroute",
        "broker 'b1' lacks the queue $mqtt/s/retained"]
    assert [(e["name"], e["port"]) for e in st["endpoints"]] == [("mqtt-service-r1", 5710), ("mqtt-service-r2", 5810)]
    assert [(e["name"], e["port"]) for e in st["will_endpoints"]] == [("mqtt-will-r1", 5711), ("mqtt-will-r2", 5811)]
    assert mq.status(s, "s", None, live, status, True) is None
    full = dict((r, dict((n, {}) for n in names)) for r in ("r1", "r2"))
    wrong = mq.status(s, "s", rec, full, {}, dict(RIGHT, durable=False))
    assert wrong["ready"] is False and wrong["messages"] == [
        "broker 'b1': queue $mqtt/s/retained has durable False, not True"]
    assert mq.status(s, "s", rec, full, {}, dict(RIGHT))["ready"] is True


def test_space_level_entities_carry_the_service_only_when_recorded(tmp_path):
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=GATEWAYS))
    without = svc.space_level(s, "s", 5701, {"plan": "p"})
    service = {"port": 5710, "will_port": 5711, "broker": "b1"}
    with_mqtt = svc.space_level(s, "s", 5701, {"plan": "p", "mqtt_service": service})
    assert set(with_mqtt) - set(without) == set(mq.entity_names("s"))
    # routers sharing a host: the service and will listeners move with the router's port_offset too
    assert s.per_router(with_mqtt)["r2"]["enmasse/s/mqtt-service"]["port"] == "5810"
    assert s.per_router(with_mqtt)["r2"]["enmasse/s/mqtt-will"]["port"] == "5811"


def test_the_service_port_is_no_other_spaces(tmp_path):
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as infra_mod
    inf = infra(tmp_path, port_range=[5700, 5799])
    led = infra_mod.load_ledger(inf, "other")
    led.space = {"plan": "p", "port": 5700, "mqtt_service": {"port": 5701, "will_port": 5702, "broker": "b1"}}
    led.save()
    assert infra_mod.allocate_port(inf, "s") == 5703
    assert infra_mod.allocate_port(inf, "s", own=[5703]) == 5704


def test_kinds_read_the_linkroutes_only_with_the_service():
    assert mq.kinds(("vhost",), None) == ("vhost",)
    assert mq.kinds(("vhost",), {"port": 1}) == ("vhost", "linkRoute")


def test_a_copy_that_got_fewer_messages_than_the_queue_counted_destroys_nothing(monkeypatch):
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mover
    done = []

    class J(object):
        def read(self, pattern, attrs):
            assert attrs == ["MessageCount"] and 'queue="$mqtt/s/retained"' in pattern
            return {pattern: {"MessageCount": 3}}

        def execute(self, mbean, op, *args):
            done.append(op.split("(", 1)[0])

    class S(object):
        infra = {}
        brokers = {"b1": {"broker_name": "b1"}, "b2": {"broker_name": "b2"}}

        def jolokia(self, b):
            return J()
    requests = mq.broker_queue_requests(None, "s", "b1", "b2", {"b1": RIGHT, "b2": RIGHT})
    monkeypatch.setattr(mover, "copy_queue", lambda *a, **kw: 2)
    assert mq.apply_broker_requests(S(), requests) == [
        "broker 'b1': move: copied 2 of the 3 messages of $mqtt/s/retained to b2:$mqtt/s/retained"]
    assert done == []
    monkeypatch.setattr(mover, "copy_queue", lambda *a, **kw: 3)
    assert mq.apply_broker_requests(S(), requests) == [] and done == ["destroyQueue", "deleteAddress"]
