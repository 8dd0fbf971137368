# -*- coding: utf-8 -*-
"""Capacity-planning benchmark: the Spark job against single-process peers
on generated metrics, in one run (so the machine's load is the same for both):
DuckDB (``duckdb_impl.py``, the reference peer: the job's whole aggregation,
compared with the job's statistics value by value) and pandas
(``pandas_impl.py``: per-address rates and percentiles only).

    python bench/capacity/run.py --sizes 1M,10M,50M,100M [--data-dir /tmp/enmasse-capacity-bench]
        [--master local[2]] [--driver-memory 3g] [--duckdb-threads 2] [--skip-pandas] [--skip-duckdb]
        [--pandas-cap-gb 12] [--event-log DIR] [--out bench/results/capacity.json]

For each size N (samples = rows in the store): generate the store with
spark_jobs/generate_metrics.py --target-samples N (2 days at 1-minute samples;
the address count grows with N), then run

* the real job: ``python spark_jobs/capacity_plan.py --master local[2] ...``
  (aggregation, planning and the HTML report, end to end);
* ``bench/capacity/duckdb_impl.py`` with --duckdb-threads (2: the cores
  local[2] gets): every statistic the job computes; ``compare.py`` checks
  the two agree (the job writes them with --out-aggregates);
* ``bench/capacity/pandas_impl.py`` (rates, windows, percentiles per address).

Each runs as its own process tree; a sampler reads /proc every 0.2 s and
records the peak RSS of the Python process, of the JVM (children whose
command is java) and of the tree. pandas is killed when its RSS passes
--pandas-cap-gb (the machine is shared) and that is reported as such. The
results go to a JSON file and a Markdown table on stdout.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PAGE = os.sysconf("SC_PAGE_SIZE")


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9}
    if s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def _children(pid):
    out = []
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return out
    for k in kids:
        out.append(k)
        out.extend(_children(k))
    return out


def _rss(pid):
    try:
        with open("/proc/%d/statm" % pid) as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid):
    """user + system CPU seconds of one process so far."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / float(TICK)
    except (OSError, ValueError, IndexError):
        return 0.0


def _cmd(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Sampler(threading.Thread):
    def __init__(self, proc, cap_bytes=None, interval=0.2):
        super().__init__(daemon=True)
        self.proc = proc
        self.cap = cap_bytes
        self.interval = interval
        self.peak = {"python": 0, "jvm": 0, "total": 0}
        self.cpu = {}       # pid -> CPU seconds (the last reading of each process of the tree)
        self.killed = False
        self.stop = False

    def run(self):
        while not self.stop and self.proc.poll() is None:
            pids = [self.proc.pid] + _children(self.proc.pid)
            py = jvm = 0
            for p in pids:
                self.cpu[p] = max(self.cpu.get(p, 0.0), _cpu(p))
                r = _rss(p)
                c = _cmd(p)
                if "java" in c.split(" ")[0]:
                    jvm += r
                elif "python" in c:
                    py += r
            tot = py + jvm
            self.peak["python"] = max(self.peak["python"], py)
            self.peak["jvm"] = max(self.peak["jvm"], jvm)
            self.peak["total"] = max(self.peak["total"], tot)
            if self.cap and tot > self.cap:
                self.killed = True
                for p in reversed(pids):
                    try:
                        os.kill(p, 9)
                    except OSError:
                        pass
                return
            time.sleep(self.interval)


def measured(cmd, cap_bytes=None, env=None):
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    s = Sampler(proc, cap_bytes)
    s.start()
    out, err = proc.communicate()
    s.stop = True
    s.join()
    return {"seconds": round(time.time() - t0, 2), "rc": proc.returncode, "killed_at_cap": s.killed,
            "cpu_seconds": round(sum(s.cpu.values()), 1),
            "peak_rss_bytes": s.peak, "stdout": out.decode(errors="replace")[-2000:],
            "stderr": err.decode(errors="replace")[-3000:]}


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def machine():
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, check=False, text=True).stderr.splitlines()[0]
    except OSError:
        java = None
    import pyspark
    import pandas
    try:
        import duckdb
        duck = duckdb.__version__
    except ImportError:
        duck = None
    return {"duckdb": duck, "cpus": os.cpu_count(), "cpu": cpu, "mem_bytes": mem, "python": platform.python_version(),
            "java": java, "pyspark": pyspark.__version__, "pandas": pandas.__version__,
            "os": platform.platform()}


