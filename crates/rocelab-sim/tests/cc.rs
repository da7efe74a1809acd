//! The congestion-control algorithms behind the common interface, end to end on the packet
//! engine: HPCC holds a 2:1 incast's bottleneck at η with an empty queue; TIMELY and the
//! rate-based DCTCP control the same incast; every run conserves packets and finishes.

use rocelab_model::{load_str, Model, PortId, SimTime};
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::{build, RunReport, Sim, SimOptions};

/// `n` hosts on one switch at 100 Gb/s (200 m cables: 1 µs each way, as HPCC's ns-3 topologies), 4,096 B MTU, the NIC's `[nic]` body
/// `nic`, and a `senders`:1 incast of `size` bytes each into h0.
fn incast(n: usize, nic: &str, senders: u32, size: u64) -> Model {
    let nodes: Vec<String> = (0..n).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
    let links: Vec<String> =
        (0..n).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 200 }}")).collect();
    let text = format!(
        r#"[fabric]
name = "cc"
[switch_models.sw]
preset = "ns3-reference"
ports = {n}
[topology.explicit]
node = [ {{ name = "sw0", kind = "switch", model = "sw" }}, {} ]
link = [ {} ]
[nic]
mtu = 4096
{nic}
[[traffic]]
pattern = "incast"
dst = "h0"
senders = {senders}
size_bytes = {size}
"#,
        nodes.join(", "),
        links.join(", ")
    );
    load_str("cc.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn bottleneck(m: &Model) -> PortId {
    let h = m.node_by_name("h0").unwrap();
    m.port(PortId(m.node(h).first_port)).peer
}

/// The bottleneck's time-average queue (bytes, sampled every 100 ns) and the receiver's
/// goodput (Gb/s) between `from` and `to` µs.
fn window(sim: &mut Sim, port: PortId, from: u64, to: u64) -> (f64, f64) {
    sim.run_until(SimTime::from_us(from));
    let before: u64 = sim.flow_delivered_bytes().iter().sum();
    let (mut sum, mut n) = (0u128, 0u64);
    let step = SimTime(100_000);
    let mut t = SimTime::from_us(from);
    while t < SimTime::from_us(to) {
        t += step;
        sim.run_until(t);
        sum += sim.queued_bytes(port) as u128;
        n += 1;
    }
    let after: u64 = sim.flow_delivered_bytes().iter().sum();
    (sum as f64 / n as f64, (after - before) as f64 * 8.0 / ((to - from) as f64 * 1e-6) / 1e9)
}

fn finish(mut sim: Sim) -> RunReport {
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap_or_else(|e| panic!("{e:#?}"));
    let r = RunReport::from_sim(&sim);
    let t = &r.totals;
    assert_eq!(t.packets_sent, t.packets_delivered + t.packets_dropped + t.packets_in_flight, "{t:?}");
    assert_eq!(t.packets_dropped, 0);
    r
}

/// HPCC's fixed point on one bottleneck: with U = txRate/B + q/(B·T) = η and η < 1 the link
/// runs at η·B, below its rate, so the queue drains to zero and stays there; what is left is
/// the additive probing (each flow adds R_AI = 50 Mb/s per update: 0.1 % of B for two flows)
/// and packet granularity: two senders' frames meeting leave one 4,220 B frame (4,096 B +
/// 82 B of headers + 42 B of INT) waiting, which adds 4,220·8/(B·T) = 7 % to that hop's u at
/// this path's T = 4.7 µs; min(q, q_prev) filters a lone collision but not all, so the load
/// sits a little under η. Bound asserted: wire load in [η − 1.5 %, η + 1 %] and a time-average
/// queue under one frame.
#[test]
fn hpcc_holds_a_2_to_1_incast_at_eta_with_an_empty_queue() {
    let m = incast(3, "congestion_control = \"hpcc\"", 2, 40_000_000);
    let port = bottleneck(&m);
    let mut sim = build(&m, SimOptions { seed: 3, ..SimOptions::default() }).unwrap();
    let (q, goodput) = window(&mut sim, port, 1_000, 3_000);
    // Wire load = goodput scaled by the frame over its payload.
    let frame = (4096 + DATA_OVERHEAD + 42) as f64;
    let load = goodput * frame / 4096.0 / 100.0;
    let eta = m.nics[0].hpcc.target_util;
    eprintln!("hpcc: load {load:.4}, queue {q:.0} B, goodput {goodput:.2} Gb/s");
    assert!(load > eta - 0.015 && load < eta + 0.01, "bottleneck load {load:.4} vs η = {eta}");
    assert!(q < frame, "time-average queue {q:.0} B");
    let r = finish(sim);
    assert_eq!(r.totals.ecn_marked_packets, 0, "HPCC's packets are not ECN-capable");
}

