//! The HTML report: one self-contained file (no network, no script), its charts inline SVG
//! drawn here from each scenario's `timeseries.csv` rows.
//!
//! Why hand-written SVG: the charts are line charts over at most a few hundred samples; a
//! plotting crate would add a dependency tree for polylines and axis labels, and a template
//! engine would add one for a page this small. The page is escaped text and `<svg>` elements,
//! deterministic byte for byte.
//!
//! Contents: the summary (a row per check, failures first, with their evidence), then per
//! scenario its headline, its metrics, and charts of what its telemetry sampled: fabric
//! goodput, utilization per link group and rail, the deepest egress queue, ECN marks and CNPs.

use crate::{fmt, xml, Report, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write;

const W: f64 = 560.0;
const H: f64 = 180.0;
const PAD_L: f64 = 64.0;
const PAD_B: f64 = 28.0;
const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

/// One line of a chart.
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
}

/// metric → line label → (time µs, value) points.
type Series = BTreeMap<String, BTreeMap<String, Vec<(f64, f64)>>>;

/// The time series of a `timeseries.csv` (long format: `time_seconds,metric,node,port,priority,value`)
/// as metric → label → points. Per-port rows fold into their maximum over ports (`deepest
/// port`), per-switch rows (a node, no port: the shared buffer) into their maximum over
/// switches (`fullest switch`), so a queue and a whole switch's occupancy never share a line.
fn series(csv: &str) -> Series {
    let mut out: Series = BTreeMap::new();
    for x in crate::telemetry(csv) {
        let per_node = !x.node.is_empty();
        let label = match (per_node, x.port.is_empty()) {
            (true, false) => "deepest port".to_string(),
            (true, true) => "fullest switch".to_string(),
            (false, true) => "fabric".into(),
            (false, false) => x.port.to_string(),
        };
        let pts = out.entry(x.metric.to_string()).or_default().entry(label).or_default();
        match pts.last_mut() {
            Some(last) if per_node && last.0 == x.t_us => last.1 = last.1.max(x.value),
            _ => pts.push((x.t_us, x.value)),
        }
    }
    out
}

/// A round step for about `n` ticks over `0..max`: 1, 2 or 5 times a power of ten.
fn nice_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(f64::MIN_POSITIVE);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p)
}

/// The unit an axis prints, and the factor its values are divided by: bit/s in Gb/s or Tb/s,
/// bytes in KB or MB (10³, 10⁶), others as they are.
fn axis_unit(unit: &str, max: f64) -> (String, f64) {
    match unit {
        "bit/s" if max >= 1e12 => ("Tb/s".into(), 1e12),
        "bit/s" => ("Gb/s".into(), 1e9),
        "B" if max >= 1e6 => ("MB".into(), 1e6),
        "B" if max >= 1e3 => ("KB".into(), 1e3),
        u => (u.to_string(), 1.0),
    }
}

/// A tick label: as few decimals as the step needs.
fn tick(v: f64, step: f64) -> String {
    let d = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    format!("{v:.d$}")
}

