# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection resolution: where a module finds an address space's management
endpoint and credentials.

Values come from the connection file the broker role writes
(``/etc/enmasse-messaging/spaces/<address_space>.json``); explicit options
override them. No Ansible imports: the scheduled metrics collector uses it
outside Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.enmasse.messaging.plugins.module_utils.args import CONNECTION_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import url_password

DEFAULT_SPACES_DIR = "/etc/enmasse-messaging/spaces"
DEFAULT_TIMEOUT = 60

# the options the modules need to talk to a brokered space
REQUIRED_CONNECTION = ("management_url", "management_user", "management_password",
                       "broker_name", "ledger_path")

# keys of the connection file that are not connection options
FILE_KEYS = ("address_space", "type", "plan", "endpoints", "messaging_user", "management_origin")


def secrets_of(conn):
    """The secrets of a resolved connection (to be masked in any output)."""
    return [v for v in (conn.get("management_password"), url_password(conn.get("management_url")))
            if v not in (None, "")]


def connection_file_path(params, space_name):
    return params.get("connection_file") or os.path.join(DEFAULT_SPACES_DIR, "%s.json" % space_name)


def read_connection_file(path):
    """The connection file as a dict, or None when it does not exist."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError) as e:
        if getattr(e, "errno", None) == 2:
            return None
        raise ConfigError("cannot read the connection file %s: %s" % (path, e))
    except ValueError as e:
        raise ConfigError("the connection file %s is not valid JSON: %s" % (path, e))
    if not isinstance(data, dict):
        raise ConfigError("the connection file %s must hold a JSON object" % path)
    return data


def resolve_connection(params, space_name, required=REQUIRED_CONNECTION):
    """Connection settings for ``space_name``: the connection file's values,
    overridden by the explicit options in ``params``.

    Returns a dict with every connection option, the file's other keys
    (``type``, ``plan``, ``endpoints``, ...), ``connection_file`` (the path
    looked at) and ``file_found``. Raises ``ConfigError`` naming every missing
    option and the file looked at.
    """
    path = connection_file_path(params, space_name)
    data = read_connection_file(path)
    if data is None and params.get("connection_file"):
        raise ConfigError("connection_file: %s does not exist" % path)
    data = data or {}
    if data.get("address_space") and data["address_space"] != space_name:
        raise ConfigError("the connection file %s belongs to address space %r, not %r"
                          % (path, data["address_space"], space_name))
    conn = dict((k, data.get(k)) for k in FILE_KEYS)
    for key in CONNECTION_ARGS:
        if key == "connection_file":
            continue
        value = params.get(key)
        conn[key] = value if value is not None else data.get(key)
    conn["timeout"] = conn.get("timeout") or DEFAULT_TIMEOUT
    conn["connection_file"] = path
    conn["file_found"] = bool(data)
    missing = [k for k in required if conn.get(k) in (None, "")]
    if missing:
        where = "%s (%s)" % (path, "found, but without it" if data else "not found")
        raise ConfigError(["missing %s: set the %s option or add %s to the connection file %s"
                           % (k, k, k, where) for k in missing])
    return conn
