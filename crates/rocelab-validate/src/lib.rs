//! `rocelab validate`: the pre-production checklist on the twin, judged against a policy.
//!
//! One run lints the fabric file and runs every stress scenario of `rocelab-scenario` on it
//! (each kind at its fabric-scaled defaults, or the file's own `[[scenario]]` of that kind
//! when it has one), in parallel across scenarios (each run single-threaded and
//! deterministic, results in catalog order). Every scenario's figures are then judged by the
//! checks of [`CHECKS`]: a check names a scenario kind, one of its metrics, a comparison and a
//! default limit, and says where the default comes from. A policy file overrides limits
//! (`[limits]`, by check name) and turns checks off (`skip = [...]`).
//!
//! Output ([`Report`]): one line per check as a test runner prints it (`PASS`/`FAIL`, the
//! deciding figure, the limit), JSON, JUnit XML (one test suite per scenario, one test case
//! per check) and a self-contained HTML report (`html`). A failing check makes the run fail.
//!
//! Checks with no default limit are *reported*: their figure is shown beside the others but
//! cannot fail the run unless a policy gives a limit (a what-if scenario such as a partial
//! firmware rollout measures a risk; it is not a property the fabric file can pass).

pub mod causes;
pub mod html;

use rocelab_model::config::{ScenarioConfig, ScenarioKind};
use rocelab_model::Model;
use rocelab_scenario::{short, ScenarioResult, IDEAL_METRIC as IDEAL};
use rocelab_sim::EngineKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

pub use rocelab_scenario::check::{CheckDef, Cmp, Figure, CNP_DELAY_US, RECOVERY_US};

/// The verdict on `figure` against `limit` compared by `cmp`: reported only without a limit,
/// failed without a figure (the run did not produce it).
fn verdict(cmp: Cmp, limit: Option<f64>, figure: Option<f64>) -> Verdict {
    match (limit, figure) {
        (None, _) => Verdict::Info,
        (Some(l), Some(v)) if (cmp == Cmp::AtMost && v <= l) || (cmp == Cmp::AtLeast && v >= l) => Verdict::Pass,
        _ => Verdict::Fail,
    }
}

/// The checklist's `mixed` run: loss-based TCP (no ECN, Linux's default) for 5 ms, long enough
/// for TCP that never sees a mark to fill a deep-buffer switch (64 MB at 700 Gb/s of excess
/// takes under 1 ms once its window has grown) and show whether PFC brakes it.
pub const MIXED_DURATION_US: f64 = 5000.0;

/// The checklist, in catalog order of the scenarios: each kind's `CHECKS`
/// (`rocelab-scenario/src/kinds/<kind>.rs`).
pub static CHECKS: std::sync::LazyLock<Vec<CheckDef>> = std::sync::LazyLock::new(|| {
    ScenarioKind::ALL.iter().flat_map(|k| rocelab_scenario::kinds::checks(*k)).copied().collect()
});

/// The policy: limits by check name, checks turned off.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Limits that replace the defaults, by check name (a limit on a reported check makes it
    /// judged).
    #[serde(default)]
    pub limits: BTreeMap<String, f64>,
    /// Checks not run.
    #[serde(default)]
    pub skip: Vec<String>,
    /// How the steady-state kinds are run and judged.
    #[serde(default)]
    pub steady: SteadyPolicy,
}

/// `[steady]` of a policy: the steady-state kinds' windows, horizon and tolerance, and what a
/// run that did not converge by the horizon gets.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SteadyPolicy {
    pub window_us: f64,
    /// The horizon of a steady run (a `[[scenario]]`'s own `duration_us` wins).
    pub horizon_us: Option<f64>,
    pub tolerance: f64,
    pub share_tolerance: f64,
    /// `"fail"` (default): a figure that has not converged fails its check; `"report"`: it is
    /// reported only.
    pub not_converged: NotConverged,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum NotConverged {
    #[default]
    Fail,
    Report,
}

impl Default for SteadyPolicy {
    fn default() -> Self {
        let d = rocelab_scenario::steady::SteadyOptions::default();
        SteadyPolicy {
            window_us: d.window_us,
            horizon_us: d.horizon_us,
            tolerance: d.tolerance,
            share_tolerance: d.share_tolerance,
            not_converged: NotConverged::Fail,
        }
    }
}

impl SteadyPolicy {
    pub fn options(&self) -> rocelab_scenario::steady::SteadyOptions {
        rocelab_scenario::steady::SteadyOptions {
            window_us: self.window_us,
            horizon_us: self.horizon_us,
            tolerance: self.tolerance,
            share_tolerance: self.share_tolerance,
        }
    }
}

impl Policy {
    /// Parses a policy file, naming the file, line and key of an error.
    pub fn parse(file: &str, text: &str) -> Result<Policy, String> {
        let p: Policy = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1).unwrap_or(1);
            format!("{file}:{line}: error: {}", e.message().trim())
        })?;
        // A check by its checklist name, or as judged on a named scenario of the fabric
        // (`incast-15.completion`: a name, then a check's part after its kind; `validate`
        // refuses a scenario name the fabric does not have).
        let known = |n: &str| {
            checklist_name(n) || CHECKS.iter().any(|c| n.split_once('.').is_some_and(|(_, rest)| suffix(c) == rest))
        };
        for n in p.limits.keys().chain(&p.skip) {
            if !known(n) {
                let line = text.lines().position(|l| l.contains(n.as_str())).map_or(1, |i| i + 1);
                return Err(format!(
                    "{file}:{line}: error: no check is named `{n}`\n  = help: `rocelab validate --list` names every check"
                ));
            }
            if let Some(v) = p.limits.get(n) {
                if !v.is_finite() {
                    return Err(format!("{file}:{line}: error: limit of `{n}` is not a number", line = 1));
                }
            }
        }
        Ok(p)
    }

    /// The limit of check `c` as run `name` (its own name for a file's second scenario of a
    /// kind, e.g. `incast-64.completion`): a limit set for that name, else for the check.
    fn limit_of(&self, c: &CheckDef, name: &str) -> Option<f64> {
        self.limits.get(name).or_else(|| self.limits.get(c.name)).copied().or(c.limit)
    }
}

/// A check's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// Reported only: no limit.
    Info,
    /// Not answered: the engine asked for does not model what the check measures (queues,
    /// PFC, ECN and CNPs on the flow engine). Never a pass, never a failure.
    Refused,
    /// The steady-state run reached its horizon before two windows agreed: its figure is not
    /// a result. A failure unless the policy says `not_converged = "report"`.
    #[serde(rename = "not-converged")]
    NotConverged,
    /// A lint warning: shown, never a failure.
    Warn,
}

impl Verdict {
    /// The name JSON and the sweep's table give it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Info => "info",
            Verdict::Refused => "refused",
            Verdict::NotConverged => "not-converged",
            Verdict::Warn => "warn",
        }
    }

    /// The tag the text and HTML views print.
    pub fn tag(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Info => "info",
            Verdict::Refused => "skip",
            Verdict::NotConverged => "NOT-CONVERGED",
            Verdict::Warn => "warn",
        }
    }

    /// Makes the run fail.
    pub fn fails(self) -> bool {
        matches!(self, Verdict::Fail | Verdict::NotConverged)
    }

    /// How `compare` prints it (a failure stands out).
    pub fn compare_tag(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Info => "info",
            Verdict::Refused => "skip",
            Verdict::NotConverged => "NOT-CONVERGED",
            Verdict::Warn => "warn",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub scenario: String,
    pub verdict: Verdict,
    /// The deciding figure (`None`: the scenario did not produce it, which fails a judged check).
    pub figure: Option<f64>,
    pub limit: Option<f64>,
    /// The unit of `figure` and `limit`.
    pub unit: String,
    /// `<=` or `>=`.
    pub cmp: &'static str,
    pub why: String,
    /// The evidence: the figures it was computed from, findings, what to look at.
    pub evidence: Vec<String>,
    /// Why it failed (failed and not-converged checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<causes::Cause>,
    /// The change that should make it pass, and what the twin measured with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<causes::Fix>,
}

