//! The training step on the twin against hand-computed bounds: 1F1B's compute time and
//! bubble, pipeline sends on the critical path, DP all-reduce hidden under backward or not.

use rocelab_model::{Model, SimTime};
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::SimOptions;
use rocelab_workload::step::{run_step, StepPlan, StepResult};

mod common;

/// `nodes` GPU nodes of 8 GPUs and 8 × 400G NICs over NVLink, one rail leaf per NIC
/// (non-blocking).
fn fabric(nodes: u32) -> Model {
    common::rail(nodes, 400, "intra_node = \"nvlink4\"")
}

/// Payload bytes/s of one 400G NIC: 50 GB/s × 4096 / (4096 + headers).
fn goodput() -> f64 {
    50e9 * 4096.0 / (4096.0 + DATA_OVERHEAD as f64)
}

fn us(x: f64) -> SimTime {
    SimTime((x * 1e6) as u64)
}

fn plan(tp: u32, pp: u32, dp: u32, m: u32) -> StepPlan {
    StepPlan {
        tp,
        pp,
        dp,
        micro_batches: m,
        forward: us(100.0),
        backward: us(200.0),
        pp_bytes: 1 << 20,
        dp_bytes: 8 << 20,
        zero: 0,
        ag_bytes: 0,
        ep: 1,
        moe_layers: 0,
        ep_bytes: 0,
        dp_expert_bytes: 0,
        buckets: 8,
        optimizer: us(50.0),
        channels: 2,
    }
}

fn run(m: &Model, p: &StepPlan) -> StepResult {
    let r =
        run_step(m, p, SimOptions { recycle_qps: true, ..SimOptions::default() }).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(r.failed_messages, 0);
    assert!(r.step_us.is_finite());
    assert_eq!(r.report.totals.packets_dropped, 0);
    r
}

#[test]
fn a_step_without_communication_is_its_compute_time() {
    // One node, TP8: nothing crosses the fabric. 4 micro-batches × (100 + 200) µs + 50 µs.
    let r = run(&fabric(1), &plan(8, 1, 1, 4));
    assert_eq!(r.step_us, 1250.0);
    assert_eq!(r.compute_only_us, 1250.0);
    assert_eq!(r.comm_wait_ratio, 0.0);
    assert_eq!(r.data_packets, 0);
}

#[test]
fn pipeline_stages_wait_for_their_sends_on_top_of_the_1f1b_bubble() {
    // 4 stages of one node each, 8 micro-batches, 1 MiB per GPU across each boundary.
    let p = StepPlan { pp_bytes: 1 << 20, ..plan(8, 4, 1, 8) };
    let r = run(&fabric(4), &p);
    // Compute only: (m + p − 1)(F + B) + optimizer = 11 × 300 + 50 µs (bubble (p−1)/m).
    assert_eq!(r.compute_only_us, 3350.0);
    // Stage 0 cannot end before its own work plus the wait for micro-batch 0 to cross the
    // pipeline and come back: 2(p − 1) sends of 1 MiB at one NIC's goodput (21.4 µs each).
    let send = (1u64 << 20) as f64 / goodput() * 1e6;
    let lower = r.compute_only_us + 2.0 * 3.0 * send;
    println!("step {:.1} µs, lower bound {lower:.1} µs, pp waits {:.1} µs", r.step_us, r.pp_wait_us);
    assert!(r.step_us >= lower, "{} < {lower}", r.step_us);
    // And no more than one send (plus 5 µs of latency) per op of the longest chain beyond it.
    assert!(r.step_us <= lower + 2.0 * 8.0 * (send + 5.0), "{}", r.step_us);
    assert!(r.critical.contains("pipeline"), "{}", r.critical);
    // 8 GPUs × 3 boundaries × 8 micro-batches × 2 directions × 256 packets.
    assert_eq!(r.data_packets, 8 * 3 * 8 * 2 * 256);
}

