//! NSCC, the Ultra Ethernet transport's network-signal-based congestion control (UEC
//! Specification 1.0, congestion management sublayer): a window of bytes in flight steered by two signals per ACK, the
//! packet's queueing delay (its RTT minus the QP's base RTT) and whether it was CE-marked.
//!
//! | | no CE mark | CE mark |
//! |---|---|---|
//! | delay < target | proportional increase | no change (the spraying moves off the marked path) |
//! | delay ≥ target | fair increase | multiplicative decrease |
//!
//! The laws and constants are uet-htsim's (`uec.cpp`, `updateCwndOnAck_NSCC`), as the UEC's
//! reference simulator ships them:
//! - proportional increase accumulates α·acked·(target − delay), α = 4·MTU/target; fair increase
//!   accumulates 5·MTU·acked; both are applied as `cwnd += accumulated / cwnd` (plus η = 0.15 MTU)
//!   every 8 MTUs acknowledged or every base RTT, so a small window grows faster than a big one
//!   (fairness, as TCP's `MSS²/cwnd`);
//! - fast increase: after a whole window acknowledged with a delay under 1 µs the window grows
//!   by a quarter of each further acknowledged packet;
//! - multiplicative decrease: `cwnd ·= max(1 − γ·(avg − target)/avg, 0.5)`, at most once per
//!   base RTT, `avg` the delay's EWMA (gain 1/80; a high delay without a mark enters it as a
//!   quarter of the base RTT, so an unmarked queue elsewhere does not drag it up);
//! - the window stays within [1 MTU, 1.5 BDP]; the base RTT the delay is measured from only
//!   moves down, to the smallest sample of a full-size packet.
//!
//! The BDP is the line rate times the QP's base RTT as the engine computes it for NSCC: the
//! round trip of a full frame whose ACK, at each hop, waits for one frame in service (ports
//! do not preempt, and under a permutation every port on the way back is busy). In uet-htsim's
//! fabrics a hop costs about a microsecond of latency and that wait is lost in it; on a twin
//! with metre-long cables and no switch latency, a round trip is mostly serialization, and a
//! window of 1.5 unloaded RTTs would cap a flow at about 90 % of its line rate. The cap is
//! fixed at the start (uet-htsim also lowers it with the base RTT).
//!
//! Simplified: uet-htsim's scaling factors for the reference network are 1 (α and the fair
//! increase are as for the network they were tuned on); Quick Adapt (a reset of the window to
//! what was delivered in the last RTT after an extreme delay) is not modelled; a trim NACK
//! takes the trimmed packet's bytes off the window (SMaRTT's bounded per-loss decrease) and a
//! timeout halves it.

use super::{Ack, CongestionControl, Feedback, Loss, Todo};
use rocelab_model::uet::Uet;
use rocelab_model::SimTime;

/// Gain of the delay EWMA (uet-htsim's `_delay_alpha`).
pub const DELAY_EWMA: f64 = 0.0125;
/// Target queueing delay over the base RTT when none is set (uet-htsim with trimming).
pub const TARGET_OF_BASE_RTT: f64 = 0.75;
/// Below this delay an ACK counts toward fast increase (uet-htsim: 1 µs).
pub const FAST_INCREASE_DELAY: SimTime = SimTime::from_us(1);
/// Increase applied after fast increase engaged, per acknowledged byte.
pub const FAST_INCREASE_SCALE: f64 = 0.25;
/// Fair increase per acknowledged byte, in MTUs.
pub const FAIR_INCREASE_MTUS: f64 = 5.0;
/// Proportional increase gain, in MTUs per target delay.
pub const PROPORTIONAL_MTUS: f64 = 4.0;
/// Additive step at each adjustment, in MTUs.
pub const ETA_MTUS: f64 = 0.15;
/// Accumulated increases are applied after this many MTUs acknowledged (or a base RTT).
pub const ADJUST_EVERY_MTUS: f64 = 8.0;
/// The most one multiplicative decrease keeps (never below half the window).
pub const MD_FLOOR: f64 = 0.5;

