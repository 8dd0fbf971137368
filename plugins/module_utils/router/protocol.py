# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AMQP management request/reply layer for routers (qdrouterd,
skupper-router): no I/O, no proton.

Requests go to ``$management`` (another router of the mesh:
``_topo/0/<routerId>/$management``) with application properties
``operation``, ``type``, ``name``; QUERY is paged (``offset``, ``count``);
replies carry ``statusCode``/``statusDescription``. ``Request`` and ``Reply``
are what ``client.ManagementSession`` sends and returns; ``encode_request``
is a request message as bytes; ``RouterManagementError`` is every failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import struct

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError

ROUTER_PREFIXES = {"qdrouterd": "org.apache.qpid.dispatch", "skrouterd": "io.skupper.router"}
DEFAULT_PAGE = 500
MANAGEMENT = "$management"
QDR = ROUTER_PREFIXES["qdrouterd"]
NODE_TYPE = QDR + ".router.node"
ROUTER_TYPE = QDR + ".router"
# statusCode of a successful reply: OK, Created, No Content
SUCCESS = (200, 201, 204)


class RouterManagementError(ClientError):
    """A failed management request; ``status`` is the reply's statusCode
    (None when no reply came), ``router``/``entity_type``/``name`` what it
    was about, ``description`` the router's statusDescription."""

    def __init__(self, message, status=None, router=None, entity_type=None, name=None, description=None, result=None):
        super(RouterManagementError, self).__init__(message, result=result)
        self.status = status
        self.router = router
        self.entity_type = entity_type
        self.name = name
        self.description = description


def management_address(router=None):
    """The management node of ``router`` (a router id), or of the router the
    session is connected to when ``router`` is None."""
    if router is None:
        return MANAGEMENT
    return "_topo/0/%s/%s" % (router, MANAGEMENT)


def query_request(entity_type, attribute_names, offset=0, count=DEFAULT_PAGE):
    """(application properties, body) of an AMQP management QUERY."""
    props = {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
             "entityType": entity_type, "offset": offset, "count": count}
    return props, {"attributeNames": list(attribute_names)}


def query_rows(body):
    """A QUERY reply body -> list of dicts (None when it is not a map)."""
    if not isinstance(body, dict):
        return None
    names = list(body.get("attributeNames") or [])
    return [dict(zip(names, values)) for values in body.get("results") or []]


def status_code(properties):
    try:
        return int((properties or {}).get("statusCode"))
    except (TypeError, ValueError):
        return None


def parse_query_reply(properties, body, entity_type=""):
    """A QUERY reply -> list of dicts. Raises ``RouterManagementError`` unless
    statusCode is 200. Attributes the entity does not have come back null."""
    properties = properties or {}
    code = status_code(properties)
    if code != 200:
        raise RouterManagementError("QUERY %s: %s %s" % (entity_type, code, properties.get("statusDescription") or ""),
                                    status=code, entity_type=entity_type,
                                    description=properties.get("statusDescription"))
    rows = query_rows(body)
    if rows is None:
        raise RouterManagementError("QUERY %s: reply body is not a map" % entity_type, entity_type=entity_type)
    return rows


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


def encode_value(value):
    """AMQP 1.0 encoding of a management value: null, boolean, long,
    string, map, list (what request properties and entity attributes are).
    Raises TypeError for anything else."""
    if value is None:
        return b"\x40"
    if value is True:
        return b"\x41"
    if value is False:
        return b"\x42"
    if isinstance(value, int):
        return b"\x81" + struct.pack(">q", value)
    if isinstance(value, str):
        data = value.encode("utf-8")
        if len(data) < 256:
            return b"\xa1" + struct.pack(">B", len(data)) + data
        return b"\xb1" + struct.pack(">I", len(data)) + data
    if isinstance(value, dict):
        data = b"".join(encode_value(k) + encode_value(v) for k, v in value.items())
        return b"\xd1" + struct.pack(">II", len(data) + 4, len(value) * 2) + data
    if isinstance(value, (list, tuple)):
        data = b"".join(encode_value(v) for v in value)
        return b"\xd0" + struct.pack(">II", len(data) + 4, len(value)) + data
    raise TypeError("cannot encode %r for AMQP management" % (value,))


