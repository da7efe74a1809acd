//! The packet-level engine: ports, switch MMU, schedulers, NICs, and the event loop.
//!
//! `Sim` holds one of each component, as fields: the `Router` (`router`), the switch `Mmu`
//! (`mmu`), the host transport (`transport`), the link layer chosen once (`link`), the egress
//! queues' properties from the model, and the ports; handlers are methods on `Sim` that
//! receive packets and wake up on time, handing each component what it needs (the crate doc
//! has the table). The data path of one hop:
//!
//! ```text
//! NIC/switch egress port ──serialize──► wire (FIFO of (arrival, pkt)) ──► peer ingress
//!   ▲ scheduler: strict, then DWRR; skips PFC-paused priorities    │
//!   └──────── egress queue ◄── Mmu::admit ◄── Router::choose ◄──────┘
//! ```
//!
//! Switch MMU (the HPCC ns-3 reference model, generalized): per (ingress port, priority group)
//! the first `reserve` bytes are private, the rest count against one shared pool per switch;
//! a lossless priority pauses its upstream when it holds headroom bytes or its shared use
//! reaches the dynamic threshold α·(buffer − Σheadroom − Σreserve − shared_used) (or a static
//! XOFF), resumes when the headroom is empty and shared use + resume offset ≤ threshold, and
//! drops (`reason = headroom`) only when headroom is exhausted. Lossy priorities drop
//! (`reason = buffer`) above their own α share of the free pool. ECN is marked at dequeue on
//! the egress queue length (RED between Kmin and Kmax, ECT packets only).

use crate::cc::{Ack, Cc, CcParams, CongestionControl as _, Loss, QpKind, Timer, Todo};
use crate::event::{Ev, EventQueue};
use crate::observer::{Observed, Observer, SeriesRecord};
use crate::pacer::Pacer;
use crate::packet::*;
use crate::rng::Rng;
use crate::router::{hash_field_mask, QpRoute, RouteLearn, Router};
use crate::stats::*;
use crate::traffic::{FlowSpec, Transport};
use crate::workload::{Delivered, FixedFlows, Net, WakeSlots, Workload};
use link::{LinkLayer, QpIdentity};
use rocelab_model::config::{CongestionControl, WatchdogAction};
use rocelab_model::queues::{ClassQueue, Queues};
use rocelab_model::tcp::TcpCongestionControl;
use rocelab_model::{BitsPerSec, Diagnostic, Model, NodeId, PortId, Role, SimTime};
use std::collections::VecDeque;
pub(crate) use transport::{HostTransport, Nic, Qp, RetiredQps};

mod fastfwd;
mod faults;
mod ib;
mod invariants;
mod lb;
mod link;
mod mmu;
mod nic;
mod part;
mod pfc;
mod profile;
mod sched;
mod transport;
mod uet;
mod wire;

pub use fastfwd::{FastForward, SkipStats};
pub use faults::resolve_faults;
pub use faults::{RECONNECT, RESEND_UNIT_BYTES};
pub(crate) use part::Part;
pub use part::{Msg, PartStatus};

const NONE: u32 = u32::MAX;
/// RoCEv2's UDP destination port.
pub const ROCE_UDP_PORT: u16 = 4791;

/// Settings of one run (from `[simulation]` and the command line).
#[derive(Clone, Debug)]
pub struct SimOptions {
    pub seed: u64,
    /// Stop at this simulated time even if flows remain.
    pub duration: Option<SimTime>,
    pub sample_interval: Option<SimTime>,
    /// The receiver ACKs every N in-order packets (and always the last one).
    pub ack_interval: u32,
    /// Reuse the slot of a QP once it is done and nothing refers to it any more (no packet of
    /// it in the fabric, no timer of it pending), its counters folded into its message's.
    /// Results are the same bytes; memory then grows with the QPs alive at once, not with
    /// every message ever posted (a ring collective posts millions). The snapshot then lists
    /// only the QPs still held.
    pub recycle_qps: bool,
    /// Which engine runs the workload: packets (this module) or flows (`crate::flow`).
    pub engine: EngineKind,
    /// Cut the fabric into partitions run by threads (`crate::parallel`); `None`: one engine.
    pub parallel: Option<crate::parallel::Parallel>,
    /// Skip the steady stretches of QPs whose links no other QP shares (`fastfwd`); `None`:
    /// every packet is simulated.
    pub fast_forward: Option<FastForward>,
}

/// The engines a workload runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// Every packet, queue, pause frame and rate update (`engine`).
    #[default]
    Packet,
    /// Max-min fair rates of flows on their ECMP paths (`flow`).
    Flow,
}

impl EngineKind {
    /// The name outputs record (`engine` in reports).
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Packet => "packet",
            EngineKind::Flow => "flow",
        }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 1,
            duration: None,
            sample_interval: None,
            ack_interval: 4,
            recycle_qps: false,
            engine: EngineKind::Packet,
            parallel: None,
            fast_forward: None,
        }
    }
}

/// A run without a duration stops when packets are in the fabric and none has been delivered
/// or dropped for this long: it would never end otherwise. Far above RDMA timeouts (ms) and
/// PFC watchdog detection times (100s of ms), so a run that is only slow is never cut.
pub const NO_PROGRESS_LIMIT: SimTime = SimTime(1_000_000_000_000);

#[derive(Clone, Copy, Debug)]
struct Ecn {
    kmin: u64,
    kmax: u64,
    pmax: f64,
}

impl Ecn {
    /// RED on the egress queue length `qlen` (bytes, before this packet leaves): never below
    /// Kmin, always above Kmax, with probability rising linearly to Pmax between them (the
    /// only case that draws from the switch's stream `rng`).
    #[inline]
    fn marks(&self, qlen: u64, rng: &mut Rng) -> bool {
        if qlen > self.kmax {
            true
        } else if qlen > self.kmin {
            let p = self.pmax * (qlen - self.kmin) as f64 / (self.kmax - self.kmin).max(1) as f64;
            rng.unit() < p
        } else {
            false
        }
    }
}

/// One egress queue of a port, its FIFO of packets and its counters in one 64-byte line:
/// an enqueue or dequeue touches all of them.
#[derive(Default)]
#[repr(C, align(64))]
pub(crate) struct EgressQueue {
    ring: PktFifo,
    /// Bytes queued (wire bytes).
    pub bytes: u64,
    /// Peak of `bytes`.
    pub peak: u64,
    /// DWRR deficit.
    deficit: i64,
    /// Longest queueing delay seen, in ps.
    pub delay_max: u64,
}

/// Ingress accounting of one priority group on a switch port: bytes it holds in the
/// reserve and the shared pool, and in headroom. Kept together: admission and release read
/// both.
#[derive(Clone, Copy, Default)]
struct IngressPg {
    ing: u64,
    hdrm: u64,
}

/// Pause state of one priority on an egress port, read together by `is_paused`.
#[derive(Clone, Copy, Default)]
struct PauseState {
    /// Paused by the peer until then.
    until: SimTime,
    /// PFC watchdog: pauses on this priority are ignored until then.
    wd_until: SimTime,
}

