"""A standard infrastructure on this machine for the integration tests: a full
mesh of real qdrouterd 1.19 routers (built from the vendor archive by
scripts/build-router.sh) and a pool of real Artemis brokers (helpers.ArtemisBroker,
broker.xml from the broker role), on free loopback ports, plus the
infrastructure file the standard modules read."""
import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import routers
from helpers import ArtemisBroker, free_port

# the static sslProfiles of the router role's qdrouterd.conf (the infra file's defaults)
CLIENT_SSL_PROFILE = "clients"
AUTH_SSL_PROFILE = "auth-service"


class LocalCA(object):
    """A CA on disk (``ca.pem``, ``ca.key`` in ``directory``) and the server
    certificates it signs, with the ``cryptography`` package the collection's
    community.crypto needs anyway. ``existing``: (cert, key) paths of a CA made
    elsewhere (the collection's, made by the router role through the pki role)."""

    def __init__(self, directory, name="enmasse test CA", existing=None):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        if existing:
            self.cert_file, key_file = existing
            with open(self.cert_file, "rb") as f:
                self.cert = x509.load_pem_x509_certificate(f.read())
            with open(key_file, "rb") as f:
                self.key = serialization.load_pem_private_key(f.read(), None)
            return
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = self._builder(name, name, self.key.public_key(), 1).add_extension(
            x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(self.key, hashes.SHA256())
        self.cert_file = self._write("ca.pem", self.cert.public_bytes(serialization.Encoding.PEM))
        self._write("ca.key", self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))

    @staticmethod
    def _builder(subject, issuer, public_key, serial):
        import datetime
        from cryptography import x509
        from cryptography.x509.oid import NameOID
        now = datetime.datetime.now(datetime.timezone.utc)
        return (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                .public_key(public_key).serial_number(serial)
                .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2)))

    def _write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(data)
        return path

    def issue(self, name, hosts=("127.0.0.1", "localhost"), client=False):
        """(certificate, key) files of a server certificate for ``hosts``
        (each a DNS entry, an address an IP entry too: proton checks the DNS
        entries only, Python's ssl the IP ones); ``client``: a client
        certificate (extended key usage clientAuth)."""
        import ipaddress
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
        key = ec.generate_private_key(ec.SECP256R1())
        sans = [x509.DNSName(h) for h in hosts]
        for h in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                pass
        issuer = self.cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        cert = (self._builder(name, issuer, key.public_key(), int.from_bytes(os.urandom(8), "big"))
                .add_extension(x509.SubjectAlternativeName(sans), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH if client
                                                      else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(self.key, hashes.SHA256()))
        return (self._write(name + ".pem", cert.public_bytes(serialization.Encoding.PEM)),
                self._write(name + ".key", key.private_bytes(serialization.Encoding.PEM,
                                                             serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption())))


def client_domain(ca_file):
    """A proton client SSLDomain trusting ``ca_file`` and checking the
    server's name (as a client of a space should)."""
    from proton import SSLDomain
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(ca_file)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME, ca_file)
    return domain


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def build_router():
    """The install prefix of qdrouterd (built once, cached), or None with the
    reason when it cannot be had (routers.router_prefix)."""
    return routers.router_prefix()


def router_env(prefix):
    return dict(os.environ, **routers.prefix_env(prefix))


def _listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


ALLOW_ALL = {"users": "*", "remoteHosts": "*", "sources": "*", "targets": "*", "allowDynamicSource": True,
             "allowAnonymousSender": True, "allowWaypointLinks": True, "allowDynamicLinkRoutes": True,
             "allowAdminStatusUpdate": True}


