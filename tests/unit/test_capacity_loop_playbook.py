"""playbooks/capacity_loop.yml's first play on localhost (the control host):
bad mode and guardrails are refused naming the field, the value and the rule
before the capacity job runs; good ones become apply_plan_guardrails (report
by default, max_bytes_moved 0 = no limit) and the run goes on to the capacity
job (which fails here, on a host without the planning job: proof that the
order is checks, then plan). A whole report-mode run needs the planning job,
routers and brokers (tests/integration/test_apply_plan.py's fixtures, minutes):
not run here."""
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone

from pathlib import Path

PLAYBOOK = Path(__file__).resolve().parents[2] / "playbooks" / "capacity_loop.yml"


def run(tmp_path, *extra):
    inv = tmp_path / "inventory.ini"
    inv.write_text("[routers]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n"
                   "[capacity_planners]\nlocalhost\n" % sys.executable)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_RETRY_FILES_ENABLED="False",
               ANSIBLE_BECOME_METHOD="su" if os.getuid() == 0 else "sudo")
    out = subprocess.run(["ansible-playbook", "-i", str(inv), str(PLAYBOOK)] + list(extra),
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False, timeout=300)
    data = json.loads(out.stdout[out.stdout.index("{"):])
    return [(p["play"]["name"], t["task"]["name"], h) for p in data["plays"] for t in p["tasks"]
            for h in t["hosts"].values()]


def test_bad_mode_and_guardrails_refused_before_the_capacity_job(tmp_path):
    results = run(tmp_path, "-e", "day2_mode=yolo", "-e", "day2_max_moves=-3", "-e", "day2_min_valid_window_ratio=2")
    failed = [(p, t, r) for p, t, r in results if r.get("failed")]
    assert len(failed) == 1 and failed[0][1].startswith("Check day2_mode"), failed
    msg = failed[0][2]["msg"]
    assert "day2_mode: yolo must be report or apply" in msg
    assert "day2_max_moves: -3 must be an integer >= 0" in msg
    assert "day2_min_valid_window_ratio: 2 must be a number in 0..1" in msg
    assert not [p for p, t, r in results if not p.startswith("Capacity loop - check")]


def test_guardrails_report_by_default_then_the_capacity_job(tmp_path):
    results = run(tmp_path, "-e", "day2_cooldown=600")
    facts = [r["ansible_facts"]["day2_guardrails"] for p, t, r in results if t.startswith("The guardrails")]
    assert facts == [{"mode": "report", "max_hosts_changed": 1, "max_moves": 20, "max_bytes_moved": None,
                      "cooldown": 600, "min_brokers": 2, "min_routers": 2, "plan_max_age": 7200,
                      "min_valid_window_ratio": 0.9}]
    failed = [(p, t, r) for p, t, r in results if r.get("failed")]
    assert failed and failed[0][0] == "Capacity plan on demand", failed
    assert "enmasse-capacity-plan.service is not installed" in failed[0][2]["msg"]
    results = run(tmp_path, "-e", "day2_mode=apply", "-e", "day2_max_bytes_moved=1000")
    facts = [r["ansible_facts"]["day2_guardrails"] for p, t, r in results if t.startswith("The guardrails")]
    assert facts[0]["mode"] == "apply" and facts[0]["max_bytes_moved"] == 1000


def _control(tmp_path, plan, guardrails, homes=None, routers=("localhost",), check=False):
    """tasks/apply_plan_control.yml (what capacity_loop.yml's apply_plan.yml runs on the control host, the first
    router) with the real decision module on ``plan`` and an infrastructure file; the (task name, result) list."""
    from test_capacity_plan_apply_module import _infra_file
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    infra = tmp_path / "standard.json"
    if not infra.exists():
        infra = _infra_file(tmp_path, homes or {})
    book = [{"hosts": "routers[0]", "gather_facts": False, "vars": {
        "apply_plan_file": str(tmp_path / "plan.json"), "apply_plan_infra": "prod",
        "apply_plan_infrastructure_file": str(infra), "apply_plan_history": str(tmp_path / "day2" / "h.jsonl"),
        "apply_plan_guardrails": guardrails},
        "tasks": [{"name": "control", "ansible.builtin.include_tasks": str(PLAYBOOK.parent / "tasks" /
                                                                           "apply_plan_control.yml")}]}]
    (tmp_path / "book.yml").write_text(json.dumps(book))
    inv = tmp_path / "inventory.ini"
    inv.write_text("[routers]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n%s\n"
                   % (sys.executable, "\n".join(routers[1:])))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_RETRY_FILES_ENABLED="False")
    out = subprocess.run(["ansible-playbook", "-i", str(inv), str(tmp_path / "book.yml")] + (["--check"] if check else []),
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False, timeout=300)
    data = json.loads(out.stdout[out.stdout.index("{"):])
    results = [(t["task"]["name"], h) for p in data["plays"] for t in p["tasks"] for h in t["hosts"].values()]
    assert not [r for n, r in results if r.get("failed")], out.stdout[-3000:]
    return results


def _plan(broker_pool, routers_before=None, routers_after=None):
    made = datetime.fromtimestamp(time.time() - 600, timezone.utc).isoformat()
    pool = {"pool": "_infra", "routers_before": routers_before, "routers_after": routers_after}
    return {"schema_version": 1, "generated_at": made, "data_quality": {"valid_window_ratio": 1.0},
            "infrastructures": [{"infra": "prod", "broker_pools": [dict(broker_pool, pool="_infra")],
                                 "router_pools": [pool] if routers_before else []}]}


