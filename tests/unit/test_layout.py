"""The layout's dependency rules (docs/architecture.md), checked on the code:
the model is pure, the metrics collector does not load the converger, only
the runner imports Ansible."""
import ast
import glob
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MU = "ansible_collections.enmasse.messaging.plugins.module_utils"


def loaded_after(module):
    """Names in sys.modules after importing ``module`` in a fresh interpreter."""
    code = "import sys, importlib; importlib.import_module(%r); print('\\n'.join(sorted(sys.modules)))" % module
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.mark.parametrize("name", ["names", "types", "documents", "plan_documents", "example_plans", "inputs",
                                  "validation", "plans", "placement", "schema", "requests", "status", "users"])
def test_model_is_pure(name):
    loaded = loaded_after("%s.model.%s" % (MU, name))
    mine = sorted(m for m in loaded if m.startswith(MU + ".") and not m.startswith((MU + ".model", MU + ".errors")))
    assert mine == [], "model.%s loads %s" % (name, mine)
    io = sorted(m for m in loaded if m.split(".")[0] in ("ansible", "socket", "urllib", "http", "pyarrow", "proton"))
    assert io == [], "model.%s loads %s" % (name, io)


def test_metrics_collector_does_not_load_the_converger():
    loaded = loaded_after(MU + ".metrics.collect")
    for part in ("service", "diff", "apply", "settings", "reader"):
        assert "%s.artemis.%s" % (MU, part) not in loaded
    assert not any(m.split(".")[0] == "ansible" for m in loaded)


def test_only_the_runner_imports_ansible():
    root = os.path.join(REPO, "plugins", "module_utils")
    offenders = []
    for path in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        if os.path.basename(path) == "runner.py":
            continue
        with open(path) as f:
            for line in f:
                if line.startswith(("from ansible.", "import ansible")):
                    offenders.append("%s: %s" % (os.path.relpath(path, REPO), line.strip()))
    assert offenders == []


def _collect(args, tmp_path):
    """``pytest --collect-only`` in a subprocess with python-qpid-proton made
    unimportable; returns (rc, selected test ids)."""
    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "proton.py").write_text(
        'raise ModuleNotFoundError("No module named proton (blocked by the test)", name="proton")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocker)] + [p for p in sys.path if p]))
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"] + args,
                         capture_output=True, text=True, cwd=REPO, env=env, check=False)
    return out.returncode, [line for line in out.stdout.splitlines() if "::" in line]


def test_unit_tier_runs_alone_without_proton(tmp_path):
    """``pytest -m unit`` selects every test under tests/unit, and collecting
    the whole suite needs no AMQP library (the integration tier is skipped)."""
    rc, marked = _collect(["-m", "unit", "tests"], tmp_path)
    assert rc == 0, marked
    rc_dir, in_dir = _collect(["tests/unit"], tmp_path)
    assert rc_dir == 0
    assert len(in_dir) > 100 and set(in_dir) <= set(marked), sorted(set(in_dir) - set(marked))[:5]


def test_router_protocol_is_pure():
    """router/protocol.py (requests, replies, their encoding, the error) does
    no I/O: the engine (proton over a socket) is router/engine.py."""
    loaded = loaded_after(MU + ".router.protocol")
    io = sorted(m for m in loaded if m.split(".")[0] in ("ansible", "socket", "select", "ssl", "proton"))
    assert io == [], "router.protocol loads %s" % io
    assert MU + ".router.engine" not in loaded and MU + ".router.client" not in loaded


def _sizes(path):
    """(lines of the file, [(function, lines) of every function over 80])."""
    with open(path) as f:
        text = f.read()
    long_ones = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(text))
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80]
    return len(text.splitlines()), long_ones


SIZED = ("plugins", "spark_jobs", "bench", "scripts", "molecule", "roles")


@pytest.mark.parametrize("top", SIZED)
def test_no_file_over_600_lines_no_function_over_80(top):
    """The code stays readable in pieces: no Python file over 600 lines, no
    function over 80 (nested functions count inside their parent)."""
    too_big = {}
    for path in sorted(glob.glob(os.path.join(REPO, top, "**", "*.py"), recursive=True)):
        lines, long_ones = _sizes(path)
        if lines > 600 or long_ones:
            too_big[os.path.relpath(path, REPO)] = (lines, long_ones)
    assert too_big == {}


