"""The test cluster is what it claims: kube-controller-manager runs the
controllers cluster.py names (garbage collection, namespace deletion,
service accounts), and the whole cluster stops when the process that
started it gets SIGTERM or dies."""

import json
import os
import signal
import subprocess
import sys
import shutil
import time
import uuid

from cluster import HERE

import pytest


def _wait(what, fn, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.5)
    pytest.fail("%s after %ss" % (what, timeout))


def test_controller_manager_collects_garbage_and_deletes_namespaces(kube):
    core, unused = kube.core()
    name = kube.create_namespace("gc-" + uuid.uuid4().hex[:8], plans=False)
    owner = core.create_namespaced_config_map(name, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(name, {"metadata": {"name": "dependent", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]}})
    core.delete_namespaced_config_map("owner", name)
    _wait("the dependent ConfigMap was not garbage collected",
          lambda: "dependent" not in [c.metadata.name for c in core.list_namespaced_config_map(name).items])
    _wait("namespace default's ServiceAccount is missing",
          lambda: core.read_namespaced_service_account("default", name) is not None)
    core.delete_namespace(name)
    _wait("the namespace was not deleted (namespace controller)",
          lambda: name not in [n.metadata.name for n in core.list_namespace().items])


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:  # a zombie is gone
        return f.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_whole_cluster_stops_with_its_process(kube, sig):
    """python cluster.py (a second cluster) killed: etcd, kube-apiserver and
    kube-controller-manager go with it, and SIGTERM also removes its files."""
    info = None
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "cluster.py")], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        for line in proc.stdout:
            if line.startswith("{"):
                info = json.loads(line)
                break
        assert info and sorted(info["pids"]) == ["etcd", "kube-apiserver", "kube-controller-manager"], info
        assert all(_alive(p) for p in info["pids"].values()), info
        os.kill(proc.pid, sig)
        proc.wait(60)
        _wait("components still running: %s" % info["pids"],
              lambda: not any(_alive(p) for p in info["pids"].values()), timeout=30)
        if sig == signal.SIGTERM:
            assert not os.path.exists(info["etcd_dir"]) and not os.path.exists(info["dir"]), info
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        for d in (info or {}).get("dir"), (info or {}).get("etcd_dir"):
            if d:
                shutil.rmtree(d, ignore_errors=True)
