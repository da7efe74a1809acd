//! A containerlab topology (`*.clab.yml`): its nodes and links as an explicit rocelab fabric.
//!
//! The workspace has no YAML crate, so this reads the subset of YAML a topology file uses
//! for what is imported, by indentation: `topology.defaults.kind`, `topology.nodes.<name>.kind`
//! and `topology.links[].endpoints` (a flow list `["a:eth1", "b:e1-1"]` or a block list of
//! `- "a:eth1"` items). Everything else in the file (images, binds, startup configs, kinds'
//! settings) is not a fabric property and is skipped; anything it cannot read is an error
//! naming the line, never a guess. Tabs in indentation are refused, as YAML does.
//!
//! Mapping: `linux` and `host` nodes are hosts (a server with several linked interfaces
//! becomes one host per interface, `server01-eth1`, sharing `gpu_node = "server01"`); every
//! other kind (SR Linux, cEOS, CVX, SONiC-VS, bridges, ...) is a switch. containerlab links
//! carry no speed, so every link gets `--speed-gbps` (default 100), said in a note.

use crate::ImportError;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub struct ClabImport {
    pub name: String,
    pub hosts: usize,
    pub switches: usize,
    pub links: usize,
    pub notes: Vec<String>,
    pub toml: String,
}

pub fn import(path: &Path, speed_gbps: f64) -> Result<ClabImport, ImportError> {
    let text = crate::read_text(path)?;
    from_yaml(&path.display().to_string(), &text, speed_gbps)
}

/// One meaningful line: its number, indentation and content without comment.
struct Line<'a> {
    n: usize,
    indent: usize,
    text: &'a str,
}

pub(crate) fn strip_comment(s: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i == 0 || s[..i].ends_with([' ', '\t']) => return &s[..i],
            _ => {}
        }
    }
    s
}

pub(crate) fn unquote(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
        .unwrap_or(s)
}

/// (node, interface).
type Endpoint = (String, String);

fn err(file: &str, n: usize, msg: impl Into<String>) -> ImportError {
    ImportError::at(file, n, msg, "containerlab topologies: https://containerlab.dev/manual/topo-def-file/")
}

/// A name rocelab accepts: letters, digits, `-`, `_`, `.`.
fn clean(s: &str) -> Option<String> {
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .then(|| s.to_string())
}

