"""One client process of the identity benchmarks (latency.py, connrate.py):
opens AMQP connections to a router listener one after another, at most
``--inflight`` at a time, each closed as soon as the router's ``open``
arrives (the login is then complete: SASL done, the auth service answered),
with python-qpid-proton's event API (one Container for the whole run).

    python3 connclient.py URL --seconds S [--inflight K] [--users FILE] [--mech PLAIN|ANONYMOUS] [--times]

``--users``: a JSON file ``[[user, password], ...]``; connection n logs in as
item ``n mod len`` (``--once``: each item once, then stop). Prints one JSON
line: ``opened``, ``refused`` (with the first condition), ``seconds`` (first
connect .. last open), this process's CPU seconds, and with ``--times`` every
connection's time from connect to the router's open in ms.
"""

import argparse
import json
import resource
import time

from proton.handlers import MessagingHandler
from proton.reactor import Container


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class Opener(MessagingHandler):
    def __init__(self, opts, users):
        super(Opener, self).__init__()
        self.opts, self.users = opts, users
        self.n = 0
        self.inflight = {}
        self.opened = self.refused = 0
        self.condition = None
        self.times = []
        self.deadline = None
        self.first = self.last = None

    def on_start(self, event):
        self.container = event.container
        self.deadline = time.monotonic() + self.opts.seconds
        self.first = time.monotonic()
        for unused in range(self.opts.inflight):
            self.next()

    def more(self):
        if time.monotonic() >= self.deadline:
            return False
        return not (self.opts.once and self.users and self.n >= len(self.users))

    def next(self):
        if not self.more():
            return
        kw = {"allowed_mechs": self.opts.mech, "reconnect": False, "allow_insecure_mechs": True}
        if self.users:
            kw["user"], kw["password"] = self.users[self.n % len(self.users)]
        self.n += 1
        conn = self.container.connect(self.opts.url, **kw)
        self.inflight[conn] = time.monotonic()

    def on_connection_opened(self, event):
        began = self.inflight.pop(event.connection, None)
        if began is None:
            return
        self.last = time.monotonic()
        self.opened += 1
        if self.opts.times:
            self.times.append(round((self.last - began) * 1000.0, 3))
        event.connection.close()
        self.next()

    def on_transport_error(self, event):
        conn = event.connection
        if conn in self.inflight:
            del self.inflight[conn]
            self.refused += 1
            if self.condition is None:
                self.condition = str(event.transport.condition)
            self.next()

    def on_transport_closed(self, event):
        # a clean close after our own close: the slot was already refilled
        pass


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--inflight", type=int, default=1)
    parser.add_argument("--users")
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--mech", default="PLAIN")
    parser.add_argument("--times", action="store_true")
    opts = parser.parse_args(argv)
    users = None
    if opts.users:
        with open(opts.users) as handle:
            users = [tuple(u) for u in json.load(handle)]
    handler = Opener(opts, users)
    cpu0 = cpu_seconds()
    Container(handler).run()
    print(json.dumps({"opened": handler.opened, "refused": handler.refused, "condition": handler.condition,
                      "seconds": round((handler.last or handler.first) - handler.first, 3),
                      "cpu": round(cpu_seconds() - cpu0, 3), "times": handler.times}))


if __name__ == "__main__":
    main()
