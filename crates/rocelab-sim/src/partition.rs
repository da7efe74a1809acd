//! Cutting a fabric into partitions for a parallel packet engine, and measuring what such a
//! cut would cost on a real run.
//!
//! A partition is a set of nodes whose events one thread would run. The cut follows the
//! topology: the top switching tier is set aside, the rest falls apart into blocks (a fat
//! tree's pods, a rail-optimized fabric's rail groups, a leaf-spine's leaves with their
//! hosts), blocks are packed into partitions by host count, and the set-aside switches are
//! dealt round-robin over the partitions. A host always stays with its leaf: host links are
//! the shortest (a 5 m cable is 25 ns) and cutting them would shrink the lookahead to that.
//!
//! The lookahead of a conservative parallel engine is the smallest delay of a cut link: an
//! event in one partition cannot cause one in another sooner than a packet or PFC frame takes
//! to cross the wire. With a window-based protocol (YAWNS: every partition runs the events of
//! `[t, t + lookahead)`, then all exchange cross-partition messages at a barrier) the cost is
//! one barrier per window plus the imbalance within each window; [`WindowProfile`] counts
//! both on a real (single-threaded) run, so the efficiency of N threads can be projected
//! before any thread exists.

use rocelab_model::topology::Tier;
use rocelab_model::{Model, SimTime};

/// What the blocks of the cut are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionBy {
    /// Pods on a 3-tier fat tree, rail groups on a rail-optimized fabric, else leaf groups.
    Auto,
    /// Everything below the core tier that hangs together (a fat tree's pods).
    Pod,
    /// The leaves and hosts of one rail (over every scalable unit) form a block.
    RailGroup,
    /// A leaf (or a dual-ToR leaf pair) with its hosts forms a block.
    LeafGroup,
}

impl PartitionBy {
    pub fn name(self) -> &'static str {
        match self {
            PartitionBy::Auto => "auto",
            PartitionBy::Pod => "pod",
            PartitionBy::RailGroup => "rail group",
            PartitionBy::LeafGroup => "leaf group",
        }
    }

    /// Parses `auto`, `pod`, `rail` / `rail-group`, `leaf` / `leaf-group`.
    pub fn parse(s: &str) -> Option<PartitionBy> {
        Some(match s {
            "auto" => PartitionBy::Auto,
            "pod" => PartitionBy::Pod,
            "rail" | "rail-group" => PartitionBy::RailGroup,
            "leaf" | "leaf-group" => PartitionBy::LeafGroup,
            _ => return None,
        })
    }
}

/// Why a fabric cannot be cut the way asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionError {
    NoPods,
    NoRails,
    ZeroParts,
}

impl std::fmt::Display for PartitionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PartitionError::NoPods => {
                "the fabric has no core tier, so it has no pods to cut along (use leaf groups, or auto)"
            }
            PartitionError::NoRails => {
                "the fabric's hosts have no rails, so it has no rail groups to cut along (use leaf groups, or auto)"
            }
            PartitionError::ZeroParts => "a partition count of 0 was asked for (1 or more)",
        })
    }
}

impl std::error::Error for PartitionError {}

/// A cut of the fabric: the partition of every node and what it costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Partitioning {
    /// What was cut along (never `Auto`).
    pub by: PartitionBy,
    /// Blocks the topology fell into before packing.
    pub blocks: u32,
    /// Partitions (at most the count asked for, at most `blocks`).
    pub parts: u32,
    /// Per node (by `NodeId`), its partition.
    pub of_node: Vec<u32>,
    /// Per partition, its hosts.
    pub hosts: Vec<u32>,
    /// Links whose ends are in different partitions.
    pub cut_links: usize,
    /// The smallest delay of a cut link; `None` with one partition (nothing is cut).
    pub lookahead: Option<SimTime>,
}

impl Partitioning {
    /// Partition of the node that owns port `port`.
    #[inline]
    pub fn of_port(&self, m: &Model, port: u32) -> u32 {
        self.of_node[m.ports[port as usize].node.idx()]
    }
}

/// Union-find over node indices, smallest index as the root (so block order is node order).
fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        let p = parent[x as usize];
        parent[x as usize] = parent[p as usize];
        x = p;
    }
    x
}

fn union(parent: &mut [u32], a: u32, b: u32) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        parent[hi as usize] = lo;
    }
}

