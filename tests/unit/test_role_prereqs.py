"""The capacity_planner role checks address space names with the
collection's one name rule (the space_name_errors filter over
model/names.py), not a copy of it, before touching a host."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_prereqs_all(tmp_path, spaces):
    """(task name, host result) of every task the prereqs ran."""
    play = [{"hosts": "localhost", "gather_facts": False, "connection": "local", "tasks": [
        {"name": "prereqs", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.capacity_planner", "tasks_from": "prereqs.yml"},
         "vars": {"capacity_planner_collect_address_spaces": spaces}}]}]
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(play))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_RETRY_FILES_ENABLED="False")
    out = subprocess.run(["ansible-playbook", "-i", "localhost,", str(path),
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False, timeout=300)
    data = json.loads(out.stdout[out.stdout.index("{"):])
    return [(t["task"]["name"], h) for p in data["plays"] for t in p["tasks"] for h in t["hosts"].values()]


def run_prereqs(tmp_path, spaces):
    """(task name, host result) of every failed task."""
    return [(name, h) for name, h in run_prereqs_all(tmp_path, spaces) if h.get("failed")]


@pytest.mark.parametrize("bad, rule", [
    ("Bad_Name", "must consist of lowercase letters, digits and '-'"),
    ("x" * 61, "at most 60 are allowed"),
])
def test_capacity_planner_refuses_bad_space_names_with_the_model_rule(tmp_path, bad, rule):
    failed = run_prereqs(tmp_path, ["good-one", bad])
    assert failed and failed[0][0].endswith("Check the collection inputs"), failed
    assert rule in failed[0][1]["msg"] and "capacity_planner_collect_address_spaces[]" in failed[0][1]["msg"]


def test_capacity_planner_accepts_good_space_names(tmp_path):
    # the check must have run (not skipped, not cut short by an earlier failure) and passed
    results = run_prereqs_all(tmp_path, ["good-one", "b2"])
    check = [h for name, h in results if name.endswith("Check the collection inputs")]
    assert len(check) == 1, results
    assert not check[0].get("failed") and not check[0].get("skipped"), check[0]
    assert "All assertions passed" in check[0].get("msg", ""), check[0]
