"""The auth service's metrics (plugins/module_utils/auth/metrics.py): the
outcomes the backends report, the realm label folding (no unbounded series
from made-up realms), the exposition text, the basic-auth check, the
endpoint's answers and the metrics_* settings."""
import base64
import json

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends, metrics, server
from test_auth_service import Loop, client, sasl, write

pytestmark = pytest.mark.unit


def test_users_file_backend_says_why(tmp_path):
    write(tmp_path, "space-a", {"alice": ("a", [])})
    be = backends.UsersFileBackend(str(tmp_path))
    assert be.authenticate("space-a", "alice", "a")[1] == backends.OK
    assert be.authenticate("space-a", "alice", "b") == (None, backends.WRONG_PASSWORD)
    assert be.authenticate("space-a", "bob", "a") == (None, backends.UNKNOWN_USER)
    assert be.authenticate("space-z", "alice", "a") == (None, backends.UNKNOWN_REALM)
    assert be.authenticate("../x", "alice", "a") == (None, backends.UNKNOWN_REALM)


def test_a_backend_with_check_only_gives_bad_credentials():
    class Only(object):
        def check(self, realm, username, password):
            return backends.Identity(username) if password == "pw" else None
    assert backends.authenticate(Only(), "s", "u", "pw")[1] == backends.OK
    assert backends.authenticate(Only(), "s", "u", "no") == (None, backends.BAD_CREDENTIALS)


def value(text, realm, outcome):
    key = 'enmasse_auth_service_authentications_total{realm="%s",outcome="%s"} ' % (realm, outcome)
    lines = [line for line in text.splitlines() if line.startswith(key)]
    return int(lines[0].split(" ")[1]) if lines else None


def test_made_up_realms_fold_into_one_series_and_known_ones_keep_their_name():
    m = metrics.Metrics()
    before = len(m.authentications)
    for i in range(1000):
        m.authentication("guess-%d" % i, backends.UNKNOWN_REALM)
        m.authentication("guess-%d" % i, metrics.REFUSED)
        m.authentication("guess-%d" % i, metrics.BACKEND_ERROR)
    m.authentication("bad\"realm\n", backends.WRONG_PASSWORD)   # not a realm name: folded too
    m.authentication("space-a", backends.WRONG_PASSWORD)
    m.authentication("space-a", backends.OK)
    assert len(m.authentications) == before + 2
    text = m.render()
    assert value(text, "_other", "unknown_realm") == 1000
    assert value(text, "_other", "refused") == 1000
    assert value(text, "_other", "wrong_password") == 1
    assert value(text, "space-a", "wrong_password") == 1
    assert value(text, "space-a", "ok") == 1
    assert value(text, "_other", "unknown_user") == 0      # the failure series exist from the start
    assert "guess" not in text
    assert "# TYPE enmasse_auth_service_authentications_total counter" in text
    assert "\nenmasse_auth_service_connections 0\n" in text


DOC = metrics.password_file_document("prometheus", "s3cret", "salt")


@pytest.mark.parametrize("header, ok", [
    ("Basic " + base64.b64encode(b"prometheus:s3cret").decode(), True),
    ("basic " + base64.b64encode(b"prometheus:s3cret").decode(), True),
    ("Basic " + base64.b64encode(b"prometheus:wrong").decode(), False),
    ("Basic " + base64.b64encode(b"admin:s3cret").decode(), False),
    ("Basic " + base64.b64encode(b"prometheus").decode(), False),
    ("Basic !!!", False),
    ("Bearer x", False),
    (None, False),
])
def test_basic_auth_check(header, ok):
    assert metrics.authorized(header, DOC) is ok
    assert "s3cret" not in json.dumps(DOC)


def test_the_endpoint_answers_only_an_authenticated_get_of_metrics():
    srv = metrics.MetricsServer(metrics.Metrics(), DOC)
    good = "Authorization: Basic %s\r\n" % base64.b64encode(b"prometheus:s3cret").decode()
    assert srv.answer(("GET /metrics HTTP/1.1\r\n%s\r\n" % good).encode())[0] == "200 OK"
    assert srv.answer(b"GET /metrics HTTP/1.1\r\n\r\n")[0].startswith("401")
    assert srv.answer(("GET /other HTTP/1.1\r\n%s\r\n" % good).encode())[0].startswith("404")
    assert srv.answer(("POST /metrics HTTP/1.1\r\n%s\r\n" % good).encode())[0].startswith("405")
    assert srv.answer(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n")[0].startswith("431")


@pytest.mark.parametrize("extra, message", [
    ({"metrics_port": 9466}, "needs tls_cert and metrics_password_file"),
    ({"metrics_port": 9466, "tls_cert": "c", "tls_key": "k"}, "needs tls_cert and metrics_password_file"),
    ({"metrics_port": 70000}, "metrics_port: 70000 must be an integer 0-65535"),
    ({"metrics_port": True}, "metrics_port"),
    ({"metrics_host": 1}, "metrics_host: 1 must be a string"),
])
def test_metrics_settings_are_checked(extra, message):
    with pytest.raises(ValueError, match=message):
        server.load_config(None, extra)


def test_server_counts_every_sasl_outcome_with_the_realm_folded():
    s = Loop()
    try:
        for mechanism, response, hostname in (("PLAIN", b"\0alice\0pw", "space-a"),
                                              ("PLAIN", b"\0alice\0wrong", "space-a"),
                                              ("ANONYMOUS", b"x", "made-up-1"),
                                              ("PLAIN", b"\0alice\0pw", "broken")):
            sock = client(s.port)
            sasl(sock, mechanism, response, hostname)    # counted before the outcome is sent
            sock.close()
        text = s.server.metrics.render()
    finally:
        s.close()
    # FakeBackend has check only: its failures are bad_credentials
    assert value(text, "space-a", "ok") == 1
    assert value(text, "space-a", "bad_credentials") == 1
    assert value(text, "_other", "refused") == 1
    assert value(text, "_other", "backend_error") == 1
    assert "made-up" not in text and "broken" not in text
    assert s.server.metrics.connections_total == 4


def test_the_service_does_not_start_with_an_unreadable_password_file(tmp_path):
    import asyncio
    import subprocess
    cert, key = str(tmp_path / "c.pem"), str(tmp_path / "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-subj", "/CN=localhost", "-keyout", key, "-out", cert, "-days", "1"], check=True, capture_output=True)
    config = server.load_config(None, {"listen_port": 0, "users_dir": str(tmp_path), "tls_cert": cert,
                                       "tls_key": key, "metrics_port": 1,
                                       "metrics_password_file": str(tmp_path / "none.json")})
    with pytest.raises(server.StartError, match="metrics endpoint: .*none.json"):
        asyncio.run(server.serve(config))
