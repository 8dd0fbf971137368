"""The auth service's pure parts: the AMQP codec, the password hashes, the
users file backend, EnMasse's group -> address-authz rule, and the server's
SASL/open exchange over a loopback socket with a client written from the
codec (the real router is in tests/integration/test_auth_service_router.py)."""
import asyncio
import base64
import json
import os
import struct
import threading

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import authz, backends, codec, server
from ansible_collections.enmasse.messaging.plugins.module_utils.auth.codec import (
    Array, Described, Symbol, UByte, UInt, ULong, UShort)


# ------------------------------------------------------------ codec

@pytest.mark.parametrize("value", [
    None, True, False, UByte(7), UShort(513), UInt(0), UInt(9), UInt(70000), ULong(0), ULong(200), ULong(2 ** 40),
    -5, 2 ** 40, -2 ** 40, 1.5, b"", b"\x00\x01", b"x" * 300, "", "h\u00e9", "y" * 300, Symbol("PLAIN"),
    Symbol("s" * 300), [], [1, "a", Symbol("b")], list(range(300)), {}, {Symbol("k"): "v", "s": [None]},
    Described(ULong(0x10), ["c", None]), Described(Symbol("x:y"), {}),
    Array("symbol", [Symbol("A"), Symbol("B")]), Array("string", ["send", "recv"]), Array("string", []),
    Array("uint", [UInt(1), UInt(2)]),
])
def test_codec_round_trips(value):
    encoded = codec.encode(value)
    decoded, used = codec.decode(encoded)
    assert used == len(encoded)
    assert decoded == value
    assert type(decoded) is type(value) or (isinstance(value, int) and not isinstance(value, bool))


def test_codec_decodes_what_proton_writes_for_the_router_open():
    # open frame as qdrouterd 1.19 sends it to the auth service (captured shape):
    # desired-capabilities sym8 array of one symbol, properties map sym -> str
    props = {Symbol("product"): "qpid-dispatch-router", Symbol("version"): "1.19.0"}
    body = codec.performative(codec.OPEN, ["container", "127.0.0.1", UInt(16384), UShort(32767), None, None, None,
                                           None, Array("symbol", [Symbol("ADDRESS-AUTHZ")]), props])
    code, fields = codec.parse_body(body)
    assert code == codec.OPEN
    o = codec.as_dict(code, fields)
    assert o["hostname"] == "127.0.0.1" and o["max_frame_size"] == 16384
    assert codec.symbols(o["desired_capabilities"]) == ["ADDRESS-AUTHZ"]
    assert o["properties"] == props


def test_codec_small_array_and_symbolic_descriptors():
    # array8 of sym8 (0xe0 size count 0xa3 ...) as some peers write it
    raw = bytes([0xE0, 10, 2, 0xA3, 3]) + b"abc" + bytes([3]) + b"def"
    assert codec.decode(raw)[0] == Array("symbol", [Symbol("abc"), Symbol("def")])
    body = codec.encode(Described(Symbol("amqp:sasl-init:list"), [Symbol("PLAIN")]))
    code, fields = codec.parse_body(body)
    assert code == codec.SASL_INIT and fields == [Symbol("PLAIN"), None, None]
    assert codec.symbols(Symbol("ONE")) == ["ONE"] and codec.symbols(None) == []


@pytest.mark.parametrize("raw, message", [
    (b"\xa1\x05ab", "truncated"),
    (b"\xc0\x05\x02\x40", "truncated"),
    (b"\xc1\x02\x01\x40", "odd number"),
    (b"\xc0\x03\x01\x40\x40", "does not match"),
    (b"\xe0\x05\x02\xa3\x00\x00\x00\x00", "array size 5 does not match"),
    (b"\xfe", "unknown AMQP type constructor 0xfe"),
    (b"\xa1\x02\xff\xfe", "invalid string"),
])
def test_codec_refuses_bad_encodings(raw, message):
    with pytest.raises(codec.DecodeError, match=message):
        codec.decode(raw)


