"""The execution environment: scripts/build-ee-context.sh turns
execution-environment/ into an ansible-builder build context; no image is built
(no container engine here). The two stages that depend on this collection are
replayed on the context instead: the galaxy stage's ``ansible-galaxy
collection install`` of the staged tarball, and the builder stage's
introspection of the installed collection (which assembles the pip and bindep
lists the final stage installs)."""

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml
from packaging.requirements import Requirement

pytestmark = pytest.mark.awx

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "build-ee-context.sh")
TARBALL = os.path.join("_build", "collections", "enmasse-messaging.tar.gz")
# what must never be in the built collection
JUNK = re.compile(r"(^|/)(\.venv|\.git|\.pytest_cache|__pycache__|credentials|build|bench)(/|$)"
                  r"|\.pyc$|^tests/output/|^changelogs/\.plugin-cache\.yaml$|\.tar\.gz$")


def _load(path):
    with open(os.path.join(REPO, path)) as f:
        return yaml.safe_load(f)


def _lines(path):
    """The requirement lines of a pip or bindep file, comments dropped."""
    with open(path) as f:
        return [ln.split("#", 1)[0].strip() for ln in f if ln.split("#", 1)[0].strip()]


def _strip(lines):
    """Introspection's output lines without their ``# from collection`` notes."""
    return [ln.split("#", 1)[0].strip() for ln in lines]


