//! `rocelab bench [NAME...]`: the engine's fixed benchmark scenarios, measured as hyperfine
//! measures commands: warmup runs, then timed runs; mean ± σ, min and max per scenario;
//! `--export-json` / `--export-markdown` (rewritten after each scenario, so a crash loses
//! nothing); `--baseline FILE` for the ratio against a saved run. The measurement and the
//! exporters are `rocelab_bench::measure`, which `cargo bench -p rocelab-bench` uses too.
//!
//! Each scenario runs in a fresh child process (so peak memory is per scenario) unless
//! `--in-process`. Build with `--release` for meaningful figures.

use crate::common::{write_atomic, Failure, ProgressLine, VerbResult};
use crate::output::Format;
use rocelab_bench as scenarios;
use rocelab_bench::measure::{self, Measurement, Progress};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Scenarios to run (default: all): incast, permutation-16, permutation-128,
    /// permutation-1024, permutation-1024-htsim, permutation-128-htsim, rail-1024,
    /// permutation-128-adaptive, permutation-128-spray, chain-10k.
    names: Vec<String>,
    /// Runs before the timed ones, not counted (caches, page faults, CPU frequency).
    #[arg(long, short = 'w', default_value_t = 1, value_name = "N")]
    warmup: usize,
    /// Timed runs per scenario; default: at least 3, and until 1 s of engine time (at most 50).
    #[arg(long, short = 'r', value_name = "N")]
    runs: Option<usize>,
    /// Write every scenario's figures (each run's time included) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,
    /// Write the results as a Markdown table to FILE.
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,
    /// A saved `--export-json` file: each scenario's mean time is shown as a ratio to its mean
    /// there (above 1: slower now).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// The results on standard output: a table, or the JSON of --export-json.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Run every scenario in this process (peak memory then accumulates).
    #[arg(long)]
    in_process: bool,
    /// List the scenarios and exit.
    #[arg(long)]
    list: bool,
    /// Instead: the flow engine's error against the packet engine on the fixed suite
    /// (docs/flow-engine.md), as a Markdown table.
    #[arg(long, conflicts_with_all = ["names", "flow_recompute"])]
    flow_error: bool,
    /// Instead: the steady-state fast-forward's error against full packet runs on the same
    /// suite and a Llama 3 70B step (docs/simulate.md), as a Markdown table.
    #[arg(long, conflicts_with_all = ["names", "flow_recompute", "flow_error"])]
    fast_forward_error: bool,
    /// Instead: the flow engine's cost per rate recomputation with N flows at once (several
    /// comma-separated counts), on --fabric.
    #[arg(long, value_delimiter = ',', conflicts_with = "names")]
    flow_recompute: Vec<usize>,
    /// The fabric file for --flow-recompute (default: benches/fabrics/llama3-24k.toml).
    #[arg(long, requires = "flow_recompute")]
    fabric: Option<std::path::PathBuf>,
    /// Events timed after the first fill, for --flow-recompute.
    #[arg(long, default_value_t = 200, requires = "flow_recompute")]
    events: u64,
    /// Instead: run each named scenario (or allreduce-1024) once per partition count N, every
    /// event counted against a cut of the fabric into N partitions: windows of one lookahead,
    /// cross-partition messages, the projected parallel efficiency (a Markdown table).
    #[arg(long, value_delimiter = ',', value_name = "N,...", conflicts_with_all = ["flow_error", "flow_recompute"])]
    partitions: Vec<u32>,
    /// The cut for --partitions: auto (pods on a fat tree, rail groups on a rail-optimized
    /// fabric, else leaf groups), pod, rail, leaf.
    #[arg(long, default_value = "auto", requires = "partitions")]
    partition_by: String,
}

