//! rocelab's packet-level engine.
//!
//! A discrete-event simulator of a RoCEv2 fabric at packet granularity: NICs with RC queue
//! pairs (segmentation into MTU packets with real header overhead, per-QP DCQCN rate limiting
//! in `paper` and `mlx5` variants, ACK/NAK, go-back-N), switches with a shared-buffer MMU
//! (ingress accounting per priority group, PFC XOFF/XON with headroom, dynamic thresholds),
//! strict/DWRR schedulers, ECN/RED marking, ECMP by 5-tuple hash with per-switch seeds, PFC
//! watchdog, and timed faults (link down/up, a host that stops draining).
//!
//! * `event`   — the `(time, seq)` event heap;
//! * `packet`  — packets, header overheads, the packet slab;
//! * `engine`  — state and handlers (ports, switch MMU, NICs) and the event loop;
//! * `dcqcn`   — the reaction point's rate state machine;
//! * `traffic` — `[[traffic]]` tables expanded into flows;
//! * `stats`   — hot-path counters; `report` — the same counters under the shared metric names;
//! * `outputs` — per-flow times and the optional PFC event log (other simulators' layouts).
//!
//! Time is integer picoseconds. Same model + same seed → byte-identical reports.

pub mod dcqcn;
pub mod engine;
pub mod event;
pub mod outputs;
pub mod pacer;
pub mod packet;
pub mod report;
pub mod rng;
pub mod stats;
pub mod traffic;
pub mod workload;

pub use engine::{Progress, Sim, SimOptions};
pub use report::RunReport;

use rocelab_model::{Diagnostic, Model, SimTime};

/// The run settings a fabric file asks for (`[simulation]`), before command-line overrides.
pub fn options_from_model(m: &Model) -> SimOptions {
    let s = &m.config.simulation;
    SimOptions {
        seed: s.seed.unwrap_or(1),
        duration: s.duration_us.map(|d| SimTime::from_secs_f64(d * 1e-6)),
        sample_interval: s.sample_interval_us.map(|d| SimTime::from_secs_f64(d * 1e-6)),
        ..SimOptions::default()
    }
}

/// Builds a run of the fabric's own `[[traffic]]` and `[[fault]]` tables.
pub fn build<'m>(m: &'m Model, opts: SimOptions) -> Result<Sim<'m>, Vec<Diagnostic>> {
    let flows = traffic::expand(m, &m.config.traffic, opts.seed)?;
    if flows.is_empty() {
        return Err(vec![Diagnostic::new(
            "traffic",
            "the fabric file has no traffic to simulate",
            "add a [[traffic]] table, e.g. pattern = \"incast\", dst = \"host0\", senders = 8, size_bytes = 1000000",
        )]);
    }
    let faults = engine::resolve_faults(m)?;
    Sim::new(m, flows, faults, opts)
}

/// Runs the fabric's traffic to completion and returns the report.
pub fn simulate(m: &Model, opts: SimOptions) -> Result<RunReport, Vec<Diagnostic>> {
    let mut sim = build(m, opts)?;
    sim.run(&mut |_| {});
    Ok(RunReport::from_sim(&sim))
}
