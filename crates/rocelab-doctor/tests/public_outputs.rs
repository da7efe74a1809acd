//! Verdicts on real public outputs (tests/fixtures/public/, sources in its SOURCE.md): each
//! test is a case where an earlier doctor gave a wrong verdict or dropped data silently.

use rocelab_doctor::diagnose::{diagnose, Diagnosis, Options, Severity};
use rocelab_doctor::drift::Intent;
use rocelab_doctor::parse::{ethtool, nccl, nccl_log};
use rocelab_doctor::snapshot::{Netdev, RdmaPort, Snapshot, SwitchData};
use std::path::PathBuf;

fn public(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/public").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn codes(d: &Diagnosis) -> Vec<(&'static str, Severity)> {
    d.findings.iter().map(|f| (f.code, f.severity)).collect()
}

fn with_nccl(file: &str, opts: Options) -> Diagnosis {
    let runs = nccl::parse(&public(file), Some("all_reduce_perf")).unwrap();
    diagnose(Vec::new(), &Options { extra_nccl: runs, ..opts })
}

#[test]
fn old_layout_error_column_is_not_wrong_results() {
    // `2e-07` in the error column is rounding error within tolerance, not a wrong value: the
    // doctor used to call this healthy log "wrong results" (error, exit 1).
    let runs = nccl::parse(&public("nccl-old-error-column.txt"), Some("all_reduce_perf")).unwrap();
    let r = &runs[0];
    assert_eq!(r.rows.len(), 8);
    assert_eq!(r.rows[1].out_of_place.wrong, None);
    assert_eq!(r.rows[1].out_of_place.max_error, Some(2e-7));
    assert_eq!(r.wrong_rows(), 0);
    let d = with_nccl("nccl-old-error-column.txt", Options::default());
    assert!(!d.findings.iter().any(|f| f.code == "nccl-wrong-results"), "{:?}", codes(&d));
    assert!(!d.has_errors(), "{:?}", codes(&d));
    // The same layout with its summary line: healthy too.
    let d = with_nccl("nccl-small-sizes-ok.txt", Options { node_net_gbps: Some(100.0), ..Options::default() });
    assert!(!d.has_errors(), "{:?}", codes(&d));
    assert_eq!(d.findings.iter().filter(|f| f.code == "nccl-wrong-results").count(), 0);
}

#[test]
fn busbw_below_the_comparable_sizes_is_not_judged() {
    // 21.86 GB/s at 128 MiB on two nodes against 100 Gb/s (12.5 GB/s) used to be judged;
    // sizes below 256 MiB are latency-bound, so there is no verdict, only a note.
    let runs = nccl::parse(&public("nccl-small-sizes-ok.txt"), Some("all_reduce_perf")).unwrap();
    assert_eq!(runs[0].out_of_bounds, Some(0));
    assert_eq!(runs[0].hosts(), vec!["nodeA".to_string(), "nodeB".to_string()]);
    let d = with_nccl("nccl-small-sizes-ok.txt", Options { node_net_gbps: Some(100.0), ..Options::default() });
    assert_eq!(codes(&d), vec![("busbw-not-judged", Severity::Info)]);
    assert!(d.findings[0].message.contains("134,217,728 B is below 268,435,456 B"), "{}", d.findings[0].message);
}

#[test]
fn two_node_tree_busbw_above_the_nic_rate_is_not_a_wrong_reference() {
    // One 100 Gb/s NIC per node = 12.5 GB/s. busbw 21.56 GB/s is 172 % of it, which the
    // doctor called an impossible figure; on two nodes the tree moves only algbw (11.50 GB/s,
    // 92 %) across the network (nccl-tests issue 196).
    let d = with_nccl("nccl-2node-tree.txt", Options { node_net_gbps: Some(100.0), ..Options::default() });
    assert_eq!(codes(&d), vec![("busbw-ok", Severity::Info)]);
    let f = &d.findings[0];
    assert!(f.evidence.iter().any(|e| e.contains("issue 196")), "{:?}", f.evidence);
    // An algbw above the NIC rate is still impossible: against 50 Gb/s (6.25 GB/s), 11.50
    // GB/s is 184 %.
    let d = with_nccl("nccl-2node-tree.txt", Options { node_net_gbps: Some(50.0), ..Options::default() });
    assert_eq!(codes(&d), vec![("busbw-reference", Severity::Warning)]);
    assert!(d.findings[0].message.starts_with("algbw 11.5 GB/s is 184.0%"), "{}", d.findings[0].message);
}

