//! The pre-production checklist's stress scenarios as named, parameterized building blocks.
//! Read this page first.
//!
//! A fabric file's `[[scenario]]` table (`rocelab_model::config::ScenarioConfig`) names a kind
//! and any parameters; every parameter left out takes a default scaled to the fabric
//! (`fabric::Scale`: the hosts, their line rate, the bandwidth-delay product), so a bare
//! `kind = "incast"` means something sensible on 16 hosts and on 1,024. [`run`] turns one into
//! a run of the packet engine and returns a [`ScenarioResult`]: a headline metric, the other
//! figures the kind reports, the parameters as resolved, and the telemetry over time.
//!
//! | module | owns |
//! |---|---|
//! | `kinds` | one file per kind: its setup and its evaluation (its typed parameters and defaults: the file of the same name in `rocelab_model::scenario`) |
//! | `check` | what a check of the checklist is (each kind lists its own) |
//! | `catalog` | `scenarios --list`, from each kind's parameter table |
//! | `fabric` | the fabric's scale, hop distances, spine uplinks and spines |
//! | `setup` | what setups are built from: messages, faults, fleet changes, checked parameter readers |
//! | `evaluate` | the figures every kind reports, and the readers a kind's evaluation uses |
//! | `edges` | the fault kinds at their published timescales: the failure and return edges at packet level, the outage between them computed |
//! | `telemetry` | the sampled run and `timeseries.csv` (long format, bounded) |
//!
//! A scenario runs its own traffic and faults, not the file's `[[traffic]]` and `[[fault]]`
//! (those are what plain `simulate` runs). Everything is built on the engine's public API:
//! the workload API, `engine::Fault`, the counter snapshot; the fleet changes go through the
//! fabric file's own schema (`[nic_profiles]`, `[qos.pfc_watchdog]`, `[routing]`) and are
//! validated as a file is. Same file + seed → byte-identical results.

pub mod catalog;
pub mod check;
pub mod edges;
mod evaluate;
pub mod fabric;
pub mod kinds;
pub mod setup;
pub mod steady;
pub mod telemetry;

pub use kinds::{collective_spec, ideal_time, non_blocking, IDEAL_METRIC};
use rocelab_model::config::{NicAssign, ScenarioConfig, ScenarioKind};
use rocelab_model::PortId;
use rocelab_model::{Diagnostic, Model, SimTime};
use rocelab_sim::observer::{Observed, Observer};
use rocelab_sim::traffic::Transport;
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use rocelab_sim::{RunReport, Sim, SimOptions};
use serde::Serialize;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Records the first PFC pause `port` receives.
struct FirstPause {
    port: PortId,
    at: Rc<Cell<Option<SimTime>>>,
}

impl Observer for FirstPause {
    fn observe(&mut self, e: &Observed) {
        if let Observed::PfcReceived { time, port, pause: true, .. } = *e {
            if port == self.port && self.at.get().is_none() {
                self.at.set(Some(time));
            }
        }
    }
}

/// Background messages posted at the start, beside an optional main workload (a collective)
/// that hears only its own deliveries.
pub(crate) struct Beside {
    pub main: Option<Box<dyn Workload>>,
    pub bg: Vec<Message>,
    /// How each of `bg` is paced (empty: all RDMA).
    pub transport: Vec<Transport>,
    pub n_bg: usize,
}

impl Workload for Beside {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        for (i, m) in self.bg.drain(..).enumerate() {
            // Built from the model's hosts with checked sizes: nothing to refuse.
            let _ = net.post_with(m, self.transport.get(i).copied().unwrap_or_default());
        }
        if let Some(w) = &mut self.main {
            w.start(net);
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        if (done.msg as usize) >= self.n_bg {
            if let Some(w) = &mut self.main {
                w.on_delivered(done, net);
            }
        }
    }

    fn on_wake(&mut self, tag: u64, net: &mut Net<'_, '_>) {
        if let Some(w) = &mut self.main {
            w.on_wake(tag, net);
        }
    }

    fn wants_deliveries(&self) -> bool {
        self.main.as_ref().is_some_and(|w| w.wants_deliveries())
    }
}

/// The headline metric of a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Headline {
    pub metric: &'static str,
    /// `None` when the run did not produce it (e.g. an incast that never completed).
    pub value: Option<f64>,
    pub unit: &'static str,
}

