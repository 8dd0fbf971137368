"""The gateway's authentication and permissions through the space's real
auth path (issue 21): qdrouterd 1.19 with a multiTenant listener per space
whose SASL PLAIN goes to the collection's auth service (users files; the
Keycloak backend answers the router the same way, docs/auth-service.md),
the prototype gateway in front of space-a's listener, paho-mqtt clients.

Checks: the right password connects; a wrong password, an unknown user and a
user of space-b are refused at CONNACK; a user allowed to send only to q1
gets a PUBACK for q1 (an AMQP consumer of space-a attached) and, with MQTT 5,
a PUBACK "not authorized" (0x87) for q2; with MQTT 3.1.1 the connection is
closed instead. Exit 0 when all hold.
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
import test_auth_service_router as asr  # noqa: E402


def connack(port, user, password, version=mqtt.MQTTv311, client_id="probe"):
    got = {}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=version)
    c.username_pw_set(user, password)
    c.on_connect = lambda client, userdata, flags, rc, props: got.setdefault("rc", rc)
    c.on_publish = lambda client, userdata, mid, rc, props: got.setdefault("puback", []).append((mid, rc))
    c.on_disconnect = lambda client, userdata, flags, rc, props: got.setdefault("disconnect", rc)
    c.connect("127.0.0.1", port)
    c.loop_start()
    deadline = time.time() + 10
    while "rc" not in got and time.time() < deadline:
        time.sleep(0.05)
    return c, got


def main(bin_dir="/tmp/mqtt-spike-bin"):
    root = tempfile.mkdtemp(prefix="mqtt-spike-auth-")
    users_dir = os.path.join(root, "users")
    os.makedirs(users_dir)
    asr.write_users(users_dir, "space-a", {"alice": ("secret-a", asr.ALL), "carol": ("carol-pw", ["send_q1"])})
    asr.write_users(users_dir, "space-b", {"dave": ("dave-pw", asr.ALL)})
    service = asr.AuthService(os.path.join(root, "service"), users_dir, helpers.free_port())
    service.start()
    prefix = asr.build_router()
    mgmt, ports = helpers.free_port(), {"space-a": helpers.free_port(), "space-b": helpers.free_port()}
    conf = os.path.join(root, "qdrouterd.json")
    with open(conf, "w") as f:
        f.write(asr.router_config(mgmt, ports, service.port, None))
    router = subprocess.Popen([os.path.join(prefix, "sbin", "qdrouterd"), "-c", conf],
                              stdout=open(os.path.join(root, "qdrouterd.log"), "w"), stderr=subprocess.STDOUT,
                              env=asr.router_env(prefix))
    gp = helpers.free_port()
    gateway = None
    results = []
    try:
        spike_bench.wait_port(ports["space-a"])
        gateway = subprocess.Popen([os.path.join(bin_dir, "gateway"), "-listen", "127.0.0.1:%d" % gp,
                                    "-router", "127.0.0.1:%d" % ports["space-a"]])
        spike_bench.wait_port(gp)
        for user, password, want in (("alice", "secret-a", True), ("alice", "wrong", False),
                                     ("nobody", "x", False), ("dave", "dave-pw", False)):
            c, got = connack(gp, user, password)
            ok = (got.get("rc") == 0) == want
            results.append(ok)
            print("CONNECT %s/%s: %s (%s)" % (user, password, got.get("rc"), "ok" if ok else "WRONG"))
            c.loop_stop()
            c.disconnect()
        consumer = subprocess.Popen([os.path.join(bin_dir, "amqp-count"), "-url",
                                     "amqp://127.0.0.1:%d" % ports["space-a"], "-user", "alice", "-password",
                                     "secret-a", "-address", "q1", "-n", "1", "-timeout", "15s"],
                                    stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)
        c, got = connack(gp, "carol", "carol-pw", mqtt.MQTTv5, "carol5")
        c.publish("q1", b"allowed", qos=1)
        c.publish("q2", b"not allowed", qos=1)
        time.sleep(3)
        print("carol MQTT 5 PUBACKs (mid, reason):", [(m, str(rc)) for m, rc in got.get("puback", [])])
        codes = dict((m, rc) for m, rc in got.get("puback", []))
        results.append(len(codes) == 2 and not codes[1].is_failure and codes[2].value == 0x87)
        c.loop_stop()
        c.disconnect()
        print("AMQP consumer of q1:", consumer.communicate(timeout=20)[0].strip())
        results.append(consumer.returncode == 0)
        c, got = connack(gp, "carol", "carol-pw", mqtt.MQTTv311, "carol3")
        c.publish("q2", b"not allowed", qos=1)
        time.sleep(3)
        print("carol MQTT 3.1.1 publish to q2: PUBACK %s, disconnected %s"
              % (got.get("puback"), "disconnect" in got))
        results.append(not got.get("puback") and "disconnect" in got)
        c.loop_stop()
    finally:
        if gateway:
            gateway.terminate()
            gateway.wait(10)
        router.terminate()
        router.wait(10)
        service.stop()
    print("OK" if all(results) else "FAILED %s" % results)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
