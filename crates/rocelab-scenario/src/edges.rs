//! Faults at their published timescales, run in edges.
//!
//! A switch is down for 150 s in a cold reboot, a NIC for 3 s in a firmware update: at packet
//! level under load that is billions of events, spent on a fabric that is steady for all but
//! the first and last milliseconds. So a fault scenario runs only its *edges* at packet level:
//!
//! * **the failure edge**: the background load runs until its steady-state test passes
//!   (`steady`: two successive windows agree), then the fault strikes, and the run goes on
//!   until the fabric has settled again on what is left (rerouted, PFC and DCQCN steady) or
//!   the horizon is reached;
//! * **the quiet middle** (the outage, seconds to minutes) is not simulated: the fabric there
//!   is what the failure edge settled into, so the figures that span the outage are computed
//!   from that settled window and the outage's length (`Middle`);
//! * **the return edge**: a second run starts with the fault in place, lets the same load
//!   settle, brings the ports, routes, switch or QPs back (each with its delay after the
//!   return), and runs until the fabric has settled again.
//!
//! An outage no longer than the horizon runs in one piece instead: strike and return in the
//! same run, then until settled. A fault for good (a lost link, a routing change) has no
//! return edge. A load that never settles before the strike leaves the scenario *not
//! converged*, which never passes. Which stretches ran and which were skipped is reported
//! ([`Edges`]): the simulated time of each run, the event and when it happened, whether the
//! load had settled before and after it, and each skipped stretch with its length.

use crate::fabric::Scale;
use crate::steady::{Steady, SteadyOptions, Tracker};
use crate::telemetry::{self, Series};
use rocelab_model::Diagnostic;
use rocelab_model::{Model, SimTime};
use rocelab_sim::engine::{Fault, FaultAction};
use rocelab_sim::traffic::Transport;
use rocelab_sim::workload::Message;
use rocelab_sim::{Sim, SimOptions, Snapshot};
use serde::Serialize;

/// A fault as its edges run it.
#[derive(Clone, Debug, Default)]
pub struct EdgePlan {
    /// What happens when the fault strikes, each its offset after the strike.
    pub strike: Vec<(SimTime, FaultAction)>,
    /// What happens when it ends, each its offset after the return (empty: for good).
    pub back: Vec<(SimTime, FaultAction)>,
    /// From the strike to the return; `None`: for good.
    pub outage: Option<SimTime>,
    /// Identical down/up cycles (a flapping link); 1 otherwise.
    pub cycles: u32,
    /// One cycle, strike to strike (a flapping link).
    pub period: SimTime,
    /// The kind's headline counts losses: summed over the runs and cycles.
    pub headline_sums: bool,
    /// Hosts whose own recovery is judged (a reset NIC's host): their ports' rate after the
    /// return against before the strike.
    pub watch: Vec<rocelab_model::NodeId>,
    /// A wait after the return not simulated, the fabric as during the outage (RDMA CM's
    /// reconnection after a NIC reset): its length and what it is.
    pub wait: Option<(SimTime, &'static str)>,
    /// Ports whose losses are the fault's own, for the headline (a rebooting switch's ports and
    /// their peers); empty: every link-down loss is.
    pub inside: Vec<rocelab_model::PortId>,
    /// What strikes and what returns, as the report names them.
    pub strike_is: &'static str,
    pub back_is: &'static str,
}

/// One packet-level run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Ran {
    /// `failure`, `return`, or `whole` (strike and return in one run).
    pub edge: &'static str,
    /// Simulated time of the run, from its start.
    pub from_us: f64,
    pub to_us: f64,
    /// What happened in it, and when (its first action).
    pub event: &'static str,
    pub event_at_us: f64,
    /// The load had settled before the event (else the event came at the horizon).
    pub settled_before: bool,
    /// The fabric settled again after the event's last action, before the horizon.
    pub settled_after: bool,
    /// µs from the event's last action to the end of the first window that agreed with the one
    /// before it: how long the fabric took to settle, to a window's resolution.
    pub settled_after_us: Option<f64>,
    pub events: u64,
}

