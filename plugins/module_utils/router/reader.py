# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The live router entities the collection owns (name starts with
``enmasse/``), read over one management session from every router of a set
at once, normalised to the attributes the collection sets; and, apart, their
status (autoLink/linkRoute ``operStatus``, connector ``connectionStatus``).

Entities are ``{router_id: {name: {"type": kind, **attributes}}}``; a kind is
a short name (``listener``, ``connector``, ``authServicePlugin``, ``vhost``,
``address``, ``autoLink``, ``linkRoute``) mapped once, here, to the full
qdrouterd 1.19 type name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError
from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import QDR, RouterManagementError

OWNED_PREFIX = "enmasse/"
# kind -> full entity type (qdrouterd 1.19)
KINDS = {
    "vhost": QDR + ".vhost",
    "authServicePlugin": QDR + ".authServicePlugin",
    "connector": QDR + ".connector",
    "listener": QDR + ".listener",
    "address": QDR + ".router.config.address",
    "linkRoute": QDR + ".router.config.linkRoute",
    "autoLink": QDR + ".router.config.autoLink",
}
KIND_OF_TYPE = dict((v, k) for k, v in KINDS.items())
# the attributes the collection sets, each with the router's default (from
# qdrouterd 1.19's qdrouter.json; None: no default). A live value equal to
# the default is dropped like an unset one, so defaults never show as drift.
ATTRIBUTES = {
    "vhost": {"hostname": None, "maxConnections": 65535, "maxConnectionsPerUser": 65535,
              "maxConnectionsPerHost": 65535, "allowUnknownUser": False, "groups": None},
    "authServicePlugin": {"host": "", "port": "amqp", "realm": None, "sslProfile": None},
    "connector": {"host": "127.0.0.1", "port": "amqp", "role": "normal", "saslMechanisms": None,
                  "saslUsername": None, "saslPassword": None, "sslProfile": None, "verifyHostname": True,
                  "idleTimeoutSeconds": 16, "maxFrameSize": 16384, "linkCapacity": None},
    "listener": {"host": "", "port": "amqp", "role": "normal", "multiTenant": False, "policyVhost": None,
                 "authenticatePeer": False, "saslMechanisms": None, "saslPlugin": None, "sslProfile": None,
                 "requireSsl": False, "idleTimeoutSeconds": 16, "maxFrameSize": 16384, "linkCapacity": None},
    "address": {"prefix": None, "pattern": None, "distribution": "balanced", "waypoint": False,
                "ingressPhase": 0, "egressPhase": 0, "priority": -1},
    "linkRoute": {"prefix": None, "pattern": None, "addExternalPrefix": None, "delExternalPrefix": None,
                  "connection": None, "containerId": None, "distribution": "linkBalanced", "direction": None},
    "autoLink": {"address": None, "direction": None, "phase": 0, "connection": None, "containerId": None,
                 "externalAddress": None, "fallback": False},
}
# attributes that may hold a secret. qdrouterd 1.19 returns every attribute on
# QUERY as it was given on CREATE, a literal password in clear. The collection
# gives only a reference ("file:<path>": the router reads the file when it makes
# the connector) and compares it like any attribute, so a new path (a changed
# password, see the router role) re-creates the connector. A literal value read
# from a router (a connector made by hand or by an older version) becomes
# LITERAL_SECRET here, at once: it never reaches a diff, a result or a log, and
# it differs from every reference, so the entity is re-created with one.
SECRET_ATTRIBUTES = {"connector": ("saslPassword",)}
SECRET_REFERENCES = ("file:", "env:")
LITERAL_SECRET = "<a literal password, not shown>"
# attributes holding a port: the router keeps them as strings
PORTS = ("port",)
STATUS_ATTRIBUTES = {
    "autoLink": ("operStatus", "lastError"),
    "linkRoute": ("operStatus",),
    "connector": ("connectionStatus", "connectionMsg"),
}
READ_PAGE = 2000


def owned(name):
    """Whether the collection owns an entity of this name."""
    return isinstance(name, str) and name.startswith(OWNED_PREFIX)


def entity_type(kind):
    """The full type name of a kind; ValueError for an unknown kind."""
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError("unknown router entity kind %r (known: %s)" % (kind, ", ".join(sorted(KINDS))))


