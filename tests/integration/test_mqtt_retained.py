"""Retained MQTT messages of a standard space (gateway/mqtt/retained.go,
docs/mqtt-design.md "Retained messages: what is built") provisioned by the
tooling, with REAL components: a mesh of two qdrouterd 1.19 routers and a
real Artemis pool broker (standard_env.StandardEnv), the standard spaces
converged by the address_space/address modules with the infrastructure file
naming an MQTT gateway for them (so the converge declares each space's MQTT
service: the listener of realm ``<space>.mqtt``, the linkRoutes ``$mqtt/<space>``
and the last-value queue ``$mqtt/<space>/retained``), the service realm's users
file made by the auth_service role's filter, the auth service, two gateway
binaries of the same space (one per router, configured from the space's
``mqtt_service`` status as the mqtt_gateway role is), paho-mqtt and Debian's
mosquitto_sub. One environment for the module; its second pool broker takes
the retained queue when the first is drained (the last test)."""
import json
import os
import subprocess
import time

import pytest

import test_auth_service_router as asr
import test_mqtt_gateway as tmg
# an autouse fixture: each test's MQTT clients are closed after it
from test_mqtt_gateway import close_clients  # noqa: F401 pylint: disable=unused-import
from helpers import run_module
from mqtt_retained_env import (OTHER, RETAINED, SPACE, Gateway, amqp_send, broker_op, cannot_receive, client,
                               common, gateway_config, make_space, new_env, on, provision, queue_state, receive_refusal,
                               retain, retain_many, retained_soon, send_refusal, space_ports, subscribe_and_get)

from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping

pytestmark = [pytest.mark.integration, pytest.mark.router]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    # two pool brokers: the retained queue on the first (the tie), the second takes it when the first drains
    binary, root, std = new_env(tmp_path_factory, "mqtt-retained", brokers=2)
    gateways = []
    try:
        std.start()
        first, passwords, status = provision(std)
        gateways = [Gateway(binary, root, "gw%d" % (i + 1),
                            gateway_config(std, root, status, i, passwords[SPACE])).start() for i in range(2)]
        yield {"std": std, "gateways": gateways, "broker": std.brokers[0], "ca": std.ca.cert_file,
               "ports": {SPACE: space_ports(std, SPACE)[0], OTHER: space_ports(std, OTHER)[0]},
               "service_ports": dict((s, first[s]["address_space"]["status"]["mqtt_service"]["endpoints"][0]["port"])
                                     for s in (SPACE, OTHER)),
               "service_password": passwords[SPACE], "passwords": passwords, "first": first, "status": status,
               "port": gateways[0].port}
    finally:
        for gw in gateways:
            if gw.proc:
                asr.stop(gw.proc)
        std.stop()


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


def test_an_amqp_client_makes_its_message_retained_with_the_annotation(env):
    """mapping.py's rule: x-opt-mqtt-retain true on a message to a topic or multicast address; the
    gateways receive their copy and store it (gateway/mqtt/observer.go): a new MQTT subscriber gets it
    with the retain flag; a message without the annotation is delivered and not kept; an empty body
    clears the topic."""
    for topic in ("t/h", "m/a"):
        body = ("from amqp " + topic).encode()
        got = retained_soon(env, topic, [(topic, body, True)])
        assert got == [], "retained before it was sent: %r" % got
        amqp_send(env, topic, body, retain=True)
        assert retained_soon(env, topic, [(topic, body, True)]) == [(topic, body, True)], topic
        amqp_send(env, topic, b"live only")  # no annotation
        amqp_send(env, topic, b"not retained", retain=False)
        time.sleep(2)  # what the observers would store by now
        assert subscribe_and_get(env, topic, gw=0) == [(topic, body, True)], topic
        amqp_send(env, topic, b"", retain=True)
        assert retained_soon(env, topic, []) == [], topic


