# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Value types and their bounds: what a field may hold before any rule of
the model looks at it.

One place for the bounds of the numbers the broker stores (Artemis keeps
``minExpiryDelay``, ``maxExpiryDelay``, ``redeliveryDelay`` and
``maxRedeliveryDelay`` as Java ``long``, ``maxDeliveryAttempts`` and
``max-consumers`` as Java ``int``, ``redeliveryMultiplier`` as a ``double``)
and for the type of every field of a plain address. Each function returns
every violation as a message naming the field, the value and the rule; none
raises on any input (lists, mappings, booleans, None, huge strings).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import math

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt as _fmt

JAVA_LONG_MAX = 9223372036854775807
JAVA_INT_MAX = 2147483647

TTL_KEYS = ("minimum", "maximum")
# EnMasse's messageRedelivery keys (camelCase) and the model's
REDELIVERY_CAMEL = {
    "maximumDeliveryAttempts": "maximum_delivery_attempts",
    "redeliveryDelay": "redelivery_delay",
    "redeliveryDelayMultiplier": "redelivery_delay_multiplier",
    "maximumDeliveryDelay": "maximum_delivery_delay",
}
REDELIVERY_KEYS = tuple(REDELIVERY_CAMEL.values())
SUBSCRIPTION_KEYS = ("max_consumers",)
# the string fields of a plain address
ADDRESS_STRING_FIELDS = ("address", "type", "plan", "topic", "deadletter", "expiry", "name", "state",
                         "address_space")


def redelivery_from_camel(r):
    """EnMasse's ``messageRedelivery`` with the model's keys (unknown keys
    are kept as they are, for the checks to name)."""
    return dict((REDELIVERY_CAMEL.get(k, k), v) for k, v in (r or {}).items())


def redelivery_to_camel(r):
    """The model's ``message_redelivery`` with EnMasse's keys."""
    inv = dict((v, k) for k, v in REDELIVERY_CAMEL.items())
    return dict((inv.get(k, k), v) for k, v in (r or {}).items())


def quote(v):
    """A value as messages quote it (``names.fmt``: cut short when long)."""
    return _fmt(v)


def type_name(v):
    """What a value is, in the words of YAML."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a float"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, (list, tuple)):
        return "a list"
    return "a %s" % type(v).__name__


def is_int(v):
    """An integer that is not a boolean."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    """An int or a float, not a boolean."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def string_errors(v, field, required=False):
    """``v`` must be a string (non-empty when ``required``); None is fine
    when not required. Quoting (``yes``, ``12345``) is the fix for YAML's
    conversion, so the message says so."""
    if v is None and not required:
        return []
    if not isinstance(v, str):
        return ["%s: %s is %s, it must be a string (quote it in YAML)" % (field, quote(v), type_name(v))]
    if required and not v:
        return ["%s: %s is required and must be a non-empty string" % (field, quote(v))]
    return []


def int_errors(v, field, minimum, maximum, what="an integer"):
    """``v`` must be an int (not a bool, not a float such as 1.5 or 1e20)
    within [minimum, maximum]."""
    if not is_int(v):
        return ["%s: %s is %s, it must be %s from %d to %d"
                % (field, quote(v), type_name(v), what, minimum, maximum)]
    if v < minimum or v > maximum:
        return ["%s: %s must be %s from %d to %d" % (field, quote(v), what, minimum, maximum)]
    return []


def unknown_key_errors(keys, known, field, ignored=()):
    """One message per key of ``keys`` not in ``known`` (and not in
    ``ignored``), suggesting the nearest known key (a typo such as
    ``minimim``) or else listing them."""
    errs = []
    for k in keys:
        if k in known or k in ignored:
            continue
        near = difflib.get_close_matches(k, known, n=1) if isinstance(k, str) else []
        if near:
            hint = "did you mean %r?" % near[0]
        else:
            hint = "allowed: %s" % ", ".join(known)
        errs.append("%s.%s: unknown field (%s)" % (field, k, hint))
    return errs


def mapping_errors(v, field, known):
    """``v`` must be a mapping whose keys are all in ``known``."""
    if not isinstance(v, dict):
        return ["%s: %s is %s, it must be a mapping with %s" % (field, quote(v), type_name(v), ", ".join(known))]
    return unknown_key_errors(list(v), known, field)


def ttl_errors(ttl, field):
    """``message_ttl``: ``{minimum, maximum}``, milliseconds, Java long
    (Artemis ``minExpiryDelay``/``maxExpiryDelay``), minimum <= maximum."""
    if ttl is None:
        return []
    errs = mapping_errors(ttl, field, TTL_KEYS)
    if not isinstance(ttl, dict):
        return errs
    # from 1: EnMasse ignores values below 1; here they are refused, since a
    # maximum of 0 would expire every message on arrival
    for k in TTL_KEYS:
        if ttl.get(k) is not None:
            errs.extend(int_errors(ttl[k], "%s.%s" % (field, k), 1, JAVA_LONG_MAX,
                                   "an integer number of milliseconds"))
    lo, hi = ttl.get("minimum"), ttl.get("maximum")
    if is_int(lo) and is_int(hi) and lo > hi:
        errs.append("%s: minimum %r must not be greater than maximum %r" % (field, lo, hi))
    return errs


def redelivery_errors(r, field):
    """``message_redelivery``: delays are Java long milliseconds,
    ``maximum_delivery_attempts`` a Java int >= 1 or -1 (unlimited),
    ``redelivery_delay_multiplier`` a finite number >= 1 (a double)."""
    if r is None:
        return []
    errs = mapping_errors(r, field, REDELIVERY_KEYS)
    if not isinstance(r, dict):
        return errs
    for k in REDELIVERY_KEYS:
        v = r.get(k)
        where = "%s.%s" % (field, k)
        if v is None:
            continue
        if k == "redelivery_delay_multiplier":
            if not is_number(v) or not math.isfinite(v) or v < 1 or v > 1.7976931348623157e308:
                errs.append("%s: %s must be a finite number >= 1 (%s)" % (where, quote(v), type_name(v)))
        elif k == "maximum_delivery_attempts":
            if not is_int(v) or v == 0 or v < -1 or v > JAVA_INT_MAX:
                errs.append("%s: %s must be an integer from 1 to %d, or -1 for unlimited (%s)"
                            % (where, quote(v), JAVA_INT_MAX, type_name(v)))
        else:
            errs.extend(int_errors(v, where, 0, JAVA_LONG_MAX, "an integer number of milliseconds"))
    return errs


def subscription_errors(sub, field):
    """``subscription``: ``{max_consumers}``, a Java int >= 1."""
    if sub is None:
        return []
    errs = mapping_errors(sub, field, SUBSCRIPTION_KEYS)
    if isinstance(sub, dict) and sub.get("max_consumers") is not None:
        errs.extend(int_errors(sub["max_consumers"], field + ".max_consumers", 1, JAVA_INT_MAX))
    return errs


def address_type_errors(a, label):
    """The type of every field of the plain address ``a``; ``label(key)``
    names a field in messages. Only types and bounds: the rules (names,
    plans, references) come after, on well-typed addresses only."""
    errs = []
    for k in ADDRESS_STRING_FIELDS:
        errs.extend(string_errors(a.get(k), label(k)))
    errs.extend(ttl_errors(a.get("message_ttl"), label("message_ttl")))
    errs.extend(redelivery_errors(a.get("message_redelivery"), label("message_redelivery")))
    errs.extend(subscription_errors(a.get("subscription"), label("subscription")))
    return errs
