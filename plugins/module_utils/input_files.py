# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module input read from files on the managed host (the bulk ``src``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError


def read_addresses_file(path):
    """The address list of the JSON file at ``path`` (the action plugin
    writes it from the task's ``src``): a list, or a mapping with an
    ``addresses`` list."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError) as e:
        raise ConfigError("src: cannot read %s: %s" % (path, e))
    except ValueError as e:
        raise ConfigError("src: %s is not JSON (%s); the action plugin converts YAML on the controller" % (path, e))
    return address_list(data, path)


def address_list(data, path):
    """The address list in ``data`` read from the file at ``path``: the data
    itself, its ``addresses`` list, or an EnMasse AddressList (a one-item
    list: the module checks the AddressList and expands its items). The one
    rule for ``src`` files, on the controller (action plugin) and on the host
    (module)."""
    if isinstance(data, dict) and data.get("kind") == "AddressList":
        return [data]
    if isinstance(data, dict) and "addresses" in data:
        data = data["addresses"]
    if not isinstance(data, list):
        raise ConfigError("src: %s must hold a list of addresses, a mapping with an addresses list or an AddressList, not %s"
                          % (path, type(data).__name__))
    return data
