//! The flow-level engine: the same workloads as the packet engine, answered in seconds at
//! fabric scale by giving every flow its max-min fair rate instead of moving its packets.
//!
//! # Model
//!
//! * A message striped over Q queue pairs is Q flows. Each QP gets its NICs, UDP source port
//!   and 5-tuple hash from the same `Router` the packet engine owns (`Router::qp_route`, same
//!   draws in the same order), and its path by asking each switch on the way what
//!   `Router::choose` picks for that hash (`Router::trace_path`): same fabric, seed and
//!   source port, same links. The router takes the fault schedule's link, route, seed and
//!   hash-field changes (`Router::apply`).
//! * Rates are max-min fair over the links' capacities ([`maxmin`], progressive filling),
//!   each flow capped at its NIC's line rate. Everything is counted in wire bytes: a flow of
//!   S payload bytes in packets of MTU carries S + ⌈S/MTU⌉ · `DATA_OVERHEAD` bytes, so its
//!   goodput at line rate B is B · MTU / (MTU + 82), as the packet engine's.
//! * A flow starts sending at its message's start; its last byte leaves the sender when its
//!   wire bytes have drained at its (changing) rate, and arrives one *tail* later: the
//!   propagation delay of every link plus the store-and-forward of the last packet on every
//!   link after the first. A one-packet message thus takes exactly its packet's
//!   store-and-forward time, as on the packet engine.
//! * Events: a QP starts, a flow drains, a last byte arrives (the message is delivered when
//!   all its QPs' have), a wake-up, a fault. All events due at one time are handled, then
//!   rates are recomputed once.
//! * Incremental: only the connected component (links ↔ flows crossing them) of the flows
//!   that started, finished or moved is refilled; only flows whose rate changed are touched
//!   (their bytes drained so far settled, a new drain event queued, the old one cancelled by
//!   generation). Flows on links no change reaches cost nothing.
//! * Faults: link down/up, route withdraw/restore, ECMP reseed and hash-field changes apply to
//!   the router at once (no convergence delay); every flow is re-traced and those whose path
//!   changed move (resilient hashing: only flows on a dead member move). A flow with no path
//!   waits at rate 0 until one returns. Host stalls are not modelled.
//!
//! # What it does not model (by design)
//!
//! Queues, so no queueing delay, no buffer occupancy, no PFC pause or its spreading, no
//! drops, retransmissions, ECN marks or CNPs: a congested link is shared as max-min says at
//! once, where DCQCN converges over tens of µs and may oscillate or be unfair. Incast and
//! microbursts are therefore only right in their long-run rates. `docs/flow-engine.md`
//! measures the error against the packet engine.

pub mod maxmin;

use crate::engine::{EngineKind, Fault, FaultAction, Progress, SimOptions};
use crate::event::RadixQueue;
use crate::packet::DATA_OVERHEAD;
use crate::router::{QpRoute, Router};
use crate::snapshot::{FlowRecord, Snapshot};
use crate::traffic::FlowSpec;
use crate::workload::{Delivered, FixedFlows, GroupId, MsgId, Net, WakeSlots, Workload};
use maxmin::WaterFill;
use rocelab_model::{Diagnostic, Model, NodeId, PortId, SimTime};
use std::collections::HashMap;

/// Longest path a flow may take (links): a 3-tier Clos path is 6.
pub const MAX_HOPS: usize = 12;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// QP `flow` starts sending.
    Start {
        flow: u32,
    },
    /// Flow `flow` has sent its last byte (if its generation still is `gen`).
    Drain {
        flow: u32,
        gen: u32,
    },
    /// A last byte of message `msg` arrives.
    Arrive {
        msg: u32,
    },
    /// Message `msg` is reported to the workload.
    Deliver {
        msg: u32,
    },
    Wake {
        slot: u32,
    },
    Fault {
        idx: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Posted, not started.
    Pending,
    /// On its links, sending.
    Active,
    /// Started, no path stands: waits at rate 0 for a fault to bring one back.
    Stalled,
    /// Slot free.
    Free,
    /// A QP of a lockstep group: its route and sizes, sent by the group's rounds.
    Member,
    /// A lockstep group's head between rounds (see `Group`): still listed on the links it
    /// holds alone, counted on none, refilled by no one.
    Parked,
}

/// One QP's flow.
#[derive(Clone, Copy)]
struct Flow {
    msg: u32,
    state: State,
    /// The lockstep group whose round this flow is (its *head*: it crosses the group's
    /// links, not `path`), or `NONE` for a QP's own flow.
    group: u32,
    len: u8,
    gen: u32,
    src: u32,
    dst: u32,
    src_nic: u32,
    hash: u32,
    sport: u16,
    /// QP numbers (source, destination): hashed under `dest-qpn` / `src-qpn`.
    qpn: [u32; 2],
    /// Payload bytes and packets of its last one (for the tail).
    last_pkt_wire: u32,
    npkts: u64,
    /// Wire bytes in all, and still to send as of `t_upd`.
    wire: u64,
    rem: f64,
    /// Rate in wire bits/s since `t_upd`.
    rate: f64,
    t_upd: SimTime,
    /// Its NIC's line rate.
    cap: f64,
    /// Links (egress ports) in path order, and its index in each link's flow list.
    path: [u32; MAX_HOPS],
    slot: [u32; MAX_HOPS],
}

impl Flow {
    /// No message, route or bytes: the fields a flow does not set itself.
    const BLANK: Flow = Flow {
        msg: NONE,
        state: State::Pending,
        group: NONE,
        len: 0,
        gen: 0,
        src: NONE,
        dst: NONE,
        src_nic: NONE,
        hash: 0,
        sport: 0,
        qpn: [0, 0],
        last_pkt_wire: 0,
        npkts: 0,
        wire: 0,
        rem: 0.0,
        rate: 0.0,
        t_upd: SimTime::ZERO,
        cap: 0.0,
        path: [NONE; MAX_HOPS],
        slot: [NONE; MAX_HOPS],
    };
}

/// A lockstep group (`Net::lockstep_group`): messages that always run together, as the hops
/// of a ring step do. Each round is one flow, its head, crossing the union of its members'
/// links (`mult` times a link that many members cross): so the members share one rate, the
/// max-min share of the most constrained, and a round costs a handful of events and one
/// pass over its links, where its members as flows of their own would cost 3–4 events each.
/// A round lasts as long as its largest member takes at that rate (a ring's channels differ
/// by one byte at most).
///
/// Between rounds the group stays on the links it holds alone (its head `Parked`): a ring's
/// next step crosses the same ~800 links, and taking the round off each and putting the next
/// one back was a cache miss per link, twice per round. Only the links it shares with another
/// flow are left and joined each round; a flow that joins a link the parked group holds
/// alone evicts it (`away`), and the next round joins that link again. Every list then reads
/// as if the group had left all its links and come back: the same entries in the same order.
#[derive(Default)]
struct Group {
    /// The members' flows (state `Member`), one per QP of each message.
    members: Vec<u32>,
    /// Distinct links the members cross, in first-crossed order; members crossing each; the
    /// head's index in each link's flow list while a round runs.
    links: Vec<u32>,
    mult: Vec<u32>,
    slot: Vec<u32>,
    /// Per link, its capacity over the members on it: the round's bound there when the link
    /// is its own.
    lim: Vec<f64>,
    /// The least of `lim`, and the links' indices by `lim` (lowest first, ties by index).
    lim_min: f64,
    by_lim: Vec<u32>,
    /// Indices (into `links`, ascending) of the links another flow crosses while its round
    /// runs. With none, the round is alone on every link: its rate is `lim_min` (or its NIC's),
    /// and a recomputation need not look at its links at all; with a few, only those.
    shared: Vec<u32>,
    /// Parked: indices (ascending) of the links it is not listed on (it shared them when its
    /// round ended, or another flow came since); the next round joins them again.
    away: Vec<u32>,
    /// Per link, the wire bytes a round puts on it (its members'), and a round's packets and
    /// packet hops: counted once per round without visiting the members.
    wire_on: Vec<u64>,
    packets: u64,
    packet_hops: u64,
    /// Rounds done whose bytes are not yet on the links' `tx_bytes` (added when the links
    /// change, the group ends, or a snapshot is taken: one pass per group, not per round).
    unsettled: u64,
    /// The `route_epoch` the links were traced in (`u64::MAX`: never), and whether every
    /// member had a path then.
    epoch: u64,
    routed: bool,
    /// The longest tail of its members (the round is delivered when the last one's last byte
    /// is in), the most wire bytes of a member, the lowest NIC rate, payload bytes per round.
    tail: SimTime,
    wire: u64,
    cap: f64,
    bytes: u64,
    src: NodeId,
    dst: NodeId,
    /// The running round's head, or `NONE`; the flow slot every round of the group reuses
    /// (`NONE` before the first).
    head: u32,
    kept: u32,
    live: bool,
    /// Bumped when the group ends: a handle to the slot's earlier owner is stale.
    gen: u32,
}

