"""The brokered-space service without a broker: normalisation of the live
state, the diff, the requests it would send, connection resolution, module
input, and the ledger. Pure functions on dict inputs; no fakes."""
import json
import os

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import diff as artemis_diff
from ansible_collections.enmasse.messaging.plugins.module_utils.model import requests as model_requests
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import reader as artemis_reader
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import settings as artemis_settings
from ansible_collections.enmasse.messaging.plugins.module_utils import connection
from ansible_collections.enmasse.messaging.plugins.module_utils import errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model import inputs as model_inputs
from ansible_collections.enmasse.messaging.plugins.module_utils.ledger import Ledger, LedgerError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue

pytestmark = pytest.mark.unit

CAT = Catalogue.default()
MBEAN = 'org.apache.activemq.artemis:broker="b"'
SPACE = {"name": "demo", "type": "brokered", "plan": "brokered-single-broker"}


def q(name, **kw):
    d = {"address": name, "type": "queue", "plan": "brokered-queue"}
    d.update(kw)
    return d


def queue_mbean(address, queue, routing):
    return ('org.apache.activemq.artemis:address="%s",broker="b",component=addresses,queue="%s",'
            'routing-type="%s",subcomponent=queues' % (address, queue, routing))


def live(*queues, **routing):
    """Live entries from (address, queue, routing, messages, consumers, max) tuples
    plus routing types of addresses without a queue of their own."""
    counts, multicast = {}, {}
    for address, queue, rt, messages, consumers, maxc in queues:
        counts[queue_mbean(address, queue, rt)] = {"MessageCount": messages, "ConsumerCount": consumers}
        if rt == "multicast":
            multicast[queue_mbean(address, queue, rt)] = {"MaxConsumers": maxc}
    records = artemis_reader.queue_records(counts, multicast)
    names = set(r["address"] for r in records) | set(routing)
    rts = dict((a, None) for a in names)
    for a in artemis_reader.without_own_queue(names, records):
        rts[a] = routing.get(a, [])
    return artemis_reader.live_entries(rts, records)


LIVE = live(("orders", "orders", "anycast", 3, 1, -1),
            ("dlq", "dlq", "anycast", 0, 0, -1),
            ("events", "audit", "multicast", 2, 0, 1),
            ("events", "client-sub", "multicast", 5, 1, -1),
            events=["MULTICAST"], halfmade=["ANYCAST"])


# ------------------------------------------------------------ live state

def test_mbean_keys_fast_path_and_escaped_names():
    """The fast path (names without escapes) and the full parser (escaped
    quotes and wildcards in a name) both give the name's keys."""
    plain = queue_mbean("a.b", "q,1", "anycast")
    assert "\\" not in plain
    escaped = queue_mbean('x\\"y', "x\\*y", "multicast")
    assert "\\" in escaped
    assert artemis_reader.mbean_keys(plain) == {
        "address": "a.b", "broker": "b", "component": "addresses", "queue": "q,1",
        "routing-type": "anycast", "subcomponent": "queues"}
    keys = artemis_reader.mbean_keys(escaped)
    assert (keys["address"], keys["queue"], keys["routing-type"]) == ('x"y', "x*y", "multicast")


def test_live_entries_reconstruct_the_model():
    assert LIVE["orders"]["shape"] == "queue" and LIVE["orders"]["complete"]
    assert (LIVE["orders"]["message_count"], LIVE["orders"]["consumers"]) == (3, 1)
    assert LIVE["events"]["shape"] == "topic"
    assert LIVE["events"]["message_count"] == 7  # all its subscriptions
    assert LIVE["events"]["queues"] == ["audit", "client-sub"]
    audit = LIVE["audit"]
    assert (audit["shape"], audit["topic"], audit["max_consumers"], audit["message_count"]) == \
        ("subscription", "events", 1, 2)
    assert LIVE["halfmade"]["shape"] == "queue" and not LIVE["halfmade"]["complete"]