/// A line chart over time: axes with ticks and gridlines in round steps, the y axis in the
/// metric's unit (scaled: Gb/s, MB), the x axis in µs, and a legend under the plot, off the
/// lines. Empty without two instants.
fn chart(title: &str, unit: &str, lines: &[Line]) -> String {
    let pts = lines.iter().flat_map(|l| l.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !x0.is_finite() || x1 <= x0 {
        return String::new();
    }
    let (yunit, div) = axis_unit(unit, y1);
    let ymax = if y1 > 0.0 { y1 / div } else { 1.0 };
    let ystep = nice_step(ymax, 4.0);
    let ytop = (ymax / ystep).ceil() * ystep;
    let xstep = nice_step(x1 - x0, 5.0);
    // The legend: three lines to a row, under the time axis.
    let rows = lines.len().div_ceil(3) as f64;
    let (top, plot_h) = (16.0, H - PAD_B - 30.0);
    let h = H + 14.0 * rows;
    let (left, right) = (PAD_L, W - 10.0);
    let sx = |x: f64| left + (x - x0) / (x1 - x0) * (right - left);
    let sy = |y: f64| top + plot_h - (y / div) / ytop * plot_h;
    let mut s = String::new();
    let _ = write!(
        s,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"{}\">",
        xml(title)
    );
    let bottom = top + plot_h;
    // Horizontal gridlines and the y ticks.
    let mut k = 0.0;
    while k <= ytop + ystep * 1e-9 {
        let y = top + plot_h - k / ytop * plot_h;
        let _ = write!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{right}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            left - 4.0,
            y + 3.0,
            tick(k, ystep)
        );
        k += ystep;
    }
    // Vertical gridlines and the time ticks.
    let mut t = (x0 / xstep).ceil() * xstep;
    while t <= x1 + xstep * 1e-9 {
        let x = sx(t);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"#e4e4e4\"/><text x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            bottom + 12.0,
            tick(t, xstep)
        );
        t += xstep;
    }
    let _ = write!(
        s,
        "<line x1=\"{left}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\" stroke=\"#888\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{bottom}\" stroke=\"#888\"/>"
    );
    let _ = write!(s, "<text x=\"4\" y=\"10\" font-size=\"10\">{}</text>", xml(&yunit));
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">time (µs)</text>",
        (left + right) / 2.0,
        bottom + 24.0
    );
    for (i, l) in lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let d: Vec<String> = l.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
        let _ = write!(s, "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.5\" points=\"{}\"/>", d.join(" "));
        let (lx, ly) = (left + 160.0 * (i % 3) as f64, bottom + 38.0 + 14.0 * (i / 3) as f64);
        let _ = write!(
            s,
            "<rect x=\"{lx}\" y=\"{}\" width=\"12\" height=\"3\" fill=\"{c}\"/><text x=\"{}\" y=\"{ly}\" font-size=\"10\">{}</text>",
            ly - 4.0,
            lx + 16.0,
            xml(&l.label)
        );
    }
    let _ = write!(s, "</svg><figcaption>{} ({})</figcaption></figure>", xml(title), xml(&yunit));
    s
}

/// The charts a scenario's telemetry supports, in a fixed order: metric, the line of it
/// plotted (`None`: every line), title, unit.
const CHARTS: &[(&str, Option<&str>, &str, &str)] = &[
    ("rocelab_goodput_bits_per_second", None, "fabric goodput (payload delivered)", "bit/s"),
    ("rocelab_link_utilization_ratio", None, "link utilization", "bytes sent / line rate"),
    (
        "rocelab_buffer_occupancy_bytes",
        Some("deepest port"),
        "deepest egress queue (the deepest switch port at each sample)",
        "B",
    ),
    (
        "rocelab_buffer_occupancy_bytes",
        Some("fullest switch"),
        "switch buffer used (the fullest switch at each sample)",
        "B",
    ),
    ("rocelab_ecn_marked_packets_total", None, "ECN-marked packets since the start", "packets"),
    ("rocelab_cnp_sent_total", None, "CNPs sent since the start", "CNPs"),
];

/// The lines of chart `(metric, only)` of a series.
fn lines_of(ser: &Series, metric: &str, only: Option<&str>) -> Vec<Line> {
    ser.get(metric).map_or(vec![], |by| {
        by.iter()
            .filter(|(l, _)| only.is_none_or(|o| o == l.as_str()))
            .map(|(l, p)| Line { label: l.clone(), points: p.clone() })
            .collect()
    })
}

/// Rows of the pause heat map at most: the ports that paused most.
const HEAT_ROWS: usize = 16;

