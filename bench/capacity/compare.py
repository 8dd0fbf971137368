# -*- coding: utf-8 -*-
"""Compare two aggregate documents (the job's --out-aggregates and a peer's):
every table, row by row on its key, every field; numbers to a relative
tolerance, everything else exactly.

    python compare.py job.json peer.json [--tolerance 1e-9]
"""

import argparse
import json
import sys

KEYS = {
    "address_node": ("infra", "address_space", "address", "node", "node_kind"),
    "address_kind": ("infra", "address_space", "address", "node_kind"),
    "node_windows": ("infra", "address_space", "node", "node_kind", "ws"),
    "node_throughput": ("infra", "node", "node_kind", "ws"),
    "space_windows": ("infra", "address_space", "ws"),
}


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compare(a, b, tolerance=1e-9):
    """-> {"values": n compared, "max_relative_difference": x, "problems": [...]}"""
    problems = []
    worst = 0.0
    n = 0
    for table, key in KEYS.items():
        ra = dict((tuple(r[k] for k in key), r) for r in a.get(table) or [])
        rb = dict((tuple(r[k] for k in key), r) for r in b.get(table) or [])
        if set(ra) != set(rb):
            problems.append("%s: %d rows only in the first, %d only in the second (e.g. %s)" % (
                table, len(set(ra) - set(rb)), len(set(rb) - set(ra)), sorted(set(ra) ^ set(rb), key=str)[:2]))
        for k in set(ra) & set(rb):
            x, y = ra[k], rb[k]
            for f in sorted(set(x) & set(y)):
                u, v = x[f], y[f]
                if _num(u) and _num(v):
                    d = abs(u - v) / max(abs(u), abs(v), 1e-9)
                    n += 1
                    if d > worst:
                        worst = d
                    if d > tolerance and len(problems) < 20:
                        problems.append("%s %s %s: %r != %r" % (table, k, f, u, v))
                elif u != v and not (u is None and v is None):
                    n += 1
                    if len(problems) < 20:
                        problems.append("%s %s %s: %r != %r" % (table, k, f, u, v))
    for f in ("authoritative",):
        if sorted(map(tuple, a.get(f) or [])) != sorted(map(tuple, b.get(f) or [])):
            problems.append("%s differs" % f)
    ra = sorted((r[0], r[1], round(r[2], 3)) for r in a.get("restarts") or [])
    rb = sorted((r[0], r[1], round(r[2], 3)) for r in b.get("restarts") or [])
    if ra != rb:
        problems.append("restarts differ: %s vs %s" % (ra, rb))
    for f in ("address_rows", "node_rows", "series_windows"):
        if (a.get("totals") or {}).get(f) != (b.get("totals") or {}).get(f):
            problems.append("totals.%s: %r != %r" % (f, a["totals"].get(f), b["totals"].get(f)))
    return {"values": n, "max_relative_difference": worst, "problems": problems}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("first")
    p.add_argument("second")
    p.add_argument("--tolerance", type=float, default=1e-9)
    a = p.parse_args(argv)
    with open(a.first) as f:
        x = json.load(f)
    with open(a.second) as f:
        y = json.load(f)
    r = compare(x, y, a.tolerance)
    print(json.dumps(r, indent=2))
    return 1 if r["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
