# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMQP management client for routers (qdrouterd, skupper-router).

Requests go to ``$management`` (another router of the mesh:
``_topo/0/<routerId>/$management``) with application properties
``operation``, ``type``, ``name``; QUERY is paged (``offset``, ``count``);
replies carry ``statusCode``/``statusDescription``.

``ManagementSession`` is one AMQP connection that pipelines requests: an
anonymous sender (each request names its router in its ``to``), one dynamic
receiver for every reply, correlation ids, at most ``window`` requests
outstanding, a timeout per request. ``execute`` runs a batch of ``Request``
and returns one ``Reply`` each, in order; a failed request never stops the
others. Needs python-qpid-proton, imported only when a session is opened."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import select
import socket
import struct
import time
import uuid

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url, url_password

ROUTER_PREFIXES = {"qdrouterd": "org.apache.qpid.dispatch", "skrouterd": "io.skupper.router"}
DEFAULT_PAGE = 500
# below the router's link capacity (linkCapacity, 250 by default): a router
# drops pre-settled deliveries queued beyond it, requests or replies
DEFAULT_WINDOW = 200
MANAGEMENT = "$management"
QDR = ROUTER_PREFIXES["qdrouterd"]
NODE_TYPE = QDR + ".router.node"
ROUTER_TYPE = QDR + ".router"
# statusCode of a successful reply: OK, Created, No Content
SUCCESS = (200, 201, 204)
# AMQP 1.0 message section descriptors
SECTION_PROPERTIES = 0x73
SECTION_APPLICATION_PROPERTIES = 0x74
SECTION_BODY = (0x75, 0x76, 0x77)


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


