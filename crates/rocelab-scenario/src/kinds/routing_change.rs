//! `routing-change`: the ECMP hash or the routes change under load (parameters:
//! `rocelab_model::scenario::routing_change`).

use super::{under_load_figures, Kind};
use crate::check::*;
use crate::evaluate::{ecmp_imbalance, Eval};
use crate::setup::{link, link_name, probe_before, under_load, under_load_keys, Ctx, Setup};
use rocelab_model::config::ScenarioKind;
use rocelab_model::config::{FaultConfig, FaultKind, HashField};
use rocelab_model::scenario::routing_change::{Params, RoutingChangeKind, AT_DIVISOR};
use rocelab_model::{Diagnostic, SimTime};
use rocelab_sim::engine::{Fault, FaultAction};
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let m = cx.m;
        let (mut s, at) = under_load(cx, under_load_keys!(self, AT_DIVISOR))?;
        match self.change.unwrap_or_default() {
            RoutingChangeKind::HashSeed => {
                let seed = self.seed.unwrap_or(m.config.routing.ecmp_seed.wrapping_add(1));
                s.faults.push(Fault { at, action: FaultAction::Reseed { switch: None, seed } });
                s.param("change", json!("hash-seed"));
                s.param("seed", json!(seed));
            }
            RoutingChangeKind::HashFields => {
                // Only a `[[fault]]` table can name the hashed fields: the source port leaves.
                s.fault_tables.push(FaultConfig {
                    fields: Some(vec![HashField::SrcIp, HashField::DstIp, HashField::Protocol, HashField::DstPort]),
                    ..FaultConfig::new(FaultKind::EcmpHashFields, at.as_us_f64(), "*")
                });
                s.param("change", json!("hash-fields"));
            }
            RoutingChangeKind::RouteWithdraw => {
                let p = link(cx, &self.a, &self.b, &probe_before(cx, &s, at))?;
                s.faults
                    .push(Fault { at, action: FaultAction::Route { ports: (p.0, m.port(p).peer.0), withdrawn: true } });
                s.marks.port = Some(p);
                s.param("change", json!("route-withdraw"));
                s.param("link", json!(link_name(m, p)));
            }
        }
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        under_load_figures(e);
        let (at, now) = (e.s.marks.at, e.o.snap.now);
        let before = ecmp_imbalance(e.m, e.o.series, SimTime(at.0 / 2), at);
        let settle = at + SimTime(now.0.saturating_sub(at.0) / 4);
        let after = ecmp_imbalance(e.m, e.o.series, settle, now);
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
