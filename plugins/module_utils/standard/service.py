# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service for standard address spaces: a mesh of qdrouterd routers in front
of a pool of Artemis brokers (docs/standard-spaces.md).

One call converges routers and brokers together: validate everything first
(nothing is touched on bad input), place the stored addresses on the pool
(``model.placement``: partitions, first-fit, quota -> Pending, stable homes,
drain on plan change), read the live routers (``router.reader``, all in
parallel over one pipelined management connection) and brokers
(``artemis.reader``), diff both, apply (brokers first: a queue exists before
its autoLinks attach), record in the space's ledger, report status read from
the routers (autoLink/linkRoute ``operStatus`` on every router) and brokers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import time

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import apply as _artemis_apply
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as _artemis_client
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader as _artemis_reader
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import service as _artemis_service
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.settings import (
    clean_address, desired_view)
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError, ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import requests as _requests
from ansible_collections.enmasse.messaging.plugins.module_utils.model import status as _status
from ansible_collections.enmasse.messaging.plugins.module_utils.model.status import (
    PHASE_ACTIVE, PHASE_CONFIGURING, PHASE_PENDING)
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as _validation
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as _ent
from ansible_collections.enmasse.messaging.plugins.module_utils.standard.homes import placement_for
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as _infra
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mqtt_service as _mqtt
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import routers as _routers
from ansible_collections.enmasse.messaging.plugins.module_utils.standard.routers import address_diff, change_summary

STORED = _validation.STORED_TYPES
# the kinds of a space's own entities (vhost, auth plugin, listener) and the broker connectors
SPACE_KINDS = (_ent.VHOST, _ent.AUTH_PLUGIN, _ent.LISTENER, _ent.CONNECTOR)
READY_WAIT = 15.0


class StandardService(object):
    """The routers and the broker pool of one standard infrastructure."""

    def __init__(self, infra):
        self.infra = infra
        self.router_ids = [r["id"] for r in infra["routers"]]
        # routers sharing one host (tests, a lab) listen on port + port_offset
        self.port_offsets = dict((r["id"], int(r.get("port_offset") or 0)) for r in infra["routers"])
        self.broker_names = [b["name"] for b in infra["brokers"]]
        self.brokers = dict((b["name"], b) for b in infra["brokers"])
        # brokers leaving the pool (scale in): no new placement, their addresses move off
        self.draining_brokers = [b["name"] for b in infra["brokers"] if b.get("state") == _infra.BROKER_DRAINING]
        self._clients = {}

    # ----------------------------------------------------------- brokers
    def jolokia(self, name):
        if name not in self._clients:
            b = self.brokers[name]
            self._clients[name] = _artemis_client.JolokiaClient(
                b["management_url"], b["management_user"], b["management_password"],
                origin=b.get("management_origin") or "http://localhost", timeout=self.infra["timeout"],
                ca_file=b.get("management_ca"))
        return self._clients[name]

    def broker(self, name):
        """Pool broker ``name`` as the brokered backend's service."""
        return _artemis_service.BrokeredService(self.jolokia(name), self.brokers[name]["broker_name"])

    def read_brokers(self, space):
        """{broker: {internal name: live entry}} for the space's names on every pool broker."""
        prefix = _ent.internal(space, "")
        out = {}
        for name in self.broker_names:
            b = self.brokers[name]
            try:
                unused, live = _artemis_reader.read_live(self.jolokia(name), b["broker_name"])
            except (ServiceError, ClientError) as e:
                raise ServiceError("broker %r of the pool: %s" % (name, e))
            out[name] = dict((n, e) for n, e in live.items() if n.startswith(prefix))
        return out

    # ----------------------------------------------------------- routers
    def per_router(self, desired):
        """{router: desired}: the same entities everywhere, the space
        listeners on each router's port (port + the router's port_offset)."""
        out = {}
        for rid in self.router_ids:
            off = self.port_offsets.get(rid, 0)
            if not off:
                out[rid] = desired
                continue
            mine = dict(desired)
            for name, ent in desired.items():
                if ent["type"] == _ent.LISTENER:
                    mine[name] = dict(ent, port=str(int(ent["port"]) + off))
            out[rid] = mine
        return out

    def session(self):
        return _routers.open_session(self.infra)

    def read_routers(self, session, space, kinds=None):
        """The space's entities and the broker connectors on every router
        (``kinds``: only those, e.g. ``SPACE_KINDS``: a space's own entities
        without its addresses, which may be tens of thousands)."""
        return _routers.read(session, self.router_ids, [_ent.space_prefix(space), _ent.BROKER_CONNECTOR], kinds)


