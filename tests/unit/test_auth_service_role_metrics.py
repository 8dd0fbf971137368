"""The auth_service role's metrics endpoint settings (tasks/metrics.yml,
prereqs.yml), run by ansible-playbook on localhost: the generated scrape
password stays on the controller, the host file holds only its salted
SHA-512 that the service's check accepts, idempotent, never printed; off
removes the file and publishes no port."""
import json

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics
from test_auth_service_role import changed, failed, play, users_vars


def test_prereqs_refuse_metrics_without_tls_or_on_the_sasl_port(tmp_path):
    for extra, fragment in (({"auth_service_metrics_enabled": True, "auth_service_tls": False}, "tls=False"),
                            ({"auth_service_metrics_port": 5680}, "port=5680"),
                            ({"auth_service_metrics_username": "a:b"}, "username=a:b")):
        out, results = play(tmp_path, "prereqs.yml", extra)
        bad = failed(results)
        expected = "Check the metrics endpoint can authenticate (HTTPS needs the service's certificate)"
        assert bad and bad[0][0].endswith(expected), bad
        assert fragment in bad[0][1]["msg"]


def facts(results):
    return [res["ansible_facts"] for name, res in results if "ansible_facts" in res and name.endswith(
        "publish this host's metrics port (auth_service_metrics_ports; [] when off)")][0]


def test_metrics_password_hashed_on_the_host_idempotent_and_removed_when_off(tmp_path):
    v = users_vars(tmp_path, [], auth_service_config_dir=str(tmp_path / "etc"), auth_service_metrics_enabled=True)
    (tmp_path / "etc").mkdir()
    out, results = play(tmp_path, "metrics.yml", v)
    # only the reload handler fails (no systemd on the test host)
    assert [n for n, unused in failed(results)] == ["enmasse.messaging.auth_service : Reload enmasse-auth-service"]
    password = (tmp_path / "credentials" / "auth-service-metrics").read_text().split()[0]
    assert len(password) == 32 and password not in out
    path = tmp_path / "etc" / "metrics-password.json"
    assert password not in path.read_text() and oct(path.stat().st_mode & 0o777) == "0o640"
    doc = metrics.load_password_file(str(path))
    assert metrics.authorized(metrics.basic("prometheus", password), doc)
    assert not metrics.authorized(metrics.basic("prometheus", password + "x"), doc)
    assert facts(results) == {"auth_service_metrics_ports": [9466]}
    before = path.read_text()
    out, results = play(tmp_path, "metrics.yml", v)
    assert not failed(results) and changed(results) == [], changed(results)
    assert path.read_text() == before

    v["auth_service_metrics_enabled"] = False
    out, results = play(tmp_path, "metrics.yml", v)
    assert not failed(results) and not path.exists()
    assert facts(results) == {"auth_service_metrics_ports": []}
    assert json.loads(json.dumps(facts(results)))  # plain data for the monitoring play
