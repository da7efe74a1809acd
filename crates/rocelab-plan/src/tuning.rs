//! NCCL's own tuning model: which algorithm and protocol NCCL picks for a collective, and the
//! time it predicts, from NVIDIA/nccl 2.30.7 (`src/graph/tuning.cc`, commit 5067397c).
//!
//! NCCL fills two tables per collective, algorithm and protocol at init
//! (`ncclTopoTuneModel`) and picks the pair of least predicted time per call
//! (`ncclTopoGetAlgoTime`):
//!
//! ```text
//! time(µs) = latency + bytes / (1000 · bandwidth(GB/s))
//! latency  = base[algo][proto] + steps × hwLat[NVLink | PCI | NET][algo][proto]
//! bandwidth = channels × per-channel GB/s × protocol factor, capped, × (ranks / steps) for a ring
//! ```
//!
//! Ring: 2(n−1) steps for all-reduce, of which 2(nodes−1) cross the network, the others paying
//! at least the proxy's post overhead (1 µs on Intel, 2 µs on AMD; three times that with
//! Simple). Tree (all-reduce): 2·((ranks per node − 1) intra hops + ⌊log₂ nodes⌋ net hops).
//! PAT (all-gather, reduce-scatter, one GPU per node only): ⌊log₂ nodes⌋ · netLat / 3.5 +
//! 2.8 µs per rank. NVLS (inside one NVSwitch node): the NVLink SHARP latency alone. LL moves
//! 4 data bytes per 8-byte line (half the bandwidth, capped by the CPU-dependent `llMaxBws`);
//! LL128 moves 120 of every 128 bytes (0.92, capped per channel). LL128 is on by default on
//! Hopper and later up to a PXN GPU–NIC path, on older GPUs up to PXB. Tree bandwidth at
//! medium sizes is scaled by NCCL's `treeCorrectionFactor`, and a multi-node ring's Simple
//! latency by 1.4 (1.9 before Ampere) once each channel and rank has 64 B or more.
//!
//! `NcclSystem` is what NCCL's topology search hands the model: the channels of its ring and
//! tree graphs and their per-channel bandwidth ([`NcclSystem::graph_gbytes`] snaps a NIC's
//! rate to the search's speed steps, `src/graph/search.cc`).

use crate::collective::{Algorithm, Collective, HwClass, Protocol};
use serde::Serialize;

/// The GPU generation (NCCL's compute-capability index into its tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuArch {
    Volta,
    Ampere,
    Hopper,
    Blackwell,
}

impl GpuArch {
    fn idx(self) -> usize {
        self as usize
    }

    /// From a GPU name as the fabric file gives it (`H100`, `b200`, `A100` ...): Hopper unless
    /// the name says otherwise.
    pub fn from_gpu_name(name: &str) -> GpuArch {
        let n = name.to_ascii_lowercase();
        if n.starts_with('b') || n.starts_with("gb") {
            GpuArch::Blackwell
        } else if n.starts_with('a') {
            GpuArch::Ampere
        } else if n.starts_with('v') {
            GpuArch::Volta
        } else {
            GpuArch::Hopper
        }
    }
}

/// The host CPU's vendor: it selects LL's bandwidth cap and the proxy's post overhead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuVendor {
    Intel,
    Amd,
}

/// What NCCL's topology search tells its tuning model about a communicator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NcclSystem {
    pub ranks: u32,
    pub nodes: u32,
    pub arch: GpuArch,
    pub cpu: CpuVendor,
    /// The link between a node's GPUs (`typeIntra`): NVLink or PCI.
    pub intra: HwClass,
    /// Channels of the ring and tree graphs (before NCCL duplicates them for the run).
    pub channels: u32,
    /// Per-channel bandwidth inside a node and across the network, GB/s (`bwIntra`, `bwInter`).
    pub bw_intra_gbytes: f64,
    pub bw_inter_gbytes: f64,
    /// Whether the nodes' NVSwitches do NVLink SHARP (NVLS; Hopper and later with NVSwitch).
    pub nvls: bool,
    /// Whether LL128 is allowed by the GPU–NIC path (Hopper+: PXN or closer; else PXB or closer).
    pub ll128: bool,
    /// Network latency the graph adds per inter-node hop, µs (`latencyInter`; 0 unless the
    /// network plugin reports one).
    pub latency_inter_us: f64,
}

