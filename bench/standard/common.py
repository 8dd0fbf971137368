"""Shared by the standard-space benchmarks: machine facts and a phase timer
that wraps the standard service's steps in place (exclusive time: a phase
called inside another is not counted twice)."""

import os
import platform
import re
import subprocess
import time


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[:3]
    except OSError:
        return []


def _cmd(args):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine():
    cpu, mem = "", ""
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else ""
        with open("/proc/meminfo") as f:
            mem = "%.0f GiB" % (int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) / 1048576.0)
    except (OSError, AttributeError):
        pass
    return {"cores": os.cpu_count(), "cpu": cpu, "memory": mem, "python": platform.python_version(),
            "uptime": _cmd(["uptime"]), "ansible_core": (_cmd(["ansible", "--version"]).splitlines() or [""])[0],
            "java": (_cmd(["java", "-version"]).splitlines() or [""])[0]}


class PhaseTimer(object):
    """Wraps the standard service's steps for the duration of a ``with``."""

    def __init__(self):
        self.seconds = {}
        self._stack = []
        self._undo = []

    def add(self, phase, seconds):
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    def wrap(self, owner, attr, phase):
        orig = getattr(owner, attr)
        timer = self

        def wrapped(*a, **kw):
            t0 = time.perf_counter()
            timer._stack.append(0.0)
            try:
                return orig(*a, **kw)
            finally:
                inner = timer._stack.pop()
                spent = time.perf_counter() - t0
                timer.add(phase, spent - inner)
                if timer._stack:
                    timer._stack[-1] += spent
        setattr(owner, attr, wrapped)
        self._undo.append((owner, attr, orig))

    def __enter__(self):
        from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import apply as artemis_apply
        from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra, routers
        from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as s
        for owner, attr, phase in (
                (s, "_open", "open"),
                (s.StandardService, "read_brokers", "read brokers"),
                (s, "placement_for", "placement"),
                (s.StandardService, "read_routers", "read routers"),
                (s, "desired_routers", "desired"),
                (s.StandardService, "per_router", "desired"),
                (s, "desired_brokers", "desired"),
                (s, "owned_on_brokers", "desired"),
                (routers, "diff", "diff routers"),
                (s, "broker_changes", "diff brokers"),
                (artemis_apply, "apply_requests", "apply brokers"),
                (routers, "apply", "apply routers"),
                (infra.SpaceLedger, "save", "ledger"),
                (s, "_wait_ready", "wait links"),
                (s, "address_statuses", "statuses")):
            self.wrap(owner, attr, phase)
        return self

    def __exit__(self, *exc):
        for owner, attr, orig in reversed(self._undo):
            setattr(owner, attr, orig)
        self._undo = []
        return False
