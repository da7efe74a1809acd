//! What a rate recomputation costs the flow engine with many flows in the fabric at once
//! (`rocelab bench --flow-recompute N`): N flows start together, then the engine is timed
//! over the events that follow, each a flow ending and its connected component refilled.

use rocelab_model::{Model, NodeId, SimTime};
use rocelab_sim::flow::FlowSim;
use rocelab_sim::rng::Rng;
use rocelab_sim::traffic::FlowSpec;
use rocelab_sim::{EngineKind, SimOptions};
use std::time::Instant;

/// Who sends to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairs {
    /// Uniformly random host pairs: on a Clos most cross the top tier, so every flow shares
    /// links with many others (one connected component: the worst case).
    Random,
    /// Each host to another host on its own leaf (rail-local traffic): small components.
    SameLeaf,
}

#[derive(Clone, Debug)]
pub struct RecomputeCost {
    pub flows: usize,
    pub pairs: Pairs,
    /// Building the engine and starting every flow (paths traced), seconds.
    pub start_s: f64,
    /// The first fill, of all flows at once, seconds.
    pub first_fill_s: f64,
    /// Events timed after it, their wall seconds, and the flows and links they refilled.
    pub events: u64,
    pub events_s: f64,
    pub recomputes: u64,
    pub flows_refilled: u64,
    pub links_refilled: u64,
}

impl RecomputeCost {
    pub fn line(&self) -> String {
        let per = self.events_s / self.recomputes.max(1) as f64;
        format!(
            "{:>8} flows ({:?}): start {:.2} s, first fill {:.3} s; then {} events, {:.1} µs per recompute, {:.0} flows and {:.0} links refilled per recompute",
            self.flows,
            self.pairs,
            self.start_s,
            self.first_fill_s,
            self.events,
            per * 1e6,
            self.flows_refilled as f64 / self.recomputes.max(1) as f64,
            self.links_refilled as f64 / self.recomputes.max(1) as f64,
        )
    }
}

fn leaf_of(m: &Model, h: NodeId) -> NodeId {
    m.port(m.port(m.node(h).ports().next().expect("a host has a port")).peer).node
}

/// `flows` flows of 1..=64 MB (seeded), all starting at 0; then `events` events are timed.
pub fn recompute_cost(m: &Model, flows: usize, pairs: Pairs, events: u64) -> Result<RecomputeCost, String> {
    let hosts: Vec<NodeId> = m.hosts().collect();
    let mut by_leaf: std::collections::BTreeMap<NodeId, Vec<NodeId>> = Default::default();
    for &h in &hosts {
        by_leaf.entry(leaf_of(m, h)).or_default().push(h);
    }
    let mut rng = Rng::new(11, 0xf10);
    let class = m.qos.rdma_class();
    let specs: Vec<FlowSpec> = (0..flows)
        .map(|_| {
            let src = hosts[rng.below(hosts.len() as u64) as usize];
            let dst = match pairs {
                Pairs::Random => loop {
                    let d = hosts[rng.below(hosts.len() as u64) as usize];
                    if d != src {
                        break d;
                    }
                },
                Pairs::SameLeaf => {
                    let peers = &by_leaf[&leaf_of(m, src)];
                    let i = peers.iter().position(|p| *p == src).expect("on its leaf");
                    peers[(i + 1 + rng.below(peers.len() as u64 - 1) as usize) % peers.len()]
                }
            };
            FlowSpec {
                src,
                dst,
                size_bytes: 1_000_000 * (1 + rng.below(64)),
                start: SimTime::ZERO,
                class,
                qps: 1,
                origin: 0,
                tag: 0,
                sport: None,
                transport: rocelab_sim::traffic::Transport::Rdma,
            }
        })
        .collect();
    let opts = SimOptions { engine: EngineKind::Flow, ..rocelab_sim::options_from_model(m) };
    let t0 = Instant::now();
    let mut sim = FlowSim::new(m, specs, Vec::new(), opts).map_err(|d| format!("{d:?}"))?;
    sim.run_events(flows as u64, &mut |_| {});
    let start_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    sim.run_events(1, &mut |_| {});
    let first_fill_s = t1.elapsed().as_secs_f64();
    let before = sim.stats();
    let e0 = sim.events();
    let t2 = Instant::now();
    sim.run_events(events, &mut |_| {});
    let events_s = t2.elapsed().as_secs_f64();
    let after = sim.stats();
    Ok(RecomputeCost {
        flows,
        pairs,
        start_s,
        first_fill_s,
        events: sim.events() - e0,
        events_s,
        recomputes: after.recomputes - before.recomputes,
        flows_refilled: after.flows_refilled - before.flows_refilled,
        links_refilled: after.links_refilled - before.links_refilled,
    })
}
