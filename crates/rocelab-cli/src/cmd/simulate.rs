//! `rocelab simulate FILE`: run the packet-level engine (or, with `--engine flow`, the
//! flow-level one) on a fabric's traffic and faults.
//!
//! Prints a summary (or the JSON report with `--format json`) and writes, atomically, into
//! `--out DIR`: `summary.json`, `flows.csv`, `metrics.prom` and, with sampling on,
//! `timeseries.csv`. Seed, version, fabric hash and simulated time are in every report.

use crate::common::{load_fabric_shown, located, parse_size, write_atomic, Failure, ProgressLine, VerbResult};
use rocelab_model::SimTime;
use rocelab_sim::{report, RunReport};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Engine {
    Packet,
    Flow,
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
    /// Run an NCCL-like collective instead of the file's [[traffic]], as nccl-tests does:
    /// all_reduce, all_gather, reduce_scatter, alltoall (or all_to_all), broadcast or sendrecv,
    /// over every host. Prints nccl-tests' table.
    #[arg(long, conflicts_with = "ns3_config")]
    collective: Option<String>,
    /// Smallest size of the sweep (nccl-tests' -b; K, M, G suffixes are powers of 1024).
    #[arg(long, default_value = "8", requires = "collective")]
    min_bytes: String,
    /// Largest size of the sweep (nccl-tests' -e); default: --min-bytes.
    #[arg(long, requires = "collective")]
    max_bytes: Option<String>,
    /// Size multiplier between steps of the sweep (nccl-tests' -f).
    #[arg(long, default_value_t = 2, requires = "collective")]
    step_factor: u64,
    /// NCCL channels (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS); default: one per NIC of a GPU
    /// node when the ranks are GPUs (every rail carries a ring), else 2.
    #[arg(long, requires = "collective")]
    channels: Option<u32>,
    /// NCCL_IB_QPS_PER_CONNECTION: QPs each chunk is split over.
    #[arg(long, default_value_t = 1, requires = "collective")]
    qps_per_connection: u32,
    /// Broadcast's pipeline chunk per channel: NCCL's Simple step, NCCL_BUFFSIZE / NCCL_STEPS
    /// (K, M, G suffixes as for sizes).
    #[arg(long, default_value = "512K", requires = "collective")]
    chunk_bytes: String,
    /// Broadcast's root rank (nccl-tests' -r).
    #[arg(long, default_value_t = 0, requires = "collective")]
    root: u32,
    /// Where the ranks sit: `auto` (a GPU per rank on a fabric of GPU nodes, intra-node hops
    /// over NVLink/PCIe; else a host NIC per rank) or `nics` (every host NIC a rank, every hop
    /// on the fabric).
    #[arg(long, default_value = "auto", value_parser = ["auto", "nics"], requires = "collective")]
    placement: String,
    /// The engine: `packet` (every packet, queue, PFC frame and DCQCN update) or `flow`
    /// (max-min fair rates of flows on their ECMP paths: seconds at fabric scale, no queues;
    /// docs/flow-engine.md measures its error).
    #[arg(long, value_enum, default_value = "packet")]
    engine: Engine,
    /// Run on the first K GPU nodes only, as a job launched on K nodes (`srun -N K`); default:
    /// every node of the fabric.
    #[arg(long, value_name = "K", requires = "collective")]
    nodes: Option<u32>,
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
    opts.engine = match a.engine {
        Engine::Packet => rocelab_sim::EngineKind::Packet,
        Engine::Flow => rocelab_sim::EngineKind::Flow,
    };
    if let (rocelab_sim::EngineKind::Flow, Some(_)) = (opts.engine, a.sample_us) {
        return Err(Failure::bad_input(
            "error: --sample-us samples queues, which the flow engine does not model; use --engine packet",
        ));
    }
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
    if let Some(name) = &a.collective {
        drop(stages);
        return run_collective(&a, name, &model, &file, opts);
    }
    let end = opts.duration;
    stages.stage("building the simulation");
    let mut sim = rocelab_sim::build_run(&model, opts).map_err(|d| located(&file, d))?;
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
    let snap = sim.snapshot();
    let rep = RunReport::from_snapshot(&snap, &model);
    if !a.no_files {
        std::fs::create_dir_all(&a.out)
            .map_err(|e| Failure::bad_input(format!("error: cannot create {}: {e}", a.out.display())))?;
        write_atomic(&a.out.join("summary.json"), rep.to_json().as_bytes())?;
        write_atomic(&a.out.join("flows.csv"), rep.flows_csv().as_bytes())?;
        write_atomic(&a.out.join("metrics.prom"), rep.prometheus().as_bytes())?;
        if snap.sample_interval.is_some() {
            write_atomic(&a.out.join("timeseries.csv"), report::series_csv(&snap, &model).as_bytes())?;
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

/// `--collective`: the sweep nccl-tests would run, on the twin; the table on stdout (or JSON)
/// and, unless `--no-files`, `collective.txt` and `collective.json` in `--out`.
fn run_collective(
    a: &Args,
    name: &str,
    model: &rocelab_model::Model,
    file: &std::path::Path,
    opts: rocelab_sim::SimOptions,
) -> VerbResult {
    let op = rocelab_workload::parse_op(name).map_err(|e| Failure::bad_input(format!("error: --collective: {e}")))?;
    let min = parse_size(&a.min_bytes, "--min-bytes")?;
    let max = match &a.max_bytes {
        Some(s) => parse_size(s, "--max-bytes")?,
        None => min,
    };
    let sizes = rocelab_workload::sweep_sizes(min, max, a.step_factor)
        .map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    let spec = rocelab_workload::CollectiveSpec {
        channels: match a.channels {
            Some(c) => c.max(1),
            None if a.placement == "nics" => 2,
            None => rocelab_workload::default_channels(model),
        },
        qps_per_connection: a.qps_per_connection.max(1),
        chunk_bytes: parse_size(&a.chunk_bytes, "--chunk-bytes")?,
        root: a.root,
        ranks: (a.placement == "nics").then(|| rocelab_workload::default_ranks(model)),
        gpu_nodes: a.nodes,
        ..rocelab_workload::CollectiveSpec::new(op, min)
    };
    let mut bar = ProgressLine::new(a.quiet);
    let total = sizes.len();
    // A ring posts a message per step, chunk and channel (millions at 1,024 ranks): reuse the
    // slots of finished QPs so memory follows the QPs alive at once (same results).
    let opts = rocelab_sim::SimOptions { recycle_qps: true, ..opts };
    let results = rocelab_workload::sweep(model, &spec, &sizes, opts, &mut |i, r| {
        bar.update(Some((i + 1) as f64 / total as f64), &format!("{} B: {:.1} µs", r.bytes, r.time_us));
    })
    .map_err(|d| located(file, d))?;
    bar.finish();
    let table = rocelab_workload::table::render(&results, &model.config.fabric.name);
    let json = serde_json::to_string_pretty(&results).map_err(|e| Failure::bad_input(format!("error: {e}")))? + "\n";
    if !a.no_files {
        std::fs::create_dir_all(&a.out)
            .map_err(|e| Failure::bad_input(format!("error: cannot create {}: {e}", a.out.display())))?;
        write_atomic(&a.out.join("collective.txt"), table.as_bytes())?;
        write_atomic(&a.out.join("collective.json"), json.as_bytes())?;
    }
    match a.format {
        Format::Text => print!("{table}"),
        Format::Json => print!("{json}"),
    }
    if !a.quiet {
        eprintln!("wall {:.2} s", bar.elapsed().as_secs_f64());
    }
    Ok(ExitCode::SUCCESS)
}
