# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity loop's run metrics (issue 22, docs/capacity-loop.md
"Metrics"): one run's decision (capacity_plan_apply's result) and the
previous metrics file -> the Prometheus text exposition format that the node
exporter's textfile collector reads.

* ``enmasse_loop_last_run_timestamp_seconds``: when the run ended (a run
  that fails before its end writes nothing: this gauge then gets old);
* ``enmasse_loop_last_run_outcome{outcome}``: 1 for the last run's outcome,
  0 for the others (OUTCOMES);
* ``enmasse_loop_refusals_total{reason}``: runs in which a guardrail refused
  something, per guardrail (each run counts a guardrail once);
* ``enmasse_loop_steps_applied_total``: steps carried out (moves, drains,
  and the spare brokers added when the loop writes its own inventory file,
  ``added``); without that file an added host is printed as commands, and a
  router drain always is: neither counts then.

The counters go on from the previous file (a file that cannot be read as
ours starts them at 0, which Prometheus' rate() reads as a reset). Pure
Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

# applied: steps were carried out; idle: apply mode, nothing to do; report: report mode, nothing refused whole;
# refused: the plan was refused whole (stale, cooldown, critical alert, Alertmanager unreachable)
OUTCOMES = ("applied", "idle", "report", "refused")
_REFUSAL = re.compile(r'^enmasse_loop_refusals_total\{reason="((?:[^"\\]|\\.)*)"\} ([0-9.eE+]+)$')
_STEPS = re.compile(r"^enmasse_loop_steps_applied_total ([0-9.eE+]+)$")


def applied_steps(decision, added=False):
    """The steps of ``decision`` a run carries out: moves and broker drains,
    and broker adds when ``added`` (written to the loop's inventory file)."""
    broker_actions = ("drain", "add") if added else ("drain",)
    return [s for s in (decision or {}).get("steps") or []
            if s.get("action") == "move" or (s.get("action") in broker_actions and s.get("kind") == "brokers")]


def outcome(decision, mode, added=False):
    """The run's outcome (one of OUTCOMES) from its decision and mode."""
    refused = (decision or {}).get("refused") or []
    if any(r.get("step") == "plan" for r in refused):
        return "refused"
    if mode != "apply":
        return "report"
    return "applied" if (decision or {}).get("act") and applied_steps(decision, added) else "idle"


def counters(previous):
    """({reason: count}, steps applied) read back from the previous file's text."""
    reasons, steps = {}, 0
    for line in (previous or "").splitlines():
        m = _REFUSAL.match(line)
        if m:
            reasons[re.sub(r"\\(.)", lambda c: "\n" if c.group(1) == "n" else c.group(1), m.group(1))] = int(float(m.group(2)))
        m = _STEPS.match(line)
        if m:
            steps = int(float(m.group(1)))
    return reasons, steps


def _label(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(previous, decision, mode, now=None, added=False):
    """The metrics file after a run: ``previous`` (its text, "" when none),
    ``decision`` (capacity_plan_apply's result, None when no decision was
    made), ``mode`` (report or apply), ``now`` (epoch seconds), ``added``
    (the spare brokers it adds were written to the loop's inventory file)."""
    now = time.time() if now is None else now
    reasons, steps = counters(previous)
    for reason in sorted(set(r.get("guardrail") or "unknown" for r in (decision or {}).get("refused") or [])):
        reasons[reason] = reasons.get(reason, 0) + 1
    if mode == "apply" and (decision or {}).get("act"):
        steps += len(applied_steps(decision, added))
    last = outcome(decision, mode, added)
    lines = ["# HELP enmasse_loop_last_run_timestamp_seconds When the last capacity loop run ended (Unix time).",
             "# TYPE enmasse_loop_last_run_timestamp_seconds gauge",
             "enmasse_loop_last_run_timestamp_seconds %.3f" % now,
             "# HELP enmasse_loop_last_run_outcome The last run's outcome: 1 for it, 0 for the others.",
             "# TYPE enmasse_loop_last_run_outcome gauge"]
    lines += ['enmasse_loop_last_run_outcome{outcome="%s"} %d' % (o, o == last) for o in OUTCOMES]
    lines += ["# HELP enmasse_loop_refusals_total Runs in which a guardrail refused something, per guardrail.",
              "# TYPE enmasse_loop_refusals_total counter"]
    lines += ['enmasse_loop_refusals_total{reason="%s"} %d' % (_label(r), reasons[r]) for r in sorted(reasons)]
    lines += ["# HELP enmasse_loop_steps_applied_total Steps the loop carried out (moves, broker drains and adds).",
              "# TYPE enmasse_loop_steps_applied_total counter",
              "enmasse_loop_steps_applied_total %d" % steps]
    return "\n".join(lines) + "\n"
