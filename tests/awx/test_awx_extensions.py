"""The AWX / Automation Controller files in extensions/awx/ against the playbook
they serve (playbooks/addresses.yml) and the modules' connection options:
the custom credential type injects extra vars that the playbook hands to
connection options, the survey asks for exactly the variables the playbook
reads, and every variable the playbook reads is documented in its header.
(tests/integration/test_awx_runner.py runs the playbook with them.)"""

import json
import os
import re
import subprocess
import sys

import jinja2
import jinja2.meta
import pytest
import yaml

pytestmark = [pytest.mark.unit, pytest.mark.awx]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(REPO, "playbooks", "addresses.yml")
CREDENTIAL_TYPE = os.path.join(REPO, "extensions", "awx", "credential_type_management.yml")
SURVEY = os.path.join(REPO, "extensions", "awx", "survey_addresses.json")
MODULE_GROUP = "group/enmasse.messaging.all"
# AWX's question types and credential type kinds users may create
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}
CREDENTIAL_KINDS = {"cloud", "net"}


def load_credential_type():
    with open(CREDENTIAL_TYPE) as f:
        return yaml.safe_load(f)


def load_survey():
    with open(SURVEY) as f:
        return json.load(f)


def playbook_text():
    with open(PLAYBOOK) as f:
        return f.read()


def playbook_variables(text):
    """``enmasse_*`` variables used in the playbook's plays (not its comments)."""
    code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    return set(re.findall(r"\benmasse_[a-z0-9_]+\b", code))


def playbook_header(text):
    return "\n".join(ln for ln in text.splitlines() if ln.startswith("#"))


def template_variables(template):
    return jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(template))


@pytest.fixture(scope="module")
def connection_options():
    """The connection options of enmasse.messaging.address, from ansible-doc."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    proc = subprocess.run(["ansible-doc", "--json", "enmasse.messaging.address"], env=env,
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["enmasse.messaging.address"]["doc"]["options"]


def test_credential_type_is_a_valid_awx_credential_type():
    ct = load_credential_type()
    assert ct["kind"] in CREDENTIAL_KINDS and ct["name"]
    fields = ct["inputs"]["fields"]
    ids = [f["id"] for f in fields]
    assert len(ids) == len(set(ids))
    assert set(ct["inputs"]["required"]) <= set(ids)
    for f in fields:
        assert f["type"] == "string" and f["label"], f
        if re.search(r"password|secret|token", f["id"]):
            assert f.get("secret") is True, "%s must be secret: true" % f["id"]
    assert set(ct["injectors"]) == {"extra_vars"}
    used = set()
    for key, template in ct["injectors"]["extra_vars"].items():
        names = template_variables(template)
        assert names <= set(ids), "injector %s uses %s, not inputs" % (key, names - set(ids))
        used |= names
    assert used == set(ids), "inputs never injected: %s" % (set(ids) - used)


def test_credential_injects_what_the_playbook_passes_to_connection_options(connection_options):
    ct = load_credential_type()
    plays = yaml.safe_load(playbook_text())
    defaults = plays[0]["module_defaults"][MODULE_GROUP]
    for var, template in ct["injectors"]["extra_vars"].items():
        targets = [opt for opt, value in defaults.items() if var in template_variables(value)]
        assert len(targets) == 1, "extra var %s reaches %s of the playbook's module_defaults" % (var, targets)
        option = targets[0]
        assert option in connection_options, "%s is not an option of the modules" % option
        # the input's name is the option it ends up in
        assert template_variables(template) == {option}


def test_survey_asks_for_what_the_playbook_reads():
    survey = load_survey()
    text = playbook_text()
    used = playbook_variables(text)
    header = playbook_header(text)
    variables = [q["variable"] for q in survey["spec"]]
    assert len(variables) == len(set(variables))
    assert survey["name"] and survey["description"]
    for q in survey["spec"]:
        assert q["type"] in SURVEY_TYPES, q
        assert re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", q["variable"]), q
        assert q["question_name"] and isinstance(q["required"], bool), q
        assert q["variable"] in used, "the playbook never reads the survey variable %s" % q["variable"]
        assert q["variable"] in header, "%s is not documented in the playbook's header" % q["variable"]
        if q["type"] in ("multiplechoice", "multiselect"):
            assert q["default"] in q["choices"], q
        elif "max" in q and q.get("default"):
            assert q["min"] <= len(q["default"]) <= q["max"], q
    # the address list is free text (a textarea) that the playbook parses
    [addresses] = [q for q in survey["spec"] if q["type"] == "textarea"]
    default = yaml.safe_load(addresses["default"])
    assert isinstance(default, list) and all(isinstance(a, dict) and "address" in a for a in default)
    # yes/no answers arrive as strings: the playbook must cast them
    for q in survey["spec"]:
        if q["type"] == "multiplechoice" and set(q["choices"]) == {"true", "false"}:
            assert re.search(r"\b%s\b[^}]*\|\s*bool" % q["variable"], text), q["variable"]


def test_every_playbook_variable_is_documented_and_asked_or_injected():
    text = playbook_text()
    header = playbook_header(text)
    survey = set(q["variable"] for q in load_survey()["spec"])
    injected = set(load_credential_type()["injectors"]["extra_vars"])
    assert not survey & injected
    for var in playbook_variables(text):
        assert var in header, "%s is read by the playbook but not documented in its header" % var
    # the survey's required questions are the playbook's required input
    required = set(q["variable"] for q in load_survey()["spec"] if q["required"])
    assert {"enmasse_address_space", "enmasse_addresses"} <= required


def test_playbook_syntax(tmp_path):
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env["ANSIBLE_LOCALHOST_WARNING"] = "False"
    inventory = tmp_path / "hosts"
    inventory.write_text("[brokers]\nb1 ansible_connection=local\n")
    proc = subprocess.run(["ansible-playbook", "--syntax-check", "-i", str(inventory), PLAYBOOK],
                          env=env, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
