"""capacity_planner_router_tls (roles/capacity_planner): the router role's
management listener wants a client certificate of its CA and SASL EXTERNAL.
The role's prereqs refuse a bad mapping naming the variable, its value and
the rule; config.yml (run in check mode with --diff on localhost) writes the
metrics_collect options collect.json then holds: router_ca_file,
router_cert_file, router_key_file, SASL EXTERNAL, no host name check on
127.0.0.1, and capacity_planner_collect_options still win."""
import json

import pytest

from role_play import check_mode_content, failed, role_play

TLS = {"ca_file": "/etc/qpid-dispatch/tls/management-ca.pem",
       "cert_file": "/etc/qpid-dispatch/tls/management-client.pem",
       "key_file": "/etc/qpid-dispatch/tls/management-client.key"}
URL = "amqps://127.0.0.1:55670"


def _collect_json(tmp_path, **variables):
    variables = dict({"capacity_planner_config_dir": str(tmp_path), "capacity_planner_model": {}}, **variables)
    return json.loads(check_mode_content(tmp_path, "capacity_planner", "config", variables,
                                         "Write the collector configuration"))


def test_the_management_tls_becomes_the_collectors_options(tmp_path):
    conf = _collect_json(tmp_path, capacity_planner_router_url=URL, capacity_planner_router_tls=TLS)
    assert conf["router_url"] == URL
    assert (conf["router_ca_file"], conf["router_cert_file"], conf["router_key_file"]) == (
        TLS["ca_file"], TLS["cert_file"], TLS["key_file"])
    assert conf["router_sasl_mechanisms"] == "EXTERNAL"
    assert conf["router_verify_hostname"] is False


def test_another_host_is_verified_and_the_operators_options_win(tmp_path):
    conf = _collect_json(tmp_path, capacity_planner_router_url="amqps://router-1.example:55670",
                         capacity_planner_router_tls={"ca_file": "/etc/ca.pem"},
                         capacity_planner_collect_options={"router_sasl_mechanisms": "PLAIN"})
    assert conf["router_ca_file"] == "/etc/ca.pem" and "router_cert_file" not in conf
    assert "router_verify_hostname" not in conf  # the module's default: checked
    assert conf["router_sasl_mechanisms"] == "PLAIN"
    conf = _collect_json(tmp_path, capacity_planner_router_url=URL, capacity_planner_router_tls=TLS,
                         capacity_planner_collect_options={"router_verify_hostname": True})
    assert conf["router_verify_hostname"] is True


def test_without_tls_nothing_is_added(tmp_path):
    conf = _collect_json(tmp_path, capacity_planner_router_url="amqp://127.0.0.1:5672")
    assert not [k for k in conf if k.startswith("router_") and k != "router_url"]


@pytest.mark.parametrize("tls,url,why", [
    ({"cert_file": "/a.pem"}, URL, "cert_file without key_file"),
    ({"ca": "/a.pem"}, URL, "an unknown key"),
    ({"ca_file": "ca.pem"}, URL, "a relative path"),
    (TLS, "amqp://127.0.0.1:5672", "TLS with a plain URL"),
    (["/a.pem"], URL, "not a mapping"),
])
def test_bad_tls_is_refused_naming_the_variable(tmp_path, tls, url, why):
    _out, results = role_play(tmp_path, "capacity_planner", "prereqs",
                              {"capacity_planner_router_url": url, "capacity_planner_router_tls": tls})
    bad = failed(results)
    assert [name.split(" : ")[-1] for name, _res in bad] == ["Check the router TLS of the collector"], (why, bad)
    msg = bad[0][1]["msg"]
    assert msg.startswith("capacity_planner_router_tls=") and "absolute paths" in msg, msg


def test_good_tls_passes_the_check(tmp_path):
    _out, results = role_play(tmp_path, "capacity_planner", "prereqs",
                              {"capacity_planner_router_url": URL, "capacity_planner_router_tls": TLS})
    # the next check wants systemd facts, which this play does not gather
    assert [name.split(" : ")[-1] for name, _res in failed(results)] == ["Check the host runs systemd"]
