//! Data quality: what in a window of two snapshots cannot be believed or is not there.
//!
//! Rules read counter deltas; a delta that no link could produce is corrupt data (a driver
//! returning `-1` as an unsigned value, a torn read, a counter file from another host), and a
//! counter or file present in one snapshot and gone in the other leaves its rules blind.
//! Either way the doctor says so, as a [`DataProblem`], instead of turning it into a finding
//! or into silence. Corrupt counters are removed from both snapshots of the window before
//! any rule or rate sees them.
//!
//! Bounds, per counter over a window of `T` seconds on a link of `S` Gb/s (1.6 Tb/s when
//! the snapshot does not give the speed, the fastest Ethernet port there is):
//!
//! * a `*duration*` counter (µs) grows by at most `T` (10 % slack: the snapshot time is taken
//!   once, the counters are read over the collection);
//! * a `*bytes*` counter by at most `S/8 · T`, a `*bits*` counter by at most `S · T`;
//! * any other counter (packets, frames, events) by at most one minimum-size frame per
//!   84 byte times (64 B frame, preamble and inter-frame gap): `S / 672 · T`;
//! * no counter value is at or above 2⁶³: a 64-bit counter never gets there in practice, but
//!   `u64::MAX` (a `-1` printed unsigned) does.

use crate::snapshot::Snapshot;
use crate::util::thousands;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A piece of input that was not used, and why.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct DataProblem {
    pub node: String,
    /// The netdev, RDMA port, switch port or file the problem is about.
    pub subject: String,
    pub message: String,
}

const SLACK: f64 = 1.1;
const UNKNOWN_SPEED_GBPS: f64 = 1600.0;
/// Bits on the wire per minimum-size Ethernet frame (64 B + 8 B preamble + 12 B gap).
const MIN_FRAME_BITS: f64 = 84.0 * 8.0;
const ABSURD: u64 = 1 << 63;

/// How much `name` can grow in `secs` on a link of `gbps`, and the unit to say it in.
fn bound(name: &str, secs: f64, gbps: f64) -> (f64, &'static str) {
    if name.contains("duration") {
        (secs * 1e6 * SLACK, "µs")
    } else if name.contains("bytes") {
        (gbps * 1e9 / 8.0 * secs * SLACK, "bytes")
    } else if name.contains("bits") {
        (gbps * 1e9 * secs * SLACK, "bits")
    } else {
        (gbps * 1e9 / MIN_FRAME_BITS * secs * SLACK, "packets")
    }
}

/// Why a counter's pair of values is not believable, if it is not.
pub fn implausible(name: &str, a: u64, b: u64, secs: f64, gbps: Option<f64>) -> Option<String> {
    if a >= ABSURD || b >= ABSURD {
        return Some(format!(
            "{name} reads {} (near 2^64: an error value, not a count); not used",
            thousands(a.max(b))
        ));
    }
    if b < a || secs <= 0.0 {
        return None; // a reset: the window reports it
    }
    let speed = gbps.filter(|g| g.is_finite() && *g > 0.0);
    let (max, unit) = bound(name, secs, speed.unwrap_or(UNKNOWN_SPEED_GBPS));
    let delta = b - a;
    if (delta as f64) <= max {
        return None;
    }
    let link = match speed {
        Some(g) => format!("a {g:.0} Gb/s link"),
        None => format!("any link (speed unknown, {UNKNOWN_SPEED_GBPS:.0} Gb/s assumed)"),
    };
    let what = if unit == "µs" {
        format!("more time than the {secs:.1} s window")
    } else {
        format!("more {unit} than {link} carries in {secs:.1} s (at most {})", thousands(max as u64))
    };
    Some(format!("{name} grew by {} {unit}: {what}; corrupt counter, not used", thousands(delta)))
}

