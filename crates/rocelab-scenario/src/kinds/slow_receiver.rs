//! `slow-receiver`: a host that stalls or drains slowly, and how far its pauses spread
//! (parameters: `rocelab_model::scenario::slow_receiver`).

use super::Kind;
use crate::check::*;
use crate::evaluate::*;
use crate::fabric;
use crate::setup::*;
use rocelab_model::config::ScenarioKind;
use rocelab_model::config::{PfcWatchdogConfig, WatchdogAction};
use rocelab_model::scenario::slow_receiver::*;
use rocelab_model::{Diagnostic, NodeId, SimTime};
use rocelab_sim::engine::{Fault, FaultAction};
use rocelab_sim::rng::Rng;
use rocelab_sim::stats::DropReason;
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (m, sc) = (cx.m, &cx.scale);
        let hosts = cx.scale.hosts.clone();
        // Long enough for a switch buffer to fill twice over at one line rate, so pauses
        // have the time to climb past the first hop.
        let fill = sc.time_for(2 * sc.buffer_bytes);
        let dur = cx.time(
            "duration_us",
            self.duration_us,
            (SimTime::from_us(AT_US) + fill).max(SimTime::from_us(MIN_DURATION_US)),
        )?;
        let load = cx.load(self.load)?;
        let dst = cx.dst(&self.dst)?;
        let k = cx.fan_in(self.fan_in, FAN_IN as usize, 1)?;
        let f = cx.fraction("drain_fraction", self.drain_fraction, 0.0, true)?;
        let at = cx.time("at_us", self.at_us, SimTime::from_us(AT_US).min(SimTime(dur.0 / AT_SHARE_DIVISOR)))?;
        let period = cx.time("period_us", self.period_us, SimTime::from_us(PERIOD_US))?;
        // The farthest hosts first: their pauses have the most hops to travel.
        let d = fabric::distances(m, dst);
        let mut cand: Vec<NodeId> = hosts.iter().copied().filter(|h| *h != dst).collect();
        cand.sort_by_key(|h| std::cmp::Reverse(d[h.idx()]));
        let senders: Vec<NodeId> = cand.into_iter().take(k).collect();
        let mut s = Setup::new(Some(dur), dur);
        let mut rng = Rng::new(cx.seed, 0x736c_6f77);
        for &h in &senders {
            s.msgs.extend(stream(cx, h, dst, dur, load, 1, &mut rng));
        }
        let stall = |at| Fault { at, action: FaultAction::Host { host: dst, stall: true } };
        let resume = |at| Fault { at, action: FaultAction::Host { host: dst, stall: false } };
        if f == 0.0 {
            s.faults.push(stall(at));
        } else if f < 1.0 {
            let mut t = at;
            let mut cycles = 0;
            while t < dur && cycles < MAX_CYCLES {
                s.faults.push(stall(t));
                s.faults.push(resume(t + SimTime(((1.0 - f) * period.0 as f64) as u64)));
                t += period;
                cycles += 1;
            }
        }
        match self.watchdog {
            Some(true) => {
                let det = cx.time(
                    "watchdog_detection_us",
                    self.watchdog_detection_us,
                    SimTime::from_us(WATCHDOG_DETECTION_US),
                )?;
                // Polled every tenth of it: below 1 µs the polls would swamp the run.
                if det < SimTime::from_us(1) {
                    return Err(err(
                        &cx.path,
                        "watchdog_detection_us",
                        format!("watchdog_detection_us = {} is too short", self.watchdog_detection_us.unwrap_or(0.0)),
                        "use 1 µs or more (SONiC's default is 200 ms)",
                    ));
                }
                let ms = det.as_secs_f64() * 1e3;
                s.watchdog = Some(PfcWatchdogConfig {
                    enabled: true,
                    detection_ms: ms,
                    restoration_ms: ms,
                    poll_ms: ms / 10.0,
                    action: WatchdogAction::Drop,
                });
                s.param("watchdog_detection_us", json!(det.as_us_f64()));
            }
            Some(false) => {
                s.watchdog = Some(PfcWatchdogConfig { enabled: false, ..m.config.qos.pfc_watchdog.clone() });
            }
            None => {}
        }
        let wd = s.watchdog.as_ref().unwrap_or(&m.config.qos.pfc_watchdog);
        s.param("watchdog", json!(wd.enabled));
        s.marks = Marks { at, dst: Some(dst), senders, ..Marks::default() };
        s.param("drain_fraction", json!(f));
        s.param("fan_in", json!(k));
        s.param("at_us", json!(at.as_us_f64()));
        s.param("duration_us", json!(dur.as_us_f64()));
        s.param("dst", json!(m.node(dst).name));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let (m, s, snap, series) = (e.m, e.s, e.o.snap, e.o.series);
        let c = &snap.counters;
        let k = &s.marks;

        let dst = k.dst.unwrap_or(NodeId(0));
        let d = fabric::distances(m, dst);
        let spread =
            snap.ports.iter().filter(|p| p.pfc_rx.iter().sum::<u64>() > 0).map(|p| d[p.node.idx()]).max().unwrap_or(0);
        let fired = series.samples.iter().find(|x| x.storms > 0).map(|x| x.time);
        e.put("watchdog_storms", Some(c.pfc_storms as f64));
        e.put("watchdog_fired_after_us", fired.map(|t| t.saturating_sub(k.at).as_us_f64()));
        // From the first pause of the port facing the slow host: the watchdog's own clock
        // (to within one sampling interval).
        e.put("first_pause_after_us", e.o.first_pause.map(|t| t.saturating_sub(k.at).as_us_f64()));
        e.put(
            "watchdog_fired_after_pause_us",
            fired.zip(e.o.first_pause).map(|(f, p)| f.saturating_sub(p).as_us_f64()),
        );
        e.put("watchdog_drops", Some(c.drops_by_reason[DropReason::Watchdog as usize] as f64));
        e.put("paused_ports", Some(snap.ports.iter().filter(|p| p.pfc_rx.iter().sum::<u64>() > 0).count() as f64));
        Some(spread as f64)
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "slow-receiver.lossless-drops", kind: ScenarioKind::SlowReceiver, figure: Figure::Difference("dropped_packets", "watchdog_drops"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: "a stalled receiver must not make the fabric drop, except what the PFC watchdog discards on purpose to break the storm" },
    CheckDef { name: "slow-receiver.pause-spread", kind: ScenarioKind::SlowReceiver, figure: Figure::Headline, cmp: Cmp::AtMost, limit: None, unit: "links from the slow host", why: "hops from the stalled host to the farthest paused node: how far a PFC storm spreads" },
];
