"""Secrets never reach a module's output: the management password (option or
connection file), a password in a management or router URL, the
Authorization header. The modules run as Ansible runs them (a subprocess
reading its arguments on stdin) against a port where nothing listens."""
import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.enmasse.messaging.plugins.module_utils import args
from ansible_collections.enmasse.messaging.plugins.module_utils import connection
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as artemis_client
from ansible_collections.enmasse.messaging.plugins.module_utils import redact
from ansible_collections.enmasse.messaging.plugins.module_utils import runner

pytestmark = pytest.mark.unit

FILE_PASSWORD = "filesecret42x"
URL_PASSWORD = "urlsecret77x"
OPTION_PASSWORD = "optionsecret99x"
ROUTER_PASSWORD = "routersecret55x"
SECRETS = (FILE_PASSWORD, URL_PASSWORD, OPTION_PASSWORD, ROUTER_PASSWORD)


def test_url_password_and_redact_url():
    assert redact.url_password("http://u:p%40ss@h:1/x") == "p%40ss"
    assert redact.url_password("http://u@h:1/x") is None
    assert redact.url_password("http://h:1/x") is None
    assert redact.url_password(None) is None
    assert redact.redact_url("amqps://u:secret@router:5671") == "amqps://u:********@router:5671"
    assert redact.redact_url("http://u:secret@h:1/console/jolokia") == "http://u:********@h:1/console/jolokia"
    assert redact.redact_url("http://h:1/console/jolokia") == "http://h:1/console/jolokia"


def test_management_password_is_no_log():
    assert args.argument_spec()["management_password"]["no_log"] is True


def test_hide_secrets_registers_file_and_url_passwords():
    class Module(object):
        no_log_values = set()

    m = Module()
    runner.hide_secrets(m, *connection.secrets_of({"management_password": "pw",
                                                   "management_url": "http://u:upw@127.0.0.1:1/"}))
    runner.hide_secrets(m, None, "")
    assert m.no_log_values == {"pw", "upw"}


def test_jolokia_errors_name_neither_password_nor_header():
    client = artemis_client.JolokiaClient("http://admin:%s@127.0.0.1:1/console/jolokia" % URL_PASSWORD,
                                          "admin", OPTION_PASSWORD, timeout=2)
    with pytest.raises(artemis_client.JolokiaError) as e:
        client.read("java.lang:type=Runtime")
    text = str(e.value)
    assert URL_PASSWORD not in text and OPTION_PASSWORD not in text
    assert "Authorization" not in text and "Basic " not in text


def run_module(name, args, tmp_path, secrets=SECRETS):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.enmasse.messaging.plugins.modules." + name],
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": args}), capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=120, check=False)
    out = proc.stdout + proc.stderr
    for secret in secrets:
        assert secret not in out, "%s leaked by %s: %s" % (secret, name, out)
    assert "Authorization" not in out
    return json.loads(proc.stdout)


@pytest.fixture
def conn_file(tmp_path):
    path = tmp_path / "demo.json"
    path.write_text(json.dumps({
        "address_space": "demo", "type": "brokered", "plan": "brokered-single-broker",
        "management_url": "http://admin:%s@127.0.0.1:1/console/jolokia" % URL_PASSWORD,
        "management_user": "admin", "management_password": FILE_PASSWORD, "broker_name": "demo",
        "ledger_path": str(tmp_path / "ledger.json")}))
    return str(path)


@pytest.mark.parametrize("name,args", [
    ("address", {"address_space": "demo", "address": "q1", "type": "queue", "plan": "brokered-queue"}),
    ("address", {"address_space": "demo", "address": "!!bad", "type": "queue", "plan": "brokered-queue"}),
    ("address_info", {"address_space": "demo"}),
    ("address_space", {"name": "demo"}),
    ("address_space", {"name": "demo", "state": "absent"}),
    ("address_space_info", {"name": "demo"}),
])
def test_modules_never_print_the_connection_file_password(name, args, conn_file, tmp_path):
    res = run_module(name, dict(args, connection_file=conn_file), tmp_path)
    assert res.get("failed") or res.get("address_space", {}).get("status", {}).get("ready") is False


