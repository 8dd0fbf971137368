"""The critical-alert guardrail of apply_plan.yml (and so of the capacity
loop) with the real Alertmanager (Debian package prometheus-alertmanager,
the monitoring role's rendered configuration with basic auth): the control
host's part of apply_plan.yml (tasks/apply_plan_control.yml, which reads
Alertmanager's API v2 through tasks/apply_plan_alerts.yml) runs with
ansible-playbook. A critical alert posted through the API v2 refuses the
plan whole, naming it, in report and in apply mode (no history written);
once it is resolved and only a warning fires, the plan goes through;
Alertmanager unreachable refuses it too (fail closed), naming the URL. The
password is never printed. And the loop's metrics file, read by the real
node exporter's textfile collector, scraped by the real Prometheus with
the monitoring role's rendered configuration and a job for it, beside the
file of the day2_loop unit's ExecStopPost after a failed run: the shipped
rule EnmasseLoopRunFailed fires, and goes once a run succeeds."""
import base64
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest

from helpers import run_playbook
from standard_env import REPO
from test_monitoring_alert import _get, _port, _start, _stop, _wait, role_vars, start_alertmanager
# the integration mark and the skip without the real Prometheus / Alertmanager
from test_monitoring_alert import pytestmark  # noqa: F401  # pylint: disable=unused-import

sys.path.insert(0, os.path.join(REPO, "tests", "unit"))
from test_capacity_plan_apply_module import _infra_file  # noqa: E402  # brokers b1-b3 (b3 draining), space s
from test_day2_loop_role import stop_post  # noqa: E402  # the unit's ExecStopPost run as systemd runs it

from ansible_collections.enmasse.messaging.plugins.module_utils.model import loop_metrics  # noqa: E402

crypt = pytest.importorskip("crypt", reason="the crypt module (bcrypt hash of the web user) is missing")

CONTROL = os.path.join(REPO, "playbooks", "tasks", "apply_plan_control.yml")
USER, PASSWORD = "loop", "am-" + os.urandom(6).hex()
CRITICAL = {"alertname": "EnmasseTargetDown", "severity": "critical", "instance": "b1:9404"}
WARNING = {"alertname": "EnmasseBrokerDiskHigh", "severity": "warning", "instance": "b2:9404"}


def _request(url, alerts=None):
    """GET (or POST ``alerts`` to) ``url`` with the web user's basic auth; the HTTP status."""
    req = urllib.request.Request(url, data=None if alerts is None else json.dumps(alerts).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Basic " +
                                          base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


def _post(url, alerts):
    assert _request(url + "/api/v2/alerts", alerts) == 200


def _at(seconds):
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat()


@pytest.fixture
def alertmanager(tmp_path):
    port = _port()
    proc = start_alertmanager(tmp_path, role_vars(monitoring_alertmanager_port=port, monitoring_web_users=[
        {"name": USER, "bcrypt_hash": crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4))}]))
    url = "http://127.0.0.1:%d" % port
    try:
        _wait("Alertmanager ready", lambda: _request(url + "/-/ready") == 200, 30)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _decide(tmp_path, url, mode, check=False):
    """apply_plan.yml's control host part with a plan that drains b3 (no move: nothing touches a broker)."""
    plan = tmp_path / "plan.json"
    made = datetime.fromtimestamp(time.time() - 60, timezone.utc).isoformat()
    plan.write_text(json.dumps({
        "schema_version": 1, "generated_at": made, "job": {"end": made}, "data_quality": {"valid_window_ratio": 1.0},
        "infrastructures": [{"infra": "default", "router_pools": [], "broker_pools": [{
            "pool": "_infra", "brokers_before": ["b1", "b2", "b3"], "brokers_after": ["b1", "b2"], "moves": []}]}]}))
    infra = tmp_path / "standard.json"
    if not infra.exists():
        infra = _infra_file(tmp_path, {})
    extra = {"apply_plan_file": str(plan), "apply_plan_infra": "default", "apply_plan_infrastructure_file": str(infra),
             "apply_plan_history": str(tmp_path / "day2" / "history.jsonl"),
             "apply_plan_guardrails": {"mode": mode, "min_brokers": 1}, "apply_plan_timeout": 10,
             "apply_plan_delay": 1, "apply_plan_idle": 1.0, "__apply_spaces": [],
             "apply_plan_alertmanager_url": url, "apply_plan_alertmanager_user": USER,
             "apply_plan_alertmanager_password": PASSWORD}
    res = run_playbook([{"name": "apply the plan", "ansible.builtin.include_tasks": CONTROL}], extra_vars=extra,
                       check=check)
    assert res.rc == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert PASSWORD not in res.stdout + res.stderr
    tasks = {t["task"]["name"]: h for p in res.data["plays"] for t in p["tasks"] for h in t["hosts"].values()}
    print("%s mode%s: %.1f s" % (mode, " (check)" if check else "", res.seconds))
    return tasks["Decide what of the plan to do now (within the guardrails)"], tasks["The decision"]["msg"]


