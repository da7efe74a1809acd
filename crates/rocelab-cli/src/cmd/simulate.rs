//! `rocelab simulate FILE`: run the packet-level engine (or, with `--engine flow`, the
//! flow-level one) on a fabric's traffic and faults.
//!
//! Prints a summary (or the JSON report with `--format json`) and writes, atomically, into
//! `--out DIR`: `summary.json`, `flows.csv`, `metrics.prom` and, with sampling on,
//! `timeseries.csv`. Seed, version, fabric hash and simulated time are in every report.

use crate::common::{load_fabric_shown, located, located_or_flag, parse_size, Failure, ProgressLine, VerbResult};
use crate::output::{envelope, write_set};
use rocelab_model::SimTime;
use rocelab_sim::{report, RunReport};
use std::path::PathBuf;
use std::process::ExitCode;

pub use crate::output::Format;

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum Engine {
    Packet,
    Flow,
}

impl Engine {
    pub(crate) fn kind(self) -> rocelab_sim::EngineKind {
        match self {
            Engine::Packet => rocelab_sim::EngineKind::Packet,
            Engine::Flow => rocelab_sim::EngineKind::Flow,
        }
    }
}

#[derive(Clone, clap::Args)]
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
    /// Run the file's `[[workload]]` of this name, or `all` of them (the default for a file
    /// with workloads and no `[[traffic]]`).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["ns3_config", "collective", "step"])]
    workload: Option<String>,
    /// Run one training step of this plan file (`rocelab plan`'s format, resolved on this
    /// fabric) on the twin: compute from plan, pipeline sends and the DP all-reduce on the
    /// engine; prints the step time, the share GPUs wait on the network and plan's figures.
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["ns3_config", "collective"])]
    step: Option<PathBuf>,
    /// Serve requests with this inference plan file (`rocelab plan`'s format, with a
    /// `[serve]` table: rate_per_s, requests or trace, token_budget, kv_transfer) on the twin:
    /// continuous batching, pipeline sends and the disaggregated KV transfer on the engine;
    /// prints TTFT and TPOT at p50/p90/p99, tokens/s and the network's share beside plan's.
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["ns3_config", "collective", "step", "workload"])]
    serve: Option<PathBuf>,
    /// Run the file's `[[job]]` tenants together on the fabric, then each alone with the same
    /// seed: each job's slowdown, and the links it waited on with the other jobs' bytes there.
    /// The default for a file whose only runs are `[[job]]` tables.
    #[arg(long, conflicts_with_all = ["ns3_config", "collective", "step", "workload", "serve"])]
    jobs: bool,
    /// Smallest size of the sweep (nccl-tests' -b; K, M, G suffixes are powers of 1024).
    #[arg(long, short = 'b', default_value = "8", requires = "collective")]
    min_bytes: String,
    /// Largest size of the sweep (nccl-tests' -e); default: --min-bytes.
    #[arg(long, short = 'e', requires = "collective")]
    max_bytes: Option<String>,
    /// Size multiplier between steps of the sweep (nccl-tests' -f).
    #[arg(long, short = 'f', default_value_t = 2, requires = "collective")]
    step_factor: u64,
    /// GPUs of the run (nccl-tests' -g, one process): a whole number of GPU nodes, as
    /// `--nodes` counts them; default: every GPU of the fabric.
    #[arg(long, short = 'g', value_name = "N", requires = "collective", conflicts_with = "nodes")]
    gpus: Option<u32>,
    /// NCCL channels (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS); default: one per NIC of a GPU
    /// node when the ranks are GPUs (every rail carries a ring), else 2.
    #[arg(long, requires = "collective")]
    channels: Option<u32>,
    /// NCCL_PXN_DISABLE=1: all-to-all and send/recv messages leave on the sender's own NIC
    /// instead of the destination rail's (PXN, NCCL's default).
    #[arg(long, requires = "collective")]
    pxn_disable: bool,
    /// NCCL_ALGO: auto (NCCL's choice by its tuning model, per size), ring, or tree (NCCL's
    /// double binary tree; all_reduce only).
    #[arg(long, default_value = "auto", requires = "collective")]
    algo: String,
    /// NCCL_PROTO: auto (NCCL's choice, per size), LL, LL128 or Simple.
    #[arg(long, default_value = "auto", requires = "collective")]
    proto: String,
    /// NCCL_IB_QPS_PER_CONNECTION: QPs of every connection.
    #[arg(long, default_value_t = 1, requires = "collective")]
    qps_per_connection: u32,
    /// NCCL_IB_SPLIT_DATA_ON_QPS: 1 stripes every message over all the connection's QPs; 0
    /// (NCCL's default) sends each 512 KiB chunk on one QP in turn.
    #[arg(long, default_value = "0", value_parser = ["0", "1"], requires = "collective")]
    split_data_on_qps: String,
    /// Broadcast's and the tree's pipeline chunk per channel: NCCL's Simple step, NCCL_BUFFSIZE / NCCL_STEPS
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
    /// Cut the fabric into at most N partitions and run them on threads (the packet engine on
    /// RoCE: a fabric's own [[traffic]] and [[fault]], or a collective whose NCCL proxy
    /// overhead is above zero). The cut fixes the results: every thread count gives the same
    /// bytes (docs/simulate.md, "The parallel packet engine").
    #[arg(long, value_name = "N", conflicts_with = "scenario")]
    partitions: Option<u32>,
    /// What the cut follows: auto (pods on a 3-tier fat tree, rail groups on a rail-optimized
    /// fabric, else leaf groups), pod, rail, leaf.
    #[arg(long, default_value = "auto", requires = "partitions")]
    partition_by: String,
    /// Worker threads for --partitions (default: one per core, at most one per partition).
    #[arg(long, value_name = "N", requires = "partitions")]
    threads: Option<usize>,
    /// Skip steady stretches: a group of QPs whose links (data and ACK paths) no other QP
    /// shares, steady for three looks 2 µs apart, stops sending and is credited what it would
    /// have sent, until two looks before its first message ends (the packet engine on RoCE
    /// with ECMP). Results are approximate: docs/simulate.md, "Steady-state fast-forward",
    /// measures the error (under 0.1 % on training steps). Off by default.
    #[arg(long, conflicts_with_all = ["scenario", "partitions"])]
    fast_forward: bool,
    /// How often --fast-forward looks for steady QPs, µs (a group must hold steady for three
    /// looks, and each message keeps its last two looks' packets).
    #[arg(long, value_name = "US", requires = "fast_forward")]
    fast_forward_period_us: Option<f64>,
    /// Run on the first K GPU nodes only, as a job launched on K nodes (`srun -N K`); default:
    /// every node of the fabric.
    #[arg(long, value_name = "K", requires = "collective")]
    nodes: Option<u32>,
    /// Time each call as nccl-tests does when one thread launches it on N GPUs without CUDA
    /// graphs (its `-g N` in one process, `graph: 0`): at least N × 5.5 µs of host launches per
    /// call; default: one process per GPU, no such floor.
    #[arg(long, value_name = "N", requires = "collective")]
    gpus_per_thread: Option<u32>,
    /// Run a stress scenario instead of the file's [[traffic]] and [[fault]]: a [[scenario]] of
    /// the file by name, or a kind with its defaults (`incast`, `switch-reboot`, ...;
    /// `rocelab scenarios --list`). Writes scenario.json, summary.json and timeseries.csv.
    #[arg(long, conflicts_with_all = ["ns3_config", "collective", "step", "workload", "duration_us", "sample_us", "ack_interval"])]
    scenario: Option<String>,
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
        return crate::cmd::import::simulate_ns3(c, None, None, &a.out, a.seed, a.duration_us, a.quiet, Format::Text);
    }
    let file = a.file.clone().unwrap_or_default();
    let stages = crate::common::Stages::start_unless(a.quiet, &format!("simulate {}", file.display()));
    let model = load_fabric_shown(&file, &stages)?;
    let mut opts = rocelab_sim::options_from_model(&model);
    opts.engine = a.engine.kind();
    if let (rocelab_sim::EngineKind::Flow, Some(_)) = (opts.engine, a.sample_us) {
        return Err(Failure::bad_input(
            "error: --sample-us samples queues, which the flow engine does not model; use --engine packet",
        ));
    }
    if let (rocelab_sim::EngineKind::Flow, Some(_)) = (opts.engine, &a.scenario) {
        // The stress scenarios are judged by queues, pauses, marks and drops, which the flow
        // engine does not have (docs/flow-engine.md): refused rather than run on the packet
        // engine behind the user's back, or answered with zeros.
        return Err(Failure::bad_input(
            "error: --scenario runs the stress scenarios, whose figures (queues, PFC, ECN, drops) the flow engine \
             does not model\n  = help: use --engine packet; on the flow engine, `--collective` and `--step` \
             answer bandwidth questions, and `rocelab validate --engine flow` runs the checks it can answer",
        ));
    }
    if let Some(s) = a.seed {
        opts.seed = s;
    }
    if let Some(parts) = a.partitions {
        let by = rocelab_sim::partition::PartitionBy::parse(&a.partition_by).ok_or_else(|| {
            Failure::bad_input(format!(
                "error: --partition-by: `{}` is not a cut\n  = help: use auto, pod, rail or leaf",
                a.partition_by
            ))
        })?;
        if parts == 0 || a.threads == Some(0) {
            return Err(Failure::bad_input("error: --partitions and --threads must be at least 1"));
        }
        if opts.engine == rocelab_sim::EngineKind::Flow {
            return Err(Failure::bad_input("error: --partitions cuts the packet engine; drop --engine flow"));
        }
        opts.parallel = Some(rocelab_sim::parallel::Parallel { by, parts, threads: a.threads.unwrap_or(0) });
    }
    if a.fast_forward {
        if opts.engine == rocelab_sim::EngineKind::Flow {
            return Err(Failure::bad_input(
                "error: --fast-forward skips the packet engine's steady states; the flow engine has none to skip\n  \
                 = help: drop --fast-forward or --engine flow",
            ));
        }
        let mut ff = rocelab_sim::engine::FastForward::default();
        if let Some(p) = positive_time(a.fast_forward_period_us, "--fast-forward-period-us")? {
            ff.period = p;
        }
        opts.fast_forward = Some(ff);
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
    // Counts of one or more, refused here as the flags they are (NCCL itself takes 0 as "unset").
    if a.channels == Some(0) {
        return Err(Failure::bad_input("error: --channels must be at least 1 (NCCL_MIN_NCHANNELS)"));
    }
    if a.qps_per_connection == 0 {
        return Err(Failure::bad_input("error: --qps-per-connection must be at least 1 (NCCL_IB_QPS_PER_CONNECTION)"));
    }
    if let Some(name) = &a.scenario {
        drop(stages);
        return run_scenario(&a, name, &model, &file, opts.seed);
    }
    if let Some(name) = &a.collective {
        drop(stages);
        return run_collective(&a, &collective_request(&a, name, &model)?, &model, &file, opts);
    }
    if let Some(plan) = &a.step {
        drop(stages);
        return run_step(&a, plan, &model, &file, opts);
    }
    if let Some(plan) = &a.serve {
        drop(stages);
        return run_serve(&a, plan, &model, &file, opts, None);
    }
    // A file whose only runs are `[[job]]` tenants runs them, as `[[workload]]` tables run.
    let only_jobs =
        !model.intent.jobs.is_empty() && model.config.traffic.is_empty() && model.config.workload.is_empty();
    if a.jobs || (only_jobs && a.workload.is_none()) {
        if a.fast_forward {
            // Each tenant's slowdown is a ratio of two runs: skipping either would move it
            // without the report saying by how much.
            return Err(Failure::bad_input(
                "error: --fast-forward does not run [[job]] tenants (their slowdowns compare runs alone and \
                 together)\n  = help: drop --fast-forward",
            ));
        }
        drop(stages);
        return run_jobs(&a, &model, &file, opts);
    }
    if a.workload.is_some() || (!model.config.workload.is_empty() && model.config.traffic.is_empty()) {
        drop(stages);
        return run_workloads(&a, &model, &file, opts);
    }
    stages.stage("building the simulation");
    let (rep, series, wall) = run_traffic(&model, &file, opts, a.quiet, Some(stages))?;
    let json = envelope("simulate.summary", &rep.to_json());
    if !a.no_files {
        let (flows, prom) = (rep.flows_csv(), rep.prometheus());
        let mut files: Vec<(&str, &[u8])> =
            vec![("summary.json", json.as_bytes()), ("flows.csv", flows.as_bytes()), ("metrics.prom", prom.as_bytes())];
        if let Some(t) = &series {
            files.push(("timeseries.csv", t.as_bytes()));
        }
        write_set(&a.out, &files)?;
    }
    match a.format {
        Format::Text => {
            print!("{}", rep.render_text());
            if !a.no_files {
                println!("  results in {}/", a.out.display());
            }
        }
        Format::Json => print!("{json}"),
    }
    finish_traffic(&rep, wall, a.quiet)
}

