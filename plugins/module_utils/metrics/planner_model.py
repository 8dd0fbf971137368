# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity planning job's ``--model`` document, built from what is
deployed on this host (connection files and ownership ledgers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils import ledger as _ledger
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics.collect import broker_connections, settings
from ansible_collections.enmasse.messaging.plugins.module_utils.model.validation import STORED_TYPES


def planner_model(params):
    """The ``--model`` document of the capacity planning job built from what
    is deployed on this host: every address space with a connection file
    (``address_spaces``/``spaces_dir`` as for a collection), its addresses from
    the ownership ledger, and the current placement (a brokered space's
    addresses live on its broker, the node name its samples carry).

    Returns (model, problems); a space whose ledger cannot be read is listed
    without addresses and named in ``problems``."""
    p = settings(params)
    spaces, placement, problems = [], {}, []
    for conn in broker_connections(p):
        name = conn["address_space"]
        space = {"name": name, "type": conn.get("type") or "brokered"}
        addresses = []
        try:
            led = _ledger.Ledger.load(conn.get("ledger_path"))
        except _ledger.LedgerError as e:
            problems.append("%s: %s" % (name, e))
            led = None
        if led is not None:
            for key in ("plan", "authentication_service"):
                if (led.space or {}).get(key):
                    space[key] = led.space[key]
            for addr_name in sorted(led.addresses):
                a = dict(led.addresses[addr_name])
                a.pop("address_space", None)
                a["address"] = a.get("address") or addr_name
                addresses.append(a)
        space.setdefault("plan", conn.get("plan"))
        space["addresses"] = addresses
        spaces.append(space)
        node = conn.get("broker_name") or name
        held = dict((a["address"], [node]) for a in addresses if a.get("type") in STORED_TYPES)
        if held:
            placement[name] = held
    return {"infra": p["infra"], "address_spaces": spaces, "current_placement": placement}, problems
