# -*- coding: utf-8 -*-
# Copyright: enmasse.messaging contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-contained HTML report for a capacity plan.

One file: inline CSS, plots as inline SVG drawn here (no plotting library, no
scripts, no external URL), so it opens anywhere, offline, air-gapped.
"""

from __future__ import absolute_import, division, print_function

import datetime as _dt
import html
import math

from . import rules as lib

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]
SECTIONS = [("summary", "Verdict"), ("data-quality", "Data quality"), ("capacity-model", "Capacity model"),
            ("observed-load", "Observed load"), ("utilisation", "Utilisation before / after"),
            ("goals", "Goals"), ("proposal", "Placement proposal"), ("forecast", "Forecast")]

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
nav{padding:6px 24px;background:#eceff1;font-size:13px}nav a{margin-right:14px;color:#0d47a1}
main{padding:8px 24px 40px}section{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 16px;
margin:14px 0}h2{font-size:17px;border-bottom:1px solid #eee;padding-bottom:4px}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}th,td{border:1px solid #ddd;padding:2px 6px;
text-align:right}th{background:#f5f5f5}td.l,th.l{text-align:left}.under{color:#b71c1c;font-weight:bold}
.over{color:#e65100;font-weight:bold}.right{color:#1b5e20;font-weight:bold}.ok{color:#1b5e20}.bad{color:#b71c1c}
.muted{color:#777}.plots{display:flex;flex-wrap:wrap;gap:10px}figure{margin:4px}figcaption{font-size:12px;
color:#555;text-align:center}svg text{font-family:system-ui,sans-serif}.hot{background:#ffebee}
.idle{background:#eceff1}details{margin:6px 0}
"""


def esc(s):
    return html.escape("" if s is None else str(s))


def pct(v):
    return "-" if v is None else "%.1f%%" % (100.0 * v)


def num(v, d=1):
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "-"
    return ("%%.%df" % d) % v


def vclass(v):
    return {lib.UNDER: "under", lib.OVER: "over", lib.RIGHT: "right"}.get(v, "")


def _fmt_tick(v):
    a = abs(v)
    if a >= 1e9:
        return "%.1fG" % (v / 1e9)
    if a >= 1e6:
        return "%.1fM" % (v / 1e6)
    if a >= 1e3:
        return "%.1fk" % (v / 1e3)
    if a >= 10 or v == 0:
        return "%.0f" % v
    return "%.2g" % v


def _nice_max(v):
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


# ------------------------------------------------------------------ SVG plots

def _svg_frame(title, width, height, plot, ymax, sy, tick):
    """The opening of a chart: the svg element, its title, the plot area
    ``plot`` = (left, top, width, height) and five y grid lines labelled with
    ``tick(value)``; the chart appends its marks and closes it."""
    pad_l, pad_t, pw, ph = plot
    out = ['<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">'
           % (width, height, width, height, esc(title)),
           '<text x="%d" y="15" font-size="13" font-weight="bold">%s</text>' % (pad_l, esc(title)),
           '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (pad_l, pad_t, pw, ph)]
    for i in range(5):
        yv = ymax * i / 4.0
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (pad_l, pad_l + pw, sy(yv), sy(yv)))
        out.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">%s</text>'
                   % (pad_l - 4, sy(yv) + 3, tick(yv)))
    return out


