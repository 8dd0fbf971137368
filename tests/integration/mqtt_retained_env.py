"""What tests/integration/test_mqtt_retained.py builds its environment
with: the spaces' names and addresses, the modules' arguments, the service
realm's users file as the auth_service role writes it, a gateway instance
configured from the space's ``mqtt_service`` status as the mqtt_gateway
role does, the retained queue's state on a broker (JMX), and the clients
the tests use (paho through a gateway, python-qpid-proton through the
routers)."""
import json
import os
import subprocess

import pytest

import test_auth_service_router as asr
import test_mqtt_gateway as tmg
from helpers import run_module
from standard_env import StandardEnv, build_router

from ansible_collections.enmasse.messaging.plugins.filter.auth_service import auth_service_mqtt_users_file
from ansible_collections.enmasse.messaging.plugins.module_utils.auth import backends
from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping

SPACE, OTHER = "space-a", "space-b"
RETAINED = "$mqtt/space-a/retained"
ADDRESSES = {"q1": "queue", "t/a": "topic", "t/b": "topic", "t/c": "topic", "t/d": "topic", "t/e": "topic",
             "t/f": "topic", "t/g": "topic", "t/h": "topic", "m/a": "multicast"}
PLANS = {"queue": "standard-small-queue", "topic": "standard-small-topic", "multicast": "standard-small-multicast"}


def common(std, space):
    return std.module_args(catalogue_path=std.catalogue_path, connection_file=std.connection_file(space))


def make_space(std, space, check_mode=False):
    return run_module("address_space", dict(common(std, space), name=space, type="standard",
                                            plan="standard-unlimited"), check_mode=check_mode, diff=True)


def write_users(std, realm, users):
    """users: {name: (password, groups)} in the auth service's users directory (few PBKDF2 iterations)."""
    doc = backends.users_file_document(realm, dict(
        (name, {"password": backends.hash_password(pw, iterations=1000), "groups": groups})
        for name, (pw, groups) in users.items()))
    with open(os.path.join(std.auth_service.users_dir, realm + ".json"), "w") as f:
        json.dump(doc, f)


def write_service_realm(std, space):
    """The service realm's users file as the auth_service role writes it
    (tasks/mqtt.yml: filter auth_service_mqtt_users_file); its password."""
    password = "svc-" + os.urandom(8).hex()
    doc = auth_service_mqtt_users_file(space, password, iterations=1000)
    with open(os.path.join(std.auth_service.users_dir, space + ".mqtt.json"), "w") as f:
        json.dump(doc, f)
    return password


def new_env(tmp_path_factory, name, brokers):
    """(gateway binary, a work directory, a StandardEnv not started: two routers, ``brokers`` pool
    brokers, an MQTT gateway serving SPACE and OTHER as site.yml names them, playbooks/vars/mqtt.yml)."""
    pytest.importorskip("proton")
    pytest.importorskip("paho.mqtt")
    binary = tmg.gateway_binary()
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)
    root = str(tmp_path_factory.mktemp(name))
    std = StandardEnv(str(tmp_path_factory.mktemp("std")), prefix, routers=2, brokers=brokers)
    std.mqtt_gateways = [{"host": "127.0.0.1", "spaces": [{"name": SPACE, "tls_port": 8883},
                                                          {"name": OTHER, "tls_port": 8884}]}]
    return binary, root, std


def provision(std, other_addresses=None):
    """SPACE with ADDRESSES and OTHER with ``other_addresses`` (default the
    same) converged, their users (alice, carol; bob) and service realms
    written: ({space: its first converge's result}, {space: service password},
    SPACE's status from a second converge, which must change nothing)."""
    first = {}
    for space in (SPACE, OTHER):
        res = make_space(std, space)
        assert res.rc == 0 and res.result["changed"], res.result
        first[space] = res.result
        wanted = ADDRESSES if space == SPACE or other_addresses is None else other_addresses
        res = run_module("address", dict(common(std, space), address_space=space, prune=True, addresses=[
            {"address": a, "type": t, "plan": PLANS[t]} for a, t in sorted(wanted.items())]))
        assert res.rc == 0, res.result
    write_users(std, SPACE, {"alice": ("secret-a", asr.ALL), "carol": ("carol-pw", ["send_t%2Fa", "recv_t%2Fa"])})
    write_users(std, OTHER, {"bob": ("secret-b", asr.ALL)})
    passwords = dict((s, write_service_realm(std, s)) for s in (SPACE, OTHER))
    again = make_space(std, SPACE)  # idempotent: nothing changes the second time
    assert again.rc == 0 and again.result["changed"] is False, again.result
    return first, passwords, again.result["address_space"]["status"]


def space_ports(std, space):
    with open(std.connection_file(space)) as f:
        return [e["port"] for e in json.load(f)["endpoints"] if e["name"].startswith("amqp")]


class Gateway(object):
    def __init__(self, binary, root, name, config):
        self.binary, self.name, self.port = binary, name, asr.free_port()
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


