"""The AMQP management client (router/client.py) over a real AMQP 1.0
connection: a python-qpid-proton listener answers QUERY like a router
(dynamic reply-to, correlation ids, credit, paging)."""
import datetime
import socket
import threading

import pytest

from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import router as metrics_router
from ansible_collections.enmasse.messaging.plugins.module_utils.router import client as router_client
from router_replies import ROUTER_REPLIES, fake_call

pytestmark = pytest.mark.integration
pytest.importorskip("proton", reason="python-qpid-proton is not installed (pip install -r requirements-test.txt)")

TS = datetime.datetime(2025, 3, 4, 10, 15, 30, 123456, tzinfo=datetime.timezone.utc)


class _ManagementServer(object):
    """A proton listener answering AMQP management QUERY from fixed replies:
    dynamic reply-to senders, correlation ids, credit, like a router."""

    def __init__(self, replies):
        from proton import Message
        from proton.handlers import MessagingHandler
        from proton.reactor import ApplicationEvent, Container, EventInjector

        server = self
        answer = fake_call(replies)
        self.requests = []
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]

        class Handler(MessagingHandler):
            def __init__(self):
                super(Handler, self).__init__()
                self.senders = {}

            def on_start(self, event):
                self.acceptor = event.container.listen("127.0.0.1:%d" % server.port)
                server.ready.set()

            def on_link_opening(self, event):
                link = event.link
                if link.is_sender and link.remote_source.dynamic:
                    addr = "reply-%d" % len(self.senders)
                    link.source.address = addr
                    self.senders[addr] = link
                elif link.is_receiver:
                    link.target.address = link.remote_target.address

            def on_message(self, event):
                req = event.message
                server.requests.append(dict(req.properties))
                props, body = answer(req.properties, req.body)
                self.senders[req.reply_to].send(Message(address=req.reply_to, correlation_id=req.correlation_id,
                                                        properties=props, body=body))

            def on_stop_server(self, event):
                self.acceptor.close()
                server.container.stop()

        self.injector = EventInjector()
        self.stop_event = ApplicationEvent("stop_server")
        self.container = Container(Handler())
        self.container.selectable(self.injector)
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.container.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        assert self.ready.wait(10)
        return self

    def __exit__(self, *exc):
        self.injector.trigger(self.stop_event)
        self.thread.join(10)


def test_router_management_client_over_amqp():
    with _ManagementServer(ROUTER_REPLIES) as server:
        client = router_client.RouterManagement("amqp://127.0.0.1:%d" % server.port, timeout=10)
        try:
            rows, nodes, unused = metrics_router.sample_router(client.call, "prod", ["tenant-a"], page=3, clock=lambda: TS)
        finally:
            client.close()
    assert nodes[0]["node"] == "router-0" and nodes[0]["memory_used"] == 73400320
    assert sorted(r["address"] for r in rows) == ["jobs", "orders"]
    addr_pages = [(r["offset"], r["count"]) for r in server.requests
                  if r["entityType"] == "org.apache.qpid.dispatch.router.address"]
    assert addr_pages == [(0, 3), (3, 3), (6, 3), (9, 3)]
    assert all(r["operation"] == "QUERY" and r["type"] == "org.amqp.management" for r in server.requests)
