"""The auth service's metrics endpoint (plugins/module_utils/auth/metrics.py,
docs/auth-service.md "Metrics"): the REAL service as the role installs it,
behind a REAL qdrouterd 1.19 with REAL AMQP clients (python-qpid-proton) that
log in right and wrong; then scraped over HTTPS (the service's certificate,
verified with the CA that signed it) with basic auth, as Prometheus does.
The counters must say what the clients did, and nothing a client sent (user
names, passwords) may appear in the scrape. Without or with wrong credentials
and over plain HTTP the endpoint gives nothing."""
import json
import os
import time
import urllib.error

import pytest

from helpers import free_port
from metrics_http import metrics_scrape
from test_auth_service_router import (ALL, AuthService, build_router, connect, make_tls, refused, running_router,
                                      service_tls, wait_listening, write_users)

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics

pytestmark = [pytest.mark.integration, pytest.mark.router]

SCRAPE_USER = "prometheus"
SCRAPE_PASSWORD = "scrape-pw-1234567890"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    pytest.importorskip("proton")
    prefix = build_router()
    root = tmp_path_factory.mktemp("authmetrics")
    users_dir = str(root / "users")
    os.makedirs(users_dir)
    write_users(users_dir, "space-a", {"alice": ("secret-a", ALL)})
    # space-c: a router plugin whose realm has no users file (unknown realm)
    tls = make_tls(str(root))
    password_file = str(root / "metrics-password.json")
    with open(password_file, "w") as handle:
        json.dump(metrics.password_file_document(SCRAPE_USER, SCRAPE_PASSWORD, "host-salt"), handle)
    metrics_port = free_port()
    extra = {"metrics_host": "127.0.0.1", "metrics_port": metrics_port, "metrics_password_file": password_file}
    service = AuthService(str(root / "service"), users_dir, free_port(), tls=service_tls(tls), extra=extra).start()
    wait_listening(metrics_port, service.proc, service.log, "the metrics endpoint")
    ports = {"space-a": free_port(), "space-c": free_port()}
    try:
        with running_router(prefix, root, ports, service.port, tls):
            yield {"ports": ports, "service": service, "ca": tls["ca"], "metrics_port": metrics_port}
    finally:
        service.stop()


def scrape(env, user=SCRAPE_USER, password=SCRAPE_PASSWORD, scheme="https"):
    """(HTTP status, body) of GET /metrics, verifying the service's certificate with the CA."""
    return metrics_scrape(env["metrics_port"], env["ca"], user, password, scheme)


def samples(text):
    """{series line without value: value} of a scrape."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def auth_count(values, realm, outcome):
    return values.get('enmasse_auth_service_authentications_total{realm="%s",outcome="%s"}' % (realm, outcome), 0)


def test_logins_through_the_router_are_counted_by_realm_and_outcome(env):
    for unused in range(2):
        connect(env, "space-a", "alice", "secret-a").close()
    for unused in range(3):
        refused(env, "space-a", "alice", "not-the-password")
    refused(env, "space-a", "mallory", "guess")
    refused(env, "space-c", "alice", "secret-a")
    status, text = scrape(env)
    assert status == 200
    values = samples(text)
    assert auth_count(values, "space-a", "ok") == 2
    assert auth_count(values, "space-a", "wrong_password") == 3
    assert auth_count(values, "space-a", "unknown_user") == 1
    # the unknown realm is folded into _other: a made-up realm adds no series
    assert auth_count(values, "_other", "unknown_realm") == 1
    assert not [k for k in values if 'realm="space-c"' in k]
    assert values["enmasse_auth_service_connections_total"] >= 7
    assert values["enmasse_auth_service_start_time_seconds"] <= time.time()
    for secret in ("alice", "mallory", "secret-a", "not-the-password", "guess"):
        assert secret not in text


def test_the_open_connection_gauge_falls_back_when_the_router_closes(env):
    end = time.time() + 20
    while time.time() < end:    # the router closes its service connection right after the open
        if samples(scrape(env)[1])["enmasse_auth_service_connections"] == 0:
            break
        time.sleep(0.2)
    assert samples(scrape(env)[1])["enmasse_auth_service_connections"] == 0


@pytest.mark.parametrize("user, password", [(None, None), (SCRAPE_USER, "wrong"), ("admin", SCRAPE_PASSWORD),
                                            (SCRAPE_USER, "")])
def test_without_the_right_credentials_the_endpoint_answers_401_and_no_metrics(env, user, password):
    status, text = scrape(env, user, password)
    assert status == 401
    assert "enmasse_auth_service" not in text


def test_plain_http_gets_nothing(env):
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        scrape(env, scheme="http")
