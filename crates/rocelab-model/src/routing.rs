//! Routing: every shortest path, as per-switch ECMP groups.
//!
//! Hosts that attach to the same set of switches (a leaf's hosts, a rail leaf's NICs) share one
//! *destination group*. For each group a multi-source BFS over the switch graph gives every
//! switch its distance to the group and its next-hop ports: all ports whose peer is one hop
//! closer. In a Clos fabric those are exactly the up/down shortest paths. Identical next-hop
//! sets are interned, so a 24k-GPU fabric's table is a few MB: `switches × groups` u32 ids.
//! Hosts never transit traffic.

use crate::diag::Diagnostic;
use crate::model::{Node, NodeId, Port, PortId};
use std::collections::{HashMap, VecDeque};

pub const UNREACHABLE: u16 = u16::MAX;
const NONE: u32 = u32::MAX;

/// Largest `switches × destination groups` table the loader builds (6 bytes a cell: ~1.2 GB).
/// A 24,576-GPU rail-optimized fabric needs ~0.8 million cells, a 100k-GPU one ~15 million.
pub const MAX_TABLE_CELLS: u64 = 200_000_000;

/// Cells the routing tables of this graph would take (switches × destination groups), computed
/// before `Routing::compute` so a huge input is refused instead of exhausting memory.
pub fn table_cells(nodes: &[Node], ports: &[Port]) -> u64 {
    let switches = nodes.iter().filter(|n| !n.is_host()).count() as u64;
    let mut sets: std::collections::HashSet<Vec<NodeId>> = Default::default();
    for nd in nodes.iter().filter(|n| n.is_host()) {
        let mut att: Vec<NodeId> = nd.ports().map(|p| ports[ports[p.idx()].peer.idx()].node).collect();
        att.sort();
        att.dedup();
        sets.insert(att);
    }
    switches * sets.len() as u64
}

#[derive(Clone, Debug, Default)]
pub struct Routing {
    /// Per node: its destination group (hosts) or `u32::MAX` (switches).
    pub host_group: Vec<u32>,
    /// Attachment switches of each destination group.
    pub groups: Vec<Vec<NodeId>>,
    /// Per node: its row in the tables (switches) or `u32::MAX` (hosts).
    pub switch_row: Vec<u32>,
    /// `next_hop[row * groups + g]`: interned ECMP group id (`u32::MAX`: at the group, or
    /// unreachable).
    pub next_hop: Vec<u32>,
    /// `dist[row * groups + g]`: switch hops to the nearest attachment switch of `g`.
    pub dist: Vec<u16>,
    /// Interned next-hop port sets.
    pub ecmp_groups: Vec<Box<[PortId]>>,
    /// Per host: the switch-side ports that face it (its attachment ports).
    pub host_facing: Vec<Box<[PortId]>>,
}

