# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plain addresses and their Artemis address settings.

The mapping between the model's settings fields (``message_ttl``,
``message_redelivery``, ``deadletter``, ``expiry``, from the address and its
plan) and Artemis' per-address settings JSON, and the plain views of an
address as desired. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as _plans
from ansible_collections.enmasse.messaging.plugins.module_utils.model.documents import with_defaults
from ansible_collections.enmasse.messaging.plugins.module_utils.model.requests import SETTINGS_FIELDS

# the keys of a plain address that describe it (name/state/address_space are input only)
PLAIN_KEYS = ("address", "type", "plan", "topic", "subscription", "deadletter", "expiry",
              "message_ttl", "message_redelivery")
# Artemis applies address settings per address: queues, topics (a topic's
# settings apply to all its subscriptions) and dead letter addresses; a
# subscription has none of its own.
ARTEMIS_SETTINGS_TYPES = ("queue", "topic", "deadletter")

# (plain field, sub key, Artemis address-settings JSON key); verified against
# Artemis 2.40: addAddressSettings(String, String json) takes and
# getAddressSettingsAsJSON(String) returns these camelCase keys.
# (plain field, sub key, Artemis address-settings JSON key); verified against
# Artemis 2.40: addAddressSettings(String, String json) takes and
# getAddressSettingsAsJSON(String) returns these camelCase keys.
SETTINGS_KEYS = (
    ("message_ttl", "minimum", "minExpiryDelay"),
    ("message_ttl", "maximum", "maxExpiryDelay"),
    ("message_redelivery", "maximum_delivery_attempts", "maxDeliveryAttempts"),
    ("message_redelivery", "redelivery_delay", "redeliveryDelay"),
    ("message_redelivery", "redelivery_delay_multiplier", "redeliveryMultiplier"),
    ("message_redelivery", "maximum_delivery_delay", "maxRedeliveryDelay"),
    ("deadletter", None, "deadLetterAddress"),
    ("expiry", None, "expiryAddress"),
)

# live shape of each address type


def clean_address(address):
    """The describing keys of a plain address, with defaults, without Nones."""
    out = {}
    for k in PLAIN_KEYS:
        v = address.get(k)
        if v is not None:
            out[k] = copy.deepcopy(v) if isinstance(v, (dict, list)) else v
    return with_defaults(out) if out.get("type") == "subscription" else out


def settings_to_artemis(effective):
    """Artemis address-settings JSON object for ``plans.effective_settings``."""
    out = {}
    for field, sub, key in SETTINGS_KEYS:
        value = effective.get(field)
        if sub is not None:
            value = (value or {}).get(sub)
        if value is not None:
            out[key] = value
    return out


def settings_from_artemis(settings, keys=None):
    """Plain settings fields from Artemis address settings (only ``keys``)."""
    out = {}
    for field, sub, key in SETTINGS_KEYS:
        if keys is not None and key not in keys:
            continue
        value = (settings or {}).get(key)
        if value is None:
            continue
        if sub is None:
            out[field] = value
        else:
            out.setdefault(field, {})[sub] = value
    return out


# A declared topic: no auto-creation on it. The broker role turns
# auto-creation on for every other name and gives nobody createAddress there,
# so that an undeclared name is refused by permission (an MQTT SUBSCRIBE then
# gets failure code 0x80 for it, the connection stays); Artemis checks
# createAddress for an MQTT subscription queue (created without a routing
# type) whenever auto-creation is on for its topic, declared or not.
TOPIC_SETTINGS = {"autoCreateAddresses": False}


def artemis_settings(address, catalogue):
    """The Artemis address settings an address must have (may be empty)."""
    if not address or address.get("type") not in ARTEMIS_SETTINGS_TYPES:
        return {}
    base = dict(TOPIC_SETTINGS) if address.get("type") == "topic" else {}
    plan = catalogue.address_plan(address.get("plan")) or {}
    if not (plan.get("message_ttl") or plan.get("message_redelivery")) and \
            not any(address.get(k) for k in SETTINGS_FIELDS):
        return base  # the common case, fast: nothing else to set
    return dict(base, **settings_to_artemis(_plans.effective_settings(address, plan)))


def desired_view(address, catalogue, settings=None):
    """The plain address as it will be on the broker: the settings fields are
    the effective ones (plan values overridden by the address's own).
    ``settings``: its ``artemis_settings`` when already computed."""
    view = dict((k, v) for k, v in clean_address(address).items() if k not in SETTINGS_FIELDS)
    if settings is None:
        settings = artemis_settings(address, catalogue)
    view.update(settings_from_artemis(settings))
    return view


def same_value(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def settings_match(live, wanted):
    """True when every wanted Artemis setting has that value live."""
    live = live or {}
    return all(same_value(live.get(k), v) for k, v in wanted.items())


def visible_settings(merged, baseline, keys=()):
    """Plain settings fields of an address from its merged address settings:
    the ``keys`` we manage, plus whatever differs from the broker's catch-all
    settings (``baseline``)."""
    if merged is None:
        return {}
    keys = set(keys)
    keys.update(k for k, v in merged.items() if not same_value(v, (baseline or {}).get(k)))
    return settings_from_artemis(merged, keys)
