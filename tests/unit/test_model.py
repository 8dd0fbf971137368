"""Model validation: every violation at once, each naming field, value and rule."""
import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils import errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model import documents as model_documents
from ansible_collections.enmasse.messaging.plugins.module_utils.model import names as model_names
from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation as model_validation
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue

CAT = Catalogue.default()
SPACE = {"name": "demo", "type": "brokered", "plan": "brokered-single-broker"}


def q(name, **kw):
    d = {"address": name, "type": "queue", "plan": "brokered-queue"}
    d.update(kw)
    return d


@pytest.mark.parametrize("name", ["a", "demo", "my-space-1", "a" * 60])
def test_good_space_names(name):
    assert model_names.space_name_errors(name) == []


@pytest.mark.parametrize("name,rule", [
    ("Demo", "lowercase"), ("1demo", "start with a letter"), ("demo-", "end with a letter"),
    ("a" * 61, "at most 60"), ("", "required"), (None, "required"), ("de_mo", "lowercase"),
])
def test_bad_space_names(name, rule):
    errs = model_names.space_name_errors(name)
    assert errs and rule in " ".join(errs) and repr(name) in errs[0]


@pytest.mark.parametrize("addr,rule", [
    ("has space", "whitespace"), ("tab\there", "whitespace"), ("_!x", "'_!' or '!!'"),
    ("!!x", "'_!' or '!!'"), ("t::s", "'::'"), ("", "required"), ("x" * 256, "at most 255"),
])
def test_bad_address_names(addr, rule):
    errs = model_names.address_name_errors(addr)
    assert errs and rule in errs[0]


@pytest.mark.parametrize("user,ok", [("alice", True), ("bob@example.com", True), ("a-b_c:d", True),
                                     ("Alice", False), ("alice-", False), ("-a", False), ("a", True)])
def test_usernames(user, ok):
    assert (model_names.username_errors(user) == []) is ok


