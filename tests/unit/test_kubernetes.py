"""The kubernetes backend's pure parts: object names as EnMasse makes them,
ownership, what needs applying, conflict messages, connection resolution
(options, K8S_AUTH_*, kubeconfig, pod service account), the shipped files
(example plans = the model's default catalogue; CRDs know every field the
collection writes)."""

import os

import pytest
import yaml

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import apply as k8s_apply
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import connection as k8s_connection
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import objects
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import modules as k8s_modules
from ansible_collections.enmasse.messaging.plugins.module_utils.model import plans as model_plans
from ansible_collections.enmasse.messaging.plugins.module_utils.model.plan_documents import from_document

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE_FILES = os.path.join(REPO, "roles", "kubernetes_crds", "files")


def test_generated_name_is_enmasses():
    # Java: UUID.nameUUIDFromBytes("orders/EU".getBytes(UTF_8)) (EnMasse's Address.generateName)
    assert objects.generated_name("myspace", "orders/EU") == "myspace.orderseu.bbf3547b-f8e4-3f6c-ab76-80f92c28dd0d"
    assert objects.sanitize_name("-Queue_1-") == "1queue11"  # as KubeUtil.sanitizeName
    assert objects.object_name("s", {"address": "a", "name": "given"}) == "s.given"
    live = {"metadata": {"name": "s.by-hand"}}
    assert objects.object_name("s", {"address": "a", "name": "given"}, live) == "s.by-hand"


def obj(labels=None, managers=(), spec=None):
    return {"metadata": {"name": "s.a", "labels": labels or {},
                         "managedFields": [{"manager": m} for m in managers]}, "spec": spec or {}}


def test_ownership_needs_label_and_field_manager():
    lab = {"app.kubernetes.io/managed-by": "enmasse.messaging"}
    assert objects.owned(obj(lab, ["enmasse.messaging"]))
    assert not objects.owned(obj(lab, ["kubectl"]))  # the label copied by hand
    assert not objects.owned(obj({}, ["enmasse.messaging"]))
    assert objects.owner(obj({}, ["kubectl", "x"])) == "kubectl"


def test_needs_apply_only_when_spec_or_labels_differ():
    doc = objects.address_object("s", {"address": "a", "type": "queue", "plan": "p"})
    live = obj(doc["metadata"]["labels"], ["enmasse.messaging"], dict(doc["spec"]))
    assert not objects.needs_apply(doc, live)
    assert objects.needs_apply(doc, None)
    assert objects.needs_apply(doc, obj(doc["metadata"]["labels"], ["enmasse.messaging"], dict(doc["spec"], plan="q")))
    assert objects.needs_apply(doc, obj({}, ["kubectl"], dict(doc["spec"])))


def test_conflict_message_names_fields_and_managers():
    msg = k8s_apply.conflict_message("addresses[0](orders)", [
        (".spec.plan", 'conflict with "ops-team" using enmasse.io/v1beta1'),
        (".spec.deadletter", 'conflict with "ops-team" using enmasse.io/v1beta1')])
    assert msg == ("addresses[0](orders): conflict: .spec.deadletter, .spec.plan owned by field manager 'ops-team'; "
                   "another manager set a different value: set force_conflicts: true to take the field(s) over")