/// A link's state as the recomputation reads it.
#[derive(Clone, Copy)]
struct LinkAt {
    /// Capacity in bits/s (as `FlowSim::cap`).
    cap: f64,
    /// Active flows on it (`link_flows[l].len()`, but a group parked on a link it holds
    /// alone keeps its 1 there: nothing else reads it until a flow joins and evicts it).
    n: u32,
    /// The recomputation that last reached it (`u32::MAX`: listed in `dirty`).
    mark: u32,
}

/// One message: its QPs aggregated.
#[derive(Clone, Copy)]
struct Msg {
    src: NodeId,
    dst: NodeId,
    size: u64,
    start: SimTime,
    tag: u64,
    qps: u32,
    /// QPs whose last byte has not arrived.
    left: u32,
    finish: Option<SimTime>,
}

/// Counts of the engine's own work, for benchmarks and the docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Rate recomputations (one per instant at which flows started, ended or moved).
    pub recomputes: u64,
    /// Flows refilled over all recomputations (the sum of the components' sizes).
    pub flows_refilled: u64,
    /// Links refilled over all recomputations.
    pub links_refilled: u64,
    /// Flows whose rate changed (each cost a settle and a drain event).
    pub rate_changes: u64,
    /// Most flows active at once.
    pub peak_active: u64,
}

/// A run on the flow-level engine (see the module doc).
pub struct FlowSim<'m> {
    m: &'m Model,
    opts: SimOptions,
    /// Routing, hashing and what faults did to links: the packet engine's own `Router`.
    router: Router<'m>,
    /// Per port, how often its link went down or came back.
    link_changes: Vec<u64>,
    now: SimTime,
    q: RadixQueue<Ev>,
    events: u64,
    faults: Vec<Fault>,
    faults_due: usize,
    /// Per link (model port, egress direction): capacity in bits/s and its active flows.
    cap: Vec<f64>,
    /// Each entry is a flow and the link's index on it (in its path, or its group's `links`).
    link_flows: Vec<Vec<(u32, u32)>>,
    /// Per link, what the recomputation asks of every link it meets, in one compact record
    /// (one cache line where three arrays and the lists' headers were several).
    lk: Vec<LinkAt>,
    tx_bytes: Vec<u64>,
    flows: Vec<Flow>,
    free_flows: Vec<u32>,
    active: u64,
    msgs: Vec<Msg>,
    /// Slots of delivered messages, reused by the next posts (`SimOptions::recycle_qps`: the
    /// per-message rows are then not kept, as on the packet engine).
    free_msgs: Vec<u32>,
    /// Messages ever posted (slots may be fewer).
    msgs_posted: usize,
    workload: Option<Box<dyn Workload + 'm>>,
    deliveries_wanted: bool,
    wakes: WakeSlots,
    /// Links whose flows changed since the last recomputation (deduplicated by `LinkAt::mark`).
    dirty: Vec<u32>,
    flow_mark: Vec<u32>,
    mark: u32,
    fill: WaterFill,
    // Scratch of a recomputation: the component, and its CSR for `fill`.
    comp_flows: Vec<u32>,
    comp_links: Vec<u32>,
    off: Vec<u32>,
    links: Vec<u32>,
    fcap: Vec<f64>,
    rates: Vec<f64>,
    path_buf: Vec<u32>,
    stats: FlowStats,
    payload_delivered: u64,
    /// Messages delivered, and payload bytes posted.
    msgs_done: usize,
    bytes_total: u64,
    packets: u64,
    packet_hops: u64,
    stopped_at_duration: bool,
    stopped_no_progress: bool,
    groups: Vec<Group>,
    free_groups: Vec<u32>,
    /// Bumped by every routing fault: a group traced before it is traced again.
    route_epoch: u64,
    /// Per link, members crossing it and their wire bytes while a group's links are gathered
    /// (zero otherwise).
    link_count: Vec<u32>,
    link_wire: Vec<u64>,
    /// Paths traced since the last routing fault, by (source NIC, destination host, flow
    /// hash): a connection's messages (a pipeline's sends, a ring's steps) take one path every
    /// time, and tracing walks the packet engine's port table, a cache miss per hop. Only a
    /// cache: emptied by every routing fault, and when it reaches `MAX_CACHED_PATHS`.
    paths: HashMap<(u32, u32, u32), ([u32; MAX_HOPS], u8)>,
}

/// Paths kept at most (~70 MB).
const MAX_CACHED_PATHS: usize = 1 << 20;

impl<'m> FlowSim<'m> {
    /// A run of a fixed list of flows (the fabric's `[[traffic]]`).
    pub fn new(
        m: &'m Model,
        flows: Vec<FlowSpec>,
        faults: Vec<Fault>,
        opts: SimOptions,
    ) -> Result<Self, Vec<Diagnostic>> {
        Self::with_workload(m, Box::new(FixedFlows(flows)), faults, opts)
    }

    /// A run driven by `workload` (the contract of `workload`); its `start` runs here.
    pub fn with_workload(
        m: &'m Model,
        mut workload: Box<dyn Workload + 'm>,
        faults: Vec<Fault>,
        opts: SimOptions,
    ) -> Result<Self, Vec<Diagnostic>> {
        // UET sprays every packet and trims: the packet engine's (one path per flow here).
        if let Some(n) = m.nics.iter().find(|n| n.transport == rocelab_model::uet::Transport::Uet) {
            return Err(vec![Diagnostic::new(
                format!("{}.transport", n.path),
                "the flow engine routes each flow on one ECMP path; `transport = \"uet\"` sprays every packet",
                "run the packet engine (leave out `--engine flow`)",
            )]);
        }
        // RoCE's headers and ECMP only: an InfiniBand fabric runs on packets.
        if m.is_ib() {
            return Err(vec![Diagnostic::new(
                "fabric.link_layer",
                "the flow engine does not model InfiniBand (credits, IB headers and routing)",
                "run the packet engine (leave out `--engine flow`)",
            )]);
        }
        // Its flows take one path each: flowlets, adaptive routing and spraying move packets.
        if !m.config.routing.load_balancing.is_ecmp() {
            return Err(vec![Diagnostic::new(
                "routing.load_balancing",
                format!(
                    "the flow engine routes each flow on one ECMP path; `{}` chooses per packet or flowlet",
                    m.config.routing.load_balancing.name()
                ),
                "run the packet engine (leave out `--engine flow`)",
            )]);
        }
        let router = Router::new(m, opts.seed)?;
        let nl = m.ports.len();
        // A GPU node's NIC sends no faster than its PCIe link feeds it (`[gpu_node.pcie]`), the
        // packet engine's cap; every other port at its speed.
        let port_cap: Vec<f64> =
            m.ports.iter().map(|p| rocelab_model::pcie::port_send_cap(m, p.node).unwrap_or(p.speed).0 as f64).collect();
        let mut sim = FlowSim {
            m,
            router,
            link_changes: vec![0; m.ports.len()],
            now: SimTime::ZERO,
            q: RadixQueue::new(),
            events: 0,
            faults_due: faults.len(),
            faults,
            cap: port_cap.clone(),
            link_flows: vec![Vec::new(); nl],
            lk: port_cap.iter().map(|&cap| LinkAt { cap, n: 0, mark: 0 }).collect(),
            tx_bytes: vec![0; nl],
            flows: Vec::new(),
            free_flows: Vec::new(),
            active: 0,
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            msgs_posted: 0,
            deliveries_wanted: workload.wants_deliveries(),
            workload: None,
            wakes: WakeSlots::default(),
            dirty: Vec::new(),
            flow_mark: Vec::new(),
            mark: 0,
            fill: WaterFill::default(),
            comp_flows: Vec::new(),
            comp_links: Vec::new(),
            off: Vec::new(),
            links: Vec::new(),
            fcap: Vec::new(),
            rates: Vec::new(),
            path_buf: Vec::with_capacity(MAX_HOPS + 1),
            stats: FlowStats::default(),
            payload_delivered: 0,
            msgs_done: 0,
            bytes_total: 0,
            packets: 0,
            packet_hops: 0,
            stopped_at_duration: false,
            stopped_no_progress: false,
            groups: Vec::new(),
            free_groups: Vec::new(),
            route_epoch: 0,
            link_count: vec![0; nl],
            link_wire: vec![0; nl],
            paths: HashMap::new(),
            opts,
        };
        workload.start(&mut Net::flow(&mut sim));
        sim.workload = Some(workload);
        for i in 0..sim.faults.len() {
            let at = sim.faults[i].at;
            sim.push(at, Ev::Fault { idx: i as u32 });
        }
        Ok(sim)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn model(&self) -> &'m Model {
        self.m
    }

