//! `link-flap`: a fabric link going down and up under load (parameters:
//! `rocelab_model::scenario::link_flap`).

use super::{under_load_figures, Kind};
use crate::check::*;
use crate::edges::EdgePlan;
use crate::evaluate::Eval;
use crate::setup::{err, link, link_fault, link_name, probe_before, under_load, under_load_keys, Ctx, Setup};
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::link_flap::{Params, AT_DIVISOR, COUNT, MAX_COUNT, PERIOD_US};
use rocelab_model::{Diagnostic, SimTime};
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (mut s, at) = under_load(cx, under_load_keys!(self, AT_DIVISOR))?;
        let p = link(cx, &self.a, &self.b, &probe_before(cx, &s, at))?;
        let count = match self.count {
            None => COUNT,
            Some(k) if (1..=MAX_COUNT).contains(&k) => k,
            Some(k) => return Err(err(&cx.path, "count", format!("count = {k}"), &format!("use 1 to {MAX_COUNT}"))),
        };
        let period = cx.time("period_us", self.period_us, SimTime::from_secs_f64(PERIOD_US * 1e-6))?;
        // Each cycle: down for its first half, up for the second; the cycles are alike, so a
        // long period runs one cycle's edges and counts its losses `count` times.
        s.edge = Some(EdgePlan {
            strike: vec![(SimTime::ZERO, link_fault(cx.m, p, SimTime::ZERO, false).action)],
            back: vec![(SimTime::ZERO, link_fault(cx.m, p, SimTime::ZERO, true).action)],
            outage: Some(SimTime(period.0 / 2)),
            cycles: count,
            period,
            headline_sums: true,
            strike_is: "the link goes down",
            back_is: "the link comes back",
            ..EdgePlan::default()
        });
        s.marks.port = Some(p);
        s.param("link", json!(link_name(cx.m, p)));
        s.param("count", json!(count));
        s.param("period_us", json!(period.as_us_f64()));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        under_load_figures(e);
        let at = e.s.marks.at;
        // The lowest goodput of a sampling interval after the first fault.
        let dip =
            e.o.series
                .samples
                .windows(2)
                .filter(|w| w[0].time >= at)
                .map(|w| {
                    (w[1].payload_delivered - w[0].payload_delivered) as f64 * 8.0
                        / ((w[1].time.0 - w[0].time.0).max(1) as f64 * 1e-12)
                })
                .fold(f64::INFINITY, f64::min);
        e.put("goodput_min_after_fault_gbps", dip.is_finite().then_some(dip / 1e9));
        e.mt.get("packets_lost_link_down").copied().flatten()
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "link-flap.drops-outside-the-link", kind: ScenarioKind::LinkFlap, figure: Figure::Difference("dropped_packets", "headline"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: "a flapping link loses what was on it each time it goes down, nothing else" },
];
