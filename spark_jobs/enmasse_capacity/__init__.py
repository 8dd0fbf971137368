# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The capacity planning job (docs/capacity-planning.md), one concern a module:

* ``read``       the model file and the metrics store: reading and validation
* ``aggregate``  the Spark aggregation (the only module that runs Spark work)
* ``planner``    aggregated metrics + model -> the plan (pure Python), with
  ``pools`` (broker and router pools) and ``measures`` (node statistics)
* ``rules``      the numeric definitions and the capacity model (pure Python)
* ``report``     the self-contained HTML report
* ``cli``        options, Spark session, the run, atomic outputs

The collection's rules are imported as
``ansible_collections.enmasse.messaging.plugins.module_utils``; the directory
holding ``ansible_collections/`` must be on the Python path.
"""
