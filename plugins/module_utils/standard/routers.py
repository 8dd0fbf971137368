# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The routers of a standard infrastructure as the standard service uses
them: one management session to the control host's router (every other
router through the mesh), the owned entities of the reachable routers, the
diff and the apply. Thin over ``router.client``/``reader``/``diff``/``apply``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import mgmt_tls as _mgmt_tls
from ansible_collections.enmasse.messaging.plugins.module_utils.router import apply as _apply
from ansible_collections.enmasse.messaging.plugins.module_utils.router import client as _client
from ansible_collections.enmasse.messaging.plugins.module_utils.router import diff as _diff
from ansible_collections.enmasse.messaging.plugins.module_utils.router import reader as _reader
from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import RouterManagementError


def open_session(infra, timeout=None, exists=os.path.exists):
    """One management session to the mesh; ``timeout``: seconds a request
    may wait for its reply (default: the infrastructure's ``timeout``).
    An infrastructure file from before the router's management listener
    required TLS (plain URL, no ``management_tls``) gets a second try over
    TLS with the router role's client certificate (``mgmt_tls.upgraded``):
    during an upgrade the routers restart with the new listener before the
    standard play rewrites the file, and the keeper must restore them."""
    timeout = timeout or infra.get("timeout") or 60
    tls = infra.get("management_tls") or None
    try:
        return _client.ManagementSession(infra["management_url"], timeout=timeout, tls=tls)
    except RouterManagementError:
        retry = None if tls else _mgmt_tls.upgraded(infra["management_url"], exists)
        if retry is None:
            raise
        return _client.ManagementSession(retry[0], timeout=timeout, tls=retry[1])


def read(session, router_ids, prefixes, kinds=None):
    """({router: {name: entity}}, {router: {name: status}}) for the owned
    entities whose names start with one of ``prefixes`` (of ``kinds``, default
    all); a router that is not in the mesh now is ``None`` in the first
    (unreachable)."""
    mesh = set(session.routers())
    reachable = [r for r in router_ids if r in mesh]
    live, status = _reader.read_owned(session, reachable, kinds=kinds, check=False) if reachable else ({}, {})
    out_live, out_status = {}, {}
    for r in router_ids:
        if r not in mesh:
            out_live[r], out_status[r] = None, {}
            continue
        keep = [n for n in live.get(r, {}) if any(n.startswith(p) for p in prefixes)]
        out_live[r] = dict((n, live[r][n]) for n in keep)
        out_status[r] = dict((n, status[r][n]) for n in keep if n in status.get(r, {}))
    return out_live, out_status


def diff(desired, live):
    """The change set from ``live`` to ``desired`` on the reachable routers
    (owned entities in ``live`` that are not desired are deleted)."""
    return _diff.plan_changes(dict((r, d) for r, d in desired.items() if live.get(r) is not None),
                              dict((r, v) for r, v in live.items() if v is not None))


def apply(session, changes):
    """Apply; returns {"<router>/<name>": error} for what failed."""
    res = _apply.apply_changes(session, changes)
    errors = dict(("%s/%s" % (f["router"], f["name"]), f["error"]) for f in res["failed"])
    errors.update(("%s/%s" % (s["router"], s["name"]), "skipped: %s" % s["reason"]) for s in res["skipped"])
    return errors


def changed_names(changes):
    return set(c.name for c in changes)


def summary(changes):
    return changes.summary()


def diff_views(changes):
    d = changes.diff()
    return (dict(("router %s" % r, v) for r, v in d["before"].items()),
            dict(("router %s" % r, v) for r, v in d["after"].items()))


def created(changes):
    """{router: number of entities created}."""
    out = {}
    for c in changes:
        if c.op == _diff.CREATE:
            out[c.router] = out.get(c.router, 0) + 1
    return out


def change_summary(rchanges, bchanges, released=(), names=True):
    """What changed: per router the entity names (``names``) or their
    numbers, per broker the addresses, the released drains."""
    routers = summary(rchanges)
    if not names:
        routers = dict((r, dict((k, len(v)) for k, v in ops.items())) for r, ops in routers.items())
    out = {"routers": routers,
           "brokers": dict((b, ch.as_dict()) for b, ch in bchanges.items() if ch.changed)}
    if released:
        out["released"] = ["%s from %s" % (n, b) for n, b in released]
    return out


def address_diff(rchanges, bchanges, space):
    before, after = diff_views(rchanges)
    for b, ch in bchanges.items():
        if ch.changed:
            before["broker " + b] = ch.diff()["before"]
            after["broker " + b] = ch.diff()["after"]
    return {"before": before, "after": after}
