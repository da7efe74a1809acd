//! Steady state: the kinds that model a load held indefinitely (`sustained`, `hotspot`,
//! `firmware-mix`) run past their warm-up and are judged on a window whose figures have
//! converged, not on whatever the fabric was doing when a fixed duration ran out.
//!
//! The run is cut into back-to-back windows of `window` (default [`WINDOW_US`]). At the end of
//! each window from the second on, the window is compared with the one before it; the run
//! stops at the first window that agrees with its predecessor on every figure below, or at the
//! horizon (default [`HORIZON_US`], or the scenario's `duration_us`). The last window is the
//! one judged. A run that reached the horizon without two agreeing windows is *not
//! converged*: its figures are reported, and a checklist must not pass it.
//!
//! Two windows agree when, with `tol` the relative tolerance (default [`TOLERANCE`]):
//! * fabric goodput (payload delivered): |a − b| ≤ tol · max(a, b);
//! * the switches' buffer occupancy, time-averaged over the window and summed over switches:
//!   |a − b| ≤ tol · max(a, b) + max(one bandwidth-delay product, [`BUFFER_FLOOR`] of the
//!   fabric's switch buffer): DCQCN's sawtooth moves a healthy fabric's queues by a few
//!   percent of its buffer, while a fabric still filling its buffer moves by more;
//! * the largest share of the window any port and priority spent paused by PFC:
//!   |a − b| ≤ max([`SHARE_TOLERANCE`], tol · max(a, b)).
//!
//! The deepest single queue is reported, not tested: a maximum over thousands of ports moves
//! from port to port while the fabric as a whole holds steady.
//! * the per-flow rates (bytes each source–destination pair delivered in the window):
//!   Σ|aᵢ − bᵢ| ≤ 2 · tol · Σ max(aᵢ, bᵢ) (DCQCN's sawtooth moves single flows more than sums).
//!
//! Time averages are taken over the telemetry's samples (ten per window).

use crate::fabric::Scale;
use rocelab_model::{Model, NodeId, PortId, SimTime};
use rocelab_sim::stats::Histogram;
use rocelab_sim::{Sim, Snapshot};
use serde::Serialize;
use std::collections::BTreeMap;

/// Default window, µs: several DCQCN rate-increase periods (ConnectX: 55 µs timers in the
/// mlx5 variant) and long enough to average a PFC pause/resume cycle.
pub const WINDOW_US: f64 = 200.0;
/// Default horizon, µs: what the shipped 400 G examples need to settle (docs/validate.md has
/// the measurements).
pub const HORIZON_US: f64 = 2000.0;
/// Default relative tolerance between two windows.
pub const TOLERANCE: f64 = 0.05;
/// Absolute tolerance on the paused share between two windows.
pub const SHARE_TOLERANCE: f64 = 0.02;
/// Share of the fabric's switch buffer (all switches) below which a change of occupancy
/// between windows is noise: DCQCN's sawtooth moves a healthy fabric's queues by that much.
pub const BUFFER_FLOOR: f64 = 0.02;
/// Telemetry samples per window.
pub const SAMPLES_PER_WINDOW: u64 = 10;

/// How a steady-state run is cut and judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SteadyOptions {
    pub window_us: f64,
    /// `None`: the scenario's `duration_us`, else [`HORIZON_US`].
    pub horizon_us: Option<f64>,
    pub tolerance: f64,
    pub share_tolerance: f64,
}

impl Default for SteadyOptions {
    fn default() -> Self {
        SteadyOptions { window_us: WINDOW_US, horizon_us: None, tolerance: TOLERANCE, share_tolerance: SHARE_TOLERANCE }
    }
}

/// One figure of the convergence test: its value in the window before the judged one and in
/// the judged one.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Agreement {
    pub figure: &'static str,
    pub unit: &'static str,
    pub previous: f64,
    pub last: f64,
    /// The largest difference allowed, in `unit` (for the flow rates: of the L1 distance).
    pub allowed: f64,
    pub agree: bool,
}

