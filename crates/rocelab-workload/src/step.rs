//! One training step on the twin: compute phases from `rocelab plan`, the communication that
//! crosses the fabric on the packet engine, and what the GPUs wait for.
//!
//! The step is the DAG Megatron-style training runs (Narayanan et al., "Efficient Large-Scale
//! Language Model Training on GPU Clusters Using Megatron-LM", SC21):
//!
//! * **Ranks** are numbered TP fastest, then DP, then PP (plan's convention), on the first
//!   tp·dp·pp / G GPU nodes of the fabric. Two layouts keep every pipeline stage on whole
//!   nodes: TP = the GPUs per node (a stage replica is one node; its G TP ranks compute in
//!   lockstep), or TP = 1 with DP a multiple of G (a replica is one GPU).
//! * **Compute** per micro-batch on a stage: forward F = C / 3m and backward B = 2C / 3m, C the
//!   busiest stage's compute per step from `rocelab plan` (6N FLOPs per token split 2N : 4N),
//!   plus plan's exposed tensor-parallel time split evenly over F and B (TP runs over NVLink
//!   inside the node, off the fabric).
//! * **Pipeline**: non-interleaved 1F1B. Stage s runs min(p − s − 1, m) warm-up forwards, then
//!   alternates one forward and one backward, then drains the backwards. A forward waits for
//!   its activations from stage s − 1, a backward for its gradient from stage s + 1: messages of
//!   plan's PP size (b·s·h·β / t per GPU) on the engine, GPU j of one stage's node to GPU j of
//!   the next stage's node, one connection each (with its own UDP source port).
//! * **Data parallel**: the gradients of each stage (plan's DP bytes per GPU) are all-reduced
//!   over the stage's DP ranks in plan's buckets (one per layer), as DDP and Megatron reduce
//!   while the last micro-batch's backward frees them: bucket k is ready when every replica of
//!   the stage has done (k + 1)/buckets of that backward, and the buckets of one stage run one
//!   after another (one NCCL communicator, one stream). With TP = G, the DP group of TP rank j
//!   is GPU j of every replica: a ring over NIC j of those nodes (one rail); with TP = 1 it is
//!   every GPU of the stage's nodes, on NCCL's rings (`placement`).
//! * **ZeRO-1** (the optimizer state sharded over DP, Megatron's distributed optimizer): the
//!   gradient buckets are reduce-scattered (n − 1 steps of S/n) instead of all-reduced, and the
//!   parameters each rank updated are all-gathered in the same buckets as the step starts
//!   (the previous step's update; Megatron overlaps that gather with the forward): slice k of
//!   a stage's first forward (its layer bucket k) waits for parameter bucket k.
//! * **Expert parallelism** (EP groups of `ep` consecutive replicas; TP = G): each op is cut
//!   into the stage's MoE layers, each its share of the compute, then a dispatch and a
//!   combine all-to-all (plan's EP size per GPU) among GPU j of the group's nodes, per TP rank
//!   j, on rail j; the group's members wait for each other there (the all-to-all is a
//!   rendezvous). The experts' gradients are all-reduced over the replicas that hold the same
//!   experts (q, q + ep, …), in the same buckets as the dense ones, freed as the last
//!   backward's layers end.
//! * **Optimizer** step (plan's HBM-bound Adam time, on the shard under ZeRO-1) once a stage's
//!   last bucket is reduced and every replica's last backward is done; the step ends when
//!   every stage's optimizer has.
//!
//! Reported: the step time; the same DAG with an infinitely fast network, which is
//! (m + p − 1)(F + B) + optimizer (the 1F1B bubble of SC21 §2.2 included); the share of the
//! step GPUs wait on the network, `rocelab_comm_wait_ratio` = (step − that) / step; and which
//! communication holds the step's end (the DP reduction's exposed tail, ZeRO-1's parameter
//! gather, the EP all-to-alls, or pipeline waits).
//!
//! Not yet on the twin (refused with the reason): interleaved schedules, ZeRO-2/3, context
//! parallelism, EP together with ZeRO-1 or with TP = 1, TP across nodes or TP of part of a
//! node.

use crate::placement::{GpuLayout, Placement};
use crate::ring::{Ring, RingPlan, INSTANCE_SHIFT};
use crate::Outcome;
use rocelab_model::{Diagnostic, Model, NodeId, SimTime};
use rocelab_plan::estimate::Estimate;
use rocelab_plan::Scenario;
use rocelab_sim::rng::Rng;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use rocelab_sim::{RunReport, SimOptions};
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;

/// The shape of a step: everything the DAG needs, from plan or given directly.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepPlan {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub micro_batches: u32,
    /// Forward and backward compute of one micro-batch on one stage (TP exposed time included).
    #[serde(rename = "forward_us", serialize_with = "us")]
    pub forward: SimTime,
    #[serde(rename = "backward_us", serialize_with = "us")]
    pub backward: SimTime,
    /// Bytes each GPU sends across a stage boundary per micro-batch (activations forward, the
    /// same size of gradients backward).
    pub pp_bytes: u64,
    /// Gradient bytes per GPU reduced over its DP group once per step: all-reduced (ZeRO 0), or
    /// reduce-scattered (ZeRO-1).
    pub dp_bytes: u64,
    /// ZeRO stage: 0, or 1 (the optimizer state sharded over DP: gradients reduce-scattered,
    /// the updated parameters all-gathered, `ag_bytes` per GPU).
    pub zero: u8,
    /// Parameter bytes per GPU all-gathered per step (ZeRO-1).
    pub ag_bytes: u64,
    /// Expert parallelism: EP group size (1: none), MoE layers of a stage, and the bytes each
    /// GPU puts into one all-to-all (dispatch or combine; nccl-tests' size).
    pub ep: u32,
    pub moe_layers: u32,
    pub ep_bytes: u64,
    /// Expert-parameter gradient bytes per GPU, all-reduced over the dp/ep replicas that hold
    /// the same experts (with EP; without it they are part of `dp_bytes`).
    pub dp_expert_bytes: u64,
    /// DP buckets (one collective each).
    pub buckets: u32,
    #[serde(rename = "optimizer_us", serialize_with = "us")]
    pub optimizer: SimTime,
    /// Channels of each DP ring.
    pub channels: u32,
}

/// The most stages, replicas and micro-batches a message tag can name.
const MAX_STAGES: u32 = 1 << 12;
const MAX_REPLICAS: u32 = 1 << 16;
const MAX_MICRO: u32 = 1 << 16;
/// The instance number of the step's own tags (collectives take 0..OWN).
const OWN: u64 = 0xffff;

fn us<S: serde::Serializer>(t: &SimTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(t.0 as f64 * 1e-6)
}

fn secs(s: f64) -> SimTime {
    SimTime((s.max(0.0) * 1e12).round() as u64)
}