def test_a_retained_publish_of_mqtt_is_stored_once_not_again_by_the_observers(env):
    """The forwarded copy of an MQTT retained publish carries x-opt-mqtt-stored: the gateways that
    receive it on t/h do not store it a second time (which, written after a later publish, could
    bring an older value back)."""
    def stored_from_amqp():
        lines = []
        for gw in env["gateways"]:
            with open(gw.log) as f:
                lines += [line for line in f if "retained from AMQP" in line and "topic=t/h" in line]
        return lines
    before = stored_from_amqp()
    retain(env, "t/h", b"from mqtt")
    time.sleep(2)  # PUBACKed: in the broker; its copies reached the observers by now
    assert stored_from_amqp() == before
    assert subscribe_and_get(env, "t/h") == [("t/h", b"from mqtt", True)]
    # and the observers are there to see it: a marked AMQP message on t/h is stored (by each gateway)
    amqp_send(env, "t/h", b"", retain=True)
    assert tmg.wait_for(lambda: len(stored_from_amqp()) >= len(before) + 2, 10), stored_from_amqp()


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

    def once():
        try:
            got.extend(subscribe_and_get(env, "t/e", timeout=3))
        except AssertionError:  # the topic is link-routed to the broker: refused until the router reconnects
            pass
        return got
    assert tmg.wait_for(once, 60), \
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
    conn = asr.connect(env, SPACE, "alice", "secret-a")
    try:
        assert cannot_receive(conn, RETAINED)
    finally:
        conn.close()
    service_env = dict(env, ports={SPACE: env["service_ports"][SPACE]})
    assert asr.refused(service_env, SPACE, "alice", "secret-a")  # the connection is refused
    # and the service user is unknown in the space's realm
    assert asr.refused(env, SPACE, "mqtt-gateway", env["service_password"])


def test_the_service_user_itself_reads_the_retained_queue(env):
    """The queue the refusals protect is there and readable by the right
    user (so the refusals above can fail): the service user on the service
    listener browses the last value of t/g."""
    retain(env, "t/g", b"internal")
    service_env = dict(env, ports={SPACE: env["service_ports"][SPACE]})
    conn = asr.connect(service_env, SPACE, "mqtt-gateway", env["service_password"])
    try:
        rcv = conn.create_receiver(RETAINED, credit=100)
        topics = []
        from proton import Timeout
        # every gateway writes its heartbeat ($instance/<id>) into the queue every 5 s: a browse
        # never goes idle for long with two of them, so it stops once t/g came (or after 30 s)
        deadline = time.time() + 30
        while "t/g" not in topics and time.time() < deadline:
            try:
                topics.append((rcv.receive(timeout=3).properties or {}).get("mqtt_topic"))
                rcv.accept()  # the queue is non-destructive: accepting removes nothing
            except Timeout:  # nothing more
                break
        assert "t/g" in topics, topics
    finally:
        conn.close()


def test_the_service_user_sends_to_the_spaces_declared_addresses_only(env):
    """The wills a gateway journaled before it died go out on the service connection
    (gateway/mqtt/journal.go): the vhost space-a.mqtt lets the service user send to space-a/X for
    the declared addresses X, and nothing else (mqtt_service.service_targets)."""
    from proton import Message
    body = "svc-" + os.urandom(4).hex()
    consumer = tmg.Consumer(env, "q1")
    conn = asr.connect(dict(env, ports={SPACE: env["service_ports"][SPACE]}), SPACE, "mqtt-gateway",
                       env["service_password"])
    try:
        conn.create_sender("space-a/q1").send(Message(body=body), timeout=10)  # accepted, else it raises
        assert tmg.wait_for(lambda: [m for m in consumer.messages if m.body == body], 10), "not delivered to q1"
        for name in ("space-a/undeclared", "space-b/q1", "q1", "space-a/"):
            why = send_refusal(conn, name)
            assert "unauthorized" in why, (name, why)  # the vhost's policy, not a lack of credit
        assert cannot_receive(conn, "space-a/q1")  # send only: a queue's message is its consumer's
        assert "unauthorized" in receive_refusal(conn, "space-b/t/a")  # another space's topic never
    finally:
        conn.close()
        consumer.stop()


