# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The auth service's optional mesh probe (docs/monitoring.md "Router mesh").

qdrouterd 1.19 exposes no metrics that authenticate, so the auth service, which runs on every
router host, asks the local router over AMQP management how many routers it
reaches: a QUERY of ``router.node`` (one entity per router it knows, itself
included, with the routers each has links to: count_routers). Every ``mesh_poll_interval`` seconds
in a thread of its own (each request bounded by ``mesh_timeout``; logins run
on the event loop and never wait for it). Exported on the metrics endpoint:

* ``enmasse_router_mesh_routers``: routers reached, itself included (absent
  while the last poll failed: unknown, not 0);
* ``enmasse_router_mesh_expected_routers``: the configuration's count;
* ``enmasse_router_management_up``: 1 when the last poll succeeded, else 0;
* ``enmasse_addresses{space, phase}``: per address space, the addresses the
  local router holds (the collection's ``address``, ``autoLink`` and
  ``linkRoute`` entities, named by ``standard/entities.py``) that are ready
  (phase ``Active``) and not (``Pending``: an autoLink or linkRoute of it
  is not ``active``, e.g. its broker is down), by the modules' own rule
  (``entities.entity_ready``). Three more QUERYs on the same connection,
  paged. Spaces are those the router has entities of (the configured ones:
  the collection names every entity, no client does). Absent while their
  last read failed. Addresses not placed on a broker yet (``address_info``'s
  Pending) have no router entity: not counted;
* qdrouterd's own metrics under their own names (``qdr_connections_total``,
  ``qdr_deliveries_ingress_total``, ...: ``ROUTER_METRICS``), which its
  HTTP /metrics would serve if that port could authenticate
  (docs/monitoring.md): one more QUERY, of the router entity, whose
  attributes hold the same core counters. Absent while their last read
  failed.

Needs python-qpid-proton (the router role installs it), imported only when
the probe runs; the rest of the service stays standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import logging
import threading

from . import mgmt_tls

try:  # in the collection
    from ..standard import entities
except ImportError:  # the service's package (roles/auth_service): a copy beside this file
    from . import entities

LOG = logging.getLogger("enmasse-auth-service")
# proton logs every reactor event at DEBUG: not into the service's journal
logging.getLogger("proton").setLevel(logging.WARNING)

QDR = "org.apache.qpid.dispatch"
NODE_TYPE = QDR + ".router.node"
ATTRIBUTES = ("id", "linkState", "nextHop")
# the entities of a standard space's addresses: kind -> (entity type, attributes read)
ADDRESS_KINDS = ((entities.ADDRESS, QDR + ".router.config.address", ("name",)),
                 (entities.AUTOLINK, QDR + ".router.config.autoLink", ("name", "operStatus")),
                 (entities.LINKROUTE, QDR + ".router.config.linkRoute", ("name", "operStatus")))
