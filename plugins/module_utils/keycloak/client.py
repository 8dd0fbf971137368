# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Keycloak admin REST client: HTTP and the admin token, nothing else
(standard library only; what to read and change is service.py's).

The admin token comes from the password grant of ``admin-cli`` in the admin
realm (``master``); it is fetched again when a request answers 401 (tokens
live 60 s by default). HTTPS is verified against the system's CAs or
``ca_file``; ``validate_certs: false`` turns verification off. Why not
community.general's ``KeycloakAPI``: docs/identity.md."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket
import ssl

from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlencode
from urllib.request import HTTPSHandler, ProxyHandler, Request, build_opener

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError, ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url

ADMIN_CLIENT_ID = "admin-cli"
DEFAULT_TIMEOUT = 30


class KeycloakError(ClientError):
    """A failed request; ``status`` is the HTTP status (None: no answer)."""

    def __init__(self, message, status=None):
        super(KeycloakError, self).__init__(message)
        self.status = status


def ssl_context(url, ca_file=None, validate_certs=True):
    """The TLS context of an https URL (None for http)."""
    if not url.startswith("https:"):
        return None
    if not validate_certs:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError("keycloak_ca_file: %r cannot be read as PEM CA certificates (%s)" % (ca_file, e))


def path(*parts):
    """An admin API path from its parts, each URL-encoded (names such as
    ``send_orders%2F%2A`` are sent as they are, encoded once more)."""
    return "/".join(quote(str(p), safe="") for p in parts)


class KeycloakClient(object):
    """``request(method, path, body)`` on ``<url>/admin/realms/<path>``."""

    def __init__(self, url, admin_user, admin_password, admin_realm="master", ca_file=None,
                 validate_certs=True, timeout=DEFAULT_TIMEOUT):
        if not url or not url.startswith(("http://", "https://")):
            raise ConfigError("keycloak_url: %r must be an http:// or https:// URL of Keycloak" % (url,))
        if not admin_user or not admin_password:
            raise ConfigError("keycloak_admin_user and keycloak_admin_password are required (the admin of "
                              "Keycloak's %s realm)" % admin_realm)
        self.url = url.rstrip("/")
        self.display_url = redact_url(self.url)
        self.admin_realm = admin_realm
        self._credentials = (admin_user, admin_password)
        self.timeout = timeout or DEFAULT_TIMEOUT
        handlers = [ProxyHandler({})]
        ctx = ssl_context(self.url, ca_file, validate_certs)
        if ctx is not None:
            handlers.append(HTTPSHandler(context=ctx))
        self._opener = build_opener(*handlers)
        self._token = None
        self.round_trips = 0

    # ------------------------------------------------------------ transport
    def _open(self, req):
        self.round_trips += 1
        try:
            resp = self._opener.open(req, timeout=self.timeout)
            return resp.status, resp.headers, resp.read()
        except HTTPError as e:
            return e.code, e.headers, e.read()
        except (URLError, socket.timeout, OSError) as e:
            raise KeycloakError("cannot reach Keycloak at %s: %s" % (self.display_url, getattr(e, "reason", e)))

    def token(self):
        """A fresh admin access token (password grant of admin-cli)."""
        user, password = self._credentials
        data = urlencode({"grant_type": "password", "client_id": ADMIN_CLIENT_ID,
                          "username": user, "password": password}).encode("utf-8")
        status, unused, body = self._open(Request(
            "%s/realms/%s/protocol/openid-connect/token" % (self.url, quote(self.admin_realm, safe="")),
            data=data, headers={"Content-Type": "application/x-www-form-urlencoded"}))
        if status != 200:
            raise KeycloakError("Keycloak at %s refused the admin login of %r in realm %r (HTTP %d): check "
                                "keycloak_admin_user and keycloak_admin_password"
                                % (self.display_url, user, self.admin_realm, status), status=status)
        self._token = json.loads(body.decode("utf-8"))["access_token"]
        return self._token

    def request(self, method, where, body=None, query=None, missing_ok=False):
        """``method`` on ``<url>/admin/realms/<where>``; the decoded JSON
        answer (None for an empty one). ``missing_ok``: a 404 gives None."""
        url = "%s/admin/realms%s%s" % (self.url, "/" + where if where else "",
                                       "?" + urlencode(query) if query else "")
        data = json.dumps(body).encode("utf-8") if body is not None else None
        for attempt in (1, 2):
            if self._token is None:
                self.token()
            req = Request(url, data=data, method=method,
                          headers={"Authorization": "Bearer " + self._token, "Content-Type": "application/json",
                                   "Accept": "application/json"})
            status, headers, raw = self._open(req)
            if status == 401 and attempt == 1:
                self._token = None
                continue
            break
        if status == 404 and missing_ok:
            return None
        if status >= 300:
            message = "Keycloak %s /admin/realms/%s: HTTP %d %s" % (method, where, status, _reason(raw))
            raise KeycloakError(message, status=status)
        if status == 201 and headers.get("Location"):
            return {"id": headers["Location"].rstrip("/").rsplit("/", 1)[-1]}
        return json.loads(raw.decode("utf-8")) if raw and raw.strip() else None

    def paged(self, where, query=None, page=500, first=0):
        """Every item of a paged list (``first``/``max``) from ``first`` on."""
        out = []
        while True:
            chunk = self.request("GET", where, query=dict(query or {}, first=first, max=page)) or []
            out.extend(chunk)
            if len(chunk) < page:
                return out
            first += page


def _reason(raw):
    """Keycloak's error text of an answer (errorMessage, error), short."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeError, AttributeError):
        return (raw or b"")[:200].decode("utf-8", "replace")
    if isinstance(doc, dict):
        return str(doc.get("errorMessage") or doc.get("error_description") or doc.get("error") or doc)[:300]
    return str(doc)[:300]
