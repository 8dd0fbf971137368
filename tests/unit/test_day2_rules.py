"""The rules of applying a capacity plan (module_utils/model/day2.py): one
test per rule of its docstring."""
import copy

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.model import day2
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import INFRA_SPACE

pytestmark = pytest.mark.unit

NOW = 1795700000.0  # 2026-11-26T13:33:20Z
MADE = "2026-11-26T13:03:20+00:00"  # 30 min before NOW
LIVE = {"brokers": ["b1", "b2", "b3"], "routers": ["r1", "r2"]}


def _plan(brokers_after=("b1", "b2", "b3"), routers_after=("r1", "r2"), moves=(), **kw):
    plan = {
        "schema_version": 1, "generated_at": MADE,
        "data_quality": {"valid_window_ratio": 0.98},
        "infrastructures": [{
            "infra": "prod",
            "broker_pools": [
                {"pool": "brokered-a", "brokers_before": ["x"], "brokers_after": ["x", "y"], "moves": []},
                {"pool": INFRA_SPACE, "brokers_before": ["b1", "b2", "b3"], "brokers_after": list(brokers_after),
                 "brokers_removed": [b for b in ("b1", "b2", "b3") if b not in brokers_after],
                 "moves": [dict(m) for m in moves]}],
            "router_pools": [{"pool": INFRA_SPACE, "routers_before": ["r1", "r2"],
                              "routers_after": list(routers_after)}]}]}
    plan.update(kw)
    return plan


def _move(address, frm, to, size=1000, partition=0):
    return {"address_space": "s", "address": address, "partition": partition, "from": frm, "to": to,
            "bytes": size, "reason": "overload"}


def _apply(plan, live=None, spares=None, history=None, **guardrails):
    g = dict({"mode": "apply", "min_brokers": 1, "min_routers": 1}, **guardrails)
    return day2.change_set(plan, "prod", copy.deepcopy(live or LIVE), spares or {}, history or [], NOW, g)


def _guardrails(out):
    return [r["guardrail"] for r in out["refused"]]


# ------------------------------------------------------------ errors
@pytest.mark.parametrize("plan, match", [
    ({"schema_version": 2}, "schema_version 2 is not 1"),
    ("not a plan", "schema_version 'not a plan' is not 1"),
    ({"schema_version": 1, "infrastructures": [{"infra": "other", "broker_pools": []}]},
     "no standard broker pool .* for infrastructure 'prod'"),
])
def test_a_plan_that_cannot_be_read_is_an_error(plan, match):
    with pytest.raises(ValueError, match=match):
        _apply(plan)


@pytest.mark.parametrize("guardrails, message", [
    ({"mode": "yes"}, "guardrails.mode: 'yes' must be 'report' or 'apply'"),
    ({"max_moves": -1}, "guardrails.max_moves: -1 must be an integer >= 0"),
    ({"cooldown": True}, "guardrails.cooldown: True must be an integer >= 0"),
    ({"max_bytes_moved": "1G"}, "guardrails.max_bytes_moved: '1G' must be an integer >= 0 or null"),
    ({"min_valid_window_ratio": 1.5}, "guardrails.min_valid_window_ratio: 1.5 must be a number from 0 to 1"),
    ({"max_host": 1}, "guardrails.max_host: unknown guardrail"),
])
def test_each_bad_guardrail_is_named_with_its_value_and_rule(guardrails, message):
    assert any(e.startswith(message) for e in day2.guardrail_errors(guardrails))
    with pytest.raises(ValueError, match="guardrails"):
        day2.change_set(_plan(), "prod", LIVE, now=NOW, guardrails=guardrails)


def test_the_defaults_are_valid_and_report_only():
    assert day2.guardrail_errors({}) == []
    out = day2.change_set(_plan(brokers_after=["b1", "b2"]), "prod", LIVE, now=NOW)
    assert out["act"] is False and out["drain"]["brokers"] == ["b3"]


