//! Faults that behave like a fabric: resilient ECMP rehash, a dual-homed host that loses one
//! link, a switch reboot, a flapping link, an ECMP hash change mid-run.

use rocelab_model::{load_str, Model};
use rocelab_sim::{build, RunReport, SimOptions};

fn model(text: &str) -> Model {
    load_str("t.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run(m: &Model) -> RunReport {
    let mut sim = build(m, SimOptions { seed: 3, ..SimOptions::default() }).unwrap_or_else(|d| panic!("{d:?}"));
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap_or_else(|e| panic!("{e:#?}"));
    RunReport::from_sim(&sim)
}

/// Bytes `from` sent on its port toward `to`.
fn tx_toward(m: &Model, r: &RunReport, from: &str, to: &str) -> f64 {
    let a = m.node_by_name(from).unwrap();
    let b = m.node_by_name(to).unwrap();
    let p = m.node(a).ports().find(|p| m.port(m.port(*p).peer).node == b).unwrap();
    let port = m.port_name(p).rsplit(':').next().unwrap().to_string();
    r.metrics
        .iter()
        .filter(|x| x.name == "rocelab_tx_bytes_total" && x.labels["node"] == from && x.labels["port"] == port)
        .map(|x| x.value)
        .sum()
}

/// Two leaves, four spines; 16 hosts on leaf0 each send 400 KB over 4 QPs to a host on leaf1.
fn four_spines(fault: &str) -> String {
    let mut t = String::from(
        r#"[fabric]
name = "ls4"
[topology.leaf_spine]
leaves = 2
spines = 4
hosts_per_leaf = 16
host_link = { speed_gbps = 100, length_m = 3 }
fabric_link = { speed_gbps = 400, length_m = 30 }
[nic]
congestion_control = "none"
"#,
    );
    for i in 0..16 {
        t.push_str(&format!(
            "[[traffic]]\npattern = \"flow\"\nsrc = \"host{i}\"\ndst = \"host{}\"\nsize_bytes = 400000\nqps = 4\n",
            16 + i
        ));
    }
    t.push_str(fault);
    t
}

#[test]
fn a_dead_ecmp_member_moves_only_its_own_flows_spread_over_the_rest() {
    let healthy = model(&four_spines(""));
    let h = run(&healthy);
    let down = "[[fault]]\nkind = \"link-down\"\nat_us = 0\na = \"leaf0\"\nb = \"spine0\"\n";
    let failed = model(&four_spines(down));
    let f = run(&failed);
    assert_eq!(f.flows_completed, 16);
    let before: Vec<f64> = (0..4).map(|s| tx_toward(&healthy, &h, &format!("spine{s}"), "leaf1")).collect();
    let after: Vec<f64> = (0..4).map(|s| tx_toward(&failed, &f, &format!("spine{s}"), "leaf1")).collect();
    assert!(before.iter().all(|b| *b > 0.0), "every spine carries some of the 64 QPs: {before:?}");
    assert_eq!(after[0], 0.0, "nothing crosses the dead link");
    for s in 1..4 {
        // No QP leaves a live member: each keeps at least what it carried.
        assert!(after[s] >= before[s], "spine{s}: {} < {}", after[s], before[s]);
        // The dead member's QPs are spread: no single survivor takes all of them (moving every
        // one to the next member would double its load).
        assert!(after[s] - before[s] < 0.8 * before[0], "spine{s} took {} of {}", after[s] - before[s], before[0]);
    }
}

#[test]
fn a_dual_homed_host_stays_reachable_through_its_other_link() {
    // h1 hangs off both leaves and loses its link to sw0 1 µs before the traffic starts. h0 on
    // the spine sends to h1 and h1 sends to h0. The spine must stop sending h1's traffic to
    // sw0, which has no way to h1 (it used to: the attachment switch counted as always
    // reachable, a black hole), and h1's QPs and ACKs on the dead port move to its live one.
    let text = r#"[fabric]
name = "dual"
[switch_models.leaf]
preset = "spectrum-2"
ports = 4
[nic]
congestion_control = "none"
[topology.explicit]
node = [ { name = "sp", kind = "switch", model = "leaf" }, { name = "sw0", kind = "switch", model = "leaf" }, { name = "sw1", kind = "switch", model = "leaf" },
         { name = "h0", kind = "host" }, { name = "h1", kind = "host" } ]
link = [ { a = "sw0", b = "sp", speed_gbps = 100, length_m = 10 }, { a = "sw1", b = "sp", speed_gbps = 100, length_m = 10 },
         { a = "h0", b = "sp", speed_gbps = 100, length_m = 2 },
         { a = "h1", b = "sw0", speed_gbps = 100, length_m = 2 }, { a = "h1", b = "sw1", speed_gbps = 100, length_m = 2 } ]
[[traffic]]
pattern = "flow"
src = "h0"
dst = "h1"
size_bytes = 4000000
qps = 8
start_us = 1
[[traffic]]
pattern = "flow"
src = "h1"
dst = "h0"
size_bytes = 4000000
qps = 8
start_us = 1
[[fault]]
kind = "link-down"
at_us = 0
a = "h1"
b = "sw0"
"#;
    let m = model(text);
    let r = run(&m);
    assert_eq!(r.flows_completed, 2);
    assert_eq!(r.totals.packets_dropped, 0, "nothing is sent toward the dead link: {:?}", r.totals.drops_by_reason);
    assert_eq!(r.totals.retransmitted_packets, 0);
    assert_eq!(tx_toward(&m, &r, "sp", "sw0"), 0.0, "the spine sends nothing to sw0 for h1");
    assert!(tx_toward(&m, &r, "sw1", "h1") >= 4_000_000.0);
    assert!(tx_toward(&m, &r, "h1", "sw1") >= 4_000_000.0, "h1 sends everything on its live port");
}

#[test]
fn a_rebooting_spine_drops_its_buffer_and_comes_back() {
    let reboot = "[[fault]]\nkind = \"switch-reboot\"\nat_us = 5\na = \"spine1\"\nduration_us = 10\n";
    let m = model(&four_spines(reboot));
    let r = run(&m);
    assert_eq!(r.flows_completed, 16, "go-back-N recovers every flow");
    assert!(r.totals.drops_by_reason["link_down"] > 0, "what was queued or on the wires is lost");
    let changes: f64 = r
        .metrics
        .iter()
        .filter(|x| x.name == "rocelab_link_state_changes_total" && x.labels["node"] == "spine1")
        .map(|x| x.value)
        .sum();
    assert_eq!(changes, 4.0, "both of spine1's links go down once and up once");
}

#[test]
fn a_flapping_link_counts_every_transition() {
    let flap = "[[fault]]\nkind = \"link-flap\"\nat_us = 5\na = \"leaf0\"\nb = \"spine2\"\nperiod_us = 20\ncount = 3\n";
    let m = model(&four_spines(flap));
    let r = run(&m);
    assert_eq!(r.flows_completed, 16);
    let changes: f64 = r
        .metrics
        .iter()
        .filter(|x| x.name == "rocelab_link_state_changes_total" && x.labels["node"] == "leaf0")
        .map(|x| x.value)
        .sum();
    assert_eq!(changes, 6.0, "3 cycles, each down and up, seen at leaf0's end");
}

#[test]
fn an_ecmp_reseed_moves_flows_and_loses_nothing() {
    let h = model(&four_spines(""));
    let base = run(&h);
    // Mid-run: the 400 KB flows take ~33 µs; the new seed applies from 10 µs.
    let reseed = "[[fault]]\nkind = \"ecmp-reseed\"\nat_us = 10\na = \"*\"\nseed = 99\n";
    let m = model(&four_spines(reseed));
    let r = run(&m);
    assert_eq!(r.flows_completed, 16);
    assert_eq!(r.totals.packets_dropped, 0);
    let load =
        |m: &Model, r: &RunReport| (0..4).map(|s| tx_toward(m, r, &format!("spine{s}"), "leaf1")).collect::<Vec<_>>();
    assert_ne!(load(&h, &base), load(&m, &r), "a new seed hashes the QPs onto other spines");
}

#[test]
fn dropping_the_source_port_from_the_hash_puts_each_host_pair_on_one_spine() {
    // Each of the 16 host pairs stripes its 400 KB over 4 QPs (4 source ports). Hashed on the
    // 5-tuple, those spread over the spines; once every switch hashes without the source port
    // (from 0 µs, before the flows start at 1 µs), all 4 QPs of a pair take one spine, so
    // every spine carries a whole number of pairs' bytes.
    let late = |f: &str| four_spines(f).replace("qps = 4\n", "qps = 4\nstart_us = 1\n");
    let h = model(&late(""));
    let change = "[[fault]]\nkind = \"ecmp-hash-fields\"\nat_us = 0\na = \"*\"\nfields = [\"src-ip\", \"dst-ip\", \"protocol\", \"dst-port\"]\n";
    let m = model(&late(change));
    let (base, r) = (run(&h), run(&m));
    assert_eq!((r.flows_completed, r.totals.packets_dropped), (16, 0));
    let load =
        |m: &Model, r: &RunReport| (0..4).map(|s| tx_toward(m, r, &format!("spine{s}"), "leaf1")).collect::<Vec<_>>();
    let (before, after) = (load(&h, &base), load(&m, &r));
    let pair = after.iter().sum::<f64>() / 16.0;
    let whole = |v: &[f64]| v.iter().all(|b| (b / pair).fract() == 0.0);
    assert!(whole(&after), "each spine carries whole pairs: {after:?} (pair = {pair} B)");
    assert!(!whole(&before), "with the source port hashed, QPs of one pair split: {before:?}");
}

#[test]
fn bad_fault_tables_are_refused_with_their_key() {
    for (fault, key, words) in [
        ("kind = \"switch-reboot\"\nat_us = 1\na = \"host0\"\nduration_us = 5", "fault[0].a", "is a host"),
        (
            "kind = \"switch-reboot\"\nat_us = 1\na = \"spine0\"\nmode = \"warm\"\nroutes_after_us = 3",
            "fault[0].routes_after_us",
            "keeps its routes",
        ),
        ("kind = \"link-flap\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"\nperiod_us = 10", "fault[0].count", "count"),
        (
            "kind = \"link-flap\"\nat_us = 1\na = \"leaf0\"\nb = \"spine0\"\nperiod_us = -1\ncount = 2",
            "fault[0].period_us",
            "not a valid time",
        ),
        ("kind = \"ecmp-reseed\"\nat_us = 1\na = \"*\"", "fault[0].seed", "needs `seed`"),
        ("kind = \"ecmp-reseed\"\nat_us = 1\na = \"host3\"\nseed = 1", "fault[0].a", "is a host"),
        ("kind = \"ecmp-hash-fields\"\nat_us = 1\na = \"*\"", "fault[0].fields", "needs `fields`"),
        ("kind = \"ecmp-hash-fields\"\nat_us = 1\na = \"leaf0\"\nfields = [\"dst-ip\"]", "fault[0].a", "every switch"),
    ] {
        // Refused when the file loads (the engine's own check stays behind it).
        let all = match load_str("t.toml", &four_spines(&format!("[[fault]]\n{fault}\n"))) {
            Ok(_) => panic!("accepted: {fault}"),
            Err(e) => e.to_string(),
        };
        assert!(all.contains(key) && all.contains(words), "{fault}: {all}");
    }
}

#[test]
fn a_host_cut_off_for_good_ends_the_run_as_stuck() {
    // host0 loses its only link mid-flow and never gets it back. Its QPs time out, go back N
    // and have nothing outstanding; nothing can move. The run must stop (it used to re-arm
    // the timeout for ever until the clock overflowed) and say so.
    let cut = "[[fault]]\nkind = \"link-down\"\nat_us = 5\na = \"host0\"\nb = \"leaf0\"\n";
    let m = model(&four_spines(cut));
    let mut sim = build(&m, SimOptions::default()).unwrap();
    sim.run(&mut |_| {});
    let r = RunReport::from_sim(&sim);
    assert!(r.stopped_no_progress, "{:?}", r.totals);
    assert_eq!(r.flows_completed, 15, "every other flow completes");
    assert!(r.simulated_seconds < 20.0, "stopped after {} s", r.simulated_seconds);
}

/// Two leaves, two spines, 4 hosts on leaf0 sending 2 MB each over 4 QPs to leaf1's hosts;
/// spine0's link to leaf1 fails at 10 µs.
fn withdrawal(convergence_us: f64) -> String {
    two_spines(convergence_us, "link-down", 10.0)
}

/// `withdrawal`'s fabric with fault `kind` on spine0 – leaf1 at `at_us`.
fn two_spines(convergence_us: f64, kind: &str, at_us: f64) -> String {
    let mut t = format!(
        r#"[fabric]
name = "conv"
[topology.leaf_spine]
leaves = 2
spines = 2
hosts_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = 100, length_m = 30 }}
[nic]
congestion_control = "none"
ack_timeout = 8
[routing]
convergence_us_per_hop = {convergence_us}
[[fault]]
kind = "{kind}"
at_us = {at_us}
a = "spine0"
b = "leaf1"
"#
    );
    for i in 0..4 {
        t.push_str(&format!(
            "[[traffic]]\npattern = \"flow\"\nsrc = \"host{i}\"\ndst = \"host{}\"\nsize_bytes = 2000000\nqps = 4\n",
            4 + i
        ));
    }
    t
}

