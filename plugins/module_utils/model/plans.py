# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan catalogue: address space plans and address plans, as data.

The default catalogue is EnMasse 0.33.1's example plans, unchanged
(``example_plans.py``), plus the collection's own additions
(``COLLECTION_PLANS``: a plan for brokered subscriptions, which EnMasse's
brokered spaces do not have). Plans managed with the ``address_plan`` and
``address_space_plan`` modules are stored on the host
(``catalogue/store.py``) and replace or extend it.

This is the only place that knows what a plan is and what it costs; modules,
roles, filters and the Spark capacity planner all ask it. Pure Python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import math
import re

from ansible_collections.enmasse.messaging.plugins.module_utils import errors as _errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model import example_plans as _examples
from ansible_collections.enmasse.messaging.plugins.module_utils.model import types as _types
from ansible_collections.enmasse.messaging.plugins.module_utils.model.documents import is_document
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plan_documents import (
    ADDRESS_PLAN_FIELDS, LIMITS_KEYS as _LIMITS_KEYS, RESOURCE_KEYS as _RESOURCE_KEYS, SPACE_PLAN_FIELDS,
    address_plan_from_document, space_plan_from_document)

STANDARD = "standard"
BROKERED = "brokered"

INFRA_KINDS = {STANDARD: "StandardInfraConfig", BROKERED: "BrokeredInfraConfig"}

ADDRESS_TYPES = {
    STANDARD: ("anycast", "multicast", "queue", "topic", "subscription",
               "deadletter"),
    # 'subscription' in a brokered space is a pre-declared durable subscription
    # (a MULTICAST queue on the topic's address); see docs/model.md.
    BROKERED: ("queue", "topic", "subscription", "deadletter"),
}
ALL_ADDRESS_TYPES = ADDRESS_TYPES[STANDARD]
# the address types each plan setting applies to (EnMasse's CRD descriptions)
TTL_TYPES = ("queue", "topic", "deadletter")
REDELIVERY_TYPES = ("queue", "subscription", "deadletter")


# Kubernetes object names (DNS-1123 subdomain): plans are named like CRs
PLAN_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
PLAN_NAME_MAX = 253

REDELIVERY_KEYS = _types.REDELIVERY_KEYS
TTL_KEYS = _types.TTL_KEYS

PlanError = _errors.PlanError


# --------------------------------------------------------------- plain form

def _plain(obj, fields, where):
    if not isinstance(obj, dict):
        return {}, ["%s: %r must be a mapping (a plain plan or an EnMasse document)" % (where, obj)]
    errs = _types.unknown_key_errors(list(obj), fields, where)
    out = dict((k, copy.deepcopy(v)) for k, v in obj.items() if k in fields and v is not None)
    return out, errs


def read_address_plan(obj, where="address_plan"):
    """(plain address plan with defaults, errors) from a plain mapping or an
    EnMasse AddressPlan document; errors include every rule it breaks."""
    if is_document(obj):
        plan, errs = address_plan_from_document(obj, where)
    else:
        plan, errs = _plain(obj, ADDRESS_PLAN_FIELDS, where)
    if errs:
        return plan, errs
    plan = address_plan_defaults(plan)
    return plan, validate_address_plan(plan, where)


def read_space_plan(obj, where="address_space_plan"):
    """(plain address space plan with defaults, errors), as ``read_address_plan``."""
    if is_document(obj):
        plan, errs = space_plan_from_document(obj, where)
    else:
        plan, errs = _plain(obj, SPACE_PLAN_FIELDS, where)
    if errs:
        return plan, errs
    plan = space_plan_defaults(plan)
    return plan, validate_space_plan(plan, where)


def address_plan_defaults(plan):
    p = dict((k, v) for k, v in plan.items() if v is not None)
    if isinstance(p.get("name"), str):
        p.setdefault("display_name", p["name"])
    p.setdefault("resources", {})
    p.setdefault("partitions", 1)
    return p


def space_plan_defaults(plan):
    p = dict((k, v) for k, v in plan.items() if v is not None)
    if isinstance(p.get("name"), str):
        p.setdefault("display_name", p["name"])
    p.setdefault("resource_limits", {})
    p.setdefault("address_plans", [])
    return p


# --------------------------------------------------------------- rules

def _is_credit(v):
    """A finite number, not a boolean."""
    return _types.is_number(v) and math.isfinite(v)


def plan_name_errors(name, where):
    if not isinstance(name, str) or not name:
        return ["%s: %r is required and must be a non-empty string" % (where, name)]
    if len(name) > PLAN_NAME_MAX or not PLAN_NAME_RE.match(name):
        return ["%s: %r must be a Kubernetes object name: at most %d lowercase letters, digits, '-' and '.', "
                "starting and ending with a letter or digit" % (where, name, PLAN_NAME_MAX)]
    return []


