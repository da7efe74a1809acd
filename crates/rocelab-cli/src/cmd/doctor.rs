//! `rocelab doctor`: read dumps, compare with the fabric file, compute rates, diagnose.
//! Exit status: 0 no error finding, 1 at least one error finding, 2 bad input.

use crate::common::{load_fabric, write_atomic, Failure, VerbResult, EXIT_FAILED_CHECK};
use rocelab_doctor::diagnose::{self, Options, Thresholds};
use rocelab_doctor::{dump, intent, report};
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
    /// nccl-tests output to judge against the expected bandwidth ("is it the network?").
    #[arg(long, value_name = "LOG")]
    nccl: Vec<PathBuf>,
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
    /// Print JSON instead of the human report.
    #[arg(long)]
    json: bool,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(long, short)]
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
    let intent = match &a.fabric {
        Some(p) => Some(intent::from_model(&load_fabric(p)?, &p.display().to_string())),
        None => None,
    };
    let mut snaps = Vec::new();
    let mut skipped_inputs = Vec::new();
    for d in &a.dumps {
        let dump = dump::load_dump(d).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
        snaps.extend(dump.snapshots);
        skipped_inputs.extend(dump.skipped);
    }
    let mut extra_nccl = Vec::new();
    for p in &a.nccl {
        let text = rocelab_doctor::util::read_small(p)
            .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", p.display())))?;
        let hint = p.file_stem().map(|s| s.to_string_lossy().into_owned());
        let runs = rocelab_doctor::parse::nccl::parse(&text, hint.as_deref())
            .map_err(|e| Failure::bad_input(format!("error: {}", e.in_file(p))))?;
        extra_nccl.extend(runs);
    }
    let mut nccl_log = rocelab_doctor::parse::nccl_log::NcclLog::default();
    for p in &a.nccl_log {
        let text = rocelab_doctor::util::read_small(p)
            .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", p.display())))?;
        nccl_log.merge(&rocelab_doctor::parse::nccl_log::parse(&text));
    }
    let opts = Options {
        nccl_log,
        thresholds,
        intent,
        node_net_gbps: a.line_rate_gbps,
        roce_priority: a.roce_priority,
        extra_nccl,
        skipped_inputs,
    };
    let dx = diagnose::diagnose(snaps, &opts);
    let text = if a.json { report::json(&dx) } else { report::human(&dx) };
    match &a.out {
        Some(p) => write_atomic(p, text.as_bytes())?,
        None => print!("{text}"),
    }
    Ok(if dx.has_errors() { ExitCode::from(EXIT_FAILED_CHECK) } else { ExitCode::SUCCESS })
}