/// `baseLatencies`, µs: [tree, ring, nvls, nvlstree, pat][LL, LL128, Simple].
const BASE_LAT: [[f64; 3]; 5] = [[6.8, 14.0, 8.4], [6.6, 14.0, 8.4], [0.0; 3], [0.0; 3], [8.0, 8.0, 8.0]];

/// `hwLatencies`, µs: [NVLink, PCI, NET][tree, ring, nvls, nvlstree, pat][LL, LL128, Simple].
#[rustfmt::skip]
const HW_LAT: [[[f64; 3]; 5]; 3] = [
    [[0.6, 1.25, 4.0], [0.6, 1.9, 3.4], [0.0, 0.0, 25.0], [0.0, 0.0, 25.0], [0.0, 0.0, 4.0]],
    [[1.0, 1.9, 4.0], [1.0, 2.5, 5.7], [0.0; 3], [0.0; 3], [0.0, 0.0, 4.0]],
    [[5.0, 8.5, 14.0], [2.7, 4.0, 14.0], [0.0, 0.0, 18.0], [0.0, 0.0, 20.9], [0.0, 0.0, 14.0]],
];

/// `llMaxBws`, GB/s: [Volta-N1 / Intel, Ampere-N1 / AMD, Hopper-N1, Blackwell-N1][1, 2, >2 nodes].
const LL_MAX_BW: [[f64; 3]; 4] = [[39.0, 39.0, 20.4], [87.7, 22.5, 19.0], [141.0, 45.0, 35.0], [282.0, 90.0, 70.0]];
/// `perChMaxRingLL128Bws`, `perChMaxTreeLL128Bws`, `perChMaxTreeBws`, GB/s: [arch][1, 2, >2 nodes].
const RING_LL128_BW: [[f64; 3]; 4] = [[20.0; 3], [20.0; 3], [36.7; 3], [40.0; 3]];
const TREE_LL128_BW: [[f64; 3]; 4] = [[20.0; 3], [20.0; 3], [36.7, 36.7, 29.0], [55.6, 31.67, 20.0]];
const TREE_BW: [[f64; 3]; 4] = [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [38.7, 41.4, 36.0], [70.0, 42.8, 24.0]];
const NVLS_TREE_BW: [[f64; 3]; 4] = [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [0.0, 57.7, 45.5], [0.0, 96.0, 80.0]];
/// `nvlsEfficiency` per arch.
const NVLS_EFFICIENCY: [f64; 4] = [0.0, 0.0, 0.85, 0.74];
/// `treeCorrectionFactor`: [LL, LL128, Simple][log₂(bytes / 64)], 64 B to 256 MiB.
#[rustfmt::skip]
const TREE_CORRECTION: [[f64; 24]; 3] = [
    [1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0],
    [1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0, 1.0],
    [0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9, 0.9],
];
/// The search's per-channel speed steps across the network, GB/s (`src/graph/search.cc`:
/// `speedArrayInter`, `sm90SpeedArrayInter`, `sm100SpeedArrayInter`).
const SPEEDS: [f64; 19] =
    [48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12];
const SPEEDS_SM90: [f64; 17] =
    [48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12];
#[rustfmt::skip]
const SPEEDS_SM100: [f64; 20] = [96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12];

const PROTOCOLS: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

fn a_idx(a: Algorithm) -> usize {
    match a {
        Algorithm::Tree => 0,
        Algorithm::Ring => 1,
        Algorithm::Nvls => 2,
        Algorithm::NvlsTree => 3,
        Algorithm::Pat => 4,
    }
}

fn p_idx(p: Protocol) -> usize {
    match p {
        Protocol::Ll => 0,
        Protocol::Ll128 => 1,
        Protocol::Simple => 2,
    }
}

/// NCCL's `log2i`: ⌊log₂ n⌋, −1 for 0.
fn log2i(n: u64) -> i64 {
    if n == 0 {
        -1
    } else {
        63 - n.leading_zeros() as i64
    }
}

