# -*- coding: utf-8 -*-
"""The benchmark's reference peer: the capacity job's whole aggregation in
DuckDB (one process, SQL over the same Parquet store), computing everything
``spark_jobs/enmasse_capacity/aggregate.py`` hands to the planner:

* node restarts (uptime drops) and per-window node gauges;
* counter deltas per series (address x node, ordered by time) with
  Prometheus-style resets (a counter that went down, or whose node restarted
  in the interval), gaps and duplicates;
* per (address, node, window): increases, covered seconds, rates, validity,
  gauges (last and max depth and size, last consumers, average links);
* per (address, node): throughput avg/p95/p99/max over valid windows, the
  last gauges, plan and type of the last sample, samples, resets, gaps,
  duplicates, windows;
* per (address, node kind): ingress, egress and throughput avg/p95/p99/max
  over valid windows (rates summed over the address's nodes);
* per node and window: throughput; per address space and window: ingress and
  egress of each address where it lives (the authoritative node kind).

This is a benchmark, not a second implementation used by the product: the
definitions (window, gap, coverage, reset, percentile type 7, authoritative
kind, address types, the capacity model defaults) are imported from the job's
package (``enmasse_capacity.rules``), and the output has the shape of the
job's ``--out-aggregates`` so ``run.py`` compares them value by value.

    python duckdb_impl.py <metrics root> <out.json> [--threads 2] [--memory-limit 8GB]
"""

import argparse
import json
import os
import sys
import time

import duckdb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "spark_jobs"))

from enmasse_capacity import rules as lib  # noqa: E402


def _q(s):
    return "'" + str(s).replace("'", "''") + "'"


# the per-(address, node, window) table, one CTE per step (the DuckDB peer
# of the job's main pass); each is a %-template over the names in the comment
_SAMPLES_CTE = """
          SELECT hash(infra, address_space, address) AS aid, hash(infra, node, node_kind) AS nid,
                 plan, %(types)s AS type_code, epoch_us(ts) / 1e6 AS t,
                 CASE WHEN node_kind = 'router' THEN deliveries_ingress ELSE messages_added END AS c_in,
                 CASE WHEN node_kind = 'router' THEN deliveries_egress ELSE messages_acknowledged END AS c_out,
                 message_count, coalesce(persistent_size, address_size) AS size, consumer_count, links
          FROM %(addr)s"""       # types, addr
_LAG_CTE = """
          SELECT *, lag(t) OVER w AS p_t, lag(c_in) OVER w AS p_in, lag(c_out) OVER w AS p_out
          FROM s WINDOW w AS (PARTITION BY aid, nid ORDER BY t)"""
_DELTA_CTE = """
          SELECT *, t - p_t AS dt, p_t IS NOT NULL AND t - p_t > 0 AND t - p_t <= %(max_gap)r AS ok,
                 coalesce(%(restarted)s, false) AS restarted, floor(t / %(W)r) * %(W)r AS ws
          FROM l"""             # max_gap, restarted, W
_WINDOW_SELECT = """
        SELECT aid, nid, ws,
               coalesce(sum(CASE WHEN ok THEN CASE WHEN restarted OR c_in < p_in THEN c_in ELSE c_in - p_in END
                                 END), 0) AS inc_in,
               coalesce(sum(CASE WHEN ok THEN CASE WHEN restarted OR c_out < p_out THEN c_out ELSE c_out - p_out END
                                 END), 0) AS inc_out,
               coalesce(sum(CASE WHEN ok THEN dt END), 0.0) AS dt,
               count(*) AS n,
               count(*) FILTER (WHERE ok AND (restarted OR coalesce(c_in < p_in, false)
                                             OR coalesce(c_out < p_out, false))) AS resets,
               count(*) FILTER (WHERE p_t IS NOT NULL AND dt > %(max_gap)r) AS gaps,
               count(*) FILTER (WHERE p_t IS NOT NULL AND dt <= 0) AS dups,
               arg_max_null(message_count, t) AS depth_last, max(message_count) AS depth_max,
               arg_max_null(size, t) AS size_last, max(size) AS size_max,
               arg_max_null(consumer_count, t) AS consumers_last, avg(links) AS links,
               arg_max_null(plan, t) AS plan, arg_max_null(type_code, t) AS type_code,
               min(t) AS t_first, max(t) AS t_last
        FROM d GROUP BY ALL"""  # max_gap


def _window_table_sql(addr, restarts, W, max_gap):
    """CREATE TEMP TABLE anw: per (address id, node id, window) increases,
    covered seconds, quality counts and gauges."""
    types = "CASE address_type %s END" % " ".join(
        "WHEN %s THEN %d" % (_q(t), i) for i, t in enumerate(lib.ADDRESS_TYPES))
    # the heavy steps group on 64-bit hashes, not on strings (as the job does);
    # the names come back from a small table of the distinct series
    restarted = " OR ".join(
        "(nid = hash(%s, %s, %s) AND p_t < %r AND t >= %r)" % (_q(i), _q(n), _q(k), rt, rt)
        for i, n, k, rt in restarts) or "false"
    template = ("\n        CREATE TEMP TABLE anw AS\n        WITH s AS (" + _SAMPLES_CTE + "),\n        l AS ("
                + _LAG_CTE + "),\n        d AS (" + _DELTA_CTE + ")" + _WINDOW_SELECT)
    return template % {"types": types, "addr": addr, "max_gap": max_gap, "restarted": restarted, "W": W}


