"""Metrics sampling and the Parquet writer (plugins/module_utils/metrics/, model/schema.py).

The Artemis replies below were recorded from a live Artemis 2.40.0 (Jolokia
bulk read of ``metrics_artemis.artemis_requests``) with a queue ``q1`` (10 sent, 4
consumed, one consumer attached), a topic ``t1`` with a durable
subscription ``s1`` (3 published) and the default DLQ/ExpiryQueue.

No router runs on the build machine, so the router replies are built by hand
in the shape AMQP management documents and qdrouterd 1.19 answers
(``attributeNames`` + ``results``, ``statusCode``/``statusDescription``
application properties, attributes from its qdrouter.json schema); a small
proton server answers them over a real AMQP connection to test the client.
"""
import datetime
import json
import os

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import client as artemis_client  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils import errors  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import artemis as metrics_artemis  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import collect as metrics_collect  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import router as metrics_router  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import store as metrics_store  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.router import protocol as router_protocol  # noqa: E402
from ansible_collections.enmasse.messaging.plugins.module_utils.model import schema as model_schema  # noqa: E402
from router_replies import ROUTER_REPLIES, fake_call  # noqa: E402

pytestmark = pytest.mark.unit

UTC = datetime.timezone.utc
TS = datetime.datetime(2025, 3, 4, 10, 15, 30, 123456, tzinfo=UTC)

Q = 'org.apache.activemq.artemis:address="%s",broker="b1",component=addresses,queue="%s",routing-type="%s",subcomponent=queues'
A = 'org.apache.activemq.artemis:address="%s",broker="b1",component=addresses'


def _q(name, address, routing, added, acked, count, consumers, psize):
    return {Q % (address, name, routing.lower()): {
        "Name": name, "Address": address, "RoutingType": routing, "Temporary": False,
        "MessagesAdded": added, "MessagesAcknowledged": acked, "MessageCount": count,
        "ConsumerCount": consumers, "PersistentSize": psize}}


def _a(name, routing, size, routed, unrouted, internal=False):
    return {A % name: {"Address": name, "RoutingTypes": [routing], "Internal": internal, "Temporary": False,
                       "AddressSize": size, "RoutedMessageCount": routed, "UnRoutedMessageCount": unrouted}}


def recorded_replies():
    queues, addresses = {}, {}
    for q in (_q("ExpiryQueue", "ExpiryQueue", "ANYCAST", 0, 0, 0, 0, 0),
              _q("DLQ", "DLQ", "ANYCAST", 0, 0, 0, 0, 0),
              _q("s1", "t1", "MULTICAST", 3, 0, 3, 0, 51),
              _q("$sys.mqtt.sessions", "$sys.mqtt.sessions", "ANYCAST", 0, 0, 0, 0, 0),
              _q("q1", "q1", "ANYCAST", 10, 4, 6, 1, 696)):
        queues.update(q)
    for a in (_a("activemq.notifications", "MULTICAST", 0, 0, 8),
              _a("DLQ", "ANYCAST", 0, 0, 0),
              _a("t1", "MULTICAST", 1323, 3, 0),
              _a("q1", "ANYCAST", 3240, 10, 0),
              _a("ExpiryQueue", "ANYCAST", 0, 0, 0),
              _a("$sys.mqtt.sessions", "ANYCAST", 0, 0, 0, internal=True)):
        addresses.update(a)
    broker = {"AddressMemoryUsage": 4563, "MaxDiskUsage": 90, "ConnectionCount": 1,
              "GlobalMaxSize": 268435456, "UptimeMillis": 294602, "TotalConsumerCount": 1,
              "DiskStoreUsage": 0.6951097058830966}
    return [(queues, None), (addresses, None), (broker, None), ("/nonexistent/instance", None)]


CONN = {"address_space": "demo", "type": "brokered", "broker_name": "b1"}


def by_address(rows):
    return dict((r["address"], r) for r in rows)


