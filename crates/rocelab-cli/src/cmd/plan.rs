//! `rocelab plan`: which network a parallelism plan needs, computed (crate `rocelab-plan`).
//!
//! Flags and an optional plan file (`--input`, a `[plan]` table or a standalone file) become one
//! `PlanSpec` (flags win); `--fabric` fills GPUs per node, NICs, link speed and host count from a
//! fabric file. Then one of three things runs: a single estimate, `--compare` or `--search`.
//! Errors name the flag, or the file:line:column of the key, and the fix; they exit 2.

use crate::common::{write_atomic, Failure, VerbResult};
use rocelab_plan::compare::{CompareSpec, TwinLinks};
use rocelab_plan::render::{render_compare_fit, render_plan, render_search, Format};
use rocelab_plan::spec::{self, InferenceInput, PlanSpec, TrainingInput};
use rocelab_plan::{compare, estimate, resolve, search, PlanError, SearchSpec};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Formulas, sources and the plan file keys: `rocelab man --out-dir man/`, then `man man/rocelab-plan.1`"
)]
pub struct Args {
    /// Plan file: its `[plan]` table, or its top level as the plan (flags override it).
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Fabric file: GPUs per node, NICs per node, NIC speed and host count come from it.
    #[arg(long, value_name = "FILE")]
    fabric: Option<PathBuf>,
    /// The usage → acceptable network table across several interconnects.
    #[arg(long, conflicts_with = "search")]
    compare: bool,
    /// Columns for --compare, cheapest first: presets, or preset@GBPS (e.g. roce400@800).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    links: Vec<String>,
    /// Nodes in the cluster usages of --compare (default 8).
    #[arg(long)]
    nodes: Option<u32>,
    /// Checkpoint interval of the shared-storage usage of --compare (default 1800).
    #[arg(long)]
    checkpoint_interval_seconds: Option<f64>,
    /// Rank TP×PP×DP(×EP) layouts for --gpus GPUs (pinned flags such as --tp are kept).
    #[arg(long)]
    search: bool,
    /// Rows to show with --search.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Print the wall time of the computation to stderr.
    #[arg(long)]
    timings: bool,
    /// Output format: text (a table; `table` is the same), json or markdown.
    #[arg(long, default_value = "text", value_parser = ["text", "table", "json", "markdown"])]
    format: String,
    /// Write the result to FILE (atomically) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Width of the --compare table in characters (0: no limit). Default: the terminal's
    /// width, else $COLUMNS, else 100; a table wider than that is printed one usage per block.
    #[arg(long)]
    width: Option<usize>,

    /// Model preset: llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, deepseek-v3.
    #[arg(long, help_heading = "Model")]
    model: Option<String>,
    /// Custom model: total parameters, billions (with --layers, --hidden, --heads).
    #[arg(long, help_heading = "Model")]
    params_billions: Option<f64>,
    /// Transformer layers (overrides the preset).
    #[arg(long, help_heading = "Model")]
    layers: Option<u32>,
    /// Hidden size (overrides the preset).
    #[arg(long, help_heading = "Model")]
    hidden: Option<u32>,
    /// Attention heads (overrides the preset).
    #[arg(long, help_heading = "Model")]
    heads: Option<u32>,
    /// KV heads, GQA (overrides the preset).
    #[arg(long, help_heading = "Model")]
    kv_heads: Option<u32>,
    /// Routed experts per MoE layer (overrides the preset).
    #[arg(long, help_heading = "Model")]
    experts: Option<u32>,
    /// Experts per token (overrides the preset).
    #[arg(long, help_heading = "Model")]
    top_k: Option<u32>,
    /// fp32, bf16, fp16, fp8, int4 (weight-only, inference).
    #[arg(long, help_heading = "Model")]
    precision: Option<String>,
    /// Format of the DP gradient reduction: bf16 (default) or fp32.
    #[arg(long, help_heading = "Model")]
    grad_reduce: Option<String>,

    /// Sequences per optimizer step.
    #[arg(long, help_heading = "Training")]
    global_batch: Option<u32>,
    /// Tokens per optimizer step (instead of --global-batch).
    #[arg(long, help_heading = "Training")]
    global_batch_tokens: Option<u64>,
    /// Sequences per micro-batch.
    #[arg(long, help_heading = "Training")]
    micro_batch: Option<u32>,
    /// Sequence length, tokens.
    #[arg(long, help_heading = "Training")]
    seq_len: Option<u32>,

