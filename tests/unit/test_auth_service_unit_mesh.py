"""The auth_service unit's ExecStart (templates/enmasse-auth-service.service.j2)
carries the mesh probe's flags only with metrics on and routers expected, and
site.yml's auth_service play sets them from the group routers and the
router's management port."""
import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import server

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(REPO, "roles", "auth_service")


def exec_start(**overrides):
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        variables = dict((k, trust_as_template(v) if isinstance(v, str) else v)
                         for k, v in yaml.safe_load(handle).items())
    variables.update(ansible_managed="managed", __auth_service_cert="/c.pem", __auth_service_key="/k.pem",
                     __auth_service_metrics_password_hash_file="/etc/enmasse-auth-service/metrics-password.json",
                     __auth_service_mesh_tls={})
    variables.update(overrides)
    with open(os.path.join(ROLE, "templates", "enmasse-auth-service.service.j2")) as handle:
        text = Templar(loader=DataLoader(), variables=variables).template(trust_as_template(handle.read()))
    return [line for line in text.splitlines() if line.startswith("ExecStart=")][0]


@pytest.mark.parametrize("metrics, expected, probe", [(True, 3, True), (True, 0, False), (False, 3, False)])
def test_mesh_flags_only_with_metrics_and_routers_expected(metrics, expected, probe):
    line = exec_start(auth_service_metrics_enabled=metrics, auth_service_mesh_expected_routers=expected,
                      auth_service_mesh_management_port=55671)
    flags = " --mesh-management-url amqp://127.0.0.1:55671 --mesh-expected-routers 3"
    assert (flags in line) is probe, line
    assert ("--metrics-port 9466" in line) is metrics


def test_with_a_client_certificate_the_probe_uses_amqps_and_names_the_files():
    line = exec_start(auth_service_metrics_enabled=True, auth_service_mesh_expected_routers=3, __auth_service_mesh_tls=TLS)
    assert (" --mesh-management-url amqps://127.0.0.1:55670 --mesh-management-cert /t/p.pem"
            " --mesh-management-key /t/p.key --mesh-management-ca /t/ca.pem --mesh-expected-routers 3") in line, line


TLS = {"cert_file": "/t/p.pem", "key_file": "/t/p.key", "ca_file": "/t/ca.pem"}


def test_the_flags_are_ones_the_service_reads():
    argv = exec_start(auth_service_metrics_enabled=True, auth_service_mesh_expected_routers=2,
                      __auth_service_mesh_tls=TLS).split()[3:]
    seen = {}

    def fake_load(path, overrides):
        seen.update(overrides)
        raise ValueError("stop")

    original, server.load_config = server.load_config, fake_load
    try:
        with pytest.raises(SystemExit):
            server.main(argv)
    finally:
        server.load_config = original
    assert seen["mesh_management_url"] == "amqps://127.0.0.1:55670" and seen["mesh_expected_routers"] == 2
    assert (seen["mesh_management_cert"], seen["mesh_management_key"], seen["mesh_management_ca"]) == (
        "/t/p.pem", "/t/p.key", "/t/ca.pem")


def test_site_sets_the_probe_from_the_group_routers():
    with open(os.path.join(REPO, "playbooks", "site.yml")) as handle:
        plays = yaml.safe_load(handle)
    play = [p for p in plays if any((r.get("role") if isinstance(r, dict) else r) == "enmasse.messaging.auth_service"
                                    for r in p.get("roles", []))][0]
    assert play["vars"]["auth_service_mesh_expected_routers"] == "{{ groups['routers'] | length }}"
    assert "router_management_port" in play["vars"]["auth_service_mesh_management_port"]
    # the probe's own client certificate of the mesh CA the router role made
    assert play["vars"]["auth_service_mesh_management_ca_dir"] == "{{ router_management.ca_dir }}"
    # the same CA subject as the router role's, else the pki role would re-issue the CA certificate
    assert play["vars"]["auth_service_mesh_management_ca_common_name"] == "{{ router_management.ca_common_name }}"
    with open(os.path.join(REPO, "roles", "router", "vars", "main.yml")) as handle:
        router_cn = yaml.safe_load(handle)["__router_management_ca_common_name"]
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        # the role's default: the router role's fact on the host, else the same subject
        assert yaml.safe_load(handle)["auth_service_mesh_management_ca_common_name"] == (
            "{{ router_management.ca_common_name | default('%s') }}" % router_cn)
