# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of address spaces, addresses and users against the plan catalogue.

Pure Python, no I/O: every function returns *every* violation at once, each
naming the field path, the offending value and the rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement as _placement
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as _plans
from ansible_collections.enmasse.messaging.plugins.module_utils.model import users as _users
from ansible_collections.enmasse.messaging.plugins.module_utils.model.documents import with_defaults
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import (
    fmt as _fmt, kube_name_errors, space_name_errors, username_errors, address_name_errors,
    router_policy_name_errors)
from ansible_collections.enmasse.messaging.plugins.module_utils.model import types as _types

SPACE_TYPES = ("standard", "brokered")
AUTH_SERVICE_TYPES = ("none", "standard", "external")
USER_AUTH_TYPES = _users.ENMASSE_AUTH_TYPES
USER_OPERATIONS = _users.OPERATIONS

SPACE_KEYS = ("name", "type", "plan", "authentication_service", "endpoints",
              "addresses", "state")
ADDRESS_KEYS = ("address", "type", "plan", "topic", "deadletter", "expiry",
                "message_ttl", "message_redelivery", "subscription", "name",
                "state")
# fields that can never change once an address exists
IMMUTABLE_ADDRESS_FIELDS = ("type", "topic", "subscription.max_consumers")
# types that store messages on a broker and accept broker-side settings
STORED_TYPES = ("queue", "topic", "subscription", "deadletter")
# types that may name a deadletter / expiry address
REFERENCE_TYPES = ("queue", "topic", "subscription")
# types that may carry message_redelivery (EnMasse's CRD allows it on dead
# letter addresses too)
SETTINGS_TYPES = ("queue", "topic", "subscription", "deadletter")
# types that may carry message_ttl: EnMasse's docs (address TTL restriction:
# "Applies to address types queue and topic only"), both space types
TTL_TYPES = ("queue", "topic")


def validate_address_space(space, catalogue, field="address_space"):
    errs = []
    if not isinstance(space, dict):
        return ["%s: %s must be a mapping" % (field, _fmt(space))]
    errs.extend(_types.unknown_key_errors(list(space), SPACE_KEYS, field))
    errs.extend(space_name_errors(space.get("name"), field + ".name"))
    stype = space.get("type")
    if stype not in SPACE_TYPES:
        errs.append("%s.type: %s must be one of %s" % (field, _fmt(stype), ", ".join(SPACE_TYPES)))
    pname = space.get("plan")
    plan = catalogue.address_space_plan(pname) if isinstance(pname, str) else None
    if not isinstance(pname, str) or not pname:
        errs.append("%s.plan: %s is required and must name an address space plan" % (field, _fmt(pname)))
    elif plan is None:
        errs.append("%s.plan: %s is not a known address space plan (known: %s)"
                    % (field, _fmt(pname), ", ".join(catalogue.address_space_plan_names())))
    elif stype in SPACE_TYPES and plan.get("address_space_type") != stype:
        errs.append("%s.plan: %s is a plan for %s address spaces, not %s"
                    % (field, _fmt(pname), plan.get("address_space_type"), stype))
    auth = space.get("authentication_service")
    if auth is not None:
        if not isinstance(auth, dict):
            errs.append("%s.authentication_service: %s must be a mapping with name and type" % (field, _fmt(auth)))
        elif auth.get("type") is not None and auth.get("type") not in AUTH_SERVICE_TYPES:
            errs.append("%s.authentication_service.type: %s must be one of %s"
                        % (field, _fmt(auth.get("type")), ", ".join(AUTH_SERVICE_TYPES)))
    eps = space.get("endpoints")
    if eps is not None:
        if not isinstance(eps, list):
            errs.append("%s.endpoints: %s must be a list" % (field, _fmt(eps)))
        else:
            for i, ep in enumerate(eps):
                if not isinstance(ep, dict) or not ep.get("name"):
                    errs.append("%s.endpoints[%d]: %s must be a mapping with a name" % (field, i, _fmt(ep)))
    return errs


def _addr_field(i, a, key):
    """``<where in the task>(<address>).<key>``; ``i`` is the index in
    ``addresses`` or the position ``inputs.address_inputs`` gives
    (``addresses[3]``, ``definition.items[1]``)."""
    where = i if isinstance(i, str) else "addresses[%d]" % i
    label = a.get("address") if isinstance(a, dict) and isinstance(a.get("address"), str) else None
    if label and len(label) > 60:
        label = label[:60] + "..."
    if label:
        return "%s(%s).%s" % (where, label, key)
    return "%s.%s" % (where, key)


