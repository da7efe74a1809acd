//! ns-3 (HPCC) imports: hand-written inputs become the fabric and traffic we expect, run, and
//! produce ns-3-style outputs; malformed inputs give line-numbered errors, never a panic.

use rocelab_import::fabric::{to_toml, Ecn};
use rocelab_import::ns3::{self, import, import_str, node_ip, Ns3Import};
use rocelab_model::config::{CongestionControl, DcqcnVariant};
use rocelab_model::{Model, NodeId};
use std::path::{Path, PathBuf};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(p)
}

fn read(p: &str) -> String {
    std::fs::read_to_string(data(p)).unwrap()
}

fn star() -> Ns3Import {
    import(&data("star-config.txt"), None, None).unwrap()
}

fn fat() -> Ns3Import {
    import(&data("fat-config.txt"), None, None).unwrap()
}

fn load(imp: &Ns3Import) -> Model {
    let text = to_toml(&imp.scenario);
    rocelab_model::load_str("imported.toml", &text).unwrap_or_else(|e| panic!("{e}\n---\n{text}"))
}

/// Imports from literal texts (config, topology, flows).
fn from(cfg: &str, topo: &str, flows: &str) -> Result<Ns3Import, String> {
    import_str("t", ("config.txt", cfg), ("topology.txt", topo), ("flow.txt", flows)).map_err(|e| e.to_string())
}

const STAR_TOPO: &str =
    "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 0.001ms 0\n2 4 100Gbps 0.001ms 0\n3 4 100Gbps 0.001ms 0\n";
const STAR_FLOWS: &str = "1\n1 0 3 100 1000 2.0\n";

fn star_cfg() -> String {
    read("star-config.txt")
}

#[test]
fn star_scenario_field_by_field() {
    let imp = star();
    let s = &imp.scenario;
    let names: Vec<(&str, bool)> = s.nodes.iter().map(|n| (n.name.as_str(), n.is_switch)).collect();
    assert_eq!(names, [("h0", false), ("h1", false), ("h2", false), ("h3", false), ("s4", true)]);
    assert_eq!(imp.node_ids, [0, 1, 2, 3, 4]);
    assert_eq!(s.links.len(), 4);
    for (i, l) in s.links.iter().enumerate() {
        assert_eq!((l.a, l.b), (i, 4));
        assert_eq!(l.speed_bps, 100_000_000_000);
        assert_eq!(l.delay_ps, 1_000_000);
        assert_eq!(l.origin, format!("star-topology.txt:{}", i + 3));
    }
    assert_eq!(s.flows.len(), 3);
    for (i, f) in s.flows.iter().enumerate() {
        assert_eq!((f.src, f.dst, f.size_bytes, f.start_ps), (i + 1, 0, 300_000, 2_000_000_000_000));
    }
    assert_eq!(imp.sports, [10000, 10000, 10000]);
    assert_eq!(imp.dports, [100, 100, 100]);
    let sw = s.ns3_switch.as_ref().unwrap();
    assert_eq!(sw.buffer_bytes, 32 * 1024 * 1024);
    assert_eq!(sw.headroom_bytes, 37_500); // 3 · 100 Gb/s · 1 µs / 8
    assert_eq!(s.mtu, Some(1000));
    assert!(s.dcqcn_on);
    let d = &s.dcqcn;
    assert_eq!(d.g, Some(0.00390625));
    assert_eq!(d.alpha_timer_us, Some(1.0));
    assert_eq!(d.rate_reduce_period_us, Some(4.0));
    assert_eq!(d.increase_timer_us, Some(900.0));
    assert_eq!(d.fast_recovery_steps, Some(1));
    assert_eq!(d.rate_ai_mbps, Some(50.0));
    assert_eq!(d.rate_hai_mbps, Some(100.0));
    assert_eq!(d.min_rate_mbps, Some(100.0));
    assert_eq!(d.clamp_target_rate, Some(false));
    assert_eq!(d.byte_counter_bytes, Some(0));
    assert_eq!(d.initial_alpha, Some(1.0));
    // Only the speeds present in the topology are kept.
    let ecn = s.ecn_by_speed.as_ref().unwrap();
    assert_eq!(ecn.len(), 1);
    assert_eq!(ecn[&100_000_000_000], Ecn { kmin_bytes: 400_000, kmax_bytes: 1_600_000, pmax: 0.2 });
    assert_eq!(s.duration_us, Some(2_010_000.0));
    assert!(s.faults.is_empty());
    assert_eq!(imp.ack_interval, Some(1));
    assert_eq!(imp.payload_bytes, 1000);
    assert_eq!((imp.fct_file.as_str(), imp.pfc_file.as_str()), ("fct_star.txt", "pfc_star.txt"));
    assert!(imp.unknown_keys.is_empty());
    assert!(s.notes.iter().any(|n| n.starts_with("L2_BACK_TO_ZERO 0 (line 25)")), "{:?}", s.notes);
}

