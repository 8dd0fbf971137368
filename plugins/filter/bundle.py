# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the roles that install a bundle of the collection's files
(the job_bundle lookup: ``[{path, content}]``) on a host.

* ``bundle_changes``: the entries of a bundle whose file on the host is
  missing or differs (content, mode, owner), from one ``find`` of the host
  with checksums - so a run with nothing to do copies nothing instead of one
  round trip per file.

The documentation of each filter is in the sidecar ``<filter>.yml`` beside
this file (``ansible-doc -t filter enmasse.messaging.<filter>``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import posixpath

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt


def bundle_changes(bundle, found, directory, flat=False, mode="0644", uid=0, gid=0):
    """The entries of ``bundle`` ([{path, content}]) whose file
    ``<directory>/<path>`` (``flat``: ``<directory>/<basename of path>``) is
    not among ``found`` (ansible.builtin.find's ``files`` with
    ``get_checksum``) with the content's sha1, ``mode``, ``uid`` and ``gid``.
    ``flat``: entries of one basename (the empty ``__init__.py`` of two
    packages) are one file, refused when their contents differ."""
    if not isinstance(bundle, (list, tuple)) or not all(isinstance(b, dict) and "path" in b and "content" in b
                                                        for b in bundle):
        raise AnsibleFilterError("bundle_changes: the bundle: %s must be a list of {path, content}" % fmt(bundle))
    if not isinstance(found, (list, tuple)) or not all(isinstance(f, dict) and "path" in f for f in found):
        raise AnsibleFilterError("bundle_changes: found: %s must be the files of ansible.builtin.find" % fmt(found))
    if not isinstance(directory, str) or not directory.startswith("/"):
        raise AnsibleFilterError("bundle_changes: directory: %s must be an absolute path" % fmt(directory))
    have = dict((f["path"], f) for f in found)
    out, seen = [], {}
    for entry in bundle:
        rel = posixpath.basename(entry["path"]) if flat else entry["path"]
        if rel in seen:
            if seen[rel]["content"] != entry["content"]:
                raise AnsibleFilterError("bundle_changes: %s and %s are both %s with flat, with other contents"
                                         % (seen[rel]["path"], entry["path"], posixpath.join(directory, rel)))
            continue
        seen[rel] = entry
        f = have.get(posixpath.join(directory, rel))
        if (f is None or f.get("checksum") != hashlib.sha1(to_bytes(entry["content"])).hexdigest()
                or str(f.get("mode")) != mode or f.get("uid") != uid or f.get("gid") != gid):
            out.append(entry)
    return out


class FilterModule(object):
    def filters(self):
        return {"bundle_changes": bundle_changes}
