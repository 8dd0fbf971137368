# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service for a brokered address space on ActiveMQ Artemis.

Composes the backend's parts: ``client`` (Jolokia), ``reader`` (the live
state), ``diff`` (desired vs live), ``apply`` (bulk requests, ledger) and
``ledger`` (ownership). Follows the pattern of middleware_automation.keycloak:
the *current* object is always read from the live broker (type reconstructed
from routing types and queues, settings from the address settings, plan from
the ledger), never from what we think we did last time.

Mapping (one Artemis instance per brokered space):

* queue        ANYCAST address + durable ANYCAST queue of the same name
* deadletter   the same shape as a queue
* topic        MULTICAST address (no queue)
* subscription durable MULTICAST queue named <address> on the topic's address
               (clients consume from ``<topic>::<address>``), max-consumers from
               ``subscription.max_consumers``
* settings     per-address settings (``addAddressSettings(match, json)``) from
               ``plans.effective_settings``; queues and topics only
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import apply as _apply
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as _client
from ansible_collections.enmasse.messaging.plugins.module_utils import ledger as _ledger
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader as _reader
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.diff import (
    Changes, current_for_validation, messages_held, plan_changes)
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.reader import (
    applied_status, deleted_status, entry_type, is_internal, live_view, status_of)
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.settings import (
    ARTEMIS_SETTINGS_TYPES, artemis_settings, clean_address, desired_view, visible_settings)
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import resolve_connection, secrets_of
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError, ConfigError, ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import requests as _requests
from ansible_collections.enmasse.messaging.plugins.module_utils.model import status as _status


class BrokeredService(object):
    """The live broker of one brokered address space, through Jolokia."""

    def __init__(self, client, broker_name, workers=_apply.WORKERS):
        self.client = client
        self.broker_name = broker_name
        self.mbean = _client.broker_mbean(broker_name)
        self.workers = workers

    def read(self):
        """Broker attributes and live entries (``reader.read_live``)."""
        return _reader.read_live(self.client, self.broker_name)

    def read_settings(self, names):
        """Merged address settings for ``names`` plus the baseline (``None``)."""
        return _reader.read_settings(self.client, self.broker_name, names)

    def apply(self, requests):
        """Run (phase, name, request) triples (``apply.apply_requests``)."""
        return _apply.apply_requests(self.client, requests, self.workers)


# ------------------------------------------------------------- opening a space

def service_for(conn):
    return BrokeredService(_client.client_for(conn), conn["broker_name"])


def open_space(params, space_name, hide=None, supported_only=True):
    """Connection, ledger, address space (name, type, plan) and the service
    for a module working on ``space_name``. ``hide(secrets)`` is called with
    the connection's secrets as soon as they are known (the runner masks them
    in the module's output); with ``supported_only``, an address space type
    that is not implemented fails."""
    conn = resolve_connection(params, space_name)
    if hide is not None:
        hide(secrets_of(conn))
    ledger = _ledger.Ledger.load(conn["ledger_path"])
    check_space_owner(ledger, space_name)
    space = space_of(ledger, conn, space_name)
    if supported_only:
        check_supported(space["type"])
    return conn, ledger, space, service_for(conn)


def check_supported(space_type):
    msg = not_supported(space_type)
    if msg:
        raise ConfigError(msg)


def space_of(ledger, conn, name):
    """The address space (name, type, plan) the ledger or connection file knows."""
    rec = ledger.space or {}
    return {"name": name, "type": rec.get("type") or conn.get("type") or "brokered",
            "plan": rec.get("plan") or conn.get("plan")}


def not_supported(space_type):
    """A type this backend (one Artemis broker per space) does not serve: a
    standard space reaches it only when the space's connection file says
    brokered (the modules send type standard to the standard backend)."""
    if space_type == "standard":
        return ("address space type 'standard' is not served by a brokered space's broker (this space's "
                "connection file says brokered): standard spaces run on the routers and the broker pool of "
                "the standard infrastructure (the enmasse.messaging.standard role, docs/standard-spaces.md); "
                "use type brokered here or another space name")
    return None