class Router(object):
    def __init__(self, env, index):
        self.env = env
        self.index = index
        self.id = "r%d" % (index + 1)
        self.management_port = free_port()
        self.inter_router_port = free_port()
        self.dir = os.path.join(env.base_dir, self.id)
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        self.conf_file = None  # a qdrouterd.conf the router role rendered (StandardEnv role_routers)
        self.management_tls = None  # with it, the client certificate its management listener requires

    def config(self):
        ents = [["router", dict(self.env.router_settings, mode="interior", id=self.id)],
                ["policy", {"enableVhostPolicy": True, "defaultVhost": "$default"}],
                ["vhost", {"hostname": "$default", "allowUnknownUser": True, "groups": {"$default": ALLOW_ALL}}],
                ["listener", {"name": "management", "host": "127.0.0.1", "port": str(self.management_port),
                              "role": "normal", "authenticatePeer": False}],
                # what the router role's qdrouterd.conf has: the space listeners and auth plugins name them
                ["sslProfile", {"name": CLIENT_SSL_PROFILE, "certFile": self.env.router_cert[0],
                                "privateKeyFile": self.env.router_cert[1]}],
                ["sslProfile", {"name": AUTH_SSL_PROFILE, "caCertFile": self.env.ca.cert_file}],
                ["listener", {"name": "inter-router", "host": "127.0.0.1", "port": str(self.inter_router_port),
                              "role": "inter-router", "authenticatePeer": False}]]
        if self.env.broker_tls:  # as the router role's qdrouterd.conf: the CA of the brokers' certificates
            ents.append(["sslProfile", {"name": "brokers", "caCertFile": self.env.tls_files["ca"]}])
        for other in self.env.routers[:self.index]:
            ents.append(["connector", {"name": "mesh-%s" % other.id, "host": "127.0.0.1",
                                       "port": str(other.inter_router_port), "role": "inter-router"}])
        return ents

    def start(self):
        path = self.conf_file or os.path.join(self.dir, "qdrouterd.json")
        if not self.conf_file:
            with open(path, "w") as f:
                json.dump(self.config(), f)
        log = open(os.path.join(self.dir, "qdrouterd.log"), "a")
        self.proc = subprocess.Popen([os.path.join(self.env.prefix, "sbin", "qdrouterd"), "-c", path],
                                     env=router_env(self.env.prefix), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while not _listening(self.management_port):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("qdrouterd %s did not start: see %s" % (self.id, log.name))
            time.sleep(0.1)

    def kill(self):
        """kill -9, as a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def management_url(self):
        return "%s://127.0.0.1:%d" % ("amqps" if self.management_tls else "amqp", self.management_port)

    def session(self, timeout=30):
        """A management session to this router (with its client certificate when the listener needs one)."""
        from ansible_collections.enmasse.messaging.plugins.module_utils.router.client import ManagementSession
        return ManagementSession(self.management_url, timeout=timeout, tls=self.management_tls)

    def connection(self, timeout=10):
        """A BlockingConnection to the management listener (a client of role normal, like any there)."""
        import proton
        from proton.utils import BlockingConnection
        from ansible_collections.enmasse.messaging.plugins.module_utils.auth import mgmt_tls
        if not self.management_tls:
            return BlockingConnection(self.management_url, timeout=timeout)
        return BlockingConnection(self.management_url, timeout=timeout, allowed_mechs=mgmt_tls.MECHANISM,
                                  ssl_domain=mgmt_tls.ssl_domain(proton, self.management_tls))


class AuthService(object):
    """The collection's auth service (module_utils/auth) as a process, with
    a users directory of per-realm (per address space) files."""

    def __init__(self, base_dir):
        self.dir = os.path.join(base_dir, "auth")
        self.users_dir = os.path.join(self.dir, "users")
        os.makedirs(self.users_dir)
        self.port = free_port()
        self.proc = None
        self.tls = None  # (certificate, key) files: serve TLS (the product's default)

    def start(self):
        import sys
        cfg = os.path.join(self.dir, "config.json")
        config = {"listen_host": "127.0.0.1", "listen_port": self.port, "users_dir": self.users_dir}
        if self.tls:
            config.update(tls_cert=self.tls[0], tls_key=self.tls[1])
        with open(cfg, "w") as f:
            json.dump(config, f)
        log = open(os.path.join(self.dir, "service.log"), "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from ansible_collections.enmasse.messaging.plugins.module_utils.auth."
             "server import main; sys.exit(main())", "--config", cfg], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while not _listening(self.port):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("the auth service did not start: see %s" % log.name)
            time.sleep(0.1)

    def write_users(self, realm, users):
        """users: {name: password} (the user may send and receive everywhere in the space) or
        {name: (password, groups)}."""
        from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends

        def entry(pw):
            pw, groups = pw if isinstance(pw, tuple) else (pw, backends.ALL_ADDRESSES_GROUPS)
            return {"password": backends.hash_password(pw, iterations=1000), "groups": list(groups)}
        doc = backends.users_file_document(realm, dict((name, entry(pw)) for name, pw in users.items()))
        tmp = os.path.join(self.users_dir, ".%s.tmp" % realm)
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, os.path.join(self.users_dir, realm + ".json"))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class StandardEnv(object):
    """N routers (full mesh) + M Artemis brokers (the standard pool: broker.xml
    of the role's instance type ``pool``, with its routers' user) + the auth
    service + the infrastructure file. ``role_routers``: the routers run the
    configuration the router role renders (role_routers.py: inter-router
    mutual TLS, the broker password files, the sslProfiles of the clients and
    the auth service from the collection's CA), else a plain test mesh with
    the same two sslProfiles. ``tls``: as the product by default, the space
    listeners on TLS only and the auth service on TLS (``ca.cert_file`` is the
    CA clients trust: ``client_domain``); False: plain TCP for both."""

    def __init__(self, base_dir, prefix, routers=3, brokers=2, role_routers=False, tls=True, broker_tls=False):
        self.base_dir = base_dir
        # broker_tls: the brokers' acceptors are TLS (a CA and certificate made here, tls_pki.py), the
        # routers have the sslProfile brokers and the infrastructure file names it (ssl_profile)
        self.broker_tls = broker_tls
        self.tls_files = None
        self.prefix = prefix
        self.role_routers = role_routers
        self.tls = tls
        self.ca = None  # LocalCA: the collection's (role_routers) or one made here
        self.router_cert = None
        self.link_capacity = None  # the infrastructure file's link_capacity (None: the router's default)
        self.router_settings = {}  # more attributes of the router entity (the test mesh only; bench/standard/dataplane.py)
        self.password_files = {}
        self.routers = []
        for i in range(routers):
            self.routers.append(Router(self, i))
        self.brokers = [ArtemisBroker(os.path.join(base_dir, "b%d" % (i + 1)), name="b%d" % (i + 1))
                        for i in range(brokers)]
        self.auth_service = AuthService(base_dir)
        self.auth = {"host": "127.0.0.1", "port": self.auth_service.port}
        self.infra_file = os.path.join(base_dir, "standard.json")
        self.ledger_dir = os.path.join(base_dir, "ledgers")
        self.catalogue_path = os.path.join(base_dir, "catalogue.json")
        self.spaces_dir = os.path.join(base_dir, "spaces")
        lo = 20000 + (os.getpid() % 100) * 100
        self.port_range = (lo, lo + 20)

    def start(self):
        role_vars = None
        if self.broker_tls:
            import tls_pki
            self.tls_files = tls_pki.broker_tls_dir(os.path.join(self.base_dir, "tls"))
            role_vars = {"broker_tls_dir": self.tls_files["dir"]}
        # the pool brokers side by side: `artemis create` and the JVM start are
        # most of an environment's setup (about 10 s per broker here)
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(self.brokers) or 1) as pool:
            for f in [pool.submit(b.create, space_type="pool", role_vars=role_vars, tls=self.broker_tls)
                      for b in self.brokers]:
                f.result()
        for b in self.brokers:
            b.start(wait=False)
        for b in self.brokers:
            b.wait_started()
        self.write_password_files()
        self.make_certificates()
        self.auth_service.start()
        for r in self.routers:
            r.start()
        self.wait_mesh()
        self.write_infra()
        return self

    def make_certificates(self):
        """The CA (with role_routers the collection's, which the router role
        made through the pki role), the test mesh's router certificate and the
        auth service's (signed by that CA, as the auth_service role does)."""
        pki = os.path.join(self.base_dir, "pki")
        if self.role_routers:
            ca_dir = os.path.join(self.base_dir, "role", "credentials", "ca")
            self.ca = LocalCA(pki, existing=(os.path.join(ca_dir, "ca.pem"), os.path.join(ca_dir, "ca.key")))
        else:
            self.ca = LocalCA(pki)
            self.router_cert = self.ca.issue("router")
        if self.tls:
            self.auth_service.tls = self.ca.issue("auth-service")

    def client_domain(self, ca_file=None):
        """What a client of a space connects with: trusts the CA (``ca_file``: another one)."""
        return client_domain(ca_file or self.ca.cert_file)

    def client_url(self, port):
        return "%s://127.0.0.1:%d" % ("amqps" if self.tls else "amqp", port)

    def client_kwargs(self):
        """The BlockingConnection arguments of a client of a space."""
        return {"ssl_domain": self.client_domain()} if self.tls else {}

    def write_password_files(self):
        """The routers' broker passwords in files (the connectors name them):
        by the router role when ``role_routers``, else here (0600)."""
        creds = [{"name": b.name, "password": b.router_password} for b in self.brokers]
        if self.role_routers:
            import role_routers
            rendered, unused = role_routers.render(
                os.path.join(self.base_dir, "role"), [{"id": r.id, "management_port": r.management_port,
                                                      "inter_router_port": r.inter_router_port} for r in self.routers],
                creds)
            for r in self.routers:
                r.conf_file = rendered[r.id]["conf"]
                r.management_tls = rendered[r.id]["management_tls"]
            self.password_files = rendered[self.routers[0].id]["password_files"]
            return
        os.makedirs(os.path.join(self.base_dir, "brokers"), exist_ok=True)
        for c in creds:
            path = os.path.join(self.base_dir, "brokers", "%s.password" % c["name"])
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(c["password"])
            self.password_files[c["name"]] = path

    # pool brokers leaving the pool (scale in): a test sets it, then write_infra()
    draining = frozenset()

    # the MQTT gateway instances in the infrastructure file (their endpoints in the spaces' status)
    mqtt_gateways = None

    def write_infra(self):
        data = {
            "management_url": self.routers[0].management_url,
            "management_tls": self.routers[0].management_tls or {},
            "routers": [{"id": r.id, "host": "127.0.0.1", "port_offset": 100 * r.index} for r in self.routers],
            "brokers": [{"name": b.name, "host": "127.0.0.1", "amqp_port": b.amqp_port,
                         "user": b.router_user, "password_file": self.password_files[b.name],
                         "management_url": b.management_url, "management_user": b.management_user,
                         "management_password": b.management_password, "broker_name": b.name,
                         "ssl_profile": "brokers" if self.broker_tls else None,
                         "state": "draining" if b.name in self.draining else "active"}
                        for b in self.brokers],
            "auth_service": self.auth,
            "port_range": list(self.port_range),
            "bind_host": "127.0.0.1",
            "ledger_dir": self.ledger_dir,
            "catalogue_path": self.catalogue_path,
            "timeout": 30,
        }
        if self.link_capacity:
            data["link_capacity"] = self.link_capacity
        if self.mqtt_gateways:
            data["mqtt_gateways"] = self.mqtt_gateways
        if not self.tls:  # the defaults: client_ssl_profile clients, auth_service.ssl_profile auth-service
            data.update(client_ssl_profile="", client_plain=True)
            data["auth_service"] = dict(self.auth, ssl_profile="")
        with open(self.infra_file, "w") as f:
            json.dump(data, f)

    def session(self):
        return self.routers[0].session(timeout=30)

    def wait_mesh(self, timeout=60):
        """Until the first router sees every router of the mesh."""
        want = sorted(r.id for r in self.routers if r.proc and r.proc.poll() is None)
        deadline = time.time() + timeout
        seen = None
        while time.time() < deadline:
            try:
                with self.routers[0].session(timeout=3) as s:
                    seen = s.routers()
                    if seen == want:
                        # every router answers through the mesh (just after it forms, some do not yet)
                        answers = s.query_many([(r, "org.apache.qpid.dispatch.router", ["id"]) for r in want])
                        if all(failed is None and rows for rows, failed in answers):
                            return
            except Exception:  # the mesh is forming
                pass
            time.sleep(0.5)
        raise RuntimeError("the mesh did not form: router r1 sees %s, want %s" % (seen, want))

    def module_args(self, **kw):
        out = {"infrastructure_file": self.infra_file}
        out.update(kw)
        return out

    def connection_file(self, space):
        return os.path.join(self.spaces_dir, "%s.json" % space)

    def stop(self):
        self.auth_service.stop()
        for r in self.routers:
            r.stop()
        for b in self.brokers:
            try:
                b.stop()
            except Exception:
                pass

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)


def drain_all(conn, address, want, timeout=30, idle=1.0):
    """The bodies received (and accepted) from ``address`` until every body
    of ``want`` came, then until ``idle`` s pass without a message, within
    ``timeout``. Duplicates are kept (a count of messages would stop short
    of the last one when a copy came twice)."""
    left = set(want)
    rcv = conn.create_receiver(address, credit=max(len(left), 1) + 10)
    got = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        wait = deadline - time.time() if left else min(idle, deadline - time.time())
        try:
            m = rcv.receive(timeout=max(0.1, wait))
        except Exception:  # pylint: disable=broad-except  # a Timeout: nothing more came
            break
        got.append(m.body)
        left.discard(m.body)
        rcv.accept()
    rcv.close()
    return got


def drain(conn, address, expect, timeout=15):
    """The bodies of up to ``expect`` messages received (and accepted) from
    ``address`` on the blocking connection ``conn`` within ``timeout``."""
    rcv = conn.create_receiver(address, credit=expect)
    got = []
    deadline = time.time() + timeout
    while len(got) < expect and time.time() < deadline:
        try:
            m = rcv.receive(timeout=max(0.1, deadline - time.time()))
        except Exception:  # pylint: disable=broad-except  # a Timeout: fewer than expected
            break
        got.append(m.body)
        rcv.accept()
    rcv.close()
    return got