/// The steady-state verdict of a run and the judged window's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Steady {
    pub window_us: f64,
    pub horizon_us: f64,
    pub converged: bool,
    /// The judged window.
    pub from_us: f64,
    pub to_us: f64,
    pub agreement: Vec<Agreement>,
    /// Every window's figures in order, each with whether it agreed with the one before: how
    /// the run settled.
    pub windows: Vec<WindowFigures>,
    /// Figures of the judged window.
    pub goodput_gbps: f64,
    pub buffer_mean_bytes: f64,
    pub deepest_queue_mean_bytes: f64,
    pub deepest_queue_port: Option<String>,
    pub paused_share_max: f64,
    /// `node:port priority P` of the most paused port.
    pub paused_port: Option<String>,
    pub queue_delay_p50_us: f64,
    pub queue_delay_p99_us: f64,
    pub queue_delay_max_us: f64,
    pub cnp_count: u64,
    pub cnp_delay_p50_us: f64,
    pub cnp_delay_p99_us: f64,
    pub cnp_delay_max_us: f64,
    /// Payload bytes each message delivered in the window, by message index (what the
    /// kinds' own figures are computed from).
    #[serde(skip)]
    pub flow_bytes: Vec<u64>,
}

/// One window's figures as the convergence test saw them.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WindowFigures {
    pub to_us: f64,
    pub goodput_gbps: f64,
    pub buffer_mean_bytes: f64,
    pub paused_share_max: f64,
    /// The figures (of [`Agreement`]) that differ from the previous window's.
    pub differs: Vec<&'static str>,
}

/// The counters at a window boundary.
struct Mark {
    time: SimTime,
    payload: u64,
    paused_ps: Vec<[u64; 8]>,
    flows: Vec<(NodeId, NodeId, u64)>,
    qdelay: Histogram,
    cnp: Histogram,
}

impl Mark {
    fn of(snap: &Snapshot) -> Mark {
        Mark {
            time: snap.now,
            payload: snap.counters.payload_delivered_bytes,
            paused_ps: snap.ports.iter().map(|p| p.paused_ps).collect(),
            flows: snap.flows.iter().map(|f| (f.src, f.dst, f.delivered_bytes)).collect(),
            qdelay: snap.queue_delay.clone(),
            cnp: snap.cnp_queue_delay.clone(),
        }
    }
}

/// A closed window's figures.
struct Window {
    from: SimTime,
    to: SimTime,
    goodput_bps: f64,
    buffer_mean: f64,
    queue_mean: f64,
    queue_port: Option<PortId>,
    paused_share: f64,
    paused_at: Option<(PortId, usize)>,
    /// Bytes per source–destination pair, in pair order.
    pair_bytes: Vec<f64>,
    flow_bytes: Vec<u64>,
    qdelay: Histogram,
    cnp: Histogram,
}

/// Follows a run window by window and says when to stop.
pub struct Tracker<'a> {
    m: &'a Model,
    opts: SteadyOptions,
    window: SimTime,
    horizon: SimTime,
    /// Occupancy changes below this are noise (bytes).
    buffer_floor: f64,
    start: Option<Mark>,
    /// Per switch port: the sum of its queued bytes over this window's samples.
    queue_sum: Vec<f64>,
    buffer_sum: f64,
    samples: u32,
    windows: Vec<Window>,
    history: Vec<WindowFigures>,
    pub converged: bool,
}

/// The window and horizon a run gets: the window no longer than half the horizon (two windows
/// must fit), both whole multiples of the sampling interval.
pub fn plan(opts: &SteadyOptions, duration_us: Option<f64>) -> (SimTime, SimTime, SimTime) {
    let horizon = SimTime::from_secs_f64(opts.horizon_us.or(duration_us).unwrap_or(HORIZON_US).max(1e-3) * 1e-6);
    let window = SimTime::from_secs_f64(opts.window_us.max(1e-3) * 1e-6).min(SimTime(horizon.0 / 2)).max(SimTime(1000));
    let interval = SimTime((window.0 / SAMPLES_PER_WINDOW).div_ceil(1000).max(1) * 1000);
    let window = SimTime(interval.0 * SAMPLES_PER_WINDOW);
    let horizon = SimTime(horizon.0.div_ceil(window.0).max(2) * window.0);
    (window, horizon, interval)
}