def line_chart(series, title, y_label="", hlines=(), width=640, height=240, time_x=True, points=False):
    """series: [(label, [(x, y)])]; hlines: [(y, label, colour)]."""
    pad_l, pad_r, pad_t, pad_b = 56, 12, 24, 40
    xs = [x for _unused, pts in series for x, _unused in pts]
    ys = [y for _unused, pts in series for _unused, y in pts if y is not None] + [h[0] for h in hlines if h[0] is not None]
    if not xs:
        return "<p class='muted'>%s: no data</p>" % esc(title)
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    ymax = _nice_max(max(ys) if ys else 1.0)
    pw, ph = width - pad_l - pad_r, height - pad_t - pad_b

    def sx(x):
        return pad_l + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return pad_t + ph - (y / ymax) * ph

    out = _svg_frame(title, width, height, (pad_l, pad_t, pw, ph), ymax, sy, _fmt_tick)
    for i in range(5):
        xv = x0 + (x1 - x0) * i / 4.0
        lab = (_dt.datetime.fromtimestamp(xv, _dt.timezone.utc).strftime("%m-%d %H:%M") if time_x
               else _fmt_tick(xv))
        out.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%s</text>'
                   % (sx(xv), pad_t + ph + 14, esc(lab)))
    if y_label:
        out.append('<text x="12" y="%d" font-size="10" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>'
                   % (pad_t + ph // 2, pad_t + ph // 2, esc(y_label)))
    for y, label, colour in hlines:
        if y is None:
            continue
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="5,3"/>'
                   % (pad_l, pad_l + pw, sy(y), sy(y), colour))
        out.append('<text x="%d" y="%.1f" font-size="10" fill="%s" text-anchor="end">%s</text>'
                   % (pad_l + pw - 2, sy(y) - 3, colour, esc(label)))
    lx = pad_l
    for i, (label, pts) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        pts = [(x, y) for x, y in sorted(pts) if y is not None]
        if not pts:
            continue
        is_points = points and label.endswith("(points)")
        if is_points:
            for x, y in pts:
                out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (sx(x), sy(y), colour))
        if len(pts) > 1 and not is_points:
            d = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", sx(x), sy(y)) for j, (x, y) in enumerate(pts))
            out.append('<path d="%s" fill="none" stroke="%s" stroke-width="1.3"/>' % (d, colour))
        out.append('<rect x="%d" y="%d" width="10" height="4" fill="%s"/>' % (lx, height - 12, colour))
        out.append('<text x="%d" y="%d" font-size="10">%s</text>' % (lx + 13, height - 7, esc(label)))
        lx += 20 + 6 * len(label)
    out.append("</svg>")
    return "".join(out)


def bar_chart(categories, groups, title, hline=None, width=None, height=220, y_max=None, y_label="", strip=True):
    """categories: names on x; groups: [(label, [value per category])]."""
    pad_l, pad_r, pad_t, pad_b = 48, 12, 24, 64
    categories = _strip_common_prefix(categories) if strip else list(categories)
    n = max(1, len(categories))
    g = max(1, len(groups))
    width = width or max(280, min(1100, pad_l + pad_r + n * max(46, 12 * g + 14)))
    vals = [v for _unused, vs in groups for v in vs if v is not None] + ([hline[0]] if hline else [])
    ymax = y_max or _nice_max(max(vals) if vals else 1.0)
    if vals and max(vals) > ymax:
        ymax = _nice_max(max(vals))
    pw, ph = width - pad_l - pad_r, height - pad_t - pad_b
    slot = pw / float(n)
    bw = max(2.0, min(14.0, (slot - 4) / g))

    def sy(y):
        return pad_t + ph - (min(y, ymax) / ymax) * ph

    out = _svg_frame(title, width, height, (pad_l, pad_t, pw, ph), ymax, sy,
                     lambda yv: y_label == "%" and "%.0f%%" % (100 * yv) or _fmt_tick(yv))
    for ci, cat in enumerate(categories):
        cx = pad_l + ci * slot + slot / 2.0
        for gi, (label, vs) in enumerate(groups):
            v = vs[ci]
            if v is None:
                continue
            x = cx - g * bw / 2.0 + gi * bw
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>'
                       % (x, sy(v), bw - 1, max(0.5, pad_t + ph - sy(v)), PALETTE[gi % len(PALETTE)], esc(cat),
                          esc(label), esc(pct(v) if y_label == "%" else _fmt_tick(v))))
        out.append('<text x="%.1f" y="%d" font-size="9" text-anchor="end" transform="rotate(-30 %.1f %d)">%s</text>'
                   % (cx + 4, pad_t + ph + 12, cx + 4, pad_t + ph + 12, esc(cat[-18:])))
    if hline:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#b71c1c" stroke-dasharray="5,3"/>'
                   % (pad_l, pad_l + pw, sy(hline[0]), sy(hline[0])))
        out.append('<text x="%d" y="%.1f" font-size="10" fill="#b71c1c" text-anchor="end">%s</text>'
                   % (pad_l + pw - 2, sy(hline[0]) - 3, esc(hline[1])))
    lx = pad_l
    for gi, (label, _unused) in enumerate(groups):
        out.append('<rect x="%d" y="%d" width="10" height="6" fill="%s"/>' % (lx, height - 10, PALETTE[gi % len(PALETTE)]))
        out.append('<text x="%d" y="%d" font-size="10">%s</text>' % (lx + 13, height - 4, esc(label)))
        lx += 24 + 6 * len(label)
    out.append("</svg>")
    return "".join(out)


