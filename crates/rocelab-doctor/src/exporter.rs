//! `rocelab exporter`: live counters as Prometheus metrics over a small HTTP/1.1 server.
//!
//! * One thread per connection, at most `max_connections` at once; the next one gets a 503
//!   straight away instead of queueing without bound.
//! * A request head is capped at 8 KiB; sockets have read/write timeouts; keep-alive is
//!   honoured up to 100 requests per connection.
//! * Each scrape reads the counters afresh (sysfs, then the tools with their own timeouts).
//!   Concurrent scrapes share one collection ("single flight"): a scrape waits for a
//!   collection that *started after it arrived*, or starts one, so N scrapers never run N
//!   copies of `ethtool`. When the collection is slower than `scrape_timeout`, the scrape
//!   gets the previous page with a comment giving its age, or 503 if there is none yet.
//! * Memory is bounded by the connection cap, the head cap and one rendered page.
//!
//! It binds to 127.0.0.1 unless told otherwise: counters describe the fabric, and the
//! exporter has no authentication.

use crate::collect::{collect_raw, discover, CollectOptions};
use crate::dump::Strictness;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:9469";
const MAX_HEAD_BYTES: u64 = 8 * 1024;
const MAX_REQUESTS_PER_CONNECTION: usize = 100;

#[derive(Clone, Debug)]
pub struct ExporterConfig {
    pub listen: SocketAddr,
    pub collect: CollectOptions,
    pub max_connections: usize,
    pub scrape_timeout: Duration,
    /// Socket read timeout (idle keep-alive connections are closed after it).
    pub idle_timeout: Duration,
    pub roce_priority: u8,
}

impl Default for ExporterConfig {
    fn default() -> Self {
        ExporterConfig {
            listen: DEFAULT_LISTEN.parse().expect("valid default address"),
            collect: CollectOptions::default(),
            max_connections: 16,
            scrape_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            roce_priority: 3,
        }
    }
}

