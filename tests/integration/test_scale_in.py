"""Scale in with clients running throughout (issue 22; playbooks/scale_in.yml,
docs/standard-spaces.md "A broker leaving the pool"): real qdrouterd routers,
real Artemis pool brokers, real AMQP clients. A producer sends to two queues
and a consumer reads one of them, both through the routers, for the whole
operation; the control host's part of the playbook (tasks/scale_in_drain.yml,
then tasks/scale_in_forget.yml) runs with ansible-playbook against them.

What stands in for the parts that need systemd hosts: the test writes the
infrastructure file with the broker ``draining`` (site.yml's standard role
does, from ``standard_pool_state``) and stops the broker process (the broker
role's uninstall does)."""
import json
import os
import re
import tempfile
import threading
import time

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.standard.entities import connector_name
from helpers import run_module, run_playbook, send_accepted
from standard_env import REPO, StandardEnv, build_router, drain, drain_all
from test_standard_spaces import attach, receive_raw, send_raw

pytestmark = pytest.mark.integration
proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

SPACE = "tenant-si"
ANON = {"name": "none", "type": "none"}
ADDRESSES = [
    {"address": "work", "type": "queue", "plan": "standard-small-queue"},   # consumed throughout
    {"address": "idle", "type": "queue", "plan": "standard-small-queue"},   # nobody consumes until the end
    {"address": "news", "type": "topic", "plan": "standard-small-topic"},
    {"address": "news-sub", "type": "subscription", "plan": "standard-small-subscription", "topic": "news"},
]
# an address first asked for during the scale in: never placed on the leaving broker
NEW = {"address": "fresh", "type": "queue", "plan": "standard-small-queue"}
TASKS = os.path.join(REPO, "playbooks", "tasks")


@pytest.fixture(scope="module")
def env():
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)
    e = StandardEnv(tempfile.mkdtemp(prefix="enmasse-si-"), prefix, routers=2, brokers=2).start()
    yield e
    e.cleanup()


def space_args(env, space=SPACE, **kw):
    out = env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(space))
    out.update(kw)
    return out


def connect(env, router, space=SPACE):
    with open(env.connection_file(space)) as f:
        port = json.load(f)["endpoints"][router]["port"]
    return BlockingConnection(env.client_url(port), timeout=15, **env.client_kwargs())


