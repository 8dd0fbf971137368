"""scripts/aio.sh, inventories/aio and playbooks/site.yml as a user meets them.

Fast: real ansible-playbook runs that touch no host (playbooks/inputs.yml, a
template rendered on the controller), and aio.sh with stub commands (podman,
ansible-playbook, python3) that record what it would run."""
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
TWO_SPACES = textwrap.dedent("""\
    address_spaces:
      - {name: demo, type: brokered, plan: brokered-single-broker,
         addresses: [{address: orders, type: queue, plan: brokered-queue}]}
      - {name: second, type: brokered, plan: brokered-single-broker}
    """)


def _env(**extra):
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_NOCOLOR"] = "1"
    env.update(extra)
    return env


def _run(argv, env=None, timeout=300):
    return subprocess.run(argv, cwd=REPO, env=env or _env(), stdout=subprocess.PIPE, check=False,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)


# ---------------------------------------------------------------- bad variables
def test_site_refuses_bad_variables_before_any_role_runs(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(textwrap.dedent("""\
        address_spaces:
          - {name: Demo_1, type: brokered, plan: brokered-single-broker}
          - {name: shop, type: brokerd, plan: brokered-single-broker}
          - {name: ok, type: brokered, plan: brokered-single-broker,
             addresses: [{address: orders, type: queue, plan: brokered-queu}]}
        """))
    # --check: even a regression could not change this machine
    r = _run(["ansible-playbook", "-i", "inventories/aio", "playbooks/site.yml", "--check", "-e", "@%s" % bad])
    assert r.returncode != 0, r.stdout
    out = r.stdout
    # field, value and rule of every error, in one failure
    assert "address_spaces[0](Demo_1).name: 'Demo_1' must consist of lowercase letters" in out, out
    assert "address_spaces[1](shop).type: 'brokerd' must be one of" in out, out
    assert "address_spaces[2](ok).addresses[0](orders).plan: 'brokered-queu' is not a known address plan" in out, out
    # ... before the broker role: its play never started, no fact was gathered
    assert "PLAY [Brokers" not in out, out
    assert "Gathering Facts" not in out, out


# ---------------------------------------------------------------- ports: bind, every instance
def test_site_refuses_operator_broker_certificates_without_their_ca_for_the_routers(tmp_path):
    variables = tmp_path / "vars.yml"
    variables.write_text(textwrap.dedent("""\
        address_spaces:
          - {name: shop, type: standard, plan: standard-small}
        broker_tls_certificate_file: /etc/pki/broker.pem
        """))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    brokers: {hosts: {b1: {ansible_connection: local}}}\n"
                         "    routers: {hosts: {r1: {ansible_connection: local}}}\n")
    r = _run(["ansible-playbook", "-i", str(inventory), "playbooks/site.yml", "--check", "-e", "@%s" % variables])
    assert r.returncode != 0, r.stdout
    assert "standard_broker_ca_src: not set, but the broker hosts b1 have broker_tls_certificate_file" in r.stdout, r.stdout
    assert "PLAY [Brokers" not in r.stdout, r.stdout
    # with the CA named the inputs pass (inputs.yml alone: nothing touches a host)
    r = _run(["ansible-playbook", "-i", str(inventory), "playbooks/inputs.yml", "-e", "@%s" % variables,
              "-e", "standard_broker_ca_src=/etc/pki/ca.pem"])
    assert r.returncode == 0, r.stdout


def test_inputs_refuse_a_bad_pool_state_and_a_pool_that_only_drains(tmp_path):
    variables = tmp_path / "vars.yml"
    variables.write_text("address_spaces:\n  - {name: shop, type: standard, plan: standard-small}\n")
    inventory = tmp_path / "hosts.yml"

    def run(b1, b2):
        inventory.write_text("all:\n  children:\n    brokers: {hosts: {b1: {standard_pool_state: %s}, "
                             "b2: {standard_pool_state: %s}}}\n    routers: {hosts: {r1: {}}}\n" % (b1, b2))
        return _run(["ansible-playbook", "-i", str(inventory), "playbooks/inputs.yml", "-e", "@%s" % variables])
    r = run("leaving", "active")
    assert r.returncode != 0 and "standard_pool_state: b1: leaving (allowed: active, draining)" in r.stdout, r.stdout
    r = run("draining", "draining")
    assert r.returncode != 0 and "every broker host of the standard pool is draining (b1, b2)" in r.stdout, r.stdout
    assert run("draining", "active").returncode == 0


