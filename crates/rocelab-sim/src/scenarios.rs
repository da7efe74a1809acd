//! Fixed benchmark scenarios, shared by `rocelab bench` and `benches/engine.rs`.
//!
//! Each is a complete fabric file (text), so a scenario is exactly reproducible with
//! `rocelab simulate` too. Figures of other simulators quoted in the issue were measured on
//! the same kinds of scenarios: 400 Gb/s fat trees with 1 µs links and 4,000-byte packets.

use std::fmt::Write;

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub fabric: String,
}

/// A 3-tier k-ary fat tree at 400 Gb/s, 1 µs links, 4,000-byte MTU, PFC on, no congestion
/// control, running a random permutation of 1 GB flows for 200 µs.
pub fn permutation(k: u32) -> String {
    format!(
        r#"[fabric]
name = "permutation-k{k}"

[topology.fat_tree]
k = {k}
link = {{ speed_gbps = 400, delay_ns = 1000 }}
switch_model = "bench"

[switch_models.bench]
preset = "tomahawk3"
ports = {k}

[nic]
mtu = 4000
congestion_control = "none"

[simulation]
seed = 1
duration_us = 200

[[traffic]]
pattern = "permutation"
size_bytes = 1000000000
"#
    )
}

/// 64:1 incast at 100 Gb/s through one switch with DCQCN, 2 MB per sender.
pub fn incast() -> String {
    let mut s = String::from(
        r#"[fabric]
name = "incast-64to1"

[switch_models.bench]
preset = "spectrum-2"
ports = 65

[nic]
congestion_control = "dcqcn"

[simulation]
seed = 1

[[traffic]]
pattern = "incast"
dst = "h0"
senders = 64
size_bytes = 2000000

[topology.explicit]
node = [
  { name = "sw0", kind = "switch", model = "bench" },
"#,
    );
    for h in 0..65 {
        let _ = writeln!(s, "  {{ name = \"h{h}\", kind = \"host\" }},");
    }
    s.push_str("]\nlink = [\n");
    for h in 0..65 {
        let _ = writeln!(s, "  {{ a = \"h{h}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }},");
    }
    s.push_str("]\n");
    s
}

/// The 1,024-GPU rail-optimized example; every GPU sends 16 MB to a GPU of the next node on
/// the next rail (so every flow crosses the spine tier).
pub fn rail_1024() -> String {
    let mut s = String::from(include_str!("../../../examples/rail-1024gpu.toml"));
    s.push_str("\n[simulation]\nseed = 1\n");
    for node in 0..128 {
        for r in 0..8 {
            let _ = write!(
                s,
                "\n[[traffic]]\npattern = \"flow\"\nsrc = \"node{node}-nic{r}\"\ndst = \"node{}-nic{}\"\nsize_bytes = 16000000\n",
                (node + 1) % 128,
                (r + 1) % 8
            );
        }
    }
    s
}

pub fn all() -> Vec<Scenario> {
    vec![
        Scenario { name: "incast", about: "64:1 incast, 100G, DCQCN, one switch, 2 MB per sender", fabric: incast() },
        Scenario {
            name: "permutation-16",
            about: "k=4 fat tree (16 hosts), 400G, 1 µs links, permutation, 200 µs",
            fabric: permutation(4),
        },
        Scenario {
            name: "permutation-128",
            about: "k=8 fat tree (128 hosts), 400G, 1 µs links, permutation, 200 µs",
            fabric: permutation(8),
        },
        Scenario {
            name: "permutation-1024",
            about: "k=16 fat tree (1,024 hosts), 400G, 1 µs links, permutation, 200 µs",
            fabric: permutation(16),
        },
        Scenario {
            name: "rail-1024",
            about: "1,024-GPU rail-optimized, every GPU sends 16 MB to a peer on another rail",
            fabric: rail_1024(),
        },
    ]
}

/// What one benchmark run measured.
#[derive(Clone, Debug)]
pub struct BenchResult {
    pub name: &'static str,
    pub wall_seconds: f64,
    /// CPU time of the engine thread (differs from wall time on a busy machine).
    pub cpu_seconds: Option<f64>,
    pub simulated_seconds: f64,
    pub events: u64,
    pub data_packets: u64,
    pub packet_hops: u64,
    pub peak_rss_bytes: Option<u64>,
    /// Most packets alive at once (queues, wires, NIC buffers).
    pub peak_packets: usize,
    /// Runs made; the times are those of the median run (by CPU time).
    pub runs: usize,
}

impl BenchResult {
    /// One line; rates are per second of the engine thread's CPU time when it is known (so a
    /// busy machine does not distort them), else per wall second.
    pub fn line(&self) -> String {
        let (t, basis) = match self.cpu_seconds {
            Some(c) if c > 0.0 => (c, "cpu"),
            _ => (self.wall_seconds.max(1e-9), "wall"),
        };
        format!(
            "{:<17} {:>10.0} data pkts/s {:>10.0} pkt-hops/s {:>10.0} events/s ({basis})  peak RSS {:>6}  wall {:>7.3} s  cpu {:>7.3} s  (median of {} runs; {:.0} µs simulated, {} data packets, peak {} in flight)",
            self.name,
            self.data_packets as f64 / t,
            self.packet_hops as f64 / t,
            self.events as f64 / t,
            self.peak_rss_bytes.map(|b| format!("{} MB", b / 1_000_000)).unwrap_or_else(|| "n/a".into()),
            self.wall_seconds,
            self.cpu_seconds.unwrap_or(f64::NAN),
            self.runs,
            self.simulated_seconds * 1e6,
            self.data_packets,
            self.peak_packets
        )
    }
}

/// Peak resident set size of this process so far (Linux `VmHWM`).
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`, nanoseconds).
pub fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 * 1e-9)
}

/// Loads and runs one scenario, timing only the engine (not parsing or routing).
pub fn run(s: &Scenario) -> Result<BenchResult, String> {
    run_probed(s, &|| 0).map(|(r, _)| r)
}

/// Runs a scenario at least this many times...
const MIN_RUNS: usize = 3;
/// ...and until this much engine time has passed (short scenarios repeat more: on a shared
/// machine one run of a few milliseconds says little).
const MIN_TOTAL_SECONDS: f64 = 1.0;
const MAX_RUNS: usize = 50;

/// Like `run`, and also returns how much `probe` grew across the event loop of one run at
/// most (the engine bench passes an allocation counter). The scenario runs several times
/// (fresh engine each time; the runs are identical but for their timing) and the median run
/// by CPU time is reported.
pub fn run_probed(s: &Scenario, probe: &dyn Fn() -> u64) -> Result<(BenchResult, u64), String> {
    let m = rocelab_model::load_str(s.name, &s.fabric).map_err(|e| e.to_string())?;
    let mut results = Vec::new();
    let mut probed_max = 0;
    let mut total = 0.0;
    while results.len() < MIN_RUNS || (total < MIN_TOTAL_SECONDS && results.len() < MAX_RUNS) {
        let (r, probed) = run_once(s, &m, probe)?;
        total += r.cpu_seconds.unwrap_or(r.wall_seconds);
        probed_max = probed_max.max(probed);
        results.push(r);
    }
    let runs = results.len();
    results.sort_by(|a, b| a.cpu_seconds.unwrap_or(a.wall_seconds).total_cmp(&b.cpu_seconds.unwrap_or(b.wall_seconds)));
    let mut r = results.swap_remove(runs / 2);
    r.runs = runs;
    r.peak_rss_bytes = peak_rss_bytes();
    Ok((r, probed_max))
}

fn run_once(s: &Scenario, m: &rocelab_model::Model, probe: &dyn Fn() -> u64) -> Result<(BenchResult, u64), String> {
    let opts = crate::options_from_model(m);
    let mut sim = crate::build(m, opts).map_err(|d| format!("{d:?}"))?;
    let c0 = thread_cpu_seconds();
    let p0 = probe();
    let t0 = std::time::Instant::now();
    sim.run(&mut |_| {});
    let wall = t0.elapsed().as_secs_f64();
    let probed = probe() - p0;
    let cpu = match (c0, thread_cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let st = sim.stats();
    let r = BenchResult {
        name: s.name,
        wall_seconds: wall,
        cpu_seconds: cpu,
        simulated_seconds: sim.now().as_secs_f64(),
        events: sim.events(),
        data_packets: st.data_sent,
        packet_hops: st.packet_hops,
        peak_rss_bytes: None,
        peak_packets: sim.peak_packets(),
        runs: 1,
    };
    Ok((r, probed))
}
