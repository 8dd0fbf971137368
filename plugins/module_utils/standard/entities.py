# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A standard address space as router entities and broker addresses.

The one mapping of the model onto qdrouterd (docs/standard-spaces.md). Pure:
no I/O. Every router of the mesh carries the same entities; every name starts
with ``enmasse/`` (the collection owns exactly those).

Per space S (clients connect to the space's listener; inside the router every
address of S is ``S/<address>``: the listener is ``multiTenant`` and pinned to
the vhost S by ``policyVhost``, so no client can choose another space):

* vhost ``S`` (policy), authServicePlugin ``enmasse/S/auth`` (realm S; over
  TLS with the static sslProfile ``auth["ssl_profile"]`` when given),
  listener ``enmasse/S/amqp`` (SASL PLAIN relayed to the auth service; TLS
  with the static sslProfile ``tls["ssl_profile"]``, the router role's
  ``clients``, and ``requireSsl`` unless ``tls["plain"]``)
* anycast X      address prefix S/X, balanced
* multicast X    address prefix S/X, multicast
* queue X        address prefix S/X, balanced, waypoint; per broker b holding a
                 partition an autoLink pair to b (``in``: broker -> router,
                 ``out``: router -> broker); broker: ANYCAST queue ``S/X``
* deadletter X   like a queue, on every broker of the pool (dead letters stay
                 on the broker where they died)
* topic X        linkRoute pair, prefix S/X, to the broker that holds it;
                 broker: MULTICAST address ``S/X``
* subscription N linkRoute ``out`` for ``S/T::N`` (T its topic) to T's broker,
                 rewritten to ``S/T::S/N`` on the way to the broker (its
                 queue is ``S/N``: queue names are per broker and spaces share
                 brokers). The router strips ``delExternalPrefix`` only from
                 a longer address, so it is ``S/T::`` and the add prefix
                 ``S/T::S/``
* a draining broker (queue moved by a plan change) keeps only its ``in``
  autoLink (the router pulls the rest) until the queue is empty.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

PREFIX = "enmasse/"
BROKER_CONNECTOR = PREFIX + "broker/"

# router entity kinds (the router client maps them to the full type names)
VHOST = "vhost"
AUTH_PLUGIN = "authServicePlugin"
LISTENER = "listener"
CONNECTOR = "connector"
ADDRESS = "address"
AUTOLINK = "autoLink"
LINKROUTE = "linkRoute"

# the entities of an address that attach to a broker (operStatus active or not)
LINK_KINDS = (AUTOLINK, LINKROUTE)

ROUTER_ONLY_TYPES = ("anycast", "multicast")
QUEUE_LIKE = ("queue", "deadletter")


# what an AMQP client of a space attaches its will sender to: $will/<the will's address>
# (docs/mqtt-design.md "Wills of AMQP clients"); the space's will keepers get the link
WILL_PREFIX = "$will"


def will_target(address):
    """The name an AMQP client attaches its will sender to, for a will to ``address``."""
    return "%s/%s" % (WILL_PREFIX, address)


def space_prefix(space):
    """The prefix of every entity name of address space ``space``."""
    return "%s%s/" % (PREFIX, space)


def internal(space, address):
    """The address inside the router and on the brokers: ``S/<address>``."""
    return "%s/%s" % (space, address)


def connector_name(broker):
    return BROKER_CONNECTOR + broker


def entity(kind, **attrs):
    out = {"type": kind}
    out.update(attrs)
    return out


def terminus_names(space, addresses, routers=()):
    """(sources, targets): what a client of the space may receive from and
    send to, sorted. The vhost policy lists exactly these (qdrouterd 1.19
    checks a link's address at attach, and each message of an anonymous
    sender), so an undeclared name is refused (docs/standard-spaces.md):

    * every declared and placed address (``addresses``, plain dicts) under
      its own name; a subscription ``N`` of topic ``T`` as ``T::N``, to
      receive from only;
    * to send only: ``S/X`` for each of them, the name the router checks for
      a message of an anonymous sender (it prefixes the tenant first; a link
      attached to ``S/X`` itself reaches ``S/S/X``, where no receiver can
      attach, so no message flows there);
    * to send only: ``$will/X`` for each of them (``will_target``), a will
      for X: whoever may send to X may leave a will for it, nobody else;
    * to send only: the temporary addresses of every router (``routers``,
      ids), ``amqp:/_topo/0/<router>/temp.*``: the reply-to of a dynamic
      receiver (request/response), the only router-made names, for a named
      sender. Not the bare ``_topo/0/<router>/temp.*``: the policy matches a
      link's address as a whole, the router routes what follows its first
      ``:/``, so that prefix admitted ``_topo/0/<r>/temp.x:/_local/$management``,
      the router's management agent. A message of an anonymous sender is
      checked on the routed form (``_topo/...``): a reply by an anonymous
      sender to a temporary address is refused (docs/standard-spaces.md)."""
    sources, targets = set(), set()
    for a in addresses:
        if a["type"] == "subscription":
            sources.add("%s::%s" % (a.get("topic"), a["address"]))
            continue
        sources.add(a["address"])
        targets.update((a["address"], internal(space, a["address"]), will_target(a["address"])))
    for r in routers:
        targets.add("amqp:/_topo/0/%s/temp.*" % r)
    return sorted(sources), sorted(targets)


