# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The attributes every enmasse.messaging module has, described (so that a
    # module needs no ansible.builtin.action_common_attributes fragments) and
    # with the values they share. A module gives check_mode and diff_mode
    # support itself (or through INFO_MODULE); its own values win.
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  action_group:
    description: Use C(group/enmasse.messaging.all) in C(module_defaults) to set defaults for this module.
    support: full
    membership: [enmasse.messaging.all]
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
'''

    # Modules that converge (address_space, address).
    CONVERGE = r'''
options: {}
attributes:
  check_mode:
    support: full
    details: Computes and reports the same changes and diff; touches neither the broker nor the ledger.
  diff_mode:
    support: full
'''

    # Modules that only read (the *_info modules).
    INFO_MODULE = r'''
options: {}
attributes:
  check_mode:
    support: full
    details: Reads only.
  diff_mode:
    support: none
'''