def test_valid_demo_space():
    addrs = [q("orders"), {"address": "events", "type": "topic", "plan": "brokered-topic"},
             {"address": "audit", "type": "subscription", "topic": "events", "plan": "brokered-subscription",
              "subscription": {"max_consumers": 2}},
             {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"},
             q("retry", deadletter="dlq", expiry="dlq", message_redelivery={"maximum_delivery_attempts": 3},
               message_ttl={"maximum": 2000})]
    assert model_validation.validate_address_space(SPACE, CAT) == []
    assert model_validation.validate_addresses(SPACE, addrs, CAT) == []


def test_all_violations_reported_at_once():
    addrs = [q("!!bad", plan="nope"), q("ok", type="anycast"), q("dup"), q("dup"),
             {"address": "s", "type": "subscription", "plan": "brokered-subscription"}]
    errs = model_validation.validate_addresses(SPACE, addrs, CAT)
    text = "\n".join(errs)
    assert "addresses[0](!!bad).address: '!!bad' must not start with '_!' or '!!'" in text
    assert "addresses[0](!!bad).plan: 'nope' is not a known address plan" in text
    assert "addresses[1](ok).type: 'anycast' must be one of queue, topic, subscription, deadletter" in text
    assert "addresses[3](dup).address: 'dup' is listed twice" in text
    assert "addresses[4](s).topic: a subscription needs the topic" in text
    assert len(errs) >= 5


def test_plan_must_match_type_and_space_plan():
    errs = model_validation.validate_addresses(SPACE, [q("a", plan="brokered-topic"), q("b", plan="standard-small-queue")], CAT)
    assert any("'brokered-topic' is a plan for topic addresses, not queue" in e for e in errs)
    assert any("'standard-small-queue' is not allowed by address space plan 'brokered-single-broker'" in e for e in errs)


def test_references_must_have_the_right_type():
    addrs = [q("q1"), {"address": "s", "type": "subscription", "topic": "q1", "plan": "brokered-subscription"},
             q("q2", deadletter="q1")]
    errs = model_validation.validate_addresses(SPACE, addrs, CAT)
    assert any("topic: 'q1' must name an address of type topic in this address space (it is a queue)" in e for e in errs)
    assert any("deadletter: 'q1' must name an address of type deadletter" in e for e in errs)


def test_references_resolve_against_current_state():
    current = {"events": {"address": "events", "type": "topic", "plan": "brokered-topic"}}
    addrs = [{"address": "s", "type": "subscription", "topic": "events", "plan": "brokered-subscription"}]
    assert model_validation.validate_addresses(SPACE, addrs, CAT, current=current) == []


def test_immutable_fields_refused():
    current = {"a": q("a"), "s": {"address": "s", "type": "subscription", "topic": "t",
                                  "plan": "brokered-subscription", "subscription": {"max_consumers": 1}},
               "t": {"address": "t", "type": "topic", "plan": "brokered-topic"}}
    addrs = [{"address": "a", "type": "topic", "plan": "brokered-topic"},
             {"address": "s", "type": "subscription", "topic": "t", "plan": "brokered-subscription",
              "subscription": {"max_consumers": 5}}]
    errs = model_validation.validate_addresses(SPACE, addrs, CAT, current=current)
    assert any("addresses[0](a).type: 'topic' cannot change (it is 'queue'); type is immutable" in e for e in errs)
    assert any("subscription.max_consumers: 5 cannot change (it is 1)" in e for e in errs)


def test_default_max_consumers_is_not_a_change():
    current = {"s": {"address": "s", "type": "subscription", "topic": "t", "plan": "brokered-subscription",
                     "subscription": {"max_consumers": 1}},
               "t": {"address": "t", "type": "topic", "plan": "brokered-topic"}}
    addrs = [{"address": "s", "type": "subscription", "topic": "t", "plan": "brokered-subscription"}]
    assert model_validation.validate_addresses(SPACE, addrs, CAT, current=current) == []


QUOTA_CAT = Catalogue.from_data({
    "address_plans": [{"name": "small-queue", "address_type": "queue", "resources": {"broker": 0.01}}],
    "address_space_plans": [{"name": "b190", "address_space_type": "brokered", "resource_limits": {"broker": 1.9},
                             "address_plans": ["small-queue"]}]})
QUOTA_SPACE = {"name": "demo", "type": "brokered", "plan": "b190"}


def test_quota_exceeded_names_address_plan_and_limits():
    addrs = [q("q%03d" % i, plan="small-queue") for i in range(200)]
    errs = model_validation.validate_addresses(QUOTA_SPACE, addrs, QUOTA_CAT)
    # 190 * 0.01 = 1.9 fits, the 191st does not
    assert len(errs) == 10
    assert errs[0].startswith("addresses[190](q190).plan: 'small-queue' (router 0, broker 0.01) is over "
                              "quota: quota exceeded for broker; address space 'demo' plan "
                              "'b190' allows broker 1.9")


def test_quota_names_the_index_in_the_task_and_never_fails_unchanged_addresses():
    owned = dict(("q%03d" % i, q("q%03d" % i, plan="small-queue")) for i in range(200))
    # a plan change elsewhere left the space at 2.0 of 1.9: the addresses that
    # stay never fail, the state is a warning with the numbers
    stay = [owned[n] for n in sorted(owned)]
    errs, warns = model_validation.quota_check(QUOTA_SPACE, QUOTA_CAT.address_space_plan("b190"), stay, QUOTA_CAT,
                                               owned=owned, positions=list(range(200)))
    assert errs == []
    assert len(warns) == 1 and "over the quota of its plan 'b190'" in warns[0] and "broker 2 of 1.9" in warns[0]
    # a new one that costs credits is refused, named by its own index in the task
    errs, warns = model_validation.quota_check(QUOTA_SPACE, QUOTA_CAT.address_space_plan("b190"),
                                               [q("new", plan="small-queue")] + stay, QUOTA_CAT, owned=owned,
                                               positions=[3])
    assert len(errs) == 1 and errs[0].startswith("addresses[3](new).plan: 'small-queue'"), errs


def test_a_space_plan_missing_from_the_catalogue_is_an_error_not_a_skip():
    errs = model_validation.validate_addresses(dict(SPACE, plan="gone"), [q("a")], CAT)
    assert len(errs) == 1 and "address_space(demo).plan: 'gone' is not in the plan catalogue" in errs[0]


def test_unknown_field_and_settings_on_wrong_type():
    errs = model_validation.validate_addresses(SPACE, [q("a", max_consumer=2),
                                                       {"address": "t", "type": "topic", "plan": "brokered-topic",
                                                        "subscription": {"max_consumers": 2}},
                                                       q("b", message_ttl={"maximum": -1}),
                                                       q("c", message_ttl={"minimum": 10, "maximum": 5})], CAT)
    text = "\n".join(errs)
    assert "addresses[0](a).max_consumer: unknown field" in text
    assert "addresses[1](t).subscription: {'max_consumers': 2} is only allowed on subscription addresses" in text
    assert "addresses[2](b).message_ttl.maximum: -1 must be an integer number of milliseconds from 1 to 9223372036854775807" in text
    assert "minimum 10 must not be greater than maximum 5" in text


def test_space_validation():
    errs = model_validation.validate_address_space({"name": "Bad", "type": "fancy", "plan": "gold", "colour": 1}, CAT)
    text = "\n".join(errs)
    assert "address_space.colour: unknown field" in text
    assert "address_space.name: 'Bad' must consist of lowercase letters" in text
    assert "address_space.type: 'fancy' must be one of standard, brokered" in text
    assert "address_space.plan: 'gold' is not a known address space plan" in text
    errs = model_validation.validate_address_space({"name": "x", "type": "standard", "plan": "brokered-single-broker"}, CAT)
    assert errs == ["address_space.plan: 'brokered-single-broker' is a plan for brokered address spaces, not standard"]


def test_enmasse_documents_are_accepted():
    space = model_documents.normalize_address_space({
        "apiVersion": "enmasse.io/v1beta1", "kind": "AddressSpace", "metadata": {"name": "demo"},
        "spec": {"type": "brokered", "plan": "brokered-single-broker",
                 "authenticationService": {"name": "standard-authservice"}}})
    assert space == {"name": "demo", "type": "brokered", "plan": "brokered-single-broker",
                     "authentication_service": {"name": "standard-authservice"}}
    addr = model_documents.normalize_address({
        "apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "demo.sub1"},
        "spec": {"address": "sub1", "type": "subscription", "topic": "events", "plan": "brokered-subscription",
                 "subscription": {"maxConsumers": 3}, "messageTtl": {"maximum": 100},
                 "messageRedelivery": {"maximumDeliveryAttempts": 4}}})
    assert addr == {"address": "sub1", "type": "subscription", "topic": "events", "plan": "brokered-subscription",
                    "subscription": {"max_consumers": 3}, "message_ttl": {"maximum": 100},
                    "message_redelivery": {"maximum_delivery_attempts": 4},
                    "address_space": "demo", "name": "sub1"}
    doc = model_documents.address_to_document("demo", {k: v for k, v in addr.items() if k != "address_space"})
    assert doc["spec"]["subscription"] == {"maxConsumers": 3}
    assert doc["spec"]["messageRedelivery"] == {"maximumDeliveryAttempts": 4}
    assert model_documents.normalize_address(doc)["message_redelivery"] == {"maximum_delivery_attempts": 4}


def test_users():
    good = {"username": "alice", "authentication": {"type": "password"},
            "authorization": [{"addresses": ["orders", "events/#"], "operations": ["send", "recv"]}]}
    assert model_validation.validate_user(good) == []
    bad = {"username": "Alice", "authentication": {"type": "token"},
           "authorization": [{"addresses": ["x"], "operations": ["write"]}, {"addresses": "x"}]}
    text = "\n".join(model_validation.validate_user(bad))
    assert "user.username: 'Alice' must match" in text
    assert "user.authentication.type: 'token' must be one of password, serviceaccount, federated" in text
    assert "user.authorization[0].operations: 'write' must be one of send, recv, view, manage" in text
    assert "user.authorization[1].addresses: 'x' must be a list" in text


def test_check_raises_with_all_errors():
    with pytest.raises(errors.ValidationError) as ei:
        model_validation.check(["a: x", "b: y"])
    assert ei.value.errors == ["a: x", "b: y"] and str(ei.value) == "a: x; b: y"


def test_wildcard_words_are_refused_in_address_names_and_ignored_as_broker_made():
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import names
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader
    for name in ("events/#", "events/+/eu", "#", "a/+"):
        assert names.is_wildcard_address(name) and reader.is_internal(name), name
        errs = names.address_name_errors(name)
        assert len(errs) == 1 and "must not have '#' or '+' as a whole '/'-separated word" in errs[0], errs
    for name in ("events", "a+b/c", "x#", "events/eu/orders"):
        assert not names.is_wildcard_address(name) and names.address_name_errors(name) == [], name
