# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Messaging users in the realm of their address space: read the live users
and their group memberships (normalised), compare with the desired users
(``model/users.py``), apply the difference.

* Groups are EnMasse's encoding, computed by the auth service's one
  implementation (``auth/backends.py`` ``authorization_to_groups``) and
  created in the realm on demand. Only those groups (``send_*``,
  ``recv_*``, ``manage``, ``monitor``) are compared; a group added by hand
  (``admins``) stays.
* Owned users carry the attribute ``enmasse.messaging.owned=true``; prune
  and ``state: absent`` delete owned users only. A listed user that exists
  and is not owned is adopted (marked owned).
* Keycloak never returns a password. With ``update_password: always`` the
  user keeps a salted PBKDF2 hash of the password the collection set
  (attribute ``enmasse.messaging.password``, visible to realm admins only:
  the realm's unmanaged attributes are ADMIN_EDIT); the password is set again
  when the given one does not match it (or there is none: a user made by
  hand). ``on_create`` sets it only when the user is created."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.enmasse.messaging.plugins.module_utils.auth.backends import (
    authorization_to_groups, hash_password, verify_password)
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError, ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.client import path
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.realm import OWNED_ATTRIBUTE, read_realm
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.groups import (
    authorization_of, is_managed_group)

HASH_ATTRIBUTE = "enmasse.messaging.password"
# a hash is checked on every run for every user: fewer iterations than the
# auth service's files (docs/identity.md says why that is acceptable)
HASH_ITERATIONS = 10000
# users applied at once (HTTP requests in flight)
WORKERS = 8
# users read per request (docs/identity.md "Cost": 100 costs a cold Keycloak a third less than 500)
USERS_PAGE = 100
HIDDEN = "(hidden)"
HIDDEN_CHANGED = "(hidden, changed)"


# ------------------------------------------------------------------ read

def read_live(client, space, workers=WORKERS):
    """``(users, groups)``: ``users`` username -> ``{"id", "enabled",
    "owned", "hash", "attributes", "groups": sorted managed groups}``;
    ``groups`` managed group name -> id. Raises ServiceError when the realm
    does not exist."""
    users = read_users(client, space, workers)
    return users, read_memberships(client, space, users, workers)


def _all_users(client, space, workers):
    """Every user (full representation): pages of USERS_PAGE, ``workers`` in
    flight (a cold Keycloak loads each user's attributes and credentials, and
    a smaller page costs it less per user), then on from the last page when
    users were made since the count."""
    where, query = path(space, "users"), {"briefRepresentation": "false"}
    count = client.request("GET", path(space, "users", "count")) or 0
    firsts = list(range(0, int(count), USERS_PAGE)) or [0]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        pages = list(pool.map(lambda first: client.request("GET", where, query=dict(query, first=first, max=USERS_PAGE))
                              or [], firsts))
    out = [rep for chunk in pages for rep in chunk]
    if len(pages[-1]) == USERS_PAGE:
        out.extend(client.paged(where, query, page=USERS_PAGE, first=firsts[-1] + USERS_PAGE))
    return out


def read_users(client, space, workers=WORKERS):
    """The users of ``read_live`` with their ``groups`` still empty."""
    if read_realm(client, space) is None:
        raise ServiceError("address_space: realm %r does not exist in Keycloak at %s: the address space's realm "
                           "is made with the address space (or keycloak.realm.ensure_realm)"
                           % (space, client.display_url))
    users = {}
    for rep in _all_users(client, space, workers):
        if rep["username"] in users:
            continue
        attrs = rep.get("attributes") or {}
        users[rep["username"]] = {"id": rep["id"], "enabled": bool(rep.get("enabled")), "attributes": attrs,
                                  "owned": (attrs.get(OWNED_ATTRIBUTE) or [None])[0] == "true",
                                  "hash": (attrs.get(HASH_ATTRIBUTE) or [None])[0], "groups": []}
    return users


def read_memberships(client, space, users, workers=WORKERS):
    """Fills the ``groups`` of ``users`` (read_users); the managed groups
    name -> id. One request per group (Keycloak has no bulk read of
    memberships), ``workers`` in flight."""
    by_id = dict((u["id"], u) for u in users.values())
    groups = dict((rep["name"], rep["id"]) for rep in client.paged(path(space, "groups"), {"briefRepresentation": "true"})
                  if is_managed_group(rep.get("name")))
    names = sorted(groups)

    def members(name):
        return client.paged(path(space, "groups", groups[name], "members"), {"briefRepresentation": "true"})

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for name, found in zip(names, pool.map(members, names)):
            for member in found:
                if member.get("id") in by_id:
                    by_id[member["id"]]["groups"].append(name)
    for user in users.values():
        user["groups"].sort()
    return groups