/// One end of a link: its egress (queues, scheduler, wire) and its ingress accounting.
/// `repr(C)`, line-aligned, fields grouped by what one packet touches: at fabric scale the
/// engine is bound by cache misses on ports, so the first line carries what every
/// transmission reads and writes, and each queue, priority group and pause state is one
/// piece of a line.
#[repr(C, align(64))]
pub(crate) struct Port {
    pub node: u32,
    pub peer: u32,
    sw: u32,
    nic: u32,
    ps_per_byte: u64,
    pub delay: SimTime,
    /// The port is serializing until then.
    busy_until: SimTime,
    /// The wire works (what routing knows of the link is the router's: `Router::is_up`).
    pub up: bool,
    /// A TxDone event is pending: scheduled only when something waits to be sent, so an idle
    /// port costs no event after its last packet.
    tx_pending: bool,
    rr: u8,
    fresh: bool,
    /// Bit q set: queue q holds packets (so the scheduler skips empty queues without
    /// touching them).
    nonempty: u8,
    /// Bit p set: priority p may be paused (a pause set its `until` ahead; a resume or the
    /// pause's expiry clears it), so the scheduler reads the pause state only then.
    paused: u8,
    pub tx_bytes: u64,
    /// Packets on the cable, oldest first: an intrusive list through `Packet::next`, each
    /// packet carrying its arrival time in `enq_time` and the gap to the next arrival.
    wire_head: u32,
    wire_tail: u32,
    /// Arrival time of `wire_tail` (to fill in its `next_gap` without reading it back).
    wire_tail_arrive: SimTime,
    pub speed: BitsPerSec,
    headroom: u64,
    // Ingress: XOFF sent upstream for this priority.
    xoff: [bool; 8],
    wd_drop: [bool; 8],
    /// A PauseExpire event is pending (at most one per priority: refreshes move the pause).
    expire_pending: [bool; 8],
    refresh_pending: [bool; 8],
    pause: [PauseState; 8],
    // Ingress accounting for packets received on this port (switch ports).
    pg: [IngressPg; 8],
    pub queues: [EgressQueue; 8],
    ecn: [Option<Ecn>; 8],
    pub paused_since: [SimTime; 8],
    xoff_sent_at: [SimTime; 8],
    /// Cold counters live behind a pointer so the hot fields stay in few cache lines.
    pub st: Box<PortStats>,
}

impl Port {
    /// Priority `prio` is paused by the peer at `now` (and the PFC watchdog is not ignoring
    /// its pauses).
    #[inline]
    pub(crate) fn is_paused(&self, prio: u8, now: SimTime) -> bool {
        let s = &self.pause[prio as usize];
        s.until > now && s.wd_until <= now
    }

    /// Priority `prio` is paused by the peer until `until` (`now` or earlier: resumed).
    #[inline]
    pub(crate) fn pause_until(&mut self, prio: u8, until: SimTime, now: SimTime) {
        self.pause[prio as usize].until = until;
        if until > now {
            self.paused |= 1 << prio;
        } else {
            self.paused &= !(1 << prio);
        }
    }
}

/// What a fault does when it happens, with its target resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// A link (both port ids) goes down or comes back.
    Link { ports: (u32, u32), up: bool },
    /// A switch-to-switch link (both port ids) stops carrying routes, or carries them again;
    /// it stays up.
    Route { ports: (u32, u32), withdrawn: bool },
    /// A host stops draining its receive buffer, or resumes.
    Host { host: NodeId, stall: bool },
    /// A switch (or every switch) takes a new ECMP hash seed.
    Reseed { switch: Option<NodeId>, seed: u64 },
    /// Every switch hashes other fields from now on (a bit set, as `Router::hash_fields`).
    HashFields { mask: u8 },
    /// A switch's data plane stops, links and routes left as they are (a warm reboot), or
    /// forwards again.
    Freeze { switch: NodeId, frozen: bool },
    /// A host keeps draining its receive buffer at `bps` only (a slow receiver) until a
    /// `Host { stall: false }`.
    Drain { host: NodeId, bps: u64 },
    /// A host's NICs take NIC profile `profile` (the settings a firmware update brings).
    NicProfile { host: NodeId, profile: u32 },
    /// An ECMP group update on one switch: its egress `port` leaves its equal-cost groups
    /// (`removed`) or rejoins them; the link and the peer's groups are left alone.
    Member { port: u32, removed: bool },
    /// A NIC reset destroys the RDMA QPs under way at `host` (`up: false`), or their
    /// applications have reconnected and resend (`up: true`).
    Qps { host: NodeId, up: bool },
}

/// One timed fault. A `[[fault]]` table may expand to several (a reboot is every link of the
/// switch down, then up; a flap is `count` down/up pairs).
#[derive(Clone, Debug)]
pub struct Fault {
    pub at: SimTime,
    pub action: FaultAction,
}

/// Progress reported to the caller during a run.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: SimTime,
    pub end: Option<SimTime>,
    pub events: u64,
    pub qps_done: usize,
    pub qps_total: usize,
    /// Payload bytes delivered in order so far, and to deliver in all.
    pub bytes_done: u64,
    pub bytes_total: u64,
}

