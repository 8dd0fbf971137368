"""The auth_service role's input checks and users files, run by
ansible-playbook on localhost (no systemd needed: prereqs.yml and users.yml
only): the collection's name rules, the generated messaging password shared
with the broker role's credentials files, hashing, idempotence, pruning,
no password in the output."""
import grp
import os

from ansible_collections.enmasse.messaging.plugins.filter import auth_service as flt
from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends

import pytest

from role_play import changed, failed, role_play, run_book


def play(tmp_path, tasks_from, variables):
    return role_play(tmp_path, "auth_service", tasks_from, variables)


def test_prereqs_refuse_bad_spaces_and_users_with_the_model_rules(tmp_path):
    users = [{"username": "Alice!", "password": "hush-hush-secret"},
             {"username": "bob", "password": ""},
             {"username": "good-user", "password": "x"},
             {"username": "carl", "password": "y", "authorization": [{"addresses": ["a"], "operations": ["fly"]}]}]
    out, results = play(tmp_path, "prereqs.yml", {"auth_service_address_spaces": [
        {"address_space": "Bad_Name", "users": []},
        {"address_space": "good", "users": users}]})
    bad = failed(results)
    assert bad and bad[0][0].endswith("Check the address spaces and users with the collection's rules"), bad
    msg = bad[0][1]["msg"]
    assert "auth_service_address_spaces[0].address_space: 'Bad_Name' must consist of lowercase letters" in msg
    assert "users[0].username: 'Alice!' must match" in msg
    assert "auth_service_address_spaces[1](good).users[1].password: must be a non-empty string" in msg
    assert "users[2].username: 'good-user' is also the generated messaging user" in msg
    assert "'fly' is not one of send, recv, view, manage" in msg
    assert "hush-hush-secret" not in out


def users_vars(tmp_path, spaces, **extra):
    v = {"auth_service_address_spaces": spaces,
         "auth_service_users_dir": str(tmp_path / "users"),
         "auth_service_credentials_dir": str(tmp_path / "credentials"),
         "auth_service_group": grp.getgrgid(os.getgid()).gr_name,
         "auth_service_pbkdf2_iterations": 10000}
    v.update(extra)
    return v


def test_users_files_from_generated_and_listed_passwords_idempotent_and_pruned(tmp_path):
    (tmp_path / "users").mkdir()
    (tmp_path / "users" / "gone.json").write_text("{}")
    users_a = [{"username": "app", "password": "app-secret-1"},
               {"username": "reader", "password": "reader-secret",
                "authorization": [{"addresses": ["orders/*"], "operations": ["recv"]}]}]
    spaces = [{"address_space": "space-a", "users": users_a},
              {"address_space": "space-b", "messaging_user": False,
               "users": [{"username": "app", "password": "app-secret-2"}]}]
    out, results = play(tmp_path, "users.yml", users_vars(tmp_path, spaces))
    assert not failed(results), failed(results)
    for secret in ("app-secret-1", "app-secret-2", "reader-secret"):
        assert secret not in out
    # the generated password: the broker role's file name, created on first use
    generated = (tmp_path / "credentials" / "space-a-messaging").read_text().split()[0]
    assert len(generated) == 32 and generated not in out
    assert not (tmp_path / "credentials" / "space-b-messaging").exists()
    assert not (tmp_path / "users" / "gone.json").exists()
    be = backends.UsersFileBackend(str(tmp_path / "users"))
    assert be.check("space-a", "space-a-user", generated).address_authz == {"*": ["recv", "send"]}
    assert be.check("space-a", "app", "app-secret-1").address_authz == {"*": ["recv", "send"]}
    assert be.check("space-a", "reader", "reader-secret").address_authz == {"orders/*": ["recv"]}
    assert be.check("space-b", "app", "app-secret-2") is not None
    assert be.check("space-b", "app", "app-secret-1") is None
    assert be.check("space-b", "space-b-user", generated) is None
    assert oct(os.stat(str(tmp_path / "users" / "space-a.json")).st_mode & 0o777) == "0o640"
    before = (tmp_path / "users" / "space-a.json").read_text()
    assert "app-secret-1" not in before and generated not in before

    # the same input again changes nothing (unchanged passwords keep their hash)
    out, results = play(tmp_path, "users.yml", users_vars(tmp_path, spaces))
    assert not failed(results) and changed(results) == [], changed(results)
    assert (tmp_path / "users" / "space-a.json").read_text() == before

    # a changed password rewrites that file only; a removed space loses its file
    spaces[0]["users"][0]["password"] = "app-secret-3"
    out, results = play(tmp_path, "users.yml", users_vars(tmp_path, spaces[:1]))
    assert not failed(results)
    assert be.check("space-a", "app", "app-secret-3") is not None
    assert be.check("space-a", "space-a-user", generated) is not None
    assert not (tmp_path / "users" / "space-b.json").exists()


