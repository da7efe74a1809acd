//! Events on their stated timescales: a cold switch reboot (150 s by default: run on the flow
//! engine, whose quiet stretches cost nothing), a warm one (1 s, at packet level: what the
//! frozen switch drops, and the transport's timeout that brings the flow back), and a receiver
//! that drains at a set rate and backs PFC up.

use rocelab_model::{load_str, Model};
use rocelab_sim::{build, build_run, EngineKind, RunReport, SimOptions};

fn model(text: &str) -> Model {
    load_str("t.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Two leaves under one spine, two hosts each (host0, host1 on leaf0; host2, host3 on
/// leaf1), 100 Gb/s everywhere, no congestion control (PFC alone), and `extra`.
fn fabric(extra: &str) -> String {
    format!(
        "[fabric]\nname = \"ev\"\n[topology.leaf_spine]\nleaves = 2\nspines = 1\nhosts_per_leaf = 2\n\
         host_link = {{ speed_gbps = 100, length_m = 3 }}\nfabric_link = {{ speed_gbps = 100, length_m = 30 }}\n\
         [nic]\ncongestion_control = \"none\"\n{extra}"
    )
}

fn flow(src: &str, dst: &str, bytes: u64, start_us: f64) -> String {
    format!("[[traffic]]\npattern = \"flow\"\nsrc = \"{src}\"\ndst = \"{dst}\"\nsize_bytes = {bytes}\nstart_us = {start_us}\n")
}

fn packet_run(m: &Model) -> RunReport {
    let mut sim = build(m, SimOptions { seed: 1, ..SimOptions::default() }).unwrap_or_else(|d| panic!("{d:?}"));
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap_or_else(|e| panic!("{e:#?}"));
    RunReport::from_sim(&sim)
}

fn flow_engine_fct(m: &Model) -> f64 {
    let opts = SimOptions { seed: 1, engine: EngineKind::Flow, ..SimOptions::default() };
    let mut run = build_run(m, opts).unwrap_or_else(|d| panic!("{d:?}"));
    run.run(&mut |_| {});
    let r = RunReport::from_snapshot(&run.snapshot(), m);
    r.flows[0].fct_seconds.expect("the flow completes")
}

/// The sum of metric `name` over the ports of `node` (and `labels`, if given).
fn metric(r: &RunReport, name: &str, node: &str, labels: &[(&str, &str)]) -> f64 {
    r.metrics
        .iter()
        .filter(|x| x.name == name && x.labels.get("node") == Some(node))
        .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| x.value)
        .sum()
}

/// The port name of `from`'s link to `to` (`swp3`).
fn port_to(m: &Model, from: &str, to: &str) -> String {
    let (a, b) = (m.node_by_name(from).unwrap(), m.node_by_name(to).unwrap());
    let p = m.node(a).ports().find(|p| m.port(m.port(*p).peer).node == b).unwrap();
    m.port_name(p).rsplit(':').next().unwrap().to_string()
}

#[test]
fn a_cold_reboot_cuts_the_path_for_its_default_150_s_then_routes_follow() {
    // host0 → host2 crosses leaf1, the only way to host2. leaf1 reboots cold at 1 ms with the
    // defaults: its ports are down 150 s, so the flow finishes exactly 150 s later than it
    // would have. With `routes_after_us`, the uplink carries traffic only once the routes are
    // back: 10 s more.
    let traffic = flow("host0", "host2", 100_000_000, 0.0);
    let base = flow_engine_fct(&model(&fabric(&traffic)));
    assert!(base > 0.008 && base < 0.0095, "100 MB at 100 Gb/s less headers: {base} s");
    let reboot = "[[fault]]\nkind = \"switch-reboot\"\nat_us = 1000\na = \"leaf1\"\n";
    let cold = flow_engine_fct(&model(&fabric(&format!("{traffic}{reboot}"))));
    assert!((cold - (base + 150.0)).abs() < 1e-6, "outage 150 s: {cold} s vs {base} + 150 s");
    let late = format!("{traffic}{reboot}mode = \"cold\"\nroutes_after_us = 10000000\n");
    let routed = flow_engine_fct(&model(&fabric(&late)));
    assert!((routed - (base + 160.0)).abs() < 1e-6, "ports at 150 s, routes at 160 s: {routed} s");
}

#[test]
fn on_the_flow_engine_a_warm_reboot_stalls_the_flows_through_it_for_its_1_s() {
    // No packets to lose and no timeouts there: the flow through the frozen spine waits the
    // outage and no more; one that stays under leaf0 is untouched.
    let traffic = format!("{}{}", flow("host0", "host2", 100_000_000, 0.0), flow("host1", "host0", 1_000_000, 0.0));
    let base = flow_engine_fct(&model(&fabric(&traffic)));
    let warm = "[[fault]]\nkind = \"switch-reboot\"\nat_us = 1000\na = \"spine0\"\nmode = \"warm\"\n";
    let m = model(&fabric(&format!("{traffic}{warm}")));
    let opts = SimOptions { seed: 1, engine: EngineKind::Flow, ..SimOptions::default() };
    let mut run = build_run(&m, opts).unwrap();
    run.run(&mut |_| {});
    let r = RunReport::from_snapshot(&run.snapshot(), &m);
    let (through, local) = (r.flows[0].fct_seconds.unwrap(), r.flows[1].fct_seconds.unwrap());
    assert!((through - (base + 1.0)).abs() < 1e-6, "{through} s vs {base} + 1 s");
    assert!(local < 1e-3, "the flow under leaf0 does not cross the spine: {local} s");
}

#[test]
fn a_cold_reboot_at_packet_level_downs_every_link_once() {
    // The same event at packet level with a short outage: both of leaf1's host links and its
    // uplink go down once and up once; what was queued there is lost and the flows recover.
    let traffic = format!("{}{}", flow("host0", "host2", 2_000_000, 0.0), flow("host1", "host3", 2_000_000, 0.0));
    let reboot = "[[fault]]\nkind = \"switch-reboot\"\nat_us = 40\na = \"leaf1\"\nduration_us = 100\n";
    let m = model(&fabric(&format!("{traffic}{reboot}")));
    let r = packet_run(&m);
    assert_eq!(r.flows_completed, 2);
    assert_eq!(metric(&r, "rocelab_link_state_changes_total", "leaf1", &[]), 6.0, "3 links, down and up");
    assert!(r.totals.drops_by_reason["link_down"] > 0);
    for f in &r.flows {
        assert!(f.fct_seconds.unwrap() > 140e-6, "no flow finishes before the ports return: {f:?}");
    }
}

#[test]
fn a_warm_reboot_blackholes_for_its_default_1_s_and_the_transport_timeout_brings_flows_back() {
    // The spine reboots warm at 40 µs: links stay up, nothing reroutes, and for 1 s (the
    // default) everything that reaches it is lost. A: 1 MB in flight at the freeze: its tail
    // is lost, no later packet arrives to reveal the gap, so it recovers at the NIC's
    // transport timeout (NCCL's default IB timeout 20: 4.096 µs · 2^20 = 4.295 s), long after
    // the spine is back. B: started at 0.5 s, inside the outage, lost whole: back at its own
    // timeout. C: started at 1.00005 s, after the outage: untouched.
    let traffic = [
        flow("host0", "host2", 1_000_000, 0.0),
        flow("host1", "host3", 1_000_000, 500_000.0),
        flow("host1", "host2", 1_000_000, 1_000_050.0),
    ]
    .concat();
    let warm = "[[fault]]\nkind = \"switch-reboot\"\nat_us = 40\na = \"spine0\"\nmode = \"warm\"\n";
    let m = model(&fabric(&format!("{traffic}{warm}")));
    let r = packet_run(&m);
    assert_eq!(r.flows_completed, 3);
    let rto = 4.096e-6 * 2f64.powi(20);
    let fct = |i: usize| r.flows[i].fct_seconds.unwrap();
    let (a, b, c) = (fct(0), fct(1), fct(2));
    // A's timer runs from its last progress, between its first send and the freeze.
    assert!(a > rto && a < 40e-6 + rto + 200e-6, "A recovers at its timeout: {a} s (RTO {rto} s)");
    assert!(r.flows[0].retransmitted_packets > 0);
    // B is lost whole (the spine drops it) and recovers one timeout after its start.
    assert!(b > rto && b < rto + 200e-6, "B recovers one timeout after it started: {b} s");
    // C sees no outage: a 1 MB flow at 100 Gb/s, about 85 µs.
    assert!(c < 120e-6 && r.flows[2].retransmitted_packets == 0, "C after the outage: {c} s");
    assert_eq!(metric(&r, "rocelab_link_state_changes_total", "spine0", &[]), 0.0, "warm: links stay up");
    assert!(metric(&r, "rocelab_drops_total", "spine0", &[("reason", "link_down")]) > 0.0, "what reached it is lost");
}

#[test]
fn a_slow_drain_delivers_its_rate_and_backs_pfc_up() {
    // host1 drains at 25 Gb/s from the start; host0 sends it 200 MB at 100 Gb/s. The receiver
    // takes exactly its drain rate (its buffer never runs dry), so the link into it must be
    // paused for the share of time it is not needed: 1 − 25 Gb/s · (wire / payload) / 100 Gb/s.
    // Upstream, the leaf's queue toward host1 absorbs what it can; once it holds its share of
    // the buffer the leaf pauses host0, whose last byte can leave only when what is still to
    // drain fits in the leaf's queue and the NIC's buffer: host0 is paused for the flow's time
    // less its own sending time less the time to drain those two buffers.
    let size = 200_000_000u64;
    let traffic = flow("host0", "host1", size, 0.0);
    let slow = "[[fault]]\nkind = \"host-stall\"\nat_us = 0\na = \"host1\"\ndrain_gbps = 25\n";
    let m = model(&fabric(&format!("{traffic}{slow}")));
    let r = packet_run(&m);
    let f = &r.flows[0];
    assert_eq!(f.delivered_bytes, size);
    assert_eq!(r.totals.packets_dropped, 0, "lossless: the drain loses nothing");
    assert!((f.throughput_gbps - 25.0).abs() / 25.0 < 0.01, "goodput {} Gb/s, drain 25 Gb/s", f.throughput_gbps);
    let nic = &m.nics[0];
    let wire_per_payload = (nic.mtu as f64 + 82.0) / nic.mtu as f64;
    let fct = f.fct_seconds.unwrap();
    let paused = |node: &str, peer: &str| {
        metric(&r, "rocelab_pfc_paused_seconds_total", node, &[("port", &port_to(&m, node, peer)), ("direction", "rx")])
    };
    // The link into host1 carries the drain rate in wire bytes, and is idle the rest of the
    // time, all of it paused (its queue never empties). A port counts as paused from the
    // pause frame's arrival, while it still finishes the frame it is sending: up to one
    // frame's time more per pause.
    let frame = (nic.mtu as f64 + 82.0) * 8.0 / 100e9;
    let to_host1 = port_to(&m, "leaf0", "host1");
    let carried = metric(&r, "rocelab_tx_bytes_total", "leaf0", &[("port", &to_host1)]) * 8.0 / fct;
    assert!((carried / (25e9 * wire_per_payload) - 1.0).abs() < 0.01, "leaf0 → host1 carries {carried} b/s");
    let idle = 1.0 - 25.0 * wire_per_payload / 100.0;
    let pauses = metric(&r, "rocelab_pfc_pause_frames_total", "leaf0", &[("port", &to_host1), ("direction", "rx")]);
    let share = paused("leaf0", "host1") / fct;
    let most = idle + pauses * frame / fct;
    assert!(
        share > idle - 0.01 && share < most + 0.01,
        "leaf0 → host1 paused {share:.3} of the time: physics {idle:.3} idle, up to {most:.3} with frames in flight"
    );
    let leaf_queue =
        metric(&r, "rocelab_buffer_occupancy_peak_bytes", "leaf0", &[("port", &port_to(&m, "leaf0", "host1"))]);
    let held = leaf_queue + nic.rx_xoff_bytes as f64;
    let sending = size as f64 * wire_per_payload * 8.0 / 100e9;
    let want_host0 = fct - held * 8.0 / (25e9 * wire_per_payload) - sending;
    let host0 = paused("host0", "leaf0");
    let host0_pauses = metric(&r, "rocelab_pfc_pause_frames_total", "host0", &[("direction", "rx")]);
    assert!(want_host0 > 0.3 * fct, "the buffers are small beside the flow: {want_host0} s of {fct} s");
    assert!(
        host0 > want_host0 - 0.02 * fct && host0 < want_host0 + host0_pauses * frame + 0.02 * fct,
        "host0 paused {host0:.4} s, physics {want_host0:.4} s (leaf queue {leaf_queue} B, {host0_pauses} pauses) of {fct:.4} s"
    );
}

#[test]
fn host_resume_ends_a_slow_drain() {
    // Draining at 10 Gb/s for 200 µs, then full speed: 4 MB take about 200 µs at the slow rate
    // (250 KB) plus the rest at line rate, far less than 4 MB at 10 Gb/s (3.2 ms).
    let traffic = flow("host0", "host1", 4_000_000, 0.0);
    let f = "[[fault]]\nkind = \"host-stall\"\nat_us = 0\na = \"host1\"\ndrain_gbps = 10\n\n[[fault]]\nkind = \"host-resume\"\nat_us = 200\na = \"host1\"\n";
    let r = packet_run(&model(&fabric(&format!("{traffic}{f}"))));
    let fct = r.flows[0].fct_seconds.unwrap();
    assert!(fct > 200e-6 && fct < 600e-6, "{fct} s");
}

#[test]
fn a_nic_reset_takes_its_links_down_for_its_default_3_s_and_its_qps_reconnect_after_it() {
    // host0's NIC resets at 40 µs (a firmware update) with the default 3 s link-down. The reset
    // destroys the RDMA QPs with an end there; their applications reconnect once the NIC is
    // back (RECONNECT later) and resend their first unacknowledged work request. A: host0 →
    // host2, half sent at the reset. B: host2 → host0, all sent into the dead link by 85 µs:
    // before, nothing revealed the loss and it waited for its transport timeout (4.295 s);
    // now it resends with A once reconnected. C, posted after the reset, is not touched.
    let traffic = [
        flow("host0", "host2", 1_000_000, 0.0),
        flow("host2", "host0", 1_000_000, 0.0),
        flow("host0", "host3", 1_000_000, 3_100_000.0),
    ]
    .concat();
    let reset = "[[fault]]\nkind = \"nic-reset\"\nat_us = 40\na = \"host0\"\n";
    let m = model(&fabric(&format!("{traffic}{reset}")));
    let r = packet_run(&m);
    assert_eq!(r.flows_completed, 3);
    let fct = |i: usize| r.flows[i].fct_seconds.unwrap();
    let reconnected = 40e-6 + 3.0 + rocelab_sim::engine::RECONNECT.as_us_f64() * 1e-6;
    // 1 MB at 100 Gb/s takes 82 µs: each resends at most all of it once reconnected.
    for (i, what) in [(0, "A"), (1, "B")] {
        assert!(
            fct(i) > reconnected && fct(i) < reconnected + 200e-6,
            "{what} completes once its application has reconnected: {} s",
            fct(i)
        );
        assert!(r.flows[i].retransmitted_packets > 0, "{what} resends what the reset lost");
    }
    assert!(fct(2) - 3.1 < 120e-6, "C after the reset: {} s", fct(2));
    assert_eq!(metric(&r, "rocelab_link_state_changes_total", "host0", &[]), 2.0, "down once, up once");
}

/// Two leaves, two spines, four hosts each; host i on leaf0 and host 4+i on leaf1 exchange
/// 2 MB each way over 4 QPs; then `faults`.
fn two_spines(faults: &str) -> String {
    let mut t = String::from(
        "[fabric]\nname = \"ecmp\"\n[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
         host_link = { speed_gbps = 100, length_m = 3 }\nfabric_link = { speed_gbps = 100, length_m = 30 }\n\
         [nic]\ncongestion_control = \"none\"\n",
    );
    for i in 0..4 {
        for (s, d) in [(i, 4 + i), (4 + i, i)] {
            t.push_str(&format!(
                "[[traffic]]\npattern = \"flow\"\nsrc = \"host{s}\"\ndst = \"host{d}\"\nsize_bytes = 2000000\nqps = 4\n"
            ));
        }
    }
    t + faults
}

fn tx(m: &Model, r: &RunReport, from: &str, to: &str) -> f64 {
    metric(r, "rocelab_tx_bytes_total", from, &[("port", &port_to(m, from, to))])
}

#[test]
fn an_ecmp_group_update_changes_one_switch_only() {
    // leaf0's control plane takes spine0 out of its groups at 0 µs: leaf0 sends nothing to
    // spine0, while leaf1 still spreads over both spines and spine0 still delivers to leaf0
    // (the link is up and its groups are theirs). Nothing is lost.
    let remove = "[[fault]]\nkind = \"ecmp-member-remove\"\nat_us = 0\na = \"leaf0\"\nb = \"spine0\"\n";
    let m = model(&two_spines(remove));
    let r = packet_run(&m);
    assert_eq!((r.flows_completed, r.totals.packets_dropped), (8, 0));
    assert_eq!(tx(&m, &r, "leaf0", "spine0"), 0.0, "leaf0 no longer uses spine0");
    assert!(tx(&m, &r, "leaf0", "spine1") > 8e6, "all of leaf0's 8 MB (and headers) go by spine1");
    assert!(
        tx(&m, &r, "leaf1", "spine0") > 0.0 && tx(&m, &r, "spine0", "leaf0") > 0.0,
        "the other direction is unchanged"
    );
    // The member back at 60 µs: leaf0 spreads over spine0 again.
    let add = format!("{remove}[[fault]]\nkind = \"ecmp-member-add\"\nat_us = 60\na = \"leaf0\"\nb = \"spine0\"\n");
    let m = model(&two_spines(&add));
    let r = packet_run(&m);
    assert_eq!(r.flows_completed, 8);
    assert!(tx(&m, &r, "leaf0", "spine0") > 0.0, "spine0 is a member again");
}
