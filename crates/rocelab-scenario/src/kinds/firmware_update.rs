//! `firmware-update`: a rolling NIC reset (parameters:
//! `rocelab_model::scenario::firmware_update`).
//!
//! Each reset host exchanges one message each way with a partner half the ring away; when
//! half of it is sent at line rate the host's NIC resets: its links go down for `down_us`
//! (3 s by default, the published timescale), its RDMA QPs are destroyed, and their
//! applications reconnect [`RECONNECT`] after the NIC is back and resend their first
//! unacknowledged work request (`rocelab_sim::engine::faults`). The next host resets once the
//! previous one has had time to recover. Only those messages run, so the seconds of outage are
//! simulated at packet level at no cost: while the QPs wait nothing moves, and the engine
//! jumps from event to event.

use super::Kind;
use crate::check::*;
use crate::evaluate::Eval;
use crate::setup::*;
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::firmware_update::*;
use rocelab_model::{Diagnostic, NodeId, SimTime};
use rocelab_sim::engine::{Fault, FaultAction, RECONNECT};
use rocelab_sim::stats::DropReason;
use serde_json::json;

/// Time left after a host's expected recovery before the next host resets.
const SETTLE: SimTime = SimTime(1_000_000_000);

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (m, sc) = (cx.m, &cx.scale);
        let hosts = &sc.hosts;
        let n = hosts.len();
        let count = match self.count {
            None => (COUNT as usize).min(n / 2).max(1),
            Some(c) if c >= 1 && c as usize <= n / 2 => c as usize,
            Some(c) => {
                return Err(err(
                    &cx.path,
                    "count",
                    format!("count = {c}, but {n} hosts can give at most {} reset hosts their own partner", n / 2),
                    "use a count from 1 to half the hosts",
                ))
            }
        };
        let down = cx.time("down_us", self.down_us, SimTime::from_secs_f64(DOWN_US * 1e-6))?;
        if self.load.is_some() {
            return beside_load(self, cx, count, down);
        }
        if self.duration_us.is_some() {
            return Err(err(
                &cx.path,
                "duration_us",
                "duration_us is the horizon of a reset beside a load".into(),
                "add `load = 1.0`, or remove duration_us: the messages alone run to completion",
            ));
        }
        let size = cx.size("size_bytes", self.size_bytes, SIZE_BYTES)?;
        // The reset when half the message is sent at line rate; the next host's messages
        // start once this one's have had the outage, the reconnection and the whole message
        // at line rate to finish.
        let half = sc.time_for(size / 2);
        let period = half + down + RECONNECT + sc.time_for(size) + SETTLE;
        let mut s = Setup::new(None, SimTime(period.0 * count as u64));
        let (mut reset, mut partners, mut at_us) = (vec![], vec![], vec![]);
        for (i, &h) in hosts.iter().enumerate().take(count) {
            let partner: NodeId = hosts[(i + n / 2) % n];
            let start = SimTime(period.0 * i as u64);
            s.msgs.push(msg(h, partner, size, start));
            s.msgs.push(msg(partner, h, size, start));
            let at = start + half;
            s.faults.push(Fault { at, action: FaultAction::Qps { host: h, up: false } });
            for p in m.node(h).ports() {
                s.faults.push(link_fault(m, p, at, false));
                s.faults.push(link_fault(m, p, at + down, true));
            }
            s.faults.push(Fault { at: at + down + RECONNECT, action: FaultAction::Qps { host: h, up: true } });
            reset.push(m.node(h).name.clone());
            partners.push(m.node(partner).name.clone());
            at_us.push(at.as_us_f64());
        }
        // (Faults at the same time keep this order: the QPs go with the NIC, then its links.)
        s.faults.sort_by_key(|f| f.at);
        s.marks.senders = hosts.iter().copied().take(count).collect();
        s.marks.at = SimTime::from_secs_f64(at_us[0] * 1e-6);
        s.param("count", json!(count));
        s.param("down_us", json!(down.as_us_f64()));
        s.param("reconnect_us", json!(RECONNECT.as_us_f64()));
        s.param("size_bytes", json!(size));
        s.param("reset_hosts", json!(reset));
        s.param("partners", json!(partners));
        s.param("reset_at_us", json!(at_us));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let (s, snap) = (e.s, e.o.snap);
        if e.o.settled.is_some() {
            // Beside a load: the losses here, the recovery from the edges (`edges`).
            let c = &snap.counters;
            e.put("packets_lost_link_down", Some(c.drops_by_reason[DropReason::LinkDown as usize] as f64));
            e.put("failed_qps", Some(snap.flows.iter().map(|f| f.failed_qps as f64).sum()));
            e.put("timeouts", Some(c.timeouts as f64));
            return None;
        }
        let sc = &e.cx.scale;
        let down = SimTime::from_secs_f64(s.params["down_us"].as_f64().unwrap_or(0.0) * 1e-6);
        let size = s.params["size_bytes"].as_u64().unwrap_or(0);
        let at: Vec<SimTime> = s.params["reset_at_us"]
            .as_array()
            .map(|v| v.iter().filter_map(|x| x.as_f64()).map(|u| SimTime::from_secs_f64(u * 1e-6)).collect())
            .unwrap_or_default();
        // Per interrupted message: the time past its application's reconnection beyond
        // moving the unsent half at line rate (the resent work request, headers, round trips);
        // and the rate it moved at after reconnecting.
        let (mut worst, mut rates, mut ideal) = (Some(SimTime::ZERO), vec![], SimTime::ZERO);
        let rest = sc.time_for(size - size / 2);
        // UET has no connection to set up again (its packet delivery contexts open with their
        // first packet, UEC 1.0): its messages resume on its own timer once the link is back.
        let uet = |i: usize| {
            s.marks.senders.get(i).is_some_and(|h| e.m.nic_of(*h).transport == rocelab_model::uet::Transport::Uet)
        };
        let reconnect = |i: usize| if uet(i) { SimTime::ZERO } else { RECONNECT };
        for (i, &t) in at.iter().enumerate() {
            let back = t + down + reconnect(i);
            for f in snap.flows.iter().skip(2 * i).take(2) {
                match f.finish {
                    Some(fin) if fin >= back && !f.failed => {
                        let past = fin.saturating_sub(back);
                        worst = worst.map(|w| w.max(past.saturating_sub(rest)));
                        rates.push((size - size / 2) as f64 * 8.0 / past.as_secs_f64().max(1e-12) / sc.rate_bps);
                        ideal = ideal.max(fin.saturating_sub(t));
                    }
                    _ => worst = None,
                }
            }
        }
        e.put("recovery_us", worst.map(|w| w.as_us_f64()));
        e.put("rate_after_reconnect", rates.iter().copied().reduce(f64::min));
        let failed = snap.flows.iter().map(|f| f.failed_qps as f64).sum();
        e.put("failed_qps", Some(failed));
        e.put("timeouts", Some(snap.counters.timeouts as f64));
        let lost = snap.counters.drops_by_reason[DropReason::LinkDown as usize] as f64;
        e.put("packets_lost_link_down", Some(lost));
        // The headline: from the reset to the last interrupted message's completion, over
        // the outage, the reconnection and the unsent half at line rate.
        (worst.is_some() && !at.is_empty()).then(|| ideal.0 as f64 / (down + reconnect(0) + rest).0.max(1) as f64)
    }
}

