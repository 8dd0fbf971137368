"""The auth service's Keycloak backend (plugins/module_utils/auth/keycloak_backend.py):
the token -> Identity mapping, the outcome of each token endpoint answer, and
the cache rules (bounded lifetime, never the password, never a wrong password,
answering while Keycloak is down). The token endpoint here is a local HTTP
server answering like Keycloak's (the real one is in
tests/integration/test_auth_keycloak_router.py)."""

import base64
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends, keycloak_backend, server

pytestmark = pytest.mark.unit


def jwt(claims):
    def b64(doc):
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")
    return "%s.%s.sig" % (b64({"alg": "RS256"}), b64(claims))


class TokenEndpoint(object):
    """Users per realm: {realm: {user: (password, groups, enabled)}}; ``status``
    forces an answer (e.g. 503); ``requests`` counts the grants."""

    def __init__(self):
        self.users = {}
        self.status = None
        self.requests = 0
        self.bodies = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                endpoint.requests += 1
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                endpoint.bodies.append(form)
                parts = self.path.split("/")
                code, doc = endpoint.answer(urllib.parse.unquote(parts[2]), form)
                raw = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, realm, form):
        if self.status:
            return self.status, {"error": "unknown_error"}
        if realm not in self.users:
            return 404, {"error": "Realm does not exist"}
        if form.get("client_id") != keycloak_backend.CLIENT_ID or form.get("grant_type") != "password":
            return 401, {"error": "invalid_client", "error_description": "Invalid client or Invalid client credentials"}
        user = self.users[realm].get(form["username"])
        if user is None or user[0] != form["password"]:
            return 401, {"error": "invalid_grant", "error_description": "Invalid user credentials"}
        if not user[2]:
            return 400, {"error": "invalid_grant", "error_description": "Account disabled"}
        return 200, {"access_token": jwt({"preferred_username": form["username"].lower(), "groups": user[1]}),
                     "token_type": "Bearer"}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def kc():
    endpoint = TokenEndpoint()
    endpoint.users["space-a"] = {"alice": ("pw-a", ["send_orders%2F%2A", "recv_orders%2F%2A", "monitor"], True),
                                 "bob": ("pw-b", [], True)}
    endpoint.users["space-b"] = {}
    yield endpoint
    endpoint.close()


@pytest.fixture
def clock():
    return Clock()


def backend(kc, clock, **kw):
    return keycloak_backend.KeycloakBackend(kc.url, clock=clock, **kw)


def test_claims_map_to_the_identity_with_the_one_authz_rule():
    claims = {"preferred_username": "alice", "groups": ["send_orders%2F%2A", "recv_x", "manage", 7]}
    identity = keycloak_backend.identity_from_claims(claims, "Alice")
    assert identity == backends.Identity("alice", ["send_orders%2F%2A", "recv_x", "manage"])
    assert identity.address_authz == backends.groups_to_address_authz(identity.groups) \
        == {"orders/*": ["send"], "x": ["recv"]}
    # no groups claim (a realm without the groups mapper): nothing granted
    assert keycloak_backend.identity_from_claims({}, "bob") == backends.Identity("bob", [])
    assert keycloak_backend.identity_from_claims({}, "bob").address_authz == {}


@pytest.mark.parametrize("token", [None, "a.b", "x.%s.y" % base64.urlsafe_b64encode(b"[1]").decode(), "a.!!.c"])
def test_a_token_that_is_no_jwt_is_refused(token):
    with pytest.raises(ValueError):
        keycloak_backend.token_claims(token)


