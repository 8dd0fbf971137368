# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The realm's messaging users converged into a brokered space's broker,
through Artemis management (Jolokia), and the security settings derived
from their permissions (``artemis/security.py``; docs/identity.md
"Brokered spaces").

* Users: ``listUser``, ``addUser`` / ``resetUser`` with ``plaintext=false``
  (Artemis stores its own salted PBKDF2 hash ``ENC(...)``), ``removeUser``.
  Artemis writes them to the first PropertiesLoginModule of its login.config
  (roles/broker: ``artemis-realm-users.properties``, which the role never
  renders), re-read on change (``reload=true``). A password is sent only
  when the user is added or the realm step set it; otherwise ``resetUser``
  gets null and the broker keeps its hash.
* Security settings: ``addSecuritySettings`` / ``removeSecuritySettings``,
  which Artemis persists in its journal (PersistedSecuritySetting): they
  survive a restart and a reload of broker.xml.
* The authentication and authorization caches are cleared after a change,
  so the next connection sees it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.enmasse.messaging.plugins.module_utils.args import CONNECTION_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import security as _sec
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import service as _service
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import broker_mbean
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import (
    connection_file_path, read_connection_file)
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import (
    EnmasseError, ServiceError, ValidationError)

S = "java.lang.String"
LIST = "listUser(%s)" % S
ADD = "addUser(%s,%s,%s,boolean)" % (S, S, S)
RESET = "resetUser(%s,%s,%s,boolean)" % (S, S, S)
REMOVE = "removeUser(%s)" % S
ROLES = "getRolesAsJSON(%s)" % S
ADD_SETTING = "addSecuritySettings(%s)" % ",".join([S] * 13)
REMOVE_SETTING = "removeSecuritySettings(%s)" % S
CLEAR = ("clearAuthenticationCache()", "clearAuthorizationCache()")
# the match whose roles every address without its own setting gets
BASE_MATCH = "#"


