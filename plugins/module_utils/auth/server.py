# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The auth service: the SASL server that qdrouterd's authServicePlugin
relays its clients' authentication to (qdrouterd 1.19, src/remote_sasl.c).

One router connection per client connection, always in this order:

1. the router sends the SASL protocol header; the service answers with the
   SASL header and ``sasl-mechanisms`` (PLAIN). The router relays that list
   to its client.
2. the router relays the client's ``sasl-init``: mechanism, initial
   response, and as hostname the plugin's ``realm`` (the address space).
   The service checks ``realm, username, password`` with its backend and
   answers ``sasl-outcome`` ok (0), auth (1, wrong or unknown: the two are
   not told apart) or sys-temp (4, the backend cannot answer). ANONYMOUS
   and every other mechanism are refused with auth.
3. after ok, the AMQP header both ways, then the router's ``open`` (its
   hostname is the plugin's ``host``, desired capability ``ADDRESS-AUTHZ``).
   The service answers ``open`` with properties ``authenticated-identity``
   ``{sub, preferred_username}`` (the router takes ``sub`` as the
   connection's user), ``groups``, and, when ADDRESS-AUTHZ was desired,
   offered capability ADDRESS-AUTHZ and ``address-authz`` (address pattern
   -> array of ``send``/``recv``, the connection's allowed targets and
   sources).
4. the router closes the connection as soon as it has read the open; the
   service answers a ``close`` with a ``close`` and drops the socket.

No password, no SASL response is ever logged. Pure standard library
(asyncio); the role copies this file with codec.py, backends.py,
keycloak_backend.py and metrics.py onto the host, where ``main()`` is the program."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import asyncio
import concurrent.futures
import getpass
import json
import logging
import os
import signal
import ssl
import sys

from . import backends
from . import codec
from . import keycloak_backend
from . import mesh
from . import metrics
from .authz import router_authz

LOG = logging.getLogger("enmasse-auth-service")

CAPABILITY_ADDRESS_AUTHZ = "ADDRESS-AUTHZ"
MECHANISMS = ("PLAIN",)
MAX_FRAME_SIZE = 65536
DEFAULTS = {
    "listen_host": "127.0.0.1",
    "listen_port": 5680,
    "users_dir": "/etc/enmasse-auth-service/users",
    "default_realm": "",
    "container_id": "enmasse-auth-service",
    "handshake_timeout": 30,
    "workers": 4,
    "tls_cert": "",
    "tls_key": "",
    "tls_ca": "",
    "log_level": "INFO",
    # who the users are: "users_file" (users_dir) or "keycloak" (a realm per space)
    "backend": "users_file",
    "keycloak_url": "",
    "keycloak_ca": "",
    "keycloak_client_id": keycloak_backend.CLIENT_ID,
    "keycloak_timeout": 5,
    "cache_ttl": 30,
    # the metrics endpoint (metrics.py): off with port 0; HTTPS with tls_cert, basic auth
    "metrics_host": "127.0.0.1",
    "metrics_port": 0,
    "metrics_password_file": "",
}
DEFAULTS.update(mesh.DEFAULTS)   # the mesh probe (mesh.py), exported on the metrics endpoint
BACKENDS = ("users_file", "keycloak")


class ProtocolError(Exception):
    """The peer broke the protocol; the connection is dropped."""


def parse_plain(response):
    """``(authzid, authcid, password)`` of a SASL PLAIN message (RFC 4616),
    ProtocolError when it is not one."""
    if not isinstance(response, (bytes, bytearray)):
        raise ProtocolError("PLAIN needs an initial response")
    parts = bytes(response).split(b"\0")
    if len(parts) != 3:
        raise ProtocolError("a PLAIN response has 3 NUL-separated fields, this one has %d" % len(parts))
    try:
        return tuple(p.decode("utf-8") for p in parts)
    except UnicodeDecodeError:
        raise ProtocolError("a PLAIN response must be UTF-8")


EVERY_ADDRESS = {"*": ["recv", "send"]}


def open_properties(identity, desired_capabilities):
    """``(properties, offered capabilities)`` of the service's open frame for
    ``identity`` (an Identity)."""
    props = {
        "authenticated-identity": {"sub": identity.username, "preferred_username": identity.username},
        "groups": list(identity.groups),
    }
    offered = None
    if CAPABILITY_ADDRESS_AUTHZ in desired_capabilities:
        offered = [CAPABILITY_ADDRESS_AUTHZ]
        # every address of the space: no address-authz, so that the router applies the space's
        # vhost policy (its declared addresses); qdrouterd 1.19 uses address-authz instead of it
        if not set(EVERY_ADDRESS["*"]) <= set(identity.address_authz.get("*", ())):
            props["address-authz"] = dict(
                (pattern, codec.Array("string", list(perms)))
                for pattern, perms in sorted(router_authz(identity.address_authz).items()))
    return props, offered


async def read_frame(reader, max_size=MAX_FRAME_SIZE):
    """``(type, channel, body)`` of the next frame (extended header skipped)."""
    header = await reader.readexactly(8)
    try:
        size, doff, ftype, channel = codec.parse_frame_header(header)
    except codec.DecodeError as exc:
        raise ProtocolError(str(exc))
    if size > max_size:
        raise ProtocolError("frame of %d bytes is larger than %d" % (size, max_size))
    rest = await reader.readexactly(size - 8)
    return ftype, channel, rest[doff * 4 - 8:]


class AuthServer(object):
    """The service: ``backend.check(realm, username, password)`` decides.

    ``default_realm``: the realm when the router sends no sasl-init hostname
    (an authServicePlugin without ``realm``); empty = refuse such clients."""

    def __init__(self, backend, default_realm="", container_id=DEFAULTS["container_id"],
                 handshake_timeout=DEFAULTS["handshake_timeout"], workers=DEFAULTS["workers"]):
        self.backend = backend
        self.default_realm = default_realm or ""
        self.container_id = container_id
        self.handshake_timeout = handshake_timeout
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="check")
        self.server = None
        self.connections = set()
        self.metrics = metrics.Metrics()
        self.metrics_server = None

    # -- one connection --------------------------------------------------
    async def handle(self, reader, writer):
        task = asyncio.current_task()
        self.connections.add(task)
        self.metrics.connections_total += 1
        self.metrics.open_connections = len(self.connections)
        try:
            await self._handle(reader, writer)
        finally:
            self.connections.discard(task)
            self.metrics.open_connections = len(self.connections)

    async def _handle(self, reader, writer):
        peer = writer.get_extra_info("peername")
        peer = "%s:%s" % tuple(peer[:2]) if isinstance(peer, tuple) else str(peer)
        try:
            await asyncio.wait_for(self._converse(reader, writer, peer), self.handshake_timeout)
        except asyncio.TimeoutError:
            LOG.warning("%s: no complete exchange within %ss, dropped", peer, self.handshake_timeout)
        except (asyncio.IncompleteReadError, ConnectionError):
            LOG.debug("%s: disconnected", peer)
        except (ProtocolError, codec.DecodeError) as exc:
            LOG.warning("%s: protocol error: %s", peer, exc)
        except Exception:  # one broken connection must not stop the service
            LOG.exception("%s: unexpected error", peer)
        finally:
            try:
                writer.close()
                await writer.wait_closed()
            except (ConnectionError, OSError, ssl.SSLError):
                pass

    async def _converse(self, reader, writer, peer):
        header = await reader.readexactly(8)
        if header != codec.SASL_HEADER:
            # RFC: answer with the header this server speaks, then close
            writer.write(codec.SASL_HEADER)
            await writer.drain()
            raise ProtocolError("protocol header %r: this service requires SASL (%r)" % (header, codec.SASL_HEADER))
        writer.write(codec.SASL_HEADER + codec.sasl_mechanisms(MECHANISMS))
        await writer.drain()
        identity = await self._sasl(reader, writer, peer)
        if identity is None:
            return
        header = await reader.readexactly(8)
        if header != codec.AMQP_HEADER:
            writer.write(codec.AMQP_HEADER)
            await writer.drain()
            raise ProtocolError("protocol header %r after SASL, expected %r" % (header, codec.AMQP_HEADER))
        writer.write(codec.AMQP_HEADER)
        await writer.drain()
        await self._amqp(reader, writer, identity)

    async def _sasl(self, reader, writer, peer):
        """The SASL exchange; the Identity on success, None after a refusal
        (each outcome counted, metrics.py, before the router learns it)."""
        code, fields = await self._next_sasl(reader)
        if code != codec.SASL_INIT:
            raise ProtocolError("expected sasl-init, got %s" % codec.PERFORMATIVE_NAMES.get(code, code))
        init = codec.as_dict(code, fields)
        mechanism = str(init["mechanism"] or "")
        realm = init["hostname"] if isinstance(init["hostname"], str) and init["hostname"] else self.default_realm
        if mechanism not in MECHANISMS:
            LOG.info("%s: realm %r: mechanism %r refused (offered: %s)", peer, realm, mechanism, ", ".join(MECHANISMS))
            return await self._outcome(writer, codec.SASL_AUTH, realm, metrics.REFUSED)
        response = init["initial_response"]
        if response is None:
            # PLAIN without an initial response: an empty challenge asks for it
            writer.write(codec.frame(codec.FRAME_SASL, codec.performative(codec.SASL_CHALLENGE, [b""])))
            await writer.drain()
            code, fields = await self._next_sasl(reader)
            if code != codec.SASL_RESPONSE:
                raise ProtocolError("expected sasl-response, got %s" % codec.PERFORMATIVE_NAMES.get(code, code))
            response = fields[0]
        try:
            authzid, username, password = parse_plain(response)
        except ProtocolError as exc:
            LOG.info("%s: realm %r: malformed PLAIN response refused: %s", peer, realm, exc)
            return await self._outcome(writer, codec.SASL_AUTH, realm, metrics.REFUSED)
        if authzid and authzid != username:
            LOG.info("%s: realm %r user %r: authorization identity %r refused (no proxy users)",
                     peer, realm, username, authzid)
            return await self._outcome(writer, codec.SASL_AUTH, realm, metrics.REFUSED)
        if not realm:
            LOG.info("%s: user %r refused: no realm (the authServicePlugin has no realm and no default_realm is set)",
                     peer, username)
            return await self._outcome(writer, codec.SASL_AUTH, realm, metrics.REFUSED)
        loop = asyncio.get_running_loop()
        try:
            identity, outcome = await loop.run_in_executor(self.executor, backends.authenticate, self.backend,
                                                           realm, username, password)
        except backends.BackendError as exc:
            LOG.error("%s: realm %r user %r: the backend cannot answer: %s", peer, realm, username, exc)
            return await self._outcome(writer, codec.SASL_SYS_TEMP, realm, metrics.BACKEND_ERROR)
        if identity is None:
            LOG.info("%s: realm %r user %r: authentication failed (%s)", peer, realm, username, outcome)
            return await self._outcome(writer, codec.SASL_AUTH, realm, outcome)
        LOG.info("%s: realm %r user %r: authenticated as %r", peer, realm, username, identity.username)
        await self._outcome(writer, codec.SASL_OK, realm, outcome)
        return identity

    async def _next_sasl(self, reader):
        ftype, unused, body = await read_frame(reader)
        if ftype != codec.FRAME_SASL:
            raise ProtocolError("frame type %d during SASL" % ftype)
        return codec.parse_body(body)

    async def _outcome(self, writer, code, realm, outcome):
        self.metrics.authentication(realm, outcome)
        writer.write(codec.sasl_outcome(code))
        await writer.drain()
        return None

    async def _amqp(self, reader, writer, identity):
        """The open exchange, then wait for the router's close."""
        opened = False
        while True:
            ftype, channel, body = await read_frame(reader)
            if ftype != codec.FRAME_AMQP:
                raise ProtocolError("frame type %d after SASL" % ftype)
            code, fields = codec.parse_body(body)
            if code is None:
                continue  # empty frame: heartbeat
            if code == codec.OPEN and not opened:
                peer_open = codec.as_dict(code, fields)
                props, offered = open_properties(identity, codec.symbols(peer_open["desired_capabilities"]))
                writer.write(codec.open_frame(self.container_id, max_frame_size=MAX_FRAME_SIZE, channel_max=0,
                                              offered_capabilities=offered, properties=props))
                await writer.drain()
                opened = True
            elif code == codec.CLOSE:
                writer.write(codec.close_frame())
                await writer.drain()
                return
            else:
                writer.write(codec.close_frame("amqp:not-implemented",
                                               "this is an authentication service: open and close only"))
                await writer.drain()
                raise ProtocolError("unexpected %s on channel %d" % (codec.PERFORMATIVE_NAMES.get(code, code), channel))

    # -- the listener ----------------------------------------------------
    async def start(self, host, port, ssl_context=None):
        self.server = await asyncio.start_server(self.handle, host, port, ssl=ssl_context)
        return self.server

    def ports(self):
        return [s.getsockname()[1] for s in self.server.sockets]

    async def stop(self):
        """Stop listening, end the exchanges under way, stop the workers."""
        if self.server is not None:
            self.server.close()
        for task in list(self.connections):
            task.cancel()
        if self.connections:
            await asyncio.gather(*self.connections, return_exceptions=True)
        if self.server is not None:
            await self.server.wait_closed()
        self.executor.shutdown(wait=False)


