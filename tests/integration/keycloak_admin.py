"""A small Keycloak admin REST client for the tests (stdlib urllib only).

It sets realms, users and groups up the way tests/../IDENTITY-CONTRACT.md
describes (what ``address_space`` and ``messaging_user`` will do), so the
auth service's tests do not depend on those modules:

* ``create_space_realm(space)``: realm ``<space>`` with attribute
  ``enmasse.messaging.owned = "true"``, the public client ``enmasse-messaging``
  (direct access grants only) with the ``groups`` protocol mapper, and a user
  profile in which firstName, lastName and email are not required (else a
  direct grant fails with "Account is not fully set up");
* ``create_user(space, username, password, groups)``: an owned, enabled user
  with a non-temporary password, member of ``groups`` (made on demand; use
  backends.authorization_to_groups for EnMasse's encoding);
* ``set_enabled``, ``set_password``, ``delete_user``, ``delete_realm``;
* ``password_grant(space, username, password)``: (status, JSON body) of the
  token endpoint, what the auth service does.
"""

import json
import time
import urllib.error
import urllib.parse
import urllib.request

CLIENT_ID = "enmasse-messaging"
OWNED = "enmasse.messaging.owned"

GROUPS_MAPPER = {
    "name": "groups", "protocol": "openid-connect", "protocolMapper": "oidc-group-membership-mapper",
    "config": {"claim.name": "groups", "full.path": "false", "access.token.claim": "true",
               "id.token.claim": "false", "userinfo.token.claim": "false"},
}


class AdminError(Exception):
    def __init__(self, method, path, status, body):
        Exception.__init__(self, "%s %s -> %s %s" % (method, path, status, body[:300]))
        self.status = status


class KeycloakAdmin(object):
    def __init__(self, url, admin_user, admin_password, timeout=30):
        self.url = url.rstrip("/")
        self.admin_user = admin_user
        self.admin_password = admin_password
        self.timeout = timeout
        self._token = None
        self._token_expires = 0

    @classmethod
    def of(cls, server):
        return cls(server.url, server.admin_user, server.admin_password)

    # ------------------------------------------------------------ plumbing
    def _post_form(self, path, form):
        data = urllib.parse.urlencode(form).encode()
        req = urllib.request.Request(self.url + path, data=data, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, json.loads(resp.read().decode() or "{}")
        except urllib.error.HTTPError as e:
            body = e.read().decode("utf-8", "replace")
            try:
                return e.code, json.loads(body)
            except ValueError:
                return e.code, {"raw": body}

    def token(self):
        if self._token is None or time.monotonic() > self._token_expires:
            status, body = self._post_form("/realms/master/protocol/openid-connect/token", {
                "grant_type": "password", "client_id": "admin-cli",
                "username": self.admin_user, "password": self.admin_password})
            if status != 200:
                raise AdminError("POST", "master token", status, body.get("error", "") + " (admin login)")
            self._token = body["access_token"]
            self._token_expires = time.monotonic() + max(5, int(body.get("expires_in", 60)) - 10)
        return self._token

    def request(self, method, path, body=None):
        """(status, parsed JSON or None, Location header) of an admin API call;
        AdminError on 4xx/5xx."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + "/admin/realms" + path, data=data, method=method,
                                     headers={"Authorization": "Bearer " + self.token(),
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read().decode()
                return resp.status, (json.loads(raw) if raw else None), resp.headers.get("Location")
        except urllib.error.HTTPError as e:
            raise AdminError(method, path, e.code, e.read().decode("utf-8", "replace"))

    @staticmethod
    def _q(name):
        return urllib.parse.quote(name, safe="")

    # ------------------------------------------------------------ realms
    def realm_exists(self, space):
        try:
            self.request("GET", "/" + self._q(space))
            return True
        except AdminError as e:
            if e.status == 404:
                return False
            raise

    def create_space_realm(self, space):
        """The realm of a space as the contract has it (idempotent: replaces one that exists)."""
        if self.realm_exists(space):
            self.delete_realm(space)
        self.request("POST", "", {"realm": space, "enabled": True, "attributes": {OWNED: "true"}})
        q = "/" + self._q(space)
        self.request("POST", q + "/clients", {
            "clientId": CLIENT_ID, "publicClient": True, "directAccessGrantsEnabled": True,
            "standardFlowEnabled": False, "implicitFlowEnabled": False, "serviceAccountsEnabled": False,
            "protocol": "openid-connect", "protocolMappers": [GROUPS_MAPPER]})
        _, profile, _ = self.request("GET", q + "/users/profile")
        for attr in profile.get("attributes", []):
            if attr.get("name") in ("firstName", "lastName", "email"):
                attr.pop("required", None)
        self.request("PUT", q + "/users/profile", profile)

    def delete_realm(self, space):
        self.request("DELETE", "/" + self._q(space))

    # ------------------------------------------------------------ groups and users
    def group_id(self, space, name):
        """Id of group ``name`` in the realm, made when missing."""
        q = "/" + self._q(space)
        _, found, _ = self.request("GET", q + "/groups?exact=true&briefRepresentation=true&search="
                                   + self._q(name))
        for group in found or []:
            if group["name"] == name:
                return group["id"]
        _, _, location = self.request("POST", q + "/groups", {"name": name})
        return location.rstrip("/").rsplit("/", 1)[1]

    def user_id(self, space, username):
        _, found, _ = self.request("GET", "/%s/users?exact=true&username=%s" % (self._q(space), self._q(username)))
        return found[0]["id"] if found else None

    def create_user(self, space, username, password, groups=(), enabled=True):
        q = "/" + self._q(space)
        _, _, location = self.request("POST", q + "/users", {
            "username": username, "enabled": enabled, "attributes": {OWNED: ["true"]},
            "credentials": [{"type": "password", "value": password, "temporary": False}]})
        uid = location.rstrip("/").rsplit("/", 1)[1]
        for name in groups:
            self.request("PUT", "%s/users/%s/groups/%s" % (q, uid, self.group_id(space, name)))
        return uid

    def set_enabled(self, space, username, enabled):
        uid = self.user_id(space, username)
        self.request("PUT", "/%s/users/%s" % (self._q(space), uid), {"enabled": enabled})

    def set_password(self, space, username, password):
        uid = self.user_id(space, username)
        self.request("PUT", "/%s/users/%s/reset-password" % (self._q(space), uid),
                     {"type": "password", "value": password, "temporary": False})

    def delete_user(self, space, username):
        uid = self.user_id(space, username)
        if uid:
            self.request("DELETE", "/%s/users/%s" % (self._q(space), uid))

    # ------------------------------------------------------------ what the auth service does
    def password_grant(self, space, username, password):
        return self._post_form("/realms/%s/protocol/openid-connect/token" % self._q(space), {
            "grant_type": "password", "client_id": CLIENT_ID, "username": username, "password": password,
            "scope": "openid"})
