# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ownership ledger of an address space on hosts (brokered: next to the
broker instance; standard: on the control host, ``standard/infra.py`` adds
where each stored address lives).

Neither Artemis nor the router has free-form metadata on addresses, so what
the modules created is recorded in a JSON file::

    {"version": 1,
     "address_space": {"name": ..., "type": ..., "plan": ..., "authentication_service": ...},
     "addresses": {"<address>": <the plain address as applied>}}

Prune and ``state: absent`` only ever touch addresses in the ledger. The file
is written atomically (temporary file + rename), and only after the broker
accepted the change. Pure Python: no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

from ansible_collections.enmasse.messaging.plugins.module_utils import files as _files
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import StoreError

VERSION = 1


class LedgerError(StoreError):
    """The ledger cannot be read or written."""


class Ledger(object):
    """The ledger file at ``path``; a missing file is an empty ledger."""

    def __init__(self, path, data=None):
        self.path = path
        data = data or {}
        self.space = copy.deepcopy(data.get("address_space")) or None
        self.addresses = dict(data.get("addresses") or {})
        self.exists = data != {}

    @classmethod
    def load(cls, path):
        if not path:
            raise LedgerError("no ledger path: set ledger_path or add it to the connection file")
        try:
            with open(path) as f:
                data = json.load(f)
        except (IOError, OSError) as e:
            if getattr(e, "errno", None) == 2:  # ENOENT
                return cls(path)
            raise LedgerError("cannot read the ownership ledger %s: %s" % (path, e))
        except ValueError as e:
            raise LedgerError("the ownership ledger %s is not valid JSON (%s); fix or remove it" % (path, e))
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise LedgerError("the ownership ledger %s has an unknown format (expected version %d)"
                              % (path, VERSION))
        return cls(path, data)

    def as_dict(self):
        return {"version": VERSION, "address_space": self.space, "addresses": self.addresses}

    def owned(self, name):
        return name in self.addresses

    def writable_error(self):
        """Why the ledger could not be written, or None: checked before the
        broker is changed, so that a change is never made that the ledger
        cannot record (``files.writable_error``)."""
        return _files.writable_error(self.path, "ownership ledger")

    def check_writable(self):
        """Raise LedgerError when the ledger could not be written."""
        err = self.writable_error()
        if err:
            raise LedgerError(err)

    def save(self):
        """Write the ledger atomically: a temporary file in the same directory,
        flushed to disk, then renamed over the old one. An OS error is a
        LedgerError naming the path."""
        try:
            self._save()
        except (IOError, OSError) as e:
            raise LedgerError("cannot write the ownership ledger %s: %s" % (self.path, e))
        self.exists = True

    def _save(self):
        _files.write_json(self.path, self.as_dict(), 0o640, ".enmasse-ledger-", separators=(",", ":"))

    def remove(self):
        """Clear the ledger (delete the file)."""
        if os.path.exists(self.path):
            try:
                os.unlink(self.path)
            except (IOError, OSError) as e:
                raise LedgerError("cannot remove the ownership ledger %s: %s" % (self.path, e))
        self.space = None
        self.addresses = {}
        self.exists = False
