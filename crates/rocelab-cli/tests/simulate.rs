//! `rocelab simulate` and `rocelab bench` through the binary: outputs, exit codes, errors.

use std::path::PathBuf;
use std::process::Command;

fn rocelab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rocelab"))
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-sim-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn simulate_the_incast_example_writes_every_output() {
    let out = tmpdir("incast");
    let o = rocelab()
        .args(["simulate", example("incast-16to1.toml").to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("16 of 16 completed"), "{text}");
    for f in ["summary.json", "flows.csv", "metrics.prom", "timeseries.csv"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["seed"], 1);
    assert_eq!(summary["engine"], "packet");
    assert!(summary.get("partitions").is_none(), "one engine's summary names no cut");
    assert_eq!(summary["totals"]["packets_dropped"], 0);
    assert_eq!(summary["flows"].as_array().unwrap().len(), 16);
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    assert_eq!(flows.lines().count(), 17, "header + 16 flows");
    let prom = std::fs::read_to_string(out.join("metrics.prom")).unwrap();
    assert!(prom.contains("# TYPE rocelab_cnp_sent_total counter"));
    assert!(prom.lines().any(|l| l.starts_with("rocelab_tx_bytes_total{") && l.contains("node=\"leaf0\"")));
}

#[test]
fn simulate_is_byte_identical_for_the_same_seed() {
    let (a, b) = (tmpdir("det-a"), tmpdir("det-b"));
    for d in [&a, &b] {
        let st = rocelab()
            .args(["simulate", example("incast-16to1.toml").to_str().unwrap(), "-q", "--seed", "5", "--out"])
            .arg(d)
            .status()
            .unwrap();
        assert!(st.success());
    }
    for f in ["summary.json", "flows.csv", "metrics.prom", "timeseries.csv"] {
        assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{f} differs");
    }
}

/// The files the command writes are the report built in-process from a snapshot of the
/// same run, byte for byte (the CLI adds nothing of its own).
#[test]
fn simulate_writes_the_report_of_the_runs_snapshot() {
    for (name, args) in
        [("incast-16to1.toml", &[][..]), ("leaf-spine-small.toml", &["--seed", "3", "--sample-us", "2"][..])]
    {
        let out = tmpdir(&format!("snap-{name}"));
        let st = rocelab()
            .args(["simulate", example(name).to_str().unwrap(), "-q"])
            .args(args)
            .arg("--out")
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success(), "{name}");
        let m = rocelab_model::load_file(&example(name)).unwrap_or_else(|e| panic!("{e}"));
        let mut opts = rocelab_sim::options_from_model(&m);
        if !args.is_empty() {
            opts.seed = 3;
            opts.sample_interval = Some(rocelab_model::SimTime::from_secs_f64(2e-6));
        }
        let mut sim = rocelab_sim::build(&m, opts).unwrap_or_else(|d| panic!("{d:?}"));
        sim.run(&mut |_| {});
        let snap = sim.snapshot();
        let rep = rocelab_sim::RunReport::from_snapshot(&snap, &m);
        let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
        assert_eq!(rep.to_json(), without_envelope(&read("summary.json")), "{name}: summary.json");
        assert_eq!(rep.flows_csv(), read("flows.csv"), "{name}: flows.csv");
        assert_eq!(rep.prometheus(), read("metrics.prom"), "{name}: metrics.prom");
        assert!(!snap.series.is_empty(), "{name} is sampled");
        assert_eq!(rocelab_sim::report::series_csv(&snap, &m), read("timeseries.csv"), "{name}: timeseries.csv");
    }
}

