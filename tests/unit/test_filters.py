"""The filter plugins of plugins/filter/ (roles and site.yml logic), with bad inputs."""
import binascii
import hashlib
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.filter import broker as fb
from ansible_collections.enmasse.messaging.plugins.filter import model as fm
from ansible_collections.enmasse.messaging.plugins.filter import router as fr

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PORTS = {"amqp": 5672, "core": 61616, "openwire": 61617, "stomp": 61613, "mqtt": 1883, "jolokia": 8161}


def _space(name="demo", **kw):
    d = {"name": name, "type": "brokered", "plan": "brokered-single-broker"}
    d.update(kw)
    return d


# ------------------------------------------------------------ FilterModule
def test_filter_modules_export_the_documented_filters():
    assert set(fb.FilterModule().filters()) == {"artemis_password_hash", "broker_placement", "broker_layout"}
    assert set(fm.FilterModule().filters()) == {"space_name_errors", "address_spaces_errors", "without_users",
                                                "scale_in_errors", "loop_metrics"}
    assert set(fr.FilterModule().filters()) == {"router_secret_files", "router_mesh_changes", "router_conf_core"}


# ------------------------------------------------------------ loop_metrics
def test_loop_metrics_renders_and_refuses_a_bad_mode_or_decision():
    text = fm.loop_metrics("", {"act": True, "steps": [{"action": "move"}], "refused": []}, "apply")
    assert 'enmasse_loop_last_run_outcome{outcome="applied"} 1' in text
    assert 'enmasse_loop_last_run_outcome{outcome="idle"} 1' in fm.loop_metrics(None, None, "apply")
    with pytest.raises(AnsibleFilterError, match="loop_metrics: mode: 'yolo' must be 'report' or 'apply'"):
        fm.loop_metrics("", None, "yolo")
    with pytest.raises(AnsibleFilterError, match="decision: 'x' must be capacity_plan_apply's result or null"):
        fm.loop_metrics("", "x", "apply")


# ------------------------------------------------------------ router_secret_files
def test_router_secret_files_name_a_file_per_broker_that_changes_with_the_password():
    creds = [{"name": "b1", "password": "pw-one"}, {"name": "b2", "password": "pw-two"}]
    files = fr.router_secret_files(creds, "/etc/qpid-dispatch/brokers")
    assert sorted(files) == ["b1", "b2"]
    assert all(p.startswith("/etc/qpid-dispatch/brokers/%s-" % n) and p.endswith(".password") for n, p in files.items())
    assert fr.router_secret_files(creds, "/etc/qpid-dispatch/brokers") == files  # deterministic
    rotated = fr.router_secret_files([{"name": "b1", "password": "pw-new"}], "/etc/qpid-dispatch/brokers")
    assert rotated["b1"] != files["b1"]
    assert not any("pw-" in p for p in files.values())


def test_router_secret_files_refuse_bad_entries_without_showing_passwords():
    with pytest.raises(AnsibleFilterError) as e:
        fr.router_secret_files([{"name": "../x", "password": "sekrit1"}, {"name": "b2", "password": ""},
                                {"name": "b3", "password": "sekrit3"}, {"name": "b3", "password": "sekrit3"}],
                               "/d")
    msg = str(e.value)
    assert "router_broker_credentials[0].name: '../x' must be letters" in msg
    assert "router_broker_credentials[1](b2).password: must be a non-empty string" in msg
    assert "router_broker_credentials[3].name: 'b3' is given twice" in msg
    assert "sekrit" not in msg
    with pytest.raises(AnsibleFilterError):
        fr.router_secret_files([], "relative")


def test_layout_gives_the_pool_instance_a_router_user_only():
    out = fb.broker_layout([_space("demo"), {"name": "standard-pool", "type": "pool"}], PORTS, credentials_dir="/c")
    assert "router_user" not in out[0]
    assert out[1]["router_user"] == "standard-pool-router"
    assert out[1]["router_password_file"] == "/c/standard-pool-router"


# ------------------------------------------------------------ artemis_password_hash
def test_password_hash_is_artemis_pbkdf2_and_deterministic():
    h = fb.artemis_password_hash("s3cret", "demo-user")
    assert h == fb.artemis_password_hash("s3cret", "demo-user")
    iterations, salt, key = h[len("ENC("):-1].split(":")
    assert iterations == "1024" and len(salt) == 64 and len(key) == 128
    # recompute independently: PBKDF2-HMAC-SHA1, 64-byte key, the given salt
    dk = hashlib.pbkdf2_hmac("sha1", b"s3cret", binascii.unhexlify(salt), 1024, 64)
    assert key == binascii.hexlify(dk).decode().upper()


