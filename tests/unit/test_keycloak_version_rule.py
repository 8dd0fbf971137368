"""The keycloak role's version rule (roles/keycloak/tasks/version.yml, run by
its prereqs and by rolling_upgrade.yml's checks) on localhost: a
keycloak_version older than the distribution <keycloak_home_base>/current
points at is refused with both versions in the message; the same, a newer
one, a fresh host (no current) and a current that names no version pass."""
import os

import pytest

from role_play import failed, role_play


def _home(tmp_path, current):
    base = tmp_path / "opt-keycloak"
    base.mkdir()
    if current:
        (base / current).mkdir()
        os.symlink(str(base / current), str(base / "current"))
    return base


def _run(tmp_path, current, version):
    base = _home(tmp_path, current)
    _out, results = role_play(tmp_path, "keycloak", "version",
                              {"keycloak_home_base": str(base), "keycloak_version": version})
    return failed(results)


def test_an_older_version_is_refused_naming_both(tmp_path):
    bad = _run(tmp_path, "keycloak-26.5.6", "26.4.7")
    assert len(bad) == 1
    msg = bad[0][1]["msg"]
    assert msg.startswith("keycloak_version=26.4.7 is older than the Keycloak localhost runs (26.5.6, ")
    assert "cannot go back" in msg and "Set keycloak_version to 26.5.6" in msg


def test_an_older_patch_and_an_older_minor_of_a_newer_major_are_refused(tmp_path):
    # version order, not string order: 26.10.0 is newer than 26.9.3
    assert len(_run(tmp_path, "keycloak-26.10.0", "26.9.3")) == 1


@pytest.mark.parametrize("current,version", [
    ("keycloak-26.5.6", "26.5.6"),    # the same: nothing to refuse
    ("keycloak-26.4.7", "26.5.6"),    # an upgrade
    ("keycloak-26.9.3", "26.10.0"),   # an upgrade in version order
    (None, "26.4.7"),                 # a fresh host: no current link
    ("keycloak-nightly", "26.4.7"),   # a current that names no version: not ours to judge
])
def test_the_same_a_newer_version_and_a_fresh_host_pass(tmp_path, current, version):
    assert _run(tmp_path, current, version) == []
