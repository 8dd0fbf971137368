"""Benchmark: converge 1,000 and 10,000 queues into one brokered address space.

Starts a real ActiveMQ Artemis (the integration tests' ``ArtemisBroker``: NIO
journal, Jolokia on 127.0.0.1), creates the space with a plan that allows the
numbers (``bench-unlimited``, written to the test host's plan catalogue with
the plan modules), and times
with ``time.perf_counter``:

* bulk form: one ``enmasse.messaging.address`` invocation with ``addresses``
  holding every queue; first converge, then a no-change re-run;
* the same through ``ansible-playbook`` for the largest size, which is what
  users run, with the default stdout callback, two ways: the list in a
  variable (``addresses: "{{ addresses }}"``, the variables from an extra-vars
  file) and the list in a file (``src:``, sent to the host by the action
  plugin); the bulk form lists only changed addresses by default;
* loop: one module invocation per address, as ``loop:`` would do it, for
  ``--loop`` addresses (first run and no-change re-run). For the largest size
  the loop is sampled at several fill levels and integrated (extrapolated).

Module timings are *direct module invocation*: ``python3 plugins/modules/
address.py <args.json>`` per call, exactly what AnsiballZ runs on the target,
without ansible-playbook's per-task overhead (so the loop numbers are a lower
bound of a real ``loop:``). Results go to docs/benchmarks.md under
``## Broker convergence`` (other sections are left alone).

    python3 bench/converge/run.py                 # full run (~20-40 min on 2 cores)
    python3 bench/converge/run.py --sizes 200 --loop 50 --sample 20 --no-write   # smoke
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import helpers  # noqa: E402

SPACE = "bench"
SPACE_PLAN = "bench-unlimited"
ADDRESS_PLAN = "bench-queue"
PLANS = {
    "address_space_plans": [{"name": SPACE_PLAN, "address_space_type": "brokered",
                             "resource_limits": {"router": 0, "broker": 1000, "aggregate": 1000},
                             "address_plans": [ADDRESS_PLAN, "brokered-deadletter"]}],
    "address_plans": [{"name": ADDRESS_PLAN, "address_type": "queue", "resources": {"broker": 0.0001}}],
}
TARGETS = {"first_10k": 60.0, "rerun_10k": 10.0, "speedup": 20.0, "playbook_rerun_10k": 6.0}
SECTION = "## Broker convergence"
DOC = os.path.join(REPO, "docs", "benchmarks.md")


def queue(i):
    return {"address": "bench-q-%05d" % i, "type": "queue", "plan": ADDRESS_PLAN}


class Bench(object):
    def __init__(self, broker, connection_file, log=print):
        self.broker = broker
        self.connection_file = connection_file
        self.log = log
        self.base = {"connection_file": connection_file, "address_space": SPACE}

    # ------------------------------------------------------------- helpers
    def reset(self):
        """Empty broker and ledger, the space recorded with the bench plan."""
        self.broker.wipe()
        # the bench plans in the test host's catalogue (the connection file points to it)
        for module, key in (("address_plan", "address_plans"), ("address_space_plan", "address_space_plans")):
            res = helpers.run_module(module, {"catalogue_path": self.broker.catalogue_path, key: PLANS[key]})
            assert not res.failed, res
        res = helpers.run_module("address_space", {"connection_file": self.connection_file, "name": SPACE,
                                                   "type": "brokered", "plan": SPACE_PLAN})
        assert not res.failed, res

    def bulk(self, addresses, expect_changed):
        res = helpers.run_module("address", dict(self.base, addresses=addresses))
        assert not res.failed, res
        assert res.changed == expect_changed, (res.changed, res.get("changes"))
        if expect_changed:
            assert len(res["changes"]["created"]) == len(addresses), len(res["changes"]["created"])
        return res.seconds

    def _playbook(self, module_args, extra_vars, expect_changed):
        """ansible-playbook with the default callback (what users run); the
        outcome is read from the recap."""
        tmp = tempfile.mkdtemp(prefix="enmasse-bench-play-")
        try:
            play = [{"hosts": "localhost", "gather_facts": False, "connection": "local",
                     "tasks": [{"name": "converge", "enmasse.messaging.address": module_args}]}]
            with open(os.path.join(tmp, "play.yml"), "w") as f:
                json.dump(play, f)
            with open(os.path.join(tmp, "vars.json"), "w") as f:
                json.dump(extra_vars, f)
            cmd = ["ansible-playbook", "-i", "localhost,", os.path.join(tmp, "play.yml"),
                   "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "@" + os.path.join(tmp, "vars.json")]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=helpers._env(), cwd=tmp, check=False)
            seconds = time.perf_counter() - t0
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        recap = re.search(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", proc.stdout)
        assert proc.returncode == 0 and recap, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert (recap.group(2) != "0") == expect_changed, recap.group(0)
        return seconds

    def playbook(self, addresses, expect_changed):
        """The list in a variable, as group_vars or extra vars hold it."""
        args = {"connection_file": self.connection_file, "address_space": SPACE, "addresses": "{{ addresses }}"}
        return self._playbook(args, {"addresses": addresses}, expect_changed)

    def playbook_src(self, addresses, expect_changed):
        """The list in a file on the controller (``src``)."""
        path = os.path.join(tempfile.gettempdir(), "enmasse-bench-addresses.json")
        with open(path, "w") as f:
            json.dump({"addresses": addresses}, f)
        args = {"connection_file": self.connection_file, "address_space": SPACE, "src": path}
        try:
            return self._playbook(args, {}, expect_changed)
        finally:
            os.remove(path)

    def loop(self, addresses, expect_changed):
        """One invocation per address; returns the total seconds."""
        total = 0.0
        for a in addresses:
            res = helpers.run_module("address", dict(self.base, **a))
            assert not res.failed, res
            assert res.changed == expect_changed, res
            total += res.seconds
        return total

    def count_queues(self):
        return len([n for n in self.broker.queue_names() if n.startswith("bench-q-")])

    # ------------------------------------------------------------ scenarios
    def run_bulk(self, n, with_playbook, repeat=1):
        """First converge and no-change re-run, ``repeat`` times each from an
        empty broker; the median goes in ``<key>``, every run in ``<key>_all``."""
        addresses = [queue(i) for i in range(n)]
        runs = {}
        kinds = [("bulk", self.bulk)] + ([("playbook", self.playbook), ("playbook_src", self.playbook_src)]
                                         if with_playbook else [])
        for unused in range(repeat):
            for kind, fn in kinds:
                self.reset()
                runs.setdefault(kind + "_first", []).append(fn(addresses, True))
                assert self.count_queues() == n
                runs.setdefault(kind + "_rerun", []).append(fn(addresses, False))
                self.log("%s %6d: first %.2f s, re-run %.2f s" % (
                    kind, n, runs[kind + "_first"][-1], runs[kind + "_rerun"][-1]))
        out = {"n": n}
        for key, values in runs.items():
            out[key] = statistics.median(values)
            out[key + "_all"] = values
        return out

    def warm_up(self, n=1000):
        """One unmeasured converge, so the broker's JIT is warm as on a
        broker that has been running for a while."""
        self.reset()
        self.bulk([queue(i) for i in range(n)], True)

    def run_loop(self, n):
        addresses = [queue(i) for i in range(n)]
        self.reset()
        first = self.loop(addresses, True)
        assert self.count_queues() == n
        rerun = self.loop(addresses, False)
        self.log("loop %6d: first %.1f s, re-run %.1f s" % (n, first, rerun))
        return {"n": n, "loop_first": first, "loop_rerun": rerun}

    def run_loop_sampled(self, n, sample, fills):
        """Per-address cost of the loop when the space already holds ``fill``
        queues, for each fill; integrated piecewise linearly over 0..n."""
        points = []
        for fill in fills:
            self.reset()
            if fill:
                self.bulk([queue(i) for i in range(fill)], True)
            extra = [queue(i) for i in range(fill, fill + sample)]
            first = self.loop(extra, True) / sample
            rerun = self.loop(extra, False) / sample
            points.append((fill, first, rerun))
            self.log("loop sample at %6d queues: %.3f s/address first, %.3f s/address re-run" % (fill, first, rerun))
        est = {"first": 0.0, "rerun": 0.0}
        pts = sorted(points)
        for key, idx in (("first", 1), ("rerun", 2)):
            for (x0, *v0), (x1, *v1) in zip(pts, pts[1:]):
                est[key] += (x1 - x0) * (v0[idx - 1] + v1[idx - 1]) / 2.0
            # beyond the last sample: constant
            est[key] += (n - pts[-1][0]) * pts[-1][idx]
        return {"n": n, "sample": sample, "points": points,
                "loop_first_est": est["first"], "loop_rerun_est": est["rerun"]}


# ------------------------------------------------------------------ facts

def _cmd(args):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_facts(broker):
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
        mem = "%.0f GiB" % (kb / 1024.0 / 1024.0)
    except (OSError, AttributeError):
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else ""
    except OSError:
        pass
    java = _cmd(["java", "-version"]).splitlines()
    version = broker.jolokia().read(helpers.broker_mbean(broker.name), "Version")
    return {
        "cores": os.cpu_count(), "memory": mem, "cpu": cpu,
        "os": _os_release(),
        "python": platform.python_version(),
        "ansible_core": (_cmd(["ansible", "--version"]).splitlines() or [""])[0],
        "java": java[0] if java else "", "artemis": version,
        "jvm": "-Xmx%s, default JIT" % broker.java_memory,
    }


def _os_release():
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'PRETTY_NAME="?([^"\n]*)', f.read())
            return m.group(1) if m else ""
    except OSError:
        return ""


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return []


# ------------------------------------------------------------------ report

def verdict(value, target, better="lower"):
    ok = value <= target if better == "lower" else value >= target
    if ok:
        return "met"
    if better == "lower":
        return "MISSED by %.1f s (%.0f%% over)" % (value - target, 100.0 * (value - target) / target)
    return "MISSED (%.1fx short of %.0fx)" % (target - value, target)


def _spread(r, key):
    runs = r.get(key + "_all") or [r[key]]
    if len(runs) == 1:
        return "%.2f s" % r[key]
    return "%.2f s (%.2f-%.2f, %d runs)" % (r[key], min(runs), max(runs), len(runs))


def render(results, facts, load_before, load_after, started, args):
    bulk = dict((r["n"], r) for r in results["bulk"])
    big = max(bulk)
    lines = [SECTION, ""]
    lines.append("Measured %s by `bench/converge/run.py` (%s)." % (
        started.strftime("%Y-%m-%d %H:%M UTC"), " ".join(args)))
    lines += ["", "Machine and setup:", ""]
    lines.append("* %s cores (%s), %s RAM, %s; **shared with other engineers' jobs**: "
                 "load average %s at the start, %s at the end" % (
                     facts["cores"], facts["cpu"] or "unknown CPU", facts["memory"], facts["os"],
                     "/".join(load_before), "/".join(load_after)))
    lines.append("* ActiveMQ Artemis %s from the binary distribution, one instance, NIO journal, "
                 "Jolokia on 127.0.0.1, `--require-login`; JVM %s (%s)" % (
                     facts["artemis"], facts["jvm"], facts["java"]))
    lines.append("* Python %s, %s; modules talk to Jolokia with bulk requests (batches of 500, "
                 "4 in parallel)" % (facts["python"], facts["ansible_core"]))
    lines.append("* plans written to the host's catalogue with the plan modules: address space plan `%s` "
                 "(broker limit 1000) and address plan `%s` (broker 0.0001)" % (SPACE_PLAN, ADDRESS_PLAN))
    lines += ["", "Method: after one unmeasured 1,000-queue converge (JIT warm-up, as on a broker that "
              "has been running), wall-clock `time.perf_counter()` around each *direct module invocation* "
              "(`python3 plugins/modules/address.py args.json`, what AnsiballZ executes on the target: "
              "interpreter start, argument parsing, reading the live broker, diff, bulk apply, ledger "
              "write), and around `ansible-playbook` for the rows marked playbook. Each scenario starts "
              "from an empty broker and ledger. The loop calls the module once per address, as `loop:` "
              "would, but without ansible-playbook's per-task overhead, so it is a lower bound of a real "
              "loop. Bulk rows give the median (min-max) of the repeated runs.", ""]
    lines += ["| scenario | addresses | first converge | no-change re-run |", "|---|---:|---:|---:|"]
    for n in sorted(bulk):
        r = bulk[n]
        for kind, label in (("bulk", "bulk (`addresses`), module"),
                            ("playbook", "bulk, ansible-playbook, `addresses: \"{{ addresses }}\"`"),
                            ("playbook_src", "bulk, ansible-playbook, `src:` file")):
            if kind + "_first" in r:
                lines.append("| %s | %s | %s | %s |" % (
                    label, format(n, ","), _spread(r, kind + "_first"), _spread(r, kind + "_rerun")))
    lp = results.get("loop")
    if lp:
        lines.append("| loop (one invocation per address), module | %s | %.1f s | %.1f s |" % (
            format(lp["n"], ","), lp["loop_first"], lp["loop_rerun"]))
    sm = results.get("loop_sampled")
    if sm:
        lines.append("| loop, module, **extrapolated** | %s | ~%.0f s | ~%.0f s |" % (
            format(sm["n"], ","), sm["loop_first_est"], sm["loop_rerun_est"]))
    lines.append("")
    if sm:
        pts = ", ".join("%s queues present: %.3f s/%.3f s" % (format(f, ","), a, b) for f, a, b in sm["points"])
        lines.append("The %s-address loop was not run in full: %d addresses were looped at each fill level "
                     "(first run/re-run per address: %s) and the per-address cost integrated piecewise "
                     "linearly over 0..%s (constant beyond the last sample)." % (
                         format(sm["n"], ","), sm["sample"], pts, format(sm["n"], ",")))
        lines.append("")
    lines += ["Targets:", ""]
    if big >= 10000:
        r = bulk[big]
        lines.append("* %s addresses, first converge <= %.0f s: %.2f s, %s" % (
            format(big, ","), TARGETS["first_10k"], r["bulk_first"], verdict(r["bulk_first"], TARGETS["first_10k"])))
        lines.append("* %s addresses, no-change re-run <= %.0f s: %.2f s, %s" % (
            format(big, ","), TARGETS["rerun_10k"], r["bulk_rerun"], verdict(r["bulk_rerun"], TARGETS["rerun_10k"])))
        for kind, how in (("playbook_src", "`src:` file"), ("playbook", "list in a variable")):
            if kind + "_rerun" in r:
                lines.append("* %s addresses, ansible-playbook no-change re-run <= %.0f s (%s): %.2f s, %s" % (
                    format(big, ","), TARGETS["playbook_rerun_10k"], how, r[kind + "_rerun"],
                    verdict(r[kind + "_rerun"], TARGETS["playbook_rerun_10k"])))
    if lp and lp["n"] in bulk:
        r = bulk[lp["n"]]
        s1, s2 = lp["loop_first"] / r["bulk_first"], lp["loop_rerun"] / r["bulk_rerun"]
        lines.append("* bulk >= %.0fx faster than the loop (%s addresses): first converge %.0fx, re-run %.0fx, %s" % (
            TARGETS["speedup"], format(lp["n"], ","), s1, s2,
            verdict(min(s1, s2), TARGETS["speedup"], better="higher")))
    if sm and sm["n"] in bulk:
        r = bulk[sm["n"]]
        lines.append("* %s addresses (loop extrapolated): first converge %.0fx, re-run %.0fx faster in bulk" % (
            format(sm["n"], ","), sm["loop_first_est"] / r["bulk_first"], sm["loop_rerun_est"] / r["bulk_rerun"]))
    lines.append("")
    return "\n".join(lines)


def write_section(text, path=DOC):
    """Replace (or append) the ``## Broker convergence`` section; the rest of
    the file is kept as it is."""
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    if not old:
        old = "# Benchmarks\n\n"
    start = old.find(SECTION + "\n")
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    else:
        nxt = old.find("\n## ", start + len(SECTION))
        tail = old[nxt + 1:] if nxt >= 0 else ""
        new = old[:start] + text + ("\n" + tail if tail else "")
    with open(path, "w") as f:
        f.write(new)


def missing_tools(which=shutil.which, playbook=True):
    """What this run needs and does not find, each with what it is for and
    where it comes from; empty when everything is there. Checked before the
    broker starts."""
    missing = []  # Java and the Artemis tarball: helpers.missing_prerequisites
    if not which("xmllint"):
        missing.append("xmllint (the broker's broker.xml is the role's template, validated against Artemis' "
                       "schema as the role does; Debian/Ubuntu: libxml2-utils, Fedora/RHEL: libxml2)")
    if not which("ansible-playbook"):
        missing.append("ansible-playbook (renders the role's broker.xml%s; pip install -r requirements-test.txt)"
                       % (" and runs the playbook rows" if playbook else ""))
    return missing


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000", help="bulk sizes (default: %(default)s)")
    p.add_argument("--loop", type=int, default=1000, help="addresses looped in full (0: skip)")
    p.add_argument("--sample", type=int, default=100,
                   help="addresses looped per fill level to extrapolate the largest size (0: skip)")
    p.add_argument("--no-playbook", action="store_true", help="skip the ansible-playbook rows")
    p.add_argument("--no-write", action="store_true", help="print, do not update docs/benchmarks.md")
    p.add_argument("--repeat", type=int, default=3, help="bulk runs per size (median reported)")
    p.add_argument("--java-memory", default="2G")
    args = p.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    missing = missing_tools(playbook=not args.no_playbook)
    reason = helpers.missing_prerequisites()
    if missing or reason:
        sys.exit("cannot benchmark, missing:\n" + "\n".join("  - " + m for m in missing + ([reason] if reason else [])))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the broker on kill
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = loadavg()
    workdir = tempfile.mkdtemp(prefix="enmasse-bench-")
    broker = helpers.ArtemisBroker(workdir, name="enmasse-bench", java_memory=args.java_memory, java_options=())
    try:
        broker.create()
        broker.start()
        conn = broker.write_connection_file(os.path.join(workdir, "%s.json" % SPACE), SPACE, plan=SPACE_PLAN)
        bench = Bench(broker, conn, log=lambda s: print(s, flush=True))
        facts = machine_facts(broker)
        bench.warm_up()
        results = {"bulk": [bench.run_bulk(n, with_playbook=(n == sizes[-1] and not args.no_playbook),
                                           repeat=args.repeat) for n in sizes]}
        if args.loop:
            results["loop"] = bench.run_loop(args.loop)
        if args.sample and sizes[-1] > args.loop:
            n = sizes[-1]
            results["loop_sampled"] = bench.run_loop_sampled(n, args.sample, [0, n // 2, n - args.sample])
    finally:
        broker.stop()
    text = render(results, facts, load_before, loadavg(), started, sys.argv[1:] or ["defaults"])
    print(text)
    print(json.dumps(results, indent=1))
    if not args.no_write:
        write_section(text)
        print("written to %s" % DOC)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
