//! Multi-homed NICs in a rail-optimized fabric: dual-ToR and multi-plane (Alibaba HPN).
//!
//! Qian et al., "Alibaba HPN: A Data Center Network for Large Language Model Training",
//! SIGCOMM 2024, cable each NIC's two 200G ports to two ToRs with no stacking link between
//! them (non-stacked dual-ToR, §4), and split the tier above into two planes: port 0 of
//! every NIC reaches only plane 0's aggregation switches, port 1 only plane 1's (dual-plane,
//! §5). With one plane the aggregation switch must hash once more between the two ToRs of the
//! destination pair, so two flows for one NIC can land on the same ToR and share one 200G
//! downlink while the other idles (HPN's "hash polarization"); with two planes the sending
//! port fixes the receiving port and that decision is gone.
//!
//! Three keys of `[topology.rail_optimized]` describe the shape (checked here, at load):
//! `ports_per_nic` P, `dual_tor`, `planes` N. A NIC's ports go to T ToRs of its rail and SU
//! (T = 2 with `dual_tor`, else T = N), port `k` to ToR `k mod T`; ToR `t` is on plane
//! `t mod N`; each plane has its own spines in every pod (and its own core switches). The
//! engine binds each QP to one port of its NIC round-robin, as mlx5 RoCE LAG does.

use crate::config::RailOptimizedConfig;
use crate::diag::Diagnostic;
use crate::model::{Model, NodeId, PortId};
use crate::topology::{GNode, Tier};
use serde::Serialize;

/// Ports a NIC may have here (ConnectX cards have 1 or 2; multi-plane designs split one
/// 800G NIC into up to 8 lanes of its own).
pub const MAX_NIC_PORTS: u32 = 8;

/// The cabling of one NIC's ports, resolved from the three keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NicShape {
    /// Ports per NIC (P).
    pub ports: u32,
    /// ToRs per rail and SU that a NIC's ports spread over (T).
    pub tors: u32,
    /// Planes (N).
    pub planes: u32,
    pub dual_tor: bool,
}

impl NicShape {
    /// The plain build: one port, one ToR, one plane.
    pub fn is_plain(&self) -> bool {
        self.ports == 1 && self.tors == 1 && self.planes == 1
    }
    /// The ToR (0..T) that port `k` of a NIC attaches to.
    pub fn tor_of_port(&self, k: u32) -> u32 {
        k % self.tors
    }
    /// The plane of ToR `t`.
    pub fn plane_of_tor(&self, t: u32) -> u32 {
        t % self.planes
    }
    /// Links from each NIC to each of its ToRs.
    pub fn ports_per_tor(&self) -> u32 {
        self.ports / self.tors
    }
}

/// Checks `ports_per_nic`, `dual_tor` and `planes` against each other; `None` after an error.
pub(crate) fn resolve(c: &RailOptimizedConfig, p: &str, errs: &mut Vec<Diagnostic>) -> Option<NicShape> {
    let dual_tor = c.dual_tor.unwrap_or(false);
    let planes = c.planes.unwrap_or(1);
    let ports = c.ports_per_nic.unwrap_or(if dual_tor { 2 } else { planes.max(1) });
    let e0 = errs.len();
    if !(1..=MAX_NIC_PORTS).contains(&ports) {
        errs.push(Diagnostic::new(
            format!("{p}.ports_per_nic"),
            format!("a NIC has 1 to {MAX_NIC_PORTS} ports, got {ports}"),
            "give the ports of one NIC, e.g. `ports_per_nic = 2` for a dual-port 2 x 200G card",
        ));
        return None;
    }
    if planes == 0 || planes > MAX_NIC_PORTS {
        errs.push(Diagnostic::new(
            format!("{p}.planes"),
            format!("planes must be between 1 and {MAX_NIC_PORTS}, got {planes}"),
            "write `planes = 2` for HPN's dual-plane (each port of a dual-port NIC on its own plane)",
        ));
        return None;
    }
    if dual_tor && ports != 2 {
        errs.push(Diagnostic::new(
            format!("{p}.dual_tor"),
            format!("dual_tor needs a dual-port NIC (one port to each ToR of the pair), but ports_per_nic = {ports}"),
            "set `ports_per_nic = 2` (or leave it out), or remove `dual_tor`",
        ));
    }
    if !ports.is_multiple_of(planes) {
        let divisors: Vec<String> = (1..=ports).filter(|d| ports.is_multiple_of(*d)).map(|d| d.to_string()).collect();
        errs.push(Diagnostic::new(
            format!("{p}.planes"),
            format!("{planes} planes do not divide the NIC's {ports} port(s): every plane takes the same ports of every NIC"),
            if ports == 1 {
                "a single-port NIC is on one plane: set `dual_tor = true` (2 ports) or `ports_per_nic`, or remove `planes`"
                    .to_string()
            } else {
                format!("use a divisor of ports_per_nic = {ports}: {}", divisors.join(", "))
            },
        ));
    }
    if errs.len() > e0 {
        return None;
    }
    let tors = if dual_tor { 2 } else { planes };
    Some(NicShape { ports, tors, planes, dual_tor })
}

