# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that apply the model's rules (module_utils/model) to variables.

* ``space_name_errors``: the address space name rule (model/names.py);
* ``address_spaces_errors``: the ``address_spaces`` variable of
  playbooks/site.yml, whole: every space and address against the plan
  catalogue (model/validation.py), plus the keys site.yml adds for placement.

Both return a list of messages (empty = valid), each naming the field, the
value and the rule, so that an ``assert`` can print them all at once.

* ``scale_in_errors``: why a broker host cannot leave the standard pool
  (model/day2.py: the floor of the pool, brokered spaces on the host);

* ``loop_metrics``: the capacity loop's metrics file after a run
  (model/loop_metrics.py: the Prometheus textfile, counters kept);

* ``without_users``: the address spaces without their ``users`` (and so
  without their passwords), for loops: Ansible prints a loop item whole at
  ``-v``, whatever its label.

The documentation of each filter is in the sidecar ``<filter>.yml``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import EnmasseError
from ansible_collections.enmasse.messaging.plugins.module_utils.model.day2 import scale_in_errors as _scale_in_errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model import loop_metrics as _loop_metrics
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import fmt, space_name_errors as _space_name_errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plans import Catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.model.users import users_from_list
from ansible_collections.enmasse.messaging.plugins.module_utils.model.validation import (
    validate_address_space, validate_addresses)

# keys of an address space in site.yml's address_spaces beyond the model's
SITE_KEYS = ("broker_host", "port_offset", "broker_name", "java_memory", "global_max_size", "users",
             "messaging_user")
# the space types site.yml deploys today (standard needs the router network)
DEPLOYED_TYPES = ("brokered", "standard")
# the broker instance of the standard spaces' pool on every broker host (playbooks/inputs.yml)
POOL_INSTANCE = "standard-pool"


def space_name_errors(name, field="name"):
    """Every violation of the address space name rule, as messages."""
    if not isinstance(field, str):
        raise AnsibleFilterError("space_name_errors: field: %s must be a string" % fmt(field))
    return _space_name_errors(name, field)


def _site_key_errors(space, where, brokers):
    errs = []
    host = space.get("broker_host")
    if host is not None and brokers is not None and host not in brokers:
        errs.append("%s.broker_host: %s is not a host of the group brokers (%s)"
                    % (where, fmt(host), ", ".join(brokers) or "the group is empty"))
    offset = space.get("port_offset")
    if offset is not None and (not isinstance(offset, int) or isinstance(offset, bool) or offset < 0):
        errs.append("%s.port_offset: %s must be an integer >= 0" % (where, fmt(offset)))
    for key in ("broker_name", "java_memory", "global_max_size"):
        value = space.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            errs.append("%s.%s: %s must be a non-empty string" % (where, key, fmt(value)))
    return errs


def _identity_errors(space, where, keycloak):
    """``users`` (the messaging users of the space, converged in its Keycloak
    realm: the model's rules, model/users.py) and ``messaging_user``."""
    errs = []
    flag = space.get("messaging_user")
    if flag is not None and not isinstance(flag, bool):
        errs.append("%s.messaging_user: %s must be a boolean (true: the space keeps its generated user)"
                    % (where, fmt(flag)))
    if "users" not in space:
        return errs
    if keycloak is not None and not keycloak:
        errs.append("%s.users: messaging users live in the space's Keycloak realm: add a host to the group "
                    "keycloak (or remove users)" % where)
    unused, user_errs = users_from_list(space["users"] if space["users"] is not None else [], space.get("name"))
    return errs + ["%s.%s" % (where, e) for e in user_errs]


