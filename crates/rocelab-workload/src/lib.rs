//! Workloads on the packet engine that people validate fabrics with: NCCL-like collectives,
//! reported in the units and layout of nccl-tests.
//!
//! A collective is a [`rocelab_sim::workload::Workload`]: it posts the first chunks, and each
//! delivery posts the chunk that depended on it (`ring`, `bcast`), or it posts every transfer
//! at once when none depends on another (`p2p`: all-to-all, send/recv). [`run_collective`] runs one on a
//! fabric's model (with the fabric file's `[[fault]]`s), [`sweep`] runs a size sweep as
//! nccl-tests' `-b/-e/-f` does, and `table` prints the rows as `all_reduce_perf` does, so
//! `rocelab doctor` reads the twin's table as it reads a real one.
//!
//! Sizes follow nccl-tests' PERFORMANCE.md: `bytes` is the per-rank buffer for all-reduce,
//! all-to-all (S/n to each peer), broadcast and send/recv, and the whole array for all-gather and
//! reduce-scatter; algbw = bytes / time, busbw = algbw ×
//! the collective's factor (`rocelab_plan::collective::Collective::busbw_factor`, shared with
//! `rocelab plan` and the doctor), so busbw of a bandwidth-bound run approaches the bottleneck
//! link's goodput. GB/s is 10⁹ B/s.
//!
//! What is modelled: ring all-reduce, all-gather and reduce-scatter, all-to-all, ring broadcast
//! (chunked pipeline from the root) and send/recv, channels as separate connections with their
//! own source ports, QPs per connection. Ranks are placed as NCCL places them (`placement`): on
//! a fabric of GPU nodes every rank is a GPU, each channel's ring visits a node's GPUs over
//! NVLink/PCIe (latency + bytes / bandwidth, off the packet engine) and crosses between nodes
//! on one rail; elsewhere every host NIC is a rank. `step` runs a whole training step (1F1B
//! pipeline, DP all-reduce in buckets under the backward, compute from `rocelab plan`) on the
//! same collectives; `tree` is NCCL's double binary tree all-reduce (`NCCL_ALGO=Tree`). Not yet:
//! reduce, NCCL's slice pipelining inside a step (a step here moves its chunk as one RDMA message, so
//! small sizes show the per-step latency NCCL's LL protocols would hide).

pub mod bcast;
pub mod jobs;
pub mod launch;
pub mod linklayer;
pub mod p2p;
pub mod placement;
pub mod protocol;
pub mod request;
pub mod ring;
pub mod serve;
pub mod step;
pub mod table;
pub mod tree;

use bcast::{Broadcast, BroadcastPlan};
use p2p::Exchange;
use placement::Placement;
use protocol::Wire;
pub use request::CollectiveRequest;
use ring::{Ring, RingPlan};
use rocelab_model::{Diagnostic, Model, NodeId, SimTime};
pub use rocelab_plan::collective::Collective;
use rocelab_plan::collective::HwClass;
use rocelab_plan::tuning::{GpuArch, NcclSystem};
use rocelab_sim::workload::{Delivered, Workload};
use rocelab_sim::{EngineKind, Run, RunReport, SimOptions, Snapshot};
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use tree::{Tree, TreePlan};

/// One collective to run.
#[derive(Clone, Debug)]
pub struct CollectiveSpec {
    pub op: Collective,
    /// nccl-tests' size: see the crate doc.
    pub bytes: u64,
    /// Host NICs as the ranks, in ring order; `None`: the fabric's own placement
    /// ([`placement::placement`]: GPUs on a fabric of GPU nodes, else every host as
    /// [`default_ranks`] orders them).
    pub ranks: Option<Vec<NodeId>>,
    /// NCCL channels (`NCCL_MIN_NCHANNELS`/`NCCL_MAX_NCHANNELS` pinned to one value); `None`:
    /// NCCL's count for the algorithm ([`CollectiveSpec::resolve`]).
    pub channels: Option<u32>,
    /// `NCCL_IB_QPS_PER_CONNECTION`: QPs of every connection ([`QpUse`]).
    pub qps_per_connection: u32,
    /// `NCCL_IB_SPLIT_DATA_ON_QPS`: every message striped over all the connection's QPs
    /// (true), or each NCCL chunk on one QP in turn (false, NCCL's default; [`QpUse`]).
    pub split_data_on_qps: bool,
    /// The Simple protocol's step (a ring slice, a tree or broadcast chunk per channel):
    /// `NCCL_BUFFSIZE` (4 MiB) / `NCCL_STEPS` (8) = 512 KiB by default. LL and LL128 have
    /// their own (`protocol`).
    pub chunk_bytes: u64,
    /// Root rank of broadcast (nccl-tests' `-r`, default 0), an index into the ranks.
    pub root: u32,
    /// Keep a row per message (every chunk of every step) in `CollectiveResult::report`
    /// (default off: a 1,024-rank ring posts millions; the counters are there either way).
    pub message_rows: bool,
    /// Run on the first k GPU nodes only (as a job launched on k nodes of the cluster), with
    /// GPU placement; `None`: every node.
    pub gpu_nodes: Option<u32>,
    /// `NCCL_ALGO`: ring, or NCCL's double binary tree (all-reduce only); `None`: NCCL's
    /// choice by its tuning model (`rocelab_plan::tuning`) among those the twin runs.
    pub algo: Option<Algo>,
    /// `NCCL_PROTO`: LL, LL128 or Simple; `None`: NCCL's choice.
    pub proto: Option<Proto>,
    /// PXN (on unless `NCCL_PXN_DISABLE=1`): an all-to-all or send/recv message to another
    /// node leaves on the NIC of the destination's rail (`p2p`).
    pub pxn: bool,
    /// GPUs one host thread launches each call on without CUDA graphs, as nccl-tests run with
    /// `-g N` and `graph: 0`: each call then takes at least N × the host's launch cost
    /// ([`launch`]); `None` (the default): a thread per GPU or CUDA graphs, no such floor.
    pub gpus_per_thread: Option<u32>,
}

