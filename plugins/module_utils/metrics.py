# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metrics sampling for capacity planning, and the Parquet writer.

One implementation used by the ``metrics_collect`` module and by the
scheduled collector (``roles/capacity_planner/files/enmasse-collect``, which
imports this package as ``enmasse_mu``). The record layout is the one in
``docs/metrics-schema.md``; the Spark capacity planner reads it.

* Artemis: one Jolokia bulk round trip per broker (MBean wildcard reads of
  every queue, every address and the broker itself);
* router (qdrouterd / skupper-router): AMQP management ``QUERY`` (paged with
  ``offset``/``count``) of the router, its addresses, links and connections;
  needs python-qpid-proton, imported only when a router is sampled;
* writer: pyarrow, one new file per sample batch and partition, written under
  a hidden temporary name and renamed, so readers never see half a file.

No Ansible imports: the collector script runs it outside Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json
import os
import socket
import uuid

try:
    from ansible_collections.enmasse.messaging.plugins.module_utils import common as _common
    from ansible_collections.enmasse.messaging.plugins.module_utils import jolokia as _jolokia
    from ansible_collections.enmasse.messaging.plugins.module_utils import ledger as _ledger
except ImportError:  # the collector's enmasse_mu package
    from . import common as _common  # noqa
    from . import jolokia as _jolokia  # noqa
    from . import ledger as _ledger  # noqa

try:
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    HAS_PYARROW = True
    PYARROW_IMPORT_ERROR = None
except ImportError as _e:  # pragma: no cover - depends on the host
    HAS_PYARROW = False
    PYARROW_IMPORT_ERROR = _e

INFRA_SPACE = "_infra"
ADDRESSES = "addresses"
NODES = "nodes"
BROKER = "broker"
ROUTER = "router"

# ----------------------------------------------------------------- the schema
# (name, type); "timestamp" is microseconds, UTC. Every field is nullable: a
# counter a node kind does not have (a router has no messages_added, a broker
# no deliveries_ingress) is null, not 0.
SCHEMAS = {
    ADDRESSES: (
        ("ts", "timestamp"),
        ("infra", "string"),
        ("address_space", "string"),
        ("address", "string"),
        ("address_type", "string"),
        ("plan", "string"),
        ("node", "string"),
        ("node_kind", "string"),
        ("messages_added", "long"),
        ("messages_acknowledged", "long"),
        ("message_count", "long"),
        ("consumer_count", "int"),
        ("persistent_size", "long"),
        ("address_size", "long"),
        ("deliveries_ingress", "long"),
        ("deliveries_egress", "long"),
        ("links", "int"),
    ),
    NODES: (
        ("ts", "timestamp"),
        ("infra", "string"),
        ("address_space", "string"),
        ("node", "string"),
        ("node_kind", "string"),
        ("memory_used", "long"),
        ("memory_max", "long"),
        ("disk_used", "long"),
        ("disk_max", "long"),
        ("connections", "int"),
        ("links", "int"),
        ("uptime_ms", "long"),
    ),
}

ADDRESS_TYPES = ("queue", "topic", "subscription", "anycast", "multicast", "deadletter")


class MetricsError(Exception):
    pass


def arrow_schema(kind):
    """The pyarrow schema of ``kind``, as stored in every file (the
    partition column ``address_space`` is in the file and in its path)."""
    if not HAS_PYARROW:
        raise MetricsError("pyarrow is required to write metrics: %s" % PYARROW_IMPORT_ERROR)
    types = {"timestamp": pa.timestamp("us", tz="UTC"), "string": pa.string(),
             "long": pa.int64(), "int": pa.int32()}
    return pa.schema([pa.field(name, types[t], nullable=True) for name, t in SCHEMAS[kind]])


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def _int(v):
    """Jolokia/AMQP numbers -> int; None and non-numbers stay None."""
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _row(kind, **values):
    """A row with every field of ``kind`` (missing ones None); unknown keys
    are a programming error."""
    names = [n for n, _ in SCHEMAS[kind]]
    unknown = set(values) - set(names)
    if unknown:
        raise KeyError("not in the %s schema: %s" % (kind, ", ".join(sorted(unknown))))
    return dict((n, values.get(n)) for n in names)


