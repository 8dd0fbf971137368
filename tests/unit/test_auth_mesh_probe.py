"""The auth service's mesh probe (plugins/module_utils/auth/mesh.py): the
router.node QUERY reply counted, the addresses of each space counted by
phase from the address/autoLink/linkRoute QUERYs (the modules' readiness
rule, standard/entities.py), the series rendered on the metrics endpoint,
a failed poll reported as management down (no stale router count), and the
configuration checks. The real routers: tests/integration/test_auth_service_mesh_probe.py."""
import logging

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


TYPES = dict((t, k) for k, t, unused in mesh.ADDRESS_KINDS)


# the router entity as qdrouterd 1.19 answers it (integers; a few counters not zero)
STATS = dict((attribute, 0) for unused, unused, attribute, unused in mesh.ROUTER_METRICS)
STATS.update(connectionCount=7, linkCount=31, nodeCount=2, deliveriesIngress=1234, acceptedDeliveries=1200)


def router(node_reply, entities, fail=(), stats=None):
    """A fake management ``call``: the router.node QUERY answered with
    ``node_reply``, the router entity's with ``stats`` (default STATS), the
    others from ``entities`` ({kind: [(name, operStatus)]}), paged as
    qdrouterd pages; a kind in ``fail`` (or "router") answered 403."""
    asked = []

    def call(properties, body):
        asked.append(properties["entityType"])
        if properties["entityType"] == mesh.NODE_TYPE:
            return node_reply
        if properties["entityType"] == mesh.ROUTER_TYPE:
            if "router" in fail:
                return {"statusCode": 403, "statusDescription": "Forbidden"}, None
            row = stats if stats is not None else STATS
            names = body["attributeNames"]
            return OK, {"attributeNames": names, "results": [[row.get(n) for n in names]]}
        kind = TYPES[properties["entityType"]]
        if kind in fail:
            return {"statusCode": 403, "statusDescription": "Forbidden"}, None
        assert properties["operation"] == "QUERY" and properties["count"] == mesh.PAGE
        rows = [[n, st][:len(body["attributeNames"])] for n, st in entities.get(kind, ())]
        return OK, {"attributeNames": body["attributeNames"],
                    "results": rows[properties["offset"]:properties["offset"] + properties["count"]]}
    call.asked = asked
    return call


SPACE = {  # space s: queue q1 on broker b1 (down), queue q2 on b2, anycast a, topic t, subscription t::n
    "address": [("enmasse/s/address/q1", None), ("enmasse/s/address/q2", None), ("enmasse/s/address/a", None),
                ("enmasse/s/vhost", None)],
    "autoLink": [("enmasse/s/autolink/b1/in/q1", "inactive"), ("enmasse/s/autolink/b1/out/q1", "inactive"),
                 ("enmasse/s/autolink/b2/in/q2", "active"), ("enmasse/s/autolink/b2/out/q2", "active")],
    "linkRoute": [("enmasse/s/linkroute/in/t", "active"), ("enmasse/s/linkroute/out/t", "active"),
                  ("enmasse/s/linkroute/out/t::n", "inactive"), ("enmasse/s/mqtt-linkroute/in", "inactive"),
                  ("enmasse/u/linkroute/in/x", "active"), ("enmasse/u/linkroute/out/x", "active"),
                  ("other/v/linkroute/in/y", "inactive")],
}


def test_count_addresses_by_the_modules_rule():
    counts = mesh.count_addresses(mesh.address_entities(router(full("r0"), SPACE)))
    # q1 (its broker's autoLinks inactive) and the subscription n pending; q2, a, t active; the
    # MQTT service's linkRoute and entities not under enmasse/ are no address
    assert counts == {"s": {"Active": 3, "Pending": 2}, "u": {"Active": 1, "Pending": 0}}
    # one link of an address down is enough; a link with no status (not reported) is not ready
    assert mesh.count_addresses([("autoLink", "enmasse/s/autolink/b1/in/q", "active"),
                                 ("autoLink", "enmasse/s/autolink/b1/out/q", None),
                                 ("address", "enmasse/s/address/q", None)]) == {"s": {"Active": 0, "Pending": 1}}
    assert mesh.count_addresses([("address", None, None), ("address", "enmasse//address/x", None),
                                 ("address", "enmasse/broker", None)]) == {}