def view(username, live):
    """What the diff and the info module show of a live user (no secret)."""
    return {"username": username, "enabled": live["enabled"], "owned": live["owned"],
            "authorization": authorization_of(live["groups"]), "groups": live["groups"]}


# ------------------------------------------------------------------ compare

def desired_groups(user):
    return authorization_to_groups(user.get("authorization") or [])


def password_differs(user, live, update_password):
    if update_password != "always":
        return False
    if not live["hash"]:
        return True
    try:
        return not verify_password(user["password"], live["hash"])
    except ValueError:
        return True


def stale_passwords(users, live, update_password, workers=WORKERS):
    """Names of the listed users whose password must be set again: their
    hashes are checked ``workers`` at a time (PBKDF2 releases the GIL)."""
    present = [u for u in users if u["state"] == "present" and u["username"] in live]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        differs = list(pool.map(lambda u: password_differs(u, live[u["username"]], update_password), present))
    return set(u["username"] for u, d in zip(present, differs) if d)


def plan(space, users, live, prune=False, stale=()):
    """The changes (pure): a list of ``{"action": create|update|delete,
    "username", ...}`` in task order, then the pruned users by name;
    ``stale``: the users whose password is set again (stale_passwords)."""
    steps, listed, warnings = [], set(), []
    for user in users:
        name = user["username"]
        listed.add(name)
        current = live.get(name)
        if user["state"] == "absent":
            if current is not None and current["owned"]:
                steps.append({"action": "delete", "username": name})
            elif current is not None:
                warnings.append("user %r of realm %r is not owned by the collection (no attribute %s): not deleted"
                                % (name, space, OWNED_ATTRIBUTE))
            continue
        groups = desired_groups(user)
        enabled = user.get("enabled", True)
        if current is None:
            steps.append({"action": "create", "username": name, "user": user, "groups": groups, "password": True})
            continue
        change = {"groups_add": sorted(set(groups) - set(current["groups"])),
                  "groups_remove": sorted(set(current["groups"]) - set(groups)),
                  "enabled_changed": enabled != current["enabled"],
                  "adopt": not current["owned"],
                  "password": name in stale}
        if any(change.values()):
            steps.append(dict(change, action="update", username=name, user=user, groups=groups))
    if prune:
        for name in sorted(set(live) - listed):
            if live[name]["owned"]:
                steps.append({"action": "delete", "username": name})
    return steps, warnings


def diff_of(steps, live):
    """Before and after of the changed users (passwords as ``(hidden)``)."""
    before, after = {}, {}
    for step in steps:
        name = step["username"]
        if name in live:
            before[name] = dict(view(name, live[name]), password=HIDDEN)
        if step["action"] == "delete":
            continue
        user = step["user"]
        after[name] = {"username": name, "enabled": user.get("enabled", True), "owned": True,
                       "authorization": authorization_of(step["groups"]), "groups": step["groups"],
                       "password": HIDDEN_CHANGED if step.get("password") else HIDDEN}
    return {"before": before, "after": after}


# ------------------------------------------------------------------ apply

def _attributes(live_attrs, password):
    attrs = dict(live_attrs or {})
    attrs[OWNED_ATTRIBUTE] = ["true"]
    if password is not None:
        attrs[HASH_ATTRIBUTE] = [hash_password(password, iterations=HASH_ITERATIONS)]
    return attrs


def _group_ids(client, space, names, groups):
    """Ids of ``names``, creating the groups the realm lacks."""
    for name in names:
        if name not in groups:
            created = client.request("POST", path(space, "groups"), {"name": name})
            groups[name] = created["id"] if created else None
            if groups[name] is None:
                found = [g for g in client.request("GET", path(space, "groups"), query={"search": name, "exact": "true"})
                         or [] if g.get("name") == name]
                groups[name] = found[0]["id"]
    return [groups[n] for n in names]


def _create(client, space, step, groups):
    """One request: the user with its password and its groups (by path; the
    groups exist: ``apply`` made them). A name with ``~`` (Keycloak's escape
    character in group paths) is joined by id afterwards instead."""
    user = step["user"]
    by_path = [g for g in step["groups"] if "~" not in g]
    created = client.request("POST", path(space, "users"), {
        "username": user["username"], "enabled": user.get("enabled", True), "requiredActions": [],
        "attributes": _attributes({}, user["password"]), "groups": ["/" + g for g in by_path],
        "credentials": [{"type": "password", "value": user["password"], "temporary": False}]})
    for gid in _group_ids(client, space, [g for g in step["groups"] if g not in by_path], groups):
        client.request("PUT", path(space, "users", created["id"], "groups", gid))