#[derive(Clone, Debug, PartialEq)]
pub struct Nscc {
    line_bps: f64,
    mtu: f64,
    cwnd: f64,
    base_rtt: SimTime,
    /// The most bytes in flight: `max_window_bdp` BDPs over the starting base RTT.
    max_wnd: f64,
    /// The target queueing delay, ps (fixed, or 0.75 × the base RTT at the start).
    target_ps: f64,
    /// EWMA of the queueing delay, ps.
    avg_delay_ps: f64,
    /// Increases accumulated since the last adjustment, bytes².
    inc: f64,
    acked_since_adjust: f64,
    last_adjust: SimTime,
    last_decrease: Option<SimTime>,
    /// Bytes acknowledged in a row with a delay under 1 µs.
    fast_run: f64,
    /// Multiplicative decreases taken, for tests and reports.
    pub decreases: u32,
}

impl Nscc {
    /// A QP at `line_bps` with `mtu`-byte packets over a path whose unloaded round trip is
    /// `base_rtt`; it starts with one bandwidth-delay product in flight (the line rate).
    pub fn new(line_bps: f64, mtu: u32, base_rtt: SimTime, p: &Uet) -> Nscc {
        let base_rtt = base_rtt.max(SimTime(1));
        let target = p.target_qdelay.unwrap_or(SimTime((base_rtt.0 as f64 * TARGET_OF_BASE_RTT) as u64));
        let mut n = Nscc {
            line_bps,
            mtu: mtu as f64,
            cwnd: 0.0,
            base_rtt,
            target_ps: target.0.max(1) as f64,
            avg_delay_ps: 0.0,
            inc: 0.0,
            acked_since_adjust: 0.0,
            last_adjust: SimTime::ZERO,
            last_decrease: None,
            fast_run: 0.0,
            max_wnd: 0.0,
            decreases: 0,
        };
        n.cwnd = n.bdp();
        n.max_wnd = (p.max_window_bdp * n.cwnd).max(n.mtu);
        n
    }

    /// Bytes in flight that fill the path: line rate × (current) base RTT.
    pub fn bdp(&self) -> f64 {
        (self.line_bps / 8.0 * self.base_rtt.0 as f64 / 1e12).max(self.mtu)
    }

    /// The window's cap, bytes.
    pub fn max_window_bytes(&self) -> u64 {
        self.max_wnd as u64
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd as u64
    }

    pub fn base_rtt(&self) -> SimTime {
        self.base_rtt
    }

    pub fn target(&self) -> SimTime {
        SimTime(self.target_ps as u64)
    }

    fn clamp(&mut self) {
        self.cwnd = self.cwnd.clamp(self.mtu, self.max_wnd);
    }

    /// One acknowledged packet of `bytes` whose round trip was `rtt` (`None`: not timed, a
    /// retransmission's), CE-marked or not.
    pub fn on_packet_acked(&mut self, now: SimTime, bytes: f64, rtt: Option<SimTime>, ce: bool, gamma: f64) {
        let Some(rtt) = rtt else {
            return;
        };
        // (A shorter last packet serializes faster: only full ones refine the base.)
        if rtt < self.base_rtt && bytes >= self.mtu {
            self.base_rtt = rtt.max(SimTime(1));
        }
        let delay = rtt.0.saturating_sub(self.base_rtt.0) as f64;
        let sample = if !ce && delay > self.target_ps { self.base_rtt.0 as f64 * 0.25 } else { delay };
        self.avg_delay_ps += DELAY_EWMA * (sample - self.avg_delay_ps);
        if delay < FAST_INCREASE_DELAY.0 as f64 && !ce {
            self.fast_run += bytes;
            if self.fast_run >= self.cwnd {
                self.cwnd += bytes * FAST_INCREASE_SCALE;
            }
        } else {
            self.fast_run = 0.0;
        }
        match (ce, delay >= self.target_ps) {
            (false, true) => self.inc += FAIR_INCREASE_MTUS * self.mtu * bytes,
            (false, false) => {
                let alpha = PROPORTIONAL_MTUS * self.mtu / self.target_ps;
                self.inc += alpha * bytes * (self.target_ps - delay);
            }
            (true, true) => {
                let avg = self.avg_delay_ps;
                let due = self.last_decrease.is_none_or(|t| now.0 >= t.0 + self.base_rtt.0);
                if avg > self.target_ps && due {
                    self.cwnd *= (1.0 - gamma * (avg - self.target_ps) / avg).max(MD_FLOOR);
                    self.last_decrease = Some(now);
                    self.decreases += 1;
                }
            }
            // Marked on one path while the delay is low: the spraying moves off it.
            (true, false) => {}
        }
        self.acked_since_adjust += bytes;
        if self.acked_since_adjust >= ADJUST_EVERY_MTUS * self.mtu || now.0 >= self.last_adjust.0 + self.base_rtt.0 {
            self.cwnd += self.inc / self.cwnd.max(self.mtu) + ETA_MTUS * self.mtu;
            self.inc = 0.0;
            self.acked_since_adjust = 0.0;
            self.last_adjust = now;
        }
        self.clamp();
    }
}