def test_codec_frames():
    f = codec.sasl_outcome(codec.SASL_AUTH)
    size, doff, ftype, channel = codec.parse_frame_header(f[:8])
    assert (size, doff, ftype, channel) == (len(f), 2, codec.FRAME_SASL, 0)
    code, fields = codec.parse_body(f[8:])
    assert code == codec.SASL_OUTCOME and fields[0] == 1
    assert codec.parse_body(b"") == (None, [])
    with pytest.raises(codec.DecodeError, match="bad frame header"):
        codec.parse_frame_header(struct.pack(">IBBH", 4, 2, 0, 0))
    with pytest.raises(codec.DecodeError, match="not a described list"):
        codec.parse_body(codec.encode("x"))
    close = codec.parse_body(codec.close_frame("amqp:not-implemented", "why")[8:])
    assert close[1][0] == Described(ULong(codec.ERROR), [Symbol("amqp:not-implemented"), "why"])
    with pytest.raises(TypeError):
        codec.encode(object())


# ------------------------------------------------------------ hashes, groups

def test_password_hash_verifies_and_is_salted():
    h1 = backends.hash_password("pw", iterations=1000)
    h2 = backends.hash_password("pw", iterations=1000)
    assert h1 != h2 and h1.startswith("pbkdf2-sha256$1000$")
    assert backends.verify_password("pw", h1) and backends.verify_password("pw", h2)
    assert not backends.verify_password("pW", h1)
    assert not backends.verify_password("", h1)
    # the published vector PBKDF2-HMAC-SHA256("password", "salt", 1, 32 bytes) = 120fb6cf...0be17b
    known = backends.hash_password("password", iterations=1, salt=b"salt")
    assert base64.b64decode(known.split("$")[3]).hex() == (
        "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b")


@pytest.mark.parametrize("bad", [None, "", "md5$1$a$b", "pbkdf2-sha256$x$AA==$AA==", "pbkdf2-sha256$0$AA==$AA==",
                                 "pbkdf2-sha256$1$!!$AA==", "pbkdf2-sha256$1$$AA=="])
def test_bad_stored_hashes_are_refused(bad):
    with pytest.raises(ValueError):
        backends.parse_hash(bad)


@pytest.mark.parametrize("password, iterations", [("", 1000), (None, 1000), ("x", 0), ("x", True)])
def test_hash_password_refuses_bad_input(password, iterations):
    with pytest.raises(ValueError):
        backends.hash_password(password, iterations=iterations)


def test_groups_to_address_authz_follows_enmasse():
    groups = ["send_queue1", "recv_queue1", "consume_orders%2F%2A", "send_%2A", "manage", "monitor",
              "view_x", "create_y", "send_", "odd"]
    assert backends.groups_to_address_authz(groups) == {
        "queue1": ["recv", "send"], "orders/*": ["recv"], "*": ["send"]}
    assert backends.groups_to_address_authz(backends.ALL_ADDRESSES_GROUPS) == {"*": ["recv", "send"]}
    assert backends.groups_to_address_authz([]) == {}


def test_authorization_to_groups_encodes_enmasse_messaging_user_rules():
    groups = backends.authorization_to_groups([
        {"addresses": ["orders/*", "q1"], "operations": ["send", "recv"]},
        {"operations": ["manage", "view"]},
    ])
    assert groups == ["manage", "monitor", "recv_orders%2F%2A", "recv_q1", "send_orders%2F%2A", "send_q1"]
    assert backends.groups_to_address_authz(groups) == {"orders/*": ["recv", "send"], "q1": ["recv", "send"]}