def test_connection_from_options_and_environment(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    c = k8s_connection.resolve({"host": "https://api:6443/", "api_key": "t0k", "ca_cert": str(ca),
                                "namespace": "ns1"}, environ={})
    assert c.configuration.host == "https://api:6443" and c.namespace == "ns1"
    assert c.configuration.api_key == {"authorization": "Bearer t0k"} and c.configuration.ssl_ca_cert == str(ca)
    env = {"K8S_AUTH_HOST": "https://env:6443", "K8S_AUTH_API_KEY": "e", "K8S_AUTH_VERIFY_SSL": "no",
           "K8S_AUTH_NAMESPACE": "ns2"}
    c = k8s_connection.resolve({}, environ=env)
    assert (c.configuration.host, c.configuration.verify_ssl, c.namespace) == ("https://env:6443", False, "ns2")
    assert k8s_connection.secrets_of({}, env) == ["e"]
    # options win over the environment
    assert k8s_connection.resolve({"host": "https://opt"}, environ=env).configuration.host == "https://opt"


def test_connection_kubeconfig_context_and_pod(tmp_path):
    kc = tmp_path / "kc"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "c", "cluster": {"server": "https://kc:6443"}}],
        "users": [{"name": "u", "user": {"token": "kt"}}],
        "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}},
                     {"name": "b", "context": {"cluster": "c", "user": "u", "namespace": "fromctx"}}]}))
    c = k8s_connection.resolve({"kubeconfig": str(kc), "context": "b"}, environ={})
    assert c.configuration.host == "https://kc:6443" and c.namespace == "fromctx"
    assert k8s_connection.resolve({"kubeconfig": str(kc)}, environ={}).namespace == "default"
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("podtoken\n")
    (sa / "namespace").write_text("podns")
    c = k8s_connection.resolve({}, environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
                               sa_dir=str(sa))
    assert c.configuration.host == "https://10.0.0.1:443" and c.namespace == "podns"
    assert c.configuration.api_key == {"authorization": "Bearer podtoken"}
    with pytest.raises(ConfigError, match="no cluster to connect to"):
        k8s_connection.resolve({}, environ={"KUBECONFIG": str(tmp_path / "none")}, sa_dir=str(tmp_path / "nosa"))


def test_backend_option_checks():
    assert k8s_modules.selected({"backend": "kubernetes"})
    assert not k8s_modules.selected({"backend": "hosts", "wait": False, "force_conflicts": False})
    with pytest.raises(ConfigError, match="kubeconfig, wait: only used with backend: kubernetes"):
        k8s_modules.selected({"backend": "hosts", "kubeconfig": "/x", "wait": True})


def test_example_plans_file_is_the_default_catalogue():
    with open(os.path.join(ROLE_FILES, "example-plans.yaml")) as f:
        docs = yaml.safe_load(f)["items"]
    cat = model_plans.Catalogue.default()
    got = {"AddressPlan": {}, "AddressSpacePlan": {}}
    for d in docs:
        reader = model_plans.read_address_plan if d["kind"] == "AddressPlan" else model_plans.read_space_plan
        plan, errs = reader(d)
        assert not errs
        got[d["kind"]][plan["name"]] = plan
    assert got["AddressPlan"] == dict((n, cat.address_plan(n)) for n in cat.address_plan_names())
    assert got["AddressSpacePlan"] == dict((n, cat.address_space_plan(n)) for n in cat.address_space_plan_names())


def _schema_paths(schema, prefix=""):
    out = set()
    for k, v in (schema.get("properties") or {}).items():
        out.add(prefix + k)
        out |= _schema_paths(v, prefix + k + ".")
    return out


def test_crds_know_every_field_the_collection_writes():
    """A field missing from a structural schema is pruned by the server: the
    collection would apply it again on every run."""
    crds = {}
    for f in os.listdir(os.path.join(ROLE_FILES, "crds")):
        with open(os.path.join(ROLE_FILES, "crds", f)) as fh:
            d = yaml.safe_load(fh)
        crds[d["spec"]["names"]["kind"]] = _schema_paths(d["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    addr = objects.address_object("s", {"address": "a", "type": "subscription", "plan": "p", "topic": "t",
                                        "deadletter": "d", "expiry": "e", "message_ttl": {"minimum": 1, "maximum": 2},
                                        "message_redelivery": {"maximum_delivery_attempts": 1, "redelivery_delay": 1,
                                                               "redelivery_delay_multiplier": 1.5,
                                                               "maximum_delivery_delay": 9},
                                        "subscription": {"max_consumers": 2}})
    for key, value in addr["spec"].items():
        assert "spec." + key in crds["Address"]
        for sub in (value if isinstance(value, dict) else {}):
            assert "spec.%s.%s" % (key, sub) in crds["Address"]
    for kind, plan in (("AddressPlan", {"name": "p", "address_type": "queue", "address_space_type": "brokered",
                                        "resources": {"broker": 0.1}, "partitions": 1, "display_name": "P",
                                        "message_ttl": {"maximum": 5}, "message_redelivery": {"redelivery_delay": 1}}),
                       ("AddressSpacePlan", {"name": "s", "address_space_type": "brokered", "address_plans": ["p"],
                                             "resource_limits": {"broker": 1}, "infra_config_ref": "default"})):
        from ansible_collections.enmasse.messaging.plugins.module_utils.model.plan_documents import to_document
        doc = to_document(plan, kind)
        for key in doc["spec"]:
            assert "spec." + key in crds[kind], (kind, key)
        assert from_document(doc, kind)[1] == []
    assert "status.messageCount" in crds["Address"] and "status.isReady" in crds["AddressSpace"]


