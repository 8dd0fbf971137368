# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sampling an ActiveMQ Artemis broker for capacity planning.

One Jolokia bulk round trip per broker (MBean wildcard reads of every queue,
every address and the broker itself), turned into rows of the metrics schema
(``model.schema``). No Ansible imports: the scheduled collector runs it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json
import os

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as _client
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import INTERNAL_PREFIXES
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import is_wildcard_address
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import DEFAULT_TIMEOUT
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import ADDRESS_TYPES, ADDRESSES, BROKER, INFRA_SPACE, NODES, row, to_int


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def address_info_from_ledger(path):
    """{address: {"type": ..., "plan": ...}} from the owned-address ledger
    written by the address modules; {} when there is none or it is unreadable
    (metadata is a nicety: sampling never fails because of it).

    Accepts the ledger as ``{"addresses": {name: {...}}}``, ``{"addresses":
    [{"address": name, ...}]}``, ``{name: {...}}`` or a plain list."""
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError, ValueError):
        return {}
    if isinstance(data, dict) and "addresses" in data:
        data = data["addresses"]
    out = {}
    if isinstance(data, dict):
        items = [dict(v, address=k) if isinstance(v, dict) else {"address": k} for k, v in data.items()]
    elif isinstance(data, list):
        items = [v if isinstance(v, dict) else {"address": v} for v in data]
    else:
        return {}
    for item in items:
        name = item.get("address") or item.get("name")
        if not isinstance(name, str):
            continue
        out[name] = {"type": item.get("type"), "plan": item.get("plan")}
    return out


# ------------------------------------------------------------------- Artemis
QUEUE_ATTRIBUTES = ("Name", "Address", "RoutingType", "Temporary", "MessagesAdded",
                    "MessagesAcknowledged", "MessageCount", "ConsumerCount", "PersistentSize")
ADDRESS_ATTRIBUTES = ("Address", "RoutingTypes", "Internal", "Temporary", "AddressSize",
                      "RoutedMessageCount", "UnRoutedMessageCount")
BROKER_ATTRIBUTES = ("AddressMemoryUsage", "GlobalMaxSize", "DiskStoreUsage", "MaxDiskUsage",
                     "ConnectionCount", "TotalConsumerCount", "UptimeMillis")
# Artemis' own addresses: management replies, notifications, MQTT session
# store, internal (mirror, federation) addresses.
DEFAULT_DEADLETTER = ("DLQ", "ExpiryQueue")


def artemis_requests(broker_name):
    """The Jolokia bulk request for one broker sample: queues, addresses,
    broker, and the instance directory (to size the journal's filesystem)."""
    read = _client.JolokiaClient.read_request
    inst = read("java.lang:type=Runtime", "SystemProperties")
    inst["path"] = "artemis.instance"
    return [read(_client.all_queues_pattern(broker_name), list(QUEUE_ATTRIBUTES)),
            read(_client.all_addresses_pattern(broker_name), list(ADDRESS_ATTRIBUTES)),
            read(_client.broker_mbean(broker_name), list(BROKER_ATTRIBUTES)),
            inst]


def _internal(name):
    """The broker's own addresses and subscribers' wildcard patterns."""
    return any(name.startswith(p) for p in INTERNAL_PREFIXES) or is_wildcard_address(name)


def _wildcard_value(reply):
    """A wildcard read answers {mbean: {attr: value}}; "no MBean matches" is
    an empty broker, not an error."""
    value, err = reply
    if err is not None:
        if err.status == 404:
            return {}
        raise err
    return value or {}


def _broker_address_type(address, routing, info, is_topic):
    known = (info.get(address) or {}).get("type")
    if known in ADDRESS_TYPES:
        return known
    if is_topic:
        return "topic"
    if routing == "MULTICAST":
        return "subscription"
    if address in DEFAULT_DEADLETTER:
        return "deadletter"
    return "queue"


def filesystem_bytes(path):
    """Total bytes of the filesystem holding ``path`` (None when ``path`` is
    not on this host, e.g. the module runs elsewhere than the broker)."""
    if not path:
        return None
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return st.f_blocks * st.f_frsize


def _user_addresses(addresses):
    """{address: attributes} of the addresses of a wildcard read that are
    the users': not internal, not temporary, not the broker's own."""
    by_address = {}
    for attrs in addresses.values():
        name = attrs.get("Address")
        if not name or attrs.get("Internal") or attrs.get("Temporary") or _internal(name):
            continue
        by_address[name] = attrs
    return by_address


def _queue_rows(queues, by_address, info, base):
    """One row per queue (not temporary) of a user address, sorted by (address,
    queue name)."""
    rows = []
    for attrs in sorted(queues.values(), key=lambda q: (q.get("Address") or "", q.get("Name") or "")):
        address = attrs.get("Address") or ""
        if address not in by_address or attrs.get("Temporary"):
            continue
        routing = (attrs.get("RoutingType") or "").upper()
        # queue names are unique on a broker; a subscription's model address
        # is its queue's name (clients consume from <topic>::<name>)
        row_address = attrs.get("Name") or address
        a_type = _broker_address_type(row_address, routing, info, False)
        own_address = row_address == address
        consumers = to_int(attrs.get("ConsumerCount"))
        rows.append(row(
            ADDRESSES, address=row_address, address_type=a_type,
            plan=(info.get(row_address) or {}).get("plan"),
            messages_added=to_int(attrs.get("MessagesAdded")),
            messages_acknowledged=to_int(attrs.get("MessagesAcknowledged")),
            message_count=to_int(attrs.get("MessageCount")),
            consumer_count=consumers,
            persistent_size=to_int(attrs.get("PersistentSize")),
            address_size=to_int(by_address[address].get("AddressSize")) if own_address else None,
            links=consumers, **base))
    return rows


