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

Security (``--security``, a comma list, default ``plain``): ``plain`` is
the space ``dp`` above (plain TCP, SASL ANONYMOUS, authentication_service
``none``); ``tls-auth`` is a second space ``dp-tls`` on the same routers and
brokers with the collection's defaults for clients: its listener takes TLS
(the sslProfile ``clients``, a certificate from StandardEnv's local CA; the
clients trust that CA, ``amqps``, and check the name) and SASL PLAIN of a
space user, which the routers check with the auth service (over TLS, its
users file for the space's realm); cases (b) and (c) run on it too, as
``b+tls`` and ``c+tls``, in the same rounds (a, b, b+tls, c, c+tls, ...), and
the result has the ratio ON/OFF per case. With both, the routers' space
listeners take plain AMQP next to TLS (client_plain: one sslProfile, not
requireSsl), so ``dp`` stays plain TCP; with ``tls-auth`` alone they are
TLS-only (the product default). ``--broker-tls``: the brokers' acceptors are
TLS too (StandardEnv broker_tls: the routers' broker connectors and case (a)
go over TLS) for every space; compare it with a run without.

Prints a JSON result, then a table.

    python3 bench/standard/dataplane.py                          # 20,000 x 1 KiB, 3 rounds
    python3 bench/standard/dataplane.py --count 2000 --repeat 1 --warmup 200 --clients 1   # smoke
    python3 bench/standard/dataplane.py --security plain,tls-auth [--broker-tls]   # TLS + auth on versus off
"""

import argparse
import json
import os
import secrets
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
TLS_SPACE = "dp-tls"  # --security tls-auth: TLS clients, SASL PLAIN through the auth service
ANON = {"name": "none", "type": "none"}
LABELS = {"a": "direct to the broker", "b": "queue through one router", "c": "anycast through two routers"}
PATHS = {"a": "broker b (AMQP)", "b": "r1 -> broker b -> r1", "c": "r1 -> r2 (anycast)"}
SECURITY = ("plain", "tls-auth")
TLS_SUFFIX = "+tls"
Endpoint = dpload.Endpoint


class BenchEnv(StandardEnv):
    """StandardEnv whose space listeners also take plain AMQP next to TLS
    (``client_plain``) when ``both`` security settings are measured."""

    both = False

    def write_infra(self):
        super(BenchEnv, self).write_infra()
        if self.both and self.tls:
            with open(self.infra_file) as f:
                data = json.load(f)
            data["client_plain"] = True
            with open(self.infra_file, "w") as f:
                json.dump(data, f)


def _ints(text):
    return [int(x) for x in str(text).split(",") if x.strip()]


def setup_space(env, space=SPACE):
    """Converges the space: (changed, the queue's broker, the listener ports).
    ``TLS_SPACE``: the collection's default authentication service."""
    common_args = env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(space))
    auth = {} if space == TLS_SPACE else {"authentication_service": ANON}
    res = helpers.run_module("address_space", dict(common_args, name=space, type="standard", plan="standard-unlimited",
                                                   **auth))
    assert res.rc == 0, res.result
    changed = res.result.get("changed")
    res = helpers.run_module("address", dict(common_args, address_space=space, return_addresses="all", addresses=[
        {"address": "q-routed", "type": "queue", "plan": "standard-small-queue"},
        {"address": "a-bench", "type": "anycast", "plan": "standard-small-anycast"}]))
    assert res.rc == 0, res.result
    st = dict((a["address"], a["status"]) for a in res.result["addresses"])
    assert st["q-routed"]["ready"], st
    with open(env.connection_file(space)) as f:
        eps = json.load(f)["endpoints"]
    return changed or res.result.get("changed"), st["q-routed"]["brokers"][0], [e["port"] for e in eps]


def endpoints(env, broker, ports, direct=True):
    """Cases (a) (``direct``), (b), (c) of the plain space: (send, recv, durable)."""
    out = {}
    if direct:
        tls = env.broker_tls
        ep = Endpoint("%s://127.0.0.1:%d" % ("amqps" if tls else "amqp", broker.amqp_port), "bench-direct",
                      broker.management_user, broker.management_password, env.tls_files["ca"] if tls else None)
        out["a"] = (ep, ep, True)
    r1, r2 = "amqp://127.0.0.1:%d" % ports[0], "amqp://127.0.0.1:%d" % ports[1]
    out["b"] = (Endpoint(r1, "q-routed"), Endpoint(r1, "q-routed"), True)
    out["c"] = (Endpoint(r1, "a-bench"), Endpoint(r2, "a-bench"), False)
    return out


def tls_endpoints(env, ports, user):
    """Cases (b) and (c) of the TLS space: amqps, the CA, SASL PLAIN as ``user`` (name, password)."""
    r1, r2 = ("amqps://127.0.0.1:%d" % p for p in ports[:2])
    ca = env.ca.cert_file
    return {"b" + TLS_SUFFIX: (Endpoint(r1, "q-routed", user[0], user[1], ca),
                               Endpoint(r1, "q-routed", user[0], user[1], ca), True),
            "c" + TLS_SUFFIX: (Endpoint(r1, "a-bench", user[0], user[1], ca),
                               Endpoint(r2, "a-bench", user[0], user[1], ca), False)}


def _median_run(runs):
    """The run of median throughput (its latency and CPU go with it)."""
    return sorted(runs, key=lambda r: r["rate"])[len(runs) // 2]


def measure(eps, clients, args, watch):
    """Per case: a warm-up, then ``--repeat`` rounds alternating the cases."""
    def one(key, count):
        send, recv, durable = eps[key]
        try:
            return dpload.run(send, recv, clients, count, args.size, args.window, args.prefetch, durable, watch,
                              args.timeout)
        except RuntimeError as e:
            raise RuntimeError("case %s: %s" % (key, e))
    for key in sorted(eps):  # a, b, b+tls, c, c+tls: the security settings alternate
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
        out[key] = {"label": LABELS[key[0]] + (" (TLS + SASL PLAIN)" if key.endswith(TLS_SUFFIX) else ""),
                    "durable": eps[key][2], "runs": rs, "median_run": _median_run(rs),
                    "median_rate": statistics.median(r["rate"] for r in rs)}
    for key in ("b", "c"):
        if key in out and "a" in out:
            out["ratio_%s_a" % key] = out[key]["median_rate"] / out["a"]["median_rate"]
        if key in out and key + TLS_SUFFIX in out:  # ON / OFF
            out["ratio_tls_%s" % key] = out[key + TLS_SUFFIX]["median_rate"] / out[key]["median_rate"]
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
        for key in ("a", "b", "b" + TLS_SUFFIX, "c", "c" + TLS_SUFFIX):
            if key not in m["cases"]:
                continue
            c = m["cases"][key]
            r = c["median_run"]
            lines.append("| %s | %d | (%s) %s | %s | %.0f (%s) | %.1f ms | %.1f ms | %.1f / %.1f / %.1f (%.1f) |" % (
                m["link_capacity"] or "default", m["clients"], key, c["label"], PATHS[key[0]], c["median_rate"],
                "; ".join("%.0f" % x["rate"] for x in c["runs"]), r["p50_ms"], r["p99_ms"], r["cpu_seconds"]["clients"],
                _cpu(r, "r"), _cpu(r, "b"), r["seconds"]))
    lines.append("")
    for m in result["measurements"]:
        lines.append(_ratios(m))
    return "\n".join(lines)


def _ratios(m):
    c, head = m["cases"], "link capacity %s, %d clients:" % (m["link_capacity"] or "default", m["clients"])
    out = []
    if "ratio_b_a" in c:
        out.append(" (b)/(a) %.2f, (c)/(a) %.2f (goal (b)/(a) >= 0.85: %s)" % (
            c["ratio_b_a"], c["ratio_c_a"], "met" if c["ratio_b_a"] >= 0.85 else "MISSED"))
    for key in ("b", "c"):
        if "ratio_tls_" + key in c:
            r = c["ratio_tls_" + key]
            out.append(" TLS+auth/plain (%s) %.2f (goal >= 0.8: %s)" % (key, r, "met" if r >= 0.8 else "MISSED"))
    return head + ";".join(out)


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
    ap.add_argument("--security", default="plain", help="comma list of plain (ANONYMOUS, plain TCP) and tls-auth "
                    "(TLS + SASL PLAIN through the auth service), measured in the same rounds")
    ap.add_argument("--broker-tls", action="store_true", help="the brokers' acceptors on TLS (every space)")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    args.security = [x.strip() for x in args.security.split(",") if x.strip()]
    bad = [x for x in args.security if x not in SECURITY]
    if bad or not args.security:
        ap.error("--security: %s: each must be one of %s" % (bad or "empty", ", ".join(SECURITY)))
    return args


def start_spaces(env, args):
    """Starts ``env``, converges the spaces of ``args.security``: (the queue's broker, the cases' endpoints)."""
    env.start()
    eps, homes = {}, set()
    if "plain" in args.security:
        unused, home, ports = setup_space(env)
        homes.add(home)
        broker = [b for b in env.brokers if b.name == home][0]
        broker.create_by_hand("bench-direct", "ANYCAST", queue=True)
        eps.update(endpoints(env, broker, ports))
    if "tls-auth" in args.security:
        user = ("bench", secrets.token_urlsafe(16))
        unused, home, ports = setup_space(env, TLS_SPACE)
        homes.add(home)
        env.auth_service.write_users(TLS_SPACE, {user[0]: user[1]})
        eps.update(tls_endpoints(env, ports, user))
    return ",".join(sorted(homes)), eps


def spaces(args):
    return [SPACE] * ("plain" in args.security) + [TLS_SPACE] * ("tls-auth" in args.security)


def main():
    args = parse_args()
    prefix, why = build_router()
    if prefix is None:
        raise SystemExit(why)
    # plain only: plain TCP as measured so far (tls=False: client_plain, the auth service plain); with
    # tls-auth the product default (TLS listeners, the auth service on TLS), plus plain AMQP when both
    tls = "tls-auth" in args.security
    env = BenchEnv(tempfile.mkdtemp(prefix="enmasse-bench-dp-"), prefix, routers=3, brokers=2, tls=tls,
                   broker_tls=args.broker_tls)
    env.both = tls and "plain" in args.security
    if args.worker_threads:
        env.router_settings["workerThreads"] = args.worker_threads
    for b in env.brokers:
        b.java_memory, b.java_options = "2G", ()
    result = {"count": args.count, "size": args.size, "repeat": args.repeat, "warmup": args.warmup,
              "window": args.window, "prefetch": args.prefetch, "worker_threads": args.worker_threads or 4,
              "security": args.security, "broker_tls": args.broker_tls,
              "machine": common.machine(), "load_before": common.loadavg(), "measurements": []}
    try:
        result["broker"], eps = start_spaces(env, args)
        watch = dict([(r.id, r.proc.pid) for r in env.routers] + [(b.name, b.proc.pid) for b in env.brokers])
        for capacity in _ints(args.link_capacity) or [env.link_capacity or 0]:
            if capacity or env.link_capacity:
                result.setdefault("connectors", []).append(
                    # every space is set up again (a list, not a generator any() would cut short)
                    dptune.set_link_capacity(env, capacity, lambda: any([  # pylint: disable=use-a-generator
                        setup_space(env, s)[0] for s in spaces(args)])))
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
