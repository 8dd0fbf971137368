"""EnMasse 0.33 compatibility: every row of docs/enmasse-compatibility.md is
backed by a test here (or by an integration test it names). Each test reads an
EnMasse document through the model functions the modules use and asserts the
plain value or the refusal the page documents."""
import ast
import os
import re

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.model import requests as model_requests
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import service as artemis_service
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import settings as artemis_settings
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import PlanError
from ansible_collections.enmasse.messaging.plugins.module_utils.input_files import address_list
from ansible_collections.enmasse.messaging.plugins.module_utils.model import inputs
from ansible_collections.enmasse.messaging.plugins.module_utils.model import names
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGE = os.path.join(ROOT, "docs", "enmasse-compatibility.md")
V1 = "enmasse.io/v1beta1"
ADMIN = "admin.enmasse.io/v1beta2"
SPACE = {"name": "shop", "type": "brokered", "plan": "brokered-single-broker"}
CAT = plans.Catalogue.default()


# ------------------------------------------------------------------ helpers

def address_doc(name="shop.orders", metadata=None, **spec):
    full = {"address": "orders", "type": "queue", "plan": "brokered-queue"}
    full.update(spec)
    meta = {"name": name}
    meta.update(metadata or {})
    return {"apiVersion": V1, "kind": "Address", "metadata": meta, "spec": full}


def read_address(doc):
    """(plain addresses, errors) as the address module reads ``definition``."""
    present, unused, errs, unused_positions = inputs.address_inputs({"definition": doc}, "shop")
    return present, errs


def one_address(doc):
    present, errs = read_address(doc)
    assert errs == []
    assert len(present) == 1
    return present[0]


def rules(addresses, catalogue=CAT):
    """The model's rules (types, plans, references, quota) for a brokered space."""
    return validation.validate_addresses(SPACE, addresses, catalogue)


def space_doc(metadata=None, **spec):
    full = {"type": "brokered", "plan": "brokered-single-broker"}
    full.update(spec)
    meta = {"name": "shop"}
    meta.update(metadata or {})
    return {"apiVersion": V1, "kind": "AddressSpace", "metadata": meta, "spec": full}


def space_errors(doc):
    return inputs.space_params_errors({"name": "shop", "definition": doc})


def read_space(doc):
    assert space_errors(doc) == []
    return inputs.space_input({"name": "shop", "definition": doc}, None, {})


def plan_doc(name="p", api=ADMIN, **spec):
    full = {"addressType": "queue", "resources": {"broker": 0.01}}
    full.update(spec)
    return {"apiVersion": api, "kind": "AddressPlan", "metadata": {"name": name}, "spec": full}


def space_plan_doc(name="sp", api=ADMIN, **spec):
    full = {"addressSpaceType": "brokered", "infraConfigRef": "default", "resourceLimits": {"broker": 1.0},
            "addressPlans": ["brokered-queue"]}
    full.update(spec)
    return {"apiVersion": api, "kind": "AddressSpacePlan", "metadata": {"name": name}, "spec": full}


def joined(errs):
    return "\n".join(errs)


# ------------------------------------------------------------------ apiVersion / kind

@pytest.mark.parametrize("kind", ["Address", "AddressSpace", "AddressList"])
def test_document_api_version_is_checked(kind):
    doc = {"apiVersion": "enmasse.io/v1alpha1", "kind": kind, "metadata": {"name": "shop"}, "spec": {}, "items": []}
    if kind == "AddressSpace":
        errs = space_errors(doc)
    else:
        errs = read_address(doc)[1]
    assert "apiVersion: 'enmasse.io/v1alpha1' is not accepted for kind %s: use enmasse.io/v1beta1" % kind in joined(errs)


def test_document_wrong_kind_is_one_message():
    errs = read_address(dict(address_doc(), kind="Queue"))[1]
    assert errs == ["definition.kind: 'Queue' is not accepted here: this module takes an EnMasse Address "
                    "(enmasse.io/v1beta1)"]
    assert "takes an EnMasse AddressSpace" in joined(space_errors(dict(space_doc(), kind="Address")))


@pytest.mark.parametrize("api", ["admin.enmasse.io/v1beta2", "admin.enmasse.io/v1beta1", "admin.enmasse.io/v1alpha1"])
def test_plan_api_versions_are_all_served(api):
    if api == ADMIN:
        doc = plan_doc(api=api)
    else:
        doc = {"apiVersion": api, "kind": "AddressPlan", "metadata": {"name": "p"}, "addressType": "queue",
               "requiredResources": [{"name": "broker", "credit": 0.01}]}
    plan, errs = plans.read_address_plan(doc)
    assert errs == []
    assert plan["address_type"] == "queue" and plan["resources"] == {"broker": 0.01}
    unused, errs = plans.read_address_plan(dict(doc, apiVersion="admin.enmasse.io/v2"))
    assert "is not a version EnMasse serves for AddressPlan" in joined(errs)
    unused, errs = plans.read_address_plan(dict(doc, kind="AddressSpacePlan"))
    assert "takes an EnMasse AddressPlan" in joined(errs)


# ------------------------------------------------------------------ unknown fields

@pytest.mark.parametrize("path, typo, suggestion", [
    ("spec", "dedletter", "deadletter"),
    ("spec.messageTtl", "minimim", "minimum"),
    ("spec.messageRedelivery", "maximumDeliveryAttempt", "maximumDeliveryAttempts"),
    ("spec.subscription", "maxConsumer", "maxConsumers"),
])
def test_unknown_address_field_is_refused_with_nearest(path, typo, suggestion):
    doc = address_doc(messageTtl={}, messageRedelivery={})
    target = doc["spec"] if path == "spec" else doc["spec"].setdefault(path.split(".")[1], {})
    target[typo] = 1
    errs = read_address(doc)[1]
    assert "definition.%s.%s: unknown field (did you mean '%s'?)" % (path, typo, suggestion) in joined(errs)


