"""The monitoring role: the scrape-target filter, the alert rules under
promtool (check + unit tests), the rendered prometheus.yml / alertmanager.yml
under promtool / amtool, and argument_specs matching defaults."""
import os
import re
import shutil
import subprocess

import jinja2
import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.filter import monitoring as fmon

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(REPO, "roles", "monitoring")
GROUPS = {"all": ["r1", "r2", "b1", "kc"], "routers": ["r2", "r1", "r1"], "brokers": ["b1"],
          "keycloak": ["kc"], "mqtt_gateways": [], "ungrouped": []}
CA = "/etc/prometheus/enmasse-ca.pem"
JOBS = [
    {"name": "routers", "group": "routers", "port": 8672, "scheme": "https", "ca_file": CA},
    {"name": "brokers", "group": "brokers", "port": 8161, "metrics_path": "/metrics/", "ca_file": CA,
     "username": "prometheus", "password_file": "/etc/prometheus/brokers.password"},
    {"name": "keycloak", "group": "keycloak", "port": 9000, "ca_file": CA},
    {"name": "mqtt", "group": "mqtt_gateways", "port": 9100, "scheme": "http"},
    {"name": "absent", "group": "no_such_group", "port": 1, "scheme": "http"},
]
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="promtool missing (Debian package prometheus; scripts/test.sh installs it)")
needs_amtool = pytest.mark.skipif(shutil.which("amtool") is None,
                                  reason="amtool missing (Debian package prometheus-alertmanager)")


def test_filter_module_exports_the_documented_filter():
    assert set(fmon.FilterModule().filters()) == {"monitoring_scrape_configs"}


def test_targets_every_host_of_each_group_once_sorted_and_empty_groups_left_out():
    out = fmon.monitoring_scrape_configs(JOBS, GROUPS)
    assert [j["job_name"] for j in out] == ["routers", "brokers", "keycloak"]
    assert out[0]["static_configs"] == [{"targets": ["r1:8672", "r2:8672"]}]
    assert out[0]["tls_config"] == {"ca_file": CA} and "basic_auth" not in out[0]
    assert out[1]["metrics_path"] == "/metrics/"
    assert out[1]["basic_auth"] == {"username": "prometheus", "password_file": "/etc/prometheus/brokers.password"}
    assert out[2] == {"job_name": "keycloak", "scheme": "https", "metrics_path": "/metrics",
                      "static_configs": [{"targets": ["kc:9000"]}], "tls_config": {"ca_file": CA}}


@pytest.mark.parametrize("job, message", [
    ({"name": "x y", "group": "g", "port": 1, "scheme": "http"}, "monitoring_jobs[0].name: 'x y'"),
    ({"name": "x", "group": "", "port": 1, "scheme": "http"}, "monitoring_jobs[0].group"),
    ({"name": "x", "group": "g", "port": 70000, "scheme": "http"}, "monitoring_jobs[0].port: 70000"),
    ({"name": "x", "group": "g", "port": True, "scheme": "http"}, "monitoring_jobs[0].port"),
    ({"name": "x", "group": "g", "port": 1, "scheme": "ftp"}, "monitoring_jobs[0].scheme"),
    ({"name": "x", "group": "g", "port": 1}, "an https job needs the CA file"),
    ({"name": "x", "group": "g", "port": 1, "scheme": "http", "username": "u"}, "username and password_file"),
    ({"name": "x", "group": "g", "port": 1, "scheme": "http", "metrics_path": "m"}, "metrics_path"),
    ({"name": "x", "group": "g", "port": 1, "scheme": "http", "passwd": "p"}, "monitoring_jobs[0].passwd: unknown"),
    ("x", "must be a mapping"),
    ({"name": "x", "group": "g", "port": 1, "ports_var": "p", "scheme": "http"}, "port and ports_var exclude"),
    ({"name": "x", "group": "g", "ports_var": "a b", "scheme": "http"}, "monitoring_jobs[0].ports_var: 'a b'"),
    ({"name": "x", "group": "g", "port": 1, "ca_file": CA, "cert_file": "/c"}, "cert_file and key_file go together"),
    ({"name": "x", "group": "g", "port": 1, "scheme": "http", "cert_file": "/c", "key_file": "/k"},
     "a client certificate needs scheme https"),
    ({"name": "x", "group": "g", "port": 1, "scheme": "http", "password_src": "/p"}, "password_src: needs password_file"),
])
def test_bad_job_fails_naming_field_and_value(job, message):
    with pytest.raises(AnsibleFilterError) as e:
        fmon.monitoring_scrape_configs([job], GROUPS)
    assert message in str(e.value)