def test_report_mode_of_apply_plan_control_prints_what_apply_would_do_and_does_nothing(tmp_path):
    """The guardrails' mode report: no step is carried out, no history is written, and the report line names
    the broker to drain and the move."""
    plan = _plan({"brokers_before": ["b1", "b2", "b3"], "brokers_after": ["b1", "b2"],
                  "moves": [{"address_space": "s", "address": "p", "partition": 1, "from": "b1", "to": "b2", "bytes": 10}]})
    results = _control(tmp_path, plan, {"mode": "report"}, {"p": {"brokers": ["b2", "b1"], "draining": [], "placed": True}})
    decision = [r for n, r in results if n.startswith("Decide what of the plan")][0]
    assert decision["act"] is False and decision["steps"] == [] and decision["changed"] is False
    report = [r["msg"] for n, r in results if n.startswith("Report mode")]
    assert report and report[0].startswith("report mode: apply would add ; drain b3; make 1 move(s): "), report
    assert '"address": "p"' in report[0]
    moves = [r for n, r in results if n.startswith("The moves")]
    assert not moves or moves[0].get("skipped") or moves[0].get("results") == [], moves
    assert not (tmp_path / "day2").exists()


def test_a_router_the_plan_removes_gets_the_exact_commands_and_the_control_host_stays(tmp_path):
    """A router drain (check mode, mode apply): the commands of scale_in_router.yml's procedure (the inventory is
    the operator's); the control host (the first router) is never told to leave."""
    brokers = {"brokers_before": ["b1", "b2", "b3"], "brokers_after": ["b1", "b2", "b3"], "moves": []}
    for after, leaving, expected in ((["localhost"], "r2", "r2 leaves the routers"),
                                     (["r2"], "localhost", "it is the control host")):
        results = _control(tmp_path, _plan(brokers, ["localhost", "r2"], after), {"mode": "apply", "min_routers": 1},
                           routers=("localhost", "r2"), check=True)
        decision = [r for n, r in results if n.startswith("Decide what of the plan")][0]
        assert [(st.get("action"), st.get("kind")) for st in decision["steps"]] == [("drain", "routers")], json.dumps(decision)[:3000]
        shown = [r for n, r in results if n.startswith("Scale in of a router")][0]["results"][0]["msg"]
        assert shown[0].startswith("check mode: %s" % leaving) and expected in shown[0], shown
        if after == ["localhost"]:
            assert "move r2 from the group routers (and mqtt_gateways) to the group routers_leaving" in shown[1]
            assert "playbooks/scale_in_router.yml --check" in shown[3]
        else:
            assert len(shown) == 1 and "nothing is done for it" in shown[0]
    assert not (tmp_path / "day2").exists()


def test_apply_plan_is_imported_with_the_loop_guardrails():
    """apply_plan.yml's own default (apply_plan_guardrails: {}) means mode apply in apply_plan_control.yml:
    the loop must hand its guardrails (mode report by default) to the import, whose vars win over play vars."""
    import yaml
    plays = yaml.safe_load(PLAYBOOK.read_text())
    imports = [p for p in plays if p.get("ansible.builtin.import_playbook") == "apply_plan.yml"]
    assert len(imports) == 1 and plays[-2] is imports[0] and plays[-1]["hosts"] == "localhost"  # then the metrics
    assert imports[0]["vars"]["apply_plan_guardrails"] == "{{ hostvars[groups['routers'][0]].day2_guardrails }}"


def test_each_run_writes_its_metrics_and_the_counters_go_on(tmp_path):
    """The last play alone (--start-at-task; the decision and the guardrails as the earlier plays leave them,
    given as extra variables): a refused run, then an applied one; the file is 0644, promtool-clean when
    promtool is there, the counters carried over."""
    prom = tmp_path / "metrics" / "enmasse_loop.prom"
    start = ["--start-at-task", "Read the previous metrics (the counters go on from them)"]

    def loop_run(mode, decision):
        extra = {"day2_guardrails": {"mode": mode}, "apply_plan_decision": decision, "day2_metrics_file": str(prom)}
        (tmp_path / "extra.json").write_text(json.dumps(extra))
        results = run(tmp_path, "-e", "@%s" % (tmp_path / "extra.json"), *start)
        assert not [r for p, t, r in results if r.get("failed") and t.startswith("Write")], results
        return results

    loop_run("apply", {"act": False, "steps": [], "refused": [
        {"step": "plan", "guardrail": "critical-alert", "why": "EnmasseTargetDown on b1:9404"}]})
    assert oct(prom.stat().st_mode & 0o777) == "0o644" and oct(prom.parent.stat().st_mode & 0o777) == "0o755"
    first = prom.read_text()
    assert 'enmasse_loop_last_run_outcome{outcome="refused"} 1' in first
    assert 'enmasse_loop_refusals_total{reason="critical-alert"} 1' in first
    move = {"action": "move", "address_space": "s", "address": "q", "partition": 0, "from": "b1", "to": "b2"}
    loop_run("apply", {"act": True, "steps": [move, move], "refused": []})
    second = prom.read_text()
    assert 'enmasse_loop_last_run_outcome{outcome="applied"} 1' in second
    assert 'enmasse_loop_refusals_total{reason="critical-alert"} 1' in second
    assert "enmasse_loop_steps_applied_total 2\n" in second
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=second, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
