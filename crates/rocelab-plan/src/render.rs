//! Pure functions from results to text: aligned tables for terminals, Markdown for reports, JSON
//! (struct field order, no maps) for machines. Nothing here computes a number.

use crate::compare::CompareTable;
use crate::estimate::{CommLine, Estimate};
use crate::search::SearchResult;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Markdown,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "table" | "text" => Format::Table,
            "json" => Format::Json,
            "markdown" | "md" => Format::Markdown,
            _ => return None,
        })
    }
}

/// A table that renders aligned (terminal) or as Markdown.
struct Grid {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns aligned right (numbers).
    right: Vec<bool>,
}

impl Grid {
    fn new(headers: &[&str], right: &[bool]) -> Grid {
        Grid { headers: headers.iter().map(|h| h.to_string()).collect(), rows: Vec::new(), right: right.to_vec() }
    }
    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    fn text(&self) -> String {
        let n = self.headers.len();
        let mut w = vec![0usize; n];
        for r in std::iter::once(&self.headers).chain(self.rows.iter()) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let fmt_row = |r: &Vec<String>, out: &mut String| {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate().take(n) {
                let pad = w[i].saturating_sub(c.chars().count());
                if i > 0 {
                    line.push_str("  ");
                }
                if self.right.get(i).copied().unwrap_or(false) {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        };
        fmt_row(&self.headers, &mut out);
        let total: usize = w.iter().sum::<usize>() + 2 * n.saturating_sub(1);
        out.push_str(&"─".repeat(total));
        out.push('\n');
        for r in &self.rows {
            fmt_row(r, &mut out);
        }
        out
    }
    fn markdown(&self) -> String {
        let esc = |c: &str| c.replace('|', "\\|");
        let mut out = format!("| {} |\n", self.headers.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
        out += &format!(
            "|{}|\n",
            self.right.iter().map(|r| if *r { "---:" } else { ":---" }).collect::<Vec<_>>().join("|")
        );
        for r in &self.rows {
            out += &format!("| {} |\n", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
        }
        out
    }
    fn render(&self, f: Format) -> String {
        match f {
            Format::Markdown => self.markdown(),
            _ => self.text(),
        }
    }
}

/// Bytes with an SI prefix (GB = 1e9 B, as link rates are quoted).
pub fn bytes(b: f64) -> String {
    let units = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)];
    for (u, v) in units {
        if b.abs() >= v {
            return format!("{:.3} {u}", b / v).replace(".000 ", " ");
        }
    }
    format!("{b:.0} B")
}

/// Seconds in the unit that reads best.
pub fn seconds(s: f64) -> String {
    if s == 0.0 {
        "0".into()
    } else if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}

fn pct(x: f64) -> String {
    // `+ 0.0` turns an IEEE negative zero into "0.0%" rather than "-0.0%".
    format!("{:.1}%", x * 100.0 + 0.0)
}

fn count(x: f64) -> String {
    if x == x.round() {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn comm_grid(lines: &[CommLine], show_phase: bool) -> Grid {
    let mut g = Grid::new(
        &[
            "phase",
            "dim",
            "collective",
            "count",
            "size each",
            "wire/GPU",
            "link",
            "ranks×nodes",
            "busbw GB/s",
            "α µs",
            "α-β each",
            "NCCL each",
            "NCCL choice",
            "total",
            "hidden",
            "exposed",
        ],
        &[false, false, false, true, true, true, false, true, true, true, true, true, false, true, true, true],
    );
    for l in lines {
        g.row(vec![
            if show_phase { l.phase.to_string() } else { String::new() },
            l.dimension.to_string(),
            l.collective.name().to_string(),
            count(l.count),
            bytes(l.bytes_each),
            bytes(l.wire_bytes_per_gpu),
            l.link.clone(),
            format!("{}×{}", l.group_ranks, l.group_nodes),
            format!("{:.1}", l.bus_gbytes_per_s),
            format!("{:.1}", l.alpha_us),
            seconds(l.alpha_beta_seconds_each),
            seconds(l.nccl_seconds_each),
            l.nccl_choice.clone(),
            seconds(l.total_seconds),
            pct(l.overlap),
            seconds(l.exposed_seconds),
        ]);
    }
    if !show_phase {
        for r in &mut g.rows {
            r.remove(0);
        }
        g.headers.remove(0);
        g.right.remove(0);
    }
    g
}

/// One plan, as text or Markdown.
pub fn estimate_text(e: &Estimate, f: Format) -> String {
    let h = |t: &str| if f == Format::Markdown { format!("\n## {t}\n\n") } else { format!("\n{t}\n") };
    let mut o = String::new();
    if f == Format::Markdown {
        o += &format!("# rocelab plan\n\n{}\n\nLayout: {}\n", e.title, e.layout);
    } else {
        o += &format!("rocelab plan — {}\nlayout: {}\n", e.title, e.layout);
    }
    let m = &e.memory;
    o += &h("Memory per GPU");
    let mut g = Grid::new(
        &["weights", "gradients", "optimizer", "activations", "KV cache", "total", "usable", "fits"],
        &[true, true, true, true, true, true, true, false],
    );
    g.row(vec![
        bytes(m.weights_bytes),
        bytes(m.gradients_bytes),
        bytes(m.optimizer_bytes),
        bytes(m.activations_bytes),
        bytes(m.kv_cache_bytes),
        bytes(m.total_bytes),
        bytes(m.usable_bytes),
        if m.fits { "yes".into() } else { "NO".into() },
    ]);
    o += &g.render(f);
    let multi_phase = e.phases.len() > 1;
    o += &h(if multi_phase {
        "Communication (per prefill, per decode token; per GPU)"
    } else {
        "Communication per step (per GPU)"
    });
    if e.comm.is_empty() {
        o += "no collectives: a single GPU, nothing crosses a link\n";
    } else {
        o += &comm_grid(&e.comm, multi_phase).render(f);
        o += "\n";
        for l in &e.comm {
            let prefix = if multi_phase { format!("{} ", l.phase) } else { String::new() };
            o += &format!(
                "{}{}{} {}: {}\n",
                if f == Format::Markdown { "- " } else { "  " },
                prefix,
                l.dimension,
                l.collective.name(),
                l.what
            );
        }
    }
    o += &h("Time");
    let mut g = Grid::new(
        &["phase", "FLOP/GPU", "compute", "HBM", "bubble", "exposed comm", "network wait", "total", "network share"],
        &[false, true, true, true, true, true, true, true, true],
    );
    for p in &e.phases {
        g.row(vec![
            p.name.to_string(),
            format!("{:.3e}", p.flops_per_gpu),
            seconds(p.compute_seconds),
            seconds(p.memory_seconds),
            format!("{} ({})", seconds(p.bubble_seconds), pct(p.bubble_fraction)),
            seconds(p.exposed_comm_seconds),
            seconds(p.network_wait_seconds),
            seconds(p.seconds),
            pct(p.network_share),
        ]);
    }
    o += &g.render(f);
    o += "\n";
    let hl = &e.headline;
    let bullet = if f == Format::Markdown { "- " } else { "" };
    match (hl.model_tflops_per_gpu, hl.mfu, hl.ttft_seconds, hl.request_seconds) {
        (Some(tf), Some(mfu), _, _) => {
            o += &format!(
                "{bullet}step time      {} · {:.0} tokens/s · {:.0} model TFLOP/s per GPU ({} MFU)\n",
                seconds(hl.step_seconds),
                hl.tokens_per_s,
                tf,
                pct(mfu)
            );
        }
        (_, _, Some(ttft), Some(req)) => {
            o += &format!("{bullet}per request    TTFT {} · {} per output token · {} end to end · {:.0} output tokens/s while decoding (all replicas)\n", seconds(ttft), seconds(hl.step_seconds), seconds(req), hl.tokens_per_s);
        }
        _ => {}
    }
    o += &format!("{bullet}network wait   {} of the worst phase\n", pct(e.network_share));
    o += &format!("{bullet}bottleneck     {}\n", e.bottleneck);
    o += &format!("{bullet}verdict        {} — {}\n", e.verdict.name().to_uppercase(), e.verdict_reason);
    o += &h("Assumptions");
    for a in &e.assumptions {
        o += &format!("{}{a}\n", if f == Format::Markdown { "- " } else { "  - " });
    }
    o
}

/// Shorthand for the terminal table.
pub fn table(e: &Estimate) -> String {
    estimate_text(e, Format::Table)
}

pub fn json<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

pub fn render_estimate(e: &Estimate, f: Format) -> String {
    match f {
        Format::Json => json(e),
        _ => estimate_text(e, f),
    }
}

/// One plan with the resolved inputs it came from: JSON carries both (every preset expanded,
/// every default filled), so a result can be reproduced and audited; text formats print the
/// estimate, whose assumptions already list the inputs that matter.
pub fn render_plan(s: &crate::Scenario, e: &Estimate, f: Format) -> String {
    #[derive(Serialize)]
    struct Plan<'a> {
        tool: &'static str,
        version: &'static str,
        scenario: &'a crate::Scenario,
        estimate: &'a Estimate,
    }
    match f {
        Format::Json => {
            json(&Plan { tool: "rocelab plan", version: env!("CARGO_PKG_VERSION"), scenario: s, estimate: e })
        }
        _ => estimate_text(e, f),
    }
}

/// The usage → acceptable network table.
pub fn render_compare(t: &CompareTable, f: Format) -> String {
    render_compare_fit(t, f, None)
}

/// Words of `text` on lines of at most `width` characters (longer words stand alone), each
/// line after the first indented by `indent` spaces.
fn wrap(text: &str, width: usize, first: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut fresh = true;
    for word in text.split(' ') {
        let len = line.chars().count();
        if !fresh && len + 1 + word.chars().count() > width {
            out += line.trim_end();
            out.push('\n');
            line = " ".repeat(indent);
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    out += line.trim_end();
    out.push('\n');
    out
}

/// The `--compare` table for a terminal `width` characters wide (`None`: no limit). When the
/// grid (usages down, links across) does not fit, it is transposed: one block per usage, one
/// line per link, so its width no longer grows with the number of links; footnotes are
/// wrapped. Markdown and JSON are never narrowed (they are for wide use).
pub fn render_compare_fit(t: &CompareTable, f: Format, width: Option<usize>) -> String {
    if f == Format::Json {
        return json(t);
    }
    let mut headers = vec!["usage".to_string()];
    headers.extend(t.links.iter().cloned());
    headers.push("acceptable network".into());
    let hdr: Vec<&str> = headers.iter().map(|s| s.as_str()).collect();
    let mut right = vec![false; hdr.len()];
    right[0] = false;
    let mut g = Grid::new(&hdr, &right);
    for r in &t.rows {
        let mut cells = vec![r.usage.clone()];
        for c in &r.cells {
            cells.push(format!("{} {}", c.verdict.name(), c.figure));
        }
        cells.push(r.acceptable.clone().unwrap_or_else(|| "none of these".into()));
        g.row(cells);
    }
    let mut o = String::new();
    let grid = g.render(f);
    let limit = if f == Format::Markdown { None } else { width };
    let fits = limit.is_none_or(|w| grid.lines().all(|l| l.chars().count() <= w));
    if f == Format::Markdown {
        o += "# rocelab plan --compare\n\n";
        o += &grid;
    } else if fits {
        o += "rocelab plan --compare — usage → acceptable network (cell: verdict, deciding figure)\n\n";
        o += &grid;
    } else {
        let w = limit.unwrap_or(usize::MAX);
        o += &wrap("rocelab plan --compare — per usage, each network's verdict and deciding figure", w, "", 2);
        let name_w = t.links.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        for r in &t.rows {
            o += "\n";
            let head = format!("{} → {}", r.usage, r.acceptable.as_deref().unwrap_or("none of these"));
            o += &wrap(&head, w, "", 2);
            for (link, c) in t.links.iter().zip(&r.cells) {
                let first = format!("  {link:<name_w$}  ");
                let indent = first.chars().count();
                o += &wrap(&format!("{} {}", c.verdict.name(), c.figure), w, &first, indent);
            }
        }
    }
    o += "\n";
    let w = limit.unwrap_or(usize::MAX);
    let (lead, cont) = if f == Format::Markdown { ("- ", 2) } else { ("  ", 4) };
    for r in &t.rows {
        o += &wrap(&format!("{}: {}", r.usage, r.scenario), w, lead, cont);
    }
    let lead = if f == Format::Markdown { "" } else { "  " };
    let verdicts = format!("verdict from the share of time GPUs wait on the network: good ≤ {:.0}%, acceptable ≤ {:.0}%, marginal ≤ {:.0}%, poor above; unbuildable: the link has no switches for that many hosts",
        crate::estimate::GOOD_SHARE * 100.0, crate::estimate::ACCEPTABLE_SHARE * 100.0, crate::estimate::MARGINAL_SHARE * 100.0);
    o += "\n";
    o += &wrap(&verdicts, w, lead, lead.len() + 2);
    o += &wrap(&t.note, w, lead, lead.len() + 2);
    o
}

/// The ranked layouts.
pub fn render_search(r: &SearchResult, f: Format) -> String {
    if f == Format::Json {
        return json(r);
    }
    let mut o = String::new();
    if f == Format::Markdown {
        o += &format!("# rocelab plan --search\n\n{}\n\n", r.title);
    } else {
        o += &format!("rocelab plan --search — {}\n\n", r.title);
    }
    let step = if r.ranked_by == "tokens/s" { "TPOT" } else { "step" };
    let mut g = Grid::new(
        &[
            "rank",
            "layout",
            "mb",
            "sched",
            "ZeRO",
            "recompute",
            "mem/GPU",
            step,
            "tokens/s",
            "MFU",
            "net wait",
            "bottleneck",
            "verdict",
        ],
        &[true, false, true, false, true, false, true, true, true, true, true, false, false],
    );
    for (i, c) in r.ranked.iter().enumerate() {
        g.row(vec![
            format!("{}", i + 1),
            c.layout.clone(),
            format!("{}", c.micro_batch),
            c.schedule.clone(),
            format!("{}", c.zero),
            c.recompute.clone(),
            bytes(c.memory_bytes),
            seconds(c.step_seconds),
            format!("{:.0}", c.tokens_per_s),
            c.mfu.map(pct).unwrap_or_default(),
            pct(c.network_share),
            c.bottleneck.clone(),
            c.verdict.name().to_string(),
        ]);
    }
    o += &g.render(f);
    o += &format!(
        "\n{} layouts evaluated: {} valid, {} do not fit in memory, {} rejected by divisibility or schedule rules\n",
        r.evaluated, r.valid, r.out_of_memory, r.invalid
    );
    o
}
