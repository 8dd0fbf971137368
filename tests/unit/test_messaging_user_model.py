"""The MessagingUser model (model/users.py): the variable form, EnMasse
documents, the authorization rules and their messages (field, value, rule),
and the one group encoding the Keycloak service applies."""
import base64

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth.backends import (
    authorization_to_groups, groups_to_address_authz)
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.groups import (
    authorization_of, is_managed_group)
from ansible_collections.enmasse.messaging.plugins.module_utils.model import users as m


def doc(name="s1.alice", username="alice", password="cGFzc3dvcmQ=", authorization=None, **extra):
    spec = {"username": username, "authentication": {"type": "password", "password": password}}
    if authorization is not None:
        spec["authorization"] = authorization
    d = {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser", "metadata": {"name": name}, "spec": spec}
    d.update(extra)
    return d


def test_single_form_is_a_plain_user():
    space, users, errs = m.user_inputs({"address_space": "s1", "username": "alice", "password": "pw",
                                        "authorization": [{"addresses": ["b", "a", "a"], "operations": ["send"]}]})
    assert (space, errs) == ("s1", [])
    assert users == [{"username": "alice", "password": "pw", "enabled": True, "state": "present",
                      "authorization": [{"addresses": ["a", "b"], "operations": ["send"]}]}]


def test_document_password_is_base64_as_in_enmasse():
    users, errs = m.users_from_list([doc(authorization=[{"addresses": ["*"], "operations": ["send", "recv"]}])], "s1")
    assert errs == []
    assert users[0]["password"] == "password"
    assert users[0]["authorization"] == [{"addresses": ["*"], "operations": ["recv", "send"]}]


def test_a_user_list_document_stands_for_its_items():
    items = [{"kind": "MessagingUserList", "items": [doc(), doc(name="s1.bob", username="bob")]}]
    users, errs = m.users_from_list(items, "s1")
    assert errs == [] and [u["username"] for u in users] == ["alice", "bob"]


@pytest.mark.parametrize("item, message", [
    (doc(name="s2.alice"), "users[0].metadata.name: 's2.alice' must be <address space>.<username> ('s1.alice')"),
    (doc(apiVersion="enmasse.io/v1beta1"), "users[0].apiVersion: 'enmasse.io/v1beta1' must be user.enmasse.io/v1beta1"),
    (doc(password="not base64!"), "users[0].spec.authentication.password: not base64 of a UTF-8 password"),
    (doc(username="Alice", name="s1.Alice"), "users[0].spec.username: 'Alice' must match"),
    ({"username": "a", "password": "x", "pasword": 1}, "users[0]: unknown keys pasword (allowed: username,"),
    ({"username": "a"}, "users[0].password: required with state present"),
    ({"username": "a", "password": ""}, "users[0].password: the password must be a non-empty string"),
    ({"username": "a", "password": "x", "enabled": "yes"}, "users[0].enabled: 'yes' must be a boolean"),
    ({"username": "a", "authentication": {"type": "serviceaccount"}},
     "users[0].authentication.type: 'serviceaccount' is not supported by messaging_user"),
    ({"username": "a", "authentication": {"type": "federated"}},
     "users[0].authentication.type: 'federated' is not supported"),
    ({"username": "a", "password": "x", "authorization": [{"addresses": ["a*b"], "operations": ["send"]}]},
     "users[0].authorization[0].addresses[0]: 'a*b' may hold '*' only as its last character"),
    ({"username": "a", "password": "x", "authorization": [{"addresses": ["a b"], "operations": ["send"]}]},
     "users[0].authorization[0].addresses[0]: 'a b' must not contain whitespace"),
    ({"username": "a", "password": "x", "authorization": [{"operations": ["send"]}]},
     "users[0].authorization[0].addresses: [] but operations send need at least one address pattern"),
    ({"username": "a", "password": "x", "authorization": [{"addresses": ["q"], "operations": ["write"]}]},
     "users[0].authorization[0].operations: 'write' must be one of send, recv, view, manage"),
    ({"username": "a", "password": "x", "authorization": [{"addresses": ["q"], "operations": []}]},
     "users[0].authorization[0].operations: [] must be a non-empty list"),
    ({"username": "a", "password": "x", "authorization": {"addresses": ["q"]}},
     "users[0].authorization: {'addresses': ['q']} must be a list"),
])
def test_errors_name_field_value_and_rule(item, message):
    users, errs = m.users_from_list([item], "s1")
    assert users == []
    assert any(e.startswith(message) for e in errs), errs


def test_every_error_is_reported_at_once_and_a_duplicate_refused():
    users, errs = m.users_from_list([{"username": "a", "password": "x"}, {"username": "a", "password": "y"},
                                     {"username": "B", "password": ""}], "s1")
    assert len(errs) == 3, errs
    assert "users[1].username: 'a' is already given by users[0] (each user once)" in errs


def test_password_values_never_appear_in_messages():
    secret = "Zm9vYmFy"  # base64 of foobar, but the document spells it wrong below
    unused, errs = m.users_from_list([doc(password=secret + "!"), {"username": "a", "password": 123456789}], "s1")
    assert errs and not any(secret in e or "123456789" in e or "foobar" in e for e in errs), errs


def test_secrets_of_finds_plain_and_base64_passwords_before_validation():
    params = {"users": [{"username": "a", "password": "p1"}, doc(password=base64.b64encode(b"p2").decode())],
              "authentication": {"password": "p3"}, "password": "p4", "definition": None}
    found = m.secrets_of(params)
    assert {"p1", "p2", "cDI=", "p3", "p4"} <= set(found)


def test_state_absent_needs_no_password_and_applies_to_documents():
    unused, users, errs = m.user_inputs({"address_space": "s1", "username": "a", "state": "absent"})
    assert errs == [] and users[0]["state"] == "absent"
    unused, users, errs = m.user_inputs({"address_space": "s1", "state": "absent", "definition": doc(password=None)})
    assert errs == [] and users[0]["state"] == "absent"


def test_bad_space_is_refused_first():
    unused, users, errs = m.user_inputs({"address_space": "Bad_Space", "username": "a", "password": "x"})
    assert users == [] and errs[0].startswith("address_space: 'Bad_Space'")


@pytest.mark.parametrize("pattern, address, grants", [
    ("orders/*", "orders/eu", True), ("orders/*", "ordersx", False), ("orders/*", "orders", False),
    ("*", "anything", True), ("orders", "orders", True), ("orders", "orders/eu", False),
])
def test_patterns_as_enmasse(pattern, address, grants):
    assert m.pattern_errors(pattern, "p") == []
    assert m.pattern_matches(pattern, address) is grants
    # the auth service's authz map keeps the pattern as it is (the router applies it)
    groups = authorization_to_groups([{"addresses": [pattern], "operations": ["send"]}])
    assert groups_to_address_authz(groups) == {pattern: ["send"]}


def test_groups_are_the_one_encoding_and_read_back_as_authorization():
    rules = [{"addresses": ["orders/*", "q"], "operations": ["recv", "send"]},
             {"addresses": ["audit"], "operations": ["recv"]}, {"addresses": [], "operations": ["manage", "view"]}]
    groups = authorization_to_groups(rules)
    assert groups == ["manage", "monitor", "recv_audit", "recv_orders%2F%2A", "recv_q", "send_orders%2F%2A", "send_q"]
    assert all(is_managed_group(g) for g in groups)
    assert not is_managed_group("admins") and not is_managed_group("send_")
    assert authorization_of(groups) == [{"addresses": ["audit"], "operations": ["recv"]},
                                        {"addresses": ["orders/*", "q"], "operations": ["recv", "send"]},
                                        {"addresses": [], "operations": ["manage", "view"]}]
    assert authorization_to_groups(authorization_of(groups)) == groups


def test_to_document_has_no_password():
    d = m.to_document("s1", {"username": "a", "password": "secret", "authorization": []})
    assert d["metadata"]["name"] == "s1.a" and "secret" not in repr(d)
