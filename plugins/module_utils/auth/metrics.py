# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The auth service's Prometheus metrics (docs/auth-service.md "Metrics").

:class:`Metrics` counts; :class:`MetricsServer` serves them on ``GET
/metrics``, HTTPS only (the service's own certificate) and HTTP basic auth
against a password file holding only a salted SHA-512 (written by the role
from the controller's generated password)::

    {"username": "prometheus", "salt": "<text>", "sha512": "<hex of sha512(salt + ':' + password)>"}

Series (never a user name or a password in a label):

* ``enmasse_auth_service_authentications_total{realm, outcome}``: outcome is
  one of backends.OUTCOMES, ``refused`` (mechanism, malformed PLAIN, proxy
  user, no realm) or ``backend_error`` (sys-temp). ``realm`` is the address
  space only when the backend knew it (ok, wrong_password, unknown_user,
  bad_credentials); every other outcome has realm ``_other``, so realms an
  attacker makes up add no series (``_other`` is no valid realm name).
* ``enmasse_auth_service_connections`` (open router connections, gauge),
  ``enmasse_auth_service_connections_total`` (accepted, counter),
  ``enmasse_auth_service_start_time_seconds``.

Pure standard library (asyncio); the role copies this file with server.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import logging
import time

from . import backends

LOG = logging.getLogger("enmasse-auth-service")

OTHER_REALM = "_other"
REFUSED = "refused"
BACKEND_ERROR = "backend_error"
# outcomes whose realm the backend confirmed exists: labelled with it
REALM_KNOWN = (backends.OK, backends.WRONG_PASSWORD, backends.UNKNOWN_USER, backends.BAD_CREDENTIALS)
FAILED = tuple(o for o in backends.OUTCOMES if o != backends.OK) + (REFUSED,)
PREFIX = "enmasse_auth_service_"
MAX_REQUEST = 8192
REQUEST_TIMEOUT = 10


def _label(value):
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics(object):
    """Counters of one service process (updated on the event loop only)."""

    def __init__(self, clock=time.time):
        self.started = clock()
        self.authentications = {}
        self.connections_total = 0
        self.open_connections = 0
        # more series: objects whose lines() gives them (mesh.MeshProbe)
        self.sources = []
        for outcome in FAILED + (BACKEND_ERROR,):
            self.authentications[(OTHER_REALM, outcome)] = 0

    def authentication(self, realm, outcome):
        if outcome not in REALM_KNOWN or not isinstance(realm, str) or not backends.REALM_RE.match(realm):
            realm = OTHER_REALM
        key = (realm, outcome)
        self.authentications[key] = self.authentications.get(key, 0) + 1

    def render(self):
        """The Prometheus text exposition format 0.0.4."""
        lines = ["# HELP %sauthentications_total SASL authentications by realm (address space; "
                 "_other: not a known realm) and outcome" % PREFIX,
                 "# TYPE %sauthentications_total counter" % PREFIX]
        for (realm, outcome), value in sorted(self.authentications.items()):
            lines.append('%sauthentications_total{realm="%s",outcome="%s"} %d'
                         % (PREFIX, _label(realm), _label(outcome), value))
        for name, kind, text, value in (
                ("connections", "gauge", "Router connections open now", self.open_connections),
                ("connections_total", "counter", "Router connections accepted", self.connections_total),
                ("start_time_seconds", "gauge", "Start time of the process (Unix seconds)", self.started)):
            lines += ["# HELP %s%s %s" % (PREFIX, name, text), "# TYPE %s%s %s" % (PREFIX, name, kind),
                      "%s%s %s" % (PREFIX, name, repr(float(value)) if kind == "gauge" and name.startswith("start")
                                   else "%d" % value)]
        for source in self.sources:
            lines += source.lines()
        return "\n".join(lines) + "\n"


def load_password_file(path):
    """``{username, salt, sha512}`` of the password file; ValueError naming the problem."""
    with open(path, "rb") as handle:
        doc = json.loads(handle.read().decode("utf-8"))
    if not isinstance(doc, dict) or sorted(doc) != ["salt", "sha512", "username"] \
            or not all(isinstance(v, str) and v for v in doc.values()):
        raise ValueError("%s: must be a JSON object with the non-empty strings username, salt, sha512" % path)
    return doc


def password_file_document(username, password, salt):
    """What the role writes (the test helpers too): the salted SHA-512 of ``password``."""
    return {"username": username, "salt": salt,
            "sha512": hashlib.sha512(("%s:%s" % (salt, password)).encode("utf-8")).hexdigest()}


def basic(username, password):
    """The ``Authorization`` header value of HTTP basic auth (the scraper's side)."""
    return "Basic " + base64.b64encode(("%s:%s" % (username, password)).encode("utf-8")).decode("ascii")


def authorized(header, credentials):
    """The ``Authorization`` header value ``header`` carries ``credentials``' user and password."""
    if not header or not header.lower().startswith("basic "):
        return False
    try:
        user, sep, password = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, ValueError):
        return False
    digest = hashlib.sha512(("%s:%s" % (credentials["salt"], password)).encode("utf-8")).hexdigest()
    # both compared, always: no early exit on the user name
    same_user = hmac.compare_digest(user.encode("utf-8"), credentials["username"].encode("utf-8"))
    same_password = hmac.compare_digest(digest.encode("ascii"), credentials["sha512"].lower().encode("ascii"))
    return bool(sep) and same_user and same_password


class MetricsServer(object):
    """``GET /metrics`` over TLS with basic auth; everything else is refused.
    ``credentials``: load_password_file's dict (replaced on reload)."""

    def __init__(self, metrics, credentials):
        self.metrics = metrics
        self.credentials = credentials
        self.server = None

    async def start(self, host, port, ssl_context):
        self.server = await asyncio.start_server(self.handle, host, port, ssl=ssl_context)
        return self.server

    def ports(self):
        return [s.getsockname()[1] for s in self.server.sockets]

    async def handle(self, reader, writer):
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT)
            status, body, extra = self.answer(head)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
                OSError):
            writer.close()
            return
        data = body.encode("utf-8")
        writer.write(("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n"
                      % (status, "text/plain; version=0.0.4; charset=utf-8", len(data), extra)).encode("ascii") + data)
        try:
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    def answer(self, head):
        """``(status line, body, extra headers)`` for one request head."""
        if len(head) > MAX_REQUEST:
            return "431 Request Header Fields Too Large", "too large\n", ""
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        headers = dict((k.strip().lower(), v.strip()) for k, sep, v in (line.partition(":") for line in lines[1:]) if sep)
        if len(parts) != 3 or parts[0] != "GET":
            return "405 Method Not Allowed", "GET /metrics only\n", "Allow: GET\r\n"
        if not authorized(headers.get("authorization"), self.credentials):
            LOG.info("metrics: request without the right credentials refused")
            return "401 Unauthorized", "authentication required\n", \
                'WWW-Authenticate: Basic realm="enmasse-auth-service metrics", charset="UTF-8"\r\n'
        if parts[1].split("?")[0] != "/metrics":
            return "404 Not Found", "GET /metrics only\n", ""
        return "200 OK", self.metrics.render(), ""

    async def stop(self):
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