# ------------------------------------------------------------ address metadata
def address_info_from_ledger(path):
    """{address: {"type": ..., "plan": ...}} from the owned-address ledger
    written by the address modules; {} when there is none or it is unreadable
    (metadata is a nicety: sampling never fails because of it).

    Accepts the ledger as ``{"addresses": {name: {...}}}``, ``{"addresses":
    [{"address": name, ...}]}``, ``{name: {...}}`` or a plain list."""
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError, ValueError):
        return {}
    if isinstance(data, dict) and "addresses" in data:
        data = data["addresses"]
    out = {}
    if isinstance(data, dict):
        items = [dict(v, address=k) if isinstance(v, dict) else {"address": k} for k, v in data.items()]
    elif isinstance(data, list):
        items = [v if isinstance(v, dict) else {"address": v} for v in data]
    else:
        return {}
    for item in items:
        name = item.get("address") or item.get("name")
        if not isinstance(name, str):
            continue
        out[name] = {"type": item.get("type"), "plan": item.get("plan")}
    return out


# ------------------------------------------------------------------- Artemis
QUEUE_ATTRIBUTES = ("Name", "Address", "RoutingType", "Temporary", "MessagesAdded",
                    "MessagesAcknowledged", "MessageCount", "ConsumerCount", "PersistentSize")
ADDRESS_ATTRIBUTES = ("Address", "RoutingTypes", "Internal", "Temporary", "AddressSize",
                      "RoutedMessageCount", "UnRoutedMessageCount")
BROKER_ATTRIBUTES = ("AddressMemoryUsage", "GlobalMaxSize", "DiskStoreUsage", "MaxDiskUsage",
                     "ConnectionCount", "TotalConsumerCount", "UptimeMillis")
# Artemis' own addresses: management replies, notifications, MQTT session
# store, internal (mirror, federation) addresses.
INTERNAL_PREFIXES = ("activemq.", "$sys.", "$.artemis.internal", "$ACTIVEMQ_ARTEMIS")
DEFAULT_DEADLETTER = ("DLQ", "ExpiryQueue")


def artemis_requests(broker_name):
    """The Jolokia bulk request for one broker sample: queues, addresses,
    broker, and the instance directory (to size the journal's filesystem)."""
    read = _jolokia.JolokiaClient.read_request
    inst = read("java.lang:type=Runtime", "SystemProperties")
    inst["path"] = "artemis.instance"
    return [read(_jolokia.all_queues_pattern(broker_name), list(QUEUE_ATTRIBUTES)),
            read(_jolokia.all_addresses_pattern(broker_name), list(ADDRESS_ATTRIBUTES)),
            read(_jolokia.broker_mbean(broker_name), list(BROKER_ATTRIBUTES)),
            inst]


def _internal(name):
    return any(name.startswith(p) for p in INTERNAL_PREFIXES)


def _wildcard_value(reply):
    """A wildcard read answers {mbean: {attr: value}}; "no MBean matches" is
    an empty broker, not an error."""
    value, err = reply
    if err is not None:
        if err.status == 404:
            return {}
        raise err
    return value or {}


def _broker_address_type(address, routing, info, is_topic):
    known = (info.get(address) or {}).get("type")
    if known in ADDRESS_TYPES:
        return known
    if is_topic:
        return "topic"
    if routing == "MULTICAST":
        return "subscription"
    if address in DEFAULT_DEADLETTER:
        return "deadletter"
    return "queue"


def filesystem_bytes(path):
    """Total bytes of the filesystem holding ``path`` (None when ``path`` is
    not on this host, e.g. the module runs elsewhere than the broker)."""
    if not path:
        return None
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return st.f_blocks * st.f_frsize


