//! One module per verb; each owns its `Args` (clap) and a `run` that returns an exit status.

pub mod bench;
pub mod collect;
pub mod compare;
pub mod doctor;
pub mod exporter;
pub mod import;
pub mod init;
pub mod lint;
pub mod plan;
pub mod scenarios;
pub mod simulate;
pub mod sweep;
pub mod topo;
pub mod validate;
