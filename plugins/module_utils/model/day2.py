# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Applying a capacity plan (issue 22, docs/day2-design.md sections 4 and 5):
the plan's proposal for one infrastructure's standard pool, the live pool,
the spare hosts and the guardrails -> the change set the loop may make.

Rules, in the order they are applied:

* a plan that is not ``schema_version: 1`` or has no broker pool for the
  infrastructure is an error (nothing is decided on what cannot be read);
* **stale** plans are refused whole: made more than ``plan_max_age``
  seconds ago, data with ``valid_window_ratio`` under
  ``min_valid_window_ratio``, or planned for another pool than the live one
  (its ``brokers_before`` / ``routers_before`` differ from the live hosts);
* **cooldown**: nothing is done within ``cooldown`` seconds of the last
  change in the history;
* **scale out before scale in**, never both in one run: hosts to add come
  from the spares, in their order (Ansible creates no machines; a plan's new
  ``<infra>-broker-N`` is only a count); while anything is added, drains and
  moves wait for a later run;
* at most ``max_hosts_changed`` hosts added or drained per run, and never
  under the floor ``min_brokers`` / ``min_routers``;
* queue moves: not those off a broker being drained (the drain moves them),
  at most ``max_moves`` and ``max_bytes_moved`` per run, in the plan's order;
* ``mode: report`` decides the same and acts on nothing (``act`` false).

Every step not taken is in ``refused`` as {step, guardrail, why}, so that
the operator reads why the loop did not act. Pure Python: the module, the
roles and tests use it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from datetime import datetime

from .names import fmt as _fmt
from .schema import INFRA_SPACE

GUARDRAILS = {
    "mode": "report",              # report: decide and say; apply: act
    "max_hosts_changed": 1,        # hosts added or drained per run
    "max_moves": 20,               # queue (partition) moves per run
    "max_bytes_moved": None,       # bytes moved per run (None: no limit)
    "cooldown": 3600,              # seconds since the last change
    "min_brokers": 2,              # the floor of the pool
    "min_routers": 2,
    "plan_max_age": 7200,          # seconds since the plan was made
    "min_valid_window_ratio": 0.9,  # data quality the plan must rest on
}
_INTS = ("max_hosts_changed", "max_moves", "cooldown", "min_brokers", "min_routers", "plan_max_age")


