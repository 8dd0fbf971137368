# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Applying a capacity plan (issue 22, docs/day2-design.md sections 4 and 5):
the plan's proposal for one infrastructure's standard pool, the live pool,
the spare hosts and the guardrails -> the change set the loop may make.

Rules, in the order they are applied:

* a plan that is not ``schema_version: 1`` or has no broker pool for the
  infrastructure is an error (nothing is decided on what cannot be read);
* **stale** plans are refused whole: data ending (``job.end``, else
  ``generated_at``) more than ``plan_max_age`` seconds ago, data with
  ``data_quality.valid_window_ratio`` under
  ``min_valid_window_ratio``, or planned for another pool than the live one
  (its ``brokers_before`` / ``routers_before`` differ from the live hosts);
* **critical alerts** (``alert_refusals``): while Alertmanager reports an
  active, unsilenced, uninhibited alert of a blocking severity (default
  ``critical``), or cannot be read (fail closed), nothing is done;
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

``steps`` orders a change set as a run makes it; ``confirmation`` says
whether the next plan confirms the last change (no change, no move left).

Every step not taken is in ``refused`` as {step, guardrail, why}, so that
the operator reads why the loop did not act. Pure Python: the module, the
roles and tests use it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from datetime import datetime

from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url

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
ALERT_SEVERITIES = ("critical",)
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


def _plan_end(plan):
    """(field, value) of the time the plan's data ends: ``job.end`` (the
    capacity job's window), else ``generated_at`` for a plan without it."""
    job = plan.get("job") if isinstance(plan.get("job"), dict) else {}
    if job.get("end") is not None:
        return "job.end", job.get("end")
    return "generated_at", plan.get("generated_at")


