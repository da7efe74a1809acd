//! TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter",
//! SIGCOMM 2015, Algorithm 1), with the knobs of HPCC's ns-3 model (CC_MODE 7).
//!
//! The QP times one packet per round trip (sent to acknowledged); each sample updates the rate:
//!
//! * rtt_diff ← (1 − α)·rtt_diff + α·(RTT − RTT_prev); gradient g = rtt_diff / minRTT;
//! * RTT < T_low: R ← R + δ;
//! * RTT > T_high: R ← R·(1 − β·(1 − T_high/RTT));
//! * g ≤ 0: R ← R + N·δ, where N·δ is the hyperactive step once `hai_thresh` increases ran in a
//!   row (the paper's N = 5; ns-3's separate RATE_HAI step, used here);
//! * otherwise: R ← R·(1 − β·g) (at least 0 before the floor).
//!
//! The first sample only sets RTT_prev. The rate stays within [min rate, line rate]. As in
//! HPCC's ns-3 model (and unlike the paper's T_low branch) every increase counts toward the
//! hyperactive step.

use super::{rate_gap, Ack, CongestionControl, Feedback, Todo};
use rocelab_model::cc::Timely;
use rocelab_model::SimTime;

#[derive(Clone, Debug)]
pub struct TimelyState {
    line: f64,
    rate: f64,
    /// The previous sample, ps; `None` before the first.
    prev_rtt: Option<f64>,
    /// Smoothed RTT difference, ps.
    rtt_diff: f64,
    /// Increases in a row.
    stage: u32,
}

impl TimelyState {
    pub fn new(line_bps: f64) -> Self {
        TimelyState { line: line_bps, rate: line_bps, prev_rtt: None, rtt_diff: 0.0, stage: 0 }
    }

    /// One RTT sample.
    fn sample(&mut self, rtt: SimTime, p: &Timely) {
        let rtt = rtt.0 as f64;
        let Some(prev) = self.prev_rtt.replace(rtt) else { return };
        self.rtt_diff = (1.0 - p.alpha) * self.rtt_diff + p.alpha * (rtt - prev);
        let gradient = self.rtt_diff / p.min_rtt.0.max(1) as f64;
        let increase = if rtt < p.t_low.0 as f64 {
            true
        } else if rtt > p.t_high.0 as f64 {
            self.cut(1.0 - p.beta * (1.0 - p.t_high.0 as f64 / rtt), p);
            false
        } else if gradient <= 0.0 {
            true
        } else {
            self.cut((1.0 - p.beta * gradient).max(0.0), p);
            false
        };
        if increase {
            let step = if self.stage >= p.hai_thresh { p.rate_hai_bps } else { p.rate_ai_bps };
            self.rate = (self.rate + step).min(self.line);
            self.stage += 1;
        }
    }

    fn cut(&mut self, factor: f64, p: &Timely) {
        self.rate = (self.rate * factor).max(p.min_rate_bps.min(self.line));
        self.stage = 0;
    }
}

impl CongestionControl for TimelyState {
    type Params = Timely;

    fn on_ack(&mut self, _now: SimTime, ack: &Ack, p: &Timely) -> Todo {
        if let Some(rtt) = ack.rtt {
            self.sample(rtt, p);
        }
        Todo::Nothing
    }

    #[inline]
    fn send_gap(&self, wire: u32, _ser: SimTime, _p: &Timely) -> Option<SimTime> {
        Some(rate_gap(wire, self.rate, self.line))
    }

    fn rate_bps(&self) -> f64 {
        self.rate
    }

    fn line_rate_bps(&self) -> f64 {
        self.line
    }

    fn feedback(&self) -> Feedback {
        Feedback { cnp: false, echo_ce: false, int: false, acks: true, rtt: true }
    }
}

#[cfg(test)]
mod tests {
    //! RTT samples scripted by hand; each expected rate is the paper's equation applied to
    //! them, step by step.
    use super::*;

    const LINE: f64 = 100e9;

    fn us(x: f64) -> SimTime {
        SimTime::from_secs_f64(x * 1e-6)
    }

    fn feed(t: &mut TimelyState, rtt_us: f64, p: &Timely) -> f64 {
        let a =
            Ack { newly_acked: 1, ce_echoed: 0, snd_una: 1, snd_max: 1, acked_psn: 0, rtt: Some(us(rtt_us)), int: &[] };
        t.on_ack(SimTime::ZERO, &a, p);
        t.rate
    }

    #[test]
    fn the_rate_follows_the_rtt_gradient() {
        let p = Timely { t_low: us(20.0), ..Timely::default() }; // T_high 500, minRTT 20, α 0.875, β 0.8
        let mut t = TimelyState::new(LINE);
        t.rate = 50e9;
        assert_eq!(feed(&mut t, 60.0, &p), 50e9, "the first sample sets RTT_prev only");
        // RTT rises 60 → 70 µs: diff = 0.875·10 = 8.75 µs, g = 8.75/20 = 0.4375,
        // R ← 50 G·(1 − 0.8·0.4375) = 32.5 G.
        assert!((feed(&mut t, 70.0, &p) - 32.5e9).abs() < 1.0);
        // Flat at 70: diff = 0.125·8.75 = 1.09375 µs > 0: g = 0.0546875, R ← 32.5·(1 − 0.04375).
        let r = 32.5e9 * (1.0 - 0.8 * 0.0546875);
        assert!((feed(&mut t, 70.0, &p) - r).abs() < 1.0);
        // Falls to 60: diff = 0.125·1.09375 − 0.875·10 < 0: additive, +50 Mb/s.
        let r = r + 50e6;
        assert!((feed(&mut t, 60.0, &p) - r).abs() < 1.0);
        // Below T_low (15 < 20 µs): additive whatever the gradient; five increases in a row
        // bring the hyperactive step (100 Mb/s) from the sixth on.
        let mut want = r;
        for k in 2..=7 {
            want += if k > 5 { 100e6 } else { 50e6 };
            assert!((feed(&mut t, 15.0, &p) - want).abs() < 1.0, "increase {k}");
        }
        // Above T_high (1000 > 500 µs): R ← R·(1 − 0.8·(1 − 500/1000)) = 0.6·R, and the run
        // of increases ends.
        want *= 0.6;
        assert!((feed(&mut t, 1000.0, &p) - want).abs() < 1.0);
        assert_eq!(t.stage, 0);
    }

    #[test]
    fn cuts_stop_at_the_floor_and_increases_at_line_rate() {
        let p = Timely::default();
        let mut t = TimelyState::new(LINE);
        feed(&mut t, 100.0, &p);
        // A steep rise: g = 0.875·400/20 = 17.5 → factor 0 → the 100 Mb/s floor.
        assert_eq!(feed(&mut t, 500.0, &p), 100e6);
        let mut t = TimelyState::new(LINE);
        feed(&mut t, 10.0, &p);
        assert_eq!(feed(&mut t, 10.0, &p), LINE, "never above line rate");
    }
}
