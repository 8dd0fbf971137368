# -*- coding: utf-8 -*-
"""The capacity job's incremental run against a full run: one new day on
top of N days (docs/day2-design.md section 6; goal: the new day in <= 10 %
of the full run's time).

    python bench/capacity/incremental.py --days 7 --size 12M [--repeat 2]
        [--data-dir /tmp/enmasse-capacity-inc] [--master local[2]] [--driver-memory 3g] [--out results.json]

Generates a store of --days days with about --size samples in all
(spark_jobs/generate_metrics.py), and builds beside it the store a
scheduled run sees: the first days-1 days (hard links). Then, each run a
process of its own (``capacity_plan.py --no-report``), timed with its CPU:

1. ``--incremental`` on the days-1 days (no state: aggregates every day);
2. the last day arrives; per round, alternating:
   * ``--incremental`` (aggregates the new day, merges the stored ones;
     the state and aggregates of step 1 are put back before each round),
   * the full run over all days with ``--percentile-method histogram``
     (same numbers), and once the full run with today's default ``exact``.

Reports wall and CPU seconds, the Spark seconds the job reports, the load
average before each run, the incremental/full ratio and the largest
relative difference between the incremental and the full histogram plan's
per-address statistics (expected: rounding). Markdown on stdout, all in --out.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from run import collection_importable, loadavg, machine, measured, parse_size  # noqa: E402


def _link_days(src, dst, days):
    for kind in ("addresses", "nodes"):
        for day in days:
            s = os.path.join(src, kind, "date=" + day)
            if os.path.isdir(s):
                shutil.copytree(s, os.path.join(dst, kind, "date=" + day), copy_function=os.link)


def _days(store):
    return sorted(d[len("date="):] for d in os.listdir(os.path.join(store, "addresses")) if d.startswith("date="))


def _stats(plan):
    out = {}
    for inf in plan["infrastructures"]:
        for s in inf["address_spaces"]:
            for a in s["addresses"]:
                if a.get("load"):
                    for side in ("ingress", "egress"):
                        for st in ("avg", "p95", "p99", "max"):
                            out[(inf["infra"], s["name"], a["address"], side, st)] = a["load"][side][st]
    return out


def max_rel_diff(p1, p2):
    a, b = _stats(p1), _stats(p2)
    if set(a) != set(b):
        raise SystemExit("the plans have different addresses")
    worst = 0.0
    for k, v in a.items():
        if v is None or b[k] is None:
            if v != b[k]:
                raise SystemExit("%s: %r against %r" % (k, v, b[k]))
            continue
        if v:
            worst = max(worst, abs(v - b[k]) / abs(v))
    return worst, len(a)


def _report(res, n, diff):
    """The ratios into ``res``, and the table printed."""
    for key, field in (("ratio", "seconds"), ("cpu_ratio", "cpu_seconds")):
        inc = [r[field] for r in res["runs"] if r["run"] == "incremental-new-day"]
        full = [r[field] for r in res["runs"] if r["run"] == "full-histogram"]
        res[key] = [round(i / f, 3) for i, f in zip(inc, full)]
    print("| run | address samples | days aggregated / merged | wall s | CPU s | Spark s (job) | load before |")
    print("|---|---:|---|---:|---:|---:|---|")
    for r in res["runs"]:
        print("| %s | %s | %d / %d | %.1f | %.1f | %.1f | %s |" % (
            r["run"], format(r["samples"], ","), r["aggregated_days"], r["merged_days"], r["seconds"],
            r["cpu_seconds"], r["spark_seconds"], " ".join("%.2f" % x for x in r["load_before"])))
    print("incremental / full (histogram) wall, per round: %s" % ", ".join("%.2f" % x for x in res["ratio"]))
    print("incremental / full (histogram) CPU, per round: %s" % ", ".join("%.2f" % x for x in res["cpu_ratio"]))
    print("incremental against full histogram plan: %d statistics, largest relative difference %.2e" % (n, diff))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--days", type=int, default=7)
    p.add_argument("--size", default="12M", help="samples in all the days")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--data-dir", default="/tmp/enmasse-capacity-inc")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="3g")
    p.add_argument("--out")
    a = p.parse_args(argv)
    if not collection_importable():
        return 2
    src = os.path.join(a.data_dir, "d%d-s%d" % (a.days, parse_size(a.size)))
    res = {"machine": machine(), "days": a.days, "size": a.size, "runs": [],
           "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, check=False).stdout.strip(),
           "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    if not os.path.exists(os.path.join(src, "model.json")):
        g = measured([sys.executable, os.path.join(REPO, "spark_jobs", "generate_metrics.py"), "--out", src,
                      "--days", str(a.days), "--target-samples", str(parse_size(a.size))])
        if g["rc"] != 0:
            raise SystemExit(g["stderr"])
        res["generate_seconds"] = g["seconds"]
    days = _days(src)
    inc = os.path.join(a.data_dir, "incremental")
    shutil.rmtree(inc, ignore_errors=True)
    os.makedirs(inc)
    shutil.copy(os.path.join(src, "model.json"), inc)
    _link_days(src, inc, days[:-1])
    agg = os.path.join(a.data_dir, "aggregates")
    saved = agg + ".after-first"
    for d in (agg, saved):
        shutil.rmtree(d, ignore_errors=True)

    def job(name, store, *more):
        plan = os.path.join(a.data_dir, "plan-%s.json" % name)
        cmd = [sys.executable, os.path.join(REPO, "spark_jobs", "capacity_plan.py"), "--metrics", store,
               "--model", os.path.join(store, "model.json"), "--master", a.master, "--out-plan", plan,
               "--no-report", "--driver-memory", a.driver_memory, "--conf", "spark.ui.enabled=false"] + list(more)
        load = loadavg()
        s = measured(cmd)
        if s["rc"] != 0:
            raise SystemExit("%s failed: %s" % (name, s["stderr"]))
        with open(plan) as f:
            pj = json.load(f)
        r = {"run": name, "seconds": s["seconds"], "cpu_seconds": s["cpu_seconds"],
             "spark_seconds": pj["job"]["seconds"]["spark"], "load_before": load,
             "samples": pj["data_quality"]["samples"]["addresses"],
             "aggregated_days": len((pj["job"].get("incremental") or {}).get("aggregated_days", days)),
             "merged_days": len(days) if "incremental" not in pj["job"] else
             len(pj["job"]["incremental"]["aggregated_days"]) + len(pj["job"]["incremental"]["stored_days"])}
        res["runs"].append(r)
        return pj

    job("incremental-first-%dd" % (len(days) - 1), inc, "--incremental", "--aggregates-dir", agg)
    shutil.copytree(agg, saved)
    _link_days(src, inc, days[-1:])
    plans = {}
    for rnd in range(a.repeat):
        shutil.rmtree(agg)
        shutil.copytree(saved, agg)
        plans["inc"] = job("incremental-new-day", inc, "--incremental", "--aggregates-dir", agg)
        plans["full"] = job("full-histogram", inc, "--percentile-method", "histogram")
    job("full-exact", inc)
    diff, n = max_rel_diff(plans["full"], plans["inc"])
    res["incremental_vs_full_histogram"] = {"max_rel_diff": diff, "values": n}
    _report(res, n, diff)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
