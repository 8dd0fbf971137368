"""The rule of roles/router/files/patches/qdrouterd-1.19.0-policy-routed-form.patch,
compiled from the patch itself and run without a router: qdrouterd routes
what follows a name's first ``:/`` (or a leading ``/``, and a ``//host/``
after either: iterator.c ``view_initialize``), so one policy rule must admit
both the name and that routed form. The integration test
(tests/integration/test_standard_walls.py) shows the built router refusing
the same names; this one pins the states octet by octet, fast."""
import os
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCH = os.path.join(REPO, "roles", "router", "files", "patches", "qdrouterd-1.19.0-policy-routed-form.patch")
CC = shutil.which("cc") or shutil.which("gcc")

# (rule, proposed name, routed form the router takes, admitted)
CASES = [
    ("orders/*", "orders/x", "orders/x", True),
    ("orders/*", "orders/x:/_local/$management", "_local/$management", False),
    ("a*", "a:/_local/$management", "_local/$management", False),
    ("a*", "a://h/_local/$management", "_local/$management", False),
    ("d*", "d:/x:/_local/$management", "x:/_local/$management", False),
    ("/o*", "/_local/$management", "_local/$management", False),
    ("/o*", "/orders", "orders", True),
    ("//h/o*", "//h/_local/$management", "_local/$management", False),
    # a rule that itself holds ':/' (or starts with '/') is a wildcard in routed form: "a:/*" admits every
    # routed name but those the router gives no tenant prefix; the collection writes no such rule
    # (model/names.py, model/users.py)
    ("a:/*", "a:/_local/$management", "_local/$management", False),
    ("/*", "/_topo/0/R/$management", "_topo/0/R/$management", False),
    ("a:/*", "a:/orders", "orders", True),
    # the router drops one trailing '.' or '/' before it looks a name up: "orders/" is "orders"
    ("orders/*", "orders/", "orders/", False),
    ("p.*", "p.", "p.", False),
    ("orders/*", "orders/x/", "orders/x/", True),
    ("a*", "a:/orders/", "orders/", False),
    ("decl-q", "decl-q", "decl-q", True),
    ("$will/orders/*", "$will/orders/", "$will/orders/", False),
    ("orders/*", "orders/x:/orders/y", "orders/y", True),
    ("x*", "x:/decl-q", "decl-q", False),
    ("amqp:/_topo/0/R/temp.*", "amqp:/_topo/0/R/temp.x", "_topo/0/R/temp.x", True),
    ("amqp:/_topo/0/R/temp.*", "amqp:/_topo/0/R/temp.x:/_local/$m", "_topo/0/R/temp.x:/_local/$m", True),
    ("amqp:/_topo/0/R/temp.*", "amqp:/_local/$management", "_local/$management", False),
    ("_topo/0/R/temp.*", "_topo/0/R/temp.x", "_topo/0/R/temp.x", True),
    ("_topo/0/R/temp.*", "_topo/0/R/temp.x:/_local/$management", "_local/$management", False),
    # the router's colon state: a second ':' right after the first returns to scanning
    ("a*", "a::/_local/$management", "a::/_local/$management", True),
    ("t::s", "t::s", "t::s", True),
    ("q1", "q1", "q1", True),
    ("q1", "q1x", "q1x", False),
    ("q1*", "q", "q", False),
    # nothing after ':/' or '/': the router routes the whole name
    ("a*", "a:/", "a:/", True),
    ("/*", "/", "/", True),
    ("o*", "o//x", "o//x", True),
]

HARNESS = r"""
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#define QPALN_WILDCARD '*'
%(helpers)s
int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        printf("%%s\t%%d\n", _qd_policy_routed_form(argv[i + 1]),
               _qd_policy_rule_matches(argv[i], strlen(argv[i]), argv[i + 1]) ? 1 : 0);
    }
    return 0;
}
"""


def helpers():
    """The two functions the patch adds, as the patched policy.c has them."""
    new_side = []
    with open(PATCH) as f:
        for line in f:
            if line.startswith("+") and not line.startswith("+++"):
                new_side.append(line[1:])
    text = "".join(new_side)
    start = text.index("static const char *_qd_policy_routed_form")
    rule = text.index("static bool _qd_policy_rule_matches")
    end = text.index("\n}\n", rule) + 3
    return text[start:end]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler (cc/gcc) on this machine: the router build needs one too")
    d = tmp_path_factory.mktemp("policy")
    src, exe = d / "policy.c", d / "policy"
    src.write_text(HARNESS % {"helpers": helpers()})
    subprocess.run([CC, "-std=c99", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True)
    return str(exe)


def test_one_rule_must_admit_the_name_and_its_routed_form(program):
    args = []
    for rule, name, unused_routed, unused_ok in CASES:
        args += [rule, name]
    out = subprocess.run([program] + args, check=True, capture_output=True, text=True).stdout.splitlines()
    got = [tuple(line.split("\t")) for line in out]
    want = [(case[2], "1" if case[3] else "0") for case in CASES]
    assert got == want, [(c[:2], g) for c, g, w in zip(CASES, got, want) if g != w]
