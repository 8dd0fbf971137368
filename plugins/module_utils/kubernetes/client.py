# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes API client of the backend: EnMasse's custom resources by
raw paths over the ``kubernetes`` package's ApiClient (its authentication,
TLS, proxy and token refresh; no discovery round trip, no model classes).

* ``list`` (one request, every page), ``get``, ``apply`` (server-side apply
  with the collection's field manager, ``force`` only when asked, ``dryRun=All``
  in check mode), ``delete`` (with the object's uid as precondition);
* errors become ``KubeError`` with one message naming the object, what the
  server said and what to do: a missing CRD, RBAC, a conflict with another
  field manager (the fields and their managers), a schema violation.

No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError

try:
    from kubernetes import client as _kclient
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - connection.resolve reports it
    _kclient = None
    ApiException = Exception

FIELD_MANAGER = "enmasse.messaging"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_LABELS = {MANAGED_BY: FIELD_MANAGER}
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
LIST_PAGE = 5000

# kind -> (group, version, plural)
RESOURCES = {
    "AddressSpace": ("enmasse.io", "v1beta1", "addressspaces"),
    "Address": ("enmasse.io", "v1beta1", "addresses"),
    "AddressPlan": ("admin.enmasse.io", "v1beta2", "addressplans"),
    "AddressSpacePlan": ("admin.enmasse.io", "v1beta2", "addressspaceplans"),
    "MessagingUser": ("user.enmasse.io", "v1beta1", "messagingusers"),
}
CRD_HINT = ("install the CRDs first (the role enmasse.messaging.kubernetes_crds, or kubectl apply -f "
            "roles/kubernetes_crds/files/crds/)")
RBAC_HINT = "the identity needs the RBAC of roles/kubernetes_crds (ClusterRole enmasse-messaging-manager)"


class KubeError(ClientError):
    """The API server refused or could not be reached. ``status``: the HTTP
    status (None when unreachable); ``conflicts``: [(field, manager)] of a
    field manager conflict."""

    def __init__(self, errors, status=None, conflicts=None, result=None):
        super(KubeError, self).__init__(errors, result)
        self.status = status
        self.conflicts = conflicts or []


def api_version(kind):
    group, version, unused = RESOURCES[kind]
    return "%s/%s" % (group, version)


def _status_body(exc):
    try:
        body = json.loads(exc.body) if getattr(exc, "body", None) else {}
    except (TypeError, ValueError):
        body = {}
    return body if isinstance(body, dict) else {}


def conflicts_of(body):
    """[(field, message)] of a 409 apply conflict (Status.details.causes)."""
    out = []
    for cause in ((body.get("details") or {}).get("causes") or []):
        if cause.get("type") == "FieldManagerConflict":
            out.append((cause.get("field"), cause.get("message")))
    return out


class KubeClient(object):
    """EnMasse's resources in one namespace of one cluster."""

    def __init__(self, connection, workers=16):
        cfg = connection.configuration
        cfg.connection_pool_maxsize = max(workers, 4)
        self.api = _kclient.ApiClient(cfg)
        self.namespace = connection.namespace
        self.timeout = connection.timeout
        self.host = cfg.host
        self.source = connection.source
        self.requests = 0

    # ------------------------------------------------------------ plumbing
    def path(self, kind, name=None, subresource=None, namespace=None):
        group, version, plural = RESOURCES[kind]
        p = "/apis/%s/%s/namespaces/%s/%s" % (group, version, namespace or self.namespace, plural)
        if name is not None:
            p += "/" + name
        if subresource:
            p += "/" + subresource
        return p

    def request(self, method, path, query=None, body=None, content_type=None, what=None):
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        self.requests += 1
        try:
            resp = self.api.call_api(path, method, query_params=list((query or {}).items()), header_params=headers,
                                     body=body, auth_settings=["BearerToken"], _preload_content=False,
                                     _return_http_data_only=True, _request_timeout=self.timeout)
        except ApiException as e:
            raise self._error(e, method, what or path)
        except Exception as e:  # urllib3: refused, TLS, timeouts
            raise KubeError(["cannot reach the Kubernetes API server at %s (%s): %s"
                             % (self.host, self.source, _short(e))])
        data = resp.data
        return json.loads(data) if data else {}

    def _error(self, exc, method, what):
        body = _status_body(exc)
        status = exc.status
        msg = body.get("message") or exc.reason or str(exc)
        if status == 409 and method == "PATCH":
            conflicts = conflicts_of(body)
            if conflicts:
                return KubeError(["%s: %s" % (what, msg)], status, conflicts)
        if status == 404 and body.get("details", {}).get("name") is None and "could not find the requested" in msg:
            return KubeError(["%s: the cluster does not serve this kind (%s): %s" % (what, msg, CRD_HINT)], status)
        if status in (401, 403):
            return KubeError(["%s: %s (HTTP %d): %s" % (what, msg, status, RBAC_HINT)], status)
        return KubeError(["%s: %s (HTTP %s)" % (what, msg, status)], status)

    # ------------------------------------------------------------ reading
    def list(self, kind, label_selector=None):
        """(items, resourceVersion) of ``kind`` in the namespace, every page."""
        items, token, rv = [], None, None
        while True:
            query = {"limit": LIST_PAGE}
            if token:
                query["continue"] = token
            if label_selector:
                query["labelSelector"] = label_selector
            data = self.request("GET", self.path(kind), query, what="list %s in namespace %s" % (kind, self.namespace))
            items.extend(data.get("items") or [])
            meta = data.get("metadata") or {}
            rv = meta.get("resourceVersion", rv)
            token = meta.get("continue")
            if not token:
                return items, rv

    def get(self, kind, name):
        """The object, or None when it does not exist."""
        try:
            return self.request("GET", self.path(kind, name), what="%s %s/%s" % (kind, self.namespace, name))
        except KubeError as e:
            if e.status == 404 and "does not serve" not in str(e):
                return None
            raise

    # ------------------------------------------------------------ changing
    def apply(self, document, force=False, dry_run=False):
        """Server-side apply of ``document`` (a full object: apiVersion, kind,
        metadata.name, the fields we own); returns the object as stored (or
        as it would be, with ``dry_run``)."""
        kind, name = document["kind"], document["metadata"]["name"]
        query = {"fieldManager": FIELD_MANAGER, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", self.path(kind, name), query, body=document, content_type=APPLY_CONTENT_TYPE,
                            what="%s %s/%s" % (kind, self.namespace, name))

    def delete(self, kind, name, uid=None, dry_run=False):
        """Delete the object (only the one with ``uid``, when given); False
        when it was already gone."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if uid:
            body["preconditions"] = {"uid": uid}
        query = {"dryRun": "All"} if dry_run else None
        try:
            self.request("DELETE", self.path(kind, name), query, body=body,
                         what="delete %s %s/%s" % (kind, self.namespace, name))
        except KubeError as e:
            if e.status == 404:
                return False
            raise
        return True

    def write_status(self, kind, name, status, manager="enmasse-test-operator"):
        """Write ``status`` through the /status subresource, as an operator
        does (the tests play the operator with it)."""
        group, version, unused = RESOURCES[kind]
        doc = {"apiVersion": "%s/%s" % (group, version), "kind": kind, "metadata": {"name": name}, "status": status}
        return self.request("PATCH", self.path(kind, name, "status"), {"fieldManager": manager, "force": "true"},
                            body=doc, content_type=APPLY_CONTENT_TYPE, what="status of %s %s" % (kind, name))


def _short(exc):
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "..."
