//! Bad fabric files: every kind gives a located message (file:line:column), says what is wrong
//! and how to fix it, and never panics. The CLI side (exit status 2) is in
//! `crates/rocelab-cli/tests/foundation.rs`.

use rocelab_model::{load_file, load_str, LoadError};

/// A valid two-leaf fabric; line numbers below count from its first line.
const BASE: &str = "\
[topology.leaf_spine]
leaves = 2
spines = 1
hosts_per_leaf = 2
host_link = { speed_gbps = 100 }
fabric_link = { speed_gbps = 100 }
";

/// A valid explicit fabric: two leaves under one spine, one host on each.
const EXPLICIT: &str = r#"[[topology.explicit.node]]
name = "spine1"
kind = "switch"

[[topology.explicit.node]]
name = "leaf1"
kind = "switch"

[[topology.explicit.node]]
name = "leaf2"
kind = "switch"

[[topology.explicit.node]]
name = "h1"
kind = "host"

[[topology.explicit.node]]
name = "h2"
kind = "host"

[[topology.explicit.link]]
a = "h1"
b = "leaf1"
speed_gbps = 100

[[topology.explicit.link]]
a = "h2"
b = "leaf2"
speed_gbps = 100

[[topology.explicit.link]]
a = "leaf1"
b = "spine1"
speed_gbps = 100

[[topology.explicit.link]]
a = "leaf2"
b = "spine1"
speed_gbps = 100
"#;

const RAIL: &str = "\
[topology.rail_optimized]
gpu_nodes = 16
rails = 8
nodes_per_su = 4
host_link = { speed_gbps = 400 }
leaf_link = { speed_gbps = 400 }
";

