//! The workload API through the engine: messages that start when others are delivered.

use rocelab_model::{load_str, Model, NodeId, SimTime};
use rocelab_sim::workload::{Delivered, Message, Net, Workload};
use rocelab_sim::{RunReport, Sim, SimOptions};
use std::cell::RefCell;
use std::rc::Rc;

/// Three hosts on one switch, 100G links with 1 µs of propagation each, no congestion control.
const STAR3: &str = r#"[fabric]
name = "star3"
[switch_models.sw]
preset = "ns3-reference"
ports = 3
[nic]
mtu = 4096
congestion_control = "none"
[topology.explicit]
node = [ { name = "sw0", kind = "switch", model = "sw" }, { name = "a", kind = "host" }, { name = "b", kind = "host" }, { name = "c", kind = "host" } ]
link = [ { a = "a", b = "sw0", speed_gbps = 100, delay_ns = 1000 }, { a = "b", b = "sw0", speed_gbps = 100, delay_ns = 1000 }, { a = "c", b = "sw0", speed_gbps = 100, delay_ns = 1000 } ]
"#;

fn model() -> Model {
    load_str("star3.toml", STAR3).unwrap_or_else(|e| panic!("{e}"))
}

fn host(m: &Model, name: &str) -> NodeId {
    m.node_by_name(name).unwrap()
}

/// Sends `hops` messages along a chain of hosts, each posted when the previous is delivered,
/// and records every delivery.
struct Chain {
    path: Vec<NodeId>,
    size: u64,
    log: Rc<RefCell<Vec<Delivered>>>,
}

impl Workload for Chain {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        net.post(Message::new(self.path[0], self.path[1], self.size).tag(1)).unwrap();
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        assert_eq!(done.at, net.now());
        self.log.borrow_mut().push(done);
        let next = done.tag as usize + 1;
        if next < self.path.len() {
            net.post(Message::new(self.path[next - 1], self.path[next], self.size).tag(next as u64)).unwrap();
        }
    }
}

fn run_chain(m: &Model, path: &[&str], size: u64) -> (Vec<Delivered>, RunReport) {
    let (log, sim_report, _) = run_chain_with(m, path, size, SimOptions::default());
    (log, sim_report)
}

/// `run_chain` with options; also returns how many QPs the engine still holds at the end.
fn run_chain_with(m: &Model, path: &[&str], size: u64, opts: SimOptions) -> (Vec<Delivered>, RunReport, usize) {
    let log = Rc::new(RefCell::new(Vec::new()));
    let w = Chain { path: path.iter().map(|n| host(m, n)).collect(), size, log: log.clone() };
    let mut sim = Sim::with_workload(m, Box::new(w), Vec::new(), opts).unwrap();
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap();
    let r = RunReport::from_sim(&sim);
    let v = log.borrow().clone();
    (v, r, sim.snapshot().qps.len())
}

#[test]
fn a_chain_ends_at_the_sum_of_the_physical_times() {
    let m = model();
    // 10 full packets: 40,960 B of payload, 4,178 wire bytes each (82 B of headers).
    let size = 10 * 4096;
    let (log, r) = run_chain(&m, &["a", "b", "c"], size);
    // One hop host → switch → host, store and forward at 100 Gb/s: the first NIC serializes
    // all 10 packets, the switch the last one once more, and each link adds 1 µs:
    // (10 + 1) · 4178 B · 80 ps/B + 2 · 1 µs.
    let ser = 4178 * 80;
    let hop = SimTime(11 * ser + 2 * 1_000_000);
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].at, hop, "a → b delivered at {:?}", log[0].at);
    // b → c starts the moment a → b is delivered. Its first packet leaves b behind the ACK b
    // sends for a → b's last packet (control before data, 86 wire bytes), so it ends one
    // ACK serialization after twice the hop time.
    let ack = 86 * 80;
    assert_eq!(log[1].start, hop);
    assert_eq!(log[1].at, SimTime(2 * hop.0 + ack));
    assert_eq!((log[0].tag, log[1].tag), (1, 2));
    // Each message is a row of the report, with its own FCT.
    assert_eq!(r.flows.len(), 2);
    assert!((r.flows[1].start_seconds - hop.0 as f64 * 1e-12).abs() < 1e-15);
    assert_eq!(r.totals.packets_dropped, 0);
}