def _strip_common_prefix(names):
    """broker names differ in their tails: drop the shared prefix up to a '-' or '/'."""
    if len(names) < 2:
        return list(names)
    pre = names[0]
    for n in names[1:]:
        while not n.startswith(pre):
            pre = pre[:-1]
    cut = max(pre.rfind("-"), pre.rfind("/")) + 1
    return [n[cut:] or n for n in names]


def figure(svg, caption):
    return "<figure>%s<figcaption>%s</figcaption></figure>" % (svg, esc(caption))


# ------------------------------------------------------------------ sections

def table(headers, rows, left=1):
    h = "".join("<th class='l'>%s</th>" % esc(x) if i < left else "<th>%s</th>" % esc(x)
                for i, x in enumerate(headers))
    body = []
    for r in rows:
        cls = ""
        if isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], str) and isinstance(r[0], list):
            r, cls = r
        cells = "".join(("<td class='l'>%s</td>" if i < left else "<td>%s</td>") % c for i, c in enumerate(r))
        body.append("<tr class='%s'>%s</tr>" % (cls, cells))
    return "<table><tr>%s</tr>%s</table>" % (h, "".join(body))


def render(plan, agg=None):
    agg = agg or {}
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             "<title>Capacity plan</title><style>%s</style></head><body>" % CSS,
             "<header><h1>Capacity plan &mdash; enmasse.messaging</h1><div>generated %s &middot; data %s to %s</div>"
             "</header>" % (esc(plan.get("generated_at")), esc(plan["data_quality"]["time_range"]["start"]),
                            esc(plan["data_quality"]["time_range"]["end"])),
             "<nav>%s</nav><main>" % "".join("<a href='#%s'>%s</a>" % (i, esc(t)) for i, t in SECTIONS)]
    parts.append(sec_summary(plan))
    parts.append(sec_data_quality(plan, agg))
    parts.append(sec_capacity_model(plan))
    parts.append(sec_observed(plan))
    parts.append(sec_utilisation(plan))
    parts.append(sec_goals(plan))
    parts.append(sec_proposal(plan))
    parts.append(sec_forecast(plan))
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _section(sid, title, body):
    return "<section id='%s'><h2>%s</h2>%s</section>" % (sid, esc(title), body)


def _change(c):
    return "0" if not c else "%+d" % c


def sec_summary(plan):
    b = []
    for inf in plan["infrastructures"]:
        v = inf["verdict"]
        b.append("<h3>Infrastructure %s: <span class='%s'>%s</span></h3>" % (
            esc(inf["infra"]), vclass(v["verdict"]), esc(v["verdict"])))
        b.append("<p>Brokers: %d now, add %d, remove %d &middot; Routers: %d now, add %d, remove %d &middot; "
                 "binding resource: <b>%s</b></p>" % (
                     v["brokers"]["current"], v["brokers"]["add"], v["brokers"]["remove"], v["routers"]["current"],
                     v["routers"]["add"], v["routers"]["remove"], esc(v["binding_resource"])))
        rows = []
        for s in inf["address_spaces"]:
            sv = s["verdict"]
            bv, rv = sv["brokers"] or {}, sv["routers"] or {}
            rows.append(["%s" % esc(s["name"]), esc(s["type"]), esc(s["plan"]),
                         "<span class='%s'>%s</span>" % (vclass(sv["verdict"]), esc(sv["verdict"])),
                         "%s &rarr; %s (%s)" % (bv.get("current", "-"), bv.get("needed", "-"), _change(bv.get("change"))),
                         ("%s &rarr; %s (%s)%s" % (rv.get("current", "-"), rv.get("needed", "-"),
                                                   _change(rv.get("change")), " shared" if rv.get("note") else ""))
                         if rv else "-",
                         esc(sv["binding_resource"]), str(len(s["pending"])), str(len(s["moves"])),
                         esc(lib.fmt_bytes(s["data_to_move_bytes"])),
                         esc(", ".join(x for x in (bv.get("note"), (sv.get("quota") or {}).get("note")) if x))])
        b.append(table(["address space", "type", "plan", "verdict", "brokers", "routers", "binding", "pending",
                        "moves", "data to move", "notes"], rows, left=3))
        for p in inf["broker_pools"] + inf["router_pools"]:
            v2 = p["verdict"]
            kind = "brokers" if "brokers_before" in p else "routers"
            b.append("<p>%s pool <b>%s</b>: <span class='%s'>%s</span> &mdash; %d now, %d needed (lower bound by "
                     "resource: %s; by credits: %s); binding: %s%s</p>" % (
                         kind, esc(p["pool"]), vclass(v2["verdict"]), esc(v2["verdict"]), v2["current"], v2["needed"],
                         esc(", ".join("%s %s" % (r, n) for r, n in sorted(v2.get("needed_by_resource", {}).items()))),
                         esc(v2.get("needed_by_credits")), esc(v2.get("binding_resource")),
                         (" &mdash; " + esc(v2["note"])) if v2.get("note") else ""))
    if plan.get("warnings"):
        b.append("<h3>Warnings</h3><ul>%s</ul>" % "".join("<li>%s</li>" % esc(w) for w in plan["warnings"]))
    return _section("summary", "Verdict", "".join(b))


