"""The placement rule, on cases small enough to work out by hand."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.model.placement import (
    QUOTA_EXCEEDED, PlacementItem, partitions_for, place, routers_needed)


@pytest.mark.parametrize("credit,parts,expected", [
    (0.01, 1, 1), (1.0, 1, 1), (1.0000000001, 1, 1), (1.2, 1, 2), (2.0, 1, 2),
    (0.01, 2, 2), (2.5, 2, 3), (0, 1, 1),
])
def test_partitions_for(credit, parts, expected):
    assert partitions_for(credit, parts) == expected


def test_routers_needed_is_ceiling_of_sum_without_float_noise():
    assert routers_needed([0.1] * 10) == 1          # 0.9999999999999999 or 1.0000000000000002
    assert routers_needed([0.001] * 1001) == 2
    assert routers_needed([]) == 0
    assert routers_needed([], minimum=1) == 1


def test_first_fit_fills_brokers_in_order():
    items = [PlacementItem("q%d" % i, 0.01, 0.4, 1, "p") for i in range(5)]
    res = place(items)
    # 0.4 + 0.4 fit on one broker (0.8), a third does not (1.2)
    assert res.assignments == {"q0": ["broker-0"], "q1": ["broker-0"], "q2": ["broker-1"],
                               "q3": ["broker-1"], "q4": ["broker-2"]}
    assert res.brokers_needed == 3
    assert res.routers_needed == 1


def test_partitions_never_share_a_broker():
    res = place([PlacementItem("big", 0.1, 2.5, 1, "x")])
    assert res.assignments["big"] == ["broker-0", "broker-1", "broker-2"]
    assert all(abs(v - 2.5 / 3) < 1e-9 for v in res.brokers.values())


def test_partitioned_small_queue_goes_on_two_brokers_even_with_room():
    res = place([PlacementItem("p", 0.001, 0.01, 2, "part")], brokers=["a", "b", "c"])
    assert res.assignments["p"] == ["a", "b"]


def test_stable_existing_home_is_kept_even_if_first_fit_would_differ():
    items = [PlacementItem("new", 0, 0.5, 1, "m"),
             PlacementItem("old", 0, 0.5, 1, "m", current_brokers=["b"], current_plan="m")]
    res = place(items, brokers=["a", "b"])
    assert res.assignments["old"] == ["b"]
    assert res.assignments["new"] == ["a"]
    assert res.moves == [] and res.draining == {}


def test_plan_change_replaces_and_drains_old_broker():
    items = [PlacementItem("filler", 0, 0.9, 1, "l", current_brokers=["a"], current_plan="l"),
             PlacementItem("q", 0, 0.5, 1, "medium", current_brokers=["a"], current_plan="small")]
    res = place(items, brokers=["a"])
    assert res.assignments["q"] == ["broker-1"]
    assert res.draining == {"q": ["a"]}
    assert res.moves == [{"name": "q", "partition": 0, "from": "a", "to": "broker-1"}]


def test_quota_exceeded_stays_pending_and_later_items_still_fit():
    limits = {"router": 1.0, "broker": 1.0, "aggregate": 2.0}
    items = [PlacementItem("a", 0, 0.6, 1, "p"), PlacementItem("b", 0, 0.6, 1, "p"),
             PlacementItem("c", 0, 0.3, 1, "p")]
    res = place(items, limits=limits)
    assert res.pending == {"b": QUOTA_EXCEEDED}
    assert set(res.assignments) == {"a", "c"}
    assert abs(res.totals["broker"] - 0.9) < 1e-9


def test_aggregate_limit_counts_router_plus_broker():
    limits = {"router": 1.0, "broker": 1.0, "aggregate": 1.0}
    res = place([PlacementItem("a", 0.5, 0.4, 1, "p"), PlacementItem("b", 0.1, 0.1, 1, "p")], limits=limits)
    assert res.pending == {"b": QUOTA_EXCEEDED}


def test_subscription_lives_beside_its_topic():
    items = [PlacementItem("filler", 0, 0.95, 1, "p"),
             PlacementItem("t", 0, 0.2, 1, "topic"),
             PlacementItem("s", 0, 0.01, 1, "sub", colocate_with="t")]
    res = place(items)
    assert res.assignments["t"] == ["broker-1"]
    assert res.assignments["s"] == ["broker-1"]


def test_router_only_addresses_take_no_broker():
    res = place([PlacementItem("any", 0.001, 0, 1, "anycast")])
    assert res.assignments["any"] == [] and res.brokers_needed == 0 and res.routers_needed == 1


# ---- a broker leaving the pool (draining_brokers, issue 22's scale in)

def test_draining_broker_takes_nothing_new():
    items = [PlacementItem("q%d" % i, 0, 0.4, 1, "p") for i in range(3)]
    res = place(items, brokers=["a", "b", "c"], draining_brokers=["a"])
    assert res.assignments == {"q0": ["b"], "q1": ["b"], "q2": ["c"]}
    assert res.brokers["a"] == 0 and res.moves == [] and res.draining == {}


def test_address_on_a_draining_broker_moves_and_the_others_stay():
    items = [PlacementItem("stay", 0, 0.5, 1, "m", current_brokers=["b"], current_plan="m"),
             PlacementItem("leave", 0, 0.5, 1, "m", current_brokers=["a"], current_plan="m")]
    res = place(items, brokers=["a", "b", "c"], draining_brokers=["a"])
    assert res.assignments == {"stay": ["b"], "leave": ["b"]}
    assert res.draining == {"leave": ["a"]}
    assert res.moves == [{"name": "leave", "partition": 0, "from": "a", "to": "b"}]
    assert res.brokers == {"a": 0.0, "b": 1.0, "c": 0.0}


def test_partition_on_a_draining_broker_moves_alone_and_keeps_its_index():
    items = [PlacementItem("pq", 0, 0.02, 3, "part", current_brokers=["a", "b", "c"], current_plan="part")]
    res = place(items, brokers=["a", "b", "c", "d"], draining_brokers=["b"])
    # partitions 0 and 2 stay; partition 1 goes to the one broker that is neither draining nor used by pq
    assert res.assignments["pq"] == ["a", "d", "c"]
    assert res.moves == [{"name": "pq", "partition": 1, "from": "b", "to": "d"}]
    assert res.draining == {"pq": ["b"]}


def test_draining_with_no_room_left_asks_for_a_new_broker():
    items = [PlacementItem("pq", 0, 0.02, 2, "part", current_brokers=["a", "b"], current_plan="part")]
    res = place(items, brokers=["a", "b"], draining_brokers=["b"])
    # never two partitions on one broker, never the draining one: a broker the pool does not have
    assert res.assignments["pq"] == ["a", "broker-2"]
    assert res.draining == {"pq": ["b"]}


def test_subscription_follows_its_topic_off_a_draining_broker():
    items = [PlacementItem("t", 0, 0.1, 1, "topic", current_brokers=["a"], current_plan="topic"),
             PlacementItem("s", 0, 0.1, 1, "sub", current_brokers=["a"], current_plan="sub", colocate_with="t")]
    res = place(items, brokers=["a", "b"], draining_brokers=["a"])
    assert res.assignments == {"t": ["b"], "s": ["b"]}
    assert res.draining == {"t": ["a"], "s": ["a"]}
