# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan catalogue: address space plans and address plans, as data.

The default catalogue mirrors EnMasse's example plans. Users extend or override
it with their own plans (``Catalogue.from_data``). This is the only place that
knows what a plan costs; modules, roles and the Spark capacity planner all ask
it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.enmasse.messaging.plugins.module_utils import errors as _errors

STANDARD = "standard"
BROKERED = "brokered"

_LIMITS_KEYS = ("router", "broker", "aggregate")
_RESOURCE_KEYS = ("router", "broker")


def _ap(name, space_type, address_type, router=0.0, broker=0.0, partitions=1,
        message_ttl=None, message_redelivery=None, display=None):
    plan = {
        "name": name,
        "address_space_type": space_type,
        "address_type": address_type,
        "display_name": display or name,
        "resources": {"router": router, "broker": broker},
        "partitions": partitions,
    }
    if message_ttl:
        plan["message_ttl"] = message_ttl
    if message_redelivery:
        plan["message_redelivery"] = message_redelivery
    return plan


DEFAULT_ADDRESS_PLANS = [
    # standard space
    _ap("standard-small-anycast", STANDARD, "anycast", router=0.001),
    _ap("standard-medium-anycast", STANDARD, "anycast", router=0.01),
    _ap("standard-small-multicast", STANDARD, "multicast", router=0.001),
    _ap("standard-medium-multicast", STANDARD, "multicast", router=0.01),
    _ap("standard-small-queue", STANDARD, "queue", router=0.001, broker=0.01),
    _ap("standard-medium-queue", STANDARD, "queue", router=0.01, broker=0.1),
    _ap("standard-large-queue", STANDARD, "queue", router=0.1, broker=1.0),
    _ap("standard-xlarge-queue", STANDARD, "queue", router=0.2, broker=2.0),
    _ap("standard-small-partitioned-queue", STANDARD, "queue", router=0.001,
        broker=0.01, partitions=2),
    _ap("standard-medium-partitioned-queue", STANDARD, "queue", router=0.01,
        broker=0.1, partitions=3),
    _ap("standard-small-topic", STANDARD, "topic", router=0.001, broker=0.01),
    _ap("standard-medium-topic", STANDARD, "topic", router=0.01, broker=0.1),
    _ap("standard-large-topic", STANDARD, "topic", router=0.1, broker=1.0),
    _ap("standard-small-subscription", STANDARD, "subscription", router=0.001,
        broker=0.01),
    _ap("standard-medium-subscription", STANDARD, "subscription", router=0.01,
        broker=0.1),
    _ap("standard-deadletter", STANDARD, "deadletter", router=0.001, broker=0.01),
    # brokered space
    _ap("brokered-queue", BROKERED, "queue", broker=0.01),
    _ap("brokered-topic", BROKERED, "topic", broker=0.01),
    _ap("brokered-subscription", BROKERED, "subscription", broker=0.01),
    _ap("brokered-deadletter", BROKERED, "deadletter", broker=0.01),
]

_STANDARD_ADDRESS_PLANS = [p["name"] for p in DEFAULT_ADDRESS_PLANS
                           if p["address_space_type"] == STANDARD]
_BROKERED_ADDRESS_PLANS = [p["name"] for p in DEFAULT_ADDRESS_PLANS
                           if p["address_space_type"] == BROKERED]


def _sp(name, space_type, router, broker, aggregate, address_plans):
    return {
        "name": name,
        "address_space_type": space_type,
        "display_name": name,
        "resource_limits": {"router": router, "broker": broker,
                            "aggregate": aggregate},
        "address_plans": list(address_plans),
    }


DEFAULT_ADDRESS_SPACE_PLANS = [
    _sp("standard-small", STANDARD, 1.0, 2.0, 2.0, _STANDARD_ADDRESS_PLANS),
    _sp("standard-medium", STANDARD, 2.0, 4.0, 6.0, _STANDARD_ADDRESS_PLANS),
    _sp("standard-large", STANDARD, 4.0, 10.0, 14.0, _STANDARD_ADDRESS_PLANS),
    _sp("standard-unlimited", STANDARD, 100.0, 100.0, 200.0,
        _STANDARD_ADDRESS_PLANS),
    _sp("brokered-single-broker", BROKERED, 0.0, 1.9, 1.9,
        _BROKERED_ADDRESS_PLANS),
]

ADDRESS_TYPES = {
    STANDARD: ("anycast", "multicast", "queue", "topic", "subscription",
               "deadletter"),
    # 'subscription' in a brokered space is a pre-declared durable subscription
    # (a MULTICAST queue on the topic's address); see docs/model.md.
    BROKERED: ("queue", "topic", "subscription", "deadletter"),
}


PlanError = _errors.PlanError


