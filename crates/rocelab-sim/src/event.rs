//! The event queue: a monotone 16-ary radix heap ordered by `(time, insertion)`.
//!
//! Ordering guarantee: events pop in non-decreasing time; events with equal times pop in the
//! order they were pushed. That makes a run a pure function of its inputs and seed. Push and
//! pop are O(1) amortized (each event moves down at most once per 4-bit level). The engine
//! keeps the queue small by scheduling at most one transmit and one wire-arrival event per
//! port, so it grows with ports and timers, not with packets in flight.

use rocelab_model::SimTime;

/// Everything that can happen. Small and `Copy`: the heap moves these around a lot.
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

/// Bits of time per radix level: 16-way buckets, 16 levels cover 64 bits. (256-way buckets
/// moved events half as often, 10 % fewer instructions at 128 hosts, but took no less time:
/// 2,049 buckets, each its own allocation, touch more cache lines than they save moves, and
/// each grows on first use, so a short run allocated per event more than the bench allows.)
const RADIX_BITS: u32 = 4;
const RADIX: usize = 1 << RADIX_BITS;
const LEVELS: usize = 64 / RADIX_BITS as usize;
/// Bucket 0, then `RADIX` digit buckets per level.
const BUCKETS: usize = 1 + LEVELS * RADIX;
const OCC_WORDS: usize = BUCKETS.div_ceil(64);
/// Events that land at or below this bucket are due within `RADIX^2` ps of the current time:
/// the queue hands them to the caller's prefetch hint.
const NEAR: usize = 2 * RADIX;

