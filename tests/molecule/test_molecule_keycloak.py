"""Runs the Molecule scenario molecule/keycloak as part of the suite.

One container of the systemd test image (scripts/build-test-image.sh) and the
keycloak role with Keycloak 26.4.7 from the local Maven cache: check mode on
the fresh host, converge, idempotence, and verify.yml as a user would check
it: HTTPS with the collection's CA (not the system trust), plain HTTP refused,
readiness and metrics on the management port over HTTPS, the admin's token
with the password kept on the controller, a wrong password refused, the
secrets' files, the unit's hardening, a rebuild on a build-time change,
uninstall. The scenario's duration is printed (KEYCLOAK-SCENARIO seconds).
Skips only when podman, molecule or the Keycloak archive cannot be had.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEYCLOAK = os.environ.get("ENMASSE_KEYCLOAK_ARCHIVE") or os.path.expanduser(
    "~/.m2/repository/org/keycloak/keycloak-quarkus-dist/26.4.7/keycloak-quarkus-dist-26.4.7.tar.gz")

pytestmark = pytest.mark.molecule


def _unusable():
    if shutil.which("podman") is None:
        return "podman is not installed (scripts/test.sh installs it with apt as root)"
    if shutil.which("molecule") is None:
        return "molecule is not installed (pip install -r requirements-test.txt)"
    if not os.path.isfile(KEYCLOAK):
        return "no Keycloak archive at %s (set ENMASSE_KEYCLOAK_ARCHIVE)" % KEYCLOAK
    return None


@pytest.mark.skipif(_unusable() is not None, reason=str(_unusable()))
def test_molecule_keycloak_scenario(record_property):
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", os.path.join(REPO, "scripts", "containers.conf"))
    env.setdefault("ENMASSE_KEYCLOAK_ARCHIVE", KEYCLOAK)
    env["PY_COLORS"] = "0"
    env["ANSIBLE_FORCE_COLOR"] = "0"
    log_path = os.path.join(REPO, "tests", "output", "molecule-keycloak.log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    start = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.run(["molecule", "test", "-s", "keycloak"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT, timeout=20 * 60, check=False)
    seconds = time.monotonic() - start
    sys.stdout.write("\nKEYCLOAK-SCENARIO %.0f s\n" % seconds)
    record_property("keycloak_scenario_seconds", round(seconds))
    if proc.returncode != 0:
        with open(log_path) as f:
            sys.stderr.write(f.read()[-12000:])
    assert proc.returncode == 0, "molecule test failed; log: %s" % log_path
