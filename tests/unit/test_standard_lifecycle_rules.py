"""Lifecycle rules of standard address spaces without routers or brokers: the
keeper skips a ledger it cannot read, a plan change over quota never evicts a
live address, and ``state: absent`` is idempotent."""
import json
import logging
import os
import subprocess
import sys

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.model import placement
from ansible_collections.enmasse.messaging.plugins.module_utils.model.placement import (
    QUOTA_EXCEEDED, PlacementItem, place)
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as infra_mod
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import keeper
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import backend as standard_backend
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as svc

BROKER = {"name": "b1", "host": "h1", "amqp_port": 5672, "user": "u", "password_file": "/etc/qpid-dispatch/brokers/b1.password",
          "management_url": "http://h1:8161/console/jolokia", "management_user": "m",
          "management_password": "mp", "broker_name": "b1"}


def infra(tmp_path):
    data = {"management_url": "amqp://127.0.0.1:5672", "routers": [{"id": "r1"}], "brokers": [BROKER],
            "auth_service": {"host": "auth", "port": 5680}, "ledger_dir": str(tmp_path / "ledgers")}
    path = tmp_path / "standard.json"
    path.write_text(json.dumps(data))
    (tmp_path / "ledgers").mkdir()
    return infra_mod.load_infra(str(path))


# ----------------------------------------------------------------- item 6: the keeper

def test_keeper_skips_an_unreadable_ledger_names_it_and_restores_the_others(tmp_path, caplog):
    inf = infra(tmp_path)
    good = infra_mod.load_ledger(inf, "good")
    good.space = {"name": "good", "type": "standard", "plan": "standard-unlimited", "port": 5700}
    good.addresses = {"q": {"address": "q", "type": "queue", "plan": "standard-small-queue"}}
    good.homes = {"q": {"brokers": ["b1"], "draining": [], "placed": True}}
    good.save()
    (tmp_path / "ledgers" / "aaa-broken.json").write_text("{not json")
    (tmp_path / "ledgers" / "zzz-wrong.json").write_text(json.dumps({"version": 7}))
    with caplog.at_level(logging.ERROR, logger="enmasse-router-keeper"):
        desired = keeper.desired_state(svc.StandardService(inf))
    assert "enmasse/good/address/q" in desired and "enmasse/good/autolink/b1/out/q" in desired
    assert "enmasse/good/amqp" in desired
    logged = [r.getMessage() for r in caplog.records]
    assert any("aaa-broken.json" in m and "not valid JSON" in m for m in logged), logged
    assert any("zzz-wrong.json" in m and "unknown format" in m for m in logged), logged


# ----------------------------------------------------------------- item 4: quota on a plan change

def test_a_plan_change_over_quota_keeps_its_home_and_is_refused_not_pending():
    limits = {"router": 1.0, "broker": 0.5, "aggregate": 1.5}
    items = [PlacementItem("kept", 0.01, 0.2, 1, "small", current_brokers=["a"], current_plan="small"),
             PlacementItem("grown", 0.01, 0.6, 1, "large", current_brokers=["a"], current_plan="small"),
             PlacementItem("new", 0.01, 0.1, 1, "small")]
    res = place(items, brokers=["a"], limits=limits)
    # the live address stays where it is: never pending, never drained
    assert res.assignments["grown"] == ["a"] and "grown" not in res.pending and "grown" not in res.draining
    assert res.refused == {"grown": QUOTA_EXCEEDED}
    assert res.pending == {} and res.assignments["new"] == ["a"]
    msgs = placement.refused_plan_changes("s", "tiny", limits, items, res)
    assert len(msgs) == 1 and "address 'grown'.plan: 'large'" in msgs[0] and "'small'" in msgs[0], msgs
    assert "quota exceeded for broker" in msgs[0] and "keeps its plan" in msgs[0], msgs


