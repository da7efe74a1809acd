//! `hotspot`: local congestion on one receiver, one uplink, or on the path CNPs take back
//! (parameters: `rocelab_model::scenario::hotspot`).

use super::Kind;
use crate::check::*;
use crate::evaluate::*;
use crate::fabric;
use crate::setup::*;
use rocelab_model::config::ScenarioKind;
use rocelab_model::config::SustainedPattern;
use rocelab_model::scenario::hotspot::*;
use rocelab_model::{Diagnostic, NodeId, PortId, SimTime};
use rocelab_sim::engine::{Fault, FaultAction};
use rocelab_sim::rng::Rng;
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn steady(&self) -> bool {
        true
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let m = cx.m;
        let hosts = cx.scale.hosts.clone();
        let n = hosts.len();
        let dur = cx.duration(self.duration_us, rocelab_model::scenario::STEADY_WINDOW_US as u64)?;
        let load = cx.load(self.load)?;
        let target = self.target.unwrap_or_default();
        let mut s = Setup::new(Some(dur), dur);
        s.param("duration_us", json!(dur.as_us_f64()));
        s.param("load", json!(load));
        let mut rng = Rng::new(cx.seed, 0x686f_7473);
        match target {
            HotspotTarget::Receiver => {
                if n < 3 {
                    return Err(err(
                        &cx.path,
                        "target",
                        "a receiver hotspot needs 3 hosts".into(),
                        "use target = \"uplink\"",
                    ));
                }
                let dst = cx.dst(&self.dst)?;
                let k = cx.fan_in(self.fan_in, FAN_IN as usize, 2)?;
                let senders = cx.after(dst, k);
                for &h in &senders {
                    s.msgs.extend(stream(cx, h, dst, dur, load, 1, &mut rng));
                }
                let hot = s.msgs.len();
                let victims: Vec<NodeId> =
                    hosts.iter().copied().filter(|h| *h != dst && !senders.contains(h)).collect();
                if victims.len() >= 2 {
                    s.msgs.extend(background(cx, SustainedPattern::Permutation, &victims, dur, load));
                }
                let port = m.port(m.node(dst).first_port_id()).peer;
                s.marks = Marks {
                    dst: Some(dst),
                    senders,
                    others: victims,
                    port: Some(port),
                    flows_of_others: (hot..s.msgs.len()).collect(),
                    ..Marks::default()
                };
                s.param("target", json!("receiver"));
                s.param("fan_in", json!(k));
                s.param("dst", json!(m.node(dst).name));
            }
            HotspotTarget::Uplink => {
                let leaf = fabric::leaf_of(m, hosts[0]);
                let ups: Vec<PortId> =
                    fabric::spine_uplinks(m).into_iter().filter(|p| m.port(*p).node == leaf).collect();
                if ups.is_empty() {
                    return Err(err(
                        &cx.path,
                        "target",
                        "the first host's leaf has no spine uplinks".into(),
                        "use target = \"receiver\"",
                    ));
                }
                for &p in &ups[1..] {
                    s.faults.push(Fault {
                        at: SimTime::ZERO,
                        action: FaultAction::Route { ports: (p.0, m.port(p).peer.0), withdrawn: true },
                    });
                }
                let local: Vec<NodeId> = hosts.iter().copied().filter(|h| fabric::leaf_of(m, *h) == leaf).collect();
                let remote: Vec<NodeId> = hosts.iter().copied().filter(|h| fabric::leaf_of(m, *h) != leaf).collect();
                if remote.is_empty() {
                    return Err(err(
                        &cx.path,
                        "hosts",
                        "every host is on one leaf".into(),
                        "include hosts of another leaf",
                    ));
                }
                for (i, &h) in local.iter().enumerate() {
                    s.msgs.extend(stream(cx, h, remote[i % remote.len()], dur, load, 1, &mut rng));
                }
                s.marks = Marks { senders: local, port: Some(ups[0]), ..Marks::default() };
                s.param("target", json!("uplink"));
                s.param("uplink", json!(m.port_name(ups[0])));
            }
            HotspotTarget::CnpPath => {
                // `a` streams into the hot receiver `dst` (k senders beside it there),
                // while k others stream into `a`: the receiver's CNPs for `a`'s flow
                // queue at the egress toward `a`, behind that incast's data.
                let k = cx.fan_in(self.fan_in, CNP_PATH_FAN_IN as usize, 0)?.min((n.saturating_sub(2)) / 2);
                if k == 0 {
                    return Err(err(
                        &cx.path,
                        "target",
                        "a CNP-path hotspot needs 4 hosts".into(),
                        "use target = \"receiver\"",
                    ));
                }
                let dst = cx.dst(&self.dst)?;
                let others = cx.after(dst, 2 * k + 1);
                let a = others[0];
                let (into_a, into_dst) = others[1..].split_at(k);
                s.msgs.extend(stream(cx, a, dst, dur, load, 1, &mut rng));
                for &h in into_dst {
                    s.msgs.extend(stream(cx, h, dst, dur, load, 1, &mut rng));
                }
                let hot = s.msgs.len();
                for &h in into_a {
                    s.msgs.extend(stream(cx, h, a, dur, load, 1, &mut rng));
                }
                let mut senders = vec![a];
                senders.extend_from_slice(into_dst);
                s.marks = Marks {
                    dst: Some(dst),
                    senders,
                    others: into_a.to_vec(),
                    port: Some(m.port(m.node(dst).first_port_id()).peer),
                    flows_of_others: (hot..s.msgs.len()).collect(),
                    ..Marks::default()
                };
                s.param("target", json!("cnp-path"));
                s.param("fan_in", json!(k));
                s.param("dst", json!(m.node(dst).name));
                s.param("cnp_sender", json!(m.node(a).name));
                s.param("cnp_path_egress", json!(m.port_name(m.port(m.node(a).first_port_id()).peer)));
            }
        }
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let (cx, s, snap) = (e.cx, e.s, e.o.snap);
        let k = &s.marks;
        let rate = cx.scale.rate_bps;

        let dur = e.span();
        if !k.others.is_empty() {
            let v = e.flow_bytes(k.flows_of_others.iter().copied());
            let frac = v.iter().sum::<f64>() * 8.0 / (v.len().max(1) as f64 * rate * dur);
            e.put("victim_goodput_fraction", Some(frac));
        }
        // The hot messages come first, the victims' after them.
        let hot = e.flow_bytes(0..k.flows_of_others.first().copied().unwrap_or(s.msgs.len()));
        e.put("hot_goodput_fraction", Some(hot.iter().sum::<f64>() * 8.0 / (rate * dur)));
        // The queue the load holds once settled, in time: the judged window's deepest
        // time-averaged switch queue (the hot port's, bar a deeper one elsewhere), drained at
        // the hosts' line rate. (The peak below includes the incast's first round trip, before
        // any sender could have heard of it.)
        let held = e.o.steady.map(|w| w.deepest_queue_mean_bytes * 8.0 / rate * 1e6);
        e.put("held_queue_us", held);
        k.port.map(|p| snap.ports[p.idx()].queue_peak_bytes.iter().copied().max().unwrap_or(0) as f64)
    }
}

