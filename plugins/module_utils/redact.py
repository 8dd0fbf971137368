# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets in URLs: find them (to have Ansible mask them) and redact them (for
messages and results). Used by every client and by connection resolution."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def url_password(url):
    """The password in the user info of ``url`` (``scheme://user:password@host``), or None."""
    if not url or "://" not in url:
        return None
    netloc = url.split("://", 1)[1].split("/", 1)[0]
    userinfo, sep, unused = netloc.rpartition("@")
    if not sep or ":" not in userinfo:
        return None
    return userinfo.split(":", 1)[1] or None


def redact_url(url):
    """``url`` with the password of its user info replaced by ``********``
    (for messages and results)."""
    password = url_password(url)
    if not password:
        return url
    scheme, rest = url.split("://", 1)
    netloc, sep, path = rest.partition("/")
    userinfo, unused, host = netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return "%s://%s:********@%s%s%s" % (scheme, user, host, sep, path)
