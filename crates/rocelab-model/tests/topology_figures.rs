//! The figures `rocelab topo` reports, checked against values computed by hand from the files.
//!
//! Every example in `examples/` must load (the directory is listed, so a new example is covered
//! without touching this file). The three shipped examples, two k-ary fat trees, a multi-pod
//! rail-optimized fabric with a 1:7 core tier and the 24,576-GPU bench fabric are then checked
//! figure by figure: node, link and port counts per tier, oversubscription, bisection
//! bandwidth, ECMP path counts for representative pairs, and the diameter.

use rocelab_model::summary::{ecmp_paths, summarize, TopoSummary};
use rocelab_model::{load_file, load_str, Model};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(rel: &str) -> Model {
    let path = repo().join(rel);
    load_file(&path).unwrap_or_else(|e| panic!("{} does not load:\n{e}", path.display()))
}

fn tier<'a>(s: &'a TopoSummary, name: &str) -> &'a rocelab_model::summary::TierSummary {
    s.tiers.iter().find(|t| t.tier == name).unwrap_or_else(|| panic!("no tier {name}"))
}

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn host(m: &Model, name: &str) -> rocelab_model::NodeId {
    m.node_by_name(name).unwrap_or_else(|| panic!("no node {name}"))
}

/// Hops (links) and ECMP paths of the summary's path class whose example destination is `dst`.
fn path_to(s: &TopoSummary, dst: &str) -> (u32, u64) {
    let p = s.paths.iter().find(|p| p.example_dst == dst).unwrap_or_else(|| panic!("no path class to {dst}"));
    (p.hops, p.ecmp_paths)
}

#[test]
fn every_example_loads() {
    let dir = repo().join("examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/ exists") {
        let path = entry.unwrap().path();
        if path.is_dir() {
            continue;
        }
        let m = load_file(&path).unwrap_or_else(|e| panic!("{} does not load:\n{e}", path.display()));
        // Every example must summarize and have hosts that reach each other.
        let s = summarize(&m);
        assert!(s.hosts > 0 && s.switches > 0, "{}", path.display());
        assert!(s.diameter_hops >= 2, "{}", path.display());
        n += 1;
    }
    assert!(n >= 3, "expected at least the three shipped examples, found {n}");
}

#[test]
fn every_template_is_an_example_that_loads() {
    for t in rocelab_model::templates::TEMPLATES {
        load_str(t.name, t.text).unwrap_or_else(|e| panic!("template {} does not load:\n{e}", t.name));
    }
}

#[test]
fn leaf_spine_small() {
    // 4 leaves x 8 hosts at 100G; each leaf has 4 uplinks, 2 to each of 2 spines.
    let m = load("examples/leaf-spine-small.toml");
    let s = summarize(&m);
    assert_eq!((s.hosts, s.switches, s.links), (32, 6, 48)); // links: 32 host + 4 x 4 fabric
    assert_eq!(s.links_by_speed, vec![(100.0, 48)]);
    let leaf = tier(&s, "leaf");
    assert_eq!((leaf.nodes, leaf.ports), (4, 48)); // 8 down + 4 up per leaf
    assert!(approx(leaf.down_gbps, 3200.0) && approx(leaf.up_gbps, 1600.0));
    assert_eq!(leaf.oversubscription, Some(2.0)); // 800G down : 400G up per leaf
    let spine = tier(&s, "spine");
    assert_eq!((spine.nodes, spine.ports, spine.oversubscription), (2, 16, None));
    // Two leaves on each side of the cut: 2 x 400G of uplinks cross it.
    assert!(approx(s.bisection_gbps, 800.0));
    assert!(approx(s.bisection_ratio, 0.5));
    assert_eq!(s.diameter_hops, 4);
    assert!(s.rails.is_empty());
    // host0 and host1 share leaf0; host8 sits on leaf1: 4 uplinks x 2 links down = 8 paths.
    assert_eq!(path_to(&s, "host1"), (2, 1));
    assert_eq!(path_to(&s, "host8"), (4, 8));
    assert_eq!(ecmp_paths(&m, host(&m, "host0"), host(&m, "host31")), 8);
}

