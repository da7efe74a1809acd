//! The metric schema shared by the twin and production (listed in `docs/exporter.md`), the mapping
//! from a [`Snapshot`]'s real counters onto it, and the Prometheus text writer.
//!
//! Names are exactly those of metrics.md. Labels are metrics.md's, plus a few that keep real
//! data apart where the schema would otherwise add distinct things together; they are listed
//! in `docs/exporter.md`:
//! `port` on the host-side CNP/ECN/retransmission counters (a GPU server has one RoCE NIC per
//! rail), `outcome` (`handled`/`ignored`) on CNPs received, `kind` on retransmissions (the
//! source counter) and storm events (`warning`/`error`), `pool`/`stat` on buffer occupancy.
//! Drop `reason` takes metrics.md's values plus `no_wqe` (the host did not post receive
//! buffers in time: `out_of_buffer`), which is not a network drop.

use crate::snapshot::Snapshot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

pub const PFC_PAUSE_FRAMES_TOTAL: &str = "rocelab_pfc_pause_frames_total";
pub const PFC_PAUSED_SECONDS_TOTAL: &str = "rocelab_pfc_paused_seconds_total";
pub const PFC_STORM_EVENTS_TOTAL: &str = "rocelab_pfc_storm_events_total";
pub const PFC_WATCHDOG_STORMED: &str = "rocelab_pfc_watchdog_stormed";
pub const ECN_MARKED_PACKETS_TOTAL: &str = "rocelab_ecn_marked_packets_total";
pub const CNP_SENT_TOTAL: &str = "rocelab_cnp_sent_total";
pub const CNP_RECEIVED_TOTAL: &str = "rocelab_cnp_received_total";
pub const DROPS_TOTAL: &str = "rocelab_drops_total";
pub const BUFFER_OCCUPANCY_BYTES: &str = "rocelab_buffer_occupancy_bytes";
pub const RETRANSMITTED_PACKETS_TOTAL: &str = "rocelab_retransmitted_packets_total";
pub const LINK_UTILIZATION_RATIO: &str = "rocelab_link_utilization_ratio";
pub const LINK_STATE_CHANGES_TOTAL: &str = "rocelab_link_state_changes_total";
pub const LINK_ERRORS_TOTAL: &str = "rocelab_link_errors_total";
pub const COLLECTIVE_SECONDS: &str = "rocelab_collective_seconds";
pub const COLLECTIVE_BUSBW_BYTES_PER_SECOND: &str = "rocelab_collective_busbw_bytes_per_second";

/// (name, Prometheus type, help) for every metric the doctor can emit.
pub const CATALOG: &[(&str, &str, &str)] = &[
    (BUFFER_OCCUPANCY_BYTES, "gauge", "Buffer occupancy (stat=peak: watermark since last clear)."),
    (CNP_RECEIVED_TOTAL, "counter", "CNPs received by the reaction point (outcome=handled|ignored)."),
    (CNP_SENT_TOTAL, "counter", "CNPs sent by the notification point in answer to CE marks."),
    (COLLECTIVE_BUSBW_BYTES_PER_SECOND, "gauge", "nccl-tests bus bandwidth per collective and size."),
    (COLLECTIVE_SECONDS, "gauge", "nccl-tests time per collective and size."),
    (DROPS_TOTAL, "counter", "Packets dropped, by reason."),
    (ECN_MARKED_PACKETS_TOTAL, "counter", "ECN CE-marked packets (host view: marked RoCE packets received)."),
    (LINK_ERRORS_TOTAL, "counter", "Physical-layer errors by kind (crc, symbol)."),
    (LINK_STATE_CHANGES_TOTAL, "counter", "Link down events (flaps)."),
    (LINK_UTILIZATION_RATIO, "gauge", "Port bytes per second over line rate."),
    (PFC_PAUSE_FRAMES_TOTAL, "counter", "PFC pause frames by priority and direction."),
    (PFC_PAUSED_SECONDS_TOTAL, "counter", "Time paused by PFC, by priority and direction."),
    (PFC_STORM_EVENTS_TOTAL, "counter", "PFC storm / deadlock detections (NIC storm guard, switch watchdog)."),
    (
        PFC_WATCHDOG_STORMED,
        "gauge",
        "1 while a switch's PFC watchdog holds the port and priority in a storm (SONiC stormed, Cumulus DEADLOCK).",
    ),
    (RETRANSMITTED_PACKETS_TOTAL, "counter", "RoCE retransmission and out-of-sequence events by source counter."),
];

pub fn is_counter(name: &str) -> bool {
    CATALOG.iter().any(|(n, t, _)| *n == name && *t == "counter")
}

/// One value with its labels, label names in a fixed order per metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    pub name: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

impl Sample {
    pub fn new(name: &'static str, labels: &[(&'static str, &str)], value: f64) -> Self {
        Sample { name, labels: labels.iter().map(|(k, v)| (*k, v.to_string())).collect(), value }
    }

    /// `name{a="x",b="y"}`, the identity of a series.
    pub fn series(&self) -> String {
        let mut s = self.name.to_string();
        write_labels(&mut s, &self.labels);
        s
    }

    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str())
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn write_labels(s: &mut String, labels: &[(&'static str, String)]) {
    if labels.is_empty() {
        return;
    }
    s.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{k}=\"{}\"", escape(v));
    }
    s.push('}');
}

pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Samples keyed by series, so the same series from two sources keeps one value and output
/// order never depends on insertion order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricSet {
    series: BTreeMap<(String, String), Sample>,
}

impl MetricSet {
    pub fn push(&mut self, s: Sample) {
        let key = (s.name.to_string(), s.series());
        self.series.insert(key, s);
    }

    /// Adds to an existing series (several counters feeding one series).
    pub fn add(&mut self, s: Sample) {
        let key = (s.name.to_string(), s.series());
        self.series.entry(key).and_modify(|e| e.value += s.value).or_insert(s);
    }

    pub fn iter(&self) -> impl Iterator<Item = &Sample> {
        self.series.values()
    }

    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Value of a series given as `name{labels}` (or a bare name).
    pub fn get(&self, series: &str) -> Option<f64> {
        let name = series.split('{').next().unwrap_or(series);
        self.series.get(&(name.to_string(), series.to_string())).map(|s| s.value)
    }

    pub fn extend(&mut self, other: MetricSet) {
        for s in other.series.into_values() {
            self.push(s);
        }
    }

    /// The Prometheus text exposition format (0.0.4): HELP and TYPE once per metric, series
    /// sorted by name and labels.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::with_capacity(self.series.len() * 96);
        let mut last: Option<&str> = None;
        for s in self.series.values() {
            if last != Some(s.name) {
                let (ty, help) =
                    CATALOG.iter().find(|(n, _, _)| *n == s.name).map(|(_, t, h)| (*t, *h)).unwrap_or(("untyped", ""));
                let _ = writeln!(out, "# HELP {} {}", s.name, help);
                let _ = writeln!(out, "# TYPE {} {}", s.name, ty);
                last = Some(s.name);
            }
            out.push_str(&s.series());
            out.push(' ');
            out.push_str(&format_value(s.value));
            out.push('\n');
        }
        out
    }
}

const RETRANS_COUNTERS: &[&str] =
    &["duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_sequence", "packet_seq_err"];