/// A heat map of PFC pause frames sent, port and priority × time (the sampled interval): from
/// the cumulative `rocelab_pfc_pause_frames_total` rows of a `timeseries.csv`, the
/// `HEAT_ROWS` ports with the most pauses, darker for more frames in an interval. Empty
/// when nothing paused.
fn pause_heatmap(csv: &str) -> String {
    // (port, priority) → (time µs, cumulative frames), in time order.
    let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut times: Vec<f64> = vec![];
    for x in crate::telemetry(csv) {
        times.push(x.t_us);
        if x.metric == "rocelab_pfc_pause_frames_total" {
            by.entry(format!("{} prio {}", x.port, x.priority)).or_default().push((x.t_us, x.value));
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    times.dedup();
    if by.is_empty() || times.len() < 2 {
        return String::new();
    }
    let mut rows: Vec<(String, Vec<f64>)> = by
        .into_iter()
        .map(|(k, pts)| {
            // Frames in each sampling interval: the rise of the cumulative count.
            let mut cells = vec![0.0; times.len()];
            let mut last = 0.0;
            for (t, v) in pts {
                if let Ok(i) = times.binary_search_by(|x| x.total_cmp(&t)) {
                    cells[i] = (v - last).max(0.0);
                    last = v;
                }
            }
            (k, cells)
        })
        .collect();
    rows.sort_by(|a, b| b.1.iter().sum::<f64>().total_cmp(&a.1.iter().sum::<f64>()).then(a.0.cmp(&b.0)));
    rows.truncate(HEAT_ROWS);
    let max = rows.iter().flat_map(|r| r.1.iter()).fold(0.0f64, |a, &b| a.max(b)).max(1.0);
    let (left, top, ch) = (150.0, 20.0, 14.0);
    let cw = ((W - left - 10.0) / times.len() as f64).max(1.0);
    let h = top + ch * rows.len() as f64 + 24.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"PFC pause heat map\">"
    );
    for (i, (k, cells)) in rows.iter().enumerate() {
        let y = top + ch * i as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"end\">{}</text>",
            left - 4.0,
            y + ch - 3.0,
            xml(k)
        );
        for (j, &c) in cells.iter().enumerate() {
            if c <= 0.0 {
                continue;
            }
            let shade = (255.0 * (1.0 - (c / max).sqrt())) as u8;
            let _ = write!(
                s,
                "<rect x=\"{:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"rgb(255,{shade},{shade})\"/>",
                left + cw * j as f64,
                cw.max(1.0),
                ch - 1.0
            );
        }
    }
    let b = top + ch * rows.len() as f64 + 12.0;
    let _ = write!(s, "<text x=\"{left}\" y=\"{b}\" font-size=\"10\">{:.1} µs</text>", times[0]);
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{b}\" font-size=\"10\" text-anchor=\"end\">{:.1} µs</text>",
        W - 10.0,
        times[times.len() - 1]
    );
    let _ = write!(
        s,
        "</svg><figcaption>PFC pause frames sent, port and priority × time (darkest: {} in one interval)</figcaption></figure>",
        max
    );
    s
}

