//! Every Prometheus text rocelab writes, checked by the real `promtool` (Debian package
//! `prometheus`; `.ci/run` installs it): the simulator's `metrics.prom`, the doctor's metric
//! pages for every fixture dump, the exporter's live page, and the alerting rules of
//! `rocelab exporter --alert-rules`.
//!
//! Without promtool the test fails in CI (`CI` set) and, elsewhere, prints a loud SKIPPED
//! line and checks only what it can check itself (one `# TYPE` per family, samples grouped).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn rocelab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-promtool-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

mod skip;

/// The promtool binary, or `None` after a `SKIP` line for `test` (rocelab's own format
/// checks still run).
fn promtool(test: &str) -> Option<PathBuf> {
    skip::tool_or_skip(test, &["promtool"], "prometheus")
}

/// One `# HELP` and `# TYPE` per family, each family's samples in one block, no sample
/// before its TYPE. Runs with or without promtool.
fn own_checks(what: &str, text: &str) {
    let mut typed = BTreeSet::new();
    let mut helped = BTreeSet::new();
    let mut done = BTreeSet::new();
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split_whitespace().next().unwrap_or("").to_string();
            assert!(typed.insert(name.clone()), "{what}:{}: second TYPE for {name}", i + 1);
            if let Some(c) = current.replace(name) {
                done.insert(c);
            }
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split_whitespace().next().unwrap_or("").to_string();
            assert!(helped.insert(name), "{what}:{}: second HELP", i + 1);
        } else if !line.starts_with('#') && !line.is_empty() {
            let name = line.split(['{', ' ']).next().unwrap_or("");
            assert_eq!(Some(name), current.as_deref(), "{what}:{}: sample outside its family's block", i + 1);
            assert!(!done.contains(name), "{what}:{}: {name} samples split in two blocks", i + 1);
        }
    }
    assert!(!typed.is_empty(), "{what}: no metric at all");
}