def parse_artemis(replies, conn, infra, ts, address_info=None, disk_total=None):
    """Rows from the replies to ``artemis_requests`` (a list of (value, error)
    as returned by ``JolokiaClient.bulk(raise_errors=False)``).

    ``conn``: the connection dict (address_space, type, broker_name, plan).
    Returns (address_rows, node_rows).

    * one row per queue: queue, deadletter, subscription (address = the
      queue's name, which is the model address; clients use ``<topic>::<name>``);
    * one row per topic (multicast address): messages_added is what was
      published to it (routed + unrouted), the stored side is in its
      subscriptions' rows, so message_count / persistent_size / consumers /
      acknowledgements are 0 on the topic row (nothing is counted twice);
    * address_size is Artemis' AddressSize of the row's own address (the
      topic row carries it for its subscriptions, which report null);
    * one node row: AddressMemoryUsage / GlobalMaxSize, disk used and the
      disk limit (DiskStoreUsage and MaxDiskUsage % of the journal's
      filesystem, when the broker's instance directory is on this host),
      connections, consumers as links, uptime.
    """
    info = address_info or {}
    space = conn["address_space"]
    node = conn.get("broker_name") or space
    node_space = space if (conn.get("type") or "brokered") == "brokered" else INFRA_SPACE
    queues = _wildcard_value(replies[0])
    addresses = _wildcard_value(replies[1])
    broker, err = replies[2]
    if err is not None:
        raise err
    broker = broker or {}
    instance_dir = replies[3][0] if len(replies) > 3 and replies[3][1] is None else None

    base = dict(ts=ts, infra=infra, address_space=space, node=node, node_kind=BROKER)
    by_address = {}
    for attrs in addresses.values():
        name = attrs.get("Address")
        if not name or attrs.get("Internal") or attrs.get("Temporary") or _internal(name):
            continue
        by_address[name] = attrs

    rows = []
    for attrs in sorted(queues.values(), key=lambda q: (q.get("Address") or "", q.get("Name") or "")):
        address = attrs.get("Address") or ""
        if address not in by_address or attrs.get("Temporary"):
            continue
        routing = (attrs.get("RoutingType") or "").upper()
        # queue names are unique on a broker; a subscription's model address
        # is its queue's name (clients consume from <topic>::<name>)
        row_address = attrs.get("Name") or address
        a_type = _broker_address_type(row_address, routing, info, False)
        own_address = row_address == address
        consumers = _int(attrs.get("ConsumerCount"))
        rows.append(_row(
            ADDRESSES, address=row_address, address_type=a_type,
            plan=(info.get(row_address) or {}).get("plan"),
            messages_added=_int(attrs.get("MessagesAdded")),
            messages_acknowledged=_int(attrs.get("MessagesAcknowledged")),
            message_count=_int(attrs.get("MessageCount")),
            consumer_count=consumers,
            persistent_size=_int(attrs.get("PersistentSize")),
            address_size=_int(by_address[address].get("AddressSize")) if own_address else None,
            links=consumers, **base))

    for name in sorted(by_address):
        attrs = by_address[name]
        routing_types = [str(r).upper() for r in attrs.get("RoutingTypes") or []]
        if "MULTICAST" not in routing_types or "ANYCAST" in routing_types:
            continue
        published = (_int(attrs.get("RoutedMessageCount")) or 0) + (_int(attrs.get("UnRoutedMessageCount")) or 0)
        rows.append(_row(
            ADDRESSES, address=name, address_type=_broker_address_type(name, "MULTICAST", info, True),
            plan=(info.get(name) or {}).get("plan"),
            messages_added=published, messages_acknowledged=0, message_count=0,
            consumer_count=0, persistent_size=0,
            address_size=_int(attrs.get("AddressSize")), links=0, **base))

    if disk_total is None:
        disk_total = filesystem_bytes(instance_dir)
    usage = broker.get("DiskStoreUsage")
    max_pct = _int(broker.get("MaxDiskUsage"))
    disk_used = disk_max = None
    if disk_total:
        if isinstance(usage, (int, float)) and usage >= 0:
            disk_used = int(usage * disk_total)
        disk_max = int(disk_total * (max_pct if max_pct and 0 < max_pct <= 100 else 100) / 100.0)
    nodes = [_row(NODES, ts=ts, infra=infra, address_space=node_space, node=node, node_kind=BROKER,
                  memory_used=_int(broker.get("AddressMemoryUsage")),
                  memory_max=_int(broker.get("GlobalMaxSize")),
                  disk_used=disk_used, disk_max=disk_max,
                  connections=_int(broker.get("ConnectionCount")),
                  links=_int(broker.get("TotalConsumerCount")),
                  uptime_ms=_int(broker.get("UptimeMillis")))]
    return rows, nodes