#[test]
fn star_fabric_file_loads_as_expected() {
    let imp = star();
    let m = load(&imp);
    assert_eq!(m.hosts().count(), 4);
    let s4 = m.node_by_name("s4").unwrap();
    let sm = m.switch_model_of(s4).unwrap();
    assert_eq!(sm.params.buffer_bytes, 32 * 1024 * 1024);
    assert_eq!(sm.params.ingress_lossless_alpha, 0.125);
    assert_eq!(sm.params.reserve_bytes, 4096);
    let nic = m.nic_of(m.node_by_name("h1").unwrap());
    assert_eq!(nic.mtu, 1000);
    assert_eq!(nic.congestion_control, CongestionControl::Dcqcn);
    assert_eq!(nic.dcqcn.variant, DcqcnVariant::Mlx5);
    assert_eq!(nic.dcqcn.g, 0.00390625);
    assert_eq!(nic.dcqcn.rate_ai.0, 50_000_000);
    assert_eq!(nic.dcqcn.byte_counter_bytes, 0);
    assert_eq!(nic.dcqcn.increase_timer.0, 900_000_000);
    let roce = &m.qos.classes[m.qos.rdma_class()];
    assert!(roce.lossless);
    assert_eq!(roce.priority, 3);
    assert_eq!(roce.ecn_for_speed(100.0).unwrap().kmax_bytes, 1_600_000);
    assert_eq!(m.qos.pfc.headroom_bytes, Some(37_500));
    assert!(!m.qos.watchdog.enabled);
    assert_eq!(m.config.traffic.len(), 3);
    assert_eq!(m.config.traffic[2].src.as_deref(), Some("h3"));
    assert_eq!(m.config.traffic[2].start_us, Some(2_000_000.0));
    assert_eq!(m.config.simulation.duration_us, Some(2_010_000.0));
    // Every link: 100 Gb/s, 1 µs.
    for p in &m.ports {
        assert_eq!(p.speed.0, 100_000_000_000);
        assert_eq!(p.delay.0, 1_000_000);
    }
}

#[test]
fn fat_tree_imports_with_per_speed_ecn() {
    let imp = fat();
    let s = &imp.scenario;
    assert_eq!(s.nodes.len(), 36);
    assert_eq!(s.nodes.iter().filter(|n| n.is_switch).count(), 20);
    assert_eq!(s.nodes[16].name, "s16");
    assert_eq!(s.links.len(), 48);
    assert_eq!(s.links.iter().filter(|l| l.speed_bps == 400_000_000_000).count(), 32);
    let ecn = s.ecn_by_speed.as_ref().unwrap();
    assert_eq!(ecn[&400_000_000_000], Ecn { kmin_bytes: 1_600_000, kmax_bytes: 6_400_000, pmax: 0.2 });
    assert_eq!(ecn[&100_000_000_000].kmin_bytes, 400_000);
    // 3 · 400 Gb/s · 1 µs / 8 = 150 KB is the largest headroom; the difference is noted.
    assert_eq!(s.ns3_switch.as_ref().unwrap().headroom_bytes, 150_000);
    assert!(s.notes.iter().any(|n| n.contains("headroom per port")));
    assert!(s.notes.iter().any(|n| n.contains("PFC α")));
    // Host 0 sends two flows: ports 10000 and 10001, in flow-file order.
    assert_eq!(imp.sports, [10000, 10000, 10000, 10001]);
    assert_eq!(imp.dports, [100, 100, 101, 100]);
    assert_eq!(s.flows[2].start_ps, 2_000_010_000_000);
    let m = load(&imp);
    assert_eq!(m.hosts().count(), 16);
    let roce = &m.qos.classes[m.qos.rdma_class()];
    assert_eq!(roce.ecn_for_speed(400.0).unwrap().kmin_bytes, 1_600_000);
    assert_eq!(roce.ecn_for_speed(100.0).unwrap().kmin_bytes, 400_000);
}

