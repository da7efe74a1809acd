//! Why a check failed, and a fix the twin has tried.
//!
//! For every failed (or not-converged) check, [`diagnose`] reads the run for the mechanism
//! behind the figure, in the field's terms (PFC doing the braking DCQCN should, DCQCN's rate
//! increases outpacing its cuts, no ECN marking at the port's speed, a lossless class that
//! carries TCP, CNPs waiting behind data, RDMA sharing its class or queue with general traffic,
//! NICs left without congestion control in a DCQCN fleet, headroom or a NIC that ignores
//! pauses), with the ports, priorities and figures that show it, the fabric-file keys to
//! change, and candidate changes. `validate` then re-runs the failing scenario with the first candidate (and the
//! second if the first does not move the figure past the limit), same seed, and records the
//! figure before → after: a fix is *verified* when the re-run passes the check.

use crate::{CheckDef, Figure, Verdict};
use rocelab_model::config::{
    Config, CongestionControl, EcnConfig, ScenarioConfig, ScenarioKind, SchedulerKind, TrafficClassConfig, TrafficKind,
};
use rocelab_model::Model;
use rocelab_scenario::ScenarioResult;
use serde::Serialize;

/// What made a check fail.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Cause {
    /// The mechanism, in the field's words.
    pub mechanism: String,
    /// The ports, priorities, flows and figures that show it.
    pub evidence: Vec<String>,
    /// The fabric-file keys to change.
    pub keys: Vec<String>,
}

/// A change tried on the twin, and what it did to the check's figure.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Fix {
    /// The change as fabric-file lines.
    pub change: String,
    pub before: Option<f64>,
    /// `None`: not re-run (`--no-verify-fixes`, or no change the twin can make by itself).
    pub after: Option<f64>,
    pub unit: String,
    /// The check's verdict on the re-run.
    pub verdict_after: Option<Verdict>,
    /// The re-run passes the check.
    pub verified: bool,
    /// Why it was not re-run, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A change to a run's scenario table.
pub type ScenarioEdit = Box<dyn Fn(&mut ScenarioConfig) + Send + Sync>;

/// A change the twin can make to a fabric file.
pub struct Candidate {
    /// As fabric-file lines (what the report prints).
    pub change: String,
    pub apply: Box<dyn Fn(&mut Config) + Send + Sync>,
    /// A change to the scenario itself (a `[[scenario]]` table of the file).
    pub scenario: Option<ScenarioEdit>,
    /// Re-run on the flow-level engine (where the packet engine would take minutes).
    pub flow_engine: bool,
}

/// The RDMA class's index in the file's `[[qos.class]]` (the model's classes are the file's,
/// in order, when the file declares any).
fn rdma_class_cfg(m: &Model) -> Option<usize> {
    let name = &m.qos.classes[m.qos.rdma_class()].name;
    m.config.qos.classes.iter().position(|c| &c.name == name)
}

/// Whether the check's failure is PFC doing the braking: the paused share, a not-converged
/// run whose buffer or pauses were still moving, a busbw or queueing figure on a run that
/// paused.
fn pfc_braking(c: &CheckDef, r: &ScenarioResult, not_converged: bool) -> bool {
    let pauses = r.metrics.get("pfc_frames").copied().flatten().unwrap_or(0.0) > 0.0;
    match c.figure {
        Figure::MaxPausedShare => true,
        _ if not_converged => {
            pauses
                && r.steady.as_ref().is_some_and(|s| {
                    s.agreement
                        .iter()
                        .any(|a| !a.agree && (a.figure.starts_with("switch buffer") || a.figure.contains("paused")))
                })
        }
        Figure::Headline | Figure::Metric(crate::IDEAL)
            if c.kind == rocelab_model::config::ScenarioKind::Collective =>
        {
            pauses
        }
        Figure::QueueDelayP99Us | Figure::Metric("held_queue_us") => pauses,
        _ => false,
    }
}

/// The fabric's bandwidth-delay product at the hosts' speed over its base round trip (the
/// scenarios' scale), at least 20 kB.
fn fabric_bdp(m: &Model) -> u64 {
    let scale = rocelab_scenario::fabric::Scale::new(m, &None, "scenario").ok();
    scale.map_or(100_000, |s| s.bdp_bytes).max(20_000)
}

/// Marking that starts within a few round trips of queue at this speed: Kmin at about one
/// bandwidth-delay product, Kmax ten times it, on the RDMA class (`i` in the file's classes).
fn ecn_at_bdp(class: &str, i: usize, bdp: u64) -> Candidate {
    Candidate {
        scenario: None,
        flow_engine: false,
        change: format!(
            "[[qos.class]] name = \"{class}\": ecn = {{ kmin_bytes = {bdp}, kmax_bytes = {}, pmax = 0.2 }}",
            bdp * 10
        ),
        apply: Box::new(move |cfg: &mut Config| {
            if let Some(cl) = cfg.qos.classes.get_mut(i) {
                cl.ecn = Some(EcnConfig { kmin_bytes: bdp, kmax_bytes: bdp * 10, pmax: 0.2 });
                cl.ecn_per_speed.clear();
            }
        }),
    }
}

/// Below this, a byte counter is ConnectX's `rpg_byte_reset` read as NVIDIA's tools describe it,
/// in bytes (a 15-bit field, at most 32,767): the case where the counter outpaces the cuts.
const BYTE_COUNTER_IN_BYTES: u64 = 1 << 15;

