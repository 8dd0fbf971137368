#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: loop_inventory
short_description: Keep the capacity loop's own inventory file (the spare hosts it made brokers)
version_added: "0.1.0"
description:
  - The capacity loop's inventory file is a second inventory source beside the operator's, owned wholly by the loop
    (C(docs/apply-plan.md) step 3). It holds only the group memberships the loop decided - C(brokers) with the spare
    hosts it made brokers, each without variables (they stay in the operator's inventory, in C(brokers_spare)).
    Ansible merges both sources (C(-i inventory -i loop-inventory.yml)), so such a host is in C(brokers).
  - This module adds (O(state=present)) or removes (O(state=absent)) one host of one group in that file. A new
    file is created with mode C(0644) (host names only, no secret; an operator running C(site.yml) by hand must
    read it too); an existing file keeps its mode. The write is atomic (a temporary file in the same directory
    renamed over the old one).
  - A file that is not of the loop's shape (other keys than C(brokers), group variables or children, host
    variables, not YAML) is refused naming the field, the value and the rule, and never rewritten - it is not the
    loop's file.
  - Run it where C(ansible-playbook) runs (the inventory is read there), e.g. C(delegate_to=localhost).
  - Only the group C(brokers) for now - a router the loop added could not be taken back by it, as
    C(playbooks/apply_plan.yml) does not run a router's scale in.
author:
  - EnMasse messaging maintainers (@enmasse-messaging)
extends_documentation_fragment:
  - enmasse.messaging.attributes
attributes:
  check_mode:
    support: full
    details: Reports the same change and diff; writes nothing.
  diff_mode:
    support: full
    details: The file's text before and after.
options:
  path:
    description: The loop's inventory file (a C(.yml) or C(.yaml) file, so that Ansible's C(yaml) inventory plugin reads it).
    type: path
    required: true
  group:
    description: The group.
    type: str
    choices: [brokers]
    default: brokers
  host:
    description: The inventory host name (as in the operator's inventory, e.g. in C(brokers_spare)).
    type: str
    required: true
  state:
    description: Whether the host is in the group of the file.
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: The spare host spare-1 becomes a broker for every later run
  enmasse.messaging.loop_inventory:
    path: /var/lib/enmasse-loop/inventory.yml
    host: spare-1
  delegate_to: localhost
  become: false

- name: The broker the loop added left the pool (after scale_in.yml)
  enmasse.messaging.loop_inventory:
    path: /var/lib/enmasse-loop/inventory.yml
    host: spare-1
    state: absent
  delegate_to: localhost
  become: false
"""

RETURN = r"""
hosts:
  description: The file's groups and their hosts after the task (in check mode, what they would be).
  returned: always
  type: dict
  sample: {"brokers": ["spare-1"]}
listed:
  description: Whether the host was in the group of the file before the task.
  returned: always
  type: bool
"""

import os

try:
    import yaml  # the controller's (Ansible needs PyYAML): the module runs where ansible-playbook runs
    HAS_YAML = True
except ImportError:
    HAS_YAML = False

from ansible_collections.enmasse.messaging.plugins.module_utils import runner
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.files import writable_error, write_text
from ansible_collections.enmasse.messaging.plugins.module_utils.model import loop_inventory as model


def read(path):
    """(text or None, parsed content or None) of the file at ``path``."""
    if not os.path.exists(path):
        return None, None
    try:
        with open(path) as f:
            text = f.read()
    except (IOError, OSError) as e:
        raise ConfigError("path: cannot read %s: %s" % (path, e.strerror or e))
    if not HAS_YAML:
        raise ConfigError("path: PyYAML is missing: run the module where ansible-playbook runs (delegate_to: localhost)")
    try:
        return text, yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError("path: %s is not YAML (%s): not the loop's file, left alone" % (path, str(e).replace("\n", " ")))


def run(params, check_mode):
    """The module's result for ``params``."""
    path = params["path"]
    if not path.endswith((".yml", ".yaml")):
        raise ConfigError("path: %s does not end with .yml or .yaml: Ansible's yaml inventory plugin would not read "
                          "it" % path)
    model.check_args(params["group"], params["host"], params["state"])
    text, content = read(path)
    before = model.memberships(content, path)
    after, changed = model.change(content, params["group"], params["host"], params["state"], path)
    new_text = model.render(after)
    if changed and not check_mode:
        problem = writable_error(path, "loop inventory")
        if problem:
            raise ConfigError("path: %s" % problem)
        try:
            write_text(path, new_text, 0o644, ".loop-inventory-")
        except (IOError, OSError) as e:
            raise ConfigError("path: cannot write %s: %s" % (path, e.strerror or e))
    return dict(changed=changed, hosts=after, listed=params["host"] in before.get(params["group"], []),
                diff=dict(before=text or "", after=new_text if changed else (text or ""),
                          before_header=path, after_header=path))


def action(module):
    """The result, its diff only in diff mode."""
    result = run(module.params, module.check_mode)
    if not module._diff:
        result.pop("diff")
    return result


def main():
    runner.main(dict(
        path=dict(type="path", required=True),
        group=dict(type="str", choices=list(model.GROUPS), default="brokers"),
        host=dict(type="str", required=True),
        state=dict(type="str", choices=list(model.STATES), default="present"),
    ), action, connection=False)


if __name__ == "__main__":
    main()