impl StepPlan {
    /// The step `rocelab plan` estimates for `s` (`e` = `rocelab_plan::estimate(s)`), in the
    /// shape the twin runs, or why the twin cannot run it yet.
    pub fn from_estimate(s: &Scenario, e: &Estimate) -> Result<StepPlan, String> {
        let rocelab_plan::scenario::Workload::Training(w) = &s.workload else {
            return Err("the plan is an inference plan; the twin runs training steps".into());
        };
        let p = &s.parallel;
        if p.cp > 1 {
            return Err(format!("context parallelism (cp = {}) is not on the twin yet: give cp = 1", p.cp));
        }
        if p.ep > 1 && p.zero.0 > 0 {
            return Err("expert parallelism with ZeRO-1 is not on the twin yet: give zero = 0".into());
        }
        if p.v() > 1 {
            return Err("interleaved pipeline schedules are not on the twin yet: use the 1F1B schedule".into());
        }
        if p.zero.0 > 1 {
            return Err(format!(
                "ZeRO-{} (per-micro-batch reduce-scatter, parameters gathered every pass) is not on the twin yet: give zero = 0 or 1",
                p.zero.0
            ));
        }
        let phase = e.phases.iter().find(|ph| ph.name == "step").ok_or("plan gave no training phase")?;
        let m = w.micro_batches(p.dp).max(1);
        let mut tp_exposed = 0.0;
        let (mut pp_bytes, mut dp_bytes, mut ag_bytes, mut buckets) = (0.0, 0.0, 0.0, 0u32);
        let (mut ep_bytes, mut dp_expert_bytes) = (0.0, 0.0);
        for l in &e.comm {
            match l.dimension {
                "PP" => pp_bytes = l.bytes_each,
                "EP" => ep_bytes = l.bytes_each,
                // With EP the experts' gradients go over their own (dp/ep)-rank groups.
                "DP-experts" if p.ep > 1 => {
                    dp_expert_bytes += l.bytes_each * l.count;
                    buckets = buckets.max(l.count.round() as u32);
                }
                // ZeRO-1's parameter all-gather; the gradients' all-reduce or reduce-scatter.
                "DP" | "DP-experts" if l.collective == rocelab_plan::collective::Collective::AllGather => {
                    ag_bytes += l.bytes_each * l.count
                }
                "DP" | "DP-experts" => {
                    dp_bytes += l.bytes_each * l.count;
                    buckets = buckets.max(l.count.round() as u32);
                }
                _ if l.crosses_network => {
                    return Err(format!(
                    "{} crosses the network in this plan ({} ranks on {} nodes): the twin runs it only inside a node",
                    l.dimension, l.group_ranks, l.group_nodes
                ))
                }
                _ => tp_exposed += l.exposed_seconds,
            }
        }
        let c = phase.compute_seconds / (3.0 * m as f64);
        let tp_each = tp_exposed / (2.0 * m as f64);
        Ok(StepPlan {
            tp: p.tp,
            pp: p.pp,
            dp: p.dp,
            micro_batches: m,
            forward: secs(c + tp_each),
            backward: secs(2.0 * c + tp_each),
            pp_bytes: pp_bytes.round() as u64,
            dp_bytes: dp_bytes.round() as u64,
            zero: p.zero.0,
            ag_bytes: ag_bytes.round() as u64,
            ep: p.ep.max(1),
            moe_layers: if p.ep > 1 { s.model.moe_layers.div_ceil(p.pp) } else { 0 },
            ep_bytes: ep_bytes.round() as u64,
            dp_expert_bytes: dp_expert_bytes.round() as u64,
            buckets: buckets.max(1),
            optimizer: secs(phase.memory_seconds),
            channels: 2,
        })
    }

    /// The step with an infinitely fast network: (m + p − 1)(F + B) + optimizer.
    pub fn compute_only(&self) -> SimTime {
        // Saturating: a plan can ask for any compute time; `run_step` refuses what overflows.
        let per = self.forward.0.saturating_add(self.backward.0);
        let ops = (self.micro_batches as u64 + self.pp as u64).saturating_sub(1);
        SimTime(ops.saturating_mul(per).saturating_add(self.optimizer.0))
    }
}

/// A step's result on the twin.
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    pub plan: StepPlan,
    pub gpus: u32,
    pub nodes: u32,
    pub step_us: f64,
    /// The same DAG with an infinitely fast network.
    pub compute_only_us: f64,
    /// `rocelab_comm_wait_ratio`: (step − compute only) / step.
    pub comm_wait_ratio: f64,
    /// The longest time a stage waited, after its last backward, for its DP reduction.
    pub dp_exposed_us: f64,
    /// ZeRO-1: the longest time a first forward waited for its parameters' all-gather.
    pub ag_wait_us: f64,
    /// EP: the most time one EP group spent in its all-to-alls (the GPUs wait through them).
    pub ep_wait_us: f64,
    /// The rest of the network wait: stages waiting on pipeline sends.
    pub pp_wait_us: f64,
    /// The communication that holds the step's end.
    pub critical: String,
    /// Messages that never arrived (a QP gave up): the step did not complete.
    pub failed_messages: u64,
    pub events: u64,
    pub data_packets: u64,
    /// What the steady-state fast-forward skipped (`--fast-forward`; absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<rocelab_sim::report::FastForwardUsed>,
    #[serde(skip)]
    pub report: RunReport,
}

/// Where the step's ranks sit on the fabric.
struct Layout {
    /// Per (stage, replica): the connections to the next stage's replica (NIC pairs).
    pp_links: Vec<Vec<(NodeId, NodeId)>>,
    /// Per stage: the DP groups' placements (one ring collective each per bucket), and with
    /// EP the expert-gradient groups (replicas q, q + ep, …).
    dp_groups: Vec<Vec<Placement>>,
    expert_groups: Vec<Vec<Placement>>,
    /// Per stage and EP group e (replicas e·ep .. e·ep + ep − 1): one all-to-all placement per
    /// TP rank (GPU j of each replica's node, on rail j).
    ep_groups: Vec<Vec<Vec<Placement>>>,
    nodes: u32,
}

/// The fabric's GPU nodes, for a step.
fn gpu_layout(m: &Model) -> Result<GpuLayout, Diagnostic> {
    let Placement::Gpus(g) = crate::placement::placement(m).map_err(|mut d| d.remove(0))? else {
        return Err(Diagnostic::new(
            "step",
            "the fabric has no GPU nodes",
            "a training step needs GPU nodes: a [topology.rail_optimized] fabric, or hosts with gpu_node",
        ));
    };
    Ok(g)
}

