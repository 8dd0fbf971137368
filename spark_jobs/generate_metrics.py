# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Synthetic platform metrics in the metrics-store schema (docs/metrics-schema.md).

Deterministic for a given seed. Writes

  <out>/addresses/date=YYYY-MM-DD/address_space=<space>/part-NNNNN.parquet
  <out>/nodes/date=YYYY-MM-DD/address_space=<space or _infra>/part-00000.parquet
  <out>/model.json    address spaces, addresses, plans in force, current placement
  <out>/truth.json    the known answers (true average rates, growth, hot/idle, ...)

The scenario follows the collector's conventions (plugins/module_utils/metrics/):
brokers of standard address spaces are infrastructure nodes shared by the
standard spaces of that infrastructure (node rows under ``_infra``), a
brokered space has its own broker (node rows under the space), routers are
infrastructure nodes. Two infrastructures:

* ``prod``: routers prod-router-0/1, brokers prod-broker-0/1.
  ``tenant-a`` (standard, standard-medium): three hot queues, two of them on
  prod-broker-0, a partitioned queue, a topic with a subscription, anycast and
  multicast addresses, a bursty queue, an idle queue, a backlog queue
  (consumers slower than producers), a queue whose plan changed and, in the
  model only, a new queue without metrics. prod-broker-1 restarts on day 2 at
  10:00:30 (counters restart from 0, uptime drops).
  ``tenant-c`` (brokered, brokered-single-broker, broker tenant-c-broker-0):
  steady queues and a topic.
* ``edge``: router edge-router-0, brokers edge-broker-0/1/2.
  ``tenant-b`` (standard, standard-small): light load, a bursty queue, an idle
  queue, an address in the metrics but not in the model, and a 15 minute
  collector outage on day 1 at 03:00.
* more spaces (``--spaces`` > 3) alternate standard/brokered light tenants
  over the two infrastructures.

Every rate grows linearly by ``--growth`` (relative to the start) per day and
follows a daily cycle; message counters are Poisson. Memory bounded: rows are
produced per chunk of addresses and written per day. ``--target-samples N``
picks the number of addresses that gives about N samples (rows) in total.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime as dt
import json
import math
import os
import shutil
import sys
import time
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# the directory holding ansible_collections/ must be on PYTHONPATH (docs/capacity-planning.md)
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics.store import arrow_schema
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import ADDRESSES, NODES

from metrics_scenario import SHARED, build_scenario, choose_addresses, model_document

CHUNK_ADDRESSES = 256

# the store's record layout, defined once in model/schema.py (the collector's writer builds it the same way)
ADDRESS_SCHEMA = arrow_schema(ADDRESSES)
NODE_SCHEMA = arrow_schema(NODES)


# --------------------------------------------------------------- generation

class Clock(object):
    def __init__(self, start, days, interval, rng):
        self.start = start
        self.n = int(round(days * 86400 / interval))
        jitter = rng.uniform(0.0, 2.0, self.n)
        jitter[0] = 0.0
        self.t = start.timestamp() + np.arange(self.n) * float(interval) + jitter   # epoch s
        self.days = (self.t - start.timestamp()) / 86400.0
        self.dt = np.diff(self.t, prepend=self.t[0])
        self.ts_us = (self.t * 1e6).astype(np.int64)
        day_index = np.floor(self.days).astype(np.int64)
        self.day_ranges = []
        for d in np.unique(day_index):
            idx = np.nonzero(day_index == d)[0]
            self.day_ranges.append(((start + dt.timedelta(days=int(d))).date().isoformat(),
                                    int(idx[0]), int(idx[-1]) + 1))


def rate_curve(a, clock, growth):
    """Expected rate (msg/s) at each interval's midpoint (index 0: no interval)."""
    tm = clock.t - clock.dt / 2.0
    d = (tm - clock.start.timestamp()) / 86400.0
    lam = a["base"] * (1.0 + growth * d) * (1.0 + a["amp"] * np.sin(2 * np.pi * (d - a["phase"] + 0.25)))
    if a["burst"]:
        h = (d % 1.0) * 24.0
        b = a["burst"]
        lam = lam + np.where((h >= b["start_h"]) & (h < b["start_h"] + b["minutes"] / 60.0), b["rate"], 0.0)
    lam = np.maximum(lam, 0.0)
    lam[0] = 0.0
    return lam


