"""TLS of the brokers (issue 20 item 4, broker side): the layout's TLS
endpoints and plain acceptors, the routers' TLS connectors to the pool
brokers, the infrastructure file's TLS keys, and the Jolokia client's HTTPS
verification against a CA (a real TLS server on loopback, certificates made
with the cryptography package)."""
import datetime
import json
import os
import ssl
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from ansible.errors import AnsibleFilterError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.enmasse.messaging.plugins.filter import broker as fb
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as ac
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as ent
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as infra_mod

pytestmark = pytest.mark.unit

PORTS = {"amqp": 5672, "core": 61616, "openwire": 61617, "stomp": 61613, "mqtt": 1883, "jolokia": 8161}
BROKER = {"name": "b1", "host": "h1", "amqp_port": 5672, "user": "u", "password_file": "/etc/q/brokers/b1-x.password",
          "management_url": "https://h1:8161/console/jolokia", "management_user": "m", "management_password": "mp",
          "broker_name": "b1"}


# ------------------------------------------------------------ layout
def test_layout_endpoints_are_tls_and_no_plain_acceptor_by_default():
    out = fb.broker_layout([{"name": "demo"}], PORTS, endpoint_host="b.example")
    assert out[0]["plain_ports"] == {}
    assert [(e["name"], e["port"], e["tls"]) for e in out[0]["endpoints"]] == [
        ("amqp", 5672, True), ("core", 61616, True), ("openwire", 61617, True), ("stomp", 61613, True),
        ("mqtt", 1883, True)]
    assert out[0]["management_url"] == "http://127.0.0.1:8161/console/jolokia"


def test_layout_plain_acceptors_on_request_never_on_the_pool():
    out = fb.broker_layout([{"name": "demo"}, {"name": "standard-pool", "type": "pool"}], PORTS,
                           plain_port_offset=10, pool_management_tls=True)
    assert out[0]["plain_ports"] == {"amqp": 5682, "core": 61626, "openwire": 61627, "stomp": 61623, "mqtt": 1893}
    plain = [(e["name"], e["port"]) for e in out[0]["endpoints"] if not e["tls"]]
    assert plain == [("amqp-plain", 5682), ("core-plain", 61626), ("openwire-plain", 61627),
                     ("stomp-plain", 61623), ("mqtt-plain", 1893)]
    # the pool: only the routers connect, over TLS; its Jolokia leaves the host over HTTPS
    assert out[1]["plain_ports"] == {} and all(e["tls"] for e in out[1]["endpoints"])
    assert out[1]["management_url"] == "https://127.0.0.1:8261/console/jolokia"
    assert out[0]["management_url"].startswith("http://")


def test_layout_plain_ports_are_checked_for_clashes():
    with pytest.raises(AnsibleFilterError, match=r"port 61617 \(demo core-plain\)|port 61617 \(demo openwire\)"):
        fb.broker_layout([{"name": "demo"}], PORTS, plain_port_offset=1)
    with pytest.raises(AnsibleFilterError, match=r"broker_plain_port_offset: 0 must be an integer >= 1"):
        fb.broker_layout([{"name": "demo"}], PORTS, plain_port_offset=0)


# ------------------------------------------------------------ connectors and infrastructure file
def test_connector_with_an_ssl_profile_verifies_the_broker_host_name():
    c = ent.connector_entities([dict(BROKER, ssl_profile="brokers")])["enmasse/broker/b1"]
    assert c["sslProfile"] == "brokers" and c["verifyHostname"] is True
    assert c["host"] == "h1" and c["saslMechanisms"] == "PLAIN"
    assert "sslProfile" not in ent.connector_entities([BROKER])["enmasse/broker/b1"]


def _infra(tmp_path, brokers):
    data = {"management_url": "amqp://127.0.0.1:5672", "routers": [{"id": "r1"}], "brokers": brokers,
            "auth_service": {"host": "auth", "port": 5680}, "ledger_dir": str(tmp_path / "l")}
    path = tmp_path / "standard.json"
    path.write_text(json.dumps(data))
    return infra_mod.load_infra(str(path))


