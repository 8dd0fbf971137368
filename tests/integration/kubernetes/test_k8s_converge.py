"""The modules with backend: kubernetes against a real API server: address
spaces, addresses, idempotence by server-side apply, check mode as a server
dry run, conflicts with other field managers, prune, delete rules, plans,
the info modules. No EnMasse operator runs here: where a test needs one's
answer it writes the status an operator writes (with the object)."""

import threading
import time

from conftest import Namespace, dump

FM = "enmasse.messaging"
QUEUE = {"address": "orders", "type": "queue", "plan": "brokered-queue"}


def managers(obj):
    return [m["manager"] for m in obj["metadata"].get("managedFields") or []]


def test_space_and_addresses_converge_idempotently(space):
    sp = space.list("AddressSpace")["shop"]
    assert sp["spec"] == {"type": "brokered", "plan": "brokered-single-broker"}
    assert sp["metadata"]["labels"]["app.kubernetes.io/managed-by"] == FM and FM in managers(sp)
    addresses = [dict(QUEUE, deadletter="dlq"), {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"},
                 {"address": "events", "type": "topic", "plan": "brokered-topic"},
                 {"address": "audit", "type": "subscription", "plan": "brokered-subscription", "topic": "events"},
                 {"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "shop.invoices"},
                  "spec": {"address": "invoices", "type": "queue", "plan": "brokered-queue"}}]
    r = space.run("address", address_space="shop", addresses=addresses)
    assert not r.failed, r
    assert r.changed and sorted(r["changes"]["created"]) == ["audit", "dlq", "events", "invoices", "orders"]
    live = space.addresses()
    assert live["orders"]["spec"] == {"address": "orders", "type": "queue", "plan": "brokered-queue", "deadletter": "dlq"}
    assert live["audit"]["spec"]["subscription"] == {"maxConsumers": 1}
    # a document keeps its name; a plain address gets EnMasse's generated name
    assert live["invoices"]["metadata"]["name"] == "shop.invoices"
    assert live["orders"]["metadata"]["name"].startswith("shop.orders.")
    rv = dict((n, o["metadata"]["resourceVersion"]) for n, o in live.items())
    # the same task again: nothing applied, nothing changed
    again = space.run("address", address_space="shop", addresses=addresses, return_addresses="all")
    assert not again.failed and not again.changed, again
    assert dict((n, o["metadata"]["resourceVersion"]) for n, o in space.addresses().items()) == rv
    # status as read (no operator: nothing reported yet)
    st = dict((a["address"], a["status"]) for a in again["addresses"])
    assert st["orders"]["ready"] is False and st["orders"]["owned"] is True and st["orders"]["reported"] == {}
    # a change of a setting: one object updated, the diff shows the user's fields
    addresses[0] = dict(QUEUE, deadletter="dlq", message_ttl={"maximum": 60000})
    upd = space.run("address", address_space="shop", addresses=addresses)
    assert upd.changed and upd["changes"] == {"created": [], "updated": ["orders"], "deleted": []}
    assert upd["diff"]["before"]["orders"].get("message_ttl") is None
    assert upd["diff"]["after"]["orders"]["message_ttl"] == {"maximum": 60000}
    # info modules read the same objects
    info = space.run("address_info", address_space="shop")
    assert sorted(a["address"] for a in info["addresses"]) == ["audit", "dlq", "events", "invoices", "orders"]
    sinfo = space.run("address_space_info", name="shop")
    assert sinfo["address_space"]["exists"] and sinfo["address_space"]["owned_addresses"] == 5


def test_check_mode_is_a_server_dry_run_and_persists_nothing(space):
    r = space.run("address", check_mode=True, address_space="shop", addresses=[QUEUE])
    assert not r.failed and r.changed and r["changes"]["created"] == ["orders"], r
    assert r["diff"]["after"]["orders"]["plan"] == "brokered-queue"
    assert space.addresses() == {}
    assert space.run("address", address_space="shop", addresses=[QUEUE]).changed
    before = space.addresses()["orders"]
    chk = space.run("address", check_mode=True, address_space="shop", prune=True,
                    addresses=[QUEUE, {"address": "x", "type": "deadletter", "plan": "brokered-deadletter"}])
    assert chk.changed and chk["changes"]["created"] == ["x"], chk
    after = space.addresses()
    assert list(after) == ["orders"] and after["orders"]["metadata"]["resourceVersion"] == \
        before["metadata"]["resourceVersion"]
    # a dry-run delete (prune) of an owned address deletes nothing
    chk = space.run("address", check_mode=True, address_space="shop", addresses=[], prune=True)
    assert chk["changes"]["deleted"] == ["orders"] and "orders" in space.addresses()
    # check mode of a new space creates nothing either
    sp = space.run("address_space", check_mode=True, name="other", type="brokered", plan="brokered-single-broker")
    assert sp.changed and "other" not in space.list("AddressSpace")


def test_conflict_with_another_manager_is_reported_and_taken_over_only_when_asked(space):
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "shop.orders"},
           "spec": {"address": "orders", "type": "queue", "plan": "brokered-queue", "deadletter": "dlq"}}
    space.run("address", address_space="shop", address="dlq", type="deadletter", plan="brokered-deadletter")
    space.apply_as("ops-team", doc)
    # the same values: no conflict, the collection shares the fields and owns the labels
    r = space.run("address", address_space="shop", addresses=[dict(QUEUE, deadletter="dlq", name="orders")])
    assert not r.failed, r
    # another value for a field ops-team owns: refused, naming the field and its manager
    r = space.run("address", address_space="shop", addresses=[dict(QUEUE, deadletter="dlq2", name="orders")]
                  + [{"address": "dlq2", "type": "deadletter", "plan": "brokered-deadletter"}])
    assert r.failed, r
    assert "conflict" in r.msg and ".spec.deadletter" in r.msg and "'ops-team'" in r.msg and "force_conflicts" in r.msg
    assert r["failed_addresses"] == ["orders"]
    assert space.addresses()["orders"]["spec"]["deadletter"] == "dlq"
    # force_conflicts: taken over
    r = space.run("address", address_space="shop", force_conflicts=True,
                  addresses=[dict(QUEUE, deadletter="dlq2", name="orders"),
                             {"address": "dlq2", "type": "deadletter", "plan": "brokered-deadletter"}])
    assert not r.failed and r["changes"]["updated"] == ["orders"], r
    obj = space.addresses()["orders"]
    assert obj["spec"]["deadletter"] == "dlq2"
    owners = dict((m["manager"], m) for m in obj["metadata"]["managedFields"])
    assert "f:deadletter" in str(owners[FM]["fieldsV1"]) and "f:deadletter" not in str(owners["ops-team"]["fieldsV1"])


