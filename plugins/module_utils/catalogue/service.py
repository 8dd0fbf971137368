# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plans as managed resources: converge the host's plan catalogue.

Read the stored catalogue, compare with the desired plans, refuse what would
break an address space that uses a plan, apply, report before/after.

Rules for a plan in use (docs/plans.md):

* deleting it (``state: absent``, ``prune``) is refused, naming its users;
* an address plan's ``address_type`` and an address space plan's
  ``address_space_type`` cannot change;
* an address space plan cannot drop an address plan that addresses of its
  spaces use;
* a change of credits or limits that takes a space over its quota is refused
  unless ``force``; then it is applied and reported as a warning (the space's
  addresses stay; new ones that cost credits are refused until it fits);
* a change of ``message_ttl``/``message_redelivery`` is applied; the result
  says which addresses get the new settings, at their next convergence.

Pure Python, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import glob
import json
import os

from ansible_collections.enmasse.messaging.plugins.module_utils import ledger as _ledger
from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue import store as _store
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import DEFAULT_SPACES_DIR
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError, ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement as _placement
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plan_documents as _plan_documents
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as _plans
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as _validation

ADDRESS_PLANS = "address_plans"
SPACE_PLANS = "address_space_plans"
KIND_LABEL = {ADDRESS_PLANS: "address plan", SPACE_PLANS: "address space plan"}
READERS = {ADDRESS_PLANS: _plans.read_address_plan, SPACE_PLANS: _plans.read_space_plan}
DOCUMENTS = {ADDRESS_PLANS: _plan_documents.address_plan_document, SPACE_PLANS: _plan_documents.space_plan_document}
SHOWN = 10
MANAGED_LABELS = {"app.kubernetes.io/managed-by": _store.OWNER_COLLECTION}


# ------------------------------------------------------------------ usage

