//! `rocelab import sonic` and `rocelab doctor --intent` on SONiC's rendered sample config
//! (crates/rocelab-import/tests/data/sonic, sources in its SOURCE.md).

use std::path::PathBuf;
use std::process::Command;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

fn rocelab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).output().unwrap()
}

#[test]
fn a_sonic_config_imports_to_a_file_that_lints_and_serves_as_intent() {
    let out = std::env::temp_dir().join(format!("rocelab-import-sonic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let cfg = repo("crates/rocelab-import/tests/data/sonic/config_db.json");
    let o = rocelab(&["import", "sonic", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(switch leaf1, 4 ports, 7 classes)"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning: ingress_lossless_pool has a shared headroom pool"));
    // It lints: the only finding is the config's own, CNPs (DSCP 48 -> TC 6) on a DWRR queue.
    let fabric = out.join("fabric.toml");
    let o = rocelab(&["lint", fabric.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("CNP002") && text.contains("0 errors, 1 warning"), "{text}");
    // As intent: the sample dump's host maps DSCPs its own way and has PFC on 3 only; the
    // switch wants PFC on 3 and 4.
    let o = rocelab(&["doctor", repo("examples/doctor-dump").to_str().unwrap(), "--intent", cfg.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("error[drift-pfc] gpu01 ens3np0: PFC is enabled on priorities 3, the fabric wants 3,4"),
        "{text}"
    );
    assert!(text.contains("`mlnx_qos -i ens3np0 --pfc 0,0,0,1,1,0,0,0`"), "{text}");
    assert!(!text.contains("drift-firmware"), "no firmware in a switch config: {text}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_containerlab_topology_imports_to_a_file_that_lints() {
    let out = std::env::temp_dir().join(format!("rocelab-import-clab-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let topo = repo("crates/rocelab-import/tests/data/containerlab/symm-mlag.clab.yml");
    let o = rocelab(&[
        "import",
        "containerlab",
        topo.to_str().unwrap(),
        "--speed-gbps",
        "400",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(12 hosts, 8 switches, 28 links)"));
    let o = rocelab(&["lint", out.join("fabric.toml").to_str().unwrap()]);
    // Lint runs on it (exit 0 or 1 by its findings); 2 would be a file that does not load.
    assert_ne!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stdout));
    let o = rocelab(&[
        "import",
        "containerlab",
        topo.to_str().unwrap(),
        "--speed-gbps",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&out);
}
