//! What a scenario needs to know about the fabric: the hosts taking part, their line rate and
//! bandwidth-delay product (the scale every default is derived from), hop distances, and the
//! spine uplinks and spines that faults are placed on.

use rocelab_model::topology::Tier;
use rocelab_model::{glob_match, Diagnostic, Model, NodeId, PortId, SimTime};
use std::collections::VecDeque;

/// The scale of a fabric, as defaults see it.
#[derive(Clone, Debug)]
pub struct Scale {
    /// The hosts taking part, in ring order (rail by rail on a rail-optimized fabric).
    pub hosts: Vec<NodeId>,
    /// The slowest of their line rates, bits/s.
    pub rate_bps: f64,
    /// RoCE payload per packet.
    pub mtu: u32,
    /// Base round trip across the fabric's widest path (propagation and one MTU frame per hop
    /// each way), unloaded.
    pub rtt: SimTime,
    /// rate × rtt, bytes.
    pub bdp_bytes: u64,
    /// The largest switch buffer of the fabric.
    pub buffer_bytes: u64,
}

impl Scale {
    pub fn new(m: &Model, pats: &Option<Vec<String>>, path: &str) -> Result<Scale, Diagnostic> {
        let all = rocelab_workload::default_ranks(m);
        let hosts: Vec<NodeId> = match pats {
            None => all,
            Some(ps) => all.into_iter().filter(|h| ps.iter().any(|p| glob_match(p, &m.node(*h).name))).collect(),
        };
        if hosts.len() < 2 {
            return Err(Diagnostic::new(
                format!("{path}.hosts"),
                format!("{} host(s) take part; a scenario needs at least 2", hosts.len()),
                "widen `hosts` (glob patterns, e.g. \"node*-nic0\"), or use a fabric with more hosts",
            ));
        }
        let rate_bps = hosts.iter().map(|h| m.host_speed(*h).gbps() * 1e9).fold(f64::INFINITY, f64::min);
        let mtu = hosts.iter().map(|h| m.nic_of(*h).mtu).min().unwrap_or(1024);
        let links = if m.nodes.iter().any(|n| n.tier == Tier::Core) {
            6
        } else if m.nodes.iter().any(|n| n.tier == Tier::Spine) {
            4
        } else {
            2
        };
        let delay = m.ports.iter().map(|p| p.delay.0).max().unwrap_or(0);
        let frame_ps = ((mtu as f64 + 78.0) * 8.0 / rate_bps * 1e12) as u64;
        let rtt = SimTime(2 * links * (delay + frame_ps));
        let bdp_bytes = (rate_bps * rtt.as_secs_f64() / 8.0).ceil() as u64;
        let buffer_bytes = m.switch_models.iter().map(|s| s.params.buffer_bytes).max().unwrap_or(0);
        Ok(Scale { hosts, rate_bps, mtu, rtt, bdp_bytes: bdp_bytes.max(mtu as u64), buffer_bytes })
    }

    /// Payload bytes one host sends in `t` at `load` × its line rate (at least one byte).
    pub fn bytes_in(&self, t: SimTime, load: f64) -> u64 {
        ((self.rate_bps * load * t.as_secs_f64() / 8.0) as u64).max(1)
    }

    /// Time to move `bytes` of payload at line rate.
    pub fn time_for(&self, bytes: u64) -> SimTime {
        SimTime::from_secs_f64(bytes as f64 * 8.0 / self.rate_bps)
    }
}

/// Hop distance (links) from `from` to every node.
pub fn distances(m: &Model, from: NodeId) -> Vec<u32> {
    let mut d = vec![u32::MAX; m.nodes.len()];
    let mut q = VecDeque::from([from]);
    d[from.idx()] = 0;
    while let Some(n) = q.pop_front() {
        for p in m.node(n).ports() {
            let peer = m.port(m.port(p).peer).node;
            if d[peer.idx()] == u32::MAX {
                d[peer.idx()] = d[n.idx()] + 1;
                q.push_back(peer);
            }
        }
    }
    d
}

/// The leaf a host hangs off (its first port's peer).
pub fn leaf_of(m: &Model, host: NodeId) -> NodeId {
    m.port(m.port(m.node(host).first_port_id()).peer).node
}

/// Leaf ports whose peer is a spine: the uplinks faults and hotspots are placed on.
pub fn spine_uplinks(m: &Model) -> Vec<PortId> {
    m.switches()
        .filter(|s| m.node(*s).tier == Tier::Leaf)
        .flat_map(|s| m.node(s).ports())
        .filter(|p| m.node(m.port(m.port(*p).peer).node).tier == Tier::Spine)
        .collect()
}

pub fn spines(m: &Model) -> Vec<NodeId> {
    m.switches().filter(|s| m.node(*s).tier == Tier::Spine).collect()
}

/// Wire bytes a link carried in both directions, from per-port tx counters.
pub fn link_bytes(m: &Model, tx: &[u64], p: PortId) -> u64 {
    tx[p.idx()] + tx[m.port(p).peer.idx()]
}

/// Wire bytes sent by every port of `node`.
pub fn node_tx(m: &Model, tx: &[u64], node: NodeId) -> u64 {
    m.node(node).ports().map(|p| tx[p.idx()]).sum()
}
