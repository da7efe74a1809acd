//! all-to-all, send/recv and broadcast on the packet engine against first principles.

use rocelab_model::Model;
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::SimOptions;
use rocelab_workload::{run_collective, Collective, CollectiveResult, CollectiveSpec};

/// A 2-tier leaf-spine fabric: `hosts_per_leaf` hosts at 100G on each leaf, one link per spine.
mod common;

fn leaf_spine(leaves: u32, hosts_per_leaf: u32, spines: u32, fabric_gbps: u32) -> Model {
    common::leaf_spine(leaves, hosts_per_leaf, spines, fabric_gbps, "")
}

/// Payload goodput of a 100G host link in bytes/s: 100 Gb/s × MTU / (MTU + per-packet headers).
fn goodput(m: &Model) -> f64 {
    let mtu = m.nics[0].mtu as f64;
    100e9 / 8.0 * mtu / (mtu + DATA_OVERHEAD as f64)
}

fn run(m: &Model, spec: CollectiveSpec, seed: u64) -> CollectiveResult {
    let r = run_collective(m, &spec, SimOptions { seed, ..SimOptions::default() }).unwrap();
    assert_eq!(r.failed_chunks, 0);
    assert!(r.time_us.is_finite());
    r
}

/// algbw in GB/s from the size and time, as nccl-tests computes it.
fn algbw(r: &CollectiveResult) -> f64 {
    r.bytes as f64 / (r.time_us * 1e-6) / 1e9
}

#[test]
fn busbw_factors_are_nccl_tests_ones() {
    // PERFORMANCE.md of nccl-tests: all-to-all moves (n−1)/n of each rank's buffer off the rank,
    // broadcast and send/recv move the whole buffer over every rank's link once.
    let m = leaf_spine(2, 3, 2, 400);
    let n = 6.0;
    for (op, name, root, factor) in [
        (Collective::AllToAll, "alltoall", -1, (n - 1.0) / n),
        (Collective::Broadcast, "broadcast", 0, 1.0),
        (Collective::SendRecv, "sendrecv", -1, 1.0),
        (Collective::AllReduce, "all_reduce", -1, 2.0 * (n - 1.0) / n),
    ] {
        let r = run(&m, CollectiveSpec::new(op, 96 << 10), 1);
        assert_eq!((r.op, r.ranks, r.root), (name, 6, root));
        assert!((r.algbw_gbytes_per_s - algbw(&r)).abs() < 1e-9, "{name}");
        assert!((r.busbw_gbytes_per_s - algbw(&r) * factor).abs() < 1e-9, "{name}: {r:?}");
        // No collective's busbw beats the host link it is normalized to.
        assert!(r.busbw_gbytes_per_s * 1e9 <= goodput(&m), "{name}: {}", r.busbw_gbytes_per_s);
    }
}

#[test]
fn all_to_all_on_a_non_blocking_fabric_reaches_its_bound() {
    // 8 hosts on 2 leaves, 2 × 400G uplinks per leaf against 4 × 100G of hosts: no tier limits it.
    let m = leaf_spine(2, 4, 2, 400);
    let s = 16u64 << 20;
    let r = run(&m, CollectiveSpec::new(Collective::AllToAll, s), 1);
    // Each rank sends (n−1)/n · S through its host link: t ≥ (n−1)/n · S / B.
    let bound_us = 7.0 / 8.0 * s as f64 / goodput(&m) * 1e6;
    assert!(r.time_us >= bound_us, "{} µs < {bound_us} µs", r.time_us);
    assert!(r.time_us <= bound_us / 0.9, "{} µs against {bound_us} µs", r.time_us);
    assert_eq!(r.report.totals.packets_dropped, 0);
}

