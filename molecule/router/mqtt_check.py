"""The MQTT clients of molecule/router's verify-mqtt.yml (paho-mqtt, copied
from the controller's test environment, against the mqtt_gateway role's
instances; AMQP through the routers with clients.py). Each command prints one
JSON object; the playbook asserts on it.

  mqtt_check.py to-amqp  --gateway H:P --router R --space S --topic T
  mqtt_check.py to-mqtt  --sub H:P --pub H:P --space S --topic T
  mqtt_check.py connect  --gateway H:P --space S [--password P] [--plain]
  mqtt_check.py will-crash --gateway H:P --router R --space S --topic T --unit U
"""

import argparse
import contextlib
import json
import os
import socket
import ssl
import subprocess
import threading
import time
import uuid

import paho.mqtt.client as mqtt
from proton.reactor import Container

import clients
from dataplane import Base


def _client(cfg, space, password=None, tls=True):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="verify-" + uuid.uuid4().hex[:12],
                    protocol=mqtt.MQTTv311)
    s = cfg["spaces"][space]
    c.username_pw_set(s["user"], s["password"] if password is None else password)
    if tls:
        # trust the collection's CA and check the gateway's name
        c.tls_set(ca_certs=cfg["ca"], cert_reqs=ssl.CERT_REQUIRED)
    return c


def connect(cfg, gateway, space, password=None, tls=True, timeout=20):
    """(client, {connected, reason}) after CONNACK, or the error."""
    host, port = gateway.rsplit(":", 1)
    c = _client(cfg, space, password, tls)
    done, out = threading.Event(), {}

    def on_connect(_c, _u, _flags, reason, _props):
        out.update(connected=not reason.is_failure, reason=str(reason), reason_value=reason.value)
        done.set()

    def on_disconnect(_c, _u, _flags, reason, _props):
        out.setdefault("connected", False)
        out.setdefault("reason", str(reason))
        done.set()
    c.on_connect, c.on_disconnect = on_connect, on_disconnect
    try:
        c.connect(host, int(port), keepalive=30)
    except (OSError, ssl.SSLError) as e:
        return None, {"connected": False, "error": "%s: %s" % (type(e).__name__, e)}
    c.loop_start()
    if not done.wait(timeout):
        out.update(connected=False, error="no CONNACK in %ss" % timeout)
    if not out.get("connected"):
        c.loop_stop()
        return None, out
    return c, out


def publish(c, topic, body, qos=1, timeout=20):
    """True once the gateway answered PUBACK within ``timeout`` s; False
    otherwise (also when the connection went away: paho raises then)."""
    try:
        info = c.publish(topic, body, qos=qos)
        info.wait_for_publish(timeout)
        return info.is_published()
    except (RuntimeError, ValueError):
        return False


def _client_with_will(cfg, gateway, space, topic, body, timeout=20):
    """A connected MQTT 3.1.1 client with a QoS 1 will on ``topic`` (keep-alive
    600 s: nothing but the gateway's death ends it during the check)."""
    host, port = gateway.rsplit(":", 1)
    c = _client(cfg, space)
    c.will_set(topic, body.encode(), qos=1)
    c.reconnect_delay_set(min_delay=120, max_delay=120)
    done = threading.Event()
    c.on_connect = lambda *args: done.set()
    c.connect(host, int(port), keepalive=600)
    c.loop_start()
    return c if done.wait(timeout) and c.is_connected() else None


class _Receiver(Base):
    """One AMQP receiver (dataplane.py's event-driven client, in a thread of
    its own: the connection is pumped while the MQTT side works). Not a
    BlockingConnection: that one does no I/O while the MQTT publish waits,
    but the gateway's PUBACK waits for the receiver's accept - a deadlock
    until the router closed the silent connection (idle timeout, 16 s), the
    delivery came back MODIFIED, the gateway dropped the MQTT 3.1.1 client
    without PUBACK, and close() waited 60 s on the dead connection (molecule
    /router's failure, 80 s). ``attached`` once the
    router answered the attach; ``bodies`` what arrived, accepted; it stops
    at the first message or after ``timeout`` (closing within 5 s)."""

    def __init__(self, source, address, timeout):
        super(_Receiver, self).__init__(timeout, prefetch=10)
        self.source, self.address = source, address
        self.attached = threading.Event()
        self.result = {"bodies": []}

    def begin(self, event):
        self.conn = event.container.connect(**self.source)
        self.conns = [self.conn]
        event.container.create_receiver(self.conn, self.address)

    def on_link_opened(self, event):
        self.attached.set()

    def on_message(self, event):
        got = event.message.body
        self.result["bodies"].append(bytes(got).decode() if isinstance(got, (bytes, memoryview, bytearray))
                                     else str(got))
        self.accept(event.delivery)
        self.stop()


