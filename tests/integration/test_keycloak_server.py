"""The test Keycloak (keycloak_server.py) and the realm layout of the identity
contract (keycloak_admin.py): a user's password grant gives an access token
whose ``groups`` claim carries EnMasse's group encoding; wrong password,
unknown and disabled users are ``invalid_grant``; a stopped Keycloak refuses
connections and, started again, still has its realms and users."""

import base64
import json
import urllib.error
import urllib.request

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends

pytestmark = pytest.mark.integration

SPACE = "kcfixture"


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode())


@pytest.fixture
def realm(keycloak_admin):
    keycloak_admin.create_space_realm(SPACE)
    groups = backends.authorization_to_groups([{"addresses": ["orders/*"], "operations": ["send", "recv"]}])
    keycloak_admin.create_user(SPACE, "alice", "alice-pw-1", groups)
    keycloak_admin.create_user(SPACE, "bob", "bob-pw-1", [])
    yield keycloak_admin
    if keycloak_admin.realm_exists(SPACE):
        keycloak_admin.delete_realm(SPACE)


def test_password_grant_carries_groups(realm):
    status, body = realm.password_grant(SPACE, "alice", "alice-pw-1")
    assert status == 200, body
    token = claims(body["access_token"])
    assert token["preferred_username"] == "alice"
    assert sorted(token["groups"]) == ["recv_orders%2F%2A", "send_orders%2F%2A"]
    assert backends.groups_to_address_authz(token["groups"]) == {"orders/*": ["recv", "send"]}


def test_refusals_are_invalid_grant(realm):
    for user, password in (("alice", "wrong"), ("nobody", "alice-pw-1")):
        status, body = realm.password_grant(SPACE, user, password)
        assert (status, body.get("error")) == (401, "invalid_grant"), (user, status, body)
    realm.set_enabled(SPACE, "bob", False)
    status, body = realm.password_grant(SPACE, "bob", "bob-pw-1")
    assert status in (400, 401) and body.get("error") == "invalid_grant", body


def test_stop_and_start_keep_the_data(keycloak, realm):
    keycloak.stop()
    try:
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(keycloak.url + "/realms/" + SPACE, timeout=3)
    finally:
        keycloak.start()
    status, body = realm.password_grant(SPACE, "alice", "alice-pw-1")
    assert status == 200, body
    print("keycloak start times (s):", keycloak.start_seconds)