def sample_artemis(conn, infra, client=None, clock=utcnow):
    """Sample one broker (one Jolokia round trip). ``conn`` is a connection
    dict (see ``docs/metrics-collection.md``)."""
    if client is None:
        client = _common.jolokia_client(dict(conn, timeout=conn.get("timeout") or _common.DEFAULT_TIMEOUT))
    replies = client.bulk(artemis_requests(conn.get("broker_name") or conn["address_space"]),
                          raise_errors=False)
    ts = clock()
    return parse_artemis(replies, conn, infra, ts,
                         address_info=address_info_from_ledger(conn.get("ledger_path")))


# ---------------------------------------------------------------- the router
ROUTER_PREFIXES = {"qdrouterd": "org.apache.qpid.dispatch", "skrouterd": "io.skupper.router"}
ROUTER_ATTRIBUTES = ("id", "mode", "memoryUsage", "uptimeSeconds", "connectionCount", "linkCount",
                     "addrCount")
ROUTER_ADDRESS_ATTRIBUTES = ("key", "identity", "name", "distribution", "subscriberCount",
                             "remoteCount", "containerCount", "deliveriesIngress", "deliveriesEgress",
                             "deliveriesIngressRouteContainer", "deliveriesEgressRouteContainer")
ROUTER_LINK_ATTRIBUTES = ("linkType", "linkDir", "owningAddr", "undeliveredCount", "unsettledCount",
                          "deliveryCount")
ROUTER_CONNECTION_ATTRIBUTES = ("role", "dir", "tenant", "container")
DEFAULT_PAGE = 500


class RouterManagementError(MetricsError):
    def __init__(self, message, status=None):
        super(RouterManagementError, self).__init__(message)
        self.status = status


def query_request(entity_type, attribute_names, offset=0, count=DEFAULT_PAGE):
    """(application properties, body) of an AMQP management QUERY."""
    props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
             "entityType": entity_type, "offset": offset, "count": count}
    return props, {"attributeNames": list(attribute_names)}


def parse_query_reply(properties, body, entity_type=""):
    """A QUERY reply -> list of dicts. Raises ``RouterManagementError`` unless
    statusCode is 200. Attributes the entity does not have come back null."""
    properties = properties or {}
    code = _int(properties.get("statusCode"))
    if code != 200:
        raise RouterManagementError("QUERY %s: %s %s" % (entity_type, code, properties.get("statusDescription") or ""),
                                    status=code)
    if not isinstance(body, dict):
        raise RouterManagementError("QUERY %s: reply body is not a map" % entity_type)
    names = list(body.get("attributeNames") or [])
    out = []
    for values in body.get("results") or []:
        out.append(dict(zip(names, values)))
    return out


def query_all(call, entity_type, attribute_names, page=DEFAULT_PAGE):
    """Every entity of a type, ``page`` per request. ``call(props, body)``
    returns (reply properties, reply body)."""
    out, offset = [], 0
    while True:
        props, body = query_request(entity_type, attribute_names, offset, page)
        rows = parse_query_reply(*call(props, body), entity_type=entity_type)
        out.extend(rows)
        if len(rows) < page:
            return out
        offset += len(rows)


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
    per = {}
    dropped = 0

    def target(key):
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

    for a in addresses:
        tgt, phase = target(a.get("key") or a.get("name") or a.get("identity") or "")
        if tgt is None:
            dropped += phase is not None
            continue
        acc = per.setdefault(tgt, {"in": 0, "out": 0, "phases": {}, "distribution": None,
                                   "links": 0, "held": 0})
        acc["in"] += (_int(a.get("deliveriesIngress")) or 0) - (_int(a.get("deliveriesIngressRouteContainer")) or 0)
        acc["out"] += (_int(a.get("deliveriesEgress")) or 0) - (_int(a.get("deliveriesEgressRouteContainer")) or 0)
        acc["phases"][phase] = _int(a.get("subscriberCount")) or 0
        acc["distribution"] = acc["distribution"] or a.get("distribution")

    for link in links:
        if link.get("linkType") != "endpoint":
            continue
        tgt, _ = target(link.get("owningAddr") or "")
        if tgt is None or tgt not in per:
            continue
        per[tgt]["links"] += 1
        per[tgt]["held"] += (_int(link.get("undeliveredCount")) or 0) + (_int(link.get("unsettledCount")) or 0)

    rows = []
    for (space, addr), acc in sorted(per.items()):
        meta = info.get(addr) or {}
        a_type = meta.get("type")
        if a_type not in ADDRESS_TYPES:
            if max(acc["phases"]) >= 1:
                a_type = "queue"
            elif acc["distribution"] == "multicast":
                a_type = "multicast"
            else:
                a_type = "anycast"
        rows.append(_row(ADDRESSES, ts=ts, infra=infra, address_space=space, address=addr,
                         address_type=a_type, plan=meta.get("plan"), node=node, node_kind=ROUTER,
                         message_count=acc["held"], consumer_count=acc["phases"][max(acc["phases"])],
                         deliveries_ingress=max(acc["in"], 0), deliveries_egress=max(acc["out"], 0),
                         links=acc["links"]))
    uptime = _int(router.get("uptimeSeconds"))
    nodes = [_row(NODES, ts=ts, infra=infra, address_space=INFRA_SPACE, node=node, node_kind=ROUTER,
                  memory_used=_int(router.get("memoryUsage")), memory_max=_int(memory_max),
                  connections=len(connections) if connections is not None else _int(router.get("connectionCount")),
                  links=_int(router.get("linkCount")) if router.get("linkCount") is not None else len(links),
                  uptime_ms=uptime * 1000 if uptime is not None else None)]
    return rows, nodes, dropped