def validate_addresses(space, addresses, catalogue, current=None, check_quota=True, positions=None):
    """Every violation in ``addresses`` (a list of plain dicts) for ``space``.

    ``current`` maps address -> the address as it exists now (plain dict), to
    refuse changes to immutable fields and to resolve references (topic,
    deadletter, expiry) to addresses that exist but are not in the list.
    ``positions[i]``: where ``addresses[i]`` is in the user's task (when
    the task also lists addresses to delete), for the messages.
    """
    errs = []
    current = current or {}
    stype = space.get("type")
    splan = catalogue.address_space_plan(space.get("plan"))
    if splan is None:
        return [space_plan_missing(space, catalogue)]
    if not isinstance(addresses, list):
        return ["addresses: %s must be a list" % _fmt(addresses)]

    by_name = {}
    for i, a in enumerate(addresses):
        if isinstance(a, dict) and isinstance(a.get("address"), str):
            if a["address"] in by_name:
                errs.append("%s: %s is listed twice (also at addresses[%d]); addresses must be "
                            "unique within the address space"
                            % (_addr_field(i, a, "address"), _fmt(a["address"]), by_name[a["address"]][0]))
            else:
                by_name[a["address"]] = (i, a)

    def type_of(name):
        if name in by_name:
            return by_name[name][1].get("type")
        if name in current:
            return current[name].get("type")
        return None

    for n, a in enumerate(addresses):
        i = positions[n] if positions else n
        if not isinstance(a, dict):
            errs.append("addresses[%d]: %s must be a mapping" % (i, _fmt(a)))
            continue

        def f(k, i=i, a=a):
            return _addr_field(i, a, k)

        unknown = _types.unknown_key_errors(list(a), ADDRESS_KEYS + ("address_space",), _addr_field(i, a, "")[:-1])
        # the type of every field first: the rules below only see well-typed values
        typed = _types.address_type_errors(a, f)
        if unknown or typed:
            errs.extend(unknown + typed)
            continue
        errs.extend(address_name_errors(a.get("address"), f("address")))
        if stype == "standard":
            errs.extend(router_policy_name_errors(a["address"], f("address")))
        if a.get("name") is not None:
            errs.extend(kube_name_errors(a["name"], f("name"), space.get("name")))
        plan, plan_errs = _type_and_plan_errors(a, f, stype, splan, catalogue)
        errs.extend(plan_errs)
        errs.extend(_reference_errors(a, f, type_of))
        errs.extend(_settings_errors(a, f, plan))
        errs.extend(_immutable_errors(a, f, current))

    if check_quota and not errs:
        msgs, unused = quota_check(space, splan, addresses, catalogue, positions=positions)
        errs.extend(msgs)
    return errs


def _type_and_plan_errors(a, f, stype, splan, catalogue):
    """(the address plan or None, the type and plan messages)."""
    errs = []
    allowed_types = _plans.ADDRESS_TYPES.get(stype, ())
    atype = a.get("type")
    type_ok = atype in allowed_types
    if not type_ok:
        errs.append("%s: %s must be one of %s for a %s address space"
                    % (f("type"), _fmt(atype), ", ".join(allowed_types), stype))
    pname = a.get("plan")
    plan = catalogue.address_plan(pname) if isinstance(pname, str) else None
    if not isinstance(pname, str) or not pname:
        errs.append("%s: %s is required and must name an address plan" % (f("plan"), _fmt(pname)))
    elif plan is None:
        errs.append("%s: %s is not a known address plan" % (f("plan"), _fmt(pname)))
    else:
        if type_ok and plan.get("address_type") != atype:
            errs.append("%s: %s is a plan for %s addresses, not %s"
                        % (f("plan"), _fmt(pname), plan.get("address_type"), atype))
        if pname not in (splan.get("address_plans") or []):
            errs.append("%s: %s is not allowed by address space plan %s (allowed: %s)"
                        % (f("plan"), _fmt(pname), _fmt(splan.get("name")),
                           ", ".join(splan.get("address_plans") or [])))
    return plan, errs


def _reference_errors(a, f, type_of):
    """topic (subscriptions only), deadletter and expiry: what they name."""
    errs = []
    atype = a.get("type")
    topic = a.get("topic")
    if atype == "subscription":
        if not topic:
            errs.append("%s: a subscription needs the topic it subscribes to" % f("topic"))
        elif type_of(topic) != "topic":
            errs.append("%s: %s must name an address of type topic in this address space%s"
                        % (f("topic"), _fmt(topic),
                           "" if type_of(topic) is None else " (it is a %s)" % type_of(topic)))
    elif topic is not None:
        errs.append("%s: %s is only allowed on subscription addresses" % (f("topic"), _fmt(topic)))
    for key in ("deadletter", "expiry"):
        ref = a.get(key)
        if ref is None:
            continue
        if atype not in REFERENCE_TYPES:
            errs.append("%s: %s is only allowed on %s addresses" % (f(key), _fmt(ref), ", ".join(REFERENCE_TYPES)))
        elif type_of(ref) != "deadletter":
            errs.append("%s: %s must name an address of type deadletter in this address space%s"
                        % (f(key), _fmt(ref), "" if type_of(ref) is None else " (it is a %s)" % type_of(ref)))
    return errs


