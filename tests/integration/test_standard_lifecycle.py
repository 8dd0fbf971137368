"""The lifecycle of standard address spaces against real qdrouterd routers
(two, meshed) and a real Artemis broker: a plan change over quota leaves the
live queue and its messages alone and says why; the router keeper restores
the spaces it can read past a ledger it cannot; ``state: absent`` twice; the
infrastructure's link_capacity is the credit a client's sender gets."""
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from helpers import run_module
import standard_env
from standard_env import StandardEnv, build_router

pytestmark = pytest.mark.integration
proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

ANON = {"name": "none", "type": "none"}
TINY = {"name": "standard-lifecycle-tiny", "address_space_type": "standard",
        "resource_limits": {"router": 1.0, "broker": 0.05, "aggregate": 1.05},
        "address_plans": ["standard-small-queue", "standard-medium-queue"]}


@pytest.fixture(scope="module")
def env():
    prefix, why = build_router()
    if prefix is None:
        pytest.fail(why)
    e = StandardEnv(tempfile.mkdtemp(prefix="enmasse-life-"), prefix, routers=2, brokers=1).start()
    e.keeper_log = os.path.join(e.base_dir, "keeper.log")
    log = open(e.keeper_log, "w")
    e.keeper = subprocess.Popen(
        [sys.executable, "-m", "ansible_collections.enmasse.messaging.plugins.module_utils.standard.keeper",
         "--infrastructure-file", e.infra_file, "--interval", "1"], stdout=log, stderr=subprocess.STDOUT)
    res = run_module("address_space_plan", dict(catalogue_path=e.catalogue_path, **TINY))
    assert res.rc == 0, res.result
    yield e
    e.keeper.terminate()
    e.keeper.wait(10)
    e.cleanup()


def common(env, space):
    return env.module_args(catalogue_path=env.catalogue_path, connection_file=env.connection_file(space))


def make_space(env, name, plan="standard-unlimited"):
    res = run_module("address_space", dict(common(env, name), name=name, type="standard", plan=plan,
                                           authentication_service=ANON))
    assert res.rc == 0, res.result
    return res.result


def converge(env, space, addresses, check_mode=False):
    return run_module("address", dict(common(env, space), address_space=space, addresses=addresses, prune=True),
                      check_mode=check_mode, diff=True)


def connect(env, space, router=0):
    with open(env.connection_file(space)) as f:
        port = json.load(f)["endpoints"][router]["port"]
    return BlockingConnection(env.client_url(port), timeout=15, **env.client_kwargs())


def broker_count(env, name):
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.client import JolokiaClient
    b = env.brokers[0]
    unused, live = reader.read_live(JolokiaClient(b.management_url, b.management_user, b.management_password), b.name)
    entry = live.get(name)
    return None if entry is None else entry["message_count"]


def router_entities(env, space, router_id):
    with env.session() as s:
        rows = s.query_many([(router_id, "org.apache.qpid.dispatch.router.config.autoLink", ["name"]),
                             (router_id, "org.apache.qpid.dispatch.router.config.address", ["name"])])
    return sorted(r["name"] for rs, failed in rows for r in rs if r["name"].startswith("enmasse/%s/" % space))


def send(env, space, address, bodies):
    c = connect(env, space)
    snd = c.create_sender(address)
    for b in bodies:
        snd.send(Message(body=b, durable=True))
    c.close()


def drain(env, space, address, expect, router=0, timeout=15):
    c = connect(env, space, router)
    got = standard_env.drain(c, address, expect, timeout)
    c.close()
    return got


QUEUES = [{"address": "full", "type": "queue", "plan": "standard-small-queue"},
          {"address": "empty", "type": "queue", "plan": "standard-small-queue"}]


@pytest.mark.parametrize("grown", ["empty", "full"])
def test_a_plan_change_over_quota_is_refused_and_the_live_queue_stays(env, grown):
    """standard-lifecycle-tiny allows broker 0.05: two small queues (0.01 each) fit, a
    medium one (0.1) does not. Changing either queue to medium must leave it on its
    broker and its routers, with its messages, and say why."""
    space = "life-quota-" + grown
    make_space(env, space, plan=TINY["name"])
    res = converge(env, space, QUEUES)
    assert res.rc == 0 and not res.result.get("warnings"), res.result
    send(env, space, "full", ["m1", "m2", "m3"])
    assert broker_count(env, "%s/full" % space) == 3
    before = router_entities(env, space, "r1"), router_entities(env, space, "r2")
    with open(os.path.join(env.ledger_dir, "%s.json" % space)) as f:
        ledger_before = json.load(f)
    changed = [dict(a, plan="standard-medium-queue") if a["address"] == grown else a for a in QUEUES]
    for check_mode in (True, False):
        res = converge(env, space, changed, check_mode=check_mode)
        assert res.rc != 0, res.result
        msg = json.dumps(res.result)
        assert "address 'queue'" not in msg
        assert "%r" % grown in msg and "'standard-medium-queue'" in msg and "over quota" in msg, msg
        assert "keeps its plan 'standard-small-queue'" in msg and TINY["name"] in msg, msg
    # nothing touched: the queue on the broker, its links on both routers, the ledger as it was
    assert broker_count(env, "%s/%s" % (space, grown)) == (3 if grown == "full" else 0)
    assert (router_entities(env, space, "r1"), router_entities(env, space, "r2")) == before
    with open(os.path.join(env.ledger_dir, "%s.json" % space)) as f:
        assert json.load(f) == ledger_before
    assert drain(env, space, "full", 3, router=1) == ["m1", "m2", "m3"]
    res = converge(env, space, QUEUES)
    assert res.rc == 0 and res.result["changed"] is False, res.result


