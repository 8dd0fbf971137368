# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress of a run: the phases (start, read, the aggregation's steps,
plan, report, write) with their durations, and the Spark stages in flight
(tasks done of total, from the status tracker).

While the job runs, a thread writes the state every ``interval`` seconds as
JSON to ``--progress-file`` (atomically: a reader never sees half a file)
and prints a line on stderr when it changes (the journal of the planning
service shows it; the capacity_planner role's ``run`` entry point prints the
file while it waits). The finished phases and their seconds go into the plan
(``job.phases``) and the report.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys
import tempfile
import threading
import time


class Progress(object):
    def __init__(self, path=None, interval=2.0, stream=None):
        self.path = path
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.time()
        self.phases = []            # [name, start, end or None]
        self.state = "running"
        self.sc = None
        self._seen = set()
        self._lock = threading.Lock()
        self._tick_lock = threading.Lock()
        self._stop = threading.Event()
        self._last_line = None
        self._thread = None

    # ---- phases ----------------------------------------------------------
    def phase(self, name):
        """End the current phase (if any) and start ``name``."""
        now = time.time()
        with self._lock:
            if self.phases and self.phases[-1][2] is None:
                self.phases[-1][2] = now
            self.phases.append([name, now, None])
        self._tick()

    def attach(self, sc):
        """Follow the stages of this SparkContext."""
        self.sc = sc

    def detach(self):
        self._tick()
        self.sc = None

    def durations(self):
        """[{"phase", "seconds"}] in order; a running phase counts up to now."""
        now = time.time()
        with self._lock:
            return [{"phase": n, "seconds": round((e or now) - s, 3)} for n, s, e in self.phases]

    # ---- the thread ---------------------------------------------------------
    def start(self):
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()
        return self

    def finish(self, state):
        """``state``: done or failed. Writes the final state."""
        with self._lock:
            if self.phases and self.phases[-1][2] is None:
                self.phases[-1][2] = time.time()
            self.state = state
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._tick()

    def _run(self):
        while not self._stop.wait(self.interval):
            self._tick()

    def _stages(self):
        sc = self.sc
        if sc is None:
            return []
        try:
            st = sc.statusTracker()
            out = []
            for sid in sorted(st.getActiveStageIds()):
                i = st.getStageInfo(sid)
                if i is None:
                    continue
                self._seen.add(sid)
                out.append({"stage": sid, "attempt": i.currentAttemptId, "tasks": i.numTasks,
                            "done": i.numCompletedTasks, "running": i.numActiveTasks, "failed": i.numFailedTasks})
            return out
        except Exception:       # the context is stopping: no stages to report
            return []

    def snapshot(self):
        stages = self._stages()
        active = set(s["stage"] for s in stages)
        with self._lock:
            current = self.phases[-1][0] if self.phases and self.phases[-1][2] is None else None
            state = self.state
        return {"state": state, "phase": current, "elapsed": round(time.time() - self.t0, 1),
                "phases": self.durations(), "stages": stages,
                "stages_done": len(self._seen - active), "updated": time.time(), "pid": os.getpid()}

    @staticmethod
    def line(snap):
        """One human line of a snapshot (what the role prints)."""
        st = "; ".join("stage %d%s: %d/%d tasks done, %d running%s" % (
            s["stage"], " (retry %d)" % s["attempt"] if s["attempt"] else "", s["done"], s["tasks"], s["running"],
            ", %d failed" % s["failed"] if s["failed"] else "") for s in snap["stages"])
        return "[%6.0fs] %s%s%s; %d stage(s) done" % (
            snap["elapsed"], snap["state"] if snap["state"] != "running" else "",
            snap["phase"] or "", (": " + st) if st else "", snap["stages_done"])

    def _tick(self):
        with self._tick_lock:
            self._tick_locked()

    def _tick_locked(self):
        snap = self.snapshot()
        if self.path:
            try:
                d = os.path.dirname(os.path.abspath(self.path)) or "."
                fd, tmp = tempfile.mkstemp(prefix=".progress.", suffix=".tmp", dir=d)
                with os.fdopen(fd, "w") as f:
                    json.dump(snap, f)
                os.chmod(tmp, 0o644)
                os.replace(tmp, self.path)
            except OSError:
                pass
        ln = self.line(dict(snap, elapsed=0))
        if ln != self._last_line:
            self._last_line = ln
            try:
                self.stream.write("capacity_plan: %s\n" % self.line(snap))
                self.stream.flush()
            except (OSError, ValueError):
                pass