# ------------------------------------------------------------ stale plans
@pytest.mark.parametrize("change, guardrail, why", [
    ({"generated_at": "2026-11-26T10:33:20Z"}, "plan-age", "made 180 min ago (> 120 min)"),
    ({"generated_at": "yesterday"}, "plan-age", "not an ISO 8601 time"),
    ({"generated_at": "2026-11-26T13:03:20"}, "plan-age", "not an ISO 8601 time with an offset"),
    ({"data_quality": {"valid_window_ratio": 0.5}}, "data-quality", "valid_window_ratio 0.5 < 0.9"),
    ({"data_quality": {}}, "data-quality", "valid_window_ratio None"),
])
def test_a_stale_plan_is_refused_whole(change, guardrail, why):
    out = _apply(_plan(brokers_after=["b1", "b2"], moves=[_move("q", "b1", "b2")], **change))
    assert out["act"] is False and out["drain"]["brokers"] == [] and out["moves"] == []
    assert _guardrails(out) == [guardrail] and why in out["refused"][0]["why"]
    assert out["refused"][0]["why"].endswith("nothing done")


def test_a_plan_made_for_another_pool_is_refused():
    out = _apply(_plan(brokers_after=["b1", "b2"]), live={"brokers": ["b1", "b2", "b4"], "routers": ["r1", "r2"]})
    assert _guardrails(out) == ["pool-changed"] and out["drain"]["brokers"] == []
    out = _apply(_plan(), live={"brokers": ["b1", "b2", "b3"], "routers": ["r1"]})
    assert _guardrails(out) == ["pool-changed"]


def test_the_order_of_the_live_hosts_does_not_make_a_plan_stale():
    out = _apply(_plan(), live={"brokers": ["b3", "b1", "b2"], "routers": ["r2", "r1"]})
    assert out["refused"] == [] and out["act"] is True


# ------------------------------------------------------------ cooldown
def test_nothing_is_done_within_the_cooldown_of_the_last_change():
    history = [{"time": NOW - 3 * 3600, "changed": True}, {"time": NOW - 12 * 60, "changed": True},
               {"time": NOW - 60, "changed": False}]
    out = _apply(_plan(brokers_after=["b1", "b2"]), history=history)
    assert _guardrails(out) == ["cooldown"] and "last change 12 min ago (< 60 min)" in out["refused"][0]["why"]
    assert out["drain"]["brokers"] == [] and out["act"] is False
    out = _apply(_plan(brokers_after=["b1", "b2"]), history=history, cooldown=600)
    assert out["drain"]["brokers"] == ["b3"]


# ------------------------------------------------------------ scale out first
def test_hosts_to_add_come_from_the_spares_in_their_order():
    plan = _plan(brokers_after=["b1", "b2", "b3", "prod-broker-4"])
    out = _apply(plan, spares={"brokers": ["b2", "s1", "s2"]})  # b2 is already in the pool
    assert out["add"] == {"brokers": ["s1"], "routers": []} and out["refused"] == []


def test_without_a_spare_the_addition_is_refused_with_the_count():
    out = _apply(_plan(brokers_after=["b1", "b2", "b3", "n4", "n5"]), spares={"brokers": ["s1"]},
                 max_hosts_changed=5)
    assert out["add"]["brokers"] == ["s1"]
    assert out["refused"] == [{"step": "add 1 brokers", "guardrail": "no-spare-host",
                               "why": "the plan adds 2, the spares of brokers have 1 free"}]


def test_drains_and_moves_wait_while_hosts_are_added():
    plan = _plan(brokers_after=["b1", "b2"], routers_after=["r1", "r2", "n3"], moves=[_move("q", "b1", "b2")])
    out = _apply(plan, spares={"routers": ["s-r"]}, max_hosts_changed=3)
    assert out["add"]["routers"] == ["s-r"] and out["drain"]["brokers"] == [] and out["moves"] == []
    assert _guardrails(out) == ["scale-out-first", "scale-out-first"]


# ------------------------------------------------------------ per-run limit and floor
def test_at_most_max_hosts_changed_per_run():
    out = _apply(_plan(brokers_after=["b1"]))
    assert out["drain"]["brokers"] == ["b2"] and _guardrails(out) == ["max-hosts-changed"]
    out = _apply(_plan(brokers_after=["b1"]), max_hosts_changed=2)
    assert out["drain"]["brokers"] == ["b2", "b3"]


def test_never_under_the_floor():
    out = _apply(_plan(brokers_after=["b1"]), max_hosts_changed=2, min_brokers=2)
    assert out["drain"]["brokers"] == ["b2"]
    assert out["refused"] == [{"step": "drain b3", "guardrail": "floor",
                               "why": "the pool would have fewer than 2 brokers"}]
    out = _apply(_plan(routers_after=["r1"]), min_routers=2)
    assert out["drain"]["routers"] == [] and _guardrails(out) == ["floor"]


