# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Messaging users with ``backend: kubernetes``: EnMasse's
``user.enmasse.io/v1beta1`` ``MessagingUser`` objects in the namespace.

* The users come from ``model/users.py`` (the host backends' one reading and
  validation); the cluster's own rules are added (``kubernetes_errors``): the
  object name ``<space>.<username>`` is a Kubernetes name, and there is no
  ``enabled`` in EnMasse's MessagingUser.
* An object: ``metadata.name`` ``<space>.<username>``, the collection's label,
  ``spec.username``, ``spec.authentication`` ``{type: password, password:
  <base64>}`` (as EnMasse keeps it), ``spec.authorization`` (normalised).
* The API server returns ``spec.authentication.password``: it is compared
  (decoded, in memory) and never shown: the diff says ``(hidden)`` or
  ``(hidden, changed)``, results and info carry no password.
  ``update_password: always`` sets the given password when the stored one
  differs; ``on_create`` keeps the stored one of an existing object (and sets
  the given one only when the object has none, which EnMasse cannot use).
* Ownership as for addresses (``objects.owned``: the label and the field
  manager); prune and ``state: absent`` delete owned objects only; a listed
  user whose object exists is adopted by the apply (a field another manager
  owns with another value is a conflict unless ``force_conflicts``).
* Check mode: the same applies and deletes with ``dryRun=All`` (the server's
  schema checks run).

Pure but for the client calls; no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hmac

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError, ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import apply as _apply
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import objects as _objects
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import service as _service
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt, kube_name_errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model.users import API_VERSION, KIND

KUBE_KIND = "MessagingUser"
# the diff's password markers (as keycloak/users.py)
HIDDEN = "(hidden)"
HIDDEN_CHANGED = "(hidden, changed)"
ACTIVE = "Active"


# ------------------------------------------------------------------ mapping

def object_name(space, username):
    return "%s.%s" % (space, username)


def encode(password):
    return base64.b64encode(password.encode("utf-8")).decode("ascii")


def stored_password(obj):
    """The decoded ``spec.authentication.password`` of a live object, or
    None (none, or not base64 of UTF-8)."""
    auth = ((obj or {}).get("spec") or {}).get("authentication") or {}
    encoded = auth.get("password") if isinstance(auth, dict) else None
    if not isinstance(encoded, str) or not encoded:
        return None
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeError):
        return None


def same_password(obj, password):
    stored = stored_password(obj)
    return stored is not None and hmac.compare_digest(stored.encode("utf-8"), password.encode("utf-8"))


def kubernetes_errors(space, users):
    """The cluster's rules on top of the model's: the object name
    ``<space>.<username>`` (a Kubernetes name, at most 253 characters) and no
    ``enabled: false`` (EnMasse's MessagingUser has no such field)."""
    errs = []
    for user in users:
        name = user["username"]
        errs.extend("%s (backend: kubernetes names the MessagingUser object <address space>.<username>)" % e
                    for e in kube_name_errors(name, "username", space))
        if user.get("enabled") is False:
            errs.append("enabled: false for user %s is not supported with backend: kubernetes (EnMasse's MessagingUser "
                        "has no enabled field): remove the user (state: absent) to stop its logins"
                        % fmt(name))
    return errs


def desired_object(space, user, live, update_password):
    """The MessagingUser the collection applies for ``user``; the stored
    password encoding is kept when it already says the same (or with
    ``on_create``, whenever the object has one)."""
    stored = ((live or {}).get("spec") or {}).get("authentication") or {}
    stored = stored.get("password") if isinstance(stored, dict) else None
    keep = live is not None and isinstance(stored, str) and stored and (
        update_password == "on_create" or same_password(live, user["password"]))
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": _objects.labelled({"name": object_name(space, user["username"])}),
            "spec": {"username": user["username"],
                     "authentication": {"type": "password", "password": stored if keep else encode(user["password"])},
                     "authorization": [{"addresses": list(r["addresses"]), "operations": list(r["operations"])}
                                       for r in user.get("authorization") or []]}}


def _strings(values):
    return sorted(set(v for v in (values if isinstance(values, list) else []) if isinstance(v, str)))


def authorization_of(obj):
    """``spec.authorization`` of a live object, normalised as the model does."""
    rules = ((obj or {}).get("spec") or {}).get("authorization")
    return [{"addresses": _strings(r.get("addresses")), "operations": _strings(r.get("operations"))}
            for r in (rules if isinstance(rules, list) else []) if isinstance(r, dict)]


def view(obj):
    """What results and the info module show of a live object: never the password."""
    spec = obj.get("spec") or {}
    auth = spec.get("authentication") if isinstance(spec.get("authentication"), dict) else {}
    status = obj.get("status") or {}
    return {"username": spec.get("username"), "name": obj["metadata"]["name"], "enabled": True,
            "owned": _objects.owned(obj), "authentication": {"type": auth.get("type")},
            "authorization": authorization_of(obj),
            "status": {"phase": status.get("phase"), "message": status.get("message")}}


def diff_view(obj, owned=None, password=HIDDEN):
    out = dict((k, v) for k, v in view(obj).items() if k not in ("name", "status"))
    if owned is not None:
        out["owned"] = owned
    out["password"] = password
    return out


