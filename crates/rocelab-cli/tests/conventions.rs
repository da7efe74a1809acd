//! The conventions every verb shares, checked across the verbs: exit statuses (0 success, 1 a
//! check failed or a run did not complete, 2 bad input), flag errors named as flag errors, and
//! output sets that never mix two runs, even when a run is killed while swapping them in.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn rocelab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name).display().to_string()
}

fn doctor_dump(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rocelab-doctor/tests/fixtures/dumps")
        .join(name)
        .display()
        .to_string()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-conventions-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str], cwd: &Path) -> Output {
    rocelab().args(args).current_dir(cwd).output().unwrap()
}

/// The exit-status table, verb by verb: (arguments, status, a phrase standard error must hold).
#[test]
fn every_verb_exits_0_1_or_2_for_the_same_reasons() {
    let d = tmpdir("exit");
    std::fs::write(d.join("existing.toml"), "# mine\n").unwrap();
    let typo = std::fs::read_to_string(example("incast-16to1.toml")).unwrap().replace("\nseed = 1", "\nsed = 1");
    assert!(typo.contains("\nsed = 1"));
    std::fs::write(d.join("typo.toml"), typo).unwrap();
    let incast = example("incast-16to1.toml");
    let rail = example("rail-128gpu.toml");
    let mistakes = example("common-mistakes.toml");
    let small = example("leaf-spine-small.toml");
    let (healthy, missing) = (doctor_dump("healthy"), "no-such-file.toml");
    #[rustfmt::skip]
    let table: Vec<(Vec<&str>, i32, &str)> = vec![
        // 0: the job was done and passed.
        (vec!["init", "fresh.toml"], 0, ""),
        (vec!["topo", &small], 0, ""),
        (vec!["lint", &small], 0, ""),
        (vec!["simulate", &incast, "-q", "--no-files"], 0, ""),
        (vec!["scenarios", "--list"], 0, ""),
        (vec!["doctor", &healthy], 0, ""),
        (vec!["bench", "--list"], 0, ""),
        (vec!["plan", "--model", "llama3-8b", "--gpus", "64"], 0, ""),
        // 1: a check failed, or the run's flows did not complete (with the reason).
        (vec!["lint", &mistakes], 1, ""),
        (vec!["validate", &mistakes, "--only", "lint", "-q"], 1, ""),
        (vec!["simulate", &incast, "-q", "--no-files", "--duration-us", "5"], 1,
         "16 of 16 flows did not complete: the run stopped at its duration limit"),
        // 2: bad input — a missing file, a bad flag value, an unknown name.
        (vec!["init", "existing.toml"], 2, "already exists"),
        (vec!["topo", missing], 2, "cannot read"),
        (vec!["simulate", "typo.toml", "--no-files"], 2, "typo.toml:48:1: error: `simulation`: unknown field `sed`"),
        (vec!["topo", "typo.toml"], 2, "\n  = help: did you mean `seed`?"),
        (vec!["lint", missing], 2, "cannot read"),
        (vec!["simulate", missing], 2, "cannot read"),
        (vec!["simulate", &incast, "--ack-interval", "0", "--no-files"], 2, "--ack-interval"),
        (vec!["simulate", &rail, "--collective", "all_reduce", "--nodes", "0", "--no-files"], 2,
         "error: --collective (with --nodes"),
        (vec!["simulate", &rail, "--collective", "alreduce", "--no-files"], 2, "all_reduce"),
        (vec!["simulate", &rail, "--collective", "all_reduce", "--channels", "0", "--no-files"], 2,
         "error: --channels must be at least 1"),
        (vec!["simulate", &small, "--scenario", "incst", "--no-files"], 2,
         "error: --scenario: no [[scenario]] named `incst`, and no scenario kind of that name\n  = help: did you mean `incast`?"),
        (vec!["validate", missing], 2, "cannot read"),
        (vec!["validate", &small, "--only", "incst"], 2, "did you mean `incast`"),
        (vec!["compare", missing, missing], 2, "cannot read"),
        (vec!["sweep", missing], 2, ""),
        (vec!["import", "htsim", "--cm", missing], 2, ""),
        (vec!["import", "ns3", "--config", missing], 2, ""),
        (vec!["bench", "no-such-scenario"], 2, "unknown scenario"),
        (vec!["plan", "--model", "no-such-model", "--gpus", "8"], 2, ""),
        (vec!["collect", "--count", "0"], 2, "--count"),
        (vec!["doctor", missing], 2, ""),
        (vec!["exporter", "--max-connections", "0"], 2, "--max-connections"),
        // An unknown flag is bad input on every verb, with clap's "did you mean" where close.
        (vec!["simulate", &incast, "--sed", "1"], 2, "--seed"),
        (vec!["topo", &small, "--frmat", "json"], 2, "--format"),
    ];
    let mut wrong = Vec::new();
    for (args, want, phrase) in &table {
        let o = run(args, &d);
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(*want) || !err.contains(phrase) {
            wrong.push(format!("rocelab {}: exit {:?} (want {want}), stderr: {err}", args.join(" "), o.status.code()));
        }
        // Never a panic, whatever the input.
        assert!(!err.contains("panicked"), "rocelab {}: {err}", args.join(" "));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A directory's files and their bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    listing(dir).into_iter().map(|f| (f.clone(), std::fs::read(dir.join(&f)).unwrap())).collect()
}

/// Run A samples queues (timeseries.csv); run B, on the flow engine, does not.
fn run_a(out: &Path) -> Command {
    let mut c = rocelab();
    c.args(["simulate", &example("incast-16to1.toml"), "-q", "--seed", "1", "--out"]).arg(out);
    c
}

fn run_b(out: &Path) -> Command {
    let mut c = rocelab();
    c.args(["simulate", &example("incast-16to1.toml"), "-q", "--engine", "flow", "--out"]).arg(out);
    c
}

#[test]
fn two_runs_into_one_out_leave_only_the_second_runs_files() {
    let d = tmpdir("two-runs");
    let out = d.join("out");
    assert!(run_a(&out).status().unwrap().success());
    assert!(listing(&out).contains(&"timeseries.csv".to_string()));
    assert!(run_b(&out).status().unwrap().success());
    assert_eq!(listing(&out), [".rocelab-output", "flows.csv", "metrics.prom", "summary.json"]);
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["engine"], "flow");
    // Nothing left beside it.
    assert_eq!(listing(&d), ["out"]);
    // A directory of someone else's files is never swapped out.
    std::fs::write(d.join("notes.txt"), "mine").unwrap();
    let o = run_b(&d).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("which rocelab did not write there"));
    assert!(d.join("notes.txt").is_file());
}