#[test]
fn low_busbw_without_counters_does_not_say_the_counters_are_clean() {
    // Against 200 Gb/s (25 GB/s) the run's 21.56 GB/s is 86 %; against 400 Gb/s it is 43 %
    // (error). No snapshots were given, so nothing can be said about the network counters.
    let d = with_nccl("nccl-2node-tree.txt", Options { node_net_gbps: Some(400.0), ..Options::default() });
    assert_eq!(codes(&d), vec![("busbw-low", Severity::Error)]);
    let v = d.verdict.unwrap();
    assert!(!v.contains("counters are clean"), "{v}");
    assert!(v.contains("no network counters were given for its hosts (node1, node2)"), "{v}");
}

#[test]
fn nccl_warn_lines_become_findings() {
    let log = nccl_log::parse(&public("nccl-ib-completion-error.log"));
    let opts = Options { nccl_log: log, ..Options::default() };
    let d = diagnose(Vec::new(), &opts);
    assert_eq!(codes(&d), vec![("nccl-transport-error", Severity::Error)]);
    let f = &d.findings[0];
    assert_eq!((f.node.as_str(), f.subject.as_str()), ("hostname-test", "IBV_WC_RETRY_EXC_ERR"));
    assert!(f.evidence[0].contains("× 1: NET/IB : Got completion from peer 172.36.143.59<44206> with status=12"));
    assert!(f.evidence[1].contains("IBV_WC_WR_FLUSH_ERR × 2"), "{:?}", f.evidence);
}

#[test]
fn large_nccl_logs_are_streamed() {
    // 12 MiB of INFO lines (over the 8 MiB limit of counter files) with the result table and a
    // WARN at the end: read through, nothing refused.
    let dir = std::env::temp_dir().join(format!("rocelab-doctor-large-{}", std::process::id()));
    let snap = dir.join("gpu01-1");
    std::fs::create_dir_all(snap.join("nccl")).unwrap();
    std::fs::write(snap.join("meta.json"), "{\"host\":\"gpu01\",\"taken_at_unix_ms\":1796204467000}\n").unwrap();
    let mut big = String::new();
    let filler = "gpu01:41000:41000 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n";
    let mut lines = 0usize;
    while big.len() < 12 << 20 {
        big.push_str(filler);
        lines += 1;
    }
    big.push_str(&public("nccl-2node-tree.txt"));
    big.push_str("gpu01:41000:41000 [0] NCCL WARN Call to ibv_modify_qp failed: Connection timed out\n");
    std::fs::write(snap.join("nccl").join("all_reduce_perf.txt"), &big).unwrap();
    let dump = rocelab_doctor::dump::load_dump(&dir, 3).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let s = &dump.snapshots[0];
    assert_eq!(s.nccl.len(), 1);
    assert_eq!(s.nccl[0].rows[0].size_bytes, 1 << 30);
    assert_eq!(s.nccl_log.hosts["gpu01"].net_channels_gdr as usize, lines);
    let d = diagnose(dump.snapshots, &Options { node_net_gbps: Some(100.0), ..Options::default() });
    assert!(d.findings.iter().any(|f| f.code == "nccl-timeout" && f.severity == Severity::Error), "{:?}", codes(&d));
}