#[test]
fn ten_thousand_chained_messages_run_and_are_counted() {
    let m = model();
    let path: Vec<&str> = ["a", "b", "c"].iter().cycle().take(10_001).copied().collect();
    let (log, r) = run_chain(&m, &path, 1000);
    assert_eq!(log.len(), 10_000);
    assert!(log.windows(2).all(|w| w[1].start == w[0].at && w[1].at > w[0].at));
    // One single-packet hop: 1,082 wire bytes serialized twice plus 2 µs; every hop after the
    // first also waits for the ACK (86 B) its sender just sent for the previous message.
    let hop = 2 * 1082 * 80 + 2_000_000;
    let ack = 86 * 80;
    assert_eq!(log.last().unwrap().at, SimTime(10_000 * hop + 9_999 * ack));
    assert_eq!(r.flows.len(), 10_000);
    assert_eq!(r.flows_completed, 10_000);
}

#[test]
fn reused_qp_slots_give_the_same_bytes_and_hold_no_qp_at_the_end() {
    // 2,000 chained messages of 3 packets each (a partial last one): with slots reused, the
    // report (per-flow rows, FCTs, counters) is byte for byte the run without, and the engine
    // ends holding no QP where it held 2,000.
    let m = model();
    let path: Vec<&str> = ["a", "b", "c"].iter().cycle().take(2_001).copied().collect();
    let (log0, r0, held0) = run_chain_with(&m, &path, 10_000, SimOptions::default());
    let (log1, r1, held1) =
        run_chain_with(&m, &path, 10_000, SimOptions { recycle_qps: true, ..SimOptions::default() });
    assert_eq!(log0, log1);
    assert_eq!(r0.to_json(), r1.to_json());
    assert_eq!(r1.flows.len(), 2_000);
    assert_eq!((held0, held1), (2_000, 0));
}

#[test]
fn bad_messages_are_refused_with_a_reason() {
    struct Bad;
    impl Workload for Bad {
        fn start(&mut self, net: &mut Net<'_, '_>) {
            let m = net.model();
            let (a, sw) = (m.node_by_name("a").unwrap(), m.node_by_name("sw0").unwrap());
            assert!(net.post(Message::new(a, a, 10)).unwrap_err().to_string().contains("to itself"));
            assert!(net.post(Message::new(a, sw, 10)).unwrap_err().to_string().contains("must be a host"));
            assert!(net.post(Message::new(a, m.node_by_name("b").unwrap(), 0)).is_err());
            let mut many = Message::new(a, m.node_by_name("b").unwrap(), 10);
            many.qps = 11;
            assert!(net.post(many).is_err());
            let mut late = Message::new(a, m.node_by_name("b").unwrap(), 10);
            late.start = Some(SimTime::MAX);
            assert!(net.post(late).unwrap_err().to_string().contains("clock range"));
            // A good one after the refusals: it alone runs.
            assert_eq!(net.post(Message::new(a, m.node_by_name("b").unwrap(), 10)), Ok(0));
        }
    }
    let m = model();
    let mut sim = Sim::with_workload(&m, Box::new(Bad), Vec::new(), SimOptions::default()).unwrap();
    sim.run(&mut |_| {});
    let r = RunReport::from_sim(&sim);
    assert_eq!((r.flows.len(), r.flows_completed), (1, 1));
}

/// Counts what an observer is told.
#[derive(Default)]
struct Counts {
    pfc: u64,
    drops: u64,
    marks: u64,
    cnps: u64,
    done: u64,
    samples: u64,
    buffer_samples: u64,
    queue_samples: u64,
}

struct Counter(Rc<RefCell<Counts>>);

impl rocelab_sim::observer::Observer for Counter {
    fn observe(&mut self, e: &rocelab_sim::observer::Observed) {
        use rocelab_sim::observer::Observed::*;
        let mut c = self.0.borrow_mut();
        match e {
            PfcReceived { .. } => c.pfc += 1,
            Drop { .. } => c.drops += 1,
            EcnMark { .. } => c.marks += 1,
            CnpSent { .. } => c.cnps += 1,
            MessageDone { .. } => c.done += 1,
            Sample { .. } => c.samples += 1,
            BufferSample { .. } => c.buffer_samples += 1,
            QueueSample { .. } => c.queue_samples += 1,
        }
    }
}

