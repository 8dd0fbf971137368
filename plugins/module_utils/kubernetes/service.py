# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubernetes backend's converger: EnMasse custom resources in one
namespace, with the same model, inputs and rules as the hosts backend.

* read: the AddressSpace (one GET), the plan catalogue (the AddressPlan and
  AddressSpacePlan objects of the namespace: two LISTs), the space's
  Addresses (one LIST of the namespace, every page; never a GET per object);
* validate: ``model.validation`` against that catalogue and the live objects
  (immutable fields, references, quota), every violation at once, before
  anything changes;
* diff: only the objects whose spec or labels differ are applied;
* apply: server-side apply with the field manager ``enmasse.messaging`` in
  parallel (``apply.py``); check mode is the same requests with
  ``dryRun=All``; a conflict with another manager is refused with the fields
  and their managers unless ``force_conflicts``;
* wait (when asked): LIST until every object reports ``status.isReady``
  (phase Active), else fail with their ``status.messages``.

No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError, ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import apply as _apply
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import objects as _objects
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as _plans
from ansible_collections.enmasse.messaging.plugins.module_utils.model import requests as _requests
from ansible_collections.enmasse.messaging.plugins.module_utils.model.status import PHASE_DELETED
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as _validation

SHOWN = 20
WAIT_INTERVAL = 1.0


# ------------------------------------------------------------------ reading

def read_catalogue(client):
    """The plan catalogue of the namespace: its AddressSpacePlan and
    AddressPlan objects (read as the hosts backend reads plan documents),
    with EnMasse's infrastructure configs. Nothing implicit: a plan that is
    not an object in the namespace is not known."""
    space_plans, address_plans = [], []
    for kind, reader, target in (("AddressSpacePlan", _plans.read_space_plan, space_plans),
                                 ("AddressPlan", _plans.read_address_plan, address_plans)):
        items, unused = client.list(kind)
        for obj in items:
            plan, unused = reader(_plan_document(obj), "%s %s" % (kind, obj["metadata"]["name"]))
            if plan.get("name"):
                target.append(plan)
    return _plans.Catalogue.with_default_infra(space_plans, address_plans)


def missing_namespace_errors(client):
    """The namespace itself is missing (an empty catalogue, no AddressSpace):
    say so, rather than that a plan or space is unknown."""
    if client.namespace_exists() is False:
        return ["namespace %r does not exist on %s: create it (the role enmasse.messaging.kubernetes_crds does, with "
                "kubernetes_crds_namespace, and applies EnMasse's example plans there) or give another namespace"
                % (client.namespace, client.host)]
    return []


def no_plans_errors(client, catalogue):
    """An empty catalogue: the namespace is missing, or has no plan objects."""
    if catalogue.address_space_plan_names():
        return []
    return missing_namespace_errors(client) or [
        "namespace %r has no AddressSpacePlan objects: the catalogue on a cluster is the namespace's plan objects "
        "(the role enmasse.messaging.kubernetes_crds applies EnMasse's example plans with kubernetes_crds_namespace; "
        "or make plans with enmasse.messaging.address_space_plan and address_plan)" % client.namespace]


def _plan_document(obj):
    return dict((k, v) for k, v in obj.items() if k != "status")


def space_address_objects(client, space_name):
    """({address: live object}, {address: [object names]} of the addresses
    that more than one object of the space has) (one LIST of the namespace)."""
    items, unused = client.list("Address", cached=True)
    out, dups = {}, {}
    for obj in items:
        if _objects.space_of_address(obj) == space_name and isinstance((obj.get("spec") or {}).get("address"), str):
            address = obj["spec"]["address"]
            if address in out:
                dups.setdefault(address, [out[address]["metadata"]["name"]]).append(obj["metadata"]["name"])
                if _objects.owned(out[address]) and not _objects.owned(obj):
                    continue  # the collection's object stands for the address
            out[address] = obj
    return out, dups


def space_addresses(client, space_name):
    """{address: live object} of the address space (one LIST of the namespace)."""
    return space_address_objects(client, space_name)[0]


