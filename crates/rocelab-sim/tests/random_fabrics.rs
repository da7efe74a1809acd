//! Seeded random fabrics, traffic and faults through the whole engine: whatever the mix of
//! topology (leaf-spine, or dual-homed hosts on two switches), speeds, buffers, congestion
//! control, lossy and lossless classes, traffic patterns and faults, a run must not panic,
//! must conserve packets, must never drop a lossless packet for lack of headroom (the
//! formula's headroom holds against any burst), must finish every lossless flow when no fault
//! intervenes (lossy flows finish or their QPs exhaust their retries, as RC QPs do), and must
//! repeat byte for byte.

use rocelab_model::{load_str, Role};
use rocelab_sim::rng::Rng;

mod common;
use rocelab_sim::{build, RunReport};

/// One random scenario, as fabric-file text, whether it has faults, and whether it has
/// lossy-class traffic.
fn scenario(rng: &mut Rng) -> (String, bool, bool) {
    let pick = |rng: &mut Rng, xs: &[&'static str]| xs[rng.below(xs.len() as u64) as usize];
    let speed = pick(rng, &["25", "100", "400"]);
    let mut s = String::from("[fabric]\nname = \"random\"\n");
    let dual = rng.below(2) == 0;
    let hosts: Vec<String>;
    if dual {
        // Two switches; every host has a link to each (a dual-port NIC), plus a switch link.
        let n = 2 + rng.below(4) as usize;
        hosts = (0..n).map(|i| format!("h{i}")).collect();
        s.push_str("[topology.explicit]\nnode = [ { name = \"sw0\", kind = \"switch\", model = \"sw\" }, { name = \"sw1\", kind = \"switch\", model = \"sw\" }");
        for h in &hosts {
            s.push_str(&format!(", {{ name = \"{h}\", kind = \"host\" }}"));
        }
        s.push_str(" ]\nlink = [ ");
        let mut links = vec![format!("{{ a = \"sw0\", b = \"sw1\", speed_gbps = {speed}, length_m = 10 }}")];
        for h in &hosts {
            for sw in ["sw0", "sw1"] {
                links.push(format!("{{ a = \"{h}\", b = \"{sw}\", speed_gbps = {speed}, length_m = 2 }}"));
            }
        }
        s.push_str(&links.join(", "));
        s.push_str(" ]\n");
        s.push_str(&format!("[switch_models.sw]\npreset = \"spectrum-2\"\nports = {}\n", hosts.len() + 1));
    } else {
        let leaves = 1 + rng.below(3);
        let per_leaf = 2 + rng.below(3);
        s.push_str(&format!(
            "[topology.leaf_spine]\nleaves = {leaves}\nspines = {}\nhosts_per_leaf = {per_leaf}\n\
             host_link = {{ speed_gbps = {speed}, length_m = 3 }}\nfabric_link = {{ speed_gbps = {speed}, length_m = 30 }}\n\
             leaf_model = \"sw\"\nspine_model = \"sw\"\n",
            1 + rng.below(2)
        ));
        s.push_str("[switch_models.sw]\npreset = \"spectrum-2\"\n");
        hosts = (0..leaves * per_leaf).map(|i| format!("host{i}")).collect();
    }
    // Small buffers make PFC (and lossy drops) work hard; the per-port headroom, from the
    // formula, is reserved apart and still holds.
    s.push_str(&format!("buffer_bytes = {}\n", 200_000 + rng.below(1_800_000)));
    let cc = pick(rng, &["none", "dcqcn"]);
    s.push_str(&format!(
        "[nic]\ncongestion_control = \"{cc}\"\n[nic.dcqcn]\nvariant = \"{}\"\n",
        pick(rng, &["paper", "mlx5"])
    ));
    s.push_str(&format!("[simulation]\nseed = {}\nduration_us = 20000\n", rng.below(1000)));
    // Traffic: 1-3 tables, RDMA (lossless) or the lossy default class.
    let mut lossy = false;
    let h = |rng: &mut Rng| hosts[rng.below(hosts.len() as u64) as usize].clone();
    for _ in 0..1 + rng.below(3) {
        let size = 20_000 + rng.below(600_000);
        let qps = 1 + rng.below(3);
        let start = rng.below(50);
        let class = if rng.below(4) == 0 {
            lossy = true;
            "class = \"default\"\n"
        } else {
            ""
        };
        let pattern = common::random_pattern(rng, &hosts);
        s.push_str(&format!("[[traffic]]\n{pattern}size_bytes = {size}\nqps = {qps}\nstart_us = {start}\n{class}"));
    }
    let faults = rng.below(3) == 0;
    if faults {
        if rng.below(2) == 0 {
            // A host's link to its (first) switch goes down and comes back.
            let (a, b) = if dual { (h(rng), "sw0") } else { ("host0".to_string(), "leaf0") };
            let at = 10 + rng.below(200);
            s.push_str(&format!("[[fault]]\nkind = \"link-down\"\nat_us = {at}\na = \"{a}\"\nb = \"{b}\"\n"));
            s.push_str(&format!(
                "[[fault]]\nkind = \"link-up\"\nat_us = {}\na = \"{a}\"\nb = \"{b}\"\n",
                at + 50 + rng.below(300)
            ));
        } else {
            let at = 10 + rng.below(200);
            let host = h(rng);
            s.push_str(&format!("[[fault]]\nkind = \"host-stall\"\nat_us = {at}\na = \"{host}\"\n"));
            s.push_str(&format!(
                "[[fault]]\nkind = \"host-resume\"\nat_us = {}\na = \"{host}\"\n",
                at + 50 + rng.below(500)
            ));
        }
    }
    (s, faults, lossy)
}

/// A run's report, and whether some switch's buffer is (nearly) all carved out: its ports'
/// headroom plus per-priority reserves leave less than 100 KB of shared pool (lint's HDR002
/// flags the worst of these). Lossy classes live on the shared pool, so there they starve by
/// design: their QPs may exhaust their retries.
fn run(text: &str) -> (RunReport, bool) {
    let m = load_str("random.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let over_carved = m.nodes.iter().any(|n| match &n.role {
        Role::Switch { model } => {
            let sp = &m.switch_models[*model].params;
            let carve: u64 = n.ports().map(|p| m.headroom_in_force(p) + 3 * sp.reserve_bytes).sum();
            carve + 100_000 >= sp.buffer_bytes
        }
        _ => false,
    });
    let opts = rocelab_sim::options_from_model(&m);
    let mut sim = build(&m, opts).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    sim.run(&mut |_| {});
    sim.check_invariants().unwrap_or_else(|e| panic!("{e:#?}\n{text}"));
    (RunReport::from_sim(&sim), over_carved)
}

