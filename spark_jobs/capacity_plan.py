#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capacity plan for an enmasse.messaging infrastructure, from its own metrics.

    python capacity_plan.py --metrics /var/lib/enmasse/metrics --model model.yml \\
        [--capacity-model capacity.yml] [--out-plan plan.json] [--out-report report.html] \\
        [--master local[*] | spark://host:7077 | k8s://https://...]

Reads the metrics store (docs/metrics-schema.md), aggregates it with Spark
(counter deltas with window functions, per-window rates, exact or approximate
percentiles), collects only aggregated rows to the driver, and plans there with
the collection's own rules (plugins/module_utils: plans, placement, model):
quota, first-fit placement, routers needed. Writes a JSON plan and a
self-contained HTML report, both atomically, only when everything succeeded.
Exit status: 0 ok, 2 bad input (message on stderr), 1 unexpected failure.
See docs/capacity-planning.md.
"""

from __future__ import absolute_import, division, print_function

# --------------------------------------------------------------------------
# import shim: the collection's module_utils, wherever the job runs from
#   1. installed collection: ansible_collections.enmasse.messaging...
#   2. capacity_planner role: module_utils copied next to the job as enmasse_mu/
#   3. a source checkout: <collection root>/spark_jobs/capacity_plan.py
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def _import_module_utils():
    try:
        from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement, plans, documents, validation
        return placement, plans, documents, validation
    except ImportError:
        pass
    try:
        from enmasse_mu import placement, plans, model
        return placement, plans, model
    except ImportError:
        pass
    root = os.path.dirname(_HERE)
    if not os.path.isfile(os.path.join(root, "plugins", "module_utils", "model", "placement.py")):
        raise ImportError("capacity_plan: cannot import the collection's module_utils (placement, plans, "
                          "model): install the enmasse.messaging collection or put module_utils next to "
                          "this job as the package enmasse_mu/")
    import types
    for name, path in (("ansible_collections", None), ("ansible_collections.enmasse", None),
                       ("ansible_collections.enmasse.messaging", root)):
        mod = sys.modules.get(name)
        if mod is None:
            try:
                if path is None:
                    __import__(name)
                    continue
            except ImportError:
                pass
            mod = types.ModuleType(name)
            mod.__path__ = [path] if path else []
            sys.modules[name] = mod
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, mod)
        elif path and path not in list(mod.__path__):
            mod.__path__.append(path)
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement, plans, documents, validation
    return placement, plans, documents, validation


placement, plans, documents, validation = _import_module_utils()
# --------------------------------------------------------------------------

import argparse  # noqa: E402
import datetime as _dt  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
import traceback  # noqa: E402

import capacity_lib as lib  # noqa: E402
from capacity_lib import InputError  # noqa: E402

SCHEMA_VERSION = 1
EPS = 1e-9

ADDRESS_REQUIRED = ("ts", "infra", "address_space", "address", "address_type", "plan", "node", "node_kind",
                    "messages_added", "messages_acknowledged", "message_count")
ADDRESS_OPTIONAL = {"consumer_count": "int", "persistent_size": "bigint", "address_size": "bigint",
                    "deliveries_ingress": "bigint", "deliveries_egress": "bigint", "links": "int"}
NODE_REQUIRED = ("ts", "infra", "address_space", "node", "node_kind", "memory_used", "uptime_ms")
NODE_OPTIONAL = {"memory_max": "bigint", "disk_used": "bigint", "disk_max": "bigint", "connections": "int",
                 "links": "int"}
ADDRESS_NONNEG = ("messages_added", "messages_acknowledged", "message_count", "consumer_count",
                  "persistent_size", "address_size", "deliveries_ingress", "deliveries_egress", "links")
NODE_NONNEG = ("memory_used", "memory_max", "disk_used", "disk_max", "connections", "links", "uptime_ms")
INTEGRAL_TYPES = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")
SHARED = "_infra"


# ============================================================== input model

def load_model(path, catalogue_extra=None):
    """The address spaces, addresses, plans and current placement in force.

    Returns (spaces, catalogue, current_placement) with spaces normalised and
    validated by the collection's model rules (every violation at once)."""
    doc = lib.load_structured_file(path, "model")
    if not isinstance(doc, dict):
        raise InputError("model file %s: must be a mapping with address_spaces (a list)" % path)
    unknown = set(doc) - {"infra", "address_spaces", "plans", "current_placement"}
    if unknown:
        raise InputError("model file %s: unknown keys %s (known: infra, address_spaces, plans, "
                         "current_placement)" % (path, ", ".join(sorted(unknown))))
    try:
        catalogue = plans.Catalogue.from_data(doc.get("plans") or catalogue_extra)
    except plans.PlanError as e:
        raise InputError("model file %s: plans: %s" % (path, e))
    raw_spaces = doc.get("address_spaces")
    if not isinstance(raw_spaces, list) or not raw_spaces:
        raise InputError("model file %s: address_spaces must be a non-empty list" % path)
    default_infra = doc.get("infra") or "default"
    errors = []
    spaces = []
    seen = set()
    for i, raw in enumerate(raw_spaces):
        if not isinstance(raw, dict):
            errors.append("address_spaces[%d]: must be a mapping" % i)
            continue
        raw = dict(raw)
        infra = raw.pop("infra", None) or default_infra
        addresses = raw.pop("addresses", None) or []
        sp = documents.normalize_address_space(raw)
        where = "address_spaces[%d](%s)" % (i, sp.get("name"))
        errors.extend(validation.validate_address_space(sp, catalogue, field=where))
        addrs = [documents.normalize_address(a, sp.get("name")) for a in addresses]
        for a in addrs:
            if isinstance(a, dict):
                a.pop("address_space", None)
                a.pop("name", None)
        if not errors or all(not e.startswith(where) for e in errors):
            errors.extend("%s.%s" % (where, e) for e in
                          validation.validate_addresses(sp, addrs, catalogue, check_quota=False))
        if sp.get("name") in seen:
            errors.append("%s.name: %r is listed twice" % (where, sp.get("name")))
        seen.add(sp.get("name"))
        sp["infra"] = infra
        sp["addresses"] = addrs
        spaces.append(sp)
    if errors:
        raise InputError("model file %s: %d problem(s): %s" % (path, len(errors), "; ".join(errors)))
    current = {}
    cp = doc.get("current_placement") or {}
    if not isinstance(cp, dict):
        raise InputError("model file %s: current_placement must be a mapping" % path)
    names = dict((s["name"], set(a["address"] for a in s["addresses"])) for s in spaces)
    for k, v in cp.items():
        if isinstance(v, dict):
            for addr, brokers in v.items():
                current[(k, addr)] = _broker_list(path, "%s/%s" % (k, addr), brokers)
        else:
            if "/" not in k:
                raise InputError("model file %s: current_placement key %r must be <space>/<address> or a "
                                 "space name mapping addresses to brokers" % (path, k))
            space, addr = k.split("/", 1)
            current[(space, addr)] = _broker_list(path, k, v)
    for (space, addr) in current:
        if space not in names:
            raise InputError("model file %s: current_placement names address space %r which is not in "
                             "address_spaces" % (path, space))
    return spaces, catalogue, current


def _broker_list(path, key, v):
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(b, str) and b for b in v):
        raise InputError("model file %s: current_placement[%s]: %r must be a list of broker ids" % (path, key, v))
    return list(v)


