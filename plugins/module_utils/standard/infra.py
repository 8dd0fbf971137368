# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The standard infrastructure a control host manages: its routers, the
broker pool, the auth service (the file site.yml writes,
``/etc/enmasse-messaging/standard.json``), and the ledger of each standard
address space (what the collection owns, the space's port, each stored
address's brokers). No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re

from ansible_collections.enmasse.messaging.plugins.module_utils.auth import mgmt_tls as _mgmt_tls
from ansible_collections.enmasse.messaging.plugins.module_utils import files as _files
from ansible_collections.enmasse.messaging.plugins.module_utils.ledger import Ledger
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.redact import url_password

DEFAULT_INFRA_FILE = "/etc/enmasse-messaging/standard.json"
DEFAULT_LEDGER_DIR = "/var/lib/enmasse-messaging/standard"
DEFAULT_PORT_RANGE = (5700, 5799)
REQUIRED = ("management_url", "routers", "brokers", "auth_service")
# the static sslProfiles the router role writes in qdrouterd.conf (docs/router-role.md)
DEFAULT_CLIENT_SSL_PROFILE = "clients"
DEFAULT_AUTH_SSL_PROFILE = "auth-service"
SSL_PROFILE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
# a pool broker's state: active, or draining (leaving the pool: docs/scale-in.md)
BROKER_ACTIVE, BROKER_DRAINING = "active", "draining"
BROKER_STATES = (BROKER_ACTIVE, BROKER_DRAINING)
BROKER_KEYS = ("name", "host", "amqp_port", "management_url", "management_user", "management_password",
               "broker_name")


def load_infra(path):
    """The standard infrastructure file as a dict with every key checked;
    a ConfigError names the file, the key and what is wrong."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError) as e:
        if getattr(e, "errno", None) == 2:
            raise ConfigError("infrastructure_file: %s does not exist: standard address spaces need routers "
                              "(deploy them with playbooks/site.yml and a `routers` group, which writes it)" % path)
        raise ConfigError("cannot read the infrastructure file %s: %s" % (path, e))
    except ValueError as e:
        raise ConfigError("the infrastructure file %s is not valid JSON: %s" % (path, e))
    if not isinstance(data, dict):
        raise ConfigError("the infrastructure file %s must hold a JSON object" % path)
    errs = ["%s: missing %s" % (path, k) for k in REQUIRED if not data.get(k)]
    for i, b in enumerate(data.get("brokers") or []):
        missing = [k for k in BROKER_KEYS if not isinstance(b, dict) or b.get(k) in (None, "")]
        if missing:
            errs.append("%s: brokers[%d] lacks %s" % (path, i, ", ".join(missing)))
            continue
        if b.get("state", BROKER_ACTIVE) not in BROKER_STATES:
            errs.append("%s: brokers[%d] (%s): state: %r must be one of %s" % (
                path, i, b.get("name"), b.get("state"), ", ".join(BROKER_STATES)))
        why = connector_secret_errors(b) or broker_tls_errors(b)
        if why:
            errs.append("%s: brokers[%d] (%s): %s" % (path, i, b.get("name"), why))
    for i, r in enumerate(data.get("routers") or []):
        if not isinstance(r, dict) or not r.get("id"):
            errs.append("%s: routers[%d] needs an id" % (path, i))
    cap = data.get("link_capacity")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        errs.append("%s: link_capacity: %r must be a whole number >= 1 (deliveries in flight per link), "
                    "or null for the router's default (250)" % (path, cap))
    auth = data.get("auth_service") or {}
    if data.get("auth_service") and (not auth.get("host") or not auth.get("port")):
        errs.append("%s: auth_service needs host and port" % path)
    errs.extend(tls_errors(path, data))
    errs.extend("%s: %s" % (path, e) for e in _mgmt_tls.errors("management_tls", data.get("management_tls"))
                + _mgmt_tls.url_errors("management_url", data.get("management_url"), data.get("management_tls")))
    errs.extend(mqtt_gateway_errors(path, data.get("mqtt_gateways")))
    if errs:
        raise ConfigError(errs)
    rng = data.get("port_range") or DEFAULT_PORT_RANGE
    out = dict(data)
    out["path"] = path
    out["port_range"] = (int(rng[0]), int(rng[1]))
    out.setdefault("ledger_dir", DEFAULT_LEDGER_DIR)
    out.setdefault("bind_host", "0.0.0.0")
    out.setdefault("timeout", 60)
    out.setdefault("link_capacity", None)
    out["client_tls"] = client_tls(data)
    if isinstance(out.get("auth_service"), dict):
        out["auth_service"] = dict(out["auth_service"])
        out["auth_service"].setdefault("ssl_profile", DEFAULT_AUTH_SSL_PROFILE)
    return out


def set_timeout(infra, value):
    """The task's ``timeout`` (the seconds one management request to a router
    or a broker may wait), when set, replaces the infrastructure file's."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError("timeout: %r must be whole seconds >= 1 (the wait for one management request)" % (value,))
    infra["timeout"] = value