def _text_errors(p, where):
    errs = []
    for k in ("display_name", "short_description", "long_description", "infra_config_ref"):
        if k in p and not isinstance(p[k], str):
            errs.append("%s.%s: %r must be a string" % (where, k, p[k]))
    if "display_order" in p and not _types.is_int(p["display_order"]):
        errs.append("%s.display_order: %r must be an integer" % (where, p["display_order"]))
    return errs


def validate_space_plan(p, where):
    errors = plan_name_errors(p.get("name"), where + ".name")
    if p.get("address_space_type") not in ADDRESS_TYPES:
        errors.append("%s.address_space_type: %r must be one of %s"
                      % (where, p.get("address_space_type"), ", ".join(sorted(ADDRESS_TYPES))))
    errors.extend(_credit_errors(p, "resource_limits", _LIMITS_KEYS, where))
    plans = p.get("address_plans")
    if not isinstance(plans, list) or not all(isinstance(n, str) and n for n in plans):
        errors.append("%s.address_plans: %r must be a list of address plan names" % (where, plans))
    elif len(set(plans)) != len(plans):
        errors.append("%s.address_plans: %s listed more than once"
                      % (where, ", ".join(sorted(set(n for n in plans if plans.count(n) > 1)))))
    errors.extend(_text_errors(p, where))
    return errors


def _credit_errors(p, field, keys, where):
    """Violations of the credits mapping ``p[field]`` (known resources ``keys``, numbers >= 0)."""
    value = p.get(field)
    if not isinstance(value, dict):
        return ["%s.%s: %r must be a mapping of %s to credits" % (where, field, value, ", ".join(keys))]
    errors = []
    for k, v in value.items():
        if k not in keys:
            errors.append("%s.%s.%s: unknown resource, must be one of %s" % (where, field, k, ", ".join(keys)))
        elif not _is_credit(v) or v < 0:
            errors.append("%s.%s.%s: %r must be a number >= 0" % (where, field, k, v))
    return errors


def validate_address_plan(p, where):
    errors = plan_name_errors(p.get("name"), where + ".name")
    atype = p.get("address_type")
    stype = p.get("address_space_type")
    if atype not in ALL_ADDRESS_TYPES:
        errors.append("%s.address_type: %r must be one of %s" % (where, atype, ", ".join(ALL_ADDRESS_TYPES)))
        atype = None
    if stype is not None:
        if stype not in ADDRESS_TYPES:
            errors.append("%s.address_space_type: %r must be one of %s (or unset: the address space plans "
                          "that list the plan decide)" % (where, stype, ", ".join(sorted(ADDRESS_TYPES))))
        elif atype and atype not in ADDRESS_TYPES[stype]:
            errors.append("%s.address_type: %r must be one of %s for a %s address space"
                          % (where, atype, ", ".join(ADDRESS_TYPES[stype]), stype))
    errors.extend(_credit_errors(p, "resources", _RESOURCE_KEYS, where))
    parts = p.get("partitions", 1)
    if not _types.is_int(parts) or parts < 1 or parts > 1000:
        errors.append("%s.partitions: %r must be an integer from 1 to 1000" % (where, parts))
    if p.get("message_ttl") is not None and atype and atype not in TTL_TYPES:
        errors.append("%s.message_ttl: applies to %s plans only, not %s" % (where, ", ".join(TTL_TYPES), atype))
    if p.get("message_redelivery") is not None and atype and atype not in REDELIVERY_TYPES:
        errors.append("%s.message_redelivery: applies to %s plans only, not %s"
                      % (where, ", ".join(REDELIVERY_TYPES), atype))
    errors.extend(validate_ttl(p.get("message_ttl"), where + ".message_ttl"))
    errors.extend(validate_redelivery(p.get("message_redelivery"), where + ".message_redelivery"))
    errors.extend(_text_errors(p, where))
    return errors


# the bounds of the settings are the model's value types (types.py)
validate_ttl = _types.ttl_errors
validate_redelivery = _types.redelivery_errors


# --------------------------------------------------------------- catalogue

def _example_catalogue():
    space_plans, address_plans, infra = [], [], {}
    for doc in _examples.EXAMPLE_DOCUMENTS:
        if doc["kind"] == "AddressSpacePlan":
            plan, unused = space_plan_from_document(doc)
            space_plans.append(space_plan_defaults(plan))
        elif doc["kind"] == "AddressPlan":
            plan, unused = address_plan_from_document(doc)
            address_plans.append(address_plan_defaults(plan))
        else:
            infra[doc["metadata"]["name"], doc["kind"]] = copy.deepcopy(doc)
    return space_plans, address_plans, infra


