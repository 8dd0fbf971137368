"""Memory of idle MQTT connections (issue 21 goal: 1,000 idle connections
<= 100 MiB above the idle process). Each MQTT client of the gateway is also
an AMQP connection to the router (the user's own identity), so the router's
growth counts too. Reference: Debian's mosquitto in the same run.

Opens N paho-mqtt connections (keep-alive 600 s, 200 per process), waits for
every CONNACK, reads VmRSS of the processes before and after.
"""

import os
import subprocess
import sys
import tempfile
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import helpers  # noqa: E402
import spike_bench  # noqa: E402
from routers import RouterMesh, section  # noqa: E402


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


CHILD = r"""
import sys, time
import paho.mqtt.client as mqtt
port, n, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
connected = set()
clients = []
for i in range(n):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="%s-%d" % (tag, i))
    c.on_connect = lambda client, userdata, flags, rc, props, i=i: connected.add(i)
    c.connect("127.0.0.1", port, keepalive=600)
    c.loop_start()
    clients.append(c)
deadline = time.time() + 60
while len(connected) < n and time.time() < deadline:
    time.sleep(0.1)
print(len(connected), flush=True)
sys.stdin.read()
for c in clients:
    c.disconnect()
"""


def open_clients(port, n, tag, per_process=200):
    """n paho clients in processes of ``per_process`` (paho uses select(),
    which stops at file descriptor 1024: about 340 clients per process)."""
    start = time.time()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(port), str(min(per_process, n - k)), "%s%d" % (tag, k)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for k in range(0, n, per_process)]
    ok = sum(int(p.stdout.readline() or 0) for p in procs)
    return procs, ok, time.time() - start


def close_clients(procs):
    for p in procs:
        p.stdin.close()
    for p in procs:
        p.wait(30)


def main(bin_dir="/tmp/mqtt-spike-bin", n="1000"):
    n = int(n)
    work = tempfile.mkdtemp(prefix="mqtt-spike-idle-")
    cp, gp, mp = helpers.free_port(), helpers.free_port(), helpers.free_port()
    listener = section("listener", {"name": "clients", "host": "127.0.0.1", "port": cp, "role": "normal",
                                    "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
    mesh = RouterMesh(work, 1, extra_config={"router-0": listener}).start()
    with open(os.path.join(work, "mosquitto.conf"), "w") as f:
        f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % mp)
    gw = spike_bench.start_gateway(bin_dir, gp, cp, tempfile.mkdtemp(prefix="mqtt-spike-gw-"))
    mosq = subprocess.Popen(["mosquitto", "-c", os.path.join(work, "mosquitto.conf")], stderr=subprocess.DEVNULL)
    try:
        spike_bench.wait_port(cp)
        spike_bench.wait_port(gp)
        spike_bench.wait_port(mp)
        time.sleep(1)
        print("uptime before:", subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip())
        router_pid = mesh[0].proc.pid
        before = {"gateway": rss_mib(gw.pid), "qdrouterd": rss_mib(router_pid), "mosquitto": rss_mib(mosq.pid)}
        clients, ok, secs = open_clients(gp, n, "gw")
        time.sleep(1)
        after = {"gateway": rss_mib(gw.pid), "qdrouterd": rss_mib(router_pid)}
        print("gateway: %d/%d connected in %.1f s; RSS MiB gateway %.1f -> %.1f, qdrouterd %.1f -> %.1f"
              % (ok, n, secs, before["gateway"], after["gateway"], before["qdrouterd"], after["qdrouterd"]))
        close_clients(clients)
        clients, okm, secs = open_clients(mp, n, "mq")
        time.sleep(1)
        print("mosquitto: %d/%d connected in %.1f s; RSS MiB %.1f -> %.1f"
              % (okm, n, secs, before["mosquitto"], rss_mib(mosq.pid)))
        close_clients(clients)
        print("uptime after:", subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip())
        return 0 if ok == n and okm == n else 1
    finally:
        gw.terminate()
        mosq.terminate()
        gw.wait(10)
        mosq.wait(10)
        mesh.close()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