def test_unknown_plan_and_space_fields_are_refused_with_nearest():
    unused, errs = plans.read_address_plan(plan_doc(adressType="queue"))
    assert "spec.adressType" in joined(errs) and "addressType" in joined(errs)
    unused, errs = plans.read_space_plan(space_plan_doc(infraConfigRf="default"))
    assert "spec.infraConfigRf" in joined(errs) and "infraConfigRef" in joined(errs)
    assert "definition.spec.plans: unknown field (did you mean 'plan'?)" in joined(space_errors(space_doc(plans="x")))


# ------------------------------------------------------------------ AddressSpace

def test_space_metadata_name():
    assert read_space(space_doc())["name"] == "shop"
    errs = space_errors(space_doc(metadata={"name": "other"}))
    assert "definition.metadata.name: 'other' does not match name 'shop'" in joined(errs)


def test_space_metadata_ignored():
    meta = {"namespace": "ns", "uid": "u", "resourceVersion": "1", "labels": {"a": "b"}, "annotations": {"x": "y"},
            "creationTimestamp": "2020-01-01T00:00:00Z", "generation": 3}
    assert read_space(space_doc(metadata=meta)) == {"name": "shop", "type": "brokered", "plan": "brokered-single-broker"}


def test_space_spec_type(tmp_path):
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import backend as standard_service
    assert read_space(space_doc())["type"] == "brokered"
    assert validation.validate_address_space(read_space(space_doc(type="standard", plan="standard-small")), CAT) == []
    # type standard goes to the standard backend (routers + broker pool); brokered to the broker
    params = {"connection_file": str(tmp_path / "none.json"), "infrastructure_file": str(tmp_path / "none.yml")}
    assert standard_service.is_standard(params, "shop", "standard") is True
    assert standard_service.is_standard(params, "shop", "brokered") is False
    # a brokered space's broker does not serve it: the message says where standard spaces run
    msg = artemis_service.not_supported("standard")
    assert "not yet" not in msg and "enmasse.messaging.standard role" in msg and "docs/standard-spaces.md" in msg
    assert artemis_service.not_supported("brokered") is None


STALE_STANDARD = re.compile(r"standard[^.|]*(not yet supported|not yet implemented|not implemented)"
                            r"|(not yet supported|not yet implemented)[^.|]*standard"
                            r"|only C\(brokered\)|only `brokered`", re.IGNORECASE)


def test_no_doc_says_standard_spaces_are_not_supported():
    """Standard spaces are implemented: no page of docs/, README and no
    module's documentation says otherwise."""
    places = [os.path.join(ROOT, "README.md")]
    places += [os.path.join(ROOT, "docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs"))) if f.endswith(".md")]
    mods = os.path.join(ROOT, "plugins", "modules")
    places += [os.path.join(mods, f) for f in sorted(os.listdir(mods)) if f.endswith(".py")]
    stale = []
    for path in places:
        with open(path) as f:
            text = f.read()
        if path.endswith(".py"):
            text = [n.value.value for n in ast.parse(text).body if isinstance(n, ast.Assign)
                    and getattr(n.targets[0], "id", None) == "DOCUMENTATION"][0]
        text = re.sub(r"\s+", " ", text)
        stale.extend("%s: ...%s..." % (os.path.relpath(path, ROOT), m.group(0)) for m in STALE_STANDARD.finditer(text))
    assert stale == [], "\n".join(stale)
    errs = validation.validate_address_space(dict(read_space(space_doc()), type="hybrid"), CAT)
    assert "address_space.type: 'hybrid' must be one of standard, brokered" in joined(errs)


def test_space_spec_plan():
    assert read_space(space_doc())["plan"] == "brokered-single-broker"
    errs = validation.validate_address_space(read_space(space_doc(plan="nope")), CAT)
    assert "address_space.plan: 'nope' is not a known address space plan" in joined(errs)
    errs = validation.validate_address_space(read_space(space_doc(plan="standard-small")), CAT)
    assert "is a plan for standard address spaces, not brokered" in joined(errs)


def test_space_spec_authenticationService():
    auth = {"name": "none-authservice", "type": "none"}
    assert read_space(space_doc(authenticationService=auth))["authentication_service"] == auth
    bad = read_space(space_doc(authenticationService={"name": "a", "type": "keycloak"}))
    assert "authentication_service.type: 'keycloak' must be one of none, standard, external" in \
        joined(validation.validate_address_space(bad, CAT))
    errs = space_errors(space_doc(authenticationService={"nam": "x"}))
    assert "authenticationService.nam: unknown field (did you mean 'name'?)" in joined(errs)


def test_space_spec_authenticationService_overrides():
    auth = {"name": "ext", "type": "external", "overrides": {"host": "h", "port": 5671, "realm": "r"}}
    space = read_space(space_doc(authenticationService=auth))
    assert space["authentication_service"] == auth
    assert validation.validate_address_space(space, CAT) == []


def test_space_spec_endpoints():
    eps = [{"name": "messaging", "service": "messaging", "cert": {"provider": "selfsigned"},
            "expose": {"type": "route", "routeServicePort": "amqps", "routeTlsTermination": "passthrough"}}]
    space = read_space(space_doc(endpoints=eps))
    assert space["endpoints"] == eps
    assert validation.validate_address_space(space, CAT) == []
    errs = validation.validate_address_space(dict(space, endpoints=[{"service": "mqtt"}]), CAT)
    assert "address_space.endpoints[0]: {'service': 'mqtt'} must be a mapping with a name" in joined(errs)


@pytest.mark.parametrize("field", ["networkPolicy", "connectors"])
def test_space_spec_unsupported(field):
    errs = space_errors(space_doc(**{field: [] if field == "connectors" else {"ingress": []}}))
    assert errs == ["definition.spec.%s: not supported by this collection (EnMasse's %s is not implemented)"
                    % (field, field)]


