"""The auth service's Keycloak backend end to end: a REAL Keycloak 26.4.7
(the session's ``keycloak`` fixture, realms set up as the identity contract
says), the auth service as the role installs it (the entry point and the
job_bundle files, system python3 -I, ``backend: keycloak``), a REAL qdrouterd
1.19 delegating SASL PLAIN to it, and REAL proton clients.

Realm per space (kc-space-a, kc-space-b); users with EnMasse authorization
rules encoded as groups (backends.authorization_to_groups):

* alice (a): send on ``orders/*``, recv on ``replies/*``
* bob (a): recv on ``orders/*``, send on ``replies/*``
* dave (a): disabled
* erin (a): send/recv on ``*`` (never logs in before Keycloak is stopped)
* carol (b): send/recv on ``*``

and, with a second service whose cache_ttl is 3 s, frank and george (a) for
the bound after which a changed password, a disabled or deleted user is
refused.
"""
import contextlib
import os
import time

import pytest

import test_auth_service_router as plain
from helpers import free_port

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends

pytestmark = [pytest.mark.integration, pytest.mark.router]

SPACE_A, SPACE_B = "kc-space-a", "kc-space-b"
PASSWORDS = {"alice": "Alice-pw-7f3", "bob": "Bob-pw-91c", "dave": "Dave-pw-55e", "erin": "Erin-pw-0a2",
             "carol": "Carol-pw-6d1"}
RULES = {
    "alice": [{"addresses": ["orders/*"], "operations": ["send"]}, {"addresses": ["replies/*"], "operations": ["recv"]}],
    "bob": [{"addresses": ["orders/*"], "operations": ["recv"]}, {"addresses": ["replies/*"], "operations": ["send"]}],
    "dave": [{"addresses": ["*"], "operations": ["send", "recv"]}],
    "erin": [{"addresses": ["*"], "operations": ["send", "recv"]}],
    "carol": [{"addresses": ["*"], "operations": ["send", "recv"]}],
}
CACHE_TTL = 60


@contextlib.contextmanager
def service_and_router(keycloak, root, cache_ttl):
    """The auth service (backend keycloak, ``cache_ttl``) and a qdrouterd with
    the two spaces' listeners delegating SASL to it."""
    prefix = plain.build_router()
    users_dir = os.path.join(root, "users")   # unused by the keycloak backend
    os.makedirs(users_dir)
    tls = plain.make_tls(root)
    service = plain.AuthService(os.path.join(root, "service"), users_dir, free_port(), tls=plain.service_tls(tls), extra={
        "backend": "keycloak", "keycloak_url": keycloak.url, "keycloak_timeout": 5, "cache_ttl": cache_ttl,
        "log_level": "DEBUG"}).start()
    ports = {SPACE_A: free_port(), SPACE_B: free_port()}
    try:
        with plain.running_router(prefix, root, ports, service.port, tls) as (mgmt, proc, log_path):
            yield {"mgmt": "amqp://127.0.0.1:%d" % mgmt, "ports": ports, "service": service, "router": proc,
                   "router_log": log_path, "keycloak": keycloak, "ca": tls["ca"]}
    finally:
        service.stop()


@pytest.fixture(scope="module")
def kc_env(keycloak, tmp_path_factory):
    import keycloak_admin as admin_api

    plain.build_router()
    if not keycloak.running:
        keycloak.start()
    admin = admin_api.KeycloakAdmin.of(keycloak)
    admin.create_space_realm(SPACE_A)
    admin.create_space_realm(SPACE_B)
    for user in ("alice", "bob", "dave", "erin"):
        admin.create_user(SPACE_A, user, PASSWORDS[user], backends.authorization_to_groups(RULES[user]),
                          enabled=(user != "dave"))
    admin.create_user(SPACE_B, "carol", PASSWORDS["carol"], backends.authorization_to_groups(RULES["carol"]))
    try:
        with service_and_router(keycloak, str(tmp_path_factory.mktemp("auth-kc")), CACHE_TTL) as env:
            env["admin"] = admin
            yield env
    finally:
        if keycloak.running:
            for space in (SPACE_A, SPACE_B):
                admin.delete_realm(space)