#[test]
fn until_a_switch_learns_of_a_failure_it_forwards_into_it() {
    // spine0 and leaf1 see the link go down at once; leaf0 is one switch hop further and
    // learns 40 µs later. Until then it keeps hashing about half its QPs to spine0, which has
    // no way to leaf1 left and drops them.
    let instant = run(&model(&withdrawal(0.0)));
    let slow = run(&model(&withdrawal(40.0)));
    for r in [&instant, &slow] {
        assert_eq!(r.flows_completed, 4, "go-back-N recovers every flow");
    }
    let lost = |r: &RunReport| r.totals.drops_by_reason["link_down"];
    // Instant: only what was on the wire or queued at spine0 for leaf1 (46 packets). Slow: 40 µs
    // more of the half of leaf0's 4 × 100 Gb/s that hashes to spine0, 1 MB or ~240 packets of
    // 4 KB (measured: 346 in all).
    assert!(lost(&slow) > lost(&instant) + 150, "drops {} (40 µs) vs {} (instant)", lost(&slow), lost(&instant));
    assert!(lost(&slow) < 2_000, "{} drops: more than 40 µs of traffic", lost(&slow));
}

#[test]
fn a_bad_convergence_time_is_refused() {
    let m = model(&withdrawal(-1.0));
    let e = build(&m, SimOptions::default()).err().expect("refused");
    assert!(format!("{e:?}").contains("routing.convergence_us_per_hop"), "{e:?}");
}

