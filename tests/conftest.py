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
