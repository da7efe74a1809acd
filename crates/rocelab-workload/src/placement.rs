//! Where a collective's ranks sit, and which hops of its rings cross the fabric.
//!
//! Without GPU nodes every host NIC is a rank and every hop is a message on the packet engine
//! ([`Placement::Hosts`]). On a fabric whose hosts all name a `gpu_node` (every
//! `[topology.rail_optimized]` fabric, or explicit hosts with `gpu_node = "..."`), the ranks are
//! GPUs, as NCCL places them on a rail-optimized cluster ([`GpuLayout`]):
//!
//! * GPU node k (in the order of the nodes' indices) holds GPUs 0..G (`[gpu_node] gpus`) and
//!   its NICs sorted by rail; GPU g sends on NIC ⌊g·R/G⌋ (with one NIC per GPU, NIC g on
//!   rail g). Rank numbers are k·G + g, as NCCL numbers one process per GPU node by node.
//! * Rings are NCCL's inter-node rings (`src/graph/search.cc`, "Search Patterns": `NET n ->
//!   GPU a -> GPU b -> .. -> GPU x -> NET n (or m if crossNic)`): channel c enters every node
//!   on NIC ρ = c mod R, visits all G GPUs of the node starting from the one local to that
//!   NIC (the search tries "the most local GPUs" to the NIC first, `ncclTopoSearchRecNet`),
//!   in PCI order from there (`FORCED_ORDER_PCI`, the search's first try), and leaves on the
//!   same NIC ρ (going back to the NIC, the search skips any other NIC unless crossNic = 1),
//!   to enter the next node on its NIC ρ: every inter-node hop of channel c stays on rail ρ,
//!   as `NCCL_CROSS_NIC=0` promises ("always use the same NIC for the same ring", NCCL's
//!   environment-variable docs), and the channels are spread over the NICs round-robin, as
//!   NCCL's search takes each NIC's bandwidth away channel by channel. (NCCL's real search
//!   picks among equivalent orders by its own scoring and may alternate ring directions,
//!   2.20's "alternating rings"; the volumes per link are the same.)
//! * Hops between two GPUs of one node do not cross the fabric: they take latency +
//!   bytes / intra-node bandwidth, with each GPU's outgoing intra-node transfers served one at
//!   a time at that bandwidth (NVLink and PCIe bandwidths are per GPU and direction). The hop
//!   out of a node is a message from NIC ρ of that node to NIC ρ of the next; the path from
//!   the last GPU to NIC ρ (PXN over NVLink, or PCIe) is not charged separately.

use rocelab_model::{Diagnostic, Model, NodeId, Role, SimTime};
use std::collections::BTreeMap;

/// NCCL's per-hop latency of a ring step with the Simple protocol (`hwLat` in NCCL's
/// `src/graph/tuning.cc`, Ring/Simple): 3.4 µs over NVLink.
pub const NVLINK_HOP_LATENCY_US: f64 = 3.4;
/// The same table's Ring/Simple latency over PCI: 5.7 µs.
pub const PCIE_HOP_LATENCY_US: f64 = 5.7;

/// The intra-node bandwidths accepted, GB/s: from far below any PCIe x16 link (so the slowest
/// transfer of a 1 TB collective stays far inside the engine's clock) to far above any NVLink.
const MIN_INTRA_GBYTES_PER_S: f64 = 0.1;
const MAX_INTRA_GBYTES_PER_S: f64 = 100_000.0;
/// The most GPUs a node may hold here.
const MAX_GPUS: u32 = 4096;

/// The link between the GPUs of one node.
#[derive(Clone, Debug, PartialEq)]
pub struct IntraNode {
    /// `nvlink4`, `pcie5`, ... as `[gpu_node] intra_node` names it.
    pub label: String,
    /// Per GPU and direction, bytes/s.
    pub bytes_per_s: f64,
    /// Per hop.
    pub latency: SimTime,
}

