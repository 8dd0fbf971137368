# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Applying a change set: Jolokia requests phase by phase, each phase in
parallel bulk batches; the ledger records what the broker accepted."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.diff import OP_DELETE_ADDRESS, OP_DESTROY_QUEUE, OP_REMOVE_SETTINGS
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError

# errors that mean "already gone" when deleting
GONE = ("AMQ229203", "AMQ229017")

# apply phases: what must exist before the next phase runs
WORKERS = 8


def commit(service, ledger, changes, check_mode):
    """Apply ``changes`` and record what the broker accepted in the ledger.
    Returns the errors (``{name: [messages]}``). A ledger that could not be
    written fails before the broker is changed (in check mode too: the real
    run would fail)."""
    if not changes.changed:
        return {}
    ledger.check_writable()
    if check_mode:
        return {}
    errors = service.apply(changes.requests) if changes.requests else {}
    for name, plain in changes.record.items():
        if name in errors:
            continue
        if plain is None:
            ledger.addresses.pop(name, None)
        else:
            ledger.addresses[name] = plain
    ledger.save()
    return errors


def failed(errors, changes):
    msgs = [m for name in sorted(errors) for m in errors[name]]
    result = {"changed": True, "changes": changes.as_dict(), "failed_addresses": sorted(errors)}
    return ServiceError(msgs, result)


def apply_requests(client, requests, workers=WORKERS):
    """Run (phase, name, request) triples phase by phase, each phase in
    parallel batches. Returns ``{name: [error, ...]}`` for what failed."""
    errors = {}
    for phase in sorted(set(p for p, unused, unused in requests)):
        batch = [(n, r) for p, n, r in requests if p == phase]
        # every worker gets work: the broker groups the journal syncs of
        # concurrent requests, so parallel batches create faster
        size = max(1, min(client.batch_size, -(-len(batch) // workers)))
        chunks = [batch[i:i + size] for i in range(0, len(batch), size)]
        with ThreadPoolExecutor(max(1, min(workers, len(chunks)))) as pool:
            results = list(pool.map(lambda c: client.bulk([r for unused, r in c], raise_errors=False), chunks))
        for chunk, res in zip(chunks, results):
            for (name, req), (unused, err) in zip(chunk, res):
                if err is None:
                    continue
                if req.get("operation") in (OP_DELETE_ADDRESS, OP_DESTROY_QUEUE, OP_REMOVE_SETTINGS) \
                        and any(code in str(err) for code in GONE):
                    continue
                errors.setdefault(name, []).append("address %r: %s" % (name, err))
    return errors
