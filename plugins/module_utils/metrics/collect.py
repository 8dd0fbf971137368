# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One metrics collection: every broker of the configured address spaces and
the router, appended to the store. The settings are the options of the
``metrics_collect`` module, which are also the keys of the scheduled
collector's configuration file. No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.enmasse.messaging.plugins.module_utils.args import CONNECTION_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import DEFAULT_SPACES_DIR, resolve_connection
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError, ConfigError, MetricsError
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics import store as _store
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics.artemis import address_info_from_ledger, sample_artemis, utcnow
from ansible_collections.enmasse.messaging.plugins.module_utils.metrics.router import sample_router
from ansible_collections.enmasse.messaging.plugins.module_utils.model.schema import ADDRESSES, BROKER, INFRA_SPACE, NODES, ROUTER
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import redact_url
from ansible_collections.enmasse.messaging.plugins.module_utils.router.client import RouterManagement
from ansible_collections.enmasse.messaging.plugins.module_utils.router.protocol import DEFAULT_PAGE, ROUTER_PREFIXES


def summarize(address_rows, node_rows):
    """What a collection saw, per address space and node (for the module's
    result and the collector's log line)."""
    spaces = {}
    for r in address_rows:
        s = spaces.setdefault(r["address_space"], {"addresses": 0, "messages": 0, "consumers": 0,
                                                   "persistent_bytes": 0})
        s["addresses"] += 1
        if r["node_kind"] == BROKER:
            s["messages"] += r["message_count"] or 0
            s["persistent_bytes"] += r["persistent_size"] or 0
        s["consumers"] += r["consumer_count"] or 0
    nodes = [dict((k, r[k]) for k in ("address_space", "node", "node_kind", "memory_used", "memory_max",
                                      "disk_used", "disk_max", "connections", "links", "uptime_ms"))
             for r in node_rows]
    return {"address_spaces": spaces, "nodes": nodes}


def collect(brokers, infra, store=None, router=None, check_mode=False, clock=utcnow):
    """Sample every broker in ``brokers`` (connection dicts) and the router
    described by ``router`` (see ``router_settings``; None: no router), then
    append the rows to ``store`` (nothing is written in check mode).

    A source that fails is reported in ``errors`` and the others are still
    written; the caller decides whether that is fatal.
    """
    address_rows, node_rows, errors, sources = [], [], [], []
    for conn in brokers:
        try:
            rows, nodes = sample_artemis(conn, infra, clock=clock)
        except (ClientError, MetricsError) as e:
            errors.append({"source": BROKER, "address_space": conn.get("address_space"),
                           "node": conn.get("broker_name"), "error": str(e)})
            continue
        address_rows.extend(rows)
        node_rows.extend(nodes)
        sources.append({"node_kind": BROKER, "node": nodes[0]["node"], "address_space": conn["address_space"],
                        "addresses": len(rows)})
    router_status = "not configured"
    if router:
        info = {}
        for conn in brokers:
            info.update(address_info_from_ledger(conn.get("ledger_path")))
        spaces = [c["address_space"] for c in brokers] + list(router.get("address_spaces") or [])
        client = None
        try:
            client = RouterManagement(router["url"], timeout=router.get("timeout") or 30,
                                      ssl_domain=router.get("ssl_domain"),
                                      sasl_mechanisms=router.get("sasl_mechanisms"))
            rows, nodes, dropped = sample_router(client.call, infra, spaces,
                                                 default_space=router.get("default_space"),
                                                 flavor=router.get("flavor") or "auto",
                                                 page=router.get("page_size") or DEFAULT_PAGE,
                                                 address_info=info, memory_max=router.get("memory_max"),
                                                 clock=clock)
        except (ClientError, MetricsError) as e:
            errors.append({"source": ROUTER, "node": redact_url(router["url"]), "error": str(e)})
            router_status = "failed"
        else:
            address_rows.extend(rows)
            node_rows.extend(nodes)
            sources.append({"node_kind": ROUTER, "node": nodes[0]["node"], "address_space": INFRA_SPACE,
                            "addresses": len(rows), "unattributed_addresses": dropped})
            router_status = "sampled"
        finally:
            if client is not None:
                client.close()
    files = []
    if not check_mode and store:
        files = _store.write_samples(store, address_rows, node_rows)
    written = bool(files)
    return {
        "samples": {ADDRESSES: len(address_rows), NODES: len(node_rows)},
        "written": {ADDRESSES: len(address_rows) if written else 0,
                    NODES: len(node_rows) if written else 0},
        "files": files,
        "sources": sources,
        "router": router_status,
        "errors": errors,
        "summary": summarize(address_rows, node_rows),
    }


# The options of the metrics_collect module, which are also the keys of the
# scheduled collector's configuration file; None = not set.
DEFAULT_STORE = "/var/lib/enmasse-messaging/metrics"
COLLECT_DEFAULTS = {
    "address_space": None,
    "address_spaces": None,
    "spaces_dir": DEFAULT_SPACES_DIR,
    "store": DEFAULT_STORE,
    "infra": "default",
    "router_url": None,
    "router_flavor": "auto",
    "router_address_spaces": [],
    "router_default_address_space": None,
    "router_memory_max": None,
    "router_page_size": DEFAULT_PAGE,
    "router_timeout": 30,
    "router_sasl_mechanisms": None,
    "router_ca_file": None,
    "router_cert_file": None,
    "router_key_file": None,
    "router_verify_hostname": True,
    "fail_on_source_error": True,
}
# connection options that name one broker: they make sense for one space only
SINGLE_SPACE_OPTIONS = ("connection_file", "management_url", "broker_name", "ledger_path")
BROKER_REQUIRED = ("management_url", "management_user", "management_password", "broker_name")


