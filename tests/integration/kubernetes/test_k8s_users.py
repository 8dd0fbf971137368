"""messaging_user and messaging_user_info with backend: kubernetes against a
real API server: EnMasse's MessagingUser objects created, changed, left alone
on a re-run, check mode as a server dry run, prune and absent of owned
objects only, the model's refusals before the cluster and the CRD's own
rules on the server, and no password (plain or base64) in any output. No
EnMasse operator runs here: the wait test writes the status an operator
writes (through the status subresource, as EnMasse's CRD has it)."""

import base64

from conftest import dump, run_playbook

FM = "enmasse.messaging"
PW1, PW2, PW3 = "app1-Secret-pw", "monitor-Secret-pw", "changed-Secret-pw"


def b64(text):
    return base64.b64encode(text.encode()).decode()


SECRETS = (PW1, PW2, PW3, b64(PW1), b64(PW2), b64(PW3))


def no_secret(r):
    out = r.stdout + r.stderr
    for secret in SECRETS:
        assert secret not in out, "a password reached the output: %s" % out[-3000:]
    return r


def users(ns, check_mode=False, diff=True, **args):
    return no_secret(ns.run("messaging_user", check_mode=check_mode, diff=diff, address_space="shop", **args))


def objects(ns):
    return ns.list("MessagingUser")


def managers(obj):
    return [m["manager"] for m in obj["metadata"].get("managedFields") or []]


APP1 = {"username": "app1", "password": PW1,
        "authorization": [{"addresses": ["orders/*"], "operations": ["send"]},
                          {"addresses": ["*"], "operations": ["recv"]}]}
MONITOR = {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser", "metadata": {"name": "shop.monitor"},
           "spec": {"username": "monitor", "authentication": {"type": "password", "password": b64(PW2)},
                    "authorization": [{"operations": ["view"]}]}}


def test_users_created_changed_and_left_alone_on_a_rerun(space):
    r = users(space, users=[APP1, MONITOR])
    assert not r.failed and r.changed, r
    assert r["changes"] == {"created": ["app1", "monitor"], "updated": [], "deleted": []}
    live = objects(space)
    app1 = live["shop.app1"]
    assert app1["spec"] == {"username": "app1", "authentication": {"type": "password", "password": b64(PW1)},
                            "authorization": [{"addresses": ["orders/*"], "operations": ["send"]},
                                              {"addresses": ["*"], "operations": ["recv"]}]}, dump(app1)
    assert app1["metadata"]["labels"]["app.kubernetes.io/managed-by"] == FM and FM in managers(app1)
    assert live["shop.monitor"]["spec"]["authentication"]["password"] == b64(PW2)
    assert r["diff"]["after"]["app1"]["password"] == "(hidden, changed)" and r["diff"]["before"] == {}
    assert [u["username"] for u in r["users"]] == ["app1", "monitor"]
    assert all("password" not in u["authentication"] for u in r["users"])
    rv = dict((n, o["metadata"]["resourceVersion"]) for n, o in live.items())

    again = users(space, users=[APP1, MONITOR])
    assert not again.failed and not again.changed, again
    assert dict((n, o["metadata"]["resourceVersion"]) for n, o in objects(space).items()) == rv

    # one password and one authorization changed: the diff says which, never what
    changed_app1 = dict(APP1, password=PW3)
    changed_monitor = dict(MONITOR, spec=dict(MONITOR["spec"], authorization=[{"operations": ["view", "manage"]}]))
    upd = users(space, users=[changed_app1, changed_monitor])
    assert upd.changed and upd["changes"] == {"created": [], "updated": ["app1", "monitor"], "deleted": []}, upd
    assert upd["diff"]["before"]["app1"]["password"] == "(hidden)"
    assert upd["diff"]["after"]["app1"]["password"] == "(hidden, changed)"
    assert upd["diff"]["after"]["monitor"]["password"] == "(hidden)"
    assert upd["diff"]["after"]["monitor"]["authorization"] == [{"addresses": [], "operations": ["manage", "view"]}]
    live = objects(space)
    assert live["shop.app1"]["spec"]["authentication"]["password"] == b64(PW3)

    # update_password: on_create keeps the stored password of an existing user
    kept = users(space, users=[APP1, changed_monitor], update_password="on_create")
    assert not kept.failed and not kept.changed, kept
    assert objects(space)["shop.app1"]["spec"]["authentication"]["password"] == b64(PW3)

    info = no_secret(space.run("messaging_user_info", address_space="shop"))
    assert not info.failed and [u["username"] for u in info["users"]] == ["app1", "monitor"], info
    assert info["users"][0]["owned"] is True and info["users"][0]["authentication"] == {"type": "password"}
    assert info["users"][0]["authorization"] == [{"addresses": ["orders/*"], "operations": ["send"]},
                                                 {"addresses": ["*"], "operations": ["recv"]}]
    one = no_secret(space.run("messaging_user_info", address_space="shop", usernames=["monitor", "nobody"]))
    assert [u["username"] for u in one["users"]] == ["monitor"]


