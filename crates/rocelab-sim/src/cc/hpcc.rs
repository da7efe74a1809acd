//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019), as HPCC's ns-3
//! model runs it (`rdma-hw.cc`, CC_MODE 3).
//!
//! Every switch stamps in-band telemetry (INT) on each data packet as it leaves an egress port:
//! the port's queued bytes, the bytes it has sent, the time and its rate. The receiver echoes
//! the stack on the ACK. For each hop the sender compares the stack with the previous one it
//! kept and estimates the link's normalized load
//!
//!   u = txRate / B + min(qlen, qlen_prev) / (B·T)
//!
//! (txRate = Δbytes·8/Δt, B the link's rate, T the base RTT), smoothed over one T:
//! U ← (U·(T − Δt) + u·Δt) / T with Δt ≤ T. With k = U/η, the reference rate Rc moves
//! multiplicatively when the link is over target (k ≥ 1) or after `mi_thresh` additive steps:
//! R = Rc/k + R_AI, else additively: R = Rc + R_AI, clamped to [min rate, line rate]. The
//! reference (Rc and the step count) is committed once per RTT (the first ACK past the PSN
//! that was next when the last reference was set); `fast_react` applies R on every ACK in
//! between from the same reference. With `multi_rate` each hop keeps its own U, Rc and step
//! count and the QP sends at the smallest hop rate; otherwise the most loaded hop sets one
//! rate. `sample_feedback` lets a fast reaction skip hops whose queue is empty.
//!
//! INT fields are quantized as HPCC's header carries them: queue lengths in units of
//! 80·`int_multi` bytes, byte counts in 128·`int_multi` (their wrap-around is not modelled: an
//! RTT's delta never comes near it). The window of bytes in flight, if any, is the NIC's
//! (`window_bytes`, scaled by the rate with `window_scales_with_rate`, as ns-3's VAR_WIN).

use super::{rate_gap, Ack, CongestionControl, Feedback, IntHop, Todo, INT_MAX_HOPS};
use rocelab_model::cc::Hpcc;
use rocelab_model::SimTime;

/// What the sender keeps per hop.
#[derive(Clone, Copy, Debug, Default)]
struct Hop {
    /// The last INT record of this hop.
    int: IntHop,
    /// Smoothed normalized load (multi-rate).
    u: f64,
    /// Reference rate and additive steps (multi-rate).
    rc: f64,
    stage: u32,
}

#[derive(Clone, Debug)]
pub struct HpccState {
    line: f64,
    /// The rate the pacer holds.
    rate: f64,
    /// The reference rate Rc and its additive steps (single rate).
    rc: f64,
    stage: u32,
    /// The smoothed load (single rate).
    u: f64,
    /// The reference is renewed by the first ACK past this PSN; `None` before the first ACK.
    last_update: Option<u32>,
    /// Base RTT T, ps.
    t_ps: f64,
    hops: Box<[Hop; INT_MAX_HOPS]>,
    nhops: usize,
}

impl HpccState {
    /// A QP at line rate whose base RTT is `base_rtt`.
    pub fn new(line_bps: f64, base_rtt: SimTime) -> Self {
        let hop = Hop { rc: line_bps, ..Hop::default() };
        HpccState {
            line: line_bps,
            rate: line_bps,
            rc: line_bps,
            stage: 0,
            u: 0.0,
            last_update: None,
            t_ps: base_rtt.0.max(1) as f64,
            hops: Box::new([hop; INT_MAX_HOPS]),
            nhops: 0,
        }
    }

    /// The current smoothed load of the most loaded hop (single rate) — for tests and traces.
    pub fn utilization(&self) -> f64 {
        self.u
    }

    /// One hop's load from its new record against the kept one, and the time between them.
    fn hop_load(new: &IntHop, old: &IntHop, t_ps: f64, multi: u32) -> Option<(f64, f64)> {
        let dt = new.time.0.checked_sub(old.time.0).filter(|&d| d > 0)? as f64;
        let (qu, bu) = (80 * multi as u64, 128 * multi as u64);
        let bytes = (new.tx_bytes / bu).saturating_sub(old.tx_bytes / bu) * bu;
        let q = (new.qlen_bytes / qu).min(old.qlen_bytes / qu) * qu;
        let b = new.rate_bps.max(1) as f64;
        let tx_rate = bytes as f64 * 8.0 * 1e12 / dt;
        Some((tx_rate / b + q as f64 * 8.0 * 1e12 / (b * t_ps), dt))
    }

