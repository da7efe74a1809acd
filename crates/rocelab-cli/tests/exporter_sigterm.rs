//! `rocelab exporter` ended with SIGTERM while a tool hangs: the tool must not be left
//! running as an orphan (loopback, port 0, a fake sysfs tree and a fake `ethtool`).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn put(root: &Path, rel: &str, v: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

/// Running (not a zombie) per /proc/<pid>/stat.
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
        .unwrap_or(false)
}

#[test]
fn sigterm_kills_a_hung_tool() {
    let root = std::env::temp_dir().join(format!("rocelab-exporter-sigterm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    put(&root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "1");
    put(&root, "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "ens3np0");
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pidfile = root.join("ethtool.pid");
    // `ethtool -S` records its pid and hangs (exec: the hung process is the tool itself).
    std::fs::write(
        bin.join("ethtool"),
        format!("#!/bin/sh\nif [ \"$1\" = -S ]; then echo $$ > '{}'; exec sleep 60; fi\nexit 95\n", pidfile.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("ethtool"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["exporter", "--listen", "127.0.0.1:0", "--tool-timeout", "60s", "--scrape-timeout", "60s"])
        .arg("--sysfs-root")
        .arg(root.join("sys"))
        .env("PATH", path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let pid = loop {
        if let Ok(p) = std::fs::read_to_string(&pidfile) {
            if !p.trim().is_empty() {
                break p.trim().to_string();
            }
        }
        assert!(t.elapsed() < Duration::from_secs(20), "the fake ethtool never ran");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(running(&pid));
    // SAFETY: a plain kill(2) of the child this test started.
    let rc = unsafe { libc_kill(child.id() as i32, 15) };
    assert_eq!(rc, 0);
    let status = child.wait().unwrap();
    assert!(!status.success());
    let gone = (0..150).any(|_| {
        let r = running(&pid);
        if r {
            std::thread::sleep(Duration::from_millis(20));
        }
        !r
    });
    let _ = std::fs::remove_dir_all(&root);
    assert!(gone, "ethtool (pid {pid}) outlived the exporter");
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
