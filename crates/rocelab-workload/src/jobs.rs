//! Several tenants on one fabric: the fabric file's `[[job]]`s run together in one run, each
//! again alone on the same fabric with the same seed, and each job's slowdown and its blame.
//!
//! * **Tenants in one run.** Every job is a workload of its own (`step::StepJob`,
//!   `serve::ServeJob`, or a burst pattern here); one multiplexer hands each delivery and
//!   wake-up to the job whose tag instance (the top 16 bits of every tag) it carries, each job
//!   holding a range of instance numbers of its own. A job sees the fabric only through `Net`,
//!   so it cannot tell whether it runs alone.
//! * **Placement.** Steps and serving run on the job's GPU nodes and rails, as if those were
//!   the whole fabric: a job on rails 0–3 of a node of 8 GPUs sees nodes of 4 GPUs, one per
//!   NIC. Burst jobs (checkpoint over RDMA, management or monitoring over TCP) send from their
//!   NICs (or named hosts) to their targets.
//! * **Slowdown**: each job's figure together over the same figure alone — the step time, the
//!   mean end-to-end request latency, the mean burst time.
//! * **Blame**: for each job, the links its messages crossed (each message's bytes spread over
//!   the equal-cost paths the fabric's routing offers, in equal shares: the expected ECMP
//!   load; exact where the path is unique, as inside a rail) that other jobs' messages crossed
//!   while its own were in flight there, ranked by those other jobs' bytes (counted in
//!   proportion to the time the two overlapped), with the egress queue of its class there:
//!   peak, longest wait, PFC pause, ECN marks in the shared run (a NIC's own port queues
//!   inside the NIC, so its switch-side counters stay 0: the link's bandwidth was shared).
//!   A job that shares no link in time is told so.

use crate::placement::{GpuLayout, Placement};
use crate::serve::{Request, ServeJob, ServePlan, ServeResult};
use crate::step::{StepJob, StepPlan, StepResult};
use rocelab_model::jobs::{Job, JobKind};
use rocelab_model::{Diagnostic, Model, NodeId, PortId, SimTime};
use rocelab_sim::snapshot::Snapshot;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use rocelab_sim::{RunReport, SimOptions};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// What a job runs, its plan resolved (by the caller, which reads plan files).
#[derive(Clone, Debug)]
pub enum Tenant {
    Step(StepPlan),
    Serve(ServePlan, Vec<Request>),
    /// The job's own checkpoint or TCP pattern (`Job`'s burst fields).
    Burst,
}

/// One job ready to run.
#[derive(Clone, Debug)]
pub struct JobInput {
    pub job: Job,
    pub tenant: Tenant,
}

/// A job's figure, as it is judged: lower is better.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Figure {
    /// What it measures, with its unit.
    pub what: &'static str,
    pub alone: f64,
    pub together: f64,
    /// together / alone (∞ when the job did not finish together).
    pub slowdown: f64,
}

/// One link a job waited on.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Blame {
    /// `switch:port -> peer`, as reports name links.
    pub link: String,
    /// The egress queue of the job's class there.
    pub queue: u8,
    pub queue_peak_bytes: u64,
    pub queue_delay_max_us: f64,
    /// Time the queue's priority was paused by PFC, µs.
    pub paused_us: f64,
    pub ecn_marked: u64,
    /// This job's bytes over the link (expected share).
    pub own_bytes: u64,
    /// Other jobs' bytes over the link while this job's messages were on it, by job.
    pub others_bytes: Vec<(String, u64)>,
}

/// A job's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct JobOutcome {
    pub name: String,
    pub kind: &'static str,
    pub figure: Figure,
    /// Messages that never arrived, together.
    pub failed_messages: u64,
    /// Links it waited on, the most shared first (at most 5).
    pub blame: Vec<Blame>,
    #[serde(skip)]
    pub detail_alone: String,
    #[serde(skip)]
    pub detail_together: String,
}

/// All jobs' outcomes.
#[derive(Clone, Debug, Serialize)]
pub struct JobsReport {
    pub jobs: Vec<JobOutcome>,
    pub seed: u64,
    pub events_together: u64,
}

/// The most blamed links a job lists.
const BLAME_LINKS: usize = 5;

