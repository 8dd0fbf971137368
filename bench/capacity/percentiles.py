# -*- coding: utf-8 -*-
"""The capacity job's percentile methods against each other: exact,
histogram (fixed log buckets, the mergeable rule incremental planning
needs; docs/day2-design.md section 6) and approx, on one generated store.

    python bench/capacity/percentiles.py --size 5M [--repeat 2] [--data-dir /tmp/enmasse-capacity-pct]
        [--master local[2]] [--driver-memory 3g] [--out results.json]

Generates the store (spark_jobs/generate_metrics.py --target-samples N, 2
days at 1-minute samples) unless --data-dir already holds one, then runs
the job end to end (``capacity_plan.py --no-report --out-aggregates``)
once per method per round, the methods alternating so that the machine's
load falls on each alike. Reports wall and CPU seconds of each run, the
Spark seconds the job reports, the load average before each run, and the
largest difference of every p95/p99 of the aggregates (per address and
node, per address and node kind) from exact's: relative to exact's value,
and whether every one is within histogram.REL_ERROR x exact +
histogram.MIN_VALUE. Markdown table on stdout, everything in --out.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "spark_jobs"))

from run import collection_importable, loadavg, machine, measured, parse_size  # noqa: E402

METHODS = ("exact", "histogram", "approx")


def _keyed(doc):
    """{(table, key...): {stat: value}} of the p95/p99 statistics of an aggregates document."""
    out = {}
    for table, key in (("address_node", ("infra", "address_space", "address", "node")),
                       ("address_kind", ("infra", "address_space", "address", "node_kind"))):
        for r in doc[table]:
            out[(table,) + tuple(r[k] for k in key)] = dict(
                (k, v) for k, v in r.items() if k.endswith(("_p95", "_p99")))
    return out


def differences(exact_doc, other_doc):
    """(compared, largest relative difference, within the histogram bound)."""
    from enmasse_capacity import histogram
    a, b = _keyed(exact_doc), _keyed(other_doc)
    if set(a) != set(b):
        raise SystemExit("the methods' aggregates have different rows")
    n, worst, within = 0, 0.0, True
    for k, stats in a.items():
        for s, want in stats.items():
            got = b[k][s]
            if want is None or got is None:
                if want != got:
                    raise SystemExit("%s %s: %r against exact %r" % (k, s, got, want))
                continue
            n += 1
            d = abs(got - want)
            if want > 0:
                worst = max(worst, d / want)
            within = within and d <= (histogram.REL_ERROR * want + histogram.MIN_VALUE) * (1 + 1e-9)
    return n, worst, within


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="5M")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--data-dir", default="/tmp/enmasse-capacity-pct")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="3g")
    p.add_argument("--out")
    a = p.parse_args(argv)
    if not collection_importable():
        return 2
    d = os.path.join(a.data_dir, "s%d" % parse_size(a.size))
    res = {"machine": machine(), "size": a.size, "runs": []}
    if not os.path.exists(os.path.join(d, "model.json")):
        g = measured([sys.executable, os.path.join(REPO, "spark_jobs", "generate_metrics.py"), "--out", d,
                      "--target-samples", str(parse_size(a.size))])
        if g["rc"] != 0:
            raise SystemExit(g["stderr"])
        res["generate_seconds"] = g["seconds"]
    docs = {}
    for rnd in range(a.repeat):
        for m in METHODS:
            agg = os.path.join(d, "aggregates-%s.json" % m)
            plan = os.path.join(d, "plan-%s.json" % m)
            cmd = [sys.executable, os.path.join(REPO, "spark_jobs", "capacity_plan.py"), "--metrics", d,
                   "--model", os.path.join(d, "model.json"), "--master", a.master, "--out-plan", plan,
                   "--no-report", "--driver-memory", a.driver_memory, "--conf", "spark.ui.enabled=false",
                   "--percentile-method", m, "--out-aggregates", agg]
            load = loadavg()
            s = measured(cmd)
            if s["rc"] != 0:
                raise SystemExit("%s failed: %s" % (m, s["stderr"]))
            with open(plan) as f:
                pj = json.load(f)
            res["runs"].append({"round": rnd + 1, "method": m, "seconds": s["seconds"],
                                "cpu_seconds": s["cpu_seconds"], "spark_seconds": pj["job"]["seconds"]["spark"],
                                "load_before": load, "samples": pj["data_quality"]["samples"]["addresses"]})
            with open(agg) as f:
                docs[m] = json.load(f)
    res["versus_exact"] = {}
    for m in ("histogram", "approx"):
        n, worst, within = differences(docs["exact"], docs[m])
        res["versus_exact"][m] = {"compared": n, "max_rel_diff": worst, "within_histogram_bound": within}
    print("| round | method | samples | wall s | CPU s | Spark s (job) | load before |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for r in res["runs"]:
        print("| %d | %s | %s | %.1f | %.1f | %.1f | %s |" % (
            r["round"], r["method"], format(r["samples"], ","), r["seconds"], r["cpu_seconds"], r["spark_seconds"],
            " ".join("%.2f" % x for x in r["load_before"])))
    for m, v in res["versus_exact"].items():
        print("%s against exact: %d p95/p99 values, largest relative difference %.2e, all within the histogram "
              "bound: %s" % (m, v["compared"], v["max_rel_diff"], v["within_histogram_bound"]))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