# qdrouterd's own metrics, as its HTTP /metrics would serve them (src/http-libwebsockets.c
# metrics[]: name and type; tests/unit/test_monitoring_metric_names.py checks both against the
# source), from the router entity's attribute that holds the same core counter (agent_router.c)
ROUTER_TYPE = QDR + ".router"
ROUTER_METRICS = (
    ("qdr_connections_total", "gauge", "connectionCount", "Connections open"),
    ("qdr_links_total", "gauge", "linkCount", "Links open"),
    ("qdr_addresses_total", "gauge", "addrCount", "Addresses known"),
    ("qdr_routers_total", "gauge", "nodeCount", "Other routers known in the mesh"),
    ("qdr_link_routes_total", "gauge", "linkRouteCount", "Link routes configured"),
    ("qdr_auto_links_total", "gauge", "autoLinkCount", "Auto links configured"),
    ("qdr_presettled_deliveries_total", "counter", "presettledDeliveries", "Presettled deliveries"),
    ("qdr_dropped_presettled_deliveries_total", "counter", "droppedPresettledDeliveries",
     "Presettled deliveries dropped (congestion)"),
    ("qdr_accepted_deliveries_total", "counter", "acceptedDeliveries", "Deliveries accepted"),
    ("qdr_released_deliveries_total", "counter", "releasedDeliveries", "Deliveries released"),
    ("qdr_rejected_deliveries_total", "counter", "rejectedDeliveries", "Deliveries rejected"),
    ("qdr_modified_deliveries_total", "counter", "modifiedDeliveries", "Deliveries modified"),
    ("qdr_deliveries_ingress_total", "counter", "deliveriesIngress", "Deliveries entering the router"),
    ("qdr_deliveries_egress_total", "counter", "deliveriesEgress", "Deliveries leaving the router"),
    ("qdr_deliveries_transit_total", "counter", "deliveriesTransit", "Deliveries passing through to another router"),
    ("qdr_deliveries_ingress_route_container_total", "counter", "deliveriesIngressRouteContainer",
     "Deliveries from route containers (brokers)"),
    ("qdr_deliveries_egress_route_container_total", "counter", "deliveriesEgressRouteContainer",
     "Deliveries to route containers (brokers)"),
    ("qdr_deliveries_delayed_1sec_total", "counter", "deliveriesDelayed1Sec", "Deliveries unsettled for more than 1 s"),
    ("qdr_deliveries_delayed_10sec_total", "counter", "deliveriesDelayed10Sec",
     "Deliveries unsettled for more than 10 s"),
    ("qdr_deliveries_stuck_total", "gauge", "deliveriesStuck", "Deliveries stuck (unsettled, no progress)"),
    ("qdr_links_blocked_total", "gauge", "linksBlocked", "Links blocked (no credit for a long time)"),
    ("qdr_deliveries_redirected_to_fallback_total", "counter", "deliveriesRedirectedToFallback",
     "Deliveries redirected to a fallback address"),
)
PAGE = 1000
# address phases (model/status.py's names): ready, not ready
ACTIVE, PENDING = "Active", "Pending"
DEFAULTS = {
    # the local router's management listener (amqps://127.0.0.1:55670); empty = no probe
    "mesh_management_url": "",
    # the client certificate of the management CA that listener requires (mgmt_tls); "" = none (a plain listener)
    "mesh_management_cert": "",
    "mesh_management_key": "",
    "mesh_management_ca": "",
    "mesh_expected_routers": 0,
    "mesh_poll_interval": 15,
    "mesh_timeout": 5,
}
ARGS = (("--mesh-management-url", "mesh_management_url", str,
         "the local router's management listener (amqp://host:port): probe the mesh"),
        ("--mesh-management-cert", "mesh_management_cert", str, "client certificate (management CA) for that listener"),
        ("--mesh-management-key", "mesh_management_key", str, "its private key"),
        ("--mesh-management-ca", "mesh_management_ca", str, "the management CA (the router's certificate is checked)"),
        ("--mesh-expected-routers", "mesh_expected_routers", int, "routers the mesh should have"),
        ("--mesh-poll-interval", "mesh_poll_interval", float, "seconds between polls (default 15)"),
        ("--mesh-timeout", "mesh_timeout", float, "seconds per poll (default 5)"))


def check_config(config):
    """ValueError naming the key when the probe's settings do not go together."""
    url = config["mesh_management_url"]
    if not isinstance(url, str) or (url and not url.startswith(("amqp://", "amqps://"))):
        raise ValueError("mesh_management_url: %r must be empty or an amqp:// URL" % (url,))
    expected = config["mesh_expected_routers"]
    if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
        raise ValueError("mesh_expected_routers: %r must be an integer >= 0" % (expected,))
    if url and not expected:
        raise ValueError("mesh_management_url needs mesh_expected_routers >= 1")
    if url and not config["metrics_port"]:
        raise ValueError("mesh_management_url needs metrics_port (the probe is exported there only)")
    tls = management_tls(config)
    # the scheme rule only with a certificate: a plain URL without one is a router of another deployment
    problems = mgmt_tls.errors("mesh_management", tls) + (
        mgmt_tls.url_errors("mesh_management_url", url, tls) if tls else [])
    if problems:
        raise ValueError("; ".join(problems))
    for key, low in (("mesh_poll_interval", 1), ("mesh_timeout", 0.1)):
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= 3600:
            raise ValueError("%s: %r must be a number of seconds in %s..3600" % (key, value, low))