/// The most the queue a hotspot holds once settled may take to drain, µs: ten times the
/// 20 µs round trip ECN thresholds are sized against (lint's ECN rules, after Huawei's RoCE
/// guidance). DCQCN holds a congested queue where ECN starts marking, so a ramp sized to the
/// port's bandwidth-delay product holds it at a few round trips; thresholds far above the
/// BDP, or above the buffer's XOFF point, hold it at Kmin, or leave it to PFC.
pub const HOT_QUEUE_US: f64 = 200.0;

const HOT_QUEUE: &str = "the deepest time-averaged switch queue of the judged window, in µs to drain at line rate: DCQCN holds a congested queue where ECN starts marking, so with thresholds sized to the port's bandwidth-delay product it sits at a few round trips, and every packet through the port waits that long. 200 µs is ten times the 20 µs round trip ECN thresholds are sized against (lint's ECN rules): past it the thresholds sit far above the BDP or above the buffer's XOFF point (ECN marks late, or PFC brakes first)";

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "hotspot.lossless-drops", kind: ScenarioKind::Hotspot, figure: Figure::Metric("dropped_packets"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: LOSSLESS },
    CheckDef { name: "hotspot.cnp-delay", kind: ScenarioKind::Hotspot, figure: Figure::CnpDelayP99Us, cmp: Cmp::AtMost, limit: Some(CNP_DELAY_US), unit: "µs per switch hop", why: CNP_PATH },
    CheckDef { name: "hotspot.queue-delay", kind: ScenarioKind::Hotspot, figure: Figure::Metric("held_queue_us"), cmp: Cmp::AtMost, limit: Some(HOT_QUEUE_US), unit: "µs to drain the deepest time-averaged queue of the judged window at line rate", why: HOT_QUEUE },
    CheckDef { name: "hotspot.queue", kind: ScenarioKind::Hotspot, figure: Figure::Headline, cmp: Cmp::AtMost, limit: None, unit: "B", why: "deepest queue at the hot port, bytes" },
];
