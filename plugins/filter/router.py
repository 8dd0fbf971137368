# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the router role.

* ``router_secret_files``: where the router role writes the broker passwords
  of the standard spaces' connectors, ``{broker: <dir>/<broker>-<fingerprint>.password}``.

The documentation of each filter is in the sidecar ``<filter>.yml`` beside
this file (``ansible-doc -t filter enmasse.messaging.<filter>``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt

# a slow, salted fingerprint: the file name is visible to whoever can QUERY
# the router, the password is not (nor cheaply guessed from it)
FINGERPRINT_ITERATIONS = 200000
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def secret_fingerprint(name, password):
    """16 hex digits of PBKDF2-HMAC-SHA256(password, salt from ``name``)."""
    salt = to_bytes("enmasse.messaging:router-secret:%s" % name)
    return hashlib.pbkdf2_hmac("sha256", to_bytes(password), salt, FINGERPRINT_ITERATIONS, 8).hex()


def router_secret_files(credentials, directory):
    """``{name: <directory>/<name>-<fingerprint>.password}`` for a list of
    ``{name, password}``: a changed password gives a new path."""
    if not isinstance(credentials, (list, tuple)):
        raise AnsibleFilterError("router_secret_files: router_broker_credentials: %s must be a list of "
                                 "{name, password}" % type(credentials).__name__)
    if not isinstance(directory, str) or not directory.startswith("/"):
        raise AnsibleFilterError("router_secret_files: directory: %s must be an absolute path" % fmt(directory))
    errors, out = [], {}
    for i, c in enumerate(credentials):
        where = "router_broker_credentials[%d]" % i
        if not isinstance(c, dict):
            errors.append("%s: must be a mapping {name, password}" % where)
            continue
        name, password = c.get("name"), c.get("password")
        if not isinstance(name, str) or not NAME.match(name):
            errors.append("%s.name: %s must be letters, digits, '.', '_', '-'" % (where, fmt(name)))
            continue
        if not isinstance(password, str) or not password:
            errors.append("%s(%s).password: must be a non-empty string" % (where, name))
            continue
        if name in out:
            errors.append("%s.name: %s is given twice" % (where, fmt(name)))
            continue
        out[name] = "%s/%s-%s.password" % (directory.rstrip("/"), name, secret_fingerprint(name, password))
    if errors:
        raise AnsibleFilterError("router_secret_files: " + "; ".join(errors))
    return out


class FilterModule(object):
    """enmasse.messaging router filters."""

    def filters(self):
        return {"router_secret_files": router_secret_files}
