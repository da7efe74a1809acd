//! Lossless deadlock risk: cyclic buffer dependencies of the lossless priority.
//!
//! A *channel* is a directed switch-to-switch link, named by its egress port. When a lossless
//! flow enters switch `v` on channel `a` and leaves on channel `b`, a full buffer behind `b` can
//! pause `a`: `a` depends on `b`. The channel dependency graph (CDG) collects these edges for
//! every destination and every ECMP next hop a flow can actually take, i.e. only at switches
//! that traffic toward that destination reaches. A cycle in the CDG is a set of buffers that can
//! all wait on each other: PFC deadlock (Dally & Seitz; Hu et al., HotNets 2016).
//!
//! Routing is shortest path per destination group (the model's `Routing`): next hops of a switch
//! are its neighbours one hop closer. Each destination's routes form a DAG, so cycles only come
//! from the union over destinations, and from failures: removing a link makes some switches
//! route around it (down-up "bounce" paths). `analyze` checks the model's routing, then every
//! single switch-to-switch link failure. A failure changes the routes to a destination group
//! only if the link joins switches whose distances to it differ by one (it was a next hop); the
//! other groups' dependency edges are reused.
//!
//! Cost: per scenario, one BFS per affected group over the switch graph plus one pass over the
//! edges; the 1,024-GPU example (64 switches, 1,024 fabric links, 32 groups) takes a few
//! hundred milliseconds unoptimized and tens in release.

use crate::{Ctx, Findings};
use rocelab_model::routing::UNREACHABLE;
use rocelab_model::{LinkId, Model, NodeId, PortId};
use std::collections::{HashSet, VecDeque};

/// A cycle of channels, each named by its egress port; the last depends on the first.
pub type Cycle = Vec<PortId>;

/// What the deadlock search found.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    /// A cycle under the model's routing, if any.
    pub base: Option<Cycle>,
    /// Failed links (switch-to-switch) whose failure closes a cycle, with one cycle each.
    pub failures: Vec<(LinkId, Cycle)>,
    /// Single-link failures examined.
    pub scenarios: usize,
}

const NO_LINK: u32 = u32::MAX;

/// The switch graph and destination groups, prepared once.
struct Fabric<'a> {
    m: &'a Model,
    /// Per node: (egress port, neighbour switch, link) for switch neighbours.
    adj: Vec<Vec<(PortId, NodeId, LinkId)>>,
    switches: Vec<NodeId>,
    /// Per node: has at least one host attached (a traffic source).
    has_hosts: Vec<bool>,
}

impl<'a> Fabric<'a> {
    fn new(m: &'a Model) -> Self {
        let n = m.nodes.len();
        let mut adj = vec![Vec::new(); n];
        let mut has_hosts = vec![false; n];
        let switches: Vec<NodeId> = m.switches().collect();
        for &s in &switches {
            for p in m.node(s).ports() {
                let port = m.port(p);
                let v = m.port(port.peer).node;
                if m.node(v).is_host() {
                    has_hosts[s.idx()] = true;
                } else {
                    adj[s.idx()].push((p, v, port.link));
                }
            }
        }
        Fabric { m, adj, switches, has_hosts }
    }

    /// Distances (switch hops) to group `g` with `dead` removed, by BFS from its attachment switches.
    fn bfs(&self, g: usize, dead: u32, dist: &mut [u16], q: &mut VecDeque<NodeId>) {
        dist.iter_mut().for_each(|d| *d = UNREACHABLE);
        for &s in &self.m.routing.groups[g] {
            dist[s.idx()] = 0;
            q.push_back(s);
        }
        while let Some(u) = q.pop_front() {
            for &(_, v, l) in &self.adj[u.idx()] {
                if l.0 != dead && dist[v.idx()] == UNREACHABLE {
                    dist[v.idx()] = dist[u.idx()] + 1;
                    q.push_back(v);
                }
            }
        }
    }

