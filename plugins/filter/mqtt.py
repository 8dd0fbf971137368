# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the mqtt_gateway role.

* ``mqtt_gateway_table``: the table file the gateway of a standard space
  reads (``table_file``), made by ``module_utils.mqtt.mapping.gateway_table``
  (the one implementation of the MQTT rules) from the space's addresses.
* ``mqtt_served_spaces``: what one host of the group ``mqtt_gateways``
  serves (its ``mqtt_gateway_served_spaces``, default every standard space)
  with the ports filled in (``tls_port`` default ``mqtt_gateway_tls_port``,
  else 8883; ``plain_port`` default 0): the one rule site.yml's gateway
  play, playbooks/vars/mqtt.yml (the spaces' MQTT endpoints) and
  playbooks/inputs.yml (the ports a container publishes) share.

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


# the mqtt_gateway role's default mqtt_gateway_tls_port (a unit test holds them equal)
DEFAULT_TLS_PORT = 8883


def mqtt_served_spaces(served, standard_names, tls_port=None, known_only=False):
    """``[{name, tls_port, plain_port, ...}]`` one gateway host serves:
    ``served`` (its ``mqtt_gateway_served_spaces``; ``None``: one entry per
    name of ``standard_names``) with ``tls_port`` (default ``tls_port``, the
    host's ``mqtt_gateway_tls_port``, else 8883) and ``plain_port`` (default
    0) as integers; other keys are kept. ``known_only``: without the names
    not in ``standard_names`` (site.yml's gateway play keeps them to refuse
    them by name)."""
    if not isinstance(standard_names, (list, tuple)) or not all(isinstance(n, str) for n in standard_names):
        raise AnsibleFilterError("mqtt_served_spaces: standard_names: %s must be a list of space names"
                                 % fmt(standard_names))
    if served is None:
        served = [{"name": n} for n in standard_names]
    if not isinstance(served, (list, tuple)):
        raise AnsibleFilterError("mqtt_served_spaces: mqtt_gateway_served_spaces: %s must be a list of "
                                 "{name, tls_port?, plain_port?, metrics_port?}" % fmt(served))
    default_tls = DEFAULT_TLS_PORT if tls_port is None else tls_port
    out = []
    for i, s in enumerate(served):
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            raise AnsibleFilterError("mqtt_served_spaces: mqtt_gateway_served_spaces[%d]: %s must be a mapping "
                                     "with the string name" % (i, fmt(s)))
        if known_only and s["name"] not in standard_names:
            continue
        entry = dict(s)
        for key, dflt in (("tls_port", default_tls), ("plain_port", 0)):
            value = entry.get(key, dflt)
            try:
                entry[key] = int(value)
            except (TypeError, ValueError):
                raise AnsibleFilterError("mqtt_served_spaces: mqtt_gateway_served_spaces[%d].%s: %s must be a "
                                         "port number" % (i, key, fmt(value)))
        out.append(entry)
    return out


class FilterModule(object):
    """enmasse.messaging MQTT gateway filters."""

    def filters(self):
        return {"mqtt_gateway_table": mqtt_gateway_table, "mqtt_served_spaces": mqtt_served_spaces}
