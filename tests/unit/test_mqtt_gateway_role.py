# -*- coding: utf-8 -*-
"""The mqtt_gateway role's filter: the table file is mapping.gateway_table of
the space's addresses, given as in address_spaces or as a mapping."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.filter import mqtt as flt
from ansible_collections.enmasse.messaging.plugins.module_utils.mqtt import mapping

pytestmark = pytest.mark.unit


ADDRESSES = [
    {"address": "greetings", "type": "anycast", "plan": "standard-small-anycast"},
    {"address": "events", "type": "topic", "plan": "standard-small-topic"},
    {"address": "events::audit", "type": "subscription", "topic": "events"},
]


def test_table_is_the_mapping_of_the_address_list():
    table = flt.mqtt_gateway_table(ADDRESSES, "tenant-a")
    assert table == mapping.gateway_table("tenant-a", {a["address"]: a["type"] for a in ADDRESSES})
    # a subscription T::N has no MQTT topic: not in the table
    assert table["addresses"] == {"events": "topic", "greetings": "anycast"}
    assert table["space"] == "tenant-a"


def test_table_from_a_mapping():
    assert flt.mqtt_gateway_table({"a": "queue"}, "s")["addresses"] == {"a": "queue"}


@pytest.mark.parametrize("addresses, space, needle", [
    ("greetings", "s", "addresses: str must be a list"),
    ([{"address": "a"}], "s", "addresses[0]"),
    ([], "", "space: '' must be a non-empty string"),
])
def test_bad_input_names_the_field(addresses, space, needle):
    with pytest.raises(AnsibleFilterError) as e:
        flt.mqtt_gateway_table(addresses, space)
    assert needle in str(e.value)


# ------------------------------------------------------------ mqtt_served_spaces
def test_served_spaces_default_every_standard_space_on_8883():
    assert flt.mqtt_served_spaces(None, ["a", "b"]) == [
        {"name": "a", "tls_port": 8883, "plain_port": 0}, {"name": "b", "tls_port": 8883, "plain_port": 0}]


def test_served_spaces_default_tls_port_is_the_roles():
    import os
    import yaml
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "roles", "mqtt_gateway", "defaults", "main.yml")) as f:
        assert yaml.safe_load(f)["mqtt_gateway_tls_port"] == flt.DEFAULT_TLS_PORT


def test_served_spaces_fill_ports_and_keep_other_keys():
    served = [{"name": "a", "plain_port": "1883", "metrics_port": 9500}, {"name": "x", "tls_port": 0}]
    assert flt.mqtt_served_spaces(served, ["a"], 8884) == [
        {"name": "a", "tls_port": 8884, "plain_port": 1883, "metrics_port": 9500},
        {"name": "x", "tls_port": 0, "plain_port": 0}]
    assert [s["name"] for s in flt.mqtt_served_spaces(served, ["a"], known_only=True)] == ["a"]


@pytest.mark.parametrize("served, names, needle", [
    ("a", ["a"], "mqtt_gateway_served_spaces: 'a' must be a list"),
    ([{"tls_port": 1}], ["a"], "mqtt_gateway_served_spaces[0]: {'tls_port': 1} must be a mapping with the string name"),
    ([{"name": "a", "tls_port": "x"}], ["a"], "mqtt_gateway_served_spaces[0].tls_port: 'x' must be a port number"),
    (None, "a", "standard_names: 'a' must be a list"),
])
def test_served_spaces_bad_input_names_the_field(served, names, needle):
    with pytest.raises(AnsibleFilterError) as e:
        flt.mqtt_served_spaces(served, names)
    assert needle in str(e.value)
