//! Scenarios against what physics says they must show.

use rocelab_scenario::ScenarioResult;

/// Two leaves of 8 hosts, `spines` spines, 100G everywhere, switches with a `buffer`-byte
/// shared buffer; `extra` is appended (NIC, QoS and [[scenario]] tables).
fn fabric(spines: u32, buffer: u64, extra: &str) -> String {
    format!(
        "[switch_models.sw]\npreset = \"spectrum-2\"\nbuffer_bytes = {buffer}\n\
         [topology.leaf_spine]\nleaves = 2\nspines = {spines}\nhosts_per_leaf = 8\n\
         host_link = {{ speed_gbps = 100, length_m = 3 }}\nfabric_link = {{ speed_gbps = 100, length_m = 30 }}\n\
         leaf_model = \"sw\"\nspine_model = \"sw\"\n{extra}"
    )
}

fn run(text: &str, name: &str) -> ScenarioResult {
    let m = rocelab_model::load_str("t.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let (c, path) = rocelab_scenario::find(&m, name).unwrap();
    rocelab_scenario::run(&m, &c, &path, 1).unwrap_or_else(|e| panic!("{e:?}"))
}

fn metric(r: &ScenarioResult, k: &str) -> f64 {
    r.metrics.get(k).copied().flatten().unwrap_or_else(|| panic!("no {k}: {}", r.render_text()))
}

const MICROBURST: &str = "[[scenario]]\nkind = \"microburst\"\nname = \"mb\"\nfan_in = 7\nburst_bytes = 500000\n\
                          duty_cycle = 0.5\nduration_us = 2000\n";

#[test]
fn microbursts_with_dcqcn_send_fewer_pauses_than_pfc_alone() {
    let nic = |cc| format!("[nic]\nmtu = 4096\ncongestion_control = \"{cc}\"\n{MICROBURST}");
    let pfc_only = run(&fabric(2, 4_000_000, &nic("none")), "mb");
    let with_dcqcn = run(&fabric(2, 4_000_000, &nic("dcqcn")), "mb");
    let (a, b) = (pfc_only.headline.value.unwrap(), with_dcqcn.headline.value.unwrap());
    assert!(a > 0.0, "{}", pfc_only.render_text());
    assert!(b < a, "PFC only {a} pauses, PFC + DCQCN {b}");
    // DCQCN acted: CNPs cut the rates, so the queue stayed shallower.
    assert!(metric(&with_dcqcn, "max_queue_bytes") < metric(&pfc_only, "max_queue_bytes"));
    assert_eq!(metric(&with_dcqcn, "bursts_completed"), 28.0);
}

const SLOW: &str =
    "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"slow-receiver\"\nname = \"slow\"\nduration_us = 3000\nsample_us = 10\n";

#[test]
fn a_stopped_receiver_spreads_pauses_past_the_first_hop() {
    let r = run(&fabric(2, 4_000_000, SLOW), "slow");
    // host -> leaf (1) -> spine (2) -> leaf (3) -> sender hosts (4).
    let hops = r.headline.value.unwrap();
    assert!(hops > 1.0, "{}", r.render_text());
    assert_eq!(hops, 4.0);
}

#[test]
fn the_watchdog_fires_within_its_detection_time_when_enabled_and_not_when_disabled() {
    let on = run(&fabric(2, 4_000_000, &format!("{SLOW}watchdog = true\nwatchdog_detection_us = 200\n")), "slow");
    let storms = metric(&on, "watchdog_storms");
    assert!(storms > 0.0, "{}", on.render_text());
    // Detected once the queue facing the host has been paused for 200 µs, at the next poll
    // (20 µs), seen at the next sample.
    let after = metric(&on, "watchdog_fired_after_pause_us");
    let sample = on.timeseries.interval_us;
    assert!(after >= 200.0 - sample && after <= 200.0 + 20.0 + 2.0 * sample, "fired {after} µs after the first pause");
    assert!(metric(&on, "watchdog_drops") > 0.0);
    let off = run(&fabric(2, 4_000_000, &format!("{SLOW}watchdog = false\n")), "slow");
    assert_eq!(metric(&off, "watchdog_storms"), 0.0, "{}", off.render_text());
    assert!(off.metrics["watchdog_fired_after_us"].is_none());
}

#[test]
fn a_merely_busy_queue_never_trips_the_watchdog() {
    // PFC alone, a 7:1 incast of bursts: many pauses, every one short.
    let text = fabric(
        2,
        4_000_000,
        &format!(
            "[nic]\nmtu = 4096\ncongestion_control = \"none\"\n[qos.pfc_watchdog]\ndetection_ms = 0.2\n\
             poll_ms = 0.02\nrestoration_ms = 0.2\n{MICROBURST}"
        ),
    );
    let r = run(&text, "mb");
    assert!(r.headline.value.unwrap() > 100.0, "{}", r.render_text());
    assert_eq!(metric(&r, "pfc_storms"), 0.0, "{}", r.render_text());
}

#[test]
fn a_spine_reboot_shifts_traffic_and_loses_only_what_was_inside_it() {
    let text = fabric(
        4,
        16_000_000,
        "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"switch-reboot\"\nname = \"reboot\"\nduration_us = 400\n\
         convergence_us = 2\nload = 0.5\n",
    );
    let r = run(&text, "reboot");
    let lost = r.headline.value.unwrap();
    assert!(lost > 0.0, "{}", r.render_text());
    assert_eq!(metric(&r, "packets_lost_elsewhere"), 0.0, "{}", r.render_text());
    assert_eq!(metric(&r, "packets_lost_link_down"), lost, "every link-down drop is the switch's");
    assert_eq!(metric(&r, "rebooted_gbps_during"), 0.0);
    assert!(metric(&r, "rebooted_gbps_before") > 0.0);
    assert!(metric(&r, "other_spines_gbps_during") > metric(&r, "other_spines_gbps_before"), "{}", r.render_text());
    let shift = metric(&r, "time_to_shift_us");
    assert!(shift >= 2.0 && shift <= 2.0 * 4.0 + 3.0 * r.timeseries.interval_us, "shifted after {shift} µs");
}

#[test]
fn a_hash_seed_change_moves_flows_without_drops() {
    let text = fabric(
        4,
        16_000_000,
        "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"routing-change\"\nname = \"rc\"\nduration_us = 300\n",
    );
    let r = run(&text, "rc");
    let change = r.headline.value.unwrap();
    assert!(change.abs() > 0.05, "{}", r.render_text());
    assert_eq!(metric(&r, "dropped_packets"), 0.0);
    assert_eq!(r.report.totals.packets_dropped, 0);
}

#[test]
fn incast_completes_no_sooner_than_the_ideal_and_within_a_sane_factor() {
    for cc in ["dcqcn", "none"] {
        let text = fabric(
            2,
            16_000_000,
            &format!(
                "[nic]\nmtu = 4096\ncongestion_control = \"{cc}\"\n[[scenario]]\nkind = \"incast\"\nfan_in = 15\n\
                 size_bytes = 1000000\n"
            ),
        );
        let r = run(&text, "incast");
        let ratio = r.headline.value.unwrap();
        // 15 MB at 100 Gb/s: 1,200 µs before headers.
        assert!((metric(&r, "ideal_us") - 1200.0).abs() < 1e-6);
        assert!((1.0..1.3).contains(&ratio), "{cc}: {}", r.render_text());
    }
}

#[test]
fn same_file_and_seed_give_the_same_bytes() {
    let text = fabric(2, 4_000_000, &format!("[nic]\nmtu = 4096\n{MICROBURST}"));
    let (a, b) = (run(&text, "mb"), run(&text, "mb"));
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.series_csv, b.series_csv);
    assert_eq!(a.report.to_json(), b.report.to_json());
}

