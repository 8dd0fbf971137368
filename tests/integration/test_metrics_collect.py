"""metrics_collect (and the enmasse-collect script) against a real Artemis.

A queue gets N messages over AMQP, M are consumed; the module's Parquet,
read back with pyarrow, must say messages_added == N, messages_acknowledged
== M, message_count == N - M, in date=/address_space= partitions; a second
collection adds files next to the first ones.
"""
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import helpers  # noqa: E402

from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import store as metrics_store  # noqa: E402

pytestmark = pytest.mark.integration

N, M = 20, 7
QUEUE = "metrics-orders"
TOPIC = "metrics-events"
SUBSCRIPTION = "metrics-audit"


def _wait_for(fn, expected, timeout=15):
    deadline = time.monotonic() + timeout
    value = fn()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.2)
        value = fn()
    return value


@pytest.fixture
def traffic(space):
    """A queue with N sent and M consumed, and a topic with a durable
    subscription holding N messages."""
    broker = space.broker
    broker.create_by_hand(QUEUE)
    broker.create_by_hand(TOPIC, routing_type="MULTICAST", queue=False)
    client, mbean = broker.jolokia(), helpers.broker_mbean(broker.name)
    client.execute(mbean, "createQueue(java.lang.String,boolean)",
                   json.dumps({"name": SUBSCRIPTION, "address": TOPIC, "routing-type": "MULTICAST",
                               "durable": True}), True)
    conn = helpers.connect(broker.amqp_url())
    try:
        helpers.send(conn, QUEUE, count=N, durable=True)
        helpers.send(conn, TOPIC, count=N, durable=True)
        rcv = conn.create_receiver(QUEUE, credit=M)
        for _unused in range(M):
            rcv.receive(timeout=10)
            rcv.accept()
        rcv.close()
    finally:
        conn.close()
    # acknowledgements are processed asynchronously by the broker
    assert _wait_for(lambda: broker.queue_attribute(QUEUE, "MessagesAcknowledged"), M) == M
    return space


def _read(store, kind):
    return ds.dataset(os.path.join(store, kind), format="parquet", partitioning="hive").to_table()


def _rows(table, **match):
    return [r for r in table.to_pylist() if all(r[k] == v for k, v in match.items())]


def test_collect_reads_back_with_pyarrow(traffic, tmp_path):
    store = str(tmp_path / "store")
    res = traffic.run("metrics_collect", store=store, infra="itest")
    assert not res.failed, res.result
    assert res.changed
    assert res["router"] == "not configured"
    assert res["written"]["nodes"] == 1 and res["written"]["addresses"] >= 3

    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    for kind in ("addresses", "nodes"):
        part = os.path.join(store, kind, "date=%s" % today, "address_space=%s" % traffic.name)
        files = [f for f in os.listdir(part) if f.endswith(".parquet")]
        assert len(files) == 1, os.listdir(part)
        assert not [f for f in os.listdir(part) if f.startswith(".")], "temporary files left behind"
        stored = pq.read_schema(os.path.join(part, files[0])).remove_metadata()
        assert stored == metrics_store.arrow_schema(kind)

    addresses = _read(store, "addresses")
    q = _rows(addresses, address=QUEUE)
    assert len(q) == 1
    q = q[0]
    assert (q["messages_added"], q["messages_acknowledged"], q["message_count"]) == (N, M, N - M)
    assert (q["address_type"], q["node"], q["node_kind"], q["infra"], q["address_space"]) == \
        ("queue", traffic.broker.name, "broker", "itest", traffic.name)
    assert q["persistent_size"] > 0 and q["consumer_count"] == 0
    assert q["deliveries_ingress"] is None
    sub = _rows(addresses, address=SUBSCRIPTION)[0]
    assert (sub["address_type"], sub["messages_added"], sub["message_count"]) == ("subscription", N, N)
    topic = _rows(addresses, address=TOPIC)[0]
    assert (topic["address_type"], topic["messages_added"], topic["message_count"]) == ("topic", N, 0)
    # Artemis' own addresses are not samples of the tenant
    assert not [r for r in addresses.to_pylist() if r["address"].startswith(("activemq.", "$sys."))]

    node = _read(store, "nodes").to_pylist()
    assert len(node) == 1
    node = node[0]
    assert node["node"] == traffic.broker.name and node["address_space"] == traffic.name
    assert node["memory_max"] > 0 and node["uptime_ms"] > 0
    # the instance is on this host: disk used and the broker's disk limit
    # (DiskStoreUsage stays 0 until Artemis' first disk scan after start)
    assert node["disk_max"] > 0 and 0 <= node["disk_used"] <= node["disk_max"]