# ------------------------------------------------------------------ program

def load_config(path=None, overrides=None):
    """DEFAULTS, then the JSON file ``path``, then the non-None ``overrides``;
    ValueError naming the key on a bad value."""
    config = dict(DEFAULTS)
    if path:
        with open(path, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("%s: must be a JSON object" % path)
        unknown = sorted(set(data) - set(DEFAULTS))
        if unknown:
            raise ValueError("%s: unknown keys %s (known: %s)" % (path, ", ".join(unknown), ", ".join(sorted(DEFAULTS))))
        config.update(data)
    for key, value in (overrides or {}).items():
        if value is not None:
            config[key] = value
    for key in ("listen_port", "handshake_timeout", "workers"):
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "listen_port" else 1):
            raise ValueError("%s: %r must be an integer%s" % (key, value, " >= 0" if key == "listen_port" else " >= 1"))
    if config["listen_port"] > 65535:
        raise ValueError("listen_port: %r must be at most 65535" % config["listen_port"])
    for key in ("listen_host", "users_dir", "default_realm", "container_id", "tls_cert", "tls_key", "tls_ca", "log_level"):
        if not isinstance(config[key], str):
            raise ValueError("%s: %r must be a string" % (key, config[key]))
    if not config["users_dir"] or not config["container_id"]:
        raise ValueError("users_dir and container_id must not be empty")
    if bool(config["tls_cert"]) != bool(config["tls_key"]):
        raise ValueError("tls_cert and tls_key go together (got tls_cert=%r, tls_key=%r)"
                         % (config["tls_cert"], config["tls_key"]))
    if config["tls_ca"] and not config["tls_cert"]:
        raise ValueError("tls_ca (client certificates) needs tls_cert and tls_key")
    if config["log_level"].upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError("log_level: %r must be DEBUG, INFO, WARNING or ERROR" % config["log_level"])
    check_backend_config(config)
    check_metrics_config(config)
    mesh.check_config(config)
    return config


