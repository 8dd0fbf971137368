# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity job's command line: options, the Spark session, the run
(read -> aggregate -> plan -> report) and the atomic write of the outputs.

``spark_jobs/capacity_plan.py`` (what spark-submit runs) calls ``main``.
Exit status: 0 ok, 2 bad input (message on stderr), 1 unexpected failure.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime as _dt
import json
import math
import os
import sys
import tempfile
import time
import traceback

from . import incremental
from . import rules as lib
from .aggregate import aggregate
from .planner import Planner
from .progress import Progress
from .read import (ADDRESS_OPTIONAL, ADDRESS_REQUIRED, NODE_OPTIONAL, NODE_REQUIRED, load_model, precheck_store,
                   read_kind, time_filter)
from .records import as_dicts
from .rules import InputError

DESCRIPTION = "Capacity plan for an enmasse.messaging infrastructure, from its own metrics."


# a batch job: the throughput collector, and JIT for the large generated
# aggregation methods (the driver's and the executors'; a --conf of the same
# key replaces it)
JVM_OPTIONS = "-XX:+UseParallelGC -XX:-DontCompileHugeMethods"


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
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
        # per-address collect_list/percentile groups stay in the hash map
        # instead of falling back to sorting after 128 groups
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "1000000",
        # the cached per-window tables are 64-bit ids, doubles and counts that
        # the columnar cache's encodings barely shrink (149 bytes a row
        # compressed, about 160 raw), while gathering the statistics to choose
        # an encoding boxes every value into a hash set: store them raw
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # the samples' shuffle is a deterministic function of the store (hash
        # partitioned by address id): the order-independent checksum that
        # detects retried map tasks writing different rows costs a pass over
        # every shuffled row and protects nothing here
        "spark.sql.shuffle.orderIndependentChecksum.enabled": "false",
        # ... and Spark 4.3 computes that checksum anyway while full retry
        # on a mismatch is on (its default)
        "spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch": "false",
        # an aggregation whose input is already sorted on its keys (the
        # per-series statistics over the per-window table) streams as a sort
        # aggregation instead of filling a hash map
        "spark.sql.execution.replaceHashWithSortAgg": "true",
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


def check_master(master, timeout=10.0):
    """A standalone master (spark://host:port[,host:port...]) must answer
    before Spark starts: without it Spark retries its registration for a
    minute and then fails with a message that does not name the master."""
    import socket
    if not master.startswith("spark://"):
        return
    problems = []
    for hp in master[len("spark://"):].split(","):
        host, _sep, port = hp.strip().rpartition(":")
        if not host or not port.isdigit():
            raise InputError("--master %s: expected spark://host:port[,host:port...]" % master)
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
            return
        except (OSError, socket.timeout) as e:
            problems.append("%s:%s: %s" % (host, port, getattr(e, "strerror", None) or e))
    raise InputError("the Spark master %s is unreachable (%s): is the master running there and its address and "
                     "port right? No plan written" % (master, "; ".join(problems)))