# ------------------------------------------------------------------ Artemis
def test_artemis_requests_are_one_bulk_of_wildcard_reads():
    reqs = metrics_artemis.artemis_requests("b1")
    assert [r["type"] for r in reqs] == ["read"] * 4
    assert reqs[0]["mbean"] == artemis_client.all_queues_pattern("b1")
    assert reqs[1]["mbean"] == artemis_client.all_addresses_pattern("b1")
    assert reqs[2]["mbean"] == artemis_client.broker_mbean("b1")
    assert set(["MessagesAdded", "MessagesAcknowledged", "MessageCount", "ConsumerCount",
                "PersistentSize"]) <= set(reqs[0]["attribute"])
    assert set(["AddressSize", "RoutedMessageCount"]) <= set(reqs[1]["attribute"])
    assert set(["AddressMemoryUsage", "GlobalMaxSize", "DiskStoreUsage", "MaxDiskUsage",
                "ConnectionCount", "UptimeMillis"]) <= set(reqs[2]["attribute"])
    assert reqs[3]["path"] == "artemis.instance"


def test_parse_artemis_rows_per_queue_and_topic():
    rows, nodes = metrics_artemis.parse_artemis(recorded_replies(), CONN, "prod", TS, disk_total=1000)
    got = by_address(rows)
    # internal and management addresses are not the tenant's
    assert sorted(got) == ["DLQ", "ExpiryQueue", "q1", "s1", "t1"]
    q1 = got["q1"]
    assert (q1["address_type"], q1["messages_added"], q1["messages_acknowledged"], q1["message_count"],
            q1["consumer_count"], q1["persistent_size"], q1["address_size"], q1["links"]) == \
        ("queue", 10, 4, 6, 1, 696, 3240, 1)
    assert (q1["ts"], q1["infra"], q1["address_space"], q1["node"], q1["node_kind"]) == \
        (TS, "prod", "demo", "b1", "broker")
    # router counters are not measured by a broker: null, not 0
    assert q1["deliveries_ingress"] is None and q1["deliveries_egress"] is None
    assert got["DLQ"]["address_type"] == "deadletter"
    s1 = got["s1"]
    assert (s1["address_type"], s1["messages_added"], s1["message_count"], s1["persistent_size"],
            s1["address_size"]) == ("subscription", 3, 3, 51, None)
    t1 = got["t1"]
    # a topic row carries what was published (routed + unrouted) and the
    # address size; what is stored is in its subscriptions' rows
    assert (t1["address_type"], t1["messages_added"], t1["messages_acknowledged"], t1["message_count"],
            t1["persistent_size"], t1["address_size"]) == ("topic", 3, 0, 0, 0, 1323)
    assert nodes == [{
        "ts": TS, "infra": "prod", "address_space": "demo", "node": "b1", "node_kind": "broker",
        "memory_used": 4563, "memory_max": 268435456, "disk_used": 695, "disk_max": 900,
        "connections": 1, "links": 1, "uptime_ms": 294602}]


def test_counters_are_cumulative_as_reported_not_deltas():
    """Rates are the planner's job: two samples give the counters as they are."""
    first, unused = metrics_artemis.parse_artemis(recorded_replies(), CONN, "prod", TS)
    later = recorded_replies()
    key = Q % ("q1", "q1", "anycast")
    later[0][0][key].update(MessagesAdded=25, MessagesAcknowledged=20, MessageCount=5)
    second, unused = metrics_artemis.parse_artemis(later, CONN, "prod", TS + datetime.timedelta(minutes=1))
    a, b = by_address(first)["q1"], by_address(second)["q1"]
    assert (b["messages_added"] - a["messages_added"], b["messages_acknowledged"] - a["messages_acknowledged"]) == (15, 16)
    assert b["message_count"] == 5


def test_parse_artemis_uses_ledger_types_and_plans(tmp_path):
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"version": 1, "address_space": {"name": "demo"}, "addresses": {
        "q1": {"address": "q1", "type": "deadletter", "plan": "brokered-deadletter"},
        "t1": {"address": "t1", "type": "topic", "plan": "brokered-topic"},
        "s1": {"address": "s1", "type": "subscription", "plan": "brokered-subscription", "topic": "t1"}}}))
    info = metrics_artemis.address_info_from_ledger(str(ledger))
    rows, unused = metrics_artemis.parse_artemis(recorded_replies(), CONN, "prod", TS, address_info=info)
    got = by_address(rows)
    assert (got["q1"]["address_type"], got["q1"]["plan"]) == ("deadletter", "brokered-deadletter")
    assert got["t1"]["plan"] == "brokered-topic" and got["s1"]["plan"] == "brokered-subscription"
    assert got["DLQ"]["plan"] is None


