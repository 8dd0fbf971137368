"""Check mode, diff, idempotence, force and ownership against the real broker."""

import json

import pytest

import helpers

pytestmark = pytest.mark.integration


q = helpers.queue
DLQ = {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"}
INITIAL = [DLQ, q("keep-a"), q("change-b", deadletter="dlq"), q("prune-c")]
DESIRED = [DLQ, q("keep-a"), q("change-b", deadletter="dlq", message_ttl={"maximum": 5000}), q("new-d")]
WATCHED = ["dlq", "keep-a", "change-b", "prune-c", "new-d"]


def diff_names(res):
    d = res.get("diff") or {}
    return set(d.get("before") or {}) | set(d.get("after") or {})


def test_check_mode_reports_but_changes_nothing_then_real_run_then_noop(space):
    space.converge(INITIAL)
    before = space.snapshot(WATCHED)

    # check mode: reports the change, touches neither broker nor ledger
    dry = space.run("address", check_mode=True, diff=True, addresses=DESIRED, prune=True)
    assert not dry.failed, dry
    assert dry.changed
    assert dry["changes"] == {"created": ["new-d"], "updated": ["change-b"], "deleted": ["prune-c"]}
    assert diff_names(dry) == {"new-d", "change-b", "prune-c"}
    diff = dry["diff"]
    assert "new-d" not in diff["before"] and "prune-c" not in diff["after"]
    assert diff["before"]["change-b"].get("message_ttl") != {"maximum": 5000}
    assert diff["after"]["change-b"]["message_ttl"] == {"maximum": 5000}
    assert space.snapshot(WATCHED) == before, "check mode changed the broker or the ledger"

    # the real run does exactly what check mode announced
    real = space.run("address", diff=True, addresses=DESIRED, prune=True)
    assert not real.failed, real
    assert real.changed
    assert real["changes"] == dry["changes"]
    assert real["diff"] == dry["diff"]
    names = space.broker.address_names()
    assert "new-d" in names and "prune-c" not in names and "keep-a" in names
    assert space.broker.address_settings("change-b")["maxExpiryDelay"] == 5000
    assert space.broker.address_settings("change-b")["deadLetterAddress"] == "dlq"
    ledger = json.loads(open(space.broker.ledger_path).read())
    assert set(ledger["addresses"]) == {"dlq", "keep-a", "change-b", "new-d"}

    # converging again changes nothing and says so
    after = space.snapshot(WATCHED)
    again = space.run("address", diff=True, addresses=DESIRED, prune=True)
    assert not again.failed, again
    assert not again.changed, again["changes"]
    assert again["changes"] == {"created": [], "updated": [], "deleted": []}
    assert diff_names(again) == set()
    assert space.snapshot(WATCHED) == after
    # the bulk form lists only what changed unless asked for more
    assert again["addresses"] == []
    full = space.run("address", addresses=DESIRED, prune=True, return_addresses="all")
    assert not full.changed and sorted(a["address"] for a in full["addresses"]) == sorted(
        a["address"] for a in DESIRED)
    assert all(a["status"]["ready"] and a["status"]["phase"] == "Active" and a["status"]["messages"] == []
               for a in full["addresses"])


def test_bulk_form_reports_what_return_addresses_selects(space):
    space.converge([DLQ])
    one = {"address": "rep-1", "type": "queue", "plan": "brokered-queue"}
    two = {"address": "rep-2", "type": "queue", "plan": "brokered-queue"}
    first = space.run("address", addresses=[DLQ, one])
    assert first.changed and [a["address"] for a in first["addresses"]] == ["rep-1"]
    quiet = space.run("address", addresses=[DLQ, one, two], return_addresses="none")
    assert quiet.changed and quiet["addresses"] == [] and quiet["changes"]["created"] == ["rep-2"]
    assert "rep-2" in space.broker.address_names()
    single = space.run("address", address="rep-1", type="queue", plan="brokered-queue")
    assert not single.changed and [a["address"] for a in single["addresses"]] == ["rep-1"]


def test_single_form_is_idempotent_and_check_mode_creates_nothing(space):
    space.converge([DLQ])
    args = dict(address="solo", type="queue", plan="brokered-queue", deadletter="dlq",
                message_redelivery={"maximum_delivery_attempts": 4, "redelivery_delay": 100})
    dry = space.run("address", check_mode=True, **args)
    assert dry.changed and not dry.failed, dry
    assert "solo" not in space.broker.address_names()
    first = space.run("address", **args)
    assert first.changed and not first.failed, first
    assert first["addresses"][0]["status"]["ready"]
    settings = space.broker.address_settings("solo")
    assert settings["maxDeliveryAttempts"] == 4 and settings["redeliveryDelay"] == 100
    second = space.run("address", **args)
    assert not second.failed and not second.changed, second


def test_definition_document_is_idempotent(space):
    space.converge([DLQ])
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address",
           "metadata": {"name": "itest.invoices"},
           "spec": {"address": "invoices", "type": "queue", "plan": "brokered-queue",
                    "deadletter": "dlq", "messageRedelivery": {"maximumDeliveryAttempts": 2}}}
    first = space.run("address", definition=doc)
    assert first.changed and not first.failed, first
    assert space.broker.address_settings("invoices")["maxDeliveryAttempts"] == 2
    second = space.run("address", definition=doc)
    assert not second.failed and not second.changed, second


