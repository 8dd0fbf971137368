"""One backend interface (module_utils/backends.py): the same four methods
with one signature on every backend, one selection, the shared checks
before any backend reads anything, one status shape; and the shared rules of
model/requests.py and model/status.py."""
import inspect
import json

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils import backends
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis.backend import ArtemisBackend
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import (
    ConfigError, ServiceError, ValidationError)
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.modules import KubernetesBackend
from ansible_collections.enmasse.messaging.plugins.module_utils.model import requests as rq
from ansible_collections.enmasse.messaging.plugins.module_utils.model import status as st
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.request import Request
from ansible_collections.enmasse.messaging.plugins.module_utils.standard.backend import StandardBackend

pytestmark = pytest.mark.unit

CAT = Catalogue.default()
SPACE = {"name": "s", "type": "brokered", "plan": "brokered-single-broker"}
BACKENDS = (ArtemisBackend, StandardBackend, KubernetesBackend)


def q(name, **kw):
    return dict({"address": name, "type": "queue", "plan": "brokered-queue"}, **kw)


@pytest.mark.parametrize("cls", BACKENDS, ids=lambda c: c.name)
def test_every_backend_implements_every_operation_with_one_signature(cls):
    for op in backends.OPERATIONS:
        method = getattr(cls, op)
        assert method is not getattr(backends.Backend, op), "%s does not implement %s" % (cls.name, op)
        assert list(inspect.signature(method).parameters) == ["self", "request"]


def params(tmp_path, **kw):
    out = {"backend": "hosts", "connection_file": None, "infrastructure_file": str(tmp_path / "none.json"),
           "kubeconfig": None, "context": None, "host": None, "api_key": None, "namespace": None,
           "wait": False, "force_conflicts": False}
    out.update(kw)
    return out


def test_selection(tmp_path):
    assert isinstance(backends.select(Request(params(tmp_path, backend="kubernetes", name="s")), "address_space"),
                      KubernetesBackend)
    assert isinstance(backends.select(Request(params(tmp_path, name="s", state="present", type="standard")),
                                      "address_space"), StandardBackend)
    assert isinstance(backends.select(Request(params(tmp_path, name="s", state="present", type="brokered")),
                                      "address_space"), ArtemisBackend)
    # an existing space keeps its backend: its connection file says which
    conn = tmp_path / "s.json"
    conn.write_text(json.dumps({"type": "standard"}))
    req = Request(params(tmp_path, address_space="s", connection_file=str(conn)))
    assert isinstance(backends.select(req, "address"), StandardBackend)
    with pytest.raises(ConfigError, match="kubeconfig: only used with backend: kubernetes"):
        backends.select(Request(params(tmp_path, name="s", kubeconfig="/k")), "address_space_info")


def test_shared_checks_run_before_any_backend(tmp_path, monkeypatch):
    def no_backend(*a):
        raise AssertionError("a backend was selected for a request that fails the shared checks")
    monkeypatch.setattr(backends, "host_backend", no_backend)
    req = Request(params(tmp_path, address_space="s", address=None, addresses="not a list", definition=None,
                         src=None, state="present", return_addresses=None))
    with pytest.raises(ValidationError, match="addresses"):
        backends.run("address", req)
    with pytest.raises(ValidationError):
        backends.run("address_info", Request(params(tmp_path, address_space="Bad Name!")))
    with pytest.raises(ValidationError):
        backends.run("address_space", Request(params(tmp_path, name="s", type=5, plan=None, state="present",
                                                     definition=None, authentication_service=None,
                                                     endpoints=None)))


def test_kubernetes_backend_refuses_host_options_before_the_cluster(tmp_path):
    req = Request(params(tmp_path, backend="kubernetes", name="s", management_url="http://x"))
    with pytest.raises(ValidationError, match="management_url: hosts backend option"):
        backends.run("address_space_info", req)


def test_one_status_shape():
    # standard reports no consumers, an anycast address no message count: null, never missing
    raw = {"ready": True, "phase": "Active", "messages": [], "routers": ["r1"]}
    out = backends.shape({"addresses": [{"address": "a", "status": raw}]})
    status = out["addresses"][0]["status"]
    assert set(st.ADDRESS_STATUS_KEYS) <= set(status)
    assert status["consumers"] is None and status["message_count"] is None and status["owned"] is True
    assert status["routers"] == ["r1"]
    assert st.complete({"phase": "Configuring"})["ready"] is False


def test_space_status_phases():
    assert st.space_status(False)["phase"] == "Pending"
    assert st.space_status(True, error="down")["phase"] == "Failed"
    assert st.space_status(True, ["router 'r1' is unreachable"])["phase"] == "Configuring"
    active = st.space_status(True, notes=["2 owned address(es) missing on the broker"])
    assert active["phase"] == "Active" and active["ready"] and active["messages"]
    assert st.deleted_space("s")["status"]["phase"] == "Deleted"


def test_address_request_refuses_everything_at_once():
    owned = {"t": {"address": "t", "type": "topic", "plan": "brokered-topic"},
             "sub": {"address": "sub", "type": "subscription", "plan": "brokered-subscription", "topic": "t"}}
    with pytest.raises(ServiceError) as e:
        rq.address_request(SPACE, CAT, [q("x")], ["x", "t", "!!no"], owned)
    msgs = e.value.errors
    assert any("listed both as present and as absent" in m for m in msgs)
    assert any("absent[2]" in m for m in msgs)
    assert any("owned subscription(s) sub refer to it" in m for m in msgs)


def test_address_request_deletes_only_owned_and_prunes():
    owned = {"a": q("a"), "b": q("b")}
    deletes, unused = rq.address_request(SPACE, CAT, [q("a")], ["zzz"], owned, prune=True)
    assert deletes == ["b"]  # zzz is not owned: never deleted
    deletes, unused = rq.address_request(SPACE, CAT, [q("a")], [], owned)
    assert deletes == []


def test_subscription_settings_rule_is_one_rule():
    sub = {"address": "s1", "type": "subscription", "plan": "brokered-subscription", "topic": "t",
           "message_redelivery": {"maximum_delivery_attempts": 5}}
    topic = {"address": "t", "type": "topic", "plan": "brokered-topic"}
    with pytest.raises(ServiceError, match="not supported on a subscription in a brokered"):
        rq.address_request(SPACE, CAT, [topic, sub], [], {})
    # EnMasse's operator takes them (standard spaces on a cluster)
    rq.address_request(SPACE, CAT, [topic, sub], [], {}, subscription_settings=True)


def test_space_request_rules():
    old = {"name": "s", "type": "brokered", "plan": "brokered-single-broker"}
    with pytest.raises(ServiceError, match="type is immutable"):
        rq.space_request(dict(old, type="standard", plan="standard-small"), CAT, old, {})
    called = []
    rq.space_request(dict(old), CAT, old, {"a": q("a")}, current=lambda: called.append(1))
    assert called == []  # no plan change: nothing else read
    assert rq.space_record(dict(old, endpoints=[]), port=5700) == dict(old, port=5700)


def test_held_message_is_one_wording():
    assert rq.held_message("t", "topic", 3) == ("address 't' (topic) holds 3 message(s) in its subscriptions; "
                                                "set force: true to delete it anyway")
