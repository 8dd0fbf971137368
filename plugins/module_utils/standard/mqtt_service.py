# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MQTT gateways' service side of a standard space (retained messages,
docs/mqtt-design.md "Retained messages: what is built"): the one place that
names it, and what the standard converge declares for a space that has an
MQTT endpoint (the infrastructure file's ``mqtt_gateways`` serve it).

Per space S with MQTT:

* realm ``S.mqtt`` (no space name has a dot: never a space's realm) with the
  one service user ``mqtt-gateway``, groups send/recv of ``$mqtt/S/*``
  (the auth service's encoding, ``auth.backends``); the auth_service role
  writes its users file;
* router entities (every name under ``enmasse/S/``, so they go with the
  space): vhost ``S.mqtt``, authServicePlugin ``enmasse/S/mqtt-auth`` (realm
  ``S.mqtt``), listener ``enmasse/S/mqtt-service``, NOT multiTenant (the
  gateway names ``$mqtt/S/...`` itself; a tenant listener adds ``S/`` to
  every name, so no client of the space reaches them), and the linkRoute
  pair ``enmasse/S/mqtt-linkroute/{in,out}`` for the prefix ``$mqtt/S`` to
  the broker holding the queue;
* on one pool broker: the durable, non-destructive last-value queue
  ``$mqtt/S/retained`` (key ``mqtt_topic``).

The ledger records ``mqtt_service: {port, broker}`` in the space's record.
Pure except ``broker_queue_*`` (Jolokia)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

try:
    from urllib.parse import quote
except ImportError:  # Python 2 (ansible-test's import sanity)
    from urllib import quote

from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as _ent

SERVICE_USER = "mqtt-gateway"
LAST_VALUE_KEY = "mqtt_topic"
NAMES = ("mqtt-vhost", "mqtt-auth", "mqtt-service", "mqtt-linkroute/in", "mqtt-linkroute/out")


def realm(space):
    return "%s.mqtt" % space


def prefix(space):
    """The link-route prefix of the space's gateway names."""
    return "$mqtt/%s" % space


def retained_queue(space):
    return "%s/retained" % prefix(space)


def groups(space):
    """The service user's groups, as the auth service reads them
    (``<op>_<url-quoted pattern>``, auth.backends.authorization_to_groups):
    send and recv of ``$mqtt/S/*``."""
    return ["%s_%s" % (op, quote(prefix(space) + "/*", safe="")) for op in ("recv", "send")]


def served(infra, space):
    """Whether an MQTT gateway of the infrastructure file serves ``space``."""
    return any(s.get("name") == space for g in infra.get("mqtt_gateways") or [] for s in g.get("spaces") or [])


def entity_names(space):
    pre = _ent.space_prefix(space)
    return [pre + n for n in NAMES]


def router_entities(space, record, auth, bind_host="0.0.0.0", tls=None):
    """The router entities of the space's MQTT service (``record``: the
    ledger's ``mqtt_service`` {port, broker}; None: none)."""
    if not record:
        return {}
    pre = _ent.space_prefix(space)
    name = realm(space)
    pattern = prefix(space) + "/*"
    group = {"users": SERVICE_USER, "remoteHosts": "*", "sources": pattern, "targets": pattern,
             "allowDynamicSource": False, "allowAnonymousSender": False}
    plugin = {"sslProfile": auth["ssl_profile"]} if auth.get("ssl_profile") else {}
    out = {
        pre + "mqtt-vhost": _ent.entity(_ent.VHOST, hostname=name, allowUnknownUser=False,
                                        groups={SERVICE_USER: group}),
        pre + "mqtt-auth": _ent.entity(_ent.AUTH_PLUGIN, host=auth["host"], port=str(auth["port"]), realm=name,
                                       **plugin),
        pre + "mqtt-service": _ent.entity(_ent.LISTENER, host=bind_host, port=str(record["port"]), role="normal",
                                          policyVhost=name, authenticatePeer=True, saslMechanisms="PLAIN",
                                          saslPlugin=pre + "mqtt-auth", **_ent.listener_tls(tls)),
    }
    for direction in ("in", "out"):
        out[pre + "mqtt-linkroute/" + direction] = _ent.entity(
            _ent.LINKROUTE, prefix=prefix(space), direction=direction,
            connection=_ent.connector_name(record["broker"]))
    return out


def place(service, space, old, live_counts):
    """The broker of the space's retained queue: where it is (``old``, the
    recorded one) while that broker stays an active member of the pool, else,
    as a new queue of the space is placed, the active broker holding the
    fewest of the space's addresses (``live_counts``: {broker: n}), the first
    by name on a tie. None: no active broker."""
    active = [b for b in service.broker_names if b not in service.draining_brokers]
    if old and old in active:
        return old
    if not active:
        return None
    return sorted(active, key=lambda b: (live_counts.get(b, 0), b))[0]


def desired_record(service, space, old, live_counts, allocate):
    """The ledger's ``mqtt_service`` for a space: None without MQTT, else
    {port (kept, else ``allocate()``), broker}."""
    if not served(service.infra, space):
        return None
    old = old or {}
    broker = place(service, space, old.get("broker"), live_counts)
    if broker is None:
        return None
    return {"port": old.get("port") or allocate(), "broker": broker}


# ------------------------------------------------------------------ the broker side

def queue_spec(space):
    """The retained queue as Artemis createQueue(String json, boolean) takes it."""
    name = retained_queue(space)
    return {"name": name, "address": name, "routing-type": "ANYCAST", "durable": True,
            "last-value-key": LAST_VALUE_KEY, "non-destructive": True}


def broker_queue_present(service, broker, space):
    """Whether the pool broker ``broker`` has the space's retained queue."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import broker_mbean
    names = service.jolokia(broker).read(broker_mbean(service.brokers[broker]["broker_name"]), "QueueNames")
    return retained_queue(space) in (names or [])


def broker_queue_requests(service, space, old_broker, new_broker, present):
    """The Jolokia operations (broker, operation, arguments) that move the
    live state to ``new_broker`` holding the queue (None: nowhere).
    ``present``: {broker: whether it holds the queue now}."""
    name = retained_queue(space)
    out = []
    for b in sorted(present):
        if present[b] and b != new_broker:
            out.append((b, "destroyQueue(java.lang.String,boolean,boolean)", [name, True, True]))
            out.append((b, "deleteAddress(java.lang.String,boolean)", [name, True]))
    if new_broker and not present.get(new_broker):
        out.append((new_broker, "createAddress(java.lang.String,java.lang.String)", [name, "ANYCAST"]))
        out.append((new_broker, "createQueue(java.lang.String,boolean)", [json.dumps(queue_spec(space)), True]))
    return out


def apply_broker_requests(service, requests):
    """Run the operations; returns the error messages."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import broker_mbean
    errors = []
    for b, op, args in requests:
        try:
            service.jolokia(b).execute(broker_mbean(service.brokers[b]["broker_name"]), op, *args)
        except Exception as e:  # pylint: disable=broad-except
            errors.append("broker %r: %s: %s" % (b, op.split("(")[0], e))
    return errors


def status(service, space, record, live_routers, router_status, queue_present):
    """The ``mqtt_service`` of the space's status: realm, user, queue and
    its broker, the service listener's endpoints (one per router), ready and
    the messages saying why not. None without MQTT."""
    if not record:
        return None
    msgs = []
    names = entity_names(space)
    for r in service.router_ids:
        live = (live_routers or {}).get(r)
        if live is None:
            continue  # the space's status says it is unreachable
        missing = [n for n in names if n not in live]
        if missing:
            msgs.append("router %r lacks %s" % (r, ", ".join(missing)))
        for n in names[3:]:
            st = ((router_status or {}).get(r) or {}).get(n, {}).get("operStatus")
            if n in live and st not in (None, "active"):
                msgs.append("router %r: linkRoute %s is %s" % (r, n, st))
    if not queue_present:
        msgs.append("broker %r lacks the queue %s" % (record["broker"], retained_queue(space)))
    return {"realm": realm(space), "user": SERVICE_USER, "queue": retained_queue(space), "broker": record["broker"],
            "prefix": prefix(space), "ready": not msgs, "messages": msgs,
            "endpoints": [{"name": "mqtt-service-%s" % r["id"], "host": r.get("host") or r["id"],
                           "port": int(record["port"]) + int(r.get("port_offset") or 0)}
                          for r in service.infra["routers"]]}


def plan(service, space, old, homes, allocate):
    """(record, broker operations, present) of a space's converge: the
    ``mqtt_service`` the ledger should record (None: no MQTT), the Jolokia
    operations from the live brokers to it, and {broker: queue there now}
    for the brokers that matter (the recorded one and the new one).
    ``homes``: the ledger's address homes (the placement's load)."""
    counts = {}
    for h in (homes or {}).values():
        for b in h.get("brokers") or []:
            counts[b] = counts.get(b, 0) + 1
    record = desired_record(service, space, old, counts, allocate)
    brokers = set(b for b in ((old or {}).get("broker"), (record or {}).get("broker")) if b in service.brokers)
    present = dict((b, broker_queue_present(service, b, space)) for b in sorted(brokers))
    return record, broker_queue_requests(service, space, (old or {}).get("broker"),
                                         (record or {}).get("broker"), present), present


def recorded_status(service, space, record, live_routers, router_status):
    """``status`` of the recorded service, the queue read from its broker."""
    if not record:
        return None
    try:
        present = broker_queue_present(service, record["broker"], space)
    except Exception:  # pylint: disable=broad-except
        present = False
    return status(service, space, record, live_routers, router_status, present)


def removal(service, space, old):
    """The broker operations that remove the recorded service's queue."""
    if not old or old.get("broker") not in service.brokers:
        return []
    present = {old["broker"]: broker_queue_present(service, old["broker"], space)}
    return broker_queue_requests(service, space, old["broker"], None, present)


def describe(requests):
    """{broker: [operation name and queue]} of broker operations (a result's ``changes``)."""
    out = {}
    for b, op, args in requests:
        out.setdefault(b, []).append("%s %s" % (op.split("(")[0], retained_queue_name(args)))
    return out


def retained_queue_name(args):
    first = args[0]
    return json.loads(first)["name"] if first.startswith("{") else first


def kinds(space_kinds, record):
    """The router entity kinds a space-level read needs: with the MQTT
    service (now or before) its linkRoutes too (the names filter the rest)."""
    return tuple(space_kinds) + ((_ent.LINKROUTE,) if record else ())
