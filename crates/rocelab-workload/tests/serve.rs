//! Serving on the twin against plan's compute model and first principles: one request on one
//! node is plan's TTFT and TPOT; the disaggregated KV cache crosses an idle link at its
//! goodput; p99 TTFT grows with load and runs away past plan's capacity.

use rocelab_model::{Model, SimTime};
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::SimOptions;
use rocelab_workload::serve::{parse_config, poisson, run_serve, KvTransfer, PlanServe, Request, ServePlan};
use rocelab_workload::step::plan_on_fabric;

mod common;

/// Llama 3 8B in BF16 on H100s, TP8 inside a node, `pp` stages, `dp` replicas.
fn plan_text(pp: u32, dp: u32, batch: u32, prompt: u32, output: u32, disagg: bool, serve: &str) -> String {
    format!(
        r#"[plan.model]
preset = "llama3-8b"
[plan.inference]
prompt_tokens = {prompt}
output_tokens = {output}
batch = {batch}
disaggregated = {disagg}
[plan.parallel]
tp = 8
pp = {pp}
dp = {dp}
[plan.hardware]
gpu = "h100"
gpus = {}
[serve]
{serve}
"#,
        8 * pp * dp * if disagg { 2 } else { 1 }
    )
}

fn serve_plan(m: &Model, text: &str) -> (ServePlan, PlanServe) {
    let (s, e) = plan_on_fabric("plan.toml", text, m).unwrap_or_else(|e| panic!("{e}"));
    let c = parse_config("plan.toml", text).unwrap();
    (ServePlan::from_scenario(&s, &e, &c).unwrap(), PlanServe::from_estimate(&s, &e))
}

fn one(prompt: u32, output: u32) -> Vec<Request> {
    vec![Request { arrival: SimTime(1_000_000), prompt, output }]
}

#[test]
fn one_request_on_one_node_has_plans_ttft_and_tpot() {
    let m = common::rail(1, 400, "intra_node = \"nvlink4\"");
    let text = plan_text(1, 1, 1, 2048, 128, false, "");
    let (p, plan) = serve_plan(&m, &text);
    let r = run_serve(&m, &p, &one(2048, 128), SimOptions::default()).unwrap();
    assert_eq!((r.completed, r.data_packets), (1, 0), "nothing crosses the fabric");
    // The ps clock rounds each iteration by at most 0.5 ps.
    let ttft = r.ttft_seconds[0] * 1e3;
    eprintln!(
        "one node: TTFT {ttft} ms (plan {}), TPOT {} ms (plan {})",
        plan.ttft_ms,
        r.tpot_seconds[0] * 1e3,
        plan.tpot_ms
    );
    assert!((ttft - plan.ttft_ms).abs() < 1e-9, "TTFT twin {ttft} ms, plan {} ms", plan.ttft_ms);
    let tpot = r.tpot_seconds[0] * 1e3;
    assert!((tpot - plan.tpot_ms).abs() < 1e-9, "TPOT twin {tpot} ms, plan {} ms", plan.tpot_ms);
    assert_eq!(r.prefill_network_share, 0.0);
    assert_eq!(r.decode_network_share, 0.0);
}

/// Payload bytes/s of one 100G NIC: 12.5 GB/s × MTU / (MTU + headers).
fn goodput(m: &Model) -> f64 {
    let mtu = m.nics[0].mtu as f64;
    100e9 / 8.0 * mtu / (mtu + DATA_OVERHEAD as f64)
}

#[test]
fn a_whole_kv_transfer_on_an_idle_fabric_runs_at_line_rate() {
    let m = common::rail(2, 100, "intra_node = \"nvlink4\"");
    let text = plan_text(1, 1, 1, 1024, 4, true, "kv_transfer = \"whole\"");
    let (p, _) = serve_plan(&m, &text);
    assert_eq!(p.kv_transfer, KvTransfer::Whole);
    let r = run_serve(&m, &p, &one(1024, 4), SimOptions::default()).unwrap();
    assert_eq!(r.completed, 1);
    // Each of the 8 GPUs writes its shard over its own rail: 1024 tokens × 131,072 B / 8.
    let bytes = p.kv_bytes(1024);
    assert_eq!(bytes, 1024 * 131_072 / 8);
    let want_ms = bytes as f64 / goodput(&m) * 1e3;
    let got = r.kv_transfer.p50_ms;
    eprintln!("KV transfer {got} ms, bytes/goodput {want_ms} ms, {} packets", r.data_packets);
    assert!(got >= want_ms && got < want_ms * 1.05, "KV transfer {got} ms, bytes/goodput {want_ms} ms");
    // The first token waits for the transfer: it is all of the TTFT's network share.
    let ttft = r.ttft_seconds[0] * 1e3;
    assert!((r.prefill_network_share - got / ttft).abs() < 1e-9);
}

