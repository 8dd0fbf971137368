# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ownership ledger of a brokered address space.

Artemis has no free-form metadata on addresses, so what the modules created is
recorded in a JSON file next to the broker instance::

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
import tempfile

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

    def save(self):
        """Write the ledger atomically: a temporary file in the same directory,
        flushed to disk, then renamed over the old one."""
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        fd, tmp = tempfile.mkstemp(prefix=".enmasse-ledger-", dir=directory)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.as_dict(), f, sort_keys=True, separators=(",", ":"))
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            if os.path.exists(self.path):
                st = os.stat(self.path)
                os.chmod(tmp, st.st_mode & 0o7777)
            else:
                os.chmod(tmp, 0o640)
            os.rename(tmp, self.path)
        except Exception:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self.exists = True

    def remove(self):
        """Clear the ledger (delete the file)."""
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.space = None
        self.addresses = {}
        self.exists = False