/// NCCL's choice for one call: the pair of least predicted time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Choice {
    pub algorithm: Algorithm,
    pub protocol: Protocol,
    /// NCCL's predicted time, µs.
    pub time_us: f64,
}

impl NcclSystem {
    /// The per-channel bandwidth NCCL's search settles on for a NIC of `nic_gbytes` GB/s: the
    /// largest speed step of the GPU's table that the NIC carries.
    pub fn graph_gbytes(arch: GpuArch, nic_gbytes: f64) -> f64 {
        let speeds: &[f64] = match arch {
            GpuArch::Blackwell => &SPEEDS_SM100,
            GpuArch::Hopper => &SPEEDS_SM90,
            _ => &SPEEDS,
        };
        speeds.iter().copied().find(|&s| s <= nic_gbytes).unwrap_or(speeds[speeds.len() - 1])
    }

    /// The system NCCL's search finds on `nodes` nodes of `ranks / nodes` GPUs, each node with
    /// `nics` NICs of `nic_gbytes` GB/s: a ring and tree channel per NIC at the NIC's speed step,
    /// doubled (at half the bandwidth each) where `ncclTopoDupChannels` doubles them.
    pub fn from_nics(ranks: u32, nodes: u32, arch: GpuArch, intra: HwClass, nics: u32, nic_gbytes: f64) -> NcclSystem {
        Self::from_channels(ranks, nodes, arch, intra, nics, Self::graph_gbytes(arch, nic_gbytes))
    }

    /// The system of `channels` channels of `gbytes` GB/s each (already a graph's speed, or,
    /// for the planner, a link's effective rate shared out), doubled where NCCL doubles them.
    pub fn from_channels(
        ranks: u32,
        nodes: u32,
        arch: GpuArch,
        intra: HwClass,
        channels: u32,
        gbytes: f64,
    ) -> NcclSystem {
        let mut channels = channels.max(1);
        let mut bw = gbytes;
        let hopper_plus = matches!(arch, GpuArch::Hopper | GpuArch::Blackwell);
        if bw >= 25.0 && !(hopper_plus && bw < 50.0 && channels > 4) {
            channels *= 2;
            bw /= 2.0;
        }
        NcclSystem {
            ranks,
            nodes,
            arch,
            cpu: CpuVendor::Intel,
            intra,
            channels,
            bw_intra_gbytes: bw,
            bw_inter_gbytes: bw,
            nvls: false,
            ll128: hopper_plus || arch == GpuArch::Ampere,
            latency_inter_us: 0.0,
        }
    }

    fn ppn(&self) -> f64 {
        self.ranks as f64 / self.nodes.max(1) as f64
    }

    /// The proxy's post overhead per ring step, µs (`getNetOverhead`).
    fn net_overhead_us(&self) -> f64 {
        match self.cpu {
            CpuVendor::Intel => 1.0,
            CpuVendor::Amd => 2.0,
        }
    }

    /// Whether NCCL enables `a` for `c` here, whatever the size.
    fn enabled(&self, c: Collective, a: Algorithm, p: Protocol) -> bool {
        let rs_ag = matches!(c, Collective::AllGather | Collective::ReduceScatter);
        let ok_for_coll = match c {
            Collective::AllReduce => a != Algorithm::Pat,
            Collective::AllGather | Collective::ReduceScatter => {
                // NVLS runs all-gather and reduce-scatter inside one node only (across nodes
                // it needs CollNet).
                a == Algorithm::Ring || a == Algorithm::Pat || (a == Algorithm::Nvls && self.nodes == 1)
            }
            _ => a == Algorithm::Ring,
        };
        let nvls = matches!(a, Algorithm::Nvls | Algorithm::NvlsTree);
        let proto_ok = match p {
            Protocol::Ll128 => self.ll128 && self.intra == HwClass::Nvlink && a != Algorithm::Pat && !nvls,
            Protocol::Ll => a != Algorithm::Pat && !nvls,
            Protocol::Simple => true,
        };
        let algo_ok = match a {
            Algorithm::Ring | Algorithm::Tree => true,
            // PAT: one GPU per node, on a GPU of Pascal or later (every arch here).
            Algorithm::Pat => rs_ag && self.nodes == self.ranks,
            // NVLS across nodes needs CollNet; NVLS tree is for several nodes; both need 2 channels.
            Algorithm::Nvls => self.nvls && self.nodes == 1 && self.channels >= 2,
            Algorithm::NvlsTree => self.nvls && self.nodes > 1 && self.channels >= 2,
        };
        self.ranks > 1 && ok_for_coll && proto_ok && algo_ok
    }