    /// Plan inference instead of training.
    #[arg(long, help_heading = "Inference")]
    inference: bool,
    /// Prompt tokens per request.
    #[arg(long, help_heading = "Inference")]
    prompt_tokens: Option<u32>,
    /// Generated tokens per request.
    #[arg(long, help_heading = "Inference")]
    output_tokens: Option<u32>,
    /// Sequences decoded together by one replica.
    #[arg(long, help_heading = "Inference")]
    batch: Option<u32>,
    /// Prefill and decode on different nodes (the prompt's KV cache crosses the network).
    #[arg(long, help_heading = "Inference")]
    disaggregated: bool,

    /// Tensor parallel size.
    #[arg(long, help_heading = "Parallelism")]
    tp: Option<u32>,
    /// Pipeline parallel size (stages).
    #[arg(long, help_heading = "Parallelism")]
    pp: Option<u32>,
    /// Data parallel size (default: GPUs / (TP·CP·PP)).
    #[arg(long, help_heading = "Parallelism")]
    dp: Option<u32>,
    /// Expert parallel size (MoE; carved out of DP).
    #[arg(long, help_heading = "Parallelism")]
    ep: Option<u32>,
    /// Context parallel size.
    #[arg(long, help_heading = "Parallelism")]
    cp: Option<u32>,
    /// Sequence parallelism with TP (default: on for training when TP > 1).
    #[arg(long, help_heading = "Parallelism")]
    sequence_parallel: Option<bool>,
    /// gpipe, 1f1b, interleaved.
    #[arg(long, help_heading = "Parallelism")]
    schedule: Option<String>,
    /// Micro-batches per pipeline per step (sets the global batch when it is not given).
    #[arg(long, help_heading = "Parallelism")]
    micro_batches: Option<u32>,
    /// Model chunks per GPU for the interleaved schedule.
    #[arg(long, help_heading = "Parallelism")]
    virtual_stages: Option<u32>,
    /// ZeRO stage 0-3.
    #[arg(long, help_heading = "Parallelism")]
    zero: Option<u8>,
    /// FSDP full shard (= ZeRO-3).
    #[arg(long, help_heading = "Parallelism")]
    fsdp: bool,
    /// none, selective, full.
    #[arg(long, help_heading = "Parallelism")]
    recompute: Option<String>,

    /// GPU preset: a100, h100, h200, b200, l40s, rtx4090.
    #[arg(long, help_heading = "Hardware")]
    gpu: Option<String>,
    /// GPUs in the job.
    #[arg(long, help_heading = "Hardware")]
    gpus: Option<u32>,
    /// GPUs per node (default: the GPU preset's server).
    #[arg(long, help_heading = "Hardware")]
    gpus_per_node: Option<u32>,
    /// nvlink3, nvlink4, nvlink5, pcie4, pcie5.
    #[arg(long, help_heading = "Hardware")]
    intra_node: Option<String>,
    /// NICs per node (default: one per GPU for RDMA, one per node for TCP and Thunderbolt).
    #[arg(long, help_heading = "Hardware")]
    nics_per_node: Option<u32>,
    /// Model TFLOP/s a GPU sustains while busy (default: peak × 0.5).
    #[arg(long, help_heading = "Hardware")]
    sustained_tflops: Option<f64>,
    /// Share of peak sustained while busy (default 0.5).
    #[arg(long, help_heading = "Hardware")]
    compute_efficiency: Option<f64>,

    /// Network between nodes: tb4, tb5, eth10-tcp, eth25-tcp, eth100-tcp, roce100..roce800,
    /// ib-hdr, ib-ndr, ib-xdr.
    #[arg(long, help_heading = "Interconnect")]
    interconnect: Option<String>,
    /// Override the network link rate, Gb/s.
    #[arg(long, help_heading = "Interconnect")]
    link_gbps: Option<f64>,
    /// Override the network one-way latency, µs.
    #[arg(long, help_heading = "Interconnect")]
    link_latency_us: Option<f64>,
    /// Override the share of the rate a collective achieves (0-1).
    #[arg(long, help_heading = "Interconnect")]
    link_efficiency: Option<f64>,
    /// Share of TP/SP collectives hidden behind compute (0-1).
    #[arg(long, help_heading = "Interconnect")]
    overlap_tp: Option<f64>,
    /// Share of pipeline sends hidden behind compute (0-1).
    #[arg(long, help_heading = "Interconnect")]
    overlap_pp: Option<f64>,
    /// Share of context-parallel K/V collectives hidden behind compute (0-1).
    #[arg(long, help_heading = "Interconnect")]
    overlap_cp: Option<f64>,
    /// Share of expert all-to-alls hidden behind compute (0-1).
    #[arg(long, help_heading = "Interconnect")]
    overlap_ep: Option<f64>,
}

