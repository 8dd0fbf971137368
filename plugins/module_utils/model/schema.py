# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metrics schema: the record layout of the Parquet store.

Defined once: the collector writes it (``metrics.store``), the generator of
synthetic metrics and the Spark capacity job read it from here. The layout is
documented in ``docs/metrics-schema.md``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


INFRA_SPACE = "_infra"
ADDRESSES = "addresses"
NODES = "nodes"
BROKER = "broker"
ROUTER = "router"

# (name, type); "timestamp" is microseconds, UTC. Every field is nullable: a
# counter a node kind does not have (a router has no messages_added, a broker
# no deliveries_ingress) is null, not 0.
SCHEMAS = {
    ADDRESSES: (
        ("ts", "timestamp"),
        ("infra", "string"),
        ("address_space", "string"),
        ("address", "string"),
        ("address_type", "string"),
        ("plan", "string"),
        ("node", "string"),
        ("node_kind", "string"),
        ("messages_added", "long"),
        ("messages_acknowledged", "long"),
        ("message_count", "long"),
        ("consumer_count", "int"),
        ("persistent_size", "long"),
        ("address_size", "long"),
        ("deliveries_ingress", "long"),
        ("deliveries_egress", "long"),
        ("links", "int"),
    ),
    NODES: (
        ("ts", "timestamp"),
        ("infra", "string"),
        ("address_space", "string"),
        ("node", "string"),
        ("node_kind", "string"),
        ("memory_used", "long"),
        ("memory_max", "long"),
        ("disk_used", "long"),
        ("disk_max", "long"),
        ("connections", "int"),
        ("links", "int"),
        ("uptime_ms", "long"),
    ),
}

ADDRESS_TYPES = ("queue", "topic", "subscription", "anycast", "multicast", "deadletter")


def field_names(kind):
    """The column names of ``kind``, in order."""
    return [n for n, unused in SCHEMAS[kind]]


def row(kind, **values):
    """A row with every field of ``kind`` (missing ones None); unknown keys
    are a programming error."""
    names = field_names(kind)
    unknown = set(values) - set(names)
    if unknown:
        raise KeyError("not in the %s schema: %s" % (kind, ", ".join(sorted(unknown))))
    return dict((n, values.get(n)) for n in names)


def to_int(v):
    """A management number (Jolokia JSON, AMQP) as an int; None and
    non-numbers are None (a missing counter is null, not 0)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
