//! `rocelab compare A.toml B.toml`: the checklist of `rocelab validate` on two configurations,
//! side by side — what an ECN threshold or DCQCN change does before it is made.
//! Exit status: 0 no check regressed, 1 a check that passes on A fails on B, 2 bad input.

use crate::common::{load_fabric, located, write_atomic, Failure, VerbResult, EXIT_FAILED_CHECK};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::simulate::Format;
use crate::cmd::validate::{jobs_or_cores, load_policy};

#[derive(clap::Args)]
pub struct Args {
    /// The configuration as it is.
    a: PathBuf,
    /// The configuration as proposed.
    b: PathBuf,
    /// Only these checks or scenarios (as `validate --only`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    only: Vec<String>,
    /// A policy file for both sides (as `validate --policy`).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Scenario runs at once.
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Seed of every run on both sides (default: A's [simulation] seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the side-by-side HTML report (charts overlaid) here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub fn run(a: Args) -> VerbResult {
    let policy = load_policy(a.policy.as_deref())?;
    let jobs = jobs_or_cores(a.jobs);
    let mut seed = a.seed;
    let mut reports = vec![];
    for path in [&a.a, &a.b] {
        // A spinner with the side and its elapsed time, on a terminal from the first second.
        let stages = crate::common::Stages::start(&format!("compare: the checklist on {}", path.display()));
        stages.stage("running");
        let model = load_fabric(path)?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", path.display())))?;
        // Both sides run with the same seed: what differs is the configuration.
        let s = *seed.get_or_insert_with(|| rocelab_sim::options_from_model(&model).seed);
        let opts = rocelab_validate::Options {
            policy: policy.clone(),
            only: a.only.clone(),
            jobs,
            seed: s,
            ..Default::default()
        };
        let r = rocelab_validate::validate(&model, &path.display().to_string(), &text, &opts, &|_| {})
            .map_err(|d| located(path, d))?;
        reports.push(r);
    }
    let b = reports.pop().expect("two reports");
    let c = rocelab_validate::compare(reports.pop().expect("two reports"), b);
    if let Some(p) = &a.html {
        write_atomic(p, rocelab_validate::html::render_compare(&c).as_bytes())?;
    }
    match a.format {
        Format::Text => print!("{}", rocelab_validate::render_compare(&c)),
        Format::Json => {
            print!(
                "{}",
                crate::output::envelope(
                    "compare.report",
                    &(serde_json::to_string_pretty(&c).unwrap_or_default() + "\n")
                )
            )
        }
    }
    Ok(if c.regressions().is_empty() { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED_CHECK) })
}
