# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Applying a router change set (diff.py) over one management session: the
phases of ``ChangeSet.phases()`` one after the other, each phase on every
router at once (pipelined). A failure never stops the other routers or
entities; the create of a replaced entity whose delete failed is skipped
(it would only fail with "already exists"). Returns what was done and what
failed, per router and entity."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import Request, RouterManagementError
from ansible_collections.enmasse.messaging.plugins.module_utils.router.diff import CREATE, DELETE, UPDATE
from ansible_collections.enmasse.messaging.plugins.module_utils.router.reader import entity_type

OPERATIONS = {CREATE: "CREATE", UPDATE: "UPDATE", DELETE: "DELETE"}


def request_for(change):
    """The management request of one change."""
    return Request(OPERATIONS[change.op], entity_type(change.kind), name=change.name, router=change.router,
                   attributes=change.attributes if change.op != DELETE else None, tag=change)


def apply_changes(session, changes):
    """Apply a ``ChangeSet``. Returns {"changed": bool, "done": [change
    dicts], "failed": [change dicts with "error"], "skipped": [...]}; each
    change dict names op, router, type and name; "error" names the router,
    the entity and the router's reason."""
    done, failed, skipped = [], [], []
    broken = set()  # (router, name) whose delete failed
    for phase in changes.phases():
        todo = []
        for change in phase:
            if change.op == CREATE and change.replace and (change.router, change.name) in broken:
                skipped.append(dict(change.as_dict(), reason="its delete failed"))
                continue
            todo.append(change)
        for reply in session.execute([request_for(c) for c in todo]):
            change = reply.request.tag
            if reply.ok:
                done.append(change.as_dict())
                continue
            failed.append(dict(change.as_dict(), error=reply.error().errors[0], status=reply.status))
            if change.op == DELETE:
                broken.add((change.router, change.name))
    return {"changed": bool(done), "done": done, "failed": failed, "skipped": skipped}


def check_applied(result):
    """Raise ``RouterManagementError`` listing every failed change (its
    ``result`` is what was done) when anything failed; else return
    ``result``."""
    if result["failed"]:
        errors = [f["error"] for f in result["failed"]]
        errors += ["%s %s %s on router %s skipped: %s" % (s["op"], s["type"], s["name"], s["router"], s["reason"])
                   for s in result["skipped"]]
        raise RouterManagementError(errors, result=result)
    return result