/// The cause of check `c` failing on run `r` of `m`, and the changes worth trying.
pub fn diagnose(
    c: &CheckDef,
    r: &ScenarioResult,
    m: &Model,
    not_converged: bool,
    evidence_of_run: &[String],
) -> (Cause, Vec<Candidate>) {
    let g = |k: &str| r.metrics.get(k).copied().flatten().unwrap_or(0.0);
    let mut evidence: Vec<String> = evidence_of_run.to_vec();
    let hosts: Vec<_> = m.hosts().collect();
    let speed = hosts.iter().map(|h| m.host_speed(*h).gbps()).fold(0.0f64, f64::max);
    let rdma = &m.qos.classes[m.qos.rdma_class()];
    if c.kind == ScenarioKind::FirmwareMix && matches!(c.figure, Figure::Headline) && !not_converged {
        let other_cc = r.params.get("congestion_control").and_then(|v| v.as_str()).unwrap_or("none").to_string();
        let hosts = r.params.get("other_profile_hosts").map(|v| v.to_string()).unwrap_or_default();
        evidence.push(format!(
            "senders on the other profile ({other_cc}, {hosts}) averaged {:.1} Gb/s, the fleet's {:.1} Gb/s",
            g("other_goodput_gbps_mean"),
            g("fleet_goodput_gbps_mean")
        ));
        let mechanism = if other_cc == "none" {
            "NICs without congestion control beside DCQCN NICs: the receiver's CNPs slow only the DCQCN senders, and the NICs that never back off take the bandwidth they give up"
        } else {
            "two DCQCN profiles on one bottleneck: the profile that cuts less per CNP or recovers faster takes the bandwidth the other gives up"
        };
        let cause = Cause {
            mechanism: mechanism.into(),
            evidence,
            keys: vec!["[nic_profiles.NAME] congestion_control, [nic_profiles.NAME.dcqcn]".into()],
        };
        let cand = Candidate {
            change: "roll firmware out with the fleet's congestion control: every [nic_profiles.NAME] keeps congestion_control = \"dcqcn\" and the fleet's [nic.dcqcn] (the re-run puts the other profile on them)".into(),
            apply: Box::new(|_: &mut Config| {}),
            scenario: Some(Box::new(|sc: &mut ScenarioConfig| {
                sc.set("congestion_control", "dcqcn");
                sc.table.remove("dcqcn");
            })),
            flow_engine: false,
        };
        return (cause, vec![cand]);
    }
    // A fleet half on congestion control: the NICs without it hold the queue (or PFC brakes
    // them) whatever the ECN thresholds and DCQCN's knobs say.
    let congestion = not_converged
        || matches!(c.figure, Figure::MaxPausedShare | Figure::QueueDelayP99Us | Figure::Metric("held_queue_us"));
    if congestion {
        if let Some(found) = fleet_without_cc(m, &hosts, &mut evidence) {
            return found;
        }
    }
    // A held queue with no pause behind it is DCQCN's: its byte counter first, if it is the
    // one that outpaces the cuts, else where ECN starts marking (below).
    let d0 = &m.nic_of(hosts[0]).dcqcn;
    let counter_outpaces =
        d0.variant == rocelab_model::config::DcqcnVariant::Mlx5 && d0.byte_counter_bytes < BYTE_COUNTER_IN_BYTES;
    let held = matches!(c.figure, Figure::Metric("held_queue_us"));
    let paused = g("pfc_frames") > 0.0;
    if pfc_braking(c, r, not_converged) || (held && counter_outpaces) {
        if let Some(st) = &r.steady {
            evidence.push(format!(
                "window {:.0}–{:.0} µs: switch buffers hold {:.1} MB on average, the worst port and priority ({}) is paused {:.0} % of the time",
                st.from_us,
                st.to_us,
                st.buffer_mean_bytes / 1e6,
                st.paused_port.as_deref().unwrap_or("none"),
                st.paused_share_max * 100.0
            ));
        }
        evidence.push(format!(
            "whole run: {:.0} PFC frames, {:.0} packets ECN-marked, {:.0} CNPs sent",
            g("pfc_frames"),
            g("ecn_marked"),
            g("cnp_sent")
        ));
        let nic = m.nic_of(hosts[0]);
        let ecn = rdma.ecn_for_speed(speed);
        if nic.congestion_control == CongestionControl::None {
            let cause = Cause {
                mechanism: "no congestion control on the NICs: nothing slows the senders but PFC, so pauses spread hop by hop toward them (PFC doing the braking DCQCN should)".into(),
                evidence,
                keys: vec!["[nic] congestion_control".into()],
            };
            let cand = Candidate {
                scenario: None,
                flow_engine: false,
                change: "[nic] congestion_control = \"dcqcn\"".into(),
                apply: Box::new(|cfg: &mut Config| cfg.nic.congestion_control = Some(CongestionControl::Dcqcn)),
            };
            return (cause, vec![cand]);
        }
        if ecn.is_none() {
            let name = rdma.name.clone();
            let kmin = (150_000.0 * speed / 400.0).max(50_000.0) as u64;
            let cause = Cause {
                mechanism: format!(
                    "no ECN marking on the RDMA class `{name}` at {speed:.0} Gb/s: DCQCN never hears of the congestion, and PFC is the only brake"
                ),
                evidence,
                keys: vec![format!("[[qos.class]] name = \"{name}\": ecn")],
            };
            let cand = Candidate {
                scenario: None,
                flow_engine: false,
                change: format!(
                    "[[qos.class]] name = \"{name}\": ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {}, pmax = 0.1 }}",
                    kmin * 10
                ),
                apply: Box::new(move |cfg: &mut Config| {
                    if let Some(cl) = cfg.qos.classes.iter_mut().find(|x| x.name == name) {
                        cl.ecn = Some(EcnConfig { kmin_bytes: kmin, kmax_bytes: kmin * 10, pmax: 0.1 });
                    }
                }),
            };
            return (cause, vec![cand]);
        }
        let mut cands = vec![];
        let d = &nic.dcqcn;
        let mut keys = vec![];
        let mut mech = String::from(
            "PFC doing the braking DCQCN should: the queues grow past the XOFF threshold before the senders slow down",
        );
        if d.variant == rocelab_model::config::DcqcnVariant::Mlx5 && d.byte_counter_bytes < BYTE_COUNTER_IN_BYTES {
            let every_us = d.byte_counter_bytes as f64 * 8.0 / (speed * 1e3);
            let per_cut = d.rate_reduce_period.as_us_f64() / every_us;
            mech = format!(
                "DCQCN's rate increases outpace its cuts: the byte counter (byte_counter_bytes = {} B) raises each sender's rate every {every_us:.2} µs at {speed:.0} Gb/s, {per_cut:.1} times per rate_reduce_period ({:.0} µs) in which one cut may happen, so the senders climb back before the queues drain; {}",
                d.byte_counter_bytes,
                d.rate_reduce_period.as_us_f64(),
                if paused {
                    "the shared buffer fills to the XOFF threshold and PFC does the braking"
                } else {
                    "the queue stays deep, held where the increases and the cuts balance"
                }
            );
            keys.push("[nic.dcqcn] byte_counter_bytes".into());
            keys.push("[nic.dcqcn] increase_timer_us".into());
            // The byte counter alone slowed, the rate recovers on the timer only, and
            // ConnectX's 300 µs timer leaves an incast's senders cut for hundreds of µs
            // (rail-128gpu's incast: 1.34 × ideal); the DCQCN paper's 55 µs timer restores them.
            let timer = d.increase_timer.as_us_f64();
            cands.push(Candidate {
                scenario: None,
                flow_engine: false,
                change: format!(
                    "[nic.dcqcn] byte_counter_bytes = 2097088, increase_timer_us = {}   # a 2 MB byte counter (what rpg_byte_reset 32767 means if the firmware counts 64-byte units; NVIDIA's tools say bytes) and the DCQCN paper's timer: the rate then recovers on the timer",
                    timer.min(55.0)
                ),
                apply: Box::new(move |cfg: &mut Config| {
                    cfg.nic.dcqcn.byte_counter_bytes = Some(2_097_088);
                    cfg.nic.dcqcn.increase_timer_us = Some(timer.min(55.0));
                    for p in cfg.nic_profiles.values_mut() {
                        if p.dcqcn.byte_counter_bytes.is_some_and(|b| b < BYTE_COUNTER_IN_BYTES) {
                            p.dcqcn.byte_counter_bytes = Some(2_097_088);
                        }
                    }
                }),
            });
        }
        if let (Some(e), Some(i)) = (ecn, rdma_class_cfg(m)) {
            let bdp = fabric_bdp(m);
            if e.kmin_bytes > bdp {
                evidence.push(format!(
                    "ECN on `{}` at {speed:.0} Gb/s: Kmin {} B, Kmax {} B, Pmax {}; the fabric's bandwidth-delay product is {bdp} B",
                    rdma.name, e.kmin_bytes, e.kmax_bytes, e.pmax
                ));
                keys.push(format!("[[qos.class]] name = \"{}\": ecn", rdma.name));
                cands.push(ecn_at_bdp(&rdma.name, i, bdp));
                if keys.len() == 1 {
                    // Not the byte counter: ECN itself marks too late.
                    mech = format!(
                        "ECN thresholds far above the port's bandwidth-delay product (Kmin {} B against {bdp} B): the queues reach the XOFF threshold before ECN marks enough for DCQCN to slow the senders, and PFC does the braking",
                        e.kmin_bytes
                    );
                }
            }
        }
        if keys.is_empty() {
            keys.push("[nic.dcqcn]".into());
            keys.push(format!("[[qos.class]] name = \"{}\": ecn", rdma.name));
        }
        return (Cause { mechanism: mech, evidence, keys }, cands);
    }
    if not_converged {
        let differ: Vec<&str> = r
            .steady
            .as_ref()
            .map(|s| s.agreement.iter().filter(|a| !a.agree).map(|a| a.figure).collect())
            .unwrap_or_default();
        let cause = Cause {
            mechanism: format!(
                "the load had not settled by the horizon: {} still moved between the last two windows, with no PFC braking behind it (DCQCN's rates still converging: its additive increase is slow at rpg_ai_rate)",
                differ.join(", ")
            ),
            evidence,
            keys: vec!["[steady] horizon_us (the policy)".into(), "[nic.dcqcn] rate_ai_mbps".into()],
        };
        return (cause, vec![]);
    }
    if matches!(c.figure, Figure::Metric("held_queue_us")) {
        // No PFC behind it (that is the branch above): DCQCN held the queue where ECN began
        // to mark, and the thresholds put that far above a few round trips.
        let bdp = fabric_bdp(m);
        if let (Some(e), Some(i)) = (rdma.ecn_for_speed(speed), rdma_class_cfg(m)) {
            if e.kmin_bytes > bdp {
                let us = |b: u64| b as f64 * 8.0 / (speed * 1e3);
                evidence.push(format!(
                    "deepest queue {:.0} B on average in the judged window (peak at the hot port {:.0} B); {:.0} ECN marks, {:.0} CNPs, no PFC frame",
                    r.steady.as_ref().map_or(0.0, |w| w.deepest_queue_mean_bytes),
                    g("max_queue_bytes"),
                    g("ecn_marked"),
                    g("cnp_sent")
                ));
                let cause = Cause {
                    mechanism: format!(
                        "ECN thresholds far above the port's bandwidth-delay product: `{}` marks from Kmin {} B ({:.1} µs at {speed:.0} Gb/s) to Kmax {} B ({:.1} µs), the BDP is {bdp} B ({:.1} µs); nothing is marked until the queue reaches Kmin, so DCQCN holds it there and every packet through the port waits that long",
                        rdma.name,
                        e.kmin_bytes,
                        us(e.kmin_bytes),
                        e.kmax_bytes,
                        us(e.kmax_bytes),
                        us(bdp)
                    ),
                    evidence,
                    keys: vec![format!("[[qos.class]] name = \"{}\": ecn, ecn_per_speed", rdma.name)],
                };
                return (cause, vec![ecn_at_bdp(&rdma.name, i, bdp)]);
            }
        }
    }
    if c.kind == ScenarioKind::FirmwareUpdate && g("timeouts") > 0.0 {
        let nic = m.nic_of(hosts[0]);
        let rto = nic.retransmit_timeout.map_or(0.0, |t| t.as_secs_f64());
        evidence
            .push(format!("{:.0} transport timeouts; the NIC's retransmission timeout is {rto:.3} s", g("timeouts")));
        let cause = Cause {
            mechanism: format!(
                "the interrupted messages waited for the transport timeout ({rto:.3} s) after the NIC came back: QPs that are not re-created by the reset (UET's, whose packet delivery contexts need no connection) resend a lost tail only when their timer fires"
            ),
            evidence,
            keys: vec!["[nic] ack_timeout".into()],
        };
        return (cause, vec![]);
    }
    if c.kind == ScenarioKind::SwitchReboot
        && matches!(c.figure, Figure::Metric("packets_lost_elsewhere"))
        && g("stalled_flows") > 0.0
        && g("rebooted_gbps_before") > 0.0
        && g("other_spines_gbps_during") == 0.0
    {
        return partitioned(m, r, evidence);
    }
    if c.kind == ScenarioKind::Isolation && !not_converged {
        return isolation(m, r, evidence);
    }
    if matches!(c.figure, Figure::Metric("tcp_priority_pause_frames")) {
        let class = r.params.get("tcp_class").and_then(|v| v.as_str()).unwrap_or("?").to_string();
        let prio = r.params.get("tcp_priority").and_then(|v| v.as_u64()).unwrap_or(0);
        evidence.push(format!(
            "{:.0} PFC frames sent for priority {prio}, which TCP rides in class `{class}`",
            g("tcp_priority_pause_frames")
        ));
        let cause = Cause {
            mechanism: format!("TCP in a lossless class (`{class}`, priority {prio}): TCP never sees a loss and never backs off, its queue fills the buffer, and PFC pauses stop every flow of the priority on the paused links (head-of-line blocking)"),
            evidence,
            keys: vec![format!("[[qos.class]] name = \"{class}\": lossless"), "[qos.pfc] priorities".into(), "[nic.qos] pfc_priorities".into()],
        };
        let cand = Candidate {
                scenario: None,
                flow_engine: false,
            change: format!("[[qos.class]] name = \"{class}\": lossless = false (and priority {prio} out of [qos.pfc] priorities and [nic.qos] pfc_priorities)"),
            apply: Box::new(move |cfg: &mut Config| {
                if let Some(cl) = cfg.qos.classes.iter_mut().find(|x| x.name == class) {
                    cl.lossless = false;
                }
                if let Some(p) = &mut cfg.qos.pfc.priorities {
                    p.retain(|x| *x as u64 != prio);
                }
                if let Some(p) = &mut cfg.nic.qos.pfc_priorities {
                    p.retain(|x| *x as u64 != prio);
                }
            }),
        };
        return (cause, vec![cand]);
    }
    if matches!(c.figure, Figure::CnpDelayP99Us) {
        let cnp = &m.qos.classes[m.qos.cnp_class];
        let shared = m.qos.cnp_class == m.qos.rdma_class();
        let cause = Cause {
            mechanism: if shared {
                format!("CNPs share the RDMA class `{}`: they wait behind the congested data they report on, and DCQCN cuts late", cnp.name)
            } else {
                format!("the CNP class `{}` is scheduled {:?} with data, not strict priority: CNPs wait their turn behind the congested data queues, and DCQCN cuts late", cnp.name, cnp.scheduler)
            },
            evidence,
            keys: vec!["[qos] cnp_class".into(), "[[qos.class]] scheduler".into()],
        };
        let name = cnp.name.clone();
        let cand = if shared {
            // NVIDIA's RoCE defaults: CNPs on DSCP 48, priority 6, strict priority.
            let (dscp, prio) = (48u8, 6u8);
            Candidate {
                scenario: None,
                flow_engine: false,
                change: format!("a class of their own: [[qos.class]] name = \"cnp\", dscp = [{dscp}], priority = {prio}, scheduler = \"strict\", carries = [\"cnp\"]; [qos] cnp_class = \"cnp\"; [nic.qos] cnp_dscp = {dscp}, cnp_priority = {prio}"),
                apply: Box::new(move |cfg: &mut Config| {
                    cfg.nic.qos.cnp_dscp = Some(dscp);
                    cfg.nic.qos.cnp_priority = Some(prio);
                    for cl in &mut cfg.qos.classes {
                        cl.dscp.retain(|d| *d != dscp);
                        cl.carries.retain(|k| *k != TrafficKind::Cnp);
                    }
                    cfg.qos.classes.push(TrafficClassConfig {
                        name: "cnp".into(),
                        dscp: vec![dscp],
                        priority: prio,
                        scheduler: SchedulerKind::Strict,
                        carries: vec![TrafficKind::Cnp],
                        queue: None,
                        lossless: false,
                        weight: 1,
                        ecn: None,
                        ecn_per_speed: Default::default(),
                    });
                    cfg.qos.cnp_class = "cnp".into();
                }),
            }
        } else {
            Candidate {
                scenario: None,
                flow_engine: false,
                change: format!("[[qos.class]] name = \"{name}\": scheduler = \"strict\""),
                apply: Box::new(move |cfg: &mut Config| {
                    if let Some(cl) = cfg.qos.classes.iter_mut().find(|x| x.name == name) {
                        cl.scheduler = SchedulerKind::Strict;
                    }
                }),
            }
        };
        return (cause, vec![cand]);
    }
    let drops = matches!(
        c.figure,
        Figure::Metric("dropped_packets")
            | Figure::Difference("dropped_packets", _)
            | Figure::Metric("rdma_class_drops")
    );
    if drops && g("dropped_packets") > 0.0 {
        // Where the drops are, by port, queue and reason.
        let mut at: Vec<(f64, String)> = r
            .report
            .metrics
            .iter()
            .filter(|x| x.name == "rocelab_drops_total" && x.value > 0.0)
            .map(|x| {
                (
                    x.value,
                    format!(
                        "{}:{} queue {} ({})",
                        x.labels["node"], x.labels["port"], x.labels["queue"], x.labels["reason"]
                    ),
                )
            })
            .collect();
        at.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (v, w) in at.iter().take(3) {
            evidence.push(format!("{v:.0} packets dropped at {w}"));
        }
        let nic_pfc = m.nic_of(hosts[0]).qos.pfc_mask;
        let sw_pfc = m.qos.pfc_mask;
        if nic_pfc & sw_pfc != sw_pfc {
            let want: Vec<u8> = (0..8).filter(|p| sw_pfc & (1 << p) != 0).collect();
            let cause = Cause {
                mechanism: format!("the NICs do not pause on every lossless priority of the switches (NIC mask {nic_pfc:#04x}, switches {sw_pfc:#04x}): a NIC that ignores a pause overruns the switch's headroom, and the lossless class drops"),
                evidence,
                keys: vec!["[nic.qos] pfc_priorities".into()],
            };
            let cand = Candidate {
                scenario: None,
                flow_engine: false,
                change: format!("[nic.qos] pfc_priorities = {want:?}"),
                apply: Box::new(move |cfg: &mut Config| cfg.nic.qos.pfc_priorities = Some(want.clone())),
            };
            return (cause, vec![cand]);
        }
        let headroom = m.config.qos.pfc.headroom_bytes;
        let cause = Cause {
            mechanism: "drops in a lossless class: the PFC headroom does not cover what arrives after XOFF (the cable's round trip, the peer's response and a maximum frame each way)".into(),
            evidence,
            keys: vec!["[qos.pfc] headroom_bytes".into(), "[qos.pfc] xoff_bytes".into()],
        };
        let more = headroom.map_or(200_000, |h| h * 2);
        let cand = Candidate {
            scenario: None,
            flow_engine: false,
            change: format!("[qos.pfc] headroom_bytes = {more}"),
            apply: Box::new(move |cfg: &mut Config| cfg.qos.pfc.headroom_bytes = Some(more)),
        };
        return (cause, vec![cand]);
    }
    if c.kind == ScenarioKind::Collective && matches!(c.figure, Figure::Metric(crate::IDEAL)) {
        return shared_links(m, r, evidence);
    }
    let latency_bound = c.kind == ScenarioKind::Collective && matches!(c.figure, Figure::Headline) && {
        let p = |k: &str| r.params.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
        let (ranks, channels) = (p("ranks").max(2.0), p("channels").max(1.0));
        let op = r.params.get("op").and_then(|v| v.as_str()).unwrap_or("all_reduce");
        let steps = rocelab_workload::parse_op(op).map(|o| o.ring_steps(ranks as u32)).unwrap_or(1).max(1) as f64;
        let mtu = m.nic_of(hosts[0]).mtu as f64;
        let wire_us = p("size_bytes") / (ranks * channels) * 8.0 * (mtu + 78.0) / mtu / (speed * 1e3);
        // A tenth of every step or more spent on latency, with nothing queued behind it.
        g("pfc_frames") == 0.0 && wire_us < 0.9 * g("time_us") / steps
    };
    if latency_bound {
        let p = |k: &str| r.params.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
        let (ranks, channels, size) = (p("ranks").max(2.0), p("channels").max(1.0), p("size_bytes"));
        let op = r.params.get("op").and_then(|v| v.as_str()).unwrap_or("all_reduce").to_string();
        let steps = rocelab_workload::parse_op(&op).map(|o| o.ring_steps(ranks as u32)).unwrap_or(1).max(1) as f64;
        let step_us = g("time_us") / steps;
        let per = size / (ranks * channels);
        let mtu = m.nic_of(hosts[0]).mtu as f64;
        let wire_us = per * 8.0 * (mtu + 78.0) / mtu / (speed * 1e3);
        evidence.push(format!(
            "{op} of {size:.0} B over {ranks:.0} ranks and {channels:.0} channels: {steps:.0} ring steps in {:.1} µs, {step_us:.2} µs each, of which {wire_us:.2} µs move the step's {per:.0} B per channel at {speed:.0} Gb/s; {:.2} µs per step is latency (hop latency inside a node, propagation, store-and-forward)",
            g("time_us"),
            (step_us - wire_us).max(0.0)
        ));
        evidence.push(format!(
            "no congestion behind it: {:.0} PFC frames, {:.0} ECN marks, deepest queue {:.0} B",
            g("pfc_frames"),
            g("ecn_marked"),
            g("max_queue_bytes")
        ));
        let bigger = (size * 8.0).min(64.0 * (1u64 << 30) as f64) as u64;
        let cause = Cause {
            mechanism: format!(
                "the ring is latency-bound at this size, not limited by the fabric: each of its {steps:.0} steps moves only size / (ranks × channels) = {per:.0} B per channel, so the per-step latency is {:.0} % of every step",
                (1.0 - wire_us / step_us).max(0.0) * 100.0
            ),
            evidence,
            keys: vec!["[[scenario]] kind = \"collective\": size_bytes".into()],
        };
        let cand = Candidate {
            change: format!(
                "[[scenario]] kind = \"collective\", size_bytes = {bigger}   # each step moves 8× more per channel"
            ),
            apply: Box::new(|_: &mut Config| {}),
            scenario: Some(Box::new(move |sc: &mut ScenarioConfig| sc.set("size_bytes", bigger as i64))),
            flow_engine: true,
        };
        return (cause, vec![cand]);
    }
    let cause = Cause {
        mechanism: format!("{} is past its limit; the run shows no PFC braking, drops, CNP delay or TCP in a lossless class that would explain it", c.name),
        evidence,
        keys: vec![],
    };
    (cause, vec![])
}

