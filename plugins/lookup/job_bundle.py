# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: job_bundle
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
short_description: The Python files a capacity planner host runs, read from this collection
description:
  - Returns the capacity planning Spark job (C(spark_jobs/capacity_plan.py) and its package
    C(spark_jobs/enmasse_capacity/)) and the collection's C(plugins/module_utils) files that the job
    and the metrics collector import, each with the path it must have under the directory put on
    C(PYTHONPATH) on the target.
  - The module_utils files are found by following the imports of
    C(ansible_collections.enmasse.messaging.plugins.module_utils) from the job's files and from the
    collector's entry points (C(metrics/collect.py), C(metrics/planner_model.py)), so a file the code
    stops importing leaves the bundle. They keep their place under
    C(ansible_collections/enmasse/messaging/plugins/module_utils/), the one way they are imported.
  - Runs on the controller and reads the collection it belongs to (from its own location); the
    C(enmasse.messaging.capacity_planner) role writes the result under its library directory.
options:
  _terms:
    description:
      - The parts to return, any of C(job), C(collector) (the capacity planner's), C(keeper) (what the router
        keeper of the C(enmasse.messaging.standard) role imports), C(auth_service) (the files of the
        C(enmasse.messaging.auth_service) role's service) and C(will_keeper) (the AMQP clients' will keeper
        of the C(enmasse.messaging.mqtt_gateway) role); C(job) and C(collector) when none is given.
    type: list
    elements: str
    required: false
notes:
  - The files are returned as text; the bundle is about 200 KiB.
"""

EXAMPLES = r"""
- name: Write the capacity job and the module_utils it needs under /opt/enmasse-capacity/lib
  ansible.builtin.copy:
    content: "{{ item.content }}"
    dest: "/opt/enmasse-capacity/lib/{{ item.path }}"
    mode: "0644"
  loop: "{{ query('enmasse.messaging.job_bundle') }}"
  loop_control:
    label: "{{ item.path }}"

- name: Only what the metrics collector imports
  ansible.builtin.debug:
    msg: "{{ query('enmasse.messaging.job_bundle', 'collector') | map(attribute='path') | list }}"
"""

RETURN = r"""
_raw:
  description: One entry per file, sorted by path.
  type: list
  elements: dict
  contains:
    path:
      description:
        - Where the file goes, relative to the directory put on C(PYTHONPATH), for example
          C(capacity_plan.py), C(enmasse_capacity/planner.py) or
          C(ansible_collections/enmasse/messaging/plugins/module_utils/model/schema.py).
      type: str
    content:
      description: The file's text.
      type: str
    source:
      description: The file it was read from on the controller.
      type: str
    root:
      description:
        - The collection's directory on the controller that C(source) is under (a role packs the files from
          there, for example with C(tar --directory), without knowing where the collection is installed).
      type: str
    parts:
      description: Which of the parts need the file.
      type: list
      elements: str
"""

import ast
import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

PREFIX = ("ansible_collections", "enmasse", "messaging", "plugins", "module_utils")
DEST_PREFIX = "/".join(PREFIX)
JOB_DIR = "spark_jobs"
JOB_ENTRY = "capacity_plan.py"
JOB_PACKAGE = "enmasse_capacity"
# module_utils modules the collector scripts (roles/capacity_planner/files) import
COLLECTOR_ROOTS = ("metrics/collect.py", "metrics/planner_model.py", "errors.py")
# what the other host programs run from the collection's module_utils: the
# router keeper (role standard), the auth service (role auth_service) and the
# will keeper (role mqtt_gateway)
ROOTS = {"collector": COLLECTOR_ROOTS, "keeper": ("standard/keeper.py",),
         "auth_service": ("auth/server.py", "auth/codec.py", "auth/backends.py"),
         "will_keeper": ("mqtt/will_keeper.py",)}
PARTS = ("job", "collector", "keeper", "auth_service", "will_keeper")
# what the lookup returns when no part is named (the capacity planner's bundle)
DEFAULT_PARTS = ("job", "collector")


def collection_root():
    """<collection>/ from <collection>/plugins/lookup/job_bundle.py."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _module_file(mu_root, names):
    """The file of module_utils module ``names`` (a tuple of path parts), or None."""
    base = os.path.join(mu_root, *names) if names else mu_root
    if os.path.isfile(base + ".py"):
        return base + ".py"
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.join(base, "__init__.py")
    return None