impl Args {
    /// The flags as a plan spec: only what was given is set.
    fn flags_spec(&self) -> PlanSpec {
        let mut s = PlanSpec::default();
        s.model.preset = self.model.clone();
        s.model.params_billions = self.params_billions;
        s.model.layers = self.layers;
        s.model.hidden = self.hidden;
        s.model.heads = self.heads;
        s.model.kv_heads = self.kv_heads;
        s.model.experts = self.experts;
        s.model.top_k = self.top_k;
        s.precision = self.precision.clone();
        s.grad_reduce = self.grad_reduce.clone();
        let inference = self.inference
            || self.disaggregated
            || self.prompt_tokens.is_some()
            || self.output_tokens.is_some()
            || self.batch.is_some();
        if inference {
            s.inference = Some(InferenceInput {
                prompt_tokens: self.prompt_tokens,
                output_tokens: self.output_tokens,
                batch: self.batch,
                disaggregated: self.disaggregated.then_some(true),
            });
        }
        if self.global_batch.is_some()
            || self.global_batch_tokens.is_some()
            || self.micro_batch.is_some()
            || self.seq_len.is_some()
        {
            s.training = Some(TrainingInput {
                global_batch: self.global_batch,
                global_batch_tokens: self.global_batch_tokens,
                micro_batch: self.micro_batch,
                seq_len: self.seq_len,
            });
        }
        let p = &mut s.parallel;
        p.tp = self.tp;
        p.pp = self.pp;
        p.dp = self.dp;
        p.ep = self.ep;
        p.cp = self.cp;
        p.sequence_parallel = self.sequence_parallel;
        p.schedule = self.schedule.clone();
        p.virtual_stages = self.virtual_stages;
        p.micro_batches = self.micro_batches;
        p.zero = self.zero;
        p.fsdp = self.fsdp.then_some(true);
        p.recompute = self.recompute.clone();
        let h = &mut s.hardware;
        h.gpu = self.gpu.clone();
        h.gpus = self.gpus;
        h.gpus_per_node = self.gpus_per_node;
        h.intra_node = self.intra_node.clone();
        h.nics_per_node = self.nics_per_node;
        h.sustained_tflops = self.sustained_tflops;
        h.compute_efficiency = self.compute_efficiency;
        let i = &mut s.interconnect;
        i.preset = self.interconnect.clone();
        i.rate_gbps = self.link_gbps;
        i.latency_us = self.link_latency_us;
        i.efficiency = self.link_efficiency;
        s.overlap.tp = self.overlap_tp;
        s.overlap.pp = self.overlap_pp;
        s.overlap.ep = self.overlap_ep;
        s.overlap.cp = self.overlap_cp;
        s.compare.links = (!self.links.is_empty()).then(|| self.links.clone());
        s.compare.nodes = self.nodes;
        s.compare.checkpoint_interval_seconds = self.checkpoint_interval_seconds;
        s
    }
}

/// Where the inputs came from, to point an error at the right flag or line.
struct Sources {
    flags: PlanSpec,
    file: Option<(String, String, PlanSpec)>,
}

impl Sources {
    fn failure(&self, e: PlanError) -> Failure {
        let msg = if self.flags.has(&e.key) {
            let flag = spec::flag_for(&e.key).map(str::to_string).unwrap_or_else(|| e.key.clone());
            format!("error: {flag}: {}\n  = help: {}", e.message, e.hint)
        } else if let Some((name, text, _)) = self.file.as_ref().filter(|(_, _, f)| f.has(&e.key)) {
            let (line, col) = spec::locate(text, &e.key).unwrap_or((1, 1));
            format!("{name}:{line}:{col}: error: {}: {}\n  = help: {}", e.key, e.message, e.hint)
        } else {
            let how = spec::flag_for(&e.key).map(|f| format!(" (set it with {f})")).unwrap_or_default();
            format!("error: {}: {}{how}\n  = help: {}", e.key, e.message, e.hint)
        };
        Failure::bad_input(msg)
    }
}

