//! The exporter over real HTTP on 127.0.0.1 (port 0), reading a fake sysfs tree and a fake
//! `ethtool` (a script printing a fixture), checked for metric names, labels and values.

use rocelab_doctor::collect::CollectOptions;
use rocelab_doctor::exporter::{Exporter, ExporterConfig};
use rocelab_doctor::tools::Tools;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn put(root: &Path, rel: &str, v: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

/// A host with two RoCE ports: mlx5_0 -> ens3np0 (found through gid_attrs), mlx5_1 ->
/// ens4np0 (found through device/net).
fn fake_tree(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("rocelab-exporter-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (dev, nd, base) in [("mlx5_0", "ens3np0", 0u64), ("mlx5_1", "ens4np0", 1000)] {
        let port = format!("class/infiniband/{dev}/ports/1");
        for (c, v) in [
            ("np_cnp_sent", 4_977 + base),
            ("np_ecn_marked_roce_packets", 5_121 + base),
            ("rp_cnp_handled", 4_410),
            ("rp_cnp_ignored", 3),
            ("out_of_sequence", 17),
            ("packet_seq_err", 5),
            ("out_of_buffer", 9),
            ("lifespan", 10),
        ] {
            put(&root, &format!("{port}/hw_counters/{c}"), &v.to_string());
        }
        if dev == "mlx5_0" {
            put(&root, &format!("{port}/gid_attrs/ndevs/0"), nd);
        } else {
            std::fs::create_dir_all(root.join(format!("class/infiniband/{dev}/device/net/{nd}"))).unwrap();
        }
        let n = format!("class/net/{nd}");
        put(&root, &format!("{n}/mtu"), "9000");
        put(&root, &format!("{n}/speed"), "400000");
        put(&root, &format!("{n}/carrier_down_count"), "2");
        put(&root, &format!("{n}/statistics/rx_crc_errors"), "7");
        put(&root, &format!("{n}/qos/trust"), "dscp");
        put(&root, &format!("{n}/ecn/roce_np/enable/3"), "1");
    }
    root
}

fn fake_ethtool(root: &Path) -> PathBuf {
    let stats = root.join("ethtool-S.txt");
    std::fs::write(&stats, "NIC statistics:\n     rx_prio3_pause: 41927\n     rx_prio3_pause_duration: 8134\n     tx_prio3_pause: 1290418\n     tx_prio3_pause_duration: 250000\n     rx_discards_phy: 12\n     link_down_events_phy: 1\n     rx_crc_errors_phy: 3\n     tx_pause_storm_warning_events: 0\n     tx_pause_storm_error_events: 0\n").unwrap();
    let script = root.join("ethtool");
    // `-S ens3np0` prints the stats; anything else fails like a driver without the op.
    std::fs::write(&script, format!("#!/bin/sh\nif [ \"$1\" = \"-S\" ] && [ \"$2\" = \"ens3np0\" ]; then cat '{}'; else echo 'Operation not supported' >&2; exit 95; fi\n", stats.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn get(addr: std::net::SocketAddr, req: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    let (head, body) = buf.split_once("\r\n\r\n").unwrap_or((&buf, ""));
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

fn config(root: &Path, tools: Tools) -> ExporterConfig {
    ExporterConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        collect: CollectOptions {
            sysfs_root: root.to_path_buf(),
            host: Some("gpu07".into()),
            tools,
            tool_timeout: Duration::from_secs(5),
            proc_root: std::path::PathBuf::from("/proc"),
            nccl_logs: Vec::new(),
            gpu_path: false,
        },
        collect_interval: Duration::from_millis(100),
        ..ExporterConfig::default()
    }
}

fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

#[test]
fn scrape_over_http_from_a_fake_sysfs_tree() {
    let root = fake_tree("scrape");
    let tools = Tools { ethtool: Some(fake_ethtool(&root)), ..Tools::default() };
    let server = Exporter::bind(config(&root, tools)).unwrap().spawn().unwrap();
    let (code, head, body) = get(server.addr, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(code, 200, "{head}\n{body}");
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    assert!(head.contains(&format!("Content-Length: {}", body.len())), "{head}");
    // Host-side RDMA counters, labelled by node and the port's netdev.
    assert_eq!(value(&body, "rocelab_cnp_sent_total{node=\"gpu07\",port=\"ens3np0\"}"), Some(4_977.0), "{body}");
    assert_eq!(value(&body, "rocelab_cnp_sent_total{node=\"gpu07\",port=\"ens4np0\"}"), Some(5_977.0));
    assert_eq!(value(&body, "rocelab_ecn_marked_packets_total{node=\"gpu07\",port=\"ens3np0\"}"), Some(5_121.0));
    assert_eq!(
        value(&body, "rocelab_cnp_received_total{node=\"gpu07\",port=\"ens3np0\",outcome=\"ignored\"}"),
        Some(3.0)
    );
    assert_eq!(
        value(&body, "rocelab_retransmitted_packets_total{node=\"gpu07\",port=\"ens3np0\",kind=\"out_of_sequence\"}"),
        Some(17.0)
    );
    assert_eq!(value(&body, "rocelab_drops_total{node=\"gpu07\",port=\"ens3np0\",reason=\"no_wqe\"}"), Some(9.0));
    // ethtool counters for ens3np0 (seconds from microseconds), sysfs fallbacks for ens4np0.
    assert_eq!(
        value(&body, "rocelab_pfc_pause_frames_total{node=\"gpu07\",port=\"ens3np0\",priority=\"3\",direction=\"tx\"}"),
        Some(1_290_418.0)
    );
    assert_eq!(
        value(
            &body,
            "rocelab_pfc_paused_seconds_total{node=\"gpu07\",port=\"ens3np0\",priority=\"3\",direction=\"rx\"}"
        ),
        Some(0.008134)
    );
    assert_eq!(value(&body, "rocelab_drops_total{node=\"gpu07\",port=\"ens3np0\",reason=\"buffer\"}"), Some(12.0));
    assert_eq!(value(&body, "rocelab_link_state_changes_total{node=\"gpu07\",port=\"ens3np0\"}"), Some(1.0));
    assert_eq!(value(&body, "rocelab_link_state_changes_total{node=\"gpu07\",port=\"ens4np0\"}"), Some(2.0));
    assert_eq!(value(&body, "rocelab_link_errors_total{node=\"gpu07\",port=\"ens3np0\",kind=\"crc\"}"), Some(3.0));
    assert_eq!(value(&body, "rocelab_link_errors_total{node=\"gpu07\",port=\"ens4np0\",kind=\"crc\"}"), Some(7.0));
    assert!(body.contains("# TYPE rocelab_cnp_sent_total counter\n"));
    // The failing `ethtool -i` is a comment, not a broken page.
    assert!(body.lines().any(|l| l.starts_with("# rocelab: ethtool -i ens3np0 exited with")), "{body}");
    // Every sample line is `name{labels} value` with a metrics.md name.
    let names: std::collections::BTreeSet<&str> =
        body.lines().filter(|l| !l.starts_with('#')).map(|l| l.split(['{', ' ']).next().unwrap()).collect();
    for n in &names {
        assert!(
            rocelab_doctor::metrics::CATALOG.iter().any(|(c, _, _)| c == n)
                || rocelab_doctor::exporter::HEALTH_METRICS.contains(n),
            "{n} is not a metrics.md name"
        );
    }
    // A counter change shows on the next scrape: counters are read per scrape.
    // The collector reads again every `collect_interval` (100 ms here).
    put(&root, "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent", "5000");
    let fresh = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        let (_, _, body2) = get(server.addr, "GET /metrics HTTP/1.0\r\n\r\n");
        value(&body2, "rocelab_cnp_sent_total{node=\"gpu07\",port=\"ens3np0\"}") == Some(5_000.0)
    });
    assert!(fresh, "the page never showed the new counter value");
    server.stop();
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn http_edges() {
    let root = fake_tree("edges");
    let server = Exporter::bind(config(&root, Tools::none())).unwrap().spawn().unwrap();
    assert_eq!(get(server.addr, "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n").0, 404);
    assert_eq!(get(server.addr, "POST /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").0, 405);
    assert_eq!(get(server.addr, "garbage\r\n\r\n").0, 400);
    let huge = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(10_000));
    assert_eq!(get(server.addr, &huge).0, 431);
    let (code, head, body) = get(server.addr, "HEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(code, 200);
    assert!(body.is_empty() && head.contains("Content-Length: "), "{head}");
    // Two requests on one keep-alive connection.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    assert_eq!(buf.matches("HTTP/1.1 200 OK").count(), 2);
    server.stop();
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn connection_cap_answers_503() {
    let root = fake_tree("cap");
    let mut cfg = config(&root, Tools::none());
    cfg.max_connections = 2;
    let server = Exporter::bind(cfg).unwrap().spawn().unwrap();
    // Two idle connections hold both slots.
    let a = TcpStream::connect(server.addr).unwrap();
    let b = TcpStream::connect(server.addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(server.addr, "GET /metrics HTTP/1.1\r\n\r\n").0, 503);
    drop((a, b));
    // Slots free up once the idle connections close.
    let mut ok = false;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(50));
        if get(server.addr, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").0 == 200 {
            ok = true;
            break;
        }
    }
    assert!(ok);
    server.stop();
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn no_rdma_devices_is_an_empty_page_with_a_note() {
    let root = std::env::temp_dir().join(format!("rocelab-exporter-empty-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let body = rocelab_doctor::exporter::scrape(
        &CollectOptions {
            sysfs_root: root.clone(),
            host: Some("h".into()),
            tools: Tools::none(),
            tool_timeout: Duration::from_secs(1),
            proc_root: std::path::PathBuf::from("/proc"),
            nccl_logs: Vec::new(),
            gpu_path: false,
        },
        3,
    );
    assert!(body.starts_with("# rocelab: no RDMA devices under"), "{body}");
    assert!(!body.lines().any(|l| !l.starts_with('#')));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_slow_collection_answers_503_first_then_serves_the_last_page_at_once() {
    let root = fake_tree("slow");
    // An `ethtool -S ens3np0` that takes 1 s: longer than the first scrape's wait, shorter
    // than its own deadline; the other runs fail at once.
    let script = root.join("ethtool");
    std::fs::write(&script, "#!/bin/sh\nif [ \"$1\" = -S ] && [ \"$2\" = ens3np0 ]; then sleep 1; printf 'NIC statistics:\\n     rx_prio3_pause: 1\\n'; else exit 95; fi\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cfg = config(&root, Tools { ethtool: Some(script), ..Tools::default() });
    cfg.scrape_timeout = Duration::from_millis(300);
    let server = Exporter::bind(cfg).unwrap().spawn().unwrap();
    let (code, _, body) = get(server.addr, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(code, 503, "{body}");
    assert_eq!(body, "counter collection timed out\n");
    // Once the first collection is done, every scrape is answered at once with it, its age
    // and the collector's health.
    std::thread::sleep(Duration::from_millis(1600));
    let t = std::time::Instant::now();
    let (code, _, body) = get(server.addr, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(code, 200, "{body}");
    assert!(t.elapsed() < Duration::from_millis(900), "{:?}", t.elapsed());
    assert_eq!(
        value(&body, "rocelab_pfc_pause_frames_total{node=\"gpu07\",port=\"ens3np0\",priority=\"3\",direction=\"rx\"}"),
        Some(1.0),
        "{body}"
    );
    // `ethtool -i` and `-S ens4np0` failed: the collection is not whole.
    assert_eq!(value(&body, "rocelab_up"), Some(0.0), "{body}");
    assert!(value(&body, "rocelab_scrape_errors_total").unwrap() >= 1.0);
    let age = value(&body, "rocelab_collect_age_seconds").unwrap();
    assert!((0.0..60.0).contains(&age), "{age}");
    assert!(value(&body, "rocelab_collect_duration_seconds").unwrap() >= 1.0, "{body}");
    server.stop();
    std::fs::remove_dir_all(&root).unwrap();
}
