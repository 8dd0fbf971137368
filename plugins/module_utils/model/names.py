# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The naming rules: address space names, address strings, user names.

One implementation, used by the modules, the filter plugins the roles call,
and the Spark jobs. Each function returns every violation as a message naming
the field, the value and the rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# ASCII only ([a-z] is), anchored with \Z: "$" would let a trailing newline through
SPACE_NAME_RE = re.compile(r"\A[a-z]([a-z0-9-]*[a-z0-9])?\Z")
SPACE_NAME_MAX = 60
USERNAME_RE = re.compile(r"\A[a-z0-9]+([a-z0-9_@.:\-]*[a-z0-9]+|[a-z0-9]*)\Z")
ADDRESS_MAX = 255
# the name part of an EnMasse Address's metadata.name (<space>.<name>): a
# Kubernetes name (DNS-1123 subdomain: dot-separated labels of lowercase
# letters, digits and '-', each starting and ending with a letter or digit);
# EnMasse checks each dot-separated component, at most 60 characters each
# (KubeUtil.isNameValid), and Kubernetes at most 253 in all
KUBE_LABEL_RE = re.compile(r"\A[a-z0-9]([a-z0-9-]*[a-z0-9])?\Z")
KUBE_COMPONENT_MAX = 60
KUBE_NAME_MAX = 253


# how much of an offending value a message quotes (a 100 000-character string
# is named, not echoed)
QUOTE_MAX = 100


def fmt(v):
    """A value as it is quoted in messages, cut short when it is long."""
    text = repr(v)
    if len(text) > QUOTE_MAX:
        return "%s... (%d characters)" % (text[:QUOTE_MAX], len(text))
    return text


_fmt = fmt


def space_name_errors(name, field="name"):
    if not isinstance(name, str) or not name:
        return ["%s: %s is required and must be a non-empty string" % (field, _fmt(name))]
    errs = []
    if len(name) > SPACE_NAME_MAX:
        errs.append("%s: %s is %d characters long, at most %d are allowed"
                    % (field, _fmt(name), len(name), SPACE_NAME_MAX))
    if not SPACE_NAME_RE.match(name):
        errs.append("%s: %s must consist of lowercase letters, digits and '-', start "
                    "with a letter and end with a letter or digit" % (field, _fmt(name)))
    return errs


def kube_name_errors(name, field="metadata.name", space=None):
    """The name part of an EnMasse document's metadata.name; with ``space``,
    the whole object name ``<space>.<name>`` is held to Kubernetes' limit."""
    if not isinstance(name, str) or not name:
        return ["%s: %s is required and must be a non-empty string" % (field, _fmt(name))]
    full = len(name) + (len(space) + 1 if space else 0)
    if full > KUBE_NAME_MAX:
        if not space:
            return ["%s: %s is %d characters long, at most %d are allowed"
                    % (field, _fmt(name[:40] + "..."), len(name), KUBE_NAME_MAX)]
        return ["%s: %s is %d characters long: the object name %s.<name> would be %d characters, at most %d are "
                "allowed (%d for the name)" % (field, _fmt(name[:40] + "..."), len(name), space, full, KUBE_NAME_MAX,
                                               KUBE_NAME_MAX - len(space) - 1)]
    for part in name.split("."):
        if len(part) > KUBE_COMPONENT_MAX:
            return ["%s: %s has a component of %d characters, at most %d are allowed between dots"
                    % (field, _fmt(name), len(part), KUBE_COMPONENT_MAX)]
        if not KUBE_LABEL_RE.match(part):
            return ["%s: %s must be a Kubernetes name: lowercase letters, digits, '-' and '.', each "
                    "dot-separated part starting and ending with a letter or digit" % (field, _fmt(name))]
    return []


# the broker's wildcard words (roles/broker: '/' delimiter, '#' any words,
# '+' one word): an address with such a word is a subscriber's pattern
WILDCARD_DELIMITER = "/"
WILDCARD_WORDS = ("#", "+")


