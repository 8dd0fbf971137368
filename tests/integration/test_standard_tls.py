"""TLS of a standard space's clients and of the routers' link to the auth
service (issue 20, item 4, the router side), against a real qdrouterd 1.19
configured by the router role itself (role_routers.py: its qdrouterd.conf
with the sslProfiles ``clients`` and ``auth-service``, its certificate from the
collection's CA made through the pki role), a real Artemis pool broker, the
auth service on TLS with a certificate of the same CA, and real AMQP clients
(python-qpid-proton):

* a client trusting the collection's CA connects with SASL PLAIN, is
  authenticated by the auth service over TLS, and sends and receives;
* plain TCP to the space's listener is refused, and so is a router a client
  cannot verify (it trusts another CA);
* a router whose sslProfile for the auth service trusts another CA cannot
  reach the service: its clients are refused, the service sees no request;
* with plain AMQP turned on (client_plain) one port takes both."""
import json
import os
import tempfile

import pytest

from helpers import run_module
from standard_env import StandardEnv, LocalCA, build_router, client_domain

pytestmark = pytest.mark.integration
proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

QDR = "org.apache.qpid.dispatch."
ALICE = ("alice", "alice-tls-secret")
QUEUE = [{"address": "orders", "type": "queue", "plan": "standard-small-queue"}]


@pytest.fixture(scope="module")
def env():
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)  # CI builds qdrouterd: a missing router is a failure, not a skip
    e = StandardEnv(tempfile.mkdtemp(prefix="enmasse-tls-"), prefix, routers=1, brokers=1, role_routers=True).start()
    try:
        make_space(e, "tls-s", e.infra_file)
        yield e
    finally:
        e.cleanup()


def make_space(env, space, infra_file):
    args = dict(infrastructure_file=infra_file, catalogue_path=env.catalogue_path,
                connection_file=env.connection_file(space))
    res = run_module("address_space", dict(args, name=space, type="standard", plan="standard-unlimited"))
    assert res.rc == 0, res.result
    res = run_module("address", dict(args, address_space=space, addresses=QUEUE, prune=True))
    assert res.rc == 0, res.result
    env.auth_service.write_users(space, {ALICE[0]: ALICE[1]})
    return res


def endpoint(env, space):
    with open(env.connection_file(space)) as f:
        return json.load(f)["endpoints"][0]


def connect(url, **kw):
    return BlockingConnection(url, timeout=15, user=ALICE[0], password=ALICE[1], allowed_mechs="PLAIN", **kw)


def refusal(url, **kw):
    """What the client sees when its connection is refused (the test fails if it opens)."""
    try:
        conn = connect(url, **kw)
    except Exception as e:  # noqa: BLE001 - proton raises several kinds
        return "%s: %s" % (type(e).__name__, e)
    conn.close()
    pytest.fail("%s let the client in (%s)" % (url, kw))


def round_trip(conn, body):
    snd = conn.create_sender("orders")
    snd.send(Message(body=body, durable=True))
    rcv = conn.create_receiver("orders")
    msg = rcv.receive(timeout=15)
    rcv.accept()
    return msg.body


def test_endpoints_report_amqps_and_the_listener_requires_tls(env):
    ep = endpoint(env, "tls-s")
    assert ep["name"] == "amqps-r1" and ep["protocols"] == ["amqps"], ep
    with env.session() as s:
        rows = s.query(QDR + "listener", ["name", "sslProfile", "requireSsl"])
    lst = [r for r in rows if r["name"] == "enmasse/tls-s/amqp"]
    assert lst and lst[0]["sslProfile"] == "clients" and lst[0]["requireSsl"] is True, rows


def test_a_client_trusting_the_collection_ca_sends_and_receives_over_tls(env):
    ep = endpoint(env, "tls-s")
    # the CA the router role made on the controller (credentials/ca), not the mesh CA
    ca = os.path.join(env.base_dir, "role", "credentials", "ca", "ca.pem")
    conn = connect("amqps://127.0.0.1:%d" % ep["port"], ssl_domain=client_domain(ca))
    try:
        assert round_trip(conn, "over tls") == "over tls"
        with env.session() as s:
            rows = s.query(QDR + "connection", ["user", "isEncrypted", "sasl", "isAuthenticated", "role"])
    finally:
        conn.close()
    mine = [r for r in rows if r["user"] == ALICE[0]]
    assert mine and mine[0]["isEncrypted"] and mine[0]["isAuthenticated"] and mine[0]["sasl"] == "PLAIN", rows


def test_plain_tcp_to_the_space_listener_is_refused(env):
    ep = endpoint(env, "tls-s")
    err = refusal("amqp://127.0.0.1:%d" % ep["port"], allow_insecure_mechs=True)
    # requireSsl: the router takes the plain SASL header for a broken TLS handshake and aborts
    assert "ConnectionException" in err and "framing-error" in err and "no protocol header found" in err, err


def test_a_client_that_trusts_another_ca_refuses_the_router(env, tmp_path):
    ep = endpoint(env, "tls-s")
    rogue = LocalCA(str(tmp_path / "rogue"), name="rogue CA")
    err = refusal("amqps://127.0.0.1:%d" % ep["port"], ssl_domain=client_domain(rogue.cert_file))
    assert "SSL Failure" in err and "certificate verify failed" in err, err


