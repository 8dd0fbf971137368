"""The will keeper's rules (plugins/module_utils/mqtt/will_keeper.py), without
a router: which link is a will and of which address, which end of it sends
the will, and the configuration's refusals. Its behaviour with real routers:
tests/integration/test_mqtt_amqp_wills.py."""
import json

import pytest

from ansible_collections.enmasse.messaging.plugins.lookup import job_bundle
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