def test_a_critical_alert_refuses_the_plan_until_resolved_and_unreachable_fails_closed(alertmanager, tmp_path):
    t0 = time.monotonic()
    _post(alertmanager, [{"labels": CRITICAL, "startsAt": _at(-60)}, {"labels": WARNING, "startsAt": _at(-60)}])
    for mode in ("report", "apply"):
        decision, shown = _decide(tmp_path, alertmanager, mode)
        assert decision["act"] is False and decision["steps"] == [] and decision["changed"] is False
        assert [(r["step"], r["guardrail"]) for r in decision["refused"]] == [("plan", "critical-alert")], decision
        why = decision["refused"][0]["why"]
        assert "EnmasseTargetDown on b1:9404" in why and alertmanager in why and "EnmasseBrokerDiskHigh" not in why
        assert any("refused plan | critical-alert | 1 alert(s) of severity critical" in line for line in shown)
    assert not (tmp_path / "day2").exists()  # changes nothing: not even the history

    _post(alertmanager, [{"labels": CRITICAL, "startsAt": _at(-60), "endsAt": _at(-1)}])  # resolved
    decision, unused = _decide(tmp_path, alertmanager, "apply", check=True)
    assert decision["refused"] == [] and decision["changed"] is True, decision
    assert decision["steps"] == [{"action": "drain", "kind": "brokers", "host": "b3"}]

    closed = "http://127.0.0.1:%d" % _port()
    decision, unused = _decide(tmp_path, closed, "apply", check=True)
    assert [r["guardrail"] for r in decision["refused"]] == ["alertmanager-unreachable"] and decision["steps"] == []
    assert "Alertmanager %s could not be read" % closed in decision["refused"][0]["why"]
    print("whole test: %.1f s" % (time.monotonic() - t0))


@pytest.mark.skipif(not shutil.which("prometheus-node-exporter"), reason="prometheus-node-exporter missing (Debian package)")
def test_prometheus_scrapes_the_loop_metrics_through_the_node_exporter_textfile_collector(tmp_path):
    textdir = tmp_path / "metrics"
    textdir.mkdir()
    refused = {"act": False, "steps": [], "refused": [{"step": "plan", "guardrail": "critical-alert", "why": "..."}]}
    move = {"action": "move", "address_space": "s", "address": "q", "partition": 0, "from": "b1", "to": "b2"}
    text = loop_metrics.render(loop_metrics.render("", refused, "apply"), {"act": True, "steps": [move], "refused": []},
                               "apply")
    (textdir / "enmasse_loop.prom").write_text(text)
    # the unit's ExecStopPost (roles/day2_loop/templates/enmasse-loop.service.j2) after a failed run
    unit = open(os.path.join(REPO, "roles", "day2_loop", "templates", "enmasse-loop.service.j2")).read()
    post = next(line for line in unit.splitlines() if line.startswith("ExecStopPost="))[len("ExecStopPost="):]
    post = post.replace("{{ day2_loop_metrics_file | dirname }}", str(textdir))
    assert "{{" not in post
    stop_post(post, "exit-code")
    port = _port()
    node = subprocess.Popen(["prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
                             "--collector.textfile.directory=%s" % textdir, "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=open(tmp_path / "node.log", "w"), stderr=subprocess.STDOUT)
    try:
        job = {"name": "enmasse_loop", "group": "day2_loop", "port": port, "scheme": "http"}  # docs/capacity-loop.md
        mon = _start(tmp_path, [job], {"day2_loop": ["127.0.0.1"]})
        try:
            def scraped():
                q = "/api/v1/query?query=%s" % urllib.request.quote('{__name__=~"enmasse_loop_.*|node_textfile_scrape_error"}')
                res = _get(mon["prom"] + q)["data"]["result"]
                return {(r["metric"]["__name__"], r["metric"].get("reason") or r["metric"].get("outcome")): r["value"][1]
                        for r in res if r["metric"]["job"] == "enmasse_loop"} or None

            got = _wait("the loop's metrics scraped", scraped, 30)
            assert got[("node_textfile_scrape_error", None)] == "0"
            assert got[("enmasse_loop_refusals_total", "critical-alert")] == "1"
            assert got[("enmasse_loop_steps_applied_total", None)] == "1"
            assert got[("enmasse_loop_last_run_outcome", "applied")] == "1"
            assert got[("enmasse_loop_last_run_outcome", "refused")] == "0"
            assert got[("enmasse_loop_last_run_failed", None)] == "1"

            def loop_alerts(state):
                alerts = _get(mon["prom"] + "/api/v1/alerts")["data"]["alerts"]
                names = sorted(a["labels"]["alertname"] for a in alerts
                               if a["labels"].get("job") == "enmasse_loop" and a["state"] == "firing")
                if state == "firing":
                    return names or None
                return "none" if not names else None

            # the shipped rules (for: 3s): the failed run fires; the run that ended now is not stale
            t1 = time.monotonic()
            assert _wait("EnmasseLoopRunFailed firing", lambda: loop_alerts("firing"), 20) == ["EnmasseLoopRunFailed"]
            stop_post(post, "success")  # the next run succeeds: the alert goes
            assert _wait("no loop alert", lambda: loop_alerts("resolved"), 20) == "none"
            print("loop alert fired and resolved in %.1f s" % (time.monotonic() - t1))
        finally:
            _stop(mon)
    finally:
        node.terminate()
        node.wait(timeout=30)