fn switch_snap(t_ms: u64, queues: &str, intent_drop: u64) -> Snapshot {
    let mut q = rocelab_doctor::sources::read_path("queue-counters.txt", queues, "leaf1", 3).unwrap();
    for c in &mut q {
        if c.label("queue") == Some("UC3") {
            c.value += intent_drop as f64;
        }
    }
    let mut s =
        Snapshot { host: "leaf1".into(), taken_at_unix_ms: t_ms, origin: "dump/leaf1".into(), ..Default::default() };
    s.switches.insert("leaf1".into(), SwitchData { counters: q });
    s
}

fn lossless_intent() -> Intent {
    Intent { source: "fabric.toml".into(), lossless_queues: [(3u8, 3u8)].into_iter().collect(), ..Intent::default() }
}

#[test]
fn drops_on_a_declared_lossless_queue_are_errors() {
    // sonic-utilities' `queuestat` output, then UC3 +91,786 drops a minute later: on a fabric
    // that declares priority 3 lossless this is an error (exit 1), not a warning.
    let text = public("sonic-queue-counters.txt");
    let snaps = vec![switch_snap(0, &text, 0), switch_snap(60_000, &text, 91_786)];
    let d = diagnose(snaps.clone(), &Options { intent: Some(lossless_intent()), ..Options::default() });
    assert_eq!(codes(&d), vec![("lossless-drops", Severity::Error)]);
    assert!(d.findings[0].message.starts_with("91,786 packets dropped on queue UC3"), "{}", d.findings[0].message);
    assert!(d.has_errors());
    // Without a fabric that declares the class, the same drops are ordinary congestion.
    let d = diagnose(snaps, &Options::default());
    assert_eq!(codes(&d), vec![("switch-drops", Severity::Warning)]);
}

fn eth_snap(t_ms: u64, text: &str) -> Snapshot {
    let mut s =
        Snapshot { host: "gpu01".into(), taken_at_unix_ms: t_ms, origin: "dump/gpu01".into(), ..Default::default() };
    let e = ethtool::parse_stats(text).unwrap();
    s.netdevs.insert("ens3np0".into(), Netdev { name: "ens3np0".into(), ethtool: Some(e), ..Default::default() });
    s
}

#[test]
fn a_pause_flood_without_a_duration_counter_is_found() {
    // 1.3 M pause frames on priority 3 in 60 s; the duration counter went down (reset).
    let a = "NIC statistics:\n     rx_prio3_pause: 100\n     rx_prio3_pause_duration: 90000000\n";
    let b = "NIC statistics:\n     rx_prio3_pause: 1300100\n     rx_prio3_pause_duration: 1200\n";
    let d = diagnose(vec![eth_snap(0, a), eth_snap(60_000, b)], &Options::default());
    assert_eq!(codes(&d), vec![("pause-flood", Severity::Warning)]);
    assert!(
        d.findings[0].message.starts_with("1,300,000 PFC pause frames in 60.0 s (21667/s"),
        "{}",
        d.findings[0].message
    );
    assert!(d.findings[0].evidence[1].contains("reset"), "{:?}", d.findings[0].evidence);
    // No duration counter at all.
    let b = "NIC statistics:\n     rx_prio3_pause: 1300100\n";
    let d = diagnose(
        vec![eth_snap(0, "NIC statistics:\n     rx_prio3_pause: 100\n"), eth_snap(60_000, b)],
        &Options::default(),
    );
    assert_eq!(codes(&d), vec![("pause-flood", Severity::Warning)]);
    // 30,000 frames a minute (500/s) is below the threshold.
    let b = "NIC statistics:\n     rx_prio3_pause: 30100\n";
    let d = diagnose(
        vec![eth_snap(0, "NIC statistics:\n     rx_prio3_pause: 100\n"), eth_snap(60_000, b)],
        &Options::default(),
    );
    assert!(d.findings.is_empty(), "{:?}", codes(&d));
}

