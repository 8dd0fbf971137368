"""Bad input is refused before anything is touched.

Each case runs a module against the demo space on the real broker and checks
what a user sees and what the broker keeps:

* the task fails and changes nothing (``changed`` is false);
* one reported error names the field, the offending value and the rule;
* the broker's AddressNames and QueueNames, the address settings of the demo
  addresses and the ownership ledger file are byte for byte what they were.
"""

import os
import stat

import pytest

import helpers

pytestmark = pytest.mark.integration

DEMO_NAMES = helpers.DEMO_NAMES
q, sub = helpers.queue, helpers.subscription


class Case(object):
    def __init__(self, id, module, args, field, value, rule):
        self.id, self.module, self.args = id, module, args
        # every fragment must be in one and the same reported error
        self.fragments = [f for f in (field, value, rule) if f is not None]


SPACE_NAME_CASES = [
    Case("space-uppercase", "address_space", {"name": "BadSpace"}, "name", "'BadSpace'", "lowercase"),
    Case("space-61-chars", "address_space", {"name": "a" * 61}, "name", "'%s'" % ("a" * 61), "at most 60"),
    Case("space-leading-digit", "address_space", {"name": "1space"}, "name", "'1space'", "start with a letter"),
    Case("space-trailing-dash", "address_space", {"name": "space-"}, "name", "'space-'",
         "end with a letter or digit"),
]

SPACE_CASES = [
    Case("space-unknown-plan", "address_space", {"type": "brokered", "plan": "brokered-huge"},
         "plan", "'brokered-huge'", "not a known address space plan"),
    Case("space-plan-of-other-type", "address_space", {"type": "brokered", "plan": "standard-small"},
         "plan", "'standard-small'", "plan for standard address spaces"),
    Case("space-unknown-type", "address_space", {"type": "mixed", "plan": "brokered-single-broker"},
         "type", "'mixed'", "must be one of"),
    Case("space-type-change", "address_space", {"type": "standard", "plan": "standard-small"},
         "type", "'standard'", "cannot change"),
]

