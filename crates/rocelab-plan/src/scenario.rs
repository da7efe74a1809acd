//! A resolved planning case: model, precision, workload, parallel layout, cluster and links,
//! every preset expanded and every constraint checked. `Scenario::validate` is the one gate;
//! `estimate` and `search` only ever see scenarios that passed it.

use crate::hardware::GpuSpec;
use crate::link::LinkProfile;
use crate::model::ModelSpec;
use crate::precision::Precision;
use crate::PlanError;
use serde::Serialize;

/// Pipeline schedule (Narayanan et al. SC21 §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    Gpipe,
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// Interleaved 1F1B: each GPU holds `virtual_stages` chunks; bubble ÷ v, PP traffic × v.
    Interleaved,
}

impl Schedule {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "gpipe" => Schedule::Gpipe,
            "1f1b" | "pipedream-flush" => Schedule::OneFOneB,
            "interleaved" | "interleaved-1f1b" => Schedule::Interleaved,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Gpipe => "gpipe",
            Schedule::OneFOneB => "1f1b",
            Schedule::Interleaved => "interleaved",
        }
    }
}

/// ZeRO stage (Rajbhandari et al. arXiv 1910.02054); FSDP full shard = stage 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ZeroStage(pub u8);

/// Activation recomputation (Korthikanti et al. arXiv 2205.05198).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    None,
    /// Recompute only the attention core: activations 34·s·b·h/t per layer (with SP).
    Selective,
    /// Keep only each layer's input; one extra forward pass (compute × 4/3, TP comm × 1.5).
    Full,
}

impl Recompute {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "none" | "off" => Recompute::None,
            "selective" => Recompute::Selective,
            "full" => Recompute::Full,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}

/// The parallel layout. Rank order, innermost first, is Megatron's tp → cp → dp → pp; the EP
/// group is carved out of the DP dimension (expert data parallel = dp / ep).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parallel {
    pub tp: u32,
    pub cp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    pub sequence_parallel: bool,
    pub schedule: Schedule,
    pub virtual_stages: u32,
    pub zero: ZeroStage,
    pub recompute: Recompute,
}

