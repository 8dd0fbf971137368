"""The messaging_user modules as Ansible runs them (a subprocess, JSON
arguments), against a Keycloak that is not there (127.0.0.1:1): the option
constraints, the errors, and that no password (plain, base64 or the admin's)
reaches the output on any path."""
import base64
import json
import os
import subprocess
import sys

import pytest

ADMIN = "admin-Secret-1"
USER_PW = "user-Secret-2"
DOC_PW = "doc-Secret-3"
SECRETS = (ADMIN, USER_PW, DOC_PW, base64.b64encode(DOC_PW.encode()).decode())
KC = {"keycloak_url": "http://127.0.0.1:1", "keycloak_admin_password": ADMIN, "keycloak_timeout": 5}


def run_module(name, args, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.enmasse.messaging.plugins.modules." + name],
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": dict(KC, **args)}), capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), timeout=120, check=False)
    out = proc.stdout + proc.stderr
    for secret in SECRETS:
        assert secret not in out, "%s leaked: %s" % (secret, out)
    return json.loads(proc.stdout)


def doc():
    return {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser", "metadata": {"name": "s1.d"},
            "spec": {"username": "d", "authentication": {"type": "password",
                                                         "password": base64.b64encode(DOC_PW.encode()).decode()}}}


def test_an_unreachable_keycloak_is_named_and_no_secret_shown(tmp_path):
    out = run_module("messaging_user", {"address_space": "s1", "users": [
        {"username": "u", "password": USER_PW}, doc()]}, tmp_path)
    assert out["failed"] and "cannot reach Keycloak at http://127.0.0.1:1" in out["msg"]
    out = run_module("messaging_user_info", {"address_space": "s1"}, tmp_path)
    assert out["failed"] and "cannot reach Keycloak" in out["msg"]


def test_bad_input_is_refused_before_keycloak_and_no_secret_shown(tmp_path):
    bad = dict(doc(), metadata={"name": "s2.d"})
    out = run_module("messaging_user", {"address_space": "s1", "users": [
        {"username": "U", "password": USER_PW}, bad]}, tmp_path)
    assert out["failed"] and len(out["errors"]) == 2, out
    assert "cannot reach" not in out["msg"]


@pytest.mark.parametrize("args, message", [
    ({"username": "u", "users": []}, "mutually exclusive"),
    ({"username": "u", "password": USER_PW, "authentication": {"type": "password", "password": USER_PW}},
     "mutually exclusive"),
    ({"password": USER_PW}, "one of the following is required"),
    ({"users": [], "authorization": []}, "mutually exclusive"),
])
def test_option_constraints(tmp_path, args, message):
    out = run_module("messaging_user", dict({"address_space": "s1"}, **args), tmp_path)
    assert out["failed"] and message in out["msg"], out
