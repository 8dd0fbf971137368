"""Router sampling against a real Qpid Dispatch Router (qdrouterd).

No router is packaged in any registry this project can use: the router is
built from the source archive (routers.find_qdrouterd: ``$QDROUTERD``, else
scripts/build-router.sh); the test skips, saying why, only when none can be had.
"""
import contextlib
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


@contextlib.contextmanager
def _qdrouterd(tmp_path, conf_text):
    """A qdrouterd with ``conf_text`` (``%(port)d``: a free port); yields the port."""
    argv, env, why = routers.find_qdrouterd()
    if why:
        pytest.skip("no AMQP router: %s" % why)
    port = _free_port()
    conf = tmp_path / "qdrouterd.conf"
    conf.write_text(conf_text % {"port": port})
    log = open(tmp_path / "qdrouterd.log", "w")
    proc = subprocess.Popen(argv + ["-c", str(conf)], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, **env))
    try:
        deadline = time.time() + 20
        while time.time() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            log.flush()
            pytest.fail("qdrouterd did not listen on %d: %s" % (port, (tmp_path / "qdrouterd.log").read_text()[-2000:]))
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def router(tmp_path):
    with _qdrouterd(tmp_path, "router {\n    mode: standalone\n    id: R-test\n}\n"
                    "listener {\n    host: 127.0.0.1\n    port: %(port)d\n    authenticatePeer: no\n"
                    "    saslMechanisms: ANONYMOUS\n}\n"
                    "address {\n    prefix: demo/\n    distribution: balanced\n}\n") as port:
        yield "amqp://127.0.0.1:%d" % port


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


MANAGEMENT_CONF = """router {
    mode: standalone
    id: R-mgmt
}
sslProfile {
    name: management-tls
    caCertFile: %(ca)s
    certFile: %(cert)s
    privateKeyFile: %(key)s
}
listener {
    name: management
    host: 127.0.0.1
    port: %%(port)d
    role: normal
    sslProfile: management-tls
    requireSsl: yes
    authenticatePeer: yes
    saslMechanisms: EXTERNAL
}
"""


def _role_collect_config(tmp_path, url, tls):
    """collect.json as roles/capacity_planner's config.yml writes it (check
    mode with --diff on localhost: tests/unit/test_capacity_planner_router_tls.py)."""
    import importlib.util
    import json
    spec = importlib.util.spec_from_file_location("role_play", os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "role_play.py"))
    role_play = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(role_play)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    return json.loads(role_play.check_mode_content(
        tmp_path, "capacity_planner", "config",
        {"capacity_planner_config_dir": str(conf_dir), "capacity_planner_model": {},
         "capacity_planner_router_url": url, "capacity_planner_router_tls": tls},
        "Write the collector configuration"))


def test_the_collector_samples_the_management_listener_with_the_roles_tls(tmp_path):
    """The router role's management listener (TLS, a client certificate of
    its CA, SASL EXTERNAL; its certificate names the host, not 127.0.0.1)
    sampled with the options capacity_planner_router_tls gives collect.json:
    the router is sampled. Without the client certificate, and with the
    host name checked, it is not."""
    from standard_env import LocalCA

    from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import collect

    ca = LocalCA(str(tmp_path / "ca"), name="router management CA")
    cert, key = ca.issue("management-server", hosts=("router-host.example",))
    client_cert, client_key = ca.issue("management-client", hosts=("root",), client=True)
    conf = MANAGEMENT_CONF % {"ca": ca.cert_file, "cert": cert, "key": key}  # the port: _qdrouterd's
    with _qdrouterd(tmp_path, conf) as port:
        url = "amqps://127.0.0.1:%d" % port
        tls = {"ca_file": ca.cert_file, "cert_file": client_cert, "key_file": client_key}
        spaces = tmp_path / "spaces"
        spaces.mkdir()
        options = _role_collect_config(tmp_path, url, tls)
        options.update(store=str(tmp_path / "store"), spaces_dir=str(spaces), router_timeout=10)

        result = collect.run(options)
        assert result["router"] == "sampled", result["errors"]
        assert [s["node"] for s in result["sources"]] == ["R-mgmt"]
        assert result["written"]["nodes"] == 1 and result["files"]

        no_cert = {k: v for k, v in options.items() if k not in ("router_cert_file", "router_key_file")}
        no_cert["router_sasl_mechanisms"] = "ANONYMOUS"
        refused = collect.run(no_cert)
        assert refused["router"] == "failed" and refused["failed"], refused
        checked = dict(options, router_verify_hostname=True)
        assert collect.run(checked)["router"] == "failed"  # 127.0.0.1 is not in the certificate