# ================================================================== Spark

def _spark_session(args):
    from pyspark.sql import SparkSession
    b = SparkSession.builder.master(args.master).appName(args.app_name)
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "true",
        # splits small enough that every core stays busy to the end of a stage
        "spark.sql.files.maxPartitionBytes": "16m",
        # a batch job: the throughput collector, and JIT for the large
        # generated aggregation methods (a --conf of the same key replaces it)
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC -XX:-DontCompileHugeMethods",
        "spark.executor.extraJavaOptions": "-XX:+UseParallelGC -XX:-DontCompileHugeMethods",
        # per-address collect_list/percentile groups stay in the hash map
        # instead of falling back to sorting after 128 groups
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "1000000",
    }
    if args.driver_memory:
        conf["spark.driver.memory"] = args.driver_memory
    if args.shuffle_partitions:
        conf["spark.sql.shuffle.partitions"] = str(args.shuffle_partitions)
    for kv in args.conf or []:
        if "=" not in kv:
            raise InputError("--conf %r must be key=value" % kv)
        k, v = kv.split("=", 1)
        conf[k] = v
    for k, v in conf.items():
        b = b.config(k, v)
    existing = SparkSession.getActiveSession()
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel(args.log_level)
    return spark, existing is None


def _is_local_path(p):
    return "://" not in p or p.startswith("file://")


def _local(p):
    return p[len("file://"):] if p.startswith("file://") else p


def _has_data_files(path):
    for d, _, fs in os.walk(path):
        for f in fs:
            if not f.startswith((".", "_")):
                return True
    return False


def precheck_store(root):
    """Fail fast, before Spark starts, when a local store is missing or empty."""
    if not _is_local_path(root):
        return
    lp = _local(root)
    if not os.path.isdir(lp):
        raise InputError("metrics store %s does not exist (expected a directory with addresses/ and nodes/, "
                         "see docs/metrics-schema.md)" % root)
    if not _has_data_files(os.path.join(lp, "addresses")):
        raise InputError("metrics store %s is empty: no Parquet files under %s/addresses (expected "
                         "addresses/date=YYYY-MM-DD/address_space=<name>/*.parquet, see docs/metrics-schema.md)"
                         % (root, root.rstrip("/")))


def read_kind(spark, root, kind, required, optional, must_exist=True):
    """Read <root>/<kind> (Parquet, partitioned). Clear InputError when the
    store is missing, empty or lacks columns; optional columns missing are
    added as nulls (and reported)."""
    from pyspark.sql import functions as F
    from pyspark.errors import AnalysisException
    path = root.rstrip("/") + "/" + kind
    if _is_local_path(path):
        if not _has_data_files(_local(path)):
            if not must_exist:
                return None, []
            raise InputError("metrics store %s is empty: no Parquet files under %s (expected %s/date=YYYY-MM-DD/"
                             "address_space=<name>/*.parquet, see docs/metrics-schema.md)" % (root, path, path))
    try:
        df = spark.read.option("basePath", path).parquet(path)
    except AnalysisException as e:
        if not must_exist:
            return None, []
        raise InputError("metrics store %s: cannot read %s samples at %s: %s"
                         % (root, kind, path, str(e).splitlines()[0]))
    cols = dict((f.name, f.dataType.simpleString()) for f in df.schema.fields)
    label = {"addresses": "address", "nodes": "node"}.get(kind, kind)
    missing = [c for c in required if c not in cols]
    if missing:
        raise InputError("metrics store %s: %s samples lack required column(s) %s (have: %s); see "
                         "docs/metrics-schema.md" % (root, label, ", ".join(missing), ", ".join(sorted(cols))))
    if not cols["ts"].startswith("timestamp"):
        raise InputError("metrics store %s: %s column ts has type %s, expected a timestamp (UTC)"
                         % (root, label, cols["ts"]))
    bad_types = []
    for c in list(required) + list(optional):
        if c in cols and c not in ("ts", "infra", "address_space", "address", "address_type", "plan", "node",
                                   "node_kind", "date") and cols[c] not in INTEGRAL_TYPES:
            bad_types.append("%s (%s)" % (c, cols[c]))
    if bad_types:
        raise InputError("metrics store %s: %s columns must be integers: %s" % (root, label, ", ".join(bad_types)))
    absent = []
    for c, t in optional.items():
        if c not in cols:
            df = df.withColumn(c, F.lit(None).cast(t))
            absent.append(c)
    return df, absent


def _time_filter(df, start, end):
    """Keep [start, end); the date= partition column prunes whole directories."""
    from pyspark.sql import functions as F
    by_date = "date" in df.columns
    if start is not None:
        df = df.where(F.col("ts") >= F.lit(start))
        if by_date:
            df = df.where(F.col("date") >= start.date().isoformat())
    if end is not None:
        df = df.where(F.col("ts") < F.lit(end))
        if by_date:
            df = df.where(F.col("date") <= end.date().isoformat())
    return df


def _pct_expr(col, method, ps=(0.95, 0.99)):
    """Aggregate giving the percentiles' *input*: exact: the sorted values
    (collect_list + array_sort; finished by ``_pct_finish``); approx:
    percentile_approx (accuracy 10000) directly."""
    from pyspark.sql import functions as F
    if method == "exact":
        return F.array_sort(F.collect_list(col))
    return F.percentile_approx(col, list(ps), 10000)