pub struct Sim<'m> {
    pub(crate) m: &'m Model,
    pub(crate) opts: SimOptions,
    pub(crate) now: SimTime,
    q: EventQueue,
    pub(crate) pkts: Slab,
    pub(crate) ports: Vec<Port>,
    /// The switches' shared buffers (`mmu::Mmu`).
    pub(crate) mmu: mmu::Mmu,
    /// NICs, QPs and their congestion control (`transport`).
    pub(crate) host: HostTransport,
    pub(crate) flows: Vec<FlowSpec>,
    pub(crate) faults: Vec<Fault>,
    /// Forwarding, ECMP, routing epochs, host port choice (`router`).
    pub(crate) router: Router<'m>,
    /// Per class its priority, queue and losslessness; strict order, DWRR quanta and pause
    /// masks of the egress queues (resolved by the model, `Model::queues`).
    queues: Queues,
    /// Bit p set: some class of priority p is lossless (PFC). Read on every switch dequeue,
    /// so it is resolved once here rather than by scanning the classes per packet.
    lossless_prios: u8,
    qps_left: usize,
    /// QPs ever created (slots may be fewer: `SimOptions::recycle_qps`).
    qps_created: usize,
    /// QPs started and not finished.
    active_qps: usize,
    /// Fault events not yet handled.
    faults_due: usize,
    /// Per flow: a QP of it gave up (retry count exhausted).
    pub(crate) flow_failed: Vec<bool>,
    /// Payload bytes of all QPs.
    bytes_total: u64,
    pub(crate) events: u64,
    pub(crate) stats: GlobalStats,
    /// The sampled time series, filled through the observers (installed when sampling is on).
    pub(crate) series: Option<SeriesRecord>,
    pub(crate) stopped_at_duration: bool,
    /// Stopped because no packet left the fabric for `NO_PROGRESS_LIMIT` (no duration set).
    pub(crate) stopped_no_progress: bool,
    /// Told of PFC frames, drops, marks, CNPs, deliveries and samples (see `observer`).
    observers: Vec<Box<dyn Observer + 'm>>,
    /// What posts the messages (taken out while one of its callbacks runs).
    workload: Option<Box<dyn Workload + 'm>>,
    /// Whether the workload is told of deliveries.
    deliveries_wanted: bool,
    /// Per flow: QPs whose receiver has not yet seen the last byte.
    flow_rx_left: Vec<u32>,
    /// `Delivered` events queued and not yet handled.
    deliveries_due: u32,
    /// Tags of the workload's wake-ups by slot, and the free slots (a wake-up due holds one).
    wakes: WakeSlots,
    /// The link layer's per-packet overheads (RoCEv2 or InfiniBand).
    pub(crate) hdr: ib::Overheads,
    /// Some NIC profile runs an algorithm fed by INT: switches stamp data packets.
    int_on: bool,
    /// The INT stack of each packet slot (empty without `int_on`).
    int: Vec<crate::cc::IntStack>,
    /// The stack of the packet the NIC is receiving (kept past its slot's release).
    int_rx: crate::cc::IntStack,
    /// The link layer, chosen once (`link`): RoCE, or InfiniBand with its VL arbitration,
    /// routing mode and destination LIDs.
    link: LinkLayer,
    /// InfiniBand: per port, its credits and VL arbiter (empty on RoCE, so a RoCE port keeps
    /// its layout).
    pub(crate) ib_ports: Vec<ib::IbPort>,
    /// Counts events against a cut of the fabric (`profile`; `None` unless asked for).
    part_profile: Option<Box<crate::partition::WindowProfile>>,
    /// This engine runs one partition of a partitioned run (`part`; `None`: the whole fabric).
    part: Option<Box<Part>>,
    /// The steady-state fast-forward (`fastfwd`; `None` unless asked for).
    pub(crate) ff: Option<Box<fastfwd::FastForwarder>>,
}

/// Prefetches the first line of a port (what every transmission and arrival reads).
#[inline]
fn prefetch_port(ports: &[Port], port: u32) {
    if let Some(p) = ports.get(port as usize) {
        prefetch(p);
    }
}

/// Starts loading what an event about to come due will touch: an arrival's packet and both
/// ports, a transmission's port (at fabric scale these reads would otherwise miss to DRAM
/// one after another).
#[inline]
fn prefetch_for(pkts: &Slab, ports: &[Port], ev: &Ev) {
    match *ev {
        Ev::WireArrive { port, pkt, peer } => {
            pkts.prefetch(pkt);
            prefetch_port(ports, port);
            prefetch_port(ports, peer);
        }
        Ev::TxDone { port } => prefetch_port(ports, port),
        _ => {}
    }
}

#[inline]
fn ser_time(p: &Port, bytes: u32) -> SimTime {
    if p.ps_per_byte != 0 {
        SimTime(bytes as u64 * p.ps_per_byte)
    } else {
        p.speed.serialize(bytes as u64)
    }
}

