//! ECMP: the 5-tuple hash, the choice of an equal-cost next hop (resilient on failure), and
//! how each switch still reaches each destination after links go down or routes are withdrawn.

use super::*;
use rocelab_model::routing::Routing;

/// How well a next hop leads to a destination, as routing ranks it: over links whose routes
/// stand (`PREFERRED`), only through a link whose routes were withdrawn and so are kept as a
/// last resort (`FALLBACK`, RFC 8326 graceful shutdown: the routes stay, depreferenced, until
/// traffic has moved), or not at all.
pub(super) type RouteLevel = u8;
pub(super) const UNREACHED: RouteLevel = 0;
pub(super) const FALLBACK: RouteLevel = 1;
pub(super) const PREFERRED: RouteLevel = 2;

/// A run of `Fib::ports`.
#[derive(Clone, Copy)]
struct Span {
    off: u32,
    len: u32,
}

/// `Span::off` of a cell whose switch is one of the group's attachment switches: the
/// candidates are then the ports facing the destination host itself.
const ATTACHED: u32 = u32::MAX;

/// The model's forwarding table flattened for the per-hop lookup: one cell per (engine switch,
/// destination group) naming a run of one port array, where the model's table takes a row
/// lookup, a distance check and an interned group behind a pointer. At fabric scale ECMP runs
/// once per packet per switch hop and those dependent loads were a quarter of the run. Static:
/// failures and withdrawals are judged against it by the routing views, not written into it.
pub(super) struct Fib {
    groups: usize,
    /// `cells[sw * groups + g]`.
    cells: Vec<Span>,
    /// Per node: the switch ports facing it (hosts; empty for switches).
    host: Vec<Span>,
    ports: Vec<PortId>,
}

impl Fib {
    pub(super) fn new(r: &Routing, switch_nodes: impl Iterator<Item = u32>) -> Fib {
        let mut ports = Vec::new();
        let mut span_of = |set: &[PortId]| {
            let s = Span { off: ports.len() as u32, len: set.len() as u32 };
            ports.extend_from_slice(set);
            s
        };
        let group_spans: Vec<Span> = r.ecmp_groups.iter().map(|g| span_of(g)).collect();
        let host: Vec<Span> = r.host_facing.iter().map(|h| span_of(h)).collect();
        let groups = r.groups.len();
        let mut cells = Vec::new();
        for node in switch_nodes {
            let row = r.switch_row[node as usize] as usize;
            cells.extend((0..groups).map(|g| {
                let cell = row * groups + g;
                match (r.dist[cell], r.next_hop[cell]) {
                    (0, _) => Span { off: ATTACHED, len: 0 },
                    (_, NONE) => Span { off: 0, len: 0 },
                    (_, id) => group_spans[id as usize],
                }
            }));
        }
        Fib { groups, cells, host, ports }
    }

    /// What `Routing::candidates` gives for the node of engine switch `sw`, toward host `dst`
    /// of destination group `group`.
    #[inline]
    pub(super) fn candidates(&self, sw: u32, dst: u32, group: u32) -> &[PortId] {
        let mut s = self.cells[sw as usize * self.groups + group as usize];
        if s.off == ATTACHED {
            s = self.host[dst as usize];
        }
        &self.ports[s.off as usize..][..s.len as usize]
    }
}

/// `h mod n` (n > 0), with a mask where n is a power of two (most ECMP groups: the bits are
/// the same, the division is gone).
#[inline]
fn member(h: u64, n: usize) -> usize {
    let n = n as u64;
    (if n & (n - 1) == 0 { h & (n - 1) } else { h % n }) as usize
}

/// The routing state one switch forwards by: its table (`None`: all links up and routed) and
/// whether it is the newest (only then does it also see which host links are down).
#[derive(Clone, Copy)]
pub(super) struct View<'a> {
    table: Option<&'a [RouteLevel]>,
    current: bool,
}

impl<'a> View<'a> {
    #[inline]
    pub(super) fn of(sim: &'a Sim<'_>, sw: u32) -> Self {
        let e = sim.sw_view[sw as usize] as usize;
        View { table: sim.views[e].as_deref(), current: e + 1 == sim.views.len() }
    }
}

/// What one link itself offers routing: its routes, or with them withdrawn only a last resort
/// while it is up.
#[inline]
fn link_level(p: &Port) -> RouteLevel {
    if p.routed {
        PREFERRED
    } else if p.up {
        FALLBACK
    } else {
        UNREACHED
    }
}