fn fct_fields(line: &str) -> Vec<String> {
    line.split(' ').map(str::to_string).collect()
}

#[test]
fn star_runs_and_writes_ns3_outputs() {
    let imp = star();
    let m = load(&imp);
    let opts = rocelab_sim::options_from_model(&m);
    let run = ns3::run(&imp, &m, opts).unwrap();
    assert_eq!(run.report.flows_completed, 3);
    let lines: Vec<&str> = run.fct.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.fct);
    let mut srcs = Vec::new();
    for l in &lines {
        let f = fct_fields(l);
        assert_eq!(f.len(), 8, "{l}");
        assert_eq!(f[0].len(), 8);
        srcs.push(f[0].clone());
        assert_eq!(f[1], "0b000001"); // host 0
        assert_eq!(f[2], "10000");
        assert_eq!(f[3], "100");
        assert_eq!(f[4], "300000");
        assert_eq!(f[5], "2000000000");
        let fct: u64 = f[6].parse().unwrap();
        let ideal: u64 = f[7].parse().unwrap();
        // 3:1 incast: about three times the ideal, never faster.
        assert!(fct > ideal && fct < 4 * ideal, "fct {fct} ideal {ideal}");
        // ns-3 FCT (last ACK at the sender) ends after the receiver's last byte.
        let flow = ["0b000101", "0b000201", "0b000301"].iter().position(|s| *s == f[0]).unwrap();
        let recv_fct_ns = run.report.flows[flow].fct_seconds.unwrap() * 1e9;
        assert!(fct as f64 >= recv_fct_ns, "{fct} vs {recv_fct_ns}");
    }
    srcs.sort();
    assert_eq!(srcs, ["0b000101", "0b000201", "0b000301"]);
    // Ideal FCT by hand: 2 · 2 µs + 2 · 80 ns (1000 B per hop) + (300000 + 300 · 48) B at
    // 100 Gb/s: the import counts ns-3's 48 B per packet (`header_overhead = "ns3"`).
    let ideal = ns3::ideal_fct_ns(&m, m.node_by_name("h1").unwrap(), m.node_by_name("h0").unwrap(), 300_000, 1000);
    assert_eq!(ideal, Some(4_000 + 160 + (300_000 + 300 * 48) * 8 / 100));
    // PFC lines: time node type ifindex kind.
    for l in run.pfc.lines() {
        let f: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
        assert_eq!(f.len(), 5);
        assert!(f[2] <= 1 && f[4] <= 1 && f[3] >= 1);
    }
}

#[test]
fn fat_tree_runs_and_writes_ns3_outputs() {
    let imp = fat();
    let m = load(&imp);
    let run = ns3::run(&imp, &m, rocelab_sim::options_from_model(&m)).unwrap();
    assert_eq!(run.report.flows_completed, 4);
    assert_eq!(run.fct.lines().count(), 4);
    // The two flows of host 0 (ports 10000, 10001).
    let h0: Vec<String> =
        run.fct.lines().filter(|l| l.starts_with("0b000001 ")).map(|l| fct_fields(l)[2].clone()).collect();
    let mut h0s = h0.clone();
    h0s.sort();
    assert_eq!(h0s, ["10000", "10001"]);
    for l in run.fct.lines() {
        let f = fct_fields(l);
        let (fct, ideal): (u64, u64) = (f[6].parse().unwrap(), f[7].parse().unwrap());
        assert!(fct >= ideal / 2 && ideal > 0, "{l}");
    }
}

#[test]
fn node_ips_follow_hpcc() {
    assert_eq!(node_ip(0), 0x0b00_0001);
    assert_eq!(node_ip(1), 0x0b00_0101);
    assert_eq!(node_ip(256), 0x0b01_0001);
}