# ------------------------------------------------------------ moves
def test_moves_off_a_draining_broker_are_left_to_the_drain():
    out = _apply(_plan(brokers_after=["b1", "b2"], moves=[_move("q", "b3", "b1"), _move("p", "b1", "b2")]))
    assert out["drain"]["brokers"] == ["b3"] and [m["address"] for m in out["moves"]] == ["p"]
    assert out["refused"] == []


def test_moves_are_limited_in_number_and_bytes_in_the_plans_order():
    moves = [_move("a", "b1", "b2", 400), _move("b", "b1", "b3", 400), _move("c", "b2", "b3", 100)]
    out = _apply(_plan(moves=moves), max_moves=2)
    assert [m["address"] for m in out["moves"]] == ["a", "b"] and _guardrails(out) == ["max-moves"]
    out = _apply(_plan(moves=moves), max_bytes_moved=600)
    assert [m["address"] for m in out["moves"]] == ["a", "c"]
    assert out["refused"][0]["guardrail"] == "max-bytes-moved" and "800 bytes" in out["refused"][0]["why"]


def test_a_move_to_a_broker_not_yet_in_the_pool_waits_for_the_next_plan():
    out = _apply(_plan(moves=[_move("q", "b1", "prod-broker-4")]))
    assert out["moves"] == [] and _guardrails(out) == ["not-in-pool"]
    assert out["refused"][0]["step"] == "move s/q#0 b1 -> prod-broker-4"


# ------------------------------------------------------------ report mode
def test_report_mode_decides_the_same_and_acts_on_nothing():
    plan = _plan(brokers_after=["b1", "b2"], moves=[_move("p", "b1", "b2")])
    applied = _apply(plan)
    reported = _apply(plan, mode="report")
    assert reported["act"] is False and applied["act"] is True
    assert dict(reported, act=True) == applied


def test_the_plan_and_the_live_pool_are_not_changed():
    plan = _plan(brokers_after=["b1", "b2"], moves=[_move("p", "b1", "b2")])
    live = copy.deepcopy(LIVE)
    before = copy.deepcopy(plan)
    day2.change_set(plan, "prod", live, {}, [], NOW, {"mode": "apply", "min_brokers": 1})
    assert plan == before and live == LIVE


# ------------------------------------------------------------- scale in (playbooks/scale_in.yml)

def test_scale_in_a_broker_above_the_floor_is_allowed():
    assert day2.scale_in_errors("b3", ["b1", "b2", "b3"]) == []
    assert day2.scale_in_errors("b2", ["b1", "b2"], min_brokers=1) == []


def test_scale_in_under_the_floor_is_refused_naming_the_floor():
    errs = day2.scale_in_errors("b2", ["b1", "b2"])
    assert errs == ["scale_in_broker: 'b2': the pool would keep 1 active broker(s) (b1), fewer than the floor "
                    "scale_in_min_brokers 2"]


def test_scale_in_counts_only_active_brokers_and_allows_a_resume():
    # b1 drains already: only b3 would stay
    errs = day2.scale_in_errors("b2", ["b1", "b2", "b3"], {"b1": "draining"})
    assert len(errs) == 1 and "keep 1 active broker(s) (b3)" in errs[0]
    # the host itself already draining (a second run after a failure): still allowed
    assert day2.scale_in_errors("b2", ["b1", "b2", "b3"], {"b2": "draining"}) == []


def test_scale_in_of_the_last_broker_or_an_unknown_host_is_refused():
    assert "keep 0 active broker(s) (none)" in day2.scale_in_errors("b1", ["b1"], min_brokers=1)[0]
    assert day2.scale_in_errors("bx", ["b1", "b2"]) == [
        "scale_in_broker: 'bx' is not a host of the group brokers (b1, b2)"]
    assert day2.scale_in_errors("b1", [])[0].endswith("(the group is empty)")
    assert "must be an integer >= 1" in day2.scale_in_errors("b1", ["b1", "b2"], min_brokers=0)[0]


def test_scale_in_refuses_a_host_with_brokered_spaces():
    errs = day2.scale_in_errors("b2", ["b1", "b2", "b3"], brokered=["shop", "demo"])
    assert errs == ["scale_in_broker: 'b2' also runs the brokered address space(s) demo, shop, which do not move: "
                    "pin them to another host (broker_host) first, or the uninstall would remove them"]
