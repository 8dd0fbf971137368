"""Runs the Molecule scenario (molecule/default) as part of the suite.

The scenario builds (or reuses) a Debian systemd image from Debian packages,
deploys the broker role and converges the demo brokered space inside it,
checks idempotence, and verifies with real AMQP clients (see
molecule/default/verify.yml). Skips only when podman cannot be had.
"""
import pytest

from scenario import run, unusable

pytestmark = pytest.mark.molecule


@pytest.mark.skipif(unusable() is not None, reason=str(unusable()))
def test_molecule_default_scenario():
    rc, unused, seconds, log_path = run("default")
    assert rc == 0, "molecule test failed; log: %s" % log_path
