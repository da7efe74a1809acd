//! The estimate: for one `Scenario`, every collective per step (or per token), its bytes per GPU,
//! the link it crosses, its time by α-β and by the NCCL-like model, what compute hides it, the
//! memory per GPU, the step time, the share of the step the GPU waits on the network, the
//! bottleneck and a verdict.
//!
//! Placement: ranks are numbered tp → cp → dp → pp (innermost first, Megatron's order), GPUs
//! fill nodes in rank order. A group of n ranks with stride S has k = min(n, G/S) ranks in each
//! node (G GPUs per node). Inside one node its bottleneck is the intra-node link; across nodes
//! NCCL runs one ring per NIC, so the group's bus bandwidth is k × the NIC bandwidth per GPU
//! (nccl-tests: 8 GPUs × 400G per node gives busbw ≈ 8 × 50 GB/s × efficiency), or the
//! intra-node link × k/(k−1) if that is slower (each GPU sends (k−1)/k of its bytes over it).
//!
//! Training step (per GPU, busiest pipeline stage):
//!   step = C + E_layer + E_pp + bubble + E_dp
//!   C      = FLOPs on this GPU / sustained FLOP/s
//!   E_layer = TP, SP, CP and EP collectives × (1 − overlap)   (they sit between GEMMs)
//!   E_pp   = 2·m·v stage-boundary sends × (1 − overlap)
//!   bubble = (p − 1)/(v·m) × (C + E_layer + E_pp)            (SC21 §2.2)
//!   E_dp   = DP/ZeRO time not hidden behind the compute it can overlap with
//!
//! Inference: TTFT = prefill compute + its collectives (+ KV transfer when disaggregated);
//! TPOT = p × max(HBM time, compute time) per stage + the decode collectives.

use crate::collective::{alpha_beta_seconds, nccl_seconds_on, Collective, GroupPath, HwClass};
use crate::link::Transport;
use crate::model::ModelSpec;
use crate::scenario::{Recompute, Scenario, Schedule, Workload};
use serde::Serialize;

/// Network-wait shares that separate the verdicts. These are judgement calls, not published
/// figures: below 5% the network is not worth upgrading; above 35% a third of the GPU time is
/// spent waiting on it.
pub const GOOD_SHARE: f64 = 0.05;
pub const ACCEPTABLE_SHARE: f64 = 0.15;
pub const MARGINAL_SHARE: f64 = 0.35;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Good,
    Acceptable,
    Marginal,
    Poor,
    /// Weights, optimizer states, activations or KV cache exceed the GPU memory.
    DoesNotFit,
    /// The link cannot join that many hosts (no switches exist for it).
    Unbuildable,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Good => "good",
            Verdict::Acceptable => "acceptable",
            Verdict::Marginal => "marginal",
            Verdict::Poor => "poor",
            Verdict::DoesNotFit => "does-not-fit",
            Verdict::Unbuildable => "unbuildable",
        }
    }
    /// Good or acceptable: the network does not starve the GPUs.
    pub fn is_acceptable(self) -> bool {
        matches!(self, Verdict::Good | Verdict::Acceptable)
    }
    pub fn from_network_share(share: f64) -> Verdict {
        if share <= GOOD_SHARE {
            Verdict::Good
        } else if share <= ACCEPTABLE_SHARE {
            Verdict::Acceptable
        } else if share <= MARGINAL_SHARE {
            Verdict::Marginal
        } else {
            Verdict::Poor
        }
    }
}

/// Which compute a collective can hide behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hiding {
    /// A fixed share given by `Overlap` (layer collectives, pipeline sends).
    Fixed,
    /// The backward pass of the last micro-batch (gradient reduction once per step).
    LastBackward,
    /// The backward passes of all micro-batches (ZeRO-2/3 reduce-scatter per micro-batch).
    AllBackward,
    /// The forward pass of the first micro-batch (ZeRO-1/2 parameter all-gather).
    FirstForward,
    /// All forward passes (ZeRO-3 parameter prefetch).
    AllForward,
    /// Nothing: on the critical path of a request.
    None,
}

/// One kind of collective in the step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommLine {
    /// Phase it belongs to: "step", "prefill", "decode".
    pub phase: &'static str,
    /// Parallelism dimension: TP, SP, CP, EP, PP, DP, DP-experts, KV.
    pub dimension: &'static str,
    pub collective: Collective,
    /// What the bytes are, with the formula.
    pub what: String,
    /// Collectives of this kind per step (or per prefill / per decode token).
    pub count: f64,
    /// Size of each in nccl-tests convention, bytes.
    pub bytes_each: f64,
    /// Bytes each GPU sends over its bottleneck link per step: count × busbw factor × size.
    pub wire_bytes_per_gpu: f64,
    /// Link that bounds it ("nvlink4", "roce400").
    pub link: String,
    pub crosses_network: bool,
    pub group_ranks: u32,
    pub group_nodes: u32,
    pub bus_gbytes_per_s: f64,
    pub alpha_us: f64,
    pub alpha_beta_seconds_each: f64,
    pub nccl_seconds_each: f64,
    /// NCCL-like choice: "ring/Simple", "tree/LL"...
    pub nccl_choice: String,
    /// count × NCCL-like time.
    pub total_seconds: f64,
    pub hiding: Hiding,
    /// Share of `total_seconds` hidden behind compute.
    pub overlap: f64,
    pub exposed_seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    pub weights_bytes: f64,
    pub gradients_bytes: f64,
    pub optimizer_bytes: f64,
    pub activations_bytes: f64,
    pub kv_cache_bytes: f64,
    pub total_bytes: f64,
    pub usable_bytes: f64,
    pub fits: bool,
}

/// Time budget of one phase (training step, prefill, one decode token).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    pub name: &'static str,
    pub flops_per_gpu: f64,
    pub compute_seconds: f64,
    /// HBM-bound time: weight and KV reads for inference, the optimizer step for training.
    pub memory_seconds: f64,
    pub bubble_fraction: f64,
    pub bubble_seconds: f64,
    pub exposed_comm_seconds: f64,
    /// Exposed time on links between nodes, bubble inflation included.
    pub network_wait_seconds: f64,
    pub seconds: f64,
    pub network_share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// Training: step time. Inference: time per output token.
    pub step_seconds: f64,
    pub tokens_per_s: f64,
    /// Training only: model FLOPs per GPU per second over the whole step, and that over peak.
    pub model_tflops_per_gpu: Option<f64>,
    pub mfu: Option<f64>,
    /// Inference only.
    pub ttft_seconds: Option<f64>,
    pub request_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub title: String,
    pub layout: String,
    pub nodes: u32,
    pub memory: Memory,
    pub comm: Vec<CommLine>,
    pub phases: Vec<Phase>,
    pub headline: Headline,
    /// Largest share of any phase spent waiting on the network.
    pub network_share: f64,
    pub bottleneck: String,
    pub verdict: Verdict,
    pub verdict_reason: String,
    pub assumptions: Vec<String>,
}

