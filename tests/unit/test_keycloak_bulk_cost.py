"""What makes 1,000 users converge fast (docs/identity.md "Cost"), through
the real client over the fake HTTP layer (fake_keycloak.py): the realm's
password policy (address_space's ``keycloak_password_policy``), a new user
made in one request with its password and groups, memberships read for
every group (in parallel) with the same result."""
import pytest

from fake_keycloak import FakeKeycloak

from ansible_collections.enmasse.messaging.plugins.module_utils import backends
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import client as kc_client
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import realm, users
from ansible_collections.enmasse.messaging.plugins.module_utils.request import Request

DEFAULT = "hashAlgorithm(pbkdf2-sha256) and hashIterations(10000)"


@pytest.fixture
def kc(monkeypatch):
    fake = FakeKeycloak()
    monkeypatch.setattr(kc_client.KeycloakClient, "_open", lambda self, req: fake.open(req))
    return fake


def converge(items, **params):
    p = dict(keycloak_url="http://kc.test", keycloak_admin_user="admin", keycloak_admin_password="adminpw",
             address_space="s1", prune=False, update_password="always", state="present", users=items)
    p.update(params)
    return backends.run("messaging_user", Request(p, check_mode=False, diff=True))


def rules(*addresses):
    return [{"addresses": list(addresses), "operations": ["send", "recv"]}]


# ------------------------------------------------------------ the realm's password policy

def test_the_realm_is_made_with_the_default_password_policy_and_drift_is_repaired(kc):
    assert realm.PASSWORD_POLICY == DEFAULT
    client = kc.client()
    realm.ensure_realm(client, "s1")
    assert kc.realms["s1"]["rep"]["passwordPolicy"] == DEFAULT
    kc.realms["s1"]["rep"]["passwordPolicy"] = "length(4)"
    n = len(kc.writes())
    out = realm.ensure_realm(client, "s1", check_mode=True)
    assert out["changes"] == ["password policy " + DEFAULT] and len(kc.writes()) == n
    assert realm.ensure_realm(client, "s1")["changes"] == ["password policy " + DEFAULT]
    assert kc.realms["s1"]["rep"]["passwordPolicy"] == DEFAULT
    assert realm.ensure_realm(client, "s1")["changed"] is False


def test_an_empty_policy_leaves_keycloaks_default(kc):
    client = kc.client()
    realm.ensure_realm(client, "s1")
    out = realm.ensure_realm(client, "s1", password_policy="")
    assert out["changes"] == ["password policy (Keycloak's default)"]
    assert kc.realms["s1"]["rep"]["passwordPolicy"] == ""
    assert realm.ensure_realm(client, "s1", password_policy="")["changed"] is False


class SpaceBackend(backends.Backend):
    name = "artemis"

    def address_space(self, request):
        return {"changed": False, "address_space": {"name": request.params["name"]}}


@pytest.fixture
def host(kc, monkeypatch):
    monkeypatch.setattr(backends, "prepare", lambda request, operation: [])
    monkeypatch.setattr(backends, "host_backend", lambda request, operation: SpaceBackend())
    monkeypatch.setattr(backends, "kubernetes_backend", lambda request: None)


def test_address_space_sets_the_policy_it_is_given(kc, host):
    policy = "length(12) and hashAlgorithm(pbkdf2-sha512) and hashIterations(210000)"
    p = dict(name="s1", state="present", keycloak_url="http://kc.test", keycloak_admin_password="adminpw",
             keycloak_admin_user="admin", keycloak_admin_realm="master", keycloak_validate_certs=True,
             keycloak_timeout=30, keycloak_password_policy=policy)
    out = backends.run("address_space", Request(p))
    assert out["changed"] and kc.realms["s1"]["rep"]["passwordPolicy"] == policy
    out = backends.run("address_space", Request(dict(p, keycloak_password_policy=DEFAULT)))
    assert out["realm"]["changes"] == ["password policy " + DEFAULT]


def test_the_policy_without_keycloak_url_is_refused(kc, host):
    with pytest.raises(ConfigError, match="keycloak_password_policy: given without keycloak_url"):
        backends.run("address_space", Request(dict(name="s1", state="present", keycloak_password_policy="")))
    assert kc.requests == []


# ------------------------------------------------------------ requests per user

def test_a_new_user_is_one_request_with_its_password_and_groups(kc):
    realm.ensure_realm(kc.client(), "s1")
    items = [dict(username="u%d" % i, password="pw-%d" % i, authorization=rules("app-%d/*" % (i % 2), "events"))
             for i in range(6)]
    before = len(kc.writes())
    out = converge(items)
    assert out["changes"]["created"] == ["u%d" % i for i in range(6)]
    writes = kc.writes()[before:]
    made_groups = [w for w in writes if w[0] == "POST" and w[1].endswith("/groups")]
    assert len(made_groups) == 6          # send/recv of app-0/*, app-1/*, events: each made once
    assert [w[0] for w in writes if "/users" in w[1]] == ["POST"] * 6   # no membership request
    for i in range(6):
        assert kc.groups_of("s1", "u%d" % i) == sorted(["recv_app-%d%%2F%%2A" % (i % 2), "send_app-%d%%2F%%2A" % (i % 2),
                                                        "recv_events", "send_events"])
        assert kc.password_of("s1", "u%d" % i) == "pw-%d" % i
    assert converge(items)["changed"] is False


def test_a_group_name_with_keycloaks_path_escape_is_joined_by_id(kc):
    realm.ensure_realm(kc.client(), "s1")
    converge([dict(username="t", password="pw-t", authorization=rules("a~b", "c"))])
    assert kc.groups_of("s1", "t") == ["recv_a~b", "recv_c", "send_a~b", "send_c"]
    assert converge([dict(username="t", password="pw-t", authorization=rules("a~b", "c"))])["changed"] is False


def test_memberships_of_many_groups_read_in_parallel_are_complete(kc):
    client = kc.client()
    realm.ensure_realm(client, "s1")
    items = [dict(username="u%03d" % i, password="pw", authorization=rules("app-%d" % i)) for i in range(40)]
    converge(items)
    serial = users.read_live(client, "s1", workers=1)
    assert users.read_live(client, "s1", workers=8) == serial
    assert all(serial[0]["u%03d" % i]["groups"] == ["recv_app-%d" % i, "send_app-%d" % i] for i in range(40))


def test_users_are_read_in_pages_in_parallel_and_none_made_since_the_count_is_missed(kc):
    client = kc.client()
    realm.ensure_realm(client, "s1")
    for i in range(250):
        client.request("POST", "s1/users", {"username": "p%03d" % i, "enabled": True})
    before = len(kc.requests)
    assert sorted(users.read_users(client, "s1")) == ["p%03d" % i for i in range(250)]
    reads = [r for r in kc.requests[before:] if r[1].endswith("/s1/users")]
    assert len(reads) == 3                # pages of users.USERS_PAGE (100), not one page of 500
    kc.count_behind = 120                 # 120 users made after the count was read
    assert sorted(users.read_users(client, "s1", workers=3)) == ["p%03d" % i for i in range(250)]
