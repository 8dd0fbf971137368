# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that apply the standard spaces' rules (module_utils/standard) to
variables.

* ``addresses_on``: the addresses homed on a pool broker, or still draining
  from it, in the results of an address task looped over the standard
  spaces (standard/homes.py; playbooks/tasks/scale_in_drain.yml).

The documentation of each filter is in the sidecar ``<filter>.yml`` beside
this file (``ansible-doc -t filter enmasse.messaging.<filter>``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.enmasse.messaging.plugins.module_utils.standard.homes import addresses_on as _addresses_on


def addresses_on(results, broker, kind="homes", show=None):
    """``<space>/<address>`` of every address on ``broker`` (standard/homes.py)."""
    try:
        return _addresses_on(results, broker, kind, show)
    except ValueError as e:
        raise AnsibleFilterError("addresses_on: %s" % e)


class FilterModule(object):
    """enmasse.messaging standard space filters."""

    def filters(self):
        return {"addresses_on": addresses_on}
