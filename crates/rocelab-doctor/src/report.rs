//! Renderings of a [`Diagnosis`]: pure functions from the result to text, so the CLI only
//! chooses one and writes it.

use crate::diagnose::{Diagnosis, Severity};
use std::fmt::Write;

/// How many rate lines the human report shows per host (JSON has them all).
const RATE_LINES: usize = 20;

/// The readable report; control characters from the input are escaped ([`crate::util::escape_controls`]).
pub fn human(dx: &Diagnosis) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "rocelab doctor {}: {} snapshot(s) from {} node(s) ({})",
        dx.rocelab_version,
        dx.snapshots,
        dx.hosts.len(),
        dx.hosts.join(", ")
    );
    if let Some(f) = &dx.fabric {
        let _ = writeln!(s, "  intended configuration: {f}");
    }
    for w in &dx.windows {
        let _ = writeln!(s, "  {}: {} snapshots, {} → {} ({:.1} s)", w.node, w.snapshots, w.from, w.to, w.interval_s);
    }
    if dx.windows.is_empty() {
        let _ = writeln!(
            s,
            "  one snapshot per node: drift and firmware only (give two snapshots of a node for rates and diagnoses)"
        );
    }
    s.push('\n');
    if !dx.data_problems.is_empty() {
        let _ = writeln!(
            s,
            "data problems ({}): this input was not used, so its rules did not run",
            dx.data_problems.len()
        );
        for p in &dx.data_problems {
            let _ = writeln!(s, "  {} {}: {}", p.node, p.subject, p.message);
        }
        s.push('\n');
    }
    if dx.findings.is_empty() {
        if dx.data_problems.is_empty() {
            let _ = writeln!(s, "no findings");
        } else {
            let _ = writeln!(s, "no findings in the data that could be used (see the data problems above)");
        }
    }
    for f in &dx.findings {
        let _ = writeln!(s, "{}[{}] {} {}: {}", f.severity.as_str(), f.code, f.node, f.subject, f.message);
        for e in &f.evidence {
            let _ = writeln!(s, "    {e}");
        }
        if !f.hint.is_empty() {
            let _ = writeln!(s, "  hint: {}", f.hint);
        }
    }
    if let Some(v) = &dx.verdict {
        let _ = writeln!(s, "\nis it the network?");
        for l in v.lines() {
            let _ = writeln!(s, "  {l}");
        }
    }
    for c in &dx.twin {
        twin_table(&mut s, c);
    }
    for w in &dx.windows {
        if w.rates.is_empty() && w.utilization.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\nrates on {} (non-zero, per second over {:.1} s):", w.node, w.interval_s);
        for r in w.rates.iter().take(RATE_LINES) {
            let _ =
                writeln!(s, "  {}  +{}  {}/s", r.series, crate::metrics::format_value(r.delta), fmt_rate(r.per_second));
        }
        if w.rates.len() > RATE_LINES {
            let _ = writeln!(s, "  ... {} more (see --json)", w.rates.len() - RATE_LINES);
        }
        for u in &w.utilization {
            let _ = writeln!(s, "  {}  {:.1}%", u.series, u.per_second * 100.0);
        }
        if !w.resets.is_empty() {
            let _ = writeln!(s, "  counters reset between snapshots (ignored): {}", w.resets.join(", "));
        }
    }
    if !dx.notes.is_empty() {
        let _ = writeln!(s, "\nnotes:");
        for n in &dx.notes {
            let _ = writeln!(s, "  {n}");
        }
    }
    let _ = write!(
        s,
        "\nresult: {} error(s), {} warning(s), {} info",
        dx.count(Severity::Error),
        dx.count(Severity::Warning),
        dx.count(Severity::Info)
    );
    if !dx.data_problems.is_empty() {
        let _ = write!(s, ", {} data problem(s)", dx.data_problems.len());
    }
    s.push('\n');
    // Names and messages come from dumps and logs: nothing in them may drive the terminal.
    crate::util::escape_controls(&s)
}

/// A real run and its twin, size by size (busbw: the better of out-of-place and in-place).
fn twin_table(s: &mut String, c: &crate::twin::TwinComparison) {
    let _ = writeln!(
        s,
        "\n{} beside its twin ({} real ranks, {} twin ranks; twin: {}):",
        c.op, c.real_ranks, c.twin_ranks, c.twin_source
    );
    let _ = writeln!(
        s,
        "  {:>13}  {:>10}  {:>10}  {:>11}  {:>11}  {:>9}  verdict",
        "size (B)", "real (us)", "twin (us)", "real GB/s", "twin GB/s", "real/twin"
    );
    for r in &c.rows {
        let ratio = r.ratio.map_or("-".to_string(), |q| format!("{:.0}%", q * 100.0));
        let _ = writeln!(
            s,
            "  {:>13}  {:>10.1}  {:>10.1}  {:>11.2}  {:>11.2}  {:>9}  {}",
            r.size_bytes,
            r.real_time_us,
            r.twin_time_us,
            r.real_busbw_gbytes_per_s,
            r.twin_busbw_gbytes_per_s,
            ratio,
            r.verdict
        );
    }
    if !c.real_only_sizes.is_empty() {
        let sizes: Vec<String> = c.real_only_sizes.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(s, "  not run on the twin: {} B", sizes.join(", "));
    }
}

fn fmt_rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// Pretty JSON with a trailing newline; field order is the struct order, maps are sorted.
pub fn json(dx: &Diagnosis) -> String {
    let mut s = serde_json::to_string_pretty(dx).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
