//! `isolation`: a noisy tenant sending into a training job's NICs slows its all-reduce as far
//! as the fabric's QoS lets it: half the link at equal DWRR weights, little with a small weight
//! for the tenant's class, nothing when the tenant sends almost nothing.

use rocelab_model::config::{ScenarioConfig, ScenarioKind};

/// 2 leaves of 4 hosts at 100G, 2 spines at 400G, the NVIDIA-style classes with the tenant's
/// class at DWRR `weight` against RoCE's 100 − weight.
fn fabric(weight: u32) -> rocelab_model::Model {
    let text = format!(
        r#"[fabric]
name = "iso"
[topology.leaf_spine]
leaves = 2
spines = 2
hosts_per_leaf = 4
host_link = {{ speed_gbps = 100, length_m = 3 }}
fabric_link = {{ speed_gbps = 400, length_m = 30 }}
[qos]
cnp_class = "cnp"
[[qos.class]]
name = "roce"
dscp = [26]
priority = 3
lossless = true
scheduler = "dwrr"
weight = {}
carries = ["rdma"]
ecn = {{ kmin_bytes = 150000, kmax_bytes = 1500000, pmax = 0.1 }}
[[qos.class]]
name = "cnp"
dscp = [48]
priority = 6
scheduler = "strict"
carries = ["cnp"]
[[qos.class]]
name = "default"
dscp = [0]
priority = 0
scheduler = "dwrr"
weight = {weight}
carries = ["tcp", "storage", "management"]
"#,
        100 - weight
    );
    rocelab_model::load_str("iso.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

fn slowdown(weight: u32, noisy_bytes: Option<i64>) -> (f64, rocelab_scenario::ScenarioResult) {
    slowdown_in(weight, noisy_bytes, None)
}

fn slowdown_in(weight: u32, noisy_bytes: Option<i64>, class: Option<&str>) -> (f64, rocelab_scenario::ScenarioResult) {
    let mut c = ScenarioConfig::bare(ScenarioKind::Isolation);
    c.set("size_bytes", 2i64 << 20);
    if let Some(b) = noisy_bytes {
        c.set("noisy_bytes", b);
    }
    if let Some(k) = class {
        c.set("class", k);
    }
    let r = rocelab_scenario::run(&fabric(weight), &c, "scenario", 1).unwrap_or_else(|e| panic!("{e:?}"));
    (r.headline.value.unwrap(), r)
}

#[test]
fn the_tenant_slows_the_job_as_far_as_its_class_weight_lets_it() {
    let (equal, r) = slowdown(50, None);
    let (small, _) = slowdown(10, None);
    let (none, _) = slowdown(50, Some(1024));
    eprintln!("slowdown at 50/50: {equal:.3}, at 90/10: {small:.3}, with 1 KiB of noise: {none:.3}");
    // Half the hosts (4) all-reduce 2 MiB; the other 4 each send 2 MiB into one of them over
    // DCTCP in the lossy class: at equal weights the ring's bottleneck links are shared half
    // and half while the tenant lasts.
    assert_eq!(r.params["victims"], 4);
    assert_eq!(r.params["noisy_transport"], "dctcp");
    assert!(equal > 1.3, "{equal}");
    assert!(small < equal && small < 1.3, "{small} vs {equal}");
    assert!((1.0..1.02).contains(&none), "{none}");
    // The same seed gives the same figure.
    assert_eq!(slowdown(50, None).0, equal);
}

#[test]
fn the_check_holds_the_fabric_to_the_share_its_qos_promises() {
    let judged = |r: &rocelab_scenario::ScenarioResult| r.metrics["slowdown_over_qos_bound"].unwrap();
    // Equal DWRR weights promise the job half the link: a 1.6x slowdown keeps that promise.
    let (s, r) = slowdown_in(50, None, None);
    assert_eq!(r.metrics["qos_bound"], Some(2.0));
    assert!((judged(&r) - s / 2.0).abs() < 1e-12 && judged(&r) <= 1.10, "{s}");
    // 90/10: the job is promised 90 %, a bound of 1.11.
    let (_, r) = slowdown_in(10, None, None);
    assert!((r.metrics["qos_bound"].unwrap() - 100.0 / 90.0).abs() < 1e-12);
    // The tenant in the job's own class (RDMA, lossless): nothing separates them, the bound is
    // 1, and the check fails.
    let (s, r) = slowdown_in(50, None, Some("roce"));
    eprintln!("tenant in the job's class: slowdown {s:.3}");
    assert_eq!(r.params["noisy_transport"], "rdma");
    assert_eq!(r.metrics["qos_bound"], Some(1.0));
    assert!(judged(&r) > 1.10, "{s}");
}
