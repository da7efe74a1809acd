//! Each rule on a two-snapshot fixture that triggers it and on a near miss that must not.
//! The fixtures are under tests/fixtures/dumps/ (written by tests/fixtures/make_dumps.py).

use rocelab_doctor::diagnose::{diagnose, Diagnosis, Options, Severity};
use rocelab_doctor::drift::{IntendedHost, Intent};
use rocelab_doctor::dump::load_dump;
use std::path::PathBuf;

fn run_with(scenario: &str, opts: &Options) -> Diagnosis {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps").join(scenario);
    let snaps = load_dump(&p, 3).unwrap_or_else(|e| panic!("{scenario}: {e}")).snapshots;
    diagnose(snaps, opts)
}

fn run(scenario: &str) -> Diagnosis {
    run_with(scenario, &Options { roce_priority: 3, ..Options::default() })
}

fn codes(d: &Diagnosis) -> Vec<(&'static str, Severity)> {
    d.findings.iter().map(|f| (f.code, f.severity)).collect()
}

fn has(d: &Diagnosis, code: &str, sev: Severity) -> bool {
    d.findings.iter().any(|f| f.code == code && f.severity == sev)
}

#[test]
fn healthy_minute_has_no_findings_and_has_rates() {
    let d = run("healthy");
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    assert_eq!(d.windows.len(), 1);
    let w = &d.windows[0];
    assert_eq!(w.interval_s, 60.0);
    let cnp = w
        .rates
        .iter()
        .find(|r| r.series == "rocelab_cnp_sent_total{node=\"gpu01\",port=\"ens3np0\"}")
        .expect("cnp rate");
    assert_eq!(cnp.delta, 290.0);
    assert!((cnp.per_second - 290.0 / 60.0).abs() < 1e-9);
    let util = w.utilization.iter().find(|u| u.series.contains("direction=\"rx\"")).expect("utilization");
    // 1.2e12 bytes in 60 s on 400 Gb/s: 40 %.
    assert!((util.per_second - 0.4).abs() < 1e-9, "{}", util.per_second);
}

#[test]
fn pfc_storm() {
    let d = run("pfc-storm");
    assert!(has(&d, "pfc-storm", Severity::Error), "{:?}", codes(&d));
    let f = d.findings.iter().find(|f| f.code == "pfc-storm").unwrap();
    assert_eq!(f.subject, "ens3np0 priority 3 rx");
    assert!(f.message.contains("75.0%"), "{}", f.message);
    assert!(f.evidence[0].contains("45,000,000 µs"), "{:?}", f.evidence);
    let d = run("pfc-storm-guard");
    assert!(
        d.findings.iter().any(|f| f.code == "pfc-storm" && f.subject == "ens3np0" && f.severity == Severity::Error),
        "{:?}",
        codes(&d)
    );
}

#[test]
fn pause_ratio() {
    let d = run("pause-ratio");
    assert_eq!(codes(&d), vec![("pause-ratio", Severity::Warning)]);
    let d = run("pause-ratio-ok");
    assert!(d.findings.is_empty(), "{:?}", codes(&d));
}

#[test]
fn ecn_marks_without_cnps() {
    let d = run("ecn-without-cnp");
    assert!(has(&d, "ecn-without-cnp", Severity::Error), "{:?}", codes(&d));
    let f = d.findings.iter().find(|f| f.code == "ecn-without-cnp").unwrap();
    assert!(f.evidence.iter().any(|e| e.contains("ecn/roce_np/enable: on for priorities []")), "{:?}", f.evidence);
    // The hint names the netdev and the port's PFC priority (mlnx_qos: priority 3).
    assert!(f.hint.contains("echo 1 > /sys/class/net/ens3np0/ecn/roce_np/enable/3"), "{}", f.hint);
    assert!(run("ecn-without-cnp-ok").findings.is_empty());
}

#[test]
fn cnps_not_handled() {
    let d = run("cnp-not-handled");
    assert!(has(&d, "cnp-not-handled", Severity::Error), "{:?}", codes(&d));
    assert!(run("cnp-not-handled-ok").findings.is_empty());
}

#[test]
fn pauses_without_ecn() {
    let d = run("pause-without-ecn");
    assert_eq!(codes(&d), vec![("pause-without-ecn", Severity::Warning)]);
    let f = &d.findings[0];
    assert!(f.message.starts_with("101,000 PFC pause frames"), "{}", f.message);
    assert!(f.evidence[0].starts_with("gpu01 ens3np0 priority 3 rx: +60,000"), "{:?}", f.evidence);
    assert!(run("pause-without-ecn-ok").findings.is_empty());
}

