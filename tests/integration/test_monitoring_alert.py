"""The monitoring role's configuration with the real Prometheus and
Alertmanager (Debian packages prometheus, prometheus-alertmanager): the
rendered prometheus.yml / alertmanager.yml and the collection's alert rules,
targets from the filter monitoring_scrape_configs. A target that answers is
up == 1; a target whose port is closed is up == 0 and EnmasseTargetDown
reaches `firing` in Prometheus and `active` in Alertmanager. Only the rules'
`for:` is shortened (as the Molecule scenario's vars would)."""
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request

import jinja2
import pytest
import yaml

from ansible_collections.enmasse.messaging.plugins.filter import monitoring as fmon

import broker_metrics

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("prometheus-alertmanager")),
                       reason="prometheus / prometheus-alertmanager missing (Debian packages; scripts/test.sh installs them)"),
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(REPO, "roles", "monitoring")


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _render(name, vars_):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")))
    env.filters["to_json"] = json.dumps
    env.filters["to_nice_yaml"] = lambda v, indent=2: yaml.safe_dump(v, indent=indent, default_flow_style=False)
    return env.get_template(name).render(**vars_)


def _get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def _wait(what, probe, timeout=90):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = probe()
            if last:
                return last
        except OSError as e:
            last = e
        time.sleep(1)
    raise AssertionError("%s: not seen in %ss (last: %r)" % (what, timeout, last))


