//! What every verb's output shares: the `--format text|json` switch, the JSON envelope
//! (`schema`, `version`), the writer of a run's set of files, and "did you mean" for names.
//!
//! Standard output carries the result (text for people, JSON for tools); standard error carries
//! progress, notes and errors, so `rocelab ... --format json | jq` always reads one document.

use crate::common::Failure;
use std::path::Path;

/// Text for people, JSON for tools: the same two on every verb (`--json` is short for
/// `--format json`; see `expand_json_alias`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// `--json` is kept as an alias of `--format json` on every verb: rewritten before clap parses,
/// so that no verb needs a second flag and the two can never disagree. Arguments after `--`
/// are left alone.
pub fn expand_json_alias(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut rest = false;
    for a in args {
        if !rest && a == "--" {
            rest = true;
        }
        if !rest && a == "--json" {
            out.push("--format=json".into());
        } else {
            out.push(a);
        }
    }
    out
}

/// The version of the output schemas (bumped when a document loses or renames a key).
pub const SCHEMA_VERSION: u32 = 1;

/// Puts the envelope on a JSON document: `schema` names the document
/// (`rocelab.<verb>.<document>/v1`) and `version` the rocelab that wrote it, as the first two
/// keys of the top-level object; keys the document already has stay as they are. A top-level
/// array becomes `results` of an enveloped object. Text that is not JSON is returned unchanged.
pub fn envelope(schema: &str, json: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else { return json.to_string() };
    let name = format!("rocelab.{schema}/v{SCHEMA_VERSION}");
    let version = env!("CARGO_PKG_VERSION");
    let pretty = json.trim_start().starts_with("{\n") || json.trim_start().starts_with("[\n");
    match v {
        serde_json::Value::Object(m) => {
            // Inserted as text so that the document's own key order (and bytes) stay as they were.
            let mut head = String::new();
            let sep = if pretty { "\n  " } else { "" };
            if !m.contains_key("schema") {
                head.push_str(&format!("{sep}\"schema\": {},", serde_json::Value::from(name)));
            }
            if !m.contains_key("version") {
                head.push_str(&format!("{sep}\"version\": \"{version}\","));
            }
            if head.is_empty() {
                return json.to_string();
            }
            if m.is_empty() {
                head.pop();
                let close = if pretty { "\n}" } else { "}" };
                let nl = if json.ends_with('\n') { "\n" } else { "" };
                return format!("{{{head}{close}{nl}");
            }
            let at = json.find('{').unwrap_or(0) + 1;
            let (a, b) = json.split_at(at);
            // Pretty text continues with "\n  \"key\"": put ours before that newline.
            format!("{a}{head}{b}")
        }
        serde_json::Value::Array(_) => {
            // Wrapped as text too: the items keep their key order.
            let schema = serde_json::Value::from(name);
            let body = json.trim_end();
            let nl = if json.ends_with('\n') { "\n" } else { "" };
            if pretty {
                let indented = body.lines().collect::<Vec<_>>().join("\n  ");
                format!("{{\n  \"schema\": {schema},\n  \"version\": \"{version}\",\n  \"results\": {indented}\n}}{nl}")
            } else {
                format!("{{\"schema\":{schema},\"version\":\"{version}\",\"results\":{body}}}{nl}")
            }
        }
        _ => json.to_string(),
    }
}

/// Writes a run's files as one set into the directory `out`: all of them into a temporary
/// directory beside it, then swapped in (`rocelab_model::atomic::OutputSet`), so `out` never
/// mixes two runs' files and a kill leaves the old set or the new one.
pub fn write_set(out: &Path, files: &[(&str, &[u8])]) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure::bad_input(format!("error: cannot write {}: {e}", out.display()));
    if out.exists() && !out.is_dir() {
        return Err(Failure::bad_input(format!(
            "error: --out {}: a file is there, and the run writes a directory of files\n  = help: give a directory",
            out.display()
        )));
    }
    let mut set = rocelab_model::atomic::OutputSet::create(out).map_err(fail)?;
    set.also_replaces(EARLIER_OUTPUTS);
    for (name, bytes) in files {
        set.write(name, bytes).map_err(fail)?;
    }
    set.commit().map_err(fail)
}

/// Prints a document built by the CLI itself (a listing, a closing count) as pretty JSON in
/// the envelope.
pub fn print_json(schema: &str, doc: &serde_json::Value) {
    print!("{}", envelope(schema, &(serde_json::to_string_pretty(doc).unwrap_or_default() + "\n")));
}

/// What `simulate` and `import` wrote into `--out` before output sets had a marker: a directory
/// holding only these is an earlier run's, replaced as a set.
const EARLIER_OUTPUTS: &[&str] = &[
    "summary.json",
    "flows.csv",
    "metrics.prom",
    "timeseries.csv",
    "collective.txt",
    "collective.json",
    "step.txt",
    "step.json",
    "scenario.json",
    "fabric.toml",
];