/// Where a group of `size` ranks with rank stride `stride` runs, and over which link.
pub(crate) struct Placement {
    pub path: GroupPath,
    pub link: String,
    pub network: bool,
}

pub(crate) fn place(s: &Scenario, size: u32, stride: u32) -> Placement {
    let c = &s.cluster;
    let g = c.gpus_per_node.max(1);
    let stride = stride.max(1);
    let intra_class = if c.intra_node.transport == Transport::Nvlink { HwClass::Nvlink } else { HwClass::Pci };
    let per_node = if stride >= g { 1 } else { (g / stride).clamp(1, size.max(1)) };
    let nodes = size.max(1).div_ceil(per_node);
    let intra_bw = c.intra_node.effective_bytes_per_s();
    if nodes <= 1 {
        return Placement {
            path: GroupPath {
                ranks: size,
                nodes: 1,
                bus_bytes_per_s: intra_bw,
                alpha_seconds: c.intra_node.latency_seconds(),
                intra: intra_class,
                ll128: c.intra_node.transport == Transport::Nvlink,
            },
            link: c.intra_node.name.clone(),
            network: false,
        };
    }
    let mut bw = per_node as f64 * c.nic_bytes_per_s_per_gpu();
    if per_node > 1 {
        // One ring per NIC, rail-aligned: in each ring one of the k GPUs of a node sends over the
        // network and k−1 over the intra-node link, so a GPU moves 1/k of its bytes through its
        // NIC and (k−1)/k through NVLink/PCIe; the slower side bounds the collective.
        let k = per_node as f64;
        bw = bw.min(intra_bw * k / (k - 1.0));
    }
    let nics = format!("{}×{}/node", c.network.name, c.nics_per_node);
    Placement {
        path: GroupPath {
            ranks: size,
            nodes,
            bus_bytes_per_s: bw,
            alpha_seconds: c.network.latency_seconds(),
            intra: intra_class,
            ll128: c.network.transport == Transport::Rdma && c.intra_node.transport == Transport::Nvlink,
        },
        link: nics,
        network: true,
    }
}

/// The path of a group of `size` ranks with rank stride `stride` (tp = 1, cp = tp, dp = tp·cp,
/// pp = tp·cp·dp): node count, bottleneck bandwidth and hop latency.
pub fn place_group(s: &Scenario, size: u32, stride: u32) -> GroupPath {
    place(s, size, stride).path
}

struct LineSpec {
    phase: &'static str,
    dimension: &'static str,
    collective: Collective,
    what: String,
    count: f64,
    bytes_each: f64,
    size: u32,
    stride: u32,
    hiding: Hiding,
    overlap: f64,
}

/// Bus bandwidth of an all-to-all over `nodes` nodes with k = n/nodes ranks in each: unlike a
/// ring, every rank sends (n−k)/n of its buffer off-node through its own NIC share and (k−1)/n
/// over the intra-node link, so busbw = ((n−1)/n) / max((n−k)/n / B_nic, (k−1)/n / B_intra).
pub fn all_to_all_bus_bytes_per_s(n: u32, nodes: u32, nic_bytes_per_s: f64, intra_bytes_per_s: f64) -> f64 {
    let n = n.max(1) as f64;
    let k = (n / nodes.max(1) as f64).max(1.0);
    let off_node = (n - k) / n / nic_bytes_per_s;
    let on_node = (k - 1.0) / n / intra_bytes_per_s;
    let worst = off_node.max(on_node);
    if worst > 0.0 {
        (n - 1.0) / n / worst
    } else {
        intra_bytes_per_s
    }
}

fn line(s: &Scenario, l: LineSpec) -> CommLine {
    let mut pl = place(s, l.size, l.stride);
    if l.collective == Collective::AllToAll && pl.path.nodes > 1 {
        pl.path.bus_bytes_per_s = all_to_all_bus_bytes_per_s(
            pl.path.ranks,
            pl.path.nodes,
            s.cluster.nic_bytes_per_s_per_gpu(),
            s.cluster.intra_node.effective_bytes_per_s(),
        );
    }
    let ab = alpha_beta_seconds(l.collective, l.bytes_each, &pl.path);
    let arch = crate::tuning::GpuArch::from_gpu_name(&s.cluster.gpu.name);
    let nc = nccl_seconds_on(l.collective, l.bytes_each, &pl.path, arch);
    let total = l.count * nc.seconds;
    let overlap = if l.hiding == Hiding::Fixed { l.overlap } else { 0.0 };
    CommLine {
        phase: l.phase,
        dimension: l.dimension,
        collective: l.collective,
        what: l.what,
        count: l.count,
        bytes_each: l.bytes_each,
        wire_bytes_per_gpu: l.count * l.collective.wire_bytes_per_rank(l.bytes_each, l.size),
        link: pl.link,
        crosses_network: pl.network,
        group_ranks: l.size,
        group_nodes: pl.path.nodes,
        bus_gbytes_per_s: pl.path.bus_bytes_per_s / 1e9,
        alpha_us: pl.path.alpha_seconds * 1e6,
        alpha_beta_seconds_each: ab,
        nccl_seconds_each: nc.seconds,
        nccl_choice: format!(
            "{}/{}",
            match (l.collective, nc.algorithm) {
                // NCCL runs these as point-to-point sends over the ring's channels.
                (Collective::AllToAll | Collective::SendRecv, _) => "p2p",
                (_, a) => a.name(),
            },
            nc.protocol.name()
        ),
        total_seconds: total,
        hiding: l.hiding,
        overlap,
        exposed_seconds: total * (1.0 - overlap),
    }
}

/// Megatron TP traffic per layer per micro-batch, elements through each GPU's link:
/// 4 all-reduces (2 forward, 2 backward) of b·s·h, ring factor 2(t−1)/t → 8·b·s·h·(t−1)/t.
pub fn tp_elements_per_layer_per_microbatch(b: f64, s: f64, h: f64, t: u32) -> f64 {
    if t <= 1 {
        return 0.0;
    }
    let t = t as f64;
    8.0 * b * s * h * (t - 1.0) / t
}

