# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity planner: aggregated metrics + model -> the plan (pure Python).

``Planner(agg, spaces, catalogue, current_placement, cm, warnings).run()``
takes what ``aggregate.aggregate`` collected (or the same dicts built by hand:
tests/unit/test_capacity_planner.py) and the model read by ``read.load_model``,
and returns the plan document (docs/capacity-planning.md): data quality, the
capacity model in force, per infrastructure the broker and router pools
(``pools.PoolPlanner``), the address spaces and the forecast. No Spark, no
I/O: it imports the collection's placement and validation rules only.
"""

from __future__ import absolute_import, division, print_function

import datetime as _dt
import json
import math

from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement, validation
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import INFRA_SPACE as SHARED

from . import rules as lib
from .measures import _iso, _natural, _node_stats, _stat
from .pools import PoolPlanner

SCHEMA_VERSION = 1


class Planner(PoolPlanner):
    """Turns the aggregated metrics and the model into the plan (pure Python)."""

    def __init__(self, agg, spaces, catalogue, current_placement, cm, warnings=None):
        self.agg = agg
        self.spaces = spaces
        self.catalogue = catalogue
        self.current_placement = current_placement
        self.cm = cm
        self.warnings = list(warnings or [])
        self.t_min = agg["totals"]["t_min"]
        self.t_max = agg["totals"]["t_max"]
        self.node_stats = _node_stats(agg.get("node_windows") or [], agg.get("node_throughput") or [], cm)
        self.addr_kind = dict(((r["infra"], r["address_space"], r["address"], r["node_kind"]), r)
                              for r in agg["address_kind"])
        self.addr_node = {}
        for r in agg["address_node"]:
            self.addr_node.setdefault((r["infra"], r["address_space"], r["address"]), []).append(r)
        self.auth = agg.get("authoritative") or {}
        self.msg_size = self._observed_message_size()

    # -------------------------------------------------------------- helpers
    def _observed_message_size(self):
        size = depth = 0
        for rows in self.addr_node.values():
            for r in rows:
                if r["node_kind"] == "broker" and r.get("depth_last") and r.get("size_last"):
                    size += r["size_last"]
                    depth += r["depth_last"]
        return (size / depth) if depth else float(self.cm["message_size_bytes"])

    def address_load(self, infra, space, address):
        """Observed load of one address, measured where it lives."""
        key = (infra, space, address)
        kind = self.auth.get(key)
        rows = [r for r in self.addr_node.get(key, []) if kind is None or r["node_kind"] == kind]
        if kind is None:
            return None
        k = self.addr_kind.get(key + (kind,), {})
        window = float(self.cm["window_seconds"])
        n_exp = int(math.floor(self.t_max / window) - math.floor(self.t_min / window) + 1)
        ws = k.get("windows_valid") or 0
        bnodes = [r for r in self.addr_node.get(key, []) if r["node_kind"] == "broker"]
        recent = self.t_max - 2 * window
        return {
            "measured_on": kind,
            "ingress": dict((s, _stat(k, "in", s)) for s in lib.STATISTICS),
            "egress": dict((s, _stat(k, "out", s)) for s in lib.STATISTICS),
            "throughput": dict((s, _stat(k, "thr", s)) for s in lib.STATISTICS),
            "windows": k.get("windows") or 0, "windows_valid": ws,
            "coverage": (ws / n_exp) if n_exp else None,
            "depth_latest": sum((r.get("depth_last") or 0) for r in bnodes) if bnodes else None,
            "depth_max": sum((r.get("depth_max") or 0) for r in bnodes) if bnodes else None,
            "size_latest": sum((r.get("size_last") or 0) for r in bnodes) if bnodes else None,
            "size_max": sum((r.get("size_max") or 0) for r in bnodes) if bnodes else None,
            "consumers_latest": sum((r.get("consumers_last") or 0) for r in rows),
            "resets": sum(r.get("resets") or 0 for r in rows),
            "plan_observed": max(rows, key=lambda r: r["t_last"])["plan"] if rows else None,
            "brokers_observed": sorted(r["node"] for r in bnodes if r["t_last"] >= recent),
        }

    # ------------------------------------------------------------------ run
    def run(self):
        spaces_by_infra = {}
        for sp in self.spaces:
            spaces_by_infra.setdefault(sp["infra"], []).append(sp)
        infras_in_metrics = set(k[0] for k in self.addr_node)
        for infra in sorted(infras_in_metrics - set(spaces_by_infra)):
            self.warnings.append("infrastructure %r has metrics but no address spaces in the model; ignored" % infra)
        modelled = set((sp["infra"], sp["name"], a["address"]) for sp in self.spaces for a in sp["addresses"])
        unmodelled = sorted("%s/%s/%s" % k for k in self.addr_node if k not in modelled)
        without = sorted("%s/%s/%s" % k for k in modelled if k not in self.addr_node)
        infras = []
        for infra in sorted(spaces_by_infra):
            infras.append(self.plan_infra(infra, spaces_by_infra[infra]))
        dq = self.data_quality(unmodelled, without)
        return {
            "schema_version": SCHEMA_VERSION,
            "generated_at": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            "data_quality": dq,
            "capacity_model": self.capacity_model_doc(),
            "infrastructures": infras,
            "summary": self.summary(infras),
            "warnings": self.warnings,
        }

    def capacity_model_doc(self):
        doc = json.loads(json.dumps(self.cm))
        doc["observed_message_size_bytes"] = self.msg_size
        doc["sizing_rules"] = {
            "router_memory": "base_bytes + per_anycast_address_bytes x anycast/multicast addresses + "
                             "per_queue_topic_address_bytes x stored addresses + links x link_capacity x "
                             "message size + per_connection_bytes x connections",
            "broker_disk": "stored message bytes x (1 + disk_overhead) + disk_base_bytes",
            "broker_memory": "node baseline + peak stored bytes of the addresses it holds",
        }
        return doc

    def data_quality(self, unmodelled, without):
        W = float(self.cm["window_seconds"])
        n_exp = int(math.floor(self.t_max / W) - math.floor(self.t_min / W) + 1)
        series = self.agg["address_node"]
        tot = sum(r["windows"] for r in series)
        val = sum(r["windows_valid"] or 0 for r in series)
        per_space = {}
        for r in series:
            e = per_space.setdefault(r["address_space"], {"series": 0, "windows": 0, "windows_valid": 0})
            e["series"] += 1
            e["windows"] += r["windows"]
            e["windows_valid"] += r["windows_valid"] or 0
        for e in per_space.values():
            e["valid_window_ratio"] = e["windows_valid"] / e["windows"] if e["windows"] else None
            e["coverage"] = e["windows_valid"] / (e["series"] * n_exp) if n_exp else None
        low_cov = sorted(("%s/%s@%s" % (r["address_space"], r["address"], r["node"]),
                          (r["windows_valid"] or 0) / n_exp) for r in series
                         if n_exp and (r["windows_valid"] or 0) / n_exp < 0.9)
        return {
            "time_range": {"start": _iso(self.t_min), "end": _iso(self.t_max),
                           "days": (self.t_max - self.t_min) / 86400.0},
            "window_seconds": int(W) if W == int(W) else W,
            "windows_expected_per_series": n_exp,
            "series": len(series),
            "windows": tot, "windows_valid": val,
            "valid_window_ratio": (val / tot) if tot else None,
            "coverage": (val / (len(series) * n_exp)) if series and n_exp else None,
            "samples": {"addresses": self.agg["totals"]["address_rows"],
                        "nodes": self.agg["totals"].get("node_rows", 0)},
            "counter_resets": sum(r.get("resets") or 0 for r in series),
            "gaps": sum(r.get("gaps") or 0 for r in series),
            "duplicate_samples": sum(r.get("dups") or 0 for r in series),
            "node_restarts": [{"infra": i, "node": n, "time": _iso(t)} for i, n, t in sorted(self.agg["restarts"])],
            "per_address_space": per_space,
            "low_coverage_series": [{"series": s, "coverage": c} for s, c in low_cov[:50]],
            "unmodelled_addresses": unmodelled,
            "addresses_without_metrics": without,
            "percentile_method": self.cm["percentile_method"],
            "timings_seconds": dict((k, round(v, 3)) for k, v in (self.agg.get("timings") or {}).items()),
        }

    # ---------------------------------------------------------- one infra
    def plan_infra(self, infra, spaces):
        broker_spaces, router_spaces = self._node_spaces(infra, spaces)
        broker_pools = _pools_of(broker_spaces)
        router_pools = _pools_of(router_spaces)
        space_broker_pool, space_router_pool = _space_pools(spaces, broker_pools, router_pools)
        space_items, addr_docs = self._address_items(infra, spaces)
        pending, credit_need = _quotas(spaces, space_items, broker_pools, space_broker_pool)

        # broker pools
        pool_docs = []
        space_pool_verdict = {}
        for pool in sorted(broker_pools, key=lambda p: (p == SHARED, p)):
            members = [sp for sp in spaces if space_broker_pool[sp["name"]] == pool]
            if not members:
                continue
            doc = self.plan_broker_pool(infra, pool, list(broker_pools[pool]), members, space_items,
                                        addr_docs, pending)
            pool_docs.append(doc)
            for sp in members:
                space_pool_verdict[sp["name"]] = doc
        router_docs = []
        space_router_verdict = {}
        for pool in sorted(router_pools, key=lambda p: (p == SHARED, p)):
            members = [sp for sp in spaces if space_router_pool.get(sp["name"]) == pool]
            if not members:
                continue
            doc = self.plan_router_pool(infra, pool, list(router_pools[pool]), members, space_items, pending)
            router_docs.append(doc)
            for sp in members:
                space_router_verdict[sp["name"]] = doc

        space_docs = []
        for sp in spaces:
            space_docs.append(self.space_doc(sp, addr_docs[sp["name"]], pending[sp["name"]],
                                             credit_need[sp["name"]], space_pool_verdict.get(sp["name"]),
                                             space_router_verdict.get(sp["name"])))
        return {
            "infra": infra,
            "verdict": _infra_verdict(pool_docs, router_docs, space_docs),
            "broker_pools": pool_docs,
            "router_pools": router_docs,
            "address_spaces": space_docs,
            "forecast": self.forecast_infra(infra, pool_docs, router_docs, spaces),
        }

    def _node_spaces(self, infra, spaces):
        """Which brokers and routers serve which spaces: {node: {space}} for
        brokers and for routers (from the samples, the node scopes and the
        current placement)."""
        broker_spaces, router_spaces = {}, {}
        for (i, space, address), rows in self.addr_node.items():
            if i != infra:
                continue
            for r in rows:
                (broker_spaces if r["node_kind"] == "broker" else router_spaces).setdefault(r["node"], set()).add(space)
        for (i, node), s in self.node_stats.items():
            if i != infra:
                continue
            target = broker_spaces if s.get("node_kind") == "broker" else router_spaces
            for scope in s.get("scopes") or []:
                target.setdefault(node, set()).add(scope)
        for (space, _unused), brokers in self.current_placement.items():
            if any(sp["name"] == space for sp in spaces):
                for b in brokers:
                    broker_spaces.setdefault(b, set()).add(space)
        return broker_spaces, router_spaces

    def _address_items(self, infra, spaces):
        """Per space: the placement items (addresses with their plan credits
        and current placement) and the address documents with their load."""
        space_items = {}
        addr_docs = {}
        for sp in spaces:
            splan = self.catalogue.address_space_plan(sp["plan"])
            cur_pl, cur_plan = {}, {}
            docs = []
            for a in sp["addresses"]:
                load = self.address_load(infra, sp["name"], a["address"])
                ap = self.catalogue.address_plan(a["plan"])
                before = self.current_placement.get((sp["name"], a["address"]))
                source = "model" if before is not None else "metrics"
                if before is None and load:
                    before = load["brokers_observed"]
                if a["type"] in lib.ROUTER_ONLY_TYPES:
                    before = []
                cur_pl[a["address"]] = before or []
                if load and load.get("plan_observed") and load["plan_observed"] != a["plan"]:
                    cur_plan[a["address"]] = load["plan_observed"]
                doc = {"address": a["address"], "type": a["type"], "plan": a["plan"],
                       "credits": {"router": (ap.get("resources") or {}).get("router", 0.0),
                                   "broker": (ap.get("resources") or {}).get("broker", 0.0)},
                       "partitions_plan": ap.get("partitions", 1),
                       "brokers_before": before or [], "placement_source": source if before else None,
                       "plan_observed": (load or {}).get("plan_observed"),
                       "load": load, "class": self.classify(load)}
                docs.append(doc)
            items = validation.placement_items(sp["addresses"], self.catalogue, cur_pl, cur_plan)
            space_items[sp["name"]] = items
            addr_docs[sp["name"]] = dict((d["address"], d) for d in docs)
            sp["_plan"] = splan
        return space_items, addr_docs

    def classify(self, load):
        if not load:
            return "no-metrics"
        thr = load["throughput"]
        if (thr.get("max") or 0) == 0 and (load["ingress"].get("max") or 0) == 0:
            return "idle"
        cap = self.cm["broker"]["resources"]["msg_rate"]["capacity"]
        if (thr.get(self.cm["rate_statistic"]) or 0) >= self.cm["hot_address_share"] * cap:
            return "hot"
        return "normal"

    def space_doc(self, sp, addr_docs, pending, credit, bpool, rpool):
        pend = [{"address": a, "reason": why} for a, why in pending.items()]
        for p in pend:
            addr_docs[p["address"]]["pending"] = p["reason"]
        vb = dict(bpool["verdict"]) if bpool else None
        vr = dict(rpool["verdict"]) if rpool else None
        if bpool and bpool["shared"]:
            others = [x for x in bpool["address_spaces"] if x != sp["name"]]
            vb["note"] = ("infrastructure brokers, shared with %s" % ", ".join(others)) if others else \
                "infrastructure brokers (no other address space uses them)"
        if rpool and rpool["shared"]:
            others = [x for x in rpool["address_spaces"] if x != sp["name"]]
            vr["note"] = ("infrastructure routers, shared with %s" % ", ".join(others)) if others else \
                "infrastructure routers (no other address space uses them)"
        verdicts = [vb["verdict"] if vb else None, vr["verdict"] if (vr and not rpool["shared"]) else None]
        binding = vb.get("binding_resource") if vb else None
        if pend:
            verdicts.append(lib.UNDER)
            binding = "quota"
        overall = lib.combine_verdicts(verdicts)
        moves = [m for m in (bpool or {}).get("moves", []) if m["address_space"] == sp["name"]]
        addresses = sorted(addr_docs.values(), key=lambda d: d["address"])
        return {
            "name": sp["name"], "type": sp["type"], "plan": sp["plan"],
            "verdict": {"verdict": overall, "binding_resource": binding,
                        "brokers": vb, "routers": vr,
                        "quota": {"pending": len(pend), "credits_used": credit["totals"],
                                  "limits": credit["limits"],
                                  "note": ("%d address(es) exceed address space plan %s's limits: choose a "
                                           "bigger address space plan" % (len(pend), sp["plan"])) if pend else None}},
            "broker_pool": bpool["pool"] if bpool else None,
            "router_pool": rpool["pool"] if rpool else None,
            "credits": {"brokers_needed": credit["brokers"], "routers_needed": credit["routers"],
                        "totals": credit["totals"]},
            "pending": pend, "moves": moves, "data_to_move_bytes": sum(m["bytes"] for m in moves),
            "addresses": addresses,
            "hot": [d["address"] for d in addresses if d["class"] == "hot"],
            "idle": [d["address"] for d in addresses if d["class"] == "idle"],
        }

    # ------------------------------------------------------- forecast
    def forecast_infra(self, infra, pool_docs, router_docs, spaces):
        thr = {}
        for r in self.agg.get("node_throughput") or []:
            if r["infra"] == infra:
                thr.setdefault(r["node"], {})[r["ws"]] = r["thr"]
        gauges = {}
        for r in self.agg.get("node_windows") or []:
            if r["infra"] == infra:
                gauges.setdefault(r["node"], {})[r["ws"]] = r
        first_day = _dt.datetime.fromtimestamp(self.t_min, _dt.timezone.utc).date()
        last_day = (_dt.datetime.fromtimestamp(self.t_max, _dt.timezone.utc).date() - first_day).days
        out = []
        for docs, kind, before, resources in ((pool_docs, "broker", "brokers_before", lib.BROKER_RESOURCES),
                                              (router_docs, "router", "routers_before", lib.ROUTER_RESOURCES)):
            for p in docs:
                nodes = p[before]
                for res in resources:
                    cap = sum(n["capacity"][res] for n in p["nodes"] if not n["new"])
                    out.append(self._resource_forecast("%ss:%s" % (kind, p["pool"]), kind, res, nodes,
                                                       _node_series(nodes, res, thr, gauges), cap,
                                                       p["thresholds"]["high"][res], first_day, last_day))
        return out + self._traffic_forecasts(infra, spaces, first_day)

    def _resource_forecast(self, scope, kind, res, nodes, series, capacity, high, first_day, last_day):
        """The forecast entry of one resource of a pool: daily peaks of the
        summed ``series`` and when their trend crosses the threshold and the
        capacity."""
        fc = self.cm["forecast"]
        peaks = lib.daily_peaks(sorted(series.items()))
        full = list(peaks)
        entry = {"scope": scope, "node_kind": kind, "resource": res, "nodes": len(nodes),
                 "capacity": capacity, "threshold": capacity * high,
                 "daily": [{"date": d.isoformat(), "peak": p, "mean": m} for d, p, m in full]}
        if len(full) < max(2, int(fc.get("min_days", 2))) or not capacity:
            entry["status"] = "insufficient-data"
            return entry
        xs = [(d - first_day).days for d, _unused, _unused in full]
        ys = [p for _unused, p, _unused in full]
        thr_fc = lib.forecast_crossing(xs, ys, capacity * high, first_day, last_day, fc["horizon_days"])
        cap_fc = lib.forecast_crossing(xs, ys, capacity, first_day, last_day, fc["horizon_days"])
        entry.update({"slope_per_day": thr_fc["slope_per_day"], "intercept": thr_fc["intercept"],
                      "r2": thr_fc["r2"], "status": thr_fc["status"], "threshold_date": thr_fc["date"],
                      "days_to_threshold": thr_fc["days_left"], "exhaustion_date": cap_fc["date"],
                      "exhaustion_status": cap_fc["status"], "days_to_exhaustion": cap_fc["days_left"]})
        return entry

    def _traffic_forecasts(self, infra, spaces, first_day):
        """Traffic: ingress of all addresses (daily mean and peak, its trend),
        per infra and per space."""
        W = float(self.cm["window_seconds"])
        out = []
        sw = [r for r in self.agg.get("space_windows") or [] if r["infra"] == infra]
        scopes = [("infra", sw)] + [("space:%s" % sp["name"], [r for r in sw if r["address_space"] == sp["name"]])
                                    for sp in spaces]
        for scope, rows in scopes:
            tot = {}
            for r in rows:
                tot[r["ws"]] = tot.get(r["ws"], 0.0) + (r["r_in"] or 0.0)
            peaks = lib.daily_peaks(sorted(tot.items()))
            # only days with most of their windows
            per_day = {}
            for ws in tot:
                d = _dt.datetime.fromtimestamp(ws, _dt.timezone.utc).date()
                per_day[d] = per_day.get(d, 0) + 1
            full = [(d, p, m) for d, p, m in peaks if per_day.get(d, 0) >= 0.5 * 86400 / W]
            entry = {"scope": scope, "node_kind": None, "resource": "ingress", "daily": [
                {"date": d.isoformat(), "peak": p, "mean": m} for d, p, m in peaks]}
            if len(full) >= 2:
                xs = [(d - first_day).days for d, _unused, _unused in full]
                i_p, s_p, r2_p = lib.linear_fit(xs, [p for _unused, p, _unused in full])
                i_m, s_m, r2_m = lib.linear_fit(xs, [m for _unused, _unused, m in full])
                entry.update({"slope_per_day": s_p, "r2": r2_p, "daily_mean_slope_per_day": s_m,
                              "daily_mean_r2": r2_m, "status": "trend",
                              "relative_growth_per_day": (s_m / i_m) if i_m else None})
            else:
                entry["status"] = "insufficient-data"
            out.append(entry)
        return out

    def summary(self, infras):
        return [{"infra": i["infra"], "verdict": i["verdict"]["verdict"], "brokers": i["verdict"]["brokers"],
                 "routers": i["verdict"]["routers"], "binding_resource": i["verdict"]["binding_resource"],
                 "address_spaces": dict((s["name"], {"verdict": s["verdict"]["verdict"],
                                                     "binding_resource": s["verdict"]["binding_resource"],
                                                     "brokers_change": (s["verdict"]["brokers"] or {}).get("change"),
                                                     "routers_change": (s["verdict"]["routers"] or {}).get("change")})
                                        for s in i["address_spaces"])} for i in infras]


def _pools_of(node_spaces):
    """{pool: [node]} from {node: {space}}: a node serving one named space
    is in that space's pool; the others are in the shared (infrastructure)
    pool. Nodes in natural order."""
    def pool_of(node, mapping):
        sc = mapping.get(node) or set()
        named = sc - {SHARED}
        if SHARED in sc or len(named) > 1:
            return SHARED
        return next(iter(named)) if named else SHARED

    pools = {}
    for n in node_spaces:
        pools.setdefault(pool_of(n, node_spaces), []).append(n)
    for v in pools.values():
        v.sort(key=_natural)
    return pools


def _space_pools(spaces, broker_pools, router_pools):
    """Each space's broker pool and (standard spaces) router pool: its own
    when it has one, else the shared one (an empty pool is added as needed)."""
    space_broker_pool = {}
    for sp in spaces:
        mine = [p for p, bs in broker_pools.items() if p == sp["name"]]
        if mine:
            space_broker_pool[sp["name"]] = sp["name"]
        elif SHARED in broker_pools and sp["type"] == "standard":
            space_broker_pool[sp["name"]] = SHARED
        else:
            space_broker_pool[sp["name"]] = sp["name"]
            broker_pools.setdefault(sp["name"], [])
    space_router_pool = {}
    for sp in spaces:
        if sp["type"] != "standard":
            continue
        if sp["name"] in router_pools:
            space_router_pool[sp["name"]] = sp["name"]
        else:
            space_router_pool[sp["name"]] = SHARED
            router_pools.setdefault(SHARED, [])
    return space_broker_pool, space_router_pool


def _quotas(spaces, space_items, broker_pools, space_broker_pool):
    """The quota per space (the rule as converge applies it): {space:
    {address: why}} pending, and {space: credits needed, totals, limits}."""
    pending = {}
    credit_need = {}
    for sp in spaces:
        limits = (sp["_plan"] or {}).get("resource_limits") or {}
        pool = space_broker_pool[sp["name"]]
        res = placement.place(space_items[sp["name"]], brokers=list(broker_pools.get(pool, [])),
                              limits=limits, capacity=(float("inf") if sp["type"] == "brokered" else 1.0))
        pending[sp["name"]] = dict(res.pending)
        pending[sp["name"]].update(res.refused)  # a plan change over quota is not placed as asked either
        credit_need[sp["name"]] = {"brokers": res.brokers_needed, "routers": res.routers_needed,
                                   "totals": dict(res.totals), "limits": limits}
    return pending, credit_need


def _infra_verdict(pool_docs, router_docs, space_docs):
    """One infrastructure's verdict: the combined verdicts, broker and
    router changes, the binding resource of the most loaded pool."""
    bch = [p["verdict"]["change"] for p in pool_docs]
    rch = [p["verdict"]["change"] for p in router_docs]
    verdicts = [p["verdict"]["verdict"] for p in pool_docs + router_docs] + [
        s["verdict"]["verdict"] for s in space_docs]
    binding = None
    worst = -1
    for p in pool_docs + router_docs:
        u = max([x for x in (p.get("utilisation_before") or {}).values() if x is not None] or [0])
        if p["verdict"]["verdict"] == lib.UNDER:
            u += 10
        if u > worst:
            worst, binding = u, p["verdict"].get("binding_resource")
    return {
        "verdict": lib.combine_verdicts(verdicts),
        "brokers": {"current": sum(p["verdict"]["current"] for p in pool_docs),
                    "add": sum(c for c in bch if c > 0), "remove": -sum(c for c in bch if c < 0),
                    "change": sum(bch)},
        "routers": {"current": sum(p["verdict"]["current"] for p in router_docs),
                    "add": sum(c for c in rch if c > 0), "remove": -sum(c for c in rch if c < 0),
                    "change": sum(rch)},
        "binding_resource": binding,
    }


def _node_series(nodes, res, thr, gauges):
    """{window start: value} of one resource summed over ``nodes``: the
    throughput for msg_rate, else the gauge (memory_used, disk_used, ...)."""
    agg = {}
    for n in nodes:
        if res == "msg_rate":
            for ws, v in thr.get(n, {}).items():
                agg[ws] = agg.get(ws, 0.0) + v
        else:
            g = {"memory": "memory_used", "disk": "disk_used"}.get(res, res)
            for ws, row in gauges.get(n, {}).items():
                if row.get(g) is not None:
                    agg[ws] = agg.get(ws, 0.0) + row[g]
    return agg