/// NCCL's algorithm (`NCCL_ALGO`) and protocol (`NCCL_PROTO`): the planner's enums, so the
/// twin and `rocelab plan` name the same choice.
pub use rocelab_plan::collective::{Algorithm as Algo, Protocol as Proto};

/// The channels NCCL runs `algo` on over `placement` of `m`: a ring per NIC port of a GPU node
/// (NCCL's ring search gives every net device its own ring, so every rail carries traffic, and
/// NCCL sees each port of a dual-port NIC as a net device of its own; NCCL often doubles that,
/// which an explicit count can ask for), and for the tree one channel of each of its two trees
/// per port; 2 where the ranks are host NICs.
pub fn nccl_channels(m: &Model, placement: &Placement, algo: Algo) -> u32 {
    match placement {
        Placement::Gpus(g) => {
            let ports = |n: &Vec<NodeId>| n.iter().map(|h| m.node(*h).num_ports.max(1)).sum::<u32>();
            let nics = g.nodes.iter().map(ports).min().unwrap_or(2).max(1);
            if algo == Algo::Tree {
                2 * nics
            } else {
                nics
            }
        }
        Placement::Hosts(_) => 2,
    }
}

/// NCCL's default count of ring channels on `m`'s own placement ([`nccl_channels`]); for
/// sizing a run before it is resolved.
pub fn default_channels(m: &Model) -> u32 {
    placement::placement(m).map_or(2, |p| nccl_channels(m, &p, Algo::Ring))
}

/// The line rate that bounds a collective's busbw on `placement` of `m` with `channels`, in
/// Gb/s: on GPU nodes, every port of the NICs the channels cross in a node (channel c leaves
/// on NIC c mod R, so min(channels, R) of a node's R NICs carry traffic, each at its ports'
/// rate: a dual-port 2 × 200G NIC is 400 Gb/s); where the ranks are host NICs, one host's
/// ports. busbw is meant to approach this (less the headers) on a non-blocking fabric.
pub fn busbw_bound_gbps(m: &Model, placement: &Placement, channels: u32) -> f64 {
    match placement {
        Placement::Gpus(g) => g
            .nodes
            .iter()
            .map(|n| n.iter().take(channels.max(1) as usize).map(|h| nic_line_gbps(m, *h, true)).sum::<f64>())
            .fold(f64::INFINITY, f64::min),
        Placement::Hosts(h) => h.iter().map(|x| nic_line_gbps(m, *x, false)).fold(f64::INFINITY, f64::min),
    }
}

/// What a NIC can carry, Gb/s: its ports' speed, and on a GPU node no more than its PCIe link
/// to the GPU carries (`[gpu_node.pcie]`: the NIC's own link and the GPU's, the slower; a 200G
/// port behind PCIe Gen5 x4 carries 115 Gb/s). The packet engine serializes the NIC's ports
/// at the same cap (`rocelab_model::pcie::port_send_cap`) where `[gpu_node.pcie]` is declared;
/// this is also the rate NCCL's model and the busbw bound see (the default leg, Gen5 x16, where
/// the table is absent).
pub fn nic_line_gbps(m: &Model, nic: NodeId, on_gpu_node: bool) -> f64 {
    let ports = m.host_speed(nic).gbps() * m.node(nic).num_ports.max(1) as f64;
    let default_leg =
        || rocelab_model::pcie::PcieConfig::default().resolve().ok().map(|l| l.nic_cap_bytes_per_s() * 8.0);
    let cap = on_gpu_node.then(|| rocelab_model::pcie::nic_cap_bps(m).or_else(default_leg)).flatten();
    cap.map_or(ports, |c| ports.min(c / 1e9))
}

