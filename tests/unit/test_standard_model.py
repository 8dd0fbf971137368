"""The standard space's mapping and rules (module_utils/standard), without routers or brokers."""
import json

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as ent
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as infra_mod
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as svc

BROKERS = [{"name": "b1", "host": "h1", "amqp_port": 5672, "user": "u", "password_file": "/etc/q/brokers/b1-x.password",
            "management_url": "http://h1:8161/console/jolokia", "management_user": "m",
            "management_password": "mp", "broker_name": "b1"},
           dict(name="b2", host="h2", amqp_port=5672, user="u", password_file="/etc/q/brokers/b2-x.password",
                management_url="http://h2:8161/console/jolokia", management_user="m", management_password="mp",
                broker_name="b2")]


def infra(tmp_path, **extra):
    data = {"management_url": "amqp://127.0.0.1:5672", "routers": [{"id": "r1"}, {"id": "r2", "port_offset": 100}],
            "brokers": BROKERS, "auth_service": {"host": "auth", "port": 5680}, "ledger_dir": str(tmp_path / "l")}
    data.update(extra)
    path = tmp_path / "standard.json"
    path.write_text(json.dumps(data))
    return infra_mod.load_infra(str(path))


def test_each_type_maps_to_its_router_entities():
    q = ent.address_entities("s", {"address": "orders", "type": "queue"}, ["b1", "b2"])
    assert q["enmasse/s/address/orders"] == {"type": "address", "prefix": "s/orders", "distribution": "balanced",
                                             "waypoint": True}
    assert sorted(n for n in q if "autolink" in n) == [
        "enmasse/s/autolink/b1/in/orders", "enmasse/s/autolink/b1/out/orders",
        "enmasse/s/autolink/b2/in/orders", "enmasse/s/autolink/b2/out/orders"]
    assert q["enmasse/s/autolink/b2/in/orders"]["connection"] == "enmasse/broker/b2"
    a = ent.address_entities("s", {"address": "a", "type": "anycast"})
    assert list(a.values()) == [{"type": "address", "prefix": "s/a", "distribution": "balanced"}]
    m = ent.address_entities("s", {"address": "m", "type": "multicast"})
    assert list(m.values())[0]["distribution"] == "multicast"
    t = ent.address_entities("s", {"address": "news", "type": "topic"}, ["b2"])
    assert sorted((e["direction"], e["prefix"], e["connection"]) for e in t.values()) == [
        ("in", "s/news", "enmasse/broker/b2"), ("out", "s/news", "enmasse/broker/b2")]
    sub = ent.address_entities("s", {"address": "audit", "type": "subscription", "topic": "news"}, ["b2"], (), ["b2"])
    assert len(sub) == 1
    e = list(sub.values())[0]
    assert e["prefix"] == "s/news::audit" and e["direction"] == "out"
    # the broker's queue is s/audit: the router rewrites s/news::audit to s/news::s/audit
    assert e["addExternalPrefix"] + "audit"[len(""):] == "s/news::s/audit"
    assert "s/news::audit"[len(e["delExternalPrefix"]):] == "audit"


def test_a_draining_broker_keeps_only_its_incoming_link():
    q = ent.address_entities("s", {"address": "q", "type": "queue"}, ["b1"], ["b2"])
    assert "enmasse/s/autolink/b2/in/q" in q and "enmasse/s/autolink/b2/out/q" not in q


def test_space_listener_is_pinned_to_its_vhost_and_relays_sasl():
    e = ent.space_entities("s", 5701, {"host": "auth", "port": 5680})
    lst = e["enmasse/s/amqp"]
    assert lst["multiTenant"] is True and lst["policyVhost"] == "s" and lst["saslPlugin"] == "enmasse/s/auth"
    assert lst["saslMechanisms"] == "PLAIN" and lst["authenticatePeer"] is True
    assert e["enmasse/s/auth"]["realm"] == "s"
    anon = ent.space_entities("s", 5701, {"host": "auth", "port": 5680}, anonymous=True)
    assert "enmasse/s/auth" not in anon and anon["enmasse/s/amqp"]["authenticatePeer"] is False


