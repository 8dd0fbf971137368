# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure-Python rules of the capacity planner (no Spark, no Ansible): the
numeric definitions, the capacity model and input-file loading.

Everything numeric that the Spark job does is defined here once, so it can be
unit-tested with hand-computed numbers; the Spark job implements the same
definitions as DataFrame expressions and a test checks both give the same
numbers on small data.

* counter increases with reset handling (``counter_increase``,
  ``series_windows``): Prometheus-style, a counter that goes down, or whose node
  restarted in the interval, restarted from 0, so the increase is the new value;
* windows: an interval (t_prev, t] belongs to the window that holds t; a
  window's rate is sum(increase) / sum(interval lengths) of its intervals, and
  it is valid when those intervals cover at least ``min_window_coverage`` of
  the window (``series_windows``, ``window_rate``, ``window_valid``);
* percentiles: linear interpolation between closest ranks (numpy's default,
  Hyndman-Fan type 7, Spark's exact ``percentile``);
* verdicts (``needed_nodes``, ``verdict``), linear forecast
  (``linear_fit``, ``forecast_crossing``) and the DESIGN section 5 sizing rules
  (``router_memory_model``, ``broker_disk_model``);
* the capacity model (defaults, merge, validation) and input-file loading.
"""

from __future__ import absolute_import, division, print_function

import copy
import datetime as _dt
import json
import math
import os

from ansible_collections.enmasse.messaging.plugins.module_utils.model import schema

from . import histogram

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# the address types and node kinds of the metrics schema (model/schema.py);
# ADDRESS_TYPES' order gives the type codes of the Spark aggregation
ROUTER_ONLY_TYPES = ("anycast", "multicast")
BROKER_HELD_TYPES = tuple(t for t in schema.ADDRESS_TYPES if t not in ROUTER_ONLY_TYPES)
ADDRESS_TYPES = BROKER_HELD_TYPES + ROUTER_ONLY_TYPES
NODE_KINDS = (schema.BROKER, schema.ROUTER)
STATISTICS = ("avg", "p95", "p99", "max")

BROKER_RESOURCES = ("memory", "disk", "connections", "msg_rate")
ROUTER_RESOURCES = ("memory", "connections", "links", "msg_rate")
RESOURCE_UNITS = {"memory": "bytes", "disk": "bytes", "connections": "connections",
                  "links": "links", "msg_rate": "msg/s"}

UNDER = "under-provisioned"
RIGHT = "right-provisioned"
OVER = "over-provisioned"


class InputError(ValueError):
    """Bad input: the job prints the message and exits non-zero."""


# ---------------------------------------------------------------- capacity model

# exact: sorted values, linear interpolation; histogram: the same over fixed
# log buckets (histogram.py: within 1 %, mergeable across days); approx:
# Spark's percentile_approx
PERCENTILE_METHODS = ("exact", "histogram", "approx")

DEFAULT_CAPACITY_MODEL = {
    # metric windows
    "window_seconds": 300,          # aggregation window for rates and gauges
    "max_gap_seconds": 600,         # a sample interval longer than this is a gap
    "min_window_coverage": 0.5,     # a window is valid if its intervals cover >= this share
    "percentile_method": "exact",   # exact (linear interpolation) | histogram (log buckets, 1 %) | approx
    "rate_statistic": "p95",        # which statistic of the window rates sizes msg_rate
    "node_statistic": "p95",        # which statistic of node gauges sizes memory/disk/...
    "hot_address_share": 0.1,       # hot: throughput >= share x broker msg_rate capacity
    "message_size_bytes": 1024,     # fallback average message size
    "thresholds": {"high": 0.8, "low": 0.3},
    "broker": {
        "min_nodes": 1,
        "prefer_reported_max": True,   # use memory_max/disk_max from the samples if > 0
        "disk_base_bytes": 50 * MIB,   # broker disk = queues x messages x size + 5% + 50 MB
        "disk_overhead": 0.05,
        "resources": {
            "memory": {"capacity": 2 * GIB, "baseline": 256 * MIB},
            "disk": {"capacity": 20 * GIB, "baseline": 50 * MIB},
            "connections": {"capacity": 1000, "baseline": 0},
            "msg_rate": {"capacity": 20000, "baseline": 0},
        },
    },
    "router": {
        "min_nodes": 1,
        "prefer_reported_max": True,
        "sizing": {
            # router memory ~ 50 MB + 7 kB per anycast/multicast address
            #   + 32 kB per queue/topic (any broker-held address)
            #   + links x link capacity x message size + 120 kB per connection
            "base_bytes": 50 * MIB,
            "per_anycast_address_bytes": 7 * KIB,
            "per_queue_topic_address_bytes": 32 * KIB,
            "per_connection_bytes": 120 * KIB,
            "link_capacity": 250,
            "message_size_factor": None,   # None: observed average message size
        },
        "resources": {
            "memory": {"capacity": 1 * GIB, "baseline": 50 * MIB},
            "connections": {"capacity": 10000, "baseline": 0},
            "links": {"capacity": 20000, "baseline": 0},
            "msg_rate": {"capacity": 100000, "baseline": 0},
        },
    },
    "forecast": {"horizon_days": 365, "min_days": 2},
}


def _deep_merge(base, extra):
    out = copy.deepcopy(base)
    for k, v in (extra or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (
        isinstance(v, float) and (math.isnan(v) or math.isinf(v)))


def load_capacity_model(user=None):
    """Defaults merged with ``user`` (a dict), validated; thresholds resolved
    per node kind and resource (``high``/``low`` on each resource entry)."""
    user = user or {}
    if not isinstance(user, dict):
        raise InputError("capacity model: must be a mapping, got %r" % (user,))
    errors = []
    known_top = set(DEFAULT_CAPACITY_MODEL)
    for k in user:
        if k not in known_top:
            errors.append("capacity model: unknown key %r (known: %s)" % (k, ", ".join(sorted(known_top))))
    for kind in NODE_KINDS:
        for res in (user.get(kind) or {}).get("resources") or {}:
            allowed = BROKER_RESOURCES if kind == "broker" else ROUTER_RESOURCES
            if res not in allowed:
                errors.append("capacity model: %s.resources.%s: unknown resource (known: %s)"
                              % (kind, res, ", ".join(allowed)))
    m = _deep_merge(DEFAULT_CAPACITY_MODEL, user)

    def pos(path, v, allow_zero=False):
        if not _is_num(v) or v < 0 or (v == 0 and not allow_zero):
            errors.append("capacity model: %s: %r must be a number %s 0" % (path, v, ">=" if allow_zero else ">"))

    pos("window_seconds", m["window_seconds"])
    pos("max_gap_seconds", m["max_gap_seconds"])
    pos("message_size_bytes", m["message_size_bytes"])
    pos("hot_address_share", m["hot_address_share"])
    cov = m["min_window_coverage"]
    if not _is_num(cov) or not 0 < cov <= 1:
        errors.append("capacity model: min_window_coverage: %r must be in (0, 1]" % (cov,))
    for key in ("rate_statistic", "node_statistic"):
        if m[key] not in STATISTICS:
            errors.append("capacity model: %s: %r must be one of %s" % (key, m[key], ", ".join(STATISTICS)))
    if m["percentile_method"] not in PERCENTILE_METHODS:
        errors.append("capacity model: percentile_method: %r must be one of %s"
                      % (m["percentile_method"], ", ".join(PERCENTILE_METHODS)))
    th = m["thresholds"]
    for kind in NODE_KINDS:
        km = m[kind]
        mn = km.get("min_nodes")
        if not isinstance(mn, int) or isinstance(mn, bool) or mn < 0:
            errors.append("capacity model: %s.min_nodes: %r must be an integer >= 0" % (kind, mn))
        for res, spec in km["resources"].items():
            path = "%s.resources.%s" % (kind, res)
            if not isinstance(spec, dict):
                errors.append("capacity model: %s: must be a mapping" % path)
                continue
            spec.setdefault("high", th.get("high"))
            spec.setdefault("low", th.get("low"))
            pos(path + ".capacity", spec.get("capacity"))
            pos(path + ".baseline", spec.get("baseline", 0), allow_zero=True)
            hi, lo = spec.get("high"), spec.get("low")
            if not _is_num(hi) or not 0 < hi <= 1:
                errors.append("capacity model: %s.high: %r must be in (0, 1]" % (path, hi))
            elif not _is_num(lo) or not 0 <= lo < hi:
                errors.append("capacity model: %s.low: %r must be in [0, high)" % (path, lo))
    pos("broker.disk_base_bytes", m["broker"]["disk_base_bytes"], allow_zero=True)
    pos("broker.disk_overhead", m["broker"]["disk_overhead"], allow_zero=True)
    for k, v in m["router"]["sizing"].items():
        if k == "message_size_factor" and v is None:
            continue
        pos("router.sizing." + k, v, allow_zero=True)
    pos("forecast.horizon_days", m["forecast"]["horizon_days"])
    if errors:
        raise InputError("; ".join(errors))
    return m


# --------------------------------------------------------------- input files

def load_structured_file(path, what):
    """JSON or YAML file -> object. Clear InputError on any problem."""
    if not os.path.exists(path):
        raise InputError("%s file %s does not exist" % (what, path))
    with open(path) as f:
        text = f.read()
    if path.endswith((".yml", ".yaml")):
        try:
            import yaml
        except ImportError:
            raise InputError("%s file %s is YAML but PyYAML is not installed; "
                             "install PyYAML or give the file as JSON" % (what, path))
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InputError("%s file %s is not valid YAML: %s" % (what, path, e))
    try:
        return json.loads(text)
    except ValueError as e:
        raise InputError("%s file %s is not valid JSON: %s" % (what, path, e))


# ---------------------------------------------------------- counters and rates

def counter_increase(prev, cur, restarted=False):
    """Increase of a cumulative counter from ``prev`` to ``cur``.

    A counter that went down, or whose node restarted in between, started
    again from zero, so the increase is ``cur`` (the count since the restart).
    Never negative; the messages between the last sample and the restart are
    not seen (as in Prometheus' ``rate``).
    """
    if prev is None or cur is None:
        return None
    if restarted or cur < prev:
        return cur
    return cur - prev


def window_start(t, window):
    """Start (epoch seconds) of the window holding time ``t``."""
    return math.floor(t / window) * window


def series_windows(samples, window, restarts=(), max_gap=None):
    """Per-window increases of one series (one address on one node).

    ``samples``: iterable of ``(t, c_in, c_out)`` (t in epoch seconds, counters
    cumulative; c_out may be None); ``restarts``: restart times of the node.
    Each interval (t_prev, t] with 0 < dt <= max_gap contributes its increase
    and its length to the window of ``t``. dt == 0 (duplicate sample) and
    dt > max_gap (gap) intervals contribute nothing and are counted.

    Returns {window_start: {"inc_in", "inc_out", "dt", "n", "resets", "gaps", "dups"}}.
    """
    rows = sorted(samples, key=lambda s: s[0])
    out = {}
    prev = None
    for s in rows:
        t = s[0]
        w = out.setdefault(window_start(t, window), {"inc_in": 0, "inc_out": 0, "dt": 0.0, "n": 0,
                                                     "resets": 0, "gaps": 0, "dups": 0})
        w["n"] += 1
        if prev is not None:
            dt = t - prev[0]
            if dt <= 0:
                w["dups"] += 1
            elif max_gap is not None and dt > max_gap:
                w["gaps"] += 1
            else:
                restarted = any(prev[0] < r <= t for r in restarts)
                inc_in = counter_increase(prev[1], s[1], restarted)
                inc_out = counter_increase(prev[2], s[2], restarted) if len(s) > 2 else None
                if restarted or (prev[1] is not None and s[1] is not None and s[1] < prev[1]) or (
                        len(s) > 2 and prev[2] is not None and s[2] is not None and s[2] < prev[2]):
                    w["resets"] += 1
                w["inc_in"] += inc_in or 0
                w["inc_out"] += inc_out or 0
                w["dt"] += dt
        prev = s
    return out


def window_rate(inc, dt):
    """Rate of a window: increase / covered seconds (None when nothing covered)."""
    if not dt:
        return None
    return inc / dt


def window_valid(dt, window, min_coverage):
    return dt >= min_coverage * window - 1e-9


# ---------------------------------------------------------------- percentiles

def percentile(values, p):
    """Linear interpolation between closest ranks (numpy default, type 7):
    h = (n - 1) p, result = x[floor h] + (h - floor h)(x[ceil h] - x[floor h]).
    This is what Spark's exact ``percentile`` computes."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return None
    if not 0 <= p <= 1:
        raise ValueError("percentile p must be in [0, 1]")
    h = (n - 1) * p
    lo = int(math.floor(h))
    hi = int(math.ceil(h))
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def percentile_nearest_rank(values, p):
    """Smallest value with at least p of the values <= it (the definition
    percentile_approx converges to; used with percentile_method: approx)."""
    xs = sorted(values)
    if not xs:
        return None
    k = max(1, int(math.ceil(p * len(xs))))
    return xs[k - 1]


def summarize(values, method="exact"):
    """avg, p95, p99, max and count of ``values`` (window rates)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"avg": None, "p95": None, "p99": None, "max": None, "count": 0}
    pf = {"exact": percentile, "histogram": histogram.percentile_of}.get(method, percentile_nearest_rank)
    return {"avg": sum(vals) / len(vals), "p95": pf(vals, 0.95), "p99": pf(vals, 0.99),
            "max": max(vals), "count": len(vals)}


def detect_restarts(node_samples):
    """Restart times from node samples ``(t, uptime_ms)``: when uptime drops,
    the node restarted at ``t - uptime_ms / 1000``."""
    out = []
    prev = None
    for t, up in sorted(node_samples, key=lambda s: s[0]):
        if prev is not None and up is not None and prev[1] is not None and up < prev[1]:
            out.append(t - up / 1000.0)
        prev = (t, up)
    return out


def authoritative_kind(address_type, kinds_present):
    """Which node kind's counters measure an address: brokers for stored
    addresses, routers for direct (anycast/multicast) ones; the other kind
    when the preferred one has no samples."""
    pref = "router" if address_type in ROUTER_ONLY_TYPES else "broker"
    if pref in kinds_present:
        return pref
    other = "broker" if pref == "router" else "router"
    return other if other in kinds_present else None


def reference_address_stats(rows, window, max_gap, min_coverage, restarts=None, method="exact"):
    """Reference (pure Python) of the Spark aggregation, for tests.

    ``rows``: dicts with infra, address_space, address, node, node_kind, t
    (epoch seconds) and counters (messages_added, messages_acknowledged,
    deliveries_ingress, deliveries_egress). ``restarts``: {(infra, node): [t]}.
    Returns {(infra, space, address, node_kind): {"ingress": stats,
    "egress": stats, "windows": n, "windows_valid": n}} where a window's rate
    is the sum over the address's nodes of each node's increase / covered
    seconds, and the address window is valid when every node's window is.
    """
    restarts = restarts or {}
    series = {}
    for r in rows:
        key = (r["infra"], r["address_space"], r["address"], r["node_kind"], r["node"])
        if r["node_kind"] == "router":
            cin, cout = r.get("deliveries_ingress"), r.get("deliveries_egress")
        else:
            cin, cout = r.get("messages_added"), r.get("messages_acknowledged")
        series.setdefault(key, []).append((r["t"], cin, cout))
    per_addr = {}
    for key, samples in series.items():
        infra, space, address, kind, node = key
        wins = series_windows(samples, window, restarts.get((infra, node), ()), max_gap)
        acc = per_addr.setdefault((infra, space, address, kind), {})
        for ws, w in wins.items():
            a = acc.setdefault(ws, {"in": 0.0, "out": 0.0, "valid": True})
            if w["dt"] > 0:
                a["in"] += w["inc_in"] / w["dt"]
                a["out"] += w["inc_out"] / w["dt"]
            a["valid"] = a["valid"] and window_valid(w["dt"], window, min_coverage)
    out = {}
    for key, wins in per_addr.items():
        valid = [w for w in wins.values() if w["valid"]]
        out[key] = {"ingress": summarize([w["in"] for w in valid], method),
                    "egress": summarize([w["out"] for w in valid], method),
                    "windows": len(wins), "windows_valid": len(valid)}
    return out


# --------------------------------------------------------- sizing rules (DESIGN 5)

def router_memory_model(anycast_addresses, queue_topic_addresses, links, connections, sizing,
                        message_size):
    """Router memory (bytes) ~ base + per anycast/multicast address + per
    broker-held address + links x link capacity x message size + per connection."""
    return (sizing["base_bytes"]
            + sizing["per_anycast_address_bytes"] * anycast_addresses
            + sizing["per_queue_topic_address_bytes"] * queue_topic_addresses
            + links * sizing["link_capacity"] * message_size
            + sizing["per_connection_bytes"] * connections)


def broker_disk_model(message_bytes, overhead=0.05, base=50 * MIB):
    """Broker disk = queues x messages x size (i.e. the bytes of the messages
    stored) + 5 % + 50 MB."""
    return message_bytes * (1.0 + overhead) + base


# ----------------------------------------------------------------- verdicts

def needed_nodes(divisible, fixed_per_node, capacity, high):
    """Nodes needed so that per node ``fixed_per_node + divisible / n`` stays
    at or below ``capacity * high``. ``None`` when one node's fixed part alone
    exceeds it (no number of nodes of this size helps: scale up instead)."""
    usable = capacity * high - fixed_per_node
    if divisible <= 0:
        return 0 if usable >= 0 else None
    if usable <= 0:
        return None
    return int(math.ceil(round(divisible / usable, 9)))


def verdict(current, needed, utilisation, lows, minimum=1, removable=None):
    """Under-, right- or over-provisioned.

    * ``needed`` > ``current`` -> under-provisioned, add needed - current;
    * ``needed`` < ``current`` and every resource's aggregate utilisation
      (``utilisation``: {resource: demand / (current x capacity)}) is below its
      low threshold (``lows``: {resource: low}) -> over-provisioned, remove
      ``removable`` (default current - needed) nodes;
    * otherwise right-provisioned (the band between low and high thresholds is
      deliberate hysteresis).
    ``needed`` is never taken below ``minimum``.
    """
    needed = max(int(needed), int(minimum))
    if needed > current:
        return {"verdict": UNDER, "current": current, "needed": needed, "change": needed - current}
    if needed < current and utilisation and all(
            (u or 0.0) < lows.get(r, 0.0) for r, u in utilisation.items()):
        rem = current - needed if removable is None else min(removable, current - needed)
        if rem > 0:
            return {"verdict": OVER, "current": current, "needed": current - rem, "change": -rem}
    return {"verdict": RIGHT, "current": current, "needed": current, "change": 0}


def combine_verdicts(verdicts):
    """One verdict from several (brokers, routers, pools): under wins, then over."""
    vs = [v for v in verdicts if v]
    if any(v == UNDER for v in vs):
        return UNDER
    if any(v == OVER for v in vs):
        return OVER
    return RIGHT


# ----------------------------------------------------------------- forecast

def linear_fit(xs, ys):
    """Least squares y = intercept + slope x. Returns (intercept, slope, r2)."""
    n = len(xs)
    if n != len(ys) or n == 0:
        raise ValueError("linear_fit needs equally long, non-empty xs and ys")
    if n == 1:
        return ys[0], 0.0, None
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0, None
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys))
    r2 = 1.0 if ss_tot == 0 else 1.0 - ss_res / ss_tot
    return intercept, slope, r2


def forecast_crossing(days, values, limit, first_day, last_day=None, horizon_days=365):
    """Fit a line to (day index, value) and find the first day the fit reaches
    ``limit``.

    ``days``: day offsets from ``first_day`` (a datetime.date); ``last_day``:
    the last observed day offset (default max(days)). Returns a dict with
    intercept, slope_per_day, r2, limit and ``status``: ``exceeded`` (the fit
    is already at or above the limit on the last observed day), ``date``
    (``date`` = first_day + ceil(x) days, ``days_left`` from the last observed
    day), ``beyond_horizon`` or ``never`` (slope <= 0).
    """
    intercept, slope, r2 = linear_fit(days, values)
    last = max(days) if last_day is None else last_day
    out = {"intercept": intercept, "slope_per_day": slope, "r2": r2, "limit": limit,
           "points": len(days), "date": None, "days_left": None}
    if limit is None:
        out["status"] = "no-limit"
        return out
    now_val = intercept + slope * last
    if now_val >= limit:
        out["status"] = "exceeded"
        out["date"] = (first_day + _dt.timedelta(days=int(last))).isoformat()
        out["days_left"] = 0
        return out
    if slope <= 0:
        out["status"] = "never"
        return out
    x = (limit - intercept) / slope
    day = int(math.ceil(round(x, 9)))
    left = day - last
    if left > horizon_days:
        out["status"] = "beyond_horizon"
        out["days_left"] = left
        return out
    out["status"] = "date"
    out["date"] = (first_day + _dt.timedelta(days=day)).isoformat()
    out["days_left"] = left
    return out


def daily_peaks(points):
    """``points``: iterable of (epoch seconds, value) -> sorted [(date, max, mean)]."""
    days = {}
    for t, v in points:
        if v is None:
            continue
        d = _dt.datetime.fromtimestamp(t, _dt.timezone.utc).date()
        days.setdefault(d, []).append(v)
    return [(d, max(vs), sum(vs) / len(vs)) for d, vs in sorted(days.items())]


# ----------------------------------------------------------------- misc

def fmt_bytes(n):
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%.0f %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024.0
    return "%.1f TiB" % n


def fmt_value(resource, v):
    if v is None:
        return "-"
    if RESOURCE_UNITS.get(resource) == "bytes":
        return fmt_bytes(v)
    if resource == "msg_rate":
        return "%.1f msg/s" % v
    return "%.0f" % v