def test_space_status_ignored():
    doc = dict(space_doc(), status={"isReady": True, "phase": "Active", "messages": [], "caCert": "x"})
    assert "status" not in read_space(doc)


# ------------------------------------------------------------------ Address

def test_address_metadata_name():
    assert one_address(address_doc())["name"] == "orders"
    assert "belongs to address space 'other', not 'shop'" in joined(read_address(address_doc(name="other.orders"))[1])
    assert "must be <address space>.<name>" in joined(read_address(address_doc(name="orders"))[1])
    assert "must be a Kubernetes name" in joined(read_address(address_doc(name="shop.Orders"))[1])


def test_address_metadata_ignored():
    meta = {"namespace": "ns", "uid": "u", "labels": {"a": "b"}, "annotations": {"x": "y"}, "resourceVersion": "7"}
    assert one_address(address_doc(metadata=meta)) == {"address": "orders", "type": "queue", "plan": "brokered-queue",
                                                       "name": "orders", "address_space": "shop"}
    assert "definition.metadata.nmae: unknown field" in joined(read_address(address_doc(metadata={"nmae": "x"}))[1])


def test_address_spec_address():
    assert one_address(address_doc(address="events/eu/orders"))["address"] == "events/eu/orders"
    for bad, msg in (("my queue", "must not contain whitespace"), ("_!x", "must not start with '_!' or '!!'"),
                     ("!!x", "must not start with '_!' or '!!'"), ("a::b", "must not contain '::'")):
        assert msg in joined(rules([one_address(address_doc(address=bad))]))


def test_address_spec_type():
    for atype, plan in (("queue", "brokered-queue"), ("topic", "brokered-topic"), ("deadletter", "brokered-deadletter")):
        assert rules([one_address(address_doc(type=atype, plan=plan))]) == []
    errs = rules([one_address(address_doc(type="anycast", plan="standard-small-anycast"))])
    assert "must be one of queue, topic, subscription, deadletter for a brokered address space" in joined(errs)


def test_address_spec_plan():
    assert one_address(address_doc())["plan"] == "brokered-queue"
    assert "is not a known address plan" in joined(rules([one_address(address_doc(plan="nope"))]))
    assert "is a plan for topic addresses, not queue" in joined(rules([one_address(address_doc(plan="brokered-topic"))]))
    errs = rules([one_address(address_doc(plan="standard-small-queue"))])
    assert "is not allowed by address space plan 'brokered-single-broker'" in joined(errs)


def test_address_spec_topic():
    topic = one_address(address_doc(name="shop.events", address="events", type="topic", plan="brokered-topic"))
    sub = one_address(address_doc(name="shop.s1", address="s1", type="subscription", plan="brokered-subscription",
                                  topic="events"))
    assert sub["topic"] == "events"
    assert rules([topic, sub]) == []
    assert "must name an address of type topic" in joined(rules([dict(sub, topic="nope")]))
    assert "is only allowed on subscription addresses" in joined(rules([one_address(address_doc(topic="events"))]))


def test_address_spec_subscription_maxConsumers():
    sub = one_address(address_doc(name="shop.s1", address="s1", type="subscription", plan="brokered-subscription",
                                  topic="events", subscription={"maxConsumers": 3}))
    assert sub["subscription"] == {"max_consumers": 3}
    default = dict(sub)
    del default["subscription"]
    assert artemis_settings.clean_address(default)["subscription"] == {"max_consumers": 1}
    errs = read_address(address_doc(type="subscription", subscription={"maxConsumers": 0}))[1]
    assert "subscription.max_consumers: 0" in joined(errs)


@pytest.mark.parametrize("field", ["deadletter", "expiry"])
def test_address_spec_deadletter_expiry(field):
    dlq = one_address(address_doc(name="shop.dlq", address="dlq", type="deadletter", plan="brokered-deadletter"))
    q = one_address(address_doc(**{field: "dlq"}))
    assert q[field] == "dlq"
    assert rules([dlq, q]) == []
    assert plans.effective_settings(q, {})[field] == "dlq"
    assert "must name an address of type deadletter in this address space" in joined(rules([q]))
    errs = rules([dict(dlq, **{field: "dlq"})])
    assert "is only allowed on queue, topic, subscription addresses" in joined(errs)


def test_address_spec_messageTtl():
    q = one_address(address_doc(messageTtl={"minimum": 1000, "maximum": 60000}))
    assert q["message_ttl"] == {"minimum": 1000, "maximum": 60000}
    assert artemis_settings.artemis_settings(q, CAT) == {"minExpiryDelay": 1000, "maxExpiryDelay": 60000}
    assert "minimum 5 must not be greater than maximum 1" in \
        joined(read_address(address_doc(messageTtl={"minimum": 5, "maximum": 1}))[1])
    assert "messageTtl.minimum: -1" in joined(read_address(address_doc(messageTtl={"minimum": -1}))[1])


def test_address_spec_messageTtl_below_one_is_refused():
    errs = joined(read_address(address_doc(messageTtl={"maximum": 0}))[1])
    assert "messageTtl.maximum: 0 must be an integer number of milliseconds from 1 to" in errs, errs


def test_address_spec_messageTtl_narrows_plan():
    plan = {"message_ttl": {"minimum": 1000, "maximum": 60000}}
    assert plans.effective_ttl({"minimum": 5000, "maximum": 120000}, plan["message_ttl"]) == \
        {"minimum": 5000, "maximum": 60000}
    assert plans.effective_ttl({"minimum": 10, "maximum": 30000}, plan["message_ttl"]) == \
        {"minimum": 1000, "maximum": 30000}
    assert plans.effective_ttl(None, plan["message_ttl"]) == plan["message_ttl"]