    /// The engine's own work so far.
    pub fn stats(&self) -> FlowStats {
        self.stats
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    fn push(&mut self, at: SimTime, ev: Ev) {
        self.q.push_at(at, ev);
    }

    /// Adds a message and its QPs (they start at `f.start`); returns its index.
    pub(crate) fn post_flow(&mut self, f: FlowSpec) -> MsgId {
        let mi = self.msg_slot(f.size_bytes);
        let mut qps = 0;
        for (k, size) in f.qp_sizes() {
            let id = self.new_flow(&f, k, size, mi, State::Pending);
            self.push(f.start, Ev::Start { flow: id });
            qps += 1;
        }
        let msg = Msg {
            src: f.src,
            dst: f.dst,
            size: f.size_bytes,
            start: f.start,
            tag: f.tag,
            qps,
            left: qps,
            finish: None,
        };
        self.put_msg(mi, msg);
        mi
    }

    /// A slot for a message of `bytes` posted now: a delivered message's (its id is not
    /// referenced any more: the workload heard its delivery), else a new one.
    fn msg_slot(&mut self, bytes: u64) -> u32 {
        self.msgs_posted += 1;
        self.bytes_total += bytes;
        self.free_msgs.pop().unwrap_or(self.msgs.len() as u32)
    }

    fn put_msg(&mut self, mi: u32, msg: Msg) {
        if (mi as usize) < self.msgs.len() {
            self.msgs[mi as usize] = msg;
        } else {
            self.msgs.push(msg);
        }
    }

    /// A QP's flow record (not queued): QP `k` of `f`, `size` payload bytes, of message `mi`.
    fn new_flow(&mut self, f: &FlowSpec, k: u32, size: u64, mi: u32, state: State) -> u32 {
        let mtu = self.m.nic_of(f.src).mtu as u64;
        let QpRoute { src_nic, hash, sport, qpn, .. } = self.router.qp_route(f, k);
        let npkts = size.div_ceil(mtu);
        let wire = size + npkts * DATA_OVERHEAD as u64;
        let last = size - (npkts - 1) * mtu;
        let cap = self.cap[self.router.nic_port(src_nic) as usize];
        self.alloc_flow(Flow {
            msg: mi,
            state,
            src: f.src.0,
            dst: f.dst.0,
            src_nic,
            hash,
            sport,
            qpn,
            last_pkt_wire: (last + DATA_OVERHEAD as u64) as u32,
            npkts,
            wire,
            rem: wire as f64,
            t_upd: f.start,
            cap,
            ..Flow::BLANK
        })
    }

    /// A lockstep group of the checked messages `specs` (see `Group`); its rounds are posted
    /// with `post_round`. Returns its id.
    pub(crate) fn new_group(&mut self, specs: &[FlowSpec]) -> GroupId {
        let g = self.free_groups.pop().unwrap_or_else(|| {
            self.groups.push(Group::default());
            self.groups.len() as u32 - 1
        });
        let mut members = std::mem::take(&mut self.groups[g as usize].members);
        members.clear();
        let (mut wire, mut cap, mut bytes) = (0u64, f64::INFINITY, 0u64);
        for f in specs {
            for (k, size) in f.qp_sizes() {
                let id = self.new_flow(f, k, size, NONE, State::Member);
                let m = &self.flows[id as usize];
                wire = wire.max(m.wire);
                cap = cap.min(m.cap);
                members.push(id);
            }
            bytes += f.size_bytes;
        }
        let grp = &mut self.groups[g as usize];
        grp.members = members;
        grp.links.clear();
        grp.mult.clear();
        grp.slot.clear();
        grp.epoch = u64::MAX;
        grp.routed = false;
        grp.tail = SimTime::ZERO;
        grp.wire = wire;
        grp.cap = cap;
        grp.bytes = bytes;
        grp.src = specs[0].src;
        grp.dst = specs[0].dst;
        grp.head = NONE;
        grp.kept = NONE;
        grp.shared.clear();
        grp.away.clear();
        grp.unsettled = 0;
        grp.live = true;
        g as u64 | (grp.gen as u64) << 32
    }

    /// Whether `g` is a live group with no round running (one may be posted, or it may end).
    pub(crate) fn group_idle(&self, g: GroupId) -> bool {
        self.groups
            .get(g as u32 as usize)
            .is_some_and(|grp| grp.live && grp.gen == (g >> 32) as u32 && grp.head == NONE)
    }

    /// Posts a round of idle group `g` starting now: one message (delivered when every
    /// member's last byte is in), one flow.
    pub(crate) fn post_round(&mut self, id: GroupId, tag: u64) -> MsgId {
        let g = id as u32;
        let mi = self.msg_slot(self.groups[g as usize].bytes);
        let grp = &self.groups[g as usize];
        let (wire, cap, bytes) = (grp.wire, grp.cap, grp.bytes);
        let msg = Msg {
            src: grp.src,
            dst: grp.dst,
            size: bytes,
            start: self.now,
            tag,
            qps: grp.members.len() as u32,
            // One arrival: the last member's.
            left: 1,
            finish: None,
        };
        let (src, dst, kept) = (grp.src.0, grp.dst.0, grp.kept);
        self.put_msg(mi, msg);
        let fl = Flow {
            msg: mi,
            state: State::Pending,
            group: g,
            src,
            dst,
            wire,
            rem: wire as f64,
            t_upd: self.now,
            cap,
            ..Flow::BLANK
        };
        let id = if kept == NONE {
            self.alloc_flow(fl)
        } else {
            // The last round's slot: parked on the links it holds, until this round starts.
            let old = self.flows[kept as usize];
            self.flows[kept as usize] = Flow { gen: old.gen.wrapping_add(1), state: old.state, ..fl };
            kept
        };
        let grp = &mut self.groups[g as usize];
        grp.head = id;
        grp.kept = id;
        self.push(self.now, Ev::Start { flow: id });
        mi
    }

    /// Ends idle group `g`: its members' records and its slot are reused.
    pub(crate) fn end_group(&mut self, id: GroupId) {
        let g = id as u32;
        let kept = self.groups[g as usize].kept;
        if kept != NONE {
            if self.flows[kept as usize].state == State::Parked {
                self.unpark_off(g, kept);
            }
            let f = &mut self.flows[kept as usize];
            f.state = State::Free;
            f.gen = f.gen.wrapping_add(1);
            self.free_flows.push(kept);
            self.groups[g as usize].kept = NONE;
        }
        self.settle_bytes(g);
        let members = std::mem::take(&mut self.groups[g as usize].members);
        for &id in &members {
            let f = &mut self.flows[id as usize];
            f.state = State::Free;
            f.gen = f.gen.wrapping_add(1);
            self.free_flows.push(id);
        }
        let grp = &mut self.groups[g as usize];
        grp.members = members;
        grp.members.clear();
        grp.live = false;
        grp.gen = grp.gen.wrapping_add(1);
        self.free_groups.push(g);
    }

    /// Traces group `g`'s members unless done since the last routing fault: its links (with
    /// how many members cross each) and its longest tail. False if a member has no path.
    /// The group's round must not be on its links.
    fn route_group(&mut self, g: u32) -> bool {
        if self.groups[g as usize].epoch == self.route_epoch {
            return self.groups[g as usize].routed;
        }
        // The rounds done so far crossed the old links.
        self.settle_bytes(g);
        let members = std::mem::take(&mut self.groups[g as usize].members);
        let mut links = std::mem::take(&mut self.groups[g as usize].links);
        let mut mult = std::mem::take(&mut self.groups[g as usize].mult);
        let mut wire_on = std::mem::take(&mut self.groups[g as usize].wire_on);
        links.clear();
        mult.clear();
        wire_on.clear();
        let (mut packets, mut packet_hops) = (0, 0);
        let mut ok = true;
        let mut tail_max = SimTime::ZERO;
        for &id in &members {
            if !self.trace(id) {
                ok = false;
                break;
            }
            let f = &self.flows[id as usize];
            let tail = tail_of(self.m, f);
            for &l in &f.path[..f.len as usize] {
                if self.link_count[l as usize] == 0 {
                    links.push(l);
                }
                self.link_count[l as usize] += 1;
                self.link_wire[l as usize] += f.wire;
            }
            packets += f.npkts;
            packet_hops += f.npkts * f.len as u64;
            tail_max = tail_max.max(tail);
        }
        let mut lim = std::mem::take(&mut self.groups[g as usize].lim);
        lim.clear();
        for &l in &links {
            lim.push(self.cap[l as usize] / self.link_count[l as usize] as f64);
            mult.push(self.link_count[l as usize]);
            wire_on.push(self.link_wire[l as usize]);
            self.link_count[l as usize] = 0;
            self.link_wire[l as usize] = 0;
        }
        if !ok {
            links.clear();
            mult.clear();
            wire_on.clear();
            lim.clear();
        }
        let grp = &mut self.groups[g as usize];
        grp.slot.clear();
        grp.slot.resize(links.len(), NONE);
        grp.members = members;
        grp.links = links;
        grp.mult = mult;
        grp.lim_min = lim.iter().copied().fold(f64::INFINITY, f64::min);
        grp.by_lim.clear();
        grp.by_lim.extend(0..lim.len() as u32);
        grp.by_lim.sort_by(|&a, &b| lim[a as usize].total_cmp(&lim[b as usize]).then(a.cmp(&b)));
        grp.shared.clear();
        grp.away.clear();
        grp.lim = lim;
        grp.wire_on = wire_on;
        grp.packets = packets;
        grp.packet_hops = packet_hops;
        grp.tail = tail_max;
        grp.epoch = self.route_epoch;
        grp.routed = ok;
        ok
    }

    /// Queues a wake-up of the workload (see `Net::wake_at`).
    pub(crate) fn push_wake(&mut self, at: SimTime, tag: u64) {
        let slot = self.wakes.hold(tag);
        self.push(at, Ev::Wake { slot });
    }

    /// Runs to completion (every message delivered, nothing due) or to the duration limit.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) {
        self.run_events(u64::MAX, progress);
    }

