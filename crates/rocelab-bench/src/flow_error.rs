//! A faster way to run against the full packet engine, on a fixed suite: the flow engine
//! (`rocelab bench --flow-error`, the table `docs/flow-engine.md` shows) or the packet engine
//! with its steady-state fast-forward (`--fast-forward-error`, `docs/simulate.md`). The same
//! fabric, seed and workload both ways, the candidate's figure compared item by item with the
//! full run's (a collective's time per size, a flow's FCT per flow, a training step's time).

use rocelab_model::Model;
use rocelab_sim::{EngineKind, RunReport, SimOptions};
use rocelab_workload::{Collective, CollectiveSpec};
use std::fmt::Write;

/// What a case runs.
pub enum Work {
    /// Ring all-reduce at each size (bytes), the fabric's default placement and channels.
    AllReduce(Vec<u64>),
    /// The fabric's `[[traffic]]`, with every table's `size_bytes` replaced when given.
    Traffic(Option<u64>),
    /// One training step of each plan file (path, text) on the fabric, as `simulate --step`
    /// runs it: its step time, and the part of it the GPUs wait on the network (step − the
    /// same DAG on an ideal network), where the engines can differ most.
    Steps(&'static [(&'static str, &'static str)]),
}

/// What runs against the full packet engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// The flow engine.
    Flow,
    /// The packet engine skipping steady states (`SimOptions::fast_forward`, its defaults).
    FastForward,
}

impl Candidate {
    /// Its column in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Candidate::Flow => "flow",
            Candidate::FastForward => "fast-forward",
        }
    }
}

pub struct Case {
    pub name: &'static str,
    pub fabric_file: &'static str,
    pub fabric: &'static str,
    pub work: Work,
}

/// One compared item: its label, and both runs' figures (µs).
#[derive(Clone, Debug)]
pub struct Item {
    pub label: String,
    pub packet_us: f64,
    pub candidate_us: f64,
}

impl Item {
    /// (candidate − packet) / packet.
    pub fn error(&self) -> f64 {
        (self.candidate_us - self.packet_us) / self.packet_us
    }
}

pub struct CaseResult {
    pub name: &'static str,
    pub items: Vec<Item>,
    /// Its items get a table of their own (collective sizes, training steps; not the flows of
    /// a traffic case, too many to list).
    pub item_table: bool,
    /// Wall seconds each run took for the whole case.
    pub packet_wall_s: f64,
    pub candidate_wall_s: f64,
    /// Data packets the candidate simulated, of all it accounted for (a fast-forward credits
    /// the rest; the flow engine has none).
    pub packets: (u64, u64),
}

/// Nearest-rank quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

impl CaseResult {
    /// Median of the signed errors, and the median and p99 of their magnitudes.
    pub fn summary(&self) -> (f64, f64, f64) {
        let mut signed: Vec<f64> = self.items.iter().map(Item::error).collect();
        signed.sort_by(f64::total_cmp);
        let mut abs: Vec<f64> = signed.iter().map(|e| e.abs()).collect();
        abs.sort_by(f64::total_cmp);
        (quantile(&signed, 0.5), quantile(&abs, 0.5), quantile(&abs, 0.99))
    }
}

const MIB: u64 = 1 << 20;

