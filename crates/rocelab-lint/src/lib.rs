//! `rocelab lint`: static checks for the RoCE mistakes that are silent in production.
//!
//! Traffic still flows when PFC is on too many priorities, when CNPs queue behind data or when a
//! 300 m cable has 3 m of headroom; it just flows badly, or stops under the wrong incast. Each
//! such mistake is a *rule* with a stable code (`PFC002`), a severity and a one-line title
//! (`registry::RULES`, one page per code in `docs/lint/`). A rule reads the validated `Model`
//! (and the file as written, `Model::config`) and emits `Finding`s located at the offending key
//! of the fabric file (file:line:column), with the numbers involved and a fix.
//!
//! ```text
//! Model + text --Ctx::new--> derived facts (lossless priorities, headroom per port, buffers)
//!                               │
//!            rules::{qos, host, ecn, buffer, fleet, topo} + deadlock ──> findings
//!                               │
//!              lint.disable (file) / --disable (CLI) ──> FileReport { findings, suppressed }
//!                               │
//!                      output::{human, json, sarif} (pure functions to text)
//! ```
//!
//! * `registry` — the rule table: code, severity, title and the text of `docs/lint/CODE.md`;
//! * `rules`    — the checks, grouped by what they read;
//! * `deadlock` — channel dependency graph of the lossless priority, cycle search, and the same
//!   again for every single switch-to-switch link failure;
//! * `output`   — the human, JSON and SARIF 2.1.0 renderings.
//!
//! Rules are plain functions over one shared `Ctx` rather than trait objects: they share facts
//! that are expensive to derive (headroom per port, buffer accounting, routing), and one check
//! often emits several related codes (the CNP checks, the host/switch agreement checks). The
//! registry is the single list of codes; a test keeps it, the emitters, the tests and the docs
//! in step. Output is deterministic: findings are sorted, and nothing on an output path
//! iterates a hash map.

pub mod deadlock;
pub mod output;
pub mod registry;
mod rules;

use rocelab_model::presets::Headroom;
use rocelab_model::{LoadError, Model, NodeId, SourceMap};
use serde::Serialize;
use std::fmt;
use std::path::Path;

pub use registry::{rule, RuleInfo, RULES};

/// How bad a finding is. `Error` fails `rocelab lint`; `Warning` fails it with `--deny warnings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One problem, located at the key of the fabric file that causes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub code: &'static str,
    pub severity: Severity,
    pub title: &'static str,
    /// Key path of the offending value, e.g. `qos.class[0].ecn.kmax_bytes`.
    pub path: String,
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// What is wrong, with the numbers involved.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

/// A finding that a `lint.disable` entry or `--disable` switched off, with the reason given.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suppressed {
    pub finding: Finding,
    pub reason: String,
    /// `file` (the fabric file's `[[lint.disable]]`) or `command line`.
    pub source: &'static str,
}

/// The lint result of one fabric file.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FileReport {
    pub file: String,
    /// Sorted by line, column, code.
    pub findings: Vec<Finding>,
    pub suppressed: Vec<Suppressed>,
}

impl FileReport {
    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }
}

/// Options that do not live in the fabric file.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// (code, reason) pairs from the command line.
    pub disable: Vec<(String, String)>,
}

/// Why a file could not be linted.
#[derive(Debug)]
pub enum LintError {
    Load(LoadError),
}