def test_address_queries_are_paged(monkeypatch):
    monkeypatch.setattr(mesh, "PAGE", 2)
    call = router(full("r0"), SPACE)
    rows = mesh.address_entities(call)
    assert len(rows) == 4 + 4 + 7
    # address 4 rows: pages of 2, 2, 0; autoLink the same; linkRoute 2, 2, 2, 1
    assert [call.asked.count(t) for unused, t, unused in mesh.ADDRESS_KINDS] == [3, 3, 4]


def test_read_router_keeps_the_router_count_when_the_addresses_fail():
    routers, addresses, stats, why = mesh.read_router(router(full("r0", "r1"), SPACE))
    assert (routers, addresses["s"]["Pending"], stats, why) == (2, 2, STATS, None)
    routers, addresses, stats, why = mesh.read_router(router(full("r0", "r1"), SPACE, fail=("linkRoute",)))
    assert (routers, addresses, stats) == (2, None, STATS) and "linkRoute QUERY answered 403" in str(why)
    routers, addresses, stats, why = mesh.read_router(router(full("r0", "r1"), SPACE, fail=("router",)))
    assert (routers, addresses["s"]["Pending"], stats) == (2, 2, None) and "router QUERY answered 403" in str(why)
    with pytest.raises(ValueError, match="router.node"):
        mesh.read_router(router(({"statusCode": 500}, None), SPACE))


def test_the_router_entity_query_and_its_counters():
    properties, body = mesh.stats_request()
    assert (properties["operation"], properties["entityType"]) == ("QUERY", "org.apache.qpid.dispatch.router")
    assert body["attributeNames"] == [a for unused, unused, a, unused in mesh.ROUTER_METRICS]
    assert len(set(body["attributeNames"])) == len(mesh.ROUTER_METRICS) == 22
    # what is not a counter is left out (a router that gave null, text, a negative number or a bool)
    got = mesh.router_stats(OK, {"attributeNames": ["linkCount", "nodeCount", "addrCount", "linksBlocked", "x"],
                                 "results": [[3, None, "7", -1, True]]})
    assert got == {"linkCount": 3}
    for reply_ in ((OK, {"attributeNames": ["linkCount"], "results": []}),
                   (OK, {"attributeNames": ["linkCount"], "results": [[1], [2]]}),
                   ({"statusCode": 500}, None)):
        with pytest.raises(ValueError):
            mesh.router_stats(*reply_)