def duplicate_errors(dups, names, namespace):
    """Refuse to touch an address that two objects of the space carry: which
    one the task meant is not known (EnMasse allows one per address)."""
    return ["address %r: Address objects %s in namespace %r all have spec.address %r; an address has one object: "
            "delete the others (kubectl delete addresses.enmasse.io <name>), then run the task again"
            % (a, ", ".join(sorted(dups[a])), namespace, a) for a in sorted(dups) if names is None or a in names]


def read_space(client, name):
    """(live AddressSpace or None, plain space {name, type, plan})."""
    obj = client.get("AddressSpace", name)
    if obj is None:
        return None, None
    plain = _objects.plain_space(obj)
    return obj, {"name": name, "type": plain.get("type"), "plan": plain.get("plan")}


def _label(positions, i, address):
    where = positions[i] if positions and i < len(positions) else "addresses[%d]" % i
    return "%s(%s)" % (where, address)


# ------------------------------------------------------------------ waiting

def wait_until(client, timeout, pending_of, what):
    """Poll (one LIST or GET per interval, by ``pending_of()``) until
    ``pending_of()`` returns no pending objects or ``timeout`` seconds pass.
    ``pending_of`` returns ({key: object or None}, objects_as_read). Returns
    (pending, as_read) of the last poll."""
    deadline = time.monotonic() + max(0, timeout)
    while True:
        pending, as_read = pending_of()
        if not pending or time.monotonic() >= deadline:
            return pending, as_read
        time.sleep(min(WAIT_INTERVAL, max(0.05, deadline - time.monotonic())))


def not_ready_messages(pending, timeout, what):
    out = []
    for key in sorted(pending)[:SHOWN]:
        obj = pending[key]
        st = (obj or {}).get("status") or {}
        if obj is None:
            out.append("%s %s: not ready after %ss: it does not exist" % (what, key, timeout))
        else:
            out.append("%s %s: not ready after %ss (isReady %s, phase %s)%s"
                       % (what, key, timeout, st.get("isReady"), st.get("phase"),
                          ": " + "; ".join(st.get("messages")) if st.get("messages") else
                          ": the operator reported no status" if not st else ""))
    if len(pending) > SHOWN:
        out.append("... and %d more %s(es) not ready" % (len(pending) - SHOWN, what))
    return out


# ---------------------------------------------------------------- addresses

def _check_deletes(deletes, live, force):
    """Refuse deleting addresses that hold messages (as the operator reports
    them in status.messageCount) unless ``force``; the hosts backend's message."""
    if force:
        return []
    out = []
    for name in deletes:
        obj = live.get(name)
        count = ((obj or {}).get("status") or {}).get("messageCount")
        if isinstance(count, int) and count > 0:
            out.append(_requests.held_message(name, (obj.get("spec") or {}).get("type"), count))
    return out


def _checked(client, space_name, present, absent, prune, positions):
    """Read the space, its plans and Address objects and check the request
    (model/requests.py, plus objects sharing one address); returns (live
    objects, plain live addresses, owned ones, deletes, warnings)."""
    errs = _requests.absent_errors(absent, present)
    if errs:  # before the cluster is read
        raise ServiceError(errs)
    space_obj, space = read_space(client, space_name)
    if space_obj is None:
        errs = missing_namespace_errors(client)
        if errs:
            raise ConfigError(errs)
        raise ConfigError("address space %r does not exist in namespace %r: create it with "
                          "enmasse.messaging.address_space (backend: kubernetes)" % (space_name, client.namespace))
    catalogue = read_catalogue(client)
    if catalogue.address_space_plan(space["plan"]) is None:
        raise ServiceError(_validation.space_plan_missing(space, catalogue))
    names = set(a.get("address") for a in present if isinstance(a, dict))
    live, dups = space_address_objects(client, space_name)
    errs = duplicate_errors(dups, None if prune else names | set(absent), client.namespace)
    plain_live = dict((n, _objects.plain_address(o)) for n, o in live.items())
    owned = dict((n, plain_live[n]) for n, o in live.items() if _objects.owned(o))
    try:
        deletes, warnings = _requests.address_request(
            space, catalogue, present, absent, owned, prune=prune, positions=positions,
            current=lambda gone: dict((n, a) for n, a in plain_live.items() if n not in gone),
            quota_basis=plain_live, subscription_settings=space["type"] != "brokered")
    except ServiceError as e:
        raise ServiceError(errs + list(e.errors))
    if errs:
        raise ServiceError(errs)
    return live, plain_live, owned, deletes, warnings