def test_password_hash_is_the_one_the_role_wrote_before():
    # the former inline python of users.yml: same salt rule, so upgrading the
    # role does not rewrite artemis-users.properties
    salt = hashlib.sha256(b"enmasse.messaging:u:p").digest()
    dk = hashlib.pbkdf2_hmac("sha1", b"p", salt, 1024, 64)
    want = "ENC(1024:%s:%s)" % (binascii.hexlify(salt).decode().upper(), binascii.hexlify(dk).decode().upper())
    assert fb.artemis_password_hash("p", "u") == want


def test_password_hash_differs_per_user_and_password():
    assert fb.artemis_password_hash("p", "a") != fb.artemis_password_hash("p", "b")
    assert fb.artemis_password_hash("p", "a") != fb.artemis_password_hash("q", "a")
    assert fb.artemis_password_hash("p", "a", iterations=2).startswith("ENC(2:")


@pytest.mark.parametrize("password,user,iterations", [
    ("", "u", 1024), (None, "u", 1024), (123, "u", 1024),
    ("p", "", 1024), ("p", None, 1024), ("p", "u", 0), ("p", "u", "1024"), ("p", "u", True),
])
def test_password_hash_refuses_bad_inputs(password, user, iterations):
    with pytest.raises(AnsibleFilterError):
        fb.artemis_password_hash(password, user, iterations)


def test_password_hash_error_never_shows_the_password():
    with pytest.raises(AnsibleFilterError) as e:
        fb.artemis_password_hash("topsecret", None)
    assert "topsecret" not in str(e.value)


# ------------------------------------------------------------ broker_placement
def test_placement_round_robin_in_inventory_order():
    spaces = [_space("a"), _space("b"), _space("c")]
    out = fb.broker_placement(spaces, ["h1", "h2"])
    assert [s["name"] for s in out["h1"]] == ["a", "c"]
    assert [s["name"] for s in out["h2"]] == ["b"]


def test_placement_pins_first_then_fewest_spaces():
    spaces = [_space("a"), _space("b", broker_host="h1"), _space("c", broker_host="h1"), _space("d")]
    out = fb.broker_placement(spaces, ["h1", "h2", "h3"])
    assert [s["name"] for s in out["h1"]] == ["b", "c"]
    assert [s["name"] for s in out["h2"]] == ["a"]
    assert [s["name"] for s in out["h3"]] == ["d"]


def test_placement_keeps_only_role_keys_and_brokered_spaces():
    spaces = [_space("a", addresses=[{"address": "q"}], port_offset=100, broker_host="h"),
              {"name": "s", "type": "standard", "plan": "standard-small"}]
    out = fb.broker_placement(spaces, ["h"])
    assert out == {"h": [{"name": "a", "type": "brokered", "plan": "brokered-single-broker", "port_offset": 100}]}


def test_placement_every_host_is_a_key():
    assert fb.broker_placement([], ["h1", "h2"]) == {"h1": [], "h2": []}
    assert fb.broker_placement(None, ["h1"]) == {"h1": []}


@pytest.mark.parametrize("spaces,brokers,match", [
    ([_space("a", broker_host="nope")], ["h1"], r"address_spaces\[0\]\(a\)\.broker_host: 'nope' is not a host"),
    ([_space("a")], [], r"groups\['brokers'\] is empty"),
    ("demo", ["h1"], r"address_spaces: 'demo' must be a list"),
    (["demo"], ["h1"], r"address_spaces\[0\]: 'demo' must be a mapping"),
    ([_space("a")], "h1", r"brokers: 'h1' must be a list"),
])
def test_placement_refuses_bad_inputs(spaces, brokers, match):
    with pytest.raises(AnsibleFilterError, match=match):
        fb.broker_placement(spaces, brokers)