/// Cuts `m` into at most `max_parts` partitions along `by` (deterministic: node order breaks
/// every tie).
pub fn partition(m: &Model, by: PartitionBy, max_parts: u32) -> Result<Partitioning, PartitionError> {
    if max_parts == 0 {
        return Err(PartitionError::ZeroParts);
    }
    let has_core = m.nodes.iter().any(|n| n.tier == Tier::Core);
    let has_rails = m.nodes.iter().any(|n| n.rail().is_some());
    let by = match by {
        PartitionBy::Auto if has_core => PartitionBy::Pod,
        PartitionBy::Auto if has_rails => PartitionBy::RailGroup,
        PartitionBy::Auto => PartitionBy::LeafGroup,
        PartitionBy::Pod if !has_core => return Err(PartitionError::NoPods),
        PartitionBy::RailGroup if !has_rails => return Err(PartitionError::NoRails),
        b => b,
    };
    // The tier set aside: cores for pods; everything above the leaves otherwise. A fabric
    // with no switch above its leaves (one switch, a star) keeps all in one block.
    let aside = |t: Tier| match by {
        PartitionBy::Pod => t == Tier::Core,
        _ => t == Tier::Spine || t == Tier::Core,
    };
    let n = m.nodes.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    for l in &m.links {
        let (a, b) = (m.ports[l.a.idx()].node, m.ports[l.b.idx()].node);
        if !aside(m.nodes[a.idx()].tier) && !aside(m.nodes[b.idx()].tier) {
            union(&mut parent, a.0, b.0);
        }
    }
    if by == PartitionBy::RailGroup {
        // Join the blocks whose hosts share a rail (a rail's leaves in every SU).
        let mut first_of_rail: Vec<Option<u32>> = Vec::new();
        for (i, node) in m.nodes.iter().enumerate() {
            if let Some(r) = node.rail() {
                let r = r as usize;
                if first_of_rail.len() <= r {
                    first_of_rail.resize(r + 1, None);
                }
                match first_of_rail[r] {
                    Some(f) => union(&mut parent, f, i as u32),
                    None => first_of_rail[r] = Some(i as u32),
                }
            }
        }
    }
    // Blocks in node order: (root, hosts).
    let mut block_of_root = vec![u32::MAX; n];
    let mut block_hosts: Vec<u32> = Vec::new();
    for i in 0..n {
        if aside(m.nodes[i].tier) {
            continue;
        }
        let r = find(&mut parent, i as u32) as usize;
        if block_of_root[r] == u32::MAX {
            block_of_root[r] = block_hosts.len() as u32;
            block_hosts.push(0);
        }
        if m.nodes[i].is_host() {
            block_hosts[block_of_root[r] as usize] += 1;
        }
    }
    let blocks = block_hosts.len().max(1) as u32;
    let parts = max_parts.min(blocks);
    // Pack: largest block first onto the partition with the fewest hosts (lowest index on a
    // tie), so partitions are balanced by the hosts that drive the traffic.
    let mut order: Vec<u32> = (0..block_hosts.len() as u32).collect();
    order.sort_by_key(|&b| (std::cmp::Reverse(block_hosts[b as usize]), b));
    let mut hosts = vec![0u32; parts as usize];
    let mut part_of_block = vec![0u32; block_hosts.len()];
    for b in order {
        let p = (0..parts as usize).min_by_key(|&p| (hosts[p], p)).unwrap_or(0);
        part_of_block[b as usize] = p as u32;
        hosts[p] += block_hosts[b as usize];
    }
    let mut of_node = vec![0u32; n];
    let mut dealt = 0u32;
    for i in 0..n {
        of_node[i] = if aside(m.nodes[i].tier) {
            // Spines and cores link to every block alike: deal them out evenly.
            dealt += 1;
            (dealt - 1) % parts
        } else {
            part_of_block[block_of_root[find(&mut parent, i as u32) as usize] as usize]
        };
    }
    let mut cut_links = 0;
    let mut lookahead: Option<SimTime> = None;
    for l in &m.links {
        let (pa, pb) = (&m.ports[l.a.idx()], &m.ports[l.b.idx()]);
        if of_node[pa.node.idx()] != of_node[pb.node.idx()] {
            cut_links += 1;
            let d = pa.delay.min(pb.delay);
            lookahead = Some(lookahead.map_or(d, |x| x.min(d)));
        }
    }
    Ok(Partitioning { by, blocks, parts, of_node, hosts, cut_links, lookahead })
}

/// Who runs an event in a partitioned engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The partition of this node runs it; `from` is the node whose event scheduled it when
    /// that is known from the event alone (a packet or frame crossing a link).
    Node { node: u32, from: Option<u32> },
    /// Reads or writes state of the whole run (sampling, the workload's callbacks, faults,
    /// routing epochs): every partition must stop at it.
    Global,
}

