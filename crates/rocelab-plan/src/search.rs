//! Layout search: every TP × CP × PP × DP (× EP) split of a GPU count, with micro-batch size,
//! pipeline schedule, ZeRO stage and recomputation, estimated and ranked by step time (training)
//! or tokens/s (inference), keeping only layouts whose weights, optimizer states, activations and
//! KV cache fit in a GPU's memory. Dimensions the user pinned (`--tp 8`) are not searched.
//!
//! The search is exhaustive over divisors: for 1,024 GPUs it is a few thousand estimates, each a
//! handful of closed-form collectives, well under a second (see `benches/search.rs`).

use crate::estimate::{estimate, Verdict};
use crate::scenario::{Parallel, Recompute, Scenario, Schedule, Workload, ZeroStage};
use crate::spec::{resolve, PlanSpec};
use crate::PlanError;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq)]
pub struct SearchSpec {
    /// Model, workload, hardware and interconnect; parallel keys that are set pin that dimension.
    pub base: PlanSpec,
    pub gpus: u32,
    /// Rows to keep.
    pub top: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub layout: String,
    pub tp: u32,
    pub cp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    pub micro_batch: u32,
    pub schedule: String,
    pub zero: u8,
    pub recompute: String,
    pub memory_bytes: f64,
    /// Training: step time; inference: time per output token.
    pub step_seconds: f64,
    pub tokens_per_s: f64,
    pub mfu: Option<f64>,
    pub network_share: f64,
    pub bottleneck: String,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    pub title: String,
    /// "step time" (training) or "tokens/s" (inference).
    pub ranked_by: String,
    pub ranked: Vec<Candidate>,
    pub evaluated: u64,
    pub valid: u64,
    pub out_of_memory: u64,
    pub invalid: u64,
}

fn divisors(n: u32) -> Vec<u32> {
    let mut d: Vec<u32> =
        (1..=n).take_while(|i| (*i as u64) * (*i as u64) <= n as u64).filter(|i| n.is_multiple_of(*i)).collect();
    let big: Vec<u32> = d.iter().rev().map(|i| n / i).filter(|b| !d.contains(b)).collect();
    d.extend(big);
    d
}

