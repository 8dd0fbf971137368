"""The address action plugin's reading of ``src`` (YAML or JSON, a list or a
mapping with an ``addresses`` list) and its refusals."""
import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.enmasse.messaging.plugins.action.address import load_addresses
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.input_files import read_addresses_file

Q = {"address": "q", "type": "queue", "plan": "brokered-queue"}


@pytest.mark.parametrize("text", [
    '[{"address": "q", "type": "queue", "plan": "brokered-queue"}]',
    '{"addresses": [{"address": "q", "type": "queue", "plan": "brokered-queue"}], "other": 1}',
    "- {address: q, type: queue, plan: brokered-queue}\n",
    "addresses:\n  - address: q\n    type: queue\n    plan: brokered-queue\n",
])
def test_load_addresses_yaml_or_json(tmp_path, text):
    path = tmp_path / "a.yml"
    path.write_text(text)
    assert load_addresses(str(path)) == [Q]


@pytest.mark.parametrize("text, rule", [
    ("just: a mapping\n", "must hold a list of addresses"),
    ("42\n", "must hold a list of addresses"),
    ("[unclosed\n", "neither JSON nor YAML"),
])
def test_load_addresses_refuses(tmp_path, text, rule):
    path = tmp_path / "a.yml"
    path.write_text(text)
    with pytest.raises(AnsibleActionFail) as e:
        load_addresses(str(path))
    assert rule in str(e.value) and str(path) in str(e.value)


def test_module_reads_the_json_the_action_wrote(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('{"addresses": [{"address": "q", "type": "queue", "plan": "brokered-queue"}]}')
    assert read_addresses_file(str(path)) == [Q]
    path.write_text("- not json")
    with pytest.raises(ConfigError) as e:
        read_addresses_file(str(path))
    assert "is not JSON" in str(e.value)
    with pytest.raises(ConfigError):
        read_addresses_file(str(tmp_path / "missing.json"))


# ------------------------------------------------------------------ a long inline list (docs/benchmarks.md)

class _Templar(object):
    def __init__(self):
        self.calls = 0

    def template(self, value):
        self.calls += 1
        return value


def test_long_plain_inline_list_is_not_templated():
    """Templating 10,000 plain items changes nothing and cost seconds
    (ansible-core 2.19); a list with a template in it is templated."""
    from ansible_collections.enmasse.messaging.plugins.action.address import INLINE_AS_FILE, ActionModule
    many = [dict(Q, address="q%d" % i) for i in range(INLINE_AS_FILE)]
    t = _Templar()
    assert ActionModule.finalize_task_arg("addresses", many, t, None) is many and t.calls == 0
    for name, value in (("addresses", many[:-1]), ("addresses", many + [dict(Q, plan="{{ plan }}")]),
                        ("addresses", many + [{"address": "{# x #}"}]), ("address_space", "s")):
        t = _Templar()
        ActionModule.finalize_task_arg(name, value, t, None)
        assert t.calls == 1, (name, len(value))


def test_long_inline_list_travels_as_a_file(tmp_path, monkeypatch):
    """The module gets the list as the src file (not an argument it validates
    and echoes), and the task result does not carry it back."""
    import json
    from types import SimpleNamespace
    from ansible.plugins.action import ActionBase
    from ansible_collections.enmasse.messaging.plugins.action.address import INLINE_AS_FILE, ActionModule
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    many = [dict(Q, address="q%d" % i) for i in range(INLINE_AS_FILE)]
    sent = {}
    action = ActionModule.__new__(ActionModule)
    action._task = SimpleNamespace(args={"address_space": "s", "addresses": many})
    action._connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir=str(tmp_path), join_path=lambda *p: "/".join(p)))
    action._transfer_file = lambda local, remote: sent.update(data=json.load(open(local)), remote=remote)
    action._fixup_perms2 = lambda paths: None
    action._remove_tmp_path = lambda path: None
    action._execute_module = lambda module_args, task_vars: sent.update(args=module_args) or {"changed": False}
    assert action.run(task_vars={}) == {"changed": False}
    assert sent["args"] == {"address_space": "s", "src": str(tmp_path) + "/addresses.json"} and sent["data"] == many
    assert action._task.args["addresses"] == "(%d addresses, sent to the module as a file)" % INLINE_AS_FILE
    # a short list is an argument, as before
    action._task = SimpleNamespace(args={"address_space": "s", "addresses": many[:2]})
    action.run(task_vars={})
    assert sent["args"] == {"address_space": "s", "addresses": many[:2]}