def test_address_spec_messageTtl_non_overlapping_refused():
    ttl_plan = plan_doc(name="ttl-queue", messageTtl={"minimum": 1000, "maximum": 60000})
    space_plan = space_plan_doc(name="brokered-single-broker", addressPlans=["ttl-queue"])
    cat = plans.Catalogue.from_data({"address_plans": [ttl_plan], "address_space_plans": [space_plan]})
    q = one_address(address_doc(plan="ttl-queue", messageTtl={"minimum": 120000}))
    errs = rules([q], cat)
    assert "does not overlap the bounds of its plan" in joined(errs)
    assert "effective minimum 120000 would exceed effective maximum 60000" in joined(errs)


@pytest.mark.parametrize("camel, snake, value, artemis", [
    ("maximumDeliveryAttempts", "maximum_delivery_attempts", 3, "maxDeliveryAttempts"),
    ("redeliveryDelay", "redelivery_delay", 0, "redeliveryDelay"),
    ("redeliveryDelayMultiplier", "redelivery_delay_multiplier", 2.0, "redeliveryMultiplier"),
    ("maximumDeliveryDelay", "maximum_delivery_delay", 5000, "maxRedeliveryDelay"),
])
def test_address_spec_messageRedelivery(camel, snake, value, artemis):
    q = one_address(address_doc(messageRedelivery={camel: value}))
    assert q["message_redelivery"] == {snake: value}
    plan = {"message_redelivery": {"maximum_delivery_attempts": 10, "redelivery_delay": 100,
                                   "redelivery_delay_multiplier": 1.5, "maximum_delivery_delay": 60000}}
    eff = plans.effective_settings(q, plan)["message_redelivery"]
    assert eff[snake] == value
    assert all(eff[k] == v for k, v in plan["message_redelivery"].items() if k != snake)
    assert artemis_settings.settings_to_artemis({"message_redelivery": eff})[artemis] == value


def test_address_spec_messageRedelivery_bounds():
    errs = read_address(address_doc(messageRedelivery={"maximumDeliveryAttempts": 0}))[1]
    assert "must be an integer from 1 to 2147483647, or -1 for unlimited" in joined(errs)
    assert one_address(address_doc(messageRedelivery={"maximumDeliveryAttempts": -1}))["message_redelivery"] == \
        {"maximum_delivery_attempts": -1}
    errs = read_address(address_doc(messageRedelivery={"redeliveryDelayMultiplier": 0.5}))[1]
    assert "must be a finite number >= 1" in joined(errs)


def test_address_deadletter_without_attempts_gets_ten_as_in_enmasse():
    q = one_address(address_doc(deadletter="dlq"))
    assert artemis_settings.artemis_settings(q, CAT) == {"deadLetterAddress": "dlq", "maxDeliveryAttempts": 10}
    q = one_address(address_doc(deadletter="dlq", messageRedelivery={"maximumDeliveryAttempts": 3}))
    assert artemis_settings.artemis_settings(q, CAT)["maxDeliveryAttempts"] == 3


def test_address_subscription_has_no_settings_of_its_own():
    sub = one_address(address_doc(name="shop.s1", address="s1", type="subscription", plan="brokered-subscription",
                                  topic="events", messageRedelivery={"redeliveryDelay": 1000}))
    errs = model_requests.subscription_setting_errors([sub])
    assert "is not supported on a subscription in a brokered address space" in joined(errs)
    # messageTtl: queue and topic only (EnMasse), the model's rule
    sub = one_address(address_doc(name="shop.s1", address="s1", type="subscription", plan="brokered-subscription",
                                  topic="events", messageTtl={"maximum": 1000}))
    space = {"name": "shop", "type": "brokered", "plan": "brokered-single-broker"}
    topic = {"address": "events", "type": "topic", "plan": "brokered-topic"}
    errs = validation.validate_addresses(space, [topic, sub], CAT)
    assert "is only allowed on queue, topic addresses" in joined(errs)


def test_address_spec_messageTtl_on_queue_and_topic_only():
    """EnMasse's docs: messageTtl "applies to address types queue and topic
    only"; a deadletter with messageTtl is refused."""
    space = {"name": "shop", "type": "brokered", "plan": "brokered-single-broker"}
    dlq = one_address(address_doc(name="shop.dlq", address="dlq", type="deadletter", plan="brokered-deadletter",
                                  messageTtl={"maximum": 1000}))
    errs = validation.validate_addresses(space, [dlq], CAT)
    assert errs == ["addresses[0](dlq).message_ttl: {'maximum': 1000} is only allowed on queue, topic addresses"]


def test_address_spec_forwarders():
    errs = read_address(address_doc(forwarders=[{"name": "f", "remoteAddress": "c/x", "direction": "out"}]))[1]
    assert errs == ["definition.spec.forwarders: not supported by this collection (EnMasse's forwarders is not "
                    "implemented)"]


def test_address_spec_addressSpace():
    assert one_address(address_doc(addressSpace="shop"))["address_space"] == "shop"
    errs = read_address(address_doc(addressSpace="other"))[1]
    assert "definition.spec.addressSpace: 'other' must be the address space 'shop'" in joined(errs)


def test_address_status_ignored():
    doc = dict(address_doc(), status={"isReady": True, "phase": "Active", "planStatus": {"name": "x", "partitions": 1}})
    assert "status" not in one_address(doc)


# ------------------------------------------------------------------ AddressList

def address_list_doc(*items):
    return {"apiVersion": V1, "kind": "AddressList", "metadata": {"resourceVersion": "1"}, "items": list(items)}


def test_address_list_as_definition():
    lst = address_list_doc(address_doc(), address_doc(name="shop.events", address="events", type="topic",
                                                      plan="brokered-topic"))
    present, errs = read_address(lst)
    assert errs == [] and [a["address"] for a in present] == ["orders", "events"]


def test_address_list_in_bulk_and_src():
    lst = address_list_doc(address_doc())
    for params in ({"addresses": [lst]}, {"addresses": address_list(lst, "f.yml")}):
        present, unused, errs, unused_positions = inputs.address_inputs(params, "shop")
        assert errs == [] and [a["address"] for a in present] == ["orders"]