impl IntraNode {
    /// How long `bytes` take to leave a GPU once it starts sending them (rounded up to 1 ps).
    pub fn serialize(&self, bytes: u64) -> SimTime {
        SimTime((bytes as f64 * 1e12 / self.bytes_per_s).ceil() as u64)
    }
}

/// GPUs placed in GPU nodes, each node with its NICs.
#[derive(Clone, Debug)]
pub struct GpuLayout {
    /// NICs of each GPU node, sorted by rail (then by node index).
    pub nodes: Vec<Vec<NodeId>>,
    /// GPUs per node.
    pub gpus: u32,
    pub intra: IntraNode,
}

/// One hop of a ring: from a rank to the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// A message on the packet engine, from NIC `src` to NIC `dst`.
    Net { src: NodeId, dst: NodeId },
    /// A transfer inside a node, sent by GPU `gpu` (its global index: its rank).
    Local { gpu: u32 },
}

/// One channel's ring: rank of each position, and the hop from each position to the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRing {
    pub order: Vec<u32>,
    pub hops: Vec<Hop>,
}

impl ChannelRing {
    /// Position of each rank in this ring.
    pub fn positions(&self) -> Vec<u32> {
        let mut pos = vec![0u32; self.order.len()];
        for (p, &r) in self.order.iter().enumerate() {
            pos[r as usize] = p as u32;
        }
        pos
    }
}

/// Where the ranks of a collective sit.
#[derive(Clone, Debug)]
pub enum Placement {
    /// Every rank a host NIC, in ring order; every hop crosses the fabric.
    Hosts(Vec<NodeId>),
    /// Every rank a GPU.
    Gpus(GpuLayout),
}

impl Placement {
    pub fn ranks(&self) -> usize {
        match self {
            Placement::Hosts(h) => h.len(),
            Placement::Gpus(g) => g.nodes.len() * g.gpus as usize,
        }
    }

    /// The ring of channel `c`.
    pub fn ring(&self, c: u32) -> ChannelRing {
        match self {
            Placement::Hosts(h) => {
                let n = h.len();
                ChannelRing {
                    order: (0..n as u32).collect(),
                    hops: (0..n).map(|r| Hop::Net { src: h[r], dst: h[(r + 1) % n] }).collect(),
                }
            }
            Placement::Gpus(g) => g.ring(c),
        }
    }

    /// Channels c and c + period have the same ring: 1 with host NICs, the least common
    /// multiple of the nodes' NIC counts with GPUs (`u32::MAX` past 2¹⁶: no repetition sought).
    pub fn ring_period(&self) -> u32 {
        match self {
            Placement::Hosts(_) => 1,
            Placement::Gpus(g) => {
                let gcd = |mut a: u64, mut b: u64| {
                    while b != 0 {
                        (a, b) = (b, a % b);
                    }
                    a
                };
                let mut l = 1u64;
                for n in &g.nodes {
                    let r = n.len().max(1) as u64;
                    l = l / gcd(l, r) * r;
                    if l > 1 << 16 {
                        return u32::MAX;
                    }
                }
                l as u32
            }
        }
    }

    /// The intra-node link, if ranks are GPUs.
    pub fn intra(&self) -> Option<&IntraNode> {
        match self {
            Placement::Hosts(_) => None,
            Placement::Gpus(g) => Some(&g.intra),
        }
    }

    /// Where each rank runs, in rank order, as nccl-tests' `# Rank r ... on HOST device D`
    /// lines name it: a GPU node (`node<k>`, k in node order) and the GPU's index in it, or a
    /// host NIC's name and device 0.
    pub fn rank_devices(&self, m: &Model) -> Vec<(String, u32)> {
        match self {
            Placement::Hosts(h) => h.iter().map(|n| (m.node(*n).name.clone(), 0)).collect(),
            Placement::Gpus(g) => {
                (0..g.nodes.len()).flat_map(|k| (0..g.gpus).map(move |d| (format!("node{k}"), d))).collect()
            }
        }
    }

