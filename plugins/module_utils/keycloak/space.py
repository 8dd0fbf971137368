# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The realm step of ``address_space`` on the host backends: when the task
gives ``keycloak_url``, the space's realm is ensured after the space is
converged (``state: present``) and removed after it is deleted (``absent``,
owned realms only), in check mode too (read only). The client is made
before the space is touched, so a bad URL or missing password changes
nothing. Without ``keycloak_url`` nothing here runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError, EnmasseError
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.args import KEYCLOAK_SPACE_ARGS, client_of
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.realm import (
    PASSWORD_POLICY, ensure_realm, remove_realm)


class SpaceRealm(object):
    def __init__(self, client, space, state, password_policy=PASSWORD_POLICY):
        self.client, self.space, self.state = client, space, state
        self.password_policy = password_policy

    def after(self, request, result):
        """``result`` of the space with the realm's step added (``realm``:
        changed, changes; ``changed`` or-ed)."""
        try:
            if self.state != "absent":
                out = ensure_realm(self.client, self.space, check_mode=request.check_mode,
                                   password_policy=self.password_policy)
            else:
                out = remove_realm(self.client, self.space, check_mode=request.check_mode)
        except EnmasseError as e:
            raise type(e)(["realm of address space %r: %s" % (self.space, m) for m in e.errors], result=result)
        result = dict(result, realm=out)
        result["changed"] = bool(result.get("changed")) or out["changed"]
        if out.get("skipped"):
            result["warnings"] = list(result.get("warnings") or []) + [out["skipped"]]
        return result


def space_realm(request, operation, backend):
    """A SpaceRealm for ``address_space`` with ``keycloak_url`` on a host
    backend, else None. The kubernetes backend refuses the options."""
    p = request.params
    given = sorted(k for k in KEYCLOAK_SPACE_ARGS if p.get(k) not in (None, KEYCLOAK_SPACE_ARGS[k].get("default")))
    if operation != "address_space" or not given:
        return None
    if backend.name == "kubernetes":
        raise ConfigError("%s: only used with backend: hosts (on a cluster the operator manages realms)"
                          % ", ".join(given))
    if not p.get("keycloak_url"):
        raise ConfigError("%s: given without keycloak_url (the space's realm is managed only when keycloak_url is "
                          "given)" % ", ".join(given))
    policy = p.get("keycloak_password_policy")
    return SpaceRealm(client_of(p, request.hide), p["name"], p.get("state") or "present",
                      PASSWORD_POLICY if policy is None else policy)
