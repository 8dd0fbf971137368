"""Benchmark: the data plane of a standard address space against the broker alone.

Starts tests/integration/standard_env.py's StandardEnv (3 routers as a full
mesh, 2 Artemis brokers, the auth service), creates a standard space ``dp``
(plan standard-unlimited, authentication_service ``none``) with a queue and an
anycast address through the modules, and runs, with one client
(python-qpid-proton's event API, one process, sender and receiver in one
container, so the latency clock is the same), ``--count`` messages of
``--size`` bytes in each of:

* (a) direct: the broker's AMQP port (authenticated as StandardEnv's broker
  user, SASL PLAIN) to an ANYCAST queue on the broker that holds the space's
  queue (created by hand, outside the space, so the routers' autoLinks do not
  consume from it); durable messages;
* (b) routed queue: the space's listener on router r1 to the space's queue
  (the same broker behind it: the router's autoLinks carry the messages to and
  from the broker); durable messages;
* (c) anycast: sender on r1, receiver on r2 (router to router through the
  mesh, no broker); not durable.

The sender keeps at most ``--window`` unsettled deliveries (a settled one is
one the broker, or for anycast the receiver, has accepted); the receiver
grants ``--prefetch`` credit and accepts every message. Each message carries
its send time (``time.perf_counter()``); latency is measured at the receiver.
Throughput = messages / (first send .. last receive). Each case: one warm-up
run of ``--warmup`` messages, then ``--repeat`` runs; the median is reported.

Prints a JSON result, then a table.

    python3 bench/standard/dataplane.py                          # 20,000 x 1 KiB, 3 runs each
    python3 bench/standard/dataplane.py --count 2000 --repeat 1 --warmup 200   # smoke
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, HERE)

import helpers  # noqa: E402
import common  # noqa: E402
from standard_env import StandardEnv, build_router  # noqa: E402

from proton import Message  # noqa: E402
from proton.handlers import MessagingHandler  # noqa: E402
from proton.reactor import Container  # noqa: E402

SPACE = "dp"
ANON = {"name": "none", "type": "none"}


class Run(MessagingHandler):
    """One measured run: ``count`` messages from ``send`` to ``recv``
    (each (url, address, user, password))."""

    def __init__(self, send, recv, count, size, durable, window, prefetch, timeout):
        super(Run, self).__init__(prefetch=prefetch, auto_accept=True, auto_settle=True)
        self.send_ep, self.recv_ep = send, recv
        self.count, self.durable, self.window, self.timeout = count, durable, window, timeout
        self.body = b"x" * size
        self.sent = self.settled = self.received = self.released = self.resend = 0
        self.latencies = []
        self.first_send = self.last_recv = None
        self.sender = self.receiver = None
        self.conns = []
        self.error = None

    def _connect(self, container, ep):
        url, unused, user, password = ep
        kw = {"user": user, "password": password, "allowed_mechs": "PLAIN"} if user else {"allowed_mechs": "ANONYMOUS"}
        conn = container.connect(url, reconnect=False, **kw)
        self.conns.append(conn)
        return conn

    def on_start(self, event):
        c = event.container
        self.receiver = c.create_receiver(self._connect(c, self.recv_ep), self.recv_ep[1])
        self.timer = c.schedule(self.timeout, self)

    def on_timer_task(self, event):
        self.error = "timed out after %.0f s: sent %d, settled %d, received %d" % (
            self.timeout, self.sent, self.settled, self.received)
        self.close()

    def on_link_opened(self, event):
        if event.receiver is not None and event.receiver == self.receiver and self.sender is None:
            # the sender only once the receiver is attached (anycast: a destination exists)
            self.sender = event.container.create_sender(self._connect(event.container, self.send_ep), self.send_ep[1])

    def on_sendable(self, event):
        self.send_more()

    def send_more(self):
        s = self.sender
        while s.credit > 0 and (self.sent - self.resend) < self.count and (self.sent - self.settled) < self.window:
            if self.first_send is None:
                self.first_send = time.perf_counter()
            s.send(Message(body=self.body, durable=self.durable, properties={"ts": time.perf_counter()}))
            self.sent += 1

    def on_accepted(self, event):
        self.settled += 1
        self.send_more()

    def on_released(self, event):
        # no receiver yet behind this router (anycast): send another one
        self.settled += 1
        self.released += 1
        self.resend += 1
        self.send_more()

    on_modified = on_released

    def on_rejected(self, event):
        self.error = "rejected: %s" % (event.delivery.remote.condition,)
        self.close()

    def on_message(self, event):
        now = time.perf_counter()
        self.latencies.append(now - event.message.properties["ts"])
        self.received += 1
        if self.received >= self.count:
            self.last_recv = now
            self.close()

    def on_transport_error(self, event):
        cond = event.transport.condition
        self.error = "transport error: %s" % (cond,)
        self.close()

    def close(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for c in self.conns:
            c.close()

    timer = None

    def result(self):
        if self.error:
            raise RuntimeError(self.error)
        lat = sorted(self.latencies)

        def p(q):
            return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000.0
        secs = self.last_recv - self.first_send
        return {"messages": self.received, "seconds": secs, "rate": self.received / secs,
                "p50_ms": p(0.50), "p99_ms": p(0.99), "max_ms": lat[-1] * 1000.0, "released": self.released}


def run_once(send, recv, count, args, durable):
    h = Run(send, recv, count, args.size, durable, args.window, args.prefetch, args.timeout)
    Container(h).run()
    return h.result()


def case(label, send, recv, durable, args):
    run_once(send, recv, args.warmup, args, durable)
    runs = [run_once(send, recv, args.count, args, durable) for unused in range(args.repeat)]
    med = dict((k, statistics.median(r[k] for r in runs)) for k in ("rate", "p50_ms", "p99_ms", "seconds"))
    print("%s: %s" % (label, ", ".join("%.0f msg/s p99 %.1f ms" % (r["rate"], r["p99_ms"]) for r in runs)),
          file=sys.stderr)
    return {"label": label, "durable": durable, "runs": runs, "median": med}


def setup_space(env):
    common_args = env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(SPACE))
    res = helpers.run_module("address_space", dict(common_args, name=SPACE, type="standard", plan="standard-unlimited",
                                                   authentication_service=ANON))
    assert res.rc == 0, res.result
    res = helpers.run_module("address", dict(common_args, address_space=SPACE, return_addresses="all", addresses=[
        {"address": "q-routed", "type": "queue", "plan": "standard-small-queue"},
        {"address": "a-bench", "type": "anycast", "plan": "standard-small-anycast"}]))
    assert res.rc == 0, res.result
    st = dict((a["address"], a["status"]) for a in res.result["addresses"])
    assert st["q-routed"]["ready"], st
    with open(env.connection_file(SPACE)) as f:
        eps = json.load(f)["endpoints"]
    return st["q-routed"]["brokers"][0], [e["port"] for e in eps]


def table(result):
    lines = ["%d messages of %d bytes per run, median of %d runs (after a warm-up of %d), sender window %d, "
             "receiver prefetch %d" % (result["count"], result["size"], result["repeat"], result["warmup"],
                                       result["window"], result["prefetch"]), "",
             "| case | path | durable | throughput (msg/s) | p50 latency | p99 latency |",
             "|---|---|---|---:|---:|---:|"]
    paths = {"a": "client -> broker b (AMQP) -> client", "b": "client -> router r1 -> broker b -> r1 -> client",
             "c": "client -> r1 -> r2 -> client (anycast)"}
    for key in ("a", "b", "c"):
        c = result["cases"][key]
        m = c["median"]
        lines.append("| (%s) %s | %s | %s | %.0f | %.1f ms | %.1f ms |" % (
            key, c["label"], paths[key], "yes" if c["durable"] else "no", m["rate"], m["p50_ms"], m["p99_ms"]))
    lines.append("")
    lines.append("ratio (b)/(a) throughput: %.2f (goal >= 0.8: %s)" % (
        result["ratio_b_a"], "met" if result["ratio_b_a"] >= 0.8 else "MISSED"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5000)
    ap.add_argument("--window", type=int, default=1000, help="unsettled deliveries the sender keeps at most")
    ap.add_argument("--prefetch", type=int, default=1000, help="receiver credit")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args()
    prefix, why = build_router()
    if prefix is None:
        raise SystemExit(why)
    env = StandardEnv(tempfile.mkdtemp(prefix="enmasse-bench-dp-"), prefix, routers=3, brokers=2)
    for b in env.brokers:
        b.java_memory, b.java_options = "2G", ()
    result = {"count": args.count, "size": args.size, "repeat": args.repeat, "warmup": args.warmup,
              "window": args.window, "prefetch": args.prefetch, "machine": common.machine(),
              "load_before": common.loadavg(), "cases": {}}
    try:
        env.start()
        home, ports = setup_space(env)
        broker = [b for b in env.brokers if b.name == home][0]
        broker.create_by_hand("bench-direct", "ANYCAST", queue=True)
        direct = ("amqp://127.0.0.1:%d" % broker.amqp_port, "bench-direct", broker.management_user,
                  broker.management_password)
        r1 = ("amqp://127.0.0.1:%d" % ports[0], "q-routed", None, None)
        result["broker"] = home
        result["cases"]["a"] = case("direct to the broker", direct, direct, True, args)
        result["cases"]["b"] = case("queue through one router", r1, r1, True, args)
        result["cases"]["c"] = case("anycast through two routers", ("amqp://127.0.0.1:%d" % ports[0], "a-bench", None, None),
                                    ("amqp://127.0.0.1:%d" % ports[1], "a-bench", None, None), False, args)
        result["ratio_b_a"] = result["cases"]["b"]["median"]["rate"] / result["cases"]["a"]["median"]["rate"]
        result["load_after"] = common.loadavg()
    finally:
        env.cleanup()
    print(json.dumps(result, sort_keys=True))
    print()
    print(table(result))


if __name__ == "__main__":
    main()