def test_a_user_of_another_space_cannot_reach_this_spaces_retained_queue(env):
    retain(env, "t/g", b"internal")
    # bob of space-b: through his own listener the name gets his space's prefix
    conn = asr.connect(env, OTHER, "bob", "secret-b")
    try:
        assert cannot_receive(conn, RETAINED)
    finally:
        conn.close()
    # bob and space-b's service user on space-a's service listener: unknown in realm space-a.mqtt
    service_a = dict(env, ports={SPACE: env["service_ports"][SPACE]})
    assert asr.refused(service_a, SPACE, "bob", "secret-b")
    assert asr.refused(service_a, SPACE, "mqtt-gateway", env["passwords"][OTHER])
    # space-b's service user on its own service listener may name only $mqtt/space-b/...
    service_b = dict(env, ports={OTHER: env["service_ports"][OTHER]})
    conn = asr.connect(service_b, OTHER, "mqtt-gateway", env["passwords"][OTHER])
    try:
        assert cannot_receive(conn, RETAINED)
    finally:
        conn.close()


def test_a_retained_message_needs_recv_on_the_topic(env):
    retain(env, "t/a", b"for alice")
    carol = client(env, user="carol", password="carol-pw")
    seen = []
    carol.c.on_message = lambda cl, u, m: seen.append(m.topic)
    assert carol.subscribe("t/+")[0] == 1  # only t/a attaches: carol has recv on t/a only
    assert tmg.wait_for(lambda: seen)
    tmg.wait_for(lambda: False, 0.5)
    assert seen == ["t/a"]


def test_a_wildcard_subscription_the_router_partly_refuses_keeps_the_users_connection(env):
    """carol may receive from t/a only: t/+ attaches a receiver per topic address at once on her
    user's shared router connection and the router refuses all but one (attach, then detach). With
    go-amqp 1.7.0 as released, a refused link's handle was freed before its answering detach went
    out, a receiver attached meanwhile took it, and the router ended the whole connection ("no such
    handle"): no SUBACK, and the other clients of that connection dropped too. The gateway is built
    with the fix (gateway/mqtt/patches/README.md): 25 rounds, every SUBACK grants t/+, and a client
    of carol that shares the connection stays connected throughout."""
    bystander = client(env, user="carol", password="carol-pw")
    for i in range(25):
        c = client(env, user="carol", password="carol-pw")
        assert c.subscribe("t/+")[0] == 1, "round %d" % i
        c.close()
    assert bystander.connected


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


# ------------------------------------------------- wills journaled by a gateway that died (issue 21)

def journal_files(state):
    return sorted(n for n in os.listdir(state) if n.endswith(".will"))


