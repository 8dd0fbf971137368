# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared argument specs (the connection options) and helpers for the modules.

The connection options are documented once in the doc fragment
``enmasse.messaging.connection``; this is their argument spec. Values come from
the connection file the broker role writes
(``/etc/enmasse-messaging/spaces/<address_space>.json``) and explicit options
override them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

try:
    from ansible_collections.enmasse.messaging.plugins.module_utils import artemis as _artemis
    from ansible_collections.enmasse.messaging.plugins.module_utils import jolokia as _jolokia
    from ansible_collections.enmasse.messaging.plugins.module_utils import ledger as _ledger
    from ansible_collections.enmasse.messaging.plugins.module_utils import model as _model
    from ansible_collections.enmasse.messaging.plugins.module_utils import plans as _plans
except ImportError:  # pragma: no cover - used outside Ansible
    from . import artemis as _artemis  # noqa
    from . import jolokia as _jolokia  # noqa
    from . import ledger as _ledger  # noqa
    from . import model as _model  # noqa
    from . import plans as _plans  # noqa

DEFAULT_SPACES_DIR = "/etc/enmasse-messaging/spaces"
DEFAULT_TIMEOUT = 60

CONNECTION_ARGS = dict(
    connection_file=dict(type="path"),
    management_url=dict(type="str"),
    management_user=dict(type="str"),
    management_password=dict(type="str", no_log=True),
    broker_name=dict(type="str"),
    ledger_path=dict(type="path"),
    timeout=dict(type="int"),
)

# the options the modules need to talk to a brokered space
REQUIRED_CONNECTION = ("management_url", "management_user", "management_password",
                       "broker_name", "ledger_path")

# keys of the connection file that are not connection options
FILE_KEYS = ("address_space", "type", "plan", "endpoints", "messaging_user", "management_origin")

PLANS_ARG = dict(type="dict")
# the option naming the address space of address and address_info
ADDRESS_SPACE_ARG = dict(address_space=dict(type="str", required=True))
STATE_ARG = dict(type="str", choices=["present", "absent"], default="present")
FORCE_ARG = dict(type="bool", default=False)
# how many messages the one-line msg of a failure repeats (errors has them all)
MSG_ERRORS = 20


class ConfigError(Exception):
    """Missing or inconsistent configuration; ``errors`` lists every problem."""

    def __init__(self, errors):
        self.errors = [errors] if isinstance(errors, str) else list(errors)
        super(ConfigError, self).__init__("; ".join(self.errors))


MODULE_ERRORS = (ConfigError, _model.ValidationError, _plans.PlanError, _jolokia.JolokiaError,
                 _ledger.LedgerError, _artemis.ServiceError)


def argument_spec(**extra):
    """The connection options plus the module's own ``extra`` options."""
    spec = copy.deepcopy(CONNECTION_ARGS)
    spec.update(copy.deepcopy(extra))
    return spec


def new_module(options, **kwargs):
    """The ``AnsibleModule`` of an enmasse.messaging module: the connection
    options plus ``options``, check mode supported."""
    from ansible.module_utils.basic import AnsibleModule
    kwargs.setdefault("supports_check_mode", True)
    return AnsibleModule(argument_spec=argument_spec(**options), **kwargs)


# a password in the user info of a URL; a URL fit for messages and results
url_password = _jolokia.url_password
redact_url = _jolokia.redact_url


def hide_secrets(module, *values):
    """Have Ansible mask ``values`` (passwords that do not come from a no_log
    option, e.g. from the connection file or a URL) everywhere in the
    module's output, ``invocation`` included."""
    for value in values:
        if value not in (None, ""):
            module.no_log_values.add(str(value))


def hide_connection_secrets(module, conn):
    hide_secrets(module, conn.get("management_password"), url_password(conn.get("management_url")))


def connection_file_path(params, space_name):
    return params.get("connection_file") or os.path.join(DEFAULT_SPACES_DIR, "%s.json" % space_name)