#[test]
fn nic_out_of_buffer() {
    let d = run("nic-buffer-drops");
    assert_eq!(codes(&d), vec![("nic-buffer-drops", Severity::Error)]);
    assert!(d.findings[0].evidence.iter().any(|e| e.contains("rx_buffer_passed_thres_phy +310")));
    assert!(run("nic-buffer-drops-ok").findings.is_empty());
}

#[test]
fn retransmissions_in_a_lossless_class() {
    let d = run("retransmissions");
    assert_eq!(codes(&d), vec![("retransmissions", Severity::Error)]);
    let f = &d.findings[0];
    assert!(f.message.starts_with("2,309 retransmission"), "{}", f.message);
    assert!(f.evidence.contains(&"out_of_sequence +2,210".to_string()), "{:?}", f.evidence);
    assert!(run("retransmissions-ok").findings.is_empty());
}

#[test]
fn link_flaps_and_crc_errors() {
    let d = run("link-flap");
    assert_eq!(codes(&d), vec![("link-flap", Severity::Error), ("link-errors", Severity::Warning)]);
    assert!(d.findings[1].message.contains("37 CRC, 410 symbol"), "{}", d.findings[1].message);
    assert!(run("link-flap-ok").findings.is_empty());
}

#[test]
fn firmware_mix_across_hosts() {
    let d = run("firmware-mix");
    assert_eq!(codes(&d), vec![("firmware-mix", Severity::Warning)]);
    assert_eq!(d.findings[0].evidence, vec!["28.36.1010: gpu02".to_string(), "28.39.1002: gpu01".to_string()]);
    assert!(run("firmware-mix-ok").findings.is_empty());
}

#[test]
fn switch_queue_drops() {
    let d = run("switch-drops");
    assert_eq!(codes(&d), vec![("switch-drops", Severity::Warning)]);
    assert_eq!((d.findings[0].node.as_str(), d.findings[0].subject.as_str()), ("leaf1", "Ethernet4 UC3"));
    let d = run("switch-drops-ok");
    assert!(d.findings.is_empty(), "{:?}", codes(&d));
    // The switch's pause frames are rates too.
    let w = &d.windows[0];
    assert!(w.rates.iter().any(|r| r.series
        == "rocelab_pfc_pause_frames_total{node=\"leaf1\",port=\"Ethernet0\",priority=\"3\",direction=\"rx\"}"
        && r.delta == 9_000.0));
}

#[test]
fn busbw_against_the_line_rate() {
    // 8 × 400 Gb/s per node = 400 GB/s expected.
    let opts = Options { node_net_gbps: Some(3200.0), roce_priority: 3, ..Options::default() };
    let d = run_with("busbw-low", &opts);
    assert_eq!(codes(&d), vec![("busbw-low", Severity::Error)]);
    let v = d.verdict.as_deref().unwrap();
    assert!(v.contains("network counters are clean"), "{v}");
    let d = run_with("busbw-ok", &opts);
    assert_eq!(codes(&d), vec![("busbw-ok", Severity::Info)]);
    assert!(d.verdict.as_deref().unwrap().contains("delivers its line rate"));
}

#[test]
fn busbw_low_with_network_trouble_points_at_the_network() {
    let opts = Options { node_net_gbps: Some(3200.0), roce_priority: 3, ..Options::default() };
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps");
    let mut snaps = load_dump(&base.join("busbw-low"), 3).unwrap().snapshots;
    snaps.retain(|s| s.host == "gpu02");
    snaps.extend(load_dump(&base.join("pfc-storm"), 3).unwrap().snapshots);
    let nccl = load_dump(&base.join("busbw-low"), 3).unwrap().snapshots.into_iter().flat_map(|s| s.nccl).collect();
    let d = diagnose(snaps, &Options { extra_nccl: nccl, ..opts });
    assert!(has(&d, "busbw-low", Severity::Error), "{:?}", codes(&d));
    assert!(d.verdict.as_deref().unwrap().contains("likely the network"), "{:?}", d.verdict);
}

