//! `microburst`: synchronized on/off bursts into one receiver (parameters:
//! `rocelab_model::scenario::microburst`).

use super::Kind;
use crate::check::*;
use crate::evaluate::{mean, Eval};
use crate::setup::{err, msg, Ctx, Marks, Setup};
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::microburst::*;
use rocelab_model::{Diagnostic, SimTime};
use rocelab_sim::rng::Rng;
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let sc = &cx.scale;
        let dst = cx.dst(&self.dst)?;
        let k = cx.fan_in(self.fan_in, FAN_IN as usize, 1)?;
        let burst = cx.size(
            "burst_bytes",
            self.burst_bytes,
            (BURST_BDPS * sc.bdp_bytes).clamp(BURST_MIN_BYTES, BURST_MAX_BYTES),
        )?;
        let duty = cx.fraction("duty_cycle", self.duty_cycle, DUTY_CYCLE, false)?;
        let on = sc.time_for(k as u64 * burst);
        let period = cx.time("period_us", self.period_us, SimTime((on.0 as f64 / duty) as u64))?;
        let dur = cx.time("duration_us", self.duration_us, SimTime(period.0 * PERIODS))?;
        let bursts = dur.0.div_ceil(period.0.max(1)).max(1);
        if bursts * k as u64 > MAX_MESSAGES {
            return Err(err(
                &cx.path,
                "period_us",
                format!("{bursts} bursts of {k} senders"),
                "use fewer bursts (a longer period or a shorter duration)",
            ));
        }
        let jitter = match self.jitter_us {
            Some(0.0) | None => SimTime::ZERO,
            v => cx.time("jitter_us", v, SimTime::ZERO)?,
        };
        let senders = cx.after(dst, k);
        let mut s = Setup::new(None, dur + period);
        let mut rng = Rng::new(cx.seed, 0x6d62_7572);
        for b in 0..bursts {
            for &h in &senders {
                let start = SimTime(b * period.0 + (rng.unit() * jitter.0 as f64) as u64);
                s.msgs.push(msg(h, dst, burst, start));
            }
        }
        s.marks = Marks { dst: Some(dst), senders, ..Marks::default() };
        s.param("fan_in", json!(k));
        s.param("burst_bytes", json!(burst));
        s.param("duty_cycle", json!(duty));
        s.param("period_us", json!(period.as_us_f64()));
        s.param("duration_us", json!(dur.as_us_f64()));
        s.param("bursts", json!(bursts));
        s.param("dst", json!(cx.m.node(dst).name));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let snap = e.o.snap;
        let fcts: Vec<f64> =
            snap.flows.iter().filter_map(|f| f.finish.map(|x| x.saturating_sub(f.start).as_us_f64())).collect();
        e.put("burst_fct_mean_us", mean(&fcts));
        e.put("bursts_completed", Some(fcts.len() as f64));
        Some(snap.counters.pfc_frames_sent as f64)
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "microburst.lossless-drops", kind: ScenarioKind::Microburst, figure: Figure::Metric("dropped_packets"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: LOSSLESS },
    CheckDef { name: "microburst.no-pause-storm", kind: ScenarioKind::Microburst, figure: Figure::Metric("pfc_storms"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "watchdog storm events", why: NO_STORM },
    CheckDef { name: "microburst.paused-share", kind: ScenarioKind::Microburst, figure: Figure::MaxPausedShare, cmp: Cmp::AtMost, limit: None, unit: "paused time / time judged (the worst port and priority)", why: "the largest share of the run a port and priority spent paused: bursts are expected to pause" },
    CheckDef { name: "microburst.pauses", kind: ScenarioKind::Microburst, figure: Figure::Headline, cmp: Cmp::AtMost, limit: None, unit: "PFC frames", why: "PFC frames the bursts cause; fewer with ECN and DCQCN acting first" },
];
