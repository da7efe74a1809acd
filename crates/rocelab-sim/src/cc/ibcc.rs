//! InfiniBand congestion control at the sender (IBTA annex A10, as `docs/infiniband.md`
//! describes the engine's model): a BECN raises the QP's index into the congestion control
//! table (CCT) by `ccti_increase`, up to `ccti_limit`; a timer lowers it by one every
//! `ccti_timer` while it is above zero; each packet sent while the index is above zero is
//! followed by its serialization time plus the entry's inter-packet delay. The parameters are
//! `[infiniband.cc]`'s (`rocelab_model::infiniband::IbCc`).

use super::{CongestionControl, Feedback, Timer, Todo};
use rocelab_model::infiniband::IbCc;
use rocelab_model::SimTime;

#[derive(Clone, Debug)]
pub struct IbCcState {
    /// The CCT index (0: no delay).
    pub ccti: u16,
    /// The timer that lowers the index is pending (one per QP at a time).
    armed: bool,
    /// The timer lowered the index: the pending send takes the new delay.
    lowered: bool,
    done: bool,
    line: f64,
}

impl IbCcState {
    pub fn new(line_bps: f64) -> Self {
        IbCcState { ccti: 0, armed: false, lowered: false, done: false, line: line_bps }
    }
}

impl CongestionControl for IbCcState {
    type Params = IbCc;

    /// A BECN; ignored once the sender is done.
    fn on_cnp(&mut self, now: SimTime, p: &IbCc) -> Todo {
        if self.done {
            return Todo::Nothing;
        }
        self.ccti = self.ccti.saturating_add(p.ccti_increase).min(p.ccti_limit);
        // One timer at a time: it re-arms itself while the index is above zero.
        if self.armed {
            return Todo::Nothing;
        }
        self.armed = true;
        Todo::ArmReduce(now + p.ccti_timer)
    }

    /// The CCTI timer: one step down; again while above zero and the sender is not done.
    fn on_timer(&mut self, now: SimTime, _which: Timer, p: &IbCc) -> Todo {
        self.ccti = self.ccti.saturating_sub(1);
        self.lowered = true;
        if self.ccti > 0 && !self.done {
            Todo::ArmReduce(now + p.ccti_timer)
        } else {
            self.armed = false;
            Todo::Nothing
        }
    }

    fn on_done(&mut self) {
        self.done = true;
    }

    /// While the index is above zero: the serialization plus the entry's delay.
    #[inline]
    fn send_gap(&self, _wire: u32, ser: SimTime, p: &IbCc) -> Option<SimTime> {
        (self.ccti > 0).then(|| p.gap(ser, self.ccti))
    }

    /// After the timer's step the pending send takes the new (shorter) delay, down to none; a
    /// BECN's higher index applies from the next packet sent.
    fn regap(&mut self, _wire: u32, ser: SimTime, p: &IbCc) -> Option<SimTime> {
        std::mem::take(&mut self.lowered).then(|| p.gap(ser, self.ccti))
    }

    /// The rate the CCT delay leaves at the QP's line rate is not tracked: the gap paces it.
    fn rate_bps(&self) -> f64 {
        self.line
    }

    fn line_rate_bps(&self) -> f64 {
        self.line
    }

    fn feedback(&self) -> Feedback {
        Feedback::CNP
    }
}

/// A TCP-like QP on an InfiniBand fabric with congestion control: the HCA's CCT paces it like
/// any QP (BECNs, the timer) while DCTCP's window bounds its bytes in flight (ACKs, losses).
#[derive(Clone, Debug)]
pub struct DctcpOverIb {
    pub window: super::dctcp::Dctcp,
    pub pace: IbCcState,
}

impl CongestionControl for DctcpOverIb {
    type Params = IbCc;

    fn on_cnp(&mut self, now: SimTime, p: &IbCc) -> Todo {
        self.pace.on_cnp(now, p)
    }

    fn on_ack(&mut self, now: SimTime, ack: &super::Ack, _p: &IbCc) -> Todo {
        CongestionControl::on_ack(&mut self.window, now, ack, &())
    }

    fn on_loss(&mut self, now: SimTime, loss: super::Loss, _p: &IbCc) -> Todo {
        CongestionControl::on_loss(&mut self.window, now, loss, &())
    }

    fn on_timer(&mut self, now: SimTime, which: Timer, p: &IbCc) -> Todo {
        self.pace.on_timer(now, which, p)
    }

    fn on_done(&mut self) {
        self.pace.on_done();
    }

    fn send_gap(&self, wire: u32, ser: SimTime, p: &IbCc) -> Option<SimTime> {
        self.pace.send_gap(wire, ser, p)
    }

    fn regap(&mut self, wire: u32, ser: SimTime, p: &IbCc) -> Option<SimTime> {
        self.pace.regap(wire, ser, p)
    }

    fn rate_bps(&self) -> f64 {
        self.pace.rate_bps()
    }

    fn line_rate_bps(&self) -> f64 {
        self.pace.line_rate_bps()
    }

    fn window_bytes(&self) -> Option<u64> {
        Some(self.window.cwnd_bytes())
    }

    fn feedback(&self) -> Feedback {
        Feedback { cnp: true, ..CongestionControl::feedback(&self.window) }
    }
}