def _split(inc, shares):
    """Split integer increments by shares (deterministic, sums exactly)."""
    parts = []
    left = inc.copy()
    for s in shares[:-1]:
        p = np.floor(inc * s).astype(np.int64)
        parts.append(p)
        left = left - p
    parts.append(left)
    return parts


def _restart_counter(cum_inc, clock, restart_t):
    """Counter as reported by a node that restarted at restart_t: after the
    restart it counts from zero."""
    if restart_t is None:
        return cum_inc
    k = int(np.searchsorted(clock.t, restart_t))   # first sample after the restart
    if k <= 0 or k >= clock.n:
        return cum_inc
    inc = np.diff(cum_inc, prepend=cum_inc[0])
    frac = (restart_t - clock.t[k - 1]) / (clock.t[k] - clock.t[k - 1])
    before = int(math.floor(inc[k] * frac))
    out = cum_inc.copy()
    out[k:] = np.cumsum(inc[k:]) - before
    return out


class Writer(object):
    def __init__(self, root, clock):
        self.root = root
        self.clock = clock
        self.rows = 0
        self.files = 0
        self.part = {}

    def write(self, kind, space, cols, schema):
        """cols: name -> list (one entry per series) of numpy arrays over the
        whole time range, or scalars (str/int/None); one file per day."""
        n_series = len(cols["ts"])
        if not n_series:
            return
        for date, i0, i1 in self.clock.day_ranges:
            length = i1 - i0
            arrays = []
            for f in schema:
                vals = cols[f.name]
                if pa.types.is_string(f.type):
                    uniq = sorted(set(v for v in vals if v is not None))
                    code = dict((v, i) for i, v in enumerate(uniq))
                    idx = np.repeat(np.array([code.get(v, -1) for v in vals], dtype=np.int32), length)
                    mask = idx < 0
                    ind = pa.array(np.where(mask, 0, idx), type=pa.int32(), mask=mask if mask.any() else None)
                    arrays.append(pa.DictionaryArray.from_arrays(ind, pa.array(uniq, type=pa.string()))
                                  .cast(pa.string()))
                    continue
                np_type = np.int64 if f.name == "ts" or pa.types.is_int64(f.type) else np.int32
                data = np.empty(n_series * length, dtype=np_type)
                mask = None
                for j, v in enumerate(vals):
                    sl = slice(j * length, (j + 1) * length)
                    if v is None:
                        if mask is None:
                            mask = np.zeros(n_series * length, dtype=bool)
                        mask[sl] = True
                        data[sl] = 0
                    elif isinstance(v, np.ndarray):
                        data[sl] = v[i0:i1]
                    else:
                        data[sl] = v
                arr = pa.array(data, mask=mask)
                arrays.append(arr.cast(f.type) if f.name == "ts" else arr)
            table = pa.Table.from_arrays(arrays, schema=schema)
            drop = cols.get("_drop")
            if drop is not None and drop[i0:i1].any():
                keep = np.tile(~drop[i0:i1], n_series)
                table = table.filter(pa.array(keep))
            d = os.path.join(self.root, kind, "date=%s" % date, "address_space=%s" % space)
            os.makedirs(d, exist_ok=True)
            key = (kind, date, space)
            n = self.part.get(key, 0)
            self.part[key] = n + 1
            pq.write_table(table, os.path.join(d, "part-%05d.parquet" % n), compression="snappy")
            self.rows += table.num_rows
            self.files += 1


