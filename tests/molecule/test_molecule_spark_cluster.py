"""Runs the Molecule scenario molecule/spark-cluster as part of the suite.

Four systemd containers on their own podman network: a Spark standalone
master and two workers (role spark_standalone) and the capacity planner
submitting to them, the metrics store on a mount they share. Verify: the
plan on spark:// equals the plan on local[2]; a worker killed in the middle
of the job does not fail it and the plan is the same; a master that does not
answer fails the run with a clear message and leaves the last plan untouched
(molecule/spark-cluster/verify.yml). Skips only when podman cannot be had.
"""
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.molecule


def _podman_usable():
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/test.sh installs it with apt as root)"
    if shutil.which("molecule") is None:
        return "molecule is not installed (pip install -r requirements-test.txt)"
    return None


@pytest.mark.skipif(_podman_usable() is not None, reason=str(_podman_usable()))
def test_molecule_spark_cluster_scenario():
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", os.path.join(REPO, "scripts", "containers.conf"))
    env["PY_COLORS"] = "0"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    log_path = os.path.join(REPO, "tests", "output", "molecule-spark-cluster.log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.run(["molecule", "test", "-s", "spark-cluster"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT, timeout=40 * 60, check=False)
    if proc.returncode != 0:
        with open(log_path) as f:
            tail = f.read()[-12000:]
        sys.stderr.write(tail)
    assert proc.returncode == 0, "molecule test failed; log: %s" % log_path
