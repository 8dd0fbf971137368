#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: messaging_user_info
short_description: List the messaging users of an address space (Keycloak realm or MessagingUser objects)
version_added: "0.1.0"
description:
  - Reads the users of the address space's Keycloak realm with their group memberships and returns each with
    the authorization those groups stand for (EnMasse's encoding), whether it is enabled and whether the
    collection owns it. Never a password or a password hash.
  - With O(backend=kubernetes) reads the C(MessagingUser) objects named C(<address space>.*) in O(namespace)
    instead (no Keycloak option is used); their stored passwords are never returned.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.keycloak
  - enmasse.messaging.keycloak.users
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.info_module
  - enmasse.messaging.kubernetes
options:
  address_space:
    description:
      - The address space (its realm has the same name).
    type: raw
    required: true
  usernames:
    description:
      - Only these users. All when omitted. A user that does not exist is not listed.
    type: list
    elements: raw
seealso:
  - module: enmasse.messaging.messaging_user
'''

EXAMPLES = r'''
- name: The users of myspace
  enmasse.messaging.messaging_user_info:
    keycloak_url: https://keycloak.example.com:8443
    keycloak_admin_password: "{{ vault_keycloak_admin_password }}"
    address_space: myspace
  register: users

- name: The MessagingUser objects of myspace on a cluster
  enmasse.messaging.messaging_user_info:
    backend: kubernetes
    namespace: messaging
    address_space: myspace
  register: users
'''

RETURN = r'''
users:
  description:
    - The users, sorted by name (in the order of O(usernames) when given).
    - With O(backend=kubernetes) each has C(name) (the object), C(authentication) (its type only) and C(status)
      (C(phase), C(message)) instead of C(groups).
  returned: always
  type: list
  elements: dict
  sample:
    - username: app1
      enabled: true
      owned: true
      authorization: [{addresses: ["orders/*"], operations: [send]}]
      groups: ["send_orders%2F%2A"]
'''

from ansible_collections.enmasse.messaging.plugins.module_utils import backends, runner
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.args import KEYCLOAK_OPTIONAL_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_ARGS

OPTIONS = dict(
    KEYCLOAK_OPTIONAL_ARGS,
    address_space=dict(type="raw", required=True),
    usernames=dict(type="list", elements="raw"),
)
OPTIONS.update(KUBERNETES_ARGS)


def info(module):
    return backends.run("messaging_user_info", runner.request(module))


def main():
    runner.main(OPTIONS, info, connection=False)


if __name__ == "__main__":
    main()