    /// As `run`, but stops after handling `max_events` more events (to time a stretch of a
    /// long run); may be called again to go on.
    pub fn run_events(&mut self, max_events: u64, progress: &mut dyn FnMut(Progress)) {
        let end = self.opts.duration;
        let mut next_report = 0u64;
        let last = self.events.saturating_add(max_events);
        loop {
            if self.events >= last {
                progress(self.progress());
                return;
            }
            if !self.dirty.is_empty() && !self.q.due_at_last() {
                // Everything due now is handled: new rates (their events come at or after
                // now), then move on.
                self.recompute();
            }
            let Some(t) = self.q.peek_time() else { break };
            if end.is_some_and(|e| t > e) {
                self.now = end.unwrap_or(t);
                self.stopped_at_duration = true;
                break;
            }
            let Some((t, ev)) = self.q.pop_next() else { break };
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if self.events >= next_report {
                next_report = self.events + 200_000;
                progress(self.progress());
            }
        }
        self.stopped_no_progress = !self.stopped_at_duration && self.msgs_done < self.msgs_posted;
        progress(self.progress());
    }

    fn progress(&self) -> Progress {
        Progress {
            now: self.now,
            end: self.opts.duration,
            events: self.events,
            qps_done: self.msgs_done,
            qps_total: self.msgs_posted,
            bytes_done: self.payload_delivered,
            bytes_total: self.bytes_total,
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Start { flow } => self.start_flow(flow),
            Ev::Drain { flow, gen } => {
                let f = &self.flows[flow as usize];
                if f.gen == gen && f.state == State::Active {
                    self.drained(flow);
                }
            }
            Ev::Arrive { msg } => {
                let m = &mut self.msgs[msg as usize];
                m.left -= 1;
                if m.left == 0 {
                    m.finish = Some(self.now);
                    self.payload_delivered += m.size;
                    self.msgs_done += 1;
                    if self.deliveries_wanted {
                        self.push(self.now, Ev::Deliver { msg });
                    } else if self.opts.recycle_qps {
                        self.free_msgs.push(msg);
                    }
                }
            }
            Ev::Deliver { msg } => {
                let Some(mut w) = self.workload.take() else { return };
                let m = &self.msgs[msg as usize];
                let done =
                    Delivered { msg, tag: m.tag, src: m.src, dst: m.dst, start: m.start, at: self.now, failed: false };
                w.on_delivered(done, &mut Net::flow(self));
                self.workload = Some(w);
                if self.opts.recycle_qps {
                    self.free_msgs.push(msg);
                }
            }
            Ev::Wake { slot } => {
                let tag = self.wakes.release(slot);
                let Some(mut w) = self.workload.take() else { return };
                w.on_wake(tag, &mut Net::flow(self));
                self.workload = Some(w);
            }
            Ev::Fault { idx } => self.on_fault(idx as usize),
        }
    }

    /// Traces flow `fi`'s path now; false if none stands.
    fn trace(&mut self, fi: u32) -> bool {
        let f = self.flows[fi as usize];
        let key = (f.src_nic, f.dst, f.hash);
        if let Some(&(path, len)) = self.paths.get(&key) {
            let f = &mut self.flows[fi as usize];
            (f.path, f.len) = (path, len);
            return true;
        }
        let mut buf = std::mem::take(&mut self.path_buf);
        let ok = self.router.trace_path(f.src_nic, f.dst, f.hash, MAX_HOPS, &mut buf);
        let f = &mut self.flows[fi as usize];
        f.len = if ok { buf.len() as u8 } else { 0 };
        f.path = [NONE; MAX_HOPS];
        if ok {
            f.path[..buf.len()].copy_from_slice(&buf);
            let (path, len) = (f.path, f.len);
            if self.paths.len() >= MAX_CACHED_PATHS {
                self.paths.clear();
            }
            self.paths.insert(key, (path, len));
        }
        self.path_buf = buf;
        ok
    }

    fn start_flow(&mut self, fi: u32) {
        let g = self.flows[fi as usize].group;
        if g != NONE
            && self.flows[fi as usize].state == State::Parked
            && self.groups[g as usize].epoch != self.route_epoch
        {
            // Routes changed since the last round: off the old links, traced again below.
            self.unpark_off(g, fi);
        }
        let ok = if g == NONE { self.trace(fi) } else { self.route_group(g) };
        if ok {
            self.attach(fi);
        } else {
            self.flows[fi as usize].state = State::Stalled;
        }
        self.flows[fi as usize].t_upd = self.now;
    }

