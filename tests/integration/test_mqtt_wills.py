"""Last will through the MQTT gateway (gateway/mqtt/will.go, issue 21,
docs/mqtt-design.md "Last will"): the REAL gateway binary in front of a REAL
qdrouterd 1.19 and the collection's auth service (test_mqtt_gateway.py's
environment, reused), REAL paho-mqtt clients (MQTT 5 and 3.1.1) registering
wills, Debian's mosquitto_pub for the raw 3.1.1 CONNACK code, and a REAL AMQP
receiver (python-qpid-proton) on the will's address. Each will carries a
payload of its own, so a will of another test cannot be counted here."""
import os
import subprocess
import time

import pytest

# env and close_clients are test_mqtt_gateway's fixtures, used here by name
from test_mqtt_gateway import OPEN, Consumer, Mqtt, close_clients, env, wait_for  # noqa: F401 pylint: disable=unused-import

from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping

pytestmark = [pytest.mark.integration, pytest.mark.router]


def payload(tag):
    return ("will-%s-%s" % (tag, os.urandom(4).hex())).encode()


def will_client(env, topic, body, user="alice", password="secret-a", version=5, qos=1, retain=False, delay=None,
                client_id=None, keepalive=60):
    """A paho client that registers a will at CONNECT (paho's will_set)."""
    m = Mqtt(env, user, password, version=version, client_id=client_id, connect=False)
    props = None
    if delay is not None:
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties
        props = Properties(PacketTypes.WILLMESSAGE)
        props.WillDelayInterval = delay
    m.c.will_set(topic, body, qos=qos, retain=retain, properties=props)
    m.c.connect("127.0.0.1", env["port"], keepalive=keepalive)
    m.c.loop_start()
    assert wait_for(lambda: m.connack is not None or m.disconnect_rc is not None), "no CONNACK"
    return m


def drop(m):
    """Close the TCP connection without DISCONNECT."""
    m.c.loop_stop()
    m.c.socket().close()
    OPEN.remove(m)


def bodies(consumer, body):
    return [m for m in consumer.messages if bytes(m.body) == body]


def wait_none(consumer, body, seconds):
    time.sleep(seconds)
    return not bodies(consumer, body)


@pytest.mark.parametrize("version", [5, 3])
def test_dropped_tcp_publishes_the_will_with_its_qos_durable(env, version):
    consumer = Consumer(env, "q1")
    try:
        body = payload("drop%d" % version)
        m = will_client(env, "q1", body, version=version)
        assert m.connack == 0
        assert wait_none(consumer, body, 0.5), "the will came while the client was connected"
        drop(m)
        got = consumer.wait()
        assert [bytes(x.body) for x in got] == [body]
        assert got[0].durable and got[0].annotations[mapping.ANNOTATION_QOS] == 1
        assert not consumer.presettled[0], "a QoS 1 will was sent pre-settled"
        assert mapping.ANNOTATION_WILL_DELAY not in got[0].annotations
    finally:
        consumer.stop()


def test_qos0_will_is_sent_presettled(env):
    consumer = Consumer(env, "q1")
    try:
        body = payload("qos0")
        m = will_client(env, "q1", body, qos=0)
        drop(m)
        got = consumer.wait()
        assert bytes(got[0].body) == body and not got[0].durable
        assert got[0].annotations[mapping.ANNOTATION_QOS] == 0
    finally:
        consumer.stop()


@pytest.mark.parametrize("version", [5, 3])
def test_keep_alive_timeout_publishes_the_will(env, version):
    consumer = Consumer(env, "q1")
    try:
        body = payload("keepalive%d" % version)
        m = will_client(env, "q1", body, version=version, keepalive=2)  # the gateway waits 1.5 x 2 = 3 s
        connected = time.time()  # the CONNECT was the last packet read
        assert m.connack == 0
        m.c.loop_stop()  # stops sending (no PINGREQ); the socket stays open
        time.sleep(max(0.0, connected + 2.0 - time.time()))
        assert not bodies(consumer, body), "the will came before 1.5 x keep alive"
        assert wait_for(lambda: bodies(consumer, body), 10), "no will after the keep-alive timeout"
        assert time.time() - connected >= 2.5
        assert len(bodies(consumer, body)) == 1
        OPEN.remove(m)
        m.c.socket().close()
    finally:
        consumer.stop()


