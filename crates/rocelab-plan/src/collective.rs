//! Collective cost: nccl-tests bus-bandwidth factors, the α-β model, and an NCCL-like model
//! (ring and tree, three protocols) built from NCCL's own tuning constants.
//!
//! Size convention (nccl-tests PERFORMANCE.md): `bytes` is the per-rank buffer for all-reduce,
//! broadcast, reduce and all-to-all, and the *full* array (count per rank × n) for all-gather and
//! reduce-scatter. Then busbw = bytes / t × factor, and busbw approaches the bottleneck link.
//!
//! α-β (Thakur et al. 2005; Patarasuk & Yuan 2009): a ring all-reduce takes 2(n−1) steps, each
//! paying the hop latency α, and moves 2(n−1)/n · S through the bottleneck bandwidth B.
//!
//! NCCL-like (NVIDIA/nccl `src/graph/tuning.cc`, 2.19 era):
//!
//! ```text
//! t       = latency + S / algbw
//! latency = base[algo][proto] + intra-node hops × hwLat[intra] + inter-node hops × hwLat[NET]
//! algbw   = busbw × protocol factor × (n / steps)        ring
//! algbw   = 0.5 × 0.92 × busbw × protocol factor          tree (all-reduce only)
//! ```
//!
//! An all-reduce ring counts 2·nodes inter-node steps; a multi-node ring's intra-node steps cost
//! at least the proxy's network overhead. The cheapest (algorithm, protocol) pair wins, as NCCL's
//! tuner picks.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Collective {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    Broadcast,
    Reduce,
    /// One point-to-point message (pipeline stage boundary, KV cache transfer).
    SendRecv,
}

impl Collective {
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all-reduce",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::AllGather => "all-gather",
            Collective::AllToAll => "all-to-all",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::SendRecv => "send/recv",
        }
    }

    /// busbw / algbw (nccl-tests PERFORMANCE.md).
    pub fn busbw_factor(self, n: u32) -> f64 {
        let n = n.max(1) as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::ReduceScatter | Collective::AllGather | Collective::AllToAll => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }

    /// Latency steps of a ring (or pairwise exchange for all-to-all, chain for broadcast).
    pub fn ring_steps(self, n: u32) -> u64 {
        let n = n.max(1) as u64;
        match self {
            Collective::AllReduce => 2 * (n - 1),
            Collective::ReduceScatter | Collective::AllGather | Collective::AllToAll => n - 1,
            Collective::Broadcast | Collective::Reduce => n - 1,
            Collective::SendRecv => 1,
        }
    }

    /// Bytes each rank sends through its bottleneck link: factor × S.
    pub fn wire_bytes_per_rank(self, bytes: f64, n: u32) -> f64 {
        if n <= 1 && self != Collective::SendRecv {
            return 0.0;
        }
        self.busbw_factor(n) * bytes
    }
}

/// NCCL's hardware classes, which select its per-hop latency constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HwClass {
    Nvlink,
    Pci,
    Net,
}

/// Where a group's collective runs: n ranks over `nodes` nodes, and the bandwidth and latency
/// of its bottleneck hop.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupPath {
    pub ranks: u32,
    pub nodes: u32,
    /// Bus bandwidth of the bottleneck hop for this group, bytes/s (efficiency applied).
    pub bus_bytes_per_s: f64,
    /// Latency of one step on the slowest hop, seconds.
    pub alpha_seconds: f64,
    pub intra: HwClass,
    /// Whether LL128 may be used (NCCL enables it on NVLink and RDMA networks only).
    pub ll128: bool,
}

/// α-β time of one collective of `bytes` (nccl-tests convention) on `path`.
pub fn alpha_beta_seconds(c: Collective, bytes: f64, path: &GroupPath) -> f64 {
    if path.ranks <= 1 && c != Collective::SendRecv {
        return 0.0;
    }
    let steps = c.ring_steps(path.ranks) as f64;
    steps * path.alpha_seconds + c.wire_bytes_per_rank(bytes, path.ranks) / path.bus_bytes_per_s
}

/// NCCL's algorithms (`NCCL_ALGO`), the one enum the planner and the twin share. CollNet
/// (in-network reduction on a SHARP switch) is not here: RoCE fabrics do not offer it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    #[default]
    Ring,
    /// Double binary tree between nodes, a chain inside each (all-reduce).
    Tree,
    /// Parallel aggregated trees (all-gather and reduce-scatter, one GPU per node; NCCL 2.23+).
    Pat,
    /// NVLink SHARP: the NVSwitch reduces inside a node.
    Nvls,
    /// NVLS inside nodes, a tree between them.
    NvlsTree,
}

