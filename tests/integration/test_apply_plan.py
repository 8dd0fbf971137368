"""Applying a capacity plan with one move (issue 22; playbooks/apply_plan.yml,
docs/apply-plan.md): real qdrouterd routers, real Artemis pool brokers, real
AMQP clients, the environment and clients of test_scale_in.py. The plan moves
partition 0 of the queue ``idle`` (nobody consumes it) from its broker to the
other one while a producer sends to ``work`` and ``idle`` and a consumer reads
``work``, through the routers. The control host's part of apply_plan.yml
(tasks/apply_plan_control.yml and tasks/apply_plan_move.yml) runs with
ansible-playbook against them: a stale plan is refused, check mode moves
nothing, the real run moves the partition and no accepted message is lost."""
import json
import os
import time
from datetime import datetime, timezone

import pytest

from helpers import run_module, run_playbook
from standard_env import REPO, drain, drain_all
# the scale in test's environment (2 routers, 2 pool brokers), clients and helpers
from test_scale_in import ADDRESSES, ANON, SPACE, Clients, broker_counts, connect, space_args
from test_scale_in import env  # noqa: F401  # pylint: disable=unused-import  # the fixture

pytestmark = pytest.mark.integration
pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")

CONTROL = os.path.join(REPO, "playbooks", "tasks", "apply_plan_control.yml")
QUEUES = [a for a in ADDRESSES if a["type"] == "queue"]  # work, idle


def write_plan(path, env, moves, job_end=None):
    """A capacity plan (schema_version 1) for the live pool, with ``moves``."""
    end = job_end or datetime.fromtimestamp(time.time() - 60, timezone.utc).isoformat()
    names = [b.name for b in env.brokers]
    plan = {"schema_version": 1, "generated_at": end, "job": {"end": end},
            "data_quality": {"valid_window_ratio": 0.99},
            "infrastructures": [{"infra": "default", "broker_pools": [{
                "pool": "_infra", "brokers_before": names, "brokers_after": names, "brokers_removed": [],
                "moves": moves}], "router_pools": []}]}
    with open(path, "w") as f:
        json.dump(plan, f)


def apply_plan(env, plan, history, check=False):
    extra = {"apply_plan_file": plan, "apply_plan_infra": "default", "apply_plan_infrastructure_file": env.infra_file,
             "apply_plan_history": history, "apply_plan_guardrails": {}, "apply_plan_timeout": 60,
             "apply_plan_delay": 1, "apply_plan_idle": 1.0,
             "__apply_spaces": [{"name": SPACE, "type": "standard", "addresses": QUEUES}]}
    return run_playbook([{"name": "apply the plan", "ansible.builtin.include_tasks": CONTROL}],
                        extra_vars=extra, check=check, diff=True, timeout=300)


def ledger_homes(env):
    with open(os.path.join(env.ledger_dir, "%s.json" % SPACE)) as f:
        return dict((n, h["brokers"]) for n, h in json.load(f)["homes"].items())


