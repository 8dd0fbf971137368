# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Parquet metrics store: pyarrow, one new file per sample batch and
partition (``<kind>/date=<day>/address_space=<space>/``), written under a
hidden temporary name and renamed, so readers never see half a file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import socket
import uuid

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import MetricsError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import ADDRESSES, NODES, SCHEMAS

try:
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    HAS_PYARROW = True
    PYARROW_IMPORT_ERROR = None
except ImportError as _e:  # pragma: no cover - depends on the host
    HAS_PYARROW = False
    PYARROW_IMPORT_ERROR = _e


def arrow_schema(kind):
    """The pyarrow schema of ``kind``, as stored in every file (the
    partition column ``address_space`` is in the file and in its path)."""
    if not HAS_PYARROW:
        raise MetricsError("pyarrow is required to write metrics: %s" % PYARROW_IMPORT_ERROR)
    types = {"timestamp": pa.timestamp("us", tz="UTC"), "string": pa.string(),
             "long": pa.int64(), "int": pa.int32()}
    return pa.schema([pa.field(name, types[t], nullable=True) for name, t in SCHEMAS[kind]])


def open_store(store):
    """(filesystem, root path) for a local path or any URI pyarrow.fs knows
    (file://, s3://, gs://, hdfs:// when the filesystem libraries are there)."""
    if not HAS_PYARROW:
        raise MetricsError("pyarrow is required to write metrics: %s" % PYARROW_IMPORT_ERROR)
    if "://" not in store:
        store = os.path.abspath(os.path.expanduser(store))
    try:
        fs, path = pafs.FileSystem.from_uri(store)
    except Exception as e:
        raise MetricsError("cannot open the metrics store %s: %s" % (store, e))
    return fs, path.rstrip("/")


def partition_dir(root, kind, ts, space):
    return "%s/%s/date=%s/address_space=%s" % (root, kind, ts.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d"),
                                               space)


def part_name(ts):
    return "part-%s-%s-%s.parquet" % (ts.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ"),
                                      socket.gethostname().split(".")[0] or "host", uuid.uuid4().hex[:12])


def group_rows(rows):
    """{partition key (date, address_space): [rows]} in a stable order."""
    groups = {}
    for r in rows:
        key = (r["ts"].astimezone(datetime.timezone.utc).strftime("%Y-%m-%d"), r["address_space"])
        groups.setdefault(key, []).append(r)
    return groups


def write_rows(store, kind, rows, fs=None):
    """Append ``rows`` (dicts in the ``kind`` schema) to the dataset: one new
    file per partition, written under a hidden name (``.part-...``, which
    Spark and pyarrow skip) and renamed into place. On object stores a put is
    already atomic, so the file is written directly. Returns the paths."""
    if not rows:
        return []
    if fs is None:
        fs, root = open_store(store)
    else:
        root = store.rstrip("/")
    schema = arrow_schema(kind)
    atomic_put = fs.type_name in ("s3", "gcs")
    paths = []
    for unused, part in sorted(group_rows(rows).items()):
        directory = partition_dir(root, kind, part[0]["ts"], part[0]["address_space"])
        fs.create_dir(directory, recursive=True)
        final = "%s/%s" % (directory, part_name(part[0]["ts"]))
        table = pa.Table.from_pylist(part, schema=schema)
        if atomic_put:
            pq.write_table(table, final, filesystem=fs)
        else:
            tmp = "%s/.%s.tmp" % (directory, final.rsplit("/", 1)[1])
            try:
                pq.write_table(table, tmp, filesystem=fs)
                fs.move(tmp, final)
            except Exception:
                try:
                    fs.delete_file(tmp)
                except Exception:
                    pass
                raise
        paths.append(final)
    return paths


def write_samples(store, address_rows, node_rows):
    """Append one collection's rows to ``store``; the files written."""
    fs, root = open_store(store)
    try:
        return (write_rows(root, ADDRESSES, address_rows, fs=fs)
                + write_rows(root, NODES, node_rows, fs=fs))
    except (OSError, pa.ArrowException) as e:
        raise MetricsError("cannot write to the metrics store %s: %s" % (store, e))
