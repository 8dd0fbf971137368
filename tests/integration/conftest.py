"""Fixtures for the integration tests: a real ActiveMQ Artemis broker.

``artemis`` (session): one broker instance, made with ``artemis create`` like
roles/broker does, whose etc/broker.xml is the role's own template
(roles/broker/templates/broker.xml.j2) rendered by Ansible with the role's
defaults (helpers.render_role_broker_xml): the tests run the configuration
users get. ``--require-login``, a management user (role ``manage``), a
messaging user (role ``messaging``), Jolokia on 127.0.0.1 on a free port with
jolokia-access.xml allowing ``http://localhost``, the role's acceptors (AMQP,
core, OpenWire, STOMP, MQTT) on free ports. It is stopped
(and killed if it does not stop) at the end of the session whatever happens.
Each pytest-xdist worker gets its own broker.

``space`` (function): a clean brokered address space on that broker: every
address the broker did not start with is deleted, the ownership ledger is
removed and a fresh connection file (the one the broker role writes) is put in
the test's temp dir.
"""

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# the integration tier talks AMQP with real clients: without python-qpid-proton
# the whole directory is skipped, with the reason (the unit tier needs none of it)
pytest.importorskip("proton", reason="python-qpid-proton is not installed: pip install -r requirements-test.txt")

import helpers  # noqa: E402
from brokered_space import Space  # noqa: E402

SPACE = "itest"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "integration: needs a real ActiveMQ Artemis broker (Java and the Artemis tarball)")


@pytest.fixture(scope="session")
def artemis(tmp_path_factory):
    reason = helpers.missing_prerequisites()
    if reason:
        pytest.skip(reason)
    broker = helpers.ArtemisBroker(str(tmp_path_factory.mktemp("artemis")))
    try:
        broker.create()
        broker.start()
        yield broker
    finally:
        broker.stop()
        # keep etc/ and the log for post-mortems, drop the preallocated journal
        shutil.rmtree(os.path.join(broker.instance, "data"), ignore_errors=True)


def _fresh_space(broker, directory):
    broker.wipe()
    path = broker.write_connection_file(os.path.join(str(directory), "%s.json" % SPACE), SPACE)
    return Space(broker, SPACE, path)


@pytest.fixture
def space(artemis, tmp_path):
    """A clean, empty address space."""
    return _fresh_space(artemis, tmp_path)


@pytest.fixture(scope="module")
def _demo_space(artemis, tmp_path_factory):
    return _fresh_space(artemis, tmp_path_factory.mktemp("demo"))


@pytest.fixture
def demo_space(_demo_space):
    """The Molecule demo space (helpers.DEMO_ADDRESSES) converged; shared by a
    module's tests and converged again only when a test (or another module
    sharing the broker) changed it. ``.baseline`` is its snapshot."""
    names = [a["address"] for a in helpers.DEMO_ADDRESSES]
    sp = _demo_space
    if sp.baseline is None or sp.snapshot(names) != sp.baseline:
        sp.broker.wipe()
        sp.converge(helpers.DEMO_ADDRESSES)
        sp.baseline = sp.snapshot(names)
    return sp


@pytest.fixture(scope="module")
def router_mesh(tmp_path_factory):
    """Three real qdrouterd processes, a full interior mesh configured like the
    router role (routers.RouterMesh); stopped (killed if they do not stop) at
    the end of the module. Skips, saying why, when no qdrouterd can be built."""
    import routers

    unused_argv, unused_env, reason = routers.find_qdrouterd()
    if reason:
        pytest.skip(reason)
    mesh = routers.RouterMesh(str(tmp_path_factory.mktemp("routers")), n=3)
    try:
        mesh.start()
        yield mesh
    finally:
        mesh.close()


@pytest.fixture(scope="session")
def keycloak(tmp_path_factory):
    """One real Keycloak 26.4.7 for the whole session (keycloak_server.py):
    ``.url``, ``.admin_user``, ``.admin_password``, ``.stop()``, ``.start()``
    (same data and ports). A test that stops it starts it again in a
    ``finally`` (``keycloak_admin`` also starts it when a test left it down).
    Skips, saying why, only without Java or the archive."""
    import keycloak_server

    reason = keycloak_server.missing_prerequisites()
    if reason:
        pytest.skip(reason)
    server = keycloak_server.KeycloakServer(str(tmp_path_factory.mktemp("keycloak")))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def keycloak_admin(keycloak):
    """A keycloak_admin.KeycloakAdmin on the session's Keycloak (started again
    first when an earlier test left it stopped)."""
    import keycloak_admin as admin_api

    if not keycloak.running:
        keycloak.start()
    return admin_api.KeycloakAdmin.of(keycloak)
