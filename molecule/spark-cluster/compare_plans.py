"""Two capacity plans are the same plan: every field equal, numbers to a
relative 1e-9 (sums over a shuffle may add in another order on a cluster),
ignoring what says when and how the job ran (generated_at, job, the stage
timings).

    compare_plans.py a.json b.json   -> exit 0 same, 1 different (the differences on stdout)
"""
import json
import sys

IGNORED = {("generated_at",), ("job",), ("data_quality", "timings_seconds")}


def diff(a, b, path=()):
    if path in IGNORED:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if (path + (k,)) in IGNORED:
                continue
            if k not in a or k not in b:
                out.append("%s: only in %s" % ("/".join(map(str, path + (k,))), "first" if k in a else "second"))
            else:
                out.extend(diff(a[k], b[k], path + (k,)))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return ["%s: %d vs %d items" % ("/".join(map(str, path)), len(a), len(b))]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(diff(x, y, path + (i,)))
        return out
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        if abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12):
            return []
    elif a == b:
        return []
    return ["%s: %r vs %r" % ("/".join(map(str, path)), a, b)]


def main():
    with open(sys.argv[1]) as f:
        a = json.load(f)
    with open(sys.argv[2]) as f:
        b = json.load(f)
    d = diff(a, b)
    for line in d[:40]:
        print(line)
    print("%d difference(s)" % len(d))
    return 1 if d else 0


if __name__ == "__main__":
    sys.exit(main())
