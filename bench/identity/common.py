"""Shared parts of the identity benchmarks (bench/identity/*.py).

* ``keycloak(base_dir)``: a real Keycloak 26.4.7 by the integration tests'
  ``KeycloakServer`` (tests/integration/keycloak_server.py: the prebuilt
  ``start --optimized`` server, H2 ``dev-file`` database, HTTP on loopback),
  but with the JVM's default JIT and a 1 GiB heap (``BENCH_JAVA_OPTS``): the
  tests cap the JIT at C1 to start faster, which would make the password
  hashing measured here slower than on a production host (the ``keycloak``
  role keeps the default JIT).
* ``quiet(name)``: the QUIET window of /work/wt/HELPERS.md around a measured
  run (a file other helpers wait on), with ``uptime`` before and after.
* ``cpu_of(pid)``: the CPU seconds of a process and its threads (Keycloak's
  JVM, qdrouterd, the auth service) from /proc.
"""

import contextlib
import datetime
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import keycloak_server  # noqa: E402

BENCH_JAVA_OPTS = "-Xms256m -Xmx1g"
QUIET_FILE = os.environ.get("ENMASSE_QUIET_FILE", "/work/wt/QUIET")


def keycloak(base_dir):
    """A started KeycloakServer under ``base_dir`` with BENCH_JAVA_OPTS."""
    reason = keycloak_server.missing_prerequisites()
    if reason:
        raise SystemExit("cannot run Keycloak: %s" % reason)
    keycloak_server.prepared_home()   # built (and seeded) with the tests' options: shared cache
    plain_env = keycloak_server._env

    def bench_env(extra=None):
        return dict(plain_env(extra), JAVA_OPTS_APPEND=BENCH_JAVA_OPTS)

    server = keycloak_server.KeycloakServer(base_dir)
    server._prepare()                  # seed copied with the tests' start options
    keycloak_server._env = bench_env
    try:
        server.start()
    finally:
        keycloak_server._env = plain_env
    return server


def java_pid(server):
    """The JVM's pid (kc.sh execs java as the leader's child or itself)."""
    pid = server.proc.pid
    out = subprocess.run(["pgrep", "-g", str(os.getpgid(pid)), "java"], capture_output=True, text=True, check=False)
    pids = [int(p) for p in out.stdout.split()]
    return pids[0] if pids else pid


def cpu_of(pid):
    """user+system CPU seconds of ``pid`` (all its threads)."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


def uptime():
    with open("/proc/loadavg") as handle:
        return "/".join(handle.read().split()[:3])


@contextlib.contextmanager
def quiet(name, log=print):
    """The QUIET window: waits while another owns it, creates it with our name
    and time, yields the load before; deletes it afterwards (also on error)."""
    while os.path.exists(QUIET_FILE):
        log("waiting: %s exists (another benchmark is measuring)" % QUIET_FILE)
        time.sleep(20)
    with open(QUIET_FILE, "w") as handle:
        handle.write("%s %s\n" % (name, datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")))
    window = {"load_before": uptime(), "started": time.time()}
    try:
        yield window
    finally:
        try:
            os.remove(QUIET_FILE)
        except OSError:
            pass
        window["load_after"] = uptime()
        window["seconds"] = round(time.time() - window["started"], 1)
        log("quiet window %.1f s; load %s -> %s" % (window["seconds"], window["load_before"], window["load_after"]))