/// What NCCL's tuning model sees on `placement` of `m`: ranks, nodes, the GPU generation, the
/// intra-node link, and a channel per NIC at the NIC's rate.
pub fn nccl_system(m: &Model, placement: &Placement) -> NcclSystem {
    let arch = GpuArch::from_gpu_name(&m.gpu_node.gpu);
    let (ranks, nodes, nics, first, intra) = match placement {
        Placement::Hosts(h) => {
            let ports = h.iter().map(|x| m.node(*x).num_ports.max(1)).min().unwrap_or(1);
            (h.len() as u32, h.len() as u32, ports, h.first().copied(), HwClass::Nvlink)
        }
        Placement::Gpus(g) => {
            // NCCL sees each port of a dual-port NIC as a net device of its own.
            let ports = |n: &Vec<NodeId>| n.iter().map(|h| m.node(*h).num_ports.max(1)).sum::<u32>();
            let nics = g.nodes.iter().map(ports).min().unwrap_or(1).max(1);
            let intra = if g.intra.label.starts_with("pcie") { HwClass::Pci } else { HwClass::Nvlink };
            (
                placement.ranks() as u32,
                g.nodes.len() as u32,
                nics,
                g.nodes.first().and_then(|n| n.first().copied()),
                intra,
            )
        }
    };
    // Each port a net device of its share of the NIC (its PCIe link caps the NIC as a whole).
    let on_gpus = matches!(placement, Placement::Gpus(_));
    let nic_gbytes = first.map_or(0.0, |h| nic_line_gbps(m, h, on_gpus) / m.node(h).num_ports.max(1) as f64 / 8.0);
    NcclSystem::from_nics(ranks, nodes.max(1), arch, intra, nics, nic_gbytes)
}

/// NCCL's threshold below which a point-to-point send uses LL, per channel
/// (`NCCL_P2P_LL_THRESHOLD`, 16 KiB, `src/enqueue.cc`).
const P2P_LL_THRESHOLD: u64 = 16 << 10;

/// The largest collective buffer the twin runs: the engines' largest message (1 TB).
pub const MAX_COLLECTIVE_BYTES: u64 = rocelab_sim::traffic::MAX_FLOW_BYTES;
/// The most QPs a connection may have: NCCL's `NCCL_IB_MAX_QPS` (128, `src/transport/net_ib/common.h`).
pub const MAX_QPS_PER_CONNECTION: u32 = 128;

/// NCCL's default Simple-protocol step: 4 MiB of NCCL_BUFFSIZE over NCCL_STEPS = 8 slots.
pub const DEFAULT_CHUNK_BYTES: u64 = 512 << 10;

/// How a connection's QPs carry a message, as NCCL's IB transport posts it (`net_ib.cc`):
/// with `NCCL_IB_SPLIT_DATA_ON_QPS=1` every send is striped over all `qps` QPs; with 0, NCCL's
/// default, each send goes whole on one QP and the next send on the next QP. NCCL sends a
/// buffer in chunks of its Simple-protocol step ([`DEFAULT_CHUNK_BYTES`]) with several in
/// flight, so a message of k chunks keeps min(k, qps) QPs busy: here it is striped over that
/// many, starting at the QP its connection's turn has reached (`first`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpUse {
    pub qps: u32,
    pub split: bool,
}

impl QpUse {
    /// QPs a message of `bytes` is striped over, and the index of the first, for the
    /// connection's `nth` message.
    pub fn for_message(self, bytes: u64, nth: u64) -> (u32, u32) {
        let qps = self.qps.max(1);
        let used = if self.split { qps as u64 } else { bytes.div_ceil(DEFAULT_CHUNK_BYTES).clamp(1, qps as u64) };
        let used = used.min(bytes.max(1)) as u32;
        // A whole message on fewer QPs than the connection has starts where the turn is.
        // (A run that would pass the last QP starts over at the first: its ports stay the
        // connection's.)
        let first = if used < qps { ((nth * used as u64) % qps as u64) as u32 } else { 0 };
        (used, if first + used > qps { 0 } else { first })
    }

    /// The UDP source port of the message's first QP, the connection's ports being `base`,
    /// `base + 1`, … (`rocelab_sim::workload::sport_after`, the engine's own wrapping).
    pub fn sport(base: u16, first: u32) -> u16 {
        rocelab_sim::workload::sport_after(base, first)
    }
}

impl CollectiveSpec {
    /// How its connections' QPs carry a message.
    pub fn qp_use(&self) -> QpUse {
        QpUse { qps: self.qps_per_connection, split: self.split_data_on_qps }
    }

    pub fn new(op: Collective, bytes: u64) -> Self {
        CollectiveSpec {
            op,
            bytes,
            ranks: None,
            channels: Some(2),
            qps_per_connection: 1,
            split_data_on_qps: false,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            root: 0,
            message_rows: false,
            gpu_nodes: None,
            algo: Some(Algo::Ring),
            proto: Some(Proto::Simple),
            pxn: true,
            gpus_per_thread: None,
        }
    }

    /// `op` on `bytes` as NCCL runs it untold: its algorithm, protocol and channels.
    pub fn nccl(op: Collective, bytes: u64) -> Self {
        CollectiveSpec { algo: None, proto: None, channels: None, ..CollectiveSpec::new(op, bytes) }
    }