#[test]
fn layer_by_layer_kv_transfer_hides_behind_the_prefill() {
    let m = common::rail(2, 100, "intra_node = \"nvlink4\"");
    let whole = {
        let (p, _) = serve_plan(&m, &plan_text(1, 1, 1, 1024, 4, true, "kv_transfer = \"whole\""));
        run_serve(&m, &p, &one(1024, 4), SimOptions::default()).unwrap()
    };
    let (p, _) = serve_plan(&m, &plan_text(1, 1, 1, 1024, 4, true, "kv_transfer = \"layer\""));
    let layer = run_serve(&m, &p, &one(1024, 4), SimOptions::default()).unwrap();
    eprintln!("layer {:?} whole {:?}", layer.kv_transfer, whole.kv_transfer);
    // Only the last of 32 layers is left to send after the prefill (each layer's write takes
    // less than its compute): 1/32 of the whole transfer, plus a hop's latency.
    let last_layer_ms = p.kv_bytes(1024).div_ceil(32) as f64 / goodput(&m) * 1e3;
    assert!(layer.kv_transfer.p50_ms < last_layer_ms * 1.1, "{} ms vs {last_layer_ms}", layer.kv_transfer.p50_ms);
    assert!(layer.ttft.p50_ms < whole.ttft.p50_ms - 0.9 * whole.kv_transfer.p50_ms);
}

#[test]
fn pipeline_stages_wait_for_activations_across_the_fabric() {
    let m = common::rail(2, 100, "intra_node = \"nvlink4\"");
    let (p, plan) = serve_plan(&m, &plan_text(2, 1, 1, 2048, 16, false, ""));
    let r = run_serve(&m, &p, &one(2048, 16), SimOptions::default()).unwrap();
    // One prefill send of 2048·4096·2/8 B per GPU, on its own rail: TTFT = plan's compute
    // plus that send at goodput (plan's own figure counts it too, by its α-β model).
    let send_ms = p.pp_bytes(2048) as f64 / goodput(&m) * 1e3;
    let compute_ms = p.stage_seconds(&[2048], &[]) * 2.0 * 1e3;
    let ttft = r.ttft_seconds[0] * 1e3;
    eprintln!("PP2: TTFT {ttft} ms = compute {compute_ms} + send {send_ms}; plan {} ms", plan.ttft_ms);
    assert!(ttft > compute_ms + send_ms && ttft < compute_ms + send_ms * 1.05 + 0.01, "TTFT {ttft}");
    assert!(r.prefill_network_share > 0.0 && r.decode_network_share > 0.0);
    assert!((ttft - plan.ttft_ms).abs() / plan.ttft_ms < 0.05, "twin {ttft} ms, plan {} ms", plan.ttft_ms);
}

#[test]
fn p99_ttft_grows_with_load_and_runs_away_past_plans_capacity() {
    let m = common::rail(2, 400, "intra_node = \"nvlink4\"");
    let (p, plan) = serve_plan(&m, &plan_text(2, 1, 8, 1024, 32, false, "token_budget = 4096"));
    let run = |f: f64, n: u32| {
        let reqs = poisson(plan.capacity_per_s * f, n, 1024, 32, 1);
        let r = run_serve(&m, &p, &reqs, SimOptions::default()).unwrap();
        assert_eq!(r.completed, n);
        r.ttft.p99_ms
    };
    let loads = [0.3, 0.6, 0.9, 1.2, 2.0];
    let v: Vec<f64> = loads.iter().map(|&f| run(f, 150)).collect();
    eprintln!(
        "p99 TTFT by load {loads:?} of plan's {:.2} req/s: {v:?} ms; plan TTFT {} ms",
        plan.capacity_per_s, plan.ttft_ms
    );
    assert!(v.windows(2).all(|w| w[1] >= w[0]), "{v:?}");
    assert!(v[1] < 3.0 * plan.ttft_ms && v[4] > 10.0 * v[1], "{v:?}");
    // The knee: below plan's capacity the queue is stable (twice the requests, about the same
    // p99); past it the queue grows with every request (twice the requests, a p99 far longer).
    let (below, past) = ((run(0.6, 300), v[1]), (run(1.5, 300), run(1.5, 150)));
    eprintln!("p99 at 0.6×: {below:?} ms, at 1.5×: {past:?} ms (300 vs 150 requests)");
    assert!(below.0 < 1.5 * below.1, "{below:?}");
    assert!(past.0 > 1.6 * past.1, "{past:?}");
}