/// The candidate nearest to `word` by edit distance, if it is near enough to be a typo
/// (about a third of the word's length, at least one edit: `leafs` → `leaves` is two).
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = word.chars().count().div_ceil(3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(&word.to_lowercase(), &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Adds "did you mean" to an error message where it names an unknown key, variant or value
/// together with the accepted ones, as serde does ("unknown field `kmn`, expected one of
/// `kmin`, `kmax`") — every error of a fabric, plan, policy or sweep file passes through here.
pub fn with_suggestions(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for line in message.split_inclusive('\n') {
        let plain = plain_types(line);
        let line = plain.as_str();
        out.push_str(line);
        let Some(hint) = suggestion_for(line) else { continue };
        if !line.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("  = help: did you mean `{hint}`?"));
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// serde's Rust type names in "invalid type: ..., expected u64" said as a user says them.
fn plain_types(line: &str) -> String {
    if !line.contains("invalid type:") && !line.contains("invalid value:") {
        return line.to_string();
    }
    const WORDS: [(&str, &str); 12] = [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list in [ ]"),
        ("expected a map", "expected a table"),
    ];
    let mut s = line.to_string();
    for (rust, said) in WORDS {
        // Whole words only: "expected u64" but not "expected u64s".
        if let Some(i) = s.find(rust) {
            let end = i + rust.len();
            if !s[end..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                s.replace_range(i..end, said);
            }
        }
    }
    s
}

fn suggestion_for(line: &str) -> Option<String> {
    const PREFIXES: [&str; 3] = ["unknown field `", "unknown variant `", "unknown value `"];
    let (start, rest) = PREFIXES.iter().find_map(|p| line.find(p).map(|i| (i, &line[i + p.len()..])))?;
    let _ = start;
    let (word, after) = rest.split_once('`')?;
    let expected = after.split_once("expected ")?.1;
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    did_you_mean(word, names.iter().copied()).map(str::to_string)
}

/// A documentation page (Markdown) as manual-page text: links become their text (an installed
/// page has no `docs/` to point to), code fences and heading marks go; the rest, tables
/// included, reads as it is.
pub fn man_text(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            continue;
        }
        let line = line.trim_start_matches('#').trim_start_matches(' ');
        let mut rest = line;
        // [text](target) -> text
        while let Some(open) = rest.find('[') {
            let Some(close) = rest[open..].find("](").map(|i| open + i) else { break };
            let Some(end) = rest[close..].find(')').map(|i| close + i) else { break };
            out.push_str(&rest[..open]);
            out.push_str(&rest[open + 1..close]);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_leads_and_keeps_the_document() {
        let doc = "{\n  \"seed\": 1,\n  \"flows\": []\n}\n";
        let e = envelope("simulate.summary", doc);
        assert!(e.starts_with("{\n  \"schema\": \"rocelab.simulate.summary/v1\",\n  \"version\": \""), "{e}");
        assert!(e.ends_with("  \"seed\": 1,\n  \"flows\": []\n}\n"), "{e}");
        let v: serde_json::Value = serde_json::from_str(&e).unwrap();
        assert_eq!(v["seed"], 1);
        // A document with its own version keeps it; an array becomes `results`.
        let e = envelope("lint.report", "{\"version\":\"9\",\"a\":1}");
        assert_eq!(e, "{\"schema\": \"rocelab.lint.report/v1\",\"version\":\"9\",\"a\":1}");
        let e = envelope("x.y", "[\n  {\n    \"b\": 1,\n    \"a\": 2\n  }\n]\n");
        assert!(e.ends_with("  \"results\": [\n    {\n      \"b\": 1,\n      \"a\": 2\n    }\n  ]\n}\n"), "{e}");
        let v: serde_json::Value = serde_json::from_str(&envelope("x.y", "[\n  1,\n  2\n]\n")).unwrap();
        assert_eq!(v["results"], serde_json::json!([1, 2]));
        assert_eq!(v["schema"], "rocelab.x.y/v1");
        let v: serde_json::Value = serde_json::from_str(&envelope("x.y", "{}")).unwrap();
        assert_eq!(v["schema"], "rocelab.x.y/v1");
        assert_eq!(envelope("x.y", "not json"), "not json");
    }

    #[test]
    fn man_text_keeps_the_words_of_links_and_drops_fences() {
        let t = man_text("## Flags\nSee [the fabric file](fabric-file.md) and [x](y).\n```sh\nrocelab x\n```\n");
        assert_eq!(t, "Flags\nSee the fabric file and x.\nrocelab x\n");
    }

    #[test]
    fn json_alias_stops_at_double_dash() {
        let v = expand_json_alias(["rocelab", "doctor", "--json", "--", "--json"].map(std::ffi::OsString::from));
        assert_eq!(v, ["rocelab", "doctor", "--format=json", "--", "--json"]);
    }

    #[test]
    fn suggestions_follow_serde_errors() {
        let m = "f.toml:3:1: error: unknown field `kmn`, expected one of `kmin_bytes`, `kmin`, `kmax`\n  = help: x";
        let s = with_suggestions(m);
        assert!(s.contains("unknown field `kmn`, expected one of `kmin_bytes`, `kmin`, `kmax`\n  = help: did you mean `kmin`?\n  = help: x"), "{s}");
        assert_eq!(with_suggestions("unknown field `zzzzzz`, expected `a`"), "unknown field `zzzzzz`, expected `a`");
        assert_eq!(did_you_mean("incst", ["incast", "sendrecv"]), Some("incast"));
        assert_eq!(did_you_mean("x", ["incast"]), None);
        assert_eq!(
            with_suggestions("f.toml:48:8: error: `simulation.seed`: invalid type: string \"one\", expected u64\n"),
            "f.toml:48:8: error: `simulation.seed`: invalid type: string \"one\", expected a whole number, 0 or more\n"
        );
        assert_eq!(
            with_suggestions("invalid type: integer `1`, expected f64"),
            "invalid type: integer `1`, expected a number"
        );
        assert_eq!(did_you_mean("leafs", ["spines", "leaves", "hosts_per_leaf"]), Some("leaves"));
        assert_eq!(did_you_mean("sed", ["seed", "duration_us"]), Some("seed"));
    }
}