def test_password_grant_outcomes(kc, clock):
    b = backend(kc, clock)
    alice = b.check("space-a", "alice", "pw-a")
    assert alice.username == "alice" and alice.address_authz == {"orders/*": ["recv", "send"]}
    assert kc.bodies[-1] == {"grant_type": "password", "client_id": "enmasse-messaging",
                             "username": "alice", "password": "pw-a"}
    assert b.check("space-a", "alice", "wrong") is None          # invalid_grant 401
    assert b.check("space-a", "nobody", "pw-a") is None          # unknown user
    assert b.check("space-b", "alice", "pw-a") is None           # a user of A at B
    assert b.check("no-such-space", "alice", "pw-a") is None     # 404
    kc.users["space-a"]["bob"] = ("pw-b", [], False)
    assert b.check("space-a", "bob", "pw-b") is None             # disabled: 400 invalid_grant
    before = kc.requests
    assert b.check("../x", "alice", "pw-a") is None              # not a realm: Keycloak is not asked
    assert b.check("space-a", "alice", "") is None
    assert b.check("master", "admin", "pw-a") is None            # Keycloak's admin realm is no space
    assert kc.requests == before


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_are_backend_errors(kc, clock, status):
    kc.status = status
    with pytest.raises(backends.BackendError, match="HTTP %d" % status):
        backend(kc, clock).check("space-a", "alice", "pw-a")


def test_a_realm_without_the_client_is_a_backend_error(kc, clock):
    with pytest.raises(backends.BackendError, match="invalid_client"):
        backend(kc, clock, client_id="other").check("space-a", "alice", "pw-a")


def test_a_broken_http_answer_is_a_backend_error(clock):
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer():
        conn = listener.accept()[0]
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"acc")   # cut short
        conn.close()
    threading.Thread(target=answer, daemon=True).start()
    b = keycloak_backend.KeycloakBackend("http://127.0.0.1:%d" % listener.getsockname()[1], clock=clock)
    try:
        with pytest.raises(backends.BackendError, match="unreachable"):
            b.check("space-a", "alice", "pw-a")
    finally:
        listener.close()


def test_unreachable_keycloak_is_a_backend_error(kc, clock):
    url = kc.url
    kc.close()
    b = keycloak_backend.KeycloakBackend(url, clock=clock, timeout=2)
    with pytest.raises(backends.BackendError, match="unreachable") as err:
        b.check("space-a", "alice", "pw-a")
    assert "pw-a" not in str(err.value)


def test_the_cache_answers_within_its_lifetime_then_asks_again(kc, clock):
    b = backend(kc, clock, cache_ttl=30)
    assert b.check("space-a", "alice", "pw-a") is not None
    assert kc.requests == 1
    clock.now += 29
    assert b.check("space-a", "alice", "pw-a") is not None
    assert kc.requests == 1                                    # from the cache
    # disabled in Keycloak: refused once the entry expired (the documented bound)
    kc.users["space-a"]["alice"] = ("pw-a", [], False)
    clock.now += 1.5
    assert b.check("space-a", "alice", "pw-a") is None
    assert kc.requests == 2


def test_a_wrong_password_is_never_answered_from_the_cache(kc, clock):
    b = backend(kc, clock)
    assert b.check("space-a", "alice", "pw-a") is not None
    assert b.check("space-a", "alice", "pw-A") is None
    assert b.check("space-a", "alice", "pw-a ") is None
    assert kc.requests == 3
    # nor for another realm or user
    assert b.check("space-b", "alice", "pw-a") is None
    assert kc.requests == 4


def test_a_changed_password_takes_over(kc, clock):
    b = backend(kc, clock)
    assert b.check("space-a", "alice", "pw-a") is not None
    kc.users["space-a"]["alice"] = ("pw-new", ["send_x"], True)
    identity = b.check("space-a", "alice", "pw-new")
    assert identity.address_authz == {"x": ["send"]}
    clock.now += 31
    assert b.check("space-a", "alice", "pw-a") is None
    assert b.check("space-a", "alice", "pw-new") is not None


def test_the_cache_holds_no_password(kc, clock):
    b = backend(kc, clock)
    b.check("space-a", "alice", "pw-a")
    entry = b.cache._entries[("space-a", "alice")]
    held = repr([getattr(entry, s) for s in entry.__slots__]).encode() + entry.digest + entry.salt
    assert b"pw-a" not in held
    # salted: the same password gets another digest in another entry
    b.cache.put("space-a", "carol", "pw-a", entry.identity)
    assert b.cache._entries[("space-a", "carol")].digest != entry.digest