/// Starts `cmd` paused at `point` of the swap, SIGKILLs it there, and waits for it.
fn kill_at(mut cmd: Command, point: &str, no_exchange: bool) {
    cmd.env("ROCELAB_TEST_OUTPUT_PAUSE", point).stderr(Stdio::piped()).stdout(Stdio::null());
    if no_exchange {
        cmd.env("ROCELAB_TEST_NO_EXCHANGE", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let marker = format!("rocelab-test: paused at {point}");
    loop {
        match lines.next() {
            Some(Ok(l)) if l == marker => break,
            Some(Ok(_)) => continue,
            _ => panic!("the run ended without pausing at {point}: {:?}", child.wait()),
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
}

#[test]
fn a_run_killed_while_swapping_its_set_in_leaves_the_old_set_or_the_new_one() {
    let d = tmpdir("kill");
    let (ref_a, ref_b) = (d.join("ref-a"), d.join("ref-b"));
    assert!(run_a(&ref_a).status().unwrap().success());
    assert!(run_b(&ref_b).status().unwrap().success());
    let (set_a, set_b) = (contents(&ref_a), contents(&ref_b));
    let out = d.join("out");

    // Killed before the swap: the old set, whole.
    assert!(run_a(&out).status().unwrap().success());
    kill_at(run_b(&out), "before-swap", false);
    assert_eq!(contents(&out), set_a);
    // Killed right after the one-step exchange: the new set, whole.
    kill_at(run_b(&out), "after-swap", false);
    assert_eq!(contents(&out), set_b);
    // Where the exchange is not available, two renames: killed between them, the old set is
    // whole under its backup name, and the next run puts it back before replacing it.
    assert!(run_a(&out).status().unwrap().success());
    kill_at(run_b(&out), "between-renames", true);
    assert!(!out.exists());
    assert_eq!(contents(&d.join(".out.old")), set_a);
    assert!(run_b(&out).status().unwrap().success());
    assert_eq!(contents(&out), set_b);
    // The killed runs' staging directories and the backup are gone.
    assert_eq!(listing(&d), ["out", "ref-a", "ref-b"]);
}

/// Every verb that prints a result takes `--format text|json` (and `--json` for the second),
/// and its JSON is one document in the envelope: `schema` (`rocelab.<verb>.<document>/v1`)
/// and `version` (this rocelab's) first.
#[test]
fn every_verb_prints_json_in_one_envelope_under_format_json_or_json() {
    let d = tmpdir("formats");
    let small = example("leaf-spine-small.toml");
    let incast = example("incast-16to1.toml");
    let cm = example("htsim/perm.cm");
    std::fs::create_dir_all(d.join("sys")).unwrap();
    std::fs::copy(example("rail-16gpu-workloads.toml"), d.join("fabric.toml")).unwrap();
    std::fs::write(d.join("spec.toml"), "fabric = \"fabric.toml\"\nonly = [\"incast\"]\n[grid]\n\"seed\" = [1, 2]\n")
        .unwrap();
    let healthy = doctor_dump("healthy");
    #[rustfmt::skip]
    let table: Vec<(&str, Vec<&str>, &str)> = vec![
        ("init", vec!["init", "new.toml"], "init.result"),
        ("topo", vec!["topo", &small], "topo.summary"),
        ("lint", vec!["lint", &small], "lint.report"),
        ("simulate", vec!["simulate", &incast, "-q", "--no-files"], "simulate.summary"),
        ("scenarios", vec!["scenarios", "--list"], "scenarios.list"),
        ("validate", vec!["validate", &small, "--only", "lint", "-q"], "validate.report"),
        ("compare", vec!["compare", &small, &small, "--only", "lint"], "compare.report"),
        ("sweep", vec!["sweep", "spec.toml", "-o", "sw", "--slurm", "2"], "sweep.result"),
        ("import", vec!["import", "htsim", "--cm", &cm, "--nodes", "16", "-o", "imp", "-q"], "import.result"),
        ("bench", vec!["bench", "--list"], "bench.list"),
        ("plan", vec!["plan", "--model", "llama3-8b", "--gpus", "64"], "plan.result"),
        ("collect", vec!["collect", "--sysfs-root", "sys", "-o", "dump"], "collect.result"),
        ("doctor", vec!["doctor", &healthy], "doctor.report"),
        // The listings too.
        ("init", vec!["init", "--list"], "init.templates"),
        ("lint", vec!["lint", "--list-rules"], "lint.rules"),
        ("validate", vec!["validate", "--list"], "validate.checks"),
    ];
    let mut verbs_seen = Vec::new();
    for (verb, args, schema) in &table {
        verbs_seen.push(*verb);
        let help = if *verb == "import" { run(&["import", "htsim", "--help"], &d) } else { run(&[verb, "--help"], &d) };
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(help.contains("--format"), "rocelab {verb} --help has no --format: {help}");
        for (i, flag) in ["--format=json", "--json"].iter().enumerate() {
            if *verb == "init" {
                let _ = std::fs::remove_file(d.join("new.toml"));
            }
            let mut argv = args.clone();
            argv.push(flag);
            let o = run(&argv, &d);
            // `collect` on a tree without RDMA devices fails (exit 1) but still answers in JSON.
            let want = if *verb == "collect" { 1 } else { 0 };
            assert_eq!(o.status.code(), Some(want), "rocelab {}: {o:?}", argv.join(" "));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|e| panic!("rocelab {}: not one JSON document ({e}): {o:?}", argv.join(" ")));
            assert_eq!(v["schema"], format!("rocelab.{schema}/v1"), "rocelab {}", argv.join(" "));
            assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "rocelab {}", argv.join(" "));
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(text.trim_start().starts_with("{"), "{text}");
            let _ = i;
        }
    }
    // Where a verb writes several files, `-o/--out` names their directory.
    for args in [
        &["simulate", "--help"][..],
        &["import", "ns3", "--help"],
        &["import", "htsim", "--help"],
        &["sweep", "--help"],
        &["collect", "--help"],
    ] {
        let help = String::from_utf8_lossy(&run(args, &d).stdout).into_owned();
        assert!(help.contains("-o, --out <OUT>"), "rocelab {}: no -o/--out: {help}", args.join(" "));
    }
    // Every verb of the binary is in the table, but the exporter (its output is Prometheus
    // text over HTTP) and the two that print shell scripts and roff.
    let help = String::from_utf8_lossy(&run(&["--help"], &d).stdout).into_owned();
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|v| !["exporter", "completions", "man", "help"].contains(v))
        .collect();
    let mut missing: Vec<&&str> = listed.iter().filter(|v| !verbs_seen.contains(v)).collect();
    missing.sort();
    assert!(missing.is_empty(), "verbs without a --format check: {missing:?}");
}

/// nccl-tests' own flags work on `simulate --collective` as they do on all_reduce_perf.
#[test]
fn nccl_tests_short_flags_are_aliases() {
    let rail = example("rail-128gpu.toml");
    let long = ["--min-bytes", "1M", "--max-bytes", "4M", "--step-factor", "4", "--nodes", "2"];
    let short = ["-b", "1M", "-e", "4M", "-f", "4", "-g", "16"];
    let out = |flags: &[&str]| {
        let o = rocelab()
            .args(["simulate", &rail, "--collective", "all_reduce", "--no-files", "-q"])
            .args(flags)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8(o.stdout).unwrap()
    };
    let (a, b) = (out(&long), out(&short));
    assert_eq!(a, b);
    assert!(a.contains("16 ranks (2 GPU nodes × 8 GPUs"), "{a}");
    let rows: Vec<&str> = a.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 2, "1M and 4M: {a}");
}

