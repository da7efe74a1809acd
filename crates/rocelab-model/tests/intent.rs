//! `[[traffic]]`, `[[fault]]` and `[[workload]]` are resolved when the file loads: a bad
//! reference, size, count or time is a located error (file:line:column) with a hint, for every
//! verb alike, and absurd values never panic.

use rocelab_model::config::TrafficPattern;
use rocelab_model::events::RebootMode;
use rocelab_model::{load_str, NodeId};

/// Two leaves under one spine, two hosts each (host0..host3, leaf0, leaf1, spine0), 100G.
const BASE: &str = "\
[topology.leaf_spine]
leaves = 2
spines = 1
hosts_per_leaf = 2
host_link = { speed_gbps = 100 }
fabric_link = { speed_gbps = 100 }
";

/// `BASE` plus `table`, whose first line is line 7.
fn with(table: &str) -> String {
    format!("{BASE}{table}")
}

#[track_caller]
fn refused(text: &str, line_col: &str, parts: &[&str]) {
    let msg = match load_str("f.toml", text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    };
    assert!(msg.starts_with(&format!("f.toml:{line_col}: error: ")), "expected f.toml:{line_col}, got:\n{msg}");
    assert!(msg.contains("\n  = help: "), "no hint in:\n{msg}");
    for p in parts {
        assert!(msg.contains(p), "expected {p:?} in:\n{msg}");
    }
}

#[test]
fn traffic_resolves_hosts_class_and_counts() {
    let m = load_str(
        "f.toml",
        &with("[[traffic]]\npattern = \"incast\"\ndst = \"host0\"\nsenders = 2\nsize_bytes = 1000\nqps = 4\n\n[[traffic]]\npattern = \"all-to-all\"\nhosts = [\"host*\"]\nsize_bytes = 10\nstart_us = 5\n"),
    )
    .unwrap();
    let t = &m.intent.traffic;
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].dst, m.node_by_name("host0"));
    assert_eq!(t[0].hosts, vec![m.node_by_name("host1").unwrap(), m.node_by_name("host2").unwrap()]);
    assert_eq!((t[0].flows(), t[0].qps, t[0].class), (2, 4, m.qos.rdma_class()));
    assert_eq!(t[1].pattern, TrafficPattern::AllToAll);
    assert_eq!(t[1].flows(), 12, "4 hosts, 4 x 3 flows");
    assert_eq!(t[1].start.as_us_f64(), 5.0);
    assert!(t[1].hosts.iter().all(|h: &NodeId| m.node(*h).is_host()));
}

#[test]
fn traffic_errors_are_located() {
    // The three: an unknown host, a size of 0, more senders than hosts.
    refused(
        &with("[[traffic]]\npattern = \"flow\"\nsrc = \"host9\"\ndst = \"host1\"\nsize_bytes = 1000\n"),
        "9:7",
        &["no host named `host9`", "did you mean `host0`?"],
    );
    refused(
        &with("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host1\"\nsize_bytes = 0\n"),
        "11:14",
        &["a flow of 0 bytes"],
    );
    refused(
        &with("[[traffic]]\npattern = \"incast\"\ndst = \"host0\"\nsenders = 40\nsize_bytes = 1000\n"),
        "10:11",
        &["incast of 40 senders, but only 3 hosts besides the receiver", "use 1 to 3"],
    );
    refused(
        &with("[[traffic]]\npattern = \"flow\"\nsrc = \"leaf0\"\ndst = \"host1\"\nsize_bytes = 1\n"),
        "9:7",
        &["`leaf0` is a switch, not a host"],
    );
    refused(
        &with("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\nsize_bytes = 1\n"),
        "7:1",
        &["pattern `flow` needs `dst`"],
    );
    refused(
        &with("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host0\"\nsize_bytes = 1\n"),
        "10:7",
        &["to itself"],
    );
    refused(
        &with("[[traffic]]\npattern = \"permutation\"\nhosts = [\"nic*\"]\nsize_bytes = 1\n"),
        "9:9",
        &["match no host"],
    );
    refused(
        &with("[[traffic]]\npattern = \"all-to-all\"\nhosts = [\"host1\"]\nsize_bytes = 1\n"),
        "9:9",
        &["at least 2 hosts"],
    );
    refused(
        &with("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host1\"\nsize_bytes = 1\nclass = \"gold\"\n"),
        "12:9",
        &["no traffic class `gold`", "roce"],
    );
    refused(
        &with("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host1\"\nsize_bytes = 1\nqps = 5000\n"),
        "12:7",
        &["5000 queue pairs", "1 to 1024"],
    );
}