/// The reset beside a background permutation, in edges: the first reset host's NIC goes
/// down once the load has settled (its QPs destroyed, then its links), and the fabric
/// settles on what is left; the return edge starts from the outage in place and brings
/// the links and the reconnected QPs back together, the 10 ms reconnection computed
/// rather than simulated (nothing of the host's moves in it). The other resets are alike.
fn beside_load(p: &Params, cx: &Ctx, count: usize, down: SimTime) -> Result<Setup, Diagnostic> {
    let m = cx.m;
    let load = cx.load(p.load)?;
    let h = cx.scale.hosts[0];
    let mut s = Setup::new(None, SimTime::ZERO);
    let links: Vec<FaultAction> =
        m.node(h).ports().map(|p| FaultAction::Link { ports: (p.0, m.port(p).peer.0), up: false }).collect();
    let mut strike = vec![(SimTime::ZERO, FaultAction::Qps { host: h, up: false })];
    strike.extend(links.iter().map(|a| (SimTime::ZERO, *a)));
    let mut back: Vec<(SimTime, FaultAction)> = links
        .iter()
        .map(|a| match *a {
            FaultAction::Link { ports, .. } => (SimTime::ZERO, FaultAction::Link { ports, up: true }),
            other => (SimTime::ZERO, other),
        })
        .collect();
    back.push((SimTime::ZERO, FaultAction::Qps { host: h, up: true }));
    s.edge = Some(crate::edges::EdgePlan {
        strike,
        back,
        outage: Some(down),
        cycles: count as u32,
        watch: vec![h],
        wait: Some((RECONNECT, "the reconnection (RDMA CM, 10 ms) after the links are back")),
        strike_is: "the NIC resets (QPs destroyed, links down)",
        back_is: "the links are back and the QPs reconnect",
        ..Default::default()
    });
    s.marks.senders = vec![h];
    s.param("load", json!(load));
    s.param("count", json!(count));
    s.param("down_us", json!(down.as_us_f64()));
    s.param("reconnect_us", json!(RECONNECT.as_us_f64()));
    s.param("reset_hosts", json!([m.node(h).name.clone()]));
    Ok(s)
}

const RECOVERY: &str = "µs from an application's reconnection (the NIC back, then RDMA CM's connection setup, 10 ms) until its interrupted message completes, beyond moving the unsent half at line rate: the resent work request and a few round trips. Over 1 ms means the recovery waited for something else: a transport timeout (4.3 s at ack_timeout 20), a loss after the reconnection, a partner that never learned of the reset";

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "firmware-update.recovery", kind: ScenarioKind::FirmwareUpdate, figure: Figure::Metric("recovery_us"), cmp: Cmp::AtMost, limit: Some(RECOVERY_US), unit: "µs past the reconnection, beyond the unsent half at line rate (the worst message)", why: RECOVERY },
    CheckDef { name: "firmware-update.rate-after", kind: ScenarioKind::FirmwareUpdate, figure: Figure::Metric("rate_after_reconnect"), cmp: Cmp::AtLeast, limit: Some(0.8), unit: "the unsent half / (time from reconnection to completion × line rate), the slowest message", why: "a re-created QP starts its congestion control afresh at line rate; below 80 % of it (the busbw warning level) the resent message crawled back" },
    CheckDef { name: "firmware-update.lossless-drops", kind: ScenarioKind::FirmwareUpdate, figure: Figure::Difference("dropped_packets", "packets_lost_link_down"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped − packets lost to the links going down", why: "a resetting NIC loses what was on its links and what was on its way to it (dropped where its routes ended); nothing may be lost otherwise" },
    CheckDef { name: "firmware-update.outage", kind: ScenarioKind::FirmwareUpdate, figure: Figure::Headline, cmp: Cmp::AtMost, limit: None, unit: "reset to completion / (link down + reconnection + the unsent half at line rate)", why: "how long a message cut by the reset took against the least the outage allows, reported" },
];