impl<'m> Sim<'m> {
    /// Builds the engine state for a fixed list of `flows` on model `m`.
    pub fn new(
        m: &'m Model,
        flows: Vec<FlowSpec>,
        faults: Vec<Fault>,
        opts: SimOptions,
    ) -> Result<Sim<'m>, Vec<Diagnostic>> {
        Self::with_workload(m, Box::new(FixedFlows(flows)), faults, opts)
    }

    /// Builds the engine state for a run driven by `workload` (see `workload` for the
    /// contract); its `start` runs here.
    pub fn with_workload(
        m: &'m Model,
        workload: Box<dyn Workload + 'm>,
        faults: Vec<Fault>,
        opts: SimOptions,
    ) -> Result<Sim<'m>, Vec<Diagnostic>> {
        Self::replica(m, workload, faults, opts, None)
    }

    /// The engine of the whole fabric (`part` `None`), or the replica that runs one
    /// partition of it (`crate::parallel`).
    pub(crate) fn replica(
        m: &'m Model,
        workload: Box<dyn Workload + 'm>,
        faults: Vec<Fault>,
        opts: SimOptions,
        part: Option<Part>,
    ) -> Result<Sim<'m>, Vec<Diagnostic>> {
        let qos = &m.qos;
        let link = LinkLayer::of(m)?;
        let router = Router::new(m, opts.seed)?;
        let mut switches = Vec::new();
        let mut nics = Vec::new();
        let lossless_prios = (0..8u8).filter(|p| qos.pfc_enabled(*p)).count() as u64;
        let used_prios = {
            let mut mask = 0u8;
            for c in &m.queues.classes {
                mask |= 1 << c.prio;
            }
            mask.count_ones() as u64
        };
        for (i, n) in m.nodes.iter().enumerate() {
            match &n.role {
                Role::Switch { model } => {
                    let sp = &m.switch_models[*model].params;
                    debug_assert_eq!(router.switch_of(i as u32), switches.len() as u32);
                    switches.push(mmu::Switch {
                        node: i as u32,
                        buffer: sp.buffer_bytes,
                        shared_used: 0,
                        total_hdrm: 0,
                        total_rsrv: link.reserve_bytes(sp.reserve_bytes) * n.num_ports as u64 * used_prios,
                        reserve: link.reserve_bytes(sp.reserve_bytes),
                        resume_offset: sp.resume_offset_bytes,
                        alpha_lossless: sp.ingress_lossless_alpha,
                        alpha_lossy: sp.ingress_lossy_alpha,
                        static_xoff: qos
                            .pfc
                            .xoff_bytes
                            .map(|x| (x, qos.pfc.xon_bytes.unwrap_or(x.saturating_sub(sp.resume_offset_bytes)))),
                        used: 0,
                        peak_used: 0,
                        rng: Rng::new(opts.seed, 0x5357_0000 + i as u64),
                    });
                }
                Role::Host { nic, .. } => {
                    // One NIC (queues, scheduler, receive buffer) per host port, consecutive:
                    // a multi-homed host is a dual-port NIC in RoCE LAG.
                    debug_assert_eq!(router.first_nic(i as u32), nics.len() as u32);
                    nics.extend(n.ports().map(|port| Nic {
                        node: i as u32,
                        port: port.0,
                        profile: *nic,
                        active: Vec::new(),
                        rr: 0,
                        cnp_q: VecDeque::new(),
                        ack_q: VecDeque::new(),
                        wake_at: SimTime::MAX,
                        wake_gen: 0,
                        stalled: false,
                        rx_q: VecDeque::new(),
                        rx_bytes: 0,
                        rx_xoff: [false; 8],
                        drain_bps: 0,
                        drain_gen: 0,
                        drain_pending: false,
                        st: NicStats::default(),
                        rccc: Default::default(),
                    }));
                }
            }
        }
        let mut ports = Vec::with_capacity(m.ports.len());
        for (pi, p) in m.ports.iter().enumerate() {
            let node = p.node.idx();
            // A GPU node's NIC sends no faster than its PCIe link feeds it (`[gpu_node.pcie]`).
            let speed = rocelab_model::pcie::port_send_cap(m, p.node).unwrap_or(p.speed);
            let ps_per_byte =
                if 8_000_000_000_000u64.is_multiple_of(speed.0) { 8_000_000_000_000u64 / speed.0 } else { 0 };
            let ecn = m
                .queues
                .ecn_at(qos, p.speed.gbps())
                .map(|e| e.map(|e| Ecn { kmin: e.kmin_bytes, kmax: e.kmax_bytes, pmax: e.pmax }));
            let headroom = link.headroom_bytes(m, PortId(pi as u32));
            let (sw, first_nic) = (router.switch_of(node as u32), router.first_nic(node as u32));
            if sw != NONE {
                switches[sw as usize].total_hdrm += headroom * lossless_prios;
            }
            ports.push(Port {
                node: node as u32,
                peer: p.peer.0,
                sw,
                nic: if first_nic == NONE { NONE } else { first_nic + pi as u32 - m.nodes[node].first_port },
                speed,
                ps_per_byte,
                delay: p.delay,
                up: true,
                busy_until: SimTime::ZERO,
                tx_pending: false,
                queues: Default::default(),
                rr: 0,
                fresh: true,
                nonempty: 0,
                paused: 0,
                tx_bytes: 0,
                pause: [PauseState::default(); 8],
                paused_since: [SimTime::MAX; 8],
                expire_pending: [false; 8],
                wd_drop: [false; 8],
                wire_head: NONE,
                wire_tail: NONE,
                wire_tail_arrive: SimTime::ZERO,
                pg: [IngressPg::default(); 8],
                xoff: [false; 8],
                refresh_pending: [false; 8],
                xoff_sent_at: [SimTime::ZERO; 8],
                headroom,
                ecn,
                st: Box::default(),
            });
        }
        let cc_params: Vec<CcParams> = m.nics.iter().map(|n| CcParams::of(n, link.ib_cc())).collect();
        let mut sim = Sim {
            m,
            now: SimTime::ZERO,
            q: EventQueue::with_capacity(ports.len() * 2 + 1024),
            pkts: Slab::with_capacity(4096),
            ports,
            mmu: mmu::Mmu { switches },
            host: HostTransport { nics, qps: Vec::new(), cc_params, free_qps: Vec::new(), retired: Vec::new() },
            flows: Vec::new(),
            faults,
            router,
            queues: m.queues.clone(),
            lossless_prios: m
                .queues
                .classes
                .iter()
                .filter(|c| c.lossless && c.prio < 8)
                .fold(0, |a, c| a | 1u8 << c.prio),
            qps_left: 0,
            qps_created: 0,
            active_qps: 0,
            faults_due: 0,
            flow_failed: Vec::new(),
            bytes_total: 0,
            events: 0,
            stats: GlobalStats::default(),
            series: None,
            stopped_at_duration: false,
            stopped_no_progress: false,
            observers: Vec::new(),
            // (A partition hears of deliveries for its leader's workload: `part`.)
            deliveries_wanted: workload.wants_deliveries() || part.as_ref().is_some_and(|p| p.report_deliveries),
            workload: None,
            flow_rx_left: Vec::new(),
            deliveries_due: 0,
            wakes: WakeSlots::default(),
            hdr: link.overheads(m),
            int_on: link.stamps_int(m),
            int: Vec::new(),
            int_rx: crate::cc::IntStack::default(),
            ib_ports: link.ports(m.ports.len()),
            part_profile: None,
            ff: None,
            part: part.map(Box::new),
            link,
            opts,
        };
        if sim.opts.sample_interval.is_some() {
            let rec = SeriesRecord::default();
            sim.add_observer(Box::new(rec.clone()));
            sim.series = Some(rec);
        }
        if let Some(cfg) = sim.opts.fast_forward {
            if let Some(d) = Self::fast_forward_refusal(m, &sim.link, sim.part.is_some(), &sim.faults) {
                return Err(vec![d]);
            }
            sim.ff = Some(Box::new(fastfwd::FastForwarder::new(cfg, sim.ports.len())));
        }
        let mut workload = workload;
        workload.start(&mut Net::packet(&mut sim));
        sim.workload = Some(workload);
        for (i, f) in sim.faults.iter().enumerate() {
            sim.q.push(f.at, Ev::Fault { idx: i as u32 });
        }
        sim.faults_due = sim.faults.len();
        if let Some(iv) = sim.opts.sample_interval {
            sim.q.push(iv, Ev::Sample);
        }
        if sim.link.runs_pfc_watchdog(m) {
            sim.q.push(m.qos.watchdog.poll, Ev::WatchdogPoll);
        }
        Ok(sim)
    }

    /// A QP's base round trip: twice the propagation along its path plus one `frame`-byte
    /// serialization per hop (as HPCC's `third.cc` sizes its base RTT).
    fn path_rtt(&self, src_nic: u32, dst: u32, hash: u32, frame: u32) -> SimTime {
        let mut path = Vec::new();
        self.router.trace_path(src_nic, dst, hash, 64, &mut path);
        path.iter().fold(SimTime::ZERO, |t, &p| {
            let port = &self.ports[p as usize];
            t + port.delay + port.delay + ser_time(port, frame)
        })
    }

    /// The INT stack of packet slot `id`, the table grown to hold it. (Out of line: only runs
    /// with INT call it, and its growth path must not bloat the packet handlers.)
    #[inline(never)]
    pub(super) fn int_slot(&mut self, id: u32) -> &mut crate::cc::IntStack {
        let i = id as usize;
        if i >= self.int.len() {
            self.int.resize(self.pkts.capacity_used().max(i + 1), crate::cc::IntStack::default());
        }
        &mut self.int[i]
    }

    /// The out-of-order placement window of a QP received by NIC `dst_nic` (`Qp::ooo_window`):
    /// unbounded over InfiniBand adaptive routing, none over its static routing, the receiving
    /// NIC profile's under RoCE; none for Linux TCP, whose receiver keeps its own SACK state.
    fn ooo_window(&self, dst_nic: u32, t: Transport) -> u32 {
        match (&self.link, t) {
            (_, Transport::Cubic) => 0,
            (LinkLayer::Ib(_), _) => {
                if self.link.keeps_out_of_order() {
                    u32::MAX
                } else {
                    0
                }
            }
            (LinkLayer::Roce, _) => {
                let prof = &self.m.nics[self.host.nics[dst_nic as usize].profile];
                rocelab_model::lb::ooo_window(prof.ooo_window_packets, self.m.config.routing.load_balancing)
            }
        }
    }

    /// Adds a flow (a message) and its QPs; they start at `f.start`. Returns its index.
    pub(crate) fn post_flow(&mut self, mut f: FlowSpec) -> u32 {
        let fi = self.flows.len() as u32;
        // The host's NICs' profile now (a NIC reset may have given them new settings).
        let prof_i = self.host.nics[self.router.first_nic(f.src.0) as usize].profile;
        let prof = &self.m.nics[prof_i];
        if f.transport == Transport::LossBased && prof.tcp_congestion_control == TcpCongestionControl::Cubic {
            // The host's TCP without ECN is Linux's CUBIC.
            f.transport = Transport::Cubic;
        }
        let QpIdentity { pcp, class: switch_class, kind: cc_kind, ect } =
            self.link.qp_identity(self.m, &f, &self.queues.classes);
        let mut qps = 0;
        for (k, size) in f.qp_sizes() {
            let QpRoute { src_nic, dst_nic, sport, qpn, hash } = self.router.qp_route(&f, k);
            let line = self.ports[self.host.nics[src_nic as usize].port as usize].speed.0 as f64;
            let mtu = prof.mtu;
            let npkts = size.div_ceil(mtu as u64).min(u32::MAX as u64 - 1) as u32;
            // (NSCC's base RTT: each hop also holds the ACK behind one frame, `cc::nscc`.)
            let frames = if prof.transport == rocelab_model::uet::Transport::Uet { 2 } else { 1 };
            let path_rtt = || self.path_rtt(src_nic, f.dst.0, hash, frames * (mtu + self.hdr.data));
            let cc = Cc::choose(cc_kind, prof, &self.host.cc_params[prof_i], line, mtu, path_rtt);
            let fb = cc.as_ref().map(|c| c.feedback());
            let uet = self.uet_qp(cc.as_ref(), prof_i, (fi, k), size, npkts);
            let qp = Qp {
                flow: fi,
                src_nic,
                dst_nic,
                src: f.src.0,
                dst: f.dst.0,
                size,
                npkts,
                mtu,
                class: switch_class,
                pcp,
                hash,
                sport,
                qpn,
                ect: ect
                    && match f.transport {
                        // ECN-capable where the algorithm reads marks (DCQCN's CNPs, DCTCP's
                        // echo; not HPCC's INT or TIMELY's RTT), or the receiver answers them.
                        Transport::Rdma => match fb {
                            Some(fb) => fb.cnp || fb.echo_ce,
                            None => prof.qos.ecn_np_mask & (1 << pcp) != 0,
                        },
                        Transport::Dctcp => true,
                        Transport::LossBased | Transport::Cubic => false,
                    },
                window: prof.window_bytes,
                window_var: prof.window_scales_with_rate,
                snd_nxt: 0,
                snd_una: 0,
                pacer: Pacer::new(f.start),
                rto_gen: 0,
                rto_armed: false,
                timeouts_in_row: 0,
                torn_down: false,
                last_progress: f.start,
                cc,
                rtt_psn: NONE,
                rtt_sent: SimTime::ZERO,
                int_bytes: match fb {
                    Some(f) if f.int => crate::cc::INT_HEADER_BYTES as u16,
                    Some(f) if f.rtt => self.hdr.ts as u16,
                    _ => 0,
                },
                ce_unechoed: 0,
                sender_done: None,
                rcv_nxt: 0,
                ooo: Vec::new(),
                // (UET places every packet, however far ahead: its bitmap spans the message.)
                ooo_window: if uet.is_some() { u32::MAX } else { self.ooo_window(dst_nic, f.transport) },
                nak_for: NONE,
                last_cnp: None,
                since_ack: 0,
                rtx: NONE,
                rtx_end: NONE,
                ooo_held: 0,
                quickacks: nic::QUICKACKS,
                last_rx: SimTime::ZERO,
                finish: None,
                st: QpStats::default(),
                pkts_out: 0,
                timers: 0,
                retired: false,
                uet,
            };
            let id = self.host.store(qp);
            if let Some(ff) = &mut self.ff {
                // (A reused slot's last QP may have been credited: this one has not.)
                ff.forget(id);
            }
            qps += 1;
            if !self.owns_node(f.src.0) {
                // (Another partition's QP: it starts, and counts, there.)
                continue;
            }
            self.push_qp_timer(f.start, Ev::QpStart { qp: id }, id);
            self.qps_created += 1;
            self.qps_left += 1;
            self.bytes_total += size;
        }
        self.flow_rx_left.push(qps);
        self.flow_failed.push(false);
        if self.opts.recycle_qps {
            self.host.retired.push(RetiredQps::default());
        }
        self.flows.push(f);
        fi
    }

    /// Adds an observer; it hears everything from now on.
    pub fn add_observer(&mut self, o: Box<dyn Observer + 'm>) {
        self.observers.push(o);
    }

    /// Tells the observers, if any (one length check otherwise).
    #[inline]
    fn notify(&mut self, e: Observed) {
        if !self.observers.is_empty() {
            self.notify_all(e);
        }
    }

    #[cold]
    #[inline(never)]
    fn notify_all(&mut self, e: Observed) {
        for o in &mut self.observers {
            o.observe(&e);
        }
    }

    /// One event, out of line (for the rare callers: a partition's last timers).
    #[inline(never)]
    pub(super) fn dispatch_one(&mut self, ev: Ev) {
        self.dispatch(ev);
    }

    /// Tells the workload that flow `fi` was delivered.
    #[cold]
    #[inline(never)]
    fn on_delivered(&mut self, fi: u32) {
        self.deliveries_due -= 1;
        let Some(mut w) = self.workload.take() else { return };
        let f = &self.flows[fi as usize];
        let failed = self.flow_failed[fi as usize];
        let done = Delivered { msg: fi, tag: f.tag, src: f.src, dst: f.dst, start: f.start, at: self.now, failed };
        w.on_delivered(done, &mut Net::packet(self));
        self.workload = Some(w);
    }

    /// The workload is to hear that flow `fi` was delivered (or will never be: its
    /// `flow_failed`): an event now, after those already due; in a partitioned run, a report
    /// to the leader, which calls the workload at the barrier (`crate::parallel`).
    #[cold]
    #[inline(never)]
    pub(super) fn deliver(&mut self, fi: u32) {
        let (now, failed) = (self.now, self.flow_failed[fi as usize]);
        if let Some(p) = &mut self.part {
            p.delivered.push((now, fi, failed));
            return;
        }
        self.deliveries_due += 1;
        self.q.push(now, Ev::Delivered { flow: fi });
    }

    /// Queues a wake-up of the workload (see `Net::wake_at`).
    pub(crate) fn push_wake(&mut self, at: SimTime, tag: u64) {
        let slot = self.wakes.hold(tag);
        self.q.push(at, Ev::Wake { slot });
    }

    #[cold]
    #[inline(never)]
    fn on_wake(&mut self, slot: u32) {
        let tag = self.wakes.release(slot);
        let Some(mut w) = self.workload.take() else { return };
        w.on_wake(tag, &mut Net::packet(self));
        self.workload = Some(w);
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Runs to completion (every QP acknowledged) or to the duration limit, then closes the
    /// books (open pause intervals are counted up to the end).
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) {
        self.run_inner(self.opts.duration, progress);
        self.finish_accounting();
    }

    /// Advances the simulation to `t` (or completion) without closing the books, so a test can
    /// look at the state mid-run and continue.
    pub fn run_until(&mut self, t: SimTime) {
        self.run_inner(Some(t), &mut |_| {});
    }

    fn run_inner(&mut self, end: Option<SimTime>, progress: &mut dyn FnMut(Progress)) {
        let mut next_report = 0u64;
        let mut left = self.stats.delivered + self.stats.dropped;
        let mut stall_since = self.now;
        // Already over (a run continued after `run_until` saw it end): leave the timers that
        // outlive it, as the check after each event does.
        if self.finished() {
            self.stopped_at_duration = false;
            progress(self.progress(end));
            return;
        }
        loop {
            // Events about to come due: start loading the packet or port they will touch
            // (at fabric scale these reads would otherwise miss to DRAM one after another).
            let (pkts, ports) = (&self.pkts, &self.ports);
            let Some(t) = self.q.peek_time(|ev| prefetch_for(pkts, ports, ev)) else {
                break;
            };
            if let Some(e) = end {
                if t > e {
                    self.now = e;
                    self.stopped_at_duration = true;
                    break;
                }
            }
            if end.is_none() && self.pkts.live() == 0 && self.active_qps == 0 {
                // Nothing in the fabric and nothing trying to send (between flows, or before
                // the first): no stall.
                stall_since = t;
            }
            let (t, ev) = self.q.pop().expect("peeked");
            self.now = t;
            self.events += 1;
            if self.part_profile.is_some() {
                self.count_partition_event(&ev);
            }
            self.dispatch(ev);
            if self.finished() {
                self.stopped_at_duration = false;
                break;
            }
            if end.is_none() {
                // Without a duration, a run in which packets sit in the fabric and none is
                // delivered or dropped for a long time would go on for ever (a host stalled
                // for good, a PFC deadlock): stop it and say so.
                let gone = self.stats.delivered + self.stats.dropped;
                if gone != left {
                    left = gone;
                    stall_since = t;
                } else if t.0 - stall_since.0 > NO_PROGRESS_LIMIT.0 {
                    // A QP waiting for its retransmit timeout will make progress; anything
                    // else stuck this long (a host that never drains, a QP whose only port is
                    // down) never will.
                    // (A timeout only brings progress with packets outstanding; a QP with
                    // none re-arms its timer for ever.) A fault still to come may revive it.
                    let awaiting = |q: &Qp| q.rto_armed && q.sender_done.is_none() && q.snd_una < q.snd_nxt;
                    if self.faults_due > 0 || self.host.qps.iter().any(awaiting) {
                        stall_since = t;
                    } else {
                        self.stopped_no_progress = true;
                        break;
                    }
                }
            }
            if self.events >= next_report {
                next_report = self.events + 200_000;
                progress(self.progress(end));
            }
        }
        progress(self.progress(end));
    }

    fn progress(&self, end: Option<SimTime>) -> Progress {
        Progress {
            now: self.now,
            end,
            events: self.events,
            qps_done: self.qps_created - self.qps_left,
            qps_total: self.qps_created,
            bytes_done: self.stats.payload_delivered,
            bytes_total: self.bytes_total,
        }
    }

    /// Payload bytes delivered in order, per flow.
    pub fn flow_delivered_bytes(&self) -> Vec<u64> {
        let mut v: Vec<u64> =
            (0..self.flows.len()).map(|f| self.host.retired.get(f).map_or(0, |r| r.delivered_bytes)).collect();
        for q in self.host.qps.iter().filter(|q| !q.retired) {
            v[q.flow as usize] += q.st.bytes_delivered;
        }
        v
    }

    // What refers to a QP is counted only where slots are reused (`recycle_qps`): timer events
    // and packets of it. (Off, the counts are never read and stay zero.)

    /// Schedules a timer event of QP `qp` (counted: the slot is not reused while one is due).
    #[inline]
    pub(super) fn push_qp_timer(&mut self, at: SimTime, ev: Ev, qp: u32) {
        if self.opts.recycle_qps {
            self.host.qps[qp as usize].timers += 1;
        }
        self.q.push(at, ev);
    }

    #[inline]
    fn qp_timer_fired(&mut self, qp: u32) {
        if self.opts.recycle_qps {
            self.host.qps[qp as usize].timers -= 1;
        }
    }

    /// Allocates a packet of its QP (counted, as timers are).
    #[inline]
    pub(super) fn alloc_pkt(&mut self, p: Packet) -> u32 {
        if self.opts.recycle_qps {
            self.host.qps[p.qp as usize].pkts_out += 1;
        }
        self.pkts.alloc(p)
    }

    /// Frees a packet; returns its QP, which may then be done with for good.
    #[inline]
    pub(super) fn free_pkt(&mut self, id: u32) -> u32 {
        let qp = self.pkts.get(id).qp;
        if self.opts.recycle_qps {
            self.host.qps[qp as usize].pkts_out -= 1;
        }
        self.pkts.free(id);
        qp
    }

    /// Retires QP `qi` if recycling is on and nothing refers to it any more: done at both
    /// ends, no packet of it alive, no timer of it due.
    #[inline]
    pub(super) fn maybe_retire(&mut self, qi: u32) {
        // (A partition cannot tell alone: its leader retires QPs for all at once, `part`.)
        if !self.opts.recycle_qps || self.part.is_some() {
            return;
        }
        let q = &self.host.qps[qi as usize];
        // (A QP that gave up stays: its failure is reported from the QP itself.)
        if q.pkts_out == 0
            && q.timers == 0
            && q.sender_done.is_some()
            && q.finish.is_some()
            && !q.retired
            && !q.st.failed
        {
            self.host.retire(qi);
        }
    }

    /// Bytes queued at a port's egress, all queues.
    pub fn queued_bytes(&self, port: PortId) -> u64 {
        self.ports[port.idx()].queues.iter().map(|q| q.bytes).sum()
    }

    /// True when every QP has finished.
    pub fn all_done(&self) -> bool {
        self.qps_left == 0
    }

    fn done(&self) -> bool {
        self.qps_left == 0 && self.pkts.live() == 0
    }

    // (Always inlined: into the single engine's loop and a partition's, its two hot callers;
    // left to the compiler, a third caller made it an out-of-line call, 3 % more instructions.)
    #[inline(always)]
    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::TxDone { port } => self.on_tx_done(port),
            Ev::WireArrive { port, pkt, peer } => self.on_wire_arrive(port, pkt, peer),
            Ev::PfcArrive { from, prio, quanta } => self.on_pfc(from, prio, quanta),
            Ev::PauseExpire { port, prio } => self.on_pause_expire(port, prio),
            Ev::PauseRefresh { port, prio } => self.on_pause_refresh(port, prio),
            Ev::CreditArrive { port, vl, bytes } => self.on_credit_arrive(port, vl, bytes),
            Ev::NicWake { host, gen } => {
                let n = &mut self.host.nics[host as usize];
                if n.wake_gen == gen {
                    n.wake_at = SimTime::MAX;
                    self.nic_try_send(host);
                }
            }
            Ev::QpStart { qp } => {
                self.qp_timer_fired(qp);
                // Its port may have gone down since the QP was created.
                let nic = self.router.live_nic(self.host.qps[qp as usize].src_nic);
                self.host.qps[qp as usize].src_nic = nic;
                self.host.nics[nic as usize].active.push(qp);
                self.active_qps += 1;
                if self.ff.is_some() {
                    self.ff_qp_started(qp);
                }
                self.nic_try_send(nic);
            }
            Ev::Delivered { flow } => self.on_delivered(flow),
            Ev::Wake { slot } => self.on_wake(slot),
            Ev::RouteLearn { sw, epoch } => {
                if self.ff.is_some() {
                    self.ff_routes_change();
                }
                self.router.learn(sw, epoch)
            }
            Ev::HostDrain { nic, gen } => self.on_host_drain(nic, gen),
            Ev::DelayedAck { qp, psn } => {
                self.qp_timer_fired(qp);
                self.on_delayed_ack(qp, psn);
                self.maybe_retire(qp);
            }
            Ev::RateIncrease { qp, gen } => {
                self.qp_timer_fired(qp);
                self.on_rate_increase(qp, gen);
                self.maybe_retire(qp);
            }
            Ev::RateReduce { qp } => {
                self.qp_timer_fired(qp);
                self.on_rate_reduce(qp);
                self.maybe_retire(qp);
            }
            // (Not counted: a timeout seconds away must not hold a slot. A reused slot's QP
            // takes its timer generations past the old one's, so a stale timeout is ignored.)
            Ev::Rto { qp, gen } => self.on_rto(qp, gen),
            Ev::CnpSend { qp } => {
                self.qp_timer_fired(qp);
                self.send_cnp(qp);
                self.maybe_retire(qp);
            }
            Ev::Sample => self.on_sample(),
            Ev::WatchdogPoll => self.on_watchdog(),
            Ev::Fault { idx } => {
                if self.ff.is_some() {
                    self.ff_routes_change();
                }
                self.on_fault(idx as usize)
            }
            Ev::FfLook => self.on_ff_look(),
            Ev::FfResume { skip, gen } => self.on_ff_resume(skip, gen),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Ports and wires

    // ----------------------------------------------------------------------------------------
    // Switch

    // ----------------------------------------------------------------------------------------
    // NIC

    // ----------------------------------------------------------------------------------------
    // Periodic work, faults, watchdog

    /// Routing reconverges after the link between ports `origin` changed; the switches beyond
    /// its ends learn of it when the router says.
    #[cold]
    #[inline(never)]
    pub(super) fn reconverge(&mut self, origin: [u32; 2]) {
        let mut learns = Vec::new();
        self.router.reconverge(origin, self.now, &mut learns);
        for RouteLearn { at, sw, epoch } in learns {
            self.q.push(at, Ev::RouteLearn { sw, epoch });
        }
    }

    #[cold]
    #[inline(never)]
    fn on_sample(&mut self) {
        let now = self.now;
        self.notify(Observed::Sample { time: now });
        #[cfg(debug_assertions)]
        if let Err(e) = self.check_invariants() {
            panic!("engine invariants broken at {now:?}:\n{}", e.join("\n"));
        }
        // The occupancy goes to the observers (the series is one: `SeriesRecord`).
        if !self.observers.is_empty() {
            for i in 0..self.mmu.switches.len() {
                let s = &self.mmu.switches[i];
                if !self.owns_node(s.node) {
                    continue;
                }
                self.notify_all(Observed::BufferSample { time: now, node: NodeId(s.node), bytes: s.used });
            }
            for i in 0..self.ports.len() {
                let p = &self.ports[i];
                let b: u64 = p.queues.iter().map(|q| q.bytes).sum();
                if b > 0 && p.sw != NONE && self.owns_node(p.node) {
                    let e = Observed::QueueSample { time: now, node: NodeId(p.node), port: PortId(i as u32), bytes: b };
                    self.notify_all(e);
                }
            }
        }
        // (A partition cannot tell that the whole run is done: it samples until the run stops.)
        if !self.done() || self.part.is_some() {
            if let Some(iv) = self.opts.sample_interval {
                self.q.push(now + iv, Ev::Sample);
            }
        }
    }

    /// Closes open pause intervals at the end of the run.
    fn finish_accounting(&mut self) {
        let now = self.now;
        for p in &mut self.ports {
            for pi in 0..8 {
                if p.paused_since[pi] != SimTime::MAX {
                    let until = p.pause[pi].until.min(now);
                    p.st.paused_ps[pi] += until.saturating_sub(p.paused_since[pi]).0;
                    p.paused_since[pi] = SimTime::MAX;
                }
            }
        }
    }

    /// Time port `i` has spent paused on priority `pi`, an open pause counted up to now (what
    /// `finish_accounting` will add): a mid-run snapshot's paused share is then exact.
    pub(crate) fn paused_ps_to_now(&self, i: usize, pi: usize) -> u64 {
        let p = &self.ports[i];
        let open = if p.paused_since[pi] != SimTime::MAX {
            p.pause[pi].until.min(self.now).saturating_sub(p.paused_since[pi]).0
        } else {
            0
        };
        p.st.paused_ps[pi] + open
    }

    /// Packets currently in queues, on wires, or buffered at NICs.
    pub fn in_flight(&self) -> u64 {
        self.pkts.live() as u64
    }

    /// Most packets alive at once during the run.
    pub fn peak_packets(&self) -> usize {
        self.pkts.capacity_used()
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn stats(&self) -> &GlobalStats {
        &self.stats
    }
}

