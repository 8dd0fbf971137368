"""messaging_user and messaging_user_info against a real Keycloak 26.4.7
(the session's ``keycloak`` fixture), on a realm made by
keycloak/realm.ensure_realm (what address_space calls): users created,
changed and removed; check mode changes nothing; a second run changes nothing;
prune leaves a hand-made user alone; a password change makes the old password
fail at the token endpoint and the new one work; the token's groups are the
authorization's; no password in any output."""
import base64
import json
import uuid

import pytest

import helpers

from ansible_collections.enmasse.messaging.plugins.module_utils.auth.backends import (
    authorization_to_groups, groups_to_address_authz)
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import client as kc_client
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import realm

pytestmark = pytest.mark.integration

ORDERS = [{"addresses": ["orders/*"], "operations": ["send"]}, {"addresses": ["audit"], "operations": ["recv"]}]


@pytest.fixture
def realm_space(keycloak, keycloak_admin):
    """A fresh space realm made by the collection's own ensure_realm."""
    name = "u" + uuid.uuid4().hex[:10]
    client = kc_client.KeycloakClient(keycloak.url, keycloak.admin_user, keycloak.admin_password)
    realm.ensure_realm(client, name)
    yield name
    realm.remove_realm(client, name)


def conn(keycloak):
    return dict(keycloak_url=keycloak.url, keycloak_admin_user=keycloak.admin_user,
                keycloak_admin_password=keycloak.admin_password)


def run(keycloak, module, check=False, **args):
    res = helpers.run_module(module, dict(conn(keycloak), **args), check_mode=check, diff=True)
    assert keycloak.admin_password not in res.stdout
    return res


def claims(body):
    payload = body["access_token"].split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def grant(keycloak_admin, realm_name, user, password):
    """(status, body) of the password grant at the realm's token endpoint."""
    return keycloak_admin.password_grant(realm_name, user, password)


def test_the_realm_of_ensure_realm_lets_a_user_log_in_with_its_groups(keycloak, keycloak_admin, realm_space):
    client = kc_client.KeycloakClient(keycloak.url, keycloak.admin_user, keycloak.admin_password)
    assert realm.ensure_realm(client, realm_space) == {"changed": False, "created": False, "changes": []}
    res = run(keycloak, "messaging_user", address_space=realm_space, username="a", password="pw-a-1",
              authorization=ORDERS)
    assert res.rc == 0 and res.result["changes"]["created"] == ["a"], res.result
    status, body = grant(keycloak_admin, realm_space, "a", "pw-a-1")
    assert status == 200, body  # a one-character name, no e-mail or names: not "Account is not fully set up"
    token = claims(body)
    assert token["preferred_username"] == "a"
    assert sorted(token["groups"]) == authorization_to_groups(ORDERS)
    assert groups_to_address_authz(token["groups"]) == {"orders/*": ["send"], "audit": ["recv"]}