fn check_metrics(tool: Option<&Path>, what: &str, text: &str) {
    own_checks(what, text);
    let Some(tool) = tool else { return };
    let mut child = Command::new(tool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics rejects {what}:\n{}{}\n--- text ---\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn simulator_metrics_prom_passes_promtool() {
    let tool = promtool("simulator_metrics_prom_passes_promtool");
    let out = tmpdir("sim");
    let example = "incast-16to1.toml";
    let o = rocelab()
        .args(["simulate", repo(&format!("examples/{example}")).to_str().unwrap(), "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("metrics.prom")).unwrap();
    // Issue 16: 34 TYPE lines for rocelab_tx_bytes_total, families interleaved.
    assert_eq!(text.matches("# TYPE rocelab_tx_bytes_total ").count(), 1, "{text}");
    check_metrics(tool.as_deref(), example, &text);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn doctor_metric_pages_pass_promtool() {
    let tool = promtool("doctor_metric_pages_pass_promtool");
    let dumps = repo("crates/rocelab-doctor/tests/fixtures/dumps");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dumps).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let mut checked = 0;
    for d in names {
        let dump = rocelab_doctor::dump::load_dump(&d, 3).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        let mut all = rocelab_doctor::metrics::MetricSet::default();
        for s in &dump.snapshots {
            all.extend(rocelab_doctor::metrics::from_snapshot(s));
        }
        if all.is_empty() {
            continue;
        }
        check_metrics(tool.as_deref(), &d.display().to_string(), &all.to_prometheus());
        checked += 1;
    }
    assert!(checked > 20, "only {checked} dumps checked");
}

#[test]
fn exporter_page_with_its_comments_passes_promtool() {
    let tool = promtool("exporter_page_with_its_comments_passes_promtool");
    let root = tmpdir("exporter");
    for (rel, v) in [
        ("class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "42"),
        ("class/infiniband/mlx5_0/ports/1/hw_counters/rp_cnp_handled", "40"),
        ("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens3np0"),
        ("class/net/ens3np0/carrier_down_count", "1"),
    ] {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    }
    let opts = rocelab_doctor::collect::CollectOptions {
        sysfs_root: root.clone(),
        host: Some("gpu09".into()),
        tools: rocelab_doctor::tools::Tools::none(),
        tool_timeout: std::time::Duration::from_secs(5),
        proc_root: std::path::PathBuf::from("/proc"),
        nccl_logs: Vec::new(),
        gpu_path: false,
    };
    let page = rocelab_doctor::exporter::scrape(&opts, 3);
    assert!(page.contains("# rocelab: "), "{page}");
    check_metrics(tool.as_deref(), "exporter page", &page);
    std::fs::remove_dir_all(&root).unwrap();
}

/// The raw `description: '...'` scalar of one alert in a rule file.
fn description_of(rules: &str, alert: &str) -> String {
    let block = rules.split("      - alert: ").find(|b| b.starts_with(alert)).expect("alert present");
    let line = block.lines().find(|l| l.trim_start().starts_with("description: ")).expect("description");
    line.trim_start().trim_start_matches("description: ").to_string()
}

#[test]
fn alert_rules_pass_promtool_check_and_unit_tests() {
    let tool = promtool("alert_rules_pass_promtool_check_and_unit_tests");
    let dir = tmpdir("rules");
    for example in ["rail-128gpu.toml", "incast-16to1.toml"] {
        let rules = dir.join(format!("{example}.rules.yml"));
        let o = rocelab()
            .args(["exporter", "--alert-rules", rules.to_str().unwrap(), "--fabric"])
            .arg(repo(&format!("examples/{example}")))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&rules).unwrap();
        for alert in
            ["RocePfcStorm", "RoceLosslessDrops", "RoceCnpNotHandled", "RoceLinkFlap", "RoceEcnSurge", "RoceBusbwLow"]
        {
            assert!(text.contains(&format!("- alert: {alert}\n")), "{alert} missing:\n{text}");
        }
        let Some(tool) = tool.as_deref() else { continue };
        let out = Command::new(tool).arg("check").arg("rules").arg(&rules).output().unwrap();
        assert!(
            out.status.success(),
            "promtool check rules {example}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // The rules fire on the case they are for and not on its near miss.
        let unit = format!(
            r#"rule_files:
  - {rules}
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'rocelab_pfc_paused_seconds_total{{node="gpu01",port="ens3np0",priority="3",direction="rx"}}'
        values: '0+45x10'
      - series: 'rocelab_pfc_paused_seconds_total{{node="gpu02",port="ens3np0",priority="3",direction="rx"}}'
        values: '0+1x10'
      - series: 'rocelab_drops_total{{node="leaf1",port="Ethernet4",queue="UC3",reason="buffer"}}'
        values: '0 0 0 5 5 5'
      - series: 'rocelab_drops_total{{node="leaf1",port="Ethernet4",queue="UC0",reason="buffer"}}'
        values: '0 0 0 5 5 5'
    alert_rule_test:
      - eval_time: 5m
        alertname: RocePfcStorm
        exp_alerts:
          - exp_labels: {{severity: critical, node: gpu01, port: ens3np0, priority: "3", direction: rx}}
            exp_annotations:
              summary: 'PFC storm on gpu01 ens3np0'
              description: {storm}
      - eval_time: 4m
        alertname: RoceLosslessDrops
        exp_alerts:
          - exp_labels: {{severity: critical, node: leaf1, port: Ethernet4, queue: UC3, reason: buffer}}
            exp_annotations:
              summary: 'Drops on a lossless priority at leaf1 Ethernet4'
              description: {drops}
"#,
            rules = rules.display(),
            storm = description_of(&text, "RocePfcStorm"),
            drops = description_of(&text, "RoceLosslessDrops"),
        );
        let unit_path = dir.join(format!("{example}.test.yml"));
        std::fs::write(&unit_path, unit).unwrap();
        let out = Command::new(tool).arg("test").arg("rules").arg(&unit_path).output().unwrap();
        assert!(
            out.status.success(),
            "promtool test rules {example}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Without a fabric file there are no thresholds: bad input.
    let o = rocelab().args(["exporter", "--alert-rules", dir.join("x.yml").to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
