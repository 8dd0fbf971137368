# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of enmasse.messaging.address: the ``src`` option.

With ``src`` the address list is a file on the controller (YAML or JSON: a
list of addresses, or a mapping with an ``addresses`` list). The file is read
here as plain data (not templated), sent to the managed host as JSON and
handed to the module as ``src`` (now the JSON file's path on the managed
host, which the module reads), so the list never travels as a
task argument: no templating of thousands of items, no echo of them in the
task's ``invocation``. Without ``src`` the module runs as usual.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.enmasse.messaging.plugins.module_utils.errors import ConfigError
from ansible_collections.enmasse.messaging.plugins.module_utils.input_files import address_list

try:
    import yaml
    _YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
except ImportError:  # pragma: no cover - ansible-core requires PyYAML
    yaml = None

# the options of the single form and the bulk list: src replaces them
# an inline addresses list this long is sent as a file, as src is
INLINE_AS_FILE = 100
LIST_OPTIONS = ("addresses", "definition", "address", "type", "plan", "topic",
                "deadletter", "expiry", "message_ttl", "message_redelivery", "subscription")


def load_addresses(path):
    """The address list of the file at ``path`` (YAML or JSON)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except (IOError, OSError, UnicodeDecodeError) as e:
        raise AnsibleActionFail("src: cannot read %s: %s" % (path, e))
    try:
        data = json.loads(text)
    except ValueError:
        if yaml is None:
            raise AnsibleActionFail("src: %s is not JSON and PyYAML is missing" % path)
        try:
            data = yaml.load(text, Loader=_YAML_LOADER)  # nosec - safe loader
        except yaml.YAMLError as e:
            raise AnsibleActionFail("src: %s is neither JSON nor YAML: %s" % (path, e))
    try:
        return address_list(data, path)
    except ConfigError as e:
        raise AnsibleActionFail(str(e))


def has_template(value):
    """True when a string anywhere in ``value`` holds Jinja syntax."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if "{{" in v or "{%" in v or "{#" in v:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return False


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    @classmethod
    def finalize_task_arg(cls, name, value, templar, context):
        """ansible-core 2.19+: a long inline ``addresses`` list without any
        template is taken as written (templating 10,000 plain items costs
        seconds and changes nothing); anything else is templated as usual."""
        if name == "addresses" and isinstance(value, list) and len(value) >= INLINE_AS_FILE \
                and not has_template(value):
            return value
        return super(ActionModule, cls).finalize_task_arg(name, value, templar, context)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        args = dict(self._task.args)
        src = args.pop("src", None)
        inline = args.get("addresses")
        if src is None and isinstance(inline, list) and len(inline) >= INLINE_AS_FILE \
                and not any(args.get(k) is not None for k in LIST_OPTIONS if k != "addresses"):
            # a long inline list travels as the src file does: the module neither validates it as an
            # argument nor echoes it in its invocation (seconds for 10,000 items, docs/benchmarks.md)
            args.pop("addresses")
            # nor does the task result carry the list back to the controller process
            self._task.args["addresses"] = "(%d addresses, sent to the module as a file)" % len(inline)
            return self._run_with_file(result, args, inline, task_vars)
        if src is None:
            result.update(self._execute_module(module_args=args, task_vars=task_vars))
            return result
        given = sorted(k for k in LIST_OPTIONS if args.get(k) is not None)
        if given:
            raise AnsibleActionFail("src: give the addresses either in src or in %s, not both" % ", ".join(given))
        try:
            path = self._find_needle("files", src)
        except Exception as e:
            raise AnsibleActionFail("src: %s" % to_text(e))
        return self._run_with_file(result, args, load_addresses(path), task_vars)

    def _run_with_file(self, result, args, addresses, task_vars):
        """Send ``addresses`` to the managed host as a JSON file and run the
        module with ``src`` naming it."""
        fd, local = tempfile.mkstemp(prefix="enmasse-addresses-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(addresses, f, separators=(",", ":"))
            remote = self._connection._shell.join_path(self._connection._shell.tmpdir, "addresses.json")
            self._transfer_file(local, remote)
        finally:
            os.remove(local)
        self._fixup_perms2((self._connection._shell.tmpdir, remote))
        args["src"] = remote
        try:
            result.update(self._execute_module(module_args=args, task_vars=task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
