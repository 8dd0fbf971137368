"""Retained MQTT messages of a standard space (gateway/mqtt/retained.go,
docs/mqtt-design.md "Retained messages: what is built") with REAL
components: qdrouterd 1.19 with the space's TLS listener and the gateways'
service listener (realm ``space-a.mqtt``, the per-space service user), a
linkRoute ``$mqtt/`` to a real Artemis pool broker (the broker role's
broker.xml with the address-setting of the retained queue), the auth service,
two gateway binaries of the same space, paho-mqtt and Debian's mosquitto_sub.
One environment for the module."""
import json
import os
import subprocess

import pytest

import test_auth_service_router as asr
import test_mqtt_gateway as tmg
from helpers import ArtemisBroker, broker_mbean, free_port

pytestmark = [pytest.mark.integration, pytest.mark.router]

SPACE, SERVICE_REALM = "space-a", "space-a.mqtt"
RETAINED = "$mqtt/space-a/retained"
ADDRESSES = {"q1": "queue", "t/a": "topic", "t/b": "topic", "t/c": "topic", "t/d": "topic", "t/e": "topic",
             "t/f": "topic", "t/g": "topic"}
# the space's retained queue on its broker, declared as the tooling declares a standard space's queues
# (Jolokia createQueue, docs/mqtt-design.md): durable, non-destructive, last value per topic
RETAINED_QUEUE = {"name": RETAINED, "address": RETAINED, "routing-type": "ANYCAST", "durable": True,
                  "last-value-key": "mqtt_topic", "non-destructive": True}


def router_config(mgmt, ports, service_port, auth_port, tls, broker):
    parts = json.loads(asr.router_config(mgmt, ports, auth_port, tls))
    parts += [
        # the space's topics fan out (the standard space's 'topic' type; here without a broker behind them)
        asr.entity("address", prefix="%s/t/" % SPACE, distribution="multicast"),
        asr.entity("authServicePlugin", name="enmasse/%s/auth" % SERVICE_REALM, host="127.0.0.1", port=auth_port,
                   realm=SERVICE_REALM, sslProfile=asr.AUTH_SSL_PROFILE),
        asr.entity("vhost", hostname=SERVICE_REALM, allowUnknownUser=True, groups={"$default": asr.ALLOW_ALL}),
        # not multiTenant: the gateway names $mqtt/<space>/... itself; no tenant listener can (it adds <space>/)
        asr.entity("listener", name="enmasse/%s/mqtt-service" % SPACE, host="127.0.0.1", port=service_port,
                   role="normal", policyVhost=SERVICE_REALM, authenticatePeer=True, saslMechanisms="PLAIN",
                   saslPlugin="enmasse/%s/auth" % SERVICE_REALM, sslProfile=asr.CLIENT_SSL_PROFILE, requireSsl=True),
        asr.entity("connector", name="broker-b1", host="127.0.0.1", port=broker.amqp_port, role="route-container",
                   saslUsername=broker.router_user, saslPassword=broker.router_password),
        asr.entity("linkRoute", name="mqtt-in", prefix="$mqtt/", direction="in", connection="broker-b1"),
        asr.entity("linkRoute", name="mqtt-out", prefix="$mqtt/", direction="out", connection="broker-b1")]
    return json.dumps(parts, indent=1)


