//! How a scenario is timed and reported, as hyperfine does it: warmup runs (not counted), then
//! timed runs, each on a fresh engine; mean ± σ, min and max per scenario; exporters that are
//! pure functions from results to bytes (JSON, Markdown); the ratio against a saved run.
//!
//! Times are the engine thread's CPU time where Linux reports it (`/proc/thread-self`), so a
//! machine shared with other work distorts them less; else wall time. Either way only the
//! event loop is timed: loading the fabric and building routes are not. `rocelab bench` and
//! `cargo bench -p rocelab-bench` both measure through `measure`.

use crate::{peak_rss_bytes, thread_cpu_seconds, Scenario};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The JSON export's `schema` (documented in docs/simulate.md, "rocelab bench").
pub const SCHEMA: &str = "rocelab.bench.results/v1";

/// How many runs: `warmup` first, then `runs` timed runs, or, with `runs` unset, at least 3
/// and until one second of engine time has passed (short scenarios repeat more: one run of a
/// few milliseconds says little on a shared machine), at most 50.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub warmup: usize,
    pub runs: Option<usize>,
}

impl Default for Plan {
    fn default() -> Self {
        Plan { warmup: 1, runs: None }
    }
}

const MIN_RUNS: usize = 3;
const MIN_TOTAL_SECONDS: f64 = 1.0;
const MAX_RUNS: usize = 50;

impl Plan {
    fn more(&self, done: usize, total_seconds: f64) -> bool {
        match self.runs {
            Some(n) => done < n,
            None => done < MIN_RUNS || (total_seconds < MIN_TOTAL_SECONDS && done < MAX_RUNS),
        }
    }

    /// The share of the timed runs done (for a progress line).
    pub fn done_share(&self, done: usize, total_seconds: f64) -> f64 {
        match self.runs {
            Some(n) => done as f64 / n.max(1) as f64,
            None => (done as f64 / MIN_RUNS as f64).min(total_seconds / MIN_TOTAL_SECONDS).min(1.0),
        }
    }
}

/// Mean, sample standard deviation (n − 1, as hyperfine), median, min and max, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub mean: f64,
    pub stddev: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    pub fn of(xs: &[f64]) -> Stats {
        if xs.is_empty() {
            return Stats { mean: 0.0, stddev: 0.0, median: 0.0, min: 0.0, max: 0.0 };
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = if xs.len() > 1 { xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
        let mut sorted = xs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 };
        Stats { mean, stddev: var.sqrt(), median, min: sorted[0], max: sorted[sorted.len() - 1] }
    }
}

/// One scenario, measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    pub scenario: String,
    pub about: String,
    /// `cpu` (the engine thread's CPU time) or `wall`: what `seconds` and `times` are.
    pub basis: String,
    pub warmup: usize,
    pub runs: usize,
    /// Over the timed runs, in seconds.
    pub seconds: Stats,
    pub wall_seconds: Stats,
    /// Each timed run, in seconds, in the order run.
    pub times: Vec<f64>,
    /// The work of one run (every run does the same work: the engine is deterministic).
    pub simulated_seconds: f64,
    pub events: u64,
    pub data_packets: u64,
    pub packet_hops: u64,
    /// Most packets alive at once (queues, wires, NIC buffers).
    pub peak_packets: usize,
    /// Peak resident set of the process that ran it (Linux `VmHWM`), bytes.
    pub peak_rss_bytes: Option<u64>,
}

impl Measurement {
    /// Events per second of mean engine time.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.seconds.mean.max(1e-12)
    }
    pub fn data_packets_per_second(&self) -> f64 {
        self.data_packets as f64 / self.seconds.mean.max(1e-12)
    }
    pub fn packet_hops_per_second(&self) -> f64 {
        self.packet_hops as f64 / self.seconds.mean.max(1e-12)
    }
}

/// Where a measurement is, for a progress line.
pub enum Progress {
    Warmup { run: usize, of: usize },
    Timed { run: usize, share: f64, last_seconds: f64 },
}

/// The figures of one run.
struct Run {
    basis_seconds: f64,
    wall_seconds: f64,
    cpu: bool,
    simulated_seconds: f64,
    events: u64,
    data_packets: u64,
    packet_hops: u64,
    peak_packets: usize,
}

