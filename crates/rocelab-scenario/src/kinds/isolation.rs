//! `isolation`: a noisy tenant beside a training job (parameters:
//! `rocelab_model::scenario::isolation`).
//!
//! The job is a ring all-reduce over the first `victims` hosts in ring order, one rank per
//! host NIC, as the `collective` kind runs it. The noisy tenant is every other host: each sends
//! `noisy_bytes` at the start to victim host i mod N, in its own class (storage, backup or
//! monitoring traffic: DCTCP in a lossy class, RDMA in a lossless one), so it shares the
//! victims' links into their NICs. The same all-reduce
//! runs first alone (same fabric, seed, no fault); the headline is its time beside the tenant
//! over its time alone. The fabric's QoS decides the figure, and the check holds the fabric to
//! its promise: the slowdown over the bound the job's scheduler share guarantees.

use super::Kind;
use crate::check::*;
use crate::evaluate::Eval;
use crate::setup::{err, msg, Ctx, Setup};
use rocelab_model::config::{ScenarioKind, TrafficKind};
use rocelab_model::scenario::isolation::{Params, SIZE_BYTES, VICTIM_SHARE};
use rocelab_model::{Diagnostic, SimTime};
use rocelab_sim::traffic::Transport;
use rocelab_sim::workload::{FixedFlows, Message};
use rocelab_sim::{Sim, SimOptions};
use rocelab_workload::{Collective, CollectiveSpec};
use serde_json::json;

impl Kind for Params {
    fn checks(&self) -> &'static [CheckDef] {
        CHECKS
    }

    fn build(&self, cx: &Ctx) -> Result<Setup, Diagnostic> {
        let (m, hosts) = (cx.m, &cx.scale.hosts);
        let n = hosts.len();
        if n < 3 {
            return Err(err(
                &cx.path,
                "hosts",
                format!("{n} hosts: the job needs 2 and the tenant 1"),
                "run it on a fabric (or `hosts`) of 3 hosts or more",
            ));
        }
        let victims = match self.victims {
            None => ((n as f64 * VICTIM_SHARE) as usize).clamp(2, n - 1),
            Some(v) if v >= 2 && (v as usize) < n => v as usize,
            Some(v) => {
                return Err(err(
                    &cx.path,
                    "victims",
                    format!("victims = {v}, with {n} hosts"),
                    &format!("use 2 to {}", n - 1),
                ))
            }
        };
        let size = cx.size("size_bytes", self.size_bytes, SIZE_BYTES)?;
        let noisy = cx.size("noisy_bytes", self.noisy_bytes, size)?;
        let class = match &self.class {
            Some(c) => m.qos.class_by_name(c).ok_or_else(|| {
                let names: Vec<&str> = m.qos.classes.iter().map(|c| c.name.as_str()).collect();
                err(
                    &cx.path,
                    "class",
                    format!("no traffic class `{c}`"),
                    &format!("the fabric's classes: {}", names.join(", ")),
                )
            })?,
            None => m
                .qos
                .classes
                .iter()
                .position(|c| c.carries.contains(&TrafficKind::Storage))
                .or_else(|| m.qos.classes.iter().position(|c| !c.lossless))
                .unwrap_or(m.qos.rdma_class()),
        };
        let spec = CollectiveSpec {
            channels: None,
            ranks: Some(hosts[..victims].to_vec()),
            ..CollectiveSpec::new(Collective::AllReduce, size)
        };
        let channels = spec.resolve(m).map_err(|d| first(d, cx))?.channels;
        let spec = CollectiveSpec { channels: Some(channels), ..spec };
        let alone = alone_time(cx, &spec)?;
        // The all-reduce at line rate plus the tenant's bytes into one victim, twice over.
        let per_victim = noisy * (n - victims).div_ceil(victims) as u64;
        let horizon = cx.scale.time_for(2 * size + per_victim) + alone;
        let mut s = Setup::new(None, horizon + horizon);
        // A tenant in a lossy class speaks TCP (DCTCP), as storage and monitoring traffic does;
        // in a lossless one, RDMA.
        let transport = if m.qos.classes[class].lossless { Transport::Rdma } else { Transport::Dctcp };
        for (i, &h) in hosts[victims..].iter().enumerate() {
            s.msgs.push(Message { class: Some(class), ..msg(h, hosts[i % victims], noisy, SimTime::ZERO) });
            s.transport.push(transport);
        }
        s.collective = Some(spec);
        s.param("size_bytes", json!(size));
        s.param("victims", json!(victims));
        s.param("noisy_hosts", json!(n - victims));
        s.param("noisy_bytes", json!(noisy));
        s.param("class", json!(m.qos.classes[class].name));
        s.param("noisy_transport", json!(if transport == Transport::Rdma { "rdma" } else { "dctcp" }));
        s.param("alone_us", json!(alone.as_us_f64()));
        s.param("qos_bound", json!(qos_bound(m, m.qos.rdma_class(), class)));
        Ok(s)
    }

    fn evaluate(&self, e: &mut Eval) -> Option<f64> {
        let together = e.o.collective?.time();
        let alone = e.s.params.get("alone_us").and_then(|v| v.as_f64());
        e.put("alone_us", alone);
        e.put("together_us", together.map(|t| t.as_us_f64()));
        e.put("failed_chunks", e.o.collective.map(|p| p.failed_chunks() as f64));
        let slowdown = match (together, alone) {
            (Some(t), Some(a)) if a > 0.0 => Some(t.as_us_f64() / a),
            _ => None,
        };
        let bound = e.s.params.get("qos_bound").and_then(|v| v.as_f64()).unwrap_or(1.0);
        e.put("qos_bound", Some(bound));
        e.put("slowdown_over_qos_bound", slowdown.map(|x| x / bound));
        slowdown
    }
}

