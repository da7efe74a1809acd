//! Collectives with GPU placement on rail-optimized fabrics, against hand-computed bounds.
//!
//! Ranks are GPUs; GPU g of a node sends on NIC g (rail g); channel c's ring visits the GPUs
//! of each node over the intra-node link and crosses between nodes on rail c mod R only
//! (`rocelab_workload::placement`).

use rocelab_model::{load_str, Model};
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::SimOptions;
use rocelab_workload::placement::{self, Hop, Placement};
use rocelab_workload::{run_collective, Collective, CollectiveResult, CollectiveSpec};
use std::collections::BTreeSet;

mod common;

/// `nodes` GPU nodes of 8 GPUs and 8 NICs at `gbps` (`common::rail`).
fn rail_fabric(nodes: u32, gbps: u32, gpu_node: &str) -> Model {
    common::rail(nodes, gbps, gpu_node)
}

/// Payload goodput of a NIC link in bytes/s: rate × MTU / (MTU + 82 B of headers per packet).
fn goodput(m: &Model, gbps: f64) -> f64 {
    let mtu = m.nics[0].mtu as f64;
    assert_eq!(mtu, 4096.0);
    gbps * 1e9 / 8.0 * mtu / (mtu + DATA_OVERHEAD as f64)
}

fn run(m: &Model, spec: &CollectiveSpec) -> CollectiveResult {
    let r = run_collective(m, spec, SimOptions::default()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(r.failed_chunks, 0);
    assert!(r.time_us.is_finite());
    r
}

#[test]
fn a_ring_all_reduce_over_nvlink_is_bound_by_the_nics_and_crosses_the_fabric_8x_less() {
    // 2 nodes × 8 H100s, NVLink 4 (450 GB/s per GPU and direction) against 100G NICs
    // (12.25 GB/s of payload): the NICs are the bottleneck.
    let m = rail_fabric(2, 100, "intra_node = \"nvlink4\"");
    let s = 64u64 << 20;
    let spec = CollectiveSpec { channels: Some(8), ..CollectiveSpec::new(Collective::AllReduce, s) };
    let r = run(&m, &spec);
    assert_eq!(r.ranks, 16);
    // Every channel's ring carries 2(n−1)/n · S/C through one NIC per node, each channel on
    // its own rail: 8 NICs in parallel, B_ring = 8 × 12.25 GB/s.
    let n = 16.0;
    let b = goodput(&m, 100.0);
    let bound_us = 2.0 * (n - 1.0) / n * s as f64 / (8.0 * b) * 1e6;
    // NVLink's share: each GPU sends 7 of the 8 channels' chunks to a GPU of its node,
    // 2(n−1)/n · S · 7/8 at 450 GB/s: 0.24 ms, a fifth of the NIC bound; latency 3.4 µs a hop.
    let nvlink_us = 2.0 * (n - 1.0) / n * s as f64 * 7.0 / 8.0 / 450e9 * 1e6;
    println!("{:.1} µs, NIC bound {bound_us:.1} µs, NVLink {nvlink_us:.1} µs", r.time_us);
    assert!(nvlink_us < bound_us / 4.0);
    assert!(r.time_us >= bound_us, "faster than the NICs: {} µs < {bound_us} µs", r.time_us);
    assert!(r.time_us <= bound_us / 0.9, "{} µs against a bound of {bound_us} µs", r.time_us);
    // busbw (factor 2(n−1)/n, nccl-tests' own) approaches the 8 NICs' goodput.
    assert!(r.busbw_gbytes_per_s >= 0.9 * 8.0 * b / 1e9, "{}", r.busbw_gbytes_per_s);
    assert_eq!(r.report.totals.packets_dropped, 0);

    // Every host NIC a rank, as before GPU placement: all 16 hops of every step cross the
    // fabric. With GPUs, only the 2 node-to-node hops of each channel's ring do: 16 / 2 = 8×
    // fewer data packets (chunks of 4 MiB / 8 channels = 512 KiB = 128 packets either way).
    let hosts = CollectiveSpec { ranks: Some(rocelab_workload::default_ranks(&m)), ..spec };
    let all_nic = run(&m, &hosts);
    assert_eq!(all_nic.ranks, 16);
    let chunk_packets = (512u64 << 10).div_ceil(4096);
    assert_eq!(all_nic.data_packets, 30 * 16 * 8 * chunk_packets);
    assert_eq!(r.data_packets, 30 * 2 * 8 * chunk_packets);
    assert_eq!(all_nic.data_packets, 8 * r.data_packets);
    // And each NIC then carries the whole 2(n−1)/n · S: 8× the time of the GPU placement.
    assert!(all_nic.time_us >= 2.0 * (n - 1.0) / n * s as f64 / b * 1e6);
    assert!(all_nic.time_us > 7.0 * r.time_us, "{} vs {}", all_nic.time_us, r.time_us);
}

#[test]
fn with_pcie_slower_than_the_nic_the_intra_node_hop_is_the_bound() {
    // 400G NICs (49.0 GB/s of payload) and PCIe Gen4 x16 between the GPUs (31 GB/s).
    let m = rail_fabric(2, 400, "intra_node = \"pcie4\"");
    assert_eq!(m.gpu_node.intra_node_gbytes_per_s, 31.0);
    let s = 64u64 << 20;
    let spec = CollectiveSpec { channels: Some(8), ..CollectiveSpec::new(Collective::AllReduce, s) };
    let r = run(&m, &spec);
    let n = 16.0;
    // Each GPU leaves its node in 1 channel of 8 and sends the other 7 channels' chunks to a
    // GPU of its node: 2(n−1)/n · S · 7/8 through its own PCIe link at 31 GB/s (2.9× the NIC
    // time, 2(n−1)/n · S/8 at 49 GB/s).
    let pcie_us = 2.0 * (n - 1.0) / n * s as f64 * 7.0 / 8.0 / 31e9 * 1e6;
    let nic_us = 2.0 * (n - 1.0) / n * s as f64 / (8.0 * goodput(&m, 400.0)) * 1e6;
    println!("{:.1} µs, PCIe bound {pcie_us:.1} µs, NIC bound {nic_us:.1} µs", r.time_us);
    assert!(pcie_us > 2.0 * nic_us);
    assert!(r.time_us >= pcie_us, "faster than PCIe: {} µs < {pcie_us} µs", r.time_us);
    assert!(r.time_us <= pcie_us / 0.9, "{} µs against a bound of {pcie_us} µs", r.time_us);
    // A given bandwidth overrides the label's default: twice the bandwidth, about half the time.
    let fast = rail_fabric(2, 400, "intra_node = \"pcie4\"\nintra_node_gbytes_per_s = 62");
    let r2 = run(&fast, &spec);
    let ratio = r2.time_us / r.time_us;
    assert!((0.5..0.56).contains(&ratio), "{ratio}");
}

#[test]
fn channel_rings_leave_every_node_on_their_own_rail() {
    let m = rail_fabric(4, 100, "intra_node = \"nvlink4\"");
    let Placement::Gpus(layout) = placement::placement(&m).unwrap() else { panic!("GPU placement") };
    assert_eq!((layout.nodes.len(), layout.gpus), (4, 8));
    let rail = |h: rocelab_model::NodeId| m.node(h).rail().unwrap();
    for c in 0..10u32 {
        let ring = layout.ring(c);
        // Channel c: node 0's GPUs from GPU c mod 8 (local to NIC c mod 8), then node 1's, ...
        let first: Vec<u32> = (0..4).map(|k| ring.order[k * 8] % 8).collect();
        assert_eq!(first, vec![c % 8; 4]);
        let net: Vec<(u32, u32)> = ring
            .hops
            .iter()
            .filter_map(|h| match *h {
                Hop::Net { src, dst } => Some((rail(src), rail(dst))),
                Hop::Local { .. } => None,
            })
            .collect();
        // One hop out of each node, on rail c mod 8 at both ends.
        assert_eq!(net, vec![(c % 8, c % 8); 4], "channel {c}");
    }
    // On the engine: 3 channels put traffic on NICs 0, 1 and 2 only, each to the same NIC of
    // the next node.
    let spec =
        CollectiveSpec { channels: Some(3), message_rows: true, ..CollectiveSpec::new(Collective::AllGather, 3 << 20) };
    let r = run(&m, &spec);
    let pairs: BTreeSet<(String, String)> = r.report.flows.iter().map(|f| (f.src.clone(), f.dst.clone())).collect();
    let want: BTreeSet<(String, String)> = (0..3)
        .flat_map(|nic| (0..4).map(move |k| (format!("node{k}-nic{nic}"), format!("node{}-nic{nic}", (k + 1) % 4))))
        .collect();
    assert_eq!(pairs, want);
}

#[test]
fn broadcast_and_all_to_all_use_the_intra_node_link_too() {
    let m = rail_fabric(2, 100, "intra_node = \"nvlink4\"");
    // Broadcast of 128 MiB from GPU 0 of node 0 over 8 channels, each along its channel's ring
    // from the root: channel c leaves node 0 on NIC c after GPUs 0..c−1, crosses node 1, and
    // (for c > 0) comes back on rail c to reach node 0's GPUs c..7. Every NIC sends S/8 at
    // most once, so the pipeline runs at 8 NICs' goodput: t ≥ S / (8 B). It fills in one more
    // 512 KiB chunk on the second crossing and 14 NVLink hops of 512 KiB / 450 GB/s + 3.4 µs
    // (78 µs), with each connection idle for a chunk's flight time between chunks: within 15 %
    // at 32 chunks per channel.
    let s = 128u64 << 20;
    let spec = CollectiveSpec { channels: Some(8), ..CollectiveSpec::new(Collective::Broadcast, s) };
    let r = run(&m, &spec);
    let b = goodput(&m, 100.0);
    let bound_us = s as f64 / (8.0 * b) * 1e6;
    let fill_us = (s as f64 / 8.0 + (512 << 10) as f64) / b * 1e6 + 14.0 * ((512 << 10) as f64 / 450e9 * 1e6 + 3.4);
    println!("broadcast {:.1} µs, bound {bound_us:.1} µs, pipeline estimate {fill_us:.1} µs", r.time_us);
    assert!(r.time_us >= bound_us && r.time_us <= bound_us / 0.85, "{} µs vs {bound_us} µs", r.time_us);
    assert!(r.time_us <= fill_us * 1.03, "{} µs vs a pipeline estimate of {fill_us} µs", r.time_us);
    // Channel 0 crosses once, channels 1..7 twice: 15 crossings of S/8 in 4 KiB packets.
    assert_eq!(r.data_packets, 15 * (s / 8) / 4096);
    // all-to-all: of the 15 peers of a GPU, 7 are in its node (NVLink) and 8 in the other:
    // 8/16 of S leaves through the NICs, each GPU's share through the NIC of the destination's
    // rail (PXN), 8 NICs per node in parallel: t ≥ (8/16 · S) / B per NIC.
    let s = 16u64 << 20;
    let r = run(&m, &CollectiveSpec::new(Collective::AllToAll, s));
    let bound_us = 0.5 * s as f64 / b * 1e6;
    println!("all-to-all {:.1} µs, bound {bound_us:.1} µs", r.time_us);
    assert!(r.time_us >= bound_us && r.time_us <= bound_us / 0.85, "{} µs vs {bound_us} µs", r.time_us);
    // 16 GPUs × 8 remote peers × 1 MiB, in 4 KiB packets.
    assert_eq!(r.data_packets, 16 * 8 * (1 << 20) / 4096);
}

#[test]
fn bad_gpu_node_values_are_refused_naming_the_key() {
    for (lines, key) in [
        ("intra_node_gbytes_per_s = 0", "gpu_node.intra_node_gbytes_per_s"),
        ("intra_node_gbytes_per_s = -3", "gpu_node.intra_node_gbytes_per_s"),
        ("intra_node_gbytes_per_s = 1e-300", "gpu_node.intra_node_gbytes_per_s"),
        ("intra_node_gbytes_per_s = 1e6", "gpu_node.intra_node_gbytes_per_s"),
        ("intra_node_gbytes_per_s = nan", "gpu_node.intra_node_gbytes_per_s"),
        ("intra_node_gbytes_per_s = inf", "gpu_node.intra_node_gbytes_per_s"),
        ("intra_node = \"nvlink9\"", "gpu_node.intra_node"),
    ] {
        let m = rail_fabric(2, 100, lines);
        let e = run_collective(&m, &CollectiveSpec::new(Collective::AllReduce, 1 << 20), SimOptions::default())
            .unwrap_err();
        assert_eq!(e[0].path, key, "{lines}: {e:?}");
    }
    // gpus = 0 (a fabric of 2 nodes with 8 NICs each).
    let text = "[fabric]\nname = \"x\"\n[topology.rail_optimized]\ngpu_nodes = 2\nrails = 2\nnodes_per_su = 2\n\
                spines_per_pod = 2\nhost_link = { speed_gbps = 100 }\nleaf_link = { speed_gbps = 100 }\n\
                [gpu_node]\ngpus = 0\n";
    if let Ok(m) = load_str("x.toml", text) {
        let e = run_collective(&m, &CollectiveSpec::new(Collective::AllReduce, 1 << 20), SimOptions::default())
            .unwrap_err();
        assert_eq!(e[0].path, "gpu_node.gpus");
    }
    // A custom label with its bandwidth is fine.
    let m = rail_fabric(2, 100, "intra_node = \"nvlink9\"\nintra_node_gbytes_per_s = 1800");
    run(&m, &CollectiveSpec::new(Collective::AllReduce, 1 << 20));
}

#[test]
fn same_seed_same_bytes_with_gpu_placement() {
    let m = rail_fabric(2, 100, "intra_node = \"nvlink4\"");
    for op in [Collective::AllReduce, Collective::AllToAll, Collective::Broadcast, Collective::SendRecv] {
        let spec = CollectiveSpec { channels: Some(4), ..CollectiveSpec::new(op, 1 << 20) };
        let opts = SimOptions { seed: 7, ..SimOptions::default() };
        let a = run_collective(&m, &spec, opts.clone()).unwrap();
        let b = run_collective(&m, &spec, opts).unwrap();
        assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
        assert_eq!(a.failed_chunks, 0, "{op:?}");
    }
}

#[test]
fn one_gpu_node_runs_entirely_inside_the_node() {
    // 1 node × 8 GPUs: no hop crosses the fabric. All-reduce over NVLink 4: each GPU sends
    // 2(n−1)/n · S at 450 GB/s, plus NCCL's ring/Simple base latency (8.4 µs). Unsliced, each
    // of the 14 steps would add its 3.4 µs hop latency after a whole 8 MiB chunk; in 512 KiB
    // slices a GPU forwards a slice as soon as it has it, so only the first slice's hop is
    // exposed, and its link stays busy.
    let m = rail_fabric(1, 100, "intra_node = \"nvlink4\"");
    let s = 64u64 << 20;
    let r = run(&m, &CollectiveSpec { channels: Some(1), ..CollectiveSpec::new(Collective::AllReduce, s) });
    assert_eq!((r.ranks, r.data_packets), (8, 0));
    let wire_us = 1.75 * s as f64 / 450e9 * 1e6;
    let slice_us = (512u64 << 10) as f64 / 450e9 * 1e6;
    let unsliced = wire_us + 8.4 + 14.0 * 3.4;
    let lower = wire_us + 8.4 + 3.4;
    assert!(r.time_us >= lower - 0.01 && r.time_us <= lower + 14.0 * slice_us, "{} µs vs {lower} µs", r.time_us);
    assert!(r.time_us < unsliced - 30.0, "{} µs: slicing hides the per-step latency of {unsliced} µs", r.time_us);
    for op in [Collective::AllToAll, Collective::Broadcast, Collective::SendRecv, Collective::AllGather] {
        let r = run(&m, &CollectiveSpec::new(op, 1 << 20));
        assert_eq!(r.data_packets, 0, "{op:?}");
    }
}

#[test]
fn by_default_every_nic_of_a_gpu_node_carries_a_channel() {
    // 8 GPUs and 8 NICs per node: 8 channels, one ring per rail.
    let m = rail_fabric(2, 100, "");
    assert_eq!(rocelab_workload::default_channels(&m), 8);
    // Without GPU nodes, NCCL's usual minimum of 2.
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/leaf-spine-small.toml")).unwrap();
    let flat = load_str("leaf-spine-small.toml", &text).unwrap();
    assert_eq!(rocelab_workload::default_channels(&flat), 2);
}

#[test]
fn a_job_on_the_first_k_gpu_nodes_has_k_times_g_ranks_and_the_same_nic_bound() {
    // 4 nodes of 8 GPUs; a job on 2 of them: 16 ranks, the same ring bound as a 2-node fabric.
    let m = rail_fabric(4, 100, "intra_node = \"nvlink4\"");
    let s = 64u64 << 20;
    let spec =
        CollectiveSpec { channels: Some(8), gpu_nodes: Some(2), ..CollectiveSpec::new(Collective::AllReduce, s) };
    let r = run(&m, &spec);
    assert_eq!(r.ranks, 16);
    let n = 16.0;
    let bound_us = 2.0 * (n - 1.0) / n * s as f64 / (8.0 * goodput(&m, 100.0)) * 1e6;
    assert!(r.time_us >= bound_us && r.time_us <= bound_us / 0.9, "{} µs, bound {bound_us} µs", r.time_us);
    // The whole fabric is 32 ranks; only GPU nodes that exist can be asked for.
    assert_eq!(run(&m, &CollectiveSpec { gpu_nodes: None, ..spec.clone() }).ranks, 32);
    for k in [0, 5] {
        let e = run_collective(&m, &CollectiveSpec { gpu_nodes: Some(k), ..spec.clone() }, SimOptions::default())
            .unwrap_err();
        assert!(e[0].to_string().contains("give 1 to 4"), "{e:?}");
    }
    let hosts = CollectiveSpec { ranks: Some(rocelab_workload::default_ranks(&m)), ..spec };
    let e = run_collective(&m, &hosts, SimOptions::default()).unwrap_err();
    assert!(e[0].to_string().contains("host NICs"), "{e:?}");
}

#[test]
fn a_tree_all_reduce_on_gpu_nodes_loads_every_nic_with_one_channel_of_each_tree() {
    use rocelab_workload::Algo;
    // 4 nodes × 8 GPUs × 8 × 400G NICs, 16 channels: NIC ρ carries channels 2ρ (tree 0) and
    // 2ρ + 1 (tree 1), S/16 each. The busiest NIC belongs to a node interior in one tree
    // (3 · S/16 each way: two children and a parent) and a leaf in the other (S/16): S/4.
    let m = rail_fabric(4, 400, "intra_node = \"nvlink4\"");
    let s = 256u64 << 20;
    let spec =
        CollectiveSpec { channels: Some(16), algo: Some(Algo::Tree), ..CollectiveSpec::new(Collective::AllReduce, s) };
    let r = run(&m, &spec);
    assert_eq!((r.ranks, r.algo), (32, "tree"));
    let bound_us = s as f64 / 4.0 / goodput(&m, 400.0) * 1e6;
    println!("tree {:.1} µs, NIC bound {bound_us:.1} µs, busbw {:.1} GB/s", r.time_us, r.busbw_gbytes_per_s);
    assert!(r.time_us >= bound_us, "{} < {bound_us}", r.time_us);
    // Each chunk climbs 7 NVLink hops (3.4 µs each) and comes down 7 more between its NIC
    // transfers, through windows of two: the pipeline reaches 83 % of the NIC bound here.
    assert!(r.time_us <= bound_us / 0.75, "{} vs {bound_us}", r.time_us);
    // Traffic crosses the fabric only between node heads: per channel 2 · (nodes − 1) · S/16.
    let chunk_pkts = (512u64 << 10).div_ceil(4096);
    let chunks = (s / 16).div_ceil(512 << 10);
    assert_eq!(r.data_packets, 16 * 2 * 3 * chunks * chunk_pkts);
}

#[test]
fn with_pxn_an_all_to_all_stays_on_rails_and_without_it_crosses_them() {
    let m = rail_fabric(2, 100, "intra_node = \"nvlink4\"");
    let spec = |pxn| CollectiveSpec { pxn, message_rows: true, ..CollectiveSpec::new(Collective::AllToAll, 16 << 20) };
    let nic = |name: &str| name.rsplit("-nic").next().unwrap().to_string();
    let on_rail = |r: &CollectiveResult| r.report.flows.iter().filter(|f| nic(&f.src) == nic(&f.dst)).count();
    let with = run(&m, &spec(true));
    let without = run(&m, &spec(false));
    // 16 GPUs × 8 remote peers × 2 channels, each message one flow row.
    assert_eq!(with.report.flows.len(), 256);
    assert_eq!(without.report.flows.len(), 256);
    // PXN: every message leaves on the destination's rail. Without: GPU g sends on NIC g, and
    // only the peer with the same local index (1 of 8) shares its rail.
    assert_eq!(on_rail(&with), 256);
    assert_eq!(on_rail(&without), 32);
    println!("all-to-all {:.1} µs with PXN, {:.1} µs without", with.time_us, without.time_us);
}

/// `[gpu_node.pcie] topo` rows: GPU g's class to each of the 8 NICs, PIX to `pix(g)`, SYS to
/// the others.
fn topo(pix: impl Fn(usize) -> usize) -> String {
    let rows: Vec<String> = (0..8)
        .map(|g| {
            let row: Vec<&str> = (0..8).map(|n| if n == pix(g) { "PIX" } else { "SYS" }).collect();
            format!("\"{}\"", row.join(" "))
        })
        .collect();
    format!("intra_node = \"nvlink4\"\n[gpu_node.pcie]\ntopo = [{}]", rows.join(", "))
}

#[test]
fn each_gpu_sends_on_the_nic_nccl_gives_it_from_nvidia_smi_topo() {
    // The NICs are cabled to the rails in the reverse of GPU order: GPU g's PCIe switch holds
    // the NIC of rail 7 − g. NCCL gives each GPU that NIC (PIX), so GPU g's messages leave on
    // rail 7 − g, and every ring still crosses between nodes on one rail.
    let m = rail_fabric(2, 400, &topo(|g| 7 - g));
    let Placement::Gpus(l) = placement::placement(&m).unwrap() else { panic!("GPUs") };
    let rail = |h: rocelab_model::NodeId| match m.node(h).role {
        rocelab_model::Role::Host { rail, .. } => rail.unwrap(),
        _ => unreachable!(),
    };
    for k in 0..2 {
        let rails: Vec<u32> = (0..8).map(|g| rail(l.nic_of(k, g))).collect();
        assert_eq!(rails, [7, 6, 5, 4, 3, 2, 1, 0], "node {k}");
    }
    for c in 0..8 {
        let ring = l.ring(c);
        let rails: BTreeSet<u32> = ring
            .hops
            .iter()
            .filter_map(|h| match h {
                Hop::Net { src, dst } => Some((rail(*src), rail(*dst))),
                Hop::Local { .. } => None,
            })
            .map(|(a, b)| {
                assert_eq!(a, b);
                a
            })
            .collect();
        assert_eq!(rails.len(), 1, "channel {c}");
        // The ring starts at the GPU local to the NIC it enters on.
        let first = ring.order[0];
        assert_eq!(l.nic_of(0, first), l.nodes[0][l.channel_nic(0, c)]);
    }
    // Unchanged without `topo`: GPU g on rail g.
    let Placement::Gpus(plain) = placement::placement(&rail_fabric(2, 400, "")).unwrap() else { panic!() };
    assert_eq!((0..8).map(|g| rail(plain.nic_of(0, g))).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5, 6, 7]);
    // Two GPUs on one PIX NIC while another NIC has none cannot be the twin's blocks: refused.
    let shared = rail_fabric(2, 400, &topo(|g| if g == 3 { 0 } else { g }));
    let e = placement::placement(&shared).unwrap_err();
    assert_eq!(e[0].path, "gpu_node.pcie.topo");
    assert!(e[0].message.contains("GPUs 0 and 3 the same NIC 0"), "{}", e[0].message);
}

