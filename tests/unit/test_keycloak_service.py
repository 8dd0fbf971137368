"""The Keycloak service (keycloak/realm.py, keycloak/users.py, the backend)
through the real client over a fake HTTP layer (fake_keycloak.py): the
realm of the contract, users converged with groups, owned-only prune,
password change detection, check mode writes nothing, errors."""
import pytest

from fake_keycloak import FakeKeycloak

from ansible_collections.enmasse.messaging.plugins.module_utils import backends
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import (
    ConfigError, ServiceError, ValidationError)
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import client as kc_client
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import realm
from ansible_collections.enmasse.messaging.plugins.module_utils.request import Request

ALL = [{"addresses": ["*"], "operations": ["send", "recv"]}]


@pytest.fixture
def kc(monkeypatch):
    fake = FakeKeycloak()
    monkeypatch.setattr(kc_client.KeycloakClient, "_open", lambda self, req: fake.open(req))
    return fake


def run(op, check=False, hidden=None, **params):
    p = dict(keycloak_url="http://kc.test", keycloak_admin_user="admin", keycloak_admin_password="adminpw",
             address_space="s1", prune=False, update_password="always", state="present")
    p.update(params)
    hide = hidden.extend if hidden is not None else None
    return backends.run(op, Request(p, check_mode=check, diff=True, hide=hide))


def user(name, password="pw", authorization=None, **extra):
    return dict(username=name, password=password, authorization=ALL if authorization is None else authorization,
                **extra)


# ------------------------------------------------------------ realm

def test_realm_is_made_as_the_contract_says_and_a_second_run_changes_nothing(kc):
    client = kc.client()
    assert realm.ensure_realm(client, "s1", check_mode=True)["changed"] and kc.writes() == []
    assert realm.ensure_realm(client, "s1")["created"]
    r = kc.realms["s1"]
    assert r["rep"]["attributes"] == {"enmasse.messaging.owned": "true"}
    (c,) = r["clients"].values()
    assert c["clientId"] == "enmasse-messaging" and c["publicClient"] and c["directAccessGrantsEnabled"]
    assert not c["standardFlowEnabled"] and not c["serviceAccountsEnabled"]
    (mapper,) = c["protocolMappers"]
    assert mapper["protocolMapper"] == "oidc-group-membership-mapper"
    assert mapper["config"]["claim.name"] == "groups" and mapper["config"]["full.path"] == "false"
    assert r["profile"]["unmanagedAttributePolicy"] == "ADMIN_EDIT"
    assert not any("required" in a for a in r["profile"]["attributes"])
    n = len(kc.writes())
    assert realm.ensure_realm(client, "s1") == {"changed": False, "created": False, "changes": []}
    assert len(kc.writes()) == n


def test_realm_drift_is_repaired(kc):
    client = kc.client()
    realm.ensure_realm(client, "s1")
    (c,) = kc.realms["s1"]["clients"].values()
    c["standardFlowEnabled"] = True
    c["protocolMappers"][0]["config"]["full.path"] = "true"
    out = realm.ensure_realm(client, "s1")
    assert out["changes"] == ["client enmasse-messaging: standardFlowEnabled changed",
                              "client enmasse-messaging: mapper groups changed"]
    assert realm.ensure_realm(client, "s1")["changed"] is False


def test_a_realm_not_owned_is_never_changed_or_deleted(kc):
    client = kc.client()
    client.request("POST", "", {"realm": "s1", "enabled": True})
    with pytest.raises(ServiceError, match="realm 's1' exists .* not owned"):
        realm.ensure_realm(client, "s1")
    out = realm.remove_realm(client, "s1")
    assert out["changed"] is False and "not owned" in out["skipped"] and "s1" in kc.realms


def test_remove_realm_deletes_an_owned_realm_once(kc):
    client = kc.client()
    realm.ensure_realm(client, "s1")
    assert realm.remove_realm(client, "s1", check_mode=True)["changed"] and "s1" in kc.realms
    assert realm.remove_realm(client, "s1")["changed"] and "s1" not in kc.realms
    assert realm.remove_realm(client, "s1")["changed"] is False


# ------------------------------------------------------------ users

