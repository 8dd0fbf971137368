# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who a client is: the backends of the auth service.

The interface (every backend, today and later)::

    backend.check(realm, username, password) -> Identity | None

* ``realm``: the address space (the ``realm`` of the router's
  authServicePlugin, which the router sends as the sasl-init hostname);
* ``username``, ``password``: what the client sent with SASL PLAIN (str);
* the result: an :class:`Identity` when the password is right, None when the
  realm, the user or the password is unknown or wrong (the three are not told
  apart to the client). A backend raises :class:`BackendError` when it cannot
  answer at all (a broken file, an unreachable server): the service then
  answers ``sys-temp`` instead of ``auth``.
* ``check`` may block (PBKDF2, network): the server calls it in a worker
  thread, so it must be thread-safe.
* optional ``authenticate(realm, username, password) -> (Identity | None,
  outcome)``: the same check, also saying why (the service's metrics, never
  the client): one of :data:`OUTCOMES`. :func:`authenticate` falls back to
  ``check`` (outcome ``ok`` or ``bad_credentials``).

:class:`Identity` carries ``username`` (becomes the router's connection
``user``), ``groups`` (EnMasse's encoding: ``send_<url-encoded pattern>``,
``recv_<pattern>``, ``manage``, ``monitor``) and ``address_authz`` (pattern
-> sorted list of ``send``/``recv``), which :func:`groups_to_address_authz`
computes from the groups: one rule for the users file and for the Keycloak
backend (keycloak_backend.py: realm per address space, the token's groups).

Backends here: :class:`UsersFileBackend`, one JSON file per realm
(``<dir>/<realm>.json``) with PBKDF2-SHA256 password hashes, re-read when it
changes. Pure standard library, no Ansible import: the role copies this file
onto the host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import hmac
import json
import os
import re
import threading

from urllib.parse import quote, unquote

HASH_SCHEME = "pbkdf2-sha256"
DEFAULT_ITERATIONS = 100000
SALT_BYTES = 16
KEY_BYTES = 32
FILE_FORMAT = 1

# a realm must be usable as a file name: no separator, no leading dot
REALM_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")

# why a check ended (metrics label ``outcome``): bad_credentials = a wrong
# password or an unknown user where the backend does not tell them apart (Keycloak)
OK = "ok"
WRONG_PASSWORD = "wrong_password"
UNKNOWN_USER = "unknown_user"
UNKNOWN_REALM = "unknown_realm"
BAD_CREDENTIALS = "bad_credentials"
OUTCOMES = (OK, WRONG_PASSWORD, UNKNOWN_USER, UNKNOWN_REALM, BAD_CREDENTIALS)


def authenticate(backend, realm, username, password):
    """``(Identity | None, outcome)`` of ``backend`` (its ``authenticate``
    when it has one, else ``check``)."""
    explain = getattr(backend, "authenticate", None)
    if explain is not None:
        return explain(realm, username, password)
    identity = backend.check(realm, username, password)
    return identity, (OK if identity is not None else BAD_CREDENTIALS)


# the MQTT gateways' service realms, <space>.mqtt (standard/mqtt_service.py names them;
# no space name has a dot): always users files, whatever the spaces' backend
SERVICE_REALM_SUFFIX = ".mqtt"


class ServiceRealms(object):
    """The realms ``<space>.mqtt`` from the users files (``files``), every
    other realm from ``main`` (Keycloak): the gateways' service user is the
    collection's, not a user of the space."""

    def __init__(self, main, files):
        self.main, self.files = main, files

    def _for(self, realm):
        return self.files if isinstance(realm, str) and realm.endswith(SERVICE_REALM_SUFFIX) else self.main

    def check(self, realm, username, password):
        return self._for(realm).check(realm, username, password)

    def authenticate(self, realm, username, password):
        return authenticate(self._for(realm), realm, username, password)

    def forget(self):
        for b in (self.main, self.files):
            if hasattr(b, "forget"):
                b.forget()


# EnMasse's group prefixes (its Keycloak plugin's AmqpServer): the part before
# the first '_' names the permission, the rest is the url-encoded address
# pattern. Only send and recv mean something to the router's address-authz.
GROUP_PERMISSIONS = {"send": "send", "recv": "recv", "consume": "recv"}
# operations of an EnMasse MessagingUser authorization rule -> group prefix;
# manage and view have no address pattern (groups manage and monitor)
OPERATION_GROUPS = {"send": "send", "recv": "recv"}
WHOLE_GROUPS = {"manage": "manage", "view": "monitor"}
OPERATIONS = ("send", "recv", "view", "manage")


class BackendError(Exception):
    """The backend cannot answer (broken data, unreachable server)."""


class Identity(object):
    """An authenticated user: ``username``, ``groups`` (list of str),
    ``address_authz`` (dict pattern -> sorted list of 'send'/'recv')."""

    def __init__(self, username, groups=(), address_authz=None):
        self.username = username
        self.groups = sorted(set(groups))
        self.address_authz = groups_to_address_authz(self.groups) if address_authz is None else address_authz

    def __eq__(self, other):
        return (isinstance(other, Identity)
                and (self.username, self.groups, self.address_authz)
                == (other.username, other.groups, other.address_authz))

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "Identity(%r, groups=%r, address_authz=%r)" % (self.username, self.groups, self.address_authz)


# ------------------------------------------------------------ groups and authz

def groups_to_address_authz(groups):
    """EnMasse's group encoding -> the router's address-authz map.

    ``send_<p>`` and ``recv_<p>`` (and ``consume_<p>``, the Artemis plugin's
    spelling of recv) grant that permission on the url-decoded pattern
    ``<p>``; every other group (``manage``, ``monitor``, ``create_...``)
    grants no address. Patterns are the router policy's: an exact address, a
    prefix ending in ``*``, or ``*`` for every address."""
    out = {}
    for group in groups:
        if not isinstance(group, str) or "_" not in group:
            continue
        prefix, encoded = group.split("_", 1)
        permission = GROUP_PERMISSIONS.get(prefix)
        pattern = unquote(encoded)
        if permission and pattern:
            out.setdefault(pattern, set()).add(permission)
    return dict((pattern, sorted(perms)) for pattern, perms in out.items())


def authorization_to_groups(authorization):
    """An EnMasse MessagingUser ``authorization`` list (``[{addresses:
    [patterns], operations: [send, recv, view, manage]}]``) -> groups, in
    EnMasse's encoding. Raises ValueError naming the bad field."""
    if not isinstance(authorization, list):
        raise ValueError("authorization: %r must be a list of {addresses, operations}" % (authorization,))
    groups = set()
    for i, rule in enumerate(authorization):
        where = "authorization[%d]" % i
        if not isinstance(rule, dict):
            raise ValueError("%s: %r must be a mapping with addresses and operations" % (where, rule))
        unknown = sorted(set(rule) - set(("addresses", "operations")))
        if unknown:
            raise ValueError("%s: unknown keys %s (allowed: addresses, operations)" % (where, ", ".join(unknown)))
        operations = rule.get("operations")
        if not isinstance(operations, list) or not operations:
            raise ValueError("%s.operations: %r must be a non-empty list of %s"
                             % (where, operations, ", ".join(OPERATIONS)))
        addresses = rule.get("addresses", [])
        if not isinstance(addresses, list) or not all(isinstance(a, str) and a for a in addresses):
            raise ValueError("%s.addresses: %r must be a list of non-empty address patterns" % (where, addresses))
        for op in operations:
            if op not in OPERATIONS:
                raise ValueError("%s.operations: %r is not one of %s" % (where, op, ", ".join(OPERATIONS)))
            if op in WHOLE_GROUPS:
                groups.add(WHOLE_GROUPS[op])
                continue
            if not addresses:
                raise ValueError("%s.addresses: operation %r needs at least one address pattern" % (where, op))
            for pattern in addresses:
                groups.add("%s_%s" % (OPERATION_GROUPS[op], quote(pattern, safe="")))
    return sorted(groups)


ALL_ADDRESSES_GROUPS = ["recv_%2A", "send_%2A"]


# ------------------------------------------------------------ password hashes

def hash_password(password, iterations=DEFAULT_ITERATIONS, salt=None):
    """``pbkdf2-sha256$<iterations>$<salt b64>$<key b64>`` of ``password``
    (a random 16-byte salt unless ``salt`` is given)."""
    if not isinstance(password, str) or not password:
        raise ValueError("the password must be a non-empty string")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError("iterations: %r must be an integer >= 1" % (iterations,))
    if salt is None:
        salt = os.urandom(SALT_BYTES)
    key = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations, KEY_BYTES)
    return "%s$%d$%s$%s" % (HASH_SCHEME, iterations, _b64(salt), _b64(key))


