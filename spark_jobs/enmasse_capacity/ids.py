# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The 64-bit ids of the capacity job's Spark stages and their names.

The heavy stages group on xxhash64 ids (with a salt), never on strings:
``_h`` the id of some columns, ``_meta`` everything else about a sample
packed in one long (with the plan's id, ``_plan_key``); ``_resolve`` names
the ids at the end; ``_Collision`` (two names, one id) makes ``aggregate``
run again with another salt. ``_small_df``: a tiny DataFrame through Arrow.
"""

from __future__ import absolute_import, division, print_function

import datetime as _dt


def _small_df(spark, rows, fields):
    """A DataFrame from a Python list through Arrow (no Python worker
    processes, unlike a plain createDataFrame): ``fields`` [(name, pyarrow type)]."""
    import pyarrow as pa
    cols = list(zip(*rows)) if rows else [()] * len(fields)
    return spark.createDataFrame(pa.table([pa.array(list(c), type=t) for c, (_n, t) in zip(cols, fields)],
                                          names=[n for n, _t in fields]))


class _Collision(Exception):
    """Two different names gave the same 64-bit id: run again with another salt."""


def _h(F, salt, *cols):
    return F.xxhash64(F.lit(salt), *cols)


META_BITS = 5


def _plan_key(F, salt, col="plan"):
    """The plan's id inside ``meta``: its hash without the low META_BITS bits
    (0 when there is no plan)."""
    return F.when(F.col(col).isNotNull(), F.shiftright(_h(F, salt, col), META_BITS)).otherwise(F.lit(0).cast("long"))


def _meta(F, salt, type_code, kind, bad):
    """Everything per sample that is not a number, packed in one long so the
    shuffled rows stay narrow: bit 0 row invalid, bit 1 router, bits 2-4
    address type code (7: unknown), bits 5-63 the plan key."""
    return (F.shiftleft(_plan_key(F, salt), META_BITS)
            .bitwiseOR(F.shiftleft(F.coalesce(type_code, F.lit(7)).cast("long"), 2))
            .bitwiseOR(F.shiftleft(kind.cast("long"), 1))
            .bitwiseOR(bad.cast("long")))


def _resolve(spark, addresses, salt, cols, candidates, needed, idf=None, times=None):
    """Names of the 64-bit ids ``needed`` (xxhash64 of ``cols`` with ``salt``).

    The candidates (from the model and the node samples) are hashed on a tiny
    DataFrame; ids they do not explain are looked up in the store with a
    filtered scan that decodes strings only for the matching rows. ``times``
    (id -> the time of one sample carrying it) narrows that scan first to the
    samples at those instants, in their date partitions; a full scan is left
    for anything still unnamed. The big stages therefore never group or sort
    on strings. Raises _Collision when two names share an id."""
    from pyspark.sql import functions as F
    idf = idf or (lambda: _h(F, salt, *cols))
    names = {}
    cands = sorted(set(tuple(c) for c in candidates or ()))
    if cands:
        import pyarrow as pa
        cdf = _small_df(spark, cands, [(c, pa.string()) for c in cols])
        for r in cdf.select(idf().alias("h"), *cols).collect():
            _add_name(names, r["h"], tuple(r[c] for c in cols))
    missing = [h for h in needed if h not in names]
    hint = sorted(set(times[h] for h in missing if h in (times or {})))
    scans = []
    if hint:
        narrow = addresses.where(F.col("ts").cast("double").isin(hint))
        if "date" in addresses.columns:
            narrow = narrow.where(F.col("date").isin(sorted(set(
                _dt.datetime.fromtimestamp(t, _dt.timezone.utc).date().isoformat() for t in hint))))
        scans.append(narrow)
    scans.append(addresses)
    for df in scans:
        if not missing:
            break
        hx = idf()
        for r in df.where(hx.isin(missing)).select(hx.alias("h"), *cols).distinct().collect():
            _add_name(names, r["h"], tuple(r[c] for c in cols))
        missing = [h for h in missing if h not in names]
    return names


def _add_name(names, h, key):
    """Record id -> name; two names for one id is a collision."""
    if names.setdefault(h, key) != key:
        raise _Collision()
