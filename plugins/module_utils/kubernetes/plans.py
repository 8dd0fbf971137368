# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plans on a cluster: the AddressPlan and AddressSpacePlan objects of the
namespace are the catalogue. The plan modules' rules (plans in use protected,
integrity, quota, prune of the collection's own plans only) are the hosts
backend's, run by ``catalogue.service._converge`` over ``PlanObjects``, an
object with the catalogue store's interface whose ``save`` applies (or
dry-runs) the changes with server-side apply. Usage comes from the
AddressSpace and Address objects of the namespace. No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue import service as _catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import apply as _apply
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import objects as _objects
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import (
    FIELD_MANAGER, MANAGED_LABELS, KubeError)
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plan_documents as _plan_documents
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as _plans

KIND = {_catalogue.ADDRESS_PLANS: "AddressPlan", _catalogue.SPACE_PLANS: "AddressSpacePlan"}
READERS = {_catalogue.ADDRESS_PLANS: _plans.read_address_plan, _catalogue.SPACE_PLANS: _plans.read_space_plan}


class PlanObjects(object):
    """The plan objects of a namespace, with the interface of
    ``catalogue.store.CatalogueStore``."""

    def __init__(self, client, force_conflicts=False, dry_run=False):
        self.client = client
        self.force_conflicts = force_conflicts
        self.dry_run = dry_run
        self.path = "namespace %s" % client.namespace
        self.exists = True
        self.live = {}
        self.records = {}
        for kind in KIND:
            items, unused = client.list(KIND[kind])
            self.live[kind] = dict((o["metadata"]["name"], o) for o in items)
            self.records[kind] = {}
            for name, obj in self.live[kind].items():
                plan, unused = READERS[kind](dict((k, v) for k, v in obj.items() if k != "status"), name)
                plan["name"] = name
                self.records[kind][name] = plan
        self.puts, self.removes = [], []

    def catalogue(self):
        return _plans.Catalogue.with_default_infra(list(self.records[_catalogue.SPACE_PLANS].values()),
                                                   list(self.records[_catalogue.ADDRESS_PLANS].values()))

    def owner(self, kind, name):
        obj = self.live[kind].get(name)
        return _objects.owner(obj) if obj is not None else None

    def plan(self, kind, name):
        plan = self.records[kind].get(name)
        return dict(plan) if plan is not None else None

    def names(self, kind):
        return sorted(self.records[kind])

    def put(self, kind, plan):
        self.puts.append((kind, plan))

    def remove(self, kind, name):
        self.removes.append((kind, name))

    def check_writable(self):
        """Nothing to check before: RBAC answers the first request."""

    def save(self):
        docs = [("%s/%s" % (KIND[kind], plan["name"]), _plan_documents.to_document(plan, KIND[kind], MANAGED_LABELS))
                for kind, plan in self.puts]
        unused, failures = _apply.apply_all(self.client, docs, force=self.force_conflicts, dry_run=self.dry_run)
        objs = [("%s/%s" % (KIND[kind], name), kind, self.live[kind][name]) for kind, name in self.removes]
        for key, kind, obj in objs:
            try:
                self.client.delete(KIND[kind], obj["metadata"]["name"], obj["metadata"].get("uid"),
                                   dry_run=self.dry_run)
            except KubeError as e:
                failures[key] = e
        if failures:
            raise KubeError(_apply.error_messages(failures, {}))


def usage_of(client):
    """The address spaces of the namespace that use plans: name -> {type,
    plan, addresses: {address: plain}} (every space and address, whoever
    made them: a plan in use is protected from anyone)."""
    def read():
        spaces, unused = client.list("AddressSpace")
        addresses, unused = client.list("Address")
        out = {}
        for obj in spaces:
            plain = _objects.plain_space(obj)
            out[obj["metadata"]["name"]] = {"type": plain.get("type"), "plan": plain.get("plan"), "addresses": {}}
        for obj in addresses:
            space = _objects.space_of_address(obj)
            if space in out:
                plain = _objects.plain_address(obj)
                out[space]["addresses"][plain.get("address")] = plain
        return out
    return read


def converge_plans(client, params, kind, check_mode):
    """The address_plan / address_space_plan module on a cluster."""
    desired, absent = _catalogue.plan_inputs(params, kind)
    store = PlanObjects(client, force_conflicts=params.get("force_conflicts"), dry_run=check_mode)
    # state: absent deletes only the collection's own plans (as prune and the address modules do):
    # the role's example plans and plans made by hand or by EnMasse's install stay
    wanted = set(p["name"] for p in desired)
    others = [n for n in absent if n not in wanted and store.plan(kind, n) is not None
              and store.owner(kind, n) != FIELD_MANAGER]
    absent = [n for n in absent if n not in others]
    # check mode runs the same change with dryRun=All: refusals and conflicts are the server's
    result = _catalogue._converge(store, kind, desired, absent, params.get("prune"), params.get("force"),
                                  False, None, params.get(kind) is None, usage_of=usage_of(client))
    result.pop("catalogue_path", None)
    result["namespace"] = client.namespace
    if others:
        result.setdefault("warnings", []).append(
            "not deleted, not made by this collection: %s" % ", ".join(
                "%s %s (owner: %s)" % (KIND[kind], n, store.owner(kind, n)) for n in others))
    return result


def plan_info(client, kind, names=None):
    store = PlanObjects(client)
    usage = usage_of(client)()
    picked = store.names(kind) if not names else [n for n in names if store.plan(kind, n) is not None]
    plans = []
    for n in picked:
        view = _catalogue.plan_view(kind, store.plan(kind, n), store.owner(kind, n), usage)
        plans.append(view)
    return {"plans": plans, "missing": [n for n in (names or []) if store.plan(kind, n) is None],
            "namespace": client.namespace}