    /// NCCL's bandwidth (GB/s of algorithm bandwidth) and latency (µs) for `c` with `a`/`p`, or
    /// `None` where NCCL does not use the pair.
    pub fn table(&self, c: Collective, a: Algorithm, p: Protocol) -> Option<(f64, f64)> {
        if !self.enabled(c, a, p) {
            return None;
        }
        let (n, nodes) = (self.ranks as f64, self.nodes.max(1));
        let arch = self.arch.idx();
        let index2 = if nodes <= 2 { nodes as usize - 1 } else { 2 };
        let index1 = if nodes == 1 {
            arch
        } else if self.cpu == CpuVendor::Amd {
            1
        } else {
            0
        };
        let ll_max = LL_MAX_BW[index1][index2];
        let ch = self.channels as f64;
        let nsteps = match c {
            Collective::AllReduce => 2.0 * (n - 1.0),
            Collective::AllGather | Collective::ReduceScatter => n - 1.0,
            _ => n,
        };
        let mut bw = if nodes <= 2 { self.bw_intra_gbytes } else { self.bw_inter_gbytes };
        if matches!(a, Algorithm::Nvls | Algorithm::NvlsTree) {
            let mut intra = self.bw_intra_gbytes * NVLS_EFFICIENCY[arch] * (ch - 1.0) / ch;
            intra *= if c == Collective::AllReduce { 2.0 } else { (self.ppn() - 1.0) / self.ppn() };
            let inter = self.bw_inter_gbytes * if nodes <= 2 && a == Algorithm::NvlsTree { 2.0 } else { 1.0 };
            bw = intra.min(inter);
            if a == Algorithm::NvlsTree {
                bw = bw.min(NVLS_TREE_BW[arch][index2]);
            }
        }
        let mut bus = ch * bw;
        match (a, p) {
            (Algorithm::Ring, Protocol::Ll) => bus = ll_max.min(bus * 0.5),
            (Algorithm::Ring, Protocol::Ll128) => bus = (bus * 0.92).min(ch * RING_LL128_BW[arch][index2]),
            _ => {}
        }
        if a == Algorithm::Tree && c == Collective::AllReduce {
            bus = (bus * 0.92).min(ch * TREE_BW[arch][index2]);
        }
        match (a, p) {
            (Algorithm::Tree, Protocol::Ll) => bus = (bus / 3.8).min(ll_max),
            (Algorithm::Tree, Protocol::Ll128) => {
                let f = if nodes == 1 { 7.0 / 9.0 } else { 120.0 / 128.0 };
                bus = (bus * f).min(ch * TREE_LL128_BW[arch][index2]);
            }
            (Algorithm::Pat, _) => bus *= 0.75,
            _ => {}
        }
        // Bus bandwidth to algorithm bandwidth (all-gather and reduce-scatter off the ring stay bus).
        let rs_ag = matches!(c, Collective::AllGather | Collective::ReduceScatter);
        if !(a != Algorithm::Ring && rs_ag) {
            bus *= match a {
                Algorithm::Ring | Algorithm::Nvls | Algorithm::NvlsTree => n / nsteps,
                _ => 0.5,
            };
        }
        let (ai, pi) = (a_idx(a), p_idx(p));
        let intra_hw = if self.intra == HwClass::Nvlink { 0 } else { 1 };
        let mut lat = BASE_LAT[ai][pi];
        let mut intra_lat = HW_LAT[intra_hw][ai][pi];
        // With one rank per node every latency is exposed: NCCL takes the tree's network latency.
        let mut inter_lat = if self.ppn() == 1.0 { HW_LAT[2][0][pi] } else { HW_LAT[2][ai][pi] };
        inter_lat += self.latency_inter_us;
        if p == Protocol::Simple {
            // The flush after a Simple receive.
            inter_lat += self.latency_inter_us;
        }
        let ppn_less_1 = (self.ranks / nodes) as f64 - 1.0;
        let log_nodes = log2i(nodes as u64) as f64;
        match a {
            Algorithm::Ring if matches!(c, Collective::Broadcast | Collective::Reduce) => {
                // NCCL's ring graphs here are the same on every channel.
                lat += HW_LAT[if nodes == 1 { intra_hw } else { 2 }][ai][pi];
            }
            Algorithm::Ring => {
                let overhead = if nodes > 1 {
                    self.net_overhead_us() * if p == Protocol::Simple { 3.0 } else { 1.0 }
                } else {
                    0.0
                };
                intra_lat = intra_lat.max(overhead);
                let inter_steps = match (nodes, c) {
                    (1, _) => 0.0,
                    (_, Collective::AllReduce) => 2.0 * (nodes as f64 - 1.0),
                    _ => nodes as f64 - 1.0,
                };
                lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
            }
            Algorithm::Tree => {
                if c == Collective::AllReduce {
                    lat += 2.0 * (ppn_less_1 * intra_lat + log_nodes * inter_lat);
                }
            }
            Algorithm::Nvls => {
                lat = intra_lat + if nodes > 1 { inter_lat } else { 0.0 };
            }
            Algorithm::NvlsTree => lat += intra_lat + 2.0 * log_nodes * inter_lat,
            Algorithm::Pat => {
                lat += log_nodes * (inter_lat / 3.5) + n * 2.8;
            }
        }
        Some((bus, lat))
    }