/// Data-parallel bytes each GPU sends per step for `params` parameters on `n` ranks, one
/// micro-batch, gradients and parameters in `bytes_per_param`: all-reduce (ZeRO 0) or
/// reduce-scatter + all-gather (ZeRO 1/2) move 2(n−1)/n·Ψ; ZeRO-3 adds a second parameter
/// all-gather (forward and backward): 3(n−1)/n·Ψ, 1.5× plain DP.
pub fn dp_bytes_per_gpu(zero: u8, params: f64, bytes_per_param: f64, n: u32) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let f = (n as f64 - 1.0) / n as f64;
    let collectives = if zero >= 3 { 3.0 } else { 2.0 };
    collectives * f * params * bytes_per_param
}

/// Activation bytes one layer keeps for its backward pass, per micro-batch, counted the way
/// Korthikanti et al. do (arXiv 2205.05198 §4) but for a Llama-style layer: RMSNorm, GQA or
/// MLA attention computed by a fused (flash) kernel, SwiGLU MLP or top-k experts, no dropout.
///
/// Per token, in elements: outside the tensor-parallel regions the two norm inputs and the two
/// GEMM inputs (4h, divided by t only with sequence parallelism); inside them Q, K, V, the
/// attention output (2·q + kv) and the MLP's gate, up and product (3f; for MoE k·(h + 3f_e)),
/// divided by t. `Selective` = flash attention: no score matrix; `None` adds the paper's
/// 5·a·s/t bytes per token for scores and softmax; `Full` keeps only the layer input (h).
pub fn activation_bytes_per_layer(m: &ModelSpec, s: f64, b: f64, t: f64, sp: bool, r: Recompute, beta: f64) -> f64 {
    let h = m.hidden as f64;
    let outside_div = if sp { t } else { 1.0 };
    if r == Recompute::Full {
        return s * b * beta * h / outside_div;
    }
    let q = m.attention_width();
    let kv = match m.kv_latent_dim {
        Some(l) => l as f64,
        None => 2.0 * m.kv_heads as f64 * m.head_dim as f64,
    };
    let mlp =
        if m.is_moe() { m.top_k as f64 * (h + 3.0 * m.expert_ffn_hidden as f64) } else { 3.0 * m.ffn_hidden as f64 };
    let per_token = beta * (4.0 * h / outside_div + (2.0 * q + kv + mlp) / t);
    let scores = if r == Recompute::None { 5.0 * m.heads as f64 * s / t } else { 0.0 };
    s * b * (per_token + scores)
}

/// Parameters held by one GPU: (dense, experts).
fn params_per_gpu(s: &Scenario) -> (f64, f64) {
    let p = &s.parallel;
    let m = &s.model;
    let tp = p.tp as f64 * p.pp as f64;
    (m.dense_params() / tp, m.expert_params() / (tp * p.ep as f64))
}

/// Layers on the busiest pipeline stage.
fn layers_per_stage(s: &Scenario) -> f64 {
    s.model.layers.div_ceil(s.parallel.pp) as f64
}

fn moe_layers_per_stage(s: &Scenario) -> f64 {
    if !s.model.is_moe() {
        return 0.0;
    }
    s.model.moe_layers.div_ceil(s.parallel.pp) as f64
}

/// The estimate. The scenario must have passed `Scenario::validate`.
pub fn estimate(s: &Scenario) -> Estimate {
    match &s.workload {
        Workload::Training(_) => training(s),
        Workload::Inference(_) => inference(s),
    }
}

