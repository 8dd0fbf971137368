# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a brokered space's broker must hold for the realm's messaging users
(docs/identity.md "Brokered spaces"). Pure: no I/O.

* A realm user converged into the broker carries the role ``MARKER_ROLE``
  (the broker users this collection manages) and one role per ``send_<p>``
  / ``recv_<p>`` group of EnMasse's encoding (``auth/backends.py``, the
  one implementation). ``manage`` and ``monitor`` give nothing on the broker
  (they would collide with the broker's own management role).
* Artemis wildcards are ``/``, ``#`` and ``+`` words, not EnMasse's prefix
  patterns, so patterns are never translated: for every address of the
  space, the groups whose pattern grants it (``model/users.py``
  ``pattern_matches``: ``orders/*`` grants ``orders/eu``, not ``ordersx``)
  are added to an exact-match security setting whose other roles are those
  of the broker's ``#`` setting (the space's own users keep working). An
  address no realm group grants keeps the ``#`` setting: realm users are
  denied by default."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.auth.backends import (
    GROUP_PERMISSIONS, authorization_to_groups, groups_to_address_authz)
from ansible_collections.enmasse.messaging.plugins.module_utils.model.users import pattern_matches

MARKER_ROLE = "enmasse-realm-user"
# Artemis' permission types, in the argument order of
# ActiveMQServerControl.addSecuritySettings(match, send, consume,
# createDurableQueue, deleteDurableQueue, createNonDurableQueue,
# deleteNonDurableQueue, manage, browse, createAddress, deleteAddress, view, edit)
PERMISSIONS = ("send", "consume", "createDurableQueue", "deleteDurableQueue", "createNonDurableQueue",
               "deleteNonDurableQueue", "manage", "browse", "createAddress", "deleteAddress", "view", "edit")
# what Artemis keeps of a setting made through management (SecurityFormatter
# ignores view and edit, the management RBAC permissions): what is compared
KEPT = PERMISSIONS[:10]
# what send and recv grant on an address (recv: queues, subscriptions of a
# multicast address, durable or not, and browsing)
GRANTS = {"send": ("send",),
          "recv": ("consume", "browse", "createDurableQueue", "deleteDurableQueue", "createNonDurableQueue",
                   "deleteNonDurableQueue")}


def is_realm_role(role):
    """The roles this collection gives realm users (never the broker's own)."""
    if role == MARKER_ROLE:
        return True
    prefix = role.split("_", 1)[0] if isinstance(role, str) and "_" in role else None
    return prefix in GROUP_PERMISSIONS


def broker_roles(groups):
    """The broker roles of a user with the realm ``groups``: the marker and
    its send/recv groups, sorted."""
    return sorted(set([MARKER_ROLE] + [g for g in groups if g != MARKER_ROLE and is_realm_role(g)]))


def granting_groups(address, groups):
    """``{"send": [...], "recv": [...]}``: the groups among ``groups`` whose
    pattern grants ``address`` that operation."""
    out = {"send": set(), "recv": set()}
    for group in groups:
        for pattern, ops in groups_to_address_authz([group]).items():
            if pattern_matches(pattern, address):
                for op in ops:
                    out[op].add(group)
    return dict((op, sorted(g)) for op, g in out.items())


def roles_by_permission(roles_json):
    """Artemis' ``getRolesAsJSON`` answer -> permission -> sorted role names."""
    out = dict((perm, set()) for perm in PERMISSIONS)
    for role in roles_json or []:
        for perm in PERMISSIONS:
            if role.get(perm):
                out[perm].add(role["name"])
    return dict((perm, sorted(names)) for perm, names in out.items())


def without_realm_roles(perms):
    return dict((perm, sorted(r for r in roles if not is_realm_role(r))) for perm, roles in perms.items())


def desired_setting(address, base, groups):
    """The security setting ``address`` needs: ``base`` (permission -> roles,
    the broker's ``#`` setting) plus the realm groups that grant it, or None
    when no realm group grants it (the ``#`` setting applies)."""
    granting = granting_groups(address, groups)
    if not granting["send"] and not granting["recv"]:
        return None
    out = dict((perm, set(roles)) for perm, roles in without_realm_roles(base).items())
    for op, perms in GRANTS.items():
        for perm in perms:
            out[perm].update(granting[op])
    return dict((perm, sorted(roles)) for perm, roles in out.items())


def setting_change(address, current, base, groups):
    """``("set", perms)``, ``("remove", None)`` or None (nothing to do) for
    ``address`` whose effective roles are ``current`` (permission -> roles)."""
    wanted = desired_setting(address, base, groups)
    if wanted is None:
        has_realm = any(is_realm_role(r) for roles in current.values() for r in roles)
        return ("remove", None) if has_realm else None
    if all(wanted[perm] == sorted(current.get(perm) or []) for perm in KEPT):
        return None
    return ("set", wanted)


def setting_arguments(address, perms):
    """The arguments of addSecuritySettings (13 strings) for ``perms``."""
    return [address] + [",".join(perms.get(perm) or []) for perm in PERMISSIONS]


def realm_groups(broker_users):
    """Every send/recv group the managed broker users hold (``broker_users``:
    username -> roles)."""
    return sorted(set(r for roles in broker_users.values() for r in roles if r != MARKER_ROLE and is_realm_role(r)))


def reserved_errors(users, reserved):
    """A task's user named like one of the broker's own users (``reserved``:
    the space's management and messaging users) is refused: the broker's
    login would not tell them apart."""
    return ["username: %r is a user of the broker of this space (its own %s user); realm users need other names"
            % (u["username"], reserved[u["username"]]) for u in users if u["username"] in reserved]


def plan_users(users, live, set_password, prune=False):
    """The broker steps for the task's ``users`` (model/users.py form, after
    the realm step), ``live``: managed broker users (username -> roles),
    ``set_password``: names whose password the realm step set (created or
    changed). A step is ``{"action": add|reset|remove, "username",
    "roles", "password": bool}``; a disabled or absent user is removed."""
    steps, listed = [], set()
    for user in users:
        name = user["username"]
        listed.add(name)
        if user["state"] == "absent" or not user.get("enabled", True):
            if name in live:
                steps.append({"action": "remove", "username": name})
            continue
        roles = broker_roles(authorization_to_groups(user.get("authorization") or []))
        if name not in live:
            steps.append({"action": "add", "username": name, "roles": roles, "password": True, "user": user})
        elif name in set_password or sorted(live[name]) != roles:
            steps.append({"action": "reset", "username": name, "roles": roles, "password": name in set_password,
                          "user": user})
    if prune:
        steps.extend({"action": "remove", "username": n} for n in sorted(set(live) - listed))
    return steps


def users_after(live, steps):
    """The managed broker users once ``steps`` are applied."""
    out = dict(live)
    for step in steps:
        if step["action"] == "remove":
            out.pop(step["username"], None)
        else:
            out[step["username"]] = step["roles"]
    return out
