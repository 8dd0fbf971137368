# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The standard backend (routers + the broker pool, converged from the
control host) behind the interface of ``module_utils/backends.py``, and the
rule that says which spaces are standard ones. No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.enmasse.messaging.plugins.module_utils.backends import Backend
from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue import service as _catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import (
    REQUIRED_CONNECTION, connection_file_path, read_connection_file)
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.backend import KeycloakUsers
from ansible_collections.enmasse.messaging.plugins.module_utils.model import requests as _requests
from ansible_collections.enmasse.messaging.plugins.module_utils.model.inputs import space_input
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import infra as _infra
from ansible_collections.enmasse.messaging.plugins.module_utils.standard import service as _service


def is_standard(params, space_name, type_hint=None, absent=False):
    """Whether the modules treat ``space_name`` as a standard space: its
    connection file, the task (``type``) or this control host's ledger says
    so; with ``absent``, also a space nothing knows here (no broker connection
    in the task either): deleted already, a second state=absent changes nothing."""
    data = read_connection_file(connection_file_path(params, space_name)) or {}
    if data.get("type"):
        # a space that exists keeps its backend: a task that says otherwise gets the immutability error
        return data["type"] == "standard"
    if type_hint is not None:
        return type_hint == "standard"
    path = params.get("infrastructure_file") or _infra.DEFAULT_INFRA_FILE
    if os.path.exists(path):
        try:
            infra = _infra.load_infra(path)
        except Exception:  # pylint: disable=broad-except
            return False
        if os.path.exists(_infra.ledger_path(infra, space_name)):
            return True
        return absent and not any(params.get(k) for k in REQUIRED_CONNECTION)
    return False


def open_space(params, name, hide):
    """Ledger, service, catalogue store and catalogue of a standard space."""
    infra, ledger, service = _service.open_space(params, name, hide)
    store, catalogue = _catalogue.load_catalogue(params, {"catalogue_path": params.get("catalogue_path")
                                                          or infra.get("catalogue_path")})
    return ledger, service, store, catalogue


class StandardBackend(KeycloakUsers, Backend):

    name = "standard"

    def address_space(self, request):
        params, check_mode = request.params, request.check_mode
        name = params["name"]
        ledger, service, store, catalogue = open_space(params, name, request.hide)
        conn_file = connection_file_path(params, name)
        if params["state"] == "absent":
            other = store.address_spaces.get(name) or {}
            if not ledger.exists and other.get("type") not in (None, "standard"):
                raise ServiceError("address space %r is a %s space (plan catalogue %s, ledger %s), not a standard "
                                   "one: its connection file %s is missing; set its connection options to delete it"
                                   % (name, other["type"], store.path, other.get("ledger_path"), conn_file))
            result = _service.delete_space(service, ledger, name, catalogue, force=params["force"],
                                           check_mode=check_mode, connection_file=conn_file)
            _catalogue.unregister_space(store, name, check_mode)
            return result
        desired = space_input(params, ledger.space, {})
        if desired.get("type") != "standard":
            raise ServiceError(_requests.type_change_error("standard", desired.get("type")))
        if not check_mode and _catalogue.registration_needed(store, desired, ledger.path):
            store.check_writable()
        result = _service.converge_space(service, ledger, desired, catalogue, connection_file=conn_file,
                                         check_mode=check_mode)
        _catalogue.register_space(store, desired, ledger.path, check_mode)
        return result

    def address_space_info(self, request):
        name = request.params["name"]
        unused, ledger, service = _service.open_space(request.params, name, request.hide)
        return {"changed": False, "address_space": _service.space_info(service, ledger, name)}

    def address(self, request):
        params = request.params
        name = params["address_space"]
        ledger, service, unused, catalogue = open_space(params, name, request.hide)
        space = _service.space_of(ledger, name)
        if not space["plan"]:
            raise ServiceError("the plan of address space %r is not known: create it with "
                               "enmasse.messaging.address_space (type standard) first" % name)
        return _service.converge_addresses(service, ledger, space, catalogue, request.present, request.absent,
                                           prune=params["prune"], force=params["force"],
                                           check_mode=request.check_mode, report=request.report,
                                           positions=request.positions, diff_mode=request.diff)

    def address_info(self, request):
        params = request.params
        name = params["address_space"]
        ledger, service, unused, catalogue = open_space(params, name, request.hide)
        return {"changed": False, "addresses": _service.address_info(service, ledger, _service.space_of(ledger, name),
                                                                     catalogue, params.get("addresses"))}
