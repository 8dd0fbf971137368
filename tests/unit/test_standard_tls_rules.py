"""TLS of the standard spaces' client listeners and of the routers' link to
the auth service (module_utils/standard: entities, infra, service), without
routers: what the modules ask the routers for, and the infrastructure file's
rules."""
import json

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.router import reader
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as infra_mod
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as svc


BROKERS = [{"name": "b1", "host": "h1", "amqp_port": 5672, "user": "u", "password_file": "/etc/q/brokers/b1.password",
            "management_url": "http://h1:8161/console/jolokia", "management_user": "m",
            "management_password": "mp", "broker_name": "b1"}]


def write(tmp_path, **extra):
    data = {"management_url": "amqp://127.0.0.1:5672", "routers": [{"id": "r1"}, {"id": "r2", "port_offset": 100}],
            "brokers": BROKERS, "auth_service": {"host": "127.0.0.1", "port": 5680}, "ledger_dir": str(tmp_path / "l")}
    data.update(extra)
    path = tmp_path / "standard.json"
    path.write_text(json.dumps(data))
    return str(path)


def space(inf, anonymous=False):
    s = svc.StandardService(inf)
    record = {"authentication_service": {"type": "none"}} if anonymous else {}
    return svc.space_level(s, "s", 5701, record)


def test_by_default_the_space_listener_is_tls_only_and_the_auth_plugin_uses_tls(tmp_path):
    inf = infra_mod.load_infra(write(tmp_path))
    assert inf["client_tls"] == {"ssl_profile": "clients", "plain": False}
    e = space(inf)
    assert e["enmasse/s/amqp"]["sslProfile"] == "clients" and e["enmasse/s/amqp"]["requireSsl"] is True
    assert e["enmasse/s/auth"]["sslProfile"] == "auth-service"
    # EnMasse's authentication service type none: no SASL, TLS all the same
    anon = space(inf, anonymous=True)["enmasse/s/amqp"]
    assert anon["sslProfile"] == "clients" and anon["requireSsl"] is True
    eps = svc.endpoints(svc.StandardService(inf), 5701)
    assert [(x["name"], x["port"], x["protocols"]) for x in eps] == [
        ("amqps-r1", 5701, ["amqps"]), ("amqps-r2", 5801, ["amqps"])]


def test_plain_amqp_only_when_turned_on(tmp_path):
    both = infra_mod.load_infra(write(tmp_path, client_plain=True))
    lst = space(both)["enmasse/s/amqp"]
    # one port takes TLS and plain TCP: requireSsl false is the router's default, left out (no perpetual diff)
    assert lst["sslProfile"] == "clients" and "requireSsl" not in lst
    assert svc.endpoints(svc.StandardService(both), 5701)[0]["protocols"] == ["amqps", "amqp"]
    plain = infra_mod.load_infra(write(tmp_path, client_plain=True, client_ssl_profile="",
                                       auth_service={"host": "127.0.0.1", "port": 5680, "ssl_profile": ""}))
    e = space(plain)
    assert "sslProfile" not in e["enmasse/s/amqp"] and "requireSsl" not in e["enmasse/s/amqp"]
    assert "sslProfile" not in e["enmasse/s/auth"]
    assert svc.endpoints(svc.StandardService(plain), 5701)[0]["name"] == "amqp-r1"


def test_the_attributes_are_ones_the_reader_knows(tmp_path):
    """The router reader normalises what it reads against the attributes the
    collection sets: sslProfile and requireSsl must be among them, or every
    run would see a change."""
    e = space(infra_mod.load_infra(write(tmp_path)))
    for name, kind in (("enmasse/s/amqp", "listener"), ("enmasse/s/auth", "authServicePlugin")):
        assert set(e[name]) - {"type"} <= set(reader.ATTRIBUTES[kind]), name


@pytest.mark.parametrize("extra, words", [
    ({"client_ssl_profile": "", "client_plain": False}, "neither TLS nor plain TCP"),
    ({"client_plain": "yes"}, "client_plain: 'yes' must be true or false"),
    ({"client_ssl_profile": "my profile"}, "client_ssl_profile: 'my profile' must be the name of an sslProfile"),
    ({"auth_service": {"host": "h", "port": 1, "ssl_profile": 3}}, "auth_service.ssl_profile: 3"),
])
def test_bad_tls_keys_are_refused_naming_the_key(tmp_path, extra, words):
    with pytest.raises(ConfigError) as e:
        infra_mod.load_infra(write(tmp_path, **extra))
    assert words in str(e.value)