def connect(env, space, user):
    return plain.connect(env, space, user, PASSWORDS[user])


def link_refused(make):
    from proton.utils import LinkDetached
    with pytest.raises(LinkDetached) as info:
        make()
    assert "unauthorized" in str(info.value)


def send_and_receive(sender_conn, receiver_conn, address, body, timeout=30):
    """A pre-settled message from one connection to the other. A blocking
    connection does I/O only while it is worked: both are worked in turn until
    the message arrives (the sender gets its credit only after the router has
    seen the receiver's, which took more than a second in a loaded CI run)."""
    from proton import Message
    from proton.reactor import AtMostOnce
    receiver = receiver_conn.create_receiver(address, credit=10)
    sender = sender_conn.create_sender(address, options=AtMostOnce())
    sender.send(Message(body=body))
    deadline = time.time() + timeout
    while not receiver.fetcher.has_message:
        assert time.time() < deadline, "%r did not arrive on %r within %ss" % (body, address, timeout)
        sender_conn.container.do_work(0.05)
        receiver_conn.container.do_work(0.05)
    return receiver.receive(timeout=1).body


# ------------------------------------------------------------ the right password, the granted addresses

def test_right_password_connects_and_messages_flow_where_granted(kc_env):
    for sender, receiver, address in (("alice", "bob", "orders/eu"), ("bob", "alice", "replies/1")):
        conns = [connect(kc_env, SPACE_A, sender), connect(kc_env, SPACE_A, receiver)]
        try:
            assert send_and_receive(conns[0], conns[1], address, "to " + address) == "to " + address
        finally:
            for conn in conns:
                conn.close()
    text = kc_env["service"].text()
    assert "realm 'kc-space-a' user 'alice': authenticated as 'alice'" in text
    assert "realm 'kc-space-a' user 'bob': authenticated as 'bob'" in text


def test_send_only_where_send_and_receive_only_where_recv_is_granted(kc_env):
    alice = connect(kc_env, SPACE_A, "alice")
    try:
        alice.create_sender("orders/eu")                              # send orders/*
        link_refused(lambda: alice.create_sender("ordersx"))          # orders/* does not grant ordersx
        link_refused(lambda: alice.create_sender("replies/1"))        # recv only there
        link_refused(lambda: alice.create_receiver("orders/eu"))      # send only there
        alice.create_receiver("replies/1")
    finally:
        alice.close()
    bob = connect(kc_env, SPACE_A, "bob")
    try:
        link_refused(lambda: bob.create_sender("orders/eu"))
        link_refused(lambda: bob.create_receiver("ordersx"))
        bob.create_receiver("orders/eu")
    finally:
        bob.close()


# ------------------------------------------------------------ refusals

@pytest.mark.parametrize("space, user, password", [
    (SPACE_A, "alice", "not-her-password"),          # wrong password
    (SPACE_A, "mallory", PASSWORDS["alice"]),         # unknown user
    (SPACE_A, "dave", PASSWORDS["dave"]),             # disabled user
    (SPACE_B, "alice", PASSWORDS["alice"]),           # a user of space A at space B
    (SPACE_A, "carol", PASSWORDS["carol"]),           # and of B at A
], ids=["wrong-password", "unknown-user", "disabled-user", "a-user-at-b", "b-user-at-a"])
def test_refused(kc_env, space, user, password):
    cond = plain.refused(kc_env, space, user, password)
    assert "unauthorized-access" in cond
    assert "realm %r user %r: authentication failed" % (space, user) in kc_env["service"].text()


def test_the_other_space_accepts_its_own_user(kc_env):
    carol = connect(kc_env, SPACE_B, "carol")
    try:
        assert send_and_receive(carol, carol, "anything", "b") == "b"
    finally:
        carol.close()


