# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which realm groups are the collection's (EnMasse's encoding, from
``auth/backends.py``) and the authorization a set of them stands for (the
reverse of ``authorization_to_groups``, for info and diffs). Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.auth.backends import (
    OPERATION_GROUPS, WHOLE_GROUPS, groups_to_address_authz)

WHOLE = dict((group, op) for op, group in WHOLE_GROUPS.items())


def is_managed_group(name):
    """``send_<p>``, ``recv_<p>``, ``manage``, ``monitor``."""
    if not isinstance(name, str):
        return False
    return name in WHOLE or any(name.startswith(prefix + "_") and len(name) > len(prefix) + 1
                                for prefix in OPERATION_GROUPS.values())


def authorization_of(groups):
    """Groups -> an authorization list: one rule per set of operations
    (sorted), with the patterns that have exactly those operations."""
    by_ops = {}
    for pattern, ops in groups_to_address_authz(groups).items():
        by_ops.setdefault(tuple(ops), []).append(pattern)
    rules = [{"addresses": sorted(patterns), "operations": list(ops)} for ops, patterns in sorted(by_ops.items())]
    whole = sorted(WHOLE[g] for g in groups if g in WHOLE)
    if whole:
        rules.append({"addresses": [], "operations": whole})
    return rules