def test_without_own_queue_only_lists_addresses_needing_routing_types():
    records = artemis_reader.queue_records({queue_mbean("q", "q", "anycast"): {},
                                            queue_mbean("t", "s", "multicast"): {}})
    assert artemis_reader.without_own_queue(["q", "t", "empty"], records) == ["t", "empty"]


@pytest.mark.parametrize("owned,hint,expected", [
    (None, None, "queue"), ({"type": "deadletter"}, None, "deadletter"), (None, "deadletter", "deadletter"),
    (None, "topic", "queue"), ({"type": "topic"}, "deadletter", "deadletter"),
])
def test_entry_type_uses_ledger_then_hint_when_they_fit_the_shape(owned, hint, expected):
    assert artemis_reader.entry_type(LIVE["dlq"], owned, hint) == expected


def test_live_view_of_a_subscription_and_an_unowned_queue():
    assert artemis_reader.live_view(LIVE["audit"], {"plan": "brokered-subscription", "type": "subscription"}) == {
        "address": "audit", "type": "subscription", "plan": "brokered-subscription",
        "topic": "events", "subscription": {"max_consumers": 1}}
    assert artemis_reader.live_view(LIVE["orders"]) == {"address": "orders", "type": "queue", "plan": None}


def test_status():
    assert artemis_reader.status_of(LIVE["orders"], True) == {
        "ready": True, "phase": "Active", "message_count": 3, "consumers": 1, "owned": True, "messages": []}
    half = artemis_reader.status_of(LIVE["halfmade"], False)
    assert half["phase"] == "Configuring" and half["messages"] == [
        "incomplete on the broker: the address 'halfmade' has no queue of its own"]
    pending = artemis_reader.status_of(None, True)
    assert pending["phase"] == "Pending" and pending["messages"] == ["not on the broker"]


# -------------------------------------------------------------- settings

def test_settings_round_trip_between_plain_and_artemis():
    plain = {"message_ttl": {"minimum": 10, "maximum": 1000}, "deadletter": "dlq", "expiry": "exp",
             "message_redelivery": {"maximum_delivery_attempts": 3, "redelivery_delay": 100,
                                    "redelivery_delay_multiplier": 2, "maximum_delivery_delay": 900}}
    art = artemis_settings.settings_to_artemis(plain)
    assert art == {"minExpiryDelay": 10, "maxExpiryDelay": 1000, "deadLetterAddress": "dlq",
                   "expiryAddress": "exp", "maxDeliveryAttempts": 3, "redeliveryDelay": 100,
                   "redeliveryMultiplier": 2, "maxRedeliveryDelay": 900}
    assert artemis_settings.settings_from_artemis(art) == plain
    assert artemis_settings.settings_from_artemis(art, keys={"deadLetterAddress"}) == {"deadletter": "dlq"}


def test_effective_settings_merge_the_plan_under_the_address():
    cat = Catalogue.from_data({"address_plans": [{
        "name": "ttl-queue", "address_space_type": "brokered", "address_type": "queue",
        "resources": {"broker": 0.01}, "message_ttl": {"minimum": 5, "maximum": 100}}]})
    a = q("x", plan="ttl-queue", message_ttl={"maximum": 50})
    assert artemis_settings.artemis_settings(a, cat) == {"minExpiryDelay": 5, "maxExpiryDelay": 50}
    assert artemis_settings.desired_view(a, cat)["message_ttl"] == {"minimum": 5, "maximum": 50}
    # deadletters and subscriptions get no address settings of their own
    assert artemis_settings.artemis_settings({"address": "d", "type": "deadletter", "plan": "brokered-deadletter"}, cat) == {}
    assert artemis_settings.artemis_settings(q("plain"), cat) == {}


def test_settings_match_compares_numbers_by_value():
    assert artemis_settings.settings_match({"redeliveryMultiplier": 2.0, "x": 1}, {"redeliveryMultiplier": 2})
    assert not artemis_settings.settings_match({"maxDeliveryAttempts": 10}, {"maxDeliveryAttempts": 3})
    assert not artemis_settings.settings_match({}, {"deadLetterAddress": "dlq"})


