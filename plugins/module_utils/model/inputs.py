# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' input as the model: the single and the bulk form of
``address``, the fields or ``definition`` of ``address_space``. Pure: it
reads the module's parameters as a dict, never the live system."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError, ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.documents import (
    address_document_errors, address_list_errors, address_list_items, address_space_document_errors, is_document,
    normalize_address, normalize_address_space)
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import (
    address_name_errors, space_name_errors)
from ansible_collections.enmasse.messaging.plugins.module_utils.model.types import (
    address_type_errors, quote, string_errors, type_name, unknown_key_errors)

# the single-address form of enmasse.messaging.address
SINGLE_FIELDS = ("address", "type", "plan", "topic", "deadletter", "expiry", "message_ttl",
                 "message_redelivery", "subscription")
# the options of the single form that are mappings with sub-options
SINGLE_MAPPINGS = ("message_ttl", "message_redelivery", "subscription")
# the keys of a plain address (the single form's fields, a bulk item's keys)
PLAIN_KEYS = ("address", "type", "plan", "topic", "deadletter", "expiry", "message_ttl", "message_redelivery",
              "subscription", "name", "state", "address_space")
STATES = ("present", "absent")


def check_space_name(name, field="address_space"):
    """Refuse a bad address space name before anything looks for its
    connection file (the modules call it first)."""
    errs = space_name_errors(name, field)
    if errs:
        raise ValidationError(errs)


def _single_form(params):
    """The single form's fields that are set. Ansible sets the sub-options
    of a mapping option that are not given to None: they are dropped."""
    single = {}
    for k in SINGLE_FIELDS:
        v = params.get(k)
        if v is None:
            continue
        if k in SINGLE_MAPPINGS and isinstance(v, dict):
            v = dict((sk, sv) for sk, sv in v.items() if sv is not None)
        single[k] = v
    return single


def _expand(where, item, space_name, errors):
    """(where, item) pairs of one input: an EnMasse AddressList stands for
    its items."""
    if isinstance(item, dict) and item.get("kind") == "AddressList":
        errs = address_list_errors(item, where)
        if errs:
            errors.extend(errs)
            return []
        return [("%s.items[%d]" % (where, j), it) for j, it in enumerate(address_list_items(item))]
    return [(where, item)]


def plain_address(where, item, space_name):
    """(plain address, errors) for one input item: a plain mapping or an
    EnMasse Address document, its keys and the type of every field checked
    (field names as the user wrote them)."""
    if not isinstance(item, dict):
        return None, ["%s: %s is %s, it must be a mapping (a plain address or an EnMasse Address document)"
                      % (where, quote(item), type_name(item))]
    if is_document(item):
        errs = address_document_errors(item, space_name, where)
        if errs:
            return None, errs
        plain = normalize_address(item, space_name)
        prefix, names = where + ".spec.", _SNAKE_TO_CAMEL
    else:
        plain = dict(item)
        prefix, names = (where + "." if where else ""), {}
        errs = unknown_key_errors(list(plain), PLAIN_KEYS, where or "address")
        if errs:
            return None, errs

    def label(k):
        return prefix + names.get(k, k)
    errs = address_type_errors(plain, label)
    if not errs and plain.get("address_space") not in (None, space_name):
        errs.append("%s: %s does not match address_space %r"
                    % (label("address_space"), quote(plain.get("address_space")), space_name))
    return (None if errs else plain), errs


_SNAKE_TO_CAMEL = {"message_ttl": "messageTtl", "message_redelivery": "messageRedelivery",
                   "address_space": "addressSpace"}


def address_inputs(params, space_name):
    """Split the address module's input into (present, absent, errors,
    positions).

    ``present``: plain addresses (EnMasse documents normalised); ``absent``:
    names; ``positions[i]``: where ``present[i]`` is in the task
    (``addresses[3]``, ``addresses[1].items[0]``), for the messages. The single form (``address`` + fields, or ``definition``: an
    Address or an AddressList) and the bulk form (``addresses``: plain
    addresses, Address documents, AddressLists) are exclusive; in the bulk
    form an item may carry its own ``state``. Every field's type is checked
    here, before anything is read: a bad item is reported, not converted.
    """
    single = _single_form(params)
    definition = params.get("definition")
    bulk = params.get("addresses")
    errors = []
    if bulk is not None and (single or definition is not None):
        return [], [], ["use either the single-address form (address, type, plan, ... or definition) "
                        "or addresses, not both"], []
    if single and definition is not None:
        return [], [], ["use either the address fields or definition, not both"], []
    if bulk is None:
        if not single and definition is None:
            return [], [], ["one of address, definition, addresses or src is required"], []
        items = _expand("definition", definition, space_name, errors) if definition is not None else [("", single)]
    elif not isinstance(bulk, list):
        return [], [], ["addresses: %s is %s, it must be a list" % (quote(bulk), type_name(bulk))], []
    else:
        items = []
        for i, item in enumerate(bulk):
            items.extend(_expand("addresses[%d]" % i, item, space_name, errors))
    state = params.get("state") or "present"
    present, absent, positions = [], [], []
    for where, item in items:
        plain, errs = plain_address(where, item, space_name)
        if errs:
            errors.extend(errs)
            continue
        item_state = plain.get("state") or state
        sfield = "%s.state" % where if where else "state"
        if item_state not in STATES:
            errors.append("%s: %s must be one of %s" % (sfield, quote(item_state), ", ".join(STATES)))
        elif item_state == "absent":
            name = plain.get("address")
            errs = address_name_errors(name, "%s.address" % where if where else "address")
            if errs:
                errors.extend(errs)
            else:
                absent.append(name)
        else:
            plain.pop("state", None)
            present.append(plain)
            positions.append(where or "addresses[0]")
    return present, absent, errors, positions


def space_params_errors(params):
    """Every violation of address_space's own options that needs neither the
    ledger nor the broker: the name, the type of each field, a definition's
    document shape. The module checks them before the connection lookup."""
    name = params.get("name")
    errs = space_name_errors(name, "name")
    for k in ("type", "plan"):
        errs.extend(string_errors(params.get(k), k))
    definition = params.get("definition")
    if definition is not None:
        if not isinstance(definition, dict):
            errs.append("definition: %s is %s, it must be an EnMasse AddressSpace document or a mapping"
                        % (quote(definition), type_name(definition)))
        elif is_document(definition):
            errs.extend(address_space_document_errors(definition, name))
        else:
            errs.extend(unknown_key_errors(list(definition), ("name",) + SPACE_FIELDS, "definition"))
    auth = params.get("authentication_service")
    if auth is not None:
        for k in ("name", "type"):
            errs.extend(string_errors(auth.get(k), "authentication_service.%s" % k))
    return errs


SPACE_FIELDS = ("type", "plan", "authentication_service", "endpoints")


def space_input(params, ledger_space, conn):
    """The desired address space from the module's fields or ``definition``;
    type and plan default to what the ledger, then the connection file, say."""
    name = params["name"]
    fields = dict((k, params.get(k)) for k in SPACE_FIELDS if params.get(k) is not None)
    if params.get("definition") is not None:
        if fields:
            raise ConfigError("use either definition or the fields %s, not both" % ", ".join(sorted(fields)))
        errs = space_params_errors(params)
        if errs:
            raise ValidationError(errs)
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
