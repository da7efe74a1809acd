//! `rocelab_workload::linklayer`: the same fabric measured on RoCE and on InfiniBand, as
//! `rocelab plan --compare --fabric` uses it.

use rocelab_model::load_str;
use rocelab_workload::linklayer::measure_link_layers;

/// 4 leaves × 4 hosts, 4 spines, 100G, non-blocking; `extra` appended.
fn fabric(extra: &str) -> rocelab_model::Model {
    let text = format!(
        "[topology.leaf_spine]\nleaves = 4\nspines = 4\nhosts_per_leaf = 4\n\
         host_link = {{ speed_gbps = 100, length_m = 3 }}\nfabric_link = {{ speed_gbps = 100, length_m = 30 }}\n{extra}"
    );
    load_str("ls.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn both_link_layers_measured_on_one_topology_below_their_header_bounds() {
    // The file's own traffic and faults are not part of the measurement.
    let m = fabric("[[fault]]\nkind = \"link-down\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"\n");
    let [roce, ib] = measure_link_layers(&m, 8, 1 << 20, 1).unwrap();
    println!("{roce:?}\n{ib:?}");
    assert_eq!((roce.link_layer, ib.link_layer), ("roce", "infiniband"));
    assert_eq!((roce.ranks, roce.line_gbps), (8, 100.0));
    // Nothing beats the wire: the goodput share of a 4 KiB packet with each link layer's headers.
    assert!(roce.efficiency <= 4096.0 / 4178.0 && roce.efficiency > 0.8, "{}", roce.efficiency);
    assert!(ib.efficiency <= 4096.0 / 4122.0 && ib.efficiency > 0.8, "{}", ib.efficiency);
    assert!(ib.efficiency > roce.efficiency, "IB's smaller headers, at least");
    for f in [&roce, &ib] {
        let lower = f.all_reduce_busbw_gbytes_per_s.min(f.alltoall_busbw_gbytes_per_s);
        assert!((f.efficiency - lower / 12.5).abs() < 1e-12);
    }
    // An IB file is measured as written on IB, and on RoCE with its classes.
    let m = fabric("[fabric]\nlink_layer = \"infiniband\"\n[infiniband]\nrouting = \"adaptive\"\n");
    let [roce2, ib2] = measure_link_layers(&m, 8, 1 << 20, 1).unwrap();
    assert_eq!(roce2, roce, "the RoCE side of an IB file is the RoCE file");
    assert!(ib2.efficiency <= 4096.0 / 4122.0 && ib2.efficiency > 0.8);
}