/// Everything a validation run found.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub fabric: String,
    pub file: String,
    pub seed: u64,
    /// `packet` or `flow`.
    pub engine: &'static str,
    /// How many checks had each verdict.
    pub tally: Tally,
    pub checks: Vec<CheckResult>,
    /// The scenario runs, in catalog order.
    pub scenarios: Vec<ScenarioResult>,
    /// The fabric to draw in the HTML report, with each node's heat.
    #[serde(skip)]
    pub drawing: Drawing,
}

/// The fabric as the report draws it: nodes by tier (0 hosts … 3 core), links, and each
/// node's PFC pause frames sent over every scenario run (what makes it hot).
#[derive(Clone, Debug, Default)]
pub struct Drawing {
    pub nodes: Vec<(String, u8, f64)>,
    pub links: Vec<(u32, u32)>,
    /// Each leaf's uplinks (ports toward a spine), as `(leaf, port)` names of the reports.
    pub uplinks: Vec<(String, Vec<String>)>,
}

impl Drawing {
    fn of(m: &Model, runs: &[ScenarioResult]) -> Drawing {
        use rocelab_model::topology::Tier;
        let mut heat: BTreeMap<String, f64> = BTreeMap::new();
        for r in runs {
            for x in r.report.metrics.iter().filter(|x| x.name == "rocelab_pfc_pause_frames_total" && x.value > 0.0) {
                if x.labels["direction"] == "tx" {
                    *heat.entry(x.labels["node"].to_string()).or_default() += x.value;
                }
            }
        }
        let nodes = m
            .nodes
            .iter()
            .map(|n| {
                let tier = match n.tier {
                    Tier::Host => 0,
                    Tier::Leaf => 1,
                    Tier::Spine => 2,
                    Tier::Core => 3,
                };
                (n.name.clone(), tier, heat.get(n.name.as_str()).copied().unwrap_or(0.0))
            })
            .collect();
        let links = m.links.iter().map(|l| (m.ports[l.a.idx()].node.0, m.ports[l.b.idx()].node.0)).collect();
        let uplinks = m
            .nodes
            .iter()
            .filter(|n| n.tier == Tier::Leaf)
            .map(|n| {
                let ups = n
                    .ports()
                    .filter(|&p| m.nodes[m.ports[m.ports[p.idx()].peer.idx()].node.idx()].tier == Tier::Spine)
                    .map(|p| m.port_name(p).rsplit(':').next().unwrap_or("").to_string())
                    .collect();
                (n.name.clone(), ups)
            })
            .filter(|(_, u): &(String, Vec<String>)| u.len() > 1)
            .collect();
        Drawing { nodes, links, uplinks }
    }
}

impl Report {
    /// Checks that make the run fail (failed, or not converged under the default policy).
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| c.verdict.fails()).count()
    }

    /// The one count every output prints.
    pub fn tally(&self) -> Tally {
        let n = |v: Verdict| self.checks.iter().filter(|c| c.verdict == v).count();
        Tally {
            checks: self.checks.len(),
            passed: n(Verdict::Pass),
            failed: n(Verdict::Fail),
            not_converged: n(Verdict::NotConverged),
            reported: n(Verdict::Info),
            warnings: n(Verdict::Warn),
            refused: n(Verdict::Refused),
        }
    }
}

/// How many checks had each verdict: the same numbers in text, JSON, JUnit and HTML.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct Tally {
    pub checks: usize,
    pub passed: usize,
    pub failed: usize,
    pub not_converged: usize,
    pub reported: usize,
    pub warnings: usize,
    pub refused: usize,
}

impl Tally {
    /// `32 checks: 20 passed, 1 failed, 0 not converged, 9 reported only, 2 warnings, 0 refused`.
    pub fn line(&self) -> String {
        format!(
            "{} checks: {} passed, {} failed, {} not converged, {} reported only, {} lint warnings, {} refused",
            self.checks, self.passed, self.failed, self.not_converged, self.reported, self.warnings, self.refused
        )
    }
}

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub policy: Policy,
    /// Only checks (or scenarios, or `lint`) whose name or scenario is listed; empty: all.
    pub only: Vec<String>,
    /// Scenario runs at once (≥ 1).
    pub jobs: usize,
    pub seed: u64,
    /// The packet engine runs every check; the flow engine only those it can answer (the
    /// collective's busbw, the training steps), and refuses the rest.
    pub engine: EngineKind,
    /// Re-run each failing scenario with the fix proposed for its top cause (`rocelab
    /// validate` does unless `--no-verify-fixes`; off by default for library callers such as
    /// sweeps).
    pub verify_fixes: bool,
}

/// Gives every failed check of a scenario run its cause and fix, and, with
/// `opts.verify_fixes`, re-runs the scenario with the fix (the first candidate, then the
/// second if the first does not pass) and records the figure before → after. One re-run per
/// scenario and change, shared by the checks it answers; re-runs in parallel over `jobs`.
fn explain(
    m: &Model,
    runs: &[(ScenarioConfig, String)],
    results: &[ScenarioResult],
    checks: &mut [CheckResult],
    failing: &[(usize, &CheckDef, usize)],
    opts: &Options,
    progress: &(dyn Fn(Progress) + Sync),
) {
    let mut cands: Vec<Vec<causes::Candidate>> = vec![];
    for &(k, c, i) in failing {
        let nc = checks[k].verdict == Verdict::NotConverged;
        let (cause, cs) = causes::diagnose(c, &results[i], m, nc, &[]);
        checks[k].cause = Some(cause);
        cands.push(cs);
    }
    // (failing index, candidate index) still to settle; results by (run, change).
    let mut tried: BTreeMap<(usize, String), Option<ScenarioResult>> = BTreeMap::new();
    let mut best: Vec<Option<causes::Fix>> = vec![None; failing.len()];
    for round in 0..2 {
        let mut jobs: Vec<(usize, String, &causes::Candidate)> = vec![];
        for (f, &(_, _, i)) in failing.iter().enumerate() {
            let settled = best[f].as_ref().is_some_and(|x| x.verified);
            if let Some(cand) = cands[f].get(round).filter(|c| !settled && opts.verify_fixes && !c.flow_engine) {
                let key = (i, cand.change.clone());
                if !tried.contains_key(&key) && !jobs.iter().any(|j| j.0 == i && j.1 == cand.change) {
                    jobs.push((i, cand.change.clone(), cand));
                }
            }
        }
        let done = rerun(m, runs, &jobs, opts, progress);
        for ((i, change, _), r) in jobs.iter().zip(done) {
            tried.insert((*i, change.clone()), r);
        }
        for (f, &(k, c, i)) in failing.iter().enumerate() {
            let Some(cand) = cands[f].get(round) else { continue };
            if best[f].as_ref().is_some_and(|x| x.verified) {
                continue;
            }
            let before = checks[k].figure;
            let unit = checks[k].unit.clone();
            // A flow-engine fix (a collective at a size the packet engine would take minutes
            // for) is measured there.
            let flow = (cand.flow_engine && opts.verify_fixes).then(|| {
                let (mut sc, path) = runs[i].clone();
                if let Some(edit) = &cand.scenario {
                    edit(&mut sc);
                }
                let fo = Options { engine: EngineKind::Flow, ..opts.clone() };
                flow_busbw(m, c, checks[k].name.clone(), &(sc, path), &fo, &mut FlowCollective::default()).ok()
            });
            let fix = match (flow, tried.get(&(i, cand.change.clone()))) {
                (Some(Some(after)), _) => causes::Fix {
                    change: cand.change.clone(),
                    before,
                    after: after.figure,
                    unit,
                    verdict_after: Some(after.verdict),
                    verified: !after.verdict.fails(),
                    note: Some("re-run on the flow-level engine".into()),
                },
                (Some(None), _) => causes::Fix {
                    change: cand.change.clone(),
                    before,
                    after: None,
                    unit,
                    verdict_after: None,
                    verified: false,
                    note: Some("the changed run did not complete on the flow-level engine".into()),
                },
                (None, Some(Some(r))) => {
                    let after = judge(c, checks[k].name.clone(), r, &opts.policy);
                    causes::Fix {
                        change: cand.change.clone(),
                        before,
                        after: after.figure,
                        unit,
                        verdict_after: Some(after.verdict),
                        verified: !after.verdict.fails(),
                        note: None,
                    }
                }
                (None, Some(None)) => causes::Fix {
                    change: cand.change.clone(),
                    before,
                    after: None,
                    unit,
                    verdict_after: None,
                    verified: false,
                    note: Some("the changed fabric did not load or run".into()),
                },
                (None, None) => causes::Fix {
                    change: cand.change.clone(),
                    before,
                    after: None,
                    unit,
                    verdict_after: None,
                    verified: false,
                    note: Some("not re-run (--no-verify-fixes)".into()),
                },
            };
            // A later candidate replaces an earlier one only when it passes.
            if best[f].is_none() || fix.verified {
                best[f] = Some(fix);
            }
        }
    }
    for (f, &(k, _, _)) in failing.iter().enumerate() {
        checks[k].fix = Some(best[f].take().unwrap_or_else(|| causes::Fix {
            change: "none found: the twin has no change to try for this cause".into(),
            before: checks[k].figure,
            after: None,
            unit: checks[k].unit.clone(),
            verdict_after: None,
            verified: false,
            note: Some("see the cause's keys".into()),
        }));
    }
}

