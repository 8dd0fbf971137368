"""molecule/router's clients of a rolling upgrade: for each queue a producer
and a consumer that fail over between the routers until a stop file exists.
Installed beside dataplane.py (whose Base it uses); runs on Debian's
python3-qpid-proton in a router container. Prints one JSON object
(checks.py rolling reads it).

    rolling.py --space S --routers R,R,R --queues Q,Q --stop-file F [--max-duration T]
"""
import argparse
import json
import os
import sys
import time

from proton import Message
from proton.reactor import Container

from clients import config, url
from dataplane import Base


class Rolling(Base):
    """Clients that keep working through a rolling upgrade: for each queue a
    producer (one durable message in flight, sent again until accepted) and a
    consumer, each on its own connection with every router to fail over to
    (the consumer in the reverse order), until ``stop_file`` exists; then the
    producers stop and the consumers take what is left (at most ``drain`` s).
    Records per queue the accepted and received ids, each client's reconnects
    and its longest gap: the seconds between two accepted sends, between two
    received messages."""

    def __init__(self, urls, queues, stop_file, max_duration, drain=90):
        super(Rolling, self).__init__(max_duration + drain + 30)
        self.urls, self.queues, self.stop_file = urls, queues, stop_file
        self.max_duration, self.drain = max_duration, drain
        self.q = {}
        self.result = {"queues": {}}
        self.draining_since = None

    def _connect(self, event, urls):
        first = urls[0]
        return event.container.connect(urls=[u["url"] for u in urls], user=first["user"],
                                       password=first["password"], allowed_mechs="PLAIN",
                                       sasl_enabled=True, ssl_domain=first["ssl_domain"])

    def begin(self, event):
        self.t0 = time.time()
        for name in self.queues:
            pc = self._connect(event, self.urls)
            cc = self._connect(event, list(reversed(self.urls)))
            st = {"pconn": pc, "cconn": cc, "next": 0, "inflight": None, "retry": None, "last_accept": self.t0,
                  "last_receive": self.t0}
            st["snd"] = event.container.create_sender(pc, name)
            st["rcv"] = event.container.create_receiver(cc, name)
            self.q[name] = st
            self.result["queues"][name] = {"accepted": [], "received": [], "producer_reconnects": 0,
                                           "consumer_reconnects": 0, "producer_longest_gap": 0.0,
                                           "consumer_longest_gap": 0.0}
            self.conns += [pc, cc]
        self.tick = event.container.schedule(0.2, self)

    def _by(self, attr, value):
        for name, st in self.q.items():
            if st[attr] == value:
                return name, st
        return None, None

    def on_tick(self, event):
        if self.hard is not None:
            return
        now = time.time()
        if self.draining_since is None and (os.path.exists(self.stop_file) or now - self.t0 >= self.max_duration):
            self.draining_since = now
        for name, st in self.q.items():
            if self.draining_since is None and st["inflight"] is None and st["snd"].credit:
                if st["retry"] is not None:
                    body, st["retry"] = st["retry"], None
                else:
                    body = "%s-%d" % (name, st["next"])
                    st["next"] += 1
                st["inflight"] = body
                st["snd"].send(Message(id=body, body=body, durable=True))
        if self.draining_since is not None:
            left = [n for n, st in self.q.items()
                    if st["inflight"] is not None
                    or set(self.result["queues"][n]["accepted"]) - set(self.result["queues"][n]["received"])]
            if not left or now - self.draining_since >= self.drain:
                self.result["drain_left"] = left
                self.stop()
                return
        self.tick = event.container.schedule(0.2, self)

    def _not_accepted(self, st):
        if st["inflight"] is not None:
            st["retry"], st["inflight"] = st["inflight"], None

    def on_accepted(self, event):
        name, st = self._by("snd", event.sender)
        if st is not None and st["inflight"] is not None:
            now = time.time()
            r = self.result["queues"][name]
            r["accepted"].append(st["inflight"])
            r["producer_longest_gap"] = max(r["producer_longest_gap"], round(now - st["last_accept"], 2))
            st["last_accept"], st["inflight"] = now, None

    def on_rejected(self, event):
        name, st = self._by("snd", event.sender)
        if st is not None:
            self.errors.append("rejected %s" % st["inflight"])
            self._not_accepted(st)

    def on_released(self, event):
        name, st = self._by("snd", event.sender)
        if st is not None:
            self._not_accepted(st)

    def on_modified(self, event):
        self.on_released(event)

    def on_message(self, event):
        name, st = self._by("rcv", event.receiver)
        if st is not None:
            now = time.time()
            r = self.result["queues"][name]
            r["received"].append(event.message.body)
            if self.draining_since is None:
                r["consumer_longest_gap"] = max(r["consumer_longest_gap"], round(now - st["last_receive"], 2))
            st["last_receive"] = now
        self.accept(event.delivery)

    def on_disconnected(self, event):
        name, st = self._by("pconn", event.connection)
        if st is not None:
            self.result["queues"][name]["producer_reconnects"] += 1
            self._not_accepted(st)
        name, st = self._by("cconn", event.connection)
        if st is not None:
            self.result["queues"][name]["consumer_reconnects"] += 1
        return super(Rolling, self).on_disconnected(event)

    def on_transport_error(self, event):
        # every connection reconnects by itself (urls, reconnect)
        self.errors.append("transport: %s" % (event.transport.condition,))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--space", required=True)
    p.add_argument("--routers", required=True)
    p.add_argument("--queues", required=True)
    p.add_argument("--stop-file", required=True)
    p.add_argument("--max-duration", type=float, default=900)
    a = p.parse_args()
    cfg = config()
    h = Rolling([url(r, a.space, cfg) for r in a.routers.split(",")], a.queues.split(","), a.stop_file,
                a.max_duration)
    Container(h).run()
    h.result["errors"] = h.errors
    json.dump(h.result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