def test_every_bad_job_named_and_a_name_twice():
    jobs = [{"name": "a", "group": "g", "port": 1, "scheme": "http"}] * 2 + [{"name": "b", "group": "g", "port": 0}]
    with pytest.raises(AnsibleFilterError) as e:
        fmon.monitoring_scrape_configs(jobs, GROUPS)
    assert "monitoring_jobs[1].name: 'a' is given twice" in str(e.value)
    assert "monitoring_jobs[2].port: 0" in str(e.value)


def test_ports_var_gives_every_port_of_every_host_and_client_certificate():
    """Brokers: one target per Artemis instance from the host variable the broker
    role publishes; routers: the client certificate Prometheus presents."""
    jobs = [{"name": "brokers", "group": "routers", "ports_var": "broker_metrics_ports", "ca_file": CA,
             "username": "prometheus", "password_file": "/etc/prometheus/b.password", "password_src": "/c/b"},
            {"name": "routers", "group": "brokers", "port": 9443, "ca_file": CA,
             "cert_file": "/etc/prometheus/c.pem", "key_file": "/etc/prometheus/c.key"}]
    hostvars = {"r1": {"broker_metrics_ports": [9504, 9404]}, "r2": {"broker_metrics_ports": ["9404"]}}
    out = fmon.monitoring_scrape_configs(jobs, GROUPS, hostvars)
    assert out[0]["static_configs"] == [{"targets": ["r1:9504", "r1:9404", "r2:9404"]}]
    assert out[0]["basic_auth"] == {"username": "prometheus", "password_file": "/etc/prometheus/b.password"}
    assert "password_src" not in str(out)
    assert out[1]["tls_config"] == {"ca_file": CA, "cert_file": "/etc/prometheus/c.pem",
                                    "key_file": "/etc/prometheus/c.key"}
    # no host publishes ports (metrics off): the job is left out
    assert [j["job_name"] for j in fmon.monitoring_scrape_configs(jobs, GROUPS, {})] == ["routers"]
    with pytest.raises(AnsibleFilterError) as e:
        fmon.monitoring_scrape_configs(jobs, GROUPS, {"r1": {"broker_metrics_ports": [0]}})
    assert "monitoring_jobs[0].ports_var: broker_metrics_ports of host r1: 0 is not a port" in str(e.value)


@pytest.mark.parametrize("jobs, groups", [("x", GROUPS), ([], [])])
def test_bad_inputs_as_a_whole(jobs, groups):
    with pytest.raises(AnsibleFilterError):
        fmon.monitoring_scrape_configs(jobs, groups)


