"""qdrouterd configurations made by the router role itself, for real routers
on this machine: ansible-playbook runs the role's own task files on an
inventory of local hosts (one per router) - tls.yml (the mesh CA and router
certificates on the controller, copied to each router's config directory),
secrets.yml (the broker password files) - and renders the role's
qdrouterd.conf.j2 with the role's defaults and variables. Only the ports, the
directories and the group (the test runs as root, without a qdrouterd group)
differ from a real host."""
import grp
import json
import os
import subprocess
import sys

from ansible_collections.enmasse.messaging.plugins.filter import router as router_filter

import helpers

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "roles", "router", "files",
                            "qdrouterd-check-config.py")
TEMPLATE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "roles", "router", "templates", "qdrouterd.conf.j2")


def render(base_dir, routers, broker_credentials=(), credentials_dir=None, mesh_group="routers", extra_vars=None,
           prefix=None):
    """``routers``: [{id, management_port, inter_router_port}] in mesh order.
    Writes <base_dir>/<id>/qdrouterd.conf (and tls/, brokers/) per router;
    returns ({id: {"conf": path, "dir": config dir, "management_tls": the client certificate its management
    listener requires, "password_files": {broker: path}}}, the output).
    ``prefix`` (the router's install prefix): the role's own config.yml
    writes the file (checked with the router's parser; a change of the mesh
    connectors only is applied to a running router through management,
    mesh.yml) instead of the bare template."""
    credentials_dir = credentials_dir or os.path.join(base_dir, "credentials")
    group = grp.getgrgid(os.getgid()).gr_name
    hosts = {}
    for r in routers:
        conf_dir = os.path.join(base_dir, r["id"])
        os.makedirs(conf_dir, exist_ok=True)
        hosts[r["id"]] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                          "router_id": r["id"], "router_config_dir": conf_dir,
                          "router_management_port": r["management_port"],
                          "router_inter_router_port": r["inter_router_port"],
                          "router_connect_host": "127.0.0.1"}
    inventory = {"all": {"children": {mesh_group: {"hosts": hosts}}}}
    group_vars = {"router_group": group, "router_credentials_dir": credentials_dir, "router_mesh_group": mesh_group,
                  "router_broker_credentials": list(broker_credentials),
                  "router_broker_password_dir": os.path.join(base_dir, "brokers")}
    if prefix is not None:
        import routers as _routers
        group_vars.update({"router_python": "/usr/bin/python3", "__router_prefix": prefix,
                           "__router_pythonpath": _routers.prefix_env(prefix)["PYTHONPATH"]})
    group_vars.update(extra_vars or {})
    tasks = [
        {"name": "mesh TLS", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.router", "tasks_from": "tls.yml", "public": True}},
        {"name": "password files (prereqs computes the paths)", "ansible.builtin.set_fact": {
            "__router_broker_password_files":
                "{{ router_broker_credentials | enmasse.messaging.router_secret_files(router_broker_password_dir) }}"}},
        {"name": "broker passwords", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.router", "tasks_from": "secrets.yml", "public": True}},
        {"name": "qdrouterd.conf", "ansible.builtin.template": {
            "src": TEMPLATE, "dest": "{{ router_config_dir }}/qdrouterd.conf", "mode": "0640"}}
        if prefix is None else
        {"name": "qdrouterd.conf (the role's config.yml)", "ansible.builtin.include_role": {
            "name": "enmasse.messaging.router", "tasks_from": "config.yml", "public": True},
         # a role variable: only a task's vars come before it
         "vars": {"__router_check_script": CHECK_SCRIPT}},
        # the role's handler (restart qdrouterd with systemd) is not for this machine: end before it
        {"name": "done", "ansible.builtin.meta": "end_play"},
    ]
    play = [{"name": "router role", "hosts": mesh_group, "gather_facts": False, "vars": group_vars,
             "tasks": tasks, "handlers": []}]
    pb = os.path.join(base_dir, "router-play.json")
    inv = os.path.join(base_dir, "router-inventory.json")
    with open(pb, "w") as f:
        json.dump(play, f)
    with open(inv, "w") as f:
        json.dump(inventory, f)
    env = helpers._env()
    env["ANSIBLE_RETRY_FILES_ENABLED"] = "False"
    out = subprocess.run(["ansible-playbook", "-i", inv, pb], capture_output=True,
                         text=True, env=env, cwd=base_dir, check=False, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("the router role could not render the routers: %s%s"
                           % (out.stdout[-3000:], out.stderr[-2000:]))
    files = router_filter.router_secret_files(list(broker_credentials), "/unused") if broker_credentials else {}
    result = {}
    for r in routers:
        conf_dir = os.path.join(base_dir, r["id"])
        tls_dir = os.path.join(conf_dir, "tls")
        result[r["id"]] = {"conf": os.path.join(conf_dir, "qdrouterd.conf"), "dir": conf_dir,
                           # the management listener requires a client certificate of the management CA: root's
                           "management_tls": {"cert_file": os.path.join(tls_dir, "management-client.pem"),
                                              "key_file": os.path.join(tls_dir, "management-client.key"),
                                              "ca_file": os.path.join(tls_dir, "management-ca.pem")},
                           "password_files": dict((b, os.path.join(base_dir, "brokers", os.path.basename(p)))
                                                  for b, p in files.items())}
    return result, out.stdout
