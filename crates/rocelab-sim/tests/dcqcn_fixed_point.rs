//! The DCQCN fluid model's fixed point as an oracle for the packet engine (Zhu et al., "ECN or
//! Delay: Lessons Learnt from Analysis of DCQCN and TIMELY", CoNEXT 2016, §3).
//!
//! For N flows sharing a bottleneck of C, the model's fixed point has every flow at R = C/N and
//! a marking probability p* that balances the cuts against the increases. With τ the CNP
//! interval, τ' the α period, T the increase timer, B the byte counter (in packets), F the
//! fast-recovery steps and Rp the per-flow packet rate, set the model's three derivatives to
//! zero:
//!
//! * α = 1 − (1 − p)^{τ'·Rp}, and a = 1 − (1 − p)^{τ·Rp}, the chance of a CNP in a τ;
//! * increase events per second E = E_B + E_T, E_B = Rp·p/((1 − p)^{−B} − 1),
//!   E_T = Rp·p/((1 − p)^{−T·Rp} − 1);
//! * dR_C/dt = 0: R·α·a/τ = (R_T − R)·E;
//! * dR_T/dt = 0: (R_T − R)·a/τ = R_AI·((1 − p)^{F·B}·E_B + (1 − p)^{F·T·Rp}·E_T).
//!
//! Eliminating R_T leaves one equation in p, solved here by bisection; RED's line then gives
//! the queue: q* = Kmin + p*/Pmax·(Kmax − Kmin).

use rocelab_model::{load_str, Model, PortId, SimTime};
use rocelab_sim::{build, SimOptions};

/// The model's parameters, in packets and seconds.
struct Fluid {
    n: f64,
    /// Link rate, bits/s; frame bytes (what a packet costs the link).
    c_bps: f64,
    frame: f64,
    tau: f64,
    tau_alpha: f64,
    timer: f64,
    byte_counter_bytes: f64,
    f: f64,
    rate_ai_bps: f64,
    kmin: f64,
    kmax: f64,
    pmax: f64,
    g: f64,
}

/// Which timing the balance assumes.
#[derive(Clone, Copy, PartialEq)]
enum Timing {
    /// The fluid model's: a CNP in each τ window with a mark, α updated each τ' from marks.
    Model,
    /// The engine's (and the DCQCN paper's NP/RP): after a CNP the NP holds off τ, then the
    /// next mark sends one (CNP rate 1/(τ + 1/(p·Rp))); α's clock restarts at each CNP, so α
    /// is the fixed point of α ← ((1 − g)α + g)·(1 − g)^m with m = X/τ' periods per cycle X.
    Engine,
}

impl Fluid {
    /// The rate-target balance (dR_T/dt at the R_T where dR_C/dt = 0) as a function of p:
    /// negative below p*, positive above.
    fn balance(&self, p: f64, timing: Timing) -> f64 {
        let r = self.c_bps / self.n;
        let rp = r / (8.0 * self.frame);
        let q = 1.0 - p;
        let b = self.byte_counter_bytes / self.frame;
        let t = self.timer * rp;
        let e_b = rp * p / (q.powf(-b) - 1.0);
        let e_t = rp * p / (q.powf(-t) - 1.0);
        // The CNP rate (the model's a/τ) and the α the cut uses.
        let (cnps, alpha) = match timing {
            Timing::Model => ((1.0 - q.powf(self.tau * rp)) / self.tau, 1.0 - q.powf(self.tau_alpha * rp)),
            Timing::Engine => {
                let cycle = self.tau + 1.0 / (p * rp);
                let m = cycle / self.tau_alpha;
                let keep = 1.0 - self.g;
                (1.0 / cycle, self.g * keep.powf(m) / (1.0 - keep.powf(m + 1.0)))
            }
        };
        let gap = r * alpha * cnps / (e_b + e_t); // R_T − R
        gap * cnps - self.rate_ai_bps * (q.powf(self.f * b) * e_b + q.powf(self.f * t) * e_t)
    }

