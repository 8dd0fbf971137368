"""Real Qpid Dispatch Routers (qdrouterd 1.19) for the integration tests.

``RouterMesh(base_dir, n)`` starts ``n`` local qdrouterd processes as a full
interior mesh on free loopback ports, configured like the design note's
router role: router id, vhost policy on with a ``$default`` vhost allowing
everything, a ``management`` listener (127.0.0.1, no authentication), an
``inter-router`` listener plus an inter-router connector to every router of
lower index (every pair exactly one connection), a ``route-container``
listener. ``start()`` waits until every router sees all ``n`` nodes.
``stop(i)``, ``kill(i)`` (kill -9) and ``start_router(i)`` (same config and
ports) act on one router; ``close()`` stops them all.

The binary: ``$QDROUTERD`` (a qdrouterd that runs as is), else the prefix
``scripts/build-router.sh`` prints (it builds once, then answers from its
cache), run with the PYTHONPATH that prefix needs. ``find_qdrouterd()``
returns (argv, env, None) or (None, None, reason).
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import time

from ansible_collections.enmasse.messaging.plugins.module_utils.router import client as router_client, protocol

import helpers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# the $default vhost of the design note: everything allowed for the
# connections that name no space (management, inter-router, brokers)
DEFAULT_VHOST_GROUPS = {"$default": {"users": "*", "remoteHosts": "*", "sources": "*", "targets": "*",
                                     "allowDynamicSource": True, "allowAnonymousSender": True,
                                     "allowAdminStatusUpdate": True}}


_PREFIX = []


def router_prefix():
    """(install prefix, None) of qdrouterd built from the source archive
    (scripts/router-archive.sh finds it, scripts/build-router.sh builds it
    once and then answers from its cache), or (None, why not). The one place
    the tests and benchmarks get a router from."""
    if _PREFIX:
        return _PREFIX[0]
    scripts = os.path.join(REPO, "scripts")
    try:
        found = subprocess.run(["bash", os.path.join(scripts, "router-archive.sh")], capture_output=True,
                               text=True, check=False, timeout=120)
        if found.returncode != 0 or not found.stdout.strip():
            return None, "no qdrouterd source archive: %s" % (found.stderr.strip()[-300:] or "none found")
        archive = found.stdout.strip().splitlines()[-1]
        out = subprocess.run(["bash", os.path.join(scripts, "build-router.sh"), archive], capture_output=True,
                             text=True, check=False, timeout=1800, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "scripts/build-router.sh failed: %s" % e
    prefix = out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else None
    if not prefix or not os.path.exists(os.path.join(prefix, "sbin", "qdrouterd")):
        return None, ("no qdrouterd: scripts/build-router.sh %s did not build it (%s)"
                      % (archive, out.stderr.strip()[-300:] or "no prefix printed"))
    _PREFIX.append((prefix, None))
    return prefix, None


def prefix_env(prefix):
    """The environment qdrouterd of ``prefix`` needs: its PYTHONPATH (the
    prefix's share/enmasse-messaging/pythonpath, else found in the prefix)."""
    recorded = os.path.join(prefix, "share", "enmasse-messaging", "pythonpath")
    if os.path.exists(recorded):
        with open(recorded) as f:
            return {"PYTHONPATH": f.read().strip()}
    paths = glob.glob(os.path.join(prefix, "local", "lib", "python3*", "dist-packages", "qpid_dispatch-*.egg"))
    paths.append(os.path.join(prefix, "lib", "qpid-dispatch", "python"))
    return {"PYTHONPATH": os.pathsep.join(paths)}


def find_qdrouterd():
    """(argv prefix, extra environment, None) of a runnable qdrouterd, or
    (None, None, why not). ``$QDROUTERD`` (a qdrouterd that runs as is) wins."""
    explicit = os.environ.get("QDROUTERD")
    if explicit:
        return [explicit], {}, None
    prefix, why = router_prefix()
    if why:
        return None, None, why
    return [os.path.join(prefix, "sbin", "qdrouterd")], prefix_env(prefix), None


def section(name, attrs):
    """One section of a qdrouterd config file (``groups`` is JSON)."""
    lines = ["%s {" % name]
    for key, value in attrs.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, dict):
            value = json.dumps(value, indent=4).replace("\n", "\n    ")
        lines.append("    %s: %s" % (key, value))
    lines.append("}")
    return "\n".join(lines) + "\n"


