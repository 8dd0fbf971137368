"""router/diff.py (pure) and the pure parts of router/reader.py and
router/protocol.py: desired vs live router entities -> a change set."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.router import diff, protocol, reader

LISTENER = {"type": "listener", "host": "0.0.0.0", "port": 5700, "multiTenant": True, "policyVhost": "s1",
            "authenticatePeer": True, "saslMechanisms": "PLAIN", "saslPlugin": "enmasse/s1/auth"}
PLUGIN = {"type": "authServicePlugin", "host": "127.0.0.1", "port": "5671", "realm": "s1"}
VHOST = {"type": "vhost", "hostname": "s1", "allowUnknownUser": True,
         "groups": {"$default": {"users": "*", "sources": "*", "targets": "*"}}}
CONNECTOR = {"type": "connector", "host": "127.0.0.1", "port": "5673", "role": "route-container",
             "saslUsername": "u", "saslPassword": "file:/etc/qpid-dispatch/brokers/b0-0123.password"}
ADDRESS = {"type": "address", "prefix": "s1/q", "distribution": "balanced", "waypoint": True}
AUTOLINK = {"type": "autoLink", "address": "s1/q", "direction": "out", "connection": "enmasse/broker/b0"}
LINKROUTE = {"type": "linkRoute", "prefix": "s1/t", "direction": "in", "connection": "enmasse/broker/b0"}


def space():
    return {"enmasse/s1": dict(VHOST), "enmasse/s1/auth": dict(PLUGIN), "enmasse/s1/amqp": dict(LISTENER),
            "enmasse/broker/b0": dict(CONNECTOR), "enmasse/s1/q": dict(ADDRESS),
            "enmasse/s1/q/out/b0": dict(AUTOLINK), "enmasse/s1/t/in": dict(LINKROUTE)}


def as_live(entities):
    """What the reader returns for entities created from ``entities``: the
    router's view (defaults filled in, ports as strings, the password file named)."""
    out = {}
    for name, e in entities.items():
        filled = dict((k, v) for k, v in reader.defaults(e["type"], e).items() if v is not None)
        filled.update(e)
        out[name] = dict(reader.normalise(e["type"], filled), type=e["type"])
    return out


def test_everything_new_is_created_in_dependency_order():
    changes = diff.plan_changes({"R1": space()}, {})
    kinds = [c.kind for c in changes]
    assert kinds == ["vhost", "authServicePlugin", "connector", "listener", "address", "linkRoute", "autoLink"]
    assert all(c.op == "create" for c in changes) and changes.changed
    assert changes.summary()["R1"]["create"] == sorted(space())


def test_converged_state_has_no_change_even_with_router_defaults_and_hidden_secret():
    live = {"R1": as_live(space()), "R2": as_live(space())}
    changes = diff.plan_changes({"R1": space(), "R2": space()}, live)
    assert not changes.changed and changes.summary() == {} and len(changes) == 0


def test_deletes_run_in_reverse_dependency_order_before_creates():
    live = {"R1": as_live(space())}
    changes = diff.plan_changes({"R1": {}}, live)
    assert [c.kind for c in changes] == ["autoLink", "linkRoute", "address", "listener", "connector",
                                         "authServicePlugin", "vhost"]
    assert all(c.op == "delete" for c in changes)


def test_a_changed_config_entity_is_deleted_and_created_again():
    live = {"R1": as_live(space())}
    want = space()
    want["enmasse/s1/amqp"]["port"] = 5701
    changes = diff.plan_changes({"R1": want}, live)
    assert [(c.op, c.name) for c in changes] == [("delete", "enmasse/s1/amqp"), ("create", "enmasse/s1/amqp")]
    assert changes.summary() == {"R1": {"replace": ["enmasse/s1/amqp"]}}
    d = changes.diff()
    assert d["before"]["R1"]["enmasse/s1/amqp"]["port"] == "5700"
    assert d["after"]["R1"]["enmasse/s1/amqp"]["port"] == "5701"


def test_a_changed_vhost_is_updated_but_a_new_hostname_replaces_it():
    live = {"R1": as_live(space())}
    want = space()
    want["enmasse/s1"]["maxConnections"] = 10
    changes = diff.plan_changes({"R1": want}, live)
    assert [(c.op, c.kind) for c in changes] == [("update", "vhost")]
    want["enmasse/s1"]["hostname"] = "s2"
    assert [c.op for c in diff.plan_changes({"R1": want}, live)] == ["delete", "create"]


def test_a_changed_kind_is_replaced_and_deletes_come_first():
    live = {"R1": as_live(space())}
    want = space()
    want["enmasse/s1/q"] = {"type": "linkRoute", "prefix": "s1/q", "direction": "in"}
    ops = [(c.op, c.kind) for c in diff.plan_changes({"R1": want}, live)]
    assert ops == [("delete", "address"), ("create", "linkRoute")]


def test_entities_not_owned_are_never_touched_and_cannot_be_desired():
    live = {"R1": dict(as_live(space()), **{"mine": {"type": "address", "prefix": "x"}})}
    assert not diff.plan_changes({"R1": space()}, live).changed
    assert not any(c.name == "mine" for c in diff.plan_changes({"R1": {}}, live))
    with pytest.raises(ValidationError) as e:
        diff.plan_changes({"R1": {"mine": {"type": "address", "prefix": "x"}, "enmasse/x": {"type": "queue"}}}, {})
    assert len(e.value.errors) == 2
    assert "'mine'" in e.value.errors[1] and "enmasse/" in e.value.errors[1]
    assert "queue" in e.value.errors[0]


