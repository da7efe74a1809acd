//! `rocelab simulate --jobs` through the binary (and plain `simulate` on a file whose only runs
//! are `[[job]]` tables): tenants together and alone, the report in
//! JSON and as files, and a bad `[[job]]` refused at load with its line.

use std::path::PathBuf;
use std::process::Command;

fn rocelab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).output().unwrap()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-jobs-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Two GPU nodes of 8 rails at 100G; a TCP monitoring job on rails 0-3 of node 0 sending to
/// node 1's rails 0-3, and a checkpoint burst on rails 4-7 to node 1's rails 4-7: disjoint.
const FABRIC: &str = r#"
[fabric]
name = "two-tenants"
[topology.rail_optimized]
gpu_nodes = 2
rails = 8
nodes_per_su = 2
host_link = { speed_gbps = 100, length_m = 5 }
leaf_link = { speed_gbps = 100, length_m = 50 }
[gpu_node]
gpus = 8
[[job]]
name = "monitoring"
kind = "tcp"
gpu_nodes = [0]
rails = [0, 1, 2, 3]
targets = ["node1-nic0", "node1-nic1", "node1-nic2", "node1-nic3"]
size = "1M"
count = 3
period_us = 500
[[job]]
name = "ckpt"
kind = "checkpoint"
gpu_nodes = [0]
rails = [4, 5, 6, 7]
targets = ["node1-nic4", "node1-nic5", "node1-nic6", "node1-nic7"]
size = "8M"
"#;

#[test]
fn jobs_run_together_and_alone_and_write_their_set() {
    let d = tmpdir("ok");
    let f = d.join("fabric.toml");
    std::fs::write(&f, FABRIC).unwrap();
    let out = d.join("out");
    let o =
        rocelab(&["simulate", f.to_str().unwrap(), "--jobs", "--format", "json", "-q", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "rocelab.simulate.jobs/v1");
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for j in jobs {
        // Disjoint rails: each job's figure is the same together as alone.
        assert_eq!(j["figure"]["slowdown"], 1.0, "{j}");
        assert!(j["blame"].as_array().unwrap().is_empty(), "{j}");
    }
    assert_eq!(jobs[0]["kind"], "tcp");
    assert!(out.join("jobs.txt").exists() && out.join("jobs.json").exists());
}

#[test]
fn a_bad_job_is_refused_at_load_with_its_line() {
    let d = tmpdir("bad");
    let f = d.join("fabric.toml");
    let text = FABRIC.replace("rails = [4, 5, 6, 7]", "rails = [3, 4, 5, 6]");
    std::fs::write(&f, &text).unwrap();
    let o = rocelab(&["simulate", f.to_str().unwrap(), "--jobs", "--no-files"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("GPU node 0 rail 3 is already job `monitoring`'s"), "{e}");
}

#[test]
fn a_file_whose_only_runs_are_jobs_runs_them_without_the_flag() {
    let d = tmpdir("noflag");
    let f = d.join("fabric.toml");
    std::fs::write(&f, FABRIC).unwrap();
    let o = rocelab(&["simulate", f.to_str().unwrap(), "--format", "json", "-q", "--no-files"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "rocelab.simulate.jobs/v1");
    assert_eq!(v["jobs"].as_array().unwrap().len(), 2);
}
