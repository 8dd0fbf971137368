# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity_plan_apply module's work (issue 22): read the capacity job's
plan and the history of earlier decisions, decide with the rules of
model/day2.py, report before/after, and append the decision to the history
when it acts. Everything the module does besides argument parsing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.files import writable_error
from ansible_collections.enmasse.messaging.plugins.module_utils.model import day2
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as _infra

DEFAULTS = {"infra": "default", "brokers": None, "infrastructure_file": None, "routers": [], "spare_brokers": [],
            "spare_routers": [], "guardrails": {}, "alerts": None, "history": "/var/lib/enmasse-messaging/day2/history.jsonl"}


def read_plan(path):
    """The plan document at ``path``; ConfigError naming the file and why."""
    try:
        with open(path) as f:
            return json.load(f)
    except (IOError, OSError) as e:
        raise ConfigError("plan: cannot read %s: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise ConfigError("plan: %s is not JSON: %s" % (path, e))


def read_history(path):
    """The decisions recorded at ``path`` (JSON Lines; none when the file
    does not exist yet)."""
    if not os.path.exists(path):
        return []
    records = []
    try:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except ValueError as e:
                    raise ConfigError("history: %s line %d is not JSON (%s): repair or move the file" % (path, number, e))
    except (IOError, OSError) as e:
        raise ConfigError("history: cannot read %s: %s" % (path, e.strerror or e))
    return records


def alert_refusals(alerts):
    """day2.alert_refusals of the ``alerts`` option ({url, alerts, error,
    severities}, what playbooks/tasks/apply_plan_alerts.yml read); [] when
    the guard is off (None)."""
    if not alerts:
        return []
    return day2.alert_refusals(alerts.get("alerts"), alerts["url"], tuple(alerts.get("severities") or day2.ALERT_SEVERITIES),
                               alerts.get("error"))


def _move_text(m):
    return "%s/%s#%s %s -> %s" % (m.get("address_space"), m.get("address"), m.get("partition"), m.get("from"), m.get("to"))


def _partition(m):
    return "%s/%s#%s" % (m.get("address_space"), m.get("address"), m.get("partition"))


def _pool_view(brokers, routers, moves=(), side="from"):
    """The pool as the diff shows it: its hosts, and where each partition the
    decision moves lives (``side``: ``from`` before, ``to`` after)."""
    return {"brokers": list(brokers), "routers": list(routers),
            "partitions": dict((_partition(m), m.get(side)) for m in moves)}


def _after(live, decision):
    def kind(name):
        drained = set(decision["drain"][name])
        return [h + " (draining)" if h in drained else h for h in live.get(name) or []] + decision["add"][name]
    return _pool_view(kind("brokers"), kind("routers"), decision["moves"], "to")


def live_pool(params):
    """(live {brokers, routers}, homes {"space/address": [brokers]} or None):
    the brokers and the ledgers' homes from the infrastructure file when it
    is given, else the brokers option."""
    routers = params["routers"] or []
    if not params.get("infrastructure_file"):
        return {"brokers": params["brokers"] or [], "routers": routers}, None
    infra = _infra.load_infra(params["infrastructure_file"])
    homes = {}
    for space in _infra.space_names(infra):
        for name, h in _infra.load_ledger(infra, space).homes.items():
            homes["%s/%s" % (space, name)] = list(h.get("brokers") or [])
    return {"brokers": [b["name"] for b in infra["brokers"]], "routers": routers}, homes


def run(params, check_mode, now=None):
    """The module's result. ``params``: the module's options."""
    now = time.time() if now is None else now
    errs = day2.guardrail_errors(params["guardrails"] or {})
    if errs:
        raise ConfigError(errs)
    history_path = params["history"]
    plan = read_plan(params["plan"])
    history = read_history(history_path)
    live, homes = live_pool(params)
    spares = {"brokers": params["spare_brokers"] or [], "routers": params["spare_routers"] or []}
    blocked = alert_refusals(params.get("alerts"))
    try:
        decision = day2.change_set(plan, params["infra"], live, spares, history, now, params["guardrails"], homes,
                                   blocked)
    except ValueError as e:
        raise ConfigError(str(e))
    steps = day2.steps(decision)
    changed = decision["act"] and bool(steps)
    record = None
    if changed:
        record = {"time": now, "changed": True, "plan_generated_at": plan.get("generated_at"),
                  "plan_job_end": (plan.get("job") or {}).get("end"), "infra": params["infra"],
                  "add": decision["add"], "add_for": decision["add_for"], "drain": decision["drain"],
                  "moves": [_move_text(m) for m in decision["moves"]], "refused": decision["refused"]}
        if not check_mode:
            _append(history_path, record)
    confirmation = _confirmation(plan, params, history, decision, now)
    if confirmation and confirmation.get("record") and not check_mode and params["guardrails"].get("mode") == "apply":
        _append(history_path, confirmation["record"])
    result = dict(decision, changed=changed, steps=steps if decision["act"] else [],
                  history_record=None if check_mode else record,
                  plan_generated_at=plan.get("generated_at"),
                  confirmation=confirmation and dict((k, v) for k, v in confirmation.items() if k != "record"),
                  diff={"before": _pool_view(live["brokers"], live["routers"], decision["moves"] if changed else ()),
                        "after": _after(live, decision) if changed else _pool_view(live["brokers"], live["routers"])})
    result["warnings"] = ["not done: %s (%s: %s)" % (r["step"], r["guardrail"], r["why"]) for r in decision["refused"]]
    return result


def _confirmation(plan, params, history, decision, now):
    """day2.confirmation of the last change, unless the plan is stale; with
    the history record to append when that change is not confirmed yet."""
    if any(r["step"] == "plan" and r["guardrail"] != "cooldown" for r in decision["refused"]):
        return None
    c = day2.confirmation(plan, params["infra"], history)
    if c is None:
        return None
    if not any(h.get("confirms") == c["of"] for h in history):
        c["record"] = {"time": now, "changed": False, "confirms": c["of"], "converged": c["converged"],
                       "why": c["why"], "plan_job_end": (plan.get("job") or {}).get("end")}
    return c


def _append(path, record):
    problem = writable_error(path, "history file")
    if problem:
        raise ConfigError("history: %s" % problem)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o750)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    with os.fdopen(fd, "a") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
