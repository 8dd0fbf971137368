"""Runs the Molecule scenario (molecule/default) as part of the suite.

The scenario builds (or reuses) a Debian systemd image from Debian packages,
deploys the broker role and converges the demo brokered space inside it,
checks idempotence, and verifies with real AMQP clients (see
molecule/default/verify.yml). Skips only when podman cannot be had.
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
def test_molecule_default_scenario():
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", os.path.join(REPO, "scripts", "containers.conf"))
    env["PY_COLORS"] = "0"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    log_path = os.path.join(REPO, "tests", "output", "molecule-default.log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.run(["molecule", "test", "-s", "default"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT, timeout=40 * 60, check=False)
    if proc.returncode != 0:
        with open(log_path) as f:
            tail = f.read()[-12000:]
        sys.stderr.write(tail)
    assert proc.returncode == 0, "molecule test failed; log: %s" % log_path
