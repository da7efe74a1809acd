//! DCQCN reaction point (the sender's per-QP rate), in two named variants.
//!
//! * `paper` (Zhu et al., SIGCOMM 2015): on a CNP the rate is cut at once,
//!   Rt ← Rc, Rc ← Rc·(1−α/2), α ← (1−g)α + g; α decays every K without a CNP; the increase
//!   timer (T) and byte counter (B) count increase events, and their counts select fast
//!   recovery (max ≤ F), hyper increase (min > F) or additive increase.
//! * `mlx5` (ConnectX firmware, as modelled by HPCC's ns-3 "Mellanox" mode): α starts at its
//!   initial value on the first CNP and is updated once per K with a "CNP arrived" bit; the cut
//!   is evaluated on a fixed period (rate_reduce_period), Rc ← max(min_rate, Rc·(1−α/2)), with
//!   Rt ← Rc only when clamping or after an increase; a single stage counter driven by the
//!   increase timer (and the byte counter, when set) selects fast recovery (< F), additive
//!   (= F) or hyper (> F) increase.
//!
//! α is updated lazily (closed form over the elapsed periods) so an idle QP costs no events.
//! Rates are f64 bits/s; the engine turns them into integer picosecond gaps.

use rocelab_model::config::DcqcnVariant;
use rocelab_model::{Dcqcn, SimTime};

#[derive(Clone, Debug)]
pub struct RateState {
    pub rc: f64,
    pub rt: f64,
    pub alpha: f64,
    /// Start of the α period that has not been applied yet.
    alpha_t: SimTime,
    pub t_count: u32,
    pub b_count: u32,
    pub stage: u32,
    bytes: u64,
    /// mlx5: a CNP arrived since the last rate-reduce check.
    pub cnp_pending: bool,
    /// mlx5: a CNP arrived in the current α period.
    alpha_bit: bool,
    seen_cnp: bool,
    pub line: f64,
    /// Generation of the increase timer (stale timers are ignored).
    pub inc_gen: u32,
    pub inc_armed: bool,
    pub reduce_armed: bool,
    pub last_reduce: SimTime,
}

/// What the engine must schedule after a DCQCN step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Todo {
    Nothing,
    /// (Re)arm the increase timer at this time with the current `inc_gen`.
    ArmIncrease(SimTime),
    /// mlx5: evaluate the cut at this time.
    ArmReduce(SimTime),
}

impl RateState {
    pub fn new(line_bps: f64, p: &Dcqcn) -> Self {
        RateState {
            rc: line_bps,
            rt: line_bps,
            alpha: p.initial_alpha,
            alpha_t: SimTime::ZERO,
            t_count: 0,
            b_count: 0,
            stage: 0,
            bytes: 0,
            cnp_pending: false,
            alpha_bit: false,
            seen_cnp: false,
            line: line_bps,
            inc_gen: 0,
            inc_armed: false,
            reduce_armed: false,
            last_reduce: SimTime::ZERO,
        }
    }

    /// Applies every full α period up to `now`: decay, plus the +g of a period that saw a CNP.
    fn settle_alpha(&mut self, now: SimTime, p: &Dcqcn) {
        let k = p.alpha_timer.0.max(1);
        if now.0 < self.alpha_t.0 + k {
            return;
        }
        let periods = (now.0 - self.alpha_t.0) / k;
        let mut n = periods;
        if self.alpha_bit {
            self.alpha = (1.0 - p.g) * self.alpha + p.g;
            self.alpha_bit = false;
            n -= 1;
        }
        if n > 0 {
            self.alpha *= (1.0 - p.g).powf(n as f64);
        }
        self.alpha_t = SimTime(self.alpha_t.0 + periods * k);
    }

    /// A CNP arrived for this QP.
    pub fn on_cnp(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        match p.variant {
            DcqcnVariant::Paper => {
                self.settle_alpha(now, p);
                self.rt = self.rc;
                self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(p.min_rate.0 as f64);
                self.alpha = (1.0 - p.g) * self.alpha + p.g;
                // The α clock restarts at the CNP.
                self.alpha_t = now;
                self.alpha_bit = false;
                self.t_count = 0;
                self.b_count = 0;
                self.bytes = 0;
                self.inc_gen = self.inc_gen.wrapping_add(1);
                self.inc_armed = true;
                Todo::ArmIncrease(now + p.increase_timer)
            }
            DcqcnVariant::Mlx5 => {
                if !self.seen_cnp {
                    self.seen_cnp = true;
                    self.alpha = p.initial_alpha;
                    self.alpha_t = now;
                } else {
                    self.settle_alpha(now, p);
                }
                self.alpha_bit = true;
                self.cnp_pending = true;
                if self.reduce_armed {
                    return Todo::Nothing;
                }
                self.reduce_armed = true;
                let period = p.rate_reduce_period;
                let at = if self.last_reduce == SimTime::ZERO || now.0 >= self.last_reduce.0 + period.0 {
                    now
                } else {
                    self.last_reduce + period
                };
                Todo::ArmReduce(at)
            }
        }
    }

    /// mlx5: the periodic cut check.
    pub fn on_reduce_check(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.reduce_armed = false;
        if !self.cnp_pending {
            return Todo::Nothing;
        }
        self.settle_alpha(now, p);
        self.cnp_pending = false;
        self.last_reduce = now;
        if p.clamp_target_rate || self.stage != 0 {
            self.rt = self.rc;
        }
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(p.min_rate.0 as f64);
        self.stage = 0;
        self.t_count = 0;
        self.b_count = 0;
        self.bytes = 0;
        self.inc_gen = self.inc_gen.wrapping_add(1);
        self.inc_armed = true;
        Todo::ArmIncrease(now + p.increase_timer)
    }