/// Maps a snapshot's counters onto the schema: the NIC side here, the switch side as its
/// sources read it ([`crate::sources`]).
pub fn from_snapshot(snap: &Snapshot) -> MetricSet {
    let mut m = MetricSet::default();
    let node = snap.host.as_str();
    for (port, nd) in &snap.netdevs {
        let port = port.as_str();
        if let Some(e) = &nd.ethtool {
            for p in 0u8..8 {
                let prio = p.to_string();
                for dir in ["rx", "tx"] {
                    let l = [("node", node), ("port", port), ("priority", prio.as_str()), ("direction", dir)];
                    if let Some(v) = e.get(&format!("{dir}_prio{p}_pause")) {
                        m.push(Sample::new(PFC_PAUSE_FRAMES_TOTAL, &l, v as f64));
                    }
                    if let Some(v) = e.get(&format!("{dir}_prio{p}_pause_duration")) {
                        m.push(Sample::new(PFC_PAUSED_SECONDS_TOTAL, &l, v as f64 / 1e6));
                    }
                }
            }
            for (c, kind) in [("tx_pause_storm_warning_events", "warning"), ("tx_pause_storm_error_events", "error")] {
                if let Some(v) = e.get(c) {
                    m.push(Sample::new(
                        PFC_STORM_EVENTS_TOTAL,
                        &[("node", node), ("port", port), ("kind", kind)],
                        v as f64,
                    ));
                }
            }
            // Per traffic class (mlx5 `en_stats.c`, per-TC congestion group): receive-buffer
            // discards, WRED discards and ECN marks made by the NIC, on queue = the index.
            for p in 0u8..8 {
                let q = p.to_string();
                for (c, reason) in [("buf_discard", "buffer"), ("cong_discard", "wred")] {
                    if let Some(v) = e.get(&format!("rx_prio{p}_{c}")) {
                        let l = [("node", node), ("port", port), ("queue", q.as_str()), ("reason", reason)];
                        m.push(Sample::new(DROPS_TOTAL, &l, v as f64));
                    }
                }
                if let Some(v) = e.get(&format!("rx_prio{p}_marked")) {
                    m.push(Sample::new(
                        ECN_MARKED_PACKETS_TOTAL,
                        &[("node", node), ("port", port), ("queue", &q)],
                        v as f64,
                    ));
                }
            }
            if let Some(v) = e.get("rx_discards_phy") {
                m.push(Sample::new(DROPS_TOTAL, &[("node", node), ("port", port), ("reason", "buffer")], v as f64));
            }
            if let Some(v) = e.get("link_down_events_phy") {
                m.push(Sample::new(LINK_STATE_CHANGES_TOTAL, &[("node", node), ("port", port)], v as f64));
            }
            for (c, kind) in [("rx_crc_errors_phy", "crc"), ("rx_pcs_symbol_err_phy", "symbol")] {
                if let Some(v) = e.get(c) {
                    m.push(Sample::new(LINK_ERRORS_TOTAL, &[("node", node), ("port", port), ("kind", kind)], v as f64));
                }
            }
        }
        // sysfs fills what ethtool did not give (no ethtool installed, or another driver).
        let has = |m: &MetricSet, name: &str, extra: &str| {
            m.get(&format!("{name}{{node=\"{}\",port=\"{}\"{extra}}}", escape(node), escape(port))).is_some()
        };
        if !has(&m, LINK_STATE_CHANGES_TOTAL, "") {
            if let Some(v) = nd.sysfs.carrier_down_count {
                m.push(Sample::new(LINK_STATE_CHANGES_TOTAL, &[("node", node), ("port", port)], v as f64));
            }
        }
        if !has(&m, LINK_ERRORS_TOTAL, ",kind=\"crc\"") {
            if let Some(v) = nd.sysfs.statistics.get("rx_crc_errors") {
                m.push(Sample::new(LINK_ERRORS_TOTAL, &[("node", node), ("port", port), ("kind", "crc")], *v as f64));
            }
        }
    }
    for p in snap.rdma_ports.values() {
        let key = p.key();
        let port = p.netdev.clone().unwrap_or(key);
        let port = port.as_str();
        let np = [("node", node), ("port", port)];
        if let Some(v) = p.get("np_ecn_marked_roce_packets") {
            m.push(Sample::new(ECN_MARKED_PACKETS_TOTAL, &np, v as f64));
        }
        if let Some(v) = p.get("np_cnp_sent") {
            m.push(Sample::new(CNP_SENT_TOTAL, &np, v as f64));
        }
        for (c, outcome) in [("rp_cnp_handled", "handled"), ("rp_cnp_ignored", "ignored")] {
            if let Some(v) = p.get(c) {
                m.push(Sample::new(
                    CNP_RECEIVED_TOTAL,
                    &[("node", node), ("port", port), ("outcome", outcome)],
                    v as f64,
                ));
            }
        }
        for c in RETRANS_COUNTERS {
            if let Some(v) = p.get(c) {
                m.push(Sample::new(
                    RETRANSMITTED_PACKETS_TOTAL,
                    &[("node", node), ("port", port), ("kind", c)],
                    v as f64,
                ));
            }
        }
        if let Some(v) = p.get("out_of_buffer") {
            m.push(Sample::new(DROPS_TOTAL, &[("node", node), ("port", port), ("reason", "no_wqe")], v as f64));
        }
    }
    // Switch sources are already in the schema, labelled with their switch.
    for data in snap.switches.values() {
        for c in &data.counters {
            m.push(c.clone());
        }
    }
    for run in &snap.nccl {
        let op = run.op.clone().unwrap_or_else(|| "unknown".into());
        let group = nccl_group(run);
        for r in &run.rows {
            let size = r.size_bytes.to_string();
            let mut groups = vec![("out-of-place", &r.out_of_place)];
            if let Some(ip) = &r.in_place {
                groups.push(("in-place", ip));
            }
            for (placement, g) in groups {
                let l =
                    [("op", op.as_str()), ("size", size.as_str()), ("group", group.as_str()), ("placement", placement)];
                m.push(Sample::new(COLLECTIVE_SECONDS, &l, g.time_us / 1e6));
                m.push(Sample::new(COLLECTIVE_BUSBW_BYTES_PER_SECOND, &l, g.busbw_gbytes_per_s * 1e9));
            }
        }
    }
    m
}

/// `group` label of a nccl-tests run: its hosts, or a count when there are many.
pub fn nccl_group(run: &crate::parse::nccl::NcclRun) -> String {
    let hosts = run.hosts();
    match hosts.len() {
        0 => "unknown".into(),
        1..=8 => format!("{}x{}", run.ranks.len(), hosts.join("+")),
        n => format!("{}x{n}hosts", run.ranks.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_is_sorted_and_escaped() {
        let mut m = MetricSet::default();
        m.push(Sample::new(CNP_SENT_TOTAL, &[("node", "b"), ("port", "eth0")], 2.0));
        m.push(Sample::new(CNP_SENT_TOTAL, &[("node", "a\"x"), ("port", "eth0")], 1.0));
        m.push(Sample::new(PFC_PAUSED_SECONDS_TOTAL, &[("node", "a")], 0.008134));
        let t = m.to_prometheus();
        assert_eq!(
            t,
            "# HELP rocelab_cnp_sent_total CNPs sent by the notification point in answer to CE marks.\n# TYPE rocelab_cnp_sent_total counter\nrocelab_cnp_sent_total{node=\"a\\\"x\",port=\"eth0\"} 1\nrocelab_cnp_sent_total{node=\"b\",port=\"eth0\"} 2\n# HELP rocelab_pfc_paused_seconds_total Time paused by PFC, by priority and direction.\n# TYPE rocelab_pfc_paused_seconds_total counter\nrocelab_pfc_paused_seconds_total{node=\"a\"} 0.008134\n"
        );
    }
}