/// A stretch not simulated at packet level.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Skipped {
    pub what: String,
    pub length_us: f64,
    /// How its figures were found instead.
    pub how: &'static str,
}

/// Which parts of a scenario ran at packet level, and which were skipped.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Edges {
    /// The outage, strike to return (each cycle's); `None`: for good.
    pub outage_us: Option<f64>,
    pub cycles: u32,
    pub ran: Vec<Ran>,
    pub skipped: Vec<Skipped>,
}

impl Edges {
    /// Simulated time at packet level, all runs.
    pub fn ran_us(&self) -> f64 {
        self.ran.iter().map(|r| r.to_us - r.from_us).fold(0.0, |a, b| a + b)
    }

    /// Time not simulated, all cycles: each skipped stretch as often as it recurs.
    pub fn skipped_us(&self) -> f64 {
        self.skipped.iter().map(|k| k.length_us * k_of(k, self.cycles)).fold(0.0, |a, b| a + b)
    }

    /// JUnit properties: one per run (`ran.<edge>`) and per skipped stretch (`skipped.<n>`),
    /// and the totals (`packet_level_us`, `skipped_us`).
    pub fn properties(&self) -> Vec<(String, String)> {
        let lines = self.lines();
        let mut v: Vec<(String, String)> =
            self.ran.iter().zip(&lines).map(|(r, l)| (format!("ran.{}", r.edge), l.clone())).collect();
        v.extend(lines.iter().skip(self.ran.len()).enumerate().map(|(i, l)| (format!("skipped.{}", i + 1), l.clone())));
        v.push(("packet_level_us".into(), format!("{:.0}", self.ran_us())));
        v.push(("skipped_us".into(), format!("{:.0}", self.skipped_us())));
        v
    }

    /// One line per run and per skipped stretch, as the text views print them.
    pub fn lines(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .ran
            .iter()
            .map(|r| {
                format!(
                    "ran {} edge at packet level: 0–{:.0} µs, {} at {:.0} µs ({}settled before; {}){}",
                    r.edge,
                    r.to_us,
                    r.event,
                    r.event_at_us,
                    if r.settled_before { "" } else { "NOT " },
                    match r.settled_after_us {
                        Some(t) if r.settled_after => format!("settled {t:.0} µs after"),
                        _ => "NOT settled after".into(),
                    },
                    format_args!(", {} events", r.events)
                )
            })
            .collect();
        v.extend(self.skipped.iter().map(|s| format!("skipped {}: {:.0} µs ({})", s.what, s.length_us, s.how)));
        v
    }
}

/// What one edge left: its telemetry, its counters, the settled windows before and after the
/// event, and when the event came.
pub struct EdgeRun {
    pub series: Series,
    pub snap: Snapshot,
    pub before: Option<Steady>,
    pub after: Option<Steady>,
    /// The event's first action, and its last.
    pub event_at: SimTime,
    pub last_action: SimTime,
    pub ran: Ran,
    /// Packets the settled window after the event lost per µs: to links down (or a frozen
    /// switch), otherwise, and on the plan's `inside` ports.
    pub after_loss_per_us: (f64, f64, f64),
}

/// Everything an edge run needs besides its faults.
pub struct EdgeInput<'a> {
    pub m: &'a Model,
    pub msgs: &'a [Message],
    pub transport: &'a [Transport],
    pub scale: &'a Scale,
    pub seed: u64,
    pub so: SteadyOptions,
    pub window: SimTime,
    pub horizon: SimTime,
    pub interval: SimTime,
    /// Ports whose losses are the fault's own (a rebooting switch's and its peers').
    pub inside: &'a [rocelab_model::PortId],
}

