"""AMQP 1.0 clients for molecule/router's verify: what a user of a standard
address space does, through the routers of the scenario.

Runs inside a router container on the system python3 with Debian's
python3-qpid-proton (event-driven Container API: several connections in one
thread, no blocking client). Reads the spaces' credentials from the JSON file
named by $DATAPLANE_CONFIG:

    {"spaces": {"<space>": {"user": ..., "password": ..., "port": 5700}}}

Every subcommand prints one JSON object on stdout; verify.yml asserts on it.

    send      --router R --space S --address A --count N [--prefix P]
    receive   --router R --space S --address A --count N [--timeout T]
    reject    --router R --space S --address A --count N [--timeout T]
    anycast   --sender R --receiver R --space S --address A
    no-credit --router R --space S --address A [--wait T]
    multicast --sender R --receivers R,R,R --space S --address A [--count N]
    isolation --spaces S,S --senders R,R --receivers R,R --address A [--recv-address A] [--count N]
    auth      --router R --space S [--user U] [--password P] [--anonymous]
    traffic   --space S --queue-routers R,R --queue Q --anycast-from R --anycast-to R
              --anycast A --duration T
"""
import argparse
import json
import sys
import time

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from checks import delivery_problems, duplicates, isolation_problems
from clients import auth_target, config, url


def can_answer(connection):
    """Whether the peer can still answer a close on this connection: its
    transport is bound, open and without an error condition."""
    transport = connection.transport
    return transport is not None and not transport.closed and transport.condition is None


class Base(MessagingHandler):
    def __init__(self, timeout, prefetch=10):
        super(Base, self).__init__(prefetch=prefetch, auto_accept=False)
        self.timeout = timeout
        self.result = {}
        self.errors = []

    def on_start(self, event):
        self.container = event.container
        self.conns = []
        self.hard = None
        self.timer = event.container.schedule(self.timeout, self)
        self.begin(event)

    def on_timer_task(self, event):
        if self.hard is not None and event.task == self.hard:
            self.container.stop()
        elif event.task == self.timer:
            self.on_timeout(event)
        else:
            self.on_tick(event)

    def on_timeout(self, event):
        self.result["timed_out"] = True
        self.stop()

    def on_tick(self, event):
        pass

    def stop(self):
        """Close every connection and end when the peers have answered the
        close (so that every disposition sent before, e.g. the last accept,
        has reached the router), or after 5 s. A connection whose transport
        has failed or closed (a refusal: SASL, TLS, plain TCP, no listener)
        cannot answer: nothing waits for it."""
        if self.hard is not None:
            return
        self.timer.cancel()
        self.hard = self.container.schedule(5, self)
        self.closing = []
        for c in self.conns:
            if c.state & c.LOCAL_ACTIVE:
                c.close()
                self.closing.append(c)
        self._stop_when_answered()

    def _stop_when_answered(self):
        if not [c for c in self.closing if not c.state & c.REMOTE_CLOSED and can_answer(c)]:
            self.container.stop()

    def on_connection_closed(self, event):
        if self.hard is not None:
            self._stop_when_answered()

    def on_transport_closed(self, event):
        if self.hard is not None:
            self._stop_when_answered()

    def on_transport_error(self, event):
        cond = event.transport.condition
        self.errors.append("%s: %s" % (cond.name, cond.description) if cond else "transport error")

    def on_link_error(self, event):
        cond = event.link.remote_condition
        self.errors.append("%s: %s" % (cond.name, cond.description) if cond else "link error")

    def on_connection_error(self, event):
        cond = event.connection.remote_condition
        self.errors.append("%s: %s" % (cond.name, cond.description) if cond else "connection error")


class Send(Base):
    def __init__(self, target, address, count, prefix, timeout=60):
        super(Send, self).__init__(timeout)
        self.target, self.address, self.count, self.prefix = target, address, count, prefix
        self.sent = 0
        self.ids = {}
        self.result = {"accepted": [], "rejected": [], "released": []}

    def begin(self, event):
        self.conn = event.container.connect(**self.target)
        self.conns = [self.conn]
        event.container.create_sender(self.conn, self.address)

    def on_sendable(self, event):
        while event.sender.credit and self.sent < self.count:
            body = "%s-%d" % (self.prefix, self.sent)
            self.ids[event.sender.send(Message(id=body, body=body, durable=True))] = body
            self.sent += 1

    def _settled(self, event, key):
        self.result[key].append(self.ids.get(event.delivery))
        if sum(len(self.result[k]) for k in ("accepted", "rejected", "released")) == self.count:
            self.stop()

    def on_accepted(self, event):
        self._settled(event, "accepted")

    def on_rejected(self, event):
        self._settled(event, "rejected")

    def on_released(self, event):
        self._settled(event, "released")


