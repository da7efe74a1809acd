//! Tree all-reduce as NCCL runs it (`NCCL_ALGO=Tree`): a reduce up a tree, then a broadcast
//! down it, pipelined in chunks.
//!
//! * **Between nodes**, NCCL's double binary tree (`src/graph/trees.cc`): tree 0 is a binary
//!   tree over the node indices rooted at 0, in which a node's parent and children follow from
//!   its lowest set bit; tree 1 is tree 0 mirrored (node k plays node n−1−k) when n is even,
//!   shifted by one when n is odd, so most nodes that are interior in one tree are leaves in
//!   the other and the two trees load the NICs evenly. Channel c uses tree c mod 2 on NIC
//!   ⌊c/2⌋ mod R and carries 1/C of the buffer: every NIC carries one channel of each tree (so
//!   2·R channels use all of a node's NICs evenly, `nccl_channels` for the tree), as NCCL
//!   gives each tree half its channels.
//! * **Inside a node**, a chain of its GPUs, from the GPU local to the channel's NIC (ρ, the
//!   head, which talks to the network) through the others in the ring's order (NCCL's
//!   tree pattern chains a node's GPUs the same way). Chain hops run over NVLink/PCIe like the
//!   ring's (latency + bytes / bandwidth, one transfer at a time per GPU); hops between nodes are
//!   messages from NIC ρ of one node to NIC ρ of the other (one rail).
//! * **Pipeline**: the channel's bytes go in chunks of at most `chunk_bytes` (512 KiB by
//!   default, NCCL's Simple step).
//!   A position sends chunk k up once it has chunk k from all its children; the root, once it
//!   has it, sends it down, and every position forwards what it receives to its children. A
//!   connection (between nodes, or two GPUs of a chain) keeps two chunks in flight (double
//!   buffering: the next one is on the wire while the previous one lands), in order, so a
//!   GPU's NVLink serves its connections' chunks as they become ready rather than in the order
//!   they were first queued.
//!
//! With host NICs as ranks (no GPU nodes), every rank is a node of one GPU and the tree is
//! over the ranks. Each link carries each chunk once per direction: per node about 2·S in and
//! out, the ring's volume, but the depth is log₂ n hops instead of 2(n − 1) steps, which is why
//! NCCL picks the tree for latency-bound sizes at scale.

use crate::placement::{IntraNode, Placement};
use crate::protocol::Wire;
use crate::ring::{tag, untag};
use crate::{Outcome, QpUse};
use rocelab_model::{NodeId, SimTime};
use rocelab_sim::rng::Rng;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// Chunks in flight on one connection between nodes.
const WINDOW: u32 = 2;
/// Bit of a tag's step field for the broadcast (down) phase; the chunk takes the bits below.
const DOWN: u32 = 1 << 19;

/// Parent and children of node `r` in the binary tree over `n` nodes rooted at 0 (NCCL's
/// `ncclGetBtree`): with b the lowest set bit of r, the parent is r with b cleared and the
/// next bit set (or just b cleared if that is out of range); the children are r − b/2 and
/// the largest r + b/2, r + b/4, … that exists. Node 0's one child is the largest power of two
/// below n.
pub fn btree(n: u32, r: u32) -> (Option<u32>, Vec<u32>) {
    if n <= 1 {
        return (None, vec![]);
    }
    if r == 0 {
        return (None, vec![n.next_power_of_two() >> 1]);
    }
    let bit = 1 << r.trailing_zeros();
    let mut up = (r ^ bit) | (bit << 1);
    if up >= n {
        up = r ^ bit;
    }
    let mut down = vec![];
    let low = bit >> 1;
    if low > 0 {
        down.push(r - low);
        let mut l = low;
        while l > 0 && r + l >= n {
            l >>= 1;
        }
        if l > 0 {
            down.push(r + l);
        }
    }
    (Some(up), down)
}

/// Node `r`'s parent and children in tree `t` (0 or 1) of NCCL's double binary tree.
pub fn dtree(n: u32, r: u32, t: u32) -> (Option<u32>, Vec<u32>) {
    if t == 0 || n <= 1 {
        return btree(n, r);
    }
    // Node r plays node `to(r)` of tree 0; `from` maps back.
    let odd = n % 2 == 1;
    let to = |x: u32| if odd { (x + n - 1) % n } else { n - 1 - x };
    let from = |x: u32| if odd { (x + 1) % n } else { n - 1 - x };
    let (u, d) = btree(n, to(r));
    (u.map(&from), d.into_iter().map(&from).collect())
}