/// The step's ranks on the GPU nodes of `g` (the fabric's, or a job's share of them).
fn layout(g: &GpuLayout, plan: &StepPlan) -> Result<Layout, Diagnostic> {
    let bad = |what: String, fix: String| Diagnostic::new("step", what, fix);
    let (tp, dp, pp) = (plan.tp, plan.dp, plan.pp);
    let gpus = g.gpus;
    if pp == 0 || dp == 0 || tp == 0 || plan.micro_batches == 0 {
        return Err(bad("tp, dp, pp and micro-batches must be at least 1".into(), "check the plan".into()));
    }
    if pp > MAX_STAGES || dp > MAX_REPLICAS || plan.micro_batches > MAX_MICRO {
        return Err(bad(
            format!("pp = {pp}, dp = {dp}, {} micro-batches", plan.micro_batches),
            format!("the twin runs up to {MAX_STAGES} stages, {MAX_REPLICAS} replicas, {MAX_MICRO} micro-batches"),
        ));
    }
    let by_node = tp == gpus;
    if plan.ep > 1 && !(by_node && dp % plan.ep == 0) {
        return Err(bad(
            format!("ep = {} with tp = {tp}, dp = {dp} on nodes of {gpus} GPUs", plan.ep),
            format!("the twin runs EP with tp = {gpus} (a replica per node) and dp a multiple of ep"),
        ));
    }
    if !(by_node || (tp == 1 && dp % gpus == 0)) {
        return Err(bad(
            format!("tp = {tp}, dp = {dp} on nodes of {gpus} GPUs"),
            format!("give tp = {gpus} (a stage replica per node), or tp = 1 with dp a multiple of {gpus}"),
        ));
    }
    let total = tp as u64 * dp as u64 * pp as u64;
    let nodes = total / gpus as u64;
    if nodes > g.nodes.len() as u64 {
        return Err(bad(
            format!("tp·dp·pp = {total} GPUs, the fabric has {}", g.nodes.len() as u64 * gpus as u64),
            "use a larger fabric or fewer GPUs".into(),
        ));
    }
    // Rank r = j + tp·(d + dp·s): its node and GPU.
    let at = |s: u32, d: u32, j: u32| {
        let r = j as u64 + tp as u64 * (d as u64 + dp as u64 * s as u64);
        ((r / gpus as u64) as usize, (r % gpus as u64) as u32)
    };
    let parts = if by_node { tp } else { 1 };
    let mut pp_links = Vec::with_capacity((pp * dp) as usize);
    for s in 0..pp {
        for d in 0..dp {
            let links = if s + 1 < pp {
                (0..parts)
                    .map(|j| {
                        let (a, ga) = at(s, d, j);
                        let (b, gb) = at(s + 1, d, j);
                        (g.nic_of(a, ga), g.nic_of(b, gb))
                    })
                    .collect()
            } else {
                vec![]
            };
            pp_links.push(links);
        }
    }
    let mut dp_groups = Vec::with_capacity(pp as usize);
    for s in 0..pp {
        let groups = if dp < 2 {
            vec![]
        } else if by_node {
            (0..tp)
                .map(|j| {
                    Placement::Hosts(
                        (0..dp)
                            .map(|d| {
                                let (n, gpu) = at(s, d, j);
                                g.nic_of(n, gpu)
                            })
                            .collect(),
                    )
                })
                .collect()
        } else {
            let first = at(s, 0, 0).0;
            let count = (dp / gpus) as usize;
            vec![Placement::Gpus(GpuLayout {
                nodes: g.nodes[first..first + count].to_vec(),
                gpus,
                intra: g.intra.clone(),
            })]
        };
        dp_groups.push(groups);
    }
    // With EP (TP = G, a replica per node): EP group e of a stage is replicas e·ep..e·ep+ep−1,
    // an all-to-all among GPU j of their nodes for each TP rank j; the experts' gradients are
    // reduced over the replicas holding the same experts, q, q + ep, ….
    let ep = plan.ep.max(1);
    let hosts_of = |s: u32, ds: &mut dyn Iterator<Item = u32>, j: u32| {
        Placement::Hosts(
            ds.map(|d| {
                let (n, gpu) = at(s, d, j);
                g.nic_of(n, gpu)
            })
            .collect(),
        )
    };
    let (mut expert_groups, mut ep_groups) = (vec![], vec![]);
    for s in 0..pp {
        let mut ex = vec![];
        let mut eg = vec![];
        if ep > 1 {
            if dp / ep >= 2 {
                for j in 0..tp {
                    for q in 0..ep {
                        ex.push(hosts_of(s, &mut (q..dp).step_by(ep as usize), j));
                    }
                }
            }
            for e in 0..dp / ep {
                eg.push((0..tp).map(|j| hosts_of(s, &mut (e * ep..(e + 1) * ep), j)).collect());
            }
        }
        expert_groups.push(ex);
        ep_groups.push(eg);
    }
    Ok(Layout { pp_links, dp_groups, expert_groups, ep_groups, nodes: nodes as u32 })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    F(u32),
    B(u32),
}

/// Stage s's 1F1B order of `m` micro-batches over `p` stages.
fn one_f_one_b(s: u32, p: u32, m: u32) -> Vec<Op> {
    let warm = (p - s - 1).min(m);
    let mut v: Vec<Op> = (0..warm).map(Op::F).collect();
    for i in 0..m - warm {
        v.push(Op::F(warm + i));
        v.push(Op::B(i));
    }
    v.extend((m - warm..m).map(Op::B));
    v
}

/// One replica of one stage: its compute timeline.
struct Replica {
    ops: Vec<Op>,
    next: usize,
    busy: bool,
    /// Parts arrived per micro-batch: activations (from the stage before), gradients (after).
    act: Vec<u32>,
    grad: Vec<u32>,
    last_backward_end: SimTime,
    /// ZeRO-1: slices of the first forward done (one per bucket of parameters), when it
    /// started, and how long it waited for parameters.
    slice: u32,
    first_forward_start: Option<SimTime>,
    param_wait: SimTime,
    /// With EP: MoE layers of the current op done (each a compute slice, then a dispatch and a
    /// combine all-to-all with the replica's EP group), and the op's compute time.
    ep_layers: u32,
    op_dur: SimTime,
}

/// What a stage's bucketed DP collectives carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Gradients, freed by the last backward: all-reduce, or reduce-scatter under ZeRO-1.
    Grads,
    /// ZeRO-1's updated parameters, gathered as the step starts, needed by the first forward.
    Params,
    /// The all-to-alls of EP group e (not bucketed).
    Ep(u32),
}

/// A stage's buckets of one phase.
#[derive(Default)]
struct Buckets {
    /// Replicas that have freed bucket k.
    ready: Vec<u32>,
    /// Next bucket to launch.
    next: u32,
    /// Rings of the running bucket still going.
    running: u32,
    /// Buckets done.
    done: u32,
    done_at: Option<SimTime>,
}

/// The DP reduction of one stage.
#[derive(Default)]
struct StageDp {
    grads: Buckets,
    params: Buckets,
    /// Replicas whose last backward is done; the optimizer waits for all and the gradients.
    finished: u32,
    optimizer_started: bool,
}

impl StageDp {
    fn of(&mut self, ph: Phase) -> &mut Buckets {
        match ph {
            Phase::Params => &mut self.params,
            Phase::Grads | Phase::Ep(_) => &mut self.grads,
        }
    }
}

/// A collective of the step running in a tag slot: a DP ring, or an EP all-to-all.
struct RingRun {
    w: Box<dyn Workload>,
    out: Rc<RefCell<Outcome>>,
    expected: u64,
    stage: u32,
    phase: Phase,
}

/// An EP group's all-to-alls: members at the rendezvous, exchanges running, the round
/// (1 dispatch, 2 combine), and time spent in them.
#[derive(Default, Clone)]
struct EpGroup {
    arrived: u32,
    running: u32,
    round: u8,
    since: SimTime,
    busy: u64,
}

// Own tags: kind (4 bits) | stage (12) | replica (16) | micro-batch or bucket (16), under OWN.
const K_COMPUTE: u64 = 0;
const K_ACT: u64 = 1;
const K_GRAD: u64 = 2;
const K_BUCKET: u64 = 3;
const K_OPT: u64 = 4;

