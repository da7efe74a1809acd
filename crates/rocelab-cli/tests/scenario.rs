//! `rocelab simulate --scenario` and `rocelab scenarios` through the binary: outputs, formats,
//! located errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rocelab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).current_dir(dir).output().unwrap()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-scen-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const FABRIC: &str = "[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
                      host_link = { speed_gbps = 100 }\nfabric_link = { speed_gbps = 100 }\n\n";

#[test]
fn a_named_scenario_writes_its_result_summary_and_timeseries() {
    let d = tmpdir("named");
    let f =
        format!("{FABRIC}[[scenario]]\nkind = \"incast\"\nname = \"small-incast\"\nfan_in = 3\nsize_bytes = 100000\n");
    std::fs::write(d.join("f.toml"), f).unwrap();
    let o = rocelab(&d, &["simulate", "f.toml", "--scenario", "small-incast", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("scenario `small-incast` (incast)") && out.contains("completion_over_ideal"), "{out}");
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("rocelab-out/scenario.json")).unwrap()).unwrap();
    assert_eq!(j["kind"], "incast");
    assert_eq!(j["params"]["fan_in"], 3);
    assert!(j["headline"]["value"].as_f64().unwrap() >= 1.0);
    let csv = std::fs::read_to_string(d.join("rocelab-out/timeseries.csv")).unwrap();
    assert!(csv.starts_with("time_seconds,metric,node,port,priority,value\n"));
    assert!(
        csv.contains(",rocelab_link_utilization_ratio,")
            && csv.contains(",rocelab_buffer_occupancy_bytes,leaf0,leaf0:swp")
    );
    assert!(d.join("rocelab-out/summary.json").is_file());
    // JSON on stdout is the same result, and the same seed gives the same bytes.
    let o = rocelab(&d, &["simulate", "f.toml", "--scenario", "small-incast", "--format", "json", "--no-files"]);
    assert_eq!(text(&o.stdout), std::fs::read_to_string(d.join("rocelab-out/scenario.json")).unwrap());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bare_kind_runs_with_defaults_and_an_unknown_name_lists_the_choices() {
    let d = tmpdir("bare");
    std::fs::write(d.join("f.toml"), FABRIC).unwrap();
    let o = rocelab(&d, &["simulate", "f.toml", "--scenario", "microburst", "--no-files", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["headline"]["metric"], "pause_frames");
    assert_eq!(j["params"]["fan_in"], 7, "min(hosts - 1, 16) on 8 hosts");
    let o = rocelab(&d, &["simulate", "f.toml", "--scenario", "nope", "--no-files"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("switch-reboot"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn scenario_errors_name_the_line_and_the_key() {
    let d = tmpdir("errors");
    let cases = [
        ("incast", "fan_inn = 3", "f.toml:11:11", "did you mean `fan_in`?"),
        ("incast", "down_us = 5", "f.toml:11:11", "`down_us` is not a parameter of `incast` scenarios"),
        ("incast", "fan_in = 300", "f.toml:11:10", "fan_in = 300, but 7 hosts can send here"),
        ("incast", "dst = \"leaf0\"", "f.toml:11:7", "`leaf0` is a switch"),
        // The other profile is checked as a [nic_profiles] table, its errors at its own keys.
        (
            "firmware-mix",
            "dcqcn = { g = 5.0 }",
            "f.toml:11:15",
            "`scenario[0].dcqcn.g`: the α gain g must be in (0, 1]",
        ),
        ("slow-receiver", "watchdog = true\nwatchdog_detection_us = 0.001", "f.toml:12:25", "too short"),
        ("mixed", "tcp_class = \"nope\"", "f.toml:11:13", "no traffic class `nope`"),
    ];
    for (kind, line, at, msg) in cases {
        let f = format!("{FABRIC}[[scenario]]\nkind = \"{kind}\"\nname = \"x\"\n{line}\n");
        std::fs::write(d.join("f.toml"), f).unwrap();
        let o = rocelab(&d, &["simulate", "f.toml", "--scenario", "x", "--no-files"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{line}: {err}");
        assert!(err.contains(at) && err.contains(msg), "{line}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn scenarios_list_prints_every_kind_with_its_defaults() {
    let d = tmpdir("list");
    let o = rocelab(&d, &["scenarios", "--list"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    for k in [
        "sustained",
        "incast",
        "microburst",
        "hotspot",
        "slow-receiver",
        "link-loss",
        "link-flap",
        "switch-reboot",
        "routing-change",
        "firmware-mix",
        "collective",
        "mixed",
        "isolation",
        "firmware-update",
    ] {
        assert!(out.lines().any(|l| l == k), "{k} missing");
    }
    assert!(out.contains("min(hosts − 1, 32)"));
    let o = rocelab(&d, &["scenarios", "--list", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["schema"], "rocelab.scenarios.list/v1");
    let j = &j["results"];
    assert_eq!(j.as_array().unwrap().len(), 14);
    assert_eq!(j[1]["kind"], "incast");
    assert_eq!(j[1]["params"][0]["key"], "fan_in");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn init_templates_carry_the_commented_checklist() {
    let d = tmpdir("init");
    for t in ["rail-optimized", "leaf-spine", "rail-1024"] {
        let f = format!("{t}.toml");
        assert_eq!(rocelab(&d, &["init", "--template", t, &f]).status.code(), Some(0));
        let body = std::fs::read_to_string(d.join(&f)).unwrap();
        assert_eq!(body.matches("# [[scenario]]").count(), 10, "{t}");
        assert!(body.contains("--scenario NAME"));
    }
    let _ = std::fs::remove_dir_all(&d);
}