    /// A slot for `fl`: a free one (its generation bumped, so stale events miss it) or a new one.
    fn alloc_flow(&mut self, fl: Flow) -> u32 {
        match self.free_flows.pop() {
            Some(id) => {
                let gen = self.flows[id as usize].gen.wrapping_add(1);
                self.flows[id as usize] = Flow { gen, ..fl };
                id
            }
            None => {
                self.flows.push(fl);
                self.flow_mark.push(0);
                (self.flows.len() - 1) as u32
            }
        }
    }

    /// Puts flow `fi` on the links of its path (traced), as active. A parked group's head
    /// joins only the links it is away from.
    fn attach(&mut self, fi: u32) {
        let f = &mut self.flows[fi as usize];
        let parked = f.state == State::Parked;
        f.state = State::Active;
        f.t_upd = self.now;
        if f.group == NONE {
            let (path, len) = (f.path, f.len as usize);
            for (h, &l) in path[..len].iter().enumerate() {
                self.flows[fi as usize].slot[h] = self.link(fi, NONE, h, l as usize, h == 0);
            }
        } else if parked {
            let g = f.group;
            let away = std::mem::take(&mut self.groups[g as usize].away);
            // What joining every link would do: the first link refilled, then each shared one.
            if away.first() != Some(&0) {
                let l = self.groups[g as usize].links[0] as usize;
                self.mark_dirty(l);
            }
            for &h in &away {
                let l = self.groups[g as usize].links[h as usize] as usize;
                self.groups[g as usize].slot[h as usize] = self.link(fi, g, h as usize, l, h == 0);
            }
            let grp = &mut self.groups[g as usize];
            grp.away = away;
            grp.away.clear();
        } else {
            let g = f.group;
            for h in 0..self.groups[g as usize].links.len() {
                let l = self.groups[g as usize].links[h] as usize;
                self.groups[g as usize].slot[h] = self.link(fi, g, h, l, h == 0);
            }
        }
        self.active += 1;
        self.stats.peak_active = self.stats.peak_active.max(self.active);
    }

    /// Takes flow `fi` off its links (its rate settled first).
    fn detach(&mut self, fi: u32) {
        self.settle(fi);
        let f = self.flows[fi as usize];
        if f.group == NONE {
            for h in 0..f.len as usize {
                self.unlink(f.path[h] as usize, f.slot[h] as usize);
            }
        } else {
            let grp = &mut self.groups[f.group as usize];
            let (links, slot) = (std::mem::take(&mut grp.links), std::mem::take(&mut grp.slot));
            for (&l, &s) in links.iter().zip(&slot) {
                self.unlink(l as usize, s as usize);
            }
            let grp = &mut self.groups[f.group as usize];
            (grp.links, grp.slot) = (links, slot);
        }
        self.stop(fi);
    }

    /// Flow `fi`, off its links, sends no more.
    fn stop(&mut self, fi: u32) {
        let f = &mut self.flows[fi as usize];
        f.rate = 0.0;
        f.gen = f.gen.wrapping_add(1);
        self.active -= 1;
    }

    /// Group head `fi`'s round is over: it leaves the links it shares (as `detach` would)
    /// and stays, parked, on those it holds alone.
    fn park(&mut self, fi: u32) {
        self.settle(fi);
        let g = self.flows[fi as usize].group as usize;
        // Leaving a shared link takes it out of `shared` (and `away` is empty): the two
        // lists change places.
        let shared = std::mem::take(&mut self.groups[g].shared);
        for &h in &shared {
            let (l, s) = (self.groups[g].links[h as usize], self.groups[g].slot[h as usize]);
            self.unlink(l as usize, s as usize);
        }
        let grp = &mut self.groups[g];
        debug_assert!(grp.shared.is_empty() && grp.away.is_empty());
        grp.shared = std::mem::replace(&mut grp.away, shared);
        self.flows[fi as usize].state = State::Parked;
        self.stop(fi);
    }

    /// Takes parked head `fi` of group `g` off the links it still holds (the group ends, or
    /// its routes changed); it is then off every link.
    fn unpark_off(&mut self, g: u32, fi: u32) {
        let grp = &mut self.groups[g as usize];
        let (links, mut away) = (std::mem::take(&mut grp.links), std::mem::take(&mut grp.away));
        let mut next_away = away.iter().peekable();
        for (h, &l) in links.iter().enumerate() {
            if next_away.next_if_eq(&&(h as u32)).is_some() {
                continue;
            }
            // Held alone: the list is this entry, its count the convention's 1.
            let lf = &mut self.link_flows[l as usize];
            debug_assert!(lf.len() == 1 && lf[0].0 == fi);
            lf.clear();
            self.lk[l as usize].n = 0;
        }
        away.clear();
        let grp = &mut self.groups[g as usize];
        (grp.links, grp.away) = (links, away);
        self.flows[fi as usize].state = State::Pending;
    }

    /// Parked head `fi` (group `g`) held link `l` (its `h`-th) alone; a flow is joining it:
    /// the group leaves it until its next round.
    #[cold]
    fn evict(&mut self, l: usize, fi: u32, h: u32) {
        self.link_flows[l].clear();
        self.lk[l].n = 0;
        let g = self.flows[fi as usize].group as usize;
        let away = &mut self.groups[g].away;
        if let Err(i) = away.binary_search(&h) {
            away.insert(i, h);
        }
    }

    /// Group `g`'s rounds done since the last call: their bytes on each of its links.
    fn settle_bytes(&mut self, g: u32) {
        let grp = &mut self.groups[g as usize];
        let k = std::mem::take(&mut grp.unsettled);
        if k > 0 {
            for (&l, &w) in grp.links.iter().zip(&grp.wire_on) {
                self.tx_bytes[l as usize] += w * k;
            }
        }
    }

    fn mark_dirty(&mut self, l: usize) {
        if self.lk[l].mark != u32::MAX {
            self.lk[l].mark = u32::MAX;
            self.dirty.push(l as u32);
        }
    }

    /// Adds flow `fi` (of lockstep group `group`, or `NONE`), for which `l` is link `h`, to
    /// link `l`'s list and returns its index there; the link is to be refilled if it is the
    /// flow's `first` or a shared one.
    fn link(&mut self, fi: u32, group: u32, h: usize, l: usize, first: bool) -> u32 {
        if let [(other, oh)] = self.link_flows[l][..] {
            if self.flows[other as usize].state == State::Parked {
                self.evict(l, other, oh);
            }
        }
        let slot = self.link_flows[l].len() as u32;
        self.link_flows[l].push((fi, h as u32));
        self.lk[l].n += 1;
        // Sharing the link starts for the one that joins, and for the one that was alone.
        if self.lk[l].n > 1 && group != NONE {
            sorted_insert(&mut self.groups[group as usize].shared, h as u32);
        }
        if self.lk[l].n == 2 {
            let (o, oh) = self.link_flows[l][0];
            let other = self.flows[o as usize].group;
            if other != NONE {
                sorted_insert(&mut self.groups[other as usize].shared, oh);
            }
        }
        // The first link finds the flow, a shared one the others; a link of its own beyond
        // the first would find nothing more (same component, same order).
        if first || self.lk[l].n > 1 {
            self.mark_dirty(l);
        }
        slot
    }

    /// Removes the (active) flow at index `s` of link `l`'s list; the flow moved into its
    /// place learns its new index.
    fn unlink(&mut self, l: usize, s: usize) {
        let (gone, gh) = self.link_flows[l].swap_remove(s);
        let gone = self.flows[gone as usize].group;
        self.lk[l].n -= 1;
        // Sharing the link ends for the one that leaves, and for the one left alone.
        if self.lk[l].n >= 1 && gone != NONE {
            sorted_remove(&mut self.groups[gone as usize].shared, gh);
        }
        if self.lk[l].n == 1 {
            let (o, oh) = self.link_flows[l][0];
            let left = self.flows[o as usize].group;
            if left != NONE {
                sorted_remove(&mut self.groups[left as usize].shared, oh);
            }
        }
        if let Some(&(moved, mh)) = self.link_flows[l].get(s) {
            let g = &mut self.flows[moved as usize];
            if g.group == NONE {
                g.slot[mh as usize] = s as u32;
            } else {
                // Another group's head (a group is on each of its links once).
                self.groups[g.group as usize].slot[mh as usize] = s as u32;
            }
        }
        // A link left empty has no flow to refill.
        if self.lk[l].n > 0 {
            self.mark_dirty(l);
        }
    }

