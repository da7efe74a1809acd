//! `rocelab simulate FILE`: run the packet-level engine on a fabric's traffic and faults.
//!
//! Prints a summary (or the JSON report with `--format json`) and writes, atomically, into
//! `--out DIR`: `summary.json`, `flows.csv`, `metrics.prom` and, with sampling on,
//! `timeseries.csv`. Seed, version, fabric hash and simulated time are in every report.

use crate::common::{load_fabric_shown, located, write_atomic, Failure, ProgressLine, VerbResult};
use rocelab_model::SimTime;
use rocelab_sim::{report, RunReport};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The fabric file, with [[traffic]] (and optionally [[fault]]) tables.
    #[arg(required_unless_present = "ns3_config")]
    file: Option<PathBuf>,
    /// Import an HPCC ns-3 config.txt (and its topology and flow files) into --out and run it;
    /// also writes ns-3's FCT and PFC files (docs/import.md).
    #[arg(long, conflicts_with_all = ["file", "sample_us", "ack_interval", "no_files", "format"])]
    ns3_config: Option<PathBuf>,
    /// Seed of every random stream (overrides [simulation] seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Stop after this much simulated time, in µs (overrides [simulation] duration_us).
    #[arg(long)]
    duration_us: Option<f64>,
    /// Sample buffer occupancy every N µs into timeseries.csv.
    #[arg(long)]
    sample_us: Option<f64>,
    /// The receiver acknowledges every N packets.
    #[arg(long)]
    ack_interval: Option<u32>,
    /// Output directory for summary.json, flows.csv, metrics.prom (and timeseries.csv).
    #[arg(long, short, default_value = "rocelab-out")]
    out: PathBuf,
    /// Do not write output files.
    #[arg(long)]
    no_files: bool,
    /// Summary format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
}

fn positive_time(v: Option<f64>, flag: &str) -> Result<Option<SimTime>, Failure> {
    match v {
        None => Ok(None),
        Some(x) if x.is_finite() && x > 0.0 => Ok(Some(SimTime::from_secs_f64(x * 1e-6))),
        Some(x) => Err(Failure::bad_input(format!("error: {flag} must be a positive number of µs, got {x}"))),
    }
}

pub fn run(a: Args) -> VerbResult {
    if let Some(c) = &a.ns3_config {
        return crate::cmd::import::simulate_ns3(c, None, None, &a.out, a.seed, a.duration_us, a.quiet);
    }
    let file = a.file.clone().unwrap_or_default();
    let stages = crate::common::Stages::start(&format!("simulate {}", file.display()));
    let model = load_fabric_shown(&file, &stages)?;
    let mut opts = rocelab_sim::options_from_model(&model);
    if let Some(s) = a.seed {
        opts.seed = s;
    }
    if let Some(d) = positive_time(a.duration_us, "--duration-us")? {
        opts.duration = Some(d);
    }
    if let Some(d) = positive_time(a.sample_us, "--sample-us")? {
        opts.sample_interval = Some(d);
    }
    if let Some(n) = a.ack_interval {
        if n == 0 {
            return Err(Failure::bad_input("error: --ack-interval must be at least 1"));
        }
        opts.ack_interval = n;
    }
    let end = opts.duration;
    stages.stage("building the simulation");
    let mut sim = rocelab_sim::build(&model, opts).map_err(|d| located(&file, d))?;
    drop(stages);
    let mut bar = ProgressLine::new(a.quiet);
    sim.run(&mut |p| {
        let el = bar.elapsed().as_secs_f64().max(1e-9);
        let frac = match end {
            Some(e) => Some(p.now.as_secs_f64() / e.as_secs_f64()),
            // Runs to completion: the share of payload delivered (QPs finish in a burst).
            None => Some(p.bytes_done as f64 / p.bytes_total.max(1) as f64),
        };
        bar.update(
            frac,
            &format!(
                "simulated {:.1} µs, {:.2} M events/s, {}/{} QPs done",
                p.now.as_us_f64(),
                p.events as f64 / el / 1e6,
                p.qps_done,
                p.qps_total
            ),
        );
    });
    bar.finish();
    let wall = bar.elapsed();
    let rep = RunReport::from_sim(&sim);
    if !a.no_files {
        std::fs::create_dir_all(&a.out)
            .map_err(|e| Failure::bad_input(format!("error: cannot create {}: {e}", a.out.display())))?;
        write_atomic(&a.out.join("summary.json"), rep.to_json().as_bytes())?;
        write_atomic(&a.out.join("flows.csv"), rep.flows_csv().as_bytes())?;
        write_atomic(&a.out.join("metrics.prom"), rep.prometheus().as_bytes())?;
        if sim.opts_sample_interval().is_some() {
            write_atomic(&a.out.join("timeseries.csv"), report::series_csv(&sim).as_bytes())?;
        }
    }
    match a.format {
        Format::Text => {
            print!("{}", rep.render_text());
            if !a.no_files {
                println!("  results in {}/", a.out.display());
            }
        }
        Format::Json => print!("{}", rep.to_json()),
    }
    if !a.quiet {
        eprintln!(
            "wall {:.2} s, {:.2} M events/s, {:.2} M data packets/s",
            wall.as_secs_f64(),
            rep.events as f64 / wall.as_secs_f64().max(1e-9) / 1e6,
            rep.totals.data_packets_sent as f64 / wall.as_secs_f64().max(1e-9) / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}
