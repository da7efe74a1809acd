//! Steady-state fast-forward (`SimOptions::fast_forward`) against full runs: a lone flow is
//! skipped to within a packet of its full-run completion; a QP that starts on a skipped link
//! and a fault each end the skip; traffic with no closed steady group runs exactly as
//! without; runs it cannot hold are refused.

mod common;

use common::{conserved, fat_tree_in};
use rocelab_model::Model;
use rocelab_sim::engine::FastForward;
use rocelab_sim::{build_run, options_from_model, RunReport, SimOptions, Snapshot};

fn fat_tree(name: &str, extra: &str) -> Model {
    fat_tree_in(name, "", extra)
}

/// The fat tree's host names, in model order.
fn hosts() -> Vec<String> {
    let probe = fat_tree("probe", "[[traffic]]\npattern = \"permutation\"\nsize_bytes = 1000\n");
    probe.nodes.iter().filter(|n| n.is_host()).map(|n| n.name.clone()).collect()
}

fn flow(src: &str, dst: &str, bytes: u64, start_us: u64) -> String {
    format!("[[traffic]]\npattern = \"flow\"\nsrc = \"{src}\"\ndst = \"{dst}\"\nsize_bytes = {bytes}\nstart_us = {start_us}\n")
}

fn run(m: &Model, ff: bool) -> (Snapshot, RunReport) {
    let o = SimOptions { fast_forward: ff.then(FastForward::default), ..options_from_model(m) };
    let mut r = build_run(m, o).unwrap_or_else(|d| panic!("{d:?}"));
    r.run(&mut |_| {});
    let s = r.snapshot();
    let rep = RunReport::from_snapshot(&s, m);
    (s, rep)
}

/// Each flow's completion time with fast-forward against the full run's, as a signed ratio − 1.
fn fct_errors(full: &RunReport, fast: &RunReport) -> Vec<f64> {
    full.flows
        .iter()
        .zip(&fast.flows)
        .map(|(a, b)| b.fct_seconds.expect("done") / a.fct_seconds.expect("done") - 1.0)
        .collect()
}

#[test]
fn a_lone_flow_is_skipped_and_ends_within_a_packet_of_the_full_run() {
    let h = hosts();
    let m = fat_tree("one", &flow(&h[0], &h[15], 20_000_000, 0));
    let (fs, full) = run(&m, false);
    let (ss, fast) = run(&m, true);
    conserved(&ss);
    let ff = fast.fast_forward.as_ref().expect("the summary says it skipped");
    // 20 MB at 100 Gb/s is 1.64 ms; all but the first looks and the last two periods skip.
    assert!(ff.skipped_share > 0.95, "{ff:?}");
    assert!(ss.events * 20 < fs.events, "{} events against {}", ss.events, fs.events);
    // Within one 4,178 B frame time at 100 Gb/s (0.33 µs) of the full run.
    let (a, b) = (full.flows[0].fct_seconds.unwrap(), fast.flows[0].fct_seconds.unwrap());
    assert!((a - b).abs() < 0.34e-6, "{a} s in full, {b} s fast-forwarded");
    // Every data packet sent and delivered, credited or simulated, on every link it crossed.
    assert_eq!(
        (fs.counters.data_sent, fs.counters.data_delivered),
        (ss.counters.data_sent, ss.counters.data_delivered)
    );
    assert_eq!(fs.counters.payload_delivered_bytes, ss.counters.payload_delivered_bytes);
    assert_eq!(full.totals.data_packet_hops, fast.totals.data_packet_hops);
    assert_eq!(full.flows[0].delivered_bytes, fast.flows[0].delivered_bytes);
    for (p, q) in fs.ports.iter().zip(&ss.ports) {
        // (ACKs are credited one per four packets skipped: a few bytes apart.)
        assert!(p.tx_bytes.abs_diff(q.tx_bytes) <= 1_000, "{} vs {} bytes", p.tx_bytes, q.tx_bytes);
    }
    // Deterministic: the same bytes again.
    let (_, again) = run(&m, true);
    assert_eq!(fast.to_json(), again.to_json());
}

