"""The roles' part of retained messages (issue 21), real ansible-playbook on
the controller (local connection, files under tmp_path only):

* auth_service tasks/mqtt.yml writes <users_dir>/<space>.mqtt.json with the one
  service user, its password generated in the credentials directory, 0640,
  idempotent, the files of spaces no longer served removed, nothing printed;
* mqtt_gateway tasks/config.yml puts the four service fields in the
  instance's config.json and the password file (0640, the same password)."""
import grp
import json
import os
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GROUP = grp.getgrgid(os.getgid()).gr_name


def play(tmp_path, body, name="play.yml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_ROLES_PATH=os.path.join(REPO, "roles"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["ansible-playbook", "-v", "-i", "localhost,", "-c", "local",
                        "-e", "ansible_python_interpreter=%s" % sys.executable, str(path)], cwd=REPO, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout
    return r.stdout


AUTH_PLAY = """\
- hosts: localhost
  gather_facts: false
  vars:
    auth_service_users_dir: {users}
    auth_service_credentials_dir: {creds}
    auth_service_group: {group}
    auth_service_password_length: 32
    auth_service_pbkdf2_iterations: 1000
    auth_service_mqtt_spaces: {spaces}
  tasks:
    - ansible.builtin.include_tasks: {repo}/roles/auth_service/tasks/mqtt.yml
"""


def test_auth_service_writes_the_service_realm_of_each_space_with_mqtt(tmp_path):
    users, creds = tmp_path / "users", tmp_path / "creds"
    users.mkdir()
    (users / "gone.mqtt.json").write_text("{}")
    (users / "tenant-a.json").write_text("{}")  # a space's own file: not mqtt.yml's
    body = AUTH_PLAY.format(users=users, creds=creds, group=GROUP, spaces='["tenant-a"]', repo=REPO)
    out = play(tmp_path, body)
    password = (creds / "tenant-a-mqtt-service").read_text().strip()
    assert len(password) == 32 and password not in out
    path = users / "tenant-a.mqtt.json"
    assert oct(path.stat().st_mode & 0o777) == "0o640"
    doc = json.loads(path.read_text())
    assert doc["realm"] == "tenant-a.mqtt" and list(doc["users"]) == ["mqtt-gateway"]
    # every address: no address-authz, the routers' vhost tenant-a.mqtt limits the user
    assert doc["users"]["mqtt-gateway"]["groups"] == ["recv_%2A", "send_%2A"]
    assert backends.verify_password(password, doc["users"]["mqtt-gateway"]["password"])
    assert not (users / "gone.mqtt.json").exists() and (users / "tenant-a.json").exists()
    again = play(tmp_path, body)
    assert "changed=0" in again, again
    # the space loses its MQTT endpoint: its service realm goes
    play(tmp_path, AUTH_PLAY.format(users=users, creds=creds, group=GROUP, spaces="[]", repo=REPO))
    assert not path.exists() and (users / "tenant-a.json").exists()


GW_PLAY = """\
- hosts: localhost
  gather_facts: false
  handlers:
    - name: Reload enmasse-mqtt-gateway
      ansible.builtin.debug: {{msg: reload}}
    - name: Restart enmasse-mqtt-gateway
      ansible.builtin.debug: {{msg: restart}}
  tasks:
    - ansible.builtin.include_vars: {repo}/roles/mqtt_gateway/defaults/main.yml
    - ansible.builtin.include_vars: {repo}/roles/mqtt_gateway/vars/main.yml
    # above the included defaults (set_fact wins)
    - ansible.builtin.set_fact:
        mqtt_gateway_config_dir: {conf}
        mqtt_gateway_credentials_dir: {creds}
        mqtt_gateway_group: {group}
        mqtt_gateway_metrics_enabled: false
        mqtt_gateway_spaces:
          - name: tenant-a
            routers: ["r1:5701"]
            addresses: [{{address: t, type: topic}}]
            service_routers: ["r1:5710", "r2:5810"]
            service_user: mqtt-gateway
            retained_address: $mqtt/tenant-a/retained
          - name: tenant-b
            routers: ["r1:5702"]
            tls_port: 8884
    - ansible.builtin.include_tasks: {repo}/roles/mqtt_gateway/tasks/config.yml
"""