class RouterManagement(object):
    """AMQP management client (python-qpid-proton's BlockingConnection):
    requests to ``$management`` with a dynamic reply-to."""

    def __init__(self, url, timeout=30, ssl_domain=None, sasl_mechanisms=None, management_address="$management"):
        try:
            from proton import Message
            from proton.utils import BlockingConnection
        except ImportError as e:
            raise MetricsError("sampling a router needs python-qpid-proton (python3-qpid-proton): %s" % e)
        self._message = Message
        self.address = management_address
        kwargs = {"timeout": timeout}
        if ssl_domain is not None:
            kwargs["ssl_domain"] = ssl_domain
        if sasl_mechanisms:
            kwargs["allowed_mechs"] = sasl_mechanisms
        if url.startswith("amqp://") and "@" in url:
            # credentials in an amqp:// URL: the router is on this host or a
            # trusted network; PLAIN without TLS must be allowed explicitly
            kwargs["allow_insecure_mechs"] = True
        try:
            self.conn = BlockingConnection(url, **kwargs)
            self.receiver = self.conn.create_receiver(None, dynamic=True)
            self.sender = self.conn.create_sender(management_address)
        except Exception as e:  # proton raises several unrelated types
            detail = str(e)
            password = _jolokia.url_password(url)
            if password:
                detail = detail.replace(password, "********")
            raise RouterManagementError("cannot open AMQP management at %s: %s"
                                        % (_jolokia.redact_url(url), detail))
        self.reply_to = self.receiver.remote_source.address
        self.timeout = timeout
        self._next = 0

    def call(self, properties, body):
        self._next += 1
        cid = "enmasse-metrics-%d" % self._next
        msg = self._message(address=self.address, reply_to=self.reply_to, correlation_id=cid,
                            properties=properties, body=body)
        try:
            self.sender.send(msg, timeout=self.timeout)
            while True:
                reply = self.receiver.receive(timeout=self.timeout)
                if self.receiver.fetcher.unsettled:
                    # qdrouterd sends management replies pre-settled:
                    # there is nothing to accept then
                    self.receiver.accept()
                if reply.correlation_id == cid:
                    return reply.properties, reply.body
        except Exception as e:
            raise RouterManagementError("AMQP management request %s %s failed: %s"
                                        % (properties.get("operation"), properties.get("entityType"), e))

    def close(self):
        try:
            self.conn.close()
        except Exception:
            pass


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


# ----------------------------------------------------------------- the writer
def open_store(store):
    """(filesystem, root path) for a local path or any URI pyarrow.fs knows
    (file://, s3://, gs://, hdfs:// when the filesystem libraries are there)."""
    if not HAS_PYARROW:
        raise MetricsError("pyarrow is required to write metrics: %s" % PYARROW_IMPORT_ERROR)
    if "://" not in store:
        store = os.path.abspath(os.path.expanduser(store))
    try:
        fs, path = pafs.FileSystem.from_uri(store)
    except Exception as e:
        raise MetricsError("cannot open the metrics store %s: %s" % (store, e))
    return fs, path.rstrip("/")


def partition_dir(root, kind, ts, space):
    return "%s/%s/date=%s/address_space=%s" % (root, kind, ts.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d"),
                                               space)


