# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EnMasse ``enmasse.io/v1beta1`` documents <-> the plain snake_case model.

A document is checked before it is converted (``address_document_errors``,
``address_space_document_errors``, ``address_list_errors``): ``apiVersion``
and ``kind`` (one message naming what the module takes), ``metadata.name``,
every key of ``spec`` (an unknown one is refused with the nearest known key:
EnMasse itself would ignore a typo such as ``minimim``). ``status`` and the
metadata the API server sets are ignored."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import (
    fmt as _fmt, kube_name_errors, space_name_errors)
from ansible_collections.enmasse.messaging.plugins.module_utils.model.types import (
    REDELIVERY_CAMEL, TTL_KEYS, mapping_errors, quote, redelivery_from_camel, redelivery_to_camel, type_name,
    unknown_key_errors)

API_VERSION = "enmasse.io/v1beta1"
USER_API_VERSION = "user.enmasse.io/v1beta1"
# the versions EnMasse 0.33's CRDs serve for Address and AddressSpace
# (addresses.crd.yaml, addressspaces.crd.yaml: versions [v1beta1])
API_VERSIONS = (API_VERSION,)

DOCUMENT_KEYS = ("apiVersion", "kind", "metadata", "spec", "status")
LIST_KEYS = ("apiVersion", "kind", "metadata", "items")
# metadata the API server sets or that does not describe the messaging
# model: ignored
IGNORED_METADATA = ("namespace", "uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                    "selfLink", "annotations", "labels", "ownerReferences", "finalizers", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "generateName", "clusterName")
METADATA_KEYS = ("name",) + IGNORED_METADATA
ADDRESS_SPEC_KEYS = ("address", "type", "plan", "topic", "subscription", "deadletter", "expiry", "messageTtl",
                     "messageRedelivery", "addressSpace")
# in EnMasse's schema, not implemented by this collection: refused as such
ADDRESS_SPEC_UNSUPPORTED = ("forwarders",)
TTL_SPEC_KEYS = TTL_KEYS
REDELIVERY_SPEC_KEYS = tuple(REDELIVERY_CAMEL)
SUBSCRIPTION_SPEC_KEYS = ("maxConsumers",)
SPACE_SPEC_KEYS = ("type", "plan", "authenticationService", "endpoints")
SPACE_SPEC_UNSUPPORTED = ("networkPolicy", "connectors")
AUTH_SPEC_KEYS = ("name", "type", "overrides")


def is_document(item):
    """A mapping that looks like a Kubernetes document rather than a plain
    address (it has kind, apiVersion, metadata or spec)."""
    return isinstance(item, dict) and any(k in item for k in ("kind", "apiVersion", "metadata", "spec"))


def _kind_errors(doc, kind, field):
    """apiVersion and kind of ``doc``; a wrong kind or version is one message
    saying what the module takes."""
    takes = "an EnMasse %s (%s)" % (kind, ", ".join(API_VERSIONS))
    got = doc.get("kind")
    if got != kind:
        if got is None:
            return ["%s.kind: missing: a document here must be %s" % (field, takes)]
        return ["%s.kind: %s is not accepted here: this module takes %s" % (field, quote(got), takes)]
    if doc.get("apiVersion") not in API_VERSIONS:
        return ["%s.apiVersion: %s is not accepted for kind %s: use %s"
                % (field, quote(doc.get("apiVersion")), kind, " or ".join(API_VERSIONS))]
    return []


def metadata_errors(doc, field):
    meta = doc.get("metadata")
    if meta is None:
        return []
    if not isinstance(meta, dict):
        return ["%s.metadata: %s is %s, it must be a mapping" % (field, quote(meta), type_name(meta))]
    return unknown_key_errors(list(meta), METADATA_KEYS, field + ".metadata")


def _spec_key_errors(spec, known, unsupported, field):
    errs = []
    for k in spec:
        if k in unsupported:
            errs.append("%s.%s: not supported by this collection (EnMasse's %s is not implemented)"
                        % (field, k, k))
    errs.extend(unknown_key_errors(list(spec), known, field, ignored=unsupported))
    return errs


def address_document_errors(doc, space, field="definition"):
    """Every violation of the EnMasse Address document ``doc`` for the
    address space ``space`` (before conversion)."""
    errs = _kind_errors(doc, "Address", field)
    if errs:
        return errs
    errs.extend(unknown_key_errors(list(doc), DOCUMENT_KEYS, field))
    errs.extend(metadata_errors(doc, field))
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        errs.append("%s.spec: %s is %s, it must be a mapping with address, type and plan"
                    % (field, quote(spec), type_name(spec)))
        spec = {}
    nfield = field + ".metadata.name"
    if not isinstance(name, str) or "." not in name:
        errs.append("%s: %s must be <address space>.<name>, with the address space %r"
                    % (nfield, quote(name), space))
    else:
        sp, short = name.split(".", 1)
        if sp != space:
            errs.append("%s: %s belongs to address space %s, not %r (the address_space option)"
                        % (nfield, quote(name), _fmt(sp), space))
        else:
            errs.extend("%s (the part after '%s.')" % (e, sp) for e in kube_name_errors(short, nfield, sp))
    errs.extend(_spec_key_errors(spec, ADDRESS_SPEC_KEYS, ADDRESS_SPEC_UNSUPPORTED, field + ".spec"))
    legacy = spec.get("addressSpace")
    if legacy is not None and legacy != space:
        errs.append("%s.spec.addressSpace: %s must be the address space %r (legacy field; it may be left out)"
                    % (field, quote(legacy), space))
    for key, known in (("messageTtl", TTL_SPEC_KEYS), ("messageRedelivery", REDELIVERY_SPEC_KEYS),
                       ("subscription", SUBSCRIPTION_SPEC_KEYS)):
        if spec.get(key) is not None:
            errs.extend(mapping_errors(spec[key], "%s.spec.%s" % (field, key), known))
    return errs


def address_list_errors(doc, field):
    """The envelope of an EnMasse AddressList (its items are checked as
    addresses by the caller)."""
    errs = _kind_errors(doc, "AddressList", field)
    if errs:
        return errs
    errs.extend(unknown_key_errors(list(doc), LIST_KEYS, field))
    if not isinstance(doc.get("items"), list):
        errs.append("%s.items: %s is %s, it must be a list of Address documents"
                    % (field, quote(doc.get("items")), type_name(doc.get("items"))))
    return errs


def address_list_items(doc):
    """The items of an AddressList (checked by ``address_list_errors``) as
    Address documents: an item that is a mapping without ``kind`` or
    ``apiVersion`` takes ``Address`` and the list's ``apiVersion``, as in
    EnMasse's own example (documentation/common/standard-addresses.yaml, whose
    items carry only metadata and spec). An item's own kind or version is kept
    (and checked)."""
    out = []
    for item in doc["items"]:
        if isinstance(item, dict) and ("kind" not in item or "apiVersion" not in item):
            item = dict(item)
            item.setdefault("kind", "Address")
            item.setdefault("apiVersion", doc.get("apiVersion"))
        out.append(item)
    return out


def address_space_document_errors(doc, name, field="definition"):
    """Every violation of the EnMasse AddressSpace document ``doc`` for the
    address space ``name`` (before conversion)."""
    errs = _kind_errors(doc, "AddressSpace", field)
    if errs:
        return errs
    errs.extend(unknown_key_errors(list(doc), DOCUMENT_KEYS, field))
    errs.extend(metadata_errors(doc, field))
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    if meta.get("name") is not None and meta.get("name") != name:
        errs.extend(space_name_errors(meta.get("name"), field + ".metadata.name"))
        errs.append("%s.metadata.name: %s does not match name %r" % (field, quote(meta.get("name")), name))
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return errs + ["%s.spec: %s is %s, it must be a mapping with type and plan"
                       % (field, quote(spec), type_name(spec))]
    errs.extend(_spec_key_errors(spec, SPACE_SPEC_KEYS, SPACE_SPEC_UNSUPPORTED, field + ".spec"))
    auth = spec.get("authenticationService")
    if auth is not None:
        errs.extend(mapping_errors(auth, field + ".spec.authenticationService", AUTH_SPEC_KEYS))
    return errs


_ADDRESS_CAMEL = {
    "messageTtl": "message_ttl",
    "messageRedelivery": "message_redelivery",
    "addressSpace": "address_space",
}


def normalize_address_space(obj):
    """Plain snake_case address space from a dict or an EnMasse AddressSpace."""
    if not isinstance(obj, dict):
        return obj
    if obj.get("kind") == "AddressSpace":
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        out = {"name": meta.get("name"), "type": spec.get("type"), "plan": spec.get("plan")}
        auth = spec.get("authenticationService")
        if auth:
            out["authentication_service"] = dict(auth)
        if spec.get("endpoints") is not None:
            out["endpoints"] = copy.deepcopy(spec["endpoints"])
        return out
    return copy.deepcopy(obj)


def normalize_address(obj, space=None):
    """Plain snake_case address from a dict or an EnMasse Address document.

    For a document, the address space comes from ``metadata.name``
    (``<space>.<name>``) unless given; it is returned under ``address_space``.
    """
    if not isinstance(obj, dict):
        return obj
    if obj.get("kind") == "Address":
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        out = {}
        for k, v in spec.items():
            if k == "messageRedelivery" and isinstance(v, dict):
                out["message_redelivery"] = redelivery_from_camel(v)
            elif k == "subscription" and isinstance(v, dict):
                out["subscription"] = {"max_consumers": v.get("maxConsumers", v.get("max_consumers"))}
            else:
                out[_ADDRESS_CAMEL.get(k, k)] = copy.deepcopy(v)
        name = meta.get("name") or ""
        if "." in name:
            sp, short = name.split(".", 1)
            out.setdefault("address_space", space or sp)
            out["name"] = short
        elif space:
            out.setdefault("address_space", space)
        return out
    out = copy.deepcopy(obj)
    return out


def with_defaults(address):
    """Address with defaults filled in (subscription.max_consumers = 1)."""
    a = dict(address)
    if a.get("type") == "subscription":
        sub = dict(a.get("subscription") or {})
        if sub.get("max_consumers") is None:
            sub["max_consumers"] = 1
        a["subscription"] = sub
    return a


def address_to_document(space_name, address):
    """EnMasse v1beta1 Address document for a plain address."""
    spec = {"address": address["address"], "type": address["type"], "plan": address.get("plan")}
    for k in ("topic", "deadletter", "expiry"):
        if address.get(k):
            spec[k] = address[k]
    if address.get("message_ttl"):
        spec["messageTtl"] = dict(address["message_ttl"])
    if address.get("message_redelivery"):
        spec["messageRedelivery"] = redelivery_to_camel(address["message_redelivery"])
    if address.get("type") == "subscription":
        spec["subscription"] = {"maxConsumers": (address.get("subscription") or {}).get("max_consumers", 1)}
    short = address.get("name") or re.sub(r"[^a-z0-9.-]", "-", address["address"].lower())
    return {"apiVersion": API_VERSION, "kind": "Address",
            "metadata": {"name": "%s.%s" % (space_name, short)}, "spec": spec}
