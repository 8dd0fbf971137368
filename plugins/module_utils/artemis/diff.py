# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The difference between the desired addresses and the live broker, as
Jolokia requests grouped in phases. Pure: ``plan_changes`` reads and writes
nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as _client
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.reader import ANYCAST, MULTICAST, SHAPE_OF_TYPE, live_view
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.settings import (
    SETTINGS_FIELDS, artemis_settings, clean_address, desired_view, settings_from_artemis,
    settings_match, visible_settings)

# Jolokia operation signatures (the operations are overloaded)
OP_CREATE_QUEUE = "createQueue(java.lang.String,boolean)"
OP_CREATE_ADDRESS = "createAddress(java.lang.String,java.lang.String)"
OP_DELETE_ADDRESS = "deleteAddress(java.lang.String,boolean)"
OP_DESTROY_QUEUE = "destroyQueue(java.lang.String,boolean)"
OP_ADD_SETTINGS = "addAddressSettings(java.lang.String,java.lang.String)"
OP_REMOVE_SETTINGS = "removeAddressSettings(java.lang.String)"
# apply phases: what must exist before the next phase runs
PHASE_CREATE, PHASE_SUBSCRIBE, PHASE_UNSUBSCRIBE, PHASE_DELETE = range(4)


def create_requests(mbean, address, settings):
    """Jolokia requests that create ``address`` (phase, request) pairs."""
    name, atype = address["address"], address["type"]
    out = []
    if atype == "topic":
        out.append((PHASE_CREATE, _client.JolokiaClient.exec_request(mbean, OP_CREATE_ADDRESS, name, MULTICAST)))
    elif atype == "subscription":
        cfg = {"name": name, "address": address["topic"], "routing-type": MULTICAST, "durable": True,
               "max-consumers": (address.get("subscription") or {}).get("max_consumers", 1),
               "auto-create-address": False}
        out.append((PHASE_SUBSCRIBE, _client.JolokiaClient.exec_request(
            mbean, OP_CREATE_QUEUE, json.dumps(cfg, sort_keys=True), True)))
    else:  # queue, deadletter
        cfg = {"name": name, "address": name, "routing-type": ANYCAST, "durable": True,
               "auto-create-address": True}
        out.append((PHASE_CREATE, _client.JolokiaClient.exec_request(
            mbean, OP_CREATE_QUEUE, json.dumps(cfg, sort_keys=True), True)))
    if settings:
        out.append((PHASE_CREATE, settings_request(mbean, name, settings)))
    return out


def settings_request(mbean, name, settings):
    if settings:
        return _client.JolokiaClient.exec_request(mbean, OP_ADD_SETTINGS, name, json.dumps(settings, sort_keys=True))
    return _client.JolokiaClient.exec_request(mbean, OP_REMOVE_SETTINGS, name)


def delete_requests(mbean, entry, had_settings):
    name = entry["address"]
    out = []
    if entry["shape"] == "subscription":
        out.append((PHASE_UNSUBSCRIBE, _client.JolokiaClient.exec_request(mbean, OP_DESTROY_QUEUE, name, True)))
    else:
        out.append((PHASE_DELETE, _client.JolokiaClient.exec_request(mbean, OP_DELETE_ADDRESS, name, True)))
    if had_settings:
        out.append((PHASE_DELETE, _client.JolokiaClient.exec_request(mbean, OP_REMOVE_SETTINGS, name)))
    return out


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


def subscription_setting_errors(addresses, positions=None, space_type="brokered"):
    """A subscription cannot have settings of its own: Artemis applies address
    settings per address, and a subscription is a queue on its topic's address
    (in brokered spaces and, as ``S/N`` on ``S/T``, in standard spaces)."""
    errs = []
    for n, a in enumerate(addresses):
        where = positions[n] if positions else "addresses[%d]" % n
        if not isinstance(a, dict) or a.get("type") != "subscription":
            continue
        # message_ttl: refused on subscriptions by the model's rule (validation.TTL_TYPES)
        for key in (k for k in SETTINGS_FIELDS if k != "message_ttl"):
            if a.get(key) is not None:
                errs.append("%s(%s).%s: %r is not supported on a subscription in a %s "
                            "address space (Artemis applies address settings per address: set it on "
                            "topic %r)" % (where, a.get("address"), key, a[key], space_type, a.get("topic")))
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
    """The addresses of the space after the change, for the quota: the listed
    ones in task order (so ``positions`` index them), then the owned ones that
    stay unlisted. The placement accounts the ones that keep their home (owned,
    same plan) first, so only new addresses and plan changes can fail."""
    listed = set(a["address"] for a in present)
    gone = set(deletes)
    return list(present) + [owned[n] for n in sorted(owned) if n not in listed and n not in gone]
