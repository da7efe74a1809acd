//! `rocelab plan` end to end: the built binary, its exit statuses, formats and error locations.

use std::process::{Command, Output};

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("run rocelab")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn default_plan_shows_the_arithmetic() {
    let o = rocelab(&["plan", "--model", "llama3-70b", "--gpus", "64", "--pp", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in
        ["Memory per GPU", "α-β each", "NCCL each", "bubble", "network wait", "bottleneck", "verdict", "Assumptions"]
    {
        assert!(out.contains(needle), "missing {needle}:\n{out}");
    }
}

#[test]
fn json_is_valid_and_deterministic() {
    let args = ["plan", "--model", "mixtral-8x7b", "--gpus", "64", "--tp", "2", "--ep", "8", "--format", "json"];
    let a = rocelab(&args);
    let b = rocelab(&args);
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).expect("JSON");
    assert!(v["estimate"]["headline"]["step_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(v["scenario"]["model"]["name"], "mixtral-8x7b");
    assert!(v["estimate"]["comm"].as_array().unwrap().iter().any(|l| l["dimension"] == "EP"));
}

#[test]
fn bad_flags_exit_2_and_name_the_flag() {
    let o = rocelab(&["plan", "--model", "llama3-7b"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--model") && stderr(&o).contains("llama3-8b"), "{}", stderr(&o));
    let o = rocelab(&["plan", "--tp", "6"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--tp: TP 6 does not divide the 64 attention heads"), "{}", stderr(&o));
    let o = rocelab(&["plan", "--gpus", "12", "--tp", "8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--gpus"), "{}", stderr(&o));
    let o = rocelab(&["plan", "--search"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--gpus"), "{}", stderr(&o));
    let o = rocelab(&["plan", "--compare", "--links", "roce400,warp9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--links") && stderr(&o).contains("warp9"), "{}", stderr(&o));
}

#[test]
fn plan_file_errors_point_at_the_line() {
    let dir = std::env::temp_dir().join(format!("rocelab-plan-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(&f, "[plan.model]\npreset = \"llama3-70b\"\n\n[plan.parallel]\ntp = 8\npp = 3\ndp = 2\n\n[plan.hardware]\ngpus = 48\n\n[plan.training]\nglobal_batch = 5\n").unwrap();
    let o = rocelab(&["plan", "--input", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.toml:13:1: error: training.global_batch"), "{err}");
    std::fs::write(&f, "[plan.parallel]\ntp = 8\nteepee = 2\n").unwrap();
    let o = rocelab(&["plan", "--input", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.toml:3:1"), "{}", stderr(&o));
    // A flag overrides the file and is then what the error names.
    std::fs::write(&f, "[plan.parallel]\ntp = 8\n").unwrap();
    let o = rocelab(&["plan", "--input", f.to_str().unwrap(), "--tp", "5"]);
    assert!(stderr(&o).contains("--tp:"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_example_plan_runs() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/plan");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let o = rocelab(&["plan", "--input", p.to_str().unwrap(), "--format", "markdown"]);
        assert_eq!(o.status.code(), Some(0), "{}: {}", p.display(), stderr(&o));
        assert!(stdout(&o).contains("| dim |"), "{}", p.display());
        n += 1;
    }
    assert!(n >= 3);
}

#[test]
fn compare_and_search_run_and_write_files() {
    let o = rocelab(&["plan", "--compare"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for usage in [
        "replicated serving",
        "RAG",
        "shared storage",
        "multi-node pipeline parallel",
        "multi-node tensor parallel",
        "homelab",
    ] {
        assert!(out.contains(usage), "{usage}");
    }
    let dir = std::env::temp_dir().join(format!("rocelab-plan-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("search.json");
    let o = rocelab(&["plan", "--search", "--gpus", "1024", "--format", "json", "--output", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    assert_eq!(v["ranked"].as_array().unwrap().len(), 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fabric_file_supplies_the_cluster() {
    let o = rocelab(&["plan", "--fabric", "examples/rail-128gpu.toml", "--tp", "8", "--pp", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("128 × h100"), "{out}");
    assert!(out.contains("8 NIC(s) per node"), "{out}");
}

fn widest(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// The --compare table fits a terminal: 100 columns when there is no terminal (the same bytes in
/// a pipe or a file), `--width N` otherwise; a table too wide is printed one usage per block, with
/// nothing lost. `--width 0` and markdown keep the wide grid.
#[test]
fn compare_fits_a_terminal() {
    let wide = stdout(&rocelab(&["plan", "--compare", "--width", "0"]));
    assert!(widest(&wide) > 200, "the grid is wide: {}", widest(&wide));
    let o = rocelab(&["plan", "--compare"]);
    let out = stdout(&o);
    assert!(widest(&out) <= 100, "{} columns:\n{out}", widest(&out));
    for w in ["60", "80"] {
        let narrow = stdout(&rocelab(&["plan", "--compare", "--width", w]));
        assert!(widest(&narrow) <= w.parse().unwrap(), "--width {w}:\n{narrow}");
    }
    // Nothing is lost: every cell of the grid is in the blocks, under its usage.
    let links = ["tb5", "eth10-tcp", "eth25-tcp", "eth100-tcp", "roce100", "roce400", "ib-ndr", "roce800"];
    assert!(out.contains("shared storage → eth10-tcp"), "{out}");
    assert!(out.contains("multi-node tensor parallel → none of these"), "{out}");
    let block = out.split("\nRAG → ").nth(1).unwrap().split("\n\n").next().unwrap();
    for l in links {
        assert!(block.lines().any(|x| x.trim_start().starts_with(l)), "{l} missing from:\n{block}");
    }
    assert!(wide.contains("acceptable (ckpt 105.149 s, 5.5%)") && out.contains("acceptable (ckpt 105.149 s, 5.5%)"));
    let md = stdout(&rocelab(&["plan", "--compare", "--format", "markdown", "--width", "40"]));
    assert!(md.lines().any(|l| l.starts_with("| usage | tb5 | eth10-tcp |")), "{md}");
}

#[test]
fn labels_say_what_the_figures_are() {
    let o = rocelab(&[
        "plan",
        "--model",
        "llama3-8b",
        "--gpu",
        "rtx4090",
        "--interconnect",
        "tb5",
        "--precision",
        "int4",
        "--inference",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    // 165 TFLOP/s is the RTX 4090's 16-bit tensor figure, not an int4 one.
    assert!(out.contains("of its 165 TFLOP/s dense BF16 (int4 weights are computed in 16 bit) tensor peak"), "{out}");
    assert!(!out.contains("dense int4"), "{out}");
    assert!(out.contains("network tb5 at 80 Gb/s link, 64 Gb/s PCIe data"), "{out}");
    let o = rocelab(&["plan", "--model", "llama3-8b", "--gpus", "8", "--interconnect", "tb4"]);
    assert!(stdout(&o).contains("network tb4 at 40 Gb/s link, 32 Gb/s PCIe data"), "{}", stdout(&o));
    assert!(stdout(&o).contains("of its 989 TFLOP/s dense BF16 tensor peak"), "{}", stdout(&o));
    // An overridden rate is just a rate.
    let o = rocelab(&["plan", "--model", "llama3-8b", "--gpus", "8", "--interconnect", "tb4", "--link-gbps", "50"]);
    assert!(stdout(&o).contains("network tb4@50G at 50 Gb/s ×"), "{}", stdout(&o));
}

/// `--compare --fabric`: the RoCE and IB columns take the efficiency the twin measures on the
/// fabric (both link layers on its topology), said in the note; the JSON keeps the figures.
#[test]
fn compare_with_a_fabric_uses_the_twins_roce_and_ib_figures() {
    let args = ["plan", "--compare", "--fabric", "examples/ib-vs-roce/roce-best.toml", "--links", "roce400,ib-ndr"];
    let o = rocelab(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let note = j["note"].as_str().unwrap();
    assert!(note.contains("measured by the twin on examples/ib-vs-roce/roce-best.toml"), "{note}");
    assert!(
        note.contains("16 hosts at 400 Gb/s") && note.contains("RoCE 0.") && note.contains("InfiniBand 0."),
        "{note}"
    );
    // Without the fabric both columns are one pipe: the same share for pipeline parallelism;
    // with it they part (the twin's IB figure is higher: smaller headers, no ECMP collisions).
    let share = |j: &serde_json::Value, c: usize| {
        let rows = j["rows"].as_array().unwrap();
        let r = rows.iter().find(|r| r["usage"] == "multi-node pipeline parallel").unwrap();
        r["cells"][c]["share"].as_f64().unwrap()
    };
    assert!(share(&j, 0) > share(&j, 1), "RoCE {} vs IB {}", share(&j, 0), share(&j, 1));
    // Twice the same bytes: the twin is deterministic.
    assert_eq!(stdout(&rocelab(&[&args[..], &["--format", "json"]].concat())), stdout(&o));
}