fn own(kind: u64, s: u32, d: u32, i: u32) -> u64 {
    OWN << INSTANCE_SHIFT | kind << 44 | (s as u64) << 32 | (d as u64) << 16 | i as u64
}

fn unown(t: u64) -> (u64, u32, u32, u32) {
    ((t >> 44) & 0xf, ((t >> 32) & 0xfff) as u32, ((t >> 16) & 0xffff) as u32, (t & 0xffff) as u32)
}

struct StepWork {
    plan: StepPlan,
    lay: Layout,
    replicas: Vec<Replica>,
    dp: Vec<StageDp>,
    rings: Vec<Option<RingRun>>,
    free_ids: Vec<u16>,
    /// UDP source port per (stage, replica, part) connection.
    pp_sports: Vec<Vec<u16>>,
    /// Messages a stage boundary carries per micro-batch and replica (TP ranks, or 1): the
    /// parts an op waits for.
    parts: u32,
    opt_done: Vec<Option<SimTime>>,
    /// Per stage and EP group.
    ep: Vec<Vec<EpGroup>>,
    failed: u64,
    seed: u64,
    /// The tag instances this step uses: its collectives take `inst_base..inst_base + slots`,
    /// its own tags `own_inst` (0.. and OWN when it runs alone; a range of its own beside
    /// other jobs, `crate::jobs`).
    inst_base: u16,
    own_inst: u16,
}

impl StepWork {
    fn idx(&self, s: u32, d: u32) -> usize {
        (s * self.plan.dp + d) as usize
    }

    /// One of the step's own tags, under its own instance number.
    fn own_tag(&self, kind: u64, s: u32, d: u32, i: u32) -> u64 {
        let t = own(kind, s, d, i) & !(0xffff << INSTANCE_SHIFT);
        t | (self.own_inst as u64) << INSTANCE_SHIFT
    }

    /// The slot of collective instance `id`.
    fn slot(&self, id: u16) -> usize {
        id.wrapping_sub(self.inst_base) as usize
    }

    /// Whether ops are cut into MoE layers with all-to-alls between them.
    fn ep_on(&self) -> bool {
        self.plan.ep > 1 && self.plan.moe_layers > 0
    }

    /// Compute time of MoE layer `k` of an op of `dur` (the layers share it equally).
    fn layer_time(&self, dur: SimTime, k: u32) -> SimTime {
        let n = self.plan.moe_layers.max(1) as u64;
        SimTime((dur.0 * (k as u64 + 1)).div_ceil(n) - (dur.0 * k as u64).div_ceil(n))
    }

    /// Starts the replica's next op if it is free and the op's input has arrived.
    fn try_compute(&mut self, s: u32, d: u32, net: &mut Net<'_, '_>) {
        let parts = self.parts;
        let (p, i) = (self.plan.pp, self.idx(s, d));
        let r = &mut self.replicas[i];
        if r.busy || r.next >= r.ops.len() {
            return;
        }
        let sliced = self.plan.zero == 1 && self.plan.dp > 1 && r.ops[r.next] == Op::F(0);
        let nb = self.plan.buckets as u64;
        let (ready, dur) = match r.ops[r.next] {
            // ZeRO-1: slice j of the first forward (layer bucket j) needs parameter bucket j.
            Op::F(0) if sliced => {
                let f = self.plan.forward.0;
                let j = r.slice as u64;
                let dur = (f * (j + 1)).div_ceil(nb) - (f * j).div_ceil(nb);
                let inputs = s == 0 || r.act[0] >= parts;
                // The forward could start from here on; what it waits beyond is the gather's.
                if inputs && r.first_forward_start.is_none() {
                    r.first_forward_start = Some(net.now());
                }
                (inputs && self.dp[s as usize].params.done > r.slice, SimTime(dur))
            }
            Op::F(k) => (s == 0 || r.act[k as usize] >= parts, self.plan.forward),
            Op::B(k) => (s + 1 == p || r.grad[k as usize] >= parts, self.plan.backward),
        };
        if !ready {
            return;
        }
        r.busy = true;
        let now = net.now();
        r.op_dur = dur;
        r.ep_layers = 0;
        let first = if self.ep_on() { self.layer_time(dur, 0) } else { dur };
        let end = SimTime(now.0 + first.0);
        let last = self.replicas[i].next + 1 == self.replicas[i].ops.len();
        net.wake_at(end, self.own_tag(K_COMPUTE, s, d, 0)).expect("a step's compute within the clock range");
        if last && self.plan.dp > 1 && !self.ep_on() {
            // The last backward frees the buckets one by one as it goes (with EP, as its MoE
            // layers end: `ep_round_done`).
            let nb = self.plan.buckets as u64;
            for k in 0..nb {
                let at = SimTime(now.0 + (dur.0 * (k + 1)).div_ceil(nb));
                net.wake_at(at, self.own_tag(K_BUCKET, s, d, k as u32)).expect("a bucket within the clock range");
            }
        }
    }

    fn compute_done(&mut self, s: u32, d: u32, net: &mut Net<'_, '_>) {
        if self.ep_on() {
            // A MoE layer's compute is done: meet the EP group for its all-to-alls.
            let e = (d / self.plan.ep) as usize;
            let g = &mut self.ep[s as usize][e];
            g.arrived += 1;
            if g.arrived == self.plan.ep {
                g.round = 1;
                g.since = net.now();
                self.launch_ep(s, e as u32, net);
            }
            return;
        }
        self.finish_op(s, d, net);
    }

    /// The replica's current op is done: its sends, the next op.
    fn finish_op(&mut self, s: u32, d: u32, net: &mut Net<'_, '_>) {
        let i = self.idx(s, d);
        let now = net.now();
        let r = &mut self.replicas[i];
        r.busy = false;
        let op = r.ops[r.next];
        if self.plan.zero == 1 && self.plan.dp > 1 && op == Op::F(0) {
            r.slice += 1;
            if r.slice < self.plan.buckets {
                self.try_compute(s, d, net);
                return;
            }
            let start = r.first_forward_start.unwrap_or(now);
            r.param_wait = SimTime(now.0.saturating_sub(start.0 + self.plan.forward.0));
        }
        r.next += 1;
        let finished = r.next == r.ops.len();
        if finished {
            r.last_backward_end = now;
        }
        match op {
            Op::F(k) if s + 1 < self.plan.pp => self.send(s, d, k, K_ACT, net),
            Op::B(k) if s > 0 => self.send(s, d, k, K_GRAD, net),
            _ => {}
        }
        if finished && self.plan.dp <= 1 {
            net.wake_at(SimTime(now.0 + self.plan.optimizer.0), self.own_tag(K_OPT, s, 0, 0))
                .expect("optimizer in range");
        } else if finished {
            self.dp[s as usize].finished += 1;
            self.maybe_optimizer(s, net);
        }
        self.try_compute(s, d, net);
    }

