#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: address
short_description: Manage the addresses (queues, topics, subscriptions, dead letters) of an address space
version_added: "0.1.0"
description:
  - Converges the addresses of an EnMasse-style address space to the given data, idempotently,
    with check mode and diff, in C(brokered) address spaces (one ActiveMQ Artemis broker) and
    C(standard) address spaces (a router mesh and a broker pool, docs/standard-spaces.md; there also
    C(anycast) and C(multicast)). The brokered shapes follow.
  - A C(queue) is an ANYCAST address with a durable ANYCAST queue of the same name; a C(topic) is a
    MULTICAST address; a C(subscription) is a durable MULTICAST queue named after the subscription on
    its topic's address (clients consume from C(<topic>::<subscription>)); a C(deadletter) is shaped
    like a queue. Settings (O(message_ttl), O(message_redelivery), O(deadletter), O(expiry), merged
    over the address plan's) become Artemis address settings of the address.
  - The current state is always read from the live broker (a few bulk management requests), compared
    with the desired state and changed with bulk requests, so thousands of addresses converge in
    seconds. Use the bulk form (O(addresses)) for many addresses.
  - All input is validated before anything is touched (names, types, plans allowed by the address
    space plan, references, immutable fields, quota); any violation fails the task with every
    message and changes nothing.
  - Everything the module creates is recorded in the ownership ledger (O(ledger_path)). O(prune) and
    O(state=absent) only ever touch addresses in the ledger. An owned address deleted by hand on the
    broker is created again. An address that exists on the broker but is not owned is adopted
    (recorded in the ledger) when listed.
  - The address space's plan comes from the ledger (recorded by M(enmasse.messaging.address_space))
    or the connection file's C(plan). Plans are looked up in the host's plan catalogue
    (O(catalogue_path), managed with M(enmasse.messaging.address_plan) and
    M(enmasse.messaging.address_space_plan)); a plan it does not have is an error.
  - Quota - an address that is new, or whose plan changes, must fit the address space plan's
    C(resource_limits) with the addresses that stay; the error names its index in the task and its name.
    Addresses that exist with the same plan never fail; a space already over quota (its plan changed
    since) is reported as a warning with the numbers.
  - Refused, with a message naming field, value and rule - changing the type of an address, the topic
    of a subscription or C(subscription.max_consumers); deleting an address that still holds
    messages unless O(force=true) (the message names the address and its message count).
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.connection
  - enmasse.messaging.connection.address_space
  - enmasse.messaging.kubernetes
  - enmasse.messaging.kubernetes.apply
  - enmasse.messaging.attributes
  - enmasse.messaging.attributes.converge
attributes:
  diff_mode:
    details: Before and after are keyed by address and hold only the changed addresses.
options:
  address:
    description:
      - Single form. The address (the AMQP address string, unique within the address space, no
        whitespace, must not start with C(_!) or C(!!), no C(::)).
      - A string. The string options of the single form are not converted - a YAML boolean or number
        (C(yes), C(12345)) is refused, not turned into C(True) or C('12345'); quote it.
      - Mutually exclusive with O(addresses), O(definition) and O(src).
    type: raw
  type:
    description:
      - Single form. Type of the address. A C(brokered) space supports C(queue), C(topic),
        C(subscription) and C(deadletter). Immutable. A string.
    type: raw
  plan:
    description:
      - Single form. Address plan (for example C(brokered-queue)); it must be allowed by the address
        space plan and be a plan for O(type). A string.
    type: raw
  topic:
    description:
      - Single form, subscriptions only. The topic address the subscription belongs to. Immutable.
        A string.
    type: raw
  deadletter:
    description:
      - Single form, queues and topics. A C(deadletter) address that receives messages that could
        not be delivered (Artemis C(deadLetterAddress)). A string.
    type: raw
  expiry:
    description:
      - Single form, queues and topics. A C(deadletter) address that receives expired messages
        (Artemis C(expiryAddress)). A string.
    type: raw
  message_ttl:
    description:
      - Single form, queues and topics only (as in EnMasse). A mapping with the bounds of the time to
        live of messages, in milliseconds (Artemis C(minExpiryDelay) and C(maxExpiryDelay)).
      - C(minimum) and C(maximum) - integers from 1 to 9223372036854775807 (a Java long), C(minimum) not
        greater than C(maximum).
      - The value is checked by the same rule as in O(addresses) and O(definition), with the same
        message - a value that is not a mapping (C(5000)), an unknown key, a string
        (C('5')), a float (C(1.5), C(1e20)) or a boolean is refused.
    type: raw
  message_redelivery:
    description:
      - Single form, queues, topics and dead letter addresses. A mapping with the redelivery settings
        (delays in milliseconds).
      - C(maximum_delivery_attempts) - Artemis C(maxDeliveryAttempts), an integer from 1 to 2147483647
        (a Java int), or -1 for unlimited.
      - C(redelivery_delay) - Artemis C(redeliveryDelay), an integer from 0 to 9223372036854775807 (a Java long).
      - C(redelivery_delay_multiplier) - Artemis C(redeliveryMultiplier), a finite number >= 1 (a Java double).
      - C(maximum_delivery_delay) - Artemis C(maxRedeliveryDelay), an integer from 0 to 9223372036854775807.
      - Checked by the same rule as in O(addresses) and O(definition) - a value that is not a mapping,
        an unknown key, a string, a float for an integer or a boolean is refused.
    type: raw
  subscription:
    description:
      - Single form, subscriptions only. Immutable. A mapping with C(max_consumers) - the consumers allowed
        at once, an integer from 1 to 2147483647 (a Java int), default C(1).
      - Checked by the same rule as in O(addresses) and O(definition) - a value that is not a mapping
        (C(2)) or an unknown key is refused.
    type: raw
  definition:
    description:
      - Single form. An EnMasse C(enmasse.io/v1beta1) C(Address) document, instead of the fields
        above, or an C(AddressList) (C(items) a list of C(Address) documents).
      - C(apiVersion) must be C(enmasse.io/v1beta1) and C(kind) C(Address) (or C(AddressList)).
        C(metadata.name) is C(<address space>.<name>) - the address space part must be
        O(address_space), the name part a Kubernetes name (lowercase letters, digits, C(-) and C(.),
        each dot-separated part starting and ending with a letter or digit). The legacy
        C(spec.addressSpace), when given, must be O(address_space).
      - C(status) and the metadata the API server sets (C(uid), C(resourceVersion), C(labels),
        C(annotations), C(namespace), ...) are ignored. An unknown key of C(spec) (such as
        C(messageTtl.minimim)) is refused, naming the nearest known key; EnMasse would ignore it.
    type: dict
  addresses:
    description:
      - Bulk form. List of addresses, each a plain mapping with the keys of the single form
        (C(address), C(type), C(plan), ...) or an EnMasse C(Address) document. An item may have its
        own C(state). An EnMasse C(AddressList) item stands for its C(items).
      - An unknown key of a plain item is refused, naming the nearest known key.
      - Mutually exclusive with the single-form options.
    type: list
    elements: dict
  src:
    description:
      - Bulk form, from a file. A YAML or JSON file holding the list of addresses (as in O(addresses)),
        a mapping with an C(addresses) list (a vars file works), or an EnMasse C(AddressList).
      - The file is on the controller, found like the C(src) of M(ansible.builtin.copy) (the role's or
        playbook's C(files/) first). It is read as data, not templated, sent to the managed host as
        JSON and read there, so a list of thousands of addresses costs neither templating nor an echo
        in the task's C(invocation).
      - Mutually exclusive with O(addresses) and the single-form options.
    type: path
  prune:
    description:
      - Bulk form. Delete the owned addresses of the address space that are not listed in
        O(addresses). Addresses not in the ledger are never deleted.
    type: bool
    default: false
  state:
    description:
      - C(present) creates or updates the addresses; C(absent) deletes them if they are owned.
    type: str
    choices: [present, absent]
    default: present
  return_addresses:
    description:
      - Which addresses the result lists in RV(addresses).
      - V(all) lists every address named in the task, V(changed) only those created, updated or
        deleted (or that would be, in check mode), V(none) none at all (RV(changes) still names them).
      - Default V(changed) in the bulk form (O(addresses) or O(src)), where echoing thousands of unchanged
        addresses costs the controller more than converging them; V(all) in the single form.
    type: str
    choices: [all, changed, none]
  force:
    description:
      - Allow deleting addresses that still hold messages (their messages are lost).
    type: bool
    default: false
notes:
  - A subscription cannot have settings of its own in a brokered space (Artemis applies address
    settings per address); give them to its topic.
seealso:
  - module: enmasse.messaging.address_info
  - module: enmasse.messaging.address_space
'''

EXAMPLES = r'''
- name: One queue
  enmasse.messaging.address:
    address_space: myspace
    address: orders
    type: queue
    plan: brokered-queue
    deadletter: orders-dlq
  delegate_to: "{{ groups['brokers'][0] }}"

- name: Many addresses at once, removing owned ones that are not listed
  enmasse.messaging.address:
    address_space: myspace
    prune: true
    addresses:
      - {address: orders-dlq, type: deadletter, plan: brokered-deadletter}
      - {address: orders, type: queue, plan: brokered-queue, deadletter: orders-dlq,
         message_redelivery: {maximum_delivery_attempts: 5, redelivery_delay: 1000}}
      - {address: events, type: topic, plan: brokered-topic, message_ttl: {maximum: 60000}}
      - {address: audit, type: subscription, plan: brokered-subscription, topic: events,
         subscription: {max_consumers: 2}}

- name: An EnMasse Address document
  enmasse.messaging.address:
    address_space: myspace
    definition:
      apiVersion: enmasse.io/v1beta1
      kind: Address
      metadata: {name: myspace.invoices}
      spec: {address: invoices, type: queue, plan: brokered-queue}

- name: Delete a queue even if it holds messages
  enmasse.messaging.address:
    address_space: myspace
    address: orders
    state: absent
    force: true

- name: Explicit connection (no connection file)
  enmasse.messaging.address:
    address_space: myspace
    management_url: http://127.0.0.1:8161/console/jolokia
    management_user: admin
    management_password: "{{ vault_artemis_password }}"
    broker_name: myspace
    ledger_path: /var/lib/artemis/myspace/data/enmasse-owned.json
    address: orders
    type: queue
    plan: brokered-queue
'''

RETURN = r'''
addresses:
  description:
    - The addresses named in the task, each a plain address with its C(status), as O(return_addresses)
      selects them (by default every one in the single form, only the changed ones in the bulk form).
      Settings are the effective ones, the plan's values overridden by the address's own.
    - Addresses deleted by the task have C(status.phase=Deleted).
  returned: always
  type: list
  elements: dict
  sample:
    - address: orders
      type: queue
      plan: brokered-queue
      deadletter: orders-dlq
      status: {ready: true, phase: Active, message_count: 0, consumers: 0, owned: true, messages: []}
  contains:
    status:
      description: State on the broker.
      type: dict
      returned: always
      contains:
        ready:
          description: The address exists on the broker with its queue.
          type: bool
          returned: always
        phase:
          description: C(Active), C(Configuring) (incomplete), C(Pending) (not on the broker) or C(Deleted).
          type: str
          returned: always
        message_count:
          description:
            - Messages held (for a topic, in all its subscriptions).
            - Null where the backend cannot tell (an anycast or multicast address of a standard space holds
              none on a broker; an operator on a cluster that does not report it).
          type: int
          returned: always
        consumers:
          description:
            - Consumers attached.
            - Null where the backend cannot tell (in standard spaces consumers attach to the routers; a cluster
              whose operator does not report it).
          type: int
          returned: always
        owned:
          description: The address is owned by the collection (in the ownership ledger; on a cluster, labelled).
          type: bool
          returned: always
        messages:
          description: Why the address is not ready.
          type: list
          elements: str
          returned: always
        brokers:
          description: Standard spaces - the pool brokers the address is placed on (its homes).
          type: list
          elements: str
          returned: when the space is standard
        routers:
          description: Standard spaces - the routers whose entities were checked.
          type: list
          elements: str
          returned: when the space is standard
        message_counts:
          description: Standard spaces - messages held per broker of a stored address (a partitioned queue has one
            entry per partition).
          type: dict
          returned: when the space is standard and the address is stored (queue, topic, deadletter)
        draining:
          description: Standard spaces - old brokers the routers still empty after a plan change.
          type: list
          elements: str
          returned: when the address is draining
changes:
  description: Names of the addresses created, updated and deleted (or that would be, in check mode).
  returned: always
  type: dict
  sample: {created: [orders], updated: [], deleted: [old-queue]}
diff:
  description: Before and after of the changed addresses only, keyed by address.
  returned: always
  type: dict
  sample: {before: {orders: {address: orders, type: queue, plan: brokered-queue}},
           after: {orders: {address: orders, type: queue, plan: brokered-queue, deadletter: dlq}}}
security_settings:
  description:
    - Brokered spaces whose broker has realm users (docs/identity.md, Brokered spaces) - the addresses whose
      exact-match security setting for those users was set or removed (or would be, in check mode).
  returned: when the broker has realm users
  type: dict
  sample: {set: [orders/us], removed: []}
errors:
  description: Every validation or refusal message (field, value, rule), when the task fails.
  returned: failure
  type: list
  elements: str
failed_addresses:
  description: Addresses whose change the broker refused; the others were applied and recorded.
  returned: failure after a partial change
  type: list
  elements: str
'''

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import KUBERNETES_APPLY_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils import args, backends, runner

# The string options are raw and the model checks them (model/types.py): a
# type=str option would turn ``address: yes`` into 'True'. The mappings are
# raw too: type=dict with options crashes inside Ansible on a value that is
# not a mapping (``message_ttl: 5000``: "argument of type 'int' is not
# iterable"), and type=int sub-options would turn '5' and 5.0 into 5 while the
# same values in ``addresses`` or ``definition`` are refused; the model's rule
# (model/types.py) is the one rule for every form, with one message.
RAW = args.STRING_ARG
OPTIONS = dict(
    args.ADDRESS_SPACE_ARG,
    address=RAW,
    type=RAW,
    plan=RAW,
    topic=RAW,
    deadletter=RAW,
    expiry=RAW,
    message_ttl=RAW,
    message_redelivery=RAW,
    subscription=RAW,
    definition=dict(type="dict"),
    addresses=dict(type="list", elements="dict"),
    src=dict(type="path"),
    prune=dict(type="bool", default=False),
    return_addresses=dict(type="str", choices=list(backends.REPORT_CHOICES)),
    state=args.STATE_ARG,
    force=args.FORCE_ARG,
)
OPTIONS.update(KUBERNETES_APPLY_ARGS)
# the forms: the single form (address and its fields), definition,
# addresses, src - exactly one. The fields of the single form need address.
# (state=present needs type and plan in the single form only, which
# required_if cannot say: the model reports it.)
FORMS = ("address", "definition", "addresses", "src")
FIELDS = ("type", "plan", "topic", "deadletter", "expiry", "message_ttl", "message_redelivery", "subscription")
MUTUALLY_EXCLUSIVE = ([(a, b) for i, a in enumerate(FORMS) for b in FORMS[i + 1:]]
                      + [(f, form) for f in FIELDS for form in FORMS[1:]])
REQUIRED_ONE_OF = [FORMS]
REQUIRED_BY = dict((f, "address") for f in FIELDS)


def converge(module):
    return backends.run("address", runner.request(module))


def main():
    runner.main(OPTIONS, converge, mutually_exclusive=MUTUALLY_EXCLUSIVE, required_one_of=REQUIRED_ONE_OF,
                required_by=REQUIRED_BY)


if __name__ == "__main__":
    main()