/// Runs a fabric's own traffic (and faults) with a progress bar; returns the report, the
/// sampled time series (`timeseries.csv`, when sampling is on) and the wall time.
pub(crate) fn run_traffic(
    model: &rocelab_model::Model,
    file: &std::path::Path,
    opts: rocelab_sim::SimOptions,
    quiet: bool,
    stages: Option<crate::common::Stages>,
) -> Result<(RunReport, Option<String>, std::time::Duration), Failure> {
    let end = opts.duration;
    let mut sim = rocelab_sim::build_run(model, opts).map_err(|d| located(file, d))?;
    drop(stages);
    if let (rocelab_sim::Run::Parallel(p), false) = (&sim, quiet) {
        let cut = p.partitioning();
        eprintln!(
            "partitioned: {} partitions by {} ({} links cut, lookahead {:.3} µs), {} threads",
            cut.parts,
            cut.by.name(),
            cut.cut_links,
            cut.lookahead.map_or(0.0, |l| l.as_us_f64()),
            p.threads()
        );
    }
    let mut bar = ProgressLine::new(quiet);
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
    let rep = RunReport::from_snapshot(&snap, model);
    let series = snap.sample_interval.map(|_| report::series_csv(&snap, model));
    Ok((rep, series, wall))
}

/// The wall-time line and the exit status of a run of a fabric's traffic.
pub(crate) fn finish_traffic(rep: &RunReport, wall: std::time::Duration, quiet: bool) -> VerbResult {
    if !quiet {
        eprintln!(
            "wall {:.2} s, {:.2} M events/s, {:.2} M data packets/s",
            wall.as_secs_f64(),
            rep.events as f64 / wall.as_secs_f64().max(1e-9) / 1e6,
            rep.totals.data_packets_sent as f64 / wall.as_secs_f64().max(1e-9) / 1e6
        );
    }
    match incomplete(rep) {
        Some(why) => Err(Failure::failed_check(why)),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Why a run's flows did not all complete, if they did not: the run is then a failure (exit
/// 1), its outputs written first.
pub(crate) fn incomplete(rep: &RunReport) -> Option<String> {
    let (done, all) = (rep.flows_completed, rep.flows.len());
    if done >= all {
        return None;
    }
    let mut why = Vec::new();
    if rep.stopped_no_progress {
        why.push(format!(
            "{} packets stuck and none delivered or dropped for {} s of simulated time (a host that never \
             resumes, or a PFC deadlock)",
            rep.totals.packets_in_flight,
            rocelab_sim::engine::NO_PROGRESS_LIMIT.as_secs_f64()
        ));
    }
    if rep.totals.qps_failed > 0 {
        why.push(format!("{} queue pairs gave up (retries exhausted)", rep.totals.qps_failed));
    }
    if rep.stopped_at_duration {
        why.push(format!(
            "the run stopped at its duration limit, {:.1} µs of simulated time (raise --duration-us or \
             [simulation] duration_us, or remove it to run to completion)",
            rep.simulated_seconds * 1e6
        ));
    }
    if why.is_empty() {
        why.push("the engine ran out of events with data still to send".into());
    }
    Some(format!("error: {} of {all} flows did not complete: {}", all - done, why.join("; ")))
}

/// The collective the flags ask for (`--collective NAME` and its knobs), typed.
fn collective_request(
    a: &Args,
    name: &str,
    model: &rocelab_model::Model,
) -> Result<rocelab_workload::CollectiveRequest, Failure> {
    let bad = |flag: &str, e: String| Failure::bad_input(format!("error: {flag}: {e}"));
    Ok(rocelab_workload::CollectiveRequest {
        collective: name.to_string(),
        min_bytes: parse_size(&a.min_bytes, "--min-bytes")?,
        max_bytes: a.max_bytes.as_deref().map(|s| parse_size(s, "--max-bytes")).transpose()?,
        step_factor: a.step_factor,
        channels: a.channels,
        nodes: match a.gpus {
            Some(g) => Some(gpu_nodes_of(model, g)?),
            None => a.nodes,
        },
        qps_per_connection: a.qps_per_connection,
        split_data_on_qps: a.split_data_on_qps == "1",
        chunk_bytes: parse_size(&a.chunk_bytes, "--chunk-bytes")?,
        root: a.root,
        nics: a.placement == "nics",
        pxn: !a.pxn_disable,
        algo: rocelab_workload::CollectiveRequest::parse_algo(&a.algo).map_err(|e| bad("--algo", e))?,
        proto: rocelab_workload::CollectiveRequest::parse_proto(&a.proto).map_err(|e| bad("--proto", e))?,
        gpus_per_thread: a.gpus_per_thread,
    })
}

/// `--collective`: the sweep nccl-tests would run, on the twin; the table on stdout (or JSON)
/// and, unless `--no-files`, `collective.txt` and `collective.json` in `--out`.
fn run_collective(
    a: &Args,
    req: &rocelab_workload::CollectiveRequest,
    model: &rocelab_model::Model,
    file: &std::path::Path,
    opts: rocelab_sim::SimOptions,
) -> VerbResult {
    // A misspelt collective gets a did-you-mean before the request is resolved.
    if let Err(e) = rocelab_workload::parse_op(&req.collective) {
        const NAMES: [&str; 7] =
            ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "all_to_all", "broadcast", "sendrecv"];
        let guess =
            crate::output::did_you_mean(&req.collective, NAMES).map(|n| format!("\n  = help: did you mean `{n}`?"));
        return Err(Failure::bad_input(format!("error: --collective: {e}{}", guess.unwrap_or_default())));
    }
    // The engine's message limit, the one `[[workload]]` tables are held to at load.
    let max = req.max_bytes.unwrap_or(req.min_bytes);
    if max > rocelab_model::intent::MAX_MESSAGE_BYTES {
        return Err(Failure::bad_input(format!(
            "error: --{}-bytes: {max} B is more than the 1 TB (10^12 B) message the engine takes\n  = help: use a size up to 1 TB, e.g. 1G",
            if req.max_bytes.is_some() { "max" } else { "min" }
        )));
    }
    let (spec, sizes) = req.spec(model).map_err(|d| located_or_flag(file, d, COLLECTIVE_FLAGS))?;
    let mut bar = ProgressLine::new(a.quiet);
    let total = sizes.len();
    // A ring posts a message per step, chunk and channel (millions at 1,024 ranks): reuse the
    // slots of finished QPs so memory follows the QPs alive at once (same results).
    let opts = rocelab_sim::SimOptions { recycle_qps: true, ..opts };
    let results = rocelab_workload::sweep(model, &spec, &sizes, opts, &mut |i, r| {
        bar.update(Some((i + 1) as f64 / total as f64), &format!("{} B: {:.1} µs", r.bytes, r.time_us));
    })
    .map_err(|d| located_or_flag(file, d, COLLECTIVE_FLAGS))?;
    bar.finish();
    let table = rocelab_workload::table::render(&results, &model.config.fabric.name);
    let json = serde_json::to_string_pretty(&results).map_err(|e| Failure::bad_input(format!("error: {e}")))? + "\n";
    let json = envelope("simulate.collective", &json);
    if !a.no_files {
        write_set(&a.out, &[("collective.txt", table.as_bytes()), ("collective.json", json.as_bytes())])?;
    }
    match a.format {
        Format::Text => print!("{table}"),
        Format::Json => print!("{json}"),
    }
    if !a.quiet {
        eprintln!("wall {:.2} s", bar.elapsed().as_secs_f64());
    }
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r.failed_chunks > 0)
        .map(|r| format!("{} B ({} chunks)", r.bytes, r.failed_chunks))
        .collect();
    if !failed.is_empty() {
        return Err(Failure::failed_check(format!(
            "error: the {} did not complete at {}: chunks never arrived (a queue pair gave up after its retries)",
            req.collective,
            failed.join(", ")
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// `-g N` as the GPU nodes that hold N GPUs.
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of is newer than the workspace's rust-version
fn gpu_nodes_of(model: &rocelab_model::Model, gpus: u32) -> Result<u32, Failure> {
    let per = match rocelab_workload::placement::placement(model) {
        Ok(rocelab_workload::placement::Placement::Gpus(g)) => g.gpus,
        _ => {
            return Err(Failure::bad_input(
                "error: -g/--gpus: this fabric has no GPU nodes (its ranks are host NICs)\n  = help: leave -g out",
            ))
        }
    };
    if gpus == 0 || gpus % per != 0 {
        return Err(Failure::bad_input(format!(
            "error: -g/--gpus {gpus}: the fabric's GPU nodes hold {per} GPUs each\n  = help: give a multiple of {per}, or --nodes K"
        )));
    }
    Ok(gpus / per)
}

/// The flags whose values a collective's diagnostics (key path `collective`) are about.
const COLLECTIVE_FLAGS: &[(&str, &str)] =
    &[("collective", "--collective (with --nodes, --channels, --root, --placement)")];

/// `--step PLAN`: one training step of a plan on the twin, beside plan's own estimate; the
/// report on stdout (or JSON) and, unless `--no-files`, `step.txt` and `step.json` in `--out`.
fn run_step(
    a: &Args,
    plan_file: &std::path::Path,
    model: &rocelab_model::Model,
    file: &std::path::Path,
    opts: rocelab_sim::SimOptions,
) -> VerbResult {
    let (scenario, estimate) = crate::cmd::plan::scenario_on_fabric(plan_file, model)?;
    let plan = rocelab_workload::step::StepPlan::from_estimate(&scenario, &estimate)
        .map_err(|e| Failure::bad_input(format!("error: {}: {e}", plan_file.display())))?;
    let bar = ProgressLine::new(a.quiet);
    // The step reports no progress of its own: a spinner with the elapsed time, from 1 s on.
    let spinner = (!a.quiet).then(|| crate::common::Stages::start("simulate --step"));
    if let Some(s) = &spinner {
        s.stage(match opts.engine {
            rocelab_sim::EngineKind::Flow => "the step on the flow engine",
            _ => "the step on the packet engine",
        });
    }
    let opts = rocelab_sim::SimOptions { recycle_qps: true, ..opts };
    let r = rocelab_workload::step::run_step(model, &plan, opts)
        .map_err(|d| located_or_flag(file, d, &[("step", "--step")]))?;
    drop(spinner);
    let phase = estimate.phases.iter().find(|p| p.name == "step");
    let plan_fig = phase.map(|p| PlanStep {
        step_us: p.seconds * 1e6,
        network_wait_us: p.network_wait_seconds * 1e6,
        network_share: p.network_share,
        bubble_us: p.bubble_seconds * 1e6,
    });
    let text = rocelab_workload::step::render(
        &r,
        &scenario.model.name,
        &model.config.fabric.name,
        plan_fig.as_ref().map(|p| (p.step_us, p.network_wait_us, p.network_share)),
    );
    twin_beside_plan(a, "step", &text, &r, &plan_fig)?;
    if !a.quiet {
        eprintln!("wall {:.2} s", bar.elapsed().as_secs_f64());
    }
    if r.failed_messages > 0 {
        return Err(Failure::failed_check(format!(
            "error: the step did not complete: {} messages never arrived (a queue pair gave up after its retries)",
            r.failed_messages
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--scenario`: one stress scenario; its table (or JSON) on stdout and, unless `--no-files`,
/// `scenario.json`, `summary.json` and `timeseries.csv` in `--out`.
fn run_scenario(a: &Args, name: &str, model: &rocelab_model::Model, file: &std::path::Path, seed: u64) -> VerbResult {
    rocelab_scenario::check_all(model).map_err(|d| located(file, d))?;
    let (c, path) = rocelab_scenario::find(model, name).map_err(|mut d| {
        // A name from the command line: a flag error, with the nearest of the names it lists.
        let names: Vec<&str> = d.hint.split_once("one of: ").map(|(_, l)| l.split(", ").collect()).unwrap_or_default();
        if let Some(n) = crate::output::did_you_mean(name, names) {
            d.hint = format!("did you mean `{n}`? {}", d.hint);
        }
        located_or_flag(file, vec![d], &[("scenario", "--scenario")])
    })?;
    let bar = ProgressLine::new(a.quiet);
    // One call with no progress of its own: a spinner with the elapsed time, from 1 s on.
    let spinner = (!a.quiet).then(|| crate::common::Stages::start(&format!("scenario `{name}`")));
    if let Some(s) = &spinner {
        s.stage("running");
    }
    let r = rocelab_scenario::run(model, &c, &path, seed).map_err(|d| located(file, d))?;
    drop(spinner);
    let json = envelope("simulate.scenario", &r.to_json());
    if !a.no_files {
        let summary = envelope("simulate.summary", &r.report.to_json());
        write_set(
            &a.out,
            &[
                ("scenario.json", json.as_bytes()),
                ("summary.json", summary.as_bytes()),
                ("timeseries.csv", r.series_csv.as_bytes()),
            ],
        )?;
    }
    match a.format {
        Format::Text => {
            print!("{}", r.render_text());
            if !a.no_files {
                println!("  results in {}/", a.out.display());
            }
        }
        Format::Json => print!("{json}"),
    }
    if !a.quiet {
        eprintln!("wall {:.2} s", bar.elapsed().as_secs_f64());
    }
    Ok(ExitCode::SUCCESS)
}

/// Plan's figures for the same step, beside the twin's.
#[derive(serde::Serialize)]
struct PlanStep {
    step_us: f64,
    network_wait_us: f64,
    network_share: f64,
    bubble_us: f64,
}

/// The file's `[[workload]]` tables (or the one `--workload` names), each run as its flags
/// would run it, into `--out/<name>/`. A value the flags would refuse is refused here with its
/// line in the file.
fn run_workloads(
    a: &Args,
    model: &rocelab_model::Model,
    file: &std::path::Path,
    opts: rocelab_sim::SimOptions,
) -> VerbResult {
    let all = &model.config.workload;
    let named = |i: usize| all[i].name.clone().unwrap_or_else(|| format!("workload{i}"));
    let picked: Vec<usize> = match a.workload.as_deref() {
        None | Some("all") => (0..all.len()).collect(),
        Some(n) => {
            let i = (0..all.len()).find(|&i| named(i) == *n).ok_or_else(|| {
                let known: Vec<String> = (0..all.len()).map(named).collect();
                Failure::bad_input(format!(
                    "error: --workload `{n}`: {} names no such workload (it has: {})",
                    file.display(),
                    if known.is_empty() { "none".into() } else { known.join(", ") }
                ))
            })?;
            vec![i]
        }
    };
    for i in picked {
        let w = &all[i];
        let name = named(i);
        let d = |key: &str, msg: String, hint: &str| {
            located(file, vec![rocelab_model::Diagnostic::new(format!("workload[{i}].{key}"), msg, hint)])
        };
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            || name.starts_with('.')
        {
            return Err(d(
                "name",
                format!("workload name `{name}`"),
                "letters, digits, '-', '_' and '.' only: it names the output directory",
            ));
        }
        let mut wa = a.clone();
        wa.out = a.out.join(&name);
        if !a.quiet {
            eprintln!("workload {name}:");
        }
        if let Some(rocelab_model::intent::WorkloadRun::Serve(t)) = model.intent.workloads.get(i).map(|x| &x.run) {
            // "plan": this file's own [plan]; else a plan file next to this one.
            let plan = if t.plan == "plan" {
                file.to_path_buf()
            } else {
                file.parent().unwrap_or(std::path::Path::new(".")).join(&t.plan)
            };
            run_serve(&wa, &plan, model, file, opts.clone(), Some(t))?;
            continue;
        }
        match (&w.collective, &w.step) {
            (Some(c), None) => {
                // The table's keys over the flags', typed by the workload crate.
                let req = collective_request(a, c, model)?.with_workload(w, i).map_err(|d| located(file, d))?;
                run_collective(&wa, &req, model, file, opts.clone())?;
            }
            (None, Some(st)) => {
                // "plan": this file's own [plan]; else a plan file next to this one.
                let plan = if st == "plan" {
                    if model.config.plan.is_none() {
                        return Err(d(
                            "step",
                            "step = \"plan\" but the file has no [plan] table".into(),
                            "add a [plan] table (rocelab plan's keys) or give a plan file's path",
                        ));
                    }
                    file.to_path_buf()
                } else {
                    file.parent().unwrap_or(std::path::Path::new(".")).join(st)
                };
                run_step(&wa, &plan, model, file, opts.clone())?;
            }
            _ => {
                return Err(d(
                    "collective",
                    "a workload names a collective or a step, one of them".into(),
                    "collective = \"all_reduce\" (with min_bytes, ...) or step = \"plan\"",
                ))
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--serve PLAN`: requests served by an inference plan on the twin, beside plan's own
/// figures; the report on stdout (or JSON) and, unless `--no-files`, `serve.txt` and
/// `serve.json` in `--out`.
fn run_serve(
    a: &Args,
    plan_file: &std::path::Path,
    model: &rocelab_model::Model,
    file: &std::path::Path,
    opts: rocelab_sim::SimOptions,
    table: Option<&rocelab_model::serving::ServeTable>,
) -> VerbResult {
    use rocelab_workload::serve;
    let (scenario, estimate, plan, reqs) = serve_inputs(plan_file, model, file, opts.seed, table)?;
    let bar = ProgressLine::new(a.quiet);
    let spinner = (!a.quiet).then(|| crate::common::Stages::start("simulate --serve"));
    if let Some(s) = &spinner {
        s.stage("serving on the twin");
    }
    let opts = rocelab_sim::SimOptions { recycle_qps: true, ..opts };
    let r =
        serve::run_serve(model, &plan, &reqs, opts).map_err(|d| located_or_flag(file, d, &[("serve", "--serve")]))?;
    drop(spinner);
    let plan_fig = serve::PlanServe::from_estimate(&scenario, &estimate);
    let text = serve::render(&r, &scenario.model.name, &model.config.fabric.name, Some(&plan_fig));
    twin_beside_plan(a, "serve", &text, &r, &plan_fig)?;
    if !a.quiet {
        eprintln!("wall {:.2} s", bar.elapsed().as_secs_f64());
    }
    if r.completed < r.requests {
        return Err(Failure::failed_check(format!(
            "error: {} of {} requests did not complete ({} messages never arrived)",
            r.requests - r.completed,
            r.requests,
            r.failed_messages
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a serving run needs: the plan resolved on the fabric, plan's estimate, the twin's
/// serving plan (the plan file's `[serve]`, a `[[workload]]` or `[[job]]` table's keys over it)
/// and the requests.
fn serve_inputs(
    plan_file: &std::path::Path,
    model: &rocelab_model::Model,
    file: &std::path::Path,
    seed: u64,
    table: Option<&rocelab_model::serving::ServeTable>,
) -> Result<
    (
        rocelab_plan::Scenario,
        rocelab_plan::estimate::Estimate,
        rocelab_workload::serve::ServePlan,
        Vec<rocelab_workload::serve::Request>,
    ),
    Failure,
> {
    use rocelab_workload::serve;
    let name = plan_file.display().to_string();
    let text = std::fs::read_to_string(plan_file)
        .map_err(|e| Failure::bad_input(format!("error: cannot read {name}: {e}\n  = help: check the --serve path")))?;
    let (scenario, estimate) = crate::cmd::plan::scenario_on_fabric(plan_file, model)?;
    let mut config = serve::parse_config(&name, &text).map_err(Failure::bad_input)?;
    // A [[workload]] table's keys win over the plan file's [serve]; its trace is relative to
    // the fabric file.
    let mut trace_base = plan_file.parent().unwrap_or(std::path::Path::new(".")).to_path_buf();
    if let Some(t) = table {
        if t.trace.is_some() {
            trace_base = file.parent().unwrap_or(std::path::Path::new(".")).to_path_buf();
        }
        config = config.with_table(t);
    }
    let plan = serve::ServePlan::from_scenario(&scenario, &estimate, &config)
        .map_err(|e| Failure::bad_input(format!("error: {name}: {e}")))?;
    let reqs = match &config.trace {
        Some(t) => {
            let path = trace_base.join(t);
            let trace = std::fs::read_to_string(&path).map_err(|e| {
                Failure::bad_input(format!(
                    "error: cannot read the trace {}: {e}\n  = help: serve.trace is relative to {name}",
                    path.display()
                ))
            })?;
            serve::parse_trace(&path.display().to_string(), &trace).map_err(Failure::bad_input)?
        }
        None => {
            let rocelab_plan::scenario::Workload::Inference(w) = &scenario.workload else {
                return Err(Failure::bad_input(format!("error: {name}: not an inference plan")));
            };
            serve::poisson(config.rate_per_s, config.requests, w.prompt_tokens, w.output_tokens, seed)
        }
    };
    Ok((scenario, estimate, plan, reqs))
}

/// `--jobs`: the file's `[[job]]` tenants together, then each alone; the report on stdout
/// (or JSON) and, unless `--no-files`, `jobs.txt` and `jobs.json` in `--out`.
fn run_jobs(
    a: &Args,
    model: &rocelab_model::Model,
    file: &std::path::Path,
    opts: rocelab_sim::SimOptions,
) -> VerbResult {
    use rocelab_model::jobs::JobKind;
    use rocelab_workload::jobs::{JobInput, Tenant};
    let plan_path = |p: &str| {
        if p == "plan" {
            file.to_path_buf()
        } else {
            file.parent().unwrap_or(std::path::Path::new(".")).join(p)
        }
    };
    let mut inputs = Vec::new();
    for job in &model.intent.jobs {
        let tenant = match &job.kind {
            JobKind::Step { plan } => {
                let path = plan_path(plan);
                let name = path.display().to_string();
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    Failure::bad_input(format!(
                        "error: job `{}`: cannot read {name}: {e}\n  = help: plan is relative to {}",
                        job.name,
                        file.display()
                    ))
                })?;
                let (p, _) =
                    rocelab_workload::step::step_plan_on_fabric(&name, &text, model).map_err(Failure::bad_input)?;
                Tenant::Step(p)
            }
            JobKind::Serve(t) => {
                let (_, _, p, reqs) = serve_inputs(&plan_path(&t.plan), model, file, opts.seed, Some(t))?;
                Tenant::Serve(p, reqs)
            }
            JobKind::Burst { .. } => Tenant::Burst,
        };
        inputs.push(JobInput { job: job.clone(), tenant });
    }
    let bar = ProgressLine::new(a.quiet);
    let spinner = (!a.quiet).then(|| crate::common::Stages::start("simulate --jobs"));
    if let Some(s) = &spinner {
        s.stage("the jobs together, then each alone");
    }
    let opts = rocelab_sim::SimOptions { recycle_qps: true, ..opts };
    let r = rocelab_workload::jobs::run_jobs(model, &inputs, opts)
        .map_err(|d| located_or_flag(file, d, &[("job", "--jobs")]))?;
    drop(spinner);
    let text = rocelab_workload::jobs::render(&r, &model.config.fabric.name);
    let json = serde_json::to_string_pretty(&r).map_err(|e| Failure::bad_input(format!("error: {e}")))? + "\n";
    let json = envelope("simulate.jobs", &json);
    if !a.no_files {
        write_set(&a.out, &[("jobs.txt", text.as_bytes()), ("jobs.json", json.as_bytes())])?;
    }
    match a.format {
        Format::Text => print!("{text}"),
        Format::Json => print!("{json}"),
    }
    if !a.quiet {
        eprintln!("wall {:.2} s", bar.elapsed().as_secs_f64());
    }
    if let Some(j) = r.jobs.iter().find(|j| !j.figure.together.is_finite() || !j.figure.alone.is_finite()) {
        return Err(Failure::failed_check(format!(
            "error: job `{}` did not finish ({} messages never arrived)",
            j.name, j.failed_messages
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// A twin's result beside plan's figures (`--step`, `--serve`): `{ "twin", "plan" }` under the
/// schema `simulate.KIND`, printed in `--format` and, unless `--no-files`, written as `KIND.txt`
/// and `KIND.json` into `--out` as one set.
fn twin_beside_plan(
    a: &Args,
    kind: &str,
    text: &str,
    twin: &impl serde::Serialize,
    plan: &impl serde::Serialize,
) -> Result<(), Failure> {
    let json = serde_json::to_string_pretty(&serde_json::json!({ "twin": twin, "plan": plan }))
        .map_err(|e| Failure::bad_input(format!("error: {e}")))?
        + "\n";
    let json = envelope(&format!("simulate.{kind}"), &json);
    if !a.no_files {
        let (txt, js) = (format!("{kind}.txt"), format!("{kind}.json"));
        write_set(&a.out, &[(txt.as_str(), text.as_bytes()), (js.as_str(), json.as_bytes())])?;
    }
    match a.format {
        Format::Text => print!("{text}"),
        Format::Json => print!("{json}"),
    }
    Ok(())
}
