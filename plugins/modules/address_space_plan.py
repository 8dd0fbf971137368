#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: address_space_plan
short_description: Manage the address space plans of the plan catalogue (EnMasse AddressSpacePlan)
version_added: "0.2.0"
description:
  - Creates, changes and deletes address space plans in the plan catalogue of the host (O(catalogue_path)), the
    way EnMasse's C(admin.enmasse.io/v1beta2) C(AddressSpacePlan) resources are managed.
    M(enmasse.messaging.address_space) and M(enmasse.messaging.address) validate against this catalogue.
  - An address space plan says which address space type it is for, its quota (C(resource_limits) in credits,
    C(router), C(broker) and C(aggregate)) and which address plans its addresses may use. Every address plan it
    lists must exist in the catalogue and fit the type.
  - A plan in use is protected - deleting it is refused (naming the address spaces); its C(address_space_type)
    cannot change; it cannot drop an address plan that addresses of its spaces use; lowering its limits below
    what a space uses is refused unless O(force=true) (the space is then over quota - its addresses stay, new
    ones that cost credits are refused, and M(enmasse.messaging.address) warns with the numbers).
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
  address_space_type:
    description: Single form. The address space type the plan is for.
    type: str
    choices: [standard, brokered]
  resource_limits:
    description:
      - Single form. The quota of a space of this plan, in credits - the sum of its addresses' C(router) and
        C(broker) credits, and of both (C(aggregate)). An unset limit does not limit.
    type: dict
    suboptions:
      router:
        description: Router credits.
        type: raw
      broker:
        description: Broker credits.
        type: raw
      aggregate:
        description: Router and broker credits together.
        type: raw
  address_plans:
    description: Single form. The address plans the addresses of a space of this plan may use.
    type: list
    elements: str
  infra_config_ref:
    description:
      - Single form. EnMasse's infrastructure config of the plan (C(BrokeredInfraConfig) or C(StandardInfraConfig));
        it must be one the catalogue knows (C(default), C(default-minimal)). Recorded; on hosts the roles'
        variables size the routers and brokers.
    type: str
  definition:
    description:
      - Single form. An EnMasse C(AddressSpacePlan) document (C(admin.enmasse.io/v1beta2), or the older C(v1beta1)
        and C(v1alpha1) forms) instead of the fields above.
    type: dict
  address_space_plans:
    description:
      - Bulk form. A list of plans, each a plain mapping with the fields of the single form or an EnMasse
        C(AddressSpacePlan) document. With O(state=absent), the plans (or names) to delete.
    type: list
    elements: raw
  force:
    description:
      - Apply limits lower than what an address space of the plan uses. Deleting a plan in use is refused even so.
    type: bool
    default: false
seealso:
  - module: enmasse.messaging.address_plan
  - module: enmasse.messaging.address_space_plan_info
'''

EXAMPLES = r'''
- name: A brokered plan with a quota of 190 small queues
  enmasse.messaging.address_space_plan:
    name: brokered-190
    address_space_type: brokered
    resource_limits: {broker: 1.9}
    address_plans: [small-queue, brokered-topic, brokered-deadletter]

- name: The same as an EnMasse document
  enmasse.messaging.address_space_plan:
    definition:
      apiVersion: admin.enmasse.io/v1beta2
      kind: AddressSpacePlan
      metadata: {name: brokered-190}
      spec:
        addressSpaceType: brokered
        infraConfigRef: default
        resourceLimits: {broker: 1.9}
        addressPlans: [small-queue, brokered-topic, brokered-deadletter]
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
    - name: brokered-190
      address_space_type: brokered
      display_name: brokered-190
      resource_limits: {broker: 1.9}
      address_plans: [small-queue, brokered-topic, brokered-deadletter]
changes:
  description: Names of the plans created, updated and deleted (or that would be, in check mode).
  returned: always
  type: dict
  sample: {created: [brokered-190], updated: [], deleted: []}
in_use:
  description: For each changed or deleted plan in use, the address spaces using it.
  returned: when a changed plan is in use
  type: dict
  sample: {brokered-190: {address_spaces: [shop], addresses: 0}}
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
from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue.service import FIELDS, SPACE_PLANS, converge_from_params

OPTIONS = dict(
    args.PLAN_COMMON_ARGS,
    address_space_type=dict(type="str", choices=["standard", "brokered"]),
    resource_limits=dict(type="dict", options=dict(router=dict(type="raw"), broker=dict(type="raw"),
                                                   aggregate=dict(type="raw"))),
    address_plans=dict(type="list", elements="str"),
    infra_config_ref=dict(type="str"),
    address_space_plans=dict(type="list", elements="raw"),
)
OPTIONS.update(KUBERNETES_APPLY_ARGS)


def converge(module):
    if kubernetes_backend.selected(module.params):
        return kubernetes_backend.plans(SPACE_PLANS)(runner.request(module))
    return converge_from_params(module.params, SPACE_PLANS, module.check_mode)


def main():
    runner.main(OPTIONS, converge, connection=False, **args.plan_constraints("address_space_plans", FIELDS[SPACE_PLANS]))


if __name__ == "__main__":
    main()
