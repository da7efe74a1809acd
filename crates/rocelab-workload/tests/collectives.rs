//! Collectives on the packet engine against first principles, and their table against the
//! doctor's nccl-tests parser.

use rocelab_model::{load_str, Model};
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::SimOptions;
use rocelab_workload::{run_collective, table, Collective, CollectiveSpec};

mod common;

/// The shared non-blocking ring fabric (`common::ring8`).
fn fabric(extra: &str) -> Model {
    common::ring8(extra)
}

/// Payload goodput of a host link in bytes/s: 100 Gb/s × MTU / (MTU + per-packet headers).
fn goodput(m: &Model) -> f64 {
    let mtu = m.nics[0].mtu as f64;
    100e9 / 8.0 * mtu / (mtu + DATA_OVERHEAD as f64)
}

#[test]
fn ring_all_reduce_reaches_the_alpha_beta_bound() {
    let m = fabric("");
    let s = 16u64 << 20;
    let r = run_collective(&m, &CollectiveSpec::new(Collective::AllReduce, s), SimOptions::default()).unwrap();
    assert_eq!(r.ranks, 8);
    // α-β: 2(n−1)/n · S / B, B the link's payload goodput. Nothing can beat it; latency
    // (14 steps of a few µs against 2 MB per step) keeps the run within 10 % of it.
    let bound_us = 2.0 * 7.0 / 8.0 * s as f64 / goodput(&m) * 1e6;
    assert!(r.time_us >= bound_us, "faster than the wire: {} µs < {bound_us} µs", r.time_us);
    assert!(r.time_us <= bound_us / 0.9, "{} µs against a bound of {bound_us} µs", r.time_us);
    // busbw = algbw · 2(n−1)/n approaches the goodput.
    let busbw = s as f64 / (r.time_us * 1e-6) * 1.75 / 1e9;
    assert!((r.busbw_gbytes_per_s - busbw).abs() < 1e-9);
    assert!(r.busbw_gbytes_per_s >= 0.9 * goodput(&m) / 1e9);
    assert_eq!(r.report.totals.packets_dropped, 0);
}

#[test]
fn all_gather_and_reduce_scatter_take_half_the_steps() {
    let m = fabric("");
    let s = 16u64 << 20;
    let ar = run_collective(&m, &CollectiveSpec::new(Collective::AllReduce, s), SimOptions::default()).unwrap();
    for op in [Collective::AllGather, Collective::ReduceScatter] {
        let r = run_collective(&m, &CollectiveSpec::new(op, s), SimOptions::default()).unwrap();
        // (n−1)/n · S / B: half of all-reduce's wire time, so about half its time.
        let ratio = r.time_us / ar.time_us;
        assert!((0.45..=0.55).contains(&ratio), "{op:?}: {ratio}");
        let bound_us = 7.0 / 8.0 * s as f64 / goodput(&m) * 1e6;
        assert!(r.time_us >= bound_us && r.time_us <= bound_us / 0.9, "{op:?}: {} vs {bound_us}", r.time_us);
    }
}

#[test]
fn a_link_lost_mid_collective_costs_time_and_loses_only_what_was_on_it() {
    let m = fabric("");
    let s = 16u64 << 20;
    let healthy = run_collective(&m, &CollectiveSpec::new(Collective::AllReduce, s), SimOptions::default()).unwrap();
    // A host link of the ring goes down for 200 µs mid-run: its QPs time out and go back N.
    let cut = fabric(
        "[[fault]]\nkind = \"link-down\"\nat_us = 500\na = \"host0\"\nb = \"leaf0\"\n\
         [[fault]]\nkind = \"link-up\"\nat_us = 700\na = \"host0\"\nb = \"leaf0\"\n",
    );
    let r = run_collective(&cut, &CollectiveSpec::new(Collective::AllReduce, s), SimOptions::default()).unwrap();
    assert_eq!(r.failed_chunks, 0, "the collective completes");
    assert!(r.time_us.is_finite());
    assert!(r.time_us > healthy.time_us + 200.0, "{} µs vs {} µs healthy", r.time_us, healthy.time_us);
    let t = &r.report.totals;
    assert!(t.packets_dropped > 0);
    assert_eq!(t.drops_by_reason["link_down"], t.packets_dropped, "{:?}", t.drops_by_reason);
}

