//! Every scenario kind, what it models, its headline metric and its parameters with their
//! defaults: the one table `rocelab scenarios --list`, the key checks and `docs/scenarios.md`
//! follow.

use rocelab_model::config::{ScenarioConfig, ScenarioKind};
use rocelab_model::Diagnostic;
use serde::Serialize;

/// One parameter of a kind.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Param {
    pub key: &'static str,
    pub unit: &'static str,
    /// The default, and how it scales with the fabric.
    pub default: &'static str,
    pub about: &'static str,
}

/// One scenario kind.
#[derive(Clone, Copy, Debug)]
pub struct KindInfo {
    pub name: &'static str,
    pub kind: ScenarioKind,
    pub models: &'static str,
    pub headline: &'static str,
    pub headline_unit: &'static str,
    /// The kind's own parameters, then those it shares with a family of kinds.
    pub own: &'static [Param],
    pub shared: &'static [Param],
}

impl KindInfo {
    pub fn params(&self) -> impl Iterator<Item = &'static Param> {
        self.own.iter().chain(self.shared)
    }
}

/// A kind as `rocelab scenarios --list --format json` prints it.
#[derive(Serialize)]
struct KindView {
    kind: &'static str,
    models: &'static str,
    headline: &'static str,
    headline_unit: &'static str,
    params: Vec<&'static Param>,
}

