"""Hierarchical topics, MQTT and redelivery on a brokered space, against the
broker.xml roles/broker ships (the ``artemis`` fixture renders it):

* EnMasse's wildcard syntax: '/' between words, '#' any words, '+' one word;
  AMQP and MQTT subscribers on wildcards get the messages of every declared
  topic they match, while undeclared names stay refused (no auto-creation of
  tenant addresses; an MQTT SUBSCRIBE gets failure code 0x80 for such a topic
  and keeps its connection and its other topics);
* MQTT QoS 2 and retained messages (Artemis' internal $sys.mqtt.* addresses);
* EnMasse's redelivery defaults: unlimited delivery attempts, no catch-all
  dead letter address.
"""

import threading
import uuid

import pytest
from proton import Timeout

import amqp_checks
import helpers

pytestmark = pytest.mark.integration

mqtt = pytest.importorskip("paho.mqtt.client", reason="paho-mqtt is not installed: pip install -r requirements-test.txt")
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402

TIMEOUT = 20.0


def topic(address, **fields):
    return dict({"address": address, "type": "topic", "plan": "brokered-topic"}, **fields)


EU_ORDERS, US_ORDERS, EU_BILLING = "events/eu/orders", "events/us/orders", "events/eu/billing"
TOPICS = [topic(EU_ORDERS), topic(US_ORDERS), topic(EU_BILLING)]


def _receive_all(receiver, idle=1.5):
    """Ids of every message arriving until none came for ``idle`` seconds."""
    got = []
    while True:
        try:
            msg = receiver.receive(timeout=idle)
        except Timeout:
            return got
        receiver.accept()
        got.append(msg.id)


def _refused(cfg, kind, address):
    """The AMQP error condition when attaching a sender/receiver to ``address``
    (None when the broker accepted it)."""
    with amqp_checks.connection(cfg) as conn:
        try:
            if kind == "send":
                amqp_checks.send(conn, address, 1)
            else:
                conn.create_receiver(address).close()
        except Exception as e:  # noqa: BLE001 - proton raises LinkDetached / ConnectionException
            return str(e)
    return None


# ---------------------------------------------------------------- AMQP wildcards

def test_amqp_wildcard_receivers_get_exactly_the_matching_topics(space):
    space.converge(TOPICS)
    cfg = space.amqp_config()
    with amqp_checks.connection(cfg) as conn:
        patterns = ("events/#", "events/+/orders", "events/eu/#")
        receivers = dict((p, conn.create_receiver(p, credit=100)) for p in patterns)
        sent = {}
        for address in (EU_ORDERS, US_ORDERS, EU_BILLING):
            sent[address] = amqp_checks.send(conn, address, 2)
        got = dict((p, sorted(_receive_all(r))) for p, r in receivers.items())
    assert got["events/#"] == sorted(sent[EU_ORDERS] + sent[US_ORDERS] + sent[EU_BILLING])
    assert got["events/+/orders"] == sorted(sent[EU_ORDERS] + sent[US_ORDERS])
    assert got["events/eu/#"] == sorted(sent[EU_ORDERS] + sent[EU_BILLING])


def test_undeclared_names_stay_refused_and_nothing_is_created(space):
    """Auto-creation is open only to names with a whole '#' or '+' word: a
    sub-topic of a declared topic must itself be declared (EnMasse's model),
    and a plain or mistyped name creates nothing, whether sent to or received
    from."""
    space.converge([topic("events"), helpers.queue("orders")])
    broker, cfg = space.broker, space.amqp_config()
    before = broker.address_names()
    for name in ("nope", "events/eu/orders", "orders/extra", "a+b", "x#"):
        for kind in ("send", "receive"):
            error = _refused(cfg, kind, name)
            # refused by permission: nobody may create a tenant address (docs/broker-role.md)
            assert error and "does not have permission='CREATE_ADDRESS' on address %s" % name in error, (
                kind, name, error)
    assert broker.address_names() == before
    # the declared topic itself is matched by events/# (zero or more words)
    with amqp_checks.connection(cfg) as conn:
        rcv = conn.create_receiver("events/#", credit=10)
        ids = amqp_checks.send(conn, "events", 1)
        assert _receive_all(rcv) == ids


