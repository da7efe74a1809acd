//! Run results in the shared metric schema: a serializable `RunReport`, and pure functions
//! from it to bytes (JSON, CSV, Prometheus text, a terminal summary).
//!
//! Built from a [`Snapshot`] of the run (never from the engine's state), so a tool holding
//! a snapshot and the model gets the same report. Only deterministic values go in: no wall-clock times, maps ordered (`BTreeMap`), so the same
//! input and seed give byte-identical files.

use crate::engine::Sim;
use crate::snapshot::Snapshot;
use crate::stats::DROP_REASONS;
use rocelab_model::Model;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Metric {
    pub name: &'static str,
    pub labels: Labels,
    pub value: f64,
}

/// A metric's labels, ordered by name and serialized as a map. A sorted vector rather than a
/// `BTreeMap`: a run with millions of messages has a metric per message, and a map's first
/// node alone is ~0.5 KB where one label takes 40 bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Labels(Vec<(&'static str, String)>);

impl Labels {
    /// Labels from pairs in any order (a repeated name keeps its last value, as a map would).
    pub fn new(pairs: &[(&'static str, String)]) -> Labels {
        let mut v: Vec<(&'static str, String)> = Vec::with_capacity(pairs.len());
        for (k, val) in pairs {
            match v.binary_search_by(|(n, _)| n.cmp(k)) {
                Ok(i) => v[i].1 = val.clone(),
                Err(i) => v.insert(i, (k, val.clone())),
            }
        }
        Labels(v)
    }
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
    /// (name, value) in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &String)> {
        self.0.iter().map(|(n, v)| (*n, v))
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<&str> for Labels {
    type Output = String;
    /// The label's value; panics if it is absent, as a map's index does.
    fn index(&self, name: &str) -> &String {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v).unwrap_or_else(|| panic!("no label {name}"))
    }
}

impl Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Totals {
    pub packets_sent: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub packets_in_flight: u64,
    pub data_packets_sent: u64,
    pub data_packets_delivered: u64,
    pub data_packets_dropped: u64,
    pub retransmitted_packets: u64,
    /// Queue pairs whose retries ran out (error state; `req_transport_retries_exceeded` on
    /// an mlx5 NIC): their flows never finish.
    pub qps_failed: u64,
    pub drops_by_reason: BTreeMap<&'static str, u64>,
    pub pfc_pause_frames: u64,
    pub pfc_storm_events: u64,
    pub ecn_marked_packets: u64,
    pub cnp_sent: u64,
    pub cnp_received: u64,
    pub packet_hops: u64,
    pub data_packet_hops: u64,
    /// The Ultra Ethernet transport's counters, where a NIC profile runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uet: Option<UetTotals>,
}

/// What the Ultra Ethernet transport did in a run (`[nic] transport = "uet"`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct UetTotals {
    /// Data packets a switch cut to their header instead of dropping them.
    pub trimmed_packets: u64,
    /// NACKs receivers returned for trimmed packets.
    pub trim_nacks: u64,
    /// Packets resent on their own (after a NACK or a timeout).
    pub selective_retransmits: u64,
    /// Data packets placed ahead of a hole (sprayed packets overtaking each other).
    pub out_of_order_packets: u64,
    /// RCCC grants receivers sent, one MTU each (0 without `[nic.uet] rccc`).
    pub rccc_grants: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowResult {
    pub flow: usize,
    pub src: String,
    pub dst: String,
    pub size_bytes: u64,
    pub delivered_bytes: u64,
    pub start_seconds: f64,
    /// Receiver got the last byte; `None` if the run stopped first.
    pub fct_seconds: Option<f64>,
    /// Goodput: delivered payload over the flow's active time.
    pub throughput_gbps: f64,
    pub retransmitted_packets: u64,
    pub cnp_received: u64,
    /// Of the flow's QPs, those whose retries ran out.
    pub failed_qps: u32,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Quantiles {
    pub p50_seconds: f64,
    pub p99_seconds: f64,
    pub max_seconds: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SwitchResult {
    pub node: String,
    pub buffer_bytes: u64,
    pub buffer_peak_bytes: u64,
}

/// How a partitioned run was cut, as the summary reports it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PartitionsUsed {
    pub count: u32,
    pub cut_along: &'static str,
    pub lookahead_seconds: f64,
}

/// What a fast-forwarded run skipped, as the summary reports it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FastForwardUsed {
    /// How often the engine looked for steady QPs, and for how many looks they had to hold.
    pub period_seconds: f64,
    pub periods: u32,
    pub skips: u64,
    /// Data packets credited without being simulated, and their share of all data packets.
    pub skipped_data_packets: u64,
    pub skipped_share: f64,
    pub ended_early: u64,
}

impl FastForwardUsed {
    /// One line for a text report (indented two spaces).
    pub fn line(&self) -> String {
        format!(
            "  fast-forward: {} steady stretches skipped, {} data packets credited without being simulated ({:.1} % of all); {} ended early",
            self.skips,
            self.skipped_data_packets,
            self.skipped_share * 100.0,
            self.ended_early
        )
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunReport {
    pub rocelab_version: &'static str,
    pub engine: &'static str,
    /// The packet engine cut into partitions (`--partitions`): how, since the results depend
    /// on the cut (never on the thread count). Absent for one engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<PartitionsUsed>,
    /// Steady states were skipped (`--fast-forward`): the results are approximate
    /// (docs/simulate.md, "Steady-state fast-forward"). Absent when every packet ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<FastForwardUsed>,
    pub fabric: String,
    pub fabric_hash: String,
    pub seed: u64,
    pub simulated_seconds: f64,
    pub stopped_at_duration: bool,
    /// No duration was set, and no packet was delivered or dropped for
    /// `engine::NO_PROGRESS_LIMIT` while packets were in the fabric: stuck for good.
    pub stopped_no_progress: bool,
    pub events: u64,
    pub totals: Totals,
    pub queue_delay: Quantiles,
    /// CNPs' waits per switch hop: near zero when CNPs ride a strict-priority queue, a data
    /// queue's delay when they share one.
    pub cnp_queue_delay: Quantiles,
    pub flows_completed: usize,
    pub flow_completion: Option<Quantiles>,
    /// Jain's fairness index over the flows' throughputs.
    pub jain_fairness: f64,
    pub switches: Vec<SwitchResult>,
    pub flows: Vec<FlowResult>,
    pub metrics: Vec<Metric>,
    /// The fabric's link layer is InfiniBand: the text names the counters as IB does (FECN,
    /// BECN, credits); the JSON keeps one schema for both.
    #[serde(skip)]
    pub infiniband: bool,
}

fn secs(ps: u64) -> f64 {
    ps as f64 * 1e-12
}

pub fn jain(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 1.0;
    }
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * s2)
    }
}

impl RunReport {
    /// The fast-forward's line of a text report, when the run skipped steady states.
    pub fn fast_forward_line(&self) -> Option<String> {
        self.fast_forward.as_ref().map(FastForwardUsed::line)
    }

    /// The report of a run as it stands (a snapshot of it, see [`RunReport::from_snapshot`]).
    pub fn from_sim(sim: &Sim) -> RunReport {
        RunReport::from_snapshot(&sim.snapshot(), sim.model())
    }

    /// The report from a run's counters, on the model the run was on (names come from it).
    pub fn from_snapshot(snap: &Snapshot, m: &Model) -> RunReport {
        let now = snap.now;
        let c = &snap.counters;
        let mut metrics = Vec::new();
        let totals = Totals {
            packets_sent: c.sent,
            packets_delivered: c.delivered,
            packets_dropped: c.dropped,
            packets_in_flight: c.in_flight,
            data_packets_sent: c.data_sent,
            data_packets_delivered: c.data_delivered,
            data_packets_dropped: c.data_dropped,
            retransmitted_packets: c.retransmitted,
            qps_failed: c.qps_failed,
            drops_by_reason: DROP_REASONS.iter().map(|(r, n)| (*n, c.drops_by_reason[*r as usize])).collect(),
            pfc_pause_frames: c.pfc_frames_sent,
            pfc_storm_events: c.pfc_storms,
            ecn_marked_packets: c.ecn_marked,
            cnp_sent: c.cnp_sent,
            cnp_received: c.cnp_received,
            packet_hops: c.packet_hops,
            data_packet_hops: c.data_packet_hops,
            uet: m.nics.iter().any(|n| n.transport == rocelab_model::uet::Transport::Uet).then_some(UetTotals {
                trimmed_packets: c.trimmed,
                trim_nacks: c.trim_nacks,
                selective_retransmits: c.selective_retransmits,
                out_of_order_packets: c.out_of_order,
                rccc_grants: c.rccc_grants,
            }),
        };
        let mut push = |name: &'static str, labels: &[(&'static str, String)], value: f64| {
            if value != 0.0 {
                metrics.push(Metric { name, labels: Labels::new(labels), value });
            }
        };
        let node_name = |n: rocelab_model::NodeId| m.nodes.get(n.idx()).map(|x| x.name.clone()).unwrap_or_default();
        for p in &snap.ports {
            let node = node_name(p.node);
            let port = if p.port.idx() < m.ports.len() {
                let full = m.port_name(p.port);
                full.rsplit(':').next().unwrap_or("").to_string()
            } else {
                String::new()
            };
            let base = [("node", node.clone()), ("port", port.clone())];
            for prio in 0..8 {
                let lp = |dir: &str| {
                    vec![
                        ("node", node.clone()),
                        ("port", port.clone()),
                        ("priority", prio.to_string()),
                        ("direction", dir.to_string()),
                    ]
                };
                push("rocelab_pfc_pause_frames_total", &lp("tx"), p.pfc_tx[prio] as f64);
                push("rocelab_pfc_pause_frames_total", &lp("rx"), p.pfc_rx[prio] as f64);
                push("rocelab_pfc_paused_seconds_total", &lp("rx"), secs(p.paused_ps[prio]));
                let lq = [("node", node.clone()), ("port", port.clone()), ("priority", prio.to_string())];
                push("rocelab_pfc_storm_events_total", &lq, p.storms[prio] as f64);
            }
            for q in 0..8 {
                let lq = [("node", node.clone()), ("port", port.clone()), ("queue", q.to_string())];
                push("rocelab_ecn_marked_packets_total", &lq, p.ecn_marked[q] as f64);
                push("rocelab_buffer_occupancy_peak_bytes", &lq, p.queue_peak_bytes[q] as f64);
                push("rocelab_queue_delay_max_seconds", &lq, secs(p.queue_delay_max_ps[q]));
                for (r, rname) in DROP_REASONS {
                    let mut l = lq.to_vec();
                    l.push(("reason", rname.to_string()));
                    push("rocelab_drops_total", &l, p.drops[q][r as usize] as f64);
                }
            }
            let mut l = base.to_vec();
            l.push(("direction", "tx".into()));
            let util = if now.0 > 0 { p.tx_bytes as f64 * 8.0 / (p.speed.0 as f64 * now.as_secs_f64()) } else { 0.0 };
            push("rocelab_link_utilization_ratio", &l, util);
            push("rocelab_tx_bytes_total", &l, p.tx_bytes as f64);
            push("rocelab_link_state_changes_total", &base, p.link_state_changes as f64);
        }
        // Per host: a multi-port host has one NIC per port, consecutive; sum them.
        for host in snap.nics.chunk_by(|a, b| a.node == b.node) {
            let l = [("node", node_name(host[0].node))];
            let (sent, received, marked) =
                host.iter().fold((0, 0, 0), |(s, r, e), n| (s + n.cnp_sent, r + n.cnp_received, e + n.ecn_marked_rx));
            push("rocelab_cnp_sent_total", &l, sent as f64);
            push("rocelab_cnp_received_total", &l, received as f64);
            push("rocelab_ecn_marked_packets_total", &l, marked as f64);
        }
        // Per flow: its QPs aggregated.
        let mut flows: Vec<FlowResult> = Vec::with_capacity(snap.flows.len());
        // (Zero, and so absent, unless an InfiniBand fabric routes adaptively.)
        push("rocelab_out_of_order_packets_total", &[], c.out_of_order as f64);
        // (The Ultra Ethernet transport's; absent without it.)
        push("rocelab_trimmed_packets_total", &[], c.trimmed as f64);
        push("rocelab_trim_nacks_total", &[], c.trim_nacks as f64);
        push("rocelab_selective_retransmits_total", &[], c.selective_retransmits as f64);
        for (i, f) in snap.flows.iter().enumerate() {
            let start = f.start.0;
            let end = f.finish.map_or(now.0, |t| t.0).max(start);
            let fct_seconds = f.finish.map(|e| secs(e.0.saturating_sub(start)));
            let throughput_gbps =
                if end > start { f.delivered_bytes as f64 * 8.0 / secs(end - start) / 1e9 } else { 0.0 };
            let l = [("flow", i.to_string())];
            if let Some(fct) = fct_seconds {
                push("rocelab_flow_completion_seconds", &l, fct);
            }
            push("rocelab_retransmitted_packets_total", &l, f.retransmitted_packets as f64);
            flows.push(FlowResult {
                flow: i,
                src: node_name(f.src),
                dst: node_name(f.dst),
                size_bytes: f.size_bytes,
                delivered_bytes: f.delivered_bytes,
                start_seconds: f.start.as_secs_f64(),
                fct_seconds,
                throughput_gbps,
                retransmitted_packets: f.retransmitted_packets,
                cnp_received: f.cnps_received,
                failed_qps: f.failed_qps,
            });
        }
        let mut fcts: Vec<f64> = flows.iter().filter_map(|f| f.fct_seconds).collect();
        fcts.sort_by(f64::total_cmp);
        let flow_completion = if fcts.is_empty() {
            None
        } else {
            let q = |x: f64| fcts[((x * fcts.len() as f64).ceil() as usize).clamp(1, fcts.len()) - 1];
            Some(Quantiles { p50_seconds: q(0.5), p99_seconds: q(0.99), max_seconds: *fcts.last().expect("non-empty") })
        };
        let tputs: Vec<f64> = flows.iter().map(|f| f.throughput_gbps).collect();
        let quantiles = |h: &crate::stats::Histogram| Quantiles {
            p50_seconds: secs(h.quantile(0.5)),
            p99_seconds: secs(h.quantile(0.99)),
            max_seconds: secs(h.max()),
        };
        RunReport {
            infiniband: m.is_ib(),
            rocelab_version: env!("CARGO_PKG_VERSION"),
            engine: snap.engine,
            partitions: snap.partitions.map(|c| PartitionsUsed {
                count: c.count,
                cut_along: c.by,
                lookahead_seconds: c.lookahead.as_secs_f64(),
            }),
            fast_forward: snap.fast_forward.map(|(cfg, st)| FastForwardUsed {
                period_seconds: cfg.period.as_secs_f64(),
                periods: cfg.periods,
                skips: st.skips,
                skipped_data_packets: st.skipped_packets,
                skipped_share: st.skipped_packets as f64 / snap.counters.data_sent.max(1) as f64,
                ended_early: st.early_ends,
            }),
            fabric: m.name.clone(),
            fabric_hash: format!("{:016x}", m.fabric_hash),
            seed: snap.seed,
            simulated_seconds: now.as_secs_f64(),
            stopped_at_duration: snap.stopped_at_duration,
            stopped_no_progress: snap.stopped_no_progress,
            events: snap.events,
            totals,
            queue_delay: quantiles(&snap.queue_delay),
            cnp_queue_delay: quantiles(&snap.cnp_queue_delay),
            flows_completed: fcts.len(),
            flow_completion,
            jain_fairness: jain(&tputs),
            switches: snap
                .switches
                .iter()
                .map(|s| SwitchResult {
                    node: node_name(s.node),
                    buffer_bytes: s.buffer_bytes,
                    buffer_peak_bytes: s.peak_used_bytes,
                })
                .collect(),
            flows,
            metrics,
        }
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("report serializes");
        s.push('\n');
        s
    }