def diff_against_live(service, live, owned, present, deletes, catalogue, force):
    """The changes from ``live`` to ``present`` (clean plain addresses) with
    ``deletes`` removed; reads the address settings that matter in bulk.
    Refuses deleting addresses that hold messages unless ``force``.
    Returns the changes and the wanted Artemis settings per address."""
    wanted = dict((a["address"], artemis_settings(a, catalogue)) for a in present)
    had = dict((n, artemis_settings(owned[n], catalogue)) for n in list(wanted) + list(deletes) if n in owned)
    need = [n for n in list(wanted) + list(deletes) if n in live and (wanted.get(n) or had.get(n))]
    merged = service.read_settings(need) if need else {None: {}}
    changes = plan_changes(present, deletes, live, owned, merged, catalogue, service.mbean, merged.get(None),
                           wanted, had)
    if not force:
        held = messages_held(changes.removing, live)
        if held:
            raise ServiceError(held)
    return changes, wanted


# --------------------------------------------------------------- addresses

def converge_addresses(service, ledger, space, catalogue, present, absent, prune=False,
                       force=False, check_mode=False, report="all", positions=None):
    """Converge the addresses of a brokered space.

    ``present``: plain addresses that must exist; ``absent``: names that must
    not. Everything is validated first (every violation at once); then the
    live broker is read, compared, and changed in bulk; the ledger records
    what the broker accepted. Returns the module result; ``report`` says
    which addresses it lists: ``all`` named in the task, only the ``changed``
    ones (created, updated, deleted), or ``none``. ``positions[i]``: the
    index of ``present[i]`` in the task, for the messages.
    """
    owned = dict(ledger.addresses)  # snapshot: committing changes the ledger
    broker, live = service.read()
    deletes, warnings = _requests.address_request(
        space, catalogue, present, absent, owned, prune=prune, positions=positions,
        current=lambda gone: current_for_validation(present, live, owned, gone))

    present = [clean_address(a) for a in present]
    changes, wanted = diff_against_live(service, live, owned, present, deletes, catalogue, force)
    errors = _apply.commit(service, ledger, changes, check_mode)
    if errors:
        raise _apply.failed(errors, changes)
    # statuses from the state read before the change plus what the broker
    # accepted (no second read: it costs seconds with thousands of queues)
    applied = set() if check_mode else set(changes.record)
    listed = None if report == "all" else set(changes.record) if report == "changed" else set()
    addresses = []
    for a in present:
        name = a["address"]
        if listed is not None and name not in listed:
            continue
        view = changes.after.get(name) or desired_view(a, catalogue, wanted.get(name))
        view = dict(view)
        if name in applied:
            view["status"] = applied_status(live.get(name), True)
        else:
            view["status"] = status_of(live.get(name), name in ledger.addresses)
        addresses.append(view)
    for name in absent:
        if listed is not None and name not in listed:
            continue
        entry = live.get(name)
        if name in applied or entry is None:
            view = desired_view(owned[name], catalogue) if name in owned else {"address": name}
            view["status"] = deleted_status()
        else:
            view = live_view(entry, ledger.addresses.get(name))
            view["status"] = status_of(entry, name in ledger.addresses)
        addresses.append(view)
    result = {"changed": changes.changed, "addresses": addresses, "changes": changes.as_dict(),
              "diff": changes.diff()}
    skipped = [n for n in absent if n not in owned and n in live]
    if skipped:
        warnings.append("not deleted, not owned by this collection (created by hand?): %s" % ", ".join(skipped))
    if warnings:
        result["warnings"] = warnings
    return result


def address_info(service, ledger, catalogue, names=None, include_unowned=True):
    """Live addresses of the space (owned ones always, others if asked), each
    a plain address with ``status``; owned addresses missing on the broker
    are listed with phase Pending."""
    unused, live = service.read()
    owned = ledger.addresses
    wanted = None if not names else set(names)
    picked = []
    for name in sorted(set(live) | set(owned)):
        if wanted is not None and name not in wanted:
            continue
        mine = owned.get(name)
        if mine is None and (not include_unowned or is_internal(name)):
            continue
        picked.append(name)
    need = [n for n in picked if n in live and entry_type(live[n], owned.get(n)) in ARTEMIS_SETTINGS_TYPES]
    merged = service.read_settings(need) if need else {None: {}}
    out = []
    for name in picked:
        mine = owned.get(name)
        entry = live.get(name)
        if entry is None:
            view = clean_address(mine)
        else:
            keys = artemis_settings(mine, catalogue) if mine else ()
            view = live_view(entry, mine, visible_settings(merged.get(name), merged.get(None), keys))
        view["status"] = status_of(entry, mine is not None)
        out.append(view)
    return out