impl Parallel {
    /// t·c·p·d, in u128 so that no product of four u32 overflows.
    pub fn gpus(&self) -> u128 {
        self.tp as u128 * self.cp as u128 * self.pp as u128 * self.dp as u128
    }
    /// Virtual stages actually in effect (1 unless the schedule is interleaved).
    pub fn v(&self) -> u32 {
        if self.schedule == Schedule::Interleaved {
            self.virtual_stages.max(1)
        } else {
            1
        }
    }
    pub fn label(&self) -> String {
        let mut s = format!("TP{}", self.tp);
        if self.cp > 1 {
            s += &format!("·CP{}", self.cp);
        }
        s += &format!("·PP{}·DP{}", self.pp, self.dp);
        if self.ep > 1 {
            s += &format!("·EP{}", self.ep);
        }
        s
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Training {
    /// Sequences per optimizer step, all replicas together.
    pub global_batch: u32,
    /// Sequences per micro-batch.
    pub micro_batch: u32,
    pub seq_len: u32,
}

impl Training {
    pub fn tokens_per_step(&self) -> f64 {
        self.global_batch as f64 * self.seq_len as f64
    }
    /// Micro-batches each pipeline runs per step: global / (dp × micro-batch).
    pub fn micro_batches(&self, dp: u32) -> u32 {
        (self.global_batch as u64 / (dp.max(1) as u64 * self.micro_batch.max(1) as u64)) as u32
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inference {
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// Sequences decoded together by one replica.
    pub batch: u32,
    /// Prefill and decode on different GPUs: the prompt's KV cache crosses the network once.
    pub disaggregated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Workload {
    Training(Training),
    Inference(Inference),
}

/// GPUs, nodes and the two links every plan crosses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cluster {
    pub gpu: GpuSpec,
    pub gpus: u32,
    pub gpus_per_node: u32,
    pub intra_node: LinkProfile,
    pub network: LinkProfile,
    pub nics_per_node: u32,
    /// Model FLOP/s a GPU sustains while it computes (peak × precision × efficiency).
    pub sustained_tflops: f64,
    /// Share of HBM bandwidth a memory-bound kernel (decode) achieves.
    pub hbm_efficiency: f64,
    /// Share of HBM held back for the CUDA context, NCCL buffers and fragmentation.
    pub memory_reserve: f64,
}

impl Cluster {
    pub fn nodes(&self) -> u32 {
        self.gpus.div_ceil(self.gpus_per_node.max(1))
    }
    /// Network bandwidth one GPU can count on when all GPUs of its node send at once.
    pub fn nic_bytes_per_s_per_gpu(&self) -> f64 {
        self.network.effective_bytes_per_s() * self.nics_per_node as f64 / self.gpus_per_node.max(1) as f64
    }
    pub fn usable_hbm_bytes(&self) -> f64 {
        self.gpu.hbm_gbytes * 1e9 * (1.0 - self.memory_reserve)
    }
}

/// Share of each layer-synchronous collective hidden behind compute. DP and ZeRO are not listed:
/// their overlap follows from the compute they can hide behind (see `estimate`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overlap {
    pub tp: f64,
    pub cp: f64,
    pub ep: f64,
    pub pp: f64,
}

impl Default for Overlap {
    /// Megatron without communication-overlap kernels: TP, CP and EP collectives sit between
    /// GEMMs and PP sends precede the next stage's compute, so nothing is hidden.
    fn default() -> Self {
        Overlap { tp: 0.0, cp: 0.0, ep: 0.0, pp: 0.0 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub model: ModelSpec,
    pub precision: Precision,
    /// Format of the data-parallel gradient reduction.
    pub grad_reduce: Precision,
    pub workload: Workload,
    pub parallel: Parallel,
    pub cluster: Cluster,
    pub overlap: Overlap,
}

fn err(key: &str, message: String, hint: impl Into<String>) -> PlanError {
    PlanError { key: key.to_string(), message, hint: hint.into() }
}

fn positive(key: &str, v: f64) -> Result<(), PlanError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(err(key, format!("must be a positive number, got {v}"), "give a value greater than 0"))
    }
}

fn fraction(key: &str, v: f64) -> Result<(), PlanError> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(err(key, format!("must be between 0 and 1, got {v}"), "give a fraction such as 0.5"))
    }
}

impl Scenario {
    /// Every check a layout must pass; errors name the input key and the fix.
    pub fn validate(&self) -> Result<(), PlanError> {
        let m = &self.model;
        let p = &self.parallel;
        let c = &self.cluster;
        for (k, v) in [
            ("model.layers", m.layers),
            ("model.hidden", m.hidden),
            ("model.heads", m.heads),
            ("model.kv_heads", m.kv_heads),
            ("model.head_dim", m.head_dim),
            ("model.experts", m.experts),
            ("model.top_k", m.top_k),
        ] {
            if v == 0 {
                return Err(err(k, "must be at least 1".into(), "check the model shape"));
            }
        }
        positive("model.params", m.params)?;
        if m.top_k > m.experts {
            return Err(err(
                "model.top_k",
                format!("top_k {} exceeds experts {}", m.top_k, m.experts),
                "top_k ≤ experts",
            ));
        }
        if m.is_moe() && m.expert_ffn_hidden == 0 {
            return Err(err(
                "model.expert_ffn_hidden",
                "an MoE model needs the expert MLP width".into(),
                "set expert_ffn_hidden",
            ));
        }
        if m.is_moe() && m.expert_params() > m.params {
            return Err(err(
                "model.params",
                format!(
                    "experts alone hold {:.1}B parameters, more than params {:.1}B",
                    m.expert_params() / 1e9,
                    m.params / 1e9
                ),
                "check params, experts, moe_layers and expert_ffn_hidden",
            ));
        }
        if m.kv_heads > m.heads || !m.heads.is_multiple_of(m.kv_heads) {
            return Err(err(
                "model.kv_heads",
                format!("{} KV heads do not divide {} heads", m.kv_heads, m.heads),
                "GQA needs heads % kv_heads == 0",
            ));
        }
        for (k, v) in [
            ("parallel.tp", p.tp),
            ("parallel.pp", p.pp),
            ("parallel.dp", p.dp),
            ("parallel.cp", p.cp),
            ("parallel.ep", p.ep),
            ("parallel.virtual_stages", p.virtual_stages),
        ] {
            if v == 0 {
                return Err(err(k, "must be at least 1".into(), "use 1 to disable this dimension"));
            }
        }
        if !m.heads.is_multiple_of(p.tp) {
            return Err(err(
                "parallel.tp",
                format!("TP {} does not divide the {} attention heads of {}", p.tp, m.heads, m.name),
                format!("pick a TP that divides {}, e.g. {}", m.heads, largest_divisor_at_most(m.heads, p.tp)),
            ));
        }
        if p.pp > m.layers {
            return Err(err(
                "parallel.pp",
                format!("PP {} exceeds the {} layers", p.pp, m.layers),
                "use at most one stage per layer",
            ));
        }
        if p.ep > 1 && !m.is_moe() {
            return Err(err(
                "parallel.ep",
                format!("EP {} on dense model {}", p.ep, m.name),
                "expert parallelism needs an MoE model; use ep = 1",
            ));
        }
        if p.ep > 1 && !m.experts.is_multiple_of(p.ep) {
            return Err(err(
                "parallel.ep",
                format!("EP {} does not divide {} experts", p.ep, m.experts),
                "pick an EP that divides the expert count",
            ));
        }
        if p.ep > 1 && !p.dp.is_multiple_of(p.ep) {
            return Err(err(
                "parallel.ep",
                format!("EP {} does not divide DP {}", p.ep, p.dp),
                "the EP group is carved out of DP: dp % ep == 0",
            ));
        }
        if p.zero.0 > 3 {
            return Err(err(
                "parallel.zero",
                format!("ZeRO stage {} does not exist", p.zero.0),
                "use 0, 1, 2 or 3 (3 = FSDP full shard)",
            ));
        }
        if p.schedule == Schedule::Interleaved {
            let per_stage = m.layers.div_ceil(p.pp);
            if p.virtual_stages < 1 || per_stage < p.virtual_stages {
                return Err(err(
                    "parallel.virtual_stages",
                    format!("{} virtual stages but only {} layers per pipeline stage", p.virtual_stages, per_stage),
                    "use virtual_stages ≤ layers / pp",
                ));
            }
        }
        positive("hardware.sustained_tflops", c.sustained_tflops)?;
        positive("hardware.hbm_gbytes", c.gpu.hbm_gbytes)?;
        positive("hardware.hbm_tbytes_per_s", c.gpu.hbm_tbytes_per_s)?;
        positive("interconnect.rate_gbps", c.network.rate_gbps)?;
        positive("hardware.intra_node_gbytes_per_s", c.intra_node.rate_gbps)?;
        fraction("interconnect.efficiency", c.network.efficiency)?;
        if c.network.efficiency == 0.0 {
            return Err(err("interconnect.efficiency", "must be above 0".into(), "a share such as 0.9"));
        }
        if !(c.network.latency_us.is_finite() && c.network.latency_us >= 0.0) {
            return Err(err("interconnect.latency_us", "must be ≥ 0".into(), "one-way latency in µs"));
        }
        fraction("hardware.hbm_efficiency", c.hbm_efficiency)?;
        if c.hbm_efficiency == 0.0 {
            return Err(err("hardware.hbm_efficiency", "must be above 0".into(), "a share such as 0.8"));
        }
        if !(0.0..0.9).contains(&c.memory_reserve) {
            return Err(err(
                "hardware.memory_reserve",
                format!("{} is not a sensible reserve", c.memory_reserve),
                "a share below 0.9, e.g. 0.1",
            ));
        }
        if c.gpus_per_node == 0 || c.nics_per_node == 0 || c.gpus == 0 {
            return Err(err(
                "hardware.gpus_per_node",
                "GPUs, GPUs per node and NICs per node must be at least 1".into(),
                "check the hardware section",
            ));
        }
        for (k, v) in [
            ("overlap.tp", self.overlap.tp),
            ("overlap.cp", self.overlap.cp),
            ("overlap.ep", self.overlap.ep),
            ("overlap.pp", self.overlap.pp),
        ] {
            fraction(k, v)?;
        }
        match &self.workload {
            Workload::Training(t) => {
                if p.gpus() != c.gpus as u128 {
                    return Err(err(
                        "hardware.gpus",
                        format!(
                            "{} GPUs is not TP {} × CP {} × PP {} × DP {} = {}",
                            c.gpus,
                            p.tp,
                            p.cp,
                            p.pp,
                            p.dp,
                            p.gpus()
                        ),
                        if (c.gpus as u128).is_multiple_of(p.tp as u128 * p.cp as u128 * p.pp as u128) {
                            format!("set dp = {}", c.gpus as u128 / (p.tp as u128 * p.cp as u128 * p.pp as u128))
                        } else {
                            format!(
                                "GPUs must be divisible by TP·CP·PP = {}",
                                p.tp as u128 * p.cp as u128 * p.pp as u128
                            )
                        },
                    ));
                }
                if t.seq_len == 0 || t.micro_batch == 0 || t.global_batch == 0 {
                    return Err(err(
                        "training.seq_len",
                        "sequence length and batch sizes must be at least 1".into(),
                        "check the training section",
                    ));
                }
                if t.seq_len % p.cp != 0 {
                    return Err(err(
                        "parallel.cp",
                        format!("CP {} does not divide sequence length {}", p.cp, t.seq_len),
                        "pick a CP that divides seq_len",
                    ));
                }
                if !(t.global_batch as u64).is_multiple_of(p.dp as u64 * t.micro_batch as u64) {
                    return Err(err(
                        "training.global_batch",
                        format!(
                            "global batch {} is not a multiple of DP {} × micro-batch {}",
                            t.global_batch, p.dp, t.micro_batch
                        ),
                        format!("use a global batch that is a multiple of {}", p.dp as u64 * t.micro_batch as u64),
                    ));
                }
                if p.schedule == Schedule::Interleaved && p.v() > 1 && t.micro_batches(p.dp) % p.pp != 0 {
                    return Err(err(
                        "parallel.virtual_stages",
                        format!(
                            "the interleaved schedule needs micro-batches ({}) to be a multiple of PP {}",
                            t.micro_batches(p.dp),
                            p.pp
                        ),
                        "change the global batch or use schedule = \"1f1b\"",
                    ));
                }
            }
            Workload::Inference(i) => {
                if p.gpus() > c.gpus as u128 {
                    return Err(err(
                        "hardware.gpus",
                        format!("the layout needs {} GPUs, only {} given", p.gpus(), c.gpus),
                        "raise --gpus or shrink TP/PP/DP",
                    ));
                }
                if i.batch == 0 || i.output_tokens == 0 {
                    return Err(err(
                        "inference.batch",
                        "batch and output tokens must be at least 1".into(),
                        "check the inference section",
                    ));
                }
                if p.cp > 1 || p.zero.0 > 0 {
                    return Err(err(
                        "parallel.cp",
                        "context parallelism and ZeRO apply to training only".into(),
                        "use cp = 1 and zero = 0 for inference",
                    ));
                }
            }
        }
        Ok(())
    }
}

fn largest_divisor_at_most(n: u32, limit: u32) -> u32 {
    (1..=limit.min(n)).rev().find(|d| n.is_multiple_of(*d)).unwrap_or(1)
}
