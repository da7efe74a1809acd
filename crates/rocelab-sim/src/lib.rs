//! rocelab's packet-level engine, and the flow-level engine beside it (`flow`). Read this page
//! first: it says which module owns what and where to change a mechanism.
//!
//! A discrete-event simulator of a RoCEv2 fabric at packet granularity: NICs with RC queue
//! pairs (segmentation into MTU packets with real header overhead, per-QP DCQCN rate limiting
//! in `paper` and `mlx5` variants, ACK/NAK, go-back-N with IB timeouts, an optional window),
//! switches with a shared-buffer MMU (ingress accounting per priority group, PFC XOFF/XON with
//! headroom, dynamic or static thresholds), strict/DWRR schedulers, ECN/RED marking, ECMP by
//! 5-tuple hash with per-switch seeds and resilient failover, a PFC watchdog, and timed faults
//! (links, flaps, switch reboots, host stalls, ECMP reseeds). A [`workload::Workload`] posts the
//! messages and hears when each is delivered.
//!
//! # Components and their interfaces
//!
//! Each mechanism's state has one owner; the others reach it through a few calls, not fields.
//!
//! | component | owns | connected by |
//! |---|---|---|
//! | `Router` (`router`), held by both engines | the flattened forwarding table, per-switch ECMP seeds and hashed fields, what routing knows of each link (up, routes withdrawn), the routing epochs each switch forwards by, the source-port stream and a multi-homed host's port choice | `choose` (per switch hop), `trace_path` (a flow's path), `qp_route` (a new QP's NICs, port, hash); link changes in through `set_link_up` / `set_withdrawn` / `reconverge`, whose switch learnings the engine schedules and hands back (`learn`); the flow engine applies a fault in one call (`apply`) |
//! | switch MMU (`engine::mmu::Mmu`) | every switch's buffer: pool, reserve and headroom carve-outs, thresholds, use, RED's draws | `admit` / `take_shared` / `release` with the priority-group counters a packet is charged to (they stay in the port's cache lines), `xoff_threshold` and `shared` for PFC |
//! | egress queues (`rocelab_model::queues::Queues`, resolved at load) | per class its priority, queue and losslessness; strict order, DWRR quanta, pause masks, ECN by port speed | read by admission, the schedulers (`engine::sched`) and PFC (`engine::pfc`); the engine holds a copy |
//! | egress scheduler (`engine::sched::pick_queue`) | nothing of its own: a port's queues, pause and DWRR state | a function of the queues' properties, that one port and the clock |
//! | link layer (`engine::link::LinkLayer`), chosen once per fabric | RoCE, or InfiniBand's arbitration tables, routing mode, LIDs and IB CC (`engine::ib`) | construction-time resolution (reserve, headroom, overheads, INT, watchdog, a QP's identity) and data-path hooks where the layers differ: `switch_arrive`, `host_arrive`, `pick`, `tx_blocked`, `dequeued`, `on_wire`, `released`, `ce_received`, `cnp_class` |
//! | ports (`Sim::ports`) | the wire, egress queues, PFC pause and watchdog state, ingress counters, grouped by what one packet touches | the event loop (`engine`), `engine::wire`, `engine::sched`, `engine::pfc` |
//! | host transport (`engine::transport::HostTransport`, `Sim::host`; behaviour in `engine::nic`, `pacer`, `cc`) | NICs and their queues, QPs with their pacers and congestion control (`cc::Cc`), the CC tables per NIC profile, QP slots and their reuse | `post_flow` (a message's QPs, `store`), `nic_try_send`, `host_receive`, `retire`; congestion control behind `cc::CongestionControl` |
//!
//! # Where things live
//!
//! | to change… | look in |
//! |---|---|
//! | the event loop, dispatch, run termination, sampling instants | `engine` (`engine.rs`) |
//! | serialization, propagation, wire arrival, drops | `engine::wire` |
//! | forwarding, admission, ingress accounting, release (the `Mmu` component) | `engine::mmu` |
//! | PFC pause/refresh/resume, the watchdog, queue flushes | `engine::pfc` |
//! | strict and DWRR scheduling, ECN marking at dequeue | `engine::sched` |
//! | ECMP hashing, the flattened forwarding table, next-hop choice and failover, routing epochs and reconvergence, a host's port choice | `router` (`Router`, owned by both engines) |
//! | QPs: sending, receiving, ACK/NAK/CNP, timeouts | `engine::nic`; their state and slots: `engine::transport` |
//! | what a fault does when it happens | `engine::faults`; resolving `[[fault]]`: `engine::resolve_faults` |
//! | invariants recounted from the packets | `engine::invariants` |
//! | the link layer, chosen once per fabric: what RoCE and InfiniBand resolve differently at construction and a QP's creation, and the data-path hooks where they differ (admission, pick, wire, release, CE at the receiver) | `engine::link` |
//! | InfiniBand's credits, VL arbitration, LID routing, FECN | `engine::ib` |
//! | congestion control: the one interface every algorithm sits behind (CNP, ACK with RTT and INT, loss, timers), static dispatch by enum | `cc` |
//! | DCQCN's two variants (paper, mlx5) | `cc::dcqcn` |
//! | the TCP-like transport's window (DCTCP, RFC 8257), for `Net::post_tcp` | `cc::dctcp` |
//! | InfiniBand congestion control at the sender (CCT index, timer) | `cc::ibcc` |
//! | HPCC (INT stamped at switch egress, echoed on ACKs) | `cc::hpcc`; stamping: `engine::sched` |
//! | TIMELY (RTT gradient; one timed packet per round trip) | `cc::timely` |
//! | DCTCP as a rate on RDMA QPs (HPCC's ns-3 CC_MODE 8) | `cc::dctcp_rate` |
//! | pacing a QP at its rate | `pacer` |
//! | the workload API (messages, delivery callbacks), the engine a `Net` talks to | `workload` |
//! | the flow-level engine (max-min rates on the same ECMP paths, same workloads) | `flow`; its fill: `flow::maxmin` |
//! | choosing the engine (`SimOptions::engine`) for a workload or `[[traffic]]` | `Run`, `build_run` |
//! | `[[traffic]]` patterns → flows | `traffic` |
//! | the partitioned engine: replicas run by threads in windows, messages at barriers, the merged snapshot | `parallel` |
//! | what a replica does differently: its own nodes only, packets and PFC frames over a cut link as messages | `engine::part` |
//! | where to cut (pods, rail groups, leaf groups) and the lookahead; counting a cut's cost on a single run | `partition` |
//! | the event queues, FIFO among equal times (the packet engine's two-level timing wheel in front of a 16-ary radix heap; the flow engine's radix heap) | `event` |
//! | packets, header overheads, the packet slab, the intrusive queue FIFO | `packet` |
//! | hot-path counters (plain integers, no names) | `stats` |
//! | the public, plain-data copy of a run's counters that reports and tools read | `snapshot` |
//! | snapshot → reports under the shared metric names (JSON, CSV, Prometheus, text) | `report` |
//! | other simulators' output layouts (per-flow times), from the snapshot | `outputs` |
//! | traces of what happens (PFC frames, drops, marks, CNPs, deliveries, samples) | `observer` |
//! | huge pages for the big arrays (a global allocator binaries install) | `alloc` |
//! | the sampled buffer time series (an observer the engine installs) | `observer::SeriesRecord` |
//!
//! Benchmark scenarios and their timing live in the `rocelab-bench` crate, outside the engine.
//!
//! # Rules of the hot path
//!
//! Time is integer picoseconds (`SimTime`). Ports, switches, NICs and QPs are plain structs in
//! typed vectors indexed by `u32`; a port's fields are grouped `repr(C)` by what one packet
//! touches; packets are 48 bytes in a slab with a free list; events are small `Copy` values and
//! an event entry is 24 bytes. No allocation per event in steady state (`rocelab-bench` counts
//! them), no `dyn` call per event (the workload is called once per delivered message), stale
//! timers are cancelled by generation counters. A QP's congestion control is `cc::Cc`, an enum
//! over the algorithms with its state inline: every ACK and every packet sent calls it, so it
//! is a `match` the compiler inlines, not a trait object (an indirect call and a heap object
//! per QP); the set of algorithms is closed at compile time and each is one file plus one line
//! of `cc`'s registry. Rare handlers (faults, the watchdog, samples)
//! are `#[cold]` so they stay out of the dispatch loop's code. No platform `libm` call on a
//! path that changes results, no `HashMap` iteration, no wall clock: same model + same seed →
//! byte-identical reports (a golden test checks one summary's hash).