#[test]
fn glued_ethtool_outputs_keep_the_first_and_say_so() {
    let one = public("mlx5-cx4lx-pause.txt");
    let glued = format!("{one}{}", one.replace("tx_global_pause: 1266552", "tx_global_pause: 1300000"));
    let e = ethtool::parse_stats(&glued).unwrap();
    assert_eq!(e.get("tx_global_pause"), Some(1_266_552));
    assert_eq!(e.get("tx_global_pause_duration"), Some(555_665_182));
    assert_eq!(e.warnings.len(), 1, "{:?}", e.warnings);
    assert!(e.warnings[0].starts_with("2 `ethtool -S` outputs glued together (a second `NIC statistics:` at line 19)"));
}

#[test]
fn a_renamed_netdev_and_backward_time_are_data_problems() {
    let text = public("mlx5-cx4lx-pause.txt");
    let mut a = eth_snap(60_000, &text);
    a.rdma_ports.insert(
        "mlx5_0/1".into(),
        RdmaPort { device: "mlx5_0".into(), port: 1, netdev: Some("eth0".into()), ..Default::default() },
    );
    a.origin = "dump/gpu01-2".into();
    let mut b = a.clone();
    b.taken_at_unix_ms = 1_000;
    b.origin = "dump/gpu01-3".into();
    let d = diagnose(vec![a, b], &Options::default());
    let msgs: Vec<String> =
        d.data_problems.iter().map(|p| format!("{} {}: {}", p.node, p.subject, p.message)).collect();
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("gpu01 mlx5_0/1: its netdev `eth0` is not among this snapshot's netdevs (ens3np0)")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.starts_with("gpu01 dump/gpu01-3: time goes backwards")), "{msgs:?}");
}

#[test]
fn a_twin_table_without_its_collective_is_named() {
    let twin = nccl::parse(&public("nccl-old-error-column.txt"), None).unwrap().remove(0);
    let real = nccl::parse(&public("nccl-2node-tree.txt"), None).unwrap();
    let d = diagnose(
        Vec::new(),
        &Options { twin: vec![("twin.txt".into(), twin)], extra_nccl: real, ..Options::default() },
    );
    assert_eq!(d.data_problems.len(), 1);
    assert_eq!(d.data_problems[0].subject, "twin.txt");
    assert!(d.data_problems[0].message.contains("no `# Collective test starting:` line"));
    // The real all_reduce run then has no twin to be compared with, and the notes say so.
    assert!(
        d.notes
            .iter()
            .any(|n| n
                == "all_reduce: no twin table for this collective (twin tables given: twin.txt (?)); not compared"),
        "{:?}",
        d.notes
    );
}

#[test]
fn hints_quote_names_and_the_report_escapes_controls() {
    // A dump whose netdev name is a shell command and whose host name carries ANSI escapes.
    let snap = |t: u64, ecn: u64, pause: u64| {
        let mut s = Snapshot {
            host: "\u{1b}[2Jgpu01".into(),
            taken_at_unix_ms: t,
            origin: "dump/x".into(),
            ..Default::default()
        };
        let nd = "eth0;reboot";
        let text = format!("NIC statistics:\n     rx_global_pause: {pause}\n");
        s.netdevs.insert(
            nd.into(),
            Netdev { name: nd.into(), ethtool: Some(ethtool::parse_stats(&text).unwrap()), ..Default::default() },
        );
        let mut p = RdmaPort { device: "mlx5_0".into(), port: 1, netdev: Some(nd.into()), ..Default::default() };
        p.counters.insert("np_ecn_marked_roce_packets".into(), ecn);
        p.counters.insert("np_cnp_sent".into(), 0);
        s.rdma_ports.insert("mlx5_0/1".into(), p);
        s
    };
    let d = diagnose(vec![snap(0, 0, 0), snap(60_000, 5_000, 10)], &Options::default());
    let ecn = d.findings.iter().find(|f| f.code == "ecn-without-cnp").expect("ecn-without-cnp");
    assert!(ecn.hint.contains("`echo 1 > '/sys/class/net/eth0;reboot/ecn/roce_np/enable/3'`"), "{}", ecn.hint);
    let gp = d.findings.iter().find(|f| f.code == "global-pause").expect("global-pause");
    assert!(gp.hint.contains("`ethtool -A 'eth0;reboot' rx off tx off`"), "{}", gp.hint);
    let text = rocelab_doctor::report::human(&d);
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("\\x1b[2Jgpu01"), "{text}");
}

