"""End to end: converge the demo space with ansible-playbook, then use it with
a real AMQP 1.0 client (the same checks the Molecule verify step runs),
restart the broker, and converge again."""

import subprocess
import sys

import pytest

import amqp_checks
import helpers

pytestmark = pytest.mark.integration

DEMO_NAMES = helpers.DEMO_NAMES

CONVERGE = [
    {"name": "Create the address space",
     "enmasse.messaging.address_space": {"name": "{{ space }}", "type": "brokered",
                                         "plan": "brokered-single-broker", "connection_file": "{{ conn }}"}},
    {"name": "Converge the addresses",
     "enmasse.messaging.address": {"address_space": "{{ space }}", "connection_file": "{{ conn }}",
                                   "addresses": "{{ demo }}", "prune": True}},
    {"name": "Address space info",
     "enmasse.messaging.address_space_info": {"name": "{{ space }}", "connection_file": "{{ conn }}"}},
    {"name": "Address info",
     "enmasse.messaging.address_info": {"address_space": "{{ space }}", "connection_file": "{{ conn }}",
                                        "include_unowned": False}},
]


def converge(space):
    pb = helpers.run_playbook(CONVERGE, {"space": space.name, "conn": space.connection_file,
                                         "demo": helpers.DEMO_ADDRESSES}, diff=True)
    assert pb.rc == 0, pb
    return pb


def assert_all_pass(results):
    failed = ["%s: %s" % (name, detail) for name, ok, detail in results if not ok]
    assert not failed, "AMQP checks failed:\n" + "\n".join(failed)


def test_demo_space_playbook_messaging_restart_and_reconverge(space):
    broker = space.broker
    pb = converge(space)

    sp = pb.task("Create the address space")
    assert sp["changed"] is True
    status = sp["address_space"]["status"]
    assert status["ready"] is True and status["phase"] == "Active", status
    ad = pb.task("Converge the addresses")
    assert ad["changed"] is True
    assert sorted(ad["changes"]["created"]) == sorted(DEMO_NAMES)
    assert all(a["status"]["ready"] and a["status"]["owned"] for a in ad["addresses"]), ad["addresses"]
    info = pb.task("Address space info")["address_space"]
    assert info["status"]["ready"] and info["status"]["phase"] == "Active", info
    ports = [e.get("port") for e in info["status"]["endpoints"]]
    assert broker.amqp_port in ports, info["status"]["endpoints"]
    listed = dict((a["address"], a) for a in pb.task("Address info")["addresses"])
    assert sorted(listed) == sorted(DEMO_NAMES)
    assert dict((n, a["type"]) for n, a in listed.items()) == dict(
        (a["address"], a["type"]) for a in helpers.DEMO_ADDRESSES)

    # the Artemis mapping
    names, queues = broker.address_names(), broker.queue_names()
    assert {"orders", "events", "dlq", "retry", "short-lived"} <= set(names)
    assert {"orders", "events-audit", "dlq", "retry", "short-lived"} <= set(queues)
    assert "events" not in queues and "events-audit" not in names
    assert broker.queue_attribute("orders", "RoutingType") == "ANYCAST"
    assert broker.queue_attribute("events-audit", "RoutingType") == "MULTICAST"
    assert broker.queue_attribute("events-audit", "Address") == "events"
    assert broker.queue_attribute("events-audit", "MaxConsumers") == 1
    assert broker.queue_attribute("events-audit", "Durable") is True

    # messaging, as the Molecule verify step does it
    cfg = space.amqp_config()
    assert_all_pass(amqp_checks.run_checks(cfg, "before-restart"))
    broker.restart()
    # ... and after the restart through the script's command line
    proc = subprocess.run([sys.executable, amqp_checks.__file__, "--url", broker.amqp_url(),
                           "--phase", "after-restart"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS durable-after-restart" in proc.stdout, proc.stdout

    # what was created survives the restart: converging again changes nothing
    again = converge(space)
    assert again.stats.get("changed") == 0, again
    assert again.task("Converge the addresses")["changes"] == {"created": [], "updated": [], "deleted": []}


def test_amqp_checks_script_fails_on_a_broken_setup(demo_space):
    """The checks can fail: wrong password, and a claim that does not match the
    broker (retry allows 3 delivery attempts, not 5)."""
    broker = demo_space.broker
    proc = subprocess.run([sys.executable, amqp_checks.__file__, "--url", broker.amqp_url(password="nope"),
                           "--phase", "after-restart", "--timeout", "5"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL login" in proc.stdout
    assert "PASS wrong-password-refused" in proc.stdout
    cfg = demo_space.amqp_config(max_delivery_attempts=5, timeout=5)
    with pytest.raises(amqp_checks.CheckFailed, match="delivered 3 times, expected 5"):
        amqp_checks.check_deadletter(cfg)


def test_info_reports_live_message_count_and_consumers(demo_space):
    cfg = demo_space.amqp_config()
    with helpers.connection(cfg) as conn:
        helpers.send(conn, "orders", 3, durable=True)
        receiver = conn.create_receiver("orders", credit=0)  # attached, takes nothing
        res = demo_space.run("address_info", addresses=["orders", "events-audit"])
        receiver.close()
        helpers.drain(conn, "orders")
    assert not res.failed, res
    listed = dict((a["address"], a) for a in res["addresses"])
    assert sorted(listed) == ["events-audit", "orders"]
    assert listed["orders"]["status"]["message_count"] == 3
    assert listed["orders"]["status"]["consumers"] == 1
    assert listed["events-audit"]["topic"] == "events"

    space_info = demo_space.run("address_space_info")
    assert not space_info.failed, space_info
    assert space_info["address_space"]["status"]["ready"] is True
    assert space_info["address_space"]["owned_addresses"] == len(DEMO_NAMES)


def test_drift_made_by_hand_is_repaired(demo_space):
    broker = demo_space.broker
    client, mbean = broker.jolokia(), helpers.broker_mbean(broker.name)
    client.execute(mbean, "deleteAddress(java.lang.String,boolean)", "orders", True)
    client.execute(mbean, "addAddressSettings(java.lang.String,java.lang.String)", "retry",
                   '{"maxDeliveryAttempts": 10, "deadLetterAddress": "dlq"}')

    info = demo_space.run("address_info", addresses=["orders", "retry"])
    listed = dict((a["address"], a) for a in info["addresses"])
    assert listed["orders"]["status"]["ready"] is False, listed["orders"]
    assert listed["orders"]["status"]["phase"] == "Pending"
    assert listed["retry"]["message_redelivery"]["maximum_delivery_attempts"] == 10

    res = demo_space.run("address", addresses=helpers.DEMO_ADDRESSES, prune=True)
    assert not res.failed and res.changed, res
    assert res["changes"]["created"] == ["orders"]
    assert res["changes"]["updated"] == ["retry"]
    assert "orders" in broker.address_names()
    assert broker.address_settings("retry")["maxDeliveryAttempts"] == 3
