//! What a new user hits in the first hour, through the binary: every `init` template simulates
//! as written, invalid settings are refused with a location and exit 2, and an output that
//! cannot be written is bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rocelab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).current_dir(dir).output().expect("run rocelab")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-cli-newcomer-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn templates(dir: &Path) -> Vec<String> {
    let o = rocelab(dir, &["init", "--list"]);
    assert_eq!(o.status.code(), Some(0));
    text(&o.stdout).lines().map(|l| l.split_whitespace().next().unwrap().to_string()).collect()
}

#[test]
fn every_init_template_simulates_as_written() {
    let dir = temp_dir("init");
    let names = templates(&dir);
    assert!(names.len() >= 3, "{names:?}");
    for t in &names {
        let file = format!("{t}.toml");
        let o = rocelab(&dir, &["init", "--template", t, &file]);
        assert_eq!(o.status.code(), Some(0), "init {t}: {}", text(&o.stderr));
        let body = std::fs::read_to_string(dir.join(&file)).unwrap();
        assert!(body.contains("\n[[traffic]]\n") && body.contains("\n[simulation]\n"), "{t} has no traffic");
        // The traffic section explains itself.
        assert!(body.contains("# Traffic for `rocelab simulate`"), "{t}");
        let o = rocelab(&dir, &["simulate", &file, "--quiet", "--no-files"]);
        assert_eq!(o.status.code(), Some(0), "simulate {t}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        let flows = out.lines().find(|l| l.trim_start().starts_with("flows:")).unwrap_or_default();
        let (done, of) = flows.trim_start().trim_start_matches("flows: ").split_once(" of ").unwrap();
        let of = of.split_whitespace().next().unwrap();
        assert!(done == of && done != "0", "{t}: {flows}");
        assert!(out.contains(", 0 dropped"), "{t}: {out}");
        // And lint still passes on what init wrote.
        let o = rocelab(&dir, &["lint", &file]);
        assert_eq!(o.status.code(), Some(0), "lint {t}: {}", text(&o.stdout));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn invalid_settings_are_refused_with_a_location() {
    let dir = temp_dir("invalid");
    let o = rocelab(&dir, &["init", "--template", "leaf-spine", "f.toml"]);
    assert_eq!(o.status.code(), Some(0));
    let base = std::fs::read_to_string(dir.join("f.toml")).unwrap();
    let cases = [
        (base.replacen("[nic]\n", "[nic]\nmtu = 9000\n", 1), "`nic.mtu`: RoCE MTU 9000 is outside 256..=4096"),
        (base.replacen("seed = 1 ", "duration_us = -1\nseed = 1 ", 1), "`simulation.duration_us`"),
    ];
    for (i, (body, want)) in cases.iter().enumerate() {
        assert_ne!(body, &base, "case {i} did not change the file");
        let f = format!("bad{i}.toml");
        std::fs::write(dir.join(&f), body).unwrap();
        let line =
            body.lines().position(|l| l.starts_with("mtu = 9000") || l.starts_with("duration_us = -1")).unwrap() + 1;
        for verb in ["simulate", "lint", "topo"] {
            let o = rocelab(&dir, &[verb, &f]);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{verb} {f}: {err}");
            assert!(err.contains(&format!("{f}:{line}:")) && err.contains(want), "{verb} {f}: {err}");
            assert!(err.contains("= help:"), "{err}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn collect_to_an_unwritable_place_is_bad_input() {
    let dir = temp_dir("collect");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    for out in ["/proc/forbidden/x".to_string(), file.join("x").display().to_string()] {
        // Whether or not this host has RDMA devices, the output is checked first.
        let o = rocelab(&dir, &["collect", "--out", &out, "--no-tools", "--sysfs-root", dir.to_str().unwrap()]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{out}: {err}");
        assert!(err.contains(&format!("error: cannot write {out}")), "{err}");
    }
    // A directory that does not exist yet but can be made is fine: what stops this run is
    // the host without RDMA devices (exit 1), not the output.
    let ok = dir.join("new/dump");
    let o =
        rocelab(&dir, &["collect", "--out", ok.to_str().unwrap(), "--no-tools", "--sysfs-root", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no RDMA devices under"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/first-fabric.md, step by step: the figures and edits it shows hold.
#[test]
fn the_first_fabric_page_holds() {
    let dir = temp_dir("first");
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/first-fabric.md")).unwrap();
    assert_eq!(rocelab(&dir, &["init", "fabric.toml"]).status.code(), Some(0));
    let o = rocelab(&dir, &["topo", "fabric.toml"]);
    let topo = text(&o.stdout);
    for l in
        ["128 hosts (NICs) in 16 GPU nodes, 16 switches, 256 links", "2 hops, 1 ECMP path", "4 hops, 32 ECMP paths"]
    {
        assert!(topo.contains(l) && page.contains(l), "{l}");
    }
    let first = topo.lines().next().unwrap();
    assert!(page.contains(first), "{first}");
    let o = rocelab(&dir, &["lint", "fabric.toml"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("0 errors, 0 warnings in 1 file"));

    let fresh = std::fs::read_to_string(dir.join("fabric.toml")).unwrap();
    let comment = fresh.lines().find(|l| l.starts_with("# headroom_bytes")).expect("the comment the page edits");
    std::fs::write(dir.join("fabric.toml"), fresh.replace(comment, "headroom_bytes = 50000")).unwrap();
    let o = rocelab(&dir, &["lint", "fabric.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let hdr = text(&o.stdout).lines().find(|l| l.contains("HDR001")).unwrap().to_string();
    assert!(page.contains(&hdr[..hdr.find("needs XOFF").unwrap()]), "{hdr}");
    assert!(page.contains("set headroom_bytes to at least 232448 (xoff + xon)"));

    std::fs::write(dir.join("fabric.toml"), &fresh).unwrap();
    let o = rocelab(&dir, &["simulate", "fabric.toml"]);
    assert_eq!(o.status.code(), Some(0));
    for l in text(&o.stdout).lines().take(7) {
        assert!(page.contains(l), "the page lacks the line {l:?}");
    }
    for f in ["summary.json", "flows.csv", "metrics.prom"] {
        assert!(dir.join("rocelab-out").join(f).is_file(), "{f}");
    }

    let pushed = fresh
        .replace("senders = 8 ", "senders = 15 ")
        .replace("size_bytes = 1000000 ", "size_bytes = 10000000 ")
        .replace("congestion_control = \"dcqcn\"", "congestion_control = \"none\"");
    assert_ne!(pushed, fresh);
    std::fs::write(dir.join("fabric.toml"), &pushed).unwrap();
    let o = rocelab(&dir, &["simulate", "fabric.toml", "--no-files"]);
    let out = text(&o.stdout);
    let pauses: u64 = out.split("PFC: ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!((16_000..17_500).contains(&pauses), "{out}");
    assert!(out.contains("flows: 15 of 15 completed") && out.contains(", 0 dropped"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A leaf-spine of `leaves` × 100 hosts. In a debug build, 1,200 leaves take `topo` more than a
/// second (routing grows with leaves²) and 300 leaves take `lint` more than a second.
fn big(leaves: u32) -> String {
    format!(
        "[topology.leaf_spine]\nleaves = {leaves}\nspines = 16\nhosts_per_leaf = 100\n\
         host_link = {{ speed_gbps = 100 }}\nfabric_link = {{ speed_gbps = 400 }}\n\
         [switch_models.spectrum-3]\npreset = \"tomahawk3\"\nports = {}\n",
        leaves + 100
    )
}

/// Long runs show a progress spinner on a terminal (run under `script`, which gives the
/// command a pseudo-terminal), and nothing at all when standard error is a pipe.
#[test]
fn long_topo_and_lint_runs_show_progress_on_a_terminal_only() {
    let dir = temp_dir("progress");
    std::fs::write(dir.join("topo.toml"), big(1200)).unwrap();
    std::fs::write(dir.join("lint.toml"), big(300)).unwrap();
    let o = rocelab(&dir, &["topo", "topo.toml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty(), "progress on a pipe: {}", text(&o.stderr));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout stays clean JSON");
    let script = Path::new("/usr/bin/script");
    if !script.exists() {
        eprintln!("note: no /usr/bin/script here; the terminal half of this test did not run");
        return;
    }
    // A simulation that runs for more than a second in a debug build.
    std::fs::write(
        dir.join("simulate.toml"),
        "[topology.leaf_spine]\nleaves = 16\nspines = 4\nhosts_per_leaf = 16\nhost_link = { speed_gbps = 100 }\n\
         fabric_link = { speed_gbps = 400 }\n[simulation]\nseed = 1\n[[traffic]]\npattern = \"permutation\"\n\
         size_bytes = 6000000\n",
    )
    .unwrap();
    // On a terminal, not under CI (which may emulate one: its logs would fill with redraws).
    let on_terminal = |cmd: &str, ci: bool| {
        let mut c = Command::new(script);
        c.args(["-qec", cmd, "/dev/null"]).current_dir(&dir).env_remove("CI");
        if ci {
            c.env("CI", "true");
        }
        text(&c.output().unwrap().stdout)
    };
    let cmd = format!("{} simulate simulate.toml --no-files > out.txt", env!("CARGO_BIN_EXE_rocelab"));
    let shown = on_terminal(&cmd, false);
    assert!(shown.contains("% ETA") && shown.contains("simulated "), "simulate: {shown}");
    let out = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    assert!(out.starts_with("simulated ") && !out.contains("ETA"), "{out}");
    let shown = on_terminal(&cmd, true);
    assert!(!shown.contains("% ETA"), "progress under CI: {shown}");
    let quiet = format!("{} simulate simulate.toml --no-files -q > out.txt", env!("CARGO_BIN_EXE_rocelab"));
    assert!(!on_terminal(&quiet, false).contains("% ETA"), "progress under -q");
    // The bench: the run under way, from its first second.
    let cmd = format!("{} bench chain-10k --warmup 0 --runs 40 > out.txt", env!("CARGO_BIN_EXE_rocelab"));
    let shown = on_terminal(&cmd, false);
    assert!(shown.contains("chain-10k: run "), "bench: {shown}");
    let out = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    assert!(out.lines().nth(1).is_some_and(|l| l.starts_with("chain-10k ")) && !out.contains(": run "), "{out}");
    for verb in ["topo", "lint"] {
        let cmd = format!("{} {verb} {verb}.toml > out.txt", env!("CARGO_BIN_EXE_rocelab"));
        let o =
            Command::new(script).args(["-qec", &cmd, "/dev/null"]).current_dir(&dir).env_remove("CI").output().unwrap();
        let shown = text(&o.stdout);
        assert!(shown.contains(&format!("{verb} {verb}.toml: ")), "{verb}: {shown}");
        let out = std::fs::read_to_string(dir.join("out.txt")).unwrap();
        assert!(!out.contains(&format!("{verb} {verb}.toml: ")), "{verb}: progress leaked into stdout");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
