//! Inference serving on the twin: requests arrive, replicas batch them continuously, and what
//! crosses the fabric (pipeline activations, the disaggregated KV cache) runs on the engine.
//!
//! * **Arrivals**: Poisson at `rate_per_s` drawn from the run's seed, or a trace (one request a
//!   line: arrival time in seconds, prompt tokens, output tokens).
//! * **Replicas** of TP × PP GPUs: TP inside a node (GPUs 0..tp of it, over NVLink/PCIe, off the
//!   fabric, timed by plan's NCCL-like model), PP across `pp` consecutive GPU nodes. Disaggregated
//!   plans get `dp` prefill replicas and `dp` decode replicas (prefill replica k hands its
//!   requests to decode replica k); otherwise `dp` replicas do both.
//! * **Continuous batching** (vLLM's scheduler, Orca's iteration-level scheduling): every
//!   iteration decodes one token of each running request and admits waiting prompts in
//!   arrival order while the token budget (prompt tokens + one per decode) and the batch limit
//!   allow; a prompt larger than the budget runs as its iteration's only prompt (beside
//!   the decodes), as vLLM without chunked prefill runs it.
//!   One iteration is in flight per replica: stage s + 1 starts when stage s's activations
//!   (tokens·h·β/t bytes per GPU, GPU j of one node to GPU j of the next) have arrived.
//! * **Compute** per stage and iteration from plan's model of the GPU (`rocelab_plan`):
//!   max(FLOPs / sustained FLOP/s, (weights + KV read) / HBM bandwidth) + the TP all-reduces
//!   (2 per layer of tokens·h·β); FLOPs are plan's `forward_flops` (2·N_active per token plus
//!   causal attention over the context), KV bytes per token are plan's, split over TP and PP as
//!   plan splits them. One request alone on one node therefore has exactly plan's TTFT and TPOT.
//! * **Disaggregated KV transfer** (as Mooncake and NIXL move it by RDMA writes): each prefill GPU
//!   writes its shard (prompt · KV bytes per token ÷ (min(tp, kv_heads)·pp)) to the same GPU of
//!   the decode replica, either layer by layer as each layer's prefill ends, or whole after the
//!   prefill; the first token counts from the KV cache's arrival.
//!
//! * **MoE expert parallelism** (`ep` > 1, an MoE model): EP groups of `ep` consecutive
//!   replicas of one role run their iterations in lockstep, as DP-attention + EP serving does
//!   (DeepSeek-V3's deployment, SGLang): a member with nothing to do still runs the layers so
//!   that its peers' tokens reach its experts. Each stage's compute is cut at its MoE layers;
//!   after each cut, GPU j of every member dispatches its tokens' hidden states to GPU j of
//!   every other member, and once a member has its own dispatch out and every peer's in, it
//!   sends the experts' outputs back (the combine); a member goes on with the next layer when
//!   every combine is in. Bytes per token copy, as DeepEP's kernels lay their messages out
//!   (deepseek-ai/DeepEP `csrc/kernels/internode_ll.cu`): dispatch in FP8, h bytes + one FP32
//!   scale per 128 channels + a 16-byte header (7,408 B for h = 7168); combine in BF16, 2·h
//!   bytes. Copies per token: an iteration with prompts runs DeepEP's normal kernels, one copy
//!   per destination node (at most `max_nodes_per_token` under node-limited routing,
//!   DeepSeek-V3 §2.1.2); a decode-only iteration its low-latency kernels, one copy per expert
//!   (top-k), RDMA straight to the expert's GPU. A member's copies spread evenly over the `ep`
//!   members, so each peer gets tokens/t · copies / ep of them; a member with no tokens still
//!   sends a 16-byte count. The wait from a member's dispatch to its last combine counts as
//!   waiting on the network (the rendezvous with slower peers included).
//!
//! Reported: TTFT, TPOT (from the first token to the last, over output − 1 tokens) at
//! p50/p90/p99, end-to-end latency, output tokens/s, and per phase the share of the latency
//! spent waiting on the network (pipeline sends and the KV transfer; the rest is compute and
//! queueing), with plan's analytical figures beside them.
//!
//! Not yet on the twin (refused or noted): TP across nodes, DeepEP's two-hop forwarding inside
//! the node (NVLink, off the fabric) and its expert load imbalance, more than one micro-batch in flight through a pipeline,
//! chunked prefill (a prompt runs whole), several tenants on one fabric.

use crate::placement::{GpuLayout, Placement};
use rocelab_model::{Diagnostic, Model, NodeId, SimTime};
use rocelab_plan::collective::{nccl_seconds, Collective, GroupPath};
use rocelab_plan::estimate::Estimate;
use rocelab_plan::model::ModelSpec;
use rocelab_plan::Scenario;
use rocelab_sim::rng::Rng;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use rocelab_sim::{RunReport, SimOptions};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// How the disaggregated KV cache crosses the fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvTransfer {
    /// Each layer's KV as that layer's prefill ends (overlapped with the rest of the prefill).
    #[default]
    Layer,
    /// The whole prompt's KV after the prefill.
    Whole,
}

/// The `[serve]` table of a plan file: the traffic a serving plan meets on the twin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// Poisson arrival rate, requests/s (ignored with a trace).
    pub rate_per_s: f64,
    /// Requests to draw (Poisson).
    pub requests: u32,
    /// A trace file (arrival s, prompt tokens, output tokens a line), relative to the plan file.
    pub trace: Option<String>,
    /// Tokens one iteration may process (prompt tokens + one per decoding request); vLLM's
    /// `max_num_batched_tokens`. 0: 8,192.
    pub token_budget: u32,
    /// Requests decoding at once per replica (vLLM's `max_num_seqs`); 0: the plan's `batch`.
    pub max_batch: u32,
    pub kv_transfer: KvTransfer,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            rate_per_s: 1.0,
            requests: 100,
            trace: None,
            token_budget: 0,
            max_batch: 0,
            kv_transfer: KvTransfer::Layer,
        }
    }
}

/// The most requests one run serves (checked at load with the `[serve]` keys).
pub use rocelab_model::serving::MAX_REQUESTS;

impl ServeConfig {
    /// This `[serve]` table with a `[[workload]] serve` table's keys over it (the table's
    /// trace path is kept as given; the caller resolves it against the fabric file).
    pub fn with_table(mut self, t: &rocelab_model::serving::ServeTable) -> ServeConfig {
        use rocelab_model::serving::KvTransferMode;
        if let Some(r) = t.rate_per_s {
            // Poisson arrivals asked for by the workload replace a trace in the plan file.
            self.rate_per_s = r;
            self.trace = None;
        }
        if let Some(n) = t.requests {
            self.requests = n;
        }
        if t.trace.is_some() {
            self.trace = t.trace.clone();
        }
        if let Some(b) = t.token_budget {
            self.token_budget = b;
        }
        if let Some(b) = t.max_batch {
            self.max_batch = b;
        }
        if let Some(k) = t.kv_transfer {
            self.kv_transfer = match k {
                KvTransferMode::Layer => KvTransfer::Layer,
                KvTransferMode::Whole => KvTransfer::Whole,
            };
        }
        self
    }
}

