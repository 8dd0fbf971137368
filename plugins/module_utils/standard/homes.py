# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the stored addresses of a standard space live (its *homes* on the
broker pool): the ledger's homes, ``model.placement`` over the pool, the
plan changes it refuses, the drains and the brokers a drain releases.
No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement as _placement
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as _validation
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
