# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MQTT <-> the addresses and AMQP messages of a standard space (issue 21,
docs/mqtt-design.md). Pure functions; the one implementation of the rules:
the modules use them when they converge a space, and the gateway reads the
table they write (``gateway_table``), it does not re-implement them.

Rules:

* A topic is the address of the same name (EnMasse's rule); the space's
  router listener adds ``<space>/``, so no topic leaves the tenant. A topic
  must be a valid address of a standard space (model.names) and not one of
  the names the router or the gateway reserve (``$...``, ``_topo/``,
  ``_local/``, ``_edge/``, ``amqp:``). Empty levels (``a//b``, ``/a``) are
  allowed, as in MQTT: they are distinct names.
* Wildcards only in filters: ``+`` a whole level, ``#`` a whole level and the
  last one. A filter starting with a wildcard does not match ``$`` topics.
* QoS 0 -> pre-settled, not durable; QoS 1 and 2 -> unsettled, durable; the
  QoS and the retain flag travel as message annotations so that the other
  side (another gateway, an AMQP client) can see them. A message from AMQP
  is delivered with min(its QoS, the subscription's); without the
  annotation its QoS is 1 when durable, else 0.
* QoS 2 from MQTT: acknowledged (PUBREC) only after the router accepted the
  message; its packet id is kept in the session until the client's PUBREL,
  and a PUBLISH resent with a kept id is not forwarded again. QoS 2 to MQTT:
  the AMQP delivery is accepted at the client's PUBREC. (The gateway,
  gateway/mqtt/qos2.go.)
* A session is persistent with MQTT 3.1.1 ``clean session`` off, with MQTT 5
  when the session expiry interval is not 0; it lives at most
  ``max_session_expiry`` seconds. A persistent session keeps its
  subscriptions and its unacknowledged QoS 1 / 2 messages while the client
  is away; a connection of the same client id and user with clean start off
  takes it over, one of another user is refused. (The gateway,
  gateway/mqtt/session.go; within one gateway instance so far.)
* Retained: an MQTT PUBLISH with retain=1 is stored (last value per topic)
  by the gateway before it is forwarded, and the forwarded message carries
  ``x-opt-mqtt-retain: true`` and ``x-opt-mqtt-stored: true`` (stored
  already). An AMQP client makes its message retained with the annotation
  ``x-opt-mqtt-retain: true`` on a message to a ``multicast`` or ``topic``
  address (``RETAIN_FROM_AMQP_TYPES``: where every receiver gets a copy, so
  the gateways can take theirs; on an anycast or queue address a message
  has one receiver and the gateway would take it from the application):
  every gateway instance of the space receives from those addresses
  (``gateway_table``'s ``retain_from_amqp``) and stores each such message
  without ``x-opt-mqtt-stored``, in the order it receives them; an empty
  body clears the topic.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ..model import names

TOPIC_MAX_BYTES = 65535  # MQTT's UTF-8 string limit; the address limit (255) is stricter
RESERVED_PREFIXES = ("$", "_topo/", "_local/", "_edge/", "amqp:")
ANNOTATION_QOS = "x-opt-mqtt-qos"
ANNOTATION_RETAIN = "x-opt-mqtt-retain"
ANNOTATION_WILL_DELAY = "x-opt-mqtt-will-delay"
ANNOTATION_STORED = "x-opt-mqtt-stored"
# the address types whose messages an AMQP client can make retained (every
# receiver gets a copy: the gateways receive theirs beside the applications)
RETAIN_FROM_AMQP_TYPES = ("multicast", "topic")
NO_EXPIRY = 0xFFFFFFFF  # MQTT 5: the session never expires


def _fmt(value):
    return repr(value)


def _common_errors(value, field, what):
    if not isinstance(value, str) or value == "":
        return ["%s: %s is required: an MQTT %s is a non-empty string" % (field, _fmt(value), what)]
    errs = []
    if "\x00" in value:
        errs.append("%s: %s must not contain U+0000 (MQTT 1.5.4)" % (field, _fmt(value)))
    if len(value.encode("utf-8", "surrogatepass")) > TOPIC_MAX_BYTES:
        errs.append("%s: an MQTT %s is at most %d bytes" % (field, what, TOPIC_MAX_BYTES))
    return errs


def topic_name_errors(topic, field="topic"):
    """Every reason ``topic`` cannot be published to in a standard space."""
    errs = _common_errors(topic, field, "topic name")
    if not isinstance(topic, str) or topic == "":
        return errs
    if "+" in topic or "#" in topic:
        errs.append("%s: %s must not contain '+' or '#': wildcards are for subscriptions only (MQTT 4.7.1)"
                    % (field, _fmt(topic)))
    errs.extend(_reserved_errors(topic, field))
    if not errs:
        errs.extend(names.address_name_errors(topic, field))
        errs.extend(names.router_policy_name_errors(topic, field))
    return errs


def _reserved_errors(value, field):
    for prefix in RESERVED_PREFIXES:
        if value.startswith(prefix):
            return ["%s: %s must not start with %r (reserved for the routers and the gateway; it would "
                    "reach no address of the space)" % (field, _fmt(value), prefix)]
    return []


def topic_filter_errors(topic_filter, field="filter"):
    """Every reason ``topic_filter`` cannot be subscribed to."""
    errs = _common_errors(topic_filter, field, "topic filter")
    if not isinstance(topic_filter, str) or topic_filter == "":
        return errs
    if topic_filter.startswith("$share/"):
        return errs + ["%s: %s: shared subscriptions ($share/) are not supported" % (field, _fmt(topic_filter))]
    errs.extend(_reserved_errors(topic_filter, field))
    levels = topic_filter.split("/")
    for i, level in enumerate(levels):
        if "#" in level and (level != "#" or i != len(levels) - 1):
            errs.append("%s: %s: '#' must be a whole level and the last one (MQTT 4.7.1.2)"
                        % (field, _fmt(topic_filter)))
            break
    if any("+" in level and level != "+" for level in levels):
        errs.append("%s: %s: '+' must be a whole level (MQTT 4.7.1.3)" % (field, _fmt(topic_filter)))
    return errs


def filter_matches(topic_filter, topic):
    """True when ``topic`` matches ``topic_filter`` (both assumed valid)."""
    if topic.startswith("$") and topic_filter[:1] in ("+", "#"):
        return False  # MQTT 4.7.2
    want, have = topic_filter.split("/"), topic.split("/")
    for i, level in enumerate(want):
        if level == "#":
            return True  # "a/#" also matches "a" (MQTT 4.7.1.2)
        if i >= len(have) or (level != "+" and level != have[i]):
            return False
    return len(want) == len(have)


def topic_to_address(topic):
    """The address of ``topic`` inside the space, or ValueError naming why not."""
    errs = topic_name_errors(topic)
    if errs:
        raise ValueError("; ".join(errs))
    return topic


def address_to_topic(address):
    """The MQTT topic of an address, or None when MQTT cannot name it (a
    subscription ``T::N``, a reserved or a wildcard name)."""
    if not isinstance(address, str) or "::" in address or topic_name_errors(address):
        return None
    return address


def reachable_addresses(topic_filter, addresses):
    """The declared ``addresses`` a valid filter receives from, sorted."""
    return sorted(a for a in addresses if address_to_topic(a) is not None and filter_matches(topic_filter, a))


def publish_to_amqp(topic, qos, retain=False):
    """How a PUBLISH (or a will) travels over AMQP: address, settlement,
    header and annotations."""
    if qos not in (0, 1, 2):
        raise ValueError("qos: %s must be 0, 1 or 2" % _fmt(qos))
    annotations = {ANNOTATION_QOS: qos}
    if retain:
        annotations[ANNOTATION_RETAIN] = True
    return {"address": topic_to_address(topic), "settled": qos == 0, "durable": qos > 0,
            "annotations": annotations}


def will_to_amqp(topic, qos, retain=False, delay=0):
    """A will is a PUBLISH made later; a will delay (MQTT 5) travels along."""
    message = publish_to_amqp(topic, qos, retain)
    if delay:
        message["annotations"][ANNOTATION_WILL_DELAY] = int(delay)
    return message


def amqp_to_publish(address, durable, annotations, subscription_qos, retained_on_subscribe=False):
    """(topic, qos, retain) of an AMQP message delivered to a subscriber.
    The retain flag is set only on a retained message sent because the
    subscription is new (MQTT 3.3.1.3)."""
    topic = address_to_topic(address)
    if topic is None:
        raise ValueError("address: %s has no MQTT topic" % _fmt(address))
    annotations = annotations or {}
    qos = annotations.get(ANNOTATION_QOS)
    if qos not in (0, 1, 2):
        qos = 1 if durable else 0
    return topic, min(qos, subscription_qos), bool(retained_on_subscribe and annotations.get(ANNOTATION_RETAIN))


def session(protocol_version, clean, expiry_interval=None, max_session_expiry=86400):
    """What a CONNECT asks for: ``discard`` the stored session first,
    ``persistent`` after the connection, ``expiry`` seconds (None: ends with
    the connection)."""
    if protocol_version == 5:
        expiry = expiry_interval or 0
        if expiry == NO_EXPIRY:
            expiry = max_session_expiry
        expiry = min(expiry, max_session_expiry)
        return {"discard": bool(clean), "persistent": expiry > 0, "expiry": expiry or None}
    if protocol_version in (3, 4):
        return {"discard": bool(clean), "persistent": not clean, "expiry": None if clean else max_session_expiry}
    raise ValueError("protocol_version: %s is not MQTT 3.1 (3), 3.1.1 (4) or 5" % _fmt(protocol_version))


def gateway_table(space, addresses):
    """The per-space table the gateway reads: every declared address MQTT
    can name, with its type, and the reserved prefixes. ``addresses``: a
    mapping address -> type; ``retain_from_amqp``: the addresses the
    gateway receives from to store the retained messages of AMQP clients,
    ``retain_from_amqp_addresses``)."""
    reachable = {a: t for a, t in addresses.items() if address_to_topic(a) is not None}
    return {"space": space, "addresses": dict(sorted(reachable.items())),
            "reserved_prefixes": list(RESERVED_PREFIXES), "address_max_length": names.ADDRESS_MAX,
            "retain_from_amqp": retain_from_amqp_addresses(reachable)}


def retain_from_amqp_addresses(addresses):
    """The addresses (of a mapping address -> type) whose AMQP messages the
    gateways store when they are marked retained, sorted: those of a type in
    ``RETAIN_FROM_AMQP_TYPES`` that MQTT can name."""
    return sorted(a for a, t in addresses.items() if t in RETAIN_FROM_AMQP_TYPES and address_to_topic(a) is not None)
