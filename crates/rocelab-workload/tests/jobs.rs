//! Several tenants on one fabric: a checkpoint burst into a training job's nodes slows its
//! step and is blamed on the shared rail downlinks; tenants on disjoint rails do not slow
//! each other at all.

use rocelab_model::jobs::JobKind;
use rocelab_model::{Model, SimTime};
use rocelab_sim::SimOptions;
use rocelab_workload::jobs::{run_jobs, JobInput, Tenant};
use rocelab_workload::step::StepPlan;

mod common;

fn us(x: f64) -> SimTime {
    SimTime((x * 1e6) as u64)
}

/// A data-parallel step of `tp` GPUs a replica, dp = 2: 64 MB of gradients per GPU
/// all-reduced in 4 buckets under a short backward, so the network holds the step's end.
fn step(tp: u32) -> StepPlan {
    StepPlan {
        tp,
        pp: 1,
        dp: 2,
        micro_batches: 1,
        forward: us(100.0),
        backward: us(200.0),
        pp_bytes: 1,
        dp_bytes: 64 << 20,
        zero: 0,
        ag_bytes: 0,
        ep: 1,
        moe_layers: 0,
        ep_bytes: 0,
        dp_expert_bytes: 0,
        buckets: 4,
        optimizer: us(50.0),
        channels: 2,
    }
}

/// Four GPU nodes of 8 NICs at 100G on one rail-optimized unit, with `jobs` appended.
fn fabric(jobs: &str) -> Model {
    common::rail(4, 100, &format!("intra_node = \"nvlink4\"\n{jobs}"))
}

fn nic_names(m: &Model, node: usize) -> Vec<String> {
    rocelab_model::jobs::gpu_node_nics(m)[node].iter().map(|&h| m.node(h).name.clone()).collect()
}

fn inputs(m: &Model, tp: u32) -> Vec<JobInput> {
    m.intent
        .jobs
        .iter()
        .map(|j| JobInput {
            job: j.clone(),
            tenant: match j.kind {
                JobKind::Step { .. } => Tenant::Step(step(tp)),
                _ => Tenant::Burst,
            },
        })
        .collect()
}

fn quoted(v: &[String]) -> String {
    v.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
}

#[test]
fn a_checkpoint_burst_into_a_training_jobs_node_slows_its_step_and_is_blamed_on_the_shared_downlinks() {
    let node1 = nic_names(&fabric(""), 1);
    let m = fabric(&format!(
        r#"[[job]]
name = "train"
kind = "step"
plan = "train.toml"
gpu_nodes = [0, 1]
[[job]]
name = "ckpt"
kind = "checkpoint"
gpu_nodes = [2, 3]
targets = [{}]
size = "64M"
"#,
        quoted(&node1)
    ));
    let r = run_jobs(&m, &inputs(&m, 8), SimOptions { recycle_qps: true, ..SimOptions::default() }).unwrap();
    eprintln!("{}", rocelab_workload::jobs::render(&r, "rail4x8"));
    let (train, ckpt) = (&r.jobs[0], &r.jobs[1]);
    // Alone, the step's all-reduce has each rail's link to node 1 to itself; beside two
    // 64 MB writes per rail into node 1 it gets about a third of it for a while.
    assert!(train.figure.slowdown > 1.3, "{:?}", train.figure);
    assert!(ckpt.figure.slowdown > 1.0, "{:?}", ckpt.figure);
    assert!(!train.blame.is_empty());
    for b in &train.blame {
        // The shared links are the rail leaves' downlinks to node 1's NICs.
        assert!(node1.iter().any(|n| b.link.ends_with(&format!("-> {n}"))), "{b:?}");
        assert!(b.link.starts_with("su0-rail"), "{b:?}");
        assert_eq!(b.others_bytes.len(), 1);
        assert_eq!(b.others_bytes[0].0, "ckpt");
        // 128 MB of checkpoint per rail crossed it, all while the step was there or some.
        assert!(b.others_bytes[0].1 > 0 && b.others_bytes[0].1 <= 2 * (64 << 20), "{b:?}");
        assert!(b.queue_peak_bytes > 0);
    }
    // Deterministic: the same figures again.
    let again = run_jobs(&m, &inputs(&m, 8), SimOptions { recycle_qps: true, ..SimOptions::default() }).unwrap();
    assert_eq!(again.jobs[0].figure, train.figure);
    assert_eq!(again.jobs[0].blame, train.blame);
}