#[test]
fn all_to_all_across_the_spine_gains_from_more_qps_per_connection() {
    // 16 hosts on 4 leaves, 4 spines, every link 100G: each leaf has exactly as much uplink as
    // host link, and 12/15 of an all-to-all crosses the spine. With one channel per peer and
    // one QP per connection, ECMP hashes 48 connections per leaf onto 4 uplinks: some carry
    // more than their share, and the whole collective waits for the most loaded path. Four QPs
    // per connection (NCCL_IB_QPS_PER_CONNECTION=4) spread each connection over four hashes.
    let m = leaf_spine(4, 4, 4, 100);
    let s = 16u64 << 20;
    let bound = goodput(&m) / 1e9;
    let (mut sum1, mut sum4) = (0.0, 0.0);
    for seed in 1..=4 {
        let spec = |qps| CollectiveSpec {
            channels: Some(1),
            qps_per_connection: qps,
            ..CollectiveSpec::new(Collective::AllToAll, s)
        };
        let one = run(&m, spec(1), seed);
        let four = run(&m, spec(4), seed);
        println!(
            "seed {seed}: busbw 1 QP {:.2} GB/s, 4 QPs {:.2} GB/s, ratio {:.3} (goodput {bound:.2})",
            one.busbw_gbytes_per_s,
            four.busbw_gbytes_per_s,
            four.busbw_gbytes_per_s / one.busbw_gbytes_per_s
        );
        assert!(four.busbw_gbytes_per_s >= one.busbw_gbytes_per_s, "seed {seed}: {four:?} vs {one:?}");
        assert!(four.busbw_gbytes_per_s <= bound && one.busbw_gbytes_per_s <= bound);
        sum1 += one.busbw_gbytes_per_s;
        sum4 += four.busbw_gbytes_per_s;
    }
    println!("mean ratio 4 QPs / 1 QP: {:.3}", sum4 / sum1);
    assert!(sum4 > sum1);
}

#[test]
fn send_recv_moves_the_buffer_at_link_speed() {
    let m = leaf_spine(2, 4, 2, 400);
    let s = 16u64 << 20;
    let r = run(&m, CollectiveSpec::new(Collective::SendRecv, s), 1);
    // Every rank sends S once and receives S once: t ≥ S / B.
    let bound_us = s as f64 / goodput(&m) * 1e6;
    assert!(r.time_us >= bound_us && r.time_us <= bound_us / 0.9, "{} µs against {bound_us} µs", r.time_us);
    assert_eq!(r.report.totals.packets_dropped, 0);
}

#[test]
fn a_large_broadcast_pipelines_to_link_speed() {
    let m = leaf_spine(2, 4, 2, 400);
    let s = 128u64 << 20;
    let spec = CollectiveSpec { message_rows: true, ..CollectiveSpec::new(Collective::Broadcast, s) };
    let r = run(&m, spec.clone(), 1);
    // Every rank but the root receives all S bytes on its host link: t ≥ S / B, so
    // busbw = S / t ≤ B. The ring pipeline fills in n−2 = 6 chunk times per channel,
    // (n−2)·C·c = 6 MiB of 128 MiB at 2 channels of 512 KiB, so it should reach ≥ 90 % of S/B.
    let bound_us = s as f64 / goodput(&m) * 1e6;
    assert!(r.time_us >= bound_us, "{} µs < {bound_us} µs", r.time_us);
    let fill_us = (s + 6 * 2 * spec.chunk_bytes) as f64 / goodput(&m) * 1e6;
    println!("broadcast 128 MiB: {:.1} µs, bound {bound_us:.1} µs, pipeline estimate {fill_us:.1} µs", r.time_us);
    assert!(r.time_us <= bound_us / 0.9, "{} µs against {bound_us} µs", r.time_us);
    // And the pipeline's own estimate holds to 2 % (the rest: per-chunk flight time, headers).
    assert!(r.time_us <= fill_us * 1.02, "{} µs against a pipeline estimate of {fill_us} µs", r.time_us);
    assert!(r.busbw_gbytes_per_s >= 0.9 * goodput(&m) / 1e9);
    assert_eq!(r.report.totals.packets_dropped, 0);
    // Each of the 7 non-roots receives every chunk: 2 channels × 128 chunks.
    assert_eq!(r.report.flows.len(), 7 * 256);
}

