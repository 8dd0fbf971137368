"""The auth service's mesh probe (plugins/module_utils/auth/mesh.py, alert
EnmasseRouterLinkDown in docs/monitoring.md) against REAL qdrouterd 1.19
routers: the service as the role installs it, pointed at router-0's
management listener, expecting 2 routers, scraped over HTTPS with basic auth
as Prometheus does. A 2-router mesh reads 2 of 2 and management up; router-1
stopped, it reads 1 of 2; router-0 (the local router) stopped, management
reads 0 and the router count is gone. Logins are not held up meanwhile: the
SASL port answers while the probe waits on a router that is down.

Its address counts (alert EnmasseAddressesPending): the collection's own
entities made on router-0 (standard/entities.py), a queue whose broker does
not run (nothing listens on the connector's port: its autoLinks stay
inactive) reads Pending, router-only addresses read Active, per space.

qdrouterd's own metrics (``qdr_*``, the router entity's counters): 22 of
them, the mesh's other router counted, and 1,000 deliveries a client sends
through router-0 and accepts counted in ingress, egress and accepted."""
import json
import os
import socket
import threading
import time

import pytest

import routers
from helpers import free_port
from metrics_http import metrics_scrape
from test_auth_service_router import AuthService, build_router, make_tls, service_tls, wait_listening

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics
from ansible_collections.enmasse.messaging.plugins.module_utils.router import reader
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as ent

pytestmark = [pytest.mark.integration, pytest.mark.router]

USER, PASSWORD = "prometheus", "scrape-pw-mesh-0123456789"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    pytest.importorskip("proton")
    build_router()
    root = tmp_path_factory.mktemp("meshprobe")
    mesh = routers.RouterMesh(str(root / "routers"), n=2)
    mesh.start()
    tls = make_tls(str(root))
    password_file = str(root / "metrics-password.json")
    with open(password_file, "w") as handle:
        json.dump(metrics.password_file_document(USER, PASSWORD, "salt"), handle)
    users_dir = str(root / "users")
    os.makedirs(users_dir)
    port = free_port()
    extra = {"metrics_host": "127.0.0.1", "metrics_port": port, "metrics_password_file": password_file,
             "mesh_management_url": mesh[0].management_url, "mesh_expected_routers": 2,
             "mesh_poll_interval": 1, "mesh_timeout": 2}
    service = AuthService(str(root / "service"), users_dir, free_port(), tls=service_tls(tls), extra=extra).start()
    try:
        wait_listening(port, service.proc, service.log, "the metrics endpoint")
        yield {"mesh": mesh, "service": service, "port": port, "ca": tls["ca"]}
    finally:
        service.stop()
        mesh.cleanup()


def scraped(env, prefix):
    """{series: value} of the scrape's samples whose name starts with ``prefix``."""
    status, text = metrics_scrape(env["port"], env["ca"], USER, PASSWORD)
    assert status == 200, text
    return dict((name, float(value)) for name, value in (
        line.rsplit(" ", 1) for line in text.splitlines() if line.startswith(prefix)))


def mesh_values(env):
    return scraped(env, "enmasse_router_")


def wait_for(env, want, timeout=60):
    deadline, seen = time.time() + timeout, None
    while time.time() < deadline:
        seen = mesh_values(env)
        if seen == want:
            return seen
        time.sleep(0.5)
    raise AssertionError("the probe reads %s, not %s, after %ss:\n%s" % (seen, want, timeout, env["service"].text()[-3000:]))


def address_values(env):
    return scraped(env, "enmasse_addresses{")