    /// Checks the spec against `m` and settles everything NCCL would choose: where the ranks
    /// sit, the algorithm and protocol (NCCL's tuning model, `rocelab_plan::tuning`, among
    /// the algorithms the twin runs: ring, and the tree for all-reduce), and the channels.
    /// Every caller (the CLI, scenarios, the doctor's twin, validate, the benches) goes through
    /// here, so a collective is the same run wherever it is asked for.
    pub fn resolve(&self, m: &Model) -> Result<Resolved, Vec<Diagnostic>> {
        let err = |msg: String, hint: String| Err(vec![Diagnostic::new("collective", msg, hint)]);
        let Some(name) = nccl_name(self.op) else {
            return err(format!("{} is not on the twin yet", self.op.name()), format!("use {NAMES}"));
        };
        let mut placement = match &self.ranks {
            Some(r) => Placement::Hosts(r.clone()),
            None => placement::placement(m)?,
        };
        if let Some(k) = self.gpu_nodes {
            let Placement::Gpus(g) = &mut placement else {
                return err(
                    format!("{k} GPU nodes asked for, but the ranks are host NICs"),
                    "name GPU nodes in the fabric (`gpu_node` on hosts, or a rail-optimized topology), or drop the node count".into(),
                );
            };
            if k == 0 || k as usize > g.nodes.len() {
                return err(
                    format!("{k} GPU nodes asked for, the fabric has {}", g.nodes.len()),
                    format!("give 1 to {}", g.nodes.len()),
                );
            }
            g.nodes.truncate(k as usize);
        }
        if placement.ranks() < 2 {
            return err("a collective needs at least 2 ranks".into(), "use a fabric with 2 or more hosts".into());
        }
        if placement.ranks() > ring::MAX_RANKS {
            return err(
                format!("{} ranks", placement.ranks()),
                format!("the twin runs collectives of up to {} ranks", ring::MAX_RANKS),
            );
        }
        if let Some(c) = self.channels.filter(|&c| c == 0 || c > ring::MAX_CHANNELS) {
            return err(
                format!("{c} channels"),
                format!("give 1 to {} (NCCL itself uses at most 64)", ring::MAX_CHANNELS),
            );
        }
        if self.bytes == 0 {
            return err("a collective of 0 bytes".into(), "give a size of 1 B or more".into());
        }
        // Every message a collective posts is at most its buffer on the wire (send/recv on one
        // channel sends it whole), so a buffer the engines accept as one message is one every
        // step can post (the protocol's lines are checked once it is known).
        if self.bytes > MAX_COLLECTIVE_BYTES {
            return err(
                format!("a collective of {} B", self.bytes),
                format!("give at most {MAX_COLLECTIVE_BYTES} B (1 TB, the largest message the engines take)"),
            );
        }
        if self.qps_per_connection == 0 || self.qps_per_connection > MAX_QPS_PER_CONNECTION {
            return err(
                format!("{} QPs per connection", self.qps_per_connection),
                format!("give 1 to {MAX_QPS_PER_CONNECTION} (NCCL_IB_QPS_PER_CONNECTION; NCCL's own limit)"),
            );
        }
        if self.chunk_bytes == 0 {
            return err("a chunk of 0 bytes".into(), "give 1 B or more".into());
        }
        if let Some(g) = self.gpus_per_thread.filter(|&g| g == 0 || g > launch::MAX_GPUS_PER_THREAD) {
            return err(
                format!("{g} GPUs per host thread"),
                format!("give 1 to {} (nccl-tests' -g), or leave it out", launch::MAX_GPUS_PER_THREAD),
            );
        }
        let n = placement.ranks() as u64;
        if self.op == Collective::Broadcast && self.root as u64 >= n {
            return err(format!("root {} of a broadcast over {n} ranks", self.root), format!("give a root in 0..{n}"));
        }
        // The algorithms the twin runs for this collective, in NCCL's names.
        let runs: &[Algo] = if self.op == Collective::AllReduce { &[Algo::Ring, Algo::Tree] } else { &[Algo::Ring] };
        if let Some(a) = self.algo.filter(|a| !runs.contains(a)) {
            let hint = match a {
                Algo::Tree => "NCCL's tree runs all-reduce only; use the ring for the others".to_string(),
                _ => format!(
                    "the twin runs {} for {name}",
                    runs.iter().map(|a| a.name()).collect::<Vec<_>>().join(" or ")
                ),
            };
            return err(format!("NCCL_ALGO={} for {name}", a.name()), hint);
        }
        // The GPU↔NIC leg of GPU nodes, and NCCL's rule that LL128 needs GPUDirect's reach
        // (PXB, or PXN on Hopper and later: PHB and SYS are beyond both).
        let pcie = match &placement {
            Placement::Gpus(_) => {
                Some(m.config.gpu_node.pcie.clone().unwrap_or_default().resolve().map_err(|d| vec![d])?)
            }
            Placement::Hosts(_) => None,
        };
        let mut sys = nccl_system(m, &placement);
        sys.ll128 &= pcie.is_none_or(|l| l.affinity <= rocelab_model::pcie::Affinity::Pxb);
        let (algo, proto, nccl_us) = match self.op {
            // Point-to-point: NCCL sends on the ring's channels, LL up to 16 KiB per channel.
            Collective::AllToAll | Collective::SendRecv => {
                let per_peer = if self.op == Collective::AllToAll { self.bytes.div_ceil(n) } else { self.bytes };
                let ch = self.channels.unwrap_or_else(|| nccl_channels(m, &placement, Algo::Ring)) as u64;
                let ll = per_peer <= ch * P2P_LL_THRESHOLD;
                (Algo::Ring, self.proto.unwrap_or(if ll { Proto::Ll } else { Proto::Simple }), None)
            }
            _ => {
                let algos = self.algo.map_or(runs.to_vec(), |a| vec![a]);
                let protos: Vec<Proto> = self.proto.into_iter().collect();
                match sys.choose(self.op, self.bytes, &algos, &protos) {
                    Some(c) => (c.algorithm, c.protocol, Some(c.time_us)),
                    // NCCL's model offers nothing here (LL128 asked for where NCCL disables
                    // it): run what was asked for.
                    None => (algos[0], self.proto.unwrap_or_default(), None),
                }
            }
        };
        let mut wire = Wire { pcie, ..Wire::new(proto, self.chunk_bytes) };
        let hop = m.config.nccl.as_ref().map(|n| n.net_hop_latency).unwrap_or_default();
        if hop == rocelab_model::nccl::NetHopLatency::Tuning {
            let ppn1 = placement.ranks() == nodes_of(&placement);
            // A connection's messages leave on one port of its NIC.
            let nic_bytes_per_s = first_nic(&placement)
                .map_or(1.0, |h| nic_line_gbps(m, h, pcie.is_some()) / m.node(h).num_ports.max(1) as f64 * 1e9 / 8.0);
            wire = wire.with_nccl_net_hop(algo, ppn1, shortest_nic_to_nic(m), nic_bytes_per_s);
        }
        if wire.wire_bytes(self.bytes) > MAX_COLLECTIVE_BYTES {
            return err(
                format!("{} B with {} is {} B on the wire", self.bytes, proto.name(), wire.wire_bytes(self.bytes)),
                format!("give at most {MAX_COLLECTIVE_BYTES} B on the wire (1 TB), or the Simple protocol"),
            );
        }
        let channels = self.channels.unwrap_or_else(|| nccl_channels(m, &placement, algo));
        if hop == rocelab_model::nccl::NetHopLatency::Tuning && !p2p_op(self.op) && self.op != Collective::Broadcast {
            // The channels share NCCL's model's bandwidth for the pick (its per-channel LL,
            // LL128 and tree caps: what a channel's GPU side streams). The model's figure is
            // algorithm bandwidth: a tree's leaf sends S/C at it; a ring's rank sends
            // steps/n of S/C, at the bus rate.
            let sends = if algo == Algo::Tree { 1.0 } else { self.op.ring_steps(n as u32) as f64 / n as f64 };
            let per = |gbytes: f64| gbytes * 1e9 * sends / channels.max(1) as f64;
            wire.channel_bytes_per_s = sys.table(self.op, algo, proto).map(|(gbytes, _)| per(gbytes));
        }
        // A hop inside a node costs NCCL's latency for its link, algorithm and protocol.
        if let Placement::Gpus(g) = &mut placement {
            let hw = if g.intra.label.starts_with("pcie") { HwClass::Pci } else { HwClass::Nvlink };
            g.intra.latency = SimTime::from_secs_f64(protocol::intra_hop_us(hw, algo, proto) * 1e-6);
        }
        let p2p = p2p_op(self.op);
        Ok(Resolved {
            name,
            placement,
            algo,
            proto,
            channels,
            nccl_us,
            wire,
            base_latency: if p2p { SimTime(0) } else { SimTime::from_secs_f64(protocol::base_us(algo, proto) * 1e-6) },
        })
    }
}