def test_router_reaches_the_auth_service_over_tls(env):
    connect("amqps://127.0.0.1:%d" % endpoint(env, "tls-s")["port"], ssl_domain=env.client_domain()).close()
    with open(env.auth_service.dir + "/service.log") as f:
        log = f.read()
    # the service serves TLS only, and it authenticated alice of tls-s (over the router's TLS link)
    assert "(TLS)" in log and "realm 'tls-s' user 'alice': authenticated" in log, log[-2000:]
    with env.session() as s:
        rows = s.query(QDR + "authServicePlugin", ["name", "sslProfile"])
    assert [r["sslProfile"] for r in rows if r["name"] == "enmasse/tls-s/auth"] == ["auth-service"], rows


def test_a_router_trusting_another_ca_for_the_auth_service_refuses_its_clients(env, tmp_path):
    """The space's authServicePlugin names an sslProfile whose CA did not
    sign the auth service's certificate: the router cannot reach the service,
    the client is refused and the service never sees its realm."""
    rogue = LocalCA(str(tmp_path / "rogue-auth"), name="rogue CA")
    with env.session() as s:
        s.create(QDR + "sslProfile", "auth-wrong-ca", {"caCertFile": rogue.cert_file})
    with open(env.infra_file) as f:
        data = json.load(f)
    data["auth_service"] = dict(data["auth_service"], ssl_profile="auth-wrong-ca")
    other = os.path.join(env.base_dir, "standard-wrong-ca.json")
    with open(other, "w") as f:
        json.dump(data, f)
    make_space(env, "tls-w", other)
    ep = endpoint(env, "tls-w")
    err = refusal("amqps://127.0.0.1:%d" % ep["port"], ssl_domain=env.client_domain())
    with open(env.auth_service.dir + "/service.log") as f:
        # the realm, not the bare name: the service's own temporary path can hold "tls-w" (a CI run's did)
        assert "realm 'tls-w'" not in f.read()
    # the same client, user and password get in where the router trusts the right CA
    conn = connect("amqps://127.0.0.1:%d" % endpoint(env, "tls-s")["port"], ssl_domain=env.client_domain())
    conn.close()
    # qdrouterd 1.19 answers the client with a bare sasl-outcome (code 1, auth) when its relay to the
    # auth service fails: the client reports a framing error; it never gets a connection
    assert "ConnectionException" in err and "framing-error" in err, err


def test_plain_amqp_only_when_turned_on(env):
    with open(env.infra_file) as f:
        data = json.load(f)
    data["client_plain"] = True
    both = os.path.join(env.base_dir, "standard-plain.json")
    with open(both, "w") as f:
        json.dump(data, f)
    make_space(env, "tls-p", both)
    ep = endpoint(env, "tls-p")
    assert ep["protocols"] == ["amqps", "amqp"], ep
    for url, kw in (("amqp://127.0.0.1:%d", {"allow_insecure_mechs": True}),
                    ("amqps://127.0.0.1:%d", {"ssl_domain": env.client_domain()})):
        conn = connect(url % ep["port"], **kw)
        try:
            assert round_trip(conn, url) == url
        finally:
            conn.close()


def test_a_replaced_certificate_is_used_by_the_next_client_without_a_restart(env, tmp_path):
    """Rotation: qdrouterd 1.19 reads the sslProfile's files for each new
    connection, so the role copies new files and restarts nothing
    (docs/router-role.md). Here the router's clients.pem/.key are replaced by
    a certificate of another CA: the next client trusting the collection's CA
    refuses the router, one trusting the new CA gets in, the same process.
    With the collection's patch (one TLS domain per listener, rebuilt when the
    files' stat changes) a client connects first, so that the listener holds
    a built domain that the replacement must invalidate, and the files are
    rewritten in place (same inode: the size and mtime tell)."""
    tls_dir = os.path.join(env.base_dir, "role", env.routers[0].id, "tls")
    pid = env.routers[0].proc.pid
    port = endpoint(env, "tls-s")["port"]
    connect("amqps://127.0.0.1:%d" % port, ssl_domain=env.client_domain()).close()
    saved = {}
    for name in ("clients.pem", "clients.key"):
        with open(os.path.join(tls_dir, name), "rb") as f:
            saved[name] = f.read()
    other = LocalCA(str(tmp_path / "next"), name="next CA")
    cert, key = other.issue("router-next")
    try:
        for src, name in ((cert, "clients.pem"), (key, "clients.key")):
            with open(src, "rb") as f, open(os.path.join(tls_dir, name), "wb") as g:
                g.write(f.read())
        err = refusal("amqps://127.0.0.1:%d" % port, ssl_domain=env.client_domain())
        assert "certificate verify failed" in err, err
        conn = connect("amqps://127.0.0.1:%d" % port, ssl_domain=client_domain(other.cert_file))
        assert round_trip(conn, "new certificate") == "new certificate"
        conn.close()
    finally:
        for name, data in saved.items():
            with open(os.path.join(tls_dir, name), "wb") as g:
                g.write(data)
    connect("amqps://127.0.0.1:%d" % port, ssl_domain=env.client_domain()).close()
    assert env.routers[0].proc.pid == pid and env.routers[0].proc.poll() is None
