//! Prometheus alerting rules for the exporter's metrics (`rocelab exporter --alert-rules`).
//!
//! The rules watch what `diagnose` watches, on live series instead of two snapshots, with
//! the thresholds the fabric file implies: the lossless priorities (PFC), the line rate and
//! MTU of the hosts (ECN surge), NICs per node (the busbw expectation), the PFC watchdog's
//! detection time; the paused-share and busbw thresholds are the doctor's ([`Thresholds`]).
//! Output is a rule file in Prometheus' YAML layout (`groups: - name: rules:`), written by
//! hand in a fixed order so the same fabric gives the same bytes; `promtool check rules`
//! accepts it (tested).

use crate::diagnose::Thresholds;
use crate::drift::Intent;
use crate::metrics;
use std::collections::BTreeSet;
use std::fmt::Write;

/// What the rules need to know about the fabric (taken from [`Intent`] and the fabric file).
#[derive(Clone, Debug, PartialEq)]
pub struct AlertInputs {
    /// Fabric file named in the rules' descriptions.
    pub source: String,
    /// Priorities with PFC (the lossless classes).
    pub lossless: BTreeSet<u8>,
    /// Host line rate in Gb/s, and RoCE MTU in bytes.
    pub line_rate_gbps: Option<f64>,
    pub mtu: Option<u32>,
    pub nics_per_node: u32,
    /// PFC watchdog detection time, for the storm rule's description.
    pub watchdog_detection_ms: Option<f64>,
    /// ECN marks per second above this share of a port's packet rate at line rate and MTU
    /// is a surge.
    pub ecn_surge_ratio: f64,
}

impl AlertInputs {
    pub fn from_intent(intent: &Intent, watchdog_detection_ms: Option<f64>) -> Self {
        let h = &intent.default;
        AlertInputs {
            source: intent.source.clone(),
            lossless: h.pfc_priorities.clone().unwrap_or_else(|| [3u8].into_iter().collect()),
            line_rate_gbps: h.line_rate_gbps,
            mtu: h.roce_mtu,
            nics_per_node: intent.nics_per_node.unwrap_or(1),
            watchdog_detection_ms,
            ecn_surge_ratio: 0.01,
        }
    }
}

/// A YAML single-quoted scalar.
fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

struct Rule {
    alert: &'static str,
    expr: String,
    for_: &'static str,
    severity: &'static str,
    summary: String,
    description: String,
}