def query_request():
    """``(properties, body)`` of the management QUERY of every router.node's id, links and next hop."""
    return ({"operation": "QUERY", "type": "org.amqp.management", "entityType": NODE_TYPE, "name": "self"},
            {"attributeNames": list(ATTRIBUTES)})


def reply_rows(properties, body, what, needed=()):
    """The rows (dicts) of a QUERY reply; ValueError when it is no
    successful reply or lacks one of the ``needed`` attributes. A row of the
    wrong length is left out."""
    status = (properties or {}).get("statusCode")
    if status != 200:
        raise ValueError("%s QUERY answered %r %s" % (what, status, (properties or {}).get("statusDescription")))
    if not isinstance(body, dict) or not isinstance(body.get("attributeNames"), list) \
            or not isinstance(body.get("results"), list):
        raise ValueError("%s QUERY reply has no attributeNames and results" % what)
    names = body["attributeNames"]
    if not all(a in names for a in needed):
        raise ValueError("%s QUERY reply lacks one of %s: %s" % (what, ", ".join(needed), names))
    return [dict(zip(names, row)) for row in body["results"] if isinstance(row, list) and len(row) == len(names)]


def count_routers(properties, body):
    """The number of routers a QUERY reply's router reaches, itself included;
    ValueError when it is no successful reply.

    Reached = joined to it by links both ends list in their ``linkState``: a
    router that went away stays a router.node, its last link state naming
    its old neighbours, until that ages out (qdrouterd's remoteLsMaxAge,
    60 s), while the routers it had links to drop it from theirs at once."""
    links, me = {}, None
    for node in reply_rows(properties, body, "router.node", ATTRIBUTES):
        if node["id"]:
            links[node["id"]] = set(node["linkState"] or ())
            me = node["id"] if node["nextHop"] == "(self)" else me
    if me is None:
        raise ValueError("router.node QUERY reply has no (self) row")
    reached, todo = {me}, [me]
    while todo:
        here = todo.pop()
        for there in links[here]:
            if there in links and there not in reached and here in links[there]:
                reached.add(there)
                todo.append(there)
    return len(reached)


def address_query_request(entity_type, attributes, offset=0):
    """``(properties, body)`` of one page of the QUERY of every entity of ``entity_type``."""
    return ({"operation": "QUERY", "type": "org.amqp.management", "entityType": entity_type, "name": "self",
             "offset": offset, "count": PAGE}, {"attributeNames": list(attributes)})


def address_entities(call):
    """``(kind, name, operStatus)`` of every address, autoLink and linkRoute
    of the router ``call(properties, body) -> (properties, body)`` asks,
    ``PAGE`` a request."""
    out = []
    for kind, entity_type, attributes in ADDRESS_KINDS:
        offset = 0
        while True:
            rows = reply_rows(*call(*address_query_request(entity_type, attributes, offset)),
                              what=kind, needed=attributes)
            out += [(kind, row["name"], row.get("operStatus")) for row in rows]
            if len(rows) < PAGE:
                break
            offset += len(rows)
    return out


def space_of(name):
    """S of an entity name ``enmasse/S/...``, else None."""
    parts = name.split("/", 2) if isinstance(name, str) else ()
    return parts[1] if len(parts) == 3 and parts[0] + "/" == entities.PREFIX and parts[1] else None