def generate(out, seed=42, n_addresses=30, n_spaces=3, days=2.0, interval=60, growth=0.05,
             start="2024-03-04", target_samples=None, quiet=False):
    rng = np.random.default_rng(seed)
    if target_samples:
        n_addresses = choose_addresses(target_samples, n_spaces, days, interval, seed)
    scenario, infras = build_scenario(n_addresses, n_spaces, np.random.default_rng(seed + 1))
    start_dt = dt.datetime.strptime(start, "%Y-%m-%d").replace(tzinfo=dt.timezone.utc)
    clock = Clock(start_dt, days, interval, rng)
    if os.path.exists(out):
        for sub in ("addresses", "nodes"):
            shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    writer = Writer(out, clock)
    t0 = time.time()

    restart = None
    if days >= 2:
        restart = {"node": "prod-broker-1", "t": start_dt.timestamp() + 86400 + 10 * 3600 + 30.5}
    outage = {"space": "tenant-b", "from": start_dt.timestamp() + 3 * 3600 - 1,
              "to": start_dt.timestamp() + 3 * 3600 + 15 * 60 - 1}
    truth = _new_truth(seed, interval, days, start_dt, growth, restart, outage)
    acc = {"broker_bytes": {}, "router_links": {}, "router_addr": {}, "daily_in": {}}
    for name, inf in infras.items():
        truth["brokers"][name] = list(inf["brokers"])
        truth["routers"][name] = list(inf["routers"])
        for r in inf["routers"]:
            acc["router_links"][r] = np.zeros(clock.n)
        acc["router_addr"][name] = {"anycast": 0, "queue_topic": 0}
    g = SimpleNamespace(clock=clock, growth=growth, rng=rng, restart=restart, acc=acc, truth=truth,
                        total_span=clock.t[-1] - clock.t[0], days_idx=np.floor(clock.days).astype(int),
                        writer=writer)
    outage_mask = (clock.t >= outage["from"]) & (clock.t < outage["to"])
    for sp in scenario:
        _space_samples(g, sp, outage_mask if sp["name"] == outage["space"] else None)
    _infra_nodes(g, infras)

    _growth_truth(truth, acc, start_dt, scenario)
    if n_spaces == 3 and n_addresses <= 60:
        truth["expected"] = _expected()
    truth["samples"] = writer.rows
    truth["files"] = writer.files
    truth["n_addresses"] = sum(len(sp["addresses"]) for sp in scenario)
    truth["generate_seconds"] = round(time.time() - t0, 3)
    model = model_document(scenario)
    _write_json(os.path.join(out, "truth.json"), truth)
    _write_json(os.path.join(out, "model.json"), model)
    if not quiet:
        print("wrote %d samples in %d files to %s in %.1fs" % (writer.rows, writer.files, out, time.time() - t0))
    return truth


def _new_truth(seed, interval, days, start_dt, growth, restart, outage):
    """truth.json's skeleton: the parameters, the restart and the outage."""
    truth = {"seed": seed, "interval_seconds": interval, "days": days,
             "start": start_dt.isoformat(), "growth": {"relative_per_day": growth},
             "addresses": {}, "hot": [], "idle": [], "backlog": [], "bursty": [],
             "restarts": [], "outages": [], "not_in_model": [], "not_in_metrics": [],
             "plan_changes": [], "brokers": {}, "routers": {}, "infras": {}}
    if restart:
        truth["restarts"].append({"node": restart["node"],
                                  "time": dt.datetime.fromtimestamp(restart["t"], dt.timezone.utc).isoformat()})
    truth["outages"].append({"address_space": outage["space"],
                             "from": dt.datetime.fromtimestamp(outage["from"], dt.timezone.utc).isoformat(),
                             "to": dt.datetime.fromtimestamp(outage["to"], dt.timezone.utc).isoformat()})
    return truth