#[test]
fn a_withdrawn_route_moves_traffic_off_a_live_link_and_loses_nothing() {
    // The same change as the link failure above (spine0 – leaf1 at 10 µs, leaf0 learning 40 µs
    // later), but only the routes go: the link stays up. spine0 keeps forwarding what reaches it
    // for leaf1 over the withdrawn link (its only way there, kept as a last resort), so the
    // 40 µs that cost hundreds of packets as a failure cost none.
    let healthy = model(&two_spines(0.0, "route-withdraw", 1e9));
    let h = run(&healthy);
    let withdrawn = model(&two_spines(40.0, "route-withdraw", 10.0));
    let w = run(&withdrawn);
    let failed = run(&model(&withdrawal(40.0)));
    assert!(failed.totals.packets_dropped > 150, "the failure loses packets: {}", failed.totals.packets_dropped);
    assert_eq!((w.flows_completed, w.totals.packets_dropped), (4, 0));
    // Not free, though: QPs moved to spine1 overtake their packets still queued toward spine0,
    // the receiver sees sequence gaps and go-back-N resends (RoCE's known cost of a path
    // change; measured: 584 packets).
    assert!(w.totals.retransmitted_packets > 0);
    let via = |m: &Model, r: &RunReport, s: &str| tx_toward(m, r, s, "leaf1");
    let (h0, h1) = (via(&healthy, &h, "spine0"), via(&healthy, &h, "spine1"));
    let (w0, w1) = (via(&withdrawn, &w, "spine0"), via(&withdrawn, &w, "spine1"));
    assert!(h0 > 0.0 && h1 > 0.0, "both spines carry traffic when healthy: {h0} {h1}");
    // 8 MB over 2 × 100 Gb/s takes ≥ 320 µs; spine0 carries its share for the first
    // 10 + 40 µs and then only what leaf0 had already queued toward it (measured: 1.55 of the
    // 5.10 MB it carries when healthy); spine1 takes the rest.
    assert!(w0 > 0.0 && w0 < h0 / 2.0, "spine0 carried {w0} B after the withdrawal (healthy {h0})");
    assert!(w1 > h1, "spine1 takes over: {w1} vs {h1}");
    // Every byte crosses a spine once, the resent ones once more (each at most an MTU of
    // 4096 B plus headers).
    let (extra, rtx) = (w0 + w1 - h0 - h1, w.totals.retransmitted_packets as f64);
    assert!(extra > 0.0 && extra <= rtx * 4_300.0, "{extra} B more for {rtx} resent packets");
}

