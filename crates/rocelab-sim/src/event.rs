//! The event queues: the packet engine's timing wheel (with a radix heap beyond its reach)
//! and the flow engine's radix heap, both ordered by `(time, insertion)`.
//!
//! Ordering guarantee: events pop in non-decreasing time; events with equal times pop in the
//! order they were pushed. That makes a run a pure function of its inputs and seed. Push and
//! pop are O(1) amortized: on the wheel an event moves at most twice and is sorted among the
//! few of its nanosecond; in the radix heap it moves down at most once per 4-bit level.

use rocelab_model::SimTime;

/// Everything that can happen. Small and `Copy`: the queue moves these around a lot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A port finished serializing its current packet.
    TxDone {
        port: u32,
    },
    /// The head packet on the wire of `port`, `pkt`, reaches the peer port `peer` (carried
    /// so the engine can prefetch both ports before the event comes due).
    WireArrive {
        port: u32,
        pkt: u32,
        peer: u32,
    },
    /// A PFC frame from `from` reaches its peer: pause (quanta > 0) or resume (0).
    PfcArrive {
        from: u32,
        prio: u8,
        quanta: u16,
    },
    /// A pause on `port`/`prio` may have expired (one pending per port and priority).
    PauseExpire {
        port: u32,
        prio: u8,
    },
    /// Re-send XOFF while the ingress (port, prio) is still congested (one pending).
    PauseRefresh {
        port: u32,
        prio: u8,
    },
    /// InfiniBand: credits for `bytes` of VL `vl` freed by the peer reach `port`.
    CreditArrive {
        port: u32,
        vl: u8,
        bytes: u32,
    },
    /// A NIC's rate limiter allows its next packet.
    NicWake {
        host: u32,
        gen: u32,
    },
    /// A queue pair starts sending.
    QpStart {
        qp: u32,
    },
    /// The workload hears that a flow (message) was delivered.
    Delivered {
        flow: u32,
    },
    /// The workload's wake-up (`Sim::wakes` holds its tag in `slot`).
    Wake {
        slot: u32,
    },
    /// Switch `sw` learns the routing state of `epoch` (a link change reached it).
    RouteLearn {
        sw: u32,
        epoch: u32,
    },
    /// A slowly draining host (`FaultAction::Drain`) has taken its head packet.
    HostDrain {
        nic: u32,
        gen: u32,
    },
    /// Linux TCP's delayed-ACK timer of a QP's receiver, armed when `rcv_nxt` was `psn`.
    DelayedAck {
        qp: u32,
        psn: u32,
    },
    /// DCQCN timers and transport timeout of a QP.
    RateIncrease {
        qp: u32,
        gen: u32,
    },
    RateReduce {
        qp: u32,
    },
    Rto {
        qp: u32,
        gen: u32,
    },
    /// A CNP generated after the NIC's CNP delay.
    CnpSend {
        qp: u32,
    },
    /// Periodic: telemetry sampling and the PFC watchdog poll.
    Sample,
    WatchdogPoll,
    Fault {
        idx: u32,
    },
    /// Steady-state fast-forward (`engine::fastfwd`): look for steady groups of QPs, and end
    /// a skip (generation `gen` of skip slot `skip`).
    FfLook,
    FfResume {
        skip: u32,
        gen: u32,
    },
}

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: u64,
    ev: E,
}

/// Picoseconds per fine slot, and per coarse slot (64 fine ones), as powers of two.
const FINE_BITS: u32 = 10;
const COARSE_BITS: u32 = FINE_BITS + 6;
/// Fine slots in a coarse one, and coarse slots on the wheel: 64 of 65.5 ns, 4.2 µs ahead.
const WIDTH: u64 = 64;
/// The event this many places behind the next one in the current slot is shown to the
/// prefetch hint: at 1,024 hosts about as far ahead as the radix heap's 256 ps horizon
/// hinted. (8 and 16 measured alike at 128 and 1,024 hosts, within the runs' noise.)
const HINT_AHEAD: usize = 16;
/// A slot this full is sorted by the standard library's stable sort, not by insertion.
const INSERTION_SORT_MAX: usize = 64;

