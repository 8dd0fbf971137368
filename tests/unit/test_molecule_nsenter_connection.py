"""molecule/connection_plugins/nsenter_pipelined.py, the scenarios' way into
their containers: the container's cgroup read from its init, the PID kept
only while that process lives (a restarted container is looked up again),
the container's environment instead of the controller's."""
import json
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "molecule", "connection_plugins"))
nsenter_pipelined = pytest.importorskip("nsenter_pipelined")

CGROUP = "/libpod_parent/libpod-c927c456a84e"


def test_the_container_cgroup_is_its_inits_memory_hierarchy_not_init_scope(tmp_path, monkeypatch):
    lines = ["9:name=systemd:%s/init.scope" % CGROUP, "4:memory:%s" % CGROUP, "1:cpu:%s" % CGROUP,
             "0::%s/init.scope" % CGROUP]
    real_open = open

    def fake_open(path, *args, **kwargs):
        if path == "/proc/4242/cgroup":
            path = str(tmp_path / "cgroup")
            with real_open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    assert nsenter_pipelined._container_cgroup(4242) == CGROUP


def test_join_writes_the_pid_into_each_hierarchy_that_has_the_container(tmp_path, monkeypatch):
    written = {}
    monkeypatch.setattr(nsenter_pipelined.os.path, "exists", lambda p: "/memory/" in p or "/systemd/" in p)
    real_open = open

    def fake_open(path, mode="r", *args, **kwargs):
        if path.startswith("/sys/fs/cgroup/"):
            target = tmp_path / path.replace("/", "_")
            written[path] = target
            return real_open(str(target), mode)
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    nsenter_pipelined.join_cgroup(CGROUP)()
    assert sorted(written) == ["/sys/fs/cgroup/memory%s/cgroup.procs" % CGROUP,
                               "/sys/fs/cgroup/systemd%s/cgroup.procs" % CGROUP]
    assert {p.read_text() for p in written.values()} == {str(os.getpid())}


class FakeConnection(nsenter_pipelined.Connection):
    def __init__(self, name):  # only what _target uses: the play context's address
        self._play_context = type("PlayContext", (), {"remote_addr": name})()

    def get_option(self, option):
        raise AssertionError("the container comes from the play context (delegate_to), not the %s option" % option)


def test_the_pid_is_kept_while_its_process_lives_then_asked_again(tmp_path, monkeypatch):
    monkeypatch.setattr(nsenter_pipelined.tempfile, "gettempdir", lambda: str(tmp_path))
    asked = []
    mine = os.getpid()

    def inspect(name):
        asked.append(name)
        pid = mine if len(asked) == 1 else 1
        return pid, nsenter_pipelined._start_time(pid), CGROUP, {"PATH": "/usr/bin", "HOME": "/root"}

    monkeypatch.setattr(nsenter_pipelined, "inspect", inspect)
    conn = FakeConnection("enmasse-broker-1")
    assert conn._target() == (mine, CGROUP, {"PATH": "/usr/bin", "HOME": "/root"})
    assert conn._target()[0] == mine and asked == ["enmasse-broker-1"]  # from the file
    # the container restarted: its init is another process with another start time
    cache = tmp_path / "enmasse-molecule-nsenter" / "enmasse-broker-1.json"
    doc = json.loads(cache.read_text())
    doc["start"] = "0"
    cache.write_text(json.dumps(doc))
    assert conn._target()[0] == 1 and asked == ["enmasse-broker-1", "enmasse-broker-1"]


def test_inspect_takes_the_containers_environment_and_refuses_a_stopped_one(monkeypatch):
    class Out:
        def __init__(self, doc, rc=0):
            self.returncode, self.stdout, self.stderr = rc, json.dumps([doc]).encode(), b"no such container"

    docs = [{"State": {"Pid": os.getpid()}, "Config": {"Env": ["PATH=/usr/sbin:/usr/bin", "container=podman"]}},
            {"State": {"Pid": 0}, "Config": {"Env": []}}]
    monkeypatch.setattr(nsenter_pipelined.subprocess, "run", lambda *a, **k: Out(docs.pop(0)))
    monkeypatch.setattr(nsenter_pipelined, "_container_cgroup", lambda pid: CGROUP)
    pid, start, cgroup, env = nsenter_pipelined.inspect("enmasse-router-1")
    assert (pid, cgroup) == (os.getpid(), CGROUP) and start is not None
    assert env == {"PATH": "/usr/sbin:/usr/bin", "container": "podman", "HOME": "/root"}
    with pytest.raises(nsenter_pipelined.AnsibleConnectionFailure, match="not running"):
        nsenter_pipelined.inspect("enmasse-router-1")
