"""The wills of AMQP clients (issue 21, deliverable 2: "the will ... work[s]
for AMQP clients too"; docs/mqtt-design.md "Wills of AMQP clients"), with
REAL components: two qdrouterd 1.19 routers and an Artemis pool broker
(standard_env.StandardEnv), the standard space converged by the
address_space/address modules with an MQTT gateway named for it (so the
converge declares its will listener and linkRoute), the auth service with
the space's users and the service realm, the will keeper as the
mqtt_gateway role installs it (the job_bundle's files and the role's entry
point, run by the host's python3 with Debian's python3-qpid-proton), one
gateway binary, paho-mqtt and python-qpid-proton clients.

The keeper is on the first router; the clients that leave wills are on the
second (their links cross the mesh); the subscribers are an AMQP receiver on
the first router and an MQTT subscriber through the gateway."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import test_auth_service_router as asr
import test_mqtt_gateway as tmg
# an autouse fixture: each test's MQTT clients are closed after it
from test_mqtt_gateway import close_clients  # noqa: F401 pylint: disable=unused-import
from mqtt_retained_env import OTHER, SPACE, Gateway, client, gateway_config, new_env, provision, space_ports
from standard_env import REPO

pytestmark = [pytest.mark.integration, pytest.mark.router]

ENTRY_POINT = os.path.join(REPO, "roles", "mqtt_gateway", "files", "enmasse-mqtt-will-keeper")

# one client that leaves a will: attach a sender to argv[5], send argv[7:] one by one, say
# "registered" when every one is accepted; mode clean: detach and close; hold: wait to be killed.
# Any end of the link it did not ask for is printed ("detached <condition>"), a rejected message too
# ("rejected <condition> <description>"). Environment: WILL_RETAIN=1, the messages carry x-opt-mqtt-retain
# true; WILL_DELAY=<n>, x-opt-mqtt-will-delay n; WILL_LINK, the link's name; WILL_CONTAINER, the
# container id.
WILL_CLIENT = r'''
import os, sys
from proton import Message, SSLDomain, symbol
from proton.handlers import MessagingHandler
from proton.reactor import Container
url, user, password, ca, target, mode = sys.argv[1:7]
bodies = sys.argv[7:]
class C(MessagingHandler):
    def __init__(self):
        super(C, self).__init__()
        self.sent = self.acked = 0
    def on_start(self, e):
        d = SSLDomain(SSLDomain.MODE_CLIENT)
        d.set_trusted_ca_db(ca)
        d.set_peer_authentication(SSLDomain.VERIFY_PEER)
        conn = e.container.connect(url, user=user, password=password, allowed_mechs="PLAIN", ssl_domain=d,
                                   reconnect=False)
        e.container.create_sender(conn, target, name=os.environ.get("WILL_LINK"))
    def on_sendable(self, e):
        while self.sent < len(bodies) and e.sender.credit:
            annotations = {}
            if os.environ.get("WILL_RETAIN"):
                annotations[symbol("x-opt-mqtt-retain")] = True
            if os.environ.get("WILL_DELAY"):
                annotations[symbol("x-opt-mqtt-will-delay")] = int(os.environ["WILL_DELAY"])
            e.sender.send(Message(body=bodies[self.sent], annotations=annotations or None))
            self.sent += 1
    def on_rejected(self, e):
        cond = e.delivery.remote.condition
        print("rejected %s %s" % (cond.name, cond.description) if cond else "rejected", flush=True)
    def on_accepted(self, e):
        self.acked += 1
        if self.acked == len(bodies):
            print("registered", flush=True)
            if mode == "clean":
                e.sender.close()
                e.connection.close()
    def on_link_remote_close(self, e):
        cond = e.link.remote_condition
        print("detached %s" % (cond.name if cond else None), flush=True)
        e.connection.close()
Container(C(), container_id=os.environ.get("WILL_CONTAINER")).run()
'''


class Keeper(object):
    """The will keeper as the mqtt_gateway role installs it."""

    def __init__(self, root, config):
        self.root = root
        self.program = asr.install_program(root, "will_keeper", "enmasse_will", ENTRY_POINT)
        self.config = os.path.join(root, "config.json")
        with open(self.config, "w") as f:
            json.dump(config, f)
        self.log = os.path.join(root, "keeper.log")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([asr.HOST_PYTHON, "-I", self.program, "--config", self.config],
                                     stdout=open(self.log, "a"), stderr=subprocess.STDOUT)
        return self

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            asr.stop(self.proc)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    if subprocess.run([asr.HOST_PYTHON, "-c", "import proton"], check=False).returncode != 0:
        pytest.skip("the host's python3 has no python3-qpid-proton (Debian package), which the keeper needs")
    binary, root, std = new_env(tmp_path_factory, "amqp-wills", brokers=1)
    procs = []
    try:
        std.start()
        unused, passwords, status = provision(std, other_addresses={"q1": "queue"})  # no m/a in the other space
        svc = status["mqtt_service"]
        gw = Gateway(binary, root, "gw1", gateway_config(std, root, status, 0, passwords[SPACE])).start()
        procs.append(gw)
        keeper = Keeper(os.path.join(root, "keeper"), {
            "space": SPACE, "routers": ["127.0.0.1:%d" % svc["will_endpoints"][0]["port"]],
            "user": svc["user"], "password_file": os.path.join(root, "service-password"),
            "router_ca_file": std.ca.cert_file, "log_level": "DEBUG"}).start()
        procs.append(keeper)
        e = {"std": std, "gateways": [gw], "ca": std.ca.cert_file, "keeper": keeper, "status": status,
             "ports": {SPACE: space_ports(std, SPACE)[0], OTHER: space_ports(std, OTHER)[0]},
             "second": space_ports(std, SPACE)[1], "other_second": space_ports(std, OTHER)[1],
             "service_password": passwords[SPACE]}
        assert tmg.wait_for(lambda: "connected to a router" in keeper.text(), 30), keeper.text()
        assert reachable(e), keeper.text()
        yield e
    finally:
        for p in procs:
            if isinstance(p, Keeper):
                p.stop()
            elif p.proc:
                asr.stop(p.proc)
        std.stop()


def will_client(env, target, bodies, mode, user="alice", password="secret-a", port=None, retain=False, delay=None,
                link=None):
    """Start a client that leaves a will on ``target`` (``delay``: its will
    delay, ``link``: (container id, link name)); (process, its first line)."""
    extra = dict([("WILL_RETAIN", "1")] if retain else [])
    extra.update([("WILL_DELAY", str(delay))] if delay is not None else [])
    extra.update([("WILL_CONTAINER", link[0]), ("WILL_LINK", link[1])] if link else [])
    proc = subprocess.Popen([sys.executable, "-c", WILL_CLIENT, "amqps://127.0.0.1:%d" % (port or env["second"]),
                             user, password, env["ca"], target, mode] + list(bodies),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, **extra) if extra else None)
    line = proc.stdout.readline().strip()
    return proc, line


def reachable(env, timeout=30):
    """A will attached on the second router gets to the keeper (the link
    route's address reaches the other router within about a second)."""
    def once():
        proc, line = will_client(env, "$will/m/a", ["probe"], "clean")
        proc.wait(10)
        return line == "registered"
    return tmg.wait_for(once, timeout)


def amqp_receiver(env, address):
    conn = asr.connect(env, SPACE, "alice", "secret-a")
    return conn, conn.create_receiver(address, credit=10)


def mqtt_subscriber(env, topic, flags=False):
    c = client(env)
    seen = []
    c.c.on_message = lambda cl, u, m: seen.append((m.payload, m.retain) if flags else m.payload)
    assert c.subscribe(topic)[0] in (0, 1)
    return c, seen


def first_body(receiver, seconds):
    """The body of the first message within ``seconds``, or None."""
    from proton import Timeout
    try:
        body = receiver.receive(timeout=seconds).body
    except Timeout:
        return None
    receiver.accept()
    return body


def bodies_within(receiver, seconds):
    from proton import Timeout
    got, end = [], time.time() + seconds
    while time.time() < end:
        try:
            got.append(receiver.receive(timeout=max(0.1, end - time.time())).body)
            receiver.accept()
        except Timeout:
            break
    return got


def test_a_killed_clients_will_reaches_amqp_and_mqtt_subscribers(env):
    conn, receiver = amqp_receiver(env, "m/a")
    sub, seen = mqtt_subscriber(env, "m/a")
    try:
        proc, line = will_client(env, "$will/m/a", ["first will", "kill-9 will"], "hold")
        assert line == "registered", line
        assert bodies_within(receiver, 1.5) == []  # nothing before the client goes away
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert first_body(receiver, 10) == "kill-9 will"  # the last message on the link is the will
        assert tmg.wait_for(lambda: seen, 10) and seen == [b"kill-9 will"], seen
        assert bodies_within(receiver, 1.5) == []  # once
    finally:
        conn.close()


def test_a_clean_detach_sends_no_will(env):
    conn, receiver = amqp_receiver(env, "m/a")
    try:
        proc, line = will_client(env, "$will/m/a", ["never sent"], "clean")
        assert line == "registered", line
        proc.wait(10)
        assert bodies_within(receiver, 3) == []
    finally:
        conn.close()


def test_a_retained_will_is_kept_for_the_next_mqtt_subscriber(env):
    """The keeper sends the will as the client sent it: with x-opt-mqtt-retain
    on a topic address, the gateways store it as any retained AMQP message."""
    proc, line = will_client(env, "$will/t/c", ["retained will"], "hold", retain=True)
    assert line == "registered", line
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    got = []

    def once():
        sub, seen = mqtt_subscriber(env, "t/c", flags=True)
        tmg.wait_for(lambda: seen, 2)
        sub.close()
        got[:] = seen
        return bool(seen)
    assert tmg.wait_for(once, 20) and got == [(b"retained will", True)], got


def test_a_delayed_will_waits_its_delay_and_a_client_back_in_time_cancels_it(env):
    conn, receiver = amqp_receiver(env, "m/a")
    try:
        proc, line = will_client(env, "$will/m/a", ["delayed will"], "hold", delay=4, link=("dev-1", "will m/a"))
        assert line == "registered", line
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        gone = time.time()
        assert first_body(receiver, 15) == "delayed will"
        waited = time.time() - gone
        assert waited >= 3.5, waited  # the delay (4 s) less the time the router took to see the client gone
        # dev-2 goes away; a link of its name from dev-3, and one of another name from dev-2, are not dev-2's
        # will link coming back: its will is sent
        proc, line = will_client(env, "$will/m/a", ["dev-2's will"], "hold", delay=5, link=("dev-2", "will m/a"))
        assert line == "registered", line
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        for other in (("dev-3", "will m/a"), ("dev-2", "another")):
            sure, line = will_client(env, "$will/m/a", ["leaving cleanly"], "clean", link=other)
            assert line == "registered", line
            sure.wait(10)
        assert first_body(receiver, 15) == "dev-2's will"
        # dev-2 goes away and comes back within its delay (a new connection, its container id and link name):
        # no will
        proc, line = will_client(env, "$will/m/a", ["not sent"], "hold", delay=6, link=("dev-2", "will m/a"))
        assert line == "registered", line
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        back, line = will_client(env, "$will/m/a", ["leaving cleanly"], "clean", delay=6, link=("dev-2", "will m/a"))
        assert line == "registered", line
        back.wait(10)
        assert bodies_within(receiver, 8) == []
        # a delay over the keeper's max_will_delay (86400 s by default) is rejected with the reason
        proc, line = will_client(env, "$will/m/a", ["too late"], "hold", delay=86401)
        proc.kill()
        proc.wait(10)
        assert line.startswith("rejected amqp:invalid-field") and "max_will_delay" in line, line
        assert bodies_within(receiver, 2) == []
    finally:
        conn.close()


def test_a_will_needs_send_on_its_address_and_stays_in_the_space(env):
    # carol may send to t/a only
    proc, line = will_client(env, "$will/m/a", ["x"], "hold", user="carol", password="carol-pw")
    proc.wait(10)
    assert line == "detached amqp:unauthorized-access", line
    sub, seen = mqtt_subscriber(env, "t/a")  # a topic address (link-routed): an MQTT subscriber is simplest
    proc, line = will_client(env, "$will/t/a", ["carol's will"], "hold", user="carol", password="carol-pw")
    assert line == "registered", line
    proc.kill()
    proc.wait(10)
    assert tmg.wait_for(lambda: seen, 10) and seen == [b"carol's will"], seen
    # another space's client names this space's will prefix: its tenant prefix comes first, the policy refuses
    for target in ("%s/$will/m/a" % SPACE, "$will/m/a"):
        proc, line = will_client(env, target, ["x"], "hold", user="bob", password="secret-b", port=env["other_second"])
        proc.wait(10)
        assert line == "detached amqp:unauthorized-access", (target, line)
    # a will for an address its own space has (q1) is admitted by its policy and routed to its own space's
    # keeper (none runs for it here): never to this space's
    proc, line = will_client(env, "$will/q1", ["bob's will"], "hold", user="bob", password="secret-b",
                             port=env["other_second"])
    proc.wait(10)
    assert line == "detached qd:no-route-to-dest", line
    assert OTHER not in env["keeper"].text()


def test_the_will_listener_admits_the_service_user_only(env):
    from proton import ConnectionException
    from proton.utils import BlockingConnection
    port = env["status"]["mqtt_service"]["will_endpoints"][1]["port"]
    for user, password in (("alice", "secret-a"), ("mqtt-gateway", "wrong")):
        with pytest.raises(ConnectionException):
            BlockingConnection("amqps://127.0.0.1:%d" % port, user=user, password=password, allowed_mechs="PLAIN",
                               ssl_domain=asr.client_domain(env["ca"]), timeout=15).close()


def test_a_keepers_end_sends_no_will_and_the_client_sees_its_link_end(env):
    conn, receiver = amqp_receiver(env, "m/a")
    keeper = env["keeper"]
    try:
        proc, line = will_client(env, "$will/m/a", ["keeper gone"], "hold")
        assert line == "registered", line
        keeper.proc.send_signal(signal.SIGKILL)
        keeper.proc.wait(10)
        ended = proc.stdout.readline().strip()
        assert ended.startswith("detached ") and ended != "detached None", ended
        assert bodies_within(receiver, 3) == []
        proc.kill()
        proc.wait(10)
    finally:
        keeper.start()
        assert tmg.wait_for(lambda: keeper.text().count("connected to a router") >= 2, 30), keeper.text()
        assert reachable(env), keeper.text()
        conn.close()
    # a client attaching again gets the new keeper
    proc, line = will_client(env, "$will/m/a", ["after the restart"], "hold")
    assert line == "registered", line
    conn, receiver = amqp_receiver(env, "m/a")
    try:
        proc.kill()
        proc.wait(10)
        assert first_body(receiver, 10) == "after the restart"
    finally:
        conn.close()