/// Whether NCCL sends `op` point to point, without its tuning model.
fn p2p_op(op: Collective) -> bool {
    matches!(op, Collective::AllToAll | Collective::SendRecv)
}

/// Nodes the ranks sit on (a GPU node, or a host NIC of its own).
fn nodes_of(p: &Placement) -> usize {
    match p {
        Placement::Gpus(g) => g.nodes.len(),
        Placement::Hosts(h) => h.len(),
    }
}

/// The first rank's NIC.
fn first_nic(p: &Placement) -> Option<NodeId> {
    match p {
        Placement::Gpus(g) => g.nodes.first().and_then(|n| n.first().copied()),
        Placement::Hosts(h) => h.first().copied(),
    }
}

/// The shortest path between two NICs of the fabric, unloaded: out of one host link and in
/// through another (the two shortest), through one switch.
fn shortest_nic_to_nic(m: &Model) -> SimTime {
    let mut d: Vec<u64> = m.hosts().flat_map(|h| m.node(h).ports().map(|p| m.port(p).delay.0)).collect();
    d.sort_unstable();
    SimTime(d.iter().take(2).sum())
}

/// A collective with everything NCCL would choose settled ([`CollectiveSpec::resolve`]).
#[derive(Clone, Debug)]
pub struct Resolved {
    /// nccl-tests' name of the op.
    pub name: &'static str,
    pub placement: Placement,
    pub algo: Algo,
    pub proto: Proto,
    pub channels: u32,
    /// NCCL's own predicted time for the pick, µs (collectives NCCL tunes; not p2p).
    pub nccl_us: Option<f64>,
    pub wire: Wire,
    /// NCCL's base latency of the pick, charged once per collective.
    pub base_latency: SimTime,
}

/// What a collective's workload reports when it is done.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// When the last chunk arrived (the collective's end on every rank).
    pub end: Option<SimTime>,
    /// Chunks that could not be delivered (a QP gave up).
    pub failed: u64,
    /// Chunks delivered.
    pub delivered: u64,
}

impl Outcome {
    /// Counts a delivery; false if the chunk failed (nothing depending on it may start).
    pub fn record(&mut self, done: &Delivered) -> bool {
        self.record_round(done, 1)
    }

    /// Counts `n` chunks delivered together (a lockstep round); false if they failed.
    pub fn record_round(&mut self, done: &Delivered, n: u64) -> bool {
        if done.failed {
            self.failed += n;
            return false;
        }
        self.arrived(done.at, n);
        true
    }

