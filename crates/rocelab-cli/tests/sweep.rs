//! `rocelab sweep` through the binary: the same merged table whatever the job count or the
//! split into array tasks, a resumed sweep redoes no finished point, the array's tasks run
//! as Slurm would start them (`SLURM_ARRAY_TASK_ID`), bad specs name their line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod skip;

fn rocelab(dir: &Path, args: &[&str], task: Option<usize>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rocelab"));
    c.current_dir(dir).args(args);
    if let Some(t) = task {
        c.env("SLURM_ARRAY_TASK_ID", t.to_string());
    }
    c.output().unwrap()
}

const SPEC: &str = r#"fabric = "fabric.toml"
only = ["incast", "microburst"]
figures = ["incast.completion", "microburst.ecn_marked", "microburst.max_queue_bytes"]
[grid]
"qos.class[roce].ecn.kmin_bytes" = [50000, 400000]
"qos.class[roce].ecn.kmax_bytes" = [1000000, 2000000, 3000000]
"#;

fn setup(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-sweep-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let ex = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rail-16gpu-workloads.toml");
    std::fs::copy(ex, d.join("fabric.toml")).unwrap();
    std::fs::write(d.join("spec.toml"), SPEC).unwrap();
    d
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_merged_table_is_the_same_whatever_the_jobs_or_the_array_split() {
    let d = setup("split");
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "one", "-q", "--jobs", "1"], None));
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "one", "--merge"], None));
    // Three array tasks started as Slurm starts them: the task id in the environment.
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "arr", "--slurm", "3"], None));
    let script = std::fs::read_to_string(d.join("arr/sweep.sbatch")).unwrap();
    assert!(
        script.contains("#SBATCH --array=0-2") && script.contains("--task \"$SLURM_ARRAY_TASK_ID\" --tasks 3"),
        "{script}"
    );
    // The script itself, run as Slurm runs each task: bash with the task id in the
    // environment (the #SBATCH lines are comments to bash).
    for t in 0..3 {
        let o = Command::new("bash")
            .current_dir(&d)
            .arg("arr/sweep.sbatch")
            .env("SLURM_ARRAY_TASK_ID", t.to_string())
            .output()
            .unwrap();
        let out = ok(&o);
        assert!(out.starts_with("2 points run"), "{out}");
    }
    // Again with --tasks and the variable: every point is done, none runs twice.
    for t in 0..3 {
        let out = ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "arr", "-q", "--tasks", "3"], Some(t)));
        assert!(out.starts_with("0 points run, 2 already done"), "{out}");
    }
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "arr", "--merge"], None));
    let a = std::fs::read(d.join("one/sweep.csv")).unwrap();
    assert_eq!(a, std::fs::read(d.join("arr/sweep.csv")).unwrap());
    assert_eq!(std::fs::read(d.join("one/sweep.json")).unwrap(), std::fs::read(d.join("arr/sweep.json")).unwrap());
    // 6 points, and the thresholds matter: a higher Kmax marks fewer packets in the bursts.
    let csv = String::from_utf8(a).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    let html = std::fs::read_to_string(d.join("one/sweep.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("<rect"), "a heat map");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_resumed_sweep_redoes_no_finished_point() {
    let d = setup("resume");
    assert!(ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "o", "-q"], None)).starts_with("6 points run"));
    let kept = d.join("o/points/000001.json");
    let before = std::fs::metadata(&kept).unwrap().modified().unwrap();
    // An interruption: one point's result is missing.
    std::fs::remove_file(d.join("o/points/000004.json")).unwrap();
    let out = ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "o", "-q"], None));
    assert!(out.starts_with("1 points run, 5 already done"), "{out}");
    assert_eq!(std::fs::metadata(&kept).unwrap().modified().unwrap(), before);
    assert!(ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "o", "-q"], None)).starts_with("0 points run"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_spec_names_its_line_and_the_fix() {
    let d = setup("bad");
    std::fs::write(d.join("bad.toml"), SPEC.replace("class[roce]", "class[rdma]")).unwrap();
    let o = rocelab(&d, &["sweep", "bad.toml", "-o", "o"], None);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.toml:6:") && err.contains("no element `rdma` (it has: roce, cnp, default)"), "{err}");
    std::fs::write(d.join("empty.toml"), "fabric = \"fabric.toml\"\n[grid]\n\"nic.mtu\" = []\n").unwrap();
    let err = String::from_utf8_lossy(&rocelab(&d, &["sweep", "empty.toml"], None).stderr).into_owned();
    assert!(err.contains("empty.toml:3:") && err.contains("non-empty list"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_real_slurm_job_array_gives_the_local_table() {
    // `.ci/run` starts a single-node Slurm (`.ci/slurm-up`) and says so in ROCELAB_SLURM.
    if std::env::var("ROCELAB_SLURM").map(|v| v != "1").unwrap_or(true) {
        skip::skipped(
            "a_real_slurm_job_array_gives_the_local_table",
            "no running Slurm (ROCELAB_SLURM is not 1: run .ci/slurm-up and set it); the array's local twin ran",
        );
        return;
    }
    let d = setup("slurm");
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "arr", "--slurm", "3"], None));
    let o = Command::new("sbatch").current_dir(&d).args(["--wait", "arr/sweep.sbatch"]).output().unwrap();
    assert!(o.status.success(), "sbatch: {o:?}");
    for t in 0..3 {
        let log = std::fs::read_dir(d.join("arr"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(&format!("_{t}.out")))
            .unwrap_or_else(|| panic!("no log of array task {t}"));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("2 points run"), "task {t}: {text}");
    }
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "arr", "--merge"], None));
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "loc", "-q"], None));
    ok(&rocelab(&d, &["sweep", "spec.toml", "-o", "loc", "--merge"], None));
    assert_eq!(std::fs::read(d.join("arr/sweep.csv")).unwrap(), std::fs::read(d.join("loc/sweep.csv")).unwrap());
    let _ = std::fs::remove_dir_all(&d);
}
