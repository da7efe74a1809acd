//! Load test of `rocelab exporter` on loopback: a bounded number of concurrent scrapers for a
//! bounded time against a fake sysfs tree of 8 RDMA ports. Reports requests/s, latency
//! percentiles and memory (VmRSS / VmHWM of this process, which holds server and clients).
//!
//! Run once, in release: `cargo bench -p rocelab-doctor --bench exporter_load`.
//! `ROCELAB_LOAD_CLIENTS` (default 16) and `ROCELAB_LOAD_SECS` (default 5) change the load.
//! Not a test: it asserts nothing about speed.

use rocelab_doctor::collect::CollectOptions;
use rocelab_doctor::exporter::{Exporter, ExporterConfig};
use rocelab_doctor::tools::Tools;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const HW: &[&str] = &[
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "req_transport_retries_exceeded",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "rx_atomic_requests",
    "rx_dct_connect",
    "rx_icrc_encapsulated",
    "rx_read_requests",
    "rx_write_requests",
];

fn put(root: &Path, rel: &str, v: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

fn fake_tree() -> PathBuf {
    let root = std::env::temp_dir().join(format!("rocelab-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for d in 0..8 {
        let port = format!("class/infiniband/mlx5_{d}/ports/1");
        for (i, c) in HW.iter().enumerate() {
            put(&root, &format!("{port}/hw_counters/{c}"), &(1000 * d + i).to_string());
        }
        let nd = format!("ens{d}np0");
        put(&root, &format!("{port}/gid_attrs/ndevs/0"), &nd);
        let n = format!("class/net/{nd}");
        for (k, v) in [
            ("mtu", "9000"),
            ("speed", "400000"),
            ("operstate", "up"),
            ("carrier_down_count", "1"),
            ("qos/trust", "dscp"),
        ] {
            put(&root, &format!("{n}/{k}"), v);
        }
        for s in ["rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_crc_errors", "rx_dropped"] {
            put(&root, &format!("{n}/statistics/{s}"), "123456789");
        }
        for p in 0..8 {
            put(&root, &format!("{n}/ecn/roce_np/enable/{p}"), if p == 3 { "1" } else { "0" });
            put(&root, &format!("{n}/ecn/roce_rp/enable/{p}"), if p == 3 { "1" } else { "0" });
        }
    }
    root
}

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// One scrape on an open connection; returns the body length and whether the server keeps
/// the connection open.
fn scrape(r: &mut BufReader<TcpStream>, keep_alive: bool) -> std::io::Result<(usize, bool)> {
    let req: &[u8] = if keep_alive {
        b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n"
    } else {
        b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    };
    r.get_mut().write_all(req)?;
    let mut len = 0usize;
    let mut line = String::new();
    let mut status_ok = false;
    let mut open = true;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line.starts_with("HTTP/1.1 200") {
            status_ok = true;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = v.trim().parse().unwrap_or(0);
        }
        if line.eq_ignore_ascii_case("connection: close\r\n") {
            open = false;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    if !status_ok {
        return Err(std::io::Error::other("non-200"));
    }
    Ok((len, open))
}

fn run(addr: SocketAddr, clients: usize, secs: u64, keep_alive: bool) -> (u64, u64, Vec<Duration>, usize) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            std::thread::spawn(move || {
                let (mut ok, mut err, mut lat, mut size) = (0u64, 0u64, Vec::new(), 0usize);
                let mut conn: Option<BufReader<TcpStream>> = None;
                while Instant::now() < deadline {
                    if conn.is_none() || !keep_alive {
                        conn = TcpStream::connect(addr).ok().map(BufReader::new);
                    }
                    let Some(c) = conn.as_mut() else {
                        err += 1;
                        continue;
                    };
                    let t = Instant::now();
                    match scrape(c, keep_alive) {
                        Ok((n, open)) => {
                            ok += 1;
                            size = n;
                            lat.push(t.elapsed());
                            if !open {
                                conn = None;
                            }
                        }
                        Err(_) => {
                            err += 1;
                            conn = None;
                        }
                    }
                }
                (ok, err, lat, size)
            })
        })
        .collect();
    let (mut ok, mut err, mut lat, mut size) = (0, 0, Vec::new(), 0);
    for h in handles {
        let (o, e, l, s) = h.join().unwrap();
        ok += o;
        err += e;
        lat.extend(l);
        size = size.max(s);
    }
    lat.sort();
    (ok, err, lat, size)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing useful: run
    // the load only when benchmarking.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let clients: usize =
        std::env::var("ROCELAB_LOAD_CLIENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(16).clamp(1, 256);
    let secs: u64 = std::env::var("ROCELAB_LOAD_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(5).clamp(1, 60);
    let root = fake_tree();
    let cfg = ExporterConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        collect: CollectOptions {
            sysfs_root: root.clone(),
            host: Some("bench".into()),
            tools: Tools::none(),
            tool_timeout: Duration::from_secs(5),
            proc_root: std::path::PathBuf::from("/proc"),
            nccl_logs: Vec::new(),
            gpu_path: false,
        },
        max_connections: clients + 4,
        ..ExporterConfig::default()
    };
    let server = Exporter::bind(cfg).unwrap().spawn().unwrap();
    let rss0 = status_kb("VmRSS:");
    println!("exporter load: 8 RDMA ports (sysfs only), {clients} concurrent clients, {secs} s per mode, 127.0.0.1");
    for keep_alive in [true, false] {
        let (ok, err, lat, size) = run(server.addr, clients, secs, keep_alive);
        let pct = |q: f64| {
            lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1))).copied().unwrap_or_default()
        };
        println!(
            "  {:<22} {:>8.0} req/s  ok {ok}  errors {err}  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  page {size} B",
            if keep_alive { "keep-alive:" } else { "connection per scrape:" },
            ok as f64 / secs as f64,
            pct(0.5).as_secs_f64() * 1e3,
            pct(0.99).as_secs_f64() * 1e3,
            lat.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        );
    }
    println!(
        "  memory: VmRSS {} KiB before, {} KiB after; VmHWM (peak) {} KiB (server and clients in one process)",
        rss0,
        status_kb("VmRSS:"),
        status_kb("VmHWM:")
    );
    server.stop();
    let _ = std::fs::remove_dir_all(&root);
}