/// Runs `jobs` (a run of `runs`, its fix applied to the file's configuration) on `opts.jobs`
/// threads; `None` where the changed fabric does not load or run.
fn rerun(
    m: &Model,
    runs: &[(ScenarioConfig, String)],
    jobs: &[(usize, String, &causes::Candidate)],
    opts: &Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> Vec<Option<ScenarioResult>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<ScenarioResult>>> = Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|sc| {
        for _ in 0..opts.jobs.clamp(1, jobs.len().max(1)) {
            sc.spawn(|| loop {
                let j = next.fetch_add(1, Ordering::Relaxed);
                let Some((i, change, cand)) = jobs.get(j) else { break };
                let (c, path) = &runs[*i];
                let mut c = c.clone();
                if let Some(edit) = &cand.scenario {
                    edit(&mut c);
                }
                let c = &c;
                let label = format!("{} with {}", c.display_name(), change);
                progress(Progress::Started(&label));
                let mut cfg = m.config.clone();
                (cand.apply)(&mut cfg);
                let r = Model::from_config(cfg, "").ok().and_then(|fm| {
                    rocelab_scenario::run_with(&fm, c, path, opts.seed, &opts.policy.steady.options())
                        .ok()
                        .map(per_flow_dropped)
                });
                slots.lock().unwrap_or_else(|e| e.into_inner())[j] = r;
                progress(Progress::Finished { scenario: &label, done: j + 1, total: jobs.len() });
            });
        }
    });
    slots.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The scenarios of `kind` this fabric runs: the file's own `[[scenario]]`s of that kind
/// (each with its key path), or the kind at its defaults — except the collective's size,
/// which the checklist sets where busbw measures the fabric rather than the ring's step
/// latency: 1 MiB per rank and channel (64 MiB to 1 GiB; 1 GiB on a 128-GPU fabric of 8
/// rails, where each ring step then moves 1 MiB per channel against a few µs of hop latency)
/// — and the mixed load, which it runs with loss-based TCP for [`MIXED_DURATION_US`].
pub fn scenarios_of(m: &Model, kind: ScenarioKind) -> Vec<(ScenarioConfig, String)> {
    let own: Vec<_> = m
        .config
        .scenario
        .iter()
        .enumerate()
        .filter(|(_, c)| c.kind == kind)
        .map(|(i, c)| (c.clone(), format!("scenario[{i}]")))
        .collect();
    if !own.is_empty() {
        return own;
    }
    let mut c = ScenarioConfig::bare(kind);
    if kind == ScenarioKind::Hotspot {
        // Beside the receiver hotspot, the run that makes CNPs cross a congested egress.
        let mut cnp = ScenarioConfig::bare(kind);
        cnp.name = Some(CNP_PATH_RUN.into());
        cnp.set("target", "cnp-path");
        return vec![(c, "scenario".to_string()), (cnp, "scenario".to_string())];
    }
    if kind == ScenarioKind::Collective {
        let ranks = rocelab_workload::placement::placement(m).map_or(2, |p| p.ranks()) as u64;
        let channels = rocelab_workload::default_channels(m) as u64;
        c.set("size_bytes", ((ranks * channels) << 20).clamp(64 << 20, 1 << 30) as i64);
    }
    if kind == ScenarioKind::Mixed {
        c.set("tcp_ecn", false);
        c.set("duration_us", MIXED_DURATION_US);
    }
    vec![(c, "scenario".to_string())]
}

/// The checklist's own second hotspot run (`target = "cnp-path"`): its checks are
/// `cnp-path.<check>`.
pub const CNP_PATH_RUN: &str = "cnp-path";

/// A name of the checklist's own: a check, a lint rule's, or a training step's.
fn checklist_name(n: &str) -> bool {
    CHECKS.iter().any(|c| c.name == n) || n.starts_with("lint") || n.starts_with("workload.")
}

/// A check's name after its kind (`completion` of `incast.completion`).
fn suffix(c: &CheckDef) -> &'static str {
    c.name.strip_prefix(c.kind.name()).and_then(|r| r.strip_prefix('.')).unwrap_or(c.name)
}

/// A check's name as judged on the scenario `run`: the checklist's name on the kind's own run
/// (`incast.completion`), the scenario's name in place of the kind's on a named one
/// (`incast-64.completion`), so a file's two incasts give two checks.
fn check_name(c: &CheckDef, run: &str) -> String {
    if run == c.kind.name() {
        c.name.to_string()
    } else {
        format!("{run}.{}", suffix(c))
    }
}

fn wanted(only: &[String], name: &str, scenario: &str) -> bool {
    only.is_empty() || only.iter().any(|o| o == name || o == scenario)
}

/// What a validation run says as it goes (from the scenario threads).
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// A scenario run started.
    Started(&'a str),
    /// A scenario run finished: `done` of `total`.
    Finished { scenario: &'a str, done: usize, total: usize },
}

/// A file's lint findings of one severity grouped by rule, in code order, each group with its
/// evidence: `file:line:col: message`, then `fix: hint`, per finding.
type RuleFindings<'a> = (&'static str, Vec<&'a rocelab_lint::Finding>, Vec<String>);

fn by_rule(lint: &rocelab_lint::FileReport, severity: rocelab_lint::Severity) -> Vec<RuleFindings<'_>> {
    let mut found: Vec<&rocelab_lint::Finding> = lint.findings.iter().filter(|f| f.severity == severity).collect();
    found.sort_by_key(|f| (f.code, f.line, f.column));
    let mut groups: Vec<RuleFindings<'_>> = vec![];
    for f in found {
        if groups.last().is_none_or(|g| g.0 != f.code) {
            groups.push((f.code, vec![], vec![]));
        }
        if let Some((_, of, evidence)) = groups.last_mut() {
            evidence.push(format!("{}:{}:{}: {}", f.file, f.line, f.column, f.message));
            evidence.push(format!("fix: {}", f.hint));
            of.push(f);
        }
    }
    groups
}

