//! TCP as Linux runs it (`Transport::Cubic`), beside the DCTCP/Reno window: delayed ACKs,
//! SACK recovery that resends only the holes, and a retransmission timeout of SRTT + 200 ms
//! instead of the NIC's 4.3 s.

use rocelab_model::{load_str, Model, SimTime};
use rocelab_sim::engine::{Fault, FaultAction};
use rocelab_sim::traffic::{FlowSpec, Transport};
use rocelab_sim::{RunReport, Sim, SimOptions};

/// h0 and h1 on one switch, 100 Gb/s, MTU 4096.
fn star() -> Model {
    star_with("")
}

/// `star` with `nic` added to its `[nic]` table.
fn star_with(nic: &str) -> Model {
    let text = r#"[fabric]
name = "tcp"
[switch_models.sw]
preset = "ns3-reference"
ports = 2
[nic]
mtu = 4096
NIC
[topology.explicit]
node = [ { name = "sw0", kind = "switch", model = "sw" }, { name = "h0", kind = "host" }, { name = "h1", kind = "host" } ]
link = [ { a = "h0", b = "sw0", speed_gbps = 100, length_m = 2 }, { a = "h1", b = "sw0", speed_gbps = 100, length_m = 2 } ]
"#;
    load_str("tcp.toml", &text.replace("NIC", nic)).unwrap_or_else(|e| panic!("{e}"))
}

/// One flow h0 → h1 of `bytes` in a lossy class, as `transport`, with `faults`; the run's
/// report and its global counters (packets sent, data packets sent, data packets dropped).
fn run(m: &Model, bytes: u64, transport: Transport, faults: Vec<Fault>) -> (RunReport, u64, u64, u64) {
    let lossy = m.qos.classes.iter().position(|c| !c.lossless).expect("a lossy class");
    let f = FlowSpec {
        src: m.node_by_name("h0").unwrap(),
        dst: m.node_by_name("h1").unwrap(),
        size_bytes: bytes,
        start: SimTime::ZERO,
        class: lossy,
        qps: 1,
        origin: 0,
        tag: 0,
        sport: Some(50000),
        transport,
    };
    let mut sim = Sim::new(m, vec![f], faults, SimOptions::default()).unwrap_or_else(|d| panic!("{d:?}"));
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap_or_else(|e| panic!("{e:#?}"));
    let st = sim.stats();
    let counts = (st.sent, st.data_sent, st.data_dropped);
    (RunReport::from_sim(&sim), counts.0, counts.1, counts.2)
}

fn link_cut(m: &Model, at_us: f64, for_us: f64) -> Vec<Fault> {
    let h1 = m.node_by_name("h1").unwrap();
    let p = m.node(h1).ports().next().unwrap();
    let ports = (p.0, m.port(p).peer.0);
    let t = |us: f64| SimTime::from_secs_f64(us * 1e-6);
    vec![
        Fault { at: t(at_us), action: FaultAction::Link { ports, up: false } },
        Fault { at: t(at_us + for_us), action: FaultAction::Link { ports, up: true } },
    ]
}

#[test]
fn linux_acknowledges_every_second_segment_after_its_quick_acks() {
    // 1 MB in 245 segments of 4096 B: the first 16 acknowledged one by one (quick-ACK mode
    // at a connection's start), then every second one, the last at once: 16 + 229/2 → 131.
    // The DCTCP window's receiver acknowledges every 4th (the engine's RDMA-like default).
    let m = star();
    let (r, sent, data, _) = run(&m, 1_000_000, Transport::Cubic, vec![]);
    assert_eq!(r.flows_completed, 1);
    let npkts = 1_000_000u64.div_ceil(4096);
    assert_eq!(sent - data, 16 + (npkts - 16).div_ceil(2), "ACKs of {npkts} segments");
    let (_, sent, data, _) = run(&m, 1_000_000, Transport::Dctcp, vec![]);
    assert_eq!(sent - data, npkts.div_ceil(4));
}

#[test]
fn sack_resends_only_the_holes() {
    // h1's link is cut for 3 µs mid-flow: what was queued toward it and on the cable is lost,
    // a burst. Linux's receiver keeps what arrives after it and names the hole; the sender
    // resends exactly the lost data packets. Reno/DCTCP's go-back-N resends everything it had
    // sent after the first loss as well.
    let m = star();
    let bytes = 8_000_000;
    let (r, _, _, lost) = run(&m, bytes, Transport::Cubic, link_cut(&m, 40.0, 3.0));
    assert_eq!(r.flows_completed, 1);
    assert!(lost > 0, "the cut loses packets");
    let resent = r.flows[0].retransmitted_packets;
    assert_eq!(resent, lost, "SACK: {resent} resent for {lost} lost");
    let (g, _, _, lost_gbn) = run(&m, bytes, Transport::LossBased, link_cut(&m, 40.0, 3.0));
    let gbn = g.flows[0].retransmitted_packets;
    assert!(gbn > lost_gbn, "go-back-N resends what followed the loss too: {gbn} for {lost_gbn}");
}

#[test]
fn a_lost_tail_waits_for_linux_s_rto_not_the_nic_s() {
    // The cut outlasts the flow's last send: the tail is lost and nothing arrives to reveal
    // it. Linux's timer fires at SRTT + 200 ms (a few µs of SRTT here), then slow start from
    // one segment finishes in microseconds (the receiver quick-ACKs after the pause).
    let m = star();
    let (r, ..) = run(&m, 1_000_000, Transport::Cubic, link_cut(&m, 30.0, 500.0));
    let fct = r.flows[0].fct_seconds.unwrap();
    assert!(fct > 0.2 && fct < 0.2 + 1e-3, "Linux RTO ≈ 200 ms: {fct} s");
    // The same loss under the DCTCP window waits for the NIC profile's timeout (4.295 s) at
    // least once.
    let (r, ..) = run(&m, 1_000_000, Transport::Dctcp, link_cut(&m, 30.0, 500.0));
    let fct = r.flows[0].fct_seconds.unwrap();
    assert!(fct > 4.29, "NIC timeout: {fct} s");
}

#[test]
fn a_host_set_to_cubic_runs_its_tcp_without_ecn_as_linux() {
    // `[nic] tcp_congestion_control = "cubic"`: TCP traffic that did not negotiate ECN runs
    // Linux's transport (its ACK count shows the delayed ACKs); by default it runs Reno's.
    let npkts = 1_000_000u64.div_ceil(4096);
    let (_, sent, data, _) =
        run(&star_with("tcp_congestion_control = \"cubic\""), 1_000_000, Transport::LossBased, vec![]);
    assert_eq!(sent - data, 16 + (npkts - 16).div_ceil(2));
    let (_, sent, data, _) = run(&star(), 1_000_000, Transport::LossBased, vec![]);
    assert_eq!(sent - data, npkts.div_ceil(4));
}