@pytest.mark.parametrize("top", ("molecule", "playbooks"))
def test_no_yaml_file_over_600_lines(top):
    """Playbooks and scenarios too: no YAML file over 600 lines (a long
    verify is split by concern into playbooks it imports)."""
    too_big = {}
    for path in sorted(glob.glob(os.path.join(REPO, top, "**", "*.y*ml"), recursive=True)):
        with open(path) as f:
            lines = len(f.read().splitlines())
        if lines > 600:
            too_big[os.path.relpath(path, REPO)] = lines
    assert too_big == {}


def _imports(path, allowed=()):
    """The collection packages a file imports (``artemis``, ``model``,
    ``backends``, ...), leaving out the modules in ``allowed``
    (``kubernetes.args``)."""
    out = set()
    with open(path) as f:
        for line in f:
            line = line.strip()
            for head in ("from %s." % MU, "from %s import " % MU, "import %s." % MU):
                if line.startswith(head):
                    dotted = line[len(head):].split()[0].rstrip(",")
                    if dotted not in allowed:
                        out.add(dotted.split(".")[0])
    return out


# a backend package may import these collection packages (besides its own,
# model, errors and the shared helpers); standard composes router and artemis
# artemis and standard (the host backends) keep their users in Keycloak; keycloak applies the auth service's
# group encoding, and so does artemis for the realm users of a brokered space's broker (artemis/security.py)
# router and standard reach a router's management listener with auth/mgmt_tls.py (one rule with the auth service's probe)
BACKEND_MAY_IMPORT = {"artemis": {"keycloak", "auth"}, "kubernetes": set(), "router": {"auth"},
                      "standard": {"router", "artemis", "keycloak", "auth"}, "keycloak": {"auth"}}
BACKEND_PACKAGES = set(BACKEND_MAY_IMPORT) | {"metrics", "catalogue", "auth"}


@pytest.mark.parametrize("package", sorted(BACKEND_MAY_IMPORT))
def test_backends_do_not_reach_into_each_other(package):
    offenders = []
    for path in glob.glob(os.path.join(REPO, "plugins", "module_utils", package, "*.py")):
        foreign = (_imports(path) & BACKEND_PACKAGES) - {package, "catalogue"} - BACKEND_MAY_IMPORT[package]
        if foreign:
            offenders.append("%s imports %s" % (os.path.relpath(path, REPO), ", ".join(sorted(foreign))))
    assert offenders == []


@pytest.mark.parametrize("module", ["address", "address_info", "address_space", "address_space_info",
                                    "messaging_user", "messaging_user_info"])
def test_address_modules_enter_every_backend_through_one_interface(module):
    """A module names no backend: backends.run selects it (one selection)."""
    path = os.path.join(REPO, "plugins", "modules", module + ".py")
    # the kubernetes connection options are options, not the backend
    assert _imports(path, allowed=("kubernetes.args", "keycloak.args")) & BACKEND_PACKAGES == set()
    with open(path) as f:
        assert 'backends.run("%s", runner.request(module))' % module in f.read()


def test_the_ledger_and_the_phases_live_outside_the_brokered_backend():
    assert not os.path.exists(os.path.join(REPO, "plugins", "module_utils", "artemis", "ledger.py"))
    for path in glob.glob(os.path.join(REPO, "plugins", "module_utils", "**", "*.py"), recursive=True):
        if path.endswith(os.path.join("model", "status.py")):
            continue
        with open(path) as f:
            text = f.read()
        assert 'PHASE_ACTIVE = "Active"' not in text and 'PHASE_DELETED = "Deleted"' not in text, path


def test_test_files_have_unique_names():
    """pytest imports test files by their basename (no packages): two of one
    name in different folders stop the whole run at collection."""
    names = {}
    for path in glob.glob(os.path.join(REPO, "tests", "**", "test_*.py"), recursive=True):
        names.setdefault(os.path.basename(path), []).append(os.path.relpath(path, REPO))
    assert dict((n, p) for n, p in names.items() if len(p) > 1) == {}
