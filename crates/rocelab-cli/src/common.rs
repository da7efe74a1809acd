//! What every verb shares: the failure type with its exit status, loading a fabric file with
//! located diagnostics, and atomic output files.

use rocelab_model::{load_file, LoadError, Model};
use std::fmt;
use std::io::Write;
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

/// Writes `bytes` to `path` through a temporary file and a rename, so an interrupted run never
/// leaves a half-written file that looks whole.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let tmp = path.with_extension(match path.extension() {
        Some(e) => format!("{}.tmp", e.to_string_lossy()),
        None => "tmp".to_string(),
    });
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    res.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Failure { status: EXIT_BAD_INPUT, message: format!("error: cannot write {}: {e}", path.display()) }
    })
}
