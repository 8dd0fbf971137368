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


def test_groups_are_the_auth_services_encoding_of_send_and_recv_on_the_prefix():
    groups = mq.groups("tenant-a")
    assert groups == ["recv_%24mqtt%2Ftenant-a%2F%2A", "send_%24mqtt%2Ftenant-a%2F%2A"]
    assert groups == backends.authorization_to_groups(
        [{"addresses": ["$mqtt/tenant-a/*"], "operations": ["send", "recv"]}])
    assert backends.groups_to_address_authz(groups) == {"$mqtt/tenant-a/*": ["recv", "send"]}


def test_the_router_entities_of_the_service():
    ents = mq.router_entities("s", {"port": 5710, "broker": "b2"}, {"host": "auth", "port": 5680,
                                                                    "ssl_profile": "auth-service"},
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
    assert group["sources"] == group["targets"] == "$mqtt/s/*"
    assert sorted((e["direction"], e["prefix"], e["connection"]) for n, e in ents.items() if "linkroute" in n) == [
        ("in", "$mqtt/s", "enmasse/broker/b2"), ("out", "$mqtt/s", "enmasse/broker/b2")]
    assert mq.router_entities("s", None, {"host": "a", "port": 1}) == {}
    # every name is the space's: removing the space removes them
    assert all(n.startswith("enmasse/s/") for n in ents)


def test_a_space_served_by_a_gateway_gets_the_service_and_keeps_its_port_and_broker(tmp_path):
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=GATEWAYS))
    ports = iter([5710, 5799])
    rec = mq.desired_record(s, "s", None, {"b1": 3, "b2": 1}, lambda: next(ports))
    assert rec == {"port": 5710, "broker": "b2"}  # the broker with fewer of the space's addresses
    # converged again: the same port and broker whatever the load now
    assert mq.desired_record(s, "s", rec, {"b1": 0, "b2": 9}, lambda: 1 / 0) == rec
    assert mq.desired_record(s, "other", None, {}, lambda: 1 / 0) is None  # not served: no service
    assert mq.place(s, "s", None, {}) == "b1"  # a tie: the first by name


def test_the_queue_leaves_a_draining_broker(tmp_path):
    brokers = json.loads(json.dumps(infra(tmp_path)["brokers"]))
    brokers[1]["state"] = "draining"
    s = svc.StandardService(infra(tmp_path, brokers=brokers, mqtt_gateways=GATEWAYS))
    assert mq.place(s, "s", "b2", {}) == "b1"


def test_broker_operations_are_idempotent_and_move_or_remove_the_queue():
    assert mq.broker_queue_requests(None, "s", "b1", "b1", {"b1": True}) == []
    create = mq.broker_queue_requests(None, "s", None, "b1", {"b1": False})
    assert [(b, op.split("(")[0]) for b, op, unused in create] == [("b1", "createAddress"), ("b1", "createQueue")]
    spec = json.loads(create[1][2][0])
    assert spec == {"name": "$mqtt/s/retained", "address": "$mqtt/s/retained", "routing-type": "ANYCAST",
                    "durable": True, "last-value-key": "mqtt_topic", "non-destructive": True}
    move = mq.broker_queue_requests(None, "s", "b1", "b2", {"b1": True, "b2": False})
    assert [(b, op.split("(")[0]) for b, op, unused in move] == [
        ("b1", "destroyQueue"), ("b1", "deleteAddress"), ("b2", "createAddress"), ("b2", "createQueue")]
    gone = mq.broker_queue_requests(None, "s", "b1", None, {"b1": True})
    assert [op.split("(")[0] for unused, op, unused2 in gone] == ["destroyQueue", "deleteAddress"]
    assert mq.describe(move) == {"b1": ["destroyQueue $mqtt/s/retained", "deleteAddress $mqtt/s/retained"],
                                 "b2": ["createAddress $mqtt/s/retained", "createQueue $mqtt/s/retained"]}


def test_the_status_names_what_is_missing(tmp_path):
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=GATEWAYS))
    rec = {"port": 5710, "broker": "b1"}
    names = mq.entity_names("s")
    live = {"r1": dict((n, {}) for n in names), "r2": dict((n, {}) for n in names[:3])}
    status = {"r1": {names[3]: {"operStatus": "active"}, names[4]: {"operStatus": "inactive"}}}
    st = mq.status(s, "s", rec, live, status, queue_present=False)
    assert st["ready"] is False
    assert st["messages"] == [
        "router 'r1': linkRoute enmasse/s/mqtt-linkroute/out is inactive",
        "router 'r2' lacks enmasse/s/mqtt-linkroute/in, enmasse/s/mqtt-linkroute/out",
        "broker 'b1' lacks the queue $mqtt/s/retained"]
    assert [(e["name"], e["port"]) for e in st["endpoints"]] == [("mqtt-service-r1", 5710), ("mqtt-service-r2", 5810)]
    assert mq.status(s, "s", None, live, status, True) is None


def test_space_level_entities_carry_the_service_only_when_recorded(tmp_path):
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=GATEWAYS))
    without = svc.space_level(s, "s", 5701, {"plan": "p"})
    with_mqtt = svc.space_level(s, "s", 5701, {"plan": "p", "mqtt_service": {"port": 5710, "broker": "b1"}})
    assert set(with_mqtt) - set(without) == set(mq.entity_names("s"))
    # routers sharing a host: the service listener moves with the router's port_offset too
    assert s.per_router(with_mqtt)["r2"]["enmasse/s/mqtt-service"]["port"] == "5810"


def test_the_service_port_is_no_other_spaces(tmp_path):
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as infra_mod
    inf = infra(tmp_path, port_range=[5700, 5799])
    led = infra_mod.load_ledger(inf, "other")
    led.space = {"plan": "p", "port": 5700, "mqtt_service": {"port": 5701, "broker": "b1"}}
    led.save()
    assert infra_mod.allocate_port(inf, "s") == 5702
    assert infra_mod.allocate_port(inf, "s", own=[5702]) == 5703


def test_kinds_read_the_linkroutes_only_with_the_service():
    assert mq.kinds(("vhost",), None) == ("vhost",)
    assert mq.kinds(("vhost",), {"port": 1}) == ("vhost", "linkRoute")
