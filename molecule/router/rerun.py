"""The second run of site.yml (controller side): which tasks changed.

    rerun.py <output file> <host>=<task> [<host>=<task> ...]

The scenario's second converge is verify-identity.yml's -vvv --diff run of
site.yml after one user's password changed in the inventory (Molecule's own
idempotence step would be a third full run of site.yml). It must change
exactly the tasks named on the command line, each on its host (the password
reaching Keycloak), and nothing else: every other task of every play on
every host is idempotent. A <task> is the task's name as the output shows it
(`role : name` for a role's task); a trailing `*` matches any ending.
Prints every changed task; exit 1 when one changed that is not expected, an
expected one did not change, a host failed or was unreachable, or the
PLAY RECAP is missing (the run did not finish)."""
import re
import sys

TASK = re.compile(r"^(?:TASK|RUNNING HANDLER) \[(.+?)\] \*+\s*$")
CHANGED = re.compile(r"^changed: \[([^\]\s]+)(?: -> [^\]]+)?\]")
RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


def changed_tasks(text):
    """(host, task) pairs that reported changed, in output order, each once
    (a loop's items count once, as in the recap)."""
    found, task = [], None
    for line in text.splitlines():
        m = TASK.match(line)
        if m:
            task = m.group(1)
            continue
        m = CHANGED.match(line)
        if m and task is not None and (m.group(1), task) not in found:
            found.append((m.group(1), task))
    return found


def recap(text):
    """host -> (changed, unreachable, failed) from the last PLAY RECAP."""
    head = text.rfind("PLAY RECAP")
    if head < 0:
        return None
    out = {}
    for line in text[head:].splitlines()[1:]:
        m = RECAP.match(line.strip())
        if m:
            out[m.group(1)] = tuple(int(v) for v in m.group(2, 3, 4))
    return out


def _matches(pattern, task):
    if pattern.endswith("*"):
        return task.startswith(pattern[:-1])
    return task == pattern


def rerun_problems(text, expected):
    """``expected``: (host, task pattern) pairs that must change, each once."""
    problems = []
    counts = recap(text)
    if not counts:
        return ["no PLAY RECAP: the run did not finish"]
    for host, (unused, unreachable, failed) in sorted(counts.items()):
        if unreachable or failed:
            problems.append("%s: unreachable=%d failed=%d" % (host, unreachable, failed))
    changed = changed_tasks(text)
    for host, task in changed:
        if not any(h == host and _matches(p, task) for h, p in expected):
            problems.append("%s: %r changed (not idempotent)" % (host, task))
    for host, pattern in expected:
        if not any(h == host and _matches(pattern, t) for h, t in changed):
            problems.append("%s: %r did not change (the new password was not converged)" % (host, pattern))
    for host, (n_changed, unused, unused2) in sorted(counts.items()):
        seen = sum(1 for h, unused3 in changed if h == host)
        if n_changed != seen:
            problems.append("%s: the recap counts changed=%d, the output shows %d changed task(s)"
                            % (host, n_changed, seen))
    return problems


def main(argv):
    if len(argv) < 2 or any("=" not in a for a in argv[2:]):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], errors="replace") as f:
        text = f.read()
    expected = [tuple(a.split("=", 1)) for a in argv[2:]]
    for host, task in changed_tasks(text):
        print("changed: %s %s" % (host, task))
    problems = rerun_problems(text, expected)
    for problem in problems:
        print("PROBLEM: %s" % problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
