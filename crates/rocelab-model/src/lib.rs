//! rocelab's fabric model.
//!
//! One fabric file (TOML) feeds every verb. This crate reads it and hands out a `Model` that
//! cannot hold illegal states:
//!
//! ```text
//! text --serde--> Config (may be wrong) --validate--> Model (cannot be)
//!                   |                                   ├─ nodes, links, ports (typed ids)
//!                   └─ SourceMap: key path -> line:col   ├─ resolved QoS, switch models, NICs
//!                                                       └─ routing: ECMP groups per switch
//! ```
//!
//! * `cc`       — the congestion-control tables besides DCQCN (`[nic.hpcc]`, `[nic.timely]`, `[nic.dctcp]`);
//! * `config`   — the schema, one struct per TOML table, unknown keys rejected;
//! * `presets`  — switch ASIC presets, PFC peer-response table, headroom formula, DCQCN defaults;
//! * `topology` — leaf-spine, fat-tree, rail-optimized and explicit builders;
//! * `model`    — validation and the resolved `Model`;
//! * `routing`  — all shortest up/down paths as per-switch ECMP groups;
//! * `summary`  — what `rocelab topo` reports (counts, oversubscription, bisection, rails, ECMP);
//! * `infiniband` — the IB link layer: VLs, credits, SL → VL, VL arbitration, routing mode;
//! * `intent`   — `[[traffic]]`, `[[fault]]` and `[[workload]]` resolved and bounded at load;
//! * `events`   — reboot modes and their timescales, with sources;
//! * `tcp`      — the host's TCP (`[nic] tcp_congestion_control`);
//! * `diag`     — diagnostics that carry file:line:column;
//! * `units`    — `SimTime` (ps) and `BitsPerSec`.

pub mod atomic;
pub mod cc;
pub mod config;
pub mod diag;
pub mod events;
pub mod infiniband;
pub mod intent;
pub mod jobs;
pub mod lb;
pub mod model;
pub mod nccl;
pub mod pcie;
pub mod planes;
pub mod presets;
pub mod queues;
pub mod routing;
pub mod scenario;
pub mod serving;
pub mod summary;
pub mod tcp;
pub mod templates;
pub mod thunderbolt;
pub mod topology;
pub mod uet;
pub mod units;

pub use config::Config;
pub use diag::{Diagnostic, Location, SourceMap};
pub use model::*;
pub use units::{BitsPerSec, SimTime};

use std::fmt;
use std::path::Path;

/// Why a fabric file could not become a `Model`.
#[derive(Debug)]
pub enum LoadError {
    Io {
        file: String,
        error: std::io::Error,
    },
    /// Every problem found, each located in the file.
    Invalid(Vec<Diagnostic>),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io { file, error } => {
                write!(f, "error: cannot read {file}: {error}\n  = help: check the path")
            }
            LoadError::Invalid(ds) => {
                for (i, d) in ds.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{d}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LoadError {}

/// Receives the name of each loading stage as it starts ("computing ECMP routes").
pub type Stage<'a> = &'a dyn Fn(&'static str);

/// Reads, parses and validates a fabric file.
pub fn load_file(path: &Path) -> Result<Model, LoadError> {
    load_file_observed(path, &|_| {})
}

/// `load_file`, naming each stage to `stage` as it starts.
pub fn load_file_observed(path: &Path, stage: Stage) -> Result<Model, LoadError> {
    stage("reading the file");
    let text = read_text(path)?;
    load_str_observed(&path.display().to_string(), &text, stage)
}

/// Reads a fabric file as UTF-8 text; a stray byte is a located error (`file:line:column`), the
/// same for every verb that reads fabric files.
pub fn read_text(path: &Path) -> Result<String, LoadError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| LoadError::Io { file: file.clone(), error })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        // Point at the first byte that is not UTF-8.
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let valid = std::str::from_utf8(valid).unwrap_or_default();
        let location = SourceMap::new(&file, valid).locate_offset(valid, valid.len());
        LoadError::Invalid(vec![Diagnostic {
            path: String::new(),
            message: format!(
                "the file is not UTF-8 text: byte 0x{:02x} cannot start a character",
                e.as_bytes()[valid.len()]
            ),
            hint: "save the fabric file as UTF-8 (or remove the stray byte)".into(),
            location: Some(location),
        }])
    })?;
    Ok(text)
}

