# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan catalogue of a host, stored where every later call finds it.

One JSON file per host (default ``/etc/enmasse-messaging/catalogue.json``,
beside the connection files of the address spaces the host runs)::

    {"version": 1,
     "address_space_plans": {"<name>": {"plan": <plain plan>, "owner": "example" | "enmasse.messaging"}},
     "address_plans":       {"<name>": {"plan": <plain plan>, "owner": ...}},
     "address_spaces":      {"<name>": {"type": ..., "plan": ..., "ledger_path": ...}}}

A host without the file has the default catalogue (EnMasse's example plans
and the collection's additions, owner ``example``); the first change writes
the file with them. ``owner: enmasse.messaging`` marks what the plan modules
wrote: only those are pruned. ``address_spaces`` registers the spaces that
use the catalogue (``address_space`` adds and removes itself), so that a
change to a plan in use is seen, with the spaces' ledgers telling which
addresses use which address plan.

Written atomically (temporary file, fsync, rename) under an exclusive lock
(``<path>.lock``), so concurrent tasks on one host never lose a change.
Pure Python, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import copy
import errno
import json
import os

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None

from ansible_collections.enmasse.messaging.plugins.module_utils import files as _files
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import StoreError
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as _plans

DEFAULT_CATALOGUE_PATH = "/etc/enmasse-messaging/catalogue.json"
VERSION = 1
OWNER_EXAMPLE = "example"
OWNER_COLLECTION = "enmasse.messaging"
KINDS = ("address_space_plans", "address_plans")


class CatalogueStoreError(StoreError):
    """The catalogue file cannot be read or written."""


def catalogue_path(params, conn=None):
    """The catalogue file: the option, else the connection file's
    ``catalogue_path``, else the default."""
    return (params.get("catalogue_path") or (conn or {}).get("catalogue_path")
            or DEFAULT_CATALOGUE_PATH)


def _default_records():
    cat = _plans.Catalogue.default()
    out = {}
    for kind, names, get in (("address_space_plans", cat.address_space_plan_names(), cat.address_space_plan),
                             ("address_plans", cat.address_plan_names(), cat.address_plan)):
        out[kind] = dict((n, {"plan": get(n), "owner": OWNER_EXAMPLE}) for n in names)
    return out


class CatalogueStore(object):
    """The catalogue file at ``path``; a missing file is the default catalogue."""

    def __init__(self, path, data=None):
        self.path = path
        self.exists = data is not None
        data = data if data is not None else _default_records()
        self.records = dict((kind, copy.deepcopy(data.get(kind) or {})) for kind in KINDS)
        self.address_spaces = copy.deepcopy(data.get("address_spaces") or {})

    @classmethod
    def load(cls, path):
        try:
            with open(path) as f:
                data = json.load(f)
        except (IOError, OSError) as e:
            if e.errno == errno.ENOENT:
                return cls(path)
            raise CatalogueStoreError("cannot read the plan catalogue %s: %s" % (path, e.strerror or e))
        except ValueError as e:
            raise CatalogueStoreError("the plan catalogue %s is not valid JSON (%s); fix or remove it" % (path, e))
        if not isinstance(data, dict) or data.get("version") != VERSION or \
                not all(isinstance(data.get(k, {}), dict) for k in KINDS + ("address_spaces",)):
            raise CatalogueStoreError("the plan catalogue %s has an unknown format (expected version %d)"
                                      % (path, VERSION))
        return cls(path, data)

    # ------------------------------------------------------------- reading
    def catalogue(self):
        """The plans as a ``model.plans.Catalogue`` (infra configs are EnMasse's examples)."""
        return _plans.Catalogue.with_default_infra(
            [r["plan"] for r in self.records["address_space_plans"].values()],
            [r["plan"] for r in self.records["address_plans"].values()])

    def owner(self, kind, name):
        rec = self.records[kind].get(name)
        return rec.get("owner") if rec else None

    def plan(self, kind, name):
        rec = self.records[kind].get(name)
        return copy.deepcopy(rec["plan"]) if rec else None

    def names(self, kind):
        return sorted(self.records[kind])

    # ------------------------------------------------------------- changing
    def put(self, kind, plan):
        self.records[kind][plan["name"]] = {"plan": copy.deepcopy(plan), "owner": OWNER_COLLECTION}

    def remove(self, kind, name):
        self.records[kind].pop(name, None)

    def register_space(self, name, space_type, plan, ledger_path):
        """Record that address space ``name`` uses the catalogue; True if that changed it."""
        rec = {"type": space_type, "plan": plan, "ledger_path": ledger_path}
        if self.address_spaces.get(name) == rec:
            return False
        self.address_spaces[name] = rec
        return True

    def unregister_space(self, name):
        return self.address_spaces.pop(name, None) is not None

    def as_dict(self):
        out = {"version": VERSION, "address_spaces": self.address_spaces}
        out.update(self.records)
        return out

    def check_writable(self):
        """Fail before anything changes when the file cannot be written."""
        err = _files.writable_error(self.path, "plan catalogue")
        if err:
            raise CatalogueStoreError(err)

    def save(self):
        """Write atomically (``files.write_json``), mode 0644: plans are not
        secrets, and every module on the host reads them."""
        try:
            _files.write_json(self.path, self.as_dict(), 0o644, ".enmasse-catalogue-", indent=1)
        except (IOError, OSError) as e:
            raise CatalogueStoreError("cannot write the plan catalogue %s: %s" % (self.path, e.strerror or e))
        self.exists = True


@contextlib.contextmanager
def locked(path):
    """An exclusive lock for a read-modify-write of the catalogue at ``path``
    (no-op where the directory does not exist yet and cannot be made)."""
    directory = os.path.dirname(os.path.abspath(path))
    handle = None
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        handle = open(path + ".lock", "a")
    except (IOError, OSError):
        handle = None
    try:
        if handle is not None and fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        if handle is not None:
            handle.close()