@pytest.mark.parametrize("content", ["not json", "[]", '{"addresses": 3}'])
def test_unreadable_ledger_is_no_metadata(tmp_path, content):
    p = tmp_path / "l.json"
    p.write_text(content)
    assert metrics_artemis.address_info_from_ledger(str(p)) == {}
    assert metrics_artemis.address_info_from_ledger(str(tmp_path / "missing.json")) == {}
    assert metrics_artemis.address_info_from_ledger(None) == {}


def test_empty_broker_is_not_an_error():
    err = artemis_client.JolokiaError("No MBean with pattern ... found", status=404)
    replies = [(None, err), (None, err)] + recorded_replies()[2:]
    rows, nodes = metrics_artemis.parse_artemis(replies, CONN, "prod", TS)
    assert rows == [] and len(nodes) == 1


def test_broker_error_raises():
    replies = recorded_replies()
    replies[2] = (None, artemis_client.JolokiaError("refused", status=403))
    with pytest.raises(artemis_client.JolokiaError):
        metrics_artemis.parse_artemis(replies, CONN, "prod", TS)


def test_disk_is_null_when_the_instance_is_not_on_this_host():
    unused, nodes = metrics_artemis.parse_artemis(recorded_replies(), CONN, "prod", TS)
    assert nodes[0]["disk_used"] is None and nodes[0]["disk_max"] is None


def test_disk_from_the_instance_filesystem(tmp_path):
    replies = recorded_replies()
    replies[3] = (str(tmp_path), None)
    unused, nodes = metrics_artemis.parse_artemis(replies, CONN, "prod", TS)
    st = os.statvfs(str(tmp_path))
    total = st.f_blocks * st.f_frsize
    assert nodes[0]["disk_max"] == int(total * 0.9)
    assert nodes[0]["disk_used"] == int(0.6951097058830966 * total)


def test_shared_broker_node_is_infra():
    unused, nodes = metrics_artemis.parse_artemis(recorded_replies(), dict(CONN, type="standard"), "prod", TS)
    assert nodes[0]["address_space"] == "_infra"


# ------------------------------------------------------------------- router