/// Ranks layouts for `spec.gpus` GPUs.
pub fn search(spec: &SearchSpec) -> Result<SearchResult, PlanError> {
    if spec.gpus == 0 {
        return Err(PlanError {
            key: "hardware.gpus".into(),
            message: "the search needs a GPU count".into(),
            hint: "pass --gpus N".into(),
        });
    }
    // Resolve everything but the layout once, on a single-GPU layout.
    let pin = spec.base.parallel.clone();
    let mut base_spec = spec.base.clone();
    base_spec.parallel = Default::default();
    base_spec.parallel.tp = Some(1);
    base_spec.parallel.zero = pin.zero;
    base_spec.parallel.fsdp = pin.fsdp;
    base_spec.hardware.gpus = None;
    let mut base: Scenario = resolve(&base_spec)?;
    base.cluster.gpus = spec.gpus;
    let inference = matches!(base.workload, Workload::Inference(_));
    let n = spec.gpus;
    let mdl = base.model.clone();
    let g = base.cluster.gpus_per_node;

    let pick = |pinned: Option<u32>, all: Vec<u32>| -> Vec<u32> {
        match pinned {
            Some(v) => vec![v],
            None => all,
        }
    };
    let tps =
        pick(pin.tp, divisors(n).into_iter().filter(|t| mdl.heads.is_multiple_of(*t) && *t <= 2 * g.max(1)).collect());
    let cps = if inference { vec![1] } else { pick(pin.cp, vec![1, 2, 4, 8, 16]) };
    let zeros: Vec<u8> = match (pin.zero, pin.fsdp) {
        (_, Some(true)) => vec![3],
        (Some(z), _) => vec![z],
        _ if inference => vec![0],
        _ => vec![1, 3],
    };
    let recomputes: Vec<Recompute> = match pin.recompute.as_deref().and_then(Recompute::parse) {
        Some(r) => vec![r],
        None if inference => vec![Recompute::Selective],
        None => vec![Recompute::Selective, Recompute::Full],
    };
    let (global_batch, user_mb) = match &base.workload {
        Workload::Training(t) => (t.global_batch, spec.base.training.as_ref().and_then(|t| t.micro_batch)),
        Workload::Inference(_) => (0, None),
    };
    let mbs: Vec<u32> = if inference { vec![1] } else { user_mb.map(|m| vec![m]).unwrap_or_else(|| vec![1, 2, 4]) };

    let mut out = SearchResult {
        title: String::new(),
        ranked_by: String::new(),
        ranked: Vec::new(),
        evaluated: 0,
        valid: 0,
        out_of_memory: 0,
        invalid: 0,
    };
    let mut all = Vec::new();
    let mut s = base.clone();
    for &tp in &tps {
        for &cp in &cps {
            // Pinned sizes come from the user: guard the product.
            let Some(tc) = tp.checked_mul(cp).filter(|tc| *tc > 0 && n.is_multiple_of(*tc)) else {
                continue;
            };
            let rest = n / tc;
            let pps = pick(pin.pp, divisors(rest).into_iter().filter(|p| *p <= mdl.layers).collect());
            for &pp in &pps {
                if !rest.is_multiple_of(pp) {
                    continue;
                }
                let dp = rest / pp;
                if let Some(d) = pin.dp {
                    if d != dp {
                        continue;
                    }
                }
                let eps = if mdl.is_moe() {
                    pick(pin.ep, divisors(dp).into_iter().filter(|e| mdl.experts.is_multiple_of(*e)).collect())
                } else {
                    vec![1]
                };
                let schedules: Vec<(Schedule, u32)> = if pp == 1 {
                    vec![(Schedule::OneFOneB, 1)]
                } else {
                    match (pin.schedule.as_deref().and_then(Schedule::parse), pin.virtual_stages) {
                        (Some(sc), v) => vec![(sc, v.unwrap_or(if sc == Schedule::Interleaved { 2 } else { 1 }))],
                        (None, Some(v)) if v > 1 => vec![(Schedule::Interleaved, v)],
                        _ => vec![(Schedule::OneFOneB, 1), (Schedule::Interleaved, 2), (Schedule::Interleaved, 4)],
                    }
                };
                for &ep in &eps {
                    for &mb in &mbs {
                        if !inference && !(global_batch as u64).is_multiple_of(dp as u64 * mb as u64) {
                            out.evaluated += 1;
                            out.invalid += 1;
                            continue;
                        }
                        for &(schedule, v) in &schedules {
                            for &zero in &zeros {
                                for &recompute in &recomputes {
                                    out.evaluated += 1;
                                    s.parallel = Parallel {
                                        tp,
                                        cp,
                                        pp,
                                        dp,
                                        ep,
                                        sequence_parallel: pin.sequence_parallel.unwrap_or(tp > 1 && !inference),
                                        schedule,
                                        virtual_stages: v,
                                        zero: ZeroStage(zero),
                                        recompute,
                                    };
                                    if let Workload::Training(t) = &mut s.workload {
                                        t.micro_batch = mb;
                                    }
                                    if s.validate().is_err() {
                                        out.invalid += 1;
                                        continue;
                                    }
                                    let e = estimate(&s);
                                    if !e.memory.fits {
                                        out.out_of_memory += 1;
                                        continue;
                                    }
                                    out.valid += 1;
                                    all.push(Candidate {
                                        layout: s.parallel.label(),
                                        tp,
                                        cp,
                                        pp,
                                        dp,
                                        ep,
                                        micro_batch: mb,
                                        schedule: if v > 1 {
                                            format!("{} v={}", schedule.name(), v)
                                        } else {
                                            schedule.name().to_string()
                                        },
                                        zero,
                                        recompute: recompute.name().to_string(),
                                        memory_bytes: e.memory.total_bytes,
                                        step_seconds: e.headline.step_seconds,
                                        tokens_per_s: e.headline.tokens_per_s,
                                        mfu: e.headline.mfu,
                                        network_share: e.network_share,
                                        bottleneck: e.bottleneck.clone(),
                                        verdict: e.verdict,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // Best first; ties broken by the layout text so the order never depends on iteration.
    all.sort_by(|a, b| {
        let key = |c: &Candidate| if inference { -c.tokens_per_s } else { c.step_seconds };
        key(a)
            .total_cmp(&key(b))
            .then_with(|| a.layout.cmp(&b.layout))
            .then_with(|| a.micro_batch.cmp(&b.micro_batch))
            .then_with(|| a.schedule.cmp(&b.schedule))
            .then_with(|| a.zero.cmp(&b.zero))
            .then_with(|| a.recompute.cmp(&b.recompute))
    });
    all.truncate(spec.top.max(1));
    out.ranked = all;
    out.ranked_by = if inference { "tokens/s" } else { "step time" }.to_string();
    out.title = format!(
        "{} · {} · {} GPUs {} ({} per node) · {} inside nodes · {} between nodes · ranked by {}",
        mdl.name,
        base.precision.name(),
        n,
        base.cluster.gpu.name,
        g,
        base.cluster.intra_node.name,
        base.cluster.network.name,
        if inference { "tokens/s" } else { "step time" }
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::divisors;

    #[test]
    fn divisors_are_complete_and_sorted() {
        assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(1024).len(), 11);
        assert_eq!(divisors(1), vec![1]);
    }
}