def test_a_plan_change_that_fits_still_moves_and_drains():
    items = [PlacementItem("q", 0, 0.5, 1, "medium", current_brokers=["a"], current_plan="small"),
             PlacementItem("filler", 0, 0.9, 1, "l", current_brokers=["a"], current_plan="l")]
    res = place(items, brokers=["a"], limits={"broker": 2.0})
    assert res.refused == {} and res.draining == {"q": ["a"]}


def standard_space(tmp_path, plan_limits):
    inf = infra(tmp_path)
    cat = Catalogue.default()
    splan = dict(cat.address_space_plan("standard-small"), name="tiny", resource_limits=plan_limits)
    led = infra_mod.load_ledger(inf, "s")
    led.space = {"name": "s", "type": "standard", "plan": "tiny", "port": 5700}
    q = {"address": "q", "type": "queue", "plan": "standard-small-queue"}
    led.addresses = {"q": q}
    led.homes = {"q": {"brokers": ["b1"], "draining": [], "placed": True}}
    return svc.StandardService(inf), cat, splan, led, q


def test_standard_placement_refuses_a_plan_change_over_quota_instead_of_evicting(tmp_path):
    service, cat, splan, led, q = standard_space(tmp_path, {"router": 1.0, "broker": 0.1, "aggregate": 1.1})
    live = {"b1": {"s/q": {"message_count": 3}}}
    with pytest.raises(ServiceError) as e:
        svc.placement_for(service, "s", splan, [dict(q, plan="standard-large-queue")], cat, led, live)
    msg = str(e.value)
    assert "address 'q'.plan: 'standard-large-queue'" in msg and "keeps its plan 'standard-small-queue'" in msg, msg
    assert "address space 's' plan 'tiny'" in msg, msg
    # a new address over quota is still Pending (EnMasse's rule), the live one untouched
    homes, draining, pending, released = svc.placement_for(
        service, "s", splan, [q, {"address": "n", "type": "queue", "plan": "standard-large-queue"}], cat, led, live)
    assert homes["q"] == ["b1"] and "q" not in pending and QUOTA_EXCEEDED in pending["n"] and not released


class ReadOnlyBroker(object):
    """A brokered space's broker that can be read and never written."""

    def __init__(self, live):
        self.live = live
        self.mbean = "org.apache.activemq.artemis:broker=\"b\""

    def read(self):
        return {"Started": True}, self.live

    def read_settings(self, names):
        return {None: {}}

    def apply(self, requests):
        raise AssertionError("the broker was changed: %r" % (requests,))


def test_brokered_refuses_the_same_plan_change_over_quota_and_writes_nothing(tmp_path):
    from ansible_collections.enmasse.messaging.plugins.module_utils import ledger as artemis_ledger
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import service as artemis
    cat = Catalogue.from_data({
        "address_plans": [{"name": "bq-big", "address_type": "queue", "resources": {"broker": 0.6}}],
        "address_space_plans": [{"name": "tiny", "address_space_type": "brokered", "resource_limits": {"broker": 0.5},
                                 "address_plans": ["brokered-queue", "bq-big"]}]})
    led = artemis_ledger.Ledger(str(tmp_path / "ledger.json"))
    q = {"address": "q", "type": "queue", "plan": "brokered-queue"}
    led.space = {"name": "s", "type": "brokered", "plan": "tiny"}
    led.addresses = {"q": q}
    live = {"q": {"address": "q", "shape": "queue", "complete": True, "topic": None, "max_consumers": None,
                  "queues": ["q"], "message_count": 3, "consumers": 0}}
    big = ["bq-big"]
    with pytest.raises(ServiceError) as e:
        artemis.converge_addresses(ReadOnlyBroker(live), led, {"name": "s", "type": "brokered", "plan": "tiny"},
                                   cat, [dict(q, plan=big[0])], [], prune=True)
    assert "addresses[0](q).plan: %r" % big[0] in str(e.value) and "over quota" in str(e.value), str(e.value)
    assert led.addresses == {"q": q} and not os.path.exists(led.path)


