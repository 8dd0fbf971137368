"""Runs the Molecule scenario molecule/spark-cluster as part of the suite.

Four systemd containers on their own podman network: a Spark standalone
master and two workers (role spark_standalone) and the capacity planner
submitting to them, the metrics store on a mount they share. Verify: the
plan on spark:// equals the plan on local[2]; a worker killed in the middle
of the job does not fail it and the plan is the same; a master that does not
answer fails the run with a clear message and leaves the last plan untouched
(molecule/spark-cluster/verify.yml). Skips only when podman cannot be had.
"""
import pytest

from scenario import run, unusable

pytestmark = pytest.mark.molecule


@pytest.mark.skipif(unusable() is not None, reason=str(unusable()))
def test_molecule_spark_cluster_scenario():
    rc, unused, seconds, log_path = run("spark-cluster")
    assert rc == 0, "molecule test failed; log: %s" % log_path