    /// Counts a chunk that arrived at `at` without crossing the fabric (inside a GPU node).
    pub fn record_local(&mut self, at: SimTime) {
        self.arrived(at, 1);
    }

    fn arrived(&mut self, at: SimTime, n: u64) {
        self.delivered += n;
        self.end = Some(self.end.map_or(at, |e| e.max(at)));
    }
}

/// A collective's result: one nccl-tests row, and the engine's own report of the run.
#[derive(Clone, Debug, Serialize)]
pub struct CollectiveResult {
    /// nccl-tests' name (`all_reduce`, `all_gather`, `reduce_scatter`).
    pub op: &'static str,
    /// The engine that ran it; in the JSON only when not the packet engine (so packet-engine
    /// outputs keep their bytes).
    #[serde(skip_serializing_if = "is_packet", serialize_with = "engine_name")]
    pub engine: EngineKind,
    pub bytes: u64,
    /// nccl-tests' root column: the root rank of broadcast, -1 for collectives without one.
    pub root: i64,
    pub ranks: u32,
    pub channels: u32,
    /// `ring` or `tree` (NCCL_ALGO), as given or as NCCL's model picks it.
    pub algo: &'static str,
    /// `LL`, `LL128` or `Simple` (NCCL_PROTO); in the JSON only when not Simple (so the
    /// outputs of runs before protocols keep their bytes).
    #[serde(skip_serializing_if = "is_simple")]
    pub proto: &'static str,
    pub time_us: f64,
    pub algbw_gbytes_per_s: f64,
    pub busbw_gbytes_per_s: f64,
    /// Chunks that never arrived (a QP exhausted its retries); nccl-tests' `#wrong` shows
    /// corrupted elements, which the twin never has, so this is its nearest figure.
    pub failed_chunks: u64,
    /// The least time a call takes because one host thread launches it on several GPUs
    /// ([`launch`]), µs; in the JSON only when charged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_launch_floor_us: Option<f64>,
    /// The engine's work: events handled and data packets sent.
    pub events: u64,
    pub data_packets: u64,
    /// Where the ranks sit (`placement`), for the table's header.
    #[serde(skip)]
    pub placement: String,
    /// Host and device of every rank, for the table's rank lines.
    #[serde(skip)]
    pub rank_devices: Vec<(String, u32)>,
    /// What the steady-state fast-forward skipped (`--fast-forward`; absent without it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<rocelab_sim::report::FastForwardUsed>,
    #[serde(skip)]
    pub report: RunReport,
}

fn is_simple(p: &&'static str) -> bool {
    *p == "Simple"
}

fn is_packet(e: &EngineKind) -> bool {
    *e == EngineKind::Packet
}

fn engine_name<S: serde::Serializer>(e: &EngineKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(e.name())
}

/// The collectives the twin runs, as nccl-tests names them.
pub const NAMES: &str = "all_reduce, all_gather, reduce_scatter, alltoall, broadcast or sendrecv";

/// nccl-tests' name of a collective, for the ones the twin runs.
pub fn nccl_name(op: Collective) -> Option<&'static str> {
    match op {
        Collective::AllReduce => Some("all_reduce"),
        Collective::AllGather => Some("all_gather"),
        Collective::ReduceScatter => Some("reduce_scatter"),
        Collective::AllToAll => Some("alltoall"),
        Collective::Broadcast => Some("broadcast"),
        Collective::SendRecv => Some("sendrecv"),
        Collective::Reduce => None,
    }
}

/// The collective named as nccl-tests names it (`all_reduce`, `all_reduce_perf`, `allreduce`).
pub fn parse_op(name: &str) -> Result<Collective, String> {
    let n = name.trim().trim_end_matches("_perf").replace(['-', '_'], "");
    match n.as_str() {
        "allreduce" => Ok(Collective::AllReduce),
        "allgather" => Ok(Collective::AllGather),
        "reducescatter" => Ok(Collective::ReduceScatter),
        "alltoall" => Ok(Collective::AllToAll),
        "broadcast" => Ok(Collective::Broadcast),
        "sendrecv" => Ok(Collective::SendRecv),
        "reduce" => Err(format!("`{name}` is not on the twin yet: {NAMES} are")),
        _ => Err(format!("unknown collective `{name}`: {NAMES}")),
    }
}

/// Every host of the fabric in ring order, for collectives whose ranks are host NICs (fabrics
/// without GPU nodes, or [`CollectiveSpec::ranks`] given). On a rail-optimized fabric the ring
/// walks rail by rail (rail 0 of every node, then rail 1, ...), so consecutive ranks share a
/// rail leaf and only the step from one rail to the next crosses the spines. Elsewhere: file
/// order. (With GPU placement, the default on fabrics of GPU nodes, the rings are
/// `placement`'s instead.)
pub fn default_ranks(m: &Model) -> Vec<NodeId> {
    let hosts: Vec<NodeId> = m.hosts().collect();
    let on_rails: usize = m.rails.iter().map(|r| r.hosts.len()).sum();
    if m.rails.is_empty() || on_rails != hosts.len() {
        return hosts;
    }
    m.rails.iter().flat_map(|r| r.hosts.iter().copied()).collect()
}

