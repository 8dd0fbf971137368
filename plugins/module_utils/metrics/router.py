# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sampling a router (qdrouterd / skupper-router) for capacity planning:
AMQP management QUERY of the router, its addresses, links and connections,
turned into rows of the metrics schema."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.metrics.artemis import utcnow
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import ADDRESS_TYPES, ADDRESSES, INFRA_SPACE, NODES, ROUTER, row, to_int
from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import DEFAULT_PAGE, ROUTER_PREFIXES, RouterManagementError, query_all

ROUTER_ATTRIBUTES = ("id", "mode", "memoryUsage", "uptimeSeconds", "connectionCount", "linkCount",
                     "addrCount")
ROUTER_ADDRESS_ATTRIBUTES = ("key", "identity", "name", "distribution", "subscriberCount",
                             "remoteCount", "containerCount", "deliveriesIngress", "deliveriesEgress",
                             "deliveriesIngressRouteContainer", "deliveriesEgressRouteContainer")
ROUTER_LINK_ATTRIBUTES = ("linkType", "linkDir", "owningAddr", "undeliveredCount", "unsettledCount",
                          "deliveryCount")
ROUTER_CONNECTION_ATTRIBUTES = ("role", "dir", "tenant", "container")


def parse_address_key(key):
    """Router address key -> (class, phase, address). Mobile addresses are
    ``M<phase><address>`` (``M0orders``; skupper-router may omit the phase);
    other classes (L local, R router, T topological, C/D/E/F link routes, H
    edge) are returned with phase None."""
    if not key:
        return None, None, ""
    cls = key[0]
    if cls == "M":
        if len(key) > 1 and key[1].isdigit():
            return cls, int(key[1]), key[2:]
        return cls, 0, key[1:]
    return cls, None, key[1:]


def split_tenant(address, spaces):
    """A multi-tenant listener prefixes addresses with the vhost:
    ``<space>/<address>``. Returns (space, address) when the prefix is one of
    ``spaces``, else (None, address)."""
    head, sep, rest = address.partition("/")
    if sep and head in spaces:
        return head, rest
    return None, address


def _router_internal(address):
    return (not address or address.startswith("$") or address.startswith("_$")
            or address.startswith("_topo/") or address.startswith("qdrouter")
            or address.startswith("amqp:/_"))


def _mobile_target(key, spaces, default_space):
    """((space, address), phase) of a mobile address key; (None, phase)
    when no space claims it; (None, None) for router-internal keys."""
    cls, phase, text = parse_address_key(key)
    if cls != "M" or _router_internal(text):
        return None, None
    space, addr = split_tenant(text, spaces)
    if space is None:
        if not default_space:
            return None, phase
        space = default_space
    return (space, addr), phase


def _per_address(addresses, links, target):
    """({(space, address): totals}, dropped): the router's address and link
    rows summed per target (``target(key)``, as ``_mobile_target``); totals
    are deliveries from and to clients, subscribers per phase, the
    distribution, endpoint links and the deliveries held on them."""
    per = {}
    dropped = 0
    for a in addresses:
        tgt, phase = target(a.get("key") or a.get("name") or a.get("identity") or "")
        if tgt is None:
            dropped += phase is not None
            continue
        acc = per.setdefault(tgt, {"in": 0, "out": 0, "phases": {}, "distribution": None,
                                   "links": 0, "held": 0})
        acc["in"] += (to_int(a.get("deliveriesIngress")) or 0) - (to_int(a.get("deliveriesIngressRouteContainer")) or 0)
        acc["out"] += (to_int(a.get("deliveriesEgress")) or 0) - (to_int(a.get("deliveriesEgressRouteContainer")) or 0)
        acc["phases"][phase] = to_int(a.get("subscriberCount")) or 0
        acc["distribution"] = acc["distribution"] or a.get("distribution")

    for link in links:
        if link.get("linkType") != "endpoint":
            continue
        tgt, unused = target(link.get("owningAddr") or "")
        if tgt is None or tgt not in per:
            continue
        per[tgt]["links"] += 1
        per[tgt]["held"] += (to_int(link.get("undeliveredCount")) or 0) + (to_int(link.get("unsettledCount")) or 0)
    return per, dropped


