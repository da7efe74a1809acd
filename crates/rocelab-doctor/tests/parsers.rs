//! Every parser on its realistic fixture and on a malformed one (which must name the line).

use rocelab_doctor::parse::{cumulus, ethtool, mlnx_qos, nccl, rdma, sonic};
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parsers").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn dump_file(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dumps").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn ethtool_stats_mlx5() {
    let s = ethtool::parse_stats(&dump_file("healthy/gpu01-1796204467000/netdev/ens3np0/ethtool-S.txt")).unwrap();
    assert_eq!(s.get("rx_prio3_pause"), Some(41_927));
    assert_eq!(s.get("rx_prio3_pause_duration"), Some(8_134));
    assert_eq!(s.get("tx_pause_storm_error_events"), Some(0));
    assert_eq!(s.pause_priorities(), vec![3]);
    assert!(s.counters.len() > 60);
    let bad = "NIC statistics:\n     rx_packets: 12\n     rx_bytes 99\n";
    let e = ethtool::parse_stats(bad).unwrap_err();
    assert_eq!((e.line, e.source.as_str()), (3, "ethtool -S"));
    // Counter lines without the header: a filtered copy, read and said to be one.
    assert!(ethtool::parse_stats("     rx_packets: 1\n").unwrap().filtered);
    assert_eq!(ethtool::parse_stats("rx_packets 1\n").unwrap_err().line, 1);
}

#[test]
fn ethtool_driver_info() {
    let d = ethtool::parse_driver_info(&fixture("ethtool-i.txt")).unwrap();
    assert_eq!(d.driver, "mlx5_core");
    assert_eq!(d.firmware(), "28.39.1002");
    assert_eq!(d.board_id(), Some("MT_0000000834"));
    assert_eq!(d.bus_info, "0000:17:00.0");
    let e = ethtool::parse_driver_info(&fixture("ethtool-i-malformed.txt")).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn hw_counters_directory() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dumps/healthy/gpu01-1796204467000/rdma/mlx5_0/1/hw_counters");
    let c = rdma::read_hw_counters(&dir).unwrap();
    assert_eq!(c["np_cnp_sent"], 4_977);
    assert_eq!(c["np_ecn_marked_roce_packets"], 5_121);
    assert!(!c.contains_key("lifespan"), "lifespan is a setting, not a counter");
    // A malformed counter file names itself.
    let tmp = std::env::temp_dir().join(format!("rocelab-hw-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("np_cnp_sent"), "12\n").unwrap();
    std::fs::write(tmp.join("out_of_sequence"), "twelve\n").unwrap();
    let e = rdma::read_hw_counters(&tmp).unwrap_err();
    assert!(e.source.ends_with("out_of_sequence") && e.line == 1, "{e}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn rdma_statistic_show() {
    let v = rdma::parse_statistic_show(&fixture("rdma-statistic.txt")).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].device.as_str(), v[0].port), ("mlx5_0", 1));
    assert_eq!(v[0].counters["np_cnp_sent"], 4_977);
    assert_eq!(v[1].counters["rp_cnp_handled"], 3_980);
    let e = rdma::parse_statistic_show(&fixture("rdma-statistic-malformed.txt")).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn mlnx_qos_output() {
    let q = mlnx_qos::parse(&fixture("mlnx_qos.txt")).unwrap();
    assert_eq!(q.trust.as_deref(), Some("dscp"));
    assert_eq!(q.dscp_to_priority.len(), 64);
    assert_eq!(q.dscp_to_priority[&26], 3);
    assert_eq!(q.dscp_to_priority[&48], 6);
    assert_eq!(q.pfc_enabled.as_ref().map(|s| s.iter().copied().collect::<Vec<_>>()), Some(vec![3]));
    assert_eq!(q.prio_to_buffer, Some(vec![0, 0, 0, 1, 0, 0, 0, 0]));
    assert_eq!(q.receive_buffer_bytes[0], 130_944);
    assert_eq!(q.tcs[&0].priorities, vec![0, 1, 2]);
    assert_eq!(q.tcs[&6].tsa, "strict");
    assert_eq!(q.tcs[&3].bw_percent, Some(50));
    let e = mlnx_qos::parse(&fixture("mlnx_qos-malformed.txt")).unwrap_err();
    assert_eq!(e.line, 17, "{e}");
}

#[test]
fn host_sysfs_tree() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dumps/healthy/gpu01-1796204467000/netdev/ens3np0/sysfs");
    let h = rocelab_doctor::parse::sysfs::read_netdev_dir(&dir).unwrap();
    assert_eq!(h.trust.as_deref(), Some("dscp"));
    assert_eq!(h.ecn_np_enabled.get(&3), Some(&true));
    assert_eq!(h.ecn_rp_enabled.get(&0), Some(&false));
    assert_eq!(h.np_params["cnp_dscp"], 48);
    assert_eq!(h.rp_params["rpg_ai_rate"], 5);
    assert_eq!((h.mtu, h.speed_mbps), (Some(9000), Some(400_000)));
    // Write it back and read it again: collect and doctor share this layout.
    let tmp = std::env::temp_dir().join(format!("rocelab-sysfs-{}", std::process::id()));
    rocelab_doctor::parse::sysfs::write_netdev_dir(&tmp, &h).unwrap();
    assert_eq!(rocelab_doctor::parse::sysfs::read_netdev_dir(&tmp).unwrap(), h);
    std::fs::write(tmp.join("ecn/roce_np/enable/3"), "yes\n").unwrap();
    let e = rocelab_doctor::parse::sysfs::read_netdev_dir(&tmp).unwrap_err();
    assert!(e.source.ends_with("ecn/roce_np/enable/3") && e.line == 1, "{e}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn nccl_modern_all_reduce() {
    let runs = nccl::parse(&fixture("nccl-all_reduce.txt"), None).unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r.op.as_deref(), Some("all_reduce"));
    assert_eq!(r.ranks.len(), 16);
    assert_eq!(r.hosts(), vec!["gpu01".to_string(), "gpu02".to_string()]);
    assert_eq!(r.rows.len(), 7);
    let big = r.largest().unwrap();
    assert_eq!(big.size_bytes, 4 * 1024 * 1024 * 1024);
    assert_eq!(big.redop.as_deref(), Some("sum"));
    assert_eq!(big.root, Some(-1));
    assert!(big.in_place.is_some());
    assert!((r.peak_busbw_gbytes_per_s().unwrap() - 370.0).abs() < 2.0);
    assert_eq!(r.out_of_bounds, Some(0));
    assert!(r.avg_busbw_gbytes_per_s.is_some());
}

