//! `collective`: an NCCL-like collective, optionally beside another scenario's traffic
//! (parameters: `rocelab_model::scenario::collective`).
//!
//! Besides busbw over the NICs' line rate (which a ring of a thousand ranks misses at any
//! size a packet engine can afford, through NCCL's own per-hop latencies, not the fabric),
//! the run is judged against the twin's own ideal: the same collective, NICs, NCCL model and
//! seed on the fabric made non-blocking ([`non_blocking`]). Their ratio is what the fabric
//! costs the collective: 1 where nothing in the fabric slowed it.

use super::Kind;
use crate::check::*;
use crate::evaluate::Eval;
use crate::fabric::Scale;
use crate::setup::{err, Ctx, Setup};
use rocelab_model::config::{ScenarioConfig, ScenarioKind, ScenarioParams};
use rocelab_model::scenario::collective::{Params, OP, SIZE_MAX_BYTES, SIZE_MIN_BYTES, SIZE_PER_8_RANKS_BYTES};
use rocelab_model::units::BitsPerSec;
use rocelab_model::{Diagnostic, Model, SimTime};
use rocelab_sim::{EngineKind, SimOptions};
use rocelab_workload::CollectiveSpec;
use serde_json::json;

/// The metric `collective.busbw-of-ideal` judges: busbw over the same collective's on the
/// fabric made non-blocking.
pub const IDEAL_METRIC: &str = "busbw_fraction_of_ideal";

/// The kinds whose traffic a collective can run beside.
const BESIDE: [ScenarioKind; 4] =
    [ScenarioKind::Sustained, ScenarioKind::Incast, ScenarioKind::Microburst, ScenarioKind::Hotspot];

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (m, sc) = (cx.m, &cx.scale);
        let (spec, bound_gbps, rank_count) = spec_in(self, cx)?;
        let (op, size, channels) = (spec.op, spec.bytes, spec.channels.unwrap_or(2));
        let op_name = self.op.as_deref().unwrap_or(OP);
        // Ring time at line rate, plus a round trip per step.
        let steps = op.ring_steps(rank_count as u32).max(1);
        let ideal = sc.time_for((size as f64 * 2.0) as u64) + SimTime(sc.rtt.0 * steps);
        let mut s = Setup::new(None, ideal + ideal);
        s.collective = Some(spec);
        s.param("op", json!(rocelab_workload::nccl_name(op).unwrap_or(op_name)));
        s.param("size_bytes", json!(size));
        s.param("ranks", json!(rank_count));
        s.param("channels", json!(channels));
        s.param("busbw_bound_gbps", json!(bound_gbps));
        if let Some(b) = &self.beside {
            let (i, other) =
                m.config.scenario.iter().enumerate().find(|(_, o)| o.display_name() == b).ok_or_else(|| {
                    err(&cx.path, "beside", format!("no [[scenario]] named `{b}`"), "name a [[scenario]] of this file")
                })?;
            if !BESIDE.contains(&other.kind) {
                return Err(err(
                    &cx.path,
                    "beside",
                    format!("`{b}` is a {} scenario", other.kind.name()),
                    "run beside a sustained, incast, microburst or hotspot scenario",
                ));
            }
            let path = format!("scenario[{i}]");
            let p = other.params(&path).map_err(first)?;
            let ocx = Ctx {
                m,
                c: other,
                p,
                path: path.clone(),
                seed: cx.seed,
                scale: Scale::new(m, &crate::hosts_of(other), &path)?,
            };
            let o = super::of(&ocx.p).build(&ocx)?;
            s.msgs = o.msgs;
            s.faults = o.faults;
            s.param("beside", json!(b));
        }
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let p = e.o.collective?;
        let t = p.time();
        let size = e.s.params.get("size_bytes").and_then(|v| v.as_u64()).unwrap_or(0) as f64;
        let op = self.op.as_deref().unwrap_or(OP);
        let factor = rocelab_workload::parse_op(op).map(|o| o.busbw_factor(p.ranks)).unwrap_or(1.0);
        let busbw = t.map(|t| size / t.as_secs_f64() * factor);
        e.put("time_us", t.map(|t| t.as_us_f64()));
        e.put("busbw_gbytes_per_s", busbw.map(|b| b / 1e9));
        e.put("failed_chunks", Some(p.failed_chunks() as f64));
        let bound_bps =
            e.s.params.get("busbw_bound_gbps").and_then(|v| v.as_f64()).map_or(e.cx.scale.rate_bps, |g| g * 1e9);
        // The same collective alone on the fabric made non-blocking: what NCCL's model and the
        // NICs allow at this size, so the ratio is what the fabric (and any traffic beside it)
        // costs. A twin that cannot run the ideal leaves the figure out (the check then fails
        // as unmeasured, never passes).
        let ideal = e.s.collective.as_ref().and_then(|spec| ideal_time(e.m, spec, e.cx.seed, EngineKind::Packet).ok());
        e.put("ideal_time_us", ideal.map(|i| i.as_us_f64()));
        e.put(IDEAL_METRIC, t.zip(ideal).filter(|(t, _)| t.0 > 0).map(|(t, i)| i.as_secs_f64() / t.as_secs_f64()));
        // What the ideal takes away, for the cause when the ratio fails: how unevenly the
        // leaves' uplinks carried the collective, and the busiest one's load.
        let end = e.o.snap.now;
        e.put("ecmp_imbalance", crate::evaluate::ecmp_imbalance(e.m, e.o.series, SimTime::ZERO, end));
        let busiest = crate::fabric::spine_uplinks(e.m)
            .into_iter()
            .map(|p| &e.o.snap.ports[p.idx()])
            .filter(|c| c.speed.0 > 0 && end.0 > 0)
            .map(|c| c.tx_bytes as f64 * 8.0 / (c.speed.0 as f64 * end.as_secs_f64()))
            .fold(None, |a: Option<f64>, u| Some(a.map_or(u, |a| a.max(u))));
        e.put("uplink_utilization_max", busiest);
        busbw.map(|b| b * 8.0 / bound_bps)
    }
}