#[test]
fn the_twin_table_reads_as_nccl_tests_output() {
    let m = fabric("");
    let spec = CollectiveSpec::new(Collective::AllReduce, 1 << 20);
    let sizes = rocelab_workload::sweep_sizes(1 << 16, 1 << 20, 4).unwrap();
    assert_eq!(sizes, vec![1 << 16, 1 << 18, 1 << 20]);
    let rs = rocelab_workload::sweep(&m, &spec, &sizes, SimOptions::default(), &mut |_, _| {}).unwrap();
    let text = table::render(&rs, "ring8");
    let runs = rocelab_doctor::parse::nccl::parse(&text, None).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(runs.len(), 1, "{text}");
    let run = &runs[0];
    assert_eq!(run.op.as_deref(), Some("all_reduce"));
    assert_eq!(run.rows.len(), 3);
    for (row, r) in run.rows.iter().zip(&rs) {
        assert_eq!(row.size_bytes, r.bytes);
        let busbw = row.out_of_place.busbw_gbytes_per_s;
        assert!((busbw - r.busbw_gbytes_per_s).abs() < 0.006, "{busbw} vs {}", r.busbw_gbytes_per_s);
    }
    // Bigger messages amortize the per-step latency: busbw grows with size.
    assert!(rs.windows(2).all(|w| w[1].busbw_gbytes_per_s > w[0].busbw_gbytes_per_s));
}

#[test]
fn names_and_sizes_are_checked() {
    assert_eq!(rocelab_workload::parse_op("all_reduce_perf").unwrap(), Collective::AllReduce);
    assert_eq!(rocelab_workload::parse_op("allgather").unwrap(), Collective::AllGather);
    assert_eq!(rocelab_workload::parse_op("alltoall_perf").unwrap(), Collective::AllToAll);
    assert_eq!(rocelab_workload::parse_op("all_to_all").unwrap(), Collective::AllToAll);
    assert_eq!(rocelab_workload::parse_op("broadcast").unwrap(), Collective::Broadcast);
    assert_eq!(rocelab_workload::parse_op("sendrecv_perf").unwrap(), Collective::SendRecv);
    assert!(rocelab_workload::parse_op("reduce").unwrap_err().contains("not on the twin yet"));
    assert!(rocelab_workload::parse_op("allreduse").is_err());
    assert!(rocelab_workload::sweep_sizes(0, 8, 2).is_err());
    assert!(rocelab_workload::sweep_sizes(8, 4, 2).is_err());
    assert!(rocelab_workload::sweep_sizes(8, 64, 1).is_err());
    assert_eq!(rocelab_workload::sweep_sizes(8, 70, 2).unwrap(), vec![8, 16, 32, 64]);
    assert_eq!(rocelab_workload::sweep_sizes(1, u64::MAX, 1 << 32).unwrap().len(), 2);
}

#[test]
fn on_a_rail_fabric_each_channel_crosses_between_nodes_on_its_own_rail() {
    let text = r#"[fabric]
name = "rail4x2"
[topology.rail_optimized]
gpu_nodes = 4
rails = 2
nodes_per_su = 4
spines_per_pod = 2
host_link = { speed_gbps = 100, length_m = 5 }
leaf_link = { speed_gbps = 100, length_m = 50 }
"#;
    let m = load_str("rail.toml", text).unwrap_or_else(|e| panic!("{e}"));
    // Given as host NICs, the ranks walk rail by rail.
    let ranks = rocelab_workload::default_ranks(&m);
    let rails: Vec<u32> = ranks.iter().map(|h| m.node(*h).rail().unwrap()).collect();
    assert_eq!(rails, vec![0, 0, 0, 0, 1, 1, 1, 1], "rail-major ring order");
    // By default the ranks are the GPUs (2 per node, one per NIC, NVLink 4 between them):
    // channel 0 crosses between nodes on rail 0, channel 1 on rail 1, and the hop between the
    // two GPUs of a node stays inside it. Each NIC carries one channel's half of the
    // 2(n−1)/n · S that every rank sends, so the two rails together take half the time that one
    // NIC per rank did: t ≥ 2(n−1)/n · S / (2 B). (Before GPU placement this fabric's ring was
    // 8 host NICs, each sending all 2(n−1)/n · S: twice this time.)
    let s = 8u64 << 20;
    let spec = CollectiveSpec { message_rows: true, ..CollectiveSpec::new(Collective::AllReduce, s) };
    let r = run_collective(&m, &spec, SimOptions::default()).unwrap();
    assert_eq!(r.ranks, 8);
    let bound_us = 2.0 * 7.0 / 8.0 * s as f64 / (2.0 * goodput(&m)) * 1e6;
    assert!(r.time_us >= bound_us && r.time_us <= bound_us / 0.9, "{} µs vs {bound_us} µs", r.time_us);
    assert!(r.report.flows.iter().all(|f| f.src.ends_with(&f.dst[f.dst.len() - 5..])), "same NIC index at both ends");
}

/// 8 hosts on 2 leaves at 100G and one spine at `spine_gbps`: 4 × 100G down per leaf against
/// one uplink (2:1 oversubscribed at 200G, non-blocking at 400G; one path, so no ECMP
/// collision blurs the share).
fn two_tier(spine_gbps: u32) -> Model {
    common::leaf_spine(2, 4, 1, spine_gbps, "")
}