def _port_ok(value, allow_zero=False):
    return isinstance(value, int) and not isinstance(value, bool) and (0 if allow_zero else 1) <= value <= 65535


def mqtt_gateway_errors(path, gateways):
    """``mqtt_gateways``: [{host, spaces: [{name, tls_port, plain_port}]}],
    the MQTT gateway instances (role mqtt_gateway) that serve standard
    spaces: their endpoints appear in the spaces' status. Absent: none."""
    if gateways is None:
        return []
    if not isinstance(gateways, list):
        return ["%s: mqtt_gateways: %r must be a list of {host, spaces}" % (path, gateways)]
    errs = []
    for i, g in enumerate(gateways):
        where = "%s: mqtt_gateways[%d]" % (path, i)
        if not isinstance(g, dict) or not isinstance(g.get("host"), str) or not g.get("host"):
            errs.append("%s: %r needs a host (a name or address clients reach)" % (where, g))
            continue
        for j, s in enumerate(g.get("spaces") or []):
            if not isinstance(s, dict) or not isinstance(s.get("name"), str):
                errs.append("%s.spaces[%d]: %r needs the name of a standard space" % (where, j, s))
                continue
            for key in ("tls_port", "plain_port"):
                if not _port_ok(s.get(key, 0), allow_zero=True):
                    errs.append("%s.spaces[%d] (%s).%s: %r must be a port 1-65535, or 0 for none"
                                % (where, j, s["name"], key, s.get(key)))
            if not s.get("tls_port") and not s.get("plain_port"):
                errs.append("%s.spaces[%d] (%s): neither tls_port nor plain_port: the instance has no listener"
                            % (where, j, s["name"]))
    return errs


def _profile_error(path, key, value):
    if value is None or isinstance(value, str) and (value == "" or SSL_PROFILE_NAME.match(value)):
        return []
    return ["%s: %s: %r must be the name of an sslProfile in every router's qdrouterd.conf (letters, digits, "
            "'.', '_', '-'), or \"\" for plain TCP" % (path, key, value)]


def tls_errors(path, data):
    """What is wrong with the TLS keys of the infrastructure file ``data``:
    ``client_ssl_profile`` (the static sslProfile of the space listeners,
    default ``clients``), ``client_plain`` (plain AMQP on them too, default
    false), ``auth_service.ssl_profile`` (default ``auth-service``)."""
    errs = _profile_error(path, "client_ssl_profile", data.get("client_ssl_profile", DEFAULT_CLIENT_SSL_PROFILE))
    plain = data.get("client_plain", False)
    if not isinstance(plain, bool):
        errs.append("%s: client_plain: %r must be true or false (plain AMQP on the space listeners too)"
                    % (path, plain))
    elif not errs and not client_tls(data)["ssl_profile"] and not plain:
        errs.append("%s: client_ssl_profile is empty and client_plain is false: the space listeners would take "
                    "neither TLS nor plain TCP; name the routers' sslProfile (the router role's %r) or turn "
                    "client_plain on" % (path, DEFAULT_CLIENT_SSL_PROFILE))
    auth = data.get("auth_service")
    if isinstance(auth, dict):
        errs.extend(_profile_error(path, "auth_service.ssl_profile", auth.get("ssl_profile", DEFAULT_AUTH_SSL_PROFILE)))
    return errs


def client_tls(data):
    """{ssl_profile, plain} of the space listeners (standard/entities.listener_tls)."""
    profile = data.get("client_ssl_profile", DEFAULT_CLIENT_SSL_PROFILE)
    return {"ssl_profile": profile or "", "plain": bool(data.get("client_plain", False))}