#[test]
fn busbw_expectation_counts_every_nic_the_nccl_log_lists() {
    // Issue 16: the dumps hold one 400 Gb/s NIC per host, the log lists eight
    // (`NET/IB : Using [0]mlx5_0 ... [7]mlx5_7`); the expected figure was 50 GB/s and
    // 171 GB/s read "342.5 % ... delivers its line rate" with exit 0.
    let d = run("busbw-low");
    assert_eq!(codes(&d), vec![("busbw-low", Severity::Error)]);
    let f = &d.findings[0];
    assert!(f.message.contains("is 42.8% of the expected 400.0 GB/s"), "{}", f.message);
    assert!(f.evidence.iter().any(|e| e.starts_with("NCCL log: 8 NIC(s) per node")), "{:?}", f.evidence);
    assert!(f.evidence.iter().any(|e| e.contains("the snapshots hold 1 of the 8 NICs")), "{:?}", f.evidence);
    let d = run("busbw-ok");
    assert_eq!(codes(&d), vec![("busbw-ok", Severity::Info)]);
    assert!(d.findings[0].evidence[1].contains("3200 Gb/s per node from 8 NIC(s) at the speeds in the snapshots"));
}

#[test]
fn busbw_far_above_line_rate_is_an_inconsistent_reference_never_ok() {
    // The same run against a reference of one NIC per node (what the old code derived).
    let opts = Options { node_net_gbps: Some(400.0), ..Options::default() };
    let d = run_with("busbw-low", &opts);
    assert_eq!(codes(&d), vec![("busbw-reference", Severity::Warning)]);
    // Two nodes of an all-reduce: the ceiling is algbw (171.25 GB/s busbw / (2·15/16) = 91.3 GB/s).
    assert!(
        d.findings[0].message.contains("algbw 91.3 GB/s is 182.7% of the expected 50.0 GB/s"),
        "{}",
        d.findings[0].message
    );
    let v = d.verdict.as_deref().unwrap();
    assert!(v.contains("cannot judge") && !v.contains("delivers its line rate"), "{v}");
    // A loose log (no snapshots) and a fabric file that does not list the test's hosts: its
    // default profile's line rate times the log's eight NICs, said in the evidence.
    let mut i = intent();
    i.default.line_rate_gbps = Some(100.0);
    i.hosts.insert("other01".into(), i.default.clone());
    let opts = Options {
        intent: Some(i),
        extra_nccl: nccl_fixture("nccl-all_reduce.txt", "all_reduce"),
        ..Options::default()
    };
    let d = diagnose(Vec::new(), &opts);
    let f = d.findings.iter().find(|f| f.code.starts_with("busbw")).unwrap();
    assert!(f.evidence.iter().any(|e| e.contains("does not list the test's hosts")), "{:?}", f.evidence);
    assert!(f.evidence[1].contains("800 Gb/s per node from 8 NIC(s) from the NCCL log"), "{:?}", f.evidence);
    // 371.6 GB/s against 100 GB/s: the reference is inconsistent, not "OK".
    assert_eq!(f.code, "busbw-reference");
}

fn intent() -> Intent {
    let host = IntendedHost {
        profile: "default".into(),
        trust: Some("dscp".into()),
        dscp_to_priority: [(26u8, 3u8), (48, 6)].into_iter().collect(),
        pfc_priorities: Some([3u8].into_iter().collect()),
        ecn_np_priorities: Some([3u8].into_iter().collect()),
        ecn_rp_priorities: Some([3u8].into_iter().collect()),
        cnp_dscp: Some(48),
        cnp_priority: Some(6),
        roce_mtu: Some(4096),
        firmware: Some("28.39.1002".into()),
        dcqcn: [("roce_rp/rpg_ai_rate".to_string(), 5i64), ("roce_np/min_time_between_cnps".to_string(), 4)]
            .into_iter()
            .collect(),
        line_rate_gbps: Some(400.0),
    };
    Intent {
        source: "fabric.toml".into(),
        default: host,
        hosts: Default::default(),
        nics_per_node: Some(1),
        fabric_hash: None,
        lossless_queues: [(3u8, 3u8)].into_iter().collect(),
    }
}

