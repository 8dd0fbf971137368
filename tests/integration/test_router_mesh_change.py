"""A router leaves the mesh and another joins while clients run (issue 22:
"Add and remove a router while clients run; clients on the others see no
error; clients on the removed one reconnect elsewhere").

Real qdrouterd 1.19 processes configured by the router role's own
config.yml (role_routers.py with the router's prefix: the file checked with
the router's parser, the restart decision, mesh.yml applying a change of the
mesh connectors through management). Routers dial the routers before them in
the mesh group (inter-router mutual TLS). Clients: python-qpid-proton over
each router's local listener; anycast from router 1 to a receiver on router 3
the whole time.

One run of the role with router-2 left out of the group and router-4 added
at its end (r1, r3, r4): router-3's qdrouterd.conf loses its connector to
router-2, which the role deletes through management - router-3 is not
restarted (same process); router-1's file does not change; router-4 gets its
file, starts, dials router-1 and router-3, and its client's messages reach
router-3's receiver. Then router-2 stops: its client reconnects to router-1
and carries on. Throughout, the client connections on router-1 and router-3
stay open and every message accepted arrives.
"""
import importlib.util
import os
import tempfile
import threading
import time
import types

import pytest

import role_routers
from helpers import send_accepted
from standard_env import Router, build_router

_RERUN = importlib.util.spec_from_file_location("molecule_router_rerun", os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "molecule", "router", "rerun.py"))
rerun = importlib.util.module_from_spec(_RERUN)
_RERUN.loader.exec_module(rerun)

from proton import Message  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.router]

ADDRESS = "mesh-change/anycast"


def routers(base, prefix, count):
    """standard_env's Router, each started from the file the role wrote."""
    env = types.SimpleNamespace(base_dir=base, prefix=prefix)
    return [Router(env, i) for i in range(count)]


def spec(router):
    return {"id": router.id, "management_port": router.management_port, "inter_router_port": router.inter_router_port}


def converge(base, prefix, routers):
    """The role's config.yml on the routers of the group, in this order;
    the confs by id and the play's output."""
    rendered, out = role_routers.render(os.path.join(base, "role"), [spec(r) for r in routers], prefix=prefix)
    for r in routers:
        r.conf_file = rendered[r.id]["conf"]
        r.management_tls = rendered[r.id]["management_tls"]
    return out


def changed_tasks(out, host):
    """The names of the tasks that reported changed for ``host`` (molecule/router's rerun.py reads the output)."""
    return [task for h, task in rerun.changed_tasks(out) if h == host]


def mesh_of(router, timeout=30, want=None):
    """The router ids ``router`` knows, once they are ``want``."""
    deadline, seen = time.time() + timeout, None
    while time.time() < deadline:
        try:
            with router.session(timeout=3) as s:
                seen = s.routers()
                if want is None or seen == sorted(want):
                    return seen
        except Exception:  # pylint: disable=broad-except
            pass
        time.sleep(0.5)
    return seen


def connectors(router):
    with router.session(timeout=5) as s:
        return sorted(c["name"] for c in s.query("org.apache.qpid.dispatch.connector", ["name"]))


class Traffic(object):
    """A receiver on ``to`` and senders on ``sources`` (each one message
    every 20 ms, each send waits until the receiver accepted it: a message
    counts as sent only when its outcome is accepted, modified or released
    is an error the client saw); a sender with ``failover`` reconnects to
    that router when its own goes away. ``finish`` stops the senders first,
    then the receiver once nothing arrived for 2 s, so no message is left in
    flight when the receiver closes."""

    def __init__(self, to):
        self.to, self.received, self.errors, self.sent = to, [], [], {}
        self.stop, self.stop_sending = threading.Event(), threading.Event()
        self.threads = []
        self.ready = threading.Event()
        self.threads.append(threading.Thread(target=self._receive, daemon=True))
        self.threads[0].start()
        assert self.ready.wait(15), "the receiver did not attach: %s" % self.errors

    def _receive(self):
        try:
            conn = self.to.connection(timeout=10)
            rcv = conn.create_receiver(ADDRESS, credit=50)
            self.ready.set()
            idle_since = time.time()
            while not self.stop.is_set() or rcv.queued or time.time() - idle_since < 2:
                try:
                    msg = rcv.receive(timeout=0.5)
                except Exception as e:  # pylint: disable=broad-except
                    if type(e).__name__ == "Timeout":
                        continue
                    raise
                self.received.append(msg.body)
                rcv.accept()
                idle_since = time.time()
            conn.close()
        except Exception as e:  # pylint: disable=broad-except
            self.errors.append("receiver on %s: %r" % (self.to.id, e))

    def add_sender(self, name, router, failover=None):
        self.sent[name] = []
        t = threading.Thread(target=self._send, args=(name, router, failover), daemon=True)
        self.threads.append(t)
        t.start()

    def _send(self, name, router, failover):
        targets, i, reconnects = [router] + ([failover] if failover else []), 0, 0
        conn = snd = None
        while not self.stop_sending.is_set():
            try:
                if conn is None:
                    conn = targets[min(reconnects, len(targets) - 1)].connection(timeout=10)
                    snd = conn.create_sender(ADDRESS)
                body = "%s-%d" % (name, i)
                send_accepted(snd, Message(body=body), timeout=10)
                self.sent[name].append(body)
                i += 1
                time.sleep(0.02)
            except Exception as e:  # pylint: disable=broad-except
                if failover is None or reconnects >= len(targets):
                    self.errors.append("sender %s on %s: %r" % (name, router.id, e))
                    return
                reconnects += 1
                conn = None
        if conn is not None:
            conn.close()

    def finish(self):
        time.sleep(1)
        self.stop_sending.set()
        for t in self.threads[1:]:
            t.join(20)
        self.stop.set()
        self.threads[0].join(20)


