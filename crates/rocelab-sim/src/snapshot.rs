//! A public, plain-data copy of a run's counters: what reports and tools build from.
//!
//! The engine's state (ports, switches, NICs, QPs, the packet slab) is laid out for the hot
//! path and may change with it: fields move between cache lines, counters split or merge.
//! [`Sim::snapshot`] copies what a run has counted into the types below, whose fields are
//! public and owned (nothing borrows the engine), so `report`, `outputs`, the command line and
//! other crates read one stable view and never the engine's internals. Taking a snapshot
//! costs one pass over ports, NICs and QPs and a copy of the sampled series; it changes
//! nothing in the run, which may go on afterwards.
//!
//! Indices match the model: `ports[i]` is `PortId(i)`, switches, NICs and flows are in
//! engine order (nodes in model order; flows in posting order, the order of
//! `RunReport::flows`).

use crate::engine::Sim;
use crate::stats::{Histogram, SampleRow, DROP_REASONS};
use rocelab_model::{BitsPerSec, Model, NodeId, PortId, Role, SimTime};

/// Everything a run has counted, at the time it was taken.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The engine that ran: `packet` or `flow` (`EngineKind::name`).
    pub engine: &'static str,
    /// The simulated clock.
    pub now: SimTime,
    pub seed: u64,
    /// `None`: the run takes no samples (`series` stays empty).
    pub sample_interval: Option<SimTime>,
    /// Events handled so far.
    pub events: u64,
    /// The run stopped at its duration limit with flows left.
    pub stopped_at_duration: bool,
    /// The run stopped because no packet left the fabric for `engine::NO_PROGRESS_LIMIT`.
    pub stopped_no_progress: bool,
    pub counters: Counters,
    /// Queueing delays of all packets at switch egress queues, in ps.
    pub queue_delay: Histogram,
    /// The same for CNPs alone (each hop a CNP waited at), in ps.
    pub cnp_queue_delay: Histogram,
    /// One per port of the model, by `PortId`.
    pub ports: Vec<PortCounters>,
    pub switches: Vec<SwitchBuffer>,
    /// One per NIC port (a multi-port host has several, consecutive).
    pub nics: Vec<NicCounters>,
    /// The QPs the engine holds: all of them, or with `SimOptions::recycle_qps` only those not
    /// yet retired (the retired ones are counted in their flows).
    pub qps: Vec<QpRecord>,
    pub flows: Vec<FlowRecord>,
    /// The sampled buffer occupancy, in time order (see `observer::SeriesRecord`).
    pub series: Vec<SampleRow>,
    /// The run was cut into partitions (`crate::parallel`): how. `None`: one engine.
    pub partitions: Option<CutUsed>,
    /// The run skipped steady states (`SimOptions::fast_forward`): how, and what it skipped.
    /// `None`: every packet was simulated.
    pub fast_forward: Option<(crate::engine::FastForward, crate::engine::SkipStats)>,
}

/// How a partitioned run was cut (what its results depend on, beside the fabric and seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutUsed {
    pub count: u32,
    /// `PartitionBy::name`: pod, rail group, leaf group.
    pub by: &'static str,
    /// The smallest delay of a cut link (the window).
    pub lookahead: SimTime,
}

/// Run-wide counters. Packets are every packet a NIC created (data, ACK, NAK, CNP); PFC frames
/// are not packets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    /// Packets in queues, on wires or in NIC buffers now.
    pub in_flight: u64,
    pub data_sent: u64,
    pub data_delivered: u64,
    pub data_dropped: u64,
    /// Payload bytes delivered in order, all QPs.
    pub payload_delivered_bytes: u64,
    pub retransmitted: u64,
    /// Drops by reason, indexed by `DropReason as usize` (names in `stats::DROP_REASONS`).
    pub drops_by_reason: [u64; DROP_REASONS.len()],
    /// CE marks at switch and NIC egress queues.
    pub ecn_marked: u64,
    pub cnp_sent: u64,
    pub cnp_received: u64,
    /// PFC frames sent (XOFF and XON, all priorities).
    pub pfc_frames_sent: u64,
    pub pfc_frames_received: u64,
    /// PFC watchdog storm detections.
    pub pfc_storms: u64,
    /// Transport timeouts, all QPs.
    pub timeouts: u64,
    /// QPs whose retries ran out.
    pub qps_failed: u64,
    /// Packets put on a wire, counted per link crossed.
    pub packet_hops: u64,
    pub data_packet_hops: u64,
    /// InfiniBand with adaptive routing: data packets that arrived out of order and were kept.
    pub out_of_order: u64,
    /// The Ultra Ethernet transport: packets trimmed by switches, NACKs of trimmed packets,
    /// packets resent on their own.
    pub trimmed: u64,
    pub trim_nacks: u64,
    pub selective_retransmits: u64,
    /// RCCC grants receivers sent.
    pub rccc_grants: u64,
}

