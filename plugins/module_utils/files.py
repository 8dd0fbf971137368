# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON state files the modules keep on a host (the ownership ledger of
an address space, the plan catalogue): written atomically, checked writable
before anything is changed. One implementation for both. Pure Python, no
Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import tempfile


def read_only_fs(path):
    """The file system of ``path`` is mounted read-only."""
    try:
        return bool(os.statvfs(path).f_flag & getattr(os, "ST_RDONLY", 1))
    except (AttributeError, OSError):
        return False


def writable_error(path, what):
    """Why the file ``path`` (``what`` names it in the message) could not be
    written, or None. Its directory (or the nearest existing ancestor, which
    ``write_json`` would create it in) must be a writable directory, an
    existing file a writable regular file. root passes the permission checks,
    but not a read-only file system or a parent that is a file."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return "the %s %s is a directory, not a file" % (what, path)
    if os.path.exists(path) and not os.access(path, os.W_OK):
        reason = errno.EROFS if read_only_fs(path) else errno.EACCES
        return "cannot write the %s %s: %s" % (what, path, os.strerror(reason))
    directory = os.path.dirname(path)
    while not os.path.exists(directory):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    if not os.path.isdir(directory):
        return ("cannot write the %s %s: %s is not a directory (%s)"
                % (what, path, directory, os.strerror(errno.ENOTDIR)))
    if not os.access(directory, os.W_OK | os.X_OK):
        reason = errno.EROFS if read_only_fs(directory) else errno.EACCES
        return "cannot write the %s %s: directory %s: %s" % (what, path, directory, os.strerror(reason))
    return None


def write_json(path, data, mode, prefix, **dump_options):
    """Write ``data`` as JSON to ``path`` atomically (``write_text``)."""
    write_text(path, json.dumps(data, sort_keys=True, **dump_options) + "\n", mode, prefix)


def write_text(path, text, mode, prefix):
    """Write ``text`` to ``path`` atomically: a temporary file in the same
    directory (created if missing), flushed to disk, then renamed over the old
    one, which keeps its permissions (a new file gets ``mode``). Raises
    OSError/IOError; nothing is left behind on failure."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, (os.stat(path).st_mode & 0o7777) if os.path.exists(path) else mode)
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
