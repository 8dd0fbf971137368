# -*- coding: utf-8 -*-
"""The mqtt_gateway role's state directory (the will journal, issue 21,
gateway/mqtt/journal.go): the unit template gives each instance
StateDirectory=enmasse-mqtt-gateway/%i, mode 0700, writable under its
hardening, and each instance's config.json points state_dir at it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import sys

import jinja2
import pytest
import yaml

from role_play import failed, role_play

pytestmark = pytest.mark.unit

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "mqtt_gateway")
SPACES = [{"name": "tenant-a", "routers": ["r1:5671"], "addresses": []},
          {"name": "tenant-b", "routers": ["r1:5672"], "addresses": [], "tls_port": 8884}]


def role_vars():
    with open(os.path.join(ROLE, "vars", "main.yml")) as f:
        return yaml.safe_load(f)


def unit_text(**extra):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")))
    v = {"ansible_managed": "managed", "mqtt_gateway_config_dir": "/etc/enmasse-mqtt-gateway",
         "mqtt_gateway_user": "enmasse-mqtt", "mqtt_gateway_group": "enmasse-mqtt", "mqtt_gateway_limit_nofile": 65536,
         "mqtt_gateway_memory_max": "", "__mqtt_gateway_bin": "/opt/enmasse-mqtt-gateway/bin/enmasse-mqtt-gateway",
         "__mqtt_gateway_ports": [8883], "__mqtt_gateway_state_name": role_vars()["__mqtt_gateway_state_name"]}
    v.update(extra)
    return env.get_template("enmasse-mqtt-gateway@.service.j2").render(**v)


def directives(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


def test_the_unit_gives_each_instance_a_private_state_directory_it_may_write():
    d = directives(unit_text())
    assert d["StateDirectory"] == ["enmasse-mqtt-gateway/%i"]
    assert d["StateDirectoryMode"] == ["0700"]
    assert d["User"] == ["enmasse-mqtt"]  # systemd makes it the instance user's at each start
    # ProtectSystem=strict leaves a StateDirectory= writable; nothing here takes /var/lib away again
    assert d["ProtectSystem"] == ["strict"]
    for key in ("ReadOnlyPaths", "InaccessiblePaths", "TemporaryFileSystem", "DynamicUser", "ReadWritePaths"):
        assert key not in d, key
    assert d["UMask"] == ["0077"]  # the journal files: 0600
    # the state directory is where the role's config points state_dir
    assert role_vars()["__mqtt_gateway_state_root"] == "/var/lib/{{ __mqtt_gateway_state_name }}"


def test_each_instance_config_points_state_dir_at_its_state_directory(tmp_path):
    v = {"mqtt_gateway_credentials_dir": str(tmp_path / "credentials"), "mqtt_gateway_config_dir": str(tmp_path / "etc"),
         "mqtt_gateway_group": "root", "mqtt_gateway_spaces": SPACES, "mqtt_gateway_binary": sys.executable}
    out, results = role_play(tmp_path, "mqtt_gateway", "config.yml", v)
    assert [n for n, unused in failed(results) if "Restart" not in n and "Reload" not in n] == [], failed(results)
    for space in ("tenant-a", "tenant-b"):
        config = json.loads((tmp_path / "etc" / space / "config.json").read_text())
        assert config["state_dir"] == "/var/lib/enmasse-mqtt-gateway/" + space
    unit = directives(unit_text())["StateDirectory"][0]
    assert "/var/lib/" + unit.replace("%i", "tenant-a") == "/var/lib/enmasse-mqtt-gateway/tenant-a"
