//! Inputs: the `[plan]` TOML section (or a standalone plan file), the same keys from command-line
//! flags, and the facts a fabric file provides. `resolve` expands presets, fills defaults and
//! validates, returning a `Scenario` or a `PlanError` that names the key; `locate` turns a key
//! into file:line:column and `flag_for` into the flag that sets it.

use crate::hardware::GpuSpec;
use crate::link::LinkProfile;
use crate::model::ModelSpec;
use crate::precision::Precision;
use crate::scenario::{
    Cluster, Inference, Overlap, Parallel, Recompute, Scenario, Schedule, Training, Workload, ZeroStage,
};
use crate::PlanError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlanSpec {
    pub model: ModelInput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grad_reduce: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingInput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<InferenceInput>,
    pub parallel: ParallelInput,
    pub hardware: HardwareInput,
    pub interconnect: InterconnectInput,
    pub overlap: OverlapInput,
    /// Settings of `--compare` (ignored by a single plan).
    pub compare: CompareInput,
}

macro_rules! input_struct {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            $($(#[$fm])* #[serde(skip_serializing_if = "Option::is_none")] pub $f: Option<$t>,)*
        }
    };
}

input_struct!(
    /// A preset, or a custom shape, or a preset with some fields overridden.
    ModelInput {
        preset: String,
        params_billions: f64,
        layers: u32,
        hidden: u32,
        heads: u32,
        kv_heads: u32,
        head_dim: u32,
        ffn_hidden: u32,
        vocab: u32,
        experts: u32,
        top_k: u32,
        moe_layers: u32,
        expert_ffn_hidden: u32,
        kv_latent_dim: u32,
        max_nodes_per_token: u32,
    }
);

input_struct!(TrainingInput {
    /// Sequences per step; or give `global_batch_tokens`.
    global_batch: u32,
    global_batch_tokens: u64,
    micro_batch: u32,
    seq_len: u32,
});

input_struct!(InferenceInput { prompt_tokens: u32, output_tokens: u32, batch: u32, disaggregated: bool });

input_struct!(ParallelInput {
    tp: u32,
    pp: u32,
    dp: u32,
    ep: u32,
    cp: u32,
    sequence_parallel: bool,
    schedule: String,
    virtual_stages: u32,
    zero: u8,
    /// FSDP full shard, the same as zero = 3.
    fsdp: bool,
    recompute: String,
    /// Micro-batches per pipeline per step; sets the global batch to m·dp·micro_batch when it
    /// is not given.
    micro_batches: u32,
});

input_struct!(HardwareInput {
    gpu: String,
    gpus: u32,
    gpus_per_node: u32,
    intra_node: String,
    intra_node_gbytes_per_s: f64,
    nics_per_node: u32,
    peak_tflops: f64,
    /// Share of peak sustained while computing; or give `sustained_tflops`.
    compute_efficiency: f64,
    sustained_tflops: f64,
    hbm_gbytes: f64,
    hbm_tbytes_per_s: f64,
    hbm_efficiency: f64,
    memory_reserve: f64,
});

input_struct!(InterconnectInput { preset: String, rate_gbps: f64, latency_us: f64, efficiency: f64, max_hosts: u32 });

input_struct!(OverlapInput { tp: f64, cp: f64, ep: f64, pp: f64 });

input_struct!(CompareInput {
    /// Columns, cheapest first: presets or `preset@GBPS`.
    links: Vec<String>,
    /// Nodes in the cluster usages.
    nodes: u32,
    /// Checkpoint interval of the shared-storage usage.
    checkpoint_interval_seconds: f64,
});

/// What a fabric file tells the planner (read by the CLI from `rocelab-model`, so this crate
/// stays usable without it). Values only fill gaps: explicit plan keys win.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FabricFacts {
    pub gpus_per_node: Option<u32>,
    pub nics_per_node: Option<u32>,
    pub nic_rate_gbps: Option<f64>,
    pub intra_node: Option<String>,
    pub intra_node_gbytes_per_s: Option<f64>,
    pub hosts: Option<u32>,
    /// GPU preset name, when the fabric names a known one.
    pub gpu: Option<String>,
    /// "roce" or "ib", from the fabric's transport, picks the latency profile.
    pub transport_preset: Option<String>,
}

