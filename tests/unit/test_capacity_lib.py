"""Capacity planner rules (spark_jobs/enmasse_capacity/rules.py) on cases worked out by hand.

Every expected number is written literally; the comment next to it shows
the arithmetic.
"""
import datetime as dt
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "spark_jobs"))

from enmasse_capacity import rules as lib  # noqa: E402

pytestmark = pytest.mark.unit

MIB = 1024 * 1024


# ------------------------------------------------------------- counters

def test_counter_increase_normal_reset_and_restart():
    assert lib.counter_increase(100, 160) == 60            # 160 - 100
    assert lib.counter_increase(100, 100) == 0
    # went down: restarted from 0, so 30 messages since the restart
    assert lib.counter_increase(5000, 30) == 30
    # node restarted in the interval, counter already above the old value:
    # still counted from zero (not 7000 - 5000 = 2000)
    assert lib.counter_increase(5000, 7000, restarted=True) == 7000
    assert lib.counter_increase(None, 10) is None


def test_series_windows_with_a_restart_never_negative_or_huge():
    # one sample a minute; windows of 300 s; counter restarts at t = 330
    samples = [(0, 1000, 900), (60, 1060, 960), (120, 1120, 1020), (180, 1180, 1080), (240, 1240, 1140),
               (300, 1300, 1200), (360, 20, 15), (420, 80, 75), (480, 140, 135), (540, 200, 195)]
    w = lib.series_windows(samples, 300, restarts=[330.0], max_gap=600)
    # window [0, 300): intervals ending at 60..240 -> 4 x 60 msgs in 240 s
    assert w[0] == {"inc_in": 240, "inc_out": 240, "dt": 240.0, "n": 5, "resets": 0, "gaps": 0, "dups": 0}
    # window [300, 600): 60 (to 1300) + 20 (restart: the new value) + 60 + 60 + 60 = 260 in 300 s
    assert w[300]["inc_in"] == 260
    assert w[300]["inc_out"] == 60 + 15 + 60 + 60 + 60   # 255
    assert w[300]["dt"] == 300.0
    assert w[300]["resets"] == 1
    assert lib.window_rate(w[300]["inc_in"], w[300]["dt"]) == pytest.approx(260 / 300.0)   # 0.8667 msg/s


def test_series_windows_value_drop_without_uptime_is_a_reset_too():
    samples = [(0, 500, 0), (60, 560, 0), (120, 10, 0)]
    w = lib.series_windows(samples, 300)
    assert w[0]["inc_in"] == 60 + 10        # not 10 - 560 = -550
    assert w[0]["resets"] == 1


def test_series_windows_gaps_and_duplicates_count_nothing():
    samples = [(0, 0, 0), (60, 60, 0), (60, 60, 0), (1000, 1000, 0), (1060, 1060, 0)]
    w = lib.series_windows(samples, 300, max_gap=600)
    assert w[0]["inc_in"] == 60 and w[0]["dt"] == 60.0 and w[0]["dups"] == 1
    # 60 -> 1000 is 940 s > 600 s: a gap, its 940 messages are not attributed
    assert w[900]["inc_in"] == 60 and w[900]["dt"] == 60.0 and w[900]["gaps"] == 1


def test_window_valid_threshold():
    assert lib.window_valid(150.0, 300, 0.5)        # 150 >= 0.5 x 300
    assert not lib.window_valid(149.0, 300, 0.5)


def test_detect_restarts_from_uptime():
    # uptime drops at t = 200: restarted 200 - 15000 ms / 1000 = 185
    assert lib.detect_restarts([(0, 10000), (100, 110000), (200, 15000), (300, 115000)]) == [185.0]
    assert lib.detect_restarts([(0, 1), (100, 2)]) == []


# ------------------------------------------------------------ percentiles

def test_percentile_linear_interpolation():
    xs = list(range(1, 11))                              # 1..10
    assert lib.percentile(xs, 0.95) == pytest.approx(9.55)   # h = 9 x 0.95 = 8.55 -> 9 + 0.55 x (10 - 9)
    assert lib.percentile(xs, 0.99) == pytest.approx(9.91)   # h = 8.91
    assert lib.percentile(xs, 0.5) == pytest.approx(5.5)
    assert lib.percentile([7], 0.95) == 7
    assert lib.percentile([3, 1, 2], 0.0) == 1 and lib.percentile([3, 1, 2], 1.0) == 3
    assert lib.percentile([0.0, 100.0], 0.95) == pytest.approx(95.0)
    assert lib.percentile([], 0.5) is None


