"""tests/molecule/scenario.py's run(): a scenario that runs past its
timeout ends with every process molecule started (its playbooks) and its
instances destroyed. A fake ``molecule`` on PATH starts a child that would
outlive it (as ansible-playbook does) and records the destroy."""
import importlib.util
import os
import subprocess
import time

import pytest

pytestmark = pytest.mark.unit

HERE = os.path.dirname(os.path.abspath(__file__))
_SPEC = importlib.util.spec_from_file_location(
    "molecule_scenario", os.path.join(os.path.dirname(HERE), "molecule", "scenario.py"))
scenario = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(scenario)

FAKE = """#!/bin/sh
if [ "$1" = destroy ]; then echo destroyed >> "$FAKE_DIR/calls"; exit 0; fi
sh -c 'trap "" TERM; echo $$ > "$FAKE_DIR/child"; exec sleep 300' &
sleep 300
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:
        return f.read().split()[2] != "Z"


def test_a_timed_out_scenario_leaves_no_process_and_is_destroyed(tmp_path, monkeypatch):
    fake = tmp_path / "molecule"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ["PATH"]))
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    monkeypatch.setattr(scenario, "REPO", str(tmp_path))
    with pytest.raises(subprocess.TimeoutExpired):
        scenario.run("fake", timeout_minutes=0.05)
    child = int((tmp_path / "child").read_text())
    deadline = time.time() + 10
    while alive(child) and time.time() < deadline:
        time.sleep(0.1)
    assert not alive(child), "a process the scenario started outlived its timeout"
    assert (tmp_path / "calls").read_text() == "destroyed\n"
    assert "timed out after 0.05 minutes" in (tmp_path / "tests" / "output" / "molecule-fake.log").read_text()