    /// The increase timer fired (generation already checked by the engine).
    pub fn on_increase_timer(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.t_count += 1;
        self.stage += 1;
        self.increase(p);
        if self.rc < self.line || self.rt < self.line {
            Todo::ArmIncrease(now + p.increase_timer)
        } else {
            self.inc_armed = false;
            Todo::Nothing
        }
    }

    /// Bytes sent; the byte counter may trigger an increase step.
    #[inline]
    pub fn on_sent(&mut self, bytes: u64, p: &Dcqcn) {
        if p.byte_counter_bytes == 0 || self.rc >= self.line {
            return;
        }
        self.bytes += bytes;
        while self.bytes >= p.byte_counter_bytes {
            self.bytes -= p.byte_counter_bytes;
            self.b_count += 1;
            if p.variant == DcqcnVariant::Mlx5 {
                self.stage += 1;
            }
            self.increase(p);
        }
    }

    fn increase(&mut self, p: &Dcqcn) {
        let f = p.fast_recovery_steps;
        let (ai, hai) = (p.rate_ai.0 as f64, p.rate_hai.0 as f64);
        match p.variant {
            DcqcnVariant::Paper => {
                let (t, b) = (self.t_count, self.b_count);
                if t.max(b) < f {
                    // fast recovery
                } else if t.min(b) > f {
                    self.rt += (t.min(b) - f) as f64 * hai;
                } else {
                    self.rt += ai;
                }
            }
            DcqcnVariant::Mlx5 => {
                if self.stage < f {
                } else if self.stage == f {
                    self.rt += ai;
                } else {
                    self.rt += hai;
                }
            }
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocelab_model::presets;
    use rocelab_model::BitsPerSec;

    fn params(v: DcqcnVariant) -> Dcqcn {
        let d = match v {
            DcqcnVariant::Paper => presets::dcqcn_paper(100.0),
            DcqcnVariant::Mlx5 => presets::dcqcn_mlx5(),
        };
        let us = |x: f64| SimTime::from_secs_f64(x * 1e-6);
        let mbps = |x: f64| BitsPerSec((x * 1e6) as u64);
        Dcqcn {
            variant: v,
            g: d.g,
            alpha_timer: us(d.alpha_timer_us),
            increase_timer: us(d.increase_timer_us),
            byte_counter_bytes: d.byte_counter_bytes,
            fast_recovery_steps: d.fast_recovery_steps,
            rate_ai: mbps(d.rate_ai_mbps),
            rate_hai: mbps(d.rate_hai_mbps),
            min_rate: mbps(d.min_rate_mbps),
            rate_reduce_period: us(d.rate_reduce_period_us),
            initial_alpha: d.initial_alpha,
            clamp_target_rate: d.clamp_target_rate,
            cnp_interval: us(d.cnp_interval_us),
            cnp_delay: us(d.cnp_delay_us),
        }
    }

    #[test]
    fn paper_cut_halves_rate_at_alpha_one() {
        let p = params(DcqcnVariant::Paper);
        let mut r = RateState::new(100e9, &p);
        let todo = r.on_cnp(SimTime::from_us(10), &p);
        assert!((r.rc - 50e9).abs() < 1.0, "α = 1 cuts the rate in half, got {}", r.rc);
        assert_eq!(r.rt, 100e9);
        assert!((r.alpha - 1.0).abs() < 1e-12);
        assert_eq!(todo, Todo::ArmIncrease(SimTime::from_us(10) + p.increase_timer));
    }

    #[test]
    fn paper_fast_recovery_then_additive() {
        let p = params(DcqcnVariant::Paper);
        let mut r = RateState::new(100e9, &p);
        r.on_cnp(SimTime::from_us(10), &p);
        // F = 5 timer events of fast recovery: Rc halves the gap to Rt each time.
        for i in 0..5 {
            let gap_before = r.rt - r.rc;
            r.on_increase_timer(SimTime::from_us(10 + 55 * (i + 1)), &p);
            assert!((r.rt - r.rc - gap_before / 2.0).abs() < 1.0);
            assert_eq!(r.rt, 100e9);
        }
    }

    #[test]
    fn alpha_decays_without_cnps() {
        let p = params(DcqcnVariant::Paper);
        let mut r = RateState::new(100e9, &p);
        r.on_cnp(SimTime::ZERO, &p);
        let a0 = r.alpha;
        // 10 periods of K later, a second CNP first applies (1-g)^10.
        r.on_cnp(SimTime(p.alpha_timer.0 * 10), &p);
        let expect = a0 * (1.0 - p.g).powi(10) * (1.0 - p.g) + p.g;
        assert!((r.alpha - expect).abs() < 1e-12);
    }

    #[test]
    fn mlx5_cut_waits_for_the_reduce_period_and_respects_min_rate() {
        let p = params(DcqcnVariant::Mlx5);
        let mut r = RateState::new(400e9, &p);
        let t0 = SimTime::from_us(100);
        assert_eq!(r.on_cnp(t0, &p), Todo::ArmReduce(t0));
        r.on_reduce_check(t0, &p);
        let after_first = r.rc;
        assert!((after_first - 400e9 * (1.0 - p.initial_alpha / 2.0)).abs() < 1.0);
        // A second CNP within the period is handled at the period boundary.
        let todo = r.on_cnp(t0 + SimTime::from_us(1), &p);
        assert_eq!(todo, Todo::ArmReduce(t0 + p.rate_reduce_period));
        for k in 0..10_000u64 {
            let t = t0 + SimTime(p.rate_reduce_period.0 * (k + 1));
            r.on_cnp(t, &p);
            r.on_reduce_check(t, &p);
        }
        assert!(r.rc >= p.min_rate.0 as f64 && r.rc < 1e9);
    }
}
