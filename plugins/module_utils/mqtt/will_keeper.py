# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The will keeper: the last wills of a standard space's AMQP clients
(issue 21; docs/mqtt-design.md "Wills of AMQP clients").

An AMQP client of space S leaves a will for address X by attaching a
sender to ``$will/X`` on the space's listener and sending one message
there, the will. The router admits that link exactly when the client may
send to X (the vhost's lists, ``standard.entities.terminus_names``; the
auth service's address-authz, ``auth.authz.with_wills``) and routes it
(linkRoute ``enmasse/S/mqtt-will-linkroute``, prefix ``S/$will``) to a
keeper connected to the space's will listener ``enmasse/S/mqtt-will``
(role route-container; the space's MQTT service user). The keeper:

* accepts the will; a later message on the same link replaces it;
* when the link ends with an error (the client's connection is lost: the
  router says ``qd:routed-link-lost``; the client detached it with an
  error) sends the will to ``S/X`` on its own connection and forgets it;
* when the client detaches the link cleanly (closed, no error) forgets it:
  the client left on purpose, as an MQTT DISCONNECT;
* a will with the annotation ``x-opt-mqtt-will-delay`` (seconds, at most
  ``max_will_delay``; MQTT 5's Will Delay Interval) waits that long after
  its link ended with an error, and a will link of the same name and
  address attached to this keeper before then cancels it: the client came
  back (the router names a routed link ``<link name>@<client's container
  id>``, AMQP's own identity of a link).

A keeper's own end (its process, its router) ends every will link it held
with an error at the client, which is alive: it attaches again and a
keeper of the space gets the will anew. Wills live in the keeper's memory
only: no will is sent for a client that did not go away.

The program needs python-qpid-proton (imported by ``run``); the rest is
pure, for the unit tests. ``enmasse-mqtt-will-keeper --config <file.json>``
(roles/mqtt_gateway/files) runs ``main``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import heapq
import json
import logging
import os
import socket
import sys

try:  # in the collection
    from ..standard import entities
except ImportError:  # the program's package (roles/mqtt_gateway): a copy beside this file
    from . import entities

try:  # the program's host has python3-qpid-proton; the collection's other users need not
    from proton.handlers import MessagingHandler as _Handler
except ImportError:
    _Handler = object

LOG = logging.getLogger("enmasse-mqtt-will-keeper")
REQUIRED = ("space", "routers", "user", "password_file")
DEFAULTS = {"router_tls": True, "router_ca_file": "", "router_server_name": "", "container_id": "",
            "max_wills": 100000, "max_will_size": 65536, "max_will_delay": 86400, "log_level": "INFO"}
LOST = "qd:routed-link-lost"
# the will delay's annotation: mqtt.mapping.ANNOTATION_WILL_DELAY, which the
# gateway's MQTT 5 wills carry too (the keeper's bundle holds no mapping.py;
# tests/unit/test_mqtt_will_keeper.py keeps the two equal)
WILL_DELAY = "x-opt-mqtt-will-delay"


class ConfigError(Exception):
    pass


def load_config(path):
    """The configuration of ``path`` (JSON), checked: a ConfigError names
    the field, its value and the rule."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise ConfigError("config %s: %s" % (path, exc))
    return check_config(doc)


def check_config(doc):
    if not isinstance(doc, dict):
        raise ConfigError("config: %r must be a JSON object" % (doc,))
    unknown = sorted(set(doc) - set(REQUIRED) - set(DEFAULTS))
    if unknown:
        raise ConfigError("config: unknown field %s (known: %s)" % (
            unknown[0], ", ".join(sorted(REQUIRED + tuple(DEFAULTS)))))
    cfg = dict(DEFAULTS, **doc)
    for key in ("space", "user", "password_file"):
        if not isinstance(cfg.get(key), str) or not cfg.get(key):
            raise ConfigError("%s: %r must be a non-empty string" % (key, cfg.get(key)))
    routers = cfg.get("routers")
    if not isinstance(routers, list) or not routers or not all(_host_port(r) for r in routers):
        raise ConfigError("routers: %r must be a non-empty list of host:port (the space's will listener "
                          "on each router, tried in order)" % (routers,))
    if not isinstance(cfg["router_tls"], bool):
        raise ConfigError("router_tls: %r must be true or false" % (cfg["router_tls"],))
    if cfg["router_tls"] and not cfg["router_ca_file"]:
        raise ConfigError("router_ca_file: %r is required with router_tls (the CA of the routers' "
                          "certificates)" % (cfg["router_ca_file"],))
    for key, least in (("max_wills", 1), ("max_will_size", 1), ("max_will_delay", 0)):
        value = cfg[key]
        if isinstance(value, str) and value.isdigit():  # a template rendered it as a string
            value = cfg[key] = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError("%s: %r must be a whole number of at least %d" % (key, cfg[key], least))
    if cfg["log_level"] not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError("log_level: %r must be DEBUG, INFO, WARNING or ERROR" % (cfg["log_level"],))
    if not cfg["container_id"]:
        cfg["container_id"] = "enmasse-mqtt-will-keeper/%s/%s" % (cfg["space"], socket.gethostname())
    return cfg


def _host_port(text):
    if not isinstance(text, str) or ":" not in text:
        return False
    host, port = text.rsplit(":", 1)
    return bool(host) and port.isdigit() and 0 < int(port) < 65536


def will_address(space, target):
    """The address a will link's target ``target`` leaves a will for,
    inside the routers (``S/X``), or None when it is not one of space
    ``space``'s: ``S/$will/X`` as the router routes it (``$will/X``, the
    client's name, is taken too), X not empty."""
    if not isinstance(target, str):
        return None
    own = entities.internal(space, entities.WILL_PREFIX) + "/"
    bare = entities.WILL_PREFIX + "/"
    for prefix in (own, bare):
        if target.startswith(prefix) and len(target) > len(prefix):
            return entities.internal(space, target[len(prefix):])
    return None


def publishes(condition_name):
    """Whether a will link's end sends the will: any error (the router's
    ``qd:routed-link-lost`` when the client's connection ended, or the
    client's own error); a clean detach (no error) does not."""
    return condition_name is not None


def will_delay(annotations, max_delay):
    """(seconds, None) a will waits after its client went away, from its
    message annotations (``x-opt-mqtt-will-delay``; none: 0), or (None, the
    reason) when the value is not a whole number of seconds from 0 to
    ``max_delay``."""
    value = (annotations or {}).get(WILL_DELAY, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= max_delay:
        return None, "%s: %r must be a whole number of seconds from 0 to %d (max_will_delay)" % (
            WILL_DELAY, value, max_delay)
    return int(value), None


def read_password(path):
    with open(path) as f:
        return f.read().strip()


class _Call(object):
    """A timer task of the container: calls ``fn``."""

    def __init__(self, fn):
        self.fn = fn

    def on_timer_task(self, event):  # pylint: disable=unused-argument
        self.fn()


class Keeper(_Handler):
    """The keeper's proton handler: the space's will links, in memory.

    ``wills``: {receiver link: [address, message or None, delay]}, the links
    clients hold; ``delayed``: {(link name, address): (message, due, seq)},
    wills waiting for their delay, and ``due_heap`` [(due, seq, key)] their
    order (entries of cancelled or replaced wills are skipped, and dropped
    when they outnumber the waiting wills; one timer ticks every TICK s);
    ``sending``: {sender link: (address, message, deadline, sent)}, wills on
    their way; ``pending``: [(address, message,
    deadline)], wills of clients gone while the keeper had no connection, sent
    once it has one. All four count against ``max_wills``; a will not
    accepted by its deadline (SEND_TIMEOUT after it was due) is dropped with a
    log line."""

    SEND_TIMEOUT = 30.0
    SWEEP = 5.0
    TICK = 1.0
    HEARTBEAT = 10

    def __init__(self, cfg, clock=None):
        super(Keeper, self).__init__(prefetch=10, auto_accept=False, auto_settle=True)
        import time
        self.cfg = cfg
        self.clock = clock or time.monotonic
        self.container = self.conn = self.session = None
        self.wills, self.sending, self.pending, self.delayed = {}, {}, [], {}
        self.due_heap = []
        self.tries = self.names = self.seq = 0

    def held(self):
        return len(self.wills) + len(self.sending) + len(self.pending) + len(self.delayed)

    # ------------------------------------------------------------ the connection

    def on_start(self, event):
        self.container = event.container
        self.container.container_id = self.cfg["container_id"]
        self.connect()
        self.container.schedule(self.SWEEP, _Call(self.sweep))
        self.container.schedule(self.TICK, _Call(self.tick))

    def connect(self):
        """A fresh connection to the next router of the list (never proton's
        reconnect: it attaches again every link of the old connection)."""
        from proton import SSLDomain
        cfg = self.cfg
        domain = None
        if cfg["router_tls"]:
            domain = SSLDomain(SSLDomain.MODE_CLIENT)
            domain.set_trusted_ca_db(cfg["router_ca_file"])
            domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
        router = cfg["routers"][self.tries % len(cfg["routers"])]
        self.session = None
        self.conn = self.container.connect(
            url=("amqps://" if cfg["router_tls"] else "amqp://") + router, user=cfg["user"],
            password=read_password(cfg["password_file"]), allowed_mechs="PLAIN", ssl_domain=domain,
            reconnect=False, heartbeat=self.HEARTBEAT, virtual_host=cfg["router_server_name"] or None,
            sasl_enabled=True, allow_insecure_mechs=not cfg["router_tls"])

    def on_connection_opened(self, event):
        self.tries = 0
        LOG.info("connected to a router of space %s as %s", self.cfg["space"], self.cfg["container_id"])
        pending, self.pending = self.pending, []
        for address, message, deadline in pending:
            self.publish(address, message, deadline)

    def on_transport_closed(self, event):
        """The connection is gone, whoever ended it (the router, the network, a
        failed dial): every will link with it; the wills on their way go out
        again on the next connection (at least once); a fresh dial, later."""
        if self.conn is None or event.connection != self.conn:  # proton wraps each event anew: ==, not is
            return
        if self.wills:
            LOG.warning("connection lost: %d will links ended with it (their clients attach again)", len(self.wills))
        self.pending.extend((a, m, d) for a, m, d, unused in self.sending.values())
        self.wills.clear()
        self.sending.clear()
        self.conn = self.session = None
        self.tries += 1
        delay = min(10.0, 0.5 * 2 ** min(self.tries, 5))
        LOG.info("dialling again in %.1f s", delay)
        if self.container is not None:
            self.container.schedule(delay, _Call(self.connect))

    def on_connection_error(self, event):
        LOG.warning("the router closed the connection: %s", event.connection.remote_condition)

    def on_transport_error(self, event):
        LOG.warning("connection failed: %s", event.transport.condition)

    # ------------------------------------------------------------ the clients' will links

    def on_link_remote_open(self, event):
        """Every attach the router routes here is decided now, before
        proton's own handlers would open it: a receiver for a will of the
        space is opened, anything else is refused (closed with a reason)."""
        link = event.link
        if link in self.sending or not link.state & link.LOCAL_UNINIT:
            return
        address = will_address(self.cfg["space"], link.remote_target.address) if link.is_receiver else None
        if address is None:
            LOG.warning("refused a link to %r: not a will of space %s", link.remote_target.address,
                        self.cfg["space"])
            _refuse(link, "amqp:not-allowed", "not a will address of this space")
            return
        back = (link.name, address) in self.delayed  # its delayed will makes room for it
        if self.held() - back >= self.cfg["max_wills"]:
            LOG.warning("refused the will for %s: %d wills held (max_wills)", address, self.held())
            _refuse(link, "amqp:resource-limit-exceeded", "too many wills")
            return
        link.target.address = link.remote_target.address
        link.open()
        self.wills[link] = [address, None, 0]
        if self.delayed.pop((link.name, address), None) is not None:
            LOG.info("the delayed will for %s is cancelled: its link %r is back", address, link.name)
            self.compact()

    def on_delivery(self, event):
        """A will larger than max_will_size ends its link while it arrives
        (before proton's handler buffers the whole message)."""
        dlv = event.delivery
        if dlv.link in self.wills and dlv.pending > self.cfg["max_will_size"]:
            address = self.wills.pop(dlv.link)[0]
            LOG.warning("refused a will for %s: larger than max_will_size %d", address, self.cfg["max_will_size"])
            _refuse(dlv.link, "amqp:link:message-size-exceeded", "a will is at most %d bytes" % self.cfg["max_will_size"])

    def on_message(self, event):
        held = self.wills.get(event.link)
        if held is None:  # not a will link, or one on_delivery ended for its size
            self.reject(event.delivery)
            return
        delay, why = will_delay(event.message.annotations, self.cfg["max_will_delay"])
        if why is not None:  # refused with the reason; the will held before stays
            from proton import Condition
            LOG.warning("refused a will for %s: %s", held[0], why)
            event.delivery.local.condition = Condition("amqp:invalid-field", why)
            self.reject(event.delivery)
            return
        held[1], held[2] = event.message, delay
        self.accept(event.delivery)

    def on_link_remote_close(self, event):
        self.ended(event.link, close=True)

    def on_link_remote_detach(self, event):
        self.ended(event.link, close=False)

    def on_link_error(self, event):
        """A link's end with an error is handled by ended(): not the
        connection's, which proton's default would close with every other
        will on it."""

    def ended(self, link, close):
        """A link's end (detach, closed or not): a will link sends its will
        when the end carries an error and forgets it otherwise; a will on its
        way whose link the router ended is lost (logged)."""
        held = self.wills.pop(link, None)
        cond = link.remote_condition
        if held is not None and held[1] is not None and publishes(cond.name if cond else None):
            address, message, delay = held
            if delay:
                LOG.info("client gone (%s): its will to %s waits %d s for link %r", cond.name, address, delay,
                         link.name)
                self.wait(link.name, address, message, self.clock() + delay)
            else:
                LOG.info("client gone (%s): sending its will to %s", cond.name, address)
                self.publish(address, message, self.clock() + self.SEND_TIMEOUT)
        sent = self.sending.pop(link, None)
        if sent is not None:
            LOG.warning("the will for %s is lost: the router ended its link (%s)", sent[0], cond)
        if close:
            link.close()
        else:
            link.detach()
        link.free()  # proton-c keeps an ended link in the connection until it is freed

    # ------------------------------------------------------------ sending wills

    def publish(self, address, message, deadline):
        if self.conn is None or not self.conn.state & self.conn.LOCAL_ACTIVE:
            self.pending.append((address, message, deadline))
            return
        if self.session is None:
            self.session = self.conn.session()
            self.session.open()
        message.address = None
        message.user_id = b""  # blank: the router would refuse the client's user id on the keeper's connection
        if message.annotations and WILL_DELAY in message.annotations:  # waited for here: no one's business after
            message.annotations = dict((k, v) for k, v in message.annotations.items() if k != WILL_DELAY)
        self.names += 1
        sender = self.session.sender("will-%d" % self.names)
        sender.target.address = address
        sender.open()
        self.sending[sender] = (address, message, deadline, False)

    def on_sendable(self, event):
        held = self.sending.get(event.sender)
        if held and not held[3]:
            event.sender.send(held[1])
            self.sending[event.sender] = held[:3] + (True,)

    def on_settled(self, event):
        link = event.link
        held = self.sending.pop(link, None)
        if held is not None:
            state = event.delivery.remote_state
            level = logging.INFO if state == event.delivery.ACCEPTED else logging.WARNING
            LOG.log(level, "will for %s: %s", held[0], state)
            link.close()  # freed in ended(), when the router answers the detach

    def wait(self, name, address, message, due):
        """A will waits until ``due`` (a later will of the same link replaces it)."""
        key = (name, address)
        if key in self.delayed:
            LOG.warning("the waiting will for %s of link %r is replaced by a newer one", address, name)
        self.seq += 1
        self.delayed[key] = (message, due, self.seq)
        heapq.heappush(self.due_heap, (due, self.seq, key))
        self.compact()

    def compact(self):
        """Drop the heap entries of cancelled and replaced wills once they
        outnumber the waiting ones: the heap stays within twice max_wills."""
        if len(self.due_heap) > 2 * len(self.delayed) + 64:
            self.due_heap = [(due, seq, key) for key, (unused, due, seq) in self.delayed.items()]
            heapq.heapify(self.due_heap)

    def due(self):
        """Send the delayed wills whose delay has passed (nobody cancelled them)."""
        now = self.clock()
        while self.due_heap and self.due_heap[0][0] <= now:
            unused, seq, key = heapq.heappop(self.due_heap)
            held = self.delayed.get(key)
            if held is None or held[2] != seq:  # cancelled, or replaced by a newer will
                continue
            del self.delayed[key]
            LOG.info("the delay of the will for %s has passed: sending it", key[1])
            self.publish(key[1], held[0], now + self.SEND_TIMEOUT)

    def tick(self):
        """The delayed wills that are due, every TICK seconds (one timer for all)."""
        self.due()
        if self.container is not None:
            self.container.schedule(self.TICK, _Call(self.tick))

    def sweep(self):
        """Drop the wills not accepted by their deadline (an address nobody
        gives credit for), then again in SWEEP seconds."""
        now = self.clock()
        for link, (address, unused, deadline, unused_sent) in list(self.sending.items()):
            if deadline < now:
                LOG.warning("the will for %s is dropped: not accepted within %d s", address, self.SEND_TIMEOUT)
                del self.sending[link]
                link.close()  # freed in ended(), when the router answers the detach
        kept = [p for p in self.pending if p[2] >= now]
        if len(kept) < len(self.pending):
            LOG.warning("%d wills dropped: no connection within %d s", len(self.pending) - len(kept),
                        self.SEND_TIMEOUT)
        self.pending = kept
        if self.container is not None:
            self.container.schedule(self.SWEEP, _Call(self.sweep))


def _refuse(link, name, text):
    from proton import Condition
    link.condition = Condition(name, text)
    link.close()


def run(cfg):  # pragma: no cover - needs a router: tests/integration/test_mqtt_amqp_wills.py
    """Serve until SIGTERM."""
    from proton.reactor import Container
    Container(Keeper(cfg)).run()


def _stop(*unused):
    """SIGTERM: leave the reactor (its links end with the connection; the clients attach again)."""
    raise SystemExit(0)


def main(argv=None):
    import argparse
    import signal
    parser = argparse.ArgumentParser(prog="enmasse-mqtt-will-keeper",
                                     description="The wills of a standard space's AMQP clients.")
    parser.add_argument("--config", required=True, help="JSON: %s (required), %s" % (
        ", ".join(REQUIRED), ", ".join(sorted(DEFAULTS))))
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.config)
        if not os.access(cfg["password_file"], os.R_OK):
            raise ConfigError("password_file: %r cannot be read" % cfg["password_file"])
    except ConfigError as exc:
        sys.stderr.write("enmasse-mqtt-will-keeper: %s\n" % exc)
        return 2
    logging.basicConfig(level=getattr(logging, cfg["log_level"]), stream=sys.stderr,
                        format="%(levelname)s %(message)s")
    logging.getLogger("proton").setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, _stop)
    run(cfg)
    return 0
