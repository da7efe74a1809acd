//! `rocelab import` through the real binary: ns-3 and htsim inputs become a fabric file that
//! `rocelab simulate` runs; `--run` writes ns-3's FCT and PFC files; bad input exits 2 with a
//! located message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../rocelab-import/tests/data").join(p)
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-cli-import-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Lays `config` and its `mix/` inputs out as an ns-3 simulation directory under `root`
/// (ns-3 writes its outputs next to them; the test data must stay untouched).
fn ns3_dir(root: &Path, config: &str) -> PathBuf {
    std::fs::create_dir_all(root.join("mix")).unwrap();
    for e in std::fs::read_dir(data("mix")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), root.join("mix").join(e.file_name())).unwrap();
    }
    std::fs::copy(data(config), root.join(config)).unwrap();
    root.join(config)
}

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).output().expect("run rocelab")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn ns3_import_then_simulate() {
    let out = out_dir("ns3");
    let o = rocelab(&["import", "ns3", "--config", s(&data("star-config.txt")), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("4 hosts, 1 switches, 4 links, 3 flows"), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("warning: L2_BACK_TO_ZERO 0"), "{}", text(&o.stderr));
    let fabric = out.join("fabric.toml");
    let body = std::fs::read_to_string(&fabric).unwrap();
    assert!(body.contains("preset = \"ns3-reference\"") && body.contains("[[traffic]]  # star-flow.txt:2"));
    let res = out.join("res");
    let o = rocelab(&["simulate", s(&fabric), "--quiet", "--out", s(&res)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("flows: 3 of 3 completed"), "{}", text(&o.stdout));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn ns3_run_writes_ns3_layouts() {
    let out = out_dir("run");
    let sim = out_dir("run-ns3");
    let cfg = ns3_dir(&sim, "fat-config.txt");
    let o = rocelab(&["import", "ns3", "--config", s(&cfg), "--out", s(&out), "--run", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Also where ns-3 writes them: FCT_OUTPUT_FILE mix/fct_fat.txt from its run directory.
    for f in ["mix/fct_fat.txt", "mix/pfc_fat.txt"] {
        assert_eq!(std::fs::read(sim.join(f)).unwrap(), std::fs::read(out.join(&f[4..])).unwrap(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&sim);
    for f in ["fabric.toml", "summary.json", "flows.csv", "metrics.prom", "fct_fat.txt", "pfc_fat.txt"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let fct = std::fs::read_to_string(out.join("fct_fat.txt")).unwrap();
    assert_eq!(fct.lines().count(), 4);
    for l in fct.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 8, "{l}");
        assert!(u32::from_str_radix(f[0], 16).is_ok() && f[0].len() == 8, "{l}");
        assert!(f[2..].iter().all(|x| x.parse::<u64>().is_ok()), "{l}");
    }
    assert!(fct.contains("0b000401 0b000801 10000 101 100000 2000010000 "), "{fct}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn htsim_import_then_simulate() {
    let out = out_dir("htsim");
    let o = rocelab(&["import", "htsim", "--cm", s(&data("incast.cm")), "--linkspeed", "100000", "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("16 hosts, 20 switches, 48 links, 3 flows"), "{}", text(&o.stdout));
    let o = rocelab(&["simulate", s(&out.join("fabric.toml")), "--quiet", "--no-files"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("flows: 3 of 3 completed"), "{}", text(&o.stdout));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_input_exits_2_with_a_line() {
    let out = out_dir("bad");
    std::fs::create_dir_all(&out).unwrap();
    let cfg = out.join("config.txt");
    let body = std::fs::read_to_string(data("star-config.txt")).unwrap().replace("CC_MODE 1", "CC_MODE 10");
    std::fs::write(&cfg, body).unwrap();
    let o = rocelab(&[
        "import",
        "ns3",
        "--config",
        s(&cfg),
        "--topology",
        s(&data("mix/star-topology.txt")),
        "--flows",
        s(&data("mix/star-flow.txt")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("config.txt:11: CC_MODE 10 (HPCC-PINT) is not modelled"), "{e}");
    let cm = out.join("t.cm");
    std::fs::write(&cm, "Nodes 4\nConnections 1\n1->0 id 1 trigger 2 size 10\n").unwrap();
    let o = rocelab(&["import", "htsim", "--cm", s(&cm), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("t.cm:3"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn simulate_ns3_config_shortcut() {
    let out = out_dir("shortcut");
    let sim = out_dir("shortcut-ns3");
    let cfg = ns3_dir(&sim, "star-config.txt");
    let o = rocelab(&["simulate", "--ns3-config", s(&cfg), "--out", s(&out), "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("flows: 3 of 3 completed"), "{}", text(&o.stdout));
    for f in ["fabric.toml", "summary.json", "fct_star.txt", "pfc_star.txt"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    assert_eq!(std::fs::read_to_string(out.join("fct_star.txt")).unwrap().lines().count(), 3);
    // A fabric file and --ns3-config together are refused by the parser.
    let o = rocelab(&["simulate", "x.toml", "--ns3-config", s(&data("star-config.txt"))]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&out);
}
