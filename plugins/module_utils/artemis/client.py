# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client for ActiveMQ Artemis' Jolokia REST endpoint (standard library only).

One request or a bulk list of requests per HTTP round trip. Artemis checks the
``Origin`` header against ``jolokia-access.xml``; we send ``http://localhost``,
which the broker role allows. Plain HTTP on 127.0.0.1; an ``https://`` URL
(the standard pool's Jolokia managed from another host) is verified against
``ca_file`` (or the system's trust store), host name included: never unverified.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import socket
import ssl

from urllib.request import HTTPSHandler, Request, build_opener, ProxyHandler
from urllib.error import HTTPError, URLError

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url

ARTEMIS_DOMAIN = "org.apache.activemq.artemis"
# the broker's own addresses (management, notifications, internal stores):
# never an address of a space, never sampled, never listed as unowned
INTERNAL_PREFIXES = ("activemq.", "$sys.", "$.artemis.internal", "$ACTIVEMQ_ARTEMIS")
DEFAULT_BATCH = 500


class JolokiaError(ClientError):
    """A failed request; ``status`` is Jolokia's (or HTTP's) status code."""

    def __init__(self, message, status=None, error_type=None, request=None):
        super(JolokiaError, self).__init__(message)
        self.status = status
        self.error_type = error_type
        self.request = request


class JolokiaClient(object):
    def __init__(self, url, user, password, origin="http://localhost", timeout=60,
                 batch_size=DEFAULT_BATCH, ca_file=None):
        self.url = url.rstrip("/") + "/"
        # the URL messages name (never a password in its user info)
        self.display_url = redact_url(self.url)
        self.timeout = timeout
        self.batch_size = batch_size
        token = base64.b64encode(("%s:%s" % (user, password)).encode("utf-8")).decode("ascii")
        self._headers = {
            "Authorization": "Basic " + token,
            "Origin": origin,
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        # never go through a proxy: management is on the broker host
        self.ca_file = ca_file
        handlers = [ProxyHandler({})]
        if self.url.lower().startswith("https:"):
            handlers.append(HTTPSHandler(context=tls_context(ca_file)))
        self._opener = build_opener(*handlers)
        self.round_trips = 0

    # ------------------------------------------------------------ transport
    def _post(self, payload):
        data = json.dumps(payload).encode("utf-8")
        req = Request(self.url, data=data, headers=self._headers)
        self.round_trips += 1
        try:
            resp = self._opener.open(req, timeout=self.timeout)
            body = resp.read()
        except HTTPError as e:
            if e.code in (401, 403):
                raise JolokiaError("management login refused at %s (HTTP %d): check the management "
                                   "user and password and that the Origin is allowed" % (self.display_url, e.code),
                                   status=e.code)
            raise JolokiaError("management request to %s failed: HTTP %d" % (self.display_url, e.code), status=e.code)
        except (URLError, socket.timeout, OSError) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, ssl.SSLError):
                raise JolokiaError("the TLS certificate of Artemis management at %s was refused (%s), verified "
                                   "against %s: check management_ca" % (
                                       self.display_url, reason, self.ca_file or "the system's trust store"))
            raise JolokiaError("cannot reach Artemis management at %s: %s" % (self.display_url, reason))
        try:
            return json.loads(body.decode("utf-8"))
        except ValueError:
            raise JolokiaError("management at %s did not answer with JSON (is this a Jolokia URL?)" % self.display_url)

    @staticmethod
    def _check(resp, request):
        status = resp.get("status")
        if status != 200:
            raise JolokiaError("%s %s: %s" % (request.get("type"), request.get("operation") or request.get("attribute") or "",
                                              resp.get("error") or "status %s" % status),
                               status=status, error_type=resp.get("error_type"), request=request)
        return resp.get("value")

    def request(self, req):
        return self._check(self._post(req), req)

    def bulk(self, requests, raise_errors=True):
        """Send many requests, ``batch_size`` per round trip.

        Returns a list of (value, error) pairs in request order; with
        ``raise_errors`` the first error raises ``JolokiaError`` instead.
        """
        out = []
        requests = list(requests)
        for start in range(0, len(requests), self.batch_size):
            chunk = requests[start:start + self.batch_size]
            resps = self._post(chunk)
            if isinstance(resps, dict):  # whole batch refused
                resps = [resps] * len(chunk)
            for req, resp in zip(chunk, resps):
                if resp.get("status") == 200:
                    out.append((resp.get("value"), None))
                else:
                    err = JolokiaError("%s %s: %s" % (req.get("type"), req.get("operation") or req.get("attribute") or "",
                                                      resp.get("error") or "status %s" % resp.get("status")),
                                       status=resp.get("status"), error_type=resp.get("error_type"), request=req)
                    if raise_errors:
                        raise err
                    out.append((None, err))
        return out

    # ------------------------------------------------------------- helpers
    @staticmethod
    def read_request(mbean, attribute=None):
        req = {"type": "read", "mbean": mbean}
        if attribute is not None:
            req["attribute"] = attribute
        return req

    @staticmethod
    def exec_request(mbean, operation, *arguments):
        return {"type": "exec", "mbean": mbean, "operation": operation, "arguments": list(arguments)}

    def read(self, mbean, attribute=None):
        return self.request(self.read_request(mbean, attribute))

    def execute(self, mbean, operation, *arguments):
        return self.request(self.exec_request(mbean, operation, *arguments))

    def search(self, pattern):
        return self.request({"type": "search", "mbean": pattern}) or []


def tls_context(ca_file=None):
    """The TLS context of an ``https://`` management URL: the server's
    certificate verified against ``ca_file`` (else the system's trust store)
    and its host name checked. A ClientError names a CA file that cannot be read."""
    try:
        ctx = ssl.create_default_context(cafile=ca_file or None)
    except (IOError, OSError, ssl.SSLError) as e:
        raise JolokiaError("management_ca: %s cannot be read as a PEM CA certificate: %s" % (ca_file, e))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def quote_mbean_value(value):
    """Artemis quotes ObjectName values; escape what ObjectName.quote escapes."""
    out = value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*").replace("?", "\\?").replace("\n", "\\n")
    return '"%s"' % out


def broker_mbean(broker_name):
    return '%s:broker=%s' % (ARTEMIS_DOMAIN, quote_mbean_value(broker_name))


def address_mbean(broker_name, address):
    return '%s,component=addresses,address=%s' % (broker_mbean(broker_name), quote_mbean_value(address))


def queue_mbean(broker_name, address, queue, routing_type):
    return '%s,subcomponent=queues,routing-type=%s,queue=%s' % (
        address_mbean(broker_name, address), quote_mbean_value(routing_type.lower()), quote_mbean_value(queue))


def all_queues_pattern(broker_name):
    return '%s:broker=%s,component=addresses,address=*,subcomponent=queues,routing-type=*,queue=*' % (
        ARTEMIS_DOMAIN, quote_mbean_value(broker_name))


def all_addresses_pattern(broker_name):
    return '%s:broker=%s,component=addresses,address=*' % (ARTEMIS_DOMAIN, quote_mbean_value(broker_name))


def parse_mbean_keys(name):
    """Key properties of an ObjectName string -> dict (values unquoted)."""
    props = name.partition(":")[2]
    out = {}
    key, buf, in_quote, esc, reading_key = "", [], False, False, True
    for ch in props + ",":
        if reading_key:
            if ch == "=":
                reading_key = False
                buf = []
            else:
                key += ch
            continue
        if in_quote:
            if esc:
                buf.append({"n": "\n"}.get(ch, ch))
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_quote = False
            else:
                buf.append(ch)
            continue
        if ch == '"':
            in_quote = True
        elif ch == ",":
            out[key] = "".join(buf)
            key, buf, reading_key = "", [], True
        else:
            buf.append(ch)
    return out


def client_for(conn, default_timeout=60):
    """The client for a resolved connection (``connection.resolve_connection``)."""
    kwargs = {"origin": conn["management_origin"]} if conn.get("management_origin") else {}
    return JolokiaClient(conn["management_url"], conn["management_user"], conn["management_password"],
                         timeout=conn.get("timeout") or default_timeout, ca_file=conn.get("management_ca"), **kwargs)
