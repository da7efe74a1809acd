//! CUBIC (RFC 9438), the window Linux's TCP runs by default (`net.ipv4.tcp_congestion_control
//! = cubic`), beside DCTCP for TCP-like traffic.
//!
//! The window is counted in segments (MSS) as the RFC counts it; the engine reads bytes.
//! After a congestion event at window W_max the window is cut to β·W_max and then grows along
//!
//! ```text
//!   W_cubic(t) = C·(t − K)³ + W_max,    K = ∛(W_max·(1 − β) / C)      (RFC 9438 §4.2)
//! ```
//!
//! with t the seconds since the congestion-avoidance stage began, C = 0.4 and β = 0.7 (§5,
//! and Linux's `tcp_cubic.c`: `beta = 717/1024`, `bic_scale = 41`). Per ACK the window moves
//! toward W_cubic(t + RTT) by (target − cwnd)/cwnd segments per segment acknowledged, the
//! target held within [cwnd, 1.5·cwnd] (§4.2). Where Reno would be faster (small RTTs, as in a
//! data centre) the window follows the Reno-friendly estimate W_est instead, which grows by
//! α = 3(1 − β)/(1 + β) segments per window acknowledged (§4.3). Fast convergence (§4.7, on in
//! Linux) lowers W_max to cwnd·(1 + β)/2 when a flow loses before regaining its last W_max.
//! A timeout (§4.8) leaves ssthresh at β·cwnd, restarts from one segment in slow start, and the
//! next stage grows with K = 0 from the window it starts at.
//!
//! Its transport is Linux's: the retransmission timeout follows the RTT estimate as Linux
//! keeps it (`tcp_rtt_estimator`, `__tcp_set_rto` in `net/ipv4/tcp_input.c`): RTO = SRTT +
//! max(4·RTTVAR, 200 ms), SRTT and RTTVAR smoothed by 1/8 and 1/4 (RFC 6298), 1 s before the
//! first sample (`TCP_TIMEOUT_INIT`), doubling after each timeout up to 120 s (`TCP_RTO_MAX`),
//! and the connection given up after 15 timeouts in a row (`net.ipv4.tcp_retries2`).
//!
//! Not modelled: HyStart++ (Linux leaves slow start on its delay signal; here slow start ends
//! at the first loss), and application-limited periods (§4.2: t keeps running).

use super::{Ack, CongestionControl, Feedback, Loss, Todo};
use rocelab_model::SimTime;

/// CUBIC's C, segments/s³ (RFC 9438 §5).
pub const C: f64 = 0.4;
/// CUBIC's multiplicative decrease factor β (RFC 9438 §4.6).
pub const BETA: f64 = 0.7;
/// The Reno-friendly additive increase α = 3(1 − β)/(1 + β), segments per window (§4.3).
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);
/// Initial window, segments (RFC 6928, Linux's `TCP_INIT_CWND`).
pub const INITIAL_WINDOW: f64 = 10.0;
/// Linux's floor on the RTO's variance term (`TCP_RTO_MIN`, HZ/5): 200 ms.
pub const RTO_MIN: SimTime = SimTime(200_000_000_000);
/// The RTO before any RTT sample (`TCP_TIMEOUT_INIT`, RFC 6298 §2.1): 1 s.
pub const RTO_INIT: SimTime = SimTime(1_000_000_000_000);
/// The longest RTO, backoff included (`TCP_RTO_MAX`): 120 s.
pub const RTO_MAX: SimTime = SimTime(120_000_000_000_000);
/// Timeouts in a row before Linux gives the connection up (`net.ipv4.tcp_retries2`).
pub const TCP_RETRIES2: u32 = 15;

#[derive(Clone, Debug, PartialEq)]
pub struct Cubic {
    mss: f64,
    /// Segments.
    cwnd: f64,
    ssthresh: f64,
    /// The window before the last reduction (after fast convergence), segments.
    w_max: f64,
    /// Seconds from the stage's start to the cubic's plateau.
    k: f64,
    /// When the current congestion-avoidance stage began; `None` until its first ACK.
    epoch: Option<SimTime>,
    /// The Reno-friendly estimate, segments.
    w_est: f64,
    /// The latest RTT sample, seconds (0 before the first).
    rtt: f64,
    /// Smoothed RTT and its mean deviation, ps (`None` before the first sample).
    srtt: Option<f64>,
    rttvar: f64,
    /// Timeouts since the last ACK of new data: the RTO doubles with each.
    backoff: u32,
    /// No further reduction until this PSN is acknowledged (one per window of data).
    recover: u32,
    /// Reductions (losses and timeouts), for tests and reports.
    pub cuts: u32,
}