    /// One row per flow.
    pub fn flows_csv(&self) -> String {
        let mut o = String::from(
            "flow,src,dst,size_bytes,delivered_bytes,start_seconds,fct_seconds,throughput_gbps,retransmitted_packets,cnp_received,failed_qps\n",
        );
        for f in &self.flows {
            let _ = writeln!(
                o,
                "{},{},{},{},{},{:.12},{},{:.6},{},{},{}",
                f.flow,
                f.src,
                f.dst,
                f.size_bytes,
                f.delivered_bytes,
                f.start_seconds,
                f.fct_seconds.map(|x| format!("{x:.12}")).unwrap_or_default(),
                f.throughput_gbps,
                f.retransmitted_packets,
                f.cnp_received,
                f.failed_qps
            );
        }
        o
    }

    /// The metrics in Prometheus text exposition format 0.0.4: one `# HELP` and one `# TYPE`
    /// line per metric family, then all of its samples together (families by name, samples in
    /// report order), so `promtool check metrics` accepts the file.
    pub fn prometheus(&self) -> String {
        let mut families: BTreeMap<&str, Vec<&Metric>> = BTreeMap::new();
        for mt in &self.metrics {
            families.entry(mt.name).or_default().push(mt);
        }
        let mut o = String::new();
        for (name, samples) in families {
            let kind = if name.ends_with("_total") { "counter" } else { "gauge" };
            let _ = writeln!(o, "# HELP {name} {}", prometheus_help(name));
            let _ = writeln!(o, "# TYPE {name} {kind}");
            for mt in samples {
                let labels: Vec<String> = mt
                    .labels
                    .iter()
                    .map(|(k, v)| {
                        format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
                    })
                    .collect();
                let value = match mt.value {
                    v if v.is_nan() => "NaN".to_string(),
                    v if v.is_infinite() => (if v > 0.0 { "+Inf" } else { "-Inf" }).to_string(),
                    v => v.to_string(),
                };
                if labels.is_empty() {
                    let _ = writeln!(o, "{name} {value}");
                } else {
                    let _ = writeln!(o, "{name}{{{}}} {value}", labels.join(","));
                }
            }
        }
        o
    }