def part_name(ts):
    return "part-%s-%s-%s.parquet" % (ts.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ"),
                                      socket.gethostname().split(".")[0] or "host", uuid.uuid4().hex[:12])


def group_rows(rows):
    """{partition key (date, address_space): [rows]} in a stable order."""
    groups = {}
    for r in rows:
        key = (r["ts"].astimezone(datetime.timezone.utc).strftime("%Y-%m-%d"), r["address_space"])
        groups.setdefault(key, []).append(r)
    return groups


def write_rows(store, kind, rows, fs=None):
    """Append ``rows`` (dicts in the ``kind`` schema) to the dataset: one new
    file per partition, written under a hidden name (``.part-...``, which
    Spark and pyarrow skip) and renamed into place. On object stores a put is
    already atomic, so the file is written directly. Returns the paths."""
    if not rows:
        return []
    if fs is None:
        fs, root = open_store(store)
    else:
        root = store.rstrip("/")
    schema = arrow_schema(kind)
    atomic_put = fs.type_name in ("s3", "gcs")
    paths = []
    for _, part in sorted(group_rows(rows).items()):
        directory = partition_dir(root, kind, part[0]["ts"], part[0]["address_space"])
        fs.create_dir(directory, recursive=True)
        final = "%s/%s" % (directory, part_name(part[0]["ts"]))
        table = pa.Table.from_pylist(part, schema=schema)
        if atomic_put:
            pq.write_table(table, final, filesystem=fs)
        else:
            tmp = "%s/.%s.tmp" % (directory, final.rsplit("/", 1)[1])
            try:
                pq.write_table(table, tmp, filesystem=fs)
                fs.move(tmp, final)
            except Exception:
                try:
                    fs.delete_file(tmp)
                except Exception:
                    pass
                raise
        paths.append(final)
    return paths


# ----------------------------------------------------------- one collection
def summarize(address_rows, node_rows):
    """What a collection saw, per address space and node (for the module's
    result and the collector's log line)."""
    spaces = {}
    for r in address_rows:
        s = spaces.setdefault(r["address_space"], {"addresses": 0, "messages": 0, "consumers": 0,
                                                   "persistent_bytes": 0})
        s["addresses"] += 1
        if r["node_kind"] == BROKER:
            s["messages"] += r["message_count"] or 0
            s["persistent_bytes"] += r["persistent_size"] or 0
        s["consumers"] += r["consumer_count"] or 0
    nodes = [dict((k, r[k]) for k in ("address_space", "node", "node_kind", "memory_used", "memory_max",
                                       "disk_used", "disk_max", "connections", "links", "uptime_ms"))
             for r in node_rows]
    return {"address_spaces": spaces, "nodes": nodes}


def collect(brokers, infra, store=None, router=None, check_mode=False, clock=utcnow):
    """Sample every broker in ``brokers`` (connection dicts) and the router
    described by ``router`` (see ``router_settings``; None: no router), then
    append the rows to ``store`` (nothing is written in check mode).

    A source that fails is reported in ``errors`` and the others are still
    written; the caller decides whether that is fatal.
    """
    address_rows, node_rows, errors, sources = [], [], [], []
    for conn in brokers:
        try:
            rows, nodes = sample_artemis(conn, infra, clock=clock)
        except (_jolokia.JolokiaError, MetricsError) as e:
            errors.append({"source": BROKER, "address_space": conn.get("address_space"),
                           "node": conn.get("broker_name"), "error": str(e)})
            continue
        address_rows.extend(rows)
        node_rows.extend(nodes)
        sources.append({"node_kind": BROKER, "node": nodes[0]["node"], "address_space": conn["address_space"],
                        "addresses": len(rows)})
    router_status = "not configured"
    if router:
        info = {}
        for conn in brokers:
            info.update(address_info_from_ledger(conn.get("ledger_path")))
        spaces = [c["address_space"] for c in brokers] + list(router.get("address_spaces") or [])
        client = None
        try:
            client = RouterManagement(router["url"], timeout=router.get("timeout") or 30,
                                      ssl_domain=router.get("ssl_domain"),
                                      sasl_mechanisms=router.get("sasl_mechanisms"))
            rows, nodes, dropped = sample_router(client.call, infra, spaces,
                                                 default_space=router.get("default_space"),
                                                 flavor=router.get("flavor") or "auto",
                                                 page=router.get("page_size") or DEFAULT_PAGE,
                                                 address_info=info, memory_max=router.get("memory_max"),
                                                 clock=clock)
        except MetricsError as e:
            errors.append({"source": ROUTER, "node": _jolokia.redact_url(router["url"]), "error": str(e)})
            router_status = "failed"
        else:
            address_rows.extend(rows)
            node_rows.extend(nodes)
            sources.append({"node_kind": ROUTER, "node": nodes[0]["node"], "address_space": INFRA_SPACE,
                            "addresses": len(rows), "unattributed_addresses": dropped})
            router_status = "sampled"
        finally:
            if client is not None:
                client.close()
    files = []
    if not check_mode and store:
        fs, root = open_store(store)
        try:
            files = (write_rows(root, ADDRESSES, address_rows, fs=fs)
                     + write_rows(root, NODES, node_rows, fs=fs))
        except (OSError, pa.ArrowException) as e:
            raise MetricsError("cannot write to the metrics store %s: %s" % (store, e))
    written = bool(files)
    return {
        "samples": {ADDRESSES: len(address_rows), NODES: len(node_rows)},
        "written": {ADDRESSES: len(address_rows) if written else 0,
                    NODES: len(node_rows) if written else 0},
        "files": files,
        "sources": sources,
        "router": router_status,
        "errors": errors,
        "summary": summarize(address_rows, node_rows),
    }