// Burst tags: instance (16) | kind (4) | burst (28).
const K_BURST: u64 = 1;
const K_MSG: u64 = 2;

/// A checkpoint or TCP pattern: `count` bursts; in each, every source sends `size_bytes` to
/// its target (sources to targets round-robin).
struct BurstWork {
    sources: Vec<NodeId>,
    targets: Vec<NodeId>,
    size_bytes: u64,
    start: SimTime,
    period: SimTime,
    count: u32,
    class: usize,
    qps: u32,
    tcp: bool,
    inst: u16,
    pending: Vec<u32>,
    done: Vec<Option<SimTime>>,
    failed: u64,
}

impl BurstWork {
    fn tag(&self, kind: u64, k: u32) -> u64 {
        (self.inst as u64) << 48 | kind << 44 | k as u64
    }

    fn burst_at(&self, k: u32) -> SimTime {
        SimTime(self.start.0.saturating_add(self.period.0.saturating_mul(k as u64)))
    }

    /// Mean time from a burst's start to its last message delivered, ms (∞ if one never ended).
    fn mean_ms(&self) -> f64 {
        let mut sum = 0.0;
        for k in 0..self.count {
            match self.done[k as usize] {
                Some(t) => sum += t.0.saturating_sub(self.burst_at(k).0) as f64 * 1e-9,
                None => return f64::INFINITY,
            }
        }
        sum / self.count.max(1) as f64
    }
}

impl Workload for BurstWork {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        for k in 0..self.count {
            let _ = net.wake_at(self.burst_at(k), self.tag(K_BURST, k));
        }
    }

    fn on_wake(&mut self, tag: u64, net: &mut Net<'_, '_>) {
        let k = (tag & 0xfff_ffff) as u32;
        let n = self.targets.len();
        for (i, &src) in self.sources.iter().enumerate() {
            // A source that is also its target sends to the next one.
            let mut dst = self.targets[i % n];
            if dst == src {
                dst = self.targets[(i + 1) % n];
            }
            let m = Message {
                class: Some(self.class),
                qps: self.qps,
                ..Message::new(src, dst, self.size_bytes).tag(self.tag(K_MSG, k))
            };
            let r = if self.tcp { net.post_tcp(m) } else { net.post(m) };
            match r {
                Ok(_) => self.pending[k as usize] += 1,
                Err(_) => self.failed += 1,
            }
        }
        if self.pending[k as usize] == 0 {
            self.done[k as usize] = Some(net.now());
        }
    }

    fn on_delivered(&mut self, done: Delivered, _net: &mut Net<'_, '_>) {
        if done.failed {
            self.failed += 1;
            return;
        }
        let k = (done.tag & 0xfff_ffff) as usize;
        self.pending[k] = self.pending[k].saturating_sub(1);
        if self.pending[k] == 0 {
            self.done[k] = Some(done.at);
        }
    }
}

#[derive(Clone)]
struct BurstJob(Rc<RefCell<BurstWork>>);

impl Workload for BurstJob {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        self.0.borrow_mut().start(net)
    }
    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        self.0.borrow_mut().on_delivered(done, net)
    }
    fn on_wake(&mut self, tag: u64, net: &mut Net<'_, '_>) {
        self.0.borrow_mut().on_wake(tag, net)
    }
}

/// A job in a run, and what reads its result afterwards.
#[derive(Clone)]
enum Handle {
    Step(StepJob),
    Serve(ServeJob),
    Burst(BurstJob),
}

impl Handle {
    fn workload(&self) -> Box<dyn Workload> {
        match self {
            Handle::Step(j) => Box::new(j.clone()),
            Handle::Serve(j) => Box::new(j.clone()),
            Handle::Burst(j) => Box::new(j.clone()),
        }
    }
}

/// Every job's workload in one run: deliveries and wake-ups go to the job whose instance range
/// holds the tag's top 16 bits.
struct Tenants {
    jobs: Vec<(u16, u16, Box<dyn Workload>)>,
}

impl Tenants {
    fn owner(&self, tag: u64) -> Option<usize> {
        let inst = (tag >> 48) as u16;
        self.jobs.iter().position(|(lo, hi, _)| (*lo..=*hi).contains(&inst))
    }
}

