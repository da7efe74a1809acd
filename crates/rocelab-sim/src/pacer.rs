//! The per-QP rate pacer: when a rate-limited QP may send its next packet.
//!
//! A QP limited to rate R that sent a packet of W wire bytes at time t may send again at
//! t + 8·W/R. The pending send is a function of the *current* rate, not of the rate at the
//! time of the last send: when congestion control changes the rate, up or down, the pending
//! send is re-timed from the last transmission (HPCC's ns-3 model does the same in
//! `RdmaHw::ChangeRate`: next = last send + new gap). Without it, a packet sent at the DCQCN
//! floor (1 Mb/s, 4 KB: 33 ms) keeps its 33 ms wait after the rate has recovered.
//!
//! A QP at or above its line rate has no gap: the port's serialization paces it.

use rocelab_model::SimTime;

#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    /// When the last packet of this QP went to its port.
    last_tx: SimTime,
    /// Its wire size (bytes), the basis of the gap.
    last_wire: u32,
    /// When the next packet may go.
    pub next_send: SimTime,
}

/// The time `wire` bytes take at `rate_bps`; zero at or above the line rate (the port paces).
#[inline]
pub fn gap(wire: u32, rate_bps: f64, line_bps: f64) -> SimTime {
    if rate_bps >= line_bps {
        SimTime::ZERO
    } else {
        // At most 1,000 s, so `now + gap` cannot overflow whatever the rate.
        SimTime((wire as f64 * 8.0 * 1e12 / rate_bps).ceil().min(1e15) as u64)
    }
}

impl Pacer {
    /// A QP that may send from `start`.
    pub fn new(start: SimTime) -> Self {
        Pacer { last_tx: start, last_wire: 0, next_send: start }
    }

    /// A packet of `wire` bytes left at `now` with the QP at `rate_bps`.
    #[inline]
    pub fn sent(&mut self, now: SimTime, wire: u32, rate_bps: f64, line_bps: f64) {
        self.sent_with_gap(now, wire, gap(wire, rate_bps, line_bps));
    }

    /// A packet of `wire` bytes left at `now` and the next may go `gap` later (InfiniBand
    /// congestion control: the serialization time plus the CCT's inter-packet delay).
    #[inline]
    pub fn sent_with_gap(&mut self, now: SimTime, wire: u32, gap: SimTime) {
        self.last_tx = now;
        self.last_wire = wire;
        self.next_send = now + gap;
    }

    /// The gap changed to `gap`: re-time the pending send from the last transmission. Returns
    /// the new send time when it moved earlier.
    #[inline]
    pub fn regap(&mut self, gap: SimTime) -> Option<SimTime> {
        let next = self.last_tx + gap;
        let earlier = next < self.next_send;
        self.next_send = next;
        earlier.then_some(next)
    }

    /// Holds the next packet until `t` at the earliest, as if the last had left then (so a
    /// re-timing at the line rate, whose gap is zero, does not pull it in).
    pub fn defer(&mut self, t: SimTime) {
        self.next_send = self.next_send.max(t);
        self.last_tx = self.last_tx.max(t);
    }

    /// When the last packet left.
    pub fn last_sent(&self) -> SimTime {
        self.last_tx
    }

    /// Wire bytes of the last packet sent.
    pub fn last_wire(&self) -> u32 {
        self.last_wire
    }

    /// The rate changed: re-time the pending send. Returns the new send time when it moved
    /// earlier (the NIC must be woken then), `None` otherwise.
    #[inline]
    pub fn retime(&mut self, rate_bps: f64, line_bps: f64) -> Option<SimTime> {
        self.regap(gap(self.last_wire, rate_bps, line_bps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: f64 = 100e9;

    #[test]
    fn gap_is_the_serialization_time_at_the_rate() {
        // 4,178 wire bytes at 1 Mb/s: 33.424 ms; at 50 Gb/s: 668.48 ns; at line: none.
        assert_eq!(gap(4178, 1e6, LINE), SimTime(33_424_000_000));
        assert_eq!(gap(4178, 50e9, LINE), SimTime(668_480));
        assert_eq!(gap(4178, LINE, LINE), SimTime::ZERO);
    }

    #[test]
    fn a_rate_increase_pulls_the_pending_send_in() {
        let mut p = Pacer::new(SimTime::ZERO);
        let t0 = SimTime::from_us(10);
        p.sent(t0, 4178, 1e6, LINE);
        assert_eq!(p.next_send, t0 + SimTime(33_424_000_000));
        // The rate recovers to 50 Gb/s 5 µs later: the send is due 668.48 ns after t0 —
        // already past, so the NIC is woken at once rather than in 33 ms.
        let moved = p.retime(50e9, LINE);
        assert_eq!(moved, Some(t0 + SimTime(668_480)));
        assert_eq!(p.next_send, t0 + SimTime(668_480));
        // Back at line rate: no gap at all.
        assert_eq!(p.retime(LINE, LINE), Some(t0));
    }

    #[test]
    fn a_rate_cut_pushes_the_pending_send_out() {
        let mut p = Pacer::new(SimTime::ZERO);
        let t0 = SimTime::from_us(1);
        p.sent(t0, 1048, 50e9, LINE);
        assert_eq!(p.next_send, t0 + SimTime(167_680));
        assert_eq!(p.retime(25e9, LINE), None, "a later send needs no early wake-up");
        assert_eq!(p.next_send, t0 + SimTime(335_360));
    }
}