def plain(value):
    """Proton's int32/ulong/symbol... as plain Python values, recursively."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return dict((plain(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def defaults(kind, attrs):
    """``ATTRIBUTES[kind]`` with the defaults the router computes from the
    entity itself: a waypoint address's egressPhase is 1, an autoLink's
    phase is 1 for direction ``in`` (0 for ``out``)."""
    if kind == "address" and attrs.get("waypoint"):
        return _WAYPOINT_ADDRESS
    if kind == "autoLink" and attrs.get("direction") == "in":
        return _AUTOLINK_IN
    return ATTRIBUTES[kind]


# computed once (normalise runs for every entity read or compared); never modified
_WAYPOINT_ADDRESS = dict(ATTRIBUTES["address"], egressPhase=1)
_AUTOLINK_IN = dict(ATTRIBUTES["autoLink"], phase=1)


def secret_reference(value):
    """A secret attribute's value as it may be shown: a reference
    (``file:<path>``, ``env:<name>``) as it is, anything else
    ``LITERAL_SECRET``."""
    if isinstance(value, str) and value.startswith(SECRET_REFERENCES):
        return value
    return LITERAL_SECRET


def normalise(kind, attrs):
    """The attributes of an entity of ``kind`` as the collection compares
    them: only those it sets, plain values, ports as strings, unset and
    default values dropped, literal secrets replaced (``secret_reference``)."""
    known = defaults(kind, attrs)
    out = {}
    for key, default in known.items():
        value = plain(attrs.get(key))
        if value is None or value == default:
            continue
        if key in PORTS:
            value = str(value)
            if value == default:
                continue
        if key in SECRET_ATTRIBUTES.get(kind, ()):
            value = secret_reference(value)
        out[key] = value
    return out


def check_routers(session, routers):
    """Raise ``ClientError`` unless every router id is in the mesh the
    session's router sees (a request to a router outside it gets no reply:
    better said at once than after a timeout). Returns the mesh's ids."""
    mesh = session.routers()
    missing = [r for r in routers if r not in mesh]
    if missing:
        raise ClientError("router%s %s not in the mesh (the routers %s sees: %s)"
                          % ("s" if len(missing) > 1 else "", ", ".join(missing),
                             session.url, ", ".join(mesh) or "none"))
    return mesh


def read_owned(session, routers, kinds=None, check=True, page=READ_PAGE):
    """Read the owned entities of ``kinds`` (default: all) on every router of
    ``routers`` (ids), every QUERY pipelined over ``session``.

    Returns (live, status): live ``{router: {name: {"type": kind, **attrs}}}``
    normalised (``normalise``), status ``{router: {name: {"type": kind,
    **status attributes}}}`` for the kinds that have one. Every router of
    ``routers`` is a key of both. Raises ``RouterManagementError`` naming
    every router and type that could not be read. ``check``: first make
    sure every router is in the mesh (``check_routers``)."""
    routers = list(routers)
    kinds = list(kinds or KINDS)
    if check:
        check_routers(session, routers)
    queries, keys = [], []
    for router in routers:
        for kind in kinds:
            names = ["name"] + list(ATTRIBUTES[kind])
            queries.append((router, entity_type(kind), names + list(STATUS_ATTRIBUTES.get(kind, ()))))
            keys.append((router, kind))
    results = session.query_many(queries, page=page)
    live = dict((r, {}) for r in routers)
    status = dict((r, {}) for r in routers)
    errors = []
    for (router, kind), (rows, failed) in zip(keys, results):
        if failed is not None:
            errors.append(failed.error().errors[0])
            continue
        for row in rows:
            name = row.get("name")
            if not owned(name):
                continue
            entry = {"type": kind}
            entry.update(normalise(kind, row))
            live[router][name] = entry
            if kind in STATUS_ATTRIBUTES:
                st = {"type": kind}
                st.update((k, plain(row.get(k))) for k in STATUS_ATTRIBUTES[kind])
                status[router][name] = st
    if errors:
        raise RouterManagementError(errors)
    return live, status


def not_ready(status, routers=None):
    """(router, name, why) of every owned autoLink/linkRoute whose operStatus
    is not ``active`` and every connector not connected (``SUCCESS``)."""
    out = []
    for router in sorted(routers or status):
        for name, st in sorted((status.get(router) or {}).items()):
            kind = st.get("type")
            if kind in ("autoLink", "linkRoute") and st.get("operStatus") != "active":
                out.append((router, name, "%s operStatus %s" % (kind, st.get("operStatus"))))
            elif kind == "connector" and st.get("connectionStatus") != "SUCCESS":
                detail = ": %s" % st["connectionMsg"] if st.get("connectionMsg") else ""
                out.append((router, name, "connector %s%s" % (st.get("connectionStatus"), detail)))
    return out
