"""One measured run of the data-plane benchmark: N receiver and N sender
processes (dpclient.py) on one path, the CPU seconds of the clients, of the
routers and of the brokers, the aggregate throughput and latency.

A run: the receivers start and attach (each prints ``ready``); the senders
start, load python-qpid-proton and print ``ready``; then all senders get
``go`` at once and each sends ``count / N`` messages with its own window. When
every sender has had all its messages accepted, the receivers get ``stop`` and
end after a second without a message. Throughput = messages received / (the
first send of any sender .. the last receive of any receiver). CPU seconds of
qdrouterd and of the broker JVMs: /proc/<pid>/stat (utime + stime of the
process and its descendants) from before the senders start to after the
receivers end; of the clients: what each reports for its own event loop
(getrusage), summed.
"""

import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "dpclient.py")
TICK = float(os.sysconf("SC_CLK_TCK"))

# where a client connects: URL (amqp:// or amqps://), address, SASL PLAIN user
# and password (None: ANONYMOUS), the CA file it trusts (amqps)
Endpoint = collections.namedtuple("Endpoint", "url address user password ca")
Endpoint.__new__.__defaults__ = (None, None, None)


def _children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def tree_cpu(pid):
    """utime + stime (seconds) of ``pid`` and every live descendant."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
        except (OSError, IndexError, ValueError):
            continue
        todo.extend(_children(p))
    return total


def sample(watch):
    """{name: cpu seconds} for ``watch`` {name: pid}."""
    return dict((name, tree_cpu(pid)) for name, pid in watch.items())


def _spawn(role, ep, extra):
    cmd = [sys.executable, CLIENT, role, ep.url, ep.address] + extra
    if ep.user:
        cmd += ["--user", ep.user]
    if ep.ca:
        cmd += ["--ca", ep.ca]
    env = dict(os.environ, DPCLIENT_PASSWORD=ep.password or "")
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def _wait_ready(procs, what):
    for p in procs:
        line = p.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError("a %s did not start (said %r, exit %s)" % (what, line, p.poll()))


def _tell(procs, word):
    for p in procs:
        p.stdin.write(word + "\n")
        p.stdin.flush()


def _finish(procs, timeout):
    import json
    outs = []
    for p in procs:
        out, unused = p.communicate(timeout=timeout)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        res = json.loads(lines[-1]) if lines else {"error": "no result (exit %s)" % p.returncode}
        if res.get("error"):
            raise RuntimeError("a client failed: %s" % res["error"])
        outs.append(res)
    return outs


def run(send, recv, clients, count, size, window, prefetch, durable, watch, timeout=300.0):
    """One run: ``send``/``recv`` (Endpoint); ``watch``
    {name: pid} whose CPU is reported. Returns the run's numbers."""
    per = max(1, count // clients)
    common = ["--timeout", str(timeout)]
    recvs, sends = [], []
    try:
        recvs = [_spawn("recv", recv, common + ["--prefetch", str(prefetch)]) for unused in range(clients)]
        _wait_ready(recvs, "receiver")
        extra = common + ["--count", str(per), "--size", str(size), "--window", str(window), "--ready"]
        sends = [_spawn("send", send, extra + (["--durable"] if durable else [])) for unused in range(clients)]
        _wait_ready(sends, "sender")
        cpu0 = sample(watch)
        _tell(sends, "go")
        s_out = _finish(sends, timeout + 30)
        _tell(recvs, "stop")
        r_out = _finish(recvs, timeout + 30)
        cpu1 = sample(watch)
    finally:
        for p in recvs + sends:
            if p.poll() is None:
                p.kill()
                p.wait()
    return summarize(s_out, r_out, dict((k, cpu1[k] - cpu0[k]) for k in watch), per * clients)


def _pct(lat, q):
    return lat[min(len(lat) - 1, int(q * len(lat)))]


def summarize(s_out, r_out, cpu, expected):
    received = sum(r["received"] for r in r_out)
    if received != expected:
        raise RuntimeError("received %d of %d messages" % (received, expected))
    start = min(s["first_send"] for s in s_out)
    end = max(r["last_recv"] for r in r_out if r["last_recv"] is not None)
    lat = sorted(x for r in r_out for x in r["latencies_ms"])
    secs = end - start
    cpu = dict(cpu, clients=sum(x["cpu_seconds"] for x in s_out + r_out))
    return {"messages": received, "seconds": secs, "rate": received / secs, "p50_ms": _pct(lat, 0.50),
            "p99_ms": _pct(lat, 0.99), "max_ms": lat[-1], "released": sum(s["released"] for s in s_out),
            "per_receiver": [r["received"] for r in r_out], "cpu_seconds": cpu}