/// The fabric in tiers (hosts at the bottom), every link a line, nodes that sent PFC pauses
/// in red (darker for more) and the five hottest named. Empty for a fabric of no node.
fn fabric_svg(d: &crate::Drawing) -> String {
    if d.nodes.is_empty() {
        return String::new();
    }
    let (w, row) = (1100.0, 90.0);
    let tiers = d.nodes.iter().map(|n| n.1).max().unwrap_or(0) as f64 + 1.0;
    let h = row * tiers + 30.0;
    let mut count = [0usize; 4];
    let mut pos = vec![(0.0, 0.0); d.nodes.len()];
    let per: Vec<usize> = (0..4).map(|t| d.nodes.iter().filter(|n| n.1 == t).count()).collect();
    for (i, n) in d.nodes.iter().enumerate() {
        let t = n.1 as usize;
        let x = 20.0 + (w - 40.0) * (count[t] as f64 + 0.5) / per[t].max(1) as f64;
        let y = h - 30.0 - row * t as f64;
        count[t] += 1;
        pos[i] = (x, y);
    }
    let max = d.nodes.iter().map(|n| n.2).fold(0.0f64, f64::max);
    let mut s = String::new();
    let _ = write!(s, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"the fabric\">");
    for &(a, b) in &d.links {
        let ((x1, y1), (x2, y2)) = (pos[a as usize], pos[b as usize]);
        let _ = write!(
            s,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"#bbb\" stroke-width=\"0.4\"/>"
        );
    }
    for (i, n) in d.nodes.iter().enumerate() {
        let (x, y) = pos[i];
        let size = if n.1 == 0 { 3.0 } else { 7.0 };
        let fill = if n.2 > 0.0 && max > 0.0 {
            let t = (n.2 / max).sqrt();
            format!("rgb(255,{0},{0})", (200.0 * (1.0 - t)) as u8)
        } else if n.1 == 0 {
            "#6a8".to_string()
        } else {
            "#58a".to_string()
        };
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"><title>{}{}</title></rect>",
            x - size / 2.0,
            y - size / 2.0,
            size,
            size,
            xml(&n.0),
            if n.2 > 0.0 { format!(": {} pause frames sent", n.2) } else { String::new() }
        );
    }
    let mut hot: Vec<usize> = (0..d.nodes.len()).filter(|&i| d.nodes[i].2 > 0.0).collect();
    hot.sort_by(|&a, &b| d.nodes[b].2.total_cmp(&d.nodes[a].2).then(a.cmp(&b)));
    for &i in hot.iter().take(5) {
        let (x, y) = pos[i];
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#b00\">{}</text>",
            x + 6.0,
            y - 6.0,
            xml(&d.nodes[i].0)
        );
    }
    let _ = write!(s, "</svg><figcaption>the fabric, hosts at the bottom; red: nodes that sent PFC pauses in the scenarios (darker: more)</figcaption></figure>");
    s
}

/// Leaves shown in the ECMP chart at most.
const ECMP_LEAVES: usize = 16;

/// How ECMP spread a scenario's traffic: per leaf (the first `ECMP_LEAVES`), a bar per uplink,
/// its bytes sent over the leaf's busiest uplink's, and the leaf's imbalance (max / mean − 1).
/// Empty when no uplink carried anything.
fn ecmp_svg(d: &crate::Drawing, sc: &rocelab_scenario::ScenarioResult) -> String {
    let mut tx: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for x in sc.report.metrics.iter().filter(|x| x.name == "rocelab_tx_bytes_total") {
        let (n, p) = (&x.labels["node"], &x.labels["port"]);
        if let Some((leaf, ports)) = d.uplinks.iter().find(|(l, _)| l == n) {
            if let Some(port) = ports.iter().find(|q| *q == p) {
                tx.insert((leaf.as_str(), port.as_str()), x.value);
            }
        }
    }
    if tx.values().all(|&v| v <= 0.0) {
        return String::new();
    }
    let leaves: Vec<&(String, Vec<String>)> = d.uplinks.iter().take(ECMP_LEAVES).collect();
    let (gw, bh, top) = (W / leaves.len().max(1) as f64, 90.0, 16.0);
    let h = top + bh + 34.0;
    let mut s = String::new();
    let _ = write!(s, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"ECMP spread\">");
    for (i, (leaf, ports)) in leaves.iter().enumerate() {
        let vals: Vec<f64> =
            ports.iter().map(|p| tx.get(&(leaf.as_str(), p.as_str())).copied().unwrap_or(0.0)).collect();
        let max = vals.iter().fold(0.0f64, |a, &b| a.max(b));
        let mean = vals.iter().sum::<f64>() / vals.len().max(1) as f64;
        let bw = (gw - 8.0) / vals.len() as f64;
        for (j, v) in vals.iter().enumerate() {
            let bar = if max > 0.0 { v / max * bh } else { 0.0 };
            let _ = write!(
                s,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bar:.1}\" fill=\"#58a\"><title>{}:{}: {} B</title></rect>",
                gw * i as f64 + 4.0 + bw * j as f64,
                top + bh - bar,
                (bw - 1.0).max(0.5),
                xml(leaf),
                xml(&ports[j]),
                v
            );
        }
        let imb = if mean > 0.0 { max / mean - 1.0 } else { 0.0 };
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"9\">{}</text>",
            gw * i as f64 + 4.0,
            top + bh + 12.0,
            xml(leaf)
        );
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"9\">+{:.0} %</text>",
            gw * i as f64 + 4.0,
            top + bh + 24.0,
            imb * 100.0
        );
    }
    let _ = write!(s, "</svg><figcaption>ECMP: bytes per uplink of each leaf (bars: over its busiest uplink; +%: max / mean − 1)</figcaption></figure>");
    s
}

