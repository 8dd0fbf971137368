"""auth/mgmt_tls.py: how a local client reaches a router's management
listener (TLS with a client certificate of the mesh CA, SASL EXTERNAL) -
the settings' checks, the URL and the client SSL domain."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import mesh, mgmt_tls

GOOD = {"cert_file": "/etc/qpid-dispatch/tls/router.pem", "key_file": "/etc/qpid-dispatch/tls/router.key",
        "ca_file": "/etc/qpid-dispatch/tls/ca.pem"}


@pytest.mark.parametrize("tls", [None, {}, GOOD])
def test_good_settings_have_no_error(tls):
    assert mgmt_tls.errors("management_tls", tls) == []


@pytest.mark.parametrize("tls, words", [
    ("/etc/cert.pem", ["management_tls: '/etc/cert.pem' must be a mapping"]),
    (dict(GOOD, password="x"), ["unknown key password"]),
    (dict(GOOD, key_file="router.key"), ["management_tls.key_file: 'router.key' must be an absolute path"]),
    ({"cert_file": "/c.pem"}, ["management_tls.key_file: None", "management_tls.ca_file: None"]),
])
def test_bad_settings_name_the_field_and_the_value(tls, words):
    got = " | ".join(mgmt_tls.errors("management_tls", tls))
    assert all(w in got for w in words), got


def test_the_url_follows_the_certificate():
    assert mgmt_tls.url(55670, GOOD) == "amqps://127.0.0.1:55670"
    assert mgmt_tls.url(55670, {}) == "amqp://127.0.0.1:55670"


def test_the_domain_presents_the_certificate_and_trusts_only_the_ca():
    calls = []

    class Domain(object):
        MODE_CLIENT, VERIFY_PEER = "client", "verify-peer"

        def __init__(self, mode):
            calls.append(("mode", mode))

        def set_credentials(self, cert, key, password):
            calls.append(("credentials", cert, key, password))

        def set_trusted_ca_db(self, ca):
            calls.append(("ca", ca))

        def set_peer_authentication(self, mode):
            calls.append(("peer", mode))

    fake = type("proton", (), {"SSLDomain": Domain})
    assert mgmt_tls.ssl_domain(fake, None) is None and calls == []
    mgmt_tls.ssl_domain(fake, GOOD)
    assert calls == [("mode", "client"), ("credentials", GOOD["cert_file"], GOOD["key_file"], None),
                     ("ca", GOOD["ca_file"]), ("peer", "verify-peer")]


def probe_config(**kw):
    config = dict(mesh.DEFAULTS, metrics_port=9466, mesh_expected_routers=2,
                  mesh_management_url="amqps://127.0.0.1:55670")
    config.update(kw)
    return config


def test_the_probe_takes_all_three_files_or_none():
    config = probe_config(mesh_management_cert="/p.pem", mesh_management_key="/p.key", mesh_management_ca="/ca.pem")
    mesh.check_config(config)
    assert mesh.management_tls(config) == {"cert_file": "/p.pem", "key_file": "/p.key", "ca_file": "/ca.pem"}
    with pytest.raises(ValueError, match="mesh_management.ca_file: ''"):
        mesh.check_config(probe_config(mesh_management_cert="/p.pem", mesh_management_key="/p.key"))
    assert mesh.management_tls(probe_config(mesh_management_url="amqp://127.0.0.1:1")) == {}


def test_the_probe_with_a_certificate_needs_amqps():
    with pytest.raises(ValueError, match="must be amqps://"):
        mesh.check_config(probe_config(mesh_management_url="amqp://127.0.0.1:55670", mesh_management_cert="/p.pem",
                                       mesh_management_key="/p.key", mesh_management_ca="/ca.pem"))
