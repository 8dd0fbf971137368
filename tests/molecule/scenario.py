"""What the Molecule wrappers share: why a scenario cannot run here (the
skip reason) and running one with its log in tests/output/."""
import os
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the archives the scenarios install offline (scripts/test.sh puts them there)
ARTEMIS = os.environ.get("ENMASSE_ARTEMIS_ARCHIVE") or os.path.expanduser(
    "~/.m2/repository/org/apache/activemq/apache-artemis/2.40.0/apache-artemis-2.40.0-bin.tar.gz")
# the older Artemis of the upgrade pair (molecule/router converges with it, then upgrades)
ARTEMIS_PREVIOUS = os.environ.get("ENMASSE_ARTEMIS_PREVIOUS_ARCHIVE") or os.path.expanduser(
    "~/.m2/repository/org/apache/activemq/apache-artemis/2.39.0/apache-artemis-2.39.0-bin.tar.gz")
KEYCLOAK = os.environ.get("ENMASSE_KEYCLOAK_ARCHIVE") or os.path.expanduser(
    "~/.m2/repository/org/keycloak/keycloak-quarkus-dist/26.4.7/keycloak-quarkus-dist-26.4.7.tar.gz")
# the newer Keycloak molecule/router's rolling upgrade goes to (its database migrated)
KEYCLOAK_NEXT = os.environ.get("ENMASSE_KEYCLOAK_NEXT_ARCHIVE") or os.path.expanduser(
    "~/.m2/repository/org/keycloak/keycloak-quarkus-dist/26.5.6/keycloak-quarkus-dist-26.5.6.tar.gz")
ROUTER = os.environ.get("ENMASSE_ROUTER_ARCHIVE") or os.path.join(
    os.path.dirname(REPO), "shared", "vendor", "qpid-dispatch-1.19.0.tar.gz")
WHERE = {
    ARTEMIS: "no Artemis archive at %s (scripts/test.sh fetches it with Maven)",
    ARTEMIS_PREVIOUS: "no Artemis archive (the upgrade's older version) at %s (scripts/test.sh fetches it with Maven)",
    KEYCLOAK: "no Keycloak archive at %s (scripts/test.sh fetches it with Maven; or set ENMASSE_KEYCLOAK_ARCHIVE)",
    KEYCLOAK_NEXT: "no Keycloak archive (the upgrade's newer version) at %s (scripts/test.sh fetches it with Maven)",
    ROUTER: "no qpid-dispatch source archive at %s (set ENMASSE_ROUTER_ARCHIVE)",
}


def unusable(*archives):
    """Why the scenario cannot run on this machine, or None."""
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/test.sh installs it with apt as root)"
    if shutil.which("molecule") is None:
        return "molecule is not installed (pip install -r requirements-test.txt)"
    for path in archives:
        if not os.path.isfile(path):
            return WHERE[path] % path
    return None


def run(name, timeout_minutes=50):
    """``molecule test -s <name>``; returns (returncode, log text, seconds, log path).
    The log is tests/output/molecule-<name>.log; its tail goes to stderr when
    the scenario fails."""
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", os.path.join(REPO, "scripts", "containers.conf"))
    env.setdefault("ENMASSE_KEYCLOAK_ARCHIVE", KEYCLOAK)
    env.setdefault("ENMASSE_KEYCLOAK_NEXT_ARCHIVE", KEYCLOAK_NEXT)
    env["PY_COLORS"] = "0"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    log_path = os.path.join(REPO, "tests", "output", "molecule-%s.log" % name)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    start = time.monotonic()
    with open(log_path, "w") as log:
        # a process group of its own: at a timeout molecule and every playbook it started end
        # (killing molecule alone left its verify playbooks running beside the next scenario)
        proc = subprocess.Popen(["molecule", "test", "-s", name], cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = proc.wait(timeout=timeout_minutes * 60)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            log.write("\nscenario.py: timed out after %s minutes; its processes stopped, its instances destroyed\n"
                      % timeout_minutes)
            log.flush()
            subprocess.run(["molecule", "destroy", "-s", name], cwd=REPO, env=env, stdout=log,
                           stderr=subprocess.STDOUT, timeout=600, check=False)
            with open(log_path) as f:
                sys.stderr.write(f.read()[-12000:])
            raise
    seconds = time.monotonic() - start
    with open(log_path) as f:
        text = f.read()
    if returncode != 0:
        sys.stderr.write(text[-12000:])
    return returncode, text, seconds, log_path


def stop_group(proc, grace=30):
    """SIGTERM to proc's process group, SIGKILL after grace seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        # molecule ended; a playbook of its group may still run
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(1)