/// The same incast without congestion control fills the queue (PFC bounds it): what HPCC's
/// empty queue above is measured against.
#[test]
fn without_congestion_control_the_same_incast_queues() {
    let m = incast(3, "congestion_control = \"none\"", 2, 40_000_000);
    let port = bottleneck(&m);
    let mut sim = build(&m, SimOptions { seed: 3, ..SimOptions::default() }).unwrap();
    let (q, goodput) = window(&mut sim, port, 1_000, 3_000);
    assert!(q > 20_000.0, "time-average queue {q:.0} B");
    assert!(goodput > 95.0, "the link runs at line rate: {goodput:.1} Gb/s");
    finish(sim);
}

/// The rate-based DCTCP (HPCC's ns-3 CC_MODE 8) on the same incast: the queue settles inside
/// the class's marking band (the default class marks from Kmin 150 KB to Kmax 1.5 MB), not at
/// the uncontrolled multi-megabyte level, the link stays busy, and the run completes.
#[test]
fn rate_dctcp_controls_the_incast() {
    let m = incast(3, "congestion_control = \"dctcp\"", 2, 20_000_000);
    let port = bottleneck(&m);
    let mut sim = build(&m, SimOptions { seed: 3, ..SimOptions::default() }).unwrap();
    let (q, goodput) = window(&mut sim, port, 500, 1_500);
    eprintln!("dctcp: queue {q:.0} B, goodput {goodput:.2} Gb/s");
    assert!(goodput > 80.0, "goodput {goodput:.1} Gb/s");
    assert!(q > 150_000.0 && q < 1_500_000.0, "time-average queue {q:.0} B");
    let r = finish(sim);
    assert!(r.flows.iter().all(|f| f.fct_seconds.is_some()), "every flow finishes");
    assert!(r.totals.cnp_sent == 0 && r.totals.ecn_marked_packets > 0, "marks echoed on ACKs, no CNPs");
}

/// TIMELY on the same incast, with the paper's thresholds: the 2:1 onset at 100 Gb/s raises
/// the RTT by about a microsecond per microsecond, so the first samples past T_low carry a
/// normalized gradient far above 1/β and both flows drop to the floor (1 − β·g < 0); from
/// there, one sample per packet at 100 Mb/s recovers slowly. The queue is gone and the floor
/// holds: what the equations say, and TIMELY's known weakness at high link speed. With the
/// thresholds out of reach (T_low 1 ms) only the additive branch runs and the link stays at
/// line rate, queueing as without control: the rate follows the RTT, not a fixed schedule.
#[test]
fn timely_follows_the_rtt_on_the_incast() {
    let run = |nic: &str| {
        let m = incast(3, nic, 2, 20_000_000);
        let port = bottleneck(&m);
        let mut sim = build(&m, SimOptions { seed: 3, ..SimOptions::default() }).unwrap();
        window(&mut sim, port, 500, 1_500)
    };
    let (q, goodput) = run("congestion_control = \"timely\"");
    eprintln!("timely: queue {q:.0} B, goodput {goodput:.2} Gb/s");
    assert!(q < 5_000.0, "time-average queue {q:.0} B");
    assert!((0.19..5.0).contains(&goodput), "near the 2 × 100 Mb/s floor: {goodput:.2} Gb/s");
    let (q, goodput) = run("congestion_control = \"timely\"\n[nic.timely]\nt_low_us = 1000\nt_high_us = 2000");
    eprintln!("timely, T_low 1 ms: queue {q:.0} B, goodput {goodput:.2} Gb/s");
    assert!(goodput > 95.0 && q > 1_000_000.0, "{goodput:.1} Gb/s, queue {q:.0} B");
}