/// Lints the file and runs the checklist; `progress` hears each scenario start and finish.
pub fn validate(
    m: &Model,
    file: &str,
    text: &str,
    opts: &Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Report, Vec<rocelab_model::Diagnostic>> {
    rocelab_scenario::check_all(m)?;
    let mut checks = Vec::new();
    if wanted(&opts.only, "lint", "lint") && !opts.policy.skip.iter().any(|s| s == "lint") {
        let lint = rocelab_lint::lint(m, file, text, &rocelab_lint::Options::default());
        let errors = by_rule(&lint, rocelab_lint::Severity::Error);
        let why = "the static rules of `rocelab lint`: an error is a known RoCE misconfiguration";
        if errors.is_empty() {
            checks.push(CheckResult {
                name: "lint".into(),
                scenario: "lint".into(),
                verdict: Verdict::Pass,
                figure: Some(0.0),
                limit: Some(0.0),
                unit: "lint errors".into(),
                cmp: "<=",
                cause: None,
                fix: None,
                why: why.into(),
                evidence: vec![format!("{} warnings", lint.count(rocelab_lint::Severity::Warning))],
            });
        }
        // One failed check per rule, with every finding of it as evidence.
        for (code, of, evidence) in errors {
            checks.push(CheckResult {
                name: format!("lint.{code}"),
                scenario: "lint".into(),
                verdict: Verdict::Fail,
                figure: Some(of.len() as f64),
                limit: Some(0.0),
                unit: "lint errors".into(),
                cmp: "<=",
                cause: Some(causes::Cause {
                    mechanism: of[0].title.to_string(),
                    evidence: of.iter().map(|f| format!("{}:{}:{}: {}", f.file, f.line, f.column, f.message)).collect(),
                    keys: of.iter().map(|f| format!("line {}", f.line)).collect(),
                }),
                fix: Some(causes::Fix {
                    change: of.iter().map(|f| f.hint.to_string()).collect::<Vec<_>>().join("; "),
                    before: Some(of.len() as f64),
                    after: None,
                    unit: "lint errors".into(),
                    verdict_after: None,
                    verified: false,
                    note: Some("a static rule: `rocelab lint` on the changed file checks the fix".into()),
                }),
                why: of[0].title.to_string(),
                evidence,
            });
        }
        // Warnings are shown as warnings: one line per rule, never a failure.
        for (code, of, evidence) in by_rule(&lint, rocelab_lint::Severity::Warning) {
            checks.push(CheckResult {
                name: format!("lint.{code}"),
                scenario: "lint".into(),
                verdict: Verdict::Warn,
                figure: Some(of.len() as f64),
                limit: None,
                unit: "lint warnings".into(),
                cmp: "<=",
                cause: None,
                fix: None,
                why: of[0].title.to_string(),
                evidence,
            });
        }
    }
    // Every check on every scenario of its kind the file has (or the kind's default run), as
    // `--only` and the policy's `skip` select them by check, scenario or kind name.
    let mut runs: Vec<(ScenarioConfig, String)> = vec![];
    let mut pairs: Vec<(&CheckDef, usize)> = vec![];
    let mut kinds: Vec<ScenarioKind> = vec![];
    for c in CHECKS.iter() {
        if !kinds.contains(&c.kind) {
            kinds.push(c.kind);
        }
    }
    for kind in kinds {
        for (sc, path) in scenarios_of(m, kind) {
            let label = sc.display_name().to_string();
            let picked: Vec<&CheckDef> = CHECKS
                .iter()
                .filter(|c| c.kind == kind)
                .filter(|c| {
                    let name = check_name(c, &label);
                    (wanted(&opts.only, c.name, kind.name()) || wanted(&opts.only, &name, &label))
                        && !opts.policy.skip.iter().any(|s| *s == c.name || *s == name)
                })
                .collect();
            if !picked.is_empty() {
                pairs.extend(picked.into_iter().map(|c| (c, runs.len())));
                runs.push((sc, path));
            }
        }
    }
    // A policy name for a named scenario's check must name one of this fabric's.
    let p = &opts.policy;
    for n in p.limits.keys().chain(&p.skip) {
        let generic = checklist_name(n);
        let run_check = m
            .config
            .scenario
            .iter()
            .any(|sc| CHECKS.iter().any(|c| c.kind == sc.kind && check_name(c, sc.display_name()) == *n));
        let default_run = CHECKS.iter().any(|c| c.kind == ScenarioKind::Hotspot && check_name(c, CNP_PATH_RUN) == *n);
        if !generic && !run_check && !default_run {
            return Err(vec![rocelab_model::Diagnostic::new(
                "scenario",
                format!("the policy names check `{n}`, which no scenario of this fabric has"),
                "name a check of `rocelab validate --list`, or `<scenario name>.<check>` for one of the file's [[scenario]]s",
            )]);
        }
    }
    // The runs that ran, and where each of `pairs`' runs went: its index among them, or why
    // the fabric cannot host it.
    let (all_runs, mut runs, mut results, mut placed) = (runs, vec![], vec![], vec![]);
    if opts.engine == EngineKind::Packet {
        let mut errs = vec![];
        for (run, outcome) in all_runs.iter().zip(run_all(m, &all_runs, opts, progress)) {
            match outcome {
                Ok(r) => {
                    placed.push(Ok(results.len()));
                    runs.push(run.clone());
                    results.push(r);
                }
                // The checklist's own run of a kind this fabric cannot host (a receiver
                // hotspot on two hosts) is refused; a file's own scenario that cannot run is
                // an error, as `simulate` says.
                Err(d) if run.1 == "scenario" => placed.push(Err(d
                    .iter()
                    .map(|x| format!("{} ({})", x.message, x.hint))
                    .collect::<Vec<_>>()
                    .join("; "))),
                Err(d) => errs.extend(d),
            }
        }
        if !errs.is_empty() {
            return Err(errs);
        }
    } else {
        runs = all_runs.clone();
        placed = (0..runs.len()).map(Ok).collect();
    }
    let mut failing: Vec<(usize, &CheckDef, usize)> = vec![];
    let mut flow_runs: BTreeMap<usize, FlowCollective> = BTreeMap::new();
    for (c, i) in pairs {
        let name = check_name(c, all_runs[i].0.display_name());
        let i = match &placed[i] {
            Ok(i) => *i,
            Err(why) => {
                let label = all_runs[i].0.display_name();
                checks.push(CheckResult {
                    evidence: vec![format!("`{label}` cannot run on this fabric: {why}")],
                    ..refused(c, name, label, opts.engine)
                });
                continue;
            }
        };
        let busbw = c.kind == ScenarioKind::Collective && matches!(c.figure, Figure::Headline | Figure::Metric(IDEAL));
        let res = match results.get(i) {
            Some(r) => judge(c, name, r, &opts.policy),
            None if busbw => flow_busbw(m, c, name, &runs[i], opts, flow_runs.entry(i).or_default())?,
            None => refused(c, name, runs[i].0.display_name(), opts.engine),
        };
        if res.verdict.fails() && i < results.len() {
            failing.push((checks.len(), c, i));
        }
        checks.push(res);
    }
    explain(m, &runs, &results, &mut checks, &failing, opts, progress);
    checks.extend(training_steps(m, file, text, opts)?);
    // Every failed check has a cause and a fix: those judged on the flow engine, which
    // models no queue, pause or mark to read a mechanism from, say so.
    for c in checks.iter_mut().filter(|c| c.verdict.fails() && c.cause.is_none()) {
        let flow = opts.engine != EngineKind::Packet;
        c.cause = Some(causes::Cause {
            mechanism: if flow {
                format!(
                    "{} is past its limit on the {}-level engine, which models no queue, pause, mark or drop to read a mechanism from",
                    c.name,
                    opts.engine.name()
                )
            } else {
                format!("{} is past its limit; no mechanism was read for it", c.name)
            },
            evidence: vec![],
            keys: vec![],
        });
        c.fix = Some(causes::Fix {
            change: if flow {
                "none found here: run `validate` on the packet engine for the cause and a verified fix".into()
            } else {
                "none found: the twin has no change to try for this cause".into()
            },
            before: c.figure,
            after: None,
            unit: c.unit.clone(),
            verdict_after: None,
            verified: false,
            note: Some("see the cause".into()),
        });
    }
    let drawing = Drawing::of(m, &results);
    let mut r = Report {
        fabric: m.config.fabric.name.clone(),
        file: file.to_string(),
        seed: opts.seed,
        engine: opts.engine.name(),
        tally: Tally { checks: 0, passed: 0, failed: 0, not_converged: 0, reported: 0, warnings: 0, refused: 0 },
        checks,
        scenarios: results,
        drawing,
    };
    r.tally = r.tally();
    Ok(r)
}

/// A check the engine cannot answer: what it measures is not in the engine's model.
fn refused(c: &CheckDef, name: String, scenario: &str, engine: EngineKind) -> CheckResult {
    CheckResult {
        name,
        scenario: scenario.to_string(),
        verdict: Verdict::Refused,
        figure: None,
        limit: None,
        unit: c.unit.into(),
        cmp: c.cmp.sign(),
        cause: None,
        fix: None,
        why: c.why.to_string(),
        evidence: vec![format!(
            "not answered on the {}-level engine: it models no queues, PFC, ECN, CNPs or drops, and shares a congested link perfectly at once (docs/flow-engine.md); run `validate` on the packet engine for this check",
            engine.name()
        )],
    }
}

/// The checklist's collective on the flow engine, run once per scenario for both its checks.
#[derive(Default)]
struct FlowCollective {
    run: Option<(rocelab_workload::CollectiveResult, f64)>,
    /// The same collective on the fabric made non-blocking, µs (`None`: not run yet).
    ideal_us: Option<f64>,
}

/// `collective.busbw` and `collective.busbw-of-ideal` on the flow engine: the checklist's
/// collective (its op, size and channels as the packet engine's scenario sets them) run by
/// `rocelab_workload` with max-min fair rates, its busbw over the line rate of the NICs it can
/// use, or over the same run's on the fabric made non-blocking (on the flow engine too).
fn flow_busbw(
    m: &Model,
    c: &CheckDef,
    name: String,
    (sc, path): &(ScenarioConfig, String),
    opts: &Options,
    cache: &mut FlowCollective,
) -> Result<CheckResult, Vec<rocelab_model::Diagnostic>> {
    let (spec, bound_gbps) = rocelab_scenario::collective_spec(m, sc, path)?;
    if cache.run.is_none() {
        let sim =
            rocelab_sim::SimOptions { seed: opts.seed, engine: opts.engine, ..rocelab_sim::SimOptions::default() };
        cache.run = Some((rocelab_workload::run_collective(m, &spec, sim)?, bound_gbps));
    }
    let Some((r, bound_gbps)) = &cache.run else {
        return Err(vec![rocelab_model::Diagnostic::new(path.as_str(), "the collective did not run", "")]);
    };
    let ideal = matches!(c.figure, Figure::Metric(IDEAL));
    if ideal && cache.ideal_us.is_none() {
        let t = rocelab_scenario::ideal_time(m, &spec, opts.seed, opts.engine)?;
        cache.ideal_us = Some(t.as_us_f64());
    }
    let done = r.time_us.is_finite();
    let figure = match (ideal, cache.ideal_us) {
        (true, Some(i)) => done.then(|| i / r.time_us),
        _ => done.then(|| r.busbw_gbytes_per_s * 8.0 / bound_gbps),
    };
    let limit = opts.policy.limit_of(c, &name);
    let verdict = verdict(c.cmp, limit, figure);
    let mut evidence = vec![format!(
        "{} of {} B over {} ranks, {} channels on the flow-level engine: {:.1} µs, busbw {:.2} GB/s against {:.0} Gb/s of the NICs it crosses",
        r.op, r.bytes, r.ranks, r.channels, r.time_us, r.busbw_gbytes_per_s, bound_gbps
    )];
    if ideal {
        evidence.push(format!(
            "{} µs alone on the fabric made non-blocking (every switch-to-switch link wider than any switch), same NICs, NCCL model and seed",
            fmt(cache.ideal_us)
        ));
    }
    Ok(CheckResult {
        name,
        scenario: sc.display_name().to_string(),
        verdict,
        figure,
        limit,
        unit: c.unit.into(),
        cmp: c.cmp.sign(),
        cause: None,
        fix: None,
        why: c.why.to_string(),
        evidence,
    })
}

/// The default limit of a training step's `rocelab_comm_wait_ratio`: `rocelab plan` calls a
/// plan GOOD when its GPUs wait on the network at most 5 % of the step (docs/plan.md).
pub const STEP_COMM_WAIT: f64 = 0.05;

/// The file's `[[workload]]` training steps on the twin: each one's share of the step the
/// GPUs wait on the network, against an ideal network (the same DAG with instant
/// communication), as check `workload.<name>.comm-wait`.
fn training_steps(
    m: &Model,
    file: &str,
    text: &str,
    opts: &Options,
) -> Result<Vec<CheckResult>, Vec<rocelab_model::Diagnostic>> {
    let mut out = vec![];
    for (i, w) in m.config.workload.iter().enumerate() {
        let Some(step) = &w.step else { continue };
        let name = w.name.clone().unwrap_or_else(|| format!("workload{i}"));
        let check = format!("workload.{name}.comm-wait");
        if !wanted(&opts.only, &check, "workload") || opts.policy.skip.contains(&check) {
            continue;
        }
        let bad = |msg: String| {
            vec![rocelab_model::Diagnostic::new(
                format!("workload[{i}].step"),
                msg,
                "fix the plan, or leave this workload out with --only",
            )]
        };
        // "plan": this file's own [plan]; else a plan file next to this one.
        let (pfile, ptext) = if step == "plan" {
            (file.to_string(), text.to_string())
        } else {
            let p = std::path::Path::new(file).parent().unwrap_or(std::path::Path::new(".")).join(step);
            let t = std::fs::read_to_string(&p).map_err(|e| bad(format!("cannot read {}: {e}", p.display())))?;
            (p.display().to_string(), t)
        };
        let (plan, est) = rocelab_workload::step::step_plan_on_fabric(&pfile, &ptext, m).map_err(bad)?;
        let sim = rocelab_sim::SimOptions { engine: opts.engine, ..rocelab_sim_opts(opts.seed) };
        let r = rocelab_workload::step::run_step(m, &plan, sim)?;
        let limit = opts.policy.limits.get(&check).copied().or(Some(STEP_COMM_WAIT));
        let figure = r.step_us.is_finite().then_some(r.comm_wait_ratio);
        let verdict = verdict(Cmp::AtMost, limit, figure);
        let plan_wait = est.phases.iter().find(|p| p.name == "step").map(|p| p.network_share);
        let unit = "GPU time waiting on the network / step time";
        // A step that waits too long: its critical communication is the cause; the plan, not
        // one fabric key, is what changes it, so nothing is re-run.
        let (cause, fix) = if verdict.fails() {
            (
                Some(causes::Cause {
                    mechanism: format!(
                        "the training step's GPUs wait on the network {} of the step ({:.3} ms against {:.3} ms with an ideal network): its critical communication is {}",
                        fmt(figure),
                        r.step_us * 1e-3,
                        r.compute_only_us * 1e-3,
                        r.critical
                    ),
                    evidence: vec![format!("plan's estimate of the same share: {}", fmt(plan_wait))],
                    keys: vec![format!("[[workload]] name = \"{name}\": step (the plan: parallelism, overlap)")],
                }),
                Some(causes::Fix {
                    change: "none found: the plan decides it (`rocelab plan --input` on the step's plan for its bottleneck, `rocelab plan --search` for another layout)".into(),
                    before: figure,
                    after: None,
                    unit: unit.into(),
                    verdict_after: None,
                    verified: false,
                    note: Some("see the cause's keys".into()),
                }),
            )
        } else {
            (None, None)
        };
        out.push(CheckResult {
            name: check,
            scenario: format!("workload.{name}"),
            verdict,
            figure,
            limit,
            unit: unit.into(),
            cmp: "<=",
            cause,
            fix,
            why: "the share of the training step its GPUs wait on the network (rocelab_comm_wait_ratio), against the same DAG on an ideal network; `rocelab plan` calls ≤ 5 % GOOD".into(),
            evidence: vec![
                format!(
                    "step {:.3} ms on the twin, {:.3} ms with an ideal network; critical: {}",
                    r.step_us * 1e-3,
                    r.compute_only_us * 1e-3,
                    r.critical
                ),
                format!("plan's estimate of the same share: {}", fmt(plan_wait)),
            ],
        });
    }
    Ok(out)
}

/// The engine's options for a step run: the seed, finished messages' slots reused.
fn rocelab_sim_opts(seed: u64) -> rocelab_sim::SimOptions {
    rocelab_sim::SimOptions { seed, recycle_qps: true, ..rocelab_sim::SimOptions::default() }
}

/// Runs the scenarios on `jobs` threads; each result, or why it could not run, in the order of
/// `runs`.
fn run_all(
    m: &Model,
    runs: &[(ScenarioConfig, String)],
    opts: &Options,
    progress: &(dyn Fn(Progress) + Sync),
) -> Vec<Result<ScenarioResult, Vec<rocelab_model::Diagnostic>>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    type Slot = Option<Result<ScenarioResult, Vec<rocelab_model::Diagnostic>>>;
    let slots: Mutex<Vec<Slot>> = Mutex::new((0..runs.len()).map(|_| None).collect());
    std::thread::scope(|sc| {
        for _ in 0..opts.jobs.clamp(1, runs.len().max(1)) {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((c, path)) = runs.get(i) else { break };
                progress(Progress::Started(c.display_name()));
                let r = rocelab_scenario::run_with(m, c, path, opts.seed, &opts.policy.steady.options())
                    .map(per_flow_dropped);
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress::Finished { scenario: c.display_name(), done, total: runs.len() });
            });
        }
    });
    slots.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().map(|r| r.expect("every slot ran")).collect()
}

