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

DEFAULTS = {"infra": "default", "routers": [], "spare_brokers": [], "spare_routers": [], "guardrails": {},
            "history": "/var/lib/enmasse-messaging/day2/history.jsonl"}


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


def _move_text(m):
    return "%s/%s#%s %s -> %s" % (m.get("address_space"), m.get("address"), m.get("partition"), m.get("from"), m.get("to"))


def _pool_view(brokers, routers, moves=()):
    return {"brokers": list(brokers), "routers": list(routers), "moves": [_move_text(m) for m in moves]}


def _after(live, decision):
    def kind(name):
        drained = set(decision["drain"][name])
        return [h + " (draining)" if h in drained else h for h in live.get(name) or []] + decision["add"][name]
    return _pool_view(kind("brokers"), kind("routers"), decision["moves"])


def run(params, check_mode, now=None):
    """The module's result. ``params``: the module's options."""
    now = time.time() if now is None else now
    errs = day2.guardrail_errors(params["guardrails"] or {})
    if errs:
        raise ConfigError(errs)
    history_path = params["history"]
    plan = read_plan(params["plan"])
    history = read_history(history_path)
    live = {"brokers": params["brokers"], "routers": params["routers"] or []}
    spares = {"brokers": params["spare_brokers"] or [], "routers": params["spare_routers"] or []}
    try:
        decision = day2.change_set(plan, params["infra"], live, spares, history, now, params["guardrails"])
    except ValueError as e:
        raise ConfigError(str(e))
    todo = any(decision["add"].values()) or any(decision["drain"].values()) or bool(decision["moves"])
    changed = decision["act"] and todo
    record = None
    if changed:
        record = {"time": now, "changed": True, "plan_generated_at": plan.get("generated_at"),
                  "infra": params["infra"], "add": decision["add"], "drain": decision["drain"],
                  "moves": len(decision["moves"]), "refused": len(decision["refused"])}
        if not check_mode:
            _append(history_path, record)
    result = dict(decision, changed=changed, history_record=None if check_mode else record,
                  plan_generated_at=plan.get("generated_at"),
                  diff={"before": _pool_view(live["brokers"], live["routers"]),
                        "after": _after(live, decision) if changed else _pool_view(live["brokers"], live["routers"])})
    result["warnings"] = ["not done: %s (%s: %s)" % (r["step"], r["guardrail"], r["why"]) for r in decision["refused"]]
    return result


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