#[test]
fn rail_128gpu() {
    // 16 nodes x 8 NICs at 400G; 8 rail leaves of 16 NICs; 8 spines, 2 links per leaf-spine pair.
    let m = load("examples/rail-128gpu.toml");
    let s = summarize(&m);
    assert_eq!((s.hosts, s.gpu_nodes, s.switches, s.links), (128, 16, 16, 256));
    let leaf = tier(&s, "leaf");
    assert_eq!((leaf.nodes, leaf.ports), (8, 256)); // 16 down + 16 up
    assert_eq!(leaf.oversubscription, Some(1.0));
    assert!(approx(leaf.up_gbps, 8.0 * 16.0 * 400.0));
    let spine = tier(&s, "spine");
    assert_eq!((spine.nodes, spine.ports), (8, 128));
    // 128 x 400G = 51.2 Tb/s of injection; the leaf tier carries all of it: bisection 25.6 Tb/s.
    assert!(approx(s.bisection_gbps, 25_600.0));
    assert!(approx(s.bisection_ratio, 1.0));
    assert_eq!(s.rails.len(), 8);
    for (r, rail) in s.rails.iter().enumerate() {
        assert_eq!(rail.nics, 16);
        assert_eq!(rail.leaves, vec![format!("su0-rail{r}")]);
    }
    assert_eq!(s.diameter_hops, 4);
    // Same rail: one leaf, one path. Different rails: 8 spines x 2 links up, 2 links down = 32.
    assert_eq!(path_to(&s, "node1-nic0"), (2, 1));
    assert_eq!(path_to(&s, "node0-nic1"), (4, 32));
    assert_eq!(ecmp_paths(&m, host(&m, "node3-nic5"), host(&m, "node15-nic2")), 32);
}

#[test]
fn rail_1024gpu() {
    // 128 nodes x 8 NICs; 4 SUs of 32 nodes; 32 rail leaves; 32 spines, one link per pair.
    let m = load("examples/rail-1024gpu.toml");
    let s = summarize(&m);
    assert_eq!((s.hosts, s.gpu_nodes, s.switches, s.links), (1024, 128, 64, 2048));
    let leaf = tier(&s, "leaf");
    assert_eq!((leaf.nodes, leaf.ports, leaf.oversubscription), (32, 2048, Some(1.0)));
    let spine = tier(&s, "spine");
    assert_eq!((spine.nodes, spine.ports, spine.oversubscription), (32, 1024, None));
    // 1024 x 400G / 2.
    assert!(approx(s.bisection_gbps, 204_800.0));
    assert!(approx(s.bisection_ratio, 1.0));
    assert_eq!(s.rails.len(), 8);
    assert!(s.rails.iter().all(|r| r.nics == 128 && r.leaves.len() == 4));
    assert_eq!(s.diameter_hops, 4);
    // Same rail, same SU: 1 path; same rail other SU, or another rail: one path per spine.
    assert_eq!(path_to(&s, "node1-nic0"), (2, 1));
    assert_eq!(path_to(&s, "node32-nic0"), (4, 32));
    assert_eq!(path_to(&s, "node0-nic1"), (4, 32));
    assert_eq!(ecmp_paths(&m, host(&m, "node0-nic0"), host(&m, "node127-nic7")), 32);
}

fn fat_tree(k: u32) -> String {
    format!(
        "[topology.fat_tree]\nk = {k}\nlink = {{ speed_gbps = 100, length_m = 10 }}\nswitch_model = \"tomahawk3\"\n"
    )
}