def _space_samples(g, sp, drop):
    """One address space: its address samples (per chunk of addresses), its
    truth entries and, brokered, its broker's node samples. ``drop``: the
    samples lost to the collector outage (or None)."""
    space, stype, truth = sp["name"], sp["type"], g.truth
    truth["infras"].setdefault(sp["infra"], []).append(space)
    if stype == "brokered":
        truth["brokers"][space] = list(sp["brokers"])
    addrs = [a for a in sp["addresses"] if a["in_metrics"]]
    for c0 in range(0, len(addrs), CHUNK_ADDRESSES):
        cols = dict((f.name, []) for f in ADDRESS_SCHEMA)
        for a in addrs[c0:c0 + CHUNK_ADDRESSES]:
            _address_series(g, a, sp, cols)
        if drop is not None:
            cols["_drop"] = drop
        g.writer.write("addresses", space, cols, ADDRESS_SCHEMA)
    for a in sp["addresses"]:
        key = "%s/%s" % (space, a["address"])
        if not a["in_model"]:
            truth["not_in_model"].append(key)
        if not a["in_metrics"]:
            truth["not_in_metrics"].append(key)
        if a["metrics_plan"]:
            truth["plan_changes"].append({"address": key, "from": a["metrics_plan"], "to": a["plan"]})
    if stype == "brokered":
        ncols = dict((f.name, []) for f in NODE_SCHEMA)
        _broker_nodes(ncols, sp["infra"], space, sp["brokers"], g.clock, g.growth, g.rng, g.restart, g.acc,
                      standard=False)
        if drop is not None:
            ncols["_drop"] = drop
        g.writer.write("nodes", space, ncols, NODE_SCHEMA)


def _infra_nodes(g, infras):
    """Infrastructure nodes: shared brokers and routers (node rows under _infra)."""
    clock, growth, rng = g.clock, g.growth, g.rng
    ncols = dict((f.name, []) for f in NODE_SCHEMA)
    for name in sorted(infras):
        inf = infras[name]
        _broker_nodes(ncols, name, SHARED, inf["brokers"], clock, growth, rng, g.restart, g.acc, standard=True,
                      n_routers=len(inf["routers"]))
        ra = g.acc["router_addr"][name]
        for r, share in zip(inf["routers"], inf["router_share"]):
            conns = np.round(300 * share * len(inf["routers"]) * (1.0 + growth * clock.days)
                             * (1 + 0.3 * np.sin(2 * np.pi * (clock.days - 0.25))))
            links = g.acc["router_links"][r]
            mem = (50 * 2 ** 20 + 7 * 1024 * ra["anycast"] + 32 * 1024 * ra["queue_topic"]
                   + 120 * 1024 * conns + links * 4096 + rng.normal(0, 2 ** 20, clock.n))
            _node(ncols, clock, name, SHARED, r, "router", memory_used=mem, memory_max=2 ** 30, disk_used=None,
                  disk_max=None, connections=conns, links=links,
                  uptime=float(rng.uniform(1, 30)) * 86400e3 + (clock.t - clock.t[0]) * 1e3)
    g.writer.write("nodes", SHARED, ncols, NODE_SCHEMA)


def _growth_truth(truth, acc, start_dt, scenario):
    """Growth truth: slope of the daily mean of the expected total ingress (all infras)."""
    daily_in = acc["daily_in"]
    dkeys = sorted(daily_in)
    full = [d for d in dkeys if daily_in[d]["dt"] > 0.9 * 86400]
    truth["growth"]["daily_mean_total_ingress"] = dict(
        ((start_dt + dt.timedelta(days=int(d))).date().isoformat(), daily_in[d]["exp"] / daily_in[d]["dt"])
        for d in dkeys)
    truth["growth"]["daily_mean_total_ingress_slope_per_day"] = (
        float(np.polyfit(np.array(full, dtype=float),
                         np.array([daily_in[d]["exp"] / daily_in[d]["dt"] for d in full]), 1)[0])
        if len(full) >= 2 else None)
    truth["growth"]["total_base_ingress"] = float(sum(
        a["base"] for sp in scenario for a in sp["addresses"] if a["in_metrics"]))


