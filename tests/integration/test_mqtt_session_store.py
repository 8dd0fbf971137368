"""Persistent sessions that survive a restart of the MQTT gateway
(gateway/mqtt/session_store.go, docs/mqtt-design.md "Sessions that survive
a gateway restart"), with REAL components: test_mqtt_retained.py's
environment (two qdrouterd 1.19, two Artemis pool brokers, the standard
space converged with its MQTT service, the auth service), a gateway binary
of that space of each test's own, stopped with SIGKILL and started again,
REAL paho-mqtt clients (MQTT 5 with a session expiry, 3.1.1 with clean
session 0) and a REAL AMQP producer (python-qpid-proton) sending to the
space's queue ``q1`` while no gateway runs. The session records live in the
space's broker (the retained queue, key ``$session/<client id>``)."""
import contextlib
import os
import time

import pytest

import test_auth_service_router as asr
import test_mqtt_gateway as tmg
from mqtt_retained_env import Gateway, gateway_config, on
from test_mqtt_gateway import Consumer
# env is test_mqtt_retained's fixture, used here by name
from test_mqtt_retained import env  # noqa: F401 pylint: disable=unused-import
from test_mqtt_sessions import PUBCOMP, PUBREC, Raw, Session, cid, send_amqp

pytestmark = [pytest.mark.integration, pytest.mark.router]


@pytest.fixture
def gw(env, tmp_path):
    config = gateway_config(env["std"], str(tmp_path), env["status"], 0, env["service_password"])
    g = Gateway(tmg.gateway_binary(), str(tmp_path), "gw-sessions", config).start()
    try:
        yield g
    finally:
        while tmg.OPEN:  # every session ended, so none shares q1's messages in the next test
            try:
                tmg.OPEN.pop().close()
            except AssertionError:
                pass
        if g.proc:
            asr.stop(g.proc)


def logged(g, *words):
    with open(g.log) as f:
        return [line for line in f if all(w in line for w in words)]


def away(s, g):
    """A normal DISCONNECT; returns once the gateway wrote the session's record."""
    s.disconnect()
    assert tmg.wait_for(lambda: logged(g, "msg=disconnected", "client=" + s.client_id, "session_kept=true"), 10)


def restart(g, pause=0.0):
    g.kill()  # SIGKILL: nothing is written at the end
    time.sleep(pause)
    g.start()


def payloads(tag, n=3):
    return [("%s-%d-%s" % (tag, i, os.urandom(3).hex())).encode() for i in range(n)]


def got(s, bodies):
    return [m[1] for m in s.messages if m[1] in bodies]


def persistent(genv, g, tag, version=5, expiry=300):
    """A session subscribed to q1 (QoS 1), gone away."""
    s = Session(genv, cid(tag), version=version, expiry=expiry).connect()
    assert s.connack == 0 and not s.present
    assert s.subscribe("q1") == [1]
    away(s, g)
    return s


@pytest.mark.parametrize("version", [5, 3])
def test_a_persistent_session_survives_a_restart_of_the_gateway(env, gw, version):
    genv = on(env, gw)
    s = persistent(genv, gw, "keep%d" % version, version=version)
    gw.kill()
    bodies = payloads("restart%d" % version)
    send_amqp(env, "q1", bodies)  # into the broker's queue while no gateway runs
    gw.start()
    s.connect()
    assert s.connack == 0 and s.present, "session present %s after the restart" % s.present
    assert tmg.wait_for(lambda: len(got(s, bodies)) == 3, 15), s.messages
    assert sorted(got(s, bodies)) == sorted(bodies)
    assert all(m[2] == 1 for m in s.messages if m[1] in bodies)
    assert logged(gw, "session restored from the store", "client=" + s.client_id, "subscriptions=1")