/// A collective's time against its bound: the same busbw at the line rate of the NICs it can
/// use (`busbw_fraction_of_bound` = bound / measured time), and against its ideal, the same
/// collective alone on the fabric made non-blocking (`ideal_time_us`), as bars on one time axis.
fn collective_svg(sc: &rocelab_scenario::ScenarioResult) -> String {
    let (Some(t), Some(frac)) = (sc.metrics.get("time_us").copied().flatten(), sc.headline.value) else {
        return String::new();
    };
    if sc.kind != "collective" || !(t > 0.0 && frac > 0.0) {
        return String::new();
    }
    let bound = t * frac;
    let ideal = sc.metrics.get("ideal_time_us").copied().flatten().filter(|i| *i > 0.0);
    let mut bars = vec![("measured", t, "#1f77b4"), ("bound at line rate", bound, "#999")];
    if let Some(i) = ideal {
        bars.push(("alone, non-blocking", i, "#2ca02c"));
    }
    // (The ideal may take a hair longer than the run it is the ideal of: the axis holds both.)
    let top = bars.iter().map(|b| b.1).fold(t, f64::max);
    let (x0, bw, h) = (150.0, W - 230.0, 18.0 + 26.0 * bars.len() as f64);
    let mut s = String::new();
    let _ = write!(s, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{h}\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"collective time against its bound\">");
    for (i, (label, v, color)) in bars.iter().enumerate() {
        let y = 10.0 + 26.0 * i as f64;
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.1}\" font-size=\"11\">{label}</text><rect x=\"{x0}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{v:.1} µs</text>",
            y + 13.0,
            (v / top * bw).max(0.5),
            x0 + v / top * bw + 4.0,
            y + 13.0,
        );
    }
    let of_ideal = ideal.map_or(String::new(), |i| {
        format!("; {:.1} % of its busbw alone on the fabric made non-blocking", i / t * 100.0)
    });
    let _ = write!(
        s,
        "</svg><figcaption>collective time against the time its busbw allows at the NICs' line rate ({:.1} % of the bound){of_ideal}</figcaption></figure>",
        frac * 100.0
    );
    s
}

