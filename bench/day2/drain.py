"""Benchmark: drain and remove a standard-pool broker holding N messages
(issue 22), ours against Artemis' own scale-down, measured in the same run.

Each measurement starts fresh components the way tests/integration does
(helpers.ArtemisBroker: the Artemis archive of ENMASSE_ARTEMIS_ARCHIVE,
broker.xml rendered from roles/broker's template for the pool; StandardEnv:
qdrouterd built from ENMASSE_ROUTER_ARCHIVE, the auth service, the
infrastructure file), puts ``--messages`` durable messages of ``--size``
bytes (AMQP body, plus an application property ``bid``: a unique id) on the
broker that leaves, spread round-robin over ``--queues`` queues, and times:

* ``ours``: a standard space ``dr`` (plan standard-unlimited) with Q
  queues of plan standard-small-queue, placed by the modules (first fit: on
  one broker). The messages go straight to that broker's AMQP port. Then, as
  playbooks/scale_in.yml does on the control host: the infrastructure file
  says the broker is ``draining`` (what site.yml writes; not timed), then
  ``playbooks/tasks/scale_in_drain.yml`` runs with ansible-playbook (converge
  the space: new homes on the other broker; enmasse.messaging.pool_drain until
  a run finds nothing; converge again: the old queues released). *Drained* =
  that play's end (the broker is then read: 0 messages). *Removed* = drained
  + the broker process stopped (SIGTERM, until it exits; stands in for the
  broker role's uninstall, which needs a systemd host: the package/file
  removal is not included) + ``tasks/scale_in_forget.yml`` (the
  infrastructure file and the routers' connectors without it).
* ``peer``: Artemis' own scale-down, what the ArtemisCloud operator's drainer
  uses: two fresh brokers (the same pool broker.xml, the same queue names
  created by hand on both) as a two-broker cluster (a static cluster
  connection over CORE, message-load-balancing OFF: scale-down needs one on
  the target), the leaving one with ``<ha-policy><primary-only/>`` (see
  ``cluster``: without either the operation does nothing, as found here on
  2.40.0). The JMX (Jolokia) operation
  ``scaleDown(connector)`` on the leaving broker: it sends every message to
  the other broker over CORE and stops. *Drained* = the other broker holds
  every message (polled every 0.25 s); *removed* = the leaving broker logged
  its stop and its process, sent SIGTERM then, has exited (the JVM stays up
  after a scale-down).

Then every message is received from the remaining broker (directly, AMQP)
and checked by its ``bid``: lost, duplicates, foreign. No consumer runs
during the drain (a consumer through the routers would take messages off the
leaving broker while ours moves them; the peer's clients are disconnected by
the scale-down anyway).

Rounds alternate the order (ours, peer / peer, ours). Prints JSON, then a
table; the load average before/after each measurement is in the result
(the machine is shared).

    bash -c 'source <(sed -n "/^export/p" /tmp/run-int.sh); \\
             ENMASSE_ROUTER_ARCHIVE=$(bash scripts/router-archive.sh) python3 bench/day2/drain.py'
    python3 bench/day2/drain.py --messages 2000 --queues 10 --rounds 1     # smoke
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "bench", "standard"))

import helpers  # noqa: E402
import common  # noqa: E402
from standard_env import StandardEnv, build_router  # noqa: E402

from proton import Message  # noqa: E402
from proton.handlers import MessagingHandler  # noqa: E402
from proton.reactor import Container  # noqa: E402

SPACE = "dr"
ANON = {"name": "none", "type": "none"}
TASKS = os.path.join(REPO, "playbooks", "tasks")
PEER_CONNECTOR = "scale-down-target"


def queue_names(n):
    return ["q%03d" % i for i in range(n)]


def internal(name):
    return "%s/%s" % (SPACE, name)


# ------------------------------------------------------------------ AMQP load and check

class Load(MessagingHandler):
    """Sends ``count`` durable messages round-robin over ``queues``, at most
    ``window`` unsettled; every one must be accepted."""

    def __init__(self, url, user, password, queues, count, size, window):
        super(Load, self).__init__(prefetch=0)
        self.url, self.user, self.password = url, user, password
        self.queues, self.count, self.window = queues, count, window
        self.pad = b"x" * max(0, size)
        self.sent = self.accepted = 0
        self.senders = []
        self.conn = None
        self.error = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, user=self.user, password=self.password, allowed_mechs="PLAIN",
                                            allow_insecure_mechs=True, reconnect=False)
        self.senders = [event.container.create_sender(self.conn, q) for q in self.queues]

    def on_sendable(self, event):
        self.pump()

    def pump(self):
        n = len(self.senders)
        while self.sent < self.count and self.sent - self.accepted < self.window:
            s = self.senders[self.sent % n]
            if s.credit <= 0:
                return
            bid = "%s#%d" % (self.queues[self.sent % n], self.sent)
            s.send(Message(id=bid, body=self.pad, durable=True, properties={"bid": bid}))
            self.sent += 1

    def on_accepted(self, event):
        self.accepted += 1
        if self.accepted == self.count:
            self.conn.close()
        else:
            self.pump()

    def on_rejected(self, event):
        self.error = "rejected: %s" % (event.delivery.remote.condition,)
        self.conn.close()

    on_released = on_modified = on_rejected

    def on_transport_error(self, event):
        self.error = "transport: %s" % (event.transport.condition,)


class Check(MessagingHandler):
    """Receives (and accepts) from every queue until ``expect`` arrived or
    none came for ``idle`` s; counts every ``bid``."""

    def __init__(self, url, user, password, queues, expect, idle=5.0, prefetch=500):
        super(Check, self).__init__(prefetch=prefetch, auto_accept=True)
        self.url, self.user, self.password = url, user, password
        self.queues, self.expect, self.idle = queues, expect, idle
        self.seen = {}
        self.received = 0
        self.last = time.monotonic()
        self.conn = None
        self.error = None
        self.link_errors = []

    def on_start(self, event):
        self.conn = event.container.connect(self.url, user=self.user, password=self.password, allowed_mechs="PLAIN",
                                            allow_insecure_mechs=True, reconnect=False)
        for q in self.queues:
            event.container.create_receiver(self.conn, q)
        event.container.schedule(0.5, self)

    def on_timer_task(self, event):
        if self.conn is None or self.received >= self.expect:
            return
        if time.monotonic() - self.last > self.idle:
            self.conn.close()
            return
        event.container.schedule(0.5, self)

    def on_message(self, event):
        props = event.message.properties or {}
        bid = props.get("bid")
        self.seen[bid] = self.seen.get(bid, 0) + 1
        self.received += 1
        self.last = time.monotonic()
        if self.received >= self.expect:
            # a little longer for duplicates: a second pass would find them; the count says so
            event.container.schedule(0.1, _Closer(self.conn))

    def on_transport_error(self, event):
        self.error = "transport: %s" % (event.transport.condition,)

    def on_link_error(self, event):
        self.link_errors.append("%s: %s" % (event.link.source.address, event.link.remote_condition))

    def on_link_remote_close(self, event):
        if event.link.remote_condition:
            self.on_link_error(event)


class _Closer(object):
    def __init__(self, conn):
        self.conn = conn

    def on_timer_task(self, event):
        self.conn.close()


def load(broker, queues, count, size, window):
    t0 = time.perf_counter()
    h = Load("amqp://127.0.0.1:%d" % broker.amqp_port, broker.router_user, broker.router_password, queues, count,
             size, window)
    Container(h).run()
    if h.error or h.accepted != count:
        raise RuntimeError("load on %s: %s (accepted %d of %d)" % (broker.name, h.error, h.accepted, count))
    return time.perf_counter() - t0


def queue_counts(broker):
    """{queue: message count} of every queue on ``broker`` holding messages."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader
    unused, live = reader.read_live(broker.jolokia(timeout=60), broker.name)
    return dict((n, e.get("message_count")) for n, e in live.items() if e.get("message_count"))