impl Workload for Tenants {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        for (_, _, w) in &mut self.jobs {
            w.start(net);
        }
    }
    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        if let Some(i) = self.owner(done.tag) {
            self.jobs[i].2.on_delivered(done, net);
        }
    }
    fn on_wake(&mut self, tag: u64, net: &mut Net<'_, '_>) {
        if let Some(i) = self.owner(tag) {
            self.jobs[i].2.on_wake(tag, net);
        }
    }
}

/// The job's share of the fabric's GPU nodes: its nodes, and of each only its rails' NICs,
/// with the GPUs behind those NICs.
fn job_layout(m: &Model, job: &Job) -> Result<GpuLayout, Diagnostic> {
    let all = rocelab_model::jobs::gpu_node_nics(m);
    let Placement::Gpus(g) = crate::placement::placement(m).map_err(|mut d| d.remove(0))? else {
        return Err(Diagnostic::new(
            format!("job `{}`", job.name),
            "the fabric has no GPU nodes",
            "a step or serving job needs GPU nodes",
        ));
    };
    let nics_per_node = all.iter().map(|n| n.len()).min().unwrap_or(1).max(1) as u32;
    let gpus_per_nic = (g.gpus / nics_per_node).max(1);
    Ok(GpuLayout {
        nodes: job
            .gpu_nodes
            .iter()
            .map(|&n| job.rails.iter().map(|&r| all[n as usize][r as usize]).collect())
            .collect(),
        gpus: gpus_per_nic * job.rails.len() as u32,
        intra: g.intra.clone(),
    })
}

/// Instance numbers a job takes, from `base`; the handle.
fn instantiate(m: &Model, input: &JobInput, base: u16, seed: u64) -> Result<(Handle, u16), Vec<Diagnostic>> {
    let job = &input.job;
    let located = |mut d: Vec<Diagnostic>| {
        for x in &mut d {
            x.path = format!("job `{}`: {}", job.name, x.path);
        }
        d
    };
    match &input.tenant {
        Tenant::Step(plan) => {
            let g = job_layout(m, job).map_err(|d| vec![d])?;
            // Built once to count its collective slots, then under its own range.
            let n = StepJob::new(&g, plan, seed, 0, u16::MAX).map_err(located)?.instances();
            let top = base as u32 + n;
            if top > u16::MAX as u32 {
                return Err(vec![Diagnostic::new(
                    "job",
                    "the jobs need more than 65,535 tag instances",
                    "run fewer or smaller jobs together",
                )]);
            }
            let j = StepJob::new(&g, plan, seed, base, (top - 1) as u16).map_err(located)?;
            Ok((Handle::Step(j), n as u16))
        }
        Tenant::Serve(plan, reqs) => {
            let g = job_layout(m, job).map_err(|d| vec![d])?;
            Ok((Handle::Serve(ServeJob::new(&g, plan, reqs, base).map_err(located)?), 1))
        }
        Tenant::Burst => {
            let JobKind::Burst { tcp } = job.kind else {
                return Err(vec![Diagnostic::new("job", format!("job `{}` is not a burst job", job.name), "")]);
            };
            let sources = if job.hosts.is_empty() {
                let all = rocelab_model::jobs::gpu_node_nics(m);
                job.gpu_nodes
                    .iter()
                    .flat_map(|&n| job.rails.iter().map(move |&r| (n, r)))
                    .map(|(n, r)| all[n as usize][r as usize])
                    .collect()
            } else {
                job.hosts.clone()
            };
            let count = job.count as usize;
            let w = BurstWork {
                sources,
                targets: job.targets.clone(),
                size_bytes: job.size_bytes,
                start: job.start,
                period: job.period,
                count: job.count,
                class: job.class,
                qps: job.qps,
                tcp,
                inst: base,
                pending: vec![0; count],
                done: vec![None; count],
                failed: 0,
            };
            Ok((Handle::Burst(BurstJob(Rc::new(RefCell::new(w)))), 1))
        }
    }
}

