# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MQTT gateways' service side of a standard space (retained messages,
docs/mqtt-design.md "Retained messages: what is built"): the one place that
names it, and what the standard converge declares for a space that has an
MQTT endpoint (the infrastructure file's ``mqtt_gateways`` serve it).

Per space S with MQTT:

* realm ``S.mqtt`` (no space name has a dot: never a space's realm) with the
  one service user ``mqtt-gateway``, groups send/recv of every address (the
  auth service's encoding, ``auth.backends``): the auth service then sends
  no address-authz and the router applies the vhost's lists below; the
  auth_service role writes its users file;
* router entities (every name under ``enmasse/S/``, so they go with the
  space): vhost ``S.mqtt`` (the service user's group: receive from
  ``$mqtt/S/*`` and from ``S/X`` for every multicast and topic address ``X``
  MQTT can name, where the gateways take the retained messages of AMQP
  clients, ``service_sources``; send to ``$mqtt/S/*`` and to ``S/X`` for every declared,
  placed address ``X`` of the space but its subscriptions, the name of ``X``
  inside the routers: the wills a gateway journaled before it died go out
  on this connection after its restart, gateway/mqtt/journal.go; nothing
  else of the space or outside it), authServicePlugin ``enmasse/S/mqtt-auth`` (realm
  ``S.mqtt``), listener ``enmasse/S/mqtt-service``, NOT multiTenant (the
  gateway names ``$mqtt/S/...`` itself; a tenant listener adds ``S/`` to
  every name, so no client of the space reaches them), and the linkRoute
  pair ``enmasse/S/mqtt-linkroute/{in,out}`` for the prefix ``$mqtt/S`` to
  the broker holding the queue;
* the AMQP clients' wills (docs/mqtt-design.md "Wills of AMQP clients"):
  listener ``enmasse/S/mqtt-will`` (role route-container, the same realm,
  vhost and TLS; the will keepers connect there) and linkRoute
  ``enmasse/S/mqtt-will-linkroute`` (direction in, prefix ``S/$will``, to
  the connections of that listener only, by its name: no other connection
  can pose as a keeper);
* on one pool broker: the durable, non-destructive last-value queue
  ``$mqtt/S/retained`` (key ``mqtt_topic``).

The ledger records ``mqtt_service: {port, will_port, broker}`` in the space's record.
Pure except ``broker_queue_*`` (Jolokia)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as _ent

SERVICE_USER = "mqtt-gateway"
# auth.backends.ALL_ADDRESSES_GROUPS (not imported: that module is Python 3 only)
ALL_ADDRESSES_GROUPS = ("recv_%2A", "send_%2A")
LAST_VALUE_KEY = "mqtt_topic"
NAMES = ("mqtt-vhost", "mqtt-auth", "mqtt-service", "mqtt-linkroute/in", "mqtt-linkroute/out")
WILL_NAMES = ("mqtt-will-vhost", "mqtt-will", "mqtt-will-linkroute")


def realm(space):
    return "%s.mqtt" % space


def prefix(space):
    """The link-route prefix of the space's gateway names."""
    return "$mqtt/%s" % space


def retained_queue(space):
    return "%s/retained" % prefix(space)


def will_vhost(space):
    """The vhost of the will keepers' listener (the service user's realm stays ``S.mqtt``)."""
    return "%s.mqtt-will" % space


def will_targets(space, addresses=()):
    """What a keeper may send to: ``S/X`` of every declared, placed address
    but subscriptions (``service_targets`` without the retained queue)."""
    return service_targets(space, addresses)[1:]


def will_prefix(space):
    """The link-route prefix of the space's AMQP wills inside the routers
    (a client's ``$will/X`` on the space's tenant listener is ``S/$will/X``)."""
    return _ent.internal(space, _ent.WILL_PREFIX)


def groups(space):
    """The service user's groups, as the auth service reads them
    (``<op>_<url-quoted pattern>``, auth.backends.authorization_to_groups):
    send and recv of every address, so that the auth service answers no
    address-authz (qdrouterd 1.19 would use it instead of the vhost's lists)
    and what the user may reach is the vhost's group (``service_targets``,
    rewritten with the space's addresses; a users file is written once)."""
    del space  # the same for every space: the vhost of the realm S.mqtt limits it
    return list(ALL_ADDRESSES_GROUPS)


def service_targets(space, addresses=()):
    """What the service user may send to, sorted: ``$mqtt/S/*`` (the
    retained queue) and ``S/X`` (``entities.internal``) for every declared,
    placed address of the space (``addresses``, plain dicts) but its
    subscriptions (receive only): a will journaled by a gateway that died is
    sent there after its restart. Names of other spaces never: the service
    listener is the space's."""
    names = set(_ent.internal(space, a["address"]) for a in addresses or () if a.get("type") != "subscription")
    return [prefix(space) + "/*"] + sorted(names)


def service_sources(space, addresses=()):
    """What the service user may receive from, sorted: ``$mqtt/S/*`` and
    ``S/X`` for every declared, placed address X whose AMQP messages the
    gateways store when marked retained (``mapping.retain_from_amqp_addresses``:
    multicast and topic addresses; every receiver of those gets its own copy,
    so the gateway takes nothing from an application). Never a queue or an
    anycast address, never another space's name."""
    types = dict((a["address"], a.get("type")) for a in addresses or ())
    return [prefix(space) + "/*"] + sorted(_ent.internal(space, a) for a in mapping.retain_from_amqp_addresses(types))


def served(infra, space):
    """Whether an MQTT gateway of the infrastructure file serves ``space``."""
    return any(s.get("name") == space for g in infra.get("mqtt_gateways") or [] for s in g.get("spaces") or [])


def entity_names(space):
    pre = _ent.space_prefix(space)
    return [pre + n for n in NAMES + WILL_NAMES]


def router_entities(space, record, auth, bind_host="0.0.0.0", tls=None, addresses=()):
    """The router entities of the space's MQTT service (``record``: the
    ledger's ``mqtt_service`` {port, will_port, broker}; None: none;
    ``addresses``: the space's placed addresses, ``service_targets``)."""
    if not record:
        return {}
    pre = _ent.space_prefix(space)
    name = realm(space)
    group = {"users": SERVICE_USER, "remoteHosts": "*", "sources": ",".join(service_sources(space, addresses)),
             "targets": ",".join(service_targets(space, addresses)),
             "allowDynamicSource": False, "allowAnonymousSender": False, "allowDynamicLinkRoutes": False,
             "allowAdminStatusUpdate": False}
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
    if record.get("will_port"):
        # the keepers' listener: route-container, so that the routers route the clients' will links to its
        # connections; the linkRoute names the listener (a connection's label), not a container id that any
        # route-container connection could claim. Its own vhost: a keeper sends the wills to the space's
        # addresses and receives nothing (no retained queue, no address of the space)
        will_group = dict(group, sources="", targets=",".join(will_targets(space, addresses)))
        out[pre + "mqtt-will-vhost"] = _ent.entity(_ent.VHOST, hostname=will_vhost(space), allowUnknownUser=False,
                                                   groups={SERVICE_USER: will_group})
        out[pre + "mqtt-will"] = _ent.entity(_ent.LISTENER, host=bind_host, port=str(record["will_port"]),
                                             role="route-container", policyVhost=will_vhost(space),
                                             authenticatePeer=True,
                                             saslMechanisms="PLAIN", saslPlugin=pre + "mqtt-auth",
                                             **_ent.listener_tls(tls))
        out[pre + "mqtt-will-linkroute"] = _ent.entity(_ent.LINKROUTE, prefix=will_prefix(space), direction="in",
                                                       connection=pre + "mqtt-will")
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
    {port, will_port (each kept, else ``allocate(*ports taken already)``),
    broker}."""
    if not served(service.infra, space):
        return None
    old = old or {}
    broker = place(service, space, old.get("broker"), live_counts)
    if broker is None:
        return None
    port = old.get("port") or allocate()
    return {"port": port, "will_port": old.get("will_port") or allocate(port), "broker": broker}


# ------------------------------------------------------------------ the broker side

def queue_spec(space):
    """The retained queue as Artemis createQueue(String json, boolean) takes it."""
    name = retained_queue(space)
    return {"name": name, "address": name, "routing-type": "ANYCAST", "durable": True,
            "last-value-key": LAST_VALUE_KEY, "non-destructive": True}


MOVE = "move"  # a pseudo operation of broker_queue_requests: the mover copies the queue's messages
# what Artemis' updateQueue(String json) changes on a live queue; the rest needs a new queue
UPDATABLE = ("non-destructive",)
UPDATE_QUEUE = "updateQueue(java.lang.String)"


def rebuild_queue(space):
    """Where the retained values wait while their queue is made anew on the
    same broker (settings updateQueue cannot change)."""
    return "%s/retained-rebuild" % prefix(space)


def live_settings(config):
    """queue_spec's settings of a queue from its configuration (the JSON
    Artemis' updateQueue returns)."""
    return {"routing-type": (config.get("routing-type") or "").upper(), "durable": bool(config.get("durable")),
            "last-value-key": config.get("last-value-key") or None,
            "non-destructive": bool(config.get("non-destructive"))}


def settings_diff(space, live):
    """{setting: (live, wanted)} where ``live`` (live_settings) differs from queue_spec."""
    spec = queue_spec(space)
    return dict((k, (live.get(k), spec[k])) for k in sorted(live) if live.get(k) != spec[k])


def broker_queue_state(service, broker, space, queue=None):
    """The live settings (live_settings) of the space's retained queue
    (``queue``: another of its names) on the pool broker ``broker``; None:
    absent. The queue's MBean has no attribute for non-destructive (Artemis
    2.40), so its configuration comes from updateQueue with the name alone,
    which changes nothing and returns it."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import broker_mbean
    name = queue or retained_queue(space)
    jolokia, mbean = service.jolokia(broker), broker_mbean(service.brokers[broker]["broker_name"])
    if name not in (jolokia.read(mbean, "QueueNames") or []):
        return None
    return live_settings(json.loads(jolokia.execute(mbean, UPDATE_QUEUE, json.dumps({"name": name}))))


def _create(broker, name, space):
    spec = json.dumps(dict(queue_spec(space), name=name, address=name))
    return [(broker, "createAddress(java.lang.String,java.lang.String)", [name, "ANYCAST"]),
            (broker, "createQueue(java.lang.String,boolean)", [spec, True])]


def _destroy(broker, name):
    return [(broker, "destroyQueue(java.lang.String,boolean,boolean)", [name, True, True]),
            (broker, "deleteAddress(java.lang.String,boolean)", [name, True])]


def _move(broker, name, to, to_name):
    return [(broker, MOVE, [name, to, to_name])]


def broker_queue_requests(service, space, old_broker, new_broker, present, rebuild=None):
    """The operations (broker, operation, arguments) that bring the live
    state to ``new_broker`` holding the queue with queue_spec's settings
    (None: nowhere), in order, never destroying a queue whose values are not
    copied yet: a Jolokia operation, or ``MOVE`` [queue, to broker, to queue]
    (the mover copies every message; the queues are last-value, so a copy
    made again replaces, never duplicates).

    ``present``: {broker: the queue's live settings there (live_settings), or
    None / False when absent; True: present, settings unknown};
    ``rebuild``: {broker: whether the rebuild queue is there} (a run
    interrupted in the middle of a rebuild left it). Each decision is read
    from the live state, so a run interrupted anywhere is finished by the
    next one."""
    name, spare = retained_queue(space), rebuild_queue(space)
    rebuild = rebuild or {}
    out = []
    if new_broker:
        live = present.get(new_broker)
        wrong = settings_diff(space, live) if isinstance(live, dict) else {}
        remake = bool(set(wrong) - set(UPDATABLE))
        if remake:  # made anew: its values wait in the rebuild queue, on the same broker
            out += [] if rebuild.get(new_broker) else _create(new_broker, spare, space)
            out += _move(new_broker, name, new_broker, spare) + _destroy(new_broker, name)
        elif wrong:
            out.append((new_broker, UPDATE_QUEUE, [json.dumps(queue_spec(space))]))
        if remake or not live:
            out += _create(new_broker, name, space)
        if remake or rebuild.get(new_broker):
            out += _move(new_broker, spare, new_broker, name) + _destroy(new_broker, spare)
    for b in sorted(set(present) | set(rebuild)):
        if b == new_broker:
            continue
        for queue, there in ((name, present.get(b)), (spare, rebuild.get(b))):
            if there:  # the values go first, then the queue
                out += (_move(b, queue, new_broker, name) if new_broker else []) + _destroy(b, queue)
    return out


def queue_count(service, broker, queue):
    """The message count of ``queue`` on ``broker`` (Jolokia)."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as _client
    pattern = "%s,subcomponent=queues,routing-type=*,queue=%s" % (
        _client.address_mbean(service.brokers[broker]["broker_name"], queue), _client.quote_mbean_value(queue))
    found = service.jolokia(broker).read(pattern, ["MessageCount"]) or {}
    return sum(int(a.get("MessageCount") or 0) for a in found.values())


def apply_broker_requests(service, requests, idle=1.0):
    """Run the operations in order, stopping at the first error (what
    follows may destroy a queue whose values did not move); a move that
    copied fewer messages than the queue counted before it is an error.
    Returns the error messages."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import broker_mbean
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mover
    for b, op, args in requests:
        try:
            if op == MOVE:
                count = queue_count(service, b, args[0])
                copied = mover.copy_queue(service, b, args[0], args[1], args[2],
                                          timeout=service.infra.get("timeout") or 30, idle=idle)
                if copied < count:  # the read ended early: the queue stays, the next run copies again
                    raise ServiceError("copied %d of the %d messages of %s to %s:%s" % (
                        copied, count, args[0], args[1], args[2]))
            else:
                service.jolokia(b).execute(broker_mbean(service.brokers[b]["broker_name"]), op, *args)
        except Exception as e:  # pylint: disable=broad-except
            return ["broker %r: %s: %s" % (b, op.split("(")[0], e)]
    return []


def status(service, space, record, live_routers, router_status, queue_present):
    """The ``mqtt_service`` of the space's status: realm, user, queue and
    its broker, the service listener's endpoints (one per router), ready and
    the messages saying why not (``queue_present``: the queue's live
    settings, a setting that differs from queue_spec is one; or a bool).
    None without MQTT."""
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
        for n in names[3:len(NAMES)]:  # the will linkRoute is inactive while no keeper is connected
            st = ((router_status or {}).get(r) or {}).get(n, {}).get("operStatus")
            if n in live and st not in (None, "active"):
                msgs.append("router %r: linkRoute %s is %s" % (r, n, st))
    if not queue_present:
        msgs.append("broker %r lacks the queue %s" % (record["broker"], retained_queue(space)))
    elif isinstance(queue_present, dict):
        for k, (live, want) in sorted(settings_diff(space, queue_present).items()):
            msgs.append("broker %r: queue %s has %s %r, not %r"
                        % (record["broker"], retained_queue(space), k, live, want))
    return {"realm": realm(space), "user": SERVICE_USER, "queue": retained_queue(space), "broker": record["broker"],
            "prefix": prefix(space), "ready": not msgs, "messages": msgs,
            "endpoints": _endpoints(service, "mqtt-service", record["port"]),
            "will_endpoints": _endpoints(service, "mqtt-will", record.get("will_port"))}


def _endpoints(service, kind, port):
    """One endpoint per router of a listener of the service (none without its port)."""
    if not port:
        return []
    return [{"name": "%s-%s" % (kind, r["id"]), "host": r.get("host") or r["id"],
             "port": int(port) + int(r.get("port_offset") or 0)} for r in service.infra["routers"]]


def live_state(service, space, brokers):
    """({broker: the queue's live settings or None}, {broker: whether the
    rebuild queue is there}) of ``brokers``."""
    present = dict((b, broker_queue_state(service, b, space)) for b in sorted(brokers))
    rebuild = dict((b, broker_queue_state(service, b, space, rebuild_queue(space)) is not None) for b in sorted(brokers))
    return present, rebuild


def plan(service, space, old, homes, allocate):
    """(record, broker operations, present) of a space's converge: the
    ``mqtt_service`` the ledger should record (None: no MQTT), the
    operations from the live brokers to it (broker_queue_requests: on a
    drain the values move to the new broker before the old queue goes; a
    queue with other settings than queue_spec's is corrected), and
    {broker: the queue's live settings there} for the brokers that matter
    (the recorded one and the new one).
    ``homes``: the ledger's address homes (the placement's load)."""
    counts = {}
    for h in (homes or {}).values():
        for b in h.get("brokers") or []:
            counts[b] = counts.get(b, 0) + 1
    record = desired_record(service, space, old, counts, allocate)
    brokers = set(b for b in ((old or {}).get("broker"), (record or {}).get("broker")) if b in service.brokers)
    present, rebuild = live_state(service, space, brokers)
    return record, broker_queue_requests(service, space, (old or {}).get("broker"),
                                         (record or {}).get("broker"), present, rebuild), present


def recorded_status(service, space, record, live_routers, router_status):
    """``status`` of the recorded service, the queue read from its broker."""
    if not record:
        return None
    try:
        present = broker_queue_state(service, record["broker"], space)
    except Exception:  # pylint: disable=broad-except
        present = None
    return status(service, space, record, live_routers, router_status, present)


def removal(service, space, old):
    """The broker operations that remove the recorded service's queue."""
    if not old or old.get("broker") not in service.brokers:
        return []
    present, rebuild = live_state(service, space, [old["broker"]])
    return broker_queue_requests(service, space, old["broker"], None, present, rebuild)


def describe(requests):
    """{broker: [operation name and queue]} of broker operations (a result's
    ``changes``; a move: ``move <queue> to <broker>:<queue>``)."""
    out = {}
    for b, op, args in requests:
        what = "%s %s" % (op.split("(")[0], retained_queue_name(args))
        if op == MOVE:
            what += " to %s:%s" % (args[1], args[2])
        out.setdefault(b, []).append(what)
    return out


def retained_queue_name(args):
    first = args[0]
    return json.loads(first)["name"] if first.startswith("{") else first


def kinds(space_kinds, record):
    """The router entity kinds a space-level read needs: with the MQTT
    service (now or before) its linkRoutes too (the names filter the rest)."""
    return tuple(space_kinds) + ((_ent.LINKROUTE,) if record else ())
