//! `rocelab collect`, `doctor` and `exporter` through the binary: exit statuses, outputs,
//! and a collect -> doctor round trip on a fake sysfs tree.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).output().expect("run rocelab")
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rocelab-doctor/tests/fixtures")
}

fn dump(name: &str) -> String {
    fixtures().join("dumps").join(name).display().to_string()
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rocelab-cli-doctor-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn put(root: &Path, rel: &str, v: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const FABRIC: &str = r#"
[fabric]
name = "doctor-test"

[topology.leaf_spine]
leaves = 2
spines = 2
hosts_per_leaf = 2
host_link = { speed_gbps = 400, length_m = 3 }
fabric_link = { speed_gbps = 400, length_m = 30 }

[nic]
mtu = 4096
firmware = "28.39.1002"

[nic.dcqcn]
rate_ai_mbps = 5
cnp_interval_us = 4
"#;

#[test]
fn collect_on_a_host_without_rdma_devices_says_so_and_fails() {
    let root = tmp("nordma");
    let out = rocelab(&["collect", "--sysfs-root", root.to_str().unwrap(), "--out", root.join("d").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no RDMA devices under") && err.contains("examples/doctor-dump/"), "{err}");
    assert!(!root.join("d").exists());
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn collect_then_doctor_on_a_fake_tree() {
    let root = tmp("tree");
    let sys = root.join("sys");
    put(&sys, "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "10");
    put(&sys, "class/infiniband/mlx5_0/ports/1/hw_counters/np_ecn_marked_roce_packets", "11");
    put(&sys, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens3np0");
    put(&sys, "class/net/ens3np0/mtu", "9000");
    put(&sys, "class/net/ens3np0/speed", "400000");
    let out_dir = root.join("dump");
    let o = rocelab(&[
        "collect",
        "--sysfs-root",
        sys.to_str().unwrap(),
        "--node",
        "gpu01",
        "--no-tools",
        "--count",
        "2",
        "--interval",
        "50ms",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(stdout(&o).contains("wrote 2 snapshot(s)"), "{}", stdout(&o));
    let snaps: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("meta.json").is_file())
        .collect();
    assert_eq!(snaps.len(), 2);
    // --no-tools: the tools were not run, which is not the same as not installed.
    let meta = std::fs::read_to_string(snaps[0].join("meta.json")).unwrap();
    assert!(meta.contains("ethtool not run (--no-tools)") && !meta.contains("not installed"), "{meta}");
    let o = rocelab(&["doctor", out_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = stdout(&o);
    assert!(text.contains("2 snapshot(s) from 1 node(s) (gpu01)"), "{text}");
    assert!(text.contains("no findings"), "{text}");
    // The same as a .tar.gz.
    let tgz = root.join("dump.tar.gz");
    let o = rocelab(&[
        "collect",
        "--sysfs-root",
        sys.to_str().unwrap(),
        "--node",
        "gpu01",
        "--no-tools",
        "--count",
        "1",
        "--out",
        tgz.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let o = rocelab(&["doctor", "--json", tgz.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hosts"][0], "gpu01");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_error_finding_exits_1() {
    let o = rocelab(&["doctor", &dump("pfc-storm")]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stdout(&o).contains("error[pfc-storm] gpu01 ens3np0 priority 3 rx"), "{}", stdout(&o));
    // Warnings alone exit 0.
    let o = rocelab(&["doctor", &dump("pause-ratio")]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(stdout(&o).contains("warning[pause-ratio]"));
}

#[test]
fn json_report_to_a_file() {
    let d = tmp("json");
    let out = d.join("report.json");
    let o = rocelab(&["doctor", "--json", "-o", out.to_str().unwrap(), &dump("ecn-without-cnp")]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(o.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["findings"][0]["code"], "ecn-without-cnp");
    assert_eq!(v["findings"][0]["severity"], "error");
    assert!(v["windows"][0]["rates"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["series"] == "rocelab_ecn_marked_packets_total{node=\"gpu01\",port=\"ens3np0\"}"));
    assert!(!d.join("report.json.tmp").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_input_exits_2() {
    let o = rocelab(&["doctor", "/nonexistent/dump"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let d = tmp("bad");
    put(&d, "snap/meta.json", "{\"host\": \"x\", \"taken_at_unix_ms\": 1}");
    put(&d, "snap/netdev/eth0/ethtool-S.txt", "NIC statistics:\n     rx_prio3_pause: lots");
    let o = rocelab(&["doctor", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ethtool-S.txt:2:"), "{err}");
    let o = rocelab(&["doctor", "--pause-ratio", "3", &dump("healthy")]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn drift_against_a_fabric_file() {
    let d = tmp("fabric");
    let fabric = d.join("fabric.toml");
    std::fs::write(&fabric, FABRIC).unwrap();
    let o = rocelab(&["doctor", "--fabric", fabric.to_str().unwrap(), &dump("drift")]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let text = stdout(&o);
    for code in [
        "drift-trust",
        "drift-dscp-map",
        "drift-pfc",
        "drift-ecn-np",
        "drift-cnp",
        "drift-mtu",
        "drift-firmware",
        "drift-dcqcn",
    ] {
        assert!(text.contains(&format!("[{code}] host0 ens3np0")), "{code} missing:\n{text}");
    }
    let o = rocelab(&["doctor", "--fabric", fabric.to_str().unwrap(), &dump("drift-ok")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("no findings"), "{}", stdout(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn is_it_the_network() {
    let o = rocelab(&["doctor", "--line-rate-gbps", "3200", &dump("busbw-low")]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let text = stdout(&o);
    assert!(text.contains("error[busbw-low]"), "{text}");
    assert!(text.contains("is it the network?"), "{text}");
    // A loose nccl-tests log next to clean dumps.
    let log = fixtures().join("parsers/nccl-all_reduce.txt");
    let o = rocelab(&["doctor", "--line-rate-gbps", "3200", "--nccl", log.to_str().unwrap(), &dump("healthy")]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(stdout(&o).contains("info[busbw-ok]"), "{}", stdout(&o));
}

#[test]
fn exporter_serves_metrics_on_loopback() {
    let root = tmp("exporter");
    put(&root, "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "42");
    put(&root, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens3np0");
    // Port 0 is refused by nothing; ask the OS for a free port first.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args([
            "exporter",
            "--listen",
            &listen,
            "--sysfs-root",
            root.to_str().unwrap(),
            "--node",
            "gpu09",
            "--no-tools",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut body = String::new();
    for _ in 0..100 {
        if let Ok(mut s) = std::net::TcpStream::connect(&listen) {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
            s.read_to_string(&mut body).unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(body.contains("rocelab_cnp_sent_total{node=\"gpu09\",port=\"ens3np0\"} 42\n"), "{body}");
    assert!(body.contains("# rocelab: ethtool not run (--no-tools)"), "{body}");
    assert!(!body.contains("not installed"), "{body}");
    // The exporter does not gather the GPUDirect path (no metric comes from it).
    assert!(!body.contains("nvidia-smi") && !body.contains("modules"), "{body}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn collect_gathers_the_gpudirect_path_and_doctor_reads_it() {
    let root = tmp("gdr");
    let sys = root.join("sys");
    put(&sys, "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "10");
    put(&sys, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens3np0");
    let proc_root = root.join("proc");
    std::fs::create_dir_all(&proc_root).unwrap();
    std::fs::copy(fixtures().join("parsers/proc-modules.txt"), proc_root.join("modules")).unwrap();
    let log = fixtures().join("parsers/nccl-info-gdr.txt");
    let out_dir = root.join("dump");
    let o = rocelab(&[
        "collect",
        "--sysfs-root",
        sys.to_str().unwrap(),
        "--proc-root",
        proc_root.to_str().unwrap(),
        "--nccl-log",
        log.to_str().unwrap(),
        "--node",
        "gpu02",
        "--no-tools",
        "--count",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let snap = std::fs::read_dir(&out_dir).unwrap().next().unwrap().unwrap().path();
    assert!(snap.join("gpu/modules.txt").is_file() && snap.join("nccl-log/nccl-info-gdr.txt").is_file());
    let meta = std::fs::read_to_string(snap.join("meta.json")).unwrap();
    assert!(meta.contains("nvidia-smi not run (--no-tools)"), "{meta}");
    let o = rocelab(&["doctor", out_dir.to_str().unwrap()]);
    let text = stdout(&o);
    // gpu02's channels in the log carry no GDRDMA; the module is loaded: the hint says so.
    assert!(text.contains("info[gpudirect] gpu02 GPU↔NIC: GPUDirect RDMA through nvidia-peermem"), "{text}");
    assert!(text.contains("warning[gdr-not-used] gpu02"), "{text}");
    assert!(text.contains("a mechanism is loaded but NCCL does not use it"), "{text}");
    // A loose log given to doctor: NCCL over sockets is an error.
    let sock = fixtures().join("parsers/nccl-info-socket.txt");
    let o = rocelab(&["doctor", "--nccl-log", sock.to_str().unwrap(), &dump("healthy")]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stdout(&o).contains("error[nccl-socket-fallback] gpu03"), "{}", stdout(&o));
    std::fs::remove_dir_all(&root).unwrap();
}

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name).display().to_string()
}

fn twin_rows(o: &Output) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    v["twin"][0]["rows"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_real_nccl_tests_run_beside_its_twin_on_the_fabric_file() {
    // nccl-all_reduce.txt: 16 H100s on 2 nodes of 8×400G NICs, 367 GB/s at 1 GiB; the twin
    // runs the same all-reduce on the first 2 GPU nodes of rail-128gpu (8×400G per node).
    let fabric = example("rail-128gpu.toml");
    let healthy = fixtures().join("parsers/nccl-all_reduce.txt").display().to_string();
    let args = ["doctor", "--fabric", &fabric, "--json", "--nccl", &healthy, &dump("healthy")];
    let o = rocelab(&args);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    assert_eq!(v["twin"][0]["real_ranks"], 16);
    assert_eq!(v["twin"][0]["twin_ranks"], 16);
    let rows = twin_rows(&o);
    let sizes: Vec<u64> = rows.iter().map(|r| r["size_bytes"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]);
    // The twin itself is bound by 8 NICs' payload goodput: 8 × 50 GB/s × 4096/(4096+82).
    let goodput = 8.0 * 50.0 * 4096.0 / 4178.0;
    let top = &rows[5];
    let twin_busbw = top["twin_busbw_gbytes_per_s"].as_f64().unwrap();
    assert!(twin_busbw <= goodput && twin_busbw >= 0.95 * goodput, "{twin_busbw} vs {goodput}");
    assert_eq!(top["verdict"], "matches");
    // The doctor's twin charges NCCL's own costs by default, so sizes from 1 MiB are judged
    // in the wide band; the fixture's rows there are the published healthy H200 run's.
    assert!(rows[..4].iter().all(|r| r["verdict"] == "matches"), "{rows:?}");
    let ratio = |r: &serde_json::Value| r["ratio"].as_f64().unwrap();
    assert!(rows[..4].iter().all(|r| (0.7..=1.0 / 0.7).contains(&ratio(r))), "{rows:?}");
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["code"] == "twin-match"), "{findings:?}");
    assert_eq!(v["twin"][0]["real_only_sizes"], serde_json::json!([4u64 << 30]));

    // The slow run of the same job: 44% of the twin at 1 GiB, an error.
    let slow = fixtures().join("parsers/nccl-all_reduce-slow.txt").display().to_string();
    let o = rocelab(&["doctor", "--fabric", &fabric, "--nccl", &slow, &dump("healthy")]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let text = stdout(&o);
    assert!(text.contains("error[twin-shortfall]"), "{text}");
    // Caught from 1 MiB, where the slow run reaches 31 % of the twin (the wide band's 70 %).
    assert!(text.contains("production falls short of the twin from 1,048,576 B up"), "{text}");
    assert!(text.contains("all_reduce beside its twin (16 real ranks, 16 twin ranks"), "{text}");

    // A fabric file that sets `[nccl]` itself keeps its choice: without NCCL's costs the
    // twin's medium sizes are too fast to judge, so only sizes from 256 MiB are.
    let fabrics = tmp("twin-fabrics");
    let proxy = fabrics.join("rail-128gpu-proxy.toml");
    let text = std::fs::read_to_string(&fabric).unwrap();
    std::fs::write(&proxy, format!("{text}\n[nccl]\nnet_hop_latency = \"proxy\"\n")).unwrap();
    let o = rocelab(&["doctor", "--fabric", proxy.to_str().unwrap(), "--json", "--nccl", &healthy, &dump("healthy")]);
    let proxy_rows = twin_rows(&o);
    assert!(proxy_rows[..4].iter().all(|r| r["verdict"] == "not judged"), "{proxy_rows:?}");
    assert_eq!(proxy_rows[5]["verdict"], "matches", "{proxy_rows:?}");

    // A table saved by `rocelab simulate --collective` on the same twin gives the same
    // comparison (the fabric file charging NCCL's costs, as the doctor's twin does).
    let tuning = fabrics.join("rail-128gpu-tuning.toml");
    std::fs::write(&tuning, format!("{text}\n[nccl]\nnet_hop_latency = \"tuning\"\n")).unwrap();
    let tuning = tuning.display().to_string();
    let dir = tmp("twin-table");
    let d = dir.display().to_string();
    let sim = rocelab(&[
        "simulate",
        &tuning,
        "--collective",
        "all_reduce",
        "--min-bytes",
        "256M",
        "--max-bytes",
        "1G",
        "--step-factor",
        "4",
        "--nodes",
        "2",
        "-q",
        "-o",
        &d,
    ]);
    assert!(sim.status.success(), "{sim:?}");
    let table = dir.join("collective.txt").display().to_string();
    let saved = rocelab(&["doctor", "--twin", &table, "--json", "--nccl", &healthy, &dump("healthy")]);
    let saved_rows = twin_rows(&saved);
    assert_eq!(saved_rows.len(), 2, "{saved_rows:?}");
    for r in &saved_rows {
        let ran = rows.iter().find(|x| x["size_bytes"] == r["size_bytes"]).unwrap();
        assert_eq!(r["twin_busbw_gbytes_per_s"], ran["twin_busbw_gbytes_per_s"]);
    }
    let v: serde_json::Value = serde_json::from_slice(&saved.stdout).unwrap();
    assert_eq!(v["twin"][0]["twin_ranks"], 16);

    // --no-twin: no comparison.
    let o = rocelab(&["doctor", "--fabric", &fabric, "--no-twin", "--json", "--nccl", &healthy, &dump("healthy")]);
    assert!(twin_rows(&o).is_empty(), "{}", stdout(&o));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&fabrics);
}
