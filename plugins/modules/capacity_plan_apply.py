#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: capacity_plan_apply
short_description: Decide which capacity plan changes to make now, within guardrails
version_added: "0.1.0"
description:
  - Reads the JSON plan of the capacity job (C(capacity_job), C(docs/capacity-planning.md)) and decides
    what of its proposal for an infrastructure's standard pool to do in this run - brokers and routers to
    add (taken from the spare hosts, in their order), brokers and routers to drain, queue partitions to
    move - within the guardrails of C(docs/day2-design.md) (a stale plan, a cooldown, scale out before
    scale in, per-run limits, a floor). Every step it does not take is returned in RV(refused) with the
    guardrail and why, and as a warning.
  - With mode V(apply) in O(guardrails) and something to do it reports C(changed) and appends the decision to
    the O(history) file (JSON Lines); the next runs read it for the cooldown. The playbooks that carry the
    decision out use RV(add), RV(drain) and RV(moves). With mode V(report) (the default) it
    decides the same, writes nothing and never reports C(changed).
  - Run it on the control host (where the plan and the history are).
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.attributes
attributes:
  check_mode:
    support: full
    details: Decides and reports the same, C(changed) included; writes no history.
  diff_mode:
    support: full
    details: The pool before and after (added hosts, draining hosts, the moves).
options:
  plan:
    description: The capacity job's JSON plan (C(schema_version 1)).
    type: path
    required: true
  infra:
    description: The infrastructure of the plan whose standard pool is decided on.
    type: str
    default: default
  brokers:
    description: The broker hosts of the pool now (the plan must have been made for exactly these).
    type: list
    elements: str
    required: true
  routers:
    description: The router hosts now.
    type: list
    elements: str
    default: []
  spare_brokers:
    description: Hosts ready to become brokers, in the order they are taken.
    type: list
    elements: str
    default: []
  spare_routers:
    description: Hosts ready to become routers, in the order they are taken.
    type: list
    elements: str
    default: []
  guardrails:
    description:
      - Keys - C(mode) (V(report) or V(apply), default V(report)), C(max_hosts_changed) (1),
        C(max_moves) (20), C(max_bytes_moved) (no limit), C(cooldown) (3600 s), C(min_brokers) (2),
        C(min_routers) (2), C(plan_max_age) (7200 s), C(min_valid_window_ratio) (0.9).
      - An unknown key or a bad value fails the task before anything is read or written.
    type: dict
    default: {}
  history:
    description: The decisions made so far (JSON Lines, appended to; created 0640 when missing).
    type: path
    default: /var/lib/enmasse-messaging/day2/history.jsonl
"""

EXAMPLES = r"""
- name: What would the loop do with this plan (report only)
  enmasse.messaging.capacity_plan_apply:
    plan: /var/lib/enmasse-messaging/capacity/plan.json
    infra: prod
    brokers: "{{ groups['brokers'] }}"
    routers: "{{ groups['routers'] }}"
    spare_brokers: "{{ groups['brokers_spare'] | default([]) }}"
  register: decision

- name: Decide for real, one host per run, at most 10 moves
  enmasse.messaging.capacity_plan_apply:
    plan: /var/lib/enmasse-messaging/capacity/plan.json
    infra: prod
    brokers: "{{ groups['brokers'] }}"
    routers: "{{ groups['routers'] }}"
    guardrails:
      mode: apply
      max_moves: 10
"""

RETURN = r"""
act:
  description: Whether the decision is to be carried out (V(apply) mode and not refused whole).
  returned: always
  type: bool
add:
  description: Hosts to add, per kind.
  returned: always
  type: dict
  sample: {"brokers": ["broker-4"], "routers": []}
drain:
  description: Hosts to drain (and then remove), per kind.
  returned: always
  type: dict
  sample: {"brokers": [], "routers": []}
moves:
  description: The plan's queue moves to make now (address_space, address, partition, from, to, bytes, reason).
  returned: always
  type: list
  elements: dict
refused:
  description: Every step not taken now, with the guardrail and why.
  returned: always
  type: list
  elements: dict
  sample: [{"step": "plan", "guardrail": "cooldown", "why": "last change 12 min ago (< 60 min); nothing done"}]
history_record:
  description: The record appended to O(history), or null when nothing was written.
  returned: always
  type: dict
plan_generated_at:
  description: When the plan was made.
  returned: always
  type: str
"""

from ansible_collections.enmasse.messaging.plugins.module_utils import capacity_apply, runner


def main():
    d = capacity_apply.DEFAULTS
    module = runner.new_module(dict(
        plan=dict(type="path", required=True),
        infra=dict(type="str", default=d["infra"]),
        brokers=dict(type="list", elements="str", required=True),
        routers=dict(type="list", elements="str", default=d["routers"]),
        spare_brokers=dict(type="list", elements="str", default=d["spare_brokers"]),
        spare_routers=dict(type="list", elements="str", default=d["spare_routers"]),
        guardrails=dict(type="dict", default=d["guardrails"]),
        history=dict(type="path", default=d["history"]),
    ), connection=False)

    def action():
        result = capacity_apply.run(module.params, module.check_mode)
        if not module._diff:
            result.pop("diff")
        return result

    runner.run_module(module, action)


if __name__ == "__main__":
    main()
