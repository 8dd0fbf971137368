"""Plan catalogue: defaults, user plans, EnMasse documents, effective settings."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils import errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as model_plans


def test_default_catalogue_has_the_example_plans():
    cat = model_plans.Catalogue.default()
    for name in ("standard-small", "standard-medium", "standard-large", "brokered-single-broker"):
        assert cat.address_space_plan(name)
    for name in ("standard-small-queue", "standard-medium-queue", "standard-large-queue",
                 "standard-xlarge-queue", "standard-small-partitioned-queue", "standard-small-anycast",
                 "brokered-queue", "brokered-topic", "brokered-subscription", "brokered-deadletter"):
        assert cat.address_plan(name), name
    assert cat.address_plan("standard-small-queue")["resources"] == {"router": 0.001, "broker": 0.01}
    assert cat.address_plan("standard-medium-queue")["resources"] == {"router": 0.01, "broker": 0.1}
    assert cat.address_plan("standard-large-queue")["resources"] == {"router": 0.1, "broker": 1.0}
    assert cat.address_plan("standard-small-anycast")["resources"] == {"router": 0.001, "broker": 0.0}
    # every address plan a space plan lists exists and has the space plan's type
    for sp in cat.as_dict()["address_space_plans"]:
        for ap in sp["address_plans"]:
            assert cat.address_plan(ap)["address_space_type"] == sp["address_space_type"]


def test_user_plans_merge_over_defaults_and_accept_enmasse_documents():
    cat = model_plans.Catalogue.from_data({
        "address_space_plans": [{"name": "bench", "address_space_type": "brokered",
                                 "resource_limits": {"broker": 1000.0}, "address_plans": ["tiny"]}],
        "address_plans": [{"apiVersion": "admin.enmasse.io/v1beta2", "kind": "AddressPlan",
                           "metadata": {"name": "tiny"},
                           "spec": {"addressType": "queue", "addressSpaceType": "brokered",
                                    "resources": {"broker": 0.0001},
                                    "messageRedelivery": {"maximumDeliveryAttempts": 5}}}]})
    assert cat.address_space_plan("bench")["resource_limits"] == {"broker": 1000.0}
    tiny = cat.address_plan("tiny")
    assert tiny["resources"] == {"broker": 0.0001} and tiny["partitions"] == 1
    assert tiny["message_redelivery"] == {"maximum_delivery_attempts": 5}
    assert cat.address_plan("brokered-queue")  # defaults still there


def test_bad_user_plans_are_refused_with_every_problem():
    with pytest.raises(errors.PlanError) as ei:
        model_plans.Catalogue.from_data({"address_plans": [
            {"name": "x", "address_space_type": "brokered", "address_type": "anycast",
             "resources": {"broker": -1, "disk": 1}, "partitions": 0}]})
    msg = str(ei.value)
    assert "plans.address_plans[0].address_type: 'anycast' must be one of queue, topic" in msg
    assert "plans.address_plans[0].resources.broker: -1 must be a number >= 0" in msg
    assert "plans.address_plans[0].resources.disk: unknown resource" in msg
    assert "plans.address_plans[0].partitions: 0 must be an integer >= 1" in msg


def test_effective_settings_address_overrides_plan():
    plan = {"message_ttl": {"minimum": 10, "maximum": 1000},
            "message_redelivery": {"maximum_delivery_attempts": 10, "redelivery_delay": 5}}
    addr = {"address": "q", "message_ttl": {"maximum": 500},
            "message_redelivery": {"maximum_delivery_attempts": 3}, "deadletter": "dlq"}
    assert model_plans.effective_settings(addr, plan) == {
        "message_ttl": {"minimum": 10, "maximum": 500},
        "message_redelivery": {"maximum_delivery_attempts": 3, "redelivery_delay": 5},
        "deadletter": "dlq"}
    assert model_plans.effective_settings({"address": "q"}, {}) == {}
