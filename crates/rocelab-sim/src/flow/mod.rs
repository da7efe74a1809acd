//! The flow-level engine: the same workloads as the packet engine, answered in seconds at
//! fabric scale by giving every flow its max-min fair rate instead of moving its packets.
//!
//! # Model
//!
//! * A message striped over Q queue pairs is Q flows. Each QP gets its NICs, UDP source port
//!   and 5-tuple hash from the packet engine's own code (`Sim::qp_route`, same draws in the
//!   same order), and its path by asking each switch on the way what `ecmp_choose` picks
//!   for that hash (`Sim::trace_path`): same fabric, seed and source port, same links.
//!   The packet engine held here (`router`) runs no packet; it only answers for paths and
//!   takes the fault schedule's link, route, seed and hash-field changes.
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

use crate::engine::{EngineKind, Fault, FaultAction, Progress, QpRoute, Sim, SimOptions};
use crate::event::EventQueue;
use crate::packet::DATA_OVERHEAD;
use crate::snapshot::{FlowRecord, Snapshot};
use crate::traffic::FlowSpec;
use crate::workload::{Delivered, FixedFlows, MsgId, Net, WakeSlots, Workload};
use maxmin::WaterFill;
use rocelab_model::{Diagnostic, Model, NodeId, PortId, SimTime};

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
}