def _capacity(link_capacity):
    """The listener/connector attribute for ``link_capacity`` (the router's
    default, 250, when None)."""
    return {"linkCapacity": int(link_capacity)} if link_capacity else {}


def listener_tls(tls):
    """The listener attributes of the clients' TLS ``tls`` ({ssl_profile,
    plain}; None: plain TCP): sslProfile, and requireSsl unless plain AMQP is
    turned on too (then one port takes both; requireSsl false is the router's
    default, left out)."""
    tls = tls or {}
    if not tls.get("ssl_profile"):
        return {}
    out = {"sslProfile": tls["ssl_profile"]}
    if not tls.get("plain"):
        out["requireSsl"] = True
    return out


def space_entities(space, port, auth, bind_host="0.0.0.0", max_connections=None, anonymous=False,
                   addresses=(), routers=(), link_capacity=None, tls=None):
    """The entities of the space itself: vhost, auth plugin, listener.
    ``auth``: {host, port} of the auth service. ``anonymous``: the space's
    authentication service is of type ``none`` (EnMasse's): no SASL, anyone
    who reaches the port is a client of the space. ``addresses``: the
    space's placed addresses, the only ones its clients reach (the vhost's
    ``sources``/``targets``, ``terminus_names``); ``routers``: the mesh's ids;
    ``link_capacity``: the listener's linkCapacity (the credit the router gives
    each client's sending link; None: the router's default, 250). ``tls``:
    the listener's TLS (``listener_tls``); ``auth["ssl_profile"]``: the
    sslProfile the router trusts the auth service with (none: plain TCP)."""
    pre = space_prefix(space)
    secure = dict(_capacity(link_capacity), **listener_tls(tls))
    sources, targets = terminus_names(space, addresses, routers)
    group = {"users": "*", "remoteHosts": "*", "sources": ",".join(sources), "targets": ",".join(targets),
             "allowDynamicSource": True, "allowAnonymousSender": True, "allowWaypointLinks": True,
             # no connection-scoped link routes (they get no tenant prefix) and no closing of others' connections
             "allowDynamicLinkRoutes": False, "allowAdminStatusUpdate": False}
    vhost = {"hostname": space, "allowUnknownUser": True, "groups": {"$default": group}}
    if max_connections:
        vhost["maxConnections"] = int(max_connections)
    if anonymous:
        return {
            pre + "vhost": entity(VHOST, **vhost),
            pre + "amqp": entity(LISTENER, host=bind_host, port=str(port), role="normal", multiTenant=True,
                                 policyVhost=space, authenticatePeer=False, saslMechanisms="ANONYMOUS",
                                 **secure),
        }
    plugin = {"sslProfile": auth["ssl_profile"]} if auth.get("ssl_profile") else {}
    return {
        pre + "vhost": entity(VHOST, **vhost),
        pre + "auth": entity(AUTH_PLUGIN, host=auth["host"], port=str(auth["port"]), realm=space, **plugin),
        pre + "amqp": entity(LISTENER, host=bind_host, port=str(port), role="normal", multiTenant=True,
                             policyVhost=space, authenticatePeer=True, saslMechanisms="PLAIN",
                             saslPlugin=pre + "auth", **secure),
    }


