# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning one broker pool and one router pool (pure Python, no Spark).

Part of the planner (``planner.Planner`` derives from ``PoolPlanner``): the
per-item loads, first-fit placement of the addresses on the brokers with the
collection's placement rule, the router sizing rule, verdicts and goals.
"""

from __future__ import absolute_import, division, print_function

import math
from types import SimpleNamespace

from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import INFRA_SPACE as SHARED

from . import rules as lib
from .measures import EPS, _capacity, _capacity_goals, _median, _natural, _new_broker_namer, _stat, _util


class PoolPlanner(object):
    """The pool half of ``planner.Planner``: brokers and routers of one pool
    (mixed into the Planner; reads its ``cm``, ``addr_node``, ``node_stats``)."""

    # ------------------------------------------------------- broker pools
    def _broker_item_loads(self, infra, space, address, doc):
        """Per-partition loads of one address on the brokers that hold it now:
        {broker: {resource: value}} plus the total."""
        rs = self.cm["rate_statistic"]
        per = {}
        for r in self.addr_node.get((infra, space, address), []):
            if r["node_kind"] != "broker":
                continue
            peak = float(r.get("size_max") or 0)
            per[r["node"]] = {"msg_rate": float(_stat(r, "thr", rs) or 0.0), "memory": peak,
                              "disk": peak * (1.0 + self.cm["broker"]["disk_overhead"]), "connections": 0.0,
                              "bytes": float(r.get("size_last") or 0)}
        total = dict((k, sum(p[k] for p in per.values())) for k in
                     ("msg_rate", "memory", "disk", "connections", "bytes"))
        return per, total

    def _unmodelled_on(self, infra, members):
        """broker -> addresses it holds that the model does not list."""
        out = {}
        for sp in members:
            known = set(a["address"] for a in sp["addresses"])
            for (i, space, address), rows in self.addr_node.items():
                if i != infra or space != sp["name"] or address in known:
                    continue
                for r in rows:
                    if r["node_kind"] == "broker" and r["t_last"] >= self.t_max - 2 * self.cm["window_seconds"]:
                        out.setdefault(r["node"], []).append("%s/%s" % (space, address))
        return out

    def plan_broker_pool(self, infra, pool, brokers, members, space_items, addr_docs, pending):
        brokered = any(sp["type"] == "brokered" for sp in members)
        resources = lib.BROKER_RESOURCES
        items, loads = self._broker_items(infra, members, space_items, addr_docs, pending)
        # brokers of the pool: observed, placed, or (none yet) one new
        for _unused, it in items:
            for b in it.current_brokers:
                if b not in brokers:
                    brokers.append(b)
        m = self._broker_measures(infra, brokers, loads)
        eff_items, ceff = _effective_items(items, loads, addr_docs, m.usable, resources)

        new_name = _new_broker_namer(pool if pool != SHARED else infra, brokers)
        capacity = float("inf") if brokered else 1.0
        # 1. evict from overloaded brokers (stable otherwise)
        evicted = set() if brokered else _overloaded(eff_items, brokers, loads, capacity)
        work = [it._replace(current_brokers=[]) if it.name in evicted else it for it in eff_items]
        result = placement.place(work, brokers=list(brokers), capacity=capacity, new_broker_name=new_name)
        reasons = dict((n, "overload") for n in evicted)

        # 2. scale in when everything is well below the low thresholds
        need = self._broker_needs(brokers, loads, items, m, ceff, capacity, new_name)
        n_new = len([b for b in result.brokers if b not in brokers])
        removed = []
        if not brokered and n_new == 0 and len(brokers) > need.lower and all(
                (need.util_before[r] or 0) < m.low[r] for r in resources):
            shrunk = self._scale_in(infra, members, brokers, need.lower, loads, m, work, capacity, new_name,
                                    reasons)
            if shrunk:
                result, removed = shrunk

        after_brokers = [b for b in result.brokers if b not in removed]
        v = self._broker_verdict(brokers, after_brokers, removed, brokered, m, need)
        nodes = _broker_nodes_after(brokers, after_brokers, removed, result, loads, items, m)
        moves = _broker_moves(items, result, loads, reasons)
        new_homes = []
        for sp, it in items:
            if not it.current_brokers and result.assignments.get(it.name) and it.name not in evicted and \
                    reasons.get(it.name) != "scale-in":
                new_homes.append({"address_space": sp["name"], "address": it.name.split("/", 1)[1],
                                  "brokers": result.assignments[it.name]})
        _annotate_addresses(members, addr_docs, result, ceff)

        goals = self.broker_goals(pool, nodes, result, items, pending, members, resources, m.high)
        return {
            "pool": pool, "infra": infra, "shared": pool == SHARED, "brokered": brokered,
            "address_spaces": [sp["name"] for sp in members],
            "brokers_before": list(brokers), "brokers_after": after_brokers, "brokers_removed": removed,
            "verdict": v, "nodes": nodes, "moves": moves, "new_placements": new_homes,
            "draining": dict(result.draining),
            "data_to_move_bytes": sum(mv["bytes"] for mv in moves),
            "utilisation_before": need.util_before,
            "utilisation_after": dict(
                (r, (sum(n["after"][r] for n in nodes if n["after"]) /
                     sum(n["capacity"][r] for n in nodes if n["after"])) if any(n["after"] for n in nodes) else None)
                for r in resources),
            "thresholds": {"high": m.high, "low": m.low},
            "goals": goals,
        }

    def _broker_items(self, infra, members, space_items, addr_docs, pending):
        """The pool's placement items (named space/address, pending ones left
        out) and each one's loads (``_broker_item_loads``) by that name."""
        items = []
        loads = {}
        for sp in members:
            for it in space_items[sp["name"]]:
                if it.name in pending[sp["name"]]:
                    continue
                name = "%s/%s" % (sp["name"], it.name)
                coloc = "%s/%s" % (sp["name"], it.colocate_with) if it.colocate_with else None
                items.append((sp, it._replace(name=name, colocate_with=coloc)))
                loads[name] = self._broker_item_loads(infra, sp["name"], it.name, addr_docs[sp["name"]][it.name])
        return items, loads

    def _broker_measures(self, infra, brokers, loads):
        """Per broker: capacity, observed use, the load of the modelled
        addresses on it and the baseline (observed minus that load); the
        medians (for new brokers), the thresholds and the usable room."""
        cm = self.cm
        bcm = cm["broker"]
        resources = lib.BROKER_RESOURCES
        cap = {}
        base = {}
        observed = {}
        attributed = {}
        for b in brokers:
            ns = self.node_stats.get((infra, b))
            attributed[b] = dict((r, 0.0) for r in resources)
            observed[b] = {"memory": (ns or {}).get("memory_used"), "disk": (ns or {}).get("disk_used"),
                           "connections": (ns or {}).get("connections"), "msg_rate": (ns or {}).get("msg_rate")}
            cap[b] = dict((r, _capacity("broker", r, ns, cm)) for r in resources)
        for name, (per, _unused) in loads.items():
            for b, l in per.items():
                if b in attributed:
                    for r in resources:
                        attributed[b][r] += l[r]
        for b in brokers:
            base[b] = {}
            for r in resources:
                dflt = float(bcm["resources"][r].get("baseline", 0.0))
                o = observed[b][r]
                if o is None:
                    base[b][r] = dflt
                else:
                    base[b][r] = max(0.0, float(o) - attributed[b][r])
                if r == "disk":
                    base[b][r] = max(base[b][r], float(bcm["disk_base_bytes"]))
        med_cap = dict((r, _median([cap[b][r] for b in brokers]) or float(bcm["resources"][r]["capacity"]))
                       for r in resources)
        med_base = dict((r, _median([base[b][r] for b in brokers])
                         if brokers else float(bcm["resources"][r].get("baseline", 0.0))) for r in resources)
        if "disk" in med_base:
            med_base["disk"] = max(med_base["disk"] or 0.0, float(bcm["disk_base_bytes"]))
        high = dict((r, bcm["resources"][r]["high"]) for r in resources)
        low = dict((r, bcm["resources"][r]["low"]) for r in resources)
        usable = dict((r, med_cap[r] * high[r] - (med_base[r] or 0.0)) for r in resources)
        return SimpleNamespace(cap=cap, base=base, observed=observed, attributed=attributed, med_cap=med_cap,
                               med_base=med_base, high=high, low=low, usable=usable,
                               infeasible=[r for r in resources if usable[r] <= 0])

    def _broker_needs(self, brokers, loads, items, m, ceff, capacity, new_name):
        """Utilisation before, brokers needed per resource and by the plan
        credits, and the lower bound for scaling in."""
        bcm = self.cm["broker"]
        resources = lib.BROKER_RESOURCES
        before_demand = dict((r, sum(m.base[b][r] + m.attributed[b][r] for b in brokers)) for r in resources)
        total_cap = dict((r, sum(m.cap[b][r] for b in brokers)) for r in resources)
        util_before = dict((r, (before_demand[r] / total_cap[r]) if total_cap[r] else None) for r in resources)
        need_by_res = {}
        for r in resources:
            div = sum(l[1][r] for l in loads.values())
            need_by_res[r] = lib.needed_nodes(div, m.med_base[r] or 0.0, m.med_cap[r], m.high[r])
        # brokers the plan credits alone need, placed from scratch (the lower bound
        # for scaling in; the stable placement keeps every address where it is)
        plan_credit_need = placement.place([it._replace(current_brokers=[], current_plan=None) for _unused, it in items],
                                           brokers=list(brokers), capacity=capacity,
                                           new_broker_name=new_name).brokers_needed
        lower = max([bcm["min_nodes"], int(math.ceil(round(sum(ceff.values()), 9))), plan_credit_need] +
                    [n for n in need_by_res.values() if n is not None])
        return SimpleNamespace(util_before=util_before, need_by_res=need_by_res, plan_credit_need=plan_credit_need,
                               lower=lower)

    def _scale_in(self, infra, members, brokers, lower, loads, m, work, capacity, new_name, reasons):
        """The most brokers that can go (the fewest foreign addresses, bytes
        and traffic first) with everything placed on the rest: (placement
        result, removed brokers), or None. Marks the moved items in ``reasons``."""
        bytes_on = dict((b, sum(loads[n][0].get(b, {}).get("bytes", 0.0) for n in loads)) for b in brokers)
        foreign = self._unmodelled_on(infra, members)
        for k in range(len(brokers) - lower, 0, -1):
            drop = sorted(brokers, key=lambda b: (len(foreign.get(b, [])), bytes_on[b],
                                                  m.attributed[b]["msg_rate"], _natural(b)))[:k]
            keep_b = [b for b in brokers if b not in drop]
            trial = [it._replace(current_brokers=[]) if set(it.current_brokers) & set(drop) else it
                     for it in work]
            res = placement.place(trial, brokers=keep_b, capacity=capacity, new_broker_name=new_name)
            if all(b in keep_b for b in res.brokers):
                homed = set(x.name for x in work if x.current_brokers)
                for b in drop:
                    if foreign.get(b):
                        self.warnings.append(
                            "broker %s (proposed for removal) also holds address(es) that are not in the "
                            "model: %s; move or delete them first" % (b, ", ".join(sorted(foreign[b]))))
                for it in trial:
                    if not it.current_brokers and it.name not in reasons and it.name in homed:
                        reasons[it.name] = "scale-in"
                return res, drop
        return None

    def _broker_verdict(self, brokers, after_brokers, removed, brokered, m, need):
        """The pool's verdict, its binding resource and the numbers behind it."""
        bcm = self.cm["broker"]
        need_by_res, util_before, plan_credit_need = need.need_by_res, need.util_before, need.plan_credit_need
        current = len(brokers)
        n_after = len(after_brokers)
        binding = None
        if need_by_res:
            cands = [(n or 0, util_before[r] or 0, r) for r, n in need_by_res.items()]
            binding = max(cands)[2]
        if m.infeasible:
            binding = m.infeasible[0]
        if plan_credit_need > max([n or 0 for n in need_by_res.values()] + [0]) and plan_credit_need >= n_after:
            binding = "credits"
        if brokered:
            needed = max([bcm["min_nodes"]] + [n for n in need_by_res.values() if n is not None])
            v = lib.verdict(current, needed, util_before, m.low, minimum=max(1, bcm["min_nodes"]))
            if v["verdict"] == lib.OVER:
                v = {"verdict": lib.RIGHT, "current": current, "needed": current, "change": 0}
        elif n_after > current:
            v = {"verdict": lib.UNDER, "current": current, "needed": n_after, "change": n_after - current}
        elif removed:
            v = {"verdict": lib.OVER, "current": current, "needed": current - len(removed),
                 "change": -len(removed)}
        else:
            v = {"verdict": lib.RIGHT, "current": current, "needed": current, "change": 0}
        v["binding_resource"] = binding
        v["lower_bound"] = need.lower
        v["needed_by_resource"] = need_by_res
        v["needed_by_credits"] = plan_credit_need
        if m.infeasible:
            v["note"] = ("one broker's baseline alone exceeds the high threshold for %s: use bigger brokers"
                         % ", ".join(m.infeasible))
            if v["verdict"] != lib.UNDER:
                v["verdict"] = lib.UNDER
        if brokered:
            v["note"] = ("brokered address space: one broker; %s" %
                         ("scale the broker up (binding: %s)" % binding if v["verdict"] == lib.UNDER
                          else "node count cannot change"))
            v["change"] = 0 if v["verdict"] != lib.UNDER else v["change"]
        return v

    def broker_goals(self, pool, nodes, result, items, pending, members, resources, high):
        goals = _capacity_goals(nodes, resources, high, "broker")
        dup_b = [it.name for _unused, it in items if len(set(it.current_brokers)) != len(it.current_brokers)]
        dup_a = [n for n, bs in result.assignments.items() if len(set(bs)) != len(bs)]
        goals.append({"goal": "partitions:distinct-brokers", "kind": "hard", "holds_before": not dup_b,
                      "holds_after": not dup_a, "violations_before": dup_b, "violations_after": dup_a,
                      "detail": "no two partitions of one address on one broker"})

        def spread(key):
            counts = [n[key] for n in nodes if n[key] is not None]
            if len(counts) < 2:
                return True, counts
            mean = sum(counts) / float(len(counts))
            lo, hi = math.floor(mean * 0.9), math.ceil(mean * 1.1)
            return all(lo <= c <= hi for c in counts), counts
        ok_b, cb = spread("partitions_before")
        ok_a, ca = spread("partitions_after")
        goals.append({"goal": "partitions:distribution", "kind": "soft", "holds_before": ok_b, "holds_after": ok_a,
                      "violations_before": [] if ok_b else cb, "violations_after": [] if ok_a else ca,
                      "detail": "partitions per broker within 10% of the mean (rounded outwards)"})
        for sp in members:
            p = [a for a, why in pending[sp["name"]].items()]
            goals.append({"goal": "quota:%s" % sp["name"], "kind": "hard", "holds_before": not p,
                          "holds_after": not p, "violations_before": p, "violations_after": p,
                          "detail": "addresses fit address space plan %s's resource limits" % sp["plan"]})
        return goals

    # ------------------------------------------------------- router pools
    def plan_router_pool(self, infra, pool, routers, members, space_items, pending):
        rcm = self.cm["router"]
        sizing = rcm["sizing"]
        resources = lib.ROUTER_RESOURCES
        msg_size = sizing.get("message_size_factor") or self.msg_size
        n_any = sum(1 for sp in members for a in sp["addresses"] if a["type"] in lib.ROUTER_ONLY_TYPES)
        n_qt = sum(1 for sp in members for a in sp["addresses"] if a["type"] not in lib.ROUTER_ONLY_TYPES)
        fixed_mem = lib.router_memory_model(n_any, n_qt, 0, 0, sizing, msg_size)
        credits = [it.router for sp in members for it in space_items[sp["name"]]
                   if it.name not in pending[sp["name"]]]
        need_credit = placement.routers_needed(credits)
        high = dict((r, rcm["resources"][r]["high"]) for r in resources)
        low = dict((r, rcm["resources"][r]["low"]) for r in resources)
        nodes, div, caps = self._router_nodes_before(infra, routers, n_any, n_qt, msg_size, fixed_mem)
        med_cap = dict((r, _median(caps[r]) or float(rcm["resources"][r]["capacity"])) for r in resources)
        need_by_res = {}
        for r in resources:
            need_by_res[r] = lib.needed_nodes(max(0.0, div[r]), fixed_mem if r == "memory" else 0.0,
                                              med_cap[r], high[r])
        current = len(routers)
        total_cap = dict((r, sum(caps[r])) for r in resources)
        util_before = dict((r, (sum(n["before"][r] for n in nodes) / total_cap[r]) if total_cap[r] else None)
                           for r in resources)
        v = self._router_verdict(current, need_by_res, need_credit, util_before if nodes else {}, util_before,
                                 low, fixed_mem)
        n_after = v["needed"] if v["verdict"] != lib.RIGHT else current
        n_after = max(n_after, 1)
        after = dict((r, (fixed_mem if r == "memory" else 0.0) + max(0.0, div[r]) / n_after) for r in resources)
        keep = _router_names(pool if pool != SHARED else infra, routers, n_after)
        for nd in nodes:
            nd["removed"] = nd["node"] not in keep
            nd["after"] = None if nd["removed"] else dict(after)
            nd["utilisation_after"] = _util(nd["after"], nd["capacity"])
        for nm in keep:
            if nm not in routers:
                nodes.append({"node": nm, "kind": "router", "new": True, "removed": False, "observed": None,
                              "capacity": dict(med_cap), "before": None, "after": dict(after),
                              "utilisation_before": None, "utilisation_after": _util(after, med_cap)})
        goals = _capacity_goals(nodes, resources, high, "router")
        goals.append({"goal": "routers:credits", "kind": "hard", "holds_before": current >= need_credit,
                      "holds_after": n_after >= need_credit, "violations_before": [], "violations_after": [],
                      "detail": "routers >= ceil(sum of router credits) = %d" % need_credit})
        return {"pool": pool, "infra": infra, "shared": pool == SHARED,
                "address_spaces": [sp["name"] for sp in members], "routers_before": list(routers),
                "routers_after": keep, "verdict": v, "nodes": nodes, "utilisation_before": util_before,
                "utilisation_after": dict((r, after[r] / med_cap[r]) for r in resources),
                "thresholds": {"high": high, "low": low}, "goals": goals,
                "sizing": {"fixed_memory_per_router": fixed_mem, "anycast_addresses": n_any,
                           "stored_addresses": n_qt, "message_size_bytes": msg_size,
                           "router_credits": sum(credits)}}

    def _router_nodes_before(self, infra, routers, n_any, n_qt, msg_size, fixed_mem):
        """Per router: observed use, the memory model, capacity and demand.
        Returns (node documents, demand beyond the fixed memory summed over
        the routers, {resource: [capacity per router]})."""
        cm = self.cm
        sizing = cm["router"]["sizing"]
        resources = lib.ROUTER_RESOURCES
        nodes = []
        div = dict((r, 0.0) for r in resources)
        caps = dict((r, []) for r in resources)
        for rt in routers:
            ns = self.node_stats.get((infra, rt)) or {}
            links = ns.get("links") or 0.0
            conns = ns.get("connections") or 0.0
            model_mem = lib.router_memory_model(n_any, n_qt, links, conns, sizing, msg_size)
            obs = {"memory": ns.get("memory_used"), "connections": ns.get("connections"), "links": ns.get("links"),
                   "msg_rate": ns.get("msg_rate")}
            demand = {"memory": max(float(obs["memory"] or 0.0), model_mem), "connections": float(conns),
                      "links": float(links), "msg_rate": float(obs["msg_rate"] or 0.0)}
            cap = dict((r, _capacity("router", r, ns, cm)) for r in resources)
            for r in resources:
                caps[r].append(cap[r])
                div[r] += demand[r] - (fixed_mem if r == "memory" else 0.0)
            nodes.append({"node": rt, "kind": "router", "new": False, "removed": False, "observed": obs,
                          "model": {"memory": model_mem}, "capacity": cap, "before": demand,
                          "utilisation_before": _util(demand, cap)})
        return nodes, div, caps

    def _router_verdict(self, current, need_by_res, need_credit, util_for_verdict, util_before, low, fixed_mem):
        """The router pool's verdict with its binding resource and the needs
        behind it (under-provisioned when the address configuration alone
        exceeds a router's memory)."""
        rcm = self.cm["router"]
        infeasible = [r for r, n in need_by_res.items() if n is None]
        need_load = max([n for n in need_by_res.values() if n is not None] + [0])
        needed = max(need_load, need_credit, rcm["min_nodes"])
        v = lib.verdict(current, needed, util_for_verdict, low, minimum=rcm["min_nodes"])
        cands = [(n or 0, util_before.get(r) or 0, r) for r, n in need_by_res.items()]
        binding = max(cands)[2] if cands else None
        if need_credit >= need_load and need_credit >= v["needed"] and need_credit > 0:
            binding = "credits" if need_credit > need_load else binding
        if infeasible:
            binding = infeasible[0]
            v["note"] = ("the address configuration alone (%s) exceeds a router's memory threshold: use "
                         "routers with more memory" % lib.fmt_bytes(fixed_mem))
            v["verdict"] = lib.UNDER
        v.update({"binding_resource": binding, "needed_by_resource": need_by_res, "needed_by_credits": need_credit})
        return v


