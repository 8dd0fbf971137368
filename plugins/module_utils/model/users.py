# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Messaging users: EnMasse's ``MessagingUser`` as plain data, and its rules.

A user is ``{"username", "password", "authorization": [{"addresses":
[patterns], "operations": [...]}], "state"}``, from the variable form
(the module's options or an item of ``users``) or from an EnMasse
``user.enmasse.io/v1beta1`` ``MessagingUser`` document (``metadata.name``
``<space>.<username>``, ``spec.authentication.password`` base64-encoded as
EnMasse has it). Every check returns every violation as a message naming the
field, the value and the rule. Pure: no I/O; the mapping of the
authorization to groups is the auth service's encoding
(auth/backends.py ``authorization_to_groups``), applied by the Keycloak
service, never repeated here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import (
    fmt, space_name_errors, username_errors)

API_VERSION = "user.enmasse.io/v1beta1"
KIND = "MessagingUser"
LIST_KIND = "MessagingUserList"
OPERATIONS = ("send", "recv", "view", "manage")
# operations that need address patterns (view and manage are for the whole space)
ADDRESS_OPERATIONS = ("send", "recv")
AUTH_TYPES = ("password",)
# EnMasse's authentication types (what a MessagingUser document may say)
ENMASSE_AUTH_TYPES = ("password", "serviceaccount", "federated")
REFUSED_AUTH_TYPES = {
    "serviceaccount": "service accounts are Kubernetes tokens; the host backends have no Kubernetes API "
                      "to check them against, and with backend: kubernetes the collection manages password users only",
    "federated": "federated users come from an identity provider configured in the realm by hand; the "
                 "collection does not manage identity providers",
}
ITEM_KEYS = ("username", "password", "authentication", "authorization", "enabled", "state")
PASSWORD_MAX = 1024
PATTERN_MAX = 255


def pattern_errors(pattern, field):
    """An address pattern as EnMasse's: ``*`` (every address), a prefix
    ending in ``*`` (``orders/*``: every address starting with ``orders/``,
    so not ``ordersx``), or an exact address. ``*`` anywhere else is refused."""
    if not isinstance(pattern, str) or not pattern:
        return ["%s: %s must be a non-empty string (an address, a prefix ending in '*', or '*')"
                % (field, fmt(pattern))]
    errs = []
    if any(c.isspace() for c in pattern):
        errs.append("%s: %s must not contain whitespace" % (field, fmt(pattern)))
    if "*" in pattern[:-1]:
        errs.append("%s: %s may hold '*' only as its last character (a prefix such as 'orders/*', or '*' "
                    "alone for every address)" % (field, fmt(pattern)))
    if len(pattern) > PATTERN_MAX:
        errs.append("%s: %s is %d characters long, at most %d are allowed"
                    % (field, fmt(pattern[:40] + "..."), len(pattern), PATTERN_MAX))
    for bad, why in ((",", "the router joins the patterns with ','"),
                     ("${user}", "the router replaces ${user} by the user name"),
                     (":/", "the router routes what follows the first ':/', another name than the one it checks")):
        if bad in pattern:
            errs.append("%s: %s must not contain %r (%s)" % (field, fmt(pattern), bad, why))
    if pattern.startswith(("/", "_")):
        errs.append("%s: %s must not start with '/' or '_' (the router gives such names no tenant prefix: they "
                    "reach the router itself)" % (field, fmt(pattern)))
    return errs


def pattern_matches(pattern, address):
    """Whether ``pattern`` grants ``address`` (the rule the auth service's
    router and broker authorization apply; here for tests and docs)."""
    if pattern.endswith("*"):
        return address.startswith(pattern[:-1])
    return address == pattern


def authorization_errors(authorization, field="authorization"):
    """Every problem of an ``authorization`` list; a valid one gives []."""
    if authorization is None:
        return []
    if not isinstance(authorization, list):
        return ["%s: %s must be a list of {addresses: [patterns], operations: [%s]}"
                % (field, fmt(authorization), ", ".join(OPERATIONS))]
    errs = []
    for i, rule in enumerate(authorization):
        where = "%s[%d]" % (field, i)
        if not isinstance(rule, dict):
            errs.append("%s: %s must be a mapping with addresses and operations" % (where, fmt(rule)))
            continue
        unknown = sorted(k for k in rule if k not in ("addresses", "operations"))
        if unknown:
            errs.append("%s: unknown keys %s (allowed: addresses, operations)" % (where, ", ".join(map(str, unknown))))
        operations = rule.get("operations")
        if not isinstance(operations, list) or not operations:
            errs.append("%s.operations: %s must be a non-empty list of %s" % (where, fmt(operations), ", ".join(OPERATIONS)))
            operations = []
        for op in operations:
            if op not in OPERATIONS:
                errs.append("%s.operations: %s must be one of %s" % (where, fmt(op), ", ".join(OPERATIONS)))
        addresses = rule.get("addresses", [])
        if not isinstance(addresses, list):
            errs.append("%s.addresses: %s must be a list of address patterns" % (where, fmt(addresses)))
            continue
        for j, pattern in enumerate(addresses):
            errs.extend(pattern_errors(pattern, "%s.addresses[%d]" % (where, j)))
        needs = [op for op in operations if op in ADDRESS_OPERATIONS]
        if needs and not addresses:
            errs.append("%s.addresses: [] but operations %s need at least one address pattern"
                        % (where, ", ".join(needs)))
    return errs


def normalise_authorization(authorization):
    """A valid authorization list with sorted, de-duplicated members (the
    groups it maps to do not depend on the order)."""
    out = []
    for rule in authorization or []:
        out.append({"addresses": sorted(set(rule.get("addresses") or [])),
                    "operations": sorted(set(rule["operations"]))})
    return out


def password_errors(password, field="password"):
    if not isinstance(password, str) or not password:
        return ["%s: the password must be a non-empty string (a %s was given; the value is not shown)"
                % (field, "empty string" if password == "" else type(password).__name__)]
    if len(password) > PASSWORD_MAX:
        return ["%s: the password is %d characters long, at most %d are allowed" % (field, len(password), PASSWORD_MAX)]
    return []


def authentication_errors(authentication, field="authentication"):
    """The variable form's ``authentication``: ``{type: password, password:
    <plain>}``. The value of a password is never quoted in a message."""
    if not isinstance(authentication, dict):
        return ["%s: %s must be a mapping {type: password, password: ...}" % (field, fmt(type(authentication).__name__))]
    kind = authentication.get("type", "password")
    if kind in REFUSED_AUTH_TYPES:
        return ["%s.type: %s is not supported by messaging_user (%s); use type: password"
                % (field, fmt(kind), REFUSED_AUTH_TYPES[kind])]
    if kind not in AUTH_TYPES:
        return ["%s.type: %s must be one of %s (EnMasse's %s; messaging_user supports %s)"
                % (field, fmt(kind), ", ".join(AUTH_TYPES), ", ".join(ENMASSE_AUTH_TYPES), ", ".join(AUTH_TYPES))]
    unknown = sorted(k for k in authentication if k not in ("type", "password"))
    errs = ["%s: unknown keys %s (allowed: type, password)" % (field, ", ".join(map(str, unknown)))] if unknown else []
    return errs + password_errors(authentication.get("password"), field + ".password")


def user_from_item(item, field, default_state="present"):
    """A plain item (``username``, ``password`` or ``authentication``,
    ``authorization``, ``state``) -> (user, errors)."""
    if not isinstance(item, dict):
        return None, ["%s: %s must be a mapping (or a MessagingUser document)" % (field, fmt(item))]
    if "apiVersion" in item or "kind" in item:
        return None, ["%s: a MessagingUser document is given as a whole item, not mixed with other keys" % field]
    unknown = sorted(k for k in item if k not in ITEM_KEYS)
    errs = ["%s: unknown keys %s (allowed: %s)" % (field, ", ".join(map(str, unknown)), ", ".join(ITEM_KEYS))] \
        if unknown else []
    state = item.get("state") or default_state
    if state not in ("present", "absent"):
        errs.append("%s.state: %s is not one of present, absent" % (field, fmt(state)))
    errs.extend(username_errors(item.get("username"), field + ".username"))
    password = item.get("password")
    if item.get("authentication") is not None:
        if password is not None:
            errs.append("%s: give the password either as password or in authentication, not both" % field)
        errs.extend(authentication_errors(item["authentication"], field + ".authentication"))
        password = item["authentication"].get("password") if isinstance(item["authentication"], dict) else None
    elif password is not None:
        errs.extend(password_errors(password, field + ".password"))
    if state == "present" and password is None and not errs:
        errs.append("%s.password: required with state present (or authentication: {type: password, password: ...})"
                    % field)
    errs.extend(authorization_errors(item.get("authorization"), field + ".authorization"))
    enabled = item.get("enabled", True)
    if not isinstance(enabled, bool):
        errs.append("%s.enabled: %s must be a boolean (true or false)" % (field, fmt(enabled)))
    if errs:
        return None, errs
    return {"username": item["username"], "password": password if state == "present" else None,
            "authorization": normalise_authorization(item.get("authorization")), "enabled": enabled,
            "state": state}, []


def _document_password(auth, field):
    """EnMasse keeps the password base64-encoded in the document."""
    errs = authentication_errors(dict(auth, password=auth.get("password") or "x") if isinstance(auth, dict) else auth,
                                 field)
    if errs:
        return None, errs
    encoded = auth.get("password")
    if not isinstance(encoded, str) or not encoded:
        return None, ["%s.password: required, the password base64-encoded (as EnMasse has it)" % field]
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True).decode("utf-8"), []
    except (binascii.Error, ValueError, UnicodeError):
        return None, ["%s.password: not base64 of a UTF-8 password (EnMasse's MessagingUser has the password "
                      "base64-encoded; the value is not shown)" % field]


