# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMQP management client for routers (qdrouterd, skupper-router).

Requests go to ``$management`` with application properties ``operation``,
``type``/``entityType``...; QUERY is paged (``offset``, ``count``). Needs
python-qpid-proton, imported only when a connection is opened."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url, url_password

ROUTER_PREFIXES = {"qdrouterd": "org.apache.qpid.dispatch", "skrouterd": "io.skupper.router"}
DEFAULT_PAGE = 500


class RouterManagementError(ClientError):
    """A failed management request; ``status`` is the reply's statusCode."""

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
    try:
        code = int(properties.get("statusCode"))
    except (TypeError, ValueError):
        code = None
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


class RouterManagement(object):
    """AMQP management client (python-qpid-proton's BlockingConnection):
    requests to ``$management`` with a dynamic reply-to."""

    def __init__(self, url, timeout=30, ssl_domain=None, sasl_mechanisms=None, management_address="$management"):
        try:
            from proton import Message
            from proton.utils import BlockingConnection
        except ImportError as e:
            raise ClientError("AMQP management needs python-qpid-proton (python3-qpid-proton): %s" % e)
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
            password = url_password(url)
            if password:
                detail = detail.replace(password, "********")
            raise RouterManagementError("cannot open AMQP management at %s: %s"
                                        % (redact_url(url), detail))
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
