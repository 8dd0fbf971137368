# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Applying a change set to the cluster: server-side applies and deletes in
parallel (a thread pool over one connection pool), every refusal collected,
nothing retried blindly. A field manager conflict is reported with the
fields and the managers that own them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeError

WORKERS = 16
_CONFLICT_MANAGER = re.compile(r'conflict with "([^"]*)"(?: using ([^:]*))?')


def conflict_message(label, conflicts):
    """One message for a field manager conflict: the fields, who owns them."""
    by_manager = {}
    for field, message in conflicts:
        m = _CONFLICT_MANAGER.search(message or "")
        manager = m.group(1) if m else (message or "another field manager")
        by_manager.setdefault(manager, []).append(field)
    owners = "; ".join("%s owned by field manager %r" % (", ".join(sorted(fields)), manager)
                       for manager, fields in sorted(by_manager.items()))
    return ("%s: conflict: %s; another manager set a different value: set force_conflicts: true to take "
            "the field(s) over" % (label, owners))


def run(calls, workers=WORKERS):
    """Run ``calls`` ((key, callable) pairs) in parallel; returns
    ({key: result}, {key: KubeError})."""
    results, errors = {}, {}
    if not calls:
        return results, errors

    def one(item):
        key, fn = item
        try:
            return key, fn(), None
        except KubeError as e:
            return key, None, e

    if len(calls) == 1:
        outcomes = [one(calls[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(calls))) as pool:
            outcomes = list(pool.map(one, calls))
    for key, result, error in outcomes:
        if error is None:
            results[key] = result
        else:
            errors[key] = error
    return results, errors


def apply_all(client, docs, force=False, dry_run=False, workers=WORKERS):
    """Server-side apply every (key, document); ({key: object}, {key: KubeError})."""
    return run([(key, (lambda d=doc: client.apply(d, force=force, dry_run=dry_run))) for key, doc in docs], workers)


def delete_all(client, kind, objs, dry_run=False, workers=WORKERS):
    """Delete every (key, live object), each only if its uid is unchanged."""
    return run([(key, (lambda o=obj: client.delete(kind, o["metadata"]["name"], o["metadata"].get("uid"),
                                                   dry_run=dry_run))) for key, obj in objs], workers)


def error_messages(errors, labels):
    """Messages for {key: KubeError}, conflicts spelled out; ``labels[key]``
    names the object as the task did."""
    out = []
    for key in sorted(errors, key=lambda k: str(labels.get(k, k))):
        e = errors[key]
        label = labels.get(key, key)
        if e.conflicts:
            out.append(conflict_message(label, e.conflicts))
        else:
            out.extend("%s: %s" % (label, m) for m in e.errors)
    return out