def connector_entities(brokers, link_capacity=None):
    """A route-container connector from every router to every pool broker.
    ``brokers``: [{name, host, amqp_port, user, password_file, ssl_profile}]. The password
    is named, never given: ``saslPassword: file:<password_file>`` (a file on
    every router host, written by the router role), so that no management
    QUERY returns it (qdrouterd returns a literal saslPassword in clear).
    ``link_capacity``: the connectors' linkCapacity (the credit a router gives
    each broker queue's autoLink towards it; None: the router's default, 250).
    ``ssl_profile``: the router's sslProfile (static, qdrouterd.conf) trusting
    the CA of the broker's certificate: the link is TLS and the broker's host
    name is verified against ``host``."""
    out = {}
    for b in brokers:
        attrs = dict({"host": b["host"], "port": str(b["amqp_port"]), "role": "route-container"},
                     **_capacity(link_capacity))
        if b.get("ssl_profile"):
            attrs.update(sslProfile=b["ssl_profile"], verifyHostname=True)
        if b.get("user"):
            attrs.update(saslUsername=b["user"], saslPassword="file:" + b["password_file"], saslMechanisms="PLAIN")
        out[connector_name(b["name"])] = entity(CONNECTOR, **attrs)
    return out


def address_entities(space, address, homes=(), draining=(), topic_homes=()):
    """The router entities of one placed address (a plain address dict).
    ``homes``: the brokers that hold it; ``draining``: old brokers being
    emptied; ``topic_homes``: for a subscription, its topic's brokers."""
    pre = space_prefix(space)
    name = address["address"]
    atype = address["type"]
    inside = internal(space, name)
    out = {}
    if atype in ROUTER_ONLY_TYPES:
        dist = "balanced" if atype == "anycast" else "multicast"
        out[pre + "address/" + name] = entity(ADDRESS, prefix=inside, distribution=dist)
    elif atype in QUEUE_LIKE:
        out[pre + "address/" + name] = entity(ADDRESS, prefix=inside, distribution="balanced", waypoint=True)
        for b in homes:
            for direction in ("in", "out"):
                out["%sautolink/%s/%s/%s" % (pre, b, direction, name)] = entity(
                    AUTOLINK, address=inside, direction=direction, connection=connector_name(b))
        for b in draining:
            if b in homes:
                continue
            out["%sautolink/%s/in/%s" % (pre, b, name)] = entity(
                AUTOLINK, address=inside, direction="in", connection=connector_name(b))
    elif atype == "topic":
        for b in homes[:1]:
            for direction in ("in", "out"):
                out["%slinkroute/%s/%s" % (pre, direction, name)] = entity(
                    LINKROUTE, prefix=inside, direction=direction, connection=connector_name(b))
    elif atype == "subscription":
        topic = address.get("topic")
        fqqn = "%s::%s" % (internal(space, topic), name)
        for b in (topic_homes or homes)[:1]:
            out["%slinkroute/out/%s::%s" % (pre, topic, name)] = entity(
                LINKROUTE, prefix=fqqn, direction="out", connection=connector_name(b),
                delExternalPrefix="%s::" % internal(space, topic),
                addExternalPrefix="%s::%s/" % (internal(space, topic), space))
    return out


def address_of_entity(space, name):
    """The address (its name in space ``space``) that router entity ``name``
    belongs to (``address_entities``), None for any other entity."""
    pre = space_prefix(space)
    if not name.startswith(pre):
        return None
    kind, unused, tail = name[len(pre):].partition("/")
    if kind == "address":
        return tail
    if kind == "autolink":
        return tail.split("/", 2)[2] if tail.count("/") >= 2 else None
    if kind == "linkroute":
        addr = tail.split("/", 1)[1] if "/" in tail else None
        if addr and "::" in addr:
            return addr.split("::", 1)[1]
        return addr
    return None


def entity_ready(kind, oper_status):
    """Whether a router entity of an address, there on a router, lets the
    address be ready on that router: an autoLink or linkRoute only while its
    ``operStatus`` is ``active`` (attached to its broker: ``inactive`` while
    the broker or its connector is down), any other kind by being there. An
    address is ready on a router when every entity of it is there and ready
    (the status of ``address_info``, ``service.address_statuses``; the auth
    service's probe, ``auth/mesh.py``)."""
    return kind not in LINK_KINDS or oper_status == "active"


def broker_address(space, address):
    """The address as the pool broker holds it: names (and the names it
    refers to) prefixed with ``S/``."""
    out = copy.deepcopy(address)
    out["address"] = internal(space, address["address"])
    for key in ("topic", "deadletter", "expiry"):
        if out.get(key):
            out[key] = internal(space, out[key])
    return out


def owned(name, space=None):
    """Whether an entity name is the collection's (of ``space`` when given;
    broker connectors belong to the infrastructure, not to a space)."""
    if space is None:
        return name.startswith(PREFIX)
    return name.startswith(space_prefix(space))
