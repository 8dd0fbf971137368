# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The entry points for ``backend: kubernetes``: ``selected(params)``, the
``KubernetesBackend`` of ``module_utils/backends.py`` (address spaces,
addresses, messaging users), and the plan modules' ``plans(kind)`` / ``plan_info(kind)``.

Every input is read and checked by the same code as on hosts
(``backends.prepare``, ``model/inputs.py``, in the same order, with the same
messages) before the cluster is contacted; then ``service.py`` /
``plans.py`` run against the namespace. No Ansible imports (a
``request.Request`` carries params, check mode and secret masking).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.enmasse.messaging.plugins.module_utils.args import CATALOGUE_ARGS, CONNECTION_ARGS
from ansible_collections.enmasse.messaging.plugins.module_utils.backends import Backend
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError, ValidationError
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import connection as _connection
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import plans as _plans
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import service as _service
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import users as _users
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.args import APPLY_KEYS, CONNECTION_KEYS
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import (
    FIELD_MANAGER, MANAGED_BY, KubeClient)
from ansible_collections.enmasse.messaging.plugins.module_utils.model.inputs import space_input
from ansible_collections.enmasse.messaging.plugins.module_utils.model.names import username_errors
from ansible_collections.enmasse.messaging.plugins.module_utils.model.users import secrets_of, user_inputs

# the hosts backend's options that mean nothing on a cluster (timeout does:
# the timeout of one API request)
HOST_ONLY = tuple(k for k in list(CONNECTION_ARGS) + list(CATALOGUE_ARGS) if k != "timeout")


def selected(params):
    """True for ``backend: kubernetes``. With ``backend: hosts``, a
    kubernetes option given is an error (it would be ignored)."""
    if params.get("backend") == "kubernetes":
        return True
    given = sorted(k for k in CONNECTION_KEYS if params.get(k) is not None)
    given += sorted(k for k in APPLY_KEYS if k in ("force_conflicts", "wait") and params.get(k))
    if given:
        raise ConfigError("%s: only used with backend: kubernetes (this task uses backend: hosts)" % ", ".join(given))
    return False


def _host_options_errors(params):
    given = sorted(k for k in HOST_ONLY if params.get(k) is not None)
    if given:
        return ["%s: hosts backend option(s), not used with backend: kubernetes (the cluster is given by "
                "kubeconfig, context, host, api_key, ... and namespace)" % ", ".join(given)]
    return []


def user_secrets(params):
    """Every password of the task as given and base64-encoded (as the
    objects carry it), to be masked in the output."""
    found = secrets_of(params)
    return found + [_users.encode(s) for s in found]


def _documents(params, bulk_key):
    """(where, document) of the task's input documents: ``definition`` and
    the items under ``bulk_key`` (a List document stands for its items)."""
    given = [("definition", params.get("definition"))]
    bulk = (params.get(bulk_key) if bulk_key else None) or []
    given += [("%s[%d]" % (bulk_key, i), d) for i, d in enumerate(bulk)]
    for where, doc in given:
        if isinstance(doc, dict) and str(doc.get("kind") or "").endswith("List") and isinstance(doc.get("items"), list):
            for j, item in enumerate(doc["items"]):
                yield "%s.items[%d]" % (where, j), item
        elif isinstance(doc, dict):
            yield where, doc


def metadata_warnings(params, bulk_key, namespace):
    """What the objects do not take from the input documents: their labels
    and annotations (the collection sets only its own label), another
    ``metadata.namespace`` (the objects go to the task's namespace)."""
    dropped, moved = [], []
    for where, doc in _documents(params, bulk_key):
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            continue
        keys = [k for k in ("labels", "annotations") if meta.get(k)]
        if keys:
            dropped.append("%s.metadata.%s" % (where, " and ".join(keys)))
        if meta.get("namespace") not in (None, "", namespace):
            moved.append("%s.metadata.namespace %r" % (where, meta["namespace"]))
    out = []
    if dropped:
        out.append("%s: not applied: the objects get only the collection's label %s=%s (set other labels and "
                   "annotations with kubernetes.core.k8s)" % (_some(dropped), MANAGED_BY, FIELD_MANAGER))
    if moved:
        out.append("%s: ignored: the objects are made in namespace %r (the namespace option)"
                   % (_some(moved), namespace))
    return out