def encode_request(to, reply_to, correlation_id, properties, body):
    """A management request message, encoded: properties (to, reply-to,
    correlation-id), application-properties, amqp-value body. Plain struct
    packing: python-qpid-proton's encoder costs about three times as much."""
    fields = b"\x40\x40" + encode_value(to) + b"\x40" + encode_value(reply_to) + encode_value(correlation_id)
    out = b"\x00\x53\x73\xd0" + struct.pack(">II", len(fields) + 4, 6) + fields
    out += b"\x00\x53\x74" + encode_value(properties)
    if body is not None:
        out += b"\x00\x53\x77" + encode_value(body)
    return out


def router_label(router):
    return "router %s" % router if router is not None else "the local router"


class Request(object):
    """One management request. ``router`` None is the router the session is
    connected to. ``entity_type`` is the full type name. QUERY: the type
    queried, ``attribute_names``, ``offset``/``count``. ``tag``: anything the
    caller wants back on the reply."""

    __slots__ = ("router", "operation", "entity_type", "name", "identity", "attributes", "attribute_names",
                 "offset", "count", "properties", "body", "tag")

    def __init__(self, operation, entity_type=None, name=None, router=None, attributes=None, identity=None,
                 attribute_names=(), offset=0, count=DEFAULT_PAGE, properties=None, body=None, tag=None):
        self.operation = operation
        self.entity_type = entity_type
        self.name = name
        self.router = router
        self.attributes = attributes
        self.identity = identity
        self.attribute_names = attribute_names
        self.offset = offset
        self.count = count
        self.properties = properties
        self.body = body
        self.tag = tag

    def wants_body(self):
        """Whether the reply's body is needed (CREATE's reply repeats the
        whole entity: converting it to Python costs time for nothing)."""
        return self.properties is not None or self.operation not in ("CREATE", "DELETE")

    def message(self):
        """(application properties, body) of the request message."""
        if self.properties is not None:  # a raw request (RouterManagement.call)
            return self.properties, self.body
        if self.operation == "QUERY":
            return query_request(self.entity_type, self.attribute_names, self.offset, self.count)
        props = {"operation": self.operation, "type": self.entity_type}
        if self.name is not None:
            props["name"] = self.name
        if self.identity is not None:
            props["identity"] = self.identity
        body = None
        if self.operation in ("CREATE", "UPDATE"):
            body = dict(self.attributes or {})
            if self.name is not None:
                body.setdefault("name", self.name)
        return props, body

    def describe(self):
        """``CREATE org...router.config.address 'enmasse/x' on router R1``."""
        what = [self.operation, self.entity_type or (self.properties or {}).get("entityType") or ""]
        if self.name is not None or self.identity is not None:
            what.append("'%s'" % (self.name if self.name is not None else self.identity))
        return "%s on %s" % (" ".join(w for w in what if w), router_label(self.router))


class Reply(object):
    """The outcome of one ``Request``: ``status`` (statusCode, None when no
    reply came), ``description`` (statusDescription, or why no reply came),
    ``properties`` and ``body`` of the reply message."""

    __slots__ = ("request", "status", "description", "properties", "body")

    def __init__(self, request, status, description, properties=None, body=None):
        self.request = request
        self.status = status
        self.description = description
        self.properties = properties
        self.body = body

    @property
    def ok(self):
        return self.status in SUCCESS

    @property
    def rows(self):
        """A QUERY reply's rows (list of dicts)."""
        return query_rows(self.body) or []

    def error(self):
        """This reply as a ``RouterManagementError`` naming the router, the
        entity type and name and the router's reason."""
        req = self.request
        reason = "%s %s" % (self.status, self.description or "") if self.status is not None else self.description
        return RouterManagementError("%s failed: %s" % (req.describe(), (reason or "").strip()), status=self.status,
                                     router=req.router, entity_type=req.entity_type, name=req.name,
                                     description=self.description)


def raise_for(replies):
    """Raise one ``RouterManagementError`` listing every failed reply (its
    ``errors``; attributes of the first one)."""
    failed = [r for r in replies if not r.ok]
    if failed:
        first = failed[0].error()
        if len(failed) > 1:
            first.errors = [r.error().errors[0] for r in failed]
            first.args = ("; ".join(first.errors),)
        raise first