class ManagementSession(object):
    """AMQP management over one connection with pipelined requests.

    ``url``: the management listener of one router of the mesh
    (amqp://[user:password@]host:port; amqps:// with ``ssl_domain``).
    ``timeout``: seconds to connect, and per request from when it was sent.
    ``window``: most requests outstanding at once.

    The proton engine is driven directly over a socket (no reactor): one
    anonymous sender whose deliveries are pre-settled (the reply is the
    outcome; a request to a router that is not reachable gets no reply and
    times out), one dynamic receiver for the replies. Not thread-safe: one
    caller at a time; parallelism is pipelining."""

    def __init__(self, url, timeout=30, window=DEFAULT_WINDOW, ssl_domain=None, sasl_mechanisms=None,
                 container_id=None):
        try:
            import proton
        except ImportError as e:
            raise ClientError("AMQP management needs python-qpid-proton (python3-qpid-proton): %s" % e)
        self._proton = proton
        self.url = url
        self.timeout = timeout
        self.window = max(1, int(window))
        self.ssl_domain = ssl_domain
        self.sasl_mechanisms = sasl_mechanisms
        self.container_id = container_id or "enmasse-management-%s" % uuid.uuid4()
        self._message = proton.Message
        self._data = proton.Data()
        self._endpoint = proton.Endpoint
        self._next = 0
        self._pending = collections.deque()             # (cid, request, encoded) not sent yet
        self._outstanding = collections.OrderedDict()   # cid -> (request, deadline), oldest first
        self._replies = {}                              # cid -> Reply
        self._arrived = []                              # cids replied since execute last looked
        self.sock = None
        self._open()

    def _open(self):
        """Connect: SASL (ANONYMOUS, or PLAIN with the URL's credentials),
        TLS for amqps:// or an ``ssl_domain``, the two links."""
        proton, url, timeout = self._proton, self.url, self.timeout
        self._credit = 0
        self.error = None                               # why the connection is unusable
        self.reply_to = None
        self.conn = None
        try:
            parsed = proton.Url(url).defaults()
            self.sock = socket.create_connection((parsed.host, int(parsed.port)), timeout=timeout)
            self.sock.setblocking(False)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conn = proton.Connection()
            self.conn.container = self.container_id
            self.conn.hostname = parsed.host
            if parsed.username:
                self.conn.user = parsed.username
            if parsed.password:
                self.conn.password = parsed.password
            self.transport = proton.Transport()
            if parsed.scheme == "amqps" or self.ssl_domain is not None:
                domain = self.ssl_domain or proton.SSLDomain(proton.SSLDomain.MODE_CLIENT)
                ssl = proton.SSL(self.transport, domain, None)
                ssl.peer_hostname = parsed.host
            sasl = self.transport.sasl()
            if self.sasl_mechanisms:
                sasl.allowed_mechs(self.sasl_mechanisms)
            if parsed.scheme == "amqp" and parsed.password:
                # credentials in an amqp:// URL: the router is on this host or a
                # trusted network; PLAIN without TLS must be allowed explicitly
                sasl.allow_insecure_mechs = True
            self.transport.bind(self.conn)
            self.conn.open()
            ssn = self.conn.session()
            ssn.open()
            self._receiver = ssn.receiver("enmasse-management-replies")
            self._receiver.source.dynamic = True
            self._receiver.open()
            self._sender = ssn.sender("enmasse-management-requests")
            self._sender.snd_settle_mode = proton.Link.SND_SETTLED
            self._sender.open()
            deadline = time.time() + timeout
            while self.error is None and time.time() < deadline:
                if self._receiver.state & proton.Endpoint.REMOTE_ACTIVE:
                    self.reply_to = self._receiver.remote_source.address
                    break
                self._io(min(0.5, max(0.0, deadline - time.time())))
        except Exception as e:  # socket errors, proton raises several unrelated types
            self.error = str(e) or type(e).__name__
        if self.reply_to is None:
            detail = self.error or "no reply address within %ss" % timeout
            password = url_password(url)
            if password:
                detail = detail.replace(password, "********")
            self.close()
            raise RouterManagementError("cannot open AMQP management at %s: %s" % (redact_url(url), detail))
        self._top_up()

    # -- the engine -------------------------------------------------------

    def _io(self, wait):
        """Write what the engine has, wait up to ``wait`` seconds for input,
        read it, then handle what arrived."""
        transport = self.transport
        now = time.time()
        tick = transport.tick(now)  # heartbeats: the router closes idle connections
        if tick:
            wait = min(wait, max(0.0, tick - now))
        self._flush()
        writing = [self.sock] if transport.pending() > 0 else []
        readable, unused_w, unused_x = select.select([self.sock], writing, [], wait)
        while readable:  # read everything there is (a QUERY page is many frames)
            capacity = transport.capacity()
            if capacity < 0:
                self._broken("connection closed")
                break
            if capacity == 0:
                self._receive()  # the engine holds a full buffer: consume it
                if transport.capacity() == 0:
                    break
                continue
            try:
                data = self.sock.recv(capacity)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                self._broken("connection lost: %s" % e)
                break
            if not data:
                transport.close_tail()
                self._broken("connection closed by %s" % redact_url(self.url))
                break
            transport.push(data)
            if len(data) < capacity:
                break
        self._receive()
        self._check()
        self._flush()

    def _flush(self):
        transport = self.transport
        while True:
            pending = transport.pending()
            if pending <= 0:
                return
            try:
                sent = self.sock.send(transport.peek(pending))
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self._broken("connection lost: %s" % e)
                return
            transport.pop(sent)
            if sent < pending:
                return

    def _check(self):
        if self.error is not None:
            return
        cond = self.transport.condition
        if cond is not None:
            self._broken("connection failed: %s %s" % (cond.name, cond.description or ""))
            return
        closed = self._endpoint.REMOTE_CLOSED
        for what, endpoint in (("connection", self.conn), ("reply link", self._receiver),
                               ("request link", self._sender)):
            if endpoint.state & closed:
                cond = endpoint.remote_condition
                self._broken("%s closed by the router%s" % (what, ": %s %s" % (cond.name, cond.description or "")
                                                            if cond else ""))
                return

    def _pump(self):
        sender = self._sender
        now = time.time()
        sent = False
        while self._pending and sender.credit > 0 and len(self._outstanding) < self.window:
            cid, request, encoded = self._pending.popleft()
            delivery = sender.delivery(cid)
            sender.send(encoded)
            sender.advance()
            delivery.settle()
            self._outstanding[cid] = (request, now + self.timeout)
            sent = True
        if sent:
            self._flush()

    def _receive(self):
        receiver = self._receiver
        while True:
            dlv = receiver.current
            if dlv is None or dlv.partial or not dlv.readable:
                break
            encoded = receiver.recv(dlv.pending)
            receiver.advance()
            dlv.settle()
            self._credit -= 1
            self._on_reply(encoded)
        self._top_up()

    def _top_up(self):
        # replies are pre-settled: the router drops pre-settled deliveries
        # queued on a link beyond its capacity (psdrop). Credit never below
        # the window (the most replies that can be on their way) keeps them
        # flowing.
        if self._credit < self.window:
            self._receiver.flow(2 * self.window - self._credit)
            self._credit = 2 * self.window

    def _on_reply(self, encoded):
        # the sections one by one: the body (the whole entity after a CREATE)
        # is converted to Python only when the request wants it
        data, cid, props, body, entry = self._data, None, {}, None, None
        while encoded:
            data.clear()
            size = data.decode(encoded)
            encoded = encoded[size:]
            data.rewind()
            data.next()
            if data.type() != data.DESCRIBED:
                continue
            data.enter()
            data.next()
            code = data.get_object()
            data.next()
            if code == SECTION_PROPERTIES:
                fields = data.get_object()
                cid = fields[5] if len(fields) > 5 else None
                entry = self._outstanding.pop(cid, None)
                if entry is None:
                    return  # a late reply to a request that timed out
            elif code == SECTION_APPLICATION_PROPERTIES:
                props = data.get_object() or {}
            elif code in SECTION_BODY:
                if entry is not None and entry[0].wants_body():
                    body = data.get_object()
                break
        if entry is not None:
            self._done(cid, Reply(entry[0], status_code(props), props.get("statusDescription"), props, body))

    def _done(self, cid, reply):
        self._replies[cid] = reply
        self._arrived.append(cid)

    def _broken(self, reason):
        if self.error is None:
            self.error = reason

    # -- caller side ------------------------------------------------------

    def _submit(self, request):
        self._next += 1
        # a string: qdrouterd answers an integer id as a signed long, which
        # python-qpid-proton does not return as a correlation id
        cid = "m%d" % self._next
        props, body = request.message()
        address = management_address(request.router)
        try:
            encoded = encode_request(address, self.reply_to, cid, props, body)
        except TypeError:  # a value type of its own: proton's encoder
            encoded = self._message(address=address, reply_to=self.reply_to, correlation_id=cid,
                                    properties=props, body=body).encode()
        self._pending.append((cid, request, encoded))
        return cid

    def _expire(self, now):
        while self._outstanding:
            cid, (request, deadline) = next(iter(self._outstanding.items()))
            if deadline > now:
                return
            del self._outstanding[cid]
            self._done(cid, Reply(request, None, "no reply within %ss" % self.timeout))

    def _fail_all(self, cids):
        """The connection is unusable: every request in ``cids`` fails."""
        requests = dict((cid, request) for cid, request, unused in self._pending)
        requests.update((cid, entry[0]) for cid, entry in self._outstanding.items())
        self._pending.clear()
        self._outstanding.clear()
        for cid in cids:
            if cid not in self._replies:
                self._done(cid, Reply(requests.get(cid), None, "AMQP management at %s: %s"
                                      % (redact_url(self.url), self.error)))

    def execute(self, requests, follow=None):
        """Send every request (pipelined) and wait for their replies.
        Returns a list of ``Reply``, one per request, in order; failures are
        replies too (``ok`` False), nothing raises.
        ``follow(reply)`` may return more requests to send (their replies
        are appended after the others, in the order they were made); a
        paged QUERY uses it for the next page."""
        if self.error is None and self.sock is not None and not self._outstanding:
            self._io(0)  # learn about a connection closed since the last batch
        if self.error is not None and not self._outstanding and not self._pending:
            # the connection was lost between two batches (the router restarted,
            # or closed it after idleTimeoutSeconds without traffic): once more
            self.close()
            self._open()
        cids = [self._submit(r) for r in requests]
        missing = set(cids)
        while missing:
            if self.error is not None:
                self._fail_all(missing)
            else:
                self._pump()
            arrived, self._arrived = self._arrived, []
            for cid in arrived:
                if cid not in missing:
                    continue
                missing.discard(cid)
                if follow is not None:
                    for extra in follow(self._replies[cid]) or ():
                        new = self._submit(extra)
                        cids.append(new)
                        missing.add(new)
            if not missing:
                break
            if self.error is None:
                self._pump()
                self._io(0.5)
                self._expire(time.time())
        return [self._replies.pop(cid) for cid in cids]

    def request(self, operation, entity_type, name=None, router=None, attributes=None, check=True):
        """One request; raises ``RouterManagementError`` on failure when
        ``check``. Returns the ``Reply``."""
        reply = self.execute([Request(operation, entity_type, name=name, router=router, attributes=attributes)])[0]
        if check and not reply.ok:
            raise reply.error()
        return reply

    def create(self, entity_type, name, attributes, router=None):
        return self.request("CREATE", entity_type, name, router, attributes).body

    def read(self, entity_type, name, router=None):
        return self.request("READ", entity_type, name, router).body

    def update(self, entity_type, name, attributes, router=None):
        return self.request("UPDATE", entity_type, name, router, attributes).body

    def delete(self, entity_type, name, router=None):
        self.request("DELETE", entity_type, name, router)

    def query_many(self, queries, page=DEFAULT_PAGE):
        """Paged QUERYs, all pipelined: ``queries`` is a list of (router,
        entity_type, attribute_names). Returns a list, one per query, of
        (rows, reply) where reply is the failed ``Reply`` (rows then hold
        what came before) or None."""
        first = [Request("QUERY", t, router=r, attribute_names=list(a), offset=0, count=page, tag=i)
                 for i, (r, t, a) in enumerate(queries)]
        rows = [[] for unused in first]
        failed = [None] * len(first)

        def follow(reply):
            req = reply.request
            if not reply.ok:
                failed[req.tag] = reply
                return None
            got = reply.rows
            rows[req.tag].extend(got)
            if len(got) < req.count:
                return None
            return [Request("QUERY", req.entity_type, router=req.router, attribute_names=req.attribute_names,
                            offset=req.offset + len(got), count=req.count, tag=req.tag)]

        self.execute(first, follow)
        return list(zip(rows, failed))

    def query(self, entity_type, attribute_names, router=None, page=DEFAULT_PAGE):
        """Every entity of ``entity_type`` on ``router`` (list of dicts)."""
        rows, failed = self.query_many([(router, entity_type, attribute_names)], page)[0]
        if failed is not None:
            raise failed.error()
        return rows

    def routers(self, node_type=NODE_TYPE):
        """Ids of the routers of the mesh as the connected router sees them
        (its router.node entities, itself included), sorted."""
        return sorted(r["id"] for r in self.query(node_type, ["id"]) if r.get("id"))

    def router_id(self, router_type=ROUTER_TYPE):
        """Id of the router the session is connected to."""
        rows = self.query(router_type, ["id"])
        return rows[0]["id"] if rows else None

    def call(self, properties, body):
        """A raw request to the connected router: (properties, body) ->
        (reply properties, reply body). Raises ``RouterManagementError`` only
        when no reply came (the caller checks the status)."""
        reply = self.execute([Request(properties.get("operation"), properties=properties, body=body)])[0]
        if reply.status is None and reply.properties is None:
            raise RouterManagementError("AMQP management request %s %s failed: %s"
                                        % (properties.get("operation"), properties.get("entityType"),
                                           reply.description))
        return reply.properties, reply.body

    def close(self):
        """Close the connection (politely when it still works)."""
        sock, self.sock = self.sock, None
        if sock is None:
            return
        try:
            if self.error is None and getattr(self, "conn", None) is not None:
                self.conn.close()
                self.sock = sock
                deadline = time.time() + 2
                while self.error is None and time.time() < deadline:
                    self._io(0.1)
                    if self.conn.state & self._endpoint.REMOTE_CLOSED:
                        break
        except Exception:
            pass
        finally:
            self.sock = None
            self._broken("closed")
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# the metrics sampler's name for it (RouterManagement(url, timeout=...).call)
RouterManagement = ManagementSession
