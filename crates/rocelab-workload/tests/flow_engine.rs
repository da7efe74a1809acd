//! Collectives on the flow-level engine against first principles, and against the packet
//! engine where both should agree (no congestion).

use rocelab_model::{load_str, Model, NodeId};
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::{EngineKind, SimOptions};
use rocelab_workload::{default_ranks, run_collective, Collective, CollectiveResult, CollectiveSpec};

fn flow() -> SimOptions {
    SimOptions { engine: EngineKind::Flow, ..SimOptions::default() }
}

fn model(name: &str, text: &str) -> Model {
    load_str(name, text).unwrap_or_else(|e| panic!("{e}"))
}

/// Payload goodput of a `gbps` link in bytes/s: line rate × MTU / (MTU + per-packet headers).
fn goodput(m: &Model, gbps: f64) -> f64 {
    let mtu = m.nics[0].mtu as f64;
    gbps * 1e9 / 8.0 * mtu / (mtu + DATA_OVERHEAD as f64)
}

/// A ring over the host NICs `ranks` in that order.
fn ring(
    m: &Model,
    op: Collective,
    bytes: u64,
    ranks: Vec<NodeId>,
    channels: u32,
    opts: SimOptions,
) -> CollectiveResult {
    let spec = CollectiveSpec { ranks: Some(ranks), channels: Some(channels), ..CollectiveSpec::new(op, bytes) };
    let r = run_collective(m, &spec, opts).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!(r.failed_chunks, 0);
    assert!(r.time_us.is_finite());
    r
}

/// A non-blocking rail-optimized fabric: 8 nodes × 2 rails at 100G, 8 spines (1:1 leaves).
fn rail16() -> Model {
    model(
        "rail16.toml",
        r#"[fabric]
name = "rail16"
[topology.rail_optimized]
gpu_nodes = 8
rails = 2
nodes_per_su = 4
host_link = { speed_gbps = 100, length_m = 5 }
leaf_link = { speed_gbps = 100, length_m = 50 }
"#,
    )
}

#[test]
fn ring_all_reduce_of_1_gib_on_a_non_blocking_rail_fabric_reaches_the_alpha_beta_bound() {
    let m = rail16();
    let ranks = default_ranks(&m);
    let n = ranks.len() as f64;
    assert_eq!(n, 16.0);
    let s = 1u64 << 30;
    let r = ring(&m, Collective::AllReduce, s, ranks, 1, flow());
    assert_eq!(r.report.engine, "flow");
    // α-β: 2(n−1)/n · S / B, B a NIC's payload goodput. Nothing beats it; 30 steps of a few µs
    // of latency against 70 MB per step keep the run within 10 % of it.
    let bound_us = 2.0 * (n - 1.0) / n * s as f64 / goodput(&m, 100.0) * 1e6;
    println!("1 GiB all-reduce: {:.1} µs, bound {:.1} µs ({:.1} %)", r.time_us, bound_us, 100.0 * bound_us / r.time_us);
    assert!(r.time_us >= bound_us, "faster than the wire: {} µs < {bound_us} µs", r.time_us);
    assert!(r.time_us <= bound_us / 0.9, "{} µs against a bound of {bound_us} µs", r.time_us);
}

/// 2 leaves × 4 hosts at 100G, one spine, one leaf–spine link of `uplink_gbps` per leaf (one
/// link: no ECMP choice, so the share is exact).
fn two_leaves(uplink_gbps: u32) -> Model {
    model(
        "two-leaves.toml",
        &format!(
            r#"[fabric]
name = "two-leaves"
[topology.leaf_spine]
leaves = 2
spines = 1
hosts_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = {uplink_gbps}, length_m = 30 }}
"#
        ),
    )
}

