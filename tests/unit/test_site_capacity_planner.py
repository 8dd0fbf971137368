"""playbooks/site.yml applies the capacity_planner role to the hosts of the
group capacity_planners (playbooks/capacity.yml and the capacity loop run
its job there and need it installed). Real ansible-playbook --list-tasks:
nothing runs."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def list_tasks(tmp_path, groups):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n" + "".join(
        "    %s: {hosts: {%s: {ansible_connection: local, ansible_python_interpreter: %s}}}\n"
        % (group, host, sys.executable) for group, host in groups))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["ansible-playbook", "-i", str(inventory), "playbooks/site.yml", "--list-tasks"],
                       cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stdout
    return r.stdout


def play_of(listing, name):
    """The task lines of the play whose name starts with ``name``."""
    lines, inside = [], False
    for line in listing.splitlines():
        if line.lstrip().startswith("play #"):
            inside = name in line
            continue
        if inside:
            lines.append(line.strip())
    return lines


def test_site_installs_the_planner_on_the_group_capacity_planners(tmp_path):
    listing = list_tasks(tmp_path, [("capacity_planners", "cp1")])
    tasks = play_of(listing, "Capacity planner")
    assert any(t.startswith("enmasse.messaging.capacity_planner : Check the host runs systemd") for t in tasks), listing
    assert any(t.startswith("enmasse.messaging.capacity_planner : Create the service user of the planning job")
               for t in tasks), listing
    assert "play #" in listing and "(capacity_planners): Capacity planner" in listing, listing


def test_without_the_group_the_play_has_no_host(tmp_path):
    listing = list_tasks(tmp_path, [("brokers", "b1")])
    assert play_of(listing, "Capacity planner"), listing  # the play is there ...
    assert "cp1" not in listing  # ... with no host of the group
