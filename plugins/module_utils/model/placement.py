# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placement rule (EnMasse's), in one place.

* routers needed = ceil(sum of router credits);
* an address with broker credit c gets max(partitions, ceil(c)) partitions,
  each with credit c / partitions;
* each partition is placed first-fit on the existing broker with room, never
  two partitions of one address on one broker; a new broker when none fits;
* an address that would take the space over its plan's resource limits stays
  pending with the reason ``quota exceeded``;
* stable: an address that already has a home keeps it unless its plan changed;
  then it is placed again and its old brokers that are no longer used for it
  are *draining* (they keep only their outgoing link until empty);
* a broker that is *draining* (leaving the pool, issue 22's scale in) takes
  no new partition; a partition homed on it is placed again (the address's
  other partitions stay where they are) and the broker is *draining* for it;
* a plan change that would take the space over its limits is *refused*: the
  address keeps its home (never pending, never drained: what exists is only
  removed by an explicit removal) and the modules refuse the change with
  ``refused_plan_changes``.

Pure Python, no Ansible imports: the Spark capacity planner imports it too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from collections import OrderedDict, namedtuple

EPS = 1e-9
QUOTA_EXCEEDED = "quota exceeded"

_FIELDS = ("name", "router", "broker", "partitions", "plan", "current_brokers",
           "current_plan", "colocate_with")


class PlacementItem(namedtuple("PlacementItem", _FIELDS)):
    """One address to place. ``colocate_with`` names the address whose brokers
    this one must share (a subscription lives beside its topic)."""

    def __new__(cls, name, router=0.0, broker=0.0, partitions=1, plan=None,
                current_brokers=None, current_plan=None, colocate_with=None):
        return super(PlacementItem, cls).__new__(
            cls, name, float(router or 0.0), float(broker or 0.0),
            int(partitions or 1), plan, list(current_brokers or []),
            current_plan, colocate_with)


def _ceil(x):
    return int(math.ceil(round(x, 9)))


def partitions_for(broker_credit, partitions=1):
    """max(partitions, ceil(broker_credit)); an address always has >= 1."""
    return max(int(partitions or 1), _ceil(broker_credit or 0.0), 1)


def routers_needed(router_credits, minimum=0):
    total = sum(router_credits)
    return max(minimum, _ceil(total))


def default_broker_name(index):
    return "broker-%d" % index


class Placement(object):
    def __init__(self):
        self.assignments = OrderedDict()   # name -> [broker per partition]
        self.pending = OrderedDict()       # name -> reason
        self.draining = OrderedDict()      # name -> [old brokers]
        self.refused = OrderedDict()       # name -> reason: a plan change that does not fit (keeps its home)
        self.brokers = OrderedDict()       # broker -> used broker credit
        self.totals = {"router": 0.0, "broker": 0.0, "aggregate": 0.0}
        self.moves = []                    # {name, partition, from, to}

    @property
    def routers_needed(self):
        return routers_needed([self.totals["router"]])

    @property
    def brokers_needed(self):
        return len([b for b, used in self.brokers.items() if used > EPS])

    def as_dict(self):
        return {
            "assignments": dict(self.assignments),
            "pending": dict(self.pending),
            "draining": dict(self.draining),
            "refused": dict(self.refused),
            "brokers": dict(self.brokers),
            "totals": dict(self.totals),
            "routers_needed": self.routers_needed,
            "brokers_needed": self.brokers_needed,
            "moves": list(self.moves),
        }


def _fits(totals, item, limits):
    return not exceeded_resources(totals, item, limits)


def exceeded_resources(totals, item, limits):
    """Which limits (router/broker/aggregate) adding ``item`` would exceed."""
    out = []
    if not limits:
        return out
    want = {"router": totals["router"] + item.router,
            "broker": totals["broker"] + item.broker}
    want["aggregate"] = want["router"] + want["broker"]
    for key in ("router", "broker", "aggregate"):
        lim = limits.get(key)
        if lim is not None and want[key] > lim + EPS:
            out.append(key)
    return out


def place(items, brokers=None, limits=None, capacity=1.0, new_broker_name=None, draining_brokers=()):
    """Place ``items`` (PlacementItem) onto ``brokers`` (existing broker names,
    in first-fit order). Returns a ``Placement``.

    Items that keep their home are accounted first, so a converge never moves
    them; the others are placed in the order given. ``draining_brokers``
    (names in ``brokers``) take nothing new: an item homed on one keeps its
    other brokers and gets a new one for that partition.
    """
    new_broker_name = new_broker_name or default_broker_name
    result = Placement()
    draining = frozenset(draining_brokers or ())
    for b in brokers or []:
        result.brokers[b] = 0.0
    items = list(items)

    # 1. addresses that keep their home (same plan, already placed, on no draining broker)
    kept = set()
    for item in items:
        if item.current_brokers and (item.current_plan is None or item.current_plan == item.plan) \
                and not draining.intersection(item.current_brokers):
            # already there: never evicted, even over quota (over_quota_warnings)
            n = len(item.current_brokers)
            for b in item.current_brokers:
                result.brokers.setdefault(b, 0.0)
                result.brokers[b] += item.broker / n
            result.assignments[item.name] = list(item.current_brokers)
            _add_totals(result, item)
            kept.add(item.name)

    # 2. the others, in order
    for item in items:
        if item.name in kept:
            continue
        if not _fits(result.totals, item, limits):
            if item.current_brokers:
                # a plan change that does not fit: the address stays where it is
                result.assignments[item.name] = list(item.current_brokers)
                result.refused[item.name] = QUOTA_EXCEEDED
            else:
                result.pending[item.name] = QUOTA_EXCEEDED
            continue
        if item.broker <= EPS and not item.colocate_with:
            # router-only address (anycast, multicast)
            result.assignments[item.name] = []
            _add_totals(result, item)
            continue
        if item.colocate_with:
            home = result.assignments.get(item.colocate_with)
            if not home:
                # topic not placed (yet: pending, or later in the list)
                result.pending[item.name] = "waiting for %s" % item.colocate_with
                continue
            targets = list(home)
            for b in targets:
                result.brokers[b] += item.broker / len(targets)
        else:
            targets = _first_fit(result, item, capacity, new_broker_name, draining)
        result.assignments[item.name] = targets
        _add_totals(result, item)
        _record_moves(result, item, targets)
    return result


def _add_totals(result, item):
    result.totals["router"] += item.router
    result.totals["broker"] += item.broker
    result.totals["aggregate"] = result.totals["router"] + result.totals["broker"]


def _first_fit(result, item, capacity, new_broker_name, draining=frozenset()):
    """The brokers of ``item``'s partitions, first fit (a new broker where
    none has room), never a draining one; their used credit is updated. An
    item leaving a draining broker (same plan) keeps its other partitions'
    brokers, in their order."""
    n = partitions_for(item.broker, item.partitions)
    share = item.broker / n
    # partition i stays on its broker unless that one drains (or the plan changed)
    same_plan = item.current_plan is None or item.current_plan == item.plan
    keep = list(item.current_brokers[:n]) if same_plan else []
    chosen = [b if i < len(keep) and b not in draining and b not in keep[:i] else None
              for i, b in enumerate(keep + [None] * (n - len(keep)))]
    for b in chosen:
        if b is not None:
            result.brokers.setdefault(b, 0.0)
            result.brokers[b] += share
    for i in range(n):
        if chosen[i] is not None:
            continue
        target = None
        for b, used in result.brokers.items():
            if b not in chosen and b not in draining and used + share <= capacity + EPS:
                target = b
                break
        if target is None:
            idx = len(result.brokers)
            target = new_broker_name(idx)
            while target in result.brokers:
                idx += 1
                target = new_broker_name(idx)
            result.brokers[target] = 0.0
        result.brokers[target] += share
        chosen[i] = target
    return chosen


def _record_moves(result, item, chosen):
    old = list(item.current_brokers or [])
    if not old:
        return
    leaving = [b for b in old if b not in chosen]
    if leaving:
        result.draining[item.name] = leaving
    for i, b in enumerate(chosen):
        src = old[i] if i < len(old) else None
        if src != b:
            result.moves.append({"name": item.name, "partition": i,
                                 "from": src, "to": b})


def quota_errors(space_name, plan_name, limits, items, label=None):
    """Human messages for every item that does not fit the plan's limits, in
    order (the same order the modules converge in). ``label(name)`` gives the
    field path to name in the message (default: ``address 'name'``)."""
    res = place(items, brokers=["broker"], limits=limits, capacity=float("inf"))
    label = label or (lambda name: "address %r" % name)
    msgs = []
    for item in items:
        # a refused plan change is an error here like a new address that does not fit
        if (res.pending.get(item.name) or res.refused.get(item.name)) == QUOTA_EXCEEDED:
            msgs.append(_over_quota(space_name, plan_name, limits, item, res, label(item.name)))
    return msgs, res


def _over_quota(space_name, plan_name, limits, item, res, label):
    allowed = ", ".join("%s %g" % (k, limits[k]) for k in ("router", "broker", "aggregate")
                        if limits.get(k) is not None)
    over = exceeded_resources(res.totals, item, limits)
    return ("%s: %r (router %g, broker %g) is over quota: quota exceeded for %s; address space %r "
            "plan %r allows %s and the addresses that fit already use router %g, broker %g"
            % (label + ".plan", item.plan, item.router, item.broker, ", ".join(over) or "the plan",
               space_name, plan_name, allowed or "nothing", res.totals["router"], res.totals["broker"]))


def refused_plan_changes(space_name, plan_name, limits, items, result, label=None):
    """Messages for the plan changes ``place`` refused (``result.refused``):
    the address keeps its plan and its home, nothing of it is deleted; a
    converge refuses the whole change with these."""
    by_name = dict((i.name, i) for i in items)
    label = label or (lambda name: "address %r" % name)
    return ["%s; the address keeps its plan %r and its messages: remove it explicitly, or move the space to a "
            "larger plan first" % (_over_quota(space_name, plan_name, limits, by_name[n], result, label(n)),
                                   by_name[n].current_plan)
            for n in result.refused]


def over_quota_warnings(space_name, plan_name, limits, result):
    """Warnings when the addresses that already have a home exceed the plan's
    limits (the plan changed since they were placed): they stay, nothing new
    that costs credits fits until the space is back under its limits."""
    over = []
    for key in ("router", "broker", "aggregate"):
        lim = (limits or {}).get(key)
        if lim is not None and result.totals[key] > lim + EPS:
            over.append("%s %g of %g" % (key, result.totals[key], lim))
    if not over:
        return []
    return ["address space %r is over the quota of its plan %r: its addresses use %s; they stay, but no "
            "address that costs credits can be added until the space is within its limits (move it to a "
            "larger plan or delete addresses)" % (space_name, plan_name, ", ".join(over))]
