//! What each scenario kind does, one file per kind: its setup (traffic, faults, fleet
//! changes, the parameters as resolved) and its evaluation (headline and figures). Its typed
//! parameters and their defaults live in the file of the same name in
//! `rocelab-model/src/scenario/`, where the fabric file is loaded and checked (the module doc
//! there says why the kind is two files). Adding a kind: those two files, one line in the
//! model's `kinds!` and one line in [`of`] here.

use crate::check::CheckDef;
use crate::evaluate::Eval;
use crate::setup::{Ctx, Setup};
use rocelab_model::config::{ScenarioConfig, ScenarioKind, ScenarioParams};
use rocelab_model::Diagnostic;

mod collective;
mod firmware_mix;
mod firmware_update;
mod hotspot;
mod incast;
mod isolation;
mod link_flap;
mod link_loss;
mod microburst;
mod mixed;
mod routing_change;
mod slow_receiver;
mod sustained;
mod switch_reboot;

pub use collective::{collective_spec, ideal_time, non_blocking, IDEAL_METRIC};

/// One kind's behaviour, implemented on its typed parameters.
pub trait Kind {
    /// Judged on a converged window (`steady`): a load held indefinitely.
    fn steady(&self) -> bool {
        false
    }
    /// The run: messages, faults, fleet changes, the parameters as resolved.
    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic>;
    /// The headline; the kind's other figures go into `e`.
    fn evaluate(&self, e: &mut Eval) -> Option<f64>;
    /// The checklist's checks on the kind's figures.
    fn checks(&self) -> &'static [CheckDef];
}

/// The checklist's checks on `kind`.
pub fn checks(kind: ScenarioKind) -> &'static [CheckDef] {
    ScenarioConfig::bare(kind).params("scenario").map_or(&[], |p| of(&p).checks())
}

/// The behaviour of a scenario's kind. The registry: one line per kind.
pub fn of(p: &ScenarioParams) -> &dyn Kind {
    match p {
        ScenarioParams::Sustained(c) => c,
        ScenarioParams::Incast(c) => c,
        ScenarioParams::Microburst(c) => c,
        ScenarioParams::Hotspot(c) => c,
        ScenarioParams::SlowReceiver(c) => c,
        ScenarioParams::LinkLoss(c) => c,
        ScenarioParams::LinkFlap(c) => c,
        ScenarioParams::SwitchReboot(c) => c,
        ScenarioParams::RoutingChange(c) => c,
        ScenarioParams::FirmwareMix(c) => c,
        ScenarioParams::Collective(c) => c,
        ScenarioParams::Mixed(c) => c,
        ScenarioParams::Isolation(c) => c,
        ScenarioParams::FirmwareUpdate(c) => c,
    }
}

/// What the four kinds under load report beside their headline: goodput before the fault
/// (the half-interval before it) and after (the second half of what follows), packets lost
/// to links going down, transport timeouts. Returns goodput before and after, b/s.
pub(crate) fn under_load_figures(e: &mut Eval) -> (Option<f64>, Option<f64>) {
    use crate::evaluate::goodput;
    use rocelab_model::SimTime;
    let (series, now, at) = (e.o.series, e.o.snap.now, e.s.marks.at);
    let (before, after) = match e.o.settled {
        // Run in edges: the settled windows before the fault and after it.
        Some((b, a)) => (b.map(|w| w.goodput_gbps * 1e9), a.map(|w| w.goodput_gbps * 1e9)),
        None => {
            (goodput(series, SimTime(at.0 / 2), at), goodput(series, at + SimTime(now.0.saturating_sub(at.0) / 2), now))
        }
    };
    e.put("goodput_before_gbps", before.map(|g| g / 1e9));
    e.put("goodput_after_gbps", after.map(|g| g / 1e9));
    let c = &e.o.snap.counters;
    let lost = c.drops_by_reason[rocelab_sim::stats::DropReason::LinkDown as usize] as f64;
    e.put("packets_lost_link_down", Some(lost));
    e.put("timeouts", Some(c.timeouts as f64));
    (before, after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_s_checks_are_its_own_and_named_after_it() {
        for &k in ScenarioKind::ALL {
            let cs = checks(k);
            assert!(!cs.is_empty(), "{} has no check", k.name());
            for c in cs {
                assert_eq!(c.kind, k, "{}", c.name);
                assert!(c.name.starts_with(&format!("{}.", k.name())), "{}", c.name);
                assert!(!c.unit.is_empty() && !c.why.is_empty(), "{}", c.name);
            }
        }
    }
}
