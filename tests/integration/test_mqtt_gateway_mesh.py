"""The MQTT gateway in a router MESH (issue 21; molecule/router runs the
gateway on enmasse-router-1 and an AMQP client on enmasse-router-3): two real
qdrouterd 1.19 (interior, one inter-router connection) each with the space's
multiTenant TLS listener and the collection's auth service, the gateway
attached to router A only, AMQP clients attached to router B. Anycast across
routers: the sender gets credit only once the receiver's address has crossed
the mesh. Also molecule/router's own check script (mqtt_check.py to-amqp) run
against this mesh: it must report delivery, never hang."""
import json
import os
import subprocess
import sys
import time

import pytest

import test_auth_service_router as asr
import test_mqtt_gateway as gwt
# an autouse fixture: each test's MQTT clients are closed after it
from test_mqtt_gateway import close_clients  # noqa: F401 pylint: disable=unused-import
from helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.router]

REPO = asr.REPO
ADDRESSES = {"w/a": "anycast", "w/b": "anycast", "w/c": "anycast", "t/a": "topic"}
CHECK = os.path.join(REPO, "molecule", "router", "mqtt_check.py")


def _router(prefix, root, name, service_port, tls, inter):
    """A router of the mesh: the auth test's router config, interior, with
    the inter-router listener (``inter`` = its port) or a connector to it."""
    mgmt, ports = free_port(), {"space-a": free_port()}
    parts = json.loads(asr.router_config(mgmt, ports, service_port, tls))
    parts[0] = asr.entity("router", mode="interior", id=name)
    if name == "mesh-a":
        parts.append(asr.entity("listener", name="inter-router", host="127.0.0.1", port=inter,
                                role="inter-router", authenticatePeer=False, saslMechanisms="ANONYMOUS"))
    else:
        parts.append(asr.entity("connector", name="to-mesh-a", host="127.0.0.1", port=inter,
                                role="inter-router", saslMechanisms="ANONYMOUS"))
    conf = os.path.join(root, name + ".json")
    with open(conf, "w") as f:
        json.dump(parts, f)
    log_path = os.path.join(root, name + ".log")
    log = open(log_path, "w")
    proc = subprocess.Popen([os.path.join(prefix, "sbin", "qdrouterd"), "-c", conf], stdout=log,
                            stderr=subprocess.STDOUT, env=asr.router_env(prefix))
    for port in [mgmt] + list(ports.values()):
        asr.wait_listening(port, proc, log_path, "qdrouterd " + name)
    return proc, log, {"mgmt": mgmt, "ports": ports, "log": log_path}


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    pytest.importorskip("proton")
    pytest.importorskip("paho.mqtt")
    binary = gwt.gateway_binary()
    prefix = asr.build_router()
    root = str(tmp_path_factory.mktemp("mqtt-mesh"))
    users_dir = os.path.join(root, "users")
    os.makedirs(users_dir)
    asr.write_users(users_dir, "space-a", {"alice": ("secret-a", asr.ALL)})
    tls = asr.make_tls(root)
    service = asr.AuthService(os.path.join(root, "service"), users_dir, free_port(),
                              tls=asr.service_tls(tls)).start()
    procs, logs, gw = [], [], None
    try:
        inter = free_port()
        routers = {}
        for name in ("mesh-a", "mesh-b"):
            proc, log, info = _router(prefix, root, name, service.port, tls, inter)
            procs.append(proc)
            logs.append(log)
            routers[name] = info
        table = os.path.join(root, "table.json")
        gwt.write_table(table, ADDRESSES)
        cert, key = tls["router"]
        port = free_port()
        config = {"space": "space-a", "listen_tls": "127.0.0.1:%d" % port, "tls_cert_file": cert,
                  "tls_key_file": key, "routers": ["127.0.0.1:%d" % routers["mesh-a"]["ports"]["space-a"]],
                  "router_tls": True, "router_ca_file": tls["ca"], "table_file": table, "log_level": "debug"}
        with open(os.path.join(root, "gateway.json"), "w") as f:
            json.dump(config, f)
        gw_log = os.path.join(root, "gateway.log")
        glog = open(gw_log, "w")
        logs.append(glog)
        gw = subprocess.Popen([binary, "-config", os.path.join(root, "gateway.json")], stdout=glog,
                              stderr=subprocess.STDOUT)
        asr.wait_listening(port, gw, gw_log, "the MQTT gateway")
        # the two routers see each other before any test (router.node would say so; a
        # cross-router round trip is what the tests below measure anyway)
        time.sleep(3)
        yield {"port": port, "ca": tls["ca"], "a": dict(routers["mesh-a"], ca=tls["ca"]),
               "b": dict(routers["mesh-b"], ca=tls["ca"]), "root": root, "gateway_log": gw_log}
    finally:
        if gw:
            asr.stop(gw)
        for proc in procs:
            asr.stop(proc)
        for log in logs:
            log.close()
        service.stop()


def test_mqtt_publish_on_router_a_reaches_an_amqp_receiver_on_router_b(mesh):
    consumer = gwt.Consumer(mesh["b"], "w/a")
    try:
        c = gwt.Mqtt(mesh, "alice", "secret-a", version=4)
        mid = c.publish("w/a", b"across-the-mesh", qos=1)
        assert c.puback(mid, timeout=20) is not None, "no PUBACK (gateway log: %s)" % mesh["gateway_log"]
        assert bytes(consumer.wait(timeout=20)[0].body) == b"across-the-mesh"
    finally:
        consumer.stop()


def test_amqp_send_on_router_b_reaches_an_mqtt_subscriber_on_router_a(mesh):
    from proton import Message
    c = gwt.Mqtt(mesh, "alice", "secret-a")
    assert c.subscribe("w/b", qos=1) == [1]
    conn = asr.connect(mesh["b"], "space-a", "alice", "secret-a")
    try:
        # blocks until the subscriber's address has crossed the mesh (credit), then until accepted
        conn.create_sender("w/b").send(Message(body=b"from-router-b", durable=True), timeout=30)
    finally:
        conn.close()
    assert gwt.wait_for(lambda: c.messages, 20), "nothing reached the MQTT subscriber"
    assert c.messages[0][:2] == ("w/b", b"from-router-b")


def test_molecule_check_script_reports_delivery_across_the_mesh(mesh, tmp_path):
    """molecule/router's verify-mqtt.yml runs this script (gateway on one
    router, receiver on another): it must see the message, within bounds."""
    cfg = tmp_path / "dataplane.json"
    cfg.write_text(json.dumps({"ca": mesh["ca"], "spaces": {"space-a": {
        "user": "alice", "password": "secret-a", "port": mesh["b"]["ports"]["space-a"]}}}))
    env = dict(os.environ, DATAPLANE_CONFIG=str(cfg),
               PYTHONPATH=os.pathsep.join([os.path.dirname(CHECK), os.environ.get("PYTHONPATH", "")]))
    start = time.time()
    out = subprocess.run([sys.executable, CHECK, "to-amqp", "--gateway", "127.0.0.1:%d" % mesh["port"],
                          "--router", "127.0.0.1:%d" % mesh["b"]["ports"]["space-a"], "--space", "space-a",
                          "--topic", "w/c"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["connected"] and result["puback"] and result["received"] == result["sent"], result
    assert "stage" not in result, result
    assert time.time() - start < 60