def test_address_list_items_checked():
    lst = address_list_doc(address_doc(dedletter="x"))
    assert "definition.items[0].spec.dedletter: unknown field" in joined(read_address(lst)[1])
    assert "definition.items: 'x' is a string, it must be a list of Address documents" in \
        joined(read_address(dict(lst, items="x"))[1])
    assert "definition.itemz: unknown field" in joined(read_address(dict(lst, itemz=[]))[1])


# EnMasse's own example, verbatim (EnMasseProject/enmasse,
# documentation/common/standard-addresses.yaml): the items carry no apiVersion
# and no kind
ENMASSE_ADDRESS_LIST_EXAMPLE = """\
apiVersion: enmasse.io/v1beta1
kind: AddressList
items:
- metadata:
    name: myspace.anycast1
  spec:
    address: anycast1
    type: anycast
    plan: standard-small-anycast
- metadata:
    name: myspace.multicast1
  spec:
    address: multicast1
    type: multicast
    plan: standard-small-multicast
- metadata:
    name: myspace.queue1
  spec:
    address: queue1
    type: queue
    plan: standard-small-queue
- metadata:
    name: myspace.topic1
  spec:
    address: topic1
    type: topic
    plan: standard-small-topic
"""


def test_address_list_enmasse_example_items_without_kind(tmp_path):
    """EnMasse's AddressList example is accepted in every form (definition,
    an item of addresses, a src file read by the action plugin), its items
    taking kind Address and the list's apiVersion, and passes the rules for a
    standard space; an item's own wrong kind is still refused."""
    import yaml
    from ansible_collections.enmasse.messaging.plugins.action.address import load_addresses
    src = tmp_path / "addresses.yml"
    src.write_text(ENMASSE_ADDRESS_LIST_EXAMPLE)
    lst = yaml.safe_load(ENMASSE_ADDRESS_LIST_EXAMPLE)
    space = {"name": "myspace", "type": "standard", "plan": "standard-small"}
    for params in ({"definition": lst}, {"addresses": [lst]}, {"addresses": load_addresses(str(src))}):
        present, unused, errs, positions = inputs.address_inputs(params, "myspace")
        assert errs == [], (params, errs)
        assert [a["address"] for a in present] == ["anycast1", "multicast1", "queue1", "topic1"]
        assert validation.validate_addresses(space, present, CAT, positions=positions) == []
    bad = dict(lst, items=[dict(lst["items"][0], kind="Queue")])
    errs = inputs.address_inputs({"definition": bad}, "myspace")[2]
    assert errs == ["definition.items[0].kind: 'Queue' is not accepted here: this module takes an EnMasse "
                    "Address (enmasse.io/v1beta1)"]


# ------------------------------------------------------------------ MessagingUser

def test_user_spec_username():
    assert names.username_errors("alice@example.com") == []
    assert "must match" in joined(names.username_errors("Alice"))
    assert validation.validate_user({"username": "-x", "authentication": {"type": "password"}}) != []


def test_user_spec_authentication_type():
    assert validation.validate_user({"username": "alice", "authentication": {"type": "password"}}) == []
    errs = validation.validate_user({"username": "alice", "authentication": {"type": "ldap"}})
    assert "user.authentication.type: 'ldap' must be one of password, serviceaccount, federated" in joined(errs)
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import users
    for kind in ("serviceaccount", "federated"):  # EnMasse's, refused by messaging_user (both backends)
        assert "is not supported by messaging_user" in joined(users.authentication_errors({"type": kind}))


def test_user_spec_authorization():
    ok = {"username": "alice", "authentication": {"type": "password"},
          "authorization": [{"addresses": ["orders", "events/#"], "operations": ["send", "recv"]}]}
    assert validation.validate_user(ok) == []
    bad = dict(ok, authorization=[{"addresses": ["orders"], "operations": ["write"]}])
    assert "user.authorization[0].operations: 'write' must be one of send, recv, view, manage" in \
        joined(validation.validate_user(bad))


def test_user_documents_are_read_by_messaging_user():
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import users
    doc = {"apiVersion": "user.enmasse.io/v1beta1", "kind": "MessagingUser",
           "metadata": {"name": "myspace.user1", "namespace": "ns", "uid": "x"},
           "spec": {"username": "user1", "authentication": {"type": "password", "password": "cGFzc3dvcmQ="},
                    "authorization": [{"addresses": ["queue1", "topic*"], "operations": ["send", "recv"]},
                                      {"operations": ["manage"]}]},
           "status": {"phase": "Active"}}
    user, errs = users.user_from_document(doc, "myspace", "definition")
    assert errs == [] and user["password"] == "password" and user["username"] == "user1"
    errs = users.user_from_document(dict(doc, metadata={"name": "other.user1"}), "myspace", "definition")[1]
    assert "definition.metadata.name: 'other.user1' must be <address space>.<username> ('myspace.user1')" in errs
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as f:
        assert "- messaging_user" in f.read()


# ------------------------------------------------------------------ AddressPlan

@pytest.mark.parametrize("camel, snake, value", [
    ("displayName", "display_name", "Small queue"),
    ("displayOrder", "display_order", 4),
    ("shortDescription", "short_description", "short"),
    ("longDescription", "long_description", "long"),
])
def test_plan_spec_descriptions(camel, snake, value):
    plan, errs = plans.read_address_plan(plan_doc(**{camel: value}))
    assert errs == [] and plan[snake] == value
    unused, errs = plans.read_address_plan(plan_doc(**{camel: ["x"]}))
    assert "address_plan.%s: ['x'] must be" % snake in joined(errs)


def test_plan_display_name_defaults_to_name():
    assert plans.read_address_plan(plan_doc())[0]["display_name"] == "p"