def converge_addresses(client, space_name, present, absent, prune=False, force=False, force_conflicts=False,
                       check_mode=False, report="all", positions=None, wait=False, wait_timeout=120):
    """The address module on a cluster; the same result as the hosts backend
    (``changed``, ``addresses`` with ``status``, ``changes``, ``diff``)."""
    live, plain_live, owned, deletes, warnings = _checked(client, space_name, present, absent, prune, positions)
    held = _check_deletes(deletes, live, force)
    if held:
        raise ServiceError(held)

    # the objects to apply: only those that differ
    docs, labels = [], {}
    for i, a in enumerate(present):
        doc = _objects.address_object(space_name, a, live.get(a["address"]))
        labels[a["address"]] = _label(positions, i, a["address"])
        if _objects.needs_apply(doc, live.get(a["address"])):
            docs.append((a["address"], doc))
    applied, failures = _apply.apply_all(client, docs, force=force_conflicts, dry_run=check_mode)
    removed, delete_failures = _apply.delete_all(client, "Address", [(n, live[n]) for n in deletes],
                                                 dry_run=check_mode)
    failures.update(delete_failures)
    created = sorted(n for n in applied if n not in live)
    updated = sorted(n for n in applied if n in live and _objects.content(applied[n]) != _objects.content(live[n]))
    deleted = sorted(n for n in removed if removed[n])
    changes = {"created": created, "updated": updated, "deleted": deleted}
    changed = bool(created or updated or deleted)
    # the user's fields: the spec, as plain fields (not the object's name)
    diff = {"before": dict((n, _objects.user_fields(plain_live[n])) for n in updated + deleted),
            "after": dict((n, _objects.user_fields(_objects.plain_address(applied[n]))) for n in created + updated)}
    if failures:
        for name in absent:
            labels.setdefault(name, "absent(%s)" % name)
        raise KubeError(_apply.error_messages(failures, labels),
                        result={"changed": changed, "changes": changes, "diff": diff,
                                "failed_addresses": sorted(failures)})

    now = dict(live)
    now.update(applied)
    for n in deleted:
        now.pop(n, None)
    wait_errors = []
    if wait and not check_mode:
        wanted = set(a["address"] for a in present)

        def pending_of():
            seen = space_addresses(client, space_name)
            pending = dict((n, seen.get(n)) for n in wanted if not _objects.is_ready(seen.get(n)))
            pending.update((n, seen[n]) for n in deleted if n in seen)
            return pending, seen
        pending, now = wait_until(client, wait_timeout, pending_of, "address")
        wait_errors = not_ready_messages(pending, wait_timeout, "address")

    addresses = _reported(present, absent, now, plain_live, report, created + updated + deleted, deleted)
    result = {"changed": changed, "addresses": addresses, "changes": changes, "diff": diff,
              "namespace": client.namespace}
    skipped = [n for n in absent if n not in owned and n in live]
    if skipped:
        warnings.append("not deleted, not owned by this collection (created by hand?): %s" % ", ".join(skipped))
    if prune:
        listed = set(a["address"] for a in present) | set(absent)
        kept = sorted(n for n in live if n not in owned and n not in listed)
        if kept:
            more = ", ..." if len(kept) > SHOWN else ""
            warnings.append("prune: %d address(es) not made by this collection not deleted (their owner or the "
                            "operator removes them): %s%s" % (len(kept), ", ".join(kept[:SHOWN]), more))
    if warnings:
        result["warnings"] = warnings
    if wait_errors:
        raise ServiceError(wait_errors, result=result)
    return result