/// The shape of a tree all-reduce.
#[derive(Clone, Copy, Debug)]
pub struct TreePlan {
    /// The buffer (nccl-tests' size), over all channels.
    pub bytes: u64,
    pub channels: u32,
    /// Pipeline chunk (NCCL's Simple step, 512 KiB by default).
    pub chunk_bytes: u64,
    pub qps: QpUse,
    pub seed: u64,
    /// The protocol: bytes on the wire and post overhead (the chunk is its step).
    pub wire: Wire,
}

/// A position of a channel's tree: a GPU in its node's chain.
#[derive(Clone, Debug)]
struct Pos {
    /// Its rank (the GPU's global index).
    gpu: u32,
    parent: Option<u32>,
    children: Vec<u32>,
    /// NIC of its node for this channel (the head's link to the network).
    nic: NodeId,
    /// Whether the hop to its parent crosses the fabric (the parent is another node's head).
    parent_net: bool,
}

/// One channel's tree: positions, and the state of its chunks.
struct ChannelTree {
    pos: Vec<Pos>,
    root: u32,
    /// Bytes of each chunk of this channel.
    chunks: Vec<u64>,
    /// Children's chunks received, per (position, chunk).
    got_up: Vec<u32>,
    /// Net connections: chunks waiting and in flight, per position (up: its link to its
    /// parent; down: its parent's link to it).
    up_queue: Vec<VecDeque<u32>>,
    up_flight: Vec<u32>,
    down_queue: Vec<VecDeque<u32>>,
    down_flight: Vec<u32>,
    up_sport: Vec<u16>,
    down_sport: Vec<u16>,
    /// Messages sent per connection so far (for the QP turn).
    up_sent: Vec<u64>,
    down_sent: Vec<u64>,
}

pub struct Tree {
    channels: Vec<ChannelTree>,
    qps: QpUse,
    wire: Wire,
    intra: Option<IntraNode>,
    intra_free: Vec<SimTime>,
    out: Rc<RefCell<Outcome>>,
    /// When the collective started (the leaves' releases count from it).
    t0: SimTime,
}

impl Tree {
    /// A tree all-reduce over `placement`'s ranks (callers keep ranks ≤ `ring::MAX_RANKS` and
    /// channels ≤ `ring::MAX_CHANNELS`).
    pub fn new(placement: &Placement, plan: TreePlan, out: Rc<RefCell<Outcome>>) -> Tree {
        let n = placement.ranks();
        let channels = plan.channels.max(1) as u64;
        let mut rng = Rng::new(plan.seed, 0x5452_4545);
        let mut trees = vec![];
        for c in 0..channels {
            let bytes = plan.bytes / channels + u64::from(c < plan.bytes % channels);
            if bytes == 0 {
                continue;
            }
            let k = bytes.div_ceil(plan.chunk_bytes.max(1));
            let chunks: Vec<u64> = (0..k).map(|i| bytes / k + u64::from(i < bytes % k)).collect();
            let (pos, root) = positions(placement, c as u32);
            let p = pos.len();
            trees.push(ChannelTree {
                root,
                chunks,
                got_up: vec![0; p * k as usize],
                up_queue: vec![VecDeque::new(); p],
                up_flight: vec![0; p],
                down_queue: vec![VecDeque::new(); p],
                down_flight: vec![0; p],
                up_sport: (0..p).map(|_| rng.sport()).collect(),
                down_sport: (0..p).map(|_| rng.sport()).collect(),
                up_sent: vec![0; p],
                down_sent: vec![0; p],
                pos,
            });
        }
        Tree {
            channels: trees,
            qps: plan.qps,
            wire: plan.wire,
            intra: placement.intra().cloned(),
            intra_free: vec![SimTime(0); n],
            out,
            t0: SimTime(0),
        }
    }

    /// Chunks the whole collective delivers: each non-root position receives every chunk of
    /// its channel once going down and sends it once going up.
    pub fn chunks_to_deliver(&self) -> u64 {
        self.channels.iter().map(|t| 2 * (t.pos.len() as u64 - 1) * t.chunks.len() as u64).sum()
    }

