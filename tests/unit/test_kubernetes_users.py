"""kubernetes/users.py: plain users (model/users.py) <-> MessagingUser
objects, the comparison of the password without showing it, what is applied
and deleted, and the backend's own refusals; converge over a fake client."""
import base64
import os

import pytest
import yaml

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError, ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import modules as k8s_modules
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import users as k8s_users
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import FIELD_MANAGER, MANAGED_BY
from ansible_collections.enmasse.messaging.plugins.module_utils.model.users import user_inputs
from ansible_collections.enmasse.messaging.plugins.module_utils.request import Request

CRD = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "kubernetes_crds", "files", "crds",
                   "messagingusers.yaml")
PW = "s3cret-pw"


def b64(text):
    return base64.b64encode(text.encode()).decode()


def user(name="app1", password=PW, authorization=None, state="present", enabled=True):
    return {"username": name, "password": password, "state": state, "enabled": enabled,
            "authorization": authorization if authorization is not None else
            [{"addresses": ["orders/*"], "operations": ["send"]}]}


def live(name="app1", password=b64(PW), owned=True, authorization=None, space="shop"):
    meta = {"name": "%s.%s" % (space, name), "uid": "u-" + name, "resourceVersion": "1"}
    if owned:
        meta["labels"] = {MANAGED_BY: FIELD_MANAGER}
        meta["managedFields"] = [{"manager": FIELD_MANAGER}]
    auth = {"type": "password"}
    if password is not None:
        auth["password"] = password
    return {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser", "metadata": meta,
            "spec": {"username": name, "authentication": auth,
                     "authorization": authorization if authorization is not None else
                     [{"addresses": ["orders/*"], "operations": ["send"]}]}}


def test_object_is_enmasses_messaginguser_with_the_password_base64():
    doc = k8s_users.desired_object("shop", user(), None, "always")
    assert doc == {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser",
                   "metadata": {"name": "shop.app1", "labels": {MANAGED_BY: FIELD_MANAGER}},
                   "spec": {"username": "app1", "authentication": {"type": "password", "password": b64(PW)},
                            "authorization": [{"addresses": ["orders/*"], "operations": ["send"]}]}}


def test_every_field_written_is_in_the_crd_schema():
    with open(CRD) as f:
        schema = yaml.safe_load(f)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]["properties"]
    doc = k8s_users.desired_object("shop", user(), None, "always")
    assert set(doc["spec"]) <= set(spec)
    assert set(doc["spec"]["authentication"]) <= set(spec["authentication"]["properties"])
    assert set(doc["spec"]["authorization"][0]) <= set(spec["authorization"]["items"]["properties"])


def test_password_compared_by_value():
    assert k8s_users.same_password(live(), PW)
    assert not k8s_users.same_password(live(), PW + "x")
    assert k8s_users.stored_password(live(password="not base64!")) is None
    assert k8s_users.stored_password(live(password=None)) is None
    assert not k8s_users.same_password(live(password=None), PW)


@pytest.mark.parametrize("update_password, given, expected", [
    ("always", PW, b64(PW)),           # same: the stored encoding kept
    ("always", "new-pw", b64("new-pw")),
    ("on_create", "new-pw", b64(PW)),  # an existing object keeps its password
])
def test_update_password(update_password, given, expected):
    doc = k8s_users.desired_object("shop", user(password=given), live(), update_password)
    assert doc["spec"]["authentication"]["password"] == expected


def test_on_create_sets_a_password_an_object_lacks_and_says_so():
    applies, deletes, warnings = k8s_users.plan("shop", [user()], {"app1": live(password=None)},
                                                update_password="on_create")
    assert [d["spec"]["authentication"]["password"] for n, d in applies] == [b64(PW)]
    assert "had no password" in warnings[0] and PW not in warnings[0]


def test_plan_applies_only_what_differs_and_deletes_only_owned():
    current = {"app1": live(), "app2": live("app2"), "hand": live("hand", owned=False),
               "old": live("old"), "foreign": live("foreign", owned=False)}
    wanted = [user(), user("app2", authorization=[{"addresses": ["*"], "operations": ["recv"]}]),
              user("hand", state="absent"), user("new")]
    applies, deletes, warnings = k8s_users.plan("shop", wanted, current, prune=True)
    assert [n for n, d in applies] == ["app2", "new"]
    assert deletes == ["old"]
    assert "user 'hand': MessagingUser shop.hand is not owned" in warnings[0]
    # an existing object not owned is adopted (applied) even when its spec is the same
    applies, deletes, warnings = k8s_users.plan("shop", [user("hand")], {"hand": live("hand", owned=False)})
    assert [n for n, d in applies] == ["hand"]


def test_views_and_diff_never_carry_a_password():
    before, after = live(), live(password=b64("other"))
    diff = k8s_users._diff({"app1": after}, {"app1": before}, [])
    assert diff["before"]["app1"]["password"] == "(hidden)"
    assert diff["after"]["app1"]["password"] == "(hidden, changed)"
    text = repr([diff, k8s_users.view(before)])
    assert b64(PW) not in text and PW not in text and b64("other") not in text
    same = k8s_users._diff({"app1": live(authorization=[])}, {"app1": before}, [])
    assert same["after"]["app1"]["password"] == "(hidden)"