def check_metrics_config(config):
    """ValueError naming the key when the metrics endpoint settings do not go together."""
    port = config["metrics_port"]
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError("metrics_port: %r must be an integer 0-65535 (0 = no metrics endpoint)" % (port,))
    for key in ("metrics_host", "metrics_password_file"):
        if not isinstance(config[key], str):
            raise ValueError("%s: %r must be a string" % (key, config[key]))
    if port and not (config["tls_cert"] and config["metrics_password_file"]):
        raise ValueError("metrics_port: %d needs tls_cert and metrics_password_file (the endpoint is HTTPS "
                         "with basic auth only)" % port)


def check_backend_config(config):
    """ValueError naming the key when the backend settings do not go together."""
    if config["backend"] not in BACKENDS:
        raise ValueError("backend: %r must be one of %s" % (config["backend"], ", ".join(BACKENDS)))
    for key in ("keycloak_url", "keycloak_ca", "keycloak_client_id"):
        if not isinstance(config[key], str):
            raise ValueError("%s: %r must be a string" % (key, config[key]))
    for key, low in (("keycloak_timeout", 0.1), ("cache_ttl", 0)):
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or value > 3600:
            raise ValueError("%s: %r must be a number of seconds in %s..3600" % (key, value, low))
    if config["backend"] == "keycloak":
        if not config["keycloak_client_id"]:
            raise ValueError("keycloak_client_id must not be empty")
        keycloak_backend.check_url(config["keycloak_url"], config["keycloak_ca"])