/// Every kind as JSON.
pub fn list_json() -> String {
    let v: Vec<KindView> = KINDS
        .iter()
        .map(|k| KindView {
            kind: k.name,
            models: k.models,
            headline: k.headline,
            headline_unit: k.headline_unit,
            params: k.params().collect(),
        })
        .collect();
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

const fn p(key: &'static str, unit: &'static str, default: &'static str, about: &'static str) -> Param {
    Param { key, unit, default, about }
}

const HOSTS: Param = p("hosts", "globs", "every host", "the hosts taking part (ring order: rail by rail)");
const SAMPLE: Param = p("sample_us", "µs", "duration / 100", "telemetry sampling period (at most 400 samples)");
const LOAD: Param =
    p("load", "fraction", "1.0", "offered load of the (background) traffic, of each sender's line rate");
const AT: Param = p("at_us", "µs", "duration / 4", "when the fault or change happens");
const LINK: Param = p(
    "a",
    "node",
    "\"busiest-spine-uplink\"",
    "one end of the link (with `b`), or `busiest-spine-uplink`: the leaf-spine link that carried the most bytes before the fault, in a probe run of the same load and seed",
);
const B: Param = p("b", "node", "-", "the other end of the link");
const FAULT_DURATION: Param = p("duration_us", "µs", "400", "simulated time, background load throughout");
const CONVERGENCE: Param =
    p("convergence_us", "µs", "[routing] convergence_us_per_hop", "routing convergence per switch hop, for this run");
/// The steady kinds' run length: a horizon, not a fixed duration (`steady`).
const STEADY_HORIZON: Param = p(
    "duration_us",
    "µs",
    "2000 (the checklist's [steady] horizon_us)",
    "horizon: the run stops at the first 200 µs window that agrees with the one before it (docs/validate.md), at the latest here, and is judged on that window",
);
const DST: Param = p("dst", "host", "the first host", "the receiver");
/// What the four fault kinds share, after their own parameters.
const UNDER_LOAD: &[Param] = &[FAULT_DURATION, CONVERGENCE, LOAD, HOSTS, SAMPLE];
/// Every other kind ends with these.
const ON_HOSTS: &[Param] = &[HOSTS, SAMPLE];
const RECEIVER: &[Param] = &[DST, HOSTS, SAMPLE];

pub const KINDS: &[KindInfo] = &[
    KindInfo {
        name: "sustained",
        kind: ScenarioKind::Sustained,
        models: "every host sending at line rate for a duration: a permutation (each host to one other) or all-to-all",
        headline: "goodput_fraction",
        headline_unit: "payload delivered / (senders × line rate × duration)",
        own: &[
            STEADY_HORIZON,
            p("pattern", "permutation | all-to-all", "permutation", "who sends to whom (a seeded derangement)"),
            LOAD,
        ],
        shared: ON_HOSTS,
    },
    KindInfo {
        name: "incast",
        kind: ScenarioKind::Incast,
        models: "N senders to one receiver at once (a parameter server, a reduce); completion against N·size/bandwidth",
        headline: "completion_over_ideal",
        headline_unit: "completion time / (N × size × 8 / receiver line rate)",
        own: &[
            p("fan_in", "senders", "min(hosts − 1, 32)", "N: the hosts after the receiver in ring order"),
            p("size_bytes", "B", "8 × BDP, clamped to 64 KiB..4 MiB", "per sender"),
            p("jitter_us", "µs", "0 (synchronized)", "starts spread uniformly (seeded) over this window"),
        ],
        shared: RECEIVER,
    },
    KindInfo {
        name: "microburst",
        kind: ScenarioKind::Microburst,
        models: "synchronized on/off bursts from N senders into one receiver: the shallow-buffer test",
        headline: "pause_frames",
        headline_unit: "PFC frames sent, every port and priority",
        own: &[
            p("fan_in", "senders", "min(hosts − 1, 16)", "senders per burst"),
            p("burst_bytes", "B", "2 × BDP, clamped to 16 KiB..1 MiB", "per sender and burst"),
            p("duty_cycle", "fraction", "0.25", "share of the period the receiver's link is busy with a burst at line rate"),
            p("period_us", "µs", "fan_in × burst at line rate / duty_cycle", "one burst per period"),
            p("duration_us", "µs", "10 periods", "bursts start during this time"),
            p("jitter_us", "µs", "0", "each sender's start inside a burst spread over this window"),
        ],
        shared: RECEIVER,
    },
    KindInfo {
        name: "hotspot",
        kind: ScenarioKind::Hotspot,
        models: "local congestion beside a background load: N senders onto one receiver, or one leaf's cross-leaf traffic squeezed onto one uplink (its other uplinks withdrawn)",
        headline: "max_queue_bytes",
        headline_unit: "deepest egress queue at the hotspot port",
        own: &[
            p("target", "receiver | uplink | cnp-path", "receiver", "where the congestion is; cnp-path: a flow into a hot receiver from a host that is itself the receiver of an incast, so the CNPs it gets wait at a congested egress"),
            p("fan_in", "senders", "min(hosts − 2, 8)", "receiver: senders onto the hot receiver"),
            STEADY_HORIZON,
            LOAD,
        ],
        shared: RECEIVER,
    },
    KindInfo {
        name: "slow-receiver",
        kind: ScenarioKind::SlowReceiver,
        models: "a host that drains at a fraction of line rate, or stops (the classic PFC storm source); how far pauses spread and whether the watchdog fires",
        headline: "pause_spread_hops",
        headline_unit: "links from the slow host to the farthest node that was paused",
        own: &[
            p("drain_fraction", "fraction", "0 (stops)", "0 < f < 1: stalled for 1 − f of every period_us (the NIC drains its buffer when it resumes)"),
            p("period_us", "µs", "20", "the drain cycle when 0 < drain_fraction < 1"),
            p("fan_in", "senders", "min(hosts − 1, 4)", "senders, the farthest hosts first"),
            p("at_us", "µs", "min(20, duration / 10)", "when the host slows down"),
            p("duration_us", "µs", "20 + time to fill the largest switch buffer twice at line rate, at least 400", "simulated time"),
            p("watchdog", "bool", "as [qos.pfc_watchdog]", "turn the PFC watchdog on or off for this run"),
            p("watchdog_detection_us", "µs", "100", "detection time when watchdog = true (poll: a tenth of it)"),
            LOAD,
        ],
        shared: RECEIVER,
    },
    KindInfo {
        name: "link-loss",
        kind: ScenarioKind::LinkLoss,
        models: "a fabric link lost for good under a sustained permutation (a cable pulled, an optic dead)",
        headline: "goodput_after_over_before",
        headline_unit: "fabric goodput after the loss / before",
        own: &[
            LINK,
            B,
            AT,
        ],
        shared: UNDER_LOAD,
    },
    KindInfo {
        name: "link-flap",
        kind: ScenarioKind::LinkFlap,
        models: "a fabric link going down and up under a sustained permutation (a dirty optic)",
        headline: "packets_lost",
        headline_unit: "packets dropped because a link went down",
        own: &[
            LINK,
            B,
            AT,
            p("count", "cycles", "3", "down/up cycles"),
            p("period_us", "µs", "duration / 8", "one cycle (down for its first half)"),
        ],
        shared: UNDER_LOAD,
    },
    KindInfo {
        name: "switch-reboot",
        kind: ScenarioKind::SwitchReboot,
        models: "a spine rebooting under a sustained permutation: every port down, its buffers lost, back after down_us",
        headline: "packets_lost_in_switch",
        headline_unit: "packets lost inside the rebooting switch and on its links",
        own: &[
            p("a", "switch", "\"busiest-spine\"", "the switch, or `busiest-spine` (most bytes before the reboot, in a probe run)"),
            AT,
            p("down_us", "µs", "duration / 4", "how long it stays down"),
        ],
        shared: UNDER_LOAD,
    },
    KindInfo {
        name: "routing-change",
        kind: ScenarioKind::RoutingChange,
        models: "the ECMP hash or the routes change under a sustained permutation: flows move, nothing should drop",
        headline: "ecmp_imbalance_change",
        headline_unit: "ECMP imbalance after − before (max / mean uplink bytes − 1, mean over leaves)",
        own: &[
            p("change", "hash-seed | hash-fields | route-withdraw", "hash-seed", "what changes"),
            p("seed", "u64", "[routing] ecmp_seed + 1", "hash-seed: the new seed"),
            p("a", "node", "\"busiest-spine-uplink\"", "route-withdraw: the link"),
            B,
            p("at_us", "µs", "duration / 2", "when"),
        ],
        shared: UNDER_LOAD,
    },
    KindInfo {
        name: "firmware-mix",
        kind: ScenarioKind::FirmwareMix,
        models: "a share of NICs on another congestion-control profile, as a partial rollout leaves a fleet, under an incast of continuous senders",
        headline: "goodput_ratio_other_over_fleet",
        headline_unit: "mean goodput of senders on the other profile / on the fleet's",
        own: &[
            p("share", "fraction", "0.25", "of the senders (every 1/share-th, at least one)"),
            p("congestion_control", "dcqcn | none", "none, or dcqcn when `dcqcn` is given", "the other profile's CC"),
            p("dcqcn", "table", "the fleet's [nic.dcqcn]", "the other profile's DCQCN keys (e.g. { cnp_interval_us = 50, rate_ai_mbps = 20 })"),
            p("fan_in", "senders", "min(hosts − 1, 8)", "senders into the receiver"),
            STEADY_HORIZON,
        ],
        shared: RECEIVER,
    },
    KindInfo {
        name: "collective",
        kind: ScenarioKind::Collective,
        models: "an NCCL-like collective as the real training load, optionally beside another scenario's traffic",
        headline: "busbw_fraction_of_bound",
        headline_unit: "nccl-tests busbw / the line rate of the NICs it can use (one; on GPU nodes, the node's NICs the channels cross on)",
        own: &[
            p("op", "name", "all_reduce", "all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv"),
            p("size_bytes", "B", "4 MiB × ranks / 8, clamped to 1..64 MiB", "nccl-tests' size"),
            p("ranks", "count", "the fabric's placement (every GPU, or every host)", "the first N hosts in ring order, one rank each"),
            p("beside", "scenario name", "none", "run beside that [[scenario]]'s traffic (sustained, incast, microburst or hotspot)"),
        ],
        shared: &[SAMPLE],
    },
    KindInfo {
        name: "mixed",
        kind: ScenarioKind::Mixed,
        models: "TCP-like flows (a DCTCP window, RFC 8257, or loss-based TCP without ECN) in a lossy class beside RDMA in the lossless class into one receiver, or forced into the RDMA class (the misconfiguration)",
        headline: "rdma_fct_over_alone",
        headline_unit: "mean RDMA message completion time beside TCP / alone (same seed)",
        own: &[
            p("fan_in", "senders", "min((hosts − 1) / 2, 4)", "RDMA senders, each one message at duration / 4"),
            p("tcp_senders", "senders", "fan_in", "TCP-like senders, streaming from time 0"),
            p("size_bytes", "B", "8 × BDP, clamped to 64 KiB..1 MiB", "each RDMA message"),
            p(
                "tcp_class",
                "class",
                "the first lossy class carrying TCP, else the class carrying TCP",
                "the class TCP-like traffic takes (params.tcp_class_lossless says if PFC covers it)",
            ),
            p("shared_class", "bool", "false", "true: TCP-like traffic in the RDMA class instead"),
            p(
                "tcp_ecn",
                "bool",
                "true",
                "true: DCTCP (RFC 8257), ECN-capable; false: loss-based TCP (Reno, RFC 5681) whose packets switches cannot mark, as Linux's TCP without negotiated ECN",
            ),
            p("duration_us", "µs", "400", "simulated time"),
        ],
        shared: RECEIVER,
    },
];

pub fn info(kind: ScenarioKind) -> &'static KindInfo {
    KINDS.iter().find(|k| k.kind == kind).expect("every kind is in the table")
}