    /// Activations of micro-batch k to stage s + 1, or its gradients to stage s − 1.
    fn send(&mut self, s: u32, d: u32, k: u32, kind: u64, net: &mut Net<'_, '_>) {
        // The connection between stages s and s + 1 of replica d carries both directions.
        let (link_stage, to) = if kind == K_ACT { (s, s + 1) } else { (s - 1, s - 1) };
        let li = self.idx(link_stage, d);
        let links = self.lay.pp_links[li].clone();
        for (j, (a, b)) in links.into_iter().enumerate() {
            let (src, dst) = if kind == K_ACT { (a, b) } else { (b, a) };
            let msg = Message {
                src,
                dst,
                size_bytes: self.plan.pp_bytes.max(1),
                class: None,
                qps: 1,
                tag: self.own_tag(kind, to, d, k),
                start: None,
                sport: Some(self.pp_sports[li][j]),
            };
            net.post(msg).expect("a pipeline send between two hosts of the fabric");
        }
    }

    fn bucket_ready(&mut self, s: u32, k: u32, net: &mut Net<'_, '_>) {
        let dp = self.plan.dp;
        let b = &mut self.dp[s as usize].grads;
        b.ready[k as usize] += 1;
        if b.ready[k as usize] == dp {
            self.try_launch(s, Phase::Grads, net);
        }
    }

    /// Starts stage `s`'s optimizer once every replica's last backward is done and its
    /// gradients are reduced.
    fn maybe_optimizer(&mut self, s: u32, net: &mut Net<'_, '_>) {
        let (dp, nb) = (self.plan.dp, self.plan.buckets);
        let st = &mut self.dp[s as usize];
        if st.optimizer_started || st.finished < dp || st.grads.done < nb {
            return;
        }
        st.optimizer_started = true;
        net.wake_at(SimTime(net.now().0 + self.plan.optimizer.0), self.own_tag(K_OPT, s, 0, 0))
            .expect("optimizer in range");
    }

    /// One all-to-all round of EP group `e` of stage `s`: per TP rank, an exchange among GPU j
    /// of the group's nodes (S/ep to each peer, nccl-tests' all-to-all).
    fn launch_ep(&mut self, s: u32, e: u32, net: &mut Net<'_, '_>) {
        let groups = self.lay.ep_groups[s as usize][e as usize].len();
        self.ep[s as usize][e as usize].running = groups as u32;
        let transfers = crate::p2p::all_to_all(self.plan.ep, self.plan.ep_bytes.max(1));
        for gi in 0..groups {
            let placement = &self.lay.ep_groups[s as usize][e as usize][gi];
            let out = Rc::new(RefCell::new(Outcome::default()));
            let seed = self.seed ^ ((s as u64) << 40 | (e as u64) << 20 | gi as u64) ^ 0xE9;
            let id = self.free_ids.pop().expect("fewer collectives at once than instance numbers");
            let slot = self.slot(id);
            let plan = crate::p2p::ExchangePlan {
                channels: 1,
                qps: crate::QpUse { qps: 1, split: false },
                wire: crate::protocol::Wire::plain(),
                pxn: true,
                seed,
            };
            let mut w = crate::p2p::Exchange::new(placement, &transfers, plan, out.clone()).instance(id);
            let expected = w.chunks_to_deliver();
            w.start(net);
            self.rings[slot] = Some(RingRun { w: Box::new(w), out, expected, stage: s, phase: Phase::Ep(e) });
        }
    }

    /// EP group `e`'s round is over: the combine follows the dispatch; after the combine
    /// every member goes on with its next MoE layer, or ends its op.
    fn ep_round_done(&mut self, s: u32, e: u32, net: &mut Net<'_, '_>) {
        let now = net.now();
        let g = &mut self.ep[s as usize][e as usize];
        if g.round == 1 {
            g.round = 2;
            self.launch_ep(s, e, net);
            return;
        }
        g.round = 0;
        g.arrived = 0;
        g.busy += now.0 - g.since.0;
        let ep = self.plan.ep;
        let (n, nb) = (self.plan.moe_layers, self.plan.buckets);
        for d in e * ep..(e + 1) * ep {
            let i = self.idx(s, d);
            self.replicas[i].ep_layers += 1;
            let (k, dur) = (self.replicas[i].ep_layers, self.replicas[i].op_dur);
            // The last backward frees its gradient buckets as its layers end.
            let r = &self.replicas[i];
            if self.plan.dp > 1 && r.next + 1 == r.ops.len() {
                for b in ((k - 1) * nb).div_ceil(n)..(k * nb).div_ceil(n) {
                    self.bucket_ready(s, b, net);
                }
            }
            if k < self.plan.moe_layers {
                let t = self.layer_time(dur, k);
                net.wake_at(SimTime(now.0 + t.0), self.own_tag(K_COMPUTE, s, d, 0))
                    .expect("a layer within the clock range");
            } else {
                self.finish_op(s, d, net);
            }
        }
    }

    /// Launches the stage's next bucket of `ph` if the one before it is done and every replica
    /// freed it.
    fn try_launch(&mut self, s: u32, ph: Phase, net: &mut Net<'_, '_>) {
        let (dp, nb) = (self.plan.dp, self.plan.buckets);
        let b = self.dp[s as usize].of(ph);
        if b.running > 0 || b.next >= nb || b.ready[b.next as usize] < dp {
            return;
        }
        let k = b.next;
        let total = if ph == Phase::Grads { self.plan.dp_bytes } else { self.plan.ag_bytes };
        let bytes = total / nb as u64 + u64::from((k as u64) < total % nb as u64);
        let dense = self.lay.dp_groups[s as usize].len();
        // The experts' gradients (EP) go in the same bucket, on their own groups.
        let experts = if ph == Phase::Grads { self.lay.expert_groups[s as usize].len() } else { 0 };
        let ebytes = {
            let t = self.plan.dp_expert_bytes;
            t / nb as u64 + u64::from((k as u64) < t % nb as u64)
        };
        let groups = dense + if ebytes > 0 { experts } else { 0 };
        b.next += 1;
        b.running = groups as u32;
        for gi in 0..groups {
            let (placement, bytes) = if gi < dense {
                (&self.lay.dp_groups[s as usize][gi], bytes)
            } else {
                (&self.lay.expert_groups[s as usize][gi - dense], ebytes)
            };
            let n = placement.ranks() as u32;
            let out = Rc::new(RefCell::new(Outcome::default()));
            let plan = RingPlan {
                // All-reduce: 2(n−1) steps; reduce-scatter and all-gather: n−1; of S/n each.
                steps: if ph == Phase::Grads && self.plan.zero == 0 { 2 * (n - 1) } else { n - 1 },
                chunk_bytes: bytes.max(1).div_ceil(n as u64),
                channels: self.plan.channels,
                qps: crate::QpUse { qps: 1, split: false },
                wire: crate::protocol::Wire::plain(),
                // One communicator per group: the same ports for every bucket (parameters and
                // gradients on NCCL communicators of their own).
                seed: self.seed ^ ((s as u64) << 32 | gi as u64) ^ u64::from(ph == Phase::Params) << 63,
            };
            let id = self.free_ids.pop().expect("fewer rings at once than instance numbers");
            let slot = self.slot(id);
            // In lockstep on the flow engine: 128 rings of 192 ranks are 150 M messages
            // otherwise (docs/flow-engine.md, Speed).
            let mut ring = Ring::new(placement, plan, out.clone()).instance(id).lockstep();
            let expected = ring.chunks_to_deliver();
            ring.start(net);
            self.rings[slot] = Some(RingRun { w: Box::new(ring), out, expected, stage: s, phase: ph });
        }
    }