impl Algorithm {
    pub const ALL: [Algorithm; 5] =
        [Algorithm::Tree, Algorithm::Ring, Algorithm::Nvls, Algorithm::NvlsTree, Algorithm::Pat];

    /// The name NCCL_ALGO takes (lower case, as the twin's tables print it).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::Pat => "pat",
            Algorithm::Nvls => "nvls",
            Algorithm::NvlsTree => "nvlstree",
        }
    }

    /// An NCCL_ALGO value (any case).
    pub fn parse(s: &str) -> Result<Algorithm, String> {
        let l = s.trim().to_ascii_lowercase();
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == l)
            .ok_or_else(|| format!("unknown algorithm `{s}`: ring, tree, pat, nvls or nvlstree"))
    }
}

/// NCCL's protocols (`NCCL_PROTO`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Protocol {
    #[serde(rename = "LL")]
    Ll,
    #[serde(rename = "LL128")]
    Ll128,
    #[default]
    Simple,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    /// An NCCL_PROTO value (any case: `ll`, `LL128`, `simple`).
    pub fn parse(s: &str) -> Result<Protocol, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ll" => Ok(Protocol::Ll),
            "ll128" => Ok(Protocol::Ll128),
            "simple" => Ok(Protocol::Simple),
            _ => Err(format!("unknown protocol `{s}`: LL, LL128 or Simple")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NcclTime {
    pub seconds: f64,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
}

const PROTOCOLS: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

/// tuning.cc baseLat, µs: [tree, ring][LL, LL128, Simple].
const BASE_LAT_US: [[f64; 3]; 2] = [[6.8, 14.0, 0.0], [6.6, 14.0, 8.4]];

/// tuning.cc hwLat, µs: [NVLink, PCI, NET][tree, ring][LL, LL128, Simple].
#[rustfmt::skip]
const HW_LAT_US: [[[f64; 3]; 2]; 3] = [
    [[0.6, 1.25, 28.0], [0.6, 1.9, 3.4]],  // NVLink
    [[1.0, 1.9, 28.0], [1.0, 2.5, 5.7]],   // PCI
    [[5.0, 8.5, 28.0], [2.7, 4.0, 14.0]],  // NET
];

/// tuning.cc `getNetOverhead`: each step of a multi-node ring also pays the proxy thread's post
/// overhead (1 µs on x86; three times that with Simple).
const NET_OVERHEAD_US: f64 = 1.0;

fn hw_index(c: HwClass) -> usize {
    match c {
        HwClass::Nvlink => 0,
        HwClass::Pci => 1,
        HwClass::Net => 2,
    }
}

/// NCCL-like time: the cheapest ring/tree × LL/LL128/Simple choice.
pub fn nccl_seconds(c: Collective, bytes: f64, path: &GroupPath) -> NcclTime {
    let n = path.ranks.max(1);
    let none = NcclTime { seconds: 0.0, algorithm: Algorithm::Ring, protocol: Protocol::Simple };
    if n <= 1 && c != Collective::SendRecv {
        return none;
    }
    let multi_node = path.nodes > 1;
    let intra = hw_index(path.intra);
    let net = hw_index(HwClass::Net);
    let mut best: Option<NcclTime> = None;
    for (pi, &p) in PROTOCOLS.iter().enumerate() {
        if p == Protocol::Ll128 && !path.ll128 {
            continue;
        }
        // Ring (every collective; send/recv and all-to-all go through the same channels).
        let proto_bw = match p {
            Protocol::Simple => 1.0,
            Protocol::Ll128 => 0.92,
            // LL moves 4 data bytes per 8-byte line, and less across nodes.
            Protocol::Ll => {
                if multi_node || c == Collective::AllReduce || c == Collective::Reduce {
                    0.25
                } else {
                    1.0 / 3.0
                }
            }
        };
        let steps = c.ring_steps(n) as f64;
        let inter_steps = if !multi_node {
            0.0
        } else {
            match c {
                Collective::AllReduce => 2.0 * path.nodes as f64,
                Collective::SendRecv => 1.0,
                _ => path.nodes as f64 - 1.0,
            }
        };
        // The network hop costs at least the link's own latency (TCP stacks are slower than the
        // InfiniBand-calibrated constants).
        let inter_lat = (HW_LAT_US[net][1][pi] * 1e-6).max(path.alpha_seconds);
        let intra_lat = HW_LAT_US[intra][1][pi] * 1e-6;
        let intra_lat = if multi_node {
            intra_lat.max(NET_OVERHEAD_US * 1e-6 * if p == Protocol::Simple { 3.0 } else { 1.0 })
        } else {
            intra_lat.max(path.alpha_seconds)
        };
        let lat = BASE_LAT_US[1][pi] * 1e-6 + (steps - inter_steps).max(0.0) * intra_lat + inter_steps * inter_lat;
        let algbw = path.bus_bytes_per_s * proto_bw / c.busbw_factor(n);
        let ring = NcclTime { seconds: lat + bytes / algbw, algorithm: Algorithm::Ring, protocol: p };
        if best.is_none_or(|b| ring.seconds < b.seconds) {
            best = Some(ring);
        }
        // Tree: all-reduce only, a reduce up and a broadcast down a double binary tree.
        if c == Collective::AllReduce {
            let tree_proto = match p {
                Protocol::Simple => 1.0,
                Protocol::Ll128 => {
                    if multi_node {
                        120.0 / 128.0
                    } else {
                        7.0 / 9.0
                    }
                }
                Protocol::Ll => 1.0 / 3.8,
            };
            let per_node = (n as f64 / path.nodes.max(1) as f64).max(1.0);
            let tree_inter = (HW_LAT_US[net][0][pi] * 1e-6).max(path.alpha_seconds);
            let tree_intra = HW_LAT_US[intra][0][pi] * 1e-6;
            let lat = BASE_LAT_US[0][pi] * 1e-6
                + 2.0 * ((per_node - 1.0) * tree_intra + (path.nodes.max(1) as f64).log2().floor() * tree_inter);
            let algbw = 0.5 * 0.92 * path.bus_bytes_per_s * tree_proto;
            let tree = NcclTime { seconds: lat + bytes / algbw, algorithm: Algorithm::Tree, protocol: p };
            if best.is_none_or(|b| tree.seconds < b.seconds) {
                best = Some(tree);
            }
        }
    }
    best.unwrap_or(none)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(n: u32, nodes: u32, gbytes: f64) -> GroupPath {
        GroupPath {
            ranks: n,
            nodes,
            bus_bytes_per_s: gbytes * 1e9,
            alpha_seconds: 3e-6,
            intra: HwClass::Nvlink,
            ll128: true,
        }
    }

    #[test]
    fn busbw_factors_match_nccl_tests() {
        let n = 8;
        assert_eq!(Collective::AllReduce.busbw_factor(n), 2.0 * 7.0 / 8.0);
        assert_eq!(Collective::ReduceScatter.busbw_factor(n), 7.0 / 8.0);
        assert_eq!(Collective::AllGather.busbw_factor(n), 7.0 / 8.0);
        assert_eq!(Collective::AllToAll.busbw_factor(n), 7.0 / 8.0);
        assert_eq!(Collective::Broadcast.busbw_factor(n), 1.0);
        assert_eq!(Collective::Reduce.busbw_factor(n), 1.0);
        assert_eq!(Collective::AllReduce.busbw_factor(2), 1.0);
    }

    #[test]
    fn large_ring_all_reduce_approaches_bus_bandwidth() {
        // 16 GiB on 8 ranks at 367.6 GB/s busbw: t → 2(n−1)/n · S / B.
        let p = path(8, 1, 367.6);
        let s = 16.0 * (1u64 << 30) as f64;
        let t = alpha_beta_seconds(Collective::AllReduce, s, &p);
        let busbw = s / t * Collective::AllReduce.busbw_factor(8);
        assert!((busbw / 367.6e9 - 1.0).abs() < 1e-3, "busbw {busbw}");
        let nccl = nccl_seconds(Collective::AllReduce, s, &p);
        let busbw = s / nccl.seconds * Collective::AllReduce.busbw_factor(8);
        assert!(busbw > 0.95 * 367.6e9 && busbw <= 367.6e9, "nccl busbw {busbw}");
        assert_eq!(nccl.protocol, Protocol::Simple);
    }

    #[test]
    fn small_messages_are_latency_bound_and_use_ll() {
        let p = path(16, 2, 376.0);
        let t = nccl_seconds(Collective::AllReduce, 8.0, &p);
        assert_eq!(t.protocol, Protocol::Ll);
        // α-β: 2(n−1) steps of 3 µs.
        let ab = alpha_beta_seconds(Collective::AllReduce, 8.0, &p);
        assert!((ab - 30.0 * 3e-6).abs() < 1e-7);
    }

    #[test]
    fn single_rank_costs_nothing() {
        let p = path(1, 1, 100.0);
        assert_eq!(alpha_beta_seconds(Collective::AllReduce, 1e9, &p), 0.0);
        assert_eq!(nccl_seconds(Collective::AllGather, 1e9, &p).seconds, 0.0);
    }
}