@pytest.mark.parametrize("bad, message", [
    ("x", "must be a list"),
    (["x"], r"authorization\[0\]: 'x' must be a mapping"),
    ([{"addresses": ["a"], "operations": ["fly"]}], r"'fly' is not one of send, recv, view, manage"),
    ([{"addresses": ["a"]}], r"authorization\[0\]\.operations"),
    ([{"operations": ["send"]}], "needs at least one address pattern"),
    ([{"addresses": [""], "operations": ["send"]}], "non-empty address patterns"),
    ([{"addresses": ["a"], "operations": ["send"], "extra": 1}], "unknown keys extra"),
])
def test_authorization_to_groups_names_the_bad_field(bad, message):
    with pytest.raises(ValueError, match=message):
        backends.authorization_to_groups(bad)


# ------------------------------------------------------------ users file backend

def write(d, realm, users, **extra):
    doc = backends.users_file_document(realm, dict(
        (name, {"password": backends.hash_password(pw, iterations=1000), "groups": groups})
        for name, (pw, groups) in users.items()))
    doc.update(extra)
    path = os.path.join(str(d), realm + ".json")
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(doc, handle)
    os.replace(tmp, path)


def test_users_file_backend_checks_per_realm(tmp_path):
    write(tmp_path, "space-a", {"alice": ("a", ["send_q"])})
    write(tmp_path, "space-b", {"alice": ("b", [])})
    be = backends.UsersFileBackend(str(tmp_path))
    ident = be.check("space-a", "alice", "a")
    assert ident == backends.Identity("alice", ["send_q"])
    assert ident.address_authz == {"q": ["send"]}
    assert be.check("space-a", "alice", "b") is None
    assert be.check("space-b", "alice", "b").groups == []
    assert be.check("space-b", "alice", "a") is None
    assert be.check("space-c", "alice", "a") is None
    assert be.check("space-a", "bob", "a") is None


@pytest.mark.parametrize("realm", ["../space-a", "", ".hidden", "a/b", None, "x" * 101])
def test_users_file_backend_refuses_realms_that_are_no_file_name(tmp_path, realm):
    write(tmp_path, "space-a", {"alice": ("a", [])})
    os.makedirs(str(tmp_path / "sub"))
    write(tmp_path / "sub", "x", {"alice": ("a", [])})
    assert backends.UsersFileBackend(str(tmp_path / "sub")).check(realm, "alice", "a") is None


def test_users_file_backend_rereads_a_changed_file(tmp_path):
    be = backends.UsersFileBackend(str(tmp_path))
    assert be.check("s", "u", "one") is None
    write(tmp_path, "s", {"u": ("one", [])})
    assert be.check("s", "u", "one") is not None
    write(tmp_path, "s", {"u": ("two", [])})
    assert be.check("s", "u", "one") is None
    assert be.check("s", "u", "two") is not None
    os.remove(str(tmp_path / "s.json"))
    assert be.check("s", "u", "two") is None


@pytest.mark.parametrize("content, message", [
    ("{oops", "cannot read"),
    ('{"users": []}', "users: .* must be an object"),
    ('{"realm": "other", "users": {}}', "is not the realm of the file name"),
    ('{"format": 2, "users": {}}', "format: 2 is not 1"),
    ('{"users": {"u": {"password": "plain"}}}', r"users\['u'\]\.password: not a pbkdf2-sha256"),
    ('{"users": {"u": {"password": "pbkdf2-sha256$1$AA==$AA==", "groups": "send_x"}}}', "groups: must be a list"),
])
def test_a_broken_users_file_raises_backend_error(tmp_path, content, message):
    (tmp_path / "s.json").write_text(content)
    with pytest.raises(backends.BackendError, match=message):
        backends.UsersFileBackend(str(tmp_path)).check("s", "u", "x")


def test_users_file_document_checks_itself():
    with pytest.raises(ValueError, match="password"):
        backends.users_file_document("s", {"u": {"password": "clear text"}})


# ------------------------------------------------------------ the server