#[test]
fn simulate_json_goes_to_stdout_and_nothing_else() {
    let o = rocelab()
        .args(["simulate", example("incast-16to1.toml").to_str().unwrap(), "-q", "--no-files", "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(v["flows_completed"], 16);
}

#[test]
fn unknown_traffic_host_is_a_located_error_with_exit_2() {
    let dir = tmpdir("bad");
    let f = dir.join("bad.toml");
    let text =
        std::fs::read_to_string(example("incast-16to1.toml")).unwrap().replace("dst = \"host0\"", "dst = \"hots0\"");
    std::fs::write(&f, &text).unwrap();
    let line = text.lines().position(|l| l.contains("hots0")).unwrap() + 1;
    let o = rocelab().args(["simulate", f.to_str().unwrap(), "-q", "--no-files"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains(&format!("bad.toml:{line}:")), "{err}");
    assert!(err.contains("no host named `hots0`") && err.contains("did you mean `host0`"), "{err}");
}

/// A flow beyond what the engine's packet numbers can carry is refused at its line, not
/// silently cut short.
#[test]
fn a_flow_too_large_for_the_engine_is_a_located_error() {
    let dir = tmpdir("huge");
    let f = dir.join("huge.toml");
    let text = std::fs::read_to_string(example("incast-16to1.toml"))
        .unwrap()
        .replace("size_bytes = 1000000", "size_bytes = 9000000000000000000");
    std::fs::write(&f, &text).unwrap();
    let line = text.lines().position(|l| l.contains("9000000000000000000")).unwrap() + 1;
    let o = rocelab().args(["simulate", f.to_str().unwrap(), "-q", "--no-files"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains(&format!("huge.toml:{line}:")) && err.contains("1 TB"), "{err}");
}

#[test]
fn a_fabric_without_traffic_says_how_to_add_some() {
    // The shipped example with its traffic section cut off.
    let text = std::fs::read_to_string(example("rail-128gpu.toml")).unwrap();
    let cut = text.find("# Traffic for `rocelab simulate`").expect("the example's traffic section");
    let f = std::env::temp_dir().join(format!("rocelab-cli-sim-{}-no-traffic.toml", std::process::id()));
    std::fs::write(&f, &text[..cut]).unwrap();
    let o = rocelab().args(["simulate", f.to_str().unwrap(), "-q", "--no-files"]).output().unwrap();
    let _ = std::fs::remove_file(&f);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[[traffic]]"));
}

#[test]
fn bad_flags_are_refused() {
    let o = rocelab()
        .args(["simulate", example("incast-16to1.toml").to_str().unwrap(), "--duration-us", "-5", "--no-files"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = rocelab().args(["bench", "nope"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("permutation-16"));
}

#[test]
fn collectives_run_under_nccl_tests_names() {
    let file = example("leaf-spine-small.toml");
    let f = file.to_str().unwrap();
    let base = ["simulate", f, "--min-bytes", "64K", "--max-bytes", "256K", "--step-factor", "4", "--no-files", "-q"];
    for (name, perf) in [("alltoall", "alltoall"), ("all_to_all", "alltoall"), ("sendrecv", "sendrecv")] {
        let o = rocelab().args(base).args(["--collective", name]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8(o.stdout).unwrap();
        assert!(out.starts_with(&format!("# Collective test starting: {perf}_perf")), "{out}");
        let rows: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert!(rows.iter().all(|r| r.split_whitespace().nth(3) == Some("none")), "{out}");
    }
    let o =
        rocelab().args(base).args(["--collective", "broadcast", "--root", "1", "--format", "json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "rocelab.simulate.collective/v1");
    let v = &v["results"];
    assert_eq!(v[0]["op"], "broadcast");
    assert_eq!(v[0]["root"], 1);
    assert_eq!(v.as_array().unwrap().len(), 2);
    // A root outside the ranks, a zero chunk and an unknown name are bad input.
    for extra in [["--root", "999"], ["--chunk-bytes", "0"]] {
        let o = rocelab().args(base).args(["--collective", "broadcast"]).args(extra).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
    }
    let o = rocelab().args(base).args(["--collective", "alltoal"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("alltoall"));
}

#[test]
fn on_a_rail_fabric_collectives_place_a_rank_per_gpu() {
    let file = example("rail-128gpu.toml");
    let f = file.to_str().unwrap();
    // The ring (NCCL's own pick differs between 16 nodes of 8 GPUs and 128 one-NIC ranks).
    let base = [
        "simulate",
        f,
        "--collective",
        "all_reduce",
        "--min-bytes",
        "1M",
        "--algo",
        "ring",
        "--proto",
        "simple",
        "--no-files",
        "-q",
    ];
    let o = rocelab().args(base).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("128 ranks (16 GPU nodes × 8 GPUs, nvlink4 at 450 GB/s inside a node"), "{out}");
    // Every host NIC a rank, as before GPU placement: 8× the data packets (every hop of the
    // ring crosses the fabric, not only the 16 node-to-node hops of each channel's 128).
    let packets = |extra: &[&str]| {
        let o = rocelab().args(base).args(extra).args(["--format", "json"]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["results"][0]["data_packets"].as_u64().unwrap()
    };
    // (Same channel count: GPU placement defaults to one channel per NIC, 8, host NICs to 2.)
    assert_eq!(packets(&["--placement", "nics", "--channels", "8"]), 8 * packets(&[]));
    let o = rocelab().args(base).args(["--placement", "nics"]).output().unwrap();
    assert!(String::from_utf8(o.stdout).unwrap().contains("128 ranks (one per host NIC)"));
}

#[test]
fn a_bad_gpu_node_value_is_named_with_its_line() {
    let text = std::fs::read_to_string(example("rail-128gpu.toml"))
        .unwrap()
        .replace("intra_node = \"nvlink4\"", "intra_node = \"nvlink4\"\nintra_node_gbytes_per_s = -1");
    let f = std::env::temp_dir().join(format!("rocelab-cli-sim-{}-bad-gpu.toml", std::process::id()));
    std::fs::write(&f, &text).unwrap();
    let o = rocelab()
        .args(["simulate", f.to_str().unwrap(), "--collective", "all_reduce", "--min-bytes", "1M", "--no-files", "-q"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&f);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let line = text.lines().position(|l| l.starts_with("intra_node_gbytes_per_s")).unwrap() + 1;
    assert!(err.contains(&format!("bad-gpu.toml:{line}:")), "{err}");
    assert!(err.contains("gpu_node.intra_node_gbytes_per_s"), "{err}");
}

#[test]
fn a_training_step_from_a_plan_file_runs_on_the_twin_beside_plan() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fabric = root.join("examples/rail-128gpu.toml");
    let plan = root.join("examples/plan/step-200m-32gpu.toml");
    let out = std::env::temp_dir().join(format!("rocelab-step-{}", std::process::id()));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["simulate", fabric.to_str().unwrap(), "--step", plan.to_str().unwrap(), "--format", "json", "-q", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &v["twin"];
    let p = &t["plan"];
    assert_eq!((p["tp"].as_u64(), p["pp"].as_u64(), p["dp"].as_u64()), (Some(8), Some(2), Some(2)));
    assert_eq!(t["gpus"], 32);
    assert_eq!(t["nodes"], 4);
    // Compute only = (m + p − 1)(F + B) + optimizer, from the plan's own figures.
    let f = |k: &str| p[k].as_f64().unwrap();
    let m = f("micro_batches");
    let expect = (m + 1.0) * (f("forward_us") + f("backward_us")) + f("optimizer_us");
    let compute_only = t["compute_only_us"].as_f64().unwrap();
    assert!((compute_only - expect).abs() < 1e-3 * expect, "{compute_only} vs {expect}");
    let step = t["step_us"].as_f64().unwrap();
    assert!(step > compute_only, "{step} ≤ {compute_only}");
    let ratio = t["comm_wait_ratio"].as_f64().unwrap();
    assert!((ratio - (step - compute_only) / step).abs() < 1e-9);
    // The twin and plan share the compute and sizes; only the network's time differs, and
    // here it is a few percent of the step either way.
    let plan_step = v["plan"]["step_us"].as_f64().unwrap();
    assert!((step - plan_step).abs() < 0.1 * plan_step, "twin {step} µs, plan {plan_step} µs");
    assert!(std::fs::read_to_string(out.join("step.txt")).unwrap().contains("rocelab_comm_wait_ratio"));
    assert!(out.join("step.json").exists());
    let _ = std::fs::remove_dir_all(&out);

    // A plan the twin cannot run yet is refused naming the file and what to change.
    let bad = std::env::temp_dir().join(format!("rocelab-step-zero1-{}.toml", std::process::id()));
    std::fs::write(&bad, std::fs::read_to_string(&plan).unwrap().replace("zero = 0", "zero = 2")).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["simulate", fabric.to_str().unwrap(), "--step", bad.to_str().unwrap(), "--no-files", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(bad.to_str().unwrap()) && err.contains("give zero = 0 or 1"), "{err}");
    let _ = std::fs::remove_file(&bad);
}

#[test]
fn a_fabric_file_runs_the_workloads_it_names() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fabric = root.join("examples/rail-16gpu-workloads.toml");
    let out = std::env::temp_dir().join(format!("rocelab-workloads-{}", std::process::id()));
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
            .args(["simulate", fabric.to_str().unwrap(), "-q", "--format", "json", "-o"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    assert!(o.status.success(), "{o:?}");
    // One JSON document per workload, in file order.
    let docs: Vec<serde_json::Value> =
        serde_json::Deserializer::from_slice(&o.stdout).into_iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(docs.len(), 4);
    let ring = docs[0]["results"].as_array().unwrap();
    let tree = docs[1]["results"].as_array().unwrap();
    assert_eq!(ring.len(), 5, "1M, 4M, 16M, 64M, 256M");
    assert!(ring.iter().all(|r| r["algo"] == "ring") && tree.iter().all(|r| r["algo"] == "tree"));
    assert_eq!(docs[2]["results"][0]["op"], "alltoall");
    assert!(docs[3]["twin"]["step_us"].as_f64().unwrap() > docs[3]["twin"]["compute_only_us"].as_f64().unwrap());
    for (dir, file) in [("all-reduce", "collective.txt"), ("all-reduce-tree", "collective.json"), ("step", "step.json")]
    {
        assert!(out.join(dir).join(file).exists(), "{dir}/{file}");
    }
    // One of them by name; an unknown name lists the ones there are.
    let one = run(&["--workload", "alltoall"]);
    assert!(one.status.success(), "{one:?}");
    assert_eq!(serde_json::Deserializer::from_slice(&one.stdout).into_iter::<serde_json::Value>().count(), 1);
    let bad = run(&["--workload", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("all-reduce, all-reduce-tree, alltoall, step"), "{err}");
    let _ = std::fs::remove_dir_all(&out);

    // A value the flags would refuse is refused with its line in the file.
    let text = std::fs::read_to_string(&fabric).unwrap().replace("algo = \"tree\"", "algo = \"nvls\"");
    let broken = std::env::temp_dir().join(format!("rocelab-workloads-bad-{}.toml", std::process::id()));
    std::fs::write(&broken, &text).unwrap();
    let line = text.lines().position(|l| l.contains("nvls")).unwrap() + 1;
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["simulate", broken.to_str().unwrap(), "-q", "--no-files"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!(":{line}:")) && err.contains("ring or tree"), "{err}");
    let _ = std::fs::remove_file(&broken);
}

#[test]
fn the_flow_engine_runs_traffic_and_collectives_and_says_so() {
    let out = tmpdir("flow");
    let f = example("leaf-spine-small.toml");
    let o = rocelab()
        .args(["simulate", f.to_str().unwrap(), "--engine", "flow", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("32 of 32 completed") && text.contains("on the flow-level engine"), "{text}");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["engine"], "flow");
    assert_eq!(summary["flows"].as_array().unwrap().len(), 32);
    // Collectives: the table header and the JSON name the engine; the packet engine's JSON
    // keeps its bytes (no `engine` key).
    let base = ["simulate", f.to_str().unwrap(), "--collective", "all_reduce", "--min-bytes", "1M", "--no-files", "-q"];
    let o = rocelab().args(base).args(["--engine", "flow"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8(o.stdout).unwrap().contains("flow-level engine"));
    let json = |engine: &str| {
        let o = rocelab().args(base).args(["--engine", engine, "--format", "json"]).output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    assert_eq!(json("flow")["results"][0]["engine"], "flow");
    assert!(json("packet")["results"][0].get("engine").is_none());
    // Sampling queues has no meaning there: refused.
    let o = rocelab()
        .args(["simulate", f.to_str().unwrap(), "--engine", "flow", "--sample-us", "5", "--no-files"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // Nor the stress scenarios, judged by queues: refused, not run on the packet engine.
    let o = rocelab()
        .args(["simulate", f.to_str().unwrap(), "--engine", "flow", "--scenario", "incast", "--no-files"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("does not model") && err.contains("--engine packet"), "{err}");
    assert!(o.stdout.is_empty(), "no scenario table: {}", String::from_utf8_lossy(&o.stdout));
}

/// A JSON file as the library wrote it, before the CLI put the envelope (`schema`, `version`,
/// its first two keys) on it.
fn without_envelope(json: &str) -> String {
    assert!(json.starts_with("{\n  \"schema\": \"rocelab."), "no envelope: {json}");
    json.lines().enumerate().filter(|(i, _)| !(1..=2).contains(i)).map(|(_, l)| format!("{l}\n")).collect()
}

#[test]
fn a_partitioned_run_writes_the_same_files_for_every_thread_count() {
    // The rail-optimized example cut into rail groups: its incast crosses the spines, which
    // are dealt over the partitions.
    let mut files: Vec<Vec<Vec<u8>>> = Vec::new();
    for threads in ["1", "2", "4"] {
        let out = tmpdir(&format!("parts-{threads}"));
        let o = rocelab()
            .args(["simulate", example("rail-128gpu.toml").to_str().unwrap(), "--partitions", "4", "--threads"])
            .arg(threads)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(err.contains("partitioned: 4 partitions by rail group"), "{err}");
        files.push(
            ["summary.json", "flows.csv", "metrics.prom"].iter().map(|f| std::fs::read(out.join(f)).unwrap()).collect(),
        );
    }
    assert!(files[0] == files[1] && files[0] == files[2], "the outputs differ between thread counts");
    let summary: serde_json::Value = serde_json::from_slice(&files[0][0]).unwrap();
    assert_eq!(summary["totals"]["packets_dropped"], 0);
    assert_eq!(summary["flows_completed"], 8);
    // The summary says how it was cut (what its figures depend on); one engine's says nothing.
    assert_eq!(summary["partitions"]["count"], 4);
    assert_eq!(summary["partitions"]["cut_along"], "rail group");
    // (The leaf–spine cables are 50 m: 250 ns.)
    assert_eq!(summary["partitions"]["lookahead_seconds"], 2.5e-7);
}

#[test]
fn what_a_partitioned_run_cannot_take_is_refused_with_the_reason() {
    // A training step answers some deliveries at once; a stress scenario runs its own engine;
    // UET's receivers grant credit outside packets; --threads means nothing without a cut.
    for (args, want) in [
        (
            vec!["simulate", "rail-128gpu.toml", "--partitions", "2", "--step", "plan/step-200m-32gpu.toml"],
            "at the instant",
        ),
        (vec!["simulate", "rail-128gpu.toml", "--partitions", "2", "--scenario", "incast"], "cannot be used with"),
        (vec!["simulate", "uet-permutation.toml", "--partitions", "2"], "Ultra Ethernet"),
        (vec!["simulate", "rail-128gpu.toml", "--threads", "2"], "--partitions"),
        (
            vec!["simulate", "rail-128gpu.toml", "--partitions", "2", "--partition-by", "spine"],
            "auto, pod, rail or leaf",
        ),
    ] {
        let mut c = rocelab();
        for a in &args {
            c.arg(if a.ends_with(".toml") { example(a).to_str().unwrap().to_string() } else { a.to_string() });
        }
        let o = c.args(["--no-files", "-q"]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_partitioned_collective_is_the_same_for_every_thread_count_and_as_fast_as_one_engine_says() {
    // A ring all-reduce over the 16 hosts of a k = 4 fat tree cut into its 4 pods: the ring
    // crosses the cores; NCCL's 3 µs proxy overhead lets deliveries wait for the barrier.
    let dir = tmpdir("coll");
    let fabric = dir.join("ft4.toml");
    std::fs::write(
        &fabric,
        "[fabric]\nname = \"ft4\"\n[topology.fat_tree]\nk = 4\nlink = { speed_gbps = 100, delay_ns = 1000 }\n\
         switch_model = \"sw\"\n[switch_models.sw]\npreset = \"ns3-reference\"\nports = 4\n",
    )
    .unwrap();
    let time = |json: &[u8]| -> Vec<f64> {
        let v: serde_json::Value = serde_json::from_slice(json).unwrap();
        v["results"].as_array().unwrap().iter().map(|r| r["time_us"].as_f64().unwrap()).collect()
    };
    let run = |extra: &[&str], tag: &str| -> Vec<u8> {
        let out = dir.join(tag);
        let o = rocelab()
            .arg("simulate")
            .arg(&fabric)
            .args(["--collective", "all_reduce", "--min-bytes", "1M", "--max-bytes", "16M", "-q", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(out.join("collective.json")).unwrap()
    };
    let one = time(&run(&[], "one"));
    let p1 = run(&["--partitions", "4", "--threads", "1"], "t1");
    for t in ["2", "4"] {
        assert!(run(&["--partitions", "4", "--threads", t], t) == p1, "collective.json differs at {t} threads");
    }
    let p = time(&p1);
    assert_eq!(p.len(), 5, "1, 2, 4, 8 and 16 MiB");
    for (a, b) in p.iter().zip(&one) {
        assert!((a / b - 1.0).abs() < 0.05, "partitioned {a} µs against {b} µs");
    }
}

#[test]
fn fast_forward_runs_a_training_step_says_what_it_skipped_and_refuses_what_it_cannot_hold() {
    // The 32-GPU step's DP rings and pipeline sends: the step within 0.1 % of every packet's.
    let step = |extra: &[&str]| {
        let o = rocelab()
            .args(["simulate", example("rail-128gpu.toml").to_str().unwrap(), "--step"])
            .arg(example("plan/step-200m-32gpu.toml"))
            .args(["--no-files", "-q"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let time = |text: &str| -> f64 {
        let l = text.lines().find(|l| l.trim_start().starts_with("step time")).expect("a step time");
        l.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    let (full, fast) = (step(&[]), step(&["--fast-forward"]));
    assert!(!full.contains("fast-forward:"), "{full}");
    let line = fast.lines().find(|l| l.contains("fast-forward:")).expect("the skip line");
    assert!(line.contains("steady stretches skipped") && line.contains("% of all"), "{line}");
    let (a, b) = (time(&full), time(&fast));
    assert!((b / a - 1.0).abs() < 1e-3, "{a} ms in full, {b} ms fast-forwarded");
    // The JSON says so too, and what it skipped; without it, nothing.
    let json = |extra: &[&str]| -> serde_json::Value {
        serde_json::from_str(&step(&[&["--format", "json"], extra].concat())).unwrap()
    };
    let ff = &json(&["--fast-forward"])["twin"]["fast_forward"];
    assert!(ff["skipped_data_packets"].as_u64().unwrap() > 0, "{ff}");
    assert_eq!(ff["period_seconds"], 2e-6);
    assert!(json(&[])["twin"].get("fast_forward").is_none());
    for (args, want) in [
        (vec!["--fast-forward", "--engine", "flow"], "flow engine"),
        (vec!["--fast-forward", "--partitions", "2"], "cannot be used with"),
        (vec!["--fast-forward-period-us", "2"], "--fast-forward"),
        (vec!["--fast-forward", "--fast-forward-period-us", "0"], "positive"),
        (vec!["--fast-forward", "--jobs"], "tenants"),
    ] {
        let fabric = if args.contains(&"--jobs") { "jobs-train-beside-checkpoint.toml" } else { "rail-128gpu.toml" };
        let o = rocelab()
            .args(["simulate", example(fabric).to_str().unwrap(), "--no-files", "-q"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A collective's table carries it as a comment line (NCCL's 512 KiB slices skip little).
    let o = rocelab()
        .args(["simulate", example("rail-128gpu.toml").to_str().unwrap(), "--collective", "all_reduce"])
        .args(["--min-bytes", "1M", "--max-bytes", "1M", "--fast-forward", "--no-files", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("\n#  fast-forward: "), "{o:?}");
    // UET sprays its packets over every path: no group it crosses could be held.
    let o = rocelab()
        .args(["simulate", example("uet-permutation.toml").to_str().unwrap(), "--fast-forward", "--no-files", "-q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("fast-forward cannot run here") && err.contains("Ultra Ethernet"), "{err}");
}