class Gateway(object):
    def __init__(self, binary, root, name, config):
        self.binary, self.name, self.port = binary, name, free_port()
        self.config = dict(config, listen_tls="127.0.0.1:%d" % self.port)
        self.path = os.path.join(root, name + ".json")
        with open(self.path, "w") as f:
            json.dump(self.config, f)
        os.chmod(self.path, 0o640)
        self.log = os.path.join(root, name + ".log")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([self.binary, "-config", self.path], stdout=open(self.log, "a"),
                                     stderr=subprocess.STDOUT)
        asr.wait_listening(self.port, self.proc, self.log, self.name)
        return self

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    pytest.importorskip("proton")
    pytest.importorskip("paho.mqtt")
    binary = tmg.gateway_binary()
    prefix = asr.build_router()
    root = tmp_path_factory.mktemp("mqtt-retained")
    broker = ArtemisBroker(str(root / "b1"), name="b1")
    broker.create(space_type="pool")
    broker.start()
    mbean = broker_mbean(broker.name)
    broker.jolokia().execute(mbean, "createAddress(java.lang.String,java.lang.String)", RETAINED, "ANYCAST")
    broker.jolokia().execute(mbean, "createQueue(java.lang.String,boolean)", json.dumps(RETAINED_QUEUE), True)
    users_dir = str(root / "users")
    os.makedirs(users_dir)
    asr.write_users(users_dir, SPACE, {"alice": ("secret-a", asr.ALL),
                                       "carol": ("carol-pw", ["send_t%2Fa", "recv_t%2Fa"])})
    service_password = "svc-" + os.urandom(8).hex()
    asr.write_users(users_dir, SERVICE_REALM, {"mqtt-gateway": (service_password, [
        "send_%24mqtt%2Fspace-a%2F%2A", "recv_%24mqtt%2Fspace-a%2F%2A"])})
    tls = asr.make_tls(str(root))
    service = asr.AuthService(str(root / "service"), users_dir, free_port(), tls=asr.service_tls(tls)).start()
    mgmt, ports, service_port = free_port(), {SPACE: free_port()}, free_port()
    (root / "qdrouterd.json").write_text(router_config(mgmt, ports, service_port, service.port, tls, broker))
    router_log = str(root / "qdrouterd.log")
    rlog = open(router_log, "w")
    router = subprocess.Popen([os.path.join(prefix, "sbin", "qdrouterd"), "-c", str(root / "qdrouterd.json")],
                              stdout=rlog, stderr=subprocess.STDOUT, env=asr.router_env(prefix))
    gateways, consumers = [], []
    try:
        for port in (mgmt, ports[SPACE], service_port):
            asr.wait_listening(port, router, router_log, "qdrouterd")
        table = str(root / "table.json")
        tmg.write_table(table, ADDRESSES)
        password_file = str(root / "service-password")
        with open(password_file, "w") as f:
            f.write(service_password + "\n")
        os.chmod(password_file, 0o640)
        cert, key = tls["router"]
        config = {"space": SPACE, "tls_cert_file": cert, "tls_key_file": key,
                  "routers": ["127.0.0.1:%d" % ports[SPACE]], "router_tls": True, "router_ca_file": tls["ca"],
                  "table_file": table, "log_level": "debug",
                  "service_routers": ["127.0.0.1:%d" % service_port], "service_user": "mqtt-gateway",
                  "service_password_file": password_file, "retained_address": RETAINED}
        gateways = [Gateway(binary, str(root), "gw1", config).start(), Gateway(binary, str(root), "gw2", config).start()]
        # an AMQP application on every topic (a topic of a standard space has its broker behind it): the
        # router gives the gateway credit and settles its QoS 1 publishes; MQTT subscribers get copies
        amqp_env = {"ca": tls["ca"], "ports": ports}
        consumers = [tmg.Consumer(amqp_env, a) for a in sorted(ADDRESSES) if a.startswith("t/")]
        yield {"gateways": gateways, "broker": broker, "ca": tls["ca"], "ports": ports, "service_port": service_port,
               "service_password": service_password, "port": gateways[0].port}
    finally:
        for c in consumers:
            c.stop()
        for gw in gateways:
            if gw.proc:
                asr.stop(gw.proc)
        asr.stop(router)
        rlog.close()
        service.stop()
        broker.stop()


@pytest.fixture(autouse=True)
def close_clients():
    yield
    while tmg.OPEN:
        tmg.OPEN.pop().close()


def on(env, gw):
    return dict(env, port=gw.port)


def client(env, gw=0, user="alice", password="secret-a", version=5):
    c = tmg.Mqtt(on(env, env["gateways"][gw]), user, password, version=version)
    assert c.connack == 0, c.connack
    return c


def retain(env, topic, payload, gw=0, version=5):
    c = client(env, gw, version=version)
    mid = c.c.publish(topic, payload, qos=1, retain=True).mid
    rc = c.puback(mid)
    assert rc is not None and getattr(rc, "value", rc) == 0, rc
    c.close()


def received(c, n=1, timeout=10):
    tmg.wait_for(lambda: len(c.messages) >= n, timeout)
    return c.messages


def subscribe_and_get(env, topic_filter, gw=0, version=5, timeout=10):
    """A new subscriber's retained messages: [(topic, payload, retain flag)]."""
    c = client(env, gw, version=version)
    seen = []
    c.c.on_message = lambda cl, u, m: seen.append((m.topic, m.payload, m.retain))
    assert c.subscribe(topic_filter)[0] in (0, 1)
    tmg.wait_for(lambda: seen, timeout)
    tmg.wait_for(lambda: False, 0.5)  # anything more that would come
    c.close()
    return seen


def test_a_retained_message_reaches_every_new_subscriber_on_either_gateway(env):
    retain(env, "t/a", b"first")
    retain(env, "t/a", b"last")
    assert subscribe_and_get(env, "t/a") == [("t/a", b"last", True)]
    assert subscribe_and_get(env, "t/+", gw=1, version=3) == [("t/a", b"last", True)]
    out = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(env["gateways"][1].port), "-u", "alice",
                          "-P", "secret-a", "--cafile", env["ca"], "-t", "t/a", "-C", "1", "-W", "15", "-v",
                          "--retained-only"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20,
                         check=False)
    assert out.returncode == 0 and out.stdout.strip() == "t/a last", out.stdout