/// Reads the `[serve]` table of a plan file (absent: the defaults); errors name file:line:col.
pub fn parse_config(file: &str, text: &str) -> Result<ServeConfig, String> {
    #[derive(Deserialize)]
    struct Wrapper {
        #[serde(default)]
        serve: Option<ServeConfig>,
    }
    let w: Wrapper = toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        format!(
            "{file}:{line}:{col}: error: {}\n  = help: [serve] keys are documented in docs/simulate.md",
            e.message().trim()
        )
    })?;
    let c = w.serve.unwrap_or_default();
    let at = |key: &str| {
        let (line, col) = find_key(text, key);
        format!("{file}:{line}:{col}")
    };
    if c.trace.is_none() && !(c.rate_per_s.is_finite() && c.rate_per_s > 0.0) {
        return Err(format!(
            "{}: error: serve.rate_per_s = {}: give a positive rate in requests/s",
            at("rate_per_s"),
            c.rate_per_s
        ));
    }
    if c.trace.is_none() && (c.requests == 0 || c.requests as usize > MAX_REQUESTS) {
        return Err(format!("{}: error: serve.requests = {}: give 1 to {MAX_REQUESTS}", at("requests"), c.requests));
    }
    Ok(c)
}

fn find_key(text: &str, key: &str) -> (usize, usize) {
    for (i, l) in text.lines().enumerate() {
        if let Some(c) = l.find(key).filter(|_| l.trim_start().starts_with(key)) {
            return (i + 1, c + 1);
        }
    }
    (1, 1)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    (before.matches('\n').count() + 1, before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1)
}

/// One request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    pub arrival: SimTime,
    pub prompt: u32,
    pub output: u32,
}

/// Poisson arrivals: `n` requests at `rate_per_s`, every one of `prompt` and `output` tokens,
/// exponential gaps drawn from `seed`.
pub fn poisson(rate_per_s: f64, n: u32, prompt: u32, output: u32, seed: u64) -> Vec<Request> {
    let mut rng = Rng::new(seed, 0x5345_5256);
    let mut t = 0.0f64;
    (0..n)
        .map(|_| {
            t += -(1.0 - rng.unit()).ln() / rate_per_s;
            Request { arrival: SimTime((t * 1e12).round() as u64), prompt, output }
        })
        .collect()
}

/// A trace: one request a line, `arrival_s, prompt_tokens, output_tokens` (commas or blanks);
/// `#` starts a comment, a first line naming the columns is skipped. Errors name file:line:col.
pub fn parse_trace(file: &str, text: &str) -> Result<Vec<Request>, String> {
    let mut out = Vec::new();
    let mut last = 0.0f64;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<(usize, &str)> = split_fields(line);
        if out.is_empty() && fields.first().is_some_and(|(_, f)| f.parse::<f64>().is_err()) {
            continue; // the header
        }
        let err = |col: usize, what: String| {
            format!("{file}:{}:{}: error: {what}\n  = help: a trace line is `arrival_s, prompt_tokens, output_tokens`, e.g. `0.125, 2048, 256`", i + 1, col + 1)
        };
        if fields.len() != 3 {
            return Err(err(0, format!("{} fields, expected 3", fields.len())));
        }
        let (c0, a) = fields[0];
        let arrival: f64 = a.parse().map_err(|_| err(c0, format!("arrival `{a}` is not a number of seconds")))?;
        if !(0.0..1e6).contains(&arrival) {
            return Err(err(c0, format!("arrival {a} s: give 0 to 1,000,000 s")));
        }
        if arrival < last {
            return Err(err(
                c0,
                format!("arrival {a} s is before the previous line's {last} s: sort the trace by arrival"),
            ));
        }
        last = arrival;
        let tokens = |(c, f): (usize, &str), what: &str| -> Result<u32, String> {
            match f.parse::<u32>() {
                Ok(n) if (1..=1 << 24).contains(&n) => Ok(n),
                _ => Err(err(c, format!("{what} `{f}`: give a whole number of tokens, 1 to 16,777,216"))),
            }
        };
        let prompt = tokens(fields[1], "prompt tokens")?;
        let output = tokens(fields[2], "output tokens")?;
        if out.len() >= MAX_REQUESTS {
            return Err(err(0, format!("more than {MAX_REQUESTS} requests")));
        }
        out.push(Request { arrival: SimTime((arrival * 1e12).round() as u64), prompt, output });
    }
    if out.is_empty() {
        return Err(format!("{file}:1:1: error: the trace has no requests\n  = help: one line per request: `arrival_s, prompt_tokens, output_tokens`"));
    }
    Ok(out)
}

