//! `sustained`: every host at line rate, a permutation or all-to-all (parameters:
//! `rocelab_model::scenario::sustained`).

use super::Kind;
use crate::evaluate::Eval;
use crate::setup::{background, Ctx, Setup};
use rocelab_model::scenario::sustained::{Params, SustainedPattern};
use rocelab_model::Diagnostic;
use serde_json::json;

impl Kind for Params {
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
