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


def url(port, tls, host="127.0.0.1"):
    """The management URL: amqps:// with ``tls``, else amqp://."""
    return "%s://%s:%s" % ("amqps" if tls else "amqp", host, port)
