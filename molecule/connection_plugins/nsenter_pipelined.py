"""The Molecule scenarios' cheapest way into their podman containers:
community.docker.nsenter with pipelining, the container found by name.

``podman exec`` (podman_pipelined) costs a podman process, a conmon and a
``runc exec`` per module. ``nsenter`` enters the namespaces of the container's
init (mount, PID, network, IPC, UTS) directly, and the process first joins the
container's cgroups as ``runc exec`` does. Measured here (docs/benchmarks.md):
0.66 s of machine CPU per module and host against 1.1 s, 40 % less wall time.

What runs is what ``podman exec`` runs: root, in the container's file system,
processes, network and cgroups (a JVM a task starts reads the container's
limits; in this machine's cgroup JDK 17 failed at Spark's start), with the
container's environment (``Config.Env``), not the controller's. The one
difference: the process keeps this machine's capabilities (root on this
machine runs podman anyway).

The container's init PID, cgroup and environment come from ``podman container
inspect`` once and are kept in a small file (the temporary directory), checked
against the start time of that process before each use: a restarted container
is looked up again.

molecule.yml: ``provisioner.connection_options.ansible_connection: nsenter_pipelined``
and ANSIBLE_CONNECTION_PLUGINS naming this directory.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
    name: nsenter_pipelined
    short_description: community.docker.nsenter into a podman container by name, with pipelining
    description:
      - Runs commands in the namespaces of a podman container's init process with C(nsenter);
        a module is piped on stdin.
    options:
      remote_addr:
        description:
          - The name or ID of the container. The plugin reads it from the play context, as
            containers.podman.podman does, so that under C(delegate_to) it is the delegated host's.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
      nsenter_pid:
        description: Not set by hand; the container's init PID is asked from podman.
        type: int
        default: 0
      pipelining:
        description: Pipe modules on stdin instead of copying them into the container.
        type: boolean
        default: true
        vars:
          - name: ansible_pipelining
"""

import json
import os
import shlex
import subprocess
import tempfile

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display
from ansible_collections.community.docker.plugins.connection.nsenter import Connection as NsenterConnection

display = Display()
# the hierarchies runc exec puts a process in (cgroup v1 and the unified one)
HIERARCHIES = ("blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids", "systemd", "unified")


def _start_time(pid):
    """The process's start time (clock ticks after boot), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (IOError, OSError, IndexError):
        return None


def _container_cgroup(pid):
    """The container's cgroup path (its init's, in the memory hierarchy; systemd
    in the container moves itself below it, to init.scope)."""
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            unused, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(","):
                return path
    return None


def inspect(name, podman="podman"):
    """(init PID, its start time, the container's cgroup path, its environment) of the running container ``name``."""
    out = subprocess.run([podman, "container", "inspect", "--format", "json", name], capture_output=True,
                         check=False)
    if out.returncode != 0:
        raise AnsibleConnectionFailure("podman container inspect %s: %s" % (name, to_native(out.stderr).strip()))
    doc = json.loads(out.stdout)[0]
    pid = int(doc["State"].get("Pid") or 0)
    if pid <= 0:
        raise AnsibleConnectionFailure("container %s is not running" % name)
    env = dict(item.split("=", 1) for item in doc["Config"].get("Env") or [] if "=" in item)
    env.setdefault("HOME", "/root")
    return pid, _start_time(pid), _container_cgroup(pid), env


def join_cgroup(path):
    """Move the calling process into the container's cgroups, as runc exec
    does (a JVM reads its limits from there; in this machine's cgroup JDK 17
    fails at start under the container's /sys/fs/cgroup)."""
    def join():
        for hierarchy in HIERARCHIES:
            procs = "/sys/fs/cgroup/%s%s/cgroup.procs" % (hierarchy, path)
            if os.path.exists(procs):
                with open(procs, "w") as f:
                    f.write(str(os.getpid()))
    return join


class Connection(NsenterConnection):
    transport = "nsenter_pipelined"
    has_pipelining = True

    def _cache_path(self, name):
        directory = os.path.join(tempfile.gettempdir(), "enmasse-molecule-nsenter")
        os.makedirs(directory, mode=0o700, exist_ok=True)
        return os.path.join(directory, name.replace("/", "_") + ".json")

    def _target(self):
        # the play context's address, not the option: under delegate_to the
        # option's inventory_hostname is the delegating host's (podman's
        # connection reads the play context too)
        name = self._play_context.remote_addr
        path = self._cache_path(name)
        try:
            with open(path) as f:
                cached = json.load(f)
            if cached["start"] is not None and _start_time(cached["pid"]) == cached["start"]:
                return cached["pid"], cached["cgroup"], cached["env"]
        except (IOError, OSError, ValueError, KeyError, TypeError):
            pass
        pid, start, cgroup, env = inspect(name)
        tmp = "%s.%d" % (path, os.getpid())
        with open(tmp, "w") as f:
            json.dump({"pid": pid, "start": start, "cgroup": cgroup, "env": env}, f)
        os.rename(tmp, path)
        return pid, cgroup, env

    def _connect(self):
        super(Connection, self)._connect()
        self._nsenter_pid, self._cgroup, self._env = self._target()
        return self

    def exec_command(self, cmd, in_data=None, sudoable=True):
        """``cmd`` in the container's namespaces and cgroups with the
        container's environment, ``in_data`` (a pipelined module) on stdin."""
        ConnectionBase.exec_command(self, cmd, in_data=in_data, sudoable=sudoable)
        if sudoable and self.become and self.become.expect_prompt():
            raise AnsibleError("nsenter_pipelined: a become method that asks for a password is not supported")
        args = shlex.split(to_native(cmd, errors="surrogate_or_strict")) if isinstance(cmd, (str, bytes)) else \
            [to_native(arg) for arg in cmd]
        argv = ["nsenter", "--ipc", "--mount", "--net", "--pid", "--uts", "--preserve-credentials",
                "--target=%d" % self._nsenter_pid, "--"] + args
        display.vvv(u"EXEC %s" % to_text(" ".join(argv)), host=self._play_context.remote_addr)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=self._env, preexec_fn=join_cgroup(self._cgroup) if self._cgroup else None)
        stdout, stderr = proc.communicate(in_data)
        return proc.returncode, stdout, stderr

    def put_file(self, in_path, out_path):
        # the parent pipes the file through `tee`, which echoes it back: cat writes it instead
        out_path = to_native(out_path)
        display.vvv(u"PUT %s TO %s" % (to_text(in_path), to_text(out_path)), host=self._play_context.remote_addr)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as f:
            data = f.read()
        rc, unused, err = self.exec_command(["/bin/sh", "-c", 'cat > "$0"', out_path], in_data=data)
        if rc != 0:
            raise AnsibleConnectionFailure("failed to transfer file to %s: %s" % (out_path, to_native(err)))