/// Parses and validates fabric-file text; `file` names it in diagnostics.
pub fn load_str(file: &str, text: &str) -> Result<Model, LoadError> {
    load_str_observed(file, text, &|_| {})
}

/// `load_str`, naming each stage to `stage` as it starts.
pub fn load_str_observed(file: &str, text: &str, stage: Stage) -> Result<Model, LoadError> {
    stage("parsing");
    let map = SourceMap::new(file, text);
    let config = parse_config(file, text, &map)?;
    model::Model::from_config_observed(config, text, stage).map_err(|mut ds| {
        for d in &mut ds {
            d.location = Some(map.locate(text, &d.path));
        }
        LoadError::Invalid(ds)
    })
}

/// Parses text into a `Config` (syntax, types, unknown keys); no semantic checks.
pub fn parse_config(file: &str, text: &str, map: &SourceMap) -> Result<Config, LoadError> {
    toml::from_str::<Config>(text).map_err(|e| {
        let location = e.span().map(|s| map.locate_offset(text, s.start)).or(Some(Location {
            file: file.to_string(),
            line: 1,
            column: 1,
        }));
        let message = e.message().trim().to_string();
        // Name the key whose value is wrong; a syntax error has no key (the map is empty).
        let path = e.span().and_then(|s| map.path_at(s.start)).unwrap_or_default().to_string();
        let hint = hint_for(&message, &path);
        let syntax = toml::from_str::<toml::Table>(text).is_err();
        let message = if syntax { format!("TOML syntax error: {message}") } else { message };
        LoadError::Invalid(vec![Diagnostic { path, message, hint, location }])
    })
}

fn hint_for(message: &str, path: &str) -> String {
    let quoted = |m: &str| m.split('`').nth(1).map(str::to_string);
    if message == "missing field `topology`" {
        "add a topology table: [topology.leaf_spine], [topology.fat_tree], [topology.rail_optimized] or \
         [topology.explicit]; `rocelab init` writes a commented starter file"
            .into()
    } else if message.starts_with("unknown field") {
        "remove the key or fix its spelling; docs/fabric-file.md lists every key".into()
    } else if message.starts_with("missing field") {
        match (quoted(message), path.is_empty()) {
            (Some(k), false) => format!("add `{k} = ...` to `{path}`; docs/fabric-file.md gives its unit and meaning"),
            _ => "add the required key; docs/fabric-file.md lists every key with its unit".into(),
        }
    } else if message.starts_with("invalid type") {
        "check the value's type: numbers unquoted, names quoted, lists in [ ]".into()
    } else if message.starts_with("unknown variant") {
        "use one of the values listed".into()
    } else if message.starts_with("invalid value") && message.contains("expected u") {
        let max = match message.rsplit("expected ").next().unwrap_or("") {
            "u8" => "255 (DSCP values are 0-63, priorities 0-7)",
            "u16" => "65535",
            "u32" => "4294967295",
            _ => "18446744073709551615",
        };
        format!("use a whole number from 0 to {max}; counts and sizes cannot be negative")
    } else if message.contains("number too large") {
        "TOML integers stop at 9223372036854775807; use a smaller value".into()
    } else if message.starts_with("duplicate key") {
        "a key may appear once per table: delete one of them".into()
    } else if message.contains("defined") || message.contains("duplicate") {
        "a table may be declared once; merge the two declarations".into()
    } else {
        "fix the TOML syntax here: `key = value`, `[table]`, `[[array.of.tables]]`, strings in \"quotes\"".into()
    }
}

/// A stable 64-bit FNV-1a hash, used as the fabric hash recorded in every output.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