    /// The model's own distances to group `g`.
    fn base_dist(&self, g: usize, dist: &mut [u16]) {
        let r = &self.m.routing;
        let ng = r.groups.len();
        dist.iter_mut().for_each(|d| *d = UNREACHABLE);
        for &s in &self.switches {
            dist[s.idx()] = r.dist[r.switch_row[s.idx()] as usize * ng + g];
        }
    }

    /// Dependency edges (egress port -> next egress port) of traffic toward group `g`, given
    /// distances; appended to `edges`. Only switches that traffic reaches contribute.
    fn group_edges(&self, dist: &[u16], dead: u32, s: &mut Scratch, edges: &mut Vec<(u32, u32)>) {
        s.order.clear();
        s.order.extend(self.switches.iter().copied().filter(|v| dist[v.idx()] != UNREACHABLE && dist[v.idx()] > 0));
        // Farthest first: every upstream neighbour of a switch is processed before it.
        s.order.sort_unstable_by_key(|v| std::cmp::Reverse(dist[v.idx()]));
        for &v in &s.order {
            s.active[v.idx()] = self.has_hosts[v.idx()];
        }
        s.hops.clear();
        for &v in &s.order {
            let start = s.hops.len() as u32;
            if s.active[v.idx()] {
                let dv = dist[v.idx()];
                for &(p, w, l) in &self.adj[v.idx()] {
                    if l.0 != dead && dist[w.idx()] == dv - 1 {
                        s.hops.push((p.0, w.0));
                        s.active[w.idx()] = true;
                    }
                }
            }
            s.span[v.idx()] = (start, s.hops.len() as u32);
        }
        for &v in &s.order {
            let (a, b) = s.span[v.idx()];
            for i in a..b {
                let (p, w) = s.hops[i as usize];
                if dist[w as usize] == 0 {
                    continue; // w delivers to the host, and a host always drains.
                }
                let (c, d) = s.span[w as usize];
                for j in c..d {
                    edges.push((p, s.hops[j as usize].0));
                }
            }
        }
        for &v in &s.order {
            s.active[v.idx()] = false;
            s.span[v.idx()] = (0, 0);
        }
    }
}

/// Buffers reused across groups and scenarios.
struct Scratch {
    order: Vec<NodeId>,
    active: Vec<bool>,
    /// Per node: its next hops as a range of `hops`.
    span: Vec<(u32, u32)>,
    hops: Vec<(u32, u32)>,
}

impl Scratch {
    fn new(n: usize) -> Self {
        Scratch { order: Vec::new(), active: vec![false; n], span: vec![(0, 0); n], hops: Vec::new() }
    }
}