def _expected():
    """The verdicts the small default scenario (3 spaces, <= 60 addresses) must get."""
    return {
        "spaces": {
            "tenant-a": {"verdict": "under-provisioned", "brokers_change": 1, "binding_resource": "credits",
                         "why": "3 hot queues of ~0.55 broker each cannot share a broker (2 sit on "
                                "prod-broker-0); and EnMasse's standard-small-partitioned-queue has 3 "
                                "partitions, never two on one broker: the credits alone need 3 brokers"},
            "tenant-b": {"verdict": "over-provisioned", "brokers_change": -2, "why": "light load on 3 brokers"},
            "tenant-c": {"verdict": "right-provisioned", "brokers_change": 0,
                         "why": "brokered: a single, moderately loaded broker"},
        },
        "infras": {
            "prod": {"verdict": "under-provisioned", "brokers_add": 1, "brokers_remove": 0,
                     "routers_change": -1},
            "edge": {"verdict": "over-provisioned", "brokers_add": 0, "brokers_remove": 2,
                     "routers_change": 0},
        },
        "moved_hot_queue_from": "prod-broker-0",
    }


def _broker_nodes(ncols, infra, scope, brokers, clock, growth, rng, restart, acc, standard, n_routers=0):
    for b in brokers:
        held = acc["broker_bytes"].get(b, np.zeros(clock.n))
        up0 = float(rng.uniform(1, 30)) * 86400e3
        uptime = up0 + (clock.t - clock.t[0]) * 1e3
        if restart and restart["node"] == b:
            after = clock.t >= restart["t"]
            uptime = np.where(after, (clock.t - restart["t"]) * 1e3, uptime)
        if standard:
            conns = np.full(clock.n, 2 * n_routers)
        else:
            conns = np.round(50 * (1.0 + growth * clock.days) * (1 + 0.3 * np.sin(2 * np.pi * (clock.days - 0.25))))
        gmax = 1 * 2 ** 30
        # AddressMemoryUsage (paged messages in memory) against GlobalMaxSize, as the collector reports
        mem = np.minimum(held + 8 * 2 ** 20 + rng.normal(0, 2 ** 20, clock.n), 0.98 * gmax)
        _node(ncols, clock, infra, scope, b, "broker", memory_used=np.maximum(mem, 0), memory_max=gmax,
              disk_used=50 * 2 ** 20 + 1.05 * held + np.abs(rng.normal(0, 2 ** 20, clock.n)),
              disk_max=20 * 2 ** 30, connections=conns, links=None, uptime=uptime)


def _address_series(g, a, sp, cols):
    """One address's samples on every node that holds it (appended to
    ``cols``), its truth entry and its share of the node accumulators."""
    clock, rng, acc = g.clock, g.rng, g.acc
    space, infra = sp["name"], sp["infra"]
    routers, rshare = sp["routers"], sp["router_share"]
    lam = rate_curve(a, clock, g.growth)
    exp_in = lam * clock.dt
    inc_in = rng.poisson(exp_in).astype(np.int64)
    exp_out = exp_in * a["egress_ratio"] * a["fanout"]
    offset = int(rng.integers(0, 10 ** 6)) if not a["idle"] else int(rng.integers(0, 10 ** 4))
    key = "%s/%s" % (space, a["address"])
    plan_in_metrics = a["metrics_plan"] or a["plan"]
    _address_truth(g, a, sp, key, exp_in, exp_out)
    ra = acc["router_addr"].get(infra) if routers else None

    if a["type"] in ("anycast", "multicast"):
        ra["anycast"] += 1
        inc_out = rng.poisson(exp_out).astype(np.int64)
        for r, pin, pout, share in zip(routers, _split(inc_in, rshare), _split(inc_out, rshare), rshare):
            links = np.full(clock.n, max(1, int(round((a["consumers"] + 2) * share))), dtype=np.int64)
            acc["router_links"][r] += links
            _arow(cols, clock, infra, space, a, plan_in_metrics, r, "router",
                  deliveries_ingress=offset + np.cumsum(pin), deliveries_egress=offset + np.cumsum(pout),
                  message_count=0, links=links, consumer_count=max(0, int(round(a["consumers"] * share))))
        return

    if ra is not None:
        ra["queue_topic"] += 1
    added, acked, depth = _stored_counters(a, clock, rng, lam, exp_in, inc_in, offset)
    size = depth * a["msg_size"]
    inc_add = np.diff(added, prepend=added[0])
    inc_ack = np.diff(acked, prepend=acked[0])
    _partition_rows(g, a, sp, cols, plan_in_metrics, added, depth, inc_add)
    tr = g.truth["addresses"][key]
    tr["size_latest"] = 0 if a["type"] == "topic" else int(size[-1])
    tr["depth_latest"] = 0 if a["type"] == "topic" else int(depth[-1])
    n_parts = len(a["brokers"])
    for r, pin, pout, share in zip(routers, _split(inc_add, rshare), _split(inc_ack, rshare), rshare):
        links = np.full(clock.n, max(1, int(round((a["consumers"] + 1) * share))) + 2 * n_parts, dtype=np.int64)
        acc["router_links"][r] += links
        _arow(cols, clock, infra, space, a, plan_in_metrics, r, "router",
              deliveries_ingress=offset + np.cumsum(pin), deliveries_egress=offset + np.cumsum(pout),
              message_count=0, links=links, consumer_count=max(0, int(round(a["consumers"] * share))))


