"""artemis/security.py: what a brokered space's broker holds for the realm's
users (docs/identity.md "Brokered spaces"), derived with the one pattern
rule (model/users.py pattern_matches) and the one group encoding
(auth/backends.py)."""
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import security as sec
from ansible_collections.enmasse.messaging.plugins.module_utils.auth.backends import authorization_to_groups

BASE = {"send": ["manage", "messaging"], "consume": ["manage", "messaging"], "browse": ["manage", "messaging"],
        "createDurableQueue": ["manage", "messaging"], "deleteDurableQueue": ["manage", "messaging"],
        "createNonDurableQueue": ["manage", "messaging"], "deleteNonDurableQueue": ["manage", "messaging"],
        "manage": ["manage"], "createAddress": [], "deleteAddress": ["manage"], "view": ["manage"],
        "edit": ["manage"]}
ORDERS = authorization_to_groups([{"addresses": ["orders/*"], "operations": ["send"]},
                                  {"addresses": ["audit"], "operations": ["recv"]}])


def test_patterns_are_enmasse_s_not_artemis_wildcards():
    groups = ORDERS + ["recv_%2A", "send_ordersx"]
    assert sec.granting_groups("orders/eu", groups) == {"send": ["send_orders%2F%2A"], "recv": ["recv_%2A"]}
    assert sec.granting_groups("orders/eu/x", groups)["send"] == ["send_orders%2F%2A"]
    assert sec.granting_groups("ordersx", groups) == {"send": ["send_ordersx"], "recv": ["recv_%2A"]}
    assert sec.granting_groups("orders", groups) == {"send": [], "recv": ["recv_%2A"]}
    assert sec.granting_groups("audit", groups) == {"send": [], "recv": ["recv_%2A", "recv_audit"]}
    # a pattern with Artemis' wildcard words is an EnMasse exact address here
    assert sec.granting_groups("events/x", ["send_events%2F%23"])["send"] == []
    assert sec.granting_groups("events/#", ["send_events%2F%23"])["send"] == ["send_events%2F%23"]


def test_broker_roles_carry_the_marker_and_only_send_and_recv_groups():
    groups = authorization_to_groups([{"addresses": ["a"], "operations": ["send", "recv", "view", "manage"]}])
    assert groups == ["manage", "monitor", "recv_a", "send_a"]
    # manage/monitor would collide with the broker's own management role: never on the broker
    assert sec.broker_roles(groups) == ["enmasse-realm-user", "recv_a", "send_a"]
    assert not sec.is_realm_role("manage") and not sec.is_realm_role("messaging")
    assert sec.is_realm_role("consume_x") and sec.is_realm_role(sec.MARKER_ROLE)


def test_desired_setting_adds_the_granting_groups_to_the_base_roles():
    assert sec.desired_setting("misc", BASE, ORDERS) is None  # default deny: the '#' setting applies
    wanted = sec.desired_setting("orders/eu", BASE, ORDERS)
    assert wanted["send"] == ["manage", "messaging", "send_orders%2F%2A"]
    assert wanted["consume"] == wanted["browse"] == ["manage", "messaging"]
    assert wanted["manage"] == ["manage"] and wanted["createAddress"] == []
    audit = sec.desired_setting("audit", BASE, ORDERS)
    assert audit["send"] == ["manage", "messaging"]
    for perm in ("consume", "browse", "createNonDurableQueue", "deleteNonDurableQueue", "createDurableQueue",
                 "deleteDurableQueue"):
        assert audit[perm] == ["manage", "messaging", "recv_audit"], perm
    # realm roles found in the base are not carried over (a stale setting read as base)
    stale = dict(BASE, send=BASE["send"] + ["send_old"])
    assert sec.desired_setting("orders/eu", stale, ORDERS)["send"] == wanted["send"]


def test_setting_change_set_remove_or_nothing():
    wanted = sec.desired_setting("orders/eu", BASE, ORDERS)
    assert sec.setting_change("orders/eu", BASE, BASE, ORDERS) == ("set", wanted)
    # Artemis drops view and edit from a setting made through management: not a difference
    live = dict(wanted, view=[], edit=[])
    assert sec.setting_change("orders/eu", live, BASE, ORDERS) is None
    assert sec.setting_change("orders/eu", live, BASE, []) == ("remove", None)
    assert sec.setting_change("misc", BASE, BASE, ORDERS) is None
    args = sec.setting_arguments("orders/eu", wanted)
    assert len(args) == 13 and args[0] == "orders/eu" and args[1] == "manage,messaging,send_orders%2F%2A"


