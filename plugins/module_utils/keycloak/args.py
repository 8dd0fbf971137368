# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Keycloak connection options (documented once, in the doc fragment
``enmasse.messaging.keycloak``) and the client they make."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.client import DEFAULT_TIMEOUT, KeycloakClient
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.realm import PASSWORD_POLICY

KEYCLOAK_ARGS = dict(
    keycloak_url=dict(type="str", required=True, no_log=False),
    keycloak_admin_user=dict(type="str", default="admin", no_log=False),
    keycloak_admin_password=dict(type="str", required=True, no_log=True),
    keycloak_admin_realm=dict(type="str", default="master", no_log=False),
    keycloak_ca_file=dict(type="path"),
    keycloak_validate_certs=dict(type="bool", default=True),
    keycloak_timeout=dict(type="int", default=DEFAULT_TIMEOUT),
)

# the options with keycloak_url and keycloak_admin_password optional:
# messaging_user(_info) require them with backend hosts (backends.py), and
# address_space manages the realm only when keycloak_url is given
KEYCLOAK_OPTIONAL_ARGS = dict((k, dict((a, v) for a, v in spec.items() if a != "required"))
                              for k, spec in KEYCLOAK_ARGS.items())
# address_space: those, and the realm's password policy (realm.py PASSWORD_POLICY)
KEYCLOAK_SPACE_ARGS = dict(KEYCLOAK_OPTIONAL_ARGS,
                           keycloak_password_policy=dict(type="str", default=PASSWORD_POLICY, no_log=False))


def client_of(params, hide=None):
    """The admin client of the task's Keycloak options."""
    if hide is not None:
        hide([params.get("keycloak_admin_password")])
    return KeycloakClient(params["keycloak_url"], params.get("keycloak_admin_user") or "admin",
                          params.get("keycloak_admin_password"), params.get("keycloak_admin_realm") or "master",
                          ca_file=params.get("keycloak_ca_file"),
                          validate_certs=params.get("keycloak_validate_certs", True) is not False,
                          timeout=params.get("keycloak_timeout"))
