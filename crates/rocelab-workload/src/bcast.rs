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

use crate::Outcome;
use rocelab_model::NodeId;
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
    pub qps: u32,
    pub seed: u64,
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
    /// Ranks in pipeline order: the root first.
    chain: Vec<NodeId>,
    /// Position in `chain` of each node (by node index), `u32::MAX` outside it.
    pos_of: Vec<u32>,
    /// Chunk sizes per channel.
    chunks: Vec<Vec<u64>>,
    /// Per (position, channel), position-major: chunks held, chunks sent, one in flight.
    have: Vec<u32>,
    sent: Vec<u32>,
    busy: Vec<bool>,
    sports: Vec<u16>,
    qps: u32,
    out: Rc<RefCell<Outcome>>,
}

impl Broadcast {
    pub fn new(nodes: usize, ranks: &[NodeId], plan: BroadcastPlan, out: Rc<RefCell<Outcome>>) -> Broadcast {
        let n = ranks.len();
        let root = plan.root as usize % n.max(1);
        let chain: Vec<NodeId> = (0..n).map(|i| ranks[(root + i) % n]).collect();
        let mut pos_of = vec![u32::MAX; nodes];
        for (p, node) in chain.iter().enumerate() {
            pos_of[node.idx()] = p as u32;
        }
        let chunks = channel_chunks(plan.bytes, plan.channels, plan.chunk_bytes);
        let ch = chunks.len();
        let mut have = vec![0u32; n * ch];
        for (c, list) in chunks.iter().enumerate() {
            have[c] = list.len() as u32; // the root holds the whole buffer
        }
        let mut rng = Rng::new(plan.seed, 0x4243_4153);
        let sports = (0..n * ch).map(|_| 49152 + rng.below(16384) as u16).collect();
        Broadcast {
            chain,
            pos_of,
            chunks,
            have,
            sent: vec![0; n * ch],
            busy: vec![false; n * ch],
            sports,
            qps: plan.qps.max(1),
            out,
        }
    }

    /// Every chunk reaches every rank but the root.
    pub fn chunks_to_deliver(&self) -> u64 {
        let per_rank: u64 = self.chunks.iter().map(|c| c.len() as u64).sum();
        per_rank * self.chain.len().saturating_sub(1) as u64
    }

    /// Sends the next chunk of channel `c` from position `p` if it holds one and its
    /// connection is free. The last position forwards nothing.
    fn pump(&mut self, net: &mut Net<'_, '_>, p: usize, c: usize) {
        let n = self.chain.len();
        let i = p * self.chunks.len() + c;
        if p + 1 >= n || self.busy[i] || self.sent[i] >= self.have[i] {
            return;
        }
        let k = self.sent[i];
        let bytes = self.chunks[c][k as usize];
        let msg = Message {
            src: self.chain[p],
            dst: self.chain[p + 1],
            size_bytes: bytes,
            class: None,
            qps: self.qps.min(bytes.min(u32::MAX as u64) as u32),
            tag: (c as u64) << 32 | k as u64,
            start: None,
            sport: Some(self.sports[i]),
        };
        net.post(msg).expect("a broadcast chunk between two hosts of the fabric");
        self.sent[i] += 1;
        self.busy[i] = true;
    }
}

impl Workload for Broadcast {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        if self.chain.len() < 2 {
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
        let c = (done.tag >> 32) as usize;
        let to = self.pos_of[done.dst.idx()] as usize;
        let from = to - 1;
        let ch = self.chunks.len();
        self.busy[from * ch + c] = false;
        self.have[to * ch + c] += 1;
        self.pump(net, to, c);
        self.pump(net, from, c);
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