def _effective_items(items, loads, addr_docs, usable, resources):
    """Each item with its effective broker credit: the larger of its plan's
    credit and its measured load on the usable room of a median broker
    (0 for a router-only address without broker credit). ({name: credit} too.)"""
    def load_credit(total):
        lc = 0.0
        for r in resources:
            if usable[r] > 0 and total.get(r):
                lc = max(lc, total[r] / usable[r])
        return lc

    eff_items = []
    ceff = {}
    for sp, it in items:
        _unused, total = loads[it.name]
        c = max(it.broker, load_credit(total)) if it.broker > 0 or not it.colocate_with else it.broker
        if it.router >= 0 and it.broker <= EPS and sp["type"] == "standard" and not it.colocate_with \
                and addr_docs[sp["name"]][it.name.split("/", 1)[1]]["type"] in lib.ROUTER_ONLY_TYPES:
            c = 0.0
        ceff[it.name] = c
        eff_items.append(it._replace(broker=c))
    return eff_items, ceff


def _overloaded(eff_items, brokers, loads, capacity):
    """Names of the items to move off brokers over ``capacity`` (the most
    credit per stored byte first; subscriptions follow their topic)."""
    evicted = set()
    on = dict((b, []) for b in brokers)
    for it in eff_items:
        keep = it.current_brokers and (it.current_plan is None or it.current_plan == it.plan)
        if keep:
            for b in it.current_brokers:
                on.setdefault(b, []).append(it)
    for b, its in on.items():
        used = sum(i.broker / max(1, len(i.current_brokers)) for i in its)
        if used <= capacity + EPS:
            continue
        order = sorted(its, key=lambda i: -(i.broker / max(1, len(i.current_brokers)))
                       / (1.0 + loads[i.name][1]["bytes"] / float(lib.GIB)))
        for i in order:
            if used <= capacity + EPS:
                break
            if i.colocate_with:
                continue
            evicted.add(i.name)
            used -= i.broker / max(1, len(i.current_brokers))
            for j in eff_items:     # subscriptions follow their topic
                if j.colocate_with == i.name:
                    evicted.add(j.name)
    return evicted


