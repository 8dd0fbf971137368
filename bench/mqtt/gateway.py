"""Benchmark: the MQTT gateway of a standard space (gateway/mqtt, issue 21
item 5) against Debian's mosquitto, both on this host, in one run.

System under test: a real qdrouterd 1.19 (the cached build) with the
standard design's space listener (multiTenant, TLS only, SASL PLAIN relayed
to the collection's auth service over TLS), the auth service with one user
of all permissions, and the product gateway binary
(scripts/build-mqtt-gateway.sh) listening on TLS, reaching the router over
TLS (one AMQP connection per MQTT client, as it does in production).
Reference: /usr/sbin/mosquitto with a TLS listener (a certificate of the
same local CA), a password file, persistence off.

Clients: bench/mqtt/loadgen (Go: eclipse/paho.mqtt.golang, Azure/go-amqp),
one process per role, every connection on TLS. Paths:

* MQTT -> AMQP: N MQTT publishers on topic ``bench``; one AMQP receiver
  (credit 1000, accepting) on the router. mosquitto's closest path is MQTT
  -> MQTT: one MQTT subscriber of ``bench`` (QoS as published).
* AMQP -> MQTT: N MQTT subscribers, subscriber i on ``bench/i``; one AMQP
  sender (one link per address, pre-settled for QoS 0, unsettled with 32
  in flight for QoS 1) round-robin over bench/0..N-1. mosquitto: one MQTT
  publisher round-robin over the same topics.

Per path, QoS and N: a run as fast as the sender can (max), then paced runs
at half the measured max rate and at half the issue's goal rate (QoS 0:
5,000/s, QoS 1: 1,500/s) for the latency (p50/p99/max, receiver time minus
the send time carried in the body). Rate = messages received / (first send
.. last receipt); ``lost`` = sent - received (QoS 0 is at most once). CPU
seconds of the gateway, qdrouterd, the auth service, mosquitto and the
client processes per run (/proc, getrusage). Memory: RSS of the fresh
processes, then with 1,000 idle TLS MQTT clients connected (keep-alive
600 s). The measured run holds the QUIET window (bench/identity/common.py).

    python3 bench/mqtt/gateway.py            # full run (about 8-10 min)
    python3 bench/mqtt/gateway.py --quick    # smoke (< 1 min, no QUIET window), not a result
    python3 bench/mqtt/gateway.py --idle-only --router-hop plain --auth-hop plain   # where the memory goes
    python3 bench/mqtt/gateway.py --idle-only --systems gateway --distinct-users    # a user per idle client

The idle clients log in as one user (the gateway shares its router
connections among them, clients_per_amqp_connection); --distinct-users
gives idle client i a user of its own (bench-i), which cannot share.
"""

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench", "identity"))

import common  # noqa: E402  (quiet window, cpu_of, uptime; puts tests/integration on sys.path)
import test_auth_service_router as asr  # noqa: E402
from helpers import free_port  # noqa: E402

from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping  # noqa: E402