def compare(plan_path, pandas_path):
    """Largest relative difference between Spark and pandas statistics."""
    with open(plan_path) as f:
        plan = json.load(f)
    with open(pandas_path) as f:
        pd_rows = json.load(f)["stats"]
    spark = {}
    for inf in plan["infrastructures"]:
        for s in inf["address_spaces"]:
            for a in s["addresses"]:
                if a.get("load"):
                    spark[(inf["infra"], s["name"], a["address"], a["load"]["measured_on"])] = a["load"]
    worst = 0.0
    n = 0
    for r in pd_rows:
        k = (r["infra"], r["address_space"], r["address"], r["node_kind"])
        if k not in spark:
            continue
        for side, pre in (("ingress", "in"), ("egress", "out")):
            for st in ("avg", "p95", "p99", "max"):
                a, b = spark[k][side][st], r["%s_%s" % (pre, st)]
                if a is None or b is None:
                    continue
                d = abs(a - b) / max(abs(a), abs(b), 1e-9)
                worst = max(worst, d)
                n += 1
    return {"compared_values": n, "max_relative_difference": worst}


def collection_importable():
    """The generator and the job import the collection's module_utils as
    ansible_collections.enmasse.messaging...: the directory holding
    ansible_collections/ must be on PYTHONPATH (the children inherit it)."""
    try:
        __import__("ansible_collections.enmasse.messaging.plugins.module_utils.model.schema")
    except ImportError as e:
        sys.stderr.write("run.py: cannot import the enmasse.messaging collection (%s); in a checkout run "
                         "`source scripts/collection-path.sh` first (it sets PYTHONPATH)\n" % e)
        return False
    return True


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--sizes", default="1M,10M,50M")
    p.add_argument("--data-dir", default="/tmp/enmasse-capacity-bench")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default="3g")
    p.add_argument("--duckdb-threads", type=int, default=2)
    p.add_argument("--duckdb-memory-limit", default=None, help="DuckDB memory_limit (default: DuckDB's)")
    p.add_argument("--skip-duckdb", action="store_true")
    p.add_argument("--event-log", help="write the job's Spark event log here (stages, shuffle, spills)")
    p.add_argument("--job-args", default="", help="extra arguments of capacity_plan.py (one string, split on spaces)")
    p.add_argument("--shuffle-partitions", type=int, default=None)
    p.add_argument("--pandas-cap-gb", type=float, default=12.0)
    p.add_argument("--skip-pandas", action="store_true")
    p.add_argument("--skip-spark", action="store_true")
    p.add_argument("--reuse-data", action="store_true", help="do not regenerate a size that exists")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "capacity.json"))
    return p


def main(argv=None):
    a = _parser().parse_args(argv)
    if not collection_importable():
        return 2
    results = {"machine": machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "master": a.master, "driver_memory": a.driver_memory, "runs": []}
    if os.path.exists(a.out):
        try:
            with open(a.out) as f:
                old = json.load(f)
            results["runs"] = list(old.get("runs", []))
        except ValueError:
            pass
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    for size in [parse_size(x) for x in a.sizes.split(",")]:
        d = os.path.join(a.data_dir, "n%d" % size)
        run = {"target_samples": size, "load_before": loadavg()}
        if not (a.reuse_data and os.path.exists(os.path.join(d, "truth.json"))) and not _generate(d, size, run):
            results["runs"].append(run)
            continue
        with open(os.path.join(d, "truth.json")) as f:
            truth = json.load(f)
        run["samples"] = truth["samples"]
        run["addresses"] = truth["n_addresses"]
        run["data_bytes"] = sum(os.path.getsize(os.path.join(r, x)) for r, _unused, fs in os.walk(d) for x in fs)
        plan = os.path.join(d, "plan.json")
        if not a.skip_spark:
            _run_spark(a, d, plan, run)
        if not a.skip_duckdb:
            _run_duckdb(a, d, run)
        if not a.skip_pandas:
            _run_pandas(a, d, plan, run)
        results["runs"] = [x for x in results["runs"] if x.get("target_samples") != size] + [run]
        with open(a.out, "w") as f:
            json.dump(results, f, indent=2)
        print(summary_line(run), flush=True)
    print(markdown(results))
    return 0