def samples(text):
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_probe_series_on_the_metrics_endpoint():
    answers = [router(full("r1", "r2"), SPACE), router(full("r1"), {}),
               router(full("r1"), SPACE, fail=("address", "router")), OSError("connection refused")]

    def query(url, timeout):
        assert (url, timeout) == ("amqp://127.0.0.1:55670", 5)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return mesh.read_router(answer)

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
    assert (values['enmasse_addresses{space="s",phase="Active"}'], values['enmasse_addresses{space="s",phase="Pending"}'],
            values['enmasse_addresses{space="u",phase="Pending"}']) == ("3", "2", "0")
    assert "# TYPE enmasse_addresses gauge" in m.render()
    # qdrouterd's own metrics under its own names and types
    assert (values["qdr_connections_total"], values["qdr_routers_total"], values["qdr_deliveries_ingress_total"],
            values["qdr_accepted_deliveries_total"], values["qdr_links_blocked_total"]) == ("7", "2", "1234", "1200", "0")
    assert len([k for k in values if k.startswith("qdr_")]) == len(mesh.ROUTER_METRICS)
    assert "# TYPE qdr_deliveries_ingress_total counter" in m.render()
    assert "# TYPE qdr_connections_total gauge" in m.render()
    probe.poll()  # no address entities: no space
    values = samples(m.render())
    assert values["enmasse_router_mesh_routers"] == "1" and not [k for k in values if k.startswith("enmasse_addresses")]
    probe.poll()  # the address and router QUERYs refused: the router count stays, the address counts and counters go
    values = samples(m.render())
    assert values["enmasse_router_management_up"] == "1" and not [k for k in values if k.startswith("enmasse_addresses")]
    assert not [k for k in values if k.startswith("qdr_")]
    probe.poll()
    values = samples(m.render())
    assert values["enmasse_router_management_up"] == "0" and "enmasse_router_mesh_routers" not in values
    assert values["enmasse_router_mesh_expected_routers"] == "2" and not [k for k in values if k.startswith("enmasse_addresses")]
    # management down: no counter is kept from the last poll
    assert not [k for k in values if k.startswith("qdr_")]
    assert "# TYPE qdr_connections_total gauge" in m.render()


def test_without_a_probe_no_mesh_series():
    assert "enmasse_router" not in metrics.Metrics().render()


def test_probe_thread_polls_and_stops():
    calls = []

    def query(url, timeout):
        calls.append(url)
        return mesh.read_router(router(full("r1"), {}))

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


def test_the_probe_and_address_info_agree_on_one_router():
    """The same router state read by the probe and by address_info's status
    (standard/service.py address_statuses): the same addresses ready."""
    from types import SimpleNamespace

    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import entities as ent
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as svc

    addresses = [{"address": "q1", "type": "queue"}, {"address": "q2", "type": "queue"},
                 {"address": "a", "type": "anycast"}, {"address": "t", "type": "topic"},
                 {"address": "n", "type": "subscription", "topic": "t"}]
    homes = {"q1": ["b1"], "q2": ["b2"], "a": [], "t": ["b2"], "n": ["b2"]}
    desired = {}
    for a in addresses:
        desired.update(ent.address_entities("s", a, homes[a["address"]], topic_homes=homes.get(a.get("topic"), ())))
    down = {"enmasse/s/autolink/b1/out/q1", "enmasse/s/linkroute/out/t::n"}
    status = dict((n, {"operStatus": "inactive" if n in down else "active"}) for n, e in desired.items()
                  if e["type"] in ent.LINK_KINDS)
    brokers = {"b1": {"s/q1": {}}, "b2": {"s/q2": {}, "s/t": {}}}
    statuses = svc.address_statuses(SimpleNamespace(router_ids=["r0"]), "s", addresses, homes, {}, {}, desired,
                                    {"r0": desired}, {"r0": status}, brokers)
    not_ready = sorted(n for n, st in statuses.items() if not st["ready"])
    assert not_ready == ["n", "q1"]
    rows = [(e["type"], n, status.get(n, {}).get("operStatus")) for n, e in desired.items()]
    assert mesh.count_addresses(rows) == {"s": {"Active": 3, "Pending": len(not_ready)}}


def test_a_part_refused_from_the_first_poll_is_warned_of_once(caplog):
    """The router's counters refused from the start (e.g. management denies the
    router entity) would otherwise never be told: the series just never appear."""
    answers = [router(full("r1"), SPACE, fail=("router",)), router(full("r1"), SPACE, fail=("router",))]
    probe = mesh.MeshProbe("amqp://x:1", 1, query=lambda url, timeout: mesh.read_router(answers.pop(0)))
    with caplog.at_level(logging.WARNING, logger="enmasse-auth-service"):
        probe.poll()
        probe.poll()
    warned = [r.getMessage() for r in caplog.records if "the router's counters" in r.getMessage()]
    assert len(warned) == 1 and "amqp://x:1" in warned[0], warned
    assert probe.stats is None and probe.addresses is not None