/// The whole page.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rocelab validate {}</title>\
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}}\
.fail{{background:#fdd}}.warn{{background:#ffc}}.pass{{background:#dfd}}.info{{background:#eee}}figure{{display:inline-block;margin:6px}}figcaption{{font-size:12px;text-align:center}}</style></head><body>\n",
        xml(&r.fabric)
    );
    let _ = writeln!(
        s,
        "<h1>rocelab validate: {}</h1><p>{} · seed {} · <b>{}</b> · {} scenarios run</p>",
        xml(&r.fabric),
        xml(&r.file),
        r.seed,
        xml(&r.tally.line()),
        r.scenarios.len()
    );
    s.push_str("<h2>Summary</h2><table id=\"summary\"><tr><th>check</th><th>verdict</th><th>figure</th><th>limit</th><th>evidence</th></tr>\n");
    let mut order: Vec<&crate::CheckResult> = r.checks.iter().collect();
    order.sort_by_key(|c| match c.verdict {
        Verdict::Fail => 0,
        Verdict::NotConverged => 1,
        Verdict::Warn => 2,
        Verdict::Pass => 3,
        Verdict::Info => 4,
        Verdict::Refused => 5,
    });
    for c in order {
        let (cls, tag) = match c.verdict {
            Verdict::Fail => ("fail", "FAIL"),
            Verdict::NotConverged => ("fail", "NOT CONVERGED"),
            Verdict::Warn => ("warn", "warning"),
            Verdict::Pass => ("pass", "pass"),
            Verdict::Info => ("info", "reported"),
            Verdict::Refused => ("info", "refused"),
        };
        let limit = c.limit.map_or("-".to_string(), |l| format!("{} {}", c.cmp, crate::with_unit(Some(l), &c.unit)));
        let ev = if c.verdict.fails() || matches!(c.verdict, Verdict::Refused | Verdict::Warn) {
            c.evidence.iter().cloned().chain(crate::explanation(c)).collect::<Vec<_>>().join("<br>")
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "<tr class=\"{cls}\"><td>{}</td><td>{tag}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            xml(&c.name),
            xml(&crate::with_unit(c.figure, &c.unit)),
            xml(&limit),
            if ev.is_empty() { xml(&c.why) } else { ev.split("<br>").map(xml).collect::<Vec<_>>().join("<br>") }
        );
    }
    s.push_str("</table>\n");
    s.push_str("<h2>The fabric</h2>\n");
    s.push_str(&fabric_svg(&r.drawing));
    for sc in &r.scenarios {
        let _ = writeln!(
            s,
            "<h2 id=\"{}\">{} <small>({})</small></h2><p>headline <b>{}</b> = {} {} · {:.1} µs simulated, {} events</p>",
            xml(&sc.scenario),
            xml(&sc.scenario),
            sc.kind,
            sc.headline.metric,
            fmt(sc.headline.value),
            xml(sc.headline.unit),
            sc.simulated_us,
            sc.events
        );
        if let Some(st) = &sc.steady {
            let _ = write!(
                s,
                "<p class=\"{}\">steady state: <b>{}</b> — windows of {:.0} µs up to a horizon of {:.0} µs; judged on {:.0}–{:.0} µs</p><table><tr><th>convergence test</th><th>window before</th><th>judged window</th><th>allowed difference</th><th>unit</th></tr>",
                if st.converged { "pass" } else { "fail" },
                if st.converged { "converged" } else { "NOT converged" },
                st.window_us,
                st.horizon_us,
                st.from_us,
                st.to_us
            );
            for a in &st.agreement {
                let _ = write!(
                    s,
                    "<tr><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>± {}</td><td>{}</td></tr>",
                    if a.agree { "pass" } else { "fail" },
                    xml(a.figure),
                    rocelab_scenario::short(a.previous),
                    rocelab_scenario::short(a.last),
                    rocelab_scenario::short(a.allowed),
                    xml(a.unit)
                );
            }
            s.push_str("</table>\n");
        }
        if let Some(ed) = &sc.edges {
            // Which parts ran at packet level, and which were skipped.
            s.push_str("<p>at packet level:</p><ul>");
            for l in ed.lines() {
                let _ = write!(s, "<li>{}</li>", xml(&l));
            }
            s.push_str("</ul>\n");
        }
        s.push_str("<table><tr><th>metric</th><th>value</th><th>unit</th></tr>");
        for (k, v) in &sc.metrics {
            let _ = write!(
                s,
                "<tr><td>{k}</td><td>{}</td><td>{}</td></tr>",
                fmt(*v),
                xml(sc.units.get(k).copied().unwrap_or(""))
            );
        }
        s.push_str("</table>\n<div>");
        let ser = series(&sc.series_csv);
        for (metric, only, title, unit) in CHARTS {
            s.push_str(&chart(title, unit, &lines_of(&ser, metric, *only)));
        }
        s.push_str(&pause_heatmap(&sc.series_csv));
        s.push_str(&ecmp_svg(&r.drawing, sc));
        s.push_str(&collective_svg(sc));
        s.push_str("</div>\n");
    }
    s.push_str("</body></html>\n");
    s
}