/// The telemetry's shape, for the JSON result.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SeriesInfo {
    pub file: &'static str,
    pub interval_us: f64,
    pub samples: usize,
    pub rows: usize,
    pub rows_dropped: u64,
}

/// What a scenario run reports: verdict-ready (a checklist compares `headline.value` and
/// `metrics` with its thresholds).
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioResult {
    pub scenario: String,
    pub kind: &'static str,
    pub fabric: String,
    pub fabric_hash: String,
    pub seed: u64,
    pub params: BTreeMap<String, serde_json::Value>,
    pub headline: Headline,
    pub metrics: BTreeMap<&'static str, Option<f64>>,
    pub simulated_us: f64,
    pub events: u64,
    pub stopped_at_duration: bool,
    pub timeseries: SeriesInfo,
    /// The steady-state kinds' convergence verdict and judged window (`steady`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<steady::Steady>,
    /// The fault kinds: which edges ran at packet level and which stretches were skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edges: Option<edges::Edges>,
    /// The unit of every metric, by name.
    pub units: BTreeMap<&'static str, &'static str>,
    /// `timeseries.csv`.
    #[serde(skip)]
    pub series_csv: String,
    /// The engine's report of the run (`summary.json`).
    #[serde(skip)]
    pub report: RunReport,
}

impl ScenarioResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// A human table.
    pub fn render_text(&self) -> String {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.4}"));
        let mut o = format!(
            "scenario `{}` ({}) on `{}` (seed {}, fabric {}): {:.1} µs simulated, {} events\n",
            self.scenario, self.kind, self.fabric, self.seed, self.fabric_hash, self.simulated_us, self.events
        );
        o += &format!(
            "  headline  {:<34} {:>14}   {}\n",
            self.headline.metric,
            f(self.headline.value),
            self.headline.unit
        );
        for (k, v) in &self.metrics {
            o += &format!("            {k:<34} {:>14}   {}\n", f(*v), self.units.get(k).copied().unwrap_or(""));
        }
        if let Some(st) = &self.steady {
            o += &format!(
                "  steady    {} (windows of {:.0} µs, horizon {:.0} µs); judged on {:.0}–{:.0} µs\n",
                if st.converged { "converged" } else { "NOT converged" },
                st.window_us,
                st.horizon_us,
                st.from_us,
                st.to_us
            );
            for a in &st.agreement {
                o += &format!(
                    "            {:<52} {} → {} {} (allowed ±{}){}\n",
                    a.figure,
                    short(a.previous),
                    short(a.last),
                    a.unit,
                    short(a.allowed),
                    if a.agree { "" } else { "  differs" }
                );
            }
        }
        if let Some(ed) = &self.edges {
            for l in ed.lines() {
                o += &format!("  edges     {l}\n");
            }
        }
        let ps: Vec<String> = self.params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        o += &format!("  params    {}\n", ps.join(", "));
        o
    }
}