/// Runs `s` by `plan`; also returns how much `probe` grew across the event loop of one run at
/// most (the engine bench passes an allocation counter).
pub fn measure(
    s: &Scenario,
    plan: Plan,
    probe: &dyn Fn() -> u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Measurement, u64), String> {
    let m = rocelab_model::load_str(s.name, &s.fabric).map_err(|e| e.to_string())?;
    let mut probed_max = 0;
    for i in 0..plan.warmup {
        progress(Progress::Warmup { run: i + 1, of: plan.warmup });
        let (_, p) = run_once(s, &m, probe)?;
        probed_max = probed_max.max(p);
    }
    let mut runs: Vec<Run> = Vec::new();
    let mut total = 0.0;
    while plan.more(runs.len(), total) {
        let (r, p) = run_once(s, &m, probe)?;
        probed_max = probed_max.max(p);
        total += r.basis_seconds;
        progress(Progress::Timed {
            run: runs.len() + 1,
            share: plan.done_share(runs.len() + 1, total),
            last_seconds: r.basis_seconds,
        });
        runs.push(r);
    }
    let first = runs.first().ok_or("no timed run (--runs 0)")?;
    let times: Vec<f64> = runs.iter().map(|r| r.basis_seconds).collect();
    let walls: Vec<f64> = runs.iter().map(|r| r.wall_seconds).collect();
    let m = Measurement {
        scenario: s.name.to_string(),
        about: s.about.to_string(),
        basis: if runs.iter().all(|r| r.cpu) { "cpu" } else { "wall" }.to_string(),
        warmup: plan.warmup,
        runs: runs.len(),
        seconds: Stats::of(&times),
        wall_seconds: Stats::of(&walls),
        times,
        simulated_seconds: first.simulated_seconds,
        events: first.events,
        data_packets: first.data_packets,
        packet_hops: first.packet_hops,
        peak_packets: first.peak_packets,
        peak_rss_bytes: peak_rss_bytes(),
    };
    Ok((m, probed_max))
}

fn run_once(s: &Scenario, m: &rocelab_model::Model, probe: &dyn Fn() -> u64) -> Result<(Run, u64), String> {
    let opts = rocelab_sim::options_from_model(m);
    let mut sim = match s.workload {
        Some(w) => rocelab_sim::Sim::with_workload(m, w(m), Vec::new(), opts),
        None => rocelab_sim::build(m, opts),
    }
    .map_err(|d| format!("{d:?}"))?;
    let c0 = thread_cpu_seconds();
    let p0 = probe();
    let t0 = std::time::Instant::now();
    sim.run(&mut |_| {});
    let wall = t0.elapsed().as_secs_f64();
    let probed = probe() - p0;
    let cpu = match (c0, thread_cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let st = sim.stats();
    let r = Run {
        basis_seconds: cpu.filter(|c| *c > 0.0).unwrap_or(wall),
        wall_seconds: wall,
        cpu: cpu.is_some_and(|c| c > 0.0),
        simulated_seconds: sim.now().as_secs_f64(),
        events: sim.events(),
        data_packets: st.data_sent,
        packet_hops: st.packet_hops,
        peak_packets: sim.peak_packets(),
    };
    Ok((r, probed))
}

/// The JSON export: `schema`, `version`, `results` (one `Measurement` each).
pub fn export_json(ms: &[Measurement]) -> String {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema: &'static str,
        version: &'static str,
        results: &'a [Measurement],
    }
    let doc = Doc { schema: SCHEMA, version: env!("CARGO_PKG_VERSION"), results: ms };
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// Reads an export back (`--baseline`).
pub fn parse_export(text: &str) -> Result<Vec<Measurement>, String> {
    #[derive(Deserialize)]
    struct Doc {
        schema: String,
        results: Vec<Measurement>,
    }
    let d: Doc = serde_json::from_str(text).map_err(|e| format!("not a `rocelab bench --export-json` file: {e}"))?;
    if d.schema != SCHEMA {
        return Err(format!("schema `{}`, expected `{SCHEMA}`", d.schema));
    }
    Ok(d.results)
}

/// `a / b` with its standard deviation propagated from both (independent errors, first order),
/// as hyperfine's "± σ times faster".
pub fn ratio(a: &Stats, b: &Stats) -> (f64, f64) {
    let r = a.mean / b.mean.max(1e-12);
    let rel = |s: &Stats| if s.mean > 0.0 { s.stddev / s.mean } else { 0.0 };
    (r, r * (rel(a).powi(2) + rel(b).powi(2)).sqrt())
}

/// A duration with a unit that suits it.
pub fn fmt_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn rate(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0} ")
    }
}

/// The header of the text table (widths fit the longest scenario name of `all()`).
pub fn table_header(name_width: usize, with_baseline: bool) -> String {
    let mut s = format!(
        "{:<name_width$}  {:>22}  {:>10}  {:>10}  {:>4}  {:>10}  {:>12}  {:>11}  {:>8}",
        "scenario", "mean ± σ", "min", "max", "runs", "events/s", "data pkts/s", "pkt-hops/s", "peak RSS"
    );
    if with_baseline {
        s.push_str(&format!("  {:>18}", "vs baseline"));
    }
    s
}

