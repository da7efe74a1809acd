//! Diagnostics that point into the fabric file.
//!
//! Validation speaks in key paths (`qos.class[0].ecn.kmin_bytes`); a `SourceMap` built from the
//! same text turns a path into file:line:column. Keeping the two apart lets `Config` stay a
//! plain serde struct while every error, from the loader or from lint, still names the line.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// One problem with the input: where, what, and how to fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Key path in the fabric file, e.g. `topology.leaf_spine.leaves` (may be empty).
    pub path: String,
    pub message: String,
    pub hint: String,
    pub location: Option<Location>,
}

impl Diagnostic {
    pub fn new(path: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Diagnostic { path: path.into(), message: message.into(), hint: hint.into(), location: None }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(l) => write!(f, "{l}: error: ")?,
            None => write!(f, "error: ")?,
        }
        if self.path.is_empty() {
            write!(f, "{}", self.message)?;
        } else {
            write!(f, "`{}`: {}", self.path, self.message)?;
        }
        if !self.hint.is_empty() {
            write!(f, "\n  = help: {}", self.hint)?;
        }
        Ok(())
    }
}

/// Byte spans of every key path in a TOML document, and the line index to turn them into
/// line:column.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    file: String,
    line_starts: Vec<usize>,
    spans: BTreeMap<String, Range<usize>>,
}

impl SourceMap {
    /// Builds the map; a document that does not parse gives a map with lines but no paths.
    pub fn new(file: &str, text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut spans = BTreeMap::new();
        if let Ok(doc) = toml_edit::ImDocument::parse(text) {
            walk_table(doc.as_table(), "", &mut spans);
        }
        SourceMap { file: file.to_string(), line_starts, spans }
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    /// Location of a byte offset (1-based line and column, columns in characters).
    pub fn locate_offset(&self, text: &str, offset: usize) -> Location {
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts[line - 1];
        let end = offset.min(text.len());
        let column = text.get(start..end).map(|s| s.chars().count()).unwrap_or(0) + 1;
        Location { file: self.file.clone(), line, column }
    }

    /// Location of a key path, or of its longest prefix that exists in the file (a value that
    /// took its default is reported at the table that should hold it).
    pub fn locate(&self, text: &str, path: &str) -> Location {
        let mut p = path;
        loop {
            if let Some(span) = self.spans.get(p) {
                return self.locate_offset(text, span.start);
            }
            match p.rfind(['.', '[']) {
                Some(i) => p = &p[..i],
                None => {
                    return Location { file: self.file.clone(), line: 1, column: 1 };
                }
            }
        }
    }

    /// The innermost key path whose value spans byte `offset` (a parse error's position).
    pub fn path_at(&self, offset: usize) -> Option<&str> {
        self.spans
            .iter()
            .filter(|(_, s)| s.start <= offset && offset < s.end.max(s.start + 1))
            .min_by_key(|(p, s)| (s.end - s.start, std::cmp::Reverse(p.len())))
            .map(|(p, _)| p.as_str())
    }

    pub fn contains(&self, path: &str) -> bool {
        self.spans.contains_key(path)
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk_table(t: &toml_edit::Table, prefix: &str, out: &mut BTreeMap<String, Range<usize>>) {
    for (k, item) in t.iter() {
        let path = join(prefix, k);
        // Prefer the value's span; fall back to the key's (implicit tables have none).
        let span = item.span().or_else(|| t.key(k).and_then(|key| key.span()));
        if let Some(s) = span {
            out.insert(path.clone(), s);
        }
        walk_item(item, &path, out);
    }
}

fn walk_item(item: &toml_edit::Item, path: &str, out: &mut BTreeMap<String, Range<usize>>) {
    match item {
        toml_edit::Item::Table(t) => walk_table(t, path, out),
        toml_edit::Item::ArrayOfTables(a) => {
            for (i, t) in a.iter().enumerate() {
                let p = format!("{path}[{i}]");
                if let Some(s) = t.span() {
                    out.insert(p.clone(), s);
                }
                walk_table(t, &p, out);
            }
        }
        toml_edit::Item::Value(v) => walk_value(v, path, out),
        toml_edit::Item::None => {}
    }
}

fn walk_value(v: &toml_edit::Value, path: &str, out: &mut BTreeMap<String, Range<usize>>) {
    match v {
        toml_edit::Value::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                let p = format!("{path}[{i}]");
                if let Some(s) = e.span() {
                    out.insert(p.clone(), s);
                }
                walk_value(e, &p, out);
            }
        }
        toml_edit::Value::InlineTable(t) => {
            for (k, e) in t.iter() {
                let p = join(path, k);
                if let Some(s) = e.span() {
                    out.insert(p.clone(), s);
                }
                walk_value(e, &p, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "[topology.leaf_spine]\nleaves = 4\n\n[[qos.class]]\nname = \"a\"\n\n[[qos.class]]\nname = \"b\"\necn = { kmin_bytes = 5, kmax_bytes = 1, pmax = 0.1 }\ndscp = [1, 2, 300]\n";

    #[test]
    fn paths_resolve_to_lines() {
        let m = SourceMap::new("f.toml", DOC);
        assert_eq!(m.locate(DOC, "topology.leaf_spine.leaves").line, 2);
        assert_eq!(m.locate(DOC, "qos.class[1].name").line, 8);
        let l = m.locate(DOC, "qos.class[1].ecn.kmax_bytes");
        assert_eq!((l.line, l.column), (9, 38));
        assert_eq!(m.locate(DOC, "qos.class[1].dscp[2]").line, 10);
    }

    #[test]
    fn missing_paths_fall_back_to_the_nearest_table() {
        let m = SourceMap::new("f.toml", DOC);
        assert_eq!(m.locate(DOC, "topology.leaf_spine.spines").line, 1);
        assert_eq!(m.locate(DOC, "nothing.here").line, 1);
    }
}
