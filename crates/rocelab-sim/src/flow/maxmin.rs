//! Max-min fair rates by progressive filling (water-filling), with per-flow caps.
//!
//! Bertsekas & Gallager, *Data Networks* (2nd ed., 1992), §6.5.2: start every flow at rate 0
//! and raise all rates together; when a link fills, the flows crossing it are frozen at the
//! rate they reached (that link is their bottleneck); when a flow reaches its own cap (its
//! NIC's line rate), it is frozen there; the others keep rising until every flow is frozen.
//! The result is the unique max-min fair allocation: no flow's rate can grow without taking
//! from a flow whose rate is no larger.
//!
//! Implemented as the equivalent event-driven form: a link's *level* is its capacity left
//! over the flows not yet frozen on it (`rem / n`); the next thing to freeze is the lowest
//! level or the lowest cap. Freezing a flow at rate x takes x from each of its links, and a
//! link's level can then only rise (x ≤ its level). So the heap holds one entry per link, a
//! lower bound of its level: an entry at the top that is stale (not `rem / n` as recomputed)
//! is put back at the current level with one sift, until the top is current — the minimum.
//! A link is re-sifted only when it reaches the top stale, not each time a freeze touches it.
//! Cost: O(P + S log L) for F flows whose paths have P link crossings in total over L links,
//! S the stale entries met at the top, plus sorting the caps.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A heap entry: link `j` at `level`, as one integer ordered as (`level` by `total_cmp`,
/// then `j`): the heap compares one integer where it compared a float's ordering and an
/// index, and the same key is the same level to the bit.
#[inline]
fn key(level: f64, j: u32) -> u128 {
    // `f64::total_cmp`'s own mapping to a signed integer, moved to unsigned order.
    let b = level.to_bits() as i64;
    let ordered = (b ^ (((b >> 63) as u64) >> 1) as i64) as u64 ^ (1 << 63);
    (ordered as u128) << 32 | j as u128
}

/// Scratch space for [`WaterFill::fill`], reused between calls so a call allocates nothing
/// once the vectors have grown to the largest problem seen.
#[derive(Default)]
pub struct WaterFill {
    /// Per global link id: the call it was last seen in, and its local index then.
    stamp: Vec<u32>,
    local: Vec<u32>,
    epoch: u32,
    /// Per local link: capacity left, flows not yet frozen, and its flows (CSR).
    rem: Vec<f64>,
    cnt: Vec<u32>,
    start: Vec<u32>,
    adj: Vec<u32>,
    lids: Vec<u32>,
    frozen: Vec<bool>,
    order: Vec<u32>,
    heap: BinaryHeap<Reverse<u128>>,
}