    /// Sends chunk `k` of channel `ch` from position `p` up to its parent, or down from its
    /// parent to position `p` (`down`), through the connection's window.
    fn hop(&mut self, net: &mut Net<'_, '_>, ch: usize, p: u32, k: u32, down: bool) {
        let t = &mut self.channels[ch];
        let i = p as usize;
        let parent = t.pos[i].parent.expect("a hop has a parent end");
        let (sender, receiver) = if down { (parent, p) } else { (p, parent) };
        let (queue, flight) = if down {
            (&mut t.down_queue[i], &mut t.down_flight[i])
        } else {
            (&mut t.up_queue[i], &mut t.up_flight[i])
        };
        if *flight >= WINDOW + self.wire.ahead {
            queue.push_back(k);
            return;
        }
        *flight += 1;
        let bytes = self.wire.wire_bytes(t.chunks[k as usize]);
        // A leaf's channel streams its data no faster than its GPU side does: chunk k is out
        // once the chunks up to it have been read at that rate.
        let release = match self.wire.channel_bytes_per_s {
            Some(rate) if !down && t.pos[i].children.is_empty() => {
                let upto: u64 = t.chunks[..=k as usize].iter().sum();
                SimTime(self.t0.0 + SimTime::from_secs_f64(upto as f64 / rate).0)
            }
            _ => SimTime(0),
        };
        // Up tags name the sender, down tags the receiver: either way the other end is its parent.
        let tg = tag(ch, i, if down { DOWN | k } else { k });
        if t.pos[i].parent_net {
            let nth = if down { &mut t.down_sent[i] } else { &mut t.up_sent[i] };
            let (qps, first) = self.qps.for_message(bytes, *nth);
            *nth += 1;
            let base = if down { t.down_sport[i] } else { t.up_sport[i] };
            let msg = Message {
                src: t.pos[sender as usize].nic,
                dst: t.pos[receiver as usize].nic,
                size_bytes: bytes,
                class: None,
                qps,
                tag: tg,
                start: self.wire.start(net.now(), bytes).max((release > net.now()).then_some(release)),
                sport: Some(QpUse::sport(base, first)),
            };
            net.post(msg).expect("a tree hop between two hosts of the fabric");
        } else {
            let intra = self.intra.as_ref().expect("hops inside a node only with GPU placement");
            let free = &mut self.intra_free[t.pos[sender as usize].gpu as usize];
            let done = SimTime((*free).max(net.now()).max(release).0 + intra.serialize(bytes).0);
            *free = done;
            net.wake_at(SimTime(done.0 + intra.latency.0), tg).expect("an intra-node hop within the clock range");
        }
    }

    /// Position `p` holds chunk `k` reduced over its subtree: send it up, or start it down.
    fn reduced(&mut self, net: &mut Net<'_, '_>, ch: usize, p: u32, k: u32) {
        if p == self.channels[ch].root {
            self.broadcast(net, ch, p, k);
        } else {
            self.hop(net, ch, p, k, false);
        }
    }

    /// Position `p` has the final chunk `k`: forward it to its children.
    fn broadcast(&mut self, net: &mut Net<'_, '_>, ch: usize, p: u32, k: u32) {
        for i in 0..self.channels[ch].pos[p as usize].children.len() {
            let c = self.channels[ch].pos[p as usize].children[i];
            self.hop(net, ch, c, k, true);
        }
    }

    /// A chunk arrived (tag `t`): its connection's window frees a slot.
    fn arrived(&mut self, net: &mut Net<'_, '_>, t: u64) {
        let (ch, p, step) = untag(t);
        let (down, k) = (step & DOWN != 0, step & !DOWN);
        let p = p as u32;
        {
            let tr = &mut self.channels[ch];
            let (queue, flight) = if down {
                (&mut tr.down_queue[p as usize], &mut tr.down_flight[p as usize])
            } else {
                (&mut tr.up_queue[p as usize], &mut tr.up_flight[p as usize])
            };
            *flight -= 1;
            if let Some(next) = queue.pop_front() {
                self.hop(net, ch, p, next, down);
            }
        }
        if down {
            self.broadcast(net, ch, p, k);
            return;
        }
        let tr = &mut self.channels[ch];
        let parent = tr.pos[p as usize].parent.expect("an up chunk has a receiver");
        let nk = tr.chunks.len();
        let cell = &mut tr.got_up[parent as usize * nk + k as usize];
        *cell += 1;
        if *cell as usize == tr.pos[parent as usize].children.len() {
            self.reduced(net, ch, parent, k);
        }
    }
}

