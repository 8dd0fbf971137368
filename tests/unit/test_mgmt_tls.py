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


@pytest.mark.parametrize("url, tls, bad", [
    ("amqps://127.0.0.1:55670", GOOD, False), ("amqp://127.0.0.1:55670", None, False),
    ("amqp://127.0.0.1:55670", GOOD, True), ("amqps://127.0.0.1:55670", {}, True)])
def test_the_scheme_must_say_what_the_certificate_says(url, tls, bad):
    got = mgmt_tls.url_errors("management_url", url, tls)
    assert bool(got) is bad and all(url in g for g in got), got


def test_a_plain_local_url_is_upgraded_only_when_the_router_roles_files_are_there():
    everything = mgmt_tls.upgraded("amqp://127.0.0.1:55670", lambda p: True)
    assert everything == ("amqps://127.0.0.1:55670", mgmt_tls.ROUTER_ROLE_FILES)
    assert mgmt_tls.upgraded("amqp://127.0.0.1:55670", lambda p: not p.endswith(".key")) is None
    for url in ("amqps://127.0.0.1:55670", "amqp://10.0.0.5:55670", "amqp://u:p@127.0.0.1:55670", None):
        assert mgmt_tls.upgraded(url, lambda p: True) is None, url


class FakeSession(object):
    """ManagementSession that opens only over TLS (the upgraded listener)."""
    opened = []

    def __init__(self, url, timeout=None, tls=None):
        FakeSession.opened.append((url, tls))
        if not tls:
            from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import \
                RouterManagementError
            raise RouterManagementError("cannot open AMQP management at %s: refused" % url)


def test_an_old_infrastructure_file_reaches_the_upgraded_listener(monkeypatch):
    from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import RouterManagementError
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import routers
    monkeypatch.setattr(routers._client, "ManagementSession", FakeSession)
    FakeSession.opened = []
    routers.open_session({"management_url": "amqp://127.0.0.1:55670", "timeout": 5}, exists=lambda p: True)
    assert FakeSession.opened == [("amqp://127.0.0.1:55670", None),
                                  ("amqps://127.0.0.1:55670", mgmt_tls.ROUTER_ROLE_FILES)]
    # no files of the router role: the first error stands
    FakeSession.opened = []
    with pytest.raises(RouterManagementError):
        routers.open_session({"management_url": "amqp://127.0.0.1:55670"}, exists=lambda p: False)
    assert len(FakeSession.opened) == 1
    # a file that names its certificate: one try, as written
    FakeSession.opened = []
    routers.open_session({"management_url": "amqps://127.0.0.1:55670", "management_tls": GOOD}, exists=lambda p: True)
    assert FakeSession.opened == [("amqps://127.0.0.1:55670", GOOD)]


def test_the_infrastructure_file_refuses_a_certificate_on_a_plain_url(tmp_path):
    import json
    from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra
    path = tmp_path / "standard.json"
    broker = {"name": "b1", "host": "127.0.0.1", "amqp_port": 5672, "user": "router", "password_file": "/p",
              "management_url": "http://127.0.0.1:8161/console/jolokia", "management_user": "admin",
              "management_password": "x", "broker_name": "b1"}
    base = {"routers": [{"id": "r1", "host": "127.0.0.1", "port_offset": 0}], "brokers": [broker],
            "auth_service": {"host": "127.0.0.1", "port": 5680}}
    path.write_text(json.dumps(dict(base, management_url="amqps://127.0.0.1:55670", management_tls=GOOD)))
    assert infra.load_infra(str(path))["management_tls"] == GOOD
    path.write_text(json.dumps(dict(base, management_url="amqp://127.0.0.1:55670", management_tls=GOOD)))
    with pytest.raises(ConfigError, match="management_url: 'amqp://127.0.0.1:55670' must be amqps://"):
        infra.load_infra(str(path))
    path.write_text(json.dumps(dict(base, management_url="amqps://127.0.0.1:55670",
                                    management_tls=dict(GOOD, key_file="key.pem"))))
    with pytest.raises(ConfigError, match="management_tls.key_file: 'key.pem' must be an absolute path"):
        infra.load_infra(str(path))