def aggregate(root, threads=2, memory_limit=None, temp_dir=None):
    cm = lib.load_capacity_model({})
    W = float(cm["window_seconds"])
    con = _connect(threads, memory_limit, temp_dir)
    timings = {}
    t0 = time.time()
    addr = "read_parquet(%s, hive_partitioning=true, hive_types_autocast=false)" % _q(
        root.rstrip("/") + "/addresses/*/*/*.parquet")
    nodes_path = root.rstrip("/") + "/nodes"
    restarts, node_windows = [], []
    if os.path.isdir(nodes_path):
        restarts, node_windows = _node_pass(con, "read_parquet(%s, hive_partitioning=true, hive_types_autocast=false)"
                                            % _q(nodes_path + "/*/*/*.parquet"), W)
    timings["nodes"] = time.time() - t0
    _series_windows(con, addr, restarts, W, float(cm["max_gap_seconds"]), float(cm["min_window_coverage"]),
                    timings)
    t2 = time.time()
    address_node = _series(con)
    timings["series"] = time.time() - t2
    t3 = time.time()
    address_kind = _address_kind(con)
    timings["address_stats"] = time.time() - t3
    t4 = time.time()
    rows = con.execute("""
        SELECT infra, node, node_kind, ws, sum(r_in + r_out) FROM anw WHERE valid GROUP BY ALL""").fetchall()
    node_throughput = [dict(zip(("infra", "node", "node_kind", "ws", "thr"), r)) for r in rows]
    timings["node_throughput"] = time.time() - t4
    t5 = time.time()
    authoritative, space_windows = _space_windows(con, address_kind, address_node)
    timings["space_series"] = time.time() - t5
    totals = con.execute("SELECT sum(n), min(t_first), max(t_last), count(*) FROM anw").fetchone()
    timings["total"] = time.time() - t0
    return {
        "address_node": address_node, "address_kind": address_kind, "node_windows": node_windows,
        "node_throughput": node_throughput, "space_windows": space_windows, "authoritative": authoritative,
        "restarts": [[i, n, rt] for i, n, _k, rt in restarts],
        "totals": {"address_rows": totals[0], "t_min": totals[1], "t_max": totals[2], "series_windows": totals[3],
                   "node_rows": sum(r["n"] for r in node_windows)},
    }, timings


def _connect(threads, memory_limit, temp_dir):
    con = duckdb.connect()
    con.execute("SET threads=%d" % threads)
    con.execute("SET preserve_insertion_order=false")
    if memory_limit:
        con.execute("SET memory_limit=%s" % _q(memory_limit))
    if temp_dir:
        con.execute("SET temp_directory=%s" % _q(temp_dir))
    return con


def _node_pass(con, nodes, W):
    """Nodes: restarts [(infra, node, node_kind, t)] and per-window gauges."""
    restarts = con.execute("""
            SELECT DISTINCT infra, node, node_kind, t - uptime_ms / 1000.0 AS rt FROM (
              SELECT infra, node, node_kind, epoch_us(ts) / 1e6 AS t, uptime_ms,
                     lag(uptime_ms) OVER (PARTITION BY infra, node, node_kind ORDER BY ts) AS p_up
              FROM %s) WHERE uptime_ms < p_up ORDER BY ALL""" % nodes).fetchall()
    cols = ["infra", "address_space", "node", "node_kind", "ws", "memory_used", "memory_max", "disk_used",
            "disk_max", "connections", "links", "n"]
    rows = con.execute("""
            SELECT infra, address_space, node, node_kind, floor(epoch_us(ts) / 1e6 / %(W)r) * %(W)r AS ws,
                   avg(memory_used), max(memory_max), avg(disk_used), max(disk_max), avg(connections),
                   avg(links), count(*)
            FROM %(nodes)s GROUP BY ALL""" % {"W": W, "nodes": nodes}).fetchall()
    return restarts, [dict(zip(cols, r)) for r in rows]


def _series_windows(con, addr, restarts, W, max_gap, min_cov, timings):
    """The samples: deltas over (address, node) series, per window (table
    anw, with names, rates and validity)."""
    t1 = time.time()
    con.execute(_window_table_sql(addr, restarts, W, max_gap))
    timings["deltas_window"] = time.time() - t1
    con.execute("""
        CREATE TEMP TABLE names AS
        SELECT DISTINCT hash(infra, address_space, address) AS aid, hash(infra, node, node_kind) AS nid,
               infra, address_space, address, node, node_kind
        FROM %s""" % addr)
    timings["deltas_names"] = time.time() - t1
    con.execute("""
        CREATE TEMP TABLE anw2 AS
        SELECT n.infra, n.address_space, n.address, n.node, n.node_kind, a.* EXCLUDE (aid, nid),
               dt >= %(cov)r AS valid, CASE WHEN dt > 0 THEN inc_in / dt END AS r_in,
               CASE WHEN dt > 0 THEN inc_out / dt END AS r_out
        FROM anw a JOIN names n USING (aid, nid);
        DROP TABLE anw; ALTER TABLE anw2 RENAME TO anw""" % {"cov": min_cov * W - 1e-9})
    timings["deltas"] = time.time() - t1


