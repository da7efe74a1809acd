//! `rocelab doctor`: read dumps, compare with the fabric file, compute rates, diagnose.
//! With nccl-tests results and a fabric file, the same collectives also run on the twin
//! (the packet engine, `rocelab_workload`) at the real run's sizes and rank count, and the
//! report puts both side by side (`rocelab_doctor::twin`).
//! Exit status: 0 no error finding, 1 at least one error finding, 2 bad input.

use crate::common::{
    load_fabric, located, parse_size, write_atomic, Failure, ProgressLine, VerbResult, EXIT_FAILED_CHECK,
};
use rocelab_doctor::diagnose::{self, Options, Thresholds};
use rocelab_doctor::parse::nccl::NcclRun;
use rocelab_doctor::{dump, intent, report};
use rocelab_model::Model;
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Snapshot directories, directories of snapshots, or `.tar.gz` dumps from `rocelab collect`.
    #[arg(required = true, value_name = "DUMP")]
    dumps: Vec<PathBuf>,
    /// Fabric file with the intended configuration (drift, line rate).
    #[arg(long)]
    fabric: Option<PathBuf>,
    /// A switch configuration as the intended configuration instead of a fabric file: a SONiC
    /// config_db.json or a Cumulus NVUE configuration (JSON or YAML), for its DSCP map, PFC
    /// priorities and lossless queues.
    #[arg(long, value_name = "CONFIG", conflicts_with = "fabric")]
    intent: Option<PathBuf>,
    /// nccl-tests output to judge against the expected bandwidth ("is it the network?").
    #[arg(long, value_name = "LOG")]
    nccl: Vec<PathBuf>,
    /// The twin's table for the same fabric (`collective.txt` of `rocelab simulate
    /// --collective`) to compare the nccl-tests results with, instead of running the twin.
    #[arg(long, value_name = "TABLE")]
    twin: Vec<PathBuf>,
    /// Do not run the twin (by default it runs when --fabric and nccl-tests results are given).
    #[arg(long, conflicts_with = "twin")]
    no_twin: bool,
    /// Largest size the twin runs (K, M, G suffixes are powers of 1024); larger real sizes are
    /// listed as not run.
    #[arg(long, default_value = "1G")]
    twin_max_bytes: String,
    /// A job's NCCL_DEBUG=INFO log (NICs used, GPU Direct RDMA, socket fallback).
    #[arg(long, value_name = "LOG")]
    nccl_log: Vec<PathBuf>,
    /// Expected network bandwidth of one GPU node in Gb/s (all its NICs), overriding the fabric.
    #[arg(long)]
    line_rate_gbps: Option<f64>,
    /// Paused share of the window that is worth a warning.
    #[arg(long, default_value_t = 0.05)]
    pause_ratio: f64,
    /// Paused share of the window that is a PFC storm.
    #[arg(long, default_value_t = 0.5)]
    storm_ratio: f64,
    /// Priority of the switch-side RoCE counters (Cumulus `qos roce counters`).
    #[arg(long, default_value_t = 3)]
    roce_priority: u8,
    /// The report: text for people, JSON for tools (`--json` is short for `--format json`).
    #[arg(long, value_enum, default_value = "text")]
    format: crate::output::Format,
    /// Write the report to this file (atomically) instead of standard output (`--out` is
    /// the same; elsewhere `--out` names a directory of files).
    #[arg(long = "output", short, alias = "out", value_name = "FILE")]
    out: Option<PathBuf>,
}

fn ratio(name: &str, v: f64) -> Result<f64, Failure> {
    if v.is_finite() && v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(Failure::bad_input(format!("error: --{name} must be in (0, 1], got {v}")))
    }
}

