//! rocelab's analytical planner: which network a parallelism plan needs, computed.
//!
//! Before buying switches a team must know what crosses the network for its model and
//! parallelism plan, and which interconnect carries it without starving the GPUs. This crate
//! answers with arithmetic it shows: bytes per GPU per collective, the link each one crosses,
//! its time by an α-β model and by an NCCL-like ring/tree model, the compute it can hide behind,
//! the share of the step the GPU waits on the network, and a verdict that follows from that share.
//!
//! ```text
//!  [plan] TOML / flags / fabric facts ──spec::resolve──► Scenario (validated)
//!                                                          │
//!              ┌───────────────────────┬──────────────────┼────────────────────┐
//!              ▼                       ▼                  ▼                    ▼
//!      estimate::estimate       compare::compare     search::search      render::{table,
//!   (one plan, all arithmetic)  (usage × link grid)  (rank TP·PP·DP·EP)    markdown, json}
//! ```
//!
//! * `model`, `hardware`, `link`, `precision` — presets with their sources;
//! * `collective` — nccl-tests busbw factors, α-β and NCCL-like collective times;
//! * `scenario` — the validated case; `spec` — inputs, defaults, error locations;
//! * `estimate` — traffic per parallelism dimension, memory, step time, verdict;
//! * `compare` — the "usage → acceptable network" table; `search` — layout ranking;
//! * `render` — pure functions from results to text;
//! * `tuning` — NCCL's own algorithm/protocol model (2.30.7), shared with the twin.
//!
//! Every formula, with its source, is in `docs/plan.md`.

pub mod collective;
pub mod compare;
pub mod estimate;
pub mod hardware;
pub mod link;
pub mod model;
pub mod precision;
pub mod render;
pub mod scenario;
pub mod search;
pub mod spec;
pub mod tuning;

pub use compare::{compare, CompareSpec, CompareTable};
pub use estimate::{estimate, Estimate, Verdict};
pub use scenario::Scenario;
pub use search::{search, SearchResult, SearchSpec};
pub use spec::{resolve, FabricFacts, PlanSpec};

/// A planning input that cannot be used. `key` is the dotted plan key (`parallel.tp`), which
/// the caller turns into a flag name or a file:line:column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct PlanError {
    pub key: String,
    pub message: String,
    pub hint: String,
}
