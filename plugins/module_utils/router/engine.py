# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proton engine driven directly over a socket (no reactor), the
transport under ``client.ManagementSession``.

One AMQP connection (SASL ANONYMOUS or PLAIN, TLS for amqps://), one
anonymous sender whose deliveries are pre-settled, one dynamic receiver for
every reply; requests are sent in order, at most ``window`` outstanding, and
a reply is matched to its request by correlation id. Needs
python-qpid-proton, imported only when a connection is opened."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import select
import socket
import time
import uuid

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import mgmt_tls as _mgmt_tls
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url, url_password
from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import (
    Reply, RouterManagementError, status_code)

# below the router's link capacity (linkCapacity, 250 by default): a router
# drops pre-settled deliveries queued beyond it, requests or replies
DEFAULT_WINDOW = 200
# AMQP 1.0 message section descriptors
SECTION_PROPERTIES = 0x73
SECTION_APPLICATION_PROPERTIES = 0x74
SECTION_BODY = (0x75, 0x76, 0x77)


class AmqpConnection(object):
    """One AMQP connection to a router's management listener, its two links
    and the requests in flight on them.

    ``url``: amqp://[user:password@]host:port; amqps:// with ``ssl_domain``.
    ``timeout``: seconds to connect, and per request from when it was sent.
    ``window``: most requests outstanding at once.

    Requests wait in ``_pending`` (correlation id, request, encoded
    message) until there is credit and room in the window; then they are in
    ``_outstanding`` until their reply (or their deadline) comes, and their
    ``Reply`` is in ``_replies``. Not thread-safe."""

    def __init__(self, url, timeout=30, window=DEFAULT_WINDOW, ssl_domain=None, sasl_mechanisms=None,
                 container_id=None, tls=None):
        try:
            import proton
        except ImportError as e:
            raise ClientError("AMQP management needs python-qpid-proton (python3-qpid-proton): %s" % e)
        self._proton = proton
        self.url = url
        self.timeout = timeout
        self.window = max(1, int(window))
        # tls: the client certificate of a management listener that requires one (auth.mgmt_tls)
        self.ssl_domain = _mgmt_tls.ssl_domain(proton, tls) if tls else ssl_domain
        self.sasl_mechanisms = _mgmt_tls.MECHANISM if tls else sasl_mechanisms
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
