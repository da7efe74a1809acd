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
}

pub fn run(a: Args) -> VerbResult {
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