def test_prune_and_absent_touch_only_the_collections_objects(space):
    mine = [QUEUE, {"address": "gone", "type": "queue", "plan": "brokered-queue"}]
    assert space.run("address", address_space="shop", addresses=mine).changed
    # someone else's address, and one with the label copied by hand
    space.create_as("kubectl", {"apiVersion": "enmasse.io/v1beta1", "kind": "Address",
                                "metadata": {"name": "shop.handmade"},
                                "spec": {"address": "handmade", "type": "queue", "plan": "brokered-queue"}})
    space.create_as("kubectl", {"apiVersion": "enmasse.io/v1beta1", "kind": "Address",
                                "metadata": {"name": "shop.copied", "labels": {"app.kubernetes.io/managed-by": FM}},
                                "spec": {"address": "copied", "type": "queue", "plan": "brokered-queue"}})
    r = space.run("address", address_space="shop", addresses=[QUEUE], prune=True)
    assert not r.failed and r["changes"]["deleted"] == ["gone"], r
    assert "prune: 2 address(es) not made by this collection not deleted" in str(r["warnings"]) and \
        "copied, handmade" in str(r["warnings"]), r
    assert sorted(space.addresses()) == ["copied", "handmade", "orders"]
    r = space.run("address", address_space="shop", address="handmade", state="absent")
    assert not r.changed and "not owned" in str(r.get("warnings")), r
    assert "handmade" in space.addresses()


def test_delete_of_a_queue_holding_messages_needs_force(space):
    space.run("address", address_space="shop", addresses=[QUEUE])
    name = space.addresses()["orders"]["metadata"]["name"]
    # no operator here: the test writes what an operator reports (with the object)
    space.operator_status("Address", name, {"isReady": True, "phase": "Active", "messageCount": 5})
    r = space.run("address", address_space="shop", address="orders", state="absent")
    assert r.failed and r.msg == "address 'orders' (queue) holds 5 message(s); set force: true to delete it anyway", r
    assert "orders" in space.addresses()
    # the whole space: the same rule
    r = space.run("address_space", name="shop", state="absent")
    assert r.failed and "holds 5 message(s)" in r.msg
    r = space.run("address", address_space="shop", address="orders", state="absent", force=True)
    assert r.changed and r["addresses"][0]["status"]["phase"] == "Deleted"
    assert space.addresses() == {}
    r = space.run("address_space", name="shop", state="absent")
    assert r.changed and "shop" not in space.list("AddressSpace")