    /// The table's description of the ranks.
    pub fn describe(&self) -> String {
        match self {
            Placement::Hosts(_) => "one per host NIC".to_string(),
            Placement::Gpus(g) => format!(
                "{} GPU nodes × {} GPUs, {} at {} GB/s inside a node, rings on one rail between nodes",
                g.nodes.len(),
                g.gpus,
                g.intra.label,
                g.intra.bytes_per_s / 1e9
            ),
        }
    }
}

impl GpuLayout {
    /// NIC of GPU `gpu` of node `node`.
    pub fn nic_of(&self, node: usize, gpu: u32) -> NodeId {
        let nics = &self.nodes[node];
        nics[(gpu as usize * nics.len()) / self.gpus as usize]
    }

    /// Index (into the node's NICs) of the NIC channel `c` enters and leaves `node` by.
    pub fn channel_nic(&self, node: usize, c: u32) -> usize {
        c as usize % self.nodes[node].len()
    }

    /// The first GPU of `node` on its NIC index `nic` (the GPU that NIC is local to).
    fn gpu_on_nic(&self, node: usize, nic: usize) -> u32 {
        let (g, r) = (self.gpus as usize, self.nodes[node].len());
        let first = if g >= r { (nic * g).div_ceil(r) } else { nic * g / r };
        (first % g) as u32
    }

    /// Channel `c`'s ring: node by node, each node's GPUs from the one local to NIC c mod R.
    pub fn ring(&self, c: u32) -> ChannelRing {
        let g = self.gpus;
        let mut order = Vec::with_capacity(self.nodes.len() * g as usize);
        for k in 0..self.nodes.len() {
            let first = self.gpu_on_nic(k, self.channel_nic(k, c));
            order.extend((0..g).map(|j| k as u32 * g + (first + j) % g));
        }
        let n = order.len();
        let nodes = self.nodes.len();
        let hops = (0..n)
            .map(|p| {
                let (a, b) = (order[p], order[(p + 1) % n]);
                let (ka, kb) = ((a / g) as usize, (b / g) as usize);
                if ka == kb {
                    Hop::Local { gpu: a }
                } else {
                    debug_assert_eq!(kb, (ka + 1) % nodes);
                    Hop::Net {
                        src: self.nodes[ka][self.channel_nic(ka, c)],
                        dst: self.nodes[kb][self.channel_nic(kb, c)],
                    }
                }
            })
            .collect();
        ChannelRing { order, hops }
    }
}

/// The intra-node link `[gpu_node]` describes: its bandwidth (given, or the label's default)
/// and the hop latency of its kind. Refuses values that cannot be simulated, naming the key.
pub fn intra_node(m: &Model) -> Result<IntraNode, Vec<Diagnostic>> {
    let c = &m.config.gpu_node;
    let label = m.gpu_node.intra_node.clone();
    let known = matches!(label.as_str(), "nvlink4" | "nvlink5" | "pcie4" | "pcie5");
    let gbs = match c.intra_node_gbytes_per_s {
        Some(v) if !(v.is_finite() && (MIN_INTRA_GBYTES_PER_S..=MAX_INTRA_GBYTES_PER_S).contains(&v)) => {
            return Err(vec![Diagnostic::new(
                "gpu_node.intra_node_gbytes_per_s",
                format!(
                    "intra-node bandwidth {v} GB/s is outside {MIN_INTRA_GBYTES_PER_S}..={MAX_INTRA_GBYTES_PER_S} GB/s"
                ),
                "give the per-GPU, per-direction bandwidth, e.g. 450 for NVLink 4 (H100)",
            )])
        }
        Some(v) => v,
        None if known => m.gpu_node.intra_node_gbytes_per_s,
        None => {
            return Err(vec![Diagnostic::new(
                "gpu_node.intra_node",
                format!("intra-node link `{label}` has no default bandwidth"),
                "use nvlink4, nvlink5, pcie4 or pcie5, or give intra_node_gbytes_per_s",
            )])
        }
    };
    let latency_us = if label.starts_with("pcie") { PCIE_HOP_LATENCY_US } else { NVLINK_HOP_LATENCY_US };
    Ok(IntraNode { label, bytes_per_s: gbs * 1e9, latency: SimTime::from_secs_f64(latency_us * 1e-6) })
}