def test_per_address_settings_apply_to_their_address_only(space):
    """The module's per-address settings use the address as match: under the
    '/' syntax they must not leak to siblings or children."""
    space.converge([
        {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"},
        helpers.queue("orders/eu", deadletter="dlq", message_ttl={"maximum": 5000},
                      message_redelivery={"maximum_delivery_attempts": 3}),
        helpers.queue("orders/us"),
        helpers.queue("orders/eu/late"),
    ])
    eu = space.broker.address_settings("orders/eu")
    assert (eu["deadLetterAddress"], eu["maxExpiryDelay"], eu["maxDeliveryAttempts"]) == ("dlq", 5000, 3)
    for other in ("orders/us", "orders/eu/late"):
        s = space.broker.address_settings(other)
        assert (s.get("deadLetterAddress"), s.get("maxExpiryDelay", -1), s["maxDeliveryAttempts"]) == (None, -1, -1), (other, s)


# ------------------------------------------------------------------- redelivery

def _fail_n_times(conn, address, mid, n):
    """Receive ``mid`` and settle it delivery-failed ``n`` times; returns how
    many times it came."""
    rcv = conn.create_receiver(address, credit=1)
    deliveries = 0
    try:
        while deliveries < n:
            try:
                msg = rcv.receive(timeout=TIMEOUT)
            except Timeout:
                break
            assert msg.id == mid
            deliveries += 1
            amqp_checks._fail_delivery(rcv)
    finally:
        rcv.close()
    return deliveries


def test_redelivery_is_unlimited_without_a_deadletter(space):
    """EnMasse's default: a message that keeps failing is redelivered, not
    moved to a catch-all dead letter queue (the role's old default moved it to
    DLQ after 10 attempts)."""
    space.converge([helpers.queue("work")])
    broker = space.broker
    with amqp_checks.connection(space.amqp_config()) as conn:
        [mid] = amqp_checks.send(conn, "work", 1)
        assert _fail_n_times(conn, "work", mid, 15) == 15
        rcv = conn.create_receiver("work", credit=1)
        assert amqp_checks.receive_ids(rcv, [mid], TIMEOUT) == [mid]
    assert "DLQ" not in broker.address_names()


def test_deadletter_after_the_addresses_maximum_delivery_attempts(space):
    space.converge([{"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"},
                    helpers.queue("retry", deadletter="dlq", message_redelivery={"maximum_delivery_attempts": 3})])
    with amqp_checks.connection(space.amqp_config()) as conn:
        [mid] = amqp_checks.send(conn, "retry", 1)
        assert _fail_n_times(conn, "retry", mid, 3) == 3
        dlq = conn.create_receiver("dlq", credit=1)
        assert amqp_checks.receive_ids(dlq, [mid], TIMEOUT) == [mid]
        assert amqp_checks.drain(conn, "retry") == []


# ------------------------------------------------------------------------- MQTT

class Mqtt(object):
    """A paho MQTT 3.1.1 client on the broker's MQTT acceptor, with its
    CONNACK, SUBACK codes, PUBACKs, messages and disconnection recorded."""

    def __init__(self, broker, client_id=None, password=None):
        self.client_id = client_id or "c-" + uuid.uuid4().hex[:8]
        self.messages, self.subacks = [], []
        self.connack = None
        self.connected, self.disconnected = threading.Event(), threading.Event()
        self.subscribed, self.lock = threading.Event(), threading.Lock()
        self.arrived = threading.Condition(self.lock)
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=self.client_id, protocol=mqtt.MQTTv311)
        c.username_pw_set(broker.messaging_user, broker.messaging_password if password is None else password)
        c.on_connect = self._on_connect
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        c.on_disconnect = self._on_disconnect
        self.client = c
        c.connect("127.0.0.1", broker.mqtt_port, 30)
        c.loop_start()
        self.connected.wait(TIMEOUT)

    def _on_connect(self, client, userdata, flags, reason, props):
        self.connack = reason
        self.connected.set()

    def _on_subscribe(self, client, userdata, mid, reasons, props):
        self.subacks.append([r.value for r in reasons])
        self.subscribed.set()

    def _on_message(self, client, userdata, msg):
        with self.arrived:
            self.messages.append((msg.topic, msg.payload.decode(), msg.qos, msg.retain))
            self.arrived.notify_all()

    def _on_disconnect(self, client, userdata, flags, reason, props):
        self.disconnected.set()
        self.connected.set()

    @property
    def ok(self):
        return self.connack is not None and not self.connack.is_failure and not self.disconnected.is_set()

    def subscribe(self, topic_filter, qos=1):
        """The SUBACK codes of one SUBSCRIBE; ``topic_filter`` may be a list
        of (filter, qos) pairs (all in the same packet)."""
        self.subscribed.clear()
        if isinstance(topic_filter, list):
            self.client.subscribe(topic_filter)
        else:
            self.client.subscribe(topic_filter, qos=qos)
        self.subscribed.wait(TIMEOUT)
        return self.subacks[-1] if self.subscribed.is_set() else None

    def publish(self, topic_name, payload, qos=1, retain=False):
        info = self.client.publish(topic_name, payload, qos=qos, retain=retain)
        info.wait_for_publish(TIMEOUT)
        return info.is_published()

    def wait_for(self, count):
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.messages) >= count, TIMEOUT)
            return list(self.messages)

    def settle(self, idle=1.5):
        """The messages once none arrived for ``idle`` seconds."""
        with self.arrived:
            n = -1
            while n != len(self.messages):
                n = len(self.messages)
                self.arrived.wait(idle)
            return list(self.messages)

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def mqtt_clients(space):
    made = []

    def make(**kw):
        made.append(Mqtt(space.broker, **kw))
        return made[-1]
    yield make
    for c in made:
        c.close()


