# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Desired router entities vs live ones -> a change set per router. Pure:
``plan_changes`` reads and writes nothing.

Both sides are ``{router_id: {name: {"type": kind, **attributes}}}``. Config
entities have no UPDATE: a changed one is deleted and created again; a
changed vhost is updated (its ``hostname`` is its identity: a new hostname is
a delete and a create). Creates run in dependency order (``CREATE_ORDER``),
deletes in the reverse order, all deletes before any create (a listener
moving its port to another one frees it first). Only owned entities (name
``enmasse/...``) are ever touched; live ones the collection does not own are
ignored, desired ones it would not own are an error."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.router.reader import KINDS, normalise, owned

CREATE_ORDER = ("vhost", "authServicePlugin", "connector", "listener", "address", "linkRoute", "autoLink")
DELETE_ORDER = tuple(reversed(CREATE_ORDER))
UPDATABLE = ("vhost",)
CREATE, UPDATE, DELETE = "create", "update", "delete"


class Change(object):
    """One operation on one router: ``op`` create/update/delete, the entity's
    ``kind`` and ``name``, ``attributes`` to send (create/update; write-only
    ones included) and ``before`` (the live attributes; None for a create)."""

    __slots__ = ("op", "router", "kind", "name", "attributes", "before", "replace")

    def __init__(self, op, router, kind, name, attributes=None, before=None, replace=False):
        self.op = op
        self.router = router
        self.kind = kind
        self.name = name
        self.attributes = attributes
        self.before = before
        self.replace = replace  # half of a DELETE + CREATE of a changed entity

    def as_dict(self):
        return {"op": self.op, "router": self.router, "type": self.kind, "name": self.name}

    def __repr__(self):
        return "Change(%s %s %s on %s)" % (self.op, self.kind, self.name, self.router)


class ChangeSet(object):
    """The changes per router, each router's list in the order to apply
    (deletes in reverse dependency order, vhost updates, creates in
    dependency order)."""

    def __init__(self, per_router):
        self.per_router = per_router

    @property
    def changed(self):
        return any(self.per_router.values())

    def __iter__(self):
        for router in sorted(self.per_router):
            yield from self.per_router[router]

    def __len__(self):
        return sum(len(v) for v in self.per_router.values())

    def phases(self):
        """Lists of changes that may run together (over every router): each
        delete kind (reverse order), the vhost updates, each create kind."""
        steps = [(DELETE, k) for k in DELETE_ORDER] + [(UPDATE, k) for k in UPDATABLE] + [(CREATE, k) for k in CREATE_ORDER]
        out = []
        for op, kind in steps:
            batch = [c for c in self if c.op == op and c.kind == kind]
            if batch:
                out.append(batch)
        return out

    def summary(self):
        """{router: {"create": [names], "update": [...], "delete": [...],
        "replace": [names deleted and created again]}} for the routers with a
        change: what ``changed`` and a module's result report."""
        out = {}
        for router, changes in sorted(self.per_router.items()):
            if not changes:
                continue
            entry = {CREATE: [], UPDATE: [], DELETE: [], "replace": []}
            for c in changes:
                if c.replace:
                    if c.op == CREATE:
                        entry["replace"].append(c.name)
                    continue
                entry[c.op].append(c.name)
            out[router] = dict((k, sorted(v)) for k, v in entry.items() if v)
        return out

    def diff(self):
        """{"before": {router: {name: attrs}}, "after": ...} of the entities
        that change (write-only attributes never shown)."""
        before, after = {}, {}
        for c in self:
            if c.before is not None:
                before.setdefault(c.router, {})[c.name] = dict(c.before, type=c.kind)
            if c.op in (CREATE, UPDATE):
                after.setdefault(c.router, {})[c.name] = dict(normalise(c.kind, c.attributes), type=c.kind)
        return {"before": before, "after": after}


def desired_errors(desired):
    """Every problem of a desired state (unknown kind, name not owned)."""
    errors = []
    for router, entities in sorted((desired or {}).items()):
        for name, entity in sorted((entities or {}).items()):
            kind = (entity or {}).get("type")
            if kind not in KINDS:
                errors.append("router %s entity %s: type %r is not one of %s"
                              % (router, name, kind, ", ".join(sorted(KINDS))))
            if not owned(name):
                errors.append("router %s entity %r: the name must start with 'enmasse/' (the collection "
                              "manages only what it owns)" % (router, name))
    return errors


def _attrs(entity):
    return dict((k, v) for k, v in entity.items() if k != "type")


def plan_changes(desired, live, prune=True):
    """The change set taking ``live`` to ``desired`` on every router of
    ``desired`` (a router in ``live`` only is left alone). ``prune``: delete
    the owned live entities that are not desired. Raises ``ValidationError``
    listing every bad desired entity."""
    errors = desired_errors(desired)
    if errors:
        raise ValidationError(errors)
    per_router = {}
    # every router usually gets the same entity objects: normalise each once
    wanted_cache = {}

    def wanted(entity, attrs):
        key = id(entity)
        if key not in wanted_cache:
            wanted_cache[key] = (entity, normalise(entity["type"], attrs))  # the entity keeps its id unique
        return wanted_cache[key][1]

    for router in sorted(desired):
        want = desired[router] or {}
        have = dict((n, e) for n, e in ((live or {}).get(router) or {}).items() if owned(n))
        deletes, updates, creates = [], [], []
        for name, entity in want.items():
            kind = entity["type"]
            attrs = _attrs(entity)
            current = have.get(name)
            if current is None:
                creates.append(Change(CREATE, router, kind, name, attrs))
                continue
            live_attrs = normalise(current["type"], _attrs(current))
            if current["type"] == kind and live_attrs == wanted(entity, attrs):
                continue
            if (current["type"] == kind and kind in UPDATABLE
                    and live_attrs.get("hostname") == wanted(entity, attrs).get("hostname")):
                updates.append(Change(UPDATE, router, kind, name, attrs, before=live_attrs))
                continue
            deletes.append(Change(DELETE, router, current["type"], name, before=live_attrs, replace=True))
            creates.append(Change(CREATE, router, kind, name, attrs, replace=True))
        if prune:
            for name, entity in have.items():
                if name not in want:
                    deletes.append(Change(DELETE, router, entity["type"], name,
                                          before=normalise(entity["type"], _attrs(entity))))
        deletes.sort(key=lambda c: (DELETE_ORDER.index(c.kind), c.name))
        updates.sort(key=lambda c: c.name)
        creates.sort(key=lambda c: (CREATE_ORDER.index(c.kind), c.name))
        per_router[router] = deletes + updates + creates
    return ChangeSet(per_router)