def _generate(d, size, run):
    """The store of ``size`` samples in ``d``; False (with its stderr in
    ``run``) when the generator failed."""
    g = measured([sys.executable, os.path.join(REPO, "spark_jobs", "generate_metrics.py"), "--out", d,
                  "--target-samples", str(size)])
    run["generate"] = {k: g[k] for k in ("seconds", "rc", "peak_rss_bytes")}
    if g["rc"] != 0:
        run["generate"]["stderr"] = g["stderr"]
        return False
    return True


def _run_spark(a, d, plan, run):
    """The capacity job, end to end, on the store ``d``: run["spark"]."""
    cmd = [sys.executable, os.path.join(REPO, "spark_jobs", "capacity_plan.py"), "--metrics", d,
           "--model", os.path.join(d, "model.json"), "--master", a.master, "--out-plan", plan,
           "--out-report", os.path.join(d, "report.html"), "--driver-memory", a.driver_memory,
           "--conf", "spark.ui.enabled=false", "--out-aggregates", os.path.join(d, "aggregates.json")]
    if a.event_log:
        os.makedirs(a.event_log, exist_ok=True)
        cmd += ["--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.dir=" + a.event_log]
    cmd += a.job_args.split()
    if a.shuffle_partitions:
        cmd += ["--shuffle-partitions", str(a.shuffle_partitions)]
    run["load_before_spark"] = loadavg()
    s = measured(cmd)
    run["spark"] = {k: s[k] for k in ("seconds", "cpu_seconds", "rc", "peak_rss_bytes")}
    run["load_after_spark"] = loadavg()
    if s["rc"] == 0:
        with open(plan) as f:
            pj = json.load(f)
        run["spark"]["job_seconds"] = pj["job"]["seconds"]
        run["spark"]["stage_seconds"] = pj["data_quality"]["timings_seconds"]
        run["spark"]["phases"] = pj["job"].get("phases")
    else:
        run["spark"]["stderr"] = s["stderr"]


def _run_duckdb(a, d, run):
    """The DuckDB peer on the store ``d``: run["duckdb"], and its agreement
    with the job's aggregates and the time ratios when the job ran."""
    out = os.path.join(d, "duckdb.json")
    cmd = [sys.executable, os.path.join(HERE, "duckdb_impl.py"), d, out, "--threads", str(a.duckdb_threads),
           "--temp-dir", os.path.join(a.data_dir, "duckdb-spill")]
    if a.duckdb_memory_limit:
        cmd += ["--memory-limit", a.duckdb_memory_limit]
    run["load_before_duckdb"] = loadavg()
    r = measured(cmd)
    run["duckdb"] = {k: r[k] for k in ("seconds", "cpu_seconds", "rc", "peak_rss_bytes")}
    if r["rc"] != 0:
        run["duckdb"]["stderr"] = r["stderr"][-1500:]
        return
    with open(out) as f:
        peer = json.load(f)
    run["duckdb"]["timings"] = peer["timings"]
    agg = os.path.join(d, "aggregates.json")
    if not a.skip_spark and run["spark"]["rc"] == 0:
        from compare import compare as compare_aggregates
        with open(agg) as f:
            c = compare_aggregates(json.load(f), peer)
        run["spark_vs_duckdb"] = {"compared_values": c["values"],
                                  "max_relative_difference": c["max_relative_difference"],
                                  "problems": c["problems"][:10]}
        run["ratio_spark_duckdb"] = round(run["spark"]["seconds"] / run["duckdb"]["seconds"], 2)
        if run["duckdb"]["cpu_seconds"]:
            run["cpu_ratio_spark_duckdb"] = round(run["spark"]["cpu_seconds"]
                                                  / run["duckdb"]["cpu_seconds"], 2)


