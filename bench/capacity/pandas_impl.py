# -*- coding: utf-8 -*-
"""Single-process pandas version of the capacity job's aggregation, for the
benchmark: the same definitions (spark_jobs/enmasse_capacity/rules.py) as the Spark job --

* counter deltas per series (address x node) ordered by ts, Prometheus-style
  resets (counter went down or the node restarted in the interval);
* per (address, node, window): increases and covered seconds; valid when
  covered >= min_window_coverage x window;
* per (address, node kind, window): sum over nodes of increase / covered;
* per address and node kind: avg, p95, p99 (linear interpolation), max of the
  ingress, egress and in+out window rates over valid windows.

    python pandas_impl.py <metrics root> <out.json> [--window 300]

Writes the per-address statistics as JSON (to compare with the Spark plan).
"""

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd
import pyarrow.dataset as ds


def restarts_from_nodes(root):
    try:
        t = ds.dataset(root + "/nodes", format="parquet", partitioning="hive").to_table(
            columns=["ts", "infra", "node", "uptime_ms"])
    except (FileNotFoundError, ValueError):
        return {}
    n = t.to_pandas()
    n["t"] = n["ts"].astype("int64") / 1e6
    n = n.sort_values(["infra", "node", "t"])
    prev = n.groupby(["infra", "node"], sort=False)["uptime_ms"].shift()
    r = n[n["uptime_ms"] < prev]
    out = {}
    for infra, node, t, up in zip(r["infra"], r["node"], r["t"], r["uptime_ms"]):
        out.setdefault((infra, node), []).append(t - up / 1000.0)
    return out


def aggregate(root, window=300.0, max_gap=600.0, min_cov=0.5):
    t0 = time.time()
    cols = ["ts", "infra", "address", "node", "node_kind", "messages_added", "messages_acknowledged",
            "deliveries_ingress", "deliveries_egress"]
    dset = ds.dataset(root + "/addresses", format="parquet", partitioning="hive")
    tbl = dset.to_table(columns=cols + ["address_space"])
    df = tbl.to_pandas(types_mapper=None)
    del tbl
    for c in ("infra", "address_space", "address", "node", "node_kind"):
        df[c] = df[c].astype("category")
    t_read = time.time()
    router = (df["node_kind"] == "router").to_numpy()
    df["c_in"] = np.where(router, df["deliveries_ingress"], df["messages_added"])
    df["c_out"] = np.where(router, df["deliveries_egress"], df["messages_acknowledged"])
    df.drop(columns=["messages_added", "messages_acknowledged", "deliveries_ingress", "deliveries_egress"],
            inplace=True)
    df["t"] = df["ts"].astype("int64") / 1e6
    df.drop(columns=["ts"], inplace=True)
    keys = ["infra", "address_space", "address", "node"]
    df.sort_values(keys + ["t"], inplace=True, kind="stable")
    df.reset_index(drop=True, inplace=True)
    g = df.groupby(keys, sort=False, observed=True)
    p_t = g["t"].shift()
    p_in = g["c_in"].shift()
    p_out = g["c_out"].shift()
    dt = df["t"] - p_t
    ok = (p_t.notna() & (dt > 0) & (dt <= max_gap)).to_numpy()
    restarted = np.zeros(len(df), dtype=bool)
    rs = restarts_from_nodes(root)
    if rs:
        infra = df["infra"].astype(str).to_numpy()
        node = df["node"].astype(str).to_numpy()
        tt = df["t"].to_numpy()
        pt = p_t.to_numpy()
        for (i, n), times in rs.items():
            m = (infra == i) & (node == n)
            for r in times:
                restarted |= m & (pt < r) & (tt >= r)
    c_in, c_out = df["c_in"].to_numpy(), df["c_out"].to_numpy()
    inc_in = np.where(restarted | (c_in < p_in.to_numpy()), c_in, c_in - p_in.to_numpy())
    inc_out = np.where(restarted | (c_out < p_out.to_numpy()), c_out, c_out - p_out.to_numpy())
    df["inc_in"] = np.where(ok, inc_in, 0.0)
    df["inc_out"] = np.where(ok, inc_out, 0.0)
    df["dt"] = np.where(ok, dt.to_numpy(), 0.0)
    df["ws"] = np.floor(df["t"].to_numpy() / window) * window
    df.drop(columns=["c_in", "c_out", "t"], inplace=True)
    del p_t, p_in, p_out, dt, inc_in, inc_out, restarted
    t_delta = time.time()
    anw = df.groupby(keys + ["node_kind", "ws"], sort=False, observed=True).agg(
        inc_in=("inc_in", "sum"), inc_out=("inc_out", "sum"), dt=("dt", "sum")).reset_index()
    del df
    pos = anw["dt"] > 0
    anw["r_in"] = np.where(pos, anw["inc_in"] / anw["dt"].where(pos, 1.0), np.nan)
    anw["r_out"] = np.where(pos, anw["inc_out"] / anw["dt"].where(pos, 1.0), np.nan)
    anw["valid"] = anw["dt"] >= min_cov * window - 1e-9
    akw = anw.groupby(["infra", "address_space", "address", "node_kind", "ws"], sort=False, observed=True).agg(
        r_in=("r_in", "sum"), r_out=("r_out", "sum"), valid=("valid", "min")).reset_index()
    v = akw[akw["valid"]].copy()
    v["thr"] = v["r_in"] + v["r_out"]
    gk = ["infra", "address_space", "address", "node_kind"]
    gv = v.groupby(gk, sort=False, observed=True)
    stats = pd.concat({
        "in_avg": gv["r_in"].mean(), "in_p95": gv["r_in"].quantile(0.95), "in_p99": gv["r_in"].quantile(0.99),
        "in_max": gv["r_in"].max(),
        "out_avg": gv["r_out"].mean(), "out_p95": gv["r_out"].quantile(0.95),
        "out_p99": gv["r_out"].quantile(0.99), "out_max": gv["r_out"].max(),
        "thr_avg": gv["thr"].mean(), "thr_p95": gv["thr"].quantile(0.95), "thr_p99": gv["thr"].quantile(0.99),
        "thr_max": gv["thr"].max(), "windows_valid": gv["thr"].size()}, axis=1).reset_index()
    t_end = time.time()
    return stats, {"read": t_read - t0, "deltas": t_delta - t_read, "aggregate": t_end - t_delta,
                   "total": t_end - t0}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("metrics")
    p.add_argument("out")
    p.add_argument("--window", type=float, default=300.0)
    a = p.parse_args(argv)
    stats, timings = aggregate(a.metrics, a.window)
    rows = stats.to_dict(orient="records")
    with open(a.out, "w") as f:
        json.dump({"timings": timings, "rows": len(rows), "stats": rows}, f, default=str)
    print(json.dumps(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
