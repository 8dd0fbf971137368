"""Plans as managed resources, against the real broker.

The plan catalogue of the test host is a file beside the broker instance (the
connection file points to it, as roles/broker can). Plans made with the plan
modules last for every later task; address_space and address always validate
against them; quota errors name the user's own item; a space over quota after
a plan change warns instead of failing unchanged addresses; TTL bounds of an
address narrow its plan's on the broker.
"""

import json
import os

import pytest

import helpers

pytestmark = pytest.mark.integration

SMALL_QUEUE = {"name": "small-queue", "address_type": "queue", "resources": {"broker": 0.01}}
B190 = {"name": "b190", "address_space_type": "brokered", "resource_limits": {"broker": 1.9},
        "address_plans": ["small-queue", "brokered-topic", "brokered-deadletter", "brokered-subscription"]}


def plan_module(space, module, fields=None, check_mode=False, diff=False, **args):
    """Run a plan module on the test host's catalogue with ``fields`` and ``args``."""
    args = dict(fields or {}, **args)
    args.setdefault("catalogue_path", space.broker.catalogue_path)
    args.setdefault("spaces_dir", os.path.dirname(space.connection_file))
    return helpers.run_module(module, args, check_mode=check_mode, diff=diff)


def make_b190(space):
    res = plan_module(space, "address_plan", SMALL_QUEUE)
    assert not res.failed and res.changed, res
    res = plan_module(space, "address_space_plan", B190)
    assert not res.failed and res.changed, res


def small(name, **kw):
    return dict({"address": name, "type": "queue", "plan": "small-queue"}, **kw)


def test_plan_modules_are_idempotent_with_check_mode_diff_and_info(space):
    dry = plan_module(space, "address_plan", SMALL_QUEUE, check_mode=True, diff=True)
    assert dry.changed and not os.path.exists(space.broker.catalogue_path)
    assert dry["diff"]["after"]["small-queue"]["resources"] == {"broker": 0.01}
    first = plan_module(space, "address_plan", SMALL_QUEUE, diff=True)
    assert first.changed and first["changes"]["created"] == ["small-queue"]
    doc = first["plans"][0]["document"]
    assert doc["apiVersion"] == "admin.enmasse.io/v1beta2" and doc["spec"]["addressType"] == "queue"
    again = plan_module(space, "address_plan", SMALL_QUEUE)
    assert not again.changed
    # the same plan as an EnMasse document is the same plan
    same = plan_module(space, "address_plan", definition=doc)
    assert not same.changed, same
    info = plan_module(space, "address_plan_info", names=["small-queue", "brokered-queue", "ghost"])
    by_name = dict((p["name"], p) for p in info["plans"])
    assert by_name["small-queue"]["owner"] == "enmasse.messaging"
    assert by_name["brokered-queue"]["owner"] == "example"
    assert info["missing"] == ["ghost"]
    # the stored file holds EnMasse's example plans too
    with open(space.broker.catalogue_path) as f:
        stored = json.load(f)
    assert "standard-small-queue" in stored["address_plans"]


def test_a_custom_plan_lasts_and_its_quota_holds_in_later_calls_without_plans(space):
    """The issue's bypass: after a move to a custom plan, later calls found no
    such plan and skipped quota; 250 queues were created where 190 fit."""
    make_b190(space)
    res = space.run("address_space", type="brokered", plan="b190")
    assert not res.failed, res
    before = space.snapshot()
    res = space.run("address", addresses=[small("q%03d" % i) for i in range(250)])
    assert res.failed and not res.changed
    assert len(res["errors"]) == 60
    assert res["errors"][0].startswith("addresses[190](q190).plan: 'small-queue' (router 0, broker 0.01) is over "
                                       "quota"), res["errors"][0]
    assert space.snapshot() == before  # nothing created
    res = space.run("address", addresses=[small("q%03d" % i) for i in range(190)])
    assert not res.failed and res.changed
    # one more, in a later task: refused, named by its place in that task
    res = space.run("address", addresses=[small("q000"), small("extra")])
    assert res.failed and res["errors"][0].startswith("addresses[1](extra).plan: 'small-queue'"), res["errors"]


def test_a_plan_the_catalogue_does_not_have_is_an_error_never_a_skip(space):
    make_b190(space)
    assert not space.run("address_space", type="brokered", plan="b190").failed
    # a queue with a plan of the standard space type
    res = space.run("address", address="std", type="queue", plan="standard-small-queue")
    assert res.failed and "'standard-small-queue' is not allowed by address space plan 'b190'" in res.msg, res.msg
    res = space.run("address", address="ghost", type="queue", plan="ghost-queue")
    assert res.failed and "'ghost-queue' is not a known address plan" in res.msg
    # the space's own plan disappears from the catalogue (the file edited by hand)
    with open(space.broker.catalogue_path) as f:
        stored = json.load(f)
    del stored["address_space_plans"]["b190"]
    with open(space.broker.catalogue_path, "w") as f:
        json.dump(stored, f)
    res = space.run("address", address="q", type="queue", plan="small-queue")
    assert res.failed and "address_space(itest).plan: 'b190' is not in the plan catalogue" in res.msg, res.msg
    assert "q" not in space.broker.address_names()