@pytest.mark.parametrize("with_properties", [False, True])
def test_v5_disconnect_with_will_message_publishes_it(env, with_properties):
    """DISCONNECT 0x04 alone (remaining length 1: mochi 2.7.9 does not read
    that code; gateway/mqtt/disconnect.go) and with a property."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    from paho.mqtt.reasoncodes import ReasonCode
    consumer = Consumer(env, "q1")
    try:
        body = payload("0x04")
        m = will_client(env, "q1", body)
        props = None
        if with_properties:
            props = Properties(PacketTypes.DISCONNECT)
            props.ReasonString = "going, send my will"
        m.c.disconnect(reasoncode=ReasonCode(PacketTypes.DISCONNECT, identifier=0x04), properties=props)
        assert wait_for(lambda: bodies(consumer, body), 10), "no will after DISCONNECT 0x04"
        time.sleep(1.0)
        assert len(bodies(consumer, body)) == 1
        m.c.loop_stop()
        OPEN.remove(m)
    finally:
        consumer.stop()


@pytest.mark.parametrize("version", [5, 3])
def test_normal_disconnect_publishes_no_will(env, version):
    consumer = Consumer(env, "q1")
    try:
        body = payload("normal%d" % version)
        m = will_client(env, "q1", body, version=version)
        assert m.connack == 0
        m.close()
        OPEN.remove(m)
        assert wait_none(consumer, body, 3.0), "a normal DISCONNECT published the will"
    finally:
        consumer.stop()


def test_will_delay_is_honoured(env):
    consumer = Consumer(env, "q1")
    try:
        body = payload("delay")
        m = will_client(env, "q1", body, delay=3)
        assert m.connack == 0
        drop(m)
        started = time.time()
        assert wait_none(consumer, body, 2.0), "the will came before its delay"
        assert wait_for(lambda: bodies(consumer, body), 10), "no will after its delay"
        assert time.time() - started >= 2.5
        assert wait_none(consumer, body + b"-never", 1.0) and len(bodies(consumer, body)) == 1
        assert bodies(consumer, body)[0].annotations[mapping.ANNOTATION_WILL_DELAY] == 3  # mapping.will_to_amqp
    finally:
        consumer.stop()


def test_reconnect_within_the_will_delay_cancels_it(env):
    consumer = Consumer(env, "q1")
    try:
        body = payload("cancel")
        m = will_client(env, "q1", body, delay=3, client_id="dev-cancel")
        drop(m)
        time.sleep(1.0)
        again = Mqtt(env, "alice", "secret-a", client_id="dev-cancel")
        assert again.connack == 0
        assert wait_none(consumer, body, 4.0), "the will came although the client reconnected within its delay"
        again.close()
        assert wait_none(consumer, body, 1.0)
    finally:
        consumer.stop()


def test_another_users_connection_does_not_cancel_a_delayed_will(env):
    consumer = Consumer(env, "q1")
    try:
        body = payload("otheruser")
        m = will_client(env, "q1", body, delay=2, client_id="dev-other")
        drop(m)
        other = Mqtt(env, "bob", "bob-pw", client_id="dev-other")
        assert other.connack == 0
        assert wait_for(lambda: bodies(consumer, body), 10), "bob's connection cancelled alice's will"
        other.close()
    finally:
        consumer.stop()


@pytest.mark.parametrize("version", [5, 3])
def test_takeover_publishes_the_old_connections_will_exactly_once(env, version):
    """MQTT 3.1.1 3.1.4-2 / 5.0 3.1.4-3: the server closes the existing
    connection; it did not send DISCONNECT, so its will is published (5.0:
    "If the existing Client has a Will Message, that Will Message is
    published"). paho would reconnect and take the session back: its
    reconnect delay is set beyond the test."""
    consumer = Consumer(env, "q1")
    try:
        body = payload("takeover%d" % version)
        old = will_client(env, "q1", body, version=version, client_id="dev-take-%d" % version)
        assert old.connack == 0
        old.c.reconnect_delay_set(60, 120)
        new = Mqtt(env, "alice", "secret-a", version=version, client_id="dev-take-%d" % version)
        assert new.connack == 0
        assert wait_for(lambda: bodies(consumer, body), 10), "no will on takeover"
        time.sleep(2.0)
        assert len(bodies(consumer, body)) == 1, "the will came %d times" % len(bodies(consumer, body))
        assert new.connected
        new.close()
        old.c.loop_stop()
    finally:
        consumer.stop()


def test_takeover_within_the_will_delay_publishes_nothing(env):
    consumer = Consumer(env, "q1")
    try:
        body = payload("takedelay")
        old = will_client(env, "q1", body, delay=2, client_id="dev-take-delay")
        old.c.reconnect_delay_set(60, 120)
        new = Mqtt(env, "alice", "secret-a", client_id="dev-take-delay")
        assert new.connack == 0
        assert wait_none(consumer, body, 4.0), "the will came although the session was taken over within its delay"
        new.close()
        old.c.loop_stop()
    finally:
        consumer.stop()


@pytest.mark.parametrize("topic", ["q2", "q3", "$SYS/x"])
def test_will_without_send_permission_or_not_an_address_refuses_connect(env, topic):
    # carol may send to q1 only; q3 is not in the gateway's table (yet); $SYS/ is reserved
    m = will_client(env, topic, b"x", user="carol", password="carol-pw")
    assert m.connack is not None and m.connack.value == 0x87, m.connack
    m.c.loop_stop()
    OPEN.remove(m)
    ok = will_client(env, "q1", b"x", user="carol", password="carol-pw")
    assert ok.connack == 0, "carol's will on q1 (send_q1) was refused"
    log = open(env["gateway_log"]).read()
    assert "connect refused: will" in log


@pytest.mark.parametrize("topic", ["q2", "q3"])
def test_will_refusal_in_311_is_return_code_5(env, topic):
    out = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(env["port"]), "-u", "carol", "-P", "carol-pw",
                          "-V", "mqttv311", "--cafile", env["ca"], "--will-topic", topic, "--will-payload", "x",
                          "-t", "q1", "-m", "x"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=20, check=False)
    assert out.returncode != 0 and "not authorised" in out.stdout.lower(), out.stdout  # CONNACK return code 5