/// Fields of a line split on commas and blanks, with their byte columns.
fn split_fields(line: &str) -> Vec<(usize, &str)> {
    let mut v = Vec::new();
    let mut start = None;
    for (i, ch) in line.char_indices() {
        let sep = ch == ',' || ch.is_whitespace();
        match (sep, start) {
            (true, Some(s)) => {
                v.push((s, &line[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        v.push((s, &line[s..]));
    }
    v
}

/// The serving plan the twin runs: shape and plan's GPU model, taken from plan's scenario.
#[derive(Clone, Debug, Serialize)]
pub struct ServePlan {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub disaggregated: bool,
    pub kv_transfer: KvTransfer,
    pub token_budget: u32,
    pub max_batch: u32,
    #[serde(skip)]
    model: ModelSpec,
    /// Activation bytes per element (β).
    beta: f64,
    /// Sustained FLOP/s and achieved HBM bytes/s of one GPU.
    flops_per_s: f64,
    hbm_bytes_per_s: f64,
    /// Weight bytes per GPU (plan's memory figure).
    weights_bytes: f64,
    /// KV bytes per token held by one GPU (split over TP and PP as plan splits it).
    pub kv_bytes_per_token_gpu: f64,
    #[serde(skip)]
    tp_path: GroupPath,
    /// Expert parallelism: replicas per EP group (1: none).
    pub ep: u32,
    /// MoE layers of one pipeline stage (the last stage may hold fewer).
    pub moe_layers_per_stage: u32,
    /// Bytes of one token copy: the FP8 dispatch message and the BF16 combine (DeepEP's).
    pub dispatch_bytes_per_copy: u64,
    pub combine_bytes_per_copy: u64,
    /// Copies of a token over the fabric: normal kernels (prefill, one per node) and
    /// low-latency kernels (decode, one per expert).
    pub copies_normal: u32,
    pub copies_low_latency: u32,
}

/// DeepEP's FP8 dispatch message for one token copy: a 16-byte header (source index and
/// reserved ints), h FP8 bytes, one FP32 scale per 128 channels (`internode_ll.cu`).
pub fn deepep_dispatch_bytes(hidden: u32) -> u64 {
    16 + hidden as u64 + hidden.div_ceil(128) as u64 * 4
}

/// DeepEP's BF16 combine message for one token copy: h · 2 bytes.
pub fn deepep_combine_bytes(hidden: u32) -> u64 {
    hidden as u64 * 2
}

impl ServePlan {
    /// The plan `rocelab plan` estimates for `s` (an inference plan), with the `[serve]` table.
    pub fn from_scenario(s: &Scenario, e: &Estimate, c: &ServeConfig) -> Result<ServePlan, String> {
        let rocelab_plan::scenario::Workload::Inference(w) = &s.workload else {
            return Err(
                "the plan is a training plan; `--serve` runs inference plans (use `--step` for training)".into()
            );
        };
        let p = &s.parallel;
        if p.ep > 1 && !p.dp.is_multiple_of(p.ep) {
            return Err(format!("ep = {} does not divide dp = {}: an EP group is ep replicas", p.ep, p.dp));
        }
        if p.tp > s.cluster.gpus_per_node.max(1) {
            return Err(format!(
                "tp = {} spans nodes of {} GPUs: the twin runs TP inside a node (give tp ≤ {} and pp across nodes)",
                p.tp, s.cluster.gpus_per_node, s.cluster.gpus_per_node
            ));
        }
        let mdl = &s.model;
        let kv_split = match mdl.kv_latent_dim {
            Some(_) => 1.0,
            None => p.tp.min(mdl.kv_heads).max(1) as f64,
        };
        let beta = s.precision.activation_bytes();
        Ok(ServePlan {
            tp: p.tp,
            pp: p.pp,
            dp: p.dp,
            disaggregated: w.disaggregated,
            kv_transfer: c.kv_transfer,
            token_budget: if c.token_budget == 0 { 8192 } else { c.token_budget },
            max_batch: if c.max_batch == 0 { w.batch.max(1) } else { c.max_batch },
            model: mdl.clone(),
            beta,
            flops_per_s: s.cluster.sustained_tflops * 1e12,
            hbm_bytes_per_s: s.cluster.gpu.hbm_tbytes_per_s * 1e12 * s.cluster.hbm_efficiency,
            weights_bytes: e.memory.weights_bytes,
            kv_bytes_per_token_gpu: mdl.kv_bytes_per_token(beta) / (kv_split * p.pp as f64),
            tp_path: rocelab_plan::estimate::place_group(s, p.tp, 1),
            ep: p.ep.max(1),
            moe_layers_per_stage: if p.ep > 1 && mdl.is_moe() { mdl.moe_layers.div_ceil(p.pp.max(1)) } else { 0 },
            dispatch_bytes_per_copy: deepep_dispatch_bytes(mdl.hidden),
            combine_bytes_per_copy: deepep_combine_bytes(mdl.hidden),
            // EP members sit on different nodes, so node-limited routing applies.
            copies_normal: mdl.dispatch_fanout(true).max(1.0) as u32,
            copies_low_latency: mdl.top_k.max(1),
        })
    }

    /// One pipeline stage's time for one iteration: prompts of `prefill` tokens each, and one
    /// token of each request in `decode` (its context in tokens). Plan's inference model per
    /// stage: max(compute, HBM reads) + TP all-reduces.
    pub fn stage_seconds(&self, prefill: &[u32], decode: &[u64]) -> f64 {
        let (t, pp) = (self.tp as f64, self.pp as f64);
        let flops: f64 = prefill.iter().map(|&n| self.model.forward_flops(n as f64, 0.0)).sum::<f64>()
            + decode.iter().map(|&c| self.model.forward_flops(1.0, c as f64)).sum::<f64>();
        let compute = flops / (t * pp) / self.flops_per_s;
        let kv_read: f64 = decode.iter().map(|&c| c as f64 * self.kv_bytes_per_token_gpu).sum();
        let memory = (self.weights_bytes + kv_read) / self.hbm_bytes_per_s;
        compute.max(memory) + self.tp_seconds(self.tokens(prefill, decode))
    }

    fn tokens(&self, prefill: &[u32], decode: &[u64]) -> u64 {
        prefill.iter().map(|&n| n as u64).sum::<u64>() + decode.len() as u64
    }

    /// The stage's TP all-reduces: 2 per layer of tokens·h·β (plan's TP line), NVLink/PCIe.
    fn tp_seconds(&self, tokens: u64) -> f64 {
        if self.tp <= 1 || tokens == 0 {
            return 0.0;
        }
        let per_stage = 2.0 * self.model.layers as f64 / self.pp as f64;
        let bytes = tokens as f64 * self.model.hidden as f64 * self.beta;
        per_stage * nccl_seconds(Collective::AllReduce, bytes, &self.tp_path).seconds
    }

    /// Activation bytes each GPU sends to the next stage: tokens·h·β/t (plan's PP line).
    pub fn pp_bytes(&self, tokens: u64) -> u64 {
        (tokens as f64 * self.model.hidden as f64 * self.beta / self.tp as f64).round().max(1.0) as u64
    }

    /// KV bytes of `prompt` tokens each GPU holds (and ships when disaggregated).
    pub fn kv_bytes(&self, prompt: u64) -> u64 {
        (prompt as f64 * self.kv_bytes_per_token_gpu).round().max(1.0) as u64
    }

    fn layers_per_stage(&self) -> u32 {
        self.model.layers.div_ceil(self.pp).max(1)
    }

    /// MoE layers stage `s` holds (0 without EP): the layers are split as plan splits them.
    pub fn moe_layers_of(&self, s: u32) -> u32 {
        let total = self.model.moe_layers;
        let per = self.moe_layers_per_stage;
        total.saturating_sub(s * per).min(per)
    }

    /// Bytes GPU j of one EP member sends each peer in one dispatch (or combine) of a layer,
    /// for an iteration of `tokens` tokens, with prompts (normal kernels) or decode only
    /// (low-latency kernels): tokens/t · copies / ep token copies, at least the 16-byte count.
    pub fn ep_bytes(&self, tokens: u64, with_prompts: bool, dispatch: bool) -> u64 {
        let copies = if with_prompts { self.copies_normal } else { self.copies_low_latency } as f64;
        let per_copy = if dispatch { self.dispatch_bytes_per_copy } else { self.combine_bytes_per_copy } as f64;
        let v = tokens as f64 / self.tp as f64 * copies / self.ep as f64 * per_copy;
        (v.round() as u64).max(16)
    }
}

/// Percentiles of one latency, ms.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `v` (seconds).
    pub fn of(v: &[f64]) -> Percentiles {
        if v.is_empty() {
            return Percentiles::default();
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let q = |p: f64| s[((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1] * 1e3;
        Percentiles {
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p99_ms: q(0.99),
            mean_ms: s.iter().sum::<f64>() / s.len() as f64 * 1e3,
        }
    }
}

/// What a serving run measured.
#[derive(Clone, Debug, Serialize)]
pub struct ServeResult {
    pub plan: ServePlan,
    pub requests: u32,
    pub completed: u32,
    pub nodes: u32,
    pub ttft: Percentiles,
    pub tpot: Percentiles,
    pub e2e: Percentiles,
    /// KV transfer per request (disaggregated): from its prefill's end to its cache's arrival.
    pub kv_transfer: Percentiles,
    /// Output tokens per second, first arrival to last completion.
    pub tokens_per_s: f64,
    /// Share of the summed TTFTs spent waiting on the network (pipeline sends, KV transfer).
    pub prefill_network_share: f64,
    /// Share of the summed decode times (first token to last) spent waiting on pipeline sends.
    pub decode_network_share: f64,
    /// Share of the summed TTFTs spent queued before the prefill started.
    pub prefill_queue_share: f64,
    pub failed_messages: u64,
    pub events: u64,
    pub data_packets: u64,
    #[serde(skip)]
    pub ttft_seconds: Vec<f64>,
    #[serde(skip)]
    pub tpot_seconds: Vec<f64>,
    /// What the steady-state fast-forward skipped (`--fast-forward`; absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<rocelab_sim::report::FastForwardUsed>,
    #[serde(skip)]
    pub report: RunReport,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Both,
    Prefill,
    Decode,
}

#[derive(Clone, Default)]
struct ReqState {
    /// Tokens generated (the first comes out of the prefill).
    generated: u32,
    prefill_start: Option<SimTime>,
    prefill_end: Option<SimTime>,
    first_token: Option<SimTime>,
    done: Option<SimTime>,
    net_prefill: u64,
    net_decode: u64,
}

struct Replica {
    role: Role,
    /// NIC of GPU j of each stage's node.
    nics: Vec<Vec<NodeId>>,
    waiting: VecDeque<u32>,
    running: Vec<u32>,
    busy: bool,
    /// The iteration in flight.
    prefill: Vec<u32>,
    decode: Vec<u32>,
    stage: u32,
    pending: u32,
    sent_at: SimTime,
    net: u64,
    /// EP: the stage's compute time, the MoE layer reached in it, when its dispatch left;
    /// per MoE layer of the iteration (stage · moe_layers_per_stage + layer): dispatches and
    /// combines arrived, and whether this member has dispatched and combined it.
    stage_dur: SimTime,
    seg: u32,
    a2a_at: SimTime,
    disp_in: Vec<u32>,
    comb_in: Vec<u32>,
    dispatched: Vec<bool>,
    combined: Vec<bool>,
}

/// A KV transfer in flight: the messages still to arrive, and its requests.
struct Transfer {
    pending: u32,
    reqs: Vec<u32>,
    to: usize,
}

const K_ARRIVE: u64 = 1;
const K_STAGE: u64 = 2;
const K_PP: u64 = 3;
const K_KV: u64 = 4;
const K_SEG: u64 = 5;
const K_DISPATCH: u64 = 6;
const K_COMBINE: u64 = 7;

/// Tags: instance (16 bits, the job's when several run together) | kind (4) | replica (20) |
/// request, transfer or MoE layer (24).
fn tag(kind: u64, a: u64, b: u64) -> u64 {
    kind << 44 | (a & 0xf_ffff) << 24 | (b & 0xff_ffff)
}

fn untag(t: u64) -> (u64, usize, usize) {
    (t >> 44 & 0xf, (t >> 24 & 0xf_ffff) as usize, (t & 0xff_ffff) as usize)
}

struct ServeWork {
    plan: ServePlan,
    reqs: Vec<Request>,
    st: Vec<ReqState>,
    reps: Vec<Replica>,
    transfers: Vec<Transfer>,
    failed: u64,
    /// The tag instance (the top 16 bits of every tag; a job's own beside other jobs).
    inst: u16,
}

impl ServeWork {
    fn arrive(&mut self, i: u32, net: &mut Net<'_, '_>) {
        // The least loaded replica that prefills (lowest index on a tie).
        let r = (0..self.reps.len())
            .filter(|&k| self.reps[k].role != Role::Decode)
            .min_by_key(|&k| self.reps[k].waiting.len() + self.reps[k].running.len() + self.reps[k].prefill.len())
            .unwrap_or(0);
        self.reps[r].waiting.push_back(i);
        if let Some(next) = self.reqs.get(i as usize + 1) {
            self.wake(net, next.arrival, tag(K_ARRIVE, 0, i as u64 + 1));
        }
        self.schedule(r, net);
    }

    /// Starts the replica's next iteration if it is idle and has work.
    fn schedule(&mut self, r: usize, net: &mut Net<'_, '_>) {
        // An EP group starts its members' iterations together, once every one is idle.
        let members = self.group(r);
        if members.clone().any(|k| self.reps[k].busy) {
            return;
        }
        let mut any = false;
        for k in members.clone() {
            any |= self.form_batch(k);
        }
        if !any {
            return;
        }
        for k in members {
            let rep = &mut self.reps[k];
            for &q in &rep.prefill {
                self.st[q as usize].prefill_start = Some(net.now());
            }
            rep.busy = true;
            rep.stage = 0;
            rep.net = 0;
            rep.disp_in.iter_mut().for_each(|x| *x = 0);
            rep.comb_in.iter_mut().for_each(|x| *x = 0);
            rep.dispatched.iter_mut().for_each(|x| *x = false);
            rep.combined.iter_mut().for_each(|x| *x = false);
            self.run_stage(k, net);
        }
    }

    /// Replica `r`'s next iteration: one token of each running request, and waiting prompts in
    /// arrival order within the token budget and the batch limit. Whether it has any work.
    fn form_batch(&mut self, r: usize) -> bool {
        let rep = &mut self.reps[r];
        rep.decode = rep.running.iter().copied().take(self.plan.max_batch as usize).collect();
        rep.prefill.clear();
        let mut budget = self.plan.token_budget as u64;
        budget = budget.saturating_sub(rep.decode.len() as u64);
        let mut slots = (self.plan.max_batch as usize).saturating_sub(rep.running.len());
        while let Some(&q) = rep.waiting.front() {
            let p = self.reqs[q as usize].prompt as u64;
            if slots == 0 || (p > budget && !rep.prefill.is_empty()) {
                break;
            }
            budget = budget.saturating_sub(p);
            slots -= 1;
            rep.prefill.push(q);
            rep.waiting.pop_front();
        }
        !(rep.prefill.is_empty() && rep.decode.is_empty())
    }

    fn run_stage(&mut self, r: usize, net: &mut Net<'_, '_>) {
        let rep = &self.reps[r];
        let prompts: Vec<u32> = rep.prefill.iter().map(|&q| self.reqs[q as usize].prompt).collect();
        let ctx: Vec<u64> = rep
            .decode
            .iter()
            .map(|&q| self.reqs[q as usize].prompt as u64 + self.st[q as usize].generated as u64)
            .collect();
        let secs = self.plan.stage_seconds(&prompts, &ctx);
        let dur = SimTime((secs * 1e12).round() as u64);
        let now = net.now();
        if self.plan.disaggregated && rep.role == Role::Prefill && self.plan.kv_transfer == KvTransfer::Layer {
            // Each layer's KV leaves as that layer ends: one RDMA write per layer and GPU.
            let layers = self.plan.layers_per_stage();
            let bytes = self.plan.kv_bytes(prompts.iter().map(|&p| p as u64).sum()).div_ceil(layers as u64);
            let stage = rep.stage as usize;
            let msgs: Vec<(NodeId, NodeId)> = (0..self.plan.tp as usize)
                .map(|j| (rep.nics[stage][j], self.reps[r + self.plan.dp as usize].nics[stage][j]))
                .collect();
            let id = self.kv_transfer_id(r, rep.stage == 0, msgs.len() as u32 * layers);
            for l in 0..layers {
                let at = SimTime(now.0 + dur.0 * (l as u64 + 1) / layers as u64);
                for &(s, d) in &msgs {
                    self.post(
                        Message { start: Some(at), ..Message::new(s, d, bytes).tag(tag(K_KV, r as u64, id as u64)) },
                        net,
                    );
                }
            }
        }
        let stage_no = self.reps[r].stage;
        if self.plan.ep > 1 && self.plan.moe_layers_of(stage_no) > 0 {
            let rep = &mut self.reps[r];
            rep.stage_dur = dur;
            rep.seg = 0;
            let segs = self.plan.moe_layers_of(stage_no) as u64 + 1;
            self.wake(net, SimTime(now.0 + dur.0 / segs), tag(K_SEG, r as u64, 0));
            return;
        }
        self.wake(net, SimTime(now.0 + dur.0), tag(K_STAGE, r as u64, 0));
    }

    /// The EP group replica `r` belongs to: `ep` consecutive replicas of one role.
    fn group(&self, r: usize) -> std::ops::Range<usize> {
        let ep = self.plan.ep.max(1) as usize;
        let g = r / ep * ep;
        g..g + ep
    }

    fn iteration_tokens(&self, r: usize) -> (u64, bool) {
        let rep = &self.reps[r];
        let p: u64 = rep.prefill.iter().map(|&q| self.reqs[q as usize].prompt as u64).sum();
        (p + rep.decode.len() as u64, !rep.prefill.is_empty())
    }

    /// A compute segment of replica `r`'s stage ended: dispatch its next MoE layer's tokens, or
    /// end the stage after the last layer's tail.
    fn segment_done(&mut self, r: usize, net: &mut Net<'_, '_>) {
        let rep = &self.reps[r];
        let stage = rep.stage;
        if rep.seg >= self.plan.moe_layers_of(stage) {
            self.stage_done(r, net);
            return;
        }
        let seq = (stage * self.plan.moe_layers_per_stage + rep.seg) as usize;
        let (tokens, prompts) = self.iteration_tokens(r);
        let bytes = self.plan.ep_bytes(tokens, prompts, true);
        let mut msgs = Vec::new();
        for p in self.group(r).filter(|&p| p != r) {
            for j in 0..self.plan.tp as usize {
                msgs.push(
                    Message::new(rep.nics[stage as usize][j], self.reps[p].nics[stage as usize][j], bytes)
                        .tag(tag(K_DISPATCH, p as u64, seq as u64)),
                );
            }
        }
        let rep = &mut self.reps[r];
        rep.a2a_at = net.now();
        rep.dispatched[seq] = true;
        for m in msgs {
            self.post(m, net);
        }
        self.try_combine(r, seq, net);
    }

    /// Member `p` sends the experts' outputs of layer `seq` back once it has dispatched that
    /// layer itself and every peer's dispatch is in.
    fn try_combine(&mut self, p: usize, seq: usize, net: &mut Net<'_, '_>) {
        let expect = (self.plan.ep - 1) * self.plan.tp;
        let rep = &self.reps[p];
        if !rep.dispatched[seq] || rep.combined[seq] || rep.disp_in[seq] < expect {
            return;
        }
        let stage = rep.stage as usize;
        let mut msgs = Vec::new();
        for m in self.group(p).filter(|&m| m != p) {
            let (tokens, prompts) = self.iteration_tokens(m);
            let bytes = self.plan.ep_bytes(tokens, prompts, false);
            for j in 0..self.plan.tp as usize {
                msgs.push(
                    Message::new(rep.nics[stage][j], self.reps[m].nics[stage][j], bytes)
                        .tag(tag(K_COMBINE, m as u64, seq as u64)),
                );
            }
        }
        self.reps[p].combined[seq] = true;
        for m in msgs {
            self.post(m, net);
        }
    }

    /// A combine of layer `seq` reached member `m`: with every one in, the next segment runs.
    fn combine_in(&mut self, m: usize, seq: usize, net: &mut Net<'_, '_>) {
        let expect = (self.plan.ep - 1) * self.plan.tp;
        let now = net.now();
        let per = self.plan.moe_layers_per_stage as usize;
        let rep = &mut self.reps[m];
        rep.comb_in[seq] += 1;
        let current = rep.stage as usize * per + rep.seg as usize;
        if rep.comb_in[seq] < expect || current != seq || !rep.dispatched[seq] {
            return;
        }
        rep.net += now.0.saturating_sub(rep.a2a_at.0);
        rep.seg += 1;
        let segs = self.plan.moe_layers_of(rep.stage) as u64 + 1;
        let d = rep.stage_dur.0;
        let len = d * (rep.seg as u64 + 1) / segs - d * rep.seg as u64 / segs;
        self.wake(net, SimTime(now.0 + len), tag(K_SEG, m as u64, 0));
    }

    /// The transfer the prefill replica `r`'s current iteration writes into: a new one at its
    /// first stage, that one at the next stages; `more` messages added to it.
    fn kv_transfer_id(&mut self, r: usize, new: bool, more: u32) -> usize {
        if new {
            let reqs = self.reps[r].prefill.clone();
            self.transfers.push(Transfer { pending: 0, reqs, to: r + self.plan.dp as usize });
        }
        // The replica's latest transfer is the last one it opened.
        let id = self.transfers.iter().rposition(|t| t.to == r + self.plan.dp as usize).unwrap_or(0);
        self.transfers[id].pending += more;
        id
    }

    fn wake(&self, net: &mut Net<'_, '_>, at: SimTime, t: u64) {
        let _ = net.wake_at(at, t | (self.inst as u64) << 48);
    }

    fn post(&mut self, mut m: Message, net: &mut Net<'_, '_>) {
        m.tag |= (self.inst as u64) << 48;
        if net.post(m).is_err() {
            self.failed += 1;
        }
    }

    fn stage_done(&mut self, r: usize, net: &mut Net<'_, '_>) {
        let pp = self.plan.pp;
        let rep = &mut self.reps[r];
        if rep.stage + 1 < pp {
            let tokens =
                rep.prefill.iter().map(|&q| self.reqs[q as usize].prompt as u64).sum::<u64>() + rep.decode.len() as u64;
            let bytes = self.plan.pp_bytes(tokens);
            let s = rep.stage as usize;
            rep.pending = self.plan.tp;
            rep.sent_at = net.now();
            let msgs: Vec<Message> = (0..self.plan.tp as usize)
                .map(|j| Message::new(rep.nics[s][j], rep.nics[s + 1][j], bytes).tag(tag(K_PP, r as u64, 0)))
                .collect();
            for m in msgs {
                self.post(m, net);
            }
            return;
        }
        self.iteration_done(r, net);
    }

    fn iteration_done(&mut self, r: usize, net: &mut Net<'_, '_>) {
        let now = net.now();
        let rep = &mut self.reps[r];
        rep.busy = false;
        let it_net = rep.net;
        let prefill = std::mem::take(&mut rep.prefill);
        let decode = std::mem::take(&mut rep.decode);
        let role = rep.role;
        for &q in &decode {
            let s = &mut self.st[q as usize];
            s.generated += 1;
            s.net_decode += it_net;
            if s.generated >= self.reqs[q as usize].output {
                s.done = Some(now);
            }
        }
        let st = &self.st;
        self.reps[r].running.retain(|&q| st[q as usize].done.is_none());
        for &q in &prefill {
            let s = &mut self.st[q as usize];
            s.net_prefill += it_net;
            s.prefill_end = Some(now);
        }
        if role == Role::Prefill {
            if self.plan.kv_transfer == KvTransfer::Whole && !prefill.is_empty() {
                let bytes = self.plan.kv_bytes(prefill.iter().map(|&q| self.reqs[q as usize].prompt as u64).sum());
                let to = r + self.plan.dp as usize;
                self.transfers.push(Transfer { pending: 0, reqs: prefill.clone(), to });
                let id = self.transfers.len() - 1;
                let mut msgs = Vec::new();
                for s in 0..self.plan.pp as usize {
                    for j in 0..self.plan.tp as usize {
                        msgs.push(
                            Message::new(self.reps[r].nics[s][j], self.reps[to].nics[s][j], bytes)
                                .tag(tag(K_KV, r as u64, id as u64)),
                        );
                    }
                }
                self.transfers[id].pending = msgs.len() as u32;
                for m in msgs {
                    self.post(m, net);
                }
            } else {
                // Layer by layer: whatever is still in flight is waited for after the prefill.
                let id = self.transfers.iter().rposition(|t| t.to == r + self.plan.dp as usize);
                if let Some(id) = id.filter(|&i| self.transfers[i].pending == 0 && !self.transfers[i].reqs.is_empty()) {
                    self.kv_arrived(id, net);
                }
            }
        } else {
            for &q in &prefill {
                self.first_token(q, now);
                if self.st[q as usize].done.is_none() {
                    self.reps[r].running.push(q);
                }
            }
        }
        self.schedule(r, net);
    }

    fn first_token(&mut self, q: u32, at: SimTime) {
        let s = &mut self.st[q as usize];
        s.first_token = Some(at);
        s.generated = 1;
        if self.reqs[q as usize].output <= 1 {
            s.done = Some(at);
        }
    }

    fn kv_arrived(&mut self, id: usize, net: &mut Net<'_, '_>) {
        let now = net.now();
        let reqs = std::mem::take(&mut self.transfers[id].reqs);
        let to = self.transfers[id].to;
        for q in reqs {
            // Still prefilling (layer by layer, the last layer's KV raced its stage's end): the
            // cache is complete when the prefill is.
            let end = self.st[q as usize].prefill_end.unwrap_or(now);
            self.st[q as usize].net_prefill += now.0.saturating_sub(end.0);
            self.first_token(q, now.max(end));
            if self.st[q as usize].done.is_none() {
                self.reps[to].running.push(q);
            }
        }
        self.schedule(to, net);
    }
}

impl Workload for ServeWork {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        if let Some(first) = self.reqs.first() {
            self.wake(net, first.arrival, tag(K_ARRIVE, 0, 0));
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        if done.failed {
            self.failed += 1;
            return;
        }
        let (kind, a, b) = untag(done.tag);
        match kind {
            K_PP => {
                let rep = &mut self.reps[a];
                rep.pending = rep.pending.saturating_sub(1);
                if rep.pending == 0 {
                    rep.net += net.now().0 - rep.sent_at.0;
                    rep.stage += 1;
                    self.run_stage(a, net);
                }
            }
            K_DISPATCH => {
                self.reps[a].disp_in[b] += 1;
                self.try_combine(a, b, net);
            }
            K_COMBINE => self.combine_in(a, b, net),
            K_KV => {
                let t = &mut self.transfers[b];
                t.pending = t.pending.saturating_sub(1);
                // Complete once every message is in and the prefill that writes it has ended.
                let prefilled = t.reqs.first().is_some_and(|&q| self.st[q as usize].prefill_end.is_some());
                if t.pending == 0 && prefilled {
                    self.kv_arrived(b, net);
                }
            }
            _ => {}
        }
    }

    fn on_wake(&mut self, tag: u64, net: &mut Net<'_, '_>) {
        let (kind, a, b) = untag(tag);
        match kind {
            K_ARRIVE => self.arrive(b as u32, net),
            K_STAGE => self.stage_done(a, net),
            K_SEG => self.segment_done(a, net),
            _ => {}
        }
    }
}

fn gpu_layout(m: &Model) -> Result<GpuLayout, Diagnostic> {
    match crate::placement::placement(m).map_err(|mut d| d.remove(0))? {
        Placement::Gpus(g) => Ok(g),
        _ => Err(Diagnostic::new(
            "serve",
            "the fabric has no GPU nodes",
            "serving needs GPU nodes: a [topology.rail_optimized] fabric, or hosts with gpu_node",
        )),
    }
}

/// Serves `reqs` with `plan` on `m` (with the fabric file's faults).
pub fn run_serve(
    m: &Model,
    plan: &ServePlan,
    reqs: &[Request],
    opts: SimOptions,
) -> Result<ServeResult, Vec<Diagnostic>> {
    let g = gpu_layout(m).map_err(|d| vec![d])?;
    let job = ServeJob::new(&g, plan, reqs, 0)?;
    let snap = crate::run_to_end(m, Box::new(job.clone()), opts, false)?;
    let report = RunReport::from_snapshot(&snap, m);
    Ok(job.result(report))
}

/// A serving job that can run beside other work in one run (`crate::jobs`): the workload
/// (clone it into the run) and, after the run, its result.
#[derive(Clone)]
pub(crate) struct ServeJob(Rc<RefCell<ServeWork>>);

impl ServeJob {
    /// `plan` serving `reqs` on the GPU nodes of `g` (the fabric's, or a job's share), every
    /// tag under instance `inst`; refused as `run_serve` refuses it.
    pub(crate) fn new(
        g: &GpuLayout,
        plan: &ServePlan,
        reqs: &[Request],
        inst: u16,
    ) -> Result<ServeJob, Vec<Diagnostic>> {
        build(g, plan, reqs, inst).map(|w| ServeJob(Rc::new(RefCell::new(w))))
    }

    pub(crate) fn result(&self, report: RunReport) -> ServeResult {
        finish(&self.0.borrow(), report)
    }
}

impl Workload for ServeJob {
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

fn build(g: &GpuLayout, plan: &ServePlan, reqs: &[Request], inst: u16) -> Result<ServeWork, Vec<Diagnostic>> {
    let bad = |what: String, fix: String| vec![Diagnostic::new("serve", what, fix)];
    if plan.tp == 0 || plan.pp == 0 || plan.dp == 0 || plan.tp > g.gpus {
        return Err(bad(
            format!("tp = {}, pp = {}, dp = {} on nodes of {} GPUs", plan.tp, plan.pp, plan.dp, g.gpus),
            format!("give tp 1 to {} and pp, dp ≥ 1", g.gpus),
        ));
    }
    if reqs.is_empty() || reqs.len() > MAX_REQUESTS {
        return Err(bad(format!("{} requests", reqs.len()), format!("give 1 to {MAX_REQUESTS}")));
    }
    let roles: Vec<Role> = if plan.disaggregated {
        (0..plan.dp).map(|_| Role::Prefill).chain((0..plan.dp).map(|_| Role::Decode)).collect()
    } else {
        (0..plan.dp).map(|_| Role::Both).collect()
    };
    let nodes = roles.len() as u64 * plan.pp as u64;
    if nodes > g.nodes.len() as u64 || roles.len() > 0xf_ffff {
        return Err(bad(
            format!(
                "{} replicas of {} nodes need {nodes} GPU nodes, the fabric has {}",
                roles.len(),
                plan.pp,
                g.nodes.len()
            ),
            "use a larger fabric, or a smaller dp or pp".into(),
        ));
    }
    let moe_seqs = (plan.moe_layers_per_stage * plan.pp) as usize;
    let mut reps = Vec::new();
    for (k, role) in roles.into_iter().enumerate() {
        let nics = (0..plan.pp as usize)
            .map(|s| (0..plan.tp).map(|j| g.nic_of(k * plan.pp as usize + s, j)).collect())
            .collect();
        reps.push(Replica {
            role,
            nics,
            waiting: VecDeque::new(),
            running: vec![],
            busy: false,
            prefill: vec![],
            decode: vec![],
            stage: 0,
            pending: 0,
            sent_at: SimTime(0),
            net: 0,
            stage_dur: SimTime(0),
            seg: 0,
            a2a_at: SimTime(0),
            disp_in: vec![0; moe_seqs],
            comb_in: vec![0; moe_seqs],
            dispatched: vec![false; moe_seqs],
            combined: vec![false; moe_seqs],
        });
    }
    let work = ServeWork {
        plan: plan.clone(),
        reqs: reqs.to_vec(),
        st: vec![ReqState::default(); reqs.len()],
        reps,
        transfers: vec![],
        failed: 0,
        inst,
    };
    Ok(work)
}

/// The serving figures once the run is over.
fn finish(w: &ServeWork, report: RunReport) -> ServeResult {
    let (plan, reqs) = (&w.plan, &w.reqs[..]);
    let nodes = w.reps.len() as u64 * plan.pp as u64;
    let secs = |a: SimTime, b: SimTime| b.0.saturating_sub(a.0) as f64 * 1e-12;
    let (mut ttft, mut tpot, mut e2e, mut kv) = (vec![], vec![], vec![], vec![]);
    let (mut net_pre, mut net_dec, mut sum_ttft, mut sum_dec, mut queue) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let mut tokens = 0u64;
    let mut last = SimTime(0);
    for (q, s) in reqs.iter().zip(&w.st) {
        let (Some(first), Some(done)) = (s.first_token, s.done) else { continue };
        let t = secs(q.arrival, first);
        ttft.push(t);
        sum_ttft += t;
        net_pre += s.net_prefill as f64 * 1e-12;
        queue += s.prefill_start.map_or(0.0, |p| secs(q.arrival, p));
        if q.output > 1 {
            let d = secs(first, done);
            tpot.push(d / (q.output - 1) as f64);
            sum_dec += d;
            net_dec += s.net_decode as f64 * 1e-12;
        }
        if plan.disaggregated {
            kv.push(s.prefill_end.map_or(0.0, |p| secs(p, first)));
        }
        e2e.push(secs(q.arrival, done));
        tokens += q.output as u64;
        last = last.max(done);
    }
    let span = secs(reqs[0].arrival, last);
    ServeResult {
        plan: plan.clone(),
        requests: reqs.len() as u32,
        completed: ttft.len() as u32,
        nodes: nodes as u32,
        ttft: Percentiles::of(&ttft),
        tpot: Percentiles::of(&tpot),
        e2e: Percentiles::of(&e2e),
        kv_transfer: Percentiles::of(&kv),
        tokens_per_s: if span > 0.0 { tokens as f64 / span } else { 0.0 },
        prefill_network_share: if sum_ttft > 0.0 { net_pre / sum_ttft } else { 0.0 },
        decode_network_share: if sum_dec > 0.0 { net_dec / sum_dec } else { 0.0 },
        prefill_queue_share: if sum_ttft > 0.0 { queue / sum_ttft } else { 0.0 },
        failed_messages: w.failed,
        events: report.events,
        data_packets: report.totals.data_packets_sent,
        ttft_seconds: ttft,
        tpot_seconds: tpot,
        fast_forward: report.fast_forward.clone(),
        report,
    }
}

/// Plan's analytical serving figures, beside the twin's.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PlanServe {
    pub ttft_ms: f64,
    pub tpot_ms: f64,
    pub tokens_per_s: f64,
    pub prefill_network_share: f64,
    pub decode_network_share: f64,
    /// Requests/s the plan's replicas sustain: dp · batch / (TTFT + output · TPOT).
    pub capacity_per_s: f64,
    /// The batch plan's figures are for.
    pub batch: u32,
}

impl PlanServe {
    pub fn from_estimate(s: &Scenario, e: &Estimate) -> PlanServe {
        let ph = |n: &str| e.phases.iter().find(|p| p.name == n);
        let (batch, out) = match &s.workload {
            rocelab_plan::scenario::Workload::Inference(w) => (w.batch as f64, w.output_tokens as f64),
            _ => (1.0, 1.0),
        };
        let ttft = e.headline.ttft_seconds.unwrap_or(0.0);
        let tpot = e.headline.step_seconds;
        PlanServe {
            ttft_ms: ttft * 1e3,
            tpot_ms: tpot * 1e3,
            tokens_per_s: e.headline.tokens_per_s,
            prefill_network_share: ph("prefill").map_or(0.0, |p| p.network_share),
            decode_network_share: ph("decode").map_or(0.0, |p| p.network_share),
            capacity_per_s: s.parallel.dp as f64 * batch / (ttft + out * tpot),
            batch: batch as u32,
        }
    }
}

/// The serving report: the twin's figures with plan's beside them.
pub fn render(r: &ServeResult, model_name: &str, fabric: &str, plan: Option<&PlanServe>) -> String {
    use std::fmt::Write;
    let p = &r.plan;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "serving {model_name} on the twin of `{fabric}`: TP{} PP{} × {} {} ({} nodes), continuous batching (token budget {}, batch ≤ {})",
        p.tp,
        p.pp,
        p.dp,
        if p.disaggregated { format!("prefill + {} decode replicas, KV cache moved {}", p.dp, match p.kv_transfer { KvTransfer::Layer => "layer by layer", KvTransfer::Whole => "whole" }) } else { "replicas".into() },
        r.nodes,
        p.token_budget,
        p.max_batch
    );
    if p.ep > 1 {
        let _ = writeln!(
            s,
            "  expert parallelism: EP groups of {} replicas; per MoE layer a dispatch (FP8, {} B per token copy) and a combine (BF16, {} B); {} copies per token with prompts (normal kernels), {} decoding (low-latency)",
            p.ep, p.dispatch_bytes_per_copy, p.combine_bytes_per_copy, p.copies_normal, p.copies_low_latency
        );
    }
    let _ = writeln!(s, "  {} of {} requests completed", r.completed, r.requests);
    let _ = writeln!(s, "\n  {:<32} {:>11} {:>11} {:>11} {:>11}", "", "p50", "p90", "p99", "plan");
    let pl = |f: Option<f64>| f.map_or("-".into(), |v| format!("{v:.3}"));
    let row = |s: &mut String, name: &str, q: &Percentiles, plan: Option<f64>| {
        let _ = writeln!(s, "  {:<32} {:>11.3} {:>11.3} {:>11.3} {:>11}", name, q.p50_ms, q.p90_ms, q.p99_ms, pl(plan));
    };
    row(&mut s, "TTFT (ms)", &r.ttft, plan.map(|x| x.ttft_ms));
    row(&mut s, "TPOT (ms)", &r.tpot, plan.map(|x| x.tpot_ms));
    row(&mut s, "end-to-end (ms)", &r.e2e, None);
    if p.disaggregated {
        row(&mut s, "KV transfer after prefill (ms)", &r.kv_transfer, None);
    }
    let _ = writeln!(s, "\n  {:<32} {:>11} {:>11}", "", "twin", "plan");
    let _ = writeln!(
        s,
        "  {:<32} {:>11.1} {:>11}",
        "output tokens/s",
        r.tokens_per_s,
        plan.map_or("-".into(), |x| format!("{:.1}", x.tokens_per_s))
    );
    let pct = |v: f64| format!("{:.1} %", v * 100.0);
    let _ = writeln!(
        s,
        "  {:<32} {:>11} {:>11}",
        "prefill waiting on the network",
        pct(r.prefill_network_share),
        plan.map_or("-".into(), |x| pct(x.prefill_network_share))
    );
    let _ = writeln!(
        s,
        "  {:<32} {:>11} {:>11}",
        "decode waiting on the network",
        pct(r.decode_network_share),
        plan.map_or("-".into(), |x| pct(x.decode_network_share))
    );
    let _ = writeln!(s, "  {:<32} {:>11}", "TTFT spent queued", pct(r.prefill_queue_share));
    if let Some(x) = plan {
        let _ = writeln!(
            s,
            "  plan's figures are for one batch of {} prompts prefilled together and decoded at the mean context",
            x.batch
        );
        let _ =
            writeln!(s, "  plan's capacity: {:.2} requests/s (dp · batch / (TTFT + output · TPOT))", x.capacity_per_s);
    }
    if r.failed_messages > 0 {
        let _ = writeln!(
            s,
            "  {} messages never arrived (a QP exhausted its retries): those requests did not complete",
            r.failed_messages
        );
    }
    let _ = writeln!(s, "  {}-level engine: {} events, {} data packets", r.report.engine, r.events, r.data_packets);
    if let Some(line) = r.report.fast_forward_line() {
        let _ = writeln!(s, "{line}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_errors_name_the_line_and_column() {
        let ok = parse_trace("t.csv", "arrival_s,prompt,output\n0.5, 100, 10 # first\n\n1.25 200 20\n").unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1], Request { arrival: SimTime(1_250_000_000_000), prompt: 200, output: 20 });
        let e = parse_trace("t.csv", "0.5,100,10\n0.7,abc,10\n").unwrap_err();
        assert!(e.starts_with("t.csv:2:5: error: prompt tokens `abc`"), "{e}");
        let e = parse_trace("t.csv", "1,100,10\n0.5,100,10\n").unwrap_err();
        assert!(e.starts_with("t.csv:2:1:") && e.contains("sort the trace"), "{e}");
        assert!(parse_trace("t.csv", "0,1\n").unwrap_err().contains("2 fields, expected 3"));
        assert!(parse_trace("t.csv", "# nothing\n").unwrap_err().contains("no requests"));
        assert!(parse_trace("t.csv", "nan,1,1\n").is_err());
        assert!(parse_trace("t.csv", "0,0,1\n").unwrap_err().contains("prompt tokens `0`"));
        assert!(parse_trace("t.csv", "0,1,99999999999\n").is_err());
    }

    #[test]
    fn poisson_gaps_average_one_over_the_rate() {
        let r = poisson(50.0, 20_000, 10, 10, 7);
        let mean = r.last().unwrap().arrival.0 as f64 * 1e-12 / r.len() as f64;
        assert!((mean - 0.02).abs() < 0.02 * 0.03, "mean gap {mean}");
        assert_eq!(r, poisson(50.0, 20_000, 10, 10, 7));
        assert!(r.windows(2).all(|w| w[0].arrival <= w[1].arrival));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(|i| i as f64 * 1e-3).collect();
        let p = Percentiles::of(&v);
        assert_eq!((p.p50_ms, p.p90_ms, p.p99_ms), (50.0, 90.0, 99.0));
    }
}
