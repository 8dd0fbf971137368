# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception base of the collection.

Every error a module can report derives from ``EnmasseError``: ``errors`` is
the list of every problem found (each naming field, value and rule where there
is one), ``result`` what was done before the failure (``changed``,
``changes``), so the runner reports both. ``str(e)`` joins the messages.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class EnmasseError(Exception):
    """Base of every error the collection reports."""

    def __init__(self, errors, result=None):
        self.errors = [errors] if isinstance(errors, str) else list(errors)
        self.result = result or {}
        super(EnmasseError, self).__init__("; ".join(self.errors))


class ConfigError(EnmasseError):
    """Missing or inconsistent configuration (options, connection file)."""


class ValidationError(EnmasseError, ValueError):
    """The desired state breaks a rule of the model."""


class PlanError(EnmasseError, ValueError):
    """A plan (catalogue entry) is invalid or unknown."""


class ClientError(EnmasseError):
    """A management API call failed (HTTP, AMQP management)."""


class ServiceError(EnmasseError):
    """The live system refused a change or is in a state the change cannot
    be applied to."""


class StoreError(EnmasseError):
    """A local store (ownership ledger, metrics store) cannot be used."""


class MetricsError(EnmasseError):
    """Metrics cannot be sampled or stored."""