    /// A terminal summary.
    pub fn render_text(&self) -> String {
        let t = &self.totals;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "simulated {:.3} µs of `{}` (seed {}, fabric {}), {} events{}{}",
            self.simulated_seconds * 1e6,
            self.fabric,
            self.seed,
            self.fabric_hash,
            self.events,
            if self.engine == "packet" { String::new() } else { format!(" on the {}-level engine", self.engine) },
            if self.stopped_at_duration { ", stopped at the duration limit" } else { "" }
        );
        if let Some(p) = &self.partitions {
            let _ = writeln!(
                o,
                "  cut into {} partitions by {} (lookahead {:.3} µs): results are this cut's, the same for any thread count",
                p.count,
                p.cut_along,
                p.lookahead_seconds * 1e6
            );
        }
        if let Some(line) = self.fast_forward_line() {
            let _ = writeln!(o, "{line}");
        }
        if self.stopped_no_progress {
            let _ = writeln!(
                o,
                "  stopped: {} packets stuck and none delivered or dropped for {} s of simulated time \
                 (a host that never resumes, or a PFC deadlock); set duration_us to run longer",
                t.packets_in_flight,
                crate::engine::NO_PROGRESS_LIMIT.as_secs_f64()
            );
        }
        let _ = writeln!(
            o,
            "  flows: {} of {} completed{}",
            self.flows_completed,
            self.flows.len(),
            match &self.flow_completion {
                Some(q) => format!(
                    "; FCT p50 {:.2} µs, p99 {:.2} µs, max {:.2} µs",
                    q.p50_seconds * 1e6,
                    q.p99_seconds * 1e6,
                    q.max_seconds * 1e6
                ),
                None => String::new(),
            }
        );
        if t.qps_failed > 0 {
            let _ = writeln!(
                o,
                "  {} queue pairs gave up (retries exhausted, as retry_cnt 7 does): their flows never finish",
                t.qps_failed
            );
        }
        if !self.flows.is_empty() {
            let mean = self.flows.iter().map(|f| f.throughput_gbps).sum::<f64>() / self.flows.len() as f64;
            let _ =
                writeln!(o, "  throughput per flow: mean {:.2} Gb/s, Jain fairness {:.3}", mean, self.jain_fairness);
        }
        let _ = writeln!(
            o,
            "  packets: {} sent, {} delivered, {} dropped, {} in flight (data: {} sent, {} delivered, {} retransmitted)",
            t.packets_sent,
            t.packets_delivered,
            t.packets_dropped,
            t.packets_in_flight,
            t.data_packets_sent,
            t.data_packets_delivered,
            t.retransmitted_packets
        );
        let drops: Vec<String> =
            t.drops_by_reason.iter().filter(|(_, v)| **v > 0).map(|(k, v)| format!("{k} {v}")).collect();
        if !drops.is_empty() {
            let _ = writeln!(o, "  drops by reason: {}", drops.join(", "));
        }
        if self.engine != "packet" {
            // (Its packets are the flows' packet counts: nothing queued, paused or marked.)
            let _ = writeln!(o, "  queues, PFC, ECN, CNPs and buffers: not modelled by the {} engine", self.engine);
            return o;
        }
        // IB's congestion notifications are FECN marks answered by BECNs, its flow control
        // credits (no pause frame): the same counters, named as IB names them.
        let (mark, notify) = if self.infiniband { ("FECN", "BECN") } else { ("ECN", "CNP") };
        if self.infiniband {
            let _ = write!(o, "  flow control: credits per VL (no pause frames); ");
        } else {
            let _ = write!(o, "  PFC: {} pause frames, {} storm events; ", t.pfc_pause_frames, t.pfc_storm_events);
        }
        let _ = writeln!(
            o,
            "{mark}: {} marked; {notify}: {} sent, {} received",
            t.ecn_marked_packets, t.cnp_sent, t.cnp_received
        );
        if let Some(u) = &t.uet {
            let _ = writeln!(
                o,
                "  UET: {} packets trimmed, {} NACKs, {} resent selectively, {} placed out of order",
                u.trimmed_packets, u.trim_nacks, u.selective_retransmits, u.out_of_order_packets
            );
        }
        let _ = writeln!(
            o,
            "  queueing delay: p50 {:.2} µs, p99 {:.2} µs, max {:.2} µs",
            self.queue_delay.p50_seconds * 1e6,
            self.queue_delay.p99_seconds * 1e6,
            self.queue_delay.max_seconds * 1e6
        );
        if t.cnp_sent > 0 {
            let _ = writeln!(
                o,
                "  {notify} queueing delay per hop: p99 {:.2} µs, max {:.2} µs",
                self.cnp_queue_delay.p99_seconds * 1e6,
                self.cnp_queue_delay.max_seconds * 1e6
            );
        }
        if let Some(s) = self.switches.iter().max_by_key(|s| s.buffer_peak_bytes) {
            let _ = writeln!(
                o,
                "  deepest buffer: {} peaked at {} KB of {} KB",
                s.node,
                s.buffer_peak_bytes / 1000,
                s.buffer_bytes / 1000
            );
        }
        o
    }
}

