//! `incast`: N senders to one receiver at once (parameters: `rocelab_model::scenario::incast`).

use super::Kind;
use crate::check::*;
use crate::evaluate::Eval;
use crate::setup::{msg, Ctx, Marks, Setup};
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::incast::{Params, FAN_IN, SIZE_BDPS, SIZE_MAX_BYTES, SIZE_MIN_BYTES};
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
        let size =
            cx.size("size_bytes", self.size_bytes, (SIZE_BDPS * sc.bdp_bytes).clamp(SIZE_MIN_BYTES, SIZE_MAX_BYTES))?;
        let jitter = match self.jitter_us {
            Some(0.0) | None => SimTime::ZERO,
            v => cx.time("jitter_us", v, SimTime::ZERO)?,
        };
        let senders = cx.after(dst, k);
        let ideal = SimTime::from_secs_f64(k as f64 * size as f64 * 8.0 / (cx.m.host_speed(dst).gbps() * 1e9));
        let mut s = Setup::new(None, ideal + ideal + jitter + sc.rtt);
        let mut rng = Rng::new(cx.seed, 0x696e_6361);
        for &h in &senders {
            let start = SimTime((rng.unit() * jitter.0 as f64) as u64);
            s.msgs.push(msg(h, dst, size, start));
        }
        s.marks = Marks { dst: Some(dst), senders, ideal, ..Marks::default() };
        s.param("fan_in", json!(k));
        s.param("size_bytes", json!(size));
        s.param("jitter_us", json!(jitter.as_us_f64()));
        s.param("dst", json!(cx.m.node(dst).name));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let snap = e.o.snap;
        let ideal = e.s.marks.ideal;
        let fin = snap.flows.iter().map(|f| f.finish).collect::<Option<Vec<SimTime>>>();
        let first = snap.flows.iter().map(|f| f.start).min().unwrap_or(SimTime::ZERO);
        let completion = fin.and_then(|v| v.into_iter().max()).map(|t| t.saturating_sub(first));
        e.put("ideal_us", Some(ideal.as_us_f64()));
        e.put("completion_us", completion.map(|t| t.as_us_f64()));
        completion.map(|t| t.0 as f64 / ideal.0.max(1) as f64)
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "incast.completion", kind: ScenarioKind::Incast, figure: Figure::Headline, cmp: Cmp::AtMost, limit: Some(1.25), unit: "completion time / (N × size / receiver line rate)", why: "an N:1 incast cannot finish before N·size / the receiver's line rate; 25 % above it allows for headers (2 % at MTU 4096) and DCQCN's convergence" },
    CheckDef { name: "incast.lossless-drops", kind: ScenarioKind::Incast, figure: Figure::Metric("dropped_packets"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: LOSSLESS },
];