def test_address_space_check_mode_and_idempotence(space):
    dry = space.run("address_space", check_mode=True, diff=True, type="brokered", plan=helpers.DEFAULT_PLAN)
    assert dry.changed and not dry.failed, dry
    assert not space.snapshot()["ledger"], "check mode wrote the ledger"
    first = space.run("address_space", type="brokered", plan=helpers.DEFAULT_PLAN)
    assert first.changed and not first.failed, first
    assert first["address_space"]["status"]["ready"] is True
    assert first["address_space"]["status"]["phase"] == "Active"
    ledger = space.snapshot()["ledger"]
    second = space.run("address_space", type="brokered", plan=helpers.DEFAULT_PLAN)
    assert not second.failed and not second.changed, second
    assert space.snapshot()["ledger"] == ledger


def _queue_with_messages(space, name, count):
    space.converge([q(name)])
    with helpers.connection(space.amqp_config()) as conn:
        helpers.send(conn, name, count, durable=True)
    assert space.broker.queue_attribute(name, "MessageCount") == count


@pytest.mark.parametrize("how", ["state-absent", "prune"])
def test_deleting_a_queue_with_messages_needs_force(space, how):
    _queue_with_messages(space, "busy", 2)
    if how == "state-absent":
        args = dict(address="busy", state="absent")
    else:
        args = dict(addresses=[q("other")], prune=True)
    before = space.snapshot(["busy"])
    refused = space.run("address", **args)
    assert refused.failed, refused
    assert "busy" in refused.msg and "2 message" in refused.msg and "force" in refused.msg, refused.msg
    assert space.snapshot(["busy"]) == before, "a refused delete changed the broker or the ledger"
    assert space.broker.queue_attribute("busy", "MessageCount") == 2

    forced = space.run("address", force=True, **args)
    assert not forced.failed and forced.changed, forced
    assert forced["changes"]["deleted"] == ["busy"]
    assert "busy" not in space.broker.address_names()
    assert "busy" not in json.loads(open(space.broker.ledger_path).read())["addresses"]


def test_check_mode_delete_with_messages_is_refused_too(space):
    _queue_with_messages(space, "busy", 1)
    res = space.run("address", check_mode=True, address="busy", state="absent")
    assert res.failed and "force" in res.msg, res
    assert "busy" in space.broker.address_names()


def test_hand_made_address_is_never_pruned_or_deleted(space):
    space.converge([q("mine")])
    space.broker.create_by_hand("handmade")
    with helpers.connection(space.amqp_config()) as conn:
        helpers.send(conn, "handmade", 1, durable=True)

    pruned = space.run("address", addresses=[q("other")], prune=True, force=True)
    assert not pruned.failed, pruned
    assert pruned["changes"]["deleted"] == ["mine"]
    assert "handmade" in space.broker.address_names()

    absent = space.run("address", address="handmade", state="absent", force=True)
    assert not absent.failed, absent
    assert not absent.changed
    assert "handmade" in space.broker.address_names()
    assert space.broker.queue_attribute("handmade", "MessageCount") == 1
    # the user is told why nothing happened, with a plain warning (no deprecation noise)
    assert "handmade" in json.dumps(absent.get("warnings")), absent
    assert not absent.get("deprecations"), absent.get("deprecations")

    gone = space.run("address_space", state="absent", force=True)
    assert not gone.failed and gone.changed, gone
    names = space.broker.address_names()
    assert "handmade" in names and "other" not in names

    info = space.run("address_info", include_unowned=True)
    assert not info.failed, info
    listed = dict((a["address"], a) for a in info["addresses"])
    assert listed["handmade"]["status"]["owned"] is False
    hidden = space.run("address_info", include_unowned=False)
    assert "handmade" not in [a["address"] for a in hidden["addresses"]]


def test_src_file_through_ansible_playbook(space, tmp_path):
    """``src``: the list is a YAML file on the controller; the action plugin
    sends it to the host as JSON, the module converges it, and the task's
    invocation does not echo the list."""
    space.converge([DLQ])
    listing = tmp_path / "addresses.yml"
    listing.write_text("addresses:\n" + "".join(
        "  - {address: src-%d, type: queue, plan: brokered-queue, deadletter: dlq}\n" % i for i in range(3))
        + "  - {address: dlq, type: deadletter, plan: brokered-deadletter}\n")
    task = {"name": "from src", "enmasse.messaging.address": {
        "connection_file": space.connection_file, "address_space": space.name, "src": str(listing)}}
    first = helpers.run_playbook([task])
    assert first.rc == 0, first
    res = first.task("from src")
    assert res["changed"] and sorted(res["changes"]["created"]) == ["src-0", "src-1", "src-2"]
    assert "addresses" not in res["invocation"]["module_args"] or not res["invocation"]["module_args"]["addresses"]
    assert "src-0" not in json.dumps(res["invocation"])
    assert {"src-0", "src-1", "src-2"} <= set(space.broker.address_names())
    assert space.broker.address_settings("src-1")["deadLetterAddress"] == "dlq"
    again = helpers.run_playbook([task])
    assert again.rc == 0 and not again.task("from src")["changed"], again

    both = dict(task, **{"enmasse.messaging.address": dict(task["enmasse.messaging.address"], addresses=[DLQ])})
    refused = helpers.run_playbook([both])
    assert refused.rc != 0 and "src" in refused.task("from src")["msg"]
    bad = tmp_path / "bad.yml"
    bad.write_text("just: a mapping\n")
    wrong = {"name": "from src", "enmasse.messaging.address": dict(task["enmasse.messaging.address"], src=str(bad))}
    refused = helpers.run_playbook([wrong])
    assert refused.rc != 0 and "must hold a list of addresses" in refused.task("from src")["msg"]
