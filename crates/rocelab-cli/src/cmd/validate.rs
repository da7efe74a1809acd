//! `rocelab validate FABRIC`: the pre-production checklist on the twin (`rocelab_validate`).
//! Exit status: 0 every judged check passed, 1 a check failed, 2 bad input.

use crate::common::{load_fabric, located, write_atomic, Failure, VerbResult, EXIT_FAILED_CHECK};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cmd::simulate::Format;

#[derive(clap::Args)]
pub struct Args {
    /// The fabric file.
    #[arg(required_unless_present = "list")]
    fabric: Option<PathBuf>,
    /// A policy file: `[limits]` by check name (`"incast.completion" = 1.5`), `skip = [...]`.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Only these checks or scenarios (comma-separated names: `incast`, `lint`,
    /// `collective.busbw`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    only: Vec<String>,
    /// Scenario runs at once (default: the machine's cores).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Seed of every run (overrides [simulation] seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the HTML report here (one self-contained file).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// The report on standard output.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// No progress lines.
    #[arg(long, short)]
    quiet: bool,
    /// Every check with its default limit and where it comes from.
    #[arg(long)]
    list: bool,
    /// The engine: `packet` runs every check; `flow` (fabric scale in seconds) answers only
    /// the collective's busbw and the training steps, and refuses the queue-based checks.
    #[arg(long, value_enum, default_value = "packet")]
    engine: crate::cmd::simulate::Engine,
    /// Do not re-run a failing scenario with the fix proposed for its cause (by default each
    /// fix is tried on the twin and its figure printed before → after).
    #[arg(long)]
    no_verify_fixes: bool,
}

pub fn run(a: Args) -> VerbResult {
    if a.list {
        if let Format::Json = a.format {
            let checks: Vec<_> = rocelab_validate::CHECKS
                .iter()
                .map(|c| serde_json::json!({ "check": c.name, "scenario": c.kind.name(), "limit": c.limit, "why": c.why }))
                .collect();
            crate::output::print_json("validate.checks", &serde_json::json!({ "checks": checks }));
            return Ok(ExitCode::SUCCESS);
        }
        print!("{}", rocelab_validate::list());
        return Ok(ExitCode::SUCCESS);
    }
    let path = a.fabric.clone().unwrap_or_default();
    let model = load_fabric(&path)?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", path.display())))?;
    let policy = load_policy(a.policy.as_deref())?;
    // A check (`incast.completion`), a kind (`incast`), or a scenario of the file by its name
    // (`incast-15`, `incast-15.completion`), as docs/validate.md says.
    let scenario_names: Vec<&str> = model.config.scenario.iter().map(|s| s.display_name()).collect();
    let known = |n: &str| {
        n == "lint"
            || n == "workload"
            || n.starts_with("workload.")
            || rocelab_validate::CHECKS.iter().any(|c| c.name == n || c.kind.name() == n)
            || scenario_names
                .iter()
                .any(|s| n == *s || n.strip_prefix(*s).and_then(|r| r.strip_prefix('.')).is_some_and(|c| !c.is_empty()))
            || n.split('.').next() == Some(rocelab_validate::CNP_PATH_RUN)
    };
    if let Some(bad) = a.only.iter().find(|n| !known(n)) {
        let names = ["lint", "workload"]
            .into_iter()
            .chain(rocelab_validate::CHECKS.iter().flat_map(|c| [c.name, c.kind.name()]))
            .chain(scenario_names.iter().copied())
            .chain([rocelab_validate::CNP_PATH_RUN]);
        let hint = match crate::output::did_you_mean(bad, names) {
            Some(n) => format!("did you mean `{n}`? `rocelab validate --list` names every check"),
            None => "`rocelab validate --list` names every check".to_string(),
        };
        return Err(Failure::bad_input(format!(
            "error: --only `{bad}`: no check or scenario of that name\n  = help: {hint}"
        )));
    }
    let jobs = jobs_or_cores(a.jobs);
    let seed = a.seed.unwrap_or_else(|| rocelab_sim::options_from_model(&model).seed);
    let opts = rocelab_validate::Options {
        policy,
        only: a.only.clone(),
        jobs,
        seed,
        engine: a.engine.kind(),
        verify_fixes: !a.no_verify_fixes,
    };
    // On a terminal, a spinner per running scenario (the runs are parallel), each left as a
    // line with its time when done; in a pipe, a file or CI, nothing (the report says it all).
    let terminal = crate::common::progress_allowed(a.quiet);
    let multi = indicatif::MultiProgress::new();
    // One line for the whole run, so the phases without a scenario (lint, the workloads'
    // steps) are not silent either.
    let overall =
        if terminal { multi.add(indicatif::ProgressBar::new_spinner()) } else { indicatif::ProgressBar::hidden() };
    if terminal {
        overall.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        overall.set_prefix(format!("validate {}", path.display()));
        overall.set_message("lint, then the scenarios");
        overall.enable_steady_tick(std::time::Duration::from_millis(120));
    }
    let bars: std::sync::Mutex<std::collections::BTreeMap<String, indicatif::ProgressBar>> = Default::default();
    let style = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
    let progress = |p: rocelab_validate::Progress| match p {
        rocelab_validate::Progress::Started(scenario) if terminal => {
            let b = multi.add(indicatif::ProgressBar::new_spinner().with_style(style.clone()));
            b.set_message(format!("{scenario}: running"));
            b.enable_steady_tick(std::time::Duration::from_millis(120));
            bars.lock().unwrap_or_else(|e| e.into_inner()).insert(scenario.to_string(), b);
        }
        rocelab_validate::Progress::Finished { scenario, done, total } if terminal => {
            if let Some(b) = bars.lock().unwrap_or_else(|e| e.into_inner()).remove(scenario) {
                b.finish_with_message(format!("{scenario}: done [{done}/{total}]"));
            }
            overall.set_message(if done == total {
                "the workloads' steps, then the verdicts".to_string()
            } else {
                format!("{done} of {total} scenarios done")
            });
        }
        _ => {}
    };
    let file = path.display().to_string();
    let report = rocelab_validate::validate(&model, &file, &text, &opts, &progress).map_err(|d| located(&path, d))?;
    overall.finish_and_clear();
    if let Some(p) = &a.html {
        write_atomic(p, rocelab_validate::html::render(&report).as_bytes())?;
    }
    if let Some(p) = &a.junit {
        write_atomic(p, rocelab_validate::junit(&report).as_bytes())?;
    }
    match a.format {
        Format::Text => print!("{}", rocelab_validate::render_text(&report)),
        Format::Json => print!("{}", crate::output::envelope("validate.report", &rocelab_validate::to_json(&report))),
    }
    Ok(if report.failed() > 0 { ExitCode::from(EXIT_FAILED_CHECK) } else { ExitCode::SUCCESS })
}

/// The policy of `--policy FILE`, or the defaults (shared with `rocelab compare`).
pub(crate) fn load_policy(path: Option<&std::path::Path>) -> Result<rocelab_validate::Policy, Failure> {
    let Some(p) = path else { return Ok(rocelab_validate::Policy::default()) };
    let t = std::fs::read_to_string(p)
        .map_err(|e| Failure::bad_input(format!("error: cannot read {}: {e}", p.display())))?;
    rocelab_validate::Policy::parse(&p.display().to_string(), &t).map_err(Failure::bad_input)
}

/// `--jobs`, or the machine's cores.
pub(crate) fn jobs_or_cores(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1)
}
