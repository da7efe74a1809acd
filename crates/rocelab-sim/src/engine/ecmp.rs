//! ECMP: the 5-tuple hash, the choice of an equal-cost next hop (resilient on failure), and
//! which switches still reach each destination after links go down.

use super::*;

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
    /// (`NONE`: no usable port). ECMP by the switch's seeded hash; resilient on failure.
    #[inline]
    pub(super) fn ecmp_choose(&self, sw: u32, dst: u32, hash: u32) -> u32 {
        let node = self.switches[sw as usize].node;
        let cands = self.m.routing.candidates(NodeId(node), NodeId(dst));
        if cands.is_empty() {
            return NONE;
        }
        let h = mix64(hash as u64 ^ self.switches[sw as usize].seed);
        let c = cands[(h % cands.len() as u64) as usize];
        if self.ecmp_usable(c, node, dst) {
            return c.0;
        }
        self.ecmp_rehash(cands, node, dst, h)
    }

    #[inline]
    fn ecmp_usable(&self, c: PortId, node: u32, dst: u32) -> bool {
        let cp = &self.ports[c.idx()];
        cp.up && cp.node == node && self.next_hop_reaches(cp.peer, dst)
    }

    /// Resilient hashing, as switch ASICs do it: only the flows hashed to a dead (or, at a
    /// multi-homed host's switch, a foreign) member move, spread over the usable members by a
    /// second hash; every other flow keeps its path.
    #[cold]
    fn ecmp_rehash(&self, cands: &[PortId], node: u32, dst: u32, h: u64) -> u32 {
        let live = cands.iter().filter(|c| self.ecmp_usable(**c, node, dst)).count() as u64;
        if live == 0 {
            return NONE;
        }
        let k = (mix64(h) % live) as usize;
        cands.iter().filter(|c| self.ecmp_usable(**c, node, dst)).nth(k).map_or(NONE, |c| c.0)
    }

    /// After a failure, a next hop is usable only if its switch still reaches the destination.
    #[inline]
    pub(super) fn next_hop_reaches(&self, peer_port: u32, dst: u32) -> bool {
        let Some(reach) = &self.reach else { return true };
        let r = &self.m.routing;
        let node = self.ports[peer_port as usize].node as usize;
        let row = r.switch_row[node];
        if row == NONE {
            return true;
        }
        let cell = row as usize * r.groups.len() + r.host_group[dst as usize] as usize;
        if r.dist[cell] == 0 {
            // The next switch is one of `dst`'s own: it must still have a live link to it (a
            // dual-homed host whose link there is down is reached through its other switch).
            return r.host_facing[dst as usize].iter().any(|p| {
                let hp = &self.ports[p.idx()];
                hp.up && hp.node as usize == node
            });
        }
        reach[cell]
    }

    /// Recomputes which switches still reach each destination group over live links, in order
    /// of distance (a switch reaches a group if one of its live next hops does).
    #[cold]
    #[inline(never)]
    pub(super) fn reconverge(&mut self) {
        if self.ports.iter().all(|p| p.up) {
            self.reach = None;
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
        self.reach = Some(reach);
    }
}