    /// The rate from reference `rc` after `stage` additive steps at load `u`; the new stage.
    fn next_rate(&self, rc: f64, stage: u32, u: f64, p: &Hpcc) -> (f64, u32) {
        let k = u / p.target_util;
        let (r, s) = if k >= 1.0 || stage >= p.mi_thresh {
            (rc / k + p.rate_ai_bps, 0)
        } else {
            (rc + p.rate_ai_bps, stage + 1)
        };
        (r.clamp(p.min_rate_bps.min(self.line), self.line), s)
    }

    fn update(&mut self, int: &[IntHop], fast: bool, p: &Hpcc) {
        let t = self.t_ps;
        let n = int.len().min(INT_MAX_HOPS);
        let mut updated = [false; INT_MAX_HOPS];
        let mut any = false;
        let (mut big_u, mut big_dt) = (0.0f64, 0.0f64);
        for (i, rec) in int.iter().take(n).enumerate() {
            if p.sample_feedback && fast && rec.qlen_bytes == 0 {
                continue;
            }
            if let Some((u, dt)) = Self::hop_load(rec, &self.hops[i].int, t, p.int_multi) {
                updated[i] = true;
                any = true;
                if p.multi_rate {
                    let tau = dt.min(t);
                    self.hops[i].u = (self.hops[i].u * (t - tau) + u * tau) / t;
                } else if u > big_u {
                    big_u = u;
                    big_dt = dt;
                }
            }
            self.hops[i].int = *rec;
        }
        self.nhops = n;
        if !any {
            return;
        }
        if p.multi_rate {
            let mut rate = self.line;
            for (i, &fresh) in updated.iter().enumerate().take(n) {
                let hop = self.hops[i];
                if fresh {
                    let (r, s) = self.next_rate(hop.rc, hop.stage, hop.u, p);
                    rate = rate.min(r);
                    if !fast {
                        self.hops[i].rc = r;
                        self.hops[i].stage = s;
                    }
                } else {
                    rate = rate.min(hop.rc);
                }
            }
            self.rate = rate;
        } else {
            let dt = big_dt.min(t);
            self.u = (self.u * (t - dt) + big_u * dt) / t;
            let (r, s) = self.next_rate(self.rc, self.stage, self.u, p);
            self.rate = r;
            if !fast {
                self.rc = r;
                self.stage = s;
            }
        }
    }
}

impl CongestionControl for HpccState {
    type Params = Hpcc;

    fn on_ack(&mut self, _now: SimTime, ack: &Ack, p: &Hpcc) -> Todo {
        match self.last_update {
            None => {
                // The first feedback only sets the records to compare with.
                for (i, rec) in ack.int.iter().take(INT_MAX_HOPS).enumerate() {
                    self.hops[i].int = *rec;
                }
                self.nhops = ack.int.len().min(INT_MAX_HOPS);
                self.last_update = Some(ack.snd_max);
            }
            Some(last) if ack.snd_una > last => {
                self.update(ack.int, false, p);
                self.last_update = Some(ack.snd_max.max(last));
            }
            Some(_) if p.fast_react => self.update(ack.int, true, p),
            Some(_) => {}
        }
        Todo::Nothing
    }

    #[inline]
    fn send_gap(&self, wire: u32, _ser: SimTime, _p: &Hpcc) -> Option<SimTime> {
        Some(rate_gap(wire, self.rate, self.line))
    }

    fn rate_bps(&self) -> f64 {
        self.rate
    }

    fn line_rate_bps(&self) -> f64 {
        self.line
    }

    fn feedback(&self) -> Feedback {
        Feedback { cnp: false, echo_ce: false, int: true, acks: true, rtt: false }
    }
}

#[cfg(test)]
mod tests {
    //! One bottleneck hop, records written by hand; every expected rate worked out from the
    //! module doc's equations.
    use super::*;

    const LINE: f64 = 100e9;
    const US: u64 = 1_000_000;

    fn hop(t_us: u64, tx_bytes: u64, qlen: u64) -> IntHop {
        IntHop { qlen_bytes: qlen, tx_bytes, time: SimTime(t_us * US), rate_bps: 100_000_000_000 }
    }

