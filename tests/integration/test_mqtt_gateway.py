"""The MQTT gateway of a standard space (gateway/mqtt, issue 21) with REAL
clients: a real qdrouterd 1.19 (scripts/build-router.sh) with the space's
multiTenant TLS listener, the collection's auth service with real users
(SASL PLAIN relayed by the router), the gateway binary
(scripts/build-mqtt-gateway.sh; ENMASSE_MQTT_GATEWAY), paho-mqtt (MQTT 5 and
3.1.1), Debian's mosquitto_pub / mosquitto_sub, python-qpid-proton on the AMQP
side. One environment for the module; the gateway's table is the JSON of
mapping.gateway_table()."""
import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

import test_auth_service_router as asr
from helpers import free_port

from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping

pytestmark = [pytest.mark.integration, pytest.mark.router]

REPO = asr.REPO
ADDRESSES = {"q1": "queue", "q2": "queue", "q3": "queue", "t/a": "topic", "t/b": "topic", "t/c/d": "topic",
             "w/a": "anycast", "w/b": "anycast", "w/c/d": "anycast", "h/a": "anycast"}
MAX_PACKET = 1024
PER_USER = 2
# space-a's users (test_a_changed_password_... rewrites the file with a changed one)
USERS = {"alice": ("secret-a", asr.ALL), "bob": ("bob-pw", asr.ALL), "carol": ("carol-pw", ["send_q1", "recv_q1"]),
         "erin": ("erin-pw", asr.ALL), "frank": ("frank-pw", ["send_q1", "recv_q1"])}
OPEN = []  # every MQTT client a test made: closed after each test (the per-user limit counts them)