class Receive(Base):
    """Take up to ``count`` messages (accepting them); stop at ``count`` or
    after ``timeout`` seconds."""

    def __init__(self, source, address, count, timeout):
        super(Receive, self).__init__(timeout, prefetch=max(1, count))
        self.source, self.address, self.count = source, address, count
        self.result = {"bodies": []}

    def begin(self, event):
        self.conn = event.container.connect(**self.source)
        self.conns = [self.conn]
        event.container.create_receiver(self.conn, self.address)

    def on_message(self, event):
        self.result["bodies"].append(event.message.body)
        self.accept(event.delivery)
        if len(self.result["bodies"]) >= self.count:
            self.stop()


class Reject(Receive):
    """Take up to ``count`` messages and reject each (the broker moves a
    rejected message to the queue's dead letter address)."""

    def on_message(self, event):
        self.result["bodies"].append(event.message.body)
        self.reject(event.delivery)
        if len(self.result["bodies"]) >= self.count:
            self.stop()


class Anycast(Base):
    """A receiver on one router, then a sender on another: the message
    arrives; the sender only gets credit once the receiver is known across the
    mesh."""

    def __init__(self, sender, receiver, address, timeout=60):
        super(Anycast, self).__init__(timeout)
        self.sender_url, self.receiver_url, self.address = sender, receiver, address
        self.result = {"received": [], "accepted": False}
        self.sent = False

    def begin(self, event):
        rc = event.container.connect(**self.receiver_url)
        self.conns = [rc]
        event.container.create_receiver(rc, self.address)

    def on_link_opened(self, event):
        if event.receiver and len(self.conns) == 1:
            sc = event.container.connect(**self.sender_url)
            self.conns.append(sc)
            event.container.create_sender(sc, self.address)

    def on_sendable(self, event):
        if not self.sent:
            event.sender.send(Message(body="anycast-hello"))
            self.sent = True

    def on_message(self, event):
        self.result["received"].append(event.message.body)
        self.accept(event.delivery)

    def on_accepted(self, event):
        self.result["accepted"] = True
        self.stop()


class NoCredit(Base):
    """A sender alone on an anycast address: the router gives no credit."""

    def __init__(self, target, address, wait):
        super(NoCredit, self).__init__(wait)
        self.target, self.address = target, address
        self.result = {"attached": False, "credit": 0}

    def begin(self, event):
        c = event.container.connect(**self.target)
        self.conns = [c]
        event.container.create_sender(c, self.address)

    def on_link_opened(self, event):
        self.result["attached"] = True

    def on_sendable(self, event):
        self.result["credit"] = event.sender.credit

    def on_timeout(self, event):
        self.stop()