#[test]
fn a_nic_behind_a_narrow_pcie_link_is_capped_for_nccls_model_and_the_bound() {
    // 200G ports, each NIC behind PCIe Gen5 x4 (14.4 GB/s = 115.2 Gb/s of payload).
    let m = rail_fabric(2, 200, "intra_node = \"nvlink4\"\n[gpu_node.pcie]\nnic_lanes = 4");
    let p = placement::placement(&m).unwrap();
    let nic = match &p {
        Placement::Gpus(l) => l.nodes[0][0],
        _ => unreachable!(),
    };
    let cap = rocelab_workload::nic_line_gbps(&m, nic, true);
    assert!((cap - 115.2).abs() < 0.1, "{cap}");
    assert_eq!(rocelab_workload::nic_line_gbps(&m, nic, false), 200.0);
    // The bound of 8 channels on 8 NICs: 8 × 115.2 Gb/s, not 8 × 200.
    assert!((rocelab_workload::busbw_bound_gbps(&m, &p, 8) - 8.0 * cap).abs() < 1e-6);
    // NCCL's search sees 14.4 GB/s per net device: the SM90 speed step below it, 12 GB/s.
    let sys = rocelab_workload::nccl_system(&m, &p);
    assert_eq!(sys.bw_inter_gbytes, 12.0);
    let full = rocelab_workload::nccl_system(&rail_fabric(2, 200, ""), &p);
    assert_eq!(full.bw_inter_gbytes, 24.0);
}