pub fn run(a: Args) -> VerbResult {
    let thresholds = Thresholds {
        pause_ratio: ratio("pause-ratio", a.pause_ratio)?,
        storm_ratio: ratio("storm-ratio", a.storm_ratio)?,
        ..Thresholds::default()
    };
    if a.roce_priority > 7 {
        return Err(Failure::bad_input("error: --roce-priority takes 0-7"));
    }
    if let Some(g) = a.line_rate_gbps {
        if !(g.is_finite() && g > 0.0) {
            return Err(Failure::bad_input("error: --line-rate-gbps must be a positive number"));
        }
    }
    let twin_max = parse_size(&a.twin_max_bytes, "--twin-max-bytes")?;
    let fabric = match &a.fabric {
        Some(p) => Some((load_fabric(p)?, p)),
        None => None,
    };
    let mut intent = fabric.as_ref().map(|(m, p)| intent::from_model(m, &p.display().to_string()));
    if let Some(p) = &a.intent {
        // The switch's config, through the same fabric file `rocelab import sonic|nvue` writes.
        let text = rocelab_import::read_text(p).map_err(|e| Failure::bad_input(e.to_string()))?;
        let toml = if rocelab_import::nvue::is_nvue(&text) {
            rocelab_import::nvue::from_text(&p.display().to_string(), &text, 100.0).map(|i| i.toml)
        } else {
            rocelab_import::sonic::from_json(&p.display().to_string(), &text).map(|i| i.toml)
        };
        let toml = toml.map_err(|e| Failure::bad_input(e.to_string()))?;
        let model = rocelab_model::load_str(&format!("{} (imported)", p.display()), &toml).map_err(|e| {
            Failure::bad_input(format!("error: {}: the imported configuration does not load: {e}", p.display()))
        })?;
        intent = Some(intent::from_model(&model, &p.display().to_string()));
    }
    let mut snaps = Vec::new();
    let mut skipped_inputs = Vec::new();
    for d in &a.dumps {
        let dump = dump::load_dump(d, a.roce_priority).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
        snaps.extend(dump.snapshots);
        skipped_inputs.extend(dump.skipped);
    }
    let mut extra_nccl = Vec::new();
    // NCCL outputs are streamed line by line: a job's log can be far larger than a counter file.
    let open = |p: &PathBuf| {
        std::fs::File::open(p)
            .map(std::io::BufReader::new)
            .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", p.display())))
    };
    for p in &a.nccl {
        let hint = p.file_stem().map(|s| s.to_string_lossy().into_owned());
        let runs = rocelab_doctor::parse::nccl::parse_reader(open(p)?, hint.as_deref())
            .map_err(|e| Failure::bad_input(format!("error: {}", e.in_file(p))))?;
        extra_nccl.extend(runs);
    }
    let mut nccl_log = rocelab_doctor::parse::nccl_log::NcclLog::default();
    for p in &a.nccl_log {
        let log = rocelab_doctor::parse::nccl_log::parse_reader(open(p)?)
            .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", p.display())))?;
        nccl_log.merge(&log);
    }
    let mut twin = Vec::new();
    for p in &a.twin {
        let text = rocelab_doctor::util::read_small(p)
            .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", p.display())))?;
        let runs = rocelab_doctor::parse::nccl::parse(&text, None)
            .map_err(|e| Failure::bad_input(format!("error: {}", e.in_file(p))))?;
        twin.extend(runs.into_iter().map(|r| (p.display().to_string(), r)));
    }
    let mut twin_with_nccl_costs = false;
    if let (Some((model, path)), true) = (&fabric, a.twin.is_empty() && !a.no_twin) {
        let real: Vec<&NcclRun> = snaps.iter().flat_map(|s| &s.nccl).chain(&extra_nccl).collect();
        // The twin is put beside a real nccl-tests log, so it charges NCCL's own hop costs
        // (`net_hop_latency = "tuning"`) unless the fabric file chose otherwise in `[nccl]`:
        // without them medium sizes run 1.5-2x faster than NCCL can and could not be judged.
        let mut model = model.clone();
        let nccl = model.config.nccl.get_or_insert(rocelab_model::nccl::NcclConfig {
            net_hop_latency: rocelab_model::nccl::NetHopLatency::Tuning,
        });
        twin_with_nccl_costs = nccl.net_hop_latency == rocelab_model::nccl::NetHopLatency::Tuning;
        twin = run_twin(&model, path, &real, twin_max)?;
    }
    let opts = Options {
        nccl_log,
        thresholds,
        intent,
        node_net_gbps: a.line_rate_gbps,
        roce_priority: a.roce_priority,
        extra_nccl,
        skipped_inputs,
        twin,
        twin_with_nccl_costs,
    };
    let dx = diagnose::diagnose(snaps, &opts);
    let text = match a.format {
        crate::output::Format::Text => report::human(&dx),
        crate::output::Format::Json => crate::output::envelope("doctor.report", &report::json(&dx)),
    };
    match &a.out {
        Some(p) => write_atomic(p, text.as_bytes())?,
        None => print!("{text}"),
    }
    Ok(if dx.has_errors() { ExitCode::from(EXIT_FAILED_CHECK) } else { ExitCode::SUCCESS })
}

