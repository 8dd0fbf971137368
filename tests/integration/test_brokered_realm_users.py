"""Brokered spaces authenticate the realm's users and authorize them with
security settings derived from their permissions (docs/identity.md
"Brokered spaces"), end to end: a REAL Keycloak 26.4.7 (the session's
``keycloak``), two REAL Artemis 2.40 brokers (one per space, made like
roles/broker with its login.config: the realm users' files first) and a REAL
proton AMQP client, as a client sees it.

Space ``bra`` (broker A), users converged with ``messaging_user``:

* alice: send ``orders/*``, recv ``audit``
* bob: recv ``orders/*``
* dave: send/recv ``*``, disabled
* erin: send/recv ``*``, deleted by a test
* frank: recv ``*``, password changed by a test

space ``brb`` (broker B): carol, send/recv ``*``.
Addresses of ``bra``: the queues orders/eu, ordersx, audit.
"""
import os
import time
import uuid

import pytest
from proton import Message, ProtonException

import amqp_checks
import helpers
from brokered_space import Space

pytestmark = pytest.mark.integration

A, B = "bra", "brb"
PW = {"alice": "Alice-pw-1a", "bob": "Bob-pw-2b", "dave": "Dave-pw-3c", "erin": "Erin-pw-4d", "frank": "Frank-pw-5e",
      "carol": "Carol-pw-6f"}
ALL = [{"addresses": ["*"], "operations": ["send", "recv"]}]
USERS_A = [
    {"username": "alice", "password": PW["alice"], "authorization": [
        {"addresses": ["orders/*"], "operations": ["send"]}, {"addresses": ["audit"], "operations": ["recv"]}]},
    {"username": "bob", "password": PW["bob"], "authorization": [{"addresses": ["orders/*"], "operations": ["recv"]}]},
    {"username": "dave", "password": PW["dave"], "authorization": ALL, "enabled": False},
    {"username": "erin", "password": PW["erin"], "authorization": ALL},
    {"username": "frank", "password": PW["frank"], "authorization": [{"addresses": ["*"], "operations": ["recv"]}]},
]
QUEUES = ["orders/eu", "ordersx", "audit"]


def frank(password, authorization=None):
    """frank's task arguments with ``password`` (and ``authorization``)."""
    return {"username": "frank", "password": password, "authorization": authorization or USERS_A[4]["authorization"]}


def kc_args(keycloak):
    return dict(keycloak_url=keycloak.url, keycloak_admin_user=keycloak.admin_user,
                keycloak_admin_password=keycloak.admin_password)


def users(space, keycloak, check=False, **args):
    res = space.run("messaging_user", check_mode=check, diff=True, **dict(kc_args(keycloak), **args))
    given = [args.get("password")] + [u.get("password") for u in args.get("users") or []]
    secrets = list(PW.values()) + [p for p in given if p] + [keycloak.admin_password, space.broker.management_password]
    for secret in secrets:
        assert secret not in res.stdout, "a secret in the module output"
    return res


def make_space(broker, name, keycloak, tmp):
    broker.create()
    broker.start()
    sp = Space(broker, name, broker.write_connection_file(str(tmp / ("%s.json" % name)), name))
    res = sp.run("address_space", type="brokered", plan=helpers.DEFAULT_PLAN, **kc_args(keycloak))
    assert res.rc == 0, res
    return sp


@pytest.fixture(scope="module")
def spaces(keycloak, tmp_path_factory):
    """Spaces A and B, each on its own broker, with their realms and users."""
    tmp = tmp_path_factory.mktemp("brokered-realm-users")
    brokers = [helpers.ArtemisBroker(str(tmp / n)) for n in (A, B)]
    try:
        a = make_space(brokers[0], A, keycloak, tmp)
        b = make_space(brokers[1], B, keycloak, tmp)
        assert a.run("address", addresses=[helpers.queue(q) for q in QUEUES]).rc == 0
        assert b.run("address", addresses=[helpers.queue("orders/eu")]).rc == 0
        res = users(a, keycloak, users=USERS_A)
        assert res.rc == 0 and sorted(res.result["broker"]["users"]["added"]) == ["alice", "bob", "erin", "frank"], res
        assert res.result["broker"]["security_settings"]["set"] == sorted(QUEUES), res
        res = users(b, keycloak, username="carol", password=PW["carol"], authorization=ALL)
        assert res.rc == 0 and res.result["broker"]["users"]["added"] == ["carol"], res
        yield a, b
    finally:
        for broker in brokers:
            broker.stop()


