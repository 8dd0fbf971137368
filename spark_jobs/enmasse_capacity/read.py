# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and validating the capacity job's input.

* the model file (``load_model``): address spaces, addresses, plans and the
  current placement, checked by the collection's own model rules;
* the metrics store (``precheck_store``, ``read_kind``, ``time_filter``): the
  Parquet layout of ``model/schema.py`` (docs/metrics-schema.md); the columns
  the job requires and the integer columns that must not be negative are
  derived from that one schema.

No Spark at import time: the Spark readers import pyspark when called.
"""

from __future__ import absolute_import, division, print_function

import os

from ansible_collections.enmasse.messaging.plugins.module_utils.model import documents, plans, validation
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import ADDRESSES, NODES, SCHEMAS

from . import rules as lib
from .rules import InputError

# Spark SQL type of each schema type (a column missing from the store is
# added as a typed null)
SPARK_TYPES = {"timestamp": "timestamp", "string": "string", "long": "bigint", "int": "int"}
INTEGRAL_TYPES = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")
# columns the job can do without (null when absent); every other column of
# the schema is required
OPTIONAL = {
    ADDRESSES: ("consumer_count", "persistent_size", "address_size", "deliveries_ingress", "deliveries_egress",
                "links"),
    NODES: ("memory_max", "disk_used", "disk_max", "connections", "links"),
}


def required_columns(kind):
    """The schema columns of ``kind`` the job cannot do without, in schema order."""
    return tuple(n for n, _t in SCHEMAS[kind] if n not in OPTIONAL[kind])


def optional_columns(kind):
    """{column: Spark type} of the schema columns of ``kind`` that may be absent."""
    return dict((n, SPARK_TYPES[t]) for n, t in SCHEMAS[kind] if n in OPTIONAL[kind])


def nonnegative_columns(kind):
    """The integer columns of ``kind`` (counters and gauges: never negative)."""
    return tuple(n for n, t in SCHEMAS[kind] if t in ("long", "int"))


ADDRESS_REQUIRED = required_columns(ADDRESSES)
ADDRESS_OPTIONAL = optional_columns(ADDRESSES)
NODE_REQUIRED = required_columns(NODES)
NODE_OPTIONAL = optional_columns(NODES)
ADDRESS_NONNEG = nonnegative_columns(ADDRESSES)
NODE_NONNEG = nonnegative_columns(NODES)
STRING_COLUMNS = tuple(sorted(set(n for k in SCHEMAS for n, t in SCHEMAS[k] if t in ("string", "timestamp"))
                              | {"date"}))


# ============================================================== input model

# ============================================================== input model

def load_model(path, catalogue_extra=None):
    """The address spaces, addresses, plans and current placement in force.

    Returns (spaces, catalogue, current_placement) with spaces normalised and
    validated by the collection's model rules (every violation at once)."""
    doc = lib.load_structured_file(path, "model")
    if not isinstance(doc, dict):
        raise InputError("model file %s: must be a mapping with address_spaces (a list)" % path)
    unknown = set(doc) - {"infra", "address_spaces", "plans", "current_placement"}
    if unknown:
        raise InputError("model file %s: unknown keys %s (known: infra, address_spaces, plans, "
                         "current_placement)" % (path, ", ".join(sorted(unknown))))
    try:
        catalogue = plans.Catalogue.from_data(doc.get("plans") or catalogue_extra)
    except plans.PlanError as e:
        raise InputError("model file %s: plans: %s" % (path, e))
    raw_spaces = doc.get("address_spaces")
    if not isinstance(raw_spaces, list) or not raw_spaces:
        raise InputError("model file %s: address_spaces must be a non-empty list" % path)
    default_infra = doc.get("infra") or "default"
    errors = []
    spaces = []
    seen = set()
    for i, raw in enumerate(raw_spaces):
        if not isinstance(raw, dict):
            errors.append("address_spaces[%d]: must be a mapping" % i)
            continue
        raw = dict(raw)
        infra = raw.pop("infra", None) or default_infra
        addresses = raw.pop("addresses", None) or []
        sp = documents.normalize_address_space(raw)
        where = "address_spaces[%d](%s)" % (i, sp.get("name"))
        errors.extend(validation.validate_address_space(sp, catalogue, field=where))
        addrs = [documents.normalize_address(a, sp.get("name")) for a in addresses]
        for a in addrs:
            if isinstance(a, dict):
                a.pop("address_space", None)
                a.pop("name", None)
        if not errors or all(not e.startswith(where) for e in errors):
            errors.extend("%s.%s" % (where, e) for e in
                          validation.validate_addresses(sp, addrs, catalogue, check_quota=False))
        if sp.get("name") in seen:
            errors.append("%s.name: %r is listed twice" % (where, sp.get("name")))
        seen.add(sp.get("name"))
        sp["infra"] = infra
        sp["addresses"] = addrs
        spaces.append(sp)
    if errors:
        raise InputError("model file %s: %d problem(s): %s" % (path, len(errors), "; ".join(errors)))
    current = {}
    cp = doc.get("current_placement") or {}
    if not isinstance(cp, dict):
        raise InputError("model file %s: current_placement must be a mapping" % path)
    names = dict((s["name"], set(a["address"] for a in s["addresses"])) for s in spaces)
    for k, v in cp.items():
        if isinstance(v, dict):
            for addr, brokers in v.items():
                current[(k, addr)] = _broker_list(path, "%s/%s" % (k, addr), brokers)
        else:
            if "/" not in k:
                raise InputError("model file %s: current_placement key %r must be <space>/<address> or a "
                                 "space name mapping addresses to brokers" % (path, k))
            space, addr = k.split("/", 1)
            current[(space, addr)] = _broker_list(path, k, v)
    for (space, addr) in current:
        if space not in names:
            raise InputError("model file %s: current_placement names address space %r which is not in "
                             "address_spaces" % (path, space))
    return spaces, catalogue, current


