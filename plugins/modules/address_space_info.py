#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: address_space_info
short_description: Show an address space and the health of its broker
version_added: "0.1.0"
description:
  - Returns the address space as recorded in the ownership ledger (type, plan, authentication
    service), whether it exists, and its status read from the live broker.
  - When there is no connection file for the space and no connection option is given, returns
    C(exists=false) instead of failing.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.connection
  - enmasse.messaging.kubernetes
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.info_module
options:
  name:
    description:
      - Name of the address space (a string - lowercase letters, digits and C(-), starting with a
        letter, ending with a letter or digit, at most 60 characters). A bad name fails the task
        before any connection file is looked for. Not converted - a YAML boolean or number is refused.
    type: raw
    required: true
seealso:
  - module: enmasse.messaging.address_space
'''

EXAMPLES = r'''
- name: Wait until the space is ready
  enmasse.messaging.address_space_info:
    name: myspace
  register: space
  until: space.address_space.status.ready
  retries: 30
  delay: 2
'''

RETURN = r'''
address_space:
  description: The address space as plain snake_case with C(exists) and C(status).
  returned: always
  type: dict
  sample:
    name: myspace
    type: brokered
    plan: brokered-single-broker
    authentication_service: null
    exists: true
    owned_addresses: 12
    status:
      ready: true
      phase: Active
      messages: []
      endpoints:
        - {name: amqp, host: broker1.example.com, port: 5672, protocols: [amqp], tls: true}
  contains:
    exists:
      description: The space is recorded in the ledger.
      type: bool
      returned: always
    owned_addresses:
      description: Number of addresses in the ownership ledger.
      type: int
      returned: when exists
    status:
      description: C(ready) (the broker answers and is started), C(phase) (C(Active), C(Pending) when
        not recorded, C(Failed) when the broker cannot be read), C(messages) and C(endpoints).
      type: dict
      returned: always
'''

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils import backends, runner


def info(module):
    return backends.run("address_space_info", runner.request(module))


def main():
    runner.main(dict(KUBERNETES_ARGS, name=dict(type="raw", required=True)), info)


if __name__ == "__main__":
    main()