/// The placement a collective gets when it is not given its ranks: GPUs if every host names
/// its GPU node, host NICs (in [`crate::default_ranks`] order) if none does.
pub fn placement(m: &Model) -> Result<Placement, Vec<Diagnostic>> {
    let hosts: Vec<NodeId> = m.hosts().collect();
    let node_of = |h: &NodeId| match m.node(*h).role {
        Role::Host { gpu_node, rail, .. } => (gpu_node, rail),
        Role::Switch { .. } => (None, None),
    };
    let placed = hosts.iter().filter(|h| node_of(h).0.is_some()).count();
    if placed == 0 {
        return Ok(Placement::Hosts(crate::default_ranks(m)));
    }
    if let Some(h) = hosts.iter().find(|h| node_of(h).0.is_none()) {
        return Err(vec![Diagnostic::new(
            "topology",
            format!("host `{}` belongs to no GPU node while {placed} other hosts do", m.node(*h).name),
            "give every host a gpu_node (and rail), or none, so the collective knows where its ranks are",
        )]);
    }
    let gpus = m.config.gpu_node.gpus.unwrap_or(m.gpu_node.gpus);
    if gpus == 0 || gpus > MAX_GPUS {
        return Err(vec![Diagnostic::new(
            "gpu_node.gpus",
            format!("{gpus} GPUs per node"),
            format!("give 1 to {MAX_GPUS}, e.g. gpus = 8"),
        )]);
    }
    let intra = intra_node(m)?;
    let mut by_node: BTreeMap<u32, Vec<(u32, NodeId)>> = BTreeMap::new();
    for h in &hosts {
        let (g, rail) = node_of(h);
        by_node.entry(g.unwrap_or(0)).or_default().push((rail.unwrap_or(u32::MAX), *h));
    }
    let mut nodes: Vec<Vec<NodeId>> = by_node
        .into_values()
        .map(|mut nics| {
            nics.sort();
            nics.into_iter().map(|(_, h)| h).collect()
        })
        .collect();
    if let Some(rows) = m.config.gpu_node.pcie.as_ref().and_then(|p| p.topo.as_ref()) {
        let order = nic_order(rows, gpus, &nodes)?;
        for nics in &mut nodes {
            *nics = order.iter().map(|&i| nics[i]).collect();
        }
    }
    Ok(Placement::Gpus(GpuLayout { nodes, gpus, intra }))
}

