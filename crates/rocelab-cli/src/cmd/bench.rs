//! `rocelab bench [NAME...]`: the engine's fixed benchmark scenarios, one line each.
//!
//! Each scenario runs in a fresh child process (so peak memory is per scenario) unless
//! `--in-process`. Build with `--release` for meaningful figures.

use crate::common::{Failure, VerbResult};
use rocelab_bench as scenarios;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Scenarios to run (default: all): incast, permutation-16, permutation-128,
    /// permutation-1024, permutation-1024-htsim, rail-1024, chain-10k.
    names: Vec<String>,
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
}

pub fn run(a: Args) -> VerbResult {
    if a.flow_error {
        return flow_error();
    }
    if !a.flow_recompute.is_empty() {
        return flow_recompute(&a);
    }
    let all = scenarios::all();
    if a.list {
        for s in &all {
            println!("{:<17} {}", s.name, s.about);
        }
        return Ok(ExitCode::SUCCESS);
    }
    for n in &a.names {
        if !all.iter().any(|s| s.name == n) {
            let names: Vec<&str> = all.iter().map(|s| s.name).collect();
            return Err(Failure::bad_input(format!(
                "error: unknown scenario `{n}`\n  = help: use one of: {}",
                names.join(", ")
            )));
        }
    }
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; run `cargo run --release -p rocelab-cli -- bench` for real figures");
    }
    let chosen: Vec<&scenarios::Scenario> =
        all.iter().filter(|s| a.names.is_empty() || a.names.iter().any(|n| n == s.name)).collect();
    for s in chosen {
        if a.in_process || chosen_single(&a) {
            let r = scenarios::run(s).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
            println!("{}", r.line());
        } else {
            let exe = std::env::current_exe().map_err(|e| Failure::bad_input(format!("error: {e}")))?;
            let out = std::process::Command::new(exe)
                .args(["bench", s.name])
                .output()
                .map_err(|e| Failure::bad_input(format!("error: cannot run scenario {}: {e}", s.name)))?;
            print!("{}", String::from_utf8_lossy(&out.stdout));
            if !out.status.success() {
                eprint!("{}", String::from_utf8_lossy(&out.stderr));
                return Err(Failure::bad_input(format!("error: scenario {} failed", s.name)));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn chosen_single(a: &Args) -> bool {
    a.names.len() == 1
}

fn bad(e: impl std::fmt::Display) -> Failure {
    Failure::bad_input(format!("error: {e}"))
}

/// `--flow-error`: every case on both engines, the table on stdout, progress on stderr.
fn flow_error() -> VerbResult {
    let mut results = Vec::new();
    for c in scenarios::flow_error::cases() {
        results.push(scenarios::flow_error::run_case(&c, &mut |s| eprintln!("{s}")).map_err(bad)?);
    }
    print!("{}", scenarios::flow_error::markdown(&results));
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