def test_second_collection_appends(traffic, tmp_path):
    store = str(tmp_path / "store")
    first = traffic.run("metrics_collect", store=store, infra="itest")
    assert not first.failed, first.result
    conn = helpers.connect(traffic.broker.amqp_url())
    try:
        helpers.send(conn, QUEUE, count=5, durable=True)
    finally:
        conn.close()
    second = traffic.run("metrics_collect", store=store, infra="itest")
    assert not second.failed, second.result
    assert not set(first["files"]) & set(second["files"])
    assert all(os.path.exists(f) for f in first["files"] + second["files"])
    q = sorted(_rows(_read(store, "addresses"), address=QUEUE), key=lambda r: r["ts"])
    assert [r["messages_added"] for r in q] == [N, N + 5]
    assert q[0]["ts"] < q[1]["ts"]
    assert len(_read(store, "nodes")) == 2


def test_check_mode_writes_nothing(traffic, tmp_path):
    store = str(tmp_path / "store")
    res = traffic.run("metrics_collect", check_mode=True, store=store)
    assert not res.failed, res.result
    assert res["samples"]["addresses"] >= 3 and res["written"] == {"addresses": 0, "nodes": 0}
    assert not os.path.exists(store)
    assert res["summary"]["address_spaces"][traffic.name]["messages"] == (N - M) + N


def test_unreachable_broker_fails_with_the_reason(space, tmp_path):
    res = space.run("metrics_collect", store=str(tmp_path / "s"), management_url="http://127.0.0.1:1/console/jolokia")
    assert res.failed
    assert "cannot reach Artemis management" in res.msg
    assert not os.path.exists(str(tmp_path / "s"))


def test_collector_script_in_the_role_layout(traffic, tmp_path):
    """roles/capacity_planner installs enmasse-collect in lib/ beside the
    module_utils the job_bundle lookup returns (under ansible_collections/) and
    runs it with PYTHONPATH=lib/; the script must do what the module does."""
    from ansible_collections.enmasse.messaging.plugins.lookup import job_bundle
    install = tmp_path / "install"
    for e in job_bundle.bundle(root=helpers.REPO, parts=("collector",)):
        dest = install / e["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(e["content"])
    script = str(install / "enmasse-collect")
    shutil.copy(os.path.join(helpers.REPO, "roles", "capacity_planner", "files", "enmasse-collect"), script)
    spaces = tmp_path / "spaces"
    spaces.mkdir()
    shutil.copy(traffic.connection_file, str(spaces / ("%s.json" % traffic.name)))
    config = tmp_path / "collect.json"
    store = str(tmp_path / "store")
    config.write_text(json.dumps({"store": store, "infra": "itest", "spaces_dir": str(spaces)}))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(install)        # only the bundle: nothing from the checkout
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    proc = subprocess.run([sys.executable, script, "--config", str(config)], capture_output=True, check=False, text=True,
                          timeout=120, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["written"]["nodes"] == 1 and out["files"] == 2
    q = _rows(_read(store, "addresses"), address=QUEUE)[0]
    assert (q["messages_added"], q["messages_acknowledged"], q["message_count"]) == (N, M, N - M)
    # a router that is not there: the brokers' samples are still written, exit 1
    proc = subprocess.run([sys.executable, script, "--config", str(config), "--router-url", "amqp://127.0.0.1:1"],
                          capture_output=True, check=False, text=True, timeout=120, env=env, cwd=str(tmp_path))
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 1 and out["router"] == "failed" and out["written"]["nodes"] == 1