impl CongestionControl for Nscc {
    type Params = Uet;

    fn on_ack(&mut self, now: SimTime, ack: &Ack, p: &Uet) -> Todo {
        // UET acknowledges each packet: `newly_acked` is 0 or 1, `ce_echoed` its mark.
        if ack.newly_acked > 0 {
            self.on_packet_acked(now, ack.newly_acked as f64 * self.mtu, ack.rtt, ack.ce_echoed > 0, p.gamma);
        }
        Todo::Nothing
    }

    fn on_loss(&mut self, _now: SimTime, loss: Loss, _p: &Uet) -> Todo {
        match loss {
            Loss::Nak { .. } => self.cwnd -= self.mtu,
            Loss::Timeout => self.cwnd *= 0.5,
        }
        self.clamp();
        Todo::Nothing
    }

    fn rate_bps(&self) -> f64 {
        self.line_rate_bps()
    }

    fn line_rate_bps(&self) -> f64 {
        self.line_bps
    }

    fn window_bytes(&self) -> Option<u64> {
        Some(self.cwnd as u64)
    }

    fn feedback(&self) -> Feedback {
        // Data is sent ECN-capable; the receiver echoes each packet's mark on its ACK.
        Feedback { cnp: false, echo_ce: true, int: false, acks: true, rtt: false }
    }
}

#[cfg(test)]
mod tests {
    //! NSCC's four quadrants against numbers worked out by hand: 100 Gb/s, 4,096 B packets,
    //! a 10 µs base RTT (BDP 125,000 B), target 7.5 µs.
    use super::*;

    fn nscc() -> Nscc {
        Nscc::new(100e9, 4096, SimTime::from_us(10), &Uet::default())
    }

    fn us(x: f64) -> SimTime {
        SimTime::from_secs_f64(x * 1e-6)
    }

    #[test]
    fn starts_at_one_bdp_with_the_target_at_three_quarters_of_the_base_rtt() {
        let n = nscc();
        assert_eq!(n.cwnd_bytes(), 125_000);
        assert_eq!(n.target(), SimTime(7_500_000));
        let fixed =
            Nscc::new(100e9, 4096, SimTime::from_us(10), &Uet { target_qdelay: Some(us(3.0)), ..Uet::default() });
        assert_eq!(fixed.target(), SimTime(3_000_000));
    }