/// A collective's workload, built and checked, before it runs: hand `workload` to
/// `Sim::with_workload` (alone or beside other traffic), run, then [`Prepared::result`].
pub struct Prepared {
    pub workload: Box<dyn Workload>,
    /// nccl-tests' name of the op.
    pub name: &'static str,
    pub ranks: u32,
    /// Chunks to deliver for the collective to be complete.
    pub expected: u64,
    pub placement: String,
    /// Host and device of every rank (the table's rank lines).
    pub rank_devices: Vec<(String, u32)>,
    /// Filled by the workload as chunks arrive.
    pub outcome: Rc<RefCell<Outcome>>,
    /// What [`CollectiveSpec::resolve`] settled.
    pub algo: Algo,
    pub proto: Proto,
    pub channels: u32,
    /// NCCL's base latency, added to the time the engine measures ([`Prepared::time`]).
    pub base_latency: SimTime,
    /// GPUs one host thread launches the call on ([`CollectiveSpec::gpus_per_thread`]).
    pub gpus_per_thread: Option<u32>,
}

/// Checks `spec` against `m`, settles NCCL's choices ([`CollectiveSpec::resolve`]) and builds
/// its workload (`seed` draws its source ports).
pub fn prepare(m: &Model, spec: &CollectiveSpec, seed: u64) -> Result<Prepared, Vec<Diagnostic>> {
    let r = spec.resolve(m)?;
    let n = r.placement.ranks() as u64;
    let out = Rc::new(RefCell::new(Outcome::default()));
    let (w, expected): (Box<dyn Workload>, u64) = match spec.op {
        Collective::AllReduce if r.algo == Algo::Tree => {
            let plan = TreePlan {
                bytes: spec.bytes,
                channels: r.channels,
                chunk_bytes: r.wire.step_bytes,
                qps: spec.qp_use(),
                seed,
                wire: r.wire,
            };
            let w = Tree::new(&r.placement, plan, out.clone());
            let e = w.chunks_to_deliver();
            (Box::new(w), e)
        }
        Collective::AllReduce | Collective::AllGather | Collective::ReduceScatter => {
            let plan = RingPlan {
                // 2(n−1) steps for all-reduce, n−1 for all-gather and reduce-scatter (as `plan`
                // counts them), of S/n per step and rank, rounded up (NCCL pads the last chunk).
                steps: spec.op.ring_steps(n as u32) as u32,
                chunk_bytes: spec.bytes.div_ceil(n),
                channels: r.channels,
                qps: spec.qp_use(),
                seed,
                wire: r.wire,
            };
            let w = Ring::new(&r.placement, plan, out.clone());
            let e = w.chunks_to_deliver();
            (Box::new(w), e)
        }
        Collective::AllToAll | Collective::SendRecv => {
            let transfers = if spec.op == Collective::AllToAll {
                p2p::all_to_all(n as u32, spec.bytes)
            } else {
                p2p::send_recv(n as u32, spec.bytes)
            };
            let plan =
                p2p::ExchangePlan { channels: r.channels, qps: spec.qp_use(), wire: r.wire, pxn: spec.pxn, seed };
            let w = Exchange::new(&r.placement, &transfers, plan, out.clone());
            let e = w.chunks_to_deliver();
            (Box::new(w), e)
        }
        Collective::Broadcast => {
            let plan = BroadcastPlan {
                bytes: spec.bytes,
                root: spec.root,
                channels: r.channels,
                chunk_bytes: r.wire.step_bytes,
                qps: spec.qp_use(),
                seed,
                wire: r.wire,
            };
            let w = Broadcast::new(&r.placement, plan, out.clone());
            let e = w.chunks_to_deliver();
            (Box::new(w), e)
        }
        // `resolve` refuses the collectives the twin does not run.
        Collective::Reduce => {
            return Err(vec![Diagnostic::new("collective", "reduce is not on the twin yet", format!("use {NAMES}"))])
        }
    };
    Ok(Prepared {
        workload: w,
        name: r.name,
        ranks: n as u32,
        expected,
        placement: r.placement.describe(),
        rank_devices: r.placement.rank_devices(m),
        outcome: out,
        algo: r.algo,
        proto: r.proto,
        channels: r.channels,
        base_latency: r.base_latency,
        gpus_per_thread: spec.gpus_per_thread,
    })
}

impl Prepared {
    /// The collective's time from the outcome: `None` unless every chunk arrived.
    pub fn time(&self) -> Option<SimTime> {
        let o = self.outcome.borrow();
        if o.failed == 0 && o.delivered == self.expected {
            o.end.map(|e| launch::call_time(SimTime(e.0 + self.base_latency.0), self.gpus_per_thread))
        } else {
            None
        }
    }

    /// Chunks that did not arrive.
    pub fn failed_chunks(&self) -> u64 {
        let o = self.outcome.borrow();
        o.failed + self.expected.saturating_sub(o.delivered + o.failed)
    }
}

