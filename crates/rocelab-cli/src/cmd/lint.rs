//! `rocelab lint FILE...`: static checks for known RoCE mistakes, PFC headroom and lossless
//! deadlock risk. The rules live in `rocelab-lint`; this verb reads the files, renders the
//! reports (human, JSON, SARIF) and maps them to an exit status: 1 if any error (or any warning
//! with `--deny warnings`), 2 if a file could not be read or validated, else 0.

use crate::common::{write_atomic, Failure, VerbResult, EXIT_FAILED_CHECK};
use rocelab_lint::{lint_file_observed, output, registry, FileReport, Options};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    /// For people (`human` is the same).
    #[value(alias = "human")]
    Text,
    Json,
    Sarif,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Deny {
    /// Warnings fail the run as errors do.
    Warnings,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Colour {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args)]
pub struct Args {
    /// Fabric files to lint.
    #[arg(required_unless_present_any = ["list_rules", "explain"])]
    files: Vec<PathBuf>,
    /// Output format; `sarif` is SARIF 2.1.0 for code-scanning UIs.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// `--deny warnings`: exit 1 on warnings too.
    #[arg(long, value_enum)]
    deny: Option<Deny>,
    /// Disable a rule for this run, with the reason: `--disable TOP001="2:1 by design"`.
    /// Repeatable. (Permanent: `[[lint.disable]]` in the fabric file.)
    #[arg(long, value_name = "CODE=REASON")]
    disable: Vec<String>,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Colour the human format: on a terminal (auto), always, or never.
    #[arg(long, value_enum, default_value = "auto")]
    color: Colour,
    /// List every rule: code, severity, title.
    #[arg(long)]
    list_rules: bool,
    /// Print the documentation of one rule.
    #[arg(long, value_name = "CODE")]
    explain: Option<String>,
}

fn parse_disable(spec: &str) -> Result<(String, String), Failure> {
    let (code, reason) = spec.split_once('=').unwrap_or((spec, ""));
    let code = code.trim();
    let Some(r) = registry::rule(code) else {
        return Err(Failure::bad_input(format!(
            "error: `--disable {spec}`: `{code}` is not a lint code\n  = help: `rocelab lint --list-rules` lists them"
        )));
    };
    let reason = reason.trim().trim_matches('"').trim();
    if reason.is_empty() {
        return Err(Failure::bad_input(format!(
            "error: `--disable {spec}` gives no reason\n  = help: say why, e.g. --disable {}=\"lab fabric, oversubscribed on purpose\"",
            r.code
        )));
    }
    Ok((r.code.to_string(), reason.to_string()))
}

pub fn run(a: Args) -> VerbResult {
    if a.list_rules {
        if matches!(a.format, Format::Json) {
            let rules: Vec<_> = registry::RULES
                .iter()
                .map(|r| serde_json::json!({ "code": r.code, "severity": r.severity.name(), "title": r.title }))
                .collect();
            crate::output::print_json("lint.rules", &serde_json::json!({ "rules": rules }));
            return Ok(ExitCode::SUCCESS);
        }
        let mut s = String::new();
        for r in registry::RULES {
            s.push_str(&format!("{:<8} {:<8} {}\n", r.code, r.severity.name(), r.title));
        }
        print!("{s}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(code) = &a.explain {
        let r = registry::rule(code).ok_or_else(|| {
            Failure::bad_input(format!(
                "error: `{code}` is not a lint code\n  = help: `rocelab lint --list-rules` lists them"
            ))
        })?;
        print!("{}", registry::page(r));
        return Ok(ExitCode::SUCCESS);
    }
    let mut opts = Options::default();
    for d in &a.disable {
        opts.disable.push(parse_disable(d)?);
    }
    let mut reports: Vec<FileReport> = Vec::new();
    let mut bad: Vec<String> = Vec::new();
    for f in &a.files {
        let stages = crate::common::Stages::start(&format!("lint {}", f.display()));
        match lint_file_observed(f, &opts, &|s| stages.stage(s)) {
            Ok(r) => reports.push(r),
            Err(e) => bad.push(e.to_string()),
        }
    }
    let colour = match a.color {
        Colour::Always => true,
        Colour::Never => false,
        Colour::Auto => a.output.is_none() && std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal(),
    };
    let text = match a.format {
        Format::Text => output::human(&reports, colour),
        Format::Json => crate::output::envelope("lint.report", &output::json(&reports)),
        Format::Sarif => output::sarif(&reports),
    };
    // A human report of nothing (every file failed to load) would only be noise before the errors.
    let nothing = reports.is_empty() && matches!(a.format, Format::Text);
    match &a.output {
        Some(path) => write_atomic(path, text.as_bytes())?,
        None if nothing => {}
        None => print!("{text}"),
    }
    if !bad.is_empty() {
        return Err(Failure::bad_input(bad.join("\n")));
    }
    let s = output::summarize(&reports);
    let failed = s.errors > 0 || (a.deny == Some(Deny::Warnings) && s.warnings > 0);
    Ok(if failed { ExitCode::from(EXIT_FAILED_CHECK) } else { ExitCode::SUCCESS })
}
