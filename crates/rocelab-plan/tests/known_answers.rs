//! Known answers from the public sources listed in docs/plan.md: each test fails if its formula is
//! wrong, and the Llama 3 405B step time lands within a factor 1.5 of the published ≈6.2 s.

use rocelab_plan::collective::{alpha_beta_seconds, nccl_seconds, Collective};
use rocelab_plan::estimate::{
    all_to_all_bus_bytes_per_s, dp_bytes_per_gpu, place_group, tp_elements_per_layer_per_microbatch, Verdict,
};
use rocelab_plan::spec::{HardwareInput, InferenceInput, InterconnectInput, ModelInput, ParallelInput, TrainingInput};
use rocelab_plan::{estimate, resolve, PlanSpec};

fn spec(model: &str, gpus: u32, tp: u32, pp: u32) -> PlanSpec {
    PlanSpec {
        model: ModelInput { preset: Some(model.into()), ..Default::default() },
        parallel: ParallelInput { tp: Some(tp), pp: Some(pp), ..Default::default() },
        hardware: HardwareInput { gpus: Some(gpus), ..Default::default() },
        ..Default::default()
    }
}

fn llama405b_spec() -> PlanSpec {
    PlanSpec {
        model: ModelInput { preset: Some("llama3-405b".into()), ..Default::default() },
        training: Some(TrainingInput {
            global_batch_tokens: Some(16 << 20),
            seq_len: Some(8192),
            micro_batch: Some(1),
            ..Default::default()
        }),
        // Interleaved 1F1B with one layer per chunk: Llama 3 removes one layer from the first and
        // the last stage, so 126 layers fill 16 stages × 8 one-layer chunks.
        parallel: ParallelInput {
            tp: Some(8),
            pp: Some(16),
            dp: Some(128),
            schedule: Some("interleaved".into()),
            virtual_stages: Some(8),
            ..Default::default()
        },
        hardware: HardwareInput {
            gpu: Some("h100".into()),
            gpus: Some(16_384),
            sustained_tflops: Some(400.0),
            ..Default::default()
        },
        interconnect: InterconnectInput { preset: Some("roce400".into()), ..Default::default() },
        ..Default::default()
    }
}

#[test]
fn llama3_405b_step_time_is_within_a_factor_1_5_of_six_seconds() {
    let s = resolve(&llama405b_spec()).expect("valid plan");
    let e = estimate(&s);
    let step = e.headline.step_seconds;
    // Published: 16M tokens × 6 × 405B / (16,384 × 400 TFLOP/s) ≈ 6.2 s.
    assert!(step > 6.0 / 1.5 && step < 6.0 * 1.5, "step {step} s");
    // The step is compute-bound: the network (PP and DP on RoCE 400G) costs a few percent.
    assert!(e.network_share < 0.05, "network share {}", e.network_share);
    assert!(e.bottleneck.starts_with("compute"), "{}", e.bottleneck);
    // 16 micro-batches (2048 sequences / DP 128), bubble (p−1)/(v·m) = 15/128.
    assert!((e.phases[0].bubble_fraction - 15.0 / 128.0).abs() < 1e-12);
}

#[test]
fn llama3_405b_fits_an_h100_only_with_more_recomputation() {
    // One 8192-token sequence per micro-batch and 16 in flight on the first stage: selective
    // recomputation keeps ~77 GB of activations, full recomputation ~5 GB (at 4/3 the compute).
    let e = estimate(&resolve(&llama405b_spec()).unwrap());
    assert!(!e.memory.fits && e.memory.activations_bytes > 60e9, "{:?}", e.memory);
    let mut full = llama405b_spec();
    full.parallel.recompute = Some("full".into());
    let f = estimate(&resolve(&full).unwrap());
    assert!(f.memory.fits, "{:?}", f.memory);
    assert!(f.headline.step_seconds > e.headline.step_seconds * 1.25);
}