/// Runs one collective to completion on `m` (with the fabric file's faults).
pub fn run_collective(m: &Model, spec: &CollectiveSpec, opts: SimOptions) -> Result<CollectiveResult, Vec<Diagnostic>> {
    let Prepared {
        workload,
        name,
        ranks,
        expected,
        placement,
        rank_devices,
        outcome,
        algo,
        proto,
        channels,
        base_latency,
        gpus_per_thread,
    } = prepare(m, spec, opts.seed)?;
    let n = ranks as u64;
    let engine = opts.engine;
    // A ring posts a message per step, chunk and channel: their rows only when asked for.
    let snap = run_to_end(m, workload, opts, spec.message_rows)?;
    let report = RunReport::from_snapshot(&snap, m);
    let o = outcome.borrow().clone();
    let complete = o.failed == 0 && o.delivered == expected;
    let time_us = match (complete, o.end) {
        (true, Some(end)) => launch::call_time(SimTime(end.0 + base_latency.0), gpus_per_thread).0 as f64 * 1e-6,
        _ => f64::INFINITY,
    };
    let algbw = if time_us.is_finite() && time_us > 0.0 { spec.bytes as f64 / (time_us * 1e-6) / 1e9 } else { 0.0 };
    Ok(CollectiveResult {
        op: name,
        engine,
        bytes: spec.bytes,
        root: if spec.op == Collective::Broadcast { spec.root as i64 } else { -1 },
        ranks: n as u32,
        channels,
        algo: algo.name(),
        proto: proto.name(),
        time_us,
        algbw_gbytes_per_s: algbw,
        busbw_gbytes_per_s: algbw * spec.op.busbw_factor(n as u32),
        failed_chunks: o.failed + expected.saturating_sub(o.delivered + o.failed),
        host_launch_floor_us: gpus_per_thread.map(|g| launch::floor(g).0 as f64 * 1e-6),
        events: report.events,
        data_packets: report.totals.data_packets_sent,
        placement,
        rank_devices,
        fast_forward: report.fast_forward.clone(),
        report,
    })
}

/// nccl-tests' size sweep: `min`, `min·factor`, … up to `max` (as `-b -e -f`).
pub fn sweep_sizes(min: u64, max: u64, factor: u64) -> Result<Vec<u64>, String> {
    if min == 0 || max < min {
        return Err(format!("sizes {min}..{max}: need 1 ≤ min ≤ max"));
    }
    if factor < 2 {
        return Err(format!("step factor {factor}: need 2 or more"));
    }
    let mut v = vec![];
    let mut s = min;
    while s <= max {
        v.push(s);
        match s.checked_mul(factor) {
            Some(n) => s = n,
            None => break,
        }
    }
    Ok(v)
}

/// Runs `spec` at every size of the sweep.
pub fn sweep(
    m: &Model,
    spec: &CollectiveSpec,
    sizes: &[u64],
    opts: SimOptions,
    progress: &mut dyn FnMut(usize, &CollectiveResult),
) -> Result<Vec<CollectiveResult>, Vec<Diagnostic>> {
    let mut out = Vec::with_capacity(sizes.len());
    for (i, &bytes) in sizes.iter().enumerate() {
        let r = run_collective(m, &CollectiveSpec { bytes, ..spec.clone() }, opts.clone())?;
        progress(i, &r);
        out.push(r);
    }
    Ok(out)
}

/// `work` run to its end on `m` with the fabric file's `[[fault]]` tables, on the engine
/// `opts.engine` names: every workload runner's one way into the engine. Returns the run's
/// snapshot (with per-message rows when `rows`, else totals only); the engine is dropped
/// before the caller builds its report from it, so the two are never held at once.
pub(crate) fn run_to_end(
    m: &Model,
    work: Box<dyn Workload + '_>,
    opts: SimOptions,
    rows: bool,
) -> Result<Snapshot, Vec<Diagnostic>> {
    let faults = rocelab_sim::engine::resolve_faults(m)?;
    let mut sim = Run::with_workload(m, work, faults, opts)?;
    sim.run(&mut |_| {});
    Ok(if rows { sim.snapshot() } else { sim.snapshot_totals() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_sends_a_chunk_per_qp_in_turn_unless_told_to_split() {
        let rr = QpUse { qps: 4, split: false };
        // 1 MiB = 2 chunks of 512 KiB: two QPs busy, the next message on the next two.
        assert_eq!(rr.for_message(1 << 20, 0), (2, 0));
        assert_eq!(rr.for_message(1 << 20, 1), (2, 2));
        assert_eq!(rr.for_message(1 << 20, 2), (2, 0));
        // A small message takes one QP, in turn.
        assert_eq!((0..5).map(|k| rr.for_message(4096, k).1).collect::<Vec<_>>(), [0, 1, 2, 3, 0]);
        // 3 chunks on 4 QPs: a run that would pass QP 3 starts at QP 0.
        assert_eq!(rr.for_message(3 << 19, 1), (3, 0));
        // Large messages keep every QP busy.
        assert_eq!(rr.for_message(64 << 20, 7), (4, 0));
        // NCCL_IB_SPLIT_DATA_ON_QPS=1: always all of them (never more QPs than bytes).
        let split = QpUse { qps: 4, split: true };
        assert_eq!(split.for_message(4096, 3), (4, 0));
        assert_eq!(split.for_message(2, 0), (2, 0));
        // Ports follow the connection's base, wrapping in 49152..=65535.
        assert_eq!(QpUse::sport(50000, 2), 50002);
        assert_eq!(QpUse::sport(65535, 1), 49152);
    }
}
