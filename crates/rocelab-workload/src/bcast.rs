//! Ring broadcast as NCCL runs it: a pipeline from the root along the ring. The root sends its
//! buffer to the next rank chunk by chunk; every other rank forwards each chunk to the next rank
//! as soon as it has it, and the rank before the root only receives. The buffer is split over
//! channels, each its own pipeline on its own connections.
//!
//! A connection carries one chunk at a time, in order, as an RC QP executes its work requests in
//! order: a rank sends chunk k+1 once chunk k has arrived and it holds chunk k+1. (The engine's
//! messages are separate QPs, so two chunks posted together would share the link instead of
//! following each other; keeping one in flight per connection keeps the order. The gap between
//! two chunks of one channel — the last byte's flight time — is filled by the other channels.)
//!
//! With C channels of chunk c over n ranks on links of goodput B, the pipeline fills in n−2
//! chunk times and then delivers at B: t ≈ (S + (n−2)·C·c) / B, so busbw = S/t → B for S ≫ n·C·c.
//!
//! Where the fabric charges NCCL's hop latency (`[nccl] net_hop_latency = "tuning"`), every
//! chunk between nodes waits NCCL's figure for the hop less what the twin simulates of it
//! (`Wire::with_nccl_net_hop`), and a connection keeps as many more chunks in flight as cover
//! that wait, so the latency does not cost bandwidth.

use crate::placement::{Hop, IntraNode, Placement};
use crate::ring::{tag, untag};
use crate::Outcome;
use rocelab_model::SimTime;
use rocelab_sim::rng::Rng;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use std::cell::RefCell;
use std::rc::Rc;

/// The shape of a ring broadcast.
#[derive(Clone, Copy, Debug)]
pub struct BroadcastPlan {
    /// Buffer bytes (nccl-tests' size).
    pub bytes: u64,
    /// Index into the ranks of the root.
    pub root: u32,
    pub channels: u32,
    /// Pipeline chunk per channel (NCCL's Simple step: NCCL_BUFFSIZE / NCCL_STEPS).
    pub chunk_bytes: u64,
    pub qps: crate::QpUse,
    pub seed: u64,
    /// The protocol: bytes on the wire (its step is `chunk_bytes`).
    pub wire: crate::protocol::Wire,
}

/// Splits `bytes` into `channels` near-equal parts (empty ones dropped), each into chunks of at
/// most `chunk` bytes: the chunk sizes of each channel in sending order.
pub fn channel_chunks(bytes: u64, channels: u32, chunk: u64) -> Vec<Vec<u64>> {
    let channels = channels.max(1) as u64;
    let chunk = chunk.max(1);
    (0..channels)
        .map(|c| bytes / channels + u64::from(c < bytes % channels))
        .filter(|&b| b > 0)
        .map(|b| (0..b.div_ceil(chunk)).map(|k| chunk.min(b - k * chunk)).collect())
        .collect()
}

pub struct Broadcast {
    /// The hop out of each pipeline position (the root at position 0), following a channel's
    /// ring from the root: channel c uses entry c mod `hops.len()` (rings repeat).
    hops: Vec<Vec<Hop>>,
    /// Ranks.
    n: usize,
    /// Chunk sizes per channel.
    chunks: Vec<Vec<u64>>,
    /// Per (position, channel), position-major: chunks held, chunks sent, chunks in flight
    /// (one, and more only to cover NCCL's hop latency: [`Broadcast::window`]).
    have: Vec<u32>,
    sent: Vec<u32>,
    busy: Vec<u32>,
    /// When each connection's last chunk has left its NIC (where chunks wait out NCCL's hop
    /// latency, so that several in flight follow each other).
    conn_free: Vec<SimTime>,
    sports: Vec<u16>,
    qps: crate::QpUse,
    wire: crate::protocol::Wire,
    intra: Option<IntraNode>,
    /// When each rank's intra-node link is free again.
    intra_free: Vec<SimTime>,
    out: Rc<RefCell<Outcome>>,
}

impl Broadcast {
    pub fn new(placement: &Placement, plan: BroadcastPlan, out: Rc<RefCell<Outcome>>) -> Broadcast {
        let n = placement.ranks();
        let root = plan.root as usize % n.max(1);
        let chunks = channel_chunks(plan.bytes, plan.channels, plan.chunk_bytes);
        let ch = chunks.len();
        let distinct = (ch as u32).min(placement.ring_period()).max(1);
        let hops = (0..distinct)
            .map(|c| {
                let ring = placement.ring(c);
                let at = ring.positions()[root] as usize;
                (0..n).map(|i| ring.hops[(at + i) % n]).collect()
            })
            .collect();
        let mut have = vec![0u32; n * ch];
        for (c, list) in chunks.iter().enumerate() {
            have[c] = list.len() as u32; // the root holds the whole buffer
        }
        let mut rng = Rng::new(plan.seed, 0x4243_4153);
        let sports = (0..n * ch).map(|_| rng.sport()).collect();
        Broadcast {
            hops,
            n,
            chunks,
            have,
            sent: vec![0; n * ch],
            busy: vec![0; n * ch],
            conn_free: vec![SimTime(0); n * ch],
            sports,
            qps: plan.qps,
            wire: plan.wire,
            intra: placement.intra().cloned(),
            intra_free: vec![SimTime(0); n],
            out,
        }
    }