#[test]
fn a_dp_all_reduce_that_fits_under_backward_exposes_only_its_last_bucket() {
    // DP over 2 nodes, TP8: 8 rings (one per rail), 8 buckets of 1 MiB; a bucket is ready
    // every 200/8 = 25 µs of the last backward, and reduces in 2(n−1)/n · 1 MiB / goodput =
    // 21.4 µs (n = 2): each hides behind the next slice except the last.
    let r = run(&fabric(2), &plan(8, 1, 2, 2));
    let bucket = (1u64 << 20) as f64 / goodput() * 1e6;
    println!("step {:.1} µs, DP exposed {:.1} µs (one bucket {bucket:.1} µs)", r.step_us, r.dp_exposed_us);
    assert!(r.dp_exposed_us >= bucket, "{}", r.dp_exposed_us);
    assert!(r.dp_exposed_us <= bucket + 10.0, "{}", r.dp_exposed_us);
    // The wait is that tail alone: 21.6 of 671.6 µs.
    assert!((r.step_us - r.compute_only_us - r.dp_exposed_us).abs() < 0.5, "{r:?}");
    assert!(r.comm_wait_ratio < 0.04, "{}", r.comm_wait_ratio);
    assert!(r.critical.contains("DP all-reduce"), "{}", r.critical);
}

#[test]
fn a_dp_all_reduce_larger_than_backward_shows_its_whole_time() {
    // 128 MiB of gradients per GPU: the 8 buckets take 2.74 ms back to back, far beyond the
    // 200 µs backward. The first starts 25 µs into the last backward; the step ends after all
    // of them and the optimizer: 2 × 300 − 200 + 25 + 2,740 + 50 µs.
    let p = StepPlan { dp_bytes: 128 << 20, ..plan(8, 1, 2, 2) };
    let r = run(&fabric(2), &p);
    let ar = (128u64 << 20) as f64 / goodput() * 1e6;
    let expect = 2.0 * 300.0 - 200.0 + 200.0 / 8.0 + ar + 50.0;
    println!("step {:.1} µs, expected {expect:.1} µs", r.step_us);
    assert!(r.step_us >= expect, "{} < {expect}", r.step_us);
    assert!(r.step_us <= expect * 1.03, "{} vs {expect}", r.step_us);
    // GPUs wait (step − 650 µs of compute) / step of it: 80 %.
    let wait = (expect - 650.0) / expect;
    assert!(r.comm_wait_ratio >= wait && r.comm_wait_ratio <= wait * 1.01, "{} vs {wait}", r.comm_wait_ratio);
}

#[test]
fn with_tp1_the_dp_group_is_every_gpu_of_the_stage_on_nccl_rings() {
    // TP1, DP16 on 2 nodes: one ring collective over 16 GPUs, 8 channels on 8 rails; its
    // bound is 2(n−1)/n · S over 8 NICs. 64 MiB, 1 bucket, 1 micro-batch.
    let p = StepPlan { dp_bytes: 64 << 20, buckets: 1, channels: 8, ..plan(1, 1, 16, 1) };
    let r = run(&fabric(2), &p);
    let n = 16.0;
    let ar = 2.0 * (n - 1.0) / n * (64u64 << 20) as f64 / (8.0 * goodput()) * 1e6;
    // The one bucket is ready when the backward ends (at 300 µs).
    let expect = 300.0 + ar + 50.0;
    println!("step {:.1} µs, expected {expect:.1} µs", r.step_us);
    assert!(r.step_us >= expect && r.step_us <= expect * 1.1, "{} vs {expect}", r.step_us);
}

#[test]
fn layouts_the_twin_cannot_place_are_refused_with_the_fix() {
    let m = fabric(2);
    let e = run_step(&m, &plan(4, 1, 4, 1), SimOptions::default()).unwrap_err();
    assert!(e[0].to_string().contains("give tp = 8"), "{e:?}");
    let e = run_step(&m, &plan(8, 2, 2, 1), SimOptions::default()).unwrap_err();
    assert!(e[0].to_string().contains("32 GPUs, the fabric has 16"), "{e:?}");
    // A step beyond the engine's clock, a message beyond 1 TB: refused, not a panic.
    let long = StepPlan { forward: SimTime(u64::MAX / 8), ..plan(8, 1, 2, 1) };
    assert!(run_step(&m, &long, SimOptions::default()).unwrap_err()[0].to_string().contains("of compute"));
    let huge = StepPlan { pp_bytes: 2_000_000_000_000, ..plan(8, 1, 2, 1) };
    assert!(run_step(&m, &huge, SimOptions::default()).unwrap_err()[0].to_string().contains("1 TB"));
}

