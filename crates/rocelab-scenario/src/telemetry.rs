//! Telemetry over time for scenario runs, in the metric names of `docs/metrics.md`.
//!
//! The run is advanced one sampling interval at a time (`Sim::run_until`); at each instant the
//! engine's public counter snapshot (`Sim::snapshot_totals`, no per-flow rows) is differenced
//! against the previous one. A row is one metric sample (long format):
//! `time_seconds,metric,node,port,priority,value`. What is written per sample:
//!
//! * `rocelab_link_utilization_ratio` per rail (host links of rail `r`, both directions; on a
//!   fabric without rails, one row for all host links, `port` = `host-links`) and for the
//!   leaf-spine tier (`port` = `spine-uplinks`);
//! * `rocelab_goodput_bits_per_second`: payload delivered in order, fabric-wide;
//! * `rocelab_pfc_pause_frames_total` per port and priority (frames sent), the running total,
//!   written when it moved in the interval — the pause timeline;
//! * `rocelab_buffer_occupancy_bytes` per switch egress port holding data, and per switch
//!   (no port: the shared buffer);
//! * `rocelab_ecn_marked_packets_total`, `rocelab_cnp_sent_total`: fabric-wide running totals;
//! * `rocelab_link_state_changes_total` per port that changed in the interval;
//! * `rocelab_pfc_storm_events_total` per port and priority that the watchdog fired on.
//!
//! Size bound, whatever the fabric: at most [`MAX_SAMPLES`] instants (a shorter interval is
//! widened) and [`MAX_ROWS`] rows in all (rows past it are counted, not kept), so a scenario's
//! `timeseries.csv` stays under about 15 MB.

use rocelab_model::{Model, NodeId, PortId, SimTime};
use rocelab_sim::{Sim, Snapshot};
use std::fmt::Write;

/// Sampling instants per run at most.
pub const MAX_SAMPLES: u64 = 400;
/// Rows kept at most.
pub const MAX_ROWS: usize = 250_000;

/// One metric sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub time: SimTime,
    pub metric: &'static str,
    /// Node name index, or `u32::MAX` for fabric-wide rows.
    pub node: u32,
    /// Port, or a group label for aggregate rows.
    pub port: Label,
    pub priority: Option<u8>,
    pub value: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Label {
    None,
    Port(PortId),
    Rail(u32),
    Group(&'static str),
}

/// Counters at one sampling instant that scenarios compute their metrics from.
#[derive(Clone, Debug)]
pub struct Sample {
    pub time: SimTime,
    /// Wire bytes sent per port, cumulative.
    pub tx: Vec<u64>,
    pub payload_delivered: u64,
    pub pfc_frames: u64,
    pub storms: u64,
    pub dropped: u64,
}

/// The sampled run.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub interval: SimTime,
    pub rows: Vec<Row>,
    /// Rows not kept (past `MAX_ROWS`).
    pub rows_dropped: u64,
    /// One per instant, the first at time 0.
    pub samples: Vec<Sample>,
}

impl Series {
    fn push(&mut self, r: Row) {
        if self.rows.len() < MAX_ROWS {
            self.rows.push(r);
        } else {
            self.rows_dropped += 1;
        }
    }

    /// The sample at or just before `t`.
    pub fn at(&self, t: SimTime) -> &Sample {
        let i = self.samples.partition_point(|s| s.time <= t).max(1) - 1;
        &self.samples[i]
    }

    /// The long-format CSV.
    pub fn csv(&self, m: &Model) -> String {
        let mut o = String::from("time_seconds,metric,node,port,priority,value\n");
        for r in &self.rows {
            let node = m.nodes.get(r.node as usize).map_or("", |n| n.name.as_str());
            let port = match &r.port {
                Label::None => String::new(),
                Label::Port(p) => m.port_name(*p),
                Label::Rail(k) => format!("rail{k}"),
                Label::Group(g) => g.to_string(),
            };
            let prio = r.priority.map_or(String::new(), |p| p.to_string());
            let _ = writeln!(o, "{:.9},{},{},{},{},{}", r.time.as_secs_f64(), r.metric, node, port, prio, fmt(r.value));
        }
        o
    }
}