    /// Chunks a connection keeps in flight beyond the first: those that cover NCCL's hop
    /// latency where it is charged (`Wire::ahead`), else none.
    fn window(&self) -> u32 {
        if self.wire.nccl_hop {
            self.wire.ahead
        } else {
            0
        }
    }

    /// Every chunk reaches every rank but the root.
    pub fn chunks_to_deliver(&self) -> u64 {
        let per_rank: u64 = self.chunks.iter().map(|c| c.len() as u64).sum();
        per_rank * self.n.saturating_sub(1) as u64
    }

    /// Sends the next chunks of channel `c` from position `p` that it holds, while its
    /// connection has room ([`Broadcast::window`]). The last position forwards nothing.
    fn pump(&mut self, net: &mut Net<'_, '_>, p: usize, c: usize) {
        while self.pump_one(net, p, c) {}
    }

    /// [`Broadcast::pump`] for one chunk: whether it sent one.
    fn pump_one(&mut self, net: &mut Net<'_, '_>, p: usize, c: usize) -> bool {
        let i = p * self.chunks.len() + c;
        if p + 1 >= self.n || self.busy[i] > self.window() || self.sent[i] >= self.have[i] {
            return false;
        }
        let k = self.sent[i];
        let bytes = self.wire.wire_bytes(self.chunks[c][k as usize]);
        let t = tag(c, p + 1, 0);
        match self.hops[c % self.hops.len()][p] {
            Hop::Net { src, dst } => {
                // Chunk k is the connection's k-th message.
                let (qps, first) = self.qps.for_message(bytes, k as u64);
                let msg = Message {
                    src,
                    dst,
                    size_bytes: bytes,
                    class: None,
                    qps,
                    tag: t,
                    // No post overhead: NCCL's proxy posts a step while the previous one is
                    // in flight, where this pipeline keeps one chunk per connection. NCCL's
                    // hop latency, where charged, is latency every chunk pays (and more
                    // chunks are in flight to cover it).
                    start: if self.wire.nccl_hop {
                        self.wire.start_in_order(net.now(), bytes, &mut self.conn_free[i])
                    } else {
                        None
                    },
                    sport: Some(crate::QpUse::sport(self.sports[i], first)),
                };
                net.post(msg).expect("a broadcast chunk between two hosts of the fabric");
            }
            Hop::Local { gpu } => {
                let intra = self.intra.as_ref().expect("local hops only with GPU placement");
                let free = &mut self.intra_free[gpu as usize];
                let done = SimTime((*free).max(net.now()).0 + intra.serialize(bytes).0);
                *free = done;
                net.wake_at(SimTime(done.0 + intra.latency.0), t).expect("an intra-node hop within the clock range");
            }
        }
        self.sent[i] += 1;
        self.busy[i] += 1;
        true
    }

    /// A chunk of the channel in `t` has arrived at its position.
    fn arrived(&mut self, net: &mut Net<'_, '_>, t: u64) {
        let (c, to, _) = untag(t);
        let from = to - 1;
        let ch = self.chunks.len();
        self.busy[from * ch + c] -= 1;
        self.have[to * ch + c] += 1;
        self.pump(net, to, c);
        self.pump(net, from, c);
    }
}

impl Workload for Broadcast {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        if self.n < 2 {
            return;
        }
        for c in 0..self.chunks.len() {
            self.pump(net, 0, c);
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        if !self.out.borrow_mut().record(&done) {
            // A chunk that never arrives stops its channel there (NCCL would hang).
            return;
        }
        self.arrived(net, done.tag);
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
    fn channels_split_the_buffer_and_chunks_split_the_channels() {
        assert_eq!(channel_chunks(10, 2, 3), vec![vec![3, 2], vec![3, 2]]);
        assert_eq!(channel_chunks(11, 2, 4), vec![vec![4, 2], vec![4, 1]]);
        assert_eq!(channel_chunks(1, 4, 512), vec![vec![1]]);
        let all: u64 = channel_chunks(1 << 30, 4, 512 << 10).iter().flatten().sum();
        assert_eq!(all, 1 << 30);
    }
}