/// The counters of one port (one end of a link). Per-priority arrays are indexed by 802.1p
/// priority, per-queue arrays by egress queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortCounters {
    pub port: PortId,
    pub node: NodeId,
    /// The other end of the link.
    pub peer: PortId,
    pub speed: BitsPerSec,
    /// The link is up now.
    pub up: bool,
    /// Wire bytes sent.
    pub tx_bytes: u64,
    pub pfc_tx: [u64; 8],
    pub pfc_rx: [u64; 8],
    /// Picoseconds each priority was paused by the peer.
    pub paused_ps: [u64; 8],
    /// Watchdog storm detections by priority.
    pub storms: [u64; 8],
    pub ecn_marked: [u64; 8],
    /// `[queue][DropReason as usize]`.
    pub drops: [[u64; DROP_REASONS.len()]; 8],
    /// Bytes queued now, per queue.
    pub queued_bytes: [u64; 8],
    pub queue_peak_bytes: [u64; 8],
    /// Longest queueing delay seen, per queue, in ps.
    pub queue_delay_max_ps: [u64; 8],
    /// Link down events.
    pub link_state_changes: u64,
}

/// One switch's shared buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchBuffer {
    pub node: NodeId,
    /// The switch model's buffer size.
    pub buffer_bytes: u64,
    /// Bytes held now.
    pub used_bytes: u64,
    pub peak_used_bytes: u64,
}

/// The counters of one NIC port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NicCounters {
    /// The host.
    pub node: NodeId,
    pub cnp_sent: u64,
    pub cnp_received: u64,
    /// CE-marked packets received.
    pub ecn_marked_rx: u64,
    pub rx_discards: u64,
}

/// One queue pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpRecord {
    /// Index into `Snapshot::flows`.
    pub flow: u32,
    pub src: NodeId,
    pub dst: NodeId,
    pub size_bytes: u64,
    /// Payload delivered in order.
    pub delivered_bytes: u64,
    pub retransmitted_packets: u64,
    pub timeouts: u64,
    pub naks: u64,
    pub cnps_received: u64,
    /// Retries exhausted: the QP is in the error state.
    pub failed: bool,
    /// The receiver got the last byte.
    pub finish: Option<SimTime>,
    /// The sender saw the last byte acknowledged (or gave up).
    pub sender_done: Option<SimTime>,
}

/// One flow (message), its QPs aggregated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    pub src: NodeId,
    pub dst: NodeId,
    pub size_bytes: u64,
    pub start: SimTime,
    /// The workload's label (0 for `[[traffic]]`).
    pub tag: u64,
    /// QPs it is striped over.
    pub qps: u32,
    pub delivered_bytes: u64,
    pub retransmitted_packets: u64,
    pub cnps_received: u64,
    /// Of its QPs, those whose retries ran out.
    pub failed_qps: u32,
    /// The message will never arrive: a QP gave up before the receiver had every byte.
    pub failed: bool,
    /// The latest receiver finish over its QPs; `None` while any has not finished
    /// (`Some(ZERO)` for a flow without QPs).
    pub finish: Option<SimTime>,
    /// The latest sender completion over its QPs, as `finish`.
    pub sender_done: Option<SimTime>,
}

