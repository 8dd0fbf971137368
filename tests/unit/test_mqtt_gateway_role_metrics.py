# -*- coding: utf-8 -*-
"""The mqtt_gateway role's metrics endpoint settings (tasks/metrics.yml,
prereqs.yml, config.yml), run by ansible-playbook on localhost: the generated
scrape password stays on the controller, the host file holds only its salted
SHA-512 in the auth service's format (which the gateway's Go check reads:
tests/integration/test_mqtt_gateway_metrics.py), idempotent, never printed;
one port per instance; off removes the file and publishes no port."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import sys

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics

from role_play import changed, failed, role_play

pytestmark = pytest.mark.unit

SPACES = [{"name": "tenant-a", "routers": ["r1:5671"], "addresses": []},
          {"name": "tenant-b", "routers": ["r1:5672"], "addresses": [], "tls_port": 8884}]


def play(tmp_path, tasks_from, variables):
    return role_play(tmp_path, "mqtt_gateway", tasks_from, variables)


def variables(tmp_path, **extra):
    out = {"mqtt_gateway_credentials_dir": str(tmp_path / "credentials"), "mqtt_gateway_config_dir": str(tmp_path / "etc"),
           "mqtt_gateway_group": "root", "mqtt_gateway_spaces": SPACES, "mqtt_gateway_metrics_enabled": True,
           "mqtt_gateway_binary": sys.executable}
    out.update(extra)
    return out


def facts(results):
    return [res["ansible_facts"] for name, res in results if "ansible_facts" in res and name.endswith(
        "publish this host's metrics ports (mqtt_gateway_metrics_ports; [] when off)")][0]


def test_metrics_password_hashed_on_the_host_idempotent_one_port_per_instance_and_removed_when_off(tmp_path):
    v = variables(tmp_path)
    (tmp_path / "etc").mkdir()
    out, results = play(tmp_path, "metrics.yml", v)
    # only the reload handler may fail (no systemd, no instance on the test host)
    assert [n for n, unused in failed(results) if "Reload" not in n] == [], failed(results)
    password = (tmp_path / "credentials" / "mqtt-gateway-metrics").read_text().split()[0]
    assert len(password) == 32 and password not in out
    path = tmp_path / "etc" / "metrics-password.json"
    assert password not in path.read_text() and oct(path.stat().st_mode & 0o777) == "0o640"
    doc = metrics.load_password_file(str(path))
    assert doc["username"] == "prometheus"
    assert metrics.authorized(metrics.basic("prometheus", password), doc)
    assert not metrics.authorized(metrics.basic("prometheus", password + "x"), doc)
    assert facts(results) == {"mqtt_gateway_metrics_ports": [9467, 9468]}
    before = path.read_text()
    out, results = play(tmp_path, "metrics.yml", v)
    assert not failed(results) and changed(results) == [], changed(results)
    assert path.read_text() == before

    v["mqtt_gateway_metrics_enabled"] = False
    out, results = play(tmp_path, "metrics.yml", v)
    assert not failed(results) and not path.exists()
    assert facts(results) == {"mqtt_gateway_metrics_ports": []}


def test_an_entry_metrics_port_overrides_the_default(tmp_path):
    spaces = [dict(SPACES[0], metrics_port=9999), SPACES[1]]
    (tmp_path / "etc").mkdir()
    out, results = play(tmp_path, "metrics.yml", variables(tmp_path, mqtt_gateway_spaces=spaces))
    assert facts(results) == {"mqtt_gateway_metrics_ports": [9999, 9468]}


@pytest.mark.parametrize("extra, fragment", [
    ({"mqtt_gateway_metrics_port": 8884}, "port 8884 is used by more than one listener"),
    ({"mqtt_gateway_spaces": [dict(SPACES[0], metrics_port=70000)]}, "mqtt_gateway_spaces[0].metrics_port: 70000"),
    ({"mqtt_gateway_metrics_username": "a:b"}, "username=a:b"),
])
def test_prereqs_refuse_a_port_clash_a_bad_port_and_a_bad_username(tmp_path, extra, fragment):
    out, results = play(tmp_path, "prereqs.yml", variables(tmp_path, **extra))
    bad = failed(results)
    assert bad and fragment in bad[0][1]["msg"], bad


def test_prereqs_ignore_the_metrics_ports_when_off(tmp_path):
    v = variables(tmp_path, mqtt_gateway_metrics_port=8884, mqtt_gateway_metrics_enabled=False)
    out, results = play(tmp_path, "prereqs.yml", v)
    bad = [(n, r) for n, r in failed(results) if "systemd" not in n]
    assert not bad, bad


def test_each_instance_config_names_its_metrics_listener_and_the_hash(tmp_path):
    spaces = [dict(SPACES[0], tls_port=0, plain_port=1883), SPACES[1]]
    out, results = play(tmp_path, "config.yml", variables(tmp_path, mqtt_gateway_spaces=spaces))
    assert [n for n, unused in failed(results) if "Restart" not in n and "Reload" not in n] == [], failed(results)
    a = json.loads((tmp_path / "etc" / "tenant-a" / "config.json").read_text())
    b = json.loads((tmp_path / "etc" / "tenant-b" / "config.json").read_text())
    assert (a["metrics_listen"], b["metrics_listen"]) == ("0.0.0.0:9467", "0.0.0.0:9468")
    assert a["metrics_password_file"] == str(tmp_path / "etc" / "metrics-password.json")
    # no MQTT TLS listener, but the metrics endpoint is HTTPS with the gateway's certificate
    assert a["listen_tls"] == "" and a["tls_cert_file"].endswith("/tls/gateway.pem")
    out, results = play(tmp_path, "config.yml", variables(tmp_path, mqtt_gateway_spaces=spaces,
                                                          mqtt_gateway_metrics_enabled=False))
    a = json.loads((tmp_path / "etc" / "tenant-a" / "config.json").read_text())
    assert a["metrics_listen"] == "" and a["metrics_password_file"] == "" and a["tls_cert_file"] == ""
