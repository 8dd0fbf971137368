# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The realm of an address space, as the identity contract has it
(docs/identity.md): realm ``<space>`` marked owned, the public client
``enmasse-messaging`` (direct grants only) with the ``groups`` mapper, and a
user profile that requires no e-mail or names (a direct grant would fail
with "Account is not fully set up") and keeps the collection's user
attributes for admins (``unmanagedAttributePolicy: ADMIN_EDIT``), and the
realm's password policy (``passwordPolicy``, by default PASSWORD_POLICY:
how Keycloak hashes the users' passwords; docs/identity.md says why not
Keycloak's own default).

``ensure_realm`` reads each part, compares it with the desired one and
changes only what differs; ``remove_realm`` deletes an owned realm only.
Both honour check mode and return what changed (names, no secrets)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.client import path

OWNED_ATTRIBUTE = "enmasse.messaging.owned"
CLIENT_ID = "enmasse-messaging"
MAPPER_NAME = "groups"
CLIENT = {"clientId": CLIENT_ID, "enabled": True, "publicClient": True, "protocol": "openid-connect",
          "directAccessGrantsEnabled": True, "standardFlowEnabled": False, "implicitFlowEnabled": False,
          "serviceAccountsEnabled": False}
MAPPER = {"name": MAPPER_NAME, "protocol": "openid-connect", "protocolMapper": "oidc-group-membership-mapper",
          "config": {"claim.name": "groups", "full.path": "false", "access.token.claim": "true",
                     "id.token.claim": "false", "userinfo.token.claim": "false"}}
# user profile attributes a messaging user has no value for
NOT_REQUIRED = ("email", "firstName", "lastName")
UNMANAGED_POLICY = "ADMIN_EDIT"
# EnMasse allows one-character user names; Keycloak's default profile wants 3
USERNAME_MIN = 1
# Keycloak 26's default (no policy) is argon2id, 5 iterations, 7 MiB: about
# 85 ms of CPU per password set or login checked on the benchmark host;
# PBKDF2-SHA256 with 10,000 iterations about 12 ms (docs/identity.md, the
# trade-off; docs/benchmarks.md, the numbers). "" leaves Keycloak's default.
PASSWORD_POLICY = "hashAlgorithm(pbkdf2-sha256) and hashIterations(10000)"


def read_realm(client, space):
    """The realm representation, None when there is none."""
    return client.request("GET", path(space), missing_ok=True)


def is_owned(realm):
    return bool(realm) and (realm.get("attributes") or {}).get(OWNED_ATTRIBUTE) == "true"


def desired_profile(profile):
    """The realm's user profile with the contract's changes (pure)."""
    out = copy.deepcopy(profile or {})
    out["unmanagedAttributePolicy"] = UNMANAGED_POLICY
    for attribute in out.get("attributes") or []:
        if attribute.get("name") in NOT_REQUIRED:
            attribute.pop("required", None)
        if attribute.get("name") == "username":
            length = attribute.setdefault("validations", {}).setdefault("length", {})
            length["min"] = USERNAME_MIN
    return out


def _client_changes(live):
    """The fields of the live client that differ from CLIENT."""
    return sorted(k for k, v in CLIENT.items() if (live or {}).get(k) != v)


def _mapper_differs(live):
    if live is None:
        return True
    return any(live.get(k) != MAPPER[k] for k in ("protocol", "protocolMapper")) or \
        any((live.get("config") or {}).get(k) != v for k, v in MAPPER["config"].items())


def _ensure_client(client, space, check_mode, changes):
    found = client.request("GET", path(space, "clients"), query={"clientId": CLIENT_ID}) or []
    live = found[0] if found else None
    if live is None:
        changes.append("client %s created" % CLIENT_ID)
        if not check_mode:
            client.request("POST", path(space, "clients"), dict(CLIENT, protocolMappers=[MAPPER]))
        return
    differ = _client_changes(live)
    if differ:
        changes.append("client %s: %s changed" % (CLIENT_ID, ", ".join(differ)))
        if not check_mode:
            client.request("PUT", path(space, "clients", live["id"]), dict(live, **CLIENT))
    mappers = [m for m in live.get("protocolMappers") or [] if m.get("name") == MAPPER_NAME]
    mapper = mappers[0] if mappers else None
    if _mapper_differs(mapper):
        changes.append("client %s: mapper %s %s" % (CLIENT_ID, MAPPER_NAME, "changed" if mapper else "created"))
        if check_mode:
            return
        base = path(space, "clients", live["id"], "protocol-mappers", "models")
        if mapper:
            client.request("PUT", base + "/" + path(mapper["id"]), dict(MAPPER, id=mapper["id"]))
        else:
            client.request("POST", base, MAPPER)


def _ensure_profile(client, space, check_mode, changes):
    live = client.request("GET", path(space, "users", "profile"))
    want = desired_profile(live)
    if want != live:
        changes.append("user profile: %s not required, unmanaged attributes %s, user names from %d character"
                       % (", ".join(NOT_REQUIRED), UNMANAGED_POLICY, USERNAME_MIN))
        if not check_mode:
            client.request("PUT", path(space, "users", "profile"), want)


def _ensure_policy(client, space, live, password_policy, check_mode, changes):
    if (live.get("passwordPolicy") or "") == password_policy:
        return
    changes.append("password policy %s" % (password_policy or "(Keycloak's default)"))
    if not check_mode:
        client.request("PUT", path(space), {"realm": space, "passwordPolicy": password_policy})


def ensure_realm(client, space, check_mode=False, password_policy=PASSWORD_POLICY):
    """The realm of ``space`` as the contract has it. A realm that exists and
    is not owned is refused (the collection never changes a realm it did not
    make). ``password_policy``: the realm's ``passwordPolicy`` ("" none:
    Keycloak's default); a password keeps its hash until it is set again or
    Keycloak re-hashes it at a login. Returns ``{"changed", "changes":
    [what], "created"}``."""
    password_policy = password_policy or ""
    live = read_realm(client, space)
    changes = []
    if live is not None and not is_owned(live):
        raise ServiceError("realm %r exists in Keycloak at %s and is not owned by the collection (no realm "
                           "attribute %s=true): it is left alone; remove it or mark it owned"
                           % (space, client.display_url, OWNED_ATTRIBUTE))
    if live is None:
        changes.append("realm %s created" % space)
        if check_mode:
            return {"changed": True, "created": True,
                    "changes": changes + ["client %s created" % CLIENT_ID, "user profile set"]}
        client.request("POST", "", {"realm": space, "enabled": True, "attributes": {OWNED_ATTRIBUTE: "true"},
                                    "passwordPolicy": password_policy})
    else:
        if not live.get("enabled"):
            changes.append("realm %s enabled" % space)
            if not check_mode:
                client.request("PUT", path(space), {"realm": space, "enabled": True})
        _ensure_policy(client, space, live, password_policy, check_mode, changes)
    _ensure_client(client, space, check_mode, changes)
    _ensure_profile(client, space, check_mode, changes)
    return {"changed": bool(changes), "created": live is None, "changes": changes}


def remove_realm(client, space, check_mode=False):
    """Delete the realm of ``space`` when it is owned; a realm that is not
    owned is left alone (``skipped`` says why)."""
    live = read_realm(client, space)
    if live is None:
        return {"changed": False, "changes": []}
    if not is_owned(live):
        return {"changed": False, "changes": [],
                "skipped": "realm %s is not owned by the collection (no %s=true): left alone" % (space, OWNED_ATTRIBUTE)}
    if not check_mode:
        client.request("DELETE", path(space))
    return {"changed": True, "changes": ["realm %s deleted" % space]}