def _run_pandas(a, d, plan, run):
    """The pandas peer on the store ``d`` (killed at --pandas-cap-gb):
    run["pandas"], compared with the plan when the job ran."""
    out = os.path.join(d, "pandas.json")
    run["load_before_pandas"] = loadavg()
    r = measured([sys.executable, os.path.join(HERE, "pandas_impl.py"), d, out],
                 cap_bytes=int(a.pandas_cap_gb * 2 ** 30))
    run["pandas"] = {k: r[k] for k in ("seconds", "rc", "killed_at_cap", "peak_rss_bytes")}
    if r["rc"] == 0:
        with open(out) as f:
            run["pandas"]["timings"] = json.load(f)["timings"]
        if os.path.exists(plan) and not a.skip_spark and run["spark"]["rc"] == 0:
            run["spark_vs_pandas"] = compare(plan, out)
    elif r["killed_at_cap"]:
        run["pandas"]["note"] = "killed: RSS passed the %.0f GiB cap" % a.pandas_cap_gb
    else:
        run["pandas"]["stderr"] = r["stderr"][-1500:]


def _gib(b):
    return "%.2f" % (b / 2.0 ** 30) if b else "-"


def summary_line(r):
    s, dk, pnd = r.get("spark") or {}, r.get("duckdb") or {}, r.get("pandas") or {}
    return ("%s samples: spark %ss rc=%s peak %s GiB | duckdb %ss rc=%s peak %s GiB | ratio %s | "
            "pandas %ss rc=%s peak %s GiB%s" % (
                r.get("samples"), s.get("seconds"), s.get("rc"), _gib((s.get("peak_rss_bytes") or {}).get("total")),
                dk.get("seconds"), dk.get("rc"), _gib((dk.get("peak_rss_bytes") or {}).get("total")),
                r.get("ratio_spark_duckdb"),
                pnd.get("seconds"), pnd.get("rc"), _gib((pnd.get("peak_rss_bytes") or {}).get("total")),
                " (killed at cap)" if pnd.get("killed_at_cap") else ""))


def markdown(results):
    lines = ["| samples | addresses | Parquet | Spark wall s (CPU s) | Spark agg s | Spark peak GiB (JVM / Python) "
             "| DuckDB wall s (CPU s) | DuckDB peak GiB | Spark / DuckDB wall (CPU) | max rel. diff (values) "
             "| pandas wall s | pandas peak GiB | load avg (1 min) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(results["runs"], key=lambda r: r.get("samples") or 0):
        s, dk, pnd = r.get("spark") or {}, r.get("duckdb") or {}, r.get("pandas") or {}
        pk = s.get("peak_rss_bytes") or {}
        pp = pnd.get("peak_rss_bytes") or {}
        pandas_s = pnd.get("seconds") if pnd.get("rc") == 0 else ("killed at cap" if pnd.get("killed_at_cap")
                                                                  else ("rc=%s" % pnd.get("rc") if pnd else "-"))
        cmp_ = r.get("spark_vs_duckdb")
        lines.append("| %s | %s | %s MiB | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "{:,}".format(r.get("samples") or 0), r.get("addresses"), int((r.get("data_bytes") or 0) / 2 ** 20),
            "%s (%s)" % (s.get("seconds"), s.get("cpu_seconds", "-")) if s.get("rc") == 0 else "rc=%s" % s.get("rc"),
            (s.get("job_seconds") or {}).get("spark", "-"), _gib(pk.get("jvm")), _gib(pk.get("python")),
            "%s (%s)" % (dk.get("seconds"), dk.get("cpu_seconds", "-")) if dk.get("rc") == 0
            else ("rc=%s" % dk.get("rc") if dk else "-"),
            _gib((dk.get("peak_rss_bytes") or {}).get("total")),
            "%.2fx (%s)" % (r["ratio_spark_duckdb"], "%.2fx" % r["cpu_ratio_spark_duckdb"]
                            if r.get("cpu_ratio_spark_duckdb") else "-") if r.get("ratio_spark_duckdb") else "-",
            ("%.1e (%d)%s" % (cmp_["max_relative_difference"], cmp_["compared_values"],
                              "" if not cmp_["problems"] else " PROBLEMS")) if cmp_ else "-",
            pandas_s, _gib(pp.get("total")),
            (r.get("load_before_spark") or ["-"])[0]))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