def _settings_errors(a, f, plan):
    """message_ttl, message_redelivery, subscription: their types and bounds
    are checked before (types.address_type_errors); here where they apply."""
    errs = []
    atype = a.get("type")
    topic = a.get("topic")
    for key, types in (("message_ttl", TTL_TYPES), ("message_redelivery", SETTINGS_TYPES)):
        if a.get(key) is not None and atype not in types:
            hint = " (a subscription takes its topic's: set it on topic %s)" % _fmt(topic) \
                if atype == "subscription" and topic else ""
            errs.append("%s: %s is only allowed on %s addresses%s" % (f(key), _fmt(a[key]), ", ".join(types), hint))
    if plan is not None and isinstance(a.get("message_ttl"), dict):
        conflict = _plans.ttl_conflict(a["message_ttl"], plan.get("message_ttl"))
        if conflict:
            errs.append("%s: %s" % (f("message_ttl"), conflict))
    sub = a.get("subscription")
    if sub is not None and atype != "subscription":
        errs.append("%s: %s is only allowed on subscription addresses" % (f("subscription"), _fmt(sub)))
    return errs


def _immutable_errors(a, f, current):
    """Changes to fields that never change once the address exists."""
    errs = []
    cur = current.get(a.get("address")) if isinstance(a.get("address"), str) else None
    if cur is None:
        return errs
    want, have = with_defaults(a), with_defaults(cur)
    for key in IMMUTABLE_ADDRESS_FIELDS:
        wv, hv = _get_path(want, key), _get_path(have, key)
        if key == "type" and wv != hv:
            errs.append("%s: %s cannot change (it is %s); type is immutable: delete the "
                        "address and create it again" % (f("type"), _fmt(wv), _fmt(hv)))
        elif key != "type" and _get_path(have, "type") == "subscription" and wv != hv:
            errs.append("%s: %s cannot change (it is %s); %s is immutable"
                        % (f(key), _fmt(wv), _fmt(hv), key))
    return errs


def space_plan_missing(space, catalogue):
    """The message when an address space's plan is not in the catalogue."""
    return ("address_space(%s).plan: %s is not in the plan catalogue (known: %s); create it with "
            "enmasse.messaging.address_space_plan or move the address space to a known plan"
            % (space.get("name"), _fmt(space.get("plan")), ", ".join(catalogue.address_space_plan_names())))


def _get_path(d, path):
    cur = d
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def placement_items(addresses, catalogue, current_placement=None, current_plans=None):
    """PlacementItems for plain addresses, with their plan's credits."""
    current_placement = current_placement or {}
    current_plans = current_plans or {}
    items = []
    for a in addresses:
        plan = catalogue.address_plan(a.get("plan")) or {}
        res = plan.get("resources") or {}
        items.append(_placement.PlacementItem(
            a["address"], res.get("router", 0.0), res.get("broker", 0.0),
            plan.get("partitions", 1), a.get("plan"),
            current_placement.get(a["address"]), current_plans.get(a["address"]),
            a.get("topic") if a.get("type") == "subscription" else None))
    return items


def quota_check(space, space_plan, addresses, catalogue, owned=None, positions=None):
    """Quota of ``space_plan`` for ``addresses`` (the space's addresses after
    the change). ``owned``: name -> the address as it exists now; an address
    that exists with the same plan adds nothing and never fails, even when the
    space is already over quota (a plan changed since). Returns (errors for
    the addresses that add credits and do not fit, each named by its index in
    the task (``positions``) and its name; warnings when the space is over
    quota without them)."""
    owned = owned or {}
    limits = space_plan.get("resource_limits") or {}
    kept = dict((n, ["broker"]) for n, a in owned.items() if isinstance(a, dict))
    items = placement_items(addresses, catalogue, current_placement=kept,
                            current_plans=dict((n, a.get("plan")) for n, a in owned.items() if isinstance(a, dict)))
    index = {}
    for n, a in enumerate(addresses):
        index.setdefault(a["address"], positions[n] if positions and n < len(positions) else n)
    msgs, res = _placement.quota_errors(space.get("name"), space_plan.get("name"), limits, items,
                                        label=lambda name: _addr_field(index[name], {"address": name}, "")[:-1])
    return msgs, _placement.over_quota_warnings(space.get("name"), space_plan.get("name"), limits, res)


def validate_user(user, field="user"):
    """An EnMasse MessagingUser spec in EnMasse's vocabulary (every
    authentication type EnMasse has); the authorization rules are
    model/users.py's, the one implementation the messaging_user module uses."""
    if not isinstance(user, dict):
        return ["%s: %s must be a mapping" % (field, _fmt(user))]
    errs = list(username_errors(user.get("username"), field + ".username"))
    auth = user.get("authentication") or {}
    atype = auth.get("type") if isinstance(auth, dict) else auth
    if atype not in USER_AUTH_TYPES:
        errs.append("%s.authentication.type: %s must be one of %s"
                    % (field, _fmt(atype), ", ".join(USER_AUTH_TYPES)))
    return errs + _users.authorization_errors(user.get("authorization") or [], field + ".authorization")


def check(errors):
    """Raise ValidationError when ``errors`` is not empty."""
    if errors:
        raise ValidationError(errors)
