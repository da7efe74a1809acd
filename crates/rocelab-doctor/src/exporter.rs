//! `rocelab exporter`: live counters as Prometheus metrics over a small HTTP/1.1 server.
//!
//! * **Collection is off the request path.** One collector thread reads the counters (sysfs,
//!   then the tools, all at once, each under its own timeout) every `collect_interval`, and
//!   at once when a scrape finds the page older than that. A scrape is answered immediately
//!   with the last complete page plus `rocelab_collect_age_seconds`, `rocelab_up` (0 when a
//!   tool failed or timed out in that collection), `rocelab_collect_duration_seconds` and
//!   `rocelab_scrape_errors_total`: a hung `ethtool` makes pages older and `rocelab_up` 0,
//!   which Prometheus can see, instead of making scrapes slow. Only before the first page
//!   does a scrape wait, up to `scrape_timeout`, then 503.
//! * **Slow clients cannot hold the server.** One thread per connection, at most
//!   `max_connections` (the next one gets 503 at once); a connection that sends nothing is
//!   closed after `idle_timeout`, and a request head must be complete within `head_timeout`
//!   of its first byte, however slowly it drips in. A head is capped at 8 KiB; keep-alive is
//!   honoured up to 100 requests per connection.
//! * Memory is bounded by the connection cap, the head cap and one rendered page.
//!
//! It binds to 127.0.0.1 unless told otherwise: counters describe the fabric, and the
//! exporter has no authentication.

use crate::collect::{collect_raw, discover, CollectOptions};
use crate::dump::Strictness;
use std::io::{Read, Write};
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
    /// How long a scrape waits for the first page (later scrapes never wait).
    pub scrape_timeout: Duration,
    /// A connection that sends no request for this long is closed.
    pub idle_timeout: Duration,
    /// A request head must arrive whole within this time of its first byte.
    pub head_timeout: Duration,
    /// Time between collections (a scrape that finds an older page asks for one at once).
    pub collect_interval: Duration,
    pub roce_priority: u8,
}

impl Default for ExporterConfig {
    fn default() -> Self {
        ExporterConfig {
            listen: DEFAULT_LISTEN.parse().expect("valid default address"),
            collect: CollectOptions::default(),
            max_connections: 512,
            scrape_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10),
            head_timeout: Duration::from_secs(2),
            collect_interval: Duration::from_secs(5),
            roce_priority: 3,
        }
    }
}

/// One collection and rendering: what `/metrics` returns. Never fails; problems are
/// reported as `# rocelab: ...` comment lines, which Prometheus ignores.
pub fn scrape(opts: &CollectOptions, roce_priority: u8) -> String {
    collect_page(opts, roce_priority).0
}

/// [`scrape`] and the number of sources that failed (tools that failed or timed out, a
/// snapshot that could not be built).
fn collect_page(opts: &CollectOptions, roce_priority: u8) -> (String, usize) {
    let ports = discover(&opts.sysfs_root);
    let mut head = String::new();
    if ports.is_empty() {
        head.push_str(&format!(
            "# rocelab: no RDMA devices under {}\n",
            opts.sysfs_root.join("class/infiniband").display()
        ));
    }
    let raw = collect_raw(opts, &ports);
    let snap = match raw.to_snapshot(Path::new("live"), Strictness::Lenient, roce_priority) {
        Ok(s) => s,
        Err(e) => {
            head.push_str(&format!("# rocelab: {}\n", one_line(&e.to_string())));
            return (head, raw.tool_errors + 1);
        }
    };
    for n in &snap.notes {
        head.push_str(&format!("# rocelab: {}\n", one_line(n)));
    }
    (head + &crate::metrics::from_snapshot(&snap).to_prometheus(), raw.tool_errors)
}

/// A note as one comment line, with no control character a `curl` to a terminal would run.
fn one_line(s: &str) -> String {
    crate::util::escape_controls(&s.replace(['\n', '\r'], " "))
}

/// The last complete collection.
struct Page {
    collected_at: Instant,
    duration: Duration,
    errors: usize,
    body: Arc<String>,
}

#[derive(Default)]
struct Collector {
    page: Option<Page>,
    /// A scrape found the page stale: collect now rather than at the next interval.
    wanted: bool,
    /// Collections with at least one failed source, since start.
    failed_collections: u64,
}

struct State {
    cfg: ExporterConfig,
    active: AtomicUsize,
    collector: Mutex<Collector>,
    /// Signalled when a page is stored, when a collection is wanted, and on stop.
    changed: Condvar,
    stop: AtomicBool,
}

impl State {
    /// The collector thread: collect, store, wait for the interval or a scrape's request.
    fn collect_loop(self: &Arc<Self>) {
        while !self.stop.load(Ordering::SeqCst) {
            let started = Instant::now();
            let (body, errors) = collect_page(&self.cfg.collect, self.cfg.roce_priority);
            let mut g = self.collector.lock().unwrap_or_else(|p| p.into_inner());
            if errors > 0 {
                g.failed_collections += 1;
            }
            g.page = Some(Page { collected_at: started, duration: started.elapsed(), errors, body: Arc::new(body) });
            g.wanted = false;
            self.changed.notify_all();
            let next = Instant::now() + self.cfg.collect_interval;
            while !g.wanted && !self.stop.load(Ordering::SeqCst) {
                let now = Instant::now();
                if now >= next {
                    break;
                }
                g = self.changed.wait_timeout(g, next - now).unwrap_or_else(|p| p.into_inner()).0;
            }
        }
    }