#[test]
fn drift_from_the_intended_config() {
    let opts = Options { intent: Some(intent()), roce_priority: 3, ..Options::default() };
    let d = run_with("drift", &opts);
    let got: Vec<&str> = d.findings.iter().map(|f| f.code).collect();
    assert_eq!(
        got,
        vec![
            "drift-cnp",
            "drift-dscp-map",
            "drift-ecn-np",
            "drift-mtu",
            "drift-pfc",
            "drift-trust",
            "drift-dcqcn",
            "drift-firmware"
        ]
    );
    let map = d.findings.iter().find(|f| f.code == "drift-dscp-map").unwrap();
    assert_eq!(map.evidence[0], "DSCP 26 -> priority 0 (want 3)");
    let mtu = d.findings.iter().find(|f| f.code == "drift-mtu").unwrap();
    assert!(mtu.message.contains("RoCE MTU of 1024"), "{}", mtu.message);
    let d = run_with("drift-ok", &opts);
    assert!(d.findings.is_empty(), "{:?}", codes(&d));
}

#[test]
fn output_is_deterministic() {
    let a = rocelab_doctor::report::json(&run("pause-without-ecn"));
    let b = rocelab_doctor::report::json(&run("pause-without-ecn"));
    assert_eq!(a, b);
    let h = rocelab_doctor::report::human(&run("pfc-storm"));
    assert!(h.contains("error[pfc-storm] gpu01 ens3np0 priority 3 rx: paused 75.0% of the window"), "{h}");
}

#[test]
fn cumulus_watchdog_deadlock_and_discards() {
    let d = run("cumulus-deadlock");
    assert_eq!(codes(&d), vec![("pfc-storm", Severity::Error), ("switch-drops", Severity::Warning)]);
    assert_eq!((d.findings[0].node.as_str(), d.findings[0].subject.as_str()), ("leaf2", "swp1"));
    assert!(d.findings[0].message.contains("1 deadlock(s) on priority 3"), "{}", d.findings[0].message);
    // The RoCE class's discards (tx-roce-stats), on the RoCE queue, read through the
    // normalized model like any other source's queue drops.
    assert_eq!(d.findings[1].subject, "swp1 3");
    assert!(d.findings[1].message.starts_with("120 packets dropped on egress queue 3"), "{}", d.findings[1].message);
    let d = run("cumulus-deadlock-ok");
    assert!(d.findings.is_empty(), "{:?}", codes(&d));
}

#[test]
fn a_counter_that_went_down_is_a_reset_not_a_finding() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/retransmissions");
    let mut snaps = load_dump(&p, 3).unwrap().snapshots;
    snaps.sort_by_key(|s| s.taken_at_unix_ms);
    // The driver was reloaded between the snapshots: out_of_sequence restarted from zero.
    snaps[1].rdma_ports.get_mut("mlx5_0/1").unwrap().counters.insert("out_of_sequence".into(), 4);
    let d = diagnose(snaps, &Options::default());
    assert_eq!(d.windows[0].resets, vec!["mlx5_0/1 out_of_sequence".to_string()]);
    let f = d.findings.iter().find(|f| f.code == "retransmissions").unwrap();
    assert!(!f.evidence.iter().any(|e| e.starts_with("out_of_sequence")), "{:?}", f.evidence);
    assert!(f.message.starts_with("99 retransmission"), "{}", f.message);
}

#[test]
fn receive_wqe_starvation_is_a_host_warning() {
    let d = run("rx-no-wqe");
    assert_eq!(codes(&d), vec![("rx-no-wqe", Severity::Warning)]);
    assert!(d.findings[0].evidence[0].starts_with("out_of_buffer +5,000"), "{:?}", d.findings[0].evidence);
    // The near miss is the healthy minute (out_of_buffer unchanged).
    assert!(!has(&run("healthy"), "rx-no-wqe", Severity::Warning));
}

#[test]
fn exhausted_retries() {
    let d = run("retry-exhausted");
    assert_eq!(codes(&d), vec![("retry-exhausted", Severity::Error)]);
    assert!(!has(&run("healthy"), "retry-exhausted", Severity::Error));
}

fn nccl_fixture(name: &str, op: &str) -> Vec<rocelab_doctor::parse::nccl::NcclRun> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parsers").join(name);
    rocelab_doctor::parse::nccl::parse(&std::fs::read_to_string(p).unwrap(), Some(op)).unwrap()
}

