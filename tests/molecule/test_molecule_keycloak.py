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
import sys

import pytest

from scenario import KEYCLOAK, run, unusable

pytestmark = pytest.mark.molecule


@pytest.mark.skipif(unusable(KEYCLOAK) is not None, reason=str(unusable(KEYCLOAK)))
def test_molecule_keycloak_scenario(record_property):
    rc, unused, seconds, log_path = run("keycloak", timeout_minutes=20)
    sys.stdout.write("\nKEYCLOAK-SCENARIO %.0f s\n" % seconds)
    record_property("keycloak_scenario_seconds", round(seconds))
    assert rc == 0, "molecule test failed; log: %s" % log_path