#[test]
fn same_seed_same_step() {
    let m = fabric(4);
    let p = StepPlan { dp_bytes: 4 << 20, ..plan(8, 2, 2, 4) };
    let a = run(&m, &p);
    let b = run(&m, &p);
    assert_eq!(a.step_us, b.step_us);
    assert_eq!(a.events, b.events);
}

#[test]
fn zero1_reduce_scatters_the_gradients_and_gathers_the_parameters_under_the_first_forward() {
    // DP over 2 nodes, TP8: 8 rings. 8 MiB of gradients reduce-scattered (one step of S/2 per
    // rank and bucket instead of the all-reduce's two), 4 MiB of parameters all-gathered as
    // the step starts, bucket by bucket, each needed by its slice of the first forward.
    let p = StepPlan { zero: 1, ag_bytes: 4 << 20, ..plan(8, 1, 2, 2) };
    let r = run(&fabric(2), &p);
    // 8 rings × 2 ranks × 8 buckets × (1 MiB / 2 = 128 packets) + the same for 512 KiB buckets.
    assert_eq!(r.data_packets, 8 * 2 * 8 * 128 + 8 * 2 * 8 * 64);
    // The first parameter bucket (256 KiB per rank) must arrive before the first slice of
    // the forward can start; the next ones arrive while the slices run (12.5 µs each).
    let ag_bucket = (256u64 << 10) as f64 / goodput() * 1e6;
    assert!(r.ag_wait_us >= ag_bucket && r.ag_wait_us <= ag_bucket + 5.0, "{} vs {ag_bucket}", r.ag_wait_us);
    // The last gradient bucket reduce-scatters in half the all-reduce's time.
    let rs_bucket = (512u64 << 10) as f64 / goodput() * 1e6;
    assert!(r.dp_exposed_us >= rs_bucket && r.dp_exposed_us <= rs_bucket + 5.0, "{} vs {rs_bucket}", r.dp_exposed_us);
    println!(
        "step {:.1} µs: parameters {:.1} µs, reduce-scatter tail {:.1} µs",
        r.step_us, r.ag_wait_us, r.dp_exposed_us
    );
    assert!((r.step_us - r.compute_only_us - r.ag_wait_us - r.dp_exposed_us).abs() < 1.0, "{r:?}");
}

#[test]
fn expert_parallel_layers_wait_for_their_dispatch_and_combine_all_to_alls() {
    // 4 nodes, TP8, DP4 in 2 EP groups of 2 replicas: every op is 2 MoE layers, each its compute
    // share then a dispatch and a combine all-to-all of 1 MiB per GPU (512 KiB to the other
    // replica of the group, on the GPU's rail). 2 ops × 2 layers × 2 all-to-alls.
    let p = StepPlan {
        ep: 2,
        moe_layers: 2,
        ep_bytes: 1 << 20,
        dp_bytes: 1 << 20,
        dp_expert_bytes: 1 << 20,
        ..plan(8, 1, 4, 1)
    };
    let r = run(&fabric(4), &p);
    let a2a = (512u64 << 10) as f64 / goodput() * 1e6;
    println!(
        "step {:.1} µs, compute {:.1} µs, EP {:.1} µs (8 × {a2a:.1} µs at least)",
        r.step_us, r.compute_only_us, r.ep_wait_us
    );
    assert!(r.ep_wait_us >= 8.0 * a2a && r.ep_wait_us <= 8.0 * (a2a + 3.0), "{}", r.ep_wait_us);
    // The GPUs wait through every all-to-all: the step is at least compute + EP.
    assert!(r.step_us >= r.compute_only_us + r.ep_wait_us, "{r:?}");
    assert!(r.critical.contains("EP all-to-all"), "{}", r.critical);
    // EP packets: 8 all-to-alls × 2 groups × 8 TP ranks × 2 ranks × 128 packets of 4 KiB; the
    // dense gradients over 4 replicas and the experts' over 2 come on top.
    assert!(r.data_packets > 8 * 2 * 8 * 2 * 128, "{}", r.data_packets);
    // EP needs a replica per node and DP a multiple of the group.
    let e = run_step(&fabric(4), &StepPlan { ep: 3, ..p.clone() }, SimOptions::default()).unwrap_err();
    assert!(e[0].to_string().contains("dp a multiple of ep"), "{e:?}");
}