class _Later(object):
    def __init__(self, fn):
        self.fn = fn

    def on_timer_task(self, _event):
        self.fn()


class _Collector(_Receiver):
    """A _Receiver that keeps every message and stops 5 s after the first
    (a second copy of a will would arrive in that time)."""

    def on_message(self, event):
        got = event.message.body
        self.result["bodies"].append(bytes(got).decode() if isinstance(got, (bytes, memoryview, bytearray))
                                     else str(got))
        self.accept(event.delivery)
        if len(self.result["bodies"]) == 1:
            event.container.schedule(5, _Later(self.stop))


@contextlib.contextmanager
def _receiving(handler, attach_timeout, join):
    """Run ``handler`` (a _Receiver) in a daemon thread: yields the thread
    once the router answered its attach, None if it did not within
    ``attach_timeout`` or failed; joins the thread (``join`` s at most) at
    the end."""
    thread = threading.Thread(target=Container(handler).run, daemon=True)
    thread.start()
    try:
        yield thread if handler.attached.wait(attach_timeout) and not handler.errors else None
    finally:
        thread.join(join)


def _wait_for_first(handler, seconds, thread=None):
    """Wait (``seconds`` at most, polling) until ``handler`` has a message or
    its ``thread`` ended; whether a message is there."""
    end = time.time() + seconds
    while time.time() < end and not handler.result["bodies"] and (thread is None or thread.is_alive()):
        time.sleep(0.1)
    return bool(handler.result["bodies"])


def _publish_until_puback(cfg, a, body, out, attempts=4):
    """Connect and publish QoS 1; without PUBACK (the gateway's router has no
    route to the address yet: an anycast sender gets no credit until the
    receiver on the other router is known across the mesh, the gateway gives
    up after 10 s and closes an MQTT 3.1.1 connection) connect and publish
    again. Bounded: ``attempts`` x (connect + publish) timeouts."""
    for attempt in range(1, attempts + 1):
        out["attempts"] = attempt
        c, conn_out = connect(cfg, a.gateway, a.space, timeout=10)
        out.update(conn_out)
        if c is None:
            out["stage"] = "connect"
            continue
        out["puback"] = publish(c, a.topic, body.encode(), timeout=15)
        try:
            c.disconnect()
        finally:
            c.loop_stop()
        if out["puback"]:
            out.pop("stage", None)
            return True
        out["stage"] = "puback"
    return False


def to_amqp(a, cfg):
    """An AMQP receiver on the router (attached first); an MQTT QoS 1 publish
    through the gateway. ``stage`` names the first step that failed: attach,
    connect, puback, received; none when all passed. Every wait is bounded."""
    body = "mqtt-to-amqp-%s" % uuid.uuid4().hex[:8]
    out = {"sent": body, "connected": False, "puback": False, "received": None}
    handler = _Receiver(clients.url(a.router, a.space, cfg), a.topic, timeout=3 * a.timeout + 60)
    # the handler closes after its message (5 s at most for the close) or at
    # its own timeout; a daemon thread never keeps the process alive
    with _receiving(handler, a.timeout, join=6) as thread:
        if thread is None:
            return dict(out, stage="attach", errors=handler.errors)
        if not _publish_until_puback(cfg, a, body, out):
            return dict(out, errors=handler.errors)
        if _wait_for_first(handler, a.timeout, thread):
            out["received"] = handler.result["bodies"][0]
        else:
            out["stage"] = "received"
        return dict(out, errors=handler.errors)


def _restarts(unit):
    """systemd's restart count of ``unit``."""
    return subprocess.run(["systemctl", "show", "-P", "NRestarts", unit], capture_output=True, text=True,
                          check=False).stdout.strip()