#[test]
fn megatron_tp_traffic_is_8bsh_t_minus_1_over_t_per_layer() {
    // Formula: 4 ring all-reduces of b·s·h, each 2(t−1)/t.
    let (b, s, h) = (2.0, 4096.0, 8192.0);
    assert_eq!(tp_elements_per_layer_per_microbatch(b, s, h, 8), 8.0 * b * s * h * 7.0 / 8.0);
    assert_eq!(tp_elements_per_layer_per_microbatch(b, s, h, 1), 0.0);
    // And the estimate's TP line carries exactly that per layer per micro-batch.
    let mut sp = spec("llama3-70b", 8, 8, 1);
    sp.parallel.sequence_parallel = Some(false);
    sp.training =
        Some(TrainingInput { global_batch: Some(4), micro_batch: Some(2), seq_len: Some(4096), ..Default::default() });
    let e = estimate(&resolve(&sp).unwrap());
    let tp = e.comm.iter().find(|l| l.dimension == "TP").expect("TP line");
    let per_layer_mb = tp.wire_bytes_per_gpu / (80.0 * 2.0) / 2.0; // 80 layers, 2 micro-batches, BF16
    assert!((per_layer_mb / tp_elements_per_layer_per_microbatch(b, s, h, 8) - 1.0).abs() < 1e-12);
    // Sequence parallelism moves the same bytes in twice as many collectives.
    sp.parallel.sequence_parallel = Some(true);
    let e2 = estimate(&resolve(&sp).unwrap());
    let sp_bytes: f64 = e2.comm.iter().filter(|l| l.dimension == "SP").map(|l| l.wire_bytes_per_gpu).sum();
    assert!((sp_bytes / tp.wire_bytes_per_gpu - 1.0).abs() < 1e-12);
}

#[test]
fn zero3_moves_one_and_a_half_times_the_dp_traffic() {
    let psi = 7e9;
    assert_eq!(dp_bytes_per_gpu(3, psi, 2.0, 64) / dp_bytes_per_gpu(0, psi, 2.0, 64), 1.5);
    assert_eq!(dp_bytes_per_gpu(1, psi, 2.0, 64), dp_bytes_per_gpu(0, psi, 2.0, 64));
    assert_eq!(dp_bytes_per_gpu(0, psi, 2.0, 64), 2.0 * 63.0 / 64.0 * psi * 2.0);
    // Through the estimate, one micro-batch per step: ZeRO-3 / plain DP = 1.5.
    let dp_bytes = |zero: u8| {
        let mut s = spec("llama3-8b", 64, 1, 1);
        s.parallel.zero = Some(zero);
        s.training = Some(TrainingInput {
            global_batch: Some(64),
            micro_batch: Some(1),
            seq_len: Some(4096),
            ..Default::default()
        });
        let e = estimate(&resolve(&s).unwrap());
        e.comm.iter().filter(|l| l.dimension == "DP").map(|l| l.wire_bytes_per_gpu).sum::<f64>()
    };
    assert!((dp_bytes(3) / dp_bytes(0) - 1.5).abs() < 1e-12);
    assert!((dp_bytes(1) / dp_bytes(0) - 1.0).abs() < 1e-12);
}

#[test]
fn decode_tp_on_llama3_70b_is_160_all_reduces_of_16_kib_per_token() {
    let mut s = spec("llama3-70b", 8, 8, 1);
    s.inference = Some(InferenceInput { batch: Some(1), ..Default::default() });
    let e = estimate(&resolve(&s).unwrap());
    let d = e.comm.iter().find(|l| l.phase == "decode" && l.dimension == "TP").unwrap();
    assert_eq!(d.count, 160.0);
    assert_eq!(d.bytes_each, 16384.0);
    // Small messages: latency-bound, NCCL picks LL.
    assert!(d.nccl_choice.ends_with("/LL"), "{}", d.nccl_choice);
}

#[test]
fn pipeline_inference_sends_h_times_beta_per_token() {
    let mut s = spec("llama3-70b", 16, 8, 2);
    s.inference = Some(InferenceInput { batch: Some(1), ..Default::default() });
    let e = estimate(&resolve(&s).unwrap());
    let d = e.comm.iter().find(|l| l.phase == "decode" && l.dimension == "PP").unwrap();
    // h·β = 16 KiB per token, scattered over the 8 TP ranks.
    assert_eq!(d.bytes_each * 8.0, 16384.0);
    assert!(d.crosses_network);
}

