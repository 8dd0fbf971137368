"""The router_mesh_changes filter: the mesh connectors a running router
deletes and creates (through management, no restart) when routers join or
leave the mesh group. The integration test (test_router_mesh_change.py) runs
the role's mesh.yml with it against real routers."""
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.filter.router import router_mesh_changes


def conn(peer, host=None, port="55672", role="inter-router", name=None):
    return {"name": name or "inter-router/%s" % peer, "role": role, "host": host or peer, "port": port,
            "sslProfile": "inter-router-tls"}


def peer(name, port=55672):
    return {"name": name, "host": name, "port": port}


def test_nothing_to_do_when_the_router_has_its_mesh():
    assert router_mesh_changes([conn("r1"), conn("r2")], [peer("r1"), peer("r2")]) == {"delete": [], "create": []}


def test_a_router_that_left_is_deleted_the_others_stay():
    assert router_mesh_changes([conn("r1"), conn("r2")], [peer("r1")]) == {
        "delete": ["inter-router/r2"], "create": []}


def test_a_router_that_joined_is_created():
    assert router_mesh_changes([conn("r1")], [peer("r1"), peer("r2")]) == {"delete": [], "create": [peer("r2")]}


def test_a_moved_router_is_deleted_and_created_again():
    assert router_mesh_changes([conn("r1", host="old-r1")], [peer("r1")]) == {
        "delete": ["inter-router/r1"], "create": [peer("r1")]}
    assert router_mesh_changes([conn("r1", port="55673")], [peer("r1")]) == {
        "delete": ["inter-router/r1"], "create": [peer("r1")]}


def test_broker_connectors_and_foreign_names_are_left_alone():
    brokers = [conn("b1", role="route-container", name="enmasse/broker/b1"),
               conn("x", name="my-own-link")]
    assert router_mesh_changes(brokers + [conn("r1")], [peer("r1")]) == {"delete": [], "create": []}


def test_the_last_router_of_the_group_dials_nobody_and_deletes_everything_of_the_mesh():
    assert router_mesh_changes([conn("r1"), conn("r2")], []) == {
        "delete": ["inter-router/r1", "inter-router/r2"], "create": []}


@pytest.mark.parametrize("connectors, peers, words", [
    ("nope", [], "the connectors: 'nope' must be the list"),
    ([1], [], "must be the list of the router's connectors"),
    ([], [{"host": "r1"}], "peers: .* must be a list of {name, host, port}"),
    ([], "r1", "peers: 'r1' must be a list"),
])
def test_bad_arguments_are_refused_naming_them(connectors, peers, words):
    with pytest.raises(AnsibleFilterError, match=words):
        router_mesh_changes(connectors, peers)


CONF = """# Managed by Ansible
router {
    mode: interior
    id: r3
}

listener {
    name: inter-router
    port: 55672
    role: inter-router
}

# full mesh: this router dials every router before it in group routers
connector {
    name: inter-router/r1
    host: r1
    port: 55672
    role: inter-router
}

# full mesh: this router dials every router before it in group routers
connector {
    name: inter-router/r2
    host: r2
    port: 55672
    role: inter-router
}
"""


def test_the_core_of_a_conf_is_everything_but_the_mesh_connectors():
    from ansible_collections.enmasse.messaging.plugins.filter.router import router_conf_core
    core = router_conf_core(CONF)
    assert "inter-router/r1" not in core and "inter-router/r2" not in core and "#" not in core
    assert "listener {\nname: inter-router\nport: 55672\nrole: inter-router\n}" in core
    # a router that left or joined: the same core
    without_r2 = CONF[:CONF.index("# full mesh", CONF.index("inter-router/r1"))]
    assert router_conf_core(without_r2) == core
    # anything else: another core
    assert router_conf_core(CONF.replace("port: 55672\n    role: inter-router\n}\n\n#", "port: 55673\n    role: inter-router\n}\n\n#", 1)) != core
    assert router_conf_core(CONF + "connector {\n    name: enmasse/broker/b1\n    host: b1\n}\n") != core
    assert router_conf_core(None) is None
    with pytest.raises(AnsibleFilterError, match="router_conf_core: 42 must be the text"):
        router_conf_core(42)
