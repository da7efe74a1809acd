//! `--compare`: one model across several interconnects and six usages, producing the
//! "usage → acceptable network" table. Every cell is an estimate; its verdict follows from the
//! share of time the GPUs (or the request) wait on the network, and the cell shows that figure.
//!
//! The usages, each a plan built from the same model and GPU:
//! * replicated serving — a replica per node (TP inside the node), requests and responses
//!   cross the network; figure: network share of the request latency.
//! * RAG — the same replicas, plus an embedding call, a vector search and k retrieved chunks
//!   before the prompt; figure: network share of the time to first token.
//! * shared storage — a training job writes a synchronous checkpoint of its full state to
//!   shared storage through the nodes' NICs; figure: checkpoint stall share.
//! * multi-node pipeline parallel — training, TP inside nodes, PP across nodes.
//! * multi-node tensor parallel — training, TP spanning two nodes.
//! * homelab — inference of the model in 4 bits on workstations with one 24 GB GPU each,
//!   pipeline-parallel across the fewest hosts that hold it.
//!
//! The acceptable network of a row is the first column, in the order given, whose verdict is
//! good or acceptable: list the links from cheapest to dearest.

use crate::estimate::{estimate, Verdict};
use crate::link::LinkProfile;
use crate::scenario::Scenario;
use crate::spec::{resolve, InferenceInput, PlanSpec, TrainingInput};
use crate::PlanError;
use serde::Serialize;

/// Default columns, cheapest first.
pub const DEFAULT_LINKS: &[&str] =
    &["tb5", "eth10-tcp", "eth25-tcp", "eth100-tcp", "roce100", "roce400", "ib-ndr", "roce800"];

/// Request + response on the wire: ~4 bytes of UTF-8 per token plus 1 kB of HTTP and JSON.
const BYTES_PER_TEXT_TOKEN: f64 = 4.0;
const HTTP_OVERHEAD_BYTES: f64 = 1000.0;
/// RAG: retrieved chunks and their size (a common LangChain/LlamaIndex default), and an
/// embedding vector returned by the embedding service (1,024 FP32 values).
const RAG_CHUNKS: f64 = 8.0;
const RAG_CHUNK_TOKENS: f64 = 512.0;
const RAG_EMBEDDING_BYTES: f64 = 4096.0;
/// Checkpoint state per parameter: BF16 weights + FP32 master, Adam m and v (ZeRO paper).
const CHECKPOINT_BYTES_PER_PARAM: f64 = 14.0;

#[derive(Debug, Clone, PartialEq)]
pub struct CompareSpec {
    /// Model, precision, GPU and workload sizes; parallel keys are set per usage.
    pub base: PlanSpec,
    /// Columns: link presets, optionally `preset@RATE_GBPS`.
    pub links: Vec<LinkProfile>,
    /// Nodes in the cluster usages.
    pub nodes: u32,
    /// Checkpoint interval for the shared-storage row.
    pub checkpoint_interval_seconds: f64,
    /// What the twin measured on a fabric for the RoCE and InfiniBand columns (`--fabric`):
    /// replaces their preset efficiency.
    pub twin: Option<TwinLinks>,
}

/// The bandwidth efficiency the twin measured on one fabric for each link layer (the share of
/// the line rate a collective gets, `rocelab_workload::linklayer`), and how it was measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TwinLinks {
    pub roce_efficiency: f64,
    pub ib_efficiency: f64,
    /// One line for the table's note: where the figures come from.
    pub note: String,
    /// The homelab row as the serving twin measured it on the fabric, for the fabric's own
    /// column.
    pub serving: Option<TwinServing>,
}

/// What the serving twin measured for the homelab row's plan ([`homelab_scenario`]) on a
/// fabric: one request on an idle fabric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TwinServing {
    /// The column it replaces (`tb5`, `roce400`, `ib-ndr`, ...).
    pub link: String,
    /// Share of the request's latency spent waiting on the network.
    pub network_share: f64,
    pub ttft_ms: f64,
    pub tpot_ms: f64,
}

impl TwinLinks {
    /// The column with the twin's efficiency for its link layer, if it is a RoCE or an
    /// InfiniBand column; other columns unchanged.
    pub fn apply(&self, l: &LinkProfile) -> LinkProfile {
        let base = l.name.split('@').next().unwrap_or(&l.name);
        let e = if base.starts_with("roce") {
            self.roce_efficiency
        } else if base.starts_with("ib-") {
            self.ib_efficiency
        } else {
            return l.clone();
        };
        if !(e.is_finite() && e > 0.0 && e <= 1.0) {
            return l.clone();
        }
        LinkProfile {
            efficiency: e,
            source: format!("{}; efficiency {e:.3} measured by the twin", l.source),
            ..l.clone()
        }
    }
}

