//! A run's counters and telemetry turned into the figures every kind reports, and the
//! readers each kind's evaluation (`kinds/<kind>.rs`) takes its own figures with.

use crate::fabric;
use crate::setup::{Ctx, Setup};
use crate::telemetry::Series;
use rocelab_model::{Model, NodeId, PortId, SimTime};
use rocelab_sim::stats::DropReason;
use rocelab_sim::Snapshot;
use std::collections::BTreeMap;

pub type Metrics = BTreeMap<&'static str, Option<f64>>;

/// The unit of a metric of [`evaluate`], by its name (ratios say what they are a ratio of).
pub fn unit_of(name: &str) -> &'static str {
    match name {
        "pfc_frames" | "tcp_priority_pause_frames" => "PFC frames",
        "pfc_storms" | "watchdog_storms" => "watchdog storm events",
        "ecn_marked" => "packets marked",
        "cnp_sent" => "CNPs",
        "jain_fairness" => "Jain index over the flows' bytes (1 = equal)",
        "victim_goodput_fraction" | "hot_goodput_fraction" => "payload / (senders × line rate × time)",
        "tcp_goodput_fraction" => "TCP payload / (receiver line rate × time)",
        "bursts_completed" => "bursts",
        "paused_ports" => "ports",
        "failed_chunks" => "chunks",
        "ecmp_imbalance_before" | "ecmp_imbalance_after" => "max / mean uplink bytes − 1",
        "timeouts" => "transport timeouts",
        "busbw_gbytes_per_s" => "GB/s",
        "busbw_fraction_of_ideal" => "busbw / busbw on the fabric made non-blocking (same NICs, NCCL model, seed)",
        "ecmp_imbalance" => "max / mean uplink bytes − 1",
        "uplink_utilization_max" => "the busiest leaf uplink's bytes / (line rate × run)",
        "qos_bound" => "1 / the job's guaranteed scheduler share",
        "slowdown_over_qos_bound" => "slowdown / qos_bound",
        "rate_after_reconnect" => "the unsent half / (reconnection to completion × line rate)",
        "failed_qps" => "QPs whose retries ran out",
        "stalled_flows" => "flows that moved nothing in the settled window after the fault struck",
        "return_stalled_flows" => "flows that moved nothing in the settled window after the return",
        "qps_failed_in_outage" => "QPs of stalled flows whose retries ran out during the outage",
        "stalled_give_up_us" => "µs after the fault: transport timeout × (retry_cnt + 1)",
        "outage_undelivered_bytes" => "B: (goodput before − during) × outage × cycles / 8",
        n if n.contains("_gbps") => "Gb/s",
        n if n.ends_with("_us") => "µs",
        n if n.ends_with("_bytes") => "B",
        n if n.ends_with("_packets") || n.ends_with("_drops") || n.starts_with("packets_") => "packets",
        _ => "count",
    }
}

/// Payload goodput between two instants, b/s (from the nearest samples at or before them).
pub fn goodput(series: &Series, t0: SimTime, t1: SimTime) -> Option<f64> {
    let (a, b) = (series.at(t0), series.at(t1));
    let dt = b.time.0.checked_sub(a.time.0).filter(|d| *d > 0)? as f64 * 1e-12;
    Some((b.payload_delivered - a.payload_delivered) as f64 * 8.0 / dt)
}

/// Wire bytes sent by `ports` between two instants.
pub fn tx_between(series: &Series, ports: &[PortId], t0: SimTime, t1: SimTime) -> u64 {
    let (a, b) = (series.at(t0), series.at(t1));
    ports.iter().map(|p| b.tx[p.idx()] - a.tx[p.idx()]).sum()
}

pub fn drops_at(snap: &Snapshot, p: PortId, reason: Option<DropReason>) -> u64 {
    let d = &snap.ports[p.idx()].drops;
    match reason {
        Some(r) => d.iter().map(|q| q[r as usize]).sum(),
        None => d.iter().flatten().sum(),
    }
}

fn max_queue(m: &Model, snap: &Snapshot) -> u64 {
    snap.ports.iter().filter(|p| !m.node(p.node).is_host()).flat_map(|p| p.queue_peak_bytes).max().unwrap_or(0)
}

