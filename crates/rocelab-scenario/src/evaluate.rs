//! A run's counters and telemetry turned into the kind's headline metric and its other figures.

use crate::fabric;
use crate::setup::{Ctx, Setup};
use crate::telemetry::Series;
use rocelab_model::config::ScenarioKind;
use rocelab_model::{Model, NodeId, PortId, SimTime};
use rocelab_sim::stats::DropReason;
use rocelab_sim::Snapshot;
use std::collections::BTreeMap;

type Metrics = BTreeMap<&'static str, Option<f64>>;

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
        n if n.contains("_gbps") => "Gb/s",
        n if n.ends_with("_us") => "µs",
        n if n.ends_with("_bytes") => "B",
        n if n.ends_with("_packets") || n.ends_with("_drops") || n.starts_with("packets_") => "packets",
        _ => "count",
    }
}

/// Payload goodput between two instants, b/s (from the nearest samples at or before them).
fn goodput(series: &Series, t0: SimTime, t1: SimTime) -> Option<f64> {
    let (a, b) = (series.at(t0), series.at(t1));
    let dt = b.time.0.checked_sub(a.time.0).filter(|d| *d > 0)? as f64 * 1e-12;
    Some((b.payload_delivered - a.payload_delivered) as f64 * 8.0 / dt)
}

/// Wire bytes sent by `ports` between two instants.
fn tx_between(series: &Series, ports: &[PortId], t0: SimTime, t1: SimTime) -> u64 {
    let (a, b) = (series.at(t0), series.at(t1));
    ports.iter().map(|p| b.tx[p.idx()] - a.tx[p.idx()]).sum()
}

