"""The fixed log-bucket histogram of percentile_method: histogram
(spark_jobs/enmasse_capacity/histogram.py): buckets, merge, percentiles and
their bound against the exact definition (rules.percentile)."""
import math
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "spark_jobs"))

from enmasse_capacity import histogram as hist  # noqa: E402
from enmasse_capacity import rules as lib  # noqa: E402

pytestmark = pytest.mark.unit


def _bound(exact):
    return hist.REL_ERROR * exact + hist.MIN_VALUE


def test_bucket_edges_and_value_within_one_percent():
    # bucket k holds (GAMMA^(k-1), GAMMA^k]
    for k in (-500, -3, 0, 1, 7, 700):
        hi = hist.GAMMA ** k
        assert hist.bucket(hi * (1 - 1e-12)) == k
        assert hist.bucket(hi * (1 + 1e-9)) == k + 1
        for v in (hi / hist.GAMMA * (1 + 1e-9), hi):
            assert abs(hist.value(hist.bucket(v)) - v) <= hist.REL_ERROR * v * (1 + 1e-9)
    assert hist.bucket(1.0) == 0 and hist.value(0) == pytest.approx(0.99)      # 2 / (GAMMA + 1) = 1 - 0.01
    assert hist.bucket(0) == hist.bucket(1e-9) == hist.ZERO_BUCKET and hist.value(hist.ZERO_BUCKET) == 0.0
    assert hist.ZERO_BUCKET < hist.bucket(1.1e-9)
    with pytest.raises(ValueError):
        hist.bucket(-1.0)


def test_histogram_merge_adds_counts():
    a = hist.of([1.0, 1.0, 5.0, None])
    b = hist.of([5.0, 0.0])
    assert sum(a.values()) == 3                  # None skipped
    m = hist.merge(a, b)
    assert m == hist.of([1.0, 1.0, 5.0, 5.0, 0.0])
    assert m[hist.bucket(5.0)] == 2 and m[hist.ZERO_BUCKET] == 1
    assert hist.merge(a, {}) == a and hist.merge() == {}
    # inputs untouched, zero counts dropped
    assert a == hist.of([1.0, 1.0, 5.0])
    assert hist.merge({3: 0}, {4: 1}) == {4: 1}
    with pytest.raises(ValueError):
        hist.merge({3: -1})


def test_percentile_definition_on_hand_cases():
    assert hist.percentile({}, 0.95) is None
    # one value: its bucket's value
    assert hist.percentile_of([100.0], 0.99) == hist.value(hist.bucket(100.0))
    # 0, 10, 20, ..., 100: p95 rank h = 10 * 0.95 = 9.5 -> halfway between the
    # values of the buckets of 90 and 100
    vals = [10.0 * i for i in range(11)]
    want = hist.value(hist.bucket(90.0)) + 0.5 * (hist.value(hist.bucket(100.0)) - hist.value(hist.bucket(90.0)))
    assert hist.percentile_of(vals, 0.95) == pytest.approx(want, rel=1e-12)
    assert abs(hist.percentile_of(vals, 0.95) - 95.0) <= _bound(95.0)
    assert hist.percentile_of(vals, 0) == 0.0
    with pytest.raises(ValueError):
        hist.percentile({1: 1}, 1.5)


@pytest.mark.parametrize("seed", range(5))
def test_percentile_within_the_bound_of_exact(seed):
    rnd = random.Random(seed)
    # window rates: idle (0), small, bursty over six decades
    vals = [rnd.lognormvariate(rnd.uniform(-3, 8), rnd.uniform(0.1, 3)) for _unused in range(rnd.randint(1, 3000))]
    vals += [0.0] * rnd.randint(0, 50)
    for p in (0.0, 0.5, 0.95, 0.99, 1.0):
        exact = lib.percentile(vals, p)
        got = hist.percentile_of(vals, p)
        assert abs(got - exact) <= _bound(exact), (p, got, exact)


def test_merged_days_give_the_percentile_of_all_days():
    """The property incremental planning needs: per-day histograms, merged,
    are the histogram of all the days."""
    rnd = random.Random(1)
    days = [[rnd.expovariate(1 / 200.0) for _unused in range(288)] for _d in range(3)]
    merged = hist.merge(*[hist.of(d) for d in days])
    everything = [v for d in days for v in d]
    assert merged == hist.of(everything)
    for p in (0.95, 0.99):
        assert hist.percentile(merged, p) == hist.percentile_of(everything, p)
        exact = lib.percentile(everything, p)
        assert abs(hist.percentile(merged, p) - exact) <= _bound(exact)


def test_summarize_and_capacity_model_accept_histogram():
    vals = [float(i) for i in range(1, 101)]
    s = lib.summarize(vals, "histogram")
    assert s["avg"] == 50.5 and s["max"] == 100.0 and s["count"] == 100       # exact, not bucketed
    assert s["p95"] == hist.percentile_of(vals, 0.95)
    assert abs(s["p95"] - lib.percentile(vals, 0.95)) <= _bound(lib.percentile(vals, 0.95))
    assert lib.load_capacity_model({"percentile_method": "histogram"})["percentile_method"] == "histogram"
    with pytest.raises(lib.InputError, match="percentile_method: 'tdigest' must be one of exact, histogram, approx"):
        lib.load_capacity_model({"percentile_method": "tdigest"})


def test_bucket_count_is_small():
    # rates from 1e-6/s to 1e7/s: about 1,500 buckets at most per series
    assert hist.bucket(1e7) - hist.bucket(1e-6) == pytest.approx(math.log(1e13) / hist.LOG_GAMMA, abs=1)
    assert hist.bucket(1e7) - hist.bucket(1e-6) < 1600
