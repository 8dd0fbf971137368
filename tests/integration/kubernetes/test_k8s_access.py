"""The cluster the role prepared (CRDs, RBAC, a namespace with the jobs'
service account and the example plans) and the ways a job reaches it: a
service account token (as an AWX container group or a Kubernetes credential
gives), the K8S_AUTH_* environment, a kubeconfig context, the pod's own
service account files; an identity without the RBAC is refused by the
server and the message says what it needs."""

from conftest import ROLE_NAMESPACE, run_playbook

import helpers

from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes import connection as k8s_connection
from ansible_collections.enmasse.messaging.plugins.module_utils.kubernetes.client import KubeClient


def sa_token(kube, namespace=ROLE_NAMESPACE, name="enmasse-messaging"):
    core, unused = kube.core()
    tr = core.create_namespaced_service_account_token(name, namespace, {"spec": {"expirationSeconds": 3600}})
    return tr.status.token


def test_role_installed_crds_with_printer_columns_and_plans(kube):
    from kubernetes import client
    unused, api = kube.core()
    ext = client.ApiextensionsV1Api(api)
    crds = dict((c.metadata.name, c) for c in ext.list_custom_resource_definition().items)
    for name in ("addressspaces.enmasse.io", "addresses.enmasse.io", "addressplans.admin.enmasse.io",
                 "addressspaceplans.admin.enmasse.io", "messagingusers.user.enmasse.io"):
        crd = crds[name]
        assert any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)
        for v in crd.spec.versions:  # a status subresource only where EnMasse 0.33 has one
            assert ((v.subresources and v.subresources.status) is not None) == (name.startswith("messagingusers"))
            assert v.additional_printer_columns
    addr = [v for v in crds["addresses.enmasse.io"].spec.versions if v.name == "v1beta1"][0]
    assert [c.name for c in addr.additional_printer_columns][:4] == ["Address", "Type", "Plan", "Ready"]
    plans = [v.name for v in crds["addressplans.admin.enmasse.io"].spec.versions]
    assert plans == ["v1beta2", "v1beta1", "v1alpha1"]
    ns = kube.client(ROLE_NAMESPACE)
    names = [o["metadata"]["name"] for o in ns.list("AddressSpacePlan")[0]]
    assert "brokered-single-broker" in names and "standard-small" in names
    # the role again: nothing changes
    rc, out = run_playbook([{"name": "Again", "ansible.builtin.include_role": {
        "name": "enmasse.messaging.kubernetes_crds"}, "vars": {
        "kubernetes_crds_namespace": ROLE_NAMESPACE, "kubernetes_crds_connection": {"kubeconfig": kube.kubeconfig}}}])
    assert rc == 0 and "changed=0" in out, out[-3000:]


def test_service_account_token_with_the_roles_rbac(kube):
    token = sa_token(kube)
    args = {"backend": "kubernetes", "host": kube.host, "api_key": token, "ca_cert": kube.ca_cert,
            "namespace": ROLE_NAMESPACE}
    r = helpers.run_module("address_space", dict(args, name="sa-space", type="brokered", plan="brokered-single-broker"))
    assert not r.failed and r.changed, r
    assert token not in r.stdout  # the token is masked wherever it would appear
    r = helpers.run_module("address", dict(args, address_space="sa-space", address="q", type="queue",
                                           plan="brokered-queue"))
    assert not r.failed and r.changed, r
    # messaging users too (the ClusterRole lists messagingusers)
    r = helpers.run_module("messaging_user", dict(args, address_space="sa-space", username="sa-user", password="pw-1"))
    assert not r.failed and r.changed, r
    r = helpers.run_module("messaging_user_info", dict(args, address_space="sa-space"))
    assert not r.failed and [u["username"] for u in r["users"]] == ["sa-user"], r
    # the same token elsewhere: the RoleBinding is only in the role's namespace
    r = helpers.run_module("address_space_info", dict(args, name="sa-space", namespace="default"))
    assert r.failed and "forbidden" in r.msg.lower() and "enmasse-messaging-manager" in r.msg, r


