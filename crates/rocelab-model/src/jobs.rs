//! Several tenants on one fabric: the `[[job]]` tables, resolved at load.
//!
//! A job is one tenant's work placed on chosen GPU nodes (and optionally chosen rails of them,
//! so two tenants may split a server's NICs), or on named hosts:
//!
//! * `kind = "step"`: a training step of a plan (`plan = "plan"`, this file's `[plan]`, or a plan
//!   file's path), as `simulate --step` runs it, on the job's GPUs;
//! * `kind = "serve"`: inference serving of a plan with the `[serve]` keys, as `simulate --serve`;
//! * `kind = "checkpoint"`: storage bursts, RDMA writes of `size` from every source NIC to the
//!   `targets` (round-robin), `count` times every `period_us` from `start_us`: a checkpoint
//!   or a dataset read, in the RDMA class unless `class` names another;
//! * `kind = "tcp"`: the same pattern over TCP (DCTCP), management or monitoring traffic, in a
//!   class of its own unless `class` says otherwise.
//!
//! Everything a job names is checked here (plan present, GPU node and rail indices, no NIC in
//! two jobs, host names and globs, sizes, counts, times, class), so every verb refuses the same
//! file with the same located error. `rocelab_workload::jobs` runs them, together and alone.

use crate::config::{SizeInput, TrafficKind};
use crate::diag::Diagnostic;
use crate::model::{glob_match, Model, NodeId, Role};
use crate::serving::ServeTable;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};

/// The most jobs one file runs together (each job's tags carry its instance numbers).
pub const MAX_JOBS: usize = 64;
/// Bursts one checkpoint or TCP job repeats at most.
pub const MAX_BURSTS: u32 = 100_000;

/// One `[[job]]` table as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
    /// Its name in the outputs (default `job<i>`).
    #[serde(default)]
    pub name: Option<String>,
    /// step, serve, checkpoint or tcp.
    #[serde(default)]
    pub kind: String,
    /// step and serve: `"plan"` or a plan file's path (relative to this file).
    #[serde(default)]
    pub plan: Option<String>,
    /// GPU nodes by index (fabric order, from 0); default: every one.
    #[serde(default)]
    pub gpu_nodes: Option<Vec<u32>>,
    /// Rails (NIC index inside a GPU node, from 0) the job uses; default: every one.
    #[serde(default)]
    pub rails: Option<Vec<u32>>,
    /// checkpoint and tcp: source hosts by name or glob, instead of GPU nodes.
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    /// checkpoint and tcp: destination hosts by name or glob.
    #[serde(default)]
    pub targets: Option<Vec<String>>,
    /// checkpoint and tcp: bytes each source sends per burst.
    #[serde(default)]
    pub size: Option<SizeInput>,
    #[serde(default)]
    pub start_us: Option<f64>,
    #[serde(default)]
    pub period_us: Option<f64>,
    #[serde(default)]
    pub count: Option<u32>,
    /// Traffic class by name.
    #[serde(default)]
    pub class: Option<String>,
    #[serde(default)]
    pub qps: Option<u32>,
    // serve: the `[serve]` keys.
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    #[serde(default)]
    pub requests: Option<u32>,
    #[serde(default)]
    pub trace: Option<String>,
    #[serde(default)]
    pub token_budget: Option<u32>,
    #[serde(default)]
    pub max_batch: Option<u32>,
    #[serde(default)]
    pub kv_transfer: Option<String>,
}

/// What a job runs.
#[derive(Clone, Debug, PartialEq)]
pub enum JobKind {
    Step {
        plan: String,
    },
    Serve(ServeTable),
    /// RDMA (`tcp` false) or TCP bursts.
    Burst {
        tcp: bool,
    },
}

/// One `[[job]]`, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub name: String,
    pub kind: JobKind,
    /// GPU node indices and rails (step, serve; burst sources unless `hosts`).
    pub gpu_nodes: Vec<u32>,
    pub rails: Vec<u32>,
    /// Burst sources named by host (empty: the GPU nodes' NICs) and destinations.
    pub hosts: Vec<NodeId>,
    pub targets: Vec<NodeId>,
    pub size_bytes: u64,
    pub start: SimTime,
    pub period: SimTime,
    pub count: u32,
    pub class: usize,
    pub qps: u32,
}

