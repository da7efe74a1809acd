//! docs/doctor.md's rule table lists exactly the registered rules (src/rules.rs).

use std::collections::BTreeSet;

#[test]
fn docs_list_every_registered_rule_and_no_other() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/doctor.md")).unwrap();
    let start = doc.find("\n## Rules").expect("docs/doctor.md has a Rules section");
    let section = &doc[start + 1..];
    let end = section[3..].find("\n## ").map(|i| i + 3).unwrap_or(section.len());
    let mut documented = BTreeSet::new();
    for line in section[..end].lines().filter(|l| l.starts_with("| `")) {
        let first_cell = line.trim_start_matches('|').split('|').next().unwrap();
        for (i, part) in first_cell.split('`').enumerate() {
            if i % 2 == 1 {
                documented.insert(part.to_string());
            }
        }
    }
    let registered: BTreeSet<String> = rocelab_doctor::rules::RULES.iter().map(|r| r.code.to_string()).collect();
    let missing: Vec<&String> = registered.difference(&documented).collect();
    let unknown: Vec<&String> = documented.difference(&registered).collect();
    assert!(missing.is_empty(), "registered but not in docs/doctor.md: {missing:?}");
    assert!(unknown.is_empty(), "in docs/doctor.md but not registered: {unknown:?}");
}
