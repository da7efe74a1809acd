//! Rates and diagnoses from snapshots.
//!
//! Snapshots are grouped by host and ordered by time; for each host the first and the last
//! give one window (`interval_s`), and every rule looks at counter *deltas* over it, so a
//! counter that has been large since boot is not news. A counter that went down (driver
//! reload, reboot, wrap) is reported as a reset and not used.
//!
//! Rules, each with its evidence (the counters and their deltas) and a hint:
//!
//! | code | severity | when |
//! |---|---|---|
//! | `pfc-storm` | error | NIC pause-storm guard fired, paused time ≥ `storm_ratio` of the window on a port/priority, or a switch PFC watchdog saw a deadlock |
//! | `pause-ratio` | warning | paused time ≥ `pause_ratio` of the window |
//! | `global-pause` | error / warning | 802.3x link-level pause (`*_global_pause*`): paused ≥ `storm_ratio` / ≥ `pause_ratio` of the window, or pause frames without a duration counter |
//! | `ecn-without-cnp` | error | ECN-marked RoCE packets received, no CNP sent (NP disabled) |
//! | `cnp-not-handled` | error / warning | CNPs received but ignored (RP disabled) — all of them / some |
//! | `pause-without-ecn` | warning | pauses somewhere in the fabric, no ECN mark anywhere (ECN not configured where congestion happens) |
//! | `nic-buffer-drops` | error | `rx_discards_phy` grew: the NIC ran out of receive buffer |
//! | `rx-no-wqe` | warning | `out_of_buffer` grew: the application did not post receives in time |
//! | `retransmissions` | error (lossless) / warning | out-of-sequence, NAK, timeout or duplicate counters grew |
//! | `retry-exhausted` | error | a QP gave up (`req_transport_retries_exceeded`, `rnr_nak_retry_err`) |
//! | `link-flap` | error | link down events |
//! | `link-errors` | warning | CRC or PCS symbol errors grew |
//! | `switch-drops` | warning | switch queue / no-buffer drops grew |
//! | `lossless-drops` | error | the same on a queue the fabric declares lossless |
//! | `pause-flood` | warning | pause frames at ≥ `pause_flood_per_s` with no duration counter |
//! | `firmware-mix` | warning | NICs of one kind run different firmware across hosts |
//! | `busbw-low` | error / warning | nccl-tests busbw below `busbw_error` / `busbw_warn` of the expected |
//! | `busbw-reference` | warning | busbw above `busbw_max` of the expected: the expected figure is wrong (never "OK") |
//! | `busbw-ok`, `single-node` | info | busbw as expected; a one-node run does not test the network |
//! | `nccl-wrong-results` | error | nccl-tests validation found wrong values |
//! | `busbw-not-judged` | info | the run's largest size is below 256 MiB |
//! | `nccl-transport-error`, `nccl-timeout`, `nccl-warn` | error / error / info | `NCCL WARN` lines |
//! | `twin-shortfall`, `twin-above`, `twin-match` | error / warning / info | busbw against the twin's from 256 MiB (within 90 %), and from 1 MiB within 70 % where the twin charges NCCL's costs ([`crate::twin`]) |
//! | `drift-*` | see `drift` | one snapshot against the intended config |
//! | `gpudirect`, `gpu-nic-far`, `rail-misaligned`, `gdr-not-used`, `nccl-socket-fallback` | see `gpudirect` | the GPUDirect RDMA path |

use crate::drift::{check_drift, Intent};
use crate::metrics::{self, MetricSet};
use crate::quality::DataProblem;
use crate::snapshot::{Netdev, RdmaPort, Snapshot};
use crate::util::thousands;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub code: &'static str,
    pub severity: Severity,
    pub node: String,
    /// Port, port/priority, RDMA device... what the finding is about within the node.
    pub subject: String,
    pub message: String,
    pub evidence: Vec<String>,
    pub hint: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// Paused share of the window that is worth a warning.
    pub pause_ratio: f64,
    /// Paused share of the window that is a storm.
    pub storm_ratio: f64,
    /// busbw below this share of the expected: warning.
    pub busbw_warn: f64,
    /// busbw below this share of the expected: error.
    pub busbw_error: f64,
    /// busbw above this share of the expected cannot be right: the reference is wrong.
    pub busbw_max: f64,
    /// Real busbw below this share of the twin's (sizes from 1 MiB): warning; above its
    /// inverse the twin does not describe the cluster (`twin`).
    pub twin_warn: f64,
    /// Real busbw below this share of the twin's: error.
    pub twin_error: f64,
    /// PFC pause frames per second on one priority that are a flood when no pause-duration
    /// counter says how long they paused (missing, as on SONiC, or reset in the window).
    /// At 400 Gb/s one pause of the largest quanta (65,535 × 512 bit times) lasts 84 µs, so
    /// 1,000 such frames a second can hold the link for up to 8.4 % of the time.
    pub pause_flood_per_s: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            pause_ratio: 0.05,
            storm_ratio: 0.5,
            busbw_warn: 0.8,
            busbw_error: 0.5,
            busbw_max: 1.25,
            twin_warn: 0.9,
            twin_error: 0.7,
            pause_flood_per_s: 1000.0,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub thresholds: Thresholds,
    pub intent: Option<Intent>,
    /// Expected network bandwidth of one GPU node in Gb/s (overrides the intent and the
    /// speeds found in the snapshots).
    pub node_net_gbps: Option<f64>,
    /// Priority the switch-side RoCE counters belong to (Cumulus).
    pub roce_priority: u8,
    /// nccl-tests results given on their own (not inside a dump).
    pub extra_nccl: Vec<crate::parse::nccl::NcclRun>,
    /// NCCL INFO logs given on their own (`doctor --nccl-log`).
    pub nccl_log: crate::parse::nccl_log::NcclLog,
    /// What the loaders skipped ([`crate::dump::Dump::skipped`]); reported as data problems.
    pub skipped_inputs: Vec<DataProblem>,
    /// The twin's runs (`rocelab simulate --collective` tables) with where each came from;
    /// every real run is compared with the twin run of its collective ([`crate::twin`]).
    pub twin: Vec<(String, crate::parse::nccl::NcclRun)>,
    /// The twin's runs charge NCCL's own costs (`net_hop_latency = "tuning"`, what the CLI's
    /// twin runs with unless the fabric file sets `[nccl]`): sizes from 1 MiB are judged
    /// against them, not only from 256 MiB ([`crate::twin`]).
    pub twin_with_nccl_costs: bool,
}

/// One counter series' change over a host's window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    pub series: String,
    pub delta: f64,
    pub per_second: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostWindow {
    pub node: String,
    pub snapshots: usize,
    pub from: String,
    pub to: String,
    pub interval_s: f64,
    /// Counters that went down between the snapshots (reset), not used.
    pub resets: Vec<String>,
    pub rates: Vec<Rate>,
    /// `rocelab_link_utilization_ratio` per port and direction over the window.
    pub utilization: Vec<Rate>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Diagnosis {
    pub rocelab_version: String,
    /// The fabric file compared against and its hash, when one was given.
    pub fabric: Option<String>,
    pub snapshots: usize,
    pub hosts: Vec<String>,
    pub windows: Vec<HostWindow>,
    pub findings: Vec<Finding>,
    /// "Is it the network?" when nccl-tests results were given.
    pub verdict: Option<String>,
    /// Real nccl-tests runs beside the twin's, size by size, when a twin was given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub twin: Vec<crate::twin::TwinComparison>,
    /// Input that was not used: corrupt counters, files or counters missing from one
    /// snapshot of a window, snapshot directories that could not be read.
    pub data_problems: Vec<DataProblem>,
    pub notes: Vec<String>,
}

impl Diagnosis {
    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }
    pub fn has_errors(&self) -> bool {
        self.count(Severity::Error) > 0
    }
}

/// Counter deltas of one host's window, by source.
struct Window<'a> {
    first: &'a Snapshot,
    last: &'a Snapshot,
    interval_s: f64,
    resets: BTreeSet<String>,
}

impl<'a> Window<'a> {
    fn d(&mut self, what: String, a: Option<u64>, b: Option<u64>) -> Option<u64> {
        let (a, b) = (a?, b?);
        if b < a {
            self.resets.insert(what);
            return None;
        }
        Some(b - a)
    }

