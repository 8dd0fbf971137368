"""Every metric name that an alert rule, a rule test or a Grafana dashboard of
roles/monitoring reads is one that an exporter really emits.

The list of names is built from each exporter's own source, never typed in
here:

* the MQTT gateway: gateway/mqtt/metrics.go, ``metricsPrefix`` plus every
  ``Name: metricsPrefix + "..."`` (client_golang writes the name as given);
* the auth service: plugins/module_utils/auth/metrics.py, the ``# TYPE``
  lines of ``Metrics().render()`` (its real exposition, run here), with its
  mesh probe's (auth/mesh.py ``MeshProbe.lines()``, the router hosts');
* brokers: the ``name:`` of every rule of the broker role's JMX exporter
  configuration, roles/broker/templates/jmx-exporter.yml.j2;
* qdrouterd 1.19: the ``metrics[]`` table of src/http-libwebsockets.c in the
  router source archive (scripts/router-archive.sh); skipped when the archive
  is not on this machine. The auth service's mesh probe serves every one of
  them (read from the router entity over management), with the same name
  and type: checked against that table;
* the capacity loop: the ``# TYPE`` lines of ``loop_metrics.render()`` (the
  textfile of every run that reaches its end, plugins/module_utils/model/
  loop_metrics.py, run here) and of the ``ExecStopPost`` of
  roles/day2_loop/templates/enmasse-loop.service.j2 (the textfile written
  after every run, failed or not), both served by the node exporter's
  textfile collector;
* Prometheus itself: ``up``.

``process_*`` / ``go_*`` / ``jvm_*`` (client libraries' collectors) are not in
the list: no rule or dashboard may read them until they are added from
their source. A name that no exporter emits yet is allowed only in GAPS,
with the reason; the test fails once an exporter emits it (remove it then).
"""
import glob
import json
import os
import re
import subprocess
import tarfile

import pytest
import yaml

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import mesh as auth_mesh
from ansible_collections.enmasse.messaging.plugins.module_utils.auth import metrics as auth_metrics
from ansible_collections.enmasse.messaging.plugins.module_utils.model import loop_metrics

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(REPO, "roles", "monitoring")
RULES = sorted(glob.glob(os.path.join(ROLE, "files", "*.yml")))
RULE_TESTS = sorted(glob.glob(os.path.join(ROLE, "tests", "*.test.yml")))
DASHBOARDS = sorted(glob.glob(os.path.join(ROLE, "files", "dashboards", "*.json")))
PROMETHEUS_OWN = {"up"}
# {name: why} for a name read before any exporter emits it; none now (docs/monitoring.md says why the
# pending addresses rule was removed rather than left without input)
GAPS = {}


def gateway_names():
    src = open(os.path.join(REPO, "gateway", "mqtt", "metrics.go")).read()
    prefix = re.search(r'(?m)^const metricsPrefix = "([a-z_]+)"$', src).group(1)
    names = {prefix + n for n in re.findall(r'Name:\s*metricsPrefix \+ "([a-z_]+)"', src)}
    assert len(names) >= 6, names  # the parse found the table, not a fragment of it
    return names


def auth_service_names():
    exposition = auth_metrics.Metrics(clock=lambda: 0)
    exposition.sources.append(auth_mesh.MeshProbe("amqp://127.0.0.1:55670", 3))
    return set(re.findall(r"(?m)^# TYPE (\S+) ", exposition.render()))


def loop_names():
    """The loop's textfile after a run that refused something (so that the refusal counter has a series),
    and the unit's ExecStopPost file."""
    decision = {"act": False, "steps": [], "refused": [{"step": "plan", "guardrail": "cooldown", "why": "..."}]}
    text = loop_metrics.render("", decision, "apply", now=0)
    unit = open(os.path.join(REPO, "roles", "day2_loop", "templates", "enmasse-loop.service.j2")).read()
    post = [line for line in unit.splitlines() if line.startswith("ExecStopPost=")]
    assert len(post) == 1, post
    return set(re.findall(r"(?m)^# TYPE (\S+) ", text)) | set(re.findall(r'"# TYPE (\S+) ', post[0]))


def broker_names():
    text = open(os.path.join(REPO, "roles", "broker", "templates", "jmx-exporter.yml.j2")).read()
    doc = yaml.safe_load(re.sub(r"\{\{.*?\}\}", "x", text))
    return {r["name"] for r in doc["rules"]}


def router_names():
    return set(router_table())


def router_table():
    """{name: type} of qdrouterd's ``metrics[]``."""
    r = subprocess.run(["bash", os.path.join(REPO, "scripts", "router-archive.sh")],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        pytest.skip("no qdrouterd source archive: %s" % r.stderr.strip())
    with tarfile.open(r.stdout.strip()) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/src/http-libwebsockets.c"))
        src = tar.extractfile(member).read().decode("utf-8")
    table = re.search(r"metric_definition metrics\[\] = \{(.*?)\};", src, re.S).group(1)
    return dict(re.findall(r'\{"(qdr_[a-z0-9_]+)",\s*"([a-z]+)"', table))


# PromQL: what is not a metric name once strings, matchers, ranges and
# grouping clauses are gone.
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
            "offset", "inf", "nan"}