/// One collection and rendering: what `/metrics` returns. Never fails; problems are
/// reported as `# rocelab: ...` comment lines, which Prometheus ignores.
pub fn scrape(opts: &CollectOptions, roce_priority: u8) -> String {
    let ports = discover(&opts.sysfs_root);
    let mut head = String::new();
    if ports.is_empty() {
        head.push_str(&format!(
            "# rocelab: no RDMA devices under {}\n",
            opts.sysfs_root.join("class/infiniband").display()
        ));
    }
    let raw = collect_raw(opts, &ports);
    let snap = match raw.to_snapshot(Path::new("live"), Strictness::Lenient) {
        Ok(s) => s,
        Err(e) => {
            head.push_str(&format!("# rocelab: {}\n", one_line(&e.to_string())));
            return head;
        }
    };
    for n in &snap.notes {
        head.push_str(&format!("# rocelab: {}\n", one_line(n)));
    }
    head + &crate::metrics::from_snapshot(&snap, roce_priority).to_prometheus()
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[derive(Default)]
struct Flight {
    running: bool,
    /// (when the collection started, page).
    last: Option<(Instant, Arc<String>)>,
}

struct State {
    cfg: ExporterConfig,
    active: AtomicUsize,
    flight: Mutex<Flight>,
    done: Condvar,
    stop: AtomicBool,
}

impl State {
    /// A page collected after `arrived`, shared with concurrent scrapes.
    fn page(self: &Arc<Self>, arrived: Instant) -> Option<Arc<String>> {
        let deadline = arrived + self.cfg.scrape_timeout;
        let mut g = self.flight.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some((started, page)) = &g.last {
                if *started >= arrived {
                    return Some(page.clone());
                }
            }
            if !g.running {
                g.running = true;
                let me = self.clone();
                std::thread::spawn(move || {
                    let started = Instant::now();
                    let page = Arc::new(scrape(&me.cfg.collect, me.cfg.roce_priority));
                    let mut g = me.flight.lock().unwrap_or_else(|p| p.into_inner());
                    g.running = false;
                    g.last = Some((started, page));
                    me.done.notify_all();
                });
            }
            let now = Instant::now();
            if now >= deadline {
                // The collection is slower than the deadline: serve the last page, saying how
                // old it is, rather than nothing; without one, 503.
                return g.last.as_ref().map(|(started, page)| {
                    let age = now.duration_since(*started).as_secs_f64();
                    Arc::new(format!("# rocelab: collection still running; this page was collected {age:.1} s before this scrape\n{page}"))
                });
            }
            g = self.done.wait_timeout(g, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// A bound exporter, not yet serving.
pub struct Exporter {
    listener: TcpListener,
    state: Arc<State>,
}

/// A running exporter (tests, benchmarks): stop it with [`ServerHandle::stop`].
pub struct ServerHandle {
    pub addr: SocketAddr,
    state: Arc<State>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    pub fn stop(mut self) {
        self.shutdown();
    }
    fn shutdown(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Exporter {
    pub fn bind(cfg: ExporterConfig) -> std::io::Result<Self> {
        let listener = TcpListener::bind(cfg.listen)?;
        Ok(Exporter {
            listener,
            state: Arc::new(State {
                cfg,
                active: AtomicUsize::new(0),
                flight: Mutex::default(),
                done: Condvar::new(),
                stop: AtomicBool::new(false),
            }),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until the process ends.
    pub fn serve(self) -> std::io::Result<()> {
        accept_loop(&self.listener, &self.state);
        Ok(())
    }

    /// Serves on a background thread.
    pub fn spawn(self) -> std::io::Result<ServerHandle> {
        let addr = self.local_addr()?;
        let state = self.state.clone();
        let thread = std::thread::spawn(move || accept_loop(&self.listener, &self.state));
        Ok(ServerHandle { addr, state, thread: Some(thread) })
    }
}

fn accept_loop(listener: &TcpListener, state: &Arc<State>) {
    for conn in listener.incoming() {
        if state.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(mut stream) = conn else { continue };
        let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
        let _ = stream.set_nodelay(true);
        if state.active.fetch_add(1, Ordering::SeqCst) >= state.cfg.max_connections {
            state.active.fetch_sub(1, Ordering::SeqCst);
            reject(&mut stream);
            continue;
        }
        let st = state.clone();
        let spawned = std::thread::Builder::new().name("rocelab-exporter-conn".into()).spawn(move || {
            handle(stream, &st);
            st.active.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            state.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Answers 503 on the accept thread. The request is read first (briefly, bounded): closing a
/// socket with unread input sends a reset, which can destroy the answer before the client
/// reads it.
fn reject(stream: &mut TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = [0u8; 1024];
    let mut seen = Vec::new();
    while seen.len() < MAX_HEAD_BYTES as usize {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen.extend_from_slice(&buf[..n]);
                if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
        }
    }
    let _ = respond(stream, 503, "text/plain", b"too many concurrent scrapes\n", false, false);
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

fn respond(
    s: &mut TcpStream,
    code: u16,
    ctype: &str,
    body: &[u8],
    keep_alive: bool,
    head_only: bool,
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    // One write: a head and a body in two segments would meet Nagle and delayed ACKs.
    let mut out = Vec::with_capacity(head.len() + if head_only { 0 } else { body.len() });
    out.extend_from_slice(head.as_bytes());
    if !head_only {
        out.extend_from_slice(body);
    }
    s.write_all(&out)?;
    s.flush()
}

/// Reads one request head; `Ok(None)` on a clean close.
fn read_head(r: &mut BufReader<TcpStream>) -> Result<Option<Vec<String>>, u16> {
    let mut lines = Vec::new();
    let mut total = 0u64;
    loop {
        let mut line = String::new();
        let n =
            r.by_ref().take(MAX_HEAD_BYTES - total.min(MAX_HEAD_BYTES) + 1).read_line(&mut line).map_err(|_| 400u16)?;
        if n == 0 {
            return if lines.is_empty() { Ok(None) } else { Err(400) };
        }
        total += n as u64;
        if total > MAX_HEAD_BYTES {
            return Err(431);
        }
        let l = line.trim_end_matches(['\r', '\n']).to_string();
        if l.is_empty() {
            if lines.is_empty() {
                continue; // stray CRLF between requests
            }
            return Ok(Some(lines));
        }
        lines.push(l);
    }
}

fn handle(stream: TcpStream, st: &Arc<State>) {
    let _ = stream.set_read_timeout(Some(st.cfg.idle_timeout));
    let Ok(mut w) = stream.try_clone() else { return };
    let mut r = BufReader::new(stream);
    for served in 0..MAX_REQUESTS_PER_CONNECTION {
        let head = match read_head(&mut r) {
            Ok(Some(h)) => h,
            Ok(None) => return,
            Err(code) => {
                let _ = respond(&mut w, code, "text/plain", b"bad request\n", false, false);
                return;
            }
        };
        let arrived = Instant::now();
        let mut parts = head[0].split_whitespace();
        let (method, target, version) =
            (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let close_hdr = head[1..].iter().any(|h| {
            let l = h.to_ascii_lowercase();
            l.starts_with("connection:") && l.contains("close")
        });
        // The last request a connection may carry says so, so the client does not reuse it.
        let keep_alive = version == "HTTP/1.1" && !close_hdr && served + 1 < MAX_REQUESTS_PER_CONNECTION;
        // A request body is not expected; refuse one rather than read it.
        let has_body = head[1..].iter().any(|h| {
            let l = h.to_ascii_lowercase();
            (l.starts_with("content-length:") && l.split(':').nth(1).map(str::trim) != Some("0"))
                || l.starts_with("transfer-encoding:")
        });
        if !version.starts_with("HTTP/1.") || has_body {
            let _ = respond(&mut w, 400, "text/plain", b"bad request\n", false, false);
            return;
        }
        let head_only = method == "HEAD";
        let path = target.split('?').next().unwrap_or("");
        let res = match (method, path) {
            ("GET" | "HEAD", "/metrics") => match st.page(arrived) {
                Some(page) => respond(
                    &mut w,
                    200,
                    "text/plain; version=0.0.4; charset=utf-8",
                    page.as_bytes(),
                    keep_alive,
                    head_only,
                ),
                None => respond(&mut w, 503, "text/plain", b"counter collection timed out\n", keep_alive, head_only),
            },
            ("GET" | "HEAD", "/") => respond(
                &mut w,
                200,
                "text/html; charset=utf-8",
                b"<html><body><h1>rocelab exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n",
                keep_alive,
                head_only,
            ),
            ("GET" | "HEAD", _) => {
                respond(&mut w, 404, "text/plain", b"not found: try /metrics\n", keep_alive, head_only)
            }
            _ => respond(&mut w, 405, "text/plain", b"only GET and HEAD\n", keep_alive, head_only),
        };
        if res.is_err() || !keep_alive {
            return;
        }
    }
}