# The collection's additions to EnMasse's example plans (docs/plans.md): a
# brokered space here has a 'subscription' type (a durable subscription
# declared ahead of its subscriber), which EnMasse's brokered spaces lack.
COLLECTION_ADDRESS_PLANS = [
    {"name": "brokered-subscription", "address_type": "subscription", "display_name": "Brokered Subscription",
     "display_order": 0, "short_description": "Creates a durable subscription on a topic of a broker.",
     "long_description": "Creates a durable subscription on a topic of a broker, declared ahead of its "
                         "subscriber (an addition of enmasse.messaging, not an EnMasse example plan).",
     "resources": {"broker": 0.0}, "partitions": 1},
]
COLLECTION_SPACE_PLAN_ADDITIONS = {"brokered-single-broker": ["brokered-subscription"]}


def _default_plans(space_plans, address_plans, infra):
    """The examples (copied) with the collection's additions."""
    space_plans, address_plans, infra = copy.deepcopy((space_plans, address_plans, infra))
    for sp in space_plans:
        sp["address_plans"] = sp["address_plans"] + COLLECTION_SPACE_PLAN_ADDITIONS.get(sp["name"], [])
    address_plans.extend(address_plan_defaults(p) for p in COLLECTION_ADDRESS_PLANS)
    return space_plans, address_plans, infra


_EXAMPLES = _example_catalogue()
_DEFAULTS = _default_plans(*_EXAMPLES)
EXAMPLE_SPACE_PLAN_NAMES = tuple(p["name"] for p in _EXAMPLES[0])
EXAMPLE_ADDRESS_PLAN_NAMES = tuple(p["name"] for p in _EXAMPLES[1])


class Catalogue(object):
    """Address space plans, address plans and infrastructure configs, by name."""

    def __init__(self, address_space_plans, address_plans, infra_configs=None):
        self._space_plans = dict((p["name"], p) for p in address_space_plans)
        self._address_plans = dict((p["name"], p) for p in address_plans)
        self._infra = dict(infra_configs or {})

    @classmethod
    def with_default_infra(cls, address_space_plans, address_plans):
        """A catalogue of these plans with EnMasse's infrastructure configs."""
        return cls(address_space_plans, address_plans, copy.deepcopy(_DEFAULTS[2]))

    @classmethod
    def default(cls):
        """EnMasse's example plans plus the collection's additions."""
        space_plans, address_plans, infra = _DEFAULTS
        return cls(copy.deepcopy(space_plans), copy.deepcopy(address_plans), copy.deepcopy(infra))

    @classmethod
    def from_data(cls, extra=None):
        """Default catalogue with ``extra`` plans merged over it (the Spark
        job's model file, site.yml's ``enmasse_plans``).

        ``extra`` is ``{"address_space_plans": [...], "address_plans": [...]}``,
        each item a plain plan or an EnMasse document. A plan with the name of
        a default plan replaces it. Raises PlanError with every violation.
        """
        cat = cls.default()
        if not extra:
            return cat
        if not isinstance(extra, dict):
            raise PlanError("plans: %r must be a mapping with address_space_plans and address_plans" % (extra,))
        errors = []
        for k in extra:
            if k not in ("address_space_plans", "address_plans"):
                errors.extend(_types.unknown_key_errors([k], ["address_space_plans", "address_plans"], "plans"))
        for key, reader, target in (("address_space_plans", read_space_plan, cat._space_plans),
                                    ("address_plans", read_address_plan, cat._address_plans)):
            items = extra.get(key) or []
            if not isinstance(items, list):
                errors.append("plans.%s: %r must be a list" % (key, items))
                continue
            for i, item in enumerate(items):
                p, errs = reader(item, "plans.%s[%d]" % (key, i))
                errors.extend(errs)
                if not errs:
                    target[p["name"]] = p
        if not errors:
            errors = cat.integrity_errors()
        if errors:
            raise PlanError(errors)
        return cat

    def copy(self):
        return Catalogue(copy.deepcopy(list(self._space_plans.values())),
                         copy.deepcopy(list(self._address_plans.values())), copy.deepcopy(self._infra))

    def address_space_plan(self, name):
        return self._space_plans.get(name)

    def address_plan(self, name):
        return self._address_plans.get(name)

    def address_space_plan_names(self):
        return sorted(self._space_plans)

    def address_plan_names(self):
        return sorted(self._address_plans)

    def infra_config(self, name, kind):
        return self._infra.get((name, kind))

    def infra_config_names(self, kind):
        return sorted(n for (n, k) in self._infra if k == kind)

    def put_address_plan(self, plan):
        self._address_plans[plan["name"]] = plan

    def put_space_plan(self, plan):
        self._space_plans[plan["name"]] = plan

    def remove_address_plan(self, name):
        self._address_plans.pop(name, None)

    def remove_space_plan(self, name):
        self._space_plans.pop(name, None)

    def as_dict(self):
        return {"address_space_plans": [self._space_plans[k] for k in sorted(self._space_plans)],
                "address_plans": [self._address_plans[k] for k in sorted(self._address_plans)]}

    def space_types_of(self, address_plan):
        """The address space types whose plans list ``address_plan``."""
        return sorted(set(sp.get("address_space_type") for sp in self._space_plans.values()
                          if address_plan in (sp.get("address_plans") or [])))

    def integrity_errors(self, space_plans=None):
        """References between plans: every address plan an address space plan
        lists exists and fits its space type; its infra config exists."""
        errors = []
        for name in sorted(space_plans if space_plans is not None else self._space_plans):
            sp = self._space_plans.get(name)
            if sp is None:
                continue
            stype = sp.get("address_space_type")
            where = "address_space_plan(%s)" % name
            for ap_name in sp.get("address_plans") or []:
                ap = self._address_plans.get(ap_name)
                if ap is None:
                    errors.append("%s.address_plans: %r is not a known address plan" % (where, ap_name))
                elif ap.get("address_type") not in ADDRESS_TYPES.get(stype, ()):
                    errors.append("%s.address_plans: %r is a plan for %s addresses, which %s address spaces "
                                  "do not have" % (where, ap_name, ap.get("address_type"), stype))
                elif ap.get("address_space_type") not in (None, stype):
                    errors.append("%s.address_plans: %r is a plan for %s address spaces, not %s"
                                  % (where, ap_name, ap.get("address_space_type"), stype))
            ref = sp.get("infra_config_ref")
            kind = INFRA_KINDS.get(stype)
            if ref is not None and kind and self.infra_config(ref, kind) is None:
                errors.append("%s.infra_config_ref: %r is not a known %s (known: %s)"
                              % (where, ref, kind, ", ".join(self.infra_config_names(kind)) or "none"))
        return errors