def _stale(plan, brokers, routers, live, now, g):
    why = []
    field, value = _plan_end(plan)
    try:
        age = now - _epoch(value if isinstance(value, str) else "")
    except ValueError:
        why.append(("plan-age", "%s %s is not an ISO 8601 time with an offset, so its age is unknown"
                    % (field, _fmt(value))))
    else:
        if age > g["plan_max_age"]:
            why.append(("plan-age", "%s %s is %d min old: older than plan_max_age %d s (%d min)"
                        % (field, _fmt(value), age // 60, g["plan_max_age"], g["plan_max_age"] // 60)))
    ratio = ((plan.get("data_quality") or {}).get("valid_window_ratio"))
    if not isinstance(ratio, (int, float)) or ratio < g["min_valid_window_ratio"]:
        why.append(("data-quality", "data_quality.valid_window_ratio %s < min_valid_window_ratio %s"
                    % (_fmt(ratio), _fmt(g["min_valid_window_ratio"]))))
    for kind, pool in (("brokers", brokers), ("routers", routers)):
        if pool is None:
            continue
        planned, now_live = sorted(pool.get(kind + "_before") or []), sorted(live.get(kind) or [])
        if planned != now_live:
            why.append(("pool-changed", "%s_before %s differs from the live pool's %s %s: the plan was made for "
                        "another pool" % (kind, _fmt(planned), kind, _fmt(now_live))))
    return why


def _cooldown(history, now, g):
    changes = [h.get("time") for h in history or [] if h.get("changed") and isinstance(h.get("time"), (int, float))]
    if changes and now - max(changes) < g["cooldown"]:
        return "last change %d min ago (< %d min): cooldown %d s since the last change in the history" % (
            (now - max(changes)) // 60, g["cooldown"] // 60, g["cooldown"])
    return None


def _alert_name(alert):
    labels = alert.get("labels") if isinstance(alert.get("labels"), dict) else {}
    return "%s on %s" % (labels.get("alertname", "?"), labels.get("instance", "?"))


def _blocks(alert, severities):
    """Whether ``alert`` (an Alertmanager API v2 alert) fires with a blocking
    severity: not suppressed (silenced or inhibited; an ``unprocessed`` one,
    just received, blocks) and its label severity one of ``severities``."""
    if not isinstance(alert, dict) or not isinstance(alert.get("labels"), dict):
        return False
    status = alert.get("status") if isinstance(alert.get("status"), dict) else {}
    if status.get("state") == "suppressed" or status.get("silencedBy") or status.get("inhibitedBy"):
        return False
    return alert["labels"].get("severity") in severities


def alert_refusals(alerts, url, severities=ALERT_SEVERITIES, error=None):
    """The (guardrail, why) refusals of the whole plan from Alertmanager's
    firing alerts (its API v2 ``/api/v2/alerts`` answer, a list), read at
    ``url``: [] when none of ``severities`` fires. ``error``: why the read
    failed (None when it did not): Alertmanager unreachable refuses too
    (fail closed). Each refusal names the URL and every blocking alert
    (alertname and instance)."""
    where = redact_url(url)
    if error is not None:
        return [("alertmanager-unreachable", "Alertmanager %s could not be read (%s): the firing alerts are unknown, "
                 "so nothing is done (fail closed)" % (where, error))]
    if not isinstance(alerts, list):
        return [("alertmanager-unreachable", "Alertmanager %s answered %s, not a list of alerts (API v2): the firing "
                 "alerts are unknown, so nothing is done (fail closed)" % (where, _fmt(alerts)))]
    firing = sorted(set(_alert_name(a) for a in alerts if _blocks(a, severities)))
    if not firing:
        return []
    return [("critical-alert", "%d alert(s) of severity %s firing in Alertmanager %s: %s; nothing is changed while "
             "they fire" % (len(firing), "/".join(severities), where, ", ".join(firing)))]


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


def _new_names(before, after):
    """The hosts the plan adds (``<infra>-broker-N``: names only, a count)."""
    return [h for h in after if h not in before]


def change_set(plan, infra, live, spares=None, history=None, now=None, guardrails=None, homes=None, blocked=()):
    """The change set for ``infra``'s standard pool. ``live``/``spares``:
    {"brokers": [host], "routers": [host]}; ``history``: [{time, changed}];
    ``now``: epoch seconds; ``homes``: {"space/address": [broker per
    partition]} of the live pool (the ledgers), when known: a move whose
    partition is not on its ``from`` any more is refused; ``blocked``: the
    (guardrail, why) of ``alert_refusals``, which refuse the plan whole.
    Returns {act, add,
    add_for, drain, moves, refused}; ``add_for``: {spare host: the plan's new
    name it stands for}."""
    errs = guardrail_errors(guardrails or {})
    if errs:
        raise ValueError("; ".join(errs))
    g = dict(GUARDRAILS, **(guardrails or {}))
    now = time.time() if now is None else now
    bpool, rpool = _pools(plan, infra)
    spares = spares or {}
    out = {"act": g["mode"] == "apply", "add": {"brokers": [], "routers": []}, "add_for": {},
           "drain": {"brokers": [], "routers": []}, "moves": [], "refused": []}

    def refuse(step, guardrail, why):
        out["refused"].append({"step": step, "guardrail": guardrail, "why": why})

    stale = _stale(plan, bpool, rpool, live, now, g)
    wait = _cooldown(history, now, g)
    if stale or wait or blocked:
        for guardrail, why in stale + list(blocked) + ([("cooldown", wait)] if wait else []):
            refuse("plan", guardrail, why + "; nothing done")
        out["act"] = False
        return out
    kinds = [("brokers", bpool.get("brokers_before") or [], bpool.get("brokers_after") or [], g["min_brokers"])]
    if rpool is not None:
        kinds.append(("routers", rpool.get("routers_before") or [], rpool.get("routers_after") or [],
                      g["min_routers"]))
    budget = [g["max_hosts_changed"]]
    pending_drain = []
    for kind, before, after, floor in kinds:
        pending_drain.extend(_hosts(kind, before, after, live, spares, floor, g, budget, out, refuse))
    adding = any(out["add"].values())
    for kind, host in pending_drain:
        if adding:
            refuse("drain %s" % host, "scale-out-first", "%s are added in this run (%s): never scale out and in "
                   "in one run; the drain waits for the next run" % (
                       ", ".join(k for k in out["add"] if out["add"][k]),
                       ", ".join(h for k in out["add"] for h in out["add"][k])))
        elif budget[0] > 0:
            out["drain"][kind].append(host)
            budget[0] -= 1
        else:
            refuse("drain %s" % host, "max-hosts-changed", _budget_why(g))
    _moves(bpool.get("moves") or [], live.get("brokers") or [], adding, g, out, refuse, homes)
    return out


def _budget_why(g):
    return "max_hosts_changed %d reached: at most %d host(s) added or drained per run" % (
        g["max_hosts_changed"], g["max_hosts_changed"])


def _hosts(kind, before, after, live, spares, floor, g, budget, out, refuse):
    """Adds (within the budget, from the spares) and floor refusals for one
    kind of host; returns the (kind, host) drains still to decide on."""
    add, short, drain, under = _kind_steps(kind, before, after, live.get(kind) or [], spares.get(kind), floor)
    new = _new_names(before, after)
    for i, host in enumerate(add):
        if budget[0] > 0:
            out["add"][kind].append(host)
            if i < len(new):
                out["add_for"][host] = new[i]
            budget[0] -= 1
        else:
            refuse("add %s" % host, "max-hosts-changed", _budget_why(g))
    if short:
        spare_group = "brokers_spare" if kind == "brokers" else "routers_spare"
        refuse("add %d %s" % (short, kind), "no-spare-host",
               "%s_after has %d %s, %s_before %d: %d to add, the group %s has %d free host(s) (%s); Ansible "
               "creates no machines: add hosts to %s" % (
                   kind, len(after), kind, kind, len(before), len(add) + short, spare_group, len(add),
                   ", ".join(add) or "none", spare_group))
    for host in under:
        refuse("drain %s" % host, "floor", "draining %s would leave fewer than min_%s %d %s in the pool "
               "(%s_after has %d)" % (_fmt(host), kind, floor, kind, kind, len(after)))
    return [(kind, host) for host in drain]


def _move_step(mv):
    return "move %s/%s#%s %s -> %s" % (mv.get("address_space"), mv.get("address"), mv.get("partition"),
                                       mv.get("from"), mv.get("to"))


def _where(homes, mv):
    """The broker partition ``mv`` lives on now, per ``homes`` (None: unknown)."""
    if homes is None:
        return None
    brokers = homes.get("%s/%s" % (mv.get("address_space"), mv.get("address")))
    part = mv.get("partition")
    return brokers[part] if isinstance(brokers, list) and isinstance(part, int) and 0 <= part < len(brokers) \
        else "nowhere"


def _moves(moves, pool, adding, g, out, refuse, homes=None):
    draining = set(out["drain"]["brokers"])
    moved_bytes = 0
    for mv in moves:
        step = _move_step(mv)
        if mv.get("from") in draining:
            continue  # the drain takes it off
        if mv.get("from") is None or mv.get("to") is None or not isinstance(mv.get("partition"), int):
            refuse(step, "not-a-move", "from %s, to %s, partition %s: only a partition moving from one broker to "
                   "another is a move (a new or removed partition is placement's)"
                   % (_fmt(mv.get("from")), _fmt(mv.get("to")), _fmt(mv.get("partition"))))
        elif adding:
            refuse(step, "scale-out-first", "hosts are added in this run; never scale out and move in one run: "
                   "moves wait for the next run (and its plan)")
        elif mv.get("from") not in pool or mv.get("to") not in pool or mv.get("to") in draining:
            bad = [k for k in ("from", "to") if mv.get(k) not in pool or (k == "to" and mv.get(k) in draining)]
            refuse(step, "not-in-pool", "%s: both brokers must be in the live pool %s and not draining (a new "
                   "broker is named by the next plan, made after it joined)"
                   % (", ".join("%s %s" % (k, _fmt(mv.get(k))) for k in bad), _fmt(sorted(pool))))
        elif _where(homes, mv) not in (None, mv.get("from")):
            where = (_fmt(mv.get("from")), _fmt(_where(homes, mv)), _fmt(mv.get("address_space")))
            refuse(step, "moved-since-plan", "from %s: the partition lives on %s now (the ledger of %s): the plan "
                   "is older than the pool" % where)
        elif len(out["moves"]) >= g["max_moves"]:
            refuse(step, "max-moves", "max_moves %d reached: at most %d move(s) per run" % (g["max_moves"], g["max_moves"]))
        elif g["max_bytes_moved"] is not None and moved_bytes + (mv.get("bytes") or 0) > g["max_bytes_moved"]:
            refuse(step, "max-bytes-moved", "bytes %d would make %d bytes moved in this run: over max_bytes_moved %d"
                   % (mv.get("bytes") or 0, moved_bytes + (mv.get("bytes") or 0), g["max_bytes_moved"]))
        else:
            out["moves"].append(mv)
            moved_bytes += mv.get("bytes") or 0


def steps(decision):
    """The steps of a change set in the order a run makes them: hosts added
    (scale out), or moves then drains (never both: change_set refuses)."""
    out = [{"action": "add", "kind": kind, "host": h, "for": decision.get("add_for", {}).get(h)}
           for kind in ("brokers", "routers") for h in decision["add"][kind]]
    out += [{"action": "move", "address_space": m.get("address_space"), "address": m.get("address"),
             "partition": m.get("partition"), "from": m.get("from"), "to": m.get("to"), "bytes": m.get("bytes")}
            for m in decision["moves"]]
    out += [{"action": "drain", "kind": kind, "host": h} for kind in ("brokers", "routers")
            for h in decision["drain"][kind]]
    return out


def confirmation(plan, infra, history):
    """Whether the plan, made after the last change in ``history``, confirms
    it: its standard pool needs no change and no move. None when there is no
    change before this plan to confirm. {of, converged, why}."""
    changes = [h for h in history or [] if h.get("changed") and isinstance(h.get("time"), (int, float))]
    if not changes:
        return None
    last = max(changes, key=lambda h: h["time"])
    try:
        end = _epoch(_plan_end(plan)[1] or "")
        bpool, rpool = _pools(plan, infra)
    except (ValueError, TypeError, AttributeError):
        return None
    if end <= last["time"]:
        return None  # the plan's data ends before the change: it cannot confirm it
    left = []
    if list(bpool.get("brokers_after") or []) != list(bpool.get("brokers_before") or []):
        left.append("brokers_before %s -> brokers_after %s"
                    % (_fmt(bpool.get("brokers_before")), _fmt(bpool.get("brokers_after"))))
    if rpool is not None and list(rpool.get("routers_after") or []) != list(rpool.get("routers_before") or []):
        left.append("routers_before %s -> routers_after %s"
                    % (_fmt(rpool.get("routers_before")), _fmt(rpool.get("routers_after"))))
    if bpool.get("moves"):
        left.append("%d move(s)" % len(bpool["moves"]))
    return {"of": last["time"], "converged": not left,
            "why": "the next plan still proposes %s: not converged" % "; ".join(left) if left
            else "the next plan proposes no change: converged"}


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
