# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live state of a brokered space's broker, read through Jolokia and
normalised to the addresses of the model.

``read_live`` costs two bulk round trips (three when some addresses have no
queue of their own); the pure functions (``queue_records``, ``live_entries``,
``live_view`` ...) work on plain dicts and are unit tested without a broker."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as _client
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import INTERNAL_PREFIXES
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import is_wildcard_address
from ansible_collections.enmasse.messaging.plugins.module_utils.model.status import (
    PHASE_ACTIVE, PHASE_CONFIGURING, PHASE_DELETED, PHASE_PENDING)
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url

ANYCAST = "ANYCAST"
MULTICAST = "MULTICAST"

# broker-internal addresses never reported as unowned addresses of a space
# live shape of each address type
SHAPE_OF_TYPE = {"queue": "queue", "deadletter": "queue", "topic": "topic",
                 "subscription": "subscription"}

# Jolokia operation signatures (the operations are overloaded)
OP_GET_SETTINGS = "getAddressSettingsAsJSON(java.lang.String)"

# read in bulk: every attribute of 10,000 queue MBeans costs ~0.5 s on the broker
# read in bulk: every attribute of 10,000 queue MBeans costs ~0.5 s on the broker
QUEUE_ATTRIBUTES = ["MessageCount", "ConsumerCount"]
BROKER_ATTRIBUTES = ["Name", "Version", "Started", "AddressNames"]
# a name no address settings match other than the catch-all ones
# a name no address settings match other than the catch-all ones
SETTINGS_PROBE = "enmasse-messaging.settings-probe"
# errors that mean "already gone" when deleting


def multicast_queues_pattern(broker_name):
    return '%s:broker=%s,component=addresses,address=*,subcomponent=queues,routing-type="multicast",queue=*' % (
        _client.ARTEMIS_DOMAIN, _client.quote_mbean_value(broker_name))


def is_internal(name):
    """The broker's own addresses, and the wildcard patterns it makes while a
    wildcard subscriber is attached: never tenant addresses."""
    return name.startswith(INTERNAL_PREFIXES) or is_wildcard_address(name)


_SIMPLE_KEY = re.compile(r'([^,=:]+)=(?:"([^"]*)"|([^,]*))')


def mbean_keys(name):
    """``jolokia.parse_mbean_keys``, with a fast path for names without
    escapes (10,000 queue MBean names are parsed on every run)."""
    if "\\" in name:
        return _client.parse_mbean_keys(name)
    return dict((k, quoted or plain) for k, quoted, plain in _SIMPLE_KEY.findall(name.partition(":")[2]))


def queue_records(counts, multicast=None):
    """Queue records from the wildcard reads of the queue MBeans.

    ``counts``: ``{mbean: {MessageCount, ConsumerCount}}`` for all queues;
    ``multicast``: ``{mbean: {MaxConsumers}}`` for the MULTICAST ones. Name,
    address and routing type come from the MBean names (cheaper than reading
    them as attributes).
    """
    max_consumers = {}
    for mbean, v in (multicast or {}).items():
        max_consumers[mbean_keys(mbean).get("queue")] = v.get("MaxConsumers")
    out = []
    for mbean, v in (counts or {}).items():
        keys = mbean_keys(mbean)
        out.append({"name": keys.get("queue"), "address": keys.get("address"),
                    "routing_type": (keys.get("routing-type") or "").upper(),
                    "message_count": int(v.get("MessageCount") or 0),
                    "consumers": int(v.get("ConsumerCount") or 0),
                    "max_consumers": max_consumers.get(keys.get("queue"))})
    return out


def without_own_queue(address_names, queues):
    """Addresses that have no ANYCAST queue of their own name: their routing
    types decide whether they are topics (read them)."""
    own = set(q["name"] for q in queues if q["name"] == q["address"] and q["routing_type"] == ANYCAST)
    return [a for a in address_names if a not in own]


def live_entries(routing, queues):
    """Normalise the live broker to the addresses of the model.

    ``routing``: ``{address: [routing types]}`` for every Artemis address
    (``None`` when not read: an address with its own ANYCAST queue);
    ``queues``: records from ``queue_records``. Returns ``{name: entry}``:
    every address, plus every MULTICAST queue whose name differs from its
    address (a subscription). An entry has ``address``, ``shape`` (queue |
    topic | subscription | address), ``complete``, ``topic``,
    ``max_consumers``, ``message_count``, ``consumers`` and ``queues``.
    """
    by_address = dict((a, {}) for a in routing)
    for q in queues:
        by_address.setdefault(q["address"], {})[q["name"]] = q
    entries = {}
    subscriptions = []
    for name, qs in by_address.items():
        rts = routing.get(name) or ()
        own = qs.get(name)
        entry = {"address": name, "topic": None, "max_consumers": None,
                 "queues": sorted(qs), "complete": True,
                 "message_count": sum(q["message_count"] for q in qs.values()),
                 "consumers": sum(q["consumers"] for q in qs.values())}
        if own is not None and own["routing_type"] == ANYCAST:
            entry["shape"] = "queue"
        elif MULTICAST in rts:
            entry["shape"] = "topic"
        elif ANYCAST in rts:
            entry["shape"] = "queue"
            entry["complete"] = False  # the address without its queue
        else:
            entry["shape"] = "address"
        entries[name] = entry
        for qname, q in qs.items():
            if qname != name and q["routing_type"] == MULTICAST:
                subscriptions.append(q)
    for q in subscriptions:
        if q["name"] in entries:  # an address of that name wins
            continue
        entries[q["name"]] = {"address": q["name"], "shape": "subscription", "complete": True,
                              "topic": q["address"], "max_consumers": q["max_consumers"],
                              "queues": [q["name"]], "message_count": q["message_count"],
                              "consumers": q["consumers"]}
    return entries


