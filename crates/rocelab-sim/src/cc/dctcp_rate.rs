//! DCTCP on RDMA QPs as HPCC's ns-3 model runs it (CC_MODE 8, `RdmaHw::HandleAckDctcp`): a
//! rate, not a window. The receiver echoes CE on its ACKs; the sender keeps DCTCP's α over
//! batches of one round trip (the first ACK past the PSN that was next when the batch began):
//! α ← (1 − g)·α + g·F, F the share of the batch's ACKs that echoed a mark (at most 1). An ACK
//! that echoes a mark outside a reduction cuts R ← max(min rate, R·(1 − α/2)) and starts one
//! (CWR) until the PSN then next is acknowledged; each new batch outside a reduction adds
//! `rate_ai`. α starts at 1.

use super::{rate_gap, Ack, CongestionControl, Feedback, Todo};
use rocelab_model::cc::DctcpRate;
use rocelab_model::SimTime;

#[derive(Clone, Debug)]
pub struct DctcpRateState {
    line: f64,
    rate: f64,
    pub alpha: f64,
    /// ACKs with a mark in the current batch, and the batch's size in packets.
    marked: u32,
    batch: u32,
    /// The batch ends with the first ACK past this PSN; `None` before the first ACK.
    batch_end: Option<u32>,
    /// In a reduction until this PSN is acknowledged.
    cwr_until: Option<u32>,
}

impl DctcpRateState {
    pub fn new(line_bps: f64) -> Self {
        DctcpRateState {
            line: line_bps,
            rate: line_bps,
            alpha: 1.0,
            marked: 0,
            batch: 1,
            batch_end: None,
            cwr_until: None,
        }
    }
}

impl CongestionControl for DctcpRateState {
    type Params = DctcpRate;

    fn on_ack(&mut self, _now: SimTime, ack: &Ack, p: &DctcpRate) -> Todo {
        let mark = ack.ce_echoed > 0;
        self.marked += mark as u32;
        let mut new_batch = false;
        match self.batch_end {
            Some(end) if ack.snd_una <= end => {}
            first_or_past => {
                new_batch = true;
                if first_or_past.is_some() {
                    let f = (self.marked as f64 / self.batch.max(1) as f64).min(1.0);
                    self.alpha = (1.0 - p.g) * self.alpha + p.g * f;
                    self.batch = ack.snd_max.saturating_sub(ack.snd_una) + 1;
                    self.marked = 0;
                } else {
                    // (The first batch's marks count toward the next α, as in ns-3.)
                    self.batch = ack.snd_max + 1;
                }
                self.batch_end = Some(ack.snd_max);
            }
        }
        if self.cwr_until.is_some_and(|h| ack.snd_una > h) {
            self.cwr_until = None;
        }
        if mark && self.cwr_until.is_none() {
            self.rate = (self.rate * (1.0 - self.alpha / 2.0)).max(p.min_rate_bps.min(self.line));
            self.cwr_until = Some(ack.snd_max);
        }
        if self.cwr_until.is_none() && new_batch {
            self.rate = (self.rate + p.rate_ai_bps).min(self.line);
        }
        Todo::Nothing
    }

    #[inline]
    fn send_gap(&self, wire: u32, _ser: SimTime, _p: &DctcpRate) -> Option<SimTime> {
        Some(rate_gap(wire, self.rate, self.line))
    }

    fn rate_bps(&self) -> f64 {
        self.rate
    }

    fn line_rate_bps(&self) -> f64 {
        self.line
    }

    fn feedback(&self) -> Feedback {
        Feedback { cnp: false, echo_ce: true, int: false, acks: true, rtt: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(una: u32, max: u32, ce: u32) -> Ack<'static> {
        Ack { newly_acked: 1, ce_echoed: ce, snd_una: una, snd_max: max, acked_psn: una - 1, rtt: None, int: &[] }
    }

    #[test]
    fn a_mark_cuts_once_per_round_trip_by_alpha_and_clean_batches_add_rate_ai() {
        let p = DctcpRate::default(); // g 1/16, +1 Gb/s
        let mut d = DctcpRateState::new(100e9);
        d.rate = 50e9;
        // First ACK: a batch starts (clean: +1 G).
        d.on_ack(SimTime::ZERO, &ack(1, 10, 0), &p);
        assert_eq!(d.rate, 51e9);
        // A marked ACK inside it: α = 1 still → halve, CWR until PSN 10 is acknowledged.
        d.on_ack(SimTime::ZERO, &ack(2, 12, 1), &p);
        assert_eq!(d.rate, 25.5e9);
        // More marks before PSN 12 is acknowledged: no further cut.
        d.on_ack(SimTime::ZERO, &ack(5, 13, 1), &p);
        assert_eq!(d.rate, 25.5e9);
        // Past PSN 10: a new batch; F = 2 marked of 11 packets → α = 15/16 + (1/16)·(2/11).
        // Past PSN 12 the reduction is over, so the clean new batch adds 1 Gb/s.
        d.on_ack(SimTime::ZERO, &ack(13, 20, 0), &p);
        let a = (1.0 - 1.0 / 16.0) + (1.0 / 16.0) * (2.0 / 11.0);
        assert!((d.alpha - a).abs() < 1e-12, "{}", d.alpha);
        assert_eq!(d.rate, 26.5e9, "a clean new batch outside a reduction adds 1 Gb/s");
    }
}