def _env():
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    return env


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("ee") / "context")
    proc = subprocess.run(["bash", SCRIPT, out], env=_env(), capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, "build-ee-context.sh failed:\n%s\n%s" % (proc.stdout, proc.stderr)
    assert proc.stdout.strip().splitlines()[-1] == out
    return out


@pytest.fixture(scope="module")
def containerfile(context):
    with open(os.path.join(context, "Containerfile")) as f:
        return f.read()


@pytest.fixture(scope="module")
def installed(context, tmp_path_factory):
    """The galaxy stage: ``ansible-galaxy collection install -r requirements.yml``
    in _build/ (the build's working directory), offline."""
    dest = str(tmp_path_factory.mktemp("ee-collections"))
    env = _env()
    env["ANSIBLE_GALAXY_DISABLE_GPG_VERIFY"] = "1"
    # as in the image: no other copy of the collection (the checkout, or one
    # in ~/.ansible/collections) counts as installed
    env["ANSIBLE_COLLECTIONS_PATH"] = dest
    env.pop("ANSIBLE_COLLECTIONS_PATHS", None)
    proc = subprocess.run(["ansible-galaxy", "collection", "install", "--force", "-r", "requirements.yml",
                           "--collections-path", dest],
                          cwd=os.path.join(context, "_build"), env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path = os.path.join(dest, "ansible_collections", "enmasse", "messaging")
    assert os.path.isfile(os.path.join(path, "MANIFEST.json")), os.listdir(dest)
    return dest


def test_context_holds_containerfile_collection_and_requirements(context):
    build = os.path.join(context, "_build")
    for name in ("requirements.yml", "requirements.txt", "bindep.txt", "exclude-collections.txt"):
        assert os.path.isfile(os.path.join(build, name)), name
    assert os.path.isfile(os.path.join(context, TARBALL))
    # the collection's own requirement files, unchanged
    assert _lines(os.path.join(build, "requirements.txt")) == _lines(os.path.join(REPO, "requirements.txt"))
    assert _lines(os.path.join(build, "bindep.txt")) == _lines(os.path.join(REPO, "bindep.txt"))
    with open(os.path.join(build, "requirements.yml")) as f:
        galaxy = yaml.safe_load(f)
    assert galaxy == {"collections": [{"name": "collections/enmasse-messaging.tar.gz", "type": "file"}]}


def test_containerfile_installs_collection_python_and_system_requirements(containerfile):
    definition = _load("execution-environment/execution-environment.yml")
    assert 'ARG EE_BASE_IMAGE="%s"' % definition["images"]["base_image"]["name"] in containerfile
    refs = re.search(r'^ARG ANSIBLE_INSTALL_REFS="([^"]*)"', containerfile, re.M).group(1).split()
    assert refs == [definition["dependencies"]["ansible_core"]["package_pip"],
                    definition["dependencies"]["ansible_runner"]["package_pip"]]
    steps = [
        "FROM $EE_BASE_IMAGE AS base",
        "RUN $PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS",
        "FROM base AS galaxy",
        "COPY _build /build",  # the tarball is in _build/collections/
        "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml",
        "FROM base AS builder",
        "COPY --from=galaxy /usr/share/ansible /usr/share/ansible",
        "COPY _build/requirements.txt requirements.txt",
        "COPY _build/bindep.txt bindep.txt",
        "introspect.py introspect --user-pip=requirements.txt --user-bindep=bindep.txt",
        "RUN /output/scripts/assemble",
        "FROM base AS final",
        "COPY --from=galaxy /usr/share/ansible /usr/share/ansible",
        "RUN /output/scripts/install-from-bindep",
    ]
    at = -1
    for step in steps:
        found = containerfile.find(step, at + 1)
        assert found > at, "%r missing or out of order in the Containerfile:\n%s" % (step, containerfile)
        at = found


def test_collection_tarball_is_complete_and_clean(context):
    galaxy = _load("galaxy.yml")
    with tarfile.open(os.path.join(context, TARBALL)) as tf:
        names = tf.getnames()
        manifest = json.load(tf.extractfile("MANIFEST.json"))["collection_info"]
        with open(os.path.join(REPO, "LICENSE"), "rb") as f:
            assert tf.extractfile("LICENSE").read() == f.read()
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == (
        galaxy["namespace"], galaxy["name"], galaxy["version"])
    assert manifest["license_file"] == "LICENSE" and not manifest["license"]
    for needed in ("LICENSE", "README.md", "CHANGELOG.rst", "changelogs/changelog.yaml", "meta/runtime.yml",
                   "meta/execution-environment.yml", "requirements.txt", "bindep.txt",
                   "playbooks/addresses.yml", "extensions/awx/credential_type_management.yml",
                   "extensions/awx/survey_addresses.json", "plugins/modules/address.py"):
        assert needed in names, needed
    junk = [n for n in names if JUNK.search(n)]
    assert not junk, junk


def test_galaxy_stage_then_introspection_yields_the_requirements_once(context, installed):
    build = os.path.join(context, "_build")
    proc = subprocess.run([sys.executable, os.path.join(build, "scripts", "introspect.py"), "introspect", installed,
                           "--user-pip=requirements.txt", "--user-bindep=bindep.txt",
                           "--exclude-collection-reqs=exclude-collections.txt"],
                          cwd=build, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)
    assert _strip(data["python"]) == _lines(os.path.join(REPO, "requirements.txt"))
    assert _strip(data["system"]) == _lines(os.path.join(REPO, "bindep.txt"))


def test_other_execution_environments_get_the_requirements_from_the_collection(installed):
    """Without our definition (an EE that just lists enmasse.messaging in its
    galaxy requirements), introspection reads meta/execution-environment.yml."""
    import ansible_builder
    script = os.path.join(os.path.dirname(ansible_builder.__file__), "_target_scripts", "introspect.py")
    proc = subprocess.run([sys.executable, script, "introspect", installed],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)
    assert _strip(data["python"]) == _lines(os.path.join(REPO, "requirements.txt"))
    assert all(ln.endswith("# from collection enmasse.messaging") for ln in data["python"] + data["system"])
    assert _strip(data["system"]) == _lines(os.path.join(REPO, "bindep.txt"))


def test_definition_matches_the_collection_metadata():
    definition = _load("execution-environment/execution-environment.yml")
    meta = _load("meta/execution-environment.yml")
    runtime = _load("meta/runtime.yml")
    deps = definition["dependencies"]
    assert definition["version"] == 3
    here = "execution-environment"
    assert os.path.normpath(os.path.join(here, deps["python"])) == meta["dependencies"]["python"]
    assert os.path.normpath(os.path.join(here, deps["system"])) == meta["dependencies"]["system"]
    assert deps["exclude"]["all_from_collections"] == ["enmasse.messaging"]
    # the EE's ansible-core floor is the collection's
    assert Requirement(deps["ansible_core"]["package_pip"]).specifier == Requirement(
        "ansible-core" + runtime["requires_ansible"]).specifier
    # bindep.txt parses, and every line is for one package family
    from bindep.depends import Depends
    deps_file = Depends(open(os.path.join(REPO, "bindep.txt")).read())
    assert deps_file.profiles()
    for line in _lines(os.path.join(REPO, "bindep.txt")):
        assert re.search(r"platform:(rpm|dpkg)", line), line


def _plugin_imports():
    """Top-level names of every absolute import in plugins/ (also inside
    functions and try blocks), without the standard library and Ansible."""
    names = set()
    for root, _dirs, files in os.walk(os.path.join(REPO, "plugins")):
        for fn in files:
            if not fn.endswith(".py"):
                continue
            with open(os.path.join(root, fn)) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return sorted(n for n in names if n not in sys.stdlib_module_names
                  and n not in ("ansible", "ansible_collections", "__future__"))


def test_requirements_txt_declares_what_the_plugins_import():
    """Every third-party import of plugins/ is declared, unless ansible-core
    itself requires it (PyYAML, Jinja2, ...: every controller and EE has it)."""
    dists = importlib.metadata.packages_distributions()
    declared = set(Requirement(ln).name.lower() for ln in _lines(os.path.join(REPO, "requirements.txt")))
    declared |= set(Requirement(r).name.lower() for r in importlib.metadata.requires("ansible-core") or ()
                    if "extra ==" not in r)
    for name in _plugin_imports():
        assert name in dists, "plugins import %r, which is not installed here" % name
        provided = set(d.lower() for d in dists[name])
        assert provided & declared, "plugins import %r (from %s), not in requirements.txt" % (name, sorted(provided))