    /// NCCL's predicted time of `c` on `bytes` with `a`/`p`, µs (`ncclTopoGetAlgoTime`, one
    /// operation), or `None` where NCCL does not use the pair.
    pub fn time_us(&self, c: Collective, a: Algorithm, p: Protocol, bytes: u64) -> Option<f64> {
        let (mut bw, mut lat) = self.table(c, a, p)?;
        if bw <= 0.0 {
            return None;
        }
        let log_size = log2i(bytes >> 6);
        if a == Algorithm::Tree && c == Collective::AllReduce && (0..23).contains(&log_size) {
            bw *= TREE_CORRECTION[p_idx(p)][log_size as usize];
        }
        if a == Algorithm::Ring
            && p == Protocol::Simple
            && self.nodes > 1
            && c == Collective::AllReduce
            && bytes / (self.channels.max(1) as u64 * self.ranks as u64) >= 64
        {
            // The ring's plateau.
            lat *= if self.arch == GpuArch::Volta { 1.9 } else { 1.4 };
        }
        Some(lat + bytes as f64 / (1000.0 * bw))
    }

    /// One hop of a point-to-point send with `p`, µs: the ring's `hwLat` over the network (plus
    /// its reported latency) between nodes, over the intra-node link on one node. NCCL sends
    /// all-to-all and send/recv without its tuning model; every peer's send is posted at once,
    /// so one hop is what their latency adds.
    pub fn p2p_hop_us(&self, p: Protocol) -> f64 {
        let ring = a_idx(Algorithm::Ring);
        if self.nodes > 1 {
            HW_LAT[2][ring][p_idx(p)] + self.latency_inter_us
        } else {
            HW_LAT[if self.intra == HwClass::Nvlink { 0 } else { 1 }][ring][p_idx(p)]
        }
    }

