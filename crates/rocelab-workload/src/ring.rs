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
//!
//! **Slices** (`crate::protocol`): a step's chunk larger than the protocol's step (512 KiB
//! with Simple) goes as several messages, and a rank forwards each slice as soon as it has
//! it, so a large buffer pipelines along the ring instead of waiting a whole chunk per hop.
//!
//! Each channel has its own ring ([`ChannelRing`]): with GPU placement the rings of different
//! channels leave their nodes on different rails (`placement`). A hop between two GPUs of one
//! node is not a message: it is served by the sending GPU's intra-node link, one transfer at
//! a time, and arrives latency + bytes / bandwidth after it starts (a wake-up).
//!
//! **Lockstep** ([`Ring::lockstep`], on an engine that runs lockstep groups: the flow engine):
//! every hop of a step, all channels, runs as one group round (`Net::lockstep_group`), and the
//! next step starts on every rank when the whole step has arrived. The hops then share one
//! rate, the slowest hop's max-min share, and each step waits for its slowest hop's tail,
//! where unbatched each rank starts as soon as its own chunk is in. Where every hop sees the
//! same rate and latency (a ring inside one switch, or every hop through the same tiers) the
//! two are the same. Otherwise, alone on the fabric, a step takes longer by at most its
//! slowest hop's tail less the fastest one's. Beside other traffic, a hop it slows slows the
//! whole step; but a connection never has two steps in flight, as an RC QP sends its messages
//! in order, where unbatched a rank that fell behind sends several steps at once, each a flow
//! taking its own share of the NIC from that traffic (docs/flow-engine.md measures both on
//! the 24,576-GPU step). It takes a step of n ranks from 4n events to about 4, which is what
//! makes rings of hundreds of ranks affordable at cluster scale. Only rings whose hops all
//! cross the fabric, with one QP per connection, go in lockstep.

use crate::placement::{ChannelRing, Hop, IntraNode, Placement};
use crate::protocol::Wire;
use crate::{Outcome, QpUse};
use rocelab_model::SimTime;
use rocelab_sim::rng::Rng;
use rocelab_sim::workload::{Delivered, GroupId, Message, Net, Workload};
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
    /// QPs per connection and how a chunk uses them.
    pub qps: QpUse,
    /// Draws the source ports.
    pub seed: u64,
    /// The protocol: bytes on the wire, slice size, post overhead.
    pub wire: Wire,
}

/// Bits of a tag for the receiving position, the step and the channel; the 16 bits above them
/// name the collective when several run in one workload ([`INSTANCE_SHIFT`], the training step).
const POS_BITS: u32 = 20;
const STEP_BITS: u32 = 20;
const CH_BITS: u32 = 8;
/// Where a tag's instance number starts.
pub const INSTANCE_SHIFT: u32 = POS_BITS + STEP_BITS + CH_BITS;
/// The most ranks, steps and channels a tag can name (2(n−1) steps of n ranks fit).
pub const MAX_RANKS: usize = 1 << (STEP_BITS - 1);
pub const MAX_STEPS: u32 = (1 << STEP_BITS) - 1;
pub const MAX_CHANNELS: u32 = 1 << CH_BITS;

pub(crate) fn tag(ch: usize, pos: usize, step: u32) -> u64 {
    (ch as u64) << (POS_BITS + STEP_BITS) | (pos as u64) << STEP_BITS | step as u64
}

/// A tag's channel, position and step (its instance bits ignored).
pub(crate) fn untag(t: u64) -> (usize, usize, u32) {
    let mask = |bits: u32| (1u64 << bits) - 1;
    (
        ((t >> (POS_BITS + STEP_BITS)) & mask(CH_BITS)) as usize,
        ((t >> STEP_BITS) & mask(POS_BITS)) as usize,
        (t & mask(STEP_BITS)) as u32,
    )
}

