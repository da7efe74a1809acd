//! rocelab's doctor: the production fabric, read from its real counters.
//!
//! Read this first. Everything flows through one pipeline:
//!
//! ```text
//!  live host (sysfs + ethtool/mlnx_qos/rdma)      a dump directory (or .tar.gz)
//!        │  collect::collect_snapshot                  │  dump::load_dumps
//!        ▼                                             ▼
//!   raw text ──parse::*──► Snapshot (typed counters and QoS state, one host, one instant)
//!                              │
//!        ┌─────────────────────┼─────────────────────────────┐
//!        ▼                     ▼                             ▼
//!  metrics::from_snapshot   diagnose::diagnose           drift::check_drift
//!  (metrics.md names)       (two snapshots → rates,      (one snapshot vs the
//!        │                   findings with evidence)      intended config)
//!        ▼                     └──────────────┬──────────────┘
//!  exporter (/metrics)                        ▼
//!                                    report (human text, JSON)
//! ```
//!
//! * `parse`     — one module per real format (`ethtool -S`/`-i`, RDMA `hw_counters` and
//!   `rdma statistic show`, `mlnx_qos -i`, host sysfs QoS/ECN/DCQCN files, nccl-tests, SONiC
//!   `show pfc counters` / `show queue counters` / `show pfcwd stats` / `show priority-group
//!   watermark`, Cumulus `nv show interface .. qos roce counters` / `qos pfc-watchdog`,
//!   Arista EOS `show interfaces counters queue detail`). Every parser is total: malformed input is a
//!   [`ParseError`] carrying its line number, never a panic (`tests/fuzz.rs` checks that).
//! * `sources`   — the switch counter sources (file, command, parser) and the one normalized
//!   counter model (samples of the metric schema) they fill, as the NIC counters do through
//!   `metrics`; the switch rules and the PFC rules of NICs and switches read only that model.
//!   A new source is a parser and one registry line.
//! * `snapshot`  — the typed result of one collection; `dump` reads and writes its on-disk
//!   layout (documented in `docs/collect.md`), which is just the raw tool outputs and sysfs
//!   files, so a dump made by hand with `ethtool -S eth0 > ...` works too.
//! * `metrics`   — the shared metric schema (names and labels: `docs/exporter.md`) and the
//!   Prometheus text writer.
//! * `collect`   — discovery of RDMA devices and their netdevs under a sysfs root, tool runs
//!   with a timeout (argument vectors, never a shell).
//! * `diagnose`  — rates between snapshots and the findings rules; `drift` — the intended
//!   configuration ([`drift::Intent`]) and what differs from it; `nccl` expectations live in
//!   `diagnose` too ("is it the network?").
//! * `gpudirect` — GPU ↔ NIC over PCIe (`nvidia-smi topo -m`), rail alignment, whether GPU
//!   Direct RDMA is used and through which mechanism (peer-memory module, DMA-BUF).
//! * `quality`   — what in a window cannot be believed (a delta no link could produce) or is
//!   missing from one snapshot; reported as data problems, never as findings.
//! * `rules`     — the registry of the doctor's rules (code, severities, what each finds);
//!   every finding is checked against it, and `docs/doctor.md` lists it.
//! * `alerts`    — Prometheus alerting rules for the exporter's metrics, thresholds from the
//!   fabric file.
//! * `twin`      — a real nccl-tests run beside the twin's run of the same collective on the
//!   fabric file (`rocelab simulate --collective`), size by size: where production falls short
//!   of what the fabric can do.
//! * `exporter`  — a small std::net HTTP/1.1 server for `/metrics`, bounded in connections,
//!   request size and collection time.
//!
//! Output paths never iterate a `HashMap`: everything is kept in `BTreeMap`s or sorted
//! vectors, so the same dumps give byte-identical reports.

pub mod alerts;
pub mod collect;
pub mod diagnose;
pub mod drift;
pub mod dump;
pub mod exporter;
pub mod gpudirect;
pub mod intent;
pub mod metrics;
pub mod parse;
pub mod quality;
pub mod report;
pub mod rules;
pub mod snapshot;
pub mod sources;
pub mod tools;
pub mod twin;
pub mod util;

pub use parse::ParseError;
pub use snapshot::Snapshot;

/// Anything that stops the doctor from reading its input.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("cannot read {path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{0}")]
    Invalid(String),
}

impl DoctorError {
    pub fn io(path: &std::path::Path, error: std::io::Error) -> Self {
        DoctorError::Io { path: path.display().to_string(), error }
    }
}