#[test]
fn nccl_wrong_results_and_single_node_runs() {
    let mut runs = nccl_fixture("nccl-all_reduce.txt", "all_reduce");
    runs[0].rows[2].in_place.as_mut().unwrap().wrong = Some(3);
    let opts = Options { extra_nccl: runs, node_net_gbps: Some(3200.0), ..Options::default() };
    let d = diagnose(Vec::new(), &opts);
    assert!(has(&d, "nccl-wrong-results", Severity::Error), "{:?}", codes(&d));
    let clean = Options {
        extra_nccl: nccl_fixture("nccl-all_reduce.txt", "all_reduce"),
        node_net_gbps: Some(3200.0),
        ..Options::default()
    };
    assert!(!has(&diagnose(Vec::new(), &clean), "nccl-wrong-results", Severity::Error));
    // One host: NVLink, not the network.
    let single = Options {
        extra_nccl: nccl_fixture("nccl-all_gather-old.txt", "all_gather_perf"),
        node_net_gbps: Some(800.0),
        ..Options::default()
    };
    let d = diagnose(Vec::new(), &single);
    assert_eq!(codes(&d), vec![("single-node", Severity::Info)]);
    assert_eq!(d.findings[0].node, "dgx01");
}

#[test]
fn drift_hints_carry_the_wanted_values() {
    // A fabric that wants PCP trust and PFC on priority 4 (issue 16: the hints were the
    // literals `--trust dscp` and `--pfc 0,0,0,1,0,0,0,0` whatever the fabric said).
    let mut i = intent();
    i.default.trust = Some("pcp".into());
    i.default.pfc_priorities = Some([4u8].into_iter().collect());
    i.default.ecn_np_priorities = Some([4u8].into_iter().collect());
    i.default.cnp_dscp = Some(40);
    let opts = Options { intent: Some(i), roce_priority: 3, ..Options::default() };
    let d = run_with("drift-ok", &opts);
    let hint = |code: &str| d.findings.iter().find(|f| f.code == code).map(|f| f.hint.clone()).unwrap_or_default();
    assert!(hint("drift-trust").contains("mlnx_qos -i ens3np0 --trust pcp"), "{}", hint("drift-trust"));
    assert!(hint("drift-pfc").contains("mlnx_qos -i ens3np0 --pfc 0,0,0,0,1,0,0,0"), "{}", hint("drift-pfc"));
    let np = hint("drift-ecn-np");
    assert!(np.contains("echo 1 > /sys/class/net/ens3np0/ecn/roce_np/enable/4"), "{np}");
    assert!(np.contains("echo 0 > /sys/class/net/ens3np0/ecn/roce_np/enable/3"), "{np}");
    assert!(
        hint("drift-cnp").contains("echo 40 > /sys/class/net/ens3np0/ecn/roce_np/cnp_dscp"),
        "{}",
        hint("drift-cnp")
    );
    // The drifted dump under the usual fabric: the DSCP map hint names the code point.
    let d = run_with("drift", &Options { intent: Some(intent()), ..Options::default() });
    let map = d.findings.iter().find(|f| f.code == "drift-dscp-map").unwrap();
    assert!(map.hint.contains("mlnx_qos -i ens3np0 --dscp2prio set,26,3"), "{}", map.hint);
    let knobs = d.findings.iter().find(|f| f.code == "drift-dcqcn").unwrap();
    assert!(knobs.hint.contains("echo 5 > /sys/class/net/ens3np0/ecn/roce_rp/rpg_ai_rate"), "{}", knobs.hint);
}

fn problems(d: &Diagnosis) -> Vec<String> {
    d.data_problems.iter().map(|p| format!("{} {}: {}", p.node, p.subject, p.message)).collect()
}

