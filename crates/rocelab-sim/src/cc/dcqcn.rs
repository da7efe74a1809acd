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
//! * `paper` ([`PaperDcqcn`]; Zhu et al., "Congestion Control for Large-Scale RDMA
//!   Deployments", SIGCOMM 2015): every CNP cuts at once, Rt ← Rc, Rc ← Rc·(1−α/2), then
//!   α ← (1−g)α + g; α decays by (1−g) every K without a CNP (the clock restarts at each CNP);
//!   both counters and the timer restart at each cut.
//! * `mlx5` ([`Mlx5Dcqcn`]; ConnectX firmware as NVIDIA documents its parameters; HPCC's
//!   `rdma-hw.cc` where the documentation is silent): α is set to `initial_alpha` on the first
//!   CNP and updated once per `dce_tcp_rtt` (K) period, up by g if a CNP arrived in it, down
//!   otherwise. A cut happens at most once per `rate_reduce_monitor_period` and only if a CNP
//!   arrived since the last one — the first CNP cuts at once, since the period is documented
//!   as the minimum time *between two* cuts (HPCC waits one period first). The cut is
//!   Rc ← max(min_rate, Rc·max(1−α/2, `rpg_min_dec_fac`)) (a cut keeps at least that share:
//!   NVIDIA's example, 25 keeps 25 %, 100 prevents cuts); Rt ← Rc first when
//!   `clamp_tgt_rate` is set, or when `clamp_tgt_rate_after_time_inc` is set and the timer
//!   raised the rate since the last cut (byte-counter increases alone leave Rt).
//!
//! α is updated lazily (closed form over the elapsed periods, by repeated squaring: no
//! platform `powf`, so results do not depend on the machine's libm) and an idle QP costs no
//! events. Rates are f64 bits/s; the pacer turns them into integer picosecond gaps.
//!
//! # Shape of the code
//!
//! Both variants sit behind the crate's congestion-control interface (`cc`): they read CNPs,
//! their two timers (increase: [`Timer::Increase`]; mlx5's deferred cut: [`Timer::Check`]) and
//! the bytes sent, and pace by rate. They are built on one [`RateState`] (Rc, Rt, α, the
//! counters, the increase timer's generation) that owns what they share — the cut, the α
//! decay, the three-phase increase — and differ only where the module doc above says they do.

use super::{rate_gap, CongestionControl, Feedback, Timer, Todo};
use rocelab_model::{Dcqcn, SimTime};