/// Per window of one lookahead: the events each partition ran, the messages that crossed a
/// partition boundary, and the windows that held a global event. Filled by the engine during
/// a normal single-threaded run (`Sim::profile_partitions`), so it costs nothing when off.
#[derive(Clone, Debug)]
pub struct WindowProfile {
    pub cut: Partitioning,
    /// The window length (the cut's lookahead; 1 µs where nothing is cut).
    pub window: SimTime,
    /// Events per partition (all windows).
    pub events: Vec<u64>,
    /// Σ over windows of the busiest partition's events (what N threads wait for).
    pub critical_events: u64,
    /// Windows with at least one event.
    pub windows: u64,
    /// Messages whose sender and receiver are in different partitions.
    pub cross: u64,
    /// Σ over windows of the most cross messages one partition received in it.
    pub critical_cross: u64,
    /// Global events (sampling, workload callbacks, faults), and the windows holding one.
    pub global_events: u64,
    pub global_windows: u64,
    cur: u64,
    cur_events: Vec<u64>,
    cur_cross: Vec<u64>,
    cur_global: bool,
}

impl WindowProfile {
    pub fn new(cut: Partitioning) -> WindowProfile {
        let p = cut.parts as usize;
        let window = cut.lookahead.unwrap_or(SimTime(1_000_000)).max(SimTime(1));
        WindowProfile {
            cut,
            window,
            events: vec![0; p],
            critical_events: 0,
            windows: 0,
            cross: 0,
            critical_cross: 0,
            global_events: 0,
            global_windows: 0,
            cur: u64::MAX,
            cur_events: vec![0; p],
            cur_cross: vec![0; p],
            cur_global: false,
        }
    }

    fn close_window(&mut self) {
        if self.cur == u64::MAX {
            return;
        }
        self.windows += 1;
        self.critical_events += self.cur_events.iter().copied().max().unwrap_or(0);
        self.critical_cross += self.cur_cross.iter().copied().max().unwrap_or(0);
        self.global_windows += u64::from(self.cur_global);
        self.cur_events.iter_mut().for_each(|x| *x = 0);
        self.cur_cross.iter_mut().for_each(|x| *x = 0);
        self.cur_global = false;
    }

    /// Counts one event at time `t`.
    pub fn count(&mut self, t: SimTime, owner: Owner) {
        let w = t.0 / self.window.0;
        if w != self.cur {
            self.close_window();
            self.cur = w;
        }
        match owner {
            Owner::Global => {
                self.global_events += 1;
                self.cur_global = true;
            }
            Owner::Node { node, from } => {
                let p = self.cut.of_node[node as usize] as usize;
                self.events[p] += 1;
                self.cur_events[p] += 1;
                if let Some(f) = from {
                    if self.cut.of_node[f as usize] as usize != p {
                        self.cross += 1;
                        self.cur_cross[p] += 1;
                    }
                }
            }
        }
    }

    /// Closes the last window (call once, after the run).
    pub fn finish(&mut self) {
        self.close_window();
        self.cur = u64::MAX;
    }

    /// Node events in all (the global ones not counted).
    pub fn total_events(&self) -> u64 {
        self.events.iter().sum()
    }

