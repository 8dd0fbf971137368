"""QoS 2 and persistent sessions through the MQTT gateway (gateway/mqtt
qos2.go, session.go; docs/mqtt-design.md "QoS 2 and persistent sessions"):
the REAL gateway binary in front of a REAL qdrouterd 1.19 and the
collection's auth service (test_mqtt_gateway.py's environment, reused: its
receive_maximum is 8), REAL paho-mqtt clients (MQTT 5 and 3.1.1) and a REAL
AMQP peer (python-qpid-proton). The mid-handshake drops use a bare MQTT
3.1.1 client (``Raw`` below): paho cannot be stopped between PUBREC and
PUBREL, so the four packets it sends (CONNECT, PUBLISH, PUBREL) are encoded
here by hand, about twenty lines after MQTT 3.1.1 section 3; the gateway's
side is mochi-mqtt's codec."""
import os
import socket
import ssl
import struct
import threading
import time

import pytest

# env and close_clients are test_mqtt_gateway's fixtures, used here by name
from test_mqtt_gateway import OPEN, Consumer, amqp, close_clients, env, wait_for  # noqa: F401 pylint: disable=unused-import

from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping

pytestmark = [pytest.mark.integration, pytest.mark.router]


def cid(tag):
    return "%s-%s" % (tag, os.urandom(3).hex())


class Session(object):
    """A paho client with a persistent session: MQTT 5 clean start 0 and a
    session expiry, or 3.1.1 clean session 0; records what it sees."""

    def __init__(self, env, client_id, version=5, expiry=300, user="alice", password="secret-a", clean=False):
        import paho.mqtt.client as paho
        self.env, self.client_id, self.version, self.expiry, self.clean = env, client_id, version, expiry, clean
        self.user, self.password = user, password
        self.c = None
        self.connack = self.present = self.disconnect_rc = None
        self.messages, self.subacks, self.pubacks = [], {}, {}
        OPEN.append(self)
        self.paho = paho

    def connect(self):
        paho = self.paho
        if self.version == 5:
            c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=self.client_id, protocol=paho.MQTTv5)
        else:
            c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=self.client_id, protocol=paho.MQTTv311,
                            clean_session=self.clean)
        self.connack = self.present = self.disconnect_rc = None

        def on_connect(_c, _u, flags, rc, _p):
            self.present, self.connack = flags.session_present, rc
        c.on_connect = on_connect
        c.on_disconnect = lambda _c, _u, _f, rc, _p: setattr(self, "disconnect_rc", rc)
        c.on_message = lambda _c, _u, m: self.messages.append((m.topic, bytes(m.payload), m.qos))
        c.on_subscribe = lambda _c, _u, mid, rcs, _p: self.subacks.__setitem__(mid, rcs)
        c.on_publish = lambda _c, _u, mid, rc, _p: self.pubacks.__setitem__(mid, rc)
        c.username_pw_set(self.user, self.password)
        c.tls_set(ca_certs=self.env["ca"])
        kwargs = {}
        if self.version == 5:
            from paho.mqtt.packettypes import PacketTypes
            from paho.mqtt.properties import Properties
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = self.expiry
            kwargs = {"clean_start": self.clean, "properties": props}
        c.connect("127.0.0.1", self.env["port"], **kwargs)
        c.loop_start()
        self.c = c
        assert wait_for(lambda: self.connack is not None or self.disconnect_rc is not None), "no CONNACK"
        return self

    def subscribe(self, topic_filter, qos=1):
        mid = self.c.subscribe(topic_filter, qos=qos)[1]
        assert wait_for(lambda: mid in self.subacks), "no SUBACK"
        return [rc.value for rc in self.subacks[mid]]

    def disconnect(self):
        """A normal DISCONNECT (the session stays: its expiry, not 0)."""
        self.c.disconnect()
        wait_for(lambda: self.disconnect_rc is not None, 5)
        self.c.loop_stop()

    def close(self):
        """Ends the session too (MQTT 5: DISCONNECT with session expiry 0;
        3.1.1 and a gone client: a clean connection with its id): an offline
        session would keep its receivers, and an anycast address shares its
        messages among them."""
        ended = False
        if self.c is not None:
            try:
                if self.version == 5 and self.c.is_connected():
                    from paho.mqtt.packettypes import PacketTypes
                    from paho.mqtt.properties import Properties
                    props = Properties(PacketTypes.DISCONNECT)
                    props.SessionExpiryInterval = 0
                    self.c.disconnect(properties=props)
                    ended = wait_for(lambda: self.disconnect_rc is not None, 5)
                else:
                    self.c.disconnect()
            finally:
                self.c.loop_stop()
                if self.c.socket():
                    self.c.socket().close()
        if self.connack == 0 and not ended:
            self.clean, self.expiry = True, 0
            self.connect()
            self.disconnect()


def send_amqp(env, address, bodies, qos=1):
    """AMQP messages to ``address``; returns when the router settled each
    (a BlockingSender waits for the outcome: accepted)."""
    from proton import Message
    conn = amqp(env)
    try:
        sender = conn.create_sender(address)
        for body in bodies:
            sender.send(Message(body=body, durable=qos > 0, annotations={mapping.ANNOTATION_QOS: qos}))
    finally:
        conn.close()


