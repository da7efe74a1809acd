//! The checklist's events as they happen: a slow receiver that drains steadily at its set share
//! of line rate (not the on/off stall that delivered far more), and a warm switch reboot that
//! keeps its links up while it forwards nothing.

use rocelab_model::config::{ScenarioConfig, ScenarioKind};
use rocelab_model::{load_str, Model};

/// Two leaves under one spine, two hosts each, 100 Gb/s, PFC on the RDMA class.
fn fabric() -> Model {
    let text = "[fabric]\nname = \"ev\"\n[topology.leaf_spine]\nleaves = 2\nspines = 1\nhosts_per_leaf = 2\n\
                host_link = { speed_gbps = 100, length_m = 3 }\nfabric_link = { speed_gbps = 100, length_m = 30 }\n";
    load_str("ev.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn delivered_bytes(r: &rocelab_scenario::ScenarioResult) -> f64 {
    r.report.flows.iter().map(|f| f.delivered_bytes as f64).sum()
}

#[test]
fn a_slow_receiver_at_half_speed_delivers_half_its_line_rate() {
    // drain_fraction 0.5 from 20 µs to 400 µs: 20 µs at line rate, then 380 µs at 50 Gb/s:
    // 250 kB + 2.375 MB. The on/off stall (period_us given) drains its buffer at once on each
    // resume and delivers far more than half.
    let m = fabric();
    let mut c = ScenarioConfig::bare(ScenarioKind::SlowReceiver);
    c.set("drain_fraction", 0.5);
    c.set("duration_us", 400.0);
    c.set("at_us", 20.0);
    let steady = rocelab_scenario::run(&m, &c, "scenario", 1).unwrap();
    let want = 100e9 / 8.0 * 20e-6 + 50e9 / 8.0 * 380e-6;
    let got = delivered_bytes(&steady);
    assert!((got / want - 1.0).abs() < 0.05, "delivered {got} B, drain says {want} B");
    assert_eq!(steady.params["drain_gbps"], serde_json::json!(50.0));
    c.set("period_us", 20.0);
    let on_off = rocelab_scenario::run(&m, &c, "scenario", 1).unwrap();
    assert!(delivered_bytes(&on_off) > 1.3 * got, "on/off {} B vs steady {got} B", delivered_bytes(&on_off));
}

#[test]
fn a_warm_switch_reboot_keeps_its_links_and_loses_what_reaches_it() {
    let m = fabric();
    let mut c = ScenarioConfig::bare(ScenarioKind::SwitchReboot);
    c.set("duration_us", 200.0);
    c.set("mode", "warm");
    let r = rocelab_scenario::run(&m, &c, "scenario", 1).unwrap();
    assert!(r.headline.value.is_some_and(|v| v > 0.0), "the frozen spine loses what reaches it: {:?}", r.headline);
    let changes: f64 =
        r.report.metrics.iter().filter(|x| x.name == "rocelab_link_state_changes_total").map(|x| x.value).sum();
    assert_eq!(changes, 0.0, "a warm reboot leaves every link up");
    assert_eq!(r.params["mode"], serde_json::json!("warm"));
    c.set("mode", "cold");
    let cold = rocelab_scenario::run(&m, &c, "scenario", 1).unwrap();
    let changes: f64 =
        cold.report.metrics.iter().filter(|x| x.name == "rocelab_link_state_changes_total").map(|x| x.value).sum();
    assert!(changes > 0.0, "a cold reboot takes its links down");
}
