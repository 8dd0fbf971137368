"""The pass/fail rules of molecule/router's verify, as pure functions
(tests/unit/test_molecule_router_checks.py shows each one failing when its
property is broken), and a small command line run in the router containers
on the system python3 (no third-party module; qdmanage on the management
listener).

    checks.py mesh --self R --peers R,R           every peer a direct neighbour
    checks.py route --self R --to R --via R       R reaches the other only via the third
    checks.py snapshot                            the management-made entities (JSON)
    checks.py restore-time --before FILE --timeout T
                                                  seconds from the start of qdrouterd
                                                  until the entities of FILE are back

Every command prints one JSON object with a "problems" list (empty: pass).
"""
import argparse
import json
import subprocess
import sys
import time

# what the role's file and the keeper create on a router
RESTORED_TYPES = ("listener", "connector", "sslProfile", "vhost", "authServicePlugin", "address", "autoLink",
                  "linkRoute")


def mesh_problems(self_id, peers, nodes, connections):
    """Full mesh as seen from one router: each peer is a direct neighbour in
    router.node (its routerLink set) and there is exactly one open
    inter-router connection whose remote container is that peer; nothing else."""
    problems = []
    direct = sorted(n["id"] for n in nodes if n.get("id") != self_id and n.get("routerLink") is not None)
    links = [c for c in connections if c.get("role") == "inter-router" and c.get("opened", True)]
    remote = [c.get("container") for c in links]
    known = dict((n["id"], n) for n in nodes)
    for peer in sorted(peers):
        if peer not in direct:
            problems.append("%s: %s is not a direct neighbour (known: %s, nextHop: %s)"
                            % (self_id, peer, peer in known, known.get(peer, {}).get("nextHop")))
        if remote.count(peer) != 1:
            problems.append("%s: %d open inter-router connections to %s, want 1" % (self_id, remote.count(peer), peer))
    for other in sorted(set(direct + remote) - set(peers)):
        problems.append("%s: unexpected inter-router neighbour %s" % (self_id, other))
    return problems


def route_problems(self_id, target, via, nodes):
    """After the direct link to ``target`` is cut: ``target`` is still known
    and reached through ``via`` (not a direct neighbour any more)."""
    node = dict((n["id"], n) for n in nodes).get(target)
    if node is None:
        return ["%s: %s is unreachable" % (self_id, target)]
    problems = []
    if node.get("routerLink") is not None:
        problems.append("%s: %s is still a direct neighbour (the link was not cut)" % (self_id, target))
    if node.get("nextHop") != via:
        problems.append("%s: %s is reached via %s, want %s" % (self_id, target, node.get("nextHop"), via))
    return problems


def delivery_problems(sent, received):
    """Every receiver got every message sent (``received``: receiver name ->
    list of bodies); a receiver that misses one, or gets one nobody sent,
    fails. Duplicates are not counted here (see ``duplicates``)."""
    problems = []
    for name in sorted(received):
        got = received[name]
        missing = sorted(set(sent) - set(got))
        if missing:
            problems.append("%s missed %d of %d: %s" % (name, len(missing), len(sent), missing[:5]))
        stray = sorted(set(got) - set(sent))
        if stray:
            problems.append("%s got messages nobody sent: %s" % (name, stray[:5]))
    if not sent:
        problems.append("nothing was sent")
    return problems


def duplicates(received):
    """receiver name -> how many deliveries beyond the first, summed over
    its messages (0: each message once). qdrouterd 1.19 delivers presettled
    multicast twice to a receiver on another router of a 3-router full mesh
    (one copy per path; skupper-router issue 1365), so verify reports this
    number and does not fail on it."""
    return dict((name, len(got) - len(set(got))) for name, got in received.items())


def isolation_problems(bodies, count):
    """Two spaces, same address: ``bodies`` is space -> what its receiver got
    (message bodies start with the sending space's name and a dash). Each
    space's receiver got at least ``count`` of its own space's messages and
    none of the other's."""
    problems = []
    for space in sorted(bodies):
        own = [b for b in bodies[space] if str(b).startswith(space + "-")]
        foreign = [b for b in bodies[space] if not str(b).startswith(space + "-")]
        if foreign:
            problems.append("%s received another space's messages: %s" % (space, foreign[:5]))
        if len(own) < count:
            problems.append("%s received %d of its own messages, want at least %d" % (space, len(own), count))
    return problems