/// The A/B page: the rows that changed, then per scenario its charts with A and B overlaid.
pub fn render_compare(c: &crate::Comparison) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rocelab compare</title>\
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}}\
.fail{{background:#fdd}}figure{{display:inline-block;margin:6px}}figcaption{{font-size:12px;text-align:center}}</style></head><body>\n"
    );
    let _ = writeln!(s, "<h1>rocelab compare</h1><p>A = {} · B = {}</p>", xml(&c.a), xml(&c.b));
    s.push_str("<table id=\"changes\"><tr><th>row</th><th>A</th><th>B</th><th>verdict A → B</th></tr>\n");
    for r in c.rows.iter().filter(|r| r.changed) {
        let v = |x: Option<Verdict>| x.map_or("", Verdict::compare_tag);
        let cls = if r.verdict_b == Some(Verdict::Fail) && r.verdict_a != Some(Verdict::Fail) {
            " class=\"fail\""
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "<tr{cls}><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            xml(&r.name),
            fmt(r.a),
            fmt(r.b),
            if r.verdict_a.is_some() { format!("{} → {}", v(r.verdict_a), v(r.verdict_b)) } else { String::new() }
        );
    }
    s.push_str("</table>\n");
    let (ra, rb) = &c.reports;
    for sa in &ra.scenarios {
        let Some(sb) = rb.scenarios.iter().find(|x| x.scenario == sa.scenario) else { continue };
        let _ = writeln!(s, "<h2>{}</h2><div>", xml(&sa.scenario));
        let (xa, xb) = (series(&sa.series_csv), series(&sb.series_csv));
        for (metric, only, title, unit) in CHARTS {
            let mut lines = vec![];
            for (side, ser) in [("A", &xa), ("B", &xb)] {
                lines.extend(
                    lines_of(ser, metric, *only)
                        .into_iter()
                        .map(|l| Line { label: format!("{side}: {}", l.label), ..l }),
                );
            }
            s.push_str(&chart(title, unit, &lines));
        }
        s.push_str("</div>\n");
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_port_rows_fold_into_their_maximum_and_groups_stay_apart() {
        let csv = "time_seconds,metric,node,port,priority,value\n\
                   0.000001,q,leaf0,swp1,,10\n0.000001,q,leaf0,swp2,,30\n0.000002,q,leaf0,swp1,,5\n\
                   0.000001,u,,host-links,,0.5\n0.000001,u,,spine-uplinks,,0.25\n";
        let s = series(csv);
        assert_eq!(s["q"]["deepest port"], vec![(1.0, 30.0), (2.0, 5.0)]);
        assert_eq!(s["u"]["host-links"], vec![(1.0, 0.5)]);
        assert_eq!(s["u"]["spine-uplinks"], vec![(1.0, 0.25)]);
        let c = chart("q", "B", &[Line { label: "a".into(), points: vec![(0.0, 0.0), (10.0, 4.0)] }]);
        assert!(c.starts_with("<figure><svg") && c.contains("<polyline") && c.ends_with("</figure>"), "{c}");
        // A chart needs two instants.
        assert!(chart("q", "B", &[Line { label: "a".into(), points: vec![(1.0, 1.0)] }]).is_empty());
    }

    #[test]
    fn a_queue_and_a_whole_switch_are_charted_apart() {
        let csv = "time_seconds,metric,node,port,priority,value\n\
                   0.000001,rocelab_buffer_occupancy_bytes,leaf0,leaf0:swp1,,1000\n\
                   0.000001,rocelab_buffer_occupancy_bytes,leaf0,,,9000\n\
                   0.000002,rocelab_buffer_occupancy_bytes,leaf0,leaf0:swp1,,3000\n\
                   0.000002,rocelab_buffer_occupancy_bytes,leaf0,,,7000\n";
        let s = series(csv);
        let q = lines_of(&s, "rocelab_buffer_occupancy_bytes", Some("deepest port"));
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].points, vec![(1.0, 1000.0), (2.0, 3000.0)]);
        let sw = lines_of(&s, "rocelab_buffer_occupancy_bytes", Some("fullest switch"));
        assert_eq!(sw[0].points, vec![(1.0, 9000.0), (2.0, 7000.0)]);
    }

    #[test]
    fn charts_have_unit_axes_round_ticks_gridlines_and_a_legend_below_the_lines() {
        let l = |label: &str, k: f64| Line { label: label.into(), points: vec![(0.0, 0.0), (100.0, 3.2e13 * k)] };
        let c = chart("goodput", "bit/s", &[l("a", 1.0), l("b", 0.5)]);
        // 32 Tb/s at most: the axis in Tb/s, ticks every 10 up to 40; time every 20 µs.
        assert!(c.contains(">Tb/s</text>") && c.contains(">time (µs)</text>"), "{c}");
        for t in ["0", "10", "20", "30", "40"] {
            assert!(c.contains(&format!("text-anchor=\"end\">{t}</text>")), "{t}: {c}");
        }
        for t in ["0", "20", "40", "60", "80", "100"] {
            assert!(c.contains(&format!("text-anchor=\"middle\">{t}</text>")), "{t}: {c}");
        }
        assert_eq!(c.matches("stroke=\"#e4e4e4\"").count(), 5 + 6);
        // The top line reaches the 32 Tb/s mark of a 0..40 axis; the legend sits under the axis.
        let bottom = 16.0 + (H - PAD_B - 30.0);
        let y_of = |v: f64| 16.0 + (H - PAD_B - 30.0) * (1.0 - v / 40.0);
        assert!(c.contains(&format!("{:.1},{:.1}\"", W - 10.0, y_of(32.0))), "{c}");
        // The legend's swatches.
        let legend_y: Vec<f64> = c
            .split("<rect ")
            .skip(1)
            .filter(|r| r.contains("width=\"12\" height=\"3\""))
            .map(|r| r.split("y=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(legend_y.len(), 2, "{c}");
        assert!(legend_y.iter().all(|y| *y > bottom + 24.0), "{legend_y:?}");
        // Bytes in MB.
        assert!(chart("q", "B", &[l("q", 1e-6)]).contains(">MB</text>"));
    }

    #[test]
    fn the_pause_heat_map_shows_frames_per_interval_for_the_ports_that_paused() {
        let csv = "time_seconds,metric,node,port,priority,value\n\
                   0.000001,rocelab_goodput_bits_per_second,,,,1\n\
                   0.000002,rocelab_pfc_pause_frames_total,leaf0,leaf0:swp1,3,4\n\
                   0.000003,rocelab_pfc_pause_frames_total,leaf0,leaf0:swp1,3,10\n\
                   0.000003,rocelab_goodput_bits_per_second,,,,1\n";
        let h = pause_heatmap(csv);
        assert!(h.contains("leaf0:swp1 prio 3"), "{h}");
        // Two intervals with frames (4, then 6): two cells; the darkest is 6 in one interval.
        assert_eq!(h.matches("<rect").count(), 2, "{h}");
        assert!(h.contains("darkest: 6 in one interval"), "{h}");
        assert!(pause_heatmap("time_seconds,metric,node,port,priority,value\n0.000001,x,,,,1\n").is_empty());
    }
}