# ------------------------------------------------- settings (module, script)
# The options of the metrics_collect module, which are also the keys of the
# scheduled collector's configuration file; None = not set.
DEFAULT_STORE = "/var/lib/enmasse-messaging/metrics"
COLLECT_DEFAULTS = {
    "address_space": None,
    "address_spaces": None,
    "spaces_dir": _common.DEFAULT_SPACES_DIR,
    "store": DEFAULT_STORE,
    "infra": "default",
    "router_url": None,
    "router_flavor": "auto",
    "router_address_spaces": [],
    "router_default_address_space": None,
    "router_memory_max": None,
    "router_page_size": DEFAULT_PAGE,
    "router_timeout": 30,
    "router_sasl_mechanisms": None,
    "router_ca_file": None,
    "router_cert_file": None,
    "router_key_file": None,
    "router_verify_hostname": True,
    "fail_on_source_error": True,
}
# connection options that name one broker: they make sense for one space only
SINGLE_SPACE_OPTIONS = ("connection_file", "management_url", "broker_name", "ledger_path")
BROKER_REQUIRED = ("management_url", "management_user", "management_password", "broker_name")


def settings(params):
    """``params`` over ``COLLECT_DEFAULTS`` and the connection options (all
    None by default)."""
    out = dict(COLLECT_DEFAULTS)
    out.update(dict((k, None) for k in _common.CONNECTION_ARGS))
    out.update(dict((k, v) for k, v in (params or {}).items() if v is not None))
    return out


def load_config(path):
    """The collector's configuration file: a JSON object of metrics_collect
    options. Raises ``common.ConfigError`` naming unknown options."""
    try:
        with open(path) as f:
            params = json.load(f)
    except (IOError, OSError, ValueError) as e:
        raise _common.ConfigError("cannot read the collector configuration %s: %s" % (path, e))
    if not isinstance(params, dict):
        raise _common.ConfigError("%s must hold a JSON object of metrics_collect options" % path)
    unknown = sorted(set(params) - set(settings({})))
    if unknown:
        raise _common.ConfigError("%s: unknown options %s" % (path, ", ".join(unknown)))
    return params


