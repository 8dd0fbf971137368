"""containers.podman.podman with pipelining: what molecule/router used until
2026-11-29 (nsenter_pipelined since, 25 % less CPU for the scenario), kept as
the peer bench/molecule_connection.sh measures nsenter_pipelined against.

containers.podman.podman runs every module in five ``podman exec`` calls
(the remote home, a temporary directory, chmod, the module, rm), because its
``podman exec`` gets no ``-i`` and so cannot pass a module on stdin. This one
adds ``-i`` when Ansible pipes data in and declares pipelining: a module is
then one ``podman exec`` (the file transfers of copy and template still go
through the container's mounted file system). What runs in the container,
as which user, is the same; only the number of exec calls changes.

molecule.yml: ``provisioner.connection_options.ansible_connection: podman_pipelined``
and ANSIBLE_CONNECTION_PLUGINS naming this directory.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = """
    name: podman_pipelined
    short_description: containers.podman.podman with pipelining (podman exec -i)
    description:
      - The connection of containers.podman.podman; a module is piped to C(podman exec -i) on stdin
        instead of being copied to a temporary file and run from there.
    options:
      remote_addr:
        description: The ID of the container.
        default: inventory_hostname
        vars:
          - name: ansible_host
          - name: inventory_hostname
          - name: ansible_podman_host
      remote_user:
        description: The user that runs commands inside the container.
        ini:
          - section: defaults
            key: remote_user
        env:
          - name: ANSIBLE_REMOTE_USER
        vars:
          - name: ansible_user
      podman_extra_args:
        description: Extra arguments to pass to the podman command line.
        default: ''
        ini:
          - section: defaults
            key: podman_extra_args
        vars:
          - name: ansible_podman_extra_args
        env:
          - name: ANSIBLE_PODMAN_EXTRA_ARGS
      podman_executable:
        description: Executable for podman command.
        default: podman
        vars:
          - name: ansible_podman_executable
        env:
          - name: ANSIBLE_PODMAN_EXECUTABLE
      pipelining:
        description: Pipe modules to C(podman exec -i) instead of copying them into the container.
        type: boolean
        default: true
        env:
          - name: ANSIBLE_PODMAN_PIPELINING
        vars:
          - name: ansible_pipelining
"""

import shlex

from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.connection import ensure_connect
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection


class Connection(PodmanConnection):
    transport = "podman_pipelined"
    has_pipelining = True

    @ensure_connect
    def exec_command(self, cmd, in_data=None, sudoable=False):
        if in_data is None:
            return super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        # as the parent does, with stdin attached (-i): the pipelined module
        exec_args = ["exec", "-i"]
        if self.user:
            exec_args.extend(("--user", self.user))
        return self._podman(exec_args, shlex.split(to_native(cmd, errors="surrogate_or_strict")), in_data)
