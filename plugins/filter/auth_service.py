# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the auth_service role.

* ``auth_service_users_errors``: every error in ``auth_service_address_spaces``
  (space names and user names with the model's rules, passwords,
  EnMasse-style ``authorization`` rules, duplicates);
* ``auth_service_users_file``: the users file of one address space (hashed
  passwords, groups), keeping the existing hash of a password that did not
  change so that a run that changes nothing writes nothing;
* ``auth_service_mqtt_users_file``: the users file of a standard space's
  MQTT service realm (``<space>.mqtt``, its one service user).

The rules live in module_utils (model/names.py, auth/backends.py); these
filters only apply them. The documentation of each filter is in the sidecar
``<filter>.yml`` beside this file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import (
    fmt, messaging_user, space_name_errors, username_errors)
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mqtt_service as _mqtt

SPACE_KEYS = ("address_space", "users", "messaging_user")
USER_KEYS = ("username", "password", "authorization")


def auth_service_users_errors(spaces, field="auth_service_address_spaces"):
    """Every error in the list of spaces and their users, as messages."""
    if spaces is None:
        return []
    if not isinstance(spaces, list):
        return ["%s: %s must be a list of {address_space, users}" % (field, fmt(spaces))]
    errors = []
    seen = {}
    for i, space in enumerate(spaces):
        where = "%s[%d]" % (field, i)
        if not isinstance(space, dict):
            errors.append("%s: %s must be a mapping {address_space, users, messaging_user}" % (where, fmt(space)))
            continue
        unknown = sorted(set(space) - set(SPACE_KEYS))
        if unknown:
            errors.append("%s: unknown keys %s (allowed: %s)" % (where, ", ".join(unknown), ", ".join(SPACE_KEYS)))
        name = space.get("address_space")
        name_errors = space_name_errors(name, where + ".address_space")
        errors.extend(name_errors)
        if not name_errors:
            where = "%s(%s)" % (where, name)
            if name in seen:
                errors.append("%s.address_space: %s is listed twice (also at %s[%d])" % (where, fmt(name), field, seen[name]))
            seen.setdefault(name, i)
        generated = space.get("messaging_user", True)
        if not isinstance(generated, bool):
            errors.append("%s.messaging_user: %s must be a boolean" % (where, fmt(generated)))
        users = space.get("users", [])
        if not isinstance(users, list):
            errors.append("%s.users: %s must be a list of {username, password, authorization}" % (where, fmt(users)))
            continue
        names = {}
        if generated is True and isinstance(name, str):
            names[messaging_user(name)] = "the generated messaging user"
        for j, user in enumerate(users):
            uwhere = "%s.users[%d]" % (where, j)
            if not isinstance(user, dict):
                errors.append("%s: must be a mapping {username, password, authorization}" % uwhere)
                continue
            unknown = sorted(set(user) - set(USER_KEYS))
            if unknown:
                errors.append("%s: unknown keys %s (allowed: %s)" % (uwhere, ", ".join(unknown), ", ".join(USER_KEYS)))
            username = user.get("username")
            uerrors = username_errors(username, uwhere + ".username")
            errors.extend(uerrors)
            if not uerrors:
                if username in names:
                    errors.append("%s.username: %s is also %s" % (uwhere, fmt(username), names[username]))
                names.setdefault(username, "%s.users[%d]" % (where, j))
            password = user.get("password")
            if not isinstance(password, str) or not password:
                # never the value: it is a password
                errors.append("%s.password: must be a non-empty string" % uwhere)
            if "authorization" in user:
                try:
                    backends.authorization_to_groups(user["authorization"])
                except ValueError as exc:
                    errors.append("%s.%s" % (uwhere, exc))
    return errors


def _previous_hash(previous, username, password, iterations):
    """The hash of ``username`` in the previous document when it still matches
    ``password`` with ``iterations``; None otherwise."""
    if not isinstance(previous, dict) or not isinstance(previous.get("users"), dict):
        return None
    entry = previous["users"].get(username)
    stored = entry.get("password") if isinstance(entry, dict) else None
    try:
        if backends.parse_hash(stored)[0] == iterations and backends.verify_password(password, stored):
            return stored
    except ValueError:
        return None
    return None


def auth_service_users_file(space, generated_password=None, previous=None, iterations=backends.DEFAULT_ITERATIONS):
    """The users file document of one entry of ``auth_service_address_spaces``.

    Every listed user, plus ``<space>-user`` with ``generated_password`` when
    it is given (the space's generated messaging password). A user without
    ``authorization`` may send and receive on every address of the space;
    with it, exactly what its rules grant. ``previous``: the document now on
    the host (or None); a user whose password did not change keeps its hash."""
    errors = auth_service_users_errors([space], "space")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        errors.append("iterations: %s must be an integer >= 1" % fmt(iterations))
    if generated_password is not None and (not isinstance(generated_password, str) or not generated_password):
        errors.append("generated_password: must be a non-empty string or None")
    if errors:
        raise AnsibleFilterError("auth_service_users_file: " + "; ".join(errors))
    realm = space["address_space"]
    wanted = []
    if generated_password is not None:
        wanted.append((messaging_user(realm), generated_password, list(backends.ALL_ADDRESSES_GROUPS)))
    for user in space.get("users", []):
        groups = (backends.authorization_to_groups(user["authorization"]) if "authorization" in user
                  else list(backends.ALL_ADDRESSES_GROUPS))
        wanted.append((user["username"], user["password"], groups))
    users = {}
    for username, password, groups in wanted:
        stored = _previous_hash(previous, username, password, iterations)
        users[username] = {"password": stored or backends.hash_password(password, iterations=iterations),
                           "groups": groups}
    try:
        return backends.users_file_document(realm, users)
    except ValueError as exc:
        raise AnsibleFilterError("auth_service_users_file: %s" % exc)


def auth_service_mqtt_users_file(space, password, previous=None, iterations=backends.DEFAULT_ITERATIONS):
    """The users file document of the MQTT gateways' service realm of the
    standard space ``space`` (``<space>.mqtt``, standard/mqtt_service.py):
    the one service user with ``password`` and the groups send/recv of every
    address (what it reaches is the realm's vhost: ``$mqtt/<space>/*`` and
    the space's declared addresses to send to); ``previous`` keeps an
    unchanged hash."""
    errors = space_name_errors(space)
    if not isinstance(password, str) or not password:
        errors.append("password: must be a non-empty string")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        errors.append("iterations: %s must be an integer >= 1" % fmt(iterations))
    if errors:
        raise AnsibleFilterError("auth_service_mqtt_users_file: " + "; ".join(errors))
    user = _mqtt.SERVICE_USER
    stored = _previous_hash(previous, user, password, iterations)
    return backends.users_file_document(_mqtt.realm(space), {user: {
        "password": stored or backends.hash_password(password, iterations=iterations), "groups": _mqtt.groups(space)}})


class FilterModule(object):
    """enmasse.messaging auth service filters."""

    def filters(self):
        return {
            "auth_service_users_errors": auth_service_users_errors,
            "auth_service_users_file": auth_service_users_file,
            "auth_service_mqtt_users_file": auth_service_mqtt_users_file,
        }