# ------------------------------------------------------------ the documented bound

SHORT_TTL = 3


def wait_past(moment, ttl):
    time.sleep(max(0.0, moment + ttl + 0.5 - time.monotonic()))


def test_password_change_disable_and_delete_take_effect_within_cache_ttl(kc_env, tmp_path):
    """A service with cache_ttl 3 s beside the module's: a new password works at
    once; the old one, a disabled and a deleted user are refused once the
    cached check is older than cache_ttl. Nothing is restarted."""
    admin, space, groups = kc_env["admin"], SPACE_A, backends.ALL_ADDRESSES_GROUPS
    admin.create_user(space, "frank", "Frank-pw-1", groups)
    admin.create_user(space, "george", "George-pw-1", groups)
    with service_and_router(kc_env["keycloak"], str(tmp_path), SHORT_TTL) as env:
        plain.connect(env, space, "frank", "Frank-pw-1").close()
        first = time.monotonic()
        plain.connect(env, space, "george", "George-pw-1").close()
        george = time.monotonic()
        admin.set_password(space, "frank", "Frank-pw-2")
        admin.delete_user(space, "george")
        plain.connect(env, space, "frank", "Frank-pw-2").close()       # the new password: at once
        second = time.monotonic()
        wait_past(first, SHORT_TTL)
        assert "unauthorized-access" in plain.refused(env, space, "frank", "Frank-pw-1")
        wait_past(george, SHORT_TTL)
        assert "unauthorized-access" in plain.refused(env, space, "george", "George-pw-1")
        admin.set_enabled(space, "frank", False)
        wait_past(second, SHORT_TTL)
        assert "unauthorized-access" in plain.refused(env, space, "frank", "Frank-pw-2")
        assert env["service"].proc.poll() is None and env["router"].poll() is None
        text = env["service"].text()
        assert "Account disabled" in text and "Frank-pw" not in text and "George-pw" not in text


# ------------------------------------------------------------ Keycloak down and back

def test_keycloak_down_refuses_new_clients_and_recovers_without_restarts(kc_env):
    keycloak, service, router = kc_env["keycloak"], kc_env["service"], kc_env["router"]
    service_pid, router_pid = service.proc.pid, router.pid
    connect(kc_env, SPACE_A, "alice").close()       # alice's check is cached (CACHE_TTL)
    keycloak.stop()
    try:
        cond = plain.refused(kc_env, SPACE_A, "erin", PASSWORDS["erin"])
        text = service.text()
        assert "realm 'kc-space-a' user 'erin': the backend cannot answer" in text, text[-2000:]
        assert "realm 'kc-space-a' user 'erin': authentication failed" not in text
        # a check that succeeded within cache_ttl still answers (the documented cache)
        connect(kc_env, SPACE_A, "alice").close()
    finally:
        keycloak.start()
    # back: a new client connects (within a minute: Keycloak's first token requests after a start can take
    # longer than the service's timeout on a loaded machine, and the client then tries again), nothing restarted
    deadline = time.time() + 60
    while True:
        try:
            connect(kc_env, SPACE_A, "erin").close()
            break
        except Exception:  # pylint: disable=broad-except  # refused while Keycloak warms up: try again
            if time.time() > deadline:
                raise
            time.sleep(2)
    assert (service.proc.pid, service.proc.poll()) == (service_pid, None)
    assert (router.pid, router.poll()) == (router_pid, None)
    print("client condition while Keycloak was down: %s; Keycloak starts (s): %s" % (cond, keycloak.start_seconds))


def test_no_password_or_token_in_the_logs(kc_env):
    with open(kc_env["router_log"]) as handle:
        logs = kc_env["service"].text() + handle.read()
    for password in PASSWORDS.values():
        assert password not in logs
    assert "eyJ" not in logs                       # a JWT (base64url of '{"')
    assert "access_token" not in logs