impl Cubic {
    pub fn new(mss: u32) -> Cubic {
        Cubic {
            mss: mss as f64,
            cwnd: INITIAL_WINDOW,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            k: 0.0,
            epoch: None,
            w_est: 0.0,
            rtt: 0.0,
            srtt: None,
            rttvar: 0.0,
            backoff: 0,
            recover: 0,
            cuts: 0,
        }
    }

    /// The window in segments.
    pub fn cwnd_segments(&self) -> f64 {
        self.cwnd
    }

    pub fn cwnd_bytes(&self) -> u64 {
        (self.cwnd * self.mss) as u64
    }

    /// W_cubic(t) for the current stage, segments.
    pub fn w_cubic(&self, t_secs: f64) -> f64 {
        C * (t_secs - self.k).powi(3) + self.w_max
    }

    /// `newly` segments acknowledged at `now`.
    fn grow(&mut self, now: SimTime, newly: u32) {
        let mut acked = newly as f64;
        if self.cwnd < self.ssthresh {
            // Slow start: one segment per segment acknowledged up to ssthresh; what is left
            // over counts in congestion avoidance (as Linux's `tcp_slow_start` returns it).
            let used = acked.min(self.ssthresh - self.cwnd);
            self.cwnd += used;
            acked -= used;
            if acked <= 0.0 {
                return;
            }
        }
        let start = *self.epoch.get_or_insert_with(|| {
            // A stage starts at its first ACK; after a timeout (w_max unset above cwnd) it
            // grows from where it is with K = 0 (§4.8).
            if self.w_max <= self.cwnd {
                self.w_max = self.cwnd;
                self.k = 0.0;
            }
            self.w_est = self.cwnd;
            now
        });
        let t = now.0.saturating_sub(start.0) as f64 * 1e-12;
        let target = self.w_cubic(t + self.rtt).clamp(self.cwnd, 1.5 * self.cwnd);
        self.w_est += ALPHA * acked / self.cwnd;
        let cubic = self.cwnd + (target - self.cwnd) * acked / self.cwnd;
        self.cwnd = if self.w_cubic(t) < self.w_est { self.w_est.max(self.cwnd) } else { cubic };
    }

    /// A congestion event (a loss): W_max, K and the cut (§4.6, §4.7). `snd_max`: the
    /// highest PSN sent, which ends the window this reduction covers.
    pub fn on_congestion(&mut self, snd_una: u32, snd_max: u32) {
        if snd_una < self.recover {
            return;
        }
        self.w_max = if self.cwnd < self.w_max { self.cwnd * (1.0 + BETA) / 2.0 } else { self.cwnd };
        self.ssthresh = (self.cwnd * BETA).max(2.0);
        self.cwnd = self.ssthresh;
        self.k = ((self.w_max - self.cwnd).max(0.0) / C).cbrt();
        self.epoch = None;
        self.recover = snd_max;
        self.cuts += 1;
    }

    /// One RTT sample into SRTT and RTTVAR (RFC 6298 §2).
    fn sample(&mut self, rtt: SimTime) {
        let r = rtt.0 as f64;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2.0;
            }
            Some(s) => {
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - r).abs();
                self.srtt = Some(0.875 * s + 0.125 * r);
            }
        }
    }

    /// Linux's retransmission timeout now, backoff included.
    pub fn rto_now(&self) -> SimTime {
        let base = match self.srtt {
            None => RTO_INIT,
            Some(s) => SimTime((s + (4.0 * self.rttvar).max(RTO_MIN.0 as f64)) as u64),
        };
        SimTime(base.0.saturating_mul(1u64 << self.backoff.min(20)).min(RTO_MAX.0))
    }

    /// The retransmission timer fired (§4.8).
    pub fn on_timeout(&mut self) {
        self.backoff += 1;
        self.ssthresh = (self.cwnd * BETA).max(2.0);
        self.cwnd = 1.0;
        // The next stage starts from the window it reaches, with K = 0.
        self.w_max = 0.0;
        self.k = 0.0;
        self.epoch = None;
        self.cuts += 1;
    }
}

impl CongestionControl for Cubic {
    type Params = ();

    #[inline]
    fn on_ack(&mut self, now: SimTime, ack: &Ack, _p: &()) -> Todo {
        if let Some(rtt) = ack.rtt {
            self.rtt = rtt.0 as f64 * 1e-12;
            self.sample(rtt);
        }
        if ack.newly_acked > 0 {
            // New data acknowledged: the timer's backoff ends (Linux's `icsk_backoff = 0`).
            self.backoff = 0;
            self.grow(now, ack.newly_acked);
        }
        Todo::Nothing
    }

