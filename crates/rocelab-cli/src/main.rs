//! `rocelab`: a software lab and doctor for RoCEv2 fabrics.
//!
//! `main` reads as a pipeline: parse the command line, run one verb, map its outcome to an exit
//! status (0 success, 1 a check failed, 2 bad input). Each verb lives in `cmd/<verb>.rs` and
//! owns its flags; the work itself is done in the library crates.

mod cmd;
mod common;
mod output;

use clap::{CommandFactory, Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

/// Huge pages for the engine's big arrays: fewer TLB misses at fabric scale (see
/// `rocelab_sim::alloc`).
#[global_allocator]
static GLOBAL: rocelab_sim::alloc::HugePages = rocelab_sim::alloc::HugePages;

#[derive(Parser)]
#[command(
    name = "rocelab",
    version,
    about = "A lab and a doctor for RoCEv2 fabrics in AI clusters",
    after_long_help = "Every command: --format text|json (--json is short for --format json; JSON output starts \
with `schema` and `version`); -o/--out DIR where a command writes several files (swapped in whole); \
-q/--quiet for no progress (progress is drawn on a terminal only, never under CI).\n\n\
Exit status, the same on every command: 0 done and every check passed; 1 a check failed, or a run's flows or \
collectives did not complete (the reason on stderr, the outputs written); 2 bad input (a file, a flag value, \
an unknown name), with file:line:column or the flag and a hint."
)]
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
    /// The stress scenarios `simulate --scenario` runs: every kind, its parameters and defaults.
    Scenarios(cmd::scenarios::Args),
    /// The pre-production checklist: lint, then every stress scenario, judged against a policy
    /// (text, JSON, JUnit, HTML).
    Validate(cmd::validate::Args),
    /// The checklist on two configurations side by side: what a change does before it is made.
    Compare(cmd::compare::Args),
    /// The checklist over a grid of fabric-file values, locally or as a Slurm job array.
    Sweep(cmd::sweep::Args),
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
    /// Print a shell completion script (e.g. `rocelab completions bash > rocelab.bash`).
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page rocelab(1), in roff; `--out-dir` writes one page per subcommand too.
    Man {
        /// Write rocelab.1, rocelab-init.1, rocelab-import-ns3.1, ... into this directory.
        #[arg(long)]
        out_dir: Option<std::path::PathBuf>,
    },
}

fn main() -> ExitCode {
    // `--json` on any verb is `--format json` (output::expand_json_alias).
    let cli = Cli::parse_from(output::expand_json_alias(std::env::args_os()));
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
        Command::Scenarios(a) => cmd::scenarios::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Collect(a) => cmd::collect::run(a),
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Exporter(a) => cmd::exporter::run(a),
        Command::Completions { shell } => completions(shell),
        Command::Man { out_dir } => man_pages(out_dir.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            // Every file's errors pass here: "unknown field `x`, expected one of ..." gains
            // its "did you mean".
            eprintln!("{}", output::with_suggestions(&f.message));
            ExitCode::from(f.status)
        }
    }
}

/// Both are generated from the same clap definition as the parser, so they cannot drift from it.
fn completions(shell: clap_complete::Shell) -> common::VerbResult {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rocelab", &mut out);
    print_bytes(&out)
}

/// rocelab(1) on standard output; with a directory, every page (one per subcommand, named as
/// `man` looks them up: rocelab-import-ns3.1), each written atomically.
fn man_pages(out_dir: Option<&std::path::Path>) -> common::VerbResult {
    let render = |cmd: clap::Command| -> Result<Vec<u8>, common::Failure> {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd)
            .source(concat!("rocelab ", env!("CARGO_PKG_VERSION")))
            .render(&mut out)
            .map_err(|e| common::Failure::bad_input(format!("error: cannot render the manual page: {e}")))?;
        Ok(out)
    };
    let mut top = Cli::command().disable_help_subcommand(true);
    top.build();
    let Some(dir) = out_dir else {
        return print_bytes(&render(top)?);
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| common::Failure::bad_input(format!("error: cannot create {}: {e}", dir.display())))?;
    // Depth first, as clap_mangen names them: a subcommand's page is `<parent>-<name>.1`.
    let mut stack = vec![top];
    let mut written = 0;
    while let Some(cmd) = stack.pop() {
        stack.extend(cmd.get_subcommands().filter(|c| !c.is_hide_set()).cloned());
        let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name()).to_string();
        // Each verb's page carries its documentation (an installed page has no docs/ beside it).
        let cmd = match verb_docs(&name) {
            Some(md) => cmd.after_long_help(output::man_text(md)),
            None => cmd,
        };
        common::write_atomic(&dir.join(format!("{name}.1")), &render(cmd)?)?;
        written += 1;
    }
    eprintln!("wrote {written} manual pages to {}; read one with `man {}/rocelab.1`", dir.display(), dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The documentation page of a verb's manual page (by its man name, `rocelab-import-ns3`).
fn verb_docs(man_name: &str) -> Option<&'static str> {
    let verb = man_name.strip_prefix("rocelab-")?;
    Some(match verb.split('-').next()? {
        "init" => include_str!("../../../docs/first-fabric.md"),
        "topo" => include_str!("../../../docs/topo.md"),
        "lint" => include_str!("../../../docs/lint.md"),
        "simulate" | "bench" => include_str!("../../../docs/simulate.md"),
        "scenarios" => include_str!("../../../docs/scenarios.md"),
        "validate" | "compare" => include_str!("../../../docs/validate.md"),
        "sweep" => include_str!("../../../docs/sweep.md"),
        "import" => include_str!("../../../docs/import.md"),
        "plan" => include_str!("../../../docs/plan.md"),
        "collect" => include_str!("../../../docs/collect.md"),
        "doctor" => include_str!("../../../docs/doctor.md"),
        "exporter" => include_str!("../../../docs/exporter.md"),
        _ => return None,
    })
}

fn print_bytes(b: &[u8]) -> common::VerbResult {
    let mut so = std::io::stdout().lock();
    so.write_all(b)
        .and_then(|_| so.flush())
        .map_err(|e| common::Failure::bad_input(format!("error: cannot write to standard output: {e}")))?;
    Ok(ExitCode::SUCCESS)
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
