# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node statistics, capacities, utilisation and goals: the small pure
functions the planner and the pool planner share (no Spark)."""

from __future__ import absolute_import, division, print_function

import datetime as _dt

from . import rules as lib

EPS = 1e-9


def _stat(d, prefix, which):
    return d.get("%s_%s" % (prefix, which))


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2.0


def _capacity_goals(nodes, resources, high, kind):
    """Hard goal per resource: no ``kind`` node above its high threshold,
    before and after the proposal (nodes without utilisation are skipped)."""
    goals = []
    for r in resources:
        bad_b = [n["node"] for n in nodes if n["utilisation_before"] and
                 (n["utilisation_before"].get(r) or 0) > high[r] + EPS]
        bad_a = [n["node"] for n in nodes if n["utilisation_after"] and
                 (n["utilisation_after"].get(r) or 0) > high[r] + EPS]
        goals.append({"goal": "capacity:%s" % r, "kind": "hard", "holds_before": not bad_b,
                      "holds_after": not bad_a, "violations_before": bad_b, "violations_after": bad_a,
                      "detail": "every %s's %s utilisation <= %.0f%%" % (kind, r, 100 * high[r])})
    return goals


def _node_stats(node_windows, node_throughput, cm):
    """Per node: statistic of the window averages of each gauge (node_statistic)."""
    which = cm["node_statistic"]
    by = {}
    for r in node_windows:
        k = (r["infra"], r["node"])
        e = by.setdefault(k, {"infra": r["infra"], "node": r["node"], "node_kind": r["node_kind"],
                              "scopes": set(), "w": {}})
        e["scopes"].add(r["address_space"])
        for g in ("memory_used", "disk_used", "connections", "links"):
            if r.get(g) is not None:
                e["w"].setdefault(g, []).append(r[g])
        for g in ("memory_max", "disk_max"):
            if r.get(g):
                e[g] = max(e.get(g) or 0, r[g])
    thr = {}
    for r in node_throughput:
        thr.setdefault((r["infra"], r["node"]), []).append(r["thr"])
    out = {}
    for k, e in by.items():
        s = {"infra": e["infra"], "node": e["node"], "node_kind": e["node_kind"], "scopes": sorted(e["scopes"]),
             "memory_max": e.get("memory_max"), "disk_max": e.get("disk_max")}
        for g, vals in e["w"].items():
            st = lib.summarize(vals, cm["percentile_method"])
            s[g] = st[which]
            s[g + "_max"] = st["max"]
        out[k] = s
    for k, vals in thr.items():
        st = lib.summarize(vals, cm["percentile_method"])
        e = out.setdefault(k, {"infra": k[0], "node": k[1], "scopes": []})
        e["msg_rate"] = st[cm["rate_statistic"]]
        e["msg_rate_max"] = st["max"]
    return out


def _capacity(kind, res, node_stat, cm):
    spec = cm[kind]["resources"][res]
    if cm[kind].get("prefer_reported_max") and node_stat:
        rep = node_stat.get({"memory": "memory_max", "disk": "disk_max"}.get(res, "_"))
        if rep:
            return float(rep)
    return float(spec["capacity"])


def _util(vals, cap):
    if not vals:
        return None
    return dict((r, (vals[r] / cap[r]) if cap.get(r) else None) for r in vals)


def _natural(s):
    import re
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _new_broker_namer(prefix, existing):
    taken = set(existing)

    def name(i):
        n = i
        while True:
            cand = "%s-broker-%d" % (prefix, n)
            if cand not in taken:
                return cand
            n += 1
    return name


def _iso(t):
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat().replace("+00:00", "Z")