#[test]
fn ifindex_counts_links_in_file_order() {
    let imp = fat();
    let m = load(&imp);
    // s16 (edge): links to h0, h1 (ifindex 1, 2), then aggs s24, s25 (3, 4).
    let s16 = m.node_by_name("s16").unwrap();
    let mut got: Vec<(String, u32)> =
        m.node(s16).ports().map(|p| (m.node(m.port(m.port(p).peer).node).name.clone(), ns3::ifindex(&m, p))).collect();
    got.sort_by_key(|g| g.1);
    let want = [("h0", 1), ("h1", 2), ("s24", 3), ("s25", 4)];
    assert_eq!(got, want.map(|(a, b)| (a.to_string(), b)));
    let h5 = m.node_by_name("h5").unwrap();
    assert_eq!(ns3::ifindex(&m, m.node(h5).ports().next().unwrap()), 1);
    let _ = NodeId(0);
}

/// The same 3:1 incast written natively: same FCTs, to the picosecond.
#[test]
fn star_incast_matches_native_fabric_file() {
    let imp = star();
    let m = load(&imp);
    let native = rocelab_model::load_str("native.toml", &read("star-native.toml")).unwrap_or_else(|e| panic!("{e}"));
    let a = rocelab_sim::simulate(&m, rocelab_sim::options_from_model(&m)).unwrap();
    let b = rocelab_sim::simulate(&native, rocelab_sim::options_from_model(&native)).unwrap();
    assert_eq!(a.flows.len(), 3);
    let fa: Vec<_> = a.flows.iter().map(|f| (f.src.clone(), f.dst.clone(), f.start_seconds, f.fct_seconds)).collect();
    let fb: Vec<_> = b.flows.iter().map(|f| (f.src.clone(), f.dst.clone(), f.start_seconds, f.fct_seconds)).collect();
    assert_eq!(fa, fb);
    assert!(fa.iter().all(|f| f.3.is_some()));
    assert_eq!(a.totals, b.totals);
}

#[test]
fn link_down_becomes_a_fault() {
    let cfg = star_cfg().replace("LINK_DOWN 0 0 0", "LINK_DOWN 150 2 4");
    let imp = from(&cfg, STAR_TOPO, STAR_FLOWS).unwrap();
    let f = &imp.scenario.faults;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].at_ps, 2_000_150_000_000);
    assert_eq!((imp.scenario.nodes[f[0].a].name.as_str(), imp.scenario.nodes[f[0].b].name.as_str()), ("h2", "s4"));
    let m = load(&imp);
    assert_eq!(m.config.fault.len(), 1);
    assert_eq!(m.config.fault[0].at_us, 2_000_150.0);
}

#[test]
fn unknown_keys_are_listed_never_dropped_silently() {
    let cfg = format!("{}NIC_TOTAL_PAUSE_TIME 0\nMY_KNOB 3 4\n", star_cfg());
    let imp = from(&cfg, STAR_TOPO, STAR_FLOWS).unwrap();
    assert_eq!(imp.unknown_keys, [("NIC_TOTAL_PAUSE_TIME".to_string(), 46), ("MY_KNOB".to_string(), 47)]);
    let note = imp.scenario.notes.iter().find(|n| n.starts_with("unknown config keys")).unwrap();
    assert!(note.contains("NIC_TOTAL_PAUSE_TIME (line 46)") && note.contains("MY_KNOB (line 47)"), "{note}");
    assert!(to_toml(&imp.scenario).contains("MY_KNOB (line 47)"));
}

#[test]
fn config_doc_comments_are_skipped() {
    let text = "CC_MODE 3 {Specifying different CC. 1: DCQCN, 3: HPCC}\nBUFFER_SIZE 32 {buffer size per switch}\n";
    let c = ns3::parse_config("config_doc.txt", text).unwrap();
    assert_eq!(c.entries["CC_MODE"].values, ["3"]);
    assert_eq!(c.entries["BUFFER_SIZE"].values, ["32"]);
}

#[test]
fn unsupported_cc_modes_are_refused_by_name() {
    for (mode, name) in [(10, "HPCC-PINT"), (2, "an unknown")] {
        let cfg = star_cfg().replace("CC_MODE 1", &format!("CC_MODE {mode}"));
        let e = from(&cfg, STAR_TOPO, STAR_FLOWS).unwrap_err();
        assert!(e.contains(&format!("config.txt:11: CC_MODE {mode} ({name}")), "{e}");
        assert!(e.contains("HPCC (3), TIMELY (7) and DCTCP (8)"), "{e}");
    }
}