def test_explicit_password_option_is_masked_in_invocation(conn_file, tmp_path):
    res = run_module("address_info", {"address_space": "demo", "connection_file": conn_file,
                                      "management_password": OPTION_PASSWORD}, tmp_path)
    assert res["failed"]
    assert res["invocation"]["module_args"]["management_password"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def test_metrics_collect_masks_router_and_broker_passwords(conn_file, tmp_path):
    res = run_module("metrics_collect", {"address_space": "demo", "connection_file": conn_file,
                                         "router_url": "amqp://admin:%s@127.0.0.1:1" % ROUTER_PASSWORD,
                                         "router_timeout": 2, "_ansible_check_mode": True}, tmp_path)
    assert res["failed"]
    assert {e["source"] for e in res["errors"]} == {"broker", "router"}


def test_trim_masking_keeps_only_hidden_values_the_output_still_holds():
    class Module(object):
        pass

    m = Module()
    m.no_log_values = {"admin-pw"}
    m.params = {"users": [{"username": "u1", "password": "pw-one-1234"}, {"username": "u2", "password": "pw-two-5678"}],
                "keycloak_admin_password": "admin-pw"}
    runner.hide_secrets(m, "pw-one-1234", "pw-two-5678", "admin-pw")
    result = {"changed": False, "msg": "bad password pw-two-5678 for u2"}
    runner.trim_masking(m, result, [])
    # whole parameter values are replaced as Ansible would; admin-pw was Ansible's own no_log value: kept
    assert m.params["users"][0]["password"] == runner.PLACEHOLDER == m.params["users"][1]["password"]
    assert m.params["keycloak_admin_password"] == "admin-pw"   # Ansible masks it (its no_log option)
    # the value still in the output stays for Ansible to mask; the other goes (no quadratic masking)
    assert m.no_log_values == {"admin-pw", "pw-two-5678"}


def test_messaging_user_bulk_passwords_are_never_printed(tmp_path):
    secrets = ["bulkpw-%03d-secret" % i for i in range(50)]
    users = [{"username": "user-%03d" % i, "password": p, "authorization": [{"addresses": ["*"], "operations": ["send"]}]}
             for i, p in enumerate(secrets)]
    users.append({"username": "enc", "authentication": {"type": "password", "password": "authpw-secret-1"}})
    res = run_module("messaging_user", {"address_space": "demo", "users": users, "keycloak_url": "https://127.0.0.1:1",
                                        "keycloak_admin_password": "kcadmin-secret-1"},
                     tmp_path, secrets=secrets + ["authpw-secret-1", "kcadmin-secret-1"])
    assert res["failed"]
    shown = res["invocation"]["module_args"]["users"]
    assert [u["username"] for u in shown[:2]] == ["user-000", "user-001"]
    assert shown[0]["password"] == runner.PLACEHOLDER


def test_messaging_user_logs_no_invocation_on_the_host(monkeypatch):
    from ansible_collections.enmasse.messaging.plugins.modules import messaging_user
    seen = {}
    monkeypatch.setattr(messaging_user.runner, "main", lambda options, action, **kw: seen.update(kw))
    messaging_user.main()
    # AnsibleModule(no_log=True): no "Invoked with users=[...]" line (with the passwords) in the host's journal
    assert seen["no_log"] is True


def _tasks(items):
    for task in items or []:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always"):
                yield from _tasks(task.get(key))


KEY_FILE = re.compile(r"\.key\b|'key'")


def test_a_role_that_copies_a_private_key_never_prints_it_in_a_diff():
    """`--diff` shows what copy and template write: a task that writes a
    private key (a `.key` file) must say `diff: false` (or `no_log`)."""
    roles = os.path.join(os.path.dirname(__file__), "..", "..", "roles")
    seen, bad = [], []
    for path in sorted(glob.glob(os.path.join(roles, "*", "tasks", "*.yml"))):
        with open(path) as f:
            tasks = yaml.safe_load(f)
        for task in _tasks(tasks):
            module = next((m for m in ("ansible.builtin.copy", "ansible.builtin.template") if m in task), None)
            args = task[module] if module is not None and isinstance(task[module], dict) else {}
            if module is None or not KEY_FILE.search(json.dumps([args.get("src"), args.get("dest"), task.get("loop")])):
                continue
            seen.append(task["name"])
            if task.get("diff") is not False and task.get("no_log") is not True:
                bad.append("%s: %s" % (os.path.relpath(path, roles), task["name"]))
    assert len(seen) >= 6, seen  # the TLS files of the router (2), broker, auth service, gateway, keycloak, monitoring
    assert bad == [], bad
