#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: address_plan
short_description: Manage the address plans of the plan catalogue (EnMasse AddressPlan)
version_added: "0.2.0"
description:
  - Creates, changes and deletes address plans in the plan catalogue of the host (O(catalogue_path)), the
    way EnMasse's C(admin.enmasse.io/v1beta2) C(AddressPlan) resources are managed. M(enmasse.messaging.address)
    validates every address against this catalogue, so a plan lasts for every later task on the host.
  - An address plan says what an address of its type costs (C(resources), in credits of a router or a broker)
    and its default C(message_ttl) and C(message_redelivery). Which address spaces may use it is said by the
    address space plans that list it (M(enmasse.messaging.address_space_plan)), as in EnMasse.
  - A plan in use is protected - deleting it is refused (naming the addresses that use it); its C(address_type)
    cannot change; a change of C(resources) or C(partitions) that would take an address space over its quota
    is refused unless O(force=true). A change of C(message_ttl) or C(message_redelivery) is applied; the
    result warns which addresses get the new settings when they are converged next.
  - An address plan that an address space plan lists cannot be deleted; remove it from that plan first.
  - O(prune=true) deletes the plans this module wrote that are not listed; EnMasse's example plans are never
    pruned.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.connection.catalogue
  - enmasse.messaging.connection.plan
  - enmasse.messaging.kubernetes
  - enmasse.messaging.kubernetes.apply
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.converge
attributes:
  check_mode:
    details: Computes and reports the same changes, diff and refusals; writes nothing.
  diff_mode:
    details: Before and after are keyed by plan name and hold only the changed plans.
options:
  address_type:
    description:
      - Single form. The type of address the plan is for.
    type: str
    choices: [anycast, multicast, queue, topic, subscription, deadletter]
  address_space_type:
    description:
      - Single form. Not in EnMasse's AddressPlan - an optional constraint of this collection - the plan may only
        be listed by address space plans of this type. Unset, the address space plans that list it decide.
    type: str
    choices: [standard, brokered]
  resources:
    description:
      - Single form. Credits an address of this plan costs - C(router) and C(broker), numbers >= 0 (one router
        or one broker has 1.0).
    type: dict
    suboptions:
      router:
        description: Router credits.
        type: raw
      broker:
        description: Broker credits.
        type: raw
  partitions:
    description: Single form. Partitions of a queue (standard address spaces), at least 1.
    type: int
  message_ttl:
    description:
      - Single form. Bounds of the time to live of messages, in milliseconds (queue, topic and deadletter plans).
        An address can narrow them, never widen them.
    type: dict
    suboptions:
      minimum:
        description: Minimum time to live (ms).
        type: raw
      maximum:
        description: Maximum time to live (ms).
        type: raw
  message_redelivery:
    description:
      - Single form. Redelivery of messages (queue, subscription and deadletter plans). An address's own values
        replace these.
    type: dict
    suboptions:
      maximum_delivery_attempts:
        description: Delivery attempts before the message goes to the dead letter address (-1 unlimited).
        type: raw
      redelivery_delay:
        description: Delay before a redelivery (ms).
        type: raw
      redelivery_delay_multiplier:
        description: Factor applied to the previous delay (>= 1).
        type: raw
      maximum_delivery_delay:
        description: Upper bound of the delay (ms).
        type: raw
  definition:
    description:
      - Single form. An EnMasse C(AddressPlan) document (C(admin.enmasse.io/v1beta2), or the older C(v1beta1) and
        C(v1alpha1) forms) instead of the fields above.
    type: dict
  address_plans:
    description:
      - Bulk form. A list of plans, each a plain mapping with the fields of the single form or an EnMasse
        C(AddressPlan) document. With O(state=absent), the plans (or names) to delete.
    type: list
    elements: raw
  force:
    description:
      - Apply a change of credits that takes an address space over its quota (its addresses stay; new ones that
        cost credits are refused until it fits). Deleting a plan in use is refused even so.
    type: bool
    default: false
seealso:
  - module: enmasse.messaging.address_space_plan
  - module: enmasse.messaging.address_plan_info
'''

EXAMPLES = r'''
- name: A small queue plan of our own, with redelivery defaults
  enmasse.messaging.address_plan:
    name: small-queue
    address_type: queue
    resources: {broker: 0.01}
    message_redelivery: {maximum_delivery_attempts: 5, redelivery_delay: 1000}

- name: EnMasse documents, as EnMasse ships them; delete what we made before and no longer list
  enmasse.messaging.address_plan:
    prune: true
    address_plans:
      - apiVersion: admin.enmasse.io/v1beta2
        kind: AddressPlan
        metadata: {name: tiny-queue}
        spec: {addressType: queue, resources: {broker: 0.001}}
      - {name: tiny-topic, address_type: topic, resources: {broker: 0.001}}

- name: Delete a plan (refused while an address uses it)
  enmasse.messaging.address_plan:
    name: tiny-queue
    state: absent
'''

RETURN = r'''
plans:
  description:
    - The plans of the task (in the bulk form, only the ones created or changed), each the plain plan with its
      EnMasse C(document).
  returned: always
  type: list
  elements: dict
  sample:
    - name: small-queue
      address_type: queue
      display_name: small-queue
      resources: {broker: 0.01}
      partitions: 1
      document:
        apiVersion: admin.enmasse.io/v1beta2
        kind: AddressPlan
        metadata: {name: small-queue, labels: {app.kubernetes.io/managed-by: enmasse.messaging}}
        spec: {addressType: queue, displayName: small-queue, resources: {broker: 0.01}, partitions: 1}
changes:
  description: Names of the plans created, updated and deleted (or that would be, in check mode).
  returned: always
  type: dict
  sample: {created: [small-queue], updated: [], deleted: []}
in_use:
  description: For each changed or deleted plan in use, the address spaces and the number of addresses using it.
  returned: when a changed plan is in use
  type: dict
  sample: {small-queue: {address_spaces: [shop], addresses: 12}}
catalogue_path:
  description: The catalogue file.
  returned: success
  type: str
errors:
  description: Every validation or refusal message (field, value, rule), when the task fails.
  returned: failure
  type: list
  elements: str
'''

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import modules as kubernetes_backend
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_APPLY_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils import args, runner
from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue.service import FIELDS, ADDRESS_PLANS, converge_from_params

OPTIONS = dict(
    args.PLAN_COMMON_ARGS,
    address_type=dict(type="str", choices=["anycast", "multicast", "queue", "topic", "subscription", "deadletter"]),
    address_space_type=dict(type="str", choices=["standard", "brokered"]),
    resources=dict(type="dict", options=dict(router=dict(type="raw"), broker=dict(type="raw"))),
    partitions=dict(type="int"),
    message_ttl=dict(type="dict", options=dict(minimum=dict(type="raw"), maximum=dict(type="raw"))),
    message_redelivery=dict(type="dict", options=dict(
        maximum_delivery_attempts=dict(type="raw"), redelivery_delay=dict(type="raw"),
        redelivery_delay_multiplier=dict(type="raw"), maximum_delivery_delay=dict(type="raw"))),
    address_plans=dict(type="list", elements="raw"),
)
OPTIONS.update(KUBERNETES_APPLY_ARGS)


def converge(module):
    if kubernetes_backend.selected(module.params):
        return kubernetes_backend.plans(ADDRESS_PLANS)(runner.request(module))
    return converge_from_params(module.params, ADDRESS_PLANS, module.check_mode)


def main():
    runner.main(OPTIONS, converge, connection=False, **args.plan_constraints("address_plans", FIELDS[ADDRESS_PLANS]))


if __name__ == "__main__":
    main()
