//! Topology builders: leaf-spine, 3-tier fat tree, rail-optimized, explicit.
//!
//! A builder turns a (validated) topology section into a `Graph`: named nodes with a tier and
//! links with a resolved speed, delay and MTU. `crate::model` lays the graph out into ports and
//! routes. Names are stable and readable (`su3-rail5`, `pod1-spine7`, `node12-nic3`) because
//! every report and every lint finding speaks them.

use crate::config::*;
use crate::diag::Diagnostic;
use crate::units::{BitsPerSec, SimTime, PROPAGATION_PS_PER_M};

/// Default port MTU on switches and hosts (jumbo frames, the RoCE norm).
pub const DEFAULT_PORT_MTU: u32 = 9216;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Host,
    Leaf,
    Spine,
    Core,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Host => "host",
            Tier::Leaf => "leaf",
            Tier::Spine => "spine",
            Tier::Core => "core",
        }
    }
    pub fn from_level(l: u32) -> Tier {
        match l {
            0 => Tier::Host,
            1 => Tier::Leaf,
            2 => Tier::Spine,
            _ => Tier::Core,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GNode {
    pub name: String,
    pub tier: Tier,
    /// Switch model name (switches only; `None` takes the default preset).
    pub model: Option<String>,
    /// Hosts: the GPU server this NIC sits in, and its rail.
    pub gpu_node: Option<u32>,
    pub rail: Option<u32>,
    /// Hosts: the name of that GPU server (explicit topologies).
    pub gpu_node_name: Option<String>,
    /// Switches: the plane they belong to (rail-optimized with `dual_tor` or `planes`).
    pub plane: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GLink {
    pub a: u32,
    pub b: u32,
    pub speed: BitsPerSec,
    pub delay: SimTime,
    pub length_m: f64,
    pub mtu: u32,
    /// Key path of the link spec in the fabric file (for diagnostics).
    pub origin: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<GNode>,
    pub links: Vec<GLink>,
    pub kind: &'static str,
    /// Declared oversubscription of the pod-to-core tier, if any.
    pub pod_oversubscription: Option<f64>,
}

impl Graph {
    fn node(&mut self, name: String, tier: Tier, model: Option<String>) -> u32 {
        self.nodes.push(GNode { name, tier, model, gpu_node: None, rail: None, gpu_node_name: None, plane: None });
        (self.nodes.len() - 1) as u32
    }
    fn link(&mut self, a: u32, b: u32, spec: &ResolvedLink) {
        self.links.push(GLink {
            a,
            b,
            speed: spec.speed,
            delay: spec.delay,
            length_m: spec.length_m,
            mtu: spec.mtu,
            origin: spec.origin.clone(),
        });
    }
}

#[derive(Clone, Debug)]
pub(crate) struct ResolvedLink {
    speed: BitsPerSec,
    delay: SimTime,
    length_m: f64,
    mtu: u32,
    origin: String,
}

/// Default cable when neither length nor delay is given: a 3 m in-rack DAC.
const DEFAULT_CABLE_M: f64 = 3.0;

pub(crate) fn resolve_link(
    speed_gbps: f64,
    length_m: Option<f64>,
    delay_ns: Option<f64>,
    mtu: Option<u32>,
    path: &str,
    errs: &mut Vec<Diagnostic>,
) -> Option<ResolvedLink> {
    let mut ok = true;
    if !(speed_gbps.is_finite() && speed_gbps > 0.0 && speed_gbps <= 10_000.0) {
        errs.push(Diagnostic::new(
            format!("{path}.speed_gbps"),
            format!("link speed must be a positive number of Gb/s, got {speed_gbps}"),
            "use the port speed in Gb/s, e.g. `speed_gbps = 400`",
        ));
        ok = false;
    }
    if let Some(l) = length_m {
        if !(l.is_finite() && (0.0..=100_000.0).contains(&l)) {
            errs.push(Diagnostic::new(
                format!("{path}.length_m"),
                format!("cable length must be between 0 and 100000 m, got {l}"),
                "give the cable length in metres, e.g. `length_m = 30`",
            ));
            ok = false;
        }
    }
    if let Some(d) = delay_ns {
        if !(d.is_finite() && (0.0..=1e9).contains(&d)) {
            errs.push(Diagnostic::new(
                format!("{path}.delay_ns"),
                format!("propagation delay must be between 0 and 1e9 ns, got {d}"),
                "give the one-way delay in ns, or give `length_m` instead",
            ));
            ok = false;
        }
    }
    let mtu = mtu.unwrap_or(DEFAULT_PORT_MTU);
    if !(576..=16_384).contains(&mtu) {
        errs.push(Diagnostic::new(
            format!("{path}.mtu"),
            format!("port MTU {mtu} is outside 576..=16384 bytes"),
            "jumbo frames are usually 9000-9216 bytes; RoCE needs at least 1024 + headers",
        ));
        ok = false;
    }
    if !ok {
        return None;
    }
    let (length_m, delay) = match (delay_ns, length_m) {
        (Some(d), l) => (l.unwrap_or(d / 5.0), SimTime::from_ps((d * 1000.0).round() as u64)),
        (None, l) => {
            let l = l.unwrap_or(DEFAULT_CABLE_M);
            (l, SimTime::from_ps((l * PROPAGATION_PS_PER_M as f64).round() as u64))
        }
    };
    Some(ResolvedLink { speed: BitsPerSec::from_gbps_f64(speed_gbps), delay, length_m, mtu, origin: path.to_string() })
}

fn spec(s: &LinkSpec, path: &str, errs: &mut Vec<Diagnostic>) -> Option<ResolvedLink> {
    resolve_link(s.speed_gbps, s.length_m, s.delay_ns, s.mtu, path, errs)
}

fn positive(v: u32, path: &str, what: &str, errs: &mut Vec<Diagnostic>) -> bool {
    if v == 0 {
        errs.push(Diagnostic::new(
            path,
            format!("{what} must be at least 1"),
            format!("set `{}` to a positive count", leaf(path)),
        ));
        false
    } else {
        true
    }
}

fn leaf(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// Refuses fabrics too large to hold: guards memory against a typo like `gpu_nodes = 1e9`.
const MAX_NODES: u64 = 2_000_000;

fn too_big(count: u64, path: &str, errs: &mut Vec<Diagnostic>) -> bool {
    if count > MAX_NODES {
        errs.push(Diagnostic::new(
            path,
            format!("this topology would have {count} nodes, more than rocelab's limit of {MAX_NODES}"),
            "check the counts; a 100k-GPU fabric has about 110k nodes",
        ));
        true
    } else {
        false
    }
}

/// Refuses link counts too large to hold (e.g. `links_per_leaf_spine = 1000000000`).
const MAX_LINKS: u128 = 8_000_000;

/// Refuses routing tables too large to hold (switches × destination leaves), from the counts
/// alone, before a single node is built; the loader checks the built graph again.
fn too_many_cells(switches: u128, leaves: u128, path: &str, errs: &mut Vec<Diagnostic>) -> bool {
    let cells = switches * leaves;
    let max = crate::routing::MAX_TABLE_CELLS as u128;
    if cells > max {
        errs.push(Diagnostic::new(
            path,
            format!(
                "routing tables would need {cells} cells ({switches} switches x {leaves} destination leaves), more \
                 than rocelab's limit of {max}"
            ),
            "check the counts; a 100k-GPU rail-optimized fabric needs about 15 million",
        ));
        true
    } else {
        false
    }
}

fn too_many_links(count: u128, path: &str, errs: &mut Vec<Diagnostic>) -> bool {
    if count > MAX_LINKS {
        errs.push(Diagnostic::new(
            path,
            format!("this topology would have {count} links, more than rocelab's limit of {MAX_LINKS}"),
            "check the per-leaf link counts; a 100k-GPU fabric has about 300k links",
        ));
        true
    } else {
        false
    }
}

pub fn build(t: &TopologyConfig, errs: &mut Vec<Diagnostic>) -> Option<Graph> {
    let present = [t.leaf_spine.is_some(), t.fat_tree.is_some(), t.rail_optimized.is_some(), t.explicit.is_some()];
    let n = present.iter().filter(|p| **p).count();
    if n != 1 {
        errs.push(Diagnostic::new(
            "topology",
            if n == 0 {
                "no topology given".to_string()
            } else {
                "more than one topology kind given".to_string()
            },
            "give exactly one of [topology.leaf_spine], [topology.fat_tree], [topology.rail_optimized] or [topology.explicit]",
        ));
        return None;
    }
    if let Some(c) = &t.leaf_spine {
        return leaf_spine(c, errs);
    }
    if let Some(c) = &t.fat_tree {
        return fat_tree(c, errs);
    }
    if let Some(c) = &t.rail_optimized {
        return rail_optimized(c, errs);
    }
    explicit(t.explicit.as_ref()?, errs)
}

fn leaf_spine(c: &LeafSpineConfig, errs: &mut Vec<Diagnostic>) -> Option<Graph> {
    let p = "topology.leaf_spine";
    let e0 = errs.len();
    positive(c.leaves, &format!("{p}.leaves"), "leaves", errs);
    positive(c.spines, &format!("{p}.spines"), "spines", errs);
    positive(c.hosts_per_leaf, &format!("{p}.hosts_per_leaf"), "hosts_per_leaf", errs);
    let uplinks = c.uplinks_per_leaf.unwrap_or(c.spines);
    if c.spines > 0 && (uplinks == 0 || !uplinks.is_multiple_of(c.spines)) {
        errs.push(Diagnostic::new(
            format!("{p}.uplinks_per_leaf"),
            format!("{uplinks} uplinks per leaf cannot be spread evenly over {} spines", c.spines),
            format!("use a multiple of {} (e.g. {})", c.spines, c.spines * (uplinks / c.spines.max(1)).max(1)),
        ));
    }
    let host = spec(&c.host_link, &format!("{p}.host_link"), errs);
    let fab = spec(&c.fabric_link, &format!("{p}.fabric_link"), errs);
    let total = c.leaves as u64 * (1 + c.hosts_per_leaf as u64) + c.spines as u64;
    let links = c.leaves as u128 * (uplinks as u128 + c.hosts_per_leaf as u128);
    if errs.len() > e0
        || too_big(total, p, errs)
        || too_many_links(links, p, errs)
        || too_many_cells(c.leaves as u128 + c.spines as u128, c.leaves as u128, p, errs)
    {
        return None;
    }
    let (host, fab) = (host?, fab?);
    let mut g = Graph { kind: "leaf-spine", ..Default::default() };
    let spines: Vec<u32> =
        (0..c.spines).map(|s| g.node(format!("spine{s}"), Tier::Spine, c.spine_model.clone())).collect();
    let per = uplinks / c.spines;
    let mut h = 0;
    for l in 0..c.leaves {
        let leaf = g.node(format!("leaf{l}"), Tier::Leaf, c.leaf_model.clone());
        for &s in &spines {
            for _ in 0..per {
                g.link(leaf, s, &fab);
            }
        }
        for _ in 0..c.hosts_per_leaf {
            let hn = g.node(format!("host{h}"), Tier::Host, None);
            g.link(hn, leaf, &host);
            h += 1;
        }
    }
    Some(g)
}

fn fat_tree(c: &FatTreeConfig, errs: &mut Vec<Diagnostic>) -> Option<Graph> {
    let p = "topology.fat_tree";
    let e0 = errs.len();
    if c.k < 2 || !c.k.is_multiple_of(2) {
        errs.push(Diagnostic::new(
            format!("{p}.k"),
            format!("a k-ary fat tree needs an even k >= 2, got {}", c.k),
            "k is the switch radix: 4, 8, 16, 32, 64 ...",
        ));
    }
    let link = spec(&c.link, &format!("{p}.link"), errs);
    let host = c.host_link.as_ref().map(|s| spec(s, &format!("{p}.host_link"), errs));
    let core = c.core_link.as_ref().map(|s| spec(s, &format!("{p}.core_link"), errs));
    let k = c.k as u64;
    // 5k²/4 switches; every edge switch (k²/2 of them) is a destination leaf.
    if errs.len() > e0
        || too_big(k * k * k / 4 + 5 * k * k / 4, p, errs)
        || too_many_cells(5 * k as u128 * k as u128 / 4, k as u128 * k as u128 / 2, p, errs)
    {
        return None;
    }
    let link = link?;
    let host = host.unwrap_or(Some(link.clone()))?;
    let core = core.unwrap_or(Some(link.clone()))?;
    let half = c.k / 2;
    let mut g = Graph { kind: "fat-tree", ..Default::default() };
    let m = &c.switch_model;
    let cores: Vec<u32> = (0..half * half).map(|i| g.node(format!("core{i}"), Tier::Core, m.clone())).collect();
    let mut h = 0;
    for pod in 0..c.k {
        let aggs: Vec<u32> = (0..half).map(|i| g.node(format!("agg{pod}-{i}"), Tier::Spine, m.clone())).collect();
        for (i, &a) in aggs.iter().enumerate() {
            // aggregation switch i of each pod connects to cores i*k/2 .. (i+1)*k/2
            for j in 0..half {
                g.link(a, cores[i * half as usize + j as usize], &core);
            }
        }
        for e in 0..half {
            let edge = g.node(format!("edge{pod}-{e}"), Tier::Leaf, m.clone());
            for &a in &aggs {
                g.link(edge, a, &link);
            }
            for _ in 0..half {
                let hn = g.node(format!("host{h}"), Tier::Host, None);
                g.link(hn, edge, &host);
                h += 1;
            }
        }
    }
    Some(g)
}

fn rail_optimized(c: &RailOptimizedConfig, errs: &mut Vec<Diagnostic>) -> Option<Graph> {
    let p = "topology.rail_optimized";
    let e0 = errs.len();
    positive(c.gpu_nodes, &format!("{p}.gpu_nodes"), "gpu_nodes", errs);
    positive(c.rails, &format!("{p}.rails"), "rails", errs);
    positive(c.nodes_per_su, &format!("{p}.nodes_per_su"), "nodes_per_su", errs);
    if c.nodes_per_su > 0 && !c.gpu_nodes.is_multiple_of(c.nodes_per_su) {
        errs.push(Diagnostic::new(
            format!("{p}.nodes_per_su"),
            format!("{} GPU nodes do not divide into scalable units of {}", c.gpu_nodes, c.nodes_per_su),
            format!(
                "make gpu_nodes a multiple of nodes_per_su (e.g. gpu_nodes = {})",
                (c.gpu_nodes as u64).div_ceil(c.nodes_per_su.max(1) as u64) * c.nodes_per_su as u64
            ),
        ));
    }
    let sus = c.gpu_nodes.checked_div(c.nodes_per_su).unwrap_or(0);
    let sus_per_pod = c.sus_per_pod.unwrap_or(sus.max(1));
    if sus_per_pod == 0 || (sus > 0 && !sus.is_multiple_of(sus_per_pod)) {
        errs.push(Diagnostic::new(
            format!("{p}.sus_per_pod"),
            format!("{sus} scalable units do not divide into pods of {sus_per_pod}"),
            "choose sus_per_pod so that gpu_nodes / nodes_per_su is a multiple of it",
        ));
    }
    let shape = crate::planes::resolve(c, p, errs);
    let sh = shape.unwrap_or(crate::planes::NicShape { ports: 1, tors: 1, planes: 1, dual_tor: false });
    // Default: as many spines per plane as a leaf has downlinks, which makes the leaf tier 1:1.
    let spines = c.spines_per_pod.unwrap_or(c.nodes_per_su.saturating_mul(sh.ports_per_tor()));
    positive(spines, &format!("{p}.spines_per_pod"), "spines_per_pod", errs);
    let lps = c.links_per_leaf_spine.unwrap_or(1);
    positive(lps, &format!("{p}.links_per_leaf_spine"), "links_per_leaf_spine", errs);
    let oversub = c.pod_oversubscription.unwrap_or(1.0);
    if !(oversub.is_finite() && (1.0..=64.0).contains(&oversub)) {
        errs.push(Diagnostic::new(
            format!("{p}.pod_oversubscription"),
            format!("oversubscription must be a ratio between 1 and 64 (down:up), got {oversub}"),
            "write 7.0 for a 1:7 pod-to-core tier, 1.0 for full bisection",
        ));
    }
    let host = spec(&c.host_link, &format!("{p}.host_link"), errs);
    let leafl = spec(&c.leaf_link, &format!("{p}.leaf_link"), errs);
    let spinel = c.spine_link.as_ref().map(|s| spec(s, &format!("{p}.spine_link"), errs));
    let (tors, planes) = (sh.tors as u64, sh.planes as u64);
    let total =
        c.gpu_nodes as u64 * c.rails as u64 + sus as u64 * c.rails as u64 * tors + spines as u64 * sus as u64 * planes;
    if errs.len() > e0 || shape.is_none() || too_big(total, p, errs) {
        return None;
    }
    let (host, leafl) = (host?, leafl?);
    let spinel = spinel.unwrap_or(Some(leafl.clone()))?;
    let pods = sus / sus_per_pod;
    let mut g = Graph { kind: "rail-optimized", ..Default::default() };
    // Spine downlinks: one bundle of `lps` links from each leaf of the pod in its plane.
    let spine_down = sus_per_pod as u64 * c.rails as u64 * (tors / planes) * lps as u64;
    let spine_up = if pods > 1 { ((spine_down as f64 / oversub).ceil() as u64).max(1) } else { 0 };
    let links = c.gpu_nodes as u128 * c.rails as u128 * sh.ports as u128
        + sus as u128 * c.rails as u128 * tors as u128 * spines as u128 * lps as u128
        + pods as u128 * planes as u128 * spines as u128 * spine_up as u128;
    if too_many_links(links, p, errs) {
        return None;
    }
    let cores_n = if pods > 1 { c.core_switches.unwrap_or(spine_up as u32) } else { 0 };
    if pods > 1 {
        if cores_n == 0 || spine_up % cores_n as u64 != 0 {
            errs.push(Diagnostic::new(
                format!("{p}.core_switches"),
                format!("{spine_up} uplinks per spine cannot be spread evenly over {cores_n} core switches"),
                format!("use a divisor of {spine_up}, or leave core_switches out"),
            ));
            return None;
        }
        g.pod_oversubscription = Some(spine_down as f64 / spine_up as f64);
    }
    // Every NIC attaches to the ToRs of its rail and SU: those sets are the destination groups.
    let groups = sus as u128 * c.rails as u128;
    let switches = groups * tors as u128 + planes as u128 * (pods as u128 * spines as u128 + cores_n as u128);
    if too_many_cells(switches, groups, p, errs) {
        return None;
    }
    // Plain fabrics keep their names and tag no plane; dual-ToR and multi-plane ones name the
    // ToR and plane of each switch and tag it (`rocelab topo` reports per plane).
    let tag = !sh.is_plain();
    let plane_of = |pl: u64| if tag { Some(pl as u32) } else { None };
    let mut cores: Vec<Vec<u32>> = Vec::new();
    for pl in 0..planes {
        let name = |i| if planes > 1 { format!("plane{pl}-core{i}") } else { format!("core{i}") };
        let ids: Vec<u32> = (0..cores_n).map(|i| g.node(name(i), Tier::Core, c.core_model.clone())).collect();
        for &id in &ids {
            g.nodes[id as usize].plane = plane_of(pl);
        }
        cores.push(ids);
    }
    let mut node = 0u32;
    for pod in 0..pods {
        let mut plane_spines: Vec<Vec<u32>> = Vec::new();
        for pl in 0..planes {
            let name =
                |s| if planes > 1 { format!("pod{pod}-plane{pl}-spine{s}") } else { format!("pod{pod}-spine{s}") };
            let ids: Vec<u32> = (0..spines).map(|s| g.node(name(s), Tier::Spine, c.spine_model.clone())).collect();
            for &id in &ids {
                g.nodes[id as usize].plane = plane_of(pl);
            }
            if pods > 1 {
                let per_core = spine_up / cores_n as u64;
                for &s in &ids {
                    for &cn in &cores[pl as usize] {
                        for _ in 0..per_core {
                            g.link(s, cn, &spinel);
                        }
                    }
                }
            }
            plane_spines.push(ids);
        }
        for su_in_pod in 0..sus_per_pod {
            let su = pod * sus_per_pod + su_in_pod;
            // leaves[r][t]: ToR t of rail r; no link joins the ToRs of a pair (HPN's non-stacked
            // dual-ToR: each ToR runs on its own, the NIC's bond spans both).
            let mut leaves: Vec<Vec<u32>> = Vec::new();
            for r in 0..c.rails {
                let mut pair = Vec::new();
                for t in 0..sh.tors {
                    let name = if sh.tors > 1 { format!("su{su}-rail{r}-tor{t}") } else { format!("su{su}-rail{r}") };
                    let l = g.node(name, Tier::Leaf, c.leaf_model.clone());
                    let pl = sh.plane_of_tor(t);
                    g.nodes[l as usize].plane = plane_of(pl as u64);
                    for &s in &plane_spines[pl as usize] {
                        for _ in 0..lps {
                            g.link(l, s, &leafl);
                        }
                    }
                    pair.push(l);
                }
                leaves.push(pair);
            }
            for _ in 0..c.nodes_per_su {
                for (r, pair) in leaves.iter().enumerate() {
                    let hn = g.node(format!("node{node}-nic{r}"), Tier::Host, None);
                    g.nodes[hn as usize].gpu_node = Some(node);
                    g.nodes[hn as usize].rail = Some(r as u32);
                    for k in 0..sh.ports {
                        g.link(hn, pair[sh.tor_of_port(k) as usize], &host);
                    }
                }
                node += 1;
            }
        }
    }
    Some(g)
}

/// Rails per GPU node an explicit topology may number (8 is the common build).
const MAX_RAILS: u32 = 1024;

fn explicit(c: &ExplicitConfig, errs: &mut Vec<Diagnostic>) -> Option<Graph> {
    let p = "topology.explicit";
    let e0 = errs.len();
    let mut g = Graph { kind: "explicit", ..Default::default() };
    let mut by_name = std::collections::HashMap::new();
    let mut gpu_nodes: std::collections::BTreeMap<String, u32> = Default::default();
    for (i, n) in c.node.iter().enumerate() {
        let np = format!("{p}.node[{i}]");
        if n.name.is_empty() || n.name.chars().any(|ch| ch.is_whitespace() || ch == '"') {
            errs.push(Diagnostic::new(
                format!("{np}.name"),
                format!("node name {:?} is empty or has spaces/quotes", n.name),
                "use names like `leaf1`, `gpu-a03-nic2`",
            ));
            continue;
        }
        // Check before inserting: an overwritten entry would point past the last node.
        if by_name.contains_key(&n.name) {
            errs.push(Diagnostic::new(
                format!("{np}.name"),
                format!("node `{}` is declared twice", n.name),
                "give every node a unique name",
            ));
            continue;
        }
        by_name.insert(n.name.clone(), g.nodes.len() as u32);
        let tier = if n.kind == NodeKindConfig::Host { Tier::Host } else { Tier::Leaf };
        let id = g.node(n.name.clone(), tier, n.model.clone());
        if n.kind == NodeKindConfig::Host {
            if let Some(gn) = &n.gpu_node {
                let next = gpu_nodes.len() as u32;
                let idx = *gpu_nodes.entry(gn.clone()).or_insert(next);
                g.nodes[id as usize].gpu_node = Some(idx);
                g.nodes[id as usize].gpu_node_name = Some(gn.clone());
            }
            if let Some(r) = n.rail.filter(|r| *r >= MAX_RAILS) {
                errs.push(Diagnostic::new(
                    format!("{np}.rail"),
                    format!("rail {r} is too large: rails are numbered 0, 1, 2 ... by NIC index"),
                    format!("use the NIC's index in its GPU node (below {MAX_RAILS})"),
                ));
            }
            g.nodes[id as usize].rail = n.rail;
        } else if n.gpu_node.is_some() || n.rail.is_some() {
            errs.push(Diagnostic::new(
                np.clone(),
                format!("switch `{}` has `gpu_node`/`rail`, which only hosts (NICs) have", n.name),
                "remove them, or set `kind = \"host\"`",
            ));
        }
    }
    for (i, l) in c.link.iter().enumerate() {
        let lp = format!("{p}.link[{i}]");
        let a = by_name.get(&l.a).copied();
        let b = by_name.get(&l.b).copied();
        for (end, name, id) in [("a", &l.a, a), ("b", &l.b, b)] {
            if id.is_none() {
                let near = closest(name, by_name.keys());
                errs.push(Diagnostic::new(
                    format!("{lp}.{end}"),
                    format!("link end `{name}` is not a declared node"),
                    match near {
                        Some(n) => format!("did you mean `{n}`? Otherwise declare it in [[topology.explicit.node]]"),
                        None => "declare it in [[topology.explicit.node]]".to_string(),
                    },
                ));
            }
        }
        // A Thunderbolt cable sets its own rate and joins two hosts (crate::thunderbolt).
        let tb = match l.link.as_deref() {
            None => None,
            Some(name) => match crate::thunderbolt::rate_gbps(name) {
                Some(_) if l.speed_gbps != 0.0 => {
                    errs.push(Diagnostic::new(
                        format!("{lp}.speed_gbps"),
                        format!("speed_gbps = {} beside link = \"{name}\"", l.speed_gbps),
                        "drop speed_gbps: the preset sets the rate",
                    ));
                    continue;
                }
                Some(rate) => Some(rate),
                None => {
                    errs.push(Diagnostic::new(
                        format!("{lp}.link"),
                        format!("unknown link preset `{name}`"),
                        format!("use {}, or give speed_gbps", crate::thunderbolt::NAMES.join(" or ")),
                    ));
                    continue;
                }
            },
        };
        let r = resolve_link(tb.unwrap_or(l.speed_gbps), l.length_m, l.delay_ns, l.mtu, &lp, errs);
        if let (Some(a), Some(b), Some(r)) = (a, b, r) {
            if let Some(_rate) = tb {
                if g.nodes[a as usize].tier != Tier::Host || g.nodes[b as usize].tier != Tier::Host {
                    errs.push(Diagnostic::new(
                        format!("{lp}.link"),
                        "a Thunderbolt link joins two hosts".to_string(),
                        "connect two hosts with it, or give a switch link speed_gbps instead",
                    ));
                    continue;
                }
                let br = g.node(crate::thunderbolt::bridge_name(&l.a, &l.b), Tier::Leaf, None);
                g.link(a, br, &r);
                g.link(br, b, &r);
                continue;
            }
            if a == b {
                errs.push(Diagnostic::new(
                    lp.clone(),
                    format!("link connects `{}` to itself", l.a),
                    "a link joins two different nodes",
                ));
                continue;
            }
            if g.nodes[a as usize].tier == Tier::Host && g.nodes[b as usize].tier == Tier::Host {
                errs.push(Diagnostic::new(
                    lp.clone(),
                    format!("link joins two hosts (`{}`, `{}`)", l.a, l.b),
                    "hosts attach to switches; put a switch between them",
                ));
                continue;
            }
            g.link(a, b, &r);
        }
    }
    if g.nodes.is_empty() {
        errs.push(Diagnostic::new(p, "explicit topology has no nodes", "add [[topology.explicit.node]] tables"));
    }
    if errs.len() > e0 {
        return None;
    }
    assign_tiers(&mut g);
    Some(g)
}

/// Switch tiers of an explicit topology: 1 + hop distance to the nearest host.
fn assign_tiers(g: &mut Graph) {
    let n = g.nodes.len();
    let mut adj = vec![Vec::new(); n];
    for l in &g.links {
        adj[l.a as usize].push(l.b);
        adj[l.b as usize].push(l.a);
    }
    let mut dist = vec![u32::MAX; n];
    let mut q = std::collections::VecDeque::new();
    for (i, nd) in g.nodes.iter().enumerate() {
        if nd.tier == Tier::Host {
            dist[i] = 0;
            q.push_back(i as u32);
        }
    }
    while let Some(u) = q.pop_front() {
        for &v in &adj[u as usize] {
            if dist[v as usize] == u32::MAX {
                dist[v as usize] = dist[u as usize] + 1;
                q.push_back(v);
            }
        }
    }
    for (i, nd) in g.nodes.iter_mut().enumerate() {
        if nd.tier != Tier::Host {
            nd.tier = Tier::from_level(if dist[i] == u32::MAX { 1 } else { dist[i] });
        }
    }
}

/// The candidate with the smallest edit distance, if it is close enough to be a typo.
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a String>) -> Option<&'a String> {
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fat_tree_counts() {
        let c = FatTreeConfig {
            k: 4,
            link: LinkSpec::new(100.0, 2.0),
            host_link: None,
            core_link: None,
            switch_model: None,
        };
        let g = fat_tree(&c, &mut vec![]).unwrap();
        let count = |t| g.nodes.iter().filter(|n| n.tier == t).count();
        assert_eq!(count(Tier::Host), 16);
        assert_eq!(count(Tier::Leaf), 8);
        assert_eq!(count(Tier::Spine), 8);
        assert_eq!(count(Tier::Core), 4);
        // k^3/4 host links + k^3/4 edge-agg + k^3/4 agg-core
        assert_eq!(g.links.len(), 48);
    }

    #[test]
    fn edit_distance_finds_typos() {
        let names = ["leaf1".to_string(), "spine1".to_string()];
        assert_eq!(closest("lef1", names.iter()), Some(&names[0]));
        assert_eq!(closest("zzzzzz", names.iter()), None);
    }
}