/// Runs one edge: `in_place` from the start (the fault as it stands, for a return edge), the
/// load until settled (not before `earliest`), then `actions` (offsets after that instant),
/// then until settled again after the last of them.
pub fn run_edge(
    inp: &EdgeInput,
    edge: &'static str,
    event: &'static str,
    in_place: &[FaultAction],
    actions: &[(SimTime, FaultAction)],
    earliest: SimTime,
) -> Result<EdgeRun, Vec<Diagnostic>> {
    let (m, window, horizon) = (inp.m, inp.window, inp.horizon);
    let span = actions.iter().map(|a| a.0).max().unwrap_or(SimTime::ZERO);
    let mut msgs = inp.msgs.to_vec();
    if !in_place.is_empty() {
        // The fault is in place before the first packet: the load starts 1 ns later.
        for msg in &mut msgs {
            msg.start = Some(msg.start.unwrap_or(SimTime::ZERO) + SimTime::from_ns(1));
        }
    }
    // A NIC reset destroys QPs: those of the load exist from 1 ns, so it comes at 2 ns.
    let faults = in_place
        .iter()
        .map(|a| Fault {
            at: if matches!(a, FaultAction::Qps { .. }) { SimTime::from_ns(2) } else { SimTime::ZERO },
            action: *a,
        })
        .collect();
    let n = msgs.len();
    let w = crate::Beside { main: None, bg: msgs, transport: inp.transport.to_vec(), n_bg: n };
    // The cap: a horizon to settle, the event, a horizon to settle again, one window to spare.
    let cap = SimTime(earliest.0.max(horizon.0) + span.0 + horizon.0 + window.0);
    let opts = SimOptions { seed: inp.seed, duration: Some(cap), recycle_qps: true, ..SimOptions::default() };
    let mut sim = Sim::with_workload(m, Box::new(w), faults, opts)?;
    let mut pre = Tracker::new(m, inp.so, window, horizon, inp.scale);
    let mut post: Option<Tracker> = None;
    let (mut at, mut last) = (None, SimTime::ZERO);
    // Drops by reason at each sample after the event, for the settled window's loss rates.
    let mut drops: Vec<(SimTime, u64, u64, u64)> = Vec::new();
    let link_down = rocelab_sim::stats::DropReason::LinkDown as usize;
    let (series, _) = telemetry::run_sampled_until(&mut sim, m, inp.interval, &mut |sim, cur| match &mut post {
        None => {
            let done = pre.sample(sim, cur);
            if done && cur.now >= earliest || cur.now >= horizon.max(earliest) {
                // The event's time: its first action's (the engine runs it after the events
                // already due at the sample, a few ns later at most).
                let t = cur.now;
                let first = actions.iter().map(|(o, a)| sim.schedule_fault(Fault { at: t + *o, action: *a })).min();
                let t = first.unwrap_or(t);
                at = Some(t);
                last = t + span;
                post = Some(Tracker::new(m, inp.so, window, last + horizon, inp.scale));
            }
            false
        }
        // The fault is still unfolding until its last action.
        Some(_) if cur.now <= last => false,
        Some(t) => {
            let c = &cur.counters;
            let inside: u64 = inp
                .inside
                .iter()
                .filter_map(|p| cur.ports.get(p.idx()))
                .map(|p| p.drops.iter().flatten().sum::<u64>())
                .sum();
            drops.push((cur.now, c.drops_by_reason[link_down], c.dropped - c.drops_by_reason[link_down], inside));
            t.sample(sim, cur)
        }
    });
    let snap = sim.snapshot();
    drop(sim);
    let before = pre.finish();
    let after = post.as_ref().and_then(|t| t.finish());
    let event_at = at.unwrap_or(snap.now);
    let settled_after = post.as_ref().is_some_and(|t| t.converged);
    let ran = Ran {
        edge,
        from_us: 0.0,
        to_us: snap.now.as_us_f64(),
        event,
        event_at_us: event_at.as_us_f64(),
        settled_before: pre.converged,
        settled_after,
        settled_after_us: after.as_ref().filter(|_| settled_after).map(|w| w.to_us - last.as_us_f64()),
        events: snap.events,
    };
    let after_loss_per_us = after.as_ref().map_or((0.0, 0.0, 0.0), |w| {
        let at = |us: f64| drops.iter().rev().find(|d| d.0.as_us_f64() <= us + 1e-6).copied();
        match (at(w.from_us), at(w.to_us)) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                let dt = (b.0 - a.0).as_us_f64();
                ((b.1 - a.1) as f64 / dt, (b.2 - a.2) as f64 / dt, (b.3 - a.3) as f64 / dt)
            }
            _ => (0.0, 0.0, 0.0),
        }
    });
    Ok(EdgeRun { series, snap, before, after, event_at, last_action: last, ran, after_loss_per_us })
}

