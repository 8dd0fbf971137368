# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMQP management client for routers (qdrouterd, skupper-router).

``ManagementSession`` is one AMQP connection that pipelines requests: an
anonymous sender (each request names its router in its ``to``), one dynamic
receiver for every reply, correlation ids, at most ``window`` requests
outstanding, a timeout per request. ``execute`` runs a batch of
``protocol.Request`` and returns one ``protocol.Reply`` each, in order; a
failed request never stops the others. The request/reply layer is
``protocol``, the connection ``engine``. Needs python-qpid-proton, imported
only when a session is opened."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url
from ansible_collections.enmasse.messaging.plugins.module_utils.router.engine import AmqpConnection
from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import (
    DEFAULT_PAGE, NODE_TYPE, ROUTER_TYPE, Reply, Request, RouterManagementError, encode_request, management_address)


class ManagementSession(AmqpConnection):
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


# the metrics sampler's name for it (RouterManagement(url, timeout=...).call)
RouterManagement = ManagementSession
