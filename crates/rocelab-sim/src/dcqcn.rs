//! DCQCN reaction point (the sender's per-QP rate), in two named variants.
//!
//! Both keep a current rate Rc, a target rate Rt and the congestion estimate α, and raise the
//! rate in three phases selected by two counters since the last cut: the increase timer's
//! (T, every `increase_timer`) and the byte counter's (B, every `byte_counter_bytes` sent).
//! An increase event looks at the counts *before* it and then adds itself (HPCC's
//! `RateIncEventTimerMlx` applies the increase, then increments the stage):
//! * fast recovery while max(T, B) < F: Rc ← (Rt + Rc)/2;
//! * hyper increase once min(T, B) > F: Rt += R_HAI (the paper: R_HAI·(min(T, B) − F)), then
//!   Rc ← (Rt + Rc)/2;
//! * additive increase otherwise: Rt += R_AI, then Rc ← (Rt + Rc)/2.
//!
//! With the byte counter off (B = 0) only the timer counts, so F fast-recovery steps are
//! followed by one additive step and then hyper increase, as in HPCC's Mellanox model.
//!
//! * `paper` (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM
//!   2015): every CNP cuts at once, Rt ← Rc, Rc ← Rc·(1−α/2), then α ← (1−g)α + g; α decays
//!   by (1−g) every K without a CNP (the clock restarts at each CNP); both counters and the
//!   timer restart at each cut.
//! * `mlx5` (ConnectX firmware as NVIDIA documents its parameters; HPCC's `rdma-hw.cc`
//!   where the documentation is silent): α is set to `initial_alpha` on the first CNP and
//!   updated once per `dce_tcp_rtt` (K) period, up by g if a CNP arrived in it, down otherwise.
//!   A cut happens at most once per `rate_reduce_monitor_period` and only if a CNP arrived
//!   since the last one — the first CNP cuts at once, since the period is documented as the
//!   minimum time *between two* cuts (HPCC waits one period first). The cut is
//!   Rc ← max(min_rate, Rc·max(1−α/2, 1−`rpg_min_dec_fac`)); Rt ← Rc first when
//!   `clamp_tgt_rate` is set, or when `clamp_tgt_rate_after_time_inc` is set and the timer
//!   raised the rate since the last cut (byte-counter increases alone leave Rt).
//!
//! α is updated lazily (closed form over the elapsed periods, by repeated squaring: no
//! platform `powf`, so results do not depend on the machine's libm) and an idle QP costs no
//! events. Rates are f64 bits/s; the pacer turns them into integer picosecond gaps.

use rocelab_model::config::DcqcnVariant;
use rocelab_model::{Dcqcn, SimTime};