def test_aio_print_ports_publishes_every_instance(tmp_path):
    two = tmp_path / "two.yml"
    two.write_text(TWO_SPACES)
    r = _run(["bash", "scripts/aio.sh", "--print-ports", "--", "-e", "@%s" % two])
    assert r.returncode == 0, r.stdout
    ports = set(int(p) for p in r.stdout.strip().splitlines()[-1].split())
    first = {5672, 61616, 61617, 61613, 1883}
    # and Keycloak's HTTPS port (its admin console; the all-in-one's group keycloak)
    assert ports == first | set(p + 100 for p in first) | {8443}, r.stdout
    assert 8161 not in ports and 8261 not in ports   # Jolokia is never published
    assert 9000 not in ports                         # nor Keycloak's management port


def test_aio_print_ports_publishes_the_mqtt_gateway_tls_port_of_the_standard_space():
    # the embedded default: demo-standard on the router (5700) and its MQTT endpoint (8883, TLS)
    r = _run(["bash", "scripts/aio.sh", "--print-ports"])
    assert r.returncode == 0, r.stdout
    ports = set(int(p) for p in r.stdout.strip().splitlines()[-1].split())
    assert {5700, 8883} <= ports, r.stdout
    assert not ports & set(range(9400, 9500)), r.stdout   # no metrics port (mqtt_gateway_metrics_port 9467 on)


def test_aio_brokers_listen_where_the_inventory_says_and_advertise_reachable_endpoints(tmp_path):
    """broker.xml and the endpoints of both instances, rendered for the aio host."""
    two = tmp_path / "two.yml"
    two.write_text(TWO_SPACES)
    out = tmp_path / "render.json"
    play = tmp_path / "render.yml"
    play.write_text(textwrap.dedent("""\
        - name: Inputs
          ansible.builtin.import_playbook: {repo}/playbooks/inputs.yml
        - name: Render
          hosts: brokers
          gather_facts: false
          tasks:
            - name: The role's layout, with its defaults and the inventory
              ansible.builtin.import_role:
                name: enmasse.messaging.broker
                tasks_from: layout
            - name: Render broker.xml of each instance on the controller
              ansible.builtin.set_fact:
                __rendered: >-
                  {{{{ (__rendered | default([]))
                     + [lookup('ansible.builtin.template', '{repo}/roles/broker/templates/broker.xml.j2',
                               template_vars={{'__space': item}})] }}}}
              loop: "{{{{ __broker_spaces }}}}"
            - name: Write them with the endpoints
              ansible.builtin.copy:
                dest: {out}
                mode: "0600"
                content: "{{{{ {{'xml': __rendered, 'endpoints': __broker_spaces | map(attribute='endpoints') | list}} | to_json }}}}"
              delegate_to: localhost
        """.format(repo=REPO, out=out)))
    r = _run(["ansible-playbook", "-i", "inventories/aio", str(play), "-e", "@%s" % two])
    assert r.returncode == 0, r.stdout
    data = json.loads(out.read_text())
    xml_demo, xml_second = data["xml"]
    # the client acceptors listen on loopback only (inventories/aio), on each instance's ports
    assert '<acceptor name="amqp">tcp://127.0.0.1:5672?' in xml_demo
    assert '<acceptor name="amqp">tcp://127.0.0.1:5772?' in xml_second
    assert '<acceptor name="mqtt">tcp://127.0.0.1:1983?' in xml_second
    assert "0.0.0.0" not in xml_demo + xml_second
    # the second space advertises its own ports (published 1:1 by aio.sh) on 127.0.0.1
    eps = dict((e["name"], (e["host"], e["port"])) for e in data["endpoints"][1])
    assert eps["amqp"] == ("127.0.0.1", 5772) and eps["core"] == ("127.0.0.1", 61716)