    /// p*, by bisection on a log scale.
    fn p_star(&self, timing: Timing) -> f64 {
        let (mut lo, mut hi) = (1e-9f64, 0.5f64);
        assert!(self.balance(lo, timing) < 0.0 && self.balance(hi, timing) > 0.0, "no sign change");
        for _ in 0..200 {
            let mid = (lo * hi).sqrt();
            if self.balance(mid, timing) < 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo * hi).sqrt()
    }

    /// q*, bytes (p* must fall inside RED's band).
    fn q_star(&self, timing: Timing) -> f64 {
        let p = self.p_star(timing);
        assert!(p < self.pmax, "p* = {p} is past Pmax {}: the queue has no fixed point inside the band", self.pmax);
        self.kmin + p / self.pmax * (self.kmax - self.kmin)
    }
}

/// `n`:1 incast on one switch at 100 Gb/s, DCQCN's paper variant with the DCQCN paper's
/// marking (Kmin 5 KB, Kmax 200 KB, Pmax 1 %), each sender with more to send than the run.
fn incast(n: usize, (kmin, kmax, pmax): (u64, u64, f64)) -> Model {
    let hosts = n + 1;
    let nodes: Vec<String> = (0..hosts).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
    let links: Vec<String> =
        (0..hosts).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }}")).collect();
    let text = format!(
        r#"[fabric]
name = "fixed-point"
[switch_models.sw]
preset = "ns3-reference"
ports = {hosts}
buffer_bytes = 32000000
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {} ]
link = [ {} ]
[[qos.class]]
name = "roce"
dscp = [26]
priority = 3
lossless = true
carries = ["rdma"]
ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {pmax} }}
[[qos.class]]
name = "cnp"
dscp = [48]
priority = 6
scheduler = "strict"
[[qos.class]]
name = "default"
dscp = [0]
priority = 0
[nic]
mtu = 4096
congestion_control = "dcqcn"
[nic.dcqcn]
variant = "paper"
[[traffic]]
pattern = "incast"
dst = "h0"
senders = {n}
size_bytes = 100000000000
"#,
        nodes.join(", "),
        links.join(", ")
    );
    load_str("fp.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

fn fluid_of(m: &Model, n: usize, (kmin, kmax, pmax): (u64, u64, f64)) -> Fluid {
    let d = &m.nics[0].dcqcn;
    let ps = |t: SimTime| t.0 as f64 * 1e-12;
    Fluid {
        n: n as f64,
        c_bps: 100e9,
        frame: (4096 + rocelab_sim::packet::DATA_OVERHEAD) as f64,
        tau: ps(d.cnp_interval),
        tau_alpha: ps(d.alpha_timer),
        timer: ps(d.increase_timer),
        byte_counter_bytes: d.byte_counter_bytes as f64,
        f: d.fast_recovery_steps as f64,
        rate_ai_bps: d.rate_ai.0 as f64,
        kmin: kmin as f64,
        kmax: kmax as f64,
        pmax,
        g: d.g,
    }
}

/// Time-average bottleneck queue (bytes, sampled every 1 µs) over each window, in µs.
fn queue_windows(m: &Model, windows: &[(u64, u64)]) -> Vec<f64> {
    let h = m.node_by_name("h0").unwrap();
    let port: PortId = m.port(PortId(m.node(h).first_port)).peer;
    let mut sim = build(m, SimOptions { seed: 5, ..SimOptions::default() }).unwrap();
    let mut out = Vec::new();
    for &(from, to) in windows {
        sim.run_until(SimTime::from_us(from));
        let (mut sum, mut k) = (0u128, 0u64);
        for t in from + 1..=to {
            sim.run_until(SimTime::from_us(t));
            sum += sim.queued_bytes(port) as u128;
            k += 1;
        }
        out.push(sum as f64 / k as f64);
    }
    out
}

/// The DCQCN paper's marking thresholds with a 10 % Pmax, so that the fixed point's p*
/// (about 1.2 %) falls inside RED's band (with its 1 % Pmax, p* lies past Pmax and the model
/// has no fixed point below Kmax).
const PAPER_BAND: (u64, u64, f64) = (5_000, 200_000, 0.1);

#[test]
fn the_fixed_point_solver_balances_the_model() {
    let m = incast(16, PAPER_BAND);
    let f = fluid_of(&m, 16, PAPER_BAND);
    for timing in [Timing::Model, Timing::Engine] {
        let p = f.p_star(timing);
        assert!(f.balance(p * 0.99, timing) < 0.0 && f.balance(p * 1.01, timing) > 0.0);
    }
    // By hand at p = 1.18 %: Rp = 6.25 Gb/s / (8 · 4,178 B) = 186,991 packets/s; one CNP per
    // τ window with a mark: a = 1 − 0.9882^9.35 = 0.105; the engine's holdoff gives a
    // CNP every 50 + 453 µs, 1,988/s against the model's 2,100/s: fewer cuts, a higher p*.
    assert!(f.p_star(Timing::Engine) > f.p_star(Timing::Model));
    let (qm, qe) = (f.q_star(Timing::Model), f.q_star(Timing::Engine));
    assert!(
        (qm - 27_943.0).abs() < 50.0 && (qe - 29_931.0).abs() < 50.0,
        "q* {qm:.0} B (model), {qe:.0} B (engine's timing)"
    );
    // With the paper's own 1 % Pmax p* is past the band.
    let f1 = fluid_of(&m, 16, (5_000, 200_000, 0.01));
    assert!(f1.p_star(Timing::Model) > 0.01);
}

/// The settling test: a 16:1 incast at 100 Gb/s, paper DCQCN, long-lived flows. After the
/// start-up transient (α starts at 1 and the first cuts empty the queue; α then converges by
/// (1 − g)^{m+1} ≈ 0.96 per CNP cycle of about 0.5 ms, a 12 ms time constant), the late
/// window's time-average
/// queue is within 10 % of the fixed point under the engine's CNP and α timing and within 5 %
/// of the window before it (no creep). The fluid model's own timing puts q* 6–7 % lower; the
/// measured queue is 13 % above that: the difference is the NP's holdoff and α's clock
/// restarting at each CNP (`Timing::Engine`), not a drift of the engine.
#[test]
fn dcqcn_16_to_1_settles_at_the_fluid_fixed_point() {
    let m = incast(16, PAPER_BAND);
    let f = fluid_of(&m, 16, PAPER_BAND);
    let (q_model, q_engine) = (f.q_star(Timing::Model), f.q_star(Timing::Engine));
    let w = queue_windows(&m, &[(30_000, 50_000), (50_000, 70_000)]);
    eprintln!("q* {q_model:.0} B (model timing), {q_engine:.0} B (engine timing); windows {w:?}");
    let late = w[1];
    assert!((late / q_engine - 1.0).abs() < 0.10, "late window {late:.0} B vs q* {q_engine:.0} B");
    assert!((late / w[0] - 1.0).abs() < 0.05, "creep: {:.0} B then {late:.0} B", w[0]);
    assert!(late > q_model, "the model's own timing undershoots: {q_model:.0} B vs {late:.0} B");
}

/// The same over the issue's horizon (the 20–60 ms and 100–200 ms windows) with the fabric
/// default marking band (Kmin 150 KB, Kmax 1.5 MB, Pmax 10 %). Slow in a debug build.
#[test]
#[ignore = "200 ms of simulated time, the crate's longest test (about 6 s alone in a debug build); run with --run-ignored"]
fn dcqcn_16_to_1_holds_its_fixed_point_to_200_ms() {
    let band = (150_000, 1_500_000, 0.1);
    let m = incast(16, band);
    let f = fluid_of(&m, 16, band);
    let q_engine = f.q_star(Timing::Engine);
    let w = queue_windows(&m, &[(20_000, 60_000), (100_000, 200_000)]);
    eprintln!("q* {:.0} B (model timing), {q_engine:.0} B (engine timing); windows {w:?}", f.q_star(Timing::Model));
    assert!((w[1] / q_engine - 1.0).abs() < 0.10, "late window {:.0} B vs q* {q_engine:.0} B", w[1]);
    assert!((w[1] / w[0] - 1.0).abs() < 0.05, "creep: {:.0} B then {:.0} B", w[0], w[1]);
}