#[test]
fn restored_routes_bring_traffic_back() {
    // Withdrawn before the flows start (0 µs), restored at 60 µs.
    let only_withdraw = two_spines(0.0, "route-withdraw", 0.0);
    let m = model(&only_withdraw);
    let r = run(&m);
    assert_eq!((r.flows_completed, r.totals.packets_dropped), (4, 0));
    assert_eq!(tx_toward(&m, &r, "spine0", "leaf1"), 0.0, "no route over spine0 – leaf1, no byte");
    let restored =
        format!("{only_withdraw}[[fault]]\nkind = \"route-restore\"\nat_us = 60\na = \"leaf1\"\nb = \"spine0\"\n");
    let m2 = model(&restored);
    let r2 = run(&m2);
    assert_eq!((r2.flows_completed, r2.totals.packets_dropped), (4, 0));
    assert!(tx_toward(&m2, &r2, "spine0", "leaf1") > 0.0, "spine0 carries traffic again once restored");
}

#[test]
fn a_host_link_has_no_routes_to_withdraw() {
    let text = four_spines("[[fault]]\nkind = \"route-withdraw\"\nat_us = 1\na = \"host0\"\nb = \"leaf0\"\n");
    // Refused when the file loads (the engine's own check stays behind it).
    let all = load_str("t.toml", &text).expect_err("refused").to_string();
    assert!(all.contains("fault[0].a") && all.contains("carries no routes"), "{all}");
}