fn fmt(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.6}")
    }
}

fn sample(snap: &Snapshot) -> Sample {
    Sample {
        time: snap.now,
        tx: snap.ports.iter().map(|p| p.tx_bytes).collect(),
        payload_delivered: snap.counters.payload_delivered_bytes,
        pfc_frames: snap.counters.pfc_frames_sent,
        storms: snap.counters.pfc_storms,
        dropped: snap.counters.dropped,
    }
}

/// The sampling interval a run gets: `want`, widened to keep within `MAX_SAMPLES` over
/// `horizon`, at least 1 ns.
pub fn interval(want: Option<SimTime>, horizon: SimTime) -> SimTime {
    let floor = SimTime(horizon.0.div_ceil(MAX_SAMPLES)).max(SimTime::from_ns(1));
    let t = want.unwrap_or(SimTime(horizon.0 / 100)).max(floor);
    // Whole nanoseconds: sample times that print as they are.
    SimTime(t.0.div_ceil(1000) * 1000)
}

/// Runs `sim` to its end (its duration, or completion), sampling every `interval`, then closes
/// its books. Stops sampling after `MAX_SAMPLES` instants (the run itself goes on).
pub fn run_sampled(sim: &mut Sim, m: &Model, interval: SimTime) -> Series {
    run_sampled_until(sim, m, interval, &mut |_, _| false).0
}

/// The same, with `stop` hearing every sample: when it returns true the run ends there, its
/// books left open (a snapshot still counts open pauses up to now). Returns whether it did.
/// `stop` may add faults to the run (a fault that strikes once the load has settled).
pub fn run_sampled_until(
    sim: &mut Sim,
    m: &Model,
    interval: SimTime,
    stop: &mut dyn FnMut(&mut Sim, &Snapshot) -> bool,
) -> (Series, bool) {
    let mut s = Series { interval, ..Series::default() };
    let groups = Groups::new(m);
    let mut prev = sim.snapshot_totals();
    s.samples.push(sample(&prev));
    stop(sim, &prev);
    let mut t = SimTime::ZERO;
    let end = sim.duration();
    for _ in 0..MAX_SAMPLES {
        t += interval;
        if let Some(e) = end {
            t = t.min(e);
        }
        sim.run_until(t);
        let cur = sim.snapshot_totals();
        record(&mut s, m, &groups, &prev, &cur);
        s.samples.push(sample(&cur));
        if stop(sim, &cur) {
            return (s, true);
        }
        prev = cur;
        // Ended before the instant (completion), or reached the duration.
        if sim.now() < t || end == Some(t) || sim.finished() {
            break;
        }
    }
    sim.run(&mut |_| {});
    (s, false)
}

/// Host ports by rail (or all together), and the spine uplinks.
struct Groups {
    rails: Vec<(Label, Vec<PortId>)>,
    uplinks: Vec<PortId>,
}

impl Groups {
    fn new(m: &Model) -> Groups {
        let host_ports = |hs: &[NodeId]| -> Vec<PortId> { hs.iter().flat_map(|h| m.node(*h).ports()).collect() };
        let rails = if m.rails.is_empty() {
            let hosts: Vec<NodeId> = m.hosts().collect();
            vec![(Label::Group("host-links"), host_ports(&hosts))]
        } else {
            m.rails.iter().map(|r| (Label::Rail(r.index), host_ports(&r.hosts))).collect()
        };
        Groups { rails, uplinks: crate::fabric::spine_uplinks(m) }
    }
}