    /// A ring's callback ran: if it is complete, free it and go on with its stage.
    fn ring_progress(&mut self, id: u16, net: &mut Net<'_, '_>) {
        let slot = self.slot(id);
        let Some(run) = self.rings.get(slot).and_then(|r| r.as_ref()) else { return };
        let o = run.out.borrow().clone();
        if o.failed > 0 {
            // A chunk that never arrives stops the ring, as it would hang NCCL: the stage never
            // finishes and the step is reported incomplete. (Its slot is not reused.)
            self.failed += o.failed;
            self.rings[slot] = None;
            return;
        }
        if o.delivered < run.expected {
            return;
        }
        let (s, ph) = (run.stage, run.phase);
        self.rings[slot] = None;
        self.free_ids.push(id);
        if let Phase::Ep(e) = ph {
            let g = &mut self.ep[s as usize][e as usize];
            g.running -= 1;
            if g.running == 0 {
                self.ep_round_done(s, e, net);
            }
            return;
        }
        let nb = self.plan.buckets;
        let b = self.dp[s as usize].of(ph);
        b.running -= 1;
        if b.running > 0 {
            return;
        }
        b.done += 1;
        let all = b.done == nb;
        if all {
            b.done_at = Some(net.now());
        }
        match ph {
            Phase::Grads if all => self.maybe_optimizer(s, net),
            Phase::Params => {
                // A bucket of parameters is in: first forwards waiting on it go on.
                for d in 0..self.plan.dp {
                    self.try_compute(s, d, net);
                }
            }
            Phase::Grads | Phase::Ep(_) => {}
        }
        self.try_launch(s, ph, net);
    }
}

impl Workload for StepWork {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        for s in 0..self.plan.pp {
            if self.plan.zero == 1 && self.plan.dp > 1 {
                // The previous step's updated parameters are all there: every bucket may go.
                let dp = self.plan.dp;
                self.dp[s as usize].params.ready.iter_mut().for_each(|r| *r = dp);
                self.try_launch(s, Phase::Params, net);
            }
            for d in 0..self.plan.dp {
                self.try_compute(s, d, net);
            }
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        let inst = done.tag >> INSTANCE_SHIFT;
        if inst != self.own_inst as u64 {
            let slot = self.slot(inst as u16);
            if let Some(run) = self.rings.get_mut(slot).and_then(|r| r.as_mut()) {
                run.w.on_delivered(done, net);
            }
            self.ring_progress(inst as u16, net);
            return;
        }
        if done.failed {
            self.failed += 1;
            return;
        }
        let (kind, s, d, k) = unown(done.tag);
        let i = self.idx(s, d);
        match kind {
            K_ACT => self.replicas[i].act[k as usize] += 1,
            K_GRAD => self.replicas[i].grad[k as usize] += 1,
            _ => return,
        }
        self.try_compute(s, d, net);
    }

    fn on_wake(&mut self, tag: u64, net: &mut Net<'_, '_>) {
        let inst = tag >> INSTANCE_SHIFT;
        if inst != self.own_inst as u64 {
            let slot = self.slot(inst as u16);
            if let Some(run) = self.rings.get_mut(slot).and_then(|r| r.as_mut()) {
                run.w.on_wake(tag, net);
            }
            self.ring_progress(inst as u16, net);
            return;
        }
        let (kind, s, d, k) = unown(tag);
        match kind {
            K_COMPUTE => self.compute_done(s, d, net),
            K_BUCKET => self.bucket_ready(s, k, net),
            K_OPT => self.opt_done[s as usize] = Some(net.now()),
            _ => {}
        }
    }
}

/// Refuses a step the engine cannot hold: one longer than its clock range, a message beyond
/// 1 TB, more DP rings at once than a tag can name.
fn check_bounds(p: &StepPlan) -> Result<(), Diagnostic> {
    let bad = |what: String, fix: &str| Diagnostic::new("step", what, fix);
    // The compute alone, with room for the network on top.
    if p.compute_only().0 > rocelab_sim::workload::LATEST_START.0 / 4 {
        return Err(bad(
            format!("a step of {:.0} s of compute", p.compute_only().0 as f64 * 1e-12),
            "the twin runs steps of up to a few days of simulated time: check the plan's compute rate and batch",
        ));
    }
    let max = rocelab_sim::traffic::MAX_FLOW_BYTES;
    let bucket = p.dp_bytes.max(p.ag_bytes) / p.buckets.max(1) as u64;
    if p.pp_bytes > max || bucket > max {
        return Err(bad(format!("messages of {} B", p.pp_bytes.max(bucket)), "the engine's messages are 1 TB at most"));
    }
    if p.tp as u64 * p.pp as u64 >= OWN {
        return Err(bad(
            format!("tp × pp = {} DP rings at once", p.tp as u64 * p.pp as u64),
            "the twin runs fewer than 65,535",
        ));
    }
    Ok(())
}

/// What a fabric file tells the planner (`rocelab plan --fabric`, `simulate --step`): GPUs and
/// NICs per node, NIC speed, the intra-node link, the node count, the link layer. A host node is one NIC
/// endpoint; NICs that name the same `gpu_node` sit in one server (rail-optimized fabrics),
/// otherwise each host is a server whose ports are its NICs.
pub fn fabric_facts(model: &Model) -> rocelab_plan::FabricFacts {
    use rocelab_model::Role;
    let hosts: Vec<_> = model.nodes.iter().filter(|n| n.is_host()).collect();
    let mut servers: Vec<u32> = Vec::new();
    let mut ungrouped = 0u32;
    for h in &hosts {
        match h.role {
            Role::Host { gpu_node: Some(g), .. } => {
                if !servers.contains(&g) {
                    servers.push(g);
                }
            }
            _ => ungrouped += 1,
        }
    }
    let (server_count, nics_per_server) = if !servers.is_empty() {
        // Ports, not NIC endpoints: a dual-port NIC (2 × 200G) is two 200G ports in the node,
        // as NCCL sees two net devices.
        let ports: u32 = hosts
            .iter()
            .filter(|h| matches!(h.role, Role::Host { gpu_node: Some(_), .. }))
            .map(|h| h.num_ports.max(1))
            .sum();
        let nics = ports / servers.len() as u32;
        (servers.len() as u32 + ungrouped, nics)
    } else {
        (hosts.len() as u32, hosts.first().map(|h| h.num_ports).unwrap_or(1))
    };
    let first_port = hosts.first().and_then(|h| model.ports.get(h.first_port as usize));
    let gn = &model.gpu_node;
    rocelab_plan::FabricFacts {
        gpus_per_node: Some(gn.gpus).filter(|g| *g > 0),
        nics_per_node: Some(nics_per_server).filter(|n| *n > 0),
        nic_rate_gbps: first_port.map(|p| p.speed.gbps()),
        intra_node: Some(gn.intra_node.clone()).filter(|s| rocelab_plan::link::LinkProfile::preset(s).is_some()),
        intra_node_gbytes_per_s: Some(gn.intra_node_gbytes_per_s).filter(|g| *g > 0.0),
        hosts: Some(server_count).filter(|h| *h > 0),
        gpu: Some(gn.gpu.clone()).filter(|g| rocelab_plan::hardware::GpuSpec::preset(g).is_some()),
        // The latency profile of the fabric's own link layer: IB's presets on InfiniBand.
        transport_preset: Some(if model.is_ib() { "ib" } else { "roce" }.into()),
    }
}

