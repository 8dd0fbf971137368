# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The will keeper: the last wills of a standard space's AMQP clients
(issue 21; docs/mqtt-design.md "Wills of AMQP clients").

An AMQP client of space S leaves a will for address X by attaching a
sender to ``$will/X`` on the space's listener and sending one message
there, the will. The router admits that link exactly when the client may
send to X (the vhost's lists, ``standard.entities.terminus_names``; the
auth service's address-authz, ``auth.server.with_wills``) and routes it
(linkRoute ``enmasse/S/mqtt-will-linkroute``, prefix ``S/$will``) to a
keeper connected to the space's will listener ``enmasse/S/mqtt-will``
(role route-container; the space's MQTT service user). The keeper:

* accepts the will; a later message on the same link replaces it;
* when the link ends with an error (the client's connection is lost: the
  router says ``qd:routed-link-lost``; the client detached it with an
  error) sends the will to ``S/X`` on its own connection and forgets it;
* when the client detaches the link cleanly (closed, no error) forgets it:
  the client left on purpose, as an MQTT DISCONNECT.

A keeper's own end (its process, its router) ends every will link it held
with an error at the client, which is alive: it attaches again and a
keeper of the space gets the will anew. Wills live in the keeper's memory
only: no will is sent for a client that did not go away.

The program needs python-qpid-proton (imported by ``run``); the rest is
pure, for the unit tests. ``enmasse-mqtt-will-keeper --config <file.json>``
(roles/mqtt_gateway/files) runs ``main``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
            "max_wills": 100000, "log_level": "INFO"}
LOST = "qd:routed-link-lost"


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
    if not isinstance(cfg["max_wills"], int) or isinstance(cfg["max_wills"], bool) or cfg["max_wills"] < 1:
        raise ConfigError("max_wills: %r must be a whole number of at least 1" % (cfg["max_wills"],))
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


def read_password(path):
    with open(path) as f:
        return f.read().strip()


class Keeper(_Handler):  # pragma: no cover - needs proton and a router: tests/integration/test_mqtt_amqp_wills.py
    """The keeper's proton handler: every will link of the space, in memory."""

    def __init__(self, cfg):
        super(Keeper, self).__init__(prefetch=10, auto_accept=False, auto_settle=True)
        self.cfg = cfg
        self.conn = None
        self.wills = {}  # receiver link -> (will address, message or None)
        self.sending = {}  # sender link -> (address, message; None once sent)

    def on_start(self, event):
        from proton import SSLDomain
        from proton.reactor import Backoff
        cfg = self.cfg
        event.container.container_id = cfg["container_id"]
        domain = None
        if cfg["router_tls"]:
            domain = SSLDomain(SSLDomain.MODE_CLIENT)
            domain.set_trusted_ca_db(cfg["router_ca_file"])
            domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
        urls = [("amqps://" if cfg["router_tls"] else "amqp://") + r for r in cfg["routers"]]
        self.conn = event.container.connect(
            urls=urls, user=cfg["user"], password=read_password(cfg["password_file"]),
            allowed_mechs="PLAIN", ssl_domain=domain, reconnect=Backoff(),
            virtual_host=cfg["router_server_name"] or None, sasl_enabled=True,
            allow_insecure_mechs=not cfg["router_tls"])

    def on_connection_opened(self, event):
        LOG.info("connected to a router of space %s as %s", self.cfg["space"], self.cfg["container_id"])

    def on_link_opening(self, event):
        link = event.link
        if not link.is_receiver:
            return
        address = will_address(self.cfg["space"], link.remote_target.address)
        if address is None:
            LOG.warning("refused a link to %r: not a will of space %s", link.remote_target.address,
                        self.cfg["space"])
            _refuse(link, "amqp:not-found", "not a will address of this space")
            return
        if len(self.wills) >= self.cfg["max_wills"]:
            LOG.warning("refused the will for %s: %d wills held (max_wills)", address, len(self.wills))
            _refuse(link, "amqp:resource-limit-exceeded", "too many wills")
            return
        link.source.address = link.remote_source.address
        link.target.address = link.remote_target.address
        self.wills[link] = (address, None)

    def on_message(self, event):
        link = event.link
        if link in self.wills:
            self.wills[link] = (self.wills[link][0], event.message)
            self.accept(event.delivery)
        else:
            self.reject(event.delivery)

    def on_link_remote_close(self, event):
        link = event.link
        held = self.wills.pop(link, None)
        if held is not None:
            cond = link.remote_condition
            address, message = held
            if message is not None and publishes(cond.name if cond else None):
                LOG.info("client gone (%s): sending its will to %s", cond.name, address)
                self.publish(event.container, address, message)
        if link in self.sending:
            address, unused = self.sending.pop(link)
            LOG.warning("the will for %s is lost: the router closed its link (%s)", address,
                        link.remote_condition)
        link.close()

    def on_link_error(self, event):
        """A link's end with an error is a client's end (on_link_remote_close): not the
        connection's, which proton's default would close with every other will on it."""

    def publish(self, container, address, message):
        sender = container.create_sender(self.conn, address)
        message.address = None
        self.sending[sender] = (address, message)

    def on_sendable(self, event):
        held = self.sending.get(event.sender)
        if held and held[1] is not None:
            event.sender.send(held[1])
            self.sending[event.sender] = (held[0], None)

    def on_settled(self, event):
        link = event.link
        address = self.sending.pop(link, (None, None))[0]
        if address is not None:
            state = event.delivery.remote_state
            level = logging.INFO if state == event.delivery.ACCEPTED else logging.WARNING
            LOG.log(level, "will for %s: %s", address, state)
            link.close()

    def on_disconnected(self, event):
        if self.wills or self.sending:
            LOG.warning("connection lost: %d will links ended with it (their clients attach again), "
                        "%d wills not sent", len(self.wills), len(self.sending))
        self.wills.clear()
        self.sending.clear()


def _refuse(link, name, text):  # pragma: no cover - with Keeper
    from proton import Condition
    link.condition = Condition(name, text)
    link.close()


def run(cfg):  # pragma: no cover - with Keeper
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