def test_plan_spec_addressType():
    assert plans.read_address_plan(plan_doc(addressType="deadletter", resources={}))[0]["address_type"] == "deadletter"
    unused, errs = plans.read_address_plan(plan_doc(addressType="stream"))
    assert "address_plan.address_type: 'stream' must be one of" in joined(errs)
    cat = plans.Catalogue.default()
    cat.put_address_plan(plans.read_address_plan(plan_doc(name="any1", addressType="anycast", resources={"router": 0.1}))[0])
    cat.put_space_plan(plans.read_space_plan(space_plan_doc(name="sp", addressPlans=["any1"]))[0])
    assert "is a plan for anycast addresses, which brokered address spaces do not have" in \
        joined(cat.integrity_errors(["sp"]))


def test_plan_spec_addressSpaceType_is_an_addition():
    plan, errs = plans.read_address_plan(plan_doc(addressSpaceType="brokered"))
    assert errs == [] and plan["address_space_type"] == "brokered"
    unused, errs = plans.read_address_plan(plan_doc(addressType="anycast", addressSpaceType="brokered"))
    assert "must be one of queue, topic, subscription, deadletter for a brokered address space" in joined(errs)
    assert "address_space_type" not in plans.read_address_plan(plan_doc())[0]


def test_plan_spec_partitions():
    assert plans.read_address_plan(plan_doc())[0]["partitions"] == 1
    assert plans.read_address_plan(plan_doc(partitions=3))[0]["partitions"] == 3
    unused, errs = plans.read_address_plan(plan_doc(partitions=0))
    assert "address_plan.partitions: 0 must be an integer from 1 to 1000" in joined(errs)


@pytest.mark.parametrize("key", ["router", "broker"])
def test_plan_spec_resources(key):
    plan, errs = plans.read_address_plan(plan_doc(resources={key: 0.5}))
    assert errs == [] and plan["resources"] == {key: 0.5}
    unused, errs = plans.read_address_plan(plan_doc(resources={key: -1}))
    assert "address_plan.resources.%s: -1 must be a number >= 0" % key in joined(errs)
    unused, errs = plans.read_address_plan(plan_doc(resources={"aggregate": 1}))
    assert "unknown resource, must be one of router, broker" in joined(errs)


def test_plan_spec_resources_optional():
    plan, errs = plans.read_address_plan(plan_doc(resources=None))
    assert errs == [] and plan["resources"] == {}


@pytest.mark.parametrize("key", ["minimum", "maximum"])
def test_plan_spec_messageTtl(key):
    plan, errs = plans.read_address_plan(plan_doc(messageTtl={key: 1000}))
    assert errs == [] and plan["message_ttl"] == {key: 1000}
    unused, errs = plans.read_address_plan(plan_doc(addressType="subscription", messageTtl={key: 1000}))
    assert "address_plan.message_ttl: applies to queue, topic, deadletter plans only, not subscription" in joined(errs)
    unused, errs = plans.read_address_plan(plan_doc(messageTtl={key: 1.5}))
    assert "message_ttl.%s: 1.5" % key in joined(errs)


@pytest.mark.parametrize("camel, snake, value", [
    ("maximumDeliveryAttempts", "maximum_delivery_attempts", 5),
    ("redeliveryDelay", "redelivery_delay", 100),
    ("redeliveryDelayMultiplier", "redelivery_delay_multiplier", 2.0),
    ("maximumDeliveryDelay", "maximum_delivery_delay", 10000),
])
def test_plan_spec_messageRedelivery(camel, snake, value):
    plan, errs = plans.read_address_plan(plan_doc(messageRedelivery={camel: value}))
    assert errs == [] and plan["message_redelivery"] == {snake: value}
    unused, errs = plans.read_address_plan(plan_doc(addressType="topic", messageRedelivery={camel: value}))
    assert "message_redelivery: applies to queue, subscription, deadletter plans only, not topic" in joined(errs)


def test_plan_legacy_fields():
    doc = {"apiVersion": "admin.enmasse.io/v1beta1", "kind": "AddressPlan", "metadata": {"name": "old"},
           "displayName": "Old", "displayOrder": 1, "shortDescription": "s", "longDescription": "l", "uuid": "1234",
           "addressType": "queue", "requiredResources": [{"name": "broker", "credit": 0.2}, {"name": "router", "credit": 0.1}]}
    plan, errs = plans.read_address_plan(doc)
    assert errs == []
    assert plan["resources"] == {"broker": 0.2, "router": 0.1} and plan["display_name"] == "Old"
    assert "uuid" not in plan
    unused, errs = plans.read_address_plan(dict(doc, requiredResources=[{"name": "broker"}]))
    assert "must be {name: router|broker, credit: <number>}" in joined(errs)


def test_plan_metadata_name():
    unused, errs = plans.read_address_plan(plan_doc(name="Big_Plan"))
    assert "must be a Kubernetes object name" in joined(errs)
    doc = plan_doc()
    doc["metadata"].update({"labels": {"app": "enmasse"}, "namespace": "ns", "uid": "u"})
    assert plans.read_address_plan(doc)[1] == []


def test_plan_status_ignored():
    plan, errs = plans.read_address_plan(dict(plan_doc(), status={"phase": "Active", "message": ""}))
    assert errs == [] and "status" not in plan
    plan, errs = plans.read_space_plan(dict(space_plan_doc(), status={"phase": "Active"}))
    assert errs == [] and "status" not in plan


# ------------------------------------------------------------------ AddressSpacePlan

@pytest.mark.parametrize("camel, snake, value", [
    ("displayName", "display_name", "Small"),
    ("displayOrder", "display_order", 2),
    ("shortDescription", "short_description", "short"),
    ("longDescription", "long_description", "long"),
])
def test_space_plan_spec_descriptions(camel, snake, value):
    plan, errs = plans.read_space_plan(space_plan_doc(**{camel: value}))
    assert errs == [] and plan[snake] == value