def read_connection_file(path):
    """The connection file as a dict, or None when it does not exist."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError) as e:
        if getattr(e, "errno", None) == 2:
            return None
        raise ConfigError("cannot read the connection file %s: %s" % (path, e))
    except ValueError as e:
        raise ConfigError("the connection file %s is not valid JSON: %s" % (path, e))
    if not isinstance(data, dict):
        raise ConfigError("the connection file %s must hold a JSON object" % path)
    return data


def resolve_connection(params, space_name, required=REQUIRED_CONNECTION):
    """Connection settings for ``space_name``: the connection file's values,
    overridden by the explicit options in ``params``.

    Returns a dict with every connection option, the file's other keys
    (``type``, ``plan``, ``endpoints``, ...), ``connection_file`` (the path
    looked at) and ``file_found``. Raises ``ConfigError`` naming every missing
    option and the file looked at.
    """
    path = connection_file_path(params, space_name)
    data = read_connection_file(path)
    if data is None and params.get("connection_file"):
        raise ConfigError("connection_file: %s does not exist" % path)
    data = data or {}
    if data.get("address_space") and data["address_space"] != space_name:
        raise ConfigError("the connection file %s belongs to address space %r, not %r"
                          % (path, data["address_space"], space_name))
    conn = dict((k, data.get(k)) for k in FILE_KEYS)
    for key in CONNECTION_ARGS:
        if key == "connection_file":
            continue
        value = params.get(key)
        conn[key] = value if value is not None else data.get(key)
    conn["timeout"] = conn.get("timeout") or DEFAULT_TIMEOUT
    conn["connection_file"] = path
    conn["file_found"] = bool(data)
    missing = [k for k in required if conn.get(k) in (None, "")]
    if missing:
        where = "%s (%s)" % (path, "found, but without it" if data else "not found")
        raise ConfigError(["missing %s: set the %s option or add %s to the connection file %s"
                           % (k, k, k, where) for k in missing])
    return conn


def jolokia_client(conn):
    kwargs = {"origin": conn["management_origin"]} if conn.get("management_origin") else {}
    return _jolokia.JolokiaClient(conn["management_url"], conn["management_user"],
                                  conn["management_password"], timeout=conn["timeout"], **kwargs)


def error_list(exc):
    """Every message carried by an exception (``errors`` attribute or str)."""
    errs = getattr(exc, "errors", None)
    if errs:
        return list(errs)
    return [str(exc)]


def run_module(module, action):
    """Run ``action()`` (returns the result dict) and exit the module; any of
    ``MODULE_ERRORS`` becomes ``fail_json`` with ``msg`` and every message in
    ``errors`` (plus what was done before the failure, if anything)."""
    try:
        result = action()
    except MODULE_ERRORS as e:
        errors = error_list(e)
        if len(errors) == 1:
            msg = errors[0]
        else:
            shown = errors[:MSG_ERRORS]
            more = len(errors) - len(shown)
            msg = "%d problems: %s%s" % (len(errors), "; ".join(shown),
                                         "; ... and %d more (see errors)" % more if more else "")
        result = dict(changed=False)
        result.update(getattr(e, "result", None) or {})
        module.fail_json(msg=msg, errors=errors, **result)
    for warning in result.pop("warnings", None) or []:
        module.warn(warning)
    module.exit_json(**result)


def main(options, action, **module_kwargs):
    """The whole ``main()`` of a module: build it (``new_module``), run
    ``action(module)`` (returns the result dict) and exit (``run_module``)."""
    module = new_module(options, **module_kwargs)
    run_module(module, lambda: action(module))


# ------------------------------------------------------------------ inputs

# the single-address form of enmasse.messaging.address
SINGLE_FIELDS = ("address", "type", "plan", "topic", "deadletter", "expiry", "message_ttl",
                 "message_redelivery", "subscription")
STATES = ("present", "absent")


def address_inputs(params, space_name):
    """Split the address module's input into (present, absent, errors).

    ``present``: plain addresses (EnMasse documents normalised); ``absent``:
    names. The single form (``address`` + fields, or ``definition``) and the
    bulk form (``addresses``) are exclusive; in the bulk form an item may
    carry its own ``state``.
    """
    single = dict((k, params.get(k)) for k in SINGLE_FIELDS if params.get(k) is not None)
    definition = params.get("definition")
    bulk = params.get("addresses")
    errors = []
    if bulk is not None and (single or definition):
        return [], [], ["use either the single-address form (address, type, plan, ... or definition) "
                        "or addresses, not both"]
    if single and definition:
        return [], [], ["use either the address fields or definition, not both"]
    if bulk is None:
        if not single and not definition:
            return [], [], ["one of address, definition or addresses is required"]
        items = [definition if definition else single]
    else:
        items = bulk
    state = params.get("state") or "present"
    present, absent = [], []
    for i, item in enumerate(items):
        where = "addresses[%d]" % i
        if not isinstance(item, dict):
            errors.append("%s: %r must be a mapping (a plain address or an EnMasse Address document)"
                          % (where, item))
            continue
        # EnMasse documents are converted; plain dicts need only a shallow copy
        plain = _model.normalize_address(item) if "kind" in item else dict(item)
        if plain.get("address_space") not in (None, space_name):
            errors.append("%s.address_space: %r does not match address_space %r"
                          % (where, plain.get("address_space"), space_name))
        item_state = plain.get("state") or state
        if item_state not in STATES:
            errors.append("%s.state: %r must be one of %s" % (where, item_state, ", ".join(STATES)))
        elif item_state == "absent":
            name = plain.get("address")
            errs = _model.address_name_errors(name, where + ".address")
            if errs:
                errors.extend(errs)
            else:
                absent.append(name)
        else:
            plain.pop("state", None)
            present.append(plain)
    return present, absent, errors


SPACE_FIELDS = ("type", "plan", "authentication_service", "endpoints")


def space_input(params, ledger_space, conn):
    """The desired address space from the module's fields or ``definition``;
    type and plan default to what the ledger, then the connection file, say."""
    name = params["name"]
    fields = dict((k, params.get(k)) for k in SPACE_FIELDS if params.get(k) is not None)
    if params.get("definition") is not None:
        if fields:
            raise ConfigError("use either definition or the fields %s, not both" % ", ".join(sorted(fields)))
        fields = _model.normalize_address_space(params["definition"])
        if not isinstance(fields, dict):
            raise ConfigError("definition: %r must be an EnMasse AddressSpace document or a mapping" % (fields,))
        if fields.get("name") not in (None, name):
            raise ConfigError("definition.metadata.name: %r does not match name %r" % (fields.get("name"), name))
    space = dict(fields, name=name)
    known = ledger_space or {}
    for key in ("type", "plan"):
        if space.get(key) is None:
            space[key] = known.get(key) or conn.get(key)
    if space.get("type") is None:
        space["type"] = "brokered"
    return space


def space_context(params, space_name, module=None):
    """Connection, ledger, address space (name, type, plan) and the service
    for a module working on ``space_name``. With ``module``, the connection's
    secrets are masked in the module's output as soon as they are known."""
    conn = resolve_connection(params, space_name)
    if module is not None:
        hide_connection_secrets(module, conn)
    ledger = _ledger.Ledger.load(conn["ledger_path"])
    _artemis.check_space_owner(ledger, space_name)
    space = _artemis.space_of(ledger, conn, space_name)
    return conn, ledger, space, service_for(conn)


def open_space(module, space_name, supported_only=True):
    """``space_context`` for a module: the connection's secrets are masked in
    the module's output and, with ``supported_only``, an address space type
    that is not implemented fails."""
    conn, ledger, space, service = space_context(module.params, space_name, module)
    if supported_only:
        check_supported(space["type"])
    return conn, ledger, space, service


def check_supported(space_type):
    msg = _artemis.not_supported(space_type)
    if msg:
        raise ConfigError(msg)


def service_for(conn):
    return _artemis.BrokeredService(jolokia_client(conn), conn["broker_name"])