fn check_fat_tree(k: u64) {
    let m = load_str("fat-tree.toml", &fat_tree(k as u32)).unwrap_or_else(|e| panic!("{e}"));
    let s = summarize(&m);
    let half = k / 2;
    assert_eq!(s.hosts as u64, k * k * k / 4);
    assert_eq!(s.switches as u64, 5 * k * k / 4); // k² edge + aggregation, (k/2)² core
    assert_eq!(s.links as u64, 3 * k * k * k / 4); // host, edge-agg and agg-core tiers
    assert_eq!(tier(&s, "leaf").nodes as u64, k * half);
    assert_eq!(tier(&s, "spine").nodes as u64, k * half);
    assert_eq!(tier(&s, "core").nodes as u64, half * half);
    assert!(s
        .tiers
        .iter()
        .all(|t| t.ports as u64 == if t.tier == "host" { k * k * k / 4 } else { t.nodes as u64 * k }));
    assert_eq!(tier(&s, "leaf").oversubscription, Some(1.0));
    assert_eq!(tier(&s, "spine").oversubscription, Some(1.0));
    assert!(approx(s.bisection_gbps, (k * k * k / 8) as f64 * 100.0));
    assert!(approx(s.bisection_ratio, 1.0));
    assert_eq!(s.diameter_hops, 6);
    // host0, host1 share edge0-0; host{k/2} is on edge0-1 (same pod); host{k²/4} is in pod 1.
    let h = |i: u64| host(&m, &format!("host{i}"));
    assert_eq!(ecmp_paths(&m, h(0), h(1)), 1);
    assert_eq!(ecmp_paths(&m, h(0), h(half)), half);
    assert_eq!(ecmp_paths(&m, h(0), h(k * k / 4)), half * half);
    assert_eq!(m.routing.distance(m.node_by_name("edge0-0").unwrap(), h(k * k / 4)), 4);
}

#[test]
fn fat_tree_k4() {
    check_fat_tree(4);
}

#[test]
fn fat_tree_k8() {
    check_fat_tree(8);
}

/// 2 pods x 7 SUs x 4 nodes x 8 rails (448 NICs), 4 spines per pod, 1:7 to the core tier.
const MULTI_POD: &str = r#"
[topology.rail_optimized]
gpu_nodes = 56
rails = 8
nodes_per_su = 4
sus_per_pod = 7
pod_oversubscription = 7
host_link = { speed_gbps = 400, length_m = 5 }
leaf_link = { speed_gbps = 400, length_m = 50 }
spine_link = { speed_gbps = 400, length_m = 500 }
"#;

#[test]
fn multi_pod_rail_optimized_with_1_to_7_core_tier() {
    let m = load_str("multi-pod.toml", MULTI_POD).unwrap_or_else(|e| panic!("{e}"));
    let s = summarize(&m);
    // Leaves: 14 SUs x 8 rails = 112. Spines: 4 per pod (default nodes_per_su) = 8.
    // Each spine: 7 SUs x 8 rails = 56 leaf links down, 56 / 7 = 8 core links up; 8 cores.
    assert_eq!((s.hosts, s.gpu_nodes), (448, 56));
    assert_eq!(tier(&s, "leaf").nodes, 112);
    assert_eq!(tier(&s, "spine").nodes, 8);
    assert_eq!(tier(&s, "core").nodes, 8);
    assert_eq!(s.switches, 128);
    assert_eq!(s.links, 448 + 112 * 4 + 8 * 8);
    assert_eq!(tier(&s, "leaf").oversubscription, Some(1.0));
    assert_eq!(tier(&s, "spine").oversubscription, Some(7.0));
    assert_eq!(m.pod_oversubscription, Some(7.0));
    // Each core: one link to every spine of every pod.
    assert_eq!(tier(&s, "core").ports, 8 * 2 * 4);
    // A pod-to-pod cut crosses one pod's core uplinks: 4 spines x 8 x 400G = 12.8 Tb/s.
    assert!(approx(s.bisection_gbps, 12_800.0));
    assert!(approx(s.bisection_ratio, 1.0 / 7.0));
    assert_eq!(s.diameter_hops, 6);
    let h = |n: &str| host(&m, n);
    // Same leaf; same rail in another SU of the pod (4 spines); another pod: 4 spines x 8
    // cores x 4 spines x 1 link down = 128 paths over 6 links.
    assert_eq!(ecmp_paths(&m, h("node0-nic0"), h("node1-nic0")), 1);
    assert_eq!(ecmp_paths(&m, h("node0-nic0"), h("node4-nic0")), 4);
    assert_eq!(ecmp_paths(&m, h("node0-nic0"), h("node4-nic3")), 4);
    assert_eq!(ecmp_paths(&m, h("node0-nic0"), h("node28-nic0")), 128);
    assert_eq!(ecmp_paths(&m, h("node0-nic0"), h("node55-nic7")), 128);
    let classes: Vec<(String, u32, u64)> = s.paths.iter().map(|p| (p.relation.clone(), p.hops, p.ecmp_paths)).collect();
    assert!(classes.contains(&("same leaf".into(), 2, 1)), "{classes:?}");
    assert!(classes.contains(&("same rail, other leaf".into(), 6, 128)), "{classes:?}");
    assert!(classes.contains(&("different rails".into(), 4, 4)), "{classes:?}");
}