def gateway_binary():
    path = os.environ.get("ENMASSE_MQTT_GATEWAY")
    if path:
        return path
    if not shutil.which("go"):
        pytest.skip("no 'go' on PATH: the MQTT gateway (gateway/mqtt) cannot be built")
    return subprocess.run(["bash", os.path.join(REPO, "scripts", "build-mqtt-gateway.sh")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def write_table(path, addresses):
    with open(path + ".tmp", "w") as f:
        json.dump(mapping.gateway_table("space-a", addresses), f)
    os.replace(path + ".tmp", path)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    pytest.importorskip("proton")
    pytest.importorskip("paho.mqtt")
    binary = gateway_binary()
    prefix = asr.build_router()
    root = tmp_path_factory.mktemp("mqtt")
    users_dir = str(root / "users")
    os.makedirs(users_dir)
    asr.write_users(users_dir, "space-a", USERS)
    asr.write_users(users_dir, "space-b", {"dave": ("dave-pw", asr.ALL)})
    tls = asr.make_tls(str(root))
    service = asr.AuthService(str(root / "service"), users_dir, free_port(), tls=asr.service_tls(tls)).start()
    mgmt, ports = free_port(), {"space-a": free_port(), "space-b": free_port()}
    (root / "qdrouterd.json").write_text(asr.router_config(mgmt, ports, service.port, tls))
    router_log = str(root / "qdrouterd.log")
    rlog = open(router_log, "w")
    router = subprocess.Popen([os.path.join(prefix, "sbin", "qdrouterd"), "-c", str(root / "qdrouterd.json")],
                              stdout=rlog, stderr=subprocess.STDOUT, env=asr.router_env(prefix))
    gw = None
    try:
        for port in [mgmt] + list(ports.values()):
            asr.wait_listening(port, router, router_log, "qdrouterd")
        table = str(root / "table.json")
        write_table(table, dict((a, t) for a, t in ADDRESSES.items() if a != "q3"))
        cert, key = tls["router"]  # a server certificate of the test CA for 127.0.0.1 / localhost
        port = free_port()
        config = {"space": "space-a", "listen_tls": "127.0.0.1:%d" % port, "tls_cert_file": cert,
                  "tls_key_file": key, "routers": ["127.0.0.1:%d" % free_port(), "127.0.0.1:%d" % ports["space-a"]],
                  "router_tls": True, "router_ca_file": tls["ca"], "table_file": table,
                  "max_packet_size": MAX_PACKET, "receive_maximum": 8, "max_connections_per_user": PER_USER,
                  "log_level": "debug"}
        (root / "gateway.json").write_text(json.dumps(config))
        gw_log = str(root / "gateway.log")
        glog = open(gw_log, "w")
        gw = subprocess.Popen([binary, "-config", str(root / "gateway.json")], stdout=glog, stderr=subprocess.STDOUT)
        asr.wait_listening(port, gw, gw_log, "the MQTT gateway")
        yield {"port": port, "ca": tls["ca"], "ports": ports, "gateway": gw, "gateway_log": gw_log,
               "table": table, "binary": binary, "root": str(root), "mgmt": "amqp://127.0.0.1:%d" % mgmt,
               "users_dir": users_dir}
    finally:
        if gw:
            asr.stop(gw)
        asr.stop(router)
        rlog.close()
        service.stop()


# ------------------------------------------------------------ clients

def wait_for(cond, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


class Mqtt(object):
    """A paho-mqtt client over TLS trusting the test CA, recording what it sees."""

    def __init__(self, env, user, password, version=5, client_id=None, tls=True, connect=True):
        import paho.mqtt.client as paho
        self.version = paho.MQTTv5 if version == 5 else paho.MQTTv311
        self.c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id or "", protocol=self.version)
        self.connack, self.disconnect_rc, self.pubacks, self.subacks, self.messages = None, None, {}, {}, []
        OPEN.append(self)
        self.c.on_connect = lambda c, u, flags, rc, props: setattr(self, "connack", rc)
        self.c.on_disconnect = lambda c, u, flags, rc, props: setattr(self, "disconnect_rc", rc)
        self.c.on_publish = lambda c, u, mid, rc, props: self.pubacks.__setitem__(mid, rc)
        self.c.on_subscribe = lambda c, u, mid, rcs, props: self.subacks.__setitem__(mid, rcs)
        self.c.on_message = lambda c, u, m: self.messages.append((m.topic, m.payload, m.qos))
        if user is not None:
            self.c.username_pw_set(user, password)
        if tls:
            self.c.tls_set(ca_certs=env["ca"])
        if connect:
            self.c.connect("127.0.0.1", env["port"])
            self.c.loop_start()
            assert wait_for(lambda: self.connack is not None or self.disconnect_rc is not None), "no CONNACK"

    @property
    def connected(self):
        return self.c.is_connected()

    def publish(self, topic, payload, qos=1):
        return self.c.publish(topic, payload, qos=qos).mid

    def puback(self, mid, timeout=10):
        wait_for(lambda: mid in self.pubacks, timeout)
        return self.pubacks.get(mid)

    def subscribe(self, topic_filter, qos=1):
        mid = self.c.subscribe(topic_filter, qos=qos)[1]
        assert wait_for(lambda: mid in self.subacks), "no SUBACK for %s" % topic_filter
        return [rc.value for rc in self.subacks[mid]]

    def close(self):
        try:
            self.c.disconnect()
        finally:
            self.c.loop_stop()
            if self.c.socket():
                self.c.socket().close()


@pytest.fixture(autouse=True)
def close_clients():
    yield
    while OPEN:
        OPEN.pop().close()


def amqp(env, user="alice", password="secret-a"):
    return asr.connect(env, "space-a", user, password)


def mosquitto(tool, env, user, password, *args, tls=True, timeout=20):
    cmd = [tool, "-h", "127.0.0.1", "-p", str(env["port"]), "-u", user, "-P", password, "-V", "mqttv311"]
    if tls:
        cmd += ["--cafile", env["ca"]]
    return subprocess.run(cmd + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)


class Consumer(threading.Thread):
    """An AMQP consumer of ``address`` in its own thread (a blocking proton
    connection must be pumped while the test waits on MQTT), accepting what
    it gets into ``messages``."""

    def __init__(self, env, address, user="alice", password="secret-a", accept=True):
        super(Consumer, self).__init__(daemon=True)
        self.accepting = accept
        self.env, self.address, self.user, self.password = env, address, user, password
        self.messages, self.presettled, self.ready, self.stopping, self.error = [], [], threading.Event(), False, None
        self.start()
        assert self.ready.wait(20), "the AMQP consumer did not attach: %s" % self.error

    def run(self):
        from proton import Timeout
        try:
            conn = asr.connect(self.env, "space-a", self.user, self.password)
            receiver = conn.create_receiver(self.address, credit=10)
            self.ready.set()
            while not self.stopping:
                try:
                    m = receiver.receive(timeout=0.2)
                except Timeout:
                    while self.accepting and receiver.fetcher.unsettled:
                        receiver.accept()
                    continue
                # proton queues only unsettled deliveries for accept(): none queued = pre-settled
                self.presettled.append(not receiver.fetcher.unsettled)
                self.messages.append(m)
                while self.accepting and receiver.fetcher.unsettled:
                    receiver.accept()
            conn.close()
        except Exception as e:  # reported by the waits
            self.error = e
            self.ready.set()

    def wait(self, n=1, timeout=15):
        assert wait_for(lambda: len(self.messages) >= n, timeout), "AMQP %s: %d of %d (%s)" % (
            self.address, len(self.messages), n, self.error)
        return self.messages

    def stop(self):
        self.stopping = True
        self.join(10)


# ------------------------------------------------------------ tests

def test_tls_listener_takes_mosquitto_and_paho_and_plain_tcp_is_refused(env):
    consumer = Consumer(env, "q1")
    try:
        out = mosquitto("mosquitto_pub", env, "alice", "secret-a", "-t", "q1", "-q", "1", "-m", "over-tls")
        assert out.returncode == 0, out.stdout
        m = consumer.wait()[0]
        assert bytes(m.body) == b"over-tls"
        assert m.annotations[mapping.ANNOTATION_QOS] == 1 and m.durable
    finally:
        consumer.stop()
    plain = mosquitto("mosquitto_pub", env, "alice", "secret-a", "-t", "q1", "-m", "x", tls=False, timeout=30)
    assert plain.returncode != 0
    c = Mqtt(env, "alice", "secret-a", tls=False, connect=False)
    c.c.connect_timeout = 3
    try:
        c.c.connect("127.0.0.1", env["port"])
        c.c.loop_start()
        assert not wait_for(lambda: c.connack is not None, 3), "a plain TCP client got a CONNACK"
    except OSError:
        pass
    finally:
        c.c.loop_stop()


def test_wrong_password_unknown_user_and_another_spaces_user_are_refused(env):
    ok = Mqtt(env, "alice", "secret-a")
    assert ok.connack == 0
    ok.close()
    for user, password in (("alice", "wrong"), ("nobody", "x"), ("dave", "dave-pw")):
        c = Mqtt(env, user, password)
        assert c.connack is not None and c.connack.value == 0x86, (user, c.connack)
        c.c.loop_stop()
    anonymous = Mqtt(env, None, None)  # no user name: the space's listener takes SASL PLAIN only
    assert anonymous.connack.value == 0x87, anonymous.connack
    out = mosquitto("mosquitto_pub", env, "alice", "wrong", "-t", "q1", "-m", "x")
    assert out.returncode != 0 and "bad user name or password" in out.stdout.lower(), out.stdout  # 3.1.1 code 4
    log = open(env["gateway_log"]).read()
    assert "secret-a" not in log and "dave-pw" not in log


def test_publish_without_send_gets_puback_0x87_in_mqtt5_and_a_disconnect_in_311(env):
    consumer = Consumer(env, "q1")
    try:
        c = Mqtt(env, "carol", "carol-pw")
        assert c.puback(c.publish("q2", b"not allowed")).value == 0x87
        assert c.puback(c.publish("q1", b"allowed")).value == 0
        assert bytes(consumer.wait()[0].body) == b"allowed"
        assert c.connected
        c.close()
    finally:
        consumer.stop()
    c3 = Mqtt(env, "carol", "carol-pw", version=3)
    assert c3.connack == 0
    c3.publish("q2", b"not allowed")
    assert wait_for(lambda: not c3.connected), "the 3.1.1 client stayed connected"
    assert not c3.pubacks
    c3.c.loop_stop()


def test_subscribe_without_recv_fails_that_filter_and_the_connection_stays(env):
    c = Mqtt(env, "carol", "carol-pw", version=3)
    assert c.subscribe("q2") == [0x80]
    assert c.subscribe("q1") == [1]
    c5 = Mqtt(env, "carol", "carol-pw")
    assert c5.subscribe("q2")[0] >= 0x80
    assert c.connected and c5.connected
    c5.close()
    conn = amqp(env)
    try:
        from proton import Message
        conn.create_sender("q1").send(Message(body=b"to carol", durable=True))
        assert wait_for(lambda: c.messages), "carol's q1 subscription got nothing"
        assert c.messages[0] == ("q1", b"to carol", 1)
    finally:
        conn.close()
        c.close()


def test_topics_outside_the_table_and_reserved_ones_are_refused(env):
    c = Mqtt(env, "alice", "secret-a")
    for topic in ("not-declared", "$SYS/x", "_topo/0/x"):
        assert c.puback(c.publish(topic, b"x")).value == 0x87, topic
    assert c.subscribe("not-declared")[0] >= 0x80
    assert c.subscribe("$SYS/#")[0] >= 0x80
    assert c.subscribe("nothing/+")[0] >= 0x80
    assert c.connected
    c.close()


def test_qos1_puback_waits_for_the_router_and_qos0_is_presettled(env):
    c = Mqtt(env, "alice", "secret-a")
    held = Consumer(env, "h/a", accept=False)
    try:
        mid = c.publish("h/a", b"held")
        assert bytes(held.wait()[0].body) == b"held"  # the consumer has it, has not accepted it yet
        assert c.puback(mid, timeout=1.5) is None, "PUBACK before the router's consumer accepted"
        held.accepting = True
        assert c.puback(mid).value == 0
    finally:
        held.stop()
    consumer = Consumer(env, "q1")
    try:
        c.publish("q1", b"zero", qos=0)
        c.publish("q1", b"one", qos=1)
        c.c.publish("q1", b"retain", qos=1, retain=True)
        got = consumer.wait(3)
        assert [(bytes(m.body), m.durable, m.annotations[mapping.ANNOTATION_QOS],
                 m.annotations.get(mapping.ANNOTATION_RETAIN)) for m in got] == [
            (b"zero", False, 0, None), (b"one", True, 1, None), (b"retain", True, 1, True)]
        assert consumer.presettled == [True, False, False]  # QoS 0 pre-settled, QoS 1 not
    finally:
        consumer.stop()
        c.close()


def test_wildcards_expand_to_the_tables_addresses_and_amqp_reaches_subscribers(env):
    from proton import Message
    c = Mqtt(env, "alice", "secret-a")
    assert c.subscribe("w/+") == [1]
    conn = amqp(env)
    try:
        for address in ("w/a", "w/b"):
            conn.create_sender(address).send(Message(body=address.encode(), durable=True))
        assert wait_for(lambda: len(c.messages) == 2), c.messages
        assert sorted(c.messages) == [("w/a", b"w/a", 1), ("w/b", b"w/b", 1)]
        sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(env["port"]), "-u", "bob", "-P",
                                "bob-pw", "--cafile", env["ca"], "-t", "w/c/#", "-C", "1", "-W", "20", "-v"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)
        conn.create_sender("w/c/d").send(Message(body=b"deep", annotations={mapping.ANNOTATION_QOS: 0}))
        out = sub.communicate(timeout=25)[0]
        assert sub.returncode == 0 and out.strip() == "w/c/d deep", out
        assert len(c.messages) == 2  # w/+ does not match w/c/d
    finally:
        conn.close()
        c.close()


def test_packets_over_max_packet_size_disconnect_the_client(env):
    c = Mqtt(env, "alice", "secret-a")
    c.publish("q1", b"x" * (MAX_PACKET + 100))
    assert wait_for(lambda: not c.connected), "a too large packet was taken"
    # mochi closes the connection without a DISCONNECT 0x95 (README.md): paho reports 0x80
    c3 = Mqtt(env, "alice", "secret-a", version=3)
    assert c3.puback(c3.publish("not-declared", b"x" * (MAX_PACKET - 100), qos=0), timeout=0.5) is not None
    assert c3.connected  # under the limit: read (and dropped: no such address, QoS 0)
    c3.publish("q1", b"x" * (MAX_PACKET + 100))
    assert wait_for(lambda: not c3.connected, 3), "a too large packet was taken (3.1.1)"


def test_connections_per_user_are_limited(env):
    first = [Mqtt(env, "bob", "bob-pw") for i in range(PER_USER)]
    assert [c.connack for c in first] == [0] * PER_USER
    over = Mqtt(env, "bob", "bob-pw")
    assert over.connack.value == 0x97
    over.c.loop_stop()
    out = mosquitto("mosquitto_pub", env, "bob", "bob-pw", "-t", "q1", "-m", "x")
    assert out.returncode != 0 and "unavailable" in out.stdout.lower(), out.stdout  # 3.1.1 code 3
    assert Mqtt(env, "alice", "secret-a").connack == 0  # another user is not counted
    first[0].close()
    time.sleep(0.3)  # the gateway sees the DISCONNECT
    assert Mqtt(env, "bob", "bob-pw").connack == 0


def test_qos2_publish_is_accepted_and_forwarded_once(env):
    """QoS 2 (test_mqtt_sessions.py has the reconnects): MQTT 5 paho and
    3.1.1 mosquitto_pub complete the handshake, the AMQP consumer gets one
    copy of each."""
    consumer = Consumer(env, "q1")
    try:
        c = Mqtt(env, "alice", "secret-a")
        assert c.puback(c.publish("q1", b"exactly once 5", qos=2)).value == 0
        out = mosquitto("mosquitto_pub", env, "alice", "secret-a", "-t", "q1", "-q", "2", "-m", "exactly once 3")
        assert out.returncode == 0, out.stdout
        consumer.wait(2)
        time.sleep(0.3)
        assert sorted(bytes(m.body) for m in consumer.messages) == [b"exactly once 3", b"exactly once 5"]
        assert all(m.annotations[mapping.ANNOTATION_QOS] == 2 and m.durable for m in consumer.messages)
    finally:
        consumer.stop()


def test_sighup_reads_new_addresses_without_dropping_clients(env):
    c = Mqtt(env, "alice", "secret-a")
    assert c.puback(c.publish("q3", b"before")).value == 0x87
    write_table(env["table"], ADDRESSES)
    env["gateway"].send_signal(signal.SIGHUP)
    assert wait_for(lambda: "table reloaded" in open(env["gateway_log"]).read())
    consumer = Consumer(env, "q3")
    try:
        assert c.puback(c.publish("q3", b"after")).value == 0
        assert bytes(consumer.wait()[0].body) == b"after"
    finally:
        consumer.stop()
    assert c.connected
    c.close()


def router_connections(env, user):
    """The identities of the router's client connections authenticated as ``user``."""
    return [row["identity"] for row in asr.connection_users(env, ["identity"])
            if row.get("role") == "normal" and row.get("user") == user]


def test_clients_of_one_user_share_one_router_connection_and_every_connect_logs_in(env):
    assert router_connections(env, "erin") == []
    a, b = Mqtt(env, "erin", "erin-pw"), Mqtt(env, "erin", "erin-pw", version=3)
    assert (a.connack, b.connack) == (0, 0)
    # the login connection of the second client is closed once it answered
    assert wait_for(lambda: len(router_connections(env, "erin")) == 1), router_connections(env, "erin")
    b.close()
    time.sleep(0.3)  # the gateway sees the DISCONNECT (max_connections_per_user 2)
    # a shared connection of erin exists: a wrong password is refused all the same
    wrong = Mqtt(env, "erin", "not-erins")
    assert wrong.connack is not None and wrong.connack.value == 0x86, wrong.connack
    wrong.c.loop_stop()
    out = mosquitto("mosquitto_pub", env, "erin", "not-erins", "-t", "q1", "-m", "x")
    assert out.returncode != 0 and "bad user name or password" in out.stdout.lower(), out.stdout
    c = Mqtt(env, "erin", "erin-pw")
    assert c.connack == 0 and a.connected
    assert wait_for(lambda: len(router_connections(env, "erin")) == 1), router_connections(env, "erin")
    # both on one connection still deliver: c publishes, a receives
    assert a.subscribe("t/a") == [1]
    assert c.puback(c.publish("t/a", b"shared")).value == 0
    assert wait_for(lambda: a.messages), "nothing reached the other client of the shared connection"
    assert a.messages[0] == ("t/a", b"shared", 1)
    # the last client gone closes the shared connection
    a.close()
    c.close()
    assert wait_for(lambda: router_connections(env, "erin") == []), router_connections(env, "erin")


def test_a_shared_connection_does_not_widen_what_its_user_may_do(env):
    c = Mqtt(env, "frank", "frank-pw")
    assert c.subscribe("q1") == [1]
    c2 = Mqtt(env, "frank", "frank-pw")
    assert wait_for(lambda: len(router_connections(env, "frank")) == 1), router_connections(env, "frank")
    assert c2.subscribe("q2") == [0x87]  # MQTT 5: not authorized
    assert c2.subscribe("t/#") == [0x87]
    assert c2.puback(c2.publish("q2", b"not allowed")).value == 0x87
    assert c.connected and c2.connected
    assert c2.puback(c2.publish("q1", b"allowed")).value == 0
    assert wait_for(lambda: c.messages), "frank's q1 subscription got nothing"
    assert c.messages[0] == ("q1", b"allowed", 1)


def test_a_changed_password_is_refused_at_the_next_connect_while_the_shared_connection_lives(env):
    old = Mqtt(env, "erin", "erin-pw")
    assert old.connack == 0
    users = dict(USERS, erin=("erin-new", asr.ALL))
    try:
        asr.write_users(env["users_dir"], "space-a", users)
        refused = Mqtt(env, "erin", "erin-pw")
        assert refused.connack is not None and refused.connack.value == 0x86, refused.connack
        refused.c.loop_stop()
        new = Mqtt(env, "erin", "erin-new")
        assert new.connack == 0 and old.connected
        assert wait_for(lambda: len(router_connections(env, "erin")) == 1), router_connections(env, "erin")
    finally:
        asr.write_users(env["users_dir"], "space-a", USERS)


def test_a_lost_shared_connection_disconnects_its_clients_and_they_reconnect(env):
    from ansible_collections.enmasse.messaging.plugins.module_utils.router import client
    a, b = Mqtt(env, "erin", "erin-pw"), Mqtt(env, "erin", "erin-pw", version=3)
    assert wait_for(lambda: len(router_connections(env, "erin")) == 1), router_connections(env, "erin")
    identity = router_connections(env, "erin")[0]
    mgmt = client.RouterManagement(env["mgmt"], timeout=30)
    try:
        props = mgmt.call({"operation": "UPDATE", "type": "org.apache.qpid.dispatch.connection",
                           "identity": identity}, {"adminStatus": "deleted"})[0]
        assert props.get("statusCode") == 200, props
    finally:
        mgmt.close()
    assert wait_for(lambda: not a.connected and not b.connected), "clients of a lost router connection stayed"
    assert a.disconnect_rc.value == 0x80, a.disconnect_rc  # MQTT 5: DISCONNECT 0x80 "router connection lost"
    assert b.disconnect_rc.value != 0, b.disconnect_rc  # 3.1.1: the connection closed
    a.close()
    b.close()
    time.sleep(0.3)
    c = Mqtt(env, "erin", "erin-pw")
    assert c.connack == 0
    assert c.subscribe("q1") == [1]
    assert wait_for(lambda: router_connections(env, "erin") not in ([], [identity])), router_connections(env, "erin")


def test_a_persistent_session_whose_router_connection_died_starts_anew(env):
    """A 3.1.1 client with clean session off subscribed, then its shared
    router connection is lost: at its reconnect the gateway does not resume
    the session (its receivers were on the dead connection, a resumed one
    would get nothing): CONNACK session present 0, the client subscribes
    again and receives."""
    import paho.mqtt.client as paho
    from ansible_collections.enmasse.messaging.plugins.module_utils.router import client

    def persistent():
        seen = {"flags": None, "messages": []}
        c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="persist-1", protocol=paho.MQTTv311,
                        clean_session=False)
        c.on_connect = lambda _c, _u, flags, rc, _p: seen.__setitem__("flags", (flags.session_present, rc))
        c.on_message = lambda _c, _u, m: seen["messages"].append(m.payload)
        c.username_pw_set("erin", "erin-pw")
        c.tls_set(ca_certs=env["ca"])
        c.connect("127.0.0.1", env["port"])
        c.loop_start()
        assert wait_for(lambda: seen["flags"] is not None), "no CONNACK"
        return c, seen

    c, seen = persistent()
    try:
        assert seen["flags"][1] == 0
        mid = c.subscribe("t/b", qos=1)[1]
        assert mid is not None
        time.sleep(0.5)  # the SUBACK
        assert wait_for(lambda: len(router_connections(env, "erin")) == 1), router_connections(env, "erin")
        identity = router_connections(env, "erin")[0]
        mgmt = client.RouterManagement(env["mgmt"], timeout=30)
        try:
            mgmt.call({"operation": "UPDATE", "type": "org.apache.qpid.dispatch.connection",
                       "identity": identity}, {"adminStatus": "deleted"})
        finally:
            mgmt.close()
        assert wait_for(lambda: not c.is_connected()), "the client of a lost router connection stayed"
    finally:
        c.loop_stop()
        c.disconnect()
    c, seen = persistent()
    try:
        assert seen["flags"] == (False, 0), seen["flags"]  # session present 0: its receivers died
        c.subscribe("t/b", qos=1)
        time.sleep(0.5)
        pub = Mqtt(env, "alice", "secret-a")
        assert pub.puback(pub.publish("t/b", b"after the loss")).value == 0
        assert wait_for(lambda: seen["messages"]), "the session started anew receives nothing"
        assert seen["messages"] == [b"after the loss"]
    finally:
        c.loop_stop()
        # the session ends with a clean connect (the gateway keeps nothing for the next test)
        c.disconnect()
        end = Mqtt(env, "erin", "erin-pw", version=3, client_id="persist-1")
        end.close()