/// Rejects parameters the kind does not take, naming each (and where it is).
pub fn check_keys(c: &ScenarioConfig, path: &str) -> Result<(), Vec<Diagnostic>> {
    let info = info(c.kind);
    let v = serde_json::to_value(c).unwrap_or_default();
    let mut errs = Vec::new();
    if let Some(obj) = v.as_object() {
        for (k, val) in obj {
            if val.is_null() || k == "kind" || k == "name" {
                continue;
            }
            if !info.params().any(|p| p.key == k) {
                let keys: Vec<&str> = info.params().map(|p| p.key).collect();
                errs.push(Diagnostic::new(
                    format!("{path}.{k}"),
                    format!("`{k}` is not a parameter of `{}` scenarios", info.name),
                    format!("remove it; `{}` takes: {}", info.name, keys.join(", ")),
                ));
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// `rocelab scenarios --list` as text.
pub fn list_text() -> String {
    let mut o = String::new();
    for k in KINDS {
        o += &format!("{}\n  {}\n  headline: {} ({})\n", k.name, k.models, k.headline, k.headline_unit);
        for p in k.params() {
            o += &format!("    {:<22} {:<28} default {}\n      {}\n", p.key, p.unit, p.default, p.about);
        }
        o += "\n";
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_with_its_own_keys() {
        assert_eq!(KINDS.len(), ScenarioKind::ALL.len());
        for k in ScenarioKind::ALL {
            assert_eq!(info(k).name, k.name());
            let mut keys: Vec<&str> = info(k).params().map(|p| p.key).collect();
            keys.sort();
            let n = keys.len();
            keys.dedup();
            assert_eq!(keys.len(), n, "{k:?} lists a key twice");
        }
    }

    #[test]
    fn keys_of_another_kind_are_refused_by_name() {
        let mut c = ScenarioConfig::bare(ScenarioKind::Incast);
        c.fan_in = Some(4);
        assert!(check_keys(&c, "scenario[0]").is_ok());
        c.down_us = Some(5.0);
        c.share = Some(0.5);
        let e = check_keys(&c, "scenario[0]").unwrap_err();
        let paths: Vec<&str> = e.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["scenario[0].down_us", "scenario[0].share"]);
    }

    /// docs/scenarios.md documents every kind and every parameter the table lists.
    #[test]
    fn the_scenarios_page_names_every_kind_and_parameter() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenarios.md")).unwrap();
        for k in KINDS {
            assert!(page.contains(&format!("`{}`", k.name)), "{}", k.name);
            assert!(page.contains(k.headline), "{}", k.headline);
            for p in k.params() {
                assert!(page.contains(&format!("`{}`", p.key)), "{}: {}", k.name, p.key);
            }
        }
    }
}
