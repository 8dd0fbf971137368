# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service for a brokered address space on ActiveMQ Artemis.

Read the live state of the broker, normalise it to plain addresses, compare it
with the desired addresses, and apply the difference with Jolokia bulk
requests. Follows the pattern of middleware_automation.keycloak: the *current*
object is always read from the live broker (type reconstructed from routing
types and queues, settings from the address settings, plan from the ledger),
never from what we think we did last time.

Mapping (one Artemis instance per brokered space):

* queue        ANYCAST address + durable ANYCAST queue of the same name
* deadletter   the same shape as a queue
* topic        MULTICAST address (no queue)
* subscription durable MULTICAST queue named <address> on the topic's address
               (clients consume from ``<topic>::<address>``), max-consumers from
               ``subscription.max_consumers``
* settings     per-address settings (``addAddressSettings(match, json)``) from
               ``plans.effective_settings``; queues and topics only

The pure functions (``live_entries``, ``desired_view``, ``live_view``,
``plan_changes`` ...) work on plain dicts and are unit tested without a broker.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re
from concurrent.futures import ThreadPoolExecutor

try:
    from ansible_collections.enmasse.messaging.plugins.module_utils import model as _model
    from ansible_collections.enmasse.messaging.plugins.module_utils import plans as _plans
    from ansible_collections.enmasse.messaging.plugins.module_utils import jolokia as _jolokia
except ImportError:  # pragma: no cover - used outside Ansible
    from . import model as _model  # noqa
    from . import plans as _plans  # noqa
    from . import jolokia as _jolokia  # noqa

ANYCAST = "ANYCAST"
MULTICAST = "MULTICAST"

# broker-internal addresses never reported as unowned addresses of a space
INTERNAL_PREFIXES = ("activemq.management", "activemq.notifications", "$sys.")

# the keys of a plain address that describe it (name/state/address_space are input only)
PLAIN_KEYS = ("address", "type", "plan", "topic", "subscription", "deadletter", "expiry",
              "message_ttl", "message_redelivery")
SETTINGS_FIELDS = ("message_ttl", "message_redelivery", "deadletter", "expiry")
# Artemis applies address settings per address: queues and topics (a topic's
# settings apply to all its subscriptions); a subscription has none of its own.
ARTEMIS_SETTINGS_TYPES = ("queue", "topic")

# (plain field, sub key, Artemis address-settings JSON key); verified against
# Artemis 2.40: addAddressSettings(String, String json) takes and
# getAddressSettingsAsJSON(String) returns these camelCase keys.
SETTINGS_KEYS = (
    ("message_ttl", "minimum", "minExpiryDelay"),
    ("message_ttl", "maximum", "maxExpiryDelay"),
    ("message_redelivery", "maximum_delivery_attempts", "maxDeliveryAttempts"),
    ("message_redelivery", "redelivery_delay", "redeliveryDelay"),
    ("message_redelivery", "redelivery_delay_multiplier", "redeliveryMultiplier"),
    ("message_redelivery", "maximum_delivery_delay", "maxRedeliveryDelay"),
    ("deadletter", None, "deadLetterAddress"),
    ("expiry", None, "expiryAddress"),
)

# live shape of each address type
SHAPE_OF_TYPE = {"queue": "queue", "deadletter": "queue", "topic": "topic",
                 "subscription": "subscription"}

# Jolokia operation signatures (the operations are overloaded)
OP_CREATE_QUEUE = "createQueue(java.lang.String,boolean)"
OP_CREATE_ADDRESS = "createAddress(java.lang.String,java.lang.String)"
OP_DELETE_ADDRESS = "deleteAddress(java.lang.String,boolean)"
OP_DESTROY_QUEUE = "destroyQueue(java.lang.String,boolean)"
OP_ADD_SETTINGS = "addAddressSettings(java.lang.String,java.lang.String)"
OP_REMOVE_SETTINGS = "removeAddressSettings(java.lang.String)"
OP_GET_SETTINGS = "getAddressSettingsAsJSON(java.lang.String)"

