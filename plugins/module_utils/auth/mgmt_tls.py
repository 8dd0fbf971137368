# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a local client reaches a router's management listener.

The router role's management listener (127.0.0.1 only) requires TLS and a
client certificate of the router management CA (SASL EXTERNAL; its own CA,
not the mesh CA): a local process manages the router only if it can read
such a key (root, or a service given its own certificate). One rule for the modules
(``router.client`` through the standard infrastructure file), the router
role's qdmanage and the auth service's mesh probe.

``tls``: ``{"cert_file", "key_file", "ca_file"}``, absolute paths on the
host; empty or None = a plain listener (routers of other deployments).
Standard library only: the auth service carries a copy of this file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

KEYS = ("cert_file", "key_file", "ca_file")
MECHANISM = "EXTERNAL"
# root's client certificate as the router role puts it on a router host
# (router_config_dir /etc/qpid-dispatch)
ROUTER_ROLE_FILES = {"cert_file": "/etc/qpid-dispatch/tls/management-client.pem",
                     "key_file": "/etc/qpid-dispatch/tls/management-client.key",
                     "ca_file": "/etc/qpid-dispatch/tls/management-ca.pem"}


def errors(field, tls):
    """What is wrong with ``tls`` (a list of messages naming ``field``)."""
    if tls in (None, {}):
        return []
    if not isinstance(tls, dict):
        return ["%s: %r must be a mapping with %s (or empty for a plain listener)" % (field, tls, ", ".join(KEYS))]
    out = ["%s: unknown key %s (known: %s)" % (field, k, ", ".join(KEYS)) for k in sorted(set(tls) - set(KEYS))]
    for k in KEYS:
        value = tls.get(k)
        if not isinstance(value, str) or not value.startswith("/"):
            out.append("%s.%s: %r must be an absolute path on the host (the client certificate of the management "
                       "CA, its key and that CA)" % (field, k, value))
    return out


def url_errors(field, url, tls):
    """The URL's scheme must say what ``tls`` says: amqps:// with a client
    certificate, amqp:// without (proton uses TLS for amqps:// only)."""
    if not isinstance(url, str):
        return []
    if tls and not url.startswith("amqps://"):
        return ["%s: %r must be amqps:// with a client certificate (management_tls)" % (field, url)]
    if not tls and url.startswith("amqps://"):
        return ["%s: %r is amqps:// but management_tls names no client certificate" % (field, url)]
    return []


def upgraded(url, exists):
    """For an ``amqp://`` URL of a local listener written before the router
    role required TLS there: ``(amqps URL, ROUTER_ROLE_FILES)`` when those
    files exist (``exists(path)``), else None. A router the role restarted
    with the new listener is reached by a keeper whose infrastructure file
    the standard play has not rewritten yet."""
    prefix = "amqp://127.0.0.1:"
    if not isinstance(url, str) or not url.startswith(prefix) or not url[len(prefix):].isdigit():
        return None
    if not all(exists(p) for p in ROUTER_ROLE_FILES.values()):
        return None
    return "amqps://127.0.0.1:" + url[len(prefix):], dict(ROUTER_ROLE_FILES)


def ssl_domain(proton, tls):
    """A proton client SSLDomain presenting ``tls``'s certificate and
    trusting its CA only; None for no ``tls``. The peer name is not
    checked: the listener is on 127.0.0.1, which the certificate need not
    name; the CA still has to have signed it."""
    if not tls:
        return None
    domain = proton.SSLDomain(proton.SSLDomain.MODE_CLIENT)
    domain.set_credentials(tls["cert_file"], tls["key_file"], None)
    domain.set_trusted_ca_db(tls["ca_file"])
    domain.set_peer_authentication(proton.SSLDomain.VERIFY_PEER)
    return domain