# ------------------------------------------------------------------ opening

def open_space(params, space_name, hide=None):
    infra = _infra.load_infra(params.get("infrastructure_file") or _infra.DEFAULT_INFRA_FILE)
    _infra.set_timeout(infra, params.get("timeout"))
    if hide is not None:
        hide(_infra.infra_secrets(infra))
    ledger = _infra.load_ledger(infra, space_name)
    return infra, ledger, StandardService(infra)


def space_of(ledger, name):
    rec = ledger.space or {}
    return {"name": name, "type": "standard", "plan": rec.get("plan")}


# ------------------------------------------------------------------ the desired state

def anonymous(record):
    """EnMasse's authentication service type ``none``: no authentication."""
    return ((record or {}).get("authentication_service") or {}).get("type") == "none"


def placed(ledger):
    """The addresses of a ledger that are placed (in the routers), by name."""
    return [ledger.addresses[n] for n in sorted(ledger.addresses) if (ledger.homes.get(n) or {}).get("placed")]


def space_level(service, space, port, record=None, addresses=()):
    """``addresses``: the placed ones (the vhost lets clients reach only those)."""
    desired = _ent.connector_entities(service.infra["brokers"], service.infra.get("link_capacity"))
    desired.update(_ent.space_entities(space, port, service.infra["auth_service"],
                                       bind_host=service.infra["bind_host"], anonymous=anonymous(record),
                                       addresses=addresses, routers=service.router_ids,
                                       link_capacity=service.infra.get("link_capacity"),
                                       tls=service.infra.get("client_tls")))
    desired.update(_mqtt.router_entities(space, (record or {}).get("mqtt_service"), service.infra["auth_service"],
                                         service.infra["bind_host"], service.infra.get("client_tls"), addresses))
    return desired


def desired_routers(service, space, port, addresses, homes, draining, record=None):
    desired = space_level(service, space, port, record, [a for a in addresses if a["address"] in homes])
    for a in addresses:
        name = a["address"]
        if name not in homes:
            continue
        topic_homes = homes.get(a.get("topic")) or [] if a["type"] == "subscription" else ()
        desired.update(_ent.address_entities(space, a, homes[name], draining.get(name, ()), topic_homes))
    return desired


def desired_brokers(service, space, addresses, homes, draining):
    """{broker: [broker-side plain addresses]}."""
    out = dict((b, []) for b in service.broker_names)
    for a in addresses:
        name = a["address"]
        for b in list(homes.get(name) or []) + list(draining.get(name) or []):
            if b in out:
                out[b].append(_ent.broker_address(space, a))
    return out


def owned_on_brokers(service, space, ledger):
    out = dict((b, {}) for b in service.broker_names)
    for name, a in ledger.addresses.items():
        h = ledger.homes.get(name) or {}
        for b in list(h.get("brokers") or []) + list(h.get("draining") or []):
            if b in out:
                out[b][_ent.internal(space, name)] = _ent.broker_address(space, a)
    return out


# ------------------------------------------------------------------ converge addresses

def broker_changes(service, space, catalogue, want, owned, live, force):
    """Per broker: the artemis change set from its live state to ``want``
    (artemis.service.diff_against_live on each pool broker)."""
    out = {}
    held = []
    for b in service.broker_names:
        present = want.get(b) or []
        names = set(a["address"] for a in present)
        # an owned address on the broker that the ledger forgot is left alone
        deletes = sorted(n for n in owned.get(b, {}) if n not in names)
        try:
            out[b], unused = _artemis_service.diff_against_live(
                service.broker(b), live.get(b) or {}, owned[b], present, deletes, catalogue, force)
        except ServiceError as e:  # messages held: every broker's at once
            held.extend("broker %r: %s" % (b, m) for m in e.errors)
    if held:
        raise ServiceError(held)
    return out


def _validate(space, catalogue, present, absent, ledger, prune, positions):
    """The request's rules (model/requests.py); the quota is the placement's
    (an address over it is Pending, not refused)."""
    deletes, unused = _requests.address_request(space, catalogue, present, absent, dict(ledger.addresses),
                                                prune=prune, positions=positions, check_quota=False)
    return deletes