#[test]
fn firmware_mix_puts_the_share_on_the_other_profile() {
    let text = fabric(
        2,
        4_000_000,
        "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"firmware-mix\"\nshare = 0.5\nfan_in = 6\nduration_us = 300\n",
    );
    let r = run(&text, "firmware-mix");
    assert_eq!(r.params["other_profile_hosts"].as_array().unwrap().len(), 3);
    // CC off on half the senders: they do not back off, so they take more than their share
    // and the fleet less than its own.
    let share = r.headline.value.unwrap();
    assert!(share < 1.0, "{}", r.render_text());
    let (other, fleet) = (r.metrics["other_goodput_gbps_mean"].unwrap(), r.metrics["fleet_goodput_gbps_mean"].unwrap());
    assert!(other > fleet, "{}", r.render_text());
    // The headline from the means (equal counts on each profile): fleet / (fleet + other), over 1/2.
    assert!((share - 2.0 * fleet / (fleet + other)).abs() < 1e-9, "{}", r.render_text());
}

#[test]
fn a_collective_beside_background_traffic_is_slower_than_alone() {
    let text = fabric(
        2,
        16_000_000,
        "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"sustained\"\nname = \"bg\"\nduration_us = 400\n\
         [[scenario]]\nkind = \"collective\"\nname = \"alone\"\nsize_bytes = 4194304\n\
         [[scenario]]\nkind = \"collective\"\nname = \"loaded\"\nsize_bytes = 4194304\nbeside = \"bg\"\n",
    );
    let alone = run(&text, "alone");
    let loaded = run(&text, "loaded");
    let (a, b) = (metric(&alone, "time_us"), metric(&loaded, "time_us"));
    // Alone, a ring all-reduce on 16 ranks moves 2·15/16 of 4 MiB over each 100G link: ≥ 629 µs.
    assert!(a >= 629.0 && alone.headline.value.unwrap() <= 1.0, "{}", alone.render_text());
    assert!(b > 1.2 * a, "alone {a} µs, beside a permutation {b} µs");
    assert_eq!(loaded.params["beside"], "bg");
}

