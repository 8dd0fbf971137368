# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the mqtt_gateway role.

* ``mqtt_gateway_table``: the table file the gateway of a standard space
  reads (``table_file``), made by ``module_utils.mqtt.mapping.gateway_table``
  (the one implementation of the MQTT rules) from the space's addresses.

The documentation of each filter is in the sidecar ``<filter>.yml`` beside
this file (``ansible-doc -t filter enmasse.messaging.<filter>``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt
from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping


def _address_types(addresses, where):
    """``{address: type}`` from a mapping or from the address list of an
    address space (``[{address, type, ...}]``)."""
    if isinstance(addresses, dict):
        return dict(addresses)
    if not isinstance(addresses, (list, tuple)):
        raise AnsibleFilterError("mqtt_gateway_table: %s: %s must be a list of {address, type} or a mapping "
                                 "address -> type" % (where, type(addresses).__name__))
    out = {}
    for i, a in enumerate(addresses):
        if not isinstance(a, dict) or not isinstance(a.get("address"), str) or not isinstance(a.get("type"), str):
            raise AnsibleFilterError("mqtt_gateway_table: %s[%d]: %s must be a mapping with the strings "
                                     "address and type" % (where, i, fmt(a)))
        out[a["address"]] = a["type"]
    return out


def mqtt_gateway_table(addresses, space):
    """The gateway table of ``space`` (mapping.gateway_table)."""
    if not isinstance(space, str) or not space:
        raise AnsibleFilterError("mqtt_gateway_table: space: %s must be a non-empty string" % fmt(space))
    return mapping.gateway_table(space, _address_types(addresses, "addresses"))


class FilterModule(object):
    """enmasse.messaging MQTT gateway filters."""

    def filters(self):
        return {"mqtt_gateway_table": mqtt_gateway_table}
