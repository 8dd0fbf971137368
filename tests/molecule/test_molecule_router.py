"""Runs the Molecule scenario molecule/router as part of the suite.

Three router and two broker containers (the systemd image of
scripts/build-test-image.sh) on one podman network; converge is
playbooks/site.yml with two standard address spaces (the router role builds
qdrouterd once on the first router from the vendor source archive and the
others unpack its tree; Artemis from the local Maven cache); idempotence;
verify checks the mesh, the data plane of both spaces with real AMQP clients
through every router (anycast, multicast, queues, a partitioned queue, a
durable subscription, dead letter, expiry, SASL PLAIN), the full mesh link by
link, path redundancy (a link cut, traffic via the third router), every
multicast receiver getting every message, isolation of two spaces for every
type, a kill -9 of a router while traffic flows (reconnect, nothing lost, the
keeper's restore time measured and bounded - printed here as KEEPER-RESTORE,
next converge unchanged), the config check and uninstall
(molecule/router/verify.yml and the verify-*.yml playbooks it imports, one per
concern; its pass/fail rules: molecule/router/checks.py).
Skips only when podman, molecule or the source archive cannot be had.
"""
import os
import re
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


def keeper_lines(log_text):
    """The keeper's measured restore time(s) that verify.yml printed."""
    return sorted(set(m.group(0).rstrip('"') for m in re.finditer(r"KEEPER-RESTORE [^\n]*?\)", log_text)))


@pytest.mark.skipif(_unusable() is not None, reason=str(_unusable()))
def test_molecule_router_scenario(record_property):
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", os.path.join(REPO, "scripts", "containers.conf"))
    env["PY_COLORS"] = "0"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    log_path = os.path.join(REPO, "tests", "output", "molecule-router.log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.run(["molecule", "test", "-s", "router"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT, timeout=40 * 60, check=False)
    with open(log_path) as f:
        text = f.read()
    for line in keeper_lines(text):
        sys.stdout.write("\n%s\n" % line)
        record_property("keeper_restore", line)
    if proc.returncode != 0:
        sys.stderr.write(text[-12000:])
    assert proc.returncode == 0, "molecule test failed; log: %s" % log_path
