//! What `rocelab topo` reports: the figures a network engineer checks first.
//!
//! * counts of nodes, ports and links per tier, link speeds;
//! * oversubscription per tier = capacity of the tier's downlinks / its uplinks;
//! * bisection bandwidth by tier cuts: splitting hosts into two halves of whole subtrees, the
//!   traffic between halves must climb above some tier, so the bisection is
//!   min over tiers of (uplink capacity of the tier) / 2. Exact for symmetric Clos fabrics; an
//!   upper bound elsewhere (the true minimum bisection of an arbitrary graph is NP-hard);
//! * rails and their members;
//! * path diversity: the number of equal-cost shortest paths between representative host
//!   pairs (same leaf, same rail across leaves or pods, different rails), and the diameter.

use crate::model::{Model, NodeId};
use crate::routing::UNREACHABLE;
use crate::topology::Tier;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TierSummary {
    pub tier: &'static str,
    pub nodes: usize,
    pub ports: usize,
    /// Total capacity of links toward the tier below / above, in Gb/s.
    pub down_gbps: f64,
    pub up_gbps: f64,
    /// down:up (1.0 is non-blocking); `None` for the top tier and hosts.
    pub oversubscription: Option<f64>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RailSummary {
    pub rail: u32,
    pub nics: usize,
    pub leaves: Vec<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PathClass {
    /// e.g. `same leaf`, `same rail, other leaf`, `different rails`.
    pub relation: String,
    pub example_src: String,
    pub example_dst: String,
    /// Links on the path.
    pub hops: u32,
    /// Equal-cost shortest paths (parallel links count separately).
    pub ecmp_paths: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TopoSummary {
    pub name: String,
    pub kind: &'static str,
    pub fabric_hash: String,
    /// `infiniband` on an IB fabric (absent on RoCE, the default, so RoCE output is unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_layer: Option<String>,
    pub hosts: usize,
    pub gpu_nodes: usize,
    pub switches: usize,
    pub links: usize,
    /// (speed in Gb/s, link count), ascending by speed.
    pub links_by_speed: Vec<(f64, usize)>,
    pub tiers: Vec<TierSummary>,
    pub bisection_gbps: f64,
    /// Bisection divided by half the hosts' injection bandwidth (1.0 = full bisection).
    pub bisection_ratio: f64,
    pub rails: Vec<RailSummary>,
    pub paths: Vec<PathClass>,
    pub diameter_hops: u32,
    pub ecmp_groups: usize,
    /// Ports per NIC and whether they go to a ToR pair (rail-optimized `ports_per_nic`,
    /// `dual_tor`); absent on single-port fabrics, so their output is unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic_ports: Option<NicPorts>,
    /// Per plane: its switches, NIC ports and ECMP widths (dual-ToR or multi-plane fabrics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub planes: Vec<crate::planes::PlaneSummary>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct NicPorts {
    pub ports_per_nic: u32,
    pub dual_tor: bool,
}

pub fn summarize(m: &Model) -> TopoSummary {
    let tier_of = |n: NodeId| m.node(n).tier;
    let mut tiers: BTreeMap<Tier, TierSummary> = BTreeMap::new();
    for n in &m.nodes {
        let t = tiers.entry(n.tier).or_insert(TierSummary {
            tier: n.tier.name(),
            nodes: 0,
            ports: 0,
            down_gbps: 0.0,
            up_gbps: 0.0,
            oversubscription: None,
        });
        t.nodes += 1;
        t.ports += n.num_ports as usize;
        for p in n.ports() {
            let port = m.port(p);
            let peer_tier = tier_of(m.port(port.peer).node);
            let g = port.speed.gbps();
            if peer_tier > n.tier {
                t.up_gbps += g;
            } else if peer_tier < n.tier {
                t.down_gbps += g;
            }
        }
    }
    for t in tiers.values_mut() {
        if t.up_gbps > 0.0 && t.down_gbps > 0.0 {
            t.oversubscription = Some(t.down_gbps / t.up_gbps);
        }
    }
    let host_gbps = tiers.get(&Tier::Host).map(|t| t.up_gbps).unwrap_or(0.0);
    let bisection_gbps =
        tiers.values().filter(|t| t.up_gbps > 0.0).map(|t| t.up_gbps / 2.0).fold(f64::INFINITY, f64::min);
    let bisection_gbps = if bisection_gbps.is_finite() { bisection_gbps } else { 0.0 };
    let mut by_speed: BTreeMap<u64, usize> = BTreeMap::new();
    for l in &m.links {
        *by_speed.entry(m.port(l.a).speed.0).or_default() += 1;
    }
    let gpu_nodes: std::collections::BTreeSet<u32> = m
        .nodes
        .iter()
        .filter_map(|n| match n.role {
            crate::model::Role::Host { gpu_node, .. } => gpu_node,
            _ => None,
        })
        .collect();
    let hosts = m.hosts().count();
    TopoSummary {
        name: m.name.clone(),
        kind: m.kind,
        fabric_hash: format!("{:016x}", m.fabric_hash),
        link_layer: m.ib.as_ref().map(|ib| {
            format!(
                "infiniband: {} data VLs, {} B per VL buffer, {} routing{}",
                ib.data_vls,
                ib.vl_buffer_bytes,
                if ib.routing == crate::config::IbRoutingKind::Adaptive { "adaptive" } else { "static" },
                if ib.cc.is_some() { ", congestion control on" } else { "" }
            )
        }),
        hosts,
        gpu_nodes: gpu_nodes.len(),
        switches: m.nodes.len() - hosts,
        links: m.links.len(),
        links_by_speed: by_speed.into_iter().map(|(s, c)| (s as f64 / 1e9, c)).collect(),
        tiers: tiers.into_values().collect(),
        bisection_gbps,
        bisection_ratio: if host_gbps > 0.0 { bisection_gbps / (host_gbps / 2.0) } else { 0.0 },
        rails: m
            .rails
            .iter()
            .map(|r| RailSummary {
                rail: r.index,
                nics: r.hosts.len(),
                leaves: r.leaves.iter().map(|l| m.node(*l).name.clone()).collect(),
            })
            .collect(),
        paths: path_classes(m),
        diameter_hops: diameter(m),
        ecmp_groups: m.routing.ecmp_groups.len(),
        nic_ports: m.config.topology.rail_optimized.as_ref().and_then(|c| {
            let dual_tor = c.dual_tor.unwrap_or(false);
            let ports = c.ports_per_nic.unwrap_or(if dual_tor { 2 } else { c.planes.unwrap_or(1) });
            (ports > 1).then_some(NicPorts { ports_per_nic: ports, dual_tor })
        }),
        planes: crate::planes::summarize(m),
    }
}

/// Longest shortest path between two hosts, in links.
fn diameter(m: &Model) -> u32 {
    let r = &m.routing;
    let ng = r.groups.len();
    let mut worst = 0u32;
    for g in 0..ng {
        for other in &r.groups {
            let d = r.dist[r.switch_row[other[0].idx()] as usize * ng + g];
            if d != UNREACHABLE {
                worst = worst.max(d as u32 + 2);
            }
        }
    }
    worst
}

/// Number of equal-cost shortest paths from host `a` to host `b`.
pub fn ecmp_paths(m: &Model, a: NodeId, b: NodeId) -> u64 {
    // Every next hop is one hop closer to `b`, so counting switches in increasing distance
    // finds each one's successors already counted: no recursion, whatever the path length.
    let peer = |p: crate::model::PortId| m.port(m.port(p).peer).node;
    let mut order: Vec<NodeId> = Vec::new();
    let mut seen: std::collections::BTreeSet<NodeId> = Default::default();
    let mut stack: Vec<NodeId> = m.node(a).ports().map(peer).collect();
    while let Some(s) = stack.pop() {
        if seen.insert(s) {
            order.push(s);
            stack.extend(m.routing.egress(s, b).iter().map(|&p| peer(p)));
        }
    }
    order.sort_by_key(|&s| m.routing.distance(s, b));
    let mut count: BTreeMap<NodeId, u64> = BTreeMap::new();
    for s in order {
        let c = if m.routing.is_attachment(s, b) {
            m.node(s).ports().filter(|p| peer(*p) == b).count() as u64
        } else {
            m.routing
                .egress(s, b)
                .iter()
                .map(|&p| count.get(&peer(p)).copied().unwrap_or(0))
                .fold(0, u64::saturating_add)
        };
        count.insert(s, c);
    }
    m.node(a).ports().map(|p| count.get(&peer(p)).copied().unwrap_or(0)).fold(0, u64::saturating_add)
}

fn path_classes(m: &Model) -> Vec<PathClass> {
    let hosts: Vec<NodeId> = m.hosts().collect();
    let Some(&a) = hosts.first() else {
        return vec![];
    };
    let ra = m.node(a).rail();
    let leaf_a = m.port(m.port(m.node(a).first_port_id()).peer).node;
    let mut seen: BTreeMap<(u8, u16), NodeId> = BTreeMap::new();
    for &b in &hosts[1..] {
        let rel = match (ra, m.node(b).rail()) {
            (Some(x), Some(y)) if x == y => 0u8,
            (Some(_), Some(_)) => 1,
            _ => 2,
        };
        let d = m.routing.distance(leaf_a, b);
        seen.entry((rel, d)).or_insert(b);
    }
    seen.into_iter()
        .map(|((rel, d), b)| {
            let hops = d as u32 + 2;
            let relation = match (rel, d) {
                (_, 0) if rel != 1 => "same leaf".to_string(),
                (0, _) => "same rail, other leaf".to_string(),
                (1, _) => "different rails".to_string(),
                _ => "other leaf".to_string(),
            };
            PathClass {
                relation,
                example_src: m.node(a).name.clone(),
                example_dst: m.node(b).name.clone(),
                hops,
                ecmp_paths: ecmp_paths(m, a, b),
            }
        })
        .collect()
}

/// Human-readable summary.
pub fn render_text(s: &TopoSummary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "fabric `{}` ({}), hash {}", s.name, s.kind, s.fabric_hash);
    let _ = writeln!(
        o,
        "  {} hosts (NICs){}, {} switches, {} links",
        s.hosts,
        if s.gpu_nodes > 0 { format!(" in {} GPU nodes", s.gpu_nodes) } else { String::new() },
        s.switches,
        s.links
    );
    let speeds: Vec<String> =
        s.links_by_speed.iter().map(|(g, c)| format!("{c} × {} Gb/s", crate::units::trim_float(*g))).collect();
    let _ = writeln!(o, "  link speeds: {}", speeds.join(", "));
    if let Some(l) = &s.link_layer {
        // (On InfiniBand the "ECMP" paths below are the minimal next hops IB routing picks among.)
        let _ = writeln!(o, "  link layer: {l}");
    }
    let _ = writeln!(o, "\n  tier     nodes   ports   down Gb/s     up Gb/s   oversubscription");
    for t in &s.tiers {
        let os = match t.oversubscription {
            Some(r) => format!("{}:1", crate::units::trim_float(r)),
            None => "-".to_string(),
        };
        let _ = writeln!(
            o,
            "  {:<6} {:>7} {:>7} {:>11.0} {:>11.0}   {}",
            t.tier, t.nodes, t.ports, t.down_gbps, t.up_gbps, os
        );
    }
    let _ = writeln!(
        o,
        "\n  bisection bandwidth: {:.1} Tb/s ({:.0} % of full bisection)",
        s.bisection_gbps / 1000.0,
        s.bisection_ratio * 100.0
    );
    // InfiniBand forwards by LID over the subnet manager's tables (static or adaptive), not
    // by ECMP hashing: the same shortest paths, named as an IB engineer names them.
    let (group, path) = if s.link_layer.is_some() {
        ("distinct multipath group", "shortest path")
    } else {
        ("distinct ECMP group", "ECMP path")
    };
    let _ =
        writeln!(o, "  diameter: {}; {}", plural(s.diameter_hops as u64, "hop"), plural(s.ecmp_groups as u64, group));
    if !s.rails.is_empty() {
        let _ = writeln!(o, "\n  rails:");
        for r in &s.rails {
            let leaves = if r.leaves.len() <= 4 {
                r.leaves.join(", ")
            } else {
                format!(
                    "{}, {}, ... {} ({} leaves)",
                    r.leaves[0],
                    r.leaves[1],
                    r.leaves[r.leaves.len() - 1],
                    r.leaves.len()
                )
            };
            let _ = writeln!(o, "    rail {:<3} {:>6} NICs  leaves: {}", r.rail, r.nics, leaves);
        }
    }
    if let Some(np) = &s.nic_ports {
        let how = if np.dual_tor {
            "one to each ToR of a pair, no stacking link between the pair"
        } else if s.planes.len() > 1 {
            "spread over the planes"
        } else {
            "all to one ToR"
        };
        let _ =
            writeln!(o, "\n  NIC ports: {} per NIC, {how}; QPs take the ports in turn (RoCE LAG)", np.ports_per_nic);
    }
    if !s.planes.is_empty() {
        let what = if s.planes.len() > 1 {
            "a plane's spines reach only the NIC ports cabled to it"
        } else {
            "every ToR uplinks to the same spines"
        };
        let _ = writeln!(o, "\n  planes: {} ({what})", s.planes.len());
        for pl in &s.planes {
            let _ = writeln!(
                o,
                "    plane {}: {} leaves, {} spines, {} cores; {} NIC ports ({} Gb/s)",
                pl.plane,
                pl.leaves,
                pl.spines,
                pl.cores,
                pl.nic_ports,
                crate::units::trim_float(pl.nic_gbps)
            );
            if let (Some(l), Some(d), Some(up), Some(down)) =
                (&pl.example_leaf, &pl.example_dst, pl.leaf_ecmp_width, pl.spine_ecmp_width)
            {
                let _ = writeln!(
                    o,
                    "      ECMP width toward {d}: {up} at {l} (up), {down} at the spine (down{})",
                    if s.planes.len() == 1 && s.nic_ports.as_ref().is_some_and(|n| n.dual_tor) {
                        ": the spine picks one ToR of the pair"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    let _ = writeln!(o, "\n  path diversity from {}:", s.paths.first().map(|p| p.example_src.as_str()).unwrap_or("-"));
    for p in &s.paths {
        let _ = writeln!(
            o,
            "    {:<24} e.g. {:<18} {}, {}",
            p.relation,
            p.example_dst,
            plural(p.hops as u64, "hop"),
            plural(p.ecmp_paths, path)
        );
    }
    o
}

/// `1 hop`, `2 hops`: a count with its noun in the right number.
fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Graphviz DOT: tiers as ranks, parallel links merged with a count.
pub fn render_dot(m: &Model) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "graph \"{}\" {{", m.name.replace('"', "'"));
    let _ = writeln!(o, "  rankdir=BT; node [fontsize=10];");
    let mut by_tier: BTreeMap<Tier, Vec<&str>> = BTreeMap::new();
    for n in &m.nodes {
        by_tier.entry(n.tier).or_default().push(&n.name);
    }
    for (t, names) in &by_tier {
        let shape = if *t == Tier::Host { "ellipse" } else { "box" };
        let _ = write!(o, "  {{ rank=same; node [shape={shape}];");
        for n in names {
            let _ = write!(o, " \"{n}\";");
        }
        let _ = writeln!(o, " }}");
    }
    let mut edges: BTreeMap<(u32, u32, u64), usize> = BTreeMap::new();
    for l in &m.links {
        let (a, b) = (m.port(l.a).node.0, m.port(l.b).node.0);
        *edges.entry((a.min(b), a.max(b), m.port(l.a).speed.0)).or_default() += 1;
    }
    for ((a, b, sp), c) in edges {
        let label = if c > 1 { format!("{c}×{}G", sp / 1_000_000_000) } else { format!("{}G", sp / 1_000_000_000) };
        let _ = writeln!(
            o,
            "  \"{}\" -- \"{}\" [label=\"{}\"];",
            m.nodes[a as usize].name, m.nodes[b as usize].name, label
        );
    }
    o.push_str("}\n");
    o
}