def user_from_document(doc, space, field, default_state="present"):
    """An EnMasse MessagingUser document -> (user, errors)."""
    errs = []
    if doc.get("apiVersion") != API_VERSION:
        errs.append("%s.apiVersion: %s must be %s" % (field, fmt(doc.get("apiVersion")), API_VERSION))
    if doc.get("kind") != KIND:
        errs.append("%s.kind: %s must be %s" % (field, fmt(doc.get("kind")), KIND))
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else None
    if spec is None:
        return None, errs + ["%s.spec: %s must be a mapping with username, authentication and authorization"
                             % (field, fmt(doc.get("spec")))]
    unknown = sorted(k for k in spec if k not in ("username", "authentication", "authorization"))
    if unknown:
        errs.append("%s.spec: unknown keys %s (allowed: username, authentication, authorization)"
                    % (field, ", ".join(map(str, unknown))))
    username = spec.get("username")
    errs.extend(username_errors(username, field + ".spec.username"))
    name = meta.get("name")
    if not isinstance(name, str) or name != "%s.%s" % (space, username):
        errs.append("%s.metadata.name: %s must be <address space>.<username> (%s)"
                    % (field, fmt(name), fmt("%s.%s" % (space, username))))
    password, perrs = None, []
    if default_state == "present":
        password, perrs = _document_password(spec.get("authentication"), field + ".spec.authentication")
    errs.extend(perrs)
    errs.extend(authorization_errors(spec.get("authorization"), field + ".spec.authorization"))
    if errs:
        return None, errs
    return {"username": username, "password": password,
            "authorization": normalise_authorization(spec.get("authorization")), "enabled": True,
            "state": default_state}, []


