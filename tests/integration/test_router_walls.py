"""The walls of a router host (issue 19, items 1 and 2), against real
qdrouterd 1.19 routers configured by the router role itself (role_routers.py:
its qdrouterd.conf template, its mesh CA and router certificates, its broker
password files), a real Artemis pool broker (the broker role's broker.xml for
the instance type ``pool``, with the routers' user) and the auth service, after
a standard address space converged.

* Every TCP port the qdrouterd processes listen on (read from /proc, not a
  list) refuses a client without credentials and with wrong ones - SASL
  ANONYMOUS, PLAIN with a wrong password, TLS without a certificate or with a
  certificate of another CA - except the listener of a space whose
  authentication service is of type ``none`` (EnMasse's: no authentication by
  design). The management listener listens on loopback only and admits a
  local client only with a certificate of the router management CA (SASL
  EXTERNAL): a local user without one can neither manage nor send, a
  router's mesh certificate does not manage, and a management certificate
  does not get into the inter-router listener.
* No attribute of any connector, sslProfile, authServicePlugin or listener a
  management QUERY returns holds a known secret; the connectors name the
  password file; the routers' broker user is not the admin, cannot manage the
  broker (Jolokia, the management address) and messaging through the routers
  to the pool broker works with it."""
import os
import socket
import stat
import tempfile

import pytest

from helpers import JolokiaClient, run_module
from standard_env import StandardEnv, build_router

pytestmark = pytest.mark.integration
proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")
from proton import SSLDomain  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

QDR = "org.apache.qpid.dispatch."
SECRET_TYPES = ("connector", "sslProfile", "authServicePlugin", "listener")
ALICE = ("alice", "alice-walls-secret")
ANON = {"name": "none", "type": "none"}


@pytest.fixture(scope="module")
def env():
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)
    e = StandardEnv(tempfile.mkdtemp(prefix="enmasse-walls-"), prefix, routers=2, brokers=1, role_routers=True).start()
    try:
        for space, auth in (("walls", None), ("open", ANON)):
            args = dict(e.module_args(catalogue_path=e.catalogue_path, connection_file=e.connection_file(space)),
                        name=space, type="standard", plan="standard-unlimited")
            if auth:
                args["authentication_service"] = auth
            res = run_module("address_space", args)
            assert res.rc == 0, res.result
        e.auth_service.write_users("walls", {ALICE[0]: ALICE[1]})
        res = run_module("address", dict(e.module_args(catalogue_path=e.catalogue_path,
                                                       connection_file=e.connection_file("walls")),
                                         address_space="walls", prune=True,
                                         addresses=[{"address": "orders", "type": "queue",
                                                     "plan": "standard-small-queue"}]))
        assert res.rc == 0, res.result
        yield e
    finally:
        e.cleanup()


def space_ports(env):
    """{space: {router id: port}} from the spaces' connection files."""
    import json
    out = {}
    for space in ("walls", "open"):
        with open(env.connection_file(space)) as f:
            eps = json.load(f)["endpoints"]
        out[space] = dict((r.id, ep["port"]) for r, ep in zip(env.routers, eps))
    return out