def test_identity_without_rbac_is_refused_by_the_server(kube):
    r = helpers.run_module("address_space", {"backend": "kubernetes", "host": kube.host, "api_key": kube.tc.job_token,
                                             "ca_cert": kube.ca_cert, "namespace": ROLE_NAMESPACE, "name": "nope",
                                             "type": "brokered", "plan": "brokered-single-broker"})
    assert r.failed and "HTTP 403" in r.msg and "ClusterRole enmasse-messaging-manager" in r.msg, r


def test_a_token_the_server_does_not_accept_is_not_called_rbac(kube):
    r = helpers.run_module("address_space_info", {"backend": "kubernetes", "host": kube.host, "api_key": "not-a-token",
                                                  "ca_cert": kube.ca_cert, "namespace": ROLE_NAMESPACE, "name": "x"})
    assert r.failed and "(HTTP 401): the API server at %s did not accept the credentials" % kube.host in r.msg, r
    assert "RBAC" not in r.msg and "not-a-token" not in r.stdout, r
    r = helpers.run_module("address_space_info", {"backend": "kubernetes", "host": kube.host[len("https://"):],
                                                  "namespace": ROLE_NAMESPACE, "name": "x"})
    assert r.failed and "has no scheme" in r.msg, r


def test_k8s_auth_environment_and_certificate_checks(kube, monkeypatch):
    token = sa_token(kube)
    monkeypatch.setenv("K8S_AUTH_HOST", kube.host)
    monkeypatch.setenv("K8S_AUTH_API_KEY", token)
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", kube.ca_cert)
    r = helpers.run_module("address_space_info", {"backend": "kubernetes", "namespace": ROLE_NAMESPACE,
                                                  "name": "sa-space"})
    assert not r.failed, r
    # without the CA the certificate is not trusted ...
    monkeypatch.delenv("K8S_AUTH_SSL_CA_CERT")
    r = helpers.run_module("address_space_info", {"backend": "kubernetes", "namespace": ROLE_NAMESPACE, "name": "x"})
    assert r.failed and "cannot reach the Kubernetes API server" in r.msg and "CERTIFICATE_VERIFY_FAILED" in r.msg, r
    # ... unless told not to check it
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "no")
    r = helpers.run_module("address_space_info", {"backend": "kubernetes", "namespace": ROLE_NAMESPACE, "name": "x"})
    assert not r.failed and r["address_space"]["exists"] is False, r


def test_kubeconfig_context_namespace(kube, tmp_path):
    path = kube.tc.write_kubeconfig(str(tmp_path / "ctx.kubeconfig"), kube.tc.admin_token, namespace=ROLE_NAMESPACE)
    r = helpers.run_module("address_plan_info", {"backend": "kubernetes", "kubeconfig": path, "context": "test",
                                                 "names": ["brokered-queue"]})
    assert not r.failed and r["namespace"] == ROLE_NAMESPACE and r["plans"][0]["name"] == "brokered-queue", r


def test_pod_service_account(kube, tmp_path):
    """In a pod: KUBERNETES_SERVICE_HOST/PORT and the mounted token, CA and
    namespace files (written here where a kubelet would mount them)."""
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(sa_token(kube))
    (sa / "ca.crt").write_text(open(kube.ca_cert).read())
    (sa / "namespace").write_text(ROLE_NAMESPACE)
    host, port = kube.host[len("https://"):].split(":")
    conn = k8s_connection.resolve({}, environ={"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port},
                                  sa_dir=str(sa))
    assert conn.namespace == ROLE_NAMESPACE and conn.source == "the pod's service account"
    items, unused = KubeClient(conn).list("AddressSpacePlan")
    assert any(o["metadata"]["name"] == "brokered-single-broker" for o in items)