#[test]
fn nccl_old_layout_and_na() {
    let runs = nccl::parse(&fixture("nccl-all_gather-old.txt"), Some("all_gather_perf")).unwrap();
    let r = &runs[0];
    assert_eq!(r.op.as_deref(), Some("all_gather"));
    assert_eq!(r.rows.len(), 6);
    assert_eq!(r.rows[0].redop, None);
    assert_eq!(r.rows[0].root, None);
    // The old error column is a rounding-error magnitude, not a count.
    assert_eq!((r.rows[0].out_of_place.wrong, r.rows[0].out_of_place.max_error), (None, Some(0.0)));
    assert_eq!(r.ranks[0].host, "dgx01");
    let runs = nccl::parse(&fixture("nccl-alltoall-na.txt"), None).unwrap();
    let r = &runs[0];
    assert_eq!(r.op.as_deref(), Some("alltoall"));
    assert_eq!(r.rows[0].redop.as_deref(), Some("none"));
    assert_eq!(r.rows[0].out_of_place.wrong, None);
    assert_eq!(r.wrong_rows(), 0);
    let e = nccl::parse(&fixture("nccl-malformed.txt"), None).unwrap_err();
    assert_eq!(e.line, 10, "{e}");
    assert_eq!(nccl::busbw_factor("all_reduce", 16), Some(2.0 * 15.0 / 16.0));
}

