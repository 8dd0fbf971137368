# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the stored addresses of a standard space live (its *homes* on the
broker pool): the ledger's homes, ``model.placement`` over the pool, the
plan changes it refuses, the drains and the brokers a drain releases, and
which addresses an address task reports on one broker (``addresses_on``).
No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement as _placement
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as _validation
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt as _fmt
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as _ent


def placement_for(service, space, splan, addresses, catalogue, ledger, live_brokers):
    """Where every stored address lives: (homes {name: [brokers]}, draining
    {name: [brokers]}, pending {name: reason}, released [(name, broker)])."""
    existing = [a for a in addresses if a["address"] in ledger.addresses
                and (ledger.homes.get(a["address"]) or {}).get("placed")]
    kept_existing = set(a["address"] for a in existing)  # names are unique (validated)
    new = [a for a in addresses if a["address"] not in kept_existing]
    ordered = existing + new
    current = dict((n, list(h.get("brokers") or [])) for n, h in ledger.homes.items())
    plans = dict((n, a.get("plan")) for n, a in ledger.addresses.items())
    items = _validation.placement_items([a for a in ordered if a["type"] != "deadletter"], catalogue,
                                        current_placement=current, current_plans=plans)
    limits = splan.get("resource_limits") or {}
    leaving = list(service.draining_brokers)
    res = _placement.place(items, brokers=list(service.broker_names), limits=limits, draining_brokers=leaving)
    for it in items:  # a router-only address that exists has no brokers: place() cannot see it lives
        if it.name in kept_existing and it.current_plan != it.plan and it.name in res.pending:
            res.refused[it.name] = res.pending.pop(it.name)
    if res.refused:  # a plan change over quota: refused, the live address keeps its plan, home and messages
        raise ServiceError(_placement.refused_plan_changes(space, splan.get("name"), limits, items, res))
    homes, pending, draining = {}, {}, {}
    for name, reason in res.pending.items():
        if name in kept_existing and not current.get(name):
            homes[name] = []  # a router-only address that exists is never evicted
            continue
        pending[name] = "%s: address space %r plan %r" % (reason, space, splan.get("name")) \
            if reason == _placement.QUOTA_EXCEEDED else reason
    for name, brokers in res.assignments.items():
        unknown = [b for b in brokers if b not in service.brokers]
        if unknown:
            pending[name] = ("no broker of the pool has room for it (the placement needs %d more broker(s); "
                             "the pool has %s): add a broker to the group brokers"
                             % (len(unknown), ", ".join(service.broker_names)))
            continue
        homes[name] = list(brokers)
    for a in ordered:
        if a["type"] == "deadletter":
            homes[a["address"]] = [b for b in service.broker_names if b not in leaving]
    # draining: old homes from before (kept until their queue is empty), and every
    # home on a broker leaving the pool
    released = []
    for name, h in ledger.homes.items():
        old = list(h.get("draining") or []) + list(res.draining.get(name) or []) + \
            [b for b in h.get("brokers") or [] if b in leaving]
        if name not in homes:
            continue
        left = []
        for b in old:
            if b in homes[name] or b not in service.brokers:
                continue
            entry = (live_brokers.get(b) or {}).get(_ent.internal(space, name))
            if entry is not None and entry.get("message_count", 0) > 0:
                left.append(b)
            else:
                released.append((name, b))
        if left:
            draining[name] = sorted(set(left))
    return homes, draining, pending, released


# addresses_on: the key of an address's status it reads, by kind
ON_BROKER = {"homes": "brokers", "draining": "draining"}


def _names(status, key, where):
    """``status[key]``, a list of strings (missing or null: [])."""
    value = status.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("%s.status.%s: %s must be a list of strings" % (where, key, _fmt(value)))
    return value


def addresses_on(results, broker, kind="homes", show=None):
    """The addresses of ``results`` on the pool broker ``broker``, each as
    ``<space>/<address>``, in the order given. ``kind``: ``homes`` - homed
    on it (in ``status.brokers``, placement_for's homes), ``draining`` - its
    old queue there still drains (in ``status.draining``). ``results``: an
    address or address_info task's results looped over the standard spaces,
    each ``{item: {name: <space>}, addresses: [{address, status}]}`` (no
    ``addresses``, e.g. a skipped one: none). ``show`` adds `` (<what>)``:
    ``count`` - the messages on ``broker`` (``status.message_counts``, 0
    where it has none), ``messages`` - the status messages, comma-separated.
    Raises ValueError naming the field, the value and the rule."""
    if kind not in ON_BROKER:
        raise ValueError("kind: %s must be one of %s" % (_fmt(kind), ", ".join(sorted(ON_BROKER))))
    if show not in (None, "count", "messages"):
        raise ValueError("show: %s must be count, messages or null" % _fmt(show))
    if not isinstance(broker, str) or not broker:
        raise ValueError("broker: %s must be a broker name (a non-empty string)" % _fmt(broker))
    if not isinstance(results, list):
        raise ValueError("results: %s must be a list of task results" % _fmt(results))
    out = []
    for i, r in enumerate(results):
        item = r.get("item") if isinstance(r, dict) else None
        space = item.get("name") if isinstance(item, dict) else None
        if not isinstance(space, str) or not space:
            raise ValueError("results[%d].item.name: %s must be the address space's name (a task result looped "
                             "over the spaces)" % (i, _fmt(space)))
        addresses = r.get("addresses")
        if not isinstance(addresses, (list, type(None))):
            raise ValueError("results[%d](%s).addresses: %s must be a list" % (i, space, _fmt(addresses)))
        for j, a in enumerate(addresses or []):
            where = "results[%d](%s).addresses[%d]" % (i, space, j)
            status = a.get("status") if isinstance(a, dict) else None
            if not isinstance(a, dict) or not isinstance(a.get("address"), str):
                raise ValueError("%s.address: %s must be an address name"
                                 % (where, _fmt(a.get("address") if isinstance(a, dict) else a)))
            if not isinstance(status, dict):
                raise ValueError("%s.status: %s must be a mapping" % (where, _fmt(status)))
            if broker not in _names(status, ON_BROKER[kind], where):
                continue
            label = "%s/%s" % (space, a["address"])
            if show == "count":
                counts = status.get("message_counts") or {}
                if not isinstance(counts, dict):
                    raise ValueError("%s.status.message_counts: %s must be a mapping" % (where, _fmt(counts)))
                label += " (%s)" % counts.get(broker, 0)
            elif show == "messages":
                label += " (%s)" % ", ".join(_names(status, "messages", where))
            out.append(label)
    return out