def sec_data_quality(plan, agg):
    dq = plan["data_quality"]
    rows = [["time range", "%s &rarr; %s (%.2f days)" % (esc(dq["time_range"]["start"]), esc(dq["time_range"]["end"]),
                                                         dq["time_range"]["days"])],
            ["window size", "%s s" % dq["window_seconds"]],
            ["windows expected per series", str(dq["windows_expected_per_series"])],
            ["series (address &times; node)", str(dq["series"])],
            ["windows (present / valid)", "%d / %d" % (dq["windows"], dq["windows_valid"])],
            ["valid-window ratio", pct(dq["valid_window_ratio"])],
            ["coverage (valid / expected)", pct(dq["coverage"])],
            ["samples (addresses / nodes)", "%d / %d" % (dq["samples"]["addresses"], dq["samples"]["nodes"])],
            ["counter resets handled", str(dq["counter_resets"])],
            ["gaps (interval &gt; max gap)", str(dq["gaps"])],
            ["duplicate samples", str(dq["duplicate_samples"])],
            ["node restarts", esc(", ".join("%s at %s" % (r["node"], r["time"]) for r in dq["node_restarts"]) or "none")],
            ["percentiles", esc(dq["percentile_method"])],
            ["addresses in metrics, not in the model", esc(", ".join(dq["unmodelled_addresses"]) or "none")],
            ["addresses in the model without metrics", esc(", ".join(dq["addresses_without_metrics"]) or "none")]]
    body = [table(["", ""], rows)]
    phases = (plan.get("job") or {}).get("phases") or []
    if phases:
        body.append("<details open><summary>how long each phase of this run took (%s)</summary>%s</details>" % (
            esc((plan.get("job") or {}).get("master")),
            table(["phase", "seconds"], [[esc(p["phase"]), num(p["seconds"])] for p in phases])))
    sp = dq.get("per_address_space") or {}
    body.append(table(["address space", "series", "windows", "valid", "valid ratio", "coverage"],
                      [[esc(k), str(v["series"]), str(v["windows"]), str(v["windows_valid"]),
                        pct(v["valid_window_ratio"]), pct(v["coverage"])] for k, v in sorted(sp.items())]))
    if dq.get("low_coverage_series"):
        body.append("<details><summary>series below 90%% coverage (%d)</summary>%s</details>" % (
            len(dq["low_coverage_series"]),
            table(["series", "coverage"], [[esc(x["series"]), pct(x["coverage"])] for x in dq["low_coverage_series"]])))
    sw = agg.get("space_windows") or []
    if sw:
        by = {}
        for r in sw:
            by.setdefault(r["address_space"], []).append(r)
        plots = []
        for space in sorted(by):
            rows_ = sorted(by[space], key=lambda r: r["ws"])
            plots.append(figure(line_chart([("ingress", [(r["ws"], r["r_in"]) for r in rows_]),
                                            ("egress", [(r["ws"], r["r_out"]) for r in rows_])],
                                           "%s: msg/s per window" % space, "msg/s"),
                                "valid windows only; gaps are outages or invalid windows"))
        body.append("<div class='plots'>%s</div>" % "".join(plots))
    return _section("data-quality", "Data quality", "".join(body))