def test_infra_accepts_tls_keys_and_names_bad_ones(tmp_path):
    good = dict(BROKER, ssl_profile="brokers", management_ca="/etc/qpid-dispatch/brokers-ca.pem")
    assert _infra(tmp_path, [good])["brokers"][0]["management_ca"] == "/etc/qpid-dispatch/brokers-ca.pem"
    assert _infra(tmp_path, [dict(BROKER, ssl_profile=None, management_ca=None)])
    for bad, text in ((dict(good, ssl_profile="a b"), "brokers[0] (b1): ssl_profile: 'a b' must be the name"),
                      (dict(good, management_ca="ca.pem"), "management_ca: 'ca.pem' must be an absolute path"),
                      (dict(good, management_url="http://h1:8161/console/jolokia"),
                       "management_ca: given, but management_url 'http://h1:8161/console/jolokia' is not https://")):
        with pytest.raises(ConfigError) as e:
            _infra(tmp_path, [bad])
        assert text in " ".join(e.value.errors)


# ------------------------------------------------------------ the Jolokia client over HTTPS
def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(tmp_path, cn):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256()))
    path = tmp_path / ("%s.pem" % cn)
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert, str(path)


def _server_cert(tmp_path, ca_key, ca_cert, names):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name("broker")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cpath, kpath = tmp_path / "server.pem", tmp_path / "server.key"
    cpath.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    kpath.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    return str(cpath), str(kpath)


class _Jolokia(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"status": 200, "value": "2.40.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def https_jolokia(tmp_path):
    """A TLS server on 127.0.0.1 with a certificate of CA 'collection' for
    DNS:localhost only; yields (port, collection CA path, another CA path)."""
    ca_key, ca_cert, ca_path = _ca(tmp_path, "collection")
    other = _ca(tmp_path, "other")[2]
    cert, key = _server_cert(tmp_path, ca_key, ca_cert, [x509.DNSName("localhost")])
    srv = HTTPServer(("127.0.0.1", 0), _Jolokia)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1], ca_path, other
    srv.shutdown()
    srv.server_close()


def test_https_management_is_verified_against_the_ca(https_jolokia):
    port, ca, other = https_jolokia
    url = "https://localhost:%d/console/jolokia" % port
    assert ac.JolokiaClient(url, "m", "p", ca_file=ca, timeout=5).read("x", "Version") == "2.40.0"
    # the client_for path the modules take (the connection file's management_ca)
    conn = {"management_url": url, "management_user": "m", "management_password": "p", "management_ca": ca}
    assert ac.client_for(conn).read("x", "Version") == "2.40.0"


def test_https_management_with_another_ca_or_none_is_refused(https_jolokia):
    port, ca, other = https_jolokia
    url = "https://localhost:%d/console/jolokia" % port
    with pytest.raises(ac.JolokiaError, match="TLS certificate of Artemis management .* refused .*verified against %s"
                       % other):
        ac.JolokiaClient(url, "m", "p", ca_file=other, timeout=5).read("x", "Version")
    # no CA given: the system's trust store, which does not hold the collection's CA: refused, never unverified
    with pytest.raises(ac.JolokiaError, match="system's trust store"):
        ac.JolokiaClient(url, "m", "p", timeout=5).read("x", "Version")


def test_https_management_checks_the_host_name(https_jolokia, tmp_path):
    port, ca, other = https_jolokia
    # the certificate names localhost, not 127.0.0.1 (the same server, another name)
    with pytest.raises(ac.JolokiaError, match="TLS certificate of Artemis management .* refused .*mismatch"):
        ac.JolokiaClient("https://127.0.0.1:%d/console/jolokia" % port, "m", "p", ca_file=ca, timeout=5).read("x")


def test_a_missing_ca_file_is_named(tmp_path):
    missing = os.path.join(str(tmp_path), "nope.pem")
    with pytest.raises(ac.JolokiaError, match="management_ca: %s cannot be read" % missing):
        ac.JolokiaClient("https://127.0.0.1:1/console/jolokia", "m", "p", ca_file=missing)
    # plain HTTP on loopback needs no CA
    assert ac.JolokiaClient("http://127.0.0.1:1/console/jolokia", "m", "p", ca_file=missing)