def _pct_finish(df, prefixes, method, ps=(0.95, 0.99)):
    """Exact percentiles from sorted arrays, as capacity_lib.percentile
    defines them: h = (n - 1) p; x[floor h] + (h - floor h)(x[ceil h] - x[floor h])."""
    from pyspark.sql import functions as F
    if method != "exact":
        return df
    for pre in prefixes:
        xs = F.col(pre + "_p")
        n = F.size(xs)
        vals = []
        for p in ps:
            h = (n - 1) * F.lit(p)
            lo = F.floor(h)
            hi = F.ceil(h)
            a = F.element_at(xs, (lo + 1).cast("int"))
            b = F.element_at(xs, (hi + 1).cast("int"))
            vals.append(F.when(n > 0, a + (h - lo) * (b - a)))
        df = df.withColumn(pre + "_p", F.array(*vals))
    return df


def _small_df(spark, rows, fields):
    """A DataFrame from a Python list through Arrow (no Python worker
    processes, unlike a plain createDataFrame): ``fields`` [(name, pyarrow type)]."""
    import pyarrow as pa
    cols = list(zip(*rows)) if rows else [()] * len(fields)
    return spark.createDataFrame(pa.table([pa.array(list(c), type=t) for c, (_n, t) in zip(cols, fields)],
                                          names=[n for n, _t in fields]))


KINDS = ("broker", "router")        # index = the integer code the heavy stages use


class _Collision(Exception):
    """Two different names gave the same 64-bit id: run again with another salt."""


def _h(F, salt, *cols):
    return F.xxhash64(F.lit(salt), *cols)


META_BITS = 5


def _plan_key(F, salt, col="plan"):
    """The plan's id inside ``meta``: its hash without the low META_BITS bits
    (0 when there is no plan)."""
    return F.when(F.col(col).isNotNull(), F.shiftright(_h(F, salt, col), META_BITS)).otherwise(F.lit(0).cast("long"))


def _meta(F, salt, type_code, kind, bad):
    """Everything per sample that is not a number, packed in one long so the
    shuffled rows stay narrow: bit 0 row invalid, bit 1 router, bits 2-4
    address type code (7: unknown), bits 5-63 the plan key."""
    return (F.shiftleft(_plan_key(F, salt), META_BITS)
            .bitwiseOR(F.shiftleft(F.coalesce(type_code, F.lit(7)).cast("long"), 2))
            .bitwiseOR(F.shiftleft(kind.cast("long"), 1))
            .bitwiseOR(bad.cast("long")))


def _resolve(spark, addresses, salt, cols, candidates, needed, idf=None, times=None):
    """Names of the 64-bit ids ``needed`` (xxhash64 of ``cols`` with ``salt``).

    The candidates (from the model and the node samples) are hashed on a tiny
    DataFrame; ids they do not explain are looked up in the store with a
    filtered scan that decodes strings only for the matching rows. ``times``
    (id -> the time of one sample carrying it) narrows that scan first to the
    samples at those instants, in their date partitions; a full scan is left
    for anything still unnamed. The big stages therefore never group or sort
    on strings. Raises _Collision when two names share an id."""
    from pyspark.sql import functions as F
    idf = idf or (lambda: _h(F, salt, *cols))
    names = {}
    cands = sorted(set(tuple(c) for c in candidates or ()))
    if cands:
        import pyarrow as pa
        cdf = _small_df(spark, cands, [(c, pa.string()) for c in cols])
        for r in cdf.select(idf().alias("h"), *cols).collect():
            _add_name(names, r["h"], tuple(r[c] for c in cols))
    missing = [h for h in needed if h not in names]
    hint = sorted(set(times[h] for h in missing if h in (times or {})))
    scans = []
    if hint:
        narrow = addresses.where(F.col("ts").cast("double").isin(hint))
        if "date" in addresses.columns:
            narrow = narrow.where(F.col("date").isin(sorted(set(
                _dt.datetime.fromtimestamp(t, _dt.timezone.utc).date().isoformat() for t in hint))))
        scans.append(narrow)
    scans.append(addresses)
    for df in scans:
        if not missing:
            break
        hx = idf()
        for r in df.where(hx.isin(missing)).select(hx.alias("h"), *cols).distinct().collect():
            _add_name(names, r["h"], tuple(r[c] for c in cols))
        missing = [h for h in missing if h not in names]
    return names


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


def _add_name(names, h, key):
    """Record id -> name; two names for one id is a collision."""
    if names.setdefault(h, key) != key:
        raise _Collision()


def aggregate(spark, addresses, nodes, cm, infra_filter=None, adaptive_partitions=False,
              known_addresses=(), known_plans=(), salt=0):
    """All Spark work. Returns a dict of small, aggregated, collected results.

    One pass over the address samples does the heavy work: counter deltas (a
    window function over the series, keyed by two 64-bit ids, ordered by time)
    and per-window aggregation, with every validity check folded in as one
    flag. Everything after works on the per-window table (samples / 5 rows at
    the defaults) and on numbers; names are attached at the end from the model
    (``known_addresses``: (infra, address_space, address); ``known_plans``)
    and the node samples, with a filtered scan for anything they do not name.

    ``adaptive_partitions``: set spark.sql.shuffle.partitions from the size of
    the input (two shuffle partitions per input split, at least two per core)."""
    from pyspark.sql import functions as F

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
                              infra_filter, out, timings, t0)
        except _Collision:
            pass
    if salt >= 5:
        raise RuntimeError("64-bit id collisions with 6 salts; this should not happen")
    return aggregate(spark, addresses, nodes, cm, None, adaptive_partitions, known_addresses, known_plans,
                     salt + 1)