def sec_capacity_model(plan):
    cm = plan["capacity_model"]
    rows = []
    for kind in ("broker", "router"):
        for r, spec in sorted(cm[kind]["resources"].items()):
            rows.append([kind, r, esc(lib.fmt_value(r, spec["capacity"])), pct(spec["high"]), pct(spec["low"]),
                         esc(lib.fmt_value(r, spec.get("baseline", 0)))])
    body = [table(["node", "resource", "capacity per node", "high", "low", "default baseline"], rows, left=2)]
    body.append("<p>Windows of %ss; a window is valid when its sample intervals cover &ge; %s of it; intervals longer "
                "than %ss are gaps. Percentiles: %s. Rates are sized with <b>%s</b>, node gauges with <b>%s</b>. "
                "Reported memory_max/disk_max override capacities: brokers %s, routers %s. Minimum nodes: brokers %s, "
                "routers %s. Observed average message size: %s.</p>" % (
                    cm["window_seconds"], pct(cm["min_window_coverage"]), cm["max_gap_seconds"],
                    esc(cm["percentile_method"]), esc(cm["rate_statistic"]), esc(cm["node_statistic"]),
                    cm["broker"]["prefer_reported_max"], cm["router"]["prefer_reported_max"],
                    cm["broker"]["min_nodes"], cm["router"]["min_nodes"],
                    esc(lib.fmt_bytes(cm.get("observed_message_size_bytes")))))
    s = cm["router"]["sizing"]
    body.append("<h3>Sizing rules</h3><ul>"
                "<li>router memory = %s + %s &times; anycast/multicast addresses + %s &times; queues/topics + links "
                "&times; %d (link capacity) &times; message size + %s &times; connections</li>"
                "<li>broker disk = stored message bytes &times; %.2f + %s</li>"
                "<li>broker memory = node baseline (observed minus attributed) + peak stored bytes of its addresses"
                "</li></ul>" % (
                    esc(lib.fmt_bytes(s["base_bytes"])), esc(lib.fmt_bytes(s["per_anycast_address_bytes"])),
                    esc(lib.fmt_bytes(s["per_queue_topic_address_bytes"])), s["link_capacity"],
                    esc(lib.fmt_bytes(s["per_connection_bytes"])), 1 + cm["broker"]["disk_overhead"],
                    esc(lib.fmt_bytes(cm["broker"]["disk_base_bytes"]))))
    return _section("capacity-model", "Capacity model", "".join(body))


def sec_observed(plan):
    body = []
    allthr = []
    for inf in plan["infrastructures"]:
        for s in inf["address_spaces"]:
            rows = []
            for a in s["addresses"]:
                l = a.get("load") or {}
                i, e = l.get("ingress") or {}, l.get("egress") or {}
                cls = a.get("class")
                rows.append(([esc(a["address"]), esc(a["type"]), esc(a["plan"]), esc(cls),
                              num(i.get("avg")), num(i.get("p95")), num(i.get("p99")), num(i.get("max")),
                              num(e.get("avg")), num(e.get("p95")), num(e.get("p99")), num(e.get("max")),
                              num(l.get("depth_latest"), 0), esc(lib.fmt_bytes(l.get("size_latest"))),
                              pct(l.get("coverage")), str(l.get("resets", "-"))], cls if cls in ("hot", "idle") else ""))
                if l:
                    allthr.append(("%s/%s" % (s["name"], a["address"]), (l.get("throughput") or {}).get("p95") or 0.0))
            body.append("<h3>%s / %s</h3>" % (esc(inf["infra"]), esc(s["name"])))
            body.append(table(["address", "type", "plan", "class", "in avg", "in p95", "in p99", "in max", "out avg",
                               "out p95", "out p99", "out max", "depth", "size", "coverage", "resets"], rows, left=4))
    top = sorted(allthr, key=lambda x: -x[1])[:25]
    if top:
        body.insert(0, "<div class='plots'>%s</div>" % figure(
            bar_chart([t[0] for t in top], [("p95 msg/s in+out", [t[1] for t in top])],
                      "Top addresses by p95 throughput", strip=False), "msg/s, from counter deltas per window"))
    body.insert(0, "<p>Rates in msg/s from counter deltas per window (resets handled); statistics over valid "
                "windows. Depth and size: latest sample, summed over partitions.</p>")
    return _section("observed-load", "Observed load per address", "".join(body))