fn cumulus_snap(t_ms: u64, text: &str, roce_priority: u8) -> Snapshot {
    let counters = rocelab_doctor::sources::read_path("roce-counters/swp16.txt", text, "leaf1", roce_priority).unwrap();
    let mut s =
        Snapshot { host: "leaf1".into(), taken_at_unix_ms: t_ms, origin: "dump/leaf1".into(), ..Default::default() };
    s.switches.insert("leaf1".into(), SwitchData { counters });
    s
}

#[test]
fn cumulus_counters_as_published_fill_the_normalized_model() {
    // NVIDIA's published `nv show interface swp16 qos roce counters` prints `applied` and
    // `description` columns beside the value; the doctor used to refuse the file ("expected
    // `number [unit]`"). Its RoCE discards are the RoCE class's own: the 55 non-RoCE rx
    // discards belong to the lossy pool and are not the RoCE queue's.
    let s = cumulus_snap(0, &public("cumulus-roce-counters-swp16.txt"), 3);
    let v = |series: &str| {
        let c = s.switches["leaf1"].counters.iter().find(|c| c.series() == series);
        c.unwrap_or_else(|| panic!("{series} missing from {:#?}", s.switches["leaf1"].counters)).value
    };
    assert_eq!(
        v("rocelab_drops_total{node=\"leaf1\",port=\"swp16\",queue=\"3\",reason=\"buffer\"}"),
        663_060_754_115.0
    );
    assert_eq!(v("rocelab_ecn_marked_packets_total{node=\"leaf1\",port=\"swp16\",queue=\"3\"}"), 693_777_677_344.0);
    assert_eq!(v("rocelab_pfc_pause_frames_total{node=\"leaf1\",port=\"swp16\",priority=\"3\",direction=\"tx\"}"), 0.0);
    // 16.02 MB in NVUE's binary megabytes.
    assert_eq!(
        v("rocelab_buffer_occupancy_bytes{node=\"leaf1\",port=\"swp16\",queue=\"3\",pool=\"egress\",stat=\"peak\"}"),
        16.02 * 1024.0 * 1024.0
    );
}

#[test]
fn cumulus_roce_discards_on_a_declared_lossless_queue_are_errors() {
    // The published counters, then 91 more RoCE tx discards a minute later.
    let text = public("cumulus-roce-counters-swp16.txt");
    let later = text.replace("663060754115", "663060754206");
    let snaps = |p: u8| vec![cumulus_snap(0, &text, p), cumulus_snap(60_000, &later, p)];
    let d = diagnose(snaps(3), &Options { intent: Some(lossless_intent()), ..Options::default() });
    assert_eq!(codes(&d), vec![("lossless-drops", Severity::Error)]);
    assert_eq!((d.findings[0].node.as_str(), d.findings[0].subject.as_str()), ("leaf1", "swp16 3"));
    assert!(d.findings[0].message.starts_with("91 packets dropped on queue 3"), "{}", d.findings[0].message);
    // RoCE on priority 4 (`--roce-priority 4`) while the fabric declares only 3 lossless:
    // ordinary congestion on another queue.
    let d = diagnose(snaps(4), &Options { intent: Some(lossless_intent()), ..Options::default() });
    assert_eq!(codes(&d), vec![("switch-drops", Severity::Warning)]);
    assert_eq!(d.findings[0].subject, "swp16 4");
}