pub fn cases() -> Vec<Case> {
    let sizes: Vec<u64> = (0..6).map(|k| MIB << (2 * k)).collect(); // 1 MiB .. 1 GiB, ×4
    vec![
        Case {
            name: "all-reduce rail-128gpu",
            fabric_file: "examples/rail-128gpu.toml",
            fabric: include_str!("../../../examples/rail-128gpu.toml"),
            work: Work::AllReduce(sizes.clone()),
        },
        Case {
            name: "all-reduce leaf-spine-small",
            fabric_file: "examples/leaf-spine-small.toml",
            fabric: include_str!("../../../examples/leaf-spine-small.toml"),
            work: Work::AllReduce(sizes),
        },
        Case {
            name: "permutation 1 MB leaf-spine-small",
            fabric_file: "examples/leaf-spine-small.toml",
            fabric: include_str!("../../../examples/leaf-spine-small.toml"),
            work: Work::Traffic(None),
        },
        Case {
            name: "permutation 16 MB leaf-spine-small",
            fabric_file: "examples/leaf-spine-small.toml",
            fabric: include_str!("../../../examples/leaf-spine-small.toml"),
            work: Work::Traffic(Some(16_000_000)),
        },
        Case {
            name: "training steps rail-128gpu",
            fabric_file: "examples/rail-128gpu.toml",
            fabric: include_str!("../../../examples/rail-128gpu.toml"),
            work: Work::Steps(&[
                ("examples/plan/step-200m-32gpu.toml", include_str!("../../../examples/plan/step-200m-32gpu.toml")),
                ("examples/plan/step-moe-32gpu.toml", include_str!("../../../examples/plan/step-moe-32gpu.toml")),
            ]),
        },
        Case {
            name: "incast 16:1 1 MB",
            fabric_file: "examples/incast-16to1.toml",
            fabric: include_str!("../../../examples/incast-16to1.toml"),
            work: Work::Traffic(None),
        },
    ]
}

/// The fast-forward's suite: the flow engine's, and a step whose DP rings carry 55 MB chunks
/// (where skipping pays, and where it could err).
pub fn fast_forward_cases() -> Vec<Case> {
    let mut v = cases();
    v.push(Case {
        name: "Llama 3 70B step rail-128gpu",
        fabric_file: "examples/rail-128gpu.toml",
        fabric: include_str!("../../../examples/rail-128gpu.toml"),
        work: Work::Steps(&[(
            "examples/plan/llama3-70b-step-128.toml",
            include_str!("../../../examples/plan/llama3-70b-step-128.toml"),
        )]),
    });
    v
}

fn load(c: &Case, size: Option<u64>) -> Result<Model, String> {
    let mut text = c.fabric.to_string();
    if let Some(s) = size {
        text = text
            .lines()
            .map(|l| if l.trim_start().starts_with("size_bytes") { format!("size_bytes = {s}") } else { l.to_string() })
            .collect::<Vec<_>>()
            .join("\n");
    }
    rocelab_model::load_str(c.fabric_file, &text).map_err(|e| e.to_string())
}

/// The full packet run's options (`k` = 0), or the candidate's.
fn opts(m: &Model, k: usize, c: Candidate) -> SimOptions {
    let o = SimOptions { recycle_qps: true, sample_interval: None, ..rocelab_sim::options_from_model(m) };
    match (k, c) {
        (0, _) => o,
        (_, Candidate::Flow) => SimOptions { engine: EngineKind::Flow, ..o },
        (_, Candidate::FastForward) => SimOptions { fast_forward: Some(Default::default()), ..o },
    }
}

/// The candidate's data packets: simulated and skipped.
fn packets(r: &RunReport) -> (u64, u64) {
    let skipped = r.fast_forward.as_ref().map_or(0, |f| f.skipped_data_packets);
    (r.totals.data_packets_sent - skipped, r.totals.data_packets_sent)
}

