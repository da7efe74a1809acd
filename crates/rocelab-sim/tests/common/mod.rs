//! What the integration tests share: random traffic for the seeded random-fabric tests, and
//! the small fat tree the partitioned-engine and fast-forward tests run on, and packet
//! conservation on a run's snapshot.

// (Each test that includes `common` uses part of it.)
#![allow(dead_code)]

use rocelab_sim::rng::Rng;

/// A random `[[traffic]]` pattern among `hosts` (two or more), as fabric-file lines: a flow
/// between two distinct hosts, an incast on one, a permutation, or an all-to-all.
pub fn random_pattern(rng: &mut Rng, hosts: &[String]) -> String {
    let n = hosts.len() as u64;
    match rng.below(4) {
        0 => {
            let a = rng.below(n);
            let b = (a + 1 + rng.below(n - 1)) % n;
            format!("pattern = \"flow\"\nsrc = \"{}\"\ndst = \"{}\"\n", hosts[a as usize], hosts[b as usize])
        }
        1 => {
            let dst = &hosts[rng.below(n) as usize];
            format!("pattern = \"incast\"\ndst = \"{dst}\"\nsenders = {}\n", 1 + rng.below(n - 1))
        }
        2 => "pattern = \"permutation\"\n".to_string(),
        _ => "pattern = \"all-to-all\"\n".to_string(),
    }
}

/// A k = 4 fat tree (16 hosts, 4 pods), 100 Gb/s links of 1 µs, seed 3, with `fabric` lines in
/// its `[fabric]` table (the link layer) and `extra` tables.
pub fn fat_tree_in(name: &str, fabric: &str, extra: &str) -> rocelab_model::Model {
    let text = format!(
        r#"[fabric]
name = "{name}"
{fabric}
[topology.fat_tree]
k = 4
link = {{ speed_gbps = 100, delay_ns = 1000 }}
switch_model = "sw"
[switch_models.sw]
preset = "ns3-reference"
ports = 4
[simulation]
seed = 3
{extra}
"#
    );
    rocelab_model::load_str(&format!("{name}.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

/// Every packet a NIC made is delivered, dropped, or still somewhere.
pub fn conserved(s: &rocelab_sim::Snapshot) {
    let c = &s.counters;
    assert_eq!(c.sent, c.delivered + c.dropped + c.in_flight, "packets created = delivered + dropped + in flight");
}
