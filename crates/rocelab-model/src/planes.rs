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

#[cfg(test)]
mod tests {
    use crate::model::Model;
    use crate::topology::Tier;

    fn fabric(extra: &str) -> String {
        format!(
            "[fabric]\nname = \"hpn\"\n[topology.rail_optimized]\ngpu_nodes = 8\nrails = 2\nnodes_per_su = 4\n{extra}\n\
             host_link = {{ speed_gbps = 200, length_m = 3 }}\nleaf_link = {{ speed_gbps = 400, length_m = 20 }}\n\
             spine_link = {{ speed_gbps = 400, length_m = 200 }}\n"
        )
    }

    fn load(extra: &str) -> Model {
        let t = fabric(extra);
        crate::load_str("hpn.toml", &t).unwrap_or_else(|e| panic!("{e}\n{t}"))
    }

    /// The load error's text (file:line:col, message, hint).
    fn refused(extra: &str) -> String {
        match crate::load_str("hpn.toml", &fabric(extra)) {
            Ok(_) => panic!("`{extra}` loaded"),
            Err(e) => e.to_string(),
        }
    }

    fn name(m: &Model, n: crate::model::NodeId) -> &str {
        &m.node(n).name
    }

    fn peers(m: &Model, n: crate::model::NodeId) -> Vec<crate::model::NodeId> {
        m.node(n).ports().map(|p| m.port(m.port(p).peer).node).collect()
    }

    #[test]
    fn dual_tor_cables_each_nic_to_both_tors_of_its_pair_and_never_the_pair_together() {
        let m = load("dual_tor = true");
        let count = |t| m.nodes.iter().filter(|n| n.tier == t).count();
        // 2 SUs x 2 rails x a ToR pair; 4 servers x 2 ports per ToR down, so 4 spines make it 1:1.
        assert_eq!((count(Tier::Host), count(Tier::Leaf), count(Tier::Spine)), (16, 8, 4));
        assert_eq!(m.links.len(), 16 * 2 + 8 * 4);
        for h in m.hosts() {
            let tors: Vec<&str> = peers(&m, h).into_iter().map(|l| name(&m, l)).collect();
            let n: u32 = name(&m, h)[4..].split('-').next().unwrap().parse().unwrap();
            let r = m.node(h).rail().unwrap();
            let su = n / 4;
            assert_eq!(tors, [format!("su{su}-rail{r}-tor0"), format!("su{su}-rail{r}-tor1")], "{}", name(&m, h));
        }
        // No stacking link: a leaf's neighbours are hosts and spines only.
        for l in m.switches().filter(|s| m.node(*s).tier == Tier::Leaf) {
            assert!(peers(&m, l).iter().all(|p| m.node(*p).tier != Tier::Leaf), "{} has a peer leaf", name(&m, l));
        }
        // One plane: the spine toward a NIC in the other SU hashes between both ToRs of its pair.
        let s = crate::summary::summarize(&m);
        assert_eq!(s.nic_ports.as_ref().map(|n| (n.ports_per_nic, n.dual_tor)), Some((2, true)));
        assert_eq!(s.planes.len(), 1);
        assert_eq!((s.planes[0].leaf_ecmp_width, s.planes[0].spine_ecmp_width), (Some(4), Some(2)));
        assert_eq!((s.planes[0].nic_ports, s.planes[0].nic_gbps), (32, 6400.0));
    }