def is_wildcard_address(name):
    """True for a subscriber's wildcard pattern (``events/#``,
    ``events/+/eu``): the broker makes these while a wildcard subscriber is
    attached; they are never tenant addresses."""
    return isinstance(name, str) and any(w in WILDCARD_WORDS for w in name.split(WILDCARD_DELIMITER))


def address_name_errors(address, field="address"):
    if not isinstance(address, str) or not address:
        return ["%s: %s is required and must be a non-empty string" % (field, _fmt(address))]
    errs = []
    if re.search(r"\s", address):
        errs.append("%s: %s must not contain whitespace" % (field, _fmt(address)))
    if address.startswith("_!") or address.startswith("!!"):
        errs.append("%s: %s must not start with '_!' or '!!' (reserved)" % (field, _fmt(address)))
    if "::" in address:
        errs.append("%s: %s must not contain '::' (reserved as the topic::subscription "
                    "separator)" % (field, _fmt(address)))
    if is_wildcard_address(address):
        errs.append("%s: %s must not have '#' or '+' as a whole '/'-separated word (they are the wildcards "
                    "subscribers use: such a name would match other addresses)" % (field, _fmt(address)))
    if len(address) > ADDRESS_MAX:
        errs.append("%s: %s is %d characters long, at most %d are allowed"
                    % (field, _fmt(address[:40] + "..."), len(address), ADDRESS_MAX))
    return errs


# standard/entities.WILL_PREFIX (not imported: model stays free of the router's modules)
RESERVED_WILL = "$will"


def router_policy_name_errors(address, field="address"):
    """A standard space's address is listed by name in its router vhost
    policy (the names its clients may reach): no ``,`` (the list separator),
    no ``*`` at the end (a prefix wildcard there) and no ``${user}`` (the
    user-name token); each would let clients reach other, undeclared names."""
    if not isinstance(address, str):
        return []
    errs = []
    for bad, why in ((",", "the router's address policy separates names with ','"),
                     ("${user}", "the router's address policy replaces ${user} by the user name")):
        if bad in address:
            errs.append("%s: %s must not contain %r in a standard address space (%s)"
                        % (field, _fmt(address), bad, why))
    if address.endswith("*"):
        errs.append("%s: %s must not end with '*' in a standard address space (the router's address "
                    "policy reads it as a wildcard)" % (field, _fmt(address)))
    first = address[:1]
    if first and (first in "_*" or first <= " " or first == "\x7f"):
        errs.append("%s: %s must not start with '_', '*', a space or a control character in a standard address "
                    "space (the router gives names starting with _local/, _topo/ or _edge/ no tenant prefix: they "
                    "reach the router itself)" % (field, _fmt(address)))
    if ":/" in address or address.startswith("/"):
        errs.append("%s: %s must not contain ':/' nor start with '/' in a standard address space (the router "
                    "routes what follows the first ':/' or the leading '/': another name than the one its policy "
                    "checks)" % (field, _fmt(address)))
    if address == RESERVED_WILL or address.startswith((RESERVED_WILL + "/", RESERVED_WILL + ".")):
        errs.append("%s: %s must not be or start with '%s/' or '%s.' in a standard address space (reserved: a client "
                    "attaches its AMQP will for address X to %s/X)"
                    % (field, _fmt(address), RESERVED_WILL, RESERVED_WILL, RESERVED_WILL))
    return errs


def username_errors(username, field="username"):
    if not isinstance(username, str) or not username:
        return ["%s: %s is required and must be a non-empty string" % (field, _fmt(username))]
    if not USERNAME_RE.match(username):
        return ["%s: %s must match %s (lowercase letters and digits, with _ @ . : - "
                "inside)" % (field, _fmt(username), USERNAME_RE.pattern)]
    return []


# the generated messaging user of an address space (broker role, auth service)
MESSAGING_USER_SUFFIX = "-user"


def messaging_user(space):
    """The name of the messaging user the collection generates for ``space``."""
    return space + MESSAGING_USER_SUFFIX