/// One row of the text table; with a baseline of the same scenario, the ratio of the means.
pub fn table_row(m: &Measurement, name_width: usize, baseline: Option<&Measurement>) -> String {
    let mean = format!("{} ± {}", fmt_seconds(m.seconds.mean), fmt_seconds(m.seconds.stddev));
    let mut s = format!(
        "{:<name_width$}  {:>22}  {:>10}  {:>10}  {:>4}  {:>10}  {:>12}  {:>11}  {:>8}",
        m.scenario,
        mean,
        fmt_seconds(m.seconds.min),
        fmt_seconds(m.seconds.max),
        m.runs,
        rate(m.events_per_second()),
        rate(m.data_packets_per_second()),
        rate(m.packet_hops_per_second()),
        m.peak_rss_bytes.map(|b| format!("{} MB", b / 1_000_000)).unwrap_or_else(|| "n/a".into()),
    );
    if let Some(b) = baseline {
        let (r, sd) = ratio(&m.seconds, &b.seconds);
        s.push_str(&format!("  {:>18}", format!("{r:.2} ± {sd:.2} ×")));
    }
    s
}

/// hyperfine's Markdown table: mean ± σ, min, max, and, with a baseline, the ratio to it.
pub fn export_markdown(ms: &[Measurement], baseline: &[Measurement]) -> String {
    let with_base = ms.iter().any(|m| baseline.iter().any(|b| b.scenario == m.scenario));
    let mut s = String::from("| Scenario | Mean [s] | Min [s] | Max [s] | Runs | Events/s |");
    s.push_str(if with_base { " Relative to baseline |\n" } else { "\n" });
    s.push_str("|:---|---:|---:|---:|---:|---:|");
    s.push_str(if with_base { "---:|\n" } else { "\n" });
    for m in ms {
        let _ = write!(
            s,
            "| `{}` | {:.4} ± {:.4} | {:.4} | {:.4} | {} | {:.3e} |",
            m.scenario,
            m.seconds.mean,
            m.seconds.stddev,
            m.seconds.min,
            m.seconds.max,
            m.runs,
            m.events_per_second()
        );
        if with_base {
            match baseline.iter().find(|b| b.scenario == m.scenario) {
                Some(b) => {
                    let (r, sd) = ratio(&m.seconds, &b.seconds);
                    let _ = write!(s, " {r:.2} ± {sd:.2} |");
                }
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_match_hand_computed_values() {
        // 1, 2, 3, 4: mean 2.5, sample variance (2.25+0.25+0.25+2.25)/3 = 5/3.
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.mean, s.median, s.min, s.max), (2.5, 2.5, 1.0, 4.0));
        assert!((s.stddev - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(Stats::of(&[7.0]).stddev, 0.0);
    }

    #[test]
    fn the_ratio_propagates_both_deviations() {
        let a = Stats { mean: 2.0, stddev: 0.2, median: 2.0, min: 1.8, max: 2.2 };
        let b = Stats { mean: 1.0, stddev: 0.1, median: 1.0, min: 0.9, max: 1.1 };
        let (r, sd) = ratio(&a, &b);
        assert_eq!(r, 2.0);
        // 2 × sqrt(0.1² + 0.1²)
        assert!((sd - 2.0 * 0.02f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn an_export_reads_back_and_rows_align() {
        let m = Measurement {
            scenario: "permutation-1024-htsim".into(),
            about: "x".into(),
            basis: "cpu".into(),
            warmup: 1,
            runs: 2,
            seconds: Stats::of(&[1.0, 3.0]),
            wall_seconds: Stats::of(&[1.1, 3.1]),
            times: vec![1.0, 3.0],
            simulated_seconds: 1e-3,
            events: 2_000_000,
            data_packets: 10,
            packet_hops: 30,
            peak_packets: 5,
            peak_rss_bytes: Some(50_000_000),
        };
        let back = parse_export(&export_json(std::slice::from_ref(&m))).unwrap();
        assert_eq!(back[0].times, m.times);
        assert_eq!(back[0].seconds, m.seconds);
        let w = 22;
        let head = table_header(w, true);
        let row = table_row(&m, w, Some(&back[0]));
        assert_eq!(head.chars().count(), row.chars().count(), "{head}\n{row}");
        assert!(row.contains("1.00 ± 1.00 ×"), "{row}"); // ratio 1, σ 1·sqrt(2·(√2/2)²) = 1
        assert!(row.contains("1.00 M"), "2 M events over a 2 s mean: {row}");
        let md = export_markdown(&[m], &back);
        assert!(md.contains("| `permutation-1024-htsim` | 2.0000 ± 1.4142 | 1.0000 | 3.0000 | 2 |"), "{md}");
    }
}
