"""The capacity loop's own inventory file (issue 22; model/loop_inventory.py
and the module loop_inventory as Ansible runs it): add and remove a host,
idempotent, check mode writes nothing, a file not of the loop's shape is
refused and left alone, and Ansible's yaml inventory plugin reads what it
writes merged with the operator's inventory."""
import json
import os
import shutil
import subprocess

import pytest
from test_standard_lifecycle_rules import run_module

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import loop_inventory as model

pytestmark = pytest.mark.unit


def run(args, tmp_path, check=False, diff=True):
    """The module as Ansible runs it (a subprocess, its arguments on stdin)."""
    return run_module("loop_inventory", dict(args, _ansible_diff=diff), tmp_path, check_mode=check)


# ---------------------------------------------------------------- the model

def test_present_adds_the_host_once_and_absent_removes_it():
    new, changed = model.change(None, "brokers", "spare-1", "present")
    assert (new, changed) == ({"brokers": ["spare-1"]}, True)
    content = {"brokers": {"hosts": {"spare-1": {}}}}
    assert model.change(content, "brokers", "spare-1", "present") == ({"brokers": ["spare-1"]}, False)
    assert model.change(content, "brokers", "spare-2", "present") == ({"brokers": ["spare-1", "spare-2"]}, True)
    assert model.change(content, "brokers", "spare-1", "absent") == ({"brokers": []}, True)
    assert model.change(None, "brokers", "spare-1", "absent") == ({}, False)
    assert model.change({"brokers": None}, "brokers", "x", "absent") == ({"brokers": []}, False)


def test_render_is_the_shape_it_reads_back():
    import yaml
    for groups in ({}, {"brokers": []}, {"brokers": ["spare-1", "b:2", "h[1]"]}):
        text = model.render(groups)
        assert text.startswith("# The capacity loop's own inventory")
        assert model.memberships(yaml.safe_load(text)) == {"brokers": groups.get("brokers", [])}


@pytest.mark.parametrize("args, words", [
    (("routers", "r3", "present"), ["group: 'routers' is not one of brokers", "router's scale in"]),
    (("brokers", "bad host", "present"), ["host: 'bad host' is not an inventory host name"]),
    (("brokers", "-x", "present"), ["host: '-x'"]),
    (("brokers", "b1", "gone"), ["state: 'gone' is not one of present, absent"]),
])
def test_bad_arguments_are_refused_naming_field_value_and_rule(args, words):
    with pytest.raises(ValidationError) as e:
        model.change(None, *args)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize("content, words", [
    (["spare-1"], ["the file is a list, not a mapping of groups"]),
    ({"all": {"hosts": {"b1": {}}}}, ["key 'all' is not one of brokers", "left alone"]),
    ({"brokers": {"hosts": {"b1": {}}}, "brokers_spare": {}}, ["key 'brokers_spare'"]),
    ({"brokers": {"vars": {"x": 1}}}, ["brokers is {'vars': {'x': 1}}: the loop's groups hold only hosts"]),
    ({"brokers": {"children": {"c": {}}}}, ["no vars, no children"]),
    ({"brokers": {"hosts": ["b1"]}}, ["brokers.hosts is ['b1'], not a mapping"]),
    ({"brokers": {"hosts": {"b1": {"ansible_host": "10.0.0.1"}}}}, ["host variables (b1: {'ansible_host': '10.0.0.1'})"]),
])
def test_a_file_not_of_the_loops_shape_is_refused(content, words):
    with pytest.raises(ValidationError) as e:
        model.change(content, "brokers", "spare-1", "present", path="/x/inv.yml")
    assert str(e.value).startswith("/x/inv.yml: ")
    for w in words:
        assert w in str(e.value)


# ---------------------------------------------------------------- the module