#[test]
fn a_qp_that_starts_on_a_skipped_link_ends_the_skip_and_shares_the_link() {
    // A long flow from h0; 700 µs in, h0 starts a second flow, which shares h0's link: the
    // first slows to half its rate from then on, at packet level.
    let h = hosts();
    // (Sampled: in debug builds the engine's invariants are checked at every sample.)
    let m = fat_tree(
        "early",
        &("sample_interval_us = 10\n".to_string()
            + &flow(&h[0], &h[15], 20_000_000, 0)
            + &flow(&h[0], &h[13], 5_000_000, 700)),
    );
    let (_, full) = run(&m, false);
    let (ss, fast) = run(&m, true);
    conserved(&ss);
    let ff = fast.fast_forward.as_ref().unwrap();
    assert!(ff.ended_early >= 1 && ff.skipped_share > 0.5, "{ff:?}");
    for e in fct_errors(&full, &fast) {
        assert!(e.abs() < 0.002, "FCT {:+.3} % off the full run", e * 100.0);
    }
    // The second flow really shared: alone it would take 0.41 ms.
    assert!(full.flows[1].fct_seconds.unwrap() > 0.7e-3);
}

#[test]
fn a_fault_ends_every_skip() {
    let h = hosts();
    let other = format!(
        "[[fault]]\nkind = \"link-flap\"\nat_us = 500\na = \"{}\"\nb = \"{}\"\nperiod_us = 20\ncount = 1\n",
        h[8],
        tor_of(&h[8])
    );
    let m = fat_tree("fault", &(flow(&h[0], &h[15], 20_000_000, 0) + &other));
    let (_, full) = run(&m, false);
    let (ss, fast) = run(&m, true);
    conserved(&ss);
    let ff = fast.fast_forward.as_ref().unwrap();
    assert!(ff.ended_early >= 1 && ff.skips >= 2, "{ff:?}");
    for e in fct_errors(&full, &fast) {
        assert!(e.abs() < 0.001, "FCT {:+.3} % off the full run", e * 100.0);
    }
}

/// The switch a host hangs off.
fn tor_of(host: &str) -> String {
    let m = fat_tree("probe", "[[traffic]]\npattern = \"permutation\"\nsize_bytes = 1000\n");
    let n = m.node_by_name(host).unwrap();
    let port = m.node(n).ports().next().unwrap();
    m.nodes[m.port(m.port(port).peer).node.idx()].name.clone()
}

#[test]
fn traffic_with_no_closed_steady_group_runs_exactly_as_without() {
    // A permutation on the fat tree: every QP's ACK path crosses another's data path, so all
    // are one group, and the flows that collide on a core never hold steady (DCQCN).
    let m = fat_tree("perm", "[[traffic]]\npattern = \"permutation\"\nsize_bytes = 2000000\n");
    let (_, full) = run(&m, false);
    let (_, fast) = run(&m, true);
    assert_eq!(fast.fast_forward.as_ref().unwrap().skips, 0);
    assert_eq!(full.flows_csv(), fast.flows_csv());
    assert_eq!(full.prometheus(), fast.prometheus());
}

#[test]
fn runs_whose_paths_it_cannot_hold_are_refused_with_the_reason() {
    let h = hosts();
    let t = flow(&h[0], &h[15], 1_000_000, 0);
    for (fabric, extra, why) in [
        ("link_layer = \"infiniband\"", t.clone(), "InfiniBand"),
        ("", format!("[routing]\nload_balancing = \"spray\"\n{t}"), "load balancing"),
        ("", format!("[nic]\ntransport = \"uet\"\n{t}"), "Ultra Ethernet"),
        ("", format!("{t}[[fault]]\nkind = \"nic-reset\"\nat_us = 40\na = \"{}\"\n", h[0]), "NIC reset"),
    ] {
        let m = fat_tree_in("refused", fabric, &extra);
        let o = SimOptions { fast_forward: Some(FastForward::default()), ..options_from_model(&m) };
        let err = build_run(&m, o).err().expect("refused");
        let text = format!("{err:?}");
        assert!(text.contains("fast-forward") && text.contains(why), "{text}");
    }
}