fn training(s: &Scenario) -> Estimate {
    let Workload::Training(w) = &s.workload else { unreachable!("training() on a training workload") };
    let p = &s.parallel;
    let mdl = &s.model;
    let c = &s.cluster;
    let (t, cp, pp, dp, ep) = (p.tp, p.cp, p.pp, p.dp, p.ep);
    let b = w.micro_batch as f64;
    let seq = w.seq_len as f64;
    let s_c = seq / cp as f64;
    let h = mdl.hidden as f64;
    let beta = s.precision.activation_bytes();
    let m = w.micro_batches(dp).max(1) as f64;
    let v = p.v() as f64;
    let lp = layers_per_stage(s);
    let recompute_extra = if p.recompute == Recompute::Full { 1.5 } else { 1.0 };

    let mut lines = Vec::new();
    // Tensor parallel: 4 collectives of b·s·h per layer per micro-batch (SC21 §3.2); sequence
    // parallelism turns each all-reduce into an all-gather plus a reduce-scatter of the same bytes.
    if t > 1 {
        let size = b * s_c * h * beta;
        let count = 4.0 * lp * m * recompute_extra;
        let formula = format!(
            "b·s·h·β = {}·{}·{}·{} B, 4 per layer × {} layers × {} micro-batches{}",
            b,
            s_c,
            h,
            beta,
            lp,
            m,
            if recompute_extra > 1.0 { " × 1.5 (full recompute)" } else { "" }
        );
        if p.sequence_parallel {
            for coll in [Collective::AllGather, Collective::ReduceScatter] {
                lines.push(line(
                    s,
                    LineSpec {
                        phase: "step",
                        dimension: "SP",
                        collective: coll,
                        what: formula.clone(),
                        count,
                        bytes_each: size,
                        size: t,
                        stride: 1,
                        hiding: Hiding::Fixed,
                        overlap: s.overlap.tp,
                    },
                ));
            }
        } else {
            lines.push(line(
                s,
                LineSpec {
                    phase: "step",
                    dimension: "TP",
                    collective: Collective::AllReduce,
                    what: formula,
                    count,
                    bytes_each: size,
                    size: t,
                    stride: 1,
                    hiding: Hiding::Fixed,
                    overlap: s.overlap.tp,
                },
            ));
        }
    }
    // Context parallel: K and V of the whole sequence gathered in forward and again in backward,
    // their gradients reduce-scattered (all-gather based CP, as in Llama 3).
    if cp > 1 {
        let kv_width = match mdl.kv_latent_dim {
            Some(l) => l as f64,
            None => 2.0 * (mdl.kv_heads as f64 / t as f64).max(1.0) * mdl.head_dim as f64,
        };
        let size = b * seq * kv_width * beta;
        let what = format!("K,V of the full sequence b·s·kv_width·β = {}·{}·{}·{} B per layer", b, seq, kv_width, beta);
        lines.push(line(
            s,
            LineSpec {
                phase: "step",
                dimension: "CP",
                collective: Collective::AllGather,
                what: what.clone(),
                count: 2.0 * lp * m,
                bytes_each: size,
                size: cp,
                stride: t,
                hiding: Hiding::Fixed,
                overlap: s.overlap.cp,
            },
        ));
        lines.push(line(
            s,
            LineSpec {
                phase: "step",
                dimension: "CP",
                collective: Collective::ReduceScatter,
                what,
                count: lp * m,
                bytes_each: size,
                size: cp,
                stride: t,
                hiding: Hiding::Fixed,
                overlap: s.overlap.cp,
            },
        ));
    }
    // Expert parallel: dispatch and combine all-to-all per MoE layer, forward and backward;
    // each token sends its hidden state to top_k experts (DeepSeek-V3 §3.2, DeepEP).
    if ep > 1 {
        let tokens = b * s_c / if p.sequence_parallel { t as f64 } else { 1.0 };
        let fanout = mdl.dispatch_fanout(place(s, ep, t * cp).path.nodes > 1);
        let size = tokens * fanout * h * beta;
        let what = format!("tokens·k·h·β = {}·{}·{}·{} B, dispatch + combine, fwd + bwd", tokens, fanout, h, beta);
        lines.push(line(
            s,
            LineSpec {
                phase: "step",
                dimension: "EP",
                collective: Collective::AllToAll,
                what,
                count: 4.0 * moe_layers_per_stage(s) * m * recompute_extra,
                bytes_each: size,
                size: ep,
                stride: t * cp,
                hiding: Hiding::Fixed,
                overlap: s.overlap.ep,
            },
        ));
    }
    // Pipeline: one activation forward and one gradient backward per micro-batch per chunk;
    // with TP the boundary tensor is scattered over the TP ranks (SC21 §4.1).
    if pp > 1 {
        let size = b * s_c * h * beta / t as f64;
        let what = format!("b·s·h·β/t = {}·{}·{}·{}/{} B, 2 × {} micro-batches × v={}", b, s_c, h, beta, t, m, v);
        lines.push(line(
            s,
            LineSpec {
                phase: "step",
                dimension: "PP",
                collective: Collective::SendRecv,
                what,
                count: 2.0 * m * v,
                bytes_each: size,
                size: 2,
                stride: t * cp * dp,
                hiding: Hiding::Fixed,
                overlap: s.overlap.pp,
            },
        ));
    }
    // Data parallel over dp·cp ranks (CP ranks hold the same weights); experts over dp/ep·cp.
    let (dense_params, expert_params) = params_per_gpu(s);
    // Gradients are reduced in `grad_reduce` (FP32 or 16-bit); 8-bit gradients are not modelled.
    let gbytes = s.grad_reduce.activation_bytes();
    let wbytes = s.precision.weight_bytes();
    let zero = p.zero.0;
    let groups = [("DP", dense_params, dp * cp, t), ("DP-experts", expert_params, (dp / ep) * cp, t * cp * ep)];
    for (dim, params, n, stride) in groups {
        if params <= 0.0 || n <= 1 {
            continue;
        }
        let gsize = params * gbytes;
        let wsize = params * wbytes;
        let ps = format!("{:.3e} params", params);
        // FSDP gathers and reduces layer by layer, and DDP/Megatron reduce in buckets as the
        // backward pass frees them: one collective per layer, so the latency term counts once
        // per layer (it is what makes a 4,096-rank ZeRO-3 ring slow).
        let buckets = lp;
        let mut push = |coll, what: String, count: f64, size: f64, hiding| {
            lines.push(line(
                s,
                LineSpec {
                    phase: "step",
                    dimension: dim,
                    collective: coll,
                    what: format!("{what}, in {buckets} per-layer buckets"),
                    count: count * buckets,
                    bytes_each: size / buckets,
                    size: n,
                    stride,
                    hiding,
                    overlap: 0.0,
                },
            ));
        };
        match zero {
            0 => push(
                Collective::AllReduce,
                format!("gradients Ψ·β = {ps} × {gbytes} B"),
                1.0,
                gsize,
                Hiding::LastBackward,
            ),
            1 => {
                push(
                    Collective::ReduceScatter,
                    format!("gradients Ψ·β = {ps} × {gbytes} B (ZeRO-1)"),
                    1.0,
                    gsize,
                    Hiding::LastBackward,
                );
                push(
                    Collective::AllGather,
                    format!("updated parameters Ψ·β = {ps} × {wbytes} B (ZeRO-1)"),
                    1.0,
                    wsize,
                    Hiding::FirstForward,
                );
            }
            2 => {
                push(
                    Collective::ReduceScatter,
                    format!("gradients per micro-batch Ψ·β = {ps} × {gbytes} B (ZeRO-2)"),
                    m,
                    gsize,
                    Hiding::AllBackward,
                );
                push(
                    Collective::AllGather,
                    format!("updated parameters Ψ·β = {ps} × {wbytes} B (ZeRO-2)"),
                    1.0,
                    wsize,
                    Hiding::FirstForward,
                );
            }
            _ => {
                push(
                    Collective::AllGather,
                    format!("parameters before each forward Ψ·β = {ps} × {wbytes} B (ZeRO-3)"),
                    m,
                    wsize,
                    Hiding::AllForward,
                );
                push(
                    Collective::AllGather,
                    format!("parameters before each backward Ψ·β = {ps} × {wbytes} B (ZeRO-3)"),
                    m,
                    wsize,
                    Hiding::AllBackward,
                );
                push(
                    Collective::ReduceScatter,
                    format!("gradients per micro-batch Ψ·β = {ps} × {gbytes} B (ZeRO-3)"),
                    m,
                    gsize,
                    Hiding::AllBackward,
                );
            }
        }
    }

    // Compute on the busiest stage: FLOPs of the whole step spread over all GPUs, scaled by the
    // stage's share of layers; full recompute adds one forward (2N of 6N).
    let tokens = w.tokens_per_step();
    let model_flops = tokens * mdl.training_flops_per_token(w.seq_len);
    let imbalance = lp * pp as f64 / mdl.layers as f64;
    let hw_factor = if p.recompute == Recompute::Full { 4.0 / 3.0 } else { 1.0 };
    let flops_per_gpu = model_flops / c.gpus as f64 * imbalance * hw_factor;
    let compute = flops_per_gpu / (c.sustained_tflops * 1e12);

    // A collective can only hide behind compute that exists: if the requested overlaps would
    // hide more than the step computes, scale them down together.
    let hidden_fixed =
        lines.iter().filter(|l| l.hiding == Hiding::Fixed).map(|l| l.total_seconds * l.overlap).fold(0.0, |a, b| a + b);
    if hidden_fixed > compute {
        let scale = compute / hidden_fixed;
        for l in lines.iter_mut().filter(|l| l.hiding == Hiding::Fixed) {
            l.overlap *= scale;
            l.exposed_seconds = l.total_seconds * (1.0 - l.overlap);
        }
    }
    // Hide DP/ZeRO collectives behind the compute each can overlap with.
    let window = |hd: Hiding| match hd {
        Hiding::LastBackward => compute * 2.0 / 3.0 / m,
        Hiding::AllBackward => compute * 2.0 / 3.0,
        Hiding::FirstForward => compute / 3.0 / m,
        Hiding::AllForward => compute / 3.0,
        Hiding::Fixed | Hiding::None => 0.0,
    };
    for hd in [Hiding::LastBackward, Hiding::AllBackward, Hiding::FirstForward, Hiding::AllForward] {
        let total: f64 = lines.iter().filter(|l| l.hiding == hd).map(|l| l.total_seconds).fold(0.0, |a, b| a + b);
        if total <= 0.0 {
            continue;
        }
        let hidden_share = (window(hd) / total).min(1.0);
        for l in lines.iter_mut().filter(|l| l.hiding == hd) {
            l.overlap = hidden_share;
            l.exposed_seconds = l.total_seconds * (1.0 - hidden_share);
        }
    }

    let is_layer = |l: &&CommLine| matches!(l.dimension, "TP" | "SP" | "CP" | "EP" | "PP");
    let layer_exposed: f64 = lines.iter().filter(is_layer).map(|l| l.exposed_seconds).fold(0.0, |a, b| a + b);
    let layer_net: f64 =
        lines.iter().filter(is_layer).filter(|l| l.crosses_network).map(|l| l.exposed_seconds).fold(0.0, |a, b| a + b);
    let dp_exposed: f64 = lines.iter().filter(|l| !is_layer(l)).map(|l| l.exposed_seconds).fold(0.0, |a, b| a + b);
    let dp_net: f64 = lines
        .iter()
        .filter(|l| !is_layer(l))
        .filter(|l| l.crosses_network)
        .map(|l| l.exposed_seconds)
        .fold(0.0, |a, b| a + b);
    let bubble_fraction = if pp > 1 { (pp as f64 - 1.0) / (v * m) } else { 0.0 };
    let bubble = bubble_fraction * (compute + layer_exposed);
    // Optimizer step: Adam is memory-bound; each parameter this GPU updates reads and writes its
    // FP32 states, reads its gradient and writes its 16-bit weight.
    let (opt_shard_dense, opt_shard_expert) =
        if zero >= 1 { ((dp * cp) as f64, ((dp / ep) * cp).max(1) as f64) } else { (1.0, 1.0) };
    let opt_state_bytes = if s.precision == crate::precision::Precision::Fp32 { 8.0 } else { 12.0 };
    let updated_params = dense_params / opt_shard_dense + expert_params / opt_shard_expert;
    let optimizer_seconds =
        updated_params * (2.0 * opt_state_bytes + gbytes + wbytes) / (c.gpu.hbm_tbytes_per_s * 1e12 * c.hbm_efficiency);
    let step = compute + layer_exposed + bubble + dp_exposed + optimizer_seconds;
    let net_wait = layer_net * (1.0 + bubble_fraction) + dp_net;
    let phase = Phase {
        name: "step",
        flops_per_gpu,
        compute_seconds: compute,
        memory_seconds: optimizer_seconds,
        bubble_fraction,
        bubble_seconds: bubble,
        exposed_comm_seconds: layer_exposed * (1.0 + bubble_fraction) + dp_exposed,
        network_wait_seconds: net_wait,
        seconds: step,
        network_share: net_wait / step,
    };

    // Memory per GPU (mixed-precision Adam: 2 + 2 + 12 bytes per parameter, ZeRO paper §3).
    let shard_dense = (dp * cp) as f64;
    let shard_expert = ((dp / ep) * cp).max(1) as f64;
    let opt_bytes = if s.precision == crate::precision::Precision::Fp32 { 8.0 } else { 12.0 };
    let sharded = |dense: f64, expert: f64, on: bool| {
        if on {
            dense / shard_dense + expert / shard_expert
        } else {
            dense + expert
        }
    };
    // ZeRO-3 gathers each layer's full parameters before using it, and prefetches the next:
    // two unsharded layers live beside the shards.
    let gather_buffers = if zero >= 3 { 2.0 * (dense_params + expert_params) / lp * wbytes } else { 0.0 };
    let weights = sharded(dense_params, expert_params, zero >= 3) * wbytes + gather_buffers;
    let grads = sharded(dense_params, expert_params, zero >= 2) * gbytes;
    let optimizer = sharded(dense_params, expert_params, zero >= 1) * opt_bytes;
    let per_layer = activation_bytes_per_layer(mdl, s_c, b, t as f64, p.sequence_parallel, p.recompute, beta);
    let in_flight = match p.schedule {
        Schedule::Gpipe => m,
        _ if pp > 1 => (pp as f64).min(m) * if v > 1.0 { 1.0 + (pp as f64 - 1.0) / (pp as f64 * v) } else { 1.0 },
        _ => 1.0,
    };
    // The last stage also holds FP32 logits for the loss: b·s·V·4 / t.
    let logits = b * s_c * mdl.vocab as f64 * 4.0 / t as f64;
    let activations = per_layer * lp * in_flight + logits;
    let memory = memory_total(s, weights, grads, optimizer, activations, 0.0);

    let model_tflops = model_flops / (c.gpus as f64 * step) / 1e12;
    let peak = c.gpu.peak_bf16_tflops * s.precision.peak_multiplier();
    let headline = Headline {
        step_seconds: step,
        tokens_per_s: tokens / step,
        model_tflops_per_gpu: Some(model_tflops),
        mfu: Some(model_tflops / peak),
        ttft_seconds: None,
        request_seconds: None,
    };
    let mut components =
        vec![("compute".to_string(), compute), ("optimizer step (HBM)".to_string(), optimizer_seconds)];
    if bubble > 0.0 {
        components.push((format!("pipeline bubble ({:.1}% of ideal)", bubble_fraction * 100.0), bubble));
    }
    let assumptions = assumptions(s, &[
        format!("pipeline bubble (p−1)/(v·m) = ({}−1)/({}·{}) (SC21 §2.2)", pp, v, m),
        format!("{} micro-batches of {} sequence(s) per pipeline; {} layers on the busiest stage", m, b, lp),
        "DP gradient reduction hides behind the last micro-batch's backward; ZeRO-2/3 per-micro-batch collectives behind all of them".into(),
        format!("model FLOPs per token 6·N_active + 6·L·s·d_attn (causal) = {:.3e}", mdl.training_flops_per_token(w.seq_len)),
        "first stage holds activations of min(p, m) micro-batches (1F1B), × (1 + (p−1)/(p·v)) when interleaved; GPipe holds all m".into(),
        "optimizer step (in the HBM column): Adam reads and writes FP32 master, m and v, reads the gradient, writes the weight".into(),
        "not modelled: embedding/LM-head imbalance, SM contention from overlapped collectives".into(),
    ]);
    finish(s, lines, vec![phase], memory, headline, components, assumptions)
}