/// The shipped ns-3 example (HPCC's `mix/config.txt` layout) with CC_MODE 3, 7 and 8 and
/// nothing else changed: each imports to its algorithm and table (its keys carried under
/// their rocelab names), loads, and runs every flow to completion. HPCC and TIMELY read no
/// ECN (nothing is marked, no CNP is sent); DCTCP echoes marks on ACKs (no CNP either).
#[test]
fn hpcc_timely_and_dctcp_modes_of_the_shipped_config_import_and_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ns3/mix");
    let text = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let (cfg, topo, flows) = (text("config.txt"), text("topology.txt"), text("flow.txt"));
    for (mode, name, keys) in [
        (3, "hpcc", &["rate_ai_mbps = 50.0  # RATE_AI", "min_rate_mbps = 100.0  # MIN_RATE"][..]),
        (7, "timely", &["rate_ai_mbps = 50.0  # RATE_AI", "rate_hai_mbps = 100.0  # RATE_HAI"][..]),
        (8, "dctcp", &["g = 0.00390625  # EWMA_GAIN"][..]),
    ] {
        let cfg = cfg.replace("CC_MODE 1", &format!("CC_MODE {mode}"));
        let imp = import_str("mix", ("config.txt", &cfg), ("topology.txt", &topo), ("flow.txt", &flows))
            .unwrap_or_else(|e| panic!("CC_MODE {mode}: {e}"));
        let toml = to_toml(&imp.scenario);
        assert!(toml.contains(&format!("congestion_control = \"{name}\"  # CC_MODE {mode}")), "{toml}");
        assert!(toml.contains(&format!("[nic.{name}]")) && !toml.contains("[nic.dcqcn]"), "{toml}");
        for k in keys {
            assert!(toml.contains(k), "CC_MODE {mode}: {k} missing\n{toml}");
        }
        assert!(toml.contains("header_overhead = \"ns3\""));
        let m = load(&imp);
        let nic = &m.nics[0];
        let want = match mode {
            3 => CongestionControl::Hpcc,
            7 => CongestionControl::Timely,
            _ => CongestionControl::Dctcp,
        };
        assert_eq!(nic.congestion_control, want);
        let run = ns3::run(&imp, &m, rocelab_sim::options_from_model(&m)).unwrap();
        assert_eq!(run.report.flows_completed, 4, "CC_MODE {mode}");
        assert_eq!(run.fct.lines().count(), 4);
        let t = &run.report.totals;
        assert_eq!(t.cnp_sent, 0, "CC_MODE {mode}: no CNPs");
        assert_eq!(t.packets_dropped, 0, "CC_MODE {mode}");
        if mode != 8 {
            assert_eq!(t.ecn_marked_packets, 0, "CC_MODE {mode}: not ECN-capable");
        }
        for l in run.fct.lines() {
            let f = fct_fields(l);
            let (fct, ideal): (u64, u64) = (f[6].parse().unwrap(), f[7].parse().unwrap());
            // Never faster than ns-3's standalone time beyond its approximation (it counts one
            // payload per hop where the pipeline pays one frame and the ACK: about 0.5 %).
            assert!(fct * 100 >= ideal * 99, "CC_MODE {mode}: {l}");
        }
    }
}

#[test]
fn enable_qcn_off_means_no_marking() {
    let cfg = star_cfg().replace("ENABLE_QCN 1", "ENABLE_QCN 0");
    let imp = from(&cfg, STAR_TOPO, STAR_FLOWS).unwrap();
    assert!(imp.scenario.ecn_by_speed.is_none());
    let m = load(&imp);
    let roce = &m.qos.classes[m.qos.rdma_class()];
    assert!(roce.ecn_for_speed(100.0).is_none());
}

