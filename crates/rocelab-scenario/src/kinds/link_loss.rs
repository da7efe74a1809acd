//! `link-loss`: a fabric link lost for good under load (parameters:
//! `rocelab_model::scenario::link_loss`).

use super::{under_load_figures, Kind};
use crate::check::*;
use crate::edges::EdgePlan;
use crate::evaluate::Eval;
use crate::setup::{link, link_fault, link_name, probe_before, under_load, under_load_keys, Ctx, Setup};
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::link_loss::{Params, AT_DIVISOR};
use rocelab_model::{Diagnostic, SimTime};
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (mut s, at) = under_load(cx, under_load_keys!(self, AT_DIVISOR))?;
        let p = link(cx, &self.a, &self.b, &probe_before(cx, &s, at))?;
        // Lost for good: no return edge.
        s.edge = Some(EdgePlan {
            strike: vec![(SimTime::ZERO, link_fault(cx.m, p, SimTime::ZERO, false).action)],
            cycles: 1,
            strike_is: "the link goes down for good",
            ..EdgePlan::default()
        });
        s.marks.port = Some(p);
        s.param("link", json!(link_name(cx.m, p)));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        match under_load_figures(e) {
            (Some(b), Some(a)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "link-loss.drops-outside-the-link", kind: ScenarioKind::LinkLoss, figure: Figure::Difference("dropped_packets", "packets_lost_link_down"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: "losing a link loses what was on it; everything else must reroute without a drop" },
    CheckDef { name: "link-loss.recovery", kind: ScenarioKind::LinkLoss, figure: Figure::RecoveryUs, cmp: Cmp::AtMost, limit: Some(RECOVERY_US), unit: "µs", why: "µs from the loss until the fabric's goodput is back to 90 % of what it carries after it, at the telemetry's sampling resolution. Rerouting plus go-back-N after a NAK recovers within a few round trips; 1 ms catches a recovery that waits for the transport timeout (4.096 µs · 2^timeout: 4.3 s at NCCL_IB_TIMEOUT = 20) or never comes" },
    CheckDef { name: "link-loss.goodput-after", kind: ScenarioKind::LinkLoss, figure: Figure::Headline, cmp: Cmp::AtLeast, limit: None, unit: "goodput after the loss / before", why: "fabric goodput after the loss over before: the capacity the fabric keeps" },
];
