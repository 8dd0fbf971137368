"""The auth service's mesh probe (plugins/module_utils/auth/mesh.py): the
router.node QUERY reply counted, the series rendered on the metrics endpoint,
a failed poll reported as management down (no stale router count), and the
configuration checks. The real routers: tests/integration/test_auth_service_mesh_probe.py."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import mesh, metrics, server

OK = {"statusCode": 200, "statusDescription": "OK"}


NAMES = ["id", "linkState", "nextHop"]


def node(rid, links, hop=None):
    return [rid, links, hop]


def reply(*rows):
    return OK, {"attributeNames": NAMES, "results": list(rows)}


def full(*ids):
    """A full mesh of ``ids`` as ids[0] sees it."""
    return reply(*[node(i, [o for o in ids if o != i], "(self)" if i == ids[0] else None) for i in ids])


def test_query_asks_for_every_router_node_with_its_links():
    properties, body = mesh.query_request()
    assert properties["operation"] == "QUERY"
    assert properties["entityType"] == "org.apache.qpid.dispatch.router.node"
    assert body == {"attributeNames": ["id", "linkState", "nextHop"]}


def test_count_routers_follows_links_both_ends_list():
    assert mesh.count_routers(*full("r0", "r1", "r2")) == 3
    # as qdrouterd 1.19 answered 2 s after router-2 stopped: its stale link state still names
    # router-0 and router-1, theirs no longer name it (and it keeps a next hop via router-1)
    assert mesh.count_routers(*reply(node("router-0", ["router-1"], "(self)"), node("router-1", ["router-0"]),
                                     node("router-2", ["router-0", "router-1"], "router-1"))) == 2
    # one link of a full mesh down: every router still reached through the third
    assert mesh.count_routers(*reply(node("r0", ["r2"], "(self)"), node("r1", ["r2"], "r2"),
                                     node("r2", ["r0", "r1"]))) == 3
    # alone
    assert mesh.count_routers(*reply(node("r0", [], "(self)"), node("r1", ["r0"]))) == 1
    # other column order, a row of the wrong length ignored
    assert mesh.count_routers(OK, {"attributeNames": ["nextHop", "id", "linkState"],
                                   "results": [["(self)", "a", ["b"]], [None, "b", ["a"]], [1]]}) == 2


def test_count_routers_refuses_what_is_no_answer():
    with pytest.raises(ValueError, match="403"):
        mesh.count_routers({"statusCode": 403, "statusDescription": "Forbidden"}, {})
    for body in (None, {"results": []}, {"attributeNames": ["id"], "results": [["a"]]},
                 {"attributeNames": NAMES, "results": [node("a", [])]}):
        with pytest.raises(ValueError):
            mesh.count_routers(OK, body)


def samples(text):
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_probe_series_on_the_metrics_endpoint():
    answers = [full("r1", "r2"), full("r1"), OSError("connection refused")]

    def query(url, timeout):
        assert (url, timeout) == ("amqp://127.0.0.1:55670", 5)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    probe = mesh.MeshProbe("amqp://127.0.0.1:55670", 2, query=query)
    m = metrics.Metrics()
    m.sources.append(probe)
    before = samples(m.render())
    assert before["enmasse_router_management_up"] == "0" and "enmasse_router_mesh_routers" not in before
    assert "# TYPE enmasse_router_mesh_routers gauge" in m.render()
    probe.poll()
    values = samples(m.render())
    assert (values["enmasse_router_mesh_routers"], values["enmasse_router_mesh_expected_routers"],
            values["enmasse_router_management_up"]) == ("2", "2", "1")
    assert "enmasse_auth_service_connections" in values
    probe.poll()
    assert samples(m.render())["enmasse_router_mesh_routers"] == "1"
    probe.poll()
    values = samples(m.render())
    assert values["enmasse_router_management_up"] == "0" and "enmasse_router_mesh_routers" not in values
    assert values["enmasse_router_mesh_expected_routers"] == "2"


def test_without_a_probe_no_mesh_series():
    assert "enmasse_router" not in metrics.Metrics().render()


def test_probe_thread_polls_and_stops():
    calls = []

    def query(url, timeout):
        calls.append(url)
        return full("r1")

    probe = mesh.MeshProbe("amqp://x:1", 1, interval=1, query=query).start()
    probe.thread.join(0.2)
    probe.stop()
    probe.thread.join(2)
    assert not probe.thread.is_alive() and calls == ["amqp://x:1"] and probe.up == 1


BASE = {"tls_cert": "/c.pem", "tls_key": "/k.pem", "metrics_port": 9466, "metrics_password_file": "/p.json"}


def test_config_checks():
    on = dict(BASE, mesh_management_url="amqp://127.0.0.1:55670", mesh_expected_routers=3)
    config = server.load_config(overrides=on)
    assert config["mesh_poll_interval"] == 15 and config["mesh_timeout"] == 5
    assert server.load_config()["mesh_management_url"] == ""
    for bad, fragment in (({"mesh_expected_routers": 0}, "needs mesh_expected_routers"),
                          ({"mesh_management_url": "http://x"}, "amqp://"),
                          ({"metrics_port": 0}, "needs metrics_port"),
                          ({"mesh_poll_interval": 0}, "mesh_poll_interval"),
                          ({"mesh_expected_routers": True}, "integer")):
        with pytest.raises(ValueError, match=fragment):
            server.load_config(overrides=dict(on, **bad))


def test_command_line_flags(monkeypatch):
    seen = {}

    def fake_load(path, overrides):
        seen.update(overrides)
        raise ValueError("stop here")

    monkeypatch.setattr(server, "load_config", fake_load)
    with pytest.raises(SystemExit):
        server.main(["--mesh-management-url", "amqp://127.0.0.1:55670", "--mesh-expected-routers", "3"])
    assert seen["mesh_management_url"] == "amqp://127.0.0.1:55670" and seen["mesh_expected_routers"] == 3
