"""The capacity loop grows the pool by itself (issue 22; docs/apply-plan.md
step 3): apply_plan.yml with ``apply_plan_inventory_file`` writes the spare
host a plan adds into the loop's own inventory file. ansible-playbook runs,
with an operator's inventory (routers: localhost; brokers b1-b3; brokers_spare:
spare-1), the control host's part of apply_plan.yml
(tasks/apply_plan_control.yml) and then, verbatim from apply_plan.yml, its
play that prepares scale_in.yml and the condition of that import; and,
verbatim from scale_in.yml, its last steps for a broker the loop added.

Shown: check mode writes nothing and shows the file's diff; the real run writes
the file so that ``ansible-inventory -i <operator's> -i <loop file>`` has
spare-1 in brokers (and still in brokers_spare, with its variables), puts it in
brokers for the rest of the run and makes the import of scale_in.yml run for it
with only its site.yml (scale_in_converge_only on every host of
brokers:routers, no scale_in_broker); a second run (no cooldown, so the
decision adds it again as the pool does not list it yet: a site.yml that
failed) changes nothing in the file; without the variable the commands are
printed and nothing is written. Not shown here: site.yml installing Artemis on
the spare host (it needs a host to install on: the lead's molecule scenario),
and the whole scale_in.yml (its own tests; here only its last steps)."""
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest
import yaml

from helpers import _env
from standard_env import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "unit"))
from test_capacity_plan_apply_module import _infra_file  # noqa: E402  # brokers b1-b3 (b3 draining), space s

pytestmark = pytest.mark.integration

CONTROL = os.path.join(REPO, "playbooks", "tasks", "apply_plan_control.yml")


def _apply_plan_plays():
    """apply_plan.yml's play that prepares scale_in.yml, and the condition of the import of scale_in.yml."""
    with open(os.path.join(REPO, "playbooks", "apply_plan.yml")) as f:
        plays = yaml.safe_load(f)
    prepare = [p for p in plays if p.get("hosts") == "brokers:routers"]
    (imp,) = [p for p in plays if p.get("ansible.builtin.import_playbook") == "scale_in.yml"]
    assert len(prepare) == 1
    return prepare[0], imp["when"]


def _scale_in_last_steps():
    """scale_in.yml's last steps on the control host, without the infrastructure file's (the routers')."""
    with open(os.path.join(REPO, "playbooks", "scale_in.yml")) as f:
        plays = yaml.safe_load(f)
    block = plays[-1]["tasks"][0]
    return [t for t in block["block"] if t["name"] != "Forget the broker"], block["when"]


def _operator_inventory(tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inv = {"all": {"vars": local, "children": {
        "routers": {"hosts": {"localhost": {}}},
        "brokers": {"hosts": {"b1": {}, "b2": {}, "b3": {}}},
        "brokers_spare": {"hosts": {"spare-1": {"ansible_host": "192.0.2.10"}}}}}}
    path = tmp_path / "hosts.yml"
    path.write_text(json.dumps(inv))
    return path


def _plan(tmp_path, after):
    made = datetime.fromtimestamp(time.time() - 60, timezone.utc).isoformat()
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({
        "schema_version": 1, "generated_at": made, "job": {"end": made}, "data_quality": {"valid_window_ratio": 1.0},
        "infrastructures": [{"infra": "default", "router_pools": [], "broker_pools": [{
            "pool": "_infra", "brokers_before": ["b1", "b2", "b3"], "brokers_after": after, "moves": []}]}]}))
    return path


def _run(tmp_path, plays, sources, extra, check=False):
    pb = tmp_path / "play.yml"
    pb.write_text(json.dumps(plays))
    ev = tmp_path / "vars.json"
    ev.write_text(json.dumps(extra))
    cmd = ["ansible-playbook", str(pb), "-e", "@%s" % ev, "--diff"] + (["--check"] if check else [])
    for s in sources:
        cmd += ["-i", str(s)]
    env = dict(_env(), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_RETRY_FILES_ENABLED="False")
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path), check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    print("%s%s: %.1f s" % (plays[0]["name"], " (check)" if check else "", time.monotonic() - t0))
    tasks = {}
    for play in data["plays"]:
        for t in play["tasks"]:
            tasks.setdefault(t["task"]["name"], {}).update(t["hosts"])
    return tasks