/// Monotone 16-ary radix heap of events (see the module doc for the ordering guarantee).
///
/// Bucket 0 holds events at exactly `last` (the latest time popped or settled). Any other
/// event sits in the bucket of the highest 4-bit digit where its time differs from `last`
/// (its level) and of its own value of that digit; bucket order is then time order. Pushes
/// append and pops take the front of bucket 0, so events of equal time leave in the order
/// they came. Settling takes the lowest non-empty bucket, makes its earliest time `last` and
/// redistributes it, in order, into lower levels, which are empty (so the order holds). An
/// event moves down at most once per level: a timer 1 µs ahead (2^20 ps, level 5) moves at
/// most five times, to level 0, a quarter of what a binary radix heap moves it; no more after
/// that: a level-0 bucket holds one time only (its digit is the whole difference), so it
/// becomes bucket 0 by swapping the two vectors, not by moving its events one by one. Pushing a time earlier than
/// the last one popped is a bug (debug-asserted).
///
/// Generic over the event type (`E`: the packet engine's [`Ev`] by default; the flow engine
/// has its own), monomorphized, so each engine gets the queue as if written for it.
pub struct EventQueue<E = Ev> {
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit b set: bucket b is non-empty (bit 0 is cleared before each search: bucket 0 is
    /// tracked by `head`).
    occupied: [u64; OCC_WORDS],
    /// Read position in bucket 0 (popping from the front without shifting).
    head: usize,
    last: u64,
    len: usize,
    seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn with_capacity(n: usize) -> Self {
        let mut buckets: Vec<Vec<Entry<E>>> = (0..BUCKETS).map(|_| Vec::new()).collect();
        buckets[0].reserve(n);
        EventQueue { buckets, occupied: [0; OCC_WORDS], head: 0, last: 0, len: 0, seq: 0 }
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
    fn put(&mut self, e: Entry<E>) -> usize {
        let b = self.bucket_of(e.time);
        self.buckets[b].push(e);
        self.occupied[b / 64] |= 1 << (b % 64);
        b
    }

    #[inline]
    pub fn push(&mut self, time: SimTime, ev: E) {
        debug_assert!(time.0 >= self.last, "event scheduled in the past");
        self.put(Entry { time: time.0, ev });
        self.len += 1;
        self.seq += 1;
    }

    /// Makes bucket 0 non-empty (unless the queue is empty, or, when `LIMITED`, its next
    /// event is at or past `limit`: then nothing is settled) and returns its front time.
    /// Events that come due soon are shown to `hint` (see `pop_hinted`). (`LIMITED` is a
    /// constant so the single engine's pops carry no test of a limit they never have.)
    #[inline]
    fn settle<const LIMITED: bool>(&mut self, hint: &mut impl FnMut(&E), limit: u64) -> Option<u64> {
        if self.head < self.buckets[0].len() {
            return (!LIMITED || self.last < limit).then_some(self.last);
        }
        if self.len == 0 {
            return None;
        }
        self.buckets[0].clear();
        self.occupied[0] &= !1;
        self.head = 0;
        let b = self.lowest_bucket();
        if b <= RADIX {
            // Level 0: every event of the bucket is at the same time (already hinted when it
            // came this close), in push order. It becomes bucket 0 as it is.
            let t = self.buckets[b][0].time;
            if LIMITED && t >= limit {
                return None;
            }
            self.occupied[b / 64] &= !(1 << (b % 64));
            self.buckets.swap(0, b);
            self.last = t;
            return Some(t);
        }
        let min = self.buckets[b].iter().map(|e| e.time).min().expect("non-empty");
        if LIMITED && min >= limit {
            return None;
        }
        self.occupied[b / 64] &= !(1 << (b % 64));
        let mut items = std::mem::take(&mut self.buckets[b]);
        self.last = min;
        for e in &items {
            if self.put(*e) <= NEAR {
                hint(&e.ev);
            }
        }
        // Give the allocation back so a busy bucket does not reallocate every round.
        items.clear();
        self.buckets[b] = items;
        Some(self.last)
    }

    /// The lowest non-empty bucket other than bucket 0 (the queue holds events beyond it).
    #[inline]
    fn lowest_bucket(&self) -> usize {
        (0..OCC_WORDS)
            .map(|w| if w == 0 { self.occupied[0] & !1 } else { self.occupied[w] })
            .enumerate()
            .find(|(_, bits)| *bits != 0)
            .map(|(w, bits)| w * 64 + bits.trailing_zeros() as usize)
            .expect("events beyond bucket 0")
    }

    /// The next event, if it is due before `limit`; otherwise nothing is settled, so events may
    /// still be pushed at any time from the last one popped (a partition that stops at the
    /// end of its window takes messages due after it: `engine::part`).
    #[inline]
    pub fn pop_before(&mut self, limit: SimTime, mut hint: impl FnMut(&E)) -> Option<(SimTime, E)> {
        let t = self.settle::<true>(&mut hint, limit.0)?;
        let e = self.buckets[0][self.head];
        self.head += 1;
        self.len -= 1;
        Some((SimTime(t), e.ev))
    }

    /// The time of the next event, settling nothing (unlike `peek_time`).
    pub fn next_time(&self) -> Option<SimTime> {
        if self.head < self.buckets[0].len() {
            return Some(SimTime(self.last));
        }
        if self.len == 0 {
            return None;
        }
        self.buckets[self.lowest_bucket()].iter().map(|e| SimTime(e.time)).min()
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_hinted(|_| {})
    }

    /// Pops the next event; events that move close to the head on the way (due within a few
    /// hundred picoseconds, typically tens of events ahead) are shown to `hint` first, so the
    /// caller can prefetch what they will touch. The hint never changes the order.
    #[inline]
    pub fn pop_hinted(&mut self, mut hint: impl FnMut(&E)) -> Option<(SimTime, E)> {
        let t = self.settle::<false>(&mut hint, u64::MAX)?;
        let e = self.buckets[0][self.head];
        self.head += 1;
        self.len -= 1;
        Some((SimTime(t), e.ev))
    }

    /// The time of the next event, showing events that come due soon to `hint` (see
    /// `pop_hinted`).
    #[inline]
    pub fn peek_time(&mut self, mut hint: impl FnMut(&E)) -> Option<SimTime> {
        self.settle::<false>(&mut hint, u64::MAX).map(SimTime)
    }

    /// Whether an event is queued at the time last popped (or settled). Unlike `peek_time`
    /// it settles nothing, so events may still be pushed at that time afterwards: a caller
    /// that must act once all events of an instant are handled (the flow engine's rate
    /// recomputation) asks this before peeking further.
    pub fn due_at_last(&self) -> bool {
        self.head < self.buckets[0].len()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Total events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::collections::BTreeMap;

    /// Millions of seeded operations against a `BTreeMap` shadow keyed by (time, seq).
    #[test]
    fn entries_stay_24_bytes() {
        assert!(std::mem::size_of::<Entry<Ev>>() <= 24);
    }

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
                // A hint names events that are queued and due within the near horizon.
                for h in &hinted {
                    let Ev::TxDone { port } = *h else { panic!("unexpected event {h:?}") };
                    assert!(*h == ev || shadow.iter().any(|(&(st, _), &id)| id == port && st < t.0 + 256));
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
