# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The identity operations of the host backends: both space types (standard
and brokered) keep their messaging users in the space's Keycloak realm, so
ArtemisBackend and StandardBackend both take ``messaging_user`` and
``messaging_user_info`` from :class:`KeycloakUsers` (one implementation)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import users as _users
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.args import client_of
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import username_errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model.users import secrets_of, user_inputs


class KeycloakUsers(object):
    """The two identity operations of a host backend (a mixin of
    ArtemisBackend and StandardBackend)."""

    def messaging_user(self, request):
        p = request.params
        request.hide(secrets_of(p))
        space, users, errors = user_inputs(p)
        if not errors and p.get("prune") and p.get("users") is None and p.get("definition") is None:
            errors = ["prune: true needs the bulk form (users or a MessagingUserList definition)"]
        if errors:
            raise ValidationError(errors)
        client = client_of(p, request.hide)
        broker, warnings = self.broker_users(request, space)
        result = _users.converge(client, space, users, prune=bool(p.get("prune")),
                                 update_password=p.get("update_password") or "always", check_mode=request.check_mode,
                                 broker=broker)
        if warnings:
            result["warnings"] = list(result.get("warnings") or []) + warnings
        if not request.diff:
            result.pop("diff", None)
        return result

    def broker_users(self, request, space):
        """``(broker, warnings)``: the brokered backend's broker step
        (artemis/realm_users.py BrokerUsers) or None."""
        return None, []

    def messaging_user_info(self, request):
        p = request.params
        names = p.get("usernames") or []
        if not isinstance(names, list):
            names = [names]
        errors = [e for i, n in enumerate(names) for e in username_errors(n, "usernames[%d]" % i)]
        if errors:
            raise ValidationError(errors)
        return _users.info(client_of(p, request.hide), p["address_space"], names)
