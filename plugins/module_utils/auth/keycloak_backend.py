# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The auth service's Keycloak backend: a realm per address space.

``KeycloakBackend(url, ...).check(realm, username, password)`` does the
OAuth2 password grant (the identity contract, docs/auth-service.md) on
``<url>/realms/<realm>/protocol/openid-connect/token`` with the public client
``enmasse-messaging``:

* 200: the access token's ``preferred_username`` and ``groups`` claim (EnMasse's
  group encoding) give the :class:`backends.Identity`; its address-authz
  follows from the groups by ``backends.groups_to_address_authz`` (the one
  rule of the users files too);
* 400/401 ``invalid_grant`` (wrong password, unknown or disabled user) and
  404 (no such realm): None, the client is refused (``auth``);
* anything else (connection refused, timeout, TLS failure, 5xx, a realm
  without the client): :class:`backends.BackendError` (``sys-temp``).

The token comes straight from Keycloak's token endpoint over the connection
this backend opened (TLS verified against ``ca_file`` when the URL is https),
so its signature is not checked again; it is used for this one decision and
then dropped (never logged, never stored).

Cache: a successful check is remembered for ``cache_ttl`` seconds per (realm,
user) as a salted PBKDF2 hash of the password (a per-process random key and
a per-entry salt, memory only, never the password). A check whose password
matches a live entry is answered without Keycloak, also while Keycloak is
down; any other password goes to Keycloak (a wrong password is never
answered from the cache). A disabled user or a changed password is therefore
refused at the latest ``cache_ttl`` seconds after the change; ``cache_ttl``
0 turns the cache off. At most ``cache_size`` entries (expired ones go first,
then the oldest).

Pure standard library, thread-safe (checks run in the service's worker
threads): the role copies this file onto the host beside backends.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import hmac
import http.client
import json
import os
import socket
import ssl
import threading
import time

from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlencode, urlsplit
from urllib.request import HTTPSHandler, Request, build_opener

from . import backends

CLIENT_ID = "enmasse-messaging"
DEFAULT_TIMEOUT = 5.0
DEFAULT_CACHE_TTL = 30.0
DEFAULT_CACHE_SIZE = 10000
CACHE_HASH_ITERATIONS = 1000
REFUSALS = ("invalid_grant",)
# Keycloak's own administration realm is never an address space
NOT_SPACES = ("master",)


def token_claims(token):
    """The payload (dict) of a JWT, ValueError when it is not one."""
    if not isinstance(token, str) or token.count(".") != 2:
        raise ValueError("the access token is not a JWT")
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8"))
    except (ValueError, TypeError):
        raise ValueError("the access token's payload is not base64url JSON")
    if not isinstance(claims, dict):
        raise ValueError("the access token's payload is not a JSON object")
    return claims