/// Malformed inputs: `(which file, broken text, "file:line", words in the message)`.
#[test]
fn malformed_inputs_give_line_numbered_errors() {
    let cfg = star_cfg();
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("topo", "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 0.001ms 0\n".into(), "topology.txt:4", "file ends"),
        (
            "topo",
            "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 4 fast 0.001ms 0\n2 4 100Gbps 0.001ms 0\n3 4 100Gbps 0.001ms 0\n"
                .into(),
            "topology.txt:4",
            "`fast` is not an ns-3 data rate",
        ),
        (
            "topo",
            "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 1fortnight 0\n2 4 100Gbps 0.001ms 0\n3 4 100Gbps 0.001ms 0\n"
                .into(),
            "topology.txt:4",
            "not an ns-3 time",
        ),
        ("topo", "5 1 4\n9\n".into(), "topology.txt:2", "switch id 9"),
        (
            "topo",
            "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n2 4 100Gbps 0.001ms 0\n3 4 100Gbps 0.001ms 0\n"
                .into(),
            "topology.txt:4",
            "two hosts",
        ),
        ("topo", "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 7 100Gbps 0.001ms 0\n".into(), "topology.txt:4", "link end 7"),
        ("topo", "x 1 4\n".into(), "topology.txt:1", "`x` is not a valid node count"),
        ("flow", "2\n1 0 3 100 1000 2.0\n".into(), "flow.txt:2", "file ends"),
        ("flow", "1\n4 0 3 100 1000 2.0\n".into(), "flow.txt:2", "source 4 is a switch"),
        ("flow", "1\n1 1 3 100 1000 2.0\n".into(), "flow.txt:2", "to itself"),
        ("flow", "1\n1 0 5 100 1000 2.0\n".into(), "flow.txt:2", "priority 5"),
        ("flow", "1\n1 0 3 100 0 2.0\n".into(), "flow.txt:2", "flow size 0"),
        ("flow", "1\n1 0 3 100 1000 soon\n".into(), "flow.txt:2", "`soon` is not a valid start time"),
        ("flow", "1\n1 9 3 100 1000 2.0\n".into(), "flow.txt:2", "destination 9 is not a node"),
        (
            "cfg",
            cfg.replace("KMAX_MAP 3 25000000000 400", "KMAX_MAP 4 25000000000 400"),
            "config.txt:39",
            "announces 4 entries",
        ),
        ("cfg", cfg.replace(" 100000000000 1600", " 200000000000 1600"), "config.txt:39", "no entry for 100 Gb/s"),
        ("cfg", cfg.replace("RATE_AI 50Mb/s", "RATE_AI fifty"), "config.txt:18", "not an ns-3 data rate"),
        ("cfg", cfg.replace("BUFFER_SIZE 32", "BUFFER_SIZE lots"), "config.txt:42", "BUFFER_SIZE `lots`"),
        (
            "cfg",
            cfg.replace("PACKET_PAYLOAD_SIZE 1000", "PACKET_PAYLOAD_SIZE 100"),
            "config.txt:3",
            "outside 256..=4096",
        ),
        ("cfg", cfg.replace("LINK_DOWN 0 0 0", "LINK_DOWN 5 0 1"), "config.txt:37", "share no link"),
        ("cfg", cfg.replace("LINK_DOWN 0 0 0", "LINK_DOWN 5 0"), "config.txt:37", "LINK_DOWN takes"),
        ("cfg", cfg.replace("LINK_DOWN 0 0 0", "LINK_DOWN 99999999999999999 2 4"), "config.txt:37", "too late"),
        ("cfg", cfg.replace("EWMA_GAIN 0.00390625", "EWMA_GAIN 2"), "config.txt:16", "EWMA_GAIN 2"),
        ("cfg", cfg.replace("RP_TIMER 900\n", ""), "config.txt:", "no RP_TIMER"),
        ("cfg", cfg.replace("CC_MODE 1", "CC_MODE 1 2"), "config.txt:11", "takes one value"),
        ("cfg", cfg.replace("ENABLE_QCN 1", "ENABLE_QCN maybe"), "config.txt:1", "not 0 or 1"),
        ("cfg", cfg.replace("ENABLE_QCN 1", "ENABLE_QCN 1 }"), "config.txt:1", "without its"),
    ];
    for (which, text, at, words) in cases {
        let r = match which {
            "topo" => from(&cfg, &text, STAR_FLOWS),
            "flow" => from(&cfg, STAR_TOPO, &text),
            _ => from(&text, STAR_TOPO, STAR_FLOWS),
        };
        let e = r.err().unwrap_or_else(|| panic!("{which} `{words}` was accepted"));
        assert!(e.contains(at) && e.contains(words), "want {at} / {words}, got:\n{e}");
        assert!(e.contains("help:"), "{e}");
    }
}