# ----------------------------------------------------------------- item 8: absent is idempotent

def run_module(name, args, tmp_path, check_mode=False):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    args = dict(args, _ansible_check_mode=check_mode)
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.enmasse.messaging.plugins.modules." + name],
                          input=json.dumps({"ANSIBLE_MODULE_ARGS": args}), capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=120, check=False)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("given_type", [None, "standard"])
def test_absent_again_changes_nothing_and_does_not_fail(tmp_path, check_mode, given_type):
    """What a first ``state: absent`` leaves: the infrastructure file, no
    ledger, no connection file. The second run must not go looking for a
    broker (it failed with "missing management_url")."""
    inf = infra(tmp_path)
    catalogue = tmp_path / "catalogue.json"
    args = {"name": "gone", "state": "absent", "infrastructure_file": inf["path"],
            "connection_file": str(tmp_path / "gone-connection.json"), "catalogue_path": str(catalogue)}
    if given_type:
        args["type"] = given_type
    res = run_module("address_space", args, tmp_path, check_mode)
    assert not res.get("failed"), res
    assert res["changed"] is False and res["address_space"]["exists"] is False, res
    assert res["address_space"]["status"]["phase"] == "Deleted", res


def test_absent_of_a_brokered_space_without_its_connection_file_is_not_silently_done(tmp_path):
    inf = infra(tmp_path)
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps({"version": 1, "address_spaces": {"shop": {
        "type": "brokered", "plan": "brokered-single-broker", "ledger_path": "/var/lib/artemis/shop/ledger.json"}}}))
    res = run_module("address_space", {"name": "shop", "state": "absent", "infrastructure_file": inf["path"],
                                       "connection_file": str(tmp_path / "shop.json"),
                                       "catalogue_path": str(catalogue)}, tmp_path)
    assert res.get("failed") and "is a brokered space" in res["msg"] and "shop.json is missing" in res["msg"], res


def test_absent_of_a_space_nobody_knows_on_a_standard_host_is_standard(tmp_path):
    inf = infra(tmp_path)
    params = {"infrastructure_file": inf["path"], "connection_file": str(tmp_path / "gone-connection.json"),
              "management_url": None, "state": "absent"}
    # present without a type: nothing says standard (a brokered space's connection file may come later)
    assert standard_backend.is_standard(params, "gone") is False
    # absent: no connection file, no ledger, no broker connection given -> nothing to delete here
    assert standard_backend.is_standard(params, "gone", absent=True) is True
    assert standard_backend.is_standard(dict(params, management_url="http://b:8161/console/jolokia"), "gone", absent=True) is False
    assert standard_backend.is_standard(params, "gone", "brokered", absent=True) is False
    infra_file = tmp_path / "nothing.json"
    assert standard_backend.is_standard(dict(params, infrastructure_file=str(infra_file)), "gone", absent=True) is False


def test_keeper_requests_wait_seconds_not_the_modules_minute(monkeypatch):
    """A router killed a moment ago is still in the mesh's list; a request
    routed to it gets no reply. The keeper's requests give up after
    REQUEST_TIMEOUT (10 s), not the modules' 60 s, so the restarted router is
    restored within seconds of the next round (molecule/router measured 63.9 s
    with the 60 s timeout)."""
    opened = []

    def fake_open(infra, timeout=None):
        opened.append(timeout)
        raise OSError("no mesh here")
    infra = {"routers": [], "brokers": [], "timeout": 60, "management_url": "amqp://127.0.0.1:1"}
    monkeypatch.setattr(keeper._infra, "load_infra", lambda path: infra)
    monkeypatch.setattr(keeper._routers, "open_session", fake_open)
    keeper.watch("/unused", interval=0, once=True)
    assert opened == [keeper.REQUEST_TIMEOUT] and keeper.REQUEST_TIMEOUT <= 10