class Router(object):
    """One router of the mesh: its id, ports, files and process."""

    def __init__(self, index, router_id, base_dir):
        self.index = index
        self.id = router_id
        self.dir = os.path.join(base_dir, router_id)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "qdrouterd.conf")
        self.log = os.path.join(self.dir, "qdrouterd.log")
        self.management_port = helpers.free_port()
        self.inter_router_port = helpers.free_port()
        self.route_container_port = helpers.free_port()
        self.proc = None

    @property
    def management_url(self):
        return "amqp://127.0.0.1:%d" % self.management_port

    def config(self, lower, extra=""):
        out = section("router", {"mode": "interior", "id": self.id})
        out += section("policy", {"enableVhostPolicy": True, "defaultVhost": "$default"})
        out += section("vhost", {"hostname": "$default", "allowUnknownUser": True, "groups": DEFAULT_VHOST_GROUPS})
        out += section("listener", {"name": "management", "host": "127.0.0.1", "port": self.management_port,
                                    "role": "normal", "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
        out += section("listener", {"name": "inter-router", "host": "127.0.0.1", "port": self.inter_router_port,
                                    "role": "inter-router", "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
        out += section("listener", {"name": "route-container", "host": "127.0.0.1",
                                    "port": self.route_container_port, "role": "route-container",
                                    "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
        for other in lower:
            out += section("connector", {"name": "inter-router-%s" % other.id, "host": "127.0.0.1",
                                         "port": other.inter_router_port, "role": "inter-router",
                                         "saslMechanisms": "ANONYMOUS"})
        return out + extra

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=30):
        try:
            with open(self.log) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class RouterMesh(object):
    """``n`` qdrouterd processes, a full interior mesh (see the module doc)."""

    def __init__(self, base_dir, n=3, ids=None, extra_config=None):
        argv, env, reason = find_qdrouterd()
        if reason:
            raise RuntimeError(reason)
        self.argv = argv
        self.env = dict(os.environ)
        self.env.update(env)
        self.base_dir = base_dir
        ids = list(ids or ["router-%d" % i for i in range(n)])
        self.routers = [Router(i, rid, base_dir) for i, rid in enumerate(ids)]
        self.extra_config = extra_config or {}
        for r in self.routers:
            with open(r.conf, "w") as f:
                f.write(r.config(self.routers[:r.index], self.extra_config.get(r.id, "")))

    def __getitem__(self, index):
        return self.routers[index]

    def __len__(self):
        return len(self.routers)

    @property
    def ids(self):
        return [r.id for r in self.routers]

    def session(self, index=0, **kw):
        """A management session on router ``index``'s management listener."""
        kw.setdefault("timeout", 20)
        return router_client.ManagementSession(self.routers[index].management_url, **kw)

    def start(self, timeout=60):
        for r in self.routers:
            self._spawn(r)
        self.wait_mesh(timeout)
        return self

    def start_router(self, index, timeout=60):
        """(Re)start one router with its config and ports; wait for the mesh."""
        self._spawn(self.routers[index])
        self.wait_mesh(timeout)

    def _spawn(self, router):
        if router.running:
            return
        log = open(router.log, "a")
        try:
            router.proc = subprocess.Popen(self.argv + ["-c", router.conf], stdout=log, stderr=subprocess.STDOUT,
                                           env=self.env, preexec_fn=helpers._die_with_parent)
        finally:
            log.close()

    def wait_mesh(self, timeout=60):
        """Until every running router lists every running router as a node
        and answers management requests sent through every other one
        (``_topo/0/<id>/$management``): right after the nodes appear the
        routes still change, and a request sent then can be lost."""
        deadline = time.time() + timeout
        want = sorted(r.id for r in self.routers if r.running)
        last = {}
        for r in self.routers:
            if not r.running:
                continue
            while True:
                if r.proc.poll() is not None:
                    raise RuntimeError("qdrouterd %s exited (%s):\n%s" % (r.id, r.proc.returncode, r.log_tail()))
                try:
                    with router_client.ManagementSession(r.management_url, timeout=2) as s:
                        seen = s.routers()
                        last[r.id] = seen
                        if seen == want:
                            replies = s.execute([protocol.Request("QUERY", protocol.NODE_TYPE, router=other,
                                                                  attribute_names=["id"]) for other in want])
                            last[r.id] = [(x.request.router, x.status, x.description) for x in replies]
                            if all(x.ok for x in replies):
                                break
                except protocol.RouterManagementError as e:
                    last[r.id] = str(e)
                if time.time() > deadline:
                    raise RuntimeError("the mesh did not form within %ss: %s wants %s, has %s"
                                       % (timeout, r.id, want, last.get(r.id)))
                time.sleep(0.3)

    def stop(self, index, timeout=10):
        r = self.routers[index]
        if r.running:
            r.proc.terminate()
            try:
                r.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                r.proc.kill()
                r.proc.wait(timeout)

    def kill(self, index):
        """kill -9 one router."""
        r = self.routers[index]
        if r.running:
            os.kill(r.proc.pid, signal.SIGKILL)
            r.proc.wait(10)

    def close(self):
        for i in range(len(self.routers)):
            try:
                self.stop(i)
            except Exception:  # cleanup goes on whatever happens
                self.kill(i)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def cleanup(self):
        self.close()
        shutil.rmtree(self.base_dir, ignore_errors=True)
