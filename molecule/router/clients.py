"""How the clients of molecule/router's verify (dataplane.py) reach a
standard space: its config file (DATAPLANE_CONFIG: each space's port and
credentials, the CA) and the connection arguments - amqps, trusting the
collection's CA and checking the router's name (the space listeners take TLS
only), SASL PLAIN."""

import json
import os

from proton import SSLDomain


def config():
    with open(os.environ["DATAPLANE_CONFIG"]) as f:
        return json.load(f)


def tls(cfg, ca=None):
    """The client TLS of the spaces (their listeners take TLS only): trust the
    collection's CA (cfg["ca"]; ``ca``: another one) and check the router's name."""
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(ca or cfg["ca"])
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME, ca or cfg["ca"])
    return domain


def url(router, space, cfg, user=None, password=None):
    s = cfg["spaces"][space]
    # a router is a host name (the space's port is the same on every router) or host:port
    return dict(url="amqps://%s" % router if ":" in router else "amqps://%s:%d" % (router, s["port"]),
                user=user or s["user"], password=password if password is not None else s["password"],
                allowed_mechs="PLAIN", sasl_enabled=True, ssl_domain=tls(cfg))


def auth_target(a, cfg):
    """The connection of ``dataplane.py auth``: the space's user (or
    --user/--password), --anonymous (SASL ANONYMOUS), --plain (plain TCP, no
    TLS), --ca (trust that CA instead of the collection's)."""
    target = url(a.router, a.space, cfg, user=a.user, password=a.password)
    if a.anonymous:
        target = dict(url=target["url"], allowed_mechs="ANONYMOUS", sasl_enabled=True,
                      ssl_domain=target["ssl_domain"])
    if a.plain:
        target = dict(target, url=target["url"].replace("amqps://", "amqp://", 1), allow_insecure_mechs=True)
        del target["ssl_domain"]
    if a.ca:
        target["ssl_domain"] = tls(cfg, a.ca)
    return target