/// A collective slower than on the fabric made non-blocking with no PFC behind it: its flows
/// share the links between switches — ECMP hashing several onto one uplink while others idle,
/// or a tier with less capacity up than down. Adaptive routing (per-packet choice of the least
/// loaded uplink, Spectrum-X's RoCE adaptive routing) is tried: it answers collisions, not a
/// tier that is too thin.
fn shared_links(m: &Model, r: &ScenarioResult, mut evidence: Vec<String>) -> (Cause, Vec<Candidate>) {
    let g = |k: &str| r.metrics.get(k).copied().flatten();
    let summary = rocelab_model::summary::summarize(m);
    let thin: Vec<String> = summary
        .tiers
        .iter()
        .filter_map(|t| t.oversubscription.filter(|o| *o > 1.0 + 1e-9).map(|o| format!("{} {o:.2}:1", t.tier)))
        .collect();
    evidence.push(format!(
        "leaf uplinks: the busiest carried {} of its line rate over the run, and a leaf's busiest uplink {} more than its mean (ECMP imbalance, max / mean − 1); {} ECN marks, deepest queue {} B",
        g("uplink_utilization_max").map_or("—".into(), |u| format!("{:.0} %", u * 100.0)),
        g("ecmp_imbalance").map_or("—".into(), |i| format!("{:.0} %", i * 100.0)),
        g("ecn_marked").unwrap_or(0.0),
        g("max_queue_bytes").unwrap_or(0.0)
    ));
    if !thin.is_empty() {
        evidence.push(format!("oversubscribed tiers (down:up): {}", thin.join(", ")));
    }
    let lb = m.config.routing.load_balancing;
    // On tiers with the capacity (none oversubscribed), flows that still queue between
    // switches were put on the same links: hashing, not capacity. On an oversubscribed tier, a
    // leaf whose busiest uplink carries a quarter more than its mean collides as well.
    let collide = thin.is_empty() || g("ecmp_imbalance").is_some_and(|i| i > 0.25);
    let beside = r.params.get("beside").and_then(|v| v.as_str());
    let what = match (beside, collide) {
        // The ideal runs the collective alone: what runs beside it is the first suspect.
        (Some(b), _) => format!(
            "the traffic of `{b}` running beside it takes the links and receivers it needs (its ideal runs alone)"
        ),
        (None, true) if m.is_ib() => {
            "the subnet manager's routes put several of them on one link while others idle".into()
        }
        (None, true) if lb.is_ecmp() => {
            "ECMP hashes several of them onto one uplink while others idle (ECMP collisions)".into()
        }
        (None, true) => "its load balancing still leaves several on one uplink while others idle".into(),
        (None, false) => {
            "they need more capacity between the tiers than the fabric has, and its uplinks run full".into()
        }
    };
    let mechanism = format!(
        "the collective's flows share the links between switches, with no PFC behind it: {what}{}",
        if thin.is_empty() { String::new() } else { format!(" (oversubscribed: {})", thin.join(", ")) }
    );
    let mut keys = vec!["[routing] load_balancing".to_string()];
    if let Some(b) = beside {
        keys.insert(0, format!("[[scenario]] beside = \"{b}\" (what runs beside the collective)"));
    }
    if !thin.is_empty() {
        keys.push("[topology] the oversubscribed tier's uplinks (pod_oversubscription, spines, leaf_link)".into());
    }
    let cause = Cause { mechanism, evidence, keys };
    let cands = if lb.is_ecmp() && !m.is_ib() && beside.is_none() {
        vec![Candidate {
            change: "[routing] load_balancing = \"adaptive\"   # each packet on the least-loaded uplink (Spectrum-X RoCE adaptive routing), the NICs placing out-of-order packets".into(),
            apply: Box::new(|cfg: &mut Config| cfg.routing.load_balancing = rocelab_model::lb::LoadBalancing::Adaptive),
            scenario: None,
            flow_engine: false,
        }]
    } else {
        vec![]
    };
    (cause, cands)
}