def test_wills_survive_a_kill_9_of_the_gateway(env, tmp_path):
    """A gateway instance with a state_dir (gateway/mqtt/journal.go) is killed with SIGKILL while
    clients with wills are connected; started again (as systemd's Restart=always does) it
    publishes each journaled will once, on its service connection: not the will of a client that
    DISCONNECTed normally, not a delayed will whose client (same id, same user) reconnected first;
    a second restart publishes nothing more."""
    from test_mqtt_wills import bodies, payload, will_client
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    config = gateway_config(env["std"], str(tmp_path), env["status"], 0, env["service_password"])
    gw = Gateway(tmg.gateway_binary(), str(tmp_path), "gw-journal", dict(config, state_dir=str(state))).start()
    consumer = tmg.Consumer(env, "q1")
    try:
        genv = on(env, gw)
        tags = ("crash-now", "crash-normal", "crash-cancel", "crash-delay")
        now, normal, cancelled, delayed = (payload(t) for t in tags)
        clients = [will_client(genv, "q1", now, client_id="crash-now"),
                   will_client(genv, "q1", normal, client_id="crash-normal")]
        t_cancel = time.time()  # before the gateway registered that will (its delay runs from there)
        # a delay long enough for the kill, the restart and the reconnect on a loaded machine
        clients.append(will_client(genv, "q1", cancelled, client_id="crash-cancel", delay=12))
        t_delay = time.time()
        clients.append(will_client(genv, "q1", delayed, client_id="crash-delay", delay=3))
        registered = time.time()  # after every registration
        assert [m.connack for m in clients] == [0, 0, 0, 0]
        clients[1].close()  # a normal DISCONNECT: its journal file goes
        tmg.OPEN.remove(clients[1])
        assert tmg.wait_for(lambda: len(journal_files(state)) == 3, 10), journal_files(state)
        text = "".join((state / n).read_text() for n in journal_files(state))
        assert "secret-a" not in text and "password" not in text and '"user":"alice"' in text
        for m in (clients[0], clients[2], clients[3]):  # no reconnect by paho, no DISCONNECT, no TCP close
            m.c.loop_stop()
        gw.kill()  # SIGKILL: the process sends nothing more
        time.sleep(0.5)
        assert not [x for x in consumer.messages if bytes(x.body) in (now, normal, cancelled, delayed)], \
            "a will went before the restart"
        for m in (clients[0], clients[2], clients[3]):
            m.c.socket().close()
            tmg.OPEN.remove(m)
        gw.start()  # Restart=always
        back = tmg.Mqtt(genv, "alice", "secret-a", client_id="crash-cancel")  # within crash-cancel's delay
        assert back.connack == 0
        assert time.time() - t_cancel < 12, "too slow to test the cancel"
        got = consumer.wait(1)
        assert tmg.wait_for(lambda: bodies(consumer, delayed), 15), "the delayed will did not come"
        assert time.time() - t_delay >= 3, "the delayed will came before its delay"
        assert tmg.wait_for(lambda: not journal_files(state), 10), journal_files(state)
        time.sleep(max(0.0, registered + 13 - time.time()))  # past crash-cancel's delay
        assert len(bodies(consumer, now)) == 1 and len(bodies(consumer, delayed)) == 1, consumer.messages
        assert not bodies(consumer, normal), "the will of a normal DISCONNECT was sent"
        assert not bodies(consumer, cancelled), "a delayed will whose client came back was sent"
        got = bodies(consumer, now)[0]
        assert got.durable and got.annotations[mapping.ANNOTATION_QOS] == 1
        assert bodies(consumer, delayed)[0].annotations[mapping.ANNOTATION_WILL_DELAY] == 3
        back.close()
        tmg.OPEN.remove(back)
        with open(gw.log) as f:
            log = f.read()
        assert log.count("journaled=true") == 2 and env["service_password"] not in log
        # a second restart: the journal is empty, nothing more is sent
        gw.kill()
        gw.start()
        time.sleep(1.5)
        assert len(bodies(consumer, now)) == 1 and len(bodies(consumer, delayed)) == 1, consumer.messages
        assert not bodies(consumer, normal) and not bodies(consumer, cancelled)
    finally:
        consumer.stop()
        if gw.proc:
            asr.stop(gw.proc)


def queue_names(env):
    from helpers import broker_mbean
    b = env["broker"]
    return b.jolokia().read(broker_mbean(b.name), "QueueNames") or []