/// The fabric made non-blocking for the ideal a collective is judged against: every link
/// between two switches as fast as the fastest switch's ports together, so no uplink, spine
/// layer, oversubscription or ECMP collision limits a flow. Hosts, their NICs and links, the
/// switches' buffers and everything the workload charges (NCCL's latencies, the PCIe leg)
/// stay as they are; the file's `[[fault]]`s are left out (a fault is the fabric's cost too).
pub fn non_blocking(m: &Model) -> Model {
    let switch_total = |n: &rocelab_model::model::Node| n.ports().map(|p| m.port(p).speed.0).sum::<u64>();
    let widest = m.nodes.iter().filter(|n| !n.is_host()).map(switch_total).max().unwrap_or(0);
    let mut ideal = m.clone();
    ideal.intent.faults.clear();
    // A wider link would reserve a wider PFC headroom (its cable's bandwidth-delay product:
    // 3.2 MB a priority for 100 m at 25.6 Tb/s), which would take the whole shared buffer of a
    // switch and pause every packet; the ideal keeps the fabric's own largest headroom.
    let headroom = (0..m.ports.len()).map(|i| m.headroom_in_force(rocelab_model::PortId(i as u32))).max();
    if let Some(h) = headroom.filter(|h| *h > 0) {
        ideal.qos.pfc.headroom_bytes = Some(h);
    }
    for i in 0..ideal.ports.len() {
        let p = &m.ports[i];
        let between_switches = !m.node(p.node).is_host() && !m.node(m.port(p.peer).node).is_host();
        if between_switches {
            ideal.ports[i].speed = BitsPerSec(p.speed.0.max(widest));
        }
    }
    ideal
}

/// The collective `spec` alone on [`non_blocking`]`(m)` on `engine`, same seed: its time
/// (NCCL's base latency included, as the scenario's). The same engine as the run it is the
/// ideal of: the engines differ in what a hop costs (on rail-1024gpu's 1 GiB ring the flow
/// engine reads 0.88 of line rate where packets read 0.63), so only the same engine isolates
/// the fabric.
pub fn ideal_time(m: &Model, spec: &CollectiveSpec, seed: u64, engine: EngineKind) -> Result<SimTime, Vec<Diagnostic>> {
    let ideal = non_blocking(m);
    let spec = CollectiveSpec { message_rows: false, ..spec.clone() };
    let opts = SimOptions { seed, engine, recycle_qps: true, ..SimOptions::default() };
    let r = rocelab_workload::run_collective(&ideal, &spec, opts)?;
    if !r.time_us.is_finite() {
        return Err(vec![Diagnostic::new(
            "scenario",
            "the collective did not complete on the fabric made non-blocking",
            "",
        )]);
    }
    Ok(SimTime::from_secs_f64(r.time_us * 1e-6))
}

fn first(ds: Vec<Diagnostic>) -> Diagnostic {
    ds.into_iter().next().unwrap_or_else(|| Diagnostic::new("scenario", "invalid scenario", ""))
}

/// The collective a `collective` scenario runs (op, size, ranks, channels) and the line rate
/// its busbw is bounded by, Gb/s (`rocelab_workload::busbw_bound_gbps`: one rank's NIC, or,
/// with GPUs as the ranks, every port of the NICs of a node that the channels leave it on).
/// The flow engine's `validate` runs the same collective through `rocelab_workload` directly.
pub fn collective_spec(m: &Model, c: &ScenarioConfig, path: &str) -> Result<(CollectiveSpec, f64), Vec<Diagnostic>> {
    let p = c.params(path)?;
    let ScenarioParams::Collective(own) = &p else {
        return Err(vec![Diagnostic::new(path, format!("a {} scenario runs no collective", c.kind.name()), "")]);
    };
    let scale = Scale::new(m, &crate::hosts_of(c), path).map_err(|d| vec![d])?;
    let cx = Ctx { m, c, p: p.clone(), path: path.to_string(), seed: 0, scale };
    spec_in(own, &cx).map(|(spec, bound, _)| (spec, bound)).map_err(|d| vec![d])
}