#[derive(Clone, Debug)]
pub struct RateState {
    pub rc: f64,
    pub rt: f64,
    pub alpha: f64,
    /// Start of the α period that has not been applied yet.
    alpha_t: SimTime,
    /// Increase-timer events since the last cut (T).
    pub t_count: u32,
    /// Byte-counter events since the last cut (B).
    pub b_count: u32,
    bytes: u64,
    /// mlx5: a CNP arrived since the last cut.
    cnp_pending: bool,
    /// mlx5: a CNP arrived in the current α period.
    alpha_bit: bool,
    seen_cnp: bool,
    pub line: f64,
    /// Generation of the increase timer (stale timers are ignored).
    pub inc_gen: u32,
    reduce_armed: bool,
    /// mlx5: time of the last cut, `None` before the first.
    last_reduce: Option<SimTime>,
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

/// x^n by repeated squaring: plain multiplications, the same bits on every machine.
fn powu(mut x: f64, mut n: u64) -> f64 {
    let mut acc = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            acc *= x;
        }
        x *= x;
        n >>= 1;
    }
    acc
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
            bytes: 0,
            cnp_pending: false,
            alpha_bit: false,
            seen_cnp: false,
            line: line_bps,
            inc_gen: 0,
            reduce_armed: false,
            last_reduce: None,
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
        self.alpha *= powu(1.0 - p.g, n);
        self.alpha_t = SimTime(self.alpha_t.0 + periods * k);
    }

    /// The cut common to both variants, and the restart of the increase machinery.
    fn cut(&mut self, now: SimTime, p: &Dcqcn, factor: f64) -> Todo {
        self.rc = (self.rc * factor).max(p.min_rate.0 as f64);
        self.restart_increase(now, p)
    }

    /// After a reduction: both counters start over and the increase timer is re-armed.
    fn restart_increase(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.t_count = 0;
        self.b_count = 0;
        self.bytes = 0;
        self.inc_gen = self.inc_gen.wrapping_add(1);
        Todo::ArmIncrease(now + p.increase_timer)
    }

    /// A CNP arrived for this QP.
    pub fn on_cnp(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        match p.variant {
            DcqcnVariant::Paper => {
                self.settle_alpha(now, p);
                self.rt = self.rc;
                let factor = 1.0 - self.alpha / 2.0;
                self.alpha = (1.0 - p.g) * self.alpha + p.g;
                // The α clock restarts at the CNP.
                self.alpha_t = now;
                self.alpha_bit = false;
                self.cut(now, p, factor)
            }
            DcqcnVariant::Mlx5 => {
                if !self.seen_cnp {
                    self.seen_cnp = true;
                    self.alpha = p.initial_alpha;
                    self.alpha_t = now;
                    if p.rate_on_first_cnp.0 > 0 {
                        // The first CNP sets the rate instead of cutting it: that is this
                        // flow's first reduction, and the next waits a full period.
                        self.rc = (p.rate_on_first_cnp.0 as f64).min(self.line);
                        self.rt = self.rc;
                        self.alpha_bit = true;
                        self.last_reduce = Some(now);
                        return self.restart_increase(now, p);
                    }
                } else {
                    self.settle_alpha(now, p);
                }
                self.alpha_bit = true;
                self.cnp_pending = true;
                if self.reduce_armed {
                    return Todo::Nothing;
                }
                self.reduce_armed = true;
                let at = match self.last_reduce {
                    Some(t) if now.0 < t.0 + p.rate_reduce_period.0 => t + p.rate_reduce_period,
                    _ => now,
                };
                Todo::ArmReduce(at)
            }
        }
    }

    /// mlx5: the rate-reduce check, at most once per `rate_reduce_period`.
    pub fn on_reduce_check(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.reduce_armed = false;
        if !self.cnp_pending {
            return Todo::Nothing;
        }
        self.settle_alpha(now, p);
        self.cnp_pending = false;
        self.last_reduce = Some(now);
        if p.clamp_target_rate || (p.clamp_target_rate_after_time_inc && self.t_count > 0) {
            self.rt = self.rc;
        }
        let factor = (1.0 - self.alpha / 2.0).max(1.0 - p.max_cut_fraction);
        self.cut(now, p, factor)
    }

    /// The increase timer fired (generation already checked by the engine).
    pub fn on_increase_timer(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.increase(p);
        self.t_count += 1;
        if self.rc < self.line || self.rt < self.line {
            Todo::ArmIncrease(now + p.increase_timer)
        } else {
            Todo::Nothing
        }
    }

    /// Bytes sent; the byte counter may trigger increase steps.
    #[inline]
    pub fn on_sent(&mut self, bytes: u64, p: &Dcqcn) {
        if p.byte_counter_bytes == 0 || self.rc >= self.line {
            return;
        }
        self.bytes += bytes;
        while self.bytes >= p.byte_counter_bytes {
            self.bytes -= p.byte_counter_bytes;
            self.increase(p);
            self.b_count += 1;
        }
    }

    /// One increase event, its phase chosen by the counts before it.
    fn increase(&mut self, p: &Dcqcn) {
        let f = p.fast_recovery_steps;
        let t = self.t_count;
        // Without a byte counter only the timer counts.
        let b = if p.byte_counter_bytes == 0 { t } else { self.b_count };
        let (hi, lo) = (t.max(b), t.min(b));
        if hi < f {
            // fast recovery: Rt stays
        } else if lo > f {
            let steps = match p.variant {
                DcqcnVariant::Paper => (lo - f) as f64,
                DcqcnVariant::Mlx5 => 1.0,
            };
            self.rt += steps * p.rate_hai.0 as f64;
        } else {
            self.rt += p.rate_ai.0 as f64;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
    }
}

#[cfg(test)]
mod tests {
    //! Scripted CNP sequences; every expected value is computed here by hand from the
    //! algorithm in the module doc, not read back from the code under test.
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
            clamp_target_rate_after_time_inc: d.clamp_target_rate_after_time_inc,
            max_cut_fraction: d.min_dec_fac_percent / 100.0,
            rate_on_first_cnp: mbps(d.rate_on_first_cnp_mbps),
            cnp_interval: us(d.cnp_interval_us),
            cnp_delay: us(d.cnp_delay_us),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[track_caller]
    fn rates(r: &RateState, rc: f64, rt: f64) {
        assert!(close(r.rc, rc), "Rc {} != {rc}", r.rc);
        assert!(close(r.rt, rt), "Rt {} != {rt}", r.rt);
    }