def test_users_file_filter_keeps_hashes_only_for_unchanged_passwords():
    space = {"address_space": "s", "users": [{"username": "u", "password": "p1"}]}
    first = flt.auth_service_users_file(space, generated_password="g", iterations=10000)
    again = flt.auth_service_users_file(space, generated_password="g", previous=first, iterations=10000)
    assert again == first
    space["users"][0]["password"] = "p2"
    changed_doc = flt.auth_service_users_file(space, generated_password="g", previous=first, iterations=10000)
    assert changed_doc["users"]["s-user"] == first["users"]["s-user"]
    assert changed_doc["users"]["u"]["password"] != first["users"]["u"]["password"]
    more = flt.auth_service_users_file(space, generated_password="g", previous=first, iterations=20000)
    assert more["users"]["s-user"]["password"].startswith("pbkdf2-sha256$20000$")
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="iterations"):
        flt.auth_service_users_file(space, iterations=0)


def routers_play(tmp_path, address_spaces, **extra):
    """site.yml's Routers play as it is (its vars and pre_tasks) on localhost as
    the group routers, with the auth_service role's users.yml for its roles."""
    import yaml
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "playbooks", "site.yml")) as f:
        site = yaml.safe_load(f)
    routers = [p for p in site if p.get("hosts") == "routers"][0]
    variables = users_vars(tmp_path, None, **extra)
    variables.update(routers["vars"], address_spaces=address_spaces, standard_ledger_dir=str(tmp_path / "ledgers"))
    # the play's files, relative to playbooks/ there, absolute here
    books = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "playbooks"))
    pre_tasks = routers.get("pre_tasks", [])
    for task in pre_tasks:
        if "ansible.builtin.include_tasks" in task:
            task["ansible.builtin.include_tasks"] = os.path.join(books, task["ansible.builtin.include_tasks"])
    book = [{"hosts": "routers", "gather_facts": False, "connection": "local", "vars": variables,
             "vars_files": [os.path.join(books, f) for f in routers.get("vars_files", [])],
             "pre_tasks": pre_tasks,
             "tasks": [{"name": "role", "ansible.builtin.include_role": {
                 "name": "enmasse.messaging.auth_service", "tasks_from": "users.yml"}}]}]
    (tmp_path / "hosts").write_text("[routers]\nlocalhost ansible_connection=local\n")
    return run_book(tmp_path, book, inventory=str(tmp_path / "hosts"))


def test_site_keeps_the_users_file_of_a_standard_space_left_out_of_the_inventory(tmp_path):
    """A standard space the control host still has (its ledger) but the
    inventory no longer lists keeps running: its users file stays, with a
    warning. The file of a space removed (no ledger) is pruned."""
    (tmp_path / "ledgers").mkdir()
    (tmp_path / "users").mkdir()
    for name in ("kept", "listed"):
        (tmp_path / "ledgers" / ("%s.json" % name)).write_text('{"version": 1, "address_space": {"name": "%s"}}' % name)
    kept = '{"users": {"kept-user": {"password": "pbkdf2-sha256$..."}}}'
    (tmp_path / "users" / "kept.json").write_text(kept)
    (tmp_path / "users" / "removed.json").write_text("{}")
    out, results = routers_play(tmp_path, [{"name": "listed", "type": "standard", "plan": "standard-unlimited"}])
    assert not failed(results), failed(results)
    assert (tmp_path / "users" / "kept.json").read_text() == kept
    assert not (tmp_path / "users" / "removed.json").exists()
    assert (tmp_path / "users" / "listed.json").exists()
    warning = [r["msg"] for name, r in results if name.endswith("not in the inventory") and r.get("msg")]
    assert warning and "standard address space(s) kept exist" in warning[0] and "state=absent" in warning[0], results
    # removed explicitly (address_space state=absent deletes the ledger): the next run prunes its users file
    (tmp_path / "ledgers" / "kept.json").unlink()
    out, results = routers_play(tmp_path, [{"name": "listed", "type": "standard", "plan": "standard-unlimited"}])
    assert not failed(results), failed(results)
    assert not (tmp_path / "users" / "kept.json").exists() and (tmp_path / "users" / "listed.json").exists()
    # a fresh control host has no ledger directory: nothing exists, nothing to warn about
    for ledger in (tmp_path / "ledgers").iterdir():
        ledger.unlink()
    (tmp_path / "ledgers").rmdir()
    out, results = routers_play(tmp_path, [{"name": "listed", "type": "standard", "plan": "standard-unlimited"}])
    assert not failed(results), failed(results)
    assert not [r for name, r in results if name.endswith("not in the inventory") and r.get("msg")], results