/// Runs, on the twin of `model`, every collective of the real runs that the twin knows, at the
/// real sizes up to `max_bytes` and on as many ranks as the first real run of it had (the
/// first k GPU nodes, or the first hosts in ring order); returns the twin's runs as the
/// doctor reads a table (rendered in nccl-tests' layout and parsed back, so a saved
/// `collective.txt` and this give the same comparison).
fn run_twin(model: &Model, path: &Path, real: &[&NcclRun], max_bytes: u64) -> Result<Vec<(String, NcclRun)>, Failure> {
    let mut ops: Vec<(rocelab_workload::Collective, &NcclRun, Vec<u64>)> = Vec::new();
    for run in real {
        let Some(op) = run.op.as_deref().and_then(|o| rocelab_workload::parse_op(o).ok()) else { continue };
        let sizes = run.rows.iter().map(|r| r.size_bytes).filter(|&b| b <= max_bytes);
        match ops.iter_mut().find(|(o, _, _)| *o == op) {
            Some((_, _, v)) => v.extend(sizes),
            None => ops.push((op, run, sizes.collect())),
        }
    }
    let placement = rocelab_workload::placement::placement(model).map_err(|d| located(path, d))?;
    let mut out = Vec::new();
    for (op, first, mut sizes) in ops {
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.is_empty() {
            continue;
        }
        let n = first.ranks.len();
        // As NCCL runs it untold: its algorithm, protocol and channels per size.
        let mut spec = rocelab_workload::CollectiveSpec::nccl(op, sizes[0]);
        // Launched as the real run was: one host thread driving several GPUs without CUDA
        // graphs puts a floor under each call's time (`rocelab_workload::launch`).
        spec.gpus_per_thread = first.launch.filter(|l| l.graph_launches == 0).map(|l| l.gpus_per_thread.max(1));
        // The real rank count where the fabric can hold it; else the whole fabric (the
        // comparison then says the counts differ).
        match &placement {
            rocelab_workload::placement::Placement::Gpus(g) => {
                let per = g.gpus as usize;
                if n >= per && n % per == 0 && n / per <= g.nodes.len() {
                    spec.gpu_nodes = Some((n / per) as u32);
                }
            }
            rocelab_workload::placement::Placement::Hosts(h) => {
                if n >= 2 && n <= h.len() {
                    spec.ranks = Some(h[..n].to_vec());
                }
            }
        }
        let opts = rocelab_sim::SimOptions { recycle_qps: true, ..rocelab_sim::options_from_model(model) };
        let mut bar = ProgressLine::new(false);
        let total = sizes.len();
        let results = rocelab_workload::sweep(model, &spec, &sizes, opts, &mut |i, r| {
            bar.update(Some((i + 1) as f64 / total as f64), &format!("twin {}: {} B", r.op, r.bytes));
        })
        .map_err(|d| located(path, d))?;
        bar.finish();
        let table = rocelab_workload::table::render(&results, &model.config.fabric.name);
        let runs = rocelab_doctor::parse::nccl::parse(&table, None)
            .map_err(|e| Failure::bad_input(format!("error: the twin's own table: {e}")))?;
        let ranks = results.first().map_or(0, |r| r.ranks);
        let channels = results.first().map_or(0, |r| r.channels);
        let source = format!("run on {} ({ranks} ranks, {channels} channels)", path.display());
        out.extend(runs.into_iter().map(|r| (source.clone(), r)));
    }
    Ok(out)
}