def test_prune_false_keeps_undesired_owned_entities_and_other_routers_are_left_alone():
    live = {"R1": as_live(space()), "R2": as_live(space())}
    assert not diff.plan_changes({"R1": {}}, live, prune=False).changed
    changes = diff.plan_changes({"R1": space()}, live)
    assert not changes.changed  # R2 not desired: not touched


def test_phases_group_changes_across_routers():
    changes = diff.plan_changes({"R1": space(), "R2": {"enmasse/s1/q": dict(ADDRESS)}}, {"R2": as_live({"enmasse/x": ADDRESS})})
    phases = changes.phases()
    assert [(p[0].op, p[0].kind) for p in phases] == [("delete", "address"), ("create", "vhost"),
                                                      ("create", "authServicePlugin"), ("create", "connector"),
                                                      ("create", "listener"), ("create", "address"),
                                                      ("create", "linkRoute"), ("create", "autoLink")]
    assert sorted(c.router for c in phases[5]) == ["R1", "R2"]


def test_a_literal_password_is_never_shown_and_never_kept():
    """qdrouterd 1.19 returns a literal saslPassword on QUERY: read from a
    router it is replaced at once, it never shows in a diff, and the connector
    is re-created with the password file."""
    literal = dict(CONNECTOR, saslPassword="hunter2-admin")
    live = {"R1": {"enmasse/broker/b0": dict(reader.normalise("connector", literal), type="connector")}}
    assert live["R1"]["enmasse/broker/b0"]["saslPassword"] == reader.LITERAL_SECRET
    changes = diff.plan_changes({"R1": {"enmasse/broker/b0": dict(CONNECTOR)}}, live)
    assert [(c.op, c.kind) for c in changes] == [("delete", "connector"), ("create", "connector")]
    assert "hunter2" not in repr(changes.diff()) and "hunter2" not in repr(changes.summary())
    create = [c for c in changes if c.op == "create"][0]
    assert create.attributes["saslPassword"] == CONNECTOR["saslPassword"]
    # a literal in the desired state (never made by the collection) is not shown either
    shown = diff.plan_changes({"R1": {"enmasse/broker/b0": literal}}, {}).diff()
    assert "hunter2" not in repr(shown)


def test_a_changed_password_file_re_creates_the_connector():
    live = {"R1": as_live({"enmasse/broker/b0": CONNECTOR})}
    assert not diff.plan_changes({"R1": {"enmasse/broker/b0": dict(CONNECTOR)}}, live).changed
    rotated = dict(CONNECTOR, saslPassword="file:/etc/qpid-dispatch/brokers/b0-4567.password")
    changes = diff.plan_changes({"R1": {"enmasse/broker/b0": rotated}}, live)
    assert [(c.op, c.kind) for c in changes] == [("delete", "connector"), ("create", "connector")]


def test_normalise_drops_defaults_and_unknown_attributes_and_plain_values():
    row = {"name": "enmasse/x", "identity": "7", "host": "", "port": 5700, "role": "normal", "cost": 1,
           "multiTenant": True, "maxFrameSize": 16384, "policyVhost": None}
    assert reader.normalise("listener", row) == {"port": "5700", "multiTenant": True}
    with pytest.raises(ValueError):
        reader.entity_type("queue")


def test_request_encoding_is_what_proton_decodes():
    proton = pytest.importorskip("proton")
    encoded = protocol.encode_request("_topo/0/R2/$management", "amqp:/_topo/0/R1/temp.x", "m7",
                                      {"operation": "CREATE", "type": "t", "name": "enmasse/a"},
                                      {"n": 5, "b": True, "none": None, "s": "x" * 300, "l": [1, "y"],
                                       "m": {"k": {"z": False}}})
    msg = proton.Message()
    msg.decode(encoded)
    assert (msg.address, msg.reply_to, msg.correlation_id) == ("_topo/0/R2/$management", "amqp:/_topo/0/R1/temp.x", "m7")
    assert msg.properties == {"operation": "CREATE", "type": "t", "name": "enmasse/a"}
    assert msg.body == {"n": 5, "b": True, "none": None, "s": "x" * 300, "l": [1, "y"], "m": {"k": {"z": False}}}


def test_management_address_and_error_naming():
    assert protocol.management_address() == "$management"
    assert protocol.management_address("R2") == "_topo/0/R2/$management"
    req = protocol.Request("DELETE", reader.KINDS["address"], name="enmasse/a", router="R2")
    err = protocol.Reply(req, 404, "Not Found: no entity named enmasse/a").error()
    assert "router R2" in str(err) and "enmasse/a" in str(err) and "router.config.address" in str(err)
    assert "Not Found" in str(err) and err.status == 404 and err.router == "R2"


def test_defaults_the_router_computes_are_not_drift():
    assert reader.normalise("address", {"prefix": "s/q", "waypoint": True, "ingressPhase": 0, "egressPhase": 1,
                                        "priority": -1, "distribution": "balanced"}) == {"prefix": "s/q", "waypoint": True}
    assert reader.normalise("address", {"prefix": "s/q", "egressPhase": 1}) == {"prefix": "s/q", "egressPhase": 1}
    assert reader.normalise("autoLink", {"address": "a", "direction": "in", "phase": 1}) == {"address": "a", "direction": "in"}
    assert reader.normalise("autoLink", {"address": "a", "direction": "out", "phase": 0}) == {"address": "a", "direction": "out"}
    assert reader.normalise("autoLink", {"address": "a", "direction": "out", "phase": 1})["phase"] == 1