/// The hosts of leaf 0 then those of leaf 1 (the ring crosses the spine twice), or
/// alternating (every hop crosses it).
fn orders(m: &Model) -> (Vec<NodeId>, Vec<NodeId>) {
    let hosts: Vec<NodeId> = m.hosts().collect();
    let leaf_of = |h: &NodeId| m.port(m.port(m.node(*h).ports().next().unwrap()).peer).node;
    let l0 = leaf_of(&hosts[0]);
    let (a, b): (Vec<NodeId>, Vec<NodeId>) = hosts.iter().partition(|h| leaf_of(h) == l0);
    assert_eq!((a.len(), b.len()), (4, 4));
    let by_leaf = a.iter().chain(&b).copied().collect();
    let alternating = a.iter().zip(&b).flat_map(|(x, y)| [*x, *y]).collect();
    (by_leaf, alternating)
}

#[test]
fn a_2_to_1_tier_the_ring_must_cross_halves_busbw_and_one_it_barely_uses_changes_nothing() {
    let s = 256u64 << 20;
    let full = two_leaves(400);
    let over = two_leaves(200);
    let (by_leaf, alternating) = orders(&full);
    // Every hop of the alternating ring crosses: 4 streams share each leaf's uplink. At 400G
    // each gets its NIC's 100G; at 200G (2:1) each gets 50G: busbw × 200 / (4 · 100) = ½.
    let a_full = ring(&full, Collective::AllReduce, s, alternating.clone(), 1, flow());
    let a_over = ring(&over, Collective::AllReduce, s, alternating, 1, flow());
    let predicted = 200.0 / (4.0 * 100.0);
    let share = a_over.busbw_gbytes_per_s / a_full.busbw_gbytes_per_s;
    println!("ring crossing the 2:1 tier on every hop: busbw share {share:.4} (predicted {predicted})");
    assert!((share - predicted).abs() < 0.02, "{share}");
    // Leaf by leaf, one stream each way crosses: the 2:1 uplink still has room for it.
    let b_full = ring(&full, Collective::AllReduce, s, by_leaf.clone(), 1, flow());
    let b_over = ring(&over, Collective::AllReduce, s, by_leaf, 1, flow());
    let share = b_over.busbw_gbytes_per_s / b_full.busbw_gbytes_per_s;
    println!("ring ordered leaf by leaf: busbw share {share:.4} (predicted 1)");
    assert!((share - 1.0).abs() < 0.005, "{share}");
    assert!(b_full.busbw_gbytes_per_s >= 0.9 * goodput(&full, 100.0) / 1e9);
}

#[test]
fn a_ring_kept_inside_rail_leaves_ignores_an_oversubscribed_spine_tier() {
    // GPU placement: each channel's ring leaves a node on its own rail, and with all 4 nodes
    // in one scalable unit it never climbs past the rail leaf: 1:1 or 4:1 spines, same time.
    let fabric = |spines: u32| {
        model(
            "rail-su.toml",
            &format!(
                r#"[fabric]
name = "rail-su"
[topology.rail_optimized]
gpu_nodes = 4
rails = 2
nodes_per_su = 4
spines_per_pod = {spines}
host_link = {{ speed_gbps = 100, length_m = 5 }}
leaf_link = {{ speed_gbps = 100, length_m = 50 }}
[gpu_node]
gpus = 2
gpu = "h100"
intra_node = "nvlink4"
"#
            ),
        )
    };
    let run = |m: &Model| {
        let spec = CollectiveSpec { channels: Some(2), ..CollectiveSpec::new(Collective::AllReduce, 64 << 20) };
        run_collective(m, &spec, flow()).unwrap_or_else(|d| panic!("{d:?}"))
    };
    let (a, b) = (run(&fabric(4)), run(&fabric(1)));
    assert_eq!(a.failed_chunks + b.failed_chunks, 0);
    assert_eq!(a.time_us, b.time_us, "the spine tier carries nothing of this ring");
}

