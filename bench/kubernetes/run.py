"""Benchmark: 10,000 Address objects converged by one task of the address
module with backend: kubernetes against the test API server (etcd +
kube-apiserver + kube-controller-manager v1.33.13 on loopback,
tests/integration/kubernetes/cluster.py), then the same task again.

    python bench/kubernetes/run.py [--count 10000] [--rounds 1] [--playbook] [--out bench/results/kubernetes.json]

Each run is the module as Ansible runs it on the target (a Python process
with an args file, helpers.run_module), wall clock from start to exit. The
first run creates every object (one LIST, 10,000 server-side applies in
parallel); the re-run lists once and applies nothing. With --playbook, the
re-run also as an ansible-playbook task, the list written in the task and in
a ``src`` file (what the action plugin and ansible-core add). Prints a JSON
report.
"""

import argparse
import json
import os
import platform
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration", "kubernetes"))

import helpers  # noqa: E402
from cluster import TestCluster  # noqa: E402
from conftest import Cluster  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--playbook", action="store_true",
                    help="also the no-change re-run by ansible-playbook, addresses inline and in src")
    args = ap.parse_args()
    report = {"count": args.count, "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                               "platform": platform.platform()}, "rounds": []}
    with TestCluster() as tc:
        report["kubernetes"] = tc.version()
        cluster = Cluster(tc)
        _install_crds(cluster)
        for r in range(args.rounds):
            ns = cluster.create_namespace("bench-" + uuid.uuid4().hex[:8])
            base = {"backend": "kubernetes", "kubeconfig": tc.kubeconfig, "namespace": ns}
            for module, extra in (("address_plan", {"name": "bench-queue", "address_type": "queue",
                                                    "resources": {"broker": 0.0001}}),
                                  ("address_space_plan", {"name": "bench", "address_space_type": "brokered",
                                                          "resource_limits": {"broker": 1000},
                                                          "address_plans": ["bench-queue"]}),
                                  ("address_space", {"name": "bench", "type": "brokered", "plan": "bench"})):
                res = helpers.run_module(module, dict(base, **extra))
                assert not res.failed, res
            addrs = [{"address": "bench-q-%05d" % i, "type": "queue", "plan": "bench-queue"}
                     for i in range(args.count)]
            task = dict(base, address_space="bench", addresses=addrs)
            first = helpers.run_module("address", task)
            assert not first.failed and len(first["changes"]["created"]) == args.count, first.msg
            again = helpers.run_module("address", task)
            assert not again.failed and not again.changed, again.msg
            rnd = {"first_run_s": round(first.seconds, 2), "rerun_s": round(again.seconds, 2)}
            if args.playbook:  # the no-change re-run as a playbook task: the list inline, or in src
                for form in ("inline", "src"):
                    wall, cpu = _playbook_rerun(base, addrs, form)
                    rnd["playbook_rerun_%s_s" % form] = round(wall, 2)
                    rnd["playbook_rerun_%s_cpu_s" % form] = round(cpu, 2)
            report["rounds"].append(rnd)
            print(json.dumps(report["rounds"][-1]), file=sys.stderr)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text + "\n")


def _playbook_rerun(base, addrs, form):
    """(wall clock, CPU seconds of it and its children) of ansible-playbook
    running one address task (a no-change re-run), the list written in the
    task (``inline``) or in a file (``src``)."""
    import resource
    import subprocess
    import tempfile
    import yaml
    tmp = tempfile.mkdtemp(prefix="enmasse-bench-")
    task = dict(base, address_space="bench")
    if form == "src":
        task["src"] = os.path.join(tmp, "addresses.json")
        with open(task["src"], "w") as f:
            json.dump(addrs, f)
    else:
        task["addresses"] = addrs
    play = os.path.join(tmp, "play.yml")
    with open(play, "w") as f:
        yaml.safe_dump([{"hosts": "localhost", "gather_facts": False,
                         "tasks": [{"name": "addresses", "enmasse.messaging.address": task}]}], f)
    env = helpers._env()
    env["ANSIBLE_PYTHON_INTERPRETER"] = sys.executable
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                           "-c", "local", play], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    assert proc.returncode == 0 and "changed=0" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    return seconds, cpu


def _install_crds(cluster):
    """The CRDs from roles/kubernetes_crds/files/crds, applied and waited for."""
    import yaml
    from kubernetes import client
    unused, api = cluster.core()
    ext = client.ApiextensionsV1Api(api)
    crd_dir = os.path.join(REPO, "roles", "kubernetes_crds", "files", "crds")
    names = []
    for f in sorted(os.listdir(crd_dir)):
        with open(os.path.join(crd_dir, f)) as fh:
            doc = yaml.safe_load(fh)
        ext.create_custom_resource_definition(doc)
        names.append(doc["metadata"]["name"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready = [n for n in names if any(c.type == "Established" and c.status == "True"
                                         for c in (ext.read_custom_resource_definition(n).status.conditions or []))]
        if len(ready) == len(names):
            time.sleep(2)  # the first create right after Established waits 2 s on the server
            return
        time.sleep(0.2)
    raise RuntimeError("CRDs not established")


if __name__ == "__main__":
    main()
