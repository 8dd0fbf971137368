# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Incremental planning (``--incremental``; docs/capacity-planning.md,
"Incremental runs"; docs/day2-design.md section 6).

Per (series, day) the job keeps mergeable aggregates under
``<store>/_aggregates/v1/`` (or ``--aggregates-dir``/v1): one Parquet table per kind of aggregate,
partitioned by ``day=YYYY-MM-DD`` (``series``: per address and node;
``kind``: per address and node kind; ``akw``: per address, node kind and
window, for the per-space series; ``nthr``: per node and window), and per
day a JSON file of the node gauges (``nodes/day=YYYY-MM-DD.json``).
Percentiles are ``histogram``'s (sorted bucket indices: they merge by
concatenation). ``state.json`` records what they were made from: the
aggregation's parameters (window, gap, coverage, percentile method, the
histogram's buckets), the store schema, the id salt, the node restarts and,
per day, a fingerprint of that day's input files (paths, sizes, mtimes).

A run recomputes a day when it is new, when its files changed (late
samples), when the day before it was recomputed (its first counter delta
spans midnight) or when a node restart not known before falls in it or the
day before; everything when the parameters changed or the state is missing
or unreadable (with a warning saying why). The other days' aggregates are
read back and merged with the recomputed ones.

The pure parts (``day_fingerprints``, ``load_state``, ``days_to_compute``,
``parameters``) have no Spark.
"""

from __future__ import absolute_import, division, print_function

import datetime as _dt
import hashlib
import json
import os

from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import SCHEMAS

from . import histogram
from .rules import InputError

VERSION = 1
DAY = 86400
TABLES = ("series", "kind", "akw", "nthr")
# per series: the values of the newest window (merged by the window index)
LAST = ("depth_last", "size_last", "consumers_last", "links_last", "meta")


# ================================================================ pure parts

def aggregates_dir(base):
    """Where the aggregates of this layout version live under ``base``
    (``--aggregates-dir``, default ``<store>/_aggregates``)."""
    return os.path.join(base, "v%d" % VERSION)


def default_base(store):
    return os.path.join(store[len("file://"):] if store.startswith("file://") else store, "_aggregates")


def parameters(cm, infra=None, salt=0):
    """What the stored aggregates depend on besides the samples: a change
    recomputes every day."""
    return {"version": VERSION, "infra": infra, "window_seconds": float(cm["window_seconds"]),
            "max_gap_seconds": float(cm["max_gap_seconds"]),
            "min_window_coverage": float(cm["min_window_coverage"]),
            "percentile_method": cm["percentile_method"],
            "histogram": [histogram.GAMMA, histogram.MIN_VALUE, histogram.ZERO_BUCKET],
            "schema": hashlib.sha256(json.dumps(SCHEMAS, sort_keys=True).encode()).hexdigest()[:16],
            "salt": salt}


def day_fingerprints(root):
    """{day: fingerprint} of the address and node files of a local store
    (the ``date=`` partitions): a fingerprint changes when a file of that
    day is added, removed, rewritten or grows."""
    days = {}
    for kind in ("addresses", "nodes"):
        base = os.path.join(root, kind)
        for d, _unused, fs in os.walk(base):
            rel = os.path.relpath(d, base)
            part = rel.split(os.sep)[0]
            if not part.startswith("date="):
                continue
            for f in fs:
                if f.startswith((".", "_")):
                    continue
                st = os.stat(os.path.join(d, f))
                days.setdefault(part[len("date="):], []).append(
                    "%s/%s/%s:%d:%d" % (kind, rel, f, st.st_size, st.st_mtime_ns))
    return dict((day, hashlib.sha256("\n".join(sorted(v)).encode()).hexdigest()[:24]) for day, v in days.items())


def load_state(path):
    """(state, None) or (None, why it cannot be used)."""
    if not os.path.exists(path):
        return None, "no state file %s (first incremental run): aggregating every day" % path
    try:
        with open(path) as f:
            st = json.load(f)
        if not isinstance(st, dict) or not isinstance(st.get("days"), dict) \
                or not isinstance(st.get("parameters"), dict) or not isinstance(st.get("restarts"), list):
            raise ValueError("not a state document (days, parameters, restarts)")
        for day, fp in st["days"].items():
            _dt.date.fromisoformat(day)
            if not isinstance(fp, str):
                raise ValueError("day %s: fingerprint %r" % (day, fp))
    except (OSError, ValueError) as e:
        return None, "state file %s is unreadable (%s): aggregating every day" % (path, e)
    return st, None


def _day_of(t):
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).date().isoformat()


def _next_day(day):
    return (_dt.date.fromisoformat(day) + _dt.timedelta(days=1)).isoformat()


def days_to_compute(state, fingerprints, params, restarts):
    """(days to aggregate, stored days to keep, why, or None for "only what
    changed"). ``restarts``: [(nid, t)] of the whole store now."""
    present = set(fingerprints)
    if state is None:
        return sorted(present), [], None
    if state["parameters"] != params:
        changed = sorted(k for k in set(params) | set(state["parameters"])
                         if params.get(k) != state["parameters"].get(k))
        return sorted(present), [], "the aggregation's parameters changed (%s): aggregating every day" % \
            ", ".join(changed)
    changed = set(d for d in present if state["days"].get(d) != fingerprints[d])
    # a changed day (its last sample) changes the next day's first counter delta
    todo = changed | set(_next_day(d) for d in changed)
    known = set((int(n), float(t)) for n, t in state["restarts"])
    for nid, t in restarts:
        if (int(nid), float(t)) not in known:
            # the samples after the restart: that day's, and the next day's first one
            todo.update((_day_of(t), _next_day(_day_of(t))))
    todo &= present
    keep = sorted(present - todo)
    return sorted(todo), keep, None


def last_days(fingerprints, n):
    """The fingerprints of the last ``n`` days (rounded up) of the store, or all
    of them when ``n`` is None or 0."""
    if not n:
        return fingerprints
    days = sorted(fingerprints)[-int(-(-n // 1)):]
    return dict((d, fingerprints[d]) for d in days)


def check_options(args, cm):
    """InputError for what incremental runs do not support (yet)."""
    if args.start or args.end:
        raise InputError("--incremental plans over whole days of the store: --start and --end are not supported "
                         "with it (--days N: the last N days)")
    if "://" in args.metrics and not args.metrics.startswith("file://"):
        raise InputError("--incremental needs a local store path (it keeps its aggregates in "
                         "<store>/_aggregates); %s is not one" % args.metrics)
    if (args.aggregates_dir or "").find("://") >= 0 and not args.aggregates_dir.startswith("file://"):
        raise InputError("--aggregates-dir must be a local directory")
    if DAY % float(cm["window_seconds"]):
        raise InputError("--incremental needs window_seconds dividing a day (86400); got %s" % cm["window_seconds"])
    if cm["percentile_method"] != "histogram":
        raise InputError("--incremental needs percentile_method: histogram (the only percentiles that merge "
                         "across days); got %s" % cm["percentile_method"])


def write_state(path, params, fingerprints, restarts, watermark):
    doc = {"parameters": params, "days": fingerprints,
           "restarts": sorted([int(n), float(t)] for n, t in restarts),
           "watermark": watermark, "written": _dt.datetime.now(_dt.timezone.utc).isoformat()}
    tmp = path + ".%d.tmp" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ================================================================ Spark

def _day_col(F, W):
    """The UTC day of a window (the session's time zone is UTC)."""
    return F.from_unixtime((F.col("wi") * F.lit(W)).cast("long"), "yyyy-MM-dd")


def _hist_list(F, c):
    return F.sort_array(F.collect_list(histogram.spark_bucket(F.col(c))))


def day_series(anw, W):
    """Per (address, node, day): the mergeable parts of ``_series_stats``."""
    from pyspark.sql import functions as F
    a = anw.withColumns({"thr": F.when(F.col("valid"), F.col("r_in") + F.col("r_out")), "day": _day_col(F, W)})
    return a.groupBy("aid", "nid", "day").agg(
        F.sum("thr").alias("thr_sum"), F.count("thr").alias("thr_n"), F.max("thr").alias("thr_max"),
        _hist_list(F, "thr").alias("thr_b"), F.max("kind").alias("kind"), F.max("wi").alias("wi_last"),
        F.max_by("depth_last", "wi").alias("depth_last"), F.max("depth_max").alias("depth_max"),
        F.max_by("size_last", "wi").alias("size_last"), F.max("size_max").alias("size_max"),
        F.max_by("consumers_last", "wi").alias("consumers_last"), F.max_by("links", "wi").alias("links_last"),
        F.max_by("meta", "wi").alias("meta"), F.min("t_first").alias("t_first"), F.max("t_last").alias("t_last"),
        F.sum("n").alias("samples"), F.sum("resets").alias("resets"), F.sum("gaps").alias("gaps"),
        F.sum("dups").alias("dups"), F.count(F.lit(1)).alias("windows"),
        F.sum(F.col("valid").cast("int")).alias("windows_valid"), F.sum("bad").alias("bad"))


def merged_series(ds):
    """``_series_stats``'s rows from the per-day parts."""
    from pyspark.sql import functions as F
    from .aggregate import _pct_finish
    m = ds.groupBy("aid", "nid").agg(
        (F.sum("thr_sum") / F.sum("thr_n")).alias("thr_avg"), F.max("thr_max").alias("thr_max"),
        F.sort_array(F.flatten(F.collect_list("thr_b"))).alias("thr_p"), F.max("kind").alias("kind"),
        *[F.max_by(c, "wi_last").alias(c) for c in LAST],
        F.max("depth_max").alias("depth_max"), F.max("size_max").alias("size_max"),
        F.min("t_first").alias("t_first"), F.max("t_last").alias("t_last"),
        *[F.sum(c).alias(c) for c in ("samples", "resets", "gaps", "dups", "windows", "windows_valid", "bad")])
    return _pct_finish(m, ("thr",), "histogram")


def day_kind(akw, W):
    """Per (address, node kind, day): the mergeable parts of ``_address_kind_stats``."""
    from pyspark.sql import functions as F
    a = akw.withColumns({"in": F.when(F.col("valid") == 1, F.col("r_in")),
                         "out": F.when(F.col("valid") == 1, F.col("r_out")),
                         "thr": F.when(F.col("valid") == 1, F.col("r_in") + F.col("r_out")), "day": _day_col(F, W)})
    aggs = [F.count(F.lit(1)).alias("windows"), F.sum("valid").alias("windows_valid")]
    for c in ("in", "out", "thr"):
        aggs += [F.sum(c).alias(c + "_sum"), F.count(c).alias(c + "_n"), F.max(c).alias(c + "_max"),
                 _hist_list(F, c).alias(c + "_b")]
    return a.groupBy("aid", "kind", "day").agg(*aggs)


def merged_kind(dk):
    from pyspark.sql import functions as F
    from .aggregate import _pct_finish
    aggs = [F.sum("windows").alias("windows"), F.sum("windows_valid").alias("windows_valid")]
    for c in ("in", "out", "thr"):
        aggs += [(F.sum(c + "_sum") / F.sum(c + "_n")).alias(c + "_avg"), F.max(c + "_max").alias(c + "_max"),
                 F.sort_array(F.flatten(F.collect_list(c + "_b"))).alias(c + "_p")]
    return _pct_finish(dk.groupBy("aid", "kind").agg(*aggs), ("in", "out", "thr"), "histogram")


def write_days(spark, root, tables, pool):
    """Replace the ``day=`` partitions of each table {name: DataFrame with
    a ``day`` column} by the DataFrame's (other days untouched); the tables
    are written by the threads of ``pool`` (Spark runs their jobs side by
    side)."""
    base = aggregates_dir(root)
    prev = spark.conf.get("spark.sql.sources.partitionOverwriteMode")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")

    def write(item):
        name, df = item
        df.write.mode("overwrite").partitionBy("day").parquet(os.path.join(base, name))
    try:
        list(pool.map(write, sorted(tables.items())))
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", prev)


def read_days(spark, root, name, days):
    from pyspark.sql import functions as F
    path = os.path.join(aggregates_dir(root), name)
    return spark.read.parquet(path).where(F.col("day").isin(*days))


def write_node_day(root, day, doc):
    d = os.path.join(aggregates_dir(root), "nodes")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "day=%s.json" % day)
    with open(p + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(p + ".tmp", p)


def read_node_day(root, day):
    with open(os.path.join(aggregates_dir(root), "nodes", "day=%s.json" % day)) as f:
        return json.load(f)


def clear(root):
    """Remove every stored aggregate (a full recomputation replaces them all)."""
    import shutil
    d = aggregates_dir(root)
    for name in TABLES + ("nodes",):
        shutil.rmtree(os.path.join(d, name), ignore_errors=True)


# ================================================================ the run

def _plan_days(spark, addresses, nodes, local, store, params, days, warnings):
    """The days to aggregate and those to read from the stored aggregates;
    clears the stored ones (with a warning saying why) when every day is
    recomputed. Returns (addresses, nodes, restarts, todo, keep, why, fps, state path)."""
    from pyspark.sql import functions as F
    from . import aggregate as ag
    state_path = os.path.join(aggregates_dir(local), "state.json")
    fps = last_days(day_fingerprints(store), days)
    os.makedirs(aggregates_dir(local), exist_ok=True)
    state, why = load_state(state_path)
    if days and fps:
        first = min(fps)
        addresses = addresses.where(F.col("date") >= first)
        if nodes is not None:
            nodes = nodes.where(F.col("date") >= first)
    restarts = ag._node_restarts(spark, nodes, 0)
    todo, keep, why_all = days_to_compute(state, fps, params, [(r[0], r[4]) for r in restarts])
    if state is not None and not why_all:
        missing = [d for d in keep if not os.path.exists(os.path.join(aggregates_dir(local), "nodes",
                                                                      "day=%s.json" % d))]
        if missing:
            why = "stored aggregates of %s are missing: aggregating every day" % ", ".join(missing)
            todo, keep = sorted(fps), []
    why = why or why_all
    if why:
        warnings.append("incremental: " + why)
        clear(local)
    return addresses, nodes, restarts, todo, keep, why, fps, state_path


def _compute_days(spark, addresses, nodes, restarts, todo, local, cm, adaptive_partitions, timings):
    """Aggregates the days ``todo`` (counter deltas with the margin before
    each day, the node pass) and writes their per-day aggregates."""
    import time
    from concurrent.futures import ThreadPoolExecutor
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from . import aggregate as ag
    W = float(cm["window_seconds"])
    max_gap = float(cm["max_gap_seconds"])
    t1 = time.time()
    prev = [(_dt.date.fromisoformat(d) - _dt.timedelta(days=1)).isoformat() for d in todo]
    a = addresses.where(F.col("date").isin(*sorted(set(todo) | set(prev))))
    if adaptive_partitions:
        # from what this run reads, not the whole store
        spark.conf.set("spark.sql.shuffle.partitions",
                       str(max(2 * spark.sparkContext.defaultParallelism, a.rdd.getNumPartitions())))
    a = a.where(F.date_format("ts", "yyyy-MM-dd").isin(*todo)
                | F.date_format((F.col("ts").cast("double") + F.lit(max_gap)).cast("timestamp"),
                                "yyyy-MM-dd").isin(*todo))
    anw = ag._series_windows(spark, a, restarts, 0, W, max_gap, float(cm["min_window_coverage"]))
    # the margin before a day gives its first delta; its own windows belong to the day before
    anw = anw.where(_day_col(F, W).isin(*todo))
    anw.persist(StorageLevel.MEMORY_AND_DISK)
    akw = ag._address_kind_windows(anw).withColumn("day", _day_col(F, W))
    akw.persist(StorageLevel.MEMORY_AND_DISK)
    n_day = nodes.where(F.col("date").isin(*todo)) if nodes is not None else None
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            node_f = pool.submit(ag._node_pass, spark, n_day, W, 0)
            nthr = (anw.where(F.col("valid")).groupBy("nid", "wi")
                    .agg(F.sum(F.col("r_in") + F.col("r_out")).alias("thr"))
                    .withColumn("day", _day_col(F, W)))
            write_days(spark, local, {"series": day_series(anw, W), "kind": day_kind(akw, W), "akw": akw,
                                      "nthr": nthr}, pool)
            windows, _n, names = node_f.result()
    finally:
        akw.unpersist()
        anw.unpersist()
    timings["deltas"] = time.time() - t1
    t2 = time.time()
    per_day = dict((d, {"node_windows": [], "node_rows": 0, "names": []}) for d in todo)
    for w in windows:
        e = per_day[_day_of(w["ws"])]
        e["node_windows"].append(w)
        e["node_rows"] += w["n"]
    for h, key in names.items():
        for e in per_day.values():
            e["names"].append([h] + list(key))
    for d, e in per_day.items():
        write_node_day(local, d, e)
    timings["nodes"] += time.time() - t2


def _merge_days(spark, addresses, days, local, W, out, node_names, timings):
    """Reads the stored aggregates of ``days`` into ``out``: node windows and
    names, merged series, per-kind rows and node throughput (returned as
    (series, ak_rows, nthr_rows))."""
    import time
    from concurrent.futures import ThreadPoolExecutor
    from . import aggregate as ag
    from .ids import _add_name
    t3 = time.time()
    out["node_windows"], out["totals"]["node_rows"] = [], 0
    for d in days:
        e = read_node_day(local, d)
        out["node_windows"].extend(e["node_windows"])
        out["totals"]["node_rows"] += e["node_rows"]
        for h, i, n, k in e["names"]:
            _add_name(node_names, h, (i, n, k))
    with ThreadPoolExecutor(max_workers=2) as pool:
        ak_f = pool.submit(lambda: merged_kind(read_days(spark, local, "kind", days)).collect())
        nthr_f = pool.submit(lambda: read_days(spark, local, "nthr", days).collect())
        series = merged_series(read_days(spark, local, "series", days)).collect()
        ak_rows, nthr = ak_f.result(), nthr_f.result()
    if not series:
        raise InputError("metrics store: no address samples")
    if any(r["bad"] for r in series):
        raise InputError("metrics store: address samples are invalid: "
                         + "; ".join(ag._invalid_addresses(addresses)))
    timings["merge"] = time.time() - t3
    return series, ak_rows, [{"nid": r["nid"], "ws": r["wi"] * W, "thr": r["thr"]} for r in nthr]


def aggregate_incremental(spark, root, addresses, nodes, cm, warnings, known_addresses=(), known_plans=(),
                          on_phase=None, adaptive_partitions=False, base=None, infra=None, days=None):
    """``aggregate.aggregate``'s result from the stored per-day aggregates
    and those of the days that need it (``days_to_compute``), over the whole
    store (``addresses``, ``nodes``: every sample). Writes the recomputed
    days' aggregates and then ``state.json``. Adds what it did to
    ``out["incremental"]`` and the reason of a full recomputation to
    ``warnings``."""
    import time
    from pyspark.sql import functions as F
    from . import aggregate as ag
    from . import rules as lib
    from .ids import _Collision, _add_name
    on_phase = on_phase or (lambda name: None)
    t0 = time.time()
    store = root[len("file://"):] if root.startswith("file://") else root
    local = base or default_base(root)
    if local.startswith("file://"):
        local = local[len("file://"):]
    W = float(cm["window_seconds"])
    params = parameters(cm, infra)
    if infra:
        addresses = addresses.where(F.col("infra") == infra)
        if nodes is not None:
            nodes = nodes.where(F.col("infra") == infra)
        known_addresses = [k for k in known_addresses if k[0] == infra]
    on_phase("aggregate: node restarts, days to aggregate")
    addresses, nodes, restarts, todo, keep, why, fps, state_path = _plan_days(
        spark, addresses, nodes, local, store, params, days, warnings)
    timings = {"nodes": time.time() - t0}
    out = {"totals": {}, "incremental": {"aggregated_days": todo, "stored_days": keep, "full": bool(why)}}
    node_names = {}
    try:
        for nid, infra, node, kind, _t in restarts:
            _add_name(node_names, nid, (infra, node, kind))
        if todo:
            on_phase("aggregate: counter deltas of %d day(s)" % len(todo))
            _compute_days(spark, addresses, nodes, restarts, todo, local, cm, adaptive_partitions, timings)
        days = sorted(set(todo) | set(keep))
        on_phase("aggregate: merge %d day(s)" % len(days))
        series, ak_rows, nthr_rows = _merge_days(spark, addresses, days, local, W, out, node_names, timings)
        addr_names, more_nodes, plan_names, timings["names"] = ag._names(
            spark, addresses, 0, series, node_names, known_addresses, known_plans, time.time())
        node_names.update(more_nodes)
        if any(node_names[r["nid"]][2] not in lib.NODE_KINDS for r in series):
            raise InputError("metrics store: address samples are invalid: "
                             + "; ".join(ag._invalid_addresses(addresses)))
        ag._named_results(out, series, ak_rows, restarts, addr_names, node_names, plan_names)
        out["node_throughput"] = ag._named_throughput(nthr_rows, node_names)
        t5 = time.time()
        ag._space_series(spark, read_days(spark, local, "akw", days), out, addr_names, W)
        timings["space_series"] = time.time() - t5
    except _Collision:
        raise InputError("incremental: two names share a 64-bit id; run without --incremental")
    out["timings"] = timings
    write_state(state_path, params, fps, [(r[0], r[4]) for r in restarts],
                _dt.datetime.fromtimestamp(out["totals"]["t_max"], _dt.timezone.utc).isoformat())
    return out
