//! `switch-reboot`: a spine rebooting under load (parameters:
//! `rocelab_model::scenario::switch_reboot`).

use super::{under_load_figures, Kind};
use crate::check::*;
use crate::edges::EdgePlan;
use crate::evaluate::{drops_at, tx_between, Eval};
use crate::fabric;
use crate::setup::{busiest, err, probe_before, under_load, under_load_keys, Ctx, Setup};
use rocelab_model::config::ScenarioKind;
use rocelab_model::events::{RebootMode, COLD_REBOOT_ROUTES_AFTER_US};
use rocelab_model::scenario::switch_reboot::{Params, AT_DIVISOR, BUSIEST_SPINE};
use rocelab_model::{Diagnostic, PortId, SimTime};
use rocelab_sim::engine::FaultAction;
use rocelab_sim::stats::DropReason;
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let m = cx.m;
        let (mut s, at) = under_load(cx, under_load_keys!(self, AT_DIVISOR))?;
        let a = self.a.as_deref().unwrap_or(BUSIEST_SPINE);
        let sw = if a == BUSIEST_SPINE {
            let sp = fabric::spines(m);
            busiest(cx, sp, "spines", &probe_before(cx, &s, at), |tx, n| fabric::node_tx(m, tx, n), |n| n.0)?
        } else {
            match m.node_by_name(a) {
                Some(n) if !m.node(n).is_host() => n,
                Some(_) => return Err(err(&cx.path, "a", format!("`{a}` is a host"), "a reboot takes a switch")),
                None => {
                    return Err(err(
                        &cx.path,
                        "a",
                        format!("no switch named `{a}`"),
                        "use a switch name, or \"busiest-spine\"",
                    ))
                }
            }
        };
        let mode = self.mode.unwrap_or_default();
        // The published data-plane outage of the mode (cold 150 s, warm 1 s).
        let down = cx.time("down_us", self.down_us, SimTime::from_secs_f64(mode.default_outage_us() * 1e-6))?;
        let mut plan = EdgePlan {
            outage: Some(down),
            cycles: 1,
            headline_sums: true,
            strike_is: "the switch goes down",
            back_is: "the switch returns",
            ..EdgePlan::default()
        };
        if mode == RebootMode::Warm {
            plan.strike.push((SimTime::ZERO, FaultAction::Freeze { switch: sw, frozen: true }));
            plan.back.push((SimTime::ZERO, FaultAction::Freeze { switch: sw, frozen: false }));
        } else {
            // Every port goes down; the host links come back with the ports, the links to
            // other switches once the switch advertises its routes (`[[fault]]`'s default).
            let routes_after = SimTime::from_secs_f64(COLD_REBOOT_ROUTES_AFTER_US * 1e-6);
            for p in m.node(sw).ports() {
                let ports = (p.0, m.port(p).peer.0);
                let fabric = !m.node(m.port(m.port(p).peer).node).is_host();
                plan.strike.push((SimTime::ZERO, FaultAction::Link { ports, up: false }));
                let up = if fabric { routes_after } else { SimTime::ZERO };
                plan.back.push((up, FaultAction::Link { ports, up: true }));
            }
        }
        plan.inside = m.node(sw).ports().flat_map(|p| [p, m.port(p).peer]).collect();
        s.edge = Some(plan);
        s.param("mode", json!(mode.name()));
        s.marks.switch = Some(sw);
        s.param("switch", json!(m.node(sw).name));
        s.param("down_us", json!(down.as_us_f64()));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        under_load_figures(e);
        let (m, s, snap, series) = (e.m, e.s, e.o.snap, e.o.series);
        let (at, now) = (s.marks.at, snap.now);
        let sw = s.marks.switch?;
        let own: Vec<PortId> = m.node(sw).ports().flat_map(|p| [p, m.port(p).peer]).collect();
        let inside: u64 = own.iter().map(|p| drops_at(snap, *p, Some(DropReason::LinkDown))).sum();
        let all: u64 = (0..snap.ports.len()).map(|i| drops_at(snap, PortId(i as u32), None)).sum();
        let inside_all: u64 = own.iter().map(|p| drops_at(snap, *p, None)).sum();
        e.put("packets_lost_elsewhere", Some((all - inside_all) as f64));
        let others: Vec<PortId> =
            fabric::spines(m).into_iter().filter(|n| *n != sw).flat_map(|n| m.node(n).ports()).collect();
        let mine: Vec<PortId> = m.node(sw).ports().collect();
        let pre = (SimTime(at.0 / 2), at);
        let rate_of = |ports: &[PortId], t0: SimTime, t1: SimTime| {
            let dt = series.at(t1).time.0.saturating_sub(series.at(t0).time.0).max(1);
            tx_between(series, ports, t0, t1) as f64 * 8.0 / (dt as f64 * 1e-12)
        };
        let base = rate_of(&others, pre.0, pre.1);
        e.put("other_spines_gbps_before", Some(base / 1e9));
        e.put("rebooted_gbps_before", Some(rate_of(&mine, pre.0, pre.1) / 1e9));
        let down_end =
            s.params.get("down_us").and_then(|v| v.as_f64()).map_or(now, |d| at + SimTime::from_secs_f64(d * 1e-6));
        // From the first sample after the reboot.
        let from = series.samples.iter().find(|x| x.time >= at).map_or(at, |x| x.time);
        e.put("other_spines_gbps_during", Some(rate_of(&others, from, down_end.min(now)) / 1e9));
        e.put("rebooted_gbps_during", Some(rate_of(&mine, from, down_end.min(now)) / 1e9));
        // The first interval after the reboot in which the other spines carry more than before it.
        let shift = series.samples.windows(2).filter(|w| w[0].time >= at).find(|w| {
            let bytes: u64 = others.iter().map(|p| w[1].tx[p.idx()] - w[0].tx[p.idx()]).sum();
            bytes as f64 * 8.0 / ((w[1].time.0 - w[0].time.0).max(1) as f64 * 1e-12) > base * 1.02
        });
        e.put("time_to_shift_us", shift.map(|w| w[1].time.saturating_sub(at).as_us_f64()));
        Some(inside as f64)
    }
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "switch-reboot.losses-outside-the-switch", kind: ScenarioKind::SwitchReboot, figure: Figure::Metric("packets_lost_elsewhere"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets lost", why: "a rebooting switch loses what it held; the rest of the fabric must reroute around it losslessly" },
];
