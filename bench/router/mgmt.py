"""Benchmark: router management through one ManagementSession
(plugins/module_utils/router/client.py) against real qdrouterd 1.19.

Starts a mesh (tests/integration/routers.py RouterMesh, default 3 routers),
then with ``time.perf_counter``, for ``--count`` router.config.address
entities (default 10,000):

* local: CREATE, QUERY (paged), DELETE on the router the session is
  connected to;
* remote: the same on another router of the mesh, through
  ``_topo/0/<id>/$management``;
* read_owned + plan_changes + apply_changes of ``--count`` owned addresses
  spread over every router (the reader/diff/apply path the modules use),
  then the no-change re-run.

Prints the timings (seconds) and the rate; writes nothing.

    python3 bench/router/mgmt.py                   # 10,000 entities, 3 routers
    python3 bench/router/mgmt.py --count 1000 --routers 1 --repeat 1
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import routers  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.router import apply, diff, engine, protocol, reader  # noqa: E402

ADDRESS = reader.KINDS["address"]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def crud(session, count, router, page):
    names = ["bench/%06d" % i for i in range(count)]
    t_create, replies = timed(lambda: session.execute(
        [protocol.Request("CREATE", ADDRESS, n, router=router, attributes={"prefix": n, "distribution": "balanced"})
         for n in names]))
    bad = [r for r in replies if not r.ok]
    if bad:
        raise SystemExit("CREATE failed: %s" % bad[0].error())
    t_query, rows = timed(lambda: session.query(ADDRESS, ["name", "prefix", "distribution"], router=router, page=page))
    if sum(1 for r in rows if r["name"].startswith("bench/")) != count:
        raise SystemExit("QUERY returned %d rows" % len(rows))
    t_delete, replies = timed(lambda: session.execute([protocol.Request("DELETE", ADDRESS, n, router=router)
                                                       for n in names]))
    bad = [r for r in replies if not r.ok]
    if bad:
        raise SystemExit("DELETE failed: %s" % bad[0].error())
    return t_create, t_query, t_delete


def converge(session, ids, count):
    desired = dict((r, {}) for r in ids)
    for i in range(count):
        name = "enmasse/bench/%06d" % i
        desired[ids[i % len(ids)]][name] = {"type": "address", "prefix": "bench/%06d" % i, "waypoint": i % 2 == 0}

    def run():
        live, unused = reader.read_owned(session, ids)
        changes = diff.plan_changes(desired, live)
        return apply.check_applied(apply.apply_changes(session, changes))

    first, result = timed(run)
    assert len(result["done"]) == count, len(result["done"])
    again, result = timed(run)
    assert not result["done"]
    cleanup, result = timed(lambda: apply.check_applied(apply.apply_changes(
        session, diff.plan_changes(dict((r, {}) for r in ids), reader.read_owned(session, ids)[0]))))
    return first, again, cleanup


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--routers", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement (the median is printed)")
    ap.add_argument("--page", type=int, default=reader.READ_PAGE)
    ap.add_argument("--window", type=int, default=engine.DEFAULT_WINDOW)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="enmasse-bench-router-") as tmp:
        mesh = routers.RouterMesh(tmp, args.routers)
        with mesh:
            session = mesh.session(0, window=args.window, timeout=60)
            targets = [("local", None)] + ([("remote", mesh.ids[-1])] if args.routers > 1 else [])
            print("qdrouterd 1.19.0, %d router(s), %d entities, window %d, page %d, median of %d"
                  % (args.routers, args.count, args.window, args.page, args.repeat))
            for label, router in targets:
                runs = [crud(session, args.count, router, args.page) for unused in range(args.repeat)]
                for i, op in enumerate(("CREATE", "QUERY", "DELETE")):
                    t = statistics.median(r[i] for r in runs)
                    each = ", ".join("%.3f" % r[i] for r in runs)
                    print("%-6s %-6s %8.3f s  %8.0f /s   (runs: %s)" % (label, op, t, args.count / t, each))
            first, again, cleanup = converge(session, mesh.ids, args.count)
            print("converge %d owned addresses over %d router(s): first %.3f s, no-change re-run %.3f s, "
                  "prune all %.3f s" % (args.count, args.routers, first, again, cleanup))
            session.close()


if __name__ == "__main__":
    main()