def _decide_and_prepare(tmp_path, sources, extra, check=False):
    """The control part, apply_plan.yml's play before scale_in.yml, and what the import would see on each host."""
    prepare, when = _apply_plan_plays()
    look = {"name": "what the import of scale_in.yml sees", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "the import's condition", "ansible.builtin.debug": {"msg": {
            "import": "{{ %s }}" % when, "brokers": "{{ groups['brokers'] }}",
            "converge_only": "{{ scale_in_converge_only | default(false) }}",
            "scale_in_broker": "{{ scale_in_broker | default('') }}"}}}]}
    plays = [{"name": "apply the plan", "hosts": "routers[0]", "gather_facts": False,
              "tasks": [{"name": "control", "ansible.builtin.include_tasks": CONTROL}]}, prepare, look]
    return _run(tmp_path, plays, sources, extra, check=check)


def _graph(*sources):
    cmd = ["ansible-inventory", "--graph"]
    for s in sources:
        cmd += ["-i", str(s)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=60, check=True)
    return proc.stdout


def test_the_loop_writes_the_spare_it_adds_into_its_own_inventory_file(tmp_path):
    operator = _operator_inventory(tmp_path)
    loop = tmp_path / "loop" / "inventory.yml"
    plan = _plan(tmp_path, ["b1", "b2", "b3", "default-broker-4"])
    extra = {"apply_plan_file": str(plan), "apply_plan_infra": "default",
             "apply_plan_infrastructure_file": str(_infra_file(tmp_path, {})),
             "apply_plan_history": str(tmp_path / "day2" / "history.jsonl"),
             "apply_plan_guardrails": {"mode": "apply", "cooldown": 0}, "apply_plan_timeout": 10,
             "apply_plan_delay": 1, "apply_plan_idle": 1.0, "__apply_spaces": [],
             "apply_plan_inventory_file": str(loop)}

    # check mode: the file's diff, nothing written, no host added, no converge
    tasks = _decide_and_prepare(tmp_path, [operator], extra, check=True)
    decision = tasks["Decide what of the plan to do now (within the guardrails)"]["localhost"]
    assert decision["steps"] == [{"action": "add", "kind": "brokers", "host": "spare-1", "for": "default-broker-4"}]
    written = tasks["Scale out - the spare broker host(s) into the loop's inventory file "
                    "(apply_plan_inventory_file; the controller)"]["localhost"]["results"][0]
    assert written["changed"] is True and written["diff"]["before"] == ""
    assert '  hosts:\n    "spare-1": {}' in written["diff"]["after"]
    assert not loop.exists() and not (tmp_path / "day2").exists()
    shown = tasks["Scale out - what is done for each spare broker host (the loop's inventory file, then site.yml "
                  "in this run)"]["localhost"]["results"][0]["msg"]
    assert shown.startswith("check mode: spare-1 becomes a broker (the plan's default-broker-4): the real run writes")
    seen = tasks["the import's condition"]
    assert all(h["msg"]["import"] is False for h in seen.values()), seen
    assert "spare-1" not in seen["localhost"]["msg"]["brokers"]

    # the real run: the file, spare-1 in brokers for the rest of the run, the import runs site.yml only
    tasks = _decide_and_prepare(tmp_path, [operator], extra)
    assert loop.read_text().endswith('brokers:\n  hosts:\n    "spare-1": {}\n')
    assert oct(loop.stat().st_mode & 0o777) == "0o644"
    seen = tasks["the import's condition"]
    assert seen["localhost"]["msg"]["brokers"] == ["b1", "b2", "b3", "spare-1"]
    for host in ("localhost", "b1", "b2", "b3", "spare-1"):
        assert seen[host]["msg"]["import"] is True and seen[host]["msg"]["converge_only"] is True, (host, seen[host])
        assert seen[host]["msg"]["scale_in_broker"] == ""
    with open(str(tmp_path / "day2" / "history.jsonl")) as f:
        assert [r["add"]["brokers"] for r in map(json.loads, f)] == [["spare-1"]]  # the history as before
    graph = _graph(operator, loop)
    print(graph)
    brokers = graph[graph.index("@brokers:"):graph.index("@brokers_spare:")]
    assert "|--spare-1" in brokers and "|--spare-1" in graph[graph.index("@brokers_spare:"):]
    assert "spare-1" not in _graph(operator).split("@brokers_spare:")[0]

    # again (the pool does not list spare-1 yet, as if site.yml had failed): the same decision, the file unchanged
    before = loop.read_text()
    tasks = _decide_and_prepare(tmp_path, [operator, loop], extra)
    written = tasks["Scale out - the spare broker host(s) into the loop's inventory file "
                    "(apply_plan_inventory_file; the controller)"]["localhost"]["results"][0]
    assert written["changed"] is False and loop.read_text() == before

    # without apply_plan_inventory_file: the commands, nothing written, no import
    other = tmp_path / "other.yml"
    tasks = _decide_and_prepare(tmp_path, [operator], dict(extra, apply_plan_inventory_file=""))
    printed = tasks["Scale out - the exact next commands (without apply_plan_inventory_file this playbook does not "
                    "edit an inventory)"]["localhost"]["results"][0]["msg"]
    assert "move spare-1 from the group brokers_spare to the group brokers" in printed[1]
    assert not other.exists() and all(h["msg"]["import"] is False for h in tasks["the import's condition"].values())