def test_create_check_mode_second_run_change_and_remove(keycloak, keycloak_admin, realm_space):
    args = dict(address_space=realm_space, username="alice", password="first-pass-1", authorization=ORDERS)
    res = run(keycloak, "messaging_user", check=True, **args)
    assert res.rc == 0 and res.result["changed"] and res.result["changes"]["created"] == ["alice"]
    assert run(keycloak, "messaging_user_info", address_space=realm_space).result["users"] == []
    assert grant(keycloak_admin, realm_space, "alice", "first-pass-1")[0] == 401

    res = run(keycloak, "messaging_user", **args)
    assert res.rc == 0 and res.result["changed"], res.result
    assert "first-pass-1" not in res.stdout
    assert res.result["diff"]["after"]["alice"]["password"] == "(hidden, changed)"
    assert grant(keycloak_admin, realm_space, "alice", "first-pass-1")[0] == 200

    again = run(keycloak, "messaging_user", **args)
    assert again.rc == 0 and again.result["changed"] is False, again.result

    # a new password and new permissions: check mode first, nothing changes
    new = dict(args)
    new.update(password="second-pass-2", authorization=[{"addresses": ["*"], "operations": ["send", "recv"]}])
    res = run(keycloak, "messaging_user", check=True, **new)
    assert res.result["changes"]["updated"] == ["alice"]
    assert grant(keycloak_admin, realm_space, "alice", "first-pass-1")[0] == 200
    res = run(keycloak, "messaging_user", **new)
    assert res.rc == 0 and res.result["changes"]["updated"] == ["alice"]
    assert "second-pass-2" not in res.stdout and "first-pass-1" not in res.stdout
    assert res.result["diff"]["before"]["alice"]["password"] == "(hidden)"
    status, body = grant(keycloak_admin, realm_space, "alice", "first-pass-1")
    assert status == 401 and body.get("error") == "invalid_grant"
    status, body = grant(keycloak_admin, realm_space, "alice", "second-pass-2")
    assert status == 200 and sorted(claims(body)["groups"]) == ["recv_%2A", "send_%2A"]
    assert run(keycloak, "messaging_user", **new).result["changed"] is False

    # disabled: the password no longer works; enabled again: it does
    assert run(keycloak, "messaging_user", enabled=False, **new).result["changed"]
    assert grant(keycloak_admin, realm_space, "alice", "second-pass-2")[0] in (400, 401)
    assert run(keycloak, "messaging_user", **new).result["changed"]
    assert grant(keycloak_admin, realm_space, "alice", "second-pass-2")[0] == 200

    res = run(keycloak, "messaging_user", address_space=realm_space, username="alice", state="absent")
    assert res.result["changes"]["deleted"] == ["alice"]
    assert grant(keycloak_admin, realm_space, "alice", "second-pass-2")[0] == 401
    assert run(keycloak, "messaging_user", address_space=realm_space, username="alice", state="absent").result[
        "changed"] is False


def test_bulk_documents_prune_leaves_a_hand_made_user_alone(keycloak, keycloak_admin, realm_space):
    keycloak_admin.request("POST", "/%s/users" % realm_space, {
        "username": "hand", "enabled": True,
        "credentials": [{"type": "password", "value": "hand-pw", "temporary": False}]})
    doc = {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser", "metadata": {"name": realm_space + ".doc"},
           "spec": {"username": "doc", "authentication": {"type": "password",
                                                          "password": base64.b64encode(b"doc-pw-9").decode()},
                    "authorization": [{"operations": ["view"]}]}}
    users = [{"username": "b1", "password": "b1-pw"}, {"username": "b2", "password": "b2-pw"}, doc]
    res = run(keycloak, "messaging_user", address_space=realm_space, users=users)
    assert res.rc == 0 and sorted(res.result["changes"]["created"]) == ["b1", "b2", "doc"], res.result
    assert "doc-pw-9" not in res.stdout and base64.b64encode(b"doc-pw-9").decode() not in res.stdout
    status, body = grant(keycloak_admin, realm_space, "doc", "doc-pw-9")
    assert status == 200 and claims(body)["groups"] == ["monitor"]

    res = run(keycloak, "messaging_user", check=True, address_space=realm_space, users=users[:1], prune=True)
    assert sorted(res.result["changes"]["deleted"]) == ["b2", "doc"]
    assert grant(keycloak_admin, realm_space, "b2", "b2-pw")[0] == 200
    res = run(keycloak, "messaging_user", address_space=realm_space, users=users[:1], prune=True)
    assert sorted(res.result["changes"]["deleted"]) == ["b2", "doc"]
    info = run(keycloak, "messaging_user_info", address_space=realm_space).result["users"]
    assert [(u["username"], u["owned"]) for u in info] == [("b1", True), ("hand", False)]
    assert grant(keycloak_admin, realm_space, "hand", "hand-pw")[0] == 200
    assert run(keycloak, "messaging_user", address_space=realm_space, users=users[:1], prune=True).result[
        "changed"] is False


def test_bad_input_fails_before_keycloak_is_touched(keycloak, realm_space):
    bad_rule = [{"addresses": ["a*b"], "operations": ["send"]}]
    users = [{"username": "ok", "password": "secret-ok"},
             {"username": "Bad", "password": "secret-bad", "authorization": bad_rule}]
    res = run(keycloak, "messaging_user", address_space=realm_space, users=users)
    assert res.rc != 0 and len(res.result["errors"]) == 2, res.result
    assert "secret-ok" not in res.stdout and "secret-bad" not in res.stdout
    assert run(keycloak, "messaging_user_info", address_space=realm_space).result["users"] == []