def rolling_problems(result, gap_bound, min_accepted=10):
    """The clients of a rolling upgrade (dataplane.py ``rolling``): for each
    queue, every accepted message was received (lost = accepted minus
    received), the producer got at least ``min_accepted`` accepted, and
    neither client's longest gap exceeded ``gap_bound`` seconds (a guard: the
    gap is reported, the bound only catches a client that never recovered).
    Returns (problems, report lines)."""
    problems, report = [], []
    queues = result.get("queues") or {}
    if not queues:
        problems.append("no queue was exercised")
    for name in sorted(queues):
        q = queues[name]
        lost = sorted(set(q["accepted"]) - set(q["received"]))
        dup = len(q["received"]) - len(set(q["received"]))
        report.append("GAP queue=%s producer longest=%.2f s (reconnects %d) consumer longest=%.2f s (reconnects %d); "
                      "accepted %d, received %d, lost %d, duplicates %d"
                      % (name, q["producer_longest_gap"], q["producer_reconnects"], q["consumer_longest_gap"],
                         q["consumer_reconnects"], len(q["accepted"]), len(set(q["received"])), len(lost), dup))
        if lost:
            problems.append("%s lost %d accepted messages: %s" % (name, len(lost), lost[:5]))
        if len(q["accepted"]) < min_accepted:
            problems.append("%s: only %d messages accepted (want at least %d)" % (name, len(q["accepted"]),
                                                                                  min_accepted))
        for who in ("producer", "consumer"):
            if q[who + "_longest_gap"] > gap_bound:
                problems.append("%s: the %s's longest gap %.2f s is above the bound %s s"
                                % (name, who, q[who + "_longest_gap"], gap_bound))
    return problems, report


def missing_entities(before, now):
    """The (type, name) pairs of ``before`` not in ``now``."""
    have = set(tuple(e) for e in now)
    return sorted(tuple(e) for e in before if tuple(e) not in have)


def _query(entity_type):
    # the role's qdmanage wrapper reaches the management listener (TLS, the router's certificate)
    out = subprocess.run(["qdmanage", "query", "--type=" + entity_type],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, universal_newlines=True)
    return json.loads(out.stdout)


def snapshot():
    return sorted([t, e["name"]] for t in RESTORED_TYPES for e in _query(t))


def _monotonic_start():
    """CLOCK_MONOTONIC of the start of qdrouterd's current main process, and its pid."""
    out = subprocess.run(["systemctl", "show", "-p", "ExecMainStartTimestampMonotonic", "-p", "MainPID",
                          "qdrouterd.service"], stdout=subprocess.PIPE, check=True, universal_newlines=True)
    props = dict(line.split("=", 1) for line in out.stdout.split())
    return int(props["ExecMainStartTimestampMonotonic"]) / 1e6, props["MainPID"]


def restore_time(before, timeout):
    """Wait until every entity of ``before`` is on the router again; the
    seconds from the start of qdrouterd's process until then."""
    deadline = time.monotonic() + timeout
    missing = before
    while time.monotonic() < deadline:
        try:
            missing = missing_entities(before, snapshot())
        except (subprocess.CalledProcessError, ValueError):
            missing = before
        if not missing:
            break
        time.sleep(0.25)
    now = time.monotonic()
    started, pid = _monotonic_start()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    result = {"seconds": round(now - started, 1), "pid": pid, "entities": len(before), "loadavg": load,
              "problems": ["not restored within %ss: %s" % (timeout, missing[:10])] if missing else []}
    return result


def main(argv=None):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("mesh")
    s.add_argument("--self", dest="self_id", required=True)
    s.add_argument("--peers", required=True)
    s = sub.add_parser("route")
    s.add_argument("--self", dest="self_id", required=True)
    s.add_argument("--to", required=True)
    s.add_argument("--via", required=True)
    sub.add_parser("snapshot")
    s = sub.add_parser("restore-time")
    s.add_argument("--before", required=True)
    s.add_argument("--timeout", type=float, default=120)
    s = sub.add_parser("rolling")
    s.add_argument("--result", required=True)
    s.add_argument("--gap-bound", type=float, default=120)
    a = p.parse_args(argv)
    if a.cmd == "mesh":
        nodes = _query("org.apache.qpid.dispatch.router.node")
        result = {"problems": mesh_problems(a.self_id, a.peers.split(","), nodes, _query("connection")),
                  "direct": sorted(n["id"] for n in nodes if n.get("routerLink") is not None)}
    elif a.cmd == "route":
        nodes = _query("org.apache.qpid.dispatch.router.node")
        result = {"problems": route_problems(a.self_id, a.to, a.via, nodes),
                  "nodes": dict((n["id"], n.get("nextHop")) for n in nodes)}
    elif a.cmd == "rolling":
        with open(a.result) as f:
            problems, report = rolling_problems(json.load(f), a.gap_bound)
        result = {"problems": problems, "report": report}
    elif a.cmd == "snapshot":
        result = {"entities": snapshot(), "problems": []}
    else:
        with open(a.before) as f:
            result = restore_time(json.load(f)["entities"], a.timeout)
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
