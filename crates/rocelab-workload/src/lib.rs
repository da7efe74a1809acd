//! Workloads on the packet engine that people validate fabrics with: NCCL-like collectives,
//! reported in the units and layout of nccl-tests.
//!
//! A collective is a [`rocelab_sim::workload::Workload`]: it posts the first chunks, and each
//! delivery posts the chunk that depended on it (`ring`). [`run_collective`] runs one on a
//! fabric's model (with the fabric file's `[[fault]]`s), [`sweep`] runs a size sweep as
//! nccl-tests' `-b/-e/-f` does, and `table` prints the rows as `all_reduce_perf` does, so
//! `rocelab doctor` reads the twin's table as it reads a real one.
//!
//! Sizes follow nccl-tests' PERFORMANCE.md: `bytes` is the per-rank buffer for all-reduce and
//! the whole array for all-gather and reduce-scatter; algbw = bytes / time, busbw = algbw ×
//! the collective's factor (`rocelab_plan::collective::Collective::busbw_factor`, shared with
//! `rocelab plan` and the doctor), so busbw of a bandwidth-bound run approaches the bottleneck
//! link's goodput. GB/s is 10⁹ B/s.
//!
//! What is modelled: ring all-reduce, all-gather and reduce-scatter between hosts (one rank per
//! host NIC), channels as separate connections with their own source ports, QPs per
//! connection. Not yet: tree all-reduce, all-to-all, broadcast, NVLink hops inside a node,
//! NCCL's slice pipelining inside a step (a step here moves its chunk as one RDMA message, so
//! small sizes show the per-step latency NCCL's LL protocols would hide).

pub mod ring;
pub mod table;

use ring::{Ring, RingOutcome, RingPlan};
use rocelab_model::{Diagnostic, Model, NodeId};
pub use rocelab_plan::collective::Collective;
use rocelab_sim::{RunReport, Sim, SimOptions};
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;

/// One collective to run.
#[derive(Clone, Debug)]
pub struct CollectiveSpec {
    pub op: Collective,
    /// nccl-tests' size: see the crate doc.
    pub bytes: u64,
    /// The ranks in ring order; `None`: every host, as [`default_ranks`] orders them.
    pub ranks: Option<Vec<NodeId>>,
    /// NCCL channels (`NCCL_MIN_NCHANNELS`/`NCCL_MAX_NCHANNELS` pinned to one value).
    pub channels: u32,
    /// `NCCL_IB_QPS_PER_CONNECTION`; a chunk is split over them (`NCCL_IB_SPLIT_DATA_ON_QPS=1`).
    pub qps_per_connection: u32,
}

impl CollectiveSpec {
    pub fn new(op: Collective, bytes: u64) -> Self {
        CollectiveSpec { op, bytes, ranks: None, channels: 2, qps_per_connection: 1 }
    }
}

/// A collective's result: one nccl-tests row, and the engine's own report of the run.
#[derive(Clone, Debug, Serialize)]
pub struct CollectiveResult {
    /// nccl-tests' name (`all_reduce`, `all_gather`, `reduce_scatter`).
    pub op: &'static str,
    pub bytes: u64,
    pub ranks: u32,
    pub channels: u32,
    pub time_us: f64,
    pub algbw_gbytes_per_s: f64,
    pub busbw_gbytes_per_s: f64,
    /// Chunks that never arrived (a QP exhausted its retries); nccl-tests' `#wrong` shows
    /// corrupted elements, which the twin never has, so this is its nearest figure.
    pub failed_chunks: u64,
    /// The engine's work: events handled and data packets sent.
    pub events: u64,
    pub data_packets: u64,
    #[serde(skip)]
    pub report: RunReport,
}

/// nccl-tests' name of a collective, for the ones the twin runs.
pub fn nccl_name(op: Collective) -> Option<&'static str> {
    match op {
        Collective::AllReduce => Some("all_reduce"),
        Collective::AllGather => Some("all_gather"),
        Collective::ReduceScatter => Some("reduce_scatter"),
        _ => None,
    }
}

/// The collective named as nccl-tests names it (`all_reduce`, `all_reduce_perf`, `allreduce`).
pub fn parse_op(name: &str) -> Result<Collective, String> {
    let n = name.trim().trim_end_matches("_perf").replace(['-', '_'], "");
    match n.as_str() {
        "allreduce" => Ok(Collective::AllReduce),
        "allgather" => Ok(Collective::AllGather),
        "reducescatter" => Ok(Collective::ReduceScatter),
        "alltoall" | "broadcast" | "reduce" | "sendrecv" => {
            Err(format!("`{name}` is not on the twin yet: all_reduce, all_gather and reduce_scatter are"))
        }
        _ => Err(format!("unknown collective `{name}`: all_reduce, all_gather or reduce_scatter")),
    }
}