def _reported(present, absent, now, plain_live, report, changed_names, deleted):
    """The addresses the result lists (``report``: all named in the task,
    the changed ones, or none), each with its status."""
    listed = None if report == "all" else set(changed_names) if report == "changed" else set()
    addresses = []
    for a in present:
        name = a["address"]
        if listed is not None and name not in listed:
            continue
        obj = now.get(name)
        view = _objects.plain_address(obj) if obj is not None else dict(a)
        view["status"] = _objects.status_view(obj)
        addresses.append(view)
    for name in absent:
        if listed is not None and name not in listed:
            continue
        obj = now.get(name) if name not in deleted else None
        if obj is None:
            view = dict(plain_live.get(name) or {"address": name})
            view["status"] = {"ready": False, "phase": PHASE_DELETED, "messages": [], "message_count": None,
                              "owned": False, "reported": {}}
        else:
            view = _objects.plain_address(obj)
            view["status"] = _objects.status_view(obj)
        addresses.append(view)
    return addresses


def address_info(client, space_name, names=None, include_unowned=True):
    """The space's Address objects as plain addresses with ``status``."""
    live = space_addresses(client, space_name)
    wanted = None if not names else set(names)
    out = []
    for name in sorted(live):
        obj = live[name]
        if wanted is not None and name not in wanted:
            continue
        if not include_unowned and not _objects.owned(obj):
            continue
        view = _objects.plain_address(obj)
        view["status"] = _objects.status_view(obj)
        out.append(view)
    return out


# ------------------------------------------------------------ address space

def space_result(name, obj, extra=None):
    """The address_space result: the plain space, ``exists``, ``status``."""
    out = {"name": name, "type": None, "plan": None, "authentication_service": None, "exists": obj is not None}
    if obj is not None:
        out.update(_objects.plain_space(obj))
    out.update(extra or {})
    out["status"] = _objects.status_view(obj) if obj is not None else {
        "ready": False, "phase": None, "messages": [], "message_count": None, "owned": False, "reported": {}}
    return out


def converge_space(client, desired, force_conflicts=False, check_mode=False, wait=False, wait_timeout=120):
    """state=present for an AddressSpace object."""
    name = desired["name"]
    obj = client.get("AddressSpace", name)
    catalogue = read_catalogue(client)
    errs = no_plans_errors(client, catalogue) or _validation.validate_address_space(desired, catalogue)
    old = _objects.plain_space(obj) if obj is not None else {}
    if old.get("type") and old["type"] != desired.get("type"):
        errs.append("address_space.type: %r cannot change (it is %r); type is immutable: delete the "
                    "address space and create it again" % (desired.get("type"), old["type"]))
    if errs:
        raise ServiceError(errs)
    if old.get("plan") and old["plan"] != desired["plan"]:
        live = space_addresses(client, name)
        if live:
            current = dict((n, _objects.plain_address(o)) for n, o in live.items())
            addrs = [current[n] for n in sorted(current)]
            perrs = _validation.validate_addresses(desired, addrs, catalogue, current=current)
            if perrs:
                raise ServiceError(["plan change %r -> %r refused: %s" % (old["plan"], desired["plan"], e)
                                    for e in perrs])
    doc = _objects.space_object(desired)
    result_obj = obj
    if _objects.needs_apply(doc, obj):
        applied, failures = _apply.apply_all(client, [(name, doc)], force=force_conflicts, dry_run=check_mode)
        if failures:
            raise KubeError(_apply.error_messages(failures, {name: "address_space(%s)" % name}))
        result_obj = applied[name]
    changed = _objects.content(result_obj) != _objects.content(obj)
    after = _objects.plain_space(result_obj)
    if wait and not check_mode:
        def pending_of():
            seen = client.get("AddressSpace", name)
            return ({} if _objects.is_ready(seen) else {name: seen}), seen
        pending, result_obj = wait_until(client, wait_timeout, pending_of, "address space")
        if pending:
            raise ServiceError(not_ready_messages(pending, wait_timeout, "address space"),
                               result={"changed": changed, "address_space": space_result(name, result_obj)})
    return {"changed": changed, "diff": {"before": old, "after": after if changed else old},
            "address_space": space_result(name, result_obj), "namespace": client.namespace}


