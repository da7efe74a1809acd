//! Per-flow times and the PFC record, for outputs in other simulators' layouts
//! (`rocelab-import` writes HPCC ns-3's FCT and PFC files from them).
//!
//! Read from a [`Snapshot`] of the run (the `Sim` methods take one), never from the engine's
//! state; nothing here touches the hot path. PFC frames are recorded only when
//! `Sim::record_pfc` is called before the run.

use crate::engine::Sim;
pub use crate::observer::PfcEvent;
use crate::observer::PfcRecord;
use crate::snapshot::Snapshot;
use rocelab_model::SimTime;

impl Sim<'_> {
    /// Records every PFC frame received from now on (call before `run`); read the record after.
    pub fn record_pfc(&mut self) -> PfcRecord {
        let rec = PfcRecord::default();
        self.add_observer(Box::new(rec.clone()));
        rec
    }

    /// When each flow started (flow order = `RunReport::flows` order).
    pub fn flow_starts(&self) -> Vec<SimTime> {
        self.snapshot().flow_starts()
    }

    /// When each flow's sender saw its last byte acknowledged (the latest over its QPs);
    /// `None` if any QP of the flow had not finished.
    pub fn flow_sender_done(&self) -> Vec<Option<SimTime>> {
        self.snapshot().flow_sender_done()
    }
}

impl Snapshot {
    /// When each flow started (flow order = `RunReport::flows` order).
    pub fn flow_starts(&self) -> Vec<SimTime> {
        self.flows.iter().map(|f| f.start).collect()
    }

    /// When each flow's sender saw its last byte acknowledged (the latest over its QPs);
    /// `None` if any QP of the flow had not finished.
    pub fn flow_sender_done(&self) -> Vec<Option<SimTime>> {
        self.flows.iter().map(|f| f.sender_done).collect()
    }
}