def _router_address_type(known, acc):
    """The address type: ``known`` (from ``address_info``) when it is one,
    else queue (a phase-1 address: a waypoint), multicast or anycast."""
    if known in ADDRESS_TYPES:
        return known
    if max(acc["phases"]) >= 1:
        return "queue"
    if acc["distribution"] == "multicast":
        return "multicast"
    return "anycast"


def router_rows(router, addresses, links, connections, infra, ts, spaces, default_space=None,
                address_info=None, memory_max=None):
    """Rows for one router from its QUERY results (lists of dicts).

    Per mobile address (phases summed, tenant prefix split off; addresses of
    spaces not in ``spaces`` and without a tenant prefix are attributed to
    ``default_space`` or dropped):

    * deliveries_ingress / deliveries_egress: deliveries from / to *clients*
      (deliveriesIngress - deliveriesIngressRouteContainer and the egress
      pair; the route-container share is the broker side of a waypoint
      queue, which the broker's own counters measure);
    * consumer_count: local subscribers of the last phase (for a waypoint
      queue phase 1, the consumers; phase 0's subscriber is the broker);
    * links: client (endpoint) links attached for the address;
    * message_count: deliveries the router holds for it (undelivered +
      unsettled on its links).

    One node row in ``_infra`` (routers are shared by all spaces).
    Returns (address_rows, node_rows, dropped) where ``dropped`` counts the
    mobile address keys (one per phase) no space claimed.
    """
    info = address_info or {}
    node = router.get("id") or "router"
    spaces = set(spaces or [])
    per, dropped = _per_address(addresses, links, lambda key: _mobile_target(key, spaces, default_space))

    rows = []
    for (space, addr), acc in sorted(per.items()):
        meta = info.get(addr) or {}
        rows.append(row(ADDRESSES, ts=ts, infra=infra, address_space=space, address=addr,
                        address_type=_router_address_type(meta.get("type"), acc), plan=meta.get("plan"),
                        node=node, node_kind=ROUTER,
                        message_count=acc["held"], consumer_count=acc["phases"][max(acc["phases"])],
                        deliveries_ingress=max(acc["in"], 0), deliveries_egress=max(acc["out"], 0),
                        links=acc["links"]))
    uptime = to_int(router.get("uptimeSeconds"))
    nodes = [row(NODES, ts=ts, infra=infra, address_space=INFRA_SPACE, node=node, node_kind=ROUTER,
                 memory_used=to_int(router.get("memoryUsage")), memory_max=to_int(memory_max),
                 connections=len(connections) if connections is not None else to_int(router.get("connectionCount")),
                 links=to_int(router.get("linkCount")) if router.get("linkCount") is not None else len(links),
                 uptime_ms=uptime * 1000 if uptime is not None else None)]
    return rows, nodes, dropped


def sample_router(call, infra, spaces, default_space=None, flavor="auto", page=DEFAULT_PAGE,
                  address_info=None, memory_max=None, clock=utcnow):
    """Query one router through ``call(props, body)`` and build its rows.
    ``flavor``: qdrouterd, skrouterd or auto (qdrouterd's entity types first,
    skupper-router's when the router does not know them)."""
    flavors = [flavor] if flavor in ROUTER_PREFIXES else ["qdrouterd", "skrouterd"]
    last = None
    for fl in flavors:
        prefix = ROUTER_PREFIXES[fl]
        try:
            router = query_all(call, prefix + ".router", ROUTER_ATTRIBUTES, page)
        except RouterManagementError as e:
            if e.status in (400, 404, 501) and fl != flavors[-1]:
                last = e
                continue
            raise
        break
    else:  # pragma: no cover - loop always breaks or raises
        raise last
    addresses = query_all(call, prefix + ".router.address", ROUTER_ADDRESS_ATTRIBUTES, page)
    links = query_all(call, prefix + ".router.link", ROUTER_LINK_ATTRIBUTES, page)
    connections = query_all(call, prefix + ".connection", ROUTER_CONNECTION_ATTRIBUTES, page)
    ts = clock()
    return router_rows(router[0] if router else {}, addresses, links, connections, infra, ts, spaces,
                       default_space=default_space, address_info=address_info, memory_max=memory_max)
