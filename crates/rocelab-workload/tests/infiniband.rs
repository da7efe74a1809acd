//! The same collective on the same topology with InfiniBand's link layer and with RoCE's:
//! on a non-blocking fabric both reach the α-β bound of their own link, so their bus
//! bandwidths differ only by their per-packet headers.

use rocelab_model::infiniband::IB_DATA_OVERHEAD;
use rocelab_model::Model;
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::SimOptions;
use rocelab_workload::{run_collective, Collective, CollectiveSpec};

mod common;

/// 8 hosts on 2 leaves at 100G, 2 spines at 400G (non-blocking for a ring), either link layer.
fn ring8(link_layer: &str) -> Model {
    common::leaf_spine_on(link_layer, 2, 4, 2, 400, "")
}

/// Payload goodput of a 100G host link in GB/s with `overhead` bytes of headers per 4 KiB packet.
fn goodput(overhead: u32) -> f64 {
    100.0 / 8.0 * 4096.0 / (4096.0 + overhead as f64)
}

#[test]
fn ring_all_reduce_busbw_on_ib_and_roce_differs_by_the_headers_only() {
    let s = 16u64 << 20;
    let busbw = |m: &Model| {
        let r = run_collective(m, &CollectiveSpec::new(Collective::AllReduce, s), SimOptions::default()).unwrap();
        assert_eq!(r.failed_chunks, 0);
        assert_eq!(r.report.totals.packets_dropped, 0);
        assert_eq!(r.report.totals.pfc_pause_frames, 0);
        r.busbw_gbytes_per_s
    };
    let (ib, roce) = (busbw(&ring8("infiniband")), busbw(&ring8("roce")));
    let (g_ib, g_roce) = (goodput(IB_DATA_OVERHEAD), goodput(DATA_OVERHEAD));
    println!("busbw GB/s: IB {ib:.3} (goodput {g_ib:.3}), RoCE {roce:.3} (goodput {g_roce:.3})");
    // Both within 10 % of their link's goodput and never above it (the α-β bound).
    assert!(ib <= g_ib && ib >= 0.9 * g_ib, "IB {ib} vs {g_ib}");
    assert!(roce <= g_roce && roce >= 0.9 * g_roce, "RoCE {roce} vs {g_roce}");
    // The ratio is the headers' ratio, (4096 + 82) / (4096 + 26) = 1.0136, within 0.5 %.
    let want = g_ib / g_roce;
    let got = ib / roce;
    assert!((got / want - 1.0).abs() < 0.005, "IB/RoCE busbw {got:.4}, headers say {want:.4}");
}

#[test]
fn a_training_step_on_an_ib_fabric_is_planned_with_ib_latency() {
    // `simulate --step` and `plan --fabric` read the fabric through `fabric_facts`: the plan
    // column of an IB twin must use IB's latency profile, not RoCE's.
    let facts = |ll: &str| rocelab_workload::step::fabric_facts(&ring8(ll)).transport_preset;
    assert_eq!(facts("infiniband").as_deref(), Some("ib"));
    assert_eq!(facts("roce").as_deref(), Some("roce"));
}