#[test]
fn random_fabrics_conserve_packets_stay_lossless_and_repeat() {
    // Fixed by default (CI); `ROCELAB_RANDOM_SEED` / `ROCELAB_RANDOM_RUNS` explore further.
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let mut rng = Rng::new(env("ROCELAB_RANDOM_SEED", 2026), 12);
    let runs = env("ROCELAB_RANDOM_RUNS", 300);
    let (mut complete_runs, mut pauses, mut lossy_drops) = (0, 0, 0);
    for i in 0..runs {
        let (text, faults, lossy) = scenario(&mut rng);
        let (r, over_carved) = run(&text);
        let t = &r.totals;
        assert_eq!(
            t.packets_sent,
            t.packets_delivered + t.packets_dropped + t.packets_in_flight,
            "scenario {i}: packets not conserved {t:?}\n{text}"
        );
        assert!(t.data_packets_delivered + t.data_packets_dropped <= t.data_packets_sent, "scenario {i}\n{text}");
        // The lossless class never drops for lack of headroom: the formula's headroom holds
        // against every burst, with or without faults.
        let headroom = t.drops_by_reason.get("headroom").copied().unwrap_or(0);
        assert_eq!(headroom, 0, "scenario {i}: lossless drops\n{text}");
        if !faults && !over_carved {
            if !lossy {
                // Lossless traffic without a fault: every flow finishes, no QP gives up.
                assert!(!r.stopped_at_duration, "scenario {i}: flows unfinished after 20 ms\n{text}");
                assert_eq!(r.totals.qps_failed, 0, "scenario {i}: a lossless QP gave up\n{text}");
                assert_eq!(r.flows_completed, r.flows.len(), "scenario {i}\n{text}");
                for f in &r.flows {
                    assert_eq!(f.delivered_bytes, f.size_bytes, "scenario {i}: flow {}\n{text}", f.flow);
                }
                complete_runs += 1;
            } else if !r.stopped_at_duration {
                // A lossy class may collapse under go-back-N (it can outlast the 20 ms); once
                // the run is over, every flow finished or some of its QPs gave up, as RC QPs
                // do when every retry is lost.
                for f in &r.flows {
                    assert!(
                        f.delivered_bytes == f.size_bytes || f.failed_qps > 0,
                        "scenario {i}: flow {} delivered {} of {} bytes, no QP failed\n{text}",
                        f.flow,
                        f.delivered_bytes,
                        f.size_bytes
                    );
                }
            }
        }
        if i % 8 == 0 {
            assert_eq!(r.to_json(), run(&text).0.to_json(), "scenario {i}: a second run differs\n{text}");
        }
        pauses += t.pfc_pause_frames;
        lossy_drops += t.drops_by_reason.get("buffer").copied().unwrap_or(0);
    }
    // The mix must exercise what it claims to: finished runs, PFC, lossy drops.
    assert!(complete_runs >= runs / 6, "only {complete_runs} lossless fault-free scenarios checked for completion");
    assert!(runs < 100 || (pauses > 1000 && lossy_drops > 100), "weak mix: {pauses} pauses, {lossy_drops} lossy drops");
}
