"""Fixtures for the kubernetes backend's tests: one real API server per
session (etcd + kube-apiserver + kube-controller-manager, ``cluster.py``),
prepared by the collection's own role (roles/kubernetes_crds: CRDs, RBAC,
a namespace with the jobs' service account and EnMasse's example plans),
and a fresh namespace per test with the example plans in it.

There is no EnMasse operator here: where a test needs one, it writes the
status an operator writes, with the object as EnMasse's operator does
(``Cluster.operator_status``), and says so.
"""

import json
import os
import subprocess
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import helpers  # noqa: E402  (run_module, the collection on sys.path)
from cluster import TestCluster  # noqa: E402

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import connection as k8s_connection  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeClient  # noqa: E402

pytest.importorskip("kubernetes", reason="the Python package kubernetes is not installed: pip install -r "
                    "requirements-test.txt")

ROLE_NAMESPACE = "enmasse-role"
EXAMPLE_PLANS = os.path.join(helpers.REPO, "roles", "kubernetes_crds", "files", "example-plans.yaml")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.kubernetes)


def run_playbook(tasks, env=None, timeout=600):
    """ansible-playbook on localhost with ``tasks``; returns (rc, stdout)."""
    import tempfile
    import yaml
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    fd, path = tempfile.mkstemp(suffix=".yml", prefix="enmasse-k8s-play-")
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(play, f)
    e = helpers._env()
    e["ANSIBLE_PYTHON_INTERPRETER"] = sys.executable
    e.update(env or {})
    try:
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                               "-c", "local", path], capture_output=True, text=True, env=e, timeout=timeout,
                              check=False)
    finally:
        os.remove(path)
    return proc.returncode, proc.stdout + proc.stderr


class Cluster(object):
    """The session's API server and ways to drive it."""

    def __init__(self, test_cluster):
        self.tc = test_cluster
        self.kubeconfig = test_cluster.kubeconfig
        self.host = test_cluster.host
        self.ca_cert = test_cluster.ca_cert

    def client(self, namespace, **params):
        p = {"kubeconfig": self.kubeconfig, "namespace": namespace}
        p.update(params)
        return KubeClient(k8s_connection.resolve(p, environ={}))

    def core(self):
        from kubernetes import client, config
        api = config.new_client_from_config(config_file=self.kubeconfig)
        return client.CoreV1Api(api), api

    def create_namespace(self, name, plans=True):
        core, unused = self.core()
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if plans:
            import yaml
            c = self.client(name)
            with open(EXAMPLE_PLANS) as f:
                for doc in yaml.safe_load(f)["items"]:
                    if doc:
                        c.request("PATCH", c.path(doc["kind"], doc["metadata"]["name"]),
                                  {"fieldManager": "enmasse.messaging-examples"}, body=doc,
                                  content_type="application/apply-patch+yaml")
        return name

    def operator_status(self, namespace, kind, name, status):
        """Write ``status`` as an EnMasse operator would (with the object)."""
        return self.client(namespace).write_status(kind, name, status)


class Namespace(object):
    """A namespace of the session's cluster and the modules run against it."""

    def __init__(self, cluster, name):
        self.cluster = cluster
        self.name = name
        self.client = cluster.client(name)

    def args(self, **extra):
        out = {"backend": "kubernetes", "kubeconfig": self.cluster.kubeconfig, "namespace": self.name}
        out.update(extra)
        return out

    def run(self, module, check_mode=False, diff=False, **args):
        return helpers.run_module(module, self.args(**args), check_mode=check_mode, diff=diff)

    def list(self, kind):
        items, unused = self.client.list(kind)
        return dict((o["metadata"]["name"], o) for o in items)

    def addresses(self):
        return dict((o["spec"]["address"], o) for o in self.list("Address").values())

    def apply_as(self, manager, doc, force=False):
        """Server-side apply ``doc`` as another field manager (someone else)."""
        return self.client.request("PATCH", self.client.path(doc["kind"], doc["metadata"]["name"]),
                                   {"fieldManager": manager, "force": "true" if force else "false"}, body=doc,
                                   content_type="application/apply-patch+yaml")

    def create_as(self, manager, doc):
        """Create ``doc`` with a plain POST (operation Update), as kubectl create does."""
        return self.client.request("POST", self.client.path(doc["kind"]), {"fieldManager": manager}, body=doc)

    def operator_status(self, kind, name, status):
        return self.cluster.operator_status(self.name, kind, name, status)


@pytest.fixture(scope="session")
def kube(tmp_path_factory):
    try:
        tc = TestCluster(str(tmp_path_factory.mktemp("kube")))
    except RuntimeError as e:
        pytest.fail("cannot build or find the test API server: %s" % e)
    try:
        tc.start()
        cluster = Cluster(tc)
        # the collection's role prepares the cluster: CRDs, RBAC, a namespace
        rc, out = run_playbook([{"name": "Prepare the cluster", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.kubernetes_crds"}, "vars": {
            "kubernetes_crds_namespace": ROLE_NAMESPACE,
            "kubernetes_crds_connection": {"kubeconfig": tc.kubeconfig}}}])
        cluster.role_output = out
        assert rc == 0, out[-6000:]
        yield cluster
    finally:
        tc.cleanup()


@pytest.fixture(autouse=True)
def _cluster_alive(request):
    """A test against the cluster fails when a component of it died (before
    or during the test): the cluster must be what it claims."""
    if "kube" not in request.fixturenames:
        yield
        return
    kube = request.getfixturevalue("kube")
    kube.tc.check()
    yield
    kube.tc.check()


@pytest.fixture
def ns(kube):
    name = "t-" + uuid.uuid4().hex[:10]
    kube.create_namespace(name)
    return Namespace(kube, name)


@pytest.fixture
def space(ns):
    """A brokered address space (brokered-single-broker) made by the module."""
    r = ns.run("address_space", name="shop", type="brokered", plan="brokered-single-broker")
    assert not r.failed, r
    return ns


def dump(obj):
    return json.dumps(obj, indent=1, sort_keys=True)[:4000]