def role_vars(**overrides):
    """The monitoring role's defaults with ``overrides`` (as the templates see them)."""
    return dict(yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml"))), ansible_managed="test", **overrides)


def start_alertmanager(tmp_path, vars_):
    """The real Alertmanager with the role's rendered alertmanager.yml and web
    config (basic auth when ``vars_`` has monitoring_web_users), listening on
    127.0.0.1:monitoring_alertmanager_port; the process (terminate it)."""
    (tmp_path / "alertmanager.yml").write_text(_render("alertmanager.yml.j2", vars_))
    (tmp_path / "web.yml").write_text(_render("web-config.yml.j2", vars_))
    subprocess.run(["amtool", "check-config", str(tmp_path / "alertmanager.yml")], check=True, capture_output=True)
    return subprocess.Popen(["prometheus-alertmanager", "--config.file=%s" % (tmp_path / "alertmanager.yml"),
                             "--storage.path=%s" % (tmp_path / "am"),
                             "--web.listen-address=127.0.0.1:%d" % vars_["monitoring_alertmanager_port"],
                             "--cluster.listen-address=", "--web.config.file=%s" % (tmp_path / "web.yml")],
                            stdout=open(tmp_path / "am.log", "w"), stderr=subprocess.STDOUT)


def _start(tmp_path, jobs=(), groups=None, hostvars=None):
    """Prometheus and Alertmanager with the role's rendered configuration:
    the jobs prometheus (itself, up) and down (a closed port) plus ``jobs``."""
    prom, am, closed = _port(), _port(), _port()
    jobs = [{"name": "prometheus", "group": "monitoring", "port": prom, "scheme": "http"},
            {"name": "down", "group": "monitoring", "port": closed, "scheme": "http"}] + list(jobs)
    groups = dict(groups or {}, monitoring=["127.0.0.1"])
    vars_ = role_vars(monitoring_alertmanager_port=am, monitoring_scrape_interval="1s", monitoring_evaluation_interval="1s",
                      monitoring_scrape_configs=fmon.monitoring_scrape_configs(jobs, groups, hostvars))
    rules = re.sub(r"(?m)^(\s+for:) \S+$", r"\1 3s", open(os.path.join(ROLE, "files", "enmasse-alerts.yml")).read())
    conf = tmp_path / "prometheus.yml"
    conf.write_text(_render("prometheus.yml.j2", vars_).replace("/etc/prometheus/enmasse-alerts.yml",
                                                                str(tmp_path / "rules.yml")))
    (tmp_path / "rules.yml").write_text(rules)
    subprocess.run(["promtool", "check", "config", str(conf)], check=True, capture_output=True)
    procs = [
        start_alertmanager(tmp_path, vars_),
        subprocess.Popen(["prometheus", "--config.file=%s" % conf, "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
                          "--web.listen-address=127.0.0.1:%d" % prom, "--web.config.file=%s" % (tmp_path / "web.yml")],
                         stdout=open(tmp_path / "prom.log", "w"), stderr=subprocess.STDOUT),
    ]
    return {"prom": "http://127.0.0.1:%d" % prom, "am": "http://127.0.0.1:%d" % am, "closed": closed,
            "procs": procs, "conf": conf}


def _stop(mon):
    for p in mon["procs"]:
        p.terminate()
        p.wait(timeout=30)


@pytest.fixture
def monitoring(tmp_path):
    mon = _start(tmp_path)
    try:
        yield mon
    finally:
        _stop(mon)


def test_every_target_scraped_and_target_down_alert_fires(monitoring):
    prom, am = monitoring["prom"], monitoring["am"]

    def up():
        res = _get(prom + "/api/v1/query?query=up")["data"]["result"]
        return {r["metric"]["job"]: r["value"][1] for r in res} if len(res) == 2 else None

    assert _wait("up for both jobs", up) == {"prometheus": "1", "down": "0"}

    def firing():
        rules = _get(prom + "/api/v1/alerts")["data"]["alerts"]
        return [a for a in rules if a["labels"]["alertname"] == "EnmasseTargetDown" and a["state"] == "firing"]

    alerts = _wait("EnmasseTargetDown firing in Prometheus", firing)
    assert [a["labels"]["job"] for a in alerts] == ["down"]

    def active():
        got = _get(am + "/api/v2/alerts")
        return [a for a in got if a["labels"].get("alertname") == "EnmasseTargetDown" and a["status"]["state"] == "active"]

    got = _wait("EnmasseTargetDown active in Alertmanager", active)
    assert got[0]["labels"]["instance"] == "127.0.0.1:%d" % monitoring["closed"]


@pytest.mark.skipif(broker_metrics.missing() is not None, reason=str(broker_metrics.missing()))
def test_broker_target_up_with_the_role_job(tmp_path):
    """The role's default brokers job (basic auth from a password file, https
    verified with the CA, one target per instance from broker_metrics_ports)
    against a real Artemis whose agent the broker role's tasks configured;
    only the two paths the role's config.yml would copy the files to differ."""
    m = broker_metrics.start(str(tmp_path / "broker"))
    try:
        job = dict(next(j for j in yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml")))["monitoring_jobs"]
                        if j["name"] == "brokers"), ca_file=m["ca"], password_file=m["password_file"])
        mon = _start(tmp_path, [job], {"brokers": ["127.0.0.1"]},
                     {"127.0.0.1": {job["ports_var"]: m["ports"]}})
        try:
            assert m["password"] not in mon["conf"].read_text()

            def broker_up():
                res = _get(mon["prom"] + '/api/v1/query?query=up{job="brokers"}')["data"]["result"]
                return res if res and res[0]["value"][1] == "1" else None

            got = _wait("up == 1 for the broker target", broker_up)
            assert got[0]["metric"]["instance"] == "127.0.0.1:%d" % m["port"]

            def depth():
                q = '/api/v1/query?query=artemis_message_count{job="brokers"}'
                return _get(mon["prom"] + q)["data"]["result"] or None

            _wait("artemis_message_count scraped", depth)
        finally:
            _stop(mon)
    finally:
        m["broker"].stop()


def _sasl_login(port, ca, realm, user, password):
    """One SASL PLAIN exchange with the auth service over TLS, as a router's plugin makes it."""
    import ssl
    from ansible_collections.enmasse.messaging.plugins.module_utils.auth import codec
    context = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            sock.sendall(codec.SASL_HEADER + codec.sasl_init("PLAIN", ("\0%s\0%s" % (user, password)).encode(), realm))
            while sock.recv(4096):   # refused: the service closes after the outcome
                pass


def test_auth_service_target_up_and_failed_logins_alert_fires(tmp_path):
    """The role's default auth_service job (https verified with the CA, basic auth from a
    password file, the port from auth_service_metrics_ports) against the real auth service;
    failed logins in a made-up realm (folded into realm _other) fire EnmasseAuthenticationFailures."""
    from test_auth_service_router import AuthService, make_tls, service_tls
    from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics
    tls = make_tls(str(tmp_path))
    os.makedirs(str(tmp_path / "users"))
    password = "scrape-" + os.urandom(8).hex()
    (tmp_path / "hash.json").write_text(json.dumps(metrics.password_file_document("prometheus", password, "s")))
    (tmp_path / "password").write_text(password)
    metrics_port = _port()
    service = AuthService(str(tmp_path / "service"), str(tmp_path / "users"), _port(), tls=service_tls(tls),
                          extra={"metrics_port": metrics_port, "metrics_password_file": str(tmp_path / "hash.json")})
    service.start()
    try:
        job = dict(next(j for j in yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml")))["monitoring_jobs"]
                        if j["name"] == "auth_service"), ca_file=tls["ca"], password_file=str(tmp_path / "password"))
        mon = _start(tmp_path, [job], {"routers": ["127.0.0.1"]}, {"127.0.0.1": {job["ports_var"]: [metrics_port]}})
        try:
            assert password not in mon["conf"].read_text()

            def auth_up():
                res = _get(mon["prom"] + '/api/v1/query?query=up{job="auth_service"}')["data"]["result"]
                return res if res and res[0]["value"][1] == "1" else None

            got = _wait("up == 1 for the auth service target", auth_up)
            assert got[0]["metric"]["instance"] == "127.0.0.1:%d" % metrics_port
            for i in range(15):
                _sasl_login(service.port, tls["ca"], "made-up-%d" % i, "mallory", "guess")

            def firing():
                alerts = _get(mon["prom"] + "/api/v1/alerts")["data"]["alerts"]
                return [a for a in alerts if a["labels"]["alertname"] == "EnmasseAuthenticationFailures"
                        and a["state"] == "firing"]

            alerts = _wait("EnmasseAuthenticationFailures firing", firing)
            assert [(a["labels"]["instance"], a["labels"]["realm"]) for a in alerts] \
                == [("127.0.0.1:%d" % metrics_port, "_other")]
        finally:
            _stop(mon)
    finally:
        service.stop()