def test_module_check_mode_diff_then_write_then_idempotent_then_absent(tmp_path):
    path = tmp_path / "loop" / "inventory.yml"
    args = {"path": str(path), "host": "spare-1"}
    out = run(args, tmp_path, check=True)
    assert out["changed"] is True and out["listed"] is False and out["hosts"] == {"brokers": ["spare-1"]}
    assert out["diff"]["before"] == "" and '    "spare-1": {}' in out["diff"]["after"]
    assert not path.exists() and not path.parent.exists()

    out = run(args, tmp_path)
    assert out["changed"] is True and path.read_text() == model.render({"brokers": ["spare-1"]})
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert os.listdir(str(path.parent)) == ["inventory.yml"]  # no temporary file left

    again = run(args, tmp_path)
    assert again["changed"] is False and again["listed"] is True
    assert again["diff"]["before"] == again["diff"]["after"]

    path.chmod(0o600)
    out = run(dict(args, state="absent"), tmp_path, check=True)
    assert out["changed"] is True and out["hosts"] == {"brokers": []} and "spare-1" in path.read_text()
    out = run(dict(args, state="absent"), tmp_path)
    assert out["changed"] is True and out["listed"] is True and "spare-1" not in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == "0o600"  # an existing file keeps its mode
    assert run(dict(args, state="absent"), tmp_path)["changed"] is False


def test_module_refuses_and_leaves_alone_a_file_that_is_not_the_loops(tmp_path):
    path = tmp_path / "inventory.yml"
    text = "all:\n  children:\n    brokers:\n      hosts:\n        b1: {}\n"
    path.write_text(text)
    out = run({"path": str(path), "host": "spare-1"}, tmp_path)
    assert out["failed"] is True and "key 'all' is not one of brokers" in out["msg"], out
    assert path.read_text() == text
    path.write_text("brokers: [unclosed\n")
    out = run({"path": str(path), "host": "spare-1"}, tmp_path)
    assert out["failed"] is True and "is not YAML" in out["msg"] and "left alone" in out["msg"]
    out = run({"path": str(tmp_path / "inventory.ini"), "host": "spare-1"}, tmp_path)
    assert out["failed"] is True and "does not end with .yml or .yaml" in out["msg"]
    out = run({"path": str(tmp_path / "i.yml"), "host": "spare-1", "group": "routers"}, tmp_path)
    assert out["failed"] is True and "routers" in out["msg"]


def test_module_names_a_directory_it_cannot_write(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        out = run({"path": str(ro / "inventory.yml"), "host": "spare-1"}, tmp_path)
    finally:
        ro.chmod(0o700)
    assert out["failed"] is True and "cannot write the loop inventory" in out["msg"], out


def test_ansible_merges_the_loop_file_with_the_operators_inventory(tmp_path):
    if not shutil.which("ansible-inventory"):
        pytest.skip("ansible-inventory is not installed")
    operator = tmp_path / "hosts.yml"
    operator.write_text("all:\n  children:\n    brokers:\n      hosts:\n        b1: {}\n        b2: {}\n"
                        "    brokers_spare:\n      hosts:\n        spare-1: {ansible_host: 10.0.0.9}\n")
    loop = tmp_path / "loop.yml"
    loop.write_text(model.render({}))
    env = dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_WARNING="True")

    def inventory(*sources):
        cmd = ["ansible-inventory", "--list"]
        for s in sources:
            cmd += ["-i", str(s)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=True)
        assert "WARNING" not in proc.stderr, proc.stderr
        return json.loads(proc.stdout)

    assert inventory(operator, loop)["brokers"]["hosts"] == ["b1", "b2"]  # the empty loop file parses
    assert run({"path": str(loop), "host": "spare-1"}, tmp_path)["changed"] is True
    merged = inventory(operator, loop)
    assert merged["brokers"]["hosts"] == ["b1", "b2", "spare-1"]  # at the end
    assert merged["brokers_spare"]["hosts"] == ["spare-1"]
    assert merged["_meta"]["hostvars"]["spare-1"] == {"ansible_host": "10.0.0.9"}