# ---------------------------------------------------------------- aio.sh with stub commands
STUB = """#!/bin/bash
echo "$(basename "$0") $*" >> "$STUB_LOG"
case "$(basename "$0")" in
  ansible-playbook)
    for a in "$@"; do case "$a" in enmasse_ports_file=*) printf 'aio 5672\\naio 5772\\n' > "${a#enmasse_ports_file=}" ;; esac; done
    for a in "$@"; do case "$a" in */container.yml) cp "$a" "$STUB_LOG.inventory" ;; esac; done
    echo "PLAY RECAP"; echo "aio : ok=1 changed=0 failed=0" ;;
  podman)
    if [ "$1 $2" = "container inspect" ]; then
      case "$*" in *State.Status*) echo "${STUB_PODMAN_STATE:-running}" ;;
                   *State.Pid*) echo "${STUB_PODMAN_PID:-4242}" ;; *) echo "5672/tcp 5772/tcp" ;; esac
    elif [ "$1" = exec ]; then echo running; fi ;;
  image-builder) echo localhost/stub:image ;;
  python3)
    # python3 -m venv DIR: a fake venv whose python installs a fake ansible
    if [ "$1 $2" = "-m venv" ]; then
      mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; echo "$3" > "$3/bin/.venv-dir"
    fi ;;
  python)
    d="$(dirname "$0")"
    case "$*" in *"pip install"*ansible*) for t in ansible-playbook ansible-galaxy; do cp "$0" "$d/$t"; done ;; esac ;;
esac
exit 0
"""


@pytest.fixture
def stubs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("aio.sh's container target runs as root")
    sb = tmp_path / "bin"
    sb.mkdir()
    for name in ("ansible-playbook", "ansible-galaxy", "podman", "image-builder", "dpkg", "apt-get", "mvn"):
        p = sb / name
        p.write_text(STUB)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    home = tmp_path / "home"
    archive = home / ".m2/repository/org/apache/activemq/apache-artemis/2.40.0/apache-artemis-2.40.0-bin.tar.gz"
    archive.parent.mkdir(parents=True)
    archive.write_text("stub")
    log = tmp_path / "calls.log"
    log.write_text("")
    env = dict(os.environ, PATH="%s:/usr/bin:/bin" % sb, HOME=str(home), STUB_LOG=str(log),
               ENMASSE_AIO_TARGET="container", ENMASSE_AIO_IMAGE_BUILDER=str(sb / "image-builder"),
               ENMASSE_VENV=str(tmp_path / "venv"), ENMASSE_MQTT_GATEWAY=str(sb / "enmasse-mqtt-gateway"))
    (sb / "enmasse-mqtt-gateway").write_text("stub")
    return env, log, sb


def test_aio_check_run_does_not_say_deployed(stubs):
    env, log = stubs[:2]
    r = _run(["bash", "scripts/aio.sh", "--", "--check", "--diff"], env=env)
    assert r.returncode == 0, r.stdout
    assert "deployed" not in r.stdout, r.stdout
    assert "check run" in r.stdout and "nothing was changed" in r.stdout, r.stdout
    r = _run(["bash", "scripts/aio.sh"], env=env)
    assert r.returncode == 0 and "deployed in" in r.stdout, r.stdout


def test_aio_passes_the_mqtt_gateway_it_built_or_was_given(stubs):
    # the group mqtt_gateways of inventories/aio needs the program: site.yml gets it as the role's offline path
    env, log = stubs[:2]
    r = _run(["bash", "scripts/aio.sh"], env=env)
    assert r.returncode == 0, r.stdout
    site = [line for line in log.read_text().splitlines() if line.startswith("ansible-playbook") and "site.yml" in line]
    assert site and all("mqtt_gateway_binary=%s" % env["ENMASSE_MQTT_GATEWAY"] in line for line in site), site
    # a path that is not there: refused before any playbook runs
    log.write_text("")
    r = _run(["bash", "scripts/aio.sh"], env=dict(env, ENMASSE_MQTT_GATEWAY="/nonexistent/gw"))
    assert r.returncode != 0 and "ENMASSE_MQTT_GATEWAY=/nonexistent/gw: no such file" in r.stdout, r.stdout
    assert "site.yml" not in log.read_text()