    /// The parallel efficiency the counts allow with one thread per partition, from a cost
    /// model: an event costs `event_s` seconds on its thread, a cross message `cross_s` more
    /// (enqueue at the sender, a cache-line transfer at the receiver), a window `barrier_s`,
    /// and a global event stops every thread (it runs alone). Efficiency = T1 / (N · TN).
    pub fn projected_efficiency(&self, event_s: f64, cross_s: f64, barrier_s: f64) -> f64 {
        let n = self.cut.parts as f64;
        let all = self.total_events() as f64;
        let t1 = (all + self.global_events as f64) * event_s;
        let tn = self.critical_events as f64 * event_s
            + self.critical_cross as f64 * cross_s
            + self.windows as f64 * barrier_s
            + self.global_events as f64 * event_s;
        if tn <= 0.0 {
            return 1.0;
        }
        t1 / (n * tn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> Model {
        rocelab_model::load_str("t.toml", text).expect("valid fabric")
    }

    fn fat_tree(k: u32) -> Model {
        model(&format!(
            "[fabric]\nname = \"ft\"\n[topology.fat_tree]\nk = {k}\nlink = {{ speed_gbps = 400, delay_ns = 1000 }}\n"
        ))
    }

    /// A k=8 fat tree falls into its 8 pods of 16 hosts; packed into 2 or 8 partitions each
    /// gets an equal share of hosts and cores, only core links are cut, and the lookahead is
    /// their 1 µs.
    #[test]
    fn fat_tree_cuts_into_pods_and_only_core_links_cross() {
        let m = fat_tree(8);
        for parts in [2u32, 8] {
            let p = partition(&m, PartitionBy::Auto, parts).unwrap();
            assert_eq!(p.by, PartitionBy::Pod);
            assert_eq!(p.blocks, 8);
            assert_eq!(p.parts, parts);
            assert!(p.hosts.iter().all(|&h| h == 128 / parts), "{:?}", p.hosts);
            assert_eq!(p.lookahead, Some(SimTime(1_000_000)));
            // 16 cores × 8 links each; a core shares a partition with 8/parts pods' links.
            let core_links = 16 * 8;
            assert_eq!(p.cut_links, core_links - core_links / parts as usize);
            // Every host sits with its leaf.
            for l in &m.links {
                let (a, b) = (m.port(l.a).node, m.port(l.b).node);
                if m.node(a).is_host() || m.node(b).is_host() {
                    assert_eq!(p.of_node[a.idx()], p.of_node[b.idx()]);
                }
            }
        }
    }

    /// More partitions asked for than blocks: one per block. One partition: nothing cut.
    #[test]
    fn partition_count_is_capped_by_blocks_and_one_cuts_nothing() {
        let m = fat_tree(4);
        assert_eq!(partition(&m, PartitionBy::Pod, 64).unwrap().parts, 4);
        let one = partition(&m, PartitionBy::Pod, 1).unwrap();
        assert_eq!((one.parts, one.cut_links, one.lookahead), (1, 0, None));
        assert_eq!(partition(&m, PartitionBy::Pod, 0), Err(PartitionError::ZeroParts));
    }

    /// The rail-optimized example: 8 rail groups (4 leaves and 128 NICs each); the cut links
    /// are leaf–spine links of 100 m (500 ns), never the 5 m host links; leaf groups give 32
    /// blocks; pods do not exist there.
    #[test]
    fn rail_fabric_cuts_by_rail_with_the_leaf_spine_delay_as_lookahead() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/rail-1024gpu.toml"))
            .expect("example");
        let m = model(&text);
        let p = partition(&m, PartitionBy::Auto, 16).unwrap();
        assert_eq!(p.by, PartitionBy::RailGroup);
        assert_eq!((p.blocks, p.parts), (8, 8));
        assert!(p.hosts.iter().all(|&h| h == 128));
        assert_eq!(p.lookahead, Some(SimTime(500_000)));
        let leaf = partition(&m, PartitionBy::LeafGroup, 16).unwrap();
        assert_eq!((leaf.blocks, leaf.parts), (32, 16));
        assert!(leaf.hosts.iter().all(|&h| h == 64));
        assert_eq!(partition(&m, PartitionBy::Pod, 2), Err(PartitionError::NoPods));
    }

    /// Same fabric, same count: the same cut (nothing depends on hash order or addresses).
    #[test]
    fn the_cut_is_deterministic() {
        let m = fat_tree(8);
        assert_eq!(partition(&m, PartitionBy::Pod, 3).unwrap(), partition(&m, PartitionBy::Pod, 3).unwrap());
    }

    /// Windows, the busiest partition per window and cross messages, counted by hand.
    #[test]
    fn window_profile_counts_the_critical_path() {
        let m = fat_tree(4);
        let cut = partition(&m, PartitionBy::Pod, 2).unwrap();
        let a = cut.of_node.iter().position(|&p| p == 0).unwrap() as u32;
        let b = cut.of_node.iter().position(|&p| p == 1).unwrap() as u32;
        let mut w = WindowProfile::new(cut);
        let l = w.window.0;
        // Window 0: 3 events in a, 1 in b (received from a). Window 2: 1 in b, a global.
        w.count(SimTime(0), Owner::Node { node: a, from: None });
        w.count(SimTime(1), Owner::Node { node: a, from: Some(a) });
        w.count(SimTime(2), Owner::Node { node: a, from: None });
        w.count(SimTime(l - 1), Owner::Node { node: b, from: Some(a) });
        w.count(SimTime(2 * l), Owner::Node { node: b, from: None });
        w.count(SimTime(2 * l + 5), Owner::Global);
        w.finish();
        assert_eq!(w.events, vec![3, 2]);
        assert_eq!((w.windows, w.critical_events, w.cross, w.critical_cross), (2, 4, 1, 1));
        assert_eq!((w.global_events, w.global_windows), (1, 1));
        // No cross or barrier cost: T1 = 6, T2 = 4 + 1 → 6 / (2 · 5).
        assert!((w.projected_efficiency(1.0, 0.0, 0.0) - 0.6).abs() < 1e-12);
    }
}