class FakeBackend(object):
    def __init__(self):
        self.calls = []

    def check(self, realm, username, password):
        self.calls.append((realm, username))
        if realm == "broken":
            raise backends.BackendError("broken on purpose")
        if (realm, username, password) == ("space-a", "alice", "pw"):
            return backends.Identity("alice", ["send_q1", "recv_%2A", "manage"])
        return None


class Loop(object):
    """An AuthServer on 127.0.0.1 in an event loop thread."""

    def __init__(self, **kw):
        self.backend = FakeBackend()
        self.loop = asyncio.new_event_loop()
        self.server = server.AuthServer(self.backend, handshake_timeout=10, **kw)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start("127.0.0.1", 0), self.loop).result(10)
        self.port = self.server.ports()[0]

    def close(self):
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def srv():
    s = Loop()
    yield s
    s.close()


def client(port):
    import socket
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(out), n))
        out += chunk
    return out


def recv_frame(sock):
    header = recv_exact(sock, 8)
    size, doff, ftype, unused = codec.parse_frame_header(header)
    body = recv_exact(sock, size - 8)[doff * 4 - 8:]
    return ftype, codec.parse_body(body)


def sasl(sock, mechanism, response, hostname):
    sock.sendall(codec.SASL_HEADER)
    assert recv_exact(sock, 8) == codec.SASL_HEADER
    ftype, (code, fields) = recv_frame(sock)
    assert ftype == codec.FRAME_SASL and code == codec.SASL_MECHANISMS
    assert codec.symbols(fields[0]) == ["PLAIN"]
    sock.sendall(codec.sasl_init(mechanism, response, hostname))
    ftype, (code, fields) = recv_frame(sock)
    assert code == codec.SASL_OUTCOME
    return fields[0]


def test_server_plain_then_open_with_identity_and_address_authz(srv):
    sock = client(srv.port)
    assert sasl(sock, "PLAIN", b"\0alice\0pw", "space-a") == codec.SASL_OK
    sock.sendall(codec.AMQP_HEADER)
    assert recv_exact(sock, 8) == codec.AMQP_HEADER
    sock.sendall(codec.open_frame("router", hostname="auth-host", desired_capabilities=["ADDRESS-AUTHZ"]))
    ftype, (code, fields) = recv_frame(sock)
    assert ftype == codec.FRAME_AMQP and code == codec.OPEN
    o = codec.as_dict(code, fields)
    assert codec.symbols(o["offered_capabilities"]) == ["ADDRESS-AUTHZ"]
    props = o["properties"]
    assert all(isinstance(k, Symbol) for k in props)
    assert props["authenticated-identity"] == {"sub": "alice", "preferred_username": "alice"}
    assert props["groups"] == ["manage", "recv_%2A", "send_q1"]
    authz = props["address-authz"]
    # '*' reaches the router as one pattern per first character a standard address may have
    assert authz["q1"] == ["send"] and authz["$will/q1"] == ["send"] and authz["a*"] == ["recv"]
    assert "*" not in authz and not [p for p in authz if p.startswith("_")]
    assert all(isinstance(v, Array) and v.element_type == "string" for v in authz.values())
    sock.sendall(codec.close_frame())
    ftype, (code, fields) = recv_frame(sock)
    assert code == codec.CLOSE
    assert sock.recv(1) == b""
    assert srv.backend.calls == [("space-a", "alice")]


def test_every_address_is_no_address_authz_so_the_space_policy_applies():
    """A user granted every address of the space gets the space's declared
    addresses (the router's vhost policy): qdrouterd 1.19 would use an
    address-authz of '*' instead of the policy (issue 19, item 5)."""
    every = backends.Identity("alice", backends.ALL_ADDRESSES_GROUPS)
    props, offered = server.open_properties(every, ["ADDRESS-AUTHZ"])
    assert offered == ["ADDRESS-AUTHZ"] and "address-authz" not in props
    some = backends.Identity("bob", ["recv_%2A"])
    props, offered = server.open_properties(some, ["ADDRESS-AUTHZ"])
    assert dict((k, list(v)) for k, v in props["address-authz"].items()) == dict(
        (c + "*", ["recv"]) for c in authz.STAR_FIRST)