# read in bulk: every attribute of 10,000 queue MBeans costs ~0.5 s on the broker
QUEUE_ATTRIBUTES = ["MessageCount", "ConsumerCount"]
BROKER_ATTRIBUTES = ["Name", "Version", "Started", "AddressNames"]
# a name no address settings match other than the catch-all ones
SETTINGS_PROBE = "enmasse-messaging.settings-probe"
# errors that mean "already gone" when deleting
GONE = ("AMQ229203", "AMQ229017")

# apply phases: what must exist before the next phase runs
PHASE_CREATE, PHASE_SUBSCRIBE, PHASE_UNSUBSCRIBE, PHASE_DELETE = range(4)
WORKERS = 8

PHASE_ACTIVE = "Active"
PHASE_PENDING = "Pending"
PHASE_CONFIGURING = "Configuring"
PHASE_DELETED = "Deleted"


class ServiceError(Exception):
    """The service refused or failed; ``errors`` holds every message and
    ``result`` what was done before the failure (``changed``, ``changes``)."""

    def __init__(self, errors, result=None):
        self.errors = [errors] if isinstance(errors, str) else list(errors)
        self.result = result or {}
        super(ServiceError, self).__init__("; ".join(self.errors))


# ------------------------------------------------------------ plain addresses

def clean_address(address):
    """The describing keys of a plain address, with defaults, without Nones."""
    out = {}
    for k in PLAIN_KEYS:
        v = address.get(k)
        if v is not None:
            out[k] = copy.deepcopy(v) if isinstance(v, (dict, list)) else v
    return _model.with_defaults(out) if out.get("type") == "subscription" else out


def settings_to_artemis(effective):
    """Artemis address-settings JSON object for ``plans.effective_settings``."""
    out = {}
    for field, sub, key in SETTINGS_KEYS:
        value = effective.get(field)
        if sub is not None:
            value = (value or {}).get(sub)
        if value is not None:
            out[key] = value
    return out


def settings_from_artemis(settings, keys=None):
    """Plain settings fields from Artemis address settings (only ``keys``)."""
    out = {}
    for field, sub, key in SETTINGS_KEYS:
        if keys is not None and key not in keys:
            continue
        value = (settings or {}).get(key)
        if value is None:
            continue
        if sub is None:
            out[field] = value
        else:
            out.setdefault(field, {})[sub] = value
    return out


def artemis_settings(address, catalogue):
    """The Artemis address settings an address must have (may be empty)."""
    if not address or address.get("type") not in ARTEMIS_SETTINGS_TYPES:
        return {}
    plan = catalogue.address_plan(address.get("plan")) or {}
    if not (plan.get("message_ttl") or plan.get("message_redelivery")) and \
            not any(address.get(k) for k in SETTINGS_FIELDS):
        return {}  # the common case, fast: nothing to set
    return settings_to_artemis(_plans.effective_settings(address, plan))


def desired_view(address, catalogue, settings=None):
    """The plain address as it will be on the broker: the settings fields are
    the effective ones (plan values overridden by the address's own).
    ``settings``: its ``artemis_settings`` when already computed."""
    view = dict((k, v) for k, v in clean_address(address).items() if k not in SETTINGS_FIELDS)
    if settings is None:
        settings = artemis_settings(address, catalogue)
    view.update(settings_from_artemis(settings))
    return view