/// The order of a node's NICs (indices in rail order) under which GPU g's NIC, ⌊g·R/G⌋, is the
/// one NCCL gives it from `[gpu_node.pcie] topo` ([`rocelab_model::pcie::nccl_nic_choice`]).
/// The twin places GPUs on NICs in contiguous blocks; a choice that is not one (two blocks on
/// one NIC, or one block split over two) is refused, naming the GPUs.
fn nic_order(rows: &[String], gpus: u32, nodes: &[Vec<NodeId>]) -> Result<Vec<usize>, Vec<Diagnostic>> {
    let d = |msg: String, hint: &str| vec![Diagnostic::new("gpu_node.pcie.topo", msg, hint)];
    let topo = rocelab_model::pcie::topo_classes(rows).map_err(|(i, msg)| {
        vec![Diagnostic::new(format!("gpu_node.pcie.topo[{i}]"), msg, "one row per GPU, a class per NIC")]
    })?;
    let r = nodes.iter().map(Vec::len).min().unwrap_or(0);
    if topo.len() != gpus as usize || nodes.iter().any(|n| n.len() != topo[0].len()) {
        return Err(d(
            format!("{} rows of {} NICs for nodes of {gpus} GPUs and {r} NICs", topo.len(), topo[0].len()),
            "give a row per GPU with a class per NIC of the node, in rail order (nvidia-smi topo -m)",
        ));
    }
    let choice = rocelab_model::pcie::nccl_nic_choice(&topo);
    let g = gpus as usize;
    let mut order: Vec<Option<usize>> = vec![None; r];
    for (gpu, &nic) in choice.iter().enumerate() {
        let block = gpu * r / g;
        match order[block] {
            None if order.contains(&Some(nic)) => {
                let other = (0..gpu).find(|&h| choice[h] == nic).unwrap_or(0);
                return Err(d(
                    format!("NCCL gives GPUs {other} and {gpu} the same NIC {nic}, which the twin's blocks of {} GPUs per NIC cannot hold", g.div_ceil(r)),
                    "the twin places GPU g on NIC ⌊g·R/G⌋ after reordering the NICs; describe GPUs that share a NIC as consecutive",
                ));
            }
            None => order[block] = Some(nic),
            Some(n) if n != nic => {
                return Err(d(
                    format!("NCCL gives GPU {gpu} NIC {nic} and GPU {} NIC {n}, one block of the twin's placement", gpu - 1),
                    "the twin places GPU g on NIC ⌊g·R/G⌋ after reordering the NICs; describe GPUs that share a NIC as consecutive",
                ))
            }
            Some(_) => {}
        }
    }
    // NICs no GPU takes (more NICs than GPUs) keep their rail order after the taken ones.
    let rest: Vec<usize> = (0..r).filter(|n| !order.contains(&Some(*n))).collect();
    let mut rest = rest.into_iter();
    Ok(order.into_iter().map(|o| o.or_else(|| rest.next()).unwrap_or(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(nodes: u32, gpus: u32, nics: u32) -> GpuLayout {
        GpuLayout {
            nodes: (0..nodes).map(|k| (0..nics).map(|r| NodeId(k * nics + r)).collect()).collect(),
            gpus,
            intra: IntraNode { label: "nvlink4".into(), bytes_per_s: 450e9, latency: SimTime(3_400_000) },
        }
    }

    #[test]
    fn channel_rings_enter_and_leave_every_node_on_one_rail() {
        let l = layout(2, 4, 4);
        // Channel 1: node 0's GPUs from GPU 1 (local to NIC 1), then node 1's from GPU 1.
        let r = l.ring(1);
        assert_eq!(r.order, vec![1, 2, 3, 0, 5, 6, 7, 4]);
        let net: Vec<_> = r.hops.iter().filter(|h| matches!(h, Hop::Net { .. })).collect();
        // NIC 1 of node 0 (host 1) to NIC 1 of node 1 (host 5), and back.
        assert_eq!(
            net,
            vec![&Hop::Net { src: NodeId(1), dst: NodeId(5) }, &Hop::Net { src: NodeId(5), dst: NodeId(1) }]
        );
        assert_eq!(r.hops[0], Hop::Local { gpu: 1 });
        // Channels wrap around the NICs.
        assert_eq!(l.ring(5), r);
        assert_eq!(Placement::Gpus(l).ring_period(), 4);
        assert_eq!(Placement::Hosts(vec![NodeId(0), NodeId(1)]).ring_period(), 1);
    }

    #[test]
    fn gpus_share_nics_in_contiguous_blocks() {
        let l = layout(1, 8, 4);
        let nics: Vec<u32> = (0..8).map(|g| l.nic_of(0, g).0).collect();
        assert_eq!(nics, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        // Channel 3 enters on NIC 3, local to GPUs 6 and 7: the ring starts at GPU 6.
        assert_eq!(l.ring(3).order[0], 6);
        // A single node: every hop stays inside it.
        assert!(l.ring(0).hops.iter().all(|h| matches!(h, Hop::Local { .. })));
        // Fewer GPUs than NICs: GPU 0 owns NICs 0 and 1.
        let l = layout(1, 2, 4);
        assert_eq!(l.ring(1).order, vec![0, 1]);
        assert_eq!(l.ring(2).order, vec![1, 0]);
    }

    #[test]
    fn intra_node_transfers_take_bytes_over_bandwidth() {
        let l = layout(1, 2, 2);
        // 450 kB at 450 GB/s: 1 µs.
        assert_eq!(l.intra.serialize(450_000), SimTime(1_000_000));
        assert_eq!(l.intra.serialize(1), SimTime(3));
    }
}
