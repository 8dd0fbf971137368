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
        "schema_version": 1, "generated_at": MADE, "job": {"end": MADE},
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
    ({"job": {"end": "2026-11-26T10:33:20Z"}}, "plan-age",
     "job.end '2026-11-26T10:33:20Z' is 180 min old: older than plan_max_age 7200 s (120 min)"),
    ({"job": {}, "generated_at": "2026-11-26T10:33:20Z"}, "plan-age",
     "generated_at '2026-11-26T10:33:20Z' is 180 min old"),
    ({"job": {"end": "yesterday"}}, "plan-age", "job.end 'yesterday' is not an ISO 8601 time"),
    ({"job": {"end": "2026-11-26T13:03:20"}}, "plan-age", "not an ISO 8601 time with an offset"),
    ({"data_quality": {"valid_window_ratio": 0.5}}, "data-quality",
     "data_quality.valid_window_ratio 0.5 < min_valid_window_ratio 0.9"),
    ({"data_quality": {"valid_window_ratio": 0.89}}, "data-quality", "valid_window_ratio 0.89 < min_valid_window_ratio 0.9"),
    ({"data_quality": {}}, "data-quality", "valid_window_ratio None"),
], ids=["job-end-old", "no-job-end-generated-at-old", "job-end-not-a-time", "job-end-no-offset",
        "ratio-low", "ratio-just-under", "ratio-missing"])
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
    assert _guardrails(out) == ["cooldown"] and "last change 12 min ago (< 60 min): cooldown 3600 s" in out["refused"][0]["why"]
    assert out["drain"]["brokers"] == [] and out["act"] is False
    out = _apply(_plan(brokers_after=["b1", "b2"]), history=history, cooldown=600)
    assert out["drain"]["brokers"] == ["b3"]


# ------------------------------------------------------------ critical alerts
AM = "http://monitor:s3cret@am.example:9093"


def _alert(name, severity="critical", instance="b1:9404", state="active", **status):
    return {"labels": {"alertname": name, "severity": severity, "instance": instance},
            "status": dict({"state": state, "silencedBy": [], "inhibitedBy": []}, **status)}


def test_a_firing_critical_alert_refuses_the_plan_whole_naming_each_alert():
    alerts = [_alert("EnmasseBrokerDiskHigh"), _alert("EnmasseTargetDown", instance="r2:9000"),
              _alert("EnmasseBrokerDiskHigh"), _alert("EnmasseQueueGrowing", severity="warning")]
    blocked = day2.alert_refusals(alerts, AM)
    assert [g for g, unused in blocked] == ["critical-alert"]
    why = blocked[0][1]
    assert "2 alert(s) of severity critical firing" in why
    assert "EnmasseBrokerDiskHigh on b1:9404, EnmasseTargetDown on r2:9000" in why
    assert "EnmasseQueueGrowing" not in why and "s3cret" not in why and "am.example:9093" in why
    out = day2.change_set(_plan(brokers_after=["b1", "b2"], moves=[_move("q", "b1", "b2")]), "prod",
                          copy.deepcopy(LIVE), {}, [], NOW, {"mode": "apply", "min_brokers": 1}, blocked=blocked)
    assert out["act"] is False and out["drain"]["brokers"] == [] and out["moves"] == []
    assert _guardrails(out) == ["critical-alert"] and out["refused"][0]["why"].endswith("nothing done")


@pytest.mark.parametrize("alerts", [
    [], [_alert("Q", severity="warning")], [_alert("Q", state="suppressed", silencedBy=["s-1"])],
    [_alert("Q", silencedBy=["s-1"])], [_alert("Q", inhibitedBy=["i-1"])], [{"labels": "bad"}, "bad"],
], ids=["none", "warning-only", "suppressed", "silenced", "inhibited", "malformed"])
def test_no_blocking_alert_lets_the_plan_through(alerts):
    assert day2.alert_refusals(alerts, AM) == []


def test_the_blocking_severities_are_configurable():
    alerts = [_alert("Q", severity="warning")]
    assert [g for g, unused in day2.alert_refusals(alerts, AM, ("critical", "warning"))] == ["critical-alert"]
    assert day2.alert_refusals([_alert("Q")], AM, ("page",)) == []