/// Default compute efficiency: share of dense peak that large transformer GEMMs sustain while
/// the GPU is busy (an assumption; Llama 3 reports 38–43% MFU over whole steps, which includes
/// the bubble and exposed communication this planner adds on top).
pub const DEFAULT_COMPUTE_EFFICIENCY: f64 = 0.5;
pub const DEFAULT_HBM_EFFICIENCY: f64 = 0.8;
pub const DEFAULT_MEMORY_RESERVE: f64 = 0.1;
/// GPUs a training plan uses when neither the GPU count nor DP is given.
pub const DEFAULT_TRAINING_GPUS: u64 = 64;
/// Model planned when none is given.
pub const DEFAULT_MODEL: &str = "llama3-70b";
/// Default global batch when none is given: 4 Mi tokens.
pub const DEFAULT_GLOBAL_BATCH_TOKENS: u64 = 4 << 20;

fn err(key: &str, message: impl Into<String>, hint: impl Into<String>) -> PlanError {
    PlanError { key: key.into(), message: message.into(), hint: hint.into() }
}

fn unknown(key: &str, what: &str, got: &str, known: &[&str]) -> PlanError {
    err(key, format!("unknown {what} `{got}`"), format!("known: {}", known.join(", ")))
}

impl PlanSpec {
    /// Values from `over` replace those in `self` (flags over file).
    pub fn overlay(&self, over: &PlanSpec) -> Result<PlanSpec, PlanError> {
        let mut base = toml::Value::try_from(self).map_err(|e| err("", e.to_string(), "report this bug"))?;
        let top = toml::Value::try_from(over).map_err(|e| err("", e.to_string(), "report this bug"))?;
        merge(&mut base, top);
        base.try_into().map_err(|e: toml::de::Error| err("", e.to_string(), "check the plan keys"))
    }

    /// True if `key` (dotted) is set in this spec.
    pub fn has(&self, key: &str) -> bool {
        let Ok(v) = toml::Value::try_from(self) else { return false };
        let mut cur = &v;
        for part in key.split('.') {
            match cur.get(part) {
                Some(next) => cur = next,
                None => return false,
            }
        }
        true
    }

    /// Fills gaps from a fabric file.
    pub fn with_fabric(&self, f: &FabricFacts) -> PlanSpec {
        let mut s = self.clone();
        let hw = &mut s.hardware;
        hw.gpus_per_node = hw.gpus_per_node.or(f.gpus_per_node);
        hw.nics_per_node = hw.nics_per_node.or(f.nics_per_node);
        hw.gpu = hw.gpu.clone().or_else(|| f.gpu.clone());
        if hw.intra_node.is_none() && hw.intra_node_gbytes_per_s.is_none() {
            hw.intra_node = f.intra_node.clone();
            hw.intra_node_gbytes_per_s = f.intra_node_gbytes_per_s;
        }
        if hw.gpus.is_none() {
            if let (Some(h), Some(g)) = (f.hosts, f.gpus_per_node) {
                hw.gpus = Some(h.saturating_mul(g));
            }
        }
        let ic = &mut s.interconnect;
        if ic.preset.is_none() {
            if let Some(rate) = f.nic_rate_gbps {
                let family = f.transport_preset.clone().unwrap_or_else(|| "roce".into());
                let nearest = [100u32, 200, 400, 800]
                    .into_iter()
                    .min_by(|a, b| (*a as f64 - rate).abs().total_cmp(&(*b as f64 - rate).abs()));
                ic.preset = Some(match (family.as_str(), nearest) {
                    ("ib", Some(200)) => "ib-hdr".into(),
                    ("ib", Some(800)) => "ib-xdr".into(),
                    ("ib", _) => "ib-ndr".into(),
                    (_, Some(n)) => format!("roce{n}"),
                    _ => "roce400".into(),
                });
                ic.rate_gbps = ic.rate_gbps.or(Some(rate));
            }
        }
        s
    }
}