/// A job's figure and its one-line detail from its handle after a run.
fn figure_of(h: &Handle, report: &RunReport) -> (&'static str, f64, u64, String) {
    match h {
        Handle::Step(j) => {
            let r: StepResult = j.result(report.clone());
            let d = format!("step {:.1} µs (compute alone {:.1} µs), {}", r.step_us, r.compute_only_us, r.critical);
            ("step time (µs)", r.step_us, r.failed_messages, d)
        }
        Handle::Serve(j) => {
            let r: ServeResult = j.result(report.clone());
            let v = if r.completed < r.requests { f64::INFINITY } else { r.e2e.mean_ms };
            let d = format!(
                "{} of {} requests; TTFT p50 {:.3} / p99 {:.3} ms, TPOT p50 {:.3} ms",
                r.completed, r.requests, r.ttft.p50_ms, r.ttft.p99_ms, r.tpot.p50_ms
            );
            ("mean request latency (ms)", v, r.failed_messages, d)
        }
        Handle::Burst(j) => {
            let w = j.0.borrow();
            let v = w.mean_ms();
            let d = format!(
                "{} burst(s), each {} sources × {} B over {}; mean {:.3} ms",
                w.count,
                w.sources.len(),
                w.size_bytes,
                if w.tcp { "TCP" } else { "RDMA" },
                v
            );
            ("mean burst time (ms)", v, w.failed, d)
        }
    }
}

/// A job in a run: its index in the inputs, its handle, its instance range.
type Placed = (usize, Handle, u16, u16);

/// Builds one run of `inputs` (all, or only job `only`); the handles and instance ranges.
fn run_once(
    m: &Model,
    inputs: &[JobInput],
    only: Option<usize>,
    opts: &SimOptions,
) -> Result<(Vec<Placed>, Snapshot), Vec<Diagnostic>> {
    let mut base: u32 = 0;
    let mut handles = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let (h, n) = instantiate(m, input, base as u16, opts.seed)?;
        let hi = base + n as u32 - 1;
        if hi > u16::MAX as u32 {
            return Err(vec![Diagnostic::new(
                "job",
                "the jobs need more than 65,536 tag instances",
                "run fewer jobs together",
            )]);
        }
        handles.push((i, h, base as u16, hi as u16));
        base = hi + 1;
    }
    let tenants = Tenants { jobs: handles.iter().map(|(_, h, lo, hi)| (*lo, *hi, h.workload())).collect() };
    // The shared run's per-message rows feed the blame; alone runs need only the totals.
    let snap = crate::run_to_end(m, Box::new(tenants), opts.clone(), only.is_none())?;
    Ok((handles, snap))
}

/// Runs `inputs` together on `m`, then each alone, with the same seed.
pub fn run_jobs(m: &Model, inputs: &[JobInput], opts: SimOptions) -> Result<JobsReport, Vec<Diagnostic>> {
    if inputs.is_empty() {
        return Err(vec![Diagnostic::new(
            "job",
            "no [[job]] table",
            "add [[job]] tables: kind, plan, gpu_nodes, rails, ...",
        )]);
    }
    let (handles, snap) = run_once(m, inputs, None, &opts)?;
    let report = RunReport::from_snapshot(&snap, m);
    let ranges: Vec<(u16, u16)> = handles.iter().map(|(_, _, lo, hi)| (*lo, *hi)).collect();
    let blame = blame_all(m, &snap, &ranges, inputs);
    let mut jobs = Vec::new();
    for (k, (i, h, _, _)) in handles.iter().enumerate() {
        let (what, together, failed, detail_together) = figure_of(h, &report);
        let (alone_h, alone_snap) = run_once(m, inputs, Some(*i), &opts)?;
        let alone_report = RunReport::from_snapshot(&alone_snap, m);
        let (_, alone, _, detail_alone) = figure_of(&alone_h[0].1, &alone_report);
        let job = &inputs[*i].job;
        jobs.push(JobOutcome {
            name: job.name.clone(),
            kind: match job.kind {
                JobKind::Step { .. } => "step",
                JobKind::Serve(_) => "serve",
                JobKind::Burst { tcp: false } => "checkpoint",
                JobKind::Burst { tcp: true } => "tcp",
            },
            figure: Figure {
                what,
                alone,
                together,
                slowdown: if alone > 0.0 && together.is_finite() { together / alone } else { f64::INFINITY },
            },
            failed_messages: failed,
            blame: blame[k].clone(),
            detail_alone,
            detail_together,
        });
    }
    Ok(JobsReport { jobs, seed: opts.seed, events_together: report.events })
}

