"""Router sampling against a real Qpid Dispatch Router (qdrouterd).

No router is packaged in any registry this project can use: the router is
built from the source archive (routers.find_qdrouterd: ``$QDROUTERD``, else
scripts/build-router.sh); the test skips, saying why, only when none can be had.
"""
import os
import socket
import subprocess
import sys
import time

import pytest

import routers
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import router as metrics_router
from ansible_collections.enmasse.messaging.plugins.module_utils.router import client as router_client

pytestmark = [pytest.mark.integration, pytest.mark.router]


PRODUCER = """
import sys
from proton import Message
from proton.utils import BlockingConnection
url, address, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = BlockingConnection(url, timeout=20)
sender = conn.create_sender(address)
for i in range(n):
    sender.send(Message(body=i))
conn.close()
"""


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def router(tmp_path):
    argv, env, why = routers.find_qdrouterd()
    if why:
        pytest.skip("no AMQP router: %s" % why)
    port = _free_port()
    conf = tmp_path / "qdrouterd.conf"
    conf.write_text("router {\n    mode: standalone\n    id: R-test\n}\n"
                    "listener {\n    host: 127.0.0.1\n    port: %d\n    authenticatePeer: no\n"
                    "    saslMechanisms: ANONYMOUS\n}\n"
                    "address {\n    prefix: demo/\n    distribution: balanced\n}\n" % port)
    log = open(tmp_path / "qdrouterd.log", "w")
    proc = subprocess.Popen(argv + ["-c", str(conf)], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, **env))
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("qdrouterd did not listen on %d" % port)
    if proc.poll() is not None:
        pytest.fail("qdrouterd exited: %s" % (tmp_path / "qdrouterd.log").read_text()[-2000:])
    yield "amqp://127.0.0.1:%d" % port
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_router_address_counters_and_node_row(router):
    from proton.utils import BlockingConnection

    n = 7
    consumer = BlockingConnection(router)
    try:
        # multi-tenant style address: <space>/<address>
        receiver = consumer.create_receiver("demo/orders", credit=n + 1)
        # the producer is its own process: proton's Python binding is not
        # thread-safe (a sending thread beside the receiving one crashed the
        # interpreter now and then), and a blocking send waits for the
        # consumer's settlement, so it cannot share this thread either
        sender = subprocess.Popen([sys.executable, "-c", PRODUCER, router, "demo/orders", str(n)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for unused in range(n):
            receiver.receive(timeout=20)
            receiver.accept()
        # keep this connection's I/O going (the last accept must reach the
        # router) until the producer has its settlements and exits
        consumer.wait(lambda: sender.poll() is not None, timeout=20, msg="the producer to finish")
        out, unused = sender.communicate(timeout=20)
        assert sender.returncode == 0, out.decode(errors="replace")[-2000:]

        mgmt = router_client.RouterManagement(router, timeout=10)
        try:
            rows, nodes, unused = metrics_router.sample_router(mgmt.call, "test-infra", spaces=["demo"])
        finally:
            mgmt.close()
    finally:
        consumer.close()

    orders = [r for r in rows if r["address"] == "orders"]
    assert len(orders) == 1, rows
    row = orders[0]
    assert row["address_space"] == "demo"          # tenant prefix split off
    assert row["node"] == "R-test" and row["node_kind"] == "router"
    assert row["deliveries_ingress"] == n
    assert row["deliveries_egress"] == n
    assert row["consumer_count"] == 1
    assert row["address_type"] == "anycast"
    assert len(nodes) == 1
    node = nodes[0]
    assert node["node"] == "R-test" and node["address_space"] == "_infra"
    assert node["memory_used"] > 0 and node["connections"] >= 2
