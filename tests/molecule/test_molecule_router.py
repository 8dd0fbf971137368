"""Runs the Molecule scenario molecule/router as part of the suite.

Three router and two broker containers (the systemd image of
scripts/build-test-image.sh) on one podman network; converge is
playbooks/site.yml with two standard address spaces (the router role builds
qdrouterd once on the first router from the vendor source archive and the
others unpack its tree; Artemis from the local Maven cache); idempotence;
verify checks the mesh, the data plane of both spaces with real AMQP clients
through every router (anycast, multicast, queues, a partitioned queue, a
durable subscription, dead letter, expiry, isolation, SASL PLAIN), a kill -9 of a router while
traffic flows (reconnect, keeper, nothing lost, next converge unchanged), the
config check and uninstall (molecule/router/verify.yml).
Skips only when podman, molecule or the source archive cannot be had.
"""
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHIVE = os.environ.get("ENMASSE_ROUTER_ARCHIVE") or os.path.join(
    os.path.dirname(REPO), "shared", "vendor", "qpid-dispatch-1.19.0.tar.gz")
ARTEMIS = os.environ.get("ENMASSE_ARTEMIS_ARCHIVE") or os.path.expanduser(
    "~/.m2/repository/org/apache/activemq/apache-artemis/2.40.0/apache-artemis-2.40.0-bin.tar.gz")

pytestmark = pytest.mark.molecule


def _unusable():
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/test.sh installs it with apt as root)"
    if shutil.which("molecule") is None:
        return "molecule is not installed (pip install -r requirements-test.txt)"
    if not os.path.isfile(ARCHIVE):
        return "no qpid-dispatch source archive at %s (set ENMASSE_ROUTER_ARCHIVE)" % ARCHIVE
    if not os.path.isfile(ARTEMIS):
        return "no Artemis archive at %s (scripts/test.sh fetches it with Maven)" % ARTEMIS
    return None


@pytest.mark.skipif(_unusable() is not None, reason=str(_unusable()))
def test_molecule_router_scenario():
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", os.path.join(REPO, "scripts", "containers.conf"))
    env["PY_COLORS"] = "0"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    log_path = os.path.join(REPO, "tests", "output", "molecule-router.log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.run(["molecule", "test", "-s", "router"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT, timeout=40 * 60, check=False)
    if proc.returncode != 0:
        with open(log_path) as f:
            tail = f.read()[-12000:]
        sys.stderr.write(tail)
    assert proc.returncode == 0, "molecule test failed; log: %s" % log_path