def address_spaces_errors(address_spaces, plans=None, brokers=None, routers=None, keycloak=None):
    """Every error in site.yml's ``address_spaces`` (empty list = valid).

    ``plans``: extra plans (``enmasse_plans``), merged over the default
    catalogue as the modules do. ``brokers``: the hosts of the group brokers,
    to check ``broker_host``. ``routers``: the hosts of the group routers,
    which standard spaces need. ``keycloak``: the hosts of the group
    keycloak, which ``users`` need."""
    if address_spaces is None:
        return []
    if not isinstance(address_spaces, list):
        return ["address_spaces: %s must be a list of address spaces" % fmt(address_spaces)]
    if brokers is not None and (not isinstance(brokers, list) or not all(isinstance(h, str) for h in brokers)):
        raise AnsibleFilterError("address_spaces_errors: brokers: %s must be a list of host names" % fmt(brokers))
    try:
        catalogue = Catalogue.from_data(plans or None)
    except EnmasseError as e:
        return ["enmasse_plans: %s" % e]
    errors = []
    seen = {}
    for i, space in enumerate(address_spaces):
        where = "address_spaces[%d]" % i
        if not isinstance(space, dict):
            errors.append("%s: %s must be a mapping" % (where, fmt(space)))
            continue
        name = space.get("name")
        if isinstance(name, str) and name:
            where = "%s(%s)" % (where, name)
            if name in seen:
                errors.append("%s.name: %s is listed twice (also at address_spaces[%d]); address space "
                              "names must be unique" % (where, fmt(name), seen[name]))
            seen.setdefault(name, i)
        model_space = dict((k, v) for k, v in space.items() if k not in SITE_KEYS and k != "addresses")
        errors.extend(validate_address_space(model_space, catalogue, field=where))
        stype = space.get("type")
        if stype == "standard" and routers is not None and not routers:
            errors.append("%s.type: %s needs routers: add hosts to the group routers (the qdrouterd mesh "
                          "in front of the broker pool) or use type brokered" % (where, fmt(stype)))
        if stype == "standard" and brokers is not None and not brokers:
            errors.append("%s.type: %s needs the broker pool: add hosts to the group brokers" % (where, fmt(stype)))
        if stype == "standard":
            for key in ("broker_host", "port_offset", "broker_name", "java_memory", "global_max_size"):
                if key in space:
                    errors.append("%s.%s: a standard space has no broker of its own (its stored addresses are "
                                  "placed on the pool); remove %s" % (where, key, key))
        if name == POOL_INSTANCE:
            errors.append("%s.name: %s is reserved (the broker instance of the standard spaces' pool)"
                          % (where, fmt(name)))
        errors.extend(_site_key_errors(space, where, brokers))
        errors.extend(_identity_errors(space, where, keycloak))
        addresses = space.get("addresses", [])
        if addresses is None:
            addresses = []
        # addresses are checked against a space whose type and plan the model
        # accepts (a bad name alone does not hide the errors in the addresses)
        if not validate_address_space(dict(model_space, name="x"), catalogue):
            errors.extend("%s.%s" % (where, e) for e in validate_addresses(model_space, addresses, catalogue))
    return errors


def without_users(address_spaces):
    """The address spaces without their ``users`` key (copies; the input is
    not changed)."""
    spaces = None
    if not isinstance(address_spaces, (str, bytes, dict)):
        try:
            spaces = list(address_spaces)  # selectattr and map give generators
        except TypeError:
            pass
    if spaces is None or not all(isinstance(s, dict) for s in spaces):
        raise AnsibleFilterError("without_users: %s must be a list of address spaces (mappings)"
                                 % fmt(spaces if spaces is not None else address_spaces))
    return [dict((k, v) for k, v in space.items() if k != "users") for space in spaces]


def scale_in_errors(host, brokers, states=None, min_brokers=None, brokered=None):
    """playbooks/scale_in.yml's check of ``scale_in_broker`` (model/day2.py)."""
    try:
        return _scale_in_errors(host, brokers, states or {}, min_brokers, brokered or ())
    except (TypeError, ValueError) as e:
        raise AnsibleFilterError("scale_in_errors: %s" % e)


def loop_metrics(previous, decision, mode="report", added=False):
    """The capacity loop's metrics file after a run (model/loop_metrics.py);
    ``added``: the run wrote the spare brokers it adds to the loop's inventory
    file (apply_plan_grown not empty)."""
    if mode not in ("report", "apply"):
        raise AnsibleFilterError("loop_metrics: mode: %s must be 'report' or 'apply'" % fmt(mode))
    if decision is not None and not isinstance(decision, dict):
        raise AnsibleFilterError("loop_metrics: decision: %s must be capacity_plan_apply's result or null" % fmt(decision))
    return _loop_metrics.render(previous if isinstance(previous, str) else "", decision, mode, added=bool(added))


class FilterModule(object):
    """enmasse.messaging model filters."""

    def filters(self):
        return {
            "space_name_errors": space_name_errors,
            "address_spaces_errors": address_spaces_errors,
            "without_users": without_users,
            "scale_in_errors": scale_in_errors,
            "loop_metrics": loop_metrics,
        }