def converge_addresses(service, ledger, space, catalogue, present, absent, prune=False, force=False,
                       check_mode=False, report="all", positions=None, diff_mode=True):
    """Converge the addresses of a standard space on its routers and brokers."""
    splan = catalogue.address_space_plan(space["plan"])
    if splan is None:
        raise ServiceError(_validation.space_plan_missing(space, catalogue))
    port = (ledger.space or {}).get("port")
    if not port:
        raise ServiceError("address space %r has no listener yet: converge it with enmasse.messaging.address_space "
                           "(type standard) first" % space["name"])
    deletes = _validate(space, catalogue, present, absent, ledger, prune, positions)
    present = [clean_address(a) for a in present]
    name_s = space["name"]
    listed = set(a["address"] for a in present)
    # the whole space after the change: the listed addresses plus the owned ones that stay
    kept = [ledger.addresses[n] for n in sorted(ledger.addresses) if n not in listed and n not in set(deletes)]
    whole = present + [clean_address(a) for a in kept]
    live_brokers = service.read_brokers(name_s)
    homes, draining, pending, released = placement_for(service, name_s, splan, whole, catalogue, ledger, live_brokers)
    with service.session() as session:
        live_routers, router_status = service.read_routers(session, name_s)
        desired = desired_routers(service, name_s, port, whole, homes, draining, ledger.space)
        desired_all = service.per_router(desired)
        rchanges = _routers.diff(desired_all, live_routers)
        want = desired_brokers(service, name_s, whole, homes, draining)
        owned = owned_on_brokers(service, name_s, ledger)
        bchanges = broker_changes(service, name_s, catalogue, want, owned, live_brokers, force)
        new_homes = dict((n, {"brokers": homes.get(n, []), "draining": draining.get(n, []),
                              "placed": n in homes}) for n in (a["address"] for a in whole))
        record_changed = (dict((a["address"], a) for a in whole) != ledger.addresses
                          or new_homes != ledger.homes)
        changed = rchanges.changed or any(ch.changed for ch in bchanges.values()) or record_changed
        if changed:
            ledger.check_writable()
        if changed and not check_mode:
            _apply(service, session, ledger, rchanges, bchanges, whole, new_homes, released)
            live_routers, router_status = _wait_ready(service, session, name_s, desired)
            live_brokers = service.read_brokers(name_s) if any(ch.changed for ch in bchanges.values()) \
                else live_brokers
    statuses = address_statuses(service, name_s, whole, homes, draining, pending, desired, live_routers,
                                router_status, live_brokers, applied=check_mode is False)
    out = _reported(whole, present, absent, statuses, pending, set(_changed_addresses(rchanges, bchanges, name_s)),
                    report, catalogue)
    # the router entities by name only in diff mode: 10,000 addresses are 50,000 entities (megabytes)
    result = {"changed": changed, "addresses": out,
              "changes": change_summary(rchanges, bchanges, released, names=diff_mode)}
    if diff_mode:
        result["diff"] = address_diff(rchanges, bchanges, name_s)
    warnings = ["address %r is Pending: %s" % (n, r) for n, r in sorted(pending.items())]
    skipped = [n for n in absent if n not in ledger.addresses and n not in set(deletes)]
    if skipped:
        warnings.append("not deleted, not owned by this collection: %s" % ", ".join(skipped))
    if warnings:
        result["warnings"] = warnings
    return result


def _apply(service, session, ledger, rchanges, bchanges, whole, new_homes, released):
    """Brokers first (a queue exists before its autoLinks attach), routers,
    then broker deletes; the ledger records the result, failures or not."""
    errors = {}
    for b, ch in bchanges.items():
        creates = [r for r in ch.requests if not _is_delete(r)]
        errors.update(_artemis_apply.apply_requests(service.jolokia(b), creates))
    errors.update(_routers.apply(session, rchanges))
    for b, ch in bchanges.items():
        deletes_b = [r for r in ch.requests if _is_delete(r)]
        errors.update(_artemis_apply.apply_requests(service.jolokia(b), deletes_b))
    ledger.addresses = dict((a["address"], a) for a in whole)
    ledger.homes = new_homes
    ledger.save()
    if errors:
        raise ServiceError(["%s" % m for k in sorted(errors) for m in _as_list(errors[k])],
                           {"changed": True, "changes": change_summary(rchanges, bchanges, released)})