def identity_from_claims(claims, username):
    """The Identity of a token's claims: ``preferred_username`` (else the
    name the client sent) and the ``groups`` claim (strings only; no claim =
    no group, nothing granted)."""
    name = claims.get("preferred_username")
    groups = claims.get("groups")
    groups = [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []
    return backends.Identity(name if isinstance(name, str) and name else username, groups)


def check_url(url, ca_file=""):
    """ValueError naming the field when the Keycloak URL or CA file is unusable."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if not parts or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("keycloak_url: %r must be an http(s)://host[:port][/path] URL" % (url,))
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError("keycloak_url: %r must have no credentials, query or fragment" % (url,))
    if ca_file and parts.scheme != "https":
        raise ValueError("keycloak_ca: %r is set but keycloak_url %r is not https" % (ca_file, url))


class _Entry(object):
    __slots__ = ("salt", "digest", "identity", "expires")

    def __init__(self, salt, digest, identity, expires):
        self.salt = salt
        self.digest = digest
        self.identity = identity
        self.expires = expires


class CheckCache(object):
    """Successful checks for a bounded time (see the module doc); thread-safe."""

    def __init__(self, ttl=DEFAULT_CACHE_TTL, size=DEFAULT_CACHE_SIZE, clock=time.monotonic,
                 iterations=CACHE_HASH_ITERATIONS):
        self.ttl = float(ttl)
        self.size = int(size)
        self.clock = clock
        self.iterations = iterations
        self._key = os.urandom(32)   # per process: a dump of the cache is useless elsewhere
        self._lock = threading.Lock()
        self._entries = {}

    def _digest(self, salt, password):
        return hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), self._key + salt, self.iterations)

    def get(self, realm, username, password):
        """The cached Identity when ``password`` matches a live entry, else None."""
        if self.ttl <= 0:
            return None
        with self._lock:
            entry = self._entries.get((realm, username))
        if entry is None or self.clock() >= entry.expires:
            return None
        if not hmac.compare_digest(self._digest(entry.salt, password), entry.digest):
            return None
        return entry.identity

    def put(self, realm, username, password, identity):
        if self.ttl <= 0 or self.size <= 0:
            return
        salt = os.urandom(16)
        entry = _Entry(salt, self._digest(salt, password), identity, self.clock() + self.ttl)
        with self._lock:
            self._entries.pop((realm, username), None)
            if len(self._entries) >= self.size:
                self._evict()
            self._entries[(realm, username)] = entry

    def _evict(self):
        now = self.clock()
        for key in [k for k, e in self._entries.items() if e.expires <= now]:
            del self._entries[key]
        while len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]   # dicts keep insertion order: the oldest

    def forget(self):
        with self._lock:
            self._entries.clear()

    def __len__(self):
        return len(self._entries)


class KeycloakBackend(object):
    """``check(realm, username, password)`` against Keycloak (module doc)."""

    def __init__(self, url, client_id=CLIENT_ID, ca_file="", timeout=DEFAULT_TIMEOUT,
                 cache_ttl=DEFAULT_CACHE_TTL, cache_size=DEFAULT_CACHE_SIZE, log=None, clock=time.monotonic):
        check_url(url, ca_file)
        self.url = url.rstrip("/")
        self.client_id = client_id
        self.ca_file = ca_file
        self.timeout = float(timeout)
        self.log = log
        self.cache = CheckCache(cache_ttl, cache_size, clock)
        handlers = []
        if urlsplit(self.url).scheme == "https":
            context = ssl.create_default_context(cafile=ca_file or None)   # verifies the chain and the host name
            handlers.append(HTTPSHandler(context=context))
        self._opener = build_opener(*handlers)

    def token_url(self, realm):
        return "%s/realms/%s/protocol/openid-connect/token" % (self.url, quote(realm, safe=""))

    def check(self, realm, username, password):
        return self.authenticate(realm, username, password)[0]

    def authenticate(self, realm, username, password):
        """``(Identity | None, outcome)``: Keycloak does not tell a wrong password from an
        unknown user (``bad_credentials``); a realm it does not have is ``unknown_realm``."""
        if not isinstance(realm, str) or not backends.REALM_RE.match(realm) or realm in NOT_SPACES:
            return None, backends.UNKNOWN_REALM
        if not isinstance(username, str) or not username or not isinstance(password, str) or not password:
            return None, backends.BAD_CREDENTIALS
        cached = self.cache.get(realm, username, password)
        if cached is not None:
            return cached, backends.OK
        identity, outcome = self._grant(realm, username, password)
        if identity is not None:
            self.cache.put(realm, username, password, identity)
        return identity, outcome

    def _grant(self, realm, username, password):
        """One password grant: ``(Identity | None, outcome)`` or BackendError."""
        form = urlencode({"grant_type": "password", "client_id": self.client_id,
                          "username": username, "password": password}).encode("ascii")
        request = Request(self.token_url(realm), data=form, method="POST",
                          headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                body = response.read()
        except HTTPError as exc:
            return self._refusal(realm, username, exc)
        except (URLError, socket.timeout, ssl.SSLError, OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            raise backends.BackendError("Keycloak %s unreachable: %s" % (self.url, reason))
        try:
            claims = token_claims(json.loads(body.decode("utf-8")).get("access_token"))
        except (ValueError, AttributeError) as exc:
            raise backends.BackendError("Keycloak %s realm %r: unusable token response (%s)" % (self.url, realm, exc))
        return identity_from_claims(claims, username), backends.OK

    def _refusal(self, realm, username, exc):
        try:
            raw = exc.read()
        except (OSError, ValueError):
            raw = b""
        finally:
            exc.close()
        try:
            doc = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            doc = {}
        error = doc.get("error") if isinstance(doc, dict) else None
        description = doc.get("error_description") if isinstance(doc, dict) else None
        if exc.code in (400, 401) and error in REFUSALS:
            if self.log:
                self.log("realm %r user %r: Keycloak refused: %s" % (realm, username, description or error))
            return None, backends.BAD_CREDENTIALS
        if exc.code == 404:
            if self.log:
                self.log("realm %r: no such realm in Keycloak" % realm)
            return None, backends.UNKNOWN_REALM
        raise backends.BackendError("Keycloak %s realm %r: HTTP %s %s%s" % (
            self.url, realm, exc.code, error or "", (" (%s)" % description) if description else ""))

    def forget(self):
        """Drop the cache (SIGHUP)."""
        self.cache.forget()
