"""Plan catalogue: defaults, user plans, EnMasse documents, effective settings."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils import errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model import example_plans, plan_documents
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as model_plans


def test_default_catalogue_is_enmasse_example_plans_plus_one_documented_addition():
    cat = model_plans.Catalogue.default()
    assert cat.address_space_plan_names() == ["brokered-single-broker", "standard-medium", "standard-small",
                                              "standard-unlimited"]
    # EnMasse 0.33's credits, unchanged
    assert cat.address_plan("standard-small-queue")["resources"] == {"router": 0.001, "broker": 0.01}
    assert cat.address_plan("standard-medium-queue")["resources"] == {"router": 0.01, "broker": 0.1}
    assert cat.address_plan("standard-large-queue")["resources"] == {"router": 0.1, "broker": 1.0}
    assert cat.address_plan("standard-xlarge-queue")["resources"] == {"router": 0.2, "broker": 2.0}
    assert cat.address_plan("standard-large-partitioned-queue")["partitions"] == 3
    assert cat.address_plan("standard-small-anycast")["resources"] == {"router": 0.001}
    assert cat.address_plan("brokered-queue")["resources"] == {"broker": 0.0}
    assert cat.address_plan("brokered-deadletter")["resources"] == {}
    assert cat.address_space_plan("brokered-single-broker")["resource_limits"] == {"broker": 1.9}
    limits = cat.address_space_plan("standard-small")["resource_limits"]
    assert limits == {"router": 1.0, "broker": 1.0, "aggregate": 2.0}
    assert cat.address_space_plan("standard-small")["infra_config_ref"] == "default-minimal"
    # EnMasse's AddressPlans carry no address space type
    assert all("address_space_type" not in cat.address_plan(n) for n in model_plans.EXAMPLE_ADDRESS_PLAN_NAMES)
    # the one addition is not an EnMasse plan, and is listed by the brokered plan
    extra = set(cat.address_plan_names()) - set(model_plans.EXAMPLE_ADDRESS_PLAN_NAMES)
    assert extra == {"brokered-subscription"}
    assert "enmasse.messaging" in cat.address_plan("brokered-subscription")["long_description"]
    assert cat.address_space_plan("brokered-single-broker")["address_plans"] == [
        "brokered-queue", "brokered-topic", "brokered-deadletter", "brokered-subscription"]
    assert cat.integrity_errors() == []
    assert len([d for d in example_plans.EXAMPLE_DOCUMENTS if d["kind"] == "AddressPlan"]) == 24


def test_plans_read_as_enmasse_ships_them_and_written_back_the_same():
    for doc in example_plans.EXAMPLE_DOCUMENTS:
        if doc["kind"] not in ("AddressPlan", "AddressSpacePlan"):
            continue
        read = model_plans.read_address_plan if doc["kind"] == "AddressPlan" else model_plans.read_space_plan
        write = plan_documents.address_plan_document if doc["kind"] == "AddressPlan" else \
            plan_documents.space_plan_document
        plan, errs = read(doc)
        assert errs == [], (doc["metadata"]["name"], errs)
        again = write(plan, labels={"app": "enmasse"})
        assert again["spec"].items() >= doc["spec"].items()


def test_user_plans_merge_over_defaults_and_accept_enmasse_documents():
    cat = model_plans.Catalogue.from_data({
        "address_space_plans": [{"name": "bench", "address_space_type": "brokered",
                                 "resource_limits": {"broker": 1000.0}, "address_plans": ["tiny"]}],
        "address_plans": [{"apiVersion": "admin.enmasse.io/v1beta2", "kind": "AddressPlan",
                           "metadata": {"name": "tiny", "labels": {"x": "y"}, "uid": "1"},
                           "spec": {"addressType": "queue", "resources": {"broker": 0.0001},
                                    "messageRedelivery": {"maximumDeliveryAttempts": 5}},
                           "status": {"phase": "Active"}}]})
    assert cat.address_space_plan("bench")["resource_limits"] == {"broker": 1000.0}
    tiny = cat.address_plan("tiny")
    assert tiny["resources"] == {"broker": 0.0001} and tiny["partitions"] == 1
    assert tiny["message_redelivery"] == {"maximum_delivery_attempts": 5}
    assert cat.address_plan("brokered-queue")  # defaults still there


def test_legacy_v1beta1_documents():
    plan, errs = model_plans.read_address_plan({
        "apiVersion": "admin.enmasse.io/v1beta1", "kind": "AddressPlan", "metadata": {"name": "old-q"},
        "addressType": "queue", "displayName": "Old",
        "requiredResources": [{"name": "broker", "credit": 0.2}, {"name": "router", "credit": 0.02}]})
    assert errs == [] and plan["resources"] == {"broker": 0.2, "router": 0.02}
    plan, errs = model_plans.read_space_plan({
        "apiVersion": "admin.enmasse.io/v1alpha1", "kind": "AddressSpacePlan", "metadata": {"name": "old"},
        "addressSpaceType": "brokered", "addressPlans": ["old-q"], "resources": [{"name": "broker", "max": 2.0}]})
    assert errs == [] and plan["resource_limits"] == {"broker": 2.0}


@pytest.mark.parametrize("doc, message", [
    ({"apiVersion": "admin.enmasse.io/v1beta2", "kind": "Address", "metadata": {"name": "x"}},
     "definition.kind: 'Address' is not accepted here: this takes an EnMasse AddressPlan"),
    ({"apiVersion": "enmasse.io/v1beta1", "kind": "AddressPlan", "metadata": {"name": "x"}, "spec": {}},
     "definition.apiVersion: 'enmasse.io/v1beta1' is not a version EnMasse serves for AddressPlan"),
    ({"apiVersion": "admin.enmasse.io/v1beta2", "kind": "AddressPlan", "metadata": {"name": "x"},
      "spec": {"addressType": "queue", "messageTtl": {"minimim": 5}}},
     "definition.message_ttl.minimim: unknown field (did you mean 'minimum'?)"),
    ({"apiVersion": "admin.enmasse.io/v1beta2", "kind": "AddressPlan", "metadata": {"name": "x"},
      "spec": {"adressType": "queue"}},
     "definition.spec.adressType: unknown field (did you mean 'addressType'?)"),
    ({"apiVersion": "admin.enmasse.io/v1beta2", "kind": "AddressPlan", "metadata": {"name": "Bad_Name"},
      "spec": {"addressType": "queue"}},
     "definition.name: 'Bad_Name' must be a Kubernetes object name"),
])
def test_plan_documents_are_checked(doc, message):
    unused, errs = model_plans.read_address_plan(doc, "definition")
    assert any(message in e for e in errs), errs


def test_bad_user_plans_are_refused_with_every_problem():
    with pytest.raises(errors.PlanError) as ei:
        model_plans.Catalogue.from_data({"address_plans": [
            {"name": "x", "address_space_type": "brokered", "address_type": "anycast",
             "resources": {"broker": -1, "disk": 1}, "partitions": 0}]})
    msg = str(ei.value)
    assert "plans.address_plans[0].address_type: 'anycast' must be one of queue, topic" in msg
    assert "plans.address_plans[0].resources.broker: -1 must be a number >= 0" in msg
    assert "plans.address_plans[0].resources.disk: unknown resource" in msg
    assert "plans.address_plans[0].partitions: 0 must be an integer from 1 to 1000" in msg


def test_space_plans_must_reference_known_plans_of_their_type():
    with pytest.raises(errors.PlanError) as ei:
        model_plans.Catalogue.from_data({"address_space_plans": [
            {"name": "mixed", "address_space_type": "brokered", "infra_config_ref": "nope",
             "address_plans": ["standard-small-anycast", "ghost"]}]})
    msg = str(ei.value)
    assert "'standard-small-anycast' is a plan for anycast addresses, which brokered address spaces do not have" in msg
    assert "'ghost' is not a known address plan" in msg
    assert "infra_config_ref: 'nope' is not a known BrokeredInfraConfig (known: default)" in msg


@pytest.mark.parametrize("ttl, message", [
    ({"maximum": 10 ** 20}, "from 1 to 9223372036854775807"),
    ({"maximum": 0}, "from 1 to 9223372036854775807"),
    ({"maximum": 1e20}, "must be an integer"),
    ({"minimum": True}, "must be an integer"),
    ({"minimum": 1.5}, "must be an integer"),
])
def test_ttl_bounds_are_what_the_broker_stores(ttl, message):
    errs = model_plans.validate_ttl(ttl, "message_ttl")
    assert len(errs) == 1 and message in errs[0], errs


@pytest.mark.parametrize("red, message", [
    ({"maximum_delivery_attempts": 2 ** 31}, "from 1 to 2147483647, or -1 for unlimited"),
    ({"maximum_delivery_attempts": 0}, "or -1 for unlimited"),
    ({"redelivery_delay": 2 ** 63}, "from 0 to 9223372036854775807"),
    ({"redelivery_delay_multiplier": float("inf")}, "must be a finite number >= 1"),
    ({"redelivery_delay_multiplier": 0.5}, "must be a finite number >= 1"),
])
def test_redelivery_bounds(red, message):
    errs = model_plans.validate_redelivery(red, "message_redelivery")
    assert len(errs) == 1 and message in errs[0], errs


def test_address_ttl_narrows_the_plan_bounds_as_in_enmasse():
    plan = {"message_ttl": {"minimum": 1000, "maximum": 5000}}
    # the example: 500..60000 on a 1000..5000 plan stays 1000..5000
    assert model_plans.effective_settings({"message_ttl": {"minimum": 500, "maximum": 60000}}, plan) == {
        "message_ttl": {"minimum": 1000, "maximum": 5000}}
    assert model_plans.effective_settings({"message_ttl": {"minimum": 2000, "maximum": 3000}}, plan) == {
        "message_ttl": {"minimum": 2000, "maximum": 3000}}
    assert model_plans.effective_settings({"message_ttl": {"maximum": 3000}}, {}) == {
        "message_ttl": {"maximum": 3000}}
    assert model_plans.ttl_conflict({"minimum": 6000}, plan["message_ttl"]).startswith(
        "{'minimum': 6000} does not overlap the bounds of its plan")


def test_effective_settings_redelivery_address_values_replace_the_plan_values():
    plan = {"message_redelivery": {"maximum_delivery_attempts": 10, "redelivery_delay": 5}}
    addr = {"address": "q", "message_redelivery": {"maximum_delivery_attempts": 3}, "deadletter": "dlq"}
    assert model_plans.effective_settings(addr, plan) == {
        "message_redelivery": {"maximum_delivery_attempts": 3, "redelivery_delay": 5},
        "deadletter": "dlq"}
    assert model_plans.effective_settings({"address": "q"}, {}) == {}