def _reported(whole, present, absent, statuses, pending, changed_names, report, catalogue):
    """The addresses the result lists (``report``: all named in the task,
    the changed ones, or none); a Pending address is always reported: it is
    not there, and why."""
    wanted_names = set(a["address"] for a in present)
    out = []
    for a in whole:
        n = a["address"]
        if n not in pending and (report == "none" or (report == "changed" and n not in changed_names)
                                 or (report == "all" and n not in wanted_names)):
            continue
        view = desired_view(a, catalogue)
        view["status"] = statuses[n]
        out.append(view)
    if report != "none":
        out.extend({"address": n, "status": _status.deleted()} for n in absent)
    return out


def _as_list(v):
    return v if isinstance(v, list) else [v]


def _is_delete(phase_name_request):
    req = phase_name_request[2]
    op = req.get("operation") or ""
    return op.startswith("deleteAddress") or op.startswith("destroyQueue") or op.startswith("removeAddressSettings")


def _wait_ready(service, session, space, desired, timeout=READY_WAIT):
    """Re-read the routers until every autoLink/linkRoute of the space is
    active on every router, or ``timeout`` (links attach asynchronously)."""
    links = [(n, e["type"]) for n, e in desired.items() if e["type"] in _ent.LINK_KINDS]
    deadline = time.time() + timeout
    while True:
        live, status = service.read_routers(session, space)
        inactive = [(r, n) for r in service.router_ids for n, kind in links
                    if not _ent.entity_ready(kind, (status.get(r) or {}).get(n, {}).get("operStatus"))]
        if not inactive or time.time() > deadline:
            return live, status
        time.sleep(0.5)


def address_statuses(service, space, addresses, homes, draining, pending, desired, live_routers, router_status,
                     live_brokers, applied=True):
    by_addr = {}
    for ename in desired:
        by_addr.setdefault(_ent.address_of_entity(space, ename), []).append(ename)
    out = {}
    for a in addresses:
        n = a["address"]
        if n in pending:
            out[n] = {"ready": False, "phase": PHASE_PENDING, "messages": [pending[n]], "brokers": [],
                      "routers": []}
            continue
        msgs = []
        for r in service.router_ids:
            live = live_routers.get(r)
            if live is None:
                msgs.append("router %r is unreachable" % r)
                continue
            for ename in by_addr.get(n, []):
                if ename not in live:
                    msgs.append("router %r lacks %s" % (r, ename))
                else:
                    st = (router_status.get(r) or {}).get(ename, {}).get("operStatus")
                    if not _ent.entity_ready(desired[ename]["type"], st):
                        msgs.append("router %r: %s %s is %s" % (r, desired[ename]["type"], ename, st or "unknown"))
        message_count = 0
        per_broker = {}
        for b in homes.get(n) or []:
            entry = (live_brokers.get(b) or {}).get(_ent.internal(space, n))
            if a["type"] in STORED and a["type"] != "subscription" and entry is None:
                msgs.append("broker %r lacks %s" % (b, _ent.internal(space, n)))
            elif entry is not None:
                per_broker[b] = entry.get("message_count", 0)
                message_count += per_broker[b]
        ready = not msgs
        st = {"ready": ready, "phase": PHASE_ACTIVE if ready else PHASE_CONFIGURING, "messages": msgs,
              "brokers": list(homes.get(n) or []), "routers": list(service.router_ids)}
        if a["type"] in STORED:
            st["message_count"] = message_count
            st["message_counts"] = per_broker
        if draining.get(n):
            st["draining"] = list(draining[n])
            st["messages"] = st["messages"] + ["draining from %s (the old broker keeps only its outgoing link "
                                               "until it is empty)" % ", ".join(draining[n])]
        out[n] = st
    return out


def _changed_addresses(rchanges, bchanges, space):
    names = set()
    for ename in _routers.changed_names(rchanges):
        a = _ent.address_of_entity(space, ename)
        if a:
            names.add(a)
    pre = _ent.internal(space, "")
    for ch in bchanges.values():
        for n in list(ch.created) + list(ch.updated) + list(ch.deleted):
            names.add(n[len(pre):] if n.startswith(pre) else n)
    return names


# ------------------------------------------------------------------ address info