def _series(con):
    """Per series (address on a node)."""
    cols = ["infra", "address_space", "address", "node", "node_kind", "thr_avg", "thr_p95", "thr_p99", "thr_max",
            "depth_last", "depth_max", "size_last", "size_max", "consumers_last", "links_last", "plan", "type_code",
            "t_last", "samples", "resets", "gaps", "dups", "windows", "windows_valid"]
    rows = con.execute("""
        SELECT infra, address_space, address, node, node_kind,
               avg(thr), quantile_cont(thr, 0.95), quantile_cont(thr, 0.99), max(thr),
               arg_max_null(depth_last, ws), max(depth_max), arg_max_null(size_last, ws), max(size_max),
               arg_max_null(consumers_last, ws), arg_max_null(links, ws), arg_max_null(plan, ws),
               arg_max_null(type_code, ws), max(t_last), sum(n), sum(resets), sum(gaps), sum(dups), count(*),
               count(*) FILTER (WHERE valid)
        FROM (SELECT *, CASE WHEN valid THEN r_in + r_out END AS thr FROM anw) GROUP BY ALL""").fetchall()
    address_node = []
    for r in rows:
        d = dict(zip(cols, r))
        d["address_type"] = lib.ADDRESS_TYPES[d.pop("type_code")] if d["type_code"] is not None else None
        address_node.append(d)
    return address_node


def _address_kind(con):
    """Per address and node kind (table akw: per window, rates summed over nodes)."""
    con.execute("""
        CREATE TEMP TABLE akw AS
        SELECT infra, address_space, address, node_kind, ws, sum(r_in) AS r_in, sum(r_out) AS r_out,
               bool_and(valid) AS valid
        FROM anw GROUP BY ALL""")
    stats = ", ".join("avg(%(c)s), quantile_cont(%(c)s, 0.95), quantile_cont(%(c)s, 0.99), max(%(c)s)" % {"c": c}
                      for c in ("vin", "vout", "vthr"))
    cols = ["infra", "address_space", "address", "node_kind"] + [
        "%s_%s" % (p, s) for p in ("in", "out", "thr") for s in ("avg", "p95", "p99", "max")] + [
        "windows", "windows_valid"]
    rows = con.execute("""
        SELECT infra, address_space, address, node_kind, %s, count(*), count(*) FILTER (WHERE valid)
        FROM (SELECT *, CASE WHEN valid THEN r_in END AS vin, CASE WHEN valid THEN r_out END AS vout,
                     CASE WHEN valid THEN r_in + r_out END AS vthr FROM akw)
        GROUP BY ALL""" % stats).fetchall()
    return [dict(zip(cols, r)) for r in rows]


def _space_windows(con, address_kind, address_node):
    """Per space and window, where each address lives: (authoritative
    [infra, space, address, kind], space windows)."""
    present = {}
    for r in address_kind:
        present.setdefault((r["infra"], r["address_space"], r["address"]), set()).add(r["node_kind"])
    types_of = dict(((r["infra"], r["address_space"], r["address"]), r["address_type"]) for r in address_node)
    authoritative = []
    for key, kinds in sorted(present.items()):
        authoritative.append(list(key) + [lib.authoritative_kind(types_of.get(key), kinds)])
    con.execute("CREATE TEMP TABLE auth (infra VARCHAR, address_space VARCHAR, address VARCHAR, node_kind VARCHAR)")
    con.executemany("INSERT INTO auth VALUES (?, ?, ?, ?)", [a for a in authoritative if a[3]])
    rows = con.execute("""
        SELECT infra, address_space, ws, sum(r_in), sum(r_out), count(*)
        FROM akw JOIN auth USING (infra, address_space, address, node_kind) WHERE valid GROUP BY ALL""").fetchall()
    space_windows = [dict(zip(("infra", "address_space", "ws", "r_in", "r_out", "addresses"), r)) for r in rows]
    return authoritative, space_windows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("metrics")
    p.add_argument("out")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--memory-limit", help="DuckDB memory_limit, e.g. 8GB (default: DuckDB's, 80%% of RAM)")
    p.add_argument("--temp-dir", help="where DuckDB spills")
    a = p.parse_args(argv)
    doc, timings = aggregate(a.metrics, a.threads, a.memory_limit, a.temp_dir)
    doc["timings"] = timings
    with open(a.out, "w") as f:
        json.dump(doc, f, default=str)
    print(json.dumps(timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