pub fn run(a: Args) -> VerbResult {
    if a.flow_error {
        return against_full(scenarios::flow_error::Candidate::Flow);
    }
    if a.fast_forward_error {
        return against_full(scenarios::flow_error::Candidate::FastForward);
    }
    if !a.flow_recompute.is_empty() {
        return flow_recompute(&a);
    }
    if !a.partitions.is_empty() {
        return partition_profile(&a);
    }
    let all = scenarios::all();
    if a.list {
        match a.format {
            Format::Text => {
                for s in &all {
                    println!("{:<22} {}", s.name, s.about);
                }
            }
            Format::Json => {
                let list: Vec<_> =
                    all.iter().map(|s| serde_json::json!({ "scenario": s.name, "about": s.about })).collect();
                crate::output::print_json("bench.list", &serde_json::json!({ "scenarios": list }));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let names: Vec<&str> = all.iter().map(|s| s.name).collect();
    for n in &a.names {
        if !names.contains(&n.as_str()) {
            let guess = crate::output::did_you_mean(n, names.iter().copied())
                .map(|g| format!("did you mean `{g}`? "))
                .unwrap_or_default();
            return Err(Failure::bad_input(format!(
                "error: unknown scenario `{n}`\n  = help: {guess}use one of: {}",
                names.join(", ")
            )));
        }
    }
    if a.runs == Some(0) {
        return Err(Failure::bad_input("error: --runs must be at least 1"));
    }
    let baseline = match &a.baseline {
        None => Vec::new(),
        Some(p) => {
            let t = std::fs::read_to_string(p)
                .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", p.display())))?;
            measure::parse_export(&t)
                .map_err(|e| Failure::bad_input(format!("error: --baseline {}: {e}", p.display())))?
        }
    };
    let child = a.in_process || a.names.len() == 1;
    if cfg!(debug_assertions) && !(child && a.format == Format::Json) {
        eprintln!("warning: this is a debug build; run `cargo run --release -p rocelab-cli -- bench` for real figures");
    }
    let chosen: Vec<&scenarios::Scenario> =
        all.iter().filter(|s| a.names.is_empty() || a.names.iter().any(|n| n == s.name)).collect();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(8);
    let base_of = |m: &Measurement| baseline.iter().find(|b| b.scenario == m.scenario);
    if a.format == Format::Text {
        println!("{}", measure::table_header(width, !baseline.is_empty()));
    }
    let plan = scenarios::Plan { warmup: a.warmup, runs: a.runs };
    let mut results: Vec<Measurement> = Vec::new();
    for s in chosen {
        let m = if child { measure_here(s, plan, a.quiet)? } else { measure_in_child(s, &a)? };
        if a.format == Format::Text {
            println!("{}", measure::table_row(&m, width, base_of(&m)));
        }
        results.push(m);
        // Rewritten after each scenario: a crash or Ctrl-C keeps what was measured.
        export(&a, &results, &baseline)?;
    }
    if a.format == Format::Json {
        print!("{}", measure::export_json(&results));
    }
    Ok(ExitCode::SUCCESS)
}

fn export(a: &Args, results: &[Measurement], baseline: &[Measurement]) -> Result<(), Failure> {
    if let Some(p) = &a.export_json {
        write_atomic(p, measure::export_json(results).as_bytes())?;
    }
    if let Some(p) = &a.export_markdown {
        write_atomic(p, measure::export_markdown(results, baseline).as_bytes())?;
    }
    Ok(())
}

/// Measures `s` in this process, with a progress line on a terminal.
fn measure_here(s: &scenarios::Scenario, plan: scenarios::Plan, quiet: bool) -> Result<Measurement, Failure> {
    let mut bar = ProgressLine::new(quiet);
    let r = scenarios::measure(s, plan, &|| 0, &mut |p| match p {
        Progress::Warmup { run, of } => bar.update(Some(0.0), &format!("{}: warmup {run}/{of}", s.name)),
        Progress::Timed { run, share, last_seconds } => {
            bar.update(Some(share), &format!("{}: run {run}, last {}", s.name, measure::fmt_seconds(last_seconds)))
        }
    });
    bar.finish();
    r.map(|(m, _)| m).map_err(|e| Failure::bad_input(format!("error: scenario {}: {e}", s.name)))
}

/// Measures `s` in a fresh `rocelab bench NAME --format json` (its progress on our stderr).
fn measure_in_child(s: &scenarios::Scenario, a: &Args) -> Result<Measurement, Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["bench", s.name, "--format", "json", "--warmup", &a.warmup.to_string()]);
    if let Some(r) = a.runs {
        cmd.args(["--runs", &r.to_string()]);
    }
    if a.quiet {
        cmd.arg("--quiet");
    }
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| Failure::bad_input(format!("error: cannot run scenario {}: {e}", s.name)))?;
    if !out.status.success() {
        return Err(Failure::bad_input(format!("error: scenario {} failed", s.name)));
    }
    let mut ms = measure::parse_export(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| Failure::bad_input(format!("error: scenario {}: {e}", s.name)))?;
    ms.pop().ok_or_else(|| Failure::bad_input(format!("error: scenario {} measured nothing", s.name)))
}