def _broker_nodes_after(brokers, after_brokers, removed, result, loads, items, m):
    """Per-node documents: baseline, capacity, demand and utilisation before
    and after the proposal (new brokers at the medians)."""
    resources = lib.BROKER_RESOURCES
    after_attr = dict((b, dict((r, 0.0) for r in resources)) for b in after_brokers)
    parts_after = dict((b, 0) for b in after_brokers)
    for name, assigned in result.assignments.items():
        if not assigned:
            continue
        per, total = loads.get(name, ({}, {}))
        for i, b in enumerate(assigned):
            if b not in after_attr:
                continue
            parts_after[b] += 1
            if b in per and len(assigned) == len(per) and set(per) == set(assigned):
                share = per[b]
            else:
                share = dict((r, (total.get(r) or 0.0) / len(assigned)) for r in resources)
            for r in resources:
                after_attr[b][r] += share.get(r, 0.0)
    nodes = []
    for b in after_brokers + [x for x in brokers if x in removed]:
        is_new = b not in brokers
        bb = dict((r, m.med_base[r] or 0.0) for r in resources) if is_new else m.base[b]
        cc = dict(m.med_cap) if is_new else m.cap[b]
        nd = {"node": b, "kind": "broker", "new": is_new, "removed": b in removed,
              "observed": None if is_new else m.observed[b], "baseline": bb, "capacity": cc,
              "before": None if is_new else dict((r, bb[r] + m.attributed[b][r]) for r in resources),
              "after": None if b in removed else dict((r, bb[r] + after_attr[b][r]) for r in resources),
              "partitions_before": None if is_new else sum(1 for _unused, it in items if b in it.current_brokers),
              "partitions_after": None if b in removed else parts_after.get(b, 0)}
        nd["utilisation_before"] = _util(nd["before"], cc)
        nd["utilisation_after"] = _util(nd["after"], cc)
        nodes.append(nd)
    return nodes