def will_crash(a, cfg):
    """kill -9 of the gateway instance (``--unit``, on this host) while a
    client with a will is connected: systemd starts it again and the
    restarted process publishes the will it had journaled; an AMQP receiver
    on the router gets it exactly once (the receiver keeps listening 5 s after
    the first). ``journal`` is the number of will files before the kill."""
    body = "will-%s" % uuid.uuid4().hex[:8]
    out = {"sent": body, "received": []}
    handler = _Collector(clients.url(a.router, a.space, cfg), a.topic, timeout=2 * a.timeout + 10)
    with _receiving(handler, a.timeout, join=2 * a.timeout + 20) as thread:
        if thread is None:
            return dict(out, stage="attach", errors=handler.errors)
        c = _client_with_will(cfg, a.gateway, a.space, a.topic, body)
        if c is None:
            return dict(out, stage="connect")
        state = "/var/lib/enmasse-mqtt-gateway/%s" % a.space
        out["journal"] = len(os.listdir(state))
        out["restarts_before"] = _restarts(a.unit)
        t0 = time.time()
        out["killed"] = subprocess.run(["systemctl", "kill", "-s", "SIGKILL", a.unit], check=False).returncode == 0
        c.loop_stop()   # the device stays away: paho would connect again (and register its will again)
        _wait_for_first(handler, 2 * a.timeout - (time.time() - t0))
        out["seconds"] = round(time.time() - t0, 2)
        thread.join(12)   # the collector ends 5 s after the first message
        out["received"] = list(handler.result["bodies"])
        out["restarts_after"] = _restarts(a.unit)
        out["journal_after"] = len(os.listdir(state))
        return dict(out, errors=handler.errors)


def to_mqtt(a, cfg):
    """An MQTT subscriber on one instance, a publisher on another (one endpoint)."""
    got, event = [], threading.Event()
    sub, out = connect(cfg, a.sub, a.space)
    if sub is None:
        return {"subscriber": out}

    def on_message(_c, _u, m):
        got.append(m.payload.decode())
        event.set()
    sub.on_message = on_message
    suback = threading.Event()
    sub.on_subscribe = lambda *args: suback.set()
    sub.subscribe(a.topic, qos=1)
    result = {"suback": suback.wait(a.timeout)}
    pub, pout = connect(cfg, a.pub, a.space)
    if pub is None:
        return dict(result, publisher=pout)
    body = "mqtt-to-mqtt-%s" % uuid.uuid4().hex[:8]
    # the subscriber's address reaches the other routers within a few seconds
    # (router advertisements): publish again until it arrives, at most 5 times
    for attempt in range(1, 6):
        result.update(puback=publish(pub, a.topic, body.encode()), attempts=attempt)
        if event.wait(3):
            break
    for c in (pub, sub):
        c.disconnect()
        c.loop_stop()
    return dict(result, sent=body, received=got)


def plain(a):
    """Plain TCP to the gateway's host on the MQTT plain port: refused (nothing listens)."""
    host, port = a.gateway.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        return {"listening": True}
    except ConnectionRefusedError:
        return {"listening": False, "error": "connection refused"}
    except OSError as e:
        return {"listening": False, "error": str(e)}


def connect_times(a, cfg):
    """``a.times`` CONNECTs, each closed after its CONNACK: the last one's
    outcome, with ``refused`` (how many were not connected) when more than one."""
    refused = 0
    for unused in range(a.times):
        c, out = connect(cfg, a.gateway, a.space, password=a.password)
        if c is None:
            refused += 1
        else:
            c.disconnect()
            c.loop_stop()
    if a.times > 1:
        out["refused"] = refused
    return out


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("to-amqp")
    s.add_argument("--gateway", required=True)
    s.add_argument("--router", required=True)
    s = sub.add_parser("to-mqtt")
    s.add_argument("--sub", required=True)
    s.add_argument("--pub", required=True)
    s = sub.add_parser("connect")
    s.add_argument("--gateway", required=True)
    s.add_argument("--password")
    # several CONNECTs one after the other (an alert's condition: logins refused)
    s.add_argument("--times", type=int, default=1)
    s = sub.add_parser("plain")
    s.add_argument("--gateway", required=True)
    s = sub.add_parser("will-crash")
    s.add_argument("--gateway", required=True)
    s.add_argument("--router", required=True)
    s.add_argument("--unit", required=True)
    for name in ("to-amqp", "to-mqtt", "connect", "plain", "will-crash"):
        s = sub.choices[name]
        s.add_argument("--space", default="tenant-a")
        s.add_argument("--topic", default="greetings")
        s.add_argument("--timeout", type=float, default=20)
    a = p.parse_args()
    cfg = clients.config()
    if a.cmd == "to-amqp":
        out = to_amqp(a, cfg)
    elif a.cmd == "to-mqtt":
        out = to_mqtt(a, cfg)
    elif a.cmd == "plain":
        out = plain(a)
    elif a.cmd == "will-crash":
        out = will_crash(a, cfg)
    else:
        out = connect_times(a, cfg)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
