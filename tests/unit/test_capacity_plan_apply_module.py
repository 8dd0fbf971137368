"""The capacity_plan_apply module as Ansible runs it (a subprocess with its
arguments on stdin): check mode, apply, the history and the cooldown that
makes a second run change nothing, report mode, bad input."""
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest

pytestmark = pytest.mark.unit


def run(args, tmp_path, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.enmasse.messaging.plugins.modules.capacity_plan_apply"],
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": args}), capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=60, check=False)
    return json.loads(proc.stdout)


@pytest.fixture
def plan_file(tmp_path):
    made = datetime.fromtimestamp(time.time() - 600, timezone.utc).isoformat()
    plan = {"schema_version": 1, "generated_at": made, "data_quality": {"valid_window_ratio": 1.0},
            "infrastructures": [{"infra": "prod",
                                 "broker_pools": [{"pool": "_infra", "brokers_before": ["b1", "b2", "b3"],
                                                   "brokers_after": ["b1", "b2"], "moves": [
                                                       {"address_space": "s", "address": "q", "partition": 0,
                                                        "from": "b3", "to": "b1", "bytes": 10},
                                                       {"address_space": "s", "address": "p", "partition": 1,
                                                        "from": "b1", "to": "b2", "bytes": 10}]}],
                                 "router_pools": []}]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def _args(plan_file, tmp_path, **guardrails):
    return {"plan": str(plan_file), "infra": "prod", "brokers": ["b1", "b2", "b3"],
            "history": str(tmp_path / "day2" / "history.jsonl"), "guardrails": guardrails}


def test_check_mode_predicts_the_change_and_writes_no_history(plan_file, tmp_path):
    out = run(_args(plan_file, tmp_path, mode="apply"), tmp_path, check=True, diff=True)
    assert out["changed"] is True and out["act"] is True
    assert out["drain"] == {"brokers": ["b3"], "routers": []} and [m["address"] for m in out["moves"]] == ["p"]
    assert out["diff"]["before"]["brokers"] == ["b1", "b2", "b3"]
    assert out["diff"]["after"]["brokers"] == ["b1", "b2", "b3 (draining)"]
    assert out["diff"]["before"]["partitions"] == {"s/p#1": "b1"} and out["diff"]["after"]["partitions"] == {"s/p#1": "b2"}
    assert [s["action"] for s in out["steps"]] == ["move", "drain"]
    assert out["history_record"] is None and not (tmp_path / "day2").exists()


def test_apply_records_the_decision_and_the_next_run_changes_nothing(plan_file, tmp_path):
    first = run(_args(plan_file, tmp_path, mode="apply"), tmp_path)
    assert first["changed"] is True and first["history_record"]["drain"]["brokers"] == ["b3"]
    history = tmp_path / "day2" / "history.jsonl"
    assert oct(history.stat().st_mode & 0o777) == "0o640"
    assert [json.loads(line)["changed"] for line in history.read_text().splitlines()] == [True]
    second = run(_args(plan_file, tmp_path, mode="apply"), tmp_path)
    assert second["changed"] is False and second["act"] is False
    assert [r["guardrail"] for r in second["refused"]] == ["cooldown"]
    assert "not done: plan (cooldown: last change 0 min ago (< 60 min): cooldown 3600 s" in json.dumps(second["warnings"])
    assert len(history.read_text().splitlines()) == 1


def test_report_mode_decides_and_never_changes(plan_file, tmp_path):
    out = run(_args(plan_file, tmp_path), tmp_path, diff=True)
    assert out["changed"] is False and out["act"] is False and out["drain"]["brokers"] == ["b3"]
    assert out["diff"]["before"] == out["diff"]["after"]
    assert not (tmp_path / "day2").exists()


@pytest.mark.parametrize("change, message", [
    ({"guardrails": {"mode": "apply", "max_moves": "ten"}}, "guardrails.max_moves: 'ten' must be an integer >= 0"),
    ({"plan": "/nonexistent/plan.json"}, "plan: cannot read /nonexistent/plan.json: No such file or directory"),
    ({"infra": "staging"}, "plan: no standard broker pool ('_infra') for infrastructure 'staging'"),
])
def test_bad_input_fails_naming_the_field_and_writes_nothing(plan_file, tmp_path, change, message):
    out = run(dict(_args(plan_file, tmp_path, mode="apply"), **change), tmp_path)
    assert out["failed"] is True and out["changed"] is False and message in out["msg"]
    assert not (tmp_path / "day2").exists()


def test_a_history_line_that_is_not_json_is_named(plan_file, tmp_path):
    history = tmp_path / "day2" / "history.jsonl"
    history.parent.mkdir()
    history.write_text('{"time": 1, "changed": true}\nnot json\n')
    out = run(_args(plan_file, tmp_path, mode="apply"), tmp_path)
    assert out["failed"] is True and "line 2 is not JSON" in out["msg"]
    assert len(history.read_text().splitlines()) == 2


def _infra_file(tmp_path, homes):
    """An infrastructure file of brokers b1-b3 (b3 draining) and a ledger of space s with ``homes``."""
    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    (ledgers / "s.json").write_text(json.dumps({"version": 1, "address_space": {"name": "s"}, "addresses": {},
                                                "homes": homes}))
    brokers = [{"name": b, "host": "127.0.0.1", "amqp_port": 5672, "management_url": "http://127.0.0.1:8161",
                "management_user": "admin", "management_password": "secret-%s" % b, "broker_name": b,
                "state": "draining" if b == "b3" else "active"} for b in ("b1", "b2", "b3")]
    path = tmp_path / "standard.json"
    path.write_text(json.dumps({"management_url": "amqp://127.0.0.1:5673", "routers": [{"id": "r1"}],
                                "brokers": brokers, "auth_service": {"host": "127.0.0.1", "port": 5671},
                                "ledger_dir": str(ledgers)}))
    return path


def test_the_live_pool_and_partitions_come_from_the_infrastructure_file(plan_file, tmp_path):
    """The brokers of the infrastructure file are the live pool; the ledger says where each partition lives:
    p#1 is on b1 as planned, so it moves; in check mode nothing is written."""
    infra = _infra_file(tmp_path, {"p": {"brokers": ["b2", "b1"], "draining": [], "placed": True}})
    args = dict(_args(plan_file, tmp_path, mode="apply"), infrastructure_file=str(infra))
    del args["brokers"]
    out = run(args, tmp_path, check=True, diff=True)
    assert out["changed"] is True and out["diff"]["before"]["brokers"] == ["b1", "b2", "b3"], out
    assert out["steps"][0] == {"action": "move", "address_space": "s", "address": "p", "partition": 1, "from": "b1",
                               "to": "b2", "bytes": 10}
    assert "secret-b1" not in json.dumps(out) and not (tmp_path / "day2").exists()


def test_a_move_whose_partition_left_its_from_is_refused_by_the_ledger(plan_file, tmp_path):
    infra = _infra_file(tmp_path, {"p": {"brokers": ["b1", "b3"], "draining": [], "placed": True}})
    args = dict(_args(plan_file, tmp_path, mode="apply"), infrastructure_file=str(infra))
    del args["brokers"]
    out = run(args, tmp_path, check=True)
    assert [s["action"] for s in out["steps"]] == ["drain"]
    assert out["refused"] == [{"step": "move s/p#1 b1 -> b2", "guardrail": "moved-since-plan",
                               "why": "from 'b1': the partition lives on 'b3' now (the ledger of 's'): the plan is "
                                      "older than the pool"}]


def test_brokers_and_infrastructure_file_are_one_or_the_other(plan_file, tmp_path):
    out = run(dict(_args(plan_file, tmp_path), infrastructure_file="/x"), tmp_path)
    assert out["failed"] is True and "mutually exclusive: brokers|infrastructure_file" in out["msg"]
    args = _args(plan_file, tmp_path)
    del args["brokers"]
    out = run(args, tmp_path)
    assert out["failed"] is True and "one of the following is required: brokers, infrastructure_file" in out["msg"]


def test_the_next_plan_confirms_the_change_once_in_the_history(plan_file, tmp_path):
    history = tmp_path / "day2" / "history.jsonl"
    history.parent.mkdir()
    changed_at = time.time() - 1800
    history.write_text(json.dumps({"time": changed_at, "changed": True}) + "\n")
    plan = json.loads(plan_file.read_text())
    plan["job"] = {"end": datetime.fromtimestamp(time.time() - 60, timezone.utc).isoformat()}
    plan_file.write_text(json.dumps(plan))
    out = run(_args(plan_file, tmp_path, mode="apply", cooldown=3600), tmp_path)
    assert out["changed"] is False and [r["guardrail"] for r in out["refused"]] == ["cooldown"]
    assert out["confirmation"]["converged"] is False and "2 move(s): not converged" in out["confirmation"]["why"]
    run(_args(plan_file, tmp_path, mode="apply", cooldown=3600), tmp_path)  # recorded once
    records = [json.loads(line) for line in history.read_text().splitlines()]
    assert [r.get("confirms") for r in records] == [None, changed_at] and records[1]["converged"] is False


def test_a_critical_alert_or_an_unreadable_alertmanager_refuses_whole_and_writes_nothing(plan_file, tmp_path):
    firing = [{"labels": {"alertname": "EnmasseBrokerDiskHigh", "instance": "b1:9404", "severity": "critical"},
               "status": {"state": "active", "silencedBy": [], "inhibitedBy": []}}]
    for alerts, guardrail in (({"url": "http://am:9093", "alerts": firing}, "critical-alert"),
                              ({"url": "http://am:9093", "error": "HTTP status -1: refused"}, "alertmanager-unreachable")):
        out = run(dict(_args(plan_file, tmp_path, mode="apply"), alerts=alerts), tmp_path)
        assert out["changed"] is False and out["act"] is False and out["steps"] == [], out
        assert [r["guardrail"] for r in out["refused"]] == [guardrail] and "http://am:9093" in out["refused"][0]["why"]
        assert not (tmp_path / "day2").exists()
    assert "EnmasseBrokerDiskHigh on b1:9404" in run(dict(_args(plan_file, tmp_path), alerts={
        "url": "http://am:9093", "alerts": firing}), tmp_path)["refused"][0]["why"]
    warning = [dict(firing[0], labels=dict(firing[0]["labels"], severity="warning"))]
    out = run(dict(_args(plan_file, tmp_path, mode="apply"), alerts={"url": "http://am:9093", "alerts": warning}),
              tmp_path, check=True)
    assert out["changed"] is True and out["refused"] == []