class Multicast(Base):
    """Receivers on every router, a sender on one. Multicast is presettled
    and a router drops what it has no receiver for yet, so first probes go
    out every half second until one reached every receiver (the receivers are
    known across the mesh); then ``count`` messages, every one to every receiver
    (checks.delivery_problems; a duplicate counts once)."""

    def __init__(self, sender, receivers, address, count=20, timeout=60):
        super(Multicast, self).__init__(timeout)
        self.sender_url, self.receiver_urls, self.address, self.count = sender, receivers, address, count
        self.got = [[] for unused in receivers]
        self.probes = [set() for unused in receivers]
        self.result = {"common": None, "sent": [], "per_receiver": []}
        self.opened = 0
        self.snd = self.tick = None
        self.last_call = False
        self.n = 0

    def begin(self, event):
        self.conns = []
        for i, u in enumerate(self.receiver_urls):
            c = event.container.connect(**u)
            self.conns.append(c)
            event.container.create_receiver(c, self.address, name="r%d" % i)

    def on_link_opened(self, event):
        if event.receiver:
            self.opened += 1
            if self.opened == len(self.receiver_urls):
                c = event.container.connect(**self.sender_url)
                self.conns.append(c)
                self.snd = event.container.create_sender(c, self.address)
                self.tick = event.container.schedule(0.5, self)

    def on_timeout(self, event):
        self.result["timed_out"] = True
        self.finish()

    def on_tick(self, event):
        if self.hard is not None:
            return
        if self.last_call:
            self.finish()
            return
        if self.snd is not None and self.snd.credit:
            if self.result["common"] is None:
                self.snd.send(Message(body="probe-%d" % self.n))
                self.n += 1
            elif len(self.result["sent"]) < self.count:
                body = "mc-%d" % len(self.result["sent"])
                self.snd.send(Message(body=body))
                self.result["sent"].append(body)
        if self.result["common"] is not None and len(self.result["sent"]) >= self.count:
            # the last ones have a few seconds to arrive
            self.tick = event.container.schedule(3, self)
            self.last_call = True
            return
        self.tick = event.container.schedule(0.5 if self.result["common"] is None else 0.05, self)

    def on_message(self, event):
        i = int(event.receiver.name[1:])
        body = event.message.body
        self.accept(event.delivery)
        if str(body).startswith("probe-"):
            self.probes[i].add(body)
            common = set.intersection(*self.probes)
            if common and self.result["common"] is None:
                self.result["common"] = sorted(common)[0]
        else:
            self.got[i].append(body)
            if all(len(set(g)) >= self.count for g in self.got) and len(self.result["sent"]) >= self.count:
                self.finish()

    def finish(self):
        self.result["per_receiver"] = [len(g) for g in self.got]
        received = dict(("receiver %d" % i, g) for i, g in enumerate(self.got))
        self.result["problems"] = delivery_problems(self.result["sent"], received)
        self.result["duplicates"] = duplicates(received)
        if self.tick is not None:
            self.tick.cancel()
        self.stop()


class Isolation(Base):
    """Two spaces, the same address: a receiver in each (on different
    routers), then a sender in each; each sender sends a message every 0.2 s
    (bodies start with its space's name) until its own space's receiver has
    ``count`` of them; then 3 s more for strays. Neither receiver may get
    the other space's messages (checks.isolation_problems)."""

    def __init__(self, spaces, address, count=3, recv_address=None, timeout=60):
        super(Isolation, self).__init__(timeout)
        # spaces: [(name, sender url, receiver url)]
        self.spaces, self.address, self.count = spaces, address, count
        self.recv_address = recv_address or address
        self.bodies = dict((name, []) for name, unused, unused2 in spaces)
        self.senders = {}
        self.sent = dict((name, 0) for name, unused, unused2 in spaces)
        self.opened = 0
        self.tick = None
        self.done_at = None
        self.result = {"bodies": self.bodies, "sent": self.sent}

    def begin(self, event):
        self.conns = []
        for name, unused, rurl in self.spaces:
            c = event.container.connect(**rurl)
            self.conns.append(c)
            event.container.create_receiver(c, self.recv_address, name="recv-" + name)

    def on_link_opened(self, event):
        if event.receiver:
            self.opened += 1
            if self.opened == len(self.spaces):
                for name, surl, unused in self.spaces:
                    c = event.container.connect(**surl)
                    self.conns.append(c)
                    self.senders[name] = event.container.create_sender(c, self.address, name="send-" + name)
                self.tick = event.container.schedule(0.2, self)

    def _own(self, name):
        return len([b for b in self.bodies[name] if str(b).startswith(name + "-")])

    def on_tick(self, event):
        if self.hard is not None:
            return
        if all(self._own(name) >= self.count for name in self.bodies):
            if self.done_at is None:
                self.done_at = time.time()
            elif time.time() - self.done_at >= 3:
                self.finish()
                return
        for name, snd in self.senders.items():
            if snd.credit and self._own(name) < self.count and self.sent[name] < self.count * 20:
                body = "%s-%s-%d" % (name, self.address, self.sent[name])
                snd.send(Message(id=body, body=body, durable=True))
                self.sent[name] += 1
        self.tick = event.container.schedule(0.2, self)

    def on_message(self, event):
        self.bodies[event.receiver.name[len("recv-"):]].append(event.message.body)
        self.accept(event.delivery)

    def on_timeout(self, event):
        self.result["timed_out"] = True
        self.finish()

    def finish(self):
        self.result["problems"] = isolation_problems(self.bodies, self.count)
        if self.tick is not None:
            self.tick.cancel()
        self.stop()