# ------------------------------------------------------------------ the client against a scripted HTTP server

class FakeServer(object):
    """A scripted HTTP server on a loopback port: ``answer(method, path,
    query, body)`` returns (status, json body); every request is recorded."""

    def __init__(self, answer):
        import http.server
        import json
        import threading
        from urllib.parse import parse_qs, urlsplit
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self):
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                query = dict((k, v[0]) for k, v in parse_qs(url.query).items())
                server.requests.append((self.command, url.path, query, body))
                status, out = answer(self.command, url.path, query, body)
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            do_GET = do_PATCH = do_DELETE = do_POST = _any

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def client(self, namespace="ns"):
        from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeClient
        return KubeClient(k8s_connection.resolve({"host": self.host, "namespace": namespace, "timeout": 5},
                                                 environ={}))

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server():
    servers = []

    def make(answer):
        servers.append(FakeServer(answer))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def _page(items, token):
    return {"kind": "AddressPlanList", "metadata": {"resourceVersion": "7", "continue": token}, "items": items}


@pytest.mark.parametrize("token", ["continue-not-supported", "same-token-every-time"])
def test_list_stops_on_a_repeated_or_unsupported_continue_token(fake_server, token):
    """A proxy that answers every page with the same continue token (the
    Ansible Operator SDK's: continue-not-supported) must not page forever."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeError

    def answer(method, path, query, body):  # after 20 pages the last one: the old loop ends instead of hanging
        return 200, _page([{"metadata": {"name": "p"}}], token if len(srv.requests) < 20 else None)
    srv = fake_server(answer)
    with pytest.raises(KubeError) as e:
        srv.client().list("AddressPlan")
    assert len(srv.requests) <= 2, len(srv.requests)
    msg = str(e.value)
    assert "list AddressPlan in namespace ns" in msg and "does not page lists" in msg and repr(token) in msg, msg


def test_list_follows_real_continue_tokens(fake_server):
    pages = {None: _page([{"n": 1}], "t1"), "t1": _page([{"n": 2}], "t2"), "t2": _page([{"n": 3}], None)}
    srv = fake_server(lambda method, path, query, body: (200, pages[query.get("continue")]))
    items, rv = srv.client().list("AddressPlan")
    assert [i["n"] for i in items] == [1, 2, 3] and rv == "7" and len(srv.requests) == 3


def _plan_obj(name, manager, labels=None):
    return {"apiVersion": "admin.enmasse.io/v1beta2", "kind": "AddressPlan",
            "metadata": {"name": name, "uid": "u-" + name, "labels": labels or {},
                         "managedFields": [{"manager": manager, "operation": "Apply"}]},
            "spec": {"addressType": "queue", "resources": {"broker": 0.1}}}


def _plans_server(fake_server, objs):
    def answer(method, path, query, body):
        if method == "GET":
            kind_items = [o for o in objs if path.endswith("/addressplans")]
            return 200, {"metadata": {"resourceVersion": "1"}, "items": kind_items}
        return 200, {"kind": "Status", "status": "Success"}
    return fake_server(answer)


@pytest.mark.parametrize("check_mode", [False, True])
def test_plan_absent_deletes_only_the_collections_plans(fake_server, check_mode):
    from ansible_collections.enmasse.messaging.plugins.module_utils.catalogue import service as catalogue
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import plans as k8s_plans
    mine = _plan_obj("mine-queue", "enmasse.messaging", {"app.kubernetes.io/managed-by": "enmasse.messaging"})
    srv = _plans_server(fake_server, [_plan_obj("brokered-queue", "enmasse.messaging-examples"),
                                      _plan_obj("hand-queue", "kubectl"), mine])
    params = {"state": "absent", "address_plans": ["brokered-queue", "hand-queue", "mine-queue"]}
    r = k8s_plans.converge_plans(srv.client(), params, catalogue.ADDRESS_PLANS, check_mode)
    deletes = [p for m, p, q, b in srv.requests if m == "DELETE"]
    assert deletes == ["/apis/admin.enmasse.io/v1beta2/namespaces/ns/addressplans/mine-queue"], srv.requests
    assert r["changes"]["deleted"] == ["mine-queue"] and r["changed"]
    assert r["warnings"] == ["not deleted, not made by this collection: AddressPlan brokered-queue (owner: "
                             "enmasse.messaging-examples), AddressPlan hand-queue (owner: kubectl)"]


def test_object_name_limit_is_on_space_dot_name():
    """253 characters for the whole metadata.name <space>.<name>, not the name part
    alone: the API server refuses a longer object (after others of the task were made)."""
    from ansible_collections.enmasse.messaging.plugins.module_utils.model import validation
    from ansible_collections.enmasse.messaging.plugins.module_utils.model.inputs import address_inputs
    name = ".".join(["a" * 60] * 4) + ".bbbbbbbb"  # every component within 60
    assert len(name) == 252
    space = {"name": "s1", "type": "brokered", "plan": "brokered-single-broker"}
    ok = {"address": "q", "type": "queue", "plan": "brokered-queue", "name": name[:250]}
    bad = dict(ok, address="r", name=name)  # s1.<name> is 255 characters
    errs = validation.validate_addresses(space, [ok, bad], model_plans.Catalogue.default())
    assert len(errs) == 1 and errs[0].startswith("addresses[1](r).name: ") and \
        "is 252 characters long: the object name s1.<name> would be 255 characters, at most 253 are " \
        "allowed (250 for the name)" in errs[0], errs
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "s1." + name},
           "spec": {"address": "q", "type": "queue", "plan": "brokered-queue"}}
    errs = address_inputs({"addresses": [doc], "state": "present"}, "s1")[2]
    assert len(errs) == 1 and "s1.<name> would be 255 characters" in errs[0], errs


class FakeApi(object):
    """A namespace of EnMasse objects behind the scripted server: LIST, GET,
    server-side apply (PATCH, the field manager recorded), DELETE."""

    def __init__(self, fake_server, plans=True):
        self.objects = {}
        if plans:
            with open(os.path.join(ROLE_FILES, "example-plans.yaml")) as f:
                for doc in yaml.safe_load(f)["items"]:
                    self.put(doc, "enmasse.messaging-examples")
        self.server = fake_server(self.answer)

    @staticmethod
    def plural(kind):
        from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import RESOURCES
        return RESOURCES[kind][2]

    def put(self, doc, manager):
        import copy
        obj = copy.deepcopy(doc)
        obj["metadata"].setdefault("uid", "uid-" + obj["metadata"]["name"])
        obj["metadata"]["managedFields"] = [{"manager": manager, "operation": "Apply"}]
        self.objects.setdefault(self.plural(obj["kind"]), {})[obj["metadata"]["name"]] = obj
        return obj

    def answer(self, method, path, query, body):
        parts = path.split("/")  # '', apis, group, version, namespaces, ns, plural[, name]
        if parts[1] == "api":  # core API: namespaces, which the fake does not have
            return 404, {"kind": "Status", "reason": "NotFound", "details": {"name": parts[-1]}, "message": "nf"}
        store = self.objects.setdefault(parts[6], {})
        name = parts[7] if len(parts) > 7 else None
        if method == "GET" and name is None:
            return 200, {"metadata": {"resourceVersion": "1"}, "items": list(store.values())}
        if method == "PATCH":
            obj = dict(body, metadata=dict(body["metadata"]))
            return 200, obj if query.get("dryRun") else self.put(obj, query.get("fieldManager"))
        if name not in store:
            return 404, {"kind": "Status", "reason": "NotFound", "details": {"name": name}, "message": "not found"}
        if method == "DELETE":
            if not query.get("dryRun"):
                store.pop(name)
            return 200, {"kind": "Status", "status": "Success"}
        return 200, store[name]

    def writes(self):
        return [(m, p) for m, p, q, b in self.server.requests if m in ("PATCH", "POST", "DELETE")]


def _brokered_space(api):
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import objects as k8s_objects
    api.put(k8s_objects.space_object({"name": "shop", "type": "brokered", "plan": "brokered-single-broker"}),
            "enmasse.messaging")


def test_two_objects_with_one_address_are_refused_naming_both(fake_server):
    from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ServiceError
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import service
    api = FakeApi(fake_server)
    _brokered_space(api)
    queue = {"address": "orders", "type": "queue", "plan": "brokered-queue"}
    api.put(objects.address_object("shop", queue), "enmasse.messaging")
    api.put({"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "shop.zz-by-hand"},
             "spec": dict(queue)}, "kubectl")
    for kwargs in ({"present": [queue], "absent": []}, {"present": [], "absent": ["orders"]},
                   {"present": [], "absent": [], "prune": True}):
        with pytest.raises(ServiceError) as e:
            service.converge_addresses(api.server.client(), "shop", **kwargs)
        assert ("address 'orders': Address objects shop.orders.%s, shop.zz-by-hand in namespace 'ns' all have "
                "spec.address 'orders'" % objects.generated_name("shop", "orders").split(".", 2)[2]) in str(e.value)
    assert api.writes() == []
    # another address of the space is not held up by it
    r = service.converge_addresses(api.server.client(), "shop", [{"address": "q2", "type": "queue",
                                                                  "plan": "brokered-queue"}], [])
    assert r["changes"]["created"] == ["q2"]


# ------------------------------------------------------------------ messages

def test_401_is_bad_credentials_not_rbac(fake_server):
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeError
    srv = fake_server(lambda m, p, q, b: (401, {"kind": "Status", "message": "Unauthorized", "code": 401}))
    with pytest.raises(KubeError) as e:
        srv.client().get("AddressSpace", "shop")
    msg = str(e.value)
    assert "Unauthorized (HTTP 401): the API server at %s did not accept the credentials from host %s" \
        % (srv.host, srv.host) in msg and "RBAC" not in msg and "valid token" in msg, msg
    srv = fake_server(lambda m, p, q, b: (403, {"kind": "Status", "message": "forbidden: no", "code": 403}))
    with pytest.raises(KubeError, match="HTTP 403.*ClusterRole enmasse-messaging-manager"):
        srv.client().get("AddressSpace", "shop")


@pytest.mark.parametrize("params,env", [({"host": "127.0.0.1:6443"}, {}), ({}, {"K8S_AUTH_HOST": "api.example:6443"})])
def test_host_without_scheme_is_refused(params, env):
    with pytest.raises(ConfigError, match=r"host: '[^']*' has no scheme: give the API server's URL, e\.g\. https://"):
        k8s_connection.resolve(params, environ=env)


def test_missing_namespace_is_named_not_an_unknown_plan(fake_server):
    from ansible_collections.enmasse.messaging.plugins.module_utils.errors import EnmasseError
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import service
    api = FakeApi(fake_server, plans=False)
    desired = {"name": "shop", "type": "brokered", "plan": "brokered-single-broker"}
    with pytest.raises(EnmasseError) as e:  # the fake has no namespaces: GET /api/v1/namespaces/ns is a 404
        service.converge_space(api.server.client(), desired)
    assert str(e.value).startswith("namespace 'ns' does not exist on http://127.0.0.1:"), str(e.value)
    with pytest.raises(EnmasseError, match="namespace 'ns' does not exist"):
        service.converge_addresses(api.server.client(), "shop", [{"address": "q", "type": "queue",
                                                                  "plan": "brokered-queue"}], [])
    assert api.writes() == []


def test_input_documents_metadata_not_applied_is_said():
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address",
           "metadata": {"name": "shop.a", "namespace": "elsewhere", "labels": {"team": "x"}, "annotations": {"a": "b"}},
           "spec": {"address": "a", "type": "queue", "plan": "brokered-queue"}}
    lst = {"apiVersion": "enmasse.io/v1beta1", "kind": "AddressList", "items": [{"address": "b"}, doc]}
    params = {"addresses": [{"address": "c"}, lst, dict(doc, metadata={"name": "shop.n", "namespace": "ns"})]}
    assert k8s_modules.metadata_warnings(params, "addresses", "ns") == [
        "addresses[1].items[1].metadata.labels and annotations: not applied: the objects get only the collection's "
        "label app.kubernetes.io/managed-by=enmasse.messaging (set other labels and annotations with "
        "kubernetes.core.k8s)",
        "addresses[1].items[1].metadata.namespace 'elsewhere': ignored: the objects are made in namespace 'ns' "
        "(the namespace option)"]
    assert k8s_modules.metadata_warnings({"definition": dict(doc, metadata={"labels": {"l": "1"}})}, None, "ns") == [
        "definition.metadata.labels: not applied: the objects get only the collection's label "
        "app.kubernetes.io/managed-by=enmasse.messaging (set other labels and annotations with kubernetes.core.k8s)"]


def test_prune_names_the_addresses_it_leaves(fake_server):
    from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import service
    api = FakeApi(fake_server)
    _brokered_space(api)
    api.put({"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "shop.by-hand"},
             "spec": {"address": "by-hand", "type": "queue", "plan": "brokered-queue"}}, "kubectl")
    r = service.converge_addresses(api.server.client(), "shop", [], [], prune=True)
    assert not r["changed"] and r["warnings"] == [
        "prune: 1 address(es) not made by this collection not deleted (their owner or the operator removes them): "
        "by-hand"], r


# ------------------------------------------------------------------ the shipped CRDs against EnMasse 0.33's

def _crds():
    out = {}
    for f in sorted(os.listdir(os.path.join(ROLE_FILES, "crds"))):
        with open(os.path.join(ROLE_FILES, "crds", f)) as fh:
            d = yaml.safe_load(fh)
        out[d["spec"]["names"]["kind"]] = d
    return out


def _objects_without_preserve(schema, where):
    """Object nodes that would prune a field they do not list (EnMasse's
    v1beta1 CRDs pruned nothing)."""
    out = []
    if schema.get("type") == "object" and "additionalProperties" not in schema \
            and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out.append(where)
    for k, v in (schema.get("properties") or {}).items():
        out.extend(_objects_without_preserve(v, where + "." + k))
    if isinstance(schema.get("items"), dict):
        out.extend(_objects_without_preserve(schema["items"], where + "[]"))
    if isinstance(schema.get("additionalProperties"), dict):
        out.extend(_objects_without_preserve(schema["additionalProperties"], where + ".*"))
    return out


def test_crds_are_enmasses_status_with_the_object_unknown_fields_kept():
    """EnMasse 0.33's CRDs (templates/crds/*.crd.yaml, apiextensions v1beta1):
    a status subresource for MessagingUser only (its operator writes the status
    of the others with the object: with a subresource the server drops it),
    and no pruning (its manifests carry the legacy spec.addressSpace, its docs
    the typo messageTtl.minimim)."""
    crds = _crds()
    for kind, crd in crds.items():
        for v in crd["spec"]["versions"]:
            has_status = "status" in (v.get("subresources") or {})
            assert has_status == (kind == "MessagingUser"), (kind, v["name"])
            assert _objects_without_preserve(v["schema"]["openAPIV3Schema"], kind) == [], (kind, v["name"])
    spec = crds["Address"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["addressSpace"]["type"] == "string"
    assert spec["required"] == ["address", "type", "plan"]