#[test]
fn a_broadcast_from_another_root_takes_the_same_time_on_a_symmetric_fabric() {
    let m = leaf_spine(2, 4, 2, 400);
    let spec = CollectiveSpec::new(Collective::Broadcast, 8 << 20);
    let r0 = run(&m, spec.clone(), 1);
    let r3 = run(&m, CollectiveSpec { root: 3, ..spec.clone() }, 1);
    assert_eq!(r3.root, 3);
    assert!((r0.time_us - r3.time_us).abs() / r0.time_us < 0.02, "{} vs {}", r0.time_us, r3.time_us);
    assert!(run_collective(&m, &CollectiveSpec { root: 8, ..spec }, SimOptions::default()).is_err());
}

#[test]
fn the_new_tables_read_as_nccl_tests_output() {
    let m = leaf_spine(2, 4, 2, 400);
    for (op, name, root) in [
        (Collective::AllToAll, "alltoall", -1),
        (Collective::Broadcast, "broadcast", 2),
        (Collective::SendRecv, "sendrecv", -1),
    ] {
        let spec = CollectiveSpec { root: root.max(0) as u32, ..CollectiveSpec::new(op, 1 << 16) };
        let rs =
            rocelab_workload::sweep(&m, &spec, &[1 << 16, 1 << 18], SimOptions::default(), &mut |_, _| {}).unwrap();
        let text = rocelab_workload::table::render(&rs, "ls2x4");
        assert!(text.starts_with(&format!("# Collective test starting: {name}_perf")), "{text}");
        let runs = rocelab_doctor::parse::nccl::parse(&text, None).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        assert_eq!(runs[0].op.as_deref(), Some(name));
        assert_eq!(runs[0].rows.len(), 2);
        for (row, r) in runs[0].rows.iter().zip(&rs) {
            assert_eq!(row.root, Some(root), "{text}");
            assert_eq!(row.redop.as_deref(), Some("none"));
            assert!((row.out_of_place.busbw_gbytes_per_s - r.busbw_gbytes_per_s).abs() < 0.006);
        }
    }
}

