"""The capacity loop's run metrics (module_utils/model/loop_metrics.py): the
outcome of a run, the textfile it renders, the counters carried over from
the previous file."""
import shutil
import subprocess

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.model import loop_metrics as lm

pytestmark = pytest.mark.unit

NOW = 1795700000.0
MOVE = {"action": "move", "address_space": "s", "address": "q", "partition": 0, "from": "b1", "to": "b2"}
DRAIN_B = {"action": "drain", "kind": "brokers", "host": "b3"}
DRAIN_R = {"action": "drain", "kind": "routers", "host": "r3"}
ADD = {"action": "add", "kind": "brokers", "host": "spare-1"}


def _decision(steps=(), refused=(), act=True):
    return {"act": act, "steps": list(steps), "refused": [{"step": s, "guardrail": g, "why": "..."} for s, g in refused]}


def _samples(text):
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))


@pytest.mark.parametrize("decision, mode, expected", [
    (_decision([MOVE, DRAIN_B]), "apply", "applied"),
    (_decision([ADD]), "apply", "idle"),          # a scale out is printed as commands
    (_decision([DRAIN_R]), "apply", "idle"),      # a router drain is printed as commands
    (_decision(), "apply", "idle"),
    (_decision([MOVE], act=False), "report", "report"),
    (_decision(refused=[("plan", "critical-alert")], act=False), "apply", "refused"),
    (_decision(refused=[("plan", "cooldown")], act=False), "report", "refused"),
    (_decision([MOVE], refused=[("move s/p#0 b1 -> b2", "max-moves")]), "apply", "applied"),
    (None, "apply", "idle"),
], ids=["moves-drains", "add-only", "router-drain-only", "nothing", "report", "refused-alert", "refused-in-report",
        "step-refusal-is-not-whole", "no-decision"])
def test_the_outcome_of_a_run(decision, mode, expected):
    assert lm.outcome(decision, mode) == expected


def test_a_first_run_renders_every_metric_with_help_and_type():
    text = lm.render("", _decision([MOVE, DRAIN_B, ADD], refused=[("move x", "max-moves"), ("move y", "max-moves")]),
                     "apply", NOW)
    assert text.endswith("\n")
    samples = _samples(text)
    assert samples == {
        "enmasse_loop_last_run_timestamp_seconds": "1795700000.000",
        'enmasse_loop_last_run_outcome{outcome="applied"}': "1", 'enmasse_loop_last_run_outcome{outcome="idle"}': "0",
        'enmasse_loop_last_run_outcome{outcome="report"}': "0", 'enmasse_loop_last_run_outcome{outcome="refused"}': "0",
        'enmasse_loop_refusals_total{reason="max-moves"}': "1",  # a guardrail counts once per run
        "enmasse_loop_steps_applied_total": "2"}
    for name, kind in (("last_run_timestamp_seconds", "gauge"), ("last_run_outcome", "gauge"),
                       ("refusals_total", "counter"), ("steps_applied_total", "counter")):
        assert "# TYPE enmasse_loop_%s %s\n" % (name, kind) in text and "# HELP enmasse_loop_%s " % name in text


def test_the_counters_go_on_from_the_previous_file():
    first = lm.render("", _decision(refused=[("plan", "critical-alert")], act=False), "apply", NOW)
    second = lm.render(first, _decision([MOVE]), "apply", NOW + 3600)
    third = lm.render(second, _decision(refused=[("plan", "critical-alert"), ("plan", "plan-age")], act=False),
                      "report", NOW + 7200)
    samples = _samples(third)
    assert samples['enmasse_loop_refusals_total{reason="critical-alert"}'] == "2"
    assert samples['enmasse_loop_refusals_total{reason="plan-age"}'] == "1"
    assert samples["enmasse_loop_steps_applied_total"] == "1"
    assert samples['enmasse_loop_last_run_outcome{outcome="refused"}'] == "1"
    assert samples["enmasse_loop_last_run_timestamp_seconds"] == "1795707200.000"


def test_report_mode_applies_no_step_but_counts_its_refusals():
    samples = _samples(lm.render("", _decision([MOVE], refused=[("drain b3", "floor")], act=False), "report", NOW))
    assert samples["enmasse_loop_steps_applied_total"] == "0"
    assert samples['enmasse_loop_refusals_total{reason="floor"}'] == "1"
    assert samples['enmasse_loop_last_run_outcome{outcome="report"}'] == "1"


@pytest.mark.parametrize("previous", ["garbage\n", "enmasse_loop_steps_applied_total x\n", None])
def test_an_unreadable_previous_file_starts_the_counters_at_zero(previous):
    assert lm.counters(previous) == ({}, 0)


def test_label_values_are_escaped_and_read_back():
    text = lm.render("", _decision(refused=[("x", 'we"ird\\reason\nx')]), "apply", NOW)
    assert 'reason="we\\"ird\\\\reason\\nx"' in text
    assert lm.counters(text) == ({'we"ird\\reason\nx': 1}, 0)


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool missing (Debian package prometheus)")
def test_promtool_accepts_the_file():
    text = lm.render(lm.render("", _decision([MOVE], refused=[("plan", "cooldown")]), "apply", NOW), _decision(), "apply")
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_spare_broker_written_to_the_loops_inventory_file_is_an_applied_step():
    """With the loop's own inventory file (apply_plan_grown not empty) a broker add is carried out: it counts."""
    decision = _decision([ADD])
    assert lm.outcome(decision, "apply", added=True) == "applied"
    samples = _samples(lm.render("", decision, "apply", NOW, added=True))
    assert samples["enmasse_loop_steps_applied_total"] == "1"
    assert samples['enmasse_loop_last_run_outcome{outcome="applied"}'] == "1"
    assert lm.outcome(_decision([DRAIN_R]), "apply", added=True) == "idle"  # a router: still printed
    assert _samples(lm.render("", decision, "report", NOW, added=True))["enmasse_loop_steps_applied_total"] == "0"
