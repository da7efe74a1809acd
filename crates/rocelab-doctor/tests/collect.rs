//! Collection from a fake sysfs tree (and fake tools), written as a dump, read back.

use rocelab_doctor::collect::{collect_raw, discover, pack_tar_gz, write_snapshot, CollectOptions};
use rocelab_doctor::dump::load_dump;
use rocelab_doctor::tools::Tools;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn put(root: &Path, rel: &str, v: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rocelab-collect-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn collect_writes_a_dump_the_doctor_reads() {
    let root = tmp("tree");
    put(&root, "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "12");
    put(&root, "class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", "3");
    put(&root, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens3np0");
    put(&root, "class/net/ens3np0/mtu", "9000");
    put(&root, "class/net/ens3np0/qos/trust", "dscp");
    put(&root, "class/net/ens3np0/ecn/roce_np/enable/3", "1");
    put(&root, "class/net/ens3np0/ecn/roce_rp/rpg_ai_rate", "5");
    let bin = tmp("bin");
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parsers");
    let ethtool = script(
        &bin,
        "ethtool",
        &format!(
            "if [ \"$1\" = -i ]; then cat '{}'; else printf 'NIC statistics:\\n     rx_prio3_pause: 5\\n'; fi",
            fixtures.join("ethtool-i.txt").display()
        ),
    );
    let mlnx_qos = script(&bin, "mlnx_qos", &format!("cat '{}'", fixtures.join("mlnx_qos.txt").display()));
    // A hung tool is killed at the timeout and noted.
    let rdma = script(&bin, "rdma", "exec sleep 10");
    let ports = discover(&root);
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].netdev.as_deref(), Some("ens3np0"));
    let opts = CollectOptions {
        sysfs_root: root.clone(),
        host: Some("gpu01".into()),
        tools: Tools { ethtool: Some(ethtool), mlnx_qos: Some(mlnx_qos), rdma: Some(rdma), ..Tools::default() },
        tool_timeout: Duration::from_millis(300),
        proc_root: std::path::PathBuf::from("/proc"),
        nccl_logs: Vec::new(),
        gpu_path: true,
    };
    let raw = collect_raw(&opts, &ports);
    assert!(raw.meta.notes.iter().any(|n| n.contains("rdma statistic show timed out")), "{:?}", raw.meta.notes);
    let out = tmp("out");
    let path = write_snapshot(&out, &raw).unwrap();
    assert!(path.file_name().unwrap().to_string_lossy().starts_with("gpu01-20"));
    let snaps = load_dump(&out, 3).unwrap().snapshots;
    assert_eq!(snaps.len(), 1);
    let s = &snaps[0];
    assert_eq!(s.host, "gpu01");
    assert_eq!(s.rdma_ports["mlx5_0/1"].counters["np_cnp_sent"], 12);
    let nd = &s.netdevs["ens3np0"];
    assert_eq!(nd.ethtool.as_ref().unwrap().get("rx_prio3_pause"), Some(5));
    assert_eq!(nd.driver.as_ref().unwrap().firmware(), "28.39.1002");
    assert_eq!(nd.mlnx_qos.as_ref().unwrap().dscp_to_priority[&26], 3);
    assert_eq!(nd.sysfs.rp_params["rpg_ai_rate"], 5);
    assert_eq!(nd.sysfs.mtu, Some(9000));
    // The same dump packed as .tar.gz reads the same.
    let tgz = out.with_extension("tar.gz");
    pack_tar_gz(&out, &tgz).unwrap();
    let again = load_dump(&tgz, 3).unwrap().snapshots;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].rdma_ports, s.rdma_ports);
    assert_eq!(again[0].netdevs, s.netdevs);
    for d in [&root, &bin, &out] {
        std::fs::remove_dir_all(d).unwrap();
    }
    std::fs::remove_file(&tgz).unwrap();
}

