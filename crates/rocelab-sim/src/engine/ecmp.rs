//! ECMP: the 5-tuple hash, the choice of an equal-cost next hop (resilient on failure), and
//! which switches still reach each destination after links go down.

use super::*;

/// The routing state one switch forwards by: its table (`None`: all links up) and whether it
/// is the newest (only then does it also see which host links are down).
#[derive(Clone, Copy)]
struct View<'a> {
    table: Option<&'a [bool]>,
    current: bool,
}

impl<'a> View<'a> {
    #[inline]
    fn of(sim: &'a Sim<'_>, sw: u32) -> Self {
        let e = sim.sw_view[sw as usize] as usize;
        View { table: sim.views[e].as_deref(), current: e + 1 == sim.views.len() }
    }
}

impl Sim<'_> {
    pub(super) fn flow_hash(&self, src: u32, dst: u32, sport: u32) -> u32 {
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
        let node = self.switches[sw as usize].node;
        let cands = self.m.routing.candidates(NodeId(node), NodeId(dst));
        if cands.is_empty() {
            return NONE;
        }
        let h = mix64(hash as u64 ^ self.switches[sw as usize].seed);
        let c = cands[(h % cands.len() as u64) as usize];
        let view = View::of(self, sw);
        if self.ecmp_usable(view, c, node, dst) {
            return c.0;
        }
        self.ecmp_rehash(view, cands, node, dst, h)
    }

    /// A local port is usable if it is up (a switch sees its own links at once) and, by what
    /// the switch has learned, its peer still reaches `dst`.
    #[inline]
    fn ecmp_usable(&self, view: View, c: PortId, node: u32, dst: u32) -> bool {
        let cp = &self.ports[c.idx()];
        cp.up && cp.node == node && self.next_hop_reaches(view, cp.peer, dst)
    }

    /// Resilient hashing, as switch ASICs do it: only the flows hashed to a dead (or, at a
    /// multi-homed host's switch, a foreign) member move, spread over the usable members by a
    /// second hash; every other flow keeps its path.
    #[cold]
    fn ecmp_rehash(&self, view: View, cands: &[PortId], node: u32, dst: u32, h: u64) -> u32 {
        let live = cands.iter().filter(|c| self.ecmp_usable(view, **c, node, dst)).count() as u64;
        if live == 0 {
            return NONE;
        }
        let k = (mix64(h) % live) as usize;
        cands.iter().filter(|c| self.ecmp_usable(view, **c, node, dst)).nth(k).map_or(NONE, |c| c.0)
    }

    /// After a failure, a next hop is usable only if its switch still reaches the destination,
    /// as far as the deciding switch knows.
    #[inline]
    fn next_hop_reaches(&self, view: View, peer_port: u32, dst: u32) -> bool {
        let Some(reach) = view.table else { return true };
        let r = &self.m.routing;
        let node = self.ports[peer_port as usize].node as usize;
        let row = r.switch_row[node];
        if row == NONE {
            return true;
        }
        let cell = row as usize * r.groups.len() + r.host_group[dst as usize] as usize;
        if r.dist[cell] == 0 && view.current {
            // The next switch is one of `dst`'s own: it must still have a live link to it (a
            // dual-homed host whose link there is down is reached through its other switch).
            return r.host_facing[dst as usize].iter().any(|p| {
                let hp = &self.ports[p.idx()];
                hp.up && hp.node as usize == node
            });
        }
        reach[cell]
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

    /// Recomputes which switches still reach each destination group over live links, in order
    /// of distance (a switch reaches a group if one of its live next hops does), after the link
    /// between ports `origin` changed, and spreads the news.
    #[cold]
    #[inline(never)]
    pub(super) fn reconverge(&mut self, origin: [u32; 2]) {
        if self.ports.iter().all(|p| p.up) {
            self.views.push(None);
            self.spread_route_change(origin);
            return;
        }
        let r = &self.m.routing;
        let ng = r.groups.len();
        let rows = r.switch_row.iter().filter(|x| **x != NONE).count();
        let max_d = r.dist.iter().filter(|d| **d != rocelab_model::routing::UNREACHABLE).max().copied().unwrap_or(0);
        let mut reach = vec![false; rows * ng];
        // An attachment switch reaches a group while one of its links to a host of the group
        // is up.
        for (h, ports) in r.host_facing.iter().enumerate() {
            if ports.is_empty() {
                continue;
            }
            let g = r.host_group[h] as usize;
            for p in ports {
                let sp = &self.ports[p.idx()];
                let row = r.switch_row[sp.node as usize];
                if sp.up && row != NONE {
                    reach[row as usize * ng + g] = true;
                }
            }
        }
        let switches: Vec<(usize, u32)> =
            r.switch_row.iter().enumerate().filter(|(_, row)| **row != NONE).map(|(n, row)| (n, *row)).collect();
        for d in 0..=max_d {
            for &(node, row) in &switches {
                for g in 0..ng {
                    let cell = row as usize * ng + g;
                    if r.dist[cell] != d {
                        continue;
                    }
                    reach[cell] = if d == 0 {
                        reach[cell]
                    } else {
                        let hops = match r.next_hop[cell] {
                            NONE => &[][..],
                            id => &r.ecmp_groups[id as usize][..],
                        };
                        hops.iter().any(|p| {
                            let port = &self.ports[p.idx()];
                            let peer_node = self.ports[port.peer as usize].node as usize;
                            port.up && port.node as usize == node && {
                                let prow = r.switch_row[peer_node];
                                prow != NONE && reach[prow as usize * ng + g]
                            }
                        })
                    };
                }
            }
        }
        self.views.push(Some(reach));
        self.spread_route_change(origin);
    }
}
