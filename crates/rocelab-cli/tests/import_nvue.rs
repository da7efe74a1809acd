//! `rocelab import nvue` and `rocelab doctor --intent` on NVUE configurations
//! (crates/rocelab-import/tests/data/nvue, sources in its SOURCE.md).

use std::path::PathBuf;
use std::process::Command;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn rocelab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).output().unwrap()
}

#[test]
fn an_nvue_config_imports_to_a_file_that_lints_and_serves_as_intent() {
    let out = std::env::temp_dir().join(format!("rocelab-import-nvue-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let cfg = repo("crates/rocelab-import/tests/data/nvue/roce-lossless-startup.yaml");
    let o = rocelab(&["import", "nvue", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(switch leaf01, 4 ports, 3 classes)"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning: 1 port(s) with link state down left out: swp5"));
    // NVUE's RoCE defaults lint clean: PFC on 3 with a watchdog, ECN on the RoCE queue,
    // CNPs strict.
    let fabric = out.join("fabric.toml");
    let o = rocelab(&["lint", fabric.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("0 errors"), "{text}");
    // As intent: the sample dump's host agrees with NVUE's RoCE defaults (PFC on 3, DSCP d
    // on priority d/8): no drift.
    let o = rocelab(&["doctor", repo("examples/doctor-dump").to_str().unwrap(), "--intent", cfg.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(!text.contains("drift-"), "{text}");
    // The user guide's move of RoCE to priority 2 on the switch: the host, still on 3, drifts.
    let moved = out.join("moved.yaml");
    let base = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&moved, format!("{base}- set:\n    qos:\n      pfc:\n        default-global:\n          switch-priority:\n            '2': {{}}\n      egress-queue-mapping:\n        default-global:\n          switch-priority:\n            '2':\n              traffic-class: 3\n            '3':\n              traffic-class: 0\n      mapping:\n        default-global:\n          dscp:\n            '26':\n              switch-priority: 2\n")).unwrap();
    let o = rocelab(&["doctor", repo("examples/doctor-dump").to_str().unwrap(), "--intent", moved.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("error[drift-pfc] gpu01 ens3np0: PFC is enabled on priorities 3, the fabric wants 2"),
        "{text}"
    );
    assert!(text.contains("drift-dscp-map"), "{text}");
    // The published applied configuration (RoCE off) imports and lints (findings or not).
    let applied = repo("crates/rocelab-import/tests/data/nvue/air-workshop-applied.json");
    let o = rocelab(&["import", "nvue", applied.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty());
    let o = rocelab(&["lint", fabric.to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stdout));
    // A bad file is bad input, with its place.
    let bad = out.join("bad.yaml");
    std::fs::write(
        &bad,
        "- set:\n    interface:\n      swp1:\n        type: swp\n        link:\n          speed: fast\n",
    )
    .unwrap();
    let o = rocelab(&["import", "nvue", bad.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("swp1 link speed `fast`"));
    let _ = std::fs::remove_dir_all(&out);
}