def test_scale_in_forgets_in_the_loop_file_only_a_broker_the_loop_added(tmp_path):
    operator = _operator_inventory(tmp_path)
    loop = tmp_path / "inventory.yml"
    loop.write_text('brokers:\n  hosts:\n    "spare-1": {}\n')
    steps, when = _scale_in_last_steps()
    plays = [{"name": "scale_in.yml's last steps", "hosts": "routers[0]", "gather_facts": False,
              "tasks": [{"name": "last steps", "when": when, "block": steps}]}]
    extra = {"scale_in_broker": "spare-1", "scale_in_inventory_file": str(loop)}

    tasks = _run(tmp_path, plays, [operator, loop], extra, check=True)
    out = tasks["The loop's inventory file without the broker (scale_in_inventory_file; the controller)"]["localhost"]
    assert out["changed"] is True and '"spare-1"' in out["diff"]["before"] and '"spare-1"' not in out["diff"]["after"]
    assert '"spare-1"' in loop.read_text() and tasks["What is left to do"]["localhost"]["msg"] == \
        "check mode: nothing was changed"

    tasks = _run(tmp_path, plays, [operator, loop], extra)
    assert '"spare-1"' not in loop.read_text()
    msg = tasks["What is left to do"]["localhost"]["msg"]
    assert msg.startswith("spare-1 left the standard pool and the loop's inventory file %s: nothing is left" % loop)
    assert "|--spare-1" not in _graph(operator, loop).split("@brokers_spare:")[0]  # a spare host again

    # a broker of the operator's own group brokers: the instruction, the file untouched
    tasks = _run(tmp_path, plays, [operator, loop], dict(extra, scale_in_broker="b2"))
    msg = tasks["What is left to do"]["localhost"]["msg"]
    assert msg.startswith("b2 left the standard pool: take it out of the group brokers of the inventory now"), msg

    # with the converge of a scale out only (scale_in_converge_only): none of it runs
    tasks = _run(tmp_path, plays, [operator, loop], dict(extra, scale_in_converge_only=True))
    assert tasks["What is left to do"]["localhost"].get("skipped") is True