def test_space_plan_spec_addressSpaceType():
    assert plans.read_space_plan(space_plan_doc())[0]["address_space_type"] == "brokered"
    unused, errs = plans.read_space_plan(space_plan_doc(addressSpaceType="hybrid"))
    assert "address_space_plan.address_space_type: 'hybrid' must be one of brokered, standard" in joined(errs)


def test_space_plan_spec_infraConfigRef():
    assert plans.read_space_plan(space_plan_doc())[0]["infra_config_ref"] == "default"
    with pytest.raises(PlanError) as exc:
        plans.Catalogue.from_data({"address_space_plans": [space_plan_doc(infraConfigRef="big")]})
    assert "infra_config_ref: 'big' is not a known BrokeredInfraConfig (known: default)" in str(exc.value)


@pytest.mark.parametrize("key", ["aggregate", "router", "broker"])
def test_space_plan_spec_resourceLimits(key):
    plan, errs = plans.read_space_plan(space_plan_doc(resourceLimits={key: 2.0}))
    assert errs == [] and plan["resource_limits"] == {key: 2.0}
    unused, errs = plans.read_space_plan(space_plan_doc(resourceLimits={key: "2"}))
    assert "resource_limits.%s: '2' must be a number >= 0" % key in joined(errs)


def test_space_plan_quota_is_enforced():
    cat = plans.Catalogue.from_data({
        "address_plans": [plan_doc(name="q1", resources={"broker": 0.6})],
        "address_space_plans": [space_plan_doc(name="brokered-single-broker", addressPlans=["q1"])]})
    qs = [one_address(address_doc(name="shop.q%d" % i, address="q%d" % i, plan="q1")) for i in range(2)]
    assert "quota" in joined(rules(qs, cat))


def test_space_plan_spec_addressPlans():
    assert plans.read_space_plan(space_plan_doc())[0]["address_plans"] == ["brokered-queue"]
    with pytest.raises(PlanError) as exc:
        plans.Catalogue.from_data({"address_space_plans": [space_plan_doc(addressPlans=["nope"])]})
    assert "'nope' is not a known address plan" in str(exc.value)
    unused, errs = plans.read_space_plan(space_plan_doc(addressPlans=["a", "a"]))
    assert "address_plans: a listed more than once" in joined(errs)


def test_space_plan_legacy_fields():
    doc = {"apiVersion": "admin.enmasse.io/v1alpha1", "kind": "AddressSpacePlan", "metadata": {"name": "old"},
           "displayName": "Old", "displayOrder": 0, "shortDescription": "s", "longDescription": "l", "uuid": "1",
           "addressSpaceType": "brokered", "addressPlans": ["brokered-queue"],
           "resources": [{"name": "broker", "max": 1.9}]}
    plan, errs = plans.read_space_plan(doc)
    assert errs == []
    assert plan["resource_limits"] == {"broker": 1.9} and "uuid" not in plan and "infra_config_ref" not in plan


def test_brokered_subscription_plan_is_an_addition():
    assert "brokered-subscription" in CAT.address_space_plan("brokered-single-broker")["address_plans"]
    assert "brokered-subscription" not in plans.EXAMPLE_ADDRESS_PLAN_NAMES
    assert CAT.address_plan("brokered-subscription")["address_type"] == "subscription"
    assert "subscription" in plans.ADDRESS_TYPES["brokered"]


# ------------------------------------------------------------------ infra configs

def test_infra_configs_are_the_examples_only():
    assert CAT.infra_config_names("BrokeredInfraConfig") == ["default"]
    assert CAT.infra_config_names("StandardInfraConfig") == ["default", "default-minimal"]
    assert CAT.infra_config("default", "BrokeredInfraConfig")["spec"]["broker"]["addressFullPolicy"] == "FAIL"
    with pytest.raises(PlanError) as exc:
        plans.Catalogue.from_data({"infra_configs": []})
    assert "plans.infra_configs: unknown field" in str(exc.value)
    assert not any(n.endswith("infra_config.py") for n in os.listdir(os.path.join(ROOT, "plugins", "modules")))


# ------------------------------------------------------------------ the page itself