/// Loads `text` as `f.toml`, expects failure, and returns the rendered diagnostics.
fn error(text: &str) -> String {
    match load_str("f.toml", text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Asserts the first diagnostic is at `line:col` and the rendered message holds every part.
fn expect(text: &str, line_col: &str, parts: &[&str]) -> String {
    let msg = error(text);
    assert!(msg.starts_with(&format!("f.toml:{line_col}: error: ")), "expected f.toml:{line_col}, got:\n{msg}");
    assert!(msg.contains("\n  = help: "), "no hint in:\n{msg}");
    for p in parts {
        assert!(msg.contains(p), "expected {p:?} in:\n{msg}");
    }
    msg
}

#[test]
fn base_fixtures_are_valid() {
    load_str("f.toml", BASE).unwrap();
    load_str("f.toml", EXPLICIT).unwrap();
    load_str("f.toml", RAIL).unwrap();
}

#[test]
fn unknown_keys() {
    // At the top level of a table, in an inline table, in an array of tables.
    expect(&format!("{BASE}leafs = 3\n"), "7:1", &["unknown field `leafs`", "expected one of", "remove the key"]);
    let t = BASE.replace("host_link = { speed_gbps = 100 }", "host_link = { speed_gbps = 100, lenght_m = 3 }");
    expect(&t, "5:33", &["unknown field `lenght_m`", "`length_m`"]);
    let t = format!(
        "{BASE}[[qos.class]]\nname = \"roce\"\npriority = 3\necn = {{ kmin_byte = 1, kmax_bytes = 2, pmax = 0.1 }}\n"
    );
    expect(&t, "10:9", &["unknown field `kmin_byte`", "`kmin_bytes`"]);
    expect(&format!("{BASE}[fabrik]\nname = \"x\"\n"), "7:2", &["unknown field `fabrik`"]);
}

#[test]
fn wrong_types() {
    let t = BASE.replace("leaves = 2", "leaves = \"four\"");
    expect(&t, "2:10", &["`topology.leaf_spine.leaves`", "invalid type: string \"four\", expected u32", "unquoted"]);
    let t = BASE.replace("host_link = { speed_gbps = 100 }", "host_link = { speed_gbps = \"100G\" }");
    expect(&t, "5:28", &["`topology.leaf_spine.host_link.speed_gbps`", "invalid type: string \"100G\""]);
    let t = format!("{BASE}[nic]\ncongestion_control = \"swift\"\n");
    expect(&t, "8:22", &["unknown variant `swift`", "`dcqcn`", "`none`"]);
    let t = format!("{BASE}[[qos.class]]\nname = \"roce\"\npriority = 3\ndscp = 26\n");
    expect(&t, "10:8", &["`qos.class[0].dscp`", "invalid type: integer `26`, expected a sequence", "lists in [ ]"]);
}

#[test]
fn missing_required_values() {
    let t = BASE.replace("spines = 1\n", "");
    expect(&t, "1:1", &["`topology.leaf_spine`", "missing field `spines`", "add `spines = ...`"]);
    let t = BASE.replace("host_link = { speed_gbps = 100 }", "host_link = { length_m = 3 }");
    expect(&t, "5:13", &["missing field `speed_gbps`", "`topology.leaf_spine.host_link`"]);
    let msg = expect("", "1:1", &["missing field `topology`", "rocelab init"]);
    assert!(!msg.contains("syntax"), "{msg}");
    expect("[topology]\n", "1:1", &["no topology given", "[topology.leaf_spine]"]);
}

#[test]
fn negative_and_impossible_numbers() {
    let t = BASE.replace("host_link = { speed_gbps = 100 }", "host_link = { speed_gbps = -100 }");
    expect(&t, "5:28", &["`topology.leaf_spine.host_link.speed_gbps`", "must be a positive number of Gb/s, got -100"]);
    let t = BASE.replace("leaves = 2", "leaves = -2");
    expect(&t, "2:10", &["integer `-2`, expected u32", "cannot be negative"]);
    let t = BASE.replace("leaves = 2", "leaves = 0");
    expect(&t, "2:10", &["leaves must be at least 1", "positive count"]);
    let t = BASE.replace("fabric_link = { speed_gbps = 100 }", "fabric_link = { speed_gbps = 100, length_m = -5 }");
    expect(&t, "6:46", &["cable length must be between 0 and 100000 m, got -5"]);
    let t = BASE.replace("fabric_link = { speed_gbps = 100 }", "fabric_link = { speed_gbps = nan }");
    expect(&t, "6:30", &["link speed must be a positive number of Gb/s, got NaN"]);
    expect(&format!("{BASE}[nic]\nspeed_gbps = -400\n"), "8:14", &["NIC speed must be positive"]);
    let t = "[topology.fat_tree]\nk = 5\nlink = { speed_gbps = 100 }\n";
    expect(t, "2:5", &["needs an even k >= 2, got 5"]);
}

#[test]
fn kmin_above_kmax() {
    let t = format!(
        "{BASE}
[[qos.class]]
name = \"roce\"
dscp = [26]
priority = 3
lossless = true
ecn = {{ kmin_bytes = 2000000, kmax_bytes = 1500000, pmax = 0.1 }}

[[qos.class]]
name = \"cnp\"
dscp = [48]
priority = 6
scheduler = \"strict\"
"
    );
    expect(
        &t,
        "13:22",
        &["`qos.class[0].ecn.kmin_bytes`", "ECN Kmin (2000000 B) is above Kmax (1500000 B)", "Kmin must be <= Kmax"],
    );
    let t = t.replace("pmax = 0.1", "pmax = 1.5");
    let msg = error(&t);
    assert!(msg.contains("Pmax 1.5 is not a probability"), "{msg}");
}

#[test]
fn link_to_a_node_that_does_not_exist() {
    let t = EXPLICIT.replace("b = \"leaf2\"", "b = \"lef2\"");
    expect(
        &t,
        "28:5",
        &["`topology.explicit.link[1].b`", "link end `lef2` is not a declared node", "did you mean `leaf2`?"],
    );
    let t = EXPLICIT.replace("a = \"leaf1\"", "a = \"router9\"");
    expect(&t, "32:5", &["link end `router9` is not a declared node", "declare it in [[topology.explicit.node]]"]);
    let t = EXPLICIT.replace("a = \"leaf1\"", "a = \"spine1\"");
    expect(&t, "31:1", &["`topology.explicit.link[2]`", "link connects `spine1` to itself"]);
    let t = EXPLICIT.replace("b = \"leaf1\"", "b = \"h2\"");
    expect(&t, "21:1", &["`topology.explicit.link[0]`", "link joins two hosts"]);
}

#[test]
fn counts_that_do_not_divide() {
    let t = RAIL.replace("gpu_nodes = 16", "gpu_nodes = 18");
    expect(&t, "4:16", &["18 GPU nodes do not divide into scalable units of 4", "gpu_nodes = 20"]);
    // Found by the fuzzer: the suggested multiple once overflowed u32 (a debug-build panic).
    let t = RAIL.replace("gpu_nodes = 16", "gpu_nodes = 4294967295");
    expect(&t, "4:16", &["4294967295 GPU nodes do not divide", "gpu_nodes = 4294967296"]);
    let t = format!("{RAIL}sus_per_pod = 3\n");
    expect(&t, "7:15", &["4 scalable units do not divide into pods of 3", "sus_per_pod"]);
    let t = format!("{RAIL}sus_per_pod = 2\npod_oversubscription = 4\ncore_switches = 3\n");
    expect(&t, "9:17", &["`topology.rail_optimized.core_switches`", "cannot be spread evenly over 3 core switches"]);
    let t = format!("{BASE}uplinks_per_leaf = 3\n").replace("spines = 1", "spines = 2");
    expect(&t, "7:20", &["3 uplinks per leaf cannot be spread evenly over 2 spines", "multiple of 2"]);
    let t = RAIL.replace("rails = 8", "rails = 0");
    expect(&t, "3:9", &["rails must be at least 1"]);
    let t = format!("{RAIL}pod_oversubscription = 0.5\n");
    expect(&t, "7:24", &["oversubscription must be a ratio between 1 and 64", "7.0 for a 1:7"]);
}

#[test]
fn duplicate_names() {
    let t = EXPLICIT.replace("name = \"leaf2\"", "name = \"leaf1\"");
    expect(&t, "10:8", &["`topology.explicit.node[2].name`", "node `leaf1` is declared twice", "unique name"]);
    // Found by the fuzzer: a duplicate followed by more nodes once made a link end resolve past
    // the last node (an index panic).
    let t = "[[topology.explicit.node]]\nname = \"x\"\nkind = \"switch\"\n[[topology.explicit.node]]\nname = \"s\"\n\
             kind = \"host\"\n[[topology.explicit.node]]\nname = \"x\"\nkind = \"host\"\n[[topology.explicit.link]]\n\
             a = \"x\"\nb = \"s\"\nspeed_gbps = 100\n";
    expect(t, "8:8", &["node `x` is declared twice"]);
    let t = format!("{BASE}[[qos.class]]\nname = \"a\"\npriority = 0\n[[qos.class]]\nname = \"a\"\npriority = 1\n");
    let msg = error(&t);
    assert!(msg.contains("f.toml:11:8: error: `qos.class[1].name`: class `a` is declared twice"), "{msg}");
    let t = BASE.replace("spines = 1", "spines = 1\nspines = 2");
    expect(&t, "4:1", &["TOML syntax error: duplicate key `spines`", "delete one of them"]);
}

#[test]
fn dscp_out_of_range() {
    let t = format!("{BASE}[[qos.class]]\nname = \"roce\"\ndscp = [26, 64]\npriority = 3\n");
    expect(&t, "9:13", &["`qos.class[0].dscp[1]`", "DSCP 64 is outside 0..=63", "6-bit"]);
    let t = format!("{BASE}[[qos.class]]\nname = \"roce\"\ndscp = [300]\npriority = 3\n");
    expect(&t, "9:9", &["`qos.class[0].dscp[0]`", "integer `300`, expected u8", "0 to 255"]);
    let t = format!("{BASE}[nic.qos]\nroce_dscp = 70\n");
    expect(&t, "8:13", &["`nic.qos.roce_dscp`", "DSCP 70 is outside 0..=63"]);
    let t = format!("{BASE}[[qos.class]]\nname = \"a\"\ndscp = [26]\npriority = 3\n[[qos.class]]\nname = \"b\"\ndscp = [26]\npriority = 6\n");
    expect(&t, "13:9", &["DSCP 26 is already mapped to class `a`"]);
    let t = format!("{BASE}[[qos.class]]\nname = \"roce\"\npriority = 9\n");
    expect(&t, "9:12", &["priority 9 is outside 0..=7"]);
}

#[test]
fn unknown_switch_preset_and_model() {
    let t = format!("{BASE}[switch_models.big]\npreset = \"trident9\"\n");
    expect(&t, "8:10", &["`switch_models.big.preset`", "unknown switch preset `trident9`", "spectrum-2", "tomahawk3"]);
    let t = format!("{BASE}leaf_model = \"spectrum-9\"\n");
    expect(
        &t,
        "7:14",
        &[
            "`topology.leaf_spine.leaf_model`",
            "switch model `spectrum-9` (used by `leaf0`)",
            "[switch_models.spectrum-9]",
        ],
    );
    let t = EXPLICIT.replacen("kind = \"switch\"", "kind = \"switch\"\nmodel = \"nope\"", 1);
    expect(&t, "4:9", &["`topology.explicit.node[0].model`", "switch model `nope`"]);
    // A switch with more links than its model has ports.
    let t = BASE.replace("hosts_per_leaf = 2", "hosts_per_leaf = 80");
    expect(
        &t,
        "1:1",
        &["`topology.leaf_spine`", "switch `leaf0` needs 81 ports but model `spectrum-3` has 64", "ports = 81"],
    );
}

#[test]
fn partitioned_fabric() {
    // Remove the link from leaf2 to the spine: h2 is cut off.
    let cut = EXPLICIT.rsplit_once("[[topology.explicit.link]]").unwrap().0;
    let t = format!("{cut}[[topology.explicit.node]]\nname = \"spine2\"\nkind = \"switch\"\n");
    let t = format!("{t}[[topology.explicit.link]]\na = \"leaf2\"\nb = \"spine2\"\nspeed_gbps = 100\n");
    let msg = error(&t);
    assert!(msg.contains("the fabric is partitioned: switch"), "{msg}");
    assert!(msg.contains("cannot reach") && msg.contains("help: add links"), "{msg}");
    assert!(msg.starts_with("f.toml:1:3: error: `topology`"), "{msg}");
    // A host with no link at all.
    let t = format!("{EXPLICIT}[[topology.explicit.node]]\nname = \"h3\"\nkind = \"host\"\n");
    assert!(error(&t).contains("host `h3` has no links"));
}

#[test]
fn not_toml() {
    expect("this is [not toml\n", "1:6", &["TOML syntax error", "`key = value`"]);
    expect(&BASE.replace("leaves = 2", "leaves = "), "2:10", &["TOML syntax error"]);
    expect("[topology.leaf_spine\nleaves = 2\n", "1:21", &["TOML syntax error"]);
    expect("{\"topology\": {}}\n", "1:1", &["TOML syntax error"]);
}

#[test]
fn more_than_one_topology_or_none() {
    let t = format!("{BASE}[topology.fat_tree]\nk = 4\nlink = {{ speed_gbps = 100 }}\n");
    expect(&t, "1:2", &["more than one topology kind given", "exactly one of"]);
    expect("[topology.explicit]\n", "1:1", &["explicit topology has no nodes"]);
}

#[test]
fn sizes_too_large_to_hold_are_refused() {
    let t = RAIL.replace("gpu_nodes = 16", "gpu_nodes = 4000000");
    expect(&t, "1:1", &["more than rocelab's limit"]);
    let t = format!("{RAIL}links_per_leaf_spine = 1000000000\n");
    expect(&t, "1:1", &["links, more than rocelab's limit"]);
    let t = format!("{BASE}uplinks_per_leaf = 4000000000\n");
    expect(&t, "1:1", &["links, more than rocelab's limit"]);
    let t = EXPLICIT.replacen("kind = \"host\"", "kind = \"host\"\nrail = 4000000000", 1);
    expect(&t, "16:8", &["`topology.explicit.node[3].rail`", "rail 4000000000 is too large"]);
    // 85 % of it as the default XOFF once overflowed (a debug-build panic).
    let t = format!("{BASE}[nic]\nrx_buffer_bytes = 9223372036854775807\n");
    load_str("f.toml", &t).expect("a huge NIC buffer is legal (lint may warn)");
    let t = format!("{BASE}[nic]\nrx_buffer_bytes = 18446744073709551615\n");
    expect(&t, "8:19", &["number too large", "9223372036854775807"]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let t = BASE.replace("leaves = 2", "leaves = 0").replace("spines = 1", "spines = 0");
    let msg = error(&t);
    assert!(msg.contains("leaves must be at least 1") && msg.contains("spines must be at least 1"), "{msg}");
    match load_str("f.toml", &t) {
        Err(LoadError::Invalid(ds)) => {
            assert_eq!(ds.len(), 2);
            assert!(ds.iter().all(|d| d.location.is_some()));
        }
        other => panic!("{other:?}"),
    }
}

fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rocelab-model-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_file_that_does_not_exist() {
    let e = load_file(std::path::Path::new("/nonexistent/fabric.toml")).unwrap_err();
    assert!(matches!(e, LoadError::Io { .. }));
    let msg = e.to_string();
    assert!(msg.contains("cannot read /nonexistent/fabric.toml") && msg.contains("help: check the path"), "{msg}");
}

#[test]
fn a_file_that_is_not_utf8() {
    let p = temp_file("latin1.toml", b"[fabric]\nname = \"caf\xe9\"\n");
    let msg = load_file(&p).unwrap_err().to_string();
    let file = p.display().to_string();
    assert!(msg.starts_with(&format!("{file}:2:12: error: the file is not UTF-8 text")), "{msg}");
    assert!(msg.contains("byte 0xe9") && msg.contains("save the fabric file as UTF-8"), "{msg}");
    let p = temp_file("binary.toml", &[0xff, 0xfe, 0x00, 0x01]);
    let msg = load_file(&p).unwrap_err().to_string();
    assert!(msg.contains(":1:1: error: the file is not UTF-8 text"), "{msg}");
    // A file that loads from disk reports its own path.
    let p = temp_file("bad.toml", BASE.replace("leaves = 2", "leaves = -1").as_bytes());
    let msg = load_file(&p).unwrap_err().to_string();
    assert!(msg.starts_with(&format!("{}:2:10: error:", p.display())), "{msg}");
}

#[test]
fn roce_mtu_above_4096_is_refused() {
    // 9000 is an Ethernet (port) MTU; RoCE path MTUs stop at 4096.
    let e = expect(&format!("{BASE}[nic]\nmtu = 9000\n"), "8:7", &["`nic.mtu`", "9000", "256..=4096"]);
    assert!(e.contains("help:"), "{e}");
    expect(&format!("{BASE}[nic_profiles.big]\nmtu = 4097\n"), "8:7", &["`nic_profiles.big.mtu`"]);
    expect(&format!("{BASE}[nic]\nmtu = 255\n"), "8:7", &["`nic.mtu`"]);
    for ok in [256, 1000, 4000, 4096] {
        assert!(load_str("f.toml", &format!("{BASE}[nic]\nmtu = {ok}\n")).is_ok(), "mtu {ok}");
    }
}

#[test]
fn simulation_times_must_be_positive() {
    expect(
        &format!("{BASE}[simulation]\nduration_us = -1\n"),
        "8:15",
        &["`simulation.duration_us`", "positive", "got -1"],
    );
    expect(&format!("{BASE}[simulation]\nduration_us = 0.0\n"), "8:15", &["`simulation.duration_us`"]);
    expect(&format!("{BASE}[simulation]\nduration_us = nan\n"), "8:15", &["`simulation.duration_us`"]);
    expect(&format!("{BASE}[simulation]\nduration_us = 1e13\n"), "8:15", &["`simulation.duration_us`"]);
    expect(&format!("{BASE}[simulation]\nsample_interval_us = -5\n"), "8:22", &["`simulation.sample_interval_us`"]);
    assert!(load_str("f.toml", &format!("{BASE}[simulation]\nduration_us = 0.5\nsample_interval_us = 10\n")).is_ok());
}

/// Routing tables too large are refused from the counts, before the graph is built (it used to
/// take seconds and a gigabyte to reach the same refusal).
#[test]
fn routing_tables_too_large_are_refused_before_building() {
    let ft = "[topology.fat_tree]\nk = 140\nlink = { speed_gbps = 400 }\nswitch_model = \"big\"\n\
              [switch_models.big]\npreset = \"tomahawk3\"\nports = 140\n";
    let e = error(ft);
    assert!(
        e.contains(
            "`topology.fat_tree`: routing tables would need 240100000 cells (24500 switches x 9800 destination leaves)"
        ),
        "{e}"
    );
    let ls = "[topology.leaf_spine]\nleaves = 20000\nspines = 16\nhosts_per_leaf = 1\n\
              host_link = { speed_gbps = 100 }\nfabric_link = { speed_gbps = 100 }\n";
    let e = error(ls);
    assert!(e.contains("(20016 switches x 20000 destination leaves)"), "{e}");
    let rail = "[topology.rail_optimized]\ngpu_nodes = 160000\nrails = 8\nnodes_per_su = 32\nsus_per_pod = 5000\n\
                host_link = { speed_gbps = 400 }\nleaf_link = { speed_gbps = 400 }\n";
    let e = error(rail);
    assert!(e.contains("destination leaves)") && e.contains("routing tables would need"), "{e}");
}

/// Loading names its stages in order, for the CLI's progress display.
#[test]
fn loading_reports_its_stages() {
    let seen = std::cell::RefCell::new(Vec::new());
    rocelab_model::load_str_observed("f.toml", BASE, &|s| seen.borrow_mut().push(s)).unwrap();
    assert_eq!(
        seen.into_inner(),
        [
            "parsing",
            "building the topology",
            "checking switch models and QoS",
            "computing ECMP routes",
            "checking the routes",
            "checking traffic, faults and workloads"
        ]
    );
}

#[test]
fn infiniband_settings_are_checked_and_located() {
    // Loads with the defaults: 8 data VLs, 64 KiB per VL, SL i → VL i mod 8, OpenSM's
    // arbitration tables, static routing.
    let m = load_str("f.toml", &format!("[fabric]\nlink_layer = \"infiniband\"\n{BASE}")).unwrap();
    let ib = m.ib.as_ref().expect("an IB fabric");
    assert_eq!((ib.data_vls, ib.vl_buffer_bytes, ib.vl_of_sl(11)), (8, 65_536, 3));
    assert_eq!((ib.vl_arb_high.clone(), ib.vl_arb_low.len(), ib.high_limit_bytes()), (vec![(0, 4)], 7, Some(0)));
    assert!(load_str("f.toml", BASE).unwrap().ib.is_none(), "RoCE by default");
    // [infiniband] on a RoCE fabric.
    expect(
        &format!("{BASE}[infiniband]\ndata_vls = 2\n"),
        "7:1",
        &["link layer is RoCE", "link_layer = \"infiniband\""],
    );
    let ib = |body: &str| format!("[fabric]\nlink_layer = \"infiniband\"\n{BASE}[infiniband]\n{body}");
    expect(&ib("data_vls = 3\n"), "10:12", &["data_vls = 3", "1, 2, 4, 8 or 15"]);
    expect(&ib("vl_buffer_bytes = 1000\n"), "10:19", &["must hold one 4096-byte packet"]);
    expect(&ib("sl_to_vl = [0, 1]\n"), "10:12", &["2 entries", "16"]);
    expect(&ib("sl_to_vl = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 15, 6, 7]\n"), "10:52", &["SL 13 → VL 15"]);
    expect(&ib("vl_arb_low = [{ vl = 1, weight = 300 }]\n"), "10:34", &["weight = 300", "0..=255"]);
    expect(&ib("limit_of_high_priority = 256\n"), "10:26", &["limit_of_high_priority = 256"]);
    expect(&ib("routing = \"random\"\n"), "10:11", &["unknown variant `random`", "`static`", "`adaptive`"]);
    expect(&ib("data_vl = 2\n"), "10:1", &["unknown field `data_vl`", "`data_vls`"]);
    // Congestion control: off unless `[infiniband.cc]` is written; its keys checked.
    assert!(load_str("f.toml", &ib("")).unwrap().ib.unwrap().cc.is_none());
    let cc = load_str("f.toml", &ib("[infiniband.cc]\n")).unwrap().ib.unwrap().cc.expect("on");
    assert_eq!((cc.marking_threshold_bytes, cc.ccti_increase, cc.ccti_limit), (32_768, 1, 127));
    assert_eq!((cc.ccti_timer.0, cc.cct_step.0), (10_000_000, 10_000));
    assert!(load_str("f.toml", &ib("[infiniband.cc]\nenabled = false\n")).unwrap().ib.unwrap().cc.is_none());
    expect(&ib("[infiniband.cc]\nccti_timer_us = -1\n"), "11:17", &["ccti_timer_us = -1", "positive time"]);
    // Positive, but under the engine's 1 ps tick: it would be 0.
    expect(&ib("[infiniband.cc]\ncct_step_ns = 1e-9\n"), "11:15", &["cct_step_ns = 0.000000001", "at least 1 ps"]);
    expect(&ib("[infiniband.cc]\nccti_limit = 0\n"), "11:14", &["ccti_limit = 0"]);
    expect(&ib("[infiniband.cc]\nfecn = true\n"), "11:1", &["unknown field `fecn`"]);
    expect(
        &BASE.replace("[topology", "[fabric]\nlink_layer = \"ethernet\"\n[topology"),
        "2:14",
        &["unknown variant `ethernet`"],
    );
}

#[test]
fn two_classes_on_one_egress_queue_set_up_differently() {
    let classes = |second: &str| {
        format!(
            "{BASE}[qos]\ncnp_class = \"cnp\"\n\
             [[qos.class]]\nname = \"roce\"\ndscp = [26]\npriority = 3\nweight = 50\n\
             ecn = {{ kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }}\n\
             [[qos.class]]\nname = \"cnp\"\ndscp = [48]\npriority = 6\nscheduler = \"strict\"\n\
             [[qos.class]]\nname = \"bulk\"\ndscp = [0]\n{second}\n"
        )
    };
    // Line 24 is the third class's `queue` (or `priority`, when the queue follows it).
    expect(
        &classes("priority = 0\nqueue = 3\nweight = 50"),
        "24:9",
        &[
            "classes `roce` and `bulk` share egress queue 3",
            "ECN Kmin 150000 B / Kmax 1500000 B / Pmax 0.1 vs no ECN",
            "a queue of its own",
        ],
    );
    expect(
        &classes("priority = 3\nweight = 10\necn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }"),
        "23:12",
        &["classes `roce` and `bulk` share egress queue 3", "weight 50 vs 10"],
    );
    expect(&classes("priority = 6\nweight = 10"), "23:12", &["`cnp` and `bulk`", "scheduler strict vs dwrr"]);
    // Set up alike, sharing is legal (lint judges what shares: ISO001, CNP003).
    load_str(
        "f.toml",
        &classes("priority = 3\nweight = 50\necn = { kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }"),
    )
    .unwrap();
    // A strict class's weight is not used: two strict classes never clash on it.
    load_str("f.toml", &classes("priority = 6\nscheduler = \"strict\"\nweight = 7")).unwrap();
}