    /// The page for a scrape: the last one at once (asking for a fresh one when it is older
    /// than the interval), or, before the first, a wait of up to `scrape_timeout`.
    fn page(&self, arrived: Instant) -> Option<String> {
        let deadline = arrived + self.cfg.scrape_timeout;
        let mut g = self.collector.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(p) = &g.page {
                let now = Instant::now();
                let age = now.saturating_duration_since(p.collected_at);
                let out = render(p, age, g.failed_collections);
                if age > self.cfg.collect_interval && !g.wanted {
                    g.wanted = true;
                    self.changed.notify_all();
                }
                return Some(out);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            g = self.changed.wait_timeout(g, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// The exporter's own health series, appended to every page (not fabric metrics, so not in
/// [`crate::metrics::CATALOG`]; listed in docs/exporter.md).
pub const HEALTH_METRICS: &[&str] =
    &["rocelab_up", "rocelab_collect_age_seconds", "rocelab_collect_duration_seconds", "rocelab_scrape_errors_total"];

/// The page with the collector's own health appended (names in docs/exporter.md).
fn render(p: &Page, age: Duration, failed: u64) -> String {
    let mut s = String::with_capacity(p.body.len() + 640);
    s.push_str(&p.body);
    let up = u8::from(p.errors == 0);
    s.push_str(&format!(
        "# HELP rocelab_up 1 if the last collection read every source, 0 if a tool failed or timed out (see the # rocelab comments).\n\
         # TYPE rocelab_up gauge\nrocelab_up {up}\n\
         # HELP rocelab_collect_age_seconds Age of the collection this page shows.\n\
         # TYPE rocelab_collect_age_seconds gauge\nrocelab_collect_age_seconds {:.3}\n\
         # HELP rocelab_collect_duration_seconds How long that collection took.\n\
         # TYPE rocelab_collect_duration_seconds gauge\nrocelab_collect_duration_seconds {:.3}\n\
         # HELP rocelab_scrape_errors_total Collections with at least one failed source since the exporter started.\n\
         # TYPE rocelab_scrape_errors_total counter\nrocelab_scrape_errors_total {failed}\n",
        age.as_secs_f64(),
        p.duration.as_secs_f64()
    ));
    s
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
        self.state.changed.notify_all();
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
                collector: Mutex::default(),
                changed: Condvar::new(),
                stop: AtomicBool::new(false),
            }),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    fn start_collector(&self) -> std::io::Result<()> {
        let st = self.state.clone();
        std::thread::Builder::new().name("rocelab-exporter-collect".into()).spawn(move || st.collect_loop())?;
        Ok(())
    }

    /// Serves until the process ends.
    pub fn serve(self) -> std::io::Result<()> {
        self.start_collector()?;
        accept_loop(&self.listener, &self.state);
        Ok(())
    }

    /// Serves on a background thread.
    pub fn spawn(self) -> std::io::Result<ServerHandle> {
        let addr = self.local_addr()?;
        self.start_collector()?;
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
        // Small stacks: a connection thread parses a head and writes a page, nothing deep.
        let spawned =
            std::thread::Builder::new().name("rocelab-exporter-conn".into()).stack_size(256 << 10).spawn(move || {
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
        408 => "Request Timeout",
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

/// A connection's input: what has been read and not yet consumed (pipelined requests).
struct Input {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// Reads one request head under the connection's deadlines: `idle` to see its first byte,
/// then `head` to see it whole (a client dripping a line a second is cut off). `Ok(None)` on
/// a clean close or an idle timeout.
fn read_head(inp: &mut Input, idle: Duration, head: Duration) -> Result<Option<Vec<String>>, u16> {
    let started = Instant::now();
    let mut first_byte: Option<Instant> = None;
    let mut chunk = [0u8; 4096];
    loop {
        // Stray CRLF between requests.
        let lead = inp.buf.iter().take_while(|b| **b == b'\r' || **b == b'\n').count();
        inp.buf.drain(..lead);
        if !inp.buf.is_empty() && first_byte.is_none() {
            first_byte = Some(Instant::now());
        }
        if let Some(end) = find_head_end(&inp.buf) {
            if end as u64 > MAX_HEAD_BYTES {
                return Err(431);
            }
            let text = String::from_utf8_lossy(&inp.buf[..end]).into_owned();
            inp.buf.drain(..end);
            let lines: Vec<String> =
                text.lines().map(|l| l.trim_end_matches('\r').to_string()).filter(|l| !l.is_empty()).collect();
            return Ok(Some(lines));
        }
        if inp.buf.len() as u64 > MAX_HEAD_BYTES {
            return Err(431);
        }
        let deadline = match first_byte {
            Some(t) => t + head,
            None => started + idle,
        };
        let now = Instant::now();
        if now >= deadline {
            return if first_byte.is_none() { Ok(None) } else { Err(408) };
        }
        let _ = inp.stream.set_read_timeout(Some(deadline - now));
        match inp.stream.read(&mut chunk) {
            Ok(0) => return if inp.buf.is_empty() { Ok(None) } else { Err(400) },
            Ok(n) => inp.buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Ok(None),
        }
    }
}

/// End of the head (after its blank line), accepting bare LF line ends.
fn find_head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn handle(stream: TcpStream, st: &Arc<State>) {
    let Ok(mut w) = stream.try_clone() else { return };
    let mut inp = Input { stream, buf: Vec::new() };
    for served in 0..MAX_REQUESTS_PER_CONNECTION {
        let head = match read_head(&mut inp, st.cfg.idle_timeout, st.cfg.head_timeout) {
            Ok(Some(h)) if !h.is_empty() => h,
            Ok(_) => return,
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
