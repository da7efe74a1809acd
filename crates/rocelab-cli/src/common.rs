//! What every verb shares: the failure type with its exit status, loading a fabric file with
//! located diagnostics, and atomic output files.

use rocelab_model::{load_file, LoadError, Model};
use std::fmt;
use std::path::Path;

/// Exit statuses: 1 a check failed, 2 bad input (file, flag, counter dump).
pub const EXIT_FAILED_CHECK: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

/// A verb that could not do its job: the message is printed as is, then rocelab exits `status`.
#[derive(Debug)]
pub struct Failure {
    pub status: u8,
    pub message: String,
}

impl Failure {
    pub fn bad_input(message: impl Into<String>) -> Self {
        Failure { status: EXIT_BAD_INPUT, message: message.into() }
    }

    /// The run was done but its result is a failure: a check failed, or flows or collectives
    /// did not complete. The message says why; outputs were written before it.
    pub fn failed_check(message: impl Into<String>) -> Self {
        Failure { status: EXIT_FAILED_CHECK, message: message.into() }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<LoadError> for Failure {
    fn from(e: LoadError) -> Self {
        Failure::bad_input(e.to_string())
    }
}

pub type VerbResult = Result<std::process::ExitCode, Failure>;

/// Loads and validates a fabric file; errors carry file:line:column and a hint.
pub fn load_fabric(path: &Path) -> Result<Model, Failure> {
    Ok(load_file(path)?)
}

/// `load_fabric` with each loading stage shown on `stages`.
pub fn load_fabric_shown(path: &Path, stages: &Stages) -> Result<Model, Failure> {
    Ok(rocelab_model::load_file_observed(path, &|s| stages.stage(s))?)
}

/// Whether progress may be drawn: not under `-q`, only when standard error is a terminal, and
/// never under CI (`CI` set, as GitHub Actions, GitLab and most runners set it), where a
/// terminal may be emulated and the log would fill with redraws.
pub fn progress_allowed(quiet: bool) -> bool {
    !quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("CI").is_none()
}

/// A spinner on standard error naming the stage of a long job and its elapsed time
/// (`indicatif`). It appears only on a terminal and only once the job has run for a second, so
/// quick runs, pipes and files see nothing; standard output is never touched.
pub struct Stages {
    bar: indicatif::ProgressBar,
}

impl Stages {
    pub fn start(what: &str) -> Stages {
        Stages::start_unless(false, what)
    }

    /// `start`, drawing nothing at all under `-q`.
    pub fn start_unless(quiet: bool, what: &str) -> Stages {
        use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        let later = bar.clone();
        let allowed = progress_allowed(quiet);
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            if allowed && !later.is_finished() {
                // `stderr()` draws nothing when standard error is not a terminal.
                later.set_draw_target(ProgressDrawTarget::stderr());
                later.enable_steady_tick(std::time::Duration::from_millis(100));
            }
        });
        Stages { bar }
    }

    pub fn stage(&self, name: &'static str) {
        self.bar.set_message(name);
    }
}

impl Drop for Stages {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// Writes `bytes` to `path` through a temporary file, fsync and a rename
/// (`rocelab_model::atomic::write_atomic`), so an interrupted run never leaves a half-written
/// file that looks whole. A run's set of files goes through `output::write_set` instead.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    rocelab_model::atomic::write_atomic(path, bytes)
        .map_err(|e| Failure::bad_input(format!("error: cannot write {}: {e}", path.display())))
}

/// Turns diagnostics from a verb (key paths into the fabric file) into a located failure.
pub fn located(path: &Path, diags: Vec<rocelab_model::Diagnostic>) -> Failure {
    located_or_flag(path, diags, &[])
}

/// `located`, except that a diagnostic about a value the command line gave (its key path
/// starts with one of `flags`' roots, e.g. `collective` for `--nodes 0`) is reported as a flag
/// error naming the flags, not at `file:1:1` of a file that never said it.
pub fn located_or_flag(path: &Path, diags: Vec<rocelab_model::Diagnostic>, flags: &[(&str, &str)]) -> Failure {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let map = rocelab_model::SourceMap::new(&file, &text);
    let msgs: Vec<String> = diags
        .into_iter()
        .map(|mut d| {
            let root = d.path.split(['.', '[']).next().unwrap_or("");
            if let Some((_, flag)) = flags.iter().find(|(r, _)| *r == root) {
                let mut s = format!("error: {flag}: {}", d.message);
                if !d.hint.is_empty() {
                    s.push_str(&format!("\n  = help: {}", d.hint));
                }
                return s;
            }
            d.location = Some(map.locate(&text, &d.path));
            d.to_string()
        })
        .collect();
    Failure::bad_input(msgs.join("\n"))
}

/// The progress bar of a simulation on stderr (`indicatif`): share done, ETA and a status,
/// shown only on a terminal and only for runs that last longer than a second; it never writes
/// to stdout, so machine-readable output stays clean.
pub struct ProgressLine {
    start: std::time::Instant,
    bar: Option<indicatif::ProgressBar>,
    shown: bool,
}

impl ProgressLine {
    pub fn new(quiet: bool) -> Self {
        let bar = progress_allowed(quiet).then(|| {
            let b = indicatif::ProgressBar::with_draw_target(Some(1000), indicatif::ProgressDrawTarget::hidden());
            let style = indicatif::ProgressStyle::with_template("[{bar:30}] {percent:>3}% ETA {eta:>4} {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("#>-");
            b.set_style(style);
            b
        });
        ProgressLine { start: std::time::Instant::now(), bar, shown: false }
    }
    pub fn elapsed(&self) -> std::time::Duration {
        self.start.elapsed()
    }
    /// `done` in [0, 1] (None if unknown), plus a free-form status.
    pub fn update(&mut self, done: Option<f64>, status: &str) {
        let Some(bar) = &self.bar else { return };
        if !self.shown {
            if self.start.elapsed().as_secs_f64() < 1.0 {
                return;
            }
            // `stderr()` draws nothing when standard error is not a terminal.
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            self.shown = true;
        }
        if let Some(f) = done {
            bar.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64);
        }
        bar.set_message(status.to_string());
    }
    pub fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// nccl-tests' sizes (`rocelab_model::units::parse_size`), with the flag named in the error.
pub fn parse_size(s: &str, flag: &str) -> Result<u64, Failure> {
    rocelab_model::units::parse_size(s)
        .ok_or_else(|| Failure::bad_input(format!("error: {flag} `{s}`: a size in bytes, e.g. 8, 64K, 1G")))
}
