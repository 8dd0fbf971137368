"""The role kubernetes_crds as EnMasse's CRDs behave: objects applied by
the role with its own field managers (server-side apply, not the client's
default manager), status written with the object as EnMasse's operator
writes it, the fields EnMasse's manifests and docs carry kept, and CRDs the
collection did not install left alone."""

import os

import yaml

from conftest import ROLE_NAMESPACE, run_playbook

HERE = os.path.dirname(os.path.abspath(__file__))
ROLE_FILES = os.path.join(HERE, "..", "..", "..", "roles", "kubernetes_crds", "files")
CRDS = ("addressspaces.enmasse.io", "addresses.enmasse.io", "addressplans.admin.enmasse.io",
        "addressspaceplans.admin.enmasse.io", "messagingusers.user.enmasse.io")
QUEUE = {"address": "orders", "type": "queue", "plan": "brokered-queue"}


def managers(obj):
    return dict((m["manager"], m["operation"]) for m in obj["metadata"].get("managedFields") or [])


def role(kube, **variables):
    v = {"kubernetes_crds_connection": {"kubeconfig": kube.kubeconfig}}
    v.update(variables)
    return run_playbook([{"name": "Role", "ansible.builtin.include_role": {"name": "enmasse.messaging.kubernetes_crds"},
                          "vars": v}])


def test_role_applies_with_its_own_field_managers(kube):
    """kubernetes.core honours server_side_apply only with apply: true;
    without it every object was owned by 'OpenAPI-Generator' (Update), and an
    apply of EnMasse's plan documents as the role's manager conflicted."""
    c = kube.client(ROLE_NAMESPACE)
    for name in CRDS:
        crd = c.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)
        assert managers(crd).get("enmasse.messaging-crds") == "Apply", (name, managers(crd))
        assert "OpenAPI-Generator" not in managers(crd), (name, managers(crd))
    for path in ("/apis/rbac.authorization.k8s.io/v1/clusterroles/enmasse-messaging-manager",
                 "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/enmasse-messaging-manager"
                 % ROLE_NAMESPACE):
        assert managers(c.request("GET", path)) == {"enmasse.messaging-crds": "Apply"}, path
    plans = c.list("AddressPlan")[0] + c.list("AddressSpacePlan")[0]
    assert len(plans) == 29 and all(managers(p) == {"enmasse.messaging-examples": "Apply"} for p in plans), \
        [(p["metadata"]["name"], managers(p)) for p in plans if managers(p) != {"enmasse.messaging-examples": "Apply"}]
    # EnMasse's plan document, changed (a newer version of it), applied as the role's manager: no conflict
    with open(os.path.join(ROLE_FILES, "example-plans.yaml")) as f:
        doc = [d for d in yaml.safe_load(f)["items"] if d["metadata"]["name"] == "brokered-queue"][0]
    doc["spec"]["displayOrder"] = doc["spec"].get("displayOrder", 0) + 7
    got = c.request("PATCH", c.path("AddressPlan", "brokered-queue"), {"fieldManager": "enmasse.messaging-examples"},
                    body=doc, content_type="application/apply-patch+yaml")
    assert got["spec"]["displayOrder"] == doc["spec"]["displayOrder"]
    # the role again puts its own value back, changing only that
    rc, out = role(kube, kubernetes_crds_namespace=ROLE_NAMESPACE, kubernetes_crds_install=False,
                   kubernetes_crds_rbac=False)
    assert rc == 0 and "changed=1" in out, out[-3000:]
    assert c.get("AddressPlan", "brokered-queue")["spec"]["displayOrder"] == doc["spec"]["displayOrder"] - 7


def test_status_written_with_the_object_as_enmasses_operator_does(space):
    """EnMasse's operator updates the whole object, status included: with a
    status subresource the server dropped that status and wait timed out."""
    assert space.run("address", address_space="shop", addresses=[QUEUE]).changed
    obj = space.addresses()["orders"]
    obj["status"] = {"isReady": True, "phase": "Active", "messages": [],
                     "planStatus": {"name": "brokered-queue", "partitions": 1}}
    stored = space.client.request("PUT", space.client.path("Address", obj["metadata"]["name"]),
                                  {"fieldManager": "enmasse-operator"}, body=obj)
    assert stored.get("status", {}).get("isReady") is True, stored
    r = space.run("address", address_space="shop", addresses=[QUEUE], wait=True, wait_timeout=5,
                  return_addresses="all")
    assert not r.failed and r["addresses"][0]["status"]["phase"] == "Active", r
    sp = space.list("AddressSpace")["shop"]
    sp["status"] = {"isReady": True, "phase": "Active", "messages": []}
    space.client.request("PUT", space.client.path("AddressSpace", "shop"), {"fieldManager": "enmasse-operator"},
                         body=sp)
    r = space.run("address_space", name="shop", type="brokered", plan="brokered-single-broker", wait=True,
                  wait_timeout=5)
    assert not r.failed and not r.changed and r["address_space"]["status"]["ready"] is True, r


def test_fields_of_enmasses_manifests_are_kept(space):
    """EnMasse's documented example (the typo 'minimim' of its docs) and the
    legacy spec.addressSpace, created as kubectl create does: stored as given."""
    doc = {"apiVersion": "enmasse.io/v1beta1", "kind": "Address", "metadata": {"name": "shop.myqueue"},
           "spec": {"address": "myqueue", "type": "queue", "plan": "brokered-queue", "addressSpace": "shop",
                    "messageTtl": {"minimim": 30000, "maximum": 300000}}}
    space.create_as("kubectl", doc)
    got = space.list("Address")["shop.myqueue"]
    assert got["spec"]["addressSpace"] == "shop", got
    assert got["spec"]["messageTtl"] == {"minimim": 30000, "maximum": 300000}, got
    # the collection's modules read such an object and leave it as it is
    info = space.run("address_info", address_space="shop")
    assert not info.failed and [a["address"] for a in info["addresses"]] == ["myqueue"], info
    r = space.run("address", address_space="shop", addresses=[QUEUE], prune=True)
    assert not r.failed and r["changes"]["created"] == ["orders"], r
    assert space.list("Address")["shop.myqueue"]["spec"] == got["spec"]


def test_crds_the_collection_did_not_install_are_left_alone(kube):
    """A cluster that runs EnMasse has its own CRDs: the role does not take
    them over (here: the collection's MessagingUser CRD made to look foreign)."""
    c = kube.client(ROLE_NAMESPACE)
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/messagingusers.user.enmasse.io"
    c.request("PATCH", path, body={"metadata": {"labels": {"app.kubernetes.io/part-of": None},
                                                "annotations": {"owner": "enmasse-install"}}},
              content_type="application/merge-patch+json")
    try:
        before = c.request("GET", path)["metadata"]["resourceVersion"]
        rc, out = role(kube)
        assert rc == 0 and "messagingusers.user.enmasse.io: not installed by enmasse.messaging" in out, out[-3000:]
        after = c.request("GET", path)
        assert after["metadata"]["resourceVersion"] == before and "app.kubernetes.io/part-of" not in \
            after["metadata"]["labels"], after["metadata"]
    finally:
        c.request("PATCH", path, body={"metadata": {"labels": {"app.kubernetes.io/part-of": "enmasse.messaging"},
                                                    "annotations": {"owner": None}}},
                  content_type="application/merge-patch+json")
    rc, out = role(kube)
    assert rc == 0 and "messagingusers.user.enmasse.io: not installed" not in out, out[-3000:]