@pytest.fixture
def space(kc):
    realm.ensure_realm(kc.client(), "s1")
    return kc


def test_create_then_unchanged_then_changed(space):
    out = run("messaging_user", **user("alice", authorization=[{"addresses": ["orders/*"], "operations": ["send"]}]))
    assert out["changed"] and out["changes"]["created"] == ["alice"]
    assert space.groups_of("s1", "alice") == ["send_orders%2F%2A"]
    assert space.password_of("s1", "alice") == "pw"
    assert space.user("s1", "alice")["attributes"]["enmasse.messaging.owned"] == ["true"]
    n = len(space.writes())
    again = run("messaging_user", **user("alice", authorization=[{"addresses": ["orders/*"], "operations": ["send"]}]))
    assert again["changed"] is False and len(space.writes()) == n
    out = run("messaging_user", **user("alice", authorization=[{"addresses": ["q"], "operations": ["recv"]}]))
    assert out["changes"]["updated"] == ["alice"]
    assert space.groups_of("s1", "alice") == ["recv_q"]
    assert out["diff"]["before"]["alice"]["groups"] == ["send_orders%2F%2A"]
    assert out["diff"]["after"]["alice"]["password"] == "(hidden)"


def test_check_mode_reports_the_same_changes_and_writes_nothing(space):
    n = len(space.writes())
    out = run("messaging_user", check=True, **user("alice"))
    assert out["changed"] and out["changes"]["created"] == ["alice"] and len(space.writes()) == n
    run("messaging_user", **user("alice"))
    n = len(space.writes())
    out = run("messaging_user", check=True, **user("alice", password="new"))
    assert out["changes"]["updated"] == ["alice"] and len(space.writes()) == n
    assert space.password_of("s1", "alice") == "pw"


def test_a_password_change_is_detected_and_never_shown(space):
    run("messaging_user", **user("alice", password="first-secret"))
    hidden = []
    out = run("messaging_user", hidden=hidden, **user("alice", password="second-secret"))
    assert out["changed"] and space.password_of("s1", "alice") == "second-secret"
    assert out["diff"]["after"]["alice"]["password"] == "(hidden, changed)"
    assert "first-secret" not in repr(out) and "second-secret" not in repr(out)
    assert "second-secret" in hidden  # masked in the module's output (invocation)
    assert run("messaging_user", **user("alice", password="second-secret"))["changed"] is False
    # on_create: an existing user's password is left as it is
    assert run("messaging_user", update_password="on_create", **user("alice", password="third"))["changed"] is False


def test_a_user_made_by_hand_is_adopted_when_listed_and_its_password_set(space):
    client = space.client()
    client.request("POST", "s1/users", {"username": "hand", "enabled": True})
    out = run("messaging_user", **user("hand"))
    assert out["changes"]["updated"] == ["hand"] and out["diff"]["after"]["hand"]["password"] == "(hidden, changed)"
    assert space.user("s1", "hand")["attributes"]["enmasse.messaging.owned"] == ["true"]
    assert run("messaging_user", **user("hand"))["changed"] is False


def test_prune_deletes_owned_users_only_and_keeps_hand_made_groups(space):
    client = space.client()
    client.request("POST", "s1/users", {"username": "hand", "enabled": True})
    run("messaging_user", users=[user("a"), user("b")])
    gid = client.request("POST", "s1/groups", {"name": "admins"})["id"]
    client.request("PUT", "s1/users/%s/groups/%s" % (space.user("s1", "a")["id"], gid))
    out = run("messaging_user", users=[user("a")], prune=True)
    assert out["changes"] == {"created": [], "updated": [], "deleted": ["b"]}
    assert space.user("s1", "b") is None and space.user("s1", "hand") is not None
    assert space.groups_of("s1", "a") == ["admins", "recv_%2A", "send_%2A"]
    assert run("messaging_user", users=[user("a")], prune=True)["changed"] is False


