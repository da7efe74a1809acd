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