/// The settled window that decides a fault scenario's convergence verdict: the first of
/// `windows` (in run order) that did not settle, else the failure edge's window after the
/// strike.
pub fn verdict_window(windows: &[Option<&Steady>]) -> Option<Steady> {
    if let Some(w) = windows.iter().flatten().find(|w| !w.converged) {
        return Some((*w).clone());
    }
    windows.get(1).copied().flatten().cloned()
}

/// Figures of the stretch between the edges, from the failure edge's settled windows and the
/// outage's length: goodput lost while the fault lasts, and the payload the fabric did not
/// carry because of it.
pub struct Middle {
    pub goodput_lost_bps: f64,
    /// (goodput before − goodput during) × outage × cycles / 8.
    pub bytes_not_delivered: Option<f64>,
}

pub fn middle(before: Option<&Steady>, after: Option<&Steady>, outage: Option<SimTime>, cycles: u32) -> Middle {
    let lost = match (before, after) {
        (Some(b), Some(a)) => ((b.goodput_gbps - a.goodput_gbps) * 1e9).max(0.0),
        _ => 0.0,
    };
    Middle {
        goodput_lost_bps: lost,
        bytes_not_delivered: outage.map(|o| lost * o.as_secs_f64() * cycles.max(1) as f64 / 8.0),
    }
}

/// Flows that moved nothing in the settled window after the strike (by message index), of
/// those still under way: they wait for their links, their QPs, or a transport timeout.
pub fn stalled(after: Option<&Steady>, snap: &Snapshot) -> Vec<usize> {
    let Some(w) = after else { return vec![] };
    w.flow_bytes
        .iter()
        .enumerate()
        .filter(|(i, b)| **b == 0 && snap.flows.get(*i).is_some_and(|f| f.finish.is_none()))
        .map(|(i, _)| i)
        .collect()
}

/// The figures a run in edges sums over its runs (and multiplies by its cycles): what was
/// lost, resent or signalled, which happens at the edges and not in the settled middle.
const SUMMED: &[&str] = &[
    "dropped_packets",
    "packets_lost_link_down",
    "packets_lost_elsewhere",
    "retransmitted_packets",
    "timeouts",
    "failed_qps",
];