def count_addresses(rows):
    """``{space: {"Active": n, "Pending": m}}`` of ``(kind, name, operStatus)``
    rows: each address of a space (``entities.address_of_entity``) is Active
    when every entity of it is ready (``entities.entity_ready``), else
    Pending. Entities that belong to no address (the space's listener, the
    broker connectors, the MQTT service's) are left out."""
    ready = {}
    for kind, name, oper_status in rows:
        space = space_of(name)
        address = entities.address_of_entity(space, name) if space else None
        if address:
            key = (space, address)
            ready[key] = ready.get(key, True) and entities.entity_ready(kind, oper_status)
    out = {}
    for (space, unused), ok in ready.items():
        counts = out.setdefault(space, {ACTIVE: 0, PENDING: 0})
        counts[ACTIVE if ok else PENDING] += 1
    return out


def stats_request():
    """``(properties, body)`` of the QUERY of the router entity's counters."""
    return ({"operation": "QUERY", "type": "org.amqp.management", "entityType": ROUTER_TYPE, "name": "self"},
            {"attributeNames": [attribute for unused, unused, attribute, unused in ROUTER_METRICS]})


def router_stats(properties, body):
    """``{attribute: value}`` of the router entity's counters in a QUERY
    reply (integers only: an attribute the router did not give, or gave as
    something else, is left out); ValueError when it is no successful reply
    or has no row."""
    rows = reply_rows(properties, body, "router")
    if len(rows) != 1:
        raise ValueError("router QUERY reply has %d rows, not 1" % len(rows))
    return dict((k, v) for k, v in rows[0].items()
                if isinstance(v, int) and not isinstance(v, bool) and v >= 0)


def read_router(call):
    """``(routers, addresses, stats, why)`` of one poll: ``count_routers``
    (raises when router.node cannot be read: management down),
    ``count_addresses`` and ``router_stats`` (each None, and ``why``, when it
    could not be read)."""
    routers = count_routers(*call(*query_request()))
    stats = addresses = why = None
    try:
        stats = router_stats(*call(*stats_request()))
    except Exception as exc:  # the router's or proton's failure: no counters
        why = exc
    try:
        addresses = count_addresses(address_entities(call))
    except Exception as exc:  # no address counts
        why = exc
    return routers, addresses, stats, why


def management_tls(config):
    """The probe's client certificate as mgmt_tls takes it; {} = none."""
    files = (config.get("mesh_management_cert"), config.get("mesh_management_key"), config.get("mesh_management_ca"))
    return dict(zip(mgmt_tls.KEYS, files)) if any(files) else {}


def proton_query(url, timeout, read=read_router, tls=None):
    """``read(call)`` over a fresh connection: ``call(properties, body)``
    sends one management request and returns the reply's ``(properties, body)``;
    ``tls``: the client certificate (mgmt_tls) the listener requires."""
    import proton
    from proton import Message
    from proton.utils import BlockingConnection, SyncRequestResponse
    if tls:
        connection = BlockingConnection(url, timeout=timeout, ssl_domain=mgmt_tls.ssl_domain(proton, tls),
                                        allowed_mechs=mgmt_tls.MECHANISM)
    else:
        connection = BlockingConnection(url, timeout=timeout)
    try:
        client = SyncRequestResponse(connection, "$management")

        def call(properties, body):
            reply = client.call(Message(address="$management", properties=properties, body=body))
            return reply.properties, reply.body
        return read(call)
    finally:
        connection.close()


