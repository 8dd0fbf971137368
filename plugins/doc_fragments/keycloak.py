# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The Keycloak connection options (module_utils/keycloak/args.py KEYCLOAK_ARGS)
    # that every module documents alike; each module takes keycloak_url and
    # keycloak_admin_password from one of the fragments below as well.
    DOCUMENTATION = r'''
options:
  keycloak_admin_user:
    description:
      - Administrator of O(keycloak_admin_realm); the admin token comes from the password grant of its
        C(admin-cli) client.
    type: str
    default: admin
  keycloak_admin_realm:
    description:
      - The realm of the administrator.
    type: str
    default: master
  keycloak_ca_file:
    description:
      - PEM file of the CA certificates that sign Keycloak's HTTPS certificate (the system's CAs when omitted).
    type: path
  keycloak_validate_certs:
    description:
      - Verify Keycloak's HTTPS certificate and host name. Turn off only for a test instance.
    type: bool
    default: true
  keycloak_timeout:
    description:
      - Timeout of one HTTP request to Keycloak, in seconds.
    type: int
    default: 30
'''

    # address_space: the realm is managed only when keycloak_url is given
    OPTIONAL = r'''
options:
  keycloak_url:
    description:
      - Host backends. The address space's realm is made (or repaired) with the space and deleted with it when owned
        (docs/identity.md); without this option no realm is managed.
      - Base URL of Keycloak (the Quarkus distribution, no C(/auth) path), for example
        C(https://keycloak.example.com:8443).
    type: str
    required: false
  keycloak_admin_password:
    description:
      - Password of O(keycloak_admin_user). Never logged.
    type: str
    required: false
  keycloak_password_policy:
    description:
      - The realm's Keycloak password policy (C(passwordPolicy)), which says how Keycloak hashes the passwords of
        the space's users; other policies of Keycloak's syntax (a minimum length, for example) may be part of it.
      - The default, PBKDF2-SHA256 with 10,000 iterations, makes setting a password and every login the auth
        service cannot answer from its cache about 6 times cheaper in Keycloak's CPU than Keycloak 26's own default
        (argon2id), at the price of a cheaper offline guess against a stolen hash (docs/identity.md).
      - An empty string sets no policy (Keycloak's default, argon2id). A changed hash setting applies to a
        password when it is set again or at its next login.
    type: str
    default: hashAlgorithm(pbkdf2-sha256) and hashIterations(10000)
'''

    # messaging_user(_info): required with the host backends, refused with kubernetes
    USERS = r'''
options:
  keycloak_url:
    description:
      - Host backends (required with O(backend=hosts), refused with O(backend=kubernetes)). Base URL of Keycloak
        (the Quarkus distribution, no C(/auth) path), for example C(https://keycloak.example.com:8443).
    type: str
    required: false
  keycloak_admin_password:
    description:
      - Host backends (required with O(backend=hosts)). Password of O(keycloak_admin_user). Never logged.
    type: str
    required: false
'''
