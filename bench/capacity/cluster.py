# -*- coding: utf-8 -*-
"""The capacity job on the spark-cluster scenario's cluster (molecule/spark-cluster:
a master, two workers, the planner host; podman containers on this machine),
for stores too big for a test: time, peak RSS of every process (driver Python,
driver JVM, master, workers, executors) and disk (the store, the workers'
shuffle and spill space).

    molecule converge -s spark-cluster                 # the cluster, left running
    python spark_jobs/generate_metrics.py --out <ephemeral>/metrics/n500m --target-samples 500M
    python bench/capacity/cluster.py --store /srv/enmasse-metrics/n500m --host-store <ephemeral>/metrics/n500m \\
        [--executor-memory 1g] [--out bench/results/cluster.json]
    molecule destroy -s spark-cluster

``--store`` is the path inside the containers (the shared mount), ``--host-store``
the same directory on this machine (for its size). RSS is read from /proc of
this machine (rootful podman: the containers' processes are visible here),
every second; disk with du inside the workers every 10 s.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
CONTAINERS = ("enmasse-spark-master", "enmasse-spark-worker-1", "enmasse-spark-worker-2", "enmasse-spark-planner")
WORKERS = ("enmasse-spark-worker-1", "enmasse-spark-worker-2")


def _podman(*args):
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, check=False)


def _cid(name):
    return _podman("inspect", "--format", "{{.Id}}", name).stdout.strip()


def _role(cmd):
    for key, role in (("CoarseGrainedExecutorBackend", "executor"), ("deploy.master.Master", "master"),
                      ("deploy.worker.Worker", "worker"), ("SparkSubmit", "driver JVM"),
                      ("capacity_plan.py", "driver Python")):
        if key in cmd:
            return role
    return None


def _procs(ids):
    """{(container, role): rss} of the processes of the containers."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % pid) as f:
                cg = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/statm" % pid) as f:
                rss = int(f.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
        for name, cid in ids.items():
            if cid and cid in cg:
                role = _role(cmd)
                if role:
                    out[(name, role)] = out.get((name, role), 0) + rss
    return out


class Sampler(threading.Thread):
    def __init__(self, ids):
        super().__init__(daemon=True)
        self.ids = ids
        self.peak = {}
        self.disk = {}
        self.stop = False

    def run(self):
        n = 0
        while not self.stop:
            for k, v in _procs(self.ids).items():
                self.peak[k] = max(self.peak.get(k, 0), v)
            if n % 10 == 0:
                for w in WORKERS:
                    r = _podman("exec", w, "du", "-sb", "/var/lib/enmasse-spark")
                    try:
                        self.disk[w] = max(self.disk.get(w, 0), int(r.stdout.split()[0]))
                    except (ValueError, IndexError):
                        pass
            n += 1
            time.sleep(1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--store", required=True, help="the store's path inside the containers")
    p.add_argument("--host-store", help="the same directory on this machine (for its size)")
    p.add_argument("--master", default="spark://enmasse-spark-master:7077")
    p.add_argument("--driver-memory", default="1g")
    p.add_argument("--executor-memory", default="1g")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results",
                                                 "cluster.json"))
    a = p.parse_args(argv)
    ids = dict((c, _cid(c)) for c in CONTAINERS)
    if not all(ids.values()):
        sys.exit("the spark-cluster scenario is not running (molecule converge -s spark-cluster): %s" % ids)
    with open("/proc/loadavg") as f:
        load_before = [float(x) for x in f.read().split()[:3]]
    state = json.loads(_podman("exec", "enmasse-spark-master", "curl", "-s",
                               "http://enmasse-spark-master:8080/json/").stdout or "{}")
    venv = "/opt/enmasse-capacity/venv"
    # the environment the role's wrapper (enmasse-capacity-plan) sets: the
    # venv's spark-submit finds SPARK_HOME through the venv's python
    cmd = ["exec", "-e", "PYTHONPATH=/opt/enmasse-capacity/lib", "-e", "PATH=%s/bin:/usr/bin:/bin" % venv,
           "-e", "PYSPARK_PYTHON=%s/bin/python" % venv, "-e", "PYSPARK_DRIVER_PYTHON=%s/bin/python" % venv,
           "enmasse-spark-planner",
           venv + "/bin/spark-submit", "--master", a.master, "--driver-memory", a.driver_memory,
           "--executor-memory", a.executor_memory, "--executor-cores", "1",
           "--conf", "spark.driver.host=enmasse-spark-planner",
           "/opt/enmasse-capacity/lib/capacity_plan.py", "--master", a.master, "--metrics", a.store,
           "--model", a.store + "/model.json", "--out-plan", "/tmp/bench-plan.json",
           "--out-report", "/tmp/bench-report.html", "--progress-file", "/tmp/bench-progress.json"]
    s = Sampler(ids)
    s.start()
    t0 = time.time()
    proc = subprocess.run(["podman"] + cmd, capture_output=True, text=True, check=False)
    seconds = time.time() - t0
    s.stop = True
    s.join()
    res = {"store": a.store, "seconds": round(seconds, 1), "rc": proc.returncode, "load_before": load_before,
           "cluster": {"workers": state.get("aliveworkers"), "cores": state.get("cores"),
                       "memory_mib": state.get("memory")},
           "executor_memory": a.executor_memory, "driver_memory": a.driver_memory,
           "peak_rss": dict(("%s: %s" % k, v) for k, v in sorted(s.peak.items())),
           "peak_disk_bytes": s.disk}
    if a.host_store:
        res["store_bytes"] = sum(os.path.getsize(os.path.join(r, x)) for r, _d, fs in os.walk(a.host_store)
                                 for x in fs)
    if proc.returncode == 0:
        plan = json.loads(_podman("exec", "enmasse-spark-planner", "cat", "/tmp/bench-plan.json").stdout)
        res["job"] = plan["job"]
        res["samples"] = plan["data_quality"]["samples"]
    else:
        res["stderr"] = proc.stderr[-3000:]
    with open("/proc/loadavg") as f:
        res["load_after"] = [float(x) for x in f.read().split()[:3]]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps(dict((k, v) for k, v in res.items() if k != "job"), indent=1))
    if proc.returncode == 0:
        for ph in res["job"].get("phases") or []:
            print("  %-80s %8.1f s" % (ph["phase"], ph["seconds"]))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