/// `# HELP` text of a simulator metric (names and meanings as in the metric schema).
fn prometheus_help(name: &str) -> &'static str {
    match name {
        "rocelab_pfc_pause_frames_total" => "PFC pause frames by priority and direction.",
        "rocelab_pfc_paused_seconds_total" => "Time paused by PFC, by priority and direction.",
        "rocelab_pfc_storm_events_total" => "PFC storm detections (watchdog).",
        "rocelab_ecn_marked_packets_total" => "ECN CE-marked packets.",
        "rocelab_buffer_occupancy_peak_bytes" => "Peak buffer occupancy of a queue.",
        "rocelab_queue_delay_max_seconds" => "Longest queueing delay seen by a packet of a queue.",
        "rocelab_drops_total" => "Packets dropped, by reason.",
        "rocelab_link_utilization_ratio" => "Port bytes per second over line rate, over the run.",
        "rocelab_tx_bytes_total" => "Bytes sent by a port.",
        "rocelab_link_state_changes_total" => "Link down events.",
        "rocelab_cnp_sent_total" => "CNPs sent by the notification point.",
        "rocelab_cnp_received_total" => "CNPs received by the reaction point.",
        "rocelab_flow_completion_seconds" => "Flow completion time.",
        "rocelab_retransmitted_packets_total" => "Retransmitted packets.",
        "rocelab_out_of_order_packets_total" => {
            "Data packets received out of order and placed (adaptive routing or spraying, InfiniBand or RoCE, and UET)."
        }
        "rocelab_trimmed_packets_total" => "Data packets trimmed to their header by switches (UET).",
        "rocelab_trim_nacks_total" => "NACKs returned for trimmed packets (UET).",
        "rocelab_selective_retransmits_total" => "Packets resent on their own (UET selective retransmission).",
        _ => "rocelab simulator metric.",
    }
}

/// Sampled time series in the long format every `timeseries.csv` of rocelab uses (a scenario's
/// too): `time_seconds,metric,node,port,priority,value`, here the metric
/// `rocelab_buffer_occupancy_bytes` (port empty = the switch's whole buffer; no priority).
pub fn series_csv(snap: &Snapshot, m: &Model) -> String {
    let mut o = String::from("time_seconds,metric,node,port,priority,value\n");
    for r in &snap.series {
        let node = m.nodes.get(r.node as usize).map_or("", |n| n.name.as_str());
        let port = if r.port == u32::MAX || r.port as usize >= m.ports.len() {
            String::new()
        } else {
            m.port_name(rocelab_model::PortId(r.port))
        };
        let _ =
            writeln!(o, "{:.12},rocelab_buffer_occupancy_bytes,{},{},,{}", r.time.as_secs_f64(), node, port, r.bytes);
    }
    o
}