/// A figure with four significant digits at most, as the text views print it.
pub fn short(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

/// The scenario `name` of the file (by `name`, or by kind when unnamed), or a bare kind with
/// every parameter at its default. Returns it and its key path (`scenario[2]`, or `scenario`).
pub fn find(m: &Model, name: &str) -> Result<(ScenarioConfig, String), Diagnostic> {
    if let Some((i, c)) = m.config.scenario.iter().enumerate().find(|(_, c)| c.display_name() == name) {
        return Ok((c.clone(), format!("scenario[{i}]")));
    }
    if let Some(k) = ScenarioKind::from_name(name) {
        return Ok((ScenarioConfig::bare(k), "scenario".into()));
    }
    let mut names: Vec<String> = m.config.scenario.iter().map(|c| c.display_name().to_string()).collect();
    names.extend(ScenarioKind::ALL.iter().map(|k| k.name().to_string()));
    Err(Diagnostic::new(
        "scenario",
        format!("no [[scenario]] named `{name}`, and no scenario kind of that name"),
        format!("use one of: {}", names.join(", ")),
    ))
}

/// Checks every `[[scenario]]` of the file (as loading it does): kinds' parameters, names
/// unique and none another kind's.
pub fn check_all(m: &Model) -> Result<(), Vec<Diagnostic>> {
    let mut errs = Vec::new();
    rocelab_model::scenario::check(&m.config.scenario, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// The hosts a scenario names (`hosts`, glob patterns), if it does.
pub fn hosts_of(c: &ScenarioConfig) -> Option<Vec<String>> {
    c.table.get("hosts").and_then(|v| v.clone().try_into().ok())
}

/// Runs scenario `c` (found at key path `path`) on `m` with `seed`, the steady-state kinds
/// at the default window, horizon and tolerance.
pub fn run(m: &Model, c: &ScenarioConfig, path: &str, seed: u64) -> Result<ScenarioResult, Vec<Diagnostic>> {
    run_with(m, c, path, seed, &steady::SteadyOptions::default())
}

/// The kinds judged on a converged window (`steady`): a load held indefinitely.
pub fn is_steady(kind: ScenarioKind) -> bool {
    ScenarioConfig::bare(kind).params("scenario").is_ok_and(|p| kinds::of(&p).steady())
}

/// Runs scenario `c` with the steady-state options `so` (used by the steady kinds only).
pub fn run_with(
    m: &Model,
    c: &ScenarioConfig,
    path: &str,
    seed: u64,
    so: &steady::SteadyOptions,
) -> Result<ScenarioResult, Vec<Diagnostic>> {
    let p = c.params(path)?;
    let kind = kinds::of(&p);
    let duration_us = c.table.get("duration_us").and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)));
    let plan = kind.steady().then(|| steady::plan(so, duration_us));
    let mut c_run = c.clone();
    if let Some((_, horizon, _)) = plan {
        // The traffic lasts to the horizon; the run stops earlier once it has converged.
        c_run.set("duration_us", horizon.as_us_f64());
    }
    let c = &c_run;
    let p = c.params(path)?;
    let scale = fabric::Scale::new(m, &hosts_of(c), path).map_err(|d| vec![d])?;
    let cx = setup::Ctx { m, c, p, path: path.to_string(), seed, scale };
    let s = kinds::of(&cx.p).build(&cx).map_err(|d| vec![d])?;
    let dm = derived_model(m, &s, path)?;
    if s.edge.is_some() {
        return run_edges(&cx, &dm, s, so);
    }
    let mut faults = s.faults.clone();
    if !s.fault_tables.is_empty() {
        let resolved = rocelab_sim::engine::resolve_faults(&dm).map_err(|ds| relabel(ds, path))?;
        faults.extend(resolved);
    }
    // Faults at one time happen in the order given (the sort is stable).
    faults.sort_by_key(|f| f.at);
    let interval = match plan {
        Some((_, _, iv)) => iv,
        None => telemetry::interval(
            c.table
                .get("sample_us")
                .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                .map(|x| SimTime::from_secs_f64(x.max(1e-3) * 1e-6)),
            s.duration.unwrap_or(s.horizon).max(SimTime::from_ns(1)),
        ),
    };
    let (main, prepared) = match &s.collective {
        Some(spec) => {
            let mut p = rocelab_workload::prepare(&dm, spec, seed).map_err(|ds| relabel(ds, path))?;
            let w = std::mem::replace(
                &mut p.workload,
                Box::new(Beside { main: None, bg: vec![], transport: vec![], n_bg: 0 }),
            );
            (Some(w), Some(p))
        }
        None => (None, None),
    };
    let n_bg = s.msgs.len();
    let w = Beside { main, bg: s.msgs.clone(), transport: s.transport.clone(), n_bg };
    // Finished QPs' slots are reused (same results to the byte): a ring collective posts
    // millions of messages, and a slot per message kept for the whole run held over half of
    // the checklist's peak memory on a 1,024-GPU fabric.
    let opts =
        SimOptions { seed, duration: s.duration, sample_interval: None, recycle_qps: true, ..SimOptions::default() };
    let mut sim = Sim::with_workload(&dm, Box::new(w), faults, opts).map_err(|ds| relabel(ds, path))?;
    // When the port facing the receiver was first paused (the watchdog's clock starts there).
    let first_pause = Rc::new(Cell::new(None));
    if let Some(dst) = s.marks.dst {
        let port = dm.port(dm.node(dst).first_port_id()).peer;
        sim.add_observer(Box::new(FirstPause { port, at: first_pause.clone() }));
    }
    let (series, tracker) = match plan {
        Some((window, horizon, _)) => {
            let mut t = steady::Tracker::new(&dm, *so, window, horizon, &cx.scale);
            let (series, _) = telemetry::run_sampled_until(&mut sim, &dm, interval, &mut |sim, cur| t.sample(sim, cur));
            (series, Some(t))
        }
        None => (telemetry::run_sampled(&mut sim, &dm, interval), None),
    };
    let steady = tracker.as_ref().and_then(|t| t.finish());
    let snap = sim.snapshot();
    // The engine is done with: free it before the report's per-flow rows are built, so the two
    // are never held at once.
    drop(sim);
    let report = RunReport::from_snapshot(&snap, &dm);
    let info = c.kind.info();
    let outcome = evaluate::Outcome {
        snap: &snap,
        series: &series,
        collective: prepared.as_ref(),
        first_pause: first_pause.get(),
        steady: steady.as_ref(),
        settled: None,
    };
    let (value, metrics) = evaluate::evaluate(&cx, &dm, &s, &outcome);
    let mut params = s.params.clone();
    params.insert("sample_us".into(), serde_json::json!(interval.as_us_f64()));
    if let Some(st) = &steady {
        params.insert("window_us".into(), serde_json::json!(st.window_us));
        params.insert("horizon_us".into(), serde_json::json!(st.horizon_us));
    }
    let metrics: BTreeMap<&'static str, Option<f64>> =
        metrics.into_iter().map(|(k, v)| (k, v.filter(|x| x.is_finite()))).collect();
    let units = metrics.keys().map(|k| (*k, evaluate::unit_of(k))).collect();
    Ok(ScenarioResult {
        scenario: c.display_name().to_string(),
        kind: info.name,
        fabric: report.fabric.clone(),
        fabric_hash: report.fabric_hash.clone(),
        seed,
        params,
        headline: Headline { metric: info.headline, value: value.filter(|v| v.is_finite()), unit: info.headline_unit },
        metrics,
        simulated_us: snap.now.as_us_f64(),
        events: snap.events,
        stopped_at_duration: snap.stopped_at_duration,
        timeseries: SeriesInfo {
            file: "timeseries.csv",
            interval_us: interval.as_us_f64(),
            samples: series.samples.len(),
            rows: series.rows.len(),
            rows_dropped: series.rows_dropped,
        },
        steady,
        edges: None,
        units,
        series_csv: series.csv(&dm),
        report,
    })
}