#[test]
fn keys_a_table_does_not_read_are_refused() {
    refused(
        &with("[[traffic]]\npattern = \"incast\"\ndst = \"host0\"\nsrc = \"host1\"\nsize_bytes = 1\n"),
        "10:7",
        &["`src` does not apply to pattern `incast`: only flow read it"],
    );
    refused(
        &with("[[traffic]]\npattern = \"permutation\"\nsenders = 2\nsize_bytes = 1\n"),
        "9:11",
        &["`senders` does not apply to pattern `permutation`"],
    );
    refused(
        &with("[[fault]]\nkind = \"link-down\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"\nduration_us = 50\n"),
        "12:15",
        &["`duration_us` does not apply to a `link-down` fault", "until a `link-up` fault"],
    );
    refused(
        &with("[[fault]]\nkind = \"host-stall\"\nat_us = 1\na = \"host0\"\nb = \"leaf0\"\n"),
        "11:5",
        &["`b` does not apply"],
    );
}

#[test]
fn traffic_bounds_absurd_values() {
    let flow =
        |extra: &str| with(&format!("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host1\"\n{extra}\n"));
    refused(&flow("size_bytes = 9223372036854775807"), "11:14", &["more than the 1 TB"]);
    refused(&flow("size_bytes = 1\nstart_us = -1"), "12:12", &["start time -1 µs"]);
    refused(&flow("size_bytes = 1\nstart_us = 1e300"), "12:12", &["not a time from 0 up to 10^9 µs"]);
    refused(&flow("size_bytes = 1\nstart_us = nan"), "12:12", &["start time NaN µs"]);
    // Ten million QPs at most: a 4-host all-to-all of 1024 QPs per flow is 12,288; 1,000 copies
    // of it cross the limit at the 814th table.
    let mut t = String::from(BASE);
    for _ in 0..1000 {
        t += "[[traffic]]\npattern = \"all-to-all\"\nsize_bytes = 1\nqps = 1024\n";
    }
    refused(&t, &format!("{}:1", 7 + 813 * 4), &["open 10002432 queue pairs", "more than the 10000000"]);
}

#[test]
fn faults_resolve_and_errors_are_located() {
    let m = load_str(
        "f.toml",
        &with("[[fault]]\nkind = \"link-flap\"\nat_us = 10\na = \"leaf0\"\nb = \"spine0\"\nperiod_us = 4\ncount = 3\n\n[[fault]]\nkind = \"ecmp-reseed\"\nat_us = 0\na = \"*\"\nseed = 9\n"),
    )
    .unwrap();
    let f = &m.intent.faults;
    let (a, b) = f[0].link.unwrap();
    assert_eq!((m.port_name(a).as_str(), m.node(m.port(b).node).name.as_str()), ("leaf0:swp0", "spine0"));
    assert_eq!((f[0].count, f[0].period.unwrap().as_us_f64()), (3, 4.0));
    assert_eq!((f[1].node, f[1].seed), (None, Some(9)));

    let fault = |body: &str| with(&format!("[[fault]]\n{body}\n"));
    refused(
        &fault("kind = \"link-down\"\nat_us = 1\na = \"leaf7\"\nb = \"spine0\""),
        "10:5",
        &["no node named `leaf7`", "did you mean `leaf0`?"],
    );
    refused(
        &fault("kind = \"link-down\"\nat_us = 1\na = \"leaf0\"\nb = \"leaf1\""),
        "11:5",
        &["`leaf0` and `leaf1` are not linked"],
    );
    refused(&fault("kind = \"link-down\"\nat_us = 1\na = \"leaf0\""), "7:1", &["needs both ends of the link"]);
    refused(
        &fault("kind = \"link-down\"\nat_us = -5\na = \"leaf0\"\nb = \"spine0\""),
        "9:9",
        &["at_us = -5 is not a valid time"],
    );
    refused(&fault("kind = \"link-down\"\nat_us = 1e30\na = \"leaf0\"\nb = \"spine0\""), "9:9", &["10^12 µs"]);
    refused(&fault("kind = \"host-stall\"\nat_us = 1\na = \"leaf0\""), "10:5", &["`leaf0` is a switch"]);
    refused(
        &fault("kind = \"switch-reboot\"\nat_us = 1\na = \"host0\"\nduration_us = 5"),
        "10:5",
        &["`host0` is a host"],
    );
    refused(
        &fault("kind = \"switch-reboot\"\nat_us = 999999999999\na = \"leaf0\"\nduration_us = 999999999999"),
        "11:15",
        &["after 10^12 µs"],
    );
    refused(
        &fault("kind = \"route-withdraw\"\nat_us = 1\na = \"host0\"\nb = \"leaf0\""),
        "10:5",
        &["a host link carries no routes"],
    );
    refused(&fault("kind = \"ecmp-reseed\"\nat_us = 1\na = \"*\""), "7:1", &["needs `seed`"]);
    refused(
        &fault("kind = \"ecmp-hash-fields\"\nat_us = 1\na = \"leaf0\"\nfields = [\"dst-ip\"]"),
        "10:5",
        &["every switch at once"],
    );
    let flap = |period: &str, count: &str| {
        fault(&format!(
            "kind = \"link-flap\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"\nperiod_us = {period}\ncount = {count}"
        ))
    };
    refused(&flap("10", "0"), "13:9", &["`count` from 1 to 100000"]);
    refused(&flap("10", "4294967295"), "13:9", &["`count` from 1 to 100000"]);
    refused(&flap("1e11", "100000"), "12:13", &["end beyond 10^12 µs"]);
    refused(&flap("0.000001", "3"), "12:13", &["too short"]);
}

#[test]
fn workloads_resolve_and_errors_are_located() {
    let m = load_str(
        "f.toml",
        &with("[[workload]]\nname = \"ar\"\ncollective = \"all_reduce_perf\"\nmin_bytes = \"1M\"\nmax_bytes = \"64M\"\nstep_factor = 4\n"),
    )
    .unwrap();
    assert_eq!(m.intent.workloads[0].name, "ar");
    assert_eq!(
        m.intent.workloads[0].run,
        rocelab_model::intent::WorkloadRun::Collective {
            op: "all_reduce",
            min_bytes: 1 << 20,
            max_bytes: 64 << 20,
            step_factor: 4
        }
    );
    let w = |body: &str| with(&format!("[[workload]]\n{body}\n"));
    // The panic: 1024G is more than the engine's 1 TB message.
    refused(
        &w("collective = \"sendrecv\"\nmin_bytes = \"1024G\"\nchannels = 1"),
        "9:13",
        &["\"1024G\" is 1099511627776 bytes, more than the 1 TB"],
    );
    refused(&w("collective = \"sendrecv\"\nmin_bytes = 0"), "9:13", &["0 is not a size of 1 byte or more"]);
    refused(&w("collective = \"sendrecv\"\nmin_bytes = \"lots\""), "9:13", &["\"lots\" is not a size"]);
    refused(&w("collective = \"sendrecv\"\nmin_bytes = \"64M\"\nmax_bytes = \"1M\""), "10:13", &["below min_bytes"]);
    refused(&w("collective = \"sendrecv\"\nstep_factor = 1"), "9:15", &["step factor 1"]);
    refused(&w("collective = \"allreduse\""), "8:14", &["unknown collective `allreduse`", "all_reduce"]);
    refused(&w("collective = \"reduce\""), "8:14", &["not on the twin yet"]);
    refused(&w("name = \"x\""), "7:1", &["a collective or a step, one of them"]);
    refused(&w("collective = \"alltoall\"\nstep = \"plan\""), "8:14", &["one of them"]);
    refused(&w("step = \"plan\""), "8:8", &["no [plan] table"]);
    refused(&w("name = \"../x\"\ncollective = \"alltoall\""), "8:8", &["workload name `../x`"]);
    refused(&w("collective = \"alltoall\"\nchannels = 0"), "9:12", &["channels = 0", "1 to 256"]);
    refused(&w("collective = \"alltoall\"\nchannels = 4294967295"), "9:12", &["1 to 256"]);
    refused(&w("collective = \"alltoall\"\nqps_per_connection = 4096"), "9:22", &["1 to 128"]);
    refused(&w("collective = \"alltoall\"\nchunk_bytes = \"2T\""), "9:15", &["\"2T\" is not a size"]);
    refused(&w("collective = \"alltoall\"\nalgo = \"butterfly\""), "9:8", &["ring or tree"]);
    refused(
        &w("collective = \"alltoall\"\nalgo = \"tree\""),
        "9:8",
        &["NCCL_ALGO=tree for alltoall", "all-reduce only"],
    );
    refused(&w("collective = \"alltoall\"\nplacement = \"gpus\""), "9:13", &["auto or nics"]);
    // Leaf-spine hosts are NICs, not GPU nodes: `nodes` has nothing to count.
    refused(&w("collective = \"alltoall\"\nnodes = 2"), "9:9", &["the ranks are host NICs"]);
    refused(&w("collective = \"broadcast\"\nroot = 4"), "9:8", &["root 4 of a broadcast over 4 ranks", "0..4"]);
    load_str("f.toml", &w("collective = \"broadcast\"\nroot = 3")).unwrap();
    let twice = format!(
        "{}\n[[workload]]\nname = \"a2a\"\ncollective = \"alltoall\"\n",
        w("name = \"a2a\"\ncollective = \"alltoall\"")
    );
    refused(&twice, "12:8", &["workload `a2a` is also the name of workload[0]"]);
}

#[test]
fn workload_nodes_count_gpu_nodes() {
    // 16 GPU nodes of 8 GPUs: nodes from 1 to 16; broadcast over 2 nodes has 16 ranks.
    let rail = "[topology.rail_optimized]\ngpu_nodes = 16\nrails = 8\nnodes_per_su = 4\nhost_link = { speed_gbps = 400 }\nleaf_link = { speed_gbps = 400 }\n";
    let w = |body: &str| format!("{rail}[[workload]]\ncollective = \"broadcast\"\n{body}\n");
    load_str("f.toml", &w("nodes = 16")).unwrap();
    load_str("f.toml", &w("nodes = 2\nroot = 15")).unwrap();
    refused(&w("nodes = 17"), "9:9", &["17 GPU nodes asked for, the fabric has 16", "1 to 16"]);
    refused(&w("nodes = 0"), "9:9", &["give 1 to 16"]);
    refused(&w("nodes = 2\nroot = 16"), "10:8", &["root 16 of a broadcast over 16 ranks"]);
    // With placement "nics" the ranks are the 128 NICs.
    refused(&w("nodes = 2\nplacement = \"nics\""), "9:9", &["host NICs"]);
}

#[test]
fn a_workload_on_gpus_needs_every_host_in_a_gpu_node() {
    let fabric = "[[topology.explicit.node]]\nname = \"sw\"\nkind = \"switch\"\n\
                  [[topology.explicit.node]]\nname = \"a\"\nkind = \"host\"\ngpu_node = \"n0\"\n\
                  [[topology.explicit.node]]\nname = \"b\"\nkind = \"host\"\n\
                  [[topology.explicit.link]]\na = \"a\"\nb = \"sw\"\nspeed_gbps = 100\n\
                  [[topology.explicit.link]]\na = \"b\"\nb = \"sw\"\nspeed_gbps = 100\n";
    load_str("f.toml", fabric).unwrap();
    let t = format!("{fabric}[[workload]]\ncollective = \"alltoall\"\n");
    refused(&t, "19:1", &["host `b` belongs to no GPU node while others do"]);
    load_str("f.toml", &format!("{t}placement = \"nics\"\n")).unwrap();
}

#[test]
fn reboots_take_a_mode_and_its_documented_outage() {
    let fault = |body: &str| with(&format!("[[fault]]\n{body}\n"));
    // No mode, no duration: a cold reboot of 150 s (the published figure), routes back with
    // the ports.
    let m = load_str("f.toml", &fault("kind = \"switch-reboot\"\nat_us = 1\na = \"leaf0\"")).unwrap();
    let f = &m.intent.faults[0];
    assert_eq!(
        (f.mode, f.duration.unwrap().as_us_f64(), f.routes_after.as_us_f64()),
        (Some(RebootMode::Cold), 150e6, 0.0)
    );
    // Warm: 1 s of data-plane outage by default.
    let m = load_str("f.toml", &fault("kind = \"switch-reboot\"\nat_us = 1\na = \"spine0\"\nmode = \"warm\"")).unwrap();
    let f = &m.intent.faults[0];
    assert_eq!((f.mode, f.duration.unwrap().as_us_f64()), (Some(RebootMode::Warm), 1e6));
    // A cold reboot with its own timescales.
    let m = load_str(
        "f.toml",
        &fault("kind = \"switch-reboot\"\nat_us = 1\na = \"leaf0\"\nmode = \"cold\"\nduration_us = 200\nroutes_after_us = 50"),
    )
    .unwrap();
    let f = &m.intent.faults[0];
    assert_eq!((f.duration.unwrap().as_us_f64(), f.routes_after.as_us_f64()), (200.0, 50.0));

    refused(
        &fault("kind = \"switch-reboot\"\nat_us = 1\na = \"leaf0\"\nmode = \"warm\"\nroutes_after_us = 5"),
        "12:19",
        &["a warm reboot keeps its routes"],
    );
    refused(&fault("kind = \"switch-reboot\"\nat_us = 1\na = \"leaf0\"\nmode = \"lukewarm\""), "11:8", &["lukewarm"]);
    refused(
        &fault("kind = \"switch-reboot\"\nat_us = 1\na = \"leaf0\"\nroutes_after_us = -1"),
        "11:19",
        &["routes_after_us = -1 is not a valid time"],
    );
    // The default 150 s counts toward the clock's end.
    refused(&fault("kind = \"switch-reboot\"\nat_us = 999999999999\na = \"leaf0\""), "7:1", &["after 10^12 µs"]);
    refused(
        &fault("kind = \"link-down\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"\nmode = \"warm\""),
        "12:8",
        &["`mode` does not apply to a `link-down` fault"],
    );
}

#[test]
fn a_slow_drain_is_a_stall_at_a_rate_below_the_nic() {
    let fault = |body: &str| with(&format!("[[fault]]\n{body}\n"));
    let m = load_str("f.toml", &fault("kind = \"host-stall\"\nat_us = 1\na = \"host0\"\ndrain_gbps = 25.5")).unwrap();
    assert_eq!(m.intent.faults[0].drain.unwrap().0, 25_500_000_000);
    let m = load_str("f.toml", &fault("kind = \"host-stall\"\nat_us = 1\na = \"host0\"")).unwrap();
    assert_eq!(m.intent.faults[0].drain, None, "no rate: a full stall, as before");
    // The hosts' NICs run at 100 Gb/s: 100 or more would hold nothing back.
    for bad in ["100", "400", "0", "-3", "nan"] {
        refused(
            &fault(&format!("kind = \"host-stall\"\nat_us = 1\na = \"host0\"\ndrain_gbps = {bad}")),
            "11:14",
            &["not a rate above 0 and below the host's 100 Gb/s"],
        );
    }
    refused(
        &fault("kind = \"host-resume\"\nat_us = 1\na = \"host0\"\ndrain_gbps = 5"),
        "11:14",
        &["`drain_gbps` does not apply to a `host-resume` fault"],
    );
}

#[test]
fn a_nic_reset_takes_a_host_its_default_link_down_and_a_declared_profile() {
    let fault = |body: &str| format!("{BASE}[nic_profiles.new-fw]\nmtu = 4096\n[[fault]]\n{body}\n");
    let m = load_str("f.toml", &fault("kind = \"nic-reset\"\nat_us = 1\na = \"host0\"\nprofile = \"new-fw\"")).unwrap();
    let f = &m.intent.faults[0];
    assert_eq!(f.duration.unwrap().as_us_f64(), 3e6, "3 s by default");
    assert_eq!(m.nics[f.profile.unwrap()].name, "new-fw");
    let m = load_str("f.toml", &fault("kind = \"nic-reset\"\nat_us = 1\na = \"host0\"\nduration_us = 500")).unwrap();
    assert_eq!((m.intent.faults[0].duration.unwrap().as_us_f64(), m.intent.faults[0].profile), (500.0, None));
    // The fault table starts at line 9 here.
    refused(&fault("kind = \"nic-reset\"\nat_us = 1\na = \"leaf0\""), "12:5", &["`leaf0` is a switch"]);
    refused(
        &fault("kind = \"nic-reset\"\nat_us = 1\na = \"host0\"\nprofile = \"old-fw\""),
        "13:11",
        &["no NIC profile named `old-fw`", "new-fw"],
    );
    refused(
        &fault("kind = \"host-stall\"\nat_us = 1\na = \"host0\"\nprofile = \"new-fw\""),
        "13:11",
        &["`profile` does not apply to a `host-stall` fault"],
    );
}

#[test]
fn an_ecmp_member_change_takes_two_linked_switches() {
    let fault = |body: &str| with(&format!("[[fault]]\n{body}\n"));
    let m =
        load_str("f.toml", &fault("kind = \"ecmp-member-remove\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"")).unwrap();
    let (p, _) = m.intent.faults[0].link.unwrap();
    let name = |q: rocelab_model::PortId| m.node(m.port(q).node).name.clone();
    assert_eq!((name(p), name(m.port(p).peer)), ("leaf0".to_string(), "spine0".to_string()), "leaf0's own port first");
    refused(
        &fault("kind = \"ecmp-member-add\"\nat_us = 1\na = \"leaf0\"\nb = \"host0\""),
        "10:5",
        &["a host link carries no routes"],
    );
    refused(&fault("kind = \"ecmp-member-remove\"\nat_us = 1\na = \"leaf0\""), "7:1", &["needs both ends of the link"]);
}