def test_an_empty_retained_publish_clears_it(env):
    retain(env, "t/b", b"soon gone")
    assert subscribe_and_get(env, "t/b") == [("t/b", b"soon gone", True)]
    retain(env, "t/b", b"", gw=1)
    assert subscribe_and_get(env, "t/b", timeout=2) == []


def test_live_messages_carry_the_retain_flag_only_with_retain_as_published(env):
    from paho.mqtt.subscribeoptions import SubscribeOptions
    plain, rap = client(env), client(env, gw=1)
    for c, opts in ((plain, SubscribeOptions(qos=1)), (rap, SubscribeOptions(qos=1, retainAsPublished=True,
                                                                             retainHandling=2))):
        c.flags = []
        c.c.on_message = lambda cl, u, m, c=c: c.flags.append((m.payload, m.retain))
        mid = c.c.subscribe("t/c", options=opts)[1]
        assert tmg.wait_for(lambda: mid in c.subacks)
    retain(env, "t/c", b"live")
    assert tmg.wait_for(lambda: plain.flags and rap.flags)
    assert plain.flags == [(b"live", False)] and rap.flags == [(b"live", True)]


def test_retained_survives_a_restart_of_the_gateway(env):
    retain(env, "t/d", b"before the kill")
    gw = env["gateways"][0]
    gw.kill()
    gw.start()
    assert subscribe_and_get(env, "t/d") == [("t/d", b"before the kill", True)]


def test_retained_survives_a_restart_of_the_broker(env):
    retain(env, "t/e", b"journaled")
    env["broker"].stop()
    env["broker"].start()
    got = []
    assert tmg.wait_for(lambda: got.extend(subscribe_and_get(env, "t/e", timeout=3)) or got, 60), \
        "nothing retained after the broker's restart"
    assert got[0] == ("t/e", b"journaled", True)
    retain(env, "t/f", b"after")  # the service connection recovered: storing works again
    assert subscribe_and_get(env, "t/f") == [("t/f", b"after", True)]


def test_clients_cannot_reach_the_gateways_own_names(env):
    retain(env, "t/g", b"internal")
    c = client(env)
    for topic in (RETAINED, "$mqtt/x"):
        assert c.puback(c.publish(topic, b"x")).value == 0x87, topic
    assert c.subscribe("$mqtt/#")[0] >= 0x80
    assert c.subscribe(RETAINED)[0] >= 0x80
    assert c.connected
    # an AMQP client of the space (alice may send and recv '*'): its names get the space's prefix, so the
    # retained queue is out of reach; and the space's users are unknown to the service realm
    from proton import Timeout
    conn = asr.connect(env, SPACE, "alice", "secret-a")
    try:
        with pytest.raises(Timeout):
            conn.create_receiver(RETAINED, credit=10).receive(timeout=2)
    finally:
        conn.close()
    service_env = dict(env, ports={SPACE: env["service_port"]})
    assert asr.refused(service_env, SPACE, "alice", "secret-a")  # the connection is refused


def test_a_retained_message_needs_recv_on_the_topic(env):
    retain(env, "t/a", b"for alice")
    carol = client(env, user="carol", password="carol-pw")
    seen = []
    carol.c.on_message = lambda cl, u, m: seen.append(m.topic)
    assert carol.subscribe("t/+")[0] == 1  # only t/a attaches: carol has recv on t/a only
    assert tmg.wait_for(lambda: seen)
    tmg.wait_for(lambda: False, 0.5)
    assert seen == ["t/a"]


def test_the_service_password_is_in_no_log(env):
    for gw in env["gateways"]:
        text = open(gw.log).read()
        assert "retained" in text and env["service_password"] not in text
        assert "for alice" not in text and "journaled" not in text


def test_a_retained_will_is_stored_as_a_retained_publish(env):
    from test_mqtt_wills import drop, payload, will_client
    body = payload("retained")
    m = will_client(on(env, env["gateways"][0]), "t/d", body, retain=True)
    assert m.connack == 0
    assert ("t/d", body, True) not in subscribe_and_get(env, "t/d", gw=1, timeout=2), "retained before the will went"
    drop(m)  # no DISCONNECT: the will goes, through the retained path
    got = []
    assert tmg.wait_for(lambda: got.extend(subscribe_and_get(env, "t/d", gw=1, timeout=2)) or body in [x[1] for x in got],
                        20), "no retained will: %s" % got
    assert got[-1] == ("t/d", body, True)