impl fmt::Display for LintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LintError::Load(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LintError {}

/// Reads, validates and lints one fabric file.
pub fn lint_file(path: &Path, opts: &Options) -> Result<FileReport, LintError> {
    lint_file_observed(path, opts, &|_| {})
}

/// `lint_file`, naming each stage to `stage` as it starts (for a progress display).
pub fn lint_file_observed(path: &Path, opts: &Options, stage: rocelab_model::Stage) -> Result<FileReport, LintError> {
    let file = path.display().to_string();
    stage("reading the file");
    let text = rocelab_model::read_text(path).map_err(LintError::Load)?;
    let model = rocelab_model::load_str_observed(&file, &text, stage).map_err(LintError::Load)?;
    Ok(lint_observed(&model, &file, &text, opts, stage))
}

/// Lints a validated model; `text` is the file it came from (for locations).
pub fn lint(model: &Model, file: &str, text: &str, opts: &Options) -> FileReport {
    lint_observed(model, file, text, opts, &|_| {})
}

/// `lint`, naming each stage to `stage` as it starts.
pub fn lint_observed(model: &Model, file: &str, text: &str, opts: &Options, stage: rocelab_model::Stage) -> FileReport {
    stage("deriving headroom and buffers");
    let cx = Ctx::new(model, file, text);
    let mut out = Findings { cx: &cx, list: Vec::new() };
    stage("running the rules");
    rules::run_all(&cx, &mut out);
    stage("checking for lossless deadlocks");
    deadlock::check(&cx, &mut out);
    let mut disabled: Vec<(&str, &str, &'static str)> = Vec::new();
    for (i, d) in model.config.lint.disable.iter().enumerate() {
        if rule(&d.code).is_none() {
            out.emit(
                "LNT001",
                format!("lint.disable[{i}].code"),
                format!("`{}` is not a rocelab lint code, so this entry disables nothing", d.code),
                "use a code from `rocelab lint --list-rules` (docs/lint.md), or remove the entry",
            );
        } else {
            disabled.push((d.code.as_str(), d.reason.as_str(), "file"));
        }
    }
    for (code, reason) in &opts.disable {
        disabled.push((code.as_str(), reason.as_str(), "command line"));
    }
    let mut list = out.list;
    list.sort_by(|a, b| (a.line, a.column, a.code, &a.message).cmp(&(b.line, b.column, b.code, &b.message)));
    let mut report = FileReport { file: file.to_string(), ..Default::default() };
    for f in list {
        match disabled.iter().find(|(c, _, _)| c.eq_ignore_ascii_case(f.code)) {
            Some((_, reason, source)) => {
                report.suppressed.push(Suppressed { finding: f, reason: reason.to_string(), source })
            }
            None => report.findings.push(f),
        }
    }
    report
}

/// Collects findings, filling in severity, title and location from the registry and file.
pub struct Findings<'a> {
    cx: &'a Ctx<'a>,
    list: Vec<Finding>,
}

impl Findings<'_> {
    /// Emits a finding of rule `code` at key `path`. Panics on an unregistered code (a bug
    /// caught by the tests, never by input).
    pub fn emit(
        &mut self,
        code: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        let r = rule(code).unwrap_or_else(|| panic!("lint rule {code} is not registered"));
        let path = path.into();
        let loc = self.cx.map.locate(self.cx.text, &path);
        self.list.push(Finding {
            code: r.code,
            severity: r.severity,
            title: r.title,
            path,
            file: loc.file,
            line: loc.line,
            column: loc.column,
            message: message.into(),
            hint: hint.into(),
        });
    }

    pub fn list(&self) -> &[Finding] {
        &self.list
    }
}

/// What every rule reads: the model, the file, and facts derived once.
pub struct Ctx<'a> {
    pub model: &'a Model,
    pub text: &'a str,
    pub map: SourceMap,
    /// PFC-enabled priorities on the switches, ascending.
    pub lossless_priorities: Vec<u8>,
    /// Per port (indexed by `PortId`): the headroom the SONiC model asks for on that port as a
    /// switch ingress (`None` on host ports).
    pub required_headroom: Vec<Option<Headroom>>,
    /// Per switch node (indexed by `NodeId`): buffer accounting (`None` for hosts).
    pub buffers: Vec<Option<SwitchBuffer>>,
}

/// How a switch's buffer is spent before any packet arrives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwitchBuffer {
    pub buffer_bytes: u64,
    /// Σ over ports and lossless priorities of the headroom in force (configured, or computed).
    pub headroom_bytes: u64,
    /// Private reserves: `reserve_bytes` per (port, ingress priority group) and per (port, queue)
    /// that the classes use.
    pub reserve_bytes: u64,
}

impl SwitchBuffer {
    /// Headroom plus reserves (saturating: a fabric file may hold absurd values).
    pub fn committed_bytes(&self) -> u64 {
        self.headroom_bytes.saturating_add(self.reserve_bytes)
    }

    /// What is left for the dynamically shared pool.
    pub fn shared_bytes(&self) -> u64 {
        self.buffer_bytes.saturating_sub(self.committed_bytes())
    }
}