/// Checks a window's counters, removes the corrupt ones from both snapshots, and reports
/// what is missing from one of them.
pub fn scrub(first: &mut Snapshot, last: &mut Snapshot, secs: f64) -> Vec<DataProblem> {
    let node = last.host.clone();
    let mut out = Vec::new();
    let mut problem = |subject: &str, message: String| {
        out.push(DataProblem { node: node.clone(), subject: subject.to_string(), message })
    };
    let (from, to) = (first.origin.clone(), last.origin.clone());
    // Coverage: netdevs, ethtool files and counters, RDMA ports and counters.
    for (name, a) in &first.netdevs {
        let Some(b) = last.netdevs.get(name) else {
            problem(name, format!("in {from} but not in {to}: not compared"));
            continue;
        };
        match (&a.ethtool, &b.ethtool) {
            (Some(_), None) => problem(
                name,
                format!("ethtool -S is in {from} but not in {to}: its PFC, drop and link rules did not run"),
            ),
            (None, Some(_)) => problem(
                name,
                format!("ethtool -S is in {to} but not in {from}: its PFC, drop and link rules did not run"),
            ),
            (Some(x), Some(y)) => {
                let gone: Vec<&String> = x.counters.keys().filter(|k| !y.counters.contains_key(*k)).collect();
                if !gone.is_empty() {
                    problem(name, missing_msg("ethtool -S counter", "first", &gone, &to));
                }
                let new: Vec<&String> = y.counters.keys().filter(|k| !x.counters.contains_key(*k)).collect();
                if !new.is_empty() {
                    problem(name, missing_msg("ethtool -S counter", "last", &new, &from));
                }
            }
            (None, None) => {}
        }
    }
    for name in last.netdevs.keys().filter(|k| !first.netdevs.contains_key(*k)) {
        problem(name, format!("in {to} but not in {from}: not compared"));
    }
    for (key, a) in &first.rdma_ports {
        let Some(b) = last.rdma_ports.get(key) else {
            problem(key, format!("RDMA port in {from} but not in {to}: not compared"));
            continue;
        };
        let gone: Vec<&String> = a.counters.keys().filter(|k| !b.counters.contains_key(*k)).collect();
        if !gone.is_empty() {
            problem(key, missing_msg("RDMA counter", "first", &gone, &to));
        }
        let new: Vec<&String> = b.counters.keys().filter(|k| !a.counters.contains_key(*k)).collect();
        if !new.is_empty() {
            problem(key, missing_msg("RDMA counter", "last", &new, &from));
        }
    }
    for key in last.rdma_ports.keys().filter(|k| !first.rdma_ports.contains_key(*k)) {
        problem(key, format!("RDMA port in {to} but not in {from}: not compared"));
    }
    // Plausibility, host side.
    let names: Vec<String> = last.netdevs.keys().cloned().collect();
    for nd in &names {
        let gbps = last.netdevs[nd].speed_gbps();
        let mut bad: BTreeSet<String> = BTreeSet::new();
        if let (Some(x), Some(y)) = (
            first.netdevs.get(nd).and_then(|n| n.ethtool.as_ref()),
            last.netdevs.get(nd).and_then(|n| n.ethtool.as_ref()),
        ) {
            for (k, b) in &y.counters {
                let a = x.counters.get(k).copied().unwrap_or(0);
                if let Some(m) = implausible(k, a, *b, secs, gbps) {
                    problem(nd, m);
                    bad.insert(k.clone());
                }
            }
        }
        for n in [first.netdevs.get_mut(nd), last.netdevs.get_mut(nd)].into_iter().flatten() {
            if let Some(e) = n.ethtool.as_mut() {
                e.counters.retain(|k, _| !bad.contains(k));
            }
        }
        let mut bad_stats: BTreeSet<String> = BTreeSet::new();
        if let Some(a) = first.netdevs.get(nd) {
            for (k, b) in &last.netdevs[nd].sysfs.statistics {
                let av = a.sysfs.statistics.get(k).copied().unwrap_or(0);
                if let Some(m) = implausible(&format!("statistics/{k}"), av, *b, secs, gbps) {
                    problem(nd, m);
                    bad_stats.insert(k.clone());
                }
            }
        }
        for n in [first.netdevs.get_mut(nd), last.netdevs.get_mut(nd)].into_iter().flatten() {
            n.sysfs.statistics.retain(|k, _| !bad_stats.contains(k));
        }
    }
    let ports: Vec<String> = last.rdma_ports.keys().cloned().collect();
    for key in &ports {
        let gbps = last.netdev_of(&last.rdma_ports[key]).and_then(|n| n.speed_gbps());
        let mut bad: BTreeSet<String> = BTreeSet::new();
        let prev = first.rdma_ports.get(key);
        for (k, b) in &last.rdma_ports[key].counters {
            let a = prev.and_then(|p| p.counters.get(k)).copied().unwrap_or(0);
            if let Some(m) = implausible(k, a, *b, secs, gbps) {
                problem(key, m);
                bad.insert(k.clone());
            }
        }
        for p in [first.rdma_ports.get_mut(key), last.rdma_ports.get_mut(key)].into_iter().flatten() {
            p.counters.retain(|k, _| !bad.contains(k));
        }
    }
    // Switch side: every source's counters in the normalized model (speed unknown).
    let switches: Vec<String> = last.switches.keys().cloned().collect();
    for sw in &switches {
        let Some(prev) = first.switches.get(sw).cloned() else { continue };
        let cur = last.switches.get_mut(sw).expect("listed above");
        // Registered sources: every counter series against the same series before.
        let before: BTreeMap<String, f64> = prev.counters.iter().map(|c| (c.series(), c.value)).collect();
        let mut bad_series: BTreeSet<String> = BTreeSet::new();
        for c in &cur.counters {
            if !crate::metrics::is_counter(c.name) {
                continue;
            }
            let series = c.series();
            let a = before.get(&series).copied().unwrap_or(0.0);
            let label = counter_label(c);
            // Paused time is checked in microseconds, the unit its bound is in.
            let scale = if c.name == crate::metrics::PFC_PAUSED_SECONDS_TOTAL { 1e6 } else { 1.0 };
            let (a, b) = ((a * scale).round().max(0.0) as u64, (c.value * scale).round().max(0.0) as u64);
            if let Some(m) = implausible(&label, a, b, secs, None) {
                out.push(DataProblem {
                    node: sw.clone(),
                    subject: c.label("port").unwrap_or("").to_string(),
                    message: m,
                });
                bad_series.insert(series);
            }
        }
        cur.counters.retain(|c| !bad_series.contains(&c.series()));
        if let Some(p) = first.switches.get_mut(sw) {
            p.counters.retain(|c| !bad_series.contains(&c.series()));
        }
    }
    out
}

