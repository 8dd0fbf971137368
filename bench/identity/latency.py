"""Benchmark: login latency (p50/p99) through the auth service's Keycloak
backend, uncached and cached, with a real SASL PLAIN client exchange.

authenv.login_path: Keycloak 26.4.7, the space realm (``--password-policy``),
``--users`` messaging users, the auth service (``backend: keycloak``,
cache_ttl 600 s), qdrouterd with the space's listener (SASL PLAIN relayed to
the auth service) and an anonymous listener. One client process
(connclient.py, python-qpid-proton), one connection at a time; the time of a
login is from connect to the router's AMQP ``open`` (TCP, SASL PLAIN with the
router, which relays it to the auth service: a new connection to it, its
check, its ``open`` with the identity and address-authz back; then the
router's ``open`` to the client). Rows:

* anonymous: the same client on the anonymous listener (what is not the
  login: TCP, AMQP, the client);
* uncached: each user's first login (the auth service asks Keycloak: an
  OAuth2 password grant, Keycloak verifies the password hash of the policy);
* cached: the same users again (the auth service's cache: a PBKDF2 of 1,000
  iterations, no Keycloak).

Unmeasured warm-up first (``--warmup`` users log in twice, 300 anonymous
connections). Measured runs inside a QUIET window (common.quiet).

    python3 bench/identity/latency.py                       # 500 logins each
    python3 bench/identity/latency.py --password-policy ""  # Keycloak's default hashing (argon2id)
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


def percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    k = (len(values) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return round(values[lo] + (values[hi] - values[lo]) * (k - lo), 2)


def stats(times):
    return {"n": len(times), "p50": percentile(times, 50), "p90": percentile(times, 90),
            "p99": percentile(times, 99), "max": max(times) if times else None}


def one(env, url, seconds, users_path=None, mech="PLAIN"):
    procs = authenv.start_clients(url, seconds, 1, [users_path] if users_path else None, 1, mech,
                                  once=bool(users_path), times=True)
    (res,) = authenv.results(procs)
    if res["refused"]:
        raise SystemExit("refused logins: %s" % res)
    return res


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logins", type=int, default=500, help="users measured (uncached, then cached)")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--password-policy", default=realm.PASSWORD_POLICY)
    parser.add_argument("--quiet-name", default="users-bench (bench/identity/latency.py)")
    opts = parser.parse_args(argv)
    root = tempfile.mkdtemp(prefix="bench-identity-latency-")
    with authenv.login_path(root, opts.logins + opts.warmup, opts.password_policy) as env:
        warm = authenv.users_file(root, "warm.json", env["users"][:opts.warmup])
        measured = authenv.users_file(root, "measured.json", env["users"][opts.warmup:])
        one(env, env["anonymous_url"], 3, mech="ANONYMOUS")
        one(env, env["space_url"], 600, warm)
        one(env, env["space_url"], 600, warm)
        out = {"password_policy": opts.password_policy, "logins": opts.logins}
        cpu = dict((k, common.cpu_of(p)) for k, p in env["pids"].items())
        with common.quiet(opts.quiet_name) as window:
            anon = one(env, env["anonymous_url"], 5, mech="ANONYMOUS")
            uncached = one(env, env["space_url"], 600, measured)
            cached = one(env, env["space_url"], 600, measured)
        out["cpu"] = dict((k, round(common.cpu_of(p) - cpu[k], 1)) for k, p in env["pids"].items())
        out["load"] = [window["load_before"], window["load_after"]]
        for name, res in (("anonymous", anon), ("uncached", uncached), ("cached", cached)):
            out[name] = dict(stats(res["times"]), client_cpu=res["cpu"])
    print(json.dumps(out, indent=1))
    print("| login | n | p50 ms | p90 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in ("anonymous", "uncached", "cached"):
        s = out[name]
        print("| %s | %d | %s | %s | %s | %s |" % (name, s["n"], s["p50"], s["p90"], s["p99"], s["max"]))
    print("load %s -> %s; CPU s in the window: %s" % (out["load"][0], out["load"][1], out["cpu"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