def url(space):
    return "amqp://127.0.0.1:%d" % space.broker.amqp_port


def attempt(space, user, password, op, address, anonymous=False):
    """What the client sees: None when ``op`` (send: one message accepted;
    recv: a receiver attached) worked, else the error text."""
    try:
        conn = amqp_checks.connect(url(space), user, password, anonymous=anonymous, timeout=15)
    except ProtonException as e:
        return "connection refused: %s" % e
    try:
        if op == "send":
            snd = conn.create_sender(address)
            snd.send(Message(body="from %s" % user, id=uuid.uuid4().hex))
            snd.close()
        else:
            conn.create_receiver(address).close()
        return None
    except ProtonException as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - closing a refused connection
            pass


def refused_login(err):
    return err is not None and err.startswith("connection refused")


def refused_permission(err, perm):
    return err is not None and "does not have permission='%s'" % perm in err, err


def test_negative_matrix_as_a_client_sees_it(spaces):
    a, b = spaces
    assert refused_login(attempt(a, None, None, "send", "orders/eu", anonymous=True))
    assert refused_login(attempt(a, "alice", "not-" + PW["alice"], "send", "orders/eu"))
    assert refused_login(attempt(a, "nobody", PW["alice"], "send", "orders/eu"))
    assert refused_login(attempt(a, "dave", PW["dave"], "send", "orders/eu"))  # disabled
    assert refused_login(attempt(a, "carol", PW["carol"], "send", "orders/eu"))  # a user of B at A
    assert refused_login(attempt(b, "alice", PW["alice"], "send", "orders/eu"))  # a user of A at B
    ok, why = refused_permission(attempt(a, "alice", PW["alice"], "send", "ordersx"), "SEND")  # orders/* not ordersx
    assert ok, why
    ok, why = refused_permission(attempt(a, "alice", PW["alice"], "send", "audit"), "SEND")  # send without send
    assert ok, why
    ok, why = refused_permission(attempt(a, "alice", PW["alice"], "recv", "orders/eu"), "CONSUME")  # recv without recv
    assert ok, why
    ok, why = refused_permission(attempt(a, "bob", PW["bob"], "send", "orders/eu"), "SEND")
    assert ok, why


def test_positive_cases_and_the_space_s_own_user(spaces):
    a, b = spaces
    own = amqp_checks.connect(url(a), a.broker.messaging_user, a.broker.messaging_password)
    try:
        amqp_checks.drain(own, "orders/eu")
    finally:
        own.close()
    assert attempt(a, "alice", PW["alice"], "send", "orders/eu") is None
    assert attempt(a, "alice", PW["alice"], "recv", "audit") is None
    conn = amqp_checks.connect(url(a), "bob", PW["bob"])
    try:
        got = amqp_checks.drain(conn, "orders/eu")
        assert [m.body for m in got] == ["from alice"]
    finally:
        conn.close()
    assert attempt(a, "frank", PW["frank"], "recv", "ordersx") is None  # '*' grants every address
    assert attempt(b, "carol", PW["carol"], "send", "orders/eu") is None
    # Artemis' own salted hash (plaintext=false) in the realm users' file, never a password
    with open(os.path.join(a.broker.instance, "etc", "artemis-realm-users.properties")) as f:
        stored = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line and not line.startswith("#"))
    assert sorted(k.strip() for k in stored) == ["alice", "bob", "erin", "frank"]
    assert all(v.strip().startswith("ENC(") for v in stored.values()), stored
    assert not any(pw in "".join(stored.values()) for pw in PW.values())
    # the space's own (operator) user keeps every address
    assert attempt(a, a.broker.messaging_user, a.broker.messaging_password, "send", "ordersx") is None


def test_check_mode_second_run_and_a_new_address(keycloak, spaces):
    a, unused = spaces
    again = users(a, keycloak, users=USERS_A)
    assert again.result["changed"] is False, again.result.get("diff", {}).get("before", {}).get("(broker)")
    res = users(a, keycloak, check=True, username="gina", password="Gina-pw-7g",
                authorization=[{"addresses": ["ordersx"], "operations": ["send"]}])
    assert res.rc == 0 and res.result["broker"]["users"]["added"] == ["gina"], res
    assert res.result["broker"]["security_settings"]["set"] == ["ordersx"], res
    assert res.result["diff"]["after"]["(broker)"]["users"] == {"gina": ["enmasse-realm-user", "send_ordersx"]}
    assert "Gina-pw-7g" not in res.stdout
    assert refused_login(attempt(a, "gina", "Gina-pw-7g", "send", "ordersx"))
    # a new address is protected the moment it exists: orders/us is alice's (orders/*), misc is not (only '*')
    res = a.run("address", addresses=[helpers.queue(q) for q in QUEUES + ["orders/us", "misc"]])
    assert res.rc == 0 and res.result["security_settings"] == {"set": ["misc", "orders/us"], "removed": []}, res
    assert attempt(a, "alice", PW["alice"], "send", "orders/us") is None
    ok, why = refused_permission(attempt(a, "alice", PW["alice"], "send", "misc"), "SEND")
    assert ok, why
    assert attempt(a, "erin", PW["erin"], "send", "misc") is None  # '*' grants it
    again = a.run("address", addresses=[helpers.queue(q) for q in QUEUES + ["orders/us", "misc"]])
    assert again.rc == 0 and again.result["changed"] is False, again