impl CompareSpec {
    pub fn new(base: PlanSpec) -> CompareSpec {
        CompareSpec {
            base,
            links: DEFAULT_LINKS.iter().filter_map(|l| LinkProfile::preset(l)).collect(),
            nodes: 8,
            checkpoint_interval_seconds: 1800.0,
            twin: None,
        }
    }
}

impl CompareSpec {
    /// Reads `[plan.compare]` (links, nodes, checkpoint interval) from the plan, defaults for the
    /// rest.
    pub fn from_plan(base: PlanSpec) -> Result<CompareSpec, PlanError> {
        let c = base.compare.clone();
        let mut spec = CompareSpec::new(base);
        if let Some(links) = &c.links {
            spec.links = links.iter().map(|l| parse_link(l)).collect::<Result<_, _>>()?;
        }
        if let Some(n) = c.nodes {
            spec.nodes = n;
        }
        if let Some(t) = c.checkpoint_interval_seconds {
            if !(t.is_finite() && t > 0.0) {
                return Err(PlanError {
                    key: "compare.checkpoint_interval_seconds".into(),
                    message: format!("must be a positive number of seconds, got {t}"),
                    hint: "e.g. 1800 for every 30 minutes".into(),
                });
            }
            spec.checkpoint_interval_seconds = t;
        }
        Ok(spec)
    }
}