/// The event queue: a two-level timing wheel for the next 4 µs, a radix heap beyond.
///
/// Nearly every event is pushed less than 4 µs ahead of the clock (a port's next
/// transmission, the next packet on a busy wire, a packet over a cable). It is appended to
/// its coarse slot (65.5 ns); when the clock reaches that slot its events are dealt into 64
/// fine slots (1.02 ns), and each fine slot, when it comes due, is sorted by time, a handful
/// of events. So an event moves twice on its way out (a radix heap alone moved each one down
/// four or five levels) and the slots being filled are few, so they stay in the cache.
/// Timers and events further out wait in a radix heap and join the wheel as it comes within
/// reach of them.
///
/// Order: events pop in non-decreasing time and, at equal times, in push order. Within a
/// slot events sit in push order: an event from the heap joins its slot before any pushed
/// into it directly (those were pushed later, once the slot was within reach), and leaves
/// the heap in time and push order; an event dealt from a coarse slot keeps its place among
/// the others, and the sort is stable.
///
/// Generic over the event type (`E`: the packet engine's [`Ev`] by default; the flow engine
/// has its own), monomorphized, so each engine gets the queue as if written for it.
pub struct EventQueue<E = Ev> {
    /// The current fine slot's events, sorted by time; read from `head`.
    cur: Vec<Entry<E>>,
    head: usize,
    /// Every fine slot up to this one (absolute: time >> FINE_BITS) is in `cur`.
    fine_at: u64,
    /// The coarse slot being dealt out (absolute: time >> COARSE_BITS): its later fine slots
    /// are in `fine`, the next `WIDTH - 1` coarse slots in `coarse`, the rest in `far`.
    coarse_at: u64,
    fine: Vec<Vec<Entry<E>>>,
    coarse: Vec<Vec<Entry<E>>>,
    /// Bit i set: `fine[i]` (or `coarse[i]`) holds events.
    fine_occ: u64,
    coarse_occ: u64,
    far: RadixQueue<E>,
    /// The earliest time in `far` (`u64::MAX`: empty).
    far_min: u64,
    /// The time of the last event popped.
    last: u64,
    len: usize,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<E: Copy> EventQueue<E> {
    /// A queue for about `n` pending events (the engine's ports and timers): the slots are
    /// sized for them up front, so a run's event loop seldom grows one.
    pub fn with_capacity(n: usize) -> Self {
        let slots = |cap: usize| (0..WIDTH).map(|_| Vec::with_capacity(cap)).collect();
        let per_slot = (n / WIDTH as usize).clamp(8, 1024);
        EventQueue {
            cur: Vec::with_capacity(per_slot),
            head: 0,
            fine_at: 0,
            coarse_at: 0,
            fine: slots(per_slot),
            coarse: slots(per_slot * 4),
            fine_occ: 0,
            coarse_occ: 0,
            far: RadixQueue::new(),
            far_min: u64::MAX,
            last: 0,
            len: 0,
        }
    }

    // (Always inlined: a call from each packet's transmission and arrival cost 8 % of a run.)
    #[inline(always)]
    pub fn push(&mut self, time: SimTime, ev: E) {
        debug_assert!(time.0 >= self.last, "event scheduled in the past");
        self.len += 1;
        self.place(Entry { time: time.0, ev });
    }

    /// Puts `e` where it belongs: a fine or coarse slot (last: nearly every event), else the
    /// current slot or the heap (`place_rare`).
    #[inline(always)]
    fn place(&mut self, e: Entry<E>) {
        let fine = e.time >> FINE_BITS;
        let coarse = e.time >> COARSE_BITS;
        if coarse == self.coarse_at && fine > self.fine_at {
            let i = (fine % WIDTH) as usize;
            self.fine[i].push(e);
            self.fine_occ |= 1 << i;
        } else if coarse > self.coarse_at && coarse < self.coarse_at + WIDTH {
            // (A later coarse slot's fine slots are all after `fine_at`.)
            let i = (coarse % WIDTH) as usize;
            self.coarse[i].push(e);
            self.coarse_occ |= 1 << i;
        } else {
            self.place_rare(e);
        }
    }

    /// An event of the current slot goes after every event due no later; one beyond the
    /// wheel's reach goes into the heap.
    #[inline(never)]
    fn place_rare(&mut self, e: Entry<E>) {
        if e.time >> FINE_BITS <= self.fine_at {
            let mut at = self.cur.len();
            while at > self.head && self.cur[at - 1].time > e.time {
                at -= 1;
            }
            self.cur.insert(at, e);
        } else {
            self.far_min = self.far_min.min(e.time);
            self.far.push(e);
        }
    }

    /// Makes `cur` hold the next events (there are some, and `cur` has none left) and shows
    /// the first of them to `hint`. Returns false (`LIMITED`) when they are at or after
    /// `limit`: nothing is popped, and an event pushed before them still goes into `cur`, in
    /// order.
    #[inline]
    fn advance<const LIMITED: bool>(&mut self, hint: &mut impl FnMut(&E), limit: u64) -> bool {
        loop {
            // The next fine slot of this coarse one.
            let from = if self.fine_at >> (COARSE_BITS - FINE_BITS) == self.coarse_at {
                (self.fine_at % WIDTH) as u32 + 1
            } else {
                0
            };
            let bits = if from >= 64 { 0 } else { self.fine_occ & (!0u64 << from) };
            if bits != 0 {
                let i = bits.trailing_zeros() as usize;
                let fine = (self.coarse_at << (COARSE_BITS - FINE_BITS)) | i as u64;
                if LIMITED && fine << FINE_BITS >= limit {
                    return false;
                }
                self.fine_at = fine;
                self.fine_occ &= !(1 << i);
                self.cur.clear();
                self.head = 0;
                std::mem::swap(&mut self.cur, &mut self.fine[i]);
                if self.cur.len() <= INSERTION_SORT_MAX {
                    insertion_sort(&mut self.cur);
                } else {
                    self.cur.sort_by_key(|e| e.time);
                }
                for e in self.cur.iter().take(HINT_AHEAD) {
                    hint(&e.ev);
                }
                return true;
            }
            // The next coarse slot, on the wheel or (the wheel empty) the heap's.
            let coarse = if self.coarse_occ != 0 {
                let ahead = self.coarse_occ.rotate_right((self.coarse_at % WIDTH) as u32).trailing_zeros() as u64;
                self.coarse_at + ahead
            } else {
                self.far_min >> COARSE_BITS
            };
            if LIMITED && coarse << COARSE_BITS >= limit {
                return false;
            }
            self.coarse_at = coarse;
            self.fine_at = (coarse << (COARSE_BITS - FINE_BITS)) - 1;
            // Heap events now within reach join the wheel, before anything is pushed there.
            let reach = (coarse + WIDTH) << COARSE_BITS;
            if self.far_min < reach {
                // (The heap settles only up to an event it gives away: pushes into it are all
                // beyond the reach, so never before its last settled time.)
                while self.far.len > 0 && self.far.peek_unsettled() < reach {
                    let e = self.far.pop();
                    self.place(e);
                }
                self.far_min = if self.far.len > 0 { self.far.peek_unsettled() } else { u64::MAX };
            }
            let i = (coarse % WIDTH) as usize;
            if self.coarse_occ & (1 << i) != 0 {
                self.coarse_occ &= !(1 << i);
                let mut items = std::mem::take(&mut self.coarse[i]);
                for e in &items {
                    let f = ((e.time >> FINE_BITS) % WIDTH) as usize;
                    self.fine[f].push(*e);
                    self.fine_occ |= 1 << f;
                }
                // Give the allocation back so a busy slot does not reallocate every round.
                items.clear();
                self.coarse[i] = items;
            }
        }
    }

    /// The next event's time, if before `limit` (`LIMITED`: a constant, so the single
    /// engine's pops carry no test of a limit they never have), with `cur` holding it.
    #[inline]
    fn settle<const LIMITED: bool>(&mut self, hint: &mut impl FnMut(&E), limit: u64) -> Option<u64> {
        if self.head == self.cur.len() {
            if self.len == 0 || !self.advance::<LIMITED>(hint, limit) {
                return None;
            }
        } else if let Some(e) = self.cur.get(self.head + HINT_AHEAD) {
            hint(&e.ev);
        }
        let t = self.cur[self.head].time;
        (!LIMITED || t < limit).then_some(t)
    }

    #[inline]
    fn take(&mut self) -> (SimTime, E) {
        let e = self.cur[self.head];
        self.head += 1;
        self.len -= 1;
        self.last = e.time;
        (SimTime(e.time), e.ev)
    }

    /// The next event, if it is due before `limit`; otherwise no event is popped, so events
    /// may still be pushed at any time from the last one popped (a partition that stops at
    /// the end of its window takes messages due after it: `engine::part`).
    #[inline]
    pub fn pop_before(&mut self, limit: SimTime, mut hint: impl FnMut(&E)) -> Option<(SimTime, E)> {
        self.settle::<true>(&mut hint, limit.0)?;
        Some(self.take())
    }

    /// The time of the next event, moving nothing (unlike `peek_time`).
    pub fn next_time(&self) -> Option<SimTime> {
        if self.head < self.cur.len() {
            return Some(SimTime(self.cur[self.head].time));
        }
        let earliest = |slots: &[Vec<Entry<E>>], occ: u64, from: u64| {
            let i = (occ.rotate_right((from % WIDTH) as u32).trailing_zeros() as u64 + from) % WIDTH;
            slots[i as usize].iter().map(|e| e.time).min()
        };
        // (The occupied fine slots all follow `fine_at` in this coarse slot, so the lowest
        // is the earliest; coarse slots are counted round from `coarse_at`.)
        let t = if self.fine_occ != 0 {
            earliest(&self.fine, self.fine_occ, 0)
        } else if self.coarse_occ != 0 {
            earliest(&self.coarse, self.coarse_occ, self.coarse_at)
        } else {
            (self.far_min != u64::MAX).then_some(self.far_min)
        };
        t.map(SimTime)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_hinted(|_| {})
    }

    /// Pops the next event. The event `HINT_AHEAD` places behind it in the current slot (or
    /// the first `HINT_AHEAD` of a slot that becomes current) is shown to `hint` first, so
    /// the caller can prefetch what it will touch. The hint never changes the order.
    #[inline]
    pub fn pop_hinted(&mut self, mut hint: impl FnMut(&E)) -> Option<(SimTime, E)> {
        self.settle::<false>(&mut hint, u64::MAX)?;
        Some(self.take())
    }

    /// The time of the next event, showing events that come due soon to `hint` (see
    /// `pop_hinted`).
    #[inline]
    pub fn peek_time(&mut self, mut hint: impl FnMut(&E)) -> Option<SimTime> {
        self.settle::<false>(&mut hint, u64::MAX).map(SimTime)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Stable insertion sort by time: the events of one fine slot, nearly in order already.
#[inline]
fn insertion_sort<E: Copy>(v: &mut [Entry<E>]) {
    for i in 1..v.len() {
        let e = v[i];
        let mut j = i;
        while j > 0 && v[j - 1].time > e.time {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
}

/// Bits of time per radix level: 16-way buckets, 16 levels cover 64 bits.
const RADIX_BITS: u32 = 4;
const RADIX: usize = 1 << RADIX_BITS;
const LEVELS: usize = 64 / RADIX_BITS as usize;
/// Bucket 0, then `RADIX` digit buckets per level.
const BUCKETS: usize = 1 + LEVELS * RADIX;
const OCC_WORDS: usize = BUCKETS.div_ceil(64);

/// Monotone 16-ary radix heap: the wheel's events beyond its reach, and the flow engine's
/// queue (its events, flow completions and timers, are mostly far apart: a wheel would only
/// move them more).
///
/// Bucket 0 holds events at exactly `last` (the latest time settled). Any other event sits
/// in the bucket of the highest 4-bit digit where its time differs from `last` (its level)
/// and of its own value of that digit; bucket order is then time order. Pushes append and
/// pops take the front of bucket 0, so events of equal time leave in the order they came.
/// Settling takes the lowest non-empty bucket, makes its earliest time `last` and
/// redistributes it, in order, into lower levels, which are empty (so the order holds); a
/// level-0 bucket holds one time only, so it becomes bucket 0 by swapping the two vectors.
/// Pushing a time earlier than the last one settled is a bug (debug-asserted).
pub struct RadixQueue<E> {
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit b set: bucket b is non-empty (bit 0 is cleared before each search: bucket 0 is
    /// tracked by `head`).
    occupied: [u64; OCC_WORDS],
    /// Read position in bucket 0 (popping from the front without shifting).
    head: usize,
    last: u64,
    len: usize,
}

impl<E: Copy> Default for RadixQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> RadixQueue<E> {
    pub fn new() -> Self {
        RadixQueue {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; OCC_WORDS],
            head: 0,
            last: 0,
            len: 0,
        }
    }

    /// Schedules `ev` at `time` (not before the last event popped).
    #[inline]
    pub fn push_at(&mut self, time: SimTime, ev: E) {
        self.push(Entry { time: time.0, ev });
    }

    /// The time of the next event (settling the heap to it).
    #[inline]
    pub fn peek_time(&mut self) -> Option<SimTime> {
        if self.len == 0 {
            return None;
        }
        if self.head == self.buckets[0].len() {
            self.settle();
        }
        Some(SimTime(self.last))
    }

    /// The next event.
    #[inline]
    pub fn pop_next(&mut self) -> Option<(SimTime, E)> {
        (self.len > 0).then(|| {
            let e = self.pop();
            (SimTime(e.time), e.ev)
        })
    }

    /// Whether an event is queued at the time last popped (or settled). Unlike `peek_time`
    /// it settles nothing, so events may still be pushed at that time afterwards: a caller
    /// that must act once all events of an instant are handled (the flow engine's rate
    /// recomputation) asks this before peeking further.
    pub fn due_at_last(&self) -> bool {
        self.head < self.buckets[0].len()
    }

    #[inline]
    fn bucket_of(&self, time: u64) -> usize {
        let x = time ^ self.last;
        if x == 0 {
            0
        } else {
            let level = (63 - x.leading_zeros()) / RADIX_BITS;
            let digit = (time >> (level * RADIX_BITS)) as usize & (RADIX - 1);
            1 + level as usize * RADIX + digit
        }
    }

    #[inline]
    fn put(&mut self, e: Entry<E>) {
        let b = self.bucket_of(e.time);
        self.buckets[b].push(e);
        self.occupied[b / 64] |= 1 << (b % 64);
    }

    fn push(&mut self, e: Entry<E>) {
        debug_assert!(e.time >= self.last, "event scheduled in the past");
        self.put(e);
        self.len += 1;
    }

    /// The earliest time, settling nothing (the heap is not empty).
    fn peek_unsettled(&self) -> u64 {
        if self.head < self.buckets[0].len() {
            return self.last;
        }
        self.buckets[self.lowest_bucket()].iter().map(|e| e.time).min().expect("non-empty")
    }

    /// Takes the earliest event (the heap is not empty), settling the heap to its time.
    fn pop(&mut self) -> Entry<E> {
        if self.head == self.buckets[0].len() {
            self.settle();
        }
        let e = self.buckets[0][self.head];
        self.head += 1;
        self.len -= 1;
        e
    }

    /// Makes bucket 0 hold the earliest events (there are none in it, and some beyond).
    fn settle(&mut self) {
        self.buckets[0].clear();
        self.occupied[0] &= !1;
        self.head = 0;
        let b = self.lowest_bucket();
        self.occupied[b / 64] &= !(1 << (b % 64));
        if b <= RADIX {
            // Level 0: every event of the bucket is at the same time, in push order. It
            // becomes bucket 0 as it is.
            self.last = self.buckets[b][0].time;
            self.buckets.swap(0, b);
            return;
        }
        let mut items = std::mem::take(&mut self.buckets[b]);
        self.last = items.iter().map(|e| e.time).min().expect("non-empty");
        for e in &items {
            self.put(*e);
        }
        // Give the allocation back so a busy bucket does not reallocate every round.
        items.clear();
        self.buckets[b] = items;
    }

    /// The lowest non-empty bucket other than bucket 0 (the heap holds events beyond it).
    #[inline]
    fn lowest_bucket(&self) -> usize {
        (0..OCC_WORDS)
            .map(|w| if w == 0 { self.occupied[0] & !1 } else { self.occupied[w] })
            .enumerate()
            .find(|(_, bits)| *bits != 0)
            .map(|(w, bits)| w * 64 + bits.trailing_zeros() as usize)
            .expect("events beyond bucket 0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::collections::BTreeMap;

    #[test]
    fn entries_stay_24_bytes() {
        assert!(std::mem::size_of::<Entry<Ev>>() <= 24);
    }

    /// A time `now + δ`, δ drawn so that events land in the current fine slot, the fine and
    /// coarse slots, just past the wheel's reach and far beyond it (timers), with many ties.
    fn ahead(rng: &mut Rng, now: u64) -> u64 {
        now + match rng.below(6) {
            0 => rng.below(4),
            1 => rng.below(2_000),
            2 => rng.below(200_000),
            3 => rng.below(5_000_000),
            4 => (WIDTH << COARSE_BITS) - 1_000 + rng.below(2_000),
            _ => rng.below(50_000_000),
        }
    }

    /// A partition's use: pops bounded by a window's end, and after the queue says "nothing
    /// before it", pushes anywhere from the last event popped (not from the end), against a
    /// `BTreeMap` shadow keyed by (time, push order).
    #[test]
    fn bounded_pops_match_btreemap_shadow() {
        let mut rng = Rng::new(7, 3);
        let mut q = EventQueue::default();
        let mut shadow: BTreeMap<(u64, u64), u32> = BTreeMap::new();
        let (mut seq, mut now) = (0u64, 0u64);
        for _ in 0..400_000 {
            if rng.below(2) == 0 || shadow.is_empty() {
                let t = ahead(&mut rng, now);
                let id = rng.next_u64() as u32;
                q.push(SimTime(t), Ev::TxDone { port: id });
                shadow.insert((t, seq), id);
                seq += 1;
            } else {
                let limit = ahead(&mut rng, now);
                let expect = shadow.first_key_value().filter(|(k, _)| k.0 < limit).map(|(k, id)| (k.0, *id));
                let got = q.pop_before(SimTime(limit), |_| {});
                assert_eq!(got.map(|(t, ev)| (t.0, ev)), expect.map(|(t, id)| (t, Ev::TxDone { port: id })));
                if let Some((t, _)) = expect {
                    shadow.pop_first();
                    now = t;
                }
                assert_eq!(q.next_time().map(|t| t.0), shadow.keys().next().map(|k| k.0));
            }
            assert_eq!(q.len(), shadow.len());
        }
    }

    /// Millions of seeded operations against a `BTreeMap` shadow keyed by (time, seq).

    #[test]
    fn matches_btreemap_shadow() {
        let mut rng = Rng::new(42, 7);
        let mut q = EventQueue::default();
        let mut shadow: BTreeMap<(u64, u64), u32> = BTreeMap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let mut hints = 0;
        for _ in 0..1_000_000 {
            if rng.below(3) < 2 || shadow.is_empty() {
                // Many equal times (the tie-break), near times and far ones (timers), so keys
                // spread over many radix buckets.
                let t = match rng.below(4) {
                    0 => now + rng.below(50),
                    1 => now + rng.below(2_000),
                    2 => now + rng.below(5_000_000),
                    _ => now + rng.below(50_000_000),
                };
                let id = rng.next_u64() as u32;
                q.push(SimTime(t), Ev::TxDone { port: id });
                shadow.insert((t, seq), id);
                seq += 1;
            } else {
                let mut hinted = Vec::new();
                let (t, ev) = q.pop_hinted(|e| hinted.push(*e)).unwrap();
                // A hint names events that are queued and due in the nanosecond slot of the one
                // popped.
                for h in &hinted {
                    let Ev::TxDone { port } = *h else { panic!("unexpected event {h:?}") };
                    assert!(
                        *h == ev
                            || shadow.iter().any(|(&(st, _), &id)| id == port && st >> FINE_BITS == t.0 >> FINE_BITS)
                    );
                }
                hints += hinted.len();
                let (&(st, _), &id) = shadow.iter().next().unwrap();
                shadow.pop_first();
                assert_eq!(t.0, st);
                assert_eq!(ev, Ev::TxDone { port: id });
                now = t.0;
            }
            assert_eq!(q.len(), shadow.len());
        }
        while let Some((t, ev)) = q.pop() {
            let ((st, _), id) = shadow.pop_first().unwrap();
            assert_eq!((t.0, ev), (st, Ev::TxDone { port: id }));
        }
        assert!(shadow.is_empty());
        assert!(hints > 10_000, "the near-horizon hint was given {hints} times");
    }
}