/// A plan file (`text`, read from `file`) resolved on the fabric `m` as `rocelab plan --input
/// FILE --fabric` resolves it, and plan's estimate; an error names the plan file's line.
pub fn plan_on_fabric(file: &str, text: &str, m: &Model) -> Result<(Scenario, Estimate), String> {
    let spec = rocelab_plan::spec::parse_plan_file(file, text)?;
    let scenario = rocelab_plan::resolve(&spec.with_fabric(&fabric_facts(m))).map_err(|e| {
        let (line, col) = rocelab_plan::spec::locate(text, &e.key).unwrap_or((1, 1));
        format!("{file}:{line}:{col}: error: {}: {}\n  = help: {}", e.key, e.message, e.hint)
    })?;
    let est = rocelab_plan::estimate(&scenario);
    Ok((scenario, est))
}

/// [`plan_on_fabric`] as the step the twin runs, with plan's estimate beside it.
pub fn step_plan_on_fabric(file: &str, text: &str, m: &Model) -> Result<(StepPlan, Estimate), String> {
    let (scenario, est) = plan_on_fabric(file, text, m)?;
    Ok((StepPlan::from_estimate(&scenario, &est)?, est))
}

/// Runs one training step of `plan` on `m` (with the fabric file's faults).
pub fn run_step(m: &Model, plan: &StepPlan, opts: SimOptions) -> Result<StepResult, Vec<Diagnostic>> {
    let g = gpu_layout(m).map_err(|d| vec![d])?;
    let work = StepJob::new(&g, plan, opts.seed, 0, OWN as u16)?;
    // Either engine (`opts.engine`): the DAG only posts messages and asks for wake-ups.
    let snap = crate::run_to_end(m, Box::new(work.clone()), opts, false)?;
    let report = RunReport::from_snapshot(&snap, m);
    Ok(work.result(report))
}

/// A training step that can run beside other work in one run (`crate::jobs`): the workload
/// (clone it into the run) and, after the run, its result.
#[derive(Clone)]
pub(crate) struct StepJob(Rc<RefCell<StepWork>>);

impl StepJob {
    /// The step of `plan` on the GPU nodes of `g`, its collectives' tags from `inst_base` up,
    /// its own tags under `own_inst`; refused as `run_step` refuses it.
    pub(crate) fn new(
        g: &GpuLayout,
        plan: &StepPlan,
        seed: u64,
        inst_base: u16,
        own_inst: u16,
    ) -> Result<StepJob, Vec<Diagnostic>> {
        build(g, plan, seed, inst_base, own_inst).map(|w| StepJob(Rc::new(RefCell::new(w))))
    }

    /// Tag instances the step may use: its collective slots and its own.
    pub(crate) fn instances(&self) -> u32 {
        self.0.borrow().rings.len() as u32 + 1
    }

    pub(crate) fn result(&self, report: RunReport) -> StepResult {
        finish(&self.0.borrow(), report)
    }
}