def spaces_in_dir(directory):
    """Address spaces with a connection file in ``directory`` (sorted)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(n[:-5] for n in names if n.endswith(".json") and not n.startswith("."))


def broker_connections(params):
    """The connection dict of every address space to sample: ``address_space``
    or ``address_spaces``, or every connection file in ``spaces_dir``.
    Raises ``common.ConfigError`` with every problem."""
    p = settings(params)
    if p["address_space"] and p["address_spaces"]:
        raise _common.ConfigError("address_space and address_spaces are mutually exclusive")
    if p["address_space"]:
        names = [p["address_space"]]
    elif p["address_spaces"]:
        names = list(p["address_spaces"])
    else:
        names = spaces_in_dir(p["spaces_dir"])
    if len(names) > 1:
        bad = [k for k in SINGLE_SPACE_OPTIONS if p.get(k)]
        if bad:
            raise _common.ConfigError("%s name one broker: give a single address_space with them"
                                      % ", ".join(bad))
    conn_params = dict((k, p.get(k)) for k in _common.CONNECTION_ARGS)
    if not conn_params["connection_file"] and p["spaces_dir"]:
        # the spaces directory may be moved (tests, non-default layouts)
        by_dir = dict((n, os.path.join(p["spaces_dir"], "%s.json" % n)) for n in names)
    else:
        by_dir = {}
    conns, errors = [], []
    for name in names:
        cp = dict(conn_params)
        if name in by_dir:
            cp["connection_file"] = by_dir[name] if os.path.exists(by_dir[name]) else None
        try:
            conn = _common.resolve_connection(cp, name, required=BROKER_REQUIRED)
        except _common.ConfigError as e:
            errors.extend(e.errors)
            continue
        conn["address_space"] = name
        conns.append(conn)
    if errors:
        raise _common.ConfigError(errors)
    return conns


def router_ssl_domain(p):
    """A proton SSLDomain for amqps:// router URLs (None for amqp://)."""
    url = p.get("router_url") or ""
    if not (url.startswith("amqps://") or p.get("router_ca_file") or p.get("router_cert_file")):
        return None
    try:
        from proton import SSLDomain
    except ImportError as e:
        raise MetricsError("sampling a router needs python-qpid-proton (python3-qpid-proton): %s" % e)
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    if p.get("router_ca_file"):
        domain.set_trusted_ca_db(p["router_ca_file"])
    if p.get("router_cert_file"):
        domain.set_credentials(p["router_cert_file"], p.get("router_key_file"), None)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME if p.get("router_verify_hostname")
                                   else SSLDomain.VERIFY_PEER)
    return domain


def router_settings(params):
    """The ``router`` argument of ``collect`` (None when no router_url)."""
    p = settings(params)
    if not p["router_url"]:
        return None
    if p["router_flavor"] not in ("auto",) + tuple(ROUTER_PREFIXES):
        raise _common.ConfigError("router_flavor must be auto, %s" % ", ".join(sorted(ROUTER_PREFIXES)))
    return {"url": p["router_url"], "flavor": p["router_flavor"], "timeout": p["router_timeout"],
            "page_size": p["router_page_size"], "memory_max": p["router_memory_max"],
            "address_spaces": p["router_address_spaces"] or [],
            "default_space": p["router_default_address_space"],
            "sasl_mechanisms": p["router_sasl_mechanisms"], "ssl_domain": router_ssl_domain(p)}


def run(params, check_mode=False, clock=utcnow, on_connection=None):
    """One collection as the module and the collector script do it. Returns
    the ``collect`` result plus ``changed`` and ``failed`` (a source failed
    and ``fail_on_source_error``, or nothing at all could be sampled).
    ``on_connection(conn)`` is called with every broker connection resolved
    (the module masks their passwords with it)."""
    p = settings(params)
    brokers = broker_connections(p)
    for conn in brokers if on_connection else ():
        on_connection(conn)
    router = router_settings(p)
    if not brokers and not router:
        raise _common.ConfigError("nothing to sample: no address space (connection files in %s) and no router_url"
                                  % p["spaces_dir"])
    result = collect(brokers, p["infra"], store=p["store"], router=router, check_mode=check_mode, clock=clock)
    sampled = result["samples"][ADDRESSES] + result["samples"][NODES]
    result["changed"] = bool(result["files"]) or (check_mode and sampled > 0)
    result["failed"] = bool(result["errors"]) and (p["fail_on_source_error"] or not result["sources"])
    if result["errors"]:
        result["msg"] = "; ".join("%s %s: %s" % (e["source"], e.get("address_space") or e.get("node"), e["error"])
                                  for e in result["errors"])
    return result


# ------------------------------------------------ the planner's input model
BROKER_HELD = ("queue", "topic", "subscription", "deadletter")


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
        held = dict((a["address"], [node]) for a in addresses if a.get("type") in BROKER_HELD)
        if held:
            placement[name] = held
    return {"infra": p["infra"], "address_spaces": spaces, "current_placement": placement}, problems