impl Counters {
    /// Fills the counters that are sums over ports and NICs: drops by reason, ECN marks,
    /// CNPs, PFC frames.
    pub(crate) fn tally(&mut self, ports: &[PortCounters], nics: &[NicCounters]) {
        self.drops_by_reason = [0; DROP_REASONS.len()];
        for p in ports {
            for q in &p.drops {
                for (d, v) in self.drops_by_reason.iter_mut().zip(q) {
                    *d += v;
                }
            }
        }
        self.ecn_marked = ports.iter().map(|p| p.ecn_marked.iter().sum::<u64>()).sum();
        self.cnp_sent = nics.iter().map(|n| n.cnp_sent).sum();
        self.cnp_received = nics.iter().map(|n| n.cnp_received).sum();
        self.pfc_frames_sent = ports.iter().map(|p| p.pfc_tx.iter().sum::<u64>()).sum();
        self.pfc_frames_received = ports.iter().map(|p| p.pfc_rx.iter().sum::<u64>()).sum();
    }
}

impl FlowRecord {
    /// Counts QP `q` of this flow.
    pub(crate) fn add_qp(&mut self, q: &QpRecord) {
        self.qps += 1;
        self.delivered_bytes += q.delivered_bytes;
        self.retransmitted_packets += q.retransmitted_packets;
        self.cnps_received += q.cnps_received;
        self.failed_qps += q.failed as u32;
        self.finish = latest(self.finish, q.finish);
        self.sender_done = latest(self.sender_done, q.sender_done);
    }
}

/// The latest of the times, `None` if any is missing (`Some(ZERO)` for none).
fn latest(acc: Option<SimTime>, t: Option<SimTime>) -> Option<SimTime> {
    match (acc, t) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    }
}

impl Snapshot {
    /// A fabric on which nothing has run yet: every link up, every counter zero, no QP or
    /// flow (what an engine that counts only some of these starts from: `flow`).
    pub fn idle(m: &Model) -> Snapshot {
        let ports = m
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| PortCounters {
                port: PortId(i as u32),
                node: p.node,
                peer: p.peer,
                speed: p.speed,
                up: true,
                tx_bytes: 0,
                pfc_tx: [0; 8],
                pfc_rx: [0; 8],
                paused_ps: [0; 8],
                storms: [0; 8],
                ecn_marked: [0; 8],
                drops: [[0; DROP_REASONS.len()]; 8],
                queued_bytes: [0; 8],
                queue_peak_bytes: [0; 8],
                queue_delay_max_ps: [0; 8],
                link_state_changes: 0,
            })
            .collect();
        let mut switches = Vec::new();
        let mut nics = Vec::new();
        for (i, n) in m.nodes.iter().enumerate() {
            let node = NodeId(i as u32);
            match n.role {
                Role::Switch { model } => switches.push(SwitchBuffer {
                    node,
                    buffer_bytes: m.switch_models[model].params.buffer_bytes,
                    used_bytes: 0,
                    peak_used_bytes: 0,
                }),
                Role::Host { .. } => nics.extend(n.ports().map(|_| NicCounters {
                    node,
                    cnp_sent: 0,
                    cnp_received: 0,
                    ecn_marked_rx: 0,
                    rx_discards: 0,
                })),
            }
        }
        Snapshot {
            engine: crate::engine::EngineKind::Packet.name(),
            now: SimTime::ZERO,
            seed: 0,
            sample_interval: None,
            events: 0,
            stopped_at_duration: false,
            stopped_no_progress: false,
            counters: Counters::default(),
            queue_delay: Histogram::default(),
            cnp_queue_delay: Histogram::default(),
            ports,
            switches,
            nics,
            qps: Vec::new(),
            flows: Vec::new(),
            series: Vec::new(),
            partitions: None,
            fast_forward: None,
        }
    }
}

