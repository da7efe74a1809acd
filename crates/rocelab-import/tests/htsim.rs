//! htsim connection matrices: parsed field by field, built on the requested network, run;
//! triggers and malformed lines refused with their line number.

use rocelab_import::fabric::to_toml;
use rocelab_import::htsim::{self, import, import_str, parse_cm, Network};
use std::path::{Path, PathBuf};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(p)
}

#[test]
fn cm_fields() {
    let cm = parse_cm("incast.cm", &std::fs::read_to_string(data("incast.cm")).unwrap()).unwrap();
    assert_eq!(cm.nodes, 16);
    assert_eq!(cm.connections.len(), 3);
    let c = &cm.connections[2];
    assert_eq!((c.src, c.dst, c.id, c.start_us, c.size, c.line), (9, 0, Some(3), 10.5, 50_000, 6));
    assert_eq!(cm.priorities_ignored, 1);
}

#[test]
fn fat_tree_network_like_htsim() {
    let s = import(&data("incast.cm"), None, &Network::default()).unwrap();
    // 16 hosts fit a 4-ary fat tree: 8 ToR, 8 agg, 4 core, 48 links.
    assert_eq!(s.nodes.iter().filter(|n| !n.is_switch).count(), 16);
    assert_eq!(s.nodes.iter().filter(|n| n.is_switch).count(), 20);
    assert_eq!(s.links.len(), 48);
    assert!(s.links.iter().all(|l| l.speed_bps == 100_000_000_000 && l.delay_ps == 1_000_000));
    // Host 9 sits under ToR 4 (9 / 2).
    let l = s.links.iter().find(|l| s.nodes[l.a].name == "h9").unwrap();
    assert_eq!(s.nodes[l.b].name, "tor4");
    assert_eq!(s.flows[2].start_ps, 10_500_000);
    assert_eq!((s.flows[2].src, s.flows[2].dst, s.flows[2].size_bytes), (9, 0, 50_000));
    assert_eq!(s.flows[2].origin, "incast.cm:6 id 3");
    assert!(s.notes.iter().any(|n| n.contains("traffic only")));
    let m = rocelab_model::load_str("cm.toml", &to_toml(&s)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.hosts().count(), 16);
    let rep = rocelab_sim::simulate(&m, rocelab_sim::options_from_model(&m)).unwrap();
    assert_eq!(rep.flows_completed, 3);
    assert_eq!(rep.flows[0].src, "h1");
}

#[test]
fn one_switch_network() {
    let net = Network { nodes: Some(20), linkspeed_mbps: 400_000.0, tiers: 1, link_delay_ns: 500.0 };
    let s = import(&data("incast.cm"), None, &net).unwrap();
    assert_eq!(s.nodes.len(), 21);
    assert_eq!(s.links.len(), 20);
    assert!(s.links.iter().all(|l| l.speed_bps == 400_000_000_000 && l.delay_ps == 500_000));
    let m = rocelab_model::load_str("cm.toml", &to_toml(&s)).unwrap_or_else(|e| panic!("{e}"));
    let rep = rocelab_sim::simulate(&m, rocelab_sim::options_from_model(&m)).unwrap();
    assert_eq!(rep.flows_completed, 3);
}

#[test]
fn refusals_and_errors_name_the_line() {
    let head = "Nodes 4\nConnections 1\n";
    let cases = [
        (format!("{head}1->0 id 1 trigger 2 size 10\n"), "x.cm:3", "triggers"),
        (format!("{head}1->0 id 1 start 0 size 10 send_done_trigger 2\n"), "x.cm:3", "triggers"),
        (
            "Nodes 4\nConnections 1\nTriggers 1\n1->0 start 0 size 10\ntrigger id 1 oneshot\n".into(),
            "x.cm:3",
            "triggers",
        ),
        (format!("{head}1->0 start 0 size 0\n"), "x.cm:3", "size 0"),
        (format!("{head}1->7 start 0 size 10\n"), "x.cm:3", "destination 7"),
        (format!("{head}1->1 start 0 size 10\n"), "x.cm:3", "to itself"),
        (format!("{head}1->0 start 0 size 10 colour red\n"), "x.cm:3", "unknown token `colour`"),
        (format!("{head}1->0 size 10\n"), "x.cm:3", "without `start"),
        (format!("{head}1->0 start soon size 10\n"), "x.cm:3", "`soon`"),
        (
            format!("{head}1->0 start 0 size 10\n2->0 start 0 size 10\n"),
            "x.cm:4",
            "`Connections 1` but the file lists 2",
        ),
        ("Connections 1\n1->0 start 0 size 10\n".into(), "x.cm:2", "before the `Nodes N`"),
        (format!("{head}hello\n"), "x.cm:3", "unknown line"),
        ("Nodes many\n".into(), "x.cm:1", "`many`"),
    ];
    for (text, at, words) in cases {
        let e = import_str("x", "x.cm", &text, &Network::default()).unwrap_err().to_string();
        assert!(e.contains(at) && e.contains(words), "want {at} / {words}, got:\n{e}");
    }
    let small = Network { nodes: Some(2), ..Network::default() };
    let e = import_str("x", "x.cm", &format!("{head}1->0 start 0 size 10\n"), &small).unwrap_err().to_string();
    assert!(e.contains("--nodes 2"), "{e}");
    let e = import(&data("incast.cm"), Some(Path::new("fat.topo")), &Network::default()).unwrap_err().to_string();
    assert!(e.contains(".topo files are not imported yet") && e.contains("--nodes"), "{e}");
    let bad = Network { tiers: 4, ..Network::default() };
    assert!(htsim::import(&data("incast.cm"), None, &bad).unwrap_err().to_string().contains("--tiers 4"));
}