#[test]
fn disaggregated_prefill_ships_the_prompt_kv_cache() {
    let mut s = spec("llama3-8b", 1, 1, 1);
    s.inference = Some(InferenceInput {
        batch: Some(1),
        prompt_tokens: Some(1000),
        disaggregated: Some(true),
        ..Default::default()
    });
    s.hardware.gpus_per_node = Some(1);
    let e = estimate(&resolve(&s).unwrap());
    let kv = e.comm.iter().find(|l| l.dimension == "KV").unwrap();
    assert_eq!(kv.bytes_each, 1000.0 * 131_072.0);
    assert!(kv.crosses_network);
}

#[test]
fn expert_all_to_all_moves_k_hidden_states_per_token() {
    let mut s = spec("mixtral-8x7b", 64, 1, 1);
    s.parallel.ep = Some(8);
    s.training =
        Some(TrainingInput { global_batch: Some(64), micro_batch: Some(1), seq_len: Some(4096), ..Default::default() });
    let e = estimate(&resolve(&s).unwrap());
    let a2a = e.comm.iter().find(|l| l.dimension == "EP").unwrap();
    assert_eq!(a2a.bytes_each, 4096.0 * 2.0 * 4096.0 * 2.0); // tokens · k · h · β
                                                             // Share leaving the GPU: (E−1)/E; 4 all-to-alls per MoE layer (dispatch, combine, fwd, bwd).
    assert_eq!(a2a.wire_bytes_per_gpu, a2a.count * a2a.bytes_each * 7.0 / 8.0);
    assert_eq!(a2a.count, 4.0 * 32.0);
}

#[test]
fn measured_busbw_oracles_are_reproduced() {
    // 8×H200 NVLink 4, all-reduce 16 GiB: 367.6 GB/s busbw without NVLS (stas00).
    let s = resolve(&PlanSpec {
        hardware: HardwareInput { gpu: Some("h200".into()), ..Default::default() },
        ..spec("llama3-8b", 8, 8, 1)
    })
    .unwrap();
    let bytes = 16.0 * (1u64 << 30) as f64;
    let path = place_group(&s, 8, 1);
    let t = nccl_seconds(Collective::AllReduce, bytes, &path).seconds;
    let busbw = bytes / t * Collective::AllReduce.busbw_factor(8) / 1e9;
    assert!((busbw / 367.6 - 1.0).abs() < 0.02, "8xH200 busbw {busbw}");
    // 4 nodes × 8 B200, 8×400G per node: 376.7 GB/s busbw (stas00).
    let mut b = spec("llama3-8b", 32, 1, 1);
    b.hardware.gpu = Some("b200".into());
    let s = resolve(&b).unwrap();
    let path = place_group(&s, 32, 1);
    assert_eq!(path.nodes, 4);
    let t = alpha_beta_seconds(Collective::AllReduce, bytes, &path);
    let busbw = bytes / t * Collective::AllReduce.busbw_factor(32) / 1e9;
    assert!((busbw / 376.7 - 1.0).abs() < 0.02, "4x8 B200 busbw {busbw}");
}

#[test]
fn the_verdict_follows_the_link_rate() {
    // PP across nodes over 25 GbE TCP (one NIC per node) starves the GPUs...
    let pp = |rate: Option<f64>| {
        let mut s = spec("llama3-70b", 64, 8, 8);
        s.interconnect = InterconnectInput { preset: Some("eth25-tcp".into()), rate_gbps: rate, ..Default::default() };
        s.training = Some(TrainingInput { global_batch: Some(256), ..Default::default() });
        estimate(&resolve(&s).unwrap())
    };
    let slow = pp(None);
    let fast = pp(Some(400.0));
    assert!(slow.verdict >= Verdict::Marginal, "{:?} {}", slow.verdict, slow.verdict_reason);
    assert!(fast.verdict < slow.verdict, "{:?} -> {:?}", slow.verdict, fast.verdict);
    assert!(fast.network_share < slow.network_share / 4.0);
}

#[test]
fn keeping_tp_inside_the_node_beats_spanning_two_nodes() {
    let run = |tp: u32, pp: u32| {
        let mut s = spec("llama3-70b", 64, tp, pp);
        s.training = Some(TrainingInput { global_batch: Some(256), ..Default::default() });
        estimate(&resolve(&s).unwrap())
    };
    let inside = run(8, 8);
    let across = run(16, 4);
    assert!(inside.headline.step_seconds < across.headline.step_seconds);
    assert!(across.network_share > 5.0 * inside.network_share);
}

