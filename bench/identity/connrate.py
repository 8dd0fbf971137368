"""Benchmark: connections per second through a real qdrouterd, with and
without authentication.

authenv.login_path (Keycloak 26.4.7, the space realm with ``--password-policy``,
the users, the auth service with ``backend: keycloak``, qdrouterd with the
space's listener delegating SASL PLAIN to the auth service, and an anonymous
listener). ``--procs`` client processes (connclient.py: python-qpid-proton's
event API, one Container per process), each keeping ``--inflight``
connections in flight: connect, wait for the router's ``open`` (the login
complete), close, connect again, for ``--seconds``. Rows:

* anonymous: the anonymous listener (SASL ANONYMOUS, no auth service);
* auth, cached: the space's listener; each process logs in as its own 4
  users over and over (after the first login the auth service answers from
  its cache: the router still opens a connection to the auth service and
  runs SASL with it for every client connection);
* auth, uncached: every connection a user that has not logged in yet (each
  process its own slice), so every login is a Keycloak password grant; the
  run ends when a slice is used up or after ``--seconds``.

Rate = connections opened / the longest client's first-connect-to-last-open
time. The CPU seconds of the clients (their getrusage), qdrouterd, the auth
service and Keycloak in each run (/proc) show which side is the limit; the
number of client processes is varied (``--procs 2,4``): if the rate does not
grow with more clients, the clients are not what limits it. Unmeasured
warm-up first; measured runs inside a QUIET window (common.quiet).

    python3 bench/identity/connrate.py                  # 2 and 4 processes, 10 s each
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402
import authenv  # noqa: E402

from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import realm  # noqa: E402

CACHED_USERS_PER_PROC = 4


def run(env, case, procs, inflight, seconds, user_files):
    pids = env["pids"]
    cpu = dict((k, common.cpu_of(p)) for k, p in pids.items())
    if case == "anonymous":
        clients = authenv.start_clients(env["anonymous_url"], seconds, inflight, None, procs, "ANONYMOUS")
    else:
        clients = authenv.start_clients(env["space_url"], seconds, inflight, user_files, procs, "PLAIN",
                                        once=(case == "auth, uncached"))
    res = authenv.results(clients)
    opened = sum(r["opened"] for r in res)
    refused = sum(r["refused"] for r in res)
    span = max(r["seconds"] for r in res) or 1e-9
    out = {"case": case, "procs": procs, "inflight": inflight, "opened": opened, "refused": refused,
           "seconds": span, "rate": round(opened / span, 1), "client_cpu": round(sum(r["cpu"] for r in res), 1)}
    out.update(dict(("%s_cpu" % k, round(common.cpu_of(p) - cpu[k], 1)) for k, p in pids.items()))
    if refused:
        out["condition"] = next(r["condition"] for r in res if r["condition"])
    print(json.dumps(out), flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", default="2,4")
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--uncached-users", type=int, default=1200, help="users for the uncached rows (all runs)")
    parser.add_argument("--password-policy", default=realm.PASSWORD_POLICY)
    parser.add_argument("--quiet-name", default="users-bench (bench/identity/connrate.py)")
    opts = parser.parse_args(argv)
    procs_list = [int(p) for p in opts.procs.split(",")]
    most = max(procs_list)
    root = tempfile.mkdtemp(prefix="bench-identity-connrate-")
    n_cached = CACHED_USERS_PER_PROC * most
    rows = []
    with authenv.login_path(root, n_cached + opts.uncached_users + 40, opts.password_policy) as env:
        users = env["users"]
        cached_files = [authenv.users_file(root, "cached-%d.json" % i,
                                           users[i * CACHED_USERS_PER_PROC:(i + 1) * CACHED_USERS_PER_PROC])
                        for i in range(most)]
        warm = [authenv.users_file(root, "warm-%d.json" % i, users[n_cached + 20 * i:n_cached + 20 * (i + 1)])
                for i in range(2)]
        fresh = users[n_cached + 40:]
        # warm-up: every path once (JIT of Keycloak, the router's and the service's first connections)
        run(env, "anonymous", 2, opts.inflight, 3, None)
        run(env, "auth, cached", 2, opts.inflight, 3, cached_files)
        run(env, "auth, uncached", 2, opts.inflight, 30, warm)
        offset = 0
        for procs in procs_list:
            share = len(fresh) // (len(procs_list) * procs)
            uncached_files = []
            for i in range(procs):
                uncached_files.append(authenv.users_file(root, "fresh-%d-%d.json" % (procs, i),
                                                         fresh[offset:offset + share]))
                offset += share
            with common.quiet(opts.quiet_name) as window:
                for case, files in (("anonymous", None), ("auth, cached", cached_files[:procs]),
                                    ("auth, uncached", uncached_files)):
                    row = run(env, case, procs, opts.inflight, opts.seconds, files)
                    rows.append(row)
            for row in rows[-3:]:
                row["load"] = "%s -> %s" % (window["load_before"], window["load_after"])
    print(json.dumps(rows, indent=1))
    print("| listener | client processes x in flight | connections | seconds | per second | CPU s: clients / qdrouterd / "
          "auth service / Keycloak | load |")
    print("|---|---:|---:|---:|---:|---|---|")
    for r in rows:
        print("| %s | %d x %d | %d | %.1f | %.1f | %.1f / %.1f / %.1f / %.1f | %s |" % (
            r["case"], r["procs"], r["inflight"], r["opened"], r["seconds"], r["rate"], r["client_cpu"],
            r["qdrouterd_cpu"], r["auth service_cpu"], r["keycloak_cpu"], r.get("load", "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