def entry_type(entry, owned=None, hint=None):
    """The address type of a live entry: the ledger's type when it fits the
    shape, else ``hint`` (the desired type) when it fits, else the shape's."""
    shape = entry["shape"]
    for candidate in ((owned or {}).get("type"), hint):
        if candidate and SHAPE_OF_TYPE.get(candidate) == shape:
            return candidate
    return {"queue": "queue", "topic": "topic", "subscription": "subscription"}.get(shape)


def live_view(entry, owned=None, settings=None, hint=None):
    """The plain address as it is on the broker. ``settings`` are the plain
    settings fields read from the broker (already restricted to what matters),
    the plan comes from the ledger (None for an address we do not own)."""
    view = {"address": entry["address"], "type": entry_type(entry, owned, hint),
            "plan": (owned or {}).get("plan")}
    if entry["shape"] == "subscription":
        view["topic"] = entry["topic"]
        view["subscription"] = {"max_consumers": entry["max_consumers"]}
    view.update(copy.deepcopy(settings or {}))
    return view


def status_of(entry, owned):
    """Status of an address: ready, phase (Active; Configuring: incomplete;
    Pending: not on the broker), message_count, consumers, owned, and
    ``messages``: why it is not ready (empty when it is)."""
    if entry is None:
        return {"ready": False, "phase": PHASE_PENDING, "message_count": 0, "consumers": 0, "owned": owned,
                "messages": ["not on the broker"]}
    ready = bool(entry["complete"])
    return {"ready": ready, "phase": PHASE_ACTIVE if ready else PHASE_CONFIGURING,
            "message_count": entry["message_count"], "consumers": entry["consumers"], "owned": owned,
            "messages": [] if ready else ["incomplete on the broker: the address %r has no queue of its own"
                                          % entry["address"]]}


def applied_status(entry, owned):
    """Status of an address the broker just accepted (created or completed)."""
    status = status_of(entry or {"address": None, "complete": True, "message_count": 0, "consumers": 0}, owned)
    status.update(ready=True, phase=PHASE_ACTIVE, messages=[])
    return status


def deleted_status():
    return {"ready": False, "phase": PHASE_DELETED, "message_count": 0, "consumers": 0, "owned": False,
            "messages": []}


def read_live(client, broker_name):
    """Broker attributes and live entries (``live_entries``), in two bulk
    round trips (three when some addresses have no queue of their own)."""
    mbean = _client.broker_mbean(broker_name)
    reqs = [client.read_request(mbean, BROKER_ATTRIBUTES),
            client.read_request(_client.all_queues_pattern(broker_name), QUEUE_ATTRIBUTES),
            client.read_request(multicast_queues_pattern(broker_name), ["MaxConsumers"])]
    (broker, berr), (counts, qerr), (multicast, merr) = client.bulk(reqs, raise_errors=False)
    if berr is not None:
        where = redact_url(client.url)
        if berr.status == 404:
            raise ServiceError("broker %r not found at %s: is broker_name right (see <name> in the "
                               "instance's etc/broker.xml)?" % (broker_name, where))
        raise ServiceError("cannot read broker %r at %s: %s" % (broker_name, where, berr))
    for err in (qerr, merr):
        if err is not None and err.status != 404:  # 404: no MBean matches the pattern
            raise ServiceError("cannot read the queues of broker %r: %s" % (broker_name, err))
    queues = queue_records(counts, multicast)
    routing = dict((a, None) for a in broker.get("AddressNames") or [])
    unknown = without_own_queue(routing, queues)
    if unknown:
        reqs = [client.read_request(_client.address_mbean(broker_name, a), "RoutingTypes") for a in unknown]
        for a, (value, unused) in zip(unknown, client.bulk(reqs, raise_errors=False)):
            routing[a] = value or []
    return broker, live_entries(routing, queues)


def read_settings(client, broker_name, names):
    """Merged address settings for ``names`` plus the catch-all baseline
    (``None`` key), in bulk."""
    mbean = _client.broker_mbean(broker_name)
    names = list(names)
    reqs = [client.exec_request(mbean, OP_GET_SETTINGS, n) for n in [SETTINGS_PROBE] + names]
    out = {}
    for n, (value, unused) in zip([None] + names, client.bulk(reqs)):
        out[n] = json.loads(value) if value else {}
    return out