def _some(items, shown=10):
    return ", ".join(items[:shown]) + (" and %d more" % (len(items) - shown) if len(items) > shown else "")


def _with_warnings(result, warnings):
    if warnings:
        result["warnings"] = warnings + list(result.get("warnings") or [])
    return result


def client_for(request):
    """The cluster connection of the request, its secrets masked."""
    request.hide(_connection.secrets_of(request.params))
    return KubeClient(_connection.resolve(request.params))


class KubernetesBackend(Backend):
    """The kubernetes backend behind ``module_utils/backends.py``: the
    request is checked as on hosts (``backends.prepare``), then against the
    options that mean nothing on a cluster."""

    name = "kubernetes"

    def check(self, request, operation):
        return _host_options_errors(request.params)

    def address(self, request):
        p = request.params
        client = client_for(request)
        return _with_warnings(_service.converge_addresses(
            client, p["address_space"], request.present, request.absent, prune=p["prune"], force=p["force"],
            force_conflicts=p["force_conflicts"], check_mode=request.check_mode, report=request.report,
            positions=request.positions, wait=p["wait"], wait_timeout=p["wait_timeout"]),
            metadata_warnings(p, "addresses", client.namespace))

    def address_info(self, request):
        p = request.params
        return {"changed": False, "addresses": _service.address_info(client_for(request), p["address_space"],
                                                                     p["addresses"], p["include_unowned"])}

    def address_space(self, request):
        p = request.params
        if p["state"] == "present":
            space_input(p, None, {})  # its refusals before the cluster is read
        client = client_for(request)
        if p["state"] == "absent":
            return _service.delete_space(client, p["name"], force=p["force"], check_mode=request.check_mode,
                                         wait=p["wait"], wait_timeout=p["wait_timeout"])
        unused, live = _service.read_space(client, p["name"])
        desired = space_input(p, live, {})
        return _with_warnings(_service.converge_space(client, desired, force_conflicts=p["force_conflicts"],
                                                      check_mode=request.check_mode, wait=p["wait"],
                                                      wait_timeout=p["wait_timeout"]),
                              metadata_warnings(p, None, client.namespace))

    def address_space_info(self, request):
        return {"changed": False, "address_space": _service.space_info(client_for(request), request.params["name"])}

    def messaging_user(self, request):
        """MessagingUser objects (kubernetes/users.py); the users are read and
        checked by the host backends' model (model/users.py) first."""
        p = request.params
        request.hide(user_secrets(p))
        space, users, errors = user_inputs(p)
        if not errors and p.get("prune") and p.get("users") is None and p.get("definition") is None:
            errors = ["prune: true needs the bulk form (users or a MessagingUserList definition)"]
        errors = errors + _users.kubernetes_errors(space, users)  # every violation at once
        if errors:
            raise ValidationError(errors)
        client = client_for(request)
        result = _with_warnings(_users.converge(
            client, space, users, prune=bool(p.get("prune")),
            update_password=p.get("update_password") or "always", force_conflicts=p["force_conflicts"],
            check_mode=request.check_mode, wait=p["wait"], wait_timeout=p["wait_timeout"]),
            metadata_warnings(p, "users", client.namespace))
        if not request.diff:
            result.pop("diff", None)
        return result

    def messaging_user_info(self, request):
        p = request.params
        names = p.get("usernames") or []
        errors = [e for i, n in enumerate(names) for e in username_errors(n, "usernames[%d]" % i)]
        if errors:
            raise ValidationError(errors)
        return _users.info(client_for(request), p["address_space"], names)


def plans(kind):
    """The address_plan / address_space_plan module (``kind``:
    catalogue.service.ADDRESS_PLANS or SPACE_PLANS)."""
    def run(request):
        errors = _host_options_errors(request.params)
        if errors:
            raise ValidationError(errors)
        client = client_for(request)
        return _with_warnings(_plans.converge_plans(client, request.params, kind, request.check_mode),
                              metadata_warnings(request.params, kind, client.namespace))
    return run


def plan_info(kind):
    def run(request):
        errors = _host_options_errors(request.params)
        if errors:
            raise ValidationError(errors)
        result = _plans.plan_info(client_for(request), kind, request.params["names"])
        result["changed"] = False
        return result
    return run
