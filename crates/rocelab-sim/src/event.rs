//! The event queue: a 4-ary min-heap ordered by `(time, seq)`.
//!
//! Ordering guarantee: events pop in non-decreasing time; events with equal times pop in the
//! order they were pushed (`seq` is a global insertion counter). That makes a run a pure
//! function of its inputs and seed. Push and pop are O(log n); the engine keeps n small by
//! scheduling at most one transmit and one wire-arrival event per port, so the heap grows with
//! ports and timers, not with packets in flight.

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

/// `key` packs (time, seq) into one u128 so the heap compares once per step.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    ev: Ev,
}

impl Entry {
    #[inline]
    fn key(&self) -> u128 {
        self.key
    }
    #[inline]
    fn time(&self) -> SimTime {
        SimTime((self.key >> 64) as u64)
    }
}

/// Min-heap of events (see the module doc for the ordering guarantee).
#[derive(Default)]
pub struct EventQueue {
    heap: Vec<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { heap: Vec::with_capacity(n), seq: 0 }
    }

    #[inline]
    pub fn push(&mut self, time: SimTime, ev: Ev) {
        let e = Entry { key: ((time.0 as u128) << 64) | self.seq as u128, ev };
        self.seq += 1;
        self.heap.push(e);
        self.sift_up(self.heap.len() - 1);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Ev)> {
        let n = self.heap.len();
        if n == 0 {
            return None;
        }
        self.heap.swap(0, n - 1);
        let e = self.heap.pop().expect("non-empty");
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
        Some((e.time(), e.ev))
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| e.time())
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Total events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.seq
    }

    // A 4-ary heap: half the depth of a binary heap, and the four children of a node share a
    // cache line pair, which matters once the heap outgrows L1.
    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.heap[parent].key() <= e.key() {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = e;
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let e = self.heap[i];
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let last = (first + 4).min(n);
            let mut c = first;
            let mut ck = self.heap[first].key();
            for j in first + 1..last {
                let k = self.heap[j].key();
                if k < ck {
                    c = j;
                    ck = k;
                }
            }
            if e.key() <= ck {
                break;
            }
            self.heap[i] = self.heap[c];
            i = c;
        }
        self.heap[i] = e;
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
                // Many equal times, to exercise the tie-break.
                let t = now + rng.below(50);
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