# ------------------------------------------------------------ broker_layout
def test_layout_ports_offsets_and_files():
    out = fb.broker_layout([_space("demo"), _space("second", java_memory="1G")], PORTS,
                           credentials_dir="/c", instances_dir="/i", endpoint_host="127.0.0.1")
    assert [s["ports"]["amqp"] for s in out] == [5672, 5772]
    assert out[1]["ports"] == dict((k, v + 100) for k, v in PORTS.items())
    assert out[1]["instance_dir"] == "/i/second"
    assert out[1]["service"] == "artemis@second.service"
    assert out[1]["messaging_password_file"] == "/c/second-messaging"
    assert out[1]["management_user"] == "second-admin"
    assert out[1]["management_url"] == "http://127.0.0.1:8261/console/jolokia"
    assert out[1]["java_memory"] == "1G" and out[0]["java_memory"] == "512M"
    eps = dict((e["name"], (e["host"], e["port"])) for e in out[1]["endpoints"])
    # every client protocol of the second instance, on its own ports; never Jolokia
    assert eps == {"amqp": ("127.0.0.1", 5772), "core": ("127.0.0.1", 61716), "openwire": ("127.0.0.1", 61717),
                   "stomp": ("127.0.0.1", 61713), "mqtt": ("127.0.0.1", 1983)}


def test_layout_explicit_offset_and_string_numbers():
    out = fb.broker_layout([_space("a", port_offset="0"), _space("b", port_offset=7)],
                           dict((k, str(v)) for k, v in PORTS.items()), port_offset_step="100")
    assert out[0]["ports"]["amqp"] == 5672 and out[1]["ports"]["amqp"] == 5679
    assert out[0]["broker_name"] == "a" and out[0]["plan"] == "brokered-single-broker"


def test_layout_empty():
    assert fb.broker_layout([], PORTS) == []


@pytest.mark.parametrize("spaces,ports,step,match", [
    ([_space("Demo")], PORTS, 100, r"broker_address_spaces\[0\]\.name: 'Demo' must consist of lowercase"),
    ([_space("a" * 61)], PORTS, 100, r"at most 60 are allowed"),
    ([{"type": "brokered"}], PORTS, 100, r"name: None is required"),
    ([_space("a"), _space("a")], PORTS, 100, r"'a' is listed twice on this host"),
    ([_space("a", type="standard")], PORTS, 100, r"type: 'standard' must be 'brokered'"),
    ([_space("a", port_offset=-1)], PORTS, 100, r"port_offset: -1 must be an integer >= 0"),
    ([_space("a"), _space("b")], PORTS, 0, r"port 5672 \(b amqp\) is also used by a amqp"),
    ([_space("a", port_offset=0), _space("b", port_offset=0)], PORTS, 100, r"also used by a"),
    ([_space("a", port_offset=65000)], PORTS, 100, r"above 65535"),
    ([_space("a")], dict(PORTS, amqp=61616), 100, r"port 61616 \(a core\) is also used by a amqp"),
    ([_space("a")], dict(PORTS, amqp=0), 100, r"broker_ports.amqp: 0 must be an integer in 1..65535"),
    ([_space("a")], dict(PORTS, extra=1), 100, r"broker_ports: .* must map exactly"),
    ([_space("a")], "5672", 100, r"broker_ports: '5672' must map exactly"),
    ([_space("a")], PORTS, -5, r"broker_port_offset_step: -5"),
    ("demo", PORTS, 100, r"broker_address_spaces: 'demo' must be a list"),
    (["demo"], PORTS, 100, r"broker_address_spaces\[0\]: 'demo' must be a mapping"),
])
def test_layout_refuses_bad_inputs(spaces, ports, step, match):
    with pytest.raises(AnsibleFilterError, match=match):
        fb.broker_layout(spaces, ports, port_offset_step=step)


def test_layout_reports_every_error_at_once():
    with pytest.raises(AnsibleFilterError) as e:
        fb.broker_layout([_space("Bad"), _space("b", port_offset=-1)], PORTS)
    assert "'Bad'" in str(e.value) and "port_offset: -1" in str(e.value)


# ------------------------------------------------------------ space_name_errors
@pytest.mark.parametrize("name", ["demo", "a", "a-1", "x" * 60])
def test_space_name_valid(name):
    assert fm.space_name_errors(name) == []


@pytest.mark.parametrize("name,rule", [
    ("Demo", "lowercase"), ("1demo", "start with a letter"), ("demo-", "end with a letter"),
    ("de_mo", "lowercase"), ("x" * 61, "at most 60"), ("", "required"), (None, "required"), (42, "required"),
])
def test_space_name_invalid_names_field_value_rule(name, rule):
    errs = fm.space_name_errors(name, "planner_space")
    assert errs and all(e.startswith("planner_space: ") for e in errs)
    assert any(rule in e for e in errs)
    assert repr(name)[:20] in errs[0]


