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

#[test]
fn a_rolling_firmware_update_recovers_each_message_at_the_published_timescale() {
    // Two hosts reset one after the other, each for the default 3 s, while it exchanges 8 MiB
    // each way with the host half the ring away. Each message completes once its application
    // has reconnected (10 ms after the NIC is back) and resent the rest: 3 s + 10 ms + about
    // 4 MiB at 100 Gb/s (336 µs) after the reset, never the 4.3 s transport timeout.
    let m = fabric();
    let mut c = ScenarioConfig::bare(ScenarioKind::FirmwareUpdate);
    c.set("count", 2);
    c.set("size_bytes", 8 << 20);
    let r = rocelab_scenario::run(&m, &c, "scenario", 1).unwrap();
    assert_eq!(r.params["down_us"], serde_json::json!(3_000_000.0));
    assert_eq!(r.params["reconnect_us"], serde_json::json!(10_000.0));
    let at: Vec<f64> = r.params["reset_at_us"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(at.len(), 2);
    let rest_us = (4u64 << 20) as f64 * 8.0 / 100e9 * 1e6;
    for (i, f) in r.report.flows.iter().enumerate() {
        let fct_us = f.fct_seconds.expect("every message completes") * 1e6 + f.start_seconds * 1e6;
        let from_reset = fct_us - at[i / 2];
        let least = 3_000_000.0 + 10_000.0 + rest_us;
        assert!(
            from_reset > least && from_reset < least + 300.0,
            "message {i}: {from_reset} µs after its host's reset, the least {least}"
        );
        assert_eq!(f.delivered_bytes, 8 << 20, "message {i}");
    }
    let rec = r.metrics["recovery_us"].unwrap();
    assert!(rec > 0.0 && rec < 300.0, "{rec}");
    // The unsent half over the time it took: 4 MiB against up to 4.5 MiB resent (the cut
    // 512 KiB work request) with 2 % of headers, about 0.87 of line rate.
    let rate = r.metrics["rate_after_reconnect"].unwrap();
    assert!(rate > 0.85 && rate < 0.98, "{rate}");
    assert_eq!(r.metrics["failed_qps"], Some(0.0));
    // Nothing but what the reset killed is lost (the lossless class drops nothing else).
    assert_eq!(r.metrics["dropped_packets"], r.metrics["packets_lost_link_down"]);
}
