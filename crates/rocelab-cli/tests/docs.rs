//! The documentation stands alone: every relative link in `README.md` and `docs/` resolves to a
//! file inside the repository (and, for a `#fragment` into a Markdown page, to one of its
//! headings), and no page points at notes that live outside a clone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn markdown_files() -> Vec<PathBuf> {
    let root = repo();
    let mut out = vec![root.join("README.md")];
    let mut stack = vec![root.join("docs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text outside fenced code blocks and inline code spans, line by line (1-based numbers).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code spans: `...` (an odd backtick out is left as is).
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(c);
            }
        }
        out.push((i + 1, kept));
    }
    out
}

/// Inline link targets `[text](target)` of one line of prose.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b']' && b[i + 1] == b'(' {
            let start = i + 2;
            let mut depth = 1;
            let mut j = start;
            while j < b.len() {
                match b[j] {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if j < b.len() {
                // A title after the target (`(file.md "title")`) is not part of it.
                let t = line[start..j].split_whitespace().next().unwrap_or("").to_string();
                out.push(t);
                i = j;
            }
        }
        i += 1;
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` removed,
/// spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| {
            if c == ' ' {
                Some('-')
            } else if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else {
                None
            }
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Explicit anchors: <a id="name"></a>.
        for part in line.split("<a id=\"").skip(1) {
            if let Some(id) = part.split('"').next() {
                seen.insert(id.to_string());
            }
        }
        if !line.starts_with('#') {
            continue;
        }
        let h = line.trim_start_matches('#');
        let base = slug(h);
        // Repeated headings get -1, -2, ... as on GitHub.
        let mut s = base.clone();
        let mut n = 1;
        while seen.contains(&s) {
            s = format!("{base}-{n}");
            n += 1;
        }
        seen.insert(s);
    }
    seen
}

fn broken_links(file: &Path, text: &str) -> Vec<String> {
    let root = repo();
    let mut bad = Vec::new();
    let rel = file.strip_prefix(&root).unwrap_or(file).display().to_string();
    for (n, line) in prose_lines(text) {
        for t in link_targets(&line) {
            if t.is_empty() || t.contains("://") || t.starts_with("mailto:") {
                continue;
            }
            let (path, frag) = match t.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (t.as_str(), None),
            };
            let target = if path.is_empty() { file.to_path_buf() } else { file.parent().unwrap().join(path) };
            let Ok(canon) = target.canonicalize() else {
                bad.push(format!("{rel}:{n}: `{t}` does not exist"));
                continue;
            };
            if !canon.starts_with(&root) {
                bad.push(format!("{rel}:{n}: `{t}` points outside the repository"));
                continue;
            }
            if let Some(f) = frag {
                if canon.extension().is_some_and(|x| x == "md") {
                    let body = std::fs::read_to_string(&canon).unwrap();
                    if !anchors(&body).contains(f) {
                        bad.push(format!("{rel}:{n}: `{t}`: no heading with anchor `#{f}`"));
                    }
                }
            }
        }
    }
    bad
}

#[test]
fn every_relative_link_resolves_inside_the_repository() {
    let files = markdown_files();
    assert!(files.len() > 30, "found only {} pages", files.len());
    let mut bad = Vec::new();
    let mut links = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        links += prose_lines(&text).iter().map(|(_, l)| link_targets(l).len()).sum::<usize>();
        bad.extend(broken_links(f, &text));
    }
    assert!(links > 100, "found only {links} links: is the link reader broken?");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn no_page_points_at_notes_outside_a_clone() {
    for f in markdown_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            for bad in
                ["../shared", "shared/reference", "reference/metrics.md", "reference/roce-mechanisms.md", "DESIGN.md"]
            {
                assert!(!line.contains(bad), "{}:{}: mentions `{bad}`: {line}", f.display(), i + 1);
            }
        }
    }
}

/// The stated MSRV reaches every crate (clippy's `incompatible_msrv` lint reads each crate's own
/// `rust-version`; a crate that does not inherit the workspace's is not checked at all), and
/// the README states the same version.
#[test]
fn every_crate_carries_the_msrv() {
    let root = repo();
    let ws = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let msrv = ws.lines().find_map(|l| l.strip_prefix("rust-version = ")).expect("workspace rust-version");
    let msrv = msrv.trim_matches('"');
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        let manifest = e.unwrap().path().join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        assert!(
            text.lines().any(|l| l == "rust-version.workspace = true"),
            "{} lacks rust-version",
            manifest.display()
        );
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains(&format!("Rust {msrv} or newer")), "README does not state Rust {msrv}");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(ci.contains("cargo clippy --workspace --all-targets -- -D warnings"), "CI lost the clippy step");
    assert!(ci.contains("cargo nextest run --workspace --no-fail-fast"), "CI lost the README's test command");
}

#[test]
fn the_link_checker_catches_what_it_should() {
    let root = repo();
    let page = root.join("docs/architecture.md");
    let ok = "see [a](mechanisms.md#dcqcn), [b](../README.md), [c](#the-crates), [web](https://example.com)";
    assert_eq!(broken_links(&page, ok), Vec::<String>::new());
    let bad = "[x](../../shared/DESIGN.md) [y](nope.md) [z](mechanisms.md#no-such-heading) `[code](ignored.md)`";
    let found = broken_links(&page, bad);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains("DESIGN.md"), "{found:?}");
    assert!(found[2].contains("no heading"), "{found:?}");
    assert_eq!(slug(" `[topology.leaf_spine]`"), "topologyleaf_spine");
    assert_eq!(slug(" Shared buffer and the dynamic threshold"), "shared-buffer-and-the-dynamic-threshold");
}