def test_space_name_field_must_be_a_string():
    with pytest.raises(AnsibleFilterError):
        fm.space_name_errors("demo", 3)


# ------------------------------------------------------------ address_spaces_errors
def _aio_spaces():
    with open(os.path.join(REPO, "inventories/aio/group_vars/all.yml")) as f:
        return yaml.safe_load(f)["address_spaces"]


def test_site_errors_accepts_the_shipped_inventories():
    assert fm.address_spaces_errors(_aio_spaces(), brokers=["aio"], routers=["aio"], keycloak=["aio"]) == []
    assert "needs routers" in " ".join(fm.address_spaces_errors(_aio_spaces(), brokers=["aio"], routers=[]))
    with open(os.path.join(REPO, "inventories/multi/group_vars/all.yml")) as f:
        multi = yaml.safe_load(f)["address_spaces"]
    assert fm.address_spaces_errors(multi, brokers=["broker1.example.com", "broker2.example.com"]) == []
    assert fm.address_spaces_errors(None) == [] and fm.address_spaces_errors([]) == []


def test_site_errors_checks_users_with_the_modules_rules_and_never_quotes_a_password():
    spaces = [{"name": "shop", "type": "brokered", "plan": "brokered-single-broker", "messaging_user": "yes",
               "users": [{"username": "app", "password": "s3cret-Value",
                          "authorization": [{"addresses": ["orders/*"], "operations": ["send"]}]},
                         {"username": "Bad User", "password": "other-s3cret"},
                         {"username": "app", "password": "third-s3cret"},
                         {"username": "ops", "password": "fourth-s3cret",
                          "authorization": [{"addresses": ["*"], "operations": ["send", "delete"]}]}]}]
    errs = fm.address_spaces_errors(spaces, brokers=["b"], keycloak=["kc"])
    text = "\n".join(errs)
    assert "address_spaces[0](shop).messaging_user: 'yes' must be a boolean" in text
    assert "address_spaces[0](shop).users[3].authorization[0].operations: 'delete'" in text
    assert "address_spaces[0](shop).users[1].username: 'Bad User'" in text
    assert "address_spaces[0](shop).users[2].username: 'app' is already given by users[0]" in text
    assert "s3cret" not in text
    # users need Keycloak; a valid list with it is accepted
    ok = [dict(spaces[0], messaging_user=True, users=spaces[0]["users"][:1])]
    ok[0]["users"] = [{"username": "app", "password": "x", "authorization": [{"addresses": ["orders/*"],
                                                                             "operations": ["send"]}]}]
    assert fm.address_spaces_errors(ok, brokers=["b"], keycloak=["kc"]) == []
    assert "add a host to the group keycloak" in " ".join(fm.address_spaces_errors(ok, brokers=["b"], keycloak=[]))


@pytest.mark.parametrize("mutate,expect", [
    (lambda s: s[0].update(name="dem_o"), "address_spaces[0](dem_o).name: 'dem_o' must consist of lowercase"),
    (lambda s: s[0].update(type="brokerd"), "address_spaces[0](demo).type: 'brokerd' must be one of standard, brokered"),
    (lambda s: s[0].update(type="standard", plan="standard-small"),
     "address_spaces[0](demo).addresses[0](dlq).plan: 'brokered-deadletter' is not allowed by address space plan"),
    (lambda s: s[1].update(broker_host="aio"),
     "address_spaces[1](demo-standard).broker_host: a standard space has no broker of its own"),
    (lambda s: s[0].update(name="standard-pool"), "address_spaces[0](standard-pool).name: 'standard-pool' is reserved"),
    (lambda s: s[0].update(plan="nope"), "address_spaces[0](demo).plan: 'nope' is not a known address space plan"),
    (lambda s: s[0].update(colour="red"), "address_spaces[0](demo).colour: unknown field"),
    (lambda s: s[0].update(broker_host="elsewhere"), "address_spaces[0](demo).broker_host: 'elsewhere' is not a host"),
    (lambda s: s[0].update(port_offset=-100), "address_spaces[0](demo).port_offset: -100 must be an integer >= 0"),
    (lambda s: s[0].update(java_memory=""), "address_spaces[0](demo).java_memory: '' must be a non-empty string"),
    (lambda s: s.append(dict(s[0])), "address_spaces[2](demo).name: 'demo' is listed twice"),
    (lambda s: s.append("demo"), "address_spaces[2]: 'demo' must be a mapping"),
    (lambda s: s[0]["addresses"].append({"address": "x", "type": "queue", "plan": "brokered-queu"}),
     "address_spaces[0](demo).addresses[6](x).plan: 'brokered-queu' is not a known address plan"),
    (lambda s: s[0]["addresses"].append({"address": "x", "type": "anycast", "plan": "brokered-queue"}),
     "addresses[6](x).type: 'anycast' must be one of queue, topic, subscription, deadletter"),
    (lambda s: s[0]["addresses"].append({"address": "x", "type": "queue", "plan": "brokered-queue", "deadletter": "orders"}),
     "addresses[6](x).deadletter: 'orders' must name an address of type deadletter"),
    (lambda s: s[0]["addresses"].append({"address": "a b", "type": "queue", "plan": "brokered-queue"}),
     "addresses[6](a b).address: 'a b' must not contain whitespace"),
    (lambda s: s[0]["addresses"].append("orders"), "address_spaces[0](demo).addresses[6]: 'orders' must be a mapping"),
    (lambda s: s[0].update(addresses="orders"), "address_spaces[0](demo).addresses: 'orders' must be a list"),
])
def test_site_errors_name_field_value_and_rule(mutate, expect):
    spaces = _aio_spaces()
    mutate(spaces)
    errs = fm.address_spaces_errors(spaces, brokers=["aio"])
    assert any(expect in e for e in errs), errs