#[test]
fn all_to_all_with_4_qps_per_connection_suffers_fewer_ecmp_collisions_than_with_1() {
    // 2 leaves × 8 hosts, 4 spines, one 100G uplink to each: a leaf's hosts send 8/15 of
    // what they send across, 427 Gb/s on 400 Gb/s of uplinks, so an uplink that hashing loads
    // above its share slows every flow on it.
    let m = model(
        "a2a.toml",
        r#"[fabric]
name = "a2a"
[topology.leaf_spine]
leaves = 2
spines = 4
hosts_per_leaf = 8
host_link = { speed_gbps = 100, length_m = 3 }
fabric_link = { speed_gbps = 100, length_m = 30 }
"#,
    );
    let run = |qps: u32| {
        let spec = CollectiveSpec {
            ranks: Some(default_ranks(&m)),
            channels: Some(1),
            qps_per_connection: qps,
            ..CollectiveSpec::new(Collective::AllToAll, 64 << 20)
        };
        let r = run_collective(&m, &spec, flow()).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(r.failed_chunks, 0);
        r.time_us
    };
    let (one, four) = (run(1), run(4));
    println!("all-to-all 64 MiB: 1 QP {one:.1} µs, 4 QPs {four:.1} µs, ratio {:.3}", one / four);
    assert!(four < one, "4 QPs per connection ({four} µs) should beat 1 ({one} µs)");
}

mod common;
use common::ring8;

#[test]
fn flow_and_packet_engines_agree_within_5_percent_on_a_ring_without_congestion() {
    // From 16 MiB up: below that NCCL's per-step costs (the proxy's 3 µs post overhead with
    // Simple) weigh, and the engines differ on how much of it a rank's other channel's
    // transfer overlaps (at 1 MiB the packet engine hides most of its 42 µs, the flow engine
    // none of it: 171 against 207 µs).
    let m = ring8("");
    for s in [16u64 << 20, 64 << 20] {
        let spec = CollectiveSpec::new(Collective::AllReduce, s);
        let p = run_collective(&m, &spec, SimOptions::default()).unwrap();
        let f = run_collective(&m, &spec, flow()).unwrap();
        let err = (f.time_us - p.time_us) / p.time_us;
        println!("{s} B: packet {:.2} µs, flow {:.2} µs, error {:+.2} %", p.time_us, f.time_us, 100.0 * err);
        assert!(err.abs() < 0.05, "{s} B: packet {} µs, flow {} µs", p.time_us, f.time_us);
        assert_eq!(f.report.engine, "flow");
        assert_eq!(p.report.engine, "packet");
    }
}

#[test]
fn a_link_lost_mid_collective_moves_its_flows_and_the_collective_completes() {
    // The alternating ring: every hop crosses the spines, over both uplinks of each leaf.
    let s = 64u64 << 20;
    let healthy = ring8("");
    let (_, alternating) = orders(&healthy);
    let base = ring(&healthy, Collective::AllReduce, s, alternating.clone(), 2, flow());
    let cut = ring8("[[fault]]\nkind = \"link-down\"\nat_us = 500\na = \"leaf0\"\nb = \"spine0\"\n");
    let r = ring(&cut, Collective::AllReduce, s, alternating, 2, flow());
    println!("healthy {:.1} µs, spine link down at 500 µs: {:.1} µs", base.time_us, r.time_us);
    // 4 streams of 100G each way now share one 400G uplink: still room, so (almost) no loss;
    // what matters is that nothing stalls on the dead link.
    assert!(r.time_us >= base.time_us);
    assert!(r.time_us <= base.time_us * 1.05, "{} vs {}", r.time_us, base.time_us);
    // With the other uplink gone too, leaf0 is cut off: nothing crosses, the ring cannot end.
    let both = ring8(
        "[[fault]]\nkind = \"link-down\"\nat_us = 500\na = \"leaf0\"\nb = \"spine0\"\n\
         [[fault]]\nkind = \"link-down\"\nat_us = 500\na = \"leaf0\"\nb = \"spine1\"\n\
         [[fault]]\nkind = \"link-up\"\nat_us = 900\na = \"leaf0\"\nb = \"spine1\"\n",
    );
    let r2 = ring(&both, Collective::AllReduce, s, orders(&both).1, 2, flow());
    println!("both uplinks down 500..900 µs: {:.1} µs", r2.time_us);
    assert!(r2.time_us >= base.time_us + 390.0, "{} vs {}", r2.time_us, base.time_us);
}