# Every spec field of the CRDs of EnMasse tag 0.33.0 (templates/crds/*.crd.yaml, openAPIV3Schema: the
# properties under spec, items of arrays included; generated from addressspaces.crd.yaml,
# addresses.crd.yaml, messagingusers.crd.yaml, addressplans.crd.yaml (v1beta2 spec plus the legacy
# top-level properties), addressspaceplans.crd.yaml. The brokered endpoints' expose fields are also listed
# as EnMasse's ExposeSpec has them: the CRD indents them under expose.type by mistake).
CRD_SPEC_FIELDS = {
    "AddressSpace": [
        "type", "plan", "authenticationService", "authenticationService.name", "authenticationService.type",
        "authenticationService.overrides", "authenticationService.overrides.host",
        "authenticationService.overrides.port", "authenticationService.overrides.realm", "endpoints",
        "endpoints.name", "endpoints.service", "endpoints.cert", "endpoints.cert.provider",
        "endpoints.cert.secretName", "endpoints.cert.tlsCert", "endpoints.cert.tlsKey", "endpoints.exports",
        "endpoints.exports.kind", "endpoints.exports.name", "endpoints.expose", "endpoints.expose.type",
        "endpoints.expose.annotations", "endpoints.expose.loadBalancerPorts",
        "endpoints.expose.loadBalancerSourceRanges", "endpoints.expose.routeHost",
        "endpoints.expose.routeServicePort", "endpoints.expose.routeTlsTermination",
        "networkPolicy", "networkPolicy.ingress", "networkPolicy.egress", "connectors", "connectors.name",
        "connectors.endpointHosts", "connectors.endpointHosts.host", "connectors.endpointHosts.port",
        "connectors.role", "connectors.idleTimeout", "connectors.maxFrameSize", "connectors.tls",
        "connectors.tls.caCert", "connectors.tls.caCert.value", "connectors.tls.caCert.valueFromSecret",
        "connectors.tls.caCert.valueFromSecret.name", "connectors.tls.caCert.valueFromSecret.key",
        "connectors.tls.clientCert", "connectors.tls.clientCert.value", "connectors.tls.clientCert.valueFromSecret",
        "connectors.tls.clientCert.valueFromSecret.name", "connectors.tls.clientCert.valueFromSecret.key",
        "connectors.tls.clientKey", "connectors.tls.clientKey.value", "connectors.tls.clientKey.valueFromSecret",
        "connectors.tls.clientKey.valueFromSecret.name", "connectors.tls.clientKey.valueFromSecret.key",
        "connectors.credentials", "connectors.credentials.username", "connectors.credentials.username.value",
        "connectors.credentials.username.valueFromSecret", "connectors.credentials.username.valueFromSecret.name",
        "connectors.credentials.username.valueFromSecret.key", "connectors.credentials.password",
        "connectors.credentials.password.value", "connectors.credentials.password.valueFromSecret",
        "connectors.credentials.password.valueFromSecret.name", "connectors.credentials.password.valueFromSecret.key",
        "connectors.addresses", "connectors.addresses.name", "connectors.addresses.pattern",
    ],
    "Address": [
        "address", "type", "plan", "topic", "subscription", "subscription.maxConsumers", "deadletter", "expiry",
        "messageTtl", "messageTtl.maximum", "messageTtl.minimum", "messageRedelivery",
        "messageRedelivery.maximumDeliveryAttempts", "messageRedelivery.redeliveryDelay",
        "messageRedelivery.redeliveryDelayMultiplier", "messageRedelivery.maximumDeliveryDelay", "forwarders",
        "forwarders.name", "forwarders.remoteAddress", "forwarders.priority", "forwarders.direction",
    ],
    "MessagingUser": [
        "username", "authentication", "authentication.type", "authentication.password", "authentication.provider",
        "authentication.federatedUserid", "authentication.federatedUsername", "authorization",
        "authorization.operations", "authorization.addresses",
    ],
    "AddressPlan": [
        "displayName", "displayOrder", "shortDescription", "longDescription", "addressType", "partitions",
        "resources", "resources.router", "resources.broker", "messageTtl", "messageTtl.maximum",
        "messageTtl.minimum", "messageRedelivery", "messageRedelivery.maximumDeliveryAttempts",
        "messageRedelivery.redeliveryDelay", "messageRedelivery.redeliveryDelayMultiplier",
        "messageRedelivery.maximumDeliveryDelay",
    ],
    "AddressSpacePlan": [
        "displayName", "displayOrder", "shortDescription", "longDescription", "addressSpaceType", "infraConfigRef",
        "resourceLimits", "resourceLimits.aggregate", "resourceLimits.router", "resourceLimits.broker",
        "addressPlans",
    ],
}
# the legacy (v1beta1/v1alpha1) top-level properties of the plan CRDs
CRD_LEGACY_FIELDS = {
    "AddressPlan": ["displayName", "displayOrder", "shortDescription", "longDescription", "uuid", "addressType",
                    "requiredResources"],
    "AddressSpacePlan": ["displayName", "displayOrder", "shortDescription", "longDescription", "uuid",
                         "addressSpaceType", "resources", "addressPlans"],
}
# the heading of each kind's section in the page
SECTIONS = {"AddressSpace": "## AddressSpace", "Address": "## Address (", "MessagingUser": "## MessagingUser",
            "AddressPlan": "## AddressPlan", "AddressSpacePlan": "## AddressSpacePlan"}
NODE_RE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(\[[^\]`]*\])?`")


def page():
    with open(PAGE) as f:
        return f.read()


def section(text, heading):
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def table_rows(text):
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("|---")]


def functions_in(path):
    with open(os.path.join(ROOT, path)) as f:
        tree = ast.parse(f.read())
    return set(n.name for n in tree.body if isinstance(n, ast.FunctionDef))


def covered(field, cells):
    """``field`` (a CRD path) is named in the field cells as `spec.<path>`, or
    under a `spec.<parent>.*` row that stands for every field below it."""
    if "`spec.%s`" % field in cells:
        return True
    parts = field.split(".")
    return any("`spec.%s.*`" % ".".join(parts[:i]) in cells for i in range(1, len(parts) + 1))


def test_every_row_names_an_existing_test():
    text = page()
    rows = [r for r in table_rows(text) if r.split("|")[1].strip() not in ("field", "")]
    assert len(rows) > 50
    cited = set()
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]  # a \| is inside a cell
        if cells[0] in ("field", "", "kind") or len(cells) != 4:
            continue
        assert cells[2].startswith(("`supported`", "`supported differently`", "`not supported`")), row
        nodes = NODE_RE.findall(cells[3])
        assert nodes, "row without a test: %s" % row
        cited.update(nodes)
    functions = {}
    for path, func, unused in cited:
        if path not in functions:
            assert os.path.exists(os.path.join(ROOT, path)), path
            functions[path] = functions_in(path)
        assert func in functions[path], "%s::%s does not exist" % (path, func)
    # the node ids of parametrized integration cases: the case id must be in the file
    for path, func, param in cited:
        if param:
            with open(os.path.join(ROOT, path)) as f:
                source = f.read()
            assert '"%s"' % param[1:-1] in source, "%s::%s%s" % (path, func, param)
    for kind, fields in CRD_SPEC_FIELDS.items():
        cells = "\n".join(r.split("|")[1] for r in table_rows(section(text, SECTIONS[kind])))
        missing = [f for f in fields if not covered(f, cells)]
        assert missing == [], "%s fields not in the page: %s" % (kind, missing)
        legacy = [f for f in CRD_LEGACY_FIELDS.get(kind, []) if "`%s`" % f not in cells]
        assert legacy == [], "%s legacy fields not in the page: %s" % (kind, legacy)
        assert "`status`" in cells, kind
