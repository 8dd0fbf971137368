"""Benchmark: the data plane of a standard address space against the broker alone.

Starts tests/integration/standard_env.py's StandardEnv (3 routers as a full
mesh, 2 Artemis brokers, the auth service), creates a standard space ``dp``
(plan standard-unlimited, authentication_service ``none``) with a queue and an
anycast address through the modules, and measures, with ``--clients`` N
sender processes and N receiver processes (dpclient.py, python-qpid-proton's
event API; dpload.py runs them), ``--count`` messages of ``--size`` bytes in
total per run in each of:

* (a) direct: the broker's AMQP port (authenticated as StandardEnv's broker
  user, SASL PLAIN) to an ANYCAST queue on the broker that holds the space's
  queue (created by hand, outside the space, so the routers' autoLinks do not
  consume from it); durable messages;
* (b) routed queue: the space's listener on router r1 to the space's queue
  (the same broker behind it: the router's autoLinks carry the messages to and
  from the broker); durable messages;
* (c) anycast: senders on r1, receivers on r2 (router to router through the
  mesh, no broker); not durable.

Each sender keeps at most ``--window`` unsettled deliveries; each receiver
grants ``--prefetch`` credit and accepts every message. Each message carries
its send time (``time.monotonic()``: CLOCK_MONOTONIC, one clock for the whole
host); latency is taken at the receiver; p50/p99 over every message of the
run. Throughput = messages / (first send .. last receive). Per clients value
and case one warm-up run of ``--warmup`` messages, then ``--repeat`` rounds
that alternate the cases (a, b, c, a, b, c, ...); the median run is reported,
with the CPU seconds of the clients, of qdrouterd (r1+r2+r3) and of the broker
JVMs (b1+b2) in that run (dpload.py says how they are taken).

Router settings to compare: ``--worker-threads`` (the router entity's
workerThreads, default 4) and ``--link-capacity`` (a comma list: each value
is set on the space's listener and the broker connectors of every router in
turn, dptune.py; the routers' default is 250).

Prints a JSON result, then a table.

    python3 bench/standard/dataplane.py                          # 20,000 x 1 KiB, 3 rounds
    python3 bench/standard/dataplane.py --count 2000 --repeat 1 --warmup 200 --clients 1   # smoke
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, HERE)

import helpers  # noqa: E402
import common  # noqa: E402
import dpload  # noqa: E402
import dptune  # noqa: E402
from standard_env import StandardEnv, build_router  # noqa: E402

SPACE = "dp"
ANON = {"name": "none", "type": "none"}
LABELS = {"a": "direct to the broker", "b": "queue through one router", "c": "anycast through two routers"}
PATHS = {"a": "broker b (AMQP)", "b": "r1 -> broker b -> r1", "c": "r1 -> r2 (anycast)"}


def _ints(text):
    return [int(x) for x in str(text).split(",") if x.strip()]


def setup_space(env):
    """Converges the space: (changed, the queue's broker, the listener ports)."""
    common_args = env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(SPACE))
    res = helpers.run_module("address_space", dict(common_args, name=SPACE, type="standard", plan="standard-unlimited",
                                                   authentication_service=ANON))
    assert res.rc == 0, res.result
    changed = res.result.get("changed")
    res = helpers.run_module("address", dict(common_args, address_space=SPACE, return_addresses="all", addresses=[
        {"address": "q-routed", "type": "queue", "plan": "standard-small-queue"},
        {"address": "a-bench", "type": "anycast", "plan": "standard-small-anycast"}]))
    assert res.rc == 0, res.result
    st = dict((a["address"], a["status"]) for a in res.result["addresses"])
    assert st["q-routed"]["ready"], st
    with open(env.connection_file(SPACE)) as f:
        eps = json.load(f)["endpoints"]
    return changed or res.result.get("changed"), st["q-routed"]["brokers"][0], [e["port"] for e in eps]


def endpoints(env, broker, ports):
    direct = ("amqp://127.0.0.1:%d" % broker.amqp_port, "bench-direct", broker.management_user,
              broker.management_password)
    r1, r2 = "amqp://127.0.0.1:%d" % ports[0], "amqp://127.0.0.1:%d" % ports[1]
    return {"a": (direct, direct, True), "b": ((r1, "q-routed", None, None), (r1, "q-routed", None, None), True),
            "c": ((r1, "a-bench", None, None), (r2, "a-bench", None, None), False)}


