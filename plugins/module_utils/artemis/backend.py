# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The brokered backend (one Artemis broker per address space) behind the
interface of ``module_utils/backends.py``. No Ansible imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.args import CONNECTION_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import realm_users as _realm_users
from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import service as _service
from ansible_collections.enmasse.messaging.plugins.module_utils.backends import Backend
from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue import service as _catalogue
from ansible_collections.enmasse.messaging.plugins.module_utils.connection import (
    connection_file_path, read_connection_file)
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.backend import KeycloakUsers
from ansible_collections.enmasse.messaging.plugins.module_utils.model import status as _status
from ansible_collections.enmasse.messaging.plugins.module_utils.model.inputs import space_input


class ArtemisBackend(KeycloakUsers, Backend):

    name = "artemis"

    def address_space(self, request):
        p = request.params
        # state=present checks the (desired) type itself: it may differ from the recorded one
        conn, ledger, space, service = _service.open_space(p, p["name"], request.hide,
                                                           supported_only=p["state"] == "absent")
        store, catalogue = _catalogue.load_catalogue(p, conn)
        if p["state"] == "absent":
            result = _service.delete_space(service, ledger, p["name"], catalogue, force=p["force"],
                                           check_mode=request.check_mode)
            _catalogue.unregister_space(store, p["name"], request.check_mode)
            return result
        desired = space_input(p, ledger.space, conn)
        if not request.check_mode and _catalogue.registration_needed(store, desired, conn["ledger_path"]):
            store.check_writable()  # before the broker or the ledger change
        result = _service.converge_space(service, ledger, desired, catalogue, conn.get("endpoints") or p["endpoints"],
                                         check_mode=request.check_mode)
        _catalogue.register_space(store, desired, conn["ledger_path"], request.check_mode)
        return result

    def address_space_info(self, request):
        p = request.params
        name = p["name"]
        explicit = any(p.get(k) is not None for k in CONNECTION_ARGS)
        path = connection_file_path(p, name)
        if not explicit and read_connection_file(path) is None:
            status = {"ready": False, "phase": _status.PHASE_PENDING, "endpoints": [],
                      "messages": ["no connection file %s: the address space is not deployed" % path]}
            return {"changed": False, "address_space": _status.space_result(name, None, status)}
        conn, ledger, unused, service = _service.open_space(p, name, request.hide)
        return {"changed": False,
                "address_space": _service.space_info(service, ledger, name, conn.get("endpoints"))}

    def address(self, request):
        p = request.params
        conn, ledger, space, service = _service.open_space(p, p["address_space"], request.hide)
        if not space["plan"]:
            raise ConfigError(
                "the plan of address space %r is not known: create it with enmasse.messaging.address_space "
                "(which records it in the ledger %s) or add plan to the connection file %s"
                % (space["name"], conn["ledger_path"], conn["connection_file"]))
        unused, catalogue = _catalogue.load_catalogue(p, conn)
        result = _service.converge_addresses(service, ledger, space, catalogue, request.present, request.absent,
                                             prune=p["prune"], force=p["force"], check_mode=request.check_mode,
                                             report=request.report, positions=request.positions)
        # the realm users' security settings of every address (a new one is protected when it exists)
        names = set(ledger.addresses) | (set(a["address"] for a in request.present) if request.check_mode else set())
        secured = _realm_users.secure_addresses(service.client, conn["broker_name"], space["name"], names,
                                                check_mode=request.check_mode)
        if secured:
            result["security_settings"] = secured["security_settings"]
            result["changed"] = result["changed"] or secured["changed"]
        return result

    def broker_users(self, request, space):
        """The space's broker (docs/identity.md "Brokered spaces"), or None
        when the task reaches none (the realm only, with a warning)."""
        broker = _realm_users.open_broker(request.params, space, request.hide)
        if broker is None:
            return None, ["address space %r: no connection file %s and no management_url: only the realm was "
                          "converged, no broker knows these users yet"
                          % (space, connection_file_path(request.params, space))]
        return broker, []

    def address_info(self, request):
        p = request.params
        conn, ledger, unused, service = _service.open_space(p, p["address_space"], request.hide)
        unused, catalogue = _catalogue.load_catalogue(p, conn)
        return {"changed": False,
                "addresses": _service.address_info(service, ledger, catalogue, p["addresses"],
                                                   p["include_unowned"])}
