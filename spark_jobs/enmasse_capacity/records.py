# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compact per-address rows for the driver.

``aggregate`` collects one row per address and node and one per address and
node kind; as dicts they cost about 1.5 KiB each (a hash table of ~30 keys),
and the driver holds them until the plan is written. A ``Record`` reads like
a dict (``r["x"]``, ``r.get("x")``, ``dict(r)``) but is a tuple of values
beside one field table shared by every row of its kind (``Fields``), and
the repeated strings (infra, space, node, plan, kind, type) are interned.
"""

from __future__ import absolute_import, division, print_function

import sys


class Fields(object):
    """The field names of one kind of row: name -> position."""
    __slots__ = ("names", "index")

    def __init__(self, names):
        self.names = tuple(names)
        self.index = dict((n, i) for i, n in enumerate(self.names))

    def record(self, values):
        return Record(self, tuple(values))


class Record(object):
    """One row: a dict's read interface over a values tuple."""
    __slots__ = ("_f", "_v")

    def __init__(self, fields, values):
        self._f = fields
        self._v = values

    def __getitem__(self, k):
        return self._v[self._f.index[k]]

    def get(self, k, default=None):
        i = self._f.index.get(k)
        return default if i is None else self._v[i]

    def __contains__(self, k):
        return k in self._f.index

    def keys(self):
        return self._f.names

    def items(self):
        return zip(self._f.names, self._v)

    def __iter__(self):
        return iter(self._f.names)

    def __len__(self):
        return len(self._v)

    def __eq__(self, other):
        return dict(self.items()) == (dict(other.items()) if isinstance(other, Record) else other)

    __hash__ = None

    def __repr__(self):
        return "Record(%r)" % dict(self.items())


def interned(s):
    """``s`` interned when it is a string (one object for every repeat)."""
    return sys.intern(s) if isinstance(s, str) else s


def as_dicts(rows):
    """Plain dicts of ``rows`` (Records or dicts), e.g. to write them as JSON."""
    return [dict(r.items()) for r in rows]