@needs_promtool
def test_alert_rules_pass_promtool_check_and_their_unit_tests():
    rules = os.path.join(ROLE, "files", "enmasse-alerts.yml")
    subprocess.run(["promtool", "check", "rules", rules], check=True, capture_output=True)
    r = subprocess.run(["promtool", "test", "rules", os.path.join(ROLE, "tests", "enmasse-alerts.test.yml")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_alert_rule_has_a_promtool_test_and_docs():
    rules = yaml.safe_load(open(os.path.join(ROLE, "files", "enmasse-alerts.yml")))
    names = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    tests = yaml.safe_load(open(os.path.join(ROLE, "tests", "enmasse-alerts.test.yml")))
    tested = {t["alertname"] for case in tests["tests"] for t in case["alert_rule_test"]}
    assert names == tested
    docs = open(os.path.join(REPO, "docs", "monitoring.md")).read()
    assert [n for n in sorted(names) if n not in docs] == []


def _rules():
    doc = yaml.safe_load(open(os.path.join(ROLE, "files", "enmasse-alerts.yml")))
    return [r for g in doc["groups"] for r in g["rules"]]


def test_every_alert_rule_has_severity_summary_description_and_for():
    """Each rule: severity critical or warning, a summary and a description that name the
    instance (or, for the address spaces, the space), and a `for:` duration."""
    for r in _rules():
        assert r["labels"]["severity"] in ("critical", "warning"), r["alert"]
        assert set(r["annotations"]) == {"summary", "description"}, r["alert"]
        for text in r["annotations"].values():
            assert "$labels.instance" in text or "$labels.space" in text, (r["alert"], text)
        assert re.fullmatch(r"[0-9]+[smh]", r["for"]), r["alert"]
    mqtt = [r for r in _rules() if "enmasse_mqtt_gateway" in r["expr"] or 'job="mqtt_gateways"' in r["expr"]]
    assert {r["alert"] for r in mqtt} >= {"EnmasseMqttGatewayDown", "EnmasseMqttAuthenticationFailures",
                                          "EnmasseMqttConnectionLimit", "EnmasseMqttGatewayNoRouter"}
    assert all("$labels.space" in r["annotations"]["summary"] for r in mqtt)


def _series_labels(series):
    return dict(re.findall(r'(\w+)="([^"]*)"', series))


def test_every_alert_rule_has_a_case_that_fires_and_a_series_that_does_not():
    """In roles/monitoring/tests/enmasse-alerts.test.yml every alert fires in some case, and
    that case has an input series that matches none of the alerts that fire (promtool
    compares the whole list, so that series is checked to stay quiet)."""
    tests = yaml.safe_load(open(os.path.join(ROLE, "tests", "enmasse-alerts.test.yml")))["tests"]
    for name in sorted(r["alert"] for r in _rules()):
        checked = False
        for case in tests:
            for t in case["alert_rule_test"]:
                if t["alertname"] != name or not t["exp_alerts"]:
                    continue
                fired = [{k: str(v) for k, v in a["exp_labels"].items() if k != "severity"} for a in t["exp_alerts"]]
                quiet = [s["series"] for s in case["input_series"]
                         if not any(f.items() <= _series_labels(s["series"]).items() for f in fired)]
                checked = checked or bool(quiet)
        assert checked, "%s: no case where it fires beside a series where it does not" % name


def _render(name, **extra):
    defaults = yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml")))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")))
    env.filters["to_json"] = lambda v: yaml.safe_dump(v, default_flow_style=True).strip().rstrip(".").strip()
    env.filters["to_nice_yaml"] = lambda v, indent=2: yaml.safe_dump(v, indent=indent, default_flow_style=False)
    vars_ = dict(defaults, ansible_managed="test", **extra)
    vars_["monitoring_scrape_configs"] = fmon.monitoring_scrape_configs(vars_["monitoring_jobs"], GROUPS)
    return env.get_template(name).render(**vars_)