def settings(params):
    """``params`` over ``COLLECT_DEFAULTS`` and the connection options (all
    None by default)."""
    out = dict(COLLECT_DEFAULTS)
    out.update(dict((k, None) for k in CONNECTION_ARGS))
    out.update(dict((k, v) for k, v in (params or {}).items() if v is not None))
    return out


def load_config(path):
    """The collector's configuration file: a JSON object of metrics_collect
    options. Raises ``common.ConfigError`` naming unknown options."""
    try:
        with open(path) as f:
            params = json.load(f)
    except (IOError, OSError, ValueError) as e:
        raise ConfigError("cannot read the collector configuration %s: %s" % (path, e))
    if not isinstance(params, dict):
        raise ConfigError("%s must hold a JSON object of metrics_collect options" % path)
    unknown = sorted(set(params) - set(settings({})))
    if unknown:
        raise ConfigError("%s: unknown options %s" % (path, ", ".join(unknown)))
    return params


def spaces_in_dir(directory):
    """Address spaces with a connection file in ``directory`` (sorted)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(n[:-5] for n in names if n.endswith(".json") and not n.startswith("."))


def broker_connections(params):
    """The connection dict of every address space to sample: ``address_space``
    or ``address_spaces``, or every connection file in ``spaces_dir``.
    Raises ``common.ConfigError`` with every problem."""
    p = settings(params)
    if p["address_space"] and p["address_spaces"]:
        raise ConfigError("address_space and address_spaces are mutually exclusive")
    if p["address_space"]:
        names = [p["address_space"]]
    elif p["address_spaces"]:
        names = list(p["address_spaces"])
    else:
        names = spaces_in_dir(p["spaces_dir"])
    if len(names) > 1:
        bad = [k for k in SINGLE_SPACE_OPTIONS if p.get(k)]
        if bad:
            raise ConfigError("%s name one broker: give a single address_space with them"
                              % ", ".join(bad))
    conn_params = dict((k, p.get(k)) for k in CONNECTION_ARGS)
    if not conn_params["connection_file"] and p["spaces_dir"]:
        # the spaces directory may be moved (tests, non-default layouts)
        by_dir = dict((n, os.path.join(p["spaces_dir"], "%s.json" % n)) for n in names)
    else:
        by_dir = {}
    conns, errors = [], []
    for name in names:
        cp = dict(conn_params)
        if name in by_dir:
            cp["connection_file"] = by_dir[name] if os.path.exists(by_dir[name]) else None
        try:
            conn = resolve_connection(cp, name, required=BROKER_REQUIRED)
        except ConfigError as e:
            errors.extend(e.errors)
            continue
        conn["address_space"] = name
        conns.append(conn)
    if errors:
        raise ConfigError(errors)
    return conns


def router_ssl_domain(p):
    """A proton SSLDomain for amqps:// router URLs (None for amqp://)."""
    url = p.get("router_url") or ""
    if not (url.startswith("amqps://") or p.get("router_ca_file") or p.get("router_cert_file")):
        return None
    try:
        from proton import SSLDomain
    except ImportError as e:
        raise MetricsError("sampling a router needs python-qpid-proton (python3-qpid-proton): %s" % e)
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    if p.get("router_ca_file"):
        domain.set_trusted_ca_db(p["router_ca_file"])
    if p.get("router_cert_file"):
        domain.set_credentials(p["router_cert_file"], p.get("router_key_file"), None)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME if p.get("router_verify_hostname")
                                   else SSLDomain.VERIFY_PEER)
    return domain


def router_settings(params):
    """The ``router`` argument of ``collect`` (None when no router_url)."""
    p = settings(params)
    if not p["router_url"]:
        return None
    if p["router_flavor"] not in ("auto",) + tuple(ROUTER_PREFIXES):
        raise ConfigError("router_flavor must be auto, %s" % ", ".join(sorted(ROUTER_PREFIXES)))
    return {"url": p["router_url"], "flavor": p["router_flavor"], "timeout": p["router_timeout"],
            "page_size": p["router_page_size"], "memory_max": p["router_memory_max"],
            "address_spaces": p["router_address_spaces"] or [],
            "default_space": p["router_default_address_space"],
            "sasl_mechanisms": p["router_sasl_mechanisms"], "ssl_domain": router_ssl_domain(p)}


def run(params, check_mode=False, clock=utcnow, on_connection=None):
    """One collection as the module and the collector script do it. Returns
    the ``collect`` result plus ``changed`` and ``failed`` (a source failed
    and ``fail_on_source_error``, or nothing at all could be sampled).
    ``on_connection(conn)`` is called with every broker connection resolved
    (the module masks their passwords with it)."""
    p = settings(params)
    brokers = broker_connections(p)
    for conn in brokers if on_connection else ():
        on_connection(conn)
    router = router_settings(p)
    if not brokers and not router:
        raise ConfigError("nothing to sample: no address space (connection files in %s) and no router_url"
                          % p["spaces_dir"])
    result = collect(brokers, p["infra"], store=p["store"], router=router, check_mode=check_mode, clock=clock)
    sampled = result["samples"][ADDRESSES] + result["samples"][NODES]
    result["changed"] = bool(result["files"]) or (check_mode and sampled > 0)
    result["failed"] = bool(result["errors"]) and (p["fail_on_source_error"] or not result["sources"])
    if result["errors"]:
        result["msg"] = "; ".join("%s %s: %s" % (e["source"], e.get("address_space") or e.get("node"), e["error"])
                                  for e in result["errors"])
    return result