def test_broker_side_names_carry_the_space():
    b = ent.broker_address("s", {"address": "q", "type": "queue", "deadletter": "dlq", "expiry": "exp"})
    assert (b["address"], b["deadletter"], b["expiry"]) == ("s/q", "s/dlq", "s/exp")


def test_connectors_name_the_password_file_never_the_password():
    c = ent.connector_entities(BROKERS)
    assert c["enmasse/broker/b1"]["saslPassword"] == "file:/etc/q/brokers/b1-x.password"
    assert c["enmasse/broker/b1"]["saslUsername"] == "u"


def test_infra_refuses_a_literal_connector_password(tmp_path):
    """qdrouterd returns a literal saslPassword on every QUERY: the infrastructure
    file may only name a file on the router hosts."""
    literal = [dict(BROKERS[0], password="secret"), dict(BROKERS[1], password_file="relative/b2")]
    with pytest.raises(ConfigError) as e:
        infra(tmp_path, brokers=literal)
    text = " ".join(e.value.errors)
    assert "brokers[0] (b1): password: a literal password would be returned in clear" in text, text
    assert "brokers[1] (b2): password_file: 'relative/b2' must be an absolute path" in text, text
    assert "secret" not in text.replace("secret attribute", "")


def test_link_capacity_goes_on_the_space_listener_and_the_broker_connectors(tmp_path):
    """The infrastructure file's link_capacity (the standard role's
    standard_link_capacity) is the linkCapacity of what the modules create;
    unset, the attribute is left out (the router's default, 250)."""
    inf = infra(tmp_path, link_capacity=1000)
    assert inf["link_capacity"] == 1000
    desired = svc.space_level(type("S", (), {"infra": inf, "router_ids": ["r1"]})(), "s", 5701)
    assert desired["enmasse/s/amqp"]["linkCapacity"] == 1000
    assert [desired[n]["linkCapacity"] for n in ("enmasse/broker/b1", "enmasse/broker/b2")] == [1000, 1000]
    assert "linkCapacity" not in ent.connector_entities(BROKERS)["enmasse/broker/b1"]
    assert "linkCapacity" not in ent.space_entities("s", 5701, {"host": "a", "port": 1})["enmasse/s/amqp"]
    for bad in (0, "1000", True):
        with pytest.raises(ConfigError) as e:
            infra(tmp_path, link_capacity=bad)
        assert "link_capacity: %r must be a whole number >= 1" % (bad,) in " ".join(e.value.errors)


def test_entity_names_lead_back_to_their_address():
    for name, addr in (("enmasse/s/address/a/b", "a/b"), ("enmasse/s/autolink/b1/in/x/y", "x/y"),
                       ("enmasse/s/linkroute/out/news", "news"), ("enmasse/s/linkroute/out/news::audit", "audit"),
                       ("enmasse/s/amqp", None), ("enmasse/t/address/a", None)):
        assert ent.address_of_entity("s", name) == addr, name


def test_infra_file_errors_name_the_key(tmp_path):
    p = tmp_path / "standard.json"
    p.write_text(json.dumps({"routers": [{}], "brokers": [{"name": "b1"}]}))
    with pytest.raises(ConfigError) as e:
        infra_mod.load_infra(str(p))
    text = " ".join(e.value.errors)
    assert "management_url" in text and "routers[0] needs an id" in text and "brokers[0] lacks host" in text
    with pytest.raises(ConfigError) as e:
        infra_mod.load_infra(str(tmp_path / "missing.json"))
    assert "does not exist" in str(e.value)


def test_secrets_of_the_infrastructure(tmp_path):
    assert set(infra_mod.infra_secrets(infra(tmp_path))) == {"mp"}