def check(broker, queues, count, idle=15.0, passes=5):
    """{received, unique, lost, duplicates, foreign, seconds} of the messages
    on ``broker``: receive passes (each until ``count`` in all or ``idle`` s
    without a message) until every one arrived or a pass got none (a broker
    that just took 100,000 messages by scale-down paused for more than 5 s
    after the first few dozen here)."""
    counts = queue_counts(broker)
    t0 = time.perf_counter()
    seen, received, errors, link_errors, rounds = {}, 0, [], [], 0
    while received < count and rounds < passes:
        h = Check("amqp://127.0.0.1:%d" % broker.amqp_port, broker.router_user, broker.router_password, queues,
                  count - received, idle=idle)
        Container(h).run()
        rounds += 1
        for bid, c in h.seen.items():
            seen[bid] = seen.get(bid, 0) + c
        received += h.received
        errors += [h.error] if h.error else []
        link_errors += h.link_errors
        if not h.received:
            break
    n = len(queues)
    want = set("%s#%d" % (queues[i % n], i) for i in range(count))
    got = set(seen)
    return {"received": received, "unique": len(got & want), "lost": len(want - got),
            "duplicates": sum(c - 1 for c in seen.values() if c > 1), "foreign": len(got - want),
            "lost_sample": sorted(want - got)[:5], "queues_holding": len(counts),
            "outside_the_queues": dict((q, c) for q, c in counts.items() if q not in queues),
            "passes": rounds, "seconds": round(time.perf_counter() - t0, 1),
            "errors": errors[:3], "link_errors": len(link_errors), "link_error_sample": link_errors[:3]}