#[test]
fn continuous_batching_admits_prompts_within_the_token_budget() {
    let m = common::rail(1, 400, "intra_node = \"nvlink4\"");
    // One request, then two more during its prefill: they wait for the next iteration, which
    // also decodes the first request's second token (context 2,048 + 1).
    let (a0, a1) = (SimTime(1_000_000), SimTime(2_000_000));
    let reqs = [(a0, 0), (a1, 1), (a1, 2)].map(|(arrival, _)| Request { arrival, prompt: 2048, output: 8 });
    let ps = |s: f64| (s * 1e12).round() as u64;
    let ttft = |budget: u32| {
        let (p, _) = serve_plan(&m, &plan_text(1, 1, 8, 2048, 8, false, &format!("token_budget = {budget}")));
        let r = run_serve(&m, &p, &reqs, SimOptions::default()).unwrap();
        assert_eq!(r.completed, 3);
        (p, r.ttft_seconds.iter().map(|t| (t * 1e12).round() as u64).collect::<Vec<_>>())
    };
    // 4,097 tokens = one decode + two prompts: both prompts in the second iteration.
    let (p, t) = ttft(4097);
    let end1 = a0.0 + ps(p.stage_seconds(&[2048], &[]));
    let end2 = end1 + ps(p.stage_seconds(&[2048, 2048], &[2049]));
    assert_eq!(t, vec![end1 - a0.0, end2 - a1.0, end2 - a1.0]);
    // 4,096: the third prompt no longer fits; it waits one more iteration.
    let (p, t) = ttft(4096);
    let end2 = end1 + ps(p.stage_seconds(&[2048], &[2049]));
    let end3 = end2 + ps(p.stage_seconds(&[2048], &[2050, 2049]));
    assert_eq!(t, vec![end1 - a0.0, end2 - a1.0, end3 - a1.0]);
}

/// Mixtral 8x7B (8 experts, top-2, every one of 32 layers MoE) in BF16, TP8 in a node, EP2
/// over two nodes: the two replicas form one EP group.
fn moe_plan_text(prompt: u32, output: u32) -> String {
    format!(
        r#"[plan.model]
preset = "mixtral-8x7b"
[plan.inference]
prompt_tokens = {prompt}
output_tokens = {output}
batch = 1
[plan.parallel]
tp = 8
dp = 2
ep = 2
[plan.hardware]
gpu = "h100"
gpus = 16
"#
    )
}

#[test]
fn deepep_message_sizes_are_fp8_dispatch_and_bf16_combine() {
    use rocelab_workload::serve::{deepep_combine_bytes, deepep_dispatch_bytes};
    // DeepSeek-V3's hidden size 7168: 16 B header + 7168 FP8 bytes + 56 FP32 scales.
    assert_eq!(deepep_dispatch_bytes(7168), 16 + 7168 + 56 * 4);
    assert_eq!(deepep_combine_bytes(7168), 14_336);
    let m = common::rail(2, 100, "intra_node = \"nvlink4\"");
    let (p, _) = serve_plan(&m, &moe_plan_text(1024, 2));
    assert_eq!((p.ep, p.moe_layers_per_stage, p.copies_normal, p.copies_low_latency), (2, 32, 2, 2));
    // 1024 tokens over 8 TP ranks, 2 copies each, half of them to the one peer.
    assert_eq!(p.ep_bytes(1024, true, true), 128 * 2 / 2 * (16 + 4096 + 32 * 4));
    assert_eq!(p.ep_bytes(1024, true, false), 128 * 2 / 2 * 8192);
    assert_eq!(p.ep_bytes(0, false, true), 16, "a member with no tokens still sends its count");
}

#[test]
fn expert_parallel_prefill_waits_for_each_layers_dispatch_and_combine() {
    let m = common::rail(2, 100, "intra_node = \"nvlink4\"");
    let (p, _) = serve_plan(&m, &moe_plan_text(1024, 1));
    let r = run_serve(&m, &p, &one(1024, 1), SimOptions::default()).unwrap();
    assert_eq!(r.completed, 1);
    // Replica 0 prefills, replica 1 (no tokens) runs beside it; every one of the 32 MoE layers
    // waits for the dispatch to the peer and the peer's combine back, one after the other,
    // each on its own rail at goodput: TTFT = compute + 32 · (dispatch + combine) / goodput.
    let compute_ms = p.stage_seconds(&[1024], &[]) * 1e3;
    let wire_ms = 32.0 * (p.ep_bytes(1024, true, true) + p.ep_bytes(1024, true, false)) as f64 / goodput(&m) * 1e3;
    let ttft = r.ttft_seconds[0] * 1e3;
    eprintln!(
        "EP2: TTFT {ttft} ms = compute {compute_ms} + all-to-alls {wire_ms} ms; share {}",
        r.prefill_network_share
    );
    assert!(ttft > compute_ms + wire_ms, "TTFT {ttft} ms");
    // Plus 64 one-way latencies of a few µs across the spine.
    assert!(ttft < compute_ms + wire_ms * 1.05 + 64.0 * 0.005, "TTFT {ttft} ms");
    let share = (ttft - compute_ms) / ttft;
    assert!((r.prefill_network_share - share).abs() < 0.01, "{} vs {share}", r.prefill_network_share);
}