#[test]
fn same_seed_same_bytes() {
    let m = leaf_spine(4, 4, 4, 100);
    for op in [Collective::AllToAll, Collective::Broadcast, Collective::SendRecv] {
        let spec = CollectiveSpec { qps_per_connection: 2, ..CollectiveSpec::new(op, 1 << 20) };
        let a = serde_json::to_string(&run(&m, spec.clone(), 7)).unwrap();
        let b = serde_json::to_string(&run(&m, spec, 7)).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn reusing_qp_slots_changes_no_byte_of_a_congested_collective() {
    // 16 hosts on 2 leaves behind one 100G spine link each (8:1): the all-to-all marks ECN,
    // DCQCN cuts rates (the ring barely crosses the spine). Reusing the slots of finished QPs (what the CLI does)
    // must give the same table and the same report, byte for byte.
    let m = leaf_spine(2, 8, 1, 100);
    for op in [Collective::AllToAll, Collective::AllReduce] {
        let spec = CollectiveSpec {
            channels: Some(2),
            qps_per_connection: 2,
            message_rows: true,
            ..CollectiveSpec::new(op, 2 << 20)
        };
        let plain = run_collective(&m, &spec, SimOptions::default()).unwrap();
        let reused = run_collective(&m, &spec, SimOptions { recycle_qps: true, ..SimOptions::default() }).unwrap();
        let t = &plain.report.totals;
        if op == Collective::AllToAll {
            assert!(t.ecn_marked_packets > 0 && t.cnp_sent > 0, "congested: {t:?}");
        }
        assert_eq!(serde_json::to_string(&plain).unwrap(), serde_json::to_string(&reused).unwrap(), "{op:?}");
        assert_eq!(plain.report.to_json(), reused.report.to_json(), "{op:?}");
    }
}

#[test]
fn sizes_and_qp_counts_beyond_the_engines_are_refused_not_panicked_on() {
    let m = leaf_spine(2, 2, 1, 100);
    // 1 TiB on one channel: send/recv would post it as one message, beyond the engines' 1 TB.
    for op in [Collective::SendRecv, Collective::AllReduce, Collective::Broadcast, Collective::AllToAll] {
        let spec = CollectiveSpec { channels: Some(1), ..CollectiveSpec::new(op, 1 << 40) };
        let e = run_collective(&m, &spec, SimOptions::default()).unwrap_err();
        assert!(e[0].message.contains("1099511627776 B"), "{op:?}: {}", e[0].message);
        assert!(e[0].hint.contains("at most 1000000000000 B"), "{}", e[0].hint);
    }
    for q in [0, 129] {
        let spec = CollectiveSpec { qps_per_connection: q, ..CollectiveSpec::new(Collective::SendRecv, 1 << 20) };
        let e = run_collective(&m, &spec, SimOptions::default()).unwrap_err();
        assert!(e[0].message.contains(&format!("{q} QPs")), "{}", e[0].message);
    }
    // The bound itself runs (as a spec; the 1 TB run is not made here).
    let spec = CollectiveSpec::new(Collective::SendRecv, rocelab_workload::MAX_COLLECTIVE_BYTES);
    assert!(rocelab_workload::prepare(&m, &spec, 1).is_ok());
}

#[test]
fn nccls_hop_latency_is_charged_to_broadcast_chunks_and_point_to_point_sends_too() {
    // rail-16gpu-workloads (2 nodes × 8 H100, 8 × 400G) with and without `[nccl]
    // net_hop_latency = "tuning"`. An 8-byte send/recv goes LL (up to 16 KiB per channel,
    // NCCL_P2P_LL_THRESHOLD), and NCCL's figure for a hop between nodes with LL on a ring of 8
    // GPUs per node is 2.7 µs (hwLatencies[NET][Ring][LL], tuning.cc), the GPU↔NIC leg's 1.5 µs
    // of DMA and the fabric's own latency included.
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-16gpu-workloads.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let plain = rocelab_model::load_str("p.toml", &text).unwrap();
    let tuned = rocelab_model::load_str("t.toml", &(text + "\n[nccl]\nnet_hop_latency = \"tuning\"\n")).unwrap();
    let spec = |op, bytes| CollectiveSpec { channels: Some(1), ..CollectiveSpec::nccl(op, bytes) };
    let (sr_plain, sr_tuned) =
        (run(&plain, spec(Collective::SendRecv, 8), 1), run(&tuned, spec(Collective::SendRecv, 8), 1));
    assert_eq!((sr_plain.proto, sr_tuned.proto), ("LL", "LL"));
    // Without the key the hop is the leg and the simulated fabric; with it NCCL's 2.7 µs whole,
    // paid once per send (all are posted at once).
    assert!(sr_plain.time_us > 1.5 && sr_plain.time_us < 2.0, "{} µs", sr_plain.time_us);
    assert!(sr_tuned.time_us >= 2.7 && sr_tuned.time_us < 3.0, "{} µs", sr_tuned.time_us);
    // Broadcast's pipeline from rank 0: 14 NVLink hops and one hop between the nodes, whose
    // chunk now waits NCCL's figure less what the twin simulates (before: the fabric alone).
    let (b_plain, b_tuned) =
        (run(&plain, spec(Collective::Broadcast, 8), 1), run(&tuned, spec(Collective::Broadcast, 8), 1));
    assert_eq!((b_plain.algo, b_plain.proto), ("ring", "LL"));
    let more = b_tuned.time_us - b_plain.time_us;
    assert!(more > 2.5 && more < 2.7, "{more} µs more with NCCL's hop latency");
    // The wait is latency, not work: a large broadcast keeps its bandwidth (more chunks in
    // flight cover the wait, one after the other on the NIC): 326.6 GB/s against 339.9 without
    // the key, the difference the pipeline's longer fill (two hops between nodes for every
    // channel but the first, 14 µs each with Simple).
    let big = |m: &Model| {
        run(m, CollectiveSpec { channels: Some(8), ..CollectiveSpec::nccl(Collective::Broadcast, 256 << 20) }, 1)
    };
    let (big_plain, big_tuned) = (big(&plain), big(&tuned));
    assert!(
        big_tuned.busbw_gbytes_per_s > 0.95 * big_plain.busbw_gbytes_per_s,
        "{} vs {} GB/s",
        big_tuned.busbw_gbytes_per_s,
        big_plain.busbw_gbytes_per_s
    );
}