def router_names(env, space):
    """The space's MQTT service entities on every router (management QUERY)."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import mqtt_service
    std = env["std"]
    with std.session() as s:
        out = {}
        for r in std.routers:
            rows = []
            for kind in ("listener", "linkRoute", "vhost", "authServicePlugin"):
                rows += [row["name"] for row in s.query("org.apache.qpid.dispatch.%s" % (
                    kind if kind != "linkRoute" else "router.config.linkRoute"), ["name"], router=r.id)]
            out[r.id] = sorted(n for n in rows if n in mqtt_service.entity_names(space))
    return out


def test_the_first_converge_declared_the_service_and_the_second_changes_nothing(env):
    svc = env["first"][SPACE]["address_space"]["mqtt_service"]
    assert set(svc) == {"port", "will_port", "broker"} and svc["broker"] == env["broker"].name
    assert svc["will_port"] != svc["port"]
    st = env["status"]["mqtt_service"]
    assert st["ready"] is True and st["messages"] == [], st
    assert (st["realm"], st["user"], st["queue"], st["prefix"]) == (
        "space-a.mqtt", "mqtt-gateway", RETAINED, "$mqtt/space-a")
    assert [e["port"] for e in st["endpoints"]] == [svc["port"], svc["port"] + 100]  # the routers' port_offset
    assert [e["port"] for e in st["will_endpoints"]] == [svc["will_port"], svc["will_port"] + 100]
    assert RETAINED in queue_names(env) and "$mqtt/space-b/retained" in queue_names(env)
    assert all(len(names) == 8 for names in router_names(env, SPACE).values())  # the will vhost, listener and linkRoute too
    info = run_module("address_space_info", dict(common(env["std"], SPACE), name=SPACE))
    assert info.result["address_space"]["status"]["mqtt_service"]["ready"] is True, info.result


def test_check_mode_of_a_new_space_with_mqtt_touches_nothing(env):
    std = env["std"]
    std.mqtt_gateways[0]["spaces"].append({"name": "space-c", "tls_port": 8885})
    std.write_infra()
    try:
        res = make_space(std, "space-c", check_mode=True)
        assert res.rc == 0 and res.result["changed"] is True, res.result
        planned = res.result["diff"]["after"]["mqtt_service"]
        assert planned["broker"] == env["broker"].name and planned["port"], planned
        assert res.result["changes"]["brokers"] == {env["broker"].name: [
            "createAddress $mqtt/space-c/retained", "createQueue $mqtt/space-c/retained"]}, res.result["changes"]
        st = res.result["address_space"]["status"]["mqtt_service"]
        assert st["ready"] is False and any("lacks" in m for m in st["messages"]), st
        assert "$mqtt/space-c/retained" not in queue_names(env)
        assert router_names(env, "space-c") == dict((r.id, []) for r in std.routers)
        assert not os.path.exists(std.connection_file("space-c"))
    finally:
        std.mqtt_gateways[0]["spaces"].pop()
        std.write_infra()


def test_removing_the_mqtt_endpoint_removes_the_service(env):
    """Last: space-b's gateway goes away; the converge removes its listener,
    linkRoutes, realm entities and retained queue (check mode first: nothing)."""
    std = env["std"]
    std.mqtt_gateways[0]["spaces"] = [s for s in std.mqtt_gateways[0]["spaces"] if s["name"] != OTHER]
    std.write_infra()
    checked = make_space(std, OTHER, check_mode=True)
    assert checked.rc == 0 and checked.result["changed"] is True, checked.result
    assert "mqtt_service" in checked.result["diff"]["before"] and "mqtt_service" not in checked.result["diff"]["after"]
    assert "$mqtt/space-b/retained" in queue_names(env)
    assert all(len(n) == 8 for n in router_names(env, OTHER).values())
    res = make_space(std, OTHER)
    assert res.rc == 0 and res.result["changed"] is True, res.result
    assert "mqtt_service" not in res.result["address_space"]["status"]
    assert "$mqtt/space-b/retained" not in queue_names(env)
    assert router_names(env, OTHER) == dict((r.id, []) for r in std.routers)
    from proton import ConnectionException
    with pytest.raises(ConnectionException):  # nothing listens on the service port any more
        asr.connect(dict(env, ports={OTHER: env["service_ports"][OTHER]}), OTHER, "mqtt-gateway",
                    env["passwords"][OTHER]).close()
    assert make_space(std, OTHER).result["changed"] is False
    # space-a is untouched
    assert RETAINED in queue_names(env) and all(len(n) == 8 for n in router_names(env, SPACE).values())


# ------------------------------------------------------------- the queue's settings, and a drain of its broker

RIGHT = {"routing-type": "ANYCAST", "durable": True, "last-value-key": "mqtt_topic", "non-destructive": True}


def test_a_queue_with_other_settings_is_corrected_keeping_its_values(env):
    """A queue that is not non-destructive is updated in place (updateQueue);
    one without the last-value key is made anew, its values kept: it held
    two messages of t/a, the new one holds t/a's last."""
    std, b1 = env["std"], env["broker"]
    broker_op(b1, "updateQueue(java.lang.String)", json.dumps({"name": RETAINED, "non-destructive": False}))
    assert queue_state(env, b1)["non-destructive"] is False
    info = run_module("address_space_info", dict(common(std, SPACE), name=SPACE))
    st = info.result["address_space"]["status"]["mqtt_service"]
    assert st["ready"] is False and st["messages"] == [
        "broker 'b1': queue %s has non-destructive False, not True" % RETAINED], st
    res = make_space(std, SPACE)
    assert res.rc == 0 and res.result["changed"] is True, res.result
    assert res.result["changes"]["brokers"] == {"b1": ["updateQueue " + RETAINED]}, res.result["changes"]
    assert res.result["address_space"]["status"]["mqtt_service"]["ready"] is True
    assert dict(queue_state(env, b1), count=0) == dict(RIGHT, count=0)

    # a plain durable queue (no last-value key), two values of t/a in it
    broker_op(b1, "destroyQueue(java.lang.String,boolean,boolean)", RETAINED, True, True)
    broker_op(b1, "createQueue(java.lang.String,boolean)", json.dumps(
        {"name": RETAINED, "address": RETAINED, "routing-type": "ANYCAST", "durable": True,
         "non-destructive": True}), True)
    retain_many(env, [("t/a", b"older"), ("t/a", b"newest"), ("t/c", b"kept")])
    assert queue_state(env, b1) == dict(RIGHT, **{"last-value-key": None, "count": 3})
    res = make_space(std, SPACE)
    assert res.rc == 0 and res.result["changed"] is True, res.result
    spare = "$mqtt/space-a/retained-rebuild"
    assert res.result["changes"]["brokers"] == {"b1": [
        "createAddress " + spare, "createQueue " + spare, "move %s to b1:%s" % (RETAINED, spare),
        "destroyQueue " + RETAINED, "deleteAddress " + RETAINED, "createAddress " + RETAINED,
        "createQueue " + RETAINED, "move %s to b1:%s" % (spare, RETAINED), "destroyQueue " + spare,
        "deleteAddress " + spare]}, res.result["changes"]
    assert queue_state(env, b1) == dict(RIGHT, count=2)  # one per topic: t/a's last, t/c
    assert queue_state(env, b1, spare) is None
    assert subscribe_and_get(env, "t/a", gw=1) == [("t/a", b"newest", True)]


