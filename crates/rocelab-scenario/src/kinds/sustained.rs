//! `sustained`: every host at line rate, a permutation or all-to-all (parameters:
//! `rocelab_model::scenario::sustained`).

use super::Kind;
use crate::check::*;
use crate::evaluate::Eval;
use crate::setup::{background, Ctx, Setup};
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::sustained::{Params, SustainedPattern};
use rocelab_model::Diagnostic;
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn steady(&self) -> bool {
        true
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        // The steady runner sets the horizon as the duration; beside a collective, one window.
        let dur = cx.duration(self.duration_us, rocelab_model::scenario::STEADY_WINDOW_US as u64)?;
        let load = cx.load(self.load)?;
        let pattern = self.pattern.unwrap_or_default();
        let hosts = cx.scale.hosts.clone();
        let mut s = Setup::new(Some(dur), dur);
        s.msgs = background(cx, pattern, &hosts, dur, load);
        s.marks.senders = hosts;
        s.param("pattern", json!(if pattern == SustainedPattern::Permutation { "permutation" } else { "all-to-all" }));
        s.param("load", json!(load));
        s.param("duration_us", json!(dur.as_us_f64()));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let ideal = e.s.marks.senders.len() as f64 * e.cx.scale.rate_bps * e.span() / 8.0;
        let bytes = e.flow_bytes(0..e.s.msgs.len());
        e.put("jain_fairness", Some(rocelab_sim::report::jain(&bytes)));
        let delivered = e.o.steady.map_or(e.o.snap.counters.payload_delivered_bytes as f64, |_| bytes.iter().sum());
        Some(delivered / ideal)
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "sustained.lossless-drops", kind: ScenarioKind::Sustained, figure: Figure::Metric("dropped_packets"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: LOSSLESS },
    CheckDef { name: "sustained.no-pause-storm", kind: ScenarioKind::Sustained, figure: Figure::Metric("pfc_storms"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "watchdog storm events", why: NO_STORM },
    CheckDef { name: "sustained.paused-share", kind: ScenarioKind::Sustained, figure: Figure::MaxPausedShare, cmp: Cmp::AtMost, limit: Some(0.05), unit: "paused time / time judged (the worst port and priority)", why: PAUSED },
    CheckDef { name: "sustained.p99-queueing-delay", kind: ScenarioKind::Sustained, figure: Figure::QueueDelayP99Us, cmp: Cmp::AtMost, limit: None, unit: "µs", why: "the 99th percentile of every packet's time in switch queues, µs: what ECN thresholds keep short" },
    CheckDef { name: "sustained.cnp-delay", kind: ScenarioKind::Sustained, figure: Figure::CnpDelayP99Us, cmp: Cmp::AtMost, limit: Some(CNP_DELAY_US), unit: "µs per switch hop", why: CNP_DELAY },
    CheckDef { name: "sustained.goodput", kind: ScenarioKind::Sustained, figure: Figure::Headline, cmp: Cmp::AtLeast, limit: None, unit: "payload delivered / (senders × line rate × time)", why: "payload delivered against the senders' line rate; bounded by the fabric's oversubscription, so reported, not judged" },
    CheckDef { name: "sustained.fairness", kind: ScenarioKind::Sustained, figure: Figure::Metric("jain_fairness"), cmp: Cmp::AtLeast, limit: None, unit: "Jain index over the flows (1 = equal)", why: "Jain's fairness index over the flows (Jain, Chiu and Hawe, DEC-TR-301, 1984); below 1 by design where some flows cross an oversubscribed tier and others do not" },
];