fn memory_total(s: &Scenario, weights: f64, grads: f64, optimizer: f64, activations: f64, kv: f64) -> Memory {
    let total = weights + grads + optimizer + activations + kv;
    let usable = s.cluster.usable_hbm_bytes();
    Memory {
        weights_bytes: weights,
        gradients_bytes: grads,
        optimizer_bytes: optimizer,
        activations_bytes: activations,
        kv_cache_bytes: kv,
        total_bytes: total,
        usable_bytes: usable,
        fits: total <= usable,
    }
}

fn inference(s: &Scenario) -> Estimate {
    let Workload::Inference(w) = &s.workload else { unreachable!("inference() on an inference workload") };
    let p = &s.parallel;
    let mdl = &s.model;
    let c = &s.cluster;
    let (t, pp, ep) = (p.tp, p.pp, p.ep);
    let h = mdl.hidden as f64;
    let beta = s.precision.activation_bytes();
    let batch = w.batch as f64;
    let prompt = w.prompt_tokens as f64;
    let out = w.output_tokens as f64;
    let r = c.sustained_tflops * 1e12;
    let hbm = c.gpu.hbm_tbytes_per_s * 1e12 * c.hbm_efficiency;
    let (dense_params, expert_params) = params_per_gpu(s);
    let weights = (dense_params + expert_params) * s.precision.weight_bytes();
    // KV heads are split over TP ranks until each rank holds one; MLA's latent is not split.
    let kv_split = match mdl.kv_latent_dim {
        Some(_) => 1.0,
        None => (t.min(mdl.kv_heads)) as f64,
    };
    let kv_per_token_gpu = mdl.kv_bytes_per_token(beta) / (kv_split * pp as f64);
    let kv = batch * (prompt + out) * kv_per_token_gpu;
    // Prefill working set: one layer's activations at a time (forward only).
    let act = activation_bytes_per_layer(mdl, prompt, batch, t as f64, false, Recompute::Selective, beta);
    let memory = memory_total(s, weights, 0.0, 0.0, act, kv);

    let mut lines = Vec::new();
    let layers = mdl.layers as f64;
    let moe = if mdl.is_moe() { mdl.moe_layers as f64 } else { 0.0 };
    for (phase, tokens) in [("prefill", prompt), ("decode", 1.0)] {
        let tok = batch * tokens;
        if t > 1 {
            lines.push(line(
                s,
                LineSpec {
                    phase,
                    dimension: "TP",
                    collective: Collective::AllReduce,
                    what: format!("tokens·h·β = {}·{}·{} B, 2 per layer × {} layers", tok, h, beta, layers),
                    count: 2.0 * layers,
                    bytes_each: tok * h * beta,
                    size: t,
                    stride: 1,
                    hiding: Hiding::None,
                    overlap: 0.0,
                },
            ));
        }
        if ep > 1 {
            let tok_gpu = tok / t as f64;
            let fanout = mdl.dispatch_fanout(place(s, ep, t * pp).path.nodes > 1);
            lines.push(line(
                s,
                LineSpec {
                    phase,
                    dimension: "EP",
                    collective: Collective::AllToAll,
                    what: format!(
                        "tokens·k·h·β = {}·{}·{}·{} B, dispatch + combine per MoE layer",
                        tok_gpu, fanout, h, beta
                    ),
                    count: 2.0 * moe,
                    bytes_each: tok_gpu * fanout * h * beta,
                    size: ep,
                    stride: t * pp,
                    hiding: Hiding::None,
                    overlap: 0.0,
                },
            ));
        }
        if pp > 1 {
            lines.push(line(
                s,
                LineSpec {
                    phase,
                    dimension: "PP",
                    collective: Collective::SendRecv,
                    what: format!(
                        "tokens·h·β/t = {}·{}·{}/{} B at each of {} stage boundaries",
                        tok,
                        h,
                        beta,
                        t,
                        pp - 1
                    ),
                    count: (pp - 1) as f64,
                    bytes_each: tok * h * beta / t as f64,
                    size: 2,
                    stride: t,
                    hiding: Hiding::None,
                    overlap: 0.0,
                },
            ));
        }
    }
    if w.disaggregated {
        // Each prefill GPU ships its KV shard to its decode peer, all GPUs in parallel; the
        // decode replica sits on other nodes, so the transfer always crosses the network.
        let bytes = batch * prompt * kv_per_token_gpu;
        let mut l = line(
            s,
            LineSpec {
                phase: "prefill",
                dimension: "KV",
                collective: Collective::SendRecv,
                what: format!(
                    "prompt KV cache: batch·prompt·{} B/token ÷ {} shards",
                    mdl.kv_bytes_per_token(beta),
                    kv_split * pp as f64
                ),
                count: 1.0,
                bytes_each: bytes,
                size: 2,
                stride: c.gpus_per_node,
                hiding: Hiding::None,
                overlap: 0.0,
            },
        );
        if !l.crosses_network {
            l = line(
                s,
                LineSpec {
                    phase: "prefill",
                    dimension: "KV",
                    collective: Collective::SendRecv,
                    what: l.what,
                    count: 1.0,
                    bytes_each: bytes,
                    size: 2,
                    stride: c.gpus_per_node.max(1).saturating_mul(2),
                    hiding: Hiding::None,
                    overlap: 0.0,
                },
            );
        }
        lines.push(l);
    }

    // Prefill: stages run one after another for one batch, t GPUs busy at a time.
    let prefill_flops = batch * mdl.forward_flops(prompt, 0.0) / (t as f64 * pp as f64);
    let prefill_compute = prefill_flops * pp as f64 / r;
    let prefill_mem = weights * pp as f64 / hbm;
    // Decode at the mean context: each stage reads its weights and KV once per token.
    let ctx = prompt + out / 2.0;
    let decode_flops = batch * mdl.forward_flops(1.0, ctx) / (t as f64 * pp as f64);
    let kv_read = batch * ctx * kv_per_token_gpu;
    let decode_compute = decode_flops / r * pp as f64;
    let decode_mem = (weights + kv_read) / hbm * pp as f64;
    let mut phases = Vec::new();
    for (name, flops, comp, mem) in
        [("prefill", prefill_flops, prefill_compute, prefill_mem), ("decode", decode_flops, decode_compute, decode_mem)]
    {
        let exposed: f64 = lines.iter().filter(|l| l.phase == name).map(|l| l.exposed_seconds).fold(0.0, |a, b| a + b);
        let net: f64 = lines
            .iter()
            .filter(|l| l.phase == name && l.crosses_network)
            .map(|l| l.exposed_seconds)
            .fold(0.0, |a, b| a + b);
        let secs = comp.max(mem) + exposed;
        phases.push(Phase {
            name,
            flops_per_gpu: flops,
            compute_seconds: comp,
            memory_seconds: mem,
            bubble_fraction: 0.0,
            bubble_seconds: 0.0,
            exposed_comm_seconds: exposed,
            network_wait_seconds: net,
            seconds: secs,
            network_share: net / secs,
        });
    }
    let ttft = phases[0].seconds;
    let tpot = phases[1].seconds;
    let headline = Headline {
        step_seconds: tpot,
        tokens_per_s: p.dp as f64 * batch / tpot,
        model_tflops_per_gpu: None,
        mfu: None,
        ttft_seconds: Some(ttft),
        request_seconds: Some(ttft + out * tpot),
    };
    let components = vec![
        ("prefill compute".to_string(), prefill_compute.max(prefill_mem)),
        (
            if decode_mem >= decode_compute { "decode HBM reads (memory-bound)" } else { "decode compute" }.to_string(),
            decode_compute.max(decode_mem) * out,
        ),
    ];
    let assumptions = assumptions(s, &[
        format!("decode at mean context {} tokens; one batch of {} in flight per replica (PP does not pipeline requests)", ctx, batch),
        format!("HBM achieves {:.0}% of {} TB/s", c.hbm_efficiency * 100.0, c.gpu.hbm_tbytes_per_s),
        "prefill compute-bound, decode max(HBM time, compute time) per stage; collectives on the critical path (no overlap)".into(),
    ]);
    finish(s, lines, phases, memory, headline, components, assumptions)
}

