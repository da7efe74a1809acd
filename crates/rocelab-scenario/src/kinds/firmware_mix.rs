//! `firmware-mix`: a share of the senders on another congestion-control profile
//! (parameters: `rocelab_model::scenario::firmware_mix`).

use super::Kind;
use crate::check::*;
use crate::evaluate::*;
use crate::setup::*;
use rocelab_model::config::CongestionControl;
use rocelab_model::config::ScenarioKind;
use rocelab_model::scenario::firmware_mix::*;
use rocelab_model::{Diagnostic, NodeId, SimTime};
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn steady(&self) -> bool {
        true
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (m, sc) = (cx.m, &cx.scale);
        let dur = cx.duration(self.duration_us, rocelab_model::scenario::STEADY_WINDOW_US as u64)?;
        let dst = cx.dst(&self.dst)?;
        let k = cx.fan_in(self.fan_in, FAN_IN as usize, 1)?;
        if k < 2 {
            // One sender is all on the other profile: there is no fleet to share with.
            return Err(err(
                &cx.path,
                "fan_in",
                format!("{k} sender: the fleet and the other profile need one each"),
                "run it on a fabric (or `hosts`) of 3 hosts or more",
            ));
        }
        let share = cx.fraction("share", self.share, SHARE, false)?;
        let senders = cx.after(dst, k);
        // Every 1/share-th sender, at least one.
        let mut others: Vec<NodeId> = (0..k)
            .filter(|&i| ((i + 1) as f64 * share).floor() > (i as f64 * share).floor())
            .map(|i| senders[i])
            .collect();
        if others.is_empty() {
            others.push(senders[k - 1]);
        }
        let cc = self.congestion_control.unwrap_or(if self.dcqcn.is_some() {
            CongestionControl::Dcqcn
        } else {
            CongestionControl::None
        });
        let mut nic = m.config.nic.clone();
        nic.congestion_control = Some(cc);
        if let Some(d) = &self.dcqcn {
            // The given keys over the fleet's.
            let mut base = serde_json::to_value(&nic.dcqcn).unwrap_or_default();
            if let (Some(b), Some(o)) = (base.as_object_mut(), serde_json::to_value(d).unwrap_or_default().as_object())
            {
                for (key, v) in o.iter().filter(|(_, v)| !v.is_null()) {
                    b.insert(key.clone(), v.clone());
                }
            }
            nic.dcqcn = serde_json::from_value(base).unwrap_or_else(|_| d.clone());
        }
        let names: Vec<String> = others.iter().map(|h| m.node(*h).name.clone()).collect();
        let mut s = Setup::new(Some(dur), dur);
        for &h in &senders {
            s.msgs.push(msg(h, dst, sc.bytes_in(dur, 1.0), SimTime::ZERO));
        }
        s.marks = Marks {
            dst: Some(dst),
            flows_of_others: senders.iter().enumerate().filter(|(_, h)| others.contains(h)).map(|(i, _)| i).collect(),
            senders,
            others,
            ..Marks::default()
        };
        s.profile = Some((nic, names.clone()));
        s.param("share", json!(share));
        s.param("congestion_control", json!(if cc == CongestionControl::None { "none" } else { "dcqcn" }));
        if let Some(d) = &self.dcqcn {
            s.param("dcqcn", serde_json::to_value(d).unwrap_or_default());
        }
        s.param("other_profile_hosts", json!(names));
        s.param("fan_in", json!(k));
        s.param("duration_us", json!(dur.as_us_f64()));
        s.param("dst", json!(m.node(dst).name));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let s = e.s;
        let k = &s.marks;

        let (mut other, mut fleet) = (Vec::new(), Vec::new());
        let bytes = e.flow_bytes(0..k.senders.len());
        for (i, &b) in bytes.iter().enumerate() {
            if k.flows_of_others.contains(&i) {
                other.push(b)
            } else {
                fleet.push(b)
            }
        }
        let dur = e.span().max(1e-12);
        e.put("other_goodput_gbps_mean", mean(&other).map(|b| b * 8.0 / dur / 1e9));
        e.put("fleet_goodput_gbps_mean", mean(&fleet).map(|b| b * 8.0 / dur / 1e9));
        // The fleet's share of what the receiver got over its share of the senders: finite
        // whenever anything was delivered, 0 when the other profile starves the fleet (the
        // ratio of the two means is infinite there), 1 when every sender gets the same.
        let (f_sum, all) = (fleet.iter().sum::<f64>(), bytes.iter().sum::<f64>());
        (all > 0.0 && !fleet.is_empty()).then(|| (f_sum / all) / (fleet.len() as f64 / bytes.len() as f64))
    }
}

/// The least share of its fair share the fleet's NICs may keep beside NICs on the other
/// profile: half. Below it the other profile takes most of a bottleneck (with a quarter of the
/// senders on it, at 0.5 each of those gets 4× what a fleet sender gets).
pub const FLEET_SHARE_MIN: f64 = 0.5;

const FLEET_SHARE: &str = "the fleet's share of the receiver's goodput over its share of the senders, as a partial rollout leaves a fleet (a share of the NICs on another congestion-control profile, by default none): NICs that do not back off take what DCQCN NICs give up on every CNP and starve them. At least half the fair share: below it the other profile holds most of the bottleneck";

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "firmware-mix.fleet-share", kind: ScenarioKind::FirmwareMix, figure: Figure::Headline, cmp: Cmp::AtLeast, limit: Some(FLEET_SHARE_MIN), unit: "fleet's share of the receiver's goodput / its share of the senders (1 = fair)", why: FLEET_SHARE },
];
