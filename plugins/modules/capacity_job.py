#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: capacity_job
short_description: Run the capacity planning job now and report its progress while it runs
version_added: "0.2.0"
description:
  - Starts the capacity planner's systemd service (the C(capacity_planner) role installs
    C(enmasse-capacity-plan.service)) and waits for it to finish. While it runs, the
    controller prints one line every O(interval) seconds with the job's phase and the Spark
    stages in flight (tasks done of total), read from the job's progress file.
  - The result holds the phases of the run and how long each took, the job's systemd result
    and, when it failed, the last lines of that run's journal.
  - When the service is already running (its timer fired), the module follows that run
    instead of starting another one.
  - The waiting is done by the action plugin, one short module call per O(interval); the
    module itself waits at most O(interval) seconds per call.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.attributes
attributes:
  check_mode:
    support: full
    details: Starts nothing; reports that the job would run.
  diff_mode:
    support: none
options:
  service:
    description: The oneshot systemd service of the planning job.
    type: str
    default: enmasse-capacity-plan.service
  progress_file:
    description: The progress file the job writes (its C(--progress-file)).
    type: path
    default: /var/lib/enmasse-capacity/progress.json
  interval:
    description: Seconds between two progress lines (and the longest one module call waits).
    type: int
    default: 15
  timeout:
    description: Seconds the job may run; the task fails after that (the job is not stopped).
    type: int
    default: 7200
  start:
    description:
      - Start the service (V(true)), or only wait for the run in progress and report it (V(false),
        what the action plugin uses after the first call).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Run the capacity planning job, print its progress, fail with its log when it fails
  enmasse.messaging.capacity_job:
    interval: 10
  register: job

- name: How long each phase took
  ansible.builtin.debug:
    msg: "{{ job.phases | map(attribute='phase') | zip(job.phases | map(attribute='seconds')) | list }}"
"""

RETURN = r"""
running:
  description: The run has not finished yet (only in the module's own result, never after the action plugin).
  returned: always
  type: bool
result:
  description: systemd's C(Result) of the run (C(success), C(exit-code), C(signal), C(timeout), ...).
  returned: when the run finished
  type: str
  sample: success
exit_status:
  description: The exit status of the job (C(2) - bad input, with a message; C(1) - unexpected failure).
  returned: when the run finished
  type: int
progress:
  description: The job's last progress state (phase, Spark stages in flight, phase durations).
  returned: always
  type: dict
line:
  description: The progress as one line (what the controller prints).
  returned: always
  type: str
phases:
  description: The phases of the run and their seconds, in order.
  returned: always
  type: list
  elements: dict
  sample: [{phase: start Spark, seconds: 6.1}, {phase: "aggregate: counter deltas and per-series statistics", seconds: 33.0}]
invocation_id:
  description: systemd's id of the run (C(journalctl _SYSTEMD_INVOCATION_ID=<id>) shows its log).
  returned: always
  type: str
log:
  description: The last lines of the failed run's journal.
  returned: when the run failed
  type: str
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule


def _show(module, service):
    rc, out, err = module.run_command(["systemctl", "show", service, "-p", "ActiveState", "-p", "Result",
                                       "-p", "ExecMainStatus", "-p", "InvocationID", "-p", "LoadState"])
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed: %s" % (service, err.strip() or out.strip()))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _running(state):
    return state.get("ActiveState") in ("activating", "active", "deactivating", "reloading")


def _progress(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (IOError, OSError, ValueError):
        return {}


def _line(p):
    if not p:
        return "starting"
    st = "; ".join("stage %d%s: %d/%d tasks done, %d running%s" % (
        s["stage"], " (retry %d)" % s["attempt"] if s.get("attempt") else "", s["done"], s["tasks"], s["running"],
        ", %d failed" % s["failed"] if s.get("failed") else "") for s in p.get("stages") or [])
    return "[%5.0fs] %s%s; %d Spark stage(s) done" % (
        p.get("elapsed") or 0, p.get("phase") or p.get("state") or "", (": " + st) if st else "",
        p.get("stages_done") or 0)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            service=dict(type="str", default="enmasse-capacity-plan.service"),
            progress_file=dict(type="path", default="/var/lib/enmasse-capacity/progress.json"),
            interval=dict(type="int", default=15),
            timeout=dict(type="int", default=7200),
            start=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    service = p["service"]
    if p["interval"] < 1 or p["timeout"] < 1:
        module.fail_json(msg="interval and timeout must be >= 1 (got interval=%d, timeout=%d)"
                         % (p["interval"], p["timeout"]))
    state = _show(module, service)
    if state.get("LoadState") != "loaded":
        module.fail_json(msg="%s is not installed on this host (LoadState %s): apply the "
                         "enmasse.messaging.capacity_planner role first" % (service, state.get("LoadState")))
    if module.check_mode:
        module.exit_json(changed=True, running=False, progress={}, line="would run %s" % service, phases=[])
    changed = False
    if p["start"] and not _running(state):
        before = state.get("InvocationID")
        # a stale file of the previous run must not be read as this run's
        try:
            os.unlink(p["progress_file"])
        except OSError:
            pass
        rc, out, err = module.run_command(["systemctl", "start", "--no-block", service])
        if rc != 0:
            module.fail_json(msg="systemctl start %s failed: %s" % (service, err.strip() or out.strip()))
        changed = True
        # the start is queued: wait until it is this run that systemd reports
        deadline = time.time() + 60
        while time.time() < deadline:
            state = _show(module, service)
            if _running(state) or (state.get("InvocationID") and state.get("InvocationID") != before):
                break
            time.sleep(0.2)
    deadline = time.time() + p["interval"]
    while _running(state) and time.time() < deadline:
        time.sleep(min(1.0, max(0.0, deadline - time.time())))
        state = _show(module, service)
    prog = _progress(p["progress_file"])
    res = dict(changed=changed, running=_running(state), progress=prog, line=_line(prog),
               phases=prog.get("phases") or [], invocation_id=state.get("InvocationID"))
    if not res["running"]:
        res["result"] = state.get("Result")
        try:
            res["exit_status"] = int(state.get("ExecMainStatus") or 0)
        except ValueError:
            res["exit_status"] = None
        if res["result"] != "success":
            argv = ["journalctl", "--no-pager", "-o", "cat", "-n", "60", "-u", service]
            if state.get("InvocationID"):
                argv.append("_SYSTEMD_INVOCATION_ID=" + state["InvocationID"])
            rc, out, err = module.run_command(argv)
            res["log"] = out
            module.fail_json(msg="the capacity planning job failed (%s, exit status %s):\n%s"
                             % (res["result"], res["exit_status"], out), **res)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