fn record(s: &mut Series, m: &Model, g: &Groups, prev: &Snapshot, cur: &Snapshot) {
    let t = cur.now;
    let dt = (cur.now.0.saturating_sub(prev.now.0)).max(1) as f64 * 1e-12;
    let row = |metric, node: u32, port, priority, value| Row { time: t, metric, node, port, priority, value };
    let util = |ports: &[PortId]| -> f64 {
        let mut bytes = 0u64;
        let mut cap = 0.0;
        for &p in ports {
            for q in [p, m.port(p).peer] {
                bytes += cur.ports[q.idx()].tx_bytes - prev.ports[q.idx()].tx_bytes;
                cap += m.port(q).speed.gbps() * 1e9 / 8.0 * dt;
            }
        }
        if cap > 0.0 {
            bytes as f64 / cap
        } else {
            0.0
        }
    };
    let mut groups: Vec<(Label, &[PortId])> = g.rails.iter().map(|(l, p)| (l.clone(), &p[..])).collect();
    if !g.uplinks.is_empty() {
        groups.push((Label::Group("spine-uplinks"), &g.uplinks));
    }
    for (label, ports) in groups {
        s.push(row("rocelab_link_utilization_ratio", u32::MAX, label, None, util(ports)));
    }
    let (c, b) = (&cur.counters, &prev.counters);
    let goodput = (c.payload_delivered_bytes - b.payload_delivered_bytes) as f64 * 8.0 / dt;
    s.push(row("rocelab_goodput_bits_per_second", u32::MAX, Label::None, None, goodput));
    s.push(row("rocelab_ecn_marked_packets_total", u32::MAX, Label::None, None, c.ecn_marked as f64));
    s.push(row("rocelab_cnp_sent_total", u32::MAX, Label::None, None, c.cnp_sent as f64));
    for (a, b) in cur.ports.iter().zip(&prev.ports) {
        // Counters as running totals, written for a port only when they moved in the interval.
        let mut per_port = |metric, prio: Option<usize>, now: u64, before: u64| {
            if now != before {
                s.push(row(metric, a.node.0, Label::Port(a.port), prio.map(|p| p as u8), now as f64));
            }
        };
        for prio in 0..8 {
            per_port("rocelab_pfc_pause_frames_total", Some(prio), a.pfc_tx[prio], b.pfc_tx[prio]);
            per_port("rocelab_pfc_storm_events_total", Some(prio), a.storms[prio], b.storms[prio]);
        }
        per_port("rocelab_link_state_changes_total", None, a.link_state_changes, b.link_state_changes);
        let q: u64 = a.queued_bytes.iter().sum();
        if q > 0 && !m.node(a.node).is_host() {
            s.push(row("rocelab_buffer_occupancy_bytes", a.node.0, Label::Port(a.port), None, q as f64));
        }
    }
    for b in &cur.switches {
        s.push(row("rocelab_buffer_occupancy_bytes", b.node.0, Label::None, None, b.used_bytes as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_keeps_the_samples_bounded_and_whole_nanoseconds() {
        let h = SimTime::from_us(1000);
        assert_eq!(interval(None, h), SimTime::from_us(10));
        // Asked for 1 ns over 1 ms: widened to 400 samples.
        assert_eq!(interval(Some(SimTime::from_ns(1)), h), SimTime::from_ns(2500));
        assert_eq!(interval(Some(SimTime(1_234_567)), h).0 % 1000, 0);
        let long = SimTime::from_ms(10_000);
        assert!(long.0 / interval(Some(SimTime(1)), long).0 <= MAX_SAMPLES);
    }

    #[test]
    fn rows_past_the_cap_are_counted_not_kept() {
        let mut s = Series::default();
        let row = Row { time: SimTime::ZERO, metric: "m", node: 0, port: Label::None, priority: None, value: 1.0 };
        for _ in 0..MAX_ROWS + 5 {
            s.push(row.clone());
        }
        assert_eq!((s.rows.len(), s.rows_dropped), (MAX_ROWS, 5));
    }
}
