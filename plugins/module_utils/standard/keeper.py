# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The router keeper: brings a restarted router back to what the ledgers say.

qdrouterd keeps what management creates in memory only: a router that
restarts (a crash, kill -9, a reboot) comes back with its config file and
nothing else. The keeper runs on the control host (systemd service
``enmasse-router-keeper``, installed by the router role), watches every
router's ``uptimeSeconds`` through the mesh, and when a router is new to it,
came back, or restarted (its uptime went down), re-creates on that router the
entities the ledgers of the standard spaces describe: the same desired state
the modules compute (``service.desired_routers``), the same diff and apply.
Nothing is read from the brokers and nothing on them changes. Entities the
ledgers do not know are left alone here: pruning is the modules' job.

    python -m ansible_collections.enmasse.messaging.plugins.module_utils.standard.keeper \\
        --infrastructure-file /etc/enmasse-messaging/standard.json [--interval 2] [--timeout 10] [--once]
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import glob
import logging
import os
import sys
import time

from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as _ent
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as _infra
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import routers as _routers
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as _service

LOG = logging.getLogger("enmasse-router-keeper")
# seconds a management request of the keeper waits for its reply: a router
# that was just killed stays in the mesh's list for a moment, and a request
# routed to it is answered by nobody; with the modules' timeout (60 s) the
# keeper sat out a whole minute before it restored the restarted router
REQUEST_TIMEOUT = 10.0
ROUTER_TYPE = "org.apache.qpid.dispatch.router"


def desired_state(service):
    """{name: entity} every router should carry, from every standard space's
    ledger. A ledger that cannot be read (not JSON, an unknown format, entries
    of the wrong shape) is skipped and logged, naming the file and the error:
    the other spaces are restored all the same."""
    desired = _ent.connector_entities(service.infra["brokers"], service.infra.get("link_capacity"))
    for path in sorted(glob.glob(os.path.join(service.infra["ledger_dir"], "*.json"))):
        try:
            desired.update(space_entities(service, path))
        except Exception as e:  # pylint: disable=broad-except
            LOG.error("skipping the ledger %s (its space is not restored): %s", path, e)
    return desired


def space_entities(service, path):
    """The router entities of the space whose ledger is ``path`` ({} when it has no listener yet)."""
    space = os.path.basename(path)[:-len(".json")]
    ledger = _infra.SpaceLedger.load(path)
    if not ledger.space or not ledger.space.get("port"):
        return {}
    addrs = [ledger.addresses[n] for n in sorted(ledger.addresses)]
    homes = dict((n, h.get("brokers") or []) for n, h in ledger.homes.items() if h.get("placed"))
    draining = dict((n, h.get("draining")) for n, h in ledger.homes.items() if h.get("draining"))
    return _service.desired_routers(service, space, ledger.space["port"], addrs, homes, draining, ledger.space)


def restore(service, session, router_ids):
    """Create on ``router_ids`` what they lack of the desired state (and
    replace what differs). Returns {router: number of entities created}."""
    desired = service.per_router(desired_state(service))
    live, unused = _routers.read(session, service.router_ids, [_ent.PREFIX])
    want = dict((r, desired[r]) for r in router_ids if live.get(r) is not None)
    # only what is missing or different: never delete here
    have = dict((r, dict((n, e) for n, e in (live[r] or {}).items() if n in desired[r])) for r in want)
    changes = _routers.diff(want, have)
    if changes.changed:
        errors = _routers.apply(session, changes)
        for key in sorted(errors):
            LOG.error("restore %s: %s", key, errors[key])
    return _routers.created(changes)


def uptimes(session, router_ids):
    """{router: uptime seconds or None when it does not answer}."""
    out = {}
    mesh = set(session.routers())
    reach = [r for r in router_ids if r in mesh]
    results = dict(zip(reach, session.query_many([(r, ROUTER_TYPE, ("uptimeSeconds",)) for r in reach])))
    for rid in router_ids:
        rows, failed = results.get(rid, ([], True))
        out[rid] = rows[0].get("uptimeSeconds") if rows and failed is None else None
    return out


def watch(infra_path, interval=2.0, once=False, timeout=REQUEST_TIMEOUT):
    seen = {}
    while True:
        try:
            service = _service.StandardService(_infra.load_infra(infra_path))
            with _routers.open_session(service.infra, timeout) as session:
                up = uptimes(session, service.router_ids)
                todo = [r for r, u in up.items() if u is not None and (r not in seen or seen[r] is None
                                                                       or u < seen[r])]
                if todo:
                    made = restore(service, session, todo)
                    for r in todo:
                        LOG.info("router %s (up %ss): %d entities restored", r, up[r], made.get(r, 0))
                seen = up
        except Exception as e:  # pylint: disable=broad-except
            LOG.warning("cannot look at or restore the routers (tried again in %ss): %s", interval, e)
            seen = dict((r, None) for r in seen)
        if once:
            return
        time.sleep(interval)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--infrastructure-file", default=_infra.DEFAULT_INFRA_FILE)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--timeout", type=float, default=REQUEST_TIMEOUT,
                        help="seconds a management request waits for its reply")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    watch(args.infrastructure_file, args.interval, args.once, args.timeout)


if __name__ == "__main__":
    main()