    /// Counts flow `fi`'s bytes sent since `t_upd` at its rate.
    fn settle(&mut self, fi: u32) {
        let now = self.now;
        let f = &mut self.flows[fi as usize];
        if now > f.t_upd {
            f.rem = (f.rem - f.rate * (now - f.t_upd).0 as f64 * 1e-12 / 8.0).max(0.0);
        }
        f.t_upd = now;
    }

    /// Flow `fi` has sent its last byte: it leaves its links; the byte arrives a tail later.
    fn drained(&mut self, fi: u32) {
        let f = self.flows[fi as usize];
        let m = self.m;
        let tail;
        if f.group == NONE {
            self.detach(fi);
            tail = tail_of(m, &f);
            for &l in &f.path[..f.len as usize] {
                self.tx_bytes[l as usize] += f.wire;
            }
            self.packets += f.npkts;
            self.packet_hops += f.npkts * f.len as u64;
            self.flows[fi as usize].state = State::Free;
            self.free_flows.push(fi);
        } else {
            // Each member's own bytes and packets (summed per link when traced, put on the
            // links later); the round arrives with its last member.
            self.park(fi);
            let grp = &mut self.groups[f.group as usize];
            grp.head = NONE;
            grp.unsettled += 1;
            tail = grp.tail;
            self.packets += grp.packets;
            self.packet_hops += grp.packet_hops;
        }
        self.push(self.now + tail, Ev::Arrive { msg: f.msg });
    }

    /// A fault: the router takes it; every started flow is re-traced, and moves if its path
    /// changed.
    #[cold]
    fn on_fault(&mut self, idx: usize) {
        self.faults_due -= 1;
        let action = self.faults[idx].action;
        // Host-side faults change no path (a slow drain and a NIC's new settings are the
        // packet engine's: the flow engine has no receive buffers or per-QP control).
        if matches!(
            action,
            FaultAction::Host { .. }
                | FaultAction::Drain { .. }
                | FaultAction::NicProfile { .. }
                | FaultAction::Qps { .. }
        ) {
            return;
        }
        for p in self.router.apply(action, self.now).into_iter().flatten() {
            self.link_changes[p as usize] += 1;
        }
        // Groups are traced again when next used (or below, if a round runs), flows anew.
        self.route_epoch += 1;
        self.paths.clear();
        if matches!(action, FaultAction::HashFields { .. }) {
            for f in self.flows.iter_mut() {
                if f.state != State::Free && f.group == NONE {
                    f.hash = self.router.flow_hash(f.src, f.dst, f.sport as u32, f.qpn);
                }
            }
        }
        let mut old = [NONE; MAX_HOPS];
        for fi in 0..self.flows.len() as u32 {
            let f = self.flows[fi as usize];
            match f.state {
                State::Active if f.group != NONE => {
                    // Off its links and onto the new ones (often the same: its rate is then
                    // given back by the recomputation).
                    self.detach(fi);
                    if self.route_group(f.group) {
                        self.attach(fi);
                    } else {
                        self.flows[fi as usize].state = State::Stalled;
                    }
                }
                State::Stalled if f.group != NONE => {
                    if self.route_group(f.group) {
                        self.settle(fi);
                        self.attach(fi);
                    }
                }
                State::Active => {
                    old.copy_from_slice(&f.path);
                    let len = f.len;
                    if self.trace(fi) && self.flows[fi as usize].path == old && self.flows[fi as usize].len == len {
                        continue;
                    }
                    // Off the old links, then onto the new ones if any.
                    let new = (self.flows[fi as usize].path, self.flows[fi as usize].len);
                    let g = &mut self.flows[fi as usize];
                    g.path = old;
                    g.len = len;
                    self.detach(fi);
                    let g = &mut self.flows[fi as usize];
                    (g.path, g.len) = new;
                    if g.len > 0 {
                        self.attach(fi);
                    } else {
                        g.state = State::Stalled;
                    }
                }
                State::Stalled => {
                    if self.trace(fi) {
                        self.settle(fi);
                        self.attach(fi);
                    }
                }
                // A parked group is traced again when its next round starts.
                State::Pending | State::Free | State::Member | State::Parked => {}
            }
        }
    }

    /// New max-min rates for the connected component of the links whose flows changed.
    fn recompute(&mut self) {
        self.stats.recomputes += 1;
        self.mark = self.mark.wrapping_add(1);
        if self.mark == u32::MAX || self.mark == 0 {
            // (Dirty links are listed in `dirty`: their marks may go.)
            self.flow_mark.iter_mut().for_each(|x| *x = 0);
            self.lk.iter_mut().for_each(|x| x.mark = 0);
            self.mark = 1;
        }
        let mark = self.mark;
        // The component: links ↔ active flows, from the dirty links.
        self.comp_links.clear();
        self.comp_flows.clear();
        for &l in &self.dirty {
            self.lk[l as usize].mark = mark;
            self.comp_links.push(l);
        }
        self.dirty.clear();
        // Each flow's input to the fill is built as the flow is met: a link no other flow
        // crosses bounds it as a cap does (its capacity; a round's: capacity / members), so
        // the fill sees only shared links, and only those lead to more flows.
        self.off.clear();
        self.links.clear();
        self.fcap.clear();
        self.off.push(0);
        let mut i = 0;
        while i < self.comp_links.len() {
            let l = self.comp_links[i] as usize;
            i += 1;
            for &(fi, _) in &self.link_flows[l] {
                if self.flow_mark[fi as usize] == mark {
                    continue;
                }
                let f = &self.flows[fi as usize];
                if f.state != State::Active {
                    // A group parked on a link it holds alone, since the link was marked.
                    continue;
                }
                self.flow_mark[fi as usize] = mark;
                self.comp_flows.push(fi);
                let mut cap = f.cap;
                if f.group == NONE {
                    for &l2 in &f.path[..f.len as usize] {
                        let at = &mut self.lk[l2 as usize];
                        if at.n == 1 {
                            cap = cap.min(at.cap);
                            continue;
                        }
                        self.links.push(l2);
                        if at.mark != mark {
                            at.mark = mark;
                            self.comp_links.push(l2);
                        }
                    }
                } else {
                    // A round crosses a link once per member on it; most of a ring's links
                    // are its own, its shared ones are listed.
                    let grp = &self.groups[f.group as usize];
                    if grp.shared.is_empty() {
                        cap = cap.min(grp.lim_min);
                    } else if let Some(&h) = grp.by_lim.iter().find(|h| grp.shared.binary_search(h).is_err()) {
                        // The least bound of the links it has alone: the first by `lim` not shared.
                        cap = cap.min(grp.lim[h as usize]);
                    }
                    for &h in &grp.shared {
                        let l2 = grp.links[h as usize];
                        for _ in 0..grp.mult[h as usize] {
                            self.links.push(l2);
                        }
                        let at = &mut self.lk[l2 as usize];
                        if at.mark != mark {
                            at.mark = mark;
                            self.comp_links.push(l2);
                        }
                    }
                }
                self.off.push(self.links.len() as u32);
                self.fcap.push(cap);
            }
        }
        self.stats.flows_refilled += self.comp_flows.len() as u64;
        self.stats.links_refilled += self.comp_links.len() as u64;
        self.fill.fill(&self.cap, &self.off, &self.links, &self.fcap, &mut self.rates);
        for k in 0..self.comp_flows.len() {
            let fi = self.comp_flows[k];
            let r = self.rates[k];
            if r == self.flows[fi as usize].rate {
                continue;
            }
            self.stats.rate_changes += 1;
            self.settle(fi);
            let f = &mut self.flows[fi as usize];
            f.rate = r;
            f.gen = f.gen.wrapping_add(1);
            if r > 0.0 {
                let ps = (f.rem * 8.0 / r * 1e12).ceil();
                let at = SimTime(self.now.0.saturating_add(if ps.is_finite() { ps as u64 } else { u64::MAX / 4 }));
                let gen = f.gen;
                self.push(at, Ev::Drain { flow: fi, gen });
            }
        }
    }