def test_wait_until_ready_and_fail_with_the_operators_messages(space):
    space.run("address", address_space="shop", addresses=[QUEUE])
    name = space.addresses()["orders"]["metadata"]["name"]
    # no operator here: the test writes what an operator reports (with the object)
    space.operator_status("Address", name, {"isReady": False, "phase": "Configuring",
                                            "messages": ["broker broker-0 has not created the queue yet"]})
    r = space.run("address", address_space="shop", addresses=[QUEUE], wait=True, wait_timeout=2,
                  return_addresses="all")
    assert r.failed, r
    assert "not ready after 2s" in r.msg and "broker broker-0 has not created the queue yet" in r.msg
    assert r["addresses"][0]["status"]["phase"] == "Configuring"

    def operator():
        time.sleep(1.5)
        space.operator_status("Address", name, {"isReady": True, "phase": "Active", "messages": [],
                                                "planStatus": {"name": "brokered-queue", "partitions": 1}})
    t = threading.Thread(target=operator)
    t.start()
    r = space.run("address", address_space="shop", addresses=[QUEUE], wait=True, wait_timeout=30,
                  return_addresses="all")
    t.join()
    assert not r.failed, r
    st = r["addresses"][0]["status"]
    assert st["ready"] is True and st["phase"] == "Active"
    assert st["reported"]["planStatus"] == {"name": "brokered-queue", "partitions": 1}
    # the address space: the same, with its own status
    space.operator_status("AddressSpace", "shop", {"isReady": False, "phase": "Failed",
                                                   "messages": ["no authentication service"]})
    r = space.run("address_space", name="shop", type="brokered", plan="brokered-single-broker", wait=True,
                  wait_timeout=1)
    assert r.failed and "no authentication service" in r.msg, r


def test_plans_are_the_namespaces_objects(ns):
    r = ns.run("address_plan", name="tiny-queue", address_type="queue", resources={"broker": 0.001})
    assert not r.failed and r.changed, r
    plan = ns.list("AddressPlan")["tiny-queue"]
    assert plan["spec"]["resources"] == {"broker": 0.001} and FM in managers(plan)
    assert not ns.run("address_plan", name="tiny-queue", address_type="queue", resources={"broker": 0.001}).changed
    r = ns.run("address_space_plan", name="tiny", address_space_type="brokered", resource_limits={"broker": 0.002},
               address_plans=["tiny-queue"], infra_config_ref="default")
    assert not r.failed and r.changed, r
    assert not ns.run("address_space", name="s1", type="brokered", plan="tiny").failed
    q = [{"address": "a%d" % i, "type": "queue", "plan": "tiny-queue"} for i in range(3)]
    r = ns.run("address", address_space="s1", addresses=q)
    assert r.failed and "quota" in r.msg and ns.addresses() == {}, r
    assert not ns.run("address", address_space="s1", addresses=q[:2]).failed
    # a plan in use is protected, as on hosts
    r = ns.run("address_plan", name="tiny-queue", state="absent")
    assert r.failed and "cannot be deleted" in r.msg, r
    info = ns.run("address_plan_info", names=["tiny-queue", "brokered-queue", "nope"])
    by = dict((p["name"], p) for p in info["plans"])
    assert by["tiny-queue"]["owner"] == FM and by["tiny-queue"]["in_use"] == {"address_spaces": ["s1"], "addresses": 2}
    assert by["brokered-queue"]["owner"] == "enmasse.messaging-examples" and info["missing"] == ["nope"]
    # check mode of a plan change persists nothing
    r = ns.run("address_plan", check_mode=True, name="other-queue", address_type="queue", resources={"broker": 0.1})
    assert r.changed and "other-queue" not in ns.list("AddressPlan")


def test_a_namespace_without_plan_objects_knows_no_plan(kube):
    """The catalogue is the namespace's objects: the hosts' default plans are not implied."""
    ns = Namespace(kube, kube.create_namespace("bare-" + str(id(kube))[-6:], plans=False))
    r = ns.run("address_space", name="s1", type="brokered", plan="brokered-single-broker")
    assert r.failed and r.msg.startswith("namespace %r has no AddressSpacePlan objects: the catalogue on a cluster "
                                         "is the namespace's plan objects" % ns.name), r
    assert ns.list("AddressSpace") == {}
    # a namespace that does not exist is named as such
    gone = Namespace(kube, "no-such-namespace")
    for module, args in (("address_space", {"name": "s1", "type": "brokered", "plan": "brokered-single-broker"}),
                         ("address", {"address_space": "s1", "address": "q", "type": "queue",
                                      "plan": "brokered-queue"})):
        r = gone.run(module, **args)
        assert r.failed and r.msg.startswith("namespace 'no-such-namespace' does not exist on https://127.0.0.1:"), r


