# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixed log-bucket histograms: the percentiles of ``percentile_method:
histogram`` (docs/capacity-planning.md, docs/day2-design.md section 6).

A value v > ``MIN_VALUE`` falls in bucket k = ceil(log(v) / log(GAMMA)),
the interval (GAMMA^(k-1), GAMMA^k]; v <= ``MIN_VALUE`` (0 and the
negligible) falls in bucket ``ZERO_BUCKET``. A bucket stands for the value
2 GAMMA^k / (GAMMA + 1), within ``REL_ERROR`` (1 %) of every value of the
bucket. The buckets are the same for every series and every run, so
histograms merge by adding their counts (one day's histogram plus the
next day's is the histogram of both days): what exact percentiles (sorted
value lists) and percentile_approx cannot do.

A percentile is the job's exact definition (``rules.percentile``: rank
h = (n - 1) p, linear interpolation between ranks floor h and ceil h) with
each ranked value replaced by its bucket's value. Every replaced value is
within REL_ERROR of the true one and all values are >= 0, so the
interpolation is too: |histogram - exact| <= REL_ERROR x exact + MIN_VALUE.

Pure Python (``bucket``, ``value``, ``of``, ``merge``, ``percentile``) and
the same rule as Spark column expressions (``spark_bucket``,
``spark_value``) for the aggregation. Values must be >= 0 (rates and
gauges are: the job rejects negative samples).
"""

from __future__ import absolute_import, division, print_function

import math

REL_ERROR = 0.01
GAMMA = (1 + REL_ERROR) / (1 - REL_ERROR)
LOG_GAMMA = math.log(GAMMA)
MIN_VALUE = 1e-9
ZERO_BUCKET = -(1 << 20)      # below every real bucket (ceil(log(1e-9) / log(GAMMA)) = -1036)


def bucket(v):
    """The bucket of ``v`` (>= 0)."""
    if v < 0:
        raise ValueError("histogram values must be >= 0, got %r" % (v,))
    if v <= MIN_VALUE:
        return ZERO_BUCKET
    return int(math.ceil(math.log(v) / LOG_GAMMA))


def value(k):
    """The value bucket ``k`` stands for."""
    if k == ZERO_BUCKET:
        return 0.0
    return 2.0 * GAMMA ** k / (GAMMA + 1.0)


def of(values):
    """The histogram {bucket: count} of ``values`` (None skipped)."""
    h = {}
    for v in values:
        if v is not None:
            k = bucket(v)
            h[k] = h.get(k, 0) + 1
    return h


def merge(*hists):
    """The histogram of the union: counts added bucket by bucket."""
    out = {}
    for h in hists:
        for k, n in h.items():
            if n < 0:
                raise ValueError("histogram count must be >= 0, got %r" % (n,))
            if n:
                out[k] = out.get(k, 0) + n
    return out


def _ranked(h, ranks):
    """{rank: bucket value} of the 0-based ``ranks`` in the sorted values."""
    want = sorted(set(ranks))
    out = {}
    seen = 0
    i = 0
    for k in sorted(h):
        seen += h[k]
        while i < len(want) and want[i] < seen:
            out[want[i]] = value(k)
            i += 1
        if i == len(want):
            break
    return out


def percentile(h, p):
    """The p-percentile (0 <= p <= 1) of histogram ``h``; None when empty."""
    if not 0 <= p <= 1:
        raise ValueError("percentile p must be in [0, 1]")
    n = sum(h.values())
    if n == 0:
        return None
    r = (n - 1) * p
    lo = int(math.floor(r))
    hi = int(math.ceil(r))
    x = _ranked(h, (lo, hi))
    return x[lo] + (r - lo) * (x[hi] - x[lo])


def percentile_of(values, p):
    """``percentile`` of the histogram of ``values``."""
    return percentile(of(values), p)


# ------------------------------------------------------------------ Spark

def spark_bucket(col):
    """Spark Column: the bucket of ``col`` (null stays null)."""
    from pyspark.sql import functions as F
    return (F.when(col.isNull(), F.lit(None).cast("int"))
            .when(col <= F.lit(MIN_VALUE), F.lit(ZERO_BUCKET))
            .otherwise(F.ceil(F.log(col) / F.lit(LOG_GAMMA)).cast("int")))


def spark_value(k):
    """Spark Column: the value of bucket column ``k``."""
    from pyspark.sql import functions as F
    return (F.when(k == F.lit(ZERO_BUCKET), F.lit(0.0))
            .otherwise(F.lit(2.0 / (GAMMA + 1.0)) * F.pow(F.lit(GAMMA), k.cast("double"))))
