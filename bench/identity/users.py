"""Benchmark: 1,000 messaging users converged into a space's realm, then the
no-change re-run (issue 20 item 6; goals <= 30 s and <= 5 s).

A real Keycloak 26.4.7 (common.keycloak: the integration tests' server, H2
``dev-file`` database, HTTP on loopback, the JVM's default JIT), a realm made
by the code ``address_space`` runs (``keycloak/realm.py`` ensure_realm, with
``--password-policy``: the realm default unless given; ``""`` is Keycloak's
own default, argon2id), then per round:

* first run: ``enmasse.messaging.messaging_user`` in the bulk form
  (``users``: ``--users`` items) invoked directly
  (``python3 plugins/modules/messaging_user.py args.json``, what AnsiballZ runs
  on the target: interpreter start, validation, reading the realm, the hash
  checks, the writes), wall clock ``time.perf_counter()``;
* re-run: the same task again; it must report ``changed: false``
  (``--reruns N``: N of them; the first after the create meets Keycloak's user
  cache cold for the new users, the later ones warm).

User ``user-NNNN``: send and recv on ``app-<N mod --apps>/*``, recv on
``events/*`` (with the default 100 apps: 201 groups, 3 per user), a password of
its own. Each round uses a new realm. The CPU seconds of Keycloak's JVM in
each run come from /proc. Every measured run is inside a QUIET window
(common.quiet). Prints one JSON document and a table.

    python3 bench/identity/users.py                       # 1,000 users, 2 rounds
    python3 bench/identity/users.py --users 200 --rounds 1 --password-policy ""   # Keycloak's default hashing
"""

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402
import helpers  # noqa: E402  (tests/integration, on the path by common)

from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import client as kc_client  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import realm  # noqa: E402


def workload(n, apps):
    return [{"username": "user-%04d" % i, "password": "pw-%04d-%s" % (i, os.urandom(6).hex()),
             "authorization": [{"addresses": ["app-%d/*" % (i % apps)], "operations": ["send", "recv"]},
                               {"addresses": ["events/*"], "operations": ["recv"]}]} for i in range(n)]


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed_run(server, jvm, args, label, quiet_name):
    with common.quiet(quiet_name) as window:
        cpu0, mod0 = common.cpu_of(jvm), children_cpu()
        res = helpers.run_module("messaging_user", args, timeout=1800)
        cpu, module_cpu = common.cpu_of(jvm) - cpu0, children_cpu() - mod0
    if res.rc != 0:
        raise SystemExit("%s failed: %s" % (label, json.dumps(res.result)[:2000]))
    changes = res.result.get("changes") or {}
    out = {"seconds": round(res.seconds, 2), "keycloak_cpu": round(cpu, 1), "module_cpu": round(module_cpu, 1),
           "changed": res.result.get("changed"),
           "created": len(changes.get("created") or []), "updated": len(changes.get("updated") or []),
           "load_before": window["load_before"], "load_after": window["load_after"]}
    print("%s: %.2f s, CPU s: Keycloak %.1f, module %.1f; changed=%s, load %s -> %s" % (
        label, out["seconds"], out["keycloak_cpu"], out["module_cpu"], out["changed"], out["load_before"],
        out["load_after"]), flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--apps", type=int, default=100, help="distinct app-N/* patterns (groups: 2 per app + 1)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--password-policy", default=realm.PASSWORD_POLICY,
                        help="the realm's passwordPolicy (default: address_space's default); '' = Keycloak's")
    parser.add_argument("--warmup", type=int, default=200, help="users converged once, unmeasured, first (JIT)")
    parser.add_argument("--reruns", type=int, default=1,
                        help="no-change re-runs per round (the first meets Keycloak's user cache cold)")
    parser.add_argument("--quiet-name", default="users-bench (bench/identity/users.py)")
    opts = parser.parse_args(argv)
    base = tempfile.mkdtemp(prefix="bench-identity-users-")
    server = common.keycloak(os.path.join(base, "keycloak"))
    results = {"users": opts.users, "apps": opts.apps, "password_policy": opts.password_policy, "rounds": []}
    try:
        jvm = common.java_pid(server)
        client = kc_client.KeycloakClient(server.url, server.admin_user, server.admin_password)
        conn = dict(keycloak_url=server.url, keycloak_admin_user=server.admin_user,
                    keycloak_admin_password=server.admin_password)
        if opts.warmup:
            realm.ensure_realm(client, "warmup", password_policy=opts.password_policy)
            warm = dict(conn, address_space="warmup", users=workload(opts.warmup, opts.apps))
            res = helpers.run_module("messaging_user", warm)
            helpers.run_module("messaging_user", warm)
            print("warm-up (%d users, not measured): %.1f s" % (opts.warmup, res.seconds), flush=True)
            realm.remove_realm(client, "warmup")
        for n in range(1, opts.rounds + 1):
            space = "bench-users-%d" % n
            realm.ensure_realm(client, space, password_policy=opts.password_policy)
            args = dict(conn, address_space=space, users=workload(opts.users, opts.apps))
            first = timed_run(server, jvm, args, "round %d first run (%d users)" % (n, opts.users), opts.quiet_name)
            again = timed_run(server, jvm, args, "round %d re-run" % n, opts.quiet_name)
            later = [timed_run(server, jvm, args, "round %d re-run %d" % (n, k + 2), opts.quiet_name)
                     for k in range(opts.reruns - 1)]
            if first["created"] != opts.users or any(r["changed"] for r in [again] + later):
                raise SystemExit("unexpected result: first %s, re-runs %s" % (first, [again] + later))
            results["rounds"].append({"first": first, "rerun": again, "later_reruns": later})
            realm.remove_realm(client, space)
            time.sleep(2)
    finally:
        server.stop()
    firsts = [r["first"]["seconds"] for r in results["rounds"]]
    reruns = [r["rerun"]["seconds"] for r in results["rounds"]]
    results["median_first"] = statistics.median(firsts)
    results["median_rerun"] = statistics.median(reruns)
    print(json.dumps(results, indent=1))
    print("| round | first run | CPU s Keycloak / module | re-run | CPU s Keycloak / module | load first | load re-run |")
    print("|---|---:|---:|---:|---:|---|---|")
    for i, r in enumerate(results["rounds"], 1):
        f, a = r["first"], r["rerun"]
        print("| %d | %.2f s | %.1f / %.1f | %.2f s | %.1f / %.1f | %s -> %s | %s -> %s |" % (
            i, f["seconds"], f["keycloak_cpu"], f["module_cpu"], a["seconds"], a["keycloak_cpu"], a["module_cpu"],
            f["load_before"], f["load_after"], a["load_before"], a["load_after"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