def same_value(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def settings_match(live, wanted):
    """True when every wanted Artemis setting has that value live."""
    live = live or {}
    return all(same_value(live.get(k), v) for k, v in wanted.items())


# ---------------------------------------------------------------- live state

def multicast_queues_pattern(broker_name):
    return '%s:broker=%s,component=addresses,address=*,subcomponent=queues,routing-type="multicast",queue=*' % (
        _jolokia.ARTEMIS_DOMAIN, _jolokia.quote_mbean_value(broker_name))


def is_internal(name):
    return name.startswith(INTERNAL_PREFIXES)


_SIMPLE_KEY = re.compile(r'([^,=:]+)=(?:"([^"]*)"|([^,]*))')


def mbean_keys(name):
    """``jolokia.parse_mbean_keys``, with a fast path for names without
    escapes (10,000 queue MBean names are parsed on every run)."""
    if "\\" in name:
        return _jolokia.parse_mbean_keys(name)
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
    Pending: not on the broker), message_count, consumers, owned."""
    if entry is None:
        return {"ready": False, "phase": PHASE_PENDING, "message_count": 0, "consumers": 0, "owned": owned}
    ready = bool(entry["complete"])
    return {"ready": ready, "phase": PHASE_ACTIVE if ready else PHASE_CONFIGURING,
            "message_count": entry["message_count"], "consumers": entry["consumers"], "owned": owned}


def applied_status(entry, owned):
    """Status of an address the broker just accepted (created or completed)."""
    status = status_of(entry or {"complete": True, "message_count": 0, "consumers": 0}, owned)
    status.update(ready=True, phase=PHASE_ACTIVE)
    return status


def deleted_status():
    return {"ready": False, "phase": PHASE_DELETED, "message_count": 0, "consumers": 0, "owned": False}


def visible_settings(merged, baseline, keys=()):
    """Plain settings fields of an address from its merged address settings:
    the ``keys`` we manage, plus whatever differs from the broker's catch-all
    settings (``baseline``)."""
    if merged is None:
        return {}
    keys = set(keys)
    keys.update(k for k, v in merged.items() if not same_value(v, (baseline or {}).get(k)))
    return settings_from_artemis(merged, keys)


# ---------------------------------------------------------------- requests

def create_requests(mbean, address, settings):
    """Jolokia requests that create ``address`` (phase, request) pairs."""
    name, atype = address["address"], address["type"]
    out = []
    if atype == "topic":
        out.append((PHASE_CREATE, _jolokia.JolokiaClient.exec_request(mbean, OP_CREATE_ADDRESS, name, MULTICAST)))
    elif atype == "subscription":
        cfg = {"name": name, "address": address["topic"], "routing-type": MULTICAST, "durable": True,
               "max-consumers": (address.get("subscription") or {}).get("max_consumers", 1),
               "auto-create-address": False}
        out.append((PHASE_SUBSCRIBE, _jolokia.JolokiaClient.exec_request(
            mbean, OP_CREATE_QUEUE, json.dumps(cfg, sort_keys=True), True)))
    else:  # queue, deadletter
        cfg = {"name": name, "address": name, "routing-type": ANYCAST, "durable": True,
               "auto-create-address": True}
        out.append((PHASE_CREATE, _jolokia.JolokiaClient.exec_request(
            mbean, OP_CREATE_QUEUE, json.dumps(cfg, sort_keys=True), True)))
    if settings:
        out.append((PHASE_CREATE, settings_request(mbean, name, settings)))
    return out


def settings_request(mbean, name, settings):
    if settings:
        return _jolokia.JolokiaClient.exec_request(mbean, OP_ADD_SETTINGS, name, json.dumps(settings, sort_keys=True))
    return _jolokia.JolokiaClient.exec_request(mbean, OP_REMOVE_SETTINGS, name)


def delete_requests(mbean, entry, had_settings):
    name = entry["address"]
    out = []
    if entry["shape"] == "subscription":
        out.append((PHASE_UNSUBSCRIBE, _jolokia.JolokiaClient.exec_request(mbean, OP_DESTROY_QUEUE, name, True)))
    else:
        out.append((PHASE_DELETE, _jolokia.JolokiaClient.exec_request(mbean, OP_DELETE_ADDRESS, name, True)))
    if had_settings:
        out.append((PHASE_DELETE, _jolokia.JolokiaClient.exec_request(mbean, OP_REMOVE_SETTINGS, name)))
    return out


# ------------------------------------------------------------------ diffing

class Changes(object):
    """What converging needs: created/updated/deleted names, before/after
    views of the changed addresses, the requests per address, and the ledger
    entries to record once the broker accepted them."""

    def __init__(self):
        self.created, self.updated, self.deleted = [], [], []
        self.before, self.after = {}, {}
        self.requests = []      # (phase, name, request)
        self.record = {}        # name -> plain address to write to the ledger
        self.reasons = {}       # name -> why it is updated
        self.removing = []      # deleted names that are removed from the broker

    @property
    def changed(self):
        return bool(self.created or self.updated or self.deleted)

    def as_dict(self):
        return {"created": list(self.created), "updated": list(self.updated),
                "deleted": list(self.deleted)}

    def diff(self):
        return {"before": self.before, "after": self.after}

    def add(self, name, requests):
        self.requests.extend((phase, name, req) for phase, req in requests)


def plan_changes(desired, deletes, live, owned, merged, catalogue, mbean, baseline=None,
                 wanted=None, had=None):
    """Compare desired with live and work out the changes.

    ``desired``: validated plain addresses that must be present;
    ``deletes``: names of owned addresses to delete; ``live``: entries from
    ``live_entries``; ``owned``: the ledger's addresses; ``merged``: merged
    Artemis address settings per name (read for every name whose desired or
    recorded settings are not empty); ``mbean``: the broker MBean name;
    ``wanted``/``had``: the Artemis settings per name of the desired and the
    owned addresses, when already computed. Pure: nothing is read or written.
    """
    ch = Changes()
    wanted, had = wanted or {}, had or {}
    for address in desired:
        name = address["address"]
        plain = clean_address(address)
        want_settings = wanted[name] if name in wanted else artemis_settings(plain, catalogue)
        mine = owned.get(name)
        had_settings = had[name] if name in had else artemis_settings(mine, catalogue)
        entry = live.get(name)
        if entry is None:
            ch.created.append(name)
            ch.after[name] = desired_view(plain, catalogue, want_settings)
            ch.add(name, create_requests(mbean, plain, want_settings))
            ch.record[name] = plain
            continue
        reasons, requests = [], []
        if mine is None:
            reasons.append("not owned yet: recorded in the ledger")
        elif mine.get("plan") != plain.get("plan"):
            reasons.append("plan %r -> %r" % (mine.get("plan"), plain.get("plan")))
        if not entry["complete"]:
            reasons.append("incomplete on the broker")
            requests.extend(create_requests(mbean, plain, None))
        live_settings = merged.get(name)
        if not settings_match(live_settings, want_settings) or set(had_settings) - set(want_settings):
            reasons.append("address settings differ")
            requests.append((PHASE_CREATE, settings_request(mbean, name, want_settings)))
        if not reasons:
            continue
        ch.updated.append(name)
        ch.reasons[name] = reasons
        keys = set(want_settings) | set(had_settings)
        ch.before[name] = live_view(entry, mine, settings_from_artemis(live_settings, keys), plain["type"])
        ch.after[name] = desired_view(plain, catalogue, want_settings)
        ch.add(name, requests)
        ch.record[name] = plain
    for name in deletes:
        mine = owned.get(name) or {}
        entry = live.get(name)
        had_settings = had[name] if name in had else artemis_settings(mine, catalogue)
        ch.deleted.append(name)
        if entry is not None and SHAPE_OF_TYPE.get(mine.get("type")) == entry["shape"]:
            ch.before[name] = live_view(entry, mine, visible_settings(merged.get(name), baseline, had_settings))
            ch.add(name, delete_requests(mbean, entry, had_settings))
            ch.removing.append(name)
        else:  # gone from the broker (or replaced by something not ours): forget it
            ch.before[name] = desired_view(mine, catalogue) if mine else {"address": name}
        ch.record[name] = None
    return ch


def messages_held(names, live):
    """Messages for every address in ``names`` that still holds messages."""
    out = []
    for name in names:
        entry = live.get(name)
        if entry and entry["message_count"]:
            where = " in its subscriptions" if entry["shape"] == "topic" else ""
            out.append("address %r (%s) holds %d message(s)%s; set force: true to delete it anyway"
                       % (name, entry["shape"], entry["message_count"], where))
    return out


def subscription_setting_errors(addresses):
    """Brokered spaces cannot give a subscription settings of its own."""
    errs = []
    for i, a in enumerate(addresses):
        if a.get("type") != "subscription":
            continue
        for key in SETTINGS_FIELDS:
            if a.get(key) is not None:
                errs.append("addresses[%d](%s).%s: %r is not supported on a subscription in a brokered "
                            "address space (Artemis applies address settings per address: set it on "
                            "topic %r)" % (i, a.get("address"), key, a[key], a.get("topic")))
    return errs


def orphan_subscription_errors(deletes, owned):
    """Refuse deleting a topic while owned subscriptions that stay refer to it."""
    deleting = set(deletes)
    staying = {}
    for n, a in owned.items():
        if a.get("type") == "subscription" and n not in deleting:
            staying.setdefault(a.get("topic"), []).append(n)
    errs = []
    for name in deletes:
        subs = sorted(staying.get(name, ())) if (owned.get(name) or {}).get("type") == "topic" else ()
        if subs:
            errs.append("address %r: topic cannot be deleted while owned subscription(s) %s refer to it; "
                        "delete them in the same task" % (name, ", ".join(subs)))
    return errs


# ------------------------------------------------------------------ service

class BrokeredService(object):
    """The live broker of one brokered address space, through Jolokia."""

    def __init__(self, client, broker_name, workers=WORKERS):
        self.client = client
        self.broker_name = broker_name
        self.mbean = _jolokia.broker_mbean(broker_name)
        self.workers = workers

    def read(self):
        """Broker attributes and live entries, in two round trips (three
        when some addresses have no queue of their own)."""
        reqs = [self.client.read_request(self.mbean, BROKER_ATTRIBUTES),
                self.client.read_request(_jolokia.all_queues_pattern(self.broker_name), QUEUE_ATTRIBUTES),
                self.client.read_request(multicast_queues_pattern(self.broker_name), ["MaxConsumers"])]
        (broker, berr), (counts, qerr), (multicast, merr) = self.client.bulk(reqs, raise_errors=False)
        if berr is not None:
            where = _jolokia.redact_url(self.client.url)
            if berr.status == 404:
                raise ServiceError("broker %r not found at %s: is broker_name right (see <name> in the "
                                   "instance's etc/broker.xml)?" % (self.broker_name, where))
            raise ServiceError("cannot read broker %r at %s: %s" % (self.broker_name, where, berr))
        for err in (qerr, merr):
            if err is not None and err.status != 404:  # 404: no MBean matches the pattern
                raise ServiceError("cannot read the queues of broker %r: %s" % (self.broker_name, err))
        queues = queue_records(counts, multicast)
        routing = dict((a, None) for a in broker.get("AddressNames") or [])
        unknown = without_own_queue(routing, queues)
        if unknown:
            reqs = [self.client.read_request(_jolokia.address_mbean(self.broker_name, a), "RoutingTypes")
                    for a in unknown]
            for a, (value, _) in zip(unknown, self.client.bulk(reqs, raise_errors=False)):
                routing[a] = value or []
        return broker, live_entries(routing, queues)

    def read_settings(self, names):
        """Merged address settings for ``names`` plus the catch-all baseline
        (``None`` key), in bulk."""
        names = list(names)
        reqs = [self.client.exec_request(self.mbean, OP_GET_SETTINGS, n) for n in [SETTINGS_PROBE] + names]
        values = self.client.bulk(reqs)
        out = {}
        for n, (value, _) in zip([None] + names, values):
            out[n] = json.loads(value) if value else {}
        return out

    def apply(self, requests):
        """Run (phase, name, request) triples phase by phase, each phase in
        parallel batches. Returns ``{name: [error, ...]}`` for what failed."""
        errors = {}
        for phase in sorted(set(p for p, _, _ in requests)):
            batch = [(n, r) for p, n, r in requests if p == phase]
            # every worker gets work: the broker groups the journal syncs of
            # concurrent requests, so parallel batches create faster
            size = max(1, min(self.client.batch_size, -(-len(batch) // self.workers)))
            chunks = [batch[i:i + size] for i in range(0, len(batch), size)]
            with ThreadPoolExecutor(max(1, min(self.workers, len(chunks)))) as pool:
                results = list(pool.map(lambda c: self.client.bulk([r for _, r in c], raise_errors=False), chunks))
            for chunk, res in zip(chunks, results):
                for (name, req), (_, err) in zip(chunk, res):
                    if err is None:
                        continue
                    if req.get("operation") in (OP_DELETE_ADDRESS, OP_DESTROY_QUEUE, OP_REMOVE_SETTINGS) \
                            and any(code in str(err) for code in GONE):
                        continue
                    errors.setdefault(name, []).append("address %r: %s" % (name, err))
        return errors


# --------------------------------------------------------------- converging

def space_of(ledger, conn, name):
    """The address space (name, type, plan) the ledger or connection file knows."""
    rec = ledger.space or {}
    return {"name": name, "type": rec.get("type") or conn.get("type") or "brokered",
            "plan": rec.get("plan") or conn.get("plan")}


def not_supported(space_type):
    if space_type == "standard":
        return ("address space type 'standard' is not yet supported by this collection: only "
                "'brokered' spaces (one Artemis broker) are implemented")
    return None


def diff_against_live(service, live, owned, present, deletes, catalogue, force):
    """The changes from ``live`` to ``present`` (clean plain addresses) with
    ``deletes`` removed; reads the address settings that matter in bulk.
    Refuses deleting addresses that hold messages unless ``force``.
    Returns the changes and the wanted Artemis settings per address."""
    wanted = dict((a["address"], artemis_settings(a, catalogue)) for a in present)
    had = dict((n, artemis_settings(owned[n], catalogue)) for n in list(wanted) + list(deletes) if n in owned)
    need = [n for n in list(wanted) + list(deletes) if n in live and (wanted.get(n) or had.get(n))]
    merged = service.read_settings(need) if need else {None: {}}
    changes = plan_changes(present, deletes, live, owned, merged, catalogue, service.mbean, merged.get(None),
                           wanted, had)
    if not force:
        held = messages_held(changes.removing, live)
        if held:
            raise ServiceError(held)
    return changes, wanted


def commit(service, ledger, changes, check_mode):
    """Apply ``changes`` and record what the broker accepted in the ledger.
    Returns the errors (``{name: [messages]}``)."""
    if check_mode or not changes.changed:
        return {}
    errors = service.apply(changes.requests) if changes.requests else {}
    for name, plain in changes.record.items():
        if name in errors:
            continue
        if plain is None:
            ledger.addresses.pop(name, None)
        else:
            ledger.addresses[name] = plain
    ledger.save()
    return errors


def failed(errors, changes):
    msgs = [m for name in sorted(errors) for m in errors[name]]
    result = {"changed": True, "changes": changes.as_dict(), "failed_addresses": sorted(errors)}
    return ServiceError(msgs, result)


def current_for_validation(present, live, owned, gone):
    """What exists now (and stays), as plain addresses, for the names the
    desired addresses list or refer to (topic, deadletter, expiry): the
    model refuses immutable changes and resolves references against it."""
    hints = {}
    for a in present:
        if isinstance(a, dict):
            hints[a.get("address")] = a.get("type")
            for key in ("topic", "deadletter", "expiry"):
                hints.setdefault(a.get(key), None)
    current = {}
    for name, hint in hints.items():
        if not isinstance(name, str) or name in gone:
            continue
        if name in live:
            current[name] = live_view(live[name], owned.get(name), hint=hint)
        elif name in owned:
            current[name] = owned[name]
    return current


def quota_order(present, owned, deletes):
    """Addresses in the order quota is accounted: owned ones that stay (not
    listed), then listed ones already owned, then new ones; so the new ones
    are those that do not fit."""
    listed = set(a["address"] for a in present)
    gone = set(deletes)
    kept = [owned[n] for n in sorted(owned) if n not in listed and n not in gone]
    return kept + [a for a in present if a["address"] in owned] + \
        [a for a in present if a["address"] not in owned]


def converge_addresses(service, ledger, space, catalogue, present, absent, prune=False,
                       force=False, check_mode=False):
    """Converge the addresses of a brokered space.

    ``present``: plain addresses that must exist; ``absent``: names that must
    not. Everything is validated first (every violation at once); then the
    live broker is read, compared, and changed in bulk; the ledger records
    what the broker accepted. Returns the module result.
    """
    owned = dict(ledger.addresses)  # snapshot: committing changes the ledger
    names = set(a.get("address") for a in present if isinstance(a, dict))
    errs = []
    for i, name in enumerate(absent):
        errs.extend(_model.address_name_errors(name, "absent[%d]" % i))
        if name in names:
            errs.append("absent[%d]: %r is listed both as present and as absent" % (i, name))
    broker, live = service.read()
    absent_set = set(absent)
    deletes = [n for n in sorted(absent_set) if n in owned]
    if prune:
        deletes.extend(n for n in sorted(owned) if n not in names and n not in absent_set)
    current = current_for_validation(present, live, owned, set(deletes))
    errs.extend(_model.validate_addresses(space, present, catalogue, current=current, check_quota=False))
    errs.extend(subscription_setting_errors(present))
    errs.extend(orphan_subscription_errors(deletes, owned))
    splan = catalogue.address_space_plan(space.get("plan"))
    if not errs and splan:
        errs.extend(_model.quota_check(space, splan, quota_order(present, owned, deletes), catalogue)[0])
    if errs:
        raise ServiceError(errs)

    present = [clean_address(a) for a in present]
    changes, wanted = diff_against_live(service, live, owned, present, deletes, catalogue, force)
    errors = commit(service, ledger, changes, check_mode)
    if errors:
        raise failed(errors, changes)
    # statuses from the state read before the change plus what the broker
    # accepted (no second read: it costs seconds with thousands of queues)
    applied = set() if check_mode else set(changes.record)
    addresses = []
    for a in present:
        name = a["address"]
        view = changes.after.get(name) or desired_view(a, catalogue, wanted.get(name))
        view = dict(view)
        if name in applied:
            view["status"] = applied_status(live.get(name), True)
        else:
            view["status"] = status_of(live.get(name), name in ledger.addresses)
        addresses.append(view)
    for name in absent:
        entry = live.get(name)
        if name in applied or entry is None:
            view = desired_view(owned[name], catalogue) if name in owned else {"address": name}
            view["status"] = deleted_status()
        else:
            view = live_view(entry, ledger.addresses.get(name))
            view["status"] = status_of(entry, name in ledger.addresses)
        addresses.append(view)
    result = {"changed": changes.changed, "addresses": addresses, "changes": changes.as_dict(),
              "diff": changes.diff()}
    skipped = [n for n in absent if n not in owned and n in live]
    if skipped:
        result["warnings"] = ["not deleted, not owned by this collection (created by hand?): %s"
                              % ", ".join(skipped)]
    return result


def address_info(service, ledger, catalogue, names=None, include_unowned=True):
    """Live addresses of the space (owned ones always, others if asked), each
    a plain address with ``status``; owned addresses missing on the broker
    are listed with phase Pending."""
    _, live = service.read()
    owned = ledger.addresses
    wanted = None if not names else set(names)
    picked = []
    for name in sorted(set(live) | set(owned)):
        if wanted is not None and name not in wanted:
            continue
        mine = owned.get(name)
        if mine is None and (not include_unowned or is_internal(name)):
            continue
        picked.append(name)
    need = [n for n in picked if n in live and entry_type(live[n], owned.get(n)) in ARTEMIS_SETTINGS_TYPES]
    merged = service.read_settings(need) if need else {None: {}}
    out = []
    for name in picked:
        mine = owned.get(name)
        entry = live.get(name)
        if entry is None:
            view = clean_address(mine)
        else:
            keys = artemis_settings(mine, catalogue) if mine else ()
            view = live_view(entry, mine, visible_settings(merged.get(name), merged.get(None), keys))
        view["status"] = status_of(entry, mine is not None)
        out.append(view)
    return out


# ------------------------------------------------------------ address space

SPACE_RECORD_KEYS = ("name", "type", "plan", "authentication_service")


def space_record(space):
    return dict((k, copy.deepcopy(space.get(k))) for k in SPACE_RECORD_KEYS if space.get(k) is not None)


def space_status(broker, live, ledger, endpoints, error=None):
    messages = []
    if error:
        messages.append(error)
    missing = sorted(n for n in ledger.addresses if live is not None and n not in live)
    if missing:
        messages.append("%d owned address(es) missing on the broker: %s"
                        % (len(missing), ", ".join(missing[:20]) + (", ..." if len(missing) > 20 else "")))
    ready = bool(broker and broker.get("Started", True)) and not error
    if not ledger.space:
        phase = PHASE_PENDING
    elif not ready:
        phase = "Failed" if error else PHASE_CONFIGURING
    else:
        phase = PHASE_ACTIVE
    return {"ready": ready, "phase": phase, "messages": messages,
            "endpoints": [endpoint_status(e) for e in endpoints or []]}


def endpoint_status(ep):
    return {"name": ep.get("name"), "host": ep.get("host"), "port": ep.get("port"),
            "protocols": list(ep.get("protocols") or [])}


def space_result(name, record, status, extra=None):
    out = {"name": name, "type": None, "plan": None, "authentication_service": None,
           "exists": bool(record)}
    out.update(record or {})
    out.update(extra or {})
    out["status"] = status
    return out


def check_space_owner(ledger, name):
    if ledger.space and ledger.space.get("name") not in (None, name):
        raise ServiceError("the ledger %s belongs to address space %r, not %r: check ledger_path"
                           % (ledger.path, ledger.space.get("name"), name))


def converge_space(service, ledger, desired, catalogue, endpoints, check_mode=False):
    """state=present for a brokered address space."""
    name = desired["name"]
    errs = _model.validate_address_space(desired, catalogue)
    old = ledger.space or {}
    if old.get("type") and old["type"] != desired.get("type"):
        errs.append("address_space.type: %r cannot change (it is %r); type is immutable: delete the "
                    "address space and create it again" % (desired.get("type"), old["type"]))
    elif not_supported(desired.get("type")):
        errs.append(not_supported(desired.get("type")))
    if errs:
        raise ServiceError(errs)
    broker, live = service.read()
    if old.get("plan") and old["plan"] != desired["plan"] and ledger.addresses:
        current = dict((n, live_view(e, ledger.addresses.get(n))) for n, e in live.items())
        owned = [ledger.addresses[n] for n in sorted(ledger.addresses)]
        perrs = _model.validate_addresses(desired, owned, catalogue, current=current)
        if perrs:
            raise ServiceError(["plan change %r -> %r refused: %s" % (old["plan"], desired["plan"], e)
                                for e in perrs])
    record = space_record(desired)
    changed = record != (ledger.space or {})
    before = copy.deepcopy(ledger.space) if ledger.space else {}
    if changed and not check_mode:
        ledger.space = record
        ledger.save()
    status = space_status(broker, live, ledger if not check_mode else _with_space(ledger, record), endpoints)
    return {"changed": changed, "diff": {"before": before, "after": record},
            "address_space": space_result(name, record, status, {"endpoints": desired.get("endpoints")})}


def _with_space(ledger, record):
    view = copy.copy(ledger)
    view.space = record
    return view


def delete_space(service, ledger, name, catalogue, force=False, check_mode=False):
    """state=absent: delete every owned address, then clear the ledger."""
    before = copy.deepcopy(ledger.space) if ledger.space else {}
    if not ledger.exists:
        return {"changed": False, "diff": {"before": {}, "after": {}},
                "address_space": space_result(name, None, space_status(None, None, ledger, []))}
    owned = dict(ledger.addresses)
    names = sorted(owned)
    changes = Changes()
    if names:
        _, live = service.read()
        changes, _ = diff_against_live(service, live, owned, [], names, catalogue, force)
    errors = commit(service, ledger, changes, check_mode)
    if errors:
        raise failed(errors, changes)
    if not check_mode:
        ledger.remove()
    return {"changed": True, "changes": changes.as_dict(),
            "diff": {"before": dict(before, addresses=names), "after": {}},
            "address_space": space_result(name, None, {"ready": False, "phase": PHASE_DELETED, "messages": [],
                                                       "endpoints": []})}


def space_info(service, ledger, name, endpoints):
    """address_space_info: what the ledger records and how the broker is."""
    broker, live, error = None, None, None
    try:
        broker, live = service.read()
    except (ServiceError, _jolokia.JolokiaError) as e:
        error = str(e)
    status = space_status(broker, live, ledger, endpoints, error)
    extra = {"owned_addresses": len(ledger.addresses)} if ledger.space else {}
    return space_result(name, ledger.space, status, extra)
