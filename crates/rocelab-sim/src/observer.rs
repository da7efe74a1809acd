//! Observers: what a run reports as it happens, for whoever wants a trace.
//!
//! An [`Observer`] added with `Sim::add_observer` is told of each PFC frame received, drop,
//! ECN mark, CNP sent, message delivered and sample (with the buffer occupancy it saw), with
//! the simulated time, in the order the engine handles them. A run without observers pays one length check at each of those sites
//! and nothing per ordinary packet; the calls themselves sit in a cold path. Observers see
//! values, never the engine's state, so they cannot change a run: the same seed gives the same
//! outputs with or without them. The ns-3 PFC file is written from one (`Sim::record_pfc`), and
//! the sampled time series from another ([`SeriesRecord`], which the engine installs itself
//! when `sample_interval` is set: a run without sampling has no observer for it).

use crate::stats::{DropReason, SampleRow, MAX_SERIES_ROWS};
use rocelab_model::{NodeId, PortId, SimTime};
use std::cell::RefCell;
use std::rc::Rc;

/// One thing that happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    /// A PFC frame reached `port` (the port that will pause or resume): XOFF with `pause`,
    /// XON without.
    PfcReceived { time: SimTime, port: PortId, priority: u8, pause: bool },
    /// A packet was dropped at `port`'s `queue`.
    Drop { time: SimTime, port: PortId, queue: u8, reason: DropReason },
    /// A packet was CE-marked at dequeue from `port`'s `queue`.
    EcnMark { time: SimTime, port: PortId, queue: u8 },
    /// A receiver sent a CNP for a QP of `flow`.
    CnpSent { time: SimTime, flow: u32 },
    /// The last byte of message (flow) `flow` arrived.
    MessageDone { time: SimTime, flow: u32 },
    /// A sampling instant (`sample_interval`); its `BufferSample`s and `QueueSample`s follow.
    Sample { time: SimTime },
    /// At a sampling instant, one per switch: the bytes its buffer holds.
    BufferSample { time: SimTime, node: NodeId, bytes: u64 },
    /// At a sampling instant, after the `BufferSample`s: the bytes queued at a switch egress
    /// port (all queues), for each port that holds any, in port order.
    QueueSample { time: SimTime, node: NodeId, port: PortId, bytes: u64 },
}

pub trait Observer {
    fn observe(&mut self, event: &Observed);
}

/// One PFC frame, where it was received (as ns-3's PFC trace records it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcEvent {
    pub time: SimTime,
    /// The receiving port.
    pub port: PortId,
    pub priority: u8,
    /// XOFF (quanta > 0) or resume (quanta 0).
    pub pause: bool,
}

/// The PFC frames a run received, in order; filled by the observer `Sim::record_pfc` adds.
#[derive(Clone, Default)]
pub struct PfcRecord(Rc<RefCell<Vec<PfcEvent>>>);

impl PfcRecord {
    pub fn events(&self) -> Vec<PfcEvent> {
        self.0.borrow().clone()
    }
}

impl Observer for PfcRecord {
    fn observe(&mut self, event: &Observed) {
        if let Observed::PfcReceived { time, port, priority, pause } = *event {
            self.0.borrow_mut().push(PfcEvent { time, port, priority, pause });
        }
    }
}

/// The sampled time series, in order: one row per switch buffer at each sampling instant, then
/// one per non-empty switch egress port while the record holds fewer than `MAX_SERIES_ROWS`
/// rows (switch rows are always kept). Filled from `BufferSample` and `QueueSample`; the
/// engine installs one when sampling is on, and `Sim::snapshot` takes its rows.
#[derive(Clone, Default)]
pub struct SeriesRecord(Rc<RefCell<Vec<SampleRow>>>);

impl SeriesRecord {
    pub fn rows(&self) -> Vec<SampleRow> {
        self.0.borrow().clone()
    }

    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }
}

impl Observer for SeriesRecord {
    fn observe(&mut self, event: &Observed) {
        match *event {
            Observed::BufferSample { time, node, bytes } => {
                self.0.borrow_mut().push(SampleRow { time, node: node.0, port: u32::MAX, bytes });
            }
            Observed::QueueSample { time, node, port, bytes } => {
                let mut rows = self.0.borrow_mut();
                if rows.len() < MAX_SERIES_ROWS {
                    rows.push(SampleRow { time, node: node.0, port: port.0, bytes });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_keeps_every_buffer_row_and_caps_the_queue_rows() {
        let mut rec = SeriesRecord::default();
        let mut obs = rec.clone();
        let (time, node, port) = (SimTime(5), NodeId(0), PortId(3));
        obs.observe(&Observed::Sample { time });
        obs.observe(&Observed::BufferSample { time, node, bytes: 7 });
        for _ in 1..MAX_SERIES_ROWS {
            obs.observe(&Observed::QueueSample { time, node, port, bytes: 1 });
        }
        assert_eq!(rec.len(), MAX_SERIES_ROWS);
        // Full: queue rows are dropped, buffer rows still kept; other events are ignored.
        obs.observe(&Observed::QueueSample { time, node, port, bytes: 2 });
        obs.observe(&Observed::BufferSample { time, node, bytes: 8 });
        obs.observe(&Observed::MessageDone { time, flow: 0 });
        let rows = rec.rows();
        assert_eq!(rows.len(), MAX_SERIES_ROWS + 1);
        assert_eq!((rows[0].port, rows[0].bytes), (u32::MAX, 7));
        assert_eq!((rows[1].port, rows[1].bytes), (3, 1));
        assert!(rows.iter().all(|r| r.bytes != 2));
        assert_eq!((rows[MAX_SERIES_ROWS].port, rows[MAX_SERIES_ROWS].bytes), (u32::MAX, 8));
        rec = SeriesRecord::default();
        assert!(rec.is_empty());
    }
}
