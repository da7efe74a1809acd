//! Seeded random InfiniBand fabrics, traffic and faults through the whole engine: whatever the
//! topology, speeds, VL buffers, VL count, routing mode, congestion control, classes (every
//! VL is lossless on IB), traffic and faults, a run must not panic, must keep its credit books
//! (`check_invariants`), must conserve packets, must drop nothing but what a downed link held,
//! must send no pause frame, must finish every flow when no fault intervenes, and must repeat
//! byte for byte.

use rocelab_model::load_str;
use rocelab_sim::rng::Rng;

mod common;
use rocelab_sim::{build, RunReport};

/// One random scenario as fabric-file text, and whether it has a link fault.
fn scenario(rng: &mut Rng) -> (String, bool) {
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[rng.below(xs.len() as u64) as usize];
    let speed = pick(rng, &["100", "200", "400"]);
    let mut s = String::from("[fabric]\nname = \"random-ib\"\nlink_layer = \"infiniband\"\n");
    let leaves = 1 + rng.below(3);
    let per_leaf = 2 + rng.below(3);
    s.push_str(&format!(
        "[topology.leaf_spine]\nleaves = {leaves}\nspines = {}\nhosts_per_leaf = {per_leaf}\n\
         host_link = {{ speed_gbps = {speed}, length_m = {} }}\nfabric_link = {{ speed_gbps = {speed}, length_m = {} }}\n",
        1 + rng.below(3),
        1 + rng.below(5),
        5 + rng.below(100)
    ));
    let hosts: Vec<String> = (0..leaves * per_leaf).map(|i| format!("host{i}")).collect();
    // The classes (SLs 3, 6, 0 by default) on 2, 4 or 8 VLs, SL i → VL i mod n, every used VL
    // in the low table; buffers from one packet and a bit to 128 KiB.
    let vls = pick(rng, &["2", "4", "8"]);
    s.push_str(&format!(
        "[infiniband]\ndata_vls = {vls}\nvl_buffer_bytes = {}\nrouting = \"{}\"\nvl_arb_high = [{{ vl = 0, weight = {} }}]\n\
         vl_arb_low = [{{ vl = 0, weight = 8 }}, {{ vl = 1, weight = 16 }}, {{ vl = 2, weight = 4 }}, {{ vl = 3, weight = 32 }}]\n\
         limit_of_high_priority = {}\n",
        4_200 + rng.below(130_000),
        pick(rng, &["static", "adaptive"]),
        rng.below(256),
        pick(rng, &["0", "1", "16", "255"])
    ));
    if rng.below(2) == 0 {
        s.push_str(&format!(
            "[infiniband.cc]\nmarking_threshold_bytes = {}\nccti_timer_us = {}\ncct_step_ns = {}\nccti_increase = {}\n",
            1_000 + rng.below(200_000),
            1 + rng.below(20),
            1 + rng.below(50),
            1 + rng.below(4)
        ));
    }
    s.push_str(&format!("[nic]\nmtu = {}\n", pick(rng, &["1024", "2048", "4096"])));
    s.push_str(&format!("[simulation]\nseed = {}\nduration_us = 20000\n", rng.below(1000)));
    let h = |rng: &mut Rng| hosts[rng.below(hosts.len() as u64) as usize].clone();
    for _ in 0..1 + rng.below(3) {
        let size = 20_000 + rng.below(600_000);
        let class = pick(rng, &["", "class = \"default\"\n"]);
        let pattern = common::random_pattern(rng, &hosts);
        s.push_str(&format!(
            "[[traffic]]\n{pattern}size_bytes = {size}\nqps = {}\nstart_us = {}\n{class}",
            1 + rng.below(3),
            rng.below(50)
        ));
    }
    let link_fault = match rng.below(3) {
        0 => {
            let at = 10 + rng.below(200);
            s.push_str(&format!("[[fault]]\nkind = \"link-down\"\nat_us = {at}\na = \"host0\"\nb = \"leaf0\"\n"));
            s.push_str(&format!(
                "[[fault]]\nkind = \"link-up\"\nat_us = {}\na = \"host0\"\nb = \"leaf0\"\n",
                at + 50 + rng.below(300)
            ));
            true
        }
        1 => {
            let (at, host) = (10 + rng.below(200), h(rng));
            s.push_str(&format!("[[fault]]\nkind = \"host-stall\"\nat_us = {at}\na = \"{host}\"\n"));
            s.push_str(&format!(
                "[[fault]]\nkind = \"host-resume\"\nat_us = {}\na = \"{host}\"\n",
                at + 50 + rng.below(500)
            ));
            false
        }
        _ => false,
    };
    (s, link_fault)
}

fn run(text: &str) -> RunReport {
    let m = load_str("random-ib.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut sim = build(&m, rocelab_sim::options_from_model(&m)).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap_or_else(|e| panic!("{e:#?}\n{text}"));
    RunReport::from_sim(&sim)
}

#[test]
fn random_ib_fabrics_keep_credits_lose_nothing_and_repeat() {
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let mut rng = Rng::new(env("ROCELAB_RANDOM_SEED", 2026), 20);
    let runs = env("ROCELAB_RANDOM_RUNS", 120);
    let mut complete = 0;
    for i in 0..runs {
        let (text, link_fault) = scenario(&mut rng);
        let r = run(&text);
        let t = &r.totals;
        assert_eq!(
            t.packets_sent,
            t.packets_delivered + t.packets_dropped + t.packets_in_flight,
            "scenario {i}\n{text}"
        );
        assert_eq!(t.pfc_pause_frames, 0, "scenario {i}: a pause frame on IB\n{text}");
        let not_link = t.packets_dropped - t.drops_by_reason.get("link_down").copied().unwrap_or(0);
        assert_eq!(not_link, 0, "scenario {i}: IB dropped for another reason than a downed link\n{text}");
        if !link_fault {
            assert_eq!(t.packets_dropped, 0, "scenario {i}\n{text}");
            assert!(!r.stopped_at_duration && !r.stopped_no_progress, "scenario {i}: unfinished\n{text}");
            assert_eq!(r.flows_completed, r.flows.len(), "scenario {i}\n{text}");
            complete += 1;
        }
        if i % 8 == 0 {
            assert_eq!(r.to_json(), run(&text).to_json(), "scenario {i}: a second run differs\n{text}");
        }
    }
    assert!(complete >= runs / 2, "only {complete} fault-free runs");
}
