# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capacity plan for an enmasse.messaging infrastructure, from its own metrics.

    PYTHONPATH=<dir holding ansible_collections/> python capacity_plan.py \\
        --metrics /var/lib/enmasse/metrics --model model.yml \\
        [--capacity-model capacity.yml] [--out-plan plan.json] [--out-report report.html] \\
        [--master local[*] | spark://host:7077 | k8s://https://...]

The entry point spark-submit runs; the job is the package ``enmasse_capacity``
next to this file (read, aggregate, planner, pools, report, cli). It imports
the collection's rules as ``ansible_collections.enmasse.messaging.plugins.
module_utils``: the directory that holds ``ansible_collections/`` must be on
PYTHONPATH (an installed collection's collections path, the capacity_planner
role's <install_dir>/lib, or ``source scripts/collection-path.sh`` in a
checkout). See docs/capacity-planning.md.
"""

from __future__ import absolute_import, division, print_function

import sys

try:
    from enmasse_capacity.cli import main
except ImportError as e:
    if "ansible_collections" not in str(e):
        raise
    sys.stderr.write("capacity_plan: error: cannot import the enmasse.messaging collection (%s): put the directory "
                     "that holds ansible_collections/ on PYTHONPATH (see docs/capacity-planning.md)\n" % e)
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main())