/// The job of an `isolation` run slowed past what its class is promised beside the tenant: RDMA
/// and general traffic mixed without separation — the tenant in the job's own class or egress
/// queue, or strict priority above it — or, with a scheduler share between them, the share not
/// kept. The fix separates them the way lint's ISO001 says: the general traffic in a lossy class
/// and queue of its own beside RDMA's, scheduled DWRR.
fn isolation(m: &Model, r: &ScenarioResult, mut evidence: Vec<String>) -> (Cause, Vec<Candidate>) {
    let g = |k: &str| r.metrics.get(k).copied().flatten().unwrap_or(0.0);
    let p = |k: &str| r.params.get(k).cloned().unwrap_or_default();
    let job = m.qos.rdma_class();
    let tenant_name = p("class").as_str().unwrap_or("?").to_string();
    let tenant = m.qos.class_by_name(&tenant_name).unwrap_or(job);
    let (j, t) = (&m.qos.classes[job], &m.qos.classes[tenant]);
    // As the fabric file spells them.
    let word = |v: serde_json::Value| v.as_str().map_or_else(|| v.to_string(), String::from);
    let sched = |k: &rocelab_model::model::TrafficClass| match k.scheduler {
        SchedulerKind::Dwrr => format!("dwrr weight {}", k.weight),
        SchedulerKind::Strict => "strict".to_string(),
    };
    let carries = |k: &rocelab_model::model::TrafficClass| k.carries.iter().map(spelled).collect::<Vec<_>>().join(", ");
    evidence.push(format!(
        "the job's all-reduce over {} hosts took {:.1} µs beside the tenant, {:.1} µs alone ({:.2}×); the tenant: {} hosts sending {} B each over {} in class `{}` (priority {}, queue {}, {}; carries {})",
        word(p("victims")),
        g("together_us"),
        g("alone_us"),
        g("together_us") / g("alone_us").max(1e-9),
        word(p("noisy_hosts")),
        word(p("noisy_bytes")),
        word(p("noisy_transport")),
        t.name,
        t.priority,
        t.queue,
        sched(t),
        carries(t)
    ));
    if job != tenant {
        evidence.push(format!(
            "the job's class `{}`: priority {}, queue {}, {}; carries {}",
            j.name,
            j.priority,
            j.queue,
            sched(j),
            carries(j)
        ));
    }
    let general = [TrafficKind::Tcp, TrafficKind::Storage, TrafficKind::Management, TrafficKind::Other];
    let (mechanism, keys, cand) = if job == tenant || j.queue == t.queue {
        let how = if job == tenant {
            format!("the tenant's traffic rides the job's own class `{}`", j.name)
        } else {
            format!("the tenant's class `{}` shares egress queue {} with the job's class `{}`", t.name, t.queue, j.name)
        };
        let mechanism = format!(
            "RDMA and general traffic mixed without separation: {how}, so no scheduler stands between them and the storage or backup traffic takes the job's links first come, first served (lint: ISO001)"
        );
        let rdma = j.name.clone();
        let other = t.name.clone();
        let same_class = job == tenant;
        let change = if same_class {
            // Where the general traffic goes: the file's first lossy class that carries no
            // CNPs, else a new one (as `apply` below decides).
            let to = m
                .config
                .qos
                .classes
                .iter()
                .find(|c| c.name != rdma && !c.lossless && !c.carries.contains(&TrafficKind::Cnp))
                .map_or("a new lossy class `general` on a free priority, DWRR at the same weight".to_string(), |c| {
                    format!("class `{}`", c.name)
                });
            let moved: Vec<String> = j.carries.iter().filter(|k| general.contains(k)).map(spelled).collect();
            format!("[[qos.class]] name = \"{rdma}\": carries = [\"rdma\"]; {} into {to}", moved.join(", "))
        } else {
            format!("[[qos.class]] name = \"{other}\": queue = a queue of its own (not {})", j.queue)
        };
        let cand = Candidate {
            change,
            scenario: None,
            flow_engine: false,
            apply: Box::new(move |cfg: &mut Config| {
                let Some(ri) = cfg.qos.classes.iter().position(|c| c.name == rdma) else { return };
                if !same_class {
                    let used: Vec<u8> = cfg.qos.classes.iter().map(|c| c.queue.unwrap_or(c.priority)).collect();
                    if let (Some(free), Some(cl)) =
                        ((0..8u8).find(|q| !used.contains(q)), cfg.qos.classes.iter_mut().find(|c| c.name == other))
                    {
                        cl.queue = Some(free);
                    }
                    return;
                }
                let moved: Vec<TrafficKind> =
                    cfg.qos.classes[ri].carries.iter().copied().filter(|k| general.contains(k)).collect();
                cfg.qos.classes[ri].carries.retain(|k| !general.contains(k));
                let weight = cfg.qos.classes[ri].weight;
                let existing = cfg
                    .qos
                    .classes
                    .iter()
                    .position(|c| c.name != rdma && !c.lossless && !c.carries.contains(&TrafficKind::Cnp));
                if let Some(o) = existing {
                    let cl = &mut cfg.qos.classes[o];
                    for k in moved.iter().copied() {
                        if !cl.carries.contains(&k) {
                            cl.carries.push(k);
                        }
                    }
                    return;
                }
                let prios: Vec<u8> = cfg.qos.classes.iter().map(|c| c.priority).collect();
                let queues: Vec<u8> = cfg.qos.classes.iter().map(|c| c.queue.unwrap_or(c.priority)).collect();
                let Some(prio) = (0..8u8).find(|x| !prios.contains(x) && !queues.contains(x)) else { return };
                let zero = cfg.qos.classes[ri].dscp.contains(&0);
                cfg.qos.classes[ri].dscp.retain(|d| *d != 0);
                cfg.qos.classes.push(TrafficClassConfig {
                    name: "general".into(),
                    dscp: if zero { vec![0] } else { vec![] },
                    priority: prio,
                    queue: None,
                    lossless: false,
                    scheduler: SchedulerKind::Dwrr,
                    weight,
                    carries: moved.clone(),
                    ecn: None,
                    ecn_per_speed: Default::default(),
                });
            }),
        };
        let keys = if job == tenant {
            vec![format!("[[qos.class]] name = \"{}\": carries, dscp", j.name)]
        } else {
            vec![format!("[[qos.class]] name = \"{}\": queue", t.name)]
        };
        (mechanism, keys, Some(cand))
    } else if t.scheduler == SchedulerKind::Strict && j.scheduler == SchedulerKind::Dwrr {
        let other = t.name.clone();
        let weight = j.weight;
        let cand = Candidate {
            change: format!("[[qos.class]] name = \"{other}\": scheduler = \"dwrr\", weight = {weight}"),
            scenario: None,
            flow_engine: false,
            apply: Box::new(move |cfg: &mut Config| {
                if let Some(cl) = cfg.qos.classes.iter_mut().find(|c| c.name == other) {
                    cl.scheduler = SchedulerKind::Dwrr;
                    cl.weight = weight;
                }
            }),
        };
        (
            format!(
                "the tenant's class `{}` is strict priority above the job's DWRR class `{}`: the general traffic is served first whenever it has a packet, and the job gets what it leaves",
                t.name, j.name
            ),
            vec![format!("[[qos.class]] name = \"{}\": scheduler, weight", t.name)],
            Some(cand),
        )
    } else {
        evidence.push(format!(
            "{:.0} PFC frames, {:.0} packets ECN-marked, {:.0} CNPs sent, deepest queue {:.0} B",
            g("pfc_frames"),
            g("ecn_marked"),
            g("cnp_sent"),
            g("max_queue_bytes")
        ));
        let how = if g("pfc_frames") > 0.0 {
            "PFC paused the job's lossless class, and a paused queue gives its DWRR turns away"
        } else if g("cnp_sent") > 0.0 {
            "DCQCN cut the job's rate below its share: its queue at the shared egress, drained at only its DWRR share, is marked, and the CNPs slow it further"
        } else {
            "the scheduler's share was not kept while the tenant sent"
        };
        (
            format!(
                "the job got less than the share its class `{}` is promised against `{}` (DWRR weights {} and {}): {how}",
                j.name, t.name, j.weight, t.weight
            ),
            vec![format!("[[qos.class]] name = \"{}\": weight", j.name)],
            None,
        )
    };
    (Cause { mechanism, evidence, keys }, cand.into_iter().collect())
}

