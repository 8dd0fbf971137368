"""Runs the Molecule scenario molecule/router as part of the suite.

Three router and two broker containers (the systemd image of
scripts/build-test-image.sh) on one podman network; converge is
playbooks/site.yml with two standard address spaces (the router role builds
qdrouterd once on the first router from the vendor source archive and the
others unpack its tree; Artemis from the local Maven cache); idempotence
(verify-identity's second run of site.yml changes one password and nothing else);
verify checks the mesh, Prometheus on the Keycloak host scraping every
target of the inventory (Keycloak, every Artemis instance, the auth service
on every router, every MQTT gateway instance) with each one up, the data plane of both spaces with real AMQP clients
through every router (anycast, multicast, queues, a partitioned queue, a
durable subscription, dead letter, expiry, SASL PLAIN), the full mesh link by
link, path redundancy (a link cut, traffic via the third router), every
multicast receiver getting every message, isolation of two spaces for every
type, a kill -9 of a router while traffic flows (reconnect, nothing lost, the
keeper's restore time measured and bounded - printed here as KEEPER-RESTORE,
next converge unchanged), the rolling upgrade (Artemis 2.39.0 -> 2.40.0, each router restarted,
Keycloak 26.4.7 -> 26.5.6 with its database migrated, a downgrade refused) while clients run, identity (Keycloak with PostgreSQL on a sixth
host: each space's users and their per-address permissions through the
routers, Keycloak stopped and started, a password change, a -vvv --diff run
of site.yml searched for secrets), the config check and uninstall, then the
Keycloak host (HTTPS with the CA only, no plain HTTP, the management port,
the admin's token, the secrets' files, the hardened unit, a rebuild on a
build-time change, uninstall; the role's check mode on the fresh host in
prepare.yml) (molecule/router/verify.yml and the verify-*.yml playbooks it imports, one per
concern; its pass/fail rules: molecule/router/checks.py).
Skips only when podman, molecule or an archive (router source, Artemis 2.39.0 and 2.40.0, Keycloak 26.4.7 and
26.5.6) cannot be had.
"""
import re
import sys

import pytest

from scenario import ARTEMIS, ARTEMIS_PREVIOUS, KEYCLOAK, KEYCLOAK_NEXT, ROUTER, run, unusable

pytestmark = pytest.mark.molecule
NEEDS = (ROUTER, ARTEMIS, ARTEMIS_PREVIOUS, KEYCLOAK, KEYCLOAK_NEXT)


def keeper_lines(log_text):
    """The keeper's measured restore time(s) that verify.yml printed."""
    return sorted(set(m.group(0).rstrip('"') for m in re.finditer(r"KEEPER-RESTORE [^\n]*?\)", log_text)))


def rolling_lines(log_text):
    """The rolling upgrade's lines that verify-upgrade.yml printed: each host's
    time to be ready again (ROLLING ...) and each client's longest gap (GAP ...)."""
    pattern = r"(?:ROLLING \S+ (?:Artemis|qdrouterd|Keycloak)|GAP queue=)[^\"\n]*"
    return sorted(set(m.group(0) for m in re.finditer(pattern, log_text)))


@pytest.mark.skipif(unusable(*NEEDS) is not None, reason=str(unusable(*NEEDS)))
def test_molecule_router_scenario():
    # the longest scenario (three routers, two brokers, Keycloak, an upgrade pair): at a load of
    # 6-10 on 2 cores (beside tests/integration) its converge alone took 31 minutes, the whole
    # scenario more than 65 through podman exec (CI of 2026-11-29); the whole suite stays under
    # 90 minutes, which bounds this one anyway
    rc, text, seconds, log_path = run("router", timeout_minutes=80)
    for line in keeper_lines(text):
        sys.stdout.write("\n%s\n" % line)
    for line in rolling_lines(text):
        sys.stdout.write("\n%s\n" % line)
    sys.stdout.write("\nROUTER-SCENARIO %.0f s\n" % seconds)
    assert rc == 0, "molecule test failed; log: %s" % log_path
