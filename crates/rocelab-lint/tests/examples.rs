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
        "WDG001", "NIC001", "NIC002", "TOP001", "TOP003",
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