def test_a_space_without_realm_and_a_wrong_admin_password_are_named(keycloak):
    res = run(keycloak, "messaging_user", address_space="nosuchspace", username="a", password="pw-nosuch-1")
    assert res.rc != 0 and "realm 'nosuchspace' does not exist" in res.result["msg"]
    res = helpers.run_module("messaging_user_info", dict(conn(keycloak), keycloak_admin_password="wrong",
                                                         address_space="nosuchspace"))
    assert res.rc != 0 and "refused the admin login" in res.result["msg"]


def test_a_brokered_address_space_makes_and_removes_its_realm(keycloak, keycloak_admin, space):
    """``space``: the Artemis fixture's brokered space ``itest``
    (conftest.py); address_space with the Keycloak options makes the realm the
    users then live in, and removes it with the space."""
    name = space.name
    if keycloak_admin.realm_exists(name):
        keycloak_admin.delete_realm(name)
    kc = conn(keycloak)
    res = space.run("address_space", check_mode=True, type="brokered", plan=helpers.DEFAULT_PLAN, **kc)
    assert res.rc == 0 and res.result["realm"]["created"] and not keycloak_admin.realm_exists(name), res
    res = space.run("address_space", type="brokered", plan=helpers.DEFAULT_PLAN, **kc)
    assert res.rc == 0 and res.result["changed"] and keycloak_admin.realm_exists(name), res
    assert keycloak.admin_password not in res.stdout
    again = space.run("address_space", type="brokered", plan=helpers.DEFAULT_PLAN, **kc)
    assert again.rc == 0 and again.result["changed"] is False and again.result["realm"]["changes"] == [], again
    assert run(keycloak, "messaging_user", address_space=name, username="app", password="app-pw-1",
               authorization=[{"addresses": ["*"], "operations": ["send"]}]).rc == 0
    status, body = grant(keycloak_admin, name, "app", "app-pw-1")
    assert status == 200 and claims(body)["groups"] == ["send_%2A"]
    res = space.run("address_space", state="absent", force=True, **kc)
    assert res.rc == 0 and res.result["realm"]["changes"] == ["realm %s deleted" % name], res
    assert not keycloak_admin.realm_exists(name)
    assert grant(keycloak_admin, name, "app", "app-pw-1")[0] == 404


def test_the_realms_password_policy_decides_how_keycloak_hashes_and_a_user_is_made_in_one_request(
        keycloak, keycloak_admin, realm_space):
    """ensure_realm's default policy reaches Keycloak as written; a user made
    by the module (one request with password and groups) gets a credential
    hashed by it and logs in; with the policy "" (Keycloak's default) a new
    password is hashed with argon2."""
    status, rep, unused = keycloak_admin.request("GET", "/" + realm_space)
    assert rep["passwordPolicy"] == realm.PASSWORD_POLICY == "hashAlgorithm(pbkdf2-sha256) and hashIterations(10000)"
    run(keycloak, "messaging_user", address_space=realm_space, username="hashed", password="Hashed-pw-1",
        authorization=ORDERS)

    def credential():
        uid = keycloak_admin.user_id(realm_space, "hashed")
        status, creds, unused = keycloak_admin.request("GET", "/%s/users/%s/credentials" % (realm_space, uid))
        return json.loads(creds[0]["credentialData"])

    assert (credential()["algorithm"], credential()["hashIterations"]) == ("pbkdf2-sha256", 10000)
    status, body = grant(keycloak_admin, realm_space, "hashed", "Hashed-pw-1")
    assert status == 200 and sorted(claims(body)["groups"]) == authorization_to_groups(ORDERS)
    client = kc_client.KeycloakClient(keycloak.url, keycloak.admin_user, keycloak.admin_password)
    out = realm.ensure_realm(client, realm_space, password_policy="")
    assert out["changes"] == ["password policy (Keycloak's default)"]
    assert realm.ensure_realm(client, realm_space, password_policy="")["changed"] is False
    run(keycloak, "messaging_user", address_space=realm_space, username="hashed", password="Hashed-pw-2",
        authorization=ORDERS)
    assert credential()["algorithm"] == "argon2"