def test_percentile_nearest_rank():
    xs = list(range(1, 11))
    assert lib.percentile_nearest_rank(xs, 0.95) == 10      # ceil(9.5) = 10th value
    assert lib.percentile_nearest_rank(xs, 0.5) == 5        # ceil(5) = 5th
    assert lib.percentile_nearest_rank(list(range(1, 101)), 0.99) == 99


def test_summarize():
    s = lib.summarize([2.0, 4.0, 6.0, 8.0, None])
    assert s["avg"] == 5.0                     # (2 + 4 + 6 + 8) / 4
    assert s["p95"] == pytest.approx(7.7)      # h = 3 x 0.95 = 2.85 -> 6 + 0.85 x 2
    assert s["p99"] == pytest.approx(7.94)     # h = 2.97 -> 6 + 0.97 x 2
    assert s["max"] == 8.0 and s["count"] == 4


# --------------------------------------------------------------- verdicts

def test_needed_nodes():
    # 10 units of load, nodes of 10 with a high threshold of 80 %: 10 / 8 = 1.25 -> 2
    assert lib.needed_nodes(10.0, 0.0, 10.0, 0.8) == 2
    # each node already uses 2 of its 8 usable: 10 / 6 = 1.67 -> 2; 13 / 6 = 2.17 -> 3
    assert lib.needed_nodes(10.0, 2.0, 10.0, 0.8) == 2
    assert lib.needed_nodes(13.0, 2.0, 10.0, 0.8) == 3
    assert lib.needed_nodes(16.0, 0.0, 10.0, 0.8) == 2     # exactly 2 x 8
    assert lib.needed_nodes(0.0, 0.0, 10.0, 0.8) == 0
    assert lib.needed_nodes(1.0, 9.0, 10.0, 0.8) is None   # baseline 9 > 8: no node count helps


def test_verdict_thresholds():
    lows = {"msg_rate": 0.3, "memory": 0.3}
    # needs 4, has 3
    assert lib.verdict(3, 4, {"msg_rate": 0.9, "memory": 0.5}, lows) == {
        "verdict": lib.UNDER, "current": 3, "needed": 4, "change": 1}
    # needs 1, has 3, everything below 30 %: remove 2
    assert lib.verdict(3, 1, {"msg_rate": 0.1, "memory": 0.29}, lows) == {
        "verdict": lib.OVER, "current": 3, "needed": 1, "change": -2}
    # needs 1, has 3, but memory at 31 % (between low and high): keep
    assert lib.verdict(3, 1, {"msg_rate": 0.1, "memory": 0.31}, lows)["verdict"] == lib.RIGHT
    # the minimum holds: 1 needed, 2 minimum, 3 present -> remove 1
    assert lib.verdict(3, 1, {"msg_rate": 0.1, "memory": 0.1}, lows, minimum=2)["change"] == -1
    assert lib.verdict(2, 2, {"msg_rate": 0.5}, lows)["verdict"] == lib.RIGHT


def test_combine_verdicts():
    assert lib.combine_verdicts([lib.RIGHT, lib.OVER, lib.UNDER]) == lib.UNDER
    assert lib.combine_verdicts([lib.RIGHT, lib.OVER, None]) == lib.OVER
    assert lib.combine_verdicts([lib.RIGHT]) == lib.RIGHT


# --------------------------------------------------------------- forecast

def test_linear_fit_exact_line():
    i, s, r2 = lib.linear_fit([0, 1, 2, 3], [10, 12, 14, 16])
    assert (i, s, r2) == (pytest.approx(10.0), pytest.approx(2.0), pytest.approx(1.0))


def test_linear_fit_noisy():
    # y = 1, 3, 2, 5: mean x 1.5, mean y 2.75, sxx 5, sxy 5.5 -> slope 1.1, intercept 1.1
    i, s, r2 = lib.linear_fit([0, 1, 2, 3], [1, 3, 2, 5])
    assert s == pytest.approx(1.1) and i == pytest.approx(1.1)
    # residuals -0.1, 0.8, -1.3, 0.6: ss_res 2.7; ss_tot 8.75 -> r2 = 1 - 2.7 / 8.75
    assert r2 == pytest.approx(1 - 2.7 / 8.75)