def _address_truth(g, a, sp, key, exp_in, exp_out):
    """The address's expected daily ingress (into the accumulator) and its
    truth entry and flags."""
    clock, truth = g.clock, g.truth
    for d in np.unique(g.days_idx):
        m = g.days_idx == d
        day = g.acc["daily_in"].setdefault(int(d), {"exp": 0.0, "dt": float(clock.dt[m].sum())})
        day["exp"] += float(exp_in[m].sum())
    truth["addresses"][key] = {
        "infra": sp["infra"], "address_space": sp["name"], "type": a["type"], "plan": a["plan"],
        "ingress_avg": float(exp_in.sum() / g.total_span),
        "egress_avg": float(exp_out.sum() / g.total_span),
        "brokers": list(a["brokers"] or []), "msg_size": a["msg_size"],
    }
    for flag in ("hot", "idle", "backlog"):
        if a[flag]:
            truth[flag].append(key)
    if a["burst"]:
        truth["bursty"].append(key)


def _stored_counters(a, clock, rng, lam, exp_in, inc_in, offset):
    """(added, acknowledged, depth) of a stored address over time: idle,
    backlog (consumers slower than producers), topic (held for its
    subscriptions) or a plain queue."""
    if a["idle"]:
        depth0 = int(rng.integers(0, 200))
        added = np.full(clock.n, offset, dtype=np.int64)
        depth = np.full(clock.n, depth0, dtype=np.int64)
        acked = added - depth
    elif a["backlog"]:
        inc_out = rng.poisson(exp_in * a["egress_ratio"]).astype(np.int64)
        added = offset + np.cumsum(inc_in)
        acked = np.minimum((offset - 50) + np.cumsum(inc_out), added)
        depth = added - acked
    elif a["type"] == "topic":
        added = offset + np.cumsum(inc_in)
        acked = np.zeros(clock.n, dtype=np.int64)
        depth = rng.poisson(np.maximum(lam, 0) * 0.5).astype(np.int64)   # held for its subscriptions
    else:
        added = offset + np.cumsum(inc_in)
        depth = rng.poisson(np.maximum(lam, 0) * 0.5).astype(np.int64)
        acked = np.maximum.accumulate(added - depth)
        depth = added - acked
    return added, acked, depth