SPACE, USER, PASSWORD = "space-a", "bench", "bench-pw"
GOAL = {0: 10000, 1: 3000}
MOSQUITTO = "/usr/sbin/mosquitto"


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def build_loadgen(work):
    binary = os.path.join(work, "loadgen")
    subprocess.run(["go", "build", "-trimpath", "-o", binary, "."], cwd=os.path.join(HERE, "loadgen"), check=True,
                   env=dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly"))
    return binary


def gateway_binary():
    return os.environ.get("ENMASSE_MQTT_GATEWAY") or subprocess.run(
        ["bash", os.path.join(REPO, "scripts", "build-mqtt-gateway.sh")], check=True, stdout=subprocess.PIPE,
        text=True).stdout.strip()


class Env(object):
    """qdrouterd + auth service + gateway, and mosquitto, on free loopback ports."""

    def __init__(self, work, max_clients, router_hop="tls", auth_hop="tls", mosquitto=True, distinct_users=0,
                 clients_per_amqp_connection=None):
        self.distinct_users, self.per_connection = distinct_users, clients_per_amqp_connection
        self.work, self.procs, self.logs, self.router_hop, self.auth_hop = work, {}, [], router_hop, auth_hop
        self.mosquitto = mosquitto  # False: --systems without mosquitto starts none (nor needs it installed)
        self.tls = asr.make_tls(work)
        self.ca = self.tls["ca"]
        self.max_clients = max_clients

    def popen(self, name, cmd, env=None):
        log = open(os.path.join(self.work, name + ".log"), "w")
        self.logs.append(log)
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        return self.procs[name]

    def start(self):
        users = os.path.join(self.work, "users")
        os.makedirs(users)
        accounts = {USER: (PASSWORD, asr.ALL)}
        accounts.update(("%s-%d" % (USER, i), (PASSWORD, asr.ALL)) for i in range(self.distinct_users))
        asr.write_users(users, SPACE, accounts)
        self.service = asr.AuthService(os.path.join(self.work, "service"), users, free_port(),
                                       tls=asr.service_tls(self.tls) if self.auth_hop == "tls" else None).start()
        self.procs["auth"] = self.service.proc
        prefix = asr.build_router()
        self.router_prefix = prefix
        mgmt, self.amqp_port, self.plain_port = free_port(), free_port(), free_port()
        conf = os.path.join(self.work, "qdrouterd.json")
        entities = json.loads(asr.router_config(mgmt, {SPACE: self.amqp_port}, self.service.port, self.tls))
        for kind, attrs in list(entities):  # the same space listener without TLS (--router-hop plain)
            if kind == "authServicePlugin" and self.auth_hop == "plain":
                attrs.pop("sslProfile", None)
            if kind == "listener" and attrs.get("port") == self.amqp_port:
                plain = dict((k, v) for k, v in attrs.items() if k not in ("sslProfile", "requireSsl"))
                entities.append(["listener", dict(plain, name=attrs["name"] + "-plain", port=self.plain_port)])
        with open(conf, "w") as handle:
            json.dump(entities, handle, indent=1)
        router = self.popen("qdrouterd", [os.path.join(prefix, "sbin", "qdrouterd"), "-c", conf],
                            env=asr.router_env(prefix))
        for port in (mgmt, self.amqp_port, self.plain_port):
            asr.wait_listening(port, router, os.path.join(self.work, "qdrouterd.log"), "qdrouterd")
        self.start_gateway()
        if self.mosquitto:
            self.start_mosquitto()
        return self

    def start_gateway(self):
        addresses = {"bench": "anycast"}
        addresses.update(("bench/%d" % i, "anycast") for i in range(self.max_clients))
        table = os.path.join(self.work, "table.json")
        with open(table, "w") as handle:
            json.dump(mapping.gateway_table(SPACE, addresses), handle)
        cert, key = self.tls["router"]
        self.gw_port = free_port()
        config = {"space": SPACE, "listen_tls": "127.0.0.1:%d" % self.gw_port, "tls_cert_file": cert,
                  "tls_key_file": key, "table_file": table}
        if self.router_hop == "tls":
            config.update(routers=["127.0.0.1:%d" % self.amqp_port], router_tls=True, router_ca_file=self.ca)
        else:
            config.update(routers=["127.0.0.1:%d" % self.plain_port], router_tls=False)
        config.update({"max_connections_per_user": 0, "log_level": "info"})
        if self.per_connection:
            config["clients_per_amqp_connection"] = self.per_connection
        path = os.path.join(self.work, "gateway.json")
        with open(path, "w") as handle:
            json.dump(config, handle)
        self.gateway_binary = gateway_binary()
        gw = self.popen("gateway", [self.gateway_binary, "-config", path])
        asr.wait_listening(self.gw_port, gw, os.path.join(self.work, "gateway.log"), "the MQTT gateway")

    def start_mosquitto(self):
        passwd = os.path.join(self.work, "mosquitto.passwd")
        subprocess.run(["mosquitto_passwd", "-b", "-c", passwd, USER, PASSWORD], check=True)
        cert, key = self.tls["router"]
        self.mosq_port = free_port()
        conf = os.path.join(self.work, "mosquitto.conf")
        with open(conf, "w") as handle:
            handle.write("user root\nper_listener_settings false\nallow_anonymous false\npassword_file %s\n"
                         "persistence false\nmax_queued_messages 0\nlog_dest stdout\nlog_type error\n"
                         "log_type warning\nlistener %d 127.0.0.1\ncertfile %s\nkeyfile %s\n"
                         % (passwd, self.mosq_port, cert, key))
        mosq = self.popen("mosquitto", [MOSQUITTO, "-c", conf])
        asr.wait_listening(self.mosq_port, mosq, os.path.join(self.work, "mosquitto.log"), "mosquitto")

    def pids(self):
        return dict((name, p.pid) for name, p in self.procs.items())

    def stop(self):
        for name in ("gateway", "mosquitto", "qdrouterd"):
            if name in self.procs:
                asr.stop(self.procs[name])
        if getattr(self, "service", None):
            self.service.stop()
        for log in self.logs:
            log.close()


class Clients(object):
    """Starts the loadgen processes of one run and collects their JSON lines."""

    def __init__(self, env, loadgen, system):
        self.env, self.loadgen, self.system = env, loadgen, system
        self.mqtt_url = "ssl://127.0.0.1:%d" % (env.gw_port if system == "gateway" else env.mosq_port)
        self.amqp_url = "amqps://127.0.0.1:%d" % env.amqp_port

    def cmd(self, mode, url, **flags):
        cmd = [self.loadgen, mode, "-url", url, "-ca", self.env.ca, "-user", USER, "-password", PASSWORD]
        for key, value in flags.items():
            if value is True:
                cmd.append("-" + key.replace("_", "-"))
            elif value is not None and value is not False:
                cmd += ["-" + key.replace("_", "-"), str(value)]
        return cmd

    def roles(self, direction, qos, clients, n, rate):
        """(receiver command, sender command) of one run."""
        if direction == "mqtt->amqp":
            send = self.cmd("mqtt-pub", self.mqtt_url, clients=clients, topic="bench", n=n, qos=qos, rate=rate)
            if self.system == "gateway":
                recv = self.cmd("amqp-recv", self.amqp_url, address="bench", n=n)
            else:
                recv = self.cmd("mqtt-sub", self.mqtt_url, clients=1, topic="bench", n=n, qos=qos)
            return recv, send
        recv = self.cmd("mqtt-sub", self.mqtt_url, clients=clients, topic="bench", per_client=True, n=n, qos=qos)
        if self.system == "gateway":
            send = self.cmd("amqp-send", self.amqp_url, address="bench", fanout=clients, n=n, qos=qos, rate=rate)
        else:
            send = self.cmd("mqtt-pub", self.mqtt_url, clients=1, topic="bench", fanout=clients, n=n, qos=qos,
                            rate=rate)
        return recv, send


def write_atomic(path, text):
    with open(path + ".tmp", "w") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


class Session(object):
    """The receiver and the sender of one (system, path, QoS, N) connected once;
    each run() is one burst of messages over the same connections."""

    def __init__(self, env, clients, direction, qos, n_clients):
        self.env, self.clients, self.direction, self.qos, self.n_clients = env, clients, direction, qos, n_clients
        self.dir = tempfile.mkdtemp(dir=env.work, prefix="run-")
        self.k = 0
        recv_cmd, send_cmd = clients.roles(direction, qos, n_clients, 1, 0)
        self.procs = []
        for name, cmd in (("recv", recv_cmd + ["-idle", "2s", "-timeout", "120s"]), ("send", send_cmd)):
            ready = os.path.join(self.dir, "ready-" + name)
            err = open(os.path.join(self.dir, name + ".err"), "w")
            proc = subprocess.Popen(cmd + ["-ready", ready, "-control", self.dir], stdout=subprocess.PIPE,
                                    stderr=err, text=True)
            self.procs.append(proc)
            wait_file(ready, proc, name, os.path.join(self.dir, name + ".err"))
        self.recv, self.send = self.procs

    def run(self, n, rate, tag):
        env, k = self.env, self.k
        self.k += 1
        pids = env.pids()
        pids.update(recv_client=self.recv.pid, send_client=self.send.pid)
        cpu0 = dict((name, common.cpu_of(p)) for name, p in pids.items())
        armed = os.path.join(self.dir, "recv-armed")
        if os.path.exists(armed):
            os.remove(armed)
        write_atomic(os.path.join(self.dir, "recv-go-%d" % k), "%d %f\n" % (n, rate))
        wait_file(armed, self.recv, "receiver", os.path.join(self.dir, "recv.err"))
        write_atomic(os.path.join(self.dir, "send-go-%d" % k), "%d %f\n" % (n, rate))
        s_line, r_line = self.send.stdout.readline(), self.recv.stdout.readline()
        if not s_line or not r_line:
            raise RuntimeError("a client died: %s" % self.errors())
        cpu = dict((name, round(common.cpu_of(p) - cpu0[name], 2)) for name, p in pids.items())
        cpu["clients"] = round(cpu.pop("recv_client") + cpu.pop("send_client"), 2)
        s, r = json.loads(s_line), json.loads(r_line)
        received = r["received"]
        span = (r["last"] - s["start"]) if received else 0
        res = {"system": self.clients.system, "direction": self.direction, "qos": self.qos,
               "clients": self.n_clients, "run": tag, "target_rate": rate, "sent": s["sent"],
               "send_errors": s["errors"], "received": received, "lost": s["sent"] - received,
               "msg_per_s": round(received / span) if span > 0 else 0, "send_seconds": round(s["end"] - s["start"], 3),
               "p50_ms": round(r["p50_ms"], 2), "p99_ms": round(r["p99_ms"], 2), "max_ms": round(r["max_ms"], 2),
               "cpu_s": cpu, "wall_s": round(span, 3)}
        if s["errors"]:
            res["send_stderr"] = self.errors()[-300:]
        return res

    def errors(self):
        text = ""
        for name in ("send", "recv"):
            with open(os.path.join(self.dir, name + ".err")) as handle:
                text += "%s: %s " % (name, handle.read().strip())
        return text

    def close(self):
        for proc, role in zip(self.procs, ("recv", "send")):
            try:
                write_atomic(os.path.join(self.dir, "%s-go-%d" % (role, self.k)), "end\n")
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_file(path, proc, what, err_file=None, timeout=300):
    end = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            err = open(err_file).read() if err_file else proc.stderr.read()
            raise RuntimeError("%s exited %s: %s" % (what, proc.returncode, err[-2000:]))
        if time.time() > end:
            raise RuntimeError("%s: no %s after %d s" % (what, path, timeout))
        time.sleep(0.01)


def idle_memory(env, loadgen, system, n):
    """RSS of the servers before and with ``n`` idle TLS MQTT clients connected."""
    pids = env.pids()
    names = ("gateway", "qdrouterd") if system == "gateway" else ("mosquitto",)
    before = dict((k, round(rss_mib(pids[k]), 1)) for k in names)
    cpu0 = dict((k, common.cpu_of(p)) for k, p in pids.items())
    port = env.gw_port if system == "gateway" else env.mosq_port
    ready = os.path.join(env.work, "idle-ready-%s-%d" % (system, time.time_ns()))
    proc = subprocess.Popen([loadgen, "mqtt-idle", "-url", "ssl://127.0.0.1:%d" % port, "-ca", env.ca, "-user", USER,
                             "-password", PASSWORD, "-clients", str(n), "-ready", ready, "-timeout", "600s"]
                            + (["-distinct-users"] if env.distinct_users and system == "gateway" else []),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_file(ready, proc, "idle clients")
        time.sleep(3)
        after = dict((k, round(rss_mib(pids[k]), 1)) for k in names)
        client_rss = round(rss_mib(proc.pid), 1)
        cpu = dict((k, round(common.cpu_of(p) - cpu0[k], 2)) for k, p in pids.items())
        cpu["clients"] = round(common.cpu_of(proc.pid), 2)
    finally:
        proc.terminate()
        out = proc.communicate(timeout=60)[0]
    connected = json.loads(out.strip().splitlines()[0])
    time.sleep(3)
    closed = dict((k, round(rss_mib(pids[k]), 1)) for k in names)
    return {"system": system, "clients": n, "distinct_users": bool(env.distinct_users and system == "gateway"),
            "connect_seconds": round(connected["seconds"], 2),
            "rss_before_mib": before, "rss_connected_mib": after,
            "growth_mib": dict((k, round(after[k] - before[k], 1)) for k in names), "client_rss_mib": client_rss, "connect_cpu_s": cpu,
            "rss_after_close_mib": closed}


def scenario(env, loadgen, system, direction, qos, n_clients, args, log):
    session = Session(env, Clients(env, loadgen, system), direction, qos, n_clients)
    try:
        out = [session.run(args.count[qos], 0, "max")]
        log(out[-1])
        rates = {"half-max": out[0]["msg_per_s"] / 2.0}
        if not args.quick:
            rates["half-goal"] = GOAL[qos] / 2.0
        for tag, rate in sorted(rates.items()):
            if rate > 0:
                out.append(session.run(max(int(rate * args.paced_seconds), n_clients * 2), round(rate), tag))
                log(out[-1])
    finally:
        session.close()
    return out


def _out(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, check=False, **kw).stdout.strip()


def versions(env):
    mosq = _out([MOSQUITTO, "-h"]).splitlines()[0] if env.mosquitto else "not run"
    qdr = _out([os.path.join(env.router_prefix, "sbin", "qdrouterd"), "--version"],
               env=asr.router_env(env.router_prefix))
    git = _out(["git", "log", "-1", "--format=%h %cI", "--", "gateway/mqtt"], cwd=REPO)
    head = _out(["git", "rev-parse", "--short", "HEAD"], cwd=REPO)
    return {"mosquitto": mosq, "qdrouterd": qdr, "gateway_last_commit": git, "head": head,
            "gateway_binary": env.gateway_binary, "go": _out(["go", "version"])}


def machine():
    model = ""
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as handle:
        mem = handle.readline().split()[1]
    return {"nproc": os.cpu_count(), "cpu": model, "mem_gib": round(int(mem) / 1048576.0, 1),
            "kernel": platform.release(), "python": platform.python_version()}


def measure(env, loadgen, args, log):
    result = {"idle": [], "runs": []}
    for system in args.systems:
        result["idle"].append(idle_memory(env, loadgen, system, args.idle_clients))
        log(result["idle"][-1])
    if args.idle_only:
        return result
    for n_clients in args.clients:
        for direction in ("mqtt->amqp", "amqp->mqtt"):
            for qos in (0, 1):
                for system in args.systems:
                    result["runs"] += scenario(env, loadgen, system, direction, qos, n_clients, args, log)
    return result


def table(result):
    lines = ["| path | QoS | clients | system | max msg/s (lost) | p99 ms at half max (rate) | "
             "p99 ms at half goal (rate) | CPU s at max: gateway / qdrouterd / auth / mosquitto / clients |",
             "|---|---:|---:|---|---:|---|---|---|"]
    runs = result["runs"]
    keys = []
    for r in runs:
        k = (r["direction"], r["qos"], r["clients"], r["system"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        rs = dict((r["run"], r) for r in runs if (r["direction"], r["qos"], r["clients"], r["system"]) == k)
        m = rs["max"]
        lat = ["%.1f (%d/s, lost %d)" % (rs[t]["p99_ms"], rs[t]["target_rate"], rs[t]["lost"]) if t in rs else "-"
               for t in ("half-max", "half-goal")]
        c = m["cpu_s"]
        cpu = " / ".join(str(c.get(x, "-")) for x in ("gateway", "qdrouterd", "auth", "mosquitto", "clients"))
        lines.append("| %s | %d | %d | %s | %d (%d) | %s | %s | %s |" % (k[0], k[1], k[2], k[3], m["msg_per_s"],
                                                                         m["lost"], lat[0], lat[1], cpu))
    lines += ["", "| system | idle clients | connect s | RSS MiB before -> connected (growth) | client RSS MiB |",
              "|---|---:|---:|---|---:|"]
    for i in result["idle"]:
        rss = "; ".join("%s %.1f -> %.1f (+%.1f)" % (k, i["rss_before_mib"][k], i["rss_connected_mib"][k],
                                                     i["growth_mib"][k]) for k in sorted(i["growth_mib"]))
        lines.append("| %s | %d | %.2f | %s | %.1f |" % (i["system"], i["clients"], i["connect_seconds"], rss,
                                                         i["client_rss_mib"]))
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--quick", action="store_true", help="smoke run (< 1 min): 1 and 10 clients, 100 idle, small counts")
    p.add_argument("--clients", default=None, help="comma list of connected clients (default 1,100,1000)")
    p.add_argument("--systems", default="gateway,mosquitto")
    p.add_argument("--no-quiet", action="store_true", help="do not hold /work/wt/QUIET (smoke runs)")
    p.add_argument("--json", help="also write the result JSON here")
    p.add_argument("--idle-only", action="store_true", help="only the idle-connection memory")
    p.add_argument("--idle-clients", type=int, help="idle connections (default 1000, --quick 100)")
    p.add_argument("--router-hop", choices=("tls", "plain"), default="tls",
                   help="the gateway's connections to the router: TLS (the product default) or plain TCP")
    p.add_argument("--auth-hop", choices=("tls", "plain"), default="tls",
                   help="the router's connections to the auth service: TLS (the product default) or plain TCP")
    p.add_argument("--distinct-users", action="store_true",
                   help="idle client i of the gateway logs in as a user of its own (bench-i): nothing to share")
    p.add_argument("--clients-per-amqp-connection", type=int,
                   help="the gateway's clients_per_amqp_connection (default: the gateway's, 100; 1 = no sharing)")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, configs)")
    args = p.parse_args(argv)
    args.systems = args.systems.split(",")
    args.no_quiet = args.no_quiet or args.quick  # a smoke run does not hold the QUIET window
    args.clients = [int(c) for c in (args.clients or ("1,10" if args.quick else "1,100,1000")).split(",")]
    args.count = {0: 5000, 1: 2000} if args.quick else {0: 60000, 1: 20000}
    args.paced_seconds = 1.0 if args.quick else 3.0
    args.idle_clients = args.idle_clients or (100 if args.quick else 1000)
    return args


def main(argv=None):
    args = parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    def log(item):
        print(json.dumps(item) if not isinstance(item, str) else item, flush=True)

    work = tempfile.mkdtemp(prefix="mqtt-bench-")
    env = None
    try:
        loadgen = build_loadgen(work)
        env = Env(work, max(args.clients + [1]), args.router_hop, args.auth_hop,
                  mosquitto="mosquitto" in args.systems,
                  distinct_users=args.idle_clients if args.distinct_users else 0,
                  clients_per_amqp_connection=args.clients_per_amqp_connection)
        env.start()  # env is set first: a start that fails half-way is stopped by the finally below
        result = {"machine": machine(), "versions": versions(env), "args": sys.argv[1:], "router_hop": args.router_hop,
                  "auth_hop": args.auth_hop, "distinct_users": args.distinct_users,
                  "clients_per_amqp_connection": args.clients_per_amqp_connection or "default"}
        if args.no_quiet:
            result["load_before"] = common.uptime()
            result.update(measure(env, loadgen, args, log))
            result["load_after"] = common.uptime()
        else:
            with common.quiet("bench/mqtt/gateway.py", log=log) as window:
                result.update(measure(env, loadgen, args, log))
            result.update(("window_" + k, v) for k, v in window.items())
        result["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        log(json.dumps(result, indent=1))
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(result, handle, indent=1)
        print(table(result))
    finally:
        if env:
            env.stop()
        if args.keep:
            print("kept:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
