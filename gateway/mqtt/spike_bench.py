"""Feasibility measurement of the MQTT gateway prototype (issue 21).

One run, same machine, same clients, same method for both systems:

* gateway: a real qdrouterd 1.19 (tests/integration/routers.py), the
  prototype gateway in front of it, an AMQP consumer (cmd/amqp-count) on the
  anycast address ``bench``; Debian's ``mosquitto_pub -l`` publishes N lines
  as N messages to topic ``bench`` through the gateway;
* reference: Debian's mosquitto broker, ``mosquitto_sub -C N`` as consumer,
  the same ``mosquitto_pub -l``.

Rate = messages received / (time of the last receipt - start of the
publisher); messages not received are reported as ``lost`` (QoS 0 is at most
once: qdrouterd drops pre-settled deliveries a slow consumer cannot take,
its ``psdrop`` counter). Usage (from the worktree, with the environment of /tmp/run-int.sh or
scripts/test.sh, and the binaries built as gateway/mqtt/README.md says):

    python gateway/mqtt/spike_bench.py --bin /tmp/mqtt-spike-bin -n 20000
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import helpers  # noqa: E402
from routers import RouterMesh, section  # noqa: E402


class ARGS:  # what result() reports besides its arguments
    clients = 1


def wait_port(port, timeout=20):
    import socket
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("port %d never opened" % port)


SPIKE_ADDRESSES = {"bench": "anycast", "nobody": "anycast", "idle": "anycast"}


def start_gateway(bin_dir, listen_port, router_port, work):
    """The gateway binary (scripts/build-mqtt-gateway.sh's enmasse-mqtt-gateway
    in ``bin_dir``) on a plain listener in front of a plain router listener,
    with the spikes' addresses in its table and no per-user limit."""
    import json
    from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping
    with open(os.path.join(work, "gateway-table.json"), "w") as f:
        json.dump(mapping.gateway_table("spike", SPIKE_ADDRESSES), f)
    config = {"space": "spike", "listen_plain": "127.0.0.1:%d" % listen_port,
              "routers": ["127.0.0.1:%d" % router_port], "table_file": os.path.join(work, "gateway-table.json"),
              "max_connections_per_user": 0, "receive_maximum": 1000}
    with open(os.path.join(work, "gateway.json"), "w") as f:
        json.dump(config, f)
    return subprocess.Popen([os.path.join(bin_dir, "enmasse-mqtt-gateway"), "-config",
                             os.path.join(work, "gateway.json")], stderr=subprocess.DEVNULL)


def publish(port, n, qos, clients=1):
    """``clients`` mosquitto_pub processes in parallel, n messages in all."""
    start = time.time()
    pubs = []
    for k in range(clients):
        count = n // clients + (1 if k < n % clients else 0)
        lines = "".join("message %d\n" % i for i in range(count)).encode()
        pub = subprocess.Popen(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", str(qos), "-t", "bench",
                                "-l", "-i", "bench-pub-%d" % k], stdin=subprocess.PIPE)
        pubs.append((pub, lines))
    for pub, lines in pubs:
        pub.stdin.write(lines)
        pub.stdin.close()
    rc = max(pub.wait(timeout=120) for pub, _lines in pubs)
    return start, time.time(), rc


def run_gateway(args, client_port, work, qos):
    n = args.n if qos == 0 else args.n1
    ready = os.path.join(work, "ready-%d" % qos)
    consumer = subprocess.Popen([os.path.join(args.bin, "amqp-count"), "-url", "amqp://127.0.0.1:%d" % client_port,
                                 "-address", "bench", "-n", str(n), "-timeout", "%ds" % args.timeout,
                                 "-ready", ready], stdout=subprocess.PIPE, text=True)
    while not os.path.exists(ready):
        time.sleep(0.05)
    start, pub_end, rc = publish(args.gateway_port, n, qos, args.clients)
    out = consumer.communicate(timeout=args.timeout + 10)[0]
    fields = dict(kv.split("=") for kv in out.split())
    return result("gateway+qdrouterd", qos, n, rc, start, pub_end, int(fields["received"]), float(fields["last"]))


def result(system, qos, n, rc, start, pub_end, received, last):
    return {"system": system, "qos": qos, "n": n, "clients": ARGS.clients, "pub_rc": rc, "received": received, "lost": n - received,
            "pub_seconds": round(pub_end - start, 3), "e2e_seconds": round(last - start, 3),
            "rate": round(received / (last - start)) if received else 0}


def run_mosquitto(args, port, qos):
    n = args.n if qos == 0 else args.n1
    sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-q", str(qos), "-t", "bench",
                            "-C", str(n), "-W", str(args.timeout), "-i", "bench-sub", "-F", "%U"],
                           stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)  # subscribed (mosquitto_sub has no ready signal)
    start, pub_end, rc = publish(port, n, qos, args.clients)
    lines = sub.communicate(timeout=args.timeout + 10)[0].split()
    return result("mosquitto", qos, n, rc, start, pub_end, len(lines), float(lines[-1]) if lines else start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="/tmp/mqtt-spike-bin")
    p.add_argument("-n", type=int, default=100000, help="messages at QoS 0")
    p.add_argument("--n1", type=int, default=30000,
                   help="messages at QoS 1 (mosquitto_pub -l stops near 34,000 lines at QoS 1, to both servers)")
    p.add_argument("--timeout", type=int, default=50)
    p.add_argument("--clients", type=int, default=1, help="publishing clients (mosquitto_pub processes)")
    p.add_argument("--qos", default="0,1")
    args = p.parse_args()
    ARGS.clients = args.clients
    work = tempfile.mkdtemp(prefix="mqtt-spike-")
    client_port = helpers.free_port()
    args.gateway_port = helpers.free_port()
    mosq_port = helpers.free_port()
    listener = section("listener", {"name": "clients", "host": "127.0.0.1", "port": client_port, "role": "normal",
                                    "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
    mesh = RouterMesh(work, 1, extra_config={"router-0": listener})
    with open(os.path.join(work, "mosquitto.conf"), "w") as f:
        f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n"
                "max_queued_messages 0\n" % mosq_port)
    procs = []
    results = []
    try:
        mesh.start()
        wait_port(client_port)
        procs.append(start_gateway(args.bin, args.gateway_port, client_port, work))
        procs.append(subprocess.Popen(["mosquitto", "-c", os.path.join(work, "mosquitto.conf")],
                                      stderr=subprocess.DEVNULL))
        wait_port(args.gateway_port)
        wait_port(mosq_port)
        print("uptime before:", subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip())
        for qos in [int(q) for q in args.qos.split(",")]:
            for result in (run_gateway(args, client_port, work, qos), run_mosquitto(args, mosq_port, qos)):
                print(result, flush=True)
                results.append(result)
        print("uptime after:", subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip())
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
        mesh.close()
    return 0 if all(r["received"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
