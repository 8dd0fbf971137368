"""molecule/router/rerun.py: the scenario's second run of site.yml (after one
password changed) must change exactly that password's task and nothing else.
Each rule passes on the healthy output and fails when it is broken; the
Molecule scenario runs the same script on the real -vvv output."""
import importlib.util
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("molecule_router_rerun",
                                               os.path.join(REPO, "molecule", "router", "rerun.py"))
rerun = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rerun)

USERS = "Messaging users of the standard spaces (their Keycloak realm; owned users not listed are pruned)"
EXPECTED = [("enmasse-router-1", "Messaging users of the standard spaces*")]


def _output(extra_task="", r1_changed=1, r2_changed=0, failed=0, recap=True):
    text = """PLAY [Routers] *****************************************************************

TASK [enmasse.messaging.router : Render qdrouterd.conf] ************************
Friday 27 November 2026  07:10:01 +0000 (0:00:01.100)       0:01:02.000 ******
ok: [enmasse-router-1] => {
    "changed": false
}
ok: [enmasse-router-2] => {
    "changed": false
}
%s
TASK [%s] ***
changed: [enmasse-router-1] => (item=tenant-a) => {
    "changed": true
}
ok: [enmasse-router-1] => (item=tenant-b) => {
    "changed": false
}
""" % (extra_task, USERS)
    if recap:
        text += """
PLAY RECAP *********************************************************************
enmasse-router-1           : ok=120  changed=%d    unreachable=0    failed=%d    skipped=30   rescued=0    ignored=0
enmasse-router-2           : ok=100  changed=%d    unreachable=0    failed=0    skipped=30   rescued=0    ignored=0
""" % (r1_changed, failed, r2_changed)
    return text


def test_only_the_password_task_changed_passes():
    text = _output()
    assert rerun.changed_tasks(text) == [("enmasse-router-1", USERS)]
    assert rerun.rerun_problems(text, EXPECTED) == []


def test_another_changed_task_fails_as_not_idempotent():
    extra = """TASK [enmasse.messaging.router : Write the broker passwords] ***
changed: [enmasse-router-2] => {
    "changed": true
}
"""
    problems = rerun.rerun_problems(_output(extra, r2_changed=1), EXPECTED)
    assert problems == ["enmasse-router-2: 'enmasse.messaging.router : Write the broker passwords' changed (not idempotent)"]


def test_a_changed_handler_counts_too():
    extra = """RUNNING HANDLER [enmasse.messaging.router : Restart qdrouterd] ***
changed: [enmasse-router-1]
"""
    problems = rerun.rerun_problems(_output(extra, r1_changed=2), EXPECTED)
    assert problems == ["enmasse-router-1: 'enmasse.messaging.router : Restart qdrouterd' changed (not idempotent)"]


def test_the_password_not_converged_fails():
    text = _output().replace("changed: [enmasse-router-1] => (item=tenant-a)", "ok: [enmasse-router-1] => (item=tenant-a)")
    problems = rerun.rerun_problems(text.replace("changed=1 ", "changed=0 "), EXPECTED)
    assert problems == ["enmasse-router-1: 'Messaging users of the standard spaces*' did not change "
                        "(the new password was not converged)"]


def test_the_same_task_on_another_host_is_not_expected():
    text = _output().replace("changed: [enmasse-router-1] => (item=tenant-a)",
                             "changed: [enmasse-router-2] => (item=tenant-a)")
    problems = rerun.rerun_problems(text.replace("changed=1 ", "changed=0 ").replace(
        "ok=100  changed=0", "ok=100  changed=1"), EXPECTED)
    assert "enmasse-router-2: %r changed (not idempotent)" % USERS in problems
    assert len(problems) == 2


def test_a_failed_host_a_missing_recap_and_a_recap_mismatch_fail():
    assert rerun.rerun_problems(_output(failed=1), EXPECTED) == ["enmasse-router-1: unreachable=0 failed=1"]
    assert rerun.rerun_problems(_output(recap=False), EXPECTED) == ["no PLAY RECAP: the run did not finish"]
    # a changed line this parser missed still shows in the recap's count
    assert rerun.rerun_problems(_output(r2_changed=1), EXPECTED) == [
        "enmasse-router-2: the recap counts changed=1, the output shows 0 changed task(s)"]


def test_delegated_results_count_for_the_host_that_ran_the_task():
    text = _output().replace("changed: [enmasse-router-1] => (item=tenant-a)",
                             "changed: [enmasse-router-1 -> localhost] => (item=tenant-a)")
    assert rerun.rerun_problems(text, EXPECTED) == []


def test_cli_prints_the_changed_tasks_and_exits_1_on_a_problem(tmp_path, capsys):
    out = tmp_path / "site-vvv.log"
    out.write_text(_output())
    assert rerun.main(["rerun.py", str(out), "enmasse-router-1=Messaging users of the standard spaces*"]) == 0
    assert "changed: enmasse-router-1 %s" % USERS in capsys.readouterr().out
    assert rerun.main(["rerun.py", str(out)]) == 1
    assert "PROBLEM: enmasse-router-1" in capsys.readouterr().out
    assert rerun.main(["rerun.py", str(out), "no-equals-sign"]) == 2