def content(obj):
    """What a change is judged by: the user's fields of the spec (the
    password compared by value) and the labels."""
    if obj is None:
        return None
    spec = obj.get("spec") or {}
    auth = spec.get("authentication") if isinstance(spec.get("authentication"), dict) else {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return (spec.get("username"), auth.get("type"), stored_password(obj), authorization_of(obj),
            labels.get(_objects.MANAGED_BY))


# ------------------------------------------------------------------ reading

def space_users(client, space):
    """{username: live object} of the space's MessagingUsers (the objects
    named ``<space>.<...>``; one LIST of the namespace)."""
    items, unused = client.list(KUBE_KIND)
    prefix = space + "."
    return dict((o["metadata"]["name"][len(prefix):], o) for o in items
                if o["metadata"]["name"].startswith(prefix))


def _require_space(client, space):
    if client.get("AddressSpace", space) is not None:
        return
    errs = _service.missing_namespace_errors(client)
    if errs:
        raise ConfigError(errs)
    raise ConfigError("address space %r does not exist in namespace %r: create it with enmasse.messaging.address_space "
                      "(backend: kubernetes) before its users" % (space, client.namespace))


# ------------------------------------------------------------------ converge

def plan(space, users, live, prune=False, update_password="always"):
    """(applies [(username, document)], deletes [usernames], warnings) (pure)."""
    applies, deletes, warnings, listed = [], [], [], set()
    for user in users:
        name = user["username"]
        listed.add(name)
        obj = live.get(name)
        if user["state"] == "absent":
            if obj is not None and _objects.owned(obj):
                deletes.append(name)
            elif obj is not None:
                warnings.append("user %r: MessagingUser %s is not owned by the collection (owner: %s): not deleted"
                                % (name, obj["metadata"]["name"], _objects.owner(obj)))
            continue
        doc = desired_object(space, user, obj, update_password)
        if obj is None or not _objects.owned(obj) or content(doc) != content(obj):
            applies.append((name, doc))
        if obj is not None and update_password == "on_create" and stored_password(obj) is None:
            warnings.append("user %r: the object had no password (or not base64 of UTF-8): the given one is set "
                            "although update_password is on_create" % name)
    if prune:
        deletes.extend(n for n in sorted(set(live) - listed) if _objects.owned(live[n]))
    return applies, deletes, warnings


def _diff(applied, live, deleted):
    before, after = {}, {}
    for name in sorted(set(applied) | set(deleted)):
        if name in live:
            before[name] = diff_view(live[name])
        if name in applied:
            changed = not (name in live and stored_password(live[name]) == stored_password(applied[name]))
            after[name] = diff_view(applied[name], owned=True, password=HIDDEN_CHANGED if changed else HIDDEN)
    return {"before": before, "after": after}


def converge(client, space, users, prune=False, update_password="always", force_conflicts=False,
             check_mode=False, wait=False, wait_timeout=120):
    """The users of ``space`` converged; the module result (as the host
    backends': ``changed``, ``changes``, ``diff``, ``users``)."""
    if any(u["state"] == "present" for u in users):
        _require_space(client, space)
    live = space_users(client, space)
    applies, deletes, warnings = plan(space, users, live, prune, update_password)
    applied, failures = _apply.apply_all(client, applies, force=force_conflicts, dry_run=check_mode)
    removed, delete_failures = _apply.delete_all(client, KUBE_KIND, [(n, live[n]) for n in deletes],
                                                 dry_run=check_mode)
    failures.update(delete_failures)
    changes = {"created": sorted(n for n in applied if n not in live),
               "updated": sorted(n for n in applied if n in live and content(applied[n]) != content(live[n])),
               "deleted": sorted(n for n in removed if removed[n])}
    changed = any(changes.values())
    touched = dict((n, applied[n]) for n in changes["created"] + changes["updated"])
    diff = _diff(touched, live, changes["deleted"])
    if failures:
        labels = dict((n, "user %r (MessagingUser %s)" % (n, object_name(space, n))) for n in failures)
        raise KubeError(_apply.error_messages(failures, labels),
                        result={"changed": changed, "changes": changes, "diff": diff, "failed_users": sorted(failures)})
    now = dict(live)
    now.update(applied)
    for name in changes["deleted"]:
        now.pop(name, None)
    result = {"changed": changed, "changes": changes, "diff": diff, "namespace": client.namespace,
              "warnings": warnings}
    if wait and not check_mode:
        now = _wait(client, space, users, changes["deleted"], wait_timeout, result)
    result["users"] = [view(now[u["username"]]) if u["username"] in now else
                       {"username": u["username"], "state": "absent"} for u in users]
    return result


def _wait(client, space, users, deleted, timeout, result):
    """Wait until the operator reports the present users Active (EnMasse's
    ``status.phase``) and the deleted ones are gone."""
    wanted = [u["username"] for u in users if u["state"] == "present"]

    def pending_of():
        seen = space_users(client, space)
        pending = dict((n, seen.get(n)) for n in wanted if _status(seen.get(n)).get("phase") != ACTIVE)
        pending.update((n, seen[n]) for n in deleted if n in seen)
        return pending, seen
    pending, seen = _service.wait_until(client, timeout, pending_of, "messaging user")
    if pending:
        raise ServiceError(["user %r: not ready after %ss (%s)" % (n, timeout, _not_ready(n, pending[n], deleted))
                            for n in sorted(pending)], result=result)
    return seen


def _status(obj):
    return (obj or {}).get("status") or {}


def _not_ready(name, obj, deleted):
    if name in deleted:
        return "still there"
    if obj is None:
        return "it does not exist"
    st = _status(obj)
    return "phase %s%s" % (st.get("phase"), ": " + st["message"] if st.get("message") else "")


def info(client, space, usernames=None):
    """The space's MessagingUsers (all, or those named), without passwords."""
    live = space_users(client, space)
    names = sorted(live) if not usernames else [n for n in usernames if n in live]
    return {"changed": False, "users": [view(live[n]) for n in names], "namespace": client.namespace}