/// Parses a column: `roce400`, or `roce400@800` for the same link at 800 Gb/s.
pub fn parse_link(s: &str) -> Result<LinkProfile, PlanError> {
    let (name, rate) = match s.split_once('@') {
        Some((n, r)) => {
            let r: f64 =
                r.trim().trim_end_matches('G').parse().ok().filter(|r: &f64| r.is_finite() && *r > 0.0).ok_or_else(
                    || PlanError {
                        key: "compare.links".into(),
                        message: format!("`{s}`: rate `{r}` is not a number of Gb/s"),
                        hint: "write preset@RATE, e.g. roce400@800".into(),
                    },
                )?;
            (n.trim(), Some(r))
        }
        None => (s.trim(), None),
    };
    let mut l = LinkProfile::preset(name).ok_or_else(|| PlanError {
        key: "compare.links".into(),
        message: format!("unknown interconnect preset `{name}`"),
        hint: format!("known: {}", LinkProfile::PRESETS.join(", ")),
    })?;
    if !l.is_network() {
        return Err(PlanError {
            key: "compare.links".into(),
            message: format!("`{name}` is an intra-node link"),
            hint: "compare networks: eth*-tcp, roce*, ib-*, tb4, tb5".into(),
        });
    }
    if let Some(r) = rate {
        l.name = format!("{name}@{r}G");
        l.rate_gbps = r;
        l.link_gbps = None;
    }
    Ok(l)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub link: String,
    pub verdict: Verdict,
    /// The deciding figure, as printed.
    pub figure: String,
    /// The share behind the verdict (network wait, or checkpoint stall).
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub usage: String,
    /// The plan behind the row.
    pub scenario: String,
    pub cells: Vec<Cell>,
    /// First column that is good or acceptable.
    pub acceptable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareTable {
    pub links: Vec<String>,
    pub rows: Vec<Row>,
    pub note: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Usage {
    Replicated,
    Rag,
    Storage,
    Pipeline,
    Tensor,
    Homelab,
}

impl Usage {
    const ALL: [Usage; 6] =
        [Usage::Replicated, Usage::Rag, Usage::Storage, Usage::Pipeline, Usage::Tensor, Usage::Homelab];
    fn name(self) -> &'static str {
        match self {
            Usage::Replicated => "replicated serving",
            Usage::Rag => "RAG",
            Usage::Storage => "shared storage",
            Usage::Pipeline => "multi-node pipeline parallel",
            Usage::Tensor => "multi-node tensor parallel",
            Usage::Homelab => "homelab",
        }
    }
}

fn with_link(spec: &PlanSpec, l: &LinkProfile) -> PlanSpec {
    let mut s = spec.clone();
    let base = l.name.split('@').next().unwrap_or(&l.name).to_string();
    s.interconnect.preset = Some(base);
    s.interconnect.rate_gbps = Some(l.rate_gbps);
    s.interconnect.latency_us = Some(l.latency_us);
    s.interconnect.efficiency = Some(l.efficiency);
    s
}

/// A serving replica: the smallest TP inside one node that holds weights and KV cache.
fn serving_spec(base: &PlanSpec, nodes: u32, extra_prompt: u32) -> Result<(PlanSpec, Scenario), PlanError> {
    let mut s = base.clone();
    s.training = None;
    let mut inf = base.inference.clone().unwrap_or_default();
    inf.prompt_tokens = Some(inf.prompt_tokens.unwrap_or(2048).saturating_add(extra_prompt));
    inf.disaggregated = Some(false);
    s.inference = Some(inf);
    s.parallel = Default::default();
    let probe =
        resolve(&PlanSpec { parallel: crate::spec::ParallelInput { tp: Some(1), ..Default::default() }, ..s.clone() })?;
    let g = probe.cluster.gpus_per_node;
    let mut last = None;
    for tp in [1u32, 2, 4, 8, 16].into_iter().filter(|t| *t <= g && probe.model.heads % t == 0) {
        let mut try_spec = s.clone();
        try_spec.parallel.tp = Some(tp);
        try_spec.parallel.pp = Some(1);
        try_spec.parallel.dp = Some((g / tp).saturating_mul(nodes));
        try_spec.hardware.gpus = Some(g.saturating_mul(nodes));
        let sc = resolve(&try_spec)?;
        let fits = estimate(&sc).memory.fits;
        last = Some((try_spec, sc));
        if fits {
            break;
        }
    }
    last.ok_or_else(|| PlanError {
        key: "hardware.gpus_per_node".into(),
        message: "no TP fits a node".into(),
        hint: "use a larger GPU".into(),
    })
}

fn training_spec(base: &PlanSpec, nodes: u32, tp_nodes: u32) -> Result<PlanSpec, PlanError> {
    let mut s = base.clone();
    s.inference = None;
    if s.training.is_none() {
        s.training = Some(TrainingInput::default());
    }
    let probe =
        resolve(&PlanSpec { parallel: crate::spec::ParallelInput { tp: Some(1), ..Default::default() }, ..s.clone() })?;
    let g = probe.cluster.gpus_per_node;
    let tp = g.saturating_mul(tp_nodes);
    s.parallel =
        crate::spec::ParallelInput { tp: Some(tp), pp: Some(nodes / tp_nodes), dp: Some(1), ..Default::default() };
    s.hardware.gpus = Some(g.saturating_mul(nodes));
    if let Some(t) = &mut s.training {
        if t.global_batch.is_none() && t.global_batch_tokens.is_none() {
            t.global_batch = Some(256);
        }
    }
    Ok(s)
}

fn cell_from_estimate(link: &LinkProfile, sc: &Scenario) -> Cell {
    let e = estimate(sc);
    let worst = e.phases.iter().fold(&e.phases[0], |a, p| if p.network_share > a.network_share { p } else { a });
    let figure = match e.verdict {
        Verdict::Unbuildable => format!("({} hosts > {})", sc.cluster.nodes(), link.max_hosts.unwrap_or(0)),
        Verdict::DoesNotFit => format!("(needs {:.0} GB/GPU)", e.memory.total_bytes / 1e9),
        _ => format!("({} of {})", share_text(e.network_share), worst.name),
    };
    Cell { link: link.name.clone(), verdict: e.verdict, figure, share: e.network_share }
}

/// A share as a percentage with enough digits to tell small ones apart.
fn share_text(x: f64) -> String {
    let p = x * 100.0 + 0.0;
    if p >= 1.0 {
        format!("{p:.1}%")
    } else if p >= 0.01 {
        format!("{p:.2}%")
    } else {
        format!("{p:.4}%")
    }
}

/// The usage → acceptable network table.
pub fn compare(spec: &CompareSpec) -> Result<CompareTable, PlanError> {
    if spec.links.is_empty() {
        return Err(PlanError {
            key: "compare.links".into(),
            message: "no links to compare".into(),
            hint: format!("e.g. --links {}", DEFAULT_LINKS.join(",")),
        });
    }
    if !(2..=100_000).contains(&spec.nodes) || !spec.nodes.is_multiple_of(2) {
        return Err(PlanError {
            key: "compare.nodes".into(),
            message: format!("{} nodes", spec.nodes),
            hint: "compare needs an even node count from 2 to 100,000 (TP spans two nodes)".into(),
        });
    }
    let mut base = spec.base.clone();
    if base.model.preset.is_none() && base.model.layers.is_none() {
        base.model.preset = Some("llama3-70b".into());
    }
    let nodes = spec.nodes;
    let links: Vec<LinkProfile> =
        spec.links.iter().map(|l| spec.twin.as_ref().map_or_else(|| l.clone(), |t| t.apply(l))).collect();
    let mut rows = Vec::new();
    for usage in Usage::ALL {
        let mut cells = Vec::new();
        let mut scenario = String::new();
        for link in &links {
            let spec_l = with_link(&base, link);
            let cell = match usage {
                Usage::Replicated | Usage::Rag => {
                    let extra = if usage == Usage::Rag { (RAG_CHUNKS * RAG_CHUNK_TOKENS) as u32 } else { 0 };
                    let (_, sc) = serving_spec(&spec_l, nodes, extra)?;
                    let e = estimate(&sc);
                    let crate::scenario::Workload::Inference(w) = &sc.workload else {
                        unreachable!("serving is inference")
                    };
                    let concurrent = (sc.cluster.gpus_per_node / sc.parallel.tp).max(1) as f64 * w.batch as f64;
                    let node_bw = sc.cluster.network.effective_bytes_per_s() * sc.cluster.nics_per_node as f64;
                    let alpha = sc.cluster.network.latency_seconds();
                    let text =
                        (w.prompt_tokens as f64 + w.output_tokens as f64) * BYTES_PER_TEXT_TOKEN + HTTP_OVERHEAD_BYTES;
                    let (net, base_time, what) = if usage == Usage::Rag {
                        // Embedding call, vector search, chunk fetch, then the LLM call: four round trips.
                        let bytes = text + RAG_EMBEDDING_BYTES + RAG_CHUNKS * RAG_CHUNK_TOKENS * BYTES_PER_TEXT_TOKEN;
                        let net = 4.0 * 2.0 * alpha + bytes * concurrent / node_bw;
                        (net, e.headline.ttft_seconds.unwrap_or(0.0), "of TTFT")
                    } else {
                        let net = 2.0 * alpha + text * concurrent / node_bw;
                        (net, e.headline.request_seconds.unwrap_or(0.0), "of request")
                    };
                    let share = net / (net + base_time);
                    let rag = if usage == Usage::Rag {
                        format!(", {RAG_CHUNKS} retrieved chunks of {RAG_CHUNK_TOKENS} tokens, 4 round trips")
                    } else {
                        String::new()
                    };
                    scenario = format!(
                        "{} inference, one replica per {} GPUs (TP{}), {} nodes, prompt {} + output {} tokens, \
                         batch {}{rag}",
                        sc.model.name, sc.parallel.tp, sc.parallel.tp, nodes, w.prompt_tokens, w.output_tokens, w.batch,
                    );
                    if !e.memory.fits {
                        Cell {
                            link: link.name.clone(),
                            verdict: Verdict::DoesNotFit,
                            figure: format!("(needs {:.0} GB/GPU)", e.memory.total_bytes / 1e9),
                            share,
                        }
                    } else {
                        fixed_cell(link, nodes, share, format!("({} {what})", share_text(share)))
                    }
                }
                Usage::Storage => {
                    let tspec = training_spec(&spec_l, nodes, 1)?;
                    let sc = resolve(&tspec)?;
                    let state = sc.model.params * CHECKPOINT_BYTES_PER_PARAM;
                    let node_bw = sc.cluster.network.effective_bytes_per_s() * sc.cluster.nics_per_node as f64;
                    let t = state / nodes as f64 / node_bw;
                    let share = t / (spec.checkpoint_interval_seconds + t);
                    scenario = format!(
                        "{} training state ({} B/param = {:.0} GB) written by {} nodes through their NICs every \
                         {:.0} s, synchronously; storage assumed faster than the NICs",
                        sc.model.name,
                        CHECKPOINT_BYTES_PER_PARAM,
                        state / 1e9,
                        nodes,
                        spec.checkpoint_interval_seconds
                    );
                    fixed_cell(
                        link,
                        nodes,
                        share,
                        format!("(ckpt {}, {})", crate::render::seconds(t), share_text(share)),
                    )
                }
                Usage::Pipeline | Usage::Tensor => {
                    let tp_nodes = if usage == Usage::Tensor { 2 } else { 1 };
                    let tspec = training_spec(&spec_l, nodes, tp_nodes)?;
                    let sc = resolve(&tspec)?;
                    let crate::scenario::Workload::Training(w) = &sc.workload else { unreachable!("training") };
                    scenario = format!(
                        "{} training on {} nodes × {} {}: {} (TP {} nodes), seq {}, {} sequences per step",
                        sc.model.name,
                        nodes,
                        sc.cluster.gpus_per_node,
                        sc.cluster.gpu.name,
                        sc.parallel.label(),
                        if tp_nodes == 1 { "inside" } else { "across 2" },
                        w.seq_len,
                        w.global_batch
                    );
                    cell_from_estimate(link, &sc)
                }
                Usage::Homelab => {
                    let sc = homelab_on(&spec_l, &base)?;
                    scenario = format!(
                        "{} in int4 on {} workstations with one {} each, PP{} across them, batch 1",
                        sc.model.name, sc.parallel.pp, sc.cluster.gpu.name, sc.parallel.pp
                    );
                    let cell = cell_from_estimate(link, &sc);
                    let base_name = link.name.split('@').next().unwrap_or(&link.name);
                    match spec.twin.as_ref().and_then(|t| t.serving.as_ref()).filter(|t| t.link == base_name) {
                        // The twin's measured share for the fabric's own column, unless the
                        // plan cannot be built or does not fit at all.
                        Some(t) if !matches!(cell.verdict, Verdict::DoesNotFit | Verdict::Unbuildable) => Cell {
                            verdict: Verdict::from_network_share(t.network_share),
                            figure: format!("(twin {} of request)", share_text(t.network_share)),
                            share: t.network_share,
                            ..cell
                        },
                        _ => cell,
                    }
                }
            };
            cells.push(cell);
        }
        let acceptable = cells.iter().find(|c| c.verdict.is_acceptable()).map(|c| c.link.clone());
        rows.push(Row { usage: usage.name().to_string(), scenario, cells, acceptable });
    }
    let mut note = "NICs per node: one per GPU for RDMA links (rail-optimized, GPUDirect), one per node for TCP \
                    Ethernet and Thunderbolt; override with --nics-per-node"
        .to_string();
    if let Some(t) = &spec.twin {
        note += ". ";
        note += &t.note;
    }
    Ok(CompareTable { links: links.iter().map(|l| l.name.clone()).collect(), rows, note })
}

/// The homelab row's plan for one column: the model in 4 bits on workstations with one
/// RTX 4090 (24 GB) each, pipeline-parallel across the fewest hosts that hold it, batch 1.
pub fn homelab_scenario(spec: &CompareSpec, link: &LinkProfile) -> Result<Scenario, PlanError> {
    let mut base = spec.base.clone();
    if base.model.preset.is_none() && base.model.layers.is_none() {
        base.model.preset = Some("llama3-70b".into());
    }
    homelab_on(&with_link(&base, link), &base)
}

fn homelab_on(spec_l: &PlanSpec, base: &PlanSpec) -> Result<Scenario, PlanError> {
    let mut s = spec_l.clone();
    s.training = None;
    s.inference = Some(InferenceInput { batch: Some(1), ..base.inference.clone().unwrap_or_default() });
    s.precision = Some("int4".into());
    s.hardware =
        crate::spec::HardwareInput { gpu: Some("rtx4090".into()), gpus_per_node: Some(1), ..Default::default() };
    let mut chosen = None;
    for hosts in 2..=8u32 {
        let mut h = s.clone();
        h.parallel = crate::spec::ParallelInput { tp: Some(1), pp: Some(hosts), dp: Some(1), ..Default::default() };
        h.hardware.gpus = Some(hosts);
        let Ok(sc) = resolve(&h) else { continue };
        let fits = estimate(&sc).memory.fits;
        chosen = Some(sc);
        if fits {
            break;
        }
    }
    chosen.ok_or_else(|| PlanError {
        key: "model.preset".into(),
        message: "no homelab layout for this model".into(),
        hint: "compare a smaller model".into(),
    })
}

/// A cell whose share was computed outside `estimate` (serving, RAG, storage).
fn fixed_cell(link: &LinkProfile, hosts: u32, share: f64, figure: String) -> Cell {
    if let Some(max) = link.max_hosts {
        if hosts > max {
            return Cell {
                link: link.name.clone(),
                verdict: Verdict::Unbuildable,
                figure: format!("({hosts} hosts > {max})"),
                share,
            };
        }
    }
    Cell { link: link.name.clone(), verdict: Verdict::from_network_share(share), figure, share }
}