def test_while_keycloak_is_down_only_a_live_entry_answers(kc, clock):
    b = backend(kc, clock)
    assert b.check("space-a", "alice", "pw-a") is not None
    kc.status = 503
    assert b.check("space-a", "alice", "pw-a") is not None      # cached
    with pytest.raises(backends.BackendError):
        b.check("space-a", "bob", "pw-b")                       # not cached
    with pytest.raises(backends.BackendError):
        b.check("space-a", "alice", "wrong")                    # not the cached password: Keycloak must say
    clock.now += 31
    with pytest.raises(backends.BackendError):
        b.check("space-a", "alice", "pw-a")                     # expired
    kc.status = None                                            # back: answers again, nothing to restart
    assert b.check("space-a", "alice", "pw-a") is not None


def test_cache_off_and_bounded_size(kc, clock):
    b = backend(kc, clock, cache_ttl=0)
    b.check("space-a", "alice", "pw-a")
    b.check("space-a", "alice", "pw-a")
    assert kc.requests == 2 and len(b.cache) == 0
    cache = keycloak_backend.CheckCache(ttl=30, size=2, clock=clock)
    for name in ("u1", "u2", "u3"):
        cache.put("r", name, "p", backends.Identity(name))
        clock.now += 1
    assert len(cache) == 2 and cache.get("r", "u1", "p") is None and cache.get("r", "u3", "p") is not None


@pytest.mark.parametrize("url, ca, message", [
    ("", "", "keycloak_url"), ("ftp://kc", "", "keycloak_url"), ("http://", "", "keycloak_url"),
    ("https://u:p@kc", "", "credentials"), ("http://kc:8080", "/ca.pem", "keycloak_ca"),
])
def test_bad_urls_are_refused_naming_the_field(url, ca, message):
    with pytest.raises(ValueError, match=message):
        keycloak_backend.KeycloakBackend(url, ca_file=ca)


def openssl(cwd, *args):
    import subprocess
    subprocess.run(["openssl"] + list(args), cwd=str(cwd), check=True, capture_output=True, timeout=120)


def make_ca(d, name, san):
    """A CA ``<name>-ca.crt`` and a server certificate ``<name>.crt`` for ``san``."""
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + "-ca.key", "-out", name + "-ca.crt",
            "-subj", "/CN=%s-ca" % name, "-days", "2")
    (d / (name + ".ext")).write_text("subjectAltName=%s\nextendedKeyUsage=serverAuth\n" % san)
    openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/CN=%s" % name)
    openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", name + "-ca.crt", "-CAkey", name + "-ca.key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext")
    return str(d / (name + "-ca.crt")), str(d / (name + ".crt")), str(d / (name + ".key"))


def test_https_keycloak_is_verified_against_the_ca_file(tmp_path, kc, clock):
    import shutil
    import ssl
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make the test certificates")
    with pytest.raises((OSError, ValueError)):
        keycloak_backend.KeycloakBackend("https://kc.example:8443", ca_file=str(tmp_path / "missing.pem"))
    good_ca, cert, key = make_ca(tmp_path, "kc", "IP:127.0.0.1")
    other_ca = make_ca(tmp_path, "other", "IP:127.0.0.1")[0]
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    kc.httpd.socket = context.wrap_socket(kc.httpd.socket, server_side=True)
    https = kc.url.replace("http://", "https://")
    ok = keycloak_backend.KeycloakBackend(https, ca_file=good_ca, clock=clock)
    assert ok.check("space-a", "alice", "pw-a").username == "alice"
    for wrong in (keycloak_backend.KeycloakBackend(https, ca_file=other_ca, clock=clock),   # another CA
                  keycloak_backend.KeycloakBackend(https.replace("127.0.0.1", "localhost"), ca_file=good_ca,
                                                   clock=clock)):                          # another name
        with pytest.raises(backends.BackendError, match="unreachable.*CERTIFICATE_VERIFY_FAILED"):
            wrong.check("space-a", "alice", "pw-a")


