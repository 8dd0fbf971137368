# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Live objects <-> the plain model, for the kubernetes backend: the objects
to apply (the model's EnMasse documents, labelled as the collection's), the
plain view of a live object, whether the collection owns it, its status as
the operator reports it. Pure: no I/O.

Ownership: an object is the collection's when it carries the label
``app.kubernetes.io/managed-by: enmasse.messaging`` *and* the collection's
field manager has applied to it (``metadata.managedFields``). Prune and
``state: absent`` touch only those; a label copied by hand is not enough.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import re
import uuid

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import (
    FIELD_MANAGER, MANAGED_BY, MANAGED_LABELS, api_version)
from ansible_collections.enmasse.messaging.plugins.module_utils.model.documents import (
    address_to_document, normalize_address, normalize_address_space)

# EnMasse's KubeUtil.sanitizeName: lowercase, drop what is not [a-z0-9-],
# no leading or trailing '-', at most 60 characters
_NOT_NAME = re.compile(r"[^a-z0-9\-]")
MAX_KUBE_NAME = 60
SPACE_FIELDS = ("type", "plan", "authenticationService", "endpoints")


def sanitize_name(value):
    clean = _NOT_NAME.sub("", value.lower())
    if clean.startswith("-"):
        clean = "1" + clean[1:]
    clean = clean[:MAX_KUBE_NAME]
    if clean.endswith("-"):
        clean = clean[:-1] + "1"
    return clean


def generated_name(space, address):
    """EnMasse's ``Address.generateName``: ``<space>.<sanitized address>.<uuid>``
    with the name-based (MD5, version 3) UUID of the address, as Java's
    ``UUID.nameUUIDFromBytes`` makes it: the same address always gets the same
    object name."""
    digest = hashlib.md5(address.encode("utf-8")).digest()  # nosec - a name, not security
    return "%s.%s.%s" % (sanitize_name(space), sanitize_name(address) or "address",
                         uuid.UUID(bytes=digest, version=3))


def object_name(space, address, live=None):
    """The object name for a plain address: the live object's when it exists,
    else ``<space>.<name>`` when the address has ``name``, else EnMasse's
    generated name."""
    if live is not None:
        return live["metadata"]["name"]
    if address.get("name"):
        return "%s.%s" % (space, address["name"])
    return generated_name(space, address["address"])


def labelled(meta):
    meta = dict(meta)
    labels = dict(meta.get("labels") or {})
    labels.update(MANAGED_LABELS)
    meta["labels"] = labels
    return meta


def address_object(space, address, live=None):
    """The Address object the collection applies for a plain address."""
    doc = address_to_document(space, address)
    doc["metadata"] = labelled({"name": object_name(space, address, live)})
    return doc


def space_object(space):
    """The AddressSpace object the collection applies for a plain space."""
    spec = {"type": space.get("type"), "plan": space.get("plan")}
    if space.get("authentication_service"):
        spec["authenticationService"] = copy.deepcopy(space["authentication_service"])
    if space.get("endpoints") is not None:
        spec["endpoints"] = copy.deepcopy(space["endpoints"])
    return {"apiVersion": api_version("AddressSpace"), "kind": "AddressSpace",
            "metadata": labelled({"name": space["name"]}), "spec": spec}


def managers(obj):
    """The field managers of an object (``metadata.managedFields``)."""
    return [m.get("manager") for m in ((obj.get("metadata") or {}).get("managedFields") or [])]


def owned(obj):
    if obj is None:
        return False
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY) == FIELD_MANAGER and FIELD_MANAGER in managers(obj)


def owner(obj):
    """Who made the object: the collection, else its managed-by label, else
    its first field manager."""
    if owned(obj):
        return FIELD_MANAGER
    labels = (obj.get("metadata") or {}).get("labels") or {}
    found = labels.get(MANAGED_BY) or next(iter(managers(obj)), None)
    return found or "unknown"


def space_of_address(obj):
    name = (obj.get("metadata") or {}).get("name") or ""
    return name.split(".", 1)[0] if "." in name else None


def plain_address(obj):
    """The plain address of a live Address (the fields of its spec)."""
    plain = normalize_address({"kind": "Address", "metadata": {"name": obj["metadata"]["name"]},
                               "spec": obj.get("spec") or {}})
    plain.pop("address_space", None)
    plain.pop("forwarders", None)
    return plain


def user_fields(plain):
    """A plain address without its object name (for the diff)."""
    return dict((k, v) for k, v in plain.items() if k != "name")


def plain_space(obj):
    plain = normalize_address_space({"kind": "AddressSpace", "metadata": {"name": obj["metadata"]["name"]},
                                     "spec": obj.get("spec") or {}})
    return dict((k, v) for k, v in plain.items() if v is not None)


def status_view(obj, is_owned=None):
    """The status of an Address or AddressSpace as the operator reports it:
    ``ready`` (status.isReady), ``phase``, ``messages``, ``message_count``
    (the collection's status.messageCount, when an operator reports it),
    ``owned``, and ``reported``: the status object as read."""
    st = (obj or {}).get("status") or {}
    return {"ready": st.get("isReady") is True, "phase": st.get("phase"), "messages": list(st.get("messages") or []),
            "message_count": st.get("messageCount"), "owned": owned(obj) if is_owned is None else is_owned,
            "reported": copy.deepcopy(st)}


def is_ready(obj):
    st = (obj or {}).get("status") or {}
    return st.get("isReady") is True and st.get("phase") in (None, "Active")


def needs_apply(doc, live):
    """True when applying ``doc`` could change ``live``: it does not exist, it
    lacks the collection's labels or field manager, or its spec differs."""
    if live is None or not owned(live):
        return True
    labels = (live.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (doc["metadata"].get("labels") or {}).items()):
        return True
    return (live.get("spec") or {}) != doc.get("spec")


def content(obj):
    """What a change is judged by: the spec and the labels."""
    if obj is None:
        return None
    return (obj.get("spec") or {}, (obj.get("metadata") or {}).get("labels") or {})
