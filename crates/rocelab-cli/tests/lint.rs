//! `rocelab lint` through the real binary: formats (human, JSON, SARIF 2.1.0), exit statuses
//! (0 clean or warnings, 1 errors or `--deny warnings`, 2 bad input), disabling rules.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .current_dir(repo())
        .env_remove("NO_COLOR")
        .output()
        .expect("run rocelab")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn status(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-cli-lint-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const MISTAKES: &str = "examples/common-mistakes.toml";

#[test]
fn human_format_groups_by_file_and_fails_on_errors() {
    let o = rocelab(&["lint", MISTAKES, "examples/rail-128gpu.toml"]);
    assert_eq!(status(&o), 1, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains('\x1b'), "no colour when not on a terminal");
    let mistakes_at = out.find("examples/common-mistakes.toml\n").expect("file header");
    let rail_at = out.find("examples/rail-128gpu.toml\n  clean\n").expect("clean file");
    assert!(mistakes_at < rail_at);
    // file:line:column of the value, severity, code, message with numbers, fix.
    assert!(out.contains("  50:14    error   PFC002  PFC is enabled on priority 0"), "{out}");
    assert!(out.contains("= help: "), "{out}");
    assert!(out.contains("needs XOFF headroom 271360 B"), "{out}");
    assert!(out.ends_with("9 errors, 11 warnings in 2 files\n"), "{out}");
}

#[test]
fn colour_when_asked() {
    let o = rocelab(&["lint", "--color", "always", MISTAKES]);
    assert!(stdout(&o).contains("\x1b[1;31merror"), "{}", stdout(&o));
    let o = rocelab(&["lint", "--color", "never", MISTAKES]);
    assert!(!stdout(&o).contains('\x1b'));
}

#[test]
fn shipped_examples_exit_zero() {
    for f in ["examples/rail-128gpu.toml", "examples/rail-1024gpu.toml", "examples/leaf-spine-small.toml"] {
        let o = rocelab(&["lint", f]);
        assert_eq!(status(&o), 0, "{f}: {}{}", stdout(&o), stderr(&o));
    }
    let o = rocelab(&["lint", "examples/rail-1024gpu.toml"]);
    assert_eq!(stdout(&o), "examples/rail-1024gpu.toml\n  clean\n0 errors, 0 warnings in 1 file\n");
}

#[test]
fn deny_warnings_fails_on_warnings() {
    // leaf-spine-small is 2:1 oversubscribed on purpose: one warning.
    let o = rocelab(&["lint", "examples/leaf-spine-small.toml"]);
    assert_eq!(status(&o), 0);
    assert!(stdout(&o).contains("warning TOP001"));
    let o = rocelab(&["lint", "--deny", "warnings", "examples/leaf-spine-small.toml"]);
    assert_eq!(status(&o), 1);
}

#[test]
fn disable_on_the_command_line_and_in_the_file() {
    let o =
        rocelab(&["lint", "--deny", "warnings", "--disable", "TOP001=2:1 by design", "examples/leaf-spine-small.toml"]);
    assert_eq!(status(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("TOP001  disabled (command line): 2:1 by design"), "{}", stdout(&o));

    let text = std::fs::read_to_string(repo().join("examples/leaf-spine-small.toml")).unwrap()
        + "\n[[lint.disable]]\ncode = \"TOP001\"\nreason = \"enterprise pod\"\n";
    let p = temp_file("disabled.toml", &text);
    let o = rocelab(&["lint", "--deny", "warnings", "--format", "json", p.to_str().unwrap()]);
    assert_eq!(status(&o), 0, "{}", stdout(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"][0]["findings"].as_array().unwrap().len(), 0);
    assert_eq!(v["files"][0]["suppressed"][0]["reason"], "enterprise pod");
    assert_eq!(v["files"][0]["suppressed"][0]["source"], "file");
    assert_eq!(v["summary"]["suppressed"], 1);
}

#[test]
fn bad_disable_flags_are_bad_input() {
    let o = rocelab(&["lint", "--disable", "TOP001", "examples/leaf-spine-small.toml"]);
    assert_eq!(status(&o), 2);
    assert!(stderr(&o).contains("gives no reason"), "{}", stderr(&o));
    let o = rocelab(&["lint", "--disable", "XYZ123=because", "examples/leaf-spine-small.toml"]);
    assert_eq!(status(&o), 2);
    assert!(stderr(&o).contains("not a lint code"), "{}", stderr(&o));
}

#[test]
fn unreadable_or_invalid_files_exit_2_with_a_location() {
    let o = rocelab(&["lint", "does-not-exist.toml"]);
    assert_eq!(status(&o), 2);
    assert!(stderr(&o).contains("cannot read does-not-exist.toml"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let bad = temp_file(
        "bad.toml",
        "[topology.leaf_spine]\nleaves = 2\nspines = 1\nhosts_per_leaf = 1\nhost_link = { speed_gbps = 100 }\nfabric_link = { speed_gbps = 100 }\n\n[[qos.class]]\nname = \"roce\"\npriority = 3\nlossless = true\necn = { kmin_bytes = 9, kmax_bytes = 1, pmax = 0.1 }\n",
    );
    let o = rocelab(&["lint", bad.to_str().unwrap()]);
    assert_eq!(status(&o), 2);
    assert!(stderr(&o).contains("bad.toml:12:"), "{}", stderr(&o));
    assert!(stderr(&o).contains("Kmin"), "{}", stderr(&o));
    // The good file's report is still printed.
    let o = rocelab(&["lint", "examples/rail-128gpu.toml", bad.to_str().unwrap()]);
    assert_eq!(status(&o), 2);
    assert!(stdout(&o).contains("rail-128gpu.toml\n  clean"));
}

/// A stray byte gets the same located message from `lint` as from `topo` and `simulate`.
#[test]
fn a_file_that_is_not_utf8_is_located_like_in_topo() {
    let p = std::env::temp_dir().join(format!("rocelab-cli-lint-{}-latin1.toml", std::process::id()));
    std::fs::write(&p, b"[fabric]\nname = \"caf\xe9\"\n").unwrap();
    let file = p.to_str().unwrap();
    let want = format!("{file}:2:12: error: the file is not UTF-8 text");
    for verb in ["lint", "topo", "simulate"] {
        let o = rocelab(&[verb, file]);
        assert_eq!(status(&o), 2, "{verb}");
        assert!(stderr(&o).contains(&want), "{verb}: {}", stderr(&o));
        assert!(stderr(&o).contains("help: save the fabric file as UTF-8"), "{verb}: {}", stderr(&o));
    }
    let _ = std::fs::remove_file(&p);
}

#[test]
fn json_format() {
    let o = rocelab(&["lint", "--format", "json", MISTAKES]);
    assert_eq!(status(&o), 1);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("valid JSON");
    assert_eq!(v["summary"]["errors"], 9);
    assert_eq!(v["summary"]["warnings"], 11);
    let f = &v["files"][0];
    assert_eq!(f["file"], MISTAKES);
    let hdr = f["findings"].as_array().unwrap().iter().find(|x| x["code"] == "HDR001").expect("HDR001");
    assert_eq!(hdr["severity"], "error");
    assert_eq!(hdr["path"], "qos.pfc.headroom_bytes");
    assert_eq!((hdr["line"].as_u64(), hdr["column"].as_u64()), (Some(51), Some(18)));
    assert!(hdr["hint"].as_str().unwrap().contains("289792"));
}

#[test]
fn output_file_is_written() {
    let p = temp_file("out.json", "");
    let o = rocelab(&["lint", "--format", "json", "-o", p.to_str().unwrap(), "examples/rail-128gpu.toml"]);
    assert_eq!(status(&o), 0);
    assert!(stdout(&o).is_empty());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(v["summary"]["errors"], 0);
}

#[test]
fn list_and_explain() {
    let o = rocelab(&["lint", "--list-rules"]);
    assert_eq!(status(&o), 0);
    let out = stdout(&o);
    for code in ["PFC001", "HDR001", "DLK001", "DLK002", "TOP003"] {
        assert!(out.contains(code), "{code}");
    }
    let o = rocelab(&["lint", "--explain", "dlk001"]);
    assert_eq!(status(&o), 0);
    let page = stdout(&o);
    assert!(page.starts_with("# DLK001: "));
    assert_eq!(page, std::fs::read_to_string(repo().join("docs/lint/DLK001.md")).unwrap());
    assert_eq!(status(&rocelab(&["lint", "--explain", "NOPE01"])), 2);
}

// ---------------------------------------------------------------------------------------------
// SARIF 2.1.0: the structure the OASIS schema requires, checked by hand.

fn obj<'a>(v: &'a Value, what: &str) -> &'a serde_json::Map<String, Value> {
    v.as_object().unwrap_or_else(|| panic!("{what} must be an object: {v}"))
}

fn arr<'a>(v: &'a Value, what: &str) -> &'a Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("{what} must be an array: {v}"))
}

fn string(v: &Value, what: &str) -> String {
    v.as_str().unwrap_or_else(|| panic!("{what} must be a string: {v}")).to_string()
}

/// `message`: `text` or `id` required (schema: message.anyOf).
fn check_message(v: &Value, what: &str) {
    let m = obj(v, what);
    assert!(m.get("text").is_some_and(Value::is_string) || m.get("id").is_some_and(Value::is_string), "{what}");
}

/// The required properties, enums and bounds of sarif-schema-2.1.0.json for what rocelab emits.
fn check_sarif(log: &Value) -> usize {
    let log = obj(log, "sarifLog");
    assert_eq!(log.get("version"), Some(&Value::from("2.1.0")));
    let schema = string(&log["$schema"], "$schema");
    assert!(schema.starts_with("https://") && schema.contains("sarif-schema-2.1.0"), "{schema}");
    let runs = arr(&log["runs"], "runs");
    assert!(!runs.is_empty());
    let mut results_seen = 0;
    for run in runs {
        let run = obj(run, "run");
        let driver = obj(&obj(&run["tool"], "tool")["driver"], "tool.driver");
        assert!(!string(&driver["name"], "driver.name").is_empty());
        let rules = arr(&driver["rules"], "driver.rules");
        let mut ids = Vec::new();
        for r in rules {
            let r = obj(r, "reportingDescriptor");
            let id = string(&r["id"], "rule.id");
            check_message(&r["shortDescription"], "rule.shortDescription");
            let level = string(&r["defaultConfiguration"]["level"], "defaultConfiguration.level");
            assert!(["none", "note", "warning", "error"].contains(&level.as_str()));
            assert!(!ids.contains(&id), "duplicate rule {id}");
            ids.push(id);
        }
        for res in arr(&run["results"], "results") {
            results_seen += 1;
            let res = obj(res, "result");
            check_message(&res["message"], "result.message");
            let id = string(&res["ruleId"], "ruleId");
            let index = res["ruleIndex"].as_u64().expect("ruleIndex") as usize;
            assert_eq!(ids[index], id, "ruleIndex points at the rule");
            assert!(["none", "note", "warning", "error"].contains(&string(&res["level"], "level").as_str()));
            let locs = arr(&res["locations"], "locations");
            assert!(!locs.is_empty());
            for l in locs {
                let pl = obj(&l["physicalLocation"], "physicalLocation");
                let uri = string(&pl["artifactLocation"]["uri"], "artifactLocation.uri");
                assert!(!uri.contains('\\') && !uri.contains(' '), "{uri}");
                let region = obj(&pl["region"], "region");
                assert!(region["startLine"].as_u64().unwrap() >= 1);
                assert!(region["startColumn"].as_u64().unwrap() >= 1);
            }
            if let Some(s) = res.get("suppressions") {
                for s in arr(s, "suppressions") {
                    let kind = string(&s["kind"], "suppression.kind");
                    assert!(["inSource", "external"].contains(&kind.as_str()));
                }
            }
        }
    }
    results_seen
}

#[test]
fn sarif_format_has_the_2_1_0_structure() {
    let o = rocelab(&["lint", "--format", "sarif", MISTAKES, "examples/leaf-spine-small.toml"]);
    assert_eq!(status(&o), 1);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("valid JSON");
    assert_eq!(check_sarif(&v), 21);
    let results = v["runs"][0]["results"].as_array().unwrap();
    let pfc = results.iter().find(|r| r["ruleId"] == "PFC002").unwrap();
    assert_eq!(pfc["level"], "error");
    let loc = &pfc["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], MISTAKES);
    assert_eq!((loc["region"]["startLine"].as_u64(), loc["region"]["startColumn"].as_u64()), (Some(50), Some(14)));
    let top = results.iter().find(|r| r["ruleId"] == "TOP001").unwrap();
    assert_eq!(top["level"], "warning");
    // Every rule is described once.
    assert_eq!(v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap().len(), rocelab_rules());
}

#[test]
fn sarif_carries_disabled_findings_as_suppressions() {
    let o = rocelab(&["lint", "--format", "sarif", "--disable", "TOP001=by design", "examples/leaf-spine-small.toml"]);
    assert_eq!(status(&o), 0);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(check_sarif(&v), 1);
    let s = &v["runs"][0]["results"][0]["suppressions"][0];
    assert_eq!((s["kind"].as_str(), s["justification"].as_str()), (Some("external"), Some("by design")));
}

fn rocelab_rules() -> usize {
    stdout(&rocelab(&["lint", "--list-rules"])).lines().count()
}