def test_plans_in_use_are_protected_and_a_forced_change_warns_without_failing_unchanged_addresses(space):
    make_b190(space)
    assert not space.run("address_space", type="brokered", plan="b190").failed
    addrs = [small("q%03d" % i) for i in range(150)]
    assert not space.run("address", addresses=addrs).failed
    res = plan_module(space, "address_plan", name="small-queue", state="absent")
    assert res.failed and "address plan 'small-queue' cannot be deleted: it is used by 150 address(es)" in res.msg
    res = plan_module(space, "address_plan", dict(SMALL_QUEUE, address_type="topic"))
    assert res.failed and "address_type 'queue' cannot change to 'topic'" in res.msg
    res = plan_module(space, "address_space_plan", name="b190", state="absent")
    assert res.failed and "used by address spaces itest" in res.msg
    dropped = dict(B190, address_plans=["brokered-topic"])
    res = plan_module(space, "address_space_plan", dropped)
    assert res.failed and "cannot drop small-queue while addresses use them: itest/q000" in res.msg
    # credits up: 150 x 0.02 = 3.0 > 1.9; refused, then forced
    dearer = dict(SMALL_QUEUE, resources={"broker": 0.02})
    res = plan_module(space, "address_plan", dearer, diff=True)
    assert res.failed and "address space 'itest' would be over the quota of plan 'b190'" in res.msg
    assert "use force: true" in res.msg
    res = plan_module(space, "address_plan", dearer, force=True, diff=True)
    assert not res.failed and res.changed
    assert res["in_use"]["small-queue"] == {"address_spaces": ["itest"], "addresses": 150}
    assert res["diff"]["before"]["small-queue"]["resources"] == {"broker": 0.01}
    # the same call again changes nothing and does not fail: a warning with the numbers
    res = space.run("address", addresses=addrs)
    assert not res.failed and not res.changed, res
    assert "over the quota of its plan 'b190': its addresses use broker 3 of 1.9" in json.dumps(res.get("warnings"))
    # a new address that costs credits is refused
    res = space.run("address", addresses=addrs + [small("one-more")])
    assert res.failed and "addresses[150](one-more).plan" in res.msg


def test_prune_deletes_only_owned_unused_plans(space):
    res = plan_module(space, "address_plan", address_plans=[SMALL_QUEUE, dict(SMALL_QUEUE, name="spare")])
    assert res.changed and sorted(res["changes"]["created"]) == ["small-queue", "spare"]
    res = plan_module(space, "address_plan", check_mode=True, prune=True, address_plans=[SMALL_QUEUE])
    assert res.changed and res["changes"]["deleted"] == ["spare"]
    res = plan_module(space, "address_plan", prune=True, address_plans=[SMALL_QUEUE])
    assert res["changes"]["deleted"] == ["spare"]
    info = plan_module(space, "address_plan_info")
    names = [p["name"] for p in info["plans"]]
    assert "spare" not in names and "brokered-queue" in names  # examples are never pruned


def test_address_ttl_narrows_the_plan_bounds_on_the_broker(space):
    res = plan_module(space, "address_plan", name="ttl-queue", address_type="queue",
                      message_ttl={"minimum": 1000, "maximum": 5000})
    assert not res.failed, res
    plan = dict(B190, address_plans=B190["address_plans"] + ["ttl-queue"])
    assert not plan_module(space, "address_plan", SMALL_QUEUE).failed
    assert not plan_module(space, "address_space_plan", plan).failed
    assert not space.run("address_space", type="brokered", plan="b190").failed
    res = space.run("address", address="narrow", type="queue", plan="ttl-queue",
                    message_ttl={"minimum": 500, "maximum": 60000})
    assert not res.failed, res
    settings = space.broker.address_settings("narrow")
    assert (settings["minExpiryDelay"], settings["maxExpiryDelay"]) == (1000, 5000)
    assert res["addresses"][0]["message_ttl"] == {"minimum": 1000, "maximum": 5000}
    # bounds that do not overlap the plan's are refused
    res = space.run("address", address="apart", type="queue", plan="ttl-queue", message_ttl={"minimum": 6000})
    assert res.failed and "does not overlap the bounds of its plan" in res.msg


def test_redelivery_on_a_deadletter_address_reaches_the_broker(space):
    assert not space.run("address_space", type="brokered", plan="brokered-single-broker").failed
    res = space.run("address", addresses=[
        {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter",
         "message_redelivery": {"maximum_delivery_attempts": 7, "redelivery_delay": 250}}])
    assert not res.failed and res.changed, res
    settings = space.broker.address_settings("dlq")
    assert (settings["maxDeliveryAttempts"], settings["redeliveryDelay"]) == (7, 250)
    again = space.run("address", addresses=[
        {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter",
         "message_redelivery": {"maximum_delivery_attempts": 7, "redelivery_delay": 250}}])
    assert not again.changed