@pytest.mark.parametrize("alerts, error, why", [
    (None, "HTTP status -1: Connection refused", "could not be read (HTTP status -1: Connection refused)"),
    ({"status": "error"}, None, "answered {'status': 'error'}, not a list of alerts"),
], ids=["unreachable", "not-a-list"])
def test_alertmanager_unreadable_refuses_fail_closed_naming_the_url(alerts, error, why):
    (blocked,) = day2.alert_refusals(alerts, AM, error=error)
    assert blocked[0] == "alertmanager-unreachable"
    assert why in blocked[1] and "http://monitor:********@am.example:9093" in blocked[1]
    assert "fail closed" in blocked[1] and "s3cret" not in blocked[1]


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
                               "why": "brokers_after has 5 brokers, brokers_before 3: 2 to add, the group "
                                      "brokers_spare has 1 free host(s) (s1); Ansible creates no machines: add "
                                      "hosts to brokers_spare"}]


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
                               "why": "draining 'b3' would leave fewer than min_brokers 2 brokers in the pool "
                                      "(brokers_after has 1)"}]
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
    assert out["refused"][0] == {"step": "move s/b#0 b1 -> b3", "guardrail": "max-bytes-moved",
                                 "why": "bytes 400 would make 800 bytes moved in this run: over max_bytes_moved 600"}


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


# ------------------------------------------------------------- issue 22's apply_plan: defaults, messages, steps

def test_the_default_guardrails_of_apply_plan():
    """Defaults: plan_max_age 7200 s, max_hosts_changed 1, max_moves 20, min_brokers 2."""
    g = {"mode": "apply"}
    old = dict(_plan(), job={"end": "2026-11-26T11:33:19Z"})  # 2 h + 1 s before NOW
    out = day2.change_set(old, "prod", LIVE, {}, [], NOW, g)
    assert _guardrails(out) == ["plan-age"] and "plan_max_age 7200 s" in out["refused"][0]["why"]
    fresh = dict(_plan(), job={"end": "2026-11-26T11:33:21Z"})
    assert day2.change_set(fresh, "prod", LIVE, {}, [], NOW, g)["refused"] == []
    moves = [_move("q%d" % i, "b1", "b2") for i in range(21)]
    out = day2.change_set(_plan(moves=moves), "prod", LIVE, {}, [], NOW, g)
    assert len(out["moves"]) == 20 and out["refused"] == [{
        "step": "move s/q20#0 b1 -> b2", "guardrail": "max-moves",
        "why": "max_moves 20 reached: at most 20 move(s) per run"}]
    out = day2.change_set(_plan(brokers_after=["b1"]), "prod", LIVE, {}, [], NOW, g)
    assert out["drain"]["brokers"] == ["b2"] and _guardrails(out) == ["floor"]  # 1 per run, floor 2
    assert "min_brokers 2" in out["refused"][0]["why"]


def test_the_per_run_host_limit_names_the_guardrail_and_its_value():
    out = _apply(_plan(brokers_after=["b1", "b2", "b3", "n4", "n5"]), spares={"brokers": ["s1", "s2"]})
    assert out["add"]["brokers"] == ["s1"]
    assert out["refused"] == [{"step": "add s2", "guardrail": "max-hosts-changed",
                               "why": "max_hosts_changed 1 reached: at most 1 host(s) added or drained per run"}]


def test_new_brokers_of_the_plan_are_mapped_onto_spare_hosts():
    plan = _plan(brokers_after=["b1", "b2", "b3", "prod-broker-4", "prod-broker-5"])
    out = _apply(plan, spares={"brokers": ["spare-a", "spare-b", "spare-c"]}, max_hosts_changed=2)
    assert out["add"]["brokers"] == ["spare-a", "spare-b"]
    assert out["add_for"] == {"spare-a": "prod-broker-4", "spare-b": "prod-broker-5"}
    assert day2.steps(out) == [
        {"action": "add", "kind": "brokers", "host": "spare-a", "for": "prod-broker-4"},
        {"action": "add", "kind": "brokers", "host": "spare-b", "for": "prod-broker-5"}]