def gateway_config(std, root, status, router, password):
    """A gateway instance's configuration as the mqtt_gateway role writes it
    for a space with the service (``router``: the index of its own router, first)."""
    svc = status["mqtt_service"]
    ports = space_ports(std, SPACE)
    order = [router] + [i for i in range(len(ports)) if i != router]
    password_file = os.path.join(root, "service-password")
    with open(password_file, "w") as f:
        f.write(password)
    os.chmod(password_file, 0o640)
    table = os.path.join(root, "table.json")
    tmg.write_table(table, ADDRESSES)
    cert, key = std.ca.issue("gateway")
    return {"space": SPACE, "tls_cert_file": cert, "tls_key_file": key,
            "routers": ["127.0.0.1:%d" % ports[i] for i in order], "router_tls": True,
            "router_ca_file": std.ca.cert_file, "table_file": table, "log_level": "debug",
            "service_routers": ["127.0.0.1:%d" % svc["endpoints"][i]["port"] for i in order],
            "service_user": svc["user"], "service_password_file": password_file, "retained_address": svc["queue"]}


def queue_state(env, broker, queue=RETAINED):
    """The queue's settings (its configuration as Artemis' updateQueue with
    the name alone returns it) and the count of topic values on ``broker``
    (an ArtemisBroker), None when absent."""
    from helpers import broker_mbean
    j = broker.jolokia()
    if queue not in (j.read(broker_mbean(broker.name), "QueueNames") or []):
        return None
    config = json.loads(broker_op(broker, "updateQueue(java.lang.String)", json.dumps({"name": queue})))
    # the gateways' own records ($instance/<id> heartbeats, $session/<client id>) share the queue:
    # count the topics' values only
    count = j.execute('org.apache.activemq.artemis:broker="%s",component=addresses,address="%s",subcomponent=queues,'
                      'routing-type="%s",queue="%s"' % (broker.name, queue, config["routing-type"].lower(), queue),
                      "countMessages(java.lang.String)", "mqtt_topic NOT LIKE '$%'")
    return {"routing-type": config["routing-type"], "durable": config["durable"],
            "last-value-key": config.get("last-value-key"), "non-destructive": config["non-destructive"],
            "count": count}


def broker_op(broker, op, *args):
    from helpers import broker_mbean
    return broker.jolokia().execute(broker_mbean(broker.name), op, *args)


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


def retain_many(env, values, gw=0):
    """Retained publishes of [(topic, payload)] in order over one connection, each PUBACKed (stored)."""
    c = client(env, gw)
    for topic, payload in values:
        rc = c.puback(c.c.publish(topic, payload, qos=1, retain=True).mid)
        assert rc is not None and getattr(rc, "value", rc) == 0, (topic, rc)
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


def cannot_receive(conn, address):
    """The attach is refused, or nothing comes (no message reaches the client)."""
    from proton import Timeout
    from proton.utils import LinkDetached
    try:
        msg = conn.create_receiver(address, credit=10).receive(timeout=3)
    except (Timeout, LinkDetached):
        return True
    return msg is None


def receive_refusal(conn, address):
    """Why the router refused a receiver on ``address`` ("": attached)."""
    from proton.utils import LinkDetached
    try:
        conn.create_receiver(address, credit=1)
    except LinkDetached as e:
        return "%s %s" % (type(e).__name__, e)
    return ""


def send_refusal(conn, address):
    """Why the router refused a sender to ``address`` or its message ("": sent and accepted;
    "timeout": no credit, which is not a refusal by the policy)."""
    from proton import Message, Timeout
    from proton.utils import LinkDetached, SendException
    try:
        conn.create_sender(address).send(Message(body="x"), timeout=3)
    except Timeout:
        return "timeout"
    except (LinkDetached, SendException) as e:
        return "%s %s" % (type(e).__name__, e)
    return ""


def amqp_send(env, address, body, retain=None, user="alice", password="secret-a"):
    """An AMQP client of the space sends one durable message (``retain``: the
    x-opt-mqtt-retain annotation, None: without it) and waits for its settlement."""
    from proton import Endpoint, Message, symbol
    annotations = {} if retain is None else {symbol(mapping.ANNOTATION_RETAIN): retain}
    conn = asr.connect(env, SPACE, user, password)
    try:
        # not BlockingConnection.create_sender: through a link route (a topic address) qdrouterd
        # echoes the space's internal address, which proton's check refuses
        link = conn.container.create_sender(conn.conn, address)
        conn.wait(lambda: not (link.state & Endpoint.REMOTE_UNINIT), msg="attach %s" % address, timeout=10)
        conn.wait(lambda: link.credit > 0, msg="credit on %s" % address, timeout=10)
        delivery = link.send(Message(body=body, durable=True, annotations=annotations))
        conn.wait(lambda: delivery.remote_state, msg="the outcome on %s" % address, timeout=10)
        assert delivery.remote_state == delivery.ACCEPTED, (address, delivery.remote_state)
        delivery.settle()
    finally:
        conn.close()


def retained_soon(env, topic, want, timeout=15):
    """A new subscriber (on the second gateway) gets ``want`` (a list of
    (topic, payload, retain flag)) within ``timeout`` seconds; the last answer."""
    got = []

    def once():
        got[:] = subscribe_and_get(env, topic, gw=1, timeout=2)
        return got == want
    tmg.wait_for(once, timeout)
    return got
