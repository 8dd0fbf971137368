# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The connection options every enmasse.messaging module shares.
    DOCUMENTATION = r'''
options:
  connection_file:
    description:
      - JSON file with the connection settings of the address space, written by the
        C(enmasse.messaging.broker) role (mode 0600) with the keys C(address_space),
        C(type), C(management_url), C(broker_name), C(management_user),
        C(management_password), C(ledger_path), C(endpoints), C(messaging_user) and C(plan).
      - Defaults to C(/etc/enmasse-messaging/spaces/<address space>.json).
      - Explicit options below override the file's values. When neither gives a
        required value, the module fails naming the missing option and the file it
        looked at.
    type: path
  management_url:
    description:
      - Jolokia endpoint of the broker of the address space, for example
        C(http://127.0.0.1:8161/console/jolokia). Requests carry the C(Origin) header
        C(http://localhost), which the instance's C(etc/jolokia-access.xml) must allow.
      - Management listens on the broker host only; run the task on that host
        (C(delegate_to)).
    type: str
  management_ca:
    description:
      - CA certificate (PEM file on the host that runs the module) an C(https://) O(management_url) is verified
        against, host name included. Without it the system's trust store is used; the certificate is always
        verified. The broker role writes it to the connection file when the management is HTTPS.
    type: path
  management_user:
    description:
      - User with a management role on the broker.
    type: str
  management_password:
    description:
      - Password of O(management_user). Never logged.
    type: str
  broker_name:
    description:
      - Name of the Artemis broker (the C(<name>) in the instance's C(etc/broker.xml)),
        part of every management object name.
    type: str
  ledger_path:
    description:
      - The ownership ledger of the address space, a JSON file next to the broker
        instance. Everything the modules create is recorded there; pruning and deleting
        only ever touch addresses in the ledger.
    type: path
  timeout:
    description:
      - Timeout of one management HTTP request, in seconds. Defaults to 60.
      - For a standard address space, the wait for one management request to a router or a broker; it
        replaces the infrastructure file's C(timeout) (60) for this task. Whole seconds, at least 1.
    type: int
  catalogue_path:
    description:
      - The plan catalogue of the host (see M(enmasse.messaging.address_plan)), which address spaces and
        addresses are validated against. A plan that is not in it is an error.
      - Defaults to the connection file's C(catalogue_path), else C(/etc/enmasse-messaging/catalogue.json).
        Without the file, the catalogue is the default one (EnMasse's example plans and the collection's
        additions).
    type: path
  infrastructure_file:
    description:
      - Standard address spaces only. The file that describes the routers, the broker pool and the auth service
        of this control host (written by C(playbooks/site.yml) on the first host of the group C(routers)).
      - Defaults to C(/etc/enmasse-messaging/standard.json).
    type: path
notes:
  - Run the task on the broker host (C(delegate_to)); management listens there only.
  - For a standard address space, run it on the control host (the first router), where the routers' management
    listens and the file named by O(infrastructure_file) is.
'''

    # The plan modules: where the catalogue is, where the spaces that use it are.
    CATALOGUE = r'''
options:
  catalogue_path:
    description:
      - The plan catalogue of the host, a JSON file. Every module that validates against plans on this host
        reads it; without the file, the catalogue is the default one (EnMasse's example plans and the
        collection's additions), and the first change writes it with them.
      - Defaults to C(/etc/enmasse-messaging/catalogue.json).
    type: path
  spaces_dir:
    description:
      - Directory of the connection files of the address spaces on this host, read (with the spaces
        registered in the catalogue) to find the addresses that use a plan before it is changed or deleted.
      - Defaults to C(/etc/enmasse-messaging/spaces).
    type: path
'''

    # The options both plan modules (address_plan, address_space_plan) have
    # (module_utils/args.py PLAN_COMMON_ARGS).
    PLAN = r'''
options:
  name:
    description:
      - Single form. Name of the plan, a Kubernetes object name (lowercase letters, digits, C(-) and C(.)).
      - Required unless O(definition) or the bulk list of plans is given.
    type: str
  display_name:
    description: Single form. Display name (default the name).
    type: str
  display_order:
    description: Single form. Display order.
    type: int
  short_description:
    description: Single form. Short description.
    type: str
  long_description:
    description: Single form. Long description.
    type: str
  prune:
    description:
      - Bulk form. Delete the plans written by this module that are not in the bulk list of plans.
    type: bool
    default: false
  state:
    description: C(present) creates or changes the plans; C(absent) deletes them.
    type: str
    choices: [present, absent]
    default: present
'''

    # The address space the module works on (address, address_info).
    ADDRESS_SPACE = r'''
options:
  address_space:
    description:
      - Name of the address space (a string - lowercase letters, digits and C(-), starting with a
        letter, ending with a letter or digit, at most 60 characters). A bad name fails the task
        before any connection file is looked for.
      - Not converted - a YAML boolean or number (C(yes), C(12345)) is refused; quote it.
    type: raw
    required: true
'''
