//! `plan` and the twin read NCCL's time from one model: the planner's collective time is NCCL's
//! tuning model (`rocelab_plan::tuning`) on the group as NCCL's search would describe it.

use rocelab_plan::collective::{group_system, nccl_seconds_on, Algorithm, Collective, HwClass, Protocol};
use rocelab_plan::estimate::place_group;
use rocelab_plan::spec::HardwareInput;
use rocelab_plan::tuning::GpuArch;
use rocelab_plan::{resolve, PlanSpec};

/// `gpus` H100s, 8 per node, on the default network (8 × RoCE 400G per node).
fn h100s(gpus: u32) -> rocelab_plan::scenario::Scenario {
    let mut s = PlanSpec::default();
    s.model.preset = Some("llama3-8b".into());
    s.parallel.tp = Some(1);
    s.parallel.pp = Some(1);
    s.hardware = HardwareInput { gpus: Some(gpus), gpu: Some("h100".into()), ..Default::default() };
    resolve(&s).unwrap()
}

#[test]
fn plans_nccl_time_is_nccls_tuning_model_on_the_group() {
    let s = h100s(128);
    let path = place_group(&s, 128, 1);
    assert_eq!((path.ranks, path.nodes, path.intra), (128, 16, HwClass::Nvlink));
    let sys = group_system(&path, GpuArch::Hopper);
    // A channel per NIC of a node, each carrying its NIC's effective rate (no doubling: NCCL
    // keeps one channel per NIC under 50 GB/s on Hopper with more than 4 NICs).
    assert_eq!(sys.channels, 8);
    assert!((sys.bw_inter_gbytes * 8.0 * 1e9 - path.bus_bytes_per_s).abs() < 1.0);
    for bytes in [8u64, 64 << 10, 8 << 20, 1 << 30] {
        let t = nccl_seconds_on(Collective::AllReduce, bytes as f64, &path, GpuArch::Hopper);
        let c = sys.choose(Collective::AllReduce, bytes, &[], &[]).unwrap();
        assert_eq!((t.algorithm, t.protocol), (c.algorithm, c.protocol), "{bytes} B");
        assert!((t.seconds * 1e6 - c.time_us).abs() < 1e-9, "{bytes} B");
    }
    // 8 B on 16 nodes: NCCL's tree/LL latency, 6.8 + 2·(7 · 0.6 + ⌊log₂ 16⌋ · 5.0) = 55.2 µs
    // (the bytes add under a nanosecond).
    let t = nccl_seconds_on(Collective::AllReduce, 8.0, &path, GpuArch::Hopper);
    assert_eq!((t.algorithm, t.protocol), (Algorithm::Tree, Protocol::Ll));
    assert!((t.seconds * 1e6 - 55.2).abs() < 0.01, "{} µs", t.seconds * 1e6);
    // 1 GiB: the ring with Simple: 2(n−1)/n · S over the bus, plus NCCL's ring latency, 1.4 ×
    // (8.4 base + 224 intra-node steps × 3.4 µs + 30 network steps × 14 µs) = 1,666 µs.
    let t = nccl_seconds_on(Collective::AllReduce, (1u64 << 30) as f64, &path, GpuArch::Hopper);
    assert_eq!((t.algorithm, t.protocol), (Algorithm::Ring, Protocol::Simple));
    let bound = 2.0 * 127.0 / 128.0 * (1u64 << 30) as f64 / path.bus_bytes_per_s;
    let latency = 1.4 * (8.4 + 224.0 * 3.4 + 30.0 * 14.0) * 1e-6;
    assert!((t.seconds - bound - latency).abs() < 1e-9, "{} s against {bound} + {latency} s", t.seconds);
}

#[test]
fn a_slow_network_hop_adds_its_latency_and_all_to_all_pays_one_hop() {
    // A TCP network (15 µs one way) adds its latency to each of NCCL's network hops.
    let s = h100s(16);
    let mut path = place_group(&s, 16, 1);
    let fast = nccl_seconds_on(Collective::AllReduce, 8.0, &path, GpuArch::Hopper);
    path.alpha_seconds = 15e-6;
    let slow = nccl_seconds_on(Collective::AllReduce, 8.0, &path, GpuArch::Hopper);
    // Tree/LL on 2 nodes: one network hop each way (⌊log₂ 2⌋ = 1), 15 µs more each.
    assert_eq!((slow.algorithm, slow.protocol), (Algorithm::Tree, Protocol::Ll));
    assert!(((slow.seconds - fast.seconds) * 1e6 - 30.0).abs() < 1e-6, "{fast:?} {slow:?}");
    // All-to-all of 64 MiB over 16 ranks: NCCL posts every peer's send at once, so one network
    // hop (Simple, 14 µs + 15 µs) and 15/16 of the buffer over the path.
    let bytes = (64u64 << 20) as f64;
    let a2a = nccl_seconds_on(Collective::AllToAll, bytes, &path, GpuArch::Hopper);
    let expect = 29e-6 + bytes * 15.0 / 16.0 / path.bus_bytes_per_s;
    assert_eq!(a2a.protocol, Protocol::Simple);
    assert!((a2a.seconds - expect).abs() < 1e-12, "{} s against {expect} s", a2a.seconds);
}