def total_messages(broker):
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import broker_mbean
    return int(broker.jolokia(timeout=30).read(broker_mbean(broker.name), "TotalMessageCount") or 0)


# ------------------------------------------------------------------ ours

def _task_seconds(res):
    """{task name: seconds} of an ansible.posix.json result (summed over loops)."""
    out = {}
    from datetime import datetime

    def ts(s):
        return datetime.strptime(s.replace("Z", ""), "%Y-%m-%dT%H:%M:%S.%f")
    for play in res.data.get("plays", []):
        for task in play.get("tasks", []):
            d = task.get("task", {}).get("duration") or {}
            if d.get("start") and d.get("end"):
                name = task["task"]["name"]
                out[name] = round(out.get(name, 0.0) + (ts(d["end"]) - ts(d["start"])).total_seconds(), 2)
    return out


def play(env, tasks_file, name, addresses, timeout):
    extra = {"__scale_in_name": name, "scale_in_infrastructure_file": env.infra_file,
             "__scale_in_spaces": [{"name": SPACE, "type": "standard", "addresses": addresses}],
             # playbooks/scale_in.yml's own values (its play vars)
             "scale_in_timeout": timeout, "scale_in_delay": 5, "scale_in_idle": 2.0}
    return helpers.run_playbook([{"name": "scale in", "ansible.builtin.include_tasks": os.path.join(TASKS, tasks_file)}],
                                extra_vars=extra, timeout=timeout + 600)


def run_ours(args, nqueues, prefix):
    base = tempfile.mkdtemp(prefix="enmasse-bench-drain-")
    env = StandardEnv(base, prefix, routers=1, brokers=2, tls=False)
    for b in env.brokers:
        b.java_options = ()  # full JIT, as a real broker
    out = {"case": "ours", "queues": nqueues}
    try:
        env.start()
        common_args = env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(SPACE))
        res = helpers.run_module("address_space", dict(common_args, name=SPACE, type="standard",
                                                       plan="standard-unlimited", authentication_service=ANON))
        assert res.rc == 0, res.result
        addresses = [{"address": q, "type": "queue", "plan": "standard-small-queue"} for q in queue_names(nqueues)]
        res = helpers.run_module("address", dict(common_args, address_space=SPACE, addresses=addresses, prune=True,
                                                 return_addresses="all"))
        assert res.rc == 0, res.result
        homes = dict((a["address"], a["status"]["brokers"]) for a in res.result["addresses"])
        by_broker = {}
        for q, bs in homes.items():
            for b in bs:
                by_broker.setdefault(b, []).append(q)
        leaving = max(by_broker, key=lambda b: len(by_broker[b]))
        idx = [b.name for b in env.brokers].index(leaving)
        src, dst = env.brokers[idx], env.brokers[1 - idx]
        queues = [internal(q) for q in sorted(by_broker[leaving])]
        out.update(queues_on_leaving=len(queues), leaving=leaving)
        out["load_seconds"] = round(load(src, queues, args.messages, args.size, args.load_window), 1)
        out["before"] = {"leaving": total_messages(src), "remaining": total_messages(dst)}
        env.draining = frozenset([leaving])
        env.write_infra()  # what site.yml with standard_pool_state=draining writes (not timed)
        out["loadavg_before"] = common.loadavg()
        t0 = time.perf_counter()
        res = play(env, "scale_in_drain.yml", leaving, addresses, args.timeout)
        drained = time.perf_counter() - t0
        assert res.rc == 0, res
        left = total_messages(src)
        t1 = time.perf_counter()
        src.stop()
        stopped = time.perf_counter() - t1
        res2 = play(env, "scale_in_forget.yml", leaving, addresses, args.timeout)
        removed = time.perf_counter() - t0
        assert res2.rc == 0, res2
        out["loadavg_after"] = common.loadavg()
        out.update(drained_seconds=round(drained, 1), removed_seconds=round(removed, 1),
                   stop_seconds=round(stopped, 1), forget_seconds=round(res2.seconds, 1),
                   left_on_leaving=left, tasks=_task_seconds(res))
        moved = None
        try:
            moved = res.task("Move what is left on the broker to the new homes until a run finds nothing there")
        except AssertionError:
            pass
        if moved:
            out["pool_drain"] = {"attempts": moved.get("attempts"), "messages": moved.get("messages")}
        out["check"] = check(dst, queues, args.messages)
        return out
    finally:
        env.cleanup()