fn merge(base: &mut toml::Value, top: toml::Value) {
    match (base, top) {
        (toml::Value::Table(b), toml::Value::Table(t)) => {
            for (k, v) in t {
                match b.get_mut(&k) {
                    Some(bv) => merge(bv, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, t) => *b = t,
    }
}

fn resolve_model(mi: &ModelInput) -> Result<ModelSpec, PlanError> {
    let custom = mi.params_billions.is_some() || mi.layers.is_some() || mi.hidden.is_some() || mi.heads.is_some();
    let preset = mi.preset.clone().or_else(|| (!custom).then(|| DEFAULT_MODEL.to_string()));
    let mut m = match &preset {
        Some(name) => {
            ModelSpec::preset(name).ok_or_else(|| unknown("model.preset", "model preset", name, ModelSpec::PRESETS))?
        }
        None => {
            for (k, v) in [
                ("model.params_billions", mi.params_billions.is_some()),
                ("model.layers", mi.layers.is_some()),
                ("model.hidden", mi.hidden.is_some()),
                ("model.heads", mi.heads.is_some()),
            ] {
                if !v {
                    return Err(err(
                        k,
                        "a custom model needs params_billions, layers, hidden and heads",
                        format!("give it, or pick a preset: {}", ModelSpec::PRESETS.join(", ")),
                    ));
                }
            }
            let hidden = mi.hidden.unwrap_or(1);
            let heads = mi.heads.unwrap_or(1).max(1);
            ModelSpec {
                name: "custom".into(),
                params: 0.0,
                layers: 0,
                hidden,
                heads,
                kv_heads: heads,
                head_dim: hidden / heads,
                ffn_hidden: hidden * 4,
                vocab: 32_000,
                experts: 1,
                top_k: 1,
                moe_layers: 0,
                expert_ffn_hidden: 0,
                kv_latent_dim: None,
                max_nodes_per_token: None,
            }
        }
    };
    if let Some(v) = mi.params_billions {
        m.params = v * 1e9;
    }
    macro_rules! set {
        ($($f:ident),*) => { $(if let Some(v) = mi.$f { m.$f = v; })* };
    }
    set!(layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, experts, top_k, moe_layers, expert_ffn_hidden);
    if mi.head_dim.is_none() && (mi.hidden.is_some() || mi.heads.is_some()) && m.heads > 0 {
        m.head_dim = m.hidden / m.heads;
    }
    if mi.max_nodes_per_token.is_some() {
        m.max_nodes_per_token = mi.max_nodes_per_token.filter(|n| *n > 0);
    }
    if mi.kv_latent_dim.is_some() {
        m.kv_latent_dim = mi.kv_latent_dim;
    }
    if m.experts > 1 && mi.moe_layers.is_none() && m.moe_layers == 0 {
        m.moe_layers = m.layers;
    }
    if m.experts > 1 && m.expert_ffn_hidden == 0 {
        m.expert_ffn_hidden = m.ffn_hidden;
    }
    if mi.preset.is_some() && mi != &(ModelInput { preset: mi.preset.clone(), ..Default::default() }) {
        m.name = format!("{} (modified)", m.name);
    }
    Ok(m)
}

/// Expands presets, fills defaults, validates.
pub fn resolve(spec: &PlanSpec) -> Result<Scenario, PlanError> {
    let model = resolve_model(&spec.model)?;
    let precision = match &spec.precision {
        Some(p) => Precision::parse(p).ok_or_else(|| unknown("precision", "precision", p, Precision::NAMES))?,
        None => Precision::Bf16,
    };
    let grad_reduce = match &spec.grad_reduce {
        Some(p) => Precision::parse(p)
            .filter(|p| matches!(p, Precision::Fp32 | Precision::Bf16 | Precision::Fp16))
            .ok_or_else(|| unknown("grad_reduce", "gradient reduction format", p, &["fp32", "bf16", "fp16"]))?,
        None => {
            if precision == Precision::Fp32 {
                Precision::Fp32
            } else {
                Precision::Bf16
            }
        }
    };
    if spec.training.is_some() && spec.inference.is_some() {
        return Err(err(
            "inference",
            "both a training and an inference workload are given",
            "keep one of [plan.training] / [plan.inference] (or --inference)",
        ));
    }
    let inference = spec.inference.is_some();
    if precision == Precision::Int4 && !inference {
        return Err(err("precision", "int4 is a weight-only inference format", "train in bf16, fp16, fp8 or fp32"));
    }

    // Hardware.
    let hw = &spec.hardware;
    let gpu_name = hw.gpu.clone().unwrap_or_else(|| "h100".into());
    let mut gpu =
        GpuSpec::preset(&gpu_name).ok_or_else(|| unknown("hardware.gpu", "GPU preset", &gpu_name, GpuSpec::PRESETS))?;
    if let Some(v) = hw.peak_tflops {
        gpu.peak_bf16_tflops = v;
    }
    if let Some(v) = hw.hbm_gbytes {
        gpu.hbm_gbytes = v;
    }
    if let Some(v) = hw.hbm_tbytes_per_s {
        gpu.hbm_tbytes_per_s = v;
    }
    let gpus_per_node = hw.gpus_per_node.unwrap_or(gpu.gpus_per_node);
    if gpus_per_node == 0 {
        return Err(err("hardware.gpus_per_node", "must be at least 1", "e.g. 8 for an HGX server"));
    }
    let intra_name = hw.intra_node.clone().unwrap_or_else(|| gpu.intra_node_link.clone());
    let mut intra = LinkProfile::preset(&intra_name)
        .ok_or_else(|| unknown("hardware.intra_node", "intra-node link", &intra_name, LinkProfile::PRESETS))?;
    if let Some(gbs) = hw.intra_node_gbytes_per_s {
        if !(gbs.is_finite() && gbs > 0.0) {
            return Err(err(
                "hardware.intra_node_gbytes_per_s",
                format!("must be positive, got {gbs}"),
                "GB/s per direction per GPU",
            ));
        }
        intra.rate_gbps = gbs * 8.0;
        intra.name = format!("{} ({gbs} GB/s)", intra.name);
    }
    let ic = &spec.interconnect;
    let net_name = ic.preset.clone().unwrap_or_else(|| "roce400".into());
    let mut network = LinkProfile::preset(&net_name)
        .ok_or_else(|| unknown("interconnect.preset", "interconnect preset", &net_name, LinkProfile::PRESETS))?;
    if !network.is_network() {
        return Err(err(
            "interconnect.preset",
            format!("`{net_name}` links GPUs inside a node, not nodes"),
            "pick a network: eth*-tcp, roce*, ib-*, tb4, tb5 (set the intra-node link with --intra-node)",
        ));
    }
    if let Some(v) = ic.rate_gbps {
        if v != network.rate_gbps {
            network.name = format!("{}@{}G", network.name, v);
        }
        network.rate_gbps = v;
        network.link_gbps = None;
    }
    if let Some(v) = ic.latency_us {
        network.latency_us = v;
    }
    if let Some(v) = ic.efficiency {
        network.efficiency = v;
    }
    if let Some(v) = ic.max_hosts {
        network.max_hosts = Some(v);
    }
    let nics_per_node = hw.nics_per_node.or(network.typical_nics_per_node).unwrap_or(gpus_per_node);
    let efficiency = hw.compute_efficiency.unwrap_or(DEFAULT_COMPUTE_EFFICIENCY);
    if !(efficiency > 0.0 && efficiency <= 1.0) {
        return Err(err(
            "hardware.compute_efficiency",
            format!("must be in (0, 1], got {efficiency}"),
            "a share of peak such as 0.5",
        ));
    }
    let sustained = hw.sustained_tflops.unwrap_or(gpu.peak_bf16_tflops * precision.peak_multiplier() * efficiency);

    // Parallel layout.
    let pi = &spec.parallel;
    let default_tp = (1..=gpus_per_node.min(model.heads))
        .rev()
        .find(|d| model.heads % d == 0 && gpus_per_node.is_multiple_of(*d))
        .unwrap_or(1);
    let tp = pi.tp.unwrap_or(default_tp);
    let pp = pi.pp.unwrap_or(1);
    let cp = pi.cp.unwrap_or(1);
    let ep = pi.ep.unwrap_or(1);
    if tp == 0 || pp == 0 || cp == 0 {
        let k = if tp == 0 {
            "parallel.tp"
        } else if pp == 0 {
            "parallel.pp"
        } else {
            "parallel.cp"
        };
        return Err(err(k, "must be at least 1", "use 1 to disable this dimension"));
    }
    let inner = tp as u64 * pp as u64;
    let inner = match inner.checked_mul(cp as u64).filter(|i| *i <= u32::MAX as u64) {
        Some(i) => i,
        None => {
            return Err(err(
                "parallel.tp",
                format!("TP {tp} × PP {pp} × CP {cp} exceeds any GPU count"),
                "use realistic sizes",
            ))
        }
    };
    let (gpus, dp) = match (hw.gpus, pi.dp) {
        (Some(g), Some(d)) => (g, d),
        (Some(g), None) => {
            if inference {
                (g, (g as u64 / inner).max(1) as u32)
            } else if !(g as u64).is_multiple_of(inner) {
                return Err(err(
                    "hardware.gpus",
                    format!("{g} GPUs are not divisible by TP {tp} × CP {cp} × PP {pp} = {inner}"),
                    format!("use a multiple of {inner} GPUs, or change TP/PP"),
                ));
            } else {
                (g, (g as u64 / inner) as u32)
            }
        }
        (None, Some(d)) => ((inner * d as u64).min(u32::MAX as u64) as u32, d),
        // Training with no size given: at least DEFAULT_TRAINING_GPUS (eight 8-GPU nodes).
        (None, None) if !inference => {
            let dp = DEFAULT_TRAINING_GPUS.div_ceil(inner).max(1);
            ((inner * dp).min(u32::MAX as u64) as u32, dp as u32)
        }
        (None, None) => (inner as u32, 1),
    };
    let schedule = match &pi.schedule {
        Some(s) => Schedule::parse(s)
            .ok_or_else(|| unknown("parallel.schedule", "pipeline schedule", s, &["gpipe", "1f1b", "interleaved"]))?,
        None if pi.virtual_stages.unwrap_or(1) > 1 => Schedule::Interleaved,
        None => Schedule::OneFOneB,
    };
    let virtual_stages = pi.virtual_stages.unwrap_or(if schedule == Schedule::Interleaved { 2 } else { 1 });
    let zero = match (pi.zero, pi.fsdp) {
        (Some(z), Some(true)) if z != 3 => {
            return Err(err(
                "parallel.fsdp",
                format!("fsdp (full shard = ZeRO-3) conflicts with zero = {z}"),
                "drop one of them",
            ))
        }
        (_, Some(true)) => 3,
        (Some(z), _) => z,
        (None, _) => {
            if inference {
                0
            } else {
                1
            }
        }
    };
    let recompute = match &pi.recompute {
        Some(r) => Recompute::parse(r)
            .ok_or_else(|| unknown("parallel.recompute", "recompute mode", r, &["none", "selective", "full"]))?,
        None => Recompute::Selective,
    };
    let parallel = Parallel {
        tp,
        cp,
        pp,
        dp,
        ep,
        sequence_parallel: pi.sequence_parallel.unwrap_or(tp > 1 && !inference),
        schedule,
        virtual_stages,
        zero: ZeroStage(zero),
        recompute,
    };

    let workload = if let Some(ii) = &spec.inference {
        Workload::Inference(Inference {
            prompt_tokens: ii.prompt_tokens.unwrap_or(2048),
            output_tokens: ii.output_tokens.unwrap_or(256),
            batch: ii.batch.unwrap_or(8),
            disaggregated: ii.disaggregated.unwrap_or(false),
        })
    } else {
        let ti = spec.training.clone().unwrap_or_default();
        let seq_len = ti.seq_len.unwrap_or(4096);
        let micro_batch = ti.micro_batch.unwrap_or(1);
        if seq_len == 0 || micro_batch == 0 {
            return Err(err(
                if seq_len == 0 { "training.seq_len" } else { "training.micro_batch" },
                "must be at least 1",
                "check the training section",
            ));
        }
        let global_batch = match (ti.global_batch, ti.global_batch_tokens) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "training.global_batch_tokens",
                    "both global_batch and global_batch_tokens are given",
                    "keep one",
                ))
            }
            (Some(g), None) => g,
            (None, Some(tok)) => {
                if tok % seq_len as u64 != 0 {
                    return Err(err(
                        "training.global_batch_tokens",
                        format!("{tok} tokens is not a whole number of {seq_len}-token sequences"),
                        "use a multiple of seq_len",
                    ));
                }
                (tok / seq_len as u64).min(u32::MAX as u64) as u32
            }
            (None, None) if pi.micro_batches.is_some() => {
                let m = pi.micro_batches.unwrap_or(1);
                if m == 0 {
                    return Err(err(
                        "parallel.micro_batches",
                        "must be at least 1",
                        "e.g. 4 × PP to keep the bubble small",
                    ));
                }
                (m as u64 * dp as u64 * micro_batch as u64).min(u32::MAX as u64) as u32
            }
            (None, None) => {
                let unit = dp as u64 * micro_batch as u64;
                let seqs = (DEFAULT_GLOBAL_BATCH_TOKENS / seq_len as u64).max(1);
                (seqs.div_ceil(unit.max(1)) * unit).min(u32::MAX as u64) as u32
            }
        };
        if let Some(m) = pi.micro_batches {
            let implied = global_batch as u64 / (dp as u64 * micro_batch as u64).max(1);
            if implied != m as u64 {
                return Err(err(
                    "parallel.micro_batches",
                    format!("{m} micro-batches, but global batch {global_batch} / (DP {dp} × micro-batch {micro_batch}) gives {implied}"),
                    "give either micro_batches or the global batch",
                ));
            }
        }
        Workload::Training(Training { global_batch, micro_batch, seq_len })
    };

    let ov = &spec.overlap;
    let d = Overlap::default();
    let scenario = Scenario {
        model,
        precision,
        grad_reduce,
        workload,
        parallel,
        cluster: Cluster {
            gpu,
            gpus,
            gpus_per_node,
            intra_node: intra,
            network,
            nics_per_node,
            sustained_tflops: sustained,
            hbm_efficiency: hw.hbm_efficiency.unwrap_or(DEFAULT_HBM_EFFICIENCY),
            memory_reserve: hw.memory_reserve.unwrap_or(DEFAULT_MEMORY_RESERVE),
        },
        overlap: Overlap {
            tp: ov.tp.unwrap_or(d.tp),
            cp: ov.cp.unwrap_or(d.cp),
            ep: ov.ep.unwrap_or(d.ep),
            pp: ov.pp.unwrap_or(d.pp),
        },
    };
    scenario.validate()?;
    Ok(scenario)
}