fn assumptions(s: &Scenario, extra: &[String]) -> Vec<String> {
    let c = &s.cluster;
    let mut a = vec![
        {
            let peak = c.gpu.peak_bf16_tflops * s.precision.peak_multiplier();
            format!("{} sustains {:.0} TFLOP/s of model math while busy: {:.1}% of its {:.0} TFLOP/s dense {} tensor peak",
                c.gpu.name, c.sustained_tflops, 100.0 * c.sustained_tflops / peak, peak, s.precision.peak_label())
        },
        format!("{} GPUs per node over {} ({:.0} GB/s effective); network {} at {} × {:.0}% efficiency, {} µs, {} NIC(s) per node ({:.1} GB/s per GPU)",
            c.gpus_per_node, c.intra_node.name, c.intra_node.effective_bytes_per_s() / 1e9, c.network.name, c.network.rate_text(),
            c.network.efficiency * 100.0, c.network.latency_us, c.nics_per_node, c.nic_bytes_per_s_per_gpu() / 1e9),
        format!("overlap of layer collectives: TP {:.0}%, CP {:.0}%, EP {:.0}%, PP {:.0}%",
            s.overlap.tp * 100.0, s.overlap.cp * 100.0, s.overlap.ep * 100.0, s.overlap.pp * 100.0),
        format!("{:.0}% of HBM reserved for context, NCCL buffers and fragmentation", c.memory_reserve * 100.0),
    ];
    a.extend(extra.iter().cloned());
    a
}