impl Sim<'_> {
    pub fn opts_sample_interval(&self) -> Option<SimTime> {
        self.opts.sample_interval
    }

    /// The run's duration limit, if any.
    pub fn duration(&self) -> Option<SimTime> {
        self.opts.duration
    }

    /// The run has ended by itself: every posted message acknowledged, nothing in the fabric,
    /// no callback due (what `run` stops on).
    pub fn finished(&self) -> bool {
        self.qps_left == 0
            && self.qps_created > 0
            && self.pkts.live() == 0
            && self.deliveries_due == 0
            && self.wakes.none_due()
    }
}

/// What the mechanism modules' unit tests share: a model from a TOML text, and an engine
/// built on it with no traffic, whose methods a test then calls directly.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub fn model(file: &str, text: &str) -> Model {
        rocelab_model::load_str(file, text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The transpose permutation on 4 leaves × 4 hosts (`host0..host15`, host j of leaf L is
    /// `host{4L+j}`): host j of leaf L sends `size` bytes to host L of leaf j (j ≠ L), so each
    /// leaf sends three flows, every one across the spine tier. `[[traffic]]` tables.
    pub fn transpose_traffic(size: u64) -> String {
        let mut traffic = String::new();
        for l in 0..4 {
            for j in (0..4).filter(|&j| j != l) {
                let (src, dst) = (4 * l + j, 4 * j + l);
                traffic += &format!(
                    "[[traffic]]\npattern = \"flow\"\nsrc = \"host{src}\"\ndst = \"host{dst}\"\nsize_bytes = {size}\n"
                );
            }
        }
        traffic
    }

    /// 4 leaves × 4 hosts, 4 spines, one 100G uplink per spine (1:1), 2 m host and 10 m fabric
    /// cables, carrying `transpose_traffic(size)`: `nic` is the body of `[nic]`, `tail` any
    /// further tables.
    pub fn transpose_leaf_spine(name: &str, nic: &str, tail: &str, size: u64) -> Model {
        let traffic = transpose_traffic(size);
        let text = format!(
            r#"[fabric]
name = "{name}"
[topology.leaf_spine]
leaves = 4
spines = 4
hosts_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 2 }}
fabric_link = {{ speed_gbps = 100, length_m = 10 }}
[nic]
{nic}
{tail}
{traffic}"#
        );
        model(&format!("{name}.toml"), &text)
    }

    /// `n` hosts `h0..` on one switch `sw0` (ns-3 reference buffers), 100 Gb/s, 2 m cables
    /// (10 ns), MTU 4096; `fabric` added to `[fabric]` (e.g. the link layer), `extra` at the end.
    pub fn star(n: usize, fabric: &str, extra: &str) -> Model {
        let nodes: Vec<String> = (0..n).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
        let links: Vec<String> =
            (0..n).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }}")).collect();
        let text = format!(
            r#"[fabric]
name = "star"
{fabric}
[switch_models.sw]
preset = "ns3-reference"
ports = {n}
[nic]
mtu = 4096
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {} ]
link = [ {} ]
{extra}
"#,
            nodes.join(", "),
            links.join(", ")
        );
        model("star.toml", &text)
    }

    pub fn idle_sim(m: &Model) -> Sim<'_> {
        Sim::new(m, Vec::new(), Vec::new(), SimOptions::default()).unwrap_or_else(|d| panic!("{d:?}"))
    }

    /// Queues a packet of `bytes` wire bytes at egress queue `q` (a VL on InfiniBand) of
    /// `port`, as the switch would, without routing.
    pub fn enqueue(sim: &mut Sim, port: u32, q: usize, bytes: u16) {
        let pkt = sim.pkts.alloc(Packet {
            enq_time: sim.now,
            qp: 0,
            psn: 0,
            dst: 0,
            hash: 0,
            in_port: port,
            next: NONE,
            next_gap: u32::MAX,
            wire_bytes: bytes,
            payload: bytes,
            kind: Kind::Data,
            class: 0,
            pcp: q as u8,
            ecn: 0,
            in_prio: q as u8,
        });
        let p = &mut sim.ports[port as usize];
        p.queues[q].ring.push_back(&mut sim.pkts, pkt);
        p.queues[q].bytes += bytes as u64;
        p.nonempty |= 1 << q;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts on one switch, 100 Gb/s, 20 m cables (100 ns), jumbo frames.
    fn pair() -> Model {
        let text = r#"[fabric]
name = "pair"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[nic]
mtu = 4096
[topology.explicit]
node = [ { name = "sw0", kind = "switch", model = "sw" }, { name = "h0", kind = "host" }, { name = "h1", kind = "host" } ]
link = [ { a = "h0", b = "sw0", speed_gbps = 100, length_m = 20 }, { a = "h1", b = "sw0", speed_gbps = 100, length_m = 20 } ]
[[traffic]]
pattern = "flow"
src = "h0"
dst = "h1"
size_bytes = 100000
"#;
        test_support::model("pair.toml", text)
    }

    fn next_pfc(sim: &mut Sim) -> SimTime {
        while let Some((t, ev)) = sim.q.pop() {
            if let Ev::PfcArrive { .. } = ev {
                return t;
            }
        }
        panic!("no PFC frame scheduled");
    }

    #[test]
    fn pfc_frame_waits_for_the_frame_in_serialization_and_takes_wire_time() {
        let m = pair();
        let mut sim = crate::build(&m, SimOptions::default()).unwrap();
        let port = sim.ports.iter().position(|p| p.sw != NONE).unwrap() as u32;
        let (pfc_ser, delay) = {
            let p = &sim.ports[port as usize];
            (ser_time(p, PFC_WIRE), p.delay)
        };
        // 84 bytes at 100 Gb/s: 6.72 ns.
        assert_eq!(pfc_ser, SimTime(6_720));

        // Idle port: the frame leaves now.
        sim.send_pfc(port, 3, 0xffff);
        assert_eq!(next_pfc(&mut sim), pfc_ser + delay);
        assert_eq!(sim.ports[port as usize].busy_until, pfc_ser);

        // A 4,178-byte data frame (334.24 ns) is being serialized: the pause goes after it,
        // and the port stays busy for the pause frame's own wire time.
        let data_end = SimTime(1_000_000) + SimTime(334_240);
        sim.ports[port as usize].busy_until = data_end;
        sim.now = SimTime(1_000_000);
        sim.send_pfc(port, 3, 0xffff);
        assert_eq!(next_pfc(&mut sim), data_end + pfc_ser + delay);
        assert_eq!(sim.ports[port as usize].busy_until, data_end + pfc_ser);

        // A second frame right behind (another priority) queues behind the first.
        sim.send_pfc(port, 4, 0xffff);
        assert_eq!(next_pfc(&mut sim), data_end + pfc_ser + pfc_ser + delay);
    }
    #[test]
    fn red_never_marks_below_kmin_always_above_kmax_and_linearly_between() {
        let e = Ecn { kmin: 100_000, kmax: 400_000, pmax: 0.2 };
        let mut rng = Rng::new(7, 0x5357_0000);
        let before = rng.next_u64();
        let mut rng = Rng::new(7, 0x5357_0000);
        // Outside (Kmin, Kmax] nothing is drawn: the switch's stream is untouched.
        assert!(!e.marks(100_000, &mut rng));
        assert!(e.marks(400_001, &mut rng));
        assert_eq!(rng.next_u64(), before);
        // Halfway: p = 0.2 × 150,000 / 300,000 = 0.1; 100,000 packets, σ ≈ 95.
        let marked = (0..100_000).filter(|_| e.marks(250_000, &mut rng)).count();
        assert!((9_700..=10_300).contains(&marked), "{marked} of 100000 marked, expected 10000");
        // Just below Kmax: p → Pmax.
        let marked = (0..100_000).filter(|_| e.marks(400_000, &mut rng)).count();
        assert!((19_600..=20_400).contains(&marked), "{marked} of 100000 marked, expected 20000");
    }
}