/// Every host of the fabric in ring order. On a rail-optimized fabric the ring walks rail by
/// rail (rail 0 of every node, then rail 1, ...), so consecutive ranks share a rail leaf and
/// only the step from one rail to the next crosses the spines: the rail-aligned rings NCCL
/// builds on such fabrics, where each inter-node hop stays on one rail. (NCCL's hops between
/// the GPUs of one node go over NVLink, which the twin does not carry yet; here they are the
/// rail-to-rail steps.) Elsewhere: file order.
pub fn default_ranks(m: &Model) -> Vec<NodeId> {
    let hosts: Vec<NodeId> = m.hosts().collect();
    let on_rails: usize = m.rails.iter().map(|r| r.hosts.len()).sum();
    if m.rails.is_empty() || on_rails != hosts.len() {
        return hosts;
    }
    m.rails.iter().flat_map(|r| r.hosts.iter().copied()).collect()
}

/// Runs one collective to completion on `m` (with the fabric file's faults).
pub fn run_collective(m: &Model, spec: &CollectiveSpec, opts: SimOptions) -> Result<CollectiveResult, Vec<Diagnostic>> {
    let name = nccl_name(spec.op).ok_or_else(|| {
        vec![Diagnostic::new(
            "collective",
            format!("{} is not on the twin yet", spec.op.name()),
            "use all_reduce, all_gather or reduce_scatter",
        )]
    })?;
    let ranks = spec.ranks.clone().unwrap_or_else(|| default_ranks(m));
    if ranks.len() < 2 {
        return Err(vec![Diagnostic::new(
            "collective",
            "a collective needs at least 2 ranks",
            "use a fabric with 2 or more hosts",
        )]);
    }
    if spec.bytes == 0 {
        return Err(vec![Diagnostic::new("collective", "a collective of 0 bytes", "give a size of 1 B or more")]);
    }
    let n = ranks.len() as u64;
    // 2(n−1) steps for all-reduce, n−1 for all-gather and reduce-scatter (as `plan` counts them).
    let steps = spec.op.ring_steps(n as u32);
    // S/n per step and rank, rounded up (NCCL pads the last chunk).
    let chunk = spec.bytes.div_ceil(n);
    let out = Rc::new(RefCell::new(RingOutcome::default()));
    let plan = RingPlan {
        steps: steps as u32,
        chunk_bytes: chunk,
        channels: spec.channels,
        qps: spec.qps_per_connection,
        seed: opts.seed,
    };
    let w = Ring::new(m.nodes.len(), ranks, plan, out.clone());
    let expected = w.chunks_to_deliver();
    let faults = rocelab_sim::engine::resolve_faults(m)?;
    let mut sim = Sim::with_workload(m, Box::new(w), faults, opts)?;
    sim.run(&mut |_| {});
    let report = RunReport::from_sim(&sim);
    let o = out.borrow().clone();
    let complete = o.failed == 0 && o.delivered == expected;
    let time_us = match (complete, o.end) {
        (true, Some(end)) => end.0 as f64 * 1e-6,
        _ => f64::INFINITY,
    };
    let algbw = if time_us.is_finite() && time_us > 0.0 { spec.bytes as f64 / (time_us * 1e-6) / 1e9 } else { 0.0 };
    Ok(CollectiveResult {
        op: name,
        bytes: spec.bytes,
        ranks: n as u32,
        channels: spec.channels,
        time_us,
        algbw_gbytes_per_s: algbw,
        busbw_gbytes_per_s: algbw * spec.op.busbw_factor(n as u32),
        failed_chunks: o.failed + expected.saturating_sub(o.delivered + o.failed),
        events: report.events,
        data_packets: report.totals.data_packets_sent,
        report,
    })
}

/// nccl-tests' size sweep: `min`, `min·factor`, … up to `max` (as `-b -e -f`).
pub fn sweep_sizes(min: u64, max: u64, factor: u64) -> Result<Vec<u64>, String> {
    if min == 0 || max < min {
        return Err(format!("sizes {min}..{max}: need 1 ≤ min ≤ max"));
    }
    if factor < 2 {
        return Err(format!("step factor {factor}: need 2 or more"));
    }
    let mut v = vec![];
    let mut s = min;
    while s <= max {
        v.push(s);
        match s.checked_mul(factor) {
            Some(n) => s = n,
            None => break,
        }
    }
    Ok(v)
}

/// Runs `spec` at every size of the sweep.
pub fn sweep(
    m: &Model,
    spec: &CollectiveSpec,
    sizes: &[u64],
    opts: SimOptions,
    progress: &mut dyn FnMut(usize, &CollectiveResult),
) -> Result<Vec<CollectiveResult>, Vec<Diagnostic>> {
    let mut out = Vec::with_capacity(sizes.len());
    for (i, &bytes) in sizes.iter().enumerate() {
        let r = run_collective(m, &CollectiveSpec { bytes, ..spec.clone() }, opts.clone())?;
        progress(i, &r);
        out.push(r);
    }
    Ok(out)
}
