"""The MQTT mapping rules of a standard space (module_utils/mqtt/mapping.py,
docs/mqtt-design.md "One implementation of the mapping rules")."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping as m


@pytest.mark.parametrize("topic", ["orders", "events/eu/orders", "a//b", "trailing/", "ü/日本"])
def test_valid_topic_names_map_to_the_address_of_the_same_name(topic):
    assert m.topic_name_errors(topic) == []
    assert m.topic_to_address(topic) == topic
    assert m.address_to_topic(topic) == topic


@pytest.mark.parametrize("topic, rule", [
    ("", "non-empty"), (None, "non-empty"), (7, "non-empty"),
    ("a/+", "wildcards are for subscriptions only"), ("a/#", "wildcards are for subscriptions only"),
    ("a+b", "wildcards are for subscriptions only"),
    ("$SYS/broker", "reserved"), ("$mqtt/sessions", "reserved"), ("_topo/0/r/$management", "reserved"),
    ("_local/x", "reserved"), ("_edge/x", "reserved"), ("amqp:/x", "reserved"),
    ("a\x00b", "U+0000"), ("a b", "whitespace"), ("t::sub", "'::'"), ("_!x", "reserved"),
    ("x" * 256, "at most 255"), ("a,b", "','"), ("q/${user}", "${user}"), ("q*", "'*'"),
    ("/leading", "start with '/'"), ("a:/_local/x", "':/'"),
])
def test_invalid_topic_names_are_refused_with_the_rule(topic, rule):
    errs = m.topic_name_errors(topic)
    assert errs and rule in " ".join(errs), errs
    with pytest.raises(ValueError):
        m.topic_to_address(topic)
    assert m.address_to_topic(topic) is None


def test_topic_over_mqtt_byte_limit_names_the_limit():
    assert any("65535 bytes" in e for e in m.topic_name_errors("é" * 40000))


@pytest.mark.parametrize("topic_filter", ["#", "+", "a/#", "a/+/b", "+/+", "a//+", "orders"])
def test_valid_filters(topic_filter):
    assert m.topic_filter_errors(topic_filter) == []


@pytest.mark.parametrize("topic_filter, rule", [
    ("", "non-empty"), ("a/#/b", "'#' must be a whole level and the last"), ("a#", "'#' must be a whole level"),
    ("a/b+", "'+' must be a whole level"), ("+a", "'+' must be a whole level"),
    ("$SYS/#", "reserved"), ("$share/g/a", "shared subscriptions"), ("_topo/#", "reserved"),
])
def test_invalid_filters(topic_filter, rule):
    errs = m.topic_filter_errors(topic_filter)
    assert errs and rule in " ".join(errs), errs


@pytest.mark.parametrize("topic_filter, topic, expected", [
    ("a/#", "a", True), ("a/#", "a/b/c", True), ("#", "a/b", True), ("a/+", "a/b", True),
    ("a/+", "a/b/c", False), ("a/+", "a", False), ("+/+", "/x", True), ("a/b", "a/b", True), ("a/b", "a/c", False),
    ("#", "$SYS/x", False), ("+/x", "$SYS/x", False), ("$SYS/#", "$SYS/x", True), ("a//+", "a//b", True),
])
def test_filter_matching(topic_filter, topic, expected):
    assert m.filter_matches(topic_filter, topic) is expected


def test_reachable_addresses_leave_out_subscriptions_and_reserved_names():
    addresses = ["events/eu", "events/us", "events/eu/late", "events::audit", "orders", "$SYS/x"]
    assert m.reachable_addresses("events/+", addresses) == ["events/eu", "events/us"]
    assert m.reachable_addresses("#", addresses) == ["events/eu", "events/eu/late", "events/us", "orders"]


@pytest.mark.parametrize("qos, settled, durable", [(0, True, False), (1, False, True), (2, False, True)])
def test_publish_qos_to_settlement_and_durability(qos, settled, durable):
    msg = m.publish_to_amqp("orders", qos)
    assert (msg["address"], msg["settled"], msg["durable"]) == ("orders", settled, durable)
    assert msg["annotations"] == {m.ANNOTATION_QOS: qos}


def test_retain_and_will_delay_travel_as_annotations():
    assert m.publish_to_amqp("t", 1, retain=True)["annotations"][m.ANNOTATION_RETAIN] is True
    will = m.will_to_amqp("status/dev1", 1, retain=True, delay=30)
    assert will["annotations"] == {m.ANNOTATION_QOS: 1, m.ANNOTATION_RETAIN: True, m.ANNOTATION_WILL_DELAY: 30}
    assert m.ANNOTATION_WILL_DELAY not in m.will_to_amqp("status/dev1", 0)["annotations"]


@pytest.mark.parametrize("qos", [3, -1, "1", None])
def test_bad_qos_is_refused(qos):
    with pytest.raises(ValueError, match="qos"):
        m.publish_to_amqp("t", qos)


def test_publish_to_reserved_topic_is_refused():
    with pytest.raises(ValueError, match="reserved"):
        m.publish_to_amqp("$SYS/x", 0)


@pytest.mark.parametrize("durable, annotations, sub_qos, expected_qos", [
    (False, None, 2, 0), (True, None, 2, 1), (True, {m.ANNOTATION_QOS: 2}, 2, 2), (True, {m.ANNOTATION_QOS: 2}, 1, 1),
    (True, {m.ANNOTATION_QOS: 1}, 0, 0), (False, {m.ANNOTATION_QOS: 7}, 2, 0),
])
def test_amqp_to_mqtt_qos_is_the_lower_of_message_and_subscription(durable, annotations, sub_qos, expected_qos):
    assert m.amqp_to_publish("orders", durable, annotations, sub_qos) == ("orders", expected_qos, False)


def test_retain_flag_only_for_a_retained_message_sent_on_subscribe():
    retained = {m.ANNOTATION_QOS: 1, m.ANNOTATION_RETAIN: True}
    assert m.amqp_to_publish("t", True, retained, 1)[2] is False
    assert m.amqp_to_publish("t", True, retained, 1, retained_on_subscribe=True)[2] is True
    assert m.amqp_to_publish("t", True, {m.ANNOTATION_QOS: 1}, 1, retained_on_subscribe=True)[2] is False


def test_amqp_subscription_address_has_no_topic():
    with pytest.raises(ValueError, match="no MQTT topic"):
        m.amqp_to_publish("events::audit", True, None, 1)


@pytest.mark.parametrize("version, clean, expiry, expected", [
    (4, True, None, {"discard": True, "persistent": False, "expiry": None}),
    (4, False, None, {"discard": False, "persistent": True, "expiry": 86400}),
    (3, False, None, {"discard": False, "persistent": True, "expiry": 86400}),
    (5, True, 0, {"discard": True, "persistent": False, "expiry": None}),
    (5, True, 60, {"discard": True, "persistent": True, "expiry": 60}),
    (5, False, 60, {"discard": False, "persistent": True, "expiry": 60}),
    (5, False, m.NO_EXPIRY, {"discard": False, "persistent": True, "expiry": 86400}),
    (5, False, 10 ** 6, {"discard": False, "persistent": True, "expiry": 86400}),
])
def test_session_flags(version, clean, expiry, expected):
    assert m.session(version, clean, expiry) == expected


def test_unknown_protocol_version_is_refused():
    with pytest.raises(ValueError, match="protocol_version"):
        m.session(6, True)


def test_gateway_table_lists_only_what_mqtt_can_name():
    table = m.gateway_table("s1", {"orders": "queue", "events": "topic", "events::audit": "subscription",
                                   "a b": "anycast"})
    assert table["space"] == "s1"
    assert table["addresses"] == {"events": "topic", "orders": "queue"}
    assert "$" in table["reserved_prefixes"]


def test_the_gateways_store_the_retained_messages_of_amqp_clients_on_multicast_and_topic_addresses_only():
    # every receiver of a multicast or topic address gets its own copy: the gateways take theirs; a queue's or
    # an anycast address's message has one receiver, which the gateway must not be
    table = m.gateway_table("s1", {"orders": "queue", "events": "topic", "events::audit": "subscription",
                                   "greetings": "anycast", "news": "multicast", "$x": "multicast"})
    assert table["retain_from_amqp"] == ["events", "news"]
    assert m.retain_from_amqp_addresses({}) == []
    assert m.RETAIN_FROM_AMQP_TYPES == ("multicast", "topic")