def make_backend(config, previous=None):
    """The backend ``config`` names (the Keycloak CA file is read here). A
    Keycloak backend keeps the cache of ``previous`` when the URL, client and
    cache lifetime are the same (a SIGHUP does not forget who logged in)."""
    if config["backend"] == "keycloak":
        backend = keycloak_backend.KeycloakBackend(
            config["keycloak_url"], client_id=config["keycloak_client_id"], ca_file=config["keycloak_ca"],
            timeout=config["keycloak_timeout"], cache_ttl=config["cache_ttl"], log=LOG.info)
        previous = getattr(previous, "main", previous)
        if isinstance(previous, keycloak_backend.KeycloakBackend) and \
                (previous.url, previous.client_id, previous.cache.ttl) == (backend.url, backend.client_id, backend.cache.ttl):
            backend.cache = previous.cache
        # the MQTT gateways' service realms (<space>.mqtt) stay users files
        return backends.ServiceRealms(backend, backends.UsersFileBackend(config["users_dir"], log=LOG.debug))
    return backends.UsersFileBackend(config["users_dir"], log=LOG.debug)


def describe_backend(config):
    if config["backend"] == "keycloak":
        return "users in Keycloak %s (cache %ss)" % (config["keycloak_url"], config["cache_ttl"])
    return "users in %s" % config["users_dir"]