ADDRESS_CASES = [
    Case("address-whitespace", "address", q("my queue"), "address", "'my queue'", "whitespace"),
    Case("address-underscore-bang", "address", q("_!internal"), "address", "'_!internal'",
         "must not start with '_!' or '!!'"),
    Case("address-bang-bang", "address", q("!!x"), "address", "'!!x'", "must not start with '_!' or '!!'"),
    Case("unknown-plan", "address", q("new-q", plan="brokered-huge"), "plan", "'brokered-huge'",
         "not a known address plan"),
    Case("plan-of-wrong-type", "address", q("new-q", plan="brokered-topic"), "plan", "'brokered-topic'",
         "plan for topic addresses"),
    Case("plan-not-allowed-by-space-plan", "address", q("new-q", plan="standard-small-queue"),
         "plan", "'standard-small-queue'", "not allowed by address space plan"),
    Case("unknown-type", "address", q("new-q", type="fanout"), "type", "'fanout'", "must be one of"),
    Case("type-change", "address", q("orders", type="topic", plan="brokered-topic"), "type", "'topic'",
         "cannot change"),
    Case("subscription-without-topic", "address", sub("new-sub"), "topic", "new-sub",
         "needs the topic"),
    Case("subscription-on-a-queue", "address", sub("new-sub", topic="orders"), "topic", "'orders'",
         "must name an address of type topic"),
    Case("max-consumers-change", "address", sub("events-audit", topic="events", subscription={"max_consumers": 2}),
         "max_consumers", "2", "immutable"),
    Case("negative-ttl", "address", q("new-q", message_ttl={"maximum": -5}), "message_ttl.maximum", "-5",
         "from 1 to 9223372036854775807"),
    Case("ttl-minimum-over-maximum", "address", q("new-q", message_ttl={"minimum": 5000, "maximum": 10}),
         "message_ttl", "5000", "must not be greater than maximum"),
    Case("zero-delivery-attempts", "address", q("new-q", message_redelivery={"maximum_delivery_attempts": 0}),
         "maximum_delivery_attempts", "0", "integer from 1 to 2147483647"),
    Case("deadletter-is-a-queue", "address", q("new-q", deadletter="orders"), "deadletter", "'orders'",
         "type deadletter"),
    Case("expiry-unknown", "address", q("new-q", expiry="nowhere"), "expiry", "'nowhere'", "type deadletter"),
    Case("duplicate-addresses", "address", {"addresses": [q("dup"), q("dup")]}, "address", "'dup'",
         "listed twice"),
    Case("unknown-field-typo", "address", {"addresses": [q("new-q", dedletter="dlq")]}, "dedletter",
         None, "unknown field"),
    # the single form's mappings: the model's rule and message, as in the bulk form
    Case("unknown-nested-key-typo", "address",
         q("new-q", message_redelivery={"maximum_delivery_attemps": 3}),
         "message_redelivery.maximum_delivery_attemps", "unknown field", "did you mean 'maximum_delivery_attempts'?"),
    Case("single-ttl-int", "address", q("new-q", message_ttl=5000), "message_ttl", "5000",
         "it must be a mapping with minimum, maximum"),
    Case("single-redelivery-int", "address", q("new-q", message_redelivery=3), "message_redelivery", "3",
         "it must be a mapping with maximum_delivery_attempts"),
    Case("single-subscription-int", "address", sub("new-sub", topic="events", subscription=2), "subscription",
         "2", "it must be a mapping with max_consumers"),
    Case("bulk-ttl-int", "address", {"addresses": [q("new-q", message_ttl=5000)]}, "addresses[0].message_ttl",
         "5000", "it must be a mapping with minimum, maximum"),
    Case("unknown-nested-key-typo-bulk", "address",
         {"addresses": [q("new-q", message_redelivery={"maximum_delivery_attemps": 3})]},
         "addresses[0].message_redelivery.maximum_delivery_attemps", "unknown field",
         "did you mean 'maximum_delivery_attempts'?"),
    Case("unsupported-option-typo", "address", q("new-q", dead_letter="dlq"), "dead_letter", None,
         "Unsupported parameters"),
    Case("subscription-with-own-settings", "address",
         sub("new-sub", topic="events", message_redelivery={"redelivery_delay": 1000}), "message_redelivery",
         "1000", "not supported on a subscription"),
    # EnMasse: a TTL restriction applies to queue and topic only
    Case("subscription-with-ttl", "address", sub("new-sub", topic="events", message_ttl={"maximum": 1000}),
         "message_ttl", "1000", "is only allowed on queue, topic addresses"),
    Case("deadletter-with-ttl", "address",
         {"address": "new-dlq", "type": "deadletter", "plan": "brokered-deadletter", "message_ttl": {"maximum": 1000}},
         "message_ttl", "1000", "is only allowed on queue, topic addresses"),
    Case("deadletter-with-ttl-bulk", "address", {"addresses": [
         {"address": "new-dlq", "type": "deadletter", "plan": "brokered-deadletter", "message_ttl": {"maximum": 1000}}]},
         "addresses[0](new-dlq).message_ttl", "1000", "is only allowed on queue, topic addresses"),
]


def doc(name="itest.new-q", kind="Address", api="enmasse.io/v1beta1", **spec):
    """An EnMasse Address document for the demo space (spec overrides)."""
    body = dict({"address": "new-q", "type": "queue", "plan": "brokered-queue"}, **spec)
    return {"definition": {"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": body}}