/// The egress ports a message from `src` to `dst` may cross, with the share of its bytes each
/// carries when every switch spreads it evenly over its equal-cost next hops.
pub fn link_shares(m: &Model, src: NodeId, dst: NodeId) -> Vec<(PortId, f64)> {
    let mut out: BTreeMap<PortId, f64> = BTreeMap::new();
    let first: Vec<PortId> = m.node(src).ports().collect();
    let mut frontier: BTreeMap<NodeId, f64> = BTreeMap::new();
    for &p in &first {
        let s = 1.0 / first.len() as f64;
        *out.entry(p).or_default() += s;
        let peer = m.ports[m.ports[p.idx()].peer.idx()].node;
        if peer != dst {
            *frontier.entry(peer).or_default() += s;
        }
    }
    // Shortest paths shrink the distance at each hop: a fabric's diameter bounds the loop.
    for _ in 0..64 {
        if frontier.is_empty() {
            break;
        }
        let mut next: BTreeMap<NodeId, f64> = BTreeMap::new();
        for (&at, &s) in &frontier {
            if m.node(at).is_host() {
                continue;
            }
            let cands: Vec<PortId> = m
                .routing
                .candidates(at, dst)
                .iter()
                .copied()
                .filter(|p| m.ports[p.idx()].node == at)
                .filter(|p| {
                    // At the destination's switch only the ports facing it.
                    !m.routing.is_attachment(at, dst) || m.ports[m.ports[p.idx()].peer.idx()].node == dst
                })
                .collect();
            for &c in &cands {
                let share = s / cands.len() as f64;
                *out.entry(c).or_default() += share;
                let peer = m.ports[m.ports[c.idx()].peer.idx()].node;
                if peer != dst {
                    *next.entry(peer).or_default() += share;
                }
            }
        }
        frontier = next;
    }
    out.into_iter().collect()
}

/// Per job (in `ranges` order), the links it waited on.
fn blame_all(m: &Model, snap: &Snapshot, ranges: &[(u16, u16)], inputs: &[JobInput]) -> Vec<Vec<Blame>> {
    let owner = |tag: u64| {
        let inst = (tag >> 48) as u16;
        ranges.iter().position(|(lo, hi)| (*lo..=*hi).contains(&inst))
    };
    // Per job and port: bytes and the time intervals its messages were in flight there.
    let n = ranges.len();
    let mut bytes: Vec<BTreeMap<PortId, f64>> = vec![BTreeMap::new(); n];
    let mut spans: Vec<BTreeMap<PortId, Vec<(u64, u64)>>> = vec![BTreeMap::new(); n];
    let mut shares_cache: BTreeMap<(NodeId, NodeId), Vec<(PortId, f64)>> = BTreeMap::new();
    let end_of_run = snap.now.0;
    for f in &snap.flows {
        let Some(j) = owner(f.tag) else { continue };
        let shares = shares_cache.entry((f.src, f.dst)).or_insert_with(|| link_shares(m, f.src, f.dst));
        let span = (f.start.0, f.finish.map_or(end_of_run, |t| t.0));
        for &(p, s) in shares.iter() {
            *bytes[j].entry(p).or_default() += f.size_bytes as f64 * s;
            spans[j].entry(p).or_default().push(span);
        }
    }
    for s in spans.iter_mut() {
        for v in s.values_mut() {
            *v = merge(std::mem::take(v));
        }
    }
    let mut out = Vec::with_capacity(n);
    for j in 0..n {
        let class = inputs.get(j).map_or(m.qos.rdma_class(), |i| class_of(m, &i.job));
        let queue = m.qos.classes.get(class).map_or(0, |c| c.queue);
        let prio = m.qos.classes.get(class).map_or(0, |c| c.priority) as usize;
        let mut rows: Vec<(f64, Blame)> = Vec::new();
        for (&p, &own) in &bytes[j] {
            let pc = &snap.ports[p.idx()];
            let q = (queue as usize).min(7);
            let (peak, delay, paused, marked) = (
                pc.queue_peak_bytes[q],
                pc.queue_delay_max_ps[q],
                pc.paused_ps[prio.min(7)],
                pc.ecn_marked[prio.min(7)],
            );
            let mine = &spans[j][&p];
            let mut others = Vec::new();
            let mut total = 0.0;
            for k in (0..n).filter(|&k| k != j) {
                let Some(&b) = bytes[k].get(&p) else { continue };
                // The other job's bytes in proportion to the time its messages on this link
                // overlapped this job's.
                let theirs = &spans[k][&p];
                let dur: u64 = theirs.iter().map(|(a, b)| b - a).sum();
                let ov = overlap(mine, theirs);
                let share = if dur == 0 { 0.0 } else { b * ov as f64 / dur as f64 };
                if share >= 1.0 {
                    total += share;
                    others
                        .push((inputs.get(k).map_or(format!("job{k}"), |i| i.job.name.clone()), share.round() as u64));
                }
            }
            if others.is_empty() {
                continue;
            }
            let port = &m.ports[p.idx()];
            let link =
                format!("{}:{} -> {}", m.node(port.node).name, port.index, m.node(m.ports[port.peer.idx()].node).name);
            rows.push((
                total,
                Blame {
                    link,
                    queue,
                    queue_peak_bytes: peak,
                    queue_delay_max_us: delay as f64 * 1e-6,
                    paused_us: paused as f64 * 1e-6,
                    ecn_marked: marked,
                    own_bytes: own.round() as u64,
                    others_bytes: others,
                },
            ));
        }
        // Most of the other tenants' bytes first; the link name breaks ties (deterministic).
        rows.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.link.cmp(&b.1.link)));
        out.push(rows.into_iter().take(BLAME_LINKS).map(|(_, b)| b).collect());
    }
    out
}