/// Mean over leaves with traffic of (max / mean − 1) of their uplinks' bytes in a window.
pub fn ecmp_imbalance(m: &Model, series: &Series, t0: SimTime, t1: SimTime) -> Option<f64> {
    let ups = fabric::spine_uplinks(m);
    let mut by_leaf: BTreeMap<NodeId, Vec<u64>> = BTreeMap::new();
    let (a, b) = (series.at(t0), series.at(t1));
    for p in ups {
        let bytes = fabric::link_bytes(m, &b.tx, p) - fabric::link_bytes(m, &a.tx, p);
        by_leaf.entry(m.port(p).node).or_default().push(bytes);
    }
    let v: Vec<f64> = by_leaf
        .values()
        .filter(|x| x.len() >= 2)
        .filter_map(|x| {
            let mean = x.iter().sum::<u64>() as f64 / x.len() as f64;
            (mean > 0.0).then(|| *x.iter().max().unwrap_or(&0) as f64 / mean - 1.0)
        })
        .collect();
    // No leaf with a choice of uplinks: one path each, nothing to imbalance.
    Some(if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 })
}

fn flow_bytes(snap: &Snapshot, idx: impl Iterator<Item = usize>) -> Vec<f64> {
    idx.filter_map(|i| snap.flows.get(i)).map(|f| f.delivered_bytes as f64).collect()
}

pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// What a run left to evaluate.
pub struct Outcome<'a> {
    pub snap: &'a Snapshot,
    pub series: &'a Series,
    pub collective: Option<&'a rocelab_workload::Prepared>,
    /// When the port facing the receiver was first paused.
    pub first_pause: Option<SimTime>,
    /// The steady-state kinds' judged window.
    pub steady: Option<&'a crate::steady::Steady>,
    /// A fault kind's edge: the settled windows before and after its event (`edges`).
    pub settled: Option<(Option<&'a crate::steady::Steady>, Option<&'a crate::steady::Steady>)>,
}

/// A run being evaluated: what it left, and the figures found so far.
pub struct Eval<'a> {
    pub cx: &'a Ctx<'a>,
    pub m: &'a Model,
    pub s: &'a Setup,
    pub o: &'a Outcome<'a>,
    pub mt: Metrics,
}

impl Eval<'_> {
    pub fn put(&mut self, k: &'static str, v: Option<f64>) {
        self.mt.insert(k, v);
    }

    /// Seconds judged: a steady kind's window, the others' whole run.
    pub fn span(&self) -> f64 {
        self.o.steady.map_or(self.o.snap.now.as_secs_f64(), |w| (w.to_us - w.from_us) * 1e-6)
    }

    /// Payload bytes of messages `idx`: in the judged window for a steady kind, else the run.
    pub fn flow_bytes(&self, idx: impl Iterator<Item = usize>) -> Vec<f64> {
        match self.o.steady {
            Some(w) => idx.filter_map(|i| w.flow_bytes.get(i)).map(|b| *b as f64).collect(),
            None => flow_bytes(self.o.snap, idx),
        }
    }
}

/// The figures every kind reports; the kind's own evaluation adds its headline and the rest.
pub fn evaluate<'a>(cx: &'a Ctx<'a>, m: &'a Model, s: &'a Setup, o: &'a Outcome<'a>) -> (Option<f64>, Metrics) {
    let (snap, series) = (o.snap, o.series);
    let c = &snap.counters;
    let mut mt: Metrics = BTreeMap::new();
    mt.insert("pfc_frames", Some(c.pfc_frames_sent as f64));
    mt.insert("pfc_storms", Some(c.pfc_storms as f64));
    mt.insert("ecn_marked", Some(c.ecn_marked as f64));
    mt.insert("cnp_sent", Some(c.cnp_sent as f64));
    mt.insert("dropped_packets", Some(c.dropped as f64));
    mt.insert("retransmitted_packets", Some(c.retransmitted as f64));
    mt.insert("max_queue_bytes", Some(max_queue(m, snap) as f64));
    mt.insert("goodput_gbps", goodput(series, SimTime::ZERO, snap.now).map(|g| g / 1e9));
    // A steady kind's rates are the judged window's; the others', the whole run's.
    if let Some(w) = o.steady {
        mt.insert("goodput_gbps", Some(w.goodput_gbps));
    }
    let mut e = Eval { cx, m, s, o, mt };
    let head = crate::kinds::of(&cx.p).evaluate(&mut e);
    (head, e.mt)
}
