"""A fake Keycloak admin API at the HTTP layer: it answers the urllib
requests KeycloakClient makes (``_open`` is replaced), keeps realms, clients,
users, groups and memberships in memory and records every request, so the
service is tested through the real client (URLs, encoding, Location, token)."""
import itertools
import json
import threading
from urllib.parse import parse_qs, unquote, urlsplit

from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.client import KeycloakClient

PROFILE = {"attributes": [
    {"name": "username", "validations": {"length": {"min": 3, "max": 255}}},
    {"name": "email", "required": {"roles": ["user"]}},
    {"name": "firstName", "required": {"roles": ["user"]}},
    {"name": "lastName", "required": {"roles": ["user"]}}]}


class FakeKeycloak(object):
    def __init__(self):
        self.realms = {}
        self.requests = []
        self.ids = itertools.count(1)
        self.token_expired = False
        self.down = False
        self.refuse_users = set()  # POST users of these names answers 500
        self.count_behind = 0      # users/count answers this many less (users made since)
        # the client sends from several threads (users.apply's workers): one
        # request at a time here, as a real server's store is consistent
        self.lock = threading.Lock()

    def client(self):
        client = KeycloakClient("http://kc.test", "admin", "adminpw")
        client._open = self.open
        return client

    def writes(self):
        return [r for r in self.requests if r[0] != "GET" and "/token" not in r[1]]

    def new_id(self):
        return "id-%d" % next(self.ids)

    # ------------------------------------------------------------ HTTP
    def open(self, req):
        if self.down:
            from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.client import KeycloakError
            raise KeycloakError("cannot reach Keycloak at http://kc.test: [Errno 111] Connection refused")
        url = urlsplit(req.full_url)
        method = req.get_method()
        body = json.loads(req.data.decode()) if req.data and not url.path.endswith("/token") else None
        self.requests.append((method, url.path, body))
        if url.path.endswith("/protocol/openid-connect/token"):
            form = parse_qs(req.data.decode())
            if form["password"] != ["adminpw"]:
                return 401, {}, b'{"error":"invalid_grant"}'
            self.token_expired = False
            return 200, {}, b'{"access_token":"tok"}'
        if self.token_expired:
            return 401, {}, b""
        parts = [unquote(p) for p in url.path.split("/")[3:]]  # after /admin/realms
        query = dict((k, v[0]) for k, v in parse_qs(url.query).items())
        with self.lock:
            status, answer, location = self.route(method, parts, query, body)
        headers = {"Location": "http://kc.test/x/" + location} if location else {}
        return status, headers, json.dumps(answer).encode() if answer is not None else b""

    def route(self, method, parts, query, body):
        if not parts:
            self.realms[body["realm"]] = {"rep": dict(body), "clients": {}, "users": {}, "groups": {},
                                          "members": {}, "profile": json.loads(json.dumps(PROFILE))}
            return 201, None, body["realm"]
        realm = self.realms.get(parts[0])
        if realm is None:
            return 404, {"error": "Realm not found."}, None
        rest = parts[1:]
        if not rest:
            if method == "DELETE":
                del self.realms[parts[0]]
            elif method == "PUT":
                realm["rep"].update(body)
            return 200, realm["rep"] if method == "GET" else None, None
        handler = getattr(self, "_" + rest[0].replace("-", "_"))
        return handler(realm, method, rest[1:], query, body)

    def _clients(self, realm, method, rest, query, body):
        if method == "GET" and not rest:
            return 200, [c for c in realm["clients"].values() if c["clientId"] == query.get("clientId")], None
        if method == "POST" and not rest:
            cid = self.new_id()
            mappers = [dict(m, id=self.new_id()) for m in body.pop("protocolMappers", [])]
            realm["clients"][cid] = dict(body, id=cid, protocolMappers=mappers)
            return 201, None, cid
        client = realm["clients"][rest[0]]
        if len(rest) == 1:
            client.update(body)
            return 204, None, None
        if method == "POST":
            client["protocolMappers"].append(dict(body, id=self.new_id()))
            return 201, None, "m"
        client["protocolMappers"] = [body if m["id"] == rest[-1] else m for m in client["protocolMappers"]]
        return 204, None, None

    def _users(self, realm, method, rest, query, body):
        if rest == ["profile"]:
            if method == "PUT":
                realm["profile"] = body
            return 200, realm["profile"] if method == "GET" else None, None
        if rest == ["count"]:
            return 200, len(realm["users"]) - self.count_behind, None
        if not rest and method == "GET":
            users = sorted(realm["users"].values(), key=lambda u: u["username"])
            first, most = int(query.get("first", 0)), int(query.get("max", 100))
            return 200, [dict((k, v) for k, v in u.items() if k != "credentials") for u in users[first:first + most]], None
        if not rest and method == "POST":
            if body["username"] in self.refuse_users:
                return 500, {"errorMessage": "unknown_error"}, None
            if any(u["username"] == body["username"] for u in realm["users"].values()):
                return 409, {"errorMessage": "User exists with same username"}, None
            # groups by path, as Keycloak 26 takes them on create: every one must
            # exist, else HTTP 500 and no user (checked against the real one)
            by_path = dict(("/" + g["name"], gid) for gid, g in realm["groups"].items())
            paths = body.get("groups") or []
            if any(p not in by_path for p in paths):
                return 500, {"error": "unknown_error"}, None
            uid = self.new_id()
            realm["users"][uid] = dict(((k, v) for k, v in body.items() if k != "groups"), id=uid)
            for p in paths:
                realm["members"].setdefault(by_path[p], set()).add(uid)
            return 201, None, uid
        user = realm["users"].get(rest[0])
        if user is None:
            return 404, {"error": "User not found"}, None
        if len(rest) == 1:
            if method == "DELETE":
                del realm["users"][rest[0]]
                for members in realm["members"].values():
                    members.discard(rest[0])
            else:
                user.update(body)
            return 204, None, None
        if rest[1] == "reset-password":
            user["credentials"] = [body]
            return 204, None, None
        members = realm["members"].setdefault(rest[2], set())
        (members.add if method == "PUT" else members.discard)(rest[0])
        return 204, None, None

    def _groups(self, realm, method, rest, query, body):
        if not rest and method == "POST":
            gid = self.new_id()
            realm["groups"][gid] = {"id": gid, "name": body["name"]}
            return 201, None, gid
        if not rest:
            groups = sorted(realm["groups"].values(), key=lambda g: g["name"])
            first, most = int(query.get("first", 0)), int(query.get("max", 100))
            return 200, groups[first:first + most], None
        ids = sorted(realm["members"].get(rest[0], set()))
        first, most = int(query.get("first", 0)), int(query.get("max", 100))
        return 200, [{"id": i, "username": realm["users"][i]["username"]} for i in ids[first:first + most]], None

    # ------------------------------------------------------------ views for tests
    def user(self, realm, username):
        for user in self.realms[realm]["users"].values():
            if user["username"] == username:
                return user
        return None

    def groups_of(self, realm, username):
        r = self.realms[realm]
        uid = self.user(realm, username)["id"]
        return sorted(r["groups"][g]["name"] for g, members in r["members"].items() if uid in members)

    def password_of(self, realm, username):
        return self.user(realm, username)["credentials"][0]["value"]
