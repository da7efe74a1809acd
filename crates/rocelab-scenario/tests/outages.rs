//! Faults at their published timescales under a settled load, run in edges: the failure edge
//! and the return edge at packet level, the outage between them computed (`edges`).

use rocelab_model::config::{ScenarioConfig, ScenarioKind};
use rocelab_model::{load_str, Model};
use rocelab_scenario::ScenarioResult;

/// Two leaves of four hosts under two spines, 100 Gb/s, non-blocking (two uplinks to each
/// spine), DCQCN with a 2 MB byte counter and the paper's 55 µs timer: a permutation settles
/// within a millisecond.
fn fabric(dcqcn: &str) -> Model {
    let text = format!(
        "[fabric]\nname = \"out\"\n[topology.leaf_spine]\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
         uplinks_per_leaf = 4\nhost_link = {{ speed_gbps = 100, length_m = 3 }}\n\
         fabric_link = {{ speed_gbps = 100, length_m = 30 }}\nleaf_model = \"spectrum-2\"\n\
         spine_model = \"spectrum-2\"\n[nic]\ncongestion_control = \"dcqcn\"\n{dcqcn}"
    );
    load_str("out.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

const SETTLES: &str = "[nic.dcqcn]\nbyte_counter_bytes = 2097088\nincrease_timer_us = 55\n";

fn run(m: &Model, kind: ScenarioKind, keys: impl Fn(&mut ScenarioConfig)) -> ScenarioResult {
    let mut c = ScenarioConfig::bare(kind);
    keys(&mut c);
    rocelab_scenario::run(m, &c, "scenario", 1).unwrap_or_else(|e| panic!("{e:?}"))
}

fn none(_: &mut ScenarioConfig) {}

fn metric(r: &ScenarioResult, k: &str) -> f64 {
    r.metrics.get(k).copied().flatten().unwrap_or_else(|| panic!("no {k}: {}", r.render_text()))
}

/// The stretch the edges did not simulate: the outage less the failure edge's time after the
/// strike and the return edge's time before the return (which stands for the outage's end).
fn skipped_by_hand(r: &ScenarioResult, outage_us: f64) -> f64 {
    let e = r.edges.as_ref().unwrap();
    let (f, b) = (&e.ran[0], &e.ran[1]);
    outage_us - ((f.to_us - f.event_at_us) + b.event_at_us)
}

#[test]
fn a_cold_reboot_is_150_s_of_outage_between_two_edges_run_at_packet_level() {
    let m = fabric(SETTLES);
    let r = run(&m, ScenarioKind::SwitchReboot, none);
    let e = r.edges.as_ref().unwrap();
    // The published default (docs/fabric-file.md: Dell OS9, Huawei, sonic-mgmt).
    assert_eq!(e.outage_us, Some(150e6));
    assert_eq!(metric(&r, "outage_us"), 150e6);
    assert_eq!(r.params["down_us"], serde_json::json!(150e6));
    assert_eq!(e.ran.len(), 2, "{}", r.render_text());
    for ran in &e.ran {
        assert!(ran.settled_before && ran.settled_after, "{}", r.render_text());
    }
    assert!(r.steady.as_ref().unwrap().converged);
    // The fault struck once the load had settled, not at a fixed time.
    assert_eq!(r.params["at_us"], serde_json::json!(e.ran[0].event_at_us));
    assert!((e.skipped[0].length_us - skipped_by_hand(&r, 150e6)).abs() < 1e-6);
    // Simulated: a few milliseconds of the 150 s.
    assert!(e.ran_us() < 10_000.0, "{}", r.render_text());
    // Every port down: nothing crosses the switch, nothing is lost elsewhere, the other spine
    // carries what it can; half the leaf-spine capacity is gone, so the permutation's flows
    // between the leaves share what is left.
    assert_eq!(metric(&r, "rebooted_gbps_during"), 0.0);
    assert_eq!(metric(&r, "packets_lost_elsewhere"), 0.0);
    let (before, during) = (metric(&r, "goodput_before_gbps"), metric(&r, "goodput_after_gbps"));
    assert!(during < before, "{}", r.render_text());
    // The outage's cost, hand-computed from the settled windows: (before − during) × 150 s / 8.
    let want = (before - during) * 1e9 * 150.0 / 8.0;
    assert!((metric(&r, "outage_undelivered_bytes") / want - 1.0).abs() < 1e-9);
    // The return: the ports back, the capacity back, within the recovery limit.
    assert!(metric(&r, "return_goodput_gbps") > during, "{}", r.render_text());
    assert!(metric(&r, "return_recovery_us") <= rocelab_scenario::check::RECOVERY_US);
    // A cold reboot's routes are withdrawn: no packet is lost while it is down.
    assert_eq!(metric(&r, "outage_lost_packets"), 0.0);
}

#[test]
fn a_warm_reboot_is_one_second_of_black_hole_its_neighbours_keep_sending_into() {
    let m = fabric(SETTLES);
    let warm = run(&m, ScenarioKind::SwitchReboot, |c| c.set("mode", "warm"));
    let e = warm.edges.as_ref().unwrap();
    // SONiC's warm reboot (MLNX fast-fast boot: under 1 s of data plane).
    assert_eq!(e.outage_us, Some(1e6));
    assert!((e.skipped[0].length_us - skipped_by_hand(&warm, 1e6)).abs() < 1e-6);
    assert!(e.ran.iter().all(|r| r.settled_before && r.settled_after), "{}", warm.render_text());
    // Links and routes stay: the flows hashed onto the frozen switch lose everything for the
    // whole second, so fabric goodput during it is below a cold reboot's, which reroutes.
    let cold = run(&m, ScenarioKind::SwitchReboot, none);
    assert!(metric(&warm, "goodput_after_gbps") < metric(&cold, "goodput_after_gbps"));
    let middle = metric(&warm, "outage_lost_packets");
    assert!(middle > 0.0, "{}", warm.render_text());
    assert!(warm.headline.value.unwrap() > middle);
    assert_eq!(metric(&warm, "packets_lost_elsewhere"), 0.0);
    assert!(metric(&warm, "stalled_flows") > 0.0);
    assert!(metric(&warm, "return_recovery_us") <= rocelab_scenario::check::RECOVERY_US);
}

#[test]
fn a_long_outage_costs_no_more_packet_level_work_than_a_short_one() {
    let m = fabric(SETTLES);
    let one = run(&m, ScenarioKind::SwitchReboot, |c| {
        c.set("mode", "warm");
        c.set("down_us", 1e6)
    });
    let hundred = run(&m, ScenarioKind::SwitchReboot, |c| {
        c.set("mode", "warm");
        c.set("down_us", 100e6)
    });
    let (a, b) = (one.edges.as_ref().unwrap(), hundred.edges.as_ref().unwrap());
    // The same runs, event for event: only the skipped middle grows, by 99 s.
    assert_eq!(one.events, hundred.events);
    assert_eq!(a.ran, b.ran);
    assert!((b.skipped[0].length_us - a.skipped[0].length_us - 99e6).abs() < 1e-6);
    let (x, y) = (metric(&one, "outage_undelivered_bytes"), metric(&hundred, "outage_undelivered_bytes"));
    assert!((y / x - 100.0).abs() < 1e-9, "{x} B over 1 s, {y} B over 100 s");
}

#[test]
fn a_firmware_update_beside_a_load_reconnects_and_recovers_at_the_published_timescale() {
    let m = fabric(SETTLES);
    let r = run(&m, ScenarioKind::FirmwareUpdate, |c| {
        c.set("load", 1.0);
        c.set("count", 2)
    });
    let e = r.edges.as_ref().unwrap();
    // 3 s of link down (ConnectX), then 10 ms of RDMA CM reconnection, skipped; two resets.
    assert_eq!(e.outage_us, Some(3e6));
    assert_eq!(e.cycles, 2);
    assert!((e.skipped[0].length_us - skipped_by_hand(&r, 3e6)).abs() < 1e-6);
    assert_eq!(e.skipped[1].length_us, 10_000.0, "{}", r.render_text());
    assert!((metric(&r, "skipped_us") - 2.0 * (e.skipped[0].length_us + 10_000.0)).abs() < 1e-6);
    assert!(e.ran.iter().all(|x| x.settled_before && x.settled_after), "{}", r.render_text());
    // The reset host's QPs are re-created at line rate: it is back to its rate at once.
    let rec = metric(&r, "recovery_us");
    assert!(rec <= rocelab_scenario::check::RECOVERY_US, "{}", r.render_text());
    assert!(metric(&r, "rate_after_reconnect") >= 0.8, "{}", r.render_text());
    // The headline by hand: (3 s + 10 ms + recovery) / (3 s + 10 ms).
    let want = (3e6 + 1e4 + rec) / (3e6 + 1e4);
    assert!((r.headline.value.unwrap() / want - 1.0).abs() < 1e-6, "{} vs {want}", r.headline.value.unwrap());
    assert_eq!(metric(&r, "failed_qps"), 0.0);
    assert_eq!(metric(&r, "dropped_packets"), metric(&r, "packets_lost_link_down"));
    assert!(metric(&r, "packets_lost_link_down") > 0.0);
}

#[test]
fn a_fault_on_a_load_that_has_not_settled_is_not_converged() {
    // The shipped mlx5 defaults fill the buffer for milliseconds: with a 400 µs horizon the
    // load never settles, the fault strikes at the horizon, and the verdict is not converged.
    let m = fabric("");
    let r = run(&m, ScenarioKind::LinkLoss, |c| c.set("duration_us", 400.0));
    let e = r.edges.as_ref().unwrap();
    assert!(!e.ran[0].settled_before, "{}", r.render_text());
    assert!(!r.steady.as_ref().unwrap().converged);
}

#[test]
fn routing_changes_and_flaps_settle_and_say_what_ran() {
    let m = fabric(SETTLES);
    let rc = run(&m, ScenarioKind::RoutingChange, none);
    let e = rc.edges.as_ref().unwrap();
    // For good: one edge, nothing skipped, nothing lost.
    assert_eq!((e.ran.len(), e.skipped.len(), e.outage_us), (1, 0, None));
    assert!(e.ran[0].settled_before && e.ran[0].settled_after);
    assert_eq!(metric(&rc, "dropped_packets"), 0.0);
    let flap = run(&m, ScenarioKind::LinkFlap, none);
    let f = flap.edges.as_ref().unwrap();
    // 3 cycles of 2 s, down for the first second: one cycle's edges run, losses × 3.
    assert_eq!((f.outage_us, f.cycles), (Some(1e6), 3));
    assert_eq!(f.skipped.len(), 2, "{}", flap.render_text());
    assert_eq!(flap.headline.value.unwrap() % 3.0, 0.0);
    assert_eq!(metric(&flap, "dropped_packets"), flap.headline.value.unwrap());
}

#[test]
fn a_partitioning_cold_reboot_outlasts_the_qps_retries_and_a_warm_one_does_not() {
    // One spine: rebooting it cuts the leaves apart, and the flows between them move nothing.
    let text = format!(
        "[fabric]\nname = \"one\"\n[topology.leaf_spine]\nleaves = 2\nspines = 1\nhosts_per_leaf = 4\n\
         host_link = {{ speed_gbps = 100, length_m = 3 }}\nfabric_link = {{ speed_gbps = 100, length_m = 30 }}\n\
         leaf_model = \"spectrum-2\"\nspine_model = \"spectrum-2\"\n[nic]\ncongestion_control = \"dcqcn\"\n{SETTLES}"
    );
    let m = load_str("one.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let cold = run(&m, ScenarioKind::SwitchReboot, none);
    assert!(metric(&cold, "stalled_flows") > 0.0, "{}", cold.render_text());
    // NCCL's defaults: 4.096 µs · 2^20 per timeout, 7 retries: the QPs give up 8 timeouts after
    // their last acknowledgement, 34.36 s into the 150 s outage.
    let give_up = 4.096 * (1u64 << 20) as f64 * 8.0;
    assert!((metric(&cold, "stalled_give_up_us") - give_up).abs() < 1e-3);
    assert_eq!(metric(&cold, "stalled_wait_us"), metric(&cold, "stalled_give_up_us"));
    assert_eq!(metric(&cold, "qps_failed_in_outage"), metric(&cold, "stalled_flows"));
    // A warm reboot's second is shorter than one timeout: no QP gives up, but the flows whose
    // packets all died in the frozen switch still move nothing after it (nothing of theirs is
    // left to reveal the gap): they wait for their first timeout, 4.29 s after the strike.
    let warm = run(&m, ScenarioKind::SwitchReboot, |c| c.set("mode", "warm"));
    assert!(metric(&warm, "stalled_flows") > 0.0);
    assert_eq!(metric(&warm, "qps_failed_in_outage"), 0.0);
    assert!(metric(&warm, "return_stalled_flows") > 0.0, "{}", warm.render_text());
    assert!((metric(&warm, "stalled_wait_us") - 4.096 * (1u64 << 20) as f64).abs() < 1e-3);
}

#[test]
fn a_run_in_edges_gives_the_same_bytes_for_the_same_seed() {
    let m = fabric(SETTLES);
    let a = run(&m, ScenarioKind::LinkFlap, none);
    let b = run(&m, ScenarioKind::LinkFlap, none);
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.series_csv, b.series_csv);
}

#[test]
fn a_firmware_update_refuses_a_horizon_without_a_load() {
    let mut c = ScenarioConfig::bare(ScenarioKind::FirmwareUpdate);
    c.set("duration_us", 400.0);
    let e = rocelab_scenario::run(&fabric(SETTLES), &c, "scenario[0]", 1).err().unwrap();
    assert_eq!(e[0].path, "scenario[0].duration_us");
}
