# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of an address request, the same for every backend (brokered,
standard, kubernetes): which names an ``absent`` list and ``prune`` delete,
the subscription and orphan rules, the quota order, and the refusal to delete
an address that holds messages. Pure Python: no I/O, no Ansible.

Each backend reads what it owns and what is live in its own way, then calls
``address_request`` with plain addresses; what it returns (or raises) is the
same for all three."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as _validation
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import address_name_errors

# the fields Artemis applies per address (address settings); a subscription,
# a queue on its topic's address, cannot carry them
SETTINGS_FIELDS = ("message_ttl", "message_redelivery", "deadletter", "expiry")


def absent_errors(absent, present):
    """Every bad name in ``absent``, and every name listed both ways."""
    names = set(a.get("address") for a in present if isinstance(a, dict))
    errs = []
    for i, name in enumerate(absent):
        errs.extend(address_name_errors(name, "absent[%d]" % i))
        if name in names:
            errs.append("absent[%d]: %r is listed both as present and as absent" % (i, name))
    return errs


def deletes_of(present, absent, owned, prune):
    """The owned names the request deletes: those listed ``absent`` and, with
    ``prune``, the owned ones not listed at all. Never a name not owned."""
    names = set(a.get("address") for a in present if isinstance(a, dict))
    absent_set = set(absent)
    deletes = [n for n in sorted(absent_set) if n in owned]
    if prune:
        deletes.extend(n for n in sorted(owned) if n not in names and n not in absent_set)
    return deletes


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


def quota_order(present, owned, deletes):
    """The addresses of the space after the change, for the quota: the listed
    ones in task order (so ``positions`` index them), then the owned ones that
    stay unlisted. The placement accounts the ones that keep their home (owned,
    same plan) first, so only new addresses and plan changes can fail."""
    listed = set(a["address"] for a in present)
    gone = set(deletes)
    return list(present) + [owned[n] for n in sorted(owned) if n not in listed and n not in gone]


def held_message(name, address_type, count):
    """The refusal to delete an address that holds messages (one wording)."""
    where = " in its subscriptions" if address_type == "topic" else ""
    return ("address %r (%s) holds %d message(s)%s; set force: true to delete it anyway"
            % (name, address_type, count, where))


def address_request(space, catalogue, present, absent, owned, prune=False, positions=None, current=None,
                    check_quota=True, quota_basis=None, subscription_settings=False):
    """Check an address request of ``space`` before anything is changed.

    ``owned``: the plain addresses the collection owns now; ``current``: what
    exists now for the validation of immutable fields and references (a
    callable ``current(deletes)`` or a dict; default: ``owned`` minus the
    deletes); ``quota_basis``: the addresses the quota counts besides the
    listed ones (default: ``owned``; a cluster counts every Address of the
    space); ``subscription_settings``: a subscription may carry settings of
    its own (EnMasse's operator on a cluster takes them for standard spaces;
    on hosts Artemis cannot). Raises a ServiceError with every violation at
    once; returns
    ``(deletes, warnings)``."""
    errs = absent_errors(absent, present)
    deletes = deletes_of(present, absent, owned, prune)
    gone = set(deletes)
    if callable(current):
        current = current(gone)
    elif current is None:
        current = dict((n, a) for n, a in owned.items() if n not in gone)
    errs.extend(_validation.validate_addresses(space, present, catalogue, current=current, check_quota=False,
                                               positions=positions))
    if not subscription_settings:
        errs.extend(subscription_setting_errors(present, positions, space.get("type") or "brokered"))
    errs.extend(orphan_subscription_errors(deletes, owned))
    warnings = []
    if not errs and check_quota:
        basis = owned if quota_basis is None else quota_basis
        basis = dict((n, a) for n, a in basis.items() if n not in gone)
        quota_errs, warnings = _validation.quota_check(
            space, catalogue.address_space_plan(space["plan"]), quota_order(present, basis, deletes), catalogue,
            owned=basis, positions=positions)
        errs.extend(quota_errs)
    if errs:
        raise ServiceError(errs)
    return deletes, warnings


# ------------------------------------------------------------ address space

SPACE_RECORD_KEYS = ("name", "type", "plan", "authentication_service")


def space_record(space, **extra):
    """What a ledger records of an address space (and ``extra``, e.g. the
    standard space's listener port)."""
    out = dict((k, copy.deepcopy(space.get(k))) for k in SPACE_RECORD_KEYS if space.get(k) is not None)
    out.update(extra)
    return out


def type_change_error(old_type, new_type):
    return ("address_space.type: %r cannot change (it is %r); type is immutable: delete the "
            "address space and create it again" % (new_type, old_type))


def space_request(desired, catalogue, old, owned, current=None):
    """Check an address space request before anything is changed: the space
    itself, its type (immutable) and, on a plan change, every owned address
    against the new plan (``current``: what exists now, default ``owned``;
    a callable is called only then, after the space itself passed).
    Raises a ServiceError with every violation."""
    errs = _validation.validate_address_space(desired, catalogue)
    old = old or {}
    if old.get("type") and old["type"] != desired.get("type"):
        errs.append(type_change_error(old["type"], desired.get("type")))
    if errs:
        raise ServiceError(errs)
    if old.get("plan") and old["plan"] != desired["plan"] and owned:
        listed = [owned[n] for n in sorted(owned)]
        if callable(current):
            current = current()
        perrs = _validation.validate_addresses(desired, listed, catalogue,
                                               current=dict(owned) if current is None else current)
        if perrs:
            raise ServiceError(["plan change %r -> %r refused: %s" % (old["plan"], desired["plan"], e)
                                for e in perrs])