#[test]
fn tenants_on_disjoint_rails_do_not_slow_each_other() {
    let node1 = nic_names(&fabric(""), 1);
    let m = fabric(&format!(
        r#"[[job]]
name = "train"
kind = "step"
plan = "train.toml"
gpu_nodes = [0, 1]
rails = [0, 1, 2, 3]
[[job]]
name = "noisy"
kind = "checkpoint"
gpu_nodes = [0]
rails = [4, 5, 6, 7]
targets = [{}]
size = "256M"
"#,
        quoted(&node1[4..])
    ));
    let r = run_jobs(&m, &inputs(&m, 4), SimOptions { recycle_qps: true, ..SimOptions::default() }).unwrap();
    eprintln!("{}", rocelab_workload::jobs::render(&r, "rail4x8"));
    for j in &r.jobs {
        assert!(j.figure.alone.is_finite() && j.figure.alone > 0.0, "{j:?}");
        assert_eq!(j.figure.together, j.figure.alone, "{}: {:?}", j.name, j.figure);
        assert!(j.blame.is_empty(), "{}: {:?}", j.name, j.blame);
    }
    // The noisy job moved its bytes at line rate: 256 MB per rail at 100G goodput.
    let noisy = &r.jobs[1].figure;
    let goodput = 100e9 / 8.0 * 4096.0 / (4096.0 + rocelab_sim::packet::DATA_OVERHEAD as f64);
    let want_ms = (256u64 << 20) as f64 / goodput * 1e3;
    assert!(noisy.alone >= want_ms && noisy.alone < want_ms * 1.03, "{noisy:?} vs {want_ms} ms");
}

#[test]
fn job_tables_are_checked_at_load() {
    let bad = |jobs: &str| {
        let text = format!(
            r#"[fabric]
name = "r"
[topology.rail_optimized]
gpu_nodes = 2
rails = 8
nodes_per_su = 2
spines_per_pod = 8
host_link = {{ speed_gbps = 100, length_m = 5 }}
leaf_link = {{ speed_gbps = 100, length_m = 50 }}
[gpu_node]
gpus = 8
{jobs}"#
        );
        rocelab_model::load_str("f.toml", &text).unwrap_err().to_string()
    };
    let e = bad("[[job]]\nkind = \"step\"\nplan = \"p.toml\"\ngpu_nodes = [2]\n");
    assert!(e.contains("job[0].gpu_nodes") && e.contains("GPU node 2"), "{e}");
    let e =
        bad("[[job]]\nkind = \"step\"\nplan = \"p.toml\"\n[[job]]\nkind = \"step\"\nplan = \"p.toml\"\nrails = [3]\n");
    assert!(e.contains("job[1].gpu_nodes") && e.contains("already job `job0`'s"), "{e}");
    let e = bad("[[job]]\nkind = \"checkpoint\"\ngpu_nodes = [0]\ntargets = [\"nope*\"]\nsize = \"1M\"\n");
    assert!(e.contains("job[0].targets") && e.contains("names no host"), "{e}");
    let e = bad("[[job]]\nkind = \"backup\"\n");
    assert!(e.contains("job[0].kind") && e.contains("unknown job kind"), "{e}");
    let e = bad("[[job]]\nkind = \"tcp\"\ngpu_nodes = [0]\ntargets = [\"*\"]\nsize = \"1M\"\ncount = 3\n");
    assert!(e.contains("job[0].period_us"), "{e}");
    let e = bad("[[job]]\nkind = \"step\"\nplan = \"plan\"\n");
    assert!(e.contains("no [plan] table"), "{e}");
}

#[test]
fn a_messages_bytes_spread_evenly_over_its_equal_cost_paths() {
    // 2 leaves of 4 hosts, 4 spines: across the leaves, 4 equal-cost paths.
    let m = common::leaf_spine(2, 4, 4, 100, "");
    let hosts: Vec<_> = m.hosts().collect();
    let (src, dst) = (hosts[0], hosts[7]);
    let shares = rocelab_workload::jobs::link_shares(&m, src, dst);
    let tier = |p: rocelab_model::PortId| m.node(m.ports[p.idx()].node).tier;
    // The host's uplink and the last leaf's downlink carry it whole; each of the 4 leaf
    // uplinks and 4 spine downlinks a quarter; the bytes are conserved at every hop.
    assert_eq!(shares.len(), 1 + 4 + 4 + 1, "{shares:?}");
    for &(p, s) in &shares {
        let peer = m.ports[m.ports[p.idx()].peer.idx()].node;
        let want = if p == m.node(src).first_port_id() || peer == dst { 1.0 } else { 0.25 };
        assert!((s - want).abs() < 1e-12, "{:?} {p:?}: {s}", tier(p));
    }
    let total: f64 = shares.iter().map(|(_, s)| s).sum();
    assert!((total - 4.0).abs() < 1e-12, "four hops of the whole message: {total}");
    // Inside one leaf: the host's uplink and the leaf's downlink only.
    assert_eq!(rocelab_workload::jobs::link_shares(&m, hosts[0], hosts[1]).len(), 2);
}
