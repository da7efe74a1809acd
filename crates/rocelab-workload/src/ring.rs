//! Ring collectives as NCCL runs them between nodes: each rank sends to the next rank of the
//! ring and receives from the previous one, one chunk per step, and a step starts on a rank as
//! soon as that rank has received the previous step's chunk (the data it forwards or reduces).
//!
//! * all-reduce of S bytes: reduce-scatter then all-gather, 2(n−1) steps of S/n;
//! * reduce-scatter and all-gather of an S-byte array (nccl-tests' size convention: the whole
//!   array): n−1 steps of S/n.
//!
//! Channels split the buffer: channel c carries 1/C of every chunk on its own connection, with
//! its own UDP source port per (rank, channel), so ECMP sees NCCL's entropy: a connection keeps
//! its path for the whole collective, as NCCL's long-lived QPs do. Reduction compute is not
//! modelled (GPUs reduce at HBM speed, far above a NIC's).

use crate::Outcome;
use rocelab_model::NodeId;
use rocelab_sim::rng::Rng;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use std::cell::RefCell;
use std::rc::Rc;

/// The shape of a ring collective.
#[derive(Clone, Copy, Debug)]
pub struct RingPlan {
    /// Steps each rank sends (2(n−1) for all-reduce).
    pub steps: u32,
    /// Bytes per step and rank, over all channels.
    pub chunk_bytes: u64,
    pub channels: u32,
    /// QPs per connection; a chunk is split over them.
    pub qps: u32,
    /// Draws the source ports.
    pub seed: u64,
}

pub struct Ring {
    ranks: Vec<NodeId>,
    /// Rank of each node (by node index), `u32::MAX` for nodes outside the ring.
    rank_of: Vec<u32>,
    steps: u32,
    /// Chunk bytes per channel.
    chunk: Vec<u64>,
    /// UDP source port per (rank, channel): rank-major.
    sports: Vec<u16>,
    qps: u32,
    out: Rc<RefCell<Outcome>>,
}

impl Ring {
    /// A ring over `ranks` (in ring order), on a model of `nodes` nodes.
    pub fn new(nodes: usize, ranks: Vec<NodeId>, plan: RingPlan, out: Rc<RefCell<Outcome>>) -> Ring {
        let RingPlan { steps, chunk_bytes, channels, qps, seed } = plan;
        let channels = channels.max(1) as u64;
        // Channel c takes an equal share; the first ones take the remainder. A channel left
        // with nothing (a tiny buffer) is not used.
        let chunk: Vec<u64> = (0..channels)
            .map(|c| chunk_bytes / channels + u64::from(c < chunk_bytes % channels))
            .filter(|&b| b > 0)
            .collect();
        let mut rank_of = vec![u32::MAX; nodes];
        for (r, n) in ranks.iter().enumerate() {
            rank_of[n.idx()] = r as u32;
        }
        let mut rng = Rng::new(seed, 0x4e43_434c);
        let sports = (0..ranks.len() * chunk.len()).map(|_| 49152 + rng.below(16384) as u16).collect();
        Ring { ranks, rank_of, steps, chunk, sports, qps: qps.max(1), out }
    }

    /// Chunks the whole collective delivers: every step, rank and channel in use.
    pub fn chunks_to_deliver(&self) -> u64 {
        self.steps as u64 * self.ranks.len() as u64 * self.chunk.len() as u64
    }

    /// Posts step `step` of channel `ch` from rank `r` to the next rank.
    fn send(&self, net: &mut Net<'_, '_>, r: usize, ch: usize, step: u32) {
        let n = self.ranks.len();
        let bytes = self.chunk[ch];
        let msg = Message {
            src: self.ranks[r],
            dst: self.ranks[(r + 1) % n],
            size_bytes: bytes,
            // The fabric's RDMA class, as NCCL's traffic is.
            class: None,
            qps: self.qps.min(bytes.min(u32::MAX as u64) as u32),
            tag: (ch as u64) << 32 | step as u64,
            start: None,
            sport: Some(self.sports[r * self.chunk.len() + ch]),
        };
        // The ring's ranks are distinct hosts and chunks are 1 B..1 TB: a refusal here is a bug.
        net.post(msg).expect("a ring step between two hosts of the fabric");
    }
}

impl Workload for Ring {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        if self.ranks.len() < 2 || self.steps == 0 {
            return;
        }
        for r in 0..self.ranks.len() {
            for ch in 0..self.chunk.len() {
                self.send(net, r, ch, 0);
            }
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        if !self.out.borrow_mut().record(&done) {
            // A chunk that never arrives stops its channel at that rank: NCCL would hang and
            // time out; the run ends when nothing more can move.
            return;
        }
        let (ch, step) = ((done.tag >> 32) as usize, done.tag as u32);
        if step + 1 < self.steps {
            let r = self.rank_of[done.dst.idx()] as usize;
            self.send(net, r, ch, step + 1);
        }
    }
}