class Sender(threading.Thread):
    """send_amqp in a thread of its own: to an anycast address the router
    settles a delivery when the consumer did, here at the MQTT client's
    PUBACK, which comes after the client reconnected."""

    def __init__(self, env, address, bodies):
        super(Sender, self).__init__(daemon=True)
        self.env, self.address, self.bodies, self.error = env, address, bodies, None
        self.start()

    def run(self):
        try:
            send_amqp(self.env, self.address, self.bodies)
        except Exception as e:  # reported by settled()
            self.error = e

    def settled(self, timeout=15):
        self.join(timeout)
        return not self.is_alive() and self.error is None


# ------------------------------------------------------------ a bare 3.1.1 client

def s16(data):
    data = data.encode() if isinstance(data, str) else data
    return struct.pack(">H", len(data)) + data


def varint(n):
    out = b""
    while True:
        n, byte = n // 128, n % 128
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


PUBREC, PUBCOMP = 0x50, 0x70


class Raw(object):
    """MQTT 3.1.1 over TLS, clean session 0, QoS 2 publishes only."""

    def __init__(self, env, client_id, user="bob", password="bob-pw"):
        ctx = ssl.create_default_context(cafile=env["ca"])
        self.s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", env["port"]), timeout=15),
                                 server_hostname="127.0.0.1")
        self.send(0x10, s16("MQTT") + bytes([4, 0xC0]) + struct.pack(">H", 60) + s16(client_id) + s16(user)
                  + s16(password))  # level 4; flags: user name, password, clean session 0
        kind, body = self.read()
        assert kind == 0x20 and body[1] == 0, (kind, body)
        self.present = body[0] & 1

    def send(self, first, body):
        self.s.sendall(bytes([first]) + varint(len(body)) + body)

    def recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError("the gateway closed the connection")
            buf += chunk
        return buf

    def read(self):
        first = self.recv(1)[0]
        n, mult = 0, 1
        while True:
            b = self.recv(1)[0]
            n += (b & 0x7F) * mult
            mult *= 128
            if b < 0x80:
                break
        return first & 0xF0, self.recv(n)

    def publish(self, topic, pid, payload, dup=False):
        self.send(0x34 | (0x08 if dup else 0), s16(topic) + struct.pack(">H", pid) + payload)

    def pubrel(self, pid):
        self.send(0x62, struct.pack(">H", pid))

    def expect(self, kind, pid):
        got, body = self.read()
        assert (got, struct.unpack(">H", body[:2])[0]) == (kind, pid), (got, body)

    def drop(self):
        """The TCP connection closed without DISCONNECT."""
        self.s.close()


# ------------------------------------------------------------ tests

@pytest.mark.parametrize("version", [5, 3])
def test_session_present_subscriptions_survive_and_queued_qos1_is_delivered(env, version):
    s = Session(env, cid("persist%d" % version), version=version).connect()
    assert s.connack == 0 and not s.present
    assert s.subscribe("w/a", qos=1) == [1]
    s.disconnect()
    bodies = [("offline-%d-%d" % (version, i)).encode() for i in range(3)]
    sender = Sender(env, "w/a", bodies)  # the session's receiver takes them, unsettled
    time.sleep(0.5)
    assert sender.is_alive(), "accepted while the client was away"
    s.connect()  # no SUBSCRIBE again
    assert s.connack == 0 and s.present, "session present not set"
    assert wait_for(lambda: len(s.messages) >= 3), s.messages
    assert sorted(m[1] for m in s.messages) == sorted(bodies) and {m[2] for m in s.messages} == {1}
    assert sender.settled(), "the AMQP deliveries were not accepted after the PUBACKs: %s" % sender.error
    send_amqp(env, "w/a", [b"live"])  # the subscription is active
    assert wait_for(lambda: len(s.messages) == 4), s.messages
    assert s.messages[-1][1] == b"live"


def test_clean_start_discards_the_session(env):
    client_id = cid("clean")
    s = Session(env, client_id).connect()
    assert s.subscribe("h/a") == [1]
    s.disconnect()
    c = Session(env, client_id, clean=True).connect()
    assert c.connack == 0 and not c.present
    sender = Sender(env, "h/a", [b"nobody"])
    time.sleep(0.5)
    # no receiver of h/a is left on the router (the old session's is closed): no credit, the send waits
    assert sender.is_alive() and c.messages == []


@pytest.mark.parametrize("version", [5, 3])
def test_a_second_connection_takes_the_session_over(env, version):
    client_id = cid("takeover%d" % version)
    first = Session(env, client_id, version=version).connect()
    assert first.subscribe("w/b") == [1]
    second = Session(env, client_id, version=version).connect()
    assert second.connack == 0 and second.present
    assert wait_for(lambda: first.disconnect_rc is not None), "the first connection stayed up"
    if version == 5:
        assert first.disconnect_rc.value == 0x8E, first.disconnect_rc
    send_amqp(env, "w/b", [b"to the new holder"])
    assert wait_for(lambda: second.messages), "the taken-over subscription delivers nothing"
    assert second.messages == [("w/b", b"to the new holder", 1)] and first.messages == []