def _median_run(runs):
    """The run of median throughput (its latency and CPU go with it)."""
    return sorted(runs, key=lambda r: r["rate"])[len(runs) // 2]


def measure(eps, clients, args, watch):
    """Per case: a warm-up, then ``--repeat`` rounds alternating the cases."""
    def one(key, count):
        send, recv, durable = eps[key]
        return dpload.run(send, recv, clients, count, args.size, args.window, args.prefetch, durable, watch,
                          args.timeout)
    for key in sorted(eps):
        one(key, args.warmup)
    runs = dict((k, []) for k in eps)
    for unused in range(args.repeat):
        for key in sorted(eps):
            r = one(key, args.count)
            runs[key].append(r)
            print("clients %d (%s): %.0f msg/s p50 %.1f ms p99 %.1f ms cpu %s" % (
                clients, key, r["rate"], r["p50_ms"], r["p99_ms"],
                dict((n, round(v, 1)) for n, v in sorted(r["cpu_seconds"].items()))), file=sys.stderr)
    out = {}
    for key, rs in runs.items():
        out[key] = {"label": LABELS[key], "durable": eps[key][2], "runs": rs, "median_run": _median_run(rs),
                    "median_rate": statistics.median(r["rate"] for r in rs)}
    out["ratio_b_a"] = out["b"]["median_rate"] / out["a"]["median_rate"]
    out["ratio_c_a"] = out["c"]["median_rate"] / out["a"]["median_rate"]
    return out


def _cpu(run, prefix):
    return sum(v for k, v in run["cpu_seconds"].items() if k.startswith(prefix))


def table(result):
    lines = ["%d messages of %d bytes per run, median of %d runs (after a warm-up of %d), window %d per sender, "
             "prefetch %d per receiver, workerThreads %s" % (
                 result["count"], result["size"], result["repeat"], result["warmup"], result["window"],
                 result["prefetch"], result["worker_threads"]), "",
             "| link capacity | clients | case | path | msg/s (median; runs) | p50 | p99 | CPU s clients / "
             "qdrouterd / broker (wall s) |", "|---:|---:|---|---|---:|---:|---:|---|"]
    for m in result["measurements"]:
        for key in ("a", "b", "c"):
            c = m["cases"][key]
            r = c["median_run"]
            lines.append("| %s | %d | (%s) %s | %s | %.0f (%s) | %.1f ms | %.1f ms | %.1f / %.1f / %.1f (%.1f) |" % (
                m["link_capacity"] or "default", m["clients"], key, c["label"], PATHS[key], c["median_rate"],
                "; ".join("%.0f" % x["rate"] for x in c["runs"]), r["p50_ms"], r["p99_ms"], r["cpu_seconds"]["clients"],
                _cpu(r, "r"), _cpu(r, "b"), r["seconds"]))
    lines.append("")
    for m in result["measurements"]:
        lines.append("link capacity %s, %d clients: (b)/(a) %.2f, (c)/(a) %.2f (goal (b)/(a) >= 0.85: %s)" % (
            m["link_capacity"] or "default", m["clients"], m["cases"]["ratio_b_a"], m["cases"]["ratio_c_a"],
            "met" if m["cases"]["ratio_b_a"] >= 0.85 else "MISSED"))
    return "\n".join(lines)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20000, help="messages per run, all senders together")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5000)
    ap.add_argument("--clients", default="4", help="sender/receiver pairs; a comma list measures each (default 4: "
                    "on the 2-core host 1 and 4 gave the same rates, docs/benchmarks.md; 4 links per path keep a "
                    "router's per-link credit from being the limit on a bigger host)")
    ap.add_argument("--window", type=int, default=1000, help="unsettled deliveries per sender at most")
    ap.add_argument("--prefetch", type=int, default=1000, help="credit per receiver")
    ap.add_argument("--worker-threads", type=int, default=None, help="the routers' workerThreads (default 4)")
    ap.add_argument("--link-capacity", default="", help="comma list, each measured in turn (0: the router's "
                    "default, 250); default: StandardEnv's (the standard role's)")
    ap.add_argument("--timeout", type=float, default=300.0)
    return ap.parse_args()


def main():
    args = parse_args()
    prefix, why = build_router()
    if prefix is None:
        raise SystemExit(why)
    # plain TCP as measured so far (tls=False: client_plain, the auth service plain); TLS is the product default
    env = StandardEnv(tempfile.mkdtemp(prefix="enmasse-bench-dp-"), prefix, routers=3, brokers=2, tls=False)
    if args.worker_threads:
        env.router_settings["workerThreads"] = args.worker_threads
    for b in env.brokers:
        b.java_memory, b.java_options = "2G", ()
    result = {"count": args.count, "size": args.size, "repeat": args.repeat, "warmup": args.warmup,
              "window": args.window, "prefetch": args.prefetch, "worker_threads": args.worker_threads or 4,
              "machine": common.machine(), "load_before": common.loadavg(), "measurements": []}
    try:
        env.start()
        unused, home, ports = setup_space(env)
        broker = [b for b in env.brokers if b.name == home][0]
        broker.create_by_hand("bench-direct", "ANYCAST", queue=True)
        result["broker"] = home
        eps = endpoints(env, broker, ports)
        watch = dict([(r.id, r.proc.pid) for r in env.routers] + [(b.name, b.proc.pid) for b in env.brokers])
        for capacity in _ints(args.link_capacity) or [env.link_capacity or 0]:
            if capacity or env.link_capacity:
                result.setdefault("connectors", []).append(
                    dptune.set_link_capacity(env, capacity, lambda: setup_space(env)[0]))
            for clients in _ints(args.clients):
                result["measurements"].append({"link_capacity": capacity, "clients": clients,
                                               "cases": measure(eps, clients, args, watch)})
        result["load_after"] = common.loadavg()
    finally:
        env.cleanup()
    print(json.dumps(result, sort_keys=True))
    print()
    print("load average before %s, after %s" % (" ".join(result["load_before"]), " ".join(result.get("load_after", []))))
    print(table(result))


if __name__ == "__main__":
    main()
