//! The TCP-like transport (`Net::post_tcp`, DCTCP per RFC 8257) against what it must do: reach
//! line rate alone, answer ECN marks without CNPs, lose packets in a lossy class and still
//! deliver every byte.

use rocelab_model::{load_str, Model, NodeId};
use rocelab_sim::traffic::Transport;
use rocelab_sim::workload::{Message, Net, Workload};
use rocelab_sim::{RunReport, Sim, SimOptions};

/// `senders` hosts into `h0` through one switch at 100G; the switch buffer is `buffer` bytes.
fn star(n: usize, buffer: u64, classes: &str) -> Model {
    let nodes: Vec<String> = (0..n).map(|i| format!("{{ name = \"h{i}\", kind = \"host\" }}")).collect();
    let links: Vec<String> =
        (0..n).map(|i| format!("{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }}")).collect();
    let text = format!(
        "[switch_models.sw]\npreset = \"ns3-reference\"\nbuffer_bytes = {buffer}\nports = {n}\n[nic]\nmtu = 4096\n{classes}\n\
         [topology.explicit]\nnode = [ {{ name = \"sw0\", kind = \"switch\", model = \"sw\" }}, {} ]\nlink = [ {} ]\n",
        nodes.join(", "),
        links.join(", ")
    );
    load_str("tcp.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

struct Tcp {
    flows: Vec<(u32, u32, u64)>,
    class: Option<usize>,
    transport: Transport,
}

impl Workload for Tcp {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        for &(s, d, size) in &self.flows {
            let m = Message { class: self.class, ..Message::new(NodeId(s), NodeId(d), size) };
            net.post_with(m, self.transport).unwrap();
        }
    }
    fn wants_deliveries(&self) -> bool {
        false
    }
}

fn run(m: &Model, w: Tcp) -> RunReport {
    let mut sim = Sim::with_workload(m, Box::new(w), Vec::new(), SimOptions::default()).unwrap();
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap_or_else(|e| panic!("{e:#?}"));
    RunReport::from_sim(&sim)
}

/// Node ids: the switch is node 0, `h{i}` is node i + 1.
fn h(i: u32) -> u32 {
    i + 1
}

#[test]
fn one_tcp_flow_opens_its_window_to_line_rate() {
    let m = star(2, 32_000_000, "");
    let r = run(&m, Tcp { flows: vec![(h(1), h(0), 20_000_000)], class: None, transport: Transport::Dctcp });
    let f = &r.flows[0];
    // Slow start from 10 MSS costs a few round trips of a 1.6 ms transfer.
    assert!(f.throughput_gbps > 0.95 * 100.0 * 4096.0 / (4096.0 + 78.0), "{} Gb/s", f.throughput_gbps);
    assert_eq!(r.totals.packets_dropped, 0);
}

#[test]
fn tcp_answers_ecn_marks_with_its_window_not_with_cnps() {
    // The default RoCE class marks above 150 KB: four TCP senders into one port.
    let m = star(5, 32_000_000, "");
    let flows = (1..5).map(|i| (h(i), h(0), 4_000_000)).collect();
    let r = run(&m, Tcp { flows, class: None, transport: Transport::Dctcp });
    assert!(r.totals.ecn_marked_packets > 10, "{:?}", r.totals);
    assert_eq!(r.totals.cnp_sent, 0, "a TCP receiver echoes marks on ACKs");
    assert_eq!(r.flows_completed, 4);
    // The window held the queue near the marking threshold, far below the buffer.
    let peak = r.switches[0].buffer_peak_bytes;
    assert!(peak < 2_000_000, "peak buffer {peak} B");
}

#[test]
fn tcp_in_a_lossy_class_loses_packets_and_still_delivers_every_byte() {
    // Best effort on priority 0, no ECN: only drops tell the senders.
    let m = star(5, 1_000_000, "");
    let lossy = m.qos.class_by_name("default").unwrap();
    let flows: Vec<(u32, u32, u64)> = (1..5).map(|i| (h(i), h(0), 4_000_000)).collect();
    let r = run(&m, Tcp { flows, class: Some(lossy), transport: Transport::Dctcp });
    assert!(r.totals.packets_dropped > 0, "{:?}", r.totals);
    assert!(r.totals.retransmitted_packets > 0);
    assert_eq!(r.flows_completed, 4, "go-back-N from the NAK recovers every loss");
    let total: u64 = r.flows.iter().map(|f| f.delivered_bytes).sum();
    assert_eq!(total, 16_000_000);
}

#[test]
fn tcp_without_ecn_is_never_marked_and_fills_the_queue_a_dctcp_window_keeps_short() {
    // The same four senders into the RoCE class, which marks above 150 KB: loss-based TCP's
    // packets are not ECN-capable, so the switch cannot mark them, and with no loss in a
    // lossless class nothing tells the window to stop growing.
    let m = star(5, 32_000_000, "");
    let flows: Vec<(u32, u32, u64)> = (1..5).map(|i| (h(i), h(0), 4_000_000)).collect();
    let dctcp = run(&m, Tcp { flows: flows.clone(), class: None, transport: Transport::Dctcp });
    let reno = run(&m, Tcp { flows, class: None, transport: Transport::LossBased });
    assert!(dctcp.totals.ecn_marked_packets > 10, "{:?}", dctcp.totals);
    assert_eq!(reno.totals.ecn_marked_packets, 0, "{:?}", reno.totals);
    assert_eq!((reno.totals.cnp_sent, reno.totals.packets_dropped), (0, 0));
    assert_eq!(reno.flows_completed, 4);
    // Four windows in slow start, never cut: most of the 16 MB waits in the switch at once.
    let (d, r) = (dctcp.switches[0].buffer_peak_bytes, reno.switches[0].buffer_peak_bytes);
    assert!(r > 4 * d && r > 4_000_000, "peak with DCTCP {d} B, without ECN {r} B");
}
