"""A standard infrastructure on this machine for the integration tests: a full
mesh of real qdrouterd 1.19 routers (built from the vendor archive by
scripts/build-router.sh) and a pool of real Artemis brokers (helpers.ArtemisBroker,
broker.xml from the broker role), on free loopback ports, plus the
infrastructure file the standard modules read."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import routers
from helpers import ArtemisBroker, free_port

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

    def config(self):
        ents = [["router", dict(self.env.router_settings, mode="interior", id=self.id)],
                ["policy", {"enableVhostPolicy": True, "defaultVhost": "$default"}],
                ["vhost", {"hostname": "$default", "allowUnknownUser": True, "groups": {"$default": ALLOW_ALL}}],
                ["listener", {"name": "management", "host": "127.0.0.1", "port": str(self.management_port),
                              "role": "normal", "authenticatePeer": False}],
                ["listener", {"name": "inter-router", "host": "127.0.0.1", "port": str(self.inter_router_port),
                              "role": "inter-router", "authenticatePeer": False}]]
        if self.env.tls:  # as the router role's qdrouterd.conf: the CA of the brokers' certificates
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
        return "amqp://127.0.0.1:%d" % self.management_port


class AuthService(object):
    """The collection's auth service (module_utils/auth) as a process, with
    a users directory of per-realm (per address space) files."""

    def __init__(self, base_dir):
        self.dir = os.path.join(base_dir, "auth")
        self.users_dir = os.path.join(self.dir, "users")
        os.makedirs(self.users_dir)
        self.port = free_port()
        self.proc = None

    def start(self):
        import sys
        cfg = os.path.join(self.dir, "config.json")
        with open(cfg, "w") as f:
            json.dump({"listen_host": "127.0.0.1", "listen_port": self.port, "users_dir": self.users_dir}, f)
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
        """users: {name: password}; every user may send and receive everywhere in the space."""
        from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends
        doc = backends.users_file_document(realm, dict(
            (name, {"password": backends.hash_password(pw, iterations=1000), "groups": backends.ALL_ADDRESSES_GROUPS})
            for name, pw in users.items()))
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
    mutual TLS, the broker password files), else a plain test mesh."""

    def __init__(self, base_dir, prefix, routers=3, brokers=2, role_routers=False, tls=False):
        self.base_dir = base_dir
        # tls: the brokers' acceptors are TLS (a CA and certificate made here, tls_pki.py), the
        # routers have the sslProfile brokers and the infrastructure file names it (ssl_profile)
        self.tls = tls
        self.tls_files = None
        self.prefix = prefix
        self.role_routers = role_routers
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
        self.auth_service.start()
        role_vars = None
        if self.tls:
            import tls_pki
            self.tls_files = tls_pki.broker_tls_dir(os.path.join(self.base_dir, "tls"))
            role_vars = {"broker_tls_dir": self.tls_files["dir"]}
        for b in self.brokers:
            b.create(space_type="pool", role_vars=role_vars, tls=self.tls)
            b.start()
        self.write_password_files()
        for r in self.routers:
            r.start()
        self.wait_mesh()
        self.write_infra()
        return self

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
            self.password_files = rendered[self.routers[0].id]["password_files"]
            return
        os.makedirs(os.path.join(self.base_dir, "brokers"), exist_ok=True)
        for c in creds:
            path = os.path.join(self.base_dir, "brokers", "%s.password" % c["name"])
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(c["password"])
            self.password_files[c["name"]] = path

    def write_infra(self):
        data = {
            "management_url": self.routers[0].management_url,
            "routers": [{"id": r.id, "host": "127.0.0.1", "port_offset": 100 * r.index} for r in self.routers],
            "brokers": [{"name": b.name, "host": "127.0.0.1", "amqp_port": b.amqp_port,
                         "user": b.router_user, "password_file": self.password_files[b.name],
                         "management_url": b.management_url, "management_user": b.management_user,
                         "management_password": b.management_password, "broker_name": b.name,
                         "ssl_profile": "brokers" if self.tls else None}
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
        with open(self.infra_file, "w") as f:
            json.dump(data, f)

    def session(self):
        from ansible_collections.enmasse.messaging.plugins.module_utils.router.client import ManagementSession
        return ManagementSession(self.routers[0].management_url, timeout=30)

    def wait_mesh(self, timeout=60):
        """Until the first router sees every router of the mesh."""
        want = sorted(r.id for r in self.routers if r.proc and r.proc.poll() is None)
        deadline = time.time() + timeout
        seen = None
        from ansible_collections.enmasse.messaging.plugins.module_utils.router.client import ManagementSession
        while time.time() < deadline:
            try:
                with ManagementSession(self.routers[0].management_url, timeout=3) as s:
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