def test_mqtt_qos2_delivers_exactly_once(space, mqtt_clients):
    space.converge(TOPICS)
    sub = mqtt_clients()
    assert sub.subscribe(EU_ORDERS, qos=2) == [2]
    pub = mqtt_clients()
    assert pub.publish(EU_ORDERS, "exactly-once", qos=2)
    assert sub.settle() == [(EU_ORDERS, "exactly-once", 2, False)]
    assert sub.ok and pub.ok


def test_mqtt_retained_message_reaches_a_later_subscriber(space, mqtt_clients):
    space.converge(TOPICS)
    pub = mqtt_clients()
    assert pub.publish(US_ORDERS, "last-known", qos=1, retain=True)
    late = mqtt_clients()
    assert late.subscribe(US_ORDERS, qos=1) == [1]
    assert late.wait_for(1) == [(US_ORDERS, "last-known", 1, True)]


def test_mqtt_wildcard_subscription_gets_amqp_messages(space, mqtt_clients):
    space.converge(TOPICS)
    sub = mqtt_clients()
    assert sub.subscribe("events/+/orders", qos=1) == [1]
    with amqp_checks.connection(space.amqp_config()) as conn:
        for address in (EU_ORDERS, US_ORDERS, EU_BILLING):
            amqp_checks.send(conn, address, 1, tag=address.replace("/", "-"))
    got = sorted((t, body) for t, body, unused, unused2 in sub.settle())
    assert got == [(EU_ORDERS, "enmasse check events-eu-orders-0"),
                   (US_ORDERS, "enmasse check events-us-orders-0")]


def test_mqtt_undeclared_topics_are_not_created(space, mqtt_clients):
    """Publishing to an undeclared topic is acknowledged by Artemis but routes
    nowhere and creates nothing; subscribing to one gets the SUBACK failure
    code 0x80 and creates nothing either; both connections stay open."""
    space.converge(TOPICS)
    broker = space.broker
    before = broker.address_names()
    pub = mqtt_clients()
    assert pub.publish("undeclared/topic", "lost", qos=1)
    sub = mqtt_clients()
    assert sub.subscribe("undeclared/other", qos=1) == [0x80]
    assert not sub.disconnected.wait(1.0) and sub.ok and pub.ok
    assert broker.address_names() == before


def test_mqtt_subscribe_mixing_a_declared_and_an_undeclared_topic(space, mqtt_clients):
    """One SUBSCRIBE with a declared topic, an undeclared one and a wildcard:
    0x80 for the undeclared topic only; the connection and the other
    subscriptions are kept and get their messages."""
    space.converge(TOPICS)
    before = space.broker.address_names()
    sub = mqtt_clients()
    codes = sub.subscribe([(EU_ORDERS, 1), ("undeclared/other", 1), ("events/us/#", 0)])
    assert codes == [1, 0x80, 0], codes
    assert sub.ok, "the connection was closed"
    pub = mqtt_clients()
    for name in (EU_ORDERS, US_ORDERS, "undeclared/other"):
        assert pub.publish(name, "to " + name, qos=1)
    got = sorted((t, body) for t, body, unused, unused2 in sub.settle())
    assert got == [(EU_ORDERS, "to " + EU_ORDERS), (US_ORDERS, "to " + US_ORDERS)], got
    assert sub.ok and pub.ok
    assert [n for n in space.broker.address_names() if not n.startswith("events/us/#")] == before


def test_mqtt5_undeclared_topic_gets_not_authorized(space):
    """MQTT 5: the SUBACK reason code for an undeclared topic is 0x87 (not
    authorized), the declared topic of the same SUBSCRIBE is granted."""
    space.converge(TOPICS)
    got, done = [], threading.Event()
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="c5-" + uuid.uuid4().hex[:8], protocol=mqtt.MQTTv5)
    c.username_pw_set(space.broker.messaging_user, space.broker.messaging_password)
    c.on_subscribe = lambda client, userdata, mid, reasons, props: (got.extend(r.value for r in reasons), done.set())
    c.connect("127.0.0.1", space.broker.mqtt_port, 30)
    c.loop_start()
    try:
        c.subscribe([(EU_ORDERS, 1), ("undeclared/other", 1)])
        assert done.wait(TIMEOUT)
        assert got == [1, 0x87], got
        assert c.is_connected()
    finally:
        c.disconnect()
        c.loop_stop()


def test_mqtt_wrong_password_is_refused(space, mqtt_clients):
    bad = mqtt_clients(password="not-the-password")
    assert bad.connack is not None and bad.connack.is_failure, bad.connack
    assert bad.disconnected.wait(TIMEOUT)