/// The command-line flag that sets `key`, for error messages.
pub fn flag_for(key: &str) -> Option<&'static str> {
    Some(match key {
        "model.preset" => "--model",
        "model.params_billions" => "--params-billions",
        "model.layers" => "--layers",
        "model.hidden" => "--hidden",
        "model.heads" => "--heads",
        "model.kv_heads" => "--kv-heads",
        "model.experts" => "--experts",
        "model.top_k" => "--top-k",
        "precision" => "--precision",
        "grad_reduce" => "--grad-reduce",
        "training.global_batch" => "--global-batch",
        "training.global_batch_tokens" => "--global-batch-tokens",
        "training.micro_batch" => "--micro-batch",
        "training.seq_len" => "--seq-len",
        "inference" => "--inference",
        "inference.prompt_tokens" => "--prompt-tokens",
        "inference.output_tokens" => "--output-tokens",
        "inference.batch" => "--batch",
        "inference.disaggregated" => "--disaggregated",
        "parallel.tp" => "--tp",
        "parallel.pp" => "--pp",
        "parallel.dp" => "--dp",
        "parallel.ep" => "--ep",
        "parallel.cp" => "--cp",
        "parallel.schedule" => "--schedule",
        "parallel.virtual_stages" => "--virtual-stages",
        "parallel.micro_batches" => "--micro-batches",
        "parallel.zero" => "--zero",
        "parallel.fsdp" => "--fsdp",
        "parallel.recompute" => "--recompute",
        "parallel.sequence_parallel" => "--sequence-parallel",
        "hardware.gpu" => "--gpu",
        "hardware.gpus" => "--gpus",
        "hardware.gpus_per_node" => "--gpus-per-node",
        "hardware.intra_node" => "--intra-node",
        "hardware.nics_per_node" => "--nics-per-node",
        "hardware.sustained_tflops" => "--sustained-tflops",
        "hardware.compute_efficiency" => "--compute-efficiency",
        "interconnect.preset" => "--interconnect",
        "interconnect.rate_gbps" => "--link-gbps",
        "interconnect.latency_us" => "--link-latency-us",
        "interconnect.efficiency" => "--link-efficiency",
        "overlap.tp" => "--overlap-tp",
        "overlap.cp" => "--overlap-cp",
        "overlap.ep" => "--overlap-ep",
        "overlap.pp" => "--overlap-pp",
        "compare.links" => "--links",
        "compare.nodes" => "--nodes",
        "compare.checkpoint_interval_seconds" => "--checkpoint-interval-seconds",
        _ => return None,
    })
}

