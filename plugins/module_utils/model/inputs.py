# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' input as the model: the single and the bulk form of
``address``, the fields or ``definition`` of ``address_space``. Pure: it
reads the module's parameters as a dict, never the live system."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.documents import (
    normalize_address, normalize_address_space)
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import address_name_errors

# the single-address form of enmasse.messaging.address
SINGLE_FIELDS = ("address", "type", "plan", "topic", "deadletter", "expiry", "message_ttl",
                 "message_redelivery", "subscription")
STATES = ("present", "absent")


def address_inputs(params, space_name):
    """Split the address module's input into (present, absent, errors,
    positions).

    ``present``: plain addresses (EnMasse documents normalised); ``absent``:
    names; ``positions[i]``: the index of ``present[i]`` in the task. The single form (``address`` + fields, or ``definition``) and the
    bulk form (``addresses``) are exclusive; in the bulk form an item may
    carry its own ``state``.
    """
    single = dict((k, params.get(k)) for k in SINGLE_FIELDS if params.get(k) is not None)
    definition = params.get("definition")
    bulk = params.get("addresses")
    errors = []
    if bulk is not None and (single or definition):
        return [], [], ["use either the single-address form (address, type, plan, ... or definition) "
                        "or addresses, not both"], []
    if single and definition:
        return [], [], ["use either the address fields or definition, not both"], []
    if bulk is None:
        if not single and not definition:
            return [], [], ["one of address, definition or addresses is required"], []
        items = [definition if definition else single]
    else:
        items = bulk
    state = params.get("state") or "present"
    present, absent, positions = [], [], []
    for i, item in enumerate(items):
        where = "addresses[%d]" % i
        if not isinstance(item, dict):
            errors.append("%s: %r must be a mapping (a plain address or an EnMasse Address document)"
                          % (where, item))
            continue
        # EnMasse documents are converted; plain dicts need only a shallow copy
        plain = normalize_address(item) if "kind" in item else dict(item)
        if plain.get("address_space") not in (None, space_name):
            errors.append("%s.address_space: %r does not match address_space %r"
                          % (where, plain.get("address_space"), space_name))
        item_state = plain.get("state") or state
        if item_state not in STATES:
            errors.append("%s.state: %r must be one of %s" % (where, item_state, ", ".join(STATES)))
        elif item_state == "absent":
            name = plain.get("address")
            errs = address_name_errors(name, where + ".address")
            if errs:
                errors.extend(errs)
            else:
                absent.append(name)
        else:
            plain.pop("state", None)
            present.append(plain)
            positions.append(i)
    return present, absent, errors, positions


SPACE_FIELDS = ("type", "plan", "authentication_service", "endpoints")


def space_input(params, ledger_space, conn):
    """The desired address space from the module's fields or ``definition``;
    type and plan default to what the ledger, then the connection file, say."""
    name = params["name"]
    fields = dict((k, params.get(k)) for k in SPACE_FIELDS if params.get(k) is not None)
    if params.get("definition") is not None:
        if fields:
            raise ConfigError("use either definition or the fields %s, not both" % ", ".join(sorted(fields)))
        fields = normalize_address_space(params["definition"])
        if not isinstance(fields, dict):
            raise ConfigError("definition: %r must be an EnMasse AddressSpace document or a mapping" % (fields,))
        if fields.get("name") not in (None, name):
            raise ConfigError("definition.metadata.name: %r does not match name %r" % (fields.get("name"), name))
    space = dict(fields, name=name)
    known = ledger_space or {}
    for key in ("type", "plan"):
        if space.get(key) is None:
            space[key] = known.get(key) or conn.get(key)
    if space.get("type") is None:
        space["type"] = "brokered"
    return space