class Catalogue(object):
    """Address space plans and address plans, looked up by name."""

    def __init__(self, address_space_plans, address_plans):
        self._space_plans = dict((p["name"], p) for p in address_space_plans)
        self._address_plans = dict((p["name"], p) for p in address_plans)

    @classmethod
    def default(cls):
        return cls(copy.deepcopy(DEFAULT_ADDRESS_SPACE_PLANS),
                   copy.deepcopy(DEFAULT_ADDRESS_PLANS))

    @classmethod
    def from_data(cls, extra=None):
        """Default catalogue with ``extra`` plans merged over it.

        ``extra`` is ``{"address_space_plans": [...], "address_plans": [...]}``
        (snake_case, or EnMasse ``AddressSpacePlan``/``AddressPlan`` documents
        in a list under either key). A plan with the name of a default plan
        replaces it.
        """
        cat = cls.default()
        if not extra:
            return cat
        errors = []
        for i, plan in enumerate(extra.get("address_space_plans") or []):
            p = normalize_space_plan(plan)
            errors.extend(validate_space_plan(p, "plans.address_space_plans[%d]" % i))
            cat._space_plans[p.get("name")] = p
        for i, plan in enumerate(extra.get("address_plans") or []):
            p = normalize_address_plan(plan)
            errors.extend(validate_address_plan(p, "plans.address_plans[%d]" % i))
            cat._address_plans[p.get("name")] = p
        if errors:
            raise PlanError("; ".join(errors))
        return cat

    def address_space_plan(self, name):
        return self._space_plans.get(name)

    def address_plan(self, name):
        return self._address_plans.get(name)

    def address_space_plan_names(self):
        return sorted(self._space_plans)

    def address_plan_names(self):
        return sorted(self._address_plans)

    def as_dict(self):
        return {"address_space_plans": [self._space_plans[k] for k in sorted(self._space_plans)],
                "address_plans": [self._address_plans[k] for k in sorted(self._address_plans)]}


def _num(v, default=0.0):
    if v is None:
        return default
    return v


def normalize_space_plan(doc):
    """Plain dict from a snake_case plan or an EnMasse AddressSpacePlan."""
    if isinstance(doc, dict) and doc.get("kind") == "AddressSpacePlan":
        spec = doc.get("spec") or {}
        limits = spec.get("resourceLimits") or {}
        return {
            "name": (doc.get("metadata") or {}).get("name"),
            "address_space_type": spec.get("addressSpaceType"),
            "display_name": spec.get("displayName") or (doc.get("metadata") or {}).get("name"),
            "resource_limits": dict((k, limits.get(k)) for k in _LIMITS_KEYS if k in limits),
            "address_plans": list(spec.get("addressPlans") or []),
        }
    p = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    p.setdefault("display_name", p.get("name"))
    p.setdefault("resource_limits", {})
    p.setdefault("address_plans", [])
    return p


def normalize_address_plan(doc):
    """Plain dict from a snake_case plan or an EnMasse AddressPlan."""
    if isinstance(doc, dict) and doc.get("kind") == "AddressPlan":
        spec = doc.get("spec") or {}
        res = spec.get("resources") or {}
        plan = {
            "name": (doc.get("metadata") or {}).get("name"),
            "address_space_type": spec.get("addressSpaceType"),
            "address_type": spec.get("addressType"),
            "display_name": spec.get("displayName") or (doc.get("metadata") or {}).get("name"),
            "resources": dict((k, res.get(k)) for k in _RESOURCE_KEYS if k in res),
            "partitions": spec.get("partitions", 1),
        }
        if spec.get("messageTtl"):
            plan["message_ttl"] = dict(spec["messageTtl"])
        if spec.get("messageRedelivery"):
            r = spec["messageRedelivery"]
            plan["message_redelivery"] = _redelivery_from_camel(r)
        return plan
    p = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    p.setdefault("display_name", p.get("name"))
    p.setdefault("resources", {})
    p.setdefault("partitions", 1)
    return p


_REDELIVERY_CAMEL = {
    "maximumDeliveryAttempts": "maximum_delivery_attempts",
    "redeliveryDelay": "redelivery_delay",
    "redeliveryDelayMultiplier": "redelivery_delay_multiplier",
    "maximumDeliveryDelay": "maximum_delivery_delay",
}
REDELIVERY_KEYS = tuple(_REDELIVERY_CAMEL.values())
TTL_KEYS = ("minimum", "maximum")