/// The hosts' NIC profiles mix congestion control on and off (a firmware rollout that reset it,
/// a rack set up by hand: lint's NIC004): the cause of a held queue or of PFC braking, and the
/// fix that puts the profiles without it on the fleet's.
fn fleet_without_cc(
    m: &Model,
    hosts: &[rocelab_model::NodeId],
    evidence: &mut Vec<String>,
) -> Option<(Cause, Vec<Candidate>)> {
    // Profile name → its congestion control and hosts, in the hosts' order.
    let mut profiles: Vec<(String, CongestionControl, Vec<String>)> = vec![];
    for &h in hosts {
        let nic = m.nic_of(h);
        match profiles.iter_mut().find(|p| p.0 == nic.name) {
            Some(p) => p.2.push(m.node(h).name.clone()),
            None => profiles.push((nic.name.clone(), nic.congestion_control, vec![m.node(h).name.clone()])),
        }
    }
    let fleet = profiles
        .iter()
        .filter(|p| p.1 != CongestionControl::None)
        .max_by_key(|p| p.2.len())
        .map(|p| (p.0.clone(), p.1))?;
    let without: Vec<&(String, CongestionControl, Vec<String>)> =
        profiles.iter().filter(|p| p.1 == CongestionControl::None).collect();
    if without.is_empty() {
        return None;
    }
    let cc = spelled(&fleet.1);
    let named: Vec<String> = without
        .iter()
        .map(|p| {
            let shown: Vec<&str> = p.2.iter().take(4).map(String::as_str).collect();
            format!(
                "`{}` on {} host{} ({}{})",
                p.0,
                p.2.len(),
                if p.2.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if p.2.len() > 4 { ", …" } else { "" }
            )
        })
        .collect();
    let total: usize = without.iter().map(|p| p.2.len()).sum();
    evidence.push(format!(
        "{total} of {} hosts run NICs without congestion control ({}); the rest run {cc} (profile `{}`)",
        hosts.len(),
        named.join(", "),
        fleet.0
    ));
    let cause = Cause {
        mechanism: format!(
            "NICs without congestion control in a {cc} fleet: ECN marks and CNPs slow only the {cc} senders, the NICs that never back off keep sending at line rate, and the queue they feed stays deep (or PFC does the braking) whatever the ECN thresholds — the fleet's settings are heterogeneous (lint: NIC004)"
        ),
        evidence: std::mem::take(evidence),
        keys: without.iter().map(|p| profile_key(&p.0, "congestion_control")).collect(),
    };
    let names: Vec<String> = without.iter().map(|p| p.0.clone()).collect();
    let table =
        if fleet.0 == "default" { "[nic.dcqcn]".to_string() } else { format!("[nic_profiles.{}.dcqcn]", fleet.0) };
    let change = names
        .iter()
        .map(|n| format!("{} = \"{cc}\" with the fleet's {table}", profile_key(n, "congestion_control")))
        .collect::<Vec<_>>();
    let (want, from) = (fleet.1, fleet.0.clone());
    let cand = Candidate {
        change: format!("{}   # the fleet's congestion control on every NIC", change.join("; ")),
        scenario: None,
        flow_engine: false,
        apply: Box::new(move |cfg: &mut Config| {
            // The profiles are tables of their own (no key inherits `[nic]`'s).
            let dcqcn = cfg.nic_profiles.get(&from).map_or_else(|| cfg.nic.dcqcn.clone(), |p| p.dcqcn.clone());
            for n in &names {
                let p = match cfg.nic_profiles.get_mut(n) {
                    Some(p) => p,
                    None => &mut cfg.nic,
                };
                p.congestion_control = Some(want);
                p.dcqcn = dcqcn.clone();
            }
        }),
    };
    Some((cause, vec![cand]))
}