def test_check_mode_is_a_dry_run_and_persists_nothing(space):
    r = users(space, check_mode=True, username="app1", password=PW1, authorization=APP1["authorization"])
    assert not r.failed and r.changed and r["changes"]["created"] == ["app1"], r
    assert objects(space) == {}
    assert users(space, username="app1", password=PW1).changed
    before = objects(space)["shop.app1"]
    r = users(space, check_mode=True, username="app1", password=PW3)
    assert r.changed and r["changes"]["updated"] == ["app1"] and r["diff"]["after"]["app1"]["password"] == \
        "(hidden, changed)", r
    r = users(space, check_mode=True, username="app1", state="absent")
    assert r.changed and r["changes"]["deleted"] == ["app1"], r
    after = objects(space)["shop.app1"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"]["authentication"]["password"] == b64(PW1)


def test_prune_and_absent_touch_owned_objects_only(space):
    assert users(space, users=[APP1, dict(APP1, username="app2"), MONITOR]).changed
    by_hand = {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser", "metadata": {"name": "shop.hand"},
               "spec": {"username": "hand", "authentication": {"type": "password", "password": b64("x")}}}
    space.create_as("kubectl", by_hand)
    assert not space.run("address_space", name="other", type="brokered", plan="brokered-single-broker").failed
    assert not no_secret(space.run("messaging_user", address_space="other", username="app9", password=PW1)).failed
    r = users(space, users=[APP1], prune=True)
    assert not r.failed and r["changes"]["deleted"] == ["app2", "monitor"], r
    assert sorted(r["diff"]["before"]) == ["app2", "monitor"] and r["diff"]["after"] == {}
    assert sorted(objects(space)) == ["other.app9", "shop.app1", "shop.hand"]
    r = users(space, username="hand", state="absent")
    assert not r.failed and not r.changed and "not owned" in str(r.get("warnings")), r
    assert "shop.hand" in objects(space)
    r = users(space, username="app1", state="absent")
    assert r.changed and r["changes"]["deleted"] == ["app1"], r
    assert r["users"] == [{"username": "app1", "state": "absent"}], r
    assert not users(space, username="app1", state="absent").changed
    assert sorted(objects(space)) == ["other.app9", "shop.hand"]
    # a listed user whose object exists is adopted (its password set by kubectl: another value is a conflict)
    r = users(space, username="hand", password=PW1)
    assert r.failed and "conflict: .spec.authentication.password owned by field manager 'kubectl'" in r.msg, r
    r = users(space, username="hand", password="x")
    assert r.changed and r["changes"]["updated"] == ["hand"] and r["users"][0]["owned"] is True, r
    assert users(space, users=[], prune=True)["changes"]["deleted"] == ["hand"]
    assert sorted(objects(space)) == ["other.app9"]


def test_bad_input_is_refused_before_the_cluster_with_field_value_and_rule(space):
    r = users(space, users=[{"username": "a_b", "password": PW1},
                            {"username": "ok", "password": PW1, "enabled": False},
                            {"username": "p", "password": PW1,
                             "authorization": [{"addresses": ["or*ders"], "operations": ["publish"]}]},
                            dict(MONITOR, metadata={"name": "other.monitor"})])
    assert r.failed and objects(space) == {}, r
    errors = r["errors"]
    assert any(e.startswith("username: 'a_b' must be a Kubernetes name") for e in errors), errors
    assert any(e.startswith("enabled: false for user 'ok'") for e in errors), errors
    assert any("users[2].authorization[0].addresses[0]: 'or*ders'" in e for e in errors), errors
    assert any("users[2].authorization[0].operations: 'publish' must be one of" in e for e in errors), errors
    assert any("users[3].metadata.name: 'other.monitor' must be <address space>.<username>" in e
               for e in errors), errors
    r = no_secret(space.run("messaging_user", address_space="nospace", username="u", password=PW1))
    assert r.failed and "address space 'nospace' does not exist in namespace" in r.msg, r


def test_the_crd_rules_hold_on_the_server(space):
    """What the server itself refuses (the CRD's schema, as EnMasse's): a
    user name against EnMasse's pattern, an authentication type not in its
    enum, an operation not in its enum."""
    for spec, field in ((dict(MONITOR["spec"], username="Upper"), "spec.username"),
                        (dict(MONITOR["spec"], authentication={"type": "ldap"}), "spec.authentication.type"),
                        (dict(MONITOR["spec"], authorization=[{"operations": ["publish"]}]),
                         "spec.authorization[0].operations[0]")):
        try:
            space.create_as("kubectl", dict(MONITOR, spec=spec))
        except Exception as e:  # KubeError: HTTP 422
            assert "422" in str(e) and field in str(e), e
        else:
            raise AssertionError("the server accepted %s" % spec)
    assert objects(space) == {}


def test_conflict_with_another_manager_and_wait_for_the_operator(space):
    theirs = {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser", "metadata": {"name": "shop.app1"},
              "spec": {"username": "app1", "authentication": {"type": "password", "password": b64(PW1)},
                       "authorization": [{"addresses": ["x"], "operations": ["send"]}]}}
    space.apply_as("someone", theirs)
    r = users(space, users=[APP1])
    assert r.failed and "conflict" in r.msg and "'someone'" in r.msg and "force_conflicts" in r.msg, r
    assert objects(space)["shop.app1"]["spec"]["authorization"] == theirs["spec"]["authorization"]
    r = users(space, users=[APP1], force_conflicts=True)
    assert not r.failed and r.changed and objects(space)["shop.app1"]["spec"]["authorization"][0]["addresses"] == \
        ["orders/*"], r
    r = users(space, users=[APP1], wait=True, wait_timeout=2)
    assert r.failed and "user 'app1': not ready after 2s (phase None)" in r.msg, r
    space.operator_status("MessagingUser", "shop.app1", {"phase": "Active", "generation": 1})
    r = users(space, users=[APP1], wait=True, wait_timeout=5)
    assert not r.failed and not r.changed and r["users"][0]["status"]["phase"] == "Active", r


def test_a_verbose_playbook_run_with_diff_shows_no_password(space):
    """ansible-playbook -vvvv with diff, a change of password and a check-mode
    run: the module's arguments, result and diff go through the callback;
    no password, plain or base64, is in the output."""
    task = {"enmasse.messaging.messaging_user": dict(space.args(), address_space="shop", users=[APP1, MONITOR]),
            "diff": True}
    changed = {"enmasse.messaging.messaging_user": dict(space.args(), address_space="shop",
                                                        users=[dict(APP1, password=PW3), MONITOR]), "diff": True}
    rc, out = run_playbook([dict(task, name="create"), dict(changed, name="change", check_mode=True),
                            dict(changed, name="change")], env={"ANSIBLE_VERBOSITY": "4"})
    assert rc == 0 and "(hidden, changed)" in out and "changed=3" in out, out[-4000:]
    for secret in SECRETS:
        assert secret not in out, "%s... in the output" % secret[:4]
    assert objects(space)["shop.app1"]["spec"]["authentication"]["password"] == b64(PW3)


def test_users_go_with_their_address_space(space):
    """address_space state=absent deletes the space's own MessagingUsers (as
    EnMasse's finalizer does) and leaves the others, named."""
    assert users(space, users=[APP1, MONITOR]).changed
    space.create_as("kubectl", dict(MONITOR, metadata={"name": "shop.hand"},
                                    spec=dict(MONITOR["spec"], username="hand")))
    chk = space.run("address_space", check_mode=True, name="shop", state="absent")
    assert chk.changed and chk["changes"]["deleted_users"] == ["app1", "monitor"], chk
    assert sorted(objects(space)) == ["shop.app1", "shop.hand", "shop.monitor"]
    r = space.run("address_space", name="shop", state="absent")
    assert not r.failed and r["changes"]["deleted_users"] == ["app1", "monitor"], r
    assert "shop" not in space.list("AddressSpace") and sorted(objects(space)) == ["shop.hand"]
    assert "MessagingUser object(s) not made by this collection are left" in str(r["warnings"]) and \
        "hand" in str(r["warnings"]), r