def test_absent_deletes_an_owned_user_and_warns_about_one_not_owned(space):
    client = space.client()
    client.request("POST", "s1/users", {"username": "hand", "enabled": True})
    run("messaging_user", **user("a"))
    out = run("messaging_user", username="a", state="absent")
    assert out["changes"]["deleted"] == ["a"] and space.user("s1", "a") is None
    assert run("messaging_user", username="a", state="absent")["changed"] is False
    out = run("messaging_user", username="hand", state="absent")
    assert out["changed"] is False and "not owned" in out["warnings"][0] and space.user("s1", "hand")


def test_disable_and_enable(space):
    run("messaging_user", **user("a"))
    out = run("messaging_user", enabled=False, **user("a"))
    assert out["changed"] and space.user("s1", "a")["enabled"] is False
    assert run("messaging_user", enabled=False, **user("a"))["changed"] is False


def test_bad_input_touches_nothing_and_says_every_problem(space):
    n = len(space.requests)
    with pytest.raises(ValidationError) as e:
        run("messaging_user", users=[user("a"), user("B"), user("c", authorization=[{"operations": ["send"]}])])
    assert len(e.value.errors) == 2 and len(space.requests) == n


def test_prune_needs_the_bulk_form(space):
    with pytest.raises(ValidationError, match="prune: true needs the bulk form"):
        run("messaging_user", prune=True, **user("a"))


def test_a_missing_realm_is_named(kc):
    with pytest.raises(ServiceError, match="realm 's1' does not exist in Keycloak at http://kc.test"):
        run("messaging_user", **user("a"))


def test_info_lists_users_with_their_authorization_and_no_secret(space):
    run("messaging_user", users=[user("a", password="topsecret"),
                                 user("b", authorization=[{"operations": ["view"]}])])
    out = run("messaging_user_info")
    assert [u["username"] for u in out["users"]] == ["a", "b"]
    assert out["users"][0]["authorization"] == [{"addresses": ["*"], "operations": ["recv", "send"]}]
    assert out["users"][1]["groups"] == ["monitor"]
    assert "topsecret" not in repr(out) and "pbkdf2" not in repr(out)
    assert run("messaging_user_info", usernames=["b", "zz"])["users"][0]["username"] == "b"


def test_a_failed_write_names_every_failed_user_and_keeps_what_was_done(space):
    space.refuse_users = {"b", "d"}
    with pytest.raises(ServiceError) as e:
        run("messaging_user", users=[user("a"), user("b"), user("c"), user("d")])
    assert e.value.errors == [
        "user 'b' of realm 's1': create failed: Keycloak POST /admin/realms/s1/users: HTTP 500 unknown_error",
        "user 'd' of realm 's1': create failed: Keycloak POST /admin/realms/s1/users: HTTP 500 unknown_error"]
    assert e.value.result["changes"]["created"] == ["a", "c"] and e.value.result["changed"] is True
    assert space.user("s1", "c") is not None and space.user("s1", "b") is None


# ------------------------------------------------------------ client

def test_an_expired_admin_token_is_fetched_again(space):
    client = space.client()
    client.request("GET", "s1")
    tokens = sum(1 for r in space.requests if r[1].endswith("/token"))
    space.token_expired = True
    assert client.request("GET", "s1")["realm"] == "s1"
    assert sum(1 for r in space.requests if r[1].endswith("/token")) == tokens + 1


def test_a_wrong_admin_password_and_an_unreachable_keycloak_are_named(kc):
    bad = kc_client.KeycloakClient("http://kc.test", "admin", "wrong")
    with pytest.raises(kc_client.KeycloakError, match="refused the admin login of 'admin' in realm 'master'"):
        bad.request("GET", "s1")
    kc.down = True
    with pytest.raises(kc_client.KeycloakError, match="cannot reach Keycloak at http://kc.test"):
        kc.client().request("GET", "s1")


@pytest.mark.parametrize("url", [None, "", "kc.test", "ftp://x"])
def test_the_url_must_be_http(url):
    with pytest.raises(ConfigError, match="keycloak_url"):
        kc_client.KeycloakClient(url, "admin", "pw")


def test_names_are_url_encoded_once_more_in_paths():
    assert kc_client.path("s1", "groups", "send_orders%2F%2A") == "s1/groups/send_orders%252F%252A"


# ------------------------------------------------------------ address_space's realm step

