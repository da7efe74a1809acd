//! What the seeded random-fabric tests share.

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