def test_a_plan_with_one_move_check_mode_then_real_run_loses_nothing(env, tmp_path):
    assert run_module("address_space", space_args(env, name=SPACE, type="standard", plan="standard-unlimited",
                                                  authentication_service=ANON)).rc == 0
    res = run_module("address", space_args(env, address_space=SPACE, addresses=QUEUES, prune=True))
    assert res.rc == 0, res.result
    (frm,) = ledger_homes(env)["idle"]
    idx = [b.name for b in env.brokers].index(frm)
    to = env.brokers[1 - idx].name
    move = {"address_space": SPACE, "address": "idle", "partition": 0, "from": frm, "to": to, "bytes": 0,
            "reason": "rebalance"}
    plan, history = str(tmp_path / "plan.json"), str(tmp_path / "day2" / "history.jsonl")

    clients = Clients(env).start()
    try:
        deadline = time.time() + 30
        while (len(clients.accepted["idle"]) < 100 or len(clients.received) < 20) and time.time() < deadline:
            time.sleep(0.2)
        assert len(clients.accepted["idle"]) >= 100 and clients.received, clients.errors[-5:]

        # a stale plan (its data ended long ago) is refused whole, naming the field, the value and the rule
        write_plan(plan, env, [move], job_end="2020-01-01T00:00:00+00:00")
        t0 = time.time()
        res = apply_plan(env, plan, history)
        print("stale plan refused in %.1f s" % (time.time() - t0))
        assert res.rc == 0, res.stdout[-3000:]
        assert "refused plan | plan-age | job.end '2020-01-01T00:00:00+00:00' is" in res.stdout, res.stdout[-3000:]
        assert "older than plan_max_age 7200 s" in res.stdout and not os.path.exists(history)

        # check mode: the decision, the diff and what the move would do; nothing moves, nothing is written
        write_plan(plan, env, [move])
        before = broker_counts(env, idx)
        t0 = time.time()
        res = apply_plan(env, plan, history, check=True)
        print("check mode in %.1f s" % (time.time() - t0))
        assert res.rc == 0, res.stdout[-3000:]
        assert "check mode: 1 step(s), 0 refused" in res.stdout, res.stdout[-3000:]
        assert "would be re-homed" in res.stdout and "would move to %s" % to in res.stdout
        decision = res.task("Decide what of the plan to do now (within the guardrails)")
        assert decision["diff"]["before"]["partitions"] == {"%s/idle#0" % SPACE: frm}
        assert decision["diff"]["after"]["partitions"] == {"%s/idle#0" % SPACE: to}
        assert ledger_homes(env)["idle"] == [frm] and not os.path.exists(history)
        after_check = broker_counts(env, idx)
        assert after_check["%s/idle" % SPACE] >= before["%s/idle" % SPACE] >= 100, (before, after_check)
        assert "%s/idle" % SPACE not in broker_counts(env, 1 - idx)

        # the real run: re-home, converge, move what is left, release
        t0 = time.time()
        res = apply_plan(env, plan, history)
        moved_in = time.time() - t0
        assert res.rc == 0, res.stdout[-3000:]
        assert "decided: 1 step(s), 0 refused" in res.stdout, res.stdout[-3000:]
        assert ledger_homes(env)["idle"] == [to]
        assert "%s/idle" % SPACE not in broker_counts(env, idx)  # the old queue released
        with open(history) as f:
            records = [json.loads(line) for line in f]
        assert [r["moves"] for r in records] == [["%s/idle#0 %s -> %s" % (SPACE, frm, to)]]
        accepted_at_move = len(clients.accepted["idle"])
        deadline = time.time() + 20  # the producer keeps going onto the new home
        while len(clients.accepted["idle"]) < accepted_at_move + 20 and time.time() < deadline:
            time.sleep(0.2)
        assert len(clients.accepted["idle"]) >= accepted_at_move + 20, clients.errors[-5:]
    finally:
        clients.stop()

    # every accepted message where a consumer finds it, through the routers
    c = connect(env, 1)
    idle = drain_all(c, "idle", clients.accepted["idle"], timeout=30)
    work = drain_all(c, "work", set(clients.accepted["work"]) - set(clients.received), timeout=30)
    c.close()
    lost = {"idle": sorted(set(clients.accepted["idle"]) - set(idle)),
            "work": sorted(set(clients.accepted["work"]) - set(clients.received + work))}
    print("apply plan: moved %s/idle#0 %s -> %s in %.1f s; accepted idle %d, work %d; received idle %d "
          "(duplicates %d); client errors %d %s"
          % (SPACE, frm, to, moved_in, len(clients.accepted["idle"]), len(clients.accepted["work"]), len(idle),
             len(idle) - len(set(idle)), len(clients.errors), clients.errors[:3]))
    assert lost == {"idle": [], "work": []}, dict((k, v[:10]) for k, v in lost.items())
    # the routers settle the consumer's accepts with the broker after it closed: wait for them (a copy moved
    # twice would stay)
    deadline, left = time.time() + 15, None
    while time.time() < deadline:
        left = broker_counts(env, 1 - idx).get("%s/idle" % SPACE)
        if left == 0:
            break
        print("left on %s: %s" % (to, left))
        time.sleep(0.5)
    if left:
        c = connect(env, 1)
        extra = drain(c, "idle", left, timeout=10)
        c.close()
        print("EXTRA", len(extra), len(set(extra)), len(set(extra) & set(idle)), extra[:10])
    assert left == 0, left