# what YAML makes of unquoted values, and values the broker cannot store
EDGE_CASES = [
    Case("address-yes", "address", q(True), "address", "True", "must be a string (quote it in YAML)"),
    Case("address-12345", "address", q(12345), "address", "12345", "must be a string (quote it in YAML)"),
    Case("address-list", "address", q(["a", "b"]), "address", "['a', 'b']", "is a list, it must be a string"),
    Case("plan-yes", "address", q("new-q", plan=True), "plan", "True", "must be a string"),
    Case("bulk-address-list", "address", {"addresses": [q(["a"])]}, "addresses[0].address", "['a']",
         "must be a string"),
    Case("ttl-1e20", "address", q("new-q", message_ttl={"maximum": 1e20}), "message_ttl.maximum", "1e+20",
         "integer number of milliseconds from 1 to 9223372036854775807"),
    Case("ttl-beyond-java-long", "address", {"addresses": [q("new-q", message_ttl={"maximum": 2 ** 63})]},
         "message_ttl.maximum", str(2 ** 63), "from 1 to 9223372036854775807"),
    Case("ttl-string", "address", q("new-q", message_ttl={"maximum": "5"}), "message_ttl.maximum", "'5'",
         "is a string"),
    Case("delivery-attempts-float", "address", q("new-q", message_redelivery={"maximum_delivery_attempts": 1.5}),
         "maximum_delivery_attempts", "1.5", "from 1 to 2147483647"),
    Case("multiplier-bool", "address", q("new-q", message_redelivery={"redelivery_delay_multiplier": True}),
         "redelivery_delay_multiplier", "True", "finite number >= 1"),
    Case("max-consumers-beyond-java-int", "address",
         sub("new-sub", topic="events", subscription={"max_consumers": 2 ** 31}), "subscription.max_consumers",
         str(2 ** 31), "from 1 to 2147483647"),
    Case("doc-wrong-kind", "address", doc(kind="Queue"), "definition.kind", "'Queue'",
         "is not accepted here: this module takes an EnMasse Address (enmasse.io/v1beta1)"),
    Case("doc-wrong-api-version", "address", doc(api="enmasse.io/v1"), "definition.apiVersion",
         "'enmasse.io/v1'", "use enmasse.io/v1beta1"),
    Case("doc-name-of-another-space", "address", doc(name="other.new-q"), "definition.metadata.name",
         "'other.new-q'", "belongs to address space 'other', not 'itest'"),
    Case("doc-name-not-kubernetes", "address", doc(name="itest.New_Q"), "definition.metadata.name",
         "'New_Q'", "Kubernetes name"),
    Case("doc-legacy-address-space", "address", doc(addressSpace="other"), "definition.spec.addressSpace",
         "'other'", "must be the address space 'itest'"),
    Case("doc-unknown-spec-field", "address", doc(messageTtl={"minimim": 5}), "definition.spec.messageTtl.minimim",
         "unknown field", "did you mean 'minimum'?"),
    Case("space-definition-wrong-kind", "address_space",
         {"definition": {"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "itest"},
                         "spec": {"type": "brokered", "plan": "brokered-single-broker"}}},
         "definition.kind", "'Address'", "this module takes an EnMasse AddressSpace"),
]


def _errors(res):
    return [str(e) for e in (res.get("errors") or [])] + [res.msg]


def _assert_refused(res, case, before, after):
    assert res.failed, "bad input was accepted: %r" % (res,)
    assert not res.changed, res
    errors = _errors(res)
    assert any(all(f in e for f in case.fragments) for e in errors), (
        "no error names all of %r:\n%s" % (case.fragments, "\n".join(errors)))
    for key in ("addresses", "queues", "settings"):
        assert after[key] == before[key], "broker %s changed by refused input" % key
    assert after["ledger"] == before["ledger"], "ledger changed by refused input"


@pytest.mark.parametrize("case", SPACE_CASES + ADDRESS_CASES + EDGE_CASES, ids=lambda c: c.id)
def test_bad_input_is_refused_and_changes_nothing(demo_space, case):
    before = demo_space.baseline
    res = demo_space.run(case.module, **case.args)
    _assert_refused(res, case, before, demo_space.snapshot(DEMO_NAMES))


@pytest.mark.parametrize("case", SPACE_NAME_CASES, ids=lambda c: c.id)
def test_bad_space_name_is_refused(demo_space, tmp_path, case):
    """A new space with a bad name (explicit connection options, its own
    ledger): refused, the broker untouched and no ledger written."""
    conn = demo_space.broker.connection(case.args["name"])
    ledger = str(tmp_path / "new-space-ledger.json")
    args = dict((k, conn[k]) for k in ("management_url", "management_user", "management_password",
                                       "broker_name"))
    args.update(case.args, ledger_path=ledger, type="brokered", plan="brokered-single-broker")
    res = helpers.run_module(case.module, args)
    _assert_refused(res, case, demo_space.baseline, demo_space.snapshot(DEMO_NAMES))
    assert not os.path.exists(ledger), "a ledger was written for a refused space"


