# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EnMasse ``admin.enmasse.io`` plan documents <-> plain (snake_case) plans.

``AddressPlan`` and ``AddressSpacePlan`` in the versions EnMasse 0.33's CRDs
serve: ``v1beta2`` (fields under ``spec``) and ``v1beta1``/``v1alpha1``
(fields at the top level, credits as ``[{name, credit|max}]`` lists). Both
kinds are read and written by one piece of code driven by the table
``KINDS``. Conversion and document shape only: the rules a plan must follow
are in ``plans.py``. Pure Python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.enmasse.messaging.plugins.module_utils.model.documents import metadata_errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model.types import (
    REDELIVERY_CAMEL, redelivery_from_camel, redelivery_to_camel, unknown_key_errors)

ADMIN_GROUP = "admin.enmasse.io"
PLAN_API_VERSION = ADMIN_GROUP + "/v1beta2"
# the versions EnMasse 0.33's CRDs serve for AddressPlan and AddressSpacePlan
PLAN_API_VERSIONS = (ADMIN_GROUP + "/v1beta2", ADMIN_GROUP + "/v1beta1", ADMIN_GROUP + "/v1alpha1")

LIMITS_KEYS = ("router", "broker", "aggregate")
RESOURCE_KEYS = ("router", "broker")

# the plain (snake_case) fields of each kind
ADDRESS_PLAN_FIELDS = ("name", "address_type", "address_space_type", "display_name", "display_order",
                       "short_description", "long_description", "resources", "partitions",
                       "message_ttl", "message_redelivery")
SPACE_PLAN_FIELDS = ("name", "address_space_type", "display_name", "display_order", "short_description",
                     "long_description", "resource_limits", "address_plans", "infra_config_ref")

_COMMON_SPEC = {"displayName": "display_name", "displayOrder": "display_order",
                "shortDescription": "short_description", "longDescription": "long_description"}
# v1beta1 / v1alpha1: the common fields and uuid at the top level
_LEGACY_COMMON = tuple(_COMMON_SPEC) + ("uuid",)
# the top-level keys of any document (not fields of the plan)
_ENVELOPE = ("apiVersion", "kind", "metadata", "status")

# per kind: v1beta2 spec field -> plain field; the legacy top-level fields;
# the legacy credits list (its key, the plain field, the value key, the names)
KINDS = {
    "AddressPlan": {
        "fields": ADDRESS_PLAN_FIELDS,
        "spec": dict(_COMMON_SPEC, addressType="address_type", resources="resources", partitions="partitions",
                     messageTtl="message_ttl", messageRedelivery="message_redelivery",
                     # not in EnMasse's AddressPlan: the collection's optional constraint
                     addressSpaceType="address_space_type"),
        "legacy": ("addressType",),
        "legacy_credits": ("requiredResources", "resources", "credit", RESOURCE_KEYS),
    },
    "AddressSpacePlan": {
        "fields": SPACE_PLAN_FIELDS,
        "spec": dict(_COMMON_SPEC, addressSpaceType="address_space_type", resourceLimits="resource_limits",
                     addressPlans="address_plans", infraConfigRef="infra_config_ref"),
        "legacy": ("addressSpaceType", "addressPlans"),
        "legacy_credits": ("resources", "resource_limits", "max", LIMITS_KEYS),
    },
}


def _doc_errors(doc, kind, where):
    """apiVersion, kind and metadata of an EnMasse admin document."""
    errs = []
    if doc.get("kind") != kind:
        return ["%s.kind: %r is not accepted here: this takes an EnMasse %s (%s)"
                % (where, doc.get("kind"), kind, " or ".join(PLAN_API_VERSIONS))]
    if doc.get("apiVersion") not in PLAN_API_VERSIONS:
        errs.append("%s.apiVersion: %r is not a version EnMasse serves for %s (one of %s)"
                    % (where, doc.get("apiVersion"), kind, ", ".join(PLAN_API_VERSIONS)))
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        errs.append("%s.metadata: %r must be a mapping with name" % (where, meta))
    return errs


def from_document(doc, kind, where="definition"):
    """(plain plan, errors) from an EnMasse ``kind`` document
    (``AddressPlan`` or ``AddressSpacePlan``), every version EnMasse serves."""
    errs = _doc_errors(doc, kind, where)
    if errs:
        return {}, errs
    table = KINDS[kind]
    plan = {"name": doc["metadata"].get("name")}
    if doc["apiVersion"] == PLAN_API_VERSION:
        spec = doc.get("spec")
        if not isinstance(spec, dict):
            return plan, ["%s.spec: %r must be a mapping" % (where, spec)]
        errs.extend(unknown_key_errors(list(spec), sorted(table["spec"]), where + ".spec"))
        for k, v in spec.items():
            if k not in table["spec"]:
                continue
            if k == "messageRedelivery" and isinstance(v, dict):
                errs.extend(unknown_key_errors(list(v), sorted(REDELIVERY_CAMEL), where + ".spec.messageRedelivery"))
                v = redelivery_from_camel(dict((rk, rv) for rk, rv in v.items() if rk in REDELIVERY_CAMEL))
            plan[table["spec"][k]] = copy.deepcopy(v)
    else:
        credits_key, credits_field, value_key, names = table["legacy_credits"]
        known = _LEGACY_COMMON + table["legacy"] + (credits_key,)
        for k, v in doc.items():
            if k in _ENVELOPE:
                continue
            if k not in known:
                errs.extend(unknown_key_errors([k], known, where))
            elif k == credits_key:
                plan[credits_field] = _legacy_credits(v, value_key, names, "%s.%s" % (where, k), errs)
            elif k != "uuid":
                plan[table["spec"][k]] = copy.deepcopy(v)
    errs.extend(metadata_errors(doc, where))
    return plan, errs


def _legacy_credits(items, key, names, where, errs):
    """v1beta1 ``[{name, credit|max}]`` -> ``{name: value}``."""
    out = {}
    if not isinstance(items, list):
        errs.append("%s: %r must be a list of {name, %s}" % (where, items, key))
        return out
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("name") not in names or key not in item:
            errs.append("%s[%d]: %r must be {name: %s, %s: <number>}" % (where, i, item, "|".join(names), key))
        else:
            out[item["name"]] = item[key]
    return out


def to_document(plan, kind, labels=None):
    """The EnMasse ``admin.enmasse.io/v1beta2`` ``kind`` document for a plain plan."""
    table = KINDS[kind]
    out_names = dict((v, k) for k, v in table["spec"].items())
    spec = {}
    for k in table["fields"]:
        if k == "name" or plan.get(k) is None:
            continue
        v = copy.deepcopy(plan[k])
        spec[out_names[k]] = redelivery_to_camel(v) if k == "message_redelivery" else v
    meta = {"name": plan.get("name")}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": PLAN_API_VERSION, "kind": kind, "metadata": meta, "spec": spec}


def address_plan_from_document(doc, where="definition"):
    return from_document(doc, "AddressPlan", where)


def space_plan_from_document(doc, where="definition"):
    return from_document(doc, "AddressSpacePlan", where)


def address_plan_document(plan, labels=None):
    return to_document(plan, "AddressPlan", labels)


def space_plan_document(plan, labels=None):
    return to_document(plan, "AddressSpacePlan", labels)
