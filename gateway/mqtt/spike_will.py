"""Can a will keeper tell a killed gateway from a clean DISCONNECT? (issue 21)

EnMasse's mqtt-lwt idea, on a real qdrouterd 1.19: the keeper connects as a
route-container (container id ``will-keeper``); the router link-routes the
prefix ``mqtt-will/`` to it. A "gateway" process (here a small proton client
standing for it) attaches one sender per MQTT client to ``mqtt-will/<client
id>`` and sends the will there. Clean DISCONNECT = the gateway detaches the
link; a killed gateway never does. The keeper prints what it sees at detach
(the remote condition) in both cases; exit 0 when they differ.
"""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from proton.handlers import MessagingHandler
from proton.reactor import Container

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import helpers  # noqa: E402
import spike_bench  # noqa: E402
from routers import RouterMesh, section  # noqa: E402

GATEWAY = r'''
import sys, time
from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container
class G(MessagingHandler):
    def on_start(self, e):
        c = e.container.connect(sys.argv[1])
        self.s = e.container.create_sender(c, "mqtt-will/" + sys.argv[2])
    def on_sendable(self, e):
        if getattr(self, "sent", False):
            return
        self.sent = True
        e.sender.send(Message(body="offline", annotations={"x-opt-mqtt-qos": 1}))
    def on_accepted(self, e):
        print("will registered", flush=True)
        if sys.argv[3] == "clean":
            e.sender.close()
            e.connection.close()
Container(G()).run()
'''


class Keeper(MessagingHandler):
    def __init__(self, url):
        super(Keeper, self).__init__(auto_accept=True)
        self.url, self.wills, self.detached = url, {}, {}

    def on_start(self, event):
        event.container.container_id = "will-keeper"
        event.container.connect(self.url)

    def on_message(self, event):
        self.wills[event.link.remote_target.address] = event.message.body

    def on_link_remote_close(self, event):
        cond = event.link.remote_condition
        self.detached[event.link.remote_target.address] = cond.name if cond else None
        event.link.close()


def run_gateway(url, client_id, mode):
    proc = subprocess.Popen([sys.executable, "-c", GATEWAY, url, client_id, mode], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "will registered"
    if mode == "kill":
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def main():
    work = tempfile.mkdtemp(prefix="mqtt-spike-will-")
    cp, rp = helpers.free_port(), helpers.free_port()
    extra = section("listener", {"name": "clients", "host": "127.0.0.1", "port": cp, "role": "normal",
                                 "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
    extra += section("listener", {"name": "keeper", "host": "127.0.0.1", "port": rp, "role": "route-container",
                                  "authenticatePeer": False, "saslMechanisms": "ANONYMOUS"})
    for direction in ("in", "out"):
        extra += section("linkRoute", {"prefix": "mqtt-will/", "direction": direction, "containerId": "will-keeper"})
    mesh = RouterMesh(work, 1, extra_config={"router-0": extra}).start()
    keeper = Keeper("amqp://127.0.0.1:%d" % rp)
    container = Container(keeper)
    thread = threading.Thread(target=container.run, daemon=True)
    try:
        spike_bench.wait_port(cp)
        thread.start()
        time.sleep(2)  # the keeper's connection and the link route become active
        run_gateway("amqp://127.0.0.1:%d" % cp, "clean-client", "clean")
        run_gateway("amqp://127.0.0.1:%d" % cp, "killed-client", "kill")
        time.sleep(2)
        print("wills stored:", keeper.wills)
        print("detach conditions:", keeper.detached)
        clean = keeper.detached.get("mqtt-will/clean-client", "missing")
        killed = keeper.detached.get("mqtt-will/killed-client", "missing")
        ok = clean is None and killed not in (None, "missing")
        print("OK" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        container.stop()
        mesh.close()


if __name__ == "__main__":
    sys.exit(main())
