"""Make the repository importable as ``ansible_collections.enmasse.messaging``.

The repository root is the collection root; Ansible imports collections from
``<path>/ansible_collections/<namespace>/<name>``. We link the checkout into a
directory outside the tree (so nothing walks into a loop) and put it on
``sys.path`` and ``ANSIBLE_COLLECTIONS_PATH`` for every test.
"""
import hashlib
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collection_root():
    tag = hashlib.sha1(REPO.encode()).hexdigest()[:10]
    root = os.path.join(tempfile.gettempdir(), "enmasse-collections-" + tag)
    ns = os.path.join(root, "ansible_collections", "enmasse")
    link = os.path.join(ns, "messaging")
    os.makedirs(ns, exist_ok=True)
    if not os.path.islink(link):
        try:
            os.symlink(REPO, link)
        except FileExistsError:
            pass
    return root


COLLECTIONS = collection_root()
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
os.environ["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join(
    [COLLECTIONS] + [p for p in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if p])


def pytest_collection_modifyitems(session, config, items):
    """tests/integration/kubernetes runs after the rest of tests/integration
    (before tests/molecule when one pytest runs both; the whole suite of
    scripts/test.sh runs tests/molecule in a pytest of its own): on a fresh machine scripts/test.sh builds its
    kube-apiserver in the background meanwhile (the tests wait for that
    build when it is not done)."""
    k8s_dir = os.path.join(REPO, "tests", "integration", "kubernetes") + os.sep
    k8s = [i for i in items if str(i.path).startswith(k8s_dir)]
    if not k8s:
        return
    moved = set(id(i) for i in k8s)
    rest = [i for i in items if id(i) not in moved]
    molecule_dir = os.path.join(REPO, "tests", "molecule") + os.sep
    at = next((n for n, i in enumerate(rest) if str(i.path).startswith(molecule_dir)), len(rest))
    items[:] = rest[:at] + k8s + rest[at:]
