# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the router gets as a user's address-authz (docs/auth-service.md):
the user's patterns, with the AMQP wills' ``$will/<p>`` and a partial
``*`` that cannot reach the router's own addresses. Standard library only:
the auth service carries a copy of this file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:  # in the collection
    from ..standard import entities
except ImportError:  # the service's package (roles/auth_service): a copy beside this file
    from . import entities


def with_wills(address_authz):
    """``address_authz`` with ``send`` on ``$will/<p>`` for every pattern
    ``<p>`` it grants ``send`` on (``entities.will_target``): whoever may send
    to an address may leave an AMQP will for it (docs/mqtt-design.md "Wills
    of AMQP clients"), nobody else. The vhost policy's lists say the same
    for a user of every address (``entities.terminus_names``)."""
    out = dict((p, list(perms)) for p, perms in address_authz.items())
    for pattern, perms in address_authz.items():
        if "send" in perms and pattern != "*":
            will = entities.will_target(pattern)
            out[will] = sorted(set(out.get(will, [])) | {"send"})
    return out


# qdrouterd gives an address that starts with _local/, _topo/ or _edge/ no
# tenant prefix: _topo/0/<router>/$management is the router's management
# agent (create, delete anything). A '*' in address-authz would reach it, so
# '*' goes to the router as one prefix pattern per first character a
# standard space's address may have (model.names.router_policy_name_errors:
# printable ASCII, not '_', '*', ',' or '/'), and a pattern starting with '_' not at all.
STAR_FIRST = tuple(c for c in map(chr, range(33, 127)) if c not in "_*,/")


def router_authz(address_authz):
    """What the router gets as address-authz for a user that is not granted
    every address: ``with_wills``, then '*' expanded over STAR_FIRST and
    every pattern that could name a router-internal address dropped."""
    out = with_wills(address_authz)
    star = out.pop("*", None)
    for first in STAR_FIRST if star else ():
        out[first + "*"] = sorted(set(out.get(first + "*", [])) | set(star))
    return dict((p, perms) for p, perms in out.items() if safe(p))


def safe(pattern):
    """Whether the router may get ``pattern``: not naming one of its own
    addresses (a leading '_' or '/', ':/' anywhere: the router routes what
    follows it) and not two patterns in one (',', the router's separator;
    '${user}', its user-name token). The users' rules refuse these too
    (model.users.pattern_errors); a users file written by hand may hold them."""
    return not (pattern.startswith(("_", "/")) or ":/" in pattern or "," in pattern or "${user}" in pattern)
