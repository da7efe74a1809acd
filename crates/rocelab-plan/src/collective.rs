//! Collective cost: nccl-tests bus-bandwidth factors, the α-β model, and NCCL's time from its
//! own tuning model.
//!
//! Size convention (nccl-tests PERFORMANCE.md): `bytes` is the per-rank buffer for all-reduce,
//! broadcast, reduce and all-to-all, and the *full* array (count per rank × n) for all-gather and
//! reduce-scatter. Then busbw = bytes / t × factor, and busbw approaches the bottleneck link.
//!
//! α-β (Thakur et al. 2005; Patarasuk & Yuan 2009): a ring all-reduce takes 2(n−1) steps, each
//! paying the hop latency α, and moves 2(n−1)/n · S through the bottleneck bandwidth B.
//!
//! NCCL's time ([`nccl_seconds_on`]): NCCL's own tuning model ([`crate::tuning`], NCCL
//! 2.30.7's `src/graph/tuning.cc`), the same model that picks the twin's algorithm and
//! protocol, given the group as NCCL's search would describe it ([`group_system`]): its ranks
//! and nodes, and channels that share out the path's bus bandwidth. The pair of least time
//! wins, as NCCL's tuner picks.

use crate::tuning::{GpuArch, NcclSystem};
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

/// A network hop slower than NCCL's RDMA-calibrated one (more than this one way: a kernel TCP
/// stack, Thunderbolt) adds its own latency to every network hop of NCCL's model, as NCCL adds
/// the latency a network plugin reports (`latencyInter`).
const SLOW_NET_HOP_US: f64 = 5.0;

/// NCCL's threshold below which a point-to-point send uses LL, per channel
/// (`NCCL_P2P_LL_THRESHOLD`, 16 KiB, `src/enqueue.cc`).
const P2P_LL_THRESHOLD: f64 = 16384.0;

/// What NCCL's tuning model sees for a group on `path` with GPUs of generation `arch`: its ranks
/// and nodes, a channel per GPU of a node the group spans (one per NIC share), or per rank on
/// one node, that share out the path's bus bandwidth, LL128 where the path allows it.
pub fn group_system(path: &GroupPath, arch: GpuArch) -> NcclSystem {
    let ranks = path.ranks.max(1);
    let nodes = path.nodes.clamp(1, ranks);
    let channels = if nodes > 1 { ranks / nodes } else { ranks }.max(1);
    let gbytes = path.bus_bytes_per_s / 1e9 / channels as f64;
    let mut sys = NcclSystem::from_channels(ranks, nodes, arch, path.intra, channels, gbytes);
    sys.ll128 &= path.ll128;
    let alpha_us = path.alpha_seconds * 1e6;
    if nodes > 1 && alpha_us > SLOW_NET_HOP_US {
        sys.latency_inter_us = alpha_us;
    }
    sys
}

/// NCCL's time for one collective of `bytes` on `path`, GPUs of NCCL's default generation here
/// (Hopper): [`nccl_seconds_on`].
pub fn nccl_seconds(c: Collective, bytes: f64, path: &GroupPath) -> NcclTime {
    nccl_seconds_on(c, bytes, path, GpuArch::Hopper)
}

/// NCCL's time for one collective of `bytes` on `path` with GPUs of `arch`: the pair of least
/// time in NCCL's own tuning model ([`crate::tuning`], the model the twin picks with), on the
/// system [`group_system`] describes. All-to-all and send/recv, which NCCL sends as
/// point-to-point without its model: one hop's latency and the bytes each rank moves over
/// the path, LL (half the bandwidth) up to 16 KiB per peer and channel, else Simple.
pub fn nccl_seconds_on(c: Collective, bytes: f64, path: &GroupPath, arch: GpuArch) -> NcclTime {
    let n = path.ranks.max(1);
    let none = NcclTime { seconds: 0.0, algorithm: Algorithm::Ring, protocol: Protocol::Simple };
    if (n <= 1 && c != Collective::SendRecv) || bytes <= 0.0 || path.bus_bytes_per_s <= 0.0 {
        return none;
    }
    let sys = group_system(path, arch);
    if matches!(c, Collective::AllToAll | Collective::SendRecv) {
        let per_peer = if c == Collective::AllToAll { bytes / n as f64 } else { bytes };
        let ll = per_peer <= sys.channels as f64 * P2P_LL_THRESHOLD;
        let (protocol, share) = if ll { (Protocol::Ll, 0.5) } else { (Protocol::Simple, 1.0) };
        let wire = c.wire_bytes_per_rank(bytes, n);
        let seconds = sys.p2p_hop_us(protocol) * 1e-6 + wire / (path.bus_bytes_per_s * share);
        return NcclTime { seconds, algorithm: Algorithm::Ring, protocol };
    }
    match sys.choose(c, bytes.round().max(1.0) as u64, &[], &[]) {
        Some(ch) => NcclTime { seconds: ch.time_us * 1e-6, algorithm: ch.algorithm, protocol: ch.protocol },
        None => none,
    }
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