def test_visible_settings_show_managed_keys_and_what_differs_from_the_catch_all():
    baseline = {"deadLetterAddress": "DLQ", "expiryAddress": "ExpiryQueue", "redeliveryDelay": 0}
    merged = dict(baseline, maxDeliveryAttempts=10)
    assert artemis_settings.visible_settings(merged, baseline) == {"message_redelivery": {"maximum_delivery_attempts": 10}}
    assert artemis_settings.visible_settings(merged, baseline, {"deadLetterAddress"}) == {
        "deadletter": "DLQ", "message_redelivery": {"maximum_delivery_attempts": 10}}
    assert artemis_settings.visible_settings(None, baseline) == {}


# ------------------------------------------------------------------ diff

def ops(changes, name=None):
    return [(p, r["operation"], r["arguments"]) for p, n, r in changes.requests if name in (None, n)]


def test_create_every_type_with_the_artemis_mapping():
    desired = [{"address": "dl", "type": "deadletter", "plan": "brokered-deadletter"},
               q("q1", deadletter="dl", message_redelivery={"maximum_delivery_attempts": 3}),
               {"address": "t", "type": "topic", "plan": "brokered-topic"},
               {"address": "s", "type": "subscription", "plan": "brokered-subscription", "topic": "t"}]
    ch = artemis_diff.plan_changes(desired, [], {}, {}, {}, CAT, MBEAN)
    assert ch.created == ["dl", "q1", "t", "s"] and not ch.updated and not ch.deleted
    assert ch.before == {} and sorted(ch.after) == ["dl", "q1", "s", "t"]
    (phase, op, (cfg, ignore)), = ops(ch, "dl")
    assert (phase, op, ignore) == (artemis_diff.PHASE_CREATE, artemis_diff.OP_CREATE_QUEUE, True)
    assert json.loads(cfg) == {"name": "dl", "address": "dl", "routing-type": "ANYCAST", "durable": True,
                               "auto-create-address": True}
    q1 = ops(ch, "q1")
    assert q1[1] == (artemis_diff.PHASE_CREATE, artemis_diff.OP_ADD_SETTINGS,
                     ["q1", json.dumps({"deadLetterAddress": "dl", "maxDeliveryAttempts": 3}, sort_keys=True)])
    # a topic: no auto-creation on it (the broker refuses undeclared names by permission)
    assert ops(ch, "t") == [(artemis_diff.PHASE_CREATE, artemis_diff.OP_CREATE_ADDRESS, ["t", "MULTICAST"]),
                            (artemis_diff.PHASE_CREATE, artemis_diff.OP_ADD_SETTINGS,
                             ["t", json.dumps({"autoCreateAddresses": False}, sort_keys=True)])]
    (phase, op, (cfg, unused)), = ops(ch, "s")
    assert phase == artemis_diff.PHASE_SUBSCRIBE  # after its topic exists
    assert json.loads(cfg) == {"name": "s", "address": "t", "routing-type": "MULTICAST", "durable": True,
                               "max-consumers": 1, "auto-create-address": False}
    assert ch.record["s"]["subscription"] == {"max_consumers": 1}