#[test]
fn missing_input_files_name_the_paths_tried() {
    let dir = std::env::temp_dir().join(format!("rocelab-import-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.txt");
    std::fs::write(&cfg, star_cfg().replace("mix/star-topology.txt", "mix/nowhere.txt")).unwrap();
    let e = import(&cfg, None, None).unwrap_err().to_string();
    assert!(
        e.contains("config.txt:4")
            && e.contains("TOPOLOGY_FILE `mix/nowhere.txt` not found")
            && e.contains("--topology"),
        "{e}"
    );
    // An override wins over the config's path.
    let imp = import(&cfg, Some(&data("mix/star-topology.txt")), Some(&data("mix/star-flow.txt"))).unwrap();
    assert_eq!(imp.scenario.flows.len(), 3);
    let e = import(&dir.join("none.txt"), None, None).unwrap_err().to_string();
    assert!(e.contains("cannot read"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Seeded mutations of valid inputs: every variant imports or fails with an error; the fabric
/// text of every accepted variant loads or fails with diagnostics. Nothing panics.
#[test]
fn mutated_inputs_never_panic() {
    let cfg = star_cfg();
    let topo = read("mix/fat-topology.txt");
    let flows = read("mix/fat-flow.txt");
    let fat_cfg = read("fat-config.txt");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n.max(1) as u64) as usize
    };
    let junk = [
        "",
        "0",
        "-1",
        "99999999999",
        "18446744073709551615",
        "4294967295",
        "3",
        "1e400",
        "1e300",
        "nan",
        "x",
        "100Gbps",
        "1e300Tbps",
        "0.001ms",
        "1e300h",
        "\u{0}",
        "{",
        "}",
        "\n",
    ];
    for i in 0..2000 {
        let mut parts = [fat_cfg.clone(), topo.clone(), flows.clone()];
        let which = rnd(3);
        let toks: Vec<&str> = parts[which].split(' ').collect();
        let k = rnd(toks.len());
        let mut t: Vec<String> = toks.iter().map(|s| s.to_string()).collect();
        match rnd(3) {
            0 => t[k] = junk[rnd(junk.len())].to_string(),
            1 => {
                t.remove(k);
            }
            _ => t.insert(k, junk[rnd(junk.len())].to_string()),
        }
        parts[which] = t.join(" ");
        if let Ok(imp) = import_str("m", ("c", &parts[0]), ("t", &parts[1]), ("f", &parts[2])) {
            let _ = rocelab_model::load_str("m.toml", &to_toml(&imp.scenario));
        }
        let _ = i;
    }
    let _ = cfg;
}

/// A 1 MiB switch buffer makes the 3:1 incast pause its senders: the PFC file logs every frame
/// the hosts receive, as ns-3 does (host, interface 1, pause then resume).
#[test]
fn pfc_file_logs_received_frames() {
    let cfg = star_cfg().replace("BUFFER_SIZE 32", "BUFFER_SIZE 1");
    let flows = "3\n1 0 3 100 300000 2.0\n2 0 3 100 300000 2.0\n3 0 3 100 300000 2.0\n";
    let imp = from(&cfg, STAR_TOPO, flows).unwrap();
    let m = load(&imp);
    let run = ns3::run(&imp, &m, rocelab_sim::options_from_model(&m)).unwrap();
    assert!(run.report.totals.pfc_pause_frames > 0);
    let lines: Vec<Vec<u64>> = run.pfc.lines().map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect()).collect();
    assert_eq!(lines.len() as u64, run.report.totals.pfc_pause_frames, "every frame sent is received once");
    assert_eq!(lines[0][4], 1, "the first frame is a pause");
    assert!(lines.iter().any(|l| l[4] == 0), "and the senders are resumed");
    let mut last = 0;
    for l in &lines {
        assert_eq!(l.len(), 5);
        assert!(l[0] >= 2_000_000_000 && l[0] >= last, "time-ordered ns after 2 s");
        last = l[0];
        assert!((1..=3).contains(&l[1]), "received by the sending hosts: {l:?}");
        assert_eq!((l[2], l[3]), (0, 1), "host, interface 1");
    }
}

#[test]
fn only_the_announced_links_and_flows_are_read_as_in_ns3() {
    // HPCC's shipped mix/flow.txt declares 2 flows and goes on for 256 lines and some prose.
    let hpcc_flows = std::fs::read_to_string(data("hpcc/flow.txt")).unwrap();
    let topo = format!("{STAR_TOPO}0 4 100Gbps 0.001ms 0\nthis line is not a link\n");
    let imp = from(&star_cfg(), &topo, &hpcc_flows).expect("ns-3 reads only the declared counts");
    let s = &imp.scenario;
    assert_eq!(s.flows.len(), 2);
    assert_eq!(s.links.len(), 4);
    let notes = s.notes.join("\n");
    assert!(notes.contains("announces 4 links; from line 7 on the file is ignored"), "{notes}");
    assert!(notes.contains("announces 2 flows; from line 4 on the file is ignored"), "{notes}");
}

#[test]
fn ns3_imports_have_no_retransmit_timeout_and_take_the_hpcc_window() {
    let plain = from(&star_cfg(), STAR_TOPO, STAR_FLOWS).unwrap();
    assert_eq!(plain.scenario.transport.ack_timeout.as_ref().map(|t| t.0), Some(0));
    assert_eq!(plain.scenario.transport.window_bytes, None);
    let cfg = format!("{}\nHAS_WIN 1\nGLOBAL_T 1\nVAR_WIN 1\n", star_cfg());
    let imp = from(&cfg, STAR_TOPO, STAR_FLOWS).unwrap();
    // The star: every host pair crosses two 100G links of 1 µs. third.cc: rtt = 2 · 2 µs +
    // 2 · (1000 B at 100 Gb/s = 80 ns) = 4.16 µs; bdp = 4.16 µs · 100 Gb/s / 8 = 52,000 B.
    let t = &imp.scenario.transport;
    assert_eq!(t.window_bytes.as_ref().map(|w| w.0), Some(52_000));
    assert_eq!(t.window_scales_with_rate.as_ref().map(|w| w.0), Some(true));
    let toml = to_toml(&imp.scenario);
    assert!(toml.contains("window_bytes = 52000") && toml.contains("ack_timeout = 0"), "{toml}");
}

#[test]
fn hpccs_shipped_fat_tree_and_flow_file_import_and_run() {
    let fat = std::fs::read_to_string(data("hpcc/fat.txt")).unwrap();
    let flows = std::fs::read_to_string(data("hpcc/flow.txt")).unwrap();
    let cfg = star_cfg()
        .replace(
            "KMAX_MAP 3 25000000000 400 40000000000 800 100000000000 1600",
            "KMAX_MAP 2 100000000000 1600 400000000000 6400",
        )
        .replace(
            "KMIN_MAP 3 25000000000 100 40000000000 200 100000000000 400",
            "KMIN_MAP 2 100000000000 400 400000000000 1600",
        )
        .replace(
            "PMAX_MAP 3 25000000000 0.2 40000000000 0.2 100000000000 0.2",
            "PMAX_MAP 2 100000000000 0.2 400000000000 0.2",
        );
    let imp = from(&cfg, &fat, &flows).expect("HPCC's own files import unchanged");
    let s = &imp.scenario;
    assert_eq!(s.nodes.iter().filter(|n| n.is_switch).count(), 56);
    assert_eq!(s.nodes.iter().filter(|n| !n.is_switch).count(), 320);
    assert_eq!(s.links.len(), 480);
    assert_eq!(s.flows.len(), 2, "the 2 flows the first line declares");
    assert!(s.notes.iter().any(|n| n.contains("announces 2 flows")), "{:?}", s.notes);
    assert!(!s.notes.iter().any(|n| n.contains("links; from line")), "fat.txt holds exactly its 480 links");
    // It runs: 20 µs of its two 200 MB flows into host 1, as ns-3 would start them.
    let m = rocelab_model::load_str("fat.toml", &to_toml(s)).unwrap_or_else(|e| panic!("{e}"));
    let mut opts = rocelab_sim::options_from_model(&m);
    opts.duration = Some(rocelab_model::SimTime::from_secs_f64(2.00002));
    let run = ns3::run(&imp, &m, opts).unwrap();
    assert!(run.report.totals.data_packets_delivered > 0);
    assert_eq!(run.report.totals.packets_dropped, 0);
}