@pytest.mark.parametrize("version", [5, 3])
def test_after_a_restart_another_user_cannot_take_the_session(env, gw, version):
    genv = on(env, gw)
    s = persistent(genv, gw, "owned%d" % version, version=version)
    restart(gw)
    other = Session(genv, s.client_id, version=version, user="carol", password="carol-pw").connect()
    # MQTT 5: 0x85; 3.1.1: return code 2, which paho reports as the same reason code
    assert other.connack is not None and other.connack.value == 0x85, other.connack
    s.connect()  # the owner's session is still there
    assert s.connack == 0 and s.present


def test_a_clean_start_after_a_restart_discards_the_stored_session(env, gw):
    genv = on(env, gw)
    gone = persistent(genv, gw, "clean")
    control = persistent(genv, gw, "control", version=3)
    restart(gw)
    fresh = Session(genv, gone.client_id, clean=True, expiry=0).connect()
    assert fresh.connack == 0 and not fresh.present
    control.connect()
    assert control.present, "the other session did not survive the same restart"
    bodies = payloads("clean")
    send_amqp(env, "q1", bodies)
    assert tmg.wait_for(lambda: len(got(control, bodies)) == 3, 15), control.messages
    assert not got(fresh, bodies), "an old subscription of the clean session delivered"
    fresh.c.loop_stop()  # the gateway dies under it: only the clean start itself removed the record
    restart(gw)
    fresh.c.socket().close()
    tmg.OPEN.remove(fresh)
    again = Session(genv, gone.client_id).connect()
    assert again.connack == 0 and not again.present, "the clean start left the stored session"


def test_an_expired_stored_session_is_not_resumed(env, gw):
    genv = on(env, gw)
    short = persistent(genv, gw, "short", expiry=2)
    control = persistent(genv, gw, "long", version=3)
    restart(gw, pause=3.0)  # killed within the 2 s: mochi did not expire it, the record must
    short.connect()
    assert short.connack == 0 and not short.present, "an expired session was resumed"
    control.connect()
    assert control.connack == 0 and control.present
    assert logged(gw, "session record expired", "client=" + short.client_id)


def test_session_records_are_neither_retained_messages_nor_reachable_by_clients(env, gw):
    """The records share the retained queue: a new subscriber of '#' gets no
    record, and a client cannot publish a record (a '$' topic, not an address)."""
    genv = on(env, gw)
    s = persistent(genv, gw, "records")  # no "secret" in the id: the log is searched for the password "secret-a"
    seen = []
    c = tmg.Mqtt(genv, "alice", "secret-a")
    c.c.on_message = lambda _c, _u, m: seen.append(m.topic)
    assert c.subscribe("#")[0] in (0, 1)
    tmg.wait_for(lambda: False, 1.0)  # the retained read (300 ms idle) and its messages
    assert not [t for t in seen if t.startswith("$")], seen
    assert c.puback(c.publish("$session/" + s.client_id, b"{}")).value == 0x87
    c.close()
    tmg.OPEN.remove(c)
    with open(gw.log) as f:
        assert "secret-a" not in f.read()


@pytest.mark.parametrize("stop", ["kill", "terminate"])
def test_a_session_connected_while_the_gateway_stops_is_restored_at_pahos_reconnect(env, gw, stop):
    """SIGKILL (the record has no disconnect time) and SIGTERM (mochi closes
    the client, the record gets one); paho reconnects by itself."""
    genv = on(env, gw)
    s = Session(genv, cid("live-" + stop)).connect()
    assert s.subscribe("q1") == [1] and not s.present
    getattr(gw.proc, stop)()
    gw.proc.wait(15)
    bodies = payloads("live-" + stop)
    send_amqp(env, "q1", bodies)
    gw.start()
    assert tmg.wait_for(lambda: s.present, 20), "paho did not reconnect to a resumed session (%s)" % s.connack
    assert tmg.wait_for(lambda: len(got(s, bodies)) == 3, 15), s.messages
    assert sorted(got(s, bodies)) == sorted(bodies)