def _b64(raw):
    return base64.b64encode(raw).decode("ascii")


def parse_hash(stored):
    """``(iterations, salt, key)`` of a stored hash; ValueError when it is not one."""
    parts = stored.split("$") if isinstance(stored, str) else []
    if len(parts) != 4 or parts[0] != HASH_SCHEME or not parts[1].isdigit() or int(parts[1]) < 1:
        raise ValueError("not a %s$<iterations>$<salt>$<key> hash" % HASH_SCHEME)
    try:
        salt = base64.b64decode(parts[2].encode("ascii"), validate=True)
        key = base64.b64decode(parts[3].encode("ascii"), validate=True)
    except (ValueError, TypeError):
        raise ValueError("the salt or key of the hash is not base64")
    if not salt or not key:
        raise ValueError("empty salt or key")
    return int(parts[1]), salt, key


def verify_password(password, stored):
    """``password`` matches the stored hash (constant-time comparison)."""
    iterations, salt, key = parse_hash(stored)
    if not isinstance(password, str):
        return False
    candidate = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations, len(key))
    return hmac.compare_digest(candidate, key)


_DUMMY = []


def _dummy_hash():
    """A hash no password matches (made once): unknown users and realms cost
    the same PBKDF2 as known ones, so timing does not tell them apart."""
    if not _DUMMY:
        _DUMMY.append(hash_password("enmasse-auth-service unknown user", salt=os.urandom(SALT_BYTES)))
    return _DUMMY[0]