/// A result without its report's per-flow rows (`flows` and the metrics labelled by flow),
/// which no check, cause or page of the checklist reads: a ring collective's run has one per
/// message (2.1 million on a 1,024-GPU fabric, about 0.6 GB), and every result is kept until
/// the report is written.
fn per_flow_dropped(mut r: ScenarioResult) -> ScenarioResult {
    r.report.flows = Vec::new();
    r.report.metrics.retain(|x| x.labels.get("flow").is_none());
    r.report.metrics.shrink_to_fit();
    r
}

/// One row of a scenario's `timeseries.csv` (long format:
/// `time_seconds,metric,node,port,priority,value`), its time in µs through whole picoseconds
/// (the engine's clock).
pub(crate) struct Row<'a> {
    pub t_us: f64,
    pub metric: &'a str,
    pub node: &'a str,
    pub port: &'a str,
    pub priority: &'a str,
    pub value: f64,
}

/// The rows of a `timeseries.csv`, header and malformed lines skipped.
pub(crate) fn telemetry(csv: &str) -> impl Iterator<Item = Row<'_>> {
    csv.lines().skip(1).filter_map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        if f.len() < 6 {
            return None;
        }
        let (t, value) = (f[0].parse::<f64>().ok()?, f[5].parse::<f64>().ok()?);
        Some(Row { t_us: (t * 1e12).round() / 1e6, metric: f[1], node: f[2], port: f[3], priority: f[4], value })
    })
}

