//! The foundation verbs through the real binary: `rocelab topo` on the shipped examples (text,
//! JSON, DOT), `rocelab init`, and bad input (exit status 2, a located message with a hint,
//! never a panic).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rocelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocelab")).args(args).current_dir(repo()).output().expect("run rocelab")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `rocelab topo FILE [--format F]` and expects success.
fn topo(file: &str, format: &str) -> String {
    let o = rocelab(&["topo", file, "--format", format]);
    assert!(o.status.success(), "rocelab topo {file} --format {format} failed:\n{}", stderr(&o));
    stdout(&o)
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rocelab-cli-foundation-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------------
// rocelab topo: text

#[test]
fn topo_text_leaf_spine_small() {
    let out = topo("examples/leaf-spine-small.toml", "text");
    for want in [
        "fabric `leaf-spine-small` (leaf-spine)",
        "32 hosts (NICs), 6 switches, 48 links",
        "link speeds: 48 × 100 Gb/s",
        "bisection bandwidth: 0.8 Tb/s (50 % of full bisection)",
        "diameter: 4 hops",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let leaf = out.lines().find(|l| l.trim_start().starts_with("leaf ")).expect("leaf row");
    assert_eq!(leaf.split_whitespace().collect::<Vec<_>>(), ["leaf", "4", "48", "3200", "1600", "2:1"]);
    let spine = out.lines().find(|l| l.trim_start().starts_with("spine ")).expect("spine row");
    assert_eq!(spine.split_whitespace().collect::<Vec<_>>(), ["spine", "2", "16", "1600", "0", "-"]);
    assert!(out.contains("e.g. host1") && out.lines().any(|l| l.ends_with("2 hops, 1 ECMP path")), "{out}");
    assert!(out.contains("e.g. host8") && out.contains("4 hops, 8 ECMP paths"), "{out}");
}

#[test]
fn topo_text_rail_128gpu() {
    let out = topo("examples/rail-128gpu.toml", "text");
    for want in [
        "128 hosts (NICs) in 16 GPU nodes, 16 switches, 256 links",
        "bisection bandwidth: 25.6 Tb/s (100 % of full bisection)",
        "diameter: 4 hops",
        "rail 0       16 NICs  leaves: su0-rail0",
        "rail 7       16 NICs  leaves: su0-rail7",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let leaf = out.lines().find(|l| l.trim_start().starts_with("leaf ")).unwrap();
    assert_eq!(leaf.split_whitespace().collect::<Vec<_>>(), ["leaf", "8", "256", "51200", "51200", "1:1"]);
    let paths: Vec<&str> = out.lines().filter(|l| l.contains("ECMP path")).collect();
    assert!(paths.iter().any(|l| l.contains("same leaf") && l.ends_with("2 hops, 1 ECMP path")), "{out}");
    assert!(paths.iter().any(|l| l.contains("different rails") && l.contains("4 hops, 32 ECMP paths")), "{out}");
}

#[test]
fn topo_text_rail_1024gpu() {
    let out = topo("examples/rail-1024gpu.toml", "text");
    for want in [
        "1024 hosts (NICs) in 128 GPU nodes, 64 switches, 2048 links",
        "bisection bandwidth: 204.8 Tb/s (100 % of full bisection)",
        "diameter: 4 hops",
        "rail 3      128 NICs  leaves: su0-rail3, su1-rail3, su2-rail3, su3-rail3",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let paths: Vec<&str> = out.lines().filter(|l| l.contains("ECMP path")).collect();
    assert!(paths.iter().any(|l| l.contains("same rail, other leaf") && l.contains("4 hops, 32 ECMP paths")));
    assert!(paths.iter().any(|l| l.contains("different rails") && l.contains("4 hops, 32 ECMP paths")));
}

// ---------------------------------------------------------------------------------------------
// rocelab topo: JSON

fn json(file: &str) -> serde_json::Value {
    serde_json::from_str(&topo(file, "json")).expect("topo --format json is JSON")
}

fn tier<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["tiers"].as_array().unwrap().iter().find(|t| t["tier"] == name).unwrap()
}

#[test]
fn topo_json_figures() {
    // (file, hosts, switches, links, leaf oversubscription, bisection Gb/s, ECMP widths)
    type Case = (&'static str, u64, u64, u64, f64, f64, &'static [u64]);
    let cases: [Case; 3] = [
        ("examples/leaf-spine-small.toml", 32, 6, 48, 2.0, 800.0, &[1, 8]),
        ("examples/rail-128gpu.toml", 128, 16, 256, 1.0, 25_600.0, &[1, 32]),
        ("examples/rail-1024gpu.toml", 1024, 64, 2048, 1.0, 204_800.0, &[1, 32, 32]),
    ];
    for (file, hosts, switches, links, os, bis, widths) in cases {
        let j = json(file);
        assert_eq!(j["hosts"], hosts, "{file}");
        assert_eq!(j["switches"], switches, "{file}");
        assert_eq!(j["links"], links, "{file}");
        assert_eq!(tier(&j, "leaf")["oversubscription"].as_f64(), Some(os), "{file}");
        assert!(tier(&j, "spine")["oversubscription"].is_null(), "{file}");
        assert_eq!(j["bisection_gbps"].as_f64(), Some(bis), "{file}");
        assert_eq!(j["diameter_hops"], 4, "{file}");
        let got: Vec<u64> = j["paths"].as_array().unwrap().iter().map(|p| p["ecmp_paths"].as_u64().unwrap()).collect();
        assert_eq!(got, widths, "{file}");
        assert_eq!(j["fabric_hash"].as_str().unwrap().len(), 16);
    }
    let j = json("examples/rail-1024gpu.toml");
    assert_eq!(j["gpu_nodes"], 128);
    assert_eq!(j["rails"].as_array().unwrap().len(), 8);
    assert_eq!(j["rails"][5]["nics"], 128);
    assert_eq!(j["links_by_speed"], serde_json::json!([[400.0, 2048]]));
}

// ---------------------------------------------------------------------------------------------
// rocelab topo: DOT

/// Checks the DOT text structurally; returns (declared nodes, edge lines).
fn parse_dot(dot: &str) -> (Vec<String>, Vec<(String, String, String)>) {
    assert!(dot.starts_with("graph \""), "not an undirected graph:\n{dot}");
    assert!(dot.trim_end().ends_with('}'));
    let mut depth = 0i64;
    for c in dot.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0, "unbalanced braces");
    }
    assert_eq!(depth, 0, "unbalanced braces");
    let quoted = |s: &str| -> Vec<String> { s.split('"').skip(1).step_by(2).map(str::to_string).collect() };
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for line in dot.lines().skip(1) {
        let l = line.trim();
        if l.starts_with("{ rank=same;") {
            assert!(l.ends_with('}'), "{l}");
            nodes.extend(quoted(l));
        } else if l.contains(" -- ") {
            let q = quoted(l);
            assert_eq!(q.len(), 3, "edge line: {l}");
            assert!(l.ends_with("];"), "{l}");
            edges.push((q[0].clone(), q[1].clone(), q[2].clone()));
        }
    }
    (nodes, edges)
}

#[test]
fn topo_dot_is_structurally_valid() {
    // (file, nodes, adjacent node pairs): leaf-spine 32 host + 4 x 2 leaf-spine pairs;
    // rail-128 128 + 8 x 8; rail-1024 1024 + 32 x 32.
    for (file, n, pairs) in [
        ("examples/leaf-spine-small.toml", 38, 40),
        ("examples/rail-128gpu.toml", 144, 192),
        ("examples/rail-1024gpu.toml", 1088, 2048),
    ] {
        let dot = topo(file, "dot");
        let (nodes, edges) = parse_dot(&dot);
        assert_eq!(nodes.len(), n, "{file}");
        let set: std::collections::BTreeSet<&String> = nodes.iter().collect();
        assert_eq!(set.len(), n, "{file}: a node is declared twice");
        assert_eq!(edges.len(), pairs, "{file}: one edge line per adjacent pair");
        let mut seen = std::collections::BTreeSet::new();
        for (a, b, _) in &edges {
            assert!(set.contains(a) && set.contains(b), "{file}: edge {a} -- {b} to an undeclared node");
            let key = if a < b { (a, b) } else { (b, a) };
            assert!(seen.insert(key), "{file}: two edge lines for {a} -- {b}");
        }
    }
    // Parallel links are merged and labelled with their count.
    let (_, edges) = parse_dot(&topo("examples/leaf-spine-small.toml", "dot"));
    let leaf_spine: Vec<_> =
        edges.iter().filter(|(a, b, _)| a.starts_with("spine") || b.starts_with("spine")).collect();
    assert_eq!(leaf_spine.len(), 8);
    assert!(leaf_spine.iter().all(|(_, _, label)| label == "2×100G"), "{leaf_spine:?}");
    let (_, edges) = parse_dot(&topo("examples/rail-128gpu.toml", "dot"));
    let pair = |a: &str, b: &str| edges.iter().find(|(x, y, _)| (x == a && y == b) || (x == b && y == a));
    assert_eq!(pair("su0-rail0", "pod0-spine0").map(|e| e.2.as_str()), Some("2×400G"));
    assert_eq!(pair("su0-rail0", "node0-nic0").map(|e| e.2.as_str()), Some("400G"));
    assert_eq!(pair("su0-rail0", "node0-nic1"), None);
}

#[test]
fn every_example_summarizes_in_every_format() {
    for p in examples() {
        let f = p.to_str().unwrap();
        let text = topo(f, "text");
        assert!(text.starts_with("fabric `"), "{f}");
        let _: serde_json::Value = serde_json::from_str(&topo(f, "json")).unwrap();
        parse_dot(&topo(f, "dot"));
    }
}

// ---------------------------------------------------------------------------------------------
// rocelab init

#[test]
fn init_writes_templates_that_topo_loads() {
    let d = temp_dir("init");
    for t in ["rail-optimized", "leaf-spine", "rail-1024"] {
        let p = d.join(format!("{t}.toml"));
        let o = rocelab(&["init", "--template", t, p.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains("next: rocelab topo"));
        topo(p.to_str().unwrap(), "text");
        // Refuses to overwrite without --force.
        let o = rocelab(&["init", "--template", t, p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("already exists") && stderr(&o).contains("--force"));
        let o = rocelab(&["init", "--force", "--template", t, p.to_str().unwrap()]);
        assert!(o.status.success());
    }
    let o = rocelab(&["init", "--template", "torus", d.join("x.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown template `torus`") && stderr(&o).contains("leaf-spine"));
    let o = rocelab(&["init", "--list"]);
    assert!(o.status.success() && stdout(&o).contains("rail-1024"));
}

// ---------------------------------------------------------------------------------------------
// Bad input: exit 2, file:line:column, what and how to fix, no panic

const BASE: &str = "\
[topology.leaf_spine]
leaves = 2
spines = 1
hosts_per_leaf = 2
host_link = { speed_gbps = 100 }
fabric_link = { speed_gbps = 100 }
";

const EXPLICIT: &str = r#"[[topology.explicit.node]]
name = "leaf1"
kind = "switch"

[[topology.explicit.node]]
name = "h1"
kind = "host"

[[topology.explicit.link]]
a = "h1"
b = "lef1"
speed_gbps = 100
"#;

/// Writes `bytes` to NAME.toml, runs `rocelab topo` on it and checks the failure.
fn bad(dir: &Path, name: &str, bytes: &[u8], line_col: Option<&str>, parts: &[&str]) {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(&p, bytes).unwrap();
    let f = p.to_str().unwrap();
    let o = rocelab(&["topo", f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{name}: exit status {:?}\n{err}", o.status);
    assert!(o.stdout.is_empty(), "{name}: printed a summary for bad input");
    assert!(!err.contains("panicked"), "{name} panicked:\n{err}");
    if let Some(lc) = line_col {
        assert!(err.starts_with(&format!("{f}:{lc}: error: ")), "{name}: expected {f}:{lc}, got:\n{err}");
    }
    assert!(err.contains("\n  = help: "), "{name}: no hint:\n{err}");
    for part in parts {
        assert!(err.contains(part), "{name}: expected {part:?} in:\n{err}");
    }
}

#[test]
fn bad_input_exits_2_with_a_located_message() {
    let d = temp_dir("bad");
    let with = |from: &str, to: &str| BASE.replace(from, to).into_bytes();
    bad(
        &d,
        "unknown-key",
        format!("{BASE}leafs = 3\n").as_bytes(),
        Some("7:1"),
        &["unknown field `leafs`", "remove the key"],
    );
    bad(
        &d,
        "wrong-type",
        &with("leaves = 2", "leaves = \"two\""),
        Some("2:10"),
        &["`topology.leaf_spine.leaves`", "invalid type"],
    );
    bad(&d, "missing", &with("spines = 1\n", ""), Some("1:1"), &["missing field `spines`", "add `spines = ...`"]);
    bad(
        &d,
        "negative-speed",
        &with("host_link = { speed_gbps = 100 }", "host_link = { speed_gbps = -100 }"),
        Some("5:28"),
        &["link speed must be a positive number of Gb/s, got -100", "speed_gbps = 400"],
    );
    let kmin = format!(
        "{BASE}[[qos.class]]\nname = \"roce\"\ndscp = [26]\npriority = 3\n\
         ecn = {{ kmin_bytes = 2000000, kmax_bytes = 1500000, pmax = 0.1 }}\n\
         [[qos.class]]\nname = \"cnp\"\ndscp = [48]\npriority = 6\n"
    );
    bad(&d, "kmin-above-kmax", kmin.as_bytes(), Some("11:22"), &["ECN Kmin (2000000 B) is above Kmax (1500000 B)"]);
    bad(
        &d,
        "dangling-link",
        EXPLICIT.as_bytes(),
        Some("11:5"),
        &["link end `lef1` is not a declared node", "did you mean `leaf1`?"],
    );
    let rail = "[topology.rail_optimized]\ngpu_nodes = 10\nrails = 8\nnodes_per_su = 4\n\
                host_link = { speed_gbps = 400 }\nleaf_link = { speed_gbps = 400 }\n";
    bad(
        &d,
        "su-does-not-divide",
        rail.as_bytes(),
        Some("4:16"),
        &["10 GPU nodes do not divide into scalable units of 4"],
    );
    let dup = EXPLICIT.replace("name = \"h1\"", "name = \"leaf1\"");
    bad(&d, "duplicate-node", dup.as_bytes(), Some("6:8"), &["node `leaf1` is declared twice"]);
    let dscp = format!("{BASE}[[qos.class]]\nname = \"roce\"\ndscp = [26, 64]\npriority = 3\n");
    bad(&d, "dscp-64", dscp.as_bytes(), Some("9:13"), &["DSCP 64 is outside 0..=63"]);
    let preset = format!("{BASE}[switch_models.big]\npreset = \"trident9\"\n");
    bad(&d, "unknown-preset", preset.as_bytes(), Some("8:10"), &["unknown switch preset `trident9`", "use one of:"]);
    let part = "[[topology.explicit.node]]\nname = \"s1\"\nkind = \"switch\"\n[[topology.explicit.node]]\n\
                name = \"s2\"\nkind = \"switch\"\n[[topology.explicit.node]]\nname = \"h1\"\nkind = \"host\"\n\
                [[topology.explicit.node]]\nname = \"h2\"\nkind = \"host\"\n[[topology.explicit.link]]\n\
                a = \"h1\"\nb = \"s1\"\nspeed_gbps = 100\n[[topology.explicit.link]]\na = \"h2\"\nb = \"s2\"\n\
                speed_gbps = 100\n";
    bad(&d, "partitioned", part.as_bytes(), Some("1:3"), &["the fabric is partitioned", "add links"]);
    bad(&d, "not-toml", b"<fabric leaves=\"4\"/>\n", Some("1:1"), &["TOML syntax error"]);
    bad(
        &d,
        "non-utf8",
        b"[fabric]\nname = \"caf\xe9\"\n",
        Some("2:12"),
        &["not UTF-8 text", "save the fabric file as UTF-8"],
    );
}

#[test]
fn a_file_that_does_not_exist_exits_2() {
    let o = rocelab(&["topo", "no/such/fabric.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("cannot read no/such/fabric.toml") && err.contains("help: check the path"), "{err}");
    assert!(o.stdout.is_empty() && !err.contains("panicked"));
}

#[test]
fn a_bad_flag_exits_2() {
    let o = rocelab(&["topo", "examples/leaf-spine-small.toml", "--format", "xml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value 'xml'"));
}

/// `rocelab topo ... | head -c 1`: the reader goes away after the first byte; rocelab must end
/// quietly (killed by SIGPIPE, as Unix tools are), not panic in `println!`. The DOT graph of
/// the 1,024-GPU example is ~110 KB, more than a pipe buffer holds.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["topo", "examples/rail-1024gpu.toml", "--format", "dot"])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rocelab");
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is dropped here.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.signal(), Some(13), "status {:?}, stderr {err}", out.status);
}
