"""playbooks/site.yml's MQTT gateway play in check mode on a fresh deployment
(issue 21): the standard space does not exist yet, so it has no router
endpoints; the play says so and ends on the host instead of failing. Real
ansible-playbook on the controller (local connection, --check, from the
gateway play's first task on): nothing is touched."""
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_check_mode_on_a_fresh_deployment_skips_the_gateway_with_a_message(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(textwrap.dedent("""\
        all:
          children:
            mqtt_gateways: {hosts: {g1: {ansible_connection: local, ansible_python_interpreter: %s}}}
            routers: {hosts: {r1: {ansible_connection: local, ansible_python_interpreter: %s}}}
        """ % (sys.executable, sys.executable)))
    variables = tmp_path / "vars.yml"
    variables.write_text(textwrap.dedent("""\
        address_spaces:
          - {name: shop, type: standard, plan: standard-small,
             users: [{username: u1, password: s3cret-pw-xyz, authorization: []}]}
        """))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["ansible-playbook", "-vvv", "-i", str(inventory), "playbooks/site.yml", "--check",
                        "-e", "@%s" % variables, "--start-at-task",
                        "Check the spaces served are standard spaces of the inventory"],
                       cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stdout
    assert "check mode: shop has no router endpoints yet (not created)" in r.stdout, r.stdout
    assert "failed=0" in r.stdout, r.stdout
    assert "s3cret-pw-xyz" not in r.stdout   # the play's variables carry no user password