# ------------------------------------------------------------------ peer

def cluster(broker, own_port, other_port, primary_only=False):
    """broker.xml of one of the two peer brokers as a user of Artemis'
    scale-down has it: a connector to itself and one to the other broker's
    CORE acceptor, a static cluster connection to the other one without load
    balancing (the target answers the leaving broker's CLUSTER_CONNECT only
    on an acceptor of a cluster connection: without one the scale-down times
    out, found here on 2.40.0) and, on the leaving one, the HA policy
    primary-only named (scaleDown does nothing without it:
    ActiveMQServerControlImpl checks for a PrimaryOnlyPolicy)."""
    path = os.path.join(broker.instance, "etc", "broker.xml")
    with open(path) as f:
        xml = f.read()
    conf = """
      <connectors>
         <connector name="self">tcp://127.0.0.1:%d</connector>
         <connector name="%s">tcp://127.0.0.1:%d</connector>
      </connectors>
      <cluster-connections>
         <cluster-connection name="pool">
            <connector-ref>self</connector-ref>
            <message-load-balancing>OFF</message-load-balancing>
            <max-hops>1</max-hops>
            <static-connectors>
               <connector-ref>%s</connector-ref>
            </static-connectors>
         </cluster-connection>
      </cluster-connections>
""" % (own_port, PEER_CONNECTOR, other_port, PEER_CONNECTOR)
    if primary_only:
        conf += "      <ha-policy>\n         <primary-only/>\n      </ha-policy>\n"
    assert xml.count("</acceptors>") == 1, path
    with open(path, "w") as f:
        f.write(xml.replace("</acceptors>", "</acceptors>" + conf))


def _stopped(broker):
    """The broker logged its stop (AMQ221002): a scaled-down broker stops, its JVM stays (Jetty)."""
    try:
        with open(broker.log_path, "rb") as f:
            return b"AMQ221002" in f.read()
    except OSError:
        return False


