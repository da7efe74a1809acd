//! `routing-change`: the ECMP hash or the routes change under load (parameters:
//! `rocelab_model::scenario::routing_change`).

use super::{under_load_figures, Kind};
use crate::check::*;
use crate::edges::EdgePlan;
use crate::evaluate::{ecmp_imbalance, Eval};
use crate::setup::{link, link_name, probe_before, under_load, under_load_keys, Ctx, Setup};
use rocelab_model::config::HashField;
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::routing_change::{Params, RoutingChangeKind, AT_DIVISOR};
use rocelab_model::{Diagnostic, SimTime};
use rocelab_sim::engine::FaultAction;
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let m = cx.m;
        let (mut s, at) = under_load(cx, under_load_keys!(self, AT_DIVISOR))?;
        let change = match self.change.unwrap_or_default() {
            RoutingChangeKind::HashSeed => {
                let seed = self.seed.unwrap_or(m.config.routing.ecmp_seed.wrapping_add(1));
                s.param("change", json!("hash-seed"));
                s.param("seed", json!(seed));
                FaultAction::Reseed { switch: None, seed }
            }
            RoutingChangeKind::HashFields => {
                // The source port leaves the hash.
                s.param("change", json!("hash-fields"));
                FaultAction::hash_fields(&[HashField::SrcIp, HashField::DstIp, HashField::Protocol, HashField::DstPort])
            }
            RoutingChangeKind::RouteWithdraw => {
                let p = link(cx, &self.a, &self.b, &probe_before(cx, &s, at))?;
                s.marks.port = Some(p);
                s.param("change", json!("route-withdraw"));
                s.param("link", json!(link_name(m, p)));
                FaultAction::Route { ports: (p.0, m.port(p).peer.0), withdrawn: true }
            }
        };
        // For good: the change, then until the fabric has settled on it.
        s.edge = Some(EdgePlan {
            strike: vec![(SimTime::ZERO, change)],
            cycles: 1,
            strike_is: "the routing changes",
            ..EdgePlan::default()
        });
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        under_load_figures(e);
        let (at, now) = (e.s.marks.at, e.o.snap.now);
        // The settled windows before and after the change (run in edges); else the half
        // before it and the last three quarters after.
        let win = |w: Option<&crate::steady::Steady>| {
            w.map(|w| (SimTime::from_secs_f64(w.from_us * 1e-6), SimTime::from_secs_f64(w.to_us * 1e-6)))
        };
        let (b0, b1) = e.o.settled.and_then(|(b, _)| win(b)).unwrap_or((SimTime(at.0 / 2), at));
        let (a0, a1) =
            e.o.settled.and_then(|(_, a)| win(a)).unwrap_or((at + SimTime(now.0.saturating_sub(at.0) / 4), now));
        let before = ecmp_imbalance(e.m, e.o.series, b0, b1);
        let after = ecmp_imbalance(e.m, e.o.series, a0, a1);
        e.put("ecmp_imbalance_before", before);
        e.put("ecmp_imbalance_after", after);
        match (before, after) {
            (Some(b), Some(a)) => Some(a - b),
            _ => None,
        }
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "routing-change.lossless-drops", kind: ScenarioKind::RoutingChange, figure: Figure::Metric("dropped_packets"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: "a hash or route change moves flows; nothing in flight may be lost" },
    CheckDef { name: "routing-change.ecmp-imbalance", kind: ScenarioKind::RoutingChange, figure: Figure::Headline, cmp: Cmp::AtMost, limit: None, unit: "change of (max / mean uplink bytes − 1)", why: "ECMP imbalance after the change minus before (max / mean uplink bytes − 1)" },
];