def test_logs_hold_no_password_and_no_payload(env):
    log = open(env["gateway_log"]).read()
    assert "connect refused" in log and "connected" in log
    for secret in ("secret-a", "carol-pw", "bob-pw", "erin-pw", "erin-new", "not-erins", "not allowed", "over-tls", "exactly once?", "xxxxxxxx"):
        assert secret not in log, secret


def test_no_reachable_router_refuses_connect_with_server_unavailable(env, tmp_path):
    config = json.load(open(os.path.join(env["root"], "gateway.json")))
    port = free_port()
    config.update(listen_tls="127.0.0.1:%d" % port, routers=["127.0.0.1:%d" % free_port()])
    (tmp_path / "down.json").write_text(json.dumps(config))
    log = str(tmp_path / "down.log")
    proc = subprocess.Popen([env["binary"], "-config", str(tmp_path / "down.json")], stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)
    try:
        asr.wait_listening(port, proc, log, "the second gateway")
        down = dict(env, port=port)
        assert Mqtt(down, "alice", "secret-a").connack.value == 0x88
        out = mosquitto("mosquitto_pub", down, "alice", "secret-a", "-t", "q1", "-m", "x")
        assert out.returncode != 0 and "unavailable" in out.stdout.lower(), out.stdout  # 3.1.1 code 3
    finally:
        asr.stop(proc)


def test_a_bad_config_exits_non_zero_naming_the_field(env, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"space": "space-a", "listen_tls": "127.0.0.1:8883", "routers": ["127.0.0.1:5671"],
                                "table_file": env["table"]}))
    out = subprocess.run([env["binary"], "-config", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=10, check=False)
    assert out.returncode != 0 and "tls_cert_file" in out.stdout and len(out.stdout.strip().splitlines()) == 1


def test_go_unit_tests(env):
    if not shutil.which("go"):
        pytest.skip("no 'go' on PATH")
    out = subprocess.run(["go", "test", "./..."], cwd=os.path.join(REPO, "gateway", "mqtt"), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=dict(os.environ, GOFLAGS="-mod=readonly"),
                         check=False)
    assert out.returncode == 0, out.stdout
