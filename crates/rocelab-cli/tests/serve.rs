//! `rocelab simulate --serve` through the binary: a small disaggregated serving run on the
//! shipped 128-GPU fabric writes its set, answers in JSON, and bad input is a located error.

use std::path::PathBuf;
use std::process::Command;

fn rocelab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).output().unwrap()
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name).display().to_string()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-serve-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One prefill and one decode replica of TP8 (a node each); the KV cache crosses the rail.
const PLAN: &str = r#"
[plan.model]
preset = "llama3-70b"
[plan.inference]
prompt_tokens = 512
output_tokens = 4
batch = 4
disaggregated = true
[plan.parallel]
tp = 8
dp = 1
[plan.hardware]
gpus = 16
[serve]
rate_per_s = 50.0
requests = 3
kv_transfer = "whole"
"#;

#[test]
fn a_small_disaggregated_run_completes_every_request_and_writes_its_set() {
    let d = tmpdir("ok");
    let plan = d.join("serve.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = d.join("out");
    let o = rocelab(&[
        "simulate",
        &example("rail-128gpu.toml"),
        "--serve",
        plan.to_str().unwrap(),
        "--format",
        "json",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "rocelab.simulate.serve/v1");
    assert_eq!(v["twin"]["completed"], 3, "{v}");
    assert_eq!(v["twin"]["requests"], 3, "{v}");
    // The KV cache crossed the fabric: packets were sent.
    assert!(v["twin"]["data_packets"].as_u64().unwrap() > 0, "{v}");
    for f in ["serve.txt", "serve.json"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("serve.json")).unwrap()).unwrap();
    assert_eq!(written, v, "serve.json is what was printed");
}

#[test]
fn a_bad_serve_table_is_bad_input_with_its_line() {
    let d = tmpdir("bad");
    let plan = d.join("serve.toml");
    std::fs::write(&plan, PLAN.replace("kv_transfer = \"whole\"", "kv_transfer = \"bulk\"")).unwrap();
    let o = rocelab(&["simulate", &example("rail-128gpu.toml"), "--serve", plan.to_str().unwrap(), "--no-files"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    // The line and column of the bad value, and what it may be.
    assert!(e.contains("serve.toml:17:") && e.contains("`bulk`") && e.contains("`whole`"), "{e}");
}

/// The shipped 128-GPU fabric with a `[plan]` and a `[[workload]] serve = "plan"` table.
fn fabric_with_serving_workload(extra: &str) -> String {
    let fabric = std::fs::read_to_string(example("rail-128gpu.toml")).unwrap();
    let plan = PLAN.split("[serve]").next().unwrap();
    format!("{fabric}\n{plan}\n[[workload]]\nname = \"chat\"\nserve = \"plan\"\nrate_per_s = 40.0\nrequests = 2\nkv_transfer = \"whole\"\n{extra}\n")
}

#[test]
fn a_serving_workload_table_runs_from_the_fabric_file() {
    let d = tmpdir("wl");
    let f = d.join("fabric.toml");
    std::fs::write(&f, fabric_with_serving_workload("")).unwrap();
    let out = d.join("out");
    let o = rocelab(&["simulate", f.to_str().unwrap(), "--workload", "chat", "-q", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("chat").join("serve.json")).unwrap()).unwrap();
    // The table's keys win over the defaults: 2 requests, the whole KV cache after the prefill.
    assert_eq!(v["twin"]["requests"], 2, "{v}");
    assert_eq!(v["twin"]["completed"], 2, "{v}");
    assert_eq!(v["twin"]["plan"]["kv_transfer"], "whole", "{v}");
}

#[test]
fn a_bad_serving_workload_is_refused_at_load_with_its_line() {
    let d = tmpdir("wlbad");
    let f = d.join("fabric.toml");
    let text = fabric_with_serving_workload("").replace("rate_per_s = 40.0", "rate_per_s = -3.0");
    std::fs::write(&f, &text).unwrap();
    // lint loads the file too: the same located error, before anything runs.
    for args in [vec!["simulate", f.to_str().unwrap(), "--no-files"], vec!["lint", f.to_str().unwrap()]] {
        let verb = args[0];
        let o = rocelab(&args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{verb}: {e}");
        let line = text.lines().position(|l| l.starts_with("rate_per_s = -3")).unwrap() + 1;
        assert!(e.contains(&format!(":{line}:")) && e.contains("positive rate"), "{verb}: {e}");
    }
}

#[test]
fn plan_compare_on_a_thunderbolt_fabric_takes_the_homelab_cell_from_the_serving_twin() {
    let o = rocelab(&[
        "plan",
        "--compare",
        "--model",
        "llama3-70b",
        "--fabric",
        &example("homelab/tb5.toml"),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let home = rows.iter().find(|r| r["usage"] == "homelab").unwrap();
    let cells = home["cells"].as_array().unwrap();
    let tb5 = cells.iter().find(|c| c["link"] == "tb5").unwrap();
    // PP2 of Llama 3 70B: 32 MB of prefill activations and 16 KB a token over 64 Gb/s beside
    // 3.6 s of prefill and 45 ms a token: well under 1 % of the request.
    assert!(tb5["figure"].as_str().unwrap().starts_with("(twin "), "{tb5}");
    let share = tb5["share"].as_f64().unwrap();
    assert!(share > 0.0 && share < 0.01, "{tb5}");
    assert_eq!(tb5["verdict"], "good");
    // Only the fabric's own column is the twin's.
    assert!(cells.iter().filter(|c| c["figure"].as_str().unwrap().contains("twin")).count() == 1);
    assert!(v["note"].as_str().unwrap().contains("serving twin"), "{}", v["note"]);
}