impl<'a> Tracker<'a> {
    pub fn new(m: &'a Model, opts: SteadyOptions, window: SimTime, horizon: SimTime, scale: &Scale) -> Tracker<'a> {
        Tracker {
            m,
            opts,
            window,
            horizon,
            buffer_floor: (scale.bdp_bytes as f64).max(
                BUFFER_FLOOR
                    * m.switches()
                        .filter_map(|s| m.switch_model_of(s))
                        .map(|x| x.params.buffer_bytes as f64)
                        .sum::<f64>(),
            ),
            start: None,
            queue_sum: vec![0.0; m.ports.len()],
            buffer_sum: 0.0,
            samples: 0,
            windows: Vec::new(),
            history: Vec::new(),
            converged: false,
        }
    }

    /// Hears one telemetry sample (`cur`, the counters' totals); returns true to stop the run.
    pub fn sample(&mut self, sim: &Sim, cur: &Snapshot) -> bool {
        if self.start.is_none() {
            self.start = Some(Mark::of(&sim.snapshot()));
            return false;
        }
        for p in &cur.ports {
            if !self.m.node(p.node).is_host() {
                self.queue_sum[p.port.idx()] += p.queued_bytes.iter().sum::<u64>() as f64;
            }
        }
        self.buffer_sum += cur.switches.iter().map(|s| s.used_bytes as f64).sum::<f64>();
        self.samples += 1;
        let start = self.start.as_ref().map_or(SimTime::ZERO, |s| s.time);
        if cur.now < start + self.window && cur.now < self.horizon {
            return false;
        }
        let end = Mark::of(&sim.snapshot());
        let w = self.close(&end);
        if self.windows.len() == 2 {
            self.windows.remove(0);
        }
        self.windows.push(w);
        self.start = Some(end);
        let agreement = self.agreement();
        let w = &self.windows[self.windows.len() - 1];
        self.history.push(WindowFigures {
            to_us: w.to.as_us_f64(),
            goodput_gbps: w.goodput_bps / 1e9,
            buffer_mean_bytes: w.buffer_mean,
            paused_share_max: w.paused_share,
            differs: if agreement.is_empty() {
                vec!["(first window)"]
            } else {
                agreement.iter().filter(|a| !a.agree).map(|a| a.figure).collect()
            },
        });
        if self.windows.len() >= 2 && agreement.iter().all(|a| a.agree) {
            self.converged = true;
            return true;
        }
        cur.now >= self.horizon
    }

    fn close(&mut self, end: &Mark) -> Window {
        let a = self.start.as_ref().expect("a window has a start");
        let dt = end.time.saturating_sub(a.time).0.max(1);
        let n = self.samples.max(1) as f64;
        let (mut queue_mean, mut queue_port) = (0.0, None);
        for (i, s) in self.queue_sum.iter_mut().enumerate() {
            if *s / n > queue_mean {
                queue_mean = *s / n;
                queue_port = Some(PortId(i as u32));
            }
            *s = 0.0;
        }
        let (mut paused_share, mut paused_at) = (0.0, None);
        for (i, (x, y)) in end.paused_ps.iter().zip(&a.paused_ps).enumerate() {
            for pi in 0..8 {
                let share = x[pi].saturating_sub(y[pi]) as f64 / dt as f64;
                if share > paused_share {
                    paused_share = share;
                    paused_at = Some((PortId(i as u32), pi));
                }
            }
        }
        let mut pairs: BTreeMap<(NodeId, NodeId), f64> = BTreeMap::new();
        let mut flow_bytes = Vec::with_capacity(end.flows.len());
        for (i, &(src, dst, b)) in end.flows.iter().enumerate() {
            let before = a.flows.get(i).map_or(0, |f| f.2);
            flow_bytes.push(b.saturating_sub(before));
            *pairs.entry((src, dst)).or_default() += b.saturating_sub(before) as f64;
        }
        let w = Window {
            from: a.time,
            to: end.time,
            goodput_bps: end.payload.saturating_sub(a.payload) as f64 * 8.0 / (dt as f64 * 1e-12),
            buffer_mean: self.buffer_sum / n,
            queue_mean,
            queue_port,
            paused_share,
            paused_at,
            pair_bytes: pairs.into_values().collect(),
            flow_bytes,
            qdelay: end.qdelay.since(&a.qdelay),
            cnp: end.cnp.since(&a.cnp),
        };
        self.buffer_sum = 0.0;
        self.samples = 0;
        w
    }

    /// The convergence test between the last two windows (empty before two).
    fn agreement(&self) -> Vec<Agreement> {
        let k = self.windows.len();
        if k < 2 {
            return Vec::new();
        }
        let (a, b) = (&self.windows[k - 2], &self.windows[k - 1]);
        let tol = self.opts.tolerance;
        let rel = |figure, unit, x: f64, y: f64, floor: f64| {
            let allowed = tol * x.max(y) + floor;
            Agreement { figure, unit, previous: x, last: y, allowed, agree: (x - y).abs() <= allowed }
        };
        let l1: f64 = a.pair_bytes.iter().zip(&b.pair_bytes).map(|(x, y)| (x - y).abs()).sum();
        let sum_max: f64 = a.pair_bytes.iter().zip(&b.pair_bytes).map(|(x, y)| x.max(*y)).sum();
        let flows_allowed = 2.0 * tol * sum_max;
        let share_allowed = self.opts.share_tolerance.max(tol * a.paused_share.max(b.paused_share));
        let flows_ok = a.pair_bytes.len() == b.pair_bytes.len() && l1 <= flows_allowed;
        vec![
            rel("goodput", "Gb/s", a.goodput_bps / 1e9, b.goodput_bps / 1e9, 0.0),
            rel(
                "switch buffer occupancy, time-averaged, all switches",
                "B",
                a.buffer_mean,
                b.buffer_mean,
                self.buffer_floor,
            ),
            Agreement {
                figure: "largest paused share of a port and priority",
                unit: "paused time / window",
                previous: a.paused_share,
                last: b.paused_share,
                allowed: share_allowed,
                agree: (a.paused_share - b.paused_share).abs() <= share_allowed,
            },
            Agreement {
                figure: "per-flow rates (L1 distance between the windows)",
                unit: "B",
                previous: 0.0,
                last: l1,
                allowed: flows_allowed,
                agree: flows_ok,
            },
        ]
    }

    /// The verdict and the judged (last) window's figures; `None` if no window closed.
    pub fn finish(&self) -> Option<Steady> {
        let w = self.windows.last()?;
        let us = |ps: u64| ps as f64 * 1e-6;
        let m = self.m;
        Some(Steady {
            window_us: self.window.as_us_f64(),
            horizon_us: self.horizon.as_us_f64(),
            converged: self.converged,
            from_us: w.from.as_us_f64(),
            to_us: w.to.as_us_f64(),
            agreement: self.agreement(),
            windows: self.history.clone(),
            goodput_gbps: w.goodput_bps / 1e9,
            buffer_mean_bytes: w.buffer_mean,
            deepest_queue_mean_bytes: w.queue_mean,
            deepest_queue_port: w.queue_port.map(|p| m.port_name(p)),
            paused_share_max: w.paused_share,
            paused_port: w.paused_at.map(|(p, pi)| format!("{} priority {pi}", m.port_name(p))),
            queue_delay_p50_us: us(w.qdelay.quantile(0.5)),
            queue_delay_p99_us: us(w.qdelay.quantile(0.99)),
            queue_delay_max_us: us(w.qdelay.max()),
            cnp_count: w.cnp.count(),
            cnp_delay_p50_us: us(w.cnp.quantile(0.5)),
            cnp_delay_p99_us: us(w.cnp.quantile(0.99)),
            cnp_delay_max_us: us(w.cnp.max()),
            flow_bytes: w.flow_bytes.clone(),
        })
    }
}
