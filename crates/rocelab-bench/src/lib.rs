//! Fixed benchmark scenarios and how they are measured, shared by `rocelab bench` and
//! `benches/engine.rs` (`cargo bench -p rocelab-bench`). Outside the engine crate on purpose:
//! timing and `/proc` reading have no place in a library that must be deterministic.
//!
//! Each is a complete fabric file (text), so a scenario is exactly reproducible with
//! `rocelab simulate` too; a scenario may also drive the run with a workload (the fabric then
//! gives the network only). Figures of other simulators were measured on the same kinds of
//! scenarios: 400 Gb/s fat trees with 1 µs links and 4,000-byte packets.

pub mod flow_error;
pub mod flow_speed;
pub mod measure;
pub mod partition_profile;

pub use measure::{measure, Measurement, Plan};

use rocelab_model::{Model, NodeId};
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use std::fmt::Write;

/// Builds the workload of a scenario for its model.
pub type MakeWorkload = fn(&Model) -> Box<dyn Workload>;

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub fabric: String,
    /// Drives the run instead of the fabric's `[[traffic]]`.
    pub workload: Option<MakeWorkload>,
}

/// The permutation of `permutation(k)` as htsim runs RoCE: static PFC thresholds (XOFF
/// 61,440 B, XON 49,152 B per ingress port and priority), no congestion control, 1 ms.
pub fn permutation_htsim(k: u32) -> String {
    permutation(k)
        .replace("[nic]\n", "[qos.pfc]\nxoff_bytes = 61440\nxon_bytes = 49152\n\n[nic]\n")
        .replace("duration_us = 200", "duration_us = 1000")
        .replace("name = \"permutation-k", "name = \"permutation-htsim-k")
}

/// Three hosts on one 100G switch, for message chains.
fn star3() -> String {
    r#"[fabric]
name = "chain"
[switch_models.sw]
preset = "ns3-reference"
ports = 3
[nic]
congestion_control = "none"
[topology.explicit]
node = [ { name = "sw0", kind = "switch", model = "sw" }, { name = "a", kind = "host" }, { name = "b", kind = "host" }, { name = "c", kind = "host" } ]
link = [ { a = "a", b = "sw0", speed_gbps = 100, delay_ns = 1000 }, { a = "b", b = "sw0", speed_gbps = 100, delay_ns = 1000 }, { a = "c", b = "sw0", speed_gbps = 100, delay_ns = 1000 } ]
"#
    .to_string()
}

/// 10,000 messages of 1,000 B around a ring of three hosts, each posted when the one before
/// it is delivered: the cost of the workload API's callbacks and per-message setup.
struct Chain {
    hosts: [NodeId; 3],
    left: u32,
}

impl Workload for Chain {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        net.post(Message::new(self.hosts[0], self.hosts[1], 1000).tag(1)).expect("valid");
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        self.left -= 1;
        if self.left > 0 {
            let i = done.tag as usize % 3;
            net.post(Message::new(self.hosts[i], self.hosts[(i + 1) % 3], 1000).tag(done.tag + 1)).expect("valid");
        }
    }
}

fn chain_10k(m: &Model) -> Box<dyn Workload> {
    let h = |n| m.node_by_name(n).expect("star3 host");
    Box::new(Chain { hosts: [h("a"), h("b"), h("c")], left: 10_000 })
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
    if !s.contains("\n[simulation]") {
        s.push_str("\n[simulation]\nseed = 1\n");
    }
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

/// `permutation(k)` with `[routing] load_balancing = mode`: the per-packet member choice
/// (and the receivers' out-of-order placement) on the fabric whose ECMP run is the baseline.
pub fn permutation_balanced(k: u32, mode: &str) -> String {
    permutation(k).replace("name = \"permutation-k", &format!("name = \"permutation-{mode}-k"))
        + &format!("\n[routing]\nload_balancing = \"{mode}\"\n")
}

pub fn all() -> Vec<Scenario> {
    let fixed = |name, about, fabric| Scenario { name, about, fabric, workload: None };
    vec![
        fixed("incast", "64:1 incast, 100G, DCQCN, one switch, 2 MB per sender", incast()),
        fixed("permutation-16", "k=4 fat tree (16 hosts), 400G, 1 µs links, permutation, 200 µs", permutation(4)),
        fixed("permutation-128", "k=8 fat tree (128 hosts), 400G, 1 µs links, permutation, 200 µs", permutation(8)),
        fixed(
            "permutation-1024",
            "k=16 fat tree (1,024 hosts), 400G, 1 µs links, permutation, 200 µs",
            permutation(16),
        ),
        fixed(
            "permutation-1024-htsim",
            "the same with htsim's RoCE settings: static XOFF 61,440 B / XON 49,152 B, no CC, 1 ms",
            permutation_htsim(16),
        ),
        fixed(
            "permutation-128-htsim",
            "k=8 fat tree (128 hosts) with htsim's RoCE settings: static XOFF 61,440 B / XON 49,152 B, no CC, 1 ms",
            permutation_htsim(8),
        ),
        fixed("rail-1024", "1,024-GPU rail-optimized, every GPU sends 16 MB to a peer on another rail", rail_1024()),
        fixed(
            "permutation-128-adaptive",
            "permutation-128 with per-packet adaptive routing (least-loaded member, out-of-order placement)",
            permutation_balanced(8, "adaptive"),
        ),
        fixed(
            "permutation-128-spray",
            "permutation-128 with oblivious per-packet spraying (out-of-order placement)",
            permutation_balanced(8, "spray"),
        ),
        Scenario {
            name: "chain-10k",
            about: "10,000 chained 1,000-byte messages (workload API: each posted when the last is delivered)",
            fabric: star3(),
            workload: Some(chain_10k),
        },
    ]
}

/// Peak resident set size of this process so far (Linux `VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`, nanoseconds).
pub fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 * 1e-9)
}

#[cfg(test)]
mod tests {
    /// Every scenario's fabric loads and builds (a broken one would only show in a release
    /// bench run otherwise).
    #[test]
    fn every_scenario_builds() {
        for s in super::all() {
            let m = rocelab_model::load_str(s.name, &s.fabric).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            let opts = rocelab_sim::options_from_model(&m);
            let built = match s.workload {
                Some(w) => rocelab_sim::Sim::with_workload(&m, w(&m), Vec::new(), opts).map(|_| ()),
                None => rocelab_sim::build(&m, opts).map(|_| ()),
            };
            built.unwrap_or_else(|d| panic!("{}: {d:?}", s.name));
        }
    }
}