    fn rto(&self) -> Option<SimTime> {
        Some(self.rto_now())
    }

    fn max_timeouts(&self) -> Option<u32> {
        Some(TCP_RETRIES2)
    }

    fn on_loss(&mut self, _now: SimTime, loss: Loss, _p: &()) -> Todo {
        match loss {
            Loss::Nak { snd_una, snd_max } => self.on_congestion(snd_una, snd_max),
            Loss::Timeout => self.on_timeout(),
        }
        Todo::Nothing
    }

    fn rate_bps(&self) -> f64 {
        f64::INFINITY
    }

    fn line_rate_bps(&self) -> f64 {
        f64::INFINITY
    }

    #[inline]
    fn window_bytes(&self) -> Option<u64> {
        Some(self.cwnd_bytes())
    }

    fn feedback(&self) -> Feedback {
        // Loss-based: ACKs and their RTT; CE marks are not read (no ECN echo).
        Feedback { cnp: false, echo_ce: false, int: false, acks: true, rtt: true }
    }
}

#[cfg(test)]
mod tests {
    //! Hand-computed points of RFC 9438's window law after a loss.
    use super::*;

    const MSS: u32 = 1000;

    fn ms(x: f64) -> SimTime {
        SimTime::from_secs_f64(x * 1e-3)
    }

    /// A flow in congestion avoidance at `w` segments that then loses one packet.
    fn after_loss_at(w: f64) -> Cubic {
        let mut c = Cubic::new(MSS);
        c.cwnd = w;
        c.ssthresh = w; // out of slow start
        c.on_congestion(0, 1);
        c
    }

    /// Drives the flow with one ACK per segment, the ACKs of each window spread evenly over
    /// one `rtt`, until `until`; returns the window at the end.
    fn run(c: &mut Cubic, from: SimTime, until: SimTime, rtt: SimTime) -> f64 {
        let mut now = from;
        let mut psn = 2u32;
        while now < until {
            let per_window = c.cwnd.floor().max(1.0) as u64;
            let step = SimTime(rtt.0 / per_window);
            for _ in 0..per_window {
                psn += 1;
                let a = Ack {
                    newly_acked: 1,
                    ce_echoed: 0,
                    snd_una: psn,
                    snd_max: psn,
                    acked_psn: psn,
                    rtt: Some(rtt),
                    int: &[],
                };
                c.on_ack(now, &a, &());
                now += step;
                if now >= until {
                    break;
                }
            }
        }
        c.cwnd
    }

    #[test]
    fn a_loss_cuts_to_beta_and_sets_k() {
        let c = after_loss_at(100.0);
        assert_eq!(c.cwnd, 70.0, "β·W_max = 0.7·100");
        assert_eq!(c.w_max, 100.0);
        // K = ∛(100·0.3/0.4) = ∛75 = 4.2172 s.
        assert!((c.k - 4.217_163).abs() < 1e-5, "{}", c.k);
        assert_eq!(c.cwnd_bytes(), 70_000);
    }

    #[test]
    fn the_window_follows_the_cubic_function_after_a_loss() {
        // W_max = 100 segments, RTT 200 ms: the cubic region (W_est grows ≈0.53 segment per
        // RTT: 86 segments at t = 6 s, below the cubic). Hand-computed W(t) = 0.4(t − 4.2172)³ + 100:
        //   t = 1 s: 0.4·(−3.2172)³ + 100 = 86.68;  t = 2 s: 0.4·(−2.2172)³ + 100 = 95.64;
        //   t = K:   100 (the plateau);              t = 6 s: 0.4·(1.7828)³ + 100 = 102.27;
        //   t = 8 s: 0.4·(3.7828)³ + 100 = 121.65.
        let rtt = ms(200.0);
        let mut c = after_loss_at(100.0);
        let t0 = SimTime::from_secs_f64(10.0);
        let mut at = t0;
        for (t, want) in [(1.0, 86.68), (2.0, 95.64), (4.217_163, 100.0), (6.0, 102.27), (8.0, 121.65)] {
            let next = t0 + SimTime::from_secs_f64(t);
            let w = run(&mut c, at, next, rtt);
            at = next;
            // The window reaches each target one RTT ahead and moves in per-ACK steps: within
            // 1.5 % of the curve.
            assert!((w - want).abs() / want < 0.015, "t = {t} s: cwnd {w:.2} segments, W(t) {want}");
        }
        assert_eq!(c.cuts, 1);
    }