def promql_metric_names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    e = re.sub(r"\{[^{}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\boffset\s+\S+", " ", e)
    e = re.sub(r"\$\w+", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        if m.group(2) or m.group(1).lower() in KEYWORDS:
            continue
        names.add(m.group(1))
    return names


def referenced():
    """{metric name: [where]} over every rule, rule test series and dashboard query."""
    out = {}
    for path in RULES:
        for g in yaml.safe_load(open(path))["groups"]:
            for rule in g["rules"]:
                for n in promql_metric_names(rule["expr"]):
                    out.setdefault(n, []).append("%s: %s" % (os.path.basename(path), rule.get("alert") or rule["record"]))
    for path in RULE_TESTS:
        for case in yaml.safe_load(open(path))["tests"]:
            for s in case.get("input_series", []):
                n = re.match(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", s["series"]).group(1)
                out.setdefault(n, []).append("%s: series" % os.path.basename(path))
    for path in DASHBOARDS:
        dash = json.load(open(path))
        queries = [(p["title"], t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]
        queries += [("variable " + v["name"], v["query"]) for v in dash["templating"]["list"] if v["type"] == "query"]
        for title, expr in queries:
            expr = re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", expr)
            for n in promql_metric_names(expr):
                out.setdefault(n, []).append("%s: %s" % (os.path.basename(path), title))
    return out


@pytest.mark.parametrize("expr, names", [
    ('sum by (instance, realm) (increase(a_total{outcome=~"x|y", job="j"}[5m])) > 10', {"a_total"}),
    ('(up{job="g"} == 0) * on (job, instance) group_left (space) group by (job, instance, space) '
     '(last_over_time(b{job="g"}[6h])) or on (job, instance) (up == 0)', {"up", "b"}),
    ('c == 0 and delta(d[10m]) > 0 unless e offset 5m', {"c", "d", "e"}),
    ('topk(10, sum by (queue) (f{job=~"$job", instance=~"$instance"})) / 1e3', {"f"}),
    ('rate(g_total{a="sum(h)"}[$__rate_interval]) - histogram_quantile(0.9, i_bucket)', {"g_total", "i_bucket"}),
])
def test_the_promql_name_reader(expr, names):
    assert promql_metric_names(expr) == names


def test_the_lists_are_read_from_the_exporters():
    assert {"enmasse_mqtt_gateway_connections_total", "enmasse_mqtt_gateway_connected_clients",
            "enmasse_mqtt_gateway_retained_stored_total"} <= gateway_names()
    assert {"enmasse_auth_service_authentications_total", "enmasse_auth_service_connections",
            "enmasse_router_mesh_routers", "enmasse_router_mesh_expected_routers",
            "enmasse_router_management_up", "enmasse_addresses"} <= auth_service_names()
    assert {"artemis_message_count", "artemis_disk_store_usage_ratio"} <= broker_names()
    assert loop_names() == {"enmasse_loop_last_run_timestamp_seconds", "enmasse_loop_last_run_outcome",
                            "enmasse_loop_refusals_total", "enmasse_loop_steps_applied_total",
                            "enmasse_loop_last_run_failed"}


def test_every_name_read_by_a_rule_or_dashboard_is_emitted():
    known = gateway_names() | auth_service_names() | broker_names() | loop_names() | PROMETHEUS_OWN
    refs = referenced()
    unknown = {n: w for n, w in refs.items() if n not in known and n not in GAPS}
    assert unknown == {}
    # a gap is still one (no exporter emits it) and still read somewhere
    assert sorted(GAPS) == sorted(n for n in GAPS if n not in known and n in refs)


def test_every_router_name_read_by_a_rule_or_dashboard_is_in_qdrouterd():
    names = router_names()
    assert "qdr_routers_total" in names and len(names) >= 20
    unknown = {n: w for n, w in referenced().items() if n.startswith("qdr_") and n not in names}
    assert unknown == {}


def test_the_auth_service_serves_every_one_of_qdrouterds_own_metrics_with_its_type():
    # the mesh probe reads them over management (the router's HTTP port cannot authenticate)
    assert dict((n, k) for n, k, unused, unused in auth_mesh.ROUTER_METRICS) == router_table()
    assert set(router_table()) <= auth_service_names()


def test_the_mqtt_gateway_and_auth_service_are_read_by_rules_and_a_dashboard():
    refs = referenced()
    for name in ("enmasse_mqtt_gateway_connections_total", "enmasse_auth_service_authentications_total",
                 "enmasse_loop_last_run_timestamp_seconds", "enmasse_loop_last_run_failed",
                 "enmasse_loop_refusals_total"):
        assert any(w.startswith("enmasse-alerts.yml") for w in refs[name])
    gw_dash = {n for n, w in refs.items() if any(x.startswith("enmasse-mqtt-gateway-auth.json") for x in w)}
    assert {"enmasse_mqtt_gateway_connected_clients", "enmasse_mqtt_gateway_router_connections",
            "enmasse_mqtt_gateway_connections_total", "enmasse_mqtt_gateway_publishes_received_total", "enmasse_mqtt_gateway_messages_delivered_total",
            "enmasse_mqtt_gateway_retained_stored_total", "enmasse_mqtt_gateway_subscriptions_total",
            "enmasse_auth_service_authentications_total", "enmasse_auth_service_connections"} <= gw_dash