def _broker_list(path, key, v):
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(b, str) and b for b in v):
        raise InputError("model file %s: current_placement[%s]: %r must be a list of broker ids" % (path, key, v))
    return list(v)


def _is_local_path(p):
    return "://" not in p or p.startswith("file://")


def _local(p):
    return p[len("file://"):] if p.startswith("file://") else p


def _has_data_files(path):
    for d, _unused, fs in os.walk(path):
        for f in fs:
            if not f.startswith((".", "_")):
                return True
    return False


def precheck_store(root):
    """Fail fast, before Spark starts, when a local store is missing or empty."""
    if not _is_local_path(root):
        return
    lp = _local(root)
    if not os.path.isdir(lp):
        raise InputError("metrics store %s does not exist (expected a directory with addresses/ and nodes/, "
                         "see docs/metrics-schema.md)" % root)
    if not _has_data_files(os.path.join(lp, "addresses")):
        raise InputError("metrics store %s is empty: no Parquet files under %s/addresses (expected "
                         "addresses/date=YYYY-MM-DD/address_space=<name>/*.parquet, see docs/metrics-schema.md)"
                         % (root, root.rstrip("/")))


def read_kind(spark, root, kind, required, optional, must_exist=True):
    """Read <root>/<kind> (Parquet, partitioned). Clear InputError when the
    store is missing, empty or lacks columns; optional columns missing are
    added as nulls (and reported)."""
    from pyspark.sql import functions as F
    from pyspark.errors import AnalysisException
    path = root.rstrip("/") + "/" + kind
    if _is_local_path(path):
        if not _has_data_files(_local(path)):
            if not must_exist:
                return None, []
            raise InputError("metrics store %s is empty: no Parquet files under %s (expected %s/date=YYYY-MM-DD/"
                             "address_space=<name>/*.parquet, see docs/metrics-schema.md)" % (root, path, path))
    try:
        df = spark.read.option("basePath", path).parquet(path)
    except AnalysisException as e:
        if not must_exist:
            return None, []
        raise InputError("metrics store %s: cannot read %s samples at %s: %s"
                         % (root, kind, path, str(e).splitlines()[0]))
    cols = dict((f.name, f.dataType.simpleString()) for f in df.schema.fields)
    label = {"addresses": "address", "nodes": "node"}.get(kind, kind)
    missing = [c for c in required if c not in cols]
    if missing:
        raise InputError("metrics store %s: %s samples lack required column(s) %s (have: %s); see "
                         "docs/metrics-schema.md" % (root, label, ", ".join(missing), ", ".join(sorted(cols))))
    if not cols["ts"].startswith("timestamp"):
        raise InputError("metrics store %s: %s column ts has type %s, expected a timestamp (UTC)"
                         % (root, label, cols["ts"]))
    bad_types = []
    for c in list(required) + list(optional):
        if c in cols and c not in STRING_COLUMNS and cols[c] not in INTEGRAL_TYPES:
            bad_types.append("%s (%s)" % (c, cols[c]))
    if bad_types:
        raise InputError("metrics store %s: %s columns must be integers: %s" % (root, label, ", ".join(bad_types)))
    absent = []
    for c, t in optional.items():
        if c not in cols:
            df = df.withColumn(c, F.lit(None).cast(t))
            absent.append(c)
    return df, absent


def time_filter(df, start, end):
    """Keep [start, end); the date= partition column prunes whole directories."""
    from pyspark.sql import functions as F
    by_date = "date" in df.columns
    if start is not None:
        df = df.where(F.col("ts") >= F.lit(start))
        if by_date:
            df = df.where(F.col("date") >= start.date().isoformat())
    if end is not None:
        df = df.where(F.col("ts") < F.lit(end))
        if by_date:
            df = df.where(F.col("date") <= end.date().isoformat())
    return df