def test_space_plan_change_validated_against_the_spaces_addresses(space):
    space.run("address", address_space="shop", addresses=[QUEUE])
    space.run("address_space_plan", name="no-queues", address_space_type="brokered",
              address_plans=["brokered-topic"], infra_config_ref="default")
    r = space.run("address_space", name="shop", type="brokered", plan="no-queues")
    assert r.failed and "plan change 'brokered-single-broker' -> 'no-queues' refused" in r.msg, r
    assert space.list("AddressSpace")["shop"]["spec"]["plan"] == "brokered-single-broker"
    r = space.run("address_space", name="shop", type="standard", plan="brokered-single-broker")
    assert r.failed and "type is immutable" in r.msg, dump(r.result)


def test_plan_absent_leaves_plans_the_collection_did_not_make(ns):
    """The role's example plans (field manager enmasse.messaging-examples) and
    a hand-made plan survive state: absent, in check mode too."""
    ns.create_as("kubectl", {"apiVersion": "admin.enmasse.io/v1beta2", "kind": "AddressPlan",
                             "metadata": {"name": "hand-queue"},
                             "spec": {"addressType": "queue", "resources": {"broker": 0.1}}})
    for check in (True, False):
        r = ns.run("address_plan", check_mode=check, address_plans=["brokered-queue", "hand-queue"], state="absent")
        assert not r.failed and not r.changed and r["changes"]["deleted"] == [], r
        assert "not made by this collection" in str(r["warnings"]) and "hand-queue (owner: kubectl)" in str(r["warnings"])
        r = ns.run("address_space_plan", check_mode=check, name="standard-small", state="absent")
        assert not r.failed and not r.changed, r
    assert {"brokered-queue", "hand-queue"} <= set(ns.list("AddressPlan"))
    assert "standard-small" in ns.list("AddressSpacePlan")
    # the collection's own plan is deleted
    assert ns.run("address_plan", name="mine", address_type="queue", resources={"broker": 0.1}).changed
    r = ns.run("address_plan", name="mine", state="absent")
    assert r.changed and r["changes"]["deleted"] == ["mine"] and "mine" not in ns.list("AddressPlan"), r


def test_object_name_too_long_with_the_space_refused_before_any_write(space):
    name = ".".join(["a" * 60] * 4) + ".bbbbbbbb"  # 252 characters: shop.<name> is 257
    r = space.run("address", address_space="shop", addresses=[
        QUEUE, {"address": "dlq", "type": "deadletter", "plan": "brokered-deadletter"},
        {"address": "long", "type": "queue", "plan": "brokered-queue", "name": name}])
    assert r.failed and "shop.<name> would be 257 characters, at most 253" in r.msg, r
    assert space.addresses() == {}
    r = space.run("address", address_space="shop", addresses=[
        QUEUE, {"address": "long", "type": "queue", "plan": "brokered-queue", "name": name[:248]}])
    assert not r.failed and len(space.list("Address")["shop." + name[:248]]["metadata"]["name"]) == 253, r


def test_two_objects_with_the_same_address_are_refused_naming_both(space):
    assert space.run("address", address_space="shop", addresses=[QUEUE]).changed
    mine = space.addresses()["orders"]["metadata"]["name"]
    space.create_as("kubectl", {"apiVersion": "enmasse.io/v1beta1", "kind": "Address",
                                "metadata": {"name": "shop.zz-by-hand"}, "spec": dict(QUEUE, deadletter="x")})
    before = dict((n, o["metadata"]["resourceVersion"]) for n, o in space.list("Address").items())
    for args in ({"addresses": [dict(QUEUE, message_ttl={"maximum": 5000})]},
                 {"address": "orders", "state": "absent"}, {"addresses": [], "prune": True}):
        r = space.run("address", address_space="shop", **args)
        assert r.failed and ("Address objects %s, shop.zz-by-hand in namespace %r all have spec.address 'orders'"
                             % (mine, space.name)) in r.msg, r
    assert dict((n, o["metadata"]["resourceVersion"]) for n, o in space.list("Address").items()) == before
    # the space's other addresses are not held up
    assert not space.run("address", address_space="shop", address="q2", type="queue", plan="brokered-queue").failed


def test_input_document_metadata_not_applied_is_warned(space):
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address",
           "metadata": {"name": "shop.orders", "namespace": "elsewhere", "labels": {"team": "a"}},
           "spec": {"address": "orders", "type": "queue", "plan": "brokered-queue"}}
    r = space.run("address", address_space="shop", addresses=[doc])
    assert not r.failed and r.changed, r
    w = str(r["warnings"])
    assert "addresses[0].metadata.labels: not applied" in w and \
        "addresses[0].metadata.namespace 'elsewhere': ignored: the objects are made in namespace %r" % space.name in w
    assert "team" not in space.list("Address")["shop.orders"]["metadata"]["labels"]