    #[test]
    fn a_mark_at_low_delay_changes_nothing_a_mark_at_high_delay_cuts_once_per_base_rtt() {
        let mut n = nscc();
        n.cwnd = 100_000.0;
        // Marked, 2 µs of queueing: the no-change quadrant (until the adjustment, which adds
        // only η with nothing accumulated: 0.15 × 4,096 = 614.4 B after 8 packets).
        for i in 0..7 {
            n.on_packet_acked(us(i as f64 * 0.01), 4096.0, Some(us(12.0)), true, 0.8);
        }
        assert_eq!(n.cwnd, 100_000.0);
        assert_eq!(n.decreases, 0);
        // Marked at 30 µs of queueing with the average above the target: cut by
        // γ·(avg − target)/avg, at most once per base RTT.
        n.avg_delay_ps = 15_000_000.0;
        n.on_packet_acked(us(1.0), 4096.0, Some(us(40.0)), true, 0.8);
        // The EWMA moved first: 15 µs + (30 − 15)/80 µs = 15.1875 µs; keep 1 − 0.8·7.6875/15.1875.
        let avg = 15_187_500.0;
        let kept = 1.0 - 0.8 * (avg - 7_500_000.0) / avg;
        let after_cut = 100_000.0 * kept;
        // Then the 8th packet triggers the adjustment: + η.
        assert!((n.cwnd - (after_cut + 0.15 * 4096.0)).abs() < 1e-6, "{} vs {}", n.cwnd, after_cut);
        assert_eq!(n.decreases, 1);
        n.on_packet_acked(us(2.0), 4096.0, Some(us(40.0)), true, 0.8);
        assert_eq!(n.decreases, 1, "within a base RTT of the last cut");
        n.on_packet_acked(us(11.5), 4096.0, Some(us(40.0)), true, 0.8);
        assert_eq!(n.decreases, 2, "a base RTT later");
    }

    #[test]
    fn increases_accumulate_and_apply_divided_by_the_window() {
        let mut n = nscc();
        n.cwnd = 50_000.0;
        // 8 unmarked packets at 5 µs of queueing (below the 7.5 µs target): each adds
        // α·4,096·2.5 µs, α = 4·4,096/7.5 µs; then cwnd += Σ/cwnd + η.
        for i in 0..8 {
            n.on_packet_acked(us(i as f64 * 0.1), 4096.0, Some(us(15.0)), false, 0.8);
        }
        let per = 4.0 * 4096.0 / 7_500_000.0 * 4096.0 * 2_500_000.0;
        let want = 50_000.0 + 8.0 * per / 50_000.0 + 0.15 * 4096.0;
        assert!((n.cwnd - want).abs() < 1e-6, "{} vs {want}", n.cwnd);
        // Unmarked at 20 µs of queueing: the fair increase, 5·MTU per byte acknowledged.
        let before = n.cwnd;
        for i in 0..8 {
            n.on_packet_acked(us(1.0 + i as f64 * 0.1), 4096.0, Some(us(30.0)), false, 0.8);
        }
        let want = before + 8.0 * 5.0 * 4096.0 * 4096.0 / before + 0.15 * 4096.0;
        assert!((n.cwnd - want).abs() < 1e-6, "{} vs {want}", n.cwnd);
    }

    #[test]
    fn the_window_stays_within_one_mtu_and_one_and_a_half_bdp_and_the_base_rtt_only_falls_on_full_packets() {
        let mut n = nscc();
        for i in 0..10_000 {
            n.on_packet_acked(us(i as f64 * 0.01), 4096.0, Some(us(10.0)), false, 0.8);
        }
        assert_eq!(n.cwnd_bytes(), 187_500, "1.5 × 125,000 B");
        // A shorter packet's RTT does not lower the base; a full one's does, and only down.
        n.on_packet_acked(us(199.0), 1000.0, Some(us(7.0)), false, 0.8);
        assert_eq!(n.base_rtt(), us(10.0));
        n.on_packet_acked(us(200.0), 4096.0, Some(us(8.0)), false, 0.8);
        assert_eq!(n.base_rtt(), us(8.0));
        assert_eq!(n.cwnd_bytes(), 187_500, "the cap stays where it started");
        n.on_packet_acked(us(201.0), 4096.0, Some(us(9.0)), false, 0.8);
        assert_eq!(n.base_rtt(), us(8.0));
        for _ in 0..100 {
            n.on_loss(us(300.0), Loss::Timeout, &Uet::default());
        }
        assert_eq!(n.cwnd_bytes(), 4096);
    }
}
