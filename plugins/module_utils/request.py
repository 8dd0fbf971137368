# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a module asks of a backend: its parameters, check mode, diff mode,
and a way to have secrets masked in its output. ``runner.request(module)``
builds it from the AnsibleModule; tests build it directly. No Ansible
imports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class Request(object):
    """``params``: the module's parameters (a backend may replace them with a
    copy, never change them in place: the invocation echoes them);
    ``hide(secrets)``: masks the given values in the module's output. The
    common checks (``backends.prepare``) add ``present``, ``absent``,
    ``positions`` and ``report`` for the address module."""

    def __init__(self, params, check_mode=False, diff=False, hide=None):
        self.params = params
        self.check_mode = bool(check_mode)
        self.diff = bool(diff)
        self.hide = hide or (lambda secrets: None)
        self.present, self.absent, self.positions, self.report = [], [], None, "all"