def listening(pid):
    """(address, port) of every TCP socket process ``pid`` listens on: its
    socket inodes (/proc/<pid>/fd) matched with /proc/net/tcp{,6} (LISTEN)."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                local, state, inode = cols[1], cols[3], cols[9]
                if state != "0A" or inode not in inodes:
                    continue
                addr_hex, port_hex = local.split(":")
                raw = bytes.fromhex(addr_hex)
                # /proc prints each 32-bit word in host (little-endian) order
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                addr = socket.inet_ntop(socket.AF_INET if width == 4 else socket.AF_INET6, raw)
                out.append((addr, int(port_hex, 16)))
    return sorted(set(out))


def refused(url, **kw):
    """The error of a connection attempt that must fail; the test fails if
    the connection opens."""
    try:
        conn = BlockingConnection(url, timeout=10, **kw)
    except Exception as e:  # noqa: BLE001 - proton raises several kinds
        return "%s: %s" % (type(e).__name__, e)
    try:
        # a connection that opened may still be closed at once by the router
        snd = conn.create_sender("walls/orders")
        snd.close()
    except Exception as e:  # noqa: BLE001
        conn.close()
        return "%s: %s" % (type(e).__name__, e)
    conn.close()
    pytest.fail("%s let a client in (%s)" % (url, kw))


def other_ca(tmp_path):
    """A CA that is not the mesh's, and a certificate it signed for 127.0.0.1."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("rogue CA")).issuer_name(name("rogue CA"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(name("r1")).issuer_name(name("rogue CA"))
            .public_key(key.public_key()).serial_number(2).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("r1"), x509.DNSName("127.0.0.1")]), False)
            .sign(ca_key, hashes.SHA256()))
    paths = {}
    for label, data in (("ca", ca.public_bytes(serialization.Encoding.PEM)),
                        ("cert", cert.public_bytes(serialization.Encoding.PEM)),
                        ("key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))):
        paths[label] = str(tmp_path / ("rogue-%s.pem" % label))
        with open(paths[label], "wb") as f:
            f.write(data)
    return paths


def mesh_cert(env, router):
    """(certificate, key) of ``router``'s inter-router (mesh CA) identity."""
    tls_dir = os.path.join(env.base_dir, "role", router.id, "tls")
    return os.path.join(tls_dir, "router.pem"), os.path.join(tls_dir, "router.key")


def tls_domain(ca_file, cert=None, key=None):
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(ca_file)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER, ca_file)
    if cert:
        domain.set_credentials(cert, key, None)
    return domain


def test_every_port_of_every_router_refuses_clients_without_or_with_wrong_credentials(env, tmp_path):
    role_dir = os.path.join(env.base_dir, "role")
    mesh_ca = os.path.join(role_dir, "credentials", "router-mesh-routers", "ca.pem")
    rogue = other_ca(tmp_path)
    ports = space_ports(env)
    for r in env.routers:
        found = listening(r.proc.pid)
        assert found, "qdrouterd %s listens on nothing?" % r.id
        seen = set()
        for addr, port in found:
            where = "%s %s:%d" % (r.id, addr, port)
            url = "127.0.0.1:%d" % port
            if port == r.management_port:
                assert addr == "127.0.0.1", "%s: management must listen on loopback only" % where
                seen.add("management")
                # the client trusts the listener's certificate (the management CA): what refuses is the router
                mgmt_ca = r.management_tls["ca_file"]
                errors = [refused(url, allowed_mechs="ANONYMOUS"),
                          refused(url, allowed_mechs="ANONYMOUS EXTERNAL PLAIN"),
                          refused("amqps://" + url, ssl_domain=tls_domain(mgmt_ca), allowed_mechs="ANONYMOUS"),
                          refused("amqps://" + url, ssl_domain=tls_domain(mgmt_ca), allowed_mechs="EXTERNAL"),
                          refused("amqps://" + url, ssl_domain=tls_domain(mgmt_ca, rogue["cert"], rogue["key"]),
                                  allowed_mechs="EXTERNAL"),
                          # a router's own mesh certificate: another CA for this listener
                          refused("amqps://" + url, ssl_domain=tls_domain(mgmt_ca, *mesh_cert(env, r)),
                                  allowed_mechs="EXTERNAL")]
                assert all(errors), (where, errors)
                # the positive control: root's management certificate (the modules') gets in
                with r.session(timeout=10) as s:
                    assert s.router_id() == r.id
                continue
            if port == ports["open"][r.id]:
                # authentication service type none: anyone who reaches the port is a client of "open"
                BlockingConnection(env.client_url(port), timeout=10, allowed_mechs="ANONYMOUS",
                                   **env.client_kwargs()).close()
                seen.add("open (no authentication by design)")
                continue
            errors = [refused(url, allowed_mechs="ANONYMOUS"),
                      refused(url, user=ALICE[0], password="wrong", allowed_mechs="PLAIN", allow_insecure_mechs=True),
                      refused(url, user="admin", password="admin", allowed_mechs="PLAIN", allow_insecure_mechs=True)]
            if port == r.inter_router_port:
                seen.add("inter-router")
                errors += [refused("amqps://" + url, ssl_domain=tls_domain(mesh_ca), allowed_mechs="EXTERNAL"),
                           refused("amqps://" + url, ssl_domain=tls_domain(mesh_ca, rogue["cert"], rogue["key"]),
                                   allowed_mechs="EXTERNAL"),
                           # a management client certificate (root's, the auth service probe's CA) is no router's
                           refused("amqps://" + url, ssl_domain=tls_domain(
                               mesh_ca, r.management_tls["cert_file"], r.management_tls["key_file"]),
                               allowed_mechs="EXTERNAL")]
            elif port == ports["walls"][r.id]:
                seen.add("walls")
                # the positive control: the right credentials get in on the same port
                BlockingConnection(env.client_url(port), timeout=10, user=ALICE[0], password=ALICE[1],
                                   allowed_mechs="PLAIN", **env.client_kwargs()).close()
            else:
                seen.add("other %d" % port)
            assert all(errors), (where, errors)
        assert seen == {"management", "inter-router", "walls", "open (no authentication by design)"}, (r.id, found)


def test_the_mesh_links_are_tls_with_sasl_external(env):
    with env.session() as s:
        replies = s.query_many([(r.id, QDR + "connection", []) for r in env.routers])
    for r, (rows, failed) in zip(env.routers, replies):
        assert failed is None, failed
        mesh = [c for c in rows if str(c.get("role", "")).startswith("inter-router")]
        assert len(mesh) == len(env.routers) - 1, (r.id, mesh)
        assert all(c["isEncrypted"] and c["sasl"] == "EXTERNAL" and c["isAuthenticated"] for c in mesh), mesh


def test_the_mesh_ca_key_and_router_keys_stay_private(env):
    role_dir = os.path.join(env.base_dir, "role")
    ca_dir = os.path.join(role_dir, "credentials", "router-mesh-routers")
    for name in ["ca.key"] + ["%s.key" % r.id for r in env.routers]:
        assert stat.S_IMODE(os.stat(os.path.join(ca_dir, name)).st_mode) == 0o600, name
    for r in env.routers:
        assert stat.S_IMODE(os.stat(os.path.join(role_dir, r.id, "tls", "router.key")).st_mode) == 0o640
        assert stat.S_IMODE(os.stat(os.path.join(role_dir, r.id, "tls", "management-server.key")).st_mode) == 0o640
        # root's management key: whoever reads it manages the router
        assert stat.S_IMODE(os.stat(r.management_tls["key_file"]).st_mode) == 0o600
    for path in env.password_files.values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640, path


def all_attributes(env):
    """Every row of every entity type that could hold a secret, on every router."""
    with env.session() as s:
        ids = [r.id for r in env.routers]
        queries = [(rid, QDR + t, []) for rid in ids for t in SECRET_TYPES]
        out = []
        for (rid, etype, unused), (rows, failed) in zip(queries, s.query_many(queries)):
            assert failed is None, (rid, etype, failed)
            out += [(rid, etype, row) for row in rows]
        return out


def test_no_management_query_returns_a_secret(env):
    broker = env.brokers[0]
    secrets = {broker.router_password, broker.management_password, broker.messaging_password, ALICE[1]}
    for r in env.routers:
        with open(os.path.join(env.base_dir, "role", r.id, "tls", "router.key")) as f:
            secrets.add(f.read().strip())
    rows = all_attributes(env)
    leaks = [(rid, etype, row.get("name"), key) for rid, etype, row in rows for key, value in row.items()
             if isinstance(value, str) and any(s in value for s in secrets)]
    assert not leaks, leaks
    connectors = [(rid, row) for rid, etype, row in rows if etype.endswith(".connector") and
                  str(row.get("name", "")).startswith("enmasse/broker/")]
    assert len(connectors) == len(env.routers), connectors
    for rid, row in connectors:
        assert row["saslUsername"] == broker.router_user
        assert row["saslPassword"] == "file:" + env.password_files[broker.name], (rid, row["saslPassword"])
        assert row["connectionStatus"] == "SUCCESS", (rid, row)


def test_the_routers_broker_user_is_not_the_admin_and_cannot_manage(env):
    broker = env.brokers[0]
    assert broker.router_user != broker.management_user
    with pytest.raises(Exception) as e:
        JolokiaClient(broker.management_url, broker.router_user, broker.router_password).read(
            'org.apache.activemq.artemis:broker="%s"' % broker.name, "AddressNames")
    assert "40" in str(e.value), e.value  # 401/403
    # nor through the management address
    conn = BlockingConnection("127.0.0.1:%d" % broker.amqp_port, timeout=15, user=broker.router_user,
                              password=broker.router_password, allowed_mechs="PLAIN", allow_insecure_mechs=True)
    try:
        with pytest.raises(Exception) as e:
            conn.create_sender("activemq.management")
        assert "not authorized" in str(e.value).lower() or "unauthorized" in str(e.value).lower(), e.value
    finally:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - the broker may have closed it
            pass


def roundtrip(env, body):
    """Send ``body`` to the queue ``orders`` of space walls through the first
    router (it lands on the pool broker), receive it through the second."""
    from proton import Message
    ports = space_ports(env)
    first, second = env.routers[0].id, env.routers[1].id
    snd_conn = BlockingConnection(env.client_url(ports["walls"][first]), timeout=15, user=ALICE[0],
                                  password=ALICE[1], allowed_mechs="PLAIN", **env.client_kwargs())
    snd = snd_conn.create_sender("orders")
    snd.send(Message(body=body, durable=True))
    snd_conn.close()
    assert env.brokers[0].jolokia().read(
        'org.apache.activemq.artemis:broker="%s",component=addresses,address="walls/orders",subcomponent=queues,'
        'routing-type="anycast",queue="walls/orders"' % env.brokers[0].name, "MessageCount") == 1
    rcv_conn = BlockingConnection(env.client_url(ports["walls"][second]), timeout=15, user=ALICE[0],
                                  password=ALICE[1], allowed_mechs="PLAIN", **env.client_kwargs())
    rcv = rcv_conn.create_receiver("orders")
    msg = rcv.receive(timeout=15)
    rcv.accept()
    rcv_conn.close()
    return msg.body


def test_messaging_through_the_routers_to_the_pool_broker_with_the_routers_user(env):
    assert roundtrip(env, "through the wall") == "through the wall"


def connectors(env):
    return [row for rid, etype, row in all_attributes(env)
            if etype.endswith(".connector") and str(row.get("name", "")).startswith("enmasse/broker/")]


def test_a_changed_router_password_converges(env):
    """A new password of the routers' broker user: the role writes a new
    file (and removes the old one), the converge re-creates the connectors
    with it, they log in, and messaging goes on."""
    import secrets as _secrets
    import time
    broker = env.brokers[0]
    old_file = env.password_files[broker.name]
    new_password = _secrets.token_hex(12)
    users = os.path.join(broker.instance, "etc", "artemis-users.properties")
    with open(users) as f:
        text = f.read()
    with open(users, "w") as f:  # re-read by the broker at the next login
        f.write(text.replace("%s = %s" % (broker.router_user, broker.router_password),
                             "%s = %s" % (broker.router_user, new_password)))
    broker.router_password = new_password
    env.write_password_files()
    env.write_infra()
    new_file = env.password_files[broker.name]
    assert new_file != old_file and not os.path.exists(old_file) and os.path.exists(new_file)
    res = run_module("address_space", dict(env.module_args(catalogue_path=env.catalogue_path,
                                                           connection_file=env.connection_file("walls")),
                                           name="walls", type="standard", plan="standard-unlimited"))
    assert res.rc == 0 and res.result["changed"], res.result
    assert new_password not in repr(res.result)
    deadline = time.time() + 60
    while True:
        rows = connectors(env)
        if all(r["saslPassword"] == "file:" + new_file and r["connectionStatus"] == "SUCCESS" for r in rows):
            break
        assert time.time() < deadline, rows
        time.sleep(1)
    again = run_module("address_space", dict(env.module_args(catalogue_path=env.catalogue_path,
                                                             connection_file=env.connection_file("walls")),
                                             name="walls", type="standard", plan="standard-unlimited"))
    assert again.rc == 0 and not again.result["changed"], again.result
    assert roundtrip(env, "after the new password") == "after the new password"