/// The rule file for `inputs` and `th`.
pub fn alert_rules(inputs: &AlertInputs, th: &Thresholds) -> String {
    let prios: Vec<String> = inputs.lossless.iter().map(|p| p.to_string()).collect();
    let prio_re = if prios.is_empty() { "3".to_string() } else { prios.join("|") };
    let paused = format!("{}{{priority=~\"{prio_re}\"}}", metrics::PFC_PAUSED_SECONDS_TOTAL);
    let wd = inputs
        .watchdog_detection_ms
        .map(|ms| format!(" The fabric's PFC watchdog acts after {ms} ms of continuous pause."))
        .unwrap_or_default();
    let mut rules = vec![
        Rule {
            alert: "RocePfcStorm",
            expr: format!(
                "rate({paused}[1m]) >= {} or increase({}[5m]) > 0",
                th.storm_ratio,
                metrics::PFC_STORM_EVENTS_TOTAL
            ),
            for_: "1m",
            severity: "critical",
            summary: "PFC storm on {{ $labels.node }} {{ $labels.port }}".into(),
            description: format!(
                "Paused at least {:.0}% of the time on a lossless priority ({prio_re}), or a storm guard / watchdog fired: a stalled receiver or a deadlock.{wd}",
                th.storm_ratio * 100.0
            ),
        },
        Rule {
            alert: "RocePfcPauseHigh",
            expr: format!("rate({paused}[5m]) >= {} and rate({paused}[5m]) < {}", th.pause_ratio, th.storm_ratio),
            for_: "5m",
            severity: "warning",
            summary: "Sustained PFC pausing on {{ $labels.node }} {{ $labels.port }}".into(),
            description: format!(
                "Paused at least {:.0}% of the time for 5 minutes: DCQCN is not keeping queues below the PFC threshold (check ECN marking and the NIC NP/RP).",
                th.pause_ratio * 100.0
            ),
        },
        Rule {
            alert: "RoceLosslessDrops",
            expr: format!(
                "increase({}{{reason=~\"buffer|headroom\",queue=~\"(UC)?({prio_re})|\"}}[5m]) > 0",
                metrics::DROPS_TOTAL
            ),
            for_: "0m",
            severity: "critical",
            summary: "Drops on a lossless priority at {{ $labels.node }} {{ $labels.port }}".into(),
            description: format!(
                "Buffer or headroom drops on priority {prio_re} (or on a NIC, which has no queue label), which {} makes lossless: PFC did not hold the sender back (headroom, PFC not enabled on that priority).",
                inputs.source
            ),
        },
        Rule {
            alert: "RoceCnpNotHandled",
            expr: format!("increase({}{{outcome=\"ignored\"}}[5m]) > 0", metrics::CNP_RECEIVED_TOTAL),
            for_: "5m",
            severity: "warning",
            summary: "CNPs ignored on {{ $labels.node }} {{ $labels.port }}".into(),
            description: "The reaction point ignores congestion notifications (RP disabled on the RoCE priority): the sender does not slow down.".into(),
        },
        Rule {
            alert: "RoceLinkFlap",
            expr: format!("increase({}[10m]) > 0", metrics::LINK_STATE_CHANGES_TOTAL),
            for_: "0m",
            severity: "critical",
            summary: "Link flap on {{ $labels.node }} {{ $labels.port }}".into(),
            description: "The link went down in the last 10 minutes: check cable, optics and the switch port.".into(),
        },
    ];
    if let (Some(gbps), Some(mtu)) = (inputs.line_rate_gbps, inputs.mtu) {
        let pps = gbps * 1e9 / 8.0 / mtu as f64;
        let limit = (pps * inputs.ecn_surge_ratio).round();
        rules.push(Rule {
            alert: "RoceEcnSurge",
            expr: format!("rate({}[5m]) > {limit}", metrics::ECN_MARKED_PACKETS_TOTAL),
            for_: "5m",
            severity: "warning",
            summary: "ECN marks surging on {{ $labels.node }} {{ $labels.port }}".into(),
            description: format!(
                "More than {limit} CE-marked packets per second ({:.0}% of a {gbps:.0} Gb/s port's packet rate at MTU {mtu}, from {}): sustained congestion.",
                inputs.ecn_surge_ratio * 100.0,
                inputs.source
            ),
        });
    }
    if let Some(gbps) = inputs.line_rate_gbps {
        let expected = gbps * inputs.nics_per_node as f64 / 8.0 * 1e9;
        let limit = (expected * th.busbw_warn).round();
        rules.push(Rule {
            alert: "RoceBusbwLow",
            expr: format!("max by (op, group) ({}) < {limit}", metrics::COLLECTIVE_BUSBW_BYTES_PER_SECOND),
            for_: "0m",
            severity: "warning",
            summary: "{{ $labels.op }} busbw below expectation for {{ $labels.group }}".into(),
            description: format!(
                "Bus bandwidth below {:.0}% of {:.1} GB/s ({} NIC(s) × {gbps:.0} Gb/s per node, from {}).",
                th.busbw_warn * 100.0,
                expected / 1e9,
                inputs.nics_per_node,
                inputs.source
            ),
        });
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Prometheus alerting rules written by rocelab {} from {}.",
        env!("CARGO_PKG_VERSION"),
        inputs.source
    );
    out.push_str("groups:\n  - name: rocelab\n    rules:\n");
    for r in rules {
        let _ = writeln!(out, "      - alert: {}", r.alert);
        let _ = writeln!(out, "        expr: {}", q(&r.expr));
        if r.for_ != "0m" {
            let _ = writeln!(out, "        for: {}", r.for_);
        }
        let _ = writeln!(out, "        labels:\n          severity: {}", r.severity);
        let _ = writeln!(
            out,
            "        annotations:\n          summary: {}\n          description: {}",
            q(&r.summary),
            q(&r.description)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_come_from_the_inputs() {
        let inputs = AlertInputs {
            source: "f.toml".into(),
            lossless: [3u8, 4].into_iter().collect(),
            line_rate_gbps: Some(400.0),
            mtu: Some(4096),
            nics_per_node: 8,
            watchdog_detection_ms: Some(200.0),
            ecn_surge_ratio: 0.01,
        };
        let y = alert_rules(&inputs, &Thresholds::default());
        assert!(y.contains("rocelab_pfc_paused_seconds_total{priority=~\"3|4\"}[1m]) >= 0.5"), "{y}");
        assert!(y.contains("queue=~\"(UC)?(3|4)|\""), "{y}");
        // 400 Gb/s at 4096 B: 12.2 M packets/s, 1 % of it.
        assert!(y.contains("rate(rocelab_ecn_marked_packets_total[5m]) > 122070"), "{y}");
        // 8 × 400 Gb/s = 400 GB/s, 80 % of it.
        assert!(y.contains("< 320000000000"), "{y}");
        assert!(y.contains("acts after 200 ms"), "{y}");
        let none = AlertInputs { line_rate_gbps: None, ..inputs };
        assert!(!alert_rules(&none, &Thresholds::default()).contains("RoceBusbwLow"));
    }
}