/// A fault kind at its published timescale: its edges at packet level (`edges`).
fn run_edges(
    cx: &setup::Ctx,
    dm: &Model,
    s: setup::Setup,
    so: &steady::SteadyOptions,
) -> Result<ScenarioResult, Vec<Diagnostic>> {
    edges::run(cx, dm, s, so)
}

/// Errors of generated tables point at the scenario (the other profile's keys at its own).
fn relabel(ds: Vec<Diagnostic>, path: &str) -> Vec<Diagnostic> {
    let profile = format!("nic_profiles.{PROFILE}.");
    ds.into_iter()
        .map(|mut d| {
            if let Some(key) = d.path.strip_prefix(&profile) {
                d.path = format!("{path}.{key}");
            } else if d.path.starts_with("fault")
                || d.path.starts_with("nic")
                || d.path.starts_with("qos")
                || d.path.is_empty()
                || d.path == "collective"
            {
                d.message = format!("{} (from {path})", d.message);
                d.path = path.to_string();
            }
            d
        })
        .collect()
}

/// The model the run is on: the file's, with the scenario's faults in place of `[[fault]]`,
/// and, when the scenario changes the fleet, rebuilt from the changed file.
fn derived_model(m: &Model, s: &setup::Setup, path: &str) -> Result<Model, Vec<Diagnostic>> {
    let mut config = m.config.clone();
    config.traffic.clear();
    config.fault = s.fault_tables.clone();
    let fleet = s.watchdog.is_some() || s.convergence_us.is_some() || s.profile.is_some();
    if !fleet {
        let mut dm = m.clone();
        dm.config = config;
        return Ok(dm);
    }
    if let Some(w) = &s.watchdog {
        config.qos.pfc_watchdog = w.clone();
    }
    if let Some(c) = s.convergence_us {
        config.routing.convergence_us_per_hop = Some(c);
    }
    if let Some((nic, hosts)) = &s.profile {
        config.nic_profiles.insert(PROFILE.to_string(), nic.clone());
        // The last match wins: this one.
        config.nic_assign.push(NicAssign { hosts: hosts.clone(), profile: PROFILE.to_string() });
    }
    let mut dm = Model::from_config(config, "").map_err(|ds| relabel(ds, path))?;
    dm.fabric_hash = m.fabric_hash;
    Ok(dm)
}

/// The NIC profile firmware-mix adds.
pub const PROFILE: &str = "scenario-other-profile";