impl WaterFill {
    /// Max-min fair rates of F flows into `rate` (resized to F). Flow i crosses the links
    /// `links[off[i]..off[i + 1]]` (global ids indexing `link_cap`) and may not exceed
    /// `flow_cap[i]`. Units are the caller's (bits/s here). Every link a flow crosses
    /// counts: the flows given must be all the flows on those links (a connected component),
    /// or the capacities must already exclude the others' share.
    pub fn fill(&mut self, link_cap: &[f64], off: &[u32], links: &[u32], flow_cap: &[f64], rate: &mut Vec<f64>) {
        let nf = flow_cap.len();
        debug_assert_eq!(off.len(), nf + 1);
        rate.clear();
        rate.resize(nf, 0.0);
        if self.stamp.len() < link_cap.len() {
            self.stamp.resize(link_cap.len(), 0);
            self.local.resize(link_cap.len(), 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        self.lids.clear();
        for &l in links {
            if self.stamp[l as usize] != self.epoch {
                self.stamp[l as usize] = self.epoch;
                self.local[l as usize] = self.lids.len() as u32;
                self.lids.push(l);
            }
        }
        let nl = self.lids.len();
        self.rem.clear();
        self.rem.extend(self.lids.iter().map(|&l| link_cap[l as usize].max(0.0)));
        self.cnt.clear();
        self.cnt.resize(nl, 0);
        for &l in links {
            self.cnt[self.local[l as usize] as usize] += 1;
        }
        // Link → flows, compressed rows.
        self.start.clear();
        self.start.push(0);
        let mut acc = 0;
        for &c in &self.cnt {
            acc += c;
            self.start.push(acc);
        }
        self.adj.clear();
        self.adj.resize(links.len(), 0);
        let mut fillp: Vec<u32> = std::mem::take(&mut self.order);
        fillp.clear();
        fillp.extend_from_slice(&self.start[..nl]);
        for f in 0..nf {
            for &l in &links[off[f] as usize..off[f + 1] as usize] {
                let j = self.local[l as usize] as usize;
                self.adj[fillp[j] as usize] = f as u32;
                fillp[j] += 1;
            }
        }
        self.order = fillp;
        // Built in one O(n) heapify, not n pushes (the heap's vector is reused).
        let mut h = std::mem::take(&mut self.heap).into_vec();
        h.clear();
        h.extend((0..nl).map(|j| Reverse(key(self.rem[j] / self.cnt[j] as f64, j as u32))));
        self.heap = BinaryHeap::from(h);
        // Flows by cap, lowest first (ties in input order: deterministic).
        self.order.clear();
        self.order.extend(0..nf as u32);
        if flow_cap.windows(2).any(|w| w[0] != w[1]) {
            self.order.sort_by(|a, b| flow_cap[*a as usize].total_cmp(&flow_cap[*b as usize]).then(a.cmp(b)));
        }
        self.frozen.clear();
        self.frozen.resize(nf, false);
        let mut left = nf;
        let mut next_cap = 0;
        while left > 0 {
            while next_cap < nf && self.frozen[self.order[next_cap] as usize] {
                next_cap += 1;
            }
            let cap_level = if next_cap < nf { flow_cap[self.order[next_cap] as usize] } else { f64::INFINITY };
            // The lowest level. A link keeps one entry, its level when last seen at the top:
            // levels only rise, so an entry is a lower bound, and a stale one at the top goes
            // back in at its current level (one sift) until the top is current: the minimum.
            let link = loop {
                let Some(mut top) = self.heap.peek_mut() else { break None };
                let Reverse(was) = *top;
                let j = was as u32 as usize;
                if self.cnt[j] == 0 {
                    std::collections::binary_heap::PeekMut::pop(top);
                    continue;
                }
                let cur = self.rem[j] / self.cnt[j] as f64;
                let now = key(cur, j as u32);
                if now == was {
                    break Some((cur, j));
                }
                *top = Reverse(now);
            };
            match link {
                Some((x, j)) if x < cap_level => {
                    self.heap.pop();
                    for k in self.start[j]..self.start[j + 1] {
                        let f = self.adj[k as usize] as usize;
                        if !self.frozen[f] {
                            self.freeze(f, x, off, links, rate);
                            left -= 1;
                        }
                    }
                }
                _ if next_cap < nf => {
                    // Every flow capped at this level (all are where caps are line rates).
                    while next_cap < nf && flow_cap[self.order[next_cap] as usize] == cap_level {
                        let f = self.order[next_cap] as usize;
                        if !self.frozen[f] {
                            self.freeze(f, cap_level, off, links, rate);
                            left -= 1;
                        }
                        next_cap += 1;
                    }
                }
                // Flows crossing no link and uncapped: unbounded; callers never ask for them.
                _ => break,
            }
        }
    }

    fn freeze(&mut self, f: usize, x: f64, off: &[u32], links: &[u32], rate: &mut [f64]) {
        self.frozen[f] = true;
        rate[f] = x;
        for &l in &links[off[f] as usize..off[f + 1] as usize] {
            let j = self.local[l as usize] as usize;
            self.rem[j] = (self.rem[j] - x).max(0.0);
            self.cnt[j] -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    //! Allocations worked out by hand (progressive filling on paper).
    use super::*;

    fn solve(caps: &[f64], paths: &[&[u32]], flow_cap: &[f64]) -> Vec<f64> {
        let mut off = vec![0u32];
        let mut links = vec![];
        for p in paths {
            links.extend_from_slice(p);
            off.push(links.len() as u32);
        }
        let mut rate = vec![];
        WaterFill::default().fill(caps, &off, &links, flow_cap, &mut rate);
        rate
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-9 * y.abs().max(1.0), "{a:?} != {b:?}");
        }
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn heap_keys_order_as_total_cmp_then_index() {
        let levels = [0.0, 1e-300, 0.5, 1.0, 1.0 + f64::EPSILON, 3.0e9, 4.0e11, f64::MAX, INF];
        for (a, &x) in levels.iter().enumerate() {
            for (b, &y) in levels.iter().enumerate() {
                for (i, j) in [(0u32, 1u32), (1, 0), (7, 7), (u32::MAX, 0)] {
                    let want = x.total_cmp(&y).then(i.cmp(&j));
                    assert_eq!(key(x, i).cmp(&key(y, j)), want, "{a} {b} {i} {j}");
                }
            }
        }
    }

    #[test]
    fn three_flows_over_two_links() {
        // Links A (cap 1) and B (cap 2). Flow 0 crosses A and B, flow 1 only A, flow 2 only B.
        // A fills first at 1/2: flows 0 and 1 get 0.5; B has 2 - 0.5 = 1.5 left for flow 2.
        close(&solve(&[1.0, 2.0], &[&[0, 1], &[0], &[1]], &[INF; 3]), &[0.5, 0.5, 1.5]);
    }

    #[test]
    fn the_classic_linear_network() {
        // Bertsekas & Gallager's example shape: a long flow over links 0..3 (cap 1 each) and
        // one short flow per link: every link has 2 flows, all get 1/2.
        close(&solve(&[1.0; 3], &[&[0, 1, 2], &[0], &[1], &[2]], &[INF; 4]), &[0.5; 4]);
        // Link 1 with capacity 3: links 0 and 2 still bottleneck the long flow at 1/2, the
        // short flow on link 1 takes the other 2.5.
        close(&solve(&[1.0, 3.0, 1.0], &[&[0, 1, 2], &[0], &[1], &[2]], &[INF; 4]), &[0.5, 0.5, 2.5, 0.5]);
    }

    #[test]
    fn a_cap_below_the_fair_share_frees_capacity_for_the_others() {
        // One link of 10, three flows; flow 0 capped at 1: the others share 9.
        close(&solve(&[10.0], &[&[0], &[0], &[0]], &[1.0, INF, INF]), &[1.0, 4.5, 4.5]);
        // Caps above the share do nothing.
        close(&solve(&[10.0], &[&[0], &[0]], &[7.0, 7.0]), &[5.0, 5.0]);
        // A lone flow on a fat link runs at its cap (its NIC's line rate).
        close(&solve(&[400.0], &[&[0]], &[100.0]), &[100.0]);
    }

    #[test]
    fn two_bottlenecks_in_sequence() {
        // Link 0 (cap 3) carries flows 0,1,2; link 1 (cap 1) carries flows 1,2. Link 1 fills
        // at 1/2 (flows 1, 2), then flow 0 takes what is left of link 0: 3 - 1 = 2.
        close(&solve(&[3.0, 1.0], &[&[0], &[0, 1], &[0, 1]], &[INF; 3]), &[2.0, 0.5, 0.5]);
    }

    #[test]
    fn max_min_properties_hold_on_seeded_random_problems() {
        // Feasible (no link over capacity) and every flow has a bottleneck: a saturated link
        // on which it has the largest rate, or its cap.
        let mut rng = crate::rng::Rng::new(7, 1);
        for _ in 0..300 {
            let nl = 1 + rng.below(12) as usize;
            let nf = 1 + rng.below(30) as usize;
            let caps: Vec<f64> = (0..nl).map(|_| 1.0 + rng.below(100) as f64).collect();
            let paths: Vec<Vec<u32>> = (0..nf)
                .map(|_| {
                    let mut p: Vec<u32> = (0..nl as u32).filter(|_| rng.below(3) == 0).collect();
                    if p.is_empty() {
                        p.push(rng.below(nl as u64) as u32);
                    }
                    p
                })
                .collect();
            let fcap: Vec<f64> =
                (0..nf).map(|_| if rng.below(2) == 0 { INF } else { 1.0 + rng.below(40) as f64 }).collect();
            let refs: Vec<&[u32]> = paths.iter().map(|p| &p[..]).collect();
            let r = solve(&caps, &refs, &fcap);
            let mut load = vec![0.0; nl];
            for (f, p) in paths.iter().enumerate() {
                for &l in p {
                    load[l as usize] += r[f];
                }
            }
            for l in 0..nl {
                assert!(load[l] <= caps[l] * (1.0 + 1e-9), "link {l} over capacity");
            }
            for (f, p) in paths.iter().enumerate() {
                let at_cap = (r[f] - fcap[f]).abs() <= 1e-9 * fcap[f];
                let bottleneck = p.iter().any(|&l| {
                    let saturated = load[l as usize] >= caps[l as usize] * (1.0 - 1e-9);
                    let largest = paths
                        .iter()
                        .enumerate()
                        .filter(|(_, q)| q.contains(&l))
                        .all(|(g, _)| r[g] <= r[f] * (1.0 + 1e-9));
                    saturated && largest
                });
                assert!(at_cap || bottleneck, "flow {f} has no bottleneck: {r:?}");
            }
        }
    }
}