fn finish(
    s: &Scenario,
    lines: Vec<CommLine>,
    phases: Vec<Phase>,
    memory: Memory,
    headline: Headline,
    mut components: Vec<(String, f64)>,
    assumptions: Vec<String>,
) -> Estimate {
    // Exposed communication per (dimension, link), as a bottleneck candidate.
    let mut per_dim: Vec<(String, f64)> = Vec::new();
    for l in &lines {
        let key = format!("{} {} over {}", l.dimension, l.collective.name(), l.link);
        let t = if l.phase == "decode" {
            l.exposed_seconds
                * match &s.workload {
                    Workload::Inference(i) => i.output_tokens as f64,
                    _ => 1.0,
                }
        } else {
            l.exposed_seconds
        };
        match per_dim.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v += t,
            None => per_dim.push((key, t)),
        }
    }
    components.extend(per_dim);
    let total: f64 = components.iter().map(|(_, v)| *v).fold(0.0, |a, b| a + b);
    let (name, secs) =
        components
            .iter()
            .fold(("compute".to_string(), f64::MIN), |acc, (k, v)| if *v > acc.1 { (k.clone(), *v) } else { acc });
    let bottleneck = format!("{name} ({:.0}% of the time budget)", 100.0 * secs / total.max(f64::MIN_POSITIVE));

    let network_share = phases.iter().map(|p| p.network_share).fold(0.0, f64::max);
    let worst = phases.iter().fold(&phases[0], |a, p| if p.network_share > a.network_share { p } else { a });
    let nodes_used = match &s.workload {
        Workload::Training(_) => s.cluster.nodes(),
        Workload::Inference(w) => {
            let replica_nodes = (s.parallel.tp * s.parallel.pp).div_ceil(s.cluster.gpus_per_node).max(1);
            replica_nodes.saturating_mul(if w.disaggregated { 2 } else { 1 })
        }
    };
    let crosses = lines.iter().any(|l| l.crosses_network);
    let (verdict, verdict_reason) = if let (Some(max), true) = (s.cluster.network.max_hosts, crosses && nodes_used > 1)
    {
        if nodes_used > max {
            (
                Verdict::Unbuildable,
                format!(
                    "{} hosts must share {}, which has no switches: at most {} hosts in a full mesh",
                    nodes_used, s.cluster.network.name, max
                ),
            )
        } else {
            share_verdict(network_share, worst)
        }
    } else {
        share_verdict(network_share, worst)
    };
    let (verdict, verdict_reason) = if !memory.fits {
        (
            Verdict::DoesNotFit,
            format!(
                "needs {:.1} GB per GPU, {:.1} GB usable; {}",
                memory.total_bytes / 1e9,
                memory.usable_bytes / 1e9,
                memory_hint(s, &memory)
            ),
        )
    } else {
        (verdict, verdict_reason)
    };
    let title = format!(
        "{} · {} · {} · {} × {} ({} per node) · {} inside nodes · {} between nodes",
        s.model.name,
        s.precision.name(),
        match &s.workload {
            Workload::Training(_) => "training",
            Workload::Inference(_) => "inference",
        },
        s.cluster.gpus,
        s.cluster.gpu.name,
        s.cluster.gpus_per_node,
        s.cluster.intra_node.name,
        s.cluster.network.name
    );
    let p = &s.parallel;
    let layout = format!(
        "{} · schedule {}{} · ZeRO-{} · recompute {} · SP {}",
        p.label(),
        p.schedule.name(),
        if p.v() > 1 { format!(" v={}", p.v()) } else { String::new() },
        p.zero.0,
        p.recompute.name(),
        if p.sequence_parallel { "on" } else { "off" }
    );
    Estimate {
        title,
        layout,
        nodes: s.cluster.nodes(),
        memory,
        comm: lines,
        phases,
        headline,
        network_share,
        bottleneck,
        verdict,
        verdict_reason,
        assumptions,
    }
}