def ssl_context(config, client_ca=True):
    """The server TLS context of ``config``, None without tls_cert
    (``client_ca`` False: no client certificates asked, the metrics endpoint's)."""
    if not config["tls_cert"]:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config["tls_cert"], config["tls_key"])
    if config["tls_ca"] and client_ca:
        context.load_verify_locations(config["tls_ca"])
        context.verify_mode = ssl.CERT_REQUIRED
    return context


class StartError(Exception):
    """The service cannot start for a reason other than its port."""


async def serve(config, config_path=None, overrides=None, ready=None):
    """Run until SIGTERM/SIGINT. SIGHUP re-reads the config file (users_dir,
    default_realm, log_level, handshake_timeout take effect; the command
    line still wins),
    forgets the cached users files and loads the TLS certificate and key
    again from their paths (renewed certificates, no restart)."""
    try:
        backend = make_backend(config)
        context = ssl_context(config)
    except (OSError, ssl.SSLError) as exc:
        # a TLS or CA file the service cannot read: say so, not "cannot listen"
        raise StartError("cannot read the configuration's files: %s" % exc)
    server = AuthServer(backend, config["default_realm"], config["container_id"],
                        config["handshake_timeout"], config["workers"])
    await server.start(config["listen_host"], config["listen_port"], context)
    LOG.info("listening on %s:%s%s, %s", config["listen_host"], ",".join(str(p) for p in server.ports()),
             " (TLS)" if config["tls_cert"] else "", describe_backend(config))
    server.metrics_server, metrics_context = await start_metrics(config, server)
    probe = mesh.start_probe(config)
    if probe is not None:
        server.metrics.sources.append(probe)
    if ready is not None:
        ready(server)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def reload():
        try:
            fresh = load_config(config_path, overrides) if config_path else config
            if context is not None:
                context.load_cert_chain(config["tls_cert"], config["tls_key"])
                if config["tls_ca"]:
                    context.load_verify_locations(config["tls_ca"])
            if server.metrics_server is not None:
                metrics_context.load_cert_chain(config["tls_cert"], config["tls_key"])
                server.metrics_server.credentials = metrics.load_password_file(fresh["metrics_password_file"])
            backend = make_backend(fresh, server.backend)   # the Keycloak CA file read again
        except (OSError, ValueError, ssl.SSLError) as exc:
            LOG.error("reload: %s; keeping the running configuration", exc)
            return
        for key in ("listen_host", "listen_port", "tls_cert", "tls_key", "tls_ca", "workers", "container_id",
                    "metrics_host", "metrics_port") + tuple(mesh.DEFAULTS):
            if fresh[key] != config[key]:
                LOG.warning("reload: %s changed; it takes effect on restart", key)
        server.backend = backend
        server.default_realm = fresh["default_realm"]
        server.handshake_timeout = fresh["handshake_timeout"]
        logging.getLogger().setLevel(fresh["log_level"].upper())
        LOG.info("reloaded: %s", describe_backend(fresh))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload)
    await stop.wait()
    LOG.info("stopping")
    if probe is not None:
        probe.stop()
    if server.metrics_server is not None:
        await server.metrics_server.stop()
    await server.stop()