#[test]
fn reusing_delivered_message_slots_changes_nothing_on_the_flow_engine() {
    // A ring posts a message per step, chunk and channel; with recycling, a delivered
    // message's slot holds the next one (memory follows the messages alive at once).
    let m = rail16();
    let ranks = default_ranks(&m);
    let plain = ring(&m, Collective::AllReduce, 64 << 20, ranks.clone(), 2, flow());
    let reused = ring(&m, Collective::AllReduce, 64 << 20, ranks, 2, SimOptions { recycle_qps: true, ..flow() });
    assert_eq!(plain.time_us, reused.time_us);
    assert_eq!(plain.data_packets, reused.data_packets);
    assert_eq!(plain.events, reused.events);
    assert_eq!(plain.report.totals, reused.report.totals);
}

#[test]
fn the_flow_engine_sends_no_faster_than_the_nics_pcie_link_as_the_packet_engine() {
    // 2 nodes × 8 H100 with 8 × 400G (rail-16gpu-workloads) and the NICs on PCIe Gen 5 ×4:
    // 4 × 32 GT/s × 128/130 / 8 × 256/280 = 14.4 GB/s (115.2 Gb/s) per NIC, below its port. A
    // 64 MiB send/recv on one channel crosses the fabric in frames of 4,096 B of payload and
    // 82 B of headers: at least S × 4178/4096 / 14.4 GB/s = 4,752 µs on the link alone, and
    // S × 4178/4096 / 50 GB/s = 1,369 µs where the ×16 link leaves the port as the limit.
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-16gpu-workloads.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let with = |pcie: &str| model("pcie.toml", &format!("{text}\n[gpu_node.pcie]\n{pcie}\n"));
    let s = 64u64 << 20;
    let run = |m: &Model, opts: SimOptions| {
        let spec = CollectiveSpec { channels: Some(1), ..CollectiveSpec::nccl(Collective::SendRecv, s) };
        run_collective(m, &spec, opts).unwrap_or_else(|d| panic!("{d:?}"))
    };
    let wire = s as f64 * 4178.0 / 4096.0;
    let x4_bytes_per_s = 4.0 * 32e9 * 128.0 / 130.0 / 8.0 * 256.0 / 280.0;
    let (x4, x16) = (with("gen = 5\nnic_lanes = 4"), with("gen = 5"));
    let (flow_x4, flow_x16) = (run(&x4, flow()), run(&x16, flow()));
    let (at_pcie_us, at_port_us) = (wire / x4_bytes_per_s * 1e6, wire / 50e9 * 1e6);
    assert!(flow_x4.time_us >= at_pcie_us && flow_x4.time_us < at_pcie_us * 1.02, "{} µs", flow_x4.time_us);
    assert!(flow_x16.time_us >= at_port_us && flow_x16.time_us < at_port_us * 1.02, "{} µs", flow_x16.time_us);
    // The same cap as the packet engine's: the two engines agree within 1 %.
    let packet_x4 = run(&x4, SimOptions::default());
    assert!(
        (flow_x4.time_us / packet_x4.time_us - 1.0).abs() < 0.01,
        "flow {} µs, packet {} µs",
        flow_x4.time_us,
        packet_x4.time_us
    );
    // Without `[gpu_node.pcie]` the port's speed, as before the cap.
    let plain = run(&model("plain.toml", &text), flow());
    assert!(plain.time_us < at_port_us * 1.02, "{} µs", plain.time_us);
}