def test_another_users_connection_with_the_id_is_refused(env):
    client_id = cid("owned")
    s = Session(env, client_id).connect()
    s.disconnect()
    other = Session(env, client_id, user="bob", password="bob-pw").connect()
    assert other.connack.value == 0x85, other.connack
    mine = Session(env, client_id).connect()
    assert mine.connack == 0 and mine.present


def test_session_expiry_is_honoured(env):
    client_id = cid("expiry")
    s = Session(env, client_id, expiry=1).connect()
    assert s.subscribe("w/b") == [1]
    s.disconnect()
    time.sleep(3.0)  # mochi looks once a second, at whole seconds
    s.connect()
    assert s.connack == 0 and not s.present


@pytest.mark.parametrize("version", [5, 3])
def test_qos2_end_to_end_exactly_one_copy_each_way(env, version):
    consumer = Consumer(env, "q2")
    try:
        s = Session(env, cid("qos2e2e%d" % version), version=version).connect()
        bodies = [("qos2-%d-%d" % (version, i)).encode() for i in range(5)]
        mids = [s.c.publish("q2", b, qos=2).mid for b in bodies]
        assert wait_for(lambda: all(m in s.pubacks for m in mids)), s.pubacks  # paho: at PUBCOMP
        consumer.wait(5)
        time.sleep(0.3)
        assert sorted(bytes(m.body) for m in consumer.messages) == sorted(bodies)
        assert {m.annotations[mapping.ANNOTATION_QOS] for m in consumer.messages} == {2}
    finally:
        consumer.stop()
    assert s.subscribe("w/a", qos=2) == [2]  # granted QoS 2
    send_amqp(env, "w/a", [b"down at qos 2"], qos=2)  # returns once the delivery was accepted (at PUBREC)
    assert wait_for(lambda: s.messages), "no QoS 2 delivery"
    assert s.messages == [("w/a", b"down at qos 2", 2)]


def mid_handshake_rounds(env, client_id, rounds, tag, sent):
    """``rounds`` connections of one client id (clean session 0), each
    dropped (TCP closed, no DISCONNECT) right after (a) the PUBREC of one
    QoS 2 publish, before its PUBREL, and (b) the PUBLISH of another, before
    its PUBREC. The next connection finishes both as a client does: (a)
    PUBREL (every other time the PUBLISH again with DUP first: answered
    PUBREC, not forwarded), (b) the PUBLISH again with DUP, then PUBREL."""
    prev = []  # the previous round's (a, b): (packet id, body) each
    for i in range(rounds + 1):
        r = Raw(env, client_id)
        assert r.present == (1 if i else 0), "%s round %d: session present %d" % (client_id, i, r.present)
        for (a_pid, a_body), (b_pid, b_body) in prev:
            r.publish("q1", b_pid, b_body, dup=True)  # (b): it never saw a PUBREC
            r.expect(PUBREC, b_pid)
            r.pubrel(b_pid)
            r.expect(PUBCOMP, b_pid)
            if i % 2:
                r.publish("q1", a_pid, a_body, dup=True)  # (a): unsure its PUBREC came
                r.expect(PUBREC, a_pid)
            r.pubrel(a_pid)
            r.expect(PUBCOMP, a_pid)
        if i == rounds:
            r.drop()
            return
        a = (2 * i + 1, ("a-%s-%s-%d" % (tag, client_id, i)).encode())
        b = (2 * i + 2, ("b-%s-%s-%d" % (tag, client_id, i)).encode())
        r.publish("q1", a[0], a[1])
        r.expect(PUBREC, a[0])
        r.publish("q1", b[0], b[1])
        r.drop()
        sent += [a[1], b[1]]
        prev = [(a, b)]


def test_qos2_never_delivered_twice_over_100_reconnects_mid_handshake(env):
    """100 reconnects mid-handshake (mid_handshake_rounds), by two clients
    at once (50 each, the gateway's sessions side by side): the AMQP
    consumer must see every message exactly once."""
    consumer = Consumer(env, "q1")
    try:
        tag = os.urandom(3).hex()
        sent, errors = [], []

        def run(client_id):
            try:
                mid_handshake_rounds(env, client_id, 50, tag, sent)
            except Exception as e:  # reported below
                errors.append(e)
        threads = [threading.Thread(target=run, args=(cid("mid%d" % n),)) for n in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert len(sent) == 200
        consumer.wait(len(sent), timeout=30)
        time.sleep(0.5)  # a late duplicate would come now
        got = [bytes(m.body) for m in consumer.messages if tag.encode() in bytes(m.body)]
        assert len(got) == len(sent) and sorted(got) == sorted(sent), \
            "duplicates: %s; missing: %s" % (sorted(set(b for b in got if got.count(b) > 1)),
                                             sorted(set(sent) - set(got)))
    finally:
        consumer.stop()
