#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: address_space_plan_info
short_description: Read the address space plans of the plan catalogue
version_added: "0.2.0"
description:
  - Lists the address space plans of the plan catalogue of the host (O(catalogue_path)), each as a plain plan with its
    EnMasse C(AddressSpacePlan) document, who wrote it (C(example) - shipped with the collection, or
    C(enmasse.messaging) - written by M(enmasse.messaging.address_space_plan)) and which address spaces use it.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.connection.catalogue
  - enmasse.messaging.kubernetes
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.info_module
options:
  names:
    description:
      - The plans to read; all when empty. Names that are not in the catalogue are returned in RV(missing).
    type: list
    elements: str
    default: []
seealso:
  - module: enmasse.messaging.address_space_plan
'''

EXAMPLES = r'''
- name: Every address space plan
  enmasse.messaging.address_space_plan_info:
  register: plans

- name: Two of them
  enmasse.messaging.address_space_plan_info:
    names: [brokered-single-broker, standard-small]
'''

RETURN = r'''
plans:
  description: The plans, each the plain plan with C(document), C(owner) and C(in_use) (C(address_spaces), C(addresses)).
  returned: always
  type: list
  elements: dict
missing:
  description: The O(names) that are not in the catalogue.
  returned: always
  type: list
  elements: str
catalogue_path:
  description: The catalogue file.
  returned: always
  type: str
stored:
  description: The catalogue file exists (else the plans are the default catalogue).
  returned: always
  type: bool
'''

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import modules as kubernetes_backend
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils import args, runner
from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue.service import SPACE_PLANS, plan_info
from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue.store import DEFAULT_CATALOGUE_PATH

OPTIONS = dict(
    args.CATALOGUE_ARGS,
    names=dict(type="list", elements="str", default=[]),
)
OPTIONS.update(KUBERNETES_ARGS)


def read(module):
    if kubernetes_backend.selected(module.params):
        return kubernetes_backend.plan_info(SPACE_PLANS)(runner.request(module))
    p = module.params
    result = plan_info(p["catalogue_path"] or DEFAULT_CATALOGUE_PATH, SPACE_PLANS, p["names"], p["spaces_dir"])
    result["changed"] = False
    return result


def main():
    runner.main(OPTIONS, read, connection=False)


if __name__ == "__main__":
    main()
