"""The auth service's mesh probe (plugins/module_utils/auth/mesh.py, alert
EnmasseRouterLinkDown in docs/monitoring.md) against REAL qdrouterd 1.19
routers: the service as the role installs it, pointed at router-0's
management listener, expecting 2 routers, scraped over HTTPS with basic auth
as Prometheus does. A 2-router mesh reads 2 of 2 and management up; router-1
stopped, it reads 1 of 2; router-0 (the local router) stopped, management
reads 0 and the router count is gone. Logins are not held up meanwhile: the
SASL port answers while the probe waits on a router that is down."""
import json
import os
import socket
import time

import pytest

import routers
from helpers import free_port
from metrics_http import metrics_scrape
from test_auth_service_router import AuthService, build_router, make_tls, service_tls, wait_listening

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics

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


def mesh_values(env):
    status, text = metrics_scrape(env["port"], env["ca"], USER, PASSWORD)
    assert status == 200, text
    return dict((name, float(value)) for name, value in (
        line.rsplit(" ", 1) for line in text.splitlines() if line.startswith("enmasse_router_")))


def wait_for(env, want, timeout=60):
    deadline, seen = time.time() + timeout, None
    while time.time() < deadline:
        seen = mesh_values(env)
        if seen == want:
            return seen
        time.sleep(0.5)
    raise AssertionError("the probe reads %s, not %s, after %ss:\n%s" % (seen, want, timeout, env["service"].text()[-3000:]))


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