#[test]
fn impossible_counters_are_corrupt_data_not_findings() {
    // rx_prio3_pause_duration +1.8e19 µs in 60 s and np_ecn_marked_roce_packets at u64::MAX
    // (issue 16: "paused 100 %" and 3e17 marks/s).
    let d = run("corrupt-counters");
    assert!(d.findings.is_empty(), "{:?}", codes(&d));
    let p = problems(&d);
    assert!(
        p.iter().any(|m| m.starts_with("gpu01 ens3np0: rx_prio3_pause_duration reads") && m.contains("not used")),
        "{p:?}"
    );
    assert!(p.iter().any(|m| m.starts_with("gpu01 mlx5_0/1: np_ecn_marked_roce_packets reads")), "{p:?}");
    let w = &d.windows[0];
    assert!(!w.rates.iter().any(|r| r.series.starts_with("rocelab_ecn_marked_packets_total")), "{:?}", w.rates);
    assert!(!w.rates.iter().any(|r| r.series.starts_with("rocelab_pfc_paused_seconds_total")), "{:?}", w.rates);
    let h = rocelab_doctor::report::human(&d);
    assert!(h.contains("data problems (2)"), "{h}");
    assert!(h.contains("no findings in the data that could be used"), "{h}");
    assert!(h.contains(", 2 data problem(s)"), "{h}");
    // A duration above the window that is not near 2^64 is caught by the window bound.
    let mut snaps = load_dump(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/healthy"), 3)
        .unwrap()
        .snapshots;
    snaps.sort_by_key(|s| s.taken_at_unix_ms);
    let e = snaps[1].netdevs.get_mut("ens3np0").unwrap().ethtool.as_mut().unwrap();
    e.counters.insert("rx_prio3_pause_duration".into(), 90_000_000);
    let d = diagnose(snaps, &Options::default());
    assert!(!has(&d, "pfc-storm", Severity::Error), "{:?}", codes(&d));
    assert!(problems(&d).iter().any(|m| m.contains("more time than the 60.0 s window")), "{:?}", problems(&d));
}

#[test]
fn a_second_snapshot_cut_short_or_missing_is_said() {
    // The pause-ratio scenario with the second ethtool -S cut mid-line: the duration counter
    // is gone, so the warning cannot be given, and the report says why.
    let d = run("ethtool-cut");
    assert!(!has(&d, "pause-ratio", Severity::Warning), "{:?}", codes(&d));
    let p = problems(&d);
    assert!(
        p.iter().any(|m| m.contains("ethtool -S counter(s) of the first snapshot are missing")
            && m.contains("rx_prio3_pause_duration")),
        "{p:?}"
    );
    assert!(d.notes.iter().any(|n| n.contains("ethtool-S.txt: line") && n.contains("is cut short")), "{:?}", d.notes);
    // The same cut in the first snapshot is said from the other side.
    let mut snaps = load_dump(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/pause-ratio"), 3)
        .unwrap()
        .snapshots;
    snaps.sort_by_key(|s| s.taken_at_unix_ms);
    snaps[0].netdevs.get_mut("ens3np0").unwrap().ethtool.as_mut().unwrap().counters.remove("rx_prio3_pause_duration");
    let d2 = diagnose(snaps, &Options::default());
    assert!(!has(&d2, "pause-ratio", Severity::Warning), "{:?}", codes(&d2));
    assert!(
        problems(&d2)
            .iter()
            .any(|m| m.contains("of the last snapshot are missing") && m.contains("rx_prio3_pause_duration")),
        "{:?}",
        problems(&d2)
    );
    let d = run("ethtool-missing");
    let p = problems(&d);
    assert!(
        p.iter().any(|m| m.starts_with("gpu01 ens3np0: ethtool -S is in") && m.contains("rules did not run")),
        "{p:?}"
    );
    assert!(!rocelab_doctor::report::human(&d).contains("\nno findings\n"));
}

#[test]
fn a_directory_without_meta_json_is_reported() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/no-meta");
    let dump = load_dump(&p, 3).unwrap();
    assert_eq!(dump.snapshots.len(), 2);
    assert_eq!(dump.skipped.len(), 1);
    assert!(dump.skipped[0].subject.ends_with("gpu01-1796204587000"), "{:?}", dump.skipped);
    let d = diagnose(dump.snapshots, &Options { skipped_inputs: dump.skipped, ..Options::default() });
    assert!(problems(&d)[0].contains("skipped: no meta.json"), "{:?}", problems(&d));
}

#[test]
fn a_duplicated_counter_line_is_reported() {
    let d = run("duplicate-counter");
    assert!(d.findings.is_empty(), "{:?}", codes(&d));
    assert!(
        d.notes.iter().any(|n| n.contains("counter `rx_discards_phy` is printed twice with different values")),
        "{:?}",
        d.notes
    );
}

#[test]
fn grep_pause_copies_are_read() {
    let d = run("grep-pause");
    assert!(has(&d, "pfc-storm", Severity::Error), "{:?}", codes(&d));
    assert!(d.notes.iter().any(|n| n.contains("no `NIC statistics:` header")), "{:?}", d.notes);
    // Only pause counters in the copies: nothing else is reported missing.
    assert!(d.data_problems.is_empty(), "{:?}", problems(&d));
}

#[test]
fn global_pause_is_a_finding() {
    let d = run("global-pause");
    assert_eq!(codes(&d), vec![("global-pause", Severity::Error)]);
    assert_eq!(d.findings[0].subject, "ens3np0 tx");
    assert!(d.findings[0].message.contains("for 50.0% of the window"), "{}", d.findings[0].message);
    assert!(run("global-pause-ok").findings.is_empty(), "{:?}", codes(&run("global-pause-ok")));
}

fn finding_of<'a>(d: &'a Diagnosis, code: &str, node: &str) -> &'a rocelab_doctor::diagnose::Finding {
    d.findings
        .iter()
        .find(|f| f.code == code && f.node == node)
        .unwrap_or_else(|| panic!("no {code} on {node}: {:?}", codes(d)))
}