#[test]
fn oversubscription_that_does_not_divide_rounds_uplinks_up() {
    // 12 SUs x 8 rails = 96 links down per spine; 96 / 7 -> 14 uplinks: 96:14 = 6.857:1.
    // A spine then has 110 ports: more than the default spectrum-3 preset's 64.
    let text = MULTI_POD.replace("gpu_nodes = 56", "gpu_nodes = 96").replace("sus_per_pod = 7", "sus_per_pod = 12")
        + "spine_model = \"tomahawk3\"\n";
    let m = load_str("f.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let s = summarize(&m);
    assert_eq!(tier(&s, "core").nodes, 14);
    assert!(approx(tier(&s, "spine").oversubscription.unwrap(), 96.0 / 14.0));
    assert!(approx(m.pod_oversubscription.unwrap(), 96.0 / 14.0));
}

#[test]
fn explicit_topology_with_parallel_links() {
    let text = r#"
[[topology.explicit.node]]
name = "s1"
kind = "switch"
[[topology.explicit.node]]
name = "l1"
kind = "switch"
[[topology.explicit.node]]
name = "l2"
kind = "switch"
[[topology.explicit.node]]
name = "h1"
kind = "host"
[[topology.explicit.node]]
name = "h2"
kind = "host"
[[topology.explicit.link]]
a = "h1"
b = "l1"
speed_gbps = 100
[[topology.explicit.link]]
a = "h2"
b = "l2"
speed_gbps = 100
[[topology.explicit.link]]
a = "l1"
b = "s1"
speed_gbps = 400
[[topology.explicit.link]]
a = "l1"
b = "s1"
speed_gbps = 400
[[topology.explicit.link]]
a = "l2"
b = "s1"
speed_gbps = 400
"#;
    let m = load_str("explicit.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let s = summarize(&m);
    assert_eq!((s.hosts, s.switches, s.links), (2, 3, 5));
    assert_eq!(s.links_by_speed, vec![(100.0, 2), (400.0, 3)]);
    // Tiers come from the distance to the nearest host: l1, l2 leaves; s1 a spine.
    assert_eq!(tier(&s, "leaf").nodes, 2);
    assert_eq!(tier(&s, "spine").nodes, 1);
    assert_eq!(ecmp_paths(&m, host(&m, "h1"), host(&m, "h2")), 2);
    assert_eq!(s.diameter_hops, 4);
}

/// Llama 3 scale: 24,576 NICs, 8 pods, 1:7 between pods (benches/fabrics/llama3-24k.toml).
/// Loaded here too so the bench fabric can never rot; ~2 s in a debug build.
#[test]
fn llama3_24k_gpu_fabric_builds_and_summarizes() {
    let m = load("benches/fabrics/llama3-24k.toml");
    let s = summarize(&m);
    // 3,072 nodes x 8 = 24,576 NICs; 96 SUs x 8 = 768 leaves; 8 pods x 32 = 256 spines;
    // each spine: 96 down, ceil(96 / 7) = 14 up; 14 cores.
    assert_eq!((s.hosts, s.gpu_nodes), (24_576, 3_072));
    assert_eq!(tier(&s, "leaf").nodes, 768);
    assert_eq!(tier(&s, "spine").nodes, 256);
    assert_eq!(tier(&s, "core").nodes, 14);
    assert_eq!(s.switches, 1_038);
    assert_eq!(s.links, 24_576 + 768 * 32 + 256 * 14);
    assert_eq!(tier(&s, "leaf").oversubscription, Some(1.0));
    assert!(approx(tier(&s, "spine").oversubscription.unwrap(), 96.0 / 14.0));
    // 4 pods' core uplinks: 4 x 32 x 14 x 400G = 716.8 Tb/s.
    assert!(approx(s.bisection_gbps, 716_800.0));
    assert_eq!(s.diameter_hops, 6);
    assert_eq!(s.rails.len(), 8);
    assert!(s.rails.iter().all(|r| r.nics == 3_072 && r.leaves.len() == 96));
    // Across pods: 32 spines x 14 cores x 32 spines x 1 = 14,336 paths.
    assert_eq!(ecmp_paths(&m, host(&m, "node0-nic0"), host(&m, "node3071-nic0")), 32 * 14 * 32);
    assert_eq!(ecmp_paths(&m, host(&m, "node0-nic0"), host(&m, "node32-nic0")), 32);
}

#[test]
fn a_long_chain_of_switches_summarizes_without_deep_recursion() {
    // 5,000 switches in a line, a host at each end: path counting must not recurse per hop.
    let n = 5_000;
    let mut t = String::new();
    for i in 0..n {
        t += &format!("[[topology.explicit.node]]\nname = \"s{i}\"\nkind = \"switch\"\n");
    }
    t += "[[topology.explicit.node]]\nname = \"h0\"\nkind = \"host\"\n";
    t += "[[topology.explicit.node]]\nname = \"h1\"\nkind = \"host\"\n";
    let link = |a: &str, b: &str| format!("[[topology.explicit.link]]\na = \"{a}\"\nb = \"{b}\"\nspeed_gbps = 100\n");
    t += &link("h0", "s0");
    t += &link("h1", &format!("s{}", n - 1));
    for i in 1..n {
        t += &link(&format!("s{}", i - 1), &format!("s{i}"));
    }
    let m = load_str("chain.toml", &t).unwrap_or_else(|e| panic!("{e}"));
    let s = summarize(&m);
    assert_eq!(s.diameter_hops, n as u32 + 1);
    assert_eq!(path_to(&s, "h1"), (n as u32 + 1, 1));
}

#[test]
fn topo_names_the_infiniband_link_layer_and_nothing_new_on_roce() {
    let base = "[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\nhost_link = { speed_gbps = 400 }\nfabric_link = { speed_gbps = 400 }\n";
    let ib = rocelab_model::load_str(
        "f.toml",
        &format!(
            "[fabric]\nlink_layer = \"infiniband\"\n{base}[infiniband]\nrouting = \"adaptive\"\n[infiniband.cc]\n"
        ),
    )
    .unwrap();
    let text = rocelab_model::summary::render_text(&rocelab_model::summary::summarize(&ib));
    assert!(
        text.contains(
            "  link layer: infiniband: 8 data VLs, 65536 B per VL buffer, adaptive routing, congestion control on\n"
        ),
        "{text}"
    );
    // IB forwards by LID, not by ECMP hashing: the path classes say "shortest path".
    assert!(text.contains("shortest paths") && !text.contains("ECMP"), "{text}");
    let roce = rocelab_model::summary::summarize(&rocelab_model::load_str("f.toml", base).unwrap());
    let roce_text = rocelab_model::summary::render_text(&roce);
    assert!(!roce_text.contains("link layer") && roce_text.contains("ECMP paths"), "{roce_text}");
    assert!(!serde_json::to_string(&roce).unwrap().contains("link_layer"), "RoCE's JSON keeps its keys");
}