def _redelivery_from_camel(r):
    out = {}
    for k, v in (r or {}).items():
        out[_REDELIVERY_CAMEL.get(k, k)] = v
    return out


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def validate_space_plan(p, where):
    errors = []
    if not p.get("name"):
        errors.append("%s.name: %r is required and must be a non-empty string" % (where, p.get("name")))
    if p.get("address_space_type") not in ADDRESS_TYPES:
        errors.append("%s.address_space_type: %r must be one of %s"
                      % (where, p.get("address_space_type"), ", ".join(sorted(ADDRESS_TYPES))))
    errors.extend(_credit_errors(p, "resource_limits", _LIMITS_KEYS, where))
    if not isinstance(p.get("address_plans"), list):
        errors.append("%s.address_plans: %r must be a list of address plan names"
                      % (where, p.get("address_plans")))
    return errors


def _credit_errors(p, field, keys, where):
    """Violations of the credits mapping ``p[field]`` (known resources ``keys``, numbers >= 0)."""
    errors = []
    for k, v in (p.get(field) or {}).items():
        if k not in keys:
            errors.append("%s.%s.%s: unknown resource, must be one of %s" % (where, field, k, ", ".join(keys)))
        elif not _is_number(v) or v < 0:
            errors.append("%s.%s.%s: %r must be a number >= 0" % (where, field, k, v))
    return errors


def validate_address_plan(p, where):
    errors = []
    if not p.get("name"):
        errors.append("%s.name: %r is required and must be a non-empty string" % (where, p.get("name")))
    stype = p.get("address_space_type")
    if stype not in ADDRESS_TYPES:
        errors.append("%s.address_space_type: %r must be one of %s"
                      % (where, stype, ", ".join(sorted(ADDRESS_TYPES))))
    elif p.get("address_type") not in ADDRESS_TYPES[stype]:
        errors.append("%s.address_type: %r must be one of %s for a %s address space"
                      % (where, p.get("address_type"), ", ".join(ADDRESS_TYPES[stype]), stype))
    errors.extend(_credit_errors(p, "resources", _RESOURCE_KEYS, where))
    parts = p.get("partitions", 1)
    if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
        errors.append("%s.partitions: %r must be an integer >= 1" % (where, parts))
    errors.extend(validate_ttl(p.get("message_ttl"), where + ".message_ttl"))
    errors.extend(validate_redelivery(p.get("message_redelivery"), where + ".message_redelivery"))
    return errors


def validate_ttl(ttl, where):
    if ttl is None:
        return []
    if not isinstance(ttl, dict):
        return ["%s: %r must be a mapping with minimum and/or maximum (milliseconds)" % (where, ttl)]
    errors = []
    for k, v in ttl.items():
        if k not in TTL_KEYS:
            errors.append("%s.%s: unknown key, must be one of %s" % (where, k, ", ".join(TTL_KEYS)))
        elif not isinstance(v, int) or isinstance(v, bool) or v < 0:
            errors.append("%s.%s: %r must be an integer number of milliseconds >= 0" % (where, k, v))
    lo, hi = ttl.get("minimum"), ttl.get("maximum")
    if _is_number(lo) and _is_number(hi) and lo > hi:
        errors.append("%s: minimum %r must not be greater than maximum %r" % (where, lo, hi))
    return errors


def validate_redelivery(r, where):
    if r is None:
        return []
    if not isinstance(r, dict):
        return ["%s: %r must be a mapping with keys %s" % (where, r, ", ".join(REDELIVERY_KEYS))]
    errors = []
    for k, v in r.items():
        if k not in REDELIVERY_KEYS:
            errors.append("%s.%s: unknown key, must be one of %s" % (where, k, ", ".join(REDELIVERY_KEYS)))
        elif k == "redelivery_delay_multiplier":
            if not _is_number(v) or v < 1:
                errors.append("%s.%s: %r must be a number >= 1" % (where, k, v))
        elif k == "maximum_delivery_attempts":
            if not isinstance(v, int) or isinstance(v, bool) or v < -1 or v == 0:
                errors.append("%s.%s: %r must be an integer >= 1 (or -1 for unlimited)" % (where, k, v))
        elif not isinstance(v, int) or isinstance(v, bool) or v < 0:
            errors.append("%s.%s: %r must be an integer number of milliseconds >= 0" % (where, k, v))
    return errors


def effective_settings(address, address_plan):
    """Per-address broker settings: plan values, overridden by the address.

    Returns a dict with only the keys that are set: ``message_ttl`` (dict),
    ``message_redelivery`` (dict), ``deadletter``, ``expiry``.
    """
    out = {}
    ttl = dict((address_plan or {}).get("message_ttl") or {})
    ttl.update(address.get("message_ttl") or {})
    if ttl:
        out["message_ttl"] = ttl
    red = dict((address_plan or {}).get("message_redelivery") or {})
    red.update(address.get("message_redelivery") or {})
    if red:
        out["message_redelivery"] = red
    for k in ("deadletter", "expiry"):
        if address.get(k):
            out[k] = address[k]
    return out