    #[test]
    fn each_planes_spines_are_reached_only_from_its_ports() {
        let m = load("dual_tor = true\nplanes = 2\nlinks_per_leaf_spine = 2");
        let plane_of = |n| m.planes.iter().find(|p| p.switches.contains(&n)).map(|p| p.index);
        assert_eq!(m.planes.len(), 2);
        // Port k of every NIC lands on plane k.
        for h in m.hosts() {
            let ps: Vec<Option<u32>> = peers(&m, h).into_iter().map(plane_of).collect();
            assert_eq!(ps, [Some(0), Some(1)], "{}", name(&m, h));
        }
        // Every switch's switch neighbours are in its own plane: the planes never meet.
        for s in m.switches() {
            let mine = plane_of(s).expect("every switch has a plane");
            for p in peers(&m, s).into_iter().filter(|p| !m.node(*p).is_host()) {
                assert_eq!(plane_of(p), Some(mine), "{} - {}", name(&m, s), name(&m, p));
            }
        }
        // 4 spines per plane (a ToR has 4 downlinks), each leaf 2 links to each: width 8 up;
        // down, only the 2 links to the one ToR of the plane.
        let s = crate::summary::summarize(&m);
        for pl in &s.planes {
            assert_eq!((pl.leaves, pl.spines, pl.cores, pl.nic_ports), (4, 4, 0, 16), "{pl:?}");
            assert_eq!((pl.leaf_ecmp_width, pl.spine_ecmp_width), (Some(8), Some(2)), "{pl:?}");
        }
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"spine_ecmp_width\":2") && json.contains("\"planes\":["), "{json}");
        let text = crate::summary::render_text(&s);
        assert!(text.contains("planes: 2") && text.contains("plane 1: 4 leaves, 4 spines"), "{text}");
    }

    #[test]
    fn planes_keep_their_own_cores_across_pods() {
        let m = load("dual_tor = true\nplanes = 2\nsus_per_pod = 1\npod_oversubscription = 2.0");
        let plane_of = |n| m.planes.iter().find(|p| p.switches.contains(&n)).map(|p| p.index);
        // Per pod and plane: 2 ToRs of 2 rails give each spine 2 downlinks, 1 uplink at 2:1;
        // 1 core per plane takes one link from each of the plane's 8 spines.
        let cores: Vec<_> = m.switches().filter(|s| m.node(*s).tier == Tier::Core).collect();
        assert_eq!(cores.len(), 2);
        for c in cores {
            let ps = peers(&m, c);
            assert_eq!(ps.len(), 8);
            assert!(ps.iter().all(|p| plane_of(*p) == plane_of(c)), "{}", name(&m, c));
        }
        // Across pods, plane 0 reaches the other pod's NIC up through its own spine and core
        // and down to that NIC's plane-0 ToR: 4 switch hops from the leaf.
        let leaf = m.node_by_name("su0-rail0-tor0").unwrap();
        let dst = m.node_by_name("node7-nic1").unwrap();
        assert_eq!(m.routing.distance(leaf, dst), 4);
        let down = m.routing.egress(m.node_by_name("plane0-core0").unwrap(), dst);
        assert!(!down.is_empty() && down.iter().all(|p| plane_of(m.port(m.port(*p).peer).node) == Some(0)));
    }

    #[test]
    fn plain_fabrics_are_unchanged() {
        let m = load("");
        assert!(m.planes.is_empty());
        assert!(m.node_by_name("su1-rail1").is_some() && m.node_by_name("pod0-spine3").is_some());
        let s = crate::summary::summarize(&m);
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("planes") && !json.contains("nic_ports"), "{json}");
        // Several ports to one ToR (no dual_tor, one plane): a bond to one switch, 8 spines for 1:1.
        let m = load("ports_per_nic = 2");
        assert_eq!(m.planes.len(), 1);
        assert_eq!(m.switches().filter(|s| m.node(*s).tier == Tier::Spine).count(), 8);
        assert!(m.hosts().all(|h| m.node(h).num_ports == 2));
    }

    #[test]
    fn mistakes_are_refused_at_load_with_the_key_and_a_fix() {
        let e = refused("ports_per_nic = 1\ndual_tor = true");
        assert!(e.contains("hpn.toml:8:") && e.contains("dual_tor needs a dual-port NIC"), "{e}");
        let e = refused("dual_tor = true\nplanes = 3");
        assert!(e.contains("hpn.toml:8:") && e.contains("3 planes do not divide the NIC's 2 port(s)"), "{e}");
        assert!(e.contains("1, 2"), "{e}");
        let e = refused("ports_per_nic = 1\nplanes = 2");
        assert!(e.contains("single-port NIC is on one plane"), "{e}");
        let e = refused("planes = 0");
        assert!(e.contains("planes must be between 1 and 8"), "{e}");
        let e = refused("ports_per_nic = 9");
        assert!(e.contains("a NIC has 1 to 8 ports"), "{e}");
    }
}