impl Workload for StepJob {
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

fn build(
    g: &GpuLayout,
    plan: &StepPlan,
    seed: u64,
    inst_base: u16,
    own_inst: u16,
) -> Result<StepWork, Vec<Diagnostic>> {
    check_bounds(plan).map_err(|d| vec![d])?;
    let lay = layout(g, plan).map_err(|d| vec![d])?;
    let opts = SimOptions { seed, ..SimOptions::default() };
    let (pp, dp, mb) = (plan.pp, plan.dp, plan.micro_batches);
    let replicas = (0..pp)
        .flat_map(|s| {
            (0..dp).map(move |_| Replica {
                ops: one_f_one_b(s, pp, mb),
                next: 0,
                busy: false,
                act: vec![0; mb as usize],
                grad: vec![0; mb as usize],
                last_backward_end: SimTime(0),
                slice: 0,
                first_forward_start: None,
                param_wait: SimTime(0),
                ep_layers: 0,
                op_dur: SimTime(0),
            })
        })
        .collect();
    let mut rng = Rng::new(opts.seed, 0x5354_4550);
    let pp_sports = lay.pp_links.iter().map(|l| l.iter().map(|_| rng.sport()).collect()).collect();
    // At most, per stage: a bucket's dense and expert rings and every EP group's exchanges.
    let per_stage = (0..pp as usize)
        .map(|s| {
            lay.dp_groups[s].len()
                + lay.expert_groups[s].len()
                + lay.ep_groups[s].iter().map(|g| g.len()).sum::<usize>()
        })
        .max()
        .unwrap_or(0);
    let slots = per_stage * pp as usize;
    if inst_base as usize + slots > own_inst as usize {
        return Err(vec![Diagnostic::new(
            "step",
            format!("{slots} collectives at once"),
            "the twin runs fewer than 65,535: fewer stages, EP groups or TP ranks",
        )]);
    }
    let ep_groups: Vec<Vec<EpGroup>> = lay.ep_groups.iter().map(|g| vec![EpGroup::default(); g.len()]).collect();
    let work = StepWork {
        plan: plan.clone(),
        replicas,
        dp: (0..pp)
            .map(|_| {
                let b = || Buckets { ready: vec![0; plan.buckets as usize], ..Default::default() };
                StageDp { grads: b(), params: b(), ..Default::default() }
            })
            .collect(),
        rings: (0..slots).map(|_| None).collect(),
        free_ids: (0..slots as u16).rev().map(|i| i + inst_base).collect(),
        pp_sports,
        parts: lay.pp_links.iter().map(|l| l.len() as u32).max().unwrap_or(1).max(1),
        opt_done: vec![None; pp as usize],
        ep: ep_groups,
        failed: 0,
        seed: opts.seed,
        lay,
        inst_base,
        own_inst,
    };
    Ok(work)
}

/// The step's figures once its run is over.
fn finish(w: &StepWork, report: RunReport) -> StepResult {
    let plan = &w.plan;
    let (pp, dp) = (plan.pp, plan.dp);
    let nodes = w.lay.nodes;
    let end = w.opt_done.iter().map(|t| t.map(|t| t.0)).collect::<Option<Vec<u64>>>().and_then(|v| v.into_iter().max());
    let compute_only = plan.compute_only().0 as f64 * 1e-6;
    let step_us = match end {
        Some(e) if w.failed == 0 => e as f64 * 1e-6,
        _ => f64::INFINITY,
    };
    // The DP tail: from a stage's last backward to its last bucket reduced.
    let mut dp_exposed = 0.0f64;
    let mut critical_stage = 0;
    for s in 0..pp {
        let last_b = (0..dp).map(|d| w.replicas[w.idx(s, d)].last_backward_end.0).max().unwrap_or(0);
        if let Some(done) = w.dp[s as usize].grads.done_at {
            let tail = done.0.saturating_sub(last_b) as f64 * 1e-6;
            if tail > dp_exposed {
                dp_exposed = tail;
                critical_stage = s;
            }
        }
    }
    let ag_wait = w.replicas.iter().map(|r| r.param_wait.0).max().unwrap_or(0) as f64 * 1e-6;
    let ep_wait = w.ep.iter().flatten().map(|g| g.busy).max().unwrap_or(0) as f64 * 1e-6;
    let wait = (step_us - compute_only).max(0.0);
    let pp_wait = (wait - dp_exposed - ag_wait - ep_wait).max(0.0);
    let reduction = if plan.zero == 1 { "reduce-scatter" } else { "all-reduce" };
    let critical = if wait <= 0.0 {
        "none: the network hides under compute".to_string()
    } else if ep_wait >= pp_wait && ep_wait >= dp_exposed && ep_wait >= ag_wait {
        format!("EP all-to-all ({ep_wait:.1} µs of dispatch and combine per EP group)")
    } else if dp_exposed >= pp_wait && dp_exposed >= ag_wait {
        format!("DP {reduction} of stage {critical_stage} ({dp_exposed:.1} µs past its last backward)")
    } else if ag_wait >= pp_wait {
        format!("ZeRO-1 parameter all-gather ({ag_wait:.1} µs into a first forward)")
    } else {
        format!("pipeline sends between stages ({pp_wait:.1} µs of waits)")
    };
    StepResult {
        plan: plan.clone(),
        gpus: plan.tp * plan.dp * plan.pp,
        nodes,
        step_us,
        compute_only_us: compute_only,
        comm_wait_ratio: if step_us.is_finite() && step_us > 0.0 { wait / step_us } else { 1.0 },
        dp_exposed_us: dp_exposed,
        ag_wait_us: ag_wait,
        ep_wait_us: ep_wait,
        pp_wait_us: pp_wait,
        critical,
        failed_messages: w.failed,
        events: report.events,
        data_packets: report.totals.data_packets_sent,
        fast_forward: report.fast_forward.clone(),
        report,
    }
}

/// The step's report: the twin's figures, and plan's beside them when given (step µs,
/// network wait µs, network share).
pub fn render(r: &StepResult, model_name: &str, fabric: &str, plan: Option<(f64, f64, f64)>) -> String {
    use std::fmt::Write;
    let p = &r.plan;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "training step of {model_name} on the twin of `{fabric}`: TP{} PP{} DP{} ({} GPUs on {} nodes), {} micro-batches, 1F1B",
        p.tp, p.pp, p.dp, r.gpus, r.nodes, p.micro_batches
    );
    let _ = writeln!(
        s,
        "  per micro-batch and stage: forward {:.1} µs, backward {:.1} µs; pipeline sends {} B per GPU; DP {} {} B per GPU in {} buckets{}; optimizer {:.1} µs",
        p.forward.0 as f64 * 1e-6,
        p.backward.0 as f64 * 1e-6,
        p.pp_bytes,
        if p.zero == 1 { "reduce-scatter" } else { "all-reduce" },
        p.dp_bytes,
        p.buckets,
        if p.zero == 1 { format!(", parameter all-gather {} B (ZeRO-1)", p.ag_bytes) } else { String::new() },
        p.optimizer.0 as f64 * 1e-6
    );
    if p.ep > 1 {
        let _ = writeln!(
            s,
            "  EP groups of {}: {} MoE layers per op, each a dispatch and a combine all-to-all of {} B per GPU; experts' gradients {} B per GPU over dp/ep replicas",
            p.ep, p.moe_layers, p.ep_bytes, p.dp_expert_bytes
        );
    }
    let ms = |us: f64| if us.is_finite() { format!("{:.3} ms", us * 1e-3) } else { "did not complete".into() };
    let wait = (r.step_us - r.compute_only_us).max(0.0);
    let _ = writeln!(s, "\n  {:<34} {:>16} {:>16}", "", "twin", "plan");
    let (ps, pw, pr) = plan
        .map_or(("-".into(), "-".into(), "-".into()), |(st, w, sh)| (ms(st), ms(w), format!("{:.1} %", sh * 100.0)));
    let _ = writeln!(s, "  {:<34} {:>16} {:>16}", "step time", ms(r.step_us), ps);
    let _ = writeln!(s, "  {:<34} {:>16} {:>16}", "waiting on the network", ms(wait), pw);
    let _ = writeln!(
        s,
        "  {:<34} {:>16} {:>16}",
        "rocelab_comm_wait_ratio",
        format!("{:.1} %", r.comm_wait_ratio * 100.0),
        pr
    );
    let _ = writeln!(s, "  {:<34} {:>16}", "compute only (bubble included)", ms(r.compute_only_us));
    let _ = writeln!(s, "  {:<34} {:>16}", "DP reduction exposed", ms(r.dp_exposed_us));
    if p.zero == 1 {
        let _ = writeln!(s, "  {:<34} {:>16}", "parameter all-gather waits", ms(r.ag_wait_us));
    }
    if p.ep > 1 {
        let _ = writeln!(s, "  {:<34} {:>16}", "EP all-to-all (per group)", ms(r.ep_wait_us));
    }
    let _ = writeln!(s, "  {:<34} {:>16}", "pipeline waits", ms(r.pp_wait_us));
    if let Some((st, _, _)) = plan {
        if r.step_us.is_finite() && st > 0.0 {
            let _ = writeln!(s, "  twin − plan: {:+.1} % of plan's step", (r.step_us - st) / st * 100.0);
        }
    }
    let _ = writeln!(s, "  critical: {}", r.critical);
    if r.failed_messages > 0 {
        let _ = writeln!(
            s,
            "  {} messages never arrived (a QP exhausted its retries): the step did not complete",
            r.failed_messages
        );
    }
    let _ = writeln!(s, "  {}-level engine: {} events, {} data packets", r.report.engine, r.events, r.data_packets);
    if let Some(line) = r.report.fast_forward_line() {
        let _ = writeln!(s, "{line}");
    }
    s
}

/// The step's workload behind a shared handle, so its state can be read after the run.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_f_one_b_orders_warm_up_steady_and_drain() {
        use Op::{B, F};
        // Stage 0 of 4 with 6 micro-batches: 3 warm-up forwards.
        assert_eq!(one_f_one_b(0, 4, 6), vec![F(0), F(1), F(2), F(3), B(0), F(4), B(1), F(5), B(2), B(3), B(4), B(5)]);
        // The last stage alternates from the start.
        assert_eq!(one_f_one_b(3, 4, 2), vec![F(0), B(0), F(1), B(1)]);
        // Fewer micro-batches than warm-up slots.
        assert_eq!(one_f_one_b(0, 4, 2), vec![F(0), F(1), B(0), B(1)]);
    }

    #[test]
    fn own_tags_round_trip() {
        for (k, s, d, i) in [(K_ACT, 0, 0, 0), (K_OPT, 4095, 65535, 65535), (K_BUCKET, 7, 31, 125)] {
            let t = own(k, s, d, i);
            assert_eq!(t >> INSTANCE_SHIFT, OWN);
            assert_eq!(unown(t), (k, s, d, i));
        }
    }
}
