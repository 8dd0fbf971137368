"""The capacity_planner role checks address space names with the
collection's one name rule (the space_name_errors filter over
model/names.py), not a copy of it, before touching a host."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_prereqs(tmp_path, spaces):
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
    failed = [(t["task"]["name"], h) for p in data["plays"] for t in p["tasks"]
              for h in t["hosts"].values() if h.get("failed")]
    return failed


@pytest.mark.parametrize("bad, rule", [
    ("Bad_Name", "must consist of lowercase letters, digits and '-'"),
    ("x" * 61, "at most 60 are allowed"),
])
def test_capacity_planner_refuses_bad_space_names_with_the_model_rule(tmp_path, bad, rule):
    failed = run_prereqs(tmp_path, ["good-one", bad])
    assert failed and failed[0][0].endswith("Check the collection inputs"), failed
    assert rule in failed[0][1]["msg"] and "capacity_planner_collect_address_spaces[]" in failed[0][1]["msg"]


def test_capacity_planner_accepts_good_space_names(tmp_path):
    failed = run_prereqs(tmp_path, ["good-one", "b2"])
    assert all(not name.endswith("Check the collection inputs") for name, _res in failed), failed