def test_a_new_address_over_quota_is_still_pending_beside_a_live_one(env):
    space = "life-pending"
    make_space(env, space, plan=TINY["name"])
    assert converge(env, space, QUEUES).rc == 0
    res = converge(env, space, QUEUES + [{"address": "big", "type": "queue", "plan": "standard-medium-queue"}])
    assert res.rc == 0, res.result
    st = dict((a["address"], a["status"]) for a in res.result["addresses"])
    assert st["big"]["phase"] == "Pending" and "quota exceeded" in st["big"]["messages"][0], st
    assert set(st) == {"big"}, st  # only the Pending one is reported (the bulk form reports what changed)
    assert broker_count(env, "%s/big" % space) is None and broker_count(env, "%s/full" % space) == 0


def wait_for(predicate, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if predicate():
                return
        except Exception:  # the mesh re-forms after a restart
            pass
        time.sleep(0.5)
    raise AssertionError("timed out waiting for %s" % what)


def test_keeper_restores_the_spaces_it_can_read_past_a_broken_ledger(env):
    space = "life-keeper"
    make_space(env, space)
    assert converge(env, space, [{"address": "kq", "type": "queue", "plan": "standard-small-queue"}]).rc == 0
    send(env, space, "kq", ["kept"])
    want = router_entities(env, space, "r2")
    assert want and any("autolink" in n for n in want), want
    broken = [os.path.join(env.ledger_dir, n) for n in ("aaa-broken.json", "zzz-empty.json")]
    with open(broken[0], "w") as f:
        f.write("{this is not json")
    open(broken[1], "w").close()
    try:
        env.routers[1].kill()
        env.routers[1].start()
        env.wait_mesh()
        wait_for(lambda: router_entities(env, space, "r2") == want, what="the keeper to restore r2")
        assert drain(env, space, "kq", 1, router=1) == ["kept"]
        with open(env.keeper_log) as f:
            log = f.read()
        assert "skipping the ledger %s" % broken[0] in log and "not valid JSON" in log, log
        assert "skipping the ledger %s" % broken[1] in log, log
    finally:
        for p in broken:
            os.unlink(p)


def test_absent_twice_changes_nothing_the_second_time(env):
    space = "life-absent"
    make_space(env, space)
    assert converge(env, space, [{"address": "aq", "type": "queue", "plan": "standard-small-queue"}]).rc == 0
    args = dict(common(env, space), name=space, state="absent")
    res = run_module("address_space", dict(args, type="standard"))
    assert res.rc == 0 and res.result["changed"] is True, res.result
    assert broker_count(env, "%s/aq" % space) is None and router_entities(env, space, "r1") == []
    for extra in ({}, {"type": "standard"}):
        for check_mode in (False, True):
            res = run_module("address_space", dict(args, **extra), check_mode=check_mode)
            assert res.rc == 0, res.result
            assert res.result["changed"] is False and res.result["address_space"]["exists"] is False, res.result


def _capacities(env, space):
    with env.session() as s:
        rows = s.query_many([(r.id, "org.apache.qpid.dispatch." + kind, ["name", "linkCapacity"])
                             for r in env.routers for kind in ("listener", "connector")])
    return sorted((row["name"], row["linkCapacity"]) for rs, failed in rows for row in rs
                  if row["name"] in ("enmasse/%s/amqp" % space, "enmasse/broker/b1"))


def test_link_capacity_of_the_infrastructure_is_the_credit_a_client_sender_gets(env):
    """link_capacity (standard_link_capacity) goes on the space listener and
    the broker connectors of every router: a client's sender gets that credit;
    the second run changes nothing; unset again, the router's 250 is back."""
    space = "life-cap"
    env.link_capacity = 500
    env.write_infra()
    try:
        make_space(env, space)
        assert converge(env, space, [{"address": "cq", "type": "queue", "plan": "standard-small-queue"}]).rc == 0
        assert _capacities(env, space) == [("enmasse/broker/b1", 500)] * 2 + [("enmasse/%s/amqp" % space, 500)] * 2
        assert make_space(env, space)["changed"] is False
        c = connect(env, space)
        snd = c.create_sender("cq")
        deadline = time.time() + 10
        while snd.link.credit < 500 and time.time() < deadline:
            c.container.process()
        assert snd.link.credit == 500
        c.close()
    finally:
        env.link_capacity = None
        env.write_infra()
    assert make_space(env, space)["changed"] is True
    assert [cap for unused, cap in _capacities(env, space)] == [None] * 4
