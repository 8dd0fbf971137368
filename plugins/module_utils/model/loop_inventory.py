# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity loop's own inventory file (issue 22, docs/apply-plan.md step 3):
a second inventory source beside the operator's, owned wholly by the loop,
holding only the group memberships the loop decided - the spare hosts it made
brokers::

    brokers:
      hosts:
        spare-1: {}

Ansible merges it with the operator's inventory (``-i inventory -i
loop.yml``): the host stays in the operator's ``brokers_spare`` (with its
connection variables) and is in ``brokers`` too. Rules only: the parsed
content (or None for no file), a group, a host and present/absent -> the new
content and whether it changed; the text the module writes. A file that is
not of this shape is refused, never rewritten. Pure Python, no Ansible
imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ValidationError

# Only brokers this round: the loop adds a spare broker (scale out) and takes
# back a broker it added (scale in through scale_in.yml). A router's scale in
# is not run by apply_plan.yml (docs/apply-plan.md step 5), so a router the
# loop added could not be taken back by it.
GROUPS = ("brokers",)
STATES = ("present", "absent")
# an inventory host name: no spaces, no YAML/pattern specials at the start
HOST_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\[\]-]*$")
HEADER = ("# The capacity loop's own inventory (enmasse.messaging.loop_inventory; docs/apply-plan.md):\n"
          "# the group memberships the loop decided. Written by the loop, never by hand; pass it after the\n"
          "# operator's inventory to every run (-i inventory -i this file).\n")


def check_args(group, host, state):
    """ValidationError naming the field, the value and the rule of every bad
    argument."""
    errors = []
    if group not in GROUPS:
        errors.append("group: %r is not one of %s (a router the loop added could not be taken back: apply_plan.yml "
                      "does not run a router's scale in)" % (group, ", ".join(GROUPS)))
    if not isinstance(host, str) or not HOST_RE.match(host):
        errors.append("host: %r is not an inventory host name (letters, digits and _.:[]- , not starting with one "
                      "of .:[]-)" % (host,))
    if state not in STATES:
        errors.append("state: %r is not one of %s" % (state, ", ".join(STATES)))
    if errors:
        raise ValidationError(errors)


def memberships(content, path="the loop inventory"):
    """{group: [host, ...]} of ``content`` (the parsed file; None or {} for
    none). ValidationError naming the field, the value and the rule when it is
    not the loop's shape (only groups of GROUPS, each a mapping with only
    ``hosts``, each host a mapping that is empty): such a file is the
    operator's or edited by hand, and is never rewritten."""
    if content is None:
        return {}
    if not isinstance(content, dict):
        raise ValidationError("%s: the file is a %s, not a mapping of groups: not the loop's file, left alone"
                              % (path, type(content).__name__))
    errors, out = [], {}
    for group, data in content.items():
        if group not in GROUPS:
            errors.append("%s: key %r is not one of %s: not the loop's file (it holds only the groups it decided), "
                          "left alone" % (path, group, ", ".join(GROUPS)))
            continue
        if data is None:
            data = {}
        if not isinstance(data, dict) or set(data) - {"hosts"}:
            errors.append("%s: %s is %r: the loop's groups hold only hosts (no vars, no children), left alone"
                          % (path, group, data))
            continue
        hosts = data.get("hosts") or {}
        if not isinstance(hosts, dict):
            errors.append("%s: %s.hosts is %r, not a mapping of host names, left alone" % (path, group, hosts))
            continue
        bad = sorted("%s: %r" % (h, v) for h, v in hosts.items() if v not in (None, {}))
        if bad:
            errors.append("%s: %s.hosts has host variables (%s): the loop writes none (they belong in the operator's "
                          "inventory), left alone" % (path, group, ", ".join(bad)))
            continue
        out[group] = [str(h) for h in hosts]
    if errors:
        raise ValidationError(errors)
    return out


def change(content, group, host, state, path="the loop inventory"):
    """(new memberships {group: [hosts]}, changed) for ``host`` ``state``
    (present/absent) in ``group`` of ``content``. A new host is appended (the
    group keeps its order)."""
    check_args(group, host, state)
    now = memberships(content, path)
    hosts = list(now.get(group, []))
    if state == "present" and host not in hosts:
        hosts.append(host)
    elif state == "absent" and host in hosts:
        hosts.remove(host)
    else:
        return now, False
    new = dict(now)
    new[group] = hosts
    return new, True


def render(groups):
    """The file's text for ``groups`` ({group: [hosts]}): the header, then
    each group of GROUPS (also when empty, so that the file always parses as
    an inventory), host names JSON-quoted (valid YAML)."""
    lines = [HEADER.rstrip("\n")]
    for group in GROUPS:
        hosts = groups.get(group) or []
        lines.append("%s:" % group)
        if not hosts:
            lines.append("  hosts: {}")
            continue
        lines.append("  hosts:")
        lines.extend("    %s: {}" % json.dumps(h) for h in hosts)
    return "\n".join(lines) + "\n"