def test_kubernetes_rules_added_to_the_models():
    space, users, errors = user_inputs({"address_space": "shop", "users": [
        {"username": "a_b", "password": PW}, {"username": "ok", "password": PW, "enabled": False},
        {"username": "x" * 250, "password": PW}]})
    assert errors == []
    errs = k8s_users.kubernetes_errors(space, users)
    assert errs[0].startswith("username: 'a_b' must be a Kubernetes name")
    assert errs[1].startswith("enabled: false for user 'ok' is not supported with backend: kubernetes")
    assert "the object name shop.<name> would be 255 characters, at most 253" in errs[2]


class FakeClient(object):
    """The client calls converge makes, against objects in memory."""

    namespace = "ns1"
    host = "https://fake"

    def __init__(self, objs, space=True):
        self.objs = dict((o["metadata"]["name"], o) for o in objs)
        self.space = space
        self.applied, self.deleted = [], []

    def get(self, kind, name):
        assert kind == "AddressSpace"
        return {"metadata": {"name": name}} if self.space else None

    def namespace_exists(self):
        return True

    def list(self, kind):
        assert kind == "MessagingUser"
        return list(self.objs.values()), "1"

    def apply(self, doc, force=False, dry_run=False):
        self.applied.append((doc, dry_run))
        out = dict(doc, metadata=dict(doc["metadata"], managedFields=[{"manager": FIELD_MANAGER}]))
        if not dry_run:
            self.objs[doc["metadata"]["name"]] = out
        return out

    def delete(self, kind, name, uid=None, dry_run=False):
        self.deleted.append((name, uid, dry_run))
        if not dry_run:
            self.objs.pop(name)
        return True


def test_converge_creates_updates_prunes_and_reports(monkeypatch):
    client = FakeClient([live(), live("old"), live("hand", owned=False), live("x", space="other")])
    result = k8s_users.converge(client, "shop", [user(password="new-pw"), user("new")], prune=True)
    assert result["changes"] == {"created": ["new"], "updated": ["app1"], "deleted": ["old"]}
    assert client.deleted == [("shop.old", "u-old", False)]
    assert sorted(client.objs) == ["other.x", "shop.app1", "shop.hand", "shop.new"]
    assert [u["username"] for u in result["users"]] == ["app1", "new"]
    again = k8s_users.converge(client, "shop", [user(password="new-pw"), user("new")], prune=True)
    assert not again["changed"] and len(client.applied) == 2


def test_check_mode_sends_dry_runs():
    client = FakeClient([live("old")])
    result = k8s_users.converge(client, "shop", [user()], prune=True, check_mode=True)
    assert result["changed"] and client.applied[0][1] is True and client.deleted == [("shop.old", "u-old", True)]
    assert sorted(client.objs) == ["shop.old"]


def test_a_missing_space_is_refused_for_present_users_only():
    with pytest.raises(ConfigError, match="address space 'shop' does not exist in namespace 'ns1'"):
        k8s_users.converge(FakeClient([], space=False), "shop", [user()])
    assert not k8s_users.converge(FakeClient([], space=False), "shop", [user(state="absent")])["changed"]


def test_backend_refuses_bad_input_before_the_cluster_and_hides_every_form_of_the_password(monkeypatch):
    hidden = []
    monkeypatch.setattr(k8s_modules, "client_for", lambda request: pytest.fail("the cluster was contacted"))
    request = Request({"address_space": "shop", "users": [{"username": "a_b", "password": PW}], "prune": False,
                       "backend": "kubernetes"}, hide=hidden.extend)
    with pytest.raises(ValidationError) as e:
        k8s_modules.KubernetesBackend().messaging_user(request)
    assert "username: 'a_b' must be a Kubernetes name" in str(e.value.errors)
    assert PW in hidden and b64(PW) in hidden


def test_keycloak_options_are_for_the_host_backends_only():
    from ansible_collections.enmasse.messaging.plugins.module_utils import backends

    class Named(object):
        def __init__(self, name):
            self.name = name
    hosts, kube = Named("artemis"), Named("kubernetes")
    assert backends.keycloak_options_errors(Request({}), "messaging_user", hosts) == [
        "keycloak_url, keycloak_admin_password: required with backend: hosts (the users are in the address space's "
        "Keycloak realm)"]
    assert backends.keycloak_options_errors(Request({"keycloak_url": "https://kc", "keycloak_admin_password": "a"}),
                                            "messaging_user_info", hosts) == []
    assert backends.keycloak_options_errors(Request({}), "address", hosts) == []
    errs = backends.keycloak_options_errors(Request({"keycloak_url": "https://kc", "keycloak_admin_user": "admin",
                                                     "keycloak_timeout": 30}), "messaging_user", kube)
    assert errs == ["keycloak_url: only used with backend: hosts (with backend: kubernetes the users are "
                    "MessagingUser objects in the namespace)"]
    assert backends.keycloak_options_errors(Request({"keycloak_admin_user": "admin"}), "messaging_user", kube) == []
