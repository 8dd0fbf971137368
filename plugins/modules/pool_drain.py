#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: pool_drain
short_description: Move the stored messages off a standard pool broker that leaves the pool
version_added: "0.1.0"
description:
  - Scale in (C(docs/standard-spaces.md), "A broker leaving the pool"). The broker must already be
    C(draining) in the infrastructure file (C(standard_pool_state=draining) on its host, then site.yml) -
    its addresses have new homes and the routers pull from it what consumers take. This module moves
    what is left - queues nobody consumes, durable subscriptions, dead letters - to the new homes,
    broker to broker over AMQP as the pool's router user.
  - A message is accepted on the leaving broker only after its new home accepted the copy (never lost;
    a crash in between can leave a copy on both, and a message with a C(message-id) carries Artemis'
    C(_AMQ_DUPL_ID) so the new home drops the second copy). After it, converge the spaces
    (M(enmasse.messaging.address)) to release the broker's queues.
  - With O(address_space), O(address), O(partition) and O(to) it re-homes one partition of a queue instead (a
    capacity plan's move, C(playbooks/apply_plan.yml), C(docs/apply-plan.md)); the broker stays active. A first
    call, while the partition still lives on O(broker), makes O(to) its home and O(broker) draining for it in the
    space's ledger (RV(rehomed)); then converge the space (M(enmasse.messaging.address) creates the queue on
    O(to), the routers send there); then calls until RV(moves) is empty move what is left on O(broker) to O(to),
    the same way as for a broker leaving the pool; a last converge releases the old queue.
  - Not a resource with a C(state) - an action on one broker; running it again on an empty broker
    changes nothing. Run it on the control host (the first router).
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.attributes
attributes:
  check_mode:
    support: full
    details: Reads the live counts and returns what would move; moves nothing.
  diff_mode:
    support: full
    details: Messages per queue on the broker before and after.
requirements:
  - python-qpid-proton on the control host (only to move).
options:
  broker:
    description: The pool broker leaving the pool (its name in the infrastructure file, the host's short name).
    type: str
    required: true
  infrastructure_file:
    description: The standard infrastructure file (written by site.yml on the control host).
    type: path
    default: /etc/enmasse-messaging/standard.json
  timeout:
    description: Seconds to connect, and to wait for the new home to accept one message.
    type: int
    default: 30
  idle:
    description: A queue is done when no message arrives from it for this many seconds.
    type: float
    default: 2.0
  address_space:
    description: With O(address), O(partition) and O(to) - re-home one partition of this standard space's queue.
    type: str
  address:
    description: The queue whose partition is re-homed.
    type: str
  partition:
    description: The partition (its index in the address's brokers, as in the capacity plan's C(moves)).
    type: int
  to:
    description: The active broker that becomes the partition's home.
    type: str
"""

EXAMPLES = r"""
- name: What would move off broker-2 (check mode)
  enmasse.messaging.pool_drain:
    broker: broker-2
  check_mode: true
  register: to_move

- name: Move what is left on broker-2 to the new homes
  enmasse.messaging.pool_drain:
    broker: broker-2

- name: Re-home partition 0 of s1/orders from broker-1 to broker-2 (then converge s1, then call again until moves is empty)
  enmasse.messaging.pool_drain:
    broker: broker-1
    address_space: s1
    address: orders
    partition: 0
    to: broker-2
"""

RETURN = r"""
moves:
  description:
    - One per queue with messages on the broker - C(address_space), C(address), C(type), C(source) (the queue
      there), C(to) (the new home), C(target) (the address or fully qualified queue sent to), C(count) (messages
      before), C(moved) (not in check mode).
  returned: always
  type: list
  elements: dict
messages:
  description: Messages moved (in check mode, messages that would move; on a re-home's first call, messages on the broker now).
  returned: always
  type: int
rehomed:
  description: The call re-homed the partition in the ledger (or would, in check mode); converge the space next.
  returned: when O(address) is given
  type: bool
"""

from ansible_collections.enmasse.messaging.plugins.module_utils import runner
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as _infra
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mover
from ansible_collections.enmasse.messaging.plugins.module_utils.standard.service import StandardService


def _queue(move):
    return "%s/%s" % (move["address_space"], move["address"])


def main():
    module = runner.new_module(dict(
        broker=dict(type="str", required=True),
        infrastructure_file=dict(type="path", default=_infra.DEFAULT_INFRA_FILE),
        timeout=dict(type="int", default=30),
        idle=dict(type="float", default=2.0),
        address_space=dict(type="str"),
        address=dict(type="str"),
        partition=dict(type="int"),
        to=dict(type="str"),
    ), connection=False, required_together=[("address_space", "address", "partition", "to")])

    def action():
        p = module.params
        infra = _infra.load_infra(p["infrastructure_file"])
        runner.hide_secrets(module, *_infra.infra_secrets(infra))
        if p["address"] is not None:
            result = mover.rehome(StandardService(infra), infra, p["broker"], p["address_space"], p["address"],
                                  p["partition"], p["to"], check_mode=module.check_mode, timeout=p["timeout"],
                                  idle=p["idle"])
        else:
            result = mover.drain(StandardService(infra), infra, p["broker"], check_mode=module.check_mode,
                                 timeout=p["timeout"], idle=p["idle"])
        if module._diff:
            left = [] if module.check_mode else [m for m in result["moves"] if m["count"] > m.get("moved", 0)]
            result["diff"] = {"before": {p["broker"]: dict((_queue(m), m["count"]) for m in result["moves"])},
                              "after": {p["broker"]: dict((_queue(m), m["count"] - m["moved"]) for m in left)}}
        return result

    runner.run_module(module, action)


if __name__ == "__main__":
    main()
