"""Helpers for the integration tests and the convergence benchmark.

* ``ArtemisBroker``: a real ActiveMQ Artemis instance made from the binary
  distribution (unpacked once into a cache directory) with ``artemis create``,
  on free 127.0.0.1 ports, whose broker.xml is roles/broker's template rendered
  with the role's defaults (``render_role_broker_xml``), a management user, a
  messaging user, Jolokia. Started as its own process group and killed no
  matter what.
* ``run_module`` / ``run_playbook``: run the collection's modules the way Ansible
  does (direct module invocation with an args file, or ``ansible-playbook``).
* AMQP helpers: re-exported from ``amqp_checks`` (the standalone script the
  Molecule verify step runs), so there is one implementation.

Used by ``tests/integration/conftest.py`` and ``bench/converge/run.py``.
"""

import atexit
import ctypes
import fcntl
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from amqp_checks import (  # noqa: E402  (re-exported for tests)
    CheckFailed, connect, connection, drain, send, send_accepted, receive_ids, run_checks)

__all__ = ["CheckFailed", "connect", "connection", "drain", "send", "send_accepted", "receive_ids", "run_checks"]


def _collections_root():
    """``tests/conftest.py`` links the checkout as ansible_collections/enmasse/
    messaging and puts it on sys.path; load it by path when pytest has not."""
    spec = importlib.util.spec_from_file_location(
        "enmasse_tests_collection_path", os.path.join(REPO, "tests", "conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.COLLECTIONS


COLLECTIONS = _collections_root()

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import (  # noqa: E402
    JolokiaClient, broker_mbean)

ARTEMIS_VERSION = os.environ.get("ARTEMIS_VERSION", "2.40.0")
ARTEMIS_GAV = "org.apache.activemq:apache-artemis:%s:tar.gz:bin" % ARTEMIS_VERSION
CACHE_DIR = os.environ.get("ENMASSE_TEST_CACHE") or os.path.join(
    os.path.expanduser("~"), ".cache", "enmasse-messaging-tests")
# roles/broker's broker_messaging_role and broker_management_role (defaults)
MESSAGING_ROLE = "messaging"
MANAGEMENT_ROLE = "manage"
ROUTER_ROLE = "router"  # the broker role's broker_router_role
ROLE_DIR = os.path.join(REPO, "roles", "broker")
DEFAULT_PLAN = "brokered-single-broker"

# The Molecule demo space (molecule/*/converge), which amqp_checks.py defaults to.
DEMO_ADDRESSES = [
    {"address": "orders", "type": "queue", "plan": "brokered-queue"},
    {"address": "events", "type": "topic", "plan": "brokered-topic"},
    {"address": "events-audit", "type": "subscription", "plan": "brokered-subscription",
     "topic": "events"},
    {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"},
    {"address": "retry", "type": "queue", "plan": "brokered-queue", "deadletter": "dlq",
     "message_redelivery": {"maximum_delivery_attempts": 3}},
    {"address": "short-lived", "type": "queue", "plan": "brokered-queue", "expiry": "dlq",
     "message_ttl": {"maximum": 2000}},
]

DEMO_NAMES = [a["address"] for a in DEMO_ADDRESSES]


def queue(address, **fields):
    """A brokered queue (``fields`` override or add)."""
    return dict({"address": address, "type": "queue", "plan": "brokered-queue"}, **fields)


def subscription(address, **fields):
    return dict({"address": address, "type": "subscription", "plan": "brokered-subscription"}, **fields)


# ----------------------------------------------------------------- prerequisites

def default_tarball():
    env = os.environ.get("ENMASSE_ARTEMIS_ARCHIVE") or os.environ.get("ARTEMIS_TARBALL")
    if env:
        return env
    return _m2_tarball()


def _m2_tarball():
    return os.path.join(os.path.expanduser("~"), ".m2", "repository", "org", "apache", "activemq",
                        "apache-artemis", ARTEMIS_VERSION,
                        "apache-artemis-%s-bin.tar.gz" % ARTEMIS_VERSION)


def find_tarball(fetch=True):
    """The Artemis binary tarball; fetched with Maven into ~/.m2 if absent."""
    path = default_tarball()
    if not os.path.isfile(path) and fetch and shutil.which("mvn") and path == _m2_tarball():
        subprocess.run(["mvn", "-q", "dependency:get", "-Dartifact=" + ARTEMIS_GAV, "-Dtransitive=false"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=False)
    return path if os.path.isfile(path) else None


def missing_prerequisites():
    """A reason to skip, or None when Java and the Artemis tarball are there."""
    if not shutil.which("java"):
        return "Java is not installed (ActiveMQ Artemis needs a JVM)"
    if not find_tarball():
        if default_tarball() != _m2_tarball():
            return "ActiveMQ Artemis tarball %s (from the environment) does not exist" % default_tarball()
        return "ActiveMQ Artemis %s tarball not found at %s and Maven could not fetch %s" % (
            ARTEMIS_VERSION, default_tarball(), ARTEMIS_GAV)
    return None


def artemis_home(tarball=None):
    """Unpack the distribution once into the cache directory (lock-protected,
    so parallel workers share it) and return ARTEMIS_HOME."""
    tarball = tarball or find_tarball()
    home = os.path.join(CACHE_DIR, "apache-artemis-%s" % ARTEMIS_VERSION)
    marker = os.path.join(home, ".unpacked")
    os.makedirs(CACHE_DIR, exist_ok=True)
    with open(os.path.join(CACHE_DIR, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(marker):
            shutil.rmtree(home, ignore_errors=True)
            tmp = tempfile.mkdtemp(dir=CACHE_DIR)
            with tarfile.open(tarball) as tf:
                kwargs = {"filter": "tar"} if hasattr(tarfile, "data_filter") else {}
                tf.extractall(tmp, **kwargs)
            os.rename(os.path.join(tmp, "apache-artemis-%s" % ARTEMIS_VERSION), home)
            os.rmdir(tmp)
            open(marker, "w").close()
    return home


_GIVEN_PORTS = set()


def free_port():
    """A free loopback port never handed out before by this process (the
    kernel may offer a just-released port again before anyone binds it)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN_PORTS:
            _GIVEN_PORTS.add(port)
            return port


def _die_with_parent():
    """preexec_fn: the broker gets SIGKILL if the test process dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# ------------------------------------------------------------------------ spark

def spark_test_conf(cli):
    """The --conf of the capacity job's local[2] runs in the tests: the job's
    own driver options (``cli.JVM_OPTIONS``, which a --conf of the same key
    replaces) plus C1 only, as for the test brokers: a job over a few MB never
    pays back the second JIT tier (alone on an idle machine, machine CPU:
    test_capacity_incremental 237 -> 161 s, test_capacity_job 233 -> 118 s).
    The benchmarks run the job as users do, without it."""
    return ["--conf", "spark.driver.extraJavaOptions=%s -XX:TieredStopAtLevel=1" % cli.JVM_OPTIONS]


# ------------------------------------------------------------------------ broker

class ArtemisBroker(object):
    """A throw-away Artemis instance under ``base_dir``."""

    # tests: start fast on a busy 2-core machine (C1 JIT only); the benchmark passes ()
    TEST_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1",)

    def __init__(self, base_dir, name="enmasse-test", java_memory="1G", java_options=TEST_JAVA_OPTIONS):
        self.base_dir = base_dir
        self.name = name
        self.java_memory = java_memory
        self.java_options = tuple(java_options)
        self.instance = os.path.join(base_dir, "instance")
        self.http_port = free_port()
        self.core_port = free_port()
        self.amqp_port = free_port()
        self.openwire_port = free_port()
        self.stomp_port = free_port()
        self.mqtt_port = free_port()
        self.management_user = "admin"
        self.management_password = secrets.token_hex(12)
        self.messaging_user = "app"
        self.messaging_password = secrets.token_hex(12)
        self.router_user = "standard-pool-router"
        self.router_password = secrets.token_hex(12)
        self.proc = None
        self.log_path = os.path.join(base_dir, "artemis.log")
        self.baseline_addresses = set()
        atexit.register(self.stop)

    # ---------------------------------------------------------------- paths
    @property
    def ledger_path(self):
        return os.path.join(self.instance, "data", "enmasse-owned.json")

    @property
    def catalogue_path(self):
        """The plan catalogue of the test host (the connection file points to it)."""
        return os.path.join(self.instance, "etc", "enmasse-catalogue.json")

    @property
    def management_url(self):
        return "http://127.0.0.1:%d/console/jolokia" % self.http_port

    def amqp_url(self, user=None, password=None):
        user = self.messaging_user if user is None else user
        password = self.messaging_password if password is None else password
        return "amqp://%s:%s@127.0.0.1:%d" % (user, password, self.amqp_port)

    # --------------------------------------------------------------- create
    def create(self, role_vars=None, space_type="brokered", tls=False):
        """``artemis create`` makes the instance (as roles/broker does), then
        etc/broker.xml is the role's own template rendered by Ansible with the
        role's defaults (``render_role_broker_xml``): the tests run the
        configuration users get. ``role_vars`` override role variables."""
        home = artemis_home()
        cmd = [os.path.join(home, "bin", "artemis"), "create", "--silent", "--force",
               "--name", self.name, "--user", self.management_user,
               "--password", self.management_password, "--role", MANAGEMENT_ROLE, "--require-login",
               "--nio", "--no-autotune", "--host", "127.0.0.1", "--http-host", "127.0.0.1",
               "--http-port", str(self.http_port), "--default-port", str(self.core_port),
               "--no-hornetq-acceptor", "--no-mqtt-acceptor", "--no-stomp-acceptor",
               "--java-memory", self.java_memory]
        for opt in self.java_options:
            cmd.append("--java-options=" + opt)
        cmd.append(self.instance)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        etc = os.path.join(self.instance, "etc")
        self.render_broker_xml(role_vars, space_type, tls)
        with open(os.path.join(etc, "artemis-users.properties"), "a") as f:
            f.write("\n%s = %s\n" % (self.messaging_user, self.messaging_password))
            if space_type == "pool":  # the routers' user of the standard pool (role broker_router_role)
                f.write("%s = %s\n" % (self.router_user, self.router_password))
        with open(os.path.join(etc, "artemis-roles.properties"), "a") as f:
            f.write("\n%s = %s\n" % (MESSAGING_ROLE, self.messaging_user))
            if space_type == "pool":
                f.write("%s = %s\n" % (ROUTER_ROLE, self.router_user))
        # the role's login.config: the realm users' files first (docs/identity.md "Brokered spaces")
        with open(os.path.join(ROLE_DIR, "templates", "login.config.j2")) as f:
            login = f.read().replace("{{ ansible_managed }}", "written by tests/integration/helpers.py")
        with open(os.path.join(etc, "login.config"), "w") as f:
            f.write(login)
        for name in ("artemis-realm-users.properties", "artemis-realm-roles.properties"):
            open(os.path.join(etc, name), "a").close()
        with open(os.path.join(etc, "jolokia-access.xml"), "w") as f:
            f.write('<?xml version="1.0" encoding="utf-8"?>\n<restrict>\n  <cors>\n'
                    '    <allow-origin>http://localhost</allow-origin>\n'
                    '    <allow-origin>*://localhost*</allow-origin>\n'
                    '    <allow-origin>*://127.0.0.1*</allow-origin>\n'
                    '    <strict-checking/>\n  </cors>\n</restrict>\n')
        return self

    @property
    def ports(self):
        """The acceptor ports, as the role's layout gives them to broker.xml.j2."""
        return {"amqp": self.amqp_port, "core": self.core_port, "openwire": self.openwire_port,
                "stomp": self.stomp_port, "mqtt": self.mqtt_port, "jolokia": self.http_port}

    def render_broker_xml(self, role_vars=None, space_type="brokered", tls=False):
        """Write etc/broker.xml from roles/broker/templates/broker.xml.j2
        (``tls``: the acceptors keep their TLS, reading role_vars' broker_tls_dir)."""
        render_role_broker_xml(os.path.join(self.instance, "etc", "broker.xml"), self.name, self.ports,
                               role_vars=role_vars, schema=os.path.join(artemis_home(), "schema", "artemis-server.xsd"),
                               space_type=space_type, tls=tls)

    # ------------------------------------------------------------ lifecycle
    def start(self, timeout=120, wait=True):
        """Starts ``artemis run``; ``wait``: until it answers (else call
        ``wait_started``: several brokers start side by side)."""
        if self.proc and self.proc.poll() is None:
            return self
        log = open(self.log_path, "ab")
        env = dict(os.environ)
        env.pop("JAVA_ARGS", None)
        self.proc = subprocess.Popen([os.path.join(self.instance, "bin", "artemis"), "run"],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, preexec_fn=_die_with_parent, env=env)
        log.close()
        if wait:
            self.wait_started(timeout)
        return self

    def wait_started(self, timeout=120):
        self.wait_ready(timeout)
        if not self.baseline_addresses:
            self.baseline_addresses = set(self.address_names())
        return self

    def wait_ready(self, timeout=120):
        deadline = time.monotonic() + timeout
        last = None
        client = self.jolokia(timeout=5)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("Artemis exited with %s; log tail:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                client.read(broker_mbean(self.name), "Version")
                if self._amqp_listening():
                    return
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
            time.sleep(0.5)
        raise RuntimeError("Artemis did not answer on Jolokia within %ss (%s); log tail:\n%s"
                           % (timeout, last, self.log_tail()))

    def _amqp_listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.amqp_port), timeout=1).close()
            return True
        except OSError:
            return False

    def stop(self, timeout=30):
        """Graceful stop (SIGTERM to the process group), SIGKILL after ``timeout``."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def restart(self):
        self.stop()
        return self.start()

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""

    # ----------------------------------------------------------- management
    def jolokia(self, timeout=60):
        return JolokiaClient(self.management_url, self.management_user, self.management_password,
                             timeout=timeout)

    def address_names(self):
        return sorted(self.jolokia().read(broker_mbean(self.name), "AddressNames") or [])

    def queue_names(self):
        return sorted(self.jolokia().read(broker_mbean(self.name), "QueueNames") or [])

    def queue_attribute(self, queue, attribute):
        """An attribute of a queue found by name (whatever its address/routing)."""
        pattern = '%s,component=addresses,address=*,subcomponent=queues,routing-type=*,queue="%s"' % (
            broker_mbean(self.name), queue)
        names = self.jolokia().search(pattern)
        assert names, "queue %r not found on the broker" % queue
        return self.jolokia().read(names[0], attribute)

    def address_settings(self, match):
        return json.loads(self.jolokia().execute(broker_mbean(self.name), "getAddressSettingsAsJSON", match))

    def create_by_hand(self, address, routing_type="ANYCAST", queue=True):
        """What an operator would do in the console: an address (and queue)
        the modules did not create."""
        client, mbean = self.jolokia(), broker_mbean(self.name)
        client.execute(mbean, "createAddress(java.lang.String,java.lang.String)", address, routing_type)
        if queue:
            client.execute(mbean, "createQueue(java.lang.String,boolean)",
                           json.dumps({"name": address, "address": address,
                                       "routing-type": routing_type, "durable": True}), True)

    def wipe(self):
        """Delete every address the broker did not start with (and their
        address settings), and the ownership ledger: a clean address space."""
        # thousands of addresses after a benchmark: every address deleted first,
        # then their settings. A settings change makes every queue that still
        # exists look its settings up again, so removing them while the queues
        # exist costs O(queues) each (10,000 addresses: past any timeout).
        client, mbean = self.jolokia(timeout=600), broker_mbean(self.name)
        extra = [a for a in self.address_names() if a not in self.baseline_addresses]
        for op in ("deleteAddress(java.lang.String,boolean)", "removeAddressSettings"):
            reqs = [client.exec_request(mbean, op, *((a, True) if op.startswith("delete") else (a,))) for a in extra]
            chunks = [reqs[i:i + client.batch_size] for i in range(0, len(reqs), client.batch_size)]
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda chunk: client.bulk(chunk, raise_errors=False), chunks))
        left = [a for a in self.address_names() if a not in self.baseline_addresses]
        assert not left, "could not delete addresses %s" % left
        if os.path.exists(self.ledger_path):
            os.remove(self.ledger_path)
        if os.path.exists(self.catalogue_path):
            os.remove(self.catalogue_path)

    def connection(self, space, plan=DEFAULT_PLAN, space_type="brokered"):
        """The connection file contents, as roles/broker writes them for a
        space (the messaging password is not in it; see ``amqp_url``)."""
        return {
            "address_space": space,
            "type": space_type,
            "plan": plan,
            "broker_name": self.name,
            "instance_dir": self.instance,
            "management_url": self.management_url,
            "management_origin": "http://localhost",
            "management_user": self.management_user,
            "management_password": self.management_password,
            "ledger_path": self.ledger_path,
            "catalogue_path": self.catalogue_path,
            "messaging_user": self.messaging_user,
            "endpoints": [{"name": "amqp", "host": "127.0.0.1", "port": self.amqp_port, "protocols": ["amqp"]},
                          {"name": "core", "host": "127.0.0.1", "port": self.core_port,
                           "protocols": ["core", "amqp", "openwire"]}],
        }

    def write_connection_file(self, path, space, **kw):
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self.connection(space, **kw), f, indent=2)
        return str(path)

    def snapshot(self, settings_for=()):
        """What the bad-input tests compare byte for byte: address and queue
        names as the broker reports them, the ledger file and the address
        settings of ``settings_for``."""
        ledger = None
        if os.path.exists(self.ledger_path):
            with open(self.ledger_path, "rb") as f:
                ledger = f.read()
        client, mbean = self.jolokia(), broker_mbean(self.name)
        settings = client.bulk([client.exec_request(mbean, "getAddressSettingsAsJSON", n) for n in settings_for])
        return {"addresses": self.address_names(), "queues": self.queue_names(), "ledger": ledger,
                "settings": dict(zip(settings_for, (v for v, unused in settings)))}


# ---------------------------------------------------------------- module runner

class ModuleResult(object):
    def __init__(self, rc, result, stdout, stderr, seconds):
        self.rc, self.result, self.stdout, self.stderr, self.seconds = rc, result, stdout, stderr, seconds

    def __getitem__(self, key):
        return self.result[key]

    def get(self, key, default=None):
        return self.result.get(key, default)

    @property
    def failed(self):
        return bool(self.result.get("failed")) or self.rc != 0

    @property
    def changed(self):
        return bool(self.result.get("changed"))

    @property
    def msg(self):
        return str(self.result.get("msg", ""))

    def __repr__(self):
        return "ModuleResult(rc=%r, result=%s, stderr=%r)" % (
            self.rc, json.dumps(self.result, default=str)[:3000], self.stderr[-2000:])


def module_path(name):
    return os.path.join(REPO, "plugins", "modules", name + ".py")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([COLLECTIONS] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join(
        [COLLECTIONS] + [p for p in env.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if p and p != COLLECTIONS])
    env.setdefault("ANSIBLE_LOCALHOST_WARNING", "False")
    env.setdefault("ANSIBLE_NOCOLOR", "1")
    return env


def _last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    try:
        return json.loads(text)
    except ValueError:
        return {}


def run_module(name, args, check_mode=False, diff=False, timeout=900):
    """Invoke ``plugins/modules/<name>.py`` directly with an args file, as
    AnsiballZ does on the target (no ansible-playbook start-up cost)."""
    payload = dict(args)
    payload["_ansible_check_mode"] = check_mode
    payload["_ansible_diff"] = diff
    fd, path = tempfile.mkstemp(prefix="enmasse-args-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"ANSIBLE_MODULE_ARGS": payload}, f)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, module_path(name), path], capture_output=True,
                              text=True, env=_env(), timeout=timeout, check=False)
        seconds = time.perf_counter() - t0
    finally:
        os.remove(path)
    result = _last_json(proc.stdout)
    if not result:
        result = {"failed": True, "msg": "module printed no JSON", "stdout": proc.stdout}
    return ModuleResult(proc.returncode, result, proc.stdout, proc.stderr, seconds)


class PlaybookResult(object):
    def __init__(self, rc, data, stdout, stderr, seconds):
        self.rc, self.data, self.stdout, self.stderr, self.seconds = rc, data, stdout, stderr, seconds

    def task(self, name, host="localhost"):
        """The result of the (last) task called ``name``."""
        found = None
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                if task.get("task", {}).get("name") == name:
                    found = task.get("hosts", {}).get(host)
        assert found is not None, "task %r not in playbook output:\n%s" % (name, self.stdout[-3000:])
        return found

    @property
    def stats(self):
        return self.data.get("stats", {}).get("localhost", {})

    def __repr__(self):
        return "PlaybookResult(rc=%r, stats=%r, stderr=%r, stdout_tail=%r)" % (
            self.rc, self.stats, self.stderr[-2000:], self.stdout[-3000:])


def run_playbook(tasks, extra_vars=None, check=False, diff=False, timeout=900):
    """Run ``tasks`` as one play on localhost with ansible-playbook; results
    come back through the ansible.posix.json callback."""
    play = [{"name": "enmasse.messaging integration", "hosts": "localhost", "gather_facts": False,
             "connection": "local", "tasks": tasks}]
    tmp = tempfile.mkdtemp(prefix="enmasse-play-")
    try:
        pb = os.path.join(tmp, "play.yml")
        with open(pb, "w") as f:
            json.dump(play, f)  # JSON is YAML
        cmd = ["ansible-playbook", "-i", "localhost,", pb,
               "-e", "ansible_python_interpreter=%s" % sys.executable]
        if extra_vars:
            ev = os.path.join(tmp, "vars.json")
            with open(ev, "w") as f:
                json.dump(extra_vars, f)
            cmd += ["-e", "@" + ev]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        env = _env()
        env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
        env["ANSIBLE_RETRY_FILES_ENABLED"] = "False"
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=tmp, check=False)
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        data = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        data = {}
    return PlaybookResult(proc.returncode, data, proc.stdout, proc.stderr, seconds)


# ------------------------------------------------------------ role configuration

def render_role_broker_xml(dest, broker_name, ports, space="itest", role_vars=None, schema=None, space_type="brokered",
                           tls=False):
    """Render roles/broker/templates/broker.xml.j2 to ``dest`` the way the role
    does: ansible-playbook includes the role's layout (tasks_from: layout, with
    the role's defaults and the enmasse.messaging.broker_layout filter) for one
    space on ``ports`` and runs the template task with ``__space`` set, then
    validates the result against Artemis' schema. ``role_vars`` override role
    variables (extra vars). ``tls`` false (the default): the acceptors' TLS
    parameters are taken out (``plain_acceptors``)."""
    extra = {"broker_address_spaces": [{"name": space, "type": space_type, "plan": DEFAULT_PLAN,
                                        "broker_name": broker_name, "port_offset": 0}],
             "broker_ports": dict(ports), "broker_bind_address": "127.0.0.1",
             "broker_credentials_dir": os.path.join(os.path.dirname(dest), "credentials")}
    extra.update(role_vars or {})
    template = {"src": os.path.join(ROLE_DIR, "templates", "broker.xml.j2"), "dest": dest, "mode": "0640"}
    if schema:
        template["validate"] = "xmllint --noout --schema %s %%s" % schema
    tasks = [
        {"name": "role layout", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.broker", "tasks_from": "layout", "public": True}},
        {"name": "render broker.xml", "ansible.builtin.template": template,
         "vars": {"__space": "{{ __broker_spaces[0] }}"}},
    ]
    res = run_playbook(tasks, extra_vars=extra, timeout=300)
    assert res.rc == 0, "could not render the role's broker.xml: %r" % res
    if not tls:
        plain_acceptors(dest)
    return dest


# the TLS parameters broker.xml.j2 puts on every client acceptor
TLS_ACCEPTOR_PARAMS = re.compile(r";sslEnabled=true;keyStoreType=PEMCFG;keyStorePath=[^;<]*;enabledProtocols=[^;<]*")


def plain_acceptors(path):
    """The role's acceptors without their TLS parameters, for the integration
    tests that predate TLS and connect in plain TCP (TLS itself: molecule/default,
    tests/integration/tls_checks.py, tests/unit/test_broker_tls.py). Fails
    when the template's TLS parameters are not found (the template changed)."""
    with open(path) as f:
        xml = f.read()
    out, count = TLS_ACCEPTOR_PARAMS.subn("", xml)
    assert count == 5, "expected the TLS parameters on 5 acceptors of %s, found %d" % (path, count)
    with open(path, "w") as f:
        f.write(out)
