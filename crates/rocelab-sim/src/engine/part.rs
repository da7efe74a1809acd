//! One partition of a partitioned run (`crate::parallel`): what the engine does differently
//! when it runs only the nodes of one partition of the fabric.
//!
//! Every partition holds a whole `Sim` (the same model, flows and faults; a replica), but
//! runs the events of its own nodes only:
//!
//! * a packet put on the wire of a cut link leaves the partition as a [`Msg`] carrying the
//!   packet by value (the sending slab frees it); the receiving partition appends it to its own
//!   copy of that wire at the barrier, and its arrival runs there as any other;
//! * a PFC frame sent over a cut link does the same;
//! * a message's QPs start only in the partition of their source host; each end of a QP
//!   writes its own half of the QP (sender fields where the source is, receiver fields where
//!   the destination is), and the snapshot takes each half from its owner;
//! * what the whole run shares — the router's view of links and epochs, faults, sampling
//!   instants, the PFC watchdog's polls — runs in every partition alike, each acting on its
//!   own ports only.
//!
//! A message is always due at least one lookahead after it was sent (the smallest delay of a
//! cut link), so every partition can run a window of one lookahead without hearing from the
//! others: the conservative, window-based synchronization of YAWNS (Nicol, "The cost of
//! conservative synchronization in parallel discrete event simulations", JACM 1993).

use super::*;
use crate::cc::IntStack;
use std::sync::Arc;

/// What crosses a cut link, due at `at` in the partition of the receiving end.
#[derive(Clone, Debug)]
pub enum Msg {
    /// A packet put on the wire of `port` (the sending end) at `sent`, reaching the peer at
    /// `at`; with its INT records when switches stamp them.
    Packet { at: SimTime, sent: SimTime, port: u32, pkt: Packet, int: Option<Box<IntStack>> },
    /// A PFC frame out of `from`, reaching its peer at `at` (pause with quanta > 0).
    Pfc { at: SimTime, from: u32, prio: u8, quanta: u16 },
}

impl Msg {
    pub fn at(&self) -> SimTime {
        match self {
            Msg::Packet { at, .. } | Msg::Pfc { at, .. } => *at,
        }
    }
}

/// A partition's identity and its outgoing messages.
pub(crate) struct Part {
    pub id: u32,
    /// Per node, its partition.
    pub of_node: Arc<Vec<u32>>,
    /// Per port, the partition of its peer (what a port sends to another partition leaves
    /// as a message).
    pub peer_part: Arc<Vec<u32>>,
    /// Per receiving partition, the messages sent to it since the last barrier, in the order
    /// they were sent.
    pub outbox: Vec<Vec<Msg>>,
    /// Per port, the last time its link went down (packets sent on it before then and still
    /// on the cable at that time are lost, even when they reach this partition after it).
    pub last_down: Vec<SimTime>,
    /// The partition has nothing left to do (see `Sim::part_idle`) since then.
    pub idle_since: Option<SimTime>,
    /// The run's workload hears of deliveries: report them (`delivered`).
    pub report_deliveries: bool,
    /// Messages whose last byte arrived here (or whose sender gave up here) since the last
    /// barrier: (time, message, failed), in the order they happened.
    pub delivered: Vec<(SimTime, u32, bool)>,
    /// Slots of finished QPs are reused (`SimOptions::recycle_qps`): QPs whose end here
    /// finished (the sender's last ACK, the receiver's last byte) since the last barrier.
    pub ends_done: Option<Vec<u32>>,
}

impl Part {
    pub fn new(
        id: u32,
        parts: usize,
        of_node: Arc<Vec<u32>>,
        peer_part: Arc<Vec<u32>>,
        report_deliveries: bool,
    ) -> Part {
        let n = peer_part.len();
        let outbox = (0..parts).map(|_| Vec::new()).collect();
        Part {
            id,
            of_node,
            peer_part,
            outbox,
            last_down: vec![SimTime::MAX; n],
            idle_since: None,
            report_deliveries,
            delivered: Vec::new(),
            ends_done: None,
        }
    }

    /// QP `qi`'s end in this partition is done (counted only where slots are reused).
    #[inline]
    pub fn end_done(&mut self, qi: u32) {
        if let Some(v) = &mut self.ends_done {
            v.push(qi);
        }
    }

    fn send(&mut self, port: u32, msg: Msg) {
        self.outbox[self.peer_part[port as usize] as usize].push(msg);
    }
}