/// Each verb's manual page carries its documentation, not a path into a source tree.
#[test]
fn man_pages_carry_each_verbs_docs() {
    let d = tmpdir("man");
    let o = run(&["man", "--out-dir", "man"], &d);
    assert!(o.status.success(), "{o:?}");
    let page = std::fs::read_to_string(d.join("man/rocelab-validate.1")).unwrap();
    // A sentence of docs/validate.md's check table, in the page.
    assert!(page.contains("incast.completion"), "rocelab-validate.1 lacks its docs");
    let plan = std::fs::read_to_string(d.join("man/rocelab-plan.1")).unwrap();
    assert!(!plan.contains("docs/plan.md"), "rocelab-plan.1 points into the source tree");
}

/// `.ci/run` runs exactly the README's test command, and fails when a test was skipped.
#[test]
fn ci_runs_the_readmes_test_command_and_refuses_skips() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let command = readme
        .lines()
        .find(|l| l.starts_with("cargo nextest run") && l.contains("# run the tests"))
        .and_then(|l| l.split('#').next())
        .map(str::trim)
        .expect("the README names its test command");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let runs: Vec<&str> = ci.lines().filter(|l| l.trim_start().starts_with("cargo nextest")).collect();
    assert_eq!(runs, [command], ".ci/run must run the README's test command, only it");
    assert!(ci.contains("export ROCELAB_SKIP_LOG=") && ci.contains("if [ -s \"$ROCELAB_SKIP_LOG\" ]"), "{ci}");
    let nextest = std::fs::read_to_string(root.join(".config/nextest.toml")).unwrap();
    for t in ["binary(browser)", "binary(promtool)", "a_real_slurm_job_array_gives_the_local_table"] {
        assert!(nextest.contains(t), "{t}'s SKIP line is not shown by .config/nextest.toml");
    }
}

/// `validate --only NAME` takes a `[[scenario]]`'s name (docs/validate.md), alone or with a check.
#[test]
fn validate_only_takes_a_scenarios_name() {
    let d = tmpdir("only");
    let mut fabric = std::fs::read_to_string(example("leaf-spine-small.toml")).unwrap();
    fabric.push_str("\n[[scenario]]\nkind = \"incast\"\nname = \"incast-4\"\nfan_in = 4\n");
    std::fs::write(d.join("f.toml"), fabric).unwrap();
    for only in ["incast-4", "incast-4.completion"] {
        let o = run(&["validate", "f.toml", "--only", only, "-q", "--format", "json"], &d);
        assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "--only {only}: {o:?}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let text = v.to_string();
        assert!(text.contains("incast-4.completion"), "--only {only}: {text}");
        assert!(!text.contains("\"incast.completion\""), "--only {only} ran the default incast too: {text}");
    }
    let o = run(&["validate", "f.toml", "--only", "incast-5"], &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `incast-4`?"), "{o:?}");
}