def run_peer(args, nqueues):
    base = tempfile.mkdtemp(prefix="enmasse-bench-scaledown-")
    brokers = [helpers.ArtemisBroker(os.path.join(base, "b%d" % (i + 1)), name="b%d" % (i + 1), java_options=())
               for i in range(2)]
    src, dst = brokers
    out = {"case": "peer", "queues": nqueues, "leaving": src.name}
    try:
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda b: b.create(space_type="pool"), brokers))
        cluster(src, src.core_port, dst.core_port, primary_only=True)
        cluster(dst, dst.core_port, src.core_port)
        for b in brokers:
            b.start(wait=False)
        for b in brokers:
            b.wait_started()
        queues = [internal(q) for q in queue_names(nqueues)]
        for b in brokers:  # the same layout on both (the pool's: one ANYCAST address and queue per name)
            for q in queues:
                b.create_by_hand(q)
        out["queues_on_leaving"] = len(queues)
        out["load_seconds"] = round(load(src, queues, args.messages, args.size, args.load_window), 1)
        out["before"] = {"leaving": total_messages(src), "remaining": total_messages(dst)}
        from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import broker_mbean
        client = src.jolokia(timeout=args.timeout)
        answer = {}

        def call():
            try:
                answer["value"] = client.execute(broker_mbean(src.name), "scaleDown(java.lang.String)", PEER_CONNECTOR)
            except Exception as e:  # pylint: disable=broad-except  # the broker stops while answering
                answer["error"] = repr(e)[:300]
        out["loadavg_before"] = common.loadavg()
        proc = src.proc
        t0 = time.perf_counter()
        th = threading.Thread(target=call, daemon=True)
        th.start()
        drained = removed = None
        deadline = t0 + args.timeout
        while time.perf_counter() < deadline and (drained is None or removed is None):
            if drained is None:
                try:
                    if total_messages(dst) >= args.messages:
                        drained = time.perf_counter() - t0
                except Exception:  # pylint: disable=broad-except
                    pass
            if removed is None and (proc.poll() is not None or _stopped(src)):
                src.stop()  # the process (still up after the broker stopped): until it exits
                removed = time.perf_counter() - t0
            time.sleep(0.25)
        out["loadavg_after"] = common.loadavg()
        th.join(5)
        out.update(drained_seconds=None if drained is None else round(drained, 1),
                   removed_seconds=None if removed is None else round(removed, 1),
                   scale_down_answer=answer, exit_code=proc.poll())
        if removed is None or drained is None:  # it did not stop by itself, or lost messages
            out["leaving_log_tail"] = [line for line in src.log_tail(400).splitlines()
                                       if " WARN " in line or " ERROR " in line or "AMQ22" in line][-20:]
        src.stop()
        out["check"] = check(dst, queues, args.messages)
        return out
    finally:
        for b in brokers:
            b.stop()
        import shutil
        shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------ report

def table(result):
    lines = ["%d durable messages of %d bytes on the leaving broker; no consumer during the drain" % (
        result["messages"], result["size"]), "",
        "| queues | case | round | drained s | removed s | msg/s (drained) | received | lost | duplicates | "
        "load avg before -> after |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for m in result["measurements"]:
        c = m.get("check") or {}
        rate = (result["messages"] / m["drained_seconds"]) if m.get("drained_seconds") else 0
        lines.append("| %d | %s | %d | %s | %s | %.0f | %s | %s | %s | %s -> %s |" % (
            m["queues_on_leaving"], m["case"], m["round"], m.get("drained_seconds"), m.get("removed_seconds"), rate,
            c.get("received"), c.get("lost"), c.get("duplicates"), "/".join(m.get("loadavg_before") or []),
            "/".join(m.get("loadavg_after") or [])))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--messages", type=int, default=100000)
    ap.add_argument("--size", type=int, default=1024, help="body bytes per message")
    ap.add_argument("--queues", default="10,100", help="comma list: queues the messages are spread over")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cases", default="ours,peer")
    ap.add_argument("--load-window", type=int, default=1000, help="unsettled sends while loading")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds for one drain")
    ap.add_argument("--output", help="also write the JSON result here")
    args = ap.parse_args(argv)
    prefix, why = build_router()
    if prefix is None and "ours" in args.cases:
        sys.exit("no router: %s" % why)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    result = {"messages": args.messages, "size": args.size, "rounds": args.rounds, "machine": common.machine(),
              "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "measurements": []}
    print("machine: %s" % json.dumps(result["machine"]), file=sys.stderr)
    for r in range(args.rounds):
        order = cases if r % 2 == 0 else list(reversed(cases))
        for nq in [int(x) for x in args.queues.split(",") if x.strip()]:
            for case in order:
                print("round %d, %d queues, %s: load average %s" % (r + 1, nq, case, common.loadavg()), file=sys.stderr)
                m = run_ours(args, nq, prefix) if case == "ours" else run_peer(args, nq)
                m["round"] = r + 1
                result["measurements"].append(m)
                print(json.dumps(m), file=sys.stderr)
                if args.output:
                    with open(args.output, "w") as f:
                        json.dump(result, f, indent=1)
    result["finished_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    print(json.dumps(result, indent=1))
    print(table(result))
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
