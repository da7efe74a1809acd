//! Importers: run scenarios written for other simulators in rocelab, unchanged.
//!
//! Most published RoCE/DCQCN studies describe their scenarios in the input format of the HPCC
//! ns-3 simulator (alibaba-edu/High-Precision-Congestion-Control, whose keys SimAI and
//! ASTRA-sim's ns-3 backend reuse) or as htsim connection matrices. This crate reads them and
//! writes a rocelab fabric file (commented TOML, traffic included) a user can read and edit:
//!
//! ```text
//! config.txt ─┬─ topology file ──► ns3::parse ──┐
//!             └─ flow file                      ├─► Scenario ──► fabric::to_toml ──► fabric.toml
//! FILE.cm (+ --nodes/--linkspeed) ─► htsim ─────┘                     (rocelab_model::load_str)
//! ```
//!
//! * `ns3`    — config keys, topology and flow files; ns-3-style outputs (FCT file, PFC file);
//! * `htsim`  — `.cm` connection matrices and the generated topology;
//! * `sonic`  — a SONiC switch's `config_db.json` (QoS, buffers, PFC) as a fabric file;
//! * `containerlab` — a `*.clab.yml` topology's nodes and links as an explicit fabric;
//! * `nvue`   — a Cumulus Linux switch's NVUE configuration (QoS, RoCE, PFC, ECN) as a fabric file;
//! * `fabric` — the shared `Scenario` and its TOML rendering;
//! * `text`   — a token reader that keeps line numbers, and ns-3 rate/time strings.
//!
//! Nothing here panics on bad input: every problem is an `ImportError` naming the file and,
//! where there is one, the line. Keys or settings rocelab does not model are never dropped in
//! silence: they become `Scenario::notes`, printed by the CLI and written into the fabric file.
//! `docs/import.md` documents every mapping.

pub mod containerlab;
pub mod fabric;
pub mod htsim;
pub mod ns3;
pub mod nvue;
pub mod sonic;
pub mod text;

pub use fabric::Scenario;

/// Why an input could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("error: cannot read {file}: {error}\n  = help: check the path")]
    Io { file: String, error: std::io::Error },
    /// A problem at a place in an input file (`line` 0 = the file as a whole).
    #[error("{}", located(.file, *.line, .message, .hint))]
    Invalid { file: String, line: usize, message: String, hint: String },
}

fn located(file: &str, line: usize, message: &str, hint: &str) -> String {
    let at = if line > 0 { format!("{file}:{line}") } else { file.to_string() };
    format!("error: {at}: {message}\n  = help: {hint}")
}

impl ImportError {
    pub fn at(file: &str, line: usize, message: impl Into<String>, hint: impl Into<String>) -> Self {
        ImportError::Invalid { file: file.to_string(), line, message: message.into(), hint: hint.into() }
    }
}

/// Reads a text input file (lossy on invalid UTF-8: the formats are ASCII).
pub fn read_text(path: &std::path::Path) -> Result<String, ImportError> {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|error| ImportError::Io { file: path.display().to_string(), error })
}
