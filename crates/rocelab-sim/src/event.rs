//! The event queue: a monotone radix heap ordered by `(time, insertion)`.
//!
//! Ordering guarantee: events pop in non-decreasing time; events with equal times pop in the
//! order they were pushed. That makes a run a pure function of its inputs and seed. Push and
//! pop are O(1) amortized (each event moves down at most 64 buckets). The engine keeps the
//! queue small by scheduling at most one transmit and one wire-arrival event per port, so it
//! grows with ports and timers, not with packets in flight.

use rocelab_model::SimTime;

/// Everything that can happen. Small and `Copy`: the heap moves these around a lot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A port finished serializing its current packet.
    TxDone {
        port: u32,
    },
    /// The head packet on the wire of `port` reaches the peer.
    WireArrive {
        port: u32,
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
    /// A NIC's rate limiter allows its next packet.
    NicWake {
        host: u32,
        gen: u32,
    },
    /// A queue pair starts sending.
    QpStart {
        qp: u32,
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
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    ev: Ev,
}

const BUCKETS: usize = 65;

/// Monotone radix heap of events (see the module doc for the ordering guarantee).
///
/// Bucket 0 holds events at exactly `last` (the latest time popped or settled), bucket i > 0
/// those whose time differs from `last` first in bit i − 1. Pushes append and pops take the
/// front of bucket 0, so events of equal time leave in the order they came; a bucket is only
/// redistributed, in order, into lower buckets that are empty, which keeps that true. Each
/// event moves down at most 64 times, so push and pop are O(1) amortized and touch memory
/// sequentially. Pushing a time earlier than the last one popped is a bug (debug-asserted).
pub struct EventQueue {
    buckets: Vec<Vec<Entry>>,
    /// Read position in bucket 0 (popping from the front without shifting).
    head: usize,
    last: u64,
    len: usize,
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        let mut buckets: Vec<Vec<Entry>> = (0..BUCKETS).map(|_| Vec::new()).collect();
        buckets[0].reserve(n);
        EventQueue { buckets, head: 0, last: 0, len: 0, seq: 0 }
    }

    #[inline]
    fn bucket_of(&self, time: u64) -> usize {
        let x = time ^ self.last;
        if x == 0 {
            0
        } else {
            64 - x.leading_zeros() as usize
        }
    }

    #[inline]
    pub fn push(&mut self, time: SimTime, ev: Ev) {
        debug_assert!(time.0 >= self.last, "event scheduled in the past");
        let b = self.bucket_of(time.0);
        self.buckets[b].push(Entry { time: time.0, ev });
        self.len += 1;
        self.seq += 1;
    }

    /// Makes bucket 0 non-empty (unless the queue is empty) and returns its front time.
    #[inline]
    fn settle(&mut self) -> Option<u64> {
        if self.head < self.buckets[0].len() {
            return Some(self.last);
        }
        if self.len == 0 {
            return None;
        }
        self.buckets[0].clear();
        self.head = 0;
        let b = (1..BUCKETS).find(|&b| !self.buckets[b].is_empty()).expect("len > 0");
        let items = std::mem::take(&mut self.buckets[b]);
        self.last = items.iter().map(|e| e.time).min().expect("non-empty");
        for e in &items {
            let nb = self.bucket_of(e.time);
            self.buckets[nb].push(*e);
        }
        // Give the allocation back so a busy bucket does not reallocate every round.
        let mut items = items;
        items.clear();
        self.buckets[b] = items;
        Some(self.last)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Ev)> {
        let t = self.settle()?;
        let e = self.buckets[0][self.head];
        self.head += 1;
        self.len -= 1;
        Some((SimTime(t), e.ev))
    }

    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle().map(SimTime)
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
    fn matches_btreemap_shadow() {
        let mut rng = Rng::new(42, 7);
        let mut q = EventQueue::default();
        let mut shadow: BTreeMap<(u64, u64), u32> = BTreeMap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
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
                let (t, ev) = q.pop().unwrap();
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
    }
}
