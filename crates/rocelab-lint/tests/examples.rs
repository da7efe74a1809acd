//! The shipped examples: clean, or only the findings they document; no deadlock risk under
//! the model's routing or any single link failure.

use rocelab_lint::{deadlock, lint_file, Options};
use std::path::{Path, PathBuf};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn codes(file: &str) -> Vec<&'static str> {
    let r = lint_file(&examples().join(file), &Options::default()).expect("example loads");
    r.findings.iter().map(|f| f.code).collect()
}

#[test]
fn rail_examples_are_clean() {
    assert_eq!(codes("rail-128gpu.toml"), Vec::<&str>::new());
    assert_eq!(codes("rail-1024gpu.toml"), Vec::<&str>::new());
}

#[test]
fn leaf_spine_small_reports_its_documented_oversubscription() {
    // The file says so: its leaves are 2:1 on purpose.
    let r = lint_file(&examples().join("leaf-spine-small.toml"), &Options::default()).unwrap();
    assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
    assert_eq!(r.findings[0].code, "TOP001");
    assert!(r.findings[0].message.contains("2.00:1"));
}

#[test]
fn common_mistakes_shows_the_common_mistakes() {
    let found = codes("common-mistakes.toml");
    for code in [
        "PFC001", "PFC002", "QOS002", "CNP001", "CNP002", "ISO001", "HOST002", "HOST003", "ECN004", "ECN005", "HDR001",
        "WDG001", "NIC001", "NIC002", "TOP001", "TOP003", "ECN007",
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn no_example_has_a_deadlock_risk_even_after_one_failure() {
    for p in toml_files(&examples()) {
        if p.file_name().is_some_and(|n| n == "common-mistakes.toml") {
            continue;
        }
        let m = rocelab_model::load_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let a = deadlock::analyze(&m);
        assert!(a.base.is_none(), "{}: {:?}", p.display(), a.base);
        assert!(a.failures.is_empty(), "{}: {:?}", p.display(), a.failures.first());
        let fabric_links = m
            .links
            .iter()
            .filter(|l| !m.node(m.port(l.a).node).is_host() && !m.node(m.port(l.b).node).is_host())
            .count();
        assert_eq!(a.scenarios, fabric_links, "{}", p.display());
    }
}

/// Lint never panics on a file the loader accepts: every number of the small examples replaced,
/// one at a time, by extreme values.
#[test]
fn extreme_values_do_not_panic() {
    let files = ["leaf-spine-small.toml", "rail-128gpu.toml", "common-mistakes.toml"];
    let mut linted = 0;
    for f in files {
        let text = std::fs::read_to_string(examples().join(f)).unwrap();
        let bytes = text.as_bytes();
        let mut spans = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                    i += 1;
                }
                spans.push(start..i);
            }
            i += 1;
        }
        for span in spans {
            for v in ["0", "1", "65535", "4294967295", "18446744073709551615", "1e300"] {
                let mutated = format!("{}{v}{}", &text[..span.start], &text[span.end..]);
                if let Ok(m) = rocelab_model::load_str(f, &mutated) {
                    let r = rocelab_lint::lint(&m, f, &mutated, &Options::default());
                    let _ = rocelab_lint::output::sarif(std::slice::from_ref(&r));
                    linted += 1;
                }
            }
        }
    }
    assert!(linted > 100, "{linted}");
}

#[test]
fn ib_vs_roce_examples_are_clean_but_for_the_misconfiguration_they_show() {
    for f in ["ib.toml", "ib-static.toml", "roce-best.toml"] {
        assert_eq!(codes(&format!("ib-vs-roce/{f}")), Vec::<&str>::new(), "{f}");
    }
    // The misconfigured RoCE file disables, with its reason, exactly what it gets wrong.
    let r = lint_file(&examples().join("ib-vs-roce/roce-misconfigured.toml"), &Options::default()).unwrap();
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    let off: Vec<&str> = r.suppressed.iter().map(|s| s.finding.code).collect();
    assert_eq!(off, vec!["QOS002", "TOP003"]);
}

/// The seeds' named mistakes (PFC on too many priorities, ECN thresholds not adapted to the
/// port speed, RDMA mixed with general traffic, CNPs not prioritized, a heterogeneous fleet)
/// appear in `common-mistakes.toml` only: every other shipped fabric is free of them, neither
/// found nor disabled.
#[test]
fn the_named_mistakes_are_only_in_common_mistakes() {
    let named =
        ["PFC001", "ECN005", "ECN007", "ISO001", "ISO002", "CNP001", "CNP002", "CNP003", "NIC001", "NIC002", "NIC004"];
    let mut files = toml_files(&examples());
    files.extend(toml_files(&examples().join("ib-vs-roce")));
    let mut checked = 0;
    for p in files {
        if p.file_name().is_some_and(|n| n == "common-mistakes.toml") {
            continue;
        }
        let r = lint_file(&p, &Options::default()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let all: Vec<&str> =
            r.findings.iter().map(|f| f.code).chain(r.suppressed.iter().map(|s| s.finding.code)).collect();
        assert!(all.iter().all(|c| !named.contains(c)), "{}: {all:?}", p.display());
        checked += 1;
    }
    assert!(checked >= 10, "{checked}");
    let mistakes = codes("common-mistakes.toml");
    for c in ["PFC001", "ECN005", "ECN007", "ISO001", "CNP001", "CNP002", "NIC001", "NIC002", "NIC004"] {
        assert!(mistakes.contains(&c), "{c}");
    }
}