def _expand(items):
    """Items with each MessagingUserList replaced by its items."""
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("kind") == LIST_KIND:
            for j, sub in enumerate(item.get("items") or []):
                yield "users[%d].items[%d]" % (i, j), sub
        else:
            yield "users[%d]" % i, item


def users_from_list(items, space, default_state="present"):
    """The bulk form: a list of plain items and MessagingUser documents ->
    (users, errors). A username given twice is refused."""
    if not isinstance(items, list):
        return [], ["users: %s must be a list" % fmt(type(items).__name__)]
    users, errs, seen = [], [], {}
    for field, item in _expand(items):
        if isinstance(item, dict) and ("apiVersion" in item or "kind" in item):
            user, e = user_from_document(item, space, field, default_state)
        else:
            user, e = user_from_item(item, field, default_state)
        errs.extend(e)
        if user is None:
            continue
        if user["username"] in seen:
            errs.append("%s.username: %s is already given by %s (each user once)"
                        % (field, fmt(user["username"]), seen[user["username"]]))
            continue
        seen[user["username"]] = field
        users.append(user)
    return users, errs


SINGLE_KEYS = ITEM_KEYS


def user_inputs(params):
    """The module's parameters -> (space, users, errors): the single form
    (``username`` ...), ``definition`` (one document or a list document) or
    ``users`` (bulk). Nothing is read or written before this passes."""
    space = params.get("address_space")
    errs = space_name_errors(space, "address_space")
    if errs:
        return space, [], errs
    state = params.get("state") or "present"
    if params.get("users") is not None:
        users, errs = users_from_list(params["users"], space, state)
    elif params.get("definition") is not None:
        users, errs = users_from_list([params["definition"]], space, state)
        errs = [e.replace("users[0]", "definition", 1) for e in errs]
    else:
        item = dict((k, params.get(k)) for k in SINGLE_KEYS if params.get(k) is not None)
        user, errs = user_from_item(item, "messaging user")
        errs = [e.replace("messaging user.", "", 1) for e in errs]
        users = [user] if user else []
    return space, users, errs


def secrets_of(params):
    """Every password in the module's parameters (plain, and EnMasse's
    base64 with its decoded value), valid or not, to be masked in the
    module's output before anything is checked."""
    found = []

    def walk(value, decode):
        if isinstance(value, dict):
            for key, sub in value.items():
                if key == "password" and isinstance(sub, str) and sub:
                    found.append(sub)
                    if decode:
                        try:
                            found.append(base64.b64decode(sub.encode("ascii"), validate=True).decode("utf-8"))
                        except (binascii.Error, ValueError, UnicodeError):
                            pass
                else:
                    walk(sub, decode or key == "spec")
        elif isinstance(value, list):
            for sub in value:
                walk(sub, decode)

    walk(dict((k, params.get(k)) for k in ("password", "authentication", "users", "definition")), False)
    return [s for s in found if s]


def to_document(space, user):
    """A user as an EnMasse MessagingUser document, the password left out."""
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": "%s.%s" % (space, user["username"])},
            "spec": {"username": user["username"], "authentication": {"type": "password"},
                     "authorization": user.get("authorization") or []}}