def _spaces_from_dir(spaces_dir):
    """name -> ledger_path of the connection files in ``spaces_dir``."""
    out = {}
    for path in sorted(glob.glob(os.path.join(spaces_dir or DEFAULT_SPACES_DIR, "*.json"))):
        try:
            with open(path) as f:
                data = json.load(f)
        except (IOError, OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("address_space") and data.get("ledger_path"):
            out[data["address_space"]] = data["ledger_path"]
    return out


def space_usage(store, spaces_dir=None):
    """The address spaces that use the catalogue: name -> {type, plan,
    addresses: {address: its plain record}}, read from their ledgers (the
    registered spaces and the connection files in ``spaces_dir``)."""
    ledgers = _spaces_from_dir(spaces_dir)
    for name, rec in store.address_spaces.items():
        if rec.get("ledger_path"):
            ledgers[name] = rec["ledger_path"]
    out = {}
    for name in sorted(ledgers):
        try:
            ledger = _ledger.Ledger.load(ledgers[name])
        except _ledger.LedgerError as e:
            raise ServiceError("cannot tell which plans address space %r uses: %s" % (name, e))
        if not ledger.space or ledger.space.get("name") not in (None, name):
            continue  # deleted, or a stale registration
        out[name] = {"type": ledger.space.get("type"), "plan": ledger.space.get("plan"),
                     "addresses": ledger.addresses}
    return out


def users_of(kind, name, usage):
    """(address spaces, ["space/address", ...]) that use the plan."""
    if kind == SPACE_PLANS:
        return sorted(s for s, u in usage.items() if u["plan"] == name), []
    addrs = []
    for s in sorted(usage):
        addrs.extend("%s/%s" % (s, a) for a, rec in sorted(usage[s]["addresses"].items())
                     if isinstance(rec, dict) and rec.get("plan") == name)
    return sorted(set(a.split("/", 1)[0] for a in addrs)), addrs


def _some(items):
    shown = ", ".join(items[:SHOWN])
    return shown + (" and %d more" % (len(items) - SHOWN) if len(items) > SHOWN else "")


def in_use_summary(kind, name, usage):
    spaces, addrs = users_of(kind, name, usage)
    return {"address_spaces": spaces, "addresses": len(addrs)}


# ------------------------------------------------------------------ converge

# the plain fields each plan module takes as options (the single form)
FIELDS = {ADDRESS_PLANS: tuple(f for f in _plans.ADDRESS_PLAN_FIELDS if f != "name"),
          SPACE_PLANS: tuple(f for f in _plans.SPACE_PLAN_FIELDS if f != "name")}


def read_desired(kind, labelled):
    """Plain plans from (field path, item) pairs of the module's input (plain
    mappings or EnMasse documents); raises ConfigError with every violation."""
    plans, errors, seen = [], [], {}
    for where, item in labelled:
        plan, errs = READERS[kind](item, where)
        errors.extend(errs)
        if errs:
            continue
        if plan["name"] in seen:
            errors.append("%s.name: %r is listed twice (also at %s)" % (where, plan["name"], seen[plan["name"]]))
            continue
        seen[plan["name"]] = where
        plans.append(plan)
    if errors:
        raise ConfigError(errors)
    return plans


def plan_inputs(params, kind):
    """(desired plans, names to delete) from a plan module's parameters: the
    single form (``name`` and the fields, or ``definition``) or the bulk
    form (a list under ``kind``); raises ConfigError."""
    bulk = params.get(kind)
    # sub-options Ansible filled with None are not given
    fields = dict((k, _given(params[k])) for k in FIELDS[kind] if params.get(k) is not None)
    if bulk is not None:
        if params.get("state") == "absent":
            return [], [_name_of(kind, item, "%s[%d]" % (kind, i)) for i, item in enumerate(bulk)]
        return read_desired(kind, [("%s[%d]" % (kind, i), item) for i, item in enumerate(bulk)]), []
    if params.get("definition") is not None:
        doc = params["definition"]
        name = params.get("name")
        if name is not None and (doc.get("metadata") or {}).get("name") not in (None, name):
            raise ConfigError("definition.metadata.name: %r does not match name %r"
                              % ((doc.get("metadata") or {}).get("name"), name))
        if params.get("state") == "absent":
            return [], [_name_of(kind, doc, "definition")]
        return read_desired(kind, [("definition", doc)]), []
    if params.get("state") == "absent":
        return [], [params["name"]]
    return read_desired(kind, [(KIND_LABEL[kind].replace(" ", "_"), dict(fields, name=params["name"]))]), []


def _given(value):
    if isinstance(value, dict):
        return dict((k, v) for k, v in value.items() if v is not None)
    return value


def _name_of(kind, item, where):
    name = ((item.get("metadata") or {}).get("name") if _plans.is_document(item) else item.get("name")) \
        if isinstance(item, dict) else item
    errs = _plans.plan_name_errors(name, where + ".name")
    if errs:
        raise ConfigError(errs)
    return name


def converge_from_params(params, kind, check_mode):
    """The whole address_plan / address_space_plan module."""
    desired, absent = plan_inputs(params, kind)
    return converge_plans(params["catalogue_path"] or _store.DEFAULT_CATALOGUE_PATH, kind, desired, absent,
                          prune=params.get("prune"), force=params.get("force"), check_mode=check_mode,
                          spaces_dir=params.get("spaces_dir"), report_all=params.get(kind) is None)


def _quota_over(space_name, usage, catalogue):
    """Quota messages for a space's owned addresses under ``catalogue``
    (every address placed anew, in name order), or []."""
    u = usage[space_name]
    splan = catalogue.address_space_plan(u["plan"])
    if splan is None:
        return []
    owned = [u["addresses"][n] for n in sorted(u["addresses"]) if isinstance(u["addresses"][n], dict)]
    space = {"name": space_name, "type": u["type"], "plan": u["plan"]}
    items = _validation.placement_items(owned, catalogue)
    res = _placement.place(items, brokers=["broker"], limits=splan.get("resource_limits") or {},
                           capacity=float("inf"))
    if not res.pending:
        return []
    over = sorted(res.pending)
    return ["address space %r would be over the quota of plan %r: %d of its addresses would not fit (%s)"
            % (space["name"], splan["name"], len(over), _some(over))]


def _consequences(kind, name, old, new, usage, new_catalogue):
    """(errors, warnings, affected) of changing plan ``name`` from ``old``
    to ``new`` (None: deleted) while ``usage`` uses it."""
    spaces, addrs = users_of(kind, name, usage)
    if not spaces:
        return [], [], {}
    label = "%s %r" % (KIND_LABEL[kind], name)
    users = ("address spaces %s" % _some(spaces)) if kind == SPACE_PLANS else \
        ("%d address(es): %s" % (len(addrs), _some(addrs)))
    if new is None:
        return ["%s cannot be deleted: it is used by %s" % (label, users)], [], {}
    errors, warnings, quota = [], [], []
    if kind == ADDRESS_PLANS:
        if old.get("address_type") != new.get("address_type"):
            errors.append("%s: address_type %r cannot change to %r while it is used by %s"
                          % (label, old.get("address_type"), new.get("address_type"), users))
        if (old.get("resources"), old.get("partitions")) != (new.get("resources"), new.get("partitions")):
            for s in spaces:
                quota.extend(_quota_over(s, usage, new_catalogue))
        if (old.get("message_ttl"), old.get("message_redelivery")) != \
                (new.get("message_ttl"), new.get("message_redelivery")):
            warnings.append("%s: the new message_ttl/message_redelivery reach the broker when the addresses that use "
                            "it are converged next (%s)" % (label, users))
    else:
        if old.get("address_space_type") != new.get("address_space_type"):
            errors.append("%s: address_space_type %r cannot change to %r while it is used by %s"
                          % (label, old.get("address_space_type"), new.get("address_space_type"), users))
        dropped = set(old.get("address_plans") or []) - set(new.get("address_plans") or [])
        for s in spaces:
            using = sorted((rec.get("plan"), "%s/%s" % (s, a)) for a, rec in usage[s]["addresses"].items()
                           if isinstance(rec, dict) and rec.get("plan") in dropped)
            if using:
                errors.append("%s: address_plans cannot drop %s while addresses use them: %s"
                              % (label, ", ".join(sorted(set(p for p, unused in using))),
                                 _some([a for unused, a in using])))
        if old.get("resource_limits") != new.get("resource_limits"):
            for s in spaces:
                quota.extend(_quota_over(s, usage, new_catalogue))
    return errors, warnings, {"address_spaces": spaces, "addresses": len(addrs), "quota": quota}


def converge_plans(path, kind, desired, absent=(), prune=False, force=False, check_mode=False, spaces_dir=None,
                   report_all=True):
    """Converge the ``kind`` plans of the catalogue at ``path``.

    ``desired``: plain plans (``read_desired``); ``absent``: names to delete;
    ``prune``: delete the plans this collection wrote that are not desired.
    Returns the module result. Nothing is written on any error, nor in check
    mode.
    """
    with (contextlib.nullcontext() if check_mode else _store.locked(path)):
        store = _store.CatalogueStore.load(path)
        return _converge(store, kind, desired, absent, prune, force, check_mode, spaces_dir, report_all)


def _converge(store, kind, desired, absent, prune, force, check_mode, spaces_dir, report_all, usage_of=None):
    """The plan change on ``store`` (the host's catalogue file, or any object
    with its interface: the kubernetes backend's plan objects); ``usage_of()``
    says which address spaces use the plans (default: the host's ledgers)."""
    errors, warnings = [], []
    wanted = dict((p["name"], p) for p in desired)
    for name in absent:
        if name in wanted:
            errors.append("%s %r is listed both as present and as absent" % (KIND_LABEL[kind], name))
    deletes = [n for n in absent if store.plan(kind, n) is not None]
    if prune:
        deletes.extend(n for n in store.names(kind) if store.owner(kind, n) == _store.OWNER_COLLECTION
                       and n not in wanted and n not in deletes)
    created = [n for n in wanted if store.plan(kind, n) is None]
    updated = [n for n in wanted if n not in created and store.plan(kind, n) != wanted[n]]
    old_cat = store.catalogue()
    new_cat = old_cat.copy()
    put = new_cat.put_address_plan if kind == ADDRESS_PLANS else new_cat.put_space_plan
    drop = new_cat.remove_address_plan if kind == ADDRESS_PLANS else new_cat.remove_space_plan
    for n in created + updated:
        put(wanted[n])
    for n in deletes:
        drop(n)
    # references between plans: only errors this change makes count
    before = set(old_cat.integrity_errors())
    errors.extend(e for e in new_cat.integrity_errors() if e not in before)
    for n in deletes:
        if kind == ADDRESS_PLANS:
            listing = [sp for sp in new_cat.address_space_plan_names()
                       if n in (new_cat.address_space_plan(sp).get("address_plans") or [])]
            if listing:
                errors.append("address plan %r cannot be deleted: address space plan(s) %s list it; remove it "
                              "there first" % (n, ", ".join(listing)))
    affected = {}
    if updated or deletes:
        usage = usage_of() if usage_of is not None else space_usage(store, spaces_dir)
        for n in updated + deletes:
            errs, warns, aff = _consequences(kind, n, store.plan(kind, n), wanted.get(n), usage, new_cat)
            errors.extend(errs)
            warnings.extend(warns)
            if aff.get("quota"):
                if force:
                    warnings.extend(aff["quota"])
                else:
                    errors.extend("%s (use force: true to apply it anyway)" % q for q in aff["quota"])
            if aff:
                affected[n] = {"address_spaces": aff["address_spaces"], "addresses": aff["addresses"]}
    if errors:
        raise ServiceError(errors)
    changed = bool(created or updated or deletes)
    if changed and not check_mode:
        store.check_writable()
        for n in created + updated:
            store.put(kind, wanted[n])
        for n in deletes:
            store.remove(kind, n)
        store.save()
    old = old_cat.address_plan if kind == ADDRESS_PLANS else old_cat.address_space_plan
    diff = {"before": dict((n, old(n)) for n in updated + deletes),
            "after": dict((n, wanted[n]) for n in created + updated)}
    listed = list(wanted) if report_all else created + updated
    result = {"changed": changed, "changes": {"created": created, "updated": updated, "deleted": deletes},
              "diff": diff, "plans": [plan_view(kind, wanted[n]) for n in listed],
              "catalogue_path": store.path}
    if affected:
        result["in_use"] = affected
    if warnings:
        result["warnings"] = warnings
    return result


def plan_view(kind, plan, owner=None, usage=None):
    """A plan as the modules return it: the plain plan, its EnMasse document,
    who owns it and who uses it."""
    out = dict(plan)
    out["document"] = DOCUMENTS[kind](plan, MANAGED_LABELS if owner in (None, _store.OWNER_COLLECTION) else
                                      {"app": "enmasse"})
    if owner is not None:
        out["owner"] = owner
    if usage is not None:
        out["in_use"] = in_use_summary(kind, plan["name"], usage)
    return out


def plan_info(path, kind, names=None, spaces_dir=None, with_usage=True):
    """The stored plans of ``kind`` (all, or ``names``), each a ``plan_view``."""
    store = _store.CatalogueStore.load(path)
    usage = space_usage(store, spaces_dir) if with_usage else None
    picked = store.names(kind) if not names else [n for n in names if store.plan(kind, n) is not None]
    return {"plans": [plan_view(kind, store.plan(kind, n), store.owner(kind, n), usage) for n in picked],
            "missing": [n for n in (names or []) if store.plan(kind, n) is None],
            "catalogue_path": store.path, "stored": store.exists}


# ---------------------------------------------------- used by the space modules

def load_catalogue(params, conn=None):
    """(store, catalogue) the address and address_space modules validate against."""
    store = _store.CatalogueStore.load(_store.catalogue_path(params, conn))
    return store, store.catalogue()


def registration_needed(store, space, ledger_path):
    """True when the catalogue does not record ``space`` as it is."""
    return store.address_spaces.get(space["name"]) != \
        {"type": space.get("type"), "plan": space.get("plan"), "ledger_path": ledger_path}


def register_space(store, space, ledger_path, check_mode=False):
    """Record in the catalogue that ``space`` uses it (address_space)."""
    if check_mode or not registration_needed(store, space, ledger_path):
        return
    with _store.locked(store.path):
        fresh = _store.CatalogueStore.load(store.path)
        if fresh.register_space(space["name"], space.get("type"), space.get("plan"), ledger_path):
            fresh.check_writable()
            fresh.save()


def unregister_space(store, name, check_mode=False):
    if check_mode or name not in store.address_spaces:
        return
    with _store.locked(store.path):
        fresh = _store.CatalogueStore.load(store.path)
        if fresh.unregister_space(name):
            fresh.save()