def test_query_request_follows_amqp_management():
    props, body = router_protocol.query_request("org.apache.qpid.dispatch.router.address", ["key"], 500, 250)
    assert props == {"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                     "entityType": "org.apache.qpid.dispatch.router.address", "offset": 500, "count": 250}
    assert body == {"attributeNames": ["key"]}


def test_parse_query_reply():
    rows = router_protocol.parse_query_reply({"statusCode": 200}, {"attributeNames": ["a", "b"], "results": [[1, None], [2, "x"]]})
    assert rows == [{"a": 1, "b": None}, {"a": 2, "b": "x"}]
    assert router_protocol.parse_query_reply({"statusCode": 200}, {"attributeNames": ["a"], "results": []}) == []
    with pytest.raises(router_protocol.RouterManagementError) as e:
        router_protocol.parse_query_reply({"statusCode": 403, "statusDescription": "Forbidden"}, None, "t")
    assert e.value.status == 403 and "Forbidden" in str(e.value)
    with pytest.raises(router_protocol.RouterManagementError):
        router_protocol.parse_query_reply({"statusCode": 200}, ["not", "a", "map"])


def test_query_all_pages_with_offset_and_count():
    log = []
    call = fake_call(ROUTER_REPLIES, log)
    rows = router_protocol.query_all(call, "org.apache.qpid.dispatch.router.address", ["key"], page=4)
    assert [r["key"] for r in rows] == [r[0] for r in ROUTER_REPLIES["org.apache.qpid.dispatch.router.address"][1]]
    assert [(p["offset"], p["count"]) for p, unused in log] == [(0, 4), (4, 4), (8, 4)]


@pytest.mark.parametrize("key,expected", [
    ("M0orders", ("M", 0, "orders")), ("M1t/jobs", ("M", 1, "t/jobs")), ("Morders", ("M", 0, "orders")),
    ("L$management", ("L", None, "$management")), ("Cevents", ("C", None, "events")), ("", (None, None, "")),
])
def test_parse_address_key(key, expected):
    assert metrics_router.parse_address_key(key) == expected


def test_router_rows():
    call = fake_call(ROUTER_REPLIES)
    rows, nodes, dropped = metrics_router.sample_router(call, "prod", ["tenant-a", "tenant-b"], clock=lambda: TS)
    got = dict(((r["address_space"], r["address"]), r) for r in rows)
    assert sorted(got) == [("tenant-a", "jobs"), ("tenant-a", "orders"), ("tenant-b", "news")]
    orders = got[("tenant-a", "orders")]
    assert (orders["address_type"], orders["deliveries_ingress"], orders["deliveries_egress"],
            orders["consumer_count"], orders["links"], orders["message_count"]) == ("anycast", 500, 480, 2, 3, 6)
    assert (orders["node"], orders["node_kind"], orders["ts"], orders["infra"]) == ("router-0", "router", TS, "prod")
    assert orders["messages_added"] is None and orders["persistent_size"] is None
    jobs = got[("tenant-a", "jobs")]
    # client deliveries only: the broker side (route container) is the broker's
    assert (jobs["address_type"], jobs["deliveries_ingress"], jobs["deliveries_egress"],
            jobs["consumer_count"], jobs["links"]) == ("queue", 100, 90, 3, 2)
    assert got[("tenant-b", "news")]["address_type"] == "multicast"
    assert dropped == 2  # tenant-z/x and plain
    assert nodes == [{"ts": TS, "infra": "prod", "address_space": "_infra", "node": "router-0",
                      "node_kind": "router", "memory_used": 73400320, "memory_max": None,
                      "disk_used": None, "disk_max": None, "connections": 4, "links": 9,
                      "uptime_ms": 3600000}]


def test_router_addresses_without_tenant_go_to_the_default_space():
    rows, nodes, dropped = metrics_router.sample_router(fake_call(ROUTER_REPLIES), "prod", ["tenant-a"],
                                                        default_space="shared", memory_max=2 ** 30, clock=lambda: TS)
    spaces = sorted(set((r["address_space"], r["address"]) for r in rows))
    assert ("shared", "plain") in spaces and ("shared", "tenant-b/news") in spaces
    assert dropped == 0 and nodes[0]["memory_max"] == 2 ** 30


def test_router_flavor_auto_falls_back_to_skupper_router():
    sk = dict((k.replace("org.apache.qpid.dispatch", "io.skupper.router"), v) for k, v in ROUTER_REPLIES.items())
    log = []
    rows, unused1, unused2 = metrics_router.sample_router(fake_call(sk, log), "prod", ["tenant-a"], clock=lambda: TS)
    assert log[0][0]["entityType"] == "org.apache.qpid.dispatch.router"
    assert all(p["entityType"].startswith("io.skupper.router") for p, unused in log[1:])
    assert len(rows) == 2
    with pytest.raises(router_protocol.RouterManagementError):
        metrics_router.sample_router(fake_call(sk), "prod", [], flavor="qdrouterd")


# -------------------------------------------------------------- the writer
def test_arrow_schema_matches_the_documented_types():
    s = metrics_store.arrow_schema("addresses")
    assert s.field("ts").type == pa.timestamp("us", tz="UTC")
    assert s.field("messages_added").type == pa.int64()
    assert s.field("consumer_count").type == pa.int32() and s.field("links").type == pa.int32()
    n = metrics_store.arrow_schema("nodes")
    assert n.names == ["ts", "infra", "address_space", "node", "node_kind", "memory_used", "memory_max",
                       "disk_used", "disk_max", "connections", "links", "uptime_ms"]
    assert n.field("connections").type == pa.int32() and n.field("uptime_ms").type == pa.int64()


def _rows():
    rows, nodes = metrics_artemis.parse_artemis(recorded_replies(), CONN, "prod", TS, disk_total=1000)
    return rows, nodes


def test_write_rows_partitions_and_schema(tmp_path):
    rows, nodes = _rows()
    paths = metrics_store.write_rows(str(tmp_path), "addresses", rows) + metrics_store.write_rows(str(tmp_path), "nodes", nodes)
    assert len(paths) == 2
    for p, kind in zip(paths, ("addresses", "nodes")):
        rel = os.path.relpath(p, str(tmp_path)).split(os.sep)
        assert rel[:3] == [kind, "date=2025-03-04", "address_space=demo"]
        assert rel[3].startswith("part-20250304T101530123456Z-") and rel[3].endswith(".parquet")
        # docs/metrics-schema.md: address_space is in the file and in the path
        assert pq.read_schema(p).remove_metadata() == metrics_store.arrow_schema(kind)
    # nothing half-written is left behind
    leftovers = [f for unused1, unused2, files in os.walk(str(tmp_path)) for f in files if f.startswith(".")]
    assert leftovers == []
    table = pq.read_table(paths[0])
    assert sorted(table.column("address").to_pylist()) == ["DLQ", "ExpiryQueue", "q1", "s1", "t1"]
    # read as a dataset, every column of the schema is there, types included
    for kind in ("addresses", "nodes"):
        d = ds.dataset(str(tmp_path / kind), format="parquet", partitioning="hive")
        schema = d.schema
        for field in metrics_store.arrow_schema(kind):
            assert schema.field(field.name).type == field.type, field.name
        assert set(d.to_table().column("address_space").to_pylist()) == {"demo"}


def test_second_write_appends(tmp_path):
    rows, nodes = _rows()
    metrics_store.write_rows(str(tmp_path), "addresses", rows)
    later = [dict(r, ts=TS + datetime.timedelta(minutes=1)) for r in rows]
    metrics_store.write_rows(str(tmp_path), "addresses", later)
    d = ds.dataset(str(tmp_path / "addresses"), format="parquet", partitioning="hive")
    t = d.to_table()
    assert t.num_rows == 2 * len(rows)
    assert len(set(t.column("ts").to_pylist())) == 2


def test_rows_across_midnight_go_to_two_date_partitions(tmp_path):
    rows, unused = _rows()
    late = datetime.datetime(2025, 3, 4, 23, 59, 59, tzinfo=UTC)
    batch = [dict(rows[0], ts=late), dict(rows[1], ts=late + datetime.timedelta(seconds=2))]
    paths = metrics_store.write_rows(str(tmp_path), "addresses", batch)
    assert sorted(p.split(os.sep)[-3] for p in paths) == ["date=2025-03-04", "date=2025-03-05"]


def test_store_uri(tmp_path):
    fs, root = metrics_store.open_store("file://" + str(tmp_path))
    assert root == str(tmp_path) and fs.type_name == "local"
    with pytest.raises(errors.MetricsError):
        metrics_store.open_store("nosuchscheme://x/y")


def test_unknown_field_is_a_programming_error():
    with pytest.raises(KeyError):
        model_schema.row("nodes", address="x")


# ------------------------------------------------------------ whole runs
class FakeJolokia(object):
    def __init__(self, replies):
        self.replies = replies

    def bulk(self, requests, raise_errors=True):
        assert [r["mbean"] for r in requests] == [r["mbean"] for r in metrics_artemis.artemis_requests("b1")]
        return self.replies


@pytest.fixture
def fake_broker(monkeypatch, tmp_path):
    spaces = tmp_path / "spaces"
    spaces.mkdir()
    (spaces / "demo.json").write_text(json.dumps({
        "address_space": "demo", "type": "brokered", "management_url": "http://127.0.0.1:1/console/jolokia",
        "broker_name": "b1", "management_user": "u", "management_password": "p",
        "ledger_path": str(tmp_path / "ledger.json")}))
    monkeypatch.setattr(artemis_client, "client_for", lambda conn, timeout=None: FakeJolokia(recorded_replies()))
    return {"spaces_dir": str(spaces), "store": str(tmp_path / "store"), "infra": "prod"}


def test_run_writes_both_record_kinds(fake_broker):
    res = metrics_collect.run(fake_broker)
    assert res["changed"] and not res["failed"]
    assert res["samples"] == {"addresses": 5, "nodes": 1} == res["written"]
    assert res["router"] == "not configured"
    assert res["summary"]["address_spaces"]["demo"] == {"addresses": 5, "messages": 9, "consumers": 1,
                                                        "persistent_bytes": 747}
    assert len(res["files"]) == 2 and all(os.path.exists(f) for f in res["files"])


def test_run_check_mode_writes_nothing(fake_broker):
    res = metrics_collect.run(fake_broker, check_mode=True)
    assert res["samples"] == {"addresses": 5, "nodes": 1}
    assert res["written"] == {"addresses": 0, "nodes": 0} and res["files"] == []
    assert not os.path.exists(fake_broker["store"])


def test_run_failed_router_still_writes_the_brokers(fake_broker, monkeypatch):
    def refuse(*a, **k):
        raise router_protocol.RouterManagementError("cannot open AMQP management at amqp://x: refused")
    monkeypatch.setattr(metrics_collect, "RouterManagement", refuse)
    res = metrics_collect.run(dict(fake_broker, router_url="amqp://x"))
    assert res["router"] == "failed" and res["failed"]
    assert res["written"] == {"addresses": 5, "nodes": 1}
    assert "refused" in res["msg"]
    res = metrics_collect.run(dict(fake_broker, router_url="amqp://x", fail_on_source_error=False))
    assert not res["failed"] and len(res["errors"]) == 1


def test_run_configuration_errors(fake_broker, tmp_path):
    with pytest.raises(errors.ConfigError):
        metrics_collect.run(dict(fake_broker, address_space="demo", address_spaces=["demo"]))
    with pytest.raises(errors.ConfigError) as e:
        metrics_collect.run(dict(fake_broker, address_spaces=["demo", "other"], management_url="http://x"))
    assert "management_url" in str(e.value)
    with pytest.raises(errors.ConfigError) as e:
        metrics_collect.run(dict(fake_broker, spaces_dir=str(tmp_path / "empty")))
    assert "nothing to sample" in str(e.value)
    with pytest.raises(errors.ConfigError) as e:
        metrics_collect.run(dict(fake_broker, router_url="amqp://x", router_flavor="other"))


_DOC_TYPES = (("timestamp", pa.timestamp("us", tz="UTC")), ("string", pa.string()), ("long", pa.int64()),
              ("int", pa.int32()))


def documented_schema(kind):
    """The ``kind`` table of docs/metrics-schema.md (column, type) as a
    pyarrow schema: the published contract, written independently of
    model/schema.py (which both the collector and the generator use)."""
    page = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "metrics-schema.md")
    with open(page) as f:
        text = f.read()
    section = text.split("## `%s` rows" % kind, 1)[1].split("\n## ", 1)[0]
    fields = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        arrow = [t for word, t in _DOC_TYPES if cells[1].startswith(word)]
        assert arrow, "docs/metrics-schema.md: unknown type %r of %s" % (cells[1], cells[0])
        fields.append(pa.field(cells[0].strip("`"), arrow[0], nullable=True))
    return pa.schema(fields)