pub struct Ring {
    /// The channels' rings: channel c runs on ring c mod `rings.len()` (rings repeat with the
    /// placement's period, so many channels do not copy one ring many times).
    rings: Vec<ChannelRing>,
    steps: u32,
    /// Chunk bytes per channel (data).
    chunk: Vec<u64>,
    /// Slices per chunk: tags carry step × slices + slice.
    slices: u32,
    wire: Wire,
    /// UDP source port per (position, channel): position-major.
    sports: Vec<u16>,
    qps: QpUse,
    intra: Option<IntraNode>,
    /// When each rank's intra-node link is free again.
    intra_free: Vec<SimTime>,
    out: Rc<RefCell<Outcome>>,
    /// Added to every tag: this collective's instance number, shifted by [`INSTANCE_SHIFT`].
    tag_base: u64,
    /// Run in lockstep when the engine can ([`Ring::lockstep`]), and the group doing so.
    lockstep: bool,
    group: Option<GroupId>,
    /// Per connection (position-major, then channel): messages on the wire, and the slices
    /// waiting for a slot ([`WINDOW`]).
    in_flight: Vec<u8>,
    waiting: Vec<std::collections::VecDeque<u32>>,
    /// Data bytes each connection has sent, and when the collective started: a channel's GPU
    /// side streams no faster than `Wire::channel_bytes_per_s` (empty unless it is set).
    streamed: Vec<u64>,
    t0: SimTime,
}

/// Messages a connection keeps on the wire at once. An NCCL connection is a fixed set of RC
/// QPs, on which a step's work requests execute after the previous step's: successive steps
/// follow each other, they do not share the NIC. The engine gives each message its own QPs,
/// so the ring keeps at most three per connection in flight (the next on the wire while the
/// previous lands, and one more to cover a post's overhead and PCIe leg). Posted all at once,
/// a connection's queued steps would share the NIC's round-robin and finish late together,
/// and the next rank, which needs the oldest step first, would wait — the more QPs a message
/// is striped over, the more evenly they share (`NCCL_IB_SPLIT_DATA_ON_QPS=1` over 16 QPs lost
/// 30 % of busbw to it).
const WINDOW: u8 = 3;

impl Ring {
    /// A ring collective over `placement`'s ranks (callers keep ranks ≤ [`MAX_RANKS`], steps ≤
    /// [`MAX_STEPS`] and channels ≤ [`MAX_CHANNELS`]).
    pub fn new(placement: &Placement, plan: RingPlan, out: Rc<RefCell<Outcome>>) -> Ring {
        let RingPlan { steps, chunk_bytes, channels, qps, seed, wire } = plan;
        let channels = channels.max(1) as u64;
        // Channel c takes an equal share; the first ones take the remainder. A channel left
        // with nothing (a tiny buffer) is not used.
        let chunk: Vec<u64> = (0..channels)
            .map(|c| chunk_bytes / channels + u64::from(c < chunk_bytes % channels))
            .filter(|&b| b > 0)
            .collect();
        // As many slices as the largest chunk needs, never an empty one, and every (step,
        // slice) nameable in a tag.
        let smallest = chunk.iter().copied().min().unwrap_or(1).max(1);
        let largest = chunk.iter().copied().max().unwrap_or(1);
        let slices =
            largest.div_ceil(wire.step_bytes.max(1)).min(smallest).min((MAX_STEPS / steps.max(1)) as u64).max(1);
        let n = placement.ranks();
        let distinct = (chunk.len() as u32).min(placement.ring_period()).max(1);
        let rings = (0..distinct).map(|c| placement.ring(c)).collect();
        let mut rng = Rng::new(seed, 0x4e43_434c);
        let sports = (0..n * chunk.len()).map(|_| rng.sport()).collect();
        let chunk_len = chunk.len();
        Ring {
            rings,
            steps,
            chunk,
            slices: slices as u32,
            wire,
            sports,
            qps,
            intra: placement.intra().cloned(),
            intra_free: vec![SimTime(0); n],
            out,
            tag_base: 0,
            lockstep: false,
            group: None,
            in_flight: vec![0; n * chunk_len],
            waiting: vec![std::collections::VecDeque::new(); n * chunk_len],
            streamed: if wire.channel_bytes_per_s.is_some() { vec![0; n * chunk_len] } else { vec![] },
            t0: SimTime(0),
        }
    }

    /// The same collective run in lockstep where the engine can (see the module doc).
    pub fn lockstep(mut self) -> Ring {
        self.lockstep = true;
        self
    }