def test_a_session_whose_gateway_was_killed_under_it_expires_from_the_last_heartbeat(env, gw):
    """SIGKILL under connected clients that do not come back: their records
    have no disconnect time. A record ends its expiry after the later of its
    write and its gateway's last heartbeat, plus 10 s (session_sweep.go): the
    restarted gateway's first sweep removes the one of expiry 1 s; the one
    of 300 s is restored."""
    genv = on(env, gw)
    short = Session(genv, cid("killed-short"), expiry=1).connect()
    kept = Session(genv, cid("killed-kept")).connect()
    for s in (short, kept):
        assert s.subscribe("q1") == [1] and not s.present
        s.c.loop_stop()  # gone for good: paho does not reconnect by itself
    restart(gw, pause=13.0)  # > 1 s + 10 s after the last write or heartbeat (whole seconds)
    assert logged(gw, "session record expired: removed", "client=" + short.client_id)
    short.connect()
    assert short.connack == 0 and not short.present, "the session of a killed gateway never ended"
    kept.connect()
    assert kept.connack == 0 and kept.present


def test_a_qos2_resend_after_a_kill_9_is_acknowledged_not_forwarded_again(env, gw):
    """QoS 2 across a restart: a 3.1.1 client (clean session 0, its session
    stored) has the PUBREC of packet id 7 and no PUBCOMP when the gateway is killed; after
    the restart it resends the PUBLISH with DUP, gets PUBREC, PUBRELs,
    gets PUBCOMP: the AMQP consumer has one copy (the id was in the
    session's record before the PUBREC). The id used again afterwards is a
    new message."""
    genv = on(env, gw)
    client_id = cid("qos2-kill")
    first, second = payloads("qos2-kill", 2)
    s = Session(genv, client_id, version=3).connect()  # a stored session (a subscription) before the QoS 2
    assert s.subscribe("t/a") == [1]
    away(s, gw)
    consumer = Consumer(env, "q1")
    try:
        r = Raw(genv, client_id, user="alice", password="secret-a")
        assert r.present == 1
        r.publish("q1", 7, first)
        r.expect(PUBREC, 7)
        restart(gw)  # SIGKILL before the PUBREL
        r.drop()
        r = Raw(genv, client_id, user="alice", password="secret-a")
        assert r.present == 1
        r.publish("q1", 7, first, dup=True)
        r.expect(PUBREC, 7)
        r.pubrel(7)
        r.expect(PUBCOMP, 7)
        r.publish("q1", 7, second)  # released: the id is free again
        r.expect(PUBREC, 7)
        r.pubrel(7)
        r.expect(PUBCOMP, 7)
        consumer.wait(2)
        time.sleep(2)  # a second copy would have come by now
        assert [bytes(m.body) for m in consumer.messages] == [first, second]
        assert logged(gw, "session restored from the store", "client=" + client_id, "qos2_ids=1")
        r.drop()  # its session has no subscription: nothing of q1 is held for it
    finally:
        consumer.stop()


@contextlib.contextmanager
def second_instance(env, tmp_path):
    """A second gateway instance of the space (on the other router); its
    sessions are ended while it runs, then it is stopped."""
    root = tmp_path / "second"
    root.mkdir()
    config = gateway_config(env["std"], str(root), env["status"], 1, env["service_password"])
    gw2 = Gateway(tmg.gateway_binary(), str(root), "gw-sessions-2", config).start()
    try:
        yield gw2
    finally:
        for s in [s for s in tmg.OPEN if s.env["port"] == gw2.port]:
            tmg.OPEN.remove(s)
            try:
                s.close()
            except AssertionError:
                pass
        asr.stop(gw2.proc)