class MeshProbe(object):
    """The probe's last result; ``poll`` once, or ``start`` the polling thread.
    ``query(url, timeout)``: proton_query, ``(routers, addresses, why)``
    (tests give another)."""

    def __init__(self, url, expected, interval=15, timeout=5, query=proton_query):
        self.url, self.expected, self.interval, self.timeout = url, expected, interval, timeout
        self.query = query
        self.routers = None  # None: the last poll failed (or none yet)
        self.addresses = None  # {space: {phase: count}}; None: not read by the last poll
        self.stats = None  # the router entity's counters ({attribute: value}); None: not read by the last poll
        self.read_once = False  # a poll reached management: a part it could not read from then on is warned of
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = None

    def poll(self):
        try:
            routers, addresses, stats, why = self.query(self.url, self.timeout)
        except Exception as exc:  # any failure of the router or of proton: management down
            with self.lock:
                was_up, self.routers, self.addresses, self.stats = self.routers is not None, None, None, None
            (LOG.warning if was_up else LOG.debug)("mesh probe: %s: %s", self.url, exc)
            return
        with self.lock:
            changed = routers != self.routers
            pending = self.pending(addresses) != self.pending(self.addresses)
            # a part not read: warned of when it was read before, or at the first poll that reached
            # management (a part refused from the start would otherwise never be told)
            lost = [what for what, new, old in (("the addresses", addresses, self.addresses),
                                                ("the router's counters", stats, self.stats))
                    if new is None and (old is not None or not self.read_once)]
            self.routers, self.addresses, self.stats = routers, addresses, stats
            self.read_once = True
        if changed:
            LOG.info("mesh probe: the router reaches %d of %d routers", routers, self.expected)
        if lost:
            LOG.warning("mesh probe: %s: %s: %s", self.url, " and ".join(lost), why)
        if pending and addresses is not None:
            LOG.info("mesh probe: addresses not ready: %s", ", ".join(
                "%s %d" % (s, c[PENDING]) for s, c in sorted(addresses.items()) if c[PENDING]) or "none")

    @staticmethod
    def pending(addresses):
        """{space: not ready addresses} of ``addresses`` (None: None)."""
        return None if addresses is None else dict((s, c[PENDING]) for s, c in addresses.items())

    @property
    def up(self):
        """1 when the last poll succeeded, else 0."""
        return int(self.routers is not None)

    def run(self):
        while not self.stopping.is_set():
            self.poll()
            self.stopping.wait(self.interval)

    def start(self):
        self.thread = threading.Thread(target=self.run, name="mesh-probe", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()

    def lines(self):
        """Its series in the Prometheus text format."""
        with self.lock:
            routers, addresses, stats = self.routers, self.addresses, self.stats
        up = int(routers is not None)
        out = []
        for name, text, value in (
                ("router_mesh_routers", "Routers the local router reaches in the mesh, itself included", routers),
                ("router_mesh_expected_routers", "Routers the mesh should have", self.expected),
                ("router_management_up", "1 when the last management poll of the local router succeeded", up)):
            out += ["# HELP enmasse_%s %s" % (name, text), "# TYPE enmasse_%s gauge" % name]
            if value is not None:
                out.append("enmasse_%s %d" % (name, value))
        out += ["# HELP enmasse_addresses Addresses of each address space the local router holds, by phase "
                "(Pending: an autoLink or linkRoute of it is not active)", "# TYPE enmasse_addresses gauge"]
        for space, counts in sorted((addresses or {}).items()):
            for phase in (ACTIVE, PENDING):
                out.append('enmasse_addresses{space="%s",phase="%s"} %d' % (_label(space), phase, counts[phase]))
        for name, kind, attribute, text in ROUTER_METRICS:
            out += ["# HELP %s %s (the local qdrouterd's %s, read over management)" % (name, text, attribute),
                    "# TYPE %s %s" % (name, kind)]
            if stats and attribute in stats:
                out.append("%s %d" % (name, stats[attribute]))
        return out


def _label(value):
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def start_probe(config):
    """The running MeshProbe of ``config``, None when it names no management URL."""
    if not config["mesh_management_url"]:
        return None
    LOG.info("mesh probe: %s every %ss, %d routers expected", config["mesh_management_url"],
             config["mesh_poll_interval"], config["mesh_expected_routers"])
    tls = management_tls(config)
    return MeshProbe(config["mesh_management_url"], config["mesh_expected_routers"],
                     config["mesh_poll_interval"], config["mesh_timeout"],
                     query=functools.partial(proton_query, tls=tls) if tls else proton_query).start()
