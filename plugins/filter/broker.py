# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the broker role and of playbooks/site.yml.

* ``artemis_password_hash``: Artemis' PBKDF2 codec, ``ENC(1024:SALT:HASH)``;
* ``broker_placement``: which broker host runs which brokered address space;
* ``broker_layout``: the instance layout of one host (directories, ports,
  users, endpoints), with every error in the ports at once.

The documentation of each filter is in the sidecar ``<filter>.yml`` beside
this file (``ansible-doc -t filter enmasse.messaging.<filter>``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import hashlib

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt, messaging_user, space_name_errors

PROTOCOLS = ("amqp", "core", "openwire", "stomp", "mqtt")
PORT_NAMES = PROTOCOLS + ("jolokia",)
# keys of an address space that the broker role takes from site.yml's address_spaces
ROLE_KEYS = ("name", "type", "plan", "port_offset", "broker_name", "java_memory", "global_max_size")
PBKDF2_ITERATIONS = 1024
PBKDF2_KEY_LENGTH = 64


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _int(v):
    """``v`` as an int when it is one or a string of digits (-e gives strings), else ``v``."""
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return v


def artemis_password_hash(password, user, iterations=PBKDF2_ITERATIONS):
    """``ENC(<iterations>:<SALT>:<HASH>)`` for artemis-users.properties.

    PBKDF2-HMAC-SHA1 with a 64-byte key, Artemis' DefaultSensitiveStringCodec
    one-way form. The salt is derived from the user and the password, so the
    same password always gives the same line (idempotent runs)."""
    if not isinstance(password, str) or not password:
        raise AnsibleFilterError("artemis_password_hash: the password must be a non-empty string")
    if not isinstance(user, str) or not user:
        raise AnsibleFilterError("artemis_password_hash: user: %s must be a non-empty string" % fmt(user))
    if not _is_int(iterations) or iterations < 1:
        raise AnsibleFilterError("artemis_password_hash: iterations: %s must be an integer >= 1" % fmt(iterations))
    salt = hashlib.sha256(to_bytes("enmasse.messaging:%s:%s" % (user, password))).digest()
    key = hashlib.pbkdf2_hmac("sha1", to_bytes(password), salt, iterations, PBKDF2_KEY_LENGTH)
    return "ENC(%d:%s:%s)" % (iterations, binascii.hexlify(salt).decode().upper(),
                              binascii.hexlify(key).decode().upper())


def broker_placement(address_spaces, brokers):
    """``{host: [address space, ...]}`` for every host in ``brokers``.

    A brokered space with ``broker_host`` goes to that host; every other one to
    the host with the fewest spaces so far (inventory order breaks ties: round
    robin when nothing is pinned). Only the keys the broker role takes are kept."""
    if address_spaces is None:
        address_spaces = []
    if not isinstance(address_spaces, list):
        raise AnsibleFilterError("broker_placement: address_spaces: %s must be a list" % fmt(address_spaces))
    if not isinstance(brokers, list) or not all(isinstance(h, str) for h in brokers):
        raise AnsibleFilterError("broker_placement: brokers: %s must be a list of host names" % fmt(brokers))
    out = dict((h, []) for h in brokers)
    errors = []
    brokered = []
    for i, space in enumerate(address_spaces):
        if not isinstance(space, dict):
            errors.append("address_spaces[%d]: %s must be a mapping" % (i, fmt(space)))
        elif space.get("type") == "brokered":
            brokered.append((i, space))
    if brokered and not brokers:
        errors.append("groups['brokers'] is empty: the brokered address spaces %s need a broker host"
                      % ", ".join(fmt(pair[1].get("name")) for pair in brokered))
    for i, space in brokered:
        host = space.get("broker_host")
        if host is not None and host not in out:
            errors.append("address_spaces[%d](%s).broker_host: %s is not a host of the group brokers (%s)"
                          % (i, space.get("name"), fmt(host), ", ".join(brokers)))
    if errors:
        raise AnsibleFilterError("; ".join(errors))

    def keep(space):
        return dict((k, v) for k, v in space.items() if k in ROLE_KEYS)

    spaces = [pair[1] for pair in brokered]
    for space in spaces:
        if space.get("broker_host") is not None:
            out[space["broker_host"]].append(keep(space))
    for space in spaces:
        if space.get("broker_host") is None:
            host = min(brokers, key=lambda h: (len(out[h]), brokers.index(h)))
            out[host].append(keep(space))
    return out


def _space_ports(ports, offset, plain_port_offset, stype):
    """(label, port) of every port of one instance: the TLS acceptors, Jolokia
    and, with ``plain_port_offset`` (not None) and not on the pool, the plain
    acceptors at port + plain_port_offset."""
    out = [(proto, ports[proto] + offset) for proto in PORT_NAMES]
    if plain_port_offset is not None and stype != "pool":
        out += [(proto + "-plain", ports[proto] + offset + plain_port_offset) for proto in PROTOCOLS]
    return out


def broker_layout_errors(address_spaces, ports, port_offset_step=100, plain_port_offset=None):
    """Every error in the spaces and ports of one host, as messages."""
    errors = []
    port_offset_step = _int(port_offset_step)
    plain_port_offset = _int(plain_port_offset)
    if plain_port_offset is not None and (not _is_int(plain_port_offset) or plain_port_offset < 1):
        errors.append("broker_plain_port_offset: %s must be an integer >= 1" % fmt(plain_port_offset))
    if not isinstance(ports, dict) or sorted(ports) != sorted(PORT_NAMES):
        return ["broker_ports: %s must map exactly %s to port numbers" % (fmt(ports), ", ".join(PORT_NAMES))]
    ports = dict((k, _int(v)) for k, v in ports.items())
    for proto in PORT_NAMES:
        if not _is_int(ports[proto]) or not 1 <= ports[proto] <= 65535:
            errors.append("broker_ports.%s: %s must be an integer in 1..65535" % (proto, fmt(ports[proto])))
    if not _is_int(port_offset_step) or port_offset_step < 0:
        errors.append("broker_port_offset_step: %s must be an integer >= 0" % fmt(port_offset_step))
    if not isinstance(address_spaces, list):
        errors.append("broker_address_spaces: %s must be a list" % fmt(address_spaces))
    if errors:
        return errors
    seen_names = {}
    seen_ports = {}
    for i, space in enumerate(address_spaces):
        where = "broker_address_spaces[%d]" % i
        if not isinstance(space, dict):
            errors.append("%s: %s must be a mapping" % (where, fmt(space)))
            continue
        name = space.get("name")
        errors.extend(space_name_errors(name, where + ".name"))
        if isinstance(name, str):
            where = "%s(%s)" % (where, name)
            if name in seen_names:
                errors.append("%s.name: %s is listed twice on this host (also at broker_address_spaces[%d])"
                              % (where, fmt(name), seen_names[name]))
            seen_names.setdefault(name, i)
        stype = space.get("type", "brokered")
        if stype not in ("brokered", "pool"):
            errors.append("%s.type: %s must be 'brokered' (an address space's own broker) or 'pool' (the broker "
                          "of the standard spaces' pool on this host)" % (where, fmt(stype)))
        offset = _int(space.get("port_offset"))
        if offset is None:
            offset = i * port_offset_step
        elif not _is_int(offset) or offset < 0:
            errors.append("%s.port_offset: %s must be an integer >= 0" % (where, fmt(offset)))
            continue
        for proto, port in _space_ports(ports, offset, plain_port_offset, stype):
            label = "%s %s" % (name, proto)
            if port > 65535:
                errors.append("%s: port %s of %s (broker_ports + port offset %d%s) is above 65535"
                              % (where, port, proto, offset,
                                 " + broker_plain_port_offset" if proto.endswith("-plain") else ""))
            elif port in seen_ports:
                errors.append("%s: port %d (%s) is also used by %s; ports must be distinct across protocols "
                              "and address spaces on one host: set port_offset" % (where, port, label, seen_ports[port]))
            else:
                seen_ports[port] = label
    return errors


def broker_layout(address_spaces, ports, port_offset_step=100, instances_dir="/var/lib/artemis/instances",
                  credentials_dir="credentials", java_memory="512M", global_max_size="", endpoint_host="localhost",
                  plain_port_offset=None, pool_management_tls=False):
    """The instances of one broker host: one dict per address space with its
    name, plan, broker_name, instance_dir, service, ports, plain_ports,
    java_memory, global_max_size, users, password files, management URL and
    client endpoints.

    Instance i gets ``port + port_offset`` for each port of ``ports``
    (default offset ``i * port_offset_step``); its client acceptors are TLS.
    ``plain_port_offset`` (None: none) adds plain acceptors at TLS port + it,
    except on the pool. ``pool_management_tls``: the pool's Jolokia is HTTPS.
    Raises one error listing every problem (bad name, duplicate, port clash or
    out of range)."""
    errors = broker_layout_errors(address_spaces, ports, port_offset_step, plain_port_offset)
    if errors:
        raise AnsibleFilterError("broker_layout: " + "; ".join(errors))
    out = []
    port_offset_step = _int(port_offset_step)
    ports = dict((k, _int(v)) for k, v in ports.items())
    for i, space in enumerate(address_spaces):
        name = space["name"]
        offset = _int(space.get("port_offset"))
        if offset is None:
            offset = i * port_offset_step
        all_ports = _space_ports(ports, offset, _int(plain_port_offset), space.get("type") or "brokered")
        space_ports = dict(p for p in all_ports if not p[0].endswith("-plain"))
        plain_ports = dict((p[0][:-len("-plain")], p[1]) for p in all_ports if p[0].endswith("-plain"))
        https = pool_management_tls and space.get("type") == "pool"
        out.append({
            "name": name,
            # "pool": the broker of the standard address spaces' pool on this host
            "type": space.get("type") or "brokered",
            "plan": space.get("plan") or "",
            "broker_name": space.get("broker_name") or name,
            "instance_dir": "%s/%s" % (instances_dir, name),
            "service": "artemis@%s.service" % name,
            "ports": space_ports,
            "plain_ports": plain_ports,
            "java_memory": space.get("java_memory") or java_memory,
            "global_max_size": space.get("global_max_size") or global_max_size,
            "messaging_user": messaging_user(name),
            "management_user": name + "-admin",
            "messaging_password_file": "%s/%s-messaging" % (credentials_dir, name),
            "management_password_file": "%s/%s-management" % (credentials_dir, name),
            "management_url": "%s://127.0.0.1:%d/console/jolokia" % ("https" if https else "http",
                                                                     space_ports["jolokia"]),
            "endpoints": [{"name": proto, "host": endpoint_host, "port": space_ports[proto], "protocols": [proto],
                           "tls": True} for proto in PROTOCOLS]
            + [{"name": proto + "-plain", "host": endpoint_host, "port": plain_ports[proto], "protocols": [proto],
                "tls": False} for proto in PROTOCOLS if proto in plain_ports],
        })
        if out[-1]["type"] == "pool":
            # the user the routers' connectors log in with (role broker_router_role)
            out[-1].update(router_user=name + "-router", router_password_file="%s/%s-router" % (credentials_dir, name))
    return out


class FilterModule(object):
    """enmasse.messaging broker filters."""

    def filters(self):
        return {
            "artemis_password_hash": artemis_password_hash,
            "broker_placement": broker_placement,
            "broker_layout": broker_layout,
        }