#[test]
fn expert_parallel_decode_keeps_the_group_in_lockstep() {
    let m = common::rail(2, 100, "intra_node = \"nvlink4\"");
    let (p, _) = serve_plan(&m, &moe_plan_text(256, 8));
    // Two requests, one per replica (the least loaded takes the second): both finish, and each
    // decode token pays the low-latency all-to-alls, so TPOT exceeds the compute alone.
    let reqs = vec![
        Request { arrival: SimTime(1_000_000), prompt: 256, output: 8 },
        Request { arrival: SimTime(1_000_000), prompt: 256, output: 8 },
    ];
    let r = run_serve(&m, &p, &reqs, SimOptions::default()).unwrap();
    assert_eq!(r.completed, 2);
    let compute_ms = p.stage_seconds(&[], &[260]) * 1e3;
    let wire_ms = 32.0 * (p.ep_bytes(1, false, true) + p.ep_bytes(1, false, false)) as f64 / goodput(&m) * 1e3;
    eprintln!("EP2 decode: TPOT {:?}, compute {compute_ms} ms + wire {wire_ms} ms", r.tpot);
    assert!(r.tpot.p50_ms > compute_ms + wire_ms, "{:?}", r.tpot);
    assert!(r.decode_network_share > 0.0);
    // Same seed, same figures.
    let again = run_serve(&m, &p, &reqs, SimOptions::default()).unwrap();
    assert_eq!(again.ttft_seconds, r.ttft_seconds);
}

/// Two workstations with one RTX 4090 each on a Thunderbolt cable (no switch).
fn homelab(link: &str) -> Model {
    let text = format!(
        r#"[fabric]
name = "homelab"
[[topology.explicit.node]]
name = "ws0"
kind = "host"
gpu_node = "ws0"
[[topology.explicit.node]]
name = "ws1"
kind = "host"
gpu_node = "ws1"
[[topology.explicit.link]]
a = "ws0"
b = "ws1"
link = "{link}"
[gpu_node]
gpus = 1
gpu = "rtx4090"
intra_node = "pcie4"
"#
    );
    rocelab_model::load_str("homelab.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn pipeline_parallel_serving_over_thunderbolt_pays_the_activation_send_at_the_cable_rate() {
    let text = r#"[plan]
precision = "int4"
[plan.model]
preset = "llama3-70b"
[plan.inference]
prompt_tokens = 2048
output_tokens = 4
batch = 1
[plan.parallel]
tp = 1
pp = 2
[plan.hardware]
gpu = "rtx4090"
gpus = 2
gpus_per_node = 1
"#;
    for (link, gbps) in [("thunderbolt4", 32.0), ("thunderbolt5", 64.0)] {
        let m = homelab(link);
        let (p, _) = serve_plan(&m, text);
        let r = run_serve(&m, &p, &one(2048, 4), SimOptions::default()).unwrap();
        assert_eq!(r.completed, 1);
        // TTFT = both stages' prefill + the 2048 tokens' activations (h·β = 8192 · 2 B each)
        // across the cable at its goodput; the pass-through node adds one packet's time.
        let mtu = m.nics[0].mtu as f64;
        let goodput = gbps * 1e9 / 8.0 * mtu / (mtu + DATA_OVERHEAD as f64);
        let send_ms = p.pp_bytes(2048) as f64 / goodput * 1e3;
        assert_eq!(p.pp_bytes(2048), 2048 * 8192 * 2);
        let compute_ms = p.stage_seconds(&[2048], &[]) * 2.0 * 1e3;
        let ttft = r.ttft_seconds[0] * 1e3;
        eprintln!("{link}: TTFT {ttft} ms = compute {compute_ms} + send {send_ms} ms");
        assert!(ttft > compute_ms + send_ms && ttft < compute_ms + send_ms * 1.02 + 0.01, "{link}: TTFT {ttft}");
    }
}