/// One QP's flow.
#[derive(Clone, Copy)]
struct Flow {
    msg: u32,
    state: State,
    len: u8,
    gen: u32,
    src: u32,
    dst: u32,
    src_nic: u32,
    hash: u32,
    sport: u16,
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
    /// The packet engine's routing, hashing and fault state; it runs nothing.
    router: Sim<'m>,
    now: SimTime,
    q: EventQueue<Ev>,
    events: u64,
    faults: Vec<Fault>,
    faults_due: usize,
    /// Per link (model port, egress direction): capacity in bits/s and its active flows.
    cap: Vec<f64>,
    link_flows: Vec<Vec<u32>>,
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
    /// Links whose flows changed since the last recomputation (deduplicated by `link_mark`).
    dirty: Vec<u32>,
    link_mark: Vec<u32>,
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
}

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
        let router_opts = SimOptions { seed: opts.seed, engine: EngineKind::Packet, ..SimOptions::default() };
        let router = Sim::new(m, Vec::new(), Vec::new(), router_opts)?;
        let nl = m.ports.len();
        let mut sim = FlowSim {
            m,
            router,
            now: SimTime::ZERO,
            q: EventQueue::with_capacity(1024),
            events: 0,
            faults_due: faults.len(),
            faults,
            cap: m.ports.iter().map(|p| p.speed.0 as f64).collect(),
            link_flows: vec![Vec::new(); nl],
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
            link_mark: vec![0; nl],
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
        self.q.push(at, ev);
    }

    /// Adds a message and its QPs (they start at `f.start`); returns its index.
    pub(crate) fn post_flow(&mut self, f: FlowSpec) -> MsgId {
        // A delivered message's slot when recycling (its id is not referenced any more: the
        // workload heard its delivery), else a new one.
        let mi = self.free_msgs.pop().unwrap_or(self.msgs.len() as u32);
        self.msgs_posted += 1;
        self.bytes_total += f.size_bytes;
        let mtu = self.m.nic_of(f.src).mtu as u64;
        let per = f.size_bytes / f.qps as u64;
        let mut qps = 0;
        for k in 0..f.qps {
            let size = if k == 0 { per + f.size_bytes % f.qps as u64 } else { per };
            if size == 0 {
                continue;
            }
            let QpRoute { src_nic, hash, sport, .. } = self.router.qp_route(&f, k);
            let npkts = size.div_ceil(mtu);
            let wire = size + npkts * DATA_OVERHEAD as u64;
            let last = size - (npkts - 1) * mtu;
            let cap = self.cap[self.router.nic_port(src_nic) as usize];
            let fl = Flow {
                msg: mi,
                state: State::Pending,
                len: 0,
                gen: 0,
                src: f.src.0,
                dst: f.dst.0,
                src_nic,
                hash,
                sport,
                last_pkt_wire: (last + DATA_OVERHEAD as u64) as u32,
                npkts,
                wire,
                rem: wire as f64,
                rate: 0.0,
                t_upd: f.start,
                cap,
                path: [NONE; MAX_HOPS],
                slot: [NONE; MAX_HOPS],
            };
            let id = match self.free_flows.pop() {
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
            };
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
        if (mi as usize) < self.msgs.len() {
            self.msgs[mi as usize] = msg;
        } else {
            self.msgs.push(msg);
        }
        mi
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
            let Some(t) = self.q.peek_time(|_| {}) else { break };
            if end.is_some_and(|e| t > e) {
                self.now = end.unwrap_or(t);
                self.stopped_at_duration = true;
                break;
            }
            let Some((t, ev)) = self.q.pop() else { break };
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
        let mut buf = std::mem::take(&mut self.path_buf);
        let ok = self.router.trace_path(f.src_nic, f.dst, f.hash, MAX_HOPS, &mut buf);
        let f = &mut self.flows[fi as usize];
        f.len = if ok { buf.len() as u8 } else { 0 };
        f.path = [NONE; MAX_HOPS];
        if ok {
            f.path[..buf.len()].copy_from_slice(&buf);
        }
        self.path_buf = buf;
        ok
    }

    fn start_flow(&mut self, fi: u32) {
        if self.trace(fi) {
            self.attach(fi);
        } else {
            self.flows[fi as usize].state = State::Stalled;
        }
        self.flows[fi as usize].t_upd = self.now;
    }

    /// Puts flow `fi` on the links of its path (traced), as active.
    fn attach(&mut self, fi: u32) {
        let f = &mut self.flows[fi as usize];
        f.state = State::Active;
        f.t_upd = self.now;
        for h in 0..f.len as usize {
            let l = f.path[h] as usize;
            f.slot[h] = self.link_flows[l].len() as u32;
            self.link_flows[l].push(fi);
            if self.link_mark[l] != u32::MAX {
                self.link_mark[l] = u32::MAX;
                self.dirty.push(l as u32);
            }
        }
        self.active += 1;
        self.stats.peak_active = self.stats.peak_active.max(self.active);
    }

    /// Takes flow `fi` off its links (its rate settled first).
    fn detach(&mut self, fi: u32) {
        self.settle(fi);
        let f = self.flows[fi as usize];
        for h in 0..f.len as usize {
            let l = f.path[h] as usize;
            let s = f.slot[h] as usize;
            let lf = &mut self.link_flows[l];
            lf.swap_remove(s);
            if let Some(&moved) = lf.get(s) {
                let g = &mut self.flows[moved as usize];
                let k = g.path[..g.len as usize].iter().position(|&x| x as usize == l).expect("on the link");
                g.slot[k] = s as u32;
            }
            if self.link_mark[l] != u32::MAX {
                self.link_mark[l] = u32::MAX;
                self.dirty.push(l as u32);
            }
        }
        let f = &mut self.flows[fi as usize];
        f.rate = 0.0;
        f.gen = f.gen.wrapping_add(1);
        self.active -= 1;
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
        self.detach(fi);
        let f = self.flows[fi as usize];
        let m = self.m;
        let mut tail = SimTime::ZERO;
        for (h, &l) in f.path[..f.len as usize].iter().enumerate() {
            let p = m.port(PortId(l));
            tail += p.delay;
            if h > 0 {
                tail += p.speed.serialize(f.last_pkt_wire as u64);
            }
            self.tx_bytes[l as usize] += f.wire;
        }
        self.packets += f.npkts;
        self.packet_hops += f.npkts * f.len as u64;
        self.flows[fi as usize].state = State::Free;
        self.free_flows.push(fi);
        self.push(self.now + tail, Ev::Arrive { msg: f.msg });
    }

    /// A fault: the router takes it; every started flow is re-traced, and moves if its path
    /// changed.
    #[cold]
    fn on_fault(&mut self, idx: usize) {
        self.faults_due -= 1;
        let action = self.faults[idx].action;
        if matches!(action, FaultAction::Host { .. }) {
            return;
        }
        self.router.now = self.now;
        self.router.apply_routing_fault(action);
        let mut old = [NONE; MAX_HOPS];
        for fi in 0..self.flows.len() as u32 {
            let f = self.flows[fi as usize];
            if matches!(action, FaultAction::HashFields { .. }) && f.state != State::Free {
                let h = self.router.flow_hash(f.src, f.dst, f.sport as u32);
                self.flows[fi as usize].hash = h;
            }
            match f.state {
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
                State::Pending | State::Free => {}
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
            self.link_mark.iter_mut().for_each(|x| *x = 0);
            self.mark = 1;
        }
        let mark = self.mark;
        // The component: links ↔ active flows, from the dirty links.
        self.comp_links.clear();
        self.comp_flows.clear();
        for &l in &self.dirty {
            self.link_mark[l as usize] = mark;
            self.comp_links.push(l);
        }
        self.dirty.clear();
        let mut i = 0;
        while i < self.comp_links.len() {
            let l = self.comp_links[i] as usize;
            i += 1;
            for &fi in &self.link_flows[l] {
                if self.flow_mark[fi as usize] == mark {
                    continue;
                }
                self.flow_mark[fi as usize] = mark;
                self.comp_flows.push(fi);
                let f = &self.flows[fi as usize];
                for &l2 in &f.path[..f.len as usize] {
                    if self.link_mark[l2 as usize] != mark {
                        self.link_mark[l2 as usize] = mark;
                        self.comp_links.push(l2);
                    }
                }
            }
        }
        self.stats.flows_refilled += self.comp_flows.len() as u64;
        self.stats.links_refilled += self.comp_links.len() as u64;
        self.off.clear();
        self.links.clear();
        self.fcap.clear();
        self.off.push(0);
        for &fi in &self.comp_flows {
            let f = &self.flows[fi as usize];
            self.links.extend_from_slice(&f.path[..f.len as usize]);
            self.off.push(self.links.len() as u32);
            self.fcap.push(f.cap);
        }
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
        let mut s = self.router.snapshot_totals();
        s.engine = EngineKind::Flow.name();
        s.now = self.now;
        s.seed = self.opts.seed;
        s.sample_interval = None;
        s.events = self.events;
        s.stopped_at_duration = self.stopped_at_duration;
        s.stopped_no_progress = self.stopped_no_progress;
        for (p, &b) in s.ports.iter_mut().zip(&self.tx_bytes) {
            p.tx_bytes = b;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::test_support::model;

    /// `n` hosts on one switch, 100 Gb/s, 2 m cables (10 ns), MTU 4096.
    fn star(n: usize) -> Model {
        let nodes: Vec<String> = (0..n).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
        let links: Vec<String> =
            (0..n).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }}")).collect();
        let text = format!(
            r#"[fabric]
name = "star"
[switch_models.sw]
preset = "ns3-reference"
ports = {n}
[nic]
mtu = 4096
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {} ]
link = [ {} ]
"#,
            nodes.join(", "),
            links.join(", ")
        );
        model("star.toml", &text)
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
