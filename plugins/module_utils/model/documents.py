# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EnMasse ``enmasse.io/v1beta1`` documents <-> the plain snake_case model."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as _plans

API_VERSION = "enmasse.io/v1beta1"
USER_API_VERSION = "user.enmasse.io/v1beta1"


_ADDRESS_CAMEL = {
    "messageTtl": "message_ttl",
    "messageRedelivery": "message_redelivery",
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
                out["message_redelivery"] = _plans._redelivery_from_camel(v)
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
        inv = dict((v, k) for k, v in _plans._REDELIVERY_CAMEL.items())
        spec["messageRedelivery"] = dict((inv.get(k, k), v) for k, v in address["message_redelivery"].items())
    if address.get("type") == "subscription":
        spec["subscription"] = {"maxConsumers": (address.get("subscription") or {}).get("max_consumers", 1)}
    short = address.get("name") or re.sub(r"[^a-z0-9.-]", "-", address["address"].lower())
    return {"apiVersion": API_VERSION, "kind": "Address",
            "metadata": {"name": "%s.%s" % (space_name, short)}, "spec": spec}