/// Bytes of header around a RoCEv2 payload: Ethernet 14 + FCS 4 + IPv4 20 + UDP 8 + BTH 12 +
/// RETH 16 + ICRC 4.
pub const ROCE_HEADER_BYTES: u32 = 78;

impl<'a> Ctx<'a> {
    pub fn new(model: &'a Model, file: &str, text: &'a str) -> Ctx<'a> {
        let map = SourceMap::new(file, text);
        let qos = &model.qos;
        // On InfiniBand every VL in use is lossless (credits): the deadlock check reads them.
        let lossless_priorities: Vec<u8> = match &model.ib {
            Some(ib) => {
                let mut vls: Vec<u8> = qos.classes.iter().map(|c| ib.vl_of_sl(c.priority)).collect();
                vls.sort();
                vls.dedup();
                vls
            }
            None => (0..8).filter(|p| qos.pfc_enabled(*p)).collect(),
        };
        let mut required_headroom = vec![None; model.ports.len()];
        let mut buffers = vec![None; model.nodes.len()];
        let used_priorities = {
            let mut ps: Vec<u8> = qos.classes.iter().map(|c| c.priority).collect();
            ps.sort();
            ps.dedup();
            ps.len() as u64
        };
        let used_queues = {
            let mut qs: Vec<u8> = qos.classes.iter().map(|c| c.queue).collect();
            qs.sort();
            qs.dedup();
            qs.len() as u64
        };
        for sw in model.switches() {
            let Some(sm) = model.switch_model_of(sw) else { continue };
            let p = &sm.params;
            let mut headroom_total = 0u64;
            let node = model.node(sw);
            // One formula for lint and engine: `Model::required_headroom` (SONiC's model).
            for port in node.ports() {
                let Some(h) = model.required_headroom(port) else { continue };
                let in_force = model.headroom_in_force(port);
                headroom_total =
                    headroom_total.saturating_add(in_force.saturating_mul(lossless_priorities.len() as u64));
                required_headroom[port.idx()] = Some(h);
            }
            let reserve = p.reserve_bytes.saturating_mul(node.num_ports as u64 * (used_priorities + used_queues));
            buffers[sw.idx()] = Some(SwitchBuffer {
                buffer_bytes: p.buffer_bytes,
                headroom_bytes: headroom_total,
                reserve_bytes: reserve,
            });
        }
        Ctx { model, text, map, lossless_priorities, required_headroom, buffers }
    }

    /// The switch whose buffer has the least left for the shared pool.
    pub fn tightest_switch(&self) -> Option<(NodeId, SwitchBuffer)> {
        self.buffers
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.map(|b| (NodeId(i as u32), b)))
            .min_by_key(|(_, b)| (b.shared_bytes(), u64::MAX - b.committed_bytes()))
    }

    /// Key path of the topology section (for findings about the fabric as a whole).
    pub fn topology_path(&self) -> &'static str {
        let t = &self.model.config.topology;
        if t.leaf_spine.is_some() {
            "topology.leaf_spine"
        } else if t.fat_tree.is_some() {
            "topology.fat_tree"
        } else if t.rail_optimized.is_some() {
            "topology.rail_optimized"
        } else {
            "topology.explicit"
        }
    }

    /// Key path of a switch model's table, or of the topology key that picked the preset.
    pub fn switch_model_path(&self, sw: NodeId) -> String {
        match self.model.switch_model_of(sw) {
            Some(m) if self.model.config.switch_models.contains_key(&m.name) => format!("switch_models.{}", m.name),
            _ => self.topology_path().to_string(),
        }
    }
}

/// Human-readable byte counts for messages: `1500000 B (1.5 MB)`.
pub(crate) fn bytes(b: u64) -> String {
    if b >= 1_000_000 {
        format!("{b} B ({:.1} MB)", b as f64 / 1e6)
    } else if b >= 10_000 {
        format!("{b} B ({:.0} KB)", b as f64 / 1e3)
    } else {
        format!("{b} B")
    }
}

pub(crate) fn gbps(g: f64) -> String {
    if (g - g.round()).abs() < 1e-9 {
        format!("{}G", g.round() as u64)
    } else {
        format!("{g:.1}G")
    }
}