def test_listener_ports_per_router_and_ports_allocated_once(tmp_path):
    inf = infra(tmp_path, port_range=[6000, 6001])
    s = svc.StandardService(inf)
    per = s.per_router(ent.space_entities("s", 6000, inf["auth_service"]))
    assert per["r1"]["enmasse/s/amqp"]["port"] == "6000" and per["r2"]["enmasse/s/amqp"]["port"] == "6100"
    assert [e["port"] for e in svc.endpoints(s, 6000)] == [6000, 6100]
    led = infra_mod.load_ledger(inf, "a")
    led.space = {"name": "a", "port": infra_mod.allocate_port(inf, "a")}
    led.save()
    assert led.space["port"] == 6000 and infra_mod.allocate_port(inf, "b") == 6001
    led2 = infra_mod.load_ledger(inf, "b")
    led2.space = {"name": "b", "port": 6001}
    led2.save()
    with pytest.raises(ConfigError) as e:
        infra_mod.allocate_port(inf, "c")
    assert "6000-6001" in str(e.value)


def test_placement_stable_pending_and_released(tmp_path):
    inf = infra(tmp_path)
    s = svc.StandardService(inf)
    cat = Catalogue.default()
    splan = cat.address_space_plan("standard-small")
    led = infra_mod.load_ledger(inf, "s")
    addrs = [{"address": "q%d" % i, "type": "queue", "plan": "standard-small-queue"} for i in range(3)] + \
        [{"address": "dlq", "type": "deadletter", "plan": "standard-deadletter"}]
    homes, draining, pending, released = svc.placement_for(s, "s", splan, addrs, cat, led, {})
    assert homes["q0"] == ["b1"] and homes["dlq"] == ["b1", "b2"] and not pending and not draining
    # over the plan's broker limit: Pending with the reason, never an error
    big = [{"address": "x%d" % i, "type": "queue", "plan": "standard-large-queue"} for i in range(3)]
    homes, draining, pending, released = svc.placement_for(s, "s", splan, addrs + big, cat, led, {})
    assert any("quota exceeded" in r for r in pending.values()), pending
    # an address with a home keeps it; a plan change leaves the old broker draining while it holds messages
    led.addresses = {"q0": dict(addrs[0], plan="standard-medium-queue")}
    led.homes = {"q0": {"brokers": ["b2"], "draining": [], "placed": True}}
    live = {"b2": {"s/q0": {"message_count": 4}}}
    homes, draining, pending, released = svc.placement_for(s, "s", cat.address_space_plan("standard-unlimited"),
                                                           addrs[:1], cat, led, live)
    # placed anew by the new plan (first fit: b1); b2, which holds 4 messages, drains, nothing released
    assert homes["q0"] == ["b1"] and draining == {"q0": ["b2"]} and released == [] and not pending
    led.homes = {"q0": {"brokers": ["b1"], "draining": ["b2"], "placed": True}}
    led.addresses = {"q0": addrs[0]}
    homes, draining, pending, released = svc.placement_for(s, "s", cat.address_space_plan("standard-unlimited"),
                                                           addrs[:1], cat, led, {"b2": {"s/q0": {"message_count": 0}}})
    assert homes["q0"] == ["b1"] and "q0" not in draining and released == [("q0", "b2")]


def test_a_subscription_has_no_settings_of_its_own_in_a_standard_space(tmp_path):
    # its queue S/N is on its topic's address S/T: Artemis applies address
    # settings per address, so they would be silently ignored (the brokered rule)
    from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
    inf = infra(tmp_path)
    cat = Catalogue.default()
    led = infra_mod.load_ledger(inf, "s")
    space = {"name": "s", "type": "standard", "plan": "standard-unlimited"}
    base = [{"address": "dlq", "type": "deadletter", "plan": "standard-deadletter"},
            {"address": "t", "type": "topic", "plan": "standard-small-topic", "deadletter": "dlq",
             "message_redelivery": {"maximum_delivery_attempts": 2}}]
    sub = {"address": "s1", "type": "subscription", "plan": "standard-small-subscription", "topic": "t"}
    assert svc._validate(space, cat, base + [sub], [], led, False, None) == []
    for key, value in (("deadletter", "dlq"), ("message_redelivery", {"maximum_delivery_attempts": 2}),
                       ("message_ttl", {"maximum": 1000})):
        with pytest.raises(ServiceError) as e:
            svc._validate(space, cat, base + [dict(sub, **{key: value})], [], led, False, None)
        text = str(e.value)
        assert "addresses[2](s1).%s" % key in text, text
        if key == "message_ttl":  # the model's rule (EnMasse: queue and topic only)
            assert "is only allowed on queue, topic addresses" in text, text
        else:
            assert "standard address space" in text and "'t'" in text, text


