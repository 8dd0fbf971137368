#!/usr/bin/env python
"""Check a qdrouterd.conf the way qdrouterd reads it, without starting a router.

qdrouterd 1.19 has no config-test switch. This parses the file with the
router's own parser and schema (qpid_dispatch_internal.management.config,
found through PYTHONPATH) and fails on a syntax error, an unknown entity or
attribute, a bad value, and on the lines the parser would only warn about.

    PYTHONPATH=<egg>:<prefix>/lib/qpid-dispatch/python python3 qdrouterd-check-config FILE

Exit 0 and "ok: N entities" when the file is good; 1 and the reason when not.
"""
import sys


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: qdrouterd-check-config FILE\n")
        return 2
    try:
        from qpid_dispatch_internal.management import config as qdconfig
    except ImportError as e:
        sys.stderr.write("cannot import the router's config parser (PYTHONPATH?): %s\n" % e)
        return 1
    # outside the router the log levels are not imported; the parser still
    # names them when it warns
    for level in ("LOG_WARNING", "LOG_ERROR"):
        if not hasattr(qdconfig, level):
            setattr(qdconfig, level, level[4:].lower())

    class StrictConfig(qdconfig.Config):
        def __init__(self, filename):
            self.problems = []
            super().__init__(filename)

        def _log(self, level, text):
            if level == "warning" or level == getattr(qdconfig, "LOG_WARNING", None):
                self.problems.append(text)

    try:
        conf = StrictConfig(argv[1])
    except Exception as e:  # the parser raises plain Exception
        sys.stderr.write("%s\n" % e)
        return 1
    if conf.problems:
        sys.stderr.write("%s: %s\n" % (argv[1], "; ".join(p.replace("\n", " ") for p in conf.problems)))
        return 1
    routers = [e for e in conf.entities if e["type"].endswith(".router")]
    if len(routers) != 1 or not routers[0].get("id"):
        sys.stderr.write("%s: exactly one router entity with an id is required\n" % argv[1])
        return 1
    sys.stdout.write("ok: %d entities\n" % len(conf.entities))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