def test_draining_the_queues_broker_moves_every_retained_value_to_the_other(env):
    """Last (the queue leaves b1): every topic's last value, set over MQTT,
    is on b2 after b1 is drained, exactly one per topic, and a new subscriber
    gets them from there; check mode first changes nothing; converged again,
    nothing changes."""
    std, b1, b2 = env["std"], env["broker"], env["std"].brokers[1]
    topics = ["t/a", "t/c", "t/d", "t/e", "t/f", "t/g"]
    retain_many(env, [(t, b"old " + t.encode()) for t in topics])
    retain_many(env, [(t, b"last " + t.encode()) for t in topics] + [("t/b", b"")], gw=1)  # t/b: a tombstone
    want = sorted((t, b"last " + t.encode(), True) for t in topics)
    std.draining = frozenset([b1.name])
    std.write_infra()
    try:
        checked = make_space(std, SPACE, check_mode=True)
        assert checked.rc == 0 and checked.result["changed"] is True, checked.result
        assert checked.result["changes"]["brokers"] == {
            "b1": ["move %s to b2:%s" % (RETAINED, RETAINED), "destroyQueue " + RETAINED, "deleteAddress " + RETAINED],
            "b2": ["createAddress " + RETAINED, "createQueue " + RETAINED]}, checked.result["changes"]
        assert checked.result["diff"]["after"]["mqtt_service"]["broker"] == "b2"
        assert queue_state(env, b2) is None and queue_state(env, b1)["count"] == len(topics) + 1
        res = make_space(std, SPACE)
        assert res.rc == 0 and res.result["changed"] is True, res.result
        st = res.result["address_space"]["status"]["mqtt_service"]
        assert st["broker"] == "b2" and st["ready"] is True, st
        assert queue_state(env, b1) is None
        assert queue_state(env, b2) == dict(RIGHT, count=len(topics) + 1)  # one per topic, the tombstone too
        assert sorted(subscribe_and_get(env, "t/+")) == want
        assert make_space(std, SPACE).result["changed"] is False
        retain(env, "t/a", b"after the drain", gw=1)  # stored on b2 now
        assert subscribe_and_get(env, "t/a") == [("t/a", b"after the drain", True)]
    finally:
        std.draining = frozenset()
        std.write_infra()