class SpaceBackend(backends.Backend):
    """Stands for the host backend of address_space: records the calls."""
    name = "artemis"

    def __init__(self):
        self.calls = []

    def address_space(self, request):
        self.calls.append(request.params["state"])
        return {"changed": False, "address_space": {"name": request.params["name"]}}


@pytest.fixture
def host(kc, monkeypatch):
    backend = SpaceBackend()
    monkeypatch.setattr(backends, "prepare", lambda request, operation: [])
    monkeypatch.setattr(backends, "host_backend", lambda request, operation: backend)
    monkeypatch.setattr(backends, "kubernetes_backend", lambda request: None)
    return backend


def space_task(check=False, **params):
    p = dict(name="s1", state="present", keycloak_admin_user="admin", keycloak_admin_realm="master",
             keycloak_validate_certs=True, keycloak_timeout=30)
    p.update(params)
    return backends.run("address_space", Request(p, check_mode=check))


def test_address_space_makes_and_removes_the_realm_when_keycloak_is_given(kc, host):
    kc_args = dict(keycloak_url="http://kc.test", keycloak_admin_password="adminpw")
    out = space_task(check=True, **kc_args)
    assert out["changed"] and out["realm"]["created"] and kc.realms == {}
    out = space_task(**kc_args)
    assert out["changed"] and "s1" in kc.realms and out["address_space"] == {"name": "s1"}
    assert space_task(**kc_args)["changed"] is False
    out = space_task(state="absent", **kc_args)
    assert out["changed"] and kc.realms == {} and host.calls == ["present", "present", "present", "absent"]
    assert space_task(state="absent", **kc_args)["changed"] is False


def test_address_space_without_keycloak_url_manages_no_realm(kc, host):
    out = space_task()
    assert "realm" not in out and kc.requests == [] and host.calls == ["present"]
    with pytest.raises(ConfigError, match="keycloak_admin_password: given without keycloak_url"):
        space_task(keycloak_admin_password="adminpw")
    assert host.calls == ["present"]


def test_address_space_bad_keycloak_options_touch_nothing(kc, host):
    with pytest.raises(ConfigError, match="keycloak_url: 'kc.test' must be an http"):
        space_task(keycloak_url="kc.test", keycloak_admin_password="adminpw")
    assert host.calls == [] and kc.requests == []


def test_address_space_a_realm_not_owned_fails_with_the_space_result(kc, host):
    kc.client().request("POST", "", {"realm": "s1", "enabled": True})
    with pytest.raises(ServiceError) as e:
        space_task(keycloak_url="http://kc.test", keycloak_admin_password="adminpw")
    assert e.value.errors[0].startswith("realm of address space 's1': realm 's1' exists")
    assert e.value.result["address_space"] == {"name": "s1"}
    out = space_task(state="absent", keycloak_url="http://kc.test", keycloak_admin_password="adminpw")
    assert out["changed"] is False and "not owned" in out["warnings"][0] and "s1" in kc.realms


def test_both_host_backends_share_the_one_users_implementation_and_kubernetes_has_its_own():
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.backend import ArtemisBackend
    from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.backend import KeycloakUsers
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.modules import KubernetesBackend
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard.backend import StandardBackend
    for op in ("messaging_user", "messaging_user_info"):
        assert getattr(ArtemisBackend, op) is getattr(StandardBackend, op) is getattr(KeycloakUsers, op)
        # MessagingUser objects (kubernetes/users.py; tests/unit/test_kubernetes_users.py)
        assert getattr(KubernetesBackend, op) is not getattr(KeycloakUsers, op)


def test_tls_options(tmp_path):
    import ssl
    assert kc_client.ssl_context("http://kc.test") is None
    assert kc_client.ssl_context("https://kc.test", validate_certs=False).verify_mode == ssl.CERT_NONE
    strict = kc_client.ssl_context("https://kc.test")
    assert strict.verify_mode == ssl.CERT_REQUIRED and strict.check_hostname
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ConfigError, match="keycloak_ca_file: .*ca.pem' cannot be read as PEM CA certificates"):
        kc_client.ssl_context("https://kc.test", ca_file=str(bad))
