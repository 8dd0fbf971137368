# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of enmasse.messaging.capacity_job: the waiting.

The module starts the planning job's service and waits at most ``interval``
seconds per call; this plugin calls it again (``start: false``) until the
run has finished, and prints the job's progress line (phase, Spark stages
in flight) on the controller as soon as it changes, so a long run shows
where it is while the task is still running.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = "enmasse.messaging.capacity_job"


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(("service", "progress_file", "interval", "timeout", "start"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        try:
            timeout = int(args.get("timeout", 7200))
        except (TypeError, ValueError):
            raise AnsibleActionFail("timeout: %r is not a number of seconds" % (args.get("timeout"),))
        host = task_vars.get("inventory_hostname") if task_vars else None
        t0 = time.time()
        res = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        changed = bool(res.get("changed"))
        # systemd forgets a oneshot's InvocationID when it ends: keep the run's
        invocation = res.get("invocation_id")
        last = None
        while not res.get("failed") and res.get("running"):
            line = res.get("line")
            if line and line != last:
                display.display("%s: %s" % (host, line))
                last = line
            if time.time() - t0 > timeout:
                res.update(failed=True, msg="the capacity planning job is still running after %d s (timeout); "
                                            "it was not stopped" % timeout)
                break
            res = self._execute_module(module_name=MODULE, module_args=dict(args, start=False), task_vars=task_vars)
            invocation = res.get("invocation_id") or invocation
        if res.get("line") and res.get("line") != last and not res.get("failed"):
            display.display("%s: %s" % (host, res["line"]))
        result.update(res)
        result["invocation_id"] = res.get("invocation_id") or invocation
        result["changed"] = changed or bool(res.get("changed"))
        return result