/// What a partition reports at a barrier.
#[derive(Clone, Copy, Debug, Default)]
pub struct PartStatus {
    /// Its earliest pending event.
    pub next: Option<SimTime>,
    /// Nothing in flight, no QP of it unfinished: it runs no further unless a message arrives.
    pub idle: bool,
    /// When it last became idle.
    pub idle_since: SimTime,
    pub qps_created: usize,
    /// Of those, finished.
    pub qps_done: usize,
    /// Payload bytes delivered in order here (progress).
    pub payload: u64,
    pub live: usize,
    pub active_qps: usize,
    /// Packets delivered and dropped so far (progress, for the stall check).
    pub gone: u64,
    pub faults_due: usize,
}

impl<'m> Sim<'m> {
    /// The node is run here: always, unless the run is partitioned and it is another's.
    #[inline]
    pub(super) fn owns_node(&self, node: u32) -> bool {
        match &self.part {
            None => true,
            Some(p) => p.of_node[node as usize] == p.id,
        }
    }

    #[inline]
    pub(super) fn owns_port(&self, port: u32) -> bool {
        self.owns_node(self.ports[port as usize].node)
    }

    /// What `port` sends leaves this partition.
    #[inline]
    pub(super) fn ships(&self, port: u32) -> bool {
        match &self.part {
            None => false,
            Some(p) => p.peer_part[port as usize] != p.id,
        }
    }

    /// Packet `pkt`, just put on the wire of cut port `port`, leaves for the peer's partition.
    #[cold]
    #[inline(never)]
    pub(super) fn ship_packet(&mut self, port: u32, pkt: u32, arrive: SimTime) {
        let mut p = *self.pkts.get(pkt);
        (p.enq_time, p.next, p.next_gap) = (arrive, NONE, u32::MAX);
        let int = if self.int_on { Some(Box::new(*self.int_slot(pkt))) } else { None };
        self.free_pkt(pkt);
        let sent = self.now;
        if let Some(part) = &mut self.part {
            part.send(port, Msg::Packet { at: arrive, sent, port, pkt: p, int });
        }
    }

    /// A PFC frame out of cut port `from` leaves for the peer's partition.
    #[cold]
    #[inline(never)]
    pub(super) fn ship_pfc(&mut self, at: SimTime, from: u32, prio: u8, quanta: u16) {
        if let Some(part) = &mut self.part {
            part.send(from, Msg::Pfc { at, from, prio, quanta });
        }
    }

    /// Hands the messages sent since the last barrier over to `out` (per receiving
    /// partition; `out`'s vectors, emptied, become the next outbox, keeping their capacity).
    pub(crate) fn swap_outbox(&mut self, out: &mut Vec<Vec<Msg>>) {
        if let Some(p) = &mut self.part {
            out.resize_with(p.outbox.len(), Vec::new);
            out.iter_mut().for_each(Vec::clear);
            std::mem::swap(&mut p.outbox, out);
        }
    }

    /// The deliveries since the last barrier (see `Part::delivered`), handed over into `out`
    /// (emptied first).
    pub(crate) fn swap_delivered(&mut self, out: &mut Vec<(SimTime, u32, bool)>) {
        out.clear();
        if let Some(p) = &mut self.part {
            std::mem::swap(&mut p.delivered, out);
        }
    }

    /// The QPs whose end here finished since the last barrier, handed over into `out`.
    pub(crate) fn swap_ends_done(&mut self, out: &mut Vec<u32>) {
        out.clear();
        if let Some(v) = self.part.as_mut().and_then(|p| p.ends_done.as_mut()) {
            std::mem::swap(v, out);
        }
    }

    /// Of `candidates` (QPs done at both ends), those of which nothing is here: no packet, no
    /// timer counted against its slot.
    pub(crate) fn quiet_among(&self, candidates: &[u32], out: &mut Vec<u32>) {
        out.clear();
        out.extend(candidates.iter().copied().filter(|&q| {
            let q = &self.host.qps[q as usize];
            q.pkts_out == 0 && q.timers == 0 && !q.retired
        }));
    }

    /// Retires QP `qi` as the leader says (every partition retires the same QPs in the same
    /// order, so a slot is reused by the same next QP everywhere).
    pub(crate) fn retire_from_leader(&mut self, qi: u32) {
        self.host.retire(qi);
    }

