"""Bad input is refused with the hosts backend's message, before any API
call, and nothing is created: each case runs three times - backend hosts
(no broker anywhere: the input is refused before a connection is looked
for), backend kubernetes pointed at a closed port (a message about the
input, not the connection, proves no request was made), and backend
kubernetes against the real API server (nothing appears in the namespace)."""

import pytest

import helpers

UNREACHABLE = {"host": "https://127.0.0.1:9", "api_key": "unused", "validate_certs": False}

DOC = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "shop.a"},
       "spec": {"address": "a", "type": "queue", "plan": "brokered-queue"}}

CASES = [
    ("address", {"address_space": "Bad_Space", "address": "a", "type": "queue", "plan": "brokered-queue"}),
    ("address", {"address_space": True, "address": "a", "type": "queue", "plan": "brokered-queue"}),
    ("address", {"address_space": "shop", "address": 12345, "type": "queue", "plan": "brokered-queue"}),
    ("address", {"address_space": "shop", "address": "a", "type": ["queue"], "plan": "brokered-queue"}),
    ("address", {"address_space": "shop", "address": "a", "type": "queue", "plan": "brokered-queue",
                 "message_ttl": {"minimum": "5"}}),
    ("address", {"address_space": "shop", "address": "a", "type": "queue", "plan": "brokered-queue",
                 "message_redelivery": {"maximum_delivery_attempts": 1.5}}),
    ("address", {"address_space": "shop", "definition": dict(DOC, kind="AddressSpace")}),
    ("address", {"address_space": "shop", "definition": dict(DOC, metadata={"name": "other.a"})}),
    ("address", {"address_space": "shop", "definition": dict(DOC, spec=dict(DOC["spec"], messageTtl={"minimim": 1}))}),
    ("address", {"address_space": "shop", "definition": dict(DOC, spec=dict(DOC["spec"], forwarders=[]))}),
    ("address", {"address_space": "shop", "addresses": [{"address": "a", "tpye": "queue", "plan": "brokered-queue"}]}),
    ("address", {"address_space": "shop", "addresses": [{"address": "a", "type": "queue", "plan": "brokered-queue",
                                                         "state": "gone"}]}),
    ("address", {"address_space": "shop", "addresses": [{"kind": "AddressList", "apiVersion": "enmasse.io/v1beta1",
                                                         "items": "nope"}]}),
    ("address_space", {"name": "Bad_Space", "type": "brokered", "plan": "brokered-single-broker"}),
    ("address_space", {"name": "shop", "type": 5, "plan": "brokered-single-broker"}),
    ("address_space", {"name": "shop", "definition": {"apiVersion": "enmasse.io/v1beta1", "kind": "Address",
                                                      "metadata": {"name": "shop"}, "spec": {}}}),
    ("address_plan", {"name": "p", "address_type": "queue", "resources": {"broker": "lots"}}),
    ("address_space_plan", {"address_space_plans": [{"apiVersion": "admin.enmasse.io/v1beta2",
                                                     "kind": "AddressPlan", "metadata": {"name": "x"}}]}),
]


@pytest.mark.parametrize("module,args", CASES, ids=["%s-%d" % (m, i) for i, (m, unused) in enumerate(CASES)])
def test_bad_input_refused_before_any_api_call_with_the_hosts_message(ns, module, args):
    hosts = helpers.run_module(module, args)
    assert hosts.failed, hosts
    # a closed port: any request would fail with "cannot reach"
    offline = helpers.run_module(module, dict(args, backend="kubernetes", namespace=ns.name, **UNREACHABLE))
    assert offline.failed and "cannot reach" not in offline.msg, offline
    assert offline.msg == hosts.msg and offline["errors"] == hosts["errors"]
    live = ns.run(module, **args)
    assert live.failed and live.msg == hosts.msg, live
    for kind in ("AddressSpace", "Address"):
        assert ns.list(kind) == {}
    assert "p" not in ns.list("AddressPlan") and "x" not in ns.list("AddressSpacePlan")


def test_hosts_and_kubernetes_options_do_not_mix(ns):
    r = helpers.run_module("address", {"address_space": "shop", "address": "a", "type": "queue",
                                       "plan": "brokered-queue", "namespace": "x"})
    assert r.failed and r.msg == "namespace: only used with backend: kubernetes (this task uses backend: hosts)"
    r = ns.run("address", address_space="shop", address="a", type="queue", plan="brokered-queue",
               management_url="http://127.0.0.1:8161/console/jolokia")
    assert r.failed and r.msg.startswith("management_url: hosts backend option(s)"), r
