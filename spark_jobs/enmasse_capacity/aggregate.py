# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Spark aggregation of the capacity job.

``aggregate(spark, addresses, nodes, cm, ...)`` does all the Spark work and
returns small, collected, aggregated results (plain dicts and lists) that
``planner.Planner`` turns into the plan: counter deltas with window functions,
per-window rates, exact, histogram or approximate percentiles, node gauges and restarts,
per-space series. The heavy stages group on 64-bit ids, never on strings;
names are attached at the end (``_resolve``).
"""

from __future__ import absolute_import, division, print_function

import time
from concurrent.futures import ThreadPoolExecutor

from . import histogram
from . import rules as lib
from .ids import META_BITS, _add_name, _Collision, _h, _meta, _plan_key, _resolve, _small_df
from .read import ADDRESS_NONNEG, NODE_NONNEG
from .records import Fields, interned
from .rules import InputError


def _pct_expr(col, method, ps=(0.95, 0.99)):
    """Aggregate giving the percentiles' *input*: exact: the sorted values
    (collect_list + sort_array: the typed ordering, not array_sort's
    interpreted comparator; finished by ``_pct_finish``); histogram: the
    sorted bucket indices of ``histogram`` (the histogram as a multiset;
    finished by ``_pct_finish`` with the buckets' values); approx:
    percentile_approx (accuracy 10000) directly."""
    from pyspark.sql import functions as F
    if method == "exact":
        return F.sort_array(F.collect_list(col))
    if method == "histogram":
        return F.sort_array(F.collect_list(histogram.spark_bucket(F.col(col))))
    return F.percentile_approx(col, list(ps), 10000)


def _pct_finish(df, prefixes, method, ps=(0.95, 0.99)):
    """Exact percentiles from sorted arrays, as capacity_lib.percentile
    defines them: h = (n - 1) p; x[floor h] + (h - floor h)(x[ceil h] - x[floor h]);
    histogram: the same with x[i] the value of the i-th sorted bucket
    (``histogram.percentile``)."""
    from pyspark.sql import functions as F
    if method not in ("exact", "histogram"):
        return df
    fin = histogram.spark_value if method == "histogram" else (lambda c: c)
    for pre in prefixes:
        xs = F.col(pre + "_p")
        n = F.size(xs)
        vals = []
        for p in ps:
            h = (n - 1) * F.lit(p)
            lo = F.floor(h)
            hi = F.ceil(h)
            a = fin(F.element_at(xs, (lo + 1).cast("int")))
            b = fin(F.element_at(xs, (hi + 1).cast("int")))
            vals.append(F.when(n > 0, a + (h - lo) * (b - a)))
        df = df.withColumn(pre + "_p", F.array(*vals))
    return df


def _stats(df, keys, cols, method, *more):
    """Per ``keys``: avg, percentiles (``_pct_expr``, finished) and max of
    each of ``cols`` (<col>_avg, <col>_p, <col>_max), and the aggregates
    ``more``. Two aggregations joined on the keys: the lists (or sketches)
    of the percentiles need Spark's interpreted object aggregation, which
    evaluates every aggregate of its row interpreted; everything else stays
    in a code-generated one."""
    from pyspark.sql import functions as F
    scalars = []
    for c in cols:
        scalars += [F.avg(c).alias(c + "_avg"), F.max(c).alias(c + "_max")]
    lists = _pct_finish(df.groupBy(*keys).agg(*[_pct_expr(c, method).alias(c + "_p") for c in cols]),
                        cols, method)
    return df.groupBy(*keys).agg(*(scalars + list(more))).join(lists, list(keys))


KINDS = ("broker", "router")        # index = the integer code the heavy stages use


def _invalid_addresses(addresses):
    """The detailed message for invalid address samples (only run when the
    main pass flagged some rows: it groups on strings, which is slow)."""
    from pyspark.sql import functions as F
    neg = [F.sum(F.when(F.col(c) < 0, 1).otherwise(0)).alias("neg_" + c) for c in ADDRESS_NONNEG]
    v = addresses.agg(
        F.sum(F.when(F.col("ts").isNull(), 1).otherwise(0)).alias("null_ts"),
        F.sum(F.when(F.col("address").isNull() | F.col("node").isNull() | F.col("infra").isNull()
                     | F.col("address_space").isNull(), 1).otherwise(0)).alias("null_ids"),
        F.sum(F.when(~F.col("node_kind").isin(*lib.NODE_KINDS) | F.col("node_kind").isNull(), 1)
              .otherwise(0)).alias("bad_kind"),
        F.sum(F.when(~F.col("address_type").isin(*lib.ADDRESS_TYPES) | F.col("address_type").isNull(), 1)
              .otherwise(0)).alias("bad_type"),
        F.collect_set(F.when(~F.col("node_kind").isin(*lib.NODE_KINDS), F.col("node_kind"))).alias("kinds"),
        F.collect_set(F.when(~F.col("address_type").isin(*lib.ADDRESS_TYPES), F.col("address_type")))
        .alias("types"), *neg).collect()[0].asDict()
    problems = []
    negs = dict((c, v["neg_" + c]) for c in ADDRESS_NONNEG if v["neg_" + c])
    if negs:
        problems.append("negative values (counters, gauges and therefore rates must be >= 0): %s"
                        % ", ".join("%s in %d row(s)" % kv for kv in sorted(negs.items())))
    if v["null_ts"]:
        problems.append("%d row(s) without ts" % v["null_ts"])
    if v["null_ids"]:
        problems.append("%d row(s) without infra, address_space, address or node" % v["null_ids"])
    if v["bad_kind"]:
        problems.append("node_kind must be broker or router; found %s in %d row(s)"
                        % (", ".join(repr(k) for k in sorted(v["kinds"])) or "null", v["bad_kind"]))
    if v["bad_type"]:
        problems.append("address_type must be one of %s; found %s in %d row(s)"
                        % (", ".join(lib.ADDRESS_TYPES), ", ".join(repr(k) for k in sorted(v["types"])) or "null",
                           v["bad_type"]))
    return problems


def _row_is_bad(F):
    """True for a row the planner cannot use: a negative counter or gauge, no
    time, a missing name or an unknown address type (``type_code`` null)."""
    bad = F.col("ts").isNull() | F.col("type_code").isNull()
    for c in ("infra", "address_space", "address", "node", "node_kind"):
        bad = bad | F.col(c).isNull()
    # an unknown node_kind is part of the node id: found when the ids are named
    for c in ADDRESS_NONNEG:
        bad = bad | F.coalesce(F.col(c) < 0, F.lit(False))
    return bad


def _node_restarts(spark, nodes, salt):
    """Node restarts (an uptime drop), one small query: [(nid, infra, node,
    node_kind, t)], t the restart time in epoch seconds. The main pass needs
    them before it starts; everything else about the nodes (``_node_pass``)
    runs beside it."""
    from pyspark.sql import functions as F
    from pyspark.sql import Window
    if nodes is None:
        return []
    key = ("infra", "node", "node_kind")
    n2 = nodes.select(*key, F.col("ts").cast("double").alias("t"), "uptime_ms")
    n2 = n2.repartition(2 * spark.sparkContext.defaultParallelism, *key)
    n2 = n2.withColumn("p_up", F.lag("uptime_ms").over(Window.partitionBy(*key).orderBy("t")))
    rows = (n2.where(F.col("uptime_ms") < F.col("p_up"))
            .select(_h(F, salt, *key).alias("nid"), *key, (F.col("t") - F.col("uptime_ms") / 1000.0).alias("rt"))
            .distinct().collect())
    return sorted((r["nid"], r["infra"], r["node"], r["node_kind"], r["rt"]) for r in rows)


def _node_pass(spark, nodes, W, salt):
    """Node samples (small): validation and per-window gauges in one action.
    Returns (node windows as dicts, node sample count, {nid: (infra, node,
    node_kind)})."""
    from pyspark.sql import functions as F
    if nodes is None:
        return [], 0, {}
    key = ("infra", "node", "node_kind")
    n2 = nodes.select("infra", "address_space", "node", "node_kind", _h(F, salt, *key).alias("nid"),
                      (F.floor(F.col("ts").cast("double") / W) * W).alias("ws"),
                      "memory_used", "memory_max", "disk_used", "disk_max", "connections", "links",
                      *[F.when(F.col(c) < 0, 1).otherwise(0).alias("neg_" + c) for c in NODE_NONNEG])
    rows = n2.groupBy("infra", "address_space", "node", "node_kind", "ws").agg(
        F.first("nid").alias("nid"),
        F.avg("memory_used").alias("memory_used"), F.max("memory_max").alias("memory_max"),
        F.avg("disk_used").alias("disk_used"), F.max("disk_max").alias("disk_max"),
        F.avg("connections").alias("connections"), F.avg("links").alias("links"),
        F.count(F.lit(1)).alias("n"),
        *[F.sum("neg_" + c).alias("neg_" + c) for c in NODE_NONNEG]).collect()
    nnegs = {}
    for r in rows:
        for c in NODE_NONNEG:
            if r["neg_" + c]:
                nnegs[c] = nnegs.get(c, 0) + r["neg_" + c]
    if nnegs:
        raise InputError("metrics store: node samples are invalid: negative values in %s"
                         % ", ".join("%s in %d row(s)" % kv for kv in sorted(nnegs.items())))
    bad_kind = sum(r["n"] for r in rows if r["node_kind"] not in lib.NODE_KINDS)
    if bad_kind:
        raise InputError("metrics store: node samples are invalid: node_kind must be broker or router "
                         "(%d row(s))" % bad_kind)
    windows = []
    names = {}
    for r in rows:
        d = r.asDict()
        for c in NODE_NONNEG:
            d.pop("neg_" + c)
        _add_name(names, d.pop("nid"), (d["infra"], d["node"], d["node_kind"]))
        windows.append(d)
    return windows, sum(r["n"] for r in rows), names


def aggregate(spark, addresses, nodes, cm, infra_filter=None, adaptive_partitions=False,
              known_addresses=(), known_plans=(), salt=0, on_phase=None):
    """All Spark work. Returns a dict of small, aggregated, collected results.

    One pass over the address samples does the heavy work: counter deltas (a
    window function over the series, keyed by two 64-bit ids, ordered by time)
    and per-window aggregation, with every validity check folded in as one
    flag. Everything after works on the per-window table (samples / 5 rows at
    the defaults) and on numbers; names are attached at the end from the model
    (``known_addresses``: (infra, address_space, address); ``known_plans``)
    and the node samples, with a filtered scan for anything they do not name.

    ``adaptive_partitions``: set spark.sql.shuffle.partitions from the size of
    the input (two shuffle partitions per input split, at least two per core).

    ``on_phase(name)`` is called as each step starts (progress reporting)."""
    from pyspark.sql import functions as F
    on_phase = on_phase or (lambda name: None)

    out = {"totals": {}}
    timings = {}
    t0 = time.time()
    if infra_filter:
        addresses = addresses.where(F.col("infra") == infra_filter)
        if nodes is not None:
            nodes = nodes.where(F.col("infra") == infra_filter)
        known_addresses = [k for k in known_addresses if k[0] == infra_filter]
    if adaptive_partitions:
        par = spark.sparkContext.defaultParallelism
        spark.conf.set("spark.sql.shuffle.partitions",
                       str(max(2 * par, addresses.rdd.getNumPartitions())))

    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            return _aggregate(spark, pool, addresses, nodes, cm, known_addresses, known_plans, salt,
                              infra_filter, out, timings, t0, on_phase)
        except _Collision:
            pass
    if salt >= 5:
        raise RuntimeError("64-bit id collisions with 6 salts; this should not happen")
    return aggregate(spark, addresses, nodes, cm, None, adaptive_partitions, known_addresses, known_plans,
                     salt + 1, on_phase)


def _aggregate(spark, pool, addresses, nodes, cm, known_addresses, known_plans, salt, infra_filter, out, timings,
               t0, on_phase):
    """The body of ``aggregate``. Small independent pieces run on ``pool``
    beside the heavy stages (the node gauges beside the main pass; the name
    scan and the per-node throughput beside the per-address statistics):
    Spark runs jobs from several threads at once, and a second job fills the
    cores a stage's last tasks leave idle."""
    from pyspark import StorageLevel

    W = float(cm["window_seconds"])
    method = cm["percentile_method"]
    # ---- nodes: restarts first (the main pass needs them); the gauges and
    #      their validation run beside the main pass ----------------------------
    on_phase("aggregate: node restarts")
    node_f = pool.submit(_node_pass, spark, nodes, W, salt)
    restarts = _node_restarts(spark, nodes, salt)
    node_names = _restart_names(restarts)
    timings["nodes"] = time.time() - t0

    # ---- the one pass: deltas over (address, node) series, per window ------
    on_phase("aggregate: counter deltas and per-series statistics (node gauges beside)")
    t1 = time.time()
    anw = _series_windows(spark, addresses, restarts, salt, W, float(cm["max_gap_seconds"]),
                          float(cm["min_window_coverage"]))
    anw.persist(StorageLevel.MEMORY_AND_DISK)
    series = _series_stats(anw, method).collect()
    timings["deltas"] = time.time() - t1
    akw = None
    pending = []
    try:
        # node samples are checked before address samples, as they always were
        out["node_windows"], out["totals"]["node_rows"], names_n = node_f.result()
        for h, key in names_n.items():
            _add_name(node_names, h, key)
        _check_series(series, addresses, infra_filter)

        # ---- beside the per-address statistics: names (from the model and the
        #      node samples; a filtered scan for the rest) and per-node throughput
        names_f = pool.submit(_names, spark, addresses, salt, series, node_names, known_addresses, known_plans,
                              time.time())
        pending.append(names_f)
        nthr_f = pool.submit(_node_throughput, anw, W, time.time())
        pending.append(nthr_f)

        # ---- per address and node kind: window rates summed over nodes ----
        on_phase("aggregate: per-address statistics (names and node throughput beside)")
        t3 = time.time()
        akw = _address_kind_windows(anw)
        akw.persist(StorageLevel.MEMORY_AND_DISK)
        ak_rows = _address_kind_stats(akw, method).collect()
        timings["address_stats"] = time.time() - t3

        addr_names, more_nodes, plan_names, timings["names"] = names_f.result()
        node_names.update(more_nodes)
        if any(node_names[r["nid"]][2] not in lib.NODE_KINDS for r in series):
            raise InputError("metrics store: address samples are invalid: "
                             + "; ".join(_invalid_addresses(addresses)))
        _named_results(out, series, ak_rows, restarts, addr_names, node_names, plan_names)

        nthr_rows, timings["node_throughput"] = nthr_f.result()
        out["node_throughput"] = _named_throughput(nthr_rows, node_names)

        on_phase("aggregate: per-space series")
        t5 = time.time()
        _space_series(spark, akw, out, addr_names, W)
        timings["space_series"] = time.time() - t5
        out["timings"] = timings
        return out
    finally:
        _release(pending, akw, anw)


def _restart_names(restarts):
    """{node id: (infra, node, node_kind)} of the restarted nodes."""
    node_names = {}
    for nid, infra, node, kind, _t in restarts:
        _add_name(node_names, nid, (infra, node, kind))
    return node_names


def _check_series(series, addresses, infra_filter):
    """InputError when there are no address samples, or invalid ones (then
    with the detailed message of ``_invalid_addresses``)."""
    if not series:
        raise InputError("metrics store: no address samples in the selected range%s"
                         % (" for infra %r" % infra_filter if infra_filter else ""))
    if any(r["bad"] for r in series):
        raise InputError("metrics store: address samples are invalid: "
                         + "; ".join(_invalid_addresses(addresses)))


def _named_throughput(nthr_rows, node_names):
    """The per-node throughput rows with the node's names."""
    rows = []
    for r in nthr_rows:
        infra, node, kind = node_names[r["nid"]]
        rows.append({"infra": infra, "node": node, "node_kind": kind, "ws": r["ws"], "thr": r["thr"]})
    return rows


def _release(pending, akw, anw):
    """Wait for the side jobs (nothing may still read the cached tables),
    then drop the cached tables."""
    for f in pending:
        try:
            f.result()
        except Exception:
            pass
    if akw is not None:
        akw.unpersist()
    anw.unpersist()


def _samples(addresses, salt):
    """The address samples narrowed to what the main pass reads: the two ids,
    ``meta``, the time, the two counters and the gauges, hash-partitioned by
    address."""
    from pyspark.sql import functions as F
    # string columns are compared through one hash each (the literal side is
    # folded to a constant): cheaper per row than up to six string comparisons
    router = F.col("hk") == F.xxhash64(F.lit("router"))
    type_code = F.coalesce(*[F.when(F.col("ht") == F.xxhash64(F.lit(t)), F.lit(i))
                             for i, t in enumerate(lib.ADDRESS_TYPES)])
    a = (addresses.withColumns({"hk": F.xxhash64("node_kind"), "ht": F.xxhash64("address_type")})
         .withColumn("type_code", type_code)).select(
        _h(F, salt, "infra", "address_space", "address").alias("aid"),
        _h(F, salt, "infra", "node", "node_kind").alias("nid"),
        _meta(F, salt, F.col("type_code"), F.when(router, 1).otherwise(0),
              F.when(_row_is_bad(F), 1).otherwise(0)).alias("meta"),
        F.col("ts").cast("double").alias("t"),
        F.when(router, F.col("deliveries_ingress")).otherwise(F.col("messages_added")).alias("c_in"),
        F.when(router, F.col("deliveries_egress")).otherwise(F.col("messages_acknowledged")).alias("c_out"),
        "message_count", F.coalesce("persistent_size", "address_size").alias("size"), "consumer_count", "links")
    # hash-partitioned by address once: the window (address, node), the
    # per-window table and every later grouping by address reuse it, so the
    # samples are shuffled once and nothing downstream is shuffled again
    return a.repartition("aid")


def _restarted(spark, a, restarts):
    """(a, expression): true for a sample whose node restarted since the
    previous sample of its series (``a`` gains the restart times by a
    broadcast join when there are many)."""
    from pyspark.sql import functions as F
    rs = {}
    for nid, _i, _n, _k, rt in restarts:
        rs.setdefault(nid, []).append(float(rt))
    if rs and sum(len(v) for v in rs.values()) <= 256:
        # few restarts (the usual case): a plain boolean expression, code-generated, no join
        restarted = F.lit(False)
        for nid, times in sorted(rs.items()):
            for rt in times:
                restarted = restarted | ((F.col("nid") == F.lit(nid)) & (F.col("p_t") < F.lit(rt))
                                         & (F.col("t") >= F.lit(rt)))
        restarted = F.coalesce(restarted, F.lit(False))
    elif rs:
        import pyarrow as pa
        rdf = _small_df(spark, sorted(rs.items()), [("nid", pa.int64()), ("restarts", pa.list_(pa.float64()))])
        a = a.join(F.broadcast(rdf), ["nid"], "left")
        restarted = F.coalesce(F.exists("restarts", lambda r: (r > F.col("p_t")) & (r <= F.col("t"))),
                               F.lit(False))
    else:
        restarted = F.lit(False)
    return a, restarted


def _series_windows(spark, addresses, restarts, salt, W, max_gap, min_cov):
    """The per-window table of every (address, node) series: counter deltas
    (a window function over the series, ordered by time), rates, gauges,
    quality counts and the validity flag. Not yet cached."""
    from pyspark.sql import functions as F
    from pyspark.sql import Window
    a = _samples(addresses, salt)
    # the series are ordered by (window index, time), the same order as by
    # time alone: the per-window aggregation below then groups on a prefix of
    # the window's sort order and Spark runs it as one streaming, code-generated
    # sort aggregation instead of a partial and a final hash aggregation (the
    # window index is an integer: a floating-point key would be normalised and
    # stop the two aggregations from being combined)
    a = a.withColumn("wi", F.floor(F.col("t") / W))
    w = Window.partitionBy("aid", "nid").orderBy("wi", "t")
    # (withColumns: one analysis of the plan, not one per column)
    a = a.withColumns({"p_t": F.lag("t").over(w), "p_in": F.lag("c_in").over(w), "p_out": F.lag("c_out").over(w)})
    a, restarted = _restarted(spark, a, restarts)
    dt = F.col("t") - F.col("p_t")
    ok = F.col("p_t").isNotNull() & (dt > 0) & (dt <= max_gap)
    drop_in = F.col("c_in") < F.col("p_in")
    drop_out = F.col("c_out") < F.col("p_out")
    a = a.withColumn("restarted", restarted)
    inc_in = F.when(F.col("restarted") | drop_in, F.col("c_in")).otherwise(F.col("c_in") - F.col("p_in"))
    inc_out = F.when(F.col("restarted") | drop_out, F.col("c_out")).otherwise(F.col("c_out") - F.col("p_out"))
    reset = F.col("restarted") | F.coalesce(drop_in, F.lit(False)) | F.coalesce(drop_out, F.lit(False))
    # the node kind is part of the node id (nid), so it is the same for every
    # sample of a series: taken from the aggregated meta, not grouped on
    kind = F.shiftright("meta", 1).bitwiseAND(1).cast("int")
    anw = a.groupBy("aid", "nid", "wi").agg(
        F.coalesce(F.sum(F.when(ok, inc_in)), F.lit(0)).alias("inc_in"),
        F.coalesce(F.sum(F.when(ok, inc_out)), F.lit(0)).alias("inc_out"),
        F.coalesce(F.sum(F.when(ok, dt)), F.lit(0.0)).alias("dt"),
        F.count(F.lit(1)).alias("n"),
        F.sum(F.when(ok & reset, 1).otherwise(0)).alias("resets"),
        F.sum(F.when(F.col("p_t").isNotNull() & (dt > max_gap), 1).otherwise(0)).alias("gaps"),
        F.sum(F.when(F.col("p_t").isNotNull() & (dt <= 0), 1).otherwise(0)).alias("dups"),
        F.max_by("message_count", "t").alias("depth_last"), F.max("message_count").alias("depth_max"),
        F.max_by("size", "t").alias("size_last"), F.max("size").alias("size_max"),
        F.max_by("consumer_count", "t").alias("consumers_last"), F.avg("links").alias("links"),
        F.max_by("meta", "t").alias("meta"), F.min("t").alias("t_first"), F.max("t").alias("t_last"),
        F.sum(F.col("meta").bitwiseAND(1)).alias("bad"))
    # the window stays an integer index (ws = wi * W) in the cached table: the
    # later groupings by window are then integer-keyed too
    return (anw.withColumns({"kind": kind, "valid": F.col("dt") >= (min_cov * W - 1e-9),
                             "r_in": F.when(F.col("dt") > 0, F.col("inc_in") / F.col("dt")),
                             "r_out": F.when(F.col("dt") > 0, F.col("inc_out") / F.col("dt"))})
            # the cache keeps only what later stages read
            .drop("inc_in", "inc_out", "dt"))


def _series_stats(anw, method):
    """Per series (address on a node): totals, validity, gauges, quality."""
    from pyspark.sql import functions as F
    # grouped on (aid, nid), a prefix of the cached table's order (aid, nid,
    # wi): with replaceHashWithSortAgg Spark streams it as a sort aggregation
    # (the kind is the same for every window of a series)
    return _stats(anw.withColumn("thr", F.when(F.col("valid"), F.col("r_in") + F.col("r_out"))),
                  ("aid", "nid"), ("thr",), method, F.max("kind").alias("kind"),
                  F.max_by("depth_last", "wi").alias("depth_last"), F.max("depth_max").alias("depth_max"),
                  F.max_by("size_last", "wi").alias("size_last"), F.max("size_max").alias("size_max"),
                  F.max_by("consumers_last", "wi").alias("consumers_last"), F.max_by("links", "wi").alias("links_last"),
                  F.max_by("meta", "wi").alias("meta"), F.min("t_first").alias("t_first"),
                  F.max("t_last").alias("t_last"), F.sum("n").alias("samples"),
                  F.sum("resets").alias("resets"), F.sum("gaps").alias("gaps"), F.sum("dups").alias("dups"),
                  F.count(F.lit(1)).alias("windows"), F.sum(F.col("valid").cast("int")).alias("windows_valid"),
                  F.sum("bad").alias("bad"))


def _names(spark, addresses, salt, series, node_names, known_addresses, known_plans, t):
    """Names of the series' address, node and plan ids (nodes with node
    samples are named already): (addresses, nodes, plans, seconds since ``t``)."""
    from pyspark.sql import functions as F
    first = dict((r["aid"], r["t_first"]) for r in series)
    a_ = _resolve(spark, addresses, salt, ("infra", "address_space", "address"), known_addresses,
                  set(first), times=first)
    # nodes with node samples are named already (their ids came from Spark)
    first = dict((r["nid"], r["t_first"]) for r in series if r["nid"] not in node_names)
    n_ = _resolve(spark, addresses, salt, ("infra", "node", "node_kind"), (), set(first), times=first)
    # a series' plan is that of its last sample
    last = dict((r["meta"] >> META_BITS, r["t_last"]) for r in series)
    last.pop(0, None)
    p_ = _resolve(spark, addresses, salt, ("plan",), [(p,) for p in known_plans], set(last),
                  idf=lambda: _plan_key(F, salt), times=last)
    return a_, n_, p_, time.time() - t


def _node_throughput(anw, W, t):
    """Per node and window: the summed valid rates (rows, seconds since ``t``)."""
    from pyspark.sql import functions as F
    nthr = (anw.where(F.col("valid")).groupBy("nid", "wi")
            .agg(F.sum(F.col("r_in") + F.col("r_out")).alias("thr"))
            .select("nid", (F.col("wi") * F.lit(W)).alias("ws"), "thr"))
    return nthr.collect(), time.time() - t


def _address_kind_windows(anw):
    """Per address, node kind and window: rates summed over the nodes."""
    from pyspark.sql import functions as F
    return anw.groupBy("aid", "kind", "wi").agg(
        F.sum("r_in").alias("r_in"), F.sum("r_out").alias("r_out"),
        F.min(F.col("valid").cast("int")).alias("valid"))


def _address_kind_stats(akw, method):
    """Per address and node kind: statistics of the valid windows' rates."""
    from pyspark.sql import functions as F
    return _stats(akw.withColumns({"in": F.when(F.col("valid") == 1, F.col("r_in")),
                                   "out": F.when(F.col("valid") == 1, F.col("r_out")),
                                   "thr": F.when(F.col("valid") == 1, F.col("r_in") + F.col("r_out"))}),
                  ("aid", "kind"), ("in", "out", "thr"), method,
                  F.count(F.lit(1)).alias("windows"), F.sum("valid").alias("windows_valid"))


def _named_results(out, series, ak_rows, restarts, addr_names, node_names, plan_names):
    """The collected rows with their names instead of ids: restarts, totals,
    address_node (per series) and address_kind, into ``out``."""
    out["restarts"] = [(i, n, t) for _h_, i, n, _k, t in restarts]
    out["totals"].update({
        "address_rows": sum(r["samples"] for r in series),
        "t_min": min(r["t_first"] for r in series), "t_max": max(r["t_last"] for r in series),
        "series_windows": sum(r["windows"] for r in series)})
    an_fields = ak_fields = None
    out["address_node"] = []
    for r in series:
        d = _flatten_p(r.asDict())
        infra, space, address = addr_names[d.pop("aid")]
        _i, node, kind = node_names[d.pop("nid")]
        meta = d.pop("meta")
        plan_key = meta >> META_BITS
        for k in ("kind", "bad", "t_first"):
            d.pop(k)
        d.update({"infra": infra, "address_space": space, "address": address, "node": node,
                  "node_kind": kind, "plan": plan_names[plan_key][0] if plan_key else None,
                  "address_type": lib.ADDRESS_TYPES[(meta >> 2) & 7]})
        an_fields = an_fields or Fields(sorted(d))
        out["address_node"].append(an_fields.record(interned(d[k]) for k in an_fields.names))
    out["address_kind"] = []
    for r in ak_rows:
        d = _flatten_p(r.asDict())
        infra, space, address = addr_names[d.pop("aid")]
        d.update({"infra": infra, "address_space": space, "address": address,
                  "node_kind": KINDS[d.pop("kind")]})
        ak_fields = ak_fields or Fields(sorted(d))
        out["address_kind"].append(ak_fields.record(interned(d[k]) for k in ak_fields.names))


def _space_series(spark, akw, out, addr_names, W):
    """Per space and window: ingress/egress of each address, measured where
    it lives (brokers for stored addresses, routers for direct ones): sets
    ``out["authoritative"]`` and ``out["space_windows"]``."""
    from pyspark.sql import functions as F
    import pyarrow as pa
    present = {}
    for r in out["address_kind"]:
        present.setdefault((r["infra"], r["address_space"], r["address"]), set()).add(r["node_kind"])
    types = dict(((r["infra"], r["address_space"], r["address"]), r["address_type"])
                 for r in out["address_node"])
    aid_of = dict((v, k) for k, v in addr_names.items())
    spaces = sorted(set(k[:2] for k in present))
    space_ix = dict((s, i) for i, s in enumerate(spaces))
    out["authoritative"] = {}
    auth_rows = []
    for key, ks in sorted(present.items()):
        kind = lib.authoritative_kind(types.get(key), ks)
        out["authoritative"][key] = kind
        if kind:
            auth_rows.append((aid_of[key], KINDS.index(kind), space_ix[key[:2]]))
    adf = _small_df(spark, auth_rows, [("aid", pa.int64()), ("kind", pa.int32()), ("sp", pa.int32())])
    sw = (akw.where(F.col("valid") == 1).join(F.broadcast(adf), ["aid", "kind"])
          .groupBy("sp", "wi").agg(F.sum("r_in").alias("r_in"), F.sum("r_out").alias("r_out"),
                                   F.count(F.lit(1)).alias("addresses"))
          .withColumn("ws", F.col("wi") * F.lit(W)))
    out["space_windows"] = []
    for r in sw.collect():
        infra, space = spaces[r["sp"]]
        out["space_windows"].append({"infra": infra, "address_space": space, "ws": r["ws"],
                                     "r_in": r["r_in"], "r_out": r["r_out"], "addresses": r["addresses"]})


def _flatten_p(d):
    for k in list(d):
        if k.endswith("_p"):
            vals = d.pop(k)
            base = k[:-2]
            d[base + "_p95"], d[base + "_p99"] = (vals[0], vals[1]) if vals else (None, None)
    return d
