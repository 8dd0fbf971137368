"""Proof that the prototype's PUBACK waits for the router (issue 21).

A real qdrouterd and the prototype gateway; a paho-mqtt (QoS 1) publish to
the anycast address ``nobody`` while no AMQP consumer is attached: the router
gives the gateway's link no credit, so no PUBACK may come. Then a consumer
attaches: the message flows and the PUBACK arrives after it. Finally the
router is stopped: a new CONNECT is refused (the router is the auth path).
Prints one line per step; exit status 0 when all three hold.
"""

import os
import subprocess
import sys
import tempfile
import time

import paho.mqtt.client as mqtt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import helpers  # noqa: E402
import spike_bench  # noqa: E402
from routers import RouterMesh, section  # noqa: E402


def main(bin_dir="/tmp/mqtt-spike-bin"):
    work = tempfile.mkdtemp(prefix="mqtt-spike-ack-")
    cp, gp = helpers.free_port(), helpers.free_port()
    listener = section("listener", {"name": "clients", "host": "127.0.0.1", "port": cp, "role": "normal",
                                    "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
    mesh = RouterMesh(work, 1, extra_config={"router-0": listener}).start()
    gw = spike_bench.start_gateway(bin_dir, gp, cp, tempfile.mkdtemp(prefix="mqtt-spike-gw-"))
    ok = True
    try:
        spike_bench.wait_port(cp)
        spike_bench.wait_port(gp)
        acked = []
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="ack-probe")
        c.on_publish = lambda client, userdata, mid, rc, props: acked.append((mid, time.time()))
        c.connect("127.0.0.1", gp)
        c.loop_start()
        sent = time.time()
        c.publish("nobody", b"hello", qos=1)
        time.sleep(3)
        print("no consumer: PUBACK after 3 s: %s" % bool(acked))
        ok &= not acked
        consumer = subprocess.run([os.path.join(bin_dir, "amqp-count"), "-url", "amqp://127.0.0.1:%d" % cp,
                                   "-address", "nobody", "-n", "1", "-timeout", "10s"],
                                  capture_output=True, text=True, check=False)
        got = time.time()
        time.sleep(0.5)
        print("consumer attached: %s; PUBACK %s" % (consumer.stdout.strip(),
              "after %.2f s" % (acked[0][1] - sent) if acked else "never"))
        ok &= bool(acked) and acked[0][1] >= got - 1.0 and consumer.returncode == 0
        c.loop_stop()
        c.disconnect()
        mesh.stop(0)
        c2 = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="after-router-stop")
        try:
            rc = c2.connect("127.0.0.1", gp)
            c2.loop_start()
            time.sleep(2)
            connected = c2.is_connected()
            c2.loop_stop()
        except OSError as e:
            connected, rc = False, str(e)
        print("router stopped: CONNECT accepted: %s" % connected)
        ok &= not connected
    finally:
        gw.terminate()
        gw.wait(10)
        mesh.close()
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