/// The same, with the number of ranks.
fn spec_in(c: &Params, cx: &Ctx) -> Result<(CollectiveSpec, f64, usize), Diagnostic> {
    let m = cx.m;
    let hosts = &cx.scale.hosts;
    let n = hosts.len();
    let op_name = c.op.as_deref().unwrap_or(OP);
    let op = rocelab_workload::parse_op(op_name).map_err(|e| err(&cx.path, "op", e, "e.g. op = \"all_reduce\""))?;
    let ranks = match c.ranks {
        None => None,
        Some(r) if r >= 2 && r as usize <= n => Some(hosts[..r as usize].to_vec()),
        Some(r) => {
            return Err(err(&cx.path, "ranks", format!("ranks = {r}, with {n} hosts"), &format!("use 2 to {n}")))
        }
    };
    let rank_count =
        ranks.as_ref().map_or(rocelab_workload::placement::placement(m).map(|p| p.ranks()).unwrap_or(n), |r| r.len());
    let default = (SIZE_PER_8_RANKS_BYTES * rank_count as u64 / 8).clamp(SIZE_MIN_BYTES, SIZE_MAX_BYTES);
    let size = cx.size("size_bytes", c.size_bytes, default)?;
    // NCCL's ring channels on these ranks, as every caller of a collective settles them.
    let spec = CollectiveSpec { channels: None, ranks, ..CollectiveSpec::new(op, size) };
    let resolved = spec.resolve(m).map_err(|d| {
        d.into_iter().next().unwrap_or_else(|| err(&cx.path, "op", format!("{op_name} cannot run here"), ""))
    })?;
    let channels = resolved.channels;
    // The workload's bound: every port of the NICs the channels cross (a dual-port NIC is two).
    let bound_gbps = rocelab_workload::busbw_bound_gbps(m, &resolved.placement, channels);
    Ok((CollectiveSpec { channels: Some(channels), ..spec }, bound_gbps, rank_count))
}

const BUSBW_OF_IDEAL: &str = "what the fabric costs the collective: its busbw over the same collective's on the fabric made non-blocking (every switch-to-switch link wider than any switch; same NICs, NCCL model, size, seed and engine). NCCL's per-hop latencies and the NICs' line rate bound both alike, so only queues, PFC, ECMP collisions, oversubscription and traffic beside it lower the ratio. 0.8: the fabric may cost the collective a fifth of its busbw, the share at which `rocelab doctor` warns about busbw against the line rate (busbw_warn)";

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "collective.busbw-of-ideal", kind: ScenarioKind::Collective, figure: Figure::Metric(IDEAL_METRIC), cmp: Cmp::AtLeast, limit: Some(0.8), unit: "busbw / the same collective's busbw on the fabric made non-blocking (same NICs, NCCL model, seed)", why: BUSBW_OF_IDEAL },
    CheckDef { name: "collective.busbw", kind: ScenarioKind::Collective, figure: Figure::Headline, cmp: Cmp::AtLeast, limit: None, unit: "busbw / line rate of the NICs it can use", why: "nccl-tests busbw over the line rate of the NICs the collective can use, reported: at the sizes a packet-level run affords, a ring of hundreds of ranks is bound by NCCL's per-hop latencies, not the fabric (`collective.busbw-of-ideal` judges the fabric); a policy limit (`rocelab doctor` warns at 0.8, busbw_warn) makes it judged" },
    CheckDef { name: "collective.paused-share", kind: ScenarioKind::Collective, figure: Figure::MaxPausedShare, cmp: Cmp::AtMost, limit: Some(0.05), unit: "paused time / time judged (the worst port and priority)", why: PAUSED },
    CheckDef { name: "collective.lossless-drops", kind: ScenarioKind::Collective, figure: Figure::Metric("dropped_packets"), cmp: Cmp::AtMost, limit: Some(0.0), unit: "packets dropped", why: LOSSLESS },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fabric_made_non_blocking_widens_only_links_between_switches_and_keeps_its_headroom() {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-128gpu.toml");
        let m = rocelab_model::load_str("rail-128gpu.toml", &std::fs::read_to_string(p).unwrap()).unwrap();
        let ideal = non_blocking(&m);
        let between =
            |m: &Model, i: usize| !m.node(m.ports[i].node).is_host() && !m.node(m.port(m.ports[i].peer).node).is_host();
        // Every uplink carries at least what the busiest switch's ports together can: a leaf's
        // 16 × 400 G down and 16 × 400 G up, 12.8 Tb/s.
        let widest = 32 * 400_000_000_000u64;
        let mut widened = 0;
        for i in 0..m.ports.len() {
            if between(&m, i) {
                assert!(ideal.ports[i].speed.0 >= widest, "port {i}");
                widened += 1;
            } else {
                assert_eq!(ideal.ports[i].speed, m.ports[i].speed, "a host's link stays as it is");
            }
            // No port reserves more headroom than the fabric's largest.
            let most = (0..m.ports.len()).map(|j| m.headroom_in_force(rocelab_model::PortId(j as u32))).max();
            assert!(ideal.headroom_in_force(rocelab_model::PortId(i as u32)) <= most.unwrap_or(0), "port {i}");
        }
        assert!(widened > 0);
    }
}