/// A switch counter as the bounds check names it: `PFC3 rx pause frames`, `UC3 Drop/pkts`.
/// The name decides which bound applies (frames and packets: one per minimum frame time).
fn counter_label(c: &crate::metrics::Sample) -> String {
    use crate::metrics::{DROPS_TOTAL, PFC_PAUSED_SECONDS_TOTAL, PFC_PAUSE_FRAMES_TOTAL};
    match c.name {
        PFC_PAUSE_FRAMES_TOTAL => {
            format!("PFC{} {} pause frames", c.label("priority").unwrap_or("?"), c.label("direction").unwrap_or("?"))
        }
        PFC_PAUSED_SECONDS_TOTAL => {
            format!("PFC{} {} pause duration", c.label("priority").unwrap_or("?"), c.label("direction").unwrap_or("?"))
        }
        DROPS_TOTAL => format!("{} Drop/pkts", c.label("queue").unwrap_or("?")),
        other => other.to_string(),
    }
}

/// Counters the rules read, listed first when some are missing.
const WATCHED: &[&str] =
    &["pause", "discard", "link_down", "crc", "symbol", "storm", "cnp", "ecn", "seq", "out_of_buffer"];

fn missing_msg(what: &str, which: &str, gone: &[&String], to: &str) -> String {
    let mut gone: Vec<&String> = gone.to_vec();
    gone.sort_by_key(|n| (!WATCHED.iter().any(|w| n.contains(w)), n.as_str()));
    let mut list: Vec<String> = gone.iter().take(6).map(|s| s.to_string()).collect();
    if gone.len() > 6 {
        list.push(format!("... {} more", gone.len() - 6));
    }
    format!(
        "{} {what}(s) of the {which} snapshot are missing from {to} (file cut short or filtered?): {}; their rules did not run",
        gone.len(),
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        // 60 s of pause on a 60 s window is fine; 1.8e19 µs is not.
        assert_eq!(implausible("rx_prio3_pause_duration", 0, 60_000_000, 60.0, Some(400.0)), None);
        let m = implausible("rx_prio3_pause_duration", 8_134, 18_000_000_000_000_008_134, 60.0, Some(400.0)).unwrap();
        assert!(m.contains("near 2^64"), "{m}");
        let m = implausible("rx_prio3_pause_duration", 0, 90_000_000, 60.0, Some(400.0)).unwrap();
        assert!(m.contains("more time than the 60.0 s window"), "{m}");
        // 400 Gb/s: at most ~595 M minimum-size frames per second.
        assert_eq!(implausible("np_cnp_sent", 0, 30_000_000_000, 60.0, Some(400.0)), None);
        assert!(implausible("np_cnp_sent", 0, 60_000_000_000, 60.0, Some(400.0)).is_some());
        assert!(implausible("np_ecn_marked_roce_packets", 5_121, u64::MAX, 60.0, None).is_some());
        assert!(implausible("rx_bytes_phy", 0, 3_000_000_000_000, 60.0, Some(400.0)).is_none());
        assert!(implausible("rx_bytes_phy", 0, 4_000_000_000_000, 60.0, Some(400.0)).is_some());
        // A reset is not corrupt data.
        assert_eq!(implausible("np_cnp_sent", 10, 2, 60.0, None), None);
    }
}