# --------------------------------------------------------------- settings

def effective_ttl(address_ttl, plan_ttl):
    """EnMasse's rule: the address narrows the plan's bounds, never widens
    them (minimum = the larger minimum, maximum = the smaller maximum)."""
    out = {}
    for key, pick in (("minimum", max), ("maximum", min)):
        values = [t[key] for t in (plan_ttl or {}, address_ttl or {}) if t.get(key) is not None]
        if values:
            out[key] = pick(values)
    return out


def ttl_conflict(address_ttl, plan_ttl):
    """A message when the address's bounds and the plan's do not overlap."""
    eff = effective_ttl(address_ttl, plan_ttl)
    if eff.get("minimum") is not None and eff.get("maximum") is not None and eff["minimum"] > eff["maximum"]:
        return ("%r does not overlap the bounds of its plan %r: the address can only narrow them (effective "
                "minimum %d would exceed effective maximum %d)" % (address_ttl, plan_ttl, eff["minimum"], eff["maximum"]))
    return None


DEADLETTER_DELIVERY_ATTEMPTS = 10


def effective_settings(address, address_plan):
    """Per-address broker settings from the plan and the address.

    ``message_ttl``: the address narrows the plan's bounds (``effective_ttl``);
    ``message_redelivery``: each value the address sets replaces the plan's;
    with a ``deadletter`` and no ``maximum_delivery_attempts``, 10 (EnMasse).
    Returns a dict with only the keys that are set: ``message_ttl`` (dict),
    ``message_redelivery`` (dict), ``deadletter``, ``expiry``.
    """
    out = {}
    ttl = effective_ttl(address.get("message_ttl"), (address_plan or {}).get("message_ttl"))
    if ttl:
        out["message_ttl"] = ttl
    red = dict((address_plan or {}).get("message_redelivery") or {})
    red.update(address.get("message_redelivery") or {})
    if address.get("deadletter") and red.get("maximum_delivery_attempts") is None:
        # EnMasse's brokered agent: an address with a dead letter address gets
        # 10 delivery attempts unless its plan or itself say otherwise (the
        # broker's default is unlimited: nothing would ever reach it)
        red["maximum_delivery_attempts"] = DEADLETTER_DELIVERY_ATTEMPTS
    if red:
        out["message_redelivery"] = red
    for k in ("deadletter", "expiry"):
        if address.get(k):
            out[k] = address[k]
    return out