/// Channel `c`'s tree positions over `placement` and its root.
fn positions(placement: &Placement, c: u32) -> (Vec<Pos>, u32) {
    // Channels 2ρ and 2ρ + 1 (one per tree) go out on NIC ρ mod R. Each node's chain: the GPUs
    // in the order of the ring on that NIC, which starts every node at the GPU local to it.
    let on = c / 2;
    let ring = placement.ring(on);
    let (nodes, g, nic): (u32, u32, Box<dyn Fn(u32) -> NodeId>) = match placement {
        Placement::Hosts(h) => (h.len() as u32, 1, Box::new(move |k| h[k as usize])),
        Placement::Gpus(l) => {
            (l.nodes.len() as u32, l.gpus, Box::new(move |k| l.nodes[k as usize][l.channel_nic(k as usize, on)]))
        }
    };
    let tree = c % 2;
    let head = |k: u32| k * g;
    let mut pos: Vec<Pos> = Vec::with_capacity((nodes * g) as usize);
    for k in 0..nodes {
        let (up, down) = dtree(nodes, k, tree);
        for j in 0..g {
            let mut children = vec![];
            if j + 1 < g {
                children.push(k * g + j + 1);
            }
            if j == 0 {
                children.extend(down.iter().map(|&d| head(d)));
            }
            pos.push(Pos {
                gpu: ring.order[(k * g + j) as usize],
                parent: if j > 0 { Some(k * g + j - 1) } else { up.map(head) },
                children,
                nic: nic(k),
                parent_net: j == 0 && up.is_some(),
            });
        }
    }
    let root = head((0..nodes).find(|&k| dtree(nodes, k, tree).0.is_none()).unwrap_or(0));
    (pos, root)
}

impl Workload for Tree {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        // Leaves hold their data reduced already: every chunk goes up at once (windows, the
        // intra-node links and the channel's GPU-side rate pace them).
        self.t0 = net.now();
        for ch in 0..self.channels.len() {
            for p in 0..self.channels[ch].pos.len() as u32 {
                if self.channels[ch].pos[p as usize].children.is_empty() {
                    for k in 0..self.channels[ch].chunks.len() as u32 {
                        self.reduced(net, ch, p, k);
                    }
                }
            }
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        if !self.out.borrow_mut().record(&done) {
            return;
        }
        self.arrived(net, done.tag);
    }

    fn reaction_delay(&self) -> SimTime {
        // (Every answer to a delivery goes through `send`/`reduced`: the wire's start, or an
        // intra-node hop's wake-up.)
        self.wire.reaction_delay(self.intra.as_ref().map(|i| i.latency))
    }

    fn on_wake(&mut self, t: u64, net: &mut Net<'_, '_>) {
        self.out.borrow_mut().record_local(net.now());
        self.arrived(net, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_tree_is_ncclgetbtrees() {
        // NCCL's illustration for 14 ranks: 0 → 8; 8 → 4, 12; 4 → 2, 6; 12 → 10, 13; 2 → 1, 3.
        assert_eq!(btree(14, 0), (None, vec![8]));
        assert_eq!(btree(14, 8), (Some(0), vec![4, 12]));
        assert_eq!(btree(14, 4), (Some(8), vec![2, 6]));
        assert_eq!(btree(14, 12), (Some(8), vec![10, 13]));
        assert_eq!(btree(14, 2), (Some(4), vec![1, 3]));
        assert_eq!(btree(14, 13), (Some(12), vec![]));
        assert_eq!(btree(14, 1), (Some(2), vec![]));
        assert_eq!(btree(2, 1), (Some(0), vec![]));
        // Every node but the root has one parent that lists it as a child.
        for n in 1..40 {
            for t in 0..2 {
                let mut roots = 0;
                for r in 0..n {
                    let (u, d) = dtree(n, r, t);
                    match u {
                        None => roots += 1,
                        Some(u) => assert!(dtree(n, u, t).1.contains(&r), "n {n} tree {t}: {r}'s parent {u}"),
                    }
                    for c in d {
                        assert_eq!(dtree(n, c, t).0, Some(r));
                    }
                }
                assert_eq!(roots, 1, "n {n} tree {t}");
            }
        }
    }

    #[test]
    fn the_second_tree_mirrors_or_shifts_the_first() {
        // Even n: mirrored, root n − 1 (NCCL's ncclGetDtreeRoots); odd n: shifted, root 1.
        assert_eq!(dtree(12, 11, 1).0, None);
        assert_eq!(dtree(12, 3, 1), (Some(11), vec![7, 1]));
        assert_eq!(dtree(13, 1, 1).0, None);
        assert_eq!(dtree(13, 9, 1), (Some(1), vec![5, 0]));
        // With 8 nodes, the 4 leaves of tree 0 (odd nodes) are interior in tree 1.
        for r in [1, 3, 5, 7] {
            assert!(dtree(8, r, 0).1.is_empty());
            assert!(!dtree(8, r, 1).1.is_empty(), "{r}");
        }
    }
}