def test_never_scale_out_and_in_in_one_run_names_what_is_added():
    plan = _plan(brokers_after=["b1", "b2"], routers_after=["r1", "r2", "n3"])
    out = _apply(plan, spares={"routers": ["s-r"]}, max_hosts_changed=3)
    assert out["refused"] == [{"step": "drain b3", "guardrail": "scale-out-first",
                               "why": "routers are added in this run (s-r): never scale out and in in one run; "
                                      "the drain waits for the next run"}]


def test_a_plan_for_another_pool_names_both_lists():
    out = _apply(_plan(), live={"brokers": ["b1", "b2"], "routers": ["r1", "r2"]})
    assert out["refused"] == [{"step": "plan", "guardrail": "pool-changed",
                               "why": "brokers_before ['b1', 'b2', 'b3'] differs from the live pool's brokers "
                                      "['b1', 'b2']: the plan was made for another pool; nothing done"}]


def test_a_move_names_the_broker_not_in_the_pool_and_a_non_move_is_refused():
    out = _apply(_plan(moves=[_move("q", "b1", "prod-broker-4"), _move("n", None, "b2"),
                              dict(_move("r", "b1", "b2"), partition=None)]))
    assert out["moves"] == [] and _guardrails(out) == ["not-in-pool", "not-a-move", "not-a-move"]
    assert out["refused"][0]["why"].startswith("to 'prod-broker-4': both brokers must be in the live pool "
                                               "['b1', 'b2', 'b3']")
    assert out["refused"][1]["why"].startswith("from None, to 'b2', partition 0: only a partition moving")


def test_steps_are_moves_then_drains():
    out = _apply(_plan(brokers_after=["b1", "b2"], moves=[_move("p", "b1", "b2", 10, 1)]))
    assert day2.steps(out) == [
        {"action": "move", "address_space": "s", "address": "p", "partition": 1, "from": "b1", "to": "b2",
         "bytes": 10},
        {"action": "drain", "kind": "brokers", "host": "b3"}]


def test_the_next_plan_confirms_the_last_change_or_says_not_converged():
    history = [{"time": NOW - 3600, "changed": True}]
    later = dict(_plan(), job={"end": MADE})  # 30 min after the change
    assert day2.confirmation(later, "prod", history) == {
        "of": NOW - 3600, "converged": True, "why": "the next plan proposes no change: converged"}
    moving = dict(_plan(brokers_after=["b1", "b2"], moves=[_move("p", "b1", "b2")]), job={"end": MADE})
    c = day2.confirmation(moving, "prod", history)
    assert c["converged"] is False and c["why"] == (
        "the next plan still proposes brokers_before ['b1', 'b2', 'b3'] -> brokers_after ['b1', 'b2']; "
        "1 move(s): not converged")
    earlier = dict(_plan(), job={"end": "2026-11-26T11:00:00Z"})  # data ends before the change
    assert day2.confirmation(earlier, "prod", history) is None
    assert day2.confirmation(later, "prod", [{"time": NOW, "changed": False}]) is None


def test_a_move_whose_partition_is_not_on_its_from_any_more_is_refused():
    plan = _plan(moves=[_move("q", "b1", "b2", partition=1), _move("p", "b1", "b3"), _move("x", "b1", "b2")])
    homes = {"s/q": ["b3", "b1"], "s/p": ["b2"]}
    out = day2.change_set(plan, "prod", LIVE, {}, [], NOW, {"mode": "apply"}, homes=homes)
    assert [m["address"] for m in out["moves"]] == ["q"]
    assert out["refused"] == [
        {"step": "move s/p#0 b1 -> b3", "guardrail": "moved-since-plan",
         "why": "from 'b1': the partition lives on 'b2' now (the ledger of 's'): the plan is older than the pool"},
        {"step": "move s/x#0 b1 -> b2", "guardrail": "moved-since-plan",
         "why": "from 'b1': the partition lives on 'nowhere' now (the ledger of 's'): the plan is older than the pool"}]