def _pool_util_plots(p, resources, label):
    plots = []
    nodes = p["nodes"]
    names = [n["node"] + (" (new)" if n["new"] else "") + (" (removed)" if n["removed"] else "") for n in nodes]
    for r in resources:
        before = [(n["utilisation_before"] or {}).get(r) if n["utilisation_before"] else None for n in nodes]
        after = [(n["utilisation_after"] or {}).get(r) if n["utilisation_after"] else None for n in nodes]
        hi = p["thresholds"]["high"][r]
        plots.append(figure(bar_chart(names, [("before", before), ("after", after)], "%s %s: %s" % (label, p["pool"], r),
                                      hline=(hi, "high %.0f%%" % (100 * hi)), y_label="%", y_max=1.0),
                            "utilisation of %s per %s" % (r, label)))
    return "<div class='plots'>%s</div>" % "".join(plots)


def _pool_utilisation(p, title, resources, plot_id, node_label):
    """Heading, plots and table of one broker or router pool's utilisation."""
    rows = []
    for n in p["nodes"]:
        for r in resources:
            rows.append([esc(n["node"]) + (" <i>new</i>" if n["new"] else "") +
                         (" <i>removed</i>" if n["removed"] else ""), r,
                         esc(lib.fmt_value(r, (n.get("observed") or {}).get(r))),
                         esc(lib.fmt_value(r, (n.get("before") or {}).get(r))),
                         esc(lib.fmt_value(r, (n.get("after") or {}).get(r))),
                         esc(lib.fmt_value(r, n["capacity"][r])),
                         pct((n.get("utilisation_before") or {}).get(r)),
                         pct((n.get("utilisation_after") or {}).get(r))])
    return ["<h3>%s: pool %s (%s)</h3>" % (title, esc(p["pool"]), esc(", ".join(p["address_spaces"]))),
            _pool_util_plots(p, resources, plot_id),
            "<details><summary>table</summary>%s</details>" % table(
                [node_label, "resource", "observed", "before (model)", "after (proposal)", "capacity",
                 "util before", "util after"], rows, left=2)]


def sec_utilisation(plan):
    body = []
    for inf in plan["infrastructures"]:
        for p in inf["broker_pools"]:
            body.extend(_pool_utilisation(p, "Brokers", lib.BROKER_RESOURCES, "brokers", "broker"))
        for p in inf["router_pools"]:
            body.extend(_pool_utilisation(p, "Routers", lib.ROUTER_RESOURCES, "routers", "router"))
    body.insert(0, "<p>Before: node baseline (observed minus what its addresses account for) plus the load of the "
                "addresses it holds now; after: the same with the proposed placement (routers: load spread evenly "
                "over the proposed number of routers).</p>")
    return _section("utilisation", "Per-node utilisation before and after", "".join(body))


def sec_goals(plan):
    body = []
    for inf in plan["infrastructures"]:
        for p in inf["broker_pools"] + inf["router_pools"]:
            kind = "brokers" if "brokers_before" in p else "routers"
            rows = []
            for g in p["goals"]:
                rows.append([esc(g["goal"]), esc(g["kind"]),
                             "<span class='%s'>%s</span>" % ("ok" if g["holds_before"] else "bad",
                                                             "holds" if g["holds_before"] else "violated"),
                             "<span class='%s'>%s</span>" % ("ok" if g["holds_after"] else "bad",
                                                             "holds" if g["holds_after"] else "violated"),
                             esc(", ".join(str(x) for x in g["violations_before"][:8])),
                             esc(", ".join(str(x) for x in g["violations_after"][:8])), esc(g["detail"])])
            body.append("<h3>%s pool %s</h3>" % (kind, esc(p["pool"])))
            body.append(table(["goal", "kind", "before", "after", "violations before", "violations after", "goal"],
                              rows, left=2))
    return _section("goals", "Goals", "".join(body))