@pytest.mark.parametrize("connected", [True, False])
def test_a_session_another_instance_takes_over_leaves_the_first_one(env, gw, tmp_path, connected):
    """Live takeover across instances (gateway/mqtt/takeover.go): a client
    id's persistent session on one instance (its client connected, or gone
    away) is taken over by a CONNECT to a second instance of the space. The
    first disconnects its client (MQTT 5 0x8E) and closes its receivers: all
    20 messages sent to the queue q1 afterwards reach the client on the
    second instance, none the first (without the takeover, the first's
    receiver kept a share of them)."""
    genv = on(env, gw)
    with second_instance(env, tmp_path) as gw2:
        first = Session(genv, cid("moving-%s" % connected)).connect()
        assert first.subscribe("q1") == [1] and not first.present
        first.c.reconnect_delay_set(60, 120)  # paho would come back at once and take the session back
        if not connected:
            away(first, gw)
        second = Session(on(env, gw2), first.client_id).connect()
        assert second.connack == 0 and second.present, "not restored from the record"
        assert tmg.wait_for(lambda: logged(gw, "session taken over by another instance",
                                           "client=" + first.client_id, "connected=%s" % str(connected).lower()), 10)
        if connected:
            assert tmg.wait_for(lambda: first.disconnect_rc is not None, 10), "the first client was not disconnected"
            assert first.disconnect_rc.value == 0x8E, first.disconnect_rc
        bodies = payloads("moved-%s" % connected, 20)
        send_amqp(env, "q1", bodies)
        assert tmg.wait_for(lambda: len(got(second, bodies)) == 20, 20), (len(got(second, bodies)), len(got(first, bodies)))
        assert sorted(got(second, bodies)) == sorted(bodies) and not got(first, bodies)


@pytest.mark.parametrize("expiry", [0, 300])
def test_a_clean_start_on_another_instance_ends_the_session_the_first_one_holds(env, gw, tmp_path, expiry):
    """A CONNECT with clean start 1 to a second instance, of a client id
    whose persistent session the first instance holds with its client
    connected (gateway/mqtt/takeover.go "cleanStart"): the second writes
    the record's tombstone flagged as a takeover, and the first ends its
    session as a clean start within one instance does: its client gets
    DISCONNECT 0x8E, its receiver of q1 is closed (the 20 messages sent to
    q1 afterwards all reach the new connection's subscription, none the old
    client), and the session is gone (a CONNECT with clean start 0 to the
    first instance later gets session present 0). Before, the first client
    stayed connected and kept its share of q1, and its session was resumed."""
    genv = on(env, gw)
    with second_instance(env, tmp_path) as gw2:
        # the second's takeover watcher is attached: it indexes the record the first writes next
        assert tmg.wait_for(lambda: logged(gw2, "session takeovers: watching"), 15)
        first = Session(genv, cid("clean-elsewhere-%d" % expiry)).connect()
        assert first.subscribe("q1") == [1] and not first.present  # its record written before the SUBACK
        first.c.reconnect_delay_set(60, 120)  # paho would come back at once
        time.sleep(0.5)  # the record's first write reaches the second instance's watcher (milliseconds)
        second = Session(on(env, gw2), first.client_id, expiry=expiry, clean=True).connect()
        assert second.connack == 0 and not second.present
        assert tmg.wait_for(lambda: logged(gw, "session taken over by another instance",
                                           "client=" + first.client_id, "connected=true"), 10), \
            "the first instance kept the session of a client id that made a clean start elsewhere"
        assert tmg.wait_for(lambda: first.disconnect_rc is not None, 10), "the first client was not disconnected"
        assert first.disconnect_rc.value == 0x8E, first.disconnect_rc
        assert second.subscribe("q1") == [1]
        bodies = payloads("clean-elsewhere-%d" % expiry, 20)
        send_amqp(env, "q1", bodies)
        assert tmg.wait_for(lambda: len(got(second, bodies)) == 20, 20), (len(got(second, bodies)), len(got(first, bodies)))
        assert sorted(got(second, bodies)) == sorted(bodies) and not got(first, bodies)
        second.close()
        tmg.OPEN.remove(second)
        # its session ended there (expiry 0 at the DISCONNECT; the tombstone of its record, if it wrote one, first)
        assert tmg.wait_for(lambda: logged(gw2, "msg=disconnected", "client=" + first.client_id,
                                           "session_kept=false"), 10)
        third = Session(genv, first.client_id).connect()  # clean start 0, on the first instance
        assert third.connack == 0 and not third.present, "the first instance resumed the ended session"