#[test]
fn an_oversubscribed_tier_costs_busbw_only_when_the_ring_crosses_it() {
    let s = 32u64 << 20;
    let busbw = |m: &Model, interleave: bool| {
        let hosts: Vec<_> = m.hosts().collect();
        // Leaf order: one hop out of each leaf per channel. Interleaved (rank i on leaf i mod 2):
        // every hop crosses the spines, 4 hosts' streams out of a leaf.
        let ranks = if interleave { (0..4).flat_map(|i| [hosts[i], hosts[4 + i]]).collect() } else { hosts.clone() };
        let spec = CollectiveSpec { ranks: Some(ranks), ..CollectiveSpec::new(Collective::AllReduce, s) };
        let r = run_collective(m, &spec, SimOptions::default()).unwrap();
        assert_eq!(r.failed_chunks, 0);
        r.busbw_gbytes_per_s
    };
    let (full, over) = (two_tier(400), two_tier(200));
    let g = goodput(&full) / 1e9;
    let (full_leaf, full_cross) = (busbw(&full, false), busbw(&full, true));
    let (over_leaf, over_cross) = (busbw(&over, false), busbw(&over, true));
    println!("busbw GB/s: 1:1 leaf-order {full_leaf:.2}, crossing {full_cross:.2}; 2:1 leaf-order {over_leaf:.2}, crossing {over_cross:.2}");
    // Non-blocking: both orders reach the host link's goodput.
    assert!(full_leaf >= 0.9 * g && full_cross >= 0.9 * g, "{full_leaf} {full_cross} vs {g}");
    // 2:1, ring crossing the tier at every hop: 4 streams of 100G share 200G of uplink, so
    // each gets half the link at best: busbw ≤ g/2. Each step waits for its slowest stream,
    // and congestion control's shares are not exactly equal: 86 % of the fair share here.
    let ratio = over_cross / full_cross;
    assert!((0.4..=0.505).contains(&ratio), "{over_cross} / {full_cross} = {ratio}");
    // 2:1 with the ring in leaf order: only 2 streams per channel leave a leaf, within its
    // uplinks: busbw as on the non-blocking fabric.
    assert!((over_leaf - full_leaf).abs() <= 0.02 * full_leaf, "{over_leaf} vs {full_leaf}");
}

#[test]
fn a_tree_all_reduce_moves_the_rings_bytes_at_link_speed_with_log_depth() {
    use rocelab_workload::Algo;
    // 8 hosts, non-blocking: each of the two trees carries half of the buffer; a node sends
    // and receives about 2·S over its link either way (interior in one tree: 3 · S/2 each
    // way, leaf in the other: S/2), so the bound is 2·S / B, as the ring's 2(n−1)/n · S / B.
    let m = fabric("");
    let s = 64u64 << 20;
    let spec = |algo| CollectiveSpec { algo: Some(algo), ..CollectiveSpec::new(Collective::AllReduce, s) };
    let tree = run_collective(&m, &spec(Algo::Tree), SimOptions::default()).unwrap();
    let ring = run_collective(&m, &spec(Algo::Ring), SimOptions::default()).unwrap();
    assert_eq!((tree.failed_chunks, tree.algo), (0, "tree"));
    let g = goodput(&m);
    // Per node of the 8 (tree 0: 0→4, 4→2,6, 2→1,3, 6→5,7; tree 1 its mirror): the busiest
    // link carries 3 · S/2 up and down in one tree plus S/2 in the other: 2·S.
    let bound_us = 2.0 * s as f64 / g * 1e6;
    println!("tree {:.1} µs, ring {:.1} µs, tree bound {bound_us:.1} µs", tree.time_us, ring.time_us);
    assert!(tree.time_us >= bound_us, "{} < {bound_us}", tree.time_us);
    assert!(tree.time_us <= bound_us / 0.85, "{} vs {bound_us}", tree.time_us);
    assert_eq!(tree.report.totals.packets_dropped, 0);
    // The same bytes on the wire as the ring's 2(n−1)/n · S per rank, within the chunk padding:
    // every non-root position sends each chunk up once and receives it down once: 2 · 7/8 · S
    // per rank in total, as the ring.
    let pkts = |r: &rocelab_workload::CollectiveResult| r.data_packets as f64;
    assert!((pkts(&tree) / pkts(&ring) - 1.0).abs() < 0.02, "{} vs {}", pkts(&tree), pkts(&ring));
}

