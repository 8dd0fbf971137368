#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: address_info
short_description: List the addresses of an address space as they are on the broker
version_added: "0.1.0"
description:
  - Reads the live broker of a C(brokered) address space (for a C(standard) space the routers and
    the broker pool, docs/standard-spaces.md) and returns its addresses as plain
    addresses (type reconstructed from routing types and queues, settings from the Artemis address
    settings, plan from the ownership ledger) with their status and whether they are owned.
  - Owned addresses missing on the broker are listed too, with C(status.phase=Pending).
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.connection
  - enmasse.messaging.connection.address_space
  - enmasse.messaging.kubernetes
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.info_module
options:
  addresses:
    description:
      - Only these addresses (names). All when omitted.
    type: list
    elements: str
  include_unowned:
    description:
      - Also list addresses that exist on the broker but are not in the ownership ledger (created by
        hand or by clients). Broker-internal addresses are never listed.
    type: bool
    default: true
seealso:
  - module: enmasse.messaging.address
'''

EXAMPLES = r'''
- name: Owned addresses of a space
  enmasse.messaging.address_info:
    address_space: myspace
    include_unowned: false
  register: owned

- name: Is the orders queue empty?
  enmasse.messaging.address_info:
    address_space: myspace
    addresses: [orders]
  register: info
  failed_when: info.addresses[0].status.message_count > 0
'''

RETURN = r'''
addresses:
  description:
    - The addresses, sorted by name, each a plain address with C(status). C(plan) is C(null) for
      addresses that are not owned. Settings shown are those the ledger records for the address plus
      any that differ from the broker's catch-all address settings.
  returned: always
  type: list
  elements: dict
  sample:
    - address: orders
      type: queue
      plan: brokered-queue
      deadletter: orders-dlq
      status: {ready: true, phase: Active, message_count: 3, consumers: 1, owned: true, messages: []}
    - address: DLQ
      type: queue
      plan: null
      status: {ready: true, phase: Active, message_count: 0, consumers: 0, owned: false, messages: []}
    - address: jobs
      type: queue
      plan: standard-small-partitioned-queue
      status: {ready: true, phase: Active, message_count: 7, message_counts: {broker-1: 4, broker-2: 3},
               brokers: [broker-1, broker-2], routers: [router-1, router-2, router-3], messages: []}
'''

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils import args, backends, runner

OPTIONS = dict(
    args.ADDRESS_SPACE_ARG,
    addresses=dict(type="list", elements="str"),
    include_unowned=dict(type="bool", default=True),
)
OPTIONS.update(KUBERNETES_ARGS)


def info(module):
    return backends.run("address_info", runner.request(module))


def main():
    runner.main(OPTIONS, info)


if __name__ == "__main__":
    main()