    /// Every hop of every step, all channels, as one lockstep group (started on round 0), if
    /// asked for, the engine can, and every hop is a message on one QP.
    fn start_lockstep(&mut self, net: &mut Net<'_, '_>) -> bool {
        if !self.lockstep || !net.lockstep() || self.qps.qps > 1 || self.slices > 1 {
            return false;
        }
        let n = self.ranks();
        let mut msgs = Vec::with_capacity(n * self.chunk.len());
        for p in 0..n {
            for ch in 0..self.chunk.len() {
                let Some(msg) = self.hop_message(p, ch, self.wire_bytes(ch, 0), 1, 0, 0) else { return false };
                msgs.push(msg);
            }
        }
        let Ok(g) = net.lockstep_group(&msgs) else { return false };
        self.group = Some(g);
        self.post_round(net, 0);
        true
    }

    /// Posts step `step`'s round of the lockstep group once the proxy's post overhead has
    /// passed (a wake-up; a round cannot be given a start).
    fn post_round(&mut self, net: &mut Net<'_, '_>, step: u32) {
        let t = self.tag_base | tag(0, 0, step);
        if let Some(at) = self.wire.start(net.now(), self.wire_bytes(0, 0)) {
            // Rounds are posted at most once per delivery, far inside the clock range.
            net.wake_at(at, t).expect("a round's post within the clock range");
        } else {
            self.post_now(net, t);
        }
    }

    fn post_now(&mut self, net: &mut Net<'_, '_>, t: u64) {
        let g = self.group.expect("a lockstep ring's group");
        // The group's previous round has been delivered: it is idle, this is not refused.
        net.post_round(g, t).expect("a round of an idle group");
    }

    /// The same collective with its tags carrying `instance` (below 2¹⁶), so several can run
    /// in one workload and each callback finds its own.
    pub fn instance(mut self, instance: u16) -> Ring {
        self.tag_base = (instance as u64) << INSTANCE_SHIFT;
        self
    }

    fn ranks(&self) -> usize {
        self.rings.first().map_or(0, |r| r.order.len())
    }

    /// Chunks the whole collective delivers: every step, slice, rank and channel in use.
    pub fn chunks_to_deliver(&self) -> u64 {
        self.steps as u64 * self.slices as u64 * self.ranks() as u64 * self.chunk.len() as u64
    }

    /// Wire bytes of slice `s` of channel `ch`'s chunk.
    fn wire_bytes(&self, ch: usize, s: u32) -> u64 {
        self.wire.wire_bytes(self.slice_bytes(ch, s))
    }

    /// Data bytes of slice `s` of channel `ch`'s chunk.
    fn slice_bytes(&self, ch: usize, s: u32) -> u64 {
        let (c, k) = (self.chunk[ch], self.slices as u64);
        c / k + u64::from((s as u64) < c % k)
    }

    /// When connection `c` may send `data` more bytes: once its channel's GPU side has streamed
    /// them (and everything it sent before) at `Wire::channel_bytes_per_s`; 0 where unpaced.
    fn release(&mut self, c: usize, data: u64) -> SimTime {
        let Some(rate) = self.wire.channel_bytes_per_s else { return SimTime(0) };
        self.streamed[c] += data;
        SimTime(self.t0.0 + SimTime::from_secs_f64(self.streamed[c] as f64 / rate).0)
    }

    /// Channel `ch`'s ring.
    pub fn ring(&self, ch: usize) -> &ChannelRing {
        &self.rings[ch % self.rings.len()]
    }

    /// The message of channel `ch`'s hop from position `p` (`None` inside a GPU node): `bytes`
    /// on `qps` QPs from the connection's `first`, in the fabric's RDMA class, as NCCL's
    /// traffic is.
    fn hop_message(&self, p: usize, ch: usize, bytes: u64, qps: u32, first: u32, tag: u64) -> Option<Message> {
        let Hop::Net { src, dst } = self.rings[ch % self.rings.len()].hops[p] else { return None };
        Some(Message {
            src,
            dst,
            size_bytes: bytes,
            class: None,
            qps,
            tag,
            start: None,
            sport: Some(QpUse::sport(self.sports[p * self.chunk.len() + ch], first)),
        })
    }

