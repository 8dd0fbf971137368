"""Bad input is refused before anything is touched.

Each case runs a module against the demo space on the real broker and checks
what a user sees and what the broker keeps:

* the task fails and changes nothing (``changed`` is false);
* one reported error names the field, the offending value and the rule;
* the broker's AddressNames and QueueNames, the address settings of the demo
  addresses and the ownership ledger file are byte for byte what they were.
"""

import os

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
         "from 0 to"),
    Case("ttl-minimum-over-maximum", "address", q("new-q", message_ttl={"minimum": 5000, "maximum": 10}),
         "message_ttl", "5000", "must not be greater than maximum"),
    Case("zero-delivery-attempts", "address", q("new-q", message_redelivery={"maximum_delivery_attempts": 0}),
         "maximum_delivery_attempts", "0", "or -1 for unlimited"),
    Case("deadletter-is-a-queue", "address", q("new-q", deadletter="orders"), "deadletter", "'orders'",
         "type deadletter"),
    Case("expiry-unknown", "address", q("new-q", expiry="nowhere"), "expiry", "'nowhere'", "type deadletter"),
    Case("duplicate-addresses", "address", {"addresses": [q("dup"), q("dup")]}, "address", "'dup'",
         "listed twice"),
    Case("unknown-field-typo", "address", {"addresses": [q("new-q", dedletter="dlq")]}, "dedletter",
         None, "unknown field"),
    Case("unknown-nested-key-typo", "address",
         q("new-q", message_redelivery={"maximum_delivery_attemps": 3}), "maximum_delivery_attemps",
         "did you mean 'maximum_delivery_attempts'", "unknown field"),
    Case("unsupported-option-typo", "address", q("new-q", dead_letter="dlq"), "dead_letter", None,
         "Unsupported parameters"),
    Case("subscription-with-own-settings", "address",
         sub("new-sub", topic="events", message_ttl={"maximum": 1000}), "message_ttl", "1000",
         "not supported on a subscription"),
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


@pytest.mark.parametrize("case", SPACE_CASES + ADDRESS_CASES, ids=lambda c: c.id)
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
