# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The status of an address and of an address space, one shape for every
backend (EnMasse's phases). Pure Python: no I/O, no Ansible.

An address status always has ``ready``, ``phase``, ``messages`` (why it is
not ready; empty when it is), ``message_count`` and ``consumers`` (``None``
where the backend cannot tell, e.g. a router-only anycast address or an
operator that does not report them) and ``owned``. A backend adds what only
it knows (standard: ``brokers``, ``routers``, ``message_counts``,
``draining``; kubernetes: ``reported``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

PHASE_ACTIVE = "Active"
PHASE_PENDING = "Pending"
PHASE_CONFIGURING = "Configuring"
PHASE_DELETED = "Deleted"
PHASE_FAILED = "Failed"

ADDRESS_STATUS_KEYS = ("ready", "phase", "messages", "message_count", "consumers", "owned")


def address_status(phase, messages=(), message_count=None, consumers=None, owned=True, **extra):
    """An address status; ``ready`` is ``phase == Active``."""
    out = {"ready": phase == PHASE_ACTIVE, "phase": phase, "messages": list(messages),
           "message_count": message_count, "consumers": consumers, "owned": owned}
    out.update(extra)
    return out


def deleted(owned=True):
    """The status of an address the request deleted (or found gone)."""
    return address_status(PHASE_DELETED, owned=owned)


def complete(status, owned=True):
    """``status`` with every key of the shape (missing ones ``None``; ``owned``
    as given when the backend did not say)."""
    out = dict(status or {})
    out.setdefault("phase", PHASE_PENDING)
    out.setdefault("ready", out["phase"] == PHASE_ACTIVE)
    out.setdefault("messages", [])
    out.setdefault("message_count", None)
    out.setdefault("consumers", None)
    out.setdefault("owned", owned)
    return out


def space_status(exists, problems=(), error=None, notes=(), **extra):
    """An address space status: Pending (not created yet), Failed (an error
    while reading it), Configuring (``problems``: what is missing or down),
    Active. ``notes``: messages that do not make it unready. ``extra``:
    endpoints, routers, brokers, ..."""
    messages = ([error] if error else []) + list(problems) + list(notes)
    if not exists:
        phase = PHASE_PENDING
    elif error or problems:
        phase = PHASE_FAILED if error else PHASE_CONFIGURING
    else:
        phase = PHASE_ACTIVE
    out = {"ready": phase == PHASE_ACTIVE, "phase": phase, "messages": messages}
    out.update(extra)
    return out


def space_result(name, record, status, extra=None):
    """The ``address_space`` of a module result: the record's fields (null
    when it has none), ``exists``, ``extra``, and ``status``."""
    out = {"name": name, "type": None, "plan": None, "authentication_service": None, "exists": bool(record)}
    out.update(record or {})
    out.update(extra or {})
    out["status"] = status
    return out


def deleted_space(name):
    """The ``address_space`` of a result after state=absent."""
    return space_result(name, None, {"ready": False, "phase": PHASE_DELETED, "messages": [], "endpoints": []})