def _update(client, space, step, current, groups):
    user, uid = step["user"], current["id"]
    if step["password"]:
        client.request("PUT", path(space, "users", uid, "reset-password"),
                       {"type": "password", "value": user["password"], "temporary": False})
    if step["password"] or step["adopt"] or step["enabled_changed"]:
        client.request("PUT", path(space, "users", uid), {
            "username": user["username"], "enabled": user.get("enabled", True),
            "attributes": _attributes(current["attributes"], user["password"] if step["password"] else None)})
    for gid in _group_ids(client, space, step["groups_add"], groups):
        client.request("PUT", path(space, "users", uid, "groups", gid))
    for name in step["groups_remove"]:
        client.request("DELETE", path(space, "users", uid, "groups", groups[name]))


def _apply_one(client, space, step, live, groups):
    if step["action"] == "create":
        _create(client, space, step, groups)
    elif step["action"] == "update":
        _update(client, space, step, live[step["username"]], groups)
    else:
        client.request("DELETE", path(space, "users", live[step["username"]]["id"]), missing_ok=True)


def apply(client, space, steps, live, groups, workers=WORKERS):
    """Apply ``steps``: the groups they need first (once), then the users,
    ``workers`` at a time (Keycloak hashes each new password: its cores, not
    this loop, set the pace). Every user that failed is named in the
    ServiceError, with what was done in ``result.changes``."""
    needed = sorted(set(g for step in steps if step["action"] != "delete"
                        for g in (step["groups"] if step["action"] == "create" else step["groups_add"])))
    try:
        _group_ids(client, space, needed, groups)
    except Exception as e:  # pylint: disable=broad-except
        raise ServiceError(["groups of realm %r: creating %s failed: %s" % (space, ", ".join(needed), e)])
    done = {"created": [], "updated": [], "deleted": []}
    failed = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [(step, pool.submit(_apply_one, client, space, step, live, groups)) for step in steps]
        for step, future in futures:
            try:
                future.result()
            except Exception as e:  # pylint: disable=broad-except
                failed.append("user %r of realm %r: %s failed: %s" % (step["username"], space, step["action"], e))
                continue
            done[step["action"] + "d"].append(step["username"])
    if failed:
        raise ServiceError(failed, result={"changed": any(done.values()), "changes": done})
    return done


def changes_of(steps):
    out = {"created": [], "updated": [], "deleted": []}
    for step in steps:
        out[step["action"] + "d"].append(step["username"])
    return out


def password_set(steps):
    """The users whose password the steps set (created, or changed)."""
    return set(s["username"] for s in steps if s["action"] == "create" or s.get("password"))


def converge(client, space, users, prune=False, update_password="always", check_mode=False, broker=None):
    """The users of ``space`` converged; the module result. ``broker``: a
    brokered space's artemis/realm_users.BrokerUsers, planned before the
    realm changes and applied after them (result ``broker``)."""
    if update_password not in ("always", "on_create"):
        raise ValidationError("update_password: %r is not one of always, on_create" % (update_password,))
    live = read_users(client, space)
    # the stored hashes are checked (CPU here) while the memberships are read (Keycloak's CPU)
    with ThreadPoolExecutor(max_workers=1) as side:
        checking = side.submit(stale_passwords, users, live, update_password)
        groups = read_memberships(client, space, live)
        stale = checking.result()
    steps, warnings = plan(space, users, live, prune, stale)
    if broker is not None:
        broker.plan(users, password_set(steps), prune)
    result = {"changed": bool(steps), "diff": diff_of(steps, live), "warnings": warnings}
    result["changes"] = changes_of(steps) if check_mode else apply(client, space, steps, live, groups)
    if broker is not None:
        result["broker"] = broker.converge(check_mode)
        result["changed"] = result["changed"] or result["broker"]["changed"]
        if result["broker"]["changed"]:
            result["diff"]["before"]["(broker)"], result["diff"]["after"]["(broker)"] = broker.diff()
    names = [u["username"] for u in users]
    after = result["diff"]["after"]
    result["users"] = [dict(after[n], password=None) if n in after else
                       (view(n, live[n]) if n in live else {"username": n, "state": "absent"}) for n in names]
    for user in result["users"]:
        user.pop("password", None)
    return result


def info(client, space, usernames=None):
    """The users of ``space`` (all, or those named), without secrets."""
    live = read_live(client, space)[0]
    names = sorted(live) if not usernames else [n for n in usernames if n in live]
    return {"changed": False, "users": [view(n, live[n]) for n in names]}
