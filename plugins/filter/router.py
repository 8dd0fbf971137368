# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the router role.

* ``router_secret_files``: where the router role writes the broker passwords
  of the standard spaces' connectors, ``{broker: <dir>/<broker>-<fingerprint>.password}``.
* ``router_mesh_changes``: the mesh connectors a running router must delete
  and create (through management, no restart) to match its qdrouterd.conf.
* ``router_conf_core``: a qdrouterd.conf without its mesh connectors, comments
  and blank lines - what only a restart applies (two files with the same core
  differ only in the mesh).

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


MESH_PREFIX = "inter-router/"


def router_mesh_changes(connectors, peers):
    """``{delete: [connector names], create: [peers]}``: ``connectors`` is what
    the router's management QUERY of type connector returned (dicts with at
    least name, role, host, port), ``peers`` the role's mesh (``__router_peers``:
    ``{name, host, port}``, the connector is ``inter-router/<name>``). A mesh
    connector (role inter-router, named ``inter-router/...``) not in ``peers``
    is deleted; one whose host or port differs is deleted and created again; a
    peer without one is created. Other connectors (the brokers') are not
    touched."""
    if not isinstance(connectors, (list, tuple)) or not all(isinstance(c, dict) for c in connectors):
        raise AnsibleFilterError("router_mesh_changes: the connectors: %s must be the list of the router's "
                                 "connectors (dicts)" % fmt(connectors))
    if not isinstance(peers, (list, tuple)) or not all(isinstance(p, dict) and p.get("name") for p in peers):
        raise AnsibleFilterError("router_mesh_changes: peers: %s must be a list of {name, host, port}" % fmt(peers))
    wanted = dict((MESH_PREFIX + p["name"], (str(p.get("host")), str(p.get("port")))) for p in peers)
    kept, delete = set(), []  # a router's entity names are unique
    for c in connectors:
        name = c.get("name") or ""
        if c.get("role") != "inter-router" or not name.startswith(MESH_PREFIX):
            continue
        if wanted.get(name) == (str(c.get("host")), str(c.get("port"))):
            kept.add(name)
        else:
            delete.append(name)
    create = [dict(p) for p in peers if MESH_PREFIX + p["name"] not in kept]
    return {"delete": delete, "create": create}


_SECTION = re.compile(r"^([A-Za-z]+)\s*\{\s*$")
_NAME = re.compile(r"^\s*name\s*:\s*(\S+)\s*$")


def router_conf_core(text):
    """``text`` (a qdrouterd.conf) without the ``connector`` sections named
    ``inter-router/...``, comment lines and blank lines; None stays None (no
    file yet)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise AnsibleFilterError("router_conf_core: %s must be the text of a qdrouterd.conf" % fmt(text))
    out, section = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if section is None:
            m = _SECTION.match(stripped)
            if m:
                section = [stripped]
                continue
            out.append(stripped)
        elif stripped == "}":
            section.append(stripped)
            names = [n.group(1) for n in (_NAME.match(x) for x in section) if n]
            if not (section[0].startswith("connector") and names and names[0].startswith(MESH_PREFIX)):
                out.extend(section)
            section = None
        else:
            section.append(stripped)
    if section is not None:
        out.extend(section)
    return "\n".join(out)


class FilterModule(object):
    """enmasse.messaging router filters."""

    def filters(self):
        return {"router_secret_files": router_secret_files, "router_mesh_changes": router_mesh_changes,
                "router_conf_core": router_conf_core}