def guardrail_errors(guardrails, field="guardrails"):
    """Every reason ``guardrails`` (a partial mapping over GUARDRAILS) is
    unusable, each naming the field, the value and the rule."""
    if not isinstance(guardrails, dict):
        return ["%s: %s must be a mapping" % (field, _fmt(guardrails))]
    errs = ["%s.%s: unknown guardrail (known: %s)" % (field, k, ", ".join(sorted(GUARDRAILS)))
            for k in sorted(guardrails) if k not in GUARDRAILS]
    g = dict(GUARDRAILS, **guardrails)
    if g["mode"] not in ("report", "apply"):
        errs.append("%s.mode: %s must be 'report' or 'apply'" % (field, _fmt(g["mode"])))
    for key in _INTS:
        v = g[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            errs.append("%s.%s: %s must be an integer >= 0" % (field, key, _fmt(v)))
    v = g["max_bytes_moved"]
    if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
        errs.append("%s.max_bytes_moved: %s must be an integer >= 0 or null (no limit)" % (field, _fmt(v)))
    v = g["min_valid_window_ratio"]
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 1:
        errs.append("%s.min_valid_window_ratio: %s must be a number from 0 to 1" % (field, _fmt(v)))
    return errs


def _epoch(iso):
    """Seconds since the epoch of an ISO 8601 time with an offset ('Z' too)."""
    text = iso[:-1] + "+00:00" if iso.endswith("Z") else iso
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError("no UTC offset")
    return when.timestamp()


def _pools(plan, infra):
    """(broker pool, router pool or None) of the infrastructure's standard
    pool in the plan; raises ValueError naming what is missing."""
    if not isinstance(plan, dict) or plan.get("schema_version") != 1:
        raise ValueError("plan: schema_version %s is not 1 (a capacity_job plan, docs/capacity-planning.md)"
                         % _fmt(plan.get("schema_version") if isinstance(plan, dict) else plan))
    for entry in plan.get("infrastructures") or []:
        if entry.get("infra") != infra:
            continue
        brokers = [p for p in entry.get("broker_pools") or [] if p.get("pool") == INFRA_SPACE]
        routers = [p for p in entry.get("router_pools") or [] if p.get("pool") == INFRA_SPACE]
        if brokers:
            return brokers[0], (routers[0] if routers else None)
    raise ValueError("plan: no standard broker pool (%s) for infrastructure %s"
                     % (_fmt(INFRA_SPACE), _fmt(infra)))


def _stale(plan, brokers, routers, live, now, g):
    why = []
    try:
        age = now - _epoch(plan.get("generated_at") or "")
    except ValueError:
        why.append(("plan-age", "generated_at %s is not an ISO 8601 time with an offset"
                    % _fmt(plan.get("generated_at"))))
    else:
        if age > g["plan_max_age"]:
            why.append(("plan-age", "the plan was made %d min ago (> %d min)"
                        % (age // 60, g["plan_max_age"] // 60)))
    ratio = ((plan.get("data_quality") or {}).get("valid_window_ratio"))
    if not isinstance(ratio, (int, float)) or ratio < g["min_valid_window_ratio"]:
        why.append(("data-quality", "valid_window_ratio %s < %s"
                    % (_fmt(ratio), _fmt(g["min_valid_window_ratio"]))))
    for kind, pool in (("brokers", brokers), ("routers", routers)):
        if pool is None:
            continue
        planned, now_live = sorted(pool.get(kind + "_before") or []), sorted(live.get(kind) or [])
        if planned != now_live:
            why.append(("pool-changed", "planned for %s %s, the pool is %s" % (kind, _fmt(planned), _fmt(now_live))))
    return why


def _cooldown(history, now, g):
    changes = [h.get("time") for h in history or [] if h.get("changed") and isinstance(h.get("time"), (int, float))]
    if changes and now - max(changes) < g["cooldown"]:
        return "last change %d min ago (< %d min)" % ((now - max(changes)) // 60, g["cooldown"] // 60)
    return None


def _kind_steps(kind, before, after, live, spares, floor):
    """(hosts to add from spares, short of spares, hosts to drain, under the
    floor) for one kind of host."""
    want_add = max(0, len(after) - len(before))
    free = [h for h in spares or [] if h not in live]
    add = free[:want_add]
    short = want_add - len(add)
    drain = [h for h in before if h not in after and h in live]
    keep = len(live) - len(drain)
    under = []
    while drain and keep < floor:
        under.append(drain.pop())
        keep += 1
    return add, short, drain, under


def change_set(plan, infra, live, spares=None, history=None, now=None, guardrails=None):
    """The change set for ``infra``'s standard pool. ``live``/``spares``:
    {"brokers": [host], "routers": [host]}; ``history``: [{time, changed}];
    ``now``: epoch seconds. Returns {act, add, drain, moves, refused}."""
    errs = guardrail_errors(guardrails or {})
    if errs:
        raise ValueError("; ".join(errs))
    g = dict(GUARDRAILS, **(guardrails or {}))
    now = time.time() if now is None else now
    bpool, rpool = _pools(plan, infra)
    spares = spares or {}
    out = {"act": g["mode"] == "apply", "add": {"brokers": [], "routers": []},
           "drain": {"brokers": [], "routers": []}, "moves": [], "refused": []}

    def refuse(step, guardrail, why):
        out["refused"].append({"step": step, "guardrail": guardrail, "why": why})

    stale = _stale(plan, bpool, rpool, live, now, g)
    wait = _cooldown(history, now, g)
    if stale or wait:
        for guardrail, why in stale + ([("cooldown", wait)] if wait else []):
            refuse("plan", guardrail, why + "; nothing done")
        out["act"] = False
        return out
    kinds = [("brokers", bpool.get("brokers_before") or [], bpool.get("brokers_after") or [], g["min_brokers"])]
    if rpool is not None:
        kinds.append(("routers", rpool.get("routers_before") or [], rpool.get("routers_after") or [],
                      g["min_routers"]))
    budget = g["max_hosts_changed"]
    pending_drain = []
    for kind, before, after, floor in kinds:
        add, short, drain, under = _kind_steps(kind, before, after, live.get(kind) or [], spares.get(kind), floor)
        for host in add:
            if budget > 0:
                out["add"][kind].append(host)
                budget -= 1
            else:
                refuse("add %s" % host, "max-hosts-changed", "at most %d host(s) per run" % g["max_hosts_changed"])
        if short:
            refuse("add %d %s" % (short, kind), "no-spare-host",
                   "the plan adds %d, the spares of %s have %d free" % (len(add) + short, kind, len(add)))
        for host in under:
            refuse("drain %s" % host, "floor", "the pool would have fewer than %d %s" % (floor, kind))
        pending_drain.extend((kind, host) for host in drain)
    adding = any(out["add"].values())
    for kind, host in pending_drain:
        if adding:
            refuse("drain %s" % host, "scale-out-first", "hosts are added in this run; drains wait for the next")
        elif budget > 0:
            out["drain"][kind].append(host)
            budget -= 1
        else:
            refuse("drain %s" % host, "max-hosts-changed", "at most %d host(s) per run" % g["max_hosts_changed"])
    _moves(bpool.get("moves") or [], live.get("brokers") or [], adding, g, out, refuse)
    return out


def _moves(moves, pool, adding, g, out, refuse):
    draining = set(out["drain"]["brokers"])
    moved_bytes = 0
    for mv in moves:
        step = "move %s/%s#%s %s -> %s" % (mv.get("address_space"), mv.get("address"), mv.get("partition"),
                                           mv.get("from"), mv.get("to"))
        if mv.get("from") in draining:
            continue  # the drain takes it off
        if adding:
            refuse(step, "scale-out-first", "hosts are added in this run; moves wait for the next")
        elif mv.get("from") not in pool or mv.get("to") not in pool or mv.get("to") in draining:
            refuse(step, "not-in-pool", "both brokers must be in the pool and not draining (a new broker is "
                   "named by the next plan, made after it joined)")
        elif len(out["moves"]) >= g["max_moves"]:
            refuse(step, "max-moves", "at most %d move(s) per run" % g["max_moves"])
        elif g["max_bytes_moved"] is not None and moved_bytes + (mv.get("bytes") or 0) > g["max_bytes_moved"]:
            refuse(step, "max-bytes-moved", "%d bytes would pass the limit of %d per run"
                   % (moved_bytes + (mv.get("bytes") or 0), g["max_bytes_moved"]))
        else:
            out["moves"].append(mv)
            moved_bytes += mv.get("bytes") or 0


def scale_in_errors(host, brokers, states=None, min_brokers=None, brokered=()):
    """Why the broker host ``host`` cannot leave the standard pool now
    (playbooks/scale_in.yml), each naming the field, the value and the rule;
    [] when it can. ``brokers``: the hosts of the group brokers (the pool);
    ``states``: {host: standard_pool_state} (default active); ``min_brokers``:
    the floor (GUARDRAILS, the rule the loop applies); ``brokered``: the
    brokered address spaces placed on ``host`` (they do not move: the
    uninstall would remove them)."""
    floor = GUARDRAILS["min_brokers"] if min_brokers is None else min_brokers
    if not isinstance(floor, int) or isinstance(floor, bool) or floor < 1:
        return ["scale_in_min_brokers: %s must be an integer >= 1 (a pool needs an active broker)" % _fmt(floor)]
    brokers = list(brokers or [])
    if host not in brokers:
        return ["scale_in_broker: %s is not a host of the group brokers (%s)"
                % (_fmt(host), ", ".join(brokers) or "the group is empty")]
    states = states or {}
    live = [b for b in brokers if b == host or states.get(b, "active") == "active"]
    under = _kind_steps("brokers", live, [b for b in live if b != host], live, (), floor)[3]
    errs = []
    if under:
        stay = [b for b in live if b != host]
        errs.append("scale_in_broker: %s: the pool would keep %d active broker(s) (%s), fewer than the floor "
                    "scale_in_min_brokers %d" % (_fmt(host), len(stay), ", ".join(stay) or "none", floor))
    if brokered:
        errs.append("scale_in_broker: %s also runs the brokered address space(s) %s, which do not move: pin them "
                    "to another host (broker_host) first, or the uninstall would remove them"
                    % (_fmt(host), ", ".join(sorted(brokered))))
    return errs
