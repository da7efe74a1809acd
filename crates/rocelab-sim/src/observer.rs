//! Observers: what a run reports as it happens, for whoever wants a trace.
//!
//! An [`Observer`] added with `Sim::add_observer` is told of each PFC frame received, drop,
//! ECN mark, CNP sent, message delivered and sample, with the simulated time, in the order the
//! engine handles them. A run without observers pays one length check at each of those sites
//! and nothing per ordinary packet; the calls themselves sit in a cold path. Observers see
//! values, never the engine's state, so they cannot change a run: the same seed gives the same
//! outputs with or without them. The ns-3 PFC file is written from one (`Sim::record_pfc`).

use crate::stats::DropReason;
use rocelab_model::{PortId, SimTime};
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
    /// A sampling instant (`sample_interval`).
    Sample { time: SimTime },
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
