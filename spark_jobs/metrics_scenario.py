# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scenario of the synthetic metrics (spark_jobs/generate_metrics.py):
which infrastructures, address spaces, addresses and brokers exist, with what
load, and the model document the capacity job reads. Pure Python: the
generator turns the scenario into samples."""

from __future__ import absolute_import, division, print_function

import math

import numpy as np

from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import INFRA_SPACE

SHARED = INFRA_SPACE

INFRA_ROUTERS = {"prod": (["prod-router-0", "prod-router-1"], [0.6, 0.4]),
                 "edge": (["edge-router-0"], [1.0])}

PLAN_FOR = {
    ("standard", "queue"): "standard-small-queue",
    ("standard", "topic"): "standard-small-topic",
    ("standard", "subscription"): "standard-small-subscription",
    ("standard", "anycast"): "standard-small-anycast",
    ("standard", "multicast"): "standard-small-multicast",
    ("brokered", "queue"): "brokered-queue",
    ("brokered", "topic"): "brokered-topic",
}


def _space_specs(n_spaces):
    specs = [
        {"name": "tenant-a", "infra": "prod", "type": "standard", "plan": "standard-medium", "share": 0.4},
        {"name": "tenant-b", "infra": "edge", "type": "standard", "plan": "standard-small", "share": 0.3},
        {"name": "tenant-c", "infra": "prod", "type": "brokered", "plan": "brokered-single-broker",
         "share": 0.3},
    ]
    for i in range(3, n_spaces):
        std = i % 2 == 1
        specs.append({"name": "tenant-%s" % _letters(i), "infra": "prod" if i % 4 < 2 else "edge",
                      "type": "standard" if std else "brokered",
                      "plan": "standard-unlimited" if std else "brokered-single-broker", "share": 0.3})
    specs = specs[:n_spaces]
    tot = sum(s["share"] for s in specs)
    for s in specs:
        s["share"] /= tot
    return specs


def _letters(i):
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s


def build_scenario(n_addresses, n_spaces, rng):
    """(spaces, infras): spaces with their addresses (each with its generation
    parameters); infras with their routers and shared broker pool."""
    specs = _space_specs(n_spaces)
    counts = [max(4, int(round(n_addresses * s["share"]))) for s in specs]
    if n_addresses > sum(counts):
        counts[0] += n_addresses - sum(counts)
    infras = _infras(specs, counts)
    out = []
    for spec, n in zip(specs, counts):
        name, stype, infra = spec["name"], spec["type"], infras[spec["infra"]]
        brokers = list(infra["brokers"]) if stype == "standard" else ["%s-broker-0" % name]
        addrs = []
        add = _address_adder(addrs, stype, rng)
        _special_addresses(name, stype, brokers, add)
        i = 0
        while len(addrs) < n:
            atype = "queue"
            if stype == "standard" and i % 7 == 6:
                atype = "anycast"
            add("q-%05d" % i, atype, base=float(rng.uniform(10.0, 30.0)) if stype == "brokered" else
                float(rng.uniform(0.5, 8.0)))
            i += 1
        if name == "tenant-a":
            add("new-queue", "queue", in_metrics=False)
        _current_placement(addrs, stype, brokers, infra)
        out.append({"name": name, "infra": spec["infra"], "type": stype, "plan": spec["plan"],
                    "brokers": brokers, "routers": infra["routers"] if stype == "standard" else [],
                    "router_share": infra["router_share"], "addresses": addrs})
    return out, infras


def _infras(specs, counts):
    """{infra: routers with their traffic shares, the shared brokers (1 per
    50 standard addresses, at least 2 in prod and 3 elsewhere)}."""
    infras = {}
    for sp in specs:
        inf = infras.setdefault(sp["infra"], {"name": sp["infra"], "routers": list(INFRA_ROUTERS[sp["infra"]][0]),
                                              "router_share": list(INFRA_ROUTERS[sp["infra"]][1]),
                                              "brokers": [], "std_addresses": 0})
        if sp["type"] == "standard":
            inf["std_addresses"] += counts[specs.index(sp)]
    for name, inf in infras.items():
        base = 2 if name == "prod" else 3
        n_b = max(base, int(math.ceil(inf["std_addresses"] * 0.01 / 0.5)))
        inf["brokers"] = ["%s-broker-%d" % (name, i) for i in range(n_b)] if inf["std_addresses"] else []
        inf["rr"] = 0
    return infras


def _address_adder(addrs, stype, rng):
    """add(address, type, **overrides): appends an address with its generation
    parameters (random unless given; every draw is made either way, so the
    stream of random numbers does not depend on the overrides) to ``addrs``."""
    def add(address, atype, **kw):
        a = {"address": address, "type": atype, "plan": kw.pop("plan", PLAN_FOR[(stype, atype)]),
             "base": kw.pop("base", float(rng.uniform(0.5, 8.0))),
             "amp": kw.pop("amp", float(rng.uniform(0.2, 0.5))),
             "phase": kw.pop("phase", float(rng.uniform(0.35, 0.65))),
             "egress_ratio": kw.pop("egress_ratio", 1.0),
             "consumers": kw.pop("consumers", int(rng.integers(1, 4))),
             "msg_size": kw.pop("msg_size", int(rng.choice([256, 512, 1024, 2048, 4096]))),
             "burst": kw.pop("burst", None), "hot": kw.pop("hot", False),
             "idle": kw.pop("idle", False), "backlog": kw.pop("backlog", False),
             "brokers": kw.pop("brokers", None), "topic": kw.pop("topic", None),
             "metrics_plan": kw.pop("metrics_plan", None),
             "in_model": kw.pop("in_model", True), "in_metrics": kw.pop("in_metrics", True),
             "fanout": kw.pop("fanout", 1)}
        assert not kw, kw
        addrs.append(a)
        return a
    return add


def _special_addresses(name, stype, brokers, add):
    """The addresses the scenario's expectations are about (hot, partitioned,
    bursty, idle, backlog, plan change, not in the model, ...)."""
    if name == "tenant-a":
        for i in range(3):
            add("hot-%d" % i, "queue", plan="standard-medium-queue", base=3000.0, amp=0.3,
                phase=0.5, hot=True, consumers=4, msg_size=512,
                brokers=[brokers[0] if i < 2 else brokers[1]])
        add("partitioned", "queue", plan="standard-small-partitioned-queue", base=20.0,
            brokers=brokers[:2])
        add("events", "topic", base=10.0)
        add("audit", "subscription", topic="events", base=10.0)
        add("rpc", "anycast", base=50.0, consumers=2)
        add("broadcast", "multicast", base=5.0, fanout=3, consumers=3)
        add("bursty", "queue", base=2.0, burst={"start_h": 14.0, "minutes": 20, "rate": 400.0})
        add("idle-a", "queue", base=0.0, consumers=0, idle=True)
        add("backlog", "queue", base=4.0, egress_ratio=0.9, backlog=True)
        add("orders", "queue", plan="standard-medium-queue", metrics_plan="standard-small-queue",
            base=6.0)
    elif name == "tenant-b":
        add("bursty-b", "queue", base=1.0, burst={"start_h": 9.0, "minutes": 10, "rate": 200.0})
        add("idle-b", "queue", base=0.0, consumers=0, idle=True)
        add("legacy", "queue", base=1.0, in_model=False)
        add("ping", "anycast", base=2.0)
    else:
        if stype == "standard":
            add("ping", "anycast", base=2.0)
        else:
            add("events", "topic", base=8.0)


def _current_placement(addrs, stype, brokers, infra):
    """The current placement: round robin over the pool (hot queues pinned
    by the scenario), subscriptions with their topic, none for direct
    addresses; topics' egress is their subscriptions'."""
    by_name = dict((a["address"], a) for a in addrs)
    for a in addrs:
        if a["type"] in ("anycast", "multicast"):
            a["brokers"] = []
        elif a["type"] == "subscription":
            a["brokers"] = None
        elif a["brokers"] is None:
            if stype == "standard":
                a["brokers"] = [brokers[infra["rr"] % len(brokers)]]
                infra["rr"] += 1
            else:
                a["brokers"] = list(brokers)
    for a in addrs:
        if a["type"] == "subscription":
            a["brokers"] = list(by_name[a["topic"]]["brokers"])
        if a["type"] == "topic":
            a["egress_ratio"] = 0.0    # a topic row counts what was published; subscriptions the rest


def series_per_sample(scenario):
    spaces, infras = scenario
    n = 0
    for sp in spaces:
        for a in sp["addresses"]:
            if not a["in_metrics"]:
                continue
            if a["type"] not in ("anycast", "multicast"):
                n += len(a["brokers"])
            n += len(sp["routers"])
        if sp["type"] == "brokered":
            n += 1
    for inf in infras.values():
        n += len(inf["brokers"]) + len(inf["routers"])
    return n


def model_document(scenario):
    spaces = []
    placement = {}
    for sp in scenario:
        addrs = []
        cur = {}
        for a in sp["addresses"]:
            if not a["in_model"]:
                continue
            doc = {"address": a["address"], "type": a["type"], "plan": a["plan"]}
            if a["topic"]:
                doc["topic"] = a["topic"]
            addrs.append(doc)
            if a["in_metrics"] and a["brokers"]:
                cur[a["address"]] = list(a["brokers"])
        spaces.append({"name": sp["name"], "infra": sp["infra"], "type": sp["type"], "plan": sp["plan"],
                       "addresses": addrs})
        if cur:
            placement[sp["name"]] = cur
    return {"infra": "prod", "address_spaces": spaces, "current_placement": placement}


def choose_addresses(target, n_spaces, days, interval, seed):
    """Smallest address count whose scenario gives >= target samples."""
    n_t = int(round(days * 86400 / interval))
    lo = 4 * n_spaces
    hi = max(8, lo)
    while series_per_sample(build_scenario(hi, n_spaces, np.random.default_rng(seed + 1))) * n_t < target:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if series_per_sample(build_scenario(mid, n_spaces, np.random.default_rng(seed + 1))) * n_t < target:
            lo = mid + 1
        else:
            hi = mid
    return lo