@pytest.mark.parametrize("extra, fragment", [
    ({"auth_service_backend": "ldap"}, "backend=ldap"),
    ({"auth_service_backend": "keycloak"}, "url=,"),
    ({"auth_service_backend": "keycloak", "auth_service_keycloak_url": "https://u:p@kc:8443"}, "url=https://u:p@kc"),
    ({"auth_service_backend": "keycloak", "auth_service_keycloak_url": "http://kc:8080",
      "auth_service_keycloak_ca": "/etc/ca.pem"}, "ca=/etc/ca.pem"),
    ({"auth_service_cache_ttl": -1}, "cache_ttl=-1"),
    ({"auth_service_backend": "keycloak", "auth_service_keycloak_url": "https://kc:8443",
      "auth_service_address_spaces": [{"address_space": "a", "users": [{"username": "u", "password": "p4ss-w0rd"}]}]},
     "no `users`"),
])
def test_prereqs_refuse_bad_backend_settings(tmp_path, extra, fragment):
    out, results = play(tmp_path, "prereqs.yml", extra)
    bad = failed(results)
    assert bad and bad[0][0].endswith("Check the backend settings"), bad
    assert fragment in bad[0][1]["msg"]
    assert "p4ss-w0rd" not in out


def test_config_json_selects_the_keycloak_backend_and_the_service_accepts_it(tmp_path):
    from ansible_collections.enmasse.messaging.plugins.module_utils.auth import server
    v = users_vars(tmp_path, [], auth_service_config_dir=str(tmp_path / "etc"), auth_service_backend="keycloak",
                   auth_service_keycloak_url="https://keycloak.example:8443", auth_service_cache_ttl=20)
    out, results = play(tmp_path, "prereqs.yml", v)
    # every check passes up to the systemd one (the test host has no systemd)
    assert [name for name, unused in failed(results)] == ["enmasse.messaging.auth_service : Check the host runs systemd"]
    out, results = play(tmp_path, "config.yml", v)
    # the reload handler needs systemd; config.json is written before it
    assert [name for name, unused in failed(results)] == ["enmasse.messaging.auth_service : Reload enmasse-auth-service"]
    config = server.load_config(str(tmp_path / "etc" / "config.json"))
    assert (config["backend"], config["keycloak_url"], config["keycloak_client_id"], config["cache_ttl"],
            config["keycloak_timeout"]) == ("keycloak", "https://keycloak.example:8443", "enmasse-messaging", 20, 5)


MGMT = {"url": "amqps://127.0.0.1:55670", "ca_dir": "/ctl/credentials/router-management-routers",
        "ca_common_name": "enmasse.messaging router management CA",
        "tls": {"cert_file": "/etc/qpid-dispatch/tls/management-client.pem",
                "key_file": "/etc/qpid-dispatch/tls/management-client.key",
                "ca_file": "/etc/qpid-dispatch/tls/management-ca.pem"}}
PROBE = "enmasse.messaging.auth_service : Check the mesh probe can reach the local router's management listener"


@pytest.mark.parametrize("extra, refused", [
    # the router role's fact on this host: the probe gets a certificate of its CA by default
    ({"router_management": MGMT}, False),
    # the operator emptied the CA directory: the probe would connect without TLS to a listener that requires it
    ({"router_management": MGMT, "auth_service_mesh_management_ca_dir": ""}, True),
    # a router whose management is plain (another deployment's): no certificate needed
    ({"router_management": dict(MGMT, tls={}), "auth_service_mesh_management_ca_dir": ""}, False),
    # no probe: nothing to reach
    ({"router_management": MGMT, "auth_service_mesh_management_ca_dir": "", "auth_service_mesh_expected_routers": 0},
     False),
])
def test_prereqs_refuse_a_mesh_probe_without_the_management_certificate(tmp_path, extra, refused):
    v = dict({"auth_service_metrics_enabled": True, "auth_service_mesh_expected_routers": 3}, **extra)
    out, results = play(tmp_path, "prereqs.yml", v)
    names = [name for name, unused in failed(results)]
    if refused:
        assert names and names[0].startswith(PROBE), names
        assert "auth_service_mesh_management_ca_dir" in failed(results)[0][1]["msg"]
    else:  # every check passed up to the systemd one, the next (the test host has no systemd)
        assert names == ["enmasse.messaging.auth_service : Check the host runs systemd"], names