    /// NCCL's pick for `c` on `bytes` among `algos` and `protos` (NCCL_ALGO, NCCL_PROTO; empty:
    /// all): the pair of least time, the first in NCCL's order on a tie; `None` if none applies.
    pub fn choose(&self, c: Collective, bytes: u64, algos: &[Algorithm], protos: &[Protocol]) -> Option<Choice> {
        let mut best: Option<Choice> = None;
        for a in Algorithm::ALL {
            if !algos.is_empty() && !algos.contains(&a) {
                continue;
            }
            for p in PROTOCOLS {
                if !protos.is_empty() && !protos.contains(&p) {
                    continue;
                }
                if let Some(t) = self.time_us(c, a, p, bytes) {
                    if best.is_none_or(|b| t < b.time_us) {
                        best = Some(Choice { algorithm: a, protocol: p, time_us: t });
                    }
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// H100 nodes of 8 GPUs on NVLink (no NVLS), Intel hosts, 8 × 400G NICs at PIX distance:
    /// NCCL's search gives one channel per NIC at 48 GB/s (the first SM90 speed step ≤ 50 GB/s).
    fn h100(nodes: u32) -> NcclSystem {
        NcclSystem {
            ranks: nodes * 8,
            nodes,
            arch: GpuArch::Hopper,
            cpu: CpuVendor::Intel,
            intra: HwClass::Nvlink,
            channels: 8,
            bw_intra_gbytes: 48.0,
            bw_inter_gbytes: 48.0,
            nvls: false,
            ll128: true,
            latency_inter_us: 0.0,
        }
    }

    #[test]
    fn the_search_doubles_channels_as_nccl_does() {
        // 8 × 400G on H100: 8 channels at 48 GB/s (no doubling above 4 channels below 50 GB/s).
        assert_eq!(NcclSystem::from_nics(128, 16, GpuArch::Hopper, HwClass::Nvlink, 8, 50.0), h100(16));
        // One 400G NIC: 1 channel at 48 doubled to 2 at 24.
        let one = NcclSystem::from_nics(16, 16, GpuArch::Hopper, HwClass::Nvlink, 1, 50.0);
        assert_eq!((one.channels, one.bw_inter_gbytes), (2, 24.0));
    }

    #[test]
    fn the_search_snaps_a_nic_to_its_speed_step() {
        assert_eq!(NcclSystem::graph_gbytes(GpuArch::Hopper, 50.0), 48.0);
        assert_eq!(NcclSystem::graph_gbytes(GpuArch::Hopper, 25.0), 24.0);
        assert_eq!(NcclSystem::graph_gbytes(GpuArch::Ampere, 25.0), 24.0);
        assert_eq!(NcclSystem::graph_gbytes(GpuArch::Blackwell, 100.0), 96.0);
    }

    /// The hand-computed latencies of the 16-node system (128 ranks), µs:
    /// tree/LL = 6.8 + 2·(7·0.6 + 4·5.0) = 55.2; ring/LL = 6.6 + (254 − 30)·max(0.6, 1) + 30·2.7 = 311.6;
    /// ring/Simple = 8.4 + 224·max(3.4, 3) + 30·14 = 1190.
    #[test]
    fn latencies_match_the_model_by_hand() {
        let s = h100(16);
        let lat = |a, p| s.table(Collective::AllReduce, a, p).unwrap().1;
        assert!((lat(Algorithm::Tree, Protocol::Ll) - 55.2).abs() < 1e-9);
        assert!((lat(Algorithm::Ring, Protocol::Ll) - 311.6).abs() < 1e-9);
        assert!((lat(Algorithm::Ring, Protocol::Simple) - 1190.0).abs() < 1e-9);
        // Bandwidths: ring/Simple 8·48 × 128/254; tree/Simple min(384·0.92, 8·36) × 0.5 = 144.
        let bw = |a, p| s.table(Collective::AllReduce, a, p).unwrap().0;
        assert!((bw(Algorithm::Ring, Protocol::Simple) - 384.0 * 128.0 / 254.0).abs() < 1e-9);
        assert!((bw(Algorithm::Tree, Protocol::Simple) - 144.0).abs() < 1e-9);
        // LL is capped by the Intel >2-node llMaxBw (20.4 GB/s) before the ring ratio.
        assert!((bw(Algorithm::Ring, Protocol::Ll) - 20.4 * 128.0 / 254.0).abs() < 1e-9);
    }

    /// NCCL's all-reduce pick on 2, 16 and 128 H100 nodes at 8 B, 64 KiB, 8 MiB and 1 GiB, each
    /// computed by hand from the tables above (the winner's time, then the runner-up's, µs):
    ///
    /// | nodes | 8 B                     | 64 KiB                  | 8 MiB                       | 1 GiB                             |
    /// |-------|-------------------------|-------------------------|-----------------------------|-----------------------------------|
    /// | 2     | tree/LL 25.2 (ring/LL 40.0) | tree/LL 30.8 (ring/LL 43.2) | tree/LL128 112.0 (ring/LL128 128.8) | ring/Simple 5,427 (tree/Simple 6,576) |
    /// | 16    | tree/LL 55.2 (tree/LL128 99.5) | tree/LL 65.9 (tree/LL128 100.4) | tree/LL128 179.9 (tree/Simple 249.2) | ring/Simple 7,215 (tree/Simple 7,633) |
    /// | 128   | tree/LL 85.2 (tree/LL128 150.5) | tree/LL 95.9 (tree/LL128 151.4) | tree/LL128 230.9 (tree/Simple 333.2) | tree/Simple 7,717 (tree/LL128 9,407) |
    ///
    /// e.g. 16 nodes, 1 GiB, ring/Simple: latency (8.4 + 224·3.4 + 30·14) × 1.4 = 1,666 µs (the
    /// plateau), bandwidth 384 × 128/254 = 193.5 GB/s, 1,666 + 2³⁰ / (1000 · 193.5) = 7,215 µs.
    #[test]
    fn nccl_picks_the_hand_computed_pair() {
        use Algorithm::*;
        use Protocol::*;
        let table = [
            (2, [(Tree, Ll), (Tree, Ll), (Tree, Ll128), (Ring, Simple)], [25.2, 30.8, 112.0, 5427.1]),
            (16, [(Tree, Ll), (Tree, Ll), (Tree, Ll128), (Ring, Simple)], [55.2, 65.9, 179.9, 7214.7]),
            (128, [(Tree, Ll), (Tree, Ll), (Tree, Ll128), (Tree, Simple)], [85.2, 95.9, 230.9, 7716.9]),
        ];
        for (nodes, picks, times) in table {
            let s = h100(nodes);
            for ((bytes, want), t) in [8u64, 64 << 10, 8 << 20, 1 << 30].into_iter().zip(picks).zip(times) {
                let c = s.choose(Collective::AllReduce, bytes, &[], &[]).unwrap();
                assert_eq!((c.algorithm, c.protocol), want, "{nodes} nodes, {bytes} B: {c:?}");
                assert!((c.time_us - t).abs() < 0.06, "{nodes} nodes, {bytes} B: {c:?} against {t} µs");
            }
        }
        // The 16-node 8-byte time is the tree/LL latency (8 B add 8/(1000·bw) ≈ 0.001 µs).
        let t = h100(16).choose(Collective::AllReduce, 8, &[], &[]).unwrap();
        assert!((t.time_us - 55.2).abs() < 0.01, "{t:?}");
    }

    #[test]
    fn overrides_restrict_the_choice_and_pat_needs_one_gpu_per_node() {
        let s = h100(16);
        let c = s.choose(Collective::AllReduce, 8, &[Algorithm::Ring], &[]).unwrap();
        assert_eq!((c.algorithm, c.protocol), (Algorithm::Ring, Protocol::Ll));
        let c = s.choose(Collective::AllReduce, 8, &[], &[Protocol::Simple]).unwrap();
        assert_eq!(c.protocol, Protocol::Simple);
        // Eight GPUs per node: no PAT; one per node: PAT is NCCL's small all-gather.
        assert!(s.table(Collective::AllGather, Algorithm::Pat, Protocol::Simple).is_none());
        let one = NcclSystem { ranks: 64, nodes: 64, ..h100(64) };
        let c = one.choose(Collective::AllGather, 64 << 10, &[], &[]).unwrap();
        assert_eq!(c.algorithm, Algorithm::Pat, "{c:?}");
        // Tree runs all-reduce only.
        assert!(s.choose(Collective::AllGather, 8, &[Algorithm::Tree], &[]).is_none());
    }

    #[test]
    fn nvls_is_the_pick_inside_one_nvswitch_node_for_large_all_reduce() {
        let s = NcclSystem { ranks: 8, nodes: 1, nvls: true, channels: 16, bw_intra_gbytes: 40.0, ..h100(1) };
        let c = s.choose(Collective::AllReduce, 1 << 30, &[], &[]).unwrap();
        assert_eq!(c.algorithm, Algorithm::Nvls, "{c:?}");
        // Not across nodes without CollNet.
        let m = NcclSystem { nvls: true, ..h100(2) };
        assert!(m.table(Collective::AllReduce, Algorithm::Nvls, Protocol::Simple).is_none());
    }
}
