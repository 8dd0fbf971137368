"""Benchmark: the metrics collector's own speed, addresses sampled per second
from one broker holding N addresses (default 10,000 queues).

Starts a real ActiveMQ Artemis (the integration tests' ``ArtemisBroker``),
converges N queues into one brokered address space with the bulk address
module (bench/converge's setup), then times, ``--repeat`` times each:

* ``sample``: ``metrics.artemis.sample_artemis`` in one process (the one
  Jolokia bulk round trip per broker and the rows of the schema), no write;
* ``collect``: ``metrics.collect.run`` (sampling + the Parquet write of one
  file per kind and partition), in one process, as the collector timer runs it
  minus the interpreter start;
* ``module``: ``python3 plugins/modules/metrics_collect.py args.json``, what
  AnsiballZ runs on the host (interpreter start, imports, sampling, write).

    python3 bench/collect/run.py [--addresses 10000] [--repeat 5] [--out bench/results/collect.json]
"""

import argparse
import importlib.util
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import helpers  # noqa: E402

_spec = importlib.util.spec_from_file_location("converge_bench", os.path.join(REPO, "bench", "converge", "run.py"))
converge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(converge)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--addresses", type=int, default=10000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--java-memory", default="2G")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "collect.json"))
    a = p.parse_args(argv)
    reason = helpers.missing_prerequisites()
    if reason:
        sys.exit("cannot benchmark: " + reason)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import artemis, collect
    workdir = tempfile.mkdtemp(prefix="enmasse-collect-bench-")
    broker = helpers.ArtemisBroker(workdir, name="enmasse-bench", java_memory=a.java_memory, java_options=())
    res = {"addresses": a.addresses, "load_before": loadavg()}
    try:
        broker.create()
        broker.start()
        conn_file = broker.write_connection_file(os.path.join(workdir, "%s.json" % converge.SPACE), converge.SPACE,
                                                 plan=converge.SPACE_PLAN)
        bench = converge.Bench(broker, conn_file, log=lambda s: print(s, flush=True))
        bench.reset()
        t = bench.bulk([converge.queue(i) for i in range(a.addresses)], expect_changed=True)
        print("converged %d queues in %.1f s" % (a.addresses, t), flush=True)
        with open(conn_file) as f:
            conn = json.load(f)
        conn["address_space"] = converge.SPACE
        store = os.path.join(workdir, "store")
        runs = {"sample": [], "collect": [], "module": []}
        rows = None
        for i in range(a.repeat):
            t0 = time.perf_counter()
            rows, nodes = artemis.sample_artemis(conn, "bench")
            runs["sample"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            out = collect.run({"connection_file": conn_file, "address_space": converge.SPACE, "store": store,
                               "infra": "bench"})
            runs["collect"].append(time.perf_counter() - t0)
            assert out["samples"]["addresses"] >= a.addresses, out["samples"]
            m = helpers.run_module("metrics_collect", {"connection_file": conn_file, "address_space": converge.SPACE,
                                                       "store": store, "infra": "bench"})
            assert not m.failed, m
            runs["module"].append(m.seconds)
            print("run %d: sample %.2f s, collect %.2f s, module %.2f s (%d address rows)"
                  % (i + 1, runs["sample"][-1], runs["collect"][-1], runs["module"][-1], len(rows)), flush=True)
        res["address_rows"] = len(rows)
        res["seconds"] = runs
        res["median_seconds"] = dict((k, round(statistics.median(v), 3)) for k, v in runs.items())
        res["addresses_per_second"] = dict((k, round(len(rows) / v, 0)) for k, v in res["median_seconds"].items())
        res["load_after"] = loadavg()
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    keys = ("addresses", "address_rows", "median_seconds", "addresses_per_second", "load_before", "load_after")
    print(json.dumps(dict((k, res[k]) for k in keys), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
