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