    const LINE: f64 = 100e9;
    const US: u64 = 1_000_000;

    #[test]
    fn mlx5_defaults_are_connectx_documented_values() {
        let p = params(DcqcnVariant::Mlx5);
        assert_eq!(p.g, 5.0 / 1024.0, "dce_tcp_g 1019: α keeps 1019/1024");
        assert_eq!(p.alpha_timer, SimTime(US), "dce_tcp_rtt 1 µs");
        assert_eq!(p.rate_reduce_period, SimTime(4 * US), "rate_reduce_monitor_period 4 µs");
        assert_eq!(p.increase_timer, SimTime(300 * US), "rpg_time_reset 300 µs");
        assert_eq!(p.byte_counter_bytes, 32_767, "rpg_byte_reset 32767 B");
        assert_eq!(p.fast_recovery_steps, 1, "rpg_threshold 1");
        assert_eq!((p.rate_ai.0, p.rate_hai.0, p.min_rate.0), (5_000_000, 50_000_000, 1_000_000));
        assert_eq!(p.max_cut_fraction, 0.5, "rpg_min_dec_fac 50 %");
        assert_eq!(p.initial_alpha, 1023.0 / 1024.0);
        assert!(!p.clamp_target_rate && p.clamp_target_rate_after_time_inc);
        assert_eq!(p.cnp_interval, SimTime(4 * US), "min_time_between_cnps 4 µs");
    }

    #[test]
    fn mlx5_first_cnp_cuts_at_once_then_once_per_period() {
        let p = params(DcqcnVariant::Mlx5);
        let g: f64 = 5.0 / 1024.0;
        let mut r = RateState::new(LINE, &p);
        let t0 = SimTime(100 * US);
        // First CNP: α ← 1023/1024 and the cut is due now (no earlier cut to space from).
        assert_eq!(r.on_cnp(t0, &p), Todo::ArmReduce(t0));
        assert_eq!(r.on_reduce_check(t0, &p), Todo::ArmIncrease(t0 + SimTime(300 * US)));
        let a0 = 1023.0 / 1024.0;
        let rc1 = LINE * (1.0 - a0 / 2.0); // 51.2 % of line: above the 50 % floor of one cut
        rates(&r, rc1, LINE); // no clamp: no timer increase yet, clamp_tgt_rate off
                              // A CNP 1 µs later: one α period has passed and it saw the first CNP.
        let a1 = (1.0 - g) * a0 + g;
        assert_eq!(r.on_cnp(t0 + SimTime(US), &p), Todo::ArmReduce(t0 + SimTime(4 * US)));
        assert!(close(r.alpha, a1));
        // More CNPs in the same period change nothing more.
        assert_eq!(r.on_cnp(t0 + SimTime(2 * US), &p), Todo::Nothing);
        // The cut at t0 + 4 µs: periods [1,2) and [2,3) saw a CNP, [3,4) none.
        r.on_reduce_check(t0 + SimTime(4 * US), &p);
        let a2 = (1.0 - g) * a1 + g;
        let a4 = ((1.0 - g) * a2 + g) * (1.0 - g);
        assert!(close(r.alpha, a4), "α {} != {a4}", r.alpha);
        rates(&r, rc1 * (1.0 - a4 / 2.0), LINE);
        // With no CNP since, the next check does nothing.
        assert_eq!(r.on_reduce_check(t0 + SimTime(8 * US), &p), Todo::Nothing);
        // A quiet α period decays: 100 periods later α = a4·(1−g)^100 (settled on the next CNP).
        r.on_cnp(t0 + SimTime(104 * US), &p);
        assert!(close(r.alpha, a4 * (1.0 - g).powi(100)), "α {}", r.alpha);
    }