def test_a_will_for_an_address_is_granted_exactly_where_sending_to_it_is():
    """An AMQP client's will for X is a link to $will/X (docs/mqtt-design.md
    "Wills of AMQP clients"): send on X grants it, recv on X does not; a
    prefix pattern grants the wills of its addresses; '*' covers them."""
    identity = backends.Identity("carol", ["send_t%2Fa", "recv_m", "send_orders%2F%2A", "send_%2A", "recv_%2A"])
    assert authz.with_wills(identity.address_authz) == {
        "t/a": ["send"], "$will/t/a": ["send"], "m": ["recv"], "orders/*": ["send"], "$will/orders/*": ["send"],
        "*": ["recv", "send"]}
    assert authz.with_wills({"m": ["recv"]}) == {"m": ["recv"]}
    props, unused = server.open_properties(backends.Identity("dave", ["send_q", "recv_q"]), ["ADDRESS-AUTHZ"])
    assert dict((k, list(v)) for k, v in props["address-authz"].items()) == {
        "q": ["recv", "send"], "$will/q": ["send"]}


def test_a_partial_star_never_reaches_the_routers_own_addresses():
    """qdrouterd gives _topo/, _local/ and _edge/ names no tenant prefix:
    _topo/0/<router>/$management is its management agent. A user granted
    send on '*' (and not every address) must not get a pattern that covers
    them; every name a standard space may declare stays covered."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import names
    granted = authz.router_authz({"*": ["send"], "q": ["recv"], "_topo/0/r1/$management": ["send"]})
    covers = [p for p in granted if "send" in granted[p]]

    def allowed(address):
        return any(address.startswith(p[:-1]) if p.endswith("*") else address == p for p in covers)
    for internal in ("_topo/0/r1/$management", "_local/$management", "_edge/x", "_topo/0/r1/temp.x"):
        assert not allowed(internal), internal
    for declared in ("q", "orders/eu", "$will/q", "space-a/q", "9lives", "~tilde", "Zeta"):
        assert names.router_policy_name_errors(declared) == [] or declared.startswith("$will")
        assert allowed(declared), declared
    # every ASCII first character a standard address may have is covered, and no other (a name starting
    # with a non-ASCII character is not: docs/identity.md)
    firsts = [chr(i) for i in range(0, 128) if not names.router_policy_name_errors(chr(i) + "x")]
    assert sorted(firsts) == sorted(authz.STAR_FIRST)


@pytest.mark.parametrize("pattern, words", [
    ("a,_local/$management", ["','"]), ("q/${user}", ["${user}"]), ("x:/_local/$management", ["':/'"]),
    ("/_local/x", ["'/'"]), ("_topo/*", ["'_'"]),
])
def test_patterns_that_name_the_routers_own_addresses_are_refused_and_never_sent(pattern, words):
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import users
    errs = users.pattern_errors(pattern, "authorization[0].addresses[0]")
    assert errs and all(w in errs[0] for w in words + ["authorization[0].addresses[0]"]), errs
    assert pattern not in authz.router_authz({pattern: ["send"], "q": ["recv"]})  # a users file written by hand


def test_server_sends_no_address_authz_unless_desired(srv):
    sock = client(srv.port)
    assert sasl(sock, "PLAIN", b"alice\0alice\0pw", "space-a") == codec.SASL_OK
    sock.sendall(codec.AMQP_HEADER + codec.open_frame("c"))
    recv_exact(sock, 8)
    unused, (code, fields) = recv_frame(sock)
    o = codec.as_dict(code, fields)
    assert "address-authz" not in o["properties"] and o["offered_capabilities"] is None


@pytest.mark.parametrize("mechanism, response, hostname, outcome, calls", [
    ("PLAIN", b"\0alice\0wrong", "space-a", codec.SASL_AUTH, [("space-a", "alice")]),
    ("PLAIN", b"\0alice\0pw", "space-b", codec.SASL_AUTH, [("space-b", "alice")]),
    ("PLAIN", b"\0alice\0pw", None, codec.SASL_AUTH, []),            # no realm, no default
    ("ANONYMOUS", b"anonymous", "space-a", codec.SASL_AUTH, []),
    ("PLAIN", b"alice\0pw", "space-a", codec.SASL_AUTH, []),         # malformed
    ("PLAIN", b"bob\0alice\0pw", "space-a", codec.SASL_AUTH, []),    # proxy authzid
    ("PLAIN", b"\0alice\0pw", "broken", codec.SASL_SYS_TEMP, [("broken", "alice")]),
])
def test_server_refusals(srv, mechanism, response, hostname, outcome, calls):
    sock = client(srv.port)
    assert sasl(sock, mechanism, response, hostname) == outcome
    assert sock.recv(1) == b""
    assert srv.backend.calls == calls


def test_server_default_realm_and_plain_without_initial_response():
    s = Loop(default_realm="space-a")
    try:
        sock = client(s.port)
        sock.sendall(codec.SASL_HEADER)
        recv_exact(sock, 8)
        recv_frame(sock)
        sock.sendall(codec.sasl_init("PLAIN"))
        unused, (code, fields) = recv_frame(sock)
        assert code == codec.SASL_CHALLENGE
        sock.sendall(codec.frame(codec.FRAME_SASL, codec.performative(codec.SASL_RESPONSE, [b"\0alice\0pw"])))
        unused, (code, fields) = recv_frame(sock)
        assert code == codec.SASL_OUTCOME and fields[0] == codec.SASL_OK
        assert s.backend.calls == [("space-a", "alice")]
    finally:
        s.close()


def test_server_answers_a_plain_amqp_header_with_the_sasl_header(srv):
    sock = client(srv.port)
    sock.sendall(codec.AMQP_HEADER)
    assert recv_exact(sock, 8) == codec.SASL_HEADER
    assert sock.recv(1) == b""


def test_server_closes_on_unexpected_performatives(srv):
    sock = client(srv.port)
    assert sasl(sock, "PLAIN", b"\0alice\0pw", "space-a") == codec.SASL_OK
    sock.sendall(codec.AMQP_HEADER + codec.open_frame("c"))
    recv_exact(sock, 8)
    recv_frame(sock)
    begin = codec.frame(codec.FRAME_AMQP, codec.performative(0x11, [None, UInt(0), UInt(10), UInt(10)]))
    sock.sendall(begin)
    unused, (code, fields) = recv_frame(sock)
    assert code == codec.CLOSE and fields[0].value[0] == "amqp:not-implemented"


def test_load_config_names_bad_keys(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"listen_port": 70000}))
    with pytest.raises(ValueError, match="listen_port: 70000 must be at most 65535"):
        server.load_config(str(path))
    path.write_text(json.dumps({"listen_prot": 1}))
    with pytest.raises(ValueError, match="unknown keys listen_prot"):
        server.load_config(str(path))
    path.write_text(json.dumps({"tls_cert": "/x"}))
    with pytest.raises(ValueError, match="tls_cert and tls_key go together"):
        server.load_config(str(path))
    path.write_text(json.dumps({"users_dir": "/u", "listen_port": 1}))
    config = server.load_config(str(path), {"listen_port": 2, "log_level": None})
    assert (config["users_dir"], config["listen_port"], config["log_level"]) == ("/u", 2, "INFO")


def test_hash_password_cli(capsys, monkeypatch):
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret\n"))
    assert server.main(["--hash-password", "--iterations", "1000"]) == 0
    out = capsys.readouterr().out.strip()
    assert backends.verify_password("s3cret", out) and "s3cret" not in out
