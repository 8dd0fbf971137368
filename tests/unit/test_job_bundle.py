"""The lookup plugin enmasse.messaging.job_bundle: what the capacity_planner
role installs on a planner host (the Spark job and the module_utils the job
and the collector import), read from the collection itself."""
import os
import subprocess
import sys

import pytest

from ansible_collections.enmasse.messaging.plugins.lookup import job_bundle

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MU = "ansible_collections/enmasse/messaging/plugins/module_utils/"


def paths(entries):
    return [e["path"] for e in entries]


def test_bundle_holds_the_job_and_what_it_imports():
    b = job_bundle.bundle(root=REPO)
    p = paths(b)
    assert p == sorted(p) and len(set(p)) == len(p)
    assert "capacity_plan.py" in p
    for mod in ("read", "aggregate", "planner", "pools", "rules", "report", "cli", "__init__"):
        assert "enmasse_capacity/%s.py" % mod in p
    for mod in ("model/placement.py", "model/plans.py", "model/documents.py", "model/validation.py",
                "model/schema.py", "model/__init__.py", "metrics/collect.py", "metrics/planner_model.py",
                "metrics/store.py", "errors.py"):
        assert MU + mod in p
    # never the Ansible runner nor the address converger: the job and the collector do not import them
    assert MU + "runner.py" not in p
    assert MU + "artemis/service.py" not in p and MU + "artemis/apply.py" not in p
    assert not any(x.startswith("tests/") or "generate_metrics" in x for x in p)
    for e in b:
        with open(e["source"]) as f:
            assert e["content"] == f.read()
        assert e["parts"] and set(e["parts"]) <= {"job", "collector"}
        assert e["root"] == REPO


def test_parts_are_the_import_closures():
    job = paths(job_bundle.bundle(root=REPO, parts=("job",)))
    collector = paths(job_bundle.bundle(root=REPO, parts=("collector",)))
    assert not any(x.startswith("enmasse_capacity/") for x in collector)
    assert MU + "metrics/collect.py" not in job          # the job never samples a broker
    assert MU + "model/schema.py" in job and MU + "model/schema.py" in collector
    assert sorted(set(job) | set(collector)) == paths(job_bundle.bundle(root=REPO))
    with pytest.raises(ValueError, match="unknown part"):
        job_bundle.bundle(root=REPO, parts=("nope",))


def test_closure_follows_absolute_and_relative_imports(tmp_path):
    mu = tmp_path / "plugins" / "module_utils"
    (mu / "pkg").mkdir(parents=True)
    (mu / "pkg" / "__init__.py").write_text("")
    (mu / "pkg" / "a.py").write_text("from . import b\nfrom .c import thing\n")
    (mu / "pkg" / "b.py").write_text("import ansible_collections.enmasse.messaging.plugins.module_utils.top\n")
    (mu / "pkg" / "c.py").write_text("thing = 1\n")
    (mu / "top.py").write_text("from ..x import y  # outside module_utils: ignored\n".replace("..x", "os"))
    (mu / "unused.py").write_text("")
    root = tmp_path / "job.py"
    root.write_text("from ansible_collections.enmasse.messaging.plugins.module_utils.pkg import a\n")
    got = sorted(os.path.relpath(f, str(mu)) for f in job_bundle.closure([str(root)], str(mu)) if f != str(root))
    assert got == ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/c.py", "top.py"]


def test_lookup_through_ansible(tmp_path):
    """query('enmasse.messaging.job_bundle', 'job') from a playbook, as the role calls it."""
    pb = tmp_path / "pb.yml"
    pb.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                  "    - ansible.builtin.debug:\n"
                  "        msg: \"{{ query('enmasse.messaging.job_bundle', 'job') | map(attribute='path') | list }}\"\n")
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                          "-c", "local", str(pb)], capture_output=True, check=False, text=True, cwd=str(tmp_path), timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "enmasse_capacity/planner.py" in out.stdout and "model/placement.py" in out.stdout


def test_ansible_doc_documents_the_lookup():
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-t", "lookup",
                          "enmasse.messaging.job_bundle"], capture_output=True, check=False, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "job_bundle" in out.stdout and "collector" in out.stdout


def test_the_keeper_and_the_auth_service_parts():
    """The router keeper (role standard) and the auth service (role
    auth_service) get their files from the lookup too: what they import and
    nothing of Ansible."""
    keeper = paths(job_bundle.bundle(root=REPO, parts=("keeper",)))
    assert MU + "standard/keeper.py" in keeper and MU + "router/client.py" in keeper
    assert MU + "runner.py" not in keeper and MU + "backends.py" not in keeper
    auth = paths(job_bundle.bundle(root=REPO, parts=("auth_service",)))
    assert auth == [MU + "auth/%s.py" % m for m in ("__init__", "authz", "backends", "codec", "keycloak_backend", "mesh",
                                                    "metrics", "mgmt_tls", "server")] \
        + [MU + "standard/__init__.py", MU + "standard/entities.py"]  # the mesh probe's address rule


def test_no_role_reads_outside_itself():
    """Roles take the collection's files from its lookup plugins, never by a
    path out of their own directory (role_path ~ '/../..')."""
    offenders = []
    for root, unused, files in os.walk(os.path.join(REPO, "roles")):
        for name in files:
            if name.endswith((".yml", ".yaml", ".j2")):
                with open(os.path.join(root, name)) as f:
                    for n, line in enumerate(f, 1):
                        if "role_path" in line and "/.." in line:
                            offenders.append("%s:%d" % (os.path.relpath(os.path.join(root, name), REPO), n))
    assert offenders == []