impl Sim<'_> {
    pub(crate) fn flow_hash(&self, src: u32, dst: u32, sport: u32) -> u32 {
        let f = self.hash_fields;
        let mut h = 0x1234_5678_9abc_def0u64;
        if f & 1 != 0 {
            h = mix64(h ^ src as u64);
        }
        if f & 2 != 0 {
            h = mix64(h ^ ((dst as u64) << 20));
        }
        if f & 4 != 0 {
            h = mix64(h ^ 17);
        }
        if f & 8 != 0 {
            h = mix64(h ^ ((sport as u64) << 40));
        }
        if f & 16 != 0 {
            h = mix64(h ^ ROCE_UDP_PORT as u64);
        }
        (h >> 32) as u32
    }

    /// The egress port switch `sw` forwards a packet for host `dst` with flow hash `hash` on
    /// (`NONE`: no usable port). ECMP by the switch's seeded hash, resilient on failure, judged
    /// by the routing state the switch has learned.
    #[inline]
    pub(super) fn ecmp_choose(&self, sw: u32, dst: u32, hash: u32) -> u32 {
        let cands = self.fib.candidates(sw, dst, self.m.routing.host_group[dst as usize]);
        if cands.is_empty() {
            return NONE;
        }
        let s = &self.switches[sw as usize];
        let (node, h) = (s.node, mix64(hash as u64 ^ s.seed));
        let c = cands[member(h, cands.len())];
        if self.views.len() == 1 {
            // No link has changed since the start: every switch forwards by the full table
            // (what `View::of` would say, without its two loads).
            let cp = &self.ports[c.idx()];
            if cp.routed && cp.node == node {
                return c.0;
            }
        }
        let view = View::of(self, sw);
        if self.ecmp_usable(view, c, node, dst) {
            return c.0;
        }
        self.ecmp_rehash(view, cands, node, dst, h)
    }

    /// A local port is usable if its routes stand (a switch sees its own links at once) and, by
    /// what the switch has learned, its peer still reaches `dst` over routes that stand.
    #[inline]
    pub(super) fn ecmp_usable(&self, view: View, c: PortId, node: u32, dst: u32) -> bool {
        let cp = &self.ports[c.idx()];
        cp.routed && cp.node == node && self.next_hop_reaches(view, cp.peer, dst) == PREFERRED
    }

    /// How member `c` leads to `dst`: the worse of its own link and what lies beyond it.
    fn member_level(&self, view: View, c: PortId, node: u32, dst: u32) -> RouteLevel {
        let cp = &self.ports[c.idx()];
        if cp.node != node {
            return UNREACHED;
        }
        link_level(cp).min(self.next_hop_reaches(view, cp.peer, dst))
    }

    /// Resilient hashing, as switch ASICs do it: only the flows hashed to a dead (or, at a
    /// multi-homed host's switch, a foreign, or a withdrawn) member move, spread over the usable
    /// members by a second hash; every other flow keeps its path. With no preferred member
    /// left, the last-resort ones carry the traffic.
    #[cold]
    pub(super) fn ecmp_rehash(&self, view: View, cands: &[PortId], node: u32, dst: u32, h: u64) -> u32 {
        let levels = || cands.iter().map(|c| (c, self.member_level(view, *c, node, dst)));
        let best = levels().map(|(_, l)| l).max().unwrap_or(UNREACHED);
        if best == UNREACHED {
            return NONE;
        }
        let live = levels().filter(|(_, l)| *l == best).count() as u64;
        let k = (mix64(h) % live) as usize;
        levels().filter(|(_, l)| *l == best).nth(k).map_or(NONE, |(c, _)| c.0)
    }

    /// After a failure or a withdrawal, how a next hop still reaches the destination, as far as
    /// the deciding switch knows.
    #[inline]
    fn next_hop_reaches(&self, view: View, peer_port: u32, dst: u32) -> RouteLevel {
        let Some(reach) = view.table else { return PREFERRED };
        let r = &self.m.routing;
        let node = self.ports[peer_port as usize].node as usize;
        let row = r.switch_row[node];
        if row == NONE {
            return PREFERRED;
        }
        let cell = row as usize * r.groups.len() + r.host_group[dst as usize] as usize;
        if r.dist[cell] == 0 && view.current {
            // The next switch is one of `dst`'s own: it must still have a live link to it (a
            // dual-homed host whose link there is down is reached through its other switch).
            let attached = r.host_facing[dst as usize].iter().any(|p| {
                let hp = &self.ports[p.idx()];
                hp.up && hp.node as usize == node
            });
            return if attached { PREFERRED } else { UNREACHED };
        }
        reach[cell]
    }

    /// The links (egress ports, in order) a packet of a QP leaving NIC `src_nic` (or, while its
    /// port is down, the host's next live one) for host `dst` with flow hash `hash` crosses,
    /// each switch choosing as `ecmp_choose` does for the packet, into `out` (cleared first).
    /// False when no path stands (a dead end, or a loop longer than `max_hops`).
    pub(crate) fn trace_path(&self, src_nic: u32, dst: u32, hash: u32, max_hops: usize, out: &mut Vec<u32>) -> bool {
        out.clear();
        let mut port = self.nics[self.live_nic(src_nic) as usize].port;
        loop {
            let p = &self.ports[port as usize];
            if !p.up || out.len() == max_hops {
                return false;
            }
            out.push(port);
            let next = &self.ports[p.peer as usize];
            if next.node == dst {
                return true;
            }
            if next.sw == NONE {
                return false;
            }
            port = self.ecmp_choose(next.sw, dst, hash);
            if port == NONE {
                return false;
            }
        }
    }

    /// Switch `sw` learns routing state `epoch` (unless it already knows a newer one); states
    /// no switch holds any more are emptied.
    #[cold]
    #[inline(never)]
    pub(super) fn on_route_learn(&mut self, sw: u32, epoch: u32) {
        let v = &mut self.sw_view[sw as usize];
        *v = (*v).max(epoch);
        let oldest = self.sw_view.iter().copied().min().unwrap_or(0) as usize;
        for t in &mut self.views[self.views_freed..oldest] {
            *t = Some(Vec::new());
        }
        self.views_freed = self.views_freed.max(oldest);
    }

    /// After a link change between ports `origin`: the switches at its ends learn the new
    /// routing state at once, each further switch `convergence_per_hop` later per switch hop,
    /// as a withdrawal travels hop by hop. Until then a switch forwards as before, into the
    /// failure.
    #[cold]
    #[inline(never)]
    pub(super) fn spread_route_change(&mut self, origin: [u32; 2]) {
        let epoch = (self.views.len() - 1) as u32;
        if self.convergence_per_hop == SimTime::ZERO {
            self.sw_view.iter_mut().for_each(|v| *v = epoch);
            self.on_route_learn(0, epoch);
            return;
        }
        // Switch hops from the change, over links that are up.
        let mut hops = vec![u32::MAX; self.switches.len()];
        let mut q = std::collections::VecDeque::new();
        for p in origin {
            let sw = self.ports[p as usize].sw;
            if sw != NONE {
                hops[sw as usize] = 0;
                q.push_back(sw as usize);
            }
        }
        let m = self.m;
        while let Some(i) = q.pop_front() {
            for p in m.node(NodeId(self.switches[i].node)).ports() {
                let port = &self.ports[p.idx()];
                let j = self.ports[port.peer as usize].sw;
                if port.up && j != NONE && hops[j as usize] == u32::MAX {
                    hops[j as usize] = hops[i] + 1;
                    q.push_back(j as usize);
                }
            }
        }
        for (i, &h) in hops.iter().enumerate() {
            match h {
                0 => self.sw_view[i] = self.sw_view[i].max(epoch),
                u32::MAX => {}
                h => {
                    let at = self.now + SimTime(self.convergence_per_hop.0 * h as u64);
                    self.q.push(at, Ev::RouteLearn { sw: i as u32, epoch });
                }
            }
        }
    }

    /// Recomputes how every switch still reaches each destination group (`RouteLevel`), in
    /// order of distance: a switch reaches a group as well as its best next hop does, no better
    /// than the link to it allows. Runs after the link between ports `origin` changed, and
    /// spreads the news.
    #[cold]
    #[inline(never)]
    pub(super) fn reconverge(&mut self, origin: [u32; 2]) {
        if self.ports.iter().all(|p| p.routed) {
            self.views.push(None);
            self.spread_route_change(origin);
            return;
        }
        let r = &self.m.routing;
        let ng = r.groups.len();
        let rows = r.switch_row.iter().filter(|x| **x != NONE).count();
        let max_d = r.dist.iter().filter(|d| **d != rocelab_model::routing::UNREACHABLE).max().copied().unwrap_or(0);
        let mut reach = vec![UNREACHED; rows * ng];
        // An attachment switch reaches a group while one of its links to a host of the group
        // is up (host links carry no routes to withdraw).
        for (h, ports) in r.host_facing.iter().enumerate() {
            if ports.is_empty() {
                continue;
            }
            let g = r.host_group[h] as usize;
            for p in ports {
                let sp = &self.ports[p.idx()];
                let row = r.switch_row[sp.node as usize];
                if sp.up && row != NONE {
                    reach[row as usize * ng + g] = PREFERRED;
                }
            }
        }
        let switches: Vec<(usize, u32)> =
            r.switch_row.iter().enumerate().filter(|(_, row)| **row != NONE).map(|(n, row)| (n, *row)).collect();
        for d in 1..=max_d {
            for &(node, row) in &switches {
                for g in 0..ng {
                    let cell = row as usize * ng + g;
                    if r.dist[cell] != d {
                        continue;
                    }
                    let hops = match r.next_hop[cell] {
                        NONE => &[][..],
                        id => &r.ecmp_groups[id as usize][..],
                    };
                    reach[cell] = hops
                        .iter()
                        .map(|p| {
                            let port = &self.ports[p.idx()];
                            let prow = r.switch_row[self.ports[port.peer as usize].node as usize];
                            if port.node as usize != node || prow == NONE {
                                return UNREACHED;
                            }
                            link_level(port).min(reach[prow as usize * ng + g])
                        })
                        .max()
                        .unwrap_or(UNREACHED);
                }
            }
        }
        self.views.push(Some(reach));
        self.spread_route_change(origin);
    }
}

