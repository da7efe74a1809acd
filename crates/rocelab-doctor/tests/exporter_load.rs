//! The exporter under hostile load, on loopback only, bounded in clients and time (each test
//! stops by itself in a few seconds): slow clients and a hung tool must not delay scrapes.
//!
//! The bound checked is the one Prometheus needs: every scrape answered 200 in under 1 s
//! (Prometheus' default scrape timeout is 10 s). On an idle machine the measured worst case
//! is a few milliseconds; the test prints it.

use rocelab_doctor::collect::CollectOptions;
use rocelab_doctor::exporter::{Exporter, ExporterConfig};
use rocelab_doctor::tools::Tools;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCRAPE_BOUND: Duration = Duration::from_secs(1);

fn put(root: &Path, rel: &str, v: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

fn fake_tree(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("rocelab-exporter-load-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for d in 0..4 {
        let port = format!("class/infiniband/mlx5_{d}/ports/1");
        put(&root, &format!("{port}/hw_counters/np_cnp_sent"), &(100 * d).to_string());
        put(&root, &format!("{port}/gid_attrs/ndevs/0"), &format!("ens{d}np0"));
        put(&root, &format!("class/net/ens{d}np0/speed"), "400000");
    }
    root
}

fn config(root: &Path, tools: Tools, tool_timeout: Duration) -> ExporterConfig {
    ExporterConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        collect: CollectOptions {
            sysfs_root: root.to_path_buf(),
            host: Some("gpu07".into()),
            tools,
            tool_timeout,
            proc_root: PathBuf::from("/proc"),
            nccl_logs: Vec::new(),
            gpu_path: false,
        },
        collect_interval: Duration::from_millis(200),
        ..ExporterConfig::default()
    }
}

/// One scrape on a new connection: (status, body, time taken).
fn scrape(addr: SocketAddr) -> (u16, String, Duration) {
    let t = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    let code = buf.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body, t.elapsed())
}

fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

fn first_page(addr: SocketAddr) {
    let t = Instant::now();
    while scrape(addr).0 != 200 {
        assert!(t.elapsed() < Duration::from_secs(15), "no first page");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn idle_and_dripping_clients_do_not_delay_scrapes() {
    let root = fake_tree("drip");
    let server = Exporter::bind(config(&root, Tools::none(), Duration::from_secs(1))).unwrap().spawn().unwrap();
    let addr = server.addr;
    first_page(addr);
    // 200 connections that never send a byte.
    let idle: Vec<TcpStream> = (0..200).map(|_| TcpStream::connect(addr).unwrap()).collect();
    // 16 clients that send a request head one line every 300 ms, reconnecting when cut off.
    let stop = Arc::new(AtomicBool::new(false));
    let drippers: Vec<_> = (0..16)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut cut_off = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    let Ok(mut s) = TcpStream::connect(addr) else { break };
                    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n");
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(300));
                        if s.write_all(b"X-Drip: 1\r\n").is_err() {
                            cut_off += 1;
                            break;
                        }
                    }
                }
                cut_off
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // 16 scrapes over about 3.2 s, past the 2 s head deadline of the first drips.
    let mut worst = Duration::ZERO;
    for i in 0..16 {
        let (code, body, took) = scrape(addr);
        assert_eq!(code, 200, "scrape {i}: {body}");
        assert!(body.contains("rocelab_cnp_sent_total{node=\"gpu07\",port=\"ens1np0\"} 100"), "{body}");
        worst = worst.max(took);
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::SeqCst);
    let cut: u32 = drippers.into_iter().map(|h| h.join().unwrap()).sum();
    drop(idle);
    eprintln!("200 idle + 16 dripping clients: worst scrape {worst:?}; drips cut off by the head deadline: {cut}");
    assert!(worst < SCRAPE_BOUND, "worst scrape {worst:?}");
    // The server ended dripping heads on its deadline (2 s) rather than waiting on them.
    assert!(cut >= 16, "only {cut} dripping connections were cut off");
    server.stop();
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_hung_tool_does_not_delay_scrapes() {
    let root = fake_tree("hung");
    // `ethtool -S` hangs (until its 1 s timeout kills it); every other run fails at once.
    let script = root.join("ethtool");
    std::fs::write(&script, "#!/bin/sh\nif [ \"$1\" = -S ]; then exec sleep 30; fi\nexit 95\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tools = Tools { ethtool: Some(script), ..Tools::default() };
    let server = Exporter::bind(config(&root, tools, Duration::from_secs(1))).unwrap().spawn().unwrap();
    let addr = server.addr;
    // The first collection takes one tool timeout (the four `ethtool -S` run at once, not
    // one after another: four would take 4 s).
    let t = Instant::now();
    first_page(addr);
    let first = t.elapsed();
    assert!(first < Duration::from_millis(3500), "first page after {first:?}: tools ran one after another?");
    let mut worst = Duration::ZERO;
    let mut last = String::new();
    for _ in 0..12 {
        let (code, body, took) = scrape(addr);
        assert_eq!(code, 200, "{body}");
        worst = worst.max(took);
        last = body;
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("hung ethtool: first page after {first:?}, worst scrape {worst:?}");
    assert!(worst < SCRAPE_BOUND, "worst scrape {worst:?}");
    assert_eq!(value(&last, "rocelab_up"), Some(0.0), "{last}");
    assert!(value(&last, "rocelab_scrape_errors_total").unwrap() >= 2.0, "{last}");
    assert!(last.contains("# rocelab: ethtool -S ens0np0 timed out after 1s and was killed"), "{last}");
    // sysfs counters are still served.
    assert_eq!(value(&last, "rocelab_cnp_sent_total{node=\"gpu07\",port=\"ens3np0\"}"), Some(300.0), "{last}");
    server.stop();
    std::fs::remove_dir_all(&root).unwrap();
}