#[test]
fn a_one_chunk_tree_all_reduce_takes_the_trees_depth_up_and_down() {
    use rocelab_workload::Algo;
    // 64 KiB over 32 hosts, 2 channels (one per tree): one 32 KiB chunk per channel. Tree 0 is
    // 0 → 16 → 8 → 4 → 2 → 1 deep (5 levels). Going up, a node below the root receives its
    // two children's chunks on one link (2 chunk times per level; the root has one child):
    // 9 chunk times; going down, a node sends to its two children one after the other: 9
    // again. 18 × (32 KiB / goodput), plus a few hundred ns of store-and-forward per hop.
    let m = common::leaf_spine(4, 8, 2, 400, "");
    let spec = |algo| CollectiveSpec { algo: Some(algo), ..CollectiveSpec::new(Collective::AllReduce, 64 << 10) };
    let tree = run_collective(&m, &spec(Algo::Tree), SimOptions::default()).unwrap();
    let chunk_us = (32u64 << 10) as f64 / goodput(&m) * 1e6;
    let bound = 18.0 * chunk_us;
    println!("64 KiB on 32 ranks: tree {:.1} µs, 18 chunk times {bound:.1} µs", tree.time_us);
    // NCCL's tree/Simple base latency (8.4 µs) once, the proxy's post overhead (3 µs with
    // Simple) on each of the 10 hops up and down, and their store-and-forward and propagation,
    // under 1.5 µs each.
    let nccl = 8.4 + 10.0 * 3.0;
    assert!(tree.time_us >= bound + nccl, "{} < {bound} + {nccl}", tree.time_us);
    assert!(tree.time_us <= bound + nccl + 15.0, "{} vs {bound} + {nccl}", tree.time_us);
    // Only all-reduce has a tree.
    let e = run_collective(
        &m,
        &CollectiveSpec { algo: Some(Algo::Tree), ..CollectiveSpec::new(Collective::AllGather, 1 << 20) },
        SimOptions::default(),
    )
    .unwrap_err();
    assert!(e[0].to_string().contains("all-reduce only"), "{e:?}");
}

#[test]
fn a_partitioned_collective_hears_every_delivery_within_the_lookahead_of_its_answer() {
    // The rail example cut into rail groups: ring and tree all-reduce with GPU placement
    // (intra-node hops are wake-ups). NCCL's proxy overhead (3 µs) is the workload's
    // reaction delay, above the 500 ns lookahead, so no message the workload posts in answer
    // to a delivery is ever moved, and the result is one engine's within 3 %.
    use rocelab_sim::parallel::Parallel;
    use rocelab_sim::partition::PartitionBy;
    use rocelab_workload::{prepare, Algo};
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/rail-128gpu.toml")).unwrap();
    let m = load_str("rail-128gpu.toml", &text).unwrap();
    for algo in [Algo::Ring, Algo::Tree] {
        let spec = CollectiveSpec { algo: Some(algo), ..CollectiveSpec::new(Collective::AllReduce, 4 << 20) };
        let par = Parallel { by: PartitionBy::Auto, parts: 4, threads: 2 };
        let one = run_collective(&m, &spec, SimOptions::default()).unwrap().time_us * 1e-6;
        let mut times = Vec::new();
        // With and without reusing the slots of finished QPs, which the leader decides for
        // every partition at once: the same run either way.
        for recycle_qps in [false, true] {
            let mut p = prepare(&m, &spec, 1).unwrap();
            let work = std::mem::replace(&mut p.workload, Box::new(rocelab_sim::workload::FixedFlows(vec![])));
            assert!(work.reaction_delay() >= rocelab_model::SimTime::from_us(3), "{algo:?}");
            let opts = SimOptions { parallel: Some(par), recycle_qps, ..SimOptions::default() };
            let mut run = rocelab_sim::Run::with_workload(&m, work, vec![], opts).unwrap();
            run.run(&mut |_| {});
            let rocelab_sim::Run::Parallel(pr) = &run else { panic!("not partitioned") };
            assert_eq!(pr.late_reactions(), 0, "{algo:?}");
            assert_eq!(p.failed_chunks(), 0, "{algo:?}");
            let snap = run.snapshot();
            let held = snap.qps.len();
            let posted: u32 = snap.flows.iter().map(|f| f.qps).sum();
            if recycle_qps {
                assert!(held * 4 < posted as usize, "{algo:?}: {held} QP slots held for {posted} QPs");
            } else {
                assert_eq!(held, posted as usize);
            }
            assert!(snap.flows.iter().all(|f| f.finish.is_some() && f.delivered_bytes == f.size_bytes));
            times.push(p.time().unwrap().as_secs_f64());
        }
        assert_eq!(times[0], times[1], "{algo:?}: reusing slots changed the run");
        assert!((times[0] / one - 1.0).abs() < 0.03, "{algo:?}: {} s against {one} s", times[0]);
    }
}