def test_mqtt_gateway_config_has_the_service_fields_and_password_file(tmp_path):
    conf, creds = tmp_path / "conf", tmp_path / "creds"
    creds.mkdir()
    (creds / "tenant-a-mqtt-service").write_text("the-service-password\n")  # made by the auth_service role
    out = play(tmp_path, GW_PLAY.format(conf=conf, creds=creds, group=GROUP, repo=REPO))
    assert "the-service-password" not in out
    cfg = json.loads((conf / "tenant-a" / "config.json").read_text())
    assert cfg["service_routers"] == ["r1:5710", "r2:5810"] and cfg["service_user"] == "mqtt-gateway"
    assert cfg["retained_address"] == "$mqtt/tenant-a/retained"
    pfile = conf / "tenant-a" / "service-password"
    assert cfg["service_password_file"] == str(pfile)
    assert pfile.read_text() == "the-service-password" and oct(pfile.stat().st_mode & 0o777) == "0o640"
    other = json.loads((conf / "tenant-b" / "config.json").read_text())
    assert (other["service_routers"], other["service_user"], other["service_password_file"],
            other["retained_address"]) == ([], "", "", "")  # all four or none
    assert not (conf / "tenant-b" / "service-password").exists()


def test_site_gives_the_gateway_the_service_password_the_auth_service_wrote(tmp_path):
    """site.yml's gateway play reads the service password where the routers
    play's auth_service role wrote it (auth_service_credentials_dir), also
    when router_credentials_dir (the gateway's CA and other secrets) differs."""
    import yaml
    with open(os.path.join(REPO, "playbooks", "site.yml")) as f:
        plays = yaml.safe_load(f)
    (gateway,) = [p for p in plays if p.get("hosts") == "mqtt_gateways"]
    expr = gateway["vars"]["mqtt_gateway_service_password_dir"]
    body = """\
    - hosts: localhost
      gather_facts: false
      vars:
        router_credentials_dir: /ca-and-router-secrets
        auth_service_credentials_dir: /auth-secrets
        service_dir: %s
      tasks:
        - ansible.builtin.debug:
            msg: "SERVICE-DIR={{ service_dir }}"
    """ % json.dumps(expr)
    out = play(tmp_path, body)
    assert "SERVICE-DIR=/auth-secrets" in out, out


def test_site_gives_the_gateway_the_routers_amqp_endpoints_only_this_hosts_first(tmp_path):
    """The space's status lists the routers' AMQP endpoints and the gateways'
    own MQTT ones (mqtts-<host>, mqtt-<host>): the gateway's `routers` are the
    AMQP ones only (an MQTT port there was tried as a router at failover),
    this host's router first, then the others sorted."""
    import yaml
    with open(os.path.join(REPO, "playbooks", "site.yml")) as f:
        plays = yaml.safe_load(f)
    (gateway,) = [p for p in plays if p.get("hosts") == "mqtt_gateways"]
    endpoints = [
        {"name": "amqps-r1", "host": "r1", "port": 5700, "protocols": ["amqps"]},
        {"name": "amqps-r2", "host": "r2", "port": 5700, "protocols": ["amqps", "amqp"]},
        {"name": "amqps-r3", "host": "r3", "port": 5700, "protocols": ["amqps"]},
        {"name": "mqtts-r2", "host": "r2", "port": 8883, "protocols": ["mqtts"]},
        {"name": "mqtt-r2", "host": "r2", "port": 1883, "protocols": ["mqtt"]},
        {"name": "mqtts-r1", "host": "r1", "port": 8883, "protocols": ["mqtts"]},
    ]
    play_vars = {k: v for k, v in gateway["vars"].items() if k.startswith("__mqtt") or k == "mqtt_gateway_spaces"}
    play_vars.update({
        "address_spaces": [{"name": "s1", "type": "standard", "plan": "p", "addresses": [], "users": []}],
        "__mqtt_space_info": {"results": [{"item": "s1", "address_space": {"status": {"endpoints": endpoints}}}]},
        "router_connect_host": "r2",
    })
    body = [{"hosts": "localhost", "gather_facts": False, "vars": play_vars,
             "tasks": [{"ansible.builtin.debug": {"msg": "ROUTERS={{ mqtt_gateway_spaces[0].routers | to_json }}"}}]}]
    out = play(tmp_path, yaml.safe_dump(body))
    assert 'ROUTERS=[\\"r2:5700\\", \\"r1:5700\\", \\"r3:5700\\"]' in out, out