/// A fault kind's scenario run in edges: `s.edge` is its plan.
pub(crate) fn run(
    cx: &crate::setup::Ctx,
    dm: &Model,
    mut s: crate::setup::Setup,
    so: &SteadyOptions,
) -> Result<crate::ScenarioResult, Vec<Diagnostic>> {
    use crate::evaluate::{self, Outcome};
    use rocelab_model::config::SustainedPattern;
    use serde_json::json;
    use std::collections::BTreeMap;
    let plan = s.edge.clone().unwrap_or_default();
    let num = |k: &str| cx.c.table.get(k).and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)));
    // A scenario's `duration_us` is each settling phase's horizon, as for the steady kinds.
    let (window, horizon, interval) = crate::steady::plan(so, num("duration_us"));
    // A given `at_us` is the earliest the fault strikes; it strikes once the load has settled.
    let earliest = num("at_us").map_or(SimTime::ZERO, |u| SimTime::from_secs_f64(u * 1e-6));
    let cycles = plan.cycles.max(1);
    let whole = plan.back.is_empty() || plan.outage.is_some_and(|o| o <= horizon);
    // In one piece: every cycle's strike and return, one period apart.
    let mut acts = plan.strike.clone();
    if whole {
        if let Some(o) = plan.outage {
            acts.extend(plan.back.iter().map(|(t, a)| (o + *t, *a)));
        }
        let one = acts.clone();
        let period = plan.period.max(plan.outage.unwrap_or(SimTime::ZERO));
        for k in 1..cycles as u64 {
            acts.extend(one.iter().map(|(t, a)| (*t + SimTime(k * period.0), *a)));
        }
    }
    let span = acts.iter().chain(&plan.back).map(|a| a.0).max().unwrap_or(SimTime::ZERO);
    let load = s.params.get("load").and_then(|v| v.as_f64()).unwrap_or(1.0);
    // The load lasts through both settling phases and the event.
    let dur = SimTime(earliest.0.max(horizon.0) + span.0 + horizon.0 + 2 * window.0);
    s.msgs = crate::setup::background(cx, SustainedPattern::Permutation, &cx.scale.hosts, dur, load);
    s.transport.clear();
    let inp = EdgeInput {
        m: dm,
        msgs: &s.msgs,
        transport: &s.transport,
        scale: &cx.scale,
        seed: cx.seed,
        so: *so,
        window,
        horizon,
        interval,
        inside: &plan.inside,
    };
    let relabel = |ds: Vec<Diagnostic>| crate::relabel(ds, &cx.path);
    let fail = if whole {
        run_edge(&inp, if plan.back.is_empty() { "failure" } else { "whole" }, plan.strike_is, &[], &acts, earliest)
    } else {
        run_edge(&inp, "failure", plan.strike_is, &[], &plan.strike, earliest)
    }
    .map_err(relabel)?;
    let in_place: Vec<FaultAction> = plan.strike.iter().map(|a| a.1).collect();
    let ret = if whole {
        None
    } else {
        Some(run_edge(&inp, "return", plan.back_is, &in_place, &plan.back, SimTime::ZERO).map_err(relabel)?)
    };
    // The report: where the fault struck, the settled windows, the runs and what was skipped.
    s.marks.at = fail.event_at;
    s.params.remove("duration_us");
    s.param("at_us", json!(fail.event_at.as_us_f64()));
    s.param("window_us", json!(window.as_us_f64()));
    s.param("horizon_us", json!(horizon.as_us_f64()));
    s.param("sample_us", json!(interval.as_us_f64()));
    let mut ran = vec![fail.ran.clone()];
    let mut skipped = vec![];
    if let (Some(r), Some(o)) = (&ret, plan.outage) {
        ran.push(r.ran.clone());
        // The failure edge covers the outage's start, the return edge's run up to the return
        // stands for its end (the same load on the same reduced fabric); the rest is skipped.
        let covered = fail.snap.now.saturating_sub(fail.event_at) + r.event_at;
        skipped.push(Skipped {
            what: format!(
                "the outage's settled middle{}",
                if cycles > 1 { format!(", each of {cycles} cycles") } else { String::new() }
            ),
            length_us: o.saturating_sub(covered).as_us_f64(),
            how: "computed: the fabric as the failure edge settled after the fault, for the outage's length",
        });
        if let Some((w, what)) = plan.wait {
            skipped.push(Skipped {
                what: what.to_string(),
                length_us: w.as_us_f64(),
                how: "computed: the fabric as the failure edge settled after the fault, for the wait's length; the return edge brings the links and the reconnection at once",
            });
        }
        if cycles > 1 && plan.period > o {
            let up = plan.period.saturating_sub(o).saturating_sub(r.snap.now.saturating_sub(r.last_action));
            skipped.push(Skipped {
                what: format!("the link up between cycles, {} times", cycles - 1),
                length_us: up.as_us_f64(),
                how: "computed: the fabric as the return edge settled after the link came back",
            });
        }
    }
    let edges = Edges { outage_us: plan.outage.map(|o| o.as_us_f64()), cycles, ran, skipped };
    // Each run evaluated as the kind does; the losses summed over the runs (and the cycles).
    let outcome = |r: &'_ EdgeRun| (r.before.clone(), r.after.clone());
    let (fb, fa) = outcome(&fail);
    let o = Outcome {
        snap: &fail.snap,
        series: &fail.series,
        collective: None,
        first_pause: None,
        steady: None,
        settled: Some((fb.as_ref(), fa.as_ref())),
    };
    let (mut value, mut metrics) = evaluate::evaluate(cx, dm, &s, &o);
    let sums_headline = plan.headline_sums;
    let mut events = fail.snap.events;
    if let Some(r) = &ret {
        let mut sr = crate::setup::Setup::new(None, s.horizon);
        sr.marks = s.marks.clone();
        sr.marks.at = r.event_at;
        sr.params = s.params.clone();
        let (rb, ra) = outcome(r);
        let ro = Outcome {
            snap: &r.snap,
            series: &r.series,
            collective: None,
            first_pause: None,
            steady: None,
            settled: Some((rb.as_ref(), ra.as_ref())),
        };
        let (rv, rm) = evaluate::evaluate(cx, dm, &sr, &ro);
        let k = cycles as f64;
        for name in SUMMED {
            if let (Some(Some(a)), Some(Some(b))) = (metrics.get(name).copied(), rm.get(name).copied()) {
                metrics.insert(name, Some((a + b) * k));
            }
        }
        if sums_headline {
            value = value.zip(rv).map(|(a, b)| (a + b) * k);
        }
        metrics.insert("return_goodput_before_gbps", rb.as_ref().map(|w| w.goodput_gbps));
        metrics.insert("return_goodput_gbps", ra.as_ref().map(|w| w.goodput_gbps));
        metrics.insert("return_settled_after_us", r.ran.settled_after_us.filter(|_| r.ran.settled_after));
        metrics.insert("return_recovery_us", recovery(&r.series, r.last_action, ra.as_ref()));
        events += r.snap.events;
    }
    if let (Some(r), false) = (&ret, plan.watch.is_empty()) {
        // The reset hosts' own recovery: their ports' rate after the return against before
        // the strike, and how soon after the return it was back to 90 % of it.
        let ports: Vec<rocelab_model::PortId> = plan.watch.iter().flat_map(|h| dm.node(*h).ports()).collect();
        let rate = |series: &Series, w: Option<&Steady>| {
            let w = w?;
            let (t0, t1) = (SimTime::from_secs_f64(w.from_us * 1e-6), SimTime::from_secs_f64(w.to_us * 1e-6));
            let dt = series.at(t1).time.0.saturating_sub(series.at(t0).time.0).max(1) as f64 * 1e-12;
            Some(crate::evaluate::tx_between(series, &ports, t0, t1) as f64 * 8.0 / dt)
        };
        let before = rate(&fail.series, fb.as_ref());
        let after = rate(&r.series, r.after.as_ref());
        metrics.insert("reset_host_gbps_before", before.map(|b| b / 1e9));
        metrics.insert("reset_host_gbps_after", after.map(|b| b / 1e9));
        metrics.insert("rate_after_reconnect", before.zip(after).filter(|(b, _)| *b > 0.0).map(|(b, a)| a / b));
        let back = before.and_then(|b| {
            r.series.samples.windows(2).filter(|w| w[0].time >= r.last_action).find(|w| {
                let dt = w[1].time.0.saturating_sub(w[0].time.0).max(1) as f64 * 1e-12;
                let bytes: u64 = ports.iter().map(|p| w[1].tx[p.idx()] - w[0].tx[p.idx()]).sum();
                bytes as f64 * 8.0 / dt >= 0.9 * b
            })
        });
        let rec = back.map(|w| w[1].time.saturating_sub(r.last_action));
        metrics.insert("recovery_us", rec.map(|t| t.as_us_f64()));
        // The reset's whole cost to the host over the least the outage allows.
        let least = plan.outage.unwrap_or_default() + plan.wait.map_or(SimTime::ZERO, |w| w.0);
        value = rec.map(|t| (least + t).0 as f64 / least.0.max(1) as f64);
    }
    let mid = middle(fb.as_ref(), fa.as_ref(), plan.outage.filter(|_| !whole), cycles);
    metrics.insert("outage_us", plan.outage.map(|o| o.as_us_f64()));
    metrics.insert("goodput_lost_gbps", Some(mid.goodput_lost_bps / 1e9));
    metrics.insert("outage_undelivered_bytes", mid.bytes_not_delivered);
    metrics.insert("settled_after_fault_us", fail.ran.settled_after_us.filter(|_| fail.ran.settled_after));
    metrics.insert("packet_level_us", Some(edges.ran_us()));
    metrics.insert("skipped_us", Some(edges.skipped_us()));
    // Flows that moved nothing after the strike get no acknowledgement: their QPs time out
    // every transport timeout and go to the error state after retry_cnt + 1 of them (IB's
    // local ACK timeout and retry count; NCCL's 4.3 s and 7: 34.4 s). An outage that long
    // fails them (the job's communicator aborts); a shorter one they wait out.
    let waiting = stalled(fa.as_ref(), &fail.snap);
    let timeout = waiting
        .iter()
        .filter_map(|i| fail.snap.flows.get(*i))
        .filter_map(|f| dm.nic_of(f.src).retransmit_timeout.map(|t| (t, dm.nic_of(f.src).retry_cnt)))
        .min();
    let give_up = timeout.map(|(t, retries)| SimTime(t.0 * (retries as u64 + 1)));
    let gives_up = give_up.filter(|g| plan.outage.is_some_and(|o| !whole && *g < o));
    metrics.insert("stalled_flows", Some(waiting.len() as f64));
    metrics.insert("stalled_give_up_us", give_up.map(|g| g.as_us_f64()));
    let failed_here = if gives_up.is_some() { waiting.len() as f64 * cycles as f64 } else { 0.0 };
    metrics.insert("qps_failed_in_outage", Some(failed_here));
    // Packets lost in the skipped middle: the settled window's loss rates for its length (a
    // warm reboot's neighbours keep sending into the frozen switch; a partitioned fabric's
    // senders into routes that end), until the stalled QPs give up.
    let mut middle_us = edges.skipped.first().filter(|k| k.what.starts_with("the outage")).map_or(0.0, |k| k.length_us);
    if let Some(g) = gives_up {
        let after_strike = fail.snap.now.saturating_sub(fail.event_at);
        middle_us = middle_us.min(g.saturating_sub(after_strike).as_us_f64());
    }
    let k = middle_us * cycles as f64;
    let (rd, ro, ri) = fail.after_loss_per_us;
    let (down_lost, other_lost, inside_lost) = ((rd * k).round(), (ro * k).round(), (ri * k).round());
    let all_lost = down_lost + other_lost;
    metrics.insert("outage_lost_packets", Some(all_lost));
    // Outside the fault's own ports: every loss but those (a partitioned fabric's leaves drop
    // what has no route any more).
    let elsewhere = if plan.inside.is_empty() { other_lost } else { (all_lost - inside_lost).max(0.0) };
    for (name, add) in
        [("dropped_packets", all_lost), ("packets_lost_link_down", down_lost), ("packets_lost_elsewhere", elsewhere)]
    {
        if let Some(Some(v)) = metrics.get(name).copied() {
            metrics.insert(name, Some(v + add));
        }
    }
    if plan.headline_sums {
        value = value.map(|v| v + if plan.inside.is_empty() { down_lost } else { inside_lost });
    }
    // Whether they moved again after the return (then they waited the outage, no longer), or
    // gave up first.
    if let Some(r) = &ret {
        let after = stalled(r.after.as_ref(), &r.snap).len();
        metrics.insert("return_stalled_flows", Some(after as f64));
        // Still stalled after the return: their packets died and none of theirs is left to
        // reveal the gap, so they resume at their first transport timeout after it.
        let waited = match (gives_up, plan.outage) {
            _ if waiting.is_empty() => Some(SimTime::ZERO),
            (Some(g), _) => Some(g),
            (None, Some(o)) if after == 0 => Some(o),
            (None, Some(o)) => timeout.map(|(t, _)| SimTime(o.0.div_ceil(t.0.max(1)) * t.0)),
            (None, None) => None,
        };
        metrics.insert("stalled_wait_us", waited.map(|w| w.as_us_f64()));
    }
    let steady = verdict_window(&[
        fb.as_ref(),
        fa.as_ref(),
        ret.as_ref().and_then(|r| r.before.as_ref()),
        ret.as_ref().and_then(|r| r.after.as_ref()),
    ]);
    let metrics: BTreeMap<&'static str, Option<f64>> =
        metrics.into_iter().map(|(k, v)| (k, v.filter(|x| x.is_finite()))).collect();
    let units = metrics.keys().map(|k| (*k, evaluate::unit_of(k))).collect();
    let report = rocelab_sim::RunReport::from_snapshot(&fail.snap, dm);
    let info = cx.c.kind.info();
    Ok(crate::ScenarioResult {
        scenario: cx.c.display_name().to_string(),
        kind: info.name,
        fabric: report.fabric.clone(),
        fabric_hash: report.fabric_hash.clone(),
        seed: cx.seed,
        params: s.params.clone(),
        headline: crate::Headline {
            metric: info.headline,
            value: value.filter(|v| v.is_finite()),
            unit: info.headline_unit,
        },
        metrics,
        simulated_us: edges.ran_us(),
        events,
        stopped_at_duration: fail.snap.stopped_at_duration,
        timeseries: crate::SeriesInfo {
            file: "timeseries.csv",
            interval_us: interval.as_us_f64(),
            samples: fail.series.samples.len(),
            rows: fail.series.rows.len(),
            rows_dropped: fail.series.rows_dropped,
        },
        steady,
        edges: Some(edges),
        units,
        series_csv: fail.series.csv(dm),
        report,
    })
}

/// How many times a skipped stretch recurs: the outage's middle once per cycle, the link up
/// between cycles once fewer.
fn k_of(k: &Skipped, cycles: u32) -> f64 {
    if k.what.starts_with("the link up") {
        cycles.saturating_sub(1) as f64
    } else {
        cycles as f64
    }
}

/// µs from `from` until the fabric's goodput first reaches 90 % of the settled window's,
/// at the telemetry's resolution (`None`: never, or nothing settled to compare with).
pub fn recovery(series: &Series, from: SimTime, settled: Option<&Steady>) -> Option<f64> {
    let target = settled?.goodput_gbps * 1e9 * 0.9;
    series
        .samples
        .windows(2)
        .filter(|w| w[0].time >= from)
        .find(|w| {
            let dt = w[1].time.0.saturating_sub(w[0].time.0).max(1) as f64 * 1e-12;
            (w[1].payload_delivered - w[0].payload_delivered) as f64 * 8.0 / dt >= target
        })
        .map(|w| w[1].time.saturating_sub(from).as_us_f64())
}
