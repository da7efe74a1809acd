//! Fabrics the workload tests share.
#![allow(dead_code)] // each test binary uses some of them

use rocelab_model::{load_str, Model};

/// `leaves` leaves of `hosts_per_leaf` hosts at 100G and `spines` spines, leaf-spine links at
/// `fabric_gbps`; `extra` is appended to the file (faults, NIC settings).
pub fn leaf_spine(leaves: u32, hosts_per_leaf: u32, spines: u32, fabric_gbps: u32, extra: &str) -> Model {
    leaf_spine_on("roce", leaves, hosts_per_leaf, spines, fabric_gbps, extra)
}

/// [`leaf_spine`] on the link layer `link_layer` (`roce`, `infiniband`).
pub fn leaf_spine_on(
    link_layer: &str,
    leaves: u32,
    hosts_per_leaf: u32,
    spines: u32,
    fabric_gbps: u32,
    extra: &str,
) -> Model {
    let text = format!(
        r#"[fabric]
name = "ls{leaves}x{hosts_per_leaf}"
link_layer = "{link_layer}"
[topology.leaf_spine]
leaves = {leaves}
spines = {spines}
hosts_per_leaf = {hosts_per_leaf}
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = {fabric_gbps}, length_m = 30 }}
{extra}"#
    );
    load_str("ls.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// 8 hosts on 2 leaves at 100G, 2 spines at 400G: non-blocking for a ring (each host sends
/// one stream and receives one).
pub fn ring8(extra: &str) -> Model {
    leaf_spine(2, 4, 2, 400, extra)
}

/// `nodes` GPU nodes of 8 GPUs and 8 NICs at `gbps` on one scalable unit (every NIC of a rail
/// on that rail's leaf, 8 spines), with the intra-node link given as `[gpu_node]` lines.
pub fn rail(nodes: u32, gbps: u32, gpu_node: &str) -> Model {
    let text = format!(
        r#"[fabric]
name = "rail{nodes}x8"
[topology.rail_optimized]
gpu_nodes = {nodes}
rails = 8
nodes_per_su = {nodes}
spines_per_pod = 8
host_link = {{ speed_gbps = {gbps}, length_m = 5 }}
leaf_link = {{ speed_gbps = {gbps}, length_m = 50 }}
[gpu_node]
gpus = 8
{gpu_node}
"#
    );
    load_str("rail.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}