def _broker_moves(items, result, loads, reasons):
    """The partition moves from the current placement to the proposal, with
    their bytes and reason (``reasons``, else plan-change or rebalance)."""
    moves = []
    for sp, it in items:
        after = result.assignments.get(it.name)
        if after is None:
            continue
        before = list(it.current_brokers)
        per, total = loads[it.name]
        addr = it.name.split("/", 1)[1]
        if it.current_plan and it.current_plan != it.plan:
            reasons.setdefault(it.name, "plan-change")
        for i, b in enumerate(after):
            src = before[i] if i < len(before) else None
            if src == b or (src is None and not before):
                continue
            if b in before and src != b:
                continue
            if src is None:
                moves.append({"address_space": sp["name"], "address": addr, "partition": i, "from": None,
                              "to": b, "bytes": 0, "reason": "partition added"})
                continue
            nbytes = per.get(src, {}).get("bytes") if src in per else 0
            moves.append({"address_space": sp["name"], "address": addr, "partition": i, "from": src, "to": b,
                          "bytes": int(nbytes or 0), "reason": reasons.get(it.name, "rebalance")})
        for src in before[len(after):]:
            moves.append({"address_space": sp["name"], "address": addr, "partition": None, "from": src,
                          "to": None, "bytes": int(per.get(src, {}).get("bytes", 0)),
                          "reason": "partition removed"})
    return moves


def _annotate_addresses(members, addr_docs, result, ceff):
    """The proposal on each address document: brokers and partitions after,
    effective credit, a note when the load needs more partitions, draining."""
    for sp in members:
        for d in addr_docs[sp["name"]].values():
            key = "%s/%s" % (sp["name"], d["address"])
            if key in result.assignments:
                d["brokers_after"] = result.assignments[key]
                d["partitions_after"] = len(result.assignments[key])
                d["effective_broker_credit"] = ceff.get(key)
                if ceff.get(key, 0) > 1.0 + EPS and d["partitions_plan"] < len(result.assignments[key]):
                    d["note"] = ("load needs %d partitions; its plan has %d: choose a plan with more "
                                 "partitions" % (len(result.assignments[key]), d["partitions_plan"]))
            if key in result.draining:
                d["draining"] = result.draining[key]


def _router_names(prefix, routers, n_after):
    """The routers after the proposal: the current ones first, then new ones
    named <prefix>-router-<i>, cut to ``n_after``."""
    names = list(routers)
    i = len(names)
    while len(names) < n_after:
        cand = "%s-router-%d" % (prefix, i)
        if cand not in names:
            names.append(cand)
        i += 1
    return names[:n_after]