async def start_metrics(config, server):
    """``(MetricsServer, its TLS context)`` listening when metrics_port is set, else ``(None, None)``."""
    if not config["metrics_port"]:
        return None, None
    try:
        credentials = metrics.load_password_file(config["metrics_password_file"])
        context = ssl_context(config, client_ca=False)
    except (OSError, ValueError, ssl.SSLError) as exc:
        await server.stop()
        raise StartError("metrics endpoint: %s" % exc)
    metrics_server = metrics.MetricsServer(server.metrics, credentials)
    try:
        await metrics_server.start(config["metrics_host"], config["metrics_port"], context)
    except OSError as exc:
        await server.stop()
        raise StartError("metrics endpoint: cannot listen on %s:%s: %s"
                         % (config["metrics_host"], config["metrics_port"], exc))
    LOG.info("metrics on https://%s:%s/metrics (basic auth)", config["metrics_host"],
             ",".join(str(p) for p in metrics_server.ports()))
    return metrics_server, context


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="enmasse-auth-service",
        description="SASL PLAIN authentication service for qdrouterd's authServicePlugin "
                    "(one users file per realm = address space).")
    parser.add_argument("--config", help="JSON configuration file (keys: %s)" % ", ".join(sorted(DEFAULTS)))
    parser.add_argument("--host", dest="listen_host", help="address to listen on (default %s)" % DEFAULTS["listen_host"])
    parser.add_argument("--port", dest="listen_port", type=int, help="port (default %d; 0 = any)" % DEFAULTS["listen_port"])
    parser.add_argument("--users-dir", dest="users_dir", help="directory of <realm>.json users files")
    parser.add_argument("--default-realm", dest="default_realm", help="realm when the router sends none")
    parser.add_argument("--log-level", dest="log_level", help="DEBUG, INFO, WARNING or ERROR")
    parser.add_argument("--tls-cert", dest="tls_cert", help="PEM certificate (chain): serve TLS")
    parser.add_argument("--tls-key", dest="tls_key", help="PEM private key of --tls-cert")
    parser.add_argument("--tls-ca", dest="tls_ca", help="PEM CA bundle: require client certificates signed by it")
    parser.add_argument("--backend", dest="backend", choices=BACKENDS, help="who the users are (default users_file)")
    parser.add_argument("--keycloak-url", dest="keycloak_url", help="Keycloak base URL (backend keycloak)")
    parser.add_argument("--keycloak-ca", dest="keycloak_ca", help="PEM CA bundle verifying an https Keycloak")
    parser.add_argument("--keycloak-client-id", dest="keycloak_client_id",
                        help="the realms' public client (default %s)" % DEFAULTS["keycloak_client_id"])
    parser.add_argument("--keycloak-timeout", dest="keycloak_timeout", type=float,
                        help="seconds per Keycloak request (default %s)" % DEFAULTS["keycloak_timeout"])
    parser.add_argument("--cache-ttl", dest="cache_ttl", type=float,
                        help="seconds a successful check is remembered (default %s; 0 = off)" % DEFAULTS["cache_ttl"])
    parser.add_argument("--metrics-host", dest="metrics_host", help="address of the metrics endpoint")
    parser.add_argument("--metrics-port", dest="metrics_port", type=int, help="its port (default 0: no endpoint)")
    parser.add_argument("--metrics-password-file", dest="metrics_password_file",
                        help="JSON {username, salt, sha512}: the scraper's basic auth")
    for flag, dest, kind, text in mesh.ARGS:
        parser.add_argument(flag, dest=dest, type=kind, help=text)
    parser.add_argument("--workers", dest="workers", type=int, help="password checks at once (default %d)" % DEFAULTS["workers"])
    parser.add_argument("--hash-password", action="store_true",
                        help="read a password on stdin (or the terminal), print its users-file hash and exit")
    parser.add_argument("--iterations", type=int, default=backends.DEFAULT_ITERATIONS,
                        help="PBKDF2 iterations for --hash-password (default %d)" % backends.DEFAULT_ITERATIONS)
    args = parser.parse_args(argv)
    if args.hash_password:
        password = getpass.getpass("password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
        try:
            sys.stdout.write(backends.hash_password(password, iterations=args.iterations) + "\n")
        except ValueError as exc:
            parser.error(str(exc))
        return 0
    overrides = dict((k, getattr(args, k)) for k in ("listen_host", "listen_port", "users_dir", "default_realm", "log_level",
                                                     "tls_cert", "tls_key", "tls_ca", "workers", "backend",
                                                     "keycloak_url", "keycloak_ca", "keycloak_client_id",
                                                     "keycloak_timeout", "cache_ttl", "metrics_host", "metrics_port",
                                                     "metrics_password_file") + tuple(mesh.DEFAULTS))
    try:
        config = load_config(args.config, overrides)
    except (OSError, ValueError) as exc:
        parser.error("configuration: %s" % exc)
    logging.basicConfig(level=config["log_level"].upper(), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    if config["backend"] == "users_file" and not os.path.isdir(config["users_dir"]):
        LOG.warning("users_dir %s does not exist (yet): every client is refused until it does", config["users_dir"])
    try:
        asyncio.run(serve(config, args.config, overrides))
    except StartError as exc:
        LOG.error("%s", exc)
        return 1
    except OSError as exc:
        LOG.error("cannot listen on %s:%s: %s", config["listen_host"], config["listen_port"], exc)
        return 1
    return 0
