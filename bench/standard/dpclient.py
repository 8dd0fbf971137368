"""One client process of the data-plane benchmark (bench/standard/dataplane.py
starts N senders and N receivers of these, dpload.py).

    python3 dpclient.py send URL ADDRESS --count N --size B --window W [--durable] [--user U] [--ca F] [--ready]
    python3 dpclient.py recv URL ADDRESS --prefetch C [--user U] [--ca F]

Each message carries its send time, ``time.monotonic()`` (CLOCK_MONOTONIC:
one clock for every process of the host on Linux), in the application
property ``ts``; the receiver takes the latency. A sender keeps at most
``--window`` unsettled deliveries (settled = accepted by the broker, or for
anycast by a receiver; a released one is sent again). A receiver prints
``ready`` once its link is attached, then receives and accepts until a line
``stop`` arrives on stdin and no message came for ``--idle`` seconds. Both
print one JSON line at the end: counts, the first send / last receive time,
the CPU seconds of this process while it ran its container, and (receiver)
every latency in ms. The password of ``--user`` comes from the environment
variable DPCLIENT_PASSWORD (not the command line). An ``amqps://`` URL is
TLS: the client trusts the CA of ``--ca`` and checks the server's name (as
tests/integration/standard_env.py's client_domain); without ``--user`` the
client offers SASL ANONYMOUS only, with it PLAIN only (over plain TCP too:
the broker's direct case). ``connection_kwargs`` is the one place that turns
these into proton's connect arguments, for every case of the benchmark.
"""

import argparse
import json
import os
import resource
import sys
import threading
import time

from proton import Message, SSLDomain
from proton.handlers import MessagingHandler
from proton.reactor import Container


def connection_kwargs(url, user=None, password=None, ca=None):
    """proton's connect arguments of a benchmark client: SASL PLAIN as ``user``
    or ANONYMOUS; for ``amqps`` a TLS domain trusting ``ca``, verifying the name."""
    kw = {"user": user, "password": password or "", "allowed_mechs": "PLAIN"} if user \
        else {"allowed_mechs": "ANONYMOUS"}
    if url.startswith("amqps:"):
        if not ca:
            raise ValueError("%s: amqps needs --ca (the CA the server's certificate is from)" % url)
        domain = SSLDomain(SSLDomain.MODE_CLIENT)
        domain.set_trusted_ca_db(ca)
        domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME, ca)
        kw["ssl_domain"] = domain
    elif user:
        kw["allow_insecure_mechs"] = True  # PLAIN over plain TCP: the broker's own port (case a)
    return kw


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class Client(MessagingHandler):
    def __init__(self, args, prefetch=0):
        super(Client, self).__init__(prefetch=prefetch, auto_accept=True, auto_settle=True)
        self.args = args
        self.conn = None
        self.timer = None
        self.error = None
        self.started = time.monotonic()

    def connect(self, container):
        a = self.args
        kw = connection_kwargs(a.url, a.user, os.environ.get("DPCLIENT_PASSWORD", ""), a.ca)
        self.conn = container.connect(a.url, reconnect=False, **kw)
        return self.conn

    def on_transport_error(self, event):
        self.error = "transport error: %s" % (event.transport.condition,)
        self.close()

    def close(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.conn is not None:
            self.conn.close()


class Sender(Client):
    def __init__(self, args):
        super(Sender, self).__init__(args)
        self.body = b"x" * args.size
        self.sent = self.settled = self.released = 0
        self.first_send = self.last_settle = None
        self.sender = None

    def on_start(self, event):
        self.sender = event.container.create_sender(self.connect(event.container), self.args.address)
        self.timer = event.container.schedule(self.args.timeout, self)

    def on_timer_task(self, event):
        self.error = "timed out after %.0f s: sent %d, settled %d" % (self.args.timeout, self.sent, self.settled)
        self.close()

    def on_sendable(self, event):
        self.send_more()

    def send_more(self):
        s, a = self.sender, self.args
        while s.credit > 0 and self.sent - self.released < a.count and self.sent - self.settled < a.window:
            now = time.monotonic()
            if self.first_send is None:
                self.first_send = now
            s.send(Message(body=self.body, durable=a.durable, properties={"ts": now}))
            self.sent += 1

    def on_accepted(self, event):
        self.settled += 1
        if self.settled - self.released >= self.args.count:
            self.last_settle = time.monotonic()
            self.close()
        else:
            self.send_more()

    def on_released(self, event):
        # anycast: no receiver behind this router (yet); send another one
        self.settled += 1
        self.released += 1
        self.send_more()

    on_modified = on_released

    def on_rejected(self, event):
        self.error = "rejected: %s" % (event.delivery.remote.condition,)
        self.close()

    def result(self):
        return {"role": "send", "sent": self.sent, "accepted": self.settled - self.released,
                "released": self.released, "first_send": self.first_send, "last_settle": self.last_settle}


class Receiver(Client):
    def __init__(self, args):
        super(Receiver, self).__init__(args, prefetch=args.prefetch)
        self.received = 0
        self.latencies = []
        self.first_recv = self.last_recv = None
        self.stop = threading.Event()
        threading.Thread(target=self._read_stdin, daemon=True).start()

    def _read_stdin(self):
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        self.stop.set()

    def on_start(self, event):
        event.container.create_receiver(self.connect(event.container), self.args.address)
        self.timer = event.container.schedule(0.2, self)

    def on_link_opened(self, event):
        if event.receiver is not None:
            print("ready", flush=True)

    def on_timer_task(self, event):
        now = time.monotonic()
        last = self.last_recv or self.started
        if (self.stop.is_set() and now - last >= self.args.idle) or now - self.started > self.args.timeout:
            if not self.stop.is_set():
                self.error = "timed out after %.0f s: received %d" % (self.args.timeout, self.received)
            self.timer = None
            self.close()
            return
        self.timer = event.container.schedule(0.2, self)

    def on_message(self, event):
        now = time.monotonic()
        self.latencies.append(round((now - event.message.properties["ts"]) * 1000.0, 3))
        self.received += 1
        if self.first_recv is None:
            self.first_recv = now
        self.last_recv = now

    def result(self):
        return {"role": "recv", "received": self.received, "first_recv": self.first_recv,
                "last_recv": self.last_recv, "latencies_ms": self.latencies}


def main(argv=None):
    ap = argparse.ArgumentParser(description="one sender or receiver of bench/standard/dataplane.py")
    ap.add_argument("role", choices=("send", "recv"))
    ap.add_argument("url")
    ap.add_argument("address")
    ap.add_argument("--user")
    ap.add_argument("--ca", help="amqps: the CA file the client trusts")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--durable", action="store_true")
    ap.add_argument("--prefetch", type=int, default=1000)
    ap.add_argument("--idle", type=float, default=1.0)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--ready", action="store_true", help="send: print ready, start on a line go on stdin")
    args = ap.parse_args(argv)
    if args.role == "send" and args.ready:
        print("ready", flush=True)
        sys.stdin.readline()
    handler = Sender(args) if args.role == "send" else Receiver(args)
    cpu0 = cpu_seconds()
    Container(handler).run()
    out = handler.result()
    out.update(cpu_seconds=cpu_seconds() - cpu0, error=handler.error)
    print(json.dumps(out), flush=True)
    return 1 if handler.error else 0


if __name__ == "__main__":
    sys.exit(main())