def test_aio_enters_the_container_namespaces_not_podman_exec(stubs):
    # podman exec costs about 0.3 s, several times per task (docs/benchmarks.md, all-in-one):
    # the container is reached through its init's namespaces, the PID podman reports
    env, log = stubs[:2]
    r = _run(["bash", "scripts/aio.sh"], env=env)
    assert r.returncode == 0, r.stdout
    inventory = yaml.safe_load((log.parent / "calls.log.inventory").read_text())
    aio = inventory["all"]["children"]["brokers"]["hosts"]["aio"]
    assert aio["ansible_connection"] == "community.docker.nsenter", aio
    assert aio["ansible_nsenter_pid"] == 4242, aio
    # a container without a process (stopped under our feet): refused, never PID 0 (this machine)
    r = _run(["bash", "scripts/aio.sh"], env=dict(env, STUB_PODMAN_PID="0"))
    assert r.returncode != 0 and "is not running" in r.stdout, r.stdout


def test_aio_uninstall_builds_no_image_and_says_what_it_leaves(stubs):
    env, log = stubs[:2]
    r = _run(["bash", "scripts/aio.sh", "--uninstall"], env=env)
    assert r.returncode == 0, r.stdout
    calls = log.read_text()
    assert "image-builder" not in calls, calls
    assert "podman rm -f enmasse-aio" in calls and "uninstall.yml" in calls, calls
    for kept in ("credentials/", "apache-artemis-2.40.0-bin.tar.gz", "podman image", "broker_uninstall_remove_home"):
        assert kept in r.stdout, r.stdout
    # no container at all: nothing built either, still says what is left
    log.write_text("")
    r = _run(["bash", "scripts/aio.sh", "--uninstall"], env=dict(env, STUB_PODMAN_STATE="missing"))
    assert r.returncode == 0 and "nothing to uninstall" in r.stdout and "credentials/" in r.stdout, r.stdout
    assert "image-builder" not in log.read_text()


def test_aio_refuses_an_existing_container_that_misses_ports(stubs, tmp_path):
    env, log, sb = stubs
    (sb / "podman").write_text(STUB.replace('echo "5672/tcp 5772/tcp"', 'echo "5672/tcp"'))
    r = _run(["bash", "scripts/aio.sh"], env=env)
    assert r.returncode != 0 and "does not publish the ports 5772" in r.stdout, r.stdout
    assert "site.yml" not in log.read_text()


def test_aio_installs_python_packages_only_into_the_project_venv(stubs, tmp_path):
    env, log, sb = stubs
    # no ansible on PATH: aio.sh must make a venv and pip install there, never into python3
    for name in ("ansible-playbook", "ansible-galaxy"):
        (sb / name).unlink()
    (sb / "python3").write_text(STUB)
    (sb / "python3").chmod(0o755)
    r = _run(["bash", "scripts/aio.sh", "--print-ports"], env=env)
    assert r.returncode == 0, r.stdout
    calls = log.read_text().splitlines()
    venv = env["ENMASSE_VENV"]
    assert "python3 -m venv %s" % venv in calls, calls
    pips = [c for c in calls if " pip " in c]
    assert pips and all(c.startswith("python ") for c in pips), calls   # the venv's python
    assert not any(c.startswith("python3 -m pip") for c in calls), calls
    assert os.path.exists(os.path.join(venv, "bin", "ansible-playbook"))


# ------------------------------------------------- standard spaces' endpoints
def _standard_details_task():
    """The task of playbooks/site.yml that prints the standard spaces'
    connection details, as the playbook has it."""
    import yaml
    with open(os.path.join(REPO, "playbooks", "site.yml")) as f:
        plays = yaml.safe_load(f)
    tasks = [t for p in plays for t in p.get("tasks") or []
             if t.get("name", "").startswith("Connection details of the standard spaces")]
    assert len(tasks) == 1, "site.yml: no task 'Connection details of the standard spaces'"
    return tasks[0]


