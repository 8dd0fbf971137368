# -*- coding: utf-8 -*-
"""The mqtt_gateway role's will keepers (tasks/keeper.yml, prereqs.yml), run by
ansible-playbook on localhost: a space entry's will_routers is checked with
the service fields, and the keeper's configuration (check mode, its diff)
keeps the types the program checks (numbers, booleans) and names the service
user's password file. The keeper itself: tests/integration/test_mqtt_amqp_wills.py."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import sys

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import will_keeper
from role_play import failed, role_play, run_book

pytestmark = pytest.mark.unit

SERVICE = {"service_routers": ["r1:5710"], "service_user": "mqtt-gateway", "retained_address": "$mqtt/tenant-a/retained"}
SPACE = dict({"name": "tenant-a", "routers": ["r1:5701"], "addresses": [], "will_routers": ["r1:5711", "r2:5811"]},
             **SERVICE)


def variables(tmp_path, spaces):
    return {"mqtt_gateway_credentials_dir": str(tmp_path / "credentials"),
            "mqtt_gateway_config_dir": str(tmp_path / "etc"), "mqtt_gateway_install_dir": str(tmp_path / "opt"),
            "mqtt_gateway_group": "root", "mqtt_gateway_spaces": spaces, "mqtt_gateway_metrics_enabled": False,
            "mqtt_gateway_binary": sys.executable}


def written(tmp_path, task):
    """The content the task named ``task`` of keeper.yml would write (check mode, --diff); only the
    handlers may fail (no systemd here: the play keyword check_mode does not set ansible_check_mode)."""
    book = [{"hosts": "localhost", "gather_facts": False, "connection": "local", "check_mode": True,
             "tasks": [{"name": "keeper", "ansible.builtin.include_role": {
                 "name": "enmasse.messaging.mqtt_gateway", "tasks_from": "keeper.yml"},
                 "vars": variables(tmp_path, [SPACE])}]}]
    unused, results = run_book(tmp_path, book, env={"ANSIBLE_DIFF_ALWAYS": "True"})
    assert [n for n, unused in failed(results) if "Restart" not in n] == [], failed(results)
    found = [res for name, res in results if name.endswith(" : " + task)]
    assert len(found) == 1, results
    return found[0]["results"][0]["diff"][0]["after"]  # a loop: one result per space


def test_the_keepers_configuration_has_the_programs_types(tmp_path):
    cfg = json.loads(written(tmp_path, "Write each space's keeper configuration (a change restarts the instance)"))
    assert cfg["max_wills"] == 100000 and cfg["router_tls"] is True  # not "100000", "True"
    assert cfg["max_will_delay"] == 86400
    assert cfg["routers"] == ["r1:5711", "r2:5811"] and cfg["user"] == "mqtt-gateway"
    assert cfg["password_file"] == str(tmp_path / "etc" / "tenant-a" / "service-password")
    assert cfg["container_id"] == "enmasse-mqtt-will-keeper/tenant-a/localhost"
    assert will_keeper.check_config(cfg)["max_wills"] == 100000  # the program takes it as it is


@pytest.mark.parametrize("entry, fragment", [
    (dict(SPACE, will_routers="r1:5711"), "mqtt_gateway_spaces[0].will_routers: r1:5711 must be a list"),
    (dict(SPACE, will_routers=["r1"]), "mqtt_gateway_spaces[0].will_routers"),
    ({"name": "tenant-a", "routers": ["r1:5701"], "addresses": [], "will_routers": ["r1:5711"]},
     "will_routers needs service_routers"),
])
def test_prereqs_refuse_bad_will_routers(tmp_path, entry, fragment):
    out, results = role_play(tmp_path, "mqtt_gateway", "prereqs.yml", variables(tmp_path, [entry]))
    bad = failed(results)
    assert bad and fragment in bad[0][1]["msg"], bad


def test_prereqs_take_will_routers_with_the_service_fields(tmp_path):
    out, results = role_play(tmp_path, "mqtt_gateway", "prereqs.yml", variables(tmp_path, [SPACE]))
    bad = [(n, r) for n, r in failed(results) if "systemd" not in n]
    assert not bad, bad