    fn eth(&mut self, nd: &str, name: &str) -> Option<u64> {
        let get = |s: &Snapshot| s.netdevs.get(nd).and_then(|n| n.ethtool.as_ref()).and_then(|e| e.get(name));
        let (a, b) = (get(self.first), get(self.last));
        self.d(format!("{nd} {name}"), a, b)
    }

    fn rdma(&mut self, key: &str, name: &str) -> Option<u64> {
        let get = |s: &Snapshot| s.rdma_ports.get(key).and_then(|p| p.get(name));
        let (a, b) = (get(self.first), get(self.last));
        self.d(format!("{key} {name}"), a, b)
    }
}

impl Finding {
    /// The one way findings are made: the code must be registered in [`crate::rules`] with
    /// this severity (checked in debug builds, so by every test that fires the rule).
    pub fn new(
        code: &'static str,
        severity: Severity,
        node: &str,
        subject: String,
        message: String,
        evidence: Vec<String>,
        hint: &str,
    ) -> Finding {
        debug_assert!(
            crate::rules::lookup(code).is_some_and(|r| r.severities.contains(&severity)),
            "finding `{code}` ({severity:?}) is not registered in rules.rs with that severity"
        );
        Finding { code, severity, node: node.to_string(), subject, message, evidence, hint: hint.to_string() }
    }
}