def test_probe_counts_each_spaces_addresses_by_phase(env):
    # runs first: router-0 is up (the next test stops it)
    made = ent.connector_entities([{"name": "b1", "host": "127.0.0.1", "amqp_port": free_port()}])
    made.update(ent.address_entities("shop", {"address": "orders", "type": "queue"}, homes=["b1"]))
    made.update(ent.address_entities("shop", {"address": "events", "type": "anycast"}))
    made.update(ent.address_entities("iot", {"address": "telemetry", "type": "multicast"}))
    with env["mesh"].session(0, timeout=5) as session:
        for name, entity in sorted(made.items()):
            attributes = dict(entity)
            session.create(reader.entity_type(attributes.pop("type")), name, attributes)
    want = {'enmasse_addresses{space="shop",phase="Active"}': 1, 'enmasse_addresses{space="shop",phase="Pending"}': 1,
            'enmasse_addresses{space="iot",phase="Active"}': 1, 'enmasse_addresses{space="iot",phase="Pending"}': 0}
    deadline, seen = time.time() + 30, None
    while time.time() < deadline and seen != want:
        time.sleep(0.5)
        seen = address_values(env)
    assert seen == want, "%s\n%s" % (seen, env["service"].text()[-3000:])
    assert "mesh probe: addresses not ready: shop 1" in env["service"].text()


def router_counters(env):
    return scraped(env, "qdr_")


def test_probe_serves_the_routers_own_metrics(env):
    # runs while router-0 (the local router) and router-1 are up: qdrouterd's own counters under its own
    # names, read from the router entity; 1,000 deliveries a client sends through router-0 (and accepts)
    # show in them (the probe's own management requests add about 10 a second: too few to pass alone)
    from proton import Message
    from proton.utils import BlockingConnection
    deadline, before = time.time() + 30, {}
    while time.time() < deadline and "qdr_accepted_deliveries_total" not in before:
        before = router_counters(env)
        time.sleep(0.5)
    assert len(before) == 22, before
    assert before["qdr_routers_total"] == 1  # the other router
    assert before["qdr_connections_total"] >= 2  # the inter-router connection and the probe's own
    url, got = env["mesh"][0].management_url, []
    # two connections, each pumped by its own thread: the sender waits for each outcome (accepted)
    inbound = BlockingConnection(url, timeout=30)
    receiver = inbound.create_receiver("probe-counters", credit=100)

    def receive():
        for unused in range(1000):
            got.append(receiver.receive(timeout=30).body)
            receiver.accept()
    thread = threading.Thread(target=receive, daemon=True)
    thread.start()
    outbound = BlockingConnection(url, timeout=30)
    try:
        sender = outbound.create_sender("probe-counters")
        for i in range(1000):
            sender.send(Message(body="m%d" % i))
        thread.join(30)
    finally:
        outbound.close()
        inbound.close()
    assert len(got) == 1000
    want = {"qdr_deliveries_ingress_total": 1000, "qdr_deliveries_egress_total": 1000,
            "qdr_accepted_deliveries_total": 1000}
    deadline, grew = time.time() + 30, {}
    while time.time() < deadline:
        after = router_counters(env)
        grew = dict((k, after.get(k, 0) - before[k]) for k in want)
        if all(grew[k] >= want[k] for k in want):
            break
        time.sleep(0.5)
    assert all(grew[k] >= want[k] for k in want), (grew, env["service"].text()[-3000:])
    assert grew["qdr_accepted_deliveries_total"] < 1200, grew


def test_probe_follows_the_mesh(env):
    wait_for(env, {"enmasse_router_mesh_routers": 2, "enmasse_router_mesh_expected_routers": 2,
                   "enmasse_router_management_up": 1})
    env["mesh"].stop(1)
    wait_for(env, {"enmasse_router_mesh_routers": 1, "enmasse_router_mesh_expected_routers": 2,
                   "enmasse_router_management_up": 1})
    env["mesh"].stop(0)
    wait_for(env, {"enmasse_router_mesh_expected_routers": 2, "enmasse_router_management_up": 0})
    # the SASL listener still accepts connections at once (the probe has a thread of its own)
    started = time.time()
    with socket.create_connection(("127.0.0.1", env["service"].port), timeout=2):
        pass
    assert time.time() - started < 1
    assert "mesh probe: the router reaches 2 of 2 routers" in env["service"].text()