NAME_RULE = "must consist of lowercase letters, digits and '-', start with a letter and end with a letter or digit"
BAD_NAMES = [("uppercase", "BadSpace", NAME_RULE), ("leading-dash", "-space", NAME_RULE),
             ("61-chars", "a" * 61, "at most 60"), ("empty", "", "non-empty string"),
             ("non-ascii", u"ten\u00e4nt", NAME_RULE), ("yes", True, "non-empty string")]


@pytest.mark.parametrize("module,option", [("address_space", "name"), ("address_space_info", "name"),
                                           ("address", "address_space"), ("address_info", "address_space")])
@pytest.mark.parametrize("name,value,rule", BAD_NAMES, ids=[b[0] for b in BAD_NAMES])
def test_bad_space_name_is_refused_before_the_connection_lookup(demo_space, module, option, name, value, rule):
    """No connection file exists for these names and no connection option is
    given: the task fails with the name rule, not with the missing file."""
    args = {option: value}
    if module == "address":
        args.update(address="orders", type="queue", plan="brokered-queue")
    res = helpers.run_module(module, args)
    case = Case(name, module, args, option, None, rule)
    _assert_refused(res, case, demo_space.baseline, demo_space.snapshot(DEMO_NAMES))
    assert "connection file" not in res.msg and "Traceback" not in res.stderr, res


def _explicit(demo_space, ledger_path):
    conn = demo_space.broker.connection(demo_space.name)
    args = dict((k, conn[k]) for k in ("management_url", "management_user", "management_password", "broker_name"))
    return dict(args, address_space=demo_space.name, ledger_path=ledger_path)


def test_ledger_under_a_regular_file_fails_before_the_broker(demo_space, tmp_path):
    """A ledger path whose parent is a regular file: refused even for root,
    naming the path and the OS error, nothing created on the broker."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    ledger = str(blocker / "ledger.json")
    res = helpers.run_module("address", dict(_explicit(demo_space, ledger), **q("ledger-q")))
    assert res.failed and not res.changed, res
    assert ledger in res.msg and "Not a directory" in res.msg and "Traceback" not in res.stderr, res
    assert demo_space.snapshot(DEMO_NAMES) == demo_space.baseline


ROOT_SKIP = ("runs as root: root ignores file permissions, so a read-only directory does not stop it "
             "(the regular-file parent test covers root)")


@pytest.mark.skipif(os.geteuid() == 0, reason=ROOT_SKIP)
def test_read_only_ledger_directory_fails_before_the_broker(demo_space, tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    os.chmod(str(directory), stat.S_IRUSR | stat.S_IXUSR)
    ledger = str(directory / "ledger.json")
    try:
        res = helpers.run_module("address", dict(_explicit(demo_space, ledger), **q("ledger-q")))
    finally:
        os.chmod(str(directory), 0o755)
    assert res.failed and not res.changed, res
    assert ledger in res.msg and "Permission denied" in res.msg, res
    assert demo_space.snapshot(DEMO_NAMES) == demo_space.baseline


def test_every_violation_is_reported_and_good_items_are_not_applied(demo_space):
    """A list with one good address and three bad ones: all three violations
    in one failure, and the good address is not created either."""
    res = demo_space.run("address", addresses=[
        q("fine-queue"),
        q("bad queue"),
        q("another", plan="brokered-topic"),
        sub("lonely-sub"),
    ])
    before = demo_space.baseline
    after = demo_space.snapshot(DEMO_NAMES)
    assert res.failed and not res.changed, res
    errors = res.get("errors") or []
    assert len(errors) >= 3, errors
    for fragment in ("'bad queue'", "'brokered-topic'", "needs the topic"):
        assert any(fragment in e for e in errors), (fragment, errors)
    assert "fine-queue" not in after["addresses"]
    assert after == before