class Auth(Base):
    """Open a connection and a receiver: ok, or the error the router gave."""

    def __init__(self, target, timeout=20):
        super(Auth, self).__init__(timeout)
        self.target = target
        self.result = {"opened": False}

    def begin(self, event):
        c = event.container.connect(**self.target)
        self.conns = [c]
        event.container.create_receiver(c, "auth-probe")

    def on_connection_opened(self, event):
        self.result["opened"] = True
        self.stop()

    def on_transport_error(self, event):
        super(Auth, self).on_transport_error(event)
        self.stop()

    def on_disconnected(self, event):
        self.errors.append("disconnected")
        self.stop()


class Traffic(Base):
    """For ``duration`` seconds, every 0.2 s: a queue producer through the
    first of ``queue_urls`` (failing over to the next when its router goes
    away) sends one durable message when the previous one is settled (again
    when it was not accepted) and records which were accepted; an anycast
    sender on one router sends a tick every 0.2 s to a receiver on another and
    records every tick delivered and the longest gap between two."""

    def __init__(self, queue_urls, queue, any_from, any_to, anycast, duration):
        super(Traffic, self).__init__(duration + 60)
        self.queue_urls, self.queue, self.any_from, self.any_to, self.anycast = (queue_urls, queue, any_from,
                                                                                 any_to, anycast)
        self.duration = duration
        self.result = {"queue_accepted": [], "queue_reconnects": 0, "queue_errors": [], "anycast_sent": 0,
                       "anycast_received": 0, "anycast_max_gap": 0.0}
        self.q_next = 0
        self.q_inflight = None
        self.q_retry = None
        self.last_tick = None
        self.stopping = False

    def begin(self, event):
        self.t0 = time.time()
        first = self.queue_urls[0]
        self.qconn = event.container.connect(urls=[u["url"] for u in self.queue_urls], user=first["user"],
                                             password=first["password"], allowed_mechs="PLAIN",
                                             sasl_enabled=True, ssl_domain=first["ssl_domain"])
        self.qsnd = event.container.create_sender(self.qconn, self.queue)
        rc = event.container.connect(**self.any_to)
        event.container.create_receiver(rc, self.anycast)
        sc = event.container.connect(**self.any_from)
        self.asnd = event.container.create_sender(sc, self.anycast)
        self.conns = [self.qconn, rc, sc]
        self.tick = event.container.schedule(0.2, self)

    def on_tick(self, event):
        if self.hard is not None:
            return
        if time.time() - self.t0 >= self.duration:
            self.stopping = True
            if self.q_inflight is None:
                self.stop()
                return
        elif self.asnd.credit:
            self.asnd.send(Message(body="tick-%d" % self.result["anycast_sent"]))
            self.result["anycast_sent"] += 1
        self._send_queue()
        self.tick = event.container.schedule(0.2, self)

    def _send_queue(self):
        if self.q_inflight is None and not self.stopping and self.qsnd.credit:
            if self.q_retry is not None:
                body, self.q_retry = self.q_retry, None
            else:
                body = "kill-%d" % self.q_next
                self.q_next += 1
            self.q_inflight = body  # the tag names it, unique per send: a late outcome still counts
            self.qsnd.send(Message(id=body, body=body, durable=True), tag="%s#%.6f" % (body, time.time()))

    def _not_accepted(self):  # not accepted: it goes again (at least once)
        if self.q_inflight is not None:
            self.q_retry = self.q_inflight
            self.q_inflight = None

    def on_accepted(self, event):
        if event.sender == self.qsnd:
            tag = event.delivery.tag
            body = (tag.decode() if isinstance(tag, bytes) else tag).rsplit("#", 1)[0]
            self.result["queue_accepted"].append(body)
            if body == self.q_inflight:
                self.q_inflight = None
            self.q_retry = None if body == self.q_retry else self.q_retry  # accepted after all: not sent again
            if self.stopping and self.q_inflight is None:
                self.stop()

    def on_rejected(self, event):
        if event.sender == self.qsnd:
            self.result["queue_errors"].append("rejected %s" % self.q_inflight)
            self._not_accepted()

    def on_released(self, event):
        if event.sender == self.qsnd:
            self._not_accepted()
    on_modified = on_released

    def on_disconnected(self, event):
        if event.connection == self.qconn:
            # the in-flight message was not accepted: it goes again after the reconnect
            self.result["queue_reconnects"] += 1
            self._not_accepted()
        return super(Traffic, self).on_disconnected(event)

    def on_message(self, event):
        now = time.time()
        if self.last_tick is not None:
            self.result["anycast_max_gap"] = max(self.result["anycast_max_gap"], round(now - self.last_tick, 2))
        self.last_tick = now
        self.result["anycast_received"] += 1
        self.accept(event.delivery)

    def on_transport_error(self, event):
        # the queue connection reconnects by itself (urls, reconnect)
        self.result["queue_errors"].append("transport: %s" % (event.transport.condition,))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("send", "receive", "reject", "no-credit", "auth"):
        s = sub.add_parser(name)
        s.add_argument("--router", required=True)
        s.add_argument("--space", required=True)
        if name != "auth":
            s.add_argument("--address", required=True)
        s.add_argument("--count", type=int, default=1)
        s.add_argument("--prefix", default="m")
        s.add_argument("--timeout", type=float, default=20)
        s.add_argument("--wait", type=float, default=3)
        s.add_argument("--user")
        s.add_argument("--password")
        s.add_argument("--anonymous", action="store_true")
        s.add_argument("--plain", action="store_true", help="plain TCP (no TLS)")
        s.add_argument("--ca", help="trust this CA file instead of the collection's")
    s = sub.add_parser("anycast")
    s.add_argument("--sender", required=True)
    s.add_argument("--receiver", required=True)
    s.add_argument("--space", required=True)
    s.add_argument("--address", required=True)
    s = sub.add_parser("multicast")
    s.add_argument("--sender", required=True)
    s.add_argument("--receivers", required=True)
    s.add_argument("--space", required=True)
    s.add_argument("--address", required=True)
    s.add_argument("--count", type=int, default=20)
    s = sub.add_parser("isolation")
    s.add_argument("--spaces", required=True)
    s.add_argument("--senders", required=True)
    s.add_argument("--receivers", required=True)
    s.add_argument("--address", required=True)
    s.add_argument("--recv-address")
    s.add_argument("--count", type=int, default=3)
    s = sub.add_parser("traffic")
    s.add_argument("--space", required=True)
    s.add_argument("--queue-routers", required=True)
    s.add_argument("--queue", required=True)
    s.add_argument("--anycast-from", required=True)
    s.add_argument("--anycast-to", required=True)
    s.add_argument("--anycast", required=True)
    s.add_argument("--duration", type=float, default=40)
    a = p.parse_args()
    cfg = config()
    if a.cmd == "send":
        h = Send(url(a.router, a.space, cfg), a.address, a.count, a.prefix, timeout=a.timeout)
    elif a.cmd == "receive":
        h = Receive(url(a.router, a.space, cfg), a.address, a.count, a.timeout)
    elif a.cmd == "reject":
        h = Reject(url(a.router, a.space, cfg), a.address, a.count, a.timeout)
    elif a.cmd == "no-credit":
        h = NoCredit(url(a.router, a.space, cfg), a.address, a.wait)
    elif a.cmd == "auth":
        h = Auth(auth_target(a, cfg), timeout=a.timeout)
    elif a.cmd == "anycast":
        h = Anycast(url(a.sender, a.space, cfg), url(a.receiver, a.space, cfg), a.address)
    elif a.cmd == "multicast":
        h = Multicast(url(a.sender, a.space, cfg), [url(r, a.space, cfg) for r in a.receivers.split(",")],
                      a.address, a.count)
    elif a.cmd == "isolation":
        spaces = [(sp, url(snd, sp, cfg), url(rcv, sp, cfg))
                  for sp, snd, rcv in zip(a.spaces.split(","), a.senders.split(","), a.receivers.split(","))]
        h = Isolation(spaces, a.address, a.count, a.recv_address)
    else:
        h = Traffic([url(r, a.space, cfg) for r in a.queue_routers.split(",")], a.queue,
                    url(a.anycast_from, a.space, cfg), url(a.anycast_to, a.space, cfg), a.anycast, a.duration)
    Container(h).run()
    h.result["errors"] = h.errors
    json.dump(h.result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
