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
    assert out["diff"]["after"]["moves"] == ["s/p#1 b1 -> b2"]
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
    assert "not done: plan (cooldown: last change 0 min ago (< 60 min); nothing done)" in json.dumps(second["warnings"])
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