def address_info(service, ledger, space, catalogue, names=None):
    wanted = None if not names else set(names)
    addrs = [clean_address(ledger.addresses[n]) for n in sorted(ledger.addresses)
             if wanted is None or n in wanted]
    homes = dict((n, h.get("brokers") or []) for n, h in ledger.homes.items() if h.get("placed"))
    draining = dict((n, h.get("draining")) for n, h in ledger.homes.items() if h.get("draining"))
    pending = dict((n, "not placed: quota exceeded or no broker with room (converge again to retry)")
                   for n in ledger.addresses if n not in homes)
    live_brokers = service.read_brokers(space["name"])
    port = (ledger.space or {}).get("port")
    with service.session() as session:
        live_routers, status = service.read_routers(session, space["name"])
    desired = desired_routers(service, space["name"], port or 0, addrs, homes, draining, ledger.space)
    st = address_statuses(service, space["name"], addrs, homes, draining, pending, desired, live_routers, status,
                          live_brokers)
    out = []
    for a in addrs:
        view = desired_view(a, catalogue)
        view["status"] = st[a["address"]]
        out.append(view)
    return out


# ------------------------------------------------------------------ the address space

def endpoints(service, port, space=None):
    """One per router: ``amqps-<id>`` (``protocols``: amqps, and amqp when
    plain AMQP is turned on too), or ``amqp-<id>`` without TLS; then one per
    MQTT gateway instance serving ``space`` (the infrastructure file's
    ``mqtt_gateways``): ``mqtts-<host>`` on its TLS port and ``mqtt-<host>``
    on its plain port when it has one."""
    tls = service.infra.get("client_tls") or {}
    protocols = (["amqps"] + (["amqp"] if tls.get("plain") else [])) if tls.get("ssl_profile") else ["amqp"]
    out = []
    for r in service.infra["routers"]:
        out.append({"name": "%s-%s" % (protocols[0], r["id"]), "host": r.get("host") or r["id"],
                    "port": port + int(r.get("port_offset") or 0),
                    "protocols": list(protocols)})
    for g in service.infra.get("mqtt_gateways") or []:
        for s in g.get("spaces") or []:
            if space is None or s["name"] != space:
                continue
            for proto, key in (("mqtts", "tls_port"), ("mqtt", "plain_port")):
                if s.get(key):
                    out.append({"name": "%s-%s" % (proto, g["host"]), "host": g["host"], "port": int(s[key]),
                                "protocols": [proto]})
    return out


def space_status(service, space, ledger, live_routers, router_status, error=None):
    msgs = []
    port = (ledger.space or {}).get("port")
    names = list(space_level(service, space, port or 0, ledger.space).keys())
    reachable = []
    for r in service.router_ids:
        live = (live_routers or {}).get(r)
        if live is None:
            msgs.append("router %r is unreachable" % r)
            continue
        reachable.append(r)
        missing = [n for n in names if n not in live]
        if missing:
            msgs.append("router %r lacks %s" % (r, ", ".join(sorted(missing))))
        for n, st in (router_status.get(r) or {}).items():
            if n.startswith(_ent.BROKER_CONNECTOR) and st.get("connectionStatus") not in (None, "SUCCESS"):
                msgs.append("router %r: connector %s is %s" % (r, n, st.get("connectionStatus")))
    return _status.space_status(bool(ledger.space), msgs, error,
                                endpoints=endpoints(service, port, space) if port else [],
                                routers=[{"id": r, "reachable": r in reachable} for r in service.router_ids],
                                brokers=list(service.broker_names))