fn bad(e: impl std::fmt::Display) -> Failure {
    Failure::bad_input(format!("error: {e}"))
}

/// `--flow-error`, `--fast-forward-error`: every case in full and on the candidate, the table
/// on stdout, progress on stderr.
fn against_full(who: scenarios::flow_error::Candidate) -> VerbResult {
    use scenarios::flow_error::{self as suite, Candidate};
    let cases = if who == Candidate::Flow { suite::cases() } else { suite::fast_forward_cases() };
    let mut results = Vec::new();
    for c in cases {
        results.push(suite::run_case(&c, who, &mut |s| eprintln!("{s}")).map_err(bad)?);
    }
    print!("{}", suite::markdown(&results, who));
    Ok(ExitCode::SUCCESS)
}

/// `--flow-recompute N,...`: random pairs (one big component) and same-leaf pairs (many).
fn flow_recompute(a: &Args) -> VerbResult {
    let path = a.fabric.clone().unwrap_or_else(|| "benches/fabrics/llama3-24k.toml".into());
    let t0 = std::time::Instant::now();
    let m = crate::common::load_fabric(&path)?;
    eprintln!(
        "{}: {} hosts, {} ports, loaded in {:.2} s",
        path.display(),
        m.hosts().count(),
        m.ports.len(),
        t0.elapsed().as_secs_f64()
    );
    for &n in &a.flow_recompute {
        for pairs in [scenarios::flow_speed::Pairs::SameLeaf, scenarios::flow_speed::Pairs::Random] {
            let r = scenarios::flow_speed::recompute_cost(&m, n, pairs, a.events).map_err(bad)?;
            println!("{}", r.line());
        }
    }
    if let Some(b) = scenarios::peak_rss_bytes() {
        println!("peak RSS {} MB", b / 1_000_000);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--partitions`: the cost of cutting each named scenario, as a Markdown table per scenario.
fn partition_profile(a: &Args) -> VerbResult {
    use rocelab_bench::partition_profile as pp;
    let by = rocelab_sim::partition::PartitionBy::parse(&a.partition_by).ok_or_else(|| {
        Failure::bad_input(format!(
            "error: unknown --partition-by `{}`\n  = help: use one of: auto, pod, rail, leaf",
            a.partition_by
        ))
    })?;
    if a.names.is_empty() {
        return Err(Failure::bad_input(format!(
            "error: --partitions needs a scenario\n  = help: e.g. `rocelab bench --partitions 2,16 rail-1024 {}`",
            pp::ALL_REDUCE_1024
        )));
    }
    for name in &a.names {
        let reports =
            pp::profile_named(name, by, &a.partitions).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
        println!("{}", pp::markdown(name, &reports));
    }
    Ok(ExitCode::SUCCESS)
}