/// The most the job's QoS lets a tenant in class `tenant` slow the job's class `job` while
/// both send: 1 / the job's guaranteed share of the link. DWRR between two queues guarantees
/// the job w_job / (w_job + w_tenant); a strict-priority job queue is never slowed. A tenant in
/// the job's own queue, or a strict-priority tenant above a DWRR job, is held back by nothing:
/// then the bound is 1 (any slowdown is uncontrolled sharing).
fn qos_bound(m: &rocelab_model::Model, job: usize, tenant: usize) -> f64 {
    use rocelab_model::config::SchedulerKind::{Dwrr, Strict};
    let (j, t) = (&m.qos.classes[job], &m.qos.classes[tenant]);
    if job == tenant || j.queue == t.queue {
        return 1.0;
    }
    match (j.scheduler, t.scheduler) {
        (Strict, Dwrr) => 1.0,
        (Dwrr, Dwrr) if j.weight > 0 => (j.weight + t.weight) as f64 / j.weight as f64,
        _ => 1.0,
    }
}

fn first(ds: Vec<Diagnostic>, cx: &Ctx) -> Diagnostic {
    ds.into_iter().next().unwrap_or_else(|| err(&cx.path, "hosts", "the all-reduce cannot run here".into(), ""))
}

/// The victim's all-reduce alone on the same fabric with the same seed, no fault.
fn alone_time(cx: &Ctx, spec: &CollectiveSpec) -> Result<SimTime, Diagnostic> {
    let mut p = rocelab_workload::prepare(cx.m, spec, cx.seed).map_err(|d| first(d, cx))?;
    let w = std::mem::replace(&mut p.workload, Box::new(FixedFlows(vec![])));
    let opts = SimOptions { seed: cx.seed, ..SimOptions::default() };
    let mut sim = Sim::with_workload(cx.m, w, vec![], opts).map_err(|d| first(d, cx))?;
    sim.run(&mut |_| {});
    p.time().ok_or_else(|| {
        err(&cx.path, "hosts", "the all-reduce alone did not complete".into(), "check the fabric's faults and QPs")
    })
}

/// The checklist's checks on this kind.
#[rustfmt::skip]
pub const CHECKS: &[CheckDef] = &[
    CheckDef { name: "isolation.victim-slowdown", kind: ScenarioKind::Isolation, figure: Figure::Metric("slowdown_over_qos_bound"), cmp: Cmp::AtMost, limit: Some(1.10), unit: "the job's slowdown beside the tenant / the slowdown its QoS allows (1 / its guaranteed scheduler share; 1 when nothing separates the two)", why: "a GPU fabric shares no plane uncontrolled with storage, backup or monitoring traffic (Crux, SIGCOMM 2024: 36.3 % of jobs meet inter-job contention, a co-located job costs 9.5 % of GPU utilization): the job must get the share of the link its class is promised, within 10 %; a tenant in the job's own queue or above it in strict priority is uncontrolled, so there the job must not slow by more than 10 % at all" },
];