#[test]
fn switch_files_no_source_reads_are_named() {
    let dir = std::env::temp_dir().join(format!("rocelab-doctor-unread-{}", std::process::id()));
    let sw = dir.join("switch").join("leaf1");
    std::fs::create_dir_all(sw.join("roce-counters")).unwrap();
    std::fs::write(dir.join("meta.json"), "{\"host\":\"gpu01\",\"taken_at_unix_ms\":1796204467000}\n").unwrap();
    std::fs::write(sw.join("roce-counters").join("swp16.txt"), public("cumulus-roce-counters-swp16.txt")).unwrap();
    std::fs::write(sw.join("show-version.txt"), "Arista DCS-7050\n").unwrap();
    let dump = rocelab_doctor::dump::load_dump(&dir, 3);
    let _ = std::fs::remove_dir_all(&dir);
    let s = &dump.unwrap().snapshots[0];
    assert!(!s.switches["leaf1"].counters.is_empty());
    let notes: Vec<&String> = s.notes.iter().filter(|n| n.contains("not read")).collect();
    assert_eq!(notes.len(), 1, "{:?}", s.notes);
    assert!(notes[0].contains("switch/leaf1/show-version.txt"), "{}", notes[0]);
}

#[test]
fn switch_pauses_are_judged_by_paused_time_where_the_source_counts_it() {
    // The same rule as on a NIC, on the normalized switch samples: 6 s of the minute paused
    // on swp16's RoCE priority (rx) is a pause-ratio warning; SONiC's frame counters without
    // duration get the frame-rate rule instead (a_pause_flood_without_a_duration_counter_is_found).
    let text = public("cumulus-roce-counters-swp16.txt");
    let later = text
        .replacen("pause-duration             0 ", "pause-duration             6000000 ", 1)
        .replacen("pause-packets              0 ", "pause-packets              175000 ", 1)
        // ECN keeps marking (else the fabric-wide pause-without-ecn rule speaks too).
        .replace("693777677344", "693777687344");
    let d = diagnose(vec![cumulus_snap(0, &text, 3), cumulus_snap(60_000, &later, 3)], &Options::default());
    assert_eq!(codes(&d), vec![("pause-ratio", Severity::Warning)]);
    let f = &d.findings[0];
    assert_eq!((f.node.as_str(), f.subject.as_str()), ("leaf1", "swp16 priority 3 rx"));
    assert!(f.message.starts_with("paused 10.0% of the window"), "{}", f.message);
    assert_eq!(f.evidence[0], "PFC3 rx pause duration +6,000,000 µs over 60.0 s");
}

#[test]
fn nic_per_priority_discards_on_a_declared_lossless_priority_are_errors() {
    // mlx5's per-traffic-class receive-buffer discards (en_stats.c `rx_prio%d_buf_discard`)
    // fill the normalized model on queue 3, like a switch queue's drops.
    let a = "NIC statistics:\n     rx_prio3_buf_discard: 10\n     rx_prio3_cong_discard: 0\n     rx_prio3_marked: 5\n";
    let b =
        "NIC statistics:\n     rx_prio3_buf_discard: 510\n     rx_prio3_cong_discard: 0\n     rx_prio3_marked: 905\n";
    let m = rocelab_doctor::metrics::from_snapshot(&eth_snap(60_000, b));
    assert_eq!(
        m.get("rocelab_drops_total{node=\"gpu01\",port=\"ens3np0\",queue=\"3\",reason=\"buffer\"}"),
        Some(510.0)
    );
    assert_eq!(m.get("rocelab_ecn_marked_packets_total{node=\"gpu01\",port=\"ens3np0\",queue=\"3\"}"), Some(905.0));
    let snaps = vec![eth_snap(0, a), eth_snap(60_000, b)];
    let d = diagnose(snaps.clone(), &Options { intent: Some(lossless_intent()), ..Options::default() });
    assert_eq!(codes(&d), vec![("lossless-drops", Severity::Error)]);
    assert_eq!(d.findings[0].subject, "ens3np0 priority 3");
    assert!(d.findings[0].message.starts_with("the NIC dropped 500 received packets"), "{}", d.findings[0].message);
    // Without a fabric that declares priority 3 lossless: no verdict on these counters alone.
    assert!(diagnose(snaps, &Options::default()).findings.is_empty());
}