#[test]
fn gpudirect_path_far_nics_rails_and_gdr() {
    let d = run("gpudirect");
    // gpu01: aligned, nvidia_peermem, channels via GDRDMA; gpu02: NIC3 moved, NIC names in
    // another order, no peer-memory module, channels without GDRDMA.
    let ok = finding_of(&d, "gpudirect", "gpu01");
    assert!(ok.message.contains("nvidia-peermem"), "{}", ok.message);
    let none = finding_of(&d, "gpudirect", "gpu02");
    assert!(none.message.starts_with("no GPUDirect RDMA mechanism seen"), "{}", none.message);
    let far = finding_of(&d, "gpu-nic-far", "gpu02");
    assert_eq!(far.evidence.len(), 1, "{:?}", far.evidence);
    assert!(
        far.evidence[0].starts_with("GPU7: nearest NIC") && far.evidence[0].contains("is NODE"),
        "{:?}",
        far.evidence
    );
    let shared = finding_of(&d, "rail-misaligned", "gpu02");
    assert!(shared.evidence[0] == "mlx5_2 is nearest to GPU2, GPU3", "{:?}", shared.evidence);
    let across: Vec<&str> = d
        .findings
        .iter()
        .filter(|f| f.code == "rail-misaligned" && f.node == "fabric")
        .map(|f| f.subject.as_str())
        .collect();
    assert_eq!(across, vec!["GPU0", "GPU1", "GPU3"]);
    let gdr = finding_of(&d, "gdr-not-used", "gpu02");
    assert!(gdr.evidence[0].contains("16 without GDRDMA, 0 with"), "{:?}", gdr.evidence);
    assert!(gdr.hint.contains("load nvidia_peermem"), "{}", gdr.hint);
    assert!(!d.findings.iter().any(|f| f.node == "gpu01" && f.code != "gpudirect"), "{:?}", codes(&d));
    // Near miss: both nodes aligned and using GDR: only the two info lines.
    let d = run("gpudirect-ok");
    assert_eq!(codes(&d), vec![("gpudirect", Severity::Info), ("gpudirect", Severity::Info)]);
}

#[test]
fn nccl_over_sockets_is_an_error() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parsers/nccl-info-socket.txt");
    let log = rocelab_doctor::parse::nccl_log::parse(&std::fs::read_to_string(p).unwrap());
    let d = diagnose(Vec::new(), &Options { nccl_log: log, ..Options::default() });
    assert_eq!(codes(&d), vec![("nccl-socket-fallback", Severity::Error)]);
    assert_eq!(d.findings[0].node, "gpu03");
    let d = run("gpudirect-ok");
    assert!(!has(&d, "nccl-socket-fallback", Severity::Error));
}

#[test]
fn corrupt_switch_counters_are_data_problems_too() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps/cumulus-deadlock-ok");
    let mut snaps = load_dump(&p, 3).unwrap().snapshots;
    snaps.sort_by_key(|s| s.taken_at_unix_ms);
    // The Cumulus RoCE discards, as the normalized model holds them.
    let counters = &mut snaps[1].switches.get_mut("leaf2").unwrap().counters;
    let drops =
        counters.iter_mut().find(|c| c.name == "rocelab_drops_total" && c.label("port") == Some("swp1")).unwrap();
    drops.value = 1.8e19;
    let d = diagnose(snaps, &Options::default());
    assert!(!has(&d, "switch-drops", Severity::Warning), "{:?}", codes(&d));
    assert!(
        problems(&d)
            .iter()
            .any(|m| m.starts_with("leaf2 swp1:") && m.contains("3 Drop/pkts") && m.contains("near 2^64")),
        "{:?}",
        problems(&d)
    );
}