def test_forecast_crossing_known_trend():
    d0 = dt.date(2024, 3, 1)
    # 10 + 2x reaches 20 at x = 5: 2024-03-06, two days after the last observed day (3)
    f = lib.forecast_crossing([0, 1, 2, 3], [10, 12, 14, 16], 20, d0)
    assert f["status"] == "date" and f["date"] == "2024-03-06" and f["days_left"] == 2
    assert f["slope_per_day"] == pytest.approx(2.0)
    # 21 is reached at x = 5.5 -> the first whole day at or above it is day 6
    assert lib.forecast_crossing([0, 1, 2, 3], [10, 12, 14, 16], 21, d0)["date"] == "2024-03-07"
    assert lib.forecast_crossing([0, 1, 2, 3], [10, 12, 14, 16], 15, d0)["status"] == "exceeded"
    assert lib.forecast_crossing([0, 1, 2, 3], [16, 14, 12, 10], 20, d0)["status"] == "never"
    far = lib.forecast_crossing([0, 1], [10, 11], 1000, d0, horizon_days=365)
    assert far["status"] == "beyond_horizon" and far["days_left"] == 989    # x = 990, last day 1


def test_daily_peaks():
    t0 = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc).timestamp()
    pts = [(t0, 1.0), (t0 + 3600, 5.0), (t0 + 86400, 2.0), (t0 + 86400 + 60, 4.0)]
    assert lib.daily_peaks(pts) == [(dt.date(2024, 3, 1), 5.0, 3.0), (dt.date(2024, 3, 2), 4.0, 3.0)]


# ------------------------------------------------------------ sizing rules

def test_router_memory_model():
    sizing = lib.DEFAULT_CAPACITY_MODEL["router"]["sizing"]
    # 50 MiB + 10 x 7 KiB + 20 x 32 KiB + 100 links x 250 x 1024 B + 50 x 120 KiB
    # = 52428800 + 71680 + 655360 + 25600000 + 6144000 = 84899840
    assert lib.router_memory_model(10, 20, 100, 50, sizing, 1024) == 84899840


def test_broker_disk_model():
    # 1e9 bytes of messages + 5 % + 50 MiB = 1050000000 + 52428800
    assert lib.broker_disk_model(1e9) == pytest.approx(1102428800.0)
    assert lib.broker_disk_model(0) == 50 * MIB


# ------------------------------------------------------------ capacity model

def test_capacity_model_defaults_and_overrides():
    m = lib.load_capacity_model({"thresholds": {"high": 0.7}, "broker": {"resources": {"msg_rate": {
        "capacity": 5000, "low": 0.1}}}})
    assert m["broker"]["resources"]["msg_rate"] == {"capacity": 5000, "baseline": 0, "high": 0.7, "low": 0.1}
    assert m["broker"]["resources"]["memory"]["high"] == 0.7 and m["broker"]["resources"]["memory"]["low"] == 0.3
    assert m["router"]["resources"]["msg_rate"]["capacity"] == 100000


@pytest.mark.parametrize("bad,message", [
    ({"broker": {"resources": {"msg_rate": {"capacity": -1}}}}, "broker.resources.msg_rate.capacity: -1"),
    ({"thresholds": {"high": 0.2, "low": 0.5}}, "low: 0.5 must be in [0, high)"),
    ({"window_seconds": 0}, "window_seconds: 0 must be a number > 0"),
    ({"rate_statistic": "p50"}, "rate_statistic: 'p50' must be one of avg, p95, p99, max"),
    ({"broker": {"resources": {"cpu": {"capacity": 1}}}}, "broker.resources.cpu: unknown resource"),
    ({"colour": "blue"}, "unknown key 'colour'"),
])
def test_capacity_model_errors(bad, message):
    with pytest.raises(lib.InputError) as e:
        lib.load_capacity_model(bad)
    assert message in str(e.value)


# ------------------------------------------------------------ reference aggregation

def test_reference_address_stats_partitioned_queue_sums_nodes():
    # a queue with two partitions (b0, b1), 60 s samples, one 300 s window each
    rows = []
    for i in range(11):
        t = 60.0 * i
        rows.append({"infra": "i", "address_space": "s", "address": "q", "node": "b0", "node_kind": "broker",
                     "t": t, "messages_added": 100 * i, "messages_acknowledged": 90 * i})
        rows.append({"infra": "i", "address_space": "s", "address": "q", "node": "b1", "node_kind": "broker",
                     "t": t, "messages_added": 50 * i, "messages_acknowledged": 50 * i})
    st = lib.reference_address_stats(rows, 300, 600, 0.5)[("i", "s", "q", "broker")]
    # per window: b0 100 msgs/60 s + b1 50/60 s = 2.5 msg/s in; (90 + 50)/60 = 2.333 out
    # windows [0,300) (4 intervals, valid), [300,600) (5), [600,900) (1 interval = 60 s < 150: invalid)
    assert st["windows"] == 3 and st["windows_valid"] == 2
    assert st["ingress"]["avg"] == pytest.approx(2.5) and st["ingress"]["p95"] == pytest.approx(2.5)
    assert st["egress"]["max"] == pytest.approx(140 / 60.0)