def test_no_change_when_live_matches_and_the_ledger_owns_it():
    owned = {"orders": q("orders"), "dlq": {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"}}
    ch = artemis_diff.plan_changes([q("orders"), owned["dlq"]], [], LIVE, owned, {}, CAT, MBEAN)
    assert not ch.changed and ch.requests == [] and ch.diff() == {"before": {}, "after": {}}


def test_settings_drift_is_an_update_with_before_and_after():
    want = q("orders", message_redelivery={"maximum_delivery_attempts": 3})
    merged = {"orders": {"maxDeliveryAttempts": 10, "deadLetterAddress": "DLQ"}}
    ch = artemis_diff.plan_changes([want], [], LIVE, {"orders": want}, merged, CAT, MBEAN)
    assert ch.updated == ["orders"] and ch.reasons["orders"] == ["address settings differ"]
    assert ch.before["orders"]["message_redelivery"] == {"maximum_delivery_attempts": 10}
    assert "deadletter" not in ch.before["orders"]  # not ours, not shown
    assert ch.after["orders"]["message_redelivery"] == {"maximum_delivery_attempts": 3}
    assert ops(ch) == [(artemis_diff.PHASE_CREATE, artemis_diff.OP_ADD_SETTINGS,
                        ["orders", json.dumps({"maxDeliveryAttempts": 3})])]


def test_settings_no_longer_wanted_are_removed():
    had = q("orders", deadletter="dlq")
    ch = artemis_diff.plan_changes([q("orders")], [], LIVE, {"orders": had},
                                   {"orders": {"deadLetterAddress": "dlq"}}, CAT, MBEAN)
    assert ch.updated == ["orders"]
    assert ops(ch) == [(artemis_diff.PHASE_CREATE, artemis_diff.OP_REMOVE_SETTINGS, ["orders"])]


def test_adoption_plan_change_and_completing_a_half_made_queue():
    ch = artemis_diff.plan_changes([q("orders"), q("halfmade")], [], LIVE, {}, {}, CAT, MBEAN)
    assert ch.updated == ["orders", "halfmade"] and not ch.created
    assert "not owned yet" in ch.reasons["orders"][0]
    assert ops(ch, "orders") == []  # only the ledger changes
    assert ops(ch, "halfmade")[0][1] == artemis_diff.OP_CREATE_QUEUE
    cat = Catalogue.from_data({"address_plans": [{"name": "big-queue", "address_space_type": "brokered",
                                                  "address_type": "queue", "resources": {"broker": 0.1}}]})
    ch = artemis_diff.plan_changes([q("orders", plan="big-queue")], [], LIVE, {"orders": q("orders")}, {}, cat, MBEAN)
    assert ch.reasons["orders"] == ["plan 'brokered-queue' -> 'big-queue'"]
    assert ch.before["orders"]["plan"] == "brokered-queue" and ch.after["orders"]["plan"] == "big-queue"


def test_deletes_subscriptions_before_addresses_and_forgets_what_is_gone():
    owned = {"orders": q("orders", deadletter="dlq"),
             "audit": {"address": "audit", "type": "subscription", "plan": "brokered-subscription",
                       "topic": "events"},
             "gone": q("gone"),
             "events": {"address": "events", "type": "queue", "plan": "brokered-queue"}}  # live: a topic
    ch = artemis_diff.plan_changes([], ["orders", "audit", "gone", "events"], LIVE, owned, {}, CAT, MBEAN)
    assert ch.deleted == ["orders", "audit", "gone", "events"]
    assert ch.removing == ["orders", "audit"]
    assert ops(ch, "audit") == [(artemis_diff.PHASE_UNSUBSCRIBE, artemis_diff.OP_DESTROY_QUEUE, ["audit", True])]
    assert ops(ch, "orders") == [(artemis_diff.PHASE_DELETE, artemis_diff.OP_DELETE_ADDRESS, ["orders", True]),
                                 (artemis_diff.PHASE_DELETE, artemis_diff.OP_REMOVE_SETTINGS, ["orders"])]
    assert ops(ch, "gone") == [] and ops(ch, "events") == []  # missing, or not the thing we made
    assert ch.record == {"orders": None, "audit": None, "gone": None, "events": None}
    assert set(ch.before) == {"orders", "audit", "gone", "events"} and ch.after == {}


def test_messages_held_names_address_and_count():
    msgs = artemis_diff.messages_held(["orders", "events", "dlq"], LIVE)
    assert msgs == ["address 'orders' (queue) holds 3 message(s); set force: true to delete it anyway",
                    "address 'events' (topic) holds 7 message(s) in its subscriptions; set force: true "
                    "to delete it anyway"]


def test_refusals_specific_to_brokered_spaces():
    errs = model_requests.subscription_setting_errors([
        q("fine", message_ttl={"maximum": 1}),
        {"address": "s", "type": "subscription", "topic": "t", "message_redelivery": {"redelivery_delay": 1000},
         "message_ttl": {"maximum": 1000}}])
    # message_ttl on a subscription: the model's rule (validation.TTL_TYPES), one message
    assert len(errs) == 1 and "addresses[1](s).message_redelivery" in errs[0] and "1000" in errs[0]
    owned = {"t": {"address": "t", "type": "topic"},
             "s": {"address": "s", "type": "subscription", "topic": "t"}}
    assert "owned subscription(s) s" in model_requests.orphan_subscription_errors(["t"], owned)[0]
    assert model_requests.orphan_subscription_errors(["t", "s"], owned) == []


def test_quota_order_lists_the_task_first_then_the_owned_addresses_that_stay():
    owned = {"kept": q("kept"), "old": q("old"), "dropped": q("dropped")}
    order = model_requests.quota_order([q("new"), q("old")], owned, ["dropped"])
    assert [a["address"] for a in order] == ["new", "old", "kept"]


def test_current_for_validation_covers_listed_and_referenced_names_only():
    owned = {"dlq": {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"},
             "missing": q("missing")}
    present = [q("orders", deadletter="dlq"), q("missing"), {"address": "audit", "type": "subscription",
                                                             "topic": "events"}]
    cur = artemis_diff.current_for_validation(present, LIVE, owned, gone=set())
    assert sorted(cur) == ["audit", "dlq", "events", "missing", "orders"]
    assert cur["dlq"]["type"] == "deadletter" and cur["events"]["type"] == "topic"
    assert "dlq" not in artemis_diff.current_for_validation(present, LIVE, owned, gone={"dlq"})


def test_clean_address_drops_input_only_keys_and_fills_defaults():
    a = artemis_settings.clean_address({"address": "s", "type": "subscription", "plan": "p", "topic": "t",
                                        "name": "k8s-name", "state": "present", "address_space": "demo",
                                        "deadletter": None})
    assert a == {"address": "s", "type": "subscription", "plan": "p", "topic": "t",
                 "subscription": {"max_consumers": 1}}


# ----------------------------------------------------------- connection

def write(path, data):
    with open(str(path), "w") as f:
        json.dump(data, f)
    return str(path)


CONN = {"address_space": "demo", "type": "brokered", "plan": "brokered-single-broker",
        "management_url": "http://127.0.0.1:8161/console/jolokia", "broker_name": "demo",
        "management_user": "admin", "management_password": "secret", "ledger_path": "/x/ledger.json",
        "endpoints": [{"name": "amqp", "host": "h", "port": 5672, "protocols": ["amqp"]}]}


def test_connection_file_values_and_explicit_overrides(tmp_path):
    path = write(tmp_path / "demo.json", CONN)
    conn = connection.resolve_connection({"connection_file": path, "broker_name": "other", "timeout": None}, "demo")
    assert conn["broker_name"] == "other" and conn["management_password"] == "secret"
    assert conn["plan"] == "brokered-single-broker" and conn["timeout"] == connection.DEFAULT_TIMEOUT
    assert conn["file_found"] and conn["connection_file"] == path


def test_missing_values_name_the_option_and_the_file(tmp_path):
    path = write(tmp_path / "demo.json", dict(CONN, management_password=None, ledger_path=None))
    with pytest.raises(errors.ConfigError) as e:
        connection.resolve_connection({"connection_file": path}, "demo")
    assert len(e.value.errors) == 2
    assert "missing management_password" in e.value.errors[0] and path in e.value.errors[0]
    with pytest.raises(errors.ConfigError) as e:
        connection.resolve_connection({"connection_file": str(tmp_path / "nope.json")}, "demo")
    assert "does not exist" in str(e.value)


def test_connection_file_of_another_space_is_refused(tmp_path):
    path = write(tmp_path / "demo.json", CONN)
    with pytest.raises(errors.ConfigError, match="belongs to address space 'demo', not 'other'"):
        connection.resolve_connection({"connection_file": path}, "other")


# ---------------------------------------------------------------- inputs

def params(**kw):
    p = dict((k, None) for k in model_inputs.SINGLE_FIELDS + ("definition", "addresses"))
    p["state"] = "present"
    p.update(kw)
    return p


def test_single_form_document_and_bulk_with_per_item_state():
    assert model_inputs.address_inputs(params(address="a", type="queue", plan="p"), "demo") == (
        [{"address": "a", "type": "queue", "plan": "p"}], [], [], ["addresses[0]"])
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "demo.inv"},
           "spec": {"address": "inv", "type": "queue", "plan": "brokered-queue"}}
    present, absent, errs, unused = model_inputs.address_inputs(params(definition=doc), "demo")
    assert present[0]["address"] == "inv" and not errs
    present, absent, errs, positions = model_inputs.address_inputs(
        params(addresses=[{"address": "b", "state": "absent"}, q("a")]), "demo")
    assert [a["address"] for a in present] == ["a"] and absent == ["b"] and not errs
    assert positions == ["addresses[1]"]  # where it is in the task, for the messages
    assert model_inputs.address_inputs(params(address="a", state="absent"), "demo") == ([], ["a"], [], [])


@pytest.mark.parametrize("kw,fragment", [
    (dict(address="a", addresses=[]), "not both"),
    (dict(address="a", definition={"kind": "Address"}), "not both"),
    ({}, "is required"),
    (dict(addresses=["x"]), "must be a mapping"),
    (dict(addresses=[{"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "other.x"},
                      "spec": {"address": "x"}}]),
     "belongs to address space 'other', not 'demo'"),
    (dict(addresses=[{"address": "x", "address_space": "other"}]), "does not match address_space 'demo'"),
    (dict(addresses=[{"address": "x", "state": "gone"}]), "must be one of present, absent"),
])
def test_bad_input_forms(kw, fragment):
    unused1, unused2, errs, unused3 = model_inputs.address_inputs(params(**kw), "demo")
    assert errs and fragment in " ".join(errs)


def test_space_input_defaults_from_ledger_then_connection_file():
    p = {"name": "demo", "type": None, "plan": None, "authentication_service": None, "endpoints": None,
         "definition": None}
    assert model_inputs.space_input(p, None, {"plan": "from-file"}) == {"name": "demo", "type": "brokered",
                                                                        "plan": "from-file"}
    assert model_inputs.space_input(p, {"plan": "from-ledger", "type": "brokered"}, {"plan": "x"})["plan"] == "from-ledger"
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "AddressSpace", "metadata": {"name": "demo"},
           "spec": {"type": "brokered", "plan": "p"}}
    assert model_inputs.space_input(dict(p, definition=doc), None, {})["plan"] == "p"
    with pytest.raises(errors.ValidationError, match="does not match name"):
        model_inputs.space_input(dict(p, definition=dict(doc, metadata={"name": "x"})), None, {})
    with pytest.raises(errors.ConfigError, match="not both"):
        model_inputs.space_input(dict(p, definition=doc, plan="p"), None, {})


# ---------------------------------------------------------------- ledger

def test_ledger_round_trip_atomic_write_and_remove(tmp_path):
    path = str(tmp_path / "sub" / "ledger.json")
    led = Ledger.load(path)
    assert not led.exists and led.addresses == {} and led.space is None
    led.space = {"name": "demo", "type": "brokered", "plan": "p"}
    led.addresses["q"] = q("q")
    led.save()
    assert oct(os.stat(path).st_mode & 0o777) == "0o640"
    assert os.listdir(os.path.dirname(path)) == ["ledger.json"]  # no temp file left
    again = Ledger.load(path)
    assert again.exists and again.addresses == {"q": q("q")} and again.space["plan"] == "p"
    assert json.load(open(path))["version"] == 1
    again.remove()
    assert not os.path.exists(path)


def test_ledger_refuses_garbage(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text("{not json")
    with pytest.raises(LedgerError, match="not valid JSON"):
        Ledger.load(str(path))
    path.write_text('{"version": 7}')
    with pytest.raises(LedgerError, match="unknown format"):
        Ledger.load(str(path))