    /// The run's counters in the packet engine's snapshot layout (see the module doc for what
    /// stays zero: queues, pauses, marks, drops).
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_with(true)
    }

    /// The snapshot without per-message rows.
    pub fn snapshot_totals(&self) -> Snapshot {
        self.snapshot_with(false)
    }

    fn snapshot_with(&self, records: bool) -> Snapshot {
        let mut s = Snapshot::idle(self.m);
        s.engine = EngineKind::Flow.name();
        s.now = self.now;
        s.seed = self.opts.seed;
        s.sample_interval = None;
        s.events = self.events;
        s.stopped_at_duration = self.stopped_at_duration;
        s.stopped_no_progress = self.stopped_no_progress;
        // Groups' rounds whose bytes are not on their links yet (`Group::unsettled`).
        let mut tx = std::borrow::Cow::Borrowed(&self.tx_bytes);
        for grp in self.groups.iter().filter(|g| g.unsettled > 0) {
            let tx = tx.to_mut();
            for (&l, &w) in grp.links.iter().zip(&grp.wire_on) {
                tx[l as usize] += w * grp.unsettled;
            }
        }
        for (i, p) in s.ports.iter_mut().enumerate() {
            p.tx_bytes = tx[i];
            p.up = self.router.is_up(i as u32);
            p.link_state_changes = self.link_changes[i];
        }
        let c = &mut s.counters;
        c.sent = self.packets;
        c.delivered = self.packets;
        c.data_sent = self.packets;
        c.data_delivered = self.packets;
        c.payload_delivered_bytes = self.payload_delivered;
        c.packet_hops = self.packet_hops;
        c.data_packet_hops = self.packet_hops;
        if records {
            s.flows = self
                .msgs
                .iter()
                .map(|m| FlowRecord {
                    src: m.src,
                    dst: m.dst,
                    size_bytes: m.size,
                    start: m.start,
                    tag: m.tag,
                    qps: m.qps,
                    delivered_bytes: if m.finish.is_some() { m.size } else { 0 },
                    retransmitted_packets: 0,
                    cnps_received: 0,
                    failed_qps: 0,
                    failed: false,
                    finish: m.finish,
                    sender_done: m.finish,
                })
                .collect();
        }
        s
    }
}

/// Inserts `x` into ascending `v` (if absent).
fn sorted_insert(v: &mut Vec<u32>, x: u32) {
    if let Err(i) = v.binary_search(&x) {
        v.insert(i, x);
    }
}

/// Removes `x` from ascending `v` (if present).
fn sorted_remove(v: &mut Vec<u32>, x: u32) {
    if let Ok(i) = v.binary_search(&x) {
        v.remove(i);
    }
}

