"""Benchmark: converge 10,000 addresses into one standard address space.

Starts tests/integration/standard_env.py's StandardEnv (``--routers`` real
qdrouterd 1.19 routers as a full mesh, ``--brokers`` real Artemis brokers, the
auth service, the infrastructure file), then converges ``--count`` addresses
(40% anycast, 20% multicast, 30% queue, 10% topic, interleaved) through
``ansible-playbook`` (a generated playbook on localhost: the address_space
task, then enmasse.messaging.address with ``src:`` (or ``--form vars``:
``addresses: "{{ addresses }}"``), ``prune: true``; module_defaults give
infrastructure_file, catalogue_path and connection_file), and times with
``time.perf_counter``:

* the first converge and the no-change re-run (which must report changed=0),
  each as the whole ansible-playbook run and as the address task alone (the
  ansible.posix.profile_tasks callback);
* the module alone (direct invocation, ``helpers.run_module``), no-change;
* per phase (read brokers, read routers, placement, diff, apply to brokers,
  apply to routers, wait for links, statuses, ledger), by running the service
  in this process with the phases wrapped in timers: after pruning the space to
  nothing, a first converge and a re-run.

Plans: EnMasse's ``standard-small-queue``/``-topic`` cost 0.01 broker credit
and a broker holds 1.0, so two brokers take 200 stored addresses and the rest
would be Pending (quota of the pool). The benchmark therefore writes address
plans ``bench-standard-queue``/``-topic`` (router 0.001, broker 0.0004: the
4,000 stored addresses fill 1.6 brokers) and the space plan
``bench-standard`` (standard-unlimited's limits) with the plan modules;
anycast and multicast use ``standard-small-anycast``/``-multicast``.

Prints a JSON result, then a table.

    python3 bench/standard/converge.py                    # 10,000 addresses, 3 routers, 2 brokers
    python3 bench/standard/converge.py --count 500 --no-phases   # smoke
    python3 bench/standard/converge.py --profile /tmp/rerun.prof  # + cProfile of the no-change module run
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, HERE)

import helpers  # noqa: E402
import common  # noqa: E402
from standard_env import StandardEnv, build_router  # noqa: E402

SPACE = "bench"
SPACE_PLAN = "bench-standard"
PLANS = [
    {"name": "bench-standard-queue", "address_type": "queue", "address_space_type": "standard",
     "resources": {"router": 0.001, "broker": 0.0004}},
    {"name": "bench-standard-topic", "address_type": "topic", "address_space_type": "standard",
     "resources": {"router": 0.001, "broker": 0.0004}},
]
SPACE_PLAN_DEF = {"name": SPACE_PLAN, "address_space_type": "standard",
                  "resource_limits": {"router": 10000.0, "broker": 10000.0, "aggregate": 10000.0},
                  "address_plans": ["standard-small-anycast", "standard-small-multicast",
                                    "bench-standard-queue", "bench-standard-topic"]}
# of every 10 addresses: 4 anycast, 2 multicast, 3 queue, 1 topic
MIX = (("anycast", "standard-small-anycast"),) * 4 + (("multicast", "standard-small-multicast"),) * 2 + \
    (("queue", "bench-standard-queue"),) * 3 + (("topic", "bench-standard-topic"),)
TARGETS = {"first": 60.0, "rerun": 10.0}


def addresses(count):
    out = []
    for i in range(count):
        atype, plan = MIX[i % len(MIX)]
        out.append({"address": "%s-%05d" % (atype[0], i), "type": atype, "plan": plan})
    return out


class Bench(object):
    def __init__(self, env, tmp, form="src"):
        self.env = env
        self.tmp = tmp
        self.form = form
        self.defaults = {"infrastructure_file": env.infra_file, "catalogue_path": env.catalogue_path,
                         "connection_file": env.connection_file(SPACE)}

    def setup_plans(self):
        res = helpers.run_module("address_plan", {"catalogue_path": self.env.catalogue_path, "address_plans": PLANS})
        assert res.rc == 0, res.result
        res = helpers.run_module("address_space_plan", dict(catalogue_path=self.env.catalogue_path, **SPACE_PLAN_DEF))
        assert res.rc == 0, res.result

    def playbook(self, addrs, expect_changed):
        """ansible-playbook (default stdout callback + profile_tasks); returns
        (whole run, address task) seconds."""
        space_task = {"name": "space", "enmasse.messaging.address_space": {
            "name": SPACE, "type": "standard", "plan": SPACE_PLAN,
            "authentication_service": {"name": "none", "type": "none"}}}
        addr_args = {"address_space": SPACE, "prune": True}
        extra = []
        if self.form == "src":
            path = os.path.join(self.tmp, "addresses.json")
            with open(path, "w") as f:
                json.dump({"addresses": addrs}, f)
            addr_args["src"] = path
        else:
            path = os.path.join(self.tmp, "vars.json")
            with open(path, "w") as f:
                json.dump({"addresses": addrs}, f)
            addr_args["addresses"] = "{{ addresses }}"
            extra = ["-e", "@" + path]
        play = [{"hosts": "localhost", "gather_facts": False, "connection": "local",
                 "module_defaults": {"group/enmasse.messaging.all": self.defaults},
                 "tasks": [space_task, {"name": "addresses", "enmasse.messaging.address": addr_args}]}]
        pb = os.path.join(self.tmp, "play.yml")
        with open(pb, "w") as f:
            json.dump(play, f)
        env = helpers._env()
        env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks"
        cmd = ["ansible-playbook", "-i", "localhost,", pb, "-e", "ansible_python_interpreter=%s" % sys.executable] + extra
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=self.tmp, check=False)
        seconds = time.perf_counter() - t0
        recap = re.search(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", proc.stdout)
        assert proc.returncode == 0 and recap, proc.stdout[-3000:] + proc.stderr[-2000:]
        changed = int(recap.group(2))
        if expect_changed:
            assert changed >= 1, recap.group(0)
        else:
            assert changed == 0, recap.group(0) + proc.stdout[-3000:]
        task = re.search(r"^addresses -+ (\d+\.\d+)s", proc.stdout, re.M)
        return {"playbook": seconds, "task": float(task.group(1)) if task else None, "changed": changed}

    def module(self, addrs, expect_changed):
        """Direct module invocation; (seconds, bytes of its JSON result)."""
        res = helpers.run_module("address", dict(self.defaults, address_space=SPACE, addresses=addrs, prune=True))
        assert res.rc == 0 and res.changed == expect_changed, (res.changed, str(res.result)[:2000])
        return res.seconds, len(res.stdout)

    def prune_all(self):
        res = helpers.run_module("address", dict(self.defaults, address_space=SPACE, addresses=[], prune=True))
        assert res.rc == 0 and res.changed, str(res.result)[:2000]
        return res.seconds

    def phases(self, addrs, expect_changed):
        """The service in this process, its phases timed."""
        from ansible_collections.enmasse.messaging.plugins.module_utils import backends
        from ansible_collections.enmasse.messaging.plugins.module_utils.request import Request
        p = dict(self.defaults, address_space=SPACE, addresses=addrs, prune=True, force=False, state="present",
                 address=None, definition=None, src=None, return_addresses=None)
        with common.PhaseTimer() as timer:
            t0 = time.perf_counter()
            request = Request(dict(p, return_addresses="changed"))
            errors = backends.prepare(request, "address")
            timer.add("input", time.perf_counter() - t0)
            assert not errors, errors[:3]
            res = backends.host_backend(request, "address").address(request)
            total = time.perf_counter() - t0
        assert res["changed"] == expect_changed, res.get("changes")
        out = dict(timer.seconds)
        out["other"] = total - sum(out.values())
        out["total"] = total
        return out

    def count_router_entities(self):
        from ansible_collections.enmasse.messaging.plugins.module_utils.router import reader
        with self.env.session() as s:
            live, unused = reader.read_owned(s, [r.id for r in self.env.routers], check=False)
        return dict((r, len([n for n in ents if n.startswith("enmasse/%s/" % SPACE)])) for r, ents in live.items())

    def count_broker_queues(self):
        from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader
        from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient
        out = {}
        for b in self.env.brokers:
            c = JolokiaClient(b.management_url, b.management_user, b.management_password)
            unused, live = reader.read_live(c, b.name)
            out[b.name] = len([n for n in live if n.startswith(SPACE + "/")])
        return out


def profile(bench, addrs, path):
    """cProfile of the no-change module run (the module as AnsiballZ runs it)."""
    args = dict(bench.defaults, address_space=SPACE, addresses=addrs, prune=True,
                _ansible_check_mode=False, _ansible_diff=False)
    apath = os.path.join(bench.tmp, "args.json")
    with open(apath, "w") as f:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, f)
    subprocess.run([sys.executable, "-m", "cProfile", "-o", path, helpers.module_path("address"), apath],
                   env=helpers._env(), capture_output=True, text=True, check=True)
    import pstats
    st = pstats.Stats(path)
    st.sort_stats("cumulative").print_stats(25)


PHASE_ORDER = ("input", "open", "read brokers", "placement", "read routers", "desired", "diff routers",
               "diff brokers", "apply brokers", "apply routers", "ledger", "wait links", "statuses", "other", "total")


def table(result):
    lines = []
    r = result
    lines.append("%d addresses (%s), %d routers, %d brokers, form %s" % (
        r["count"], ", ".join("%s %d" % kv for kv in sorted(r["mix"].items())), r["routers"], r["brokers"], r["form"]))
    lines.append("router entities of the space per router: %s; queues/addresses per broker: %s" % (
        r["router_entities"], r["broker_entities"]))
    lines.append("")
    lines.append("| run | ansible-playbook | address task | target | verdict |")
    lines.append("|---|---:|---:|---:|---|")
    for key, label in (("first", "first converge"), ("rerun", "no-change re-run (changed=0)")):
        pb = r["playbook"][key]
        lines.append("| %s | %.2f s | %s | <= %.0f s | %s |" % (
            label, pb["playbook"], "%.2f s" % pb["task"] if pb["task"] is not None else "n/a", TARGETS[key],
            "met" if pb["playbook"] <= TARGETS[key] else "MISSED"))
    if r.get("module_first"):
        lines.append("| module alone (direct invocation), first converge | %.2f s | | | result %.1f MB |" % (
            r["module_first"], r["module_first_bytes"] / 1e6))
    lines.append("| module alone, no-change | %.2f s | | | result %.1f kB |" % (
        r["module_rerun"], r["module_rerun_bytes"] / 1e3))
    if r.get("prune"):
        lines.append("| delete all (prune, module alone) | %.2f s | | | |" % r["prune"])
    if r.get("phases"):
        lines.append("")
        lines.append("| phase (service in-process) | first converge | no-change re-run |")
        lines.append("|---|---:|---:|")
        first, again = r["phases"]["first"], r["phases"]["rerun"]
        for ph in PHASE_ORDER:
            if ph in first or ph in again:
                cells = ["%.2f s" % run[ph] if ph in run else "" for run in (first, again)]
                lines.append("| %s | %s | %s |" % (ph, cells[0], cells[1]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--routers", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=2)
    ap.add_argument("--form", choices=("src", "vars"), default="src")
    ap.add_argument("--no-phases", action="store_true")
    ap.add_argument("--profile", help="write a cProfile of the no-change module run here (and print the top)")
    ap.add_argument("--keep", action="store_true", help="keep the environment's directory")
    args = ap.parse_args()
    prefix, why = build_router()
    if prefix is None:
        raise SystemExit(why)
    base = tempfile.mkdtemp(prefix="enmasse-bench-std-")
    env = StandardEnv(base, prefix, routers=args.routers, brokers=args.brokers)
    for b in env.brokers:
        b.java_memory, b.java_options = "2G", ()  # as the broker benchmark: full JIT
    result = {"count": args.count, "routers": args.routers, "brokers": args.brokers, "form": args.form,
              "machine": common.machine(), "load_before": common.loadavg()}
    addrs = addresses(args.count)
    result["mix"] = dict((t, sum(1 for a in addrs if a["type"] == t)) for t in ("anycast", "multicast", "queue", "topic"))
    try:
        env.start()
        bench = Bench(env, base, args.form)
        bench.setup_plans()
        result["playbook"] = {"first": bench.playbook(addrs, True)}
        print("first converge: %s" % result["playbook"]["first"], file=sys.stderr)
        result["router_entities"] = bench.count_router_entities()
        result["broker_entities"] = bench.count_broker_queues()
        result["playbook"]["rerun"] = bench.playbook(addrs, False)
        print("re-run: %s" % result["playbook"]["rerun"], file=sys.stderr)
        result["module_rerun"], result["module_rerun_bytes"] = bench.module(addrs, False)
        if args.profile:
            profile(bench, addrs, args.profile)
        if not args.no_phases:
            result["prune"] = bench.prune_all()
            result["module_first"], result["module_first_bytes"] = bench.module(addrs, True)
            bench.prune_all()
            result["phases"] = {"first": bench.phases(addrs, True), "rerun": bench.phases(addrs, False)}
        result["load_after"] = common.loadavg()
    finally:
        if args.keep:
            env.stop()
            print("kept %s" % base, file=sys.stderr)
        else:
            env.cleanup()
    print(json.dumps(result, sort_keys=True))
    print()
    print(table(result))


if __name__ == "__main__":
    main()