pub mod alloc;
pub mod cc;
pub mod engine;
pub mod event;
pub mod flow;
pub mod observer;
pub mod outputs;
pub mod pacer;
pub mod packet;
pub mod parallel;
pub mod partition;
pub mod report;
pub mod rng;
pub mod router;
pub mod snapshot;
pub mod stats;
pub mod traffic;
pub mod workload;

pub use cc::{dcqcn, dctcp};
pub use engine::{EngineKind, Progress, Sim, SimOptions};
pub use flow::FlowSim;
pub use report::RunReport;
pub use router::Router;
pub use snapshot::Snapshot;

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
    let mut run = build_run(m, opts)?;
    run.run(&mut |_| {});
    Ok(RunReport::from_snapshot(&run.snapshot(), m))
}

/// A run on the engine `SimOptions::engine` names.
pub enum Run<'m> {
    Packet(Box<Sim<'m>>),
    Flow(Box<FlowSim<'m>>),
    /// The packet engine cut into partitions run by threads (`parallel`).
    Parallel(Box<parallel::ParRun<'m>>),
}

impl<'m> Run<'m> {
    /// A run driven by `workload` on the engine `opts.engine` names; its `start` runs here.
    pub fn with_workload(
        m: &'m Model,
        workload: Box<dyn workload::Workload + 'm>,
        faults: Vec<engine::Fault>,
        opts: SimOptions,
    ) -> Result<Run<'m>, Vec<Diagnostic>> {
        if let Some(par) = cut_of(m, &opts) {
            let run = parallel::ParRun::with_workload(m, workload, faults, SimOptions { parallel: None, ..opts }, par)?;
            return Ok(Run::Parallel(Box::new(run)));
        }
        let opts = SimOptions { parallel: None, ..opts };
        Ok(match opts.engine {
            EngineKind::Packet => Run::Packet(Box::new(Sim::with_workload(m, workload, faults, opts)?)),
            EngineKind::Flow => Run::Flow(Box::new(FlowSim::with_workload(m, workload, faults, opts)?)),
        })
    }

    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) {
        match self {
            Run::Packet(s) => s.run(progress),
            Run::Flow(s) => s.run(progress),
            Run::Parallel(s) => s.run(progress),
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        match self {
            Run::Packet(s) => s.snapshot(),
            Run::Flow(s) => s.snapshot(),
            Run::Parallel(s) => s.snapshot(),
        }
    }

    /// The snapshot without per-QP and per-message rows.
    pub fn snapshot_totals(&self) -> Snapshot {
        match self {
            Run::Packet(s) => s.snapshot_totals(),
            Run::Flow(s) => s.snapshot_totals(),
            Run::Parallel(s) => {
                let mut snap = s.snapshot();
                (snap.qps, snap.flows) = (Vec::new(), Vec::new());
                snap
            }
        }
    }
}

/// The cut a run asks for and gets, if any: the packet engine, more than one partition asked
/// for, and a fabric of more than one block (one block has nothing to cut: one engine runs
/// it, whatever the threads). A cut the fabric refuses (`--partition-by pod` without a core
/// tier) is left to `ParRun`, which says why.
fn cut_of(m: &Model, opts: &SimOptions) -> Option<parallel::Parallel> {
    let p = opts.parallel.filter(|p| opts.engine == EngineKind::Packet && p.parts > 1)?;
    match partition::partition(m, p.by, p.parts) {
        Ok(c) if c.parts < 2 => None,
        _ => Some(p),
    }
}

/// [`build`] on the engine `opts.engine` names.
pub fn build_run<'m>(m: &'m Model, opts: SimOptions) -> Result<Run<'m>, Vec<Diagnostic>> {
    if let Some(par) = cut_of(m, &opts) {
        let flows = traffic::expand(m, &m.config.traffic, opts.seed)?;
        let faults = engine::resolve_faults(m)?;
        let run = parallel::ParRun::new(m, flows, faults, SimOptions { parallel: None, ..opts }, par)?;
        return Ok(Run::Parallel(Box::new(run)));
    }
    match opts.engine {
        EngineKind::Packet => Ok(Run::Packet(Box::new(build(m, SimOptions { parallel: None, ..opts })?))),
        EngineKind::Flow => {
            let flows = traffic::expand(m, &m.config.traffic, opts.seed)?;
            let faults = engine::resolve_faults(m)?;
            Ok(Run::Flow(Box::new(FlowSim::new(m, flows, faults, opts)?)))
        }
    }
}