impl Routing {
    pub fn compute(nodes: &[Node], ports: &[Port]) -> Routing {
        let n = nodes.len();
        let mut switch_row = vec![NONE; n];
        let mut rows = 0u32;
        for (i, nd) in nodes.iter().enumerate() {
            if !nd.is_host() {
                switch_row[i] = rows;
                rows += 1;
            }
        }
        // Destination groups keyed by the sorted attachment set.
        let mut group_of_set: HashMap<Vec<NodeId>, u32> = HashMap::new();
        let mut groups: Vec<Vec<NodeId>> = Vec::new();
        let mut host_group = vec![NONE; n];
        let mut host_facing: Vec<Box<[PortId]>> = vec![Box::new([]); n];
        for (i, nd) in nodes.iter().enumerate() {
            if !nd.is_host() {
                continue;
            }
            let mut att: Vec<NodeId> = nd.ports().map(|p| ports[ports[p.idx()].peer.idx()].node).collect();
            host_facing[i] = nd.ports().map(|p| ports[p.idx()].peer).collect();
            att.sort();
            att.dedup();
            let next = groups.len() as u32;
            let g = *group_of_set.entry(att.clone()).or_insert_with(|| {
                groups.push(att);
                next
            });
            host_group[i] = g;
        }
        let ng = groups.len();
        let cells = rows as usize * ng;
        let mut next_hop = vec![NONE; cells];
        let mut dist = vec![UNREACHABLE; cells];
        let mut interned: HashMap<Box<[PortId]>, u32> = HashMap::new();
        let mut ecmp_groups: Vec<Box<[PortId]>> = Vec::new();
        // Switch-to-switch adjacency in CSR form: (port, peer's row) per switch row. Hosts
        // never transit, so the BFS below skips their ports (half of a leaf's) for free, and
        // working in rows keeps the distance array small enough to stay in L1.
        let switches: Vec<u32> = (0..n as u32).filter(|&i| switch_row[i as usize] != NONE).collect();
        let mut adj_start = Vec::with_capacity(switches.len() + 1);
        let mut adj: Vec<(PortId, u32)> = Vec::new();
        for &s in &switches {
            adj_start.push(adj.len());
            for p in nodes[s as usize].ports() {
                let v = ports[ports[p.idx()].peer.idx()].node;
                if !nodes[v.idx()].is_host() {
                    adj.push((p, switch_row[v.idx()]));
                }
            }
        }
        adj_start.push(adj.len());
        let row_adj = |row: usize| &adj[adj_start[row]..adj_start[row + 1]];
        // Per switch, the last next-hop set it interned: a leaf's uplinks or a spine's core
        // ports are the same toward most groups, so most cells skip the hash lookup.
        let mut last: Vec<u32> = vec![NONE; switches.len()];
        let mut d = vec![UNREACHABLE; switches.len()];
        let mut q = VecDeque::new();
        let mut hops: Vec<PortId> = Vec::new();
        for (g, att) in groups.iter().enumerate() {
            d.fill(UNREACHABLE);
            for &s in att {
                let r = switch_row[s.idx()];
                d[r as usize] = 0;
                q.push_back(r);
            }
            while let Some(u) = q.pop_front() {
                let du = d[u as usize];
                if du >= UNREACHABLE - 1 {
                    continue; // a 65k-switch chain: farther switches count as unreachable
                }
                for &(_, v) in row_adj(u as usize) {
                    if d[v as usize] == UNREACHABLE {
                        d[v as usize] = du + 1;
                        q.push_back(v);
                    }
                }
            }
            for row in 0..switches.len() {
                let ds = d[row];
                let cell = row * ng + g;
                dist[cell] = ds;
                if ds == 0 || ds == UNREACHABLE {
                    continue;
                }
                hops.clear();
                hops.extend(row_adj(row).iter().filter(|(_, v)| d[*v as usize] == ds - 1).map(|(p, _)| *p));
                let prev = last[row];
                let id = if prev != NONE && *hops == *ecmp_groups[prev as usize] {
                    prev
                } else {
                    let id = match interned.get(hops.as_slice()) {
                        Some(&id) => id,
                        None => {
                            let id = ecmp_groups.len() as u32;
                            let b: Box<[PortId]> = hops.clone().into_boxed_slice();
                            ecmp_groups.push(b.clone());
                            interned.insert(b, id);
                            id
                        }
                    };
                    last[row] = id;
                    id
                };
                next_hop[cell] = id;
            }
        }
        Routing { host_group, groups, switch_row, next_hop, dist, ecmp_groups, host_facing }
    }

    /// Ports a switch may forward on toward host `dst`: at an attachment switch the ports
    /// facing the host (for a multi-homed host, also those of its other switches: filter by
    /// node), elsewhere the equal-cost next hops. One table lookup; the engine calls it per hop.
    #[inline]
    pub fn candidates(&self, at: NodeId, dst: NodeId) -> &[PortId] {
        let cell = self.switch_row[at.idx()] as usize * self.groups.len() + self.host_group[dst.idx()] as usize;
        if self.dist[cell] == 0 {
            return &self.host_facing[dst.idx()];
        }
        match self.next_hop[cell] {
            NONE => &[],
            id => &self.ecmp_groups[id as usize],
        }
    }

    /// Switch-to-switch next hops toward `dst` (empty at an attachment switch).
    #[inline]
    pub fn egress(&self, at: NodeId, dst: NodeId) -> &[PortId] {
        if self.is_attachment(at, dst) {
            &[]
        } else {
            self.candidates(at, dst)
        }
    }

    /// Switch hops from `at` to the attachment switches of `dst`.
    pub fn distance(&self, at: NodeId, dst: NodeId) -> u16 {
        let g = self.host_group[dst.idx()] as usize;
        let row = self.switch_row[at.idx()] as usize;
        self.dist[row * self.groups.len() + g]
    }

    pub fn is_attachment(&self, at: NodeId, dst: NodeId) -> bool {
        self.distance(at, dst) == 0
    }

    /// Every host must be able to reach every other.
    pub fn check_connected(&self, nodes: &[Node]) -> Result<(), Diagnostic> {
        let ng = self.groups.len();
        for (g, att) in self.groups.iter().enumerate() {
            // A group is reachable from another if any of the other's attachment switches has
            // a finite distance.
            for (h, other) in self.groups.iter().enumerate() {
                // A host with no link has no attachment switch: the loader reports it already.
                if h == g || att.is_empty() || other.is_empty() {
                    continue;
                }
                let reachable =
                    other.iter().any(|s| self.dist[self.switch_row[s.idx()] as usize * ng + g] != UNREACHABLE);
                if !reachable {
                    let name = |id: &NodeId| nodes[id.idx()].name.clone();
                    return Err(Diagnostic::new(
                        "topology",
                        format!(
                            "the fabric is partitioned: switch `{}` cannot reach switch `{}`",
                            name(&other[0]),
                            name(&att[0])
                        ),
                        "add links so that every leaf can reach every other",
                    ));
                }
            }
        }
        Ok(())
    }
}
