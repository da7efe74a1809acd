//! `rocelab`: a software lab and doctor for RoCEv2 fabrics.
//!
//! `main` reads as a pipeline: parse the command line, run one verb, map its outcome to an exit
//! status (0 success, 1 a check failed, 2 bad input). Each verb lives in `cmd/<verb>.rs` and
//! owns its flags; the work itself is done in the library crates.

mod cmd;
mod common;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "rocelab", version, about = "A lab and a doctor for RoCEv2 fabrics in AI clusters")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: a large variant (plan's flags) costs nothing worth boxing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Write a commented starter fabric file.
    Init(cmd::init::Args),
    /// Summarize a fabric: tiers, links, oversubscription, bisection, rails, ECMP width.
    Topo(cmd::topo::Args),
    /// Static checks for known RoCE mistakes, PFC headroom and deadlock risk.
    Lint(cmd::lint::Args),
    /// Run the packet-level engine on a fabric and its traffic.
    Simulate(cmd::simulate::Args),
    /// Import an ns-3 (HPCC) or htsim scenario.
    Import(cmd::import::Args),
    /// Fixed engine benchmarks (run in release mode).
    Bench(cmd::bench::Args),
    /// Which network for which parallelism plan, computed.
    Plan(cmd::plan::Args),
    /// Snapshot RDMA NIC counters and QoS state on this host.
    Collect(cmd::collect::Args),
    /// Diagnose snapshots: drift from the intended config, rates, findings.
    Doctor(cmd::doctor::Args),
    /// Serve live counters as Prometheus metrics.
    Exporter(cmd::exporter::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `rocelab simulate ... | head` must end quietly when the reader goes away, as Unix tools
    // do, not panic in `println!`. The exporter keeps Rust's default (SIGPIPE ignored): a
    // scraper that hangs up mid-response is an I/O error to handle, not a reason to die.
    if !matches!(cli.command, Command::Exporter(_)) {
        default_sigpipe();
    }
    let result = match cli.command {
        Command::Init(a) => cmd::init::run(a),
        Command::Topo(a) => cmd::topo::run(a),
        Command::Lint(a) => cmd::lint::run(a),
        Command::Simulate(a) => cmd::simulate::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Collect(a) => cmd::collect::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Exporter(a) => cmd::exporter::run(a),
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            eprintln!("{f}");
            ExitCode::from(f.status)
        }
    }
}

/// Restores the default action of SIGPIPE (terminate) that the Rust runtime sets to ignore.
#[cfg(unix)]
fn default_sigpipe() {
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13; // Linux and the BSDs
    const SIG_DFL: usize = 0;
    // SAFETY: signal(2) with SIG_DFL installs no handler code; called once, before any thread.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

#[cfg(not(unix))]
fn default_sigpipe() {}
