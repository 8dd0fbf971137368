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