/// A metric of the run; `headline` is its headline metric's value.
fn metric(r: &ScenarioResult, name: &str) -> Option<f64> {
    if name == "headline" {
        return r.headline.value;
    }
    r.metrics.get(name).copied().flatten()
}

fn judge(c: &CheckDef, name: String, r: &ScenarioResult, p: &Policy) -> CheckResult {
    let unit_of = |k: &str| r.units.get(k).copied().unwrap_or("");
    let st = r.steady.as_ref();
    // Where a steady kind's figure was taken: its judged window.
    let span = match st {
        Some(w) => format!(" (window {:.0}–{:.0} µs)", w.from_us, w.to_us),
        None => format!(" (whole run, {:.1} µs)", r.simulated_us),
    };
    let (figure, mut evidence) = match c.figure {
        Figure::Headline => (
            r.headline.value,
            vec![format!("{} = {} ({}){span}", r.headline.metric, fmt(r.headline.value), r.headline.unit)],
        ),
        Figure::Metric(k) => (metric(r, k), vec![format!("{k} = {} {}", fmt(metric(r, k)), unit_of(k))]),
        Figure::Difference(a, b) => {
            let (x, y) = (metric(r, a), metric(r, b));
            let u = unit_of(a);
            (x.zip(y).map(|(x, y)| x - y), vec![format!("{a} = {} {u}, {b} = {} {u}", fmt(x), fmt(y))])
        }
        Figure::MaxPausedShare => match st {
            Some(w) => (
                Some(w.paused_share_max),
                vec![match &w.paused_port {
                    Some(port) => format!(
                        "{port} paused {:.1} µs of the {:.0} µs window {:.0}–{:.0} µs",
                        w.paused_share_max * (w.to_us - w.from_us),
                        w.to_us - w.from_us,
                        w.from_us,
                        w.to_us
                    ),
                    None => format!("no port was paused in the window {:.0}–{:.0} µs", w.from_us, w.to_us),
                }],
            ),
            None => {
                let run = r.report.simulated_seconds.max(1e-12);
                let worst = r
                    .report
                    .metrics
                    .iter()
                    .filter(|x| x.name == "rocelab_pfc_paused_seconds_total")
                    .max_by(|a, b| a.value.total_cmp(&b.value));
                match worst {
                    Some(w) if w.value > 0.0 => (
                        Some(w.value / run),
                        vec![format!(
                            "{}:{} priority {} paused {:.1} µs of {:.1} µs",
                            w.labels["node"],
                            w.labels["port"],
                            w.labels["priority"],
                            w.value * 1e6,
                            run * 1e6
                        )],
                    ),
                    _ => (Some(0.0), vec!["no port was paused".into()]),
                }
            }
        },
        Figure::RecoveryUs => {
            let at = r.params.get("at_us").and_then(|v| v.as_f64()).unwrap_or(0.0);
            let after = metric(r, "goodput_after_gbps").map(|g| g * 1e9);
            let first = telemetry(&r.series_csv)
                .filter(|x| x.metric == "rocelab_goodput_bits_per_second" && x.node.is_empty())
                .find(|x| x.t_us > at && after.is_some_and(|a| x.value >= 0.9 * a))
                .map(|x| x.t_us - at);
            (
                first,
                vec![format!(
                    "fault at {at:.1} µs; goodput after it {} Gb/s (mean)",
                    fmt(metric(r, "goodput_after_gbps"))
                )],
            )
        }
        Figure::CnpDelayP99Us => {
            let (sent, p50, p99, max) = match st {
                Some(w) => (w.cnp_count, w.cnp_delay_p50_us, w.cnp_delay_p99_us, w.cnp_delay_max_us),
                None => {
                    let q = &r.report.cnp_queue_delay;
                    (r.report.totals.cnp_sent, q.p50_seconds * 1e6, q.p99_seconds * 1e6, q.max_seconds * 1e6)
                }
            };
            let what = if st.is_some() { "CNP waits at a switch hop" } else { "CNPs sent" };
            let mut ev = vec![format!(
                "{sent} {what}{span}; their wait per switch hop p50 {p50:.2} µs, p99 {p99:.2} µs, max {max:.2} µs"
            )];
            if p99 > CNP_DELAY_US {
                ev.push(
                    "CNPs wait behind data: give them a strict-priority queue of their own (lint CNP001, CNP002)"
                        .into(),
                );
            }
            (Some(p99), ev)
        }
        Figure::QueueDelayP99Us => {
            let (p50, p99, max) = match st {
                Some(w) => (w.queue_delay_p50_us, w.queue_delay_p99_us, w.queue_delay_max_us),
                None => {
                    let q = &r.report.queue_delay;
                    (q.p50_seconds * 1e6, q.p99_seconds * 1e6, q.max_seconds * 1e6)
                }
            };
            (Some(p99), vec![format!("queueing delay{span} p50 {p50:.2} µs, p99 {p99:.2} µs, max {max:.2} µs")])
        }
    };
    if matches!(c.figure, Figure::Metric(IDEAL)) {
        evidence.push(format!(
            "{} µs on this fabric; {} µs alone on the fabric made non-blocking (every switch-to-switch link wider than any switch), same NICs, NCCL model and seed",
            fmt(metric(r, "time_us")),
            fmt(metric(r, "ideal_time_us"))
        ));
    }
    let limit = p.limit_of(c, &name);
    let mut verdict = verdict(c.cmp, limit, figure);
    if verdict == Verdict::Fail {
        evidence.extend(likely_cause(r));
    }
    if let Some(w) = st.filter(|w| !w.converged) {
        let differ: Vec<String> = w
            .agreement
            .iter()
            .filter(|a| !a.agree)
            .map(|a| {
                format!(
                    "{}: {} → {} {} (allowed ±{})",
                    a.figure,
                    short(a.previous),
                    short(a.last),
                    a.unit,
                    short(a.allowed)
                )
            })
            .collect();
        evidence.insert(
            0,
            format!(
                "not converged: no two successive {:.0} µs windows agreed by the horizon ({:.0} µs); last two windows differ in {}",
                w.window_us,
                w.horizon_us,
                differ.join("; ")
            ),
        );
        // A failure stays a failure; anything else is not a result.
        if verdict != Verdict::Fail {
            verdict = match p.steady.not_converged {
                NotConverged::Fail => Verdict::NotConverged,
                NotConverged::Report => Verdict::Info,
            };
        }
    }
    CheckResult {
        name,
        scenario: r.scenario.clone(),
        verdict,
        figure,
        limit,
        unit: c.unit.into(),
        cmp: c.cmp.sign(),
        cause: None,
        fix: None,
        why: c.why.to_string(),
        evidence,
    }
}