#[test]
fn an_observer_hears_exactly_what_the_counters_count_and_changes_nothing() {
    // A 16:1 DCQCN incast into a small buffer: pauses, marks, CNPs and headroom drops all happen.
    let mut text = String::from(
        r#"[fabric]
name = "obs"
[switch_models.sw]
preset = "ns3-reference"
ports = 17
buffer_bytes = 2000000
[nic]
congestion_control = "dcqcn"
ack_timeout = 8
[qos.pfc]
headroom_bytes = 3000
[simulation]
sample_interval_us = 10
[topology.explicit]
node = [ { name = "sw0", kind = "switch", model = "sw" }"#,
    );
    let mut links = String::new();
    for i in 0..17 {
        text.push_str(&format!(", {{ name = \"h{i}\", kind = \"host\" }}"));
        links.push_str(&format!(
            "{}{{ a = \"h{i}\", b = \"sw0\", speed_gbps = 100, length_m = 2 }}",
            if i > 0 { ", " } else { "" }
        ));
    }
    text.push_str(&format!(
        " ]\nlink = [ {links} ]\n[[traffic]]\npattern = \"incast\"\ndst = \"h0\"\nsenders = 16\nsize_bytes = 500000\n"
    ));
    let m = load_str("obs.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let opts = rocelab_sim::options_from_model(&m);
    let plain = {
        let mut sim = rocelab_sim::build(&m, opts.clone()).unwrap();
        sim.run(&mut |_| {});
        RunReport::from_sim(&sim)
    };
    let counts = Rc::new(RefCell::new(Counts::default()));
    let mut sim = rocelab_sim::build(&m, opts).unwrap();
    sim.add_observer(Box::new(Counter(counts.clone())));
    sim.run(&mut |_| {});
    let r = RunReport::from_sim(&sim);
    assert_eq!(r.to_json(), plain.to_json(), "observing changes nothing");
    let c = counts.borrow();
    let t = &r.totals;
    let pfc_rx: f64 = r
        .metrics
        .iter()
        .filter(|x| x.name == "rocelab_pfc_pause_frames_total" && x.labels["direction"] == "rx")
        .map(|x| x.value)
        .sum();
    assert!(c.pfc > 0 && c.drops > 0 && c.marks > 0 && c.cnps > 0, "the scenario exercises every kind");
    assert_eq!(c.pfc as f64, pfc_rx);
    assert_eq!(c.drops, t.packets_dropped);
    assert_eq!(c.marks, t.ecn_marked_packets);
    assert_eq!(c.cnps, t.cnp_sent);
    assert_eq!(c.done, r.flows_completed as u64);
    assert!(c.samples >= (r.simulated_seconds / 10e-6) as u64, "{} samples in {} s", c.samples, r.simulated_seconds);
    // One switch: one buffer row per sample; the series is what the observers heard.
    assert_eq!(c.buffer_samples, c.samples);
    assert!(c.queue_samples > 0);
    assert_eq!(sim.snapshot().series.len() as u64, c.buffer_samples + c.queue_samples);
}

/// A step as a training loop runs it: compute for 10 µs, send a → b, compute 5 µs more after
/// the delivery, send b → c. Wake-ups carry the compute; the run waits for them.
struct ComputeThenSend {
    a: NodeId,
    b: NodeId,
    c: NodeId,
    log: Rc<RefCell<Vec<(u64, SimTime)>>>,
}

impl Workload for ComputeThenSend {
    fn start(&mut self, net: &mut Net<'_, '_>) {
        net.wake_at(SimTime(10_000_000), 1).unwrap();
        // Asked in this order for the same time: heard in this order.
        net.wake_at(SimTime(10_000_000), 2).unwrap();
    }

    fn on_wake(&mut self, tag: u64, net: &mut Net<'_, '_>) {
        self.log.borrow_mut().push((tag, net.now()));
        match tag {
            1 => {
                net.post(Message::new(self.a, self.b, 4096).tag(10)).unwrap();
            }
            3 => {
                net.post(Message::new(self.b, self.c, 4096).tag(11)).unwrap();
            }
            _ => {}
        }
    }

    fn on_delivered(&mut self, done: Delivered, net: &mut Net<'_, '_>) {
        self.log.borrow_mut().push((done.tag, done.at));
        if done.tag == 10 {
            let at = net.now() + SimTime(5_000_000);
            net.wake_at(at, 3).unwrap();
        }
    }
}

#[test]
fn wake_ups_carry_compute_phases_and_keep_the_run_alive() {
    let m = model();
    let log = Rc::new(RefCell::new(Vec::new()));
    let w = ComputeThenSend { a: host(&m, "a"), b: host(&m, "b"), c: host(&m, "c"), log: log.clone() };
    let mut sim = Sim::with_workload(&m, Box::new(w), Vec::new(), SimOptions::default()).unwrap();
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap();
    let log = log.borrow().clone();
    // One packet of 4,096 B (4,178 on the wire) through one switch: two serializations at
    // 80 ps/B and two 1 µs links.
    let hop = 2 * 4178 * 80 + 2_000_000;
    let t1 = 10_000_000 + hop;
    let t3 = t1 + 5_000_000;
    assert_eq!(
        log,
        vec![
            (1, SimTime(10_000_000)),
            (2, SimTime(10_000_000)),
            (10, SimTime(t1)),
            (3, SimTime(t3)),
            (11, SimTime(t3 + hop)),
        ]
    );
    let r = RunReport::from_sim(&sim);
    assert_eq!(r.flows_completed, 2);
    assert!(net_refuses_a_wake_beyond_the_clock());
}

fn net_refuses_a_wake_beyond_the_clock() -> bool {
    struct Late(Rc<RefCell<bool>>);
    impl Workload for Late {
        fn start(&mut self, net: &mut Net<'_, '_>) {
            let beyond = SimTime(rocelab_sim::workload::LATEST_START.0 + 1);
            *self.0.borrow_mut() = net.wake_at(beyond, 0).is_err();
        }
    }
    let m = model();
    let refused = Rc::new(RefCell::new(false));
    let mut sim = Sim::with_workload(&m, Box::new(Late(refused.clone())), Vec::new(), SimOptions::default()).unwrap();
    sim.run(&mut |_| {});
    let r = *refused.borrow();
    r
}

#[test]
fn a_message_with_a_given_source_port_keeps_its_ecmp_hash() {
    // Messages between the same hosts with the same source port hash alike; the report does
    // not show hashes, so look at the spines: with one port for every message, all data
    // crosses one spine.
    let text = r#"[fabric]
name = "ls2"
[topology.leaf_spine]
leaves = 2
spines = 4
hosts_per_leaf = 1
host_link = { speed_gbps = 100, length_m = 3 }
fabric_link = { speed_gbps = 100, length_m = 30 }
[nic]
congestion_control = "none"
"#;
    let m = load_str("ls2.toml", text).unwrap();
    struct Same(u16, u32);
    impl Workload for Same {
        fn start(&mut self, net: &mut Net<'_, '_>) {
            let (a, b) = (net.model().node_by_name("host0").unwrap(), net.model().node_by_name("host1").unwrap());
            for i in 0..8 {
                let mut msg = Message::new(a, b, 100_000).tag(i);
                msg.sport = Some(self.0);
                msg.qps = self.1;
                net.post(msg).unwrap();
            }
        }
        fn wants_deliveries(&self) -> bool {
            false
        }
    }
    let spines_used = |w: Same| {
        let mut sim = Sim::with_workload(&m, Box::new(w), Vec::new(), SimOptions::default()).unwrap();
        sim.run(&mut |_| {});
        let r = RunReport::from_sim(&sim);
        assert_eq!(r.flows_completed, 8);
        // Data crosses spine → leaf1 (ACKs come back on leaf1's own hash choice).
        let leaf1 = m.node_by_name("leaf1").unwrap();
        (0..4)
            .filter(|s| {
                let sp = m.node_by_name(&format!("spine{s}")).unwrap();
                let p = m.node(sp).ports().find(|p| m.port(m.port(*p).peer).node == leaf1).unwrap();
                let port = m.port_name(p).rsplit(':').next().unwrap().to_string();
                r.metrics.iter().any(|x| {
                    x.name == "rocelab_tx_bytes_total"
                        && x.labels["node"] == m.node(sp).name
                        && x.labels["port"] == port
                })
            })
            .count()
    };
    assert_eq!(spines_used(Same(50_000, 1)), 1, "one source port: one path");
    // Four QPs per message take four consecutive ports: with 4 spines they spread.
    assert!(spines_used(Same(50_000, 4)) > 1);
}