/// Ranks and bytes per rank of the twin's link-layer measurement behind `--compare --fabric`:
/// enough hosts to cross every tier of a leaf-spine, small enough to run in a second.
const TWIN_RANKS: usize = 16;
const TWIN_BYTES: u64 = 4 << 20;

/// `--compare --fabric`: the RoCE and IB columns' efficiency as the twin measures it on the
/// fabric (`rocelab_workload::linklayer`).
fn twin_links(path: &std::path::Path, model: &rocelab_model::Model, cs: &CompareSpec) -> Result<TwinLinks, Failure> {
    let seed = rocelab_sim::options_from_model(model).seed;
    let [roce, ib] = rocelab_workload::linklayer::measure_link_layers(model, TWIN_RANKS, TWIN_BYTES, seed)
        .map_err(|d| crate::common::located(path, d))?;
    let side = |f: &rocelab_workload::linklayer::LinkLayerFigures| {
        format!(
            "{:.3} (all-reduce {:.2}, all-to-all {:.2} GB/s)",
            f.efficiency, f.all_reduce_busbw_gbytes_per_s, f.alltoall_busbw_gbytes_per_s
        )
    };
    let note = format!(
        "RoCE and IB columns: efficiency measured by the twin on {} ({} hosts at {} Gb/s, {} MiB per rank, \
         the lower busbw over the line rate): RoCE {}, InfiniBand {}; latency as the presets (NIC and switch \
         pipeline latencies are not in the twin)",
        path.display(),
        roce.ranks,
        roce.line_gbps,
        TWIN_BYTES >> 20,
        side(&roce),
        side(&ib)
    );
    let mut twin = TwinLinks { roce_efficiency: roce.efficiency, ib_efficiency: ib.efficiency, note, serving: None };
    // The homelab row as the serving twin runs it on this fabric, in the fabric's own column.
    if let Some(column) = fabric_column(model) {
        if let Some(t) = twin_serving(cs, &column, model, seed) {
            twin.note += &format!(
                ". Homelab row, {} column: the serving twin on {} (one request on an idle fabric: TTFT {:.1} ms, TPOT {:.2} ms)",
                t.link,
                path.display(),
                t.ttft_ms,
                t.tpot_ms
            );
            twin.serving = Some(t);
        }
    }
    Ok(twin)
}

/// The compare column a fabric is: its Thunderbolt cable, else its link layer at its host
/// link's rate (`roce400`, `ib-ndr`, ...), if a preset of that name exists.
fn fabric_column(m: &rocelab_model::Model) -> Option<String> {
    let host = m.hosts().next()?;
    let gbps = m.ports[m.node(host).first_port_id().idx()].speed.gbps();
    let tb = m.nodes.iter().any(|n| !n.is_host() && n.name.starts_with("tb:"));
    let name = if tb {
        format!("tb{}", if gbps <= 32.0 { 4 } else { 5 })
    } else if m.is_ib() {
        match gbps as u32 {
            200 => "ib-hdr".into(),
            400 => "ib-ndr".into(),
            800 => "ib-xdr".into(),
            _ => return None,
        }
    } else {
        format!("roce{}", gbps as u32)
    };
    rocelab_plan::link::LinkProfile::preset(&name).map(|_| name)
}

/// The homelab row's plan for `column`, served on the twin of `m`: one request on an idle
/// fabric; `None` when the fabric cannot hold it (too few GPU nodes).
fn twin_serving(
    cs: &CompareSpec,
    column: &str,
    m: &rocelab_model::Model,
    seed: u64,
) -> Option<rocelab_plan::compare::TwinServing> {
    use rocelab_workload::serve;
    let link = rocelab_plan::link::LinkProfile::preset(column)?;
    let sc = rocelab_plan::compare::homelab_scenario(cs, &link).ok()?;
    let e = estimate(&sc);
    let plan = serve::ServePlan::from_scenario(&sc, &e, &serve::ServeConfig::default()).ok()?;
    let rocelab_plan::scenario::Workload::Inference(w) = &sc.workload else { return None };
    let req = serve::Request { arrival: rocelab_model::SimTime(0), prompt: w.prompt_tokens, output: w.output_tokens };
    let opts = rocelab_sim::SimOptions { seed, ..rocelab_sim::SimOptions::default() };
    let r = serve::run_serve(m, &plan, &[req], opts).ok()?;
    if r.completed != 1 {
        return None;
    }
    let (ttft, e2e) = (r.ttft.p50_ms, r.e2e.p50_ms);
    let net = r.prefill_network_share * ttft + r.decode_network_share * (e2e - ttft);
    Some(rocelab_plan::compare::TwinServing {
        link: column.to_string(),
        network_share: if e2e > 0.0 { net / e2e } else { 0.0 },
        ttft_ms: ttft,
        tpot_ms: r.tpot.p50_ms,
    })
}

