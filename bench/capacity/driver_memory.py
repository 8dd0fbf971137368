# -*- coding: utf-8 -*-
"""Driver memory of the capacity job against the number of addresses.

    python bench/capacity/driver_memory.py --addresses 20000,50000,100000 [--spaces 20] [--brokers 4]
        [--tracemalloc] [--out-dir DIR] [--json results.json]

Everything the job's Python driver holds after Spark, without Spark: for
each size a child process builds the rows ``aggregate`` collects (pyspark
``Row`` objects with the columns ``_series_stats`` and
``_address_kind_stats`` return, one series per address on one broker, with
2 days at 5-minute windows), names them with ``aggregate._named_results``,
reads a model with those addresses (``read.load_model``), plans
(``planner.Planner``) and writes the plan and the HTML report
(``cli._write_outputs``): the driver's part of a real run after its
collects. It reports the child's peak RSS (VmHWM of /proc/self/status), and
with --tracemalloc the top allocation lines at the peak (slower).
The Spark part of the driver (py4j, the collected rows while Spark runs) is
not in it: those rows are built here the same way.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# --job-dir: measure another checkout's job (e.g. the code before a change)
JOB_DIR = os.environ.get("ENMASSE_CAPACITY_JOB_DIR") or os.path.join(REPO, "spark_jobs")
sys.path.insert(0, JOB_DIR)

T0 = 1709251200.0
W = 300.0


def vm_hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def synthetic(n, spaces=20, brokers=4):
    """(series rows, address-kind rows, names of ids, model document) for n
    addresses: one queue per address on one broker."""
    from pyspark.sql import Row
    from enmasse_capacity.ids import META_BITS
    n_win = int(2 * 86400 / W)
    t_last = T0 + (n_win - 1) * W
    SRow = Row("aid", "nid", "thr_avg", "thr_max", "kind", "depth_last", "depth_max", "size_last", "size_max",
               "consumers_last", "links_last", "meta", "t_first", "t_last", "samples", "resets", "gaps", "dups",
               "windows", "windows_valid", "bad", "thr_p")
    KRow = Row("aid", "kind", "in_avg", "in_max", "out_avg", "out_max", "thr_avg", "thr_max", "windows",
               "windows_valid", "in_p", "out_p", "thr_p")
    addr_names, node_names = {}, {}
    for b in range(brokers):
        node_names[1000 + b] = ("i", "broker-%d" % b, "broker")
    series, ak = [], []
    docs = dict(("s%d" % s, []) for s in range(spaces))
    for a in range(n):
        sp = "s%d" % (a % spaces)
        name = "queue-%07d" % a
        aid = 10 ** 9 + a
        addr_names[aid] = ("i", sp, name)
        docs[sp].append({"address": name, "type": "queue", "plan": "standard-small-queue"})
        thr = 0.001 * (a % 1000)
        meta = 0 << META_BITS | (1 << 2)  # no plan, queue, broker, good
        series.append(SRow(aid, 1000 + a % brokers, thr, thr * 2, 0, a % 50, a % 70, (a % 50) * 1024,
                           (a % 70) * 1024, 1, 1.0, meta, T0, t_last, 2 * n_win, 0, 0, 0, n_win, n_win, 0,
                           [thr * 1.5, thr * 1.9]))
        ak.append(KRow(aid, 0, thr / 2, thr, thr / 2, thr, thr, thr * 2, n_win, n_win,
                       [thr * 0.7, thr * 0.9], [thr * 0.7, thr * 0.9], [thr * 1.5, thr * 1.9]))
    model = {"infra": "i", "address_spaces": [
        {"name": sp, "type": "standard", "plan": "standard-unlimited", "addresses": addrs}
        for sp, addrs in sorted(docs.items())]}
    return series, ak, addr_names, node_names, model


def child(n, spaces, brokers, out_dir, trace):
    """One measurement (run in its own process)."""
    if trace:
        import tracemalloc
        tracemalloc.start(1)
    from enmasse_capacity import aggregate as agm, cli, planner, read
    from enmasse_capacity import rules as lib
    series, ak, addr_names, node_names, model = synthetic(n, spaces, brokers)
    model_path = os.path.join(out_dir, "model-%d.json" % n)
    with open(model_path, "w") as f:
        json.dump(model, f)
    del model
    t = time.time()
    out = {"totals": {"node_rows": 0}}
    agm._named_results(out, series, ak, [], addr_names, node_names, {})
    out["authoritative"] = dict((k, "broker") for k in addr_names.values())
    out.update({"space_windows": [], "node_windows": [], "node_throughput": [], "timings": {}})
    del series, ak
    cm = lib.load_capacity_model({})
    spaces_, cat, cur = read.load_model(model_path)
    plan = planner.Planner(out, spaces_, cat, cur, cm, []).run()
    plan["job"] = {"seconds": {}}

    class Args(object):
        no_report = False
        out_report = os.path.join(out_dir, "report-%d.html" % n)
        out_plan = os.path.join(out_dir, "plan-%d.json" % n)
        out_aggregates = None

    cli._write_outputs(Args, plan, out, cli.Progress(), t)
    res = {"addresses": n, "vm_hwm_bytes": vm_hwm(), "seconds": round(time.time() - t, 1),
           "plan_bytes": os.path.getsize(Args.out_plan)}
    if trace:
        import tracemalloc
        cur_b, peak_b = tracemalloc.get_traced_memory()
        res["tracemalloc_peak_bytes"] = peak_b
        snap = tracemalloc.take_snapshot()
        res["top"] = ["%s: %.1f MiB" % (s.traceback[0], s.size / 2.0 ** 20)
                      for s in snap.statistics("lineno")[:15]]
    return res


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--addresses", default="20000,50000,100000")
    p.add_argument("--spaces", type=int, default=20)
    p.add_argument("--brokers", type=int, default=4)
    p.add_argument("--tracemalloc", action="store_true")
    p.add_argument("--out-dir")
    p.add_argument("--job-dir", help="the spark_jobs directory whose job is measured (default: this checkout's)")
    p.add_argument("--json")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    out_dir = a.out_dir or tempfile.mkdtemp(prefix="enmasse-driver-mem-")
    os.makedirs(out_dir, exist_ok=True)
    if a.child:
        sys.stdout.write(json.dumps(child(a.child, a.spaces, a.brokers, out_dir, a.tracemalloc)) + "\n")
        return 0
    results = []
    for n in [int(x) for x in a.addresses.split(",")]:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", str(n), "--spaces", str(a.spaces),
               "--brokers", str(a.brokers), "--out-dir", out_dir] + (["--tracemalloc"] if a.tracemalloc else [])
        env = dict(os.environ, ENMASSE_CAPACITY_JOB_DIR=os.path.abspath(a.job_dir or JOB_DIR))
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
        results.append(r)
        sys.stdout.write("| %d | %.2f GiB | %.0f KiB | %.1f s |\n" % (
            n, r["vm_hwm_bytes"] / 2.0 ** 30, r["vm_hwm_bytes"] / 1024.0 / n, r["seconds"]))
        for line in r.get("top", []):
            sys.stdout.write("    %s\n" % line)
        sys.stdout.flush()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