@needs_promtool
@pytest.mark.parametrize("users", [[], [{"name": "ops", "bcrypt_hash": "$2b$12$x"}]])
def test_rendered_prometheus_config_passes_promtool(tmp_path, users):
    p = tmp_path / "prometheus.yml"
    p.write_text(_render("prometheus.yml.j2", monitoring_web_users=users))
    r = subprocess.run(["promtool", "check", "config", "--syntax-only", str(p)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert yaml.safe_load(p.read_text())["scrape_configs"][0]["static_configs"] == [{"targets": ["kc:9000"]}]


@needs_amtool
@pytest.mark.parametrize("url", ["", "https://hooks.example.invalid/alert"])
def test_rendered_alertmanager_config_passes_amtool(tmp_path, url):
    p = tmp_path / "alertmanager.yml"
    p.write_text(_render("alertmanager.yml.j2", monitoring_alert_webhook_url=url))
    r = subprocess.run(["amtool", "check-config", str(p)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def test_web_ports_listen_on_localhost_by_default():
    for name in ("prometheus.default.j2", "prometheus-alertmanager.default.j2"):
        args = _render(name)
        assert "--web.listen-address=127.0.0.1:" in args and "--web.config.file=" in args
    assert "--cluster.listen-address= " in _render("prometheus-alertmanager.default.j2")


def test_default_auth_service_job_scrapes_the_routers_that_publish_the_port():
    """The role's default job auth_service: the routers whose auth_service role published
    auth_service_metrics_ports (metrics on), HTTPS verified with the CA, basic auth from a file."""
    jobs = yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml")))["monitoring_jobs"]
    hostvars = {"r1": {"auth_service_metrics_ports": [9466]}, "r2": {"auth_service_metrics_ports": []},
                "b1": {"broker_metrics_ports": [9404]}}
    out = dict((j["job_name"], j) for j in fmon.monitoring_scrape_configs(jobs, GROUPS, hostvars))
    assert out["auth_service"] == {
        "job_name": "auth_service", "scheme": "https", "metrics_path": "/metrics",
        "static_configs": [{"targets": ["r1:9466"]}], "tls_config": {"ca_file": CA},
        "basic_auth": {"username": "prometheus", "password_file": "/etc/prometheus/enmasse-auth-service.password"}}
    # metrics off everywhere (no monitoring group when the auth_service role ran): no job
    hostvars = {"b1": {"broker_metrics_ports": [9404]}}
    assert "auth_service" not in [j["job_name"] for j in fmon.monitoring_scrape_configs(jobs, GROUPS, hostvars)]


def test_default_mqtt_gateways_job_scrapes_every_instance_of_the_gateway_hosts():
    """The role's default job mqtt_gateways: one target per instance (mqtt_gateway_metrics_ports,
    published by the mqtt_gateway role when its metrics are on), HTTPS verified with the CA,
    basic auth from a file; no job when no gateway host published a port."""
    jobs = yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml")))["monitoring_jobs"]
    groups = dict(GROUPS, mqtt_gateways=["g2", "g1"])
    hostvars = {"g1": {"mqtt_gateway_metrics_ports": [9467, 9468]}, "g2": {"mqtt_gateway_metrics_ports": ["9467"]}}
    out = dict((j["job_name"], j) for j in fmon.monitoring_scrape_configs(jobs, groups, hostvars))
    assert out["mqtt_gateways"] == {
        "job_name": "mqtt_gateways", "scheme": "https", "metrics_path": "/metrics",
        "static_configs": [{"targets": ["g1:9467", "g1:9468", "g2:9467"]}], "tls_config": {"ca_file": CA},
        "basic_auth": {"username": "prometheus", "password_file": "/etc/prometheus/enmasse-mqtt-gateway.password"}}
    hostvars = {"g1": {"mqtt_gateway_metrics_ports": []}}
    assert "mqtt_gateways" not in [j["job_name"] for j in fmon.monitoring_scrape_configs(jobs, groups, hostvars)]


def test_default_keycloak_job_presents_the_client_certificate_keycloak_requires():
    """Keycloak's management port requires a TLS client certificate (keycloak_management_client_auth:
    required by default): the role's default keycloak job presents Prometheus' certificate and key, the
    files the role copies for the jobs with cert_file (vars: __monitoring_client_jobs)."""
    defaults = yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml")))
    keycloak = yaml.safe_load(open(os.path.join(ROLE, "..", "keycloak", "defaults", "main.yml")))
    assert keycloak["keycloak_management_client_auth"] == "required"
    out = dict((j["job_name"], j) for j in fmon.monitoring_scrape_configs(defaults["monitoring_jobs"], GROUPS, {}))
    assert out["keycloak"]["tls_config"] == {"ca_file": CA, "cert_file": "/etc/prometheus/enmasse-client.pem",
                                             "key_file": "/etc/prometheus/enmasse-client.key"}
    assert out["keycloak"]["static_configs"] == [{"targets": ["kc:%d" % keycloak["keycloak_management_port"]]}]