    /// Posts a message the leader's workload posted (every partition posts every message, in
    /// the same order, so message and QP numbers agree everywhere).
    pub(crate) fn post_from_leader(&mut self, f: crate::traffic::FlowSpec) {
        self.post_flow(f);
    }

    /// A message from another partition, due at or after every event this partition has run.
    pub(crate) fn inject(&mut self, msg: Msg) {
        debug_assert!(msg.at() >= self.now, "a message due at {:?} reached a partition at {:?}", msg.at(), self.now);
        match msg {
            Msg::Packet { at, sent, port, pkt, int } => {
                let id = self.alloc_pkt(pkt);
                if let Some(int) = int {
                    *self.int_slot(id) = *int;
                }
                let down = self.part.as_ref().map_or(SimTime::MAX, |p| p.last_down[port as usize]);
                if !self.ports[port as usize].up || (down != SimTime::MAX && down >= sent) {
                    // The link went down while the packet was on it: lost, as the fault
                    // would have lost it had it been here.
                    let q = self.queues.classes[pkt.class as usize].queue;
                    self.lost_on_wire(port, id);
                    self.drop_pkt(port, q, id, DropReason::LinkDown);
                    return;
                }
                self.wire_append(port, id, at);
            }
            Msg::Pfc { at, from, prio, quanta } => self.q.push(at, Ev::PfcArrive { from, prio, quanta }),
        }
    }

    /// Nothing of this partition is in flight and none of its QPs is unfinished: no event of
    /// its own can send anything any more (only a message can start it again).
    pub(crate) fn part_idle(&self) -> bool {
        self.qps_left == 0 && self.pkts.live() == 0 && self.deliveries_due == 0 && self.wakes.none_due()
    }

    /// Runs this partition's events due before `end`, stopping early once it is idle (so an
    /// idle partition never runs past the time the whole run may turn out to have ended).
    pub(crate) fn run_window(&mut self, end: SimTime) -> PartStatus {
        // (Idle only stops a window: a partition that runs again — a message arrived — is
        // busy from its start, and one that turns idle stops at once.)
        if !self.part_idle() {
            if let Some(p) = &mut self.part {
                p.idle_since = None;
            }
        }
        loop {
            if self.part_idle() {
                if let Some(p) = &mut self.part {
                    p.idle_since.get_or_insert(self.now);
                }
                break;
            }
            let (pkts, ports) = (&self.pkts, &self.ports);
            let Some((t, ev)) = self.q.pop_before(end, |ev| prefetch_for(pkts, ports, ev)) else {
                break;
            };
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
        }
        self.part_status()
    }

    /// Runs the events due before `end` (or at `end` too, with `inclusive`) whatever the
    /// partition's state, and sets the clock to `end`: the close of a partitioned run.
    pub(crate) fn run_tail(&mut self, end: SimTime, inclusive: bool) {
        let limit = if inclusive { SimTime(end.0.saturating_add(1)) } else { end };
        while let Some((t, ev)) = self.q.pop_before(limit, |_| {}) {
            self.now = t;
            self.events += 1;
            self.dispatch_one(ev);
        }
        self.now = end;
    }

    pub(crate) fn part_status(&self) -> PartStatus {
        let idle = self.part_idle();
        PartStatus {
            next: self.q.next_time(),
            idle,
            idle_since: self.part.as_ref().and_then(|p| p.idle_since).unwrap_or(self.now),
            qps_created: self.qps_created,
            qps_done: self.qps_created - self.qps_left,
            payload: self.stats.payload_delivered,
            live: self.pkts.live(),
            active_qps: self.active_qps,
            gone: self.stats.delivered + self.stats.dropped,
            faults_due: self.faults_due,
        }
    }

    /// A QP of this partition waits for its retransmit timeout with packets outstanding (it
    /// will make progress: the run is not stalled).
    pub(crate) fn awaiting_timeout(&self) -> bool {
        self.host.qps.iter().any(|q| q.rto_armed && q.sender_done.is_none() && q.snd_una < q.snd_nxt)
    }

    /// Marks the run's end: stopped at its duration, or for want of progress.
    pub(crate) fn set_stopped(&mut self, at_duration: bool, no_progress: bool) {
        self.stopped_at_duration = at_duration;
        self.stopped_no_progress = no_progress;
    }

    /// Closes the books (what `run` does after its loop).
    pub(crate) fn close(&mut self) {
        self.finish_accounting();
    }
}