/// A cycle in the graph of `edges` over `n` channels, if any (iterative DFS, three colours).
pub fn find_cycle(n: usize, edges: &[(u32, u32)]) -> Option<Cycle> {
    let mut start = vec![0u32; n + 1];
    for &(a, _) in edges {
        start[a as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut to = vec![0u32; edges.len()];
    for &(a, b) in edges {
        to[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
    }
    // 0 white, 1 on the stack, 2 done.
    let mut colour = vec![0u8; n];
    let mut stack: Vec<(u32, u32)> = Vec::new();
    for root in 0..n as u32 {
        if colour[root as usize] != 0 || start[root as usize] == start[root as usize + 1] {
            continue;
        }
        colour[root as usize] = 1;
        stack.push((root, start[root as usize]));
        while let Some(&mut (u, ref mut next)) = stack.last_mut() {
            if *next == start[u as usize + 1] {
                colour[u as usize] = 2;
                stack.pop();
                continue;
            }
            let v = to[*next as usize];
            *next += 1;
            match colour[v as usize] {
                0 => {
                    colour[v as usize] = 1;
                    stack.push((v, start[v as usize]));
                }
                1 => {
                    let at = stack.iter().position(|&(x, _)| x == v).expect("v is on the stack");
                    return Some(stack[at..].iter().map(|&(x, _)| PortId(x)).collect());
                }
                _ => {}
            }
        }
    }
    None
}

/// Builds the CDG of the lossless priority under the model's routing and under every single
/// switch-to-switch link failure, and looks for cycles.
pub fn analyze(m: &Model) -> Analysis {
    let f = Fabric::new(m);
    let r = &m.routing;
    let n = m.nodes.len();
    let ng = r.groups.len();
    let base = |g: usize, s: NodeId| r.dist[r.switch_row[s.idx()] as usize * ng + g];
    let mut dist = vec![UNREACHABLE; n];
    let mut q = VecDeque::new();
    let mut scratch = Scratch::new(n);
    // The failure-free graph, deduplicated (many destinations share a dependency).
    let key = |&(x, y): &(u32, u32)| (x as u64) << 32 | y as u64;
    let mut base_set: HashSet<u64> = HashSet::new();
    let mut tmp = Vec::new();
    for g in 0..ng {
        f.base_dist(g, &mut dist);
        tmp.clear();
        f.group_edges(&dist, NO_LINK, &mut scratch, &mut tmp);
        base_set.extend(tmp.iter().map(key));
    }
    let mut all: Vec<(u32, u32)> = base_set.iter().map(|&k| ((k >> 32) as u32, k as u32)).collect();
    all.sort_unstable(); // deterministic search order, hence deterministic reports
    let mut out = Analysis { base: find_cycle(m.ports.len(), &all), ..Default::default() };
    if out.base.is_some() {
        // Already deadlock-prone without any failure: failures add nothing to report.
        return out;
    }
    // Next hops per (switch, group) under the model's routing.
    let mut next_hops = vec![0u16; r.dist.len()];
    for &s in &f.switches {
        let row = r.switch_row[s.idx()] as usize;
        for g in 0..ng {
            let d = base(g, s);
            if d != 0 && d != UNREACHABLE {
                next_hops[row * ng + g] = f.adj[s.idx()].iter().filter(|(_, w, _)| base(g, *w) == d - 1).count() as u16;
            }
        }
    }
    // The base graph is acyclic, so a cycle after a failure must use an edge it lacks. A
    // failure changes the routes toward a group only if the link was a next hop of its far end;
    // if the far end keeps another next hop no distance changes, and the group's dependencies
    // can only shrink. Only groups whose distances change can add edges, and only when one does
    // is the whole graph rebuilt and searched.
    let mut changed: Vec<usize> = Vec::new();
    for (li, link) in m.links.iter().enumerate() {
        let (a, b) = (m.port(link.a).node, m.port(link.b).node);
        if m.node(a).is_host() || m.node(b).is_host() {
            continue;
        }
        out.scenarios += 1;
        let dead = li as u32;
        changed.clear();
        for g in 0..ng {
            let (da, db) = (base(g, a), base(g, b));
            if da == UNREACHABLE || db == UNREACHABLE || da.abs_diff(db) != 1 {
                continue; // the link is no next hop toward g: its routes do not change
            }
            let far = if da > db { a } else { b };
            if next_hops[r.switch_row[far.idx()] as usize * ng + g] <= 1 {
                changed.push(g);
            }
        }
        let mut adds_edge = false;
        for &g in &changed {
            f.bfs(g, dead, &mut dist, &mut q);
            tmp.clear();
            f.group_edges(&dist, dead, &mut scratch, &mut tmp);
            if tmp.iter().any(|e| !base_set.contains(&key(e))) {
                adds_edge = true;
                break;
            }
        }
        if !adds_edge {
            continue;
        }
        all.clear();
        for g in 0..ng {
            if changed.contains(&g) {
                f.bfs(g, dead, &mut dist, &mut q);
            } else {
                f.base_dist(g, &mut dist);
            }
            f.group_edges(&dist, dead, &mut scratch, &mut all);
        }
        if let Some(c) = find_cycle(m.ports.len(), &all) {
            out.failures.push((LinkId(li as u32), c));
        }
    }
    out
}

fn describe(m: &Model, c: &Cycle) -> String {
    let mut s: Vec<String> = c.iter().map(|&p| m.port_name(p)).collect();
    if let Some(&first) = c.first() {
        s.push(m.node(m.port(first).node).name.clone());
    }
    let mut switches: Vec<&str> = c.iter().map(|&p| m.node(m.port(p).node).name.as_str()).collect();
    switches.sort();
    switches.dedup();
    format!("{} (switches {})", s.join(" -> "), switches.join(", "))
}

fn link_name(m: &Model, l: LinkId) -> String {
    let link = &m.links[l.idx()];
    format!("{} -- {}", m.port_name(link.a), m.port_name(link.b))
}

pub fn check(cx: &Ctx, out: &mut Findings) {
    let m = cx.model;
    if cx.lossless_priorities.is_empty() {
        return;
    }
    let a = analyze(m);
    let prios = format!("{:?}", cx.lossless_priorities);
    if let Some(c) = &a.base {
        out.emit(
            "DLK001",
            m.links[m.port(c[0]).link.idx()].origin.clone(),
            format!(
                "lossless priorities {prios} can deadlock: cyclic buffer dependency over {} links: {}",
                c.len(),
                describe(m, c)
            ),
            "route up/down only (a Clos without links inside a tier), or take the traffic that closes the cycle out of PFC",
        );
    } else if let Some((l, c)) = a.failures.first() {
        let examples: Vec<String> = a.failures.iter().skip(1).take(2).map(|(l, _)| link_name(m, *l)).collect();
        let more = if examples.is_empty() { String::new() } else { format!("; also e.g. {}", examples.join(", ")) };
        out.emit(
            "DLK002",
            m.links[l.idx()].origin.clone(),
            format!(
                "{} of {} single-link failures close a cyclic buffer dependency on lossless priorities {prios}; failure of {}: {}{more}",
                a.failures.len(),
                a.scenarios,
                link_name(m, *l),
                describe(m, c)
            ),
            "keep routes up/down under failures (valley-free policy), add redundancy, and keep the PFC watchdog on",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLOS: &str = "[topology.rail_optimized]\ngpu_nodes = 8\nrails = 2\nnodes_per_su = 4\nsus_per_pod = 1\nspines_per_pod = 2\npod_oversubscription = 2.0\nhost_link = { speed_gbps = 400 }\nleaf_link = { speed_gbps = 400 }\n";

    #[test]
    fn base_next_hops_are_the_model_routing() {
        let m = rocelab_model::load_str("t.toml", CLOS).unwrap();
        let f = Fabric::new(&m);
        let mut dist = vec![UNREACHABLE; m.nodes.len()];
        for dst in m.hosts() {
            let g = m.routing.host_group[dst.idx()] as usize;
            f.base_dist(g, &mut dist);
            for &s in &f.switches {
                let d = dist[s.idx()];
                let mine: Vec<PortId> = if d == 0 {
                    vec![]
                } else {
                    f.adj[s.idx()].iter().filter(|(_, w, _)| dist[w.idx()] + 1 == d).map(|(p, _, _)| *p).collect()
                };
                assert_eq!(mine, m.routing.egress(s, dst), "at {} toward {}", m.node(s).name, m.node(dst).name);
            }
        }
        // The failure-free BFS agrees with the model's distances.
        let mut q = VecDeque::new();
        let mut bfs = vec![UNREACHABLE; m.nodes.len()];
        for g in 0..m.routing.groups.len() {
            f.base_dist(g, &mut dist);
            f.bfs(g, NO_LINK, &mut bfs, &mut q);
            for &s in &f.switches {
                assert_eq!(dist[s.idx()], bfs[s.idx()]);
            }
        }
        let a = analyze(&m);
        assert!(a.base.is_none() && a.failures.is_empty());
        assert!(a.scenarios > 0);
    }

    #[test]
    fn finds_a_planted_cycle_and_not_a_dag() {
        // 0 -> 1 -> 2 -> 0, plus a tail 3 -> 0.
        let c = find_cycle(4, &[(3, 0), (0, 1), (1, 2), (2, 0)]).expect("cycle");
        assert_eq!(c.len(), 3);
        assert!(find_cycle(4, &[(0, 1), (1, 2), (0, 2), (3, 2)]).is_none());
        assert!(find_cycle(1, &[(0, 0)]).is_some());
        assert!(find_cycle(0, &[]).is_none());
    }
}