/// What would shrink the largest memory term, in the order an engineer would try it.
fn memory_hint(s: &Scenario, m: &Memory) -> String {
    let states = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes;
    if m.kv_cache_bytes > states.max(m.activations_bytes) {
        return "the KV cache dominates: smaller batch or context, or more TP/PP".into();
    }
    if m.activations_bytes > states {
        return match s.parallel.recompute {
            Recompute::Full => "activations dominate: more PP or CP, or a smaller micro-batch".into(),
            _ => "activations dominate: --recompute full, more PP or CP, or a smaller micro-batch".into(),
        };
    }
    match s.parallel.zero.0 {
        z if z < 3 && matches!(s.workload, Workload::Training(_)) => {
            format!("weights, gradients and optimizer states dominate: ZeRO-{} or more TP/PP/GPUs", (z + 1).max(1))
        }
        _ => "weights dominate: more TP/PP (or EP), or a GPU with more memory".into(),
    }
}

fn share_verdict(share: f64, worst: &Phase) -> (Verdict, String) {
    let v = Verdict::from_network_share(share);
    let bound = match v {
        Verdict::Good => format!("≤ {:.0}%", GOOD_SHARE * 100.0),
        Verdict::Acceptable => format!("≤ {:.0}%", ACCEPTABLE_SHARE * 100.0),
        Verdict::Marginal => format!("≤ {:.0}%", MARGINAL_SHARE * 100.0),
        _ => format!("> {:.0}%", MARGINAL_SHARE * 100.0),
    };
    (v, format!("GPUs wait on the network {:.1}% of the {} ({})", share * 100.0, worst.name, bound))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{resolve, HardwareInput, ParallelInput};
    use crate::PlanSpec;

    fn scenario(gpus: u32, tp: u32, pp: u32) -> Scenario {
        resolve(&PlanSpec {
            parallel: ParallelInput { tp: Some(tp), pp: Some(pp), ..Default::default() },
            hardware: HardwareInput { gpus: Some(gpus), ..Default::default() },
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn placement_follows_rank_order() {
        let s = scenario(64, 8, 2);
        // TP8 fills one node: NVLink.
        let tp = place(&s, 8, 1);
        assert_eq!((tp.path.nodes, tp.network), (1, false));
        // DP (stride 8) puts one rank per node: one NIC each.
        let dp = place(&s, 4, 8);
        assert_eq!(dp.path.nodes, 4);
        assert!((dp.path.bus_bytes_per_s - s.cluster.nic_bytes_per_s_per_gpu()).abs() < 1.0);
        // TP16 spans two nodes with 8 ranks in each: 8 NICs, capped by NVLink.
        let tp16 = place(&s, 16, 1);
        assert_eq!(tp16.path.nodes, 2);
        let eight_nics = 8.0 * s.cluster.nic_bytes_per_s_per_gpu();
        let nvlink_side = s.cluster.intra_node.effective_bytes_per_s() * 8.0 / 7.0;
        assert_eq!(tp16.path.bus_bytes_per_s, eight_nics.min(nvlink_side));
        // A stride of 2 on 8-GPU nodes: 4 ranks per node.
        assert_eq!(place(&s, 8, 2).path.nodes, 2);
    }

    #[test]
    fn bubble_and_step_add_up() {
        let s = scenario(64, 8, 4);
        let e = estimate(&s);
        let p = &e.phases[0];
        let m = match &s.workload {
            Workload::Training(t) => t.micro_batches(s.parallel.dp) as f64,
            _ => unreachable!(),
        };
        assert_eq!(p.bubble_fraction, 3.0 / m);
        let layer: f64 = e.comm.iter().filter(|l| !l.dimension.starts_with("DP")).map(|l| l.exposed_seconds).sum();
        let dp: f64 = e.comm.iter().filter(|l| l.dimension.starts_with("DP")).map(|l| l.exposed_seconds).sum();
        let expect =
            p.compute_seconds + layer + p.bubble_fraction * (p.compute_seconds + layer) + dp + p.memory_seconds;
        assert!(p.memory_seconds > 0.0, "the optimizer step takes time");
        assert!((p.seconds - expect).abs() < 1e-9 * expect);
    }

    #[test]
    fn verdict_thresholds_are_ordered() {
        assert_eq!(Verdict::from_network_share(0.01), Verdict::Good);
        assert_eq!(Verdict::from_network_share(0.10), Verdict::Acceptable);
        assert_eq!(Verdict::from_network_share(0.30), Verdict::Marginal);
        assert_eq!(Verdict::from_network_share(0.60), Verdict::Poor);
        assert!(Verdict::Good < Verdict::Poor && Verdict::Poor < Verdict::DoesNotFit);
    }
}