def test_site_errors_addresses_checked_even_when_the_name_is_bad():
    spaces = _aio_spaces()
    spaces[0]["name"] = "Demo"
    spaces[0]["addresses"].append({"address": "x", "type": "queue", "plan": "nope"})
    errs = fm.address_spaces_errors(spaces)
    assert any(".name:" in e for e in errs) and any("'nope' is not a known address plan" in e for e in errs)


def test_site_errors_not_a_list_and_bad_plans():
    assert fm.address_spaces_errors({"name": "demo"}) == [
        "address_spaces: {'name': 'demo'} must be a list of address spaces"]
    errs = fm.address_spaces_errors(_aio_spaces(), plans={"address_plans": [{"name": "x"}]})
    assert errs and errs[0].startswith("enmasse_plans: ")
    with pytest.raises(AnsibleFilterError):
        fm.address_spaces_errors([], brokers="aio")


def test_site_errors_extra_plans_are_known():
    spaces = [_space("demo", plan="my-plan")]
    plans = {"address_space_plans": [{"name": "my-plan", "address_space_type": "brokered",
                                      "resource_limits": {"broker": 1.0, "aggregate": 1.0},
                                      "address_plans": ["brokered-queue"]}]}
    assert any("'my-plan' is not a known" in e for e in fm.address_spaces_errors(spaces))
    assert fm.address_spaces_errors(spaces, plans=plans) == []


# ------------------------------------------------------------ without_users
def test_without_users_drops_the_users_and_their_passwords_and_keeps_the_rest():
    spaces = [_space("a", users=[{"name": "u", "password": "secret-pw"}], broker_host="b1"), _space("b")]
    out = fm.without_users(spaces)
    assert out == [_space("a", broker_host="b1"), _space("b")]
    assert "secret-pw" not in repr(out)
    assert spaces[0]["users"] == [{"name": "u", "password": "secret-pw"}]  # the input is not changed
    assert fm.without_users(s for s in spaces if s["name"] == "b") == [_space("b")]  # selectattr's generator


@pytest.mark.parametrize("bad", [None, "demo", {"name": "demo"}, [{"name": "a"}, "b"]])
def test_without_users_refuses_what_is_not_a_list_of_spaces(bad):
    with pytest.raises(AnsibleFilterError, match="without_users: .* must be a list of address spaces"):
        fm.without_users(bad)


# ------------------------------------------------------------ scale_in_errors (model/day2.py)
def test_scale_in_errors_filter_passes_the_floor_and_the_brokered_spaces():
    assert fm.scale_in_errors("b2", ["b1", "b2", "b3"]) == []
    assert "fewer than the floor scale_in_min_brokers 3" in fm.scale_in_errors("b2", ["b1", "b2", "b3"], min_brokers=3)[0]
    assert "brokered address space(s) shop" in fm.scale_in_errors("b2", ["b1", "b2", "b3"], brokered=["shop"])[0]
    assert "keep 1 active" in fm.scale_in_errors("b2", ["b1", "b2", "b3"], states={"b3": "draining"}, min_brokers=2)[0]