def converge_space(service, ledger, desired, catalogue, connection_file=None, check_mode=False):
    name = desired["name"]
    old = ledger.space or {}
    _requests.space_request(desired, catalogue, old, ledger.addresses)
    record = _requests.space_record(desired, port=old.get("port") or _infra.allocate_port(service.infra, name))
    port = record["port"]
    mqtt, mqtt_ops, unused = _mqtt.plan(service, name, old.get("mqtt_service"), ledger.homes,
                                        lambda *more: _infra.allocate_port(service.infra, name, own=[port] + list(more)))
    if mqtt:
        record["mqtt_service"] = mqtt
    with service.session() as session:
        live, status = service.read_routers(session, name, _mqtt.kinds(SPACE_KINDS, mqtt or old.get("mqtt_service")))
        want = space_level(service, name, port, record, placed(ledger))
        # the space's address entities stay as they are: only the space-level ones are converged here
        scope = set(want) | set(n for r in live.values() for n in r
                                if n in [_ent.space_prefix(name) + k for k in ("vhost", "auth", "amqp")]
                                + _mqtt.entity_names(name))
        desired_all = service.per_router(want)
        live_scoped = dict((r, dict((n, e) for n, e in ents.items() if n in scope)) for r, ents in live.items())
        rchanges = _routers.diff(desired_all, live_scoped)
        changed = rchanges.changed or record != old or bool(mqtt_ops)
        if changed:
            ledger.check_writable()
        if changed and not check_mode:
            errors = dict(("mqtt %d" % i, m) for i, m in enumerate(_mqtt.apply_broker_requests(service, mqtt_ops)))
            errors.update(_routers.apply(session, rchanges))
            if errors:
                raise ServiceError(["%s" % m for k in sorted(errors) for m in _as_list(errors[k])])
            ledger.space = record
            ledger.save()
            if connection_file:
                _infra.write_connection_file(connection_file, connection_data(service, name, record, ledger.path))
            live, status = service.read_routers(session, name, _mqtt.kinds(SPACE_KINDS, mqtt or old.get("mqtt_service")))
        view = copy.copy(ledger)
        view.space = record
        st = space_status(service, name, view, live, status)
        if mqtt:  # check mode: the queue is there when nothing is to be done on the brokers
            st["mqtt_service"] = _mqtt.status(service, name, mqtt, live, status, not mqtt_ops if check_mode else
                                              _mqtt.broker_queue_state(service, mqtt["broker"], name))
    before = dict(old)
    return {"changed": changed, "diff": {"before": before, "after": record},
            "changes": {"routers": _routers.summary(rchanges), "brokers": _mqtt.describe(mqtt_ops)},
            "address_space": _status.space_result(name, record, st)}


def connection_data(service, name, record, ledger_path):
    return {"address_space": name, "type": "standard", "plan": record.get("plan"),
            "infrastructure_file": service.infra["path"], "ledger_path": ledger_path,
            "endpoints": endpoints(service, record["port"], name)}


def delete_space(service, ledger, name, catalogue, force=False, check_mode=False, connection_file=None):
    before = copy.deepcopy(ledger.space) if ledger.space else {}
    if not ledger.exists:
        return {"changed": False, "diff": {"before": {}, "after": {}},
                "address_space": _status.deleted_space(name)}
    ledger.check_writable()
    live_brokers = service.read_brokers(name)
    owned = owned_on_brokers(service, name, ledger)
    bchanges = broker_changes(service, name, catalogue, {}, owned, live_brokers, force)
    with service.session() as session:
        live, unused = service.read_routers(session, name)
        pre = _ent.space_prefix(name)
        live_space = dict((r, dict((n, e) for n, e in ents.items() if n.startswith(pre))) for r, ents in live.items())
        rchanges = _routers.diff(dict((r, {}) for r in service.router_ids), live_space)
        mqtt_ops = _mqtt.removal(service, name, (ledger.space or {}).get("mqtt_service"))
        if not check_mode:
            errors = _routers.apply(session, rchanges)
            errors.update(("mqtt %d" % i, m) for i, m in enumerate(_mqtt.apply_broker_requests(service, mqtt_ops)))
            for b, ch in bchanges.items():
                errors.update(_artemis_apply.apply_requests(service.jolokia(b), ch.requests))
            if errors:
                raise ServiceError(["%s" % m for k in sorted(errors) for m in _as_list(errors[k])])
            ledger.remove()
            if connection_file:
                import os
                if os.path.exists(connection_file):
                    os.unlink(connection_file)
    return {"changed": True, "changes": change_summary(rchanges, bchanges),
            "diff": {"before": dict(before, addresses=sorted(ledger.addresses) if check_mode else []), "after": {}},
            "address_space": _status.deleted_space(name)}


def space_info(service, ledger, name):
    live, status, error = None, {}, None
    try:
        with service.session() as session:
            live, status = service.read_routers(session, name, _mqtt.kinds(SPACE_KINDS, (ledger.space or {}).get("mqtt_service")))
    except (ServiceError, ClientError) as e:
        error = str(e)
    st = space_status(service, name, ledger, live or {}, status or {}, error)
    mqtt = _mqtt.recorded_status(service, name, (ledger.space or {}).get("mqtt_service"), live, status)
    if mqtt:
        st["mqtt_service"] = mqtt
    out = _status.space_result(name, ledger.space, st)
    if ledger.space:
        out["owned_addresses"] = len(ledger.addresses)
    return out