#[test]
fn cross_node_all_to_all_is_bounded_by_each_gpus_own_nic() {
    // EP 8 over 2 nodes (4 ranks each): half of every buffer leaves the node through the GPU's
    // own NIC share, so busbw = (7/8) / ((4/8) / B_nic) = 1.75 B_nic, not 4 NICs' worth.
    let nic = 23.5e9;
    let b = all_to_all_bus_bytes_per_s(8, 2, nic, 369e9);
    assert!((b / nic - 1.75).abs() < 1e-9, "{}", b / nic);
    // Inside one node only the intra-node link counts.
    let one = all_to_all_bus_bytes_per_s(8, 1, nic, 369e9);
    assert!((one / 369e9 - 1.0).abs() < 1e-9);
    // The estimate uses it for EP lines that cross nodes.
    let mut sp = spec("mixtral-8x7b", 64, 2, 2);
    sp.parallel.ep = Some(8);
    sp.interconnect.preset = Some("roce200".into());
    let e = estimate(&resolve(&sp).unwrap());
    let ep = e.comm.iter().find(|l| l.dimension == "EP").unwrap();
    assert_eq!(ep.group_nodes, 2);
    assert!((ep.bus_gbytes_per_s - 1.75 * 23.5).abs() < 1e-6, "{}", ep.bus_gbytes_per_s);
}

#[test]
fn overlap_cannot_hide_more_than_the_compute() {
    let mut sp = spec("mixtral-8x7b", 64, 8, 1);
    sp.parallel.ep = Some(8);
    sp.interconnect.preset = Some("eth10-tcp".into());
    sp.overlap.ep = Some(1.0);
    let e = estimate(&resolve(&sp).unwrap());
    let hidden: f64 = e.comm.iter().filter(|l| l.dimension == "EP").map(|l| l.total_seconds * l.overlap).sum();
    assert!(hidden <= e.phases[0].compute_seconds * (1.0 + 1e-12));
    assert!(e.network_share > 0.5, "a slow network stays visible even with full overlap requested");
}

#[test]
fn node_limited_routing_halves_deepseek_v3_dispatch_across_nodes() {
    // DeepSeek-V3 routes each token to experts on at most 4 nodes and sends it once per node:
    // over the network a token costs 4 hidden states, not top_k = 8.
    let mut sp = spec("deepseek-v3", 2048, 1, 16);
    sp.parallel.ep = Some(64);
    sp.parallel.recompute = Some("full".into());
    sp.training = Some(TrainingInput { global_batch: Some(4096), seq_len: Some(4096), ..Default::default() });
    let e = estimate(&resolve(&sp).unwrap());
    let ep = e.comm.iter().find(|l| l.dimension == "EP").unwrap();
    assert!(ep.crosses_network);
    assert_eq!(ep.bytes_each, 4096.0 * 4.0 * 7168.0 * 2.0);
    // DeepSeek reports a computation-to-communication ratio of about 1:1 for cross-node EP.
    let ratio = ep.total_seconds / e.phases[0].compute_seconds;
    assert!(ratio > 0.5 && ratio < 2.0, "comm/compute {ratio}");
}

#[test]
fn single_gpu_decode_is_bound_by_hbm_bandwidth() {
    // Llama-3-8B, BF16, batch 1 on one H100: every token reads the 16 GB of weights once;
    // at 80% of 3.35 TB/s that is ~6 ms per token.
    let mut s = spec("llama3-8b", 1, 1, 1);
    s.inference = Some(InferenceInput {
        batch: Some(1),
        prompt_tokens: Some(128),
        output_tokens: Some(128),
        ..Default::default()
    });
    let e = estimate(&resolve(&s).unwrap());
    let expect = 8.03e9 * 2.0 / (3.35e12 * 0.8);
    let tpot = e.headline.step_seconds;
    assert!((tpot / expect - 1.0).abs() < 0.05, "TPOT {tpot} vs {expect}");
    assert!(e.bottleneck.contains("HBM"), "{}", e.bottleneck);
    assert!(e.comm.is_empty());
}