def sec_proposal(plan):
    body = []
    for inf in plan["infrastructures"]:
        for p in inf["broker_pools"]:
            body.append("<h3>Pool %s: %d move(s), %s to move</h3>" % (
                esc(p["pool"]), len(p["moves"]), esc(lib.fmt_bytes(p["data_to_move_bytes"]))))
            if p["moves"]:
                body.append(table(["address space", "address", "partition", "from", "to", "data", "reason"],
                                  [[esc(m["address_space"]), esc(m["address"]), esc(m["partition"]), esc(m["from"]),
                                    esc(m["to"]), esc(lib.fmt_bytes(m["bytes"])), esc(m["reason"])] for m in p["moves"]],
                                  left=5))
            if p["new_placements"]:
                body.append("<p>New addresses placed: %s</p>" % esc(", ".join(
                    "%s/%s &rarr; %s" % (x["address_space"], x["address"], "+".join(x["brokers"]))
                    for x in p["new_placements"])).replace("&amp;rarr;", "&rarr;"))
            if p["draining"]:
                body.append("<p>Draining (old broker keeps only its outgoing link until empty): %s</p>" % esc(
                    ", ".join("%s from %s" % (k, ", ".join(v)) for k, v in p["draining"].items())))
            if p["brokers_removed"]:
                body.append("<p>Brokers to remove: %s</p>" % esc(", ".join(p["brokers_removed"])))
            new = [n["node"] for n in p["nodes"] if n["new"]]
            if new:
                body.append("<p>Brokers to add: %s</p>" % esc(", ".join(new)))
        for s in inf["address_spaces"]:
            if s["pending"]:
                body.append("<p>%s: pending %s</p>" % (esc(s["name"]), esc(", ".join(
                    "%s (%s)" % (x["address"], x["reason"]) for x in s["pending"]))))
        for p in inf["router_pools"]:
            body.append("<p>Routers pool %s: %s &rarr; %s</p>" % (
                esc(p["pool"]), esc(", ".join(p["routers_before"])), esc(", ".join(p["routers_after"]))))
    return _section("proposal", "Placement proposal", "".join(body))


def sec_forecast(plan):
    body = []
    rows = []
    plots = []
    for inf in plan["infrastructures"]:
        for f in inf["forecast"]:
            if f["resource"] == "ingress":
                rows.append([esc(inf["infra"]), esc(f["scope"]), "ingress msg/s", esc(f.get("status")),
                             num(f.get("slope_per_day")), num(f.get("daily_mean_slope_per_day")),
                             pct(f.get("relative_growth_per_day")), "-", "-", "-"])
                if f["scope"] == "infra" and len(f["daily"]) >= 1:
                    plots.append(_fc_plot(f, "%s ingress (daily peak and mean)" % inf["infra"], None))
                continue
            rows.append([esc(inf["infra"]), esc(f["scope"]), esc(f["resource"]), esc(f.get("status")),
                         esc(_fmt_slope(f["resource"], f.get("slope_per_day"))), "-", "-",
                         esc(lib.fmt_value(f["resource"], f.get("threshold"))),
                         esc(f.get("threshold_date") or "-"), esc(f.get("exhaustion_date") or "-")])
            if f.get("status") in ("date", "exceeded") or (f["resource"] == "msg_rate" and len(f["daily"]) >= 2):
                plots.append(_fc_plot(f, "%s %s" % (f["scope"], f["resource"]), f.get("threshold")))
    body.append("<p>Linear least-squares fit on daily peaks (sum over the pool's nodes of the per-window value); "
                "the threshold is capacity &times; high threshold of the current nodes; run-out dates are the first "
                "day the fitted line reaches the threshold (and the full capacity).</p>")
    body.append(table(["infra", "scope", "resource", "status", "slope/day (peaks)", "slope/day (means)",
                       "growth/day", "threshold", "threshold date", "exhaustion date"], rows, left=3))
    body.append("<div class='plots'>%s</div>" % "".join(plots[:24]))
    return _section("forecast", "Forecast", "".join(body))


def _fmt_slope(res, v):
    if v is None:
        return "-"
    return ("%s/day" % lib.fmt_value(res, v)) if v >= 0 else ("-%s/day" % lib.fmt_value(res, -v))


def _fc_plot(f, title, threshold):
    pts = []
    means = []
    for d in f["daily"]:
        t = _dt.datetime.strptime(d["date"], "%Y-%m-%d").replace(tzinfo=_dt.timezone.utc).timestamp() + 43200
        pts.append((t, d["peak"]))
        means.append((t, d["mean"]))
    series = [("daily peak (points)", pts), ("daily mean (points)", means)]
    if f.get("slope_per_day") is not None and f.get("intercept") is not None and pts:
        t0 = pts[0][0]
        days = max(3, len(pts) + 2)
        if f.get("days_to_threshold"):
            days = max(days, min(len(pts) + f["days_to_threshold"] + 1, 400))
        fit = [(t0 + i * 86400, f["intercept"] + f["slope_per_day"] * i) for i in range(0, int(days))]
        series.append(("linear fit", fit))
    h = [(threshold, "threshold", "#b71c1c")] if threshold else []
    return figure(line_chart(series, title, hlines=h, points=True), f.get("status") or "")