/// Runs a case in full on the packet engine and on the candidate.
pub fn run_case(c: &Case, against: Candidate, progress: &mut dyn FnMut(&str)) -> Result<CaseResult, String> {
    let mut items = Vec::new();
    let mut wall = [0.0f64; 2];
    let mut sim = (0u64, 0u64);
    let mut count = |k: usize, r: &RunReport| {
        if k == 1 {
            let (a, b) = packets(r);
            sim = (sim.0 + a, sim.1 + b);
        }
    };
    let who = against.name();
    match &c.work {
        Work::AllReduce(sizes) => {
            let m = load(c, None)?;
            for &s in sizes {
                // NCCL's ring channels (`CollectiveSpec::resolve`).
                let spec = CollectiveSpec { channels: None, ..CollectiveSpec::new(Collective::AllReduce, s) };
                let mut t = [0.0; 2];
                for k in 0..2 {
                    let t0 = std::time::Instant::now();
                    let r = rocelab_workload::run_collective(&m, &spec, opts(&m, k, against))
                        .map_err(|d| format!("{d:?}"))?;
                    wall[k] += t0.elapsed().as_secs_f64();
                    t[k] = r.time_us;
                    count(k, &r.report);
                }
                progress(&format!("{}: {} B packet {:.1} µs {who} {:.1} µs", c.name, s, t[0], t[1]));
                items.push(Item { label: format!("{} MiB", s / MIB), packet_us: t[0], candidate_us: t[1] });
            }
        }
        Work::Traffic(size) => {
            let m = load(c, *size)?;
            let mut reports: Vec<RunReport> = Vec::new();
            for k in 0..2 {
                let t0 = std::time::Instant::now();
                let mut run = rocelab_sim::build_run(&m, opts(&m, k, against)).map_err(|d| format!("{d:?}"))?;
                run.run(&mut |_| {});
                wall[k] += t0.elapsed().as_secs_f64();
                reports.push(RunReport::from_snapshot(&run.snapshot(), &m));
                count(k, &reports[k]);
            }
            for (p, f) in reports[0].flows.iter().zip(&reports[1].flows) {
                let (Some(a), Some(b)) = (p.fct_seconds, f.fct_seconds) else {
                    return Err(format!("{}: flow {} did not finish both ways", c.name, p.flow));
                };
                items.push(Item { label: format!("flow {}", p.flow), packet_us: a * 1e6, candidate_us: b * 1e6 });
            }
            progress(&format!("{}: {} flows", c.name, items.len()));
        }
        Work::Steps(plans) => {
            let m = load(c, None)?;
            for &(file, text) in plans.iter() {
                let (plan, _) = rocelab_workload::step::step_plan_on_fabric(file, text, &m)?;
                let (mut t, mut wait) = ([0.0; 2], [0.0; 2]);
                for k in 0..2 {
                    let t0 = std::time::Instant::now();
                    let r = rocelab_workload::step::run_step(&m, &plan, opts(&m, k, against))
                        .map_err(|d| format!("{d:?}"))?;
                    wall[k] += t0.elapsed().as_secs_f64();
                    (t[k], wait[k]) = (r.step_us, r.step_us - r.compute_only_us);
                    count(k, &r.report);
                }
                progress(&format!("{}: {file} packet {:.1} µs {who} {:.1} µs", c.name, t[0], t[1]));
                let name = file.rsplit('/').next().unwrap_or(file).trim_end_matches(".toml");
                items.push(Item { label: format!("{name} step"), packet_us: t[0], candidate_us: t[1] });
                items.push(Item { label: format!("{name} network wait"), packet_us: wait[0], candidate_us: wait[1] });
            }
        }
    }
    let item_table = !matches!(c.work, Work::Traffic(_));
    Ok(CaseResult { name: c.name, items, item_table, packet_wall_s: wall[0], candidate_wall_s: wall[1], packets: sim })
}

/// The suite's table (Markdown), one row per case, then every collective size.
pub fn markdown(results: &[CaseResult], against: Candidate) -> String {
    let who = against.name();
    let ff = against == Candidate::FastForward;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| case | items | median error | median abs error | p99 abs error | packet wall s | {who} wall s |{}",
        if ff { " packets simulated |" } else { "" }
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|{}", if ff { "---:|" } else { "" });
    for r in results {
        let (med, mabs, p99) = r.summary();
        let share = if ff {
            format!(" {:.1} % |", 100.0 * r.packets.0 as f64 / r.packets.1.max(1) as f64)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:+.2} % | {:.2} % | {:.2} % | {:.2} | {:.3} |{share}",
            r.name,
            r.items.len(),
            100.0 * med,
            100.0 * mabs,
            100.0 * p99,
            r.packet_wall_s,
            r.candidate_wall_s
        );
    }
    for r in results.iter().filter(|r| r.item_table) {
        let _ = writeln!(s, "\n{}:\n\n| item | packet µs | {who} µs | error |\n|---:|---:|---:|---:|", r.name);
        for i in &r.items {
            let _ = writeln!(
                s,
                "| {} | {:.1} | {:.1} | {:+.2} % |",
                i.label,
                i.packet_us,
                i.candidate_us,
                100.0 * i.error()
            );
        }
    }
    s
}
