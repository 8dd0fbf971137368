# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AnsibleModule runner: a module's whole ``main()``.

Builds the ``AnsibleModule`` (connection options + the module's own), runs the
module's action and turns any ``EnmasseError`` into ``fail_json`` with ``msg``
and every message in ``errors``, plus what was done before the failure.
The only module_utils file that imports Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.warnings import get_warning_messages

from ansible_collections.enmasse.messaging.plugins.module_utils.args import argument_spec
from ansible_collections.enmasse.messaging.plugins.module_utils.errors import EnmasseError
from ansible_collections.enmasse.messaging.plugins.module_utils.request import Request

# how many messages the one-line msg of a failure repeats (errors has them all)
MSG_ERRORS = 20


def new_module(options, connection=True, **kwargs):
    """The ``AnsibleModule`` of an enmasse.messaging module: the connection
    options (unless ``connection`` is false) plus ``options``, check mode
    supported."""
    kwargs.setdefault("supports_check_mode", True)
    return AnsibleModule(argument_spec=argument_spec(connection, **options), **kwargs)


# what Ansible puts in place of a no_log parameter's value
PLACEHOLDER = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def hide_secrets(module, *values):
    """Have Ansible mask ``values`` (passwords that do not come from a no_log
    option, e.g. from the connection file, a URL or a list of users)
    everywhere in the module's output, ``invocation`` included (see
    ``trim_masking`` for the cost of many)."""
    hidden = getattr(module, "enmasse_hidden", None)
    if hidden is None:
        hidden = module.enmasse_hidden = set()
    for value in values:
        if value not in (None, ""):
            value = str(value)
            if value not in module.no_log_values:
                hidden.add(value)
            module.no_log_values.add(value)


def scrub(value, secrets):
    """``value`` with every string that is one of ``secrets`` (whole)
    replaced by Ansible's placeholder, in dicts and lists at any depth."""
    if isinstance(value, dict):
        return dict((k, scrub(v, secrets)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, str) and value in secrets:
        return PLACEHOLDER
    return value


def strings_of(value, out=None):
    """Every string (keys too) in ``value``, at any depth."""
    out = [] if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            strings_of(k, out)
            strings_of(v, out)
    elif isinstance(value, (list, tuple, set)):
        for v in value:
            strings_of(v, out)
    elif isinstance(value, str):
        out.append(value)
    elif value is not None:
        out.append(str(value))
    return out


def trim_masking(module, *outputs):
    """Make Ansible's masking of the hidden values cheap, output unchanged.

    Ansible's ``remove_values`` replaces every no_log value in every string
    of the output: strings x values, about half a second for 1,000 users'
    passwords. Here the hidden values that are whole parameter values are
    replaced by the placeholder in the ``invocation`` (as Ansible would),
    then only the hidden values still found somewhere in the output
    (``outputs`` and the parameters; normally none) stay for Ansible to mask."""
    hidden = getattr(module, "enmasse_hidden", None)
    if not hidden:
        return
    module.params = scrub(module.params, hidden)
    text = "\x00".join(strings_of([module.params, list(outputs)]))
    for value in hidden:
        if value not in text:
            module.no_log_values.discard(value)


def error_list(exc):
    """Every message carried by an exception (``errors`` attribute or str)."""
    errs = getattr(exc, "errors", None)
    if errs:
        return list(errs)
    return [str(exc)]


def failure_message(errors):
    """The one-line ``msg`` of a failure with ``errors``."""
    if len(errors) == 1:
        return errors[0]
    shown = errors[:MSG_ERRORS]
    more = len(errors) - len(shown)
    return "%d problems: %s%s" % (len(errors), "; ".join(shown),
                                  "; ... and %d more (see errors)" % more if more else "")


def run_module(module, action):
    """Run ``action()`` (returns the result dict) and exit the module; an
    ``EnmasseError`` becomes ``fail_json`` with ``msg`` and every message in
    ``errors`` (plus what was done before the failure, if anything)."""
    try:
        result = action()
    except EnmasseError as e:
        errors = error_list(e)
        result = dict(changed=False)
        result.update(getattr(e, "result", None) or {})
        result.update(msg=failure_message(errors), errors=errors)
        trim_masking(module, result, get_warning_messages())
        module.fail_json(**result)
    for warning in result.pop("warnings", None) or []:
        module.warn(warning)
    trim_masking(module, result, get_warning_messages())
    module.exit_json(**result)


def main(options, action, **module_kwargs):
    """The whole ``main()`` of a module: build it (``new_module``), run
    ``action(module)`` (returns the result dict) and exit (``run_module``)."""
    module = new_module(options, **module_kwargs)
    run_module(module, lambda: action(module))


def secret_hider(module):
    """A callable that has ``module`` mask the secrets it is given (for
    connection resolution, which knows no AnsibleModule)."""
    return lambda secrets: hide_secrets(module, *secrets)


def request(module):
    """The backends' view of ``module`` (module_utils/request.py)."""
    return Request(module.params, module.check_mode, getattr(module, "_diff", False), secret_hider(module))