def user(name, auth=(), state="present", enabled=True, password="pw"):
    return {"username": name, "password": password, "authorization": list(auth), "state": state, "enabled": enabled}


def test_plan_users():
    live = {"keep": ["enmasse-realm-user"], "old": ["enmasse-realm-user"], "off": ["enmasse-realm-user"],
            "gone": ["enmasse-realm-user"], "pw": ["enmasse-realm-user"]}
    rule = [{"addresses": ["a"], "operations": ["send"]}]
    users = [user("keep"), user("new", rule), user("old", rule), user("off", enabled=False),
             user("gone", state="absent"), user("pw"), user("never", enabled=False)]
    steps = sec.plan_users(users, live, set_password={"pw", "new"})
    assert [(s["action"], s["username"], s.get("password")) for s in steps] == [
        ("add", "new", True), ("reset", "old", False), ("remove", "off", None), ("remove", "gone", None),
        ("reset", "pw", True)]
    assert steps[1]["roles"] == ["enmasse-realm-user", "send_a"]
    # on_create: an existing user whose password the realm did not set keeps the broker's hash
    assert sec.plan_users([user("keep")], live, set_password=set()) == []
    pruned = sec.plan_users([user("keep")], live, set(), prune=True)
    assert [(s["action"], s["username"]) for s in pruned] == [("remove", n) for n in ("gone", "off", "old", "pw")]
    after = sec.users_after(live, steps)
    assert sorted(after) == ["keep", "new", "old", "pw"]
    assert sec.realm_groups(after) == ["send_a"]


def test_the_broker_s_own_users_are_reserved():
    errors = sec.reserved_errors([user("app"), user("x")], {"app": "messaging", "admin": "management"})
    assert errors == ["username: 'app' is a user of the broker of this space (its own messaging user); "
                      "realm users need other names"]


class FakeJolokia(object):
    """Records the management operations (what BrokerUsers sends)."""
    display_url = "http://broker.test/console/jolokia"

    def __init__(self, users, roles):
        self.users, self.roles, self.calls = users, roles, []

    @staticmethod
    def exec_request(mbean, operation, *arguments):
        return {"operation": operation, "arguments": list(arguments)}

    def execute(self, mbean, operation, *arguments):
        self.calls.append((operation.split("(")[0],) + arguments)
        if operation.startswith("listUser"):
            import json
            return json.dumps([{"username": n, "roles": r} for n, r in self.users.items()])
        return None

    def bulk(self, requests):
        import json
        out = []
        for req in requests:
            self.calls.append((req["operation"].split("(")[0],) + tuple(req["arguments"]))
            match = req["arguments"][0] if req["arguments"] else None
            perms = self.roles.get(match, self.roles["#"])
            out.append((json.dumps([dict([("name", r)] + [(p, r in perms.get(p, [])) for p in sec.PERMISSIONS])
                                    for r in sorted(set(x for v in perms.values() for x in v))]), None))
        return out


def test_broker_users_check_mode_writes_nothing_and_a_kept_password_is_sent_as_null():
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.realm_users import BrokerUsers
    client = FakeJolokia({"alice": ["enmasse-realm-user"], "app": ["messaging"]}, {"#": BASE})
    rule = [{"addresses": ["orders/*"], "operations": ["send"]}]
    broker = BrokerUsers(client, "b", "space", {}, ["orders/eu", "misc"])
    broker.plan([user("alice", rule, password="p1")], set_password=set())
    result = broker.converge(check_mode=True)
    assert result == {"changed": True, "users": {"added": [], "updated": ["alice"], "removed": []},
                      "security_settings": {"set": ["orders/eu"], "removed": []}}
    assert [c[0] for c in client.calls] == ["listUser", "getRolesAsJSON", "getRolesAsJSON", "getRolesAsJSON"]
    client.calls = []
    broker.converge(check_mode=False)
    ops = [c[0] for c in client.calls]
    assert ops == ["resetUser", "addSecuritySettings", "clearAuthenticationCache", "clearAuthorizationCache"]
    assert client.calls[0] == ("resetUser", "alice", None, "enmasse-realm-user,send_orders%2F%2A", False)
    before, after = broker.diff()
    assert before["users"] == {"alice": ["enmasse-realm-user"]}
    assert after["security_settings"]["orders/eu"]["send"] == ["send_orders%2F%2A"]
    assert "p1" not in repr((before, after, result))