def atomic_write_all(pairs):
    """Write every (path, text) to a temp file beside it, then rename them all
    (text: a string, or a function writing to the open file: ``_json_writer``)
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
                if callable(text):
                    text(f)     # a writer (``_json_writer``): the document in pieces
                else:
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
        for _unused, backup in done:
            if backup and os.path.exists(backup):
                os.unlink(backup)
    except BaseException:
        for path, backup in reversed(done):
            if os.path.exists(path):
                os.unlink(path)
            if backup and os.path.exists(backup):
                os.replace(backup, path)
        for tmp, _unused in tmps:
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
    """JSON-safe: NaN/inf -> None, keys strings, tuples lists. In place: the
    dicts and lists of ``o`` are changed and returned (a copy of the plan
    would double the driver's memory); a dict with other keys than strings
    and a tuple are replaced by new ones."""
    if isinstance(o, float):
        return None if (math.isnan(o) or math.isinf(o)) else o
    if isinstance(o, dict):
        if not all(isinstance(k, str) for k in o):
            return dict((str(k), _clean(v)) for k, v in o.items())
        for k, v in o.items():
            if isinstance(v, (float, dict, list, tuple)):
                o[k] = _clean(v)
        return o
    if isinstance(o, list):
        for i, v in enumerate(o):
            if isinstance(v, (float, dict, list, tuple)):
                o[i] = _clean(v)
        return o
    if isinstance(o, tuple):
        return [_clean(v) for v in o]
    return o


def _json_writer(doc, **kw):
    """A writer for ``atomic_write_all``: ``doc`` as JSON (json.dumps's text
    with ``kw``) written in pieces, never as one string."""
    def write(f):
        buf = []
        n = 0
        for chunk in json.JSONEncoder(default=_json_default, **kw).iterencode(doc):
            buf.append(chunk)
            n += 1
            if n >= 1024:
                f.write("".join(buf))
                buf, n = [], 0
        f.write("".join(buf))
    return write


# ================================================================ CLI

def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="capacity_plan.py", description=DESCRIPTION)
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
    p.add_argument("--percentile-method", choices=lib.PERCENTILE_METHODS)
    p.add_argument("--shuffle-partitions", type=int)
    p.add_argument("--driver-memory", help="e.g. 4g (local mode: the whole job)")
    p.add_argument("--conf", action="append", help="extra Spark conf key=value (repeatable)")
    p.add_argument("--log-level", default="WARN")
    p.add_argument("--no-report", action="store_true", help="write only the JSON plan")
    p.add_argument("--progress-file", help="write the run's progress here while it runs (JSON: phase, Spark stages "
                   "and their tasks, phase durations; replaced atomically every --progress-interval seconds)")
    p.add_argument("--progress-interval", type=float, default=2.0)
    p.add_argument("--incremental", action="store_true",
                   help="aggregate only the days that are new or changed since the last incremental run and merge "
                   "them with the stored per-day aggregates (<store>/_aggregates/v1, state.json); needs "
                   "percentile_method histogram (the default with this option), a local store and no --start or "
                   "--end (--days N: the last N days of the store)")
    p.add_argument("--aggregates-dir", help="where --incremental keeps its per-day aggregates and state.json "
                   "(a local directory; default <store>/_aggregates)")
    p.add_argument("--out-aggregates", help="also write the aggregated statistics the plan is made from (JSON: "
                   "per address and node, per address and node kind, node windows, node throughput, per-space "
                   "series; for checks and bench/capacity)")
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


def run(args, progress=None):
    t0 = time.time()
    progress = progress or Progress()
    progress.phase("check the input")
    cm = _capacity_model(args)
    if args.incremental:
        incremental.check_options(args, cm)
    spaces, catalogue, current = load_model(args.model)
    start = _parse_instant(args.start, "start")
    end = _parse_instant(args.end, "end")
    for path in (args.out_plan, args.out_report):
        d = os.path.dirname(os.path.abspath(path))
        if os.path.exists(d) and not os.access(d, os.W_OK):
            raise InputError("output directory %s is not writable" % d)
    precheck_store(args.metrics)
    check_master(args.master)
    progress.phase("start Spark")
    spark, owned = _spark_session(args)
    progress.attach(spark.sparkContext)
    try:
        progress.phase("read the store")
        # incremental: every sample (it chooses the days itself)
        addresses, nodes, start, warnings = _read_store(spark, args, start, end, not args.incremental)
        t_read = time.time()
        adaptive = not args.shuffle_partitions and not any(
            kv.startswith("spark.sql.shuffle.partitions=") for kv in (args.conf or []))
        known = [(sp["infra"], sp["name"], a["address"]) for sp in spaces for a in sp["addresses"]]
        if args.incremental:
            n_warn = len(warnings)
            agg = incremental.aggregate_incremental(
                spark, args.metrics, addresses, nodes, cm, warnings, known_addresses=known,
                known_plans=catalogue.address_plan_names(), on_phase=progress.phase, adaptive_partitions=adaptive,
                base=args.aggregates_dir, infra=args.infra, days=args.days)
            for w in warnings[n_warn:]:
                sys.stderr.write("capacity_plan: %s\n" % w)
        else:
            agg = aggregate(spark, addresses, nodes, cm, args.infra, adaptive_partitions=adaptive,
                            known_addresses=known, known_plans=catalogue.address_plan_names(),
                            on_phase=progress.phase)
        t_agg = time.time()
    finally:
        progress.detach()
        if owned:
            spark.stop()
    if args.infra:
        spaces = [s for s in spaces if s["infra"] == args.infra]
        if not spaces:
            raise InputError("no address space of infrastructure %r in the model" % args.infra)
    progress.phase("plan")
    planner = Planner(agg, spaces, catalogue, current, cm, warnings)
    plan = planner.run()
    plan["job"] = {"master": args.master, "metrics": args.metrics, "model": os.path.abspath(args.model),
                   "capacity_model": os.path.abspath(args.capacity_model) if args.capacity_model else None,
                   "start": start.isoformat() if start else None, "end": end.isoformat() if end else None,
                   "seconds": {"spark": round(t_agg - t_read, 3), "total": None}}
    if args.incremental:
        plan["job"]["incremental"] = agg["incremental"]
    return _write_outputs(args, plan, agg, progress, t0)


def _capacity_model(args):
    """The capacity model in force: the file's, with the command line's
    window and percentile method over it, validated."""
    cm_user = lib.load_structured_file(args.capacity_model, "capacity model") if args.capacity_model else {}
    if args.window_seconds:
        cm_user = dict(cm_user or {}, window_seconds=args.window_seconds)
    if args.percentile_method:
        cm_user = dict(cm_user or {}, percentile_method=args.percentile_method)
    elif getattr(args, "incremental", False) and "percentile_method" not in (cm_user or {}):
        # the only percentiles that merge across days
        cm_user = dict(cm_user or {}, percentile_method="histogram")
    return lib.load_capacity_model(cm_user)


def _read_store(spark, args, start, end, last_days=True):
    """The address and node samples in the time range (``--days``: the last
    days of the samples, within ``start``): (addresses, nodes or None, start,
    warnings about missing optional columns or node samples)."""
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
    if args.days and last_days:
        from pyspark.sql import functions as F
        mx = addresses.agg(F.max("ts")).collect()[0][0]
        if mx is not None:
            end_d = mx.replace(tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=1)
            start = max(start, end_d - _dt.timedelta(days=args.days)) if start else \
                end_d - _dt.timedelta(days=args.days)
    addresses = time_filter(addresses, start, end)
    if nodes is not None:
        nodes = time_filter(nodes, start, end)
    return addresses, nodes, start, warnings


def _write_outputs(args, plan, agg, progress, t0):
    """The report (unless --no-report), the plan and the aggregates
    (--out-aggregates), written together (``atomic_write_all``)."""
    outputs = []
    if not args.no_report:
        progress.phase("report")
        from . import report
        # the report's own rendering is the one phase it cannot time: the
        # phases are those up to it (the plan has them all but the write)
        plan["job"]["phases"] = progress.durations()
        html = report.render(plan, agg)
        outputs = [(args.out_report, html)]
    progress.phase("write the outputs")
    plan["job"]["phases"] = progress.durations()
    plan["job"]["seconds"]["total"] = round(time.time() - t0, 3)
    plan = _clean(plan)
    if args.out_aggregates:
        outputs.append((args.out_aggregates, _json_writer(_clean(aggregates_document(agg)), sort_keys=True)))
    atomic_write_all(outputs + [(args.out_plan, _json_writer(plan, indent=2, sort_keys=True))])
    return plan


def aggregates_document(agg):
    """The aggregated statistics of ``aggregate`` as plain JSON data (tuple
    keys of ``authoritative`` become lists)."""
    doc = dict((k, v) for k, v in agg.items() if k not in ("authoritative", "timings"))
    for k in ("address_node", "address_kind"):
        if k in doc:
            doc[k] = as_dicts(doc[k])   # Records (records.py) as plain dicts
    doc["authoritative"] = sorted(list(k) + [v] for k, v in agg.get("authoritative", {}).items())
    return doc


def main(argv=None):
    args = parse_args(argv)
    progress = Progress(args.progress_file, args.progress_interval)
    if args.progress_file:
        progress.start()
    try:
        plan = run(args, progress)
    except InputError as e:
        progress.finish("failed")
        sys.stderr.write("capacity_plan: error: %s\n" % e)
        return 2
    except Exception:
        progress.finish("failed")
        traceback.print_exc()
        sys.stderr.write("capacity_plan: failed unexpectedly; no plan written\n")
        return 1
    progress.finish("done")
    s = plan["summary"]
    for i in s:
        sys.stdout.write("%s: %s (brokers %+d, routers %+d, binding: %s)\n" % (
            i["infra"], i["verdict"], i["brokers"]["change"], i["routers"]["change"], i["binding_resource"]))
    sys.stdout.write("plan: %s%s\n" % (args.out_plan, "" if args.no_report else "  report: %s" % args.out_report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