    #[test]
    fn at_datacenter_rtts_the_window_is_reno_friendly() {
        // RTT 10 µs: over 1 s the cubic gains 100 − 86.68 ≈ 13 segments, Reno's estimate
        // α per RTT: 0.529·100 000 RTTs ≫ that. The window follows W_est: about α segments
        // per window, so after n windows it is ≈ 70 + 0.529·n.
        let rtt = SimTime::from_secs_f64(10e-6);
        let mut c = after_loss_at(100.0);
        let w = run(&mut c, SimTime::ZERO, SimTime(rtt.0 * 100), rtt);
        let want = 70.0 + ALPHA * 100.0;
        assert!((w - want).abs() < 1.5, "cwnd {w:.2}, W_est ≈ {want:.2}");
    }

    #[test]
    fn the_rto_is_linux_s_srtt_plus_at_least_200_ms_and_doubles() {
        let mut c = Cubic::new(MSS);
        assert_eq!(c.rto_now(), RTO_INIT, "1 s before any sample");
        let ack = |rtt_us: f64| Ack {
            newly_acked: 1,
            ce_echoed: 0,
            snd_una: 1,
            snd_max: 1,
            acked_psn: 0,
            rtt: Some(SimTime::from_secs_f64(rtt_us * 1e-6)),
            int: &[],
        };
        // A 10 µs data-centre RTT: SRTT 10 µs, RTTVAR 5 µs: RTO = 10 µs + max(20 µs, 200 ms).
        c.on_ack(SimTime::ZERO, &ack(10.0), &());
        assert_eq!(c.rto_now(), SimTime(200_000_000_000 + 10_000_000));
        // A WAN-like 100 ms sample: RTTVAR = 0.75·5 µs + 0.25·99.99 ms, SRTT = 12.5 ms + 8.75 µs.
        c.on_ack(SimTime::ZERO, &ack(100_000.0), &());
        let (srtt, var): (f64, f64) = (0.875 * 10e-6 + 0.125 * 0.1, 0.75 * 5e-6 + 0.25 * (0.1 - 10e-6));
        let want = srtt + (4.0 * var).max(0.2);
        assert!((c.rto_now().0 as f64 * 1e-12 - want).abs() < 1e-9, "{:?} vs {want}", c.rto_now());
        // Timeouts double it, up to 120 s; new data acknowledged ends the backoff.
        c.on_timeout();
        c.on_timeout();
        assert!((c.rto_now().0 as f64 * 1e-12 - 4.0 * want).abs() < 1e-8);
        for _ in 0..20 {
            c.on_timeout();
        }
        assert_eq!(c.rto_now(), RTO_MAX);
        c.on_ack(SimTime::ZERO, &Ack { rtt: None, ..ack(0.0) }, &());
        assert!((c.rto_now().0 as f64 * 1e-12 - want).abs() < 1e-9);
        assert_eq!(CongestionControl::max_timeouts(&c), Some(15));
    }

    #[test]
    fn fast_convergence_and_one_cut_per_window() {
        let mut c = after_loss_at(100.0);
        // Another loss in the same window (PSN below `recover`): no second cut.
        c.on_congestion(0, 5);
        assert_eq!(c.cwnd, 70.0);
        // A new loss before regaining W_max: W_max = 70·(1 + 0.7)/2 = 59.5, cwnd = 49.
        c.on_congestion(1, 10);
        assert!((c.w_max - 59.5).abs() < 1e-9);
        assert!((c.cwnd - 49.0).abs() < 1e-9);
        assert_eq!(c.cuts, 2);
    }

    #[test]
    fn a_timeout_restarts_in_slow_start_then_grows_from_k_zero() {
        let mut c = after_loss_at(100.0);
        c.on_timeout();
        assert_eq!(c.cwnd, 1.0);
        assert!((c.ssthresh - 49.0).abs() < 1e-9, "ssthresh = β·cwnd = 0.7·70");
        // Slow start: +1 segment per segment acknowledged, capped at ssthresh.
        let a = |psn| Ack {
            newly_acked: 48,
            ce_echoed: 0,
            snd_una: psn,
            snd_max: psn,
            acked_psn: psn,
            rtt: None,
            int: &[],
        };
        c.on_ack(SimTime::ZERO, &a(50), &());
        assert_eq!(c.cwnd, 49.0);
        // The next stage starts at 49 with K = 0: the cubic rises at once from W_max = 49.
        c.on_ack(SimTime::ZERO, &a(60), &());
        assert_eq!((c.w_max, c.k), (49.0, 0.0));
    }
}
