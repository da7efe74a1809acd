//! `link-loss`: a fabric link lost for good under load (parameters:
//! `rocelab_model::scenario::link_loss`).

use super::{under_load_figures, Kind};
use crate::evaluate::Eval;
use crate::setup::{link, link_fault, link_name, probe_before, under_load, Ctx, Setup, UnderLoad};
use rocelab_model::scenario::link_loss::{Params, AT_DIVISOR};
use rocelab_model::Diagnostic;
use serde_json::json;

impl Kind for Params {
    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let hosts = cx.scale.hosts.clone();
        let u = UnderLoad {
            duration_us: self.duration_us,
            load: self.load,
            at_us: self.at_us,
            at_divisor: AT_DIVISOR,
            convergence_us: self.convergence_us,
            hosts: &hosts,
        };
        let (mut s, at) = under_load(cx, u)?;
        let p = link(cx, &self.a, &self.b, &probe_before(cx, &s, at))?;
        s.faults.push(link_fault(cx.m, p, at, false));
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