pub fn from_yaml(file: &str, text: &str, speed_gbps: f64) -> Result<ClabImport, ImportError> {
    if !(speed_gbps.is_finite() && speed_gbps > 0.0 && speed_gbps <= 10_000.0) {
        return Err(err(file, 0, format!("link speed {speed_gbps} Gb/s is out of range (0, 10000]")));
    }
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let body = strip_comment(raw);
        if body.trim().is_empty() || body.trim() == "---" {
            continue;
        }
        let indent = body.len() - body.trim_start_matches(' ').len();
        if body[indent..].starts_with('\t') {
            return Err(err(file, i + 1, "a tab in the indentation (YAML allows spaces only)"));
        }
        lines.push(Line { n: i + 1, indent, text: body.trim_end() });
    }
    // Walk by indentation: the path of keys above each line.
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut lab = None;
    let mut default_kind: Option<String> = None;
    let mut nodes: BTreeMap<String, (usize, Option<String>)> = BTreeMap::new();
    let mut links: Vec<(usize, Vec<String>)> = Vec::new();
    let mut notes = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = &lines[i];
        while stack.last().is_some_and(|(ind, _)| *ind >= l.indent) {
            stack.pop();
        }
        let path: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
        let content = l.text[l.indent..].trim();
        if path.as_slice() == ["topology", "links"] && content.starts_with('-') {
            // One link item: `- endpoints: [...]`, or `- endpoints:` with a block list below.
            let item_indent = l.indent;
            let first = content.trim_start_matches('-').trim();
            let mut eps: Vec<String> = Vec::new();
            let mut j = i;
            let mut in_block = false;
            let mut seen_endpoints = false;
            loop {
                let cur = &lines[j];
                let c = if j == i { first } else { cur.text[cur.indent..].trim() };
                if let Some(rest) = c.strip_prefix("endpoints:") {
                    seen_endpoints = true;
                    let rest = rest.trim();
                    if rest.is_empty() {
                        in_block = true;
                    } else if let Some(inner) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                        eps.extend(inner.split(',').map(|e| unquote(e).to_string()).filter(|e| !e.is_empty()));
                    } else {
                        return Err(err(
                            file,
                            cur.n,
                            "`endpoints:` is neither a [\"a:x\", \"b:y\"] list nor a block list",
                        ));
                    }
                } else if in_block && c.starts_with('-') && j != i {
                    let e = c.trim_start_matches('-').trim();
                    if e.starts_with('{') || e.contains(": ") {
                        return Err(err(file, cur.n, "endpoints written as maps (node/interface) are not read yet; write them as \"node:interface\""));
                    }
                    eps.push(unquote(e).to_string());
                } else if j != i && !c.starts_with('-') {
                    in_block = false;
                }
                j += 1;
                if j >= lines.len() || lines[j].indent <= item_indent {
                    break;
                }
            }
            if !seen_endpoints {
                return Err(err(file, l.n, "a link without `endpoints:`"));
            }
            links.push((l.n, eps));
            i = j;
            continue;
        }
        let Some((key, value)) = content.split_once(':') else {
            if path.first() == Some(&"topology")
                && matches!(path.get(1), Some(&"nodes") | Some(&"links"))
                && path.len() <= 2
            {
                return Err(err(file, l.n, format!("expected `key:`, found `{content}`")));
            }
            i += 1;
            continue;
        };
        let key = unquote(key).to_string();
        let value = unquote(value).to_string();
        match path.as_slice() {
            [] if key == "name" => lab = Some(value.clone()),
            ["topology", "defaults"] if key == "kind" => default_kind = Some(value.clone()),
            // The guard registers the node; it fails (and nothing else matches) when it is new.
            ["topology", "nodes"] if nodes.insert(key.clone(), (l.n, None)).is_some() => {
                return Err(err(file, l.n, format!("node `{key}` is declared twice")));
            }
            ["topology", "nodes", node] if key == "kind" => {
                if let Some(e) = nodes.get_mut(*node) {
                    e.1 = Some(value.clone());
                }
            }
            _ => {}
        }
        if value.is_empty() {
            stack.push((l.indent, key));
        }
        i += 1;
    }
    if nodes.is_empty() {
        return Err(err(file, 0, "no `topology: nodes:` found"));
    }
    // Kinds and names.
    let mut is_host: BTreeMap<String, bool> = BTreeMap::new();
    for (name, (n, kind)) in &nodes {
        if clean(name).is_none() {
            return Err(err(
                file,
                *n,
                format!("node name `{name}`: rocelab names take letters, digits, `-`, `_`, `.`"),
            ));
        }
        let kind = kind
            .clone()
            .or_else(|| default_kind.clone())
            .ok_or_else(|| err(file, *n, format!("node `{name}` has no `kind` and there is no `defaults: kind:`")))?;
        is_host.insert(name.clone(), matches!(kind.as_str(), "linux" | "host"));
    }
    // Links: each endpoint `node:interface`.
    // (a, b, line), each end (node, interface).
    let mut kept: Vec<(Endpoint, Endpoint, usize)> = Vec::new();
    for (n, eps) in &links {
        if eps.len() != 2 {
            return Err(err(file, *n, format!("a link has {} endpoints; a point-to-point link has 2", eps.len())));
        }
        let mut ends = Vec::new();
        for e in eps {
            let Some((node, intf)) = e.split_once(':') else {
                return Err(err(file, *n, format!("endpoint `{e}` is not `node:interface`")));
            };
            if node == "host" || node == "macvlan" || node == "mgmt-net" {
                notes.push(format!("line {n}: link to `{e}` (outside the lab) left out"));
                ends.clear();
                break;
            }
            if !nodes.contains_key(node) {
                return Err(err(
                    file,
                    *n,
                    format!("endpoint `{e}`: node `{node}` is not declared under topology.nodes"),
                ));
            }
            ends.push((node.to_string(), intf.to_string()));
        }
        if ends.len() != 2 {
            continue;
        }
        if is_host[&ends[0].0] && is_host[&ends[1].0] {
            notes.push(format!("line {n}: {} <-> {} joins two hosts directly; rocelab fabrics connect hosts through switches, so it is left out", eps[0], eps[1]));
            continue;
        }
        let (b, a) = (ends.pop().expect("two"), ends.pop().expect("two"));
        kept.push((a, b, *n));
    }
    // Host endpoints: one per linked interface; a node with one link keeps its own name.
    let mut host_links: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b, _) in &kept {
        for (node, intf) in [a, b] {
            if is_host[node] {
                host_links.entry(node).or_default().insert(intf);
            }
        }
    }
    let endpoint = |node: &str, intf: &str| -> Result<String, ImportError> {
        if !is_host[node] || host_links.get(node).is_some_and(|s| s.len() == 1) {
            return Ok(node.to_string());
        }
        clean(&format!("{node}-{intf}"))
            .ok_or_else(|| err(file, 0, format!("interface `{intf}` of `{node}` cannot be part of a node name")))
    };
    let unlinked: Vec<&String> =
        nodes.keys().filter(|n| !kept.iter().any(|(a, b, _)| &a.0 == *n || &b.0 == *n)).collect();
    if !unlinked.is_empty() {
        notes.push(format!(
            "{} node(s) without a link left out: {}",
            unlinked.len(),
            unlinked.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    notes.push(format!("containerlab links carry no speed: every link is {speed_gbps} Gb/s (--speed-gbps)"));

    let name = lab.as_deref().and_then(clean).unwrap_or_else(|| "containerlab".into());
    let mut t = String::new();
    let _ = writeln!(t, "# Imported from {file} by `rocelab import containerlab`: nodes and links only;");
    let _ = writeln!(t, "# QoS, NIC and buffer settings are rocelab's defaults.");
    for n in &notes {
        let _ = writeln!(t, "# note: {n}");
    }
    let _ = writeln!(t, "\n[fabric]\nname = \"{name}\"");
    let mut switches = 0;
    for (node, host) in &is_host {
        if unlinked.contains(&node) || *host {
            continue;
        }
        switches += 1;
        let _ = writeln!(
            t,
            "\n[[topology.explicit.node]]   # line {}\nname = \"{node}\"\nkind = \"switch\"",
            nodes[node].0
        );
    }
    let mut hosts = 0;
    for (node, intfs) in &host_links {
        for intf in intfs {
            hosts += 1;
            let ep = endpoint(node, intf)?;
            let _ = writeln!(t, "\n[[topology.explicit.node]]   # {node}:{intf}\nname = \"{ep}\"\nkind = \"host\"");
            if intfs.len() > 1 {
                let _ = writeln!(t, "gpu_node = \"{node}\"");
            }
        }
    }
    for (a, b, n) in &kept {
        let _ = writeln!(
            t,
            "\n[[topology.explicit.link]]   # line {n}: {}:{} <-> {}:{}\na = \"{}\"\nb = \"{}\"\nspeed_gbps = {speed_gbps}",
            a.0,
            a.1,
            b.0,
            b.1,
            endpoint(&a.0, &a.1)?,
            endpoint(&b.0, &b.1)?
        );
    }
    // The file must stand on its own: a lab rocelab cannot load (no switch, a partition) is
    // an error here, with the loader's reason, rather than a file that fails later.
    rocelab_model::load_str(file, &t)
        .map_err(|e| err(file, 0, format!("the lab does not make a rocelab fabric: {e}")))?;
    Ok(ClabImport { name, hosts, switches, links: kept.len(), notes, toml: t })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_quotes() {
        assert_eq!(strip_comment("a: \"x#y\" # c"), "a: \"x#y\" ");
        assert_eq!(unquote(" 'a:b' "), "a:b");
    }

    #[test]
    fn block_endpoints_and_errors() {
        let y = "name: t\ntopology:\n  nodes:\n    s1: {}\n    h1:\n      kind: linux\n  defaults:\n    kind: nokia_srlinux\n  links:\n    - endpoints:\n        - \"h1:eth1\"\n        - \"s1:e1-1\"\n";
        let r = from_yaml("t.yml", y, 100.0);
        // `s1: {}` declares a node with no settings: it takes the default kind.
        let imp = r.unwrap();
        assert_eq!((imp.hosts, imp.switches, imp.links), (1, 1, 1));
        assert!(from_yaml("t.yml", "topology:\n\tnodes:\n", 100.0).unwrap_err().to_string().contains(":2:"));
        let bad =
            "topology:\n  nodes:\n    a:\n      kind: linux\n  links:\n    - endpoints: [\"a:eth1\", \"zz:e1\"]\n";
        assert!(from_yaml("t.yml", bad, 100.0).unwrap_err().to_string().contains("node `zz` is not declared"));
    }
}