def broker_counts(env, idx, space=SPACE):
    """{queue: message count} of the space on pool broker ``idx``."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient
    b = env.brokers[idx]
    unused, live = reader.read_live(JolokiaClient(b.management_url, b.management_user, b.management_password), b.name)
    return dict((n, e.get("message_count")) for n, e in live.items() if n.startswith(space + "/"))


class Clients(object):
    """A producer (to ``work`` and ``idle`` through router 2, each message
    counted once the router settled it accepted) and a consumer (``work``
    through router 1), each reconnecting after an error, until stop()."""

    def __init__(self, env):
        self.env = env
        self.accepted = {"work": [], "idle": []}
        self.received = []
        self.errors = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._consume, daemon=True)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def _produce(self):
        n = 0
        while not self.stopping.is_set():
            try:
                conn = connect(self.env, 1)
                senders = dict((a, conn.create_sender(a)) for a in self.accepted)
                while not self.stopping.is_set():
                    for a, snd in senders.items():
                        body = "%s-%d" % (a, n)
                        send_accepted(snd, Message(id=body, body=body, durable=True), timeout=15)
                        self.accepted[a].append(body)
                    n += 1
                    time.sleep(0.02)
                conn.close()
            except Exception as e:  # pylint: disable=broad-except  # not accepted: not counted; reconnect
                self.errors.append("producer: %r" % e)
                time.sleep(0.5)

    def _consume(self):
        while True:
            try:
                conn = connect(self.env, 0)
                rcv = conn.create_receiver("work", credit=20)
                idle_since = time.time()
                while not self.stopping.is_set() or time.time() - idle_since < 5:
                    try:
                        m = rcv.receive(timeout=1)
                    except proton.Timeout:
                        continue
                    rcv.accept()
                    self.received.append(m.body)
                    idle_since = time.time()
                conn.close()
                return
            except Exception as e:  # pylint: disable=broad-except
                self.errors.append("consumer: %r" % e)
                if self.stopping.is_set():
                    return
                time.sleep(0.5)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(60)


def play(env, tasks_file, name, addresses, check=False, space=SPACE, timeout=120):
    extra = {"__scale_in_name": name, "scale_in_infrastructure_file": env.infra_file,
             "__scale_in_spaces": [{"name": space, "type": "standard", "addresses": addresses}],
             "scale_in_timeout": timeout, "scale_in_delay": 2, "scale_in_idle": 1.0}
    return run_playbook([{"name": "scale in", "ansible.builtin.include_tasks": os.path.join(TASKS, tasks_file)}],
                        extra_vars=extra, check=check, timeout=600)


def connectors(env):
    with env.session() as s:
        return sorted(r["name"] for r in s.query("org.apache.qpid.dispatch.connector", ["name"]))


def test_scale_in_times_out_naming_what_is_left_and_a_second_run_resumes(env):
    """A consumer that holds a message without settling it keeps it on the
    leaving broker: the wait ends after scale_in_timeout with a failure naming
    the queue and its count, and nothing is stopped or released. Once that
    consumer is gone, running again finishes the job; every message arrives."""
    space = "tenant-st"
    addrs = [{"address": "slow", "type": "queue", "plan": "standard-small-queue"}]
    assert run_module("address_space", space_args(env, space, name=space, type="standard", plan="standard-unlimited",
                                                  authentication_service=ANON)).rc == 0
    res = run_module("address", space_args(env, space, address_space=space, addresses=addrs, prune=True))
    assert res.rc == 0, res.result
    (leaving,) = res.result["addresses"][0]["status"]["brokers"]
    idx = [b.name for b in env.brokers].index(leaving)
    c = connect(env, 0, space)
    snd = c.create_sender("slow")
    for i in range(5):
        snd.send(Message(id="slow-%d" % i, body="slow-%d" % i, durable=True))
    c.close()
    holder = connect(env, 1, space)
    rcv = holder.create_receiver("slow", credit=1)
    held = rcv.receive(timeout=15)  # never settled while the scale in waits
    # the holder's connection keeps turning (heartbeats: the router closes a connection silent for 16 s)
    done = threading.Event()

    def turn():
        holder.container.timeout = 0.1
        while not done.is_set():
            holder.container.process()
    pump = threading.Thread(target=turn, daemon=True)
    pump.start()
    env.draining = frozenset([leaving])
    env.write_infra()
    try:
        res = play(env, "scale_in_drain.yml", leaving, addrs, space=space, timeout=6)
        assert res.rc != 0, res
        assert re.search(r"still holds messages after 6 s: %s/slow: [1-5]\. Nothing is stopped" % space, res.stdout), res.stdout[-3000:]
        assert "run scale_in.yml again to resume" in res.stdout
        assert "%s/slow" % space in broker_counts(env, idx, space)  # not released
        done.set()
        pump.join(10)
        holder.close()
        # the consumer went away: a router that pulled a message for it keeps it for the next consumer
        # of the address (its `in` autoLink still has credit), so the broker still counts it: a consumer
        # comes, takes every message (from both brokers), and a second run finishes
        c = connect(env, 0, space)
        got = drain(c, "slow", 5, timeout=30)
        c.close()
        res = play(env, "scale_in_drain.yml", leaving, addrs, space=space)
        assert res.rc == 0, res
        assert broker_counts(env, idx, space) == {}
    finally:
        done.set()
        env.draining = frozenset()
        env.write_infra()
    assert held.body in got and sorted(set(got)) == ["slow-%d" % i for i in range(5)], got


def test_scale_in_with_clients_running_loses_no_accepted_message(env):
    assert run_module("address_space", space_args(env, name=SPACE, type="standard", plan="standard-unlimited",
                                                  authentication_service=ANON)).rc == 0
    res = run_module("address", space_args(env, address_space=SPACE, addresses=ADDRESSES, prune=True))
    assert res.rc == 0, res.result
    homes = dict((a["address"], a["status"]["brokers"]) for a in res.result["addresses"])
    (leaving,) = homes["work"]
    assert homes["idle"] == [leaving] and homes["news"] == [leaving], homes  # first fit: all on one broker
    idx = [b.name for b in env.brokers].index(leaving)
    stay = env.brokers[1 - idx].name
    # 20 messages in the durable subscription nobody reads
    c = connect(env, 0)
    send_raw(c, attach(c, "news", sender=True), ["news-%d" % i for i in range(20)])  # a topic is link routed
    c.close()

    clients = Clients(env).start()
    try:
        deadline = time.time() + 60
        while (len(clients.accepted["idle"]) < 50 or len(clients.received) < 20) and time.time() < deadline:
            time.sleep(0.2)
        assert len(clients.accepted["idle"]) >= 50 and clients.received, clients.errors[-5:]
        before = broker_counts(env, idx)
        assert before["%s/idle" % SPACE] >= 50 and before["%s/news-sub" % SPACE] == 20, before

        # check mode while the broker is still active: reports, changes nothing
        res = play(env, "scale_in_drain.yml", leaving, ADDRESSES + [NEW], check=True)
        assert res.rc == 0, res
        assert "%s/work" % SPACE in res.stdout and "a real run marks it draining" in res.stdout, res.stdout[-3000:]
        with open(env.infra_file) as f:
            assert all(b["state"] == "active" for b in json.load(f)["brokers"])
        assert "%s/fresh" % SPACE not in broker_counts(env, 1 - idx)

        # site.yml with standard_pool_state=draining writes this
        env.draining = frozenset([leaving])
        env.write_infra()
        t0 = time.time()
        res = play(env, "scale_in_drain.yml", leaving, ADDRESSES + [NEW])
        drained_in = time.time() - t0
        assert res.rc == 0, res
        left = broker_counts(env, idx)
        assert left == {}, left  # every queue of the space released on the leaving broker
        info = run_module("address_info", space_args(env, address_space=SPACE))
        assert dict((a["address"], a["status"]["brokers"]) for a in info.result["addresses"]) == dict(
            (a["address"], [stay]) for a in ADDRESSES + [NEW]), info.result
        accepted_at_stop = len(clients.accepted["work"])

        # the broker role's uninstall stops it
        env.brokers[idx].stop()
        assert connector_name(leaving) in connectors(env)
        res = play(env, "scale_in_forget.yml", leaving, ADDRESSES + [NEW])
        assert res.rc == 0, res
        with open(env.infra_file) as f:
            assert [b["name"] for b in json.load(f)["brokers"]] == [stay]
        assert connectors(env) == [connector_name(stay)], connectors(env)
        # clients keep going on the pool without it
        deadline = time.time() + 30
        while len(clients.accepted["work"]) < accepted_at_stop + 50 and time.time() < deadline:
            time.sleep(0.2)
        assert len(clients.accepted["work"]) >= accepted_at_stop + 50, clients.errors[-5:]
    finally:
        clients.stop()

    # a second run resumes nothing: the broker is gone from the infrastructure file, and said so
    res = play(env, "scale_in_drain.yml", leaving, ADDRESSES + [NEW])
    assert res.rc != 0 and "scale_in.yml removed it already" in res.stdout, res.stdout[-3000:]

    # every accepted message exactly where a consumer finds it, through the routers
    c = connect(env, 1)
    rest_work = drain_all(c, "work", set(clients.accepted["work"]) - set(clients.received), timeout=30)
    idle = drain_all(c, "idle", clients.accepted["idle"], timeout=30)
    news = receive_raw(c, attach(c, "news::news-sub", sender=False), 20)
    c.close()
    got_work = clients.received + rest_work
    lost = dict((a, sorted(set(clients.accepted[a]) - set(got)))
                for a, got in (("work", got_work), ("idle", idle)))
    lost["news"] = sorted(set("news-%d" % i for i in range(20)) - set(news))
    print("scale in: drained and released in %.1f s; accepted work %d, idle %d; duplicates %d; client errors %d %s"
          % (drained_in, len(clients.accepted["work"]), len(clients.accepted["idle"]),
             len(got_work) - len(set(got_work)) + len(idle) - len(set(idle)), len(clients.errors), clients.errors[:3]))
    assert lost == {"work": [], "idle": [], "news": []}, dict((k, v[:10]) for k, v in lost.items())


# ------------------------------------------------------------- the checks of scale_in.yml, before any host

STANDARD = {"name": "s1", "type": "standard", "plan": "standard-small", "addresses": []}
SHOP = {"name": "shop", "type": "brokered", "plan": "brokered-single-broker", "broker_host": "b2", "addresses": []}


@pytest.mark.parametrize("brokers,extra,words", [
    (["b1", "b2"], {"scale_in_broker": "b2"},
     "the pool would keep 1 active broker(s) (b1), fewer than the floor scale_in_min_brokers 2"),
    (["b1", "b2"], {"scale_in_broker": "b1", "scale_in_min_brokers": 2},
     "the pool would keep 1 active broker(s) (b2)"),
    (["b1", "b2", "b3"], {"scale_in_broker": "b9"}, "scale_in_broker: 'b9' is not a host of the group brokers (b1, b2, b3)"),
    (["b1", "b2", "b3"], {}, "scale_in_broker: not set"),
    (["b1", "b2", "b3"], {"scale_in_broker": "b2", "address_spaces": [STANDARD, SHOP]},
     "'b2' also runs the brokered address space(s) shop, which do not move"),
], ids=["floor", "floor-explicit", "unknown-host", "unset", "brokered-space-on-it"])
def test_scale_in_refuses_before_touching_a_host(tmp_path, brokers, extra, words):
    """playbooks/scale_in.yml stops at its checks (the model's rules, day2.scale_in_errors) before
    site.yml: no play after them runs, in check mode or not."""
    import subprocess
    import helpers
    inv = tmp_path / "hosts.ini"
    inv.write_text("[brokers]\n%s\n[routers]\nr1 ansible_connection=local\n"
                   % "\n".join("%s ansible_connection=local" % b for b in brokers))
    ev = dict({"address_spaces": [STANDARD], "ansible_python_interpreter": os.sys.executable}, **extra)
    (tmp_path / "vars.json").write_text(json.dumps(ev))
    proc = subprocess.run(["ansible-playbook", "-i", str(inv), os.path.join(REPO, "playbooks", "scale_in.yml"),
                           "-e", "@%s" % (tmp_path / "vars.json"), "--check"],
                          capture_output=True, text=True, env=helpers._env(), timeout=300, check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert words in proc.stdout, proc.stdout[-3000:]
    assert "PLAY [Brokers - ActiveMQ Artemis" not in proc.stdout  # site.yml never started
