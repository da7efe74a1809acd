//! Fixed benchmark scenarios, shared by `rocelab bench` and `benches/engine.rs`.
//!
//! Each is a complete fabric file (text), so a scenario is exactly reproducible with
//! `rocelab simulate` too. Figures of other simulators quoted in the issue were measured on
//! the same kinds of scenarios: 400 Gb/s fat trees with 1 µs links and 4,000-byte packets.

use std::fmt::Write;

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub fabric: String,
}

/// A 3-tier k-ary fat tree at 400 Gb/s, 1 µs links, 4,000-byte MTU, PFC on, no congestion
/// control, running a random permutation of 1 GB flows for 200 µs.
pub fn permutation(k: u32) -> String {
    format!(
        r#"[fabric]
name = "permutation-k{k}"

[topology.fat_tree]
k = {k}
link = {{ speed_gbps = 400, delay_ns = 1000 }}
switch_model = "bench"

[switch_models.bench]
preset = "tomahawk3"
ports = {k}

[nic]
mtu = 4000
congestion_control = "none"

[simulation]
seed = 1
duration_us = 200

[[traffic]]
pattern = "permutation"
size_bytes = 1000000000
"#
    )
}

/// 64:1 incast at 100 Gb/s through one switch with DCQCN, 2 MB per sender.
pub fn incast() -> String {
    let mut s = String::from(
        r#"[fabric]
name = "incast-64to1"

[switch_models.bench]
preset = "spectrum-2"
ports = 65

[nic]
congestion_control = "dcqcn"

[simulation]
seed = 1

[[traffic]]
pattern = "incast"
dst = "h0"
senders = 64
size_bytes = 2000000

[topology.explicit]
node = [
  { name = "sw0", kind = "switch", model = "bench" },
"#,
    );
    for h in 0..65 {
        let _ = writeln!(s, "  {{ name = \"h{h}\", kind = \"host\" }},");
    }
    s.push_str("]\nlink = [\n");
    for h in 0..65 {
        let _ = writeln!(s, "  {{ a = \"h{h}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }},");
    }
    s.push_str("]\n");
    s
}

/// The 1,024-GPU rail-optimized example; every GPU sends 16 MB to a GPU of the next node on
/// the next rail (so every flow crosses the spine tier).
pub fn rail_1024() -> String {
    let mut s = String::from(include_str!("../../../examples/rail-1024gpu.toml"));
    s.push_str("\n[simulation]\nseed = 1\n");
    for node in 0..128 {
        for r in 0..8 {
            let _ = write!(
                s,
                "\n[[traffic]]\npattern = \"flow\"\nsrc = \"node{node}-nic{r}\"\ndst = \"node{}-nic{}\"\nsize_bytes = 16000000\n",
                (node + 1) % 128,
                (r + 1) % 8
            );
        }
    }
    s
}

pub fn all() -> Vec<Scenario> {
    vec![
        Scenario { name: "incast", about: "64:1 incast, 100G, DCQCN, one switch, 2 MB per sender", fabric: incast() },
        Scenario {
            name: "permutation-16",
            about: "k=4 fat tree (16 hosts), 400G, 1 µs links, permutation, 200 µs",
            fabric: permutation(4),
        },
        Scenario {
            name: "permutation-128",
            about: "k=8 fat tree (128 hosts), 400G, 1 µs links, permutation, 200 µs",
            fabric: permutation(8),
        },
        Scenario {
            name: "permutation-1024",
            about: "k=16 fat tree (1,024 hosts), 400G, 1 µs links, permutation, 200 µs",
            fabric: permutation(16),
        },
        Scenario {
            name: "rail-1024",
            about: "1,024-GPU rail-optimized, every GPU sends 16 MB to a peer on another rail",
            fabric: rail_1024(),
        },
    ]
}
