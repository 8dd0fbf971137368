#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: address_space
short_description: Manage an EnMasse-style address space (tenant)
version_added: "0.1.0"
description:
  - Records an address space (type, plan, authentication service) on its broker, or deletes it with
    all the addresses it owns. C(brokered) address spaces run on one ActiveMQ Artemis broker (deployed
    by the C(enmasse.messaging.broker) role); C(standard) address spaces on the router mesh and the broker
    pool of the standard infrastructure (the C(enmasse.messaging.standard) role, docs/standard-spaces.md).
  - O(state=present) checks that the broker is reachable and is the space's broker, then records the
    space in the ownership ledger. The type is immutable. A plan change is allowed only if the owned
    addresses fit the new plan's quota and its address plans allow them. Plans are looked up in the host's
    plan catalogue (O(catalogue_path)); a plan it does not have is an error. The space registers itself in
    the catalogue, so that M(enmasse.messaging.address_plan) and M(enmasse.messaging.address_space_plan)
    see which plans it uses.
  - O(state=absent) deletes every owned address of the space (refused while a queue, subscription or
    dead letter address still holds messages, unless O(force=true); the message lists them) and
    clears the ledger. Addresses not created by this collection are left alone.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.connection
  - enmasse.messaging.kubernetes
  - enmasse.messaging.kubernetes.apply
  - enmasse.messaging.keycloak
  - enmasse.messaging.keycloak.optional
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.converge
options:
  name:
    description:
      - Name of the address space - lowercase letters, digits and C(-), starting with a letter, ending
        with a letter or digit, at most 60 characters. A bad name fails the task before any connection
        file is looked for.
      - A string. The string options are not converted - a YAML boolean or number (C(yes), C(12345))
        is refused; quote it.
    type: raw
    required: true
  type:
    description:
      - C(brokered) or C(standard). Defaults to what the ledger or the connection file says, else
        C(brokered). Immutable. A string.
    type: raw
  plan:
    description:
      - Address space plan, for example C(brokered-single-broker). Defaults to what the ledger or the
        connection file says. A string.
    type: raw
  authentication_service:
    description:
      - Authentication service of the space, C({name, type}) with type C(none), C(standard) or
        C(external) (strings; EnMasse's C(overrides) is recorded as given). Recorded in the ledger.
    type: dict
  endpoints:
    description:
      - Endpoints of the space as in EnMasse's C(spec.endpoints). Returned as given; the endpoints in
        C(status) are the ones the broker role wrote to the connection file.
    type: list
    elements: dict
  definition:
    description:
      - An EnMasse C(enmasse.io/v1beta1) C(AddressSpace) document (or a plain mapping with the keys
        of the fields), instead of O(type), O(plan), O(authentication_service) and O(endpoints).
      - C(apiVersion) must be C(enmasse.io/v1beta1), C(kind) C(AddressSpace) and C(metadata.name)
        O(name). C(status) and the metadata the API server sets are ignored; an unknown key of
        C(spec) is refused, naming the nearest known key.
    type: dict
  force:
    description:
      - With O(state=absent), delete owned addresses even if they hold messages.
    type: bool
    default: false
  state:
    description:
      - C(present) records the space; C(absent) deletes its owned addresses and clears the ledger.
    type: str
    choices: [present, absent]
    default: present
seealso:
  - module: enmasse.messaging.address_space_info
  - module: enmasse.messaging.address
'''

EXAMPLES = r'''
- name: A brokered address space (connection from /etc/enmasse-messaging/spaces/myspace.json)
  enmasse.messaging.address_space:
    name: myspace
    type: brokered
    plan: brokered-single-broker
    authentication_service: {name: none-authservice, type: none}

- name: The same from an EnMasse document
  enmasse.messaging.address_space:
    name: myspace
    definition:
      apiVersion: enmasse.io/v1beta1
      kind: AddressSpace
      metadata: {name: myspace}
      spec: {type: brokered, plan: brokered-single-broker}

- name: Delete the space and every address it owns, even with messages in them
  enmasse.messaging.address_space:
    name: myspace
    state: absent
    force: true
'''

RETURN = r'''
realm:
  description:
    - Host backends with O(keycloak_url) - what was done to the space's Keycloak realm (docs/identity.md), C(changes)
      naming each part (realm, client, mapper, user profile); C(skipped) when a realm not owned was left alone.
  returned: when O(keycloak_url) is given
  type: dict
  sample: {changed: true, created: true, changes: [realm myspace created]}
address_space:
  description:
    - The address space as plain snake_case, with C(exists) and C(status).
  returned: always
  type: dict
  sample:
    name: myspace
    type: brokered
    plan: brokered-single-broker
    authentication_service: {name: none-authservice, type: none}
    endpoints: null
    exists: true
    status:
      ready: true
      phase: Active
      messages: []
      endpoints:
        - {name: amqp, host: broker1.example.com, port: 5672, protocols: [amqp], tls: true}
  contains:
    exists:
      description: The space is recorded in the ledger (after the task).
      type: bool
      returned: always
    status:
      description: C(ready), C(phase) (C(Active), C(Configuring), C(Pending), C(Failed), C(Deleted)),
        C(messages) (problems found) and C(endpoints) (C(name), C(host), C(port), C(protocols), C(tls) - true when the port speaks TLS).
      type: dict
      returned: always
changes:
  description: With O(state=absent), the addresses deleted (C(created), C(updated), C(deleted)).
  returned: when state is absent
  type: dict
diff:
  description: The recorded space before and after (for O(state=absent), before lists the owned addresses).
  returned: always
  type: dict
errors:
  description: Every validation or refusal message when the task fails.
  returned: failure
  type: list
  elements: str
'''

from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.args import KEYCLOAK_SPACE_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_APPLY_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils import args, backends, runner
from ansible_collections.enmasse.messaging.plugins.module_utils.model.inputs import SPACE_FIELDS

# name, type and plan are raw: the model checks they are strings (type=str
# would turn ``yes`` into 'True'). authentication_service has no declared
# sub-options: EnMasse's overrides is accepted and recorded as given, and
# declared ones would be recorded as nulls; the model checks name and type.
OPTIONS = dict(
    name=dict(type="raw", required=True),
    type=args.STRING_ARG,
    plan=args.STRING_ARG,
    authentication_service=dict(type="dict"),
    endpoints=dict(type="list", elements="dict"),
    definition=dict(type="dict"),
    force=args.FORCE_ARG,
    state=args.STATE_ARG,
)
OPTIONS.update(KUBERNETES_APPLY_ARGS)
OPTIONS.update(KEYCLOAK_SPACE_ARGS)


MUTUALLY_EXCLUSIVE = [("definition", k) for k in SPACE_FIELDS]


def converge(module):
    return backends.run("address_space", runner.request(module))


def main():
    runner.main(OPTIONS, converge, mutually_exclusive=MUTUALLY_EXCLUSIVE)


if __name__ == "__main__":
    main()
