# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument specs shared by the modules.

The connection options are documented once, in the doc fragment
``enmasse.messaging.connection``; ``CONNECTION_ARGS`` is their spec.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

CONNECTION_ARGS = dict(
    connection_file=dict(type="path"),
    management_url=dict(type="str"),
    management_ca=dict(type="path"),
    management_user=dict(type="str"),
    management_password=dict(type="str", no_log=True),
    broker_name=dict(type="str"),
    ledger_path=dict(type="path"),
    timeout=dict(type="int"),
    catalogue_path=dict(type="path"),
    infrastructure_file=dict(type="path"),
)

# the options of the plan modules (no address space, so no connection)
CATALOGUE_ARGS = dict(
    catalogue_path=dict(type="path"),
    spaces_dir=dict(type="path"),
)

# the option naming the address space of address and address_info: raw, the
# model checks it is a string (type=str would turn ``yes`` into 'True')
ADDRESS_SPACE_ARG = dict(address_space=dict(type="raw", required=True))
# a string option whose type the model checks (model/types.py): Ansible's
# type=str would convert ``yes`` to 'True' and 12345 to '12345' silently
STRING_ARG = dict(type="raw")
STATE_ARG = dict(type="str", choices=["present", "absent"], default="present")
FORCE_ARG = dict(type="bool", default=False)


# the options both plan modules (address_plan, address_space_plan) have; the
# doc fragment enmasse.messaging.connection.plan documents them
PLAN_COMMON_ARGS = dict(
    CATALOGUE_ARGS,
    name=dict(type="str"),
    display_name=dict(type="str"),
    display_order=dict(type="int"),
    short_description=dict(type="str"),
    long_description=dict(type="str"),
    definition=dict(type="dict"),
    prune=dict(type="bool", default=False),
    force=FORCE_ARG,
    state=STATE_ARG,
)


def plan_constraints(bulk, fields):
    """The option constraints of a plan module: the single form (``name``
    and ``fields``, or ``definition``) or the bulk list ``bulk``; prune only
    with the bulk list."""
    return dict(
        mutually_exclusive=[(bulk, "definition"), (bulk, "name")] + [("definition", f) for f in fields]
        + [(bulk, f) for f in fields],
        required_one_of=[("name", "definition", bulk)],
        required_if=[("prune", True, (bulk,))])


def argument_spec(connection=True, **extra):
    """The connection options (unless ``connection`` is false) plus the
    module's own ``extra`` options."""
    spec = copy.deepcopy(CONNECTION_ARGS) if connection else {}
    spec.update(copy.deepcopy(extra))
    return spec