/// The figures of the run that usually explain a failure.
fn likely_cause(r: &ScenarioResult) -> Vec<String> {
    let mut v = vec![];
    let g = |k: &str| metric(r, k).unwrap_or(0.0);
    // Packets lost with a link going down (a fault, a NIC reset) are the fault's, not headroom's.
    let dropped = g("dropped_packets") - g("packets_lost_link_down");
    if dropped > 0.0 {
        v.push(format!(
            "{} packets dropped with {} PFC frames sent and a deepest queue of {} B: check the PFC headroom (lint HDR001), that the NICs pause on the same priorities as the switches (HOST003: a NIC that ignores a pause overruns the headroom), and the lossless priorities",
            dropped,
            g("pfc_frames"),
            g("max_queue_bytes")
        ));
    }
    if g("pfc_storms") > 0.0 {
        v.push(format!("{} PFC watchdog storms: a priority stayed paused past the detection time", g("pfc_storms")));
    }
    if g("tcp_priority_pause_frames") > 0.0 {
        let class = r.params.get("tcp_class").and_then(|v| v.as_str()).unwrap_or("?");
        v.push(format!(
            "TCP's class `{class}` is lossless: take its priority out of [qos.pfc] priorities and set `lossless = false` on it (lint PFC002)"
        ));
    }
    if g("pfc_frames") > 0.0 && g("ecn_marked") == 0.0 {
        v.push("pauses but no ECN mark: PFC alone is braking the senders (ECN off on the lossless class?)".into());
    }
    v
}

fn fmt(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x == x.trunc() && x.abs() < 1e15 => format!("{x:.0}"),
        Some(x) => format!("{x:.4}"),
    }
}

/// A figure and its unit (`-` when the run did not produce it).
pub fn with_unit(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".into(),
        Some(_) if unit.is_empty() => fmt(v),
        Some(_) => format!("{} {unit}", fmt(v)),
    }
}

/// A failed check's cause and fix as lines: the mechanism, its evidence, the keys, and the
/// fix with the figure before → after on the twin.
pub fn explanation(c: &CheckResult) -> Vec<String> {
    let mut v = vec![];
    if let Some(cause) = &c.cause {
        v.push(format!("cause: {}", cause.mechanism));
        v.extend(cause.evidence.iter().map(|e| format!("  {e}")));
        if !cause.keys.is_empty() {
            v.push(format!("keys to change: {}", cause.keys.join(", ")));
        }
    }
    if let Some(f) = &c.fix {
        let limit = c.limit.map_or(String::new(), |l| format!(" (limit {} {})", c.cmp, fmt(Some(l))));
        match (f.after, &f.note) {
            (Some(after), _) => v.push(format!(
                "fix: {} — {}: {} → {} {}{limit}",
                f.change,
                match (f.verified, f.verdict_after) {
                    (true, _) => "verified on the twin",
                    // The figure may be within the limit while the changed fabric never settled.
                    (false, Some(Verdict::NotConverged)) => "NOT verified on the twin, the re-run not converged",
                    _ => "NOT enough on the twin",
                },
                fmt(f.before),
                fmt(Some(after)),
                f.unit
            )),
            (None, note) => v.push(format!("fix: {} ({})", f.change, note.as_deref().unwrap_or("not re-run"))),
        }
    }
    v
}

/// The test-runner view: a line per check, then the count.
pub fn render_text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "rocelab validate `{}` ({}, seed {}):", r.fabric, r.file, r.seed);
    let mut told: Vec<(String, String, String)> = vec![];
    for c in &r.checks {
        let limit = c.limit.map_or(String::new(), |l| format!("  (limit {} {})", c.cmp, fmt(Some(l))));
        let _ = writeln!(s, "  {:<4}  {:<40} {:>14}{limit}  {}", c.verdict.tag(), c.name, fmt(c.figure), c.unit);
        if c.verdict.fails() || c.verdict == Verdict::Warn {
            for e in &c.evidence {
                let _ = writeln!(s, "        {e}");
            }
            // A cause shared by a scenario's checks is told once, at the first of them.
            let said = c.cause.as_ref().and_then(|x| {
                told.iter().find(|(sc, m, _)| *sc == c.scenario && *m == x.mechanism).map(|t| t.2.clone())
            });
            match said {
                Some(first) => {
                    let _ = writeln!(s, "        cause: as for {first}");
                    if let Some(fix) = explanation(c).into_iter().find(|l| l.starts_with("fix: ")) {
                        let _ = writeln!(s, "        {fix}");
                    }
                }
                None => {
                    for e in explanation(c) {
                        let _ = writeln!(s, "        {e}");
                    }
                    if let Some(x) = &c.cause {
                        told.push((c.scenario.clone(), x.mechanism.clone(), c.name.clone()));
                    }
                }
            }
        }
    }
    // Which parts of the fault scenarios ran at packet level, and which were skipped.
    for sc in &r.scenarios {
        for l in sc.edges.iter().flat_map(|e| e.lines()) {
            let _ = writeln!(s, "  edges {}: {l}", sc.scenario);
        }
    }
    // Each reason for a refusal, once (the engine's is the same for every check).
    let mut said: Vec<String> = vec![];
    for c in r.checks.iter().filter(|c| c.verdict == Verdict::Refused) {
        let why = c.evidence.join(" ");
        if !said.contains(&why) {
            let _ = writeln!(s, "  skip: {why}");
            said.push(why);
        }
    }
    let _ = writeln!(
        s,
        "result: {} ({} scenarios run on the {}-level engine)",
        r.tally.line(),
        r.scenarios.len(),
        r.engine
    );
    s
}

