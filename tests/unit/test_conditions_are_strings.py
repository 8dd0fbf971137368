"""Every conditional of the collection's playbooks, roles and Molecule
scenarios is a string: an ``assert``'s ``that`` items, ``when``,
``failed_when``, ``changed_when`` and ``until``. A plain YAML scalar with
': ' in it (``- x is search('a: b')``) is read as a mapping, which
ansible-lint lets through and Ansible refuses only when the task runs
("Conditional expressions must be strings"), in a Molecule verify step
half an hour into the run."""
import glob
import os

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = ("playbooks", "roles", "molecule")
KEYS = ("when", "failed_when", "changed_when", "until")


def _yaml_files():
    for tree in TREES:
        yield from sorted(glob.glob(os.path.join(REPO, tree, "**", "*.y*ml"), recursive=True))


def _nodes(data):
    """Every mapping in the document."""
    if isinstance(data, dict):
        yield data
        for value in data.values():
            yield from _nodes(value)
    elif isinstance(data, list):
        for value in data:
            yield from _nodes(value)


def _listed(value):
    return value if isinstance(value, list) else [value]


def _bad(node):
    """(key, value) of the conditionals of this mapping that are not strings."""
    found = [(key, v) for key in KEYS if key in node for v in _listed(node[key]) if not isinstance(v, (str, bool))]
    for module in ("ansible.builtin.assert", "assert"):
        args = node.get(module)
        if isinstance(args, dict) and "that" in args:
            found += [("that", v) for v in _listed(args["that"]) if not isinstance(v, str)]
    return found


def _task_like(node):
    return any(k in node for k in ("name", "ansible.builtin.assert", "assert", "block"))


def test_every_conditional_is_a_string():
    problems = []
    for path in _yaml_files():
        with open(path) as f:
            docs = list(yaml.safe_load_all(f))
        for doc in docs:
            for node in _nodes(doc):
                if _task_like(node):
                    problems += ["%s: %s: %r" % (os.path.relpath(path, REPO), key, value) for key, value in _bad(node)]
    assert problems == []


@pytest.mark.parametrize("text,bad", [
    ("- name: t\n  ansible.builtin.assert:\n    that:\n      - x is search('a: b')\n", True),
    ("- name: t\n  ansible.builtin.assert:\n    that:\n      - \"x is search('a: b')\"\n", False),
    ("- name: t\n  ansible.builtin.debug: {msg: x}\n  when: a: b\n", None),
    ("- name: t\n  ansible.builtin.debug: {msg: x}\n  when:\n    - y == 1\n    - z: 1\n", True),
])
def test_the_check_finds_a_mapping_where_a_condition_was_meant(text, bad):
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        assert bad is None  # not YAML at all: the YAML loaders of ansible-lint and Ansible refuse it themselves
        return
    found = [p for node in _nodes(doc) if _task_like(node) for p in _bad(node)]
    assert bool(found) is bad