#[test]
fn an_uplink_hotspot_queues_at_the_one_uplink_left() {
    let text = fabric(
        4,
        16_000_000,
        "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"hotspot\"\ntarget = \"uplink\"\nduration_us = 200\n",
    );
    let r = run(&text, "hotspot");
    // 8 hosts at 100G onto one 100G uplink: its queue builds, it carries at most its line rate.
    assert!(r.headline.value.unwrap() > 100_000.0, "{}", r.render_text());
    assert!(metric(&r, "hot_goodput_fraction") < 1.0);
    assert_eq!(r.params["uplink"], "leaf0:swp0");
}

#[test]
fn a_lost_link_costs_goodput_while_lossless_traffic_reroutes() {
    let text =
        fabric(4, 16_000_000, "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"link-loss\"\nduration_us = 400\nload = 0.5\n");
    let r = run(&text, "link-loss");
    let ratio = r.headline.value.unwrap();
    // Half load fits on three spines of four: once rerouted, the goodput is back (the on/off
    // chunks make either window read a little high or low).
    assert!(ratio > 0.9, "{}", r.render_text());
    assert!(metric(&r, "goodput_after_gbps") > 700.0, "16 hosts at half of 100G offer 800 Gb/s");
    // Only what was on the lost link is lost.
    assert_eq!(metric(&r, "dropped_packets"), metric(&r, "packets_lost_link_down"));
}

const MIXED: &str = "[nic]\nmtu = 4096\n[[scenario]]\nkind = \"mixed\"\nduration_us = 2000\n";

#[test]
fn tcp_in_a_lossy_class_loses_packets_and_recovers_while_rdma_loses_none() {
    let r = run(&fabric(2, 4_000_000, MIXED), "mixed");
    assert_eq!(r.params["tcp_class"], "default");
    assert!(metric(&r, "tcp_class_drops") > 0.0, "{}", r.render_text());
    assert!(metric(&r, "tcp_retransmitted_packets") > 0.0);
    // The window halves on each loss and grows back: TCP keeps most of what RDMA leaves it.
    let tcp = metric(&r, "tcp_goodput_fraction");
    assert!((0.5..1.0).contains(&tcp), "TCP goodput {tcp} of the receiver's link");
    assert_eq!(metric(&r, "rdma_class_drops"), 0.0);
    assert!(r.headline.value.unwrap() > 1.0, "RDMA shares the receiver's link");
}

#[test]
fn tcp_forced_into_the_rdma_class_slows_rdma_measurably_more() {
    let separate = run(&fabric(2, 4_000_000, MIXED), "mixed");
    let shared = run(&fabric(2, 4_000_000, &format!("{MIXED}shared_class = true\n")), "mixed");
    assert_eq!(shared.params["tcp_class"], "roce");
    let (a, b) = (separate.headline.value.unwrap(), shared.headline.value.unwrap());
    assert!(b > 1.1 * a, "RDMA FCT over alone: {a} in its own class, {b} sharing it with TCP");
    // Lossless now: TCP loses nothing either, and the marks it sees are its only signal.
    assert_eq!(metric(&shared, "tcp_class_drops"), 0.0);
    assert!(metric(&shared, "ecn_marked") > 0.0);
}