/// Pretty JSON with a trailing newline.
pub fn to_json(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// JUnit XML as CI systems read it: a `<testsuite>` per scenario (and one for lint), a
/// `<testcase>` per check, `<failure>` with the evidence; reported-only checks are
/// `<skipped>` with their figure.
pub fn junit(r: &Report) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"rocelab validate {}: {}\" tests=\"{}\" failures=\"{}\">",
        xml(&r.fabric),
        xml(&r.tally.line()),
        r.checks.len(),
        r.failed()
    );
    let mut suites: Vec<&str> = vec![];
    for c in &r.checks {
        if !suites.contains(&c.scenario.as_str()) {
            suites.push(&c.scenario);
        }
    }
    for suite in suites {
        let cs: Vec<&CheckResult> = r.checks.iter().filter(|c| c.scenario == suite).collect();
        let fails = cs.iter().filter(|c| c.verdict.fails()).count();
        let skipped = cs.iter().filter(|c| !c.verdict.fails() && c.verdict != Verdict::Pass).count();
        let time = r.scenarios.iter().find(|x| x.scenario == suite).map_or(0.0, |x| x.simulated_us * 1e-6);
        let _ = writeln!(
            s,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{fails}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.6}\">",
            xml(suite),
            cs.len()
        );
        // A fault scenario's runs at packet level and the stretches skipped.
        if let Some(ed) = r.scenarios.iter().find(|x| x.scenario == suite).and_then(|x| x.edges.as_ref()) {
            s.push_str("    <properties>\n");
            for (k, v) in ed.properties() {
                let _ = writeln!(s, "      <property name=\"{}\" value=\"{}\"/>", xml(&k), xml(&v));
            }
            s.push_str("    </properties>\n");
        }
        for c in cs {
            let _ = write!(s, "    <testcase classname=\"{}\" name=\"{}\"", xml(&r.fabric), xml(&c.name));
            let detail = format!(
                "{} = {}{}",
                c.name,
                with_unit(c.figure, &c.unit),
                c.limit.map_or(String::new(), |l| format!(" (limit {} {})", c.cmp, with_unit(Some(l), &c.unit)))
            );
            match c.verdict {
                Verdict::Pass => s.push_str("/>\n"),
                Verdict::Fail | Verdict::NotConverged => {
                    let tag = if c.verdict == Verdict::NotConverged { "not converged: " } else { "" };
                    let _ = writeln!(
                        s,
                        ">\n      <failure message=\"{tag}{}\">{}</failure>\n    </testcase>",
                        xml(&detail),
                        xml(&c.evidence.iter().cloned().chain(explanation(c)).collect::<Vec<_>>().join("\n"))
                    );
                }
                Verdict::Warn => {
                    let _ = writeln!(
                        s,
                        ">\n      <skipped message=\"lint warning: {}: {}\"/>\n    </testcase>",
                        xml(&detail),
                        xml(&c.evidence.join(" "))
                    );
                }
                Verdict::Info => {
                    let _ =
                        writeln!(s, ">\n      <skipped message=\"reported only: {}\"/>\n    </testcase>", xml(&detail));
                }
                Verdict::Refused => {
                    let _ = writeln!(
                        s,
                        ">\n      <skipped message=\"refused: {}\"/>\n    </testcase>",
                        xml(&c.evidence.join(" "))
                    );
                }
            }
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

/// Every check: name, scenario, comparison, default limit, why.
pub fn list() -> String {
    let mut s = String::from(
        "lint                                      every error of `rocelab lint` is a failed check `lint.<CODE>`\n",
    );
    for c in CHECKS.iter() {
        let limit = c.limit.map_or("reported".to_string(), |l| format!("{} {}", c.cmp.sign(), fmt(Some(l))));
        let _ = writeln!(s, "{:<41} {:<12} {}", c.name, limit, c.why);
    }
    s
}

/// One row of an A/B comparison: a check's figure and verdict on both sides, or a scenario
/// metric's value on both.
#[derive(Clone, Debug, Serialize)]
pub struct CompareRow {
    /// A check name, or `<scenario>.<metric>`.
    pub name: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// Verdicts for checks; `None` for plain metrics.
    pub verdict_a: Option<Verdict>,
    pub verdict_b: Option<Verdict>,
    pub changed: bool,
}

/// The same checklist on two configurations.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    /// Checks first (in the checklist's order), then every scenario metric.
    pub rows: Vec<CompareRow>,
    #[serde(skip)]
    pub reports: (Report, Report),
}

impl Comparison {
    /// Checks that passed on A and fail on B.
    pub fn regressions(&self) -> Vec<&CompareRow> {
        self.rows.iter().filter(|r| r.verdict_a == Some(Verdict::Pass) && r.verdict_b == Some(Verdict::Fail)).collect()
    }
}

fn differs(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => (x - y).abs() > 1e-9 * x.abs().max(y.abs()).max(1.0),
        (None, None) => false,
        _ => true,
    }
}

/// Compares two validation reports row by row.
pub fn compare(a: Report, b: Report) -> Comparison {
    let mut rows = vec![];
    let mut names: Vec<&str> = a.checks.iter().map(|c| c.name.as_str()).collect();
    for c in &b.checks {
        if !names.contains(&c.name.as_str()) {
            names.push(&c.name);
        }
    }
    for n in names {
        let (ca, cb) = (a.checks.iter().find(|c| c.name == n), b.checks.iter().find(|c| c.name == n));
        let (fa, fb) = (ca.and_then(|c| c.figure), cb.and_then(|c| c.figure));
        let (va, vb) = (ca.map(|c| c.verdict), cb.map(|c| c.verdict));
        rows.push(CompareRow {
            name: n.to_string(),
            a: fa,
            b: fb,
            verdict_a: va,
            verdict_b: vb,
            changed: differs(fa, fb) || va != vb,
        });
    }
    for sa in &a.scenarios {
        let Some(sb) = b.scenarios.iter().find(|s| s.scenario == sa.scenario) else { continue };
        let mut keys: Vec<&str> = sa.metrics.keys().copied().collect();
        keys.extend(sb.metrics.keys().copied().filter(|k| !sa.metrics.contains_key(k)));
        for k in keys {
            let (x, y) = (metric(sa, k), metric(sb, k));
            rows.push(CompareRow {
                name: format!("{}.{k}", sa.scenario),
                a: x,
                b: y,
                verdict_a: None,
                verdict_b: None,
                changed: differs(x, y),
            });
        }
    }
    Comparison { a: a.file.clone(), b: b.file.clone(), rows, reports: (a, b) }
}

/// The side-by-side view: every row that changed, then the count.
pub fn render_compare(c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "rocelab compare: A = {}, B = {}", c.a, c.b);
    let v = |x: Option<Verdict>| x.map_or("", Verdict::compare_tag);
    let changed: Vec<&CompareRow> = c.rows.iter().filter(|r| r.changed).collect();
    if changed.is_empty() {
        let _ = writeln!(s, "  no change: every check and every scenario figure is the same");
    } else {
        let _ = writeln!(s, "  {:<46} {:>14} {:>14} {:>9}  verdict", "", "A", "B", "B − A");
        for r in &changed {
            let delta = match (r.a, r.b) {
                (Some(x), Some(y)) if x != 0.0 => format!("{:+.1} %", (y - x) / x.abs() * 100.0),
                (Some(x), Some(y)) => format!("{:+}", y - x),
                _ => "-".into(),
            };
            let verdict = if r.verdict_a.is_some() {
                format!("{} → {}", v(r.verdict_a), v(r.verdict_b))
            } else {
                String::new()
            };
            let _ = writeln!(s, "  {:<46} {:>14} {:>14} {:>9}  {verdict}", r.name, fmt(r.a), fmt(r.b), delta);
        }
    }
    let reg = c.regressions();
    let _ = writeln!(
        s,
        "result: {} of {} rows changed; {} check(s) that pass on A fail on B{}",
        changed.len(),
        c.rows.len(),
        reg.len(),
        if reg.is_empty() {
            String::new()
        } else {
            format!(" ({})", reg.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", "))
        }
    );
    s
}