def delete_space(client, name, force=False, check_mode=False, wait=False, wait_timeout=120):
    """state=absent: the collection's Address and MessagingUser objects of the
    space, then the AddressSpace object, when the collection made it.
    Addresses holding messages need ``force`` (as on hosts)."""
    obj = client.get("AddressSpace", name)
    if obj is None:
        return {"changed": False, "diff": {"before": {}, "after": {}}, "address_space": space_result(name, None),
                "namespace": client.namespace}
    if not _objects.owned(obj):
        raise ServiceError("address space %r in namespace %r was not created by this collection (it lacks the "
                           "label app.kubernetes.io/managed-by=enmasse.messaging or the field manager "
                           "enmasse.messaging; owner: %s): not deleted"
                           % (name, client.namespace, _objects.owner(obj)))
    live, dups = space_address_objects(client, name)
    mine = dict((n, o) for n, o in live.items() if _objects.owned(o))
    names = sorted(mine)
    held = _check_deletes(names, live, force)
    if held:
        raise ServiceError(held)
    removed, failures = _apply.delete_all(client, "Address", [(n, mine[n]) for n in names], dry_run=check_mode)
    if failures:
        raise KubeError(_apply.error_messages(failures, dict((n, "address(%s)" % n) for n in names)),
                        result={"changed": bool(removed), "changes": {"deleted": sorted(removed)}})
    users, user_warnings = delete_space_users(client, name, check_mode)
    client.delete("AddressSpace", name, obj["metadata"].get("uid"), dry_run=check_mode)
    if wait and not check_mode:
        def pending_of():
            seen = client.get("AddressSpace", name)
            return ({name: seen} if seen is not None else {}), seen
        pending, unused = wait_until(client, wait_timeout, pending_of, "address space")
        if pending:
            raise ServiceError(["address space %r: still there after %ss (finalizers?)" % (name, wait_timeout)])
    warnings = user_warnings
    others = sorted(set(n for n in live if n not in mine) | set(dups))
    if others:
        warnings.append("address space %r deleted; %d address(es) not made by this collection are left for their "
                        "owner (or the operator) to remove: %s" % (name, len(others), ", ".join(others[:SHOWN])))
    before = _objects.plain_space(obj)
    result = {"changed": True, "changes": {"deleted": names, "deleted_users": users},
              "diff": {"before": dict(before, addresses=names), "after": {}},
              "address_space": dict(space_result(name, None), status={
                  "ready": False, "phase": PHASE_DELETED, "messages": [], "message_count": None, "owned": True,
                  "reported": {}}),
              "namespace": client.namespace}
    if warnings:
        result["warnings"] = warnings
    return result


def delete_space_users(client, name, check_mode=False):
    """The collection's MessagingUser objects of the space (``<space>.*``)
    go with it, as EnMasse's finalizer deletes a space's users; others are
    left and named. (deleted user names, warnings); nothing when the cluster
    does not serve the kind."""
    try:
        items, unused = client.list("MessagingUser")
    except KubeError as e:
        if e.status == 404:
            return [], []
        raise
    prefix = name + "."
    objs = dict((o["metadata"]["name"][len(prefix):], o) for o in items if o["metadata"]["name"].startswith(prefix))
    mine = sorted(n for n, o in objs.items() if _objects.owned(o))
    removed, failures = _apply.delete_all(client, "MessagingUser", [(n, objs[n]) for n in mine], dry_run=check_mode)
    if failures:
        raise KubeError(_apply.error_messages(failures, dict((n, "messaging user(%s)" % n) for n in mine)))
    others = sorted(n for n in objs if n not in mine)
    warnings = ["address space %r: %d MessagingUser object(s) not made by this collection are left for their owner "
                "(or the operator) to remove: %s" % (name, len(others), ", ".join(others[:SHOWN]))] if others else []
    return sorted(n for n in removed if removed[n]), warnings


def space_info(client, name):
    obj = client.get("AddressSpace", name)
    extra = {}
    if obj is not None:
        live = space_addresses(client, name)
        extra["owned_addresses"] = sum(1 for o in live.values() if _objects.owned(o))
    return space_result(name, obj, extra)