def test_password_change_disable_and_delete_take_effect_without_restart(keycloak, spaces):
    a, unused = spaces
    assert attempt(a, "frank", PW["frank"], "recv", "audit") is None
    # update_password on_create: a different password on a re-run changes nothing, the broker keeps its hash
    res = users(a, keycloak, update_password="on_create", **frank(password="Frank-other-9"))
    assert res.rc == 0 and res.result["changed"] is False, res
    assert attempt(a, "frank", PW["frank"], "recv", "audit") is None
    res = users(a, keycloak, **frank(password="Frank-new-8z"))
    assert res.rc == 0 and res.result["broker"]["users"]["updated"] == ["frank"], res
    assert "Frank-new-8z" not in res.stdout
    assert refused_login(attempt(a, "frank", PW["frank"], "recv", "audit"))
    assert attempt(a, "frank", "Frank-new-8z", "recv", "audit") is None
    # narrowed permissions: the next connection is refused
    res = users(a, keycloak, **frank(password="Frank-new-8z", authorization=[
        {"addresses": ["audit"], "operations": ["recv"]}]))
    assert res.rc == 0 and res.result["broker"]["users"]["updated"] == ["frank"], res
    assert res.result["diff"]["after"]["(broker)"]["users"]["frank"] == ["enmasse-realm-user", "recv_audit"]
    ok, why = refused_permission(attempt(a, "frank", "Frank-new-8z", "recv", "ordersx"), "CONSUME")
    assert ok, why
    # disable, enable, delete
    assert attempt(a, "erin", PW["erin"], "send", "orders/eu") is None
    res = users(a, keycloak, **dict(USERS_A[3], enabled=False))
    assert res.result["broker"]["users"]["removed"] == ["erin"], res
    assert refused_login(attempt(a, "erin", PW["erin"], "send", "orders/eu"))
    res = users(a, keycloak, **USERS_A[3])
    assert res.result["broker"]["users"]["added"] == ["erin"], res
    assert attempt(a, "erin", PW["erin"], "send", "orders/eu") is None
    res = users(a, keycloak, username="erin", state="absent")
    assert res.result["changes"]["deleted"] == ["erin"] and res.result["broker"]["users"]["removed"] == ["erin"], res
    assert refused_login(attempt(a, "erin", PW["erin"], "send", "orders/eu"))


def test_a_restarted_broker_keeps_users_and_permissions(spaces):
    a, unused = spaces
    a.broker.restart()
    assert attempt(a, "alice", PW["alice"], "send", "orders/eu") is None
    ok, why = refused_permission(attempt(a, "alice", PW["alice"], "send", "ordersx"), "SEND")
    assert ok, why
    ok, why = refused_permission(attempt(a, "alice", PW["alice"], "send", "audit"), "SEND")
    assert ok, why
    assert refused_login(attempt(a, "alice", "not-" + PW["alice"], "send", "orders/eu"))
    assert attempt(a, a.broker.messaging_user, a.broker.messaging_password, "send", "ordersx") is None


def test_keycloak_down_the_broker_still_authenticates_and_messaging_user_fails_clearly(keycloak, spaces):
    a, unused = spaces
    keycloak.stop()
    try:
        assert attempt(a, "alice", PW["alice"], "send", "orders/eu") is None
        ok, why = refused_permission(attempt(a, "alice", PW["alice"], "send", "ordersx"), "SEND")
        assert ok, why
        started = time.monotonic()
        res = users(a, keycloak, users=USERS_A)
        assert res.rc != 0 and "cannot reach Keycloak at" in res.result["msg"], res
        assert time.monotonic() - started < 120
        assert attempt(a, "alice", PW["alice"], "send", "orders/eu") is None  # nothing changed on the broker
    finally:
        keycloak.start()