@pytest.mark.parametrize("target", ["host", "container"])
def test_aio_prints_standard_endpoints_a_client_can_use(tmp_path, target):
    """The status of demo-standard names the router by router_connect_host
    (the container's name enmasse-aio when scripts/aio.sh runs a container);
    from this machine only 127.0.0.1:<port> reaches it: the printed endpoint
    is router_endpoint_host (inventories/aio) with the listener's port."""
    import yaml
    task = _standard_details_task()
    task["vars"]["site_standard_spaces"] = {"results": [{"address_space": {"status": {
        "ready": True, "endpoints": [{"name": "amqp-aio", "host": "enmasse-aio" if target == "container" else "aio",
                                      "port": 5700, "protocols": ["amqp"]}],
        "routers": [{"id": "aio"}], "brokers": []}}}]}
    task["vars"]["site_standard_addresses"] = {"results": [{"addresses": []}]}
    task["vars"]["__standard_spaces"] = [{"name": "demo-standard"}]
    task["loop"] = "{{ __standard_spaces }}"
    play = tmp_path / "details.yml"
    play.write_text(yaml.safe_dump([{"name": "Details", "hosts": "routers[0]", "gather_facts": False,
                                     "tasks": [task]}]))
    inventory = ["-i", "inventories/aio"]
    if target == "container":  # what scripts/aio.sh adds for the container
        extra = tmp_path / "container.yml"
        extra.write_text("all:\n  children:\n    routers:\n      hosts:\n        aio:\n"
                         "          ansible_host: enmasse-aio\n")
        inventory += ["-i", str(extra)]
    r = _run(["ansible-playbook"] + inventory + [str(play)],
             env=_env(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))
    assert r.returncode == 0, r.stdout
    data = json.loads(r.stdout[r.stdout.index("{"):])
    results = [h for p in data["plays"] for t in p["tasks"] for h in t["hosts"].values()][0]["results"]
    assert [res["msg"]["endpoints"] for res in results] == [["127.0.0.1:5700"]], results


def test_standard_endpoints_without_router_endpoint_host_are_the_status_host(tmp_path):
    """Elsewhere (no router_endpoint_host) the endpoint is the router's host
    from the status, as the other routers reach it."""
    import yaml
    task = _standard_details_task()
    task["vars"]["site_standard_spaces"] = {"results": [{"address_space": {"status": {
        "endpoints": [{"name": "amqp-r1", "host": "r1.example.com", "port": 5701},
                      {"name": "amqp-r2", "host": "r2.example.com", "port": 5701}]}}}]}
    task["vars"]["site_standard_addresses"] = {"results": [{"addresses": []}]}
    task["vars"]["__standard_spaces"] = [{"name": "s"}]
    task["loop"] = "{{ __standard_spaces }}"
    play = tmp_path / "details.yml"
    play.write_text(yaml.safe_dump([{"name": "Details", "hosts": "r1", "gather_facts": False, "tasks": [task]}]))
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  children:\n    routers:\n      hosts:\n"
                   "        r1: {ansible_connection: local, ansible_python_interpreter: %s}\n"
                   "        r2: {ansible_connection: local}\n" % sys.executable)
    r = _run(["ansible-playbook", "-i", str(inv), str(play)], env=_env(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))
    assert r.returncode == 0, r.stdout
    data = json.loads(r.stdout[r.stdout.index("{"):])
    results = [h for p in data["plays"] for t in p["tasks"] for h in t["hosts"].values()][0]["results"]
    assert results[0]["msg"]["endpoints"] == ["r1.example.com:5701", "r2.example.com:5701"], results


def test_site_gathers_facts_once_per_host():
    # the routers play re-gathered every fact the brokers play had just gathered on the same host (one
    # full setup per host and run is enough); a router host that is no broker host still gets them all
    with open(os.path.join(REPO, "playbooks", "site.yml"), encoding="utf-8") as f:
        plays = yaml.safe_load(f)
    brokers = next(p for p in plays if p.get("hosts") == "brokers" and p.get("roles"))
    routers = next(p for p in plays if p.get("hosts") == "routers")
    assert brokers["gather_facts"] is True and "gather_subset" not in brokers
    assert routers["gather_facts"] is False
    setup = routers["pre_tasks"][0]
    assert "ansible.builtin.setup" in setup and not setup["ansible.builtin.setup"], setup
    assert setup["when"] == "'all' not in ansible_facts['gather_subset'] | default([])", setup
    assert "always" in setup["tags"], setup