def module_utils_imports(path, mu_root):
    """The module_utils files ``path`` imports (absolute imports of
    ansible_collections.enmasse.messaging.plugins.module_utils..., and
    relative imports when ``path`` is itself under ``mu_root``)."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
    here = None
    if os.path.abspath(path).startswith(os.path.abspath(mu_root) + os.sep):
        rel = os.path.relpath(os.path.dirname(path), mu_root)
        here = () if rel == "." else tuple(rel.split(os.sep))
    found = set()

    def add(parts, names):
        for n in names:
            f = _module_file(mu_root, parts + (n,))
            if f:
                found.add(f)
                continue
            f = _module_file(mu_root, parts)
            if f:
                found.add(f)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = tuple(alias.name.split("."))
                if parts[:len(PREFIX)] == PREFIX:
                    f = _module_file(mu_root, parts[len(PREFIX):])
                    if f:
                        found.add(f)
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
            if node.level == 0:
                parts = tuple((node.module or "").split("."))
                if parts[:len(PREFIX)] == PREFIX:
                    add(parts[len(PREFIX):], names)
            elif here is not None:
                base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
                add(base + (tuple(node.module.split(".")) if node.module else ()), names)
    return found


def closure(roots, mu_root):
    """Every module_utils file reachable from ``roots`` by imports, with the
    __init__.py of each package on the way."""
    todo = list(roots)
    seen = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        rel = os.path.relpath(path, mu_root)
        if not rel.startswith(".."):
            parts = rel.split(os.sep)[:-1]
            for i in range(1, len(parts) + 1):
                init = os.path.join(mu_root, *(parts[:i] + ["__init__.py"]))
                if os.path.isfile(init) and init not in seen:
                    todo.append(init)
        todo.extend(module_utils_imports(path, mu_root) - seen)
    return seen


def job_files(root):
    """(destination, source) of the Spark job: the entry point and its package."""
    jobs = os.path.join(root, JOB_DIR)
    out = [(JOB_ENTRY, os.path.join(jobs, JOB_ENTRY))]
    pkg = os.path.join(jobs, JOB_PACKAGE)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            out.append(("%s/%s" % (JOB_PACKAGE, name), os.path.join(pkg, name)))
    return out


def bundle(root=None, parts=DEFAULT_PARTS):
    """The bundle as a list of dicts (path, content, source, parts), sorted by path."""
    root = root or collection_root()
    mu_root = os.path.join(root, "plugins", "module_utils")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError("unknown part(s) %s (known: %s)" % (", ".join(unknown), ", ".join(PARTS)))
    entries = {}

    def put(dest, source, part):
        e = entries.setdefault(dest, {"path": dest, "source": source, "root": root, "parts": []})
        if part not in e["parts"]:
            e["parts"].append(part)

    if "job" in parts:
        files = job_files(root)
        for dest, source in files:
            put(dest, source, "job")
        for f in closure([s for _d, s in files], mu_root) - set(s for _d, s in files):
            put(DEST_PREFIX + "/" + os.path.relpath(f, mu_root).replace(os.sep, "/"), f, "job")
    for part in (p for p in parts if p in ROOTS):
        roots = [os.path.join(mu_root, *r.split("/")) for r in ROOTS[part]]
        missing = [r for r in roots if not os.path.isfile(r)]
        if missing:
            raise ValueError("the %s's module_utils are missing: %s" % (part, ", ".join(missing)))
        for f in closure(roots, mu_root):
            put(DEST_PREFIX + "/" + os.path.relpath(f, mu_root).replace(os.sep, "/"), f, part)
    out = []
    for dest in sorted(entries):
        e = entries[dest]
        with open(e["source"], "r") as f:
            e["content"] = f.read()
        e["parts"] = sorted(e["parts"])
        out.append(e)
    return out


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        parts = []
        for t in terms or []:
            parts.extend(t if isinstance(t, list) else [t])
        try:
            return bundle(parts=tuple(parts) or DEFAULT_PARTS)
        except (OSError, ValueError, SyntaxError) as e:
            raise AnsibleLookupError("enmasse.messaging.job_bundle: %s" % e)
