//! LBL001: per-packet load balancing to NICs that cannot place packets out of order.

use rocelab_lint::{lint, Finding, Options};

fn fabric(routing: &str, nic: &str, profiles: &str) -> String {
    format!(
        "[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\
         host_link = {{ speed_gbps = 100, length_m = 3 }}\nfabric_link = {{ speed_gbps = 100, length_m = 30 }}\n\
         [nic]\nmtu = 4096\n{nic}\n[routing]\n{routing}\n{profiles}"
    )
}

fn lbl001(text: &str) -> Vec<Finding> {
    let m = rocelab_model::load_str("t.toml", text).unwrap_or_else(|e| panic!("fixture must load:\n{e}"));
    lint(&m, "t.toml", text, &Options::default()).findings.into_iter().filter(|f| f.code == "LBL001").collect()
}

#[test]
fn spraying_to_nics_without_placement_is_flagged_at_the_nic_key() {
    let text = fabric("load_balancing = \"spray\"", "ooo_window_packets = 0", "");
    let fs = lbl001(&text);
    assert_eq!(fs.len(), 1, "{fs:?}");
    let f = &fs[0];
    assert_eq!(f.path, "nic.ooo_window_packets");
    // `[nic]` is line 7 of the fixture, `mtu` line 8, the window line 9 (its value at column 22).
    assert_eq!((f.line, f.column, f.severity), (9, 22, rocelab_lint::Severity::Error), "{f:?}");
    assert!(f.message.contains("spray") && f.message.contains("lossless"), "{}", f.message);
}

#[test]
fn adaptive_routing_flags_only_the_profile_that_lacks_placement() {
    let profiles = "[nic_profiles.old]\nmtu = 4096\nooo_window_packets = 0\n";
    let fs = lbl001(&fabric("load_balancing = \"adaptive\"", "", profiles));
    assert_eq!(fs.len(), 1, "{fs:?}");
    assert_eq!(fs[0].path, "nic_profiles.old.ooo_window_packets");
}

#[test]
fn per_flow_modes_and_nics_that_place_out_of_order_are_quiet() {
    // The default window under a per-packet mode places out of order.
    assert!(lbl001(&fabric("load_balancing = \"spray\"", "", "")).is_empty());
    assert!(lbl001(&fabric("load_balancing = \"adaptive\"", "ooo_window_packets = 256", "")).is_empty());
    // ECMP and flowlets keep a flow on one path: no window needed.
    assert!(lbl001(&fabric("", "ooo_window_packets = 0", "")).is_empty());
    assert!(lbl001(&fabric("load_balancing = \"flowlet\"", "ooo_window_packets = 0", "")).is_empty());
}