# ------------------------------------------------------------ the users file

def users_file_errors(doc, realm=None):
    """Every problem of a users file document, as messages (empty = valid).

    Format (``FILE_FORMAT`` 1)::

        {"format": 1, "realm": "<realm>",
         "users": {"<username>": {"password": "pbkdf2-sha256$...", "groups": ["send_%2A", ...]}}}
    """
    if not isinstance(doc, dict):
        return ["the document must be a JSON object"]
    errors = []
    if doc.get("format", FILE_FORMAT) != FILE_FORMAT:
        errors.append("format: %r is not %d" % (doc.get("format"), FILE_FORMAT))
    if realm is not None and doc.get("realm", realm) != realm:
        errors.append("realm: %r is not the realm of the file name (%r)" % (doc.get("realm"), realm))
    users = doc.get("users")
    if not isinstance(users, dict):
        errors.append("users: %r must be an object username -> {password, groups}" % (users,))
        return errors
    for name, entry in sorted(users.items()):
        where = "users[%r]" % name
        if not isinstance(entry, dict):
            errors.append("%s: must be an object {password, groups}" % where)
            continue
        try:
            parse_hash(entry.get("password"))
        except ValueError as exc:
            errors.append("%s.password: %s" % (where, exc))
        groups = entry.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            errors.append("%s.groups: must be a list of strings" % where)
    return errors


def users_file_document(realm, users):
    """A users file document: ``users`` is ``{username: {"password": hash,
    "groups": [...]}}`` (already hashed). Checked with users_file_errors."""
    doc = {"format": FILE_FORMAT, "realm": realm,
           "users": dict((name, {"password": entry["password"], "groups": sorted(set(entry.get("groups", [])))})
                         for name, entry in users.items())}
    errors = users_file_errors(doc, realm)
    if errors:
        raise ValueError("; ".join(errors))
    return doc


class UsersFileBackend(object):
    """One JSON file per realm: ``<directory>/<realm>.json``.

    A file is read on the first check of its realm and read again whenever
    its modification time, size or inode changes, so adding a space (a new
    file), a user or a password needs no restart. A missing file = an unknown
    realm; a broken file raises BackendError (the last good copy is not used:
    a half-written file must not keep a removed user alive)."""

    def __init__(self, directory, log=None):
        self.directory = directory
        self.log = log
        self._lock = threading.Lock()
        self._cache = {}

    def path(self, realm):
        return os.path.join(self.directory, realm + ".json")

    def _users(self, realm):
        """The users of ``realm`` (dict), None when there is no file."""
        path = self.path(realm)
        try:
            st = os.stat(path)
        except OSError:
            with self._lock:
                self._cache.pop(realm, None)
            return None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            cached = self._cache.get(realm)
            if cached and cached[0] == stamp:
                return cached[1]
        try:
            with open(path, "rb") as handle:
                doc = json.loads(handle.read().decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise BackendError("cannot read %s: %s" % (path, exc))
        errors = users_file_errors(doc, realm)
        if errors:
            raise BackendError("%s: %s" % (path, "; ".join(errors)))
        with self._lock:
            self._cache[realm] = (stamp, doc["users"])
        if self.log:
            self.log("read %s (%d users)" % (path, len(doc["users"])))
        return doc["users"]

    def check(self, realm, username, password):
        return self.authenticate(realm, username, password)[0]

    def authenticate(self, realm, username, password):
        """``(Identity | None, outcome)``; the same work (one PBKDF2) whatever the outcome."""
        users = self._users(realm) if isinstance(realm, str) and REALM_RE.match(realm) else None
        if users is None:
            verify_password(password, _dummy_hash())
            return None, UNKNOWN_REALM
        entry = users.get(username) if isinstance(username, str) else None
        if entry is None:
            verify_password(password, _dummy_hash())
            return None, UNKNOWN_USER
        if not verify_password(password, entry["password"]):
            return None, WRONG_PASSWORD
        return Identity(username, entry.get("groups", [])), OK

    def forget(self):
        """Drop every cached file (SIGHUP): the next check reads them anew."""
        with self._lock:
            self._cache.clear()
