//! Honest skips for the tests that run an outside tool (Chromium, promtool, Slurm): when the
//! tool is absent, the test says `SKIP <test>: <why>` on its standard output — nextest shows
//! them after the summary of every run (`.config/nextest.toml`), so a green run says what it
//! did not check — and appends that line to `$ROCELAB_SKIP_LOG` when set; `.ci/run` sets it and
//! fails if anything landed there. Under CI (`CI` set) a missing tool fails the test outright.

use std::io::Write;
use std::path::PathBuf;

/// The first of `names` on `PATH`.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| names.iter().map(move |n| d.join(n))).find(|p| p.is_file())
}

/// Reports `test` skipped because `why` (and how to get the tool); fails it under CI.
pub fn skipped(test: &str, why: &str) {
    let line = format!("SKIP {test}: {why}");
    let in_ci = std::env::var("CI").map(|v| !v.is_empty()).unwrap_or(false);
    assert!(!in_ci, "{line} (CI must run it: .ci/run installs the tools)");
    println!("{line}");
    if let Some(log) = std::env::var_os("ROCELAB_SKIP_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// `on_path`, or `None` after reporting `test` skipped for want of the tool.
#[allow(dead_code)] // each test file uses what it needs
pub fn tool_or_skip(test: &str, names: &[&str], package: &str) -> Option<PathBuf> {
    let found = on_path(names);
    if found.is_none() {
        skipped(test, &format!("{} is not installed (Debian package `{package}`)", names[0]));
    }
    found
}