class BrokerUsers(object):
    """The realm users and security settings of one broker."""

    def __init__(self, client, broker_name, space, reserved=None, addresses=()):
        self.client, self.mbean, self.space = client, broker_mbean(broker_name), space
        self.reserved, self.addresses = reserved or {}, sorted(addresses)
        self.live, self.steps, self.settings = {}, [], []

    def _fail(self, what, exc):
        raise ServiceError("broker of address space %r (%s): %s failed: %s"
                           % (self.space, self.client.display_url, what, exc))

    def read_users(self):
        """username -> roles of the managed broker users (marker role)."""
        try:
            listed = json.loads(self.client.execute(self.mbean, LIST, "") or "[]")
        except (EnmasseError, ValueError) as e:
            self._fail("reading its users (listUser)", e)
        return dict((u["username"], sorted(u.get("roles") or [])) for u in listed
                    if _sec.MARKER_ROLE in (u.get("roles") or []))

    def plan(self, users, set_password, prune=False):
        """Read the broker and plan users and settings (nothing changes)."""
        errors = _sec.reserved_errors(users, self.reserved)
        if errors:
            raise ValidationError(errors)
        self.live = self.read_users()
        self.steps = _sec.plan_users(users, self.live, set_password, prune)
        self.plan_settings(self.addresses, _sec.users_after(self.live, self.steps))
        return self

    def converge(self, check_mode=False):
        """Apply the plan (unless ``check_mode``); the ``broker`` result."""
        done = self.changes() if check_mode else self.apply()
        return {"changed": bool(self.steps or self.settings), "users": done,
                "security_settings": self.settings_result()}

    def changes(self):
        done = {"added": [], "updated": [], "removed": []}
        for step in self.steps:
            done[{"add": "added", "reset": "updated", "remove": "removed"}[step["action"]]].append(step["username"])
        return done

    def plan_settings(self, addresses, broker_users):
        """The security setting changes of ``addresses`` for ``broker_users``."""
        groups = _sec.realm_groups(broker_users)
        names = sorted(addresses)
        try:
            answers = self.client.bulk([self.client.exec_request(self.mbean, ROLES, n)
                                        for n in [BASE_MATCH] + names])
        except EnmasseError as e:
            self._fail("reading security settings (getRolesAsJSON)", e)
        current = [_sec.roles_by_permission(json.loads(v or "[]")) for v, unused in answers]
        base, out = current[0], []
        for name, perms in zip(names, current[1:]):
            change = _sec.setting_change(name, perms, base, groups)
            if change:
                out.append({"address": name, "action": change[0], "permissions": change[1], "before": perms})
        self.settings = out
        return out

    def apply(self):
        """Apply the planned steps: users, then settings, then the caches."""
        for step in self.steps:
            name, action = step["username"], step["action"]
            roles = ",".join(step.get("roles") or [])
            try:
                if action == "add":
                    self.client.execute(self.mbean, ADD, name, step["user"]["password"], roles, False)
                elif action == "reset":
                    password = step["user"]["password"] if step["password"] else None
                    self.client.execute(self.mbean, RESET, name, password, roles, False)
                else:
                    self.client.execute(self.mbean, REMOVE, name)
            except EnmasseError as e:
                self._fail("%s of user %r (%sUser)" % (action, name, action), e)
        self.apply_settings()
        if self.steps and not self.settings:
            self.clear_caches()
        return self.changes()

    def apply_settings(self):
        for change in self.settings:
            name = change["address"]
            try:
                if change["action"] == "set":
                    self.client.execute(self.mbean, ADD_SETTING, *_sec.setting_arguments(name, change["permissions"]))
                else:
                    self.client.execute(self.mbean, REMOVE_SETTING, name)
            except EnmasseError as e:
                self._fail("security setting of address %r (%s)" % (name, change["action"]), e)
        if self.settings:
            self.clear_caches()

    def clear_caches(self):
        try:
            self.client.bulk([self.client.exec_request(self.mbean, op) for op in CLEAR])
        except EnmasseError as e:
            self._fail("clearing the authentication and authorization caches", e)

    def settings_result(self):
        return {"set": [c["address"] for c in self.settings if c["action"] == "set"],
                "removed": [c["address"] for c in self.settings if c["action"] == "remove"]}

    def diff(self):
        """Before and after of the broker's users and settings (no secret)."""
        after_users = _sec.users_after(self.live, self.steps)
        names = sorted(set(s["username"] for s in self.steps))

        def realm_only(perms):
            return dict((p, [r for r in (perms or {}).get(p, []) if _sec.is_realm_role(r)]) for p in ("send", "consume"))
        return ({"users": dict((n, self.live.get(n)) for n in names),
                 "security_settings": dict((c["address"], realm_only(c["before"])) for c in self.settings)},
                {"users": dict((n, after_users.get(n)) for n in names),
                 "security_settings": dict((c["address"], realm_only(c["permissions"])) for c in self.settings)})


def has_broker(params, space):
    """Whether the task reaches a broker for ``space`` (connection options or
    the space's connection file)."""
    explicit = any(params.get(k) is not None for k in CONNECTION_ARGS)
    return explicit or read_connection_file(connection_file_path(params, space)) is not None


def open_broker(params, space, hide):
    """A BrokerUsers of the space's broker (the ledger's addresses), or None
    when the task reaches no broker."""
    if not has_broker(params, space):
        return None
    conn, ledger, unused, service = _service.open_space(params, space, hide)
    reserved = dict((conn[k], k.split("_", 1)[0]) for k in ("management_user", "messaging_user", "router_user")
                    if conn.get(k))
    return BrokerUsers(service.client, conn["broker_name"], space, reserved, ledger.addresses)


def secure_addresses(client, broker_name, space, addresses, check_mode=False):
    """The security settings of ``addresses`` for the broker's realm users
    (``address`` calls it: a new address is protected the moment it
    exists). Nothing to do, one management call, when the broker has no
    realm users. Returns None or ``{"changed", "security_settings"}``."""
    broker = BrokerUsers(client, broker_name, space)
    users = broker.read_users()
    if not users:
        return None
    broker.plan_settings(addresses, users)
    if not check_mode:
        broker.apply_settings()
    return {"changed": bool(broker.settings), "security_settings": broker.settings_result()}
