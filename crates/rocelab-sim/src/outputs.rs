//! Per-flow times and an optional PFC event log, for outputs in other simulators' layouts
//! (`rocelab-import` writes HPCC ns-3's FCT and PFC files from them).
//!
//! Read-only views of the engine's state after a run; nothing here touches the hot path. The
//! PFC log is off unless `Sim::enable_pfc_log` is called before the run.

use crate::engine::Sim;
use rocelab_model::{PortId, SimTime};

/// One PFC frame, recorded where it is received (as ns-3's PFC trace does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcEvent {
    pub time: SimTime,
    /// The receiving port.
    pub port: PortId,
    pub priority: u8,
    /// XOFF (quanta > 0) or resume (quanta 0).
    pub pause: bool,
}

impl Sim<'_> {
    /// Starts recording every PFC frame received (call before `run`). Off by default: the
    /// engine then pays one branch per PFC frame and nothing per data packet.
    pub fn enable_pfc_log(&mut self) {
        self.pfc_log.get_or_insert_with(Vec::new);
    }

    /// The PFC frames received so far, in time order (empty unless `enable_pfc_log` was called).
    pub fn pfc_log(&self) -> &[PfcEvent] {
        self.pfc_log.as_deref().unwrap_or(&[])
    }

    /// When each flow started (flow order = `RunReport::flows` order).
    pub fn flow_starts(&self) -> Vec<SimTime> {
        self.flows.iter().map(|f| f.start).collect()
    }

    /// When each flow's sender saw its last byte acknowledged (the latest over its QPs);
    /// `None` if any QP of the flow had not finished.
    pub fn flow_sender_done(&self) -> Vec<Option<SimTime>> {
        let mut done: Vec<Option<SimTime>> = vec![Some(SimTime(0)); self.flows.len()];
        for q in &self.qps {
            let d = &mut done[q.flow as usize];
            *d = match (*d, q.sender_done) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
        done
    }
}