#[test]
fn a_host_without_rdma_devices_discovers_nothing() {
    let root = tmp("empty");
    put(&root, "class/net/eth0/mtu", "1500");
    assert!(discover(&root).is_empty());
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn malformed_dump_files_are_located_errors() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/healthy/gpu01-1796204467000");
    let dst = tmp("bad");
    let status = std::process::Command::new("cp").arg("-r").arg(&src).arg(dst.join("snap")).status().unwrap();
    assert!(status.success());
    let f = dst.join("snap/netdev/ens3np0/ethtool-S.txt");
    let text =
        std::fs::read_to_string(&f).unwrap().replace("     rx_prio3_pause: 41927", "     rx_prio3_pause: 41x927");
    std::fs::write(&f, text).unwrap();
    let e = load_dump(&dst, 3).unwrap_err().to_string();
    assert!(e.contains("ethtool-S.txt:") && e.contains("rx_prio3_pause"), "{e}");
    std::fs::write(dst.join("snap/meta.json"), "{\"host\": \"x\",\n \"taken_at_unix_ms\": \"soon\"}").unwrap();
    let e = load_dump(&dst, 3).unwrap_err().to_string();
    assert!(e.contains("meta.json:2"), "{e}");
    std::fs::remove_dir_all(&dst).unwrap();
}

#[test]
fn no_tools_says_not_run_not_not_installed() {
    // Issue 16: with --no-tools the notes said "ethtool not installed" on hosts that have it.
    let root = tmp("notools");
    put(&root, "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "12");
    put(&root, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens3np0");
    let bin = tmp("notools-bin");
    let ethtool = script(&bin, "ethtool", "printf 'NIC statistics:\\n     rx_prio3_pause: 5\\n'");
    let ports = discover(&root);
    let opts = CollectOptions {
        sysfs_root: root.clone(),
        host: Some("gpu01".into()),
        tools: Tools { ethtool: Some(ethtool), ..Tools::none() },
        tool_timeout: Duration::from_secs(5),
        proc_root: std::path::PathBuf::from("/proc"),
        nccl_logs: Vec::new(),
        gpu_path: true,
    };
    let raw = collect_raw(&opts, &ports);
    assert!(raw.netdevs["ens3np0"].ethtool_s.is_none(), "a disabled tool must not run");
    for tool in ["ethtool", "mlnx_qos", "rdma"] {
        let want = format!("{tool} not run (--no-tools)");
        assert!(raw.meta.notes.iter().any(|n| n.starts_with(&want)), "{want}: {:?}", raw.meta.notes);
    }
    assert!(!raw.meta.notes.iter().any(|n| n.contains("not installed")), "{:?}", raw.meta.notes);
    // Tools simply absent are "not installed".
    let opts = CollectOptions { tools: Tools::default(), ..opts };
    let raw = collect_raw(&opts, &ports);
    assert!(raw.meta.notes.iter().any(|n| n.starts_with("ethtool not installed")), "{:?}", raw.meta.notes);
    for d in [&root, &bin] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn tarballs_are_read_without_the_system_tar_and_cannot_escape() {
    // A tarball holding a snapshot and an entry that climbs out of the unpack directory.
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/healthy");
    let dir = tmp("tgz");
    let tgz = dir.join("dump.tar.gz");
    {
        let f = std::fs::File::create(&tgz).unwrap();
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(f, flate2::Compression::fast()));
        b.append_dir_all("dump", &src).unwrap();
        let mut h = tar::Header::new_gnu();
        let body = b"not yours\n";
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        // `set_path` refuses `..`; write the name bytes directly, as a hostile archive would.
        h.as_gnu_mut().unwrap().name[..17].copy_from_slice(b"../../escaped.txt");
        h.set_cksum();
        b.append(&h, &body[..]).unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    let dump = load_dump(&tgz, 3).unwrap();
    assert_eq!(dump.snapshots.len(), 2);
    assert!(dump.snapshots[0].origin.starts_with(&tgz.display().to_string()), "{}", dump.snapshots[0].origin);
    let t = std::env::temp_dir();
    for d in [t.clone(), t.parent().map(Path::to_path_buf).unwrap_or_default()] {
        assert!(!d.join("escaped.txt").exists(), "escaped into {}", d.display());
    }
    // Not a gzip file: a located error, not a panic.
    std::fs::write(dir.join("bad.tar.gz"), b"plain text").unwrap();
    let e = load_dump(&dir.join("bad.tar.gz"), 3).unwrap_err().to_string();
    assert!(e.contains("cannot unpack"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