/// What both DCQCN variants keep per QP, and the steps they share.
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
    pub line: f64,
    /// Generation of the increase timer (stale timers are ignored).
    pub inc_gen: u32,
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
            line: line_bps,
            inc_gen: 0,
        }
    }

    /// Applies every full α period up to `now`: decay, plus the +g of the oldest one if
    /// `cnp_in_open_period` (a CNP arrived in the period still open). Returns whether that
    /// period closed (a caller's flag for it is then spent).
    fn settle_alpha(&mut self, now: SimTime, p: &Dcqcn, cnp_in_open_period: bool) -> bool {
        let k = p.alpha_timer.0.max(1);
        if now.0 < self.alpha_t.0 + k {
            return false;
        }
        let periods = (now.0 - self.alpha_t.0) / k;
        let mut n = periods;
        if cnp_in_open_period {
            self.alpha = (1.0 - p.g) * self.alpha + p.g;
            n -= 1;
        }
        self.alpha *= powu(1.0 - p.g, n);
        self.alpha_t = SimTime(self.alpha_t.0 + periods * k);
        true
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

    /// The increase timer fired; `hyper_steps` as in [`RateState::increase`].
    #[inline]
    fn timer_increase(&mut self, now: SimTime, p: &Dcqcn, hyper_steps: impl Fn(u32) -> f64) -> Todo {
        self.increase(p, hyper_steps);
        self.t_count += 1;
        if self.rc < self.line || self.rt < self.line {
            Todo::ArmIncrease(now + p.increase_timer)
        } else {
            Todo::Nothing
        }
    }

    /// Bytes sent; the byte counter may trigger increase steps.
    #[inline]
    fn sent(&mut self, bytes: u64, p: &Dcqcn, hyper_steps: impl Fn(u32) -> f64) {
        if p.byte_counter_bytes == 0 || self.rc >= self.line {
            return;
        }
        self.bytes += bytes;
        while self.bytes >= p.byte_counter_bytes {
            self.bytes -= p.byte_counter_bytes;
            self.increase(p, &hyper_steps);
            self.b_count += 1;
        }
    }

    /// One increase event, its phase chosen by the counts before it. In hyper increase Rt
    /// gains `hyper_steps(min(T, B) − F)` times R_HAI: where the variants differ.
    fn increase(&mut self, p: &Dcqcn, hyper_steps: impl Fn(u32) -> f64) {
        let f = p.fast_recovery_steps;
        let t = self.t_count;
        // Without a byte counter only the timer counts.
        let b = if p.byte_counter_bytes == 0 { t } else { self.b_count };
        let (hi, lo) = (t.max(b), t.min(b));
        if hi < f {
            // fast recovery: Rt stays
        } else if lo > f {
            self.rt += hyper_steps(lo - f) * p.rate_hai.0 as f64;
        } else {
            self.rt += p.rate_ai.0 as f64;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
    }
}

/// DCQCN as the SIGCOMM 2015 paper describes it (see the module doc).
#[derive(Clone, Debug)]
pub struct PaperDcqcn {
    pub state: RateState,
}

impl PaperDcqcn {
    pub fn new(line_bps: f64, p: &Dcqcn) -> Self {
        PaperDcqcn { state: RateState::new(line_bps, p) }
    }

    /// The paper's hyper increase grows with the count past F.
    #[inline]
    fn hyper_steps(over: u32) -> f64 {
        over as f64
    }
}

impl PaperDcqcn {
    pub fn on_cnp(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        let s = &mut self.state;
        // The paper applies no +g lazily: each CNP adds its own at once, below.
        s.settle_alpha(now, p, false);
        s.rt = s.rc;
        let factor = 1.0 - s.alpha / 2.0;
        s.alpha = (1.0 - p.g) * s.alpha + p.g;
        // The α clock restarts at the CNP.
        s.alpha_t = now;
        s.cut(now, p, factor)
    }

    /// Never asked for: the paper cuts on the CNP itself.
    pub fn on_reduce_check(&mut self, _now: SimTime, _p: &Dcqcn) -> Todo {
        Todo::Nothing
    }

    #[inline]
    pub fn on_increase_timer(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.state.timer_increase(now, p, Self::hyper_steps)
    }

    #[inline]
    pub fn on_sent(&mut self, bytes: u64, p: &Dcqcn) {
        self.state.sent(bytes, p, Self::hyper_steps)
    }

    #[inline]
    pub fn rate_bps(&self) -> f64 {
        self.state.rc
    }

    #[inline]
    pub fn line_rate_bps(&self) -> f64 {
        self.state.line
    }

    #[inline]
    pub fn increase_gen(&self) -> u32 {
        self.state.inc_gen
    }
}

/// DCQCN as ConnectX (mlx5) firmware runs it (see the module doc).
#[derive(Clone, Debug)]
pub struct Mlx5Dcqcn {
    pub state: RateState,
    /// A CNP arrived since the last cut.
    cnp_pending: bool,
    /// A CNP arrived in the current α period.
    alpha_bit: bool,
    seen_cnp: bool,
    /// A reduce check is scheduled.
    reduce_armed: bool,
    /// Time of the last cut, `None` before the first.
    last_reduce: Option<SimTime>,
}

impl Mlx5Dcqcn {
    pub fn new(line_bps: f64, p: &Dcqcn) -> Self {
        Mlx5Dcqcn {
            state: RateState::new(line_bps, p),
            cnp_pending: false,
            alpha_bit: false,
            seen_cnp: false,
            reduce_armed: false,
            last_reduce: None,
        }
    }

    /// The firmware's hyper increase adds one R_HAI per event, however far past F.
    #[inline]
    fn hyper_steps(_over: u32) -> f64 {
        1.0
    }

    fn settle_alpha(&mut self, now: SimTime, p: &Dcqcn) {
        if self.state.settle_alpha(now, p, self.alpha_bit) {
            self.alpha_bit = false;
        }
    }
}

impl Mlx5Dcqcn {
    pub fn on_cnp(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        if !self.seen_cnp {
            self.seen_cnp = true;
            self.state.alpha = p.initial_alpha;
            self.state.alpha_t = now;
            if p.rate_on_first_cnp.0 > 0 {
                // The first CNP sets the rate instead of cutting it: that is this flow's
                // first reduction, and the next waits a full period.
                let s = &mut self.state;
                s.rc = (p.rate_on_first_cnp.0 as f64).min(s.line);
                s.rt = s.rc;
                self.alpha_bit = true;
                self.last_reduce = Some(now);
                return s.restart_increase(now, p);
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

    /// The rate-reduce check, at most once per `rate_reduce_period`.
    pub fn on_reduce_check(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.reduce_armed = false;
        if !self.cnp_pending {
            return Todo::Nothing;
        }
        self.settle_alpha(now, p);
        self.cnp_pending = false;
        self.last_reduce = Some(now);
        let s = &mut self.state;
        if p.clamp_target_rate || (p.clamp_target_rate_after_time_inc && s.t_count > 0) {
            s.rt = s.rc;
        }
        let factor = (1.0 - s.alpha / 2.0).max(1.0 - p.max_cut_fraction);
        s.cut(now, p, factor)
    }

    #[inline]
    pub fn on_increase_timer(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
        self.state.timer_increase(now, p, Self::hyper_steps)
    }

    #[inline]
    pub fn on_sent(&mut self, bytes: u64, p: &Dcqcn) {
        self.state.sent(bytes, p, Self::hyper_steps)
    }

    #[inline]
    pub fn rate_bps(&self) -> f64 {
        self.state.rc
    }

    #[inline]
    pub fn line_rate_bps(&self) -> f64 {
        self.state.line
    }

    #[inline]
    pub fn increase_gen(&self) -> u32 {
        self.state.inc_gen
    }
}

/// Both variants behind the common interface: they read CNPs, their two timers and the bytes
/// sent, and pace by rate.
macro_rules! dcqcn_cc {
    ($ty:ty) => {
        impl CongestionControl for $ty {
            type Params = Dcqcn;
            #[inline]
            fn on_cnp(&mut self, now: SimTime, p: &Dcqcn) -> Todo {
                <$ty>::on_cnp(self, now, p)
            }
            #[inline]
            fn on_timer(&mut self, now: SimTime, which: Timer, p: &Dcqcn) -> Todo {
                match which {
                    Timer::Increase => self.on_increase_timer(now, p),
                    Timer::Check => self.on_reduce_check(now, p),
                }
            }
            #[inline]
            fn on_sent(&mut self, _now: SimTime, wire: u32, p: &Dcqcn) {
                <$ty>::on_sent(self, wire as u64, p)
            }
            #[inline]
            fn send_gap(&self, wire: u32, _ser: SimTime, _p: &Dcqcn) -> Option<SimTime> {
                Some(rate_gap(wire, self.state.rc, self.state.line))
            }
            #[inline]
            fn rate_bps(&self) -> f64 {
                self.state.rc
            }
            #[inline]
            fn line_rate_bps(&self) -> f64 {
                self.state.line
            }
            #[inline]
            fn increase_gen(&self) -> u32 {
                self.state.inc_gen
            }
            fn feedback(&self) -> Feedback {
                Feedback::CNP
            }
        }
    };
}

dcqcn_cc!(PaperDcqcn);
dcqcn_cc!(Mlx5Dcqcn);

#[cfg(test)]
mod tests {
    //! Scripted CNP sequences; every expected value is computed here by hand from the
    //! algorithm in the module doc, not read back from the code under test.
    use super::super::{Cc, CcParams};
    use super::*;
    use rocelab_model::config::DcqcnVariant;
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
            max_cut_fraction: 1.0 - d.min_dec_fac_percent / 100.0,
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
        let mut r = Mlx5Dcqcn::new(LINE, &p);
        let t0 = SimTime(100 * US);
        // First CNP: α ← 1023/1024 and the cut is due now (no earlier cut to space from).
        assert_eq!(r.on_cnp(t0, &p), Todo::ArmReduce(t0));
        assert_eq!(r.on_reduce_check(t0, &p), Todo::ArmIncrease(t0 + SimTime(300 * US)));
        let a0 = 1023.0 / 1024.0;
        let rc1 = LINE * (1.0 - a0 / 2.0); // 51.2 % of line: above the 50 % floor of one cut
        rates(&r.state, rc1, LINE); // no clamp: no timer increase yet, clamp_tgt_rate off
                                    // A CNP 1 µs later: one α period has passed and it saw the first CNP.
        let a1 = (1.0 - g) * a0 + g;
        assert_eq!(r.on_cnp(t0 + SimTime(US), &p), Todo::ArmReduce(t0 + SimTime(4 * US)));
        assert!(close(r.state.alpha, a1));
        // More CNPs in the same period change nothing more.
        assert_eq!(r.on_cnp(t0 + SimTime(2 * US), &p), Todo::Nothing);
        // The cut at t0 + 4 µs: periods [1,2) and [2,3) saw a CNP, [3,4) none.
        r.on_reduce_check(t0 + SimTime(4 * US), &p);
        let a2 = (1.0 - g) * a1 + g;
        let a4 = ((1.0 - g) * a2 + g) * (1.0 - g);
        assert!(close(r.state.alpha, a4), "α {} != {a4}", r.state.alpha);
        rates(&r.state, rc1 * (1.0 - a4 / 2.0), LINE);
        // With no CNP since, the next check does nothing.
        assert_eq!(r.on_reduce_check(t0 + SimTime(8 * US), &p), Todo::Nothing);
        // A quiet α period decays: 100 periods later α = a4·(1−g)^100 (settled on the next CNP).
        r.on_cnp(t0 + SimTime(104 * US), &p);
        assert!(close(r.state.alpha, a4 * (1.0 - g).powi(100)), "α {}", r.state.alpha);
    }

    #[test]
    fn mlx5_recovery_phases_by_timer_and_byte_counter() {
        let mut p = params(DcqcnVariant::Mlx5);
        p.clamp_target_rate = true; // Rt follows each cut, so the AI/HAI steps show
        let (ai, hai) = (5e6, 50e6);
        let mut r = Mlx5Dcqcn::new(LINE, &p);
        let t0 = SimTime(10 * US);
        r.on_cnp(t0, &p);
        r.on_reduce_check(t0, &p);
        let rc = LINE * (1.0 - (1023.0 / 1024.0) / 2.0);
        rates(&r.state, rc, LINE);
        // A second cut with Rt clamped to the rate before it.
        r.on_cnp(t0 + SimTime(4 * US), &p);
        r.on_reduce_check(t0 + SimTime(4 * US), &p);
        let rt = rc;
        let mut rc = rc * (1.0 - r.state.alpha / 2.0);
        rates(&r.state, rc, rt);
        // Byte counter event 1 (T = 0, B = 0 < F = 1): fast recovery, Rt stays.
        r.on_sent(32_767, &p);
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        // Event 2 (B = 1 = F, T = 0): additive increase.
        r.on_sent(32_000, &p); // not yet a full counter
        rates(&r.state, rc, rt);
        r.on_sent(767, &p);
        let mut rt = rt + ai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        // Timer event (T = 0, B = 2): additive again (T is not past F).
        r.on_increase_timer(t0 + SimTime(304 * US), &p);
        rt += ai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        // Timer event (T = 1 = F): additive; then (T = 2 > F, B = 2 > F): hyper.
        r.on_increase_timer(t0 + SimTime(604 * US), &p);
        rt += ai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        r.on_increase_timer(t0 + SimTime(904 * US), &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        // Two byte events at once (65,534 B): both hyper.
        r.on_sent(65_534, &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
    }

    #[test]
    fn mlx5_timer_only_runs_fast_recovery_once_then_one_additive_step() {
        // HPCC's Mellanox model: no byte counter, F = 1: stage 0 fast recovery, stage 1
        // additive, stage 2 on hyper. (An increment-first stage counter skips fast recovery.)
        let mut p = params(DcqcnVariant::Mlx5);
        p.byte_counter_bytes = 0;
        p.clamp_target_rate = true;
        let mut r = Mlx5Dcqcn::new(LINE, &p);
        r.on_cnp(SimTime(US), &p);
        r.on_reduce_check(SimTime(US), &p);
        r.on_cnp(SimTime(5 * US), &p);
        r.on_reduce_check(SimTime(5 * US), &p);
        let (mut rc, mut rt) = (r.state.rc, r.state.rt);
        assert!(rt < LINE && rc < rt);
        let step = |n: u64| SimTime(5 * US + n * 300 * US);
        r.on_increase_timer(step(1), &p);
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        r.on_increase_timer(step(2), &p);
        rt += 5e6;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        for n in 3..6 {
            r.on_increase_timer(step(n), &p);
            rt += 50e6;
            rc = (rt + rc) / 2.0;
            rates(&r.state, rc, rt);
        }
    }

    #[test]
    fn mlx5_clamps_after_a_timer_increase_only() {
        let p = params(DcqcnVariant::Mlx5); // clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1
        let mut r = Mlx5Dcqcn::new(LINE, &p);
        r.on_cnp(SimTime(US), &p);
        r.on_reduce_check(SimTime(US), &p);
        // Byte-counter increases only: the next cut keeps Rt at line rate.
        r.on_sent(3 * 32_767, &p);
        r.on_cnp(SimTime(5 * US), &p);
        r.on_reduce_check(SimTime(5 * US), &p);
        assert_eq!(r.state.rt, LINE);
        // A timer increase, then a cut: Rt ← Rc (the rate before the cut).
        r.on_increase_timer(SimTime(305 * US), &p);
        let before = r.state.rc;
        r.on_cnp(SimTime(306 * US), &p);
        r.on_reduce_check(SimTime(306 * US), &p);
        assert_eq!(r.state.rt, before);
        assert!(r.state.rc < before);
    }

    #[test]
    fn mlx5_cut_bounded_by_min_dec_fac_and_floor() {
        let mut p = params(DcqcnVariant::Mlx5);
        p.max_cut_fraction = 0.25; // rpg_min_dec_fac = 75: a cut keeps at least 75 %
        let mut r = Mlx5Dcqcn::new(LINE, &p);
        r.on_cnp(SimTime(US), &p);
        r.on_reduce_check(SimTime(US), &p);
        rates(&r.state, 0.75 * LINE, LINE);
        // Cuts every period without recovery end exactly at rpg_min_rate.
        for k in 1..200u64 {
            let t = SimTime(US + 4 * US * k);
            r.on_cnp(t, &p);
            r.on_reduce_check(t, &p);
        }
        assert_eq!(r.state.rc, 1e6);
    }

    /// `rpg_min_dec_fac` is the least share of the rate a cut keeps (NVIDIA's DCQCN parameters:
    /// 25 bounds the new rate above 25 % of the old, 100 prevents cuts), read from the file.
    #[test]
    fn min_dec_fac_percent_is_the_share_a_cut_keeps() {
        let text = |pct: &str| {
            format!(
                "[fabric]\nname = \"d\"\n[topology.leaf_spine]\nleaves = 1\nspines = 1\nhosts_per_leaf = 2\n\
                 host_link = {{ speed_gbps = 100, length_m = 3 }}\nfabric_link = {{ speed_gbps = 100, length_m = 3 }}\n\
                 [nic.dcqcn]\nmin_dec_fac_percent = {pct}\n"
            )
        };
        for (pct, keeps) in [("25", 0.25), ("50", 0.5), ("100", 1.0)] {
            let m = rocelab_model::load_str("d.toml", &text(pct)).unwrap_or_else(|e| panic!("{e}"));
            let p = &m.nics[0].dcqcn;
            let mut r = Mlx5Dcqcn::new(LINE, p);
            r.on_cnp(SimTime(US), p);
            r.on_reduce_check(SimTime(US), p);
            // α starts at 1023/1024, so 1 − α/2 ≈ 0.5: the floor decides where it is higher.
            let want = LINE * f64::max(keeps, 1.0 - p.initial_alpha / 2.0);
            assert!((r.state.rc - want).abs() < 1.0, "{pct} %: {} against {want}", r.state.rc);
        }
    }

    #[test]
    fn mlx5_rate_on_first_cnp() {
        let mut p = params(DcqcnVariant::Mlx5);
        p.rate_on_first_cnp = BitsPerSec(10_000_000_000);
        let mut r = Mlx5Dcqcn::new(LINE, &p);
        // The first CNP sets Rc = Rt = 10 G and counts as the first cut: no cut at once.
        assert_eq!(r.on_cnp(SimTime(US), &p), Todo::ArmIncrease(SimTime(US) + p.increase_timer));
        rates(&r.state, 10e9, 10e9);
        // A CNP 1 µs later is cut at the end of the period, with α updated meanwhile.
        assert_eq!(r.on_cnp(SimTime(2 * US), &p), Todo::ArmReduce(SimTime(5 * US)));
        r.on_reduce_check(SimTime(5 * US), &p);
        assert!(r.state.rc < 10e9 && r.state.rc >= 5e9, "{}", r.state.rc);
    }

    #[test]
    fn paper_cut_uses_alpha_before_its_update() {
        let p = params(DcqcnVariant::Paper);
        let g: f64 = 1.0 / 256.0;
        let mut r = PaperDcqcn::new(LINE, &p);
        let t = SimTime(10 * US);
        assert_eq!(r.on_cnp(t, &p), Todo::ArmIncrease(t + SimTime(55 * US)));
        rates(&r.state, LINE / 2.0, LINE); // α = 1: half
        assert!(close(r.state.alpha, 1.0), "(1−g)·1 + g = 1");
        // 20 µs later (inside K = 55 µs: no decay) the cut uses α = 1 again, then α stays 1.
        r.on_cnp(t + SimTime(20 * US), &p);
        rates(&r.state, LINE / 4.0, LINE / 2.0);
        // 10 quiet periods of K, then a CNP: α = (1−g)^10 before the cut, then the +g update.
        let t2 = t + SimTime(20 * US + 550 * US);
        r.on_cnp(t2, &p);
        let a = (1.0 - g).powi(10);
        rates(&r.state, LINE / 4.0 * (1.0 - a / 2.0), LINE / 4.0);
        assert!(close(r.state.alpha, (1.0 - g) * a + g));
    }

    #[test]
    fn paper_five_fast_recovery_steps_then_additive_then_hyper() {
        let p = params(DcqcnVariant::Paper); // F = 5, B = 10 MB, R_AI 20, R_HAI 200 Mb/s at 100G
        let (ai, hai) = (20e6, 200e6);
        let mut r = PaperDcqcn::new(LINE, &p);
        r.on_cnp(SimTime(0), &p);
        r.on_cnp(SimTime(US), &p); // Rt = 50 G, Rc = 25 G
        let (mut rc, mut rt) = (LINE / 4.0, LINE / 2.0);
        rates(&r.state, rc, rt);
        let tick = |n: u64| SimTime(US + n * 55 * US);
        for n in 1..=5 {
            r.on_increase_timer(tick(n), &p);
            rc = (rt + rc) / 2.0;
            rates(&r.state, rc, rt);
        }
        // T = 5 ≥ F: additive, while the byte counter is below F.
        r.on_increase_timer(tick(6), &p);
        rt += ai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        // Six byte-counter events (60 MB): T = 6, B counts 0..5 → additive each time.
        for _ in 0..6 {
            r.on_sent(10_000_000, &p);
            rt += ai;
            rc = (rt + rc) / 2.0;
        }
        rates(&r.state, rc, rt);
        // Now T = 6 > F and B = 6 > F: hyper increase by R_HAI·(min(T, B) − F) = 1·R_HAI.
        r.on_increase_timer(tick(7), &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        // T = 7, B = 6: min − F = 1 again.
        r.on_sent(10_000_000, &p);
        rt += hai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
        // T = 7, B = 7: two steps.
        r.on_increase_timer(tick(8), &p);
        rt += 2.0 * hai;
        rc = (rt + rc) / 2.0;
        rates(&r.state, rc, rt);
    }

    #[test]
    fn increase_stops_at_line_rate() {
        let p = params(DcqcnVariant::Paper);
        let mut r = PaperDcqcn::new(LINE, &p);
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
        rates(&r.state, LINE, LINE);
        assert!(t > SimTime(55 * US));
    }

    /// What the engine does with a QP's congestion control, written once against the trait:
    /// a CNP at `t0`, then every timer each step asks for, in order, until none is; the rate
    /// after each step.
    fn drive<C: CongestionControl>(cc: &mut C, p: &C::Params, t0: SimTime, max_steps: usize) -> Vec<f64> {
        let mut out = Vec::new();
        let mut todo = cc.on_cnp(t0, p);
        out.push(cc.rate_bps());
        while out.len() < max_steps {
            todo = match todo {
                Todo::Nothing => break,
                Todo::ArmReduce(t) => cc.on_timer(t, Timer::Check, p),
                Todo::ArmIncrease(t) => cc.on_timer(t, Timer::Increase, p),
            };
            out.push(cc.rate_bps());
        }
        out
    }

    #[test]
    fn the_variant_is_chosen_once_and_called_through_the_enum() {
        assert!(matches!(Cc::dcqcn(LINE, &params(DcqcnVariant::Paper)), Cc::Paper(_)));
        assert!(matches!(Cc::dcqcn(LINE, &params(DcqcnVariant::Mlx5)), Cc::Mlx5(_)));
        // paper: the CNP halves at once (α = 1); the timer 55 µs later is a fast-recovery
        // step back toward Rt = 100 G: (100 + 50)/2 = 75 G.
        let p = CcParams::for_dcqcn(params(DcqcnVariant::Paper));
        let mut cc = Cc::dcqcn(LINE, &p.dcqcn);
        assert_eq!(drive(&mut cc, &p, SimTime(0), 2), vec![50e9, 75e9]);
        assert_eq!(cc.increase_gen(), 1, "one cut, one restart of the increase timer");
        // mlx5: the CNP only schedules the cut (the rate is still line), which then takes
        // α/2 = 1023/2048 off: 100 G · 1025/2048 = 50.048828125 G.
        let p = CcParams::for_dcqcn(params(DcqcnVariant::Mlx5));
        let mut cc = Cc::dcqcn(LINE, &p.dcqcn);
        assert_eq!(drive(&mut cc, &p, SimTime(0), 2), vec![100e9, 50.048828125e9]);
        assert_eq!(cc.line_rate_bps(), LINE);
    }

    /// A third algorithm plugs in by implementing the trait alone: it halves the rate on a
    /// CNP and its one recovery timer, `Self::Params` later, restores line rate.
    struct HalveThenRestore {
        rate: f64,
        line: f64,
        gen: u32,
    }

    impl CongestionControl for HalveThenRestore {
        type Params = SimTime;
        fn on_cnp(&mut self, now: SimTime, recover_after: &SimTime) -> Todo {
            self.rate /= 2.0;
            self.gen += 1;
            Todo::ArmIncrease(now + *recover_after)
        }
        fn on_timer(&mut self, _: SimTime, _: Timer, _: &SimTime) -> Todo {
            self.rate = self.line;
            Todo::Nothing
        }
        fn feedback(&self) -> Feedback {
            Feedback::CNP
        }
        fn rate_bps(&self) -> f64 {
            self.rate
        }
        fn line_rate_bps(&self) -> f64 {
            self.line
        }
        fn increase_gen(&self) -> u32 {
            self.gen
        }
    }

    #[test]
    fn a_third_implementation_runs_through_the_same_calls() {
        let mut cc = HalveThenRestore { rate: LINE, line: LINE, gen: 0 };
        assert_eq!(drive(&mut cc, &SimTime(10 * US), SimTime(0), 10), vec![50e9, 100e9]);
        assert_eq!(cc.increase_gen(), 1);
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