fn f(
    code: &'static str,
    severity: Severity,
    node: &str,
    subject: String,
    message: String,
    evidence: Vec<String>,
    hint: &str,
) -> Finding {
    Finding::new(code, severity, node, subject, message, evidence, hint)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// `pause-flood`: pause frames at a rate that is a storm whatever their duration, for
/// counters without a duration (SONiC) or whose duration counter was reset.
fn pause_flood(
    out: &mut Vec<Finding>,
    th: &Thresholds,
    node: &str,
    subject: String,
    frames: u64,
    secs: f64,
    why: &str,
) {
    let rate = frames as f64 / secs;
    if rate < th.pause_flood_per_s {
        return;
    }
    out.push(f(
        "pause-flood",
        Severity::Warning,
        node,
        subject,
        format!("{} PFC pause frames in {secs:.1} s ({rate:.0}/s, threshold {:.0}/s); how long they paused is unknown", thousands(frames), th.pause_flood_per_s),
        vec![format!("pause frames +{} over {secs:.1} s", thousands(frames)), why.to_string()],
        "a steady stream of pauses means a congested or stalled receiver downstream: find who sends them (the tx side of the peer), and collect a pause-duration counter (mlx5 `*_pause_duration`, `show pfc counters --history`) to measure the paused share",
    ));
}

const STORM_HINT: &str = "a storm reached the switch: find the port that keeps sending pauses (a stalled host) and the cyclic buffer dependency, if any";

/// A unicast queue's index: SONiC `UC3`, Arista `TC3`, Cumulus `3` (the RoCE class) -> 3.
/// Multicast queues (`MC3`) carry no RoCE.
fn unicast_queue(q: &str) -> Option<u8> {
    q.strip_prefix("UC").or_else(|| q.strip_prefix("TC")).unwrap_or(q).parse().ok().filter(|i| *i < 8)
}

const RETRANS: &[&str] =
    &["out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "duplicate_request"];
const NETWORK_CODES: &[&str] = &[
    "pfc-storm",
    "global-pause",
    "pause-ratio",
    "ecn-without-cnp",
    "cnp-not-handled",
    "pause-without-ecn",
    "nic-buffer-drops",
    "retransmissions",
    "retry-exhausted",
    "link-flap",
    "link-errors",
    "switch-drops",
    "lossless-drops",
    "pause-flood",
    "nccl-transport-error",
    "nccl-timeout",
];

/// Runs every rule over the snapshots.
pub fn diagnose(mut snaps: Vec<Snapshot>, opts: &Options) -> Diagnosis {
    let order_problems = time_order(&snaps);
    snaps.sort_by(|a, b| (&a.host, a.taken_at_unix_ms, &a.origin).cmp(&(&b.host, b.taken_at_unix_ms, &b.origin)));
    let mut by_host: BTreeMap<String, Vec<&Snapshot>> = BTreeMap::new();
    for s in &snaps {
        by_host.entry(s.host.clone()).or_default().push(s);
    }
    let mut dx = Diagnosis {
        rocelab_version: env!("CARGO_PKG_VERSION").into(),
        snapshots: snaps.len(),
        hosts: by_host.keys().cloned().collect(),
        ..Default::default()
    };
    let mut fabric_pauses: Vec<(u64, String)> = Vec::new();
    let mut fabric_ecn: Option<u64> = None;
    dx.data_problems.extend(opts.skipped_inputs.iter().cloned());
    dx.data_problems.extend(order_problems);
    for (source, t) in &opts.twin {
        if t.op.is_none() {
            dx.data_problems.push(DataProblem {
                node: "twin".into(),
                subject: source.clone(),
                message: "not used: the table has no `# Collective test starting:` line, so its collective is unknown (tables written by `rocelab simulate --collective` have one)".into(),
            });
        }
    }
    for (host, list) in &by_host {
        let last = *list.last().expect("groups are non-empty");
        // Every snapshot's notes, not only the last one's: a file cut short in the first
        // snapshot matters as much.
        let mut seen = BTreeSet::new();
        for n in list.iter().flat_map(|s| &s.notes) {
            if seen.insert(n) {
                dx.notes.push(format!("{host}: {n}"));
            }
        }
        dx.data_problems.extend(unmatched_netdevs(last));
        if let Some(intent) = &opts.intent {
            dx.findings.extend(check_drift(last, intent));
        }
        if list.len() < 2 {
            continue;
        }
        let interval_s = (last.taken_at_unix_ms.saturating_sub(list[0].taken_at_unix_ms)) as f64 / 1000.0;
        if interval_s <= 0.0 {
            dx.notes.push(format!("{host}: {} snapshots with the same timestamp; no rates", list.len()));
            continue;
        }
        let (mut first, mut last) = (list[0].clone(), last.clone());
        dx.data_problems.extend(crate::quality::scrub(&mut first, &mut last, interval_s));
        let mut w = Window { first: &first, last: &last, interval_s, resets: BTreeSet::new() };
        host_rules(&mut w, host, opts, &mut dx.findings, &mut fabric_pauses, &mut fabric_ecn);
        let (rates, utilization) = rates(&first, &last, interval_s);
        dx.windows.push(HostWindow {
            node: host.clone(),
            snapshots: list.len(),
            from: crate::util::iso8601_utc(first.taken_at_unix_ms),
            to: crate::util::iso8601_utc(last.taken_at_unix_ms),
            interval_s,
            resets: w.resets.iter().cloned().collect(),
            rates,
            utilization,
        });
    }
    let total_pauses: u64 = fabric_pauses.iter().map(|(v, _)| *v).sum();
    if total_pauses > 0 && fabric_ecn == Some(0) {
        fabric_pauses.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut ev: Vec<String> =
            fabric_pauses.iter().take(5).map(|(v, s)| format!("{s}: +{} pause frames", thousands(*v))).collect();
        ev.push("ECN-marked packets: +0 on every host and switch counter in the dumps".into());
        dx.findings.push(f("pause-without-ecn", Severity::Warning, "fabric", "all".into(), format!("{} PFC pause frames and no ECN mark anywhere: congestion is handled by PFC alone", thousands(total_pauses)), ev, "configure ECN (WRED with ecn) on the RoCE queue of every switch where congestion happens, and enable the NIC NP/RP; DCQCN should act before PFC does"));
    }
    firmware_mix(&by_host, &mut dx.findings);
    let latest: Vec<&Snapshot> = by_host.values().filter_map(|l| l.last().copied()).collect();
    let mut extra_log = opts.nccl_log.clone();
    for r in &opts.extra_nccl {
        extra_log.merge(&r.log);
    }
    crate::gpudirect::rules(&latest, &extra_log, &mut dx.findings);
    let mut all_log = extra_log.clone();
    for s in &latest {
        all_log.merge(&s.nccl_log);
    }
    nccl_warn_rules(&all_log, &mut dx.findings);
    nccl_rules(&snaps, &by_host, opts, &mut dx);
    dx.findings.sort_by(|a, b| {
        b.severity.cmp(&a.severity).then(a.code.cmp(b.code)).then(a.node.cmp(&b.node)).then(a.subject.cmp(&b.subject))
    });
    dx
}

/// Snapshots of one host whose times run against their order in the input (a collect names
/// directories by time, so this means a hand-made dump or a clock that stepped back): the
/// window is taken in time order, and this says so.
fn time_order(snaps: &[Snapshot]) -> Vec<DataProblem> {
    let mut last: BTreeMap<&str, &Snapshot> = BTreeMap::new();
    let mut out = Vec::new();
    for s in snaps {
        if s.taken_at_unix_ms == 0 {
            out.push(DataProblem {
                node: s.host.clone(),
                subject: s.origin.clone(),
                message: "meta.json gives no time (taken_at_unix_ms = 0): rates over this snapshot are meaningless"
                    .into(),
            });
        }
        let parent = |o: &str| std::path::Path::new(o).parent().map(|p| p.to_path_buf());
        if let Some(prev) = last.get(s.host.as_str()) {
            // Only within one dump: dumps given on the command line may come in any order.
            if s.taken_at_unix_ms < prev.taken_at_unix_ms && parent(&s.origin) == parent(&prev.origin) {
                out.push(DataProblem {
                    node: s.host.clone(),
                    subject: s.origin.clone(),
                    message: format!(
                        "time goes backwards: taken at {}, before {} ({}) which precedes it in the input; the host clock stepped back or meta.json is wrong. The window is taken in time order",
                        crate::util::iso8601_utc(s.taken_at_unix_ms),
                        prev.origin,
                        crate::util::iso8601_utc(prev.taken_at_unix_ms)
                    ),
                });
            }
        }
        last.insert(&s.host, s);
    }
    out
}

/// RDMA ports whose netdev is not in the snapshot (renamed by udev, or a dump that lost it):
/// every rule that joins the two (drift, the PFC priorities of a port) is silent for them.
fn unmatched_netdevs(s: &Snapshot) -> Vec<DataProblem> {
    if s.netdevs.is_empty() {
        return Vec::new();
    }
    s.rdma_ports
        .values()
        .filter_map(|p| {
            let nd = p.netdev.as_ref()?;
            (!s.netdevs.contains_key(nd)).then(|| DataProblem {
                node: s.host.clone(),
                subject: p.key(),
                message: format!(
                    "its netdev `{nd}` is not among this snapshot's netdevs ({}): renamed? The port's drift and QoS rules did not run",
                    s.netdevs.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            })
        })
        .collect()
}

/// `echo 1 > /sys/class/net/<netdev>/ecn/<dir>/enable/<prio>` for this port, with its netdev
/// and the RoCE priority: the intent's ECN priorities, else the port's PFC priorities, else 3.
fn enable_cmd(port: &RdmaPort, nd: Option<&Netdev>, host: &str, opts: &Options, dir: &str) -> String {
    let netdev = port.netdev.as_deref().unwrap_or("<netdev>");
    let want = opts.intent.as_ref().map(|i| i.for_host(host)).and_then(|h| {
        if dir == "roce_np" {
            h.ecn_np_priorities.clone()
        } else {
            h.ecn_rp_priorities.clone()
        }
    });
    let prios: Vec<u8> = want
        .map(|s| s.into_iter().collect())
        .or_else(|| nd.and_then(|n| n.pfc_priorities()))
        .filter(|v: &Vec<u8>| !v.is_empty())
        .unwrap_or_else(|| vec![3]);
    prios
        .iter()
        .map(|p| {
            format!("echo 1 > {}", crate::util::sh_quote(&format!("/sys/class/net/{netdev}/ecn/{dir}/enable/{p}")))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn lossless(nd: Option<&Netdev>, host: &str, opts: &Options) -> bool {
    if let Some(p) = nd.and_then(|n| n.pfc_priorities()) {
        return !p.is_empty();
    }
    opts.intent.as_ref().and_then(|i| i.for_host(host).pfc_priorities.as_ref()).is_some_and(|p| !p.is_empty())
}

fn host_rules(
    w: &mut Window,
    host: &str,
    opts: &Options,
    out: &mut Vec<Finding>,
    fabric_pauses: &mut Vec<(u64, String)>,
    fabric_ecn: &mut Option<u64>,
) {
    let th = &opts.thresholds;
    let secs = w.interval_s;
    let window = format!("over {secs:.1} s");
    let netdevs: Vec<String> = w.last.netdevs.keys().filter(|k| w.first.netdevs.contains_key(*k)).cloned().collect();
    // PFC per port, priority and direction, on the NIC counters as the normalized model
    // holds them (the switch rules run the same function on switch counters).
    let pfc = |s: &Snapshot| -> Vec<metrics::Sample> {
        metrics::from_snapshot(s)
            .iter()
            .filter(|c| c.label("node") == Some(host) && netdevs.iter().any(|n| c.label("port") == Some(n.as_str())))
            .cloned()
            .collect()
    };
    let (before, now) = (pfc(w.first), pfc(w.last));
    pfc_rules(w, host, Side::Nic, &before, &now, th, out, fabric_pauses);
    // Per-priority receive-buffer discards (mlx5 `rx_prioN_buf_discard`) on a priority the
    // fabric declares lossless: the NIC's PFC did not stop the switch in time.
    for c in now.iter().filter(|c| c.name == metrics::DROPS_TOTAL && c.label("reason") == Some("buffer")) {
        let (Some(port), Some(q)) = (c.label("port"), c.label("queue").and_then(|q| q.parse::<u8>().ok())) else {
            continue;
        };
        let Some(a) = before.iter().find(|b| b.series() == c.series()).map(|b| b.value) else { continue };
        let Some(d) = w.d(format!("{port} rx_prio{q}_buf_discard"), Some(a as u64), Some(c.value as u64)) else {
            continue;
        };
        let declared = opts.intent.as_ref().and_then(|t| t.lossless_queues.get(&q).map(|p| (*p, &t.source)));
        if let (true, Some((p, source))) = (d > 0, declared) {
            out.push(f("lossless-drops", Severity::Error, host, format!("{port} priority {q}"), format!("the NIC dropped {} received packets for lack of buffer on priority {q}, which carries lossless priority {p}: a lossless class must never drop", thousands(d)), vec![format!("rx_prio{q}_buf_discard +{} {window}", thousands(d)), format!("{source}: queue {q} carries priority {p}, declared lossless")], "the NIC's receive buffer for this priority filled before its PFC stopped the switch: check that PFC is enabled on this priority on the NIC (mlnx_qos --pfc) and the switch port, and the NIC's buffer split and headroom (mlnx_qos --buffer_size, cable length)"));
        }
    }
    for nd in &netdevs {
        // 802.3x link-level ("global") pause: stops every class on the link, RoCE or not.
        for dir in ["rx", "tx"] {
            let frames = w.eth(nd, &format!("{dir}_global_pause"));
            let dur = w.eth(nd, &format!("{dir}_global_pause_duration"));
            let ratio = dur.map(|d| d as f64 / (secs * 1e6));
            if frames.unwrap_or(0) == 0 && dur.unwrap_or(0) == 0 {
                continue;
            }
            let sev = match ratio {
                Some(r) if r >= th.storm_ratio => Severity::Error,
                Some(r) if r >= th.pause_ratio => Severity::Warning,
                Some(_) => continue,
                None => Severity::Warning,
            };
            let who = if dir == "rx" { "the switch paused this NIC" } else { "this NIC paused the switch" };
            let share = ratio.map(|r| format!(" for {} of the window", pct(r.min(1.0)))).unwrap_or_default();
            let ev = vec![
                format!(
                    "{dir}_global_pause_duration +{} µs {window}",
                    dur.map(thousands).unwrap_or_else(|| "?".into())
                ),
                format!("{dir}_global_pause +{}", frames.map(thousands).unwrap_or_else(|| "?".into())),
            ];
            out.push(f("global-pause", sev, host, format!("{nd} {dir}"), format!("802.3x link-level pause{share}: {who}, and it stops every traffic class on the link, not only RoCE"), ev, &format!("a RoCE fabric uses PFC per priority, not global pause: turn link-level pause off on the NIC (`ethtool -A {} rx off tx off`) and the switch port, and enable PFC on the RoCE priority", crate::util::sh_quote(nd))));
        }
        let storm = |w: &mut Window, kind: &str, source: &str| {
            nic_delta(w, &before, &now, metrics::PFC_STORM_EVENTS_TOTAL, nd, &[("kind", kind)], source)
        };
        if let Some(v) = storm(w, "error", "tx_pause_storm_error_events").filter(|v| *v > 0) {
            out.push(f("pfc-storm", Severity::Error, host, nd.clone(), format!("the NIC's pause-storm guard fired {v} time(s) and stopped sending pauses"), vec![format!("tx_pause_storm_error_events +{v} {window}")], "the host stopped draining its receive queue for longer than the storm timeout: check the host (driver, PCIe, hung process)"));
        } else if let Some(v) = storm(w, "warning", "tx_pause_storm_warning_events").filter(|v| *v > 0) {
            out.push(f(
                "pfc-storm",
                Severity::Warning,
                host,
                nd.clone(),
                format!("the NIC sent pauses continuously long enough to warn {v} time(s)"),
                vec![format!("tx_pause_storm_warning_events +{v} {window}")],
                "a receiver close to a pause storm: check the host's receive path",
            ));
        }
        let discards =
            nic_delta(w, &before, &now, metrics::DROPS_TOTAL, nd, &[("reason", "buffer")], "rx_discards_phy");
        if let Some(v) = discards.filter(|v| *v > 0) {
            let mut ev = vec![format!("rx_discards_phy +{} {window}", thousands(v))];
            if let Some(t) = w.eth(nd, "rx_buffer_passed_thres_phy") {
                ev.push(format!("rx_buffer_passed_thres_phy +{}", thousands(t)));
            }
            out.push(f("nic-buffer-drops", Severity::Error, host, nd.clone(), format!("the NIC dropped {} received packets: out of receive buffer", thousands(v)), ev, "the NIC buffer filled without PFC holding the sender back: check that PFC is enabled on the RoCE priority and that the NIC's buffer split (mlnx_qos --buffer_size) gives it room"));
        }
        let eth_no_wqe = w.eth(nd, "rx_out_of_buffer");
        let has_hw_oob = w
            .last
            .rdma_ports
            .values()
            .any(|p| p.netdev.as_deref() == Some(nd.as_str()) && p.counters.contains_key("out_of_buffer"));
        if let Some(v) = eth_no_wqe.filter(|v| *v > 0 && !has_hw_oob) {
            out.push(f("rx-no-wqe", Severity::Warning, host, nd.clone(), format!("{} packets arrived with no receive buffer posted", thousands(v)), vec![format!("rx_out_of_buffer +{} {window}", thousands(v))], "the host posts receive buffers too slowly (CPU, interrupt affinity, application); this is not a network fault"));
        }
        // Flaps and physical errors as the normalized model holds them (mlx5 counters, else
        // sysfs: `metrics::from_snapshot` chose the source).
        let flaps = nic_delta(w, &before, &now, metrics::LINK_STATE_CHANGES_TOTAL, nd, &[], "link_down_events_phy");
        if let Some(v) = flaps.filter(|v| *v > 0) {
            out.push(f("link-flap", Severity::Error, host, nd.clone(), format!("the link went down {v} time(s) {window}"), vec![format!("link down events +{v}")], "reseat or replace the cable/transceiver; check `ethtool -m` optics levels and the switch port's error counters"));
        }
        let crc = nic_delta(w, &before, &now, metrics::LINK_ERRORS_TOTAL, nd, &[("kind", "crc")], "rx_crc_errors");
        let sym =
            nic_delta(w, &before, &now, metrics::LINK_ERRORS_TOTAL, nd, &[("kind", "symbol")], "rx_pcs_symbol_err_phy");
        if crc.unwrap_or(0) > 0 || sym.unwrap_or(0) > 0 {
            let mut ev = Vec::new();
            if let Some(c) = crc {
                ev.push(format!("rx_crc_errors +{} {window}", thousands(c)));
            }
            if let Some(s) = sym {
                ev.push(format!("rx_pcs_symbol_err_phy +{}", thousands(s)));
            }
            out.push(f("link-errors", Severity::Warning, host, nd.clone(), format!("physical-layer errors: {} CRC, {} symbol", thousands(crc.unwrap_or(0)), thousands(sym.unwrap_or(0))), ev, "every CRC error is a lost packet; in a lossless class that means a retransmission. Check optics, cable and FEC mode"));
        }
    }
    let ports: Vec<String> =
        w.last.rdma_ports.keys().filter(|k| w.first.rdma_ports.contains_key(*k)).cloned().collect();
    for key in &ports {
        let port: &RdmaPort = &w.last.rdma_ports[key];
        let nd = w.last.netdev_of(port);
        let subject = match &port.netdev {
            Some(n) => format!("{key} ({n})"),
            None => key.clone(),
        };
        let ecn = w.rdma(key, "np_ecn_marked_roce_packets");
        if let Some(e) = ecn {
            *fabric_ecn = Some(fabric_ecn.unwrap_or(0) + e);
        }
        let cnp = w.rdma(key, "np_cnp_sent");
        if let (Some(e), Some(0)) = (ecn, cnp) {
            if e > 0 {
                let mut ev =
                    vec![format!("np_ecn_marked_roce_packets +{} {window}", thousands(e)), "np_cnp_sent +0".into()];
                if let Some(n) = nd {
                    if !n.sysfs.ecn_np_enabled.is_empty() {
                        let on: Vec<String> =
                            n.sysfs.ecn_np_enabled.iter().filter(|(_, e)| **e).map(|(p, _)| p.to_string()).collect();
                        ev.push(format!("ecn/roce_np/enable: on for priorities [{}]", on.join(",")));
                    }
                }
                out.push(f("ecn-without-cnp", Severity::Error, host, subject.clone(), format!("{} ECN-marked RoCE packets received and no CNP sent: the notification point is disabled", thousands(e)), ev, &format!("enable the NP on the RoCE priority: `{}`; without CNPs the senders never slow down and PFC takes over", enable_cmd(port, nd, host, opts, "roce_np"))));
            }
        }
        let handled = w.rdma(key, "rp_cnp_handled");
        let ignored = w.rdma(key, "rp_cnp_ignored");
        if let Some(ig) = ignored.filter(|v| *v > 0) {
            let h = handled.unwrap_or(0);
            let sev = if h == 0 { Severity::Error } else { Severity::Warning };
            let mut ev = vec![
                format!("rp_cnp_ignored +{} {window}", thousands(ig)),
                format!("rp_cnp_handled +{}", thousands(h)),
            ];
            if let Some(n) = nd {
                if !n.sysfs.ecn_rp_enabled.is_empty() {
                    let on: Vec<String> =
                        n.sysfs.ecn_rp_enabled.iter().filter(|(_, e)| **e).map(|(p, _)| p.to_string()).collect();
                    ev.push(format!("ecn/roce_rp/enable: on for priorities [{}]", on.join(",")));
                }
            }
            let msg = if h == 0 {
                format!("{} CNPs received and none handled: the reaction point is disabled", thousands(ig))
            } else {
                format!("{} of {} CNPs received were ignored", thousands(ig), thousands(ig + h))
            };
            out.push(f(
                "cnp-not-handled",
                sev,
                host,
                subject.clone(),
                msg,
                ev,
                &format!(
                    "enable the RP on the RoCE priority: `{}`; a sender that ignores CNPs keeps congesting the fabric",
                    enable_cmd(port, nd, host, opts, "roce_rp")
                ),
            ));
        }
        let mut parts = Vec::new();
        let mut total = 0u64;
        for c in RETRANS {
            if let Some(v) = w.rdma(key, c) {
                if v > 0 {
                    parts.push(format!("{c} +{}", thousands(v)));
                    total += v;
                }
            }
        }
        if total > 0 {
            let ll = lossless(nd, host, opts);
            let sev = if ll { Severity::Error } else { Severity::Warning };
            let msg = if ll {
                format!(
                    "{} retransmission / out-of-sequence events: packets are lost in a class that should be lossless",
                    thousands(total)
                )
            } else {
                format!(
                    "{} retransmission / out-of-sequence events (no PFC on this port: a lossy RoCE class)",
                    thousands(total)
                )
            };
            parts.push(window.clone());
            out.push(f("retransmissions", sev, host, subject.clone(), msg, parts, "find where packets are lost: switch queue drops (show queue counters), headroom too small for the cable length, CRC errors, or ECMP reordering (out_of_sequence without drops)"));
        }
        let fatal: u64 =
            ["req_transport_retries_exceeded", "rnr_nak_retry_err"].iter().filter_map(|c| w.rdma(key, c)).sum();
        if fatal > 0 {
            out.push(f(
                "retry-exhausted",
                Severity::Error,
                host,
                subject.clone(),
                format!("{fatal} queue pair(s) exhausted their retries and failed"),
                vec![format!("req_transport_retries_exceeded + rnr_nak_retry_err +{fatal} {window}")],
                "the job saw a fatal transport error; look for link flaps or a receiver that stopped posting buffers",
            ));
        }
        if let Some(v) = w.rdma(key, "out_of_buffer").filter(|v| *v > 0) {
            out.push(f(
                "rx-no-wqe",
                Severity::Warning,
                host,
                subject.clone(),
                format!("{} packets arrived with no receive WQE posted", thousands(v)),
                vec![format!("out_of_buffer +{} {window}", thousands(v))],
                "the application posts receive buffers too slowly (RNR); this is a host issue, not a network one",
            ));
        }
    }
    // Switch data carried in this host's snapshots: the normalized model, whatever the vendor.
    for (sw, data) in &w.last.switches {
        let Some(prev) = w.first.switches.get(sw) else { continue };
        switch_rules(w, sw, &prev.counters, &data.counters, opts, out, fabric_pauses, fabric_ecn);
    }
}

/// The switch rules, on the normalized samples of one switch at both ends of the window
/// ([`crate::sources`]): PFC pauses (paused share where the source gives a duration, the
/// frame rate where it does not), watchdog storms, queue drops (critical on a queue the
/// fabric declares lossless), and ECN marks for the fabric-wide rules.
#[allow(clippy::too_many_arguments)]
fn switch_rules(
    w: &mut Window,
    sw: &str,
    prev: &[metrics::Sample],
    cur: &[metrics::Sample],
    opts: &Options,
    out: &mut Vec<Finding>,
    fabric_pauses: &mut Vec<(u64, String)>,
    fabric_ecn: &mut Option<u64>,
) {
    let th = &opts.thresholds;
    let secs = w.interval_s;
    let window = format!("over {secs:.1} s");
    let before: BTreeMap<String, f64> = prev.iter().map(|c| (c.series(), c.value)).collect();
    // Deltas of every counter series present at both ends; a series that went down was
    // reset and is named by the window, not read as a huge increase. PFC series are
    // pfc_rules' (which names their resets); here they only feed the drop evidence.
    let mut deltas: BTreeMap<String, u64> = BTreeMap::new();
    for c in cur.iter().filter(|c| metrics::is_counter(c.name) && c.name != metrics::PFC_PAUSED_SECONDS_TOTAL) {
        let series = c.series();
        let Some(&a) = before.get(&series) else { continue };
        let (a, b) = (a.round().max(0.0) as u64, c.value.round().max(0.0) as u64);
        let d = if c.name == metrics::PFC_PAUSE_FRAMES_TOTAL {
            b.checked_sub(a)
        } else {
            w.d(format!("{sw} {series}"), Some(a), Some(b))
        };
        if let Some(d) = d {
            deltas.insert(series, d);
        }
    }
    pfc_rules(w, sw, Side::Switch, prev, cur, th, out, fabric_pauses);
    let pfc_delta = |port: &str, prio: u8, dir: &str| -> Option<u64> {
        cur.iter()
            .find(|c| {
                c.name == metrics::PFC_PAUSE_FRAMES_TOTAL
                    && c.label("port") == Some(port)
                    && c.label("priority") == Some(prio.to_string().as_str())
                    && c.label("direction") == Some(dir)
            })
            .and_then(|c| deltas.get(&c.series()).copied())
    };
    // The watchdog's state: stormed (SONiC) or DEADLOCK (Cumulus) at the end of the window.
    let stormed_now = |port: &str, prio: &str| {
        cur.iter().any(|c| {
            c.name == metrics::PFC_WATCHDOG_STORMED
                && c.value >= 1.0
                && c.label("port") == Some(port)
                && c.label("priority").unwrap_or("") == prio
        })
    };
    let detected = |port: &str, prio: &str| {
        cur.iter().any(|c| {
            c.name == metrics::PFC_STORM_EVENTS_TOTAL
                && c.label("port") == Some(port)
                && c.label("priority").unwrap_or("") == prio
                && deltas.get(&c.series()).is_some_and(|d| *d > 0)
        })
    };
    for c in cur.iter().filter(|c| c.name == metrics::PFC_WATCHDOG_STORMED && c.value >= 1.0) {
        let (port, prio) = (c.label("port").unwrap_or(""), c.label("priority").unwrap_or(""));
        if detected(port, prio) {
            continue; // said with the detections below
        }
        out.push(f("pfc-storm", Severity::Error, sw, port.to_string(), format!("the switch's PFC watchdog holds priority {prio} in a storm now (no new detection in the window: the storm began before it)"), vec![format!("watchdog state at the end of the window: stormed, {window}")], STORM_HINT));
    }
    for c in cur {
        let series = c.series();
        let Some(&d) = deltas.get(&series) else { continue };
        let (port, prio) = (c.label("port").unwrap_or(""), c.label("priority").unwrap_or(""));
        match c.name {
            metrics::ECN_MARKED_PACKETS_TOTAL => *fabric_ecn = Some(fabric_ecn.unwrap_or(0) + d),
            metrics::PFC_STORM_EVENTS_TOTAL if d > 0 => {
                let what = if c.label("kind") == Some("deadlock") { "deadlock(s)" } else { "storm(s)" };
                let on = if prio.is_empty() { String::new() } else { format!(" on priority {prio}") };
                let still = if stormed_now(port, prio) { ", and holds it in a storm now" } else { "" };
                out.push(f(
                    "pfc-storm",
                    Severity::Error,
                    sw,
                    port.to_string(),
                    format!("the switch's PFC watchdog detected {} {what}{on}{still}", thousands(d)),
                    vec![format!("watchdog detections +{} {window}", thousands(d))],
                    STORM_HINT,
                ));
            }
            metrics::DROPS_TOTAL if d > 0 => {
                let Some(queue) = c.label("queue") else { continue };
                let lossless_prio = unicast_queue(queue).and_then(|i| {
                    opts.intent.as_ref().and_then(|t| t.lossless_queues.get(&i).map(|p| (*p, &t.source)))
                });
                if let Some((p, source)) = lossless_prio {
                    let mut ev = vec![
                        format!("queue drops +{} {window}", thousands(d)),
                        format!("{source}: queue {queue} carries priority {p}, declared lossless"),
                    ];
                    for dir in ["rx", "tx"] {
                        if let Some(f) = pfc_delta(port, p, dir) {
                            ev.push(format!("PFC{p} {dir} frames on {port} +{}", thousands(f)));
                        }
                    }
                    out.push(f("lossless-drops", Severity::Error, sw, format!("{port} {queue}"), format!("{} packets dropped on queue {queue}, which carries lossless priority {p}: a lossless class must never drop", thousands(d)), ev, "PFC did not hold the senders back: check that PFC is enabled for this priority on the port (PORT_QOS_MAP pfc_enable) and its peer, that the DSCP maps this traffic to the priority, and that the headroom covers the cable (rocelab lint checks it)"));
                } else {
                    out.push(f("switch-drops", Severity::Warning, sw, format!("{port} {queue}"), format!("{} packets dropped on egress queue {queue}", thousands(d)), vec![format!("queue drops +{} {window}", thousands(d))], "drops on the RoCE queue mean PFC did not hold the sender back (headroom, PFC not enabled on that priority); on other queues they are ordinary congestion"));
                }
            }
            _ => {}
        }
    }
}

/// The window's delta of one normalized NIC series of `port`: `metric` with exactly the
/// labels node, port and `extra` (so `rx_discards_phy`'s drops are not a per-queue series).
/// `source` names the counter in resets.
fn nic_delta(
    w: &mut Window,
    before: &[metrics::Sample],
    now: &[metrics::Sample],
    metric: &str,
    port: &str,
    extra: &[(&str, &str)],
    source: &str,
) -> Option<u64> {
    let get = |set: &[metrics::Sample]| {
        set.iter()
            .find(|c| {
                c.name == metric
                    && c.label("port") == Some(port)
                    && c.labels.len() == 2 + extra.len()
                    && extra.iter().all(|(k, v)| c.label(k) == Some(*v))
            })
            .map(|c| c.value.round().max(0.0) as u64)
    };
    w.d(format!("{port} {source}"), get(before), get(now))
}

/// Which end of a link a PFC counter is on: the words of a finding differ, not the rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Nic,
    Switch,
}

/// `pfc-storm`, `pause-ratio` and `pause-flood` on the normalized samples of one node (a
/// host's NICs or a switch): per port, priority and direction, the paused share of the
/// window where the source counts paused time, and the frame rate where it does not or its
/// duration counter went down (reset).
#[allow(clippy::too_many_arguments)]
fn pfc_rules(
    w: &mut Window,
    node: &str,
    side: Side,
    prev: &[metrics::Sample],
    cur: &[metrics::Sample],
    th: &Thresholds,
    out: &mut Vec<Finding>,
    fabric_pauses: &mut Vec<(u64, String)>,
) {
    let secs = w.interval_s;
    let window = format!("over {secs:.1} s");
    // (port, priority, direction) -> [frames, paused µs] before and now.
    type Pair = [Option<u64>; 2];
    let mut series: BTreeMap<(String, String, String), (Pair, Pair)> = BTreeMap::new();
    for (k, set) in [prev, cur].into_iter().enumerate() {
        for c in set.iter().filter(|c| c.label("node") == Some(node)) {
            let slot = match c.name {
                metrics::PFC_PAUSE_FRAMES_TOTAL => 0,
                metrics::PFC_PAUSED_SECONDS_TOTAL => 1,
                _ => continue,
            };
            let key = (
                c.label("port").unwrap_or("").to_string(),
                c.label("priority").unwrap_or("").to_string(),
                c.label("direction").unwrap_or("").to_string(),
            );
            let v = if slot == 1 { c.value * 1e6 } else { c.value };
            let e = series.entry(key).or_insert(([None; 2], [None; 2]));
            let pair = if k == 0 { &mut e.0 } else { &mut e.1 };
            pair[slot] = Some(v.round().max(0.0) as u64);
        }
    }
    for ((port, p, dir), (a, b)) in series {
        // The source's own counter names in evidence and resets: `rx_prio3_pause` on a NIC.
        let (frames_name, dur_name) = match side {
            Side::Nic => (format!("{dir}_prio{p}_pause"), format!("{dir}_prio{p}_pause_duration")),
            Side::Switch => (format!("PFC{p} {dir} pause frames"), format!("PFC{p} {dir} pause duration")),
        };
        let at = if side == Side::Nic { port.clone() } else { format!("{node} {port}") };
        let frames = w.d(format!("{at} {frames_name}"), a[0], b[0]);
        let dur_us = w.d(format!("{at} {dur_name}"), a[1], b[1]);
        let subject = format!("{port} priority {p} {dir}");
        if let Some(fr) = frames.filter(|v| *v > 0) {
            fabric_pauses.push((fr, format!("{node} {subject}")));
        }
        let Some(dur) = dur_us else {
            // No duration (missing or reset): the frame rate alone can still show a flood.
            if let Some(fr) = frames {
                let why = if b[1].is_some() {
                    "the pause-duration counter went down (reset) in the window"
                } else {
                    "no pause-duration counter in this source"
                };
                pause_flood(out, th, node, subject, fr, secs, why);
            }
            continue;
        };
        let ratio = dur as f64 / (secs * 1e6);
        let meaning = match (side, dir.as_str()) {
            (Side::Nic, "rx") => "the switch paused this NIC (fabric congestion toward its destinations)",
            (Side::Nic, _) => "this NIC paused the switch (the host cannot absorb what it receives)",
            (Side::Switch, "rx") => {
                "the device behind this port paused the switch (it cannot absorb what the switch sends)"
            }
            (Side::Switch, _) => {
                "the switch paused the device behind this port (congestion inside the switch toward its destinations)"
            }
        };
        let ev = vec![
            format!("{dur_name} +{} µs {window}", thousands(dur)),
            format!("{frames_name} +{}", frames.map(thousands).unwrap_or_else(|| "?".into())),
        ];
        if ratio >= th.storm_ratio {
            out.push(f("pfc-storm", Severity::Error, node, subject, format!("paused {} of the window: {meaning}", pct(ratio.min(1.0))), ev, "a port paused most of the time is a PFC storm: look for a stalled receiver (hung GPU job, NIC out of buffer) or a deadlock; check the PFC watchdog"));
        } else if ratio >= th.pause_ratio {
            out.push(f("pause-ratio", Severity::Warning, node, subject, format!("paused {} of the window (threshold {}): {meaning}", pct(ratio), pct(th.pause_ratio)), ev, "sustained pausing means DCQCN is not keeping queues below the PFC threshold: check ECN marking (Kmin/Kmax) and the NP/RP enables"));
        }
    }
}

fn rates(first: &Snapshot, last: &Snapshot, secs: f64) -> (Vec<Rate>, Vec<Rate>) {
    let a: MetricSet = metrics::from_snapshot(first);
    let b: MetricSet = metrics::from_snapshot(last);
    let mut out = Vec::new();
    for s in b.iter() {
        if !metrics::is_counter(s.name) {
            continue;
        }
        let series = s.series();
        let Some(prev) = a.get(&series) else { continue };
        let delta = s.value - prev;
        if delta > 0.0 {
            out.push(Rate { series, delta, per_second: delta / secs });
        }
    }
    let mut util = Vec::new();
    for (name, nd) in &last.netdevs {
        let Some(gbps) = nd.speed_gbps() else { continue };
        let Some(prev) = first.netdevs.get(name) else { continue };
        for dir in ["rx", "tx"] {
            let get = |n: &Netdev| -> Option<u64> {
                n.ethtool
                    .as_ref()
                    .and_then(|e| e.get(&format!("{dir}_bytes_phy")))
                    .or_else(|| n.sysfs.statistics.get(&format!("{dir}_bytes")).copied())
            };
            let (Some(x), Some(y)) = (get(prev), get(nd)) else { continue };
            if y < x {
                continue;
            }
            let ratio = (y - x) as f64 * 8.0 / secs / (gbps * 1e9);
            util.push(Rate {
                series: format!(
                    "{}{{node=\"{}\",port=\"{name}\",direction=\"{dir}\"}}",
                    metrics::LINK_UTILIZATION_RATIO,
                    last.host
                ),
                delta: (y - x) as f64,
                per_second: ratio,
            });
        }
    }
    (out, util)
}

fn firmware_mix(by_host: &BTreeMap<String, Vec<&Snapshot>>, out: &mut Vec<Finding>) {
    // (driver, board id) -> firmware -> hosts
    let mut groups: BTreeMap<(String, String), BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (host, list) in by_host {
        let last = list.last().expect("non-empty");
        for nd in last.netdevs.values() {
            let Some(d) = &nd.driver else { continue };
            if d.firmware().is_empty() {
                continue;
            }
            groups
                .entry((d.driver.clone(), d.board_id().unwrap_or("").to_string()))
                .or_default()
                .entry(d.firmware().to_string())
                .or_default()
                .insert(host.clone());
        }
    }
    for ((driver, board), versions) in groups {
        if versions.len() < 2 {
            continue;
        }
        let ev: Vec<String> = versions
            .iter()
            .map(|(fw, hosts)| format!("{fw}: {}", hosts.iter().cloned().collect::<Vec<_>>().join(", ")))
            .collect();
        let kind = if board.is_empty() { driver.clone() } else { format!("{driver} {board}") };
        out.push(f("firmware-mix", Severity::Warning, "fabric", kind.clone(), format!("{} firmware versions across {kind} NICs", versions.len()), ev, "run one firmware per NIC model: DCQCN defaults and bug fixes change between releases, so mixed firmware means mixed congestion behaviour"));
    }
}

fn nccl_rules(snaps: &[Snapshot], by_host: &BTreeMap<String, Vec<&Snapshot>>, opts: &Options, dx: &mut Diagnosis) {
    let mut seen: Vec<&crate::parse::nccl::NcclRun> = Vec::new();
    for r in snaps.iter().flat_map(|s| &s.nccl).chain(&opts.extra_nccl) {
        if !seen.contains(&r) {
            seen.push(r);
        }
    }
    let network_findings: Vec<String> = {
        let mut v: Vec<String> = dx
            .findings
            .iter()
            .filter(|f| f.severity >= Severity::Warning && NETWORK_CODES.contains(&f.code))
            .map(|f| format!("{} on {} {}", f.code, f.node, f.subject))
            .collect();
        v.dedup();
        v
    };
    let mut verdicts = Vec::new();
    let runs = seen.clone();
    for run in seen {
        let op = run.op.clone().unwrap_or_else(|| "collective".into());
        let group = metrics::nccl_group(run);
        let subject = format!("{op} {group}");
        let wrong = run.wrong_rows();
        if wrong > 0 || run.out_of_bounds.unwrap_or(0) > 0 {
            dx.findings.push(f(
                "nccl-wrong-results",
                Severity::Error,
                "fabric",
                subject.clone(),
                format!("{wrong} result rows failed validation"),
                vec![format!("out of bounds values: {}", run.out_of_bounds.unwrap_or(0))],
                "wrong results are a correctness problem (GPU, NCCL version mix, memory), not a performance one",
            ));
        }
        let Some(peak) = run.peak_busbw_gbytes_per_s() else { continue };
        let largest = run.largest();
        let size = largest.map(|r| r.size_bytes).unwrap_or(0);
        let peak_algbw = largest
            .map(|r| {
                r.in_place.as_ref().map_or(r.out_of_place.algbw_gbytes_per_s, |i| {
                    i.algbw_gbytes_per_s.max(r.out_of_place.algbw_gbytes_per_s)
                })
            })
            .unwrap_or(0.0);
        let hosts = run.hosts();
        if hosts.len() == 1 {
            dx.findings.push(f(
                "single-node",
                Severity::Info,
                &hosts[0],
                subject.clone(),
                format!("single-node run: busbw {peak:.1} GB/s measures NVLink/PCIe, not the network"),
                vec![],
                "run across at least two nodes (better: the job's real size) to test the fabric",
            ));
            continue;
        }
        if size < crate::twin::BANDWIDTH_BOUND_BYTES {
            // Below this size a run is latency-bound: its busbw says nothing about the network's
            // bandwidth, so no verdict is drawn from it (the same rule as the twin's).
            dx.findings.push(f(
                "busbw-not-judged",
                Severity::Info,
                "fabric",
                subject.clone(),
                format!(
                    "largest size {} B is below {} B: latency-bound, so busbw {peak:.1} GB/s is not compared with the line rate",
                    thousands(size),
                    thousands(crate::twin::BANDWIDTH_BOUND_BYTES)
                ),
                vec![],
                "run nccl-tests up to at least 1 GiB (`-e 1G` or more) to judge bandwidth",
            ));
            verdicts.push(format!("{op}: not judged: its sizes are too small to measure bandwidth"));
            continue;
        }
        let Some((node_gbps, source, mut ev_ref)) = expected_node_gbps(run, &hosts, by_host, opts) else {
            dx.findings.push(f(
                "busbw-unknown",
                Severity::Info,
                "fabric",
                subject.clone(),
                format!("busbw {peak:.1} GB/s at {} B; no line rate known to compare with", thousands(size)),
                vec![],
                "pass --fabric FILE or --line-rate-gbps (per GPU node, all NICs), or include the hosts' snapshots",
            ));
            continue;
        };
        let expected = node_gbps / 8.0;
        let eff = peak / expected;
        let mut ev = vec![
            format!(
                "measured busbw {peak:.2} GB/s, algbw {peak_algbw:.2} GB/s at {} B ({} ranks on {} hosts)",
                thousands(size),
                run.ranks.len(),
                hosts.len()
            ),
            format!("expected ≈ {expected:.1} GB/s: {node_gbps:.0} Gb/s per node from {source}"),
        ];
        ev.append(&mut ev_ref);
        // On two nodes NCCL's tree (and NVLS tree) all-reduce reduces inside each node first, so
        // only algbw crosses the network (2(k-1)/k · algbw with k = 2 nodes): busbw may exceed
        // the NICs' rate while algbw cannot (NVIDIA/nccl-tests issue 196). There the ceiling is
        // algbw; elsewhere it is busbw.
        let two_node_reduce = hosts.len() == 2 && run.op.as_deref() == Some("all_reduce");
        let (ceiling_measure, ceiling_value) = if two_node_reduce { ("algbw", peak_algbw) } else { ("busbw", peak) };
        if ceiling_value / expected > opts.thresholds.busbw_max {
            // More than the network can carry: the reference is wrong (NICs not counted, a
            // fabric file for other hosts), so no verdict on the network can be drawn from it.
            dx.findings.push(f(
                "busbw-reference",
                Severity::Warning,
                "fabric",
                subject,
                format!("{ceiling_measure} {ceiling_value:.1} GB/s is {} of the expected {expected:.1} GB/s: more than the network can carry, so the expected figure is wrong", pct(ceiling_value / expected)),
                ev,
                "give the real per-node network bandwidth (--line-rate-gbps = NICs per node × their speed) or a fabric file that lists these hosts; check that the snapshots hold every RoCE NIC of each node",
            ));
            verdicts.push(format!(
                "{op}: cannot judge: {ceiling_measure} is {} of the expected, an inconsistent reference (see busbw-reference)",
                pct(ceiling_value / expected)
            ));
            continue;
        }
        if two_node_reduce {
            ev.push("two nodes: NCCL's tree/NVLS tree moves only algbw over the network, so busbw may exceed the NICs' rate; force NCCL_ALGO=Ring to measure the network (NVIDIA/nccl-tests issue 196)".into());
        } else if hosts.len() == 2 {
            ev.push(
                "two-node runs can beat the multi-node figure; do not use them as the reference for a large job".into(),
            );
        }
        // "The counters are clean" needs counters: a window (two snapshots) of the run's hosts.
        let counted: Vec<&String> = hosts.iter().filter(|h| dx.windows.iter().any(|w| &w.node == *h)).collect();
        let (sev, verdict) = if eff < opts.thresholds.busbw_warn {
            let sev = if eff < opts.thresholds.busbw_error { Severity::Error } else { Severity::Warning };
            let v = if !network_findings.is_empty() {
                format!("{op}: busbw is {} of the expected and the counters show network trouble in the same dumps ({}): likely the network", pct(eff), network_findings.join("; "))
            } else if counted.is_empty() {
                format!("{op}: busbw is {} of the expected; no network counters were given for its hosts ({}), so network and hosts cannot be told apart: collect two snapshots of each host during the run (`rocelab collect --count 2`) and run the doctor again", pct(eff), hosts.join(", "))
            } else {
                let missing: Vec<&String> = hosts.iter().filter(|h| !counted.contains(h)).collect();
                let partial = if missing.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (counters of {} of {} hosts; none for {})",
                        counted.len(),
                        hosts.len(),
                        missing.iter().map(|h| h.as_str()).collect::<Vec<_>>().join(", ")
                    )
                };
                format!("{op}: busbw is {} of the expected, but the network counters are clean in these snapshots{partial}: look at the hosts first (GPU clocks, PCIe/NUMA placement of the NICs, NCCL_IB_HCA / NET/Socket fallback, CPU affinity)", pct(eff))
            };
            (sev, v)
        } else {
            (Severity::Info, format!("{op}: busbw is {} of the expected: the network delivers its line rate", pct(eff)))
        };
        let code = if sev == Severity::Info { "busbw-ok" } else { "busbw-low" };
        dx.findings.push(f(
            code,
            sev,
            "fabric",
            subject,
            format!("busbw {peak:.1} GB/s is {} of the expected {expected:.1} GB/s", pct(eff)),
            ev,
            if sev == Severity::Info {
                ""
            } else {
                "compare with `rocelab plan` for this job; see the verdict for where to look"
            },
        ));
        verdicts.push(verdict);
    }
    for run in &runs {
        let op = run.op.as_deref().unwrap_or("");
        let Some((source, twin)) = opts.twin.iter().find(|(_, t)| t.op.as_deref() == Some(op)) else {
            if !opts.twin.is_empty() {
                dx.notes.push(format!(
                    "{}: no twin table for this collective (twin tables given: {}); not compared",
                    if op.is_empty() { "a run without a named collective" } else { op },
                    opts.twin
                        .iter()
                        .map(|(s, t)| format!("{s} ({})", t.op.as_deref().unwrap_or("?")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            continue;
        };
        let c = crate::twin::compare(run, twin, source, &opts.thresholds, opts.twin_with_nccl_costs);
        if let Some((finding, verdict)) = crate::twin::finding(&c, &opts.thresholds) {
            dx.findings.push(finding);
            verdicts.push(verdict);
        }
        dx.twin.push(c);
    }
    if !verdicts.is_empty() {
        dx.verdict = Some(verdicts.join("\n"));
    }
}

/// `NCCL WARN` lines: a transport that gave up (`IBV_WC_RETRY_EXC_ERR`, RNR, other
/// completion errors) or a timeout is an error the job saw, whatever the counters say.
fn nccl_warn_rules(log: &crate::parse::nccl_log::NcclLog, out: &mut Vec<Finding>) {
    use crate::parse::nccl_log::WarnKind;
    for (host, h) in &log.hosts {
        let flushed = h.warnings.get(&WarnKind::Flushed).map_or(0, |w| w.count);
        for (kind, w) in &h.warnings {
            let (code, sev, msg, hint) = match kind {
                WarnKind::RetryExceeded => ("nccl-transport-error", Severity::Error, "a queue pair exhausted its transport retries (IBV_WC_RETRY_EXC_ERR): packets were lost on the path, or the peer went away", "look at the path between the two peers at that time: link flaps, switch drops on the RoCE queue, PFC disabled somewhere; raise NCCL_IB_TIMEOUT only after the loss is explained"),
                WarnKind::RnrRetryExceeded => ("nccl-transport-error", Severity::Error, "a queue pair exhausted its receiver-not-ready retries (IBV_WC_RNR_RETRY_EXC_ERR): the peer did not post receive buffers in time", "a host problem on the peer (stalled process, memory pressure), not the network"),
                WarnKind::CompletionError => ("nccl-transport-error", Severity::Error, "work completions failed with an error from a peer", "the status names the cause (rdma-core verbs.h, enum ibv_wc_status); check the peer and the path"),
                WarnKind::Timeout => ("nccl-timeout", Severity::Error, "a timeout: a connection or a collective did not complete in time", "a rank stopped progressing: find the first error on any rank (transport errors, a crashed process) before this timeout"),
                WarnKind::Flushed | WarnKind::Other => continue,
            };
            let mut ev = vec![format!("NCCL WARN {} × {}: {}", kind.as_str(), thousands(w.count), w.first)];
            if flushed > 0 {
                ev.push(format!("IBV_WC_WR_FLUSH_ERR × {}: work flushed after the error", thousands(flushed)));
            }
            out.push(f(code, sev, host, kind.as_str().to_string(), msg.to_string(), ev, hint));
        }
        if let Some(w) = h.warnings.get(&WarnKind::Other) {
            out.push(f(
                "nccl-warn",
                Severity::Info,
                host,
                "NCCL WARN".into(),
                format!("{} other NCCL warning(s)", thousands(w.count)),
                vec![format!("first: {}", w.first)],
                "",
            ));
        }
    }
}

/// Expected network bandwidth of one GPU node in Gb/s for a run, where it came from, and
/// evidence lines. NICs per node: those NCCL's log lists (`NET/IB : Using [0]mlx5_0 ...`)
/// when it is there, else the fabric's rails, else the RoCE NICs in the snapshots. Speed per
/// NIC: `--line-rate-gbps` (per node) wins; then a fabric file that lists these hosts; then
/// the speeds in the snapshots; then a fabric file's default NIC profile.
fn expected_node_gbps(
    run: &crate::parse::nccl::NcclRun,
    hosts: &[String],
    by_host: &BTreeMap<String, Vec<&Snapshot>>,
    opts: &Options,
) -> Option<(f64, String, Vec<String>)> {
    let mut ev = Vec::new();
    let log_nics: BTreeMap<&str, Vec<String>> = hosts
        .iter()
        .filter_map(|h| run.log.hosts.get(h).map(|n| (h.as_str(), n.ib_device_names())))
        .filter(|(_, d)| !d.is_empty())
        .collect();
    let log_count = log_nics.values().map(|d| d.len()).min();
    if let Some(n) = log_count {
        let (h, d) = log_nics.iter().next().expect("non-empty when counted");
        ev.push(format!("NCCL log: {n} NIC(s) per node ({h}: {})", d.join(", ")));
    }
    if let Some(g) = opts.node_net_gbps {
        return Some((g, "--line-rate-gbps".into(), ev));
    }
    if let Some(i) = &opts.intent {
        let known: Vec<&String> = hosts.iter().filter(|h| i.hosts.contains_key(*h)).collect();
        if !known.is_empty() {
            let per_nic = known.iter().filter_map(|h| i.for_host(h).line_rate_gbps).reduce(f64::min)?;
            let fabric_n = i.nics_per_node.unwrap_or(1) as usize;
            let n = log_count.unwrap_or(fabric_n);
            if log_count.is_some_and(|c| c != fabric_n) {
                ev.push(format!("the fabric file gives {fabric_n} NIC(s) per node; the log's count is used"));
            }
            return Some((per_nic * n as f64, format!("{n} NIC(s) × {per_nic:.0} Gb/s line rate ({})", i.source), ev));
        }
        ev.push(format!(
            "{} does not list the test's hosts ({}): not used as the reference",
            i.source,
            hosts.join(", ")
        ));
    }
    // Speeds in the snapshots: per RDMA device, and the fastest as a stand-in for devices
    // the snapshot lacks.
    let mut per_host: Vec<(f64, usize, usize)> = Vec::new();
    for h in hosts {
        let Some(last) = by_host.get(h).and_then(|l| l.last()) else { continue };
        let speeds: BTreeMap<String, f64> = last
            .rdma_ports
            .values()
            .filter_map(|p| Some((p.device.clone(), last.netdev_of(p)?.speed_gbps()?)))
            .collect();
        let Some(max) = speeds.values().copied().reduce(f64::max) else { continue };
        let (sum, listed) = match log_nics.get(h.as_str()) {
            Some(devs) => (devs.iter().map(|d| speeds.get(d).copied().unwrap_or(max)).sum(), devs.len()),
            // The log names another node's NICs only: nodes of one job are alike.
            None => match log_count {
                Some(n) => (max * n as f64, n),
                None => (speeds.values().sum(), speeds.len()),
            },
        };
        per_host.push((sum, listed, speeds.len()));
    }
    if let Some(&(sum, listed, seen)) = per_host.iter().min_by(|a, b| a.0.total_cmp(&b.0)) {
        if listed > seen {
            ev.push(format!(
                "the snapshots hold {seen} of the {listed} NICs the log lists; the others are counted at the fastest speed seen"
            ));
        }
        return Some((sum, format!("{listed} NIC(s) at the speeds in the snapshots"), ev));
    }
    let i = opts.intent.as_ref()?;
    let per_nic = i.default.line_rate_gbps?;
    let n = log_count?;
    Some((
        per_nic * n as f64,
        format!("{n} NIC(s) from the NCCL log × {per_nic:.0} Gb/s, the default NIC profile of {}", i.source),
        ev,
    ))
}
