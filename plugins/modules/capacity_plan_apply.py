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
  - Run it on the control host (where the plan, the infrastructure file and the history are).
  - A decision module, not a resource - it has no C(state). It changes nothing on brokers or routers itself;
    C(playbooks/apply_plan.yml) carries the steps out (C(docs/apply-plan.md)). The plan is stale (refused
    whole) when its C(brokers_before) differs from the live pool, its C(job.end) is older than C(plan_max_age)
    or its C(data_quality.valid_window_ratio) is under C(min_valid_window_ratio).
  - When the plan's data ends after the last change in the history, RV(confirmation) says whether it confirms
    that change (the pool needs no change and no move); in V(apply) mode its verdict is appended to the history
    once.
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
    details: The pool before and after - its brokers (added hosts, draining hosts) and where each moved partition lives.
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
    description:
      - The broker names of the pool now (the plan must have been made for exactly these).
      - One of O(brokers) and O(infrastructure_file) is required.
    type: list
    elements: str
  infrastructure_file:
    description:
      - The standard infrastructure file (site.yml writes it on the control host); the live pool's brokers are
        its brokers (active and draining), and the ledgers of its address spaces say where each partition lives
        (a move whose partition left its C(from) is refused).
    type: path
  routers:
    description: The router hosts now.
    type: list
    elements: str
    default: []
  spare_brokers:
    description:
      - Hosts ready to become brokers (the inventory group C(brokers_spare)), in the order they are taken. The
        plan's new brokers (C(<infra>-broker-N)) are only a count - Ansible creates no machines.
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
  alerts:
    description:
      - The critical-alert guardrail - what Alertmanager answered to C(GET /api/v2/alerts?active=true&silenced=false&inhibited=false)
        (C(playbooks/tasks/apply_plan_alerts.yml) reads it). While an active alert whose label C(severity) is one of
        O(alerts.severities) fires, the plan is refused whole (guardrail C(critical-alert), naming each alert's
        C(alertname) and C(instance)); when the read failed (O(alerts.error)) it is refused too (guardrail
        C(alertmanager-unreachable), naming the URL - fail closed).
      - Omitted or null - no alert guardrail.
    type: dict
    suboptions:
      url:
        description: The Alertmanager URL that was read (named in the refusals, its password redacted).
        type: str
        required: true
      alerts:
        description: Its answer, the list of alerts of the API v2 (each with C(labels) and C(status)).
        type: raw
      error:
        description: Why Alertmanager could not be read (null when it was).
        type: str
      severities:
        description: The values of the label C(severity) that block.
        type: list
        elements: str
        default: [critical]
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

- name: Decide for real, one host per run, at most 10 moves (the live pool from the infrastructure file)
  enmasse.messaging.capacity_plan_apply:
    plan: /var/lib/enmasse-messaging/capacity/plan.json
    infra: prod
    infrastructure_file: /etc/enmasse-messaging/standard.json
    routers: "{{ groups['routers'] }}"
    spare_brokers: "{{ groups['brokers_spare'] | default([]) | map('extract', hostvars, 'inventory_hostname_short') }}"
    guardrails:
      mode: apply
      max_moves: 10
"""

RETURN = r"""
act:
  description: Whether the decision is to be carried out (V(apply) mode and not refused whole).
  returned: always
  type: bool
steps:
  description:
    - The steps to carry out, in order - C(action) V(add) (C(kind), C(host), C(for) - the plan's name it stands
      for), V(move) (C(address_space), C(address), C(partition), C(from), C(to), C(bytes)) or V(drain) (C(kind),
      C(host)). Empty when RV(act) is false.
  returned: always
  type: list
  elements: dict
  sample: [{"action": "move", "address_space": "s1", "address": "orders", "partition": 0, "from": "broker-1",
            "to": "broker-2", "bytes": 1024}]
add_for:
  description: For each spare host added, the plan's name of the new broker it stands for.
  returned: always
  type: dict
  sample: {"spare-1": "prod-broker-3"}
confirmation:
  description:
    - Whether this plan confirms the last change of the history (C(of) - its time, C(converged), C(why)); null
      when there is no change before the plan's data to confirm, or the plan is stale.
  returned: always
  type: dict
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
  sample: [{"step": "plan", "guardrail": "plan-age",
            "why": "job.end '2026-11-27T03:00:00+00:00' is 180 min old: older than plan_max_age 7200 s (120 min); nothing done"}]
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
from ansible_collections.enmasse.messaging.plugins.module_utils.model import day2


def main():
    d = capacity_apply.DEFAULTS
    module = runner.new_module(dict(
        plan=dict(type="path", required=True),
        infra=dict(type="str", default=d["infra"]),
        brokers=dict(type="list", elements="str"),
        infrastructure_file=dict(type="path"),
        routers=dict(type="list", elements="str", default=d["routers"]),
        spare_brokers=dict(type="list", elements="str", default=d["spare_brokers"]),
        spare_routers=dict(type="list", elements="str", default=d["spare_routers"]),
        guardrails=dict(type="dict", default=d["guardrails"]),
        history=dict(type="path", default=d["history"]),
        alerts=dict(type="dict", options=dict(
            url=dict(type="str", required=True),
            alerts=dict(type="raw"),
            error=dict(type="str"),
            severities=dict(type="list", elements="str", default=list(day2.ALERT_SEVERITIES)),
        )),
    ), connection=False, required_one_of=[("brokers", "infrastructure_file")],
        mutually_exclusive=[("brokers", "infrastructure_file")])

    def action():
        result = capacity_apply.run(module.params, module.check_mode)
        if not module._diff:
            result.pop("diff")
        return result

    runner.run_module(module, action)


if __name__ == "__main__":
    main()