    #[test]
    fn mlx5_recovery_phases_by_timer_and_byte_counter() {
        let mut p = params(DcqcnVariant::Mlx5);
        p.clamp_target_rate = true; // Rt follows each cut, so the AI/HAI steps show
        let (ai, hai) = (5e6, 50e6);
        let mut r = RateState::new(LINE, &p);
        let t0 = SimTime(10 * US);
        r.on_cnp(t0, &p);
        r.on_reduce_check(t0, &p);
        let rc = LINE * (1.0 - (1023.0 / 1024.0) / 2.0);
        rates(&r, rc, LINE);
        // A second cut with Rt clamped to the rate before it.
        r.on_cnp(t0 + SimTime(4 * US), &p);
        r.on_reduce_check(t0 + SimTime(4 * US), &p);
        let rt = rc;
        let mut rc = rc * (1.0 - r.alpha / 2.0);
        rates(&r, rc, rt);
        // Byte counter event 1 (T = 0, B = 0 < F = 1): fast recovery, Rt stays.
        r.on_sent(32_767, &p);
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        // Event 2 (B = 1 = F, T = 0): additive increase.
        r.on_sent(32_000, &p); // not yet a full counter
        rates(&r, rc, rt);
        r.on_sent(767, &p);
        let mut rt = rt + ai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        // Timer event (T = 0, B = 2): additive again (T is not past F).
        r.on_increase_timer(t0 + SimTime(304 * US), &p);
        rt += ai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        // Timer event (T = 1 = F): additive; then (T = 2 > F, B = 2 > F): hyper.
        r.on_increase_timer(t0 + SimTime(604 * US), &p);
        rt += ai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        r.on_increase_timer(t0 + SimTime(904 * US), &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        // Two byte events at once (65,534 B): both hyper.
        r.on_sent(65_534, &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
    }

    #[test]
    fn mlx5_timer_only_runs_fast_recovery_once_then_one_additive_step() {
        // HPCC's Mellanox model: no byte counter, F = 1: stage 0 fast recovery, stage 1
        // additive, stage 2 on hyper. (An increment-first stage counter skips fast recovery.)
        let mut p = params(DcqcnVariant::Mlx5);
        p.byte_counter_bytes = 0;
        p.clamp_target_rate = true;
        let mut r = RateState::new(LINE, &p);
        r.on_cnp(SimTime(US), &p);
        r.on_reduce_check(SimTime(US), &p);
        r.on_cnp(SimTime(5 * US), &p);
        r.on_reduce_check(SimTime(5 * US), &p);
        let (mut rc, mut rt) = (r.rc, r.rt);
        assert!(rt < LINE && rc < rt);
        let step = |n: u64| SimTime(5 * US + n * 300 * US);
        r.on_increase_timer(step(1), &p);
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        r.on_increase_timer(step(2), &p);
        rt += 5e6;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        for n in 3..6 {
            r.on_increase_timer(step(n), &p);
            rt += 50e6;
            rc = (rt + rc) / 2.0;
            rates(&r, rc, rt);
        }
    }

    #[test]
    fn mlx5_clamps_after_a_timer_increase_only() {
        let p = params(DcqcnVariant::Mlx5); // clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1
        let mut r = RateState::new(LINE, &p);
        r.on_cnp(SimTime(US), &p);
        r.on_reduce_check(SimTime(US), &p);
        // Byte-counter increases only: the next cut keeps Rt at line rate.
        r.on_sent(3 * 32_767, &p);
        r.on_cnp(SimTime(5 * US), &p);
        r.on_reduce_check(SimTime(5 * US), &p);
        assert_eq!(r.rt, LINE);
        // A timer increase, then a cut: Rt ← Rc (the rate before the cut).
        r.on_increase_timer(SimTime(305 * US), &p);
        let before = r.rc;
        r.on_cnp(SimTime(306 * US), &p);
        r.on_reduce_check(SimTime(306 * US), &p);
        assert_eq!(r.rt, before);
        assert!(r.rc < before);
    }

    #[test]
    fn mlx5_cut_bounded_by_min_dec_fac_and_floor() {
        let mut p = params(DcqcnVariant::Mlx5);
        p.max_cut_fraction = 0.25; // rpg_min_dec_fac = 25: one cut removes at most 25 %
        let mut r = RateState::new(LINE, &p);
        r.on_cnp(SimTime(US), &p);
        r.on_reduce_check(SimTime(US), &p);
        rates(&r, 0.75 * LINE, LINE);
        // Cuts every period without recovery end exactly at rpg_min_rate.
        for k in 1..200u64 {
            let t = SimTime(US + 4 * US * k);
            r.on_cnp(t, &p);
            r.on_reduce_check(t, &p);
        }
        assert_eq!(r.rc, 1e6);
    }

    #[test]
    fn mlx5_rate_on_first_cnp() {
        let mut p = params(DcqcnVariant::Mlx5);
        p.rate_on_first_cnp = BitsPerSec(10_000_000_000);
        let mut r = RateState::new(LINE, &p);
        // The first CNP sets Rc = Rt = 10 G and counts as the first cut: no cut at once.
        assert_eq!(r.on_cnp(SimTime(US), &p), Todo::ArmIncrease(SimTime(US) + p.increase_timer));
        rates(&r, 10e9, 10e9);
        // A CNP 1 µs later is cut at the end of the period, with α updated meanwhile.
        assert_eq!(r.on_cnp(SimTime(2 * US), &p), Todo::ArmReduce(SimTime(5 * US)));
        r.on_reduce_check(SimTime(5 * US), &p);
        assert!(r.rc < 10e9 && r.rc >= 5e9, "{}", r.rc);
    }

    #[test]
    fn paper_cut_uses_alpha_before_its_update() {
        let p = params(DcqcnVariant::Paper);
        let g: f64 = 1.0 / 256.0;
        let mut r = RateState::new(LINE, &p);
        let t = SimTime(10 * US);
        assert_eq!(r.on_cnp(t, &p), Todo::ArmIncrease(t + SimTime(55 * US)));
        rates(&r, LINE / 2.0, LINE); // α = 1: half
        assert!(close(r.alpha, 1.0), "(1−g)·1 + g = 1");
        // 20 µs later (inside K = 55 µs: no decay) the cut uses α = 1 again, then α stays 1.
        r.on_cnp(t + SimTime(20 * US), &p);
        rates(&r, LINE / 4.0, LINE / 2.0);
        // 10 quiet periods of K, then a CNP: α = (1−g)^10 before the cut, then the +g update.
        let t2 = t + SimTime(20 * US + 550 * US);
        r.on_cnp(t2, &p);
        let a = (1.0 - g).powi(10);
        rates(&r, LINE / 4.0 * (1.0 - a / 2.0), LINE / 4.0);
        assert!(close(r.alpha, (1.0 - g) * a + g));
    }

    #[test]
    fn paper_five_fast_recovery_steps_then_additive_then_hyper() {
        let p = params(DcqcnVariant::Paper); // F = 5, B = 10 MB, R_AI 20, R_HAI 200 Mb/s at 100G
        let (ai, hai) = (20e6, 200e6);
        let mut r = RateState::new(LINE, &p);
        r.on_cnp(SimTime(0), &p);
        r.on_cnp(SimTime(US), &p); // Rt = 50 G, Rc = 25 G
        let (mut rc, mut rt) = (LINE / 4.0, LINE / 2.0);
        rates(&r, rc, rt);
        let tick = |n: u64| SimTime(US + n * 55 * US);
        for n in 1..=5 {
            r.on_increase_timer(tick(n), &p);
            rc = (rt + rc) / 2.0;
            rates(&r, rc, rt);
        }
        // T = 5 ≥ F: additive, while the byte counter is below F.
        r.on_increase_timer(tick(6), &p);
        rt += ai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        // Six byte-counter events (60 MB): T = 6, B counts 0..5 → additive each time.
        for _ in 0..6 {
            r.on_sent(10_000_000, &p);
            rt += ai;
            rc = (rt + rc) / 2.0;
        }
        rates(&r, rc, rt);
        // Now T = 6 > F and B = 6 > F: hyper increase by R_HAI·(min(T, B) − F) = 1·R_HAI.
        r.on_increase_timer(tick(7), &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        // T = 7, B = 6: min − F = 1 again.
        r.on_sent(10_000_000, &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
        // T = 7, B = 7: two steps.
        r.on_increase_timer(tick(8), &p);
        rt += 2.0 * hai;
        rc = (rt + rc) / 2.0;
        rates(&r, rc, rt);
    }

    #[test]
    fn increase_stops_at_line_rate() {
        let p = params(DcqcnVariant::Paper);
        let mut r = RateState::new(LINE, &p);
        r.on_cnp(SimTime(0), &p);
        let mut t = SimTime(0);
        let mut todo = Todo::ArmIncrease(SimTime(55 * US));
        let mut n = 0;
        while let Todo::ArmIncrease(at) = todo {
            t = at;
            todo = r.on_increase_timer(t, &p);
            n += 1;
            assert!(n < 100_000, "never reached line rate");
        }
        rates(&r, LINE, LINE);
        assert!(t > SimTime(55 * US));
    }

    #[test]
    fn powu_is_repeated_multiplication() {
        let x = 1019.0 / 1024.0;
        let mut slow = 1.0;
        for _ in 0..37 {
            slow *= x;
        }
        assert!((powu(x, 37) - slow).abs() < 1e-15);
        assert_eq!(powu(x, 0), 1.0);
    }
}
