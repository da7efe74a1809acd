//! `[nccl]`: how the twin's collectives charge NCCL's host-side latency.
//!
//! `net_hop_latency` says what a hop between two nodes costs besides the fabric the engine
//! simulates:
//!
//! * `"proxy"` (the default): the proxy's post overhead (`getNetOverhead`: 1 µs on x86, three
//!   times that with Simple) and the GPU↔NIC leg (`[gpu_node.pcie]`);
//! * `"tuning"`: NCCL's own figure for the hop (`hwLatencies[NET]` per algorithm and protocol
//!   in `src/graph/tuning.cc`: tree 5.0 / 8.5 / 14.0 µs and ring 2.7 / 4.0 / 14.0 µs for LL /
//!   LL128 / Simple), which NCCL calibrated NIC to NIC on real clusters: the twin charges it
//!   whole on the shortest path, the part it does not simulate itself (the GPU↔NIC leg's DMA
//!   and the fabric's own latency) as a post delay, so a longer or loaded path still adds its
//!   time; and a channel's GPU side streams no faster than NCCL's model's bandwidth for the
//!   algorithm and protocol it picks (its per-channel LL, LL128 and tree caps). This is the
//!   setting for comparing the twin with a real nccl-tests log.
//!
//! It applies to every collective the twin runs: to each step of the ring and tree collectives
//! (all-reduce, all-gather, reduce-scatter), whose steps chain hop after hop, to each chunk of
//! broadcast's pipeline, and once to each point-to-point send (all-to-all, send/recv, posted
//! all at once). The per-channel rate applies to the ring and the tree only.

use serde::{Deserialize, Serialize};

/// `[nccl]` as written (a wrong value is refused at load, with its place in the file).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NcclConfig {
    /// `"proxy"` (default) or `"tuning"` (see the module doc).
    #[serde(default)]
    pub net_hop_latency: NetHopLatency,
}

/// What a hop between nodes costs besides the simulated fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetHopLatency {
    /// The proxy's post overhead and the GPU↔NIC leg.
    #[default]
    Proxy,
    /// NCCL's tuning model's hop latency, the simulated shortest path included.
    Tuning,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_settings_and_a_wrong_one() {
        let read = |t: &str| toml::from_str::<NcclConfig>(t);
        assert_eq!(read("").unwrap().net_hop_latency, NetHopLatency::Proxy);
        assert_eq!(read("net_hop_latency = \"tuning\"").unwrap().net_hop_latency, NetHopLatency::Tuning);
        let e = read("net_hop_latency = \"fast\"").unwrap_err().to_string();
        assert!(e.contains("proxy") && e.contains("tuning"), "{e}");
    }
}