def connector_secret_errors(broker):
    """Why the routers' connector to ``broker`` cannot be made without putting
    a secret where a router management QUERY returns it ("" when it can): a
    user needs ``password_file`` (an absolute path on every router host) and
    no literal ``password``."""
    if broker.get("password") not in (None, ""):
        return ("password: a literal password would be returned in clear by every management QUERY of the "
                "routers; give password_file, a file on every router host (the router role writes it from "
                "router_broker_credentials)")
    if not broker.get("user"):
        return ""
    pfile = broker.get("password_file")
    if not isinstance(pfile, str) or not pfile.startswith("/"):
        return "password_file: %r must be an absolute path on every router host (user %r needs it)" % (
            pfile, broker.get("user"))
    return ""


def broker_tls_errors(broker):
    """Why the TLS settings of a pool broker are unusable ("" when fine):
    ``ssl_profile`` (the routers' sslProfile for the connector) a name,
    ``management_ca`` an absolute path, and an ``https://`` management_url."""
    prof = broker.get("ssl_profile")
    if prof is not None and (not isinstance(prof, str) or not re.match(r"^[A-Za-z0-9._-]+$", prof)):
        return ("ssl_profile: %r must be the name of an sslProfile of the routers (letters, digits, '.', '_', '-'), "
                "or absent for a plain connector" % (prof,))
    ca = broker.get("management_ca")
    if ca is not None and (not isinstance(ca, str) or not ca.startswith("/")):
        return "management_ca: %r must be an absolute path on the control host (the CA of the broker's certificate)" % (
            ca,)
    if ca and not str(broker.get("management_url")).lower().startswith("https:"):
        return "management_ca: given, but management_url %r is not https://" % (broker.get("management_url"),)
    return ""


def infra_secrets(infra):
    """Every secret of the infrastructure (masked in any module output)."""
    out = []
    for b in infra.get("brokers") or []:
        for key in ("management_password", "password"):
            if b.get(key):
                out.append(b[key])
        if url_password(b.get("management_url")):
            out.append(url_password(b.get("management_url")))
    return out


class SpaceLedger(Ledger):
    """A standard space's ledger: the owned addresses plus where each stored
    address lives (``homes``: address -> {brokers, draining})."""

    def __init__(self, path, data=None):
        super(SpaceLedger, self).__init__(path, data)
        self.homes = dict((data or {}).get("homes") or {})

    def as_dict(self):
        out = super(SpaceLedger, self).as_dict()
        out["homes"] = self.homes
        return out

    def remove(self):
        super(SpaceLedger, self).remove()
        self.homes = {}


def ledger_path(infra, space):
    return os.path.join(infra["ledger_dir"], "%s.json" % space)


def load_ledger(infra, space):
    return SpaceLedger.load(ledger_path(infra, space))


def space_names(infra):
    """The standard spaces of the infrastructure (their ledgers), sorted."""
    return sorted(os.path.basename(p)[:-len(".json")] for p in glob.glob(os.path.join(infra["ledger_dir"], "*.json")))


def other_ports(infra, space):
    """The listener ports the other standard spaces of this infrastructure
    hold (their clients', their MQTT service's and its will keepers' listeners')."""
    used = {}
    for name in space_names(infra):
        if name == space:
            continue
        try:
            led = load_ledger(infra, name)
        except Exception:  # pylint: disable=broad-except
            continue  # an unreadable ledger of another space holds no port we can know
        mqtt = (led.space or {}).get("mqtt_service") or {}
        for port in ((led.space or {}).get("port"), mqtt.get("port"), mqtt.get("will_port")):
            if port:
                used[int(port)] = name
    return used


def allocate_port(infra, space, own=()):
    """The first port of port_range no other space holds (nor ``own``: the
    space's other listeners' ports)."""
    lo, hi = infra["port_range"]
    used = other_ports(infra, space)
    used.update((int(p), space) for p in own if p)
    for port in range(lo, hi + 1):
        if port not in used:
            return port
    raise ConfigError("port_range %d-%d of %s is full: every port is held by a standard address space (%s); "
                      "widen router_space_port_range" % (lo, hi, infra["path"], ", ".join(sorted(used.values()))))


def write_connection_file(path, data):
    err = _files.writable_error(path, "connection file")
    if err:
        raise ConfigError(err)
    _files.write_json(path, data, 0o640, ".enmasse-conn-")