def test_pool_broker_state_is_active_or_draining(tmp_path):
    inf = infra(tmp_path)
    assert svc.StandardService(inf).draining_brokers == []
    data = json.loads((tmp_path / "standard.json").read_text())
    data["brokers"][0]["state"] = "draining"
    (tmp_path / "standard.json").write_text(json.dumps(data))
    assert svc.StandardService(infra_mod.load_infra(str(tmp_path / "standard.json"))).draining_brokers == [
        data["brokers"][0]["name"]]
    data["brokers"][0]["state"] = "leaving"
    (tmp_path / "standard.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError) as e:
        infra_mod.load_infra(str(tmp_path / "standard.json"))
    assert "brokers[0] (%s): state: 'leaving' must be one of active, draining" % data["brokers"][0]["name"] \
        in " ".join(e.value.errors)


def test_mqtt_gateways_serving_a_space_are_its_mqtt_endpoints(tmp_path):
    gws = [{"host": "gw-1", "spaces": [{"name": "s", "tls_port": 8883, "plain_port": 0},
                                       {"name": "other", "tls_port": 8884}]},
           {"host": "gw-2", "spaces": [{"name": "s", "tls_port": 8883, "plain_port": 1883}]}]
    s = svc.StandardService(infra(tmp_path, mqtt_gateways=gws))
    eps = svc.endpoints(s, 5700, "s")
    assert [e["name"] for e in eps] == ["amqps-r1", "amqps-r2", "mqtts-gw-1", "mqtts-gw-2", "mqtt-gw-2"]
    assert eps[2] == {"name": "mqtts-gw-1", "host": "gw-1", "port": 8883, "protocols": ["mqtts"]}
    assert eps[4]["port"] == 1883 and eps[4]["protocols"] == ["mqtt"]
    assert [e["name"] for e in svc.endpoints(s, 5701, "other")][-1] == "mqtts-gw-1"
    assert not [e for e in svc.endpoints(s, 5702, "third") if e["name"].startswith("mqtt")]


@pytest.mark.parametrize("gws,words", [
    ({"host": "gw"}, "mqtt_gateways: {'host': 'gw'} must be a list of {host, spaces}"),
    ([{"spaces": []}], "mqtt_gateways[0]: {'spaces': []} needs a host"),
    ([{"host": "gw", "spaces": [{"name": "s", "tls_port": 70000}]}],
     "mqtt_gateways[0].spaces[0] (s).tls_port: 70000 must be a port 1-65535, or 0 for none"),
    ([{"host": "gw", "spaces": [{"name": "s", "tls_port": 0}]}],
     "mqtt_gateways[0].spaces[0] (s): neither tls_port nor plain_port"),
])
def test_bad_mqtt_gateways_are_refused_naming_the_field(tmp_path, gws, words):
    with pytest.raises(ConfigError) as e:
        infra(tmp_path, mqtt_gateways=gws)
    assert words in " ".join(e.value.errors), e.value.errors


def test_the_tasks_timeout_replaces_the_files_for_every_management_request(tmp_path):
    infra(tmp_path)
    params = {"infrastructure_file": str(tmp_path / "standard.json")}
    loaded, unused, service = svc.open_space(params, "tenant")
    assert loaded["timeout"] == 60 and service.infra["timeout"] == 60
    loaded, unused, service = svc.open_space(dict(params, timeout=10), "tenant")
    assert loaded["timeout"] == 10 and service.infra["timeout"] == 10
    for bad in (0, -1, True, "10"):
        with pytest.raises(ConfigError, match=r"timeout: .* must be whole seconds >= 1"):
            svc.open_space(dict(params, timeout=bad), "tenant")