@pytest.fixture(scope="module")
def prefix():
    p, why = build_router()
    if p is None:
        pytest.fail(why)
    return p


def test_a_router_leaves_and_one_joins_while_clients_run(prefix):
    base = tempfile.mkdtemp(prefix="enmasse-mesh-change-")
    r1, r2, r3, r4 = routers(base, prefix, 4)
    try:
        out = converge(base, prefix, [r1, r2, r3])
        for r in (r1, r2, r3):
            assert any("Restart for the new qdrouterd.conf" in t for t in changed_tasks(out, r.id)), \
                "a new router restarts (starts) with its file"
            r.start()
        assert mesh_of(r1, want=["r1", "r2", "r3"]) == ["r1", "r2", "r3"]
        assert connectors(r3) == ["inter-router/r1", "inter-router/r2"]
        pids = {r.id: r.proc.pid for r in (r1, r2, r3)}
        traffic = Traffic(r3)
        traffic.add_sender("on-r1", r1)
        traffic.add_sender("on-r2", r2, failover=r1)
        time.sleep(2)

        # one run: router-2 leaves the group, router-4 joins at its end. Only router-3's file
        # changes (its connector to router-2 goes), applied through management; router-1's does not
        r1_conf = open(r1.conf_file).read()
        out = converge(base, prefix, [r1, r3, r4])
        assert open(r1.conf_file).read() == r1_conf and changed_tasks(out, "r1") == []
        changed = changed_tasks(out, "r3")
        assert any("Render qdrouterd.conf (checked before use)" in t for t in changed), changed
        assert not any("Restart" in t for t in changed), changed
        assert any("Delete the connectors to routers that left the mesh" in t for t in changed), changed
        assert connectors(r3) == ["inter-router/r1"]
        assert "inter-router/r2" not in open(r3.conf_file).read()
        r4.start()  # it dials router-1 and router-3
        assert "r4" in (mesh_of(r3, want=["r1", "r2", "r3", "r4"], timeout=15) or [])
        traffic.add_sender("on-r4", r4)
        time.sleep(1)
        before = len(traffic.sent["on-r2"])
        r2.stop()  # its client goes over to router-1 and carries on
        deadline = time.time() + 30
        while len(traffic.sent["on-r2"]) < before + 20 and not traffic.errors and time.time() < deadline:
            time.sleep(0.2)
        assert len(traffic.sent["on-r2"]) >= before + 20, "router-2's client did not carry on via router-1: %s" % (
            traffic.errors,)
        traffic.finish()

        assert traffic.errors == []
        assert {r.id: r.proc.pid for r in (r1, r3)} == {"r1": pids["r1"], "r3": pids["r3"]}
        assert all(r.proc.poll() is None for r in (r1, r3, r4))
        for name, sent in sorted(traffic.sent.items()):
            assert len(sent) > 20, "%s sent only %d" % (name, len(sent))
            missing = sorted(set(sent) - set(traffic.received))
            assert missing == [], "%s: %d of %d sent (accepted) messages never arrived: %s" % (
                name, len(missing), len(sent), missing[:5])
    finally:
        for r in (r1, r2, r3, r4):
            r.stop()