/// A plan file's scenario on a fabric (`simulate --step`): the file's keys over what the
/// fabric says, as `rocelab plan --input FILE --fabric FABRIC` resolves it, errors located
/// in the file; and plan's estimate of it.
pub(crate) fn scenario_on_fabric(
    plan: &std::path::Path,
    model: &rocelab_model::Model,
) -> Result<(rocelab_plan::Scenario, rocelab_plan::Estimate), Failure> {
    let name = plan.display().to_string();
    let text = std::fs::read_to_string(plan)
        .map_err(|e| Failure::bad_input(format!("error: cannot read {name}: {e}\n  = help: check the --step path")))?;
    let file_spec = spec::parse_plan_file(&name, &text).map_err(Failure::bad_input)?;
    let sources = Sources { flags: PlanSpec::default(), file: Some((name, text, file_spec.clone())) };
    let scenario = resolve(&file_spec.with_fabric(&rocelab_workload::step::fabric_facts(model)))
        .map_err(|e| sources.failure(e))?;
    let e = estimate(&scenario);
    Ok((scenario, e))
}

/// The width the --compare table must fit: the flag, the terminal, $COLUMNS, or 100, so the
/// same command gives the same bytes in a pipe or a file.
fn compare_width(flag: Option<usize>, to_file: bool) -> Option<usize> {
    if let Some(w) = flag {
        return (w > 0).then_some(w);
    }
    if !to_file {
        if let Some((_, cols)) = console::Term::stdout().size_checked() {
            return Some(cols as usize);
        }
    }
    let env = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|w| *w > 0);
    Some(env.unwrap_or(100))
}

pub fn run(a: Args) -> VerbResult {
    let format = Format::parse(&a.format).unwrap_or(Format::Table);
    let flags = a.flags_spec();
    let mut sources = Sources { flags: flags.clone(), file: None };
    let mut spec = PlanSpec::default();
    if let Some(path) = &a.input {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::bad_input(format!("error: cannot read {name}: {e}\n  = help: check the --input path"))
        })?;
        let file_spec = spec::parse_plan_file(&name, &text).map_err(Failure::bad_input)?;
        spec = file_spec.clone();
        sources.file = Some((name, text, file_spec));
    }
    spec = spec.overlay(&flags).map_err(|e| sources.failure(e))?;
    let fabric = match &a.fabric {
        Some(path) => Some((path, crate::common::load_fabric(path)?)),
        None => None,
    };
    if let Some((_, model)) = &fabric {
        spec = spec.with_fabric(&rocelab_workload::step::fabric_facts(model));
    }

    let started = std::time::Instant::now();
    let out = if a.compare {
        let mut cs = CompareSpec::from_plan(spec).map_err(|e| sources.failure(e))?;
        if let Some((path, model)) = &fabric {
            cs.twin = Some(twin_links(path, model, &cs)?);
        }
        let t = compare(&cs).map_err(|e| sources.failure(e))?;
        render_compare_fit(&t, format, compare_width(a.width, a.output.is_some()))
    } else if a.search {
        let gpus = spec.hardware.gpus.ok_or_else(|| {
            Failure::bad_input(
                "error: --search needs a GPU count\n  = help: pass --gpus N (or hardware.gpus in the plan file)",
            )
        })?;
        let r = search(&SearchSpec { base: spec, gpus, top: a.top }).map_err(|e| sources.failure(e))?;
        render_search(&r, format)
    } else {
        let scenario = resolve(&spec).map_err(|e| sources.failure(e))?;
        render_plan(&scenario, &estimate(&scenario), format)
    };
    let out = if format == Format::Json { crate::output::envelope("plan.result", &out) } else { out };
    if a.timings {
        eprintln!("plan: computed in {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    match &a.output {
        Some(path) => write_atomic(path, out.as_bytes())?,
        None => print!("{out}"),
    }
    Ok(ExitCode::SUCCESS)
}