#[test]
fn sonic_pfc_counters() {
    let p = sonic::parse_pfc_counters(&fixture("sonic-pfc-counters.txt")).unwrap();
    assert_eq!(p.rx["Ethernet4"][3], Some(12_988));
    assert_eq!(p.tx["Ethernet0"][3], Some(3_001));
    assert_eq!(p.rx["Ethernet12"][0], None);
    assert_eq!(p.rx.len(), 4);
    let e = sonic::parse_pfc_counters(&fixture("sonic-pfc-counters-malformed.txt")).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn sonic_queue_counters() {
    let q = sonic::parse_queue_counters(&fixture("sonic-queue-counters.txt")).unwrap();
    assert_eq!(q.len(), 13);
    let uc3 = q.iter().find(|c| c.port == "Ethernet0" && c.queue == "UC3").unwrap();
    assert_eq!(uc3.bytes, Some(402_212_787_424));
    let e4 = q.iter().find(|c| c.port == "Ethernet4" && c.queue == "UC0").unwrap();
    assert_eq!((e4.drop_packets, e4.drop_bytes), (Some(12), Some(1_536)));
    assert_eq!(q.iter().find(|c| c.queue == "MC9").unwrap().packets, None);
    let e = sonic::parse_queue_counters(&fixture("sonic-queue-counters-malformed.txt")).unwrap_err();
    assert_eq!(e.line, 6, "{e}");
}

#[test]
fn sonic_pg_watermarks() {
    let w = sonic::parse_pg_watermark(&fixture("sonic-pg-watermark-shared.txt")).unwrap();
    assert_eq!(w.pool, "shared");
    assert_eq!(w.ports["Ethernet4"][3], Some(1_042_176));
    let h = sonic::parse_pg_watermark(&fixture("sonic-pg-watermark-headroom.txt")).unwrap();
    assert_eq!(h.pool, "headroom");
    assert_eq!(h.ports["Ethernet0"][3], Some(18_432));
    let e = sonic::parse_pg_watermark(&fixture("sonic-pg-watermark-malformed.txt")).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
}

#[test]
fn cumulus_roce_counters_with_units() {
    let c = cumulus::parse_roce_counters(&fixture("cumulus-roce-counters.txt")).unwrap();
    assert_eq!(c.values["port-stats/rx-stats/rx-pfc-stats/pause-packets"], 41_927.0);
    assert_eq!(c.values["port-stats/rx-stats/rx-roce-stats/pg-max-usage"], (1.62 * 1024.0 * 1024.0f64));
    assert_eq!(c.values["port-stats/rx-stats/rx-non-roce-stats/buffer-max-usage"], 12.0 * 1024.0);
    assert_eq!(c.sum_suffix("ecn-marked-packets"), Some(5_121.0));
    assert_eq!(c.sum_suffix("no-buffer-discard"), Some(0.0));
    let e = cumulus::parse_roce_counters(&fixture("cumulus-roce-counters-malformed.txt")).unwrap_err();
    assert_eq!(e.line, 17, "{e}");
    let w = cumulus::parse_pfc_watchdog(&fixture("cumulus-pfc-watchdog.txt")).unwrap();
    assert!(!w.deadlocked());
    assert_eq!(w.entries.len(), 2);
    assert_eq!(cumulus::parse_pfc_watchdog(&fixture("cumulus-pfc-watchdog-malformed.txt")).unwrap_err().line, 3);
}

#[test]
fn nccl_several_collectives_back_to_back() {
    let runs = nccl::parse(&fixture("nccl-suite.txt"), None).unwrap();
    let ops: Vec<&str> = runs.iter().map(|r| r.op.as_deref().unwrap()).collect();
    assert_eq!(ops, vec!["broadcast", "reduce_scatter", "sendrecv"]);
    assert_eq!(runs[0].rows[0].root, Some(0));
    assert_eq!(runs[0].rows[0].redop.as_deref(), Some("none"));
    assert_eq!(runs[1].ranks.len(), 2);
    assert_eq!(runs[1].peak_busbw_gbytes_per_s(), Some(24.45));
    assert_eq!(runs[2].rows[1].in_place.as_ref().unwrap().wrong, None);
    assert_eq!(runs[2].rows[1].out_of_place.wrong, Some(0));
    assert_eq!(runs[2].avg_busbw_gbytes_per_s, Some(38.27));
}

#[test]
fn nvidia_smi_topo_and_nccl_info_fixtures() {
    use rocelab_doctor::parse::gpu::{parse_modules, parse_topo, PciePath};
    let t = parse_topo(&fixture("nvidia-smi-topo.txt")).unwrap();
    assert_eq!(t.gpus.len(), 8);
    assert_eq!(t.nics[0], "mlx5_1", "names come from the NIC legend");
    assert_eq!(t.nearest(3), Some((PciePath::Pxb, vec!["mlx5_2"])));
    assert_eq!(t.nearest(7).unwrap().0, PciePath::Node);
    assert!(parse_modules(&fixture("proc-modules.txt")).contains("nvidia_peermem"));
    let log = rocelab_doctor::parse::nccl_log::parse(&fixture("nccl-info-gdr.txt"));
    assert_eq!(log.hosts["gpu01"].ib_devices.len(), 8);
    assert_eq!((log.hosts["gpu01"].net_channels_gdr, log.hosts["gpu02"].net_channels_no_gdr), (16, 16));
    assert_eq!(log.hosts["gpu02"].gdr_disabled.len(), 8);
    // The nccl-tests log carries the NET/IB line too.
    let runs = rocelab_doctor::parse::nccl::parse(&fixture("nccl-all_reduce.txt"), None).unwrap();
    assert_eq!(runs[0].log.hosts["gpu01"].ib_device_names().len(), 8);
}