@pytest.mark.parametrize("kind", ["addresses", "nodes"])
def test_the_store_schema_is_the_documented_one(kind):
    """What the collector writes (metrics_store.arrow_schema, from
    model/schema.py) is the table of docs/metrics-schema.md: names, order and
    types."""
    assert len(documented_schema(kind)) >= 12
    assert metrics_store.arrow_schema(kind).equals(documented_schema(kind)), (
        kind, metrics_store.arrow_schema(kind), documented_schema(kind))


def test_files_match_the_synthetic_generator_schema(tmp_path):
    """The files spark_jobs/generate_metrics.py writes (the planner's test
    data) have the documented file schema (docs/metrics-schema.md, not the
    model's table both sides are built from): names, order and types."""
    import sys
    pytest.importorskip("numpy")
    jobs = os.path.join(os.path.dirname(__file__), "..", "..", "spark_jobs")
    sys.path.insert(0, jobs)
    try:
        import generate_metrics as gen
    finally:
        sys.path.remove(jobs)
    gen.generate(str(tmp_path / "store"), n_addresses=4, n_spaces=3, days=0.05)
    for kind in ("addresses", "nodes"):
        files = sorted((tmp_path / "store" / kind).rglob("*.parquet"))
        assert files, kind
        for f in files:
            assert pq.read_schema(str(f)).remove_metadata().equals(documented_schema(kind)), (kind, f)