def _topic_rows(by_address, info, base):
    """One row per multicast-only address (a topic), sorted by name."""
    rows = []
    for name in sorted(by_address):
        attrs = by_address[name]
        routing_types = [str(r).upper() for r in attrs.get("RoutingTypes") or []]
        if "MULTICAST" not in routing_types or "ANYCAST" in routing_types:
            continue
        published = (to_int(attrs.get("RoutedMessageCount")) or 0) + (to_int(attrs.get("UnRoutedMessageCount")) or 0)
        rows.append(row(
            ADDRESSES, address=name, address_type=_broker_address_type(name, "MULTICAST", info, True),
            plan=(info.get(name) or {}).get("plan"),
            messages_added=published, messages_acknowledged=0, message_count=0,
            consumer_count=0, persistent_size=0,
            address_size=to_int(attrs.get("AddressSize")), links=0, **base))
    return rows


def _disk(broker, disk_total):
    """(disk_used, disk_max) in bytes from DiskStoreUsage and MaxDiskUsage
    (fraction and % of the journal's filesystem of ``disk_total`` bytes);
    (None, None) when the filesystem's size is not known."""
    usage = broker.get("DiskStoreUsage")
    max_pct = to_int(broker.get("MaxDiskUsage"))
    disk_used = disk_max = None
    if disk_total:
        if isinstance(usage, (int, float)) and usage >= 0:
            disk_used = int(usage * disk_total)
        disk_max = int(disk_total * (max_pct if max_pct and 0 < max_pct <= 100 else 100) / 100.0)
    return disk_used, disk_max


def parse_artemis(replies, conn, infra, ts, address_info=None, disk_total=None):
    """Rows from the replies to ``artemis_requests`` (a list of (value, error)
    as returned by ``JolokiaClient.bulk(raise_errors=False)``).

    ``conn``: the connection dict (address_space, type, broker_name, plan).
    Returns (address_rows, node_rows).

    * one row per queue: queue, deadletter, subscription (address = the
      queue's name, which is the model address; clients use ``<topic>::<name>``);
    * one row per topic (multicast address): messages_added is what was
      published to it (routed + unrouted), the stored side is in its
      subscriptions' rows, so message_count / persistent_size / consumers /
      acknowledgements are 0 on the topic row (nothing is counted twice);
    * address_size is Artemis' AddressSize of the row's own address (the
      topic row carries it for its subscriptions, which report null);
    * one node row: AddressMemoryUsage / GlobalMaxSize, disk used and the
      disk limit (DiskStoreUsage and MaxDiskUsage % of the journal's
      filesystem, when the broker's instance directory is on this host),
      connections, consumers as links, uptime.
    """
    info = address_info or {}
    space = conn["address_space"]
    node = conn.get("broker_name") or space
    node_space = space if (conn.get("type") or "brokered") == "brokered" else INFRA_SPACE
    queues = _wildcard_value(replies[0])
    addresses = _wildcard_value(replies[1])
    broker, err = replies[2]
    if err is not None:
        raise err
    broker = broker or {}
    instance_dir = replies[3][0] if len(replies) > 3 and replies[3][1] is None else None

    base = dict(ts=ts, infra=infra, address_space=space, node=node, node_kind=BROKER)
    by_address = _user_addresses(addresses)
    rows = _queue_rows(queues, by_address, info, base) + _topic_rows(by_address, info, base)

    if disk_total is None:
        disk_total = filesystem_bytes(instance_dir)
    disk_used, disk_max = _disk(broker, disk_total)
    nodes = [row(NODES, ts=ts, infra=infra, address_space=node_space, node=node, node_kind=BROKER,
                 memory_used=to_int(broker.get("AddressMemoryUsage")),
                 memory_max=to_int(broker.get("GlobalMaxSize")),
                 disk_used=disk_used, disk_max=disk_max,
                 connections=to_int(broker.get("ConnectionCount")),
                 links=to_int(broker.get("TotalConsumerCount")),
                 uptime_ms=to_int(broker.get("UptimeMillis")))]
    return rows, nodes


def sample_artemis(conn, infra, client=None, clock=utcnow):
    """Sample one broker (one Jolokia round trip). ``conn`` is a connection
    dict (see ``docs/metrics-collection.md``)."""
    if client is None:
        client = _client.client_for(conn, DEFAULT_TIMEOUT)
    replies = client.bulk(artemis_requests(conn.get("broker_name") or conn["address_space"]),
                          raise_errors=False)
    ts = clock()
    return parse_artemis(replies, conn, infra, ts,
                         address_info=address_info_from_ledger(conn.get("ledger_path")))