    /// Sends slice `v` (step × slices + slice) of channel `ch` from position `p` to the next
    /// position.
    fn send(&mut self, net: &mut Net<'_, '_>, p: usize, ch: usize, v: u32) {
        let n = self.ranks();
        let bytes = self.wire_bytes(ch, v % self.slices);
        let t = self.tag_base | tag(ch, (p + 1) % n, v);
        match self.rings[ch % self.rings.len()].hops[p] {
            Hop::Net { .. } => {
                let c = p * self.chunk.len() + ch;
                if self.in_flight[c] as u32 >= WINDOW as u32 + self.wire.ahead {
                    self.waiting[c].push_back(v);
                    return;
                }
                self.in_flight[c] += 1;
                let release = self.release(c, self.slice_bytes(ch, v % self.slices));
                // A connection sends one message per slice: `v` is its message count.
                let (qps, first) = self.qps.for_message(bytes, v as u64);
                let mut msg = self.hop_message(p, ch, bytes, qps, first, t).expect("a network hop");
                msg.start = self.wire.start(net.now(), bytes).max((release > net.now()).then_some(release));
                // Ring hops join distinct hosts and chunks are 1 B..1 TB: a refusal is a bug.
                net.post(msg).expect("a ring step between two hosts of the fabric");
            }
            Hop::Local { gpu } => {
                let release = self.release(p * self.chunk.len() + ch, self.slice_bytes(ch, v % self.slices));
                let intra = self.intra.as_ref().expect("local hops only with GPU placement");
                let free = &mut self.intra_free[gpu as usize];
                let done = SimTime((*free).max(net.now()).max(release).0 + intra.serialize(bytes).0);
                *free = done;
                // Times stay far below the engine's clock limit (sizes ≤ 1 TB, bandwidth > 0).
                net.wake_at(SimTime(done.0 + intra.latency.0), t).expect("an intra-node hop within the clock range");
            }
        }
    }

    /// A slice has arrived at position `pos`: forward it in the next step.
    fn arrived(&mut self, net: &mut Net<'_, '_>, t: u64) {
        let (ch, pos, v) = untag(t);
        if v / self.slices + 1 < self.steps {
            self.send(net, pos, ch, v + self.slices);
        }
    }
}

impl Workload for Ring {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        self.t0 = net.now();
        if self.ranks() < 2 || self.steps == 0 || self.start_lockstep(net) {
            return;
        }
        for p in 0..self.ranks() {
            for ch in 0..self.chunk.len() {
                for s in 0..self.slices {
                    self.send(net, p, ch, s);
                }
            }
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        if let Some(g) = self.group {
            let chunks = (self.ranks() * self.chunk.len()) as u64;
            if !self.out.borrow_mut().record_round(&done, chunks) {
                return;
            }
            let step = untag(done.tag).2 + 1;
            // The group's round has just been delivered: it is idle, neither call is refused.
            if step < self.steps {
                self.post_round(net, step);
            } else {
                net.end_group(g).expect("the end of an idle group");
                self.group = None;
            }
            return;
        }
        if !self.out.borrow_mut().record(&done) {
            // A chunk that never arrives stops its channel at that rank: NCCL would hang and
            // time out; the run ends when nothing more can move.
            return;
        }
        // The sending connection has a slot again: its next waiting slice goes.
        let (ch, pos, _) = untag(done.tag);
        let from = (pos + self.ranks() - 1) % self.ranks();
        let c = from * self.chunk.len() + ch;
        self.in_flight[c] -= 1;
        if let Some(v) = self.waiting[c].pop_front() {
            self.send(net, from, ch, v);
        }
        self.arrived(net, done.tag);
    }

    fn reaction_delay(&self) -> SimTime {
        // (Every answer to a delivery goes through `send`/`reduced`: the wire's start, or an
        // intra-node hop's wake-up.)
        self.wire.reaction_delay(self.intra.as_ref().map(|i| i.latency))
    }

    fn on_wake(&mut self, t: u64, net: &mut Net<'_, '_>) {
        if self.group.is_some() {
            // A lockstep ring has no hop inside a node: its wake-ups are rounds to post.
            self.post_now(net, t);
            return;
        }
        self.out.borrow_mut().record_local(net.now());
        self.arrived(net, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        for (ch, pos, step) in [(0, 0, 0), (3, 17, 9), (255, MAX_RANKS, MAX_STEPS), (1, (1 << POS_BITS) - 1, 1)] {
            assert_eq!(untag(tag(ch, pos, step)), (ch, pos, step));
            assert_eq!(untag(0xffff << INSTANCE_SHIFT | tag(ch, pos, step)), (ch, pos, step));
        }
    }
}