def _aggregate(spark, pool, addresses, nodes, cm, known_addresses, known_plans, salt, infra_filter, out, timings,
               t0):
    """The body of ``aggregate``. Small independent pieces run on ``pool``
    beside the heavy stages (the node gauges beside the main pass; the name
    scan and the per-node throughput beside the per-address statistics):
    Spark runs jobs from several threads at once, and a second job fills the
    cores a stage's last tasks leave idle."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import Window

    W = float(cm["window_seconds"])
    max_gap = float(cm["max_gap_seconds"])
    min_cov = float(cm["min_window_coverage"])
    method = cm["percentile_method"]
    # ---- nodes: restarts first (the main pass needs them); the gauges and
    #      their validation run beside the main pass ----------------------------
    node_f = pool.submit(_node_pass, spark, nodes, W, salt)
    restarts = _node_restarts(spark, nodes, salt)
    node_names = {}
    for nid, infra, node, kind, _t in restarts:
        _add_name(node_names, nid, (infra, node, kind))
    timings["nodes"] = time.time() - t0

    # ---- the one pass: deltas over (address, node) series, per window ------
    t1 = time.time()
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
    a = a.repartition("aid")
    w = Window.partitionBy("aid", "nid").orderBy("t")
    # (withColumns: one analysis of the plan, not one per column)
    a = a.withColumns({"p_t": F.lag("t").over(w), "p_in": F.lag("c_in").over(w), "p_out": F.lag("c_out").over(w)})
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
    dt = F.col("t") - F.col("p_t")
    ok = F.col("p_t").isNotNull() & (dt > 0) & (dt <= max_gap)
    drop_in = F.col("c_in") < F.col("p_in")
    drop_out = F.col("c_out") < F.col("p_out")
    a = a.withColumns({"restarted": restarted, "ws": F.floor(F.col("t") / W) * W})
    inc_in = F.when(F.col("restarted") | drop_in, F.col("c_in")).otherwise(F.col("c_in") - F.col("p_in"))
    inc_out = F.when(F.col("restarted") | drop_out, F.col("c_out")).otherwise(F.col("c_out") - F.col("p_out"))
    reset = F.col("restarted") | F.coalesce(drop_in, F.lit(False)) | F.coalesce(drop_out, F.lit(False))
    kind = F.shiftright("meta", 1).bitwiseAND(1).cast("int").alias("kind")
    anw = a.groupBy("aid", "nid", kind, "ws").agg(
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
    anw = (anw.withColumns({"valid": F.col("dt") >= (min_cov * W - 1e-9),
                            "r_in": F.when(F.col("dt") > 0, F.col("inc_in") / F.col("dt")),
                            "r_out": F.when(F.col("dt") > 0, F.col("inc_out") / F.col("dt"))})
           # the cache keeps only what later stages read (every integer column
           # costs a dictionary-compression pass when the cache is built)
           .drop("inc_in", "inc_out", "dt"))
    anw.persist(StorageLevel.MEMORY_AND_DISK)

    # ---- per series (address on a node): totals, validity, gauges, quality -
    nthr_v = F.when(F.col("valid"), F.col("r_in") + F.col("r_out"))
    an = anw.groupBy("aid", "nid", "kind").agg(
        F.avg(nthr_v).alias("thr_avg"), _pct_expr(nthr_v, method).alias("thr_p"), F.max(nthr_v).alias("thr_max"),
        F.max_by("depth_last", "ws").alias("depth_last"), F.max("depth_max").alias("depth_max"),
        F.max_by("size_last", "ws").alias("size_last"), F.max("size_max").alias("size_max"),
        F.max_by("consumers_last", "ws").alias("consumers_last"), F.max_by("links", "ws").alias("links_last"),
        F.max_by("meta", "ws").alias("meta"), F.min("t_first").alias("t_first"), F.max("t_last").alias("t_last"),
        F.sum("n").alias("samples"),
        F.sum("resets").alias("resets"), F.sum("gaps").alias("gaps"), F.sum("dups").alias("dups"),
        F.count(F.lit(1)).alias("windows"), F.sum(F.col("valid").cast("int")).alias("windows_valid"),
        F.sum("bad").alias("bad"))
    series = an.transform(lambda d: _pct_finish(d, ("thr",), method)).collect()
    timings["deltas"] = time.time() - t1
    akw = None
    pending = []
    try:
        # node samples are checked before address samples, as they always were
        out["node_windows"], out["totals"]["node_rows"], names_n = node_f.result()
        for h, key in names_n.items():
            _add_name(node_names, h, key)
        if not series:
            raise InputError("metrics store: no address samples in the selected range%s"
                             % (" for infra %r" % infra_filter if infra_filter else ""))
        if any(r["bad"] for r in series):
            raise InputError("metrics store: address samples are invalid: "
                             + "; ".join(_invalid_addresses(addresses)))

        # ---- beside the per-address statistics: names (from the model and the
        #      node samples; a filtered scan for the rest) and per-node throughput
        def names(t):
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

        def node_throughput(t):
            nthr = (anw.where(F.col("valid")).groupBy("nid", "ws")
                    .agg(F.sum(F.col("r_in") + F.col("r_out")).alias("thr")))
            return nthr.collect(), time.time() - t
        names_f = pool.submit(names, time.time())
        pending.append(names_f)
        nthr_f = pool.submit(node_throughput, time.time())
        pending.append(nthr_f)

        # ---- per address and node kind: window rates summed over nodes ----
        t3 = time.time()
        akw = anw.groupBy("aid", "kind", "ws").agg(
            F.sum("r_in").alias("r_in"), F.sum("r_out").alias("r_out"),
            F.min(F.col("valid").cast("int")).alias("valid"))
        akw.persist(StorageLevel.MEMORY_AND_DISK)
        vin = F.when(F.col("valid") == 1, F.col("r_in"))
        vout = F.when(F.col("valid") == 1, F.col("r_out"))
        vthr = F.when(F.col("valid") == 1, F.col("r_in") + F.col("r_out"))
        ak = akw.groupBy("aid", "kind").agg(
            F.avg(vin).alias("in_avg"), _pct_expr(vin, method).alias("in_p"), F.max(vin).alias("in_max"),
            F.avg(vout).alias("out_avg"), _pct_expr(vout, method).alias("out_p"), F.max(vout).alias("out_max"),
            F.avg(vthr).alias("thr_avg"), _pct_expr(vthr, method).alias("thr_p"), F.max(vthr).alias("thr_max"),
            F.count(F.lit(1)).alias("windows"), F.sum("valid").alias("windows_valid"))
        ak_rows = _pct_finish(ak, ("in", "out", "thr"), method).collect()
        timings["address_stats"] = time.time() - t3

        addr_names, more_nodes, plan_names, timings["names"] = names_f.result()
        node_names.update(more_nodes)
        if any(node_names[r["nid"]][2] not in lib.NODE_KINDS for r in series):
            raise InputError("metrics store: address samples are invalid: "
                             + "; ".join(_invalid_addresses(addresses)))
        out["restarts"] = [(i, n, t) for _h_, i, n, _k, t in restarts]
        out["totals"].update({
            "address_rows": sum(r["samples"] for r in series),
            "t_min": min(r["t_first"] for r in series), "t_max": max(r["t_last"] for r in series),
            "series_windows": sum(r["windows"] for r in series)})
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
            out["address_node"].append(d)
        out["address_kind"] = []
        for r in ak_rows:
            d = _flatten_p(r.asDict())
            infra, space, address = addr_names[d.pop("aid")]
            d.update({"infra": infra, "address_space": space, "address": address,
                      "node_kind": KINDS[d.pop("kind")]})
            out["address_kind"].append(d)

        nthr_rows, timings["node_throughput"] = nthr_f.result()
        out["node_throughput"] = []
        for r in nthr_rows:
            infra, node, kind = node_names[r["nid"]]
            out["node_throughput"].append({"infra": infra, "node": node, "node_kind": kind, "ws": r["ws"],
                                           "thr": r["thr"]})

        # ---- per space and window: ingress/egress of each address, measured
        #      where it lives (brokers for stored addresses, routers for direct ones)
        t5 = time.time()
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
        import pyarrow as pa
        adf = _small_df(spark, auth_rows, [("aid", pa.int64()), ("kind", pa.int32()), ("sp", pa.int32())])
        sw = (akw.where(F.col("valid") == 1).join(F.broadcast(adf), ["aid", "kind"])
              .groupBy("sp", "ws").agg(F.sum("r_in").alias("r_in"), F.sum("r_out").alias("r_out"),
                                       F.count(F.lit(1)).alias("addresses")))
        out["space_windows"] = []
        for r in sw.collect():
            infra, space = spaces[r["sp"]]
            out["space_windows"].append({"infra": infra, "address_space": space, "ws": r["ws"],
                                         "r_in": r["r_in"], "r_out": r["r_out"], "addresses": r["addresses"]})
        timings["space_series"] = time.time() - t5
        out["timings"] = timings
        return out
    finally:
        for f in pending:       # nothing may still read the cached tables
            try:
                f.result()
            except Exception:
                pass
        if akw is not None:
            akw.unpersist()
        anw.unpersist()


def _flatten_p(d):
    for k in list(d):
        if k.endswith("_p"):
            vals = d.pop(k)
            base = k[:-2]
            d[base + "_p95"], d[base + "_p99"] = (vals[0], vals[1]) if vals else (None, None)
    return d


# ================================================================ planning

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


class Planner(object):
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
        # which brokers and routers serve which spaces
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
        for (space, _), brokers in self.current_placement.items():
            if any(sp["name"] == space for sp in spaces):
                for b in brokers:
                    broker_spaces.setdefault(b, set()).add(space)

        def pool_of(node, mapping):
            sc = mapping.get(node) or set()
            named = sc - {SHARED}
            if SHARED in sc or len(named) > 1:
                return SHARED
            return next(iter(named)) if named else SHARED

        broker_pools = {}
        for b in broker_spaces:
            broker_pools.setdefault(pool_of(b, broker_spaces), []).append(b)
        router_pools = {}
        for r in router_spaces:
            router_pools.setdefault(pool_of(r, router_spaces), []).append(r)
        for v in list(broker_pools.values()) + list(router_pools.values()):
            v.sort(key=_natural)
        # spaces -> pools
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

        # addresses with their load and plan credits
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

        # quota per space (the rule as converge applies it)
        pending = {}
        credit_need = {}
        for sp in spaces:
            limits = (sp["_plan"] or {}).get("resource_limits") or {}
            pool = space_broker_pool[sp["name"]]
            res = placement.place(space_items[sp["name"]], brokers=list(broker_pools.get(pool, [])),
                                  limits=limits, capacity=(float("inf") if sp["type"] == "brokered" else 1.0))
            pending[sp["name"]] = dict(res.pending)
            credit_need[sp["name"]] = {"brokers": res.brokers_needed, "routers": res.routers_needed,
                                       "totals": dict(res.totals), "limits": limits}

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
            "infra": infra,
            "verdict": {
                "verdict": lib.combine_verdicts(verdicts),
                "brokers": {"current": sum(p["verdict"]["current"] for p in pool_docs),
                            "add": sum(c for c in bch if c > 0), "remove": -sum(c for c in bch if c < 0),
                            "change": sum(bch)},
                "routers": {"current": sum(p["verdict"]["current"] for p in router_docs),
                            "add": sum(c for c in rch if c > 0), "remove": -sum(c for c in rch if c < 0),
                            "change": sum(rch)},
                "binding_resource": binding,
            },
            "broker_pools": pool_docs,
            "router_pools": router_docs,
            "address_spaces": space_docs,
            "forecast": self.forecast_infra(infra, pool_docs, router_docs, spaces),
        }

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
        cm = self.cm
        bcm = cm["broker"]
        brokered = any(sp["type"] == "brokered" for sp in members)
        resources = lib.BROKER_RESOURCES
        # per-item loads
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
        # brokers of the pool: observed, placed, or (none yet) one new
        for _, it in items:
            for b in it.current_brokers:
                if b not in brokers:
                    brokers.append(b)
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
        for name, (per, _) in loads.items():
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
        infeasible = [r for r in resources if usable[r] <= 0]

        def load_credit(total):
            lc = 0.0
            for r in resources:
                if usable[r] > 0 and total.get(r):
                    lc = max(lc, total[r] / usable[r])
            return lc

        eff_items = []
        ceff = {}
        for sp, it in items:
            _, total = loads[it.name]
            c = max(it.broker, load_credit(total)) if it.broker > 0 or not it.colocate_with else it.broker
            if it.router >= 0 and it.broker <= EPS and sp["type"] == "standard" and not it.colocate_with \
                    and addr_docs[sp["name"]][it.name.split("/", 1)[1]]["type"] in lib.ROUTER_ONLY_TYPES:
                c = 0.0
            ceff[it.name] = c
            eff_items.append(it._replace(broker=c))

        new_name = _new_broker_namer(pool if pool != SHARED else infra, brokers)
        capacity = float("inf") if brokered else 1.0
        # 1. evict from overloaded brokers (stable otherwise)
        evicted = set()
        if not brokered:
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
        work = [it._replace(current_brokers=[]) if it.name in evicted else it for it in eff_items]
        result = placement.place(work, brokers=list(brokers), capacity=capacity, new_broker_name=new_name)
        reasons = dict((n, "overload") for n in evicted)

        # 2. scale in when everything is well below the low thresholds
        before_demand = dict((r, sum(base[b][r] + attributed[b][r] for b in brokers)) for r in resources)
        total_cap = dict((r, sum(cap[b][r] for b in brokers)) for r in resources)
        util_before = dict((r, (before_demand[r] / total_cap[r]) if total_cap[r] else None) for r in resources)
        n_new = len([b for b in result.brokers if b not in brokers])
        need_by_res = {}
        for r in resources:
            div = sum(l[1][r] for l in loads.values())
            need_by_res[r] = lib.needed_nodes(div, med_base[r] or 0.0, med_cap[r], high[r])
        # brokers the plan credits alone need, placed from scratch (the lower bound
        # for scaling in; the stable placement keeps every address where it is)
        plan_credit_need = placement.place([it._replace(current_brokers=[], current_plan=None) for _, it in items],
                                           brokers=list(brokers), capacity=capacity,
                                           new_broker_name=new_name).brokers_needed
        lower = max([bcm["min_nodes"], int(math.ceil(round(sum(ceff.values()), 9))), plan_credit_need] +
                    [n for n in need_by_res.values() if n is not None])
        removed = []
        if not brokered and n_new == 0 and len(brokers) > lower and all(
                (util_before[r] or 0) < low[r] for r in resources):
            bytes_on = dict((b, sum(loads[n][0].get(b, {}).get("bytes", 0.0) for n in loads)) for b in brokers)
            foreign = self._unmodelled_on(infra, members)
            for k in range(len(brokers) - lower, 0, -1):
                drop = sorted(brokers, key=lambda b: (len(foreign.get(b, [])), bytes_on[b],
                                                      attributed[b]["msg_rate"], _natural(b)))[:k]
                keep_b = [b for b in brokers if b not in drop]
                trial = [it._replace(current_brokers=[]) if set(it.current_brokers) & set(drop) else it
                         for it in work]
                res = placement.place(trial, brokers=keep_b, capacity=capacity, new_broker_name=new_name)
                if all(b in keep_b for b in res.brokers):
                    result, removed = res, drop
                    homed = set(x.name for x in work if x.current_brokers)
                    for b in drop:
                        if foreign.get(b):
                            self.warnings.append(
                                "broker %s (proposed for removal) also holds address(es) that are not in the "
                                "model: %s; move or delete them first" % (b, ", ".join(sorted(foreign[b]))))
                    for it in trial:
                        if not it.current_brokers and it.name not in reasons and it.name in homed:
                            reasons[it.name] = "scale-in"
                    break

        # verdict
        current = len(brokers)
        after_brokers = [b for b in result.brokers if b not in removed]
        n_after = len(after_brokers)
        binding = None
        if need_by_res:
            cands = [(n or 0, util_before[r] or 0, r) for r, n in need_by_res.items()]
            binding = max(cands)[2]
        if infeasible:
            binding = infeasible[0]
        if plan_credit_need > max([n or 0 for n in need_by_res.values()] + [0]) and plan_credit_need >= n_after:
            binding = "credits"
        if brokered:
            need = max([bcm["min_nodes"]] + [n for n in need_by_res.values() if n is not None])
            v = lib.verdict(current, need, util_before, low, minimum=max(1, bcm["min_nodes"]))
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
        v["lower_bound"] = lower
        v["needed_by_resource"] = need_by_res
        v["needed_by_credits"] = plan_credit_need
        if infeasible:
            v["note"] = ("one broker's baseline alone exceeds the high threshold for %s: use bigger brokers"
                         % ", ".join(infeasible))
            if v["verdict"] != lib.UNDER:
                v["verdict"] = lib.UNDER
        if brokered:
            v["note"] = ("brokered address space: one broker; %s" %
                         ("scale the broker up (binding: %s)" % binding if v["verdict"] == lib.UNDER
                          else "node count cannot change"))
            v["change"] = 0 if v["verdict"] != lib.UNDER else v["change"]

        # per-node utilisation after the proposal
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
            bb = dict((r, med_base[r] or 0.0) for r in resources) if is_new else base[b]
            cc = dict(med_cap) if is_new else cap[b]
            nd = {"node": b, "kind": "broker", "new": is_new, "removed": b in removed,
                  "observed": None if is_new else observed[b], "baseline": bb, "capacity": cc,
                  "before": None if is_new else dict((r, bb[r] + attributed[b][r]) for r in resources),
                  "after": None if b in removed else dict((r, bb[r] + after_attr[b][r]) for r in resources),
                  "partitions_before": None if is_new else sum(1 for _, it in items if b in it.current_brokers),
                  "partitions_after": None if b in removed else parts_after.get(b, 0)}
            nd["utilisation_before"] = _util(nd["before"], cc)
            nd["utilisation_after"] = _util(nd["after"], cc)
            nodes.append(nd)

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
        new_homes = []
        for sp, it in items:
            if not it.current_brokers and result.assignments.get(it.name) and it.name not in evicted and \
                    reasons.get(it.name) != "scale-in":
                new_homes.append({"address_space": sp["name"], "address": it.name.split("/", 1)[1],
                                  "brokers": result.assignments[it.name]})
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

        goals = self.broker_goals(pool, nodes, result, items, pending, members, resources, high)
        return {
            "pool": pool, "infra": infra, "shared": pool == SHARED, "brokered": brokered,
            "address_spaces": [sp["name"] for sp in members],
            "brokers_before": list(brokers), "brokers_after": after_brokers, "brokers_removed": removed,
            "verdict": v, "nodes": nodes, "moves": moves, "new_placements": new_homes,
            "draining": dict(result.draining),
            "data_to_move_bytes": sum(m["bytes"] for m in moves),
            "utilisation_before": util_before,
            "utilisation_after": dict(
                (r, (sum(n["after"][r] for n in nodes if n["after"]) /
                     sum(n["capacity"][r] for n in nodes if n["after"])) if any(n["after"] for n in nodes) else None)
                for r in resources),
            "thresholds": {"high": high, "low": low},
            "goals": goals,
        }

    def broker_goals(self, pool, nodes, result, items, pending, members, resources, high):
        goals = _capacity_goals(nodes, resources, high, "broker")
        dup_b = [it.name for _, it in items if len(set(it.current_brokers)) != len(it.current_brokers)]
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
        cm = self.cm
        rcm = cm["router"]
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
        med_cap = dict((r, _median(caps[r]) or float(rcm["resources"][r]["capacity"])) for r in resources)
        need_by_res = {}
        for r in resources:
            need_by_res[r] = lib.needed_nodes(max(0.0, div[r]), fixed_mem if r == "memory" else 0.0,
                                              med_cap[r], high[r])
        infeasible = [r for r, n in need_by_res.items() if n is None]
        need_load = max([n for n in need_by_res.values() if n is not None] + [0])
        current = len(routers)
        total_cap = dict((r, sum(caps[r])) for r in resources)
        util_before = dict((r, (sum(n["before"][r] for n in nodes) / total_cap[r]) if total_cap[r] else None)
                           for r in resources)
        needed = max(need_load, need_credit, rcm["min_nodes"])
        v = lib.verdict(current, needed, util_before if nodes else {}, low, minimum=rcm["min_nodes"])
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
        n_after = v["needed"] if v["verdict"] != lib.RIGHT else current
        n_after = max(n_after, 1)
        after = dict((r, (fixed_mem if r == "memory" else 0.0) + max(0.0, div[r]) / n_after) for r in resources)
        names = list(routers)
        i = len(names)
        while len(names) < n_after:
            cand = "%s-router-%d" % (pool if pool != SHARED else infra, i)
            if cand not in names:
                names.append(cand)
            i += 1
        keep = names[:n_after]
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

    # ------------------------------------------------------- spaces
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
        fc = self.cm["forecast"]
        W = float(self.cm["window_seconds"])
        out = []
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

        def series_for(nodes, res):
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

        def add(scope, kind, res, nodes, capacity, high):
            s = series_for(nodes, res)
            peaks = lib.daily_peaks(sorted(s.items()))
            full = [(d, p, m) for d, p, m in peaks]
            entry = {"scope": scope, "node_kind": kind, "resource": res, "nodes": len(nodes),
                     "capacity": capacity, "threshold": capacity * high,
                     "daily": [{"date": d.isoformat(), "peak": p, "mean": m} for d, p, m in full]}
            if len(full) < max(2, int(fc.get("min_days", 2))) or not capacity:
                entry["status"] = "insufficient-data"
                out.append(entry)
                return
            xs = [(d - first_day).days for d, _, _ in full]
            ys = [p for _, p, _ in full]
            thr_fc = lib.forecast_crossing(xs, ys, capacity * high, first_day, last_day, fc["horizon_days"])
            cap_fc = lib.forecast_crossing(xs, ys, capacity, first_day, last_day, fc["horizon_days"])
            entry.update({"slope_per_day": thr_fc["slope_per_day"], "intercept": thr_fc["intercept"],
                          "r2": thr_fc["r2"], "status": thr_fc["status"], "threshold_date": thr_fc["date"],
                          "days_to_threshold": thr_fc["days_left"], "exhaustion_date": cap_fc["date"],
                          "exhaustion_status": cap_fc["status"], "days_to_exhaustion": cap_fc["days_left"]})
            out.append(entry)

        for p in pool_docs:
            nodes = p["brokers_before"]
            for res in lib.BROKER_RESOURCES:
                cap = sum(n["capacity"][res] for n in p["nodes"] if not n["new"])
                add("brokers:%s" % p["pool"], "broker", res, nodes, cap, p["thresholds"]["high"][res])
        for p in router_docs:
            nodes = p["routers_before"]
            for res in lib.ROUTER_RESOURCES:
                cap = sum(n["capacity"][res] for n in p["nodes"] if not n["new"])
                add("routers:%s" % p["pool"], "router", res, nodes, cap, p["thresholds"]["high"][res])
        # traffic: ingress of all addresses (daily mean and peak), per infra and space
        sw = [r for r in self.agg.get("space_windows") or [] if r["infra"] == infra]
        for scope, rows in [("infra", sw)] + [("space:%s" % sp["name"], [r for r in sw if r["address_space"] ==
                                                                          sp["name"]]) for sp in spaces]:
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
                xs = [(d - first_day).days for d, _, _ in full]
                i_p, s_p, r2_p = lib.linear_fit(xs, [p for _, p, _ in full])
                i_m, s_m, r2_m = lib.linear_fit(xs, [m for _, _, m in full])
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


# ============================================================ outputs

def atomic_write_all(pairs):
    """Write every (path, text) to a temp file beside it, then rename them all
    into place. All or nothing: when any step fails, the files written so far
    are removed and any previous versions are put back."""
    tmps = []
    done = []       # (path, backup or None) already renamed into place
    try:
        for path, text in pairs:
            d = os.path.dirname(os.path.abspath(path)) or "."
            os.makedirs(d, exist_ok=True)
            if os.path.isdir(path):
                raise IsADirectoryError("output %s is a directory" % path)
            fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            tmps.append((tmp, path))
        for tmp, path in tmps:
            backup = None
            if os.path.exists(path):
                backup = path + ".%d.bak" % os.getpid()
                os.replace(path, backup)
            try:
                os.replace(tmp, path)
            except BaseException:
                if backup:
                    os.replace(backup, path)
                raise
            done.append((path, backup))
        for _, backup in done:
            if backup and os.path.exists(backup):
                os.unlink(backup)
    except BaseException:
        for path, backup in reversed(done):
            if os.path.exists(path):
                os.unlink(path)
            if backup and os.path.exists(backup):
                os.replace(backup, path)
        for tmp, _ in tmps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise


def _json_default(o):
    if isinstance(o, set):
        return sorted(o)
    if isinstance(o, (_dt.date, _dt.datetime)):
        return o.isoformat()
    return str(o)


def _clean(o):
    """JSON-safe: NaN/inf -> None."""
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if isinstance(o, dict):
        return dict((str(k), _clean(v)) for k, v in o.items())
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


# ================================================================ CLI

def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="capacity_plan.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--metrics", required=True, help="metrics store root (local dir or any Spark-readable URI)")
    p.add_argument("--model", required=True,
                   help="JSON/YAML: address_spaces (with addresses), optional plans and current_placement")
    p.add_argument("--capacity-model", help="JSON/YAML capacity model (defaults: docs/capacity-planning.md)")
    p.add_argument("--out-plan", default="capacity-plan.json")
    p.add_argument("--out-report", default="capacity-report.html")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--app-name", default="enmasse-capacity-plan")
    p.add_argument("--infra", help="only this infrastructure")
    p.add_argument("--start", help="first instant to use (ISO date or date-time, UTC)")
    p.add_argument("--end", help="end instant (exclusive)")
    p.add_argument("--days", type=float, help="use the last N days of data")
    p.add_argument("--window-seconds", type=int, help="override window_seconds of the capacity model")
    p.add_argument("--percentile-method", choices=("exact", "approx"))
    p.add_argument("--shuffle-partitions", type=int)
    p.add_argument("--driver-memory", help="e.g. 4g (local mode: the whole job)")
    p.add_argument("--conf", action="append", help="extra Spark conf key=value (repeatable)")
    p.add_argument("--log-level", default="WARN")
    p.add_argument("--no-report", action="store_true", help="write only the JSON plan")
    return p.parse_args(argv)


def _parse_instant(s, what):
    if s is None:
        return None
    try:
        if len(s) == 10:
            d = _dt.datetime.strptime(s, "%Y-%m-%d")
        else:
            d = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise InputError("--%s %r is not an ISO date or date-time" % (what, s))
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return d.astimezone(_dt.timezone.utc)


def run(args):
    t0 = time.time()
    cm_user = lib.load_structured_file(args.capacity_model, "capacity model") if args.capacity_model else {}
    if args.window_seconds:
        cm_user = dict(cm_user or {}, window_seconds=args.window_seconds)
    if args.percentile_method:
        cm_user = dict(cm_user or {}, percentile_method=args.percentile_method)
    cm = lib.load_capacity_model(cm_user)
    spaces, catalogue, current = load_model(args.model)
    start = _parse_instant(args.start, "start")
    end = _parse_instant(args.end, "end")
    for path in (args.out_plan, args.out_report):
        d = os.path.dirname(os.path.abspath(path))
        if os.path.exists(d) and not os.access(d, os.W_OK):
            raise InputError("output directory %s is not writable" % d)
    precheck_store(args.metrics)
    spark, owned = _spark_session(args)
    try:
        addresses, a_absent = read_kind(spark, args.metrics, "addresses", ADDRESS_REQUIRED, ADDRESS_OPTIONAL)
        nodes, n_absent = read_kind(spark, args.metrics, "nodes", NODE_REQUIRED, NODE_OPTIONAL, must_exist=False)
        warnings = []
        if a_absent:
            warnings.append("address samples lack optional column(s) %s (treated as null)" % ", ".join(a_absent))
        if nodes is None:
            warnings.append("no node samples (%s/nodes): node memory, disk and connections come from the "
                            "capacity model only" % args.metrics)
        elif n_absent:
            warnings.append("node samples lack optional column(s) %s (treated as null)" % ", ".join(n_absent))
        if args.days:
            from pyspark.sql import functions as F
            mx = addresses.agg(F.max("ts")).collect()[0][0]
            if mx is not None:
                end_d = mx.replace(tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=1)
                start = max(start, end_d - _dt.timedelta(days=args.days)) if start else \
                    end_d - _dt.timedelta(days=args.days)
        addresses = _time_filter(addresses, start, end)
        if nodes is not None:
            nodes = _time_filter(nodes, start, end)
        t_read = time.time()
        adaptive = not args.shuffle_partitions and not any(
            kv.startswith("spark.sql.shuffle.partitions=") for kv in (args.conf or []))
        known = [(sp["infra"], sp["name"], a["address"]) for sp in spaces for a in sp["addresses"]]
        agg = aggregate(spark, addresses, nodes, cm, args.infra, adaptive_partitions=adaptive,
                        known_addresses=known, known_plans=catalogue.address_plan_names())
        t_agg = time.time()
    finally:
        if owned:
            spark.stop()
    if args.infra:
        spaces = [s for s in spaces if s["infra"] == args.infra]
        if not spaces:
            raise InputError("no address space of infrastructure %r in the model" % args.infra)
    planner = Planner(agg, spaces, catalogue, current, cm, warnings)
    plan = planner.run()
    plan["job"] = {"master": args.master, "metrics": args.metrics, "model": os.path.abspath(args.model),
                   "capacity_model": os.path.abspath(args.capacity_model) if args.capacity_model else None,
                   "start": start.isoformat() if start else None, "end": end.isoformat() if end else None,
                   "seconds": {"spark": round(t_agg - t_read, 3), "total": None}}
    plan["job"]["seconds"]["total"] = round(time.time() - t0, 3)
    plan = _clean(plan)
    text = json.dumps(plan, indent=2, sort_keys=True, default=_json_default)
    outputs = [(args.out_report, None)] if not args.no_report else []
    if not args.no_report:
        import capacity_report
        html = capacity_report.render(plan, agg)
        outputs = [(args.out_report, html)]
    atomic_write_all(outputs + [(args.out_plan, text)])
    return plan


def main(argv=None):
    args = parse_args(argv)
    try:
        plan = run(args)
    except InputError as e:
        sys.stderr.write("capacity_plan: error: %s\n" % e)
        return 2
    except Exception:
        traceback.print_exc()
        sys.stderr.write("capacity_plan: failed unexpectedly; no plan written\n")
        return 1
    s = plan["summary"]
    for i in s:
        sys.stdout.write("%s: %s (brokers %+d, routers %+d, binding: %s)\n" % (
            i["infra"], i["verdict"], i["brokers"]["change"], i["routers"]["change"], i["binding_resource"]))
    sys.stdout.write("plan: %s%s\n" % (args.out_plan, "" if args.no_report else "  report: %s" % args.out_report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