/// The class a job's messages use (steps and serving: the RDMA class).
fn class_of(m: &Model, job: &Job) -> usize {
    match job.kind {
        JobKind::Burst { .. } => job.class,
        _ => m.qos.rdma_class(),
    }
}

/// Sorted, disjoint intervals covering `v`.
fn merge(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Total length of the intersection of two sorted, disjoint interval lists.
fn overlap(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut sum) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        sum += hi.saturating_sub(lo);
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    sum
}

/// The jobs report as text.
pub fn render(r: &JobsReport, fabric: &str) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} jobs together on the twin of `{fabric}` (seed {}), each against itself alone",
        r.jobs.len(),
        r.seed
    );
    let _ = writeln!(
        s,
        "\n  {:<16} {:<11} {:<28} {:>12} {:>12} {:>9}",
        "job", "kind", "figure", "alone", "together", "slowdown"
    );
    for j in &r.jobs {
        let _ = writeln!(
            s,
            "  {:<16} {:<11} {:<28} {:>12.3} {:>12.3} {:>8.3}×",
            j.name, j.kind, j.figure.what, j.figure.alone, j.figure.together, j.figure.slowdown
        );
    }
    for j in &r.jobs {
        let _ = writeln!(s, "\n  {} alone: {}", j.name, j.detail_alone);
        let _ = writeln!(s, "  {} together: {}", j.name, j.detail_together);
        if j.failed_messages > 0 {
            let _ = writeln!(s, "  {} messages never arrived", j.failed_messages);
        }
        if j.blame.is_empty() {
            let _ = writeln!(s, "  no link it used carried another job's bytes at the same time");
            continue;
        }
        let _ = writeln!(s, "  links it shared with other jobs' bytes while its own were there (most first):");
        for b in &j.blame {
            let others: Vec<String> = b.others_bytes.iter().map(|(n, v)| format!("{n} {}", mb(*v))).collect();
            let _ = writeln!(
                s,
                "    {:<36} queue {} peak {:>8.1} KB, max wait {:>8.2} µs, paused {:>8.2} µs, ECN {:>6}; own {}, others: {}",
                b.link,
                b.queue,
                b.queue_peak_bytes as f64 / 1e3,
                b.queue_delay_max_us,
                b.paused_us,
                b.ecn_marked,
                mb(b.own_bytes),
                others.join(", ")
            );
        }
    }
    s
}

fn mb(b: u64) -> String {
    format!("{:.2} MB", b as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_overlap() {
        assert_eq!(merge(vec![(5, 9), (0, 3), (2, 4), (9, 10)]), vec![(0, 4), (5, 10)]);
        assert_eq!(overlap(&[(0, 4), (5, 10)], &[(3, 6), (8, 20)]), 1 + 1 + 2);
        assert_eq!(overlap(&[(0, 1)], &[(2, 3)]), 0);
    }
}