/// A fabric-file value (a traffic kind, a congestion control) as the file spells it.
fn spelled<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A NIC profile's key as the fabric file writes it: `[nic]` for the default profile.
fn profile_key(profile: &str, key: &str) -> String {
    if profile == "default" {
        format!("[nic] {key}")
    } else {
        format!("[nic_profiles.{profile}] {key}")
    }
}

/// A rebooting switch that is the only path between the leaves it joins: while it is down the
/// flows between them have no route, their QPs retry into nothing and give up, and everything
/// sent toward the other side is lost at the leaves. The fix is a second path: one more spine.
fn partitioned(m: &Model, r: &ScenarioResult, mut evidence: Vec<String>) -> (Cause, Vec<Candidate>) {
    let g = |k: &str| r.metrics.get(k).copied().flatten().unwrap_or(0.0);
    let sw = r.params.get("switch").and_then(|v| v.as_str()).unwrap_or("the switch").to_string();
    let mode = r.params.get("mode").and_then(|v| v.as_str()).unwrap_or("cold").to_string();
    evidence.push(format!(
        "`{sw}` carried {:.1} Gb/s before its {mode} reboot, the other spines {:.1} Gb/s during it; {:.0} flows moved nothing after the strike, {:.0} QPs gave up {:.1} s after their last acknowledgement (the transport's retries), {:.0} packets lost over the {:.0} s outage (computed from the settled window after the strike)",
        g("rebooted_gbps_before"),
        g("other_spines_gbps_during"),
        g("stalled_flows"),
        g("qps_failed_in_outage"),
        g("stalled_give_up_us") * 1e-6,
        g("outage_lost_packets"),
        g("outage_us") * 1e-6
    ));
    let mechanism = format!(
        "no redundant path: `{sw}` is the only way between the leaves it joins, so while it reboots the flows between them have no route, their QPs retry into nothing and fail, and what the hosts send toward the other side is lost at the leaves"
    );
    let Some(ls) = &m.config.topology.leaf_spine else {
        let keys = vec!["[topology] a second path between the switches it joins".into()];
        return (Cause { mechanism, evidence, keys }, vec![]);
    };
    let spines = ls.spines + 1;
    let uplinks = ls.uplinks_per_leaf.map(|u| u / ls.spines.max(1) * spines);
    let cand = Candidate {
        change: format!(
            "[topology.leaf_spine] spines = {spines}{}   # a second path around a rebooting spine",
            uplinks.map_or(String::new(), |u| format!(", uplinks_per_leaf = {u}"))
        ),
        scenario: None,
        flow_engine: false,
        apply: Box::new(move |cfg: &mut Config| {
            if let Some(ls) = &mut cfg.topology.leaf_spine {
                ls.spines = spines;
                ls.uplinks_per_leaf = uplinks;
            }
        }),
    };
    let keys = vec!["[topology.leaf_spine] spines".into()];
    (Cause { mechanism, evidence, keys }, vec![cand])
}
