//! The flow-level engine against the packet engine it stands in for (same paths, same
//! uncongested times) and against max-min fairness worked out by hand on a fabric.

use rocelab_model::{load_str, Model, SimTime};
use rocelab_sim::flow::maxmin::WaterFill;
use rocelab_sim::packet::DATA_OVERHEAD;
use rocelab_sim::{build_run, EngineKind, RunReport, SimOptions};

fn model(text: &str) -> Model {
    load_str("test.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run(m: &Model, engine: EngineKind) -> (RunReport, rocelab_sim::Snapshot) {
    let opts = SimOptions { engine, ..rocelab_sim::options_from_model(m) };
    let mut r = build_run(m, opts).unwrap_or_else(|d| panic!("{d:?}"));
    r.run(&mut |_| {});
    let snap = r.snapshot();
    (RunReport::from_snapshot(&snap, m), snap)
}

/// 4 leaves × 4 hosts, 4 spines, one 100G uplink to each: 4-way ECMP at every leaf.
fn leaf_spine(traffic: &str) -> Model {
    model(&format!(
        r#"[fabric]
name = "ls"
[topology.leaf_spine]
leaves = 4
spines = 4
hosts_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = 100, length_m = 30 }}
[nic]
congestion_control = "none"
[simulation]
seed = 3
{traffic}"#
    ))
}

#[test]
fn a_flow_crosses_the_same_links_on_both_engines() {
    // 16 hosts each send 2 MB to a permutation partner in 4 QPs: 64 QPs hashed over 4-way
    // ECMP at the leaves. A link's data bytes on the packet engine are whole QPs' wire bytes
    // plus some ACKs; the flow engine counts whole QPs' wire bytes: the QP counts per link
    // must agree everywhere.
    let m = leaf_spine("[[traffic]]\npattern = \"permutation\"\nsize_bytes = 2000000\nqps = 4\n");
    let (_, p) = run(&m, EngineKind::Packet);
    let (_, f) = run(&m, EngineKind::Flow);
    let mtu = m.nics[0].mtu as u64;
    let qp_bytes = 500_000 + 500_000u64.div_ceil(mtu) * DATA_OVERHEAD as u64;
    let mut crossed = 0;
    for (a, b) in p.ports.iter().zip(&f.ports) {
        assert_eq!(b.tx_bytes % qp_bytes, 0);
        let on_flow = b.tx_bytes / qp_bytes;
        // ACKs are ~2 % of the data: rounding down counts the QPs on the packet engine.
        let on_packet = a.tx_bytes / qp_bytes;
        assert_eq!(on_packet, on_flow, "port {:?}: packet {} B, flow {} B", a.port, a.tx_bytes, b.tx_bytes);
        crossed += on_flow;
    }
    assert!(crossed >= 64 * 2, "every QP crosses at least its two host links");
}

#[test]
fn three_flows_over_two_bottlenecks_get_their_max_min_rates() {
    // Two switches s0 – s1 (100G), h0 and h1 on s0, h2 and h3 on s1; host links 100G but
    // h3's, 50G. Flow A h0 → h3 crosses s0→s1 and s1→h3, flow B h1 → h2 crosses s0→s1, flow
    // C h2 → h3 crosses s1→h3. Max-min: s1→h3 (50G) fills first, A and C at 25G each; s0→s1
    // (100G) then has 75G left for B.
    let text = r#"[fabric]
name = "chain"
[switch_models.sw]
preset = "ns3-reference"
ports = 4
[nic]
congestion_control = "none"
[topology.explicit]
node = [ { name = "s0", kind = "switch", model = "sw" }, { name = "s1", kind = "switch", model = "sw" },
         { name = "h0", kind = "host" }, { name = "h1", kind = "host" }, { name = "h2", kind = "host" }, { name = "h3", kind = "host" } ]
link = [ { a = "s0", b = "s1", speed_gbps = 100, length_m = 2 }, { a = "h0", b = "s0", speed_gbps = 100, length_m = 2 },
         { a = "h1", b = "s0", speed_gbps = 100, length_m = 2 }, { a = "h2", b = "s1", speed_gbps = 100, length_m = 2 },
         { a = "h3", b = "s1", speed_gbps = 50, length_m = 2 } ]
[[traffic]]
pattern = "flow"
src = "h0"
dst = "h3"
size_bytes = 25000000
[[traffic]]
pattern = "flow"
src = "h1"
dst = "h2"
size_bytes = 75000000
[[traffic]]
pattern = "flow"
src = "h2"
dst = "h3"
size_bytes = 25000000
"#;
    let m = model(text);
    let (r, _) = run(&m, EngineKind::Flow);
    assert_eq!(r.engine, "flow");
    // Sizes in proportion to the rates: all three end together, after 25 MB at 25 Gb/s of
    // wire rate (8 ms), less the header share, plus a few µs of tail.
    let mtu = m.nics[0].mtu as f64;
    let wire = |payload: f64| payload * (mtu + DATA_OVERHEAD as f64) / mtu;
    let t = wire(25e6) * 8.0 / 25e9;
    for f in &r.flows {
        let fct = f.fct_seconds.expect("finished");
        assert!((fct - t).abs() < 5e-6 + 1e-4 * t, "flow {} took {fct} s, expected {t} s", f.flow);
    }
    // The fill itself on the same problem: links s0→s1 (0), s1→h3 (1); A = {0,1}, B = {0}, C = {1}.
    let mut rate = vec![];
    WaterFill::default().fill(&[100.0, 50.0], &[0, 2, 3, 4], &[0, 1, 0, 1], &[f64::INFINITY; 3], &mut rate);
    assert_eq!(rate, vec![25.0, 75.0, 25.0]);
}

#[test]
fn a_lone_flow_takes_the_same_time_on_both_engines() {
    // 4 MB across the spines with nothing else in the fabric: within 1 %.
    let m = leaf_spine("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host5\"\nsize_bytes = 4000000\n");
    let (p, _) = run(&m, EngineKind::Packet);
    let (f, _) = run(&m, EngineKind::Flow);
    let (a, b) = (p.flows[0].fct_seconds.unwrap(), f.flows[0].fct_seconds.unwrap());
    assert!((a - b).abs() / a < 0.01, "packet {a} s, flow {b} s");
    // And one packet's worth: the store-and-forward time over 4 links, exactly.
    let m = leaf_spine("[[traffic]]\npattern = \"flow\"\nsrc = \"host0\"\ndst = \"host5\"\nsize_bytes = 1000\n");
    let (p, _) = run(&m, EngineKind::Packet);
    let (f, _) = run(&m, EngineKind::Flow);
    assert_eq!(p.flows[0].fct_seconds, f.flows[0].fct_seconds);
    let one = SimTime(4 * 86_560 + 2 * 15_000 + 2 * 150_000).as_secs_f64();
    assert!((f.flows[0].fct_seconds.unwrap() - one).abs() < 1e-12, "{:?} vs {one}", f.flows[0].fct_seconds);
}

#[test]
fn same_seed_same_bytes_and_another_seed_another_permutation() {
    let m = leaf_spine("[[traffic]]\npattern = \"permutation\"\nsize_bytes = 3000000\nqps = 2\n");
    let json = |seed: u64| {
        let opts = SimOptions { engine: EngineKind::Flow, seed, ..SimOptions::default() };
        let mut r = build_run(&m, opts).unwrap();
        r.run(&mut |_| {});
        RunReport::from_snapshot(&r.snapshot(), &m).to_json()
    };
    assert_eq!(json(5), json(5));
    assert_ne!(json(5), json(6));
}