def _partition_rows(g, a, sp, cols, plan_in_metrics, added, depth, inc_add):
    """The rows of a stored address's partitions, one per broker (counters
    restart with their broker); the stored bytes go to the broker's total."""
    clock, acc, restart = g.clock, g.acc, g.restart
    space, infra, atype = sp["name"], sp["infra"], a["type"]
    brokers = a["brokers"]
    n_parts = len(brokers)
    shares = [1.0 / n_parts] * n_parts
    add_parts = _split(inc_add, shares)
    depth_parts = _split(depth, shares)
    for p, b in enumerate(brokers):
        cum_add = added[0] // n_parts + np.cumsum(add_parts[p])
        rs = restart["t"] if restart and restart["node"] == b else None
        if atype == "topic":
            # the collector's topic row: published count and AddressSize; the
            # stored messages are counted on the subscriptions' rows
            _arow(cols, clock, infra, space, a, plan_in_metrics, b, "broker",
                  messages_added=_restart_counter(cum_add, clock, rs), messages_acknowledged=0,
                  message_count=0, consumer_count=0, persistent_size=0,
                  address_size=depth_parts[p] * a["msg_size"], links=0)
            continue
        cum_ack = np.maximum.accumulate(cum_add - depth_parts[p])
        d = cum_add - cum_ack
        psize = d * a["msg_size"]
        acc["broker_bytes"][b] = acc["broker_bytes"].get(b, np.zeros(clock.n)) + psize
        consumers = 2 * len(sp["routers"]) if sp["type"] == "standard" else a["consumers"]
        _arow(cols, clock, infra, space, a, plan_in_metrics, b, "broker",
              messages_added=_restart_counter(cum_add, clock, rs),
              messages_acknowledged=_restart_counter(cum_ack, clock, rs), message_count=d,
              consumer_count=consumers, persistent_size=psize,
              address_size=(np.full(clock.n, 0) if atype != "subscription" else None), links=consumers)


def _arow(cols, clock, infra, space, a, plan, node, kind, messages_added=None, messages_acknowledged=None,
          message_count=None, consumer_count=None, persistent_size=None, address_size=None,
          deliveries_ingress=None, deliveries_egress=None, links=None):
    cols["ts"].append(clock.ts_us)
    cols["infra"].append(infra)
    cols["address_space"].append(space)
    cols["address"].append(a["address"])
    cols["address_type"].append(a["type"])
    cols["plan"].append(plan)
    cols["node"].append(node)
    cols["node_kind"].append(kind)
    cols["messages_added"].append(messages_added)
    cols["messages_acknowledged"].append(messages_acknowledged)
    cols["message_count"].append(message_count)
    cols["consumer_count"].append(consumer_count)
    cols["persistent_size"].append(persistent_size)
    cols["address_size"].append(address_size)
    cols["deliveries_ingress"].append(deliveries_ingress)
    cols["deliveries_egress"].append(deliveries_egress)
    cols["links"].append(links)


def _node(cols, clock, infra, scope, node, kind, memory_used, memory_max, disk_used, disk_max, connections, links,
          uptime):
    def arr(v):
        return np.round(v).astype(np.int64) if isinstance(v, np.ndarray) else v
    cols["ts"].append(clock.ts_us)
    cols["infra"].append(infra)
    cols["address_space"].append(scope)
    cols["node"].append(node)
    cols["node_kind"].append(kind)
    cols["memory_used"].append(arr(memory_used))
    cols["memory_max"].append(memory_max)
    cols["disk_used"].append(arr(disk_used))
    cols["disk_max"].append(disk_max)
    cols["connections"].append(arr(connections))
    cols["links"].append(arr(links))
    cols["uptime_ms"].append(arr(uptime))


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="metrics store root to write (addresses/, nodes/, truth.json)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--addresses", type=int, default=30, help="number of addresses (all spaces)")
    p.add_argument("--spaces", type=int, default=3, help="number of address spaces (>= 1)")
    p.add_argument("--days", type=float, default=2.0)
    p.add_argument("--interval", type=int, default=60, help="sample interval in seconds")
    p.add_argument("--growth", type=float, default=0.05, help="relative growth of every rate per day")
    p.add_argument("--start", default="2024-03-04", help="first day (UTC), YYYY-MM-DD")
    p.add_argument("--target-samples", type=int, default=None,
                   help="pick the number of addresses to produce about this many samples")
    a = p.parse_args(argv)
    if a.spaces < 1 or a.addresses < 1 or a.days <= 0 or a.interval <= 0:
        p.error("--spaces, --addresses, --days and --interval must be positive")
    generate(a.out, seed=a.seed, n_addresses=a.addresses, n_spaces=a.spaces, days=a.days,
             interval=a.interval, growth=a.growth, start=a.start, target_samples=a.target_samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