# ------------------------------------------------------------ address space

def space_status(broker, live, ledger, endpoints, error=None):
    missing = sorted(n for n in ledger.addresses if live is not None and n not in live)
    notes = []
    if missing:
        notes.append("%d owned address(es) missing on the broker: %s"
                     % (len(missing), ", ".join(missing[:20]) + (", ..." if len(missing) > 20 else "")))
    started = bool(broker and broker.get("Started", True))
    return _status.space_status(bool(ledger.space), [] if started or error else ["the broker is not started"],
                                error, notes, endpoints=[endpoint_status(e) for e in endpoints or []])


def endpoint_status(ep):
    return {"name": ep.get("name"), "host": ep.get("host"), "port": ep.get("port"),
            "protocols": list(ep.get("protocols") or []), "tls": bool(ep.get("tls"))}


def check_space_owner(ledger, name):
    if ledger.space and ledger.space.get("name") not in (None, name):
        raise ServiceError("the ledger %s belongs to address space %r, not %r: check ledger_path"
                           % (ledger.path, ledger.space.get("name"), name))


def converge_space(service, ledger, desired, catalogue, endpoints, check_mode=False):
    """state=present for a brokered address space."""
    name = desired["name"]
    old = ledger.space or {}
    if not old.get("type") and not_supported(desired.get("type")):
        raise ServiceError(not_supported(desired.get("type")))
    read = []

    def current():  # the broker is read after the space itself passed
        read.extend(service.read())
        return dict((n, live_view(e, ledger.addresses.get(n))) for n, e in read[1].items())
    _requests.space_request(desired, catalogue, old, ledger.addresses, current=current)
    broker, live = read or service.read()
    record = _requests.space_record(desired)
    changed = record != (ledger.space or {})
    before = copy.deepcopy(ledger.space) if ledger.space else {}
    if changed:
        ledger.check_writable()
    if changed and not check_mode:
        ledger.space = record
        ledger.save()
    status = space_status(broker, live, ledger if not check_mode else _with_space(ledger, record), endpoints)
    return {"changed": changed, "diff": {"before": before, "after": record},
            "address_space": _status.space_result(name, record, status, {"endpoints": desired.get("endpoints")})}


def _with_space(ledger, record):
    view = copy.copy(ledger)
    view.space = record
    return view


def delete_space(service, ledger, name, catalogue, force=False, check_mode=False):
    """state=absent: delete every owned address, then clear the ledger."""
    before = copy.deepcopy(ledger.space) if ledger.space else {}
    if not ledger.exists:
        return {"changed": False, "diff": {"before": {}, "after": {}},
                "address_space": _status.space_result(name, None, space_status(None, None, ledger, []))}
    ledger.check_writable()
    owned = dict(ledger.addresses)
    names = sorted(owned)
    changes = Changes()
    if names:
        unused, live = service.read()
        changes, unused = diff_against_live(service, live, owned, [], names, catalogue, force)
    errors = _apply.commit(service, ledger, changes, check_mode)
    if errors:
        raise _apply.failed(errors, changes)
    if not check_mode:
        ledger.remove()
    return {"changed": True, "changes": changes.as_dict(),
            "diff": {"before": dict(before, addresses=names), "after": {}},
            "address_space": _status.deleted_space(name)}


def space_info(service, ledger, name, endpoints):
    """address_space_info: what the ledger records and how the broker is."""
    broker, live, error = None, None, None
    try:
        broker, live = service.read()
    except (ServiceError, ClientError) as e:
        error = str(e)
    status = space_status(broker, live, ledger, endpoints, error)
    extra = {"owned_addresses": len(ledger.addresses)} if ledger.space else {}
    return _status.space_result(name, ledger.space, status, extra)