/// GPU nodes of `m` in fabric order, each with its NICs by rail.
pub fn gpu_node_nics(m: &Model) -> Vec<Vec<NodeId>> {
    let mut ids: Vec<u32> = m
        .nodes
        .iter()
        .filter_map(|n| match n.role {
            Role::Host { gpu_node, .. } => gpu_node,
            _ => None,
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.iter()
        .map(|&g| {
            let mut nics: Vec<(u32, NodeId)> = m
                .nodes
                .iter()
                .enumerate()
                .filter_map(|(i, n)| match n.role {
                    Role::Host { gpu_node: Some(x), rail, .. } if x == g => Some((rail.unwrap_or(0), NodeId(i as u32))),
                    _ => None,
                })
                .collect();
            nics.sort();
            nics.into_iter().map(|(_, n)| n).collect()
        })
        .collect()
}

/// Resolves `m.config.job`; every problem is pushed to `errs`.
pub(crate) fn resolve(m: &Model, errs: &mut Vec<Diagnostic>) -> Vec<Job> {
    let all = &m.config.job;
    if all.len() > MAX_JOBS {
        errs.push(Diagnostic::new(
            "job",
            format!("{} [[job]] tables", all.len()),
            format!("run at most {MAX_JOBS} jobs together"),
        ));
        return vec![];
    }
    let nodes = gpu_node_nics(m);
    let mut out: Vec<Job> = Vec::new();
    // (GPU node, rail) -> the job holding it.
    let mut held: Vec<(u32, u32, usize)> = Vec::new();
    for (i, c) in all.iter().enumerate() {
        let p = format!("job[{i}]");
        match one(m, c, i, &p, &nodes) {
            Ok(j) => {
                if let Some(k) = out.iter().position(|o| o.name == j.name) {
                    errs.push(Diagnostic::new(
                        format!("{p}.name"),
                        format!("job `{}` is also the name of job[{k}]", j.name),
                        "give each job its own name: the report names jobs by it",
                    ));
                }
                let uses_gpus = !matches!(j.kind, JobKind::Burst { .. }) || j.hosts.is_empty();
                if uses_gpus {
                    for &g in &j.gpu_nodes {
                        for &r in &j.rails {
                            if let Some(&(_, _, k)) = held.iter().find(|h| h.0 == g && h.1 == r) {
                                errs.push(Diagnostic::new(
                                    format!("{p}.gpu_nodes"),
                                    format!("GPU node {g} rail {r} is already job `{}`'s", out[k].name),
                                    "give each job its own GPU nodes or rails (a NIC and its GPU belong to one tenant)",
                                ));
                            } else {
                                held.push((g, r, out.len()));
                            }
                        }
                    }
                }
                out.push(j);
            }
            Err(d) => errs.push(d),
        }
    }
    out
}

fn one(m: &Model, c: &JobConfig, i: usize, p: &str, nodes: &[Vec<NodeId>]) -> Result<Job, Diagnostic> {
    let d = |key: &str, msg: String, hint: &str| Diagnostic::new(format!("{p}.{key}"), msg, hint);
    let name = c.name.clone().unwrap_or_else(|| format!("job{i}"));
    if name.is_empty() || !name.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch)) {
        return Err(d("name", format!("job name `{name}`"), "letters, digits, '-', '_' and '.' only"));
    }
    let burst = matches!(c.kind.as_str(), "checkpoint" | "tcp");
    let kind = match c.kind.as_str() {
        "step" | "serve" => {
            let plan = c.plan.clone().unwrap_or_default();
            if plan.trim().is_empty() {
                return Err(d("plan", format!("a {} job without a plan", c.kind), "plan = \"plan\" (this file's [plan]) or a plan file's path"));
            }
            if plan == "plan" && m.config.plan.is_none() {
                return Err(d("plan", "plan = \"plan\" but the file has no [plan] table".into(), "add a [plan] table or give a plan file's path"));
            }
            if c.kind == "step" {
                JobKind::Step { plan }
            } else {
                let kv = crate::serving::check(p, c.rate_per_s, c.requests, c.trace.as_deref(), c.kv_transfer.as_deref())?;
                JobKind::Serve(ServeTable {
                    plan,
                    rate_per_s: c.rate_per_s,
                    requests: c.requests,
                    trace: c.trace.clone(),
                    token_budget: c.token_budget.filter(|&b| b > 0),
                    max_batch: c.max_batch.filter(|&b| b > 0),
                    kv_transfer: kv,
                })
            }
        }
        "checkpoint" => JobKind::Burst { tcp: false },
        "tcp" => JobKind::Burst { tcp: true },
        k => {
            return Err(d(
                "kind",
                if k.is_empty() { "a job without a kind".into() } else { format!("unknown job kind `{k}`") },
                "step (a training step), serve (inference), checkpoint (RDMA storage bursts) or tcp (management/monitoring over TCP)",
            ))
        }
    };
    if !burst {
        let serve_keys = [
            ("rate_per_s", c.rate_per_s.is_some()),
            ("requests", c.requests.is_some()),
            ("trace", c.trace.is_some()),
            ("token_budget", c.token_budget.is_some()),
            ("max_batch", c.max_batch.is_some()),
            ("kv_transfer", c.kv_transfer.is_some()),
        ];
        let burst_keys = [
            ("hosts", c.hosts.is_some()),
            ("targets", c.targets.is_some()),
            ("size", c.size.is_some()),
            ("start_us", c.start_us.is_some()),
            ("period_us", c.period_us.is_some()),
            ("count", c.count.is_some()),
            ("class", c.class.is_some()),
            ("qps", c.qps.is_some()),
        ];
        let wrong = burst_keys.iter().chain(if c.kind == "step" { &serve_keys[..] } else { &[] });
        if let Some((key, _)) = wrong.into_iter().find(|(_, set)| *set) {
            return Err(d(key, format!("`{key}` on a {} job", c.kind), "drop it: it belongs to another kind of job"));
        }
    } else if c.plan.is_some() || c.rate_per_s.is_some() || c.requests.is_some() {
        return Err(d(
            "plan",
            format!("a plan or serving key on a {} job", c.kind),
            "a burst job takes hosts or gpu_nodes, targets, size, start_us, period_us, count, class, qps",
        ));
    }
    if nodes.is_empty() && !(burst && c.hosts.is_some()) {
        return Err(d(
            "gpu_nodes",
            "the fabric has no GPU nodes to place the job on".into(),
            "use a fabric of GPU nodes (a [topology.rail_optimized] one, or hosts with gpu_node), or give a burst job `hosts`",
        ));
    }
    let gpu_nodes = match &c.gpu_nodes {
        None => (0..nodes.len() as u32).collect(),
        Some(v) => {
            if v.is_empty() {
                return Err(d(
                    "gpu_nodes",
                    "no GPU node".into(),
                    "list GPU node indices, e.g. [0, 1], or leave it out for every one",
                ));
            }
            for (k, &g) in v.iter().enumerate() {
                if g as usize >= nodes.len() {
                    return Err(d(
                        "gpu_nodes",
                        format!("GPU node {g}: the fabric has {}", nodes.len()),
                        &format!("give indices 0 to {}", nodes.len().saturating_sub(1)),
                    ));
                }
                if v[..k].contains(&g) {
                    return Err(d("gpu_nodes", format!("GPU node {g} listed twice"), "list each node once"));
                }
            }
            v.clone()
        }
    };
    let rails_n = nodes.iter().map(|n| n.len()).min().unwrap_or(0) as u32;
    let rails = match &c.rails {
        None => (0..rails_n).collect(),
        Some(v) => {
            if v.is_empty() {
                return Err(d(
                    "rails",
                    "no rail".into(),
                    "list rails, e.g. [0, 1, 2, 3], or leave it out for every one",
                ));
            }
            for (k, &r) in v.iter().enumerate() {
                if r >= rails_n {
                    return Err(d(
                        "rails",
                        format!("rail {r}: the GPU nodes have {rails_n} NICs"),
                        &format!("give rails 0 to {}", rails_n.saturating_sub(1)),
                    ));
                }
                if v[..k].contains(&r) {
                    return Err(d("rails", format!("rail {r} listed twice"), "list each rail once"));
                }
            }
            v.clone()
        }
    };
    let mut job = Job {
        name,
        kind,
        gpu_nodes,
        rails,
        hosts: vec![],
        targets: vec![],
        size_bytes: 0,
        start: SimTime(0),
        period: SimTime(0),
        count: 1,
        class: m.qos.rdma_class(),
        qps: 1,
    };
    if !burst {
        return Ok(job);
    }
    let tcp = c.kind == "tcp";
    let hosts_of = |key: &str, pats: &[String]| -> Result<Vec<NodeId>, Diagnostic> {
        let mut v = Vec::new();
        for pat in pats {
            let before = v.len();
            for (i, n) in m.nodes.iter().enumerate() {
                if n.is_host() && glob_match(pat, &n.name) && !v.contains(&NodeId(i as u32)) {
                    v.push(NodeId(i as u32));
                }
            }
            if v.len() == before {
                return Err(d(
                    key,
                    format!("`{pat}` names no host"),
                    "give host names or globs (`*`, `?`) as `rocelab topo` lists them",
                ));
            }
        }
        Ok(v)
    };
    if let Some(h) = &c.hosts {
        job.hosts = hosts_of("hosts", h)?;
    }
    let Some(t) = &c.targets else {
        return Err(d(
            "targets",
            format!("a {} job without targets", c.kind),
            "targets = [\"storage*\"]: the hosts the bursts go to",
        ));
    };
    job.targets = hosts_of("targets", t)?;
    let size = c.size.as_ref().ok_or_else(|| {
        d("size", format!("a {} job without a size", c.kind), "size = \"1G\": bytes each source sends per burst")
    })?;
    job.size_bytes = match size.bytes() {
        Some(b) if (1..=crate::intent::MAX_MESSAGE_BYTES).contains(&b) => b,
        _ => {
            return Err(d(
                "size",
                "a size outside 1 B to 1 TB".into(),
                "a byte count or a string such as \"64M\" (powers of 1024)",
            ))
        }
    };
    let time = |key: &str, v: Option<f64>| -> Result<SimTime, Diagnostic> {
        match v {
            None => Ok(SimTime(0)),
            Some(x) if x.is_finite() && (0.0..=crate::intent::MAX_TRAFFIC_START_US).contains(&x) => {
                Ok(SimTime((x * 1e6).round() as u64))
            }
            Some(x) => Err(d(key, format!("{key} = {x}"), "give 0 to 10^9 µs")),
        }
    };
    job.start = time("start_us", c.start_us)?;
    job.period = time("period_us", c.period_us)?;
    job.count = c.count.unwrap_or(1);
    if job.count == 0 || job.count > MAX_BURSTS {
        return Err(d("count", format!("count = {}", job.count), &format!("give 1 to {MAX_BURSTS} bursts")));
    }
    if job.count > 1 && job.period.0 == 0 {
        return Err(d(
            "period_us",
            format!("{} bursts without a period", job.count),
            "give period_us, the time from one burst's start to the next",
        ));
    }
    job.qps = c.qps.unwrap_or(1);
    if job.qps == 0 || job.qps > crate::intent::MAX_QPS_PER_FLOW {
        return Err(d("qps", format!("qps = {}", job.qps), &format!("give 1 to {}", crate::intent::MAX_QPS_PER_FLOW)));
    }
    job.class = match &c.class {
        Some(name) => m.qos.class_by_name(name).ok_or_else(|| {
            let names: Vec<&str> = m.qos.classes.iter().map(|c| c.name.as_str()).collect();
            d("class", format!("no traffic class `{name}`"), &format!("the fabric's classes: {}", names.join(", ")))
        })?,
        None => {
            // TCP: the class the fabric set aside for management or TCP, else the first lossy
            // one. A checkpoint over RDMA: the RDMA class (RoCE in a lossy class retransmits
            // whole windows on every drop; `class` puts it elsewhere on purpose).
            let carries = |k: TrafficKind| m.qos.classes.iter().position(|c| c.carries.contains(&k));
            if tcp {
                carries(TrafficKind::Management)
                    .or_else(|| carries(TrafficKind::Tcp))
                    .or_else(|| m.qos.classes.iter().position(|c| !c.lossless))
                    .unwrap_or(m.qos.rdma_class())
            } else {
                m.qos.rdma_class()
            }
        }
    };
    Ok(job)
}