    fn ack<'a>(una: u32, max: u32, int: &'a [IntHop]) -> Ack<'a> {
        Ack { newly_acked: 1, ce_echoed: 0, snd_una: una, snd_max: max, acked_psn: una - 1, rtt: None, int }
    }

    fn single() -> Hpcc {
        Hpcc { multi_rate: false, fast_react: false, ..Hpcc::default() }
    }

    #[test]
    fn an_overloaded_hop_cuts_by_its_load_over_eta() {
        let p = single();
        let mut h = HpccState::new(LINE, SimTime(10 * US));
        let a = [hop(0, 0, 0)];
        h.on_ack(SimTime::ZERO, &ack(1, 10, &a), &p);
        assert_eq!(h.rate, LINE, "the first ACK only keeps the records");
        // 10 µs later (Δt = T): 125,000 B sent = 100 Gb/s, and 100,000 B queued both times:
        // u = 1 + 100,000·8 / (100 G · 10 µs) = 1.8; U = u (Δt = T); k = 1.8/0.95.
        let a0 = [hop(0, 0, 100_000)];
        let mut h = HpccState::new(LINE, SimTime(10 * US));
        h.on_ack(SimTime::ZERO, &ack(1, 10, &a0), &p);
        let a1 = [hop(10, 125_056, 100_000)]; // a multiple of 128 B and of 80 B
        h.on_ack(SimTime(10 * US), &ack(11, 20, &a1), &p);
        let u = 125_056.0 * 8.0 / 10e-6 / LINE + 100_000.0 * 8.0 / (LINE * 10e-6);
        assert!((h.utilization() - u).abs() < 1e-9, "{} vs {u}", h.utilization());
        let want = LINE / (u / 0.95) + 50e6;
        assert!((h.rate - want).abs() < 1.0, "{} vs {want}", h.rate);
        // An ACK not past PSN 20 leaves the reference (fast react off).
        let a2 = [hop(12, 150_016, 0)];
        h.on_ack(SimTime(12 * US), &ack(15, 25, &a2), &p);
        assert!((h.rate - want).abs() < 1.0);
    }

    #[test]
    fn below_target_it_adds_r_ai_then_multiplies_after_mi_thresh_steps() {
        let p = single();
        let mut h = HpccState::new(LINE, SimTime(10 * US));
        h.rate = 40e9;
        h.rc = 40e9;
        let mut psn = 1;
        let mut tx = 0u64;
        let rec = |t: u64, tx: u64| [hop(t, tx, 0)];
        h.on_ack(SimTime::ZERO, &ack(psn, psn + 1, &rec(0, 0)), &p);
        // Each RTT the link carries 50 Gb/s (62,464 B per 10 µs, a multiple of 128) with no
        // queue: u = 0.49971…, k < 1: five additive steps of 50 Mb/s...
        let per = 62_464u64;
        let u = per as f64 * 8.0 / 10e-6 / LINE;
        let mut want = 40e9;
        for k in 1..=5u64 {
            psn += 2;
            tx += per;
            h.on_ack(SimTime(k * 10 * US), &ack(psn, psn + 1, &rec(k * 10, tx)), &p);
            want += 50e6;
            assert!((h.rate - want).abs() < 1.0, "step {k}: {} vs {want}", h.rate);
        }
        // ...then the sixth is multiplicative: Rc/k + R_AI with k = U/η.
        psn += 2;
        tx += per;
        h.on_ack(SimTime(60 * US), &ack(psn, psn + 1, &rec(60, tx)), &p);
        want = want / (u / 0.95) + 50e6;
        assert!((h.rate - want.min(LINE)).abs() < 1.0, "{} vs {want}", h.rate);
    }

    #[test]
    fn multi_rate_sends_at_the_slowest_hop_and_fast_react_uses_the_same_reference() {
        let p = Hpcc::default(); // multi-rate, fast react
        let mut h = HpccState::new(LINE, SimTime(10 * US));
        let two = |t: u64, a: u64, qa: u64, b: u64| [hop(t, a, qa), hop(t, b, 0)];
        h.on_ack(SimTime::ZERO, &ack(1, 10, &two(0, 0, 80_000, 0)), &p);
        // Hop 0 at line rate with 80,000 B queued (u = 1 + 0.64), hop 1 at half rate (u ≈ 0.5).
        h.on_ack(SimTime(10 * US), &ack(11, 20, &two(10, 125_056, 80_000, 62_464)), &p);
        let u0 = 125_056.0 * 8.0 / 10e-6 / LINE + 80_000.0 * 8.0 / (LINE * 10e-6);
        let r0 = LINE / (u0 / 0.95) + 50e6;
        assert!((h.rate - r0).abs() < 1.0, "{} vs {r0}", h.rate);
        // A fast reaction 5 µs later from the same references: hop 0 now sent 62,464 B in
        // 5 µs (u = 0.99…, the smaller queue of the two records 0): its U moves halfway.
        h.on_ack(SimTime(15 * US), &ack(12, 21, &two(15, 187_520, 0, 93_696)), &p);
        let u_fast = 62_464.0 * 8.0 / 5e-6 / LINE;
        let u_hop = (u0 * 5.0 + u_fast * 5.0) / 10.0;
        let want = r0 / (u_hop / 0.95) + 50e6;
        assert!((h.rate - want).abs() < 1.0, "{} vs {want}", h.rate);
        assert!((h.hops[0].rc - r0).abs() < 1.0, "the reference is kept");
    }
}