def test_service_config_selects_the_backend(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"backend": "keycloak", "keycloak_url": "http://127.0.0.1:1", "cache_ttl": 10}))
    config = server.load_config(str(cfg))
    wrapped = server.make_backend(config)
    # the MQTT gateways' service realms (<space>.mqtt) from the users files, the spaces' from Keycloak
    assert isinstance(wrapped, backends.ServiceRealms) and isinstance(wrapped.files, backends.UsersFileBackend)
    made = wrapped.main
    assert isinstance(made, keycloak_backend.KeycloakBackend) and made.cache.ttl == 10
    assert made.client_id == "enmasse-messaging" and made.timeout == 5
    # a reload with the same Keycloak keeps who logged in
    assert server.make_backend(config, wrapped).main.cache is made.cache
    assert isinstance(server.make_backend(server.load_config(None)), backends.UsersFileBackend)
    for bad, message in (({"backend": "ldap"}, "backend: 'ldap'"),
                         ({"backend": "keycloak"}, "keycloak_url"),
                         ({"cache_ttl": -1}, "cache_ttl"),
                         ({"keycloak_timeout": True}, "keycloak_timeout"),
                         ({"backend": "keycloak", "keycloak_url": "http://kc", "keycloak_client_id": ""},
                          "keycloak_client_id")):
        cfg.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=message):
            server.load_config(str(cfg))


def test_checks_from_many_threads_get_their_own_answers(kc, clock):
    """The service runs checks in worker threads: right and wrong passwords of
    several users at once, each gets its own answer, the cache stays consistent."""
    import concurrent.futures
    for i in range(4):
        kc.users["space-a"]["u%d" % i] = ("pw-%d" % i, ["send_q%d" % i], True)
    b = backend(kc, clock)
    jobs = [("u%d" % (n % 4), "pw-%d" % (n % 4) if n % 3 else "bad") for n in range(60)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda job: b.check("space-a", *job), jobs))
    for (user, password), identity in zip(jobs, got):
        if password == "bad":
            assert identity is None
        else:
            assert identity.username == user and identity.address_authz == {"q" + user[1:]: ["send"]}
    assert len(b.cache) == 4


def test_authenticate_says_why_for_the_metrics(kc, clock):
    b = backend(kc, clock)
    assert b.authenticate("space-a", "alice", "pw-a")[1] == backends.OK
    assert b.authenticate("space-a", "alice", "pw-a")[1] == backends.OK                       # from the cache
    # Keycloak answers invalid_grant for both: not told apart
    assert b.authenticate("space-a", "alice", "wrong") == (None, backends.BAD_CREDENTIALS)
    assert b.authenticate("space-a", "nobody", "pw-a") == (None, backends.BAD_CREDENTIALS)
    assert b.authenticate("no-such-space", "alice", "pw-a") == (None, backends.UNKNOWN_REALM)  # 404
    assert b.authenticate("master", "admin", "pw-a") == (None, backends.UNKNOWN_REALM)
    assert b.authenticate("space-a", "alice", "") == (None, backends.BAD_CREDENTIALS)


def test_service_realms_are_users_files_whatever_the_spaces_backend(tmp_path, kc, clock):
    """With Keycloak, ``<space>.mqtt`` (the MQTT gateways' service realm) is
    read from its users file; every other realm, a space's, from Keycloak."""
    users = tmp_path / "users"
    users.mkdir()
    doc = backends.users_file_document("space-a.mqtt", {"mqtt-gateway": {
        "password": backends.hash_password("svc-pw", iterations=1000), "groups": ["recv_%24mqtt%2Fspace-a%2F%2A"]}})
    (users / "space-a.mqtt.json").write_text(json.dumps(doc))
    both = backends.ServiceRealms(keycloak_backend.KeycloakBackend(kc.url, clock=clock),
                                  backends.UsersFileBackend(str(users)))
    assert both.check("space-a.mqtt", "mqtt-gateway", "svc-pw").username == "mqtt-gateway"
    assert backends.authenticate(both, "space-a.mqtt", "alice", "pw-a") == (None, backends.UNKNOWN_USER)
    assert both.check("space-a", "alice", "pw-a").username == "alice"
    assert both.check("space-a", "mqtt-gateway", "svc-pw") is None
    both.forget()