impl<'m> Sim<'m> {
    /// The model the run is on.
    pub fn model(&self) -> &'m Model {
        self.m
    }

    /// Copies the run's counters out (see the module doc). The run is not changed.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_with(true)
    }

    /// The snapshot without its per-QP and per-flow records (`qps` and `flows` empty; the
    /// counters still count every QP): for runs of millions of messages whose rows nobody
    /// reads, such as a collective's ring steps.
    pub fn snapshot_totals(&self) -> Snapshot {
        self.snapshot_with(false)
    }

    fn snapshot_with(&self, records: bool) -> Snapshot {
        let m = self.m;
        let st = &self.stats;
        let ports: Vec<PortCounters> = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| PortCounters {
                port: PortId(i as u32),
                node: NodeId(p.node),
                peer: PortId(p.peer),
                speed: p.speed,
                up: p.up,
                tx_bytes: p.tx_bytes,
                pfc_tx: p.st.pfc_tx,
                pfc_rx: p.st.pfc_rx,
                paused_ps: std::array::from_fn(|q| self.paused_ps_to_now(i, q)),
                storms: p.st.storms,
                ecn_marked: p.st.ecn_marked,
                drops: p.st.drops,
                queued_bytes: std::array::from_fn(|q| p.queues[q].bytes),
                queue_peak_bytes: std::array::from_fn(|q| p.queues[q].peak),
                queue_delay_max_ps: std::array::from_fn(|q| p.queues[q].delay_max),
                link_state_changes: p.st.link_state_changes,
            })
            .collect();
        let nics: Vec<NicCounters> = self
            .host
            .nics
            .iter()
            .map(|n| NicCounters {
                node: NodeId(n.node),
                cnp_sent: n.st.cnp_sent,
                cnp_received: n.st.cnp_received,
                ecn_marked_rx: n.st.ecn_marked_rx,
                rx_discards: n.st.rx_discards,
            })
            .collect();
        let live = self.host.qps.iter().filter(|q| !q.retired);
        let qps: Vec<QpRecord> = self
            .host
            .qps
            .iter()
            .enumerate()
            .filter(|(_, q)| records && !q.retired)
            .map(|(i, q)| QpRecord {
                flow: q.flow,
                src: NodeId(q.src),
                dst: NodeId(q.dst),
                // (A fast-forward takes what it credits off the message's remainder.)
                size_bytes: q.size + self.ff.as_ref().map_or(0, |f| f.credited(i as u32)),
                delivered_bytes: q.st.bytes_delivered,
                retransmitted_packets: q.st.retransmitted_packets,
                timeouts: q.st.timeouts,
                naks: q.st.naks,
                cnps_received: q.st.cnps,
                failed: q.st.failed,
                finish: q.finish,
                sender_done: q.sender_done,
            })
            .collect();
        let mut flows: Vec<FlowRecord> = self
            .flows
            .iter()
            .enumerate()
            .filter(|_| records)
            .map(|(i, f)| FlowRecord {
                src: f.src,
                dst: f.dst,
                size_bytes: f.size_bytes,
                start: f.start,
                tag: f.tag,
                qps: 0,
                delivered_bytes: 0,
                retransmitted_packets: 0,
                cnps_received: 0,
                failed_qps: 0,
                failed: self.flow_failed.get(i).copied().unwrap_or(false),
                finish: Some(SimTime::ZERO),
                sender_done: Some(SimTime::ZERO),
            })
            .collect();
        // QPs whose slots were reused (`SimOptions::recycle_qps`) count as the live ones do.
        for (f, r) in flows.iter_mut().zip(&self.host.retired) {
            f.qps += r.qps;
            f.delivered_bytes += r.delivered_bytes;
            f.retransmitted_packets += r.retransmitted_packets;
            f.cnps_received += r.cnps;
            if r.qps > 0 {
                f.finish = latest(f.finish, Some(r.finish));
                f.sender_done = latest(f.sender_done, Some(r.sender_done));
            }
        }
        for q in &qps {
            if let Some(f) = flows.get_mut(q.flow as usize) {
                f.add_qp(q);
            }
        }
        let switches = self
            .mmu
            .switches
            .iter()
            .map(|s| SwitchBuffer {
                node: NodeId(s.node),
                buffer_bytes: m.switch_model_of(NodeId(s.node)).map(|x| x.params.buffer_bytes).unwrap_or(0),
                used_bytes: s.used,
                peak_used_bytes: s.peak_used,
            })
            .collect();
        let mut counters = Counters {
            sent: st.sent,
            delivered: st.delivered,
            dropped: st.dropped,
            in_flight: self.in_flight(),
            data_sent: st.data_sent,
            data_delivered: st.data_delivered,
            data_dropped: st.data_dropped,
            payload_delivered_bytes: st.payload_delivered,
            retransmitted: st.retransmitted,
            out_of_order: st.out_of_order,
            trimmed: st.trimmed,
            trim_nacks: st.trim_nacks,
            selective_retransmits: st.selective_retransmits,
            rccc_grants: st.rccc_grants,
            pfc_storms: st.storms,
            // (From the engine's QPs, not `qps`, which may be left out.)
            timeouts: live.clone().map(|q| q.st.timeouts).sum::<u64>()
                + self.host.retired.iter().map(|r| r.timeouts).sum::<u64>(),
            qps_failed: live.filter(|q| q.st.failed).count() as u64,
            packet_hops: st.packet_hops,
            data_packet_hops: st.data_hops,
            ..Counters::default()
        };
        counters.tally(&ports, &nics);
        Snapshot {
            engine: crate::engine::EngineKind::Packet.name(),
            now: self.now,
            seed: self.opts.seed,
            sample_interval: self.opts.sample_interval,
            events: self.events,
            stopped_at_duration: self.stopped_at_duration,
            stopped_no_progress: self.stopped_no_progress,
            counters,
            queue_delay: st.qdelay.clone(),
            cnp_queue_delay: st.cnp_qdelay.clone(),
            ports,
            switches,
            nics,
            qps,
            flows,
            series: self.series.as_ref().map(|r| r.rows()).unwrap_or_default(),
            partitions: None,
            fast_forward: self.ff.as_ref().map(|f| (f.config(), f.stats)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::test_support::model;
    use crate::engine::SimOptions;
    use crate::report::RunReport;
    use rocelab_model::{Model, SimTime};

    /// `n` hosts on one switch at 100 Gb/s with a `buffer`-byte buffer; `h1`… send
    /// `size` bytes each to `h0` in `class` (the RDMA class is lossless, `default` lossy).
    fn incast(n: usize, buffer: u64, size: u64, class: &str, extra: &str) -> Model {
        let nodes: Vec<String> = (0..n).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
        let links: Vec<String> =
            (0..n).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }}")).collect();
        let text = format!(
            r#"[fabric]
name = "incast"
[switch_models.sw]
preset = "ns3-reference"
buffer_bytes = {buffer}
ports = {n}
[nic]
congestion_control = "none"
{extra}
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {} ]
link = [ {} ]
[[traffic]]
pattern = "incast"
dst = "h0"
senders = {}
size_bytes = {size}
{class}
"#,
            nodes.join(", "),
            links.join(", "),
            n - 1
        );
        model("incast.toml", &text)
    }

    /// Everything a NIC created was delivered or dropped, nothing is left in the fabric, and
    /// the per-port, per-NIC and per-flow records add up to the run-wide counters.
    fn check_finished(m: &Model, opts: SimOptions) -> crate::snapshot::Snapshot {
        let mut sim = crate::build(m, opts).unwrap_or_else(|d| panic!("{d:?}"));
        sim.run(&mut |_| {});
        let s = sim.snapshot();
        let c = &s.counters;
        assert_eq!(c.in_flight, 0, "{c:?}");
        assert_eq!(c.sent, c.delivered + c.dropped, "{c:?}");
        assert_eq!(c.drops_by_reason.iter().sum::<u64>(), c.dropped, "{c:?}");
        assert!(c.data_delivered + c.data_dropped <= c.data_sent, "{c:?}");
        assert_eq!(c.qps_failed, 0);
        assert_eq!(c.ecn_marked, s.ports.iter().flat_map(|p| p.ecn_marked).sum::<u64>());
        assert_eq!(c.cnp_sent, s.nics.iter().map(|n| n.cnp_sent).sum::<u64>());
        let sizes: u64 = s.flows.iter().map(|f| f.size_bytes).sum();
        assert_eq!(c.payload_delivered_bytes, sizes);
        assert_eq!(s.qps.iter().map(|q| q.delivered_bytes).sum::<u64>(), sizes);
        for f in &s.flows {
            assert_eq!(f.delivered_bytes, f.size_bytes);
            assert!(!f.failed && f.failed_qps == 0);
            let (fin, done) = (f.finish.expect("finished"), f.sender_done.expect("acknowledged"));
            assert!(f.start < fin && fin <= done && done <= s.now, "{f:?} at {:?}", s.now);
        }
        assert!(s.ports.iter().all(|p| p.queued_bytes == [0; 8]));
        assert!(s.switches.iter().all(|w| w.used_bytes == 0 && w.peak_used_bytes <= w.buffer_bytes));
        s
    }

    #[test]
    fn a_finished_lossless_incast_conserves_packets() {
        let s = check_finished(&incast(9, 2_000_000, 300_000, "", ""), SimOptions::default());
        assert_eq!(s.counters.dropped, 0);
        assert!(s.counters.pfc_frames_sent > 0, "8:1 into 2 MB pauses: {:?}", s.counters);
        assert_eq!(s.counters.pfc_frames_sent, s.counters.pfc_frames_received);
        assert_eq!(s.flows.len(), 8);
    }

    #[test]
    fn a_finished_lossy_incast_conserves_packets_with_drops() {
        let m = incast(5, 300_000, 1_000_000, "class = \"default\"", "");
        let s = check_finished(&m, SimOptions::default());
        assert!(s.counters.dropped > 0 && s.counters.retransmitted > 0, "{:?}", s.counters);
        assert_eq!(s.counters.drops_by_reason[crate::stats::DropReason::Buffer as usize], s.counters.dropped);
    }

    #[test]
    fn a_snapshot_mid_run_counts_the_packets_in_flight_and_changes_nothing() {
        let m = incast(9, 2_000_000, 300_000, "", "");
        let whole = {
            let mut sim = crate::build(&m, SimOptions::default()).unwrap();
            sim.run(&mut |_| {});
            RunReport::from_sim(&sim).to_json()
        };
        let mut sim = crate::build(&m, SimOptions::default()).unwrap();
        sim.run_until(SimTime(20_000_000));
        let s = sim.snapshot();
        let c = &s.counters;
        assert_eq!(s.now, SimTime(20_000_000));
        assert!(c.in_flight > 0, "{c:?}");
        assert_eq!(c.sent, c.delivered + c.dropped + c.in_flight, "{c:?}");
        assert!(s.flows.iter().all(|f| f.finish.is_none() && f.delivered_bytes < f.size_bytes));
        let queued: u64 = s.ports.iter().flat_map(|p| p.queued_bytes).sum();
        assert!(queued > 0);
        sim.run(&mut |_| {});
        assert_eq!(RunReport::from_sim(&sim).to_json(), whole, "taking a snapshot changes nothing");
    }

    #[test]
    fn the_report_from_a_snapshot_is_the_report_from_the_run() {
        let m = incast(5, 300_000, 1_000_000, "class = \"default\"", "");
        let mut sim = crate::build(&m, SimOptions::default()).unwrap();
        sim.run(&mut |_| {});
        let s = sim.snapshot();
        let r = RunReport::from_snapshot(&s, &m);
        assert_eq!(r, RunReport::from_sim(&sim));
        let t = &r.totals;
        assert_eq!(t.packets_sent, s.counters.sent);
        assert_eq!(t.drops_by_reason["buffer"], s.counters.dropped);
        assert_eq!(r.flows.len(), s.flows.len());
        assert_eq!(r.seed, 1);
    }

    #[test]
    fn a_sampled_incast_has_the_bottleneck_queue_in_the_series_from_the_observer() {
        use crate::observer::{Observed, Observer};
        use std::cell::RefCell;
        use std::rc::Rc;
        /// (time, node, port, bytes), as `SampleRow` has them.
        type Row = (SimTime, u32, u32, u64);
        /// Hears the samples as any observer would.
        struct Heard(Rc<RefCell<Vec<Row>>>);
        impl Observer for Heard {
            fn observe(&mut self, e: &Observed) {
                match *e {
                    Observed::BufferSample { time, node, bytes } => {
                        self.0.borrow_mut().push((time, node.0, u32::MAX, bytes))
                    }
                    Observed::QueueSample { time, node, port, bytes } => {
                        self.0.borrow_mut().push((time, node.0, port.0, bytes))
                    }
                    _ => {}
                }
            }
        }
        let buffer = 2_000_000;
        let m = incast(9, buffer, 300_000, "", "");
        let opts = SimOptions { sample_interval: Some(SimTime(1_000_000)), ..SimOptions::default() };
        let mut sim = crate::build(&m, opts).unwrap();
        let heard = Rc::new(RefCell::new(Vec::new()));
        sim.add_observer(Box::new(Heard(heard.clone())));
        sim.run(&mut |_| {});
        let s = sim.snapshot();
        let sw = m.node_by_name("sw0").unwrap();
        let h0 = m.node_by_name("h0").unwrap();
        let bottleneck = m.node(sw).ports().find(|p| m.port(m.port(*p).peer).node == h0).unwrap();
        // The series is what the observers heard, row for row.
        let rows: Vec<Row> = s.series.iter().map(|r| (r.time, r.node, r.port, r.bytes)).collect();
        assert_eq!(rows, *heard.borrow());
        assert!(s.series.windows(2).all(|w| w[0].time <= w[1].time), "rows in time order");
        // One switch-buffer row per sampling instant, 1 µs apart, within the buffer.
        let sw_rows: Vec<_> = s.series.iter().filter(|r| r.port == u32::MAX).collect();
        assert!(sw_rows.iter().all(|r| r.node == sw.0 && r.bytes <= buffer));
        assert!(sw_rows.iter().enumerate().all(|(k, r)| r.time == SimTime(1_000_000 * (k as u64 + 1))));
        assert!(sw_rows.len() as u64 >= s.now.0 / 1_000_000, "{} rows in {:?}", sw_rows.len(), s.now);
        // 8:1 into one 100 Gb/s port: its queue builds, and stays within the buffer.
        let q: Vec<u64> = s.series.iter().filter(|r| r.port == bottleneck.0).map(|r| r.bytes).collect();
        assert!(q.len() >= 10, "{} rows of the bottleneck", q.len());
        assert!(q.iter().all(|b| *b > 0 && *b <= buffer), "{q:?}");
        assert!(q.iter().any(|b| *b > 100_000), "the incast queues: {q:?}");
        // Only switch egress ports have rows, and a port's queue never exceeds its switch's use.
        for r in s.series.iter().filter(|r| r.port != u32::MAX) {
            assert_eq!(r.node, sw.0);
            let used = sw_rows.iter().find(|w| w.time == r.time).unwrap().bytes;
            assert!(r.bytes <= used, "{r:?} above the buffer use {used}");
        }
    }

    #[test]
    fn a_run_without_sampling_has_no_series_and_no_recorder() {
        let m = incast(9, 2_000_000, 300_000, "", "");
        let mut sim = crate::build(&m, SimOptions::default()).unwrap();
        assert!(sim.series.is_none(), "no recorder installed");
        sim.run(&mut |_| {});
        let s = sim.snapshot();
        assert!(s.series.is_empty() && s.sample_interval.is_none());
        assert!(s.counters.pfc_frames_sent > 0, "the same busy incast");
    }
    #[test]
    fn an_idle_snapshot_is_what_an_engine_that_ran_nothing_counts() {
        // The flow engine starts its snapshot from `Snapshot::idle`; it must be the packet
        // engine's own layout: every port, switch and NIC port, in the same order, zeroed.
        for m in [
            crate::engine::test_support::star(3, "", ""),
            model(
                "ls.toml",
                r#"[fabric]
name = "ls"
[topology.leaf_spine]
leaves = 2
spines = 2
hosts_per_leaf = 2
host_link = { speed_gbps = 100, length_m = 3 }
fabric_link = { speed_gbps = 400, length_m = 30 }
leaf_model = "spectrum-2"
spine_model = "spectrum-2"
"#,
            ),
        ] {
            let idle = super::Snapshot::idle(&m);
            let packet = crate::engine::test_support::idle_sim(&m).snapshot();
            assert_eq!(idle.ports, packet.ports);
            assert_eq!(idle.switches, packet.switches);
            assert_eq!(idle.nics, packet.nics);
            assert_eq!(idle.counters, packet.counters);
            assert!(idle.qps.is_empty() && idle.flows.is_empty() && idle.series.is_empty());
            assert_eq!(idle.ports.len(), m.ports.len());
        }
    }
}