#[cfg(test)]
mod tests {
    //! ECMP hashing and member choice against counts worked out by hand.
    use super::super::test_support::{idle_sim as sim, model};
    use super::*;
    use std::collections::HashSet;

    /// 2 leaves, 4 spines, one uplink from each leaf to each spine (4 equal-cost members),
    /// 2 hosts per leaf; `routing` is the `[routing]` table's body.
    fn fabric(routing: &str) -> Model {
        let text = format!(
            r#"[fabric]
name = "ls"
[topology.leaf_spine]
leaves = 2
spines = 4
hosts_per_leaf = 2
uplinks_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = 100, length_m = 30 }}
leaf_model = "spectrum-2"
spine_model = "spectrum-2"
[routing]
{routing}
"#
        );
        model("ls.toml", &text)
    }

    fn node(m: &Model, name: &str) -> u32 {
        m.node_by_name(name).unwrap_or_else(|| panic!("no {name}")).0
    }

    fn sw(sim: &Sim, node: u32) -> u32 {
        sim.switches.iter().position(|s| s.node == node).unwrap() as u32
    }

    /// 10,000 flows host0 → host2 (leaf0 to leaf1) differing in UDP source port.
    fn hashes(sim: &Sim, src: u32, dst: u32) -> Vec<u32> {
        (0..10_000u32).map(|i| sim.flow_hash(src, dst, 49_152 + i)).collect()
    }

    #[test]
    fn four_members_each_take_a_quarter_of_10000_flows() {
        let m = fabric("");
        let sim = sim(&m);
        let (src, dst) = (node(&m, "host0"), node(&m, "host2"));
        let leaf0 = sw(&sim, node(&m, "leaf0"));
        let cands = m.routing.candidates(NodeId(node(&m, "leaf0")), NodeId(dst)).to_vec();
        assert_eq!(cands.len(), 4, "one uplink to each of 4 spines");
        let hs = hashes(&sim, src, dst);
        assert!(hs.iter().collect::<HashSet<_>>().len() >= 9_990, "source ports give distinct hashes");
        let mut count = [0u32; 4];
        for &h in &hs {
            let out = sim.ecmp_choose(leaf0, dst, h);
            let k = cands.iter().position(|c| c.0 == out).expect("a candidate");
            count[k] += 1;
        }
        // 10,000 / 4 = 2,500 each, ±5 % = ±125 (binomial σ ≈ 43).
        for (k, &c) in count.iter().enumerate() {
            assert!((2_375..=2_625).contains(&c), "member {k}: {c} of 10000 ({count:?})");
        }
        assert_eq!(count.iter().sum::<u32>(), 10_000);
    }

    #[test]
    fn a_dead_member_moves_only_its_flows_and_spreads_them_over_the_rest() {
        let m = fabric("");
        let mut sim = sim(&m);
        let (src, dst) = (node(&m, "host0"), node(&m, "host2"));
        let leaf0 = sw(&sim, node(&m, "leaf0"));
        let cands = m.routing.candidates(NodeId(node(&m, "leaf0")), NodeId(dst)).to_vec();
        let hs = hashes(&sim, src, dst);
        let before: Vec<u32> = hs.iter().map(|&h| sim.ecmp_choose(leaf0, dst, h)).collect();
        // Take the link leaf0 – (the spine behind member 1) down, as a link-down fault does.
        let dead = cands[1].0;
        let peer = sim.ports[dead as usize].peer;
        for p in [dead, peer] {
            sim.ports[p as usize].up = false;
            sim.ports[p as usize].routed = false;
        }
        sim.reconverge([dead, peer]);
        let mut moved = [0u32; 4];
        let mut on_dead = 0;
        for (i, &h) in hs.iter().enumerate() {
            let after = sim.ecmp_choose(leaf0, dst, h);
            assert_ne!(after, dead, "flow {i} still on the dead member");
            assert_ne!(after, NONE, "flow {i} has no path");
            if before[i] == dead {
                on_dead += 1;
                moved[cands.iter().position(|c| c.0 == after).unwrap()] += 1;
            } else {
                assert_eq!(after, before[i], "flow {i} was not on the dead member and moved");
            }
        }
        assert!((2_375..=2_625).contains(&on_dead), "{on_dead} flows were on member 1");
        // The moved flows spread over the 3 live members: on_dead / 3 each, ±10 % (σ ≈ 24).
        assert_eq!(moved[1], 0);
        let third = on_dead as f64 / 3.0;
        for k in [0, 2, 3] {
            let c = moved[k] as f64;
            assert!((c - third).abs() <= 0.10 * third, "member {k} took {c} of {on_dead} moved flows ({moved:?})");
        }
    }

    #[test]
    fn a_withdrawn_member_is_avoided_while_others_stand_and_kept_as_the_last_resort() {
        let m = fabric("");
        let mut sim = sim(&m);
        let (src, dst) = (node(&m, "host0"), node(&m, "host2"));
        let (leaf0, spine1) = (sw(&sim, node(&m, "leaf0")), sw(&sim, node(&m, "spine1")));
        let cands = m.routing.candidates(NodeId(node(&m, "leaf0")), NodeId(dst)).to_vec();
        // Withdraw the routes of the link leaf0 – (the spine behind member 1), as a
        // route-withdraw fault does: the link stays up.
        let (w, peer) = (cands[1].0, sim.ports[cands[1].idx()].peer);
        for p in [w, peer] {
            sim.ports[p as usize].withdrawn = true;
            sim.ports[p as usize].routed = false;
        }
        sim.reconverge([w, peer]);
        let hs = hashes(&sim, src, dst);
        assert!(hs.iter().all(|&h| sim.ecmp_choose(leaf0, dst, h) != w), "leaf0 has 3 members whose routes stand");
        // The spine behind it reaches host0 only over the withdrawn link: it keeps using it
        // (RFC 8326: routes withdrawn gracefully stay as the last resort), so nothing queued
        // there or on its way is black-holed.
        let spine = sim.ports[peer as usize].node;
        assert_eq!(sw(&sim, spine), spine1, "member 1 leads to spine1");
        let back = sim.flow_hash(dst, src, 50_000);
        assert_eq!(sim.ecmp_choose(spine1, src, back), peer);
        // With the link down instead, the spine has no way to host0 at all.
        for p in [w, peer] {
            sim.ports[p as usize].up = false;
        }
        sim.reconverge([w, peer]);
        assert_eq!(sim.ecmp_choose(spine1, src, back), NONE);
    }

    #[test]
    fn removing_the_source_port_field_makes_flows_differing_only_in_it_collide() {
        let full = fabric("");
        let no_sport = fabric(r#"ecmp_hash_fields = ["src-ip", "dst-ip", "protocol", "dst-port"]"#);
        let (sf, sn) = (sim(&full), sim(&no_sport));
        assert_eq!(sf.hash_fields, 0b11111);
        assert_eq!(sn.hash_fields, 0b10111, "src-port is bit 3");
        let (src, dst) = (node(&full, "host0"), node(&full, "host2"));
        let with: HashSet<u32> = (0..1_000u32).map(|i| sf.flow_hash(src, dst, 49_152 + i)).collect();
        let without: HashSet<u32> = (0..1_000u32).map(|i| sn.flow_hash(src, dst, 49_152 + i)).collect();
        // 1,000 source ports: (nearly) 1,000 hashes with the field, exactly 1 without it.
        assert!(with.len() >= 999, "{} distinct hashes", with.len());
        assert_eq!(without.len(), 1);
        // So every such flow takes the same member at leaf0.
        let leaf0 = sw(&sn, node(&no_sport, "leaf0"));
        let outs: HashSet<u32> = without.iter().map(|&h| sn.ecmp_choose(leaf0, dst, h)).collect();
        assert_eq!(outs.len(), 1);
        // The fields still hashed still matter: another source or destination, another hash.
        let h = sn.flow_hash(src, dst, 50_000);
        assert_ne!(h, sn.flow_hash(node(&full, "host1"), dst, 50_000));
        assert_ne!(h, sn.flow_hash(src, node(&full, "host3"), 50_000));
    }
}
