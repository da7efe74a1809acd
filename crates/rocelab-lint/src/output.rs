//! Renderings of lint reports: pure functions from reports to text.
//!
//! * `human` — grouped by file, one block per finding (`line:col  severity  CODE  message`,
//!   then the fix), a summary line; ANSI colours only when asked (the CLI asks on a terminal);
//! * `json`  — `{ "files": [FileReport...], "summary": {...} }`;
//! * `sarif` — SARIF 2.1.0: one run, the rule table as `tool.driver.rules`, every finding a
//!   `result` with a physical location; suppressed findings are included with a `suppressions`
//!   entry carrying the reason, which is how code-scanning UIs show a dismissed alert.

use crate::registry::RULES;
use crate::{FileReport, Finding, Severity};
use serde_json::{json, Value};
use std::fmt::Write;

/// Totals over reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub suppressed: usize,
    pub files: usize,
}

pub fn summarize(reports: &[FileReport]) -> Summary {
    let mut s = Summary { files: reports.len(), ..Default::default() };
    for r in reports {
        s.errors += r.count(Severity::Error);
        s.warnings += r.count(Severity::Warning);
        s.infos += r.count(Severity::Info);
        s.suppressed += r.suppressed.len();
    }
    s
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The human format. `colour` adds ANSI escapes (bold file names, red errors, yellow warnings).
pub fn human(reports: &[FileReport], colour: bool) -> String {
    let paint = |code: &str, s: &str| if colour { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_string() };
    let mut out = String::new();
    for r in reports {
        let _ = writeln!(out, "{}", paint("1", &r.file));
        if r.findings.is_empty() {
            let _ = writeln!(out, "  clean");
        }
        for f in &r.findings {
            let sev = match f.severity {
                Severity::Error => paint("1;31", "error  "),
                Severity::Warning => paint("1;33", "warning"),
                Severity::Info => paint("1;36", "info   "),
            };
            let pos = format!("{}:{}", f.line, f.column);
            let _ = writeln!(out, "  {pos:<8} {sev} {}  {}", paint("1", f.code), f.message);
            let _ = writeln!(out, "  {:<8} {} {}", "", paint("2", "= help:"), f.hint);
        }
        for s in &r.suppressed {
            let f = &s.finding;
            let _ = writeln!(
                out,
                "  {:<8} {} {}  disabled ({}): {}",
                format!("{}:{}", f.line, f.column),
                paint("2", "off    "),
                f.code,
                s.source,
                s.reason
            );
        }
    }
    let s = summarize(reports);
    let mut parts = vec![plural(s.errors, "error"), plural(s.warnings, "warning")];
    if s.infos > 0 {
        parts.push(plural(s.infos, "note"));
    }
    if s.suppressed > 0 {
        parts.push(format!("{} disabled", s.suppressed));
    }
    let _ = writeln!(out, "{} in {}", parts.join(", "), plural(s.files, "file"));
    out
}

/// The JSON format.
pub fn json(reports: &[FileReport]) -> String {
    let s = summarize(reports);
    let v = json!({
        "tool": "rocelab lint",
        "version": env!("CARGO_PKG_VERSION"),
        "files": reports,
        "summary": {
            "errors": s.errors,
            "warnings": s.warnings,
            "infos": s.infos,
            "suppressed": s.suppressed,
            "files": s.files,
        }
    });
    let mut text = serde_json::to_string_pretty(&v).expect("reports serialize");
    text.push('\n');
    text
}

pub const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A file path as a SARIF artifact URI: relative paths stay relative (resolved against the
/// checkout by code-scanning UIs), with `/` separators and spaces escaped.
/// A file path as an RFC 3986 URI reference: `/` separates segments, unreserved characters and
/// the sub-delimiters stay, and every other byte of the UTF-8 path (space, `#`, `?`, `%`, `:`,
/// `é`, ...) is percent-encoded. `:` is encoded too, so a first segment never reads as a scheme.
fn uri(file: &str) -> String {
    let path = file.replace('\\', "/");
    let path = path.strip_prefix("./").unwrap_or(&path);
    let mut u = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=@/".contains(&b);
        if keep {
            u.push(b as char);
        } else {
            u.push_str(&format!("%{b:02X}"));
        }
    }
    u
}

fn result(f: &Finding) -> Value {
    let index = RULES.iter().position(|r| r.code == f.code).unwrap_or(0);
    json!({
        "ruleId": f.code,
        "ruleIndex": index,
        "level": level(f.severity),
        "message": { "text": format!("{} (fix: {})", f.message, f.hint) },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri(&f.file) },
                "region": { "startLine": f.line.max(1), "startColumn": f.column.max(1) }
            },
            "logicalLocations": [{ "fullyQualifiedName": f.path, "kind": "member" }]
        }]
    })
}

/// The SARIF 2.1.0 format.
pub fn sarif(reports: &[FileReport]) -> String {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.code,
                "name": r.title,
                "shortDescription": { "text": r.title },
                "fullDescription": { "text": r.checks },
                "help": { "text": format!("{} Fix: {} (docs/lint/{}.md)", r.why, r.fix, r.code) },
                "defaultConfiguration": { "level": level(r.severity) }
            })
        })
        .collect();
    let mut results = Vec::new();
    for r in reports {
        for f in &r.findings {
            results.push(result(f));
        }
        for s in &r.suppressed {
            let mut v = result(&s.finding);
            v["suppressions"] = json!([{
                "kind": if s.source == "file" { "inSource" } else { "external" },
                "justification": s.reason
            }]);
            results.push(v);
        }
    }
    let v = json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "rocelab",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules
                }
            },
            "results": results
        }]
    });
    let mut text = serde_json::to_string_pretty(&v).expect("sarif serializes");
    text.push('\n');
    text
}