/// Parses a plan file: the `[plan]` table of a TOML file (other tables ignored), or a
/// standalone file whose top level is the plan. Errors carry file:line:column.
pub fn parse_plan_file(file: &str, text: &str) -> Result<PlanSpec, String> {
    let doc = toml_edit::ImDocument::parse(text.to_string()).map_err(|e| {
        let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        format!("{file}:{line}:{col}: error: {}", e.message().trim())
    })?;
    let nested = doc.as_table().contains_key("plan");
    #[derive(Deserialize)]
    struct Wrapper {
        plan: PlanSpec,
    }
    let parsed =
        if nested { toml::from_str::<Wrapper>(text).map(|w| w.plan) } else { toml::from_str::<PlanSpec>(text) };
    parsed.map_err(|e| {
        let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        format!(
            "{file}:{line}:{col}: error: {}\n  = help: plan keys are documented in docs/plan.md",
            e.message().trim()
        )
    })
}

/// Line and column (1-based) of a dotted plan key in `text`, for errors found after parsing.
pub fn locate(text: &str, key: &str) -> Option<(usize, usize)> {
    let doc = toml_edit::ImDocument::parse(text.to_string()).ok()?;
    let root = doc.as_table();
    let mut parts: Vec<&str> = key.split('.').filter(|p| !p.is_empty()).collect();
    if root.contains_key("plan") {
        parts.insert(0, "plan");
    }
    let mut table: &dyn toml_edit::TableLike = root;
    let mut span = None;
    for (i, part) in parts.iter().enumerate() {
        let Some(item) = table.get(part) else { break };
        span = item.span().or_else(|| table.key(part).and_then(|k| k.span())).or(span);
        if let Some(k) = table.key(part).and_then(|k| k.span()) {
            span = Some(k);
        }
        if i + 1 < parts.len() {
            match item.as_table_like() {
                Some(t) => table = t,
                None => break,
            }
        }
    }
    span.map(|s| line_col(text, s.start))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}
