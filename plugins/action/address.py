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


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        args = dict(self._task.args)
        src = args.pop("src", None)
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
        addresses = load_addresses(path)
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