#[test]
fn two_tier_network_and_spare_hosts() {
    // 16 hosts need K = 6 (18 hosts): 6 ToRs of 3 hosts, 3 spines; h16, h17 idle.
    let net = Network { tiers: 2, ..Network::default() };
    let s = import(&data("incast.cm"), None, &net).unwrap();
    assert_eq!(s.nodes.iter().filter(|n| !n.is_switch).count(), 18);
    assert_eq!(s.nodes.iter().filter(|n| n.name.starts_with("tor")).count(), 6);
    assert_eq!(s.nodes.iter().filter(|n| n.name.starts_with("spine")).count(), 3);
    assert_eq!(s.links.len(), 18 + 6 * 3);
    assert!(s.notes.iter().any(|n| n.contains("2 more hosts")), "{:?}", s.notes);
    let m = rocelab_model::load_str("cm.toml", &to_toml(&s)).unwrap_or_else(|e| panic!("{e}"));
    let rep = rocelab_sim::simulate(&m, rocelab_sim::options_from_model(&m)).unwrap();
    assert_eq!(rep.flows_completed, 3);
}

/// Seeded mutations of a valid `.cm` file: import returns Ok or an error, never panics.
#[test]
fn mutated_cm_never_panics() {
    let base = std::fs::read_to_string(data("incast.cm")).unwrap();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n.max(1) as u64) as usize
    };
    let junk =
        ["", "0", "-1", "18446744073709551615", "1e300", "nan", "->", "1->", "->2", "trigger", "id", "start", "\n"];
    for _ in 0..2000 {
        let mut t: Vec<String> = base.split(' ').map(str::to_string).collect();
        let k = rnd(t.len());
        match rnd(3) {
            0 => t[k] = junk[rnd(junk.len())].to_string(),
            1 => {
                t.remove(k);
            }
            _ => t.insert(k, junk[rnd(junk.len())].to_string()),
        }
        let net = Network { tiers: 1 + rnd(3) as u32, ..Network::default() };
        if let Ok(s) = import_str("m", "m.cm", &t.join(" "), &net) {
            let _ = rocelab_model::load_str("m.toml", &to_toml(&s));
        }
    }
}

/// An htsim import runs what htsim's RoCE experiments run (main_roce.cpp): PFC on the RoCE
/// class, no ECN marking, no DCQCN, no watchdog; and its comments speak htsim, not ns-3.
#[test]
fn imports_what_htsim_runs_pfc_only() {
    let s = import(&data("incast.cm"), None, &Network::default()).unwrap();
    assert!(!s.dcqcn_on && s.ecn_by_speed.is_none());
    let text = rocelab_import::fabric::to_toml_with(&s, &htsim::DIALECT);
    for ns3_key in ["ENABLE_QCN", "KMIN_MAP", "ns-3", "EWMA_GAIN", "HPCC"] {
        assert!(!text.contains(ns3_key), "an htsim import cites `{ns3_key}`:\n{text}");
    }
    assert!(text.contains("htsim's RoceSrc has no congestion control") && text.contains("htsim has no PFC watchdog"));
    let m = rocelab_model::load_str("cm.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let roce = &m.qos.classes[m.qos.rdma_class()];
    assert!(roce.lossless && roce.ecn.is_none() && roce.ecn_per_speed.is_empty());
    assert_eq!(m.config.nic.congestion_control, Some(rocelab_model::config::CongestionControl::None));
    assert!(!m.config.qos.pfc_watchdog.enabled);
    let rep = rocelab_sim::simulate(&m, rocelab_sim::options_from_model(&m)).unwrap();
    assert_eq!(rep.flows_completed, 3);
    assert_eq!(rep.totals.ecn_marked_packets, 0);
    assert_eq!(rep.totals.cnp_sent, 0);
}
