# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes API client of the backend: EnMasse's custom resources by
raw paths over the ``kubernetes`` package's ApiClient (its authentication,
TLS, proxy and token refresh; no discovery round trip, no model classes).

* ``list`` (one request, every page), ``get``, ``apply`` (server-side apply
  with the collection's field manager, ``force`` only when asked, ``dryRun=All``
  in check mode), ``delete`` (with the object's uid as precondition);
* requests go through the ApiClient's connection pool (``request``);
* errors become ``KubeError`` with one message naming the object, what the
  server said and what to do: a missing CRD, RBAC, a conflict with another
  field manager (the fields and their managers), a schema violation.

No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ClientError

try:
    from kubernetes import client as _kclient
except ImportError:  # pragma: no cover - connection.resolve reports it
    _kclient = None

try:
    from urllib.parse import urlencode
except ImportError:  # pragma: no cover - Python 2
    from urllib import urlencode

FIELD_MANAGER = "enmasse.messaging"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_LABELS = {MANAGED_BY: FIELD_MANAGER}
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
LIST_PAGE = 5000
RETRIES_429 = 10
# continue tokens that say a server (a proxy) does not page: the Ansible Operator SDK's API proxy
UNSUPPORTED_CONTINUE = ("continue-not-supported",)
# the documents come from the model and the shipped CRDs have every field they set
# (tests/unit/test_kubernetes.py): the server skips the unknown-field check
FIELD_VALIDATION = "Ignore"

# kind -> (group, version, plural)
RESOURCES = {
    "AddressSpace": ("enmasse.io", "v1beta1", "addressspaces"),
    "Address": ("enmasse.io", "v1beta1", "addresses"),
    "AddressPlan": ("admin.enmasse.io", "v1beta2", "addressplans"),
    "AddressSpacePlan": ("admin.enmasse.io", "v1beta2", "addressspaceplans"),
    "MessagingUser": ("user.enmasse.io", "v1beta1", "messagingusers"),
}
# the kinds whose CRD has a status subresource (EnMasse 0.33's: MessagingUser only)
STATUS_SUBRESOURCE = ("MessagingUser",)
CRD_HINT = ("install the CRDs first (the role enmasse.messaging.kubernetes_crds, or kubectl apply -f "
            "roles/kubernetes_crds/files/crds/)")
AUTH_HINT = ("give a valid token (api_key, K8S_AUTH_API_KEY, e.g. kubectl create token <service account>) or "
             "client certificate, or a kubeconfig that has one")
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


def conflicts_of(body):
    """[(field, message)] of a 409 apply conflict (Status.details.causes)."""
    out = []
    for cause in ((body.get("details") or {}).get("causes") or []):
        if (cause.get("reason") or cause.get("type")) == "FieldManagerConflict":
            out.append((cause.get("field"), cause.get("message")))
    return out


class KubeClient(object):
    """EnMasse's resources in one namespace of one cluster."""

    def __init__(self, connection, workers=16):
        cfg = connection.configuration
        cfg.connection_pool_maxsize = max(workers, 4)
        self.configuration = cfg
        self.api = _kclient.ApiClient(cfg)
        self.pool = self.api.rest_client.pool_manager
        self.namespace = connection.namespace
        self.timeout = connection.timeout
        self.host = cfg.host.rstrip("/")
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
        """One request through the client's urllib3 pool (its TLS and proxy
        settings), the token from the client's configuration (refreshed by
        its hook for exec/OIDC kubeconfigs); the JSON answer, or KubeError."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
            data = json.dumps(body).encode("utf-8")
        # 'authorization' (older clients) or 'BearerToken' (newer): auth_settings knows
        token = (self.configuration.auth_settings().get("BearerToken") or {}).get("value")
        if token:
            headers["Authorization"] = token
        url = self.host + path + ("?" + urlencode(sorted(query.items())) if query else "")
        for attempt in range(RETRIES_429 + 1):
            self.requests += 1
            try:
                resp = self.pool.request(method, url, body=data, headers=headers, retries=False,
                                         timeout=float(self.timeout))
            except Exception as e:  # urllib3: refused, TLS, timeouts
                raise KubeError(["cannot reach the Kubernetes API server at %s (%s): %s"
                                 % (self.host, self.source, _short(e))])
            # 429: API priority and fairness, or a cache still initializing: the server says when to retry
            if resp.status != 429 or attempt == RETRIES_429:
                break
            try:
                delay = float(resp.headers.get("Retry-After") or 1)
            except ValueError:
                delay = 1.0
            time.sleep(min(max(delay, 0.1), 2.0))
        if resp.status >= 400:
            raise self._error(resp.status, resp.reason, resp.data, method, what or path)
        return json.loads(resp.data) if resp.data else {}

    def _error(self, status, reason, data, method, what):
        try:
            body = json.loads(data) if data else {}
        except (TypeError, ValueError):
            body = {}
        body = body if isinstance(body, dict) else {}
        msg = body.get("message") or reason or "HTTP %s" % status
        if status == 409 and method == "PATCH":
            conflicts = conflicts_of(body)
            if conflicts:
                return KubeError(["%s: %s" % (what, msg)], status, conflicts)
        if status == 404 and (body.get("details") or {}).get("name") is None and "could not find the requested" in msg:
            return KubeError(["%s: the cluster does not serve this kind (%s): %s" % (what, msg, CRD_HINT)], status)
        if status == 401:
            return KubeError(["%s: %s (HTTP 401): the API server at %s did not accept the credentials from %s "
                              "(an expired or revoked token, a token or certificate of another cluster?): %s"
                              % (what, msg, self.host, self.source, AUTH_HINT)], status)
        if status == 403:
            return KubeError(["%s: %s (HTTP %d): %s" % (what, msg, status, RBAC_HINT)], status)
        return KubeError(["%s: %s (HTTP %s)" % (what, msg, status)], status)

    # ------------------------------------------------------------ reading
    def list(self, kind, label_selector=None, cached=False):
        """(items, resourceVersion) of ``kind`` in the namespace, every page.

        ``cached``: one request served from the API server's watch cache
        (``resourceVersion=0``) instead of a quorum read of etcd: a LIST of
        10,000 Addresses costs about a third. It may lag a write made
        elsewhere by milliseconds; the converger tolerates that (applies are
        idempotent upserts, deletes carry the uid as a precondition)."""
        if cached:
            query = {"resourceVersion": "0"}
            if label_selector:
                query["labelSelector"] = label_selector
            data = self.request("GET", self.path(kind), query, what="list %s in namespace %s" % (kind, self.namespace))
            return data.get("items") or [], (data.get("metadata") or {}).get("resourceVersion")
        items, token, rv, seen = [], None, None, set()
        what = "list %s in namespace %s" % (kind, self.namespace)
        while True:
            query = {"limit": LIST_PAGE}
            if token:
                query["continue"] = token
            if label_selector:
                query["labelSelector"] = label_selector
            data = self.request("GET", self.path(kind), query, what=what)
            items.extend(data.get("items") or [])
            meta = data.get("metadata") or {}
            rv = meta.get("resourceVersion", rv)
            token = meta.get("continue")
            if not token:
                return items, rv
            self._check_continue(token, seen, what)
            seen.add(token)

    def _check_continue(self, token, seen, what):
        """A paging token must be new and real: a server (or a proxy such as
        the Ansible Operator SDK's, which answers ``continue-not-supported``)
        that gives the same token again would page forever."""
        if token in UNSUPPORTED_CONTINUE or token in seen:
            raise KubeError(["%s: the server at %s (%s) does not page lists: it answered the continue token %r %s; "
                             "the list would be incomplete: talk to the API server directly, not "
                             "through a proxy that does not support paging"
                             % (what, self.host, self.source, _short(token),
                                "again" if token in seen else "(paging not supported)")])

    def namespace_exists(self):
        """True or False; None when the identity may not read namespaces
        (a RoleBinding does not grant that)."""
        try:
            self.request("GET", "/api/v1/namespaces/%s" % self.namespace, what="namespace %s" % self.namespace)
        except KubeError as e:
            if e.status == 404:
                return False
            if e.status == 403:
                return None
            raise
        return True

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
        query = {"fieldManager": FIELD_MANAGER, "force": "true" if force else "false", "fieldValidation": FIELD_VALIDATION}
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
        query = None
        if dry_run:  # the server reads DeleteOptions from the body when there is one
            body["dryRun"] = ["All"]
            query = {"dryRun": "All"}
        try:
            self.request("DELETE", self.path(kind, name), query, body=body,
                         what="delete %s %s/%s" % (kind, self.namespace, name))
        except KubeError as e:
            if e.status == 404:
                return False
            raise
        return True

    def write_status(self, kind, name, status, manager="enmasse-test-operator"):
        """Write ``status`` as EnMasse's operator does: with the object (the
        CRDs have a status subresource for MessagingUser only, as EnMasse's);
        the tests play the operator with it."""
        group, version, unused = RESOURCES[kind]
        doc = {"apiVersion": "%s/%s" % (group, version), "kind": kind, "metadata": {"name": name}, "status": status}
        sub = "status" if kind in STATUS_SUBRESOURCE else None
        return self.request("PATCH", self.path(kind, name, sub), {"fieldManager": manager, "force": "true"},
                            body=doc, content_type=APPLY_CONTENT_TYPE, what="status of %s %s" % (kind, name))


def _short(exc):
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "..."