/// How long after flow `f`'s last byte leaves its NIC it arrives: every link's propagation
/// delay, and the last packet's store-and-forward on every link after the first.
fn tail_of(m: &Model, f: &Flow) -> SimTime {
    let mut tail = SimTime::ZERO;
    for (h, &l) in f.path[..f.len as usize].iter().enumerate() {
        let p = m.port(PortId(l));
        tail += p.delay;
        if h > 0 {
            tail += p.speed.serialize(f.last_pkt_wire as u64);
        }
    }
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn star(n: usize) -> Model {
        crate::engine::test_support::star(n, "", "")
    }

    fn spec(m: &Model, src: &str, dst: &str, size: u64, start_ns: u64) -> FlowSpec {
        FlowSpec {
            src: m.node_by_name(src).unwrap(),
            dst: m.node_by_name(dst).unwrap(),
            size_bytes: size,
            start: SimTime(start_ns * 1000),
            class: m.qos.rdma_class(),
            qps: 1,
            origin: 0,
            tag: 0,
            sport: None,
            transport: crate::traffic::Transport::Rdma,
        }
    }

    fn finishes(m: &Model, flows: Vec<FlowSpec>) -> Vec<SimTime> {
        let mut sim = FlowSim::new(m, flows, Vec::new(), SimOptions::default()).unwrap();
        sim.run(&mut |_| {});
        sim.msgs.iter().map(|m| m.finish.expect("delivered") - m.start).collect()
    }

    #[test]
    fn one_packet_takes_its_store_and_forward_time() {
        let m = star(2);
        // 1000 B payload + 82 B headers = 1082 B: 86.56 ns per hop at 100 Gb/s, two hops,
        // plus 2 × 10 ns of cable.
        let t = finishes(&m, vec![spec(&m, "h0", "h1", 1000, 0)]);
        assert_eq!(t, vec![SimTime(2 * 86_560 + 2 * 10_000)]);
    }

    use crate::workload::{Delivered, GroupId, Message};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Posts `rounds` rounds of one lockstep group of `group` (pairs of host names, `size` B
    /// each) and the plain messages `plain` at time 0; logs (tag, delivery time) of each.
    struct Rounds {
        group: Vec<(NodeId, NodeId)>,
        plain: Vec<(NodeId, NodeId, u64)>,
        plain_at: SimTime,
        size: u64,
        rounds: u64,
        g: Option<GroupId>,
        log: Rc<RefCell<Vec<(u64, SimTime)>>>,
        refusals: Rc<RefCell<Vec<String>>>,
    }

    impl Workload for Rounds {
        fn start(&mut self, net: &mut Net<'_, '_>) {
            let msgs: Vec<Message> = self.group.iter().map(|&(a, b)| Message::new(a, b, self.size)).collect();
            let g = net.lockstep_group(&msgs).unwrap();
            net.post_round(g, 0).unwrap();
            // One round at a time, and a running group cannot end.
            let mut r = self.refusals.borrow_mut();
            r.extend(net.post_round(g, 9).err().map(|e| e.0));
            r.extend(net.end_group(g).err().map(|e| e.0));
            r.extend(net.post_round(g + 1, 9).err().map(|e| e.0));
            self.g = Some(g);
            for (i, &(a, b, size)) in self.plain.iter().enumerate() {
                let msg = Message { start: Some(self.plain_at), ..Message::new(a, b, size).tag(100 + i as u64) };
                net.post(msg).unwrap();
            }
        }

        fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
            self.log.borrow_mut().push((done.tag, done.at));
            if done.tag < 100 {
                let g = self.g.unwrap();
                if done.tag + 1 < self.rounds {
                    net.post_round(g, done.tag + 1).unwrap();
                } else {
                    net.end_group(g).unwrap();
                    self.refusals.borrow_mut().extend(net.post_round(g, 9).err().map(|e| e.0));
                    // The slot serves a new group; the old handle is stale, refused.
                    let msgs: Vec<Message> = self.group.iter().map(|&(a, b)| Message::new(a, b, self.size)).collect();
                    let again = net.lockstep_group(&msgs).unwrap();
                    assert_eq!(again as u32, g as u32, "the slot is reused");
                    self.refusals.borrow_mut().extend(net.post_round(g, 9).err().map(|e| e.0));
                    self.refusals.borrow_mut().extend(net.end_group(g).err().map(|e| e.0));
                    net.end_group(again).unwrap();
                }
            }
        }
    }

    fn rounds(
        m: &Model,
        group: &[(&str, &str)],
        plain: &[(&str, &str, u64)],
        size: u64,
        n: u64,
        plain_at: SimTime,
    ) -> (Vec<(u64, SimTime)>, Vec<String>, Snapshot, u64) {
        let id = |h: &str| m.node_by_name(h).unwrap();
        let log = Rc::new(RefCell::new(Vec::new()));
        let refusals = Rc::new(RefCell::new(Vec::new()));
        let w = Rounds {
            group: group.iter().map(|&(a, b)| (id(a), id(b))).collect(),
            plain: plain.iter().map(|&(a, b, s)| (id(a), id(b), s)).collect(),
            plain_at,
            size,
            rounds: n,
            g: None,
            log: log.clone(),
            refusals: refusals.clone(),
        };
        let mut sim = FlowSim::with_workload(m, Box::new(w), Vec::new(), SimOptions::default()).unwrap();
        sim.run(&mut |_| {});
        let l = log.borrow().clone();
        let r = refusals.borrow().clone();
        (l, r, sim.snapshot(), sim.packets)
    }

    const PKT: f64 = 4096.0 + 82.0;

    /// Picoseconds `pkts` full packets take at `gbps`.
    fn wire_ps(pkts: f64, gbps: f64) -> f64 {
        pkts * PKT * 8.0 / (gbps * 1e9) * 1e12
    }

    /// Cable and last-packet store-and-forward on a star's two-link path.
    fn tail_ps() -> f64 {
        20_000.0 + PKT * 8.0 / 100e9 * 1e12
    }

    #[test]
    fn a_lockstep_round_runs_every_member_at_the_slowest_members_share() {
        let m = star(6);
        // Member h0 → h1 shares h1's link with the plain flow h4 → h1: both get 50 Gb/s, and
        // so does the other member, h2 → h3, alone on its links (lockstep). Once the round is
        // in, the plain flow has h1 to itself.
        let size = 20 * 4096;
        let (log, refusals, s, _) =
            rounds(&m, &[("h0", "h1"), ("h2", "h3")], &[("h4", "h1", 40 * 4096)], size, 1, SimTime::ZERO);
        assert_eq!(refusals.len(), 6, "{refusals:?}");
        let round = log.iter().find(|e| e.0 == 0).unwrap().1;
        let plain = log.iter().find(|e| e.0 == 100).unwrap().1;
        let want_round = wire_ps(20.0, 50.0) + tail_ps();
        let want_plain = wire_ps(20.0, 50.0) + wire_ps(20.0, 100.0) + tail_ps();
        assert!((round.0 as f64 - want_round).abs() < 2.0, "{round:?} vs {want_round}");
        assert!((plain.0 as f64 - want_plain).abs() < 2.0, "{plain:?} vs {want_plain}");
        // Each member's bytes on each of its links, once.
        let link = |a: &str| m.node(m.node_by_name(a).unwrap()).first_port as usize;
        assert_eq!(s.ports[link("h2")].tx_bytes, 20 * PKT as u64);
        assert_eq!(s.ports[link("h0")].tx_bytes, 20 * PKT as u64);
        assert_eq!(s.ports[link("h4")].tx_bytes, 40 * PKT as u64);
    }

    #[test]
    fn members_sharing_a_link_count_on_it_once_each_and_rounds_follow_one_another() {
        let m = star(4);
        // h0 → h1 and h0 → h2 both leave on h0's link, which no other flow crosses: 50 Gb/s
        // each. Three rounds, each posted on the last one's delivery.
        let (log, _, s, packets) = rounds(&m, &[("h0", "h1"), ("h0", "h2")], &[], 10 * 4096, 3, SimTime::ZERO);
        let per = wire_ps(10.0, 50.0) + tail_ps();
        let times: Vec<f64> = log.iter().map(|e| e.1 .0 as f64).collect();
        assert_eq!(log.iter().map(|e| e.0).collect::<Vec<_>>(), vec![0, 1, 2]);
        for (k, t) in times.iter().enumerate() {
            assert!((t - per * (k + 1) as f64).abs() < 4.0, "round {k}: {t} vs {}", per * (k + 1) as f64);
        }
        // Three rounds of two 10-packet members: 60 packets, 3 messages.
        assert_eq!(packets, 60);
        assert_eq!(s.flows.len(), 3);
    }

    #[test]
    fn a_flow_joining_a_rounds_link_slows_the_round_until_it_leaves() {
        let m = star(6);
        // The round (40 packets per member) runs alone at 100 Gb/s; after 10 packets, a
        // 10-packet flow joins h1's link: both at 50 Gb/s until it is done (10 more packets
        // of the round), then the round is alone again for its last 20.
        let ten = wire_ps(10.0, 100.0);
        let t1 = SimTime(ten.round() as u64);
        let (log, _, _, _) = rounds(&m, &[("h0", "h1"), ("h2", "h3")], &[("h4", "h1", 10 * 4096)], 40 * 4096, 1, t1);
        let round = log.iter().find(|e| e.0 == 0).unwrap().1 .0 as f64;
        let plain = log.iter().find(|e| e.0 == 100).unwrap().1 .0 as f64;
        let want_plain = t1.0 as f64 + wire_ps(10.0, 50.0) + tail_ps();
        let want_round = t1.0 as f64 + wire_ps(10.0, 50.0) + wire_ps(20.0, 100.0) + tail_ps();
        assert!((plain - want_plain).abs() < 3.0, "{plain} vs {want_plain}");
        assert!((round - want_round).abs() < 3.0, "{round} vs {want_round}");
    }

    #[test]
    fn a_flow_that_joins_a_link_between_rounds_shares_it_with_the_next_round() {
        let m = star(6);
        // Round 1 (20 packets per member) runs alone at 100 Gb/s and is delivered a tail
        // after its last byte leaves. 5 ns after that byte, while the group is between
        // rounds, a 20-packet flow h4 → h1 takes h1's link (the group held it alone): alone at
        // 100 Gb/s until round 2 starts, then both at 50 until the flow is done, then round 2
        // alone at 100 again.
        let drain1 = wire_ps(20.0, 100.0);
        let p = drain1 + 5_000.0;
        let d1 = drain1 + tail_ps();
        let (log, _, s, packets) =
            rounds(&m, &[("h0", "h1"), ("h2", "h3")], &[("h4", "h1", 20 * 4096)], 20 * 4096, 2, SimTime(p as u64));
        let sent_alone = (d1 - p) * 100e9 / 8.0 / 1e12;
        let left = 20.0 * PKT - sent_alone;
        let shared_ps = left * 8.0 / 50e9 * 1e12;
        let want_plain = d1 + shared_ps + tail_ps();
        let want_round2 = d1 + shared_ps + (20.0 * PKT - left) * 8.0 / 100e9 * 1e12 + tail_ps();
        let at = |tag| log.iter().find(|e| e.0 == tag).unwrap().1 .0 as f64;
        assert!((at(0) - d1).abs() < 2.0, "{} vs {d1}", at(0));
        assert!((at(100) - want_plain).abs() < 4.0, "{} vs {want_plain}", at(100));
        assert!((at(1) - want_round2).abs() < 4.0, "{} vs {want_round2}", at(1));
        // Both rounds' bytes on each member's links, and the flow's on h1's.
        let host = |a: &str| m.node(m.node_by_name(a).unwrap());
        let to_h1 = m.port(PortId(host("h1").first_port)).peer.0 as usize;
        assert_eq!(s.ports[host("h0").first_port as usize].tx_bytes, 40 * PKT as u64);
        assert_eq!(s.ports[to_h1].tx_bytes, 60 * PKT as u64);
        // Two rounds of two 20-packet members, and the flow's 20.
        assert_eq!(packets, 100);
    }

    #[test]
    fn two_flows_into_one_host_share_its_link_and_the_survivor_speeds_up() {
        let m = star(3);
        // 40 packets of 4096 B each, and 20: the second finishes at half rate, then the first
        // has the link to itself.
        let (a, b) = (40 * 4096, 20 * 4096);
        let t = finishes(&m, vec![spec(&m, "h1", "h0", a, 0), spec(&m, "h2", "h0", b, 0)]);
        let pkt = 4096.0 + 82.0;
        let wire_ps = |pkts: f64| pkts * pkt * 8.0 / 100e9 * 1e12;
        let tail = (10_000 + 10_000) as f64 + pkt * 8.0 / 100e9 * 1e12;
        // Flow b: 20 packets at 50 Gb/s.
        let tb = 2.0 * wire_ps(20.0) + tail;
        // Flow a: 20 packets' worth at 50 Gb/s in the same time, the other 20 at 100.
        let ta = 2.0 * wire_ps(20.0) + wire_ps(20.0) + tail;
        assert!((t[1].0 as f64 - tb).abs() < 2.0, "{t:?} vs {tb}");
        assert!((t[0].0 as f64 - ta).abs() < 2.0, "{t:?} vs {ta}");
    }
}