/// One plane: its switches (leaves, spines, cores), in node order.
#[derive(Clone, Debug, PartialEq)]
pub struct Plane {
    pub index: u32,
    pub switches: Vec<NodeId>,
}

/// The planes a builder tagged; empty when it tagged none (every plain fabric).
pub(crate) fn collect(nodes: &[GNode]) -> Vec<Plane> {
    let mut planes: Vec<Plane> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if let Some(pl) = n.plane {
            while planes.len() <= pl as usize {
                planes.push(Plane { index: planes.len() as u32, switches: vec![] });
            }
            planes[pl as usize].switches.push(NodeId(i as u32));
        }
    }
    planes
}

/// What `rocelab topo` reports of one plane.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PlaneSummary {
    pub plane: u32,
    pub leaves: usize,
    pub spines: usize,
    pub cores: usize,
    /// NIC ports cabled to this plane's leaves, and their capacity in Gb/s.
    pub nic_ports: usize,
    pub nic_gbps: f64,
    /// A leaf of the plane and a NIC behind another leaf of the plane: the ECMP widths are
    /// measured on the way between them.
    pub example_leaf: Option<String>,
    pub example_dst: Option<String>,
    /// Equal-cost next hops at the leaf toward that NIC (its uplinks into the plane).
    pub leaf_ecmp_width: Option<usize>,
    /// Equal-cost next hops at the first spine on the way: more than the links to one ToR
    /// means the spine hashes between the ToRs of the destination pair (one plane over a
    /// dual-ToR), where flows for one NIC can collide on one ToR's downlink.
    pub spine_ecmp_width: Option<usize>,
}

pub fn summarize(m: &Model) -> Vec<PlaneSummary> {
    let peer = |p: PortId| m.port(m.port(p).peer).node;
    m.planes
        .iter()
        .map(|pl| {
            let count = |t: Tier| pl.switches.iter().filter(|s| m.node(**s).tier == t).count();
            let leaves: Vec<NodeId> = pl.switches.iter().copied().filter(|s| m.node(*s).tier == Tier::Leaf).collect();
            let nic_ports: Vec<PortId> =
                leaves.iter().flat_map(|l| m.node(*l).ports()).filter(|p| m.node(peer(*p)).is_host()).collect();
            let first = leaves.first().copied();
            // A NIC on this plane not behind the first leaf: the next hops toward it climb.
            let dst = first.and_then(|l0| {
                nic_ports.iter().map(|p| peer(*p)).find(|h| !m.node(*h).ports().any(|hp| peer(hp) == l0))
            });
            let (leaf_w, spine_w) = match (first, dst) {
                (Some(l0), Some(h)) => {
                    let up = m.routing.egress(l0, h);
                    let spine = up.first().map(|p| peer(*p));
                    (Some(up.len()), spine.map(|s| m.routing.egress(s, h).len()))
                }
                _ => (None, None),
            };
            PlaneSummary {
                plane: pl.index,
                leaves: leaves.len(),
                spines: count(Tier::Spine),
                cores: count(Tier::Core),
                nic_ports: nic_ports.len(),
                nic_gbps: nic_ports.iter().map(|p| m.port(*p).speed.gbps()).sum(),
                example_leaf: first.map(|l| m.node(l).name.clone()),
                example_dst: dst.map(|h| m.node(h).name.clone()),
                leaf_ecmp_width: leaf_w,
                spine_ecmp_width: spine_w,
            }
        })
        .collect()
}
