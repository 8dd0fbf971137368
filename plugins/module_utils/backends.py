# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One interface for the three backends, one selection, one result shape.

A module calls ``run(operation, request)``; ``operation`` is the module's
name (``address_space``, ``address_space_info``, ``address``,
``address_info``). ``run``:

1. selects the backend from the request (``select``): ``kubernetes`` when
   the task says ``backend: kubernetes``; ``standard`` when the address space
   is a standard one on this control host (its connection file, the task's
   ``type``, or its standard ledger); ``artemis`` (brokered) otherwise;
2. runs the checks every backend shares before anything is read
   (``prepare``: names, the address forms, the space parameters), then the
   backend's own (``Backend.check``);
3. calls the backend's method of that name with the request;
4. shapes the result: every address status has the keys of
   ``model/status.py`` (``message_count``/``consumers`` null where a backend
   cannot tell).

Identity, MQTT and day-2 plug in here once: a new operation is a method of
``Backend`` and an entry of ``OPERATIONS``. No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.input_files import read_addresses_file
from ansible_collections.enmasse.messaging.plugins.module_utils.model import status as _status
from ansible_collections.enmasse.messaging.plugins.module_utils.model.inputs import (
    address_inputs, check_space_name, space_params_errors)

# what the address module lists in its result (return_addresses)
REPORT_CHOICES = ("all", "changed", "none")
# operation -> the parameter that names the address space
OPERATIONS = {"address_space": "name", "address_space_info": "name",
              "address": "address_space", "address_info": "address_space",
              "messaging_user": "address_space", "messaging_user_info": "address_space"}


class Backend(object):
    """What every backend implements: one method per operation, each taking
    the prepared request and returning the module result."""

    name = None

    def check(self, request, operation):
        """The backend's own refusals before anything is read (a list)."""
        return []

    def address_space(self, request):
        raise NotImplementedError

    def address_space_info(self, request):
        raise NotImplementedError

    def address(self, request):
        raise NotImplementedError

    def address_info(self, request):
        raise NotImplementedError

    def messaging_user(self, request):
        """The host backends: keycloak/backend.py KeycloakUsers."""
        raise NotImplementedError

    def messaging_user_info(self, request):
        raise NotImplementedError


def space_name(request, operation):
    return request.params.get(OPERATIONS[operation])


def prepare(request, operation):
    """The checks every backend shares, before any backend reads anything;
    fills the request's address fields (``present``, ``absent``,
    ``positions``, ``report``). Returns the messages (none: it passed)."""
    p = request.params
    if operation == "address_space":
        return space_params_errors(p)
    check_space_name(p[OPERATIONS[operation]], OPERATIONS[operation])
    if operation != "address":
        return []
    if p.get("src") is not None:  # a copy: the invocation echoes module.params
        request.params = p = dict(p, addresses=read_addresses_file(p["src"]))
    request.present, request.absent, errors, request.positions = address_inputs(p, p["address_space"])
    request.report = p.get("return_addresses") or ("changed" if p.get("addresses") is not None else "all")
    return errors


def select(request, operation):
    """The backend of this request (see the module docstring)."""
    return kubernetes_backend(request) or host_backend(request, operation)


def kubernetes_backend(request):
    """The kubernetes backend when the task asks for it, else None (a
    kubernetes option given with ``backend: hosts`` is refused here)."""
    # imported here: a module loads the backends it can use, the unit tests of one backend load only it
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import modules as _kubernetes
    return _kubernetes.KubernetesBackend() if _kubernetes.selected(request.params) else None


def host_backend(request, operation):
    """standard or artemis: what the space is on this control host."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.standard import backend as _standard
    p = request.params
    if operation == "address_space":  # the task's type, and a second state=absent is a no-op
        standard = _standard.is_standard(p, p["name"], p.get("type"), absent=p.get("state") == "absent")
    else:
        standard = _standard.is_standard(p, space_name(request, operation))
    if standard:
        return _standard.StandardBackend()
    from ansible_collections.enmasse.messaging.plugins.module_utils.artemis import backend as _artemis
    return _artemis.ArtemisBackend()


def shape(result):
    """Every address status of ``result`` in the one shape."""
    for address in result.get("addresses") or []:
        if isinstance(address, dict) and "status" in address:
            address["status"] = _status.complete(address["status"])
    return result


def run(operation, request):
    """The module ``operation`` on the backend of ``request``."""
    if operation not in OPERATIONS:
        raise ValueError("unknown operation %r" % operation)
    backend = kubernetes_backend(request)
    errors = prepare(request, operation)
    if backend is None:
        if errors:
            raise ValidationError(errors)
        backend = host_backend(request, operation)
    errors = errors or backend.check(request, operation) or keycloak_options_errors(request, operation, backend)
    if errors:
        raise ValidationError(errors)
    realm = space_realm(request, operation, backend)
    result = getattr(backend, operation)(request)
    return shape(realm.after(request, result) if realm else result)


def keycloak_options_errors(request, operation, backend):
    """messaging_user(_info): the host backends need the Keycloak options
    (the users are in the space's realm); with backend: kubernetes they mean
    nothing (the users are MessagingUser objects in the namespace)."""
    if not operation.startswith("messaging_user"):
        return []
    from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak.args import KEYCLOAK_ARGS
    p = request.params
    if backend.name != "kubernetes":
        missing = [k for k in ("keycloak_url", "keycloak_admin_password") if p.get(k) in (None, "")]
        return ["%s: required with backend: hosts (the users are in the address space's Keycloak realm)"
                % ", ".join(missing)] if missing else []
    given = sorted(k for k in KEYCLOAK_ARGS if p.get(k) not in (None, KEYCLOAK_ARGS[k].get("default")))
    return ["%s: only used with backend: hosts (with backend: kubernetes the users are MessagingUser objects in "
            "the namespace)" % ", ".join(given)] if given else []


def space_realm(request, operation, backend):
    """The realm step of address_space on hosts (keycloak/space.py), or None."""
    if operation != "address_space":
        return None
    from ansible_collections.enmasse.messaging.plugins.module_utils.keycloak import space as _space
    return _space.space_realm(request, operation, backend)