fn drops_at(snap: &Snapshot, p: PortId, reason: Option<DropReason>) -> u64 {
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
fn ecmp_imbalance(m: &Model, series: &Series, t0: SimTime, t1: SimTime) -> Option<f64> {
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

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// What a run left to evaluate.
pub struct Outcome<'a> {
    pub snap: &'a Snapshot,
    pub series: &'a Series,
    pub collective: Option<&'a rocelab_workload::Prepared>,
    /// When the port facing the receiver was first paused.
    pub first_pause: Option<SimTime>,
    /// The reference run (mixed: the RDMA messages alone).
    pub alone: Option<&'a Snapshot>,
    /// The steady-state kinds' judged window.
    pub steady: Option<&'a crate::steady::Steady>,
}

pub fn evaluate(cx: &Ctx, m: &Model, s: &Setup, o: &Outcome) -> (Option<f64>, Metrics) {
    let (snap, series, collective, first_pause, alone) = (o.snap, o.series, o.collective, o.first_pause, o.alone);
    let c = &snap.counters;
    let mut mt: Metrics = BTreeMap::new();
    let now = snap.now;
    let rate = cx.scale.rate_bps;
    mt.insert("pfc_frames", Some(c.pfc_frames_sent as f64));
    mt.insert("pfc_storms", Some(c.pfc_storms as f64));
    mt.insert("ecn_marked", Some(c.ecn_marked as f64));
    mt.insert("cnp_sent", Some(c.cnp_sent as f64));
    mt.insert("dropped_packets", Some(c.dropped as f64));
    mt.insert("retransmitted_packets", Some(c.retransmitted as f64));
    mt.insert("max_queue_bytes", Some(max_queue(m, snap) as f64));
    mt.insert("goodput_gbps", goodput(series, SimTime::ZERO, now).map(|g| g / 1e9));
    let k = &s.marks;
    // A steady kind's rates are the judged window's; the others', the whole run's.
    let st = o.steady;
    if let Some(w) = st {
        mt.insert("goodput_gbps", Some(w.goodput_gbps));
    }
    let span = st.map_or(now.as_secs_f64(), |w| (w.to_us - w.from_us) * 1e-6);
    let flow_bytes = |idx: &mut dyn Iterator<Item = usize>| -> Vec<f64> {
        match st {
            Some(w) => idx.filter_map(|i| w.flow_bytes.get(i)).map(|b| *b as f64).collect(),
            None => flow_bytes(snap, idx),
        }
    };
    let head = match cx.c.kind {
        ScenarioKind::Sustained => {
            let ideal = k.senders.len() as f64 * rate * span / 8.0;
            let bytes = flow_bytes(&mut (0..s.msgs.len()));
            mt.insert("jain_fairness", Some(rocelab_sim::report::jain(&bytes)));
            let delivered = st.map_or(c.payload_delivered_bytes as f64, |_| bytes.iter().sum());
            Some(delivered / ideal)
        }
        ScenarioKind::Incast => {
            let fin = snap.flows.iter().map(|f| f.finish).collect::<Option<Vec<SimTime>>>();
            let first = snap.flows.iter().map(|f| f.start).min().unwrap_or(SimTime::ZERO);
            let completion = fin.and_then(|v| v.into_iter().max()).map(|t| t.saturating_sub(first));
            mt.insert("ideal_us", Some(k.ideal.as_us_f64()));
            mt.insert("completion_us", completion.map(|t| t.as_us_f64()));
            completion.map(|t| t.0 as f64 / k.ideal.0.max(1) as f64)
        }
        ScenarioKind::Microburst => {
            let fcts: Vec<f64> =
                snap.flows.iter().filter_map(|f| f.finish.map(|e| e.saturating_sub(f.start).as_us_f64())).collect();
            mt.insert("burst_fct_mean_us", mean(&fcts));
            mt.insert("bursts_completed", Some(fcts.len() as f64));
            Some(c.pfc_frames_sent as f64)
        }
        ScenarioKind::Hotspot => {
            let dur = span;
            if !k.others.is_empty() {
                let v = flow_bytes(&mut k.flows_of_others.iter().copied());
                let frac = v.iter().sum::<f64>() * 8.0 / (v.len().max(1) as f64 * rate * dur);
                mt.insert("victim_goodput_fraction", Some(frac));
            }
            // The hot messages come first, the victims' after them.
            let hot = flow_bytes(&mut (0..k.flows_of_others.first().copied().unwrap_or(s.msgs.len())));
            mt.insert("hot_goodput_fraction", Some(hot.iter().sum::<f64>() * 8.0 / (rate * dur)));
            k.port.map(|p| snap.ports[p.idx()].queue_peak_bytes.iter().copied().max().unwrap_or(0) as f64)
        }
        ScenarioKind::SlowReceiver => {
            let dst = k.dst.unwrap_or(NodeId(0));
            let d = fabric::distances(m, dst);
            let spread = snap
                .ports
                .iter()
                .filter(|p| p.pfc_rx.iter().sum::<u64>() > 0)
                .map(|p| d[p.node.idx()])
                .max()
                .unwrap_or(0);
            let fired = series.samples.iter().find(|x| x.storms > 0).map(|x| x.time);
            mt.insert("watchdog_storms", Some(c.pfc_storms as f64));
            mt.insert("watchdog_fired_after_us", fired.map(|t| t.saturating_sub(k.at).as_us_f64()));
            // From the first pause of the port facing the slow host: the watchdog's own clock
            // (to within one sampling interval).
            mt.insert("first_pause_after_us", first_pause.map(|t| t.saturating_sub(k.at).as_us_f64()));
            mt.insert(
                "watchdog_fired_after_pause_us",
                fired.zip(first_pause).map(|(f, p)| f.saturating_sub(p).as_us_f64()),
            );
            mt.insert("watchdog_drops", Some(c.drops_by_reason[DropReason::Watchdog as usize] as f64));
            mt.insert(
                "paused_ports",
                Some(snap.ports.iter().filter(|p| p.pfc_rx.iter().sum::<u64>() > 0).count() as f64),
            );
            Some(spread as f64)
        }
        ScenarioKind::LinkLoss | ScenarioKind::LinkFlap | ScenarioKind::SwitchReboot | ScenarioKind::RoutingChange => {
            let at = k.at;
            let before = goodput(series, SimTime(at.0 / 2), at);
            let after = goodput(series, at + SimTime(now.0.saturating_sub(at.0) / 2), now);
            mt.insert("goodput_before_gbps", before.map(|g| g / 1e9));
            mt.insert("goodput_after_gbps", after.map(|g| g / 1e9));
            let lost = c.drops_by_reason[DropReason::LinkDown as usize] as f64;
            mt.insert("packets_lost_link_down", Some(lost));
            mt.insert("timeouts", Some(c.timeouts as f64));
            match cx.c.kind {
                ScenarioKind::LinkLoss => match (before, after) {
                    (Some(b), Some(a)) if b > 0.0 => Some(a / b),
                    _ => None,
                },
                ScenarioKind::LinkFlap => {
                    let dip = series
                        .samples
                        .windows(2)
                        .filter(|w| w[0].time >= at)
                        .map(|w| {
                            (w[1].payload_delivered - w[0].payload_delivered) as f64 * 8.0
                                / ((w[1].time.0 - w[0].time.0).max(1) as f64 * 1e-12)
                        })
                        .fold(f64::INFINITY, f64::min);
                    mt.insert("goodput_min_after_fault_gbps", dip.is_finite().then_some(dip / 1e9));
                    Some(lost)
                }
                ScenarioKind::SwitchReboot => {
                    let sw = k.switch.unwrap_or(NodeId(0));
                    let own: Vec<PortId> = m.node(sw).ports().flat_map(|p| [p, m.port(p).peer]).collect();
                    let inside: u64 = own.iter().map(|p| drops_at(snap, *p, Some(DropReason::LinkDown))).sum();
                    let all: u64 = (0..snap.ports.len()).map(|i| drops_at(snap, PortId(i as u32), None)).sum();
                    let inside_all: u64 = own.iter().map(|p| drops_at(snap, *p, None)).sum();
                    mt.insert("packets_lost_elsewhere", Some((all - inside_all) as f64));
                    let others: Vec<PortId> =
                        fabric::spines(m).into_iter().filter(|n| *n != sw).flat_map(|n| m.node(n).ports()).collect();
                    let mine: Vec<PortId> = m.node(sw).ports().collect();
                    let pre = (SimTime(at.0 / 2), at);
                    let rate_of = |ports: &[PortId], t0: SimTime, t1: SimTime| {
                        let dt = series.at(t1).time.0.saturating_sub(series.at(t0).time.0).max(1);
                        tx_between(series, ports, t0, t1) as f64 * 8.0 / (dt as f64 * 1e-12)
                    };
                    let base = rate_of(&others, pre.0, pre.1);
                    mt.insert("other_spines_gbps_before", Some(base / 1e9));
                    mt.insert("rebooted_gbps_before", Some(rate_of(&mine, pre.0, pre.1) / 1e9));
                    let down_end = s
                        .params
                        .get("down_us")
                        .and_then(|v| v.as_f64())
                        .map_or(now, |d| at + SimTime::from_secs_f64(d * 1e-6));
                    mt.insert("other_spines_gbps_during", Some(rate_of(&others, at, down_end.min(now)) / 1e9));
                    mt.insert("rebooted_gbps_during", Some(rate_of(&mine, at, down_end.min(now)) / 1e9));
                    // The first interval after the reboot in which the other spines carry more
                    // than before it.
                    let shift = series.samples.windows(2).filter(|w| w[0].time >= at).find(|w| {
                        let bytes: u64 = others.iter().map(|p| w[1].tx[p.idx()] - w[0].tx[p.idx()]).sum();
                        bytes as f64 * 8.0 / ((w[1].time.0 - w[0].time.0).max(1) as f64 * 1e-12) > base * 1.02
                    });
                    mt.insert("time_to_shift_us", shift.map(|w| w[1].time.saturating_sub(at).as_us_f64()));
                    Some(inside as f64)
                }
                _ => {
                    let before = ecmp_imbalance(m, series, SimTime(at.0 / 2), at);
                    let settle = at + SimTime(now.0.saturating_sub(at.0) / 4);
                    let after = ecmp_imbalance(m, series, settle, now);
                    mt.insert("ecmp_imbalance_before", before);
                    mt.insert("ecmp_imbalance_after", after);
                    match (before, after) {
                        (Some(b), Some(a)) => Some(a - b),
                        _ => None,
                    }
                }
            }
        }
        ScenarioKind::FirmwareMix => {
            let (mut other, mut fleet) = (Vec::new(), Vec::new());
            let bytes = flow_bytes(&mut (0..k.senders.len()));
            for (i, &b) in bytes.iter().enumerate() {
                if k.flows_of_others.contains(&i) {
                    other.push(b)
                } else {
                    fleet.push(b)
                }
            }
            let dur = span.max(1e-12);
            mt.insert("other_goodput_gbps_mean", mean(&other).map(|b| b * 8.0 / dur / 1e9));
            mt.insert("fleet_goodput_gbps_mean", mean(&fleet).map(|b| b * 8.0 / dur / 1e9));
            match (mean(&other), mean(&fleet)) {
                (Some(o), Some(f)) if f > 0.0 => Some(o / f),
                _ => None,
            }
        }
        ScenarioKind::Mixed => {
            let k = k.senders.len();
            let fct = |snap: &Snapshot| -> Option<f64> {
                let v: Option<Vec<f64>> = snap
                    .flows
                    .iter()
                    .take(k)
                    .map(|f| f.finish.map(|e| e.saturating_sub(f.start).as_us_f64()))
                    .collect();
                v.and_then(|v| mean(&v))
            };
            let with = fct(snap);
            let base = alone.and_then(fct);
            mt.insert("rdma_fct_us", with);
            mt.insert("rdma_fct_alone_us", base);
            let tcp: Vec<&rocelab_sim::snapshot::FlowRecord> = snap.flows.iter().skip(k).collect();
            let dst = s.marks.dst.unwrap_or(NodeId(0));
            let line = m.host_speed(dst).gbps() * 1e9;
            let tcp_bytes: u64 = tcp.iter().map(|f| f.delivered_bytes).sum();
            mt.insert("tcp_goodput_fraction", Some(tcp_bytes as f64 * 8.0 / (line * now.as_secs_f64().max(1e-12))));
            mt.insert(
                "tcp_retransmitted_packets",
                Some(tcp.iter().map(|f| f.retransmitted_packets).sum::<u64>() as f64),
            );
            let class_drops = |name: &str| -> Option<f64> {
                let c = m.qos.class_by_name(name)?;
                let q = m.qos.classes[c].queue as usize;
                Some(snap.ports.iter().map(|p| p.drops[q].iter().sum::<u64>()).sum::<u64>() as f64)
            };
            let tcp_class = s.params.get("tcp_class").and_then(|v| v.as_str()).unwrap_or("");
            mt.insert("tcp_class_drops", class_drops(tcp_class));
            // Pause frames sent for TCP's priority: PFC braking TCP (it is in a lossless class).
            let prio = s.params.get("tcp_priority").and_then(|v| v.as_u64()).unwrap_or(0).min(7) as usize;
            mt.insert("tcp_priority_pause_frames", Some(snap.ports.iter().map(|p| p.pfc_tx[prio]).sum::<u64>() as f64));
            mt.insert("rdma_class_drops", class_drops(&m.qos.classes[m.qos.rdma_class()].name));
            with.zip(base).filter(|(_, b)| *b > 0.0).map(|(w, b)| w / b)
        }
        ScenarioKind::Collective => {
            let p = collective.expect("a collective run has its workload");
            let t = p.time();
            let size = s.params.get("size_bytes").and_then(|v| v.as_u64()).unwrap_or(0) as f64;
            let op = cx.c.op.as_deref().unwrap_or("all_reduce");
            let factor = rocelab_workload::parse_op(op).map(|o| o.busbw_factor(p.ranks)).unwrap_or(1.0);
            let busbw = t.map(|t| size / t.as_secs_f64() * factor);
            mt.insert("time_us", t.map(|t| t.as_us_f64()));
            mt.insert("busbw_gbytes_per_s", busbw.map(|b| b / 1e9));
            mt.insert("failed_chunks", Some(p.failed_chunks() as f64));
            let bound_bps = s.params.get("busbw_bound_gbps").and_then(|v| v.as_f64()).map_or(rate, |g| g * 1e9);
            busbw.map(|b| b * 8.0 / bound_bps)
        }
    };
    (head, mt)
}
